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
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/backend/postgres"
)

// extServer is a PostgreSQL server an operator runs (not tandem): the
// physical engine's external mode reaches it only with its dsn.
type extServer struct {
	t      *testing.T
	dir    string // holds data/, sock/, server.log
	port   int
	m      *postgres.Managed
	cred   *syscall.Credential
	bin    string
	pgpass string
}

// extOperatorRole is the dsn's role: the grants docs/operations.md
// "External servers" lists, nothing more (no superuser). Function grants
// are per database: extOperatorFuncs run in the dsn's.
// The sessions' role (the dsn's) is an ordinary one that owns the
// database.
var extOperatorRole = []string{
	"CREATE ROLE tandem_op LOGIN REPLICATION PASSWORD 'op-secret'",
	"GRANT pg_monitor, pg_signal_backend, pg_checkpoint TO tandem_op",
	"GRANT ALTER SYSTEM ON PARAMETER synchronous_commit, synchronous_standby_names, primary_conninfo, primary_slot_name, default_transaction_read_only, max_slot_wal_keep_size TO tandem_op",
	"CREATE ROLE tandem_app LOGIN PASSWORD 'app-secret'",
	"CREATE DATABASE tandem OWNER tandem_app",
}

var extOperatorFuncs = []string{
	"GRANT EXECUTE ON FUNCTION pg_promote(boolean, integer) TO tandem_op",
	"GRANT EXECUTE ON FUNCTION pg_reload_conf() TO tandem_op",
	"GRANT EXECUTE ON FUNCTION pg_read_file(text) TO tandem_op",
}

// extHBA: the sessions' role over TLS only (the dsn's sslmode=require
// makes the node's relay use it), the engine's role and the WAL stream
// either way.
const extHBA = "hostssl all tandem_app 127.0.0.1/32 scram-sha-256\nhost all tandem_op 127.0.0.1/32 scram-sha-256\nhost replication tandem_op 127.0.0.1/32 scram-sha-256\n"

func (s *extServer) settings() map[string]string {
	return map[string]string{"ssl": "on", "ssl_cert_file": "'" + filepath.Join(s.dir, "server.crt") + "'", "ssl_key_file": "'" + filepath.Join(s.dir, "server.key") + "'",
		"wal_level": "replica", "hot_standby": "on", "wal_log_hints": "on", "max_wal_senders": "8",
		"max_replication_slots": "8", "fsync": "off", "wal_receiver_status_interval": "'1s'", "recovery_target_timeline": "'latest'"}
}

func newExtServer(t *testing.T, name string) *extServer {
	t.Helper()
	havePostgres(t)
	bin, err := postgres.FindBinDir("")
	if err != nil {
		t.Fatal(err)
	}
	cred, err := postgres.ServerCredential()
	if err != nil {
		t.Fatal(err)
	}
	s := &extServer{t: t, dir: filepath.Join(t.TempDir(), name), port: freePort(t), cred: cred, bin: bin}
	for _, d := range []string{s.dir, filepath.Join(s.dir, "sock"), filepath.Join(s.dir, "data")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		s.chown(d)
	}
	// The standby's WAL receiver reads the operator role's password from
	// here (primary_conninfo's passfile), as an operator would set it up.
	s.pgpass = filepath.Join(s.dir, "pgpass")
	if err := os.WriteFile(s.pgpass, []byte("*:*:*:tandem_op:op-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.chown(s.pgpass)
	s.writeCert()
	if err := postgres.PrepareForUser(filepath.Join(s.dir, "data"), filepath.Join(s.dir, "server.log"), cred); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.m != nil {
			_ = s.m.StopImmediate()
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			t.Logf("external server %s log (tail):\n%s", name, tailText(string(b), 25))
		}
	})
	return s
}

