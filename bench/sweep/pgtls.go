package sweep

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/tandemdb/tandem/backend/postgres"
)

// serverTLS writes a self-signed certificate and its key for 127.0.0.1 in
// dir (owned by the server's OS user, the key 0600, as PostgreSQL
// demands) and returns the settings that make a server speak TLS with
// them: the configurations whose clients encrypt end to end through
// HAProxy (ClientTLS), the way a PostgreSQL user of that stack encrypts
// (HAProxy in mode tcp cannot start PostgreSQL's TLS itself: the
// client's SSLRequest comes first).
func serverTLS(dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "localhost", Organization: []string{"tandem bench sweep"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	crt, kf := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return nil, err
	}
	cred, err := postgres.ServerCredential()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		for _, p := range []string{dir, crt, kf} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("chown %s for the postgres user: %w", p, err)
			}
		}
	}
	return map[string]string{"ssl": "on", "ssl_cert_file": "'" + crt + "'", "ssl_key_file": "'" + kf + "'"}, nil
}
