package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return
}

// TestTLS: with [tls] configured, SSLRequest is answered 'S' and the
// session runs encrypted; with require = true, plaintext is refused.
func TestTLS(t *testing.T) {
	cert, key := selfSigned(t)
	c := startCluster(t, clusterSpec{backend: "sqlite", extra: "[tls]\ncert = \"" + cert + "\"\nkey = \"" + key + "\"\nrequire = true\n"})
	ctx := context.Background()
	tlsDSN := strings.Replace(c.DSN, "sslmode=disable", "sslmode=require", 1)
	conn, err := pgx.Connect(ctx, tlsDSN)
	if err != nil {
		t.Fatalf("TLS connect: %v", err)
	}
	defer conn.Close(ctx)
	if conn.PgConn().Conn().RemoteAddr() == nil {
		t.Fatal("no connection")
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT 40 + 2").Scan(&n); err != nil || n != 42 {
		t.Fatalf("query over TLS: %d %v", n, err)
	}
	if _, err := pgx.Connect(ctx, c.DSN); err == nil || !strings.Contains(err.Error(), "requires TLS") {
		t.Fatalf("plaintext with require = true: want a clear refusal, got %v", err)
	}
}