// writeCert gives the server a self-signed certificate for 127.0.0.1.
func (s *extServer) writeCert() {
	s.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		s.t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		s.t.Fatal(err)
	}
	for name, b := range map[string][]byte{"server.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), "server.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})} {
		p := filepath.Join(s.dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			s.t.Fatal(err)
		}
		s.chown(p)
	}
}

func (s *extServer) chown(p string) {
	if s.cred != nil {
		if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *extServer) start(noInitdb bool) {
	s.t.Helper()
	m, err := postgres.StartManaged(context.Background(), postgres.ManagedConfig{
		DataDir: filepath.Join(s.dir, "data"), BinDir: s.bin, Port: s.port, Listen: "127.0.0.1", HBA: extHBA,
		SocketDir: filepath.Join(s.dir, "sock"), LogFile: filepath.Join(s.dir, "server.log"), NoInitdb: noInitdb, Settings: s.settings(),
	})
	if err != nil {
		s.t.Fatal(err)
	}
	s.m = m
}

// superuser runs statements as the server's bootstrap superuser over its
// socket (the operator's own access).
func (s *extServer) superuser(stmts ...string) [][]string {
	s.t.Helper()
	return s.superuserIn("postgres", stmts...)
}

func (s *extServer) superuserIn(db string, stmts ...string) [][]string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgconn.Connect(ctx, fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", filepath.Join(s.dir, "sock"), s.port, db))
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close(context.Background())
	var last [][]string
	for _, st := range stmts {
		res, err := c.Exec(ctx, st).ReadAll()
		if err != nil {
			s.t.Fatalf("%s: %v", st, err)
		}
		last = nil
		for _, r := range res {
			for _, row := range r.Rows {
				var cols []string
				for _, v := range row {
					cols = append(cols, string(v))
				}
				last = append(last, cols)
			}
		}
	}
	return last
}

// superDSN reaches the tandem database as the superuser over the socket.
func (s *extServer) superDSN() string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=tandem sslmode=disable", filepath.Join(s.dir, "sock"), s.port)
}

func (s *extServer) dsn() string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=tandem_app password=app-secret dbname=tandem sslmode=require", s.port)
}

// conninfo is the operator's primary_conninfo toward s (no password: the
// standby reads its passfile).
func (s *extServer) conninfo(passfile string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=tandem_op passfile=%s sslmode=disable", s.port, passfile)
}

