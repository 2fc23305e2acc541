package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/cluster"
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
	if !strings.Contains(c.DSN, "sslmode=require") {
		t.Fatalf("tandem up prints %q: with require = true it should say sslmode=require", c.DSN)
	}
	tlsDSN := c.DSN
	plainDSN := strings.Replace(c.DSN, "sslmode=require", "sslmode=disable", 1)
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
	if _, err := pgx.Connect(ctx, plainDSN); err == nil || !strings.Contains(err.Error(), "requires TLS") {
		t.Fatalf("plaintext with require = true: want a clear refusal, got %v", err)
	}
}

// psqlBin is the psql of the PostgreSQL installation (pg_config --bindir).
func psqlBin(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		t.Skip("pg_config not found:", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "psql")
	if _, err := os.Stat(p); err != nil {
		t.Skip("psql not installed:", err)
	}
	return p
}

// TestTLSRequireRouter (issue 18 item 8): a hot-standby cluster whose front
// doors require TLS ([tls] require = true, an operator's certificate)
// serves psql with sslmode=require through the router, refuses plain text
// with a clear message, and `tandem status` shows every process up. The
// router relays its TLS clients on its epoll loops, as clear-text ones
// (since 2026-12-07; tandem_router_relayed_sessions_total).
func TestTLSRequireRouter(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			psql := psqlBin(t)
			cert, key := selfSigned(t)
			h := writeHSOn(t, backend, "2-safe-received", "relaxed",
				"ack_timeout = \"5s\"\n[tls]\ncert = \""+cert+"\"\nkey = \""+key+"\"\nrequire = true\n")
			// Every front door also on a Unix socket: a client beside
			// it needs no TLS there, even with require = true.
			sock := filepath.Join(h.dir, "sock")
			f, err := os.ReadFile(h.file)
			if err != nil {
				t.Fatal(err)
			}
			routerMetrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			ft := strings.Replace(string(f), "[router]\n", "[router]\nunix_socket_dir = \""+sock+"\"\nmetrics = \""+routerMetrics+"\"\n", 1)
			ft = strings.ReplaceAll(ft, "[[nodes]]\n", "[[nodes]]\nunix_socket_dir = \""+sock+"\"\n")
			if err := os.WriteFile(h.file, []byte(ft), 0o644); err != nil {
				t.Fatal(err)
			}
			c := upFile(t, h.dir, h.file, filepath.Join(h.dir, "run"))
			if !strings.Contains(c.DSN, "sslmode=require") {
				t.Fatalf("tandem up prints %q: want sslmode=require", c.DSN)
			}
			run := func(dsn, sql string) (string, error) {
				cmd := exec.Command(psql, dsn, "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql)
				out, err := cmd.CombinedOutput()
				return strings.TrimSpace(string(out)), err
			}
			if out, err := run(c.DSN, "CREATE TABLE t (k int PRIMARY KEY, v text)"); err != nil {
				t.Fatalf("psql sslmode=require through the router: %v: %s", err, out)
			}
			if out, err := run(c.DSN, "INSERT INTO t VALUES (1, 'a'), (2, 'b')"); err != nil {
				t.Fatalf("insert: %v: %s", err, out)
			}
			if out, err := run(c.DSN, "SELECT count(*) FROM t"); err != nil || out != "2" {
				t.Fatalf("select through the router: %q %v", out, err)
			}
			// Each of the three TLS sessions ran on an epoll loop.
			m := metrics(t, routerMetrics)
			if v := metricValue(m, `tandem_router_relayed_sessions_total{path="epoll",port="write"}`); v < 3 {
				t.Fatalf("TLS sessions relayed on the epoll loops: %v, want 3 or more\n%s", v, m)
			}
			if v := metricValue(m, `tandem_router_relayed_sessions_total{path="goroutines",port="write"}`); v != 0 {
				t.Fatalf("TLS sessions relayed on goroutines: %v, want 0", v)
			}
			plain := strings.Replace(c.DSN, "sslmode=require", "sslmode=disable", 1)
			out, err := run(plain, "SELECT 1")
			if err == nil || !strings.Contains(out, "requires TLS") {
				t.Fatalf("psql sslmode=disable: want a refusal naming TLS, got %v: %s", err, out)
			}
			// Over the Unix sockets: psql -h DIR -p PORT, no TLS asked
			// (libpq never asks for it on a Unix socket).
			unixDSN := func(addr string) string {
				_, port, _ := strings.Cut(addr, ":")
				return "host=" + sock + " port=" + port + " user=tandem password=secret dbname=tandem"
			}
			if out, err := run(unixDSN(h.router), "INSERT INTO t VALUES (3, 'c')"); err != nil {
				t.Fatalf("psql over the router's Unix socket: %q %v", out, err)
			}
			if out, err := run(unixDSN(h.nodes["n1"]), "SELECT count(*) FROM t"); err != nil || out != "3" {
				t.Fatalf("psql over n1's Unix socket: %q %v", out, err)
			}
			deadline0 := time.Now().Add(10 * time.Second)
			for {
				out, err := run(unixDSN(h.reads), "SELECT count(*) FROM t")
				if err == nil && out == "3" {
					break
				}
				if time.Now().After(deadline0) {
					t.Fatalf("psql over the router's read port's Unix socket: %q %v", out, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if out, err := run(unixDSN(h.router)+" password=wrong", "SELECT 1"); err == nil || !strings.Contains(out, "password") {
				t.Fatalf("a wrong password over the Unix socket: want it refused, got %v: %s", err, out)
			}
			if _, err := run(c.DSN, "DELETE FROM t WHERE k = 3"); err != nil {
				t.Fatal(err)
			}
			// The standby got the rows over the (mutual TLS) stream.
			std := strings.Replace(c.DSN, hostPort(c.DSN), h.nodes["n2"], 1)
			deadline := time.Now().Add(10 * time.Second)
			for {
				out, err := run(std, "SELECT count(*) FROM t")
				if err == nil && out == "2" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("standby n2 over TLS: %q %v", out, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			st, err := exec.Command(tandemBin, "status", "-c", h.file).CombinedOutput()
			if err != nil {
				t.Fatalf("tandem status: %v\n%s", err, st)
			}
			for _, name := range []string{"n1", "n2", "router"} {
				if !regexp(`(?m)^` + name + `\s+\S+\s+\S+\s+\S+\s+\S+\s+up\s`).Match(st) {
					t.Errorf("tandem status: %s is not up:\n%s", name, st)
				}
			}
		})
	}
}

// TestUpReportsNotServing (issue 18 item 8): a process that starts but
// cannot serve (here a router whose node is configured at port 0, so it
// can never reach it) makes `tandem up` say FAILED, exit non-zero and stop
// the cluster; it never prints "is up".
func TestUpReportsNotServing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.toml")
	cfg := fmt.Sprintf("cluster = \"f\"\ndesign = \"standalone\"\nrun_dir = %q\n[router]\nlisten = \"127.0.0.1:%d\"\nhealth_interval = \"100ms\"\n"+
		"[[users]]\nname = \"tandem\"\npassword = \"secret\"\n[[nodes]]\nid = \"n1\"\nlisten = \"127.0.0.1:0\"\nmetrics = \"127.0.0.1:%d\"\nbackend = \"sqlite\"\n",
		filepath.Join(dir, "run"), freePort(t), freePort(t))
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tandemBin, "up", "-c", file, "--serve-wait", "3s")
	cmd.Dir = dir
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("tandem up did not exit within 60 s with a process not serving:\n%s", out)
	}
	if err == nil {
		t.Fatalf("tandem up exited 0 with a router that cannot serve:\n%s", out)
	}
	if strings.Contains(string(out), "is up") || !regexp(`(?m)router .*FAILED`).Match(out) {
		t.Fatalf("tandem up output: want the router FAILED and no \"is up\":\n%s", out)
	}
	if !regexp(`(?m)n1 .*serving`).Match(out) {
		t.Errorf("the node serves and should say so:\n%s", out)
	}
	procs, _ := cluster.ReadState(filepath.Join(dir, "run"))
	for _, p := range procs {
		if alive(p.PID) {
			t.Errorf("%s (pid %d) still running after tandem up failed", p.Name, p.PID)
		}
	}
}
