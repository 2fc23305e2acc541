package secure

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// handshake runs a TLS handshake between a client and a server config over
// a real loopback connection and returns the server's error.
func handshake(t *testing.T, srv, cli *tls.Config) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		errc <- tls.Server(c, srv).Handshake()
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), cli)
	if err == nil {
		c.Read(make([]byte, 1)) // TLS 1.3: the server's verdict arrives after the client's Finished
		c.Close()
	}
	return <-errc
}

func TestMutualTLS(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	members := []Member{{ID: "n1", Hosts: []string{"10.0.0.1", "db1.example"}}, {ID: "n2"}, {ID: RouterID}}
	issued, err := Issue(dir, members, false)
	if err != nil || len(issued) != 3 {
		t.Fatalf("Issue: %v %v", issued, err)
	}
	if again, _ := Issue(dir, members, false); len(again) != 0 {
		t.Fatalf("second Issue re-issued %v", again)
	}
	if _, err := Issue(other, []Member{{ID: "n2"}}, false); err != nil {
		t.Fatal(err)
	}
	if err := IssueExpired(filepath.Join(dir), Member{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	load := func(d, id string) *Identity {
		i, err := Load(d, id)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	n1, n2, router, foreign := load(dir, "n1"), load(dir, "n2"), load(dir, RouterID), load(other, "n2")
	nodesOnly := func(p string) bool { return p == "n1" || p == "n2" }
	alwaysSend := func(id *Identity, server string) *tls.Config {
		c := id.ClientTLS(server)
		cert := id.Cert
		c.RootCAs = n2.Pool // the client trusts this cluster; only its own certificate is wrong
		c.Certificates, c.GetClientCertificate = nil, func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		return c
	}
	expiredCert, err := tls.LoadX509KeyPair(CertFile(dir, "old"), KeyFile(dir, "old"))
	if err != nil {
		t.Fatal(err)
	}
	expired := &Identity{ID: "old", Cert: expiredCert, Pool: n2.Pool}
	cases := []struct {
		name    string
		client  *tls.Config
		wantErr string
	}{
		{"member node", n2.ClientTLS("n1"), ""},
		{"cluster identity that is not a node", alwaysSend(router, "n1"), "not a member"},
		{"another cluster's CA", alwaysSend(foreign, "n1"), "unknown authority"},
		{"expired certificate", alwaysSend(expired, "n1"), "expired"},
		{"no certificate", &tls.Config{RootCAs: n2.Pool, ServerName: "n1"}, "certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := handshake(t, n1.ServerTLS(nodesOnly), c.client)
			if c.wantErr == "" && err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if c.wantErr != "" && (err == nil || !contains(Explain(err), c.wantErr)) {
				t.Fatalf("handshake error %v, want one saying %q", err, c.wantErr)
			}
		})
	}
	// The client pins the server's identity: n2's certificate does not
	// pass for n1.
	if err := handshake(t, n2.ServerTLS(nil), n1.ClientTLS("n1")); err == nil {
		t.Fatal("a server holding n2's certificate passed for n1")
	}
	// Certificates carry the listeners' hosts (verify-full).
	if err := n1.Cert.Leaf.VerifyHostname("10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if err := n1.Cert.Leaf.VerifyHostname("db1.example"); err != nil {
		t.Fatal(err)
	}
	// Keys and the directory are private.
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v", p, fi.Mode().Perm())
		}
		return nil
	})
	if _, err := Load(t.TempDir(), "n1"); !errors.Is(err, ErrNoCerts) {
		t.Fatalf("Load from an empty dir: %v, want ErrNoCerts", err)
	}
	if _, err := Load(dir, "old"); err == nil || !contains(err.Error(), "expired") {
		t.Fatalf("Load of an expired certificate: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestTokenAndSecrets(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "admin.token")
	tok, err := EnsureToken(p)
	if err != nil || len(tok) != 64 {
		t.Fatalf("EnsureToken: %q %v", tok, err)
	}
	if again, _ := EnsureToken(p); again != tok {
		t.Fatal("EnsureToken changed an existing token")
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", fi.Mode().Perm())
	}
	for _, c := range []struct {
		header string
		ok     bool
	}{{"Bearer " + tok, true}, {"bearer " + tok, true}, {"Bearer x" + tok, false}, {"", false}, {tok, false}, {"Basic " + tok, false}} {
		r, _ := http.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		if got := BearerOK(r, tok); got != c.ok {
			t.Errorf("BearerOK(%q) = %v", c.header, got)
		}
	}
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer ")
	if BearerOK(r, "") {
		t.Error("an empty token let a request in")
	}
	t.Setenv("TANDEM_SECURE_TEST", "s3")
	f := filepath.Join(t.TempDir(), "s")
	os.WriteFile(f, []byte("from-file\n"), 0o600)
	for _, c := range []struct {
		ref, want string
		literal   bool
		err       bool
	}{{"env:TANDEM_SECURE_TEST", "s3", false, false}, {"file:" + f, "from-file", false, false}, {"plain", "plain", true, false},
		{"env:TANDEM_SECURE_TEST_UNSET", "", false, true}, {"file:/nonexistent", "", false, true}} {
		got, lit, err := Resolve(c.ref)
		if (err != nil) != c.err || got != c.want || lit != c.literal {
			t.Errorf("Resolve(%q) = %q, %v, %v", c.ref, got, lit, err)
		}
		if err != nil && !errors.Is(err, ErrSecretRef) {
			t.Errorf("Resolve(%q): %v is not ErrSecretRef", c.ref, err)
		}
	}
}