// run runs a PostgreSQL program as the server's OS user.
func (s *extServer) run(name string, args ...string) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C"}
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// makeStandby makes s a hot standby of the server at conninfo (after a
// base backup or a rewind): standby.signal and primary_conninfo, as an
// operator writes them.
func (s *extServer) makeStandby(conninfo string) {
	s.t.Helper()
	data := filepath.Join(s.dir, "data")
	if err := os.WriteFile(filepath.Join(data, "standby.signal"), nil, 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.chown(filepath.Join(data, "standby.signal"))
	f, err := os.OpenFile(filepath.Join(data, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	fmt.Fprintf(f, "primary_conninfo = '%s'\nprimary_slot_name = ''\n", conninfo)
	f.Close()
	s.chown(filepath.Join(data, "postgresql.auto.conf"))
}

// TestPhysicalExternalServers: the physical engine on servers an operator
// runs (nodes.dsn, a role with the documented grants, not superuser).
// tandem points the standby at its slot and application_name, sets
// safeness on the operator's primary, and when the primary's server is
// SIGKILLed the coordinator promotes the standby (pg_promote over SQL):
// writes go on through the router, no acknowledged commit is lost. The
// old primary, rewound by its operator and started as a standby, is taken
// up by its restarted node and streams from the new primary.
func TestPhysicalExternalServers(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	h, s1, s2 := externalPair(t, "2-safe-durable")
	p := h.startCoordinatedPair()
	// tandem set the operator's servers up: the standby's stream carries
	// its node id and slot, the primary waits for it (2-safe-durable).
	if got := s1.superuser("SHOW synchronous_standby_names")[0][0]; !strings.Contains(got, "n2") {
		t.Fatalf("synchronous_standby_names on the external primary = %q, want it to name n2", got)
	}
	for _, s := range []*extServer{s1, s2} {
		if got := s.superuser("SHOW max_slot_wal_keep_size")[0][0]; got != "1GB" {
			t.Fatalf("max_slot_wal_keep_size on an external server = %q, want 1GB (replication.max_slot_wal_keep_size) on the primary and on the standby, for the day it is promoted", got)
		}
	}
	if got := s1.superuser("SELECT slot_name, active::text FROM pg_replication_slots WHERE slot_name = 'tandem_n2'"); len(got) != 1 || got[0][1] != "true" {
		t.Fatalf("the standby's slot on the external primary: %v", got)
	}
	if got := s2.superuser("SHOW primary_conninfo")[0][0]; !strings.Contains(got, "passfile") || !strings.Contains(got, "application_name='n2'") {
		t.Fatalf("primary_conninfo on the external standby = %q: want the operator's passfile kept and application_name n2", got)
	}

	ctx := context.Background()
	createTestTable(t, h.dsn(h.router))
	// Sessions run as the dsn's ordinary role, not the engine's.
	sess := connect(t, h.dsn(h.router))
	var who string
	if err := sess.QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil || who != "tandem_app" {
		t.Fatalf("sessions through the router run as %q (%v), want the dsn's role tandem_app", who, err)
	}
	var ssl bool
	if err := sess.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Fatalf("the relayed session to the external server is not over TLS (ssl %v, %v), though the dsn says sslmode=require", ssl, err)
	}
	for _, q := range []string{"ALTER SYSTEM SET synchronous_commit = local", "SELECT pg_read_file('postgresql.conf')", "SELECT pg_promote()"} {
		if _, err := sess.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "42501") {
			t.Fatalf("%s through the router: %v, want 42501 (the sessions' role holds none of the engine's rights)", q, err)
		}
	}
	sess.Close(ctx)

	// The standby's server goes down and comes back (its operator's
	// restart): its node stays up, and takes it up again.
	_ = s2.m.Stop()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if st := p.status("n2"); st.Physical != nil && st.Physical.Error != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("n2's status never said its server was down")
		}
	}
	time.Sleep(1500 * time.Millisecond) // past the probes' 1 s
	select {
	case <-h.exited["n2"]:
		t.Fatal("n2's node exited when its external standby's server stopped")
	default:
	}
	s2.start(true)
	p.waitStreaming("n1", "n2")
	rw, stop := startWriters(h.dsn(h.router), 4)
	waitCoordinated(t, h.admin["n1"], "n1", "n2")
	s1.m.Kill() // the operator's primary crashes; its node stays up
	rw.killedAt.Store(time.Now().UnixNano())
	acked := failedOver(t, p, rw, "n2", 45*time.Second, stop)
	if got := s2.superuser("SELECT pg_is_in_recovery()::text")[0][0]; got != "false" {
		t.Fatalf("the external standby was not promoted (in recovery: %s)", got)
	}
	requireNoneLost(t, acked, ids(t, h.dsn(h.nodes["n2"])))

	// The operator brings the old primary back as a standby of the new
	// one: pg_rewind from it, standby.signal, start; then restarts the
	// node, which points it at its slot on n2.
	h.kill("n1")
	if err := postgres.ClearStaleLock(ctx, filepath.Join(s1.dir, "data"), nil); err != nil {
		t.Fatal(err)
	}
	s1.run("pg_rewind", "--target-pgdata", filepath.Join(s1.dir, "data"),
		"--source-server", fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", filepath.Join(s2.dir, "sock"), s2.port))
	s1.makeStandby(s2.conninfo(s1.pgpass))
	s1.start(true)
	h.start("n1")
	p.waitStreaming("n2", "n1")
	if s := p.status("n1"); s.Physical.Role != "standby" || s.Physical.Epoch != 2 {
		t.Fatalf("the rejoined old primary: %+v", s.Physical)
	}
	conn := connect(t, h.dsn(h.router))
	if _, err := conn.Exec(ctx, "INSERT INTO t (id) VALUES (-1)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ids(t, h.dsn(h.nodes["n1"]))[-1] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a commit on the new primary never reached the rejoined external standby")
		}
	}

	// A switchover back under writes: the old primary's node fences its
	// server (its door closed, read-only by default, sessions ended),
	// waits until nothing else is open on it and hands over at its last
	// WAL position: nothing acknowledged is missing on n1.
	acked = switchoverUnderLoad(t, p, "n1")
	checkAcked(t, h.dsn(h.nodes["n1"]), acked)
	if got := s2.superuser("SHOW default_transaction_read_only")[0][0]; got != "on" {
		t.Fatalf("the fenced old primary's default_transaction_read_only = %q, want on", got)
	}
	if got := s2.superuser("SELECT pg_is_in_recovery()::text")[0][0]; got != "false" {
		t.Fatalf("the old primary's server is in recovery (%s): tandem cannot restart it, so it should still run as it was", got)
	}
	if c, err := pgconnect(h.dsn(h.nodes["n2"])); err == nil {
		c.Close(ctx)
		t.Fatal("n2's node opened a session to its fenced server")
	} else if !strings.Contains(err.Error(), "57P03") {
		t.Fatalf("n2's node refused a session with %v, want SQLSTATE 57P03", err)
	}
	if s := p.status("n2"); s.Physical.Rejoin == "" || s.Physical.ExternalServer != fmt.Sprintf("127.0.0.1:%d", s2.port) {
		t.Fatalf("n2's status does not say its external server waits for its operator: %+v", s.Physical)
	}
	if out := p.tandem("status"); !strings.Contains(out, "fenced, waiting for its operator") {
		t.Fatalf("tandem status does not show the fenced external server:\n%s", out)
	}
	// Its operator makes it a standby of n1; the running node takes it up
	// (it retries every 5 s) and it streams again.
	_ = s2.m.Stop()
	s2.run("pg_rewind", "--target-pgdata", filepath.Join(s2.dir, "data"),
		"--source-server", fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", filepath.Join(s1.dir, "sock"), s1.port))
	s2.makeStandby(s1.conninfo(s2.pgpass))
	s2.start(true)
	p.waitStreaming("n1", "n2")
	// The server streams as soon as it starts; its node takes it up at
	// its next retry (every 5 s), and lifts the fence then.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		s := p.status("n2")
		if s.Physical.Role == "standby" && s.Physical.Epoch == 3 && s.Physical.Rejoin == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2 after the switchover and its rejoin: %+v", s.Physical)
		}
	}
	if got := s2.superuser("SHOW default_transaction_read_only")[0][0]; got != "off" {
		t.Fatalf("the rejoined standby's default_transaction_read_only = %q, want the fence lifted", got)
	}
}

