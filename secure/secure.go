// Package secure owns the trust between tandem's own processes: the cluster
// certificate authority and the certificates it issues (one per node, one for
// the router, one for the operator's command line), the TLS configurations of
// every inter-node channel (mutual TLS, the peer's identity pinned to a
// cluster member), the admin token, and references to secrets kept out of the
// cluster file (env:NAME, file:PATH).
//
// It must not listen, dial or read the cluster file: callers hand it paths
// and identities and get back TLS configurations and checks.
package secure

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Sentinel errors (errors.Is).
var (
	// ErrNoCerts: the certificate directory lacks what a process needs.
	ErrNoCerts = errors.New("cluster certificates missing")
	// ErrUntrustedPeer: a peer's certificate is valid but names someone
	// who may not use this channel.
	ErrUntrustedPeer = errors.New("peer is not a member of this cluster")
	// ErrSecretRef: an env:/file: reference could not be resolved.
	ErrSecretRef = errors.New("secret reference cannot be resolved")
)

// Identities besides the node ids.
const (
	RouterID = "router" // the router process
	AdminID  = "admin"  // the operator's command line (tandem status, bench)
)

// Validity of issued certificates.
var (
	CAValidity   = 10 * 365 * 24 * time.Hour
	LeafValidity = 825 * 24 * time.Hour
)

// Files in a certificate directory.
func caCertPath(dir string) string         { return filepath.Join(dir, "ca.crt") }
func caKeyPath(dir string) string          { return filepath.Join(dir, "ca.key") }
func certPath(dir, id string) string       { return filepath.Join(dir, id+".crt") }
func keyPath(dir, id string) string        { return filepath.Join(dir, id+".key") }
func CACertFile(dir string) string         { return caCertPath(dir) }
func CertFile(dir, id string) string       { return certPath(dir, id) }
func KeyFile(dir, id string) string        { return keyPath(dir, id) }
func TokenFile(dir string) string          { return filepath.Join(dir, "admin.token") }
func writeSecret(p string, b []byte) error { return os.WriteFile(p, b, 0o600) }

// Member is one identity to issue a certificate for, with the host names
// and addresses its listeners answer on (for clients that verify them:
// sslmode=verify-full).
type Member struct {
	ID    string
	Hosts []string
}

// Issue creates the CA in dir when it has none, and a certificate for each
// member that lacks one (renew: re-issue every member's certificate from
// the existing CA). It takes a lock on dir, so processes that start at the
// same time do not race. It reports the members it issued.
func Issue(dir string, members []Member, renew bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("certificate directory %s: %w", dir, err)
	}
	_ = os.Chmod(dir, 0o700)
	lf, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("certificate directory %s: %w", dir, err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) //nolint:errcheck
	caCert, caKey, err := loadCA(dir)
	if errors.Is(err, os.ErrNotExist) {
		caCert, caKey, err = newCA(dir)
	}
	if err != nil {
		return nil, err
	}
	var issued []string
	for _, m := range members {
		if !renew {
			if _, err := os.Stat(certPath(dir, m.ID)); err == nil {
				continue
			}
		}
		if err := issueLeaf(dir, m, caCert, caKey); err != nil {
			return issued, err
		}
		issued = append(issued, m.ID)
	}
	return issued, nil
}

func newSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

func newCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: "tandem cluster CA " + hex.EncodeToString(newSerial().Bytes()[:4]), Organization: []string{"tandem"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePEM(caKeyPath(dir), "EC PRIVATE KEY", marshalKey(key)); err != nil {
		return nil, nil, err
	}
	if err := writePEM(caCertPath(dir), "CERTIFICATE", der); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func marshalKey(k *ecdsa.PrivateKey) []byte {
	b, _ := x509.MarshalECPrivateKey(k)
	return b
}

func writePEM(path, typ string, der []byte) error {
	return writeSecret(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, err := os.ReadFile(caCertPath(dir))
	if err != nil {
		return nil, nil, err
	}
	kb, err := os.ReadFile(caKeyPath(dir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("%w: %s has the CA certificate but not its key (ca.key): issue certificates where the key is kept", ErrNoCerts, dir)
		}
		return nil, nil, err
	}
	cp, _ := pem.Decode(cb)
	kp, _ := pem.Decode(kb)
	if cp == nil || kp == nil {
		return nil, nil, fmt.Errorf("%s: ca.crt or ca.key is not PEM", dir)
	}
	cert, err := x509.ParseCertificate(cp.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: ca.crt: %w", dir, err)
	}
	key, err := x509.ParseECPrivateKey(kp.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: ca.key: %w", dir, err)
	}
	return cert, key, nil
}

func issueLeaf(dir string, m Member, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	return issueLeafValid(dir, m, ca, caKey, time.Now().Add(-time.Hour), time.Now().Add(LeafValidity))
}

func issueLeafValid(dir string, m Member, ca *x509.Certificate, caKey *ecdsa.PrivateKey, from, to time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: m.ID, Organization: []string{"tandem"}},
		NotBefore:    from,
		NotAfter:     to,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{m.ID},
	}
	seen := map[string]bool{m.ID: true}
	for _, h := range append([]string{"localhost", "127.0.0.1", "::1"}, m.Hosts...) {
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() {
				tpl.IPAddresses = append(tpl.IPAddresses, ip)
			}
		} else {
			tpl.DNSNames = append(tpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(keyPath(dir, m.ID), "EC PRIVATE KEY", marshalKey(key)); err != nil {
		return err
	}
	return writePEM(certPath(dir, m.ID), "CERTIFICATE", der)
}

// IssueExpired writes a certificate for m that expired an hour ago (tests
// of the refusal path use it; nothing else should).
func IssueExpired(dir string, m Member) error {
	ca, key, err := loadCA(dir)
	if err != nil {
		return err
	}
	return issueLeafValid(dir, m, ca, key, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
}

// Identity is one process's credentials: its certificate and the CA it
// trusts.
type Identity struct {
	ID   string
	Cert tls.Certificate
	Pool *x509.CertPool
}

// Load reads the identity id from dir.
func Load(dir, id string) (*Identity, error) {
	cb, err := os.ReadFile(caCertPath(dir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no ca.crt: run `tandem certs -c FILE` and copy the directory to every host", ErrNoCerts, dir)
		}
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cb) {
		return nil, fmt.Errorf("%s: ca.crt holds no certificate", dir)
	}
	cert, err := tls.LoadX509KeyPair(certPath(dir, id), keyPath(dir, id))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no certificate for %q: run `tandem certs -c FILE`", ErrNoCerts, dir, id)
		}
		return nil, fmt.Errorf("certificate of %q in %s: %w", id, dir, err)
	}
	if cert.Leaf == nil && len(cert.Certificate) > 0 {
		cert.Leaf, _ = x509.ParseCertificate(cert.Certificate[0])
	}
	if cert.Leaf != nil && time.Now().After(cert.Leaf.NotAfter) {
		return nil, fmt.Errorf("certificate of %q in %s expired on %s: renew it with `tandem certs -c FILE --renew`", id, dir, cert.Leaf.NotAfter.Format(time.RFC3339))
	}
	return &Identity{ID: id, Cert: cert, Pool: pool}, nil
}

// PeerID is the identity a verified peer certificate names ("" when none).
func PeerID(cs tls.ConnectionState) string {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return ""
	}
	return cs.VerifiedChains[0][0].Subject.CommonName
}

// ServerTLS is the configuration of a listener only cluster members may
// use: the peer must present a certificate of this cluster's CA naming an
// identity allowed accepts.
func (id *Identity) ServerTLS(allowed func(peer string) bool) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.Cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    id.Pool,
		VerifyConnection: func(cs tls.ConnectionState) error {
			p := PeerID(cs)
			if allowed != nil && !allowed(p) {
				return fmt.Errorf("%w: certificate names %q", ErrUntrustedPeer, p)
			}
			return nil
		},
	}
}

// FrontDoorTLS serves this identity's certificate to PostgreSQL clients and
// verifies a client certificate when one is given (tandem's own hops
// present theirs; applications usually do not).
func (id *Identity) FrontDoorTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{id.Cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    id.Pool,
	}
}

