package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/secure"
)

const cardNumber = "4111111111111111"

// replFrame is one replication frame as tandem writes it.
func replFrame(typ byte, body []byte) []byte {
	b := make([]byte, 5, 5+len(body))
	b[0] = typ
	binary.BigEndian.PutUint32(b[1:], uint32(len(body)))
	return append(b, body...)
}

func helloFrame(node string) []byte {
	h, _ := json.Marshal(map[string]any{"node": node, "epoch": 1, "last_gsn": 0, "last_epoch": 0})
	return replFrame('H', h)
}

func ackFrame(gsn uint64) []byte {
	b := make([]byte, 24)
	for i := 0; i < 3; i++ {
		binary.BigEndian.PutUint64(b[8*i:], gsn)
	}
	return replFrame('A', b)
}

// readAll reads what the peer sends within d.
func readFor(c net.Conn, d time.Duration) []byte {
	_ = c.SetReadDeadline(time.Now().Add(d))
	b, _ := io.ReadAll(c)
	return b
}

// waitLog waits until the file holds s.
func waitLog(t *testing.T, path, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), s) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("%s never logged %q; log:\n%s", filepath.Base(path), s, b)
}

// TestSecurityReplication: nobody but a node of the cluster map, holding a
// certificate of the cluster's CA that names it, gets the replication
// stream, and nobody else's acknowledgements make a 2-safe commit return.
func TestSecurityReplication(t *testing.T) {
	h := writeHSOn(t, "sqlite", "2-safe-received", "relaxed", "on_standby_loss = \"block\"\nack_timeout = \"60s\"\n")
	// The users' passwords: a SCRAM verifier and an environment
	// reference, nothing in clear text.
	ver, err := pgwire.SCRAMVerifier("secret")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TANDEM_E2E_OPS_PASSWORD", "ops-secret")
	b, _ := os.ReadFile(h.file)
	cf := strings.Replace(string(b), `password = "secret"`, fmt.Sprintf("password = %q\n[[users]]\nname = \"ops\"\npassword = \"env:TANDEM_E2E_OPS_PASSWORD\"", ver), 1)
	if err := os.WriteFile(h.file, []byte(cf), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(h.file)
	if err != nil {
		t.Fatal(err)
	}
	n1, _ := c.Node("n1")
	certDir := c.Security.CertDir
	n1log := filepath.Join(h.dir, "n1.log")

	h.start("n1")
	h.start("n2")
	h.start("router")
	ctx := context.Background()
	db := connect(t, h.dsn(h.router))
	if _, err := db.Exec(ctx, "CREATE TABLE cards (id int PRIMARY KEY, number text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "INSERT INTO cards VALUES (1, $1)", cardNumber); err != nil {
		t.Fatal(err)
	}
	db.Close(ctx)
	// The env: user logs in through the router too.
	ops := connect(t, "postgres://ops:ops-secret@"+h.router+"/tandem?sslmode=disable")
	ops.Close(ctx)
	if b, _ := os.ReadFile(n1log); strings.Contains(string(b), "clear text") {
		t.Fatalf("n1 warned about a clear-text password, but the file holds none:\n%s", b)
	}

	t.Run("plain TCP gets no data", func(t *testing.T) {
		for _, claim := range []string{"intruder", "n2"} {
			conn, err := net.Dial("tcp", n1.Repl)
			if err != nil {
				t.Fatal(err)
			}
			conn.Write(helloFrame(claim))
			got := readFor(conn, 2*time.Second)
			conn.Close()
			if bytes.Contains(got, []byte(cardNumber)) || (len(got) > 0 && got[0] != 0x15) {
				t.Fatalf("claiming %q over plain TCP got %d bytes starting %q (want nothing but a TLS alert)", claim, len(got), got[:min(len(got), 16)])
			}
		}
		waitLog(t, n1log, "replication: refused a connection")
	})

	caPool := x509.NewCertPool()
	caPEM, err := os.ReadFile(secure.CACertFile(certDir))
	if err != nil {
		t.Fatal(err)
	}
	caPool.AppendCertsFromPEM(caPEM)
	// tryTLS connects with the identity id from dir, says hello as claim,
	// and returns what came back.
	tryTLS := func(t *testing.T, dir, id, claim string) []byte {
		cert, err := tls.LoadX509KeyPair(secure.CertFile(dir, id), secure.KeyFile(dir, id))
		if err != nil {
			t.Fatal(err)
		}
		// Present the certificate whatever CAs the server names (Go's
		// client would otherwise keep a foreign one to itself).
		conn, err := tls.Dial("tcp", n1.Repl, &tls.Config{RootCAs: caPool, ServerName: "n1",
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }})
		if err != nil {
			return nil // refused at the handshake
		}
		defer conn.Close()
		conn.Write(helloFrame(claim))
		return readFor(conn, 2*time.Second)
	}
	refused := func(t *testing.T, got []byte) {
		t.Helper()
		if bytes.Contains(got, []byte(cardNumber)) {
			t.Fatal("the replication stream reached a peer that does not belong")
		}
		if len(got) > 0 && got[0] != 'E' {
			t.Fatalf("got frame %q; want no data frame", got[0])
		}
	}

	t.Run("another cluster's CA", func(t *testing.T) {
		other := t.TempDir()
		if _, err := secure.Issue(other, []secure.Member{{ID: "n2"}}, false); err != nil {
			t.Fatal(err)
		}
		refused(t, tryTLS(t, other, "n2", "n2"))
		waitLog(t, n1log, "another cluster's CA")
	})
	t.Run("expired certificate", func(t *testing.T) {
		dir := t.TempDir()
		for _, f := range []string{"ca.crt", "ca.key"} {
			b, err := os.ReadFile(filepath.Join(certDir, f))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, f), b, 0o600)
		}
		if err := secure.IssueExpired(dir, secure.Member{ID: "n2"}); err != nil {
			t.Fatal(err)
		}
		refused(t, tryTLS(t, dir, "n2", "n2"))
		waitLog(t, n1log, "expired")
	})
	t.Run("a cluster identity that is not a node", func(t *testing.T) {
		refused(t, tryTLS(t, certDir, secure.RouterID, secure.RouterID))
		waitLog(t, n1log, "not a member of this cluster")
	})
	t.Run("a node certificate claiming another node", func(t *testing.T) {
		refused(t, tryTLS(t, certDir, "n2", "n1"))
		waitLog(t, n1log, "refused a peer that is not a node of this cluster")
	})

	t.Run("forged acknowledgements do not make a 2-safe commit return", func(t *testing.T) {
		h.kill("n2")
		done, connected := make(chan error, 1), make(chan struct{})
		go func() {
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			c, err := pgx.Connect(cctx, h.dsn(h.nodes["n1"]))
			if err != nil {
				done <- err
				return
			}
			defer c.Close(context.Background())
			close(connected)
			_, err = c.Exec(cctx, "INSERT INTO cards VALUES (2, $1)", cardNumber)
			done <- err
		}()
		// A forger on plain TCP, then with the router's (valid, non-node)
		// certificate, acknowledges every GSN for a while.
		forge := func(conn net.Conn) {
			defer conn.Close()
			conn.Write(helloFrame("n2"))
			for i := 0; i < 10; i++ {
				if _, err := conn.Write(ackFrame(1 << 40)); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		select {
		case <-connected:
		case err := <-done:
			t.Fatalf("could not connect to n1: %v", err)
		}
		cert, _ := tls.LoadX509KeyPair(secure.CertFile(certDir, secure.RouterID), secure.KeyFile(certDir, secure.RouterID))
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			if conn, err := net.Dial("tcp", n1.Repl); err == nil {
				forge(conn)
			}
			if conn, err := tls.Dial("tcp", n1.Repl, &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: caPool, ServerName: "n1"}); err == nil {
				forge(conn)
			}
			time.Sleep(50 * time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("the 2-safe commit returned (err %v) with no standby attached: forged acknowledgements counted", err)
		default:
		}
		// The real standby comes back: the commit returns, and the row is there.
		h.start("n2")
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the commit did not return after the real standby attached")
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			c := connect(t, h.dsn(h.nodes["n2"]))
			var n int
			err := c.QueryRow(ctx, "SELECT count(*) FROM cards").Scan(&n)
			c.Close(ctx)
			if err == nil && n == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("standby holds %d rows (err %v), want 2", n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("admin API", func(t *testing.T) {
		admin := "http://" + n1.Metrics
		post := func(path, token string) int {
			req, _ := http.NewRequest(http.MethodPost, admin+path, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		safeness := func() string {
			resp, err := http.Get(admin + "/status")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var st struct {
				Replication struct {
					Safeness string `json:"safeness"`
				} `json:"replication"`
			}
			json.NewDecoder(resp.Body).Decode(&st)
			return st.Replication.Safeness
		}
		for _, tok := range []string{"", "not-the-token"} {
			if code := post("/admin/set?safeness=1-safe", tok); code != http.StatusUnauthorized {
				t.Fatalf("/admin/set with token %q: HTTP %d, want 401", tok, code)
			}
			if code := post("/admin/promote", tok); code != http.StatusUnauthorized {
				t.Fatalf("/admin/promote with token %q: HTTP %d, want 401", tok, code)
			}
		}
		if s := safeness(); s != "2-safe-received" {
			t.Fatalf("safeness %q after refused requests, want 2-safe-received unchanged", s)
		}
		resp, err := http.Get(admin + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("/debug/pprof/: HTTP %d, want 404 (off by default)", resp.StatusCode)
		}
		tokB, err := os.ReadFile(filepath.Join(certDir, "admin.token"))
		if err != nil {
			t.Fatal(err)
		}
		if code := post("/admin/set?safeness=2-safe-durable", strings.TrimSpace(string(tokB))); code != http.StatusOK {
			t.Fatalf("/admin/set with the token: HTTP %d", code)
		}
		if s := safeness(); s != "2-safe-durable" {
			t.Fatalf("safeness %q, want 2-safe-durable", s)
		}
		// The command line reads the token from the cluster file's
		// security.admin_token (the default file) ...
		h.tandem("set", "safeness=2-safe-received")
		if s := safeness(); s != "2-safe-received" {
			t.Fatalf("safeness %q after tandem set, want 2-safe-received", s)
		}
		// ... and TANDEM_ADMIN_TOKEN overrides it.
		cmd := exec.Command(tandemBin, "set", "safeness=1-safe", "-c", h.file)
		cmd.Env = append(os.Environ(), "TANDEM_ADMIN_TOKEN=wrong")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "401") {
			t.Fatalf("tandem set with a wrong token: err %v, output %s (want a 401 failure)", err, out)
		}
		waitLog(t, n1log, `msg="admin action" node=n1 path=/admin/set`)
	})

	t.Run("front door verify-full with the cluster CA", func(t *testing.T) {
		host, port, _ := net.SplitHostPort(h.router)
		dsn := fmt.Sprintf("host=%s port=%s user=tandem password=secret dbname=tandem sslmode=verify-full sslrootcert=%s", host, port, secure.CACertFile(certDir))
		c := connect(t, dsn)
		if _, isTLS := c.PgConn().Conn().(*tls.Conn); !isTLS {
			t.Fatal("verify-full connection is not TLS")
		}
		c.Close(ctx)
		other := t.TempDir()
		secure.Issue(other, nil, false)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		bad := fmt.Sprintf("host=%s port=%s user=tandem password=secret dbname=tandem sslmode=verify-full sslrootcert=%s", host, port, secure.CACertFile(other))
		if c, err := pgx.Connect(cctx, bad); err == nil {
			c.Close(ctx)
			t.Fatal("verify-full with another CA connected")
		}
	})

	// Nothing in the certificate directory is readable by others.
	filepath.Walk(certDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v: group/other may read it", p, fi.Mode().Perm())
		}
		return nil
	})
}

// TestSecurityAdminHTTPS: with admin_https = "on" every admin address
// serves HTTPS with its node's certificate; the router's health checks, the
// nodes' peer checks and the command line all use it, and plain HTTP gets
// nowhere.
func TestSecurityAdminHTTPS(t *testing.T) {
	h := writeHSOn(t, "sqlite", "2-safe-received", "relaxed", "ack_timeout = \"5s\"\n[security]\nadmin_https = \"on\"\n")
	c, err := config.Load(h.file)
	if err != nil {
		t.Fatal(err)
	}
	h.start("n1")
	h.start("n2")
	h.start("router")
	ctx := context.Background()
	// The router learns the roles over HTTPS: a write through it reaches
	// the primary.
	deadline := time.Now().Add(20 * time.Second)
	for {
		db, err := pgx.Connect(ctx, h.dsn(h.router))
		if err == nil {
			_, err = db.Exec(ctx, "CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY)")
			db.Close(ctx)
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write through the router: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out := h.tandem("status")
	if !strings.Contains(out, "primary") || !strings.Contains(out, "standby") {
		t.Fatalf("tandem status does not show the roles read over HTTPS:\n%s", out)
	}
	n1, _ := c.Node("n1")
	if resp, err := http.Get("http://" + n1.Metrics + "/status"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP answered 200 on an HTTPS admin address")
		}
	}
	pool := x509.NewCertPool()
	ca, _ := os.ReadFile(secure.CACertFile(c.Security.CertDir))
	pool.AppendCertsFromPEM(ca)
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "n1"}}, Timeout: 5 * time.Second}
	resp, err := cl.Post("https://"+n1.Metrics+"/admin/set?safeness=1-safe", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HTTPS /admin/set without the token: HTTP %d, want 401", resp.StatusCode)
	}
	h.tandem("switchover")
	out = h.tandem("status")
	if !regexp(`n2\s+node\s+primary`).MatchString(out) {
		t.Fatalf("after a switchover over HTTPS, n2 is not the primary:\n%s", out)
	}
}