// pgconnect opens a connection, returning the error (connect fails the
// test instead).
func pgconnect(dsn string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pgx.Connect(ctx, dsn)
}

// externalPair sets up two external servers as their operator would (n1's
// the primary, n2's a standby seeded from it with pg_basebackup) and a
// coordinated physical cluster file that names them (nodes.dsn), the
// engine's role and its password in a file.
func externalPair(t *testing.T, safeness string) (*hsCluster, *extServer, *extServer) {
	t.Helper()
	s1, s2 := newExtServer(t, "pg1"), newExtServer(t, "pg2")
	s1.start(false)
	s1.superuser(extOperatorRole...)
	s1.superuserIn("tandem", extOperatorFuncs...)
	s2.run("pg_basebackup", "-D", filepath.Join(s2.dir, "data"), "-d", s1.conninfo(s2.pgpass), "-X", "stream", "-c", "fast", "--no-sync")
	s2.makeStandby(s1.conninfo(s2.pgpass))
	s2.start(true)

	h := writeHSFile(t, "postgres", safeness, "strict", "failover = \"automatic\"\nlease = \"1s\"\nlease_grace = \"500ms\"\nack_timeout = \"2s\"\n", true)
	b, err := os.ReadFile(h.file)
	if err != nil {
		t.Fatal(err)
	}
	// The engine's role and its password (from a file, as an operator
	// keeps it out of the cluster file).
	pw := filepath.Join(h.dir, "server.password")
	if err := os.WriteFile(pw, []byte("op-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "engine = \"writeset\"", fmt.Sprintf("engine = \"physical\"\nserver_role = \"tandem_op\"\nserver_password = \"file:%s\"", pw), 1)
	for id, s := range map[string]*extServer{"n1": s1, "n2": s2} {
		at := strings.Index(text, "id = \""+id+"\"")
		text = text[:at] + strings.Replace(text[at:], "backend = \"postgres\"\n", "backend = \"postgres\"\ndsn = \""+s.dsn()+"\"\n", 1)
	}
	if err := os.WriteFile(h.file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	lostIDs = nil
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range []string{"n1", "n2"} {
				l, _ := os.ReadFile(filepath.Join(h.dir, id+".log"))
				t.Logf("%s node log:\n%s", id, tailText(string(l), 40))
			}
			if r, err := os.ReadFile(filepath.Join(h.dir, "router.log")); err == nil {
				t.Logf("router log:\n%s", tailText(string(r), 60))
			}
			// Where a lost acknowledged commit went, if anywhere.
			for _, id := range lostIDs {
				for name, s := range map[string]*extServer{"pg1": s1, "pg2": s2} {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					c, err := pgx.Connect(ctx, s.superDSN())
					if err == nil {
						var n int
						err = c.QueryRow(ctx, "SELECT count(*) FROM audit WHERE id = $1", id).Scan(&n)
						t.Logf("lost id %d on %s: %d rows (%v)", id, name, n, err)
						c.Close(ctx)
					} else {
						t.Logf("lost id %d on %s: %v", id, name, err)
					}
					cancel()
				}
			}
		}
	})
	return h, s1, s2
}