// FrontDoorWith serves the operator's own front-door configuration (the
// certificate of [tls] cert) to applications, and this identity's cluster
// certificate to a client that asks for this identity by name (SNI), as
// tandem's own hops do (ClientTLS sets ServerName to the member they mean
// to reach): they verify the server with the cluster CA, which the
// operator's certificate is not signed by. Client certificates of the
// cluster CA are verified when given, on both.
func (id *Identity) FrontDoorWith(user *tls.Config) *tls.Config {
	own := id.FrontDoorTLS()
	app := user.Clone()
	app.ClientAuth, app.ClientCAs = tls.VerifyClientCertIfGiven, id.Pool
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			if hello.ServerName == id.ID {
				return own, nil
			}
			return app, nil
		},
	}
}

// ClientTLS is the configuration to reach the member server: its
// certificate must be this cluster's and name server.
func (id *Identity) ClientTLS(server string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{id.Cert},
		RootCAs:      id.Pool,
		ServerName:   server,
	}
}

// Explain turns a TLS handshake failure into the operator's words.
func Explain(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	switch {
	case errors.Is(err, ErrUntrustedPeer):
		return s + " (not a node of this cluster's map)"
	case strings.Contains(s, "unknown authority"), strings.Contains(s, "unknown certificate authority"):
		return s + " (the peer's certificate is from another cluster's CA: copy this cluster's certificate directory to it)"
	case strings.Contains(s, "expired"):
		return s + " (renew with `tandem certs -c FILE --renew`)"
	case strings.Contains(s, "certificate required"), strings.Contains(s, "first record does not look like a TLS handshake"), strings.Contains(s, "didn't provide a certificate"):
		return s + " (the peer presented no cluster certificate)"
	}
	return s
}

// EnsureToken returns the admin token kept in path, creating a random one
// (0600) when the file does not exist.
func EnsureToken(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("admin token file %s is empty", path)
		}
		return t, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	t := hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, os.ErrExist) {
		return EnsureToken(path) // another process made it first
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.WriteString(t + "\n"); err != nil {
		return "", err
	}
	return t, nil
}

// BearerOK reports whether the request carries token (constant time).
func BearerOK(r *http.Request, token string) bool {
	h := r.Header.Get("Authorization")
	const p = "Bearer "
	if token == "" || len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(h[len(p):])), []byte(token)) == 1
}

// Resolve reads a secret: "env:NAME" from the environment, "file:PATH" from
// a file (trailing newline dropped), anything else is the secret itself.
// literal reports the last case (callers warn about clear text).
func Resolve(ref string) (secret string, literal bool, err error) {
	switch {
	case strings.HasPrefix(ref, "env:"):
		name := strings.TrimPrefix(ref, "env:")
		v, ok := os.LookupEnv(name)
		if !ok {
			return "", false, fmt.Errorf("%w: environment variable %s is not set", ErrSecretRef, name)
		}
		return v, false, nil
	case strings.HasPrefix(ref, "file:"):
		p := strings.TrimPrefix(ref, "file:")
		b, err := os.ReadFile(p)
		if err != nil {
			return "", false, fmt.Errorf("%w: %v", ErrSecretRef, err)
		}
		return strings.TrimRight(string(b), "\r\n"), false, nil
	}
	return ref, true, nil
}

// AdminAction wraps an admin action's handler: the admin token
// (RequireToken, logged with who asked) and POST only.
func AdminAction(token string, log *slog.Logger, h func(w http.ResponseWriter, req *http.Request)) http.Handler {
	return RequireToken(token, log, true, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		h(w, req)
	}))
}

// ReplyJSON answers an admin request: v as JSON, or {"error": ...} with
// 409 Conflict (the action was refused; nothing changed).
func ReplyJSON(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// RequireToken wraps h: a request without the admin token's bearer
// credentials gets 401 and changes nothing. what names the endpoint in the
// log; a mutating action is logged with who asked.
func RequireToken(token string, log *slog.Logger, mutating bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !BearerOK(req, token) {
			log.Warn("admin: refused a request without valid credentials", "path", req.URL.Path, "remote", req.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="tandem admin"`)
			http.Error(w, "401 unauthorized: send the admin token (Authorization: Bearer TOKEN; `tandem` commands read it from security.admin_token or TANDEM_ADMIN_TOKEN)", http.StatusUnauthorized)
			return
		}
		if mutating {
			log.Info("admin action", "path", req.URL.Path, "query", req.URL.RawQuery, "remote", req.RemoteAddr, "user_agent", req.UserAgent(), "credentials", "admin token")
		}
		h.ServeHTTP(w, req)
	})
}