// TestPhysicalExternalFence: a primary whose node loses the coordinator
// (the witness's and n2's node processes stopped; the servers run on)
// fences its external server when its lease lapses: a session open at
// its node before is ended and wrote nothing after, no new one opens
// (57P03), the server is read-only by default. Once the coordinator is
// back, writes go on through the router on whichever node holds the
// primary role, and only that one's server takes writes.
func TestPhysicalExternalFence(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	h, s1, s2 := externalPair(t, "2-safe-received")
	p := h.startCoordinatedPair()
	ctx := context.Background()
	createTestTable(t, h.dsn(h.router))
	waitCoordinated(t, h.admin["n1"], "n1", "n2")
	direct := connect(t, h.dsn(h.nodes["n1"]))
	if _, err := direct.Exec(ctx, "INSERT INTO t VALUES (1, 'before the cut')"); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	resume := h.pause("witness", "n2")
	for s1.superuser("SHOW default_transaction_read_only")[0][0] != "on" {
		if time.Since(cut) > 15*time.Second {
			t.Fatal("n1's external server was not fenced within 15 s of losing the coordinator (lease 1 s)")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("fenced %v after the cut (lease 1 s, grace 0.5 s)", time.Since(cut).Round(time.Millisecond))
	if _, err := direct.Exec(ctx, "INSERT INTO t VALUES (2, 'after the fence')"); err == nil {
		t.Fatal("a session open at n1's node before the cut wrote after the fence")
	}
	if c, err := pgconnect(h.dsn(h.nodes["n1"])); err == nil {
		c.Close(ctx)
		t.Fatal("n1's node opened a session to its fenced server")
	} else if !strings.Contains(err.Error(), "57P03") {
		t.Fatalf("n1's node refused a session with %v, want 57P03", err)
	}
	// pg_terminate_backend signals; the backends exit a moment later.
	for wait := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := s1.superuser("SELECT count(*) FROM pg_stat_activity WHERE usename = 'tandem_app'")[0][0]
		if got == "0" {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("%s client sessions still open on the fenced server 5 s after its fence", got)
		}
	}
	resume()
	var primary string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		c, err := pgconnect(h.dsn(h.router))
		if err == nil {
			_, err = c.Exec(ctx, "INSERT INTO t VALUES (3, 'after the heal')")
			c.Close(ctx)
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write through the router within 60 s of the heal: %v", err)
		}
	}
	for _, id := range []string{"n1", "n2"} {
		if s := p.status(id); s.Physical != nil && s.Physical.Role == "primary" {
			primary = id
		}
	}
	ro1 := s1.superuser("SHOW default_transaction_read_only")[0][0]
	rec1 := s1.superuser("SELECT pg_is_in_recovery()::text")[0][0]
	rec2 := s2.superuser("SELECT pg_is_in_recovery()::text")[0][0]
	t.Logf("after the heal: %s is the primary; n1's server read-only %s, in recovery %s; n2's in recovery %s", primary, ro1, rec1, rec2)
	switch primary {
	case "n1": // the lease came back before anyone was promoted
		if ro1 != "off" || rec2 != "true" {
			t.Fatalf("n1 kept the primary role, but its server is read-only %s and n2's in recovery %s", ro1, rec2)
		}
	case "n2": // promoted: n1's server stays fenced until its operator rejoins it
		if rec2 != "false" || (rec1 == "false" && ro1 != "on") {
			t.Fatalf("n2 was promoted, but its server in recovery %s; n1's server read-only %s in recovery %s", rec2, ro1, rec1)
		}
	default:
		t.Fatal("no node is the primary after the heal")
	}
	if got := s1.superuser("SELECT count(*) FROM pg_stat_activity WHERE usename = 'tandem_app' AND backend_type = 'client backend'")[0][0]; primary == "n2" && got != "0" {
		t.Fatalf("%s client sessions on n1's fenced server after n2's promotion", got)
	}
	if ok := idsOnServer(t, s1)[2]; ok {
		t.Fatal("the insert tried after the fence is on n1's server")
	}
}

// idsOnServer reads t's ids on an external server as its superuser.
func idsOnServer(t *testing.T, s *extServer) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	for _, r := range s.superuserIn("tandem", "SELECT id FROM t") {
		var id int64
		fmt.Sscan(r[0], &id)
		out[id] = true
	}
	return out
}

// TestPhysicalExternalSingleMaster: single-master on three external
// servers (one primary, two standbys the operator seeded), started with
// `tandem up`: reads through the router's read port at session
// consistency see their own writes; after a SIGKILL of the primary's
// server the coordinator promotes one standby and repoints the other to
// it (ALTER SYSTEM primary_conninfo, reloaded: it streams from the new
// primary), and every acknowledged commit is on the new primary.
func TestPhysicalExternalSingleMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	sm, s1, s2, s3 := externalTrio(t, "")
	ctx := context.Background()
	c := connect(t, sm.DSN)
	for _, q := range []string{"CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT)", "CREATE TABLE ryw (id bigint PRIMARY KEY, session int)"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	c.Close(ctx)
	r := writeThenRead(t, sm.DSN, "session", 4, 25, 1_000_000)
	t.Logf("session: %d pairs, %d stale, %d read on a replica", r.pairs.Load(), r.stale.Load(), r.onReplica.Load())
	if r.pairs.Load() != 100 || r.stale.Load() != 0 || r.onReplica.Load() == 0 {
		t.Fatalf("read-your-writes on external replicas: %d pairs, %d stale, %d on a replica", r.pairs.Load(), r.stale.Load(), r.onReplica.Load())
	}

	rw, stop := startWriters(sm.DSN, 4)
	s1.m.Kill()
	rw.killedAt.Store(time.Now().UnixNano())
	primary, other := sm.settledPair(60*time.Second, "n2", "n3")
	waitWritesGoOn(t, rw)
	stop()
	rw.mu.Lock()
	acked := append([]int64(nil), rw.acked...)
	rw.mu.Unlock()
	t.Logf("%s promoted, %s streams from it; first commit %v after the SIGKILL", primary, other, time.Duration(rw.firstBack.Load()-rw.killedAt.Load()).Round(time.Millisecond))
	servers := map[string]*extServer{"n2": s2, "n3": s3}
	if got := servers[other].superuser("SHOW primary_conninfo")[0][0]; !strings.Contains(got, fmt.Sprintf("port='%d'", servers[primary].port)) {
		t.Fatalf("%s's primary_conninfo = %q, want it pointed at %s's server", other, got, primary)
	}
	requireNoneLost(t, acked, idsOnServer(t, servers[primary]))
}

// externalTrio sets up three external servers as their operator would
// (pg1 the primary, pg2 and pg3 standbys seeded from it) under a
// single-master cluster of the physical engine (n1 out of read rotation),
// with repl as more [replication] lines, and waits until both stream.
func externalTrio(t *testing.T, repl string) (*smCluster, *extServer, *extServer, *extServer) {
	t.Helper()
	s1, s2, s3 := newExtServer(t, "pg1"), newExtServer(t, "pg2"), newExtServer(t, "pg3")
	s1.start(false)
	s1.superuser(extOperatorRole...)
	s1.superuserIn("tandem", extOperatorFuncs...)
	for _, s := range []*extServer{s2, s3} {
		s.run("pg_basebackup", "-D", filepath.Join(s.dir, "data"), "-d", s1.conninfo(s.pgpass), "-X", "stream", "-c", "fast", "--no-sync")
		s.makeStandby(s1.conninfo(s.pgpass))
		s.start(true)
	}
	pw := filepath.Join(t.TempDir(), "server.password")
	if err := os.WriteFile(pw, []byte("op-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{"replication": fmt.Sprintf("server_role = \"tandem_op\"\nserver_password = \"file:%s\"\n%s", pw, repl)}
	for i, s := range []*extServer{s1, s2, s3} {
		lines[fmt.Sprintf("n%d", i+1)] = fmt.Sprintf("dsn = %q\n", s.dsn())
	}
	lines["n1"] += "read_weight = 0\n"
	sm := upPhysSM(t, 3, lines, nil)
	sm.waitReplicasStreaming("n1", "n2", "n3")
	return sm, s1, s2, s3
}

// TestPhysicalExternalPastFork: a standby whose server received WAL of
// the lost primary that the promoted one had not (1-safe commits) cannot
// follow the new timeline, and its data holds commits the cluster's
// history does not. Made so: pg2's WAL receiver is stopped while rows
// are committed (pg3 receives them), pg1 is SIGKILLed and its operator
// promotes n2 (`tandem promote n2`, failover manual), which tells n3 to
// follow it. n3 finds its server past the fork: it is fenced (57P03 at
// its door, no read through the router sees the lost rows) and says what
// its operator must run; once pg3 is rewound and started as a standby,
// the node takes it up and it streams from n2.
func TestPhysicalExternalPastFork(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	sm, s1, s2, s3 := externalTrio(t, "safeness = \"1-safe\"\nfailover = \"manual\"\n")
	ctx := context.Background()
	c := connect(t, sm.DSN)
	if _, err := c.Exec(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT)"); err != nil {
		t.Fatal(err)
	}
	count := func(s *extServer) int {
		n, _ := strconv.Atoi(s.superuserIn("tandem", "SELECT count(*) FROM t")[0][0])
		return n
	}
	// Both standbys must have the table before pg2 stops receiving (a
	// count on pg3 below reads it; at 1-safe pg3 may lag).
	for _, s := range []*extServer{s2, s3} {
		for deadline := time.Now().Add(20 * time.Second); len(s.superuserIn("tandem", "SELECT 1 FROM pg_class WHERE relname = 't'")) == 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the table never reached %s", s.dir)
			}
		}
	}
	// pg2 stops receiving: its primary_conninfo names a port nobody
	// listens on (its operator's change; the WAL already in its socket
	// would otherwise still arrive).
	s2.superuser("ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 connect_timeout=1'", "SELECT pg_reload_conf()")
	for deadline := time.Now().Add(20 * time.Second); len(s2.superuser("SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming'")) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("pg2's WAL receiver still streams")
		}
	}
	const lost = 50
	for i := 1; i <= lost; i++ {
		if _, err := c.Exec(ctx, "INSERT INTO t VALUES ($1, 'pg1 only')", i); err != nil {
			t.Fatal(err)
		}
	}
	c.Close(ctx)
	for deadline := time.Now().Add(20 * time.Second); count(s3) < lost; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pg3 replayed %d of the %d rows", count(s3), lost)
		}
	}
	s1.m.Kill()
	var out []byte
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		// n1's node goes down with its server: until then the CLI finds
		// the primary answering.
		if out, err = exec.Command(tandemBin, "promote", "n2", "-c", sm.File).CombinedOutput(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tandem promote n2: %v\n%s", err, out)
		}
	}
	t.Logf("tandem promote n2:\n%s", out)
	if got := count(s2); got != 0 {
		t.Fatalf("pg2 has %d of the rows its receiver never got", got)
	}
	var rejoin string
	for deadline := time.Now().Add(45 * time.Second); rejoin == ""; time.Sleep(200 * time.Millisecond) {
		if st, err := sm.physStatusOf("n3"); err == nil {
			rejoin = st.Physical.Rejoin
		}
		if time.Now().After(deadline) {
			t.Fatal("n3 never said that its server cannot follow n2")
		}
	}
	t.Logf("n3: %s", rejoin)
	if !strings.Contains(rejoin, "forked") || !strings.Contains(rejoin, "pg_rewind") {
		t.Fatalf("n3's rejoin message does not say why or what to do: %q", rejoin)
	}
	if conn, err := pgconnect(sm.dsn(sm.nodes["n3"])); err == nil {
		conn.Close(ctx)
		t.Fatal("n3's door is open while its server holds commits outside the cluster's history")
	} else if sqlstate(err) != "57P03" {
		t.Fatalf("a session at n3: %v, want 57P03", err)
	}
	// No read through the router sees the lost rows.
	rc := connect(t, sm.dsn(sm.reads))
	for i := 0; i < 30; i++ {
		var n int
		if err := rc.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("read %d through the router's read port: %d rows of the lost primary's", i, n)
		}
	}
	rc.Close(ctx)

	// The operator rewinds pg3 to pg2 and starts it as a standby; the
	// running node takes it up (it retries every 5 s) and it streams.
	if err := s3.m.Stop(); err != nil {
		t.Fatal(err)
	}
	s3.run("pg_rewind", "--target-pgdata", filepath.Join(s3.dir, "data"),
		"--source-server", fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", filepath.Join(s2.dir, "sock"), s2.port))
	s3.makeStandby(s2.conninfo(s3.pgpass))
	s3.start(true)
	sm.waitReplicasStreaming("n2", "n3")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st, err := sm.physStatusOf("n3")
		if err == nil && st.Physical.Rejoin == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n3 still waits for its operator after the rewind: %+v", st.Physical)
		}
	}
	if got := count(s3); got != 0 {
		t.Fatalf("pg3 still has %d rows of the lost primary after its rewind", got)
	}
	if conn, err := pgconnect(sm.dsn(sm.nodes["n3"])); err != nil {
		t.Fatalf("n3's door after the rejoin: %v", err)
	} else {
		conn.Close(ctx)
	}
}
