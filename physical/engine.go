package physical

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/secure"
)

// Errors of the engine.
var (
	ErrNotPrimary = errors.New("this node is not the primary")
	ErrNotStandby = errors.New("this node is not a standby")
	ErrNotCaught  = errors.New("the standby has not replayed the old primary's last WAL")
	ErrNoTarget   = errors.New("the switchover target is not streaming from this primary")
	// ErrSourceNotCheckpointed: a rewind's source has not yet written its
	// timeline into pg_control (its first checkpoint after a promotion).
	ErrSourceNotCheckpointed = errors.New("the new primary has not checkpointed since its promotion")
)

// Roles, as the writeset engine names them (the router and the command
// line read them from /status and /watch).
const (
	RolePrimary = "primary"
	RoleStandby = "standby"
)

// ReplicationRole is the PostgreSQL role the WAL streams, base backups and
// pg_rewind log in as (REPLICATION LOGIN, no superuser).
const ReplicationRole = "tandem_repl"

// state is what a node persists about its role (physical/state.json).
type state struct {
	Role    string `json:"role"`
	Epoch   uint64 `json:"epoch"`
	Primary string `json:"primary"`
	// Safeness is the level `tandem set` chose last (the cluster file's
	// until then).
	Safeness string `json:"safeness"`
	// Rewind: this data directory was a primary's and must be rewound
	// (pg_rewind) to the new primary's timeline before it follows.
	Rewind bool `json:"rewind,omitempty"`
}

// Config is what the engine needs from the node.
type Config struct {
	Cluster *config.Cluster
	ID      string
	// Ident is the node's cluster certificate (nil: inter_node = "none",
	// loopback only): PostgreSQL serves it to the replicas' WAL streams,
	// which verify it with the cluster CA.
	Ident *secure.Identity
	// Token is the admin token: the replication role's password derives
	// from it, so every node holding the cluster's secrets knows it and
	// nothing else has to be copied between hosts.
	Token  string
	Logger *slog.Logger
	// Door: the node's front door, closed while an external server is
	// fenced (nil: nothing to close).
	Door Door
}

// Engine runs one node's managed PostgreSQL as a primary or a hot standby.
type Engine struct {
	cfg    Config
	c      *config.Cluster
	node   *config.Node
	log    *slog.Logger
	dir    string // NODE_DATA/physical: state, TLS files, pgpass
	pgdata string // NODE_DATA/pgdata
	bin    string
	cred   *syscall.Credential
	port   int
	host   string

	opMu    sync.Mutex // serializes changes of role and server restarts
	stMu    sync.Mutex
	st      state
	changed chan struct{}

	srv atomic.Pointer[srvRef]
	// external: the node's server is the operator's (nodes.dsn), not
	// tandem's to start, stop, seed or rewind (external.go).
	external bool
	door     Door
	rejoin   atomic.Pointer[string] // what the operator must do (ErrRejoin), nil when nothing
	stopping atomic.Bool            // the engine stops the server on purpose
	failed   chan struct{}          // closed when the server exits unbidden
	failOnce sync.Once

	// degraded: synchronous_standby_names is empty because no standby
	// streamed for ack_timeout (Watch).
	degraded atomic.Bool
	// promoteFailed: the map named this node the primary and promoting
	// failed (its server was stopped: being re-seeded, or not answering
	// yet); watchMap tries again with the map it last saw.
	promoteFailed atomic.Bool

	// automatic failover (coordinate.go)
	coord     *coordinator.Coordinator
	keeper    *coordinator.Keeper
	confirmed atomic.Uint64 // the WAL position the synchronous standby confirmed
	cleanFrom atomic.Uint64 // where commits waited for the standby again after a degrade
	fenced    atomic.Bool   // the server was frozen or stopped for a lost lease
	frozen    atomic.Bool   // ... and it is frozen (SIGSTOP), not stopped
	frozenAt  atomic.Int64  // when it was frozen (Unix ns)
	heldEpoch atomic.Uint64 // the epoch whose lease this primary held
	released  atomic.Bool   // the lease was given up for a hand-over

	connMu sync.Mutex
	conn   *pgconn.PgConn // status queries over the socket

	// Status's copy of the server's synchronous settings (settingsTTL).
	setMu      sync.Mutex
	settings2  [2]string
	settingsAt time.Time
}

// New prepares the engine of node cfg.ID (nothing starts yet).
func New(cfg Config) (*Engine, error) {
	n, ok := cfg.Cluster.Node(cfg.ID)
	if !ok {
		return nil, fmt.Errorf("%w: no node %q", config.ErrInvalid, cfg.ID)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if n.DSN != "" {
		return newExternal(cfg, n, log)
	}
	host, p, err := net.SplitHostPort(n.Repl)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: field nodes.repl_listen: %v", config.ErrInvalid, cfg.Cluster.File, err)
	}
	port, _ := strconv.Atoi(p)
	bin, err := postgres.FindBinDir(n.Postgres.BinDir)
	if err != nil {
		return nil, err
	}
	cred, err := postgres.ServerCredential()
	if err != nil {
		return nil, err
	}
	// Absolute: the server runs in its data directory and reads the
	// certificate and key paths written into its configuration from there
	// (a relative run_dir, as in the examples, made them unreadable).
	dataDir, err := filepath.Abs(n.DataDir)
	if err != nil {
		return nil, fmt.Errorf("physical: %w", err)
	}
	e := &Engine{cfg: cfg, c: cfg.Cluster, node: n, log: log.With("engine", "physical"), bin: bin, cred: cred, port: port, host: host,
		dir: filepath.Join(dataDir, "physical"), pgdata: filepath.Join(dataDir, "pgdata"),
		changed: make(chan struct{}), failed: make(chan struct{})}
	return e, nil
}

// Failed is closed when the server exits without the engine asking.
func (e *Engine) Failed() <-chan struct{} { return e.failed }

// Socket is the server's Unix socket, where the node relays sessions. It
// lives in the engine's directory (0700, the server's OS user's), not in
// the data directory: pg_rewind copies every file of its source's data
// directory, and reading the source's socket failed every rewind ("could
// not open file .s.PGSQL.N for reading: No such device or address"), so
// every old primary came back by a base backup.
func (e *Engine) Socket() string {
	return filepath.Join(e.dir, ".s.PGSQL."+strconv.Itoa(e.port))
}

// engineApp is the application_name of the engine's own sessions (an
// external server's fence ends every other client session).
const engineApp = "tandem physical engine"

// connect opens a SQL session on this node's server: a managed one's
// over its socket as its bootstrap superuser, an external one's with the
// node's dsn.
func (e *Engine) connect(ctx context.Context) (*pgconn.PgConn, error) {
	if e.external {
		return e.connectDSN(ctx, e.node.DSN)
	}
	return pgconn.Connect(ctx, e.socketDSN("postgres"))
}

// socketDSN reaches the local server as its bootstrap superuser.
func (e *Engine) socketDSN(db string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", e.dir, e.port, db)
}

// password is the replication role's password: an HMAC of the admin
// token, the same on every node, never written to a log.
func (e *Engine) password() string {
	m := hmac.New(sha256.New, []byte(e.cfg.Token))
	m.Write([]byte("tandem physical replication role " + e.c.Name))
	return hex.EncodeToString(m.Sum(nil))
}

// slotName is the physical replication slot the primary keeps for node id.
func slotName(id string) string {
	var b strings.Builder
	b.WriteString("tandem_")
	for _, r := range strings.ToLower(id) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ---- state ----

func (e *Engine) statePath() string { return filepath.Join(e.dir, "state.json") } // = StatePath(node data dir)

func (e *Engine) loadState() error {
	b, err := os.ReadFile(e.statePath())
	if errors.Is(err, os.ErrNotExist) {
		// First start. A data directory without this engine's state was
		// made by the writeset engine (the same place): running it here
		// would leave its capture behind, or base-backup over it.
		if _, err := os.Stat(filepath.Join(e.pgdata, "PG_VERSION")); err == nil {
			return fmt.Errorf("%w: %s holds a PostgreSQL data directory the writeset engine made (no %s): set engine = \"writeset\" in [replication] to keep running it that way, or move this node's data directory away to start the physical engine afresh",
				ErrOtherEngine, e.pgdata, e.statePath())
		}
		// The first node is the primary of epoch 1.
		first := e.c.Nodes[0].ID
		e.st = state{Role: RoleStandby, Epoch: 1, Primary: first, Safeness: e.c.Repl.Safeness}
		if first == e.cfg.ID {
			e.st.Role = RolePrimary
		}
		return e.saveLocked()
	}
	if err != nil {
		return fmt.Errorf("physical: read %s: %w", e.statePath(), err)
	}
	if err := json.Unmarshal(b, &e.st); err != nil {
		return fmt.Errorf("physical: %s: %w", e.statePath(), err)
	}
	if e.st.Safeness == "" {
		e.st.Safeness = e.c.Repl.Safeness
	}
	return nil
}

// saveLocked writes the state (stMu held, or before anything runs) and
// wakes /watch readers.
func (e *Engine) saveLocked() error {
	b, _ := json.Marshal(e.st)
	tmp := e.statePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("physical: write state: %w", err)
	}
	if err := os.Rename(tmp, e.statePath()); err != nil {
		return fmt.Errorf("physical: write state: %w", err)
	}
	close(e.changed)
	e.changed = make(chan struct{})
	return nil
}

func (e *Engine) setState(f func(*state)) error {
	e.stMu.Lock()
	defer e.stMu.Unlock()
	before := e.st
	f(&e.st)
	if e.st.Role != before.Role || e.st.Epoch != before.Epoch {
		e.dropSettings() // a new role: Status reads the settings again
	}
	return e.saveLocked()
}

func (e *Engine) state() (state, <-chan struct{}) {
	e.stMu.Lock()
	defer e.stMu.Unlock()
	return e.st, e.changed
}

// Role is the node's role now.
func (e *Engine) Role() string { s, _ := e.state(); return s.Role }

// ---- files the server reads ----

// writeFiles puts the server's TLS certificate, the CA and the pgpass
// file in the engine's directory, owned by the server's OS user (0600).
func (e *Engine) writeFiles() error {
	if err := os.MkdirAll(e.dir, 0o700); err != nil {
		return fmt.Errorf("physical: %w", err)
	}
	files := map[string][]byte{"pgpass": []byte("*:*:*:" + ReplicationRole + ":" + e.password() + "\n")}
	if e.cfg.Ident != nil {
		dir := e.c.Security.CertDir
		for name, src := range map[string]string{"ca.crt": secure.CACertFile(dir), "server.crt": secure.CertFile(dir, e.cfg.ID), "server.key": secure.KeyFile(dir, e.cfg.ID)} {
			b, err := os.ReadFile(src)
			if err != nil {
				return fmt.Errorf("physical: the server's TLS files (field security.cert_dir): %w", err)
			}
			files[name] = b
		}
	}
	for name, b := range files {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return fmt.Errorf("physical: write %s: %w", p, err)
		}
		if err := os.Chmod(p, 0o600); err != nil {
			return err
		}
		if e.cred != nil {
			if err := os.Chown(p, int(e.cred.Uid), int(e.cred.Gid)); err != nil {
				return fmt.Errorf("physical: %w", err)
			}
		}
	}
	if e.cred != nil {
		return os.Chown(e.dir, int(e.cred.Uid), int(e.cred.Gid))
	}
	return nil
}

// quoteConn quotes a libpq connection-string value.
func quoteConn(v string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `'`, `\'`) + "'"
}

// conninfo reaches node target's server over TCP as the replication role:
// TLS verified with the cluster CA (verify-full: the certificate names
// the repl_listen host), SCRAM with the password from the pgpass file.
func (e *Engine) conninfo(target *config.Node, db string) string {
	return e.conninfoFor(target, db, true)
}

// connectTo opens a SQL connection to p's server as the replication role,
// the password set here: a PGPASSWORD in the node's environment would
// take precedence over the passfile, and a parse error would print a
// conninfo holding it.
func (e *Engine) connectTo(ctx context.Context, p *config.Node) (*pgconn.PgConn, error) {
	if e.external {
		return e.connectDSN(ctx, p.DSN)
	}
	cfg, err := pgconn.ParseConfig(e.goConninfo(p, "postgres"))
	if err != nil {
		return nil, err
	}
	cfg.Password = e.password()
	return pgconn.ConnectConfig(ctx, cfg)
}

// goConninfo is conninfo for the engine's own (pgx) connections, which
// read sslcert strictly and never look in a home directory.
func (e *Engine) goConninfo(target *config.Node, db string) string {
	return e.conninfoFor(target, db, false)
}

func (e *Engine) conninfoFor(target *config.Node, db string, libpq bool) string {
	host, port, _ := net.SplitHostPort(target.Repl)
	parts := []string{"host=" + quoteConn(host), "port=" + port, "user=" + ReplicationRole,
		"passfile=" + quoteConn(filepath.Join(e.dir, "pgpass")), "application_name=" + quoteConn(e.cfg.ID), "connect_timeout=5"}
	if e.cfg.Ident != nil {
		// No client certificate: files that do not exist, so libpq
		// does not look in the server's OS user's home, which the
		// postmaster's environment may point at /root.
		parts = append(parts, "sslmode=verify-full", "sslrootcert="+quoteConn(filepath.Join(e.dir, "ca.crt")))
		if libpq {
			parts = append(parts, "sslcert="+quoteConn(filepath.Join(e.dir, "no-client.crt")), "sslkey="+quoteConn(filepath.Join(e.dir, "no-client.key")))
		}
	} else {
		parts = append(parts, "sslmode=disable")
	}
	if db != "" {
		parts = append(parts, "dbname="+quoteConn(db))
	}
	return strings.Join(parts, " ")
}

// hba admits the replication role from the cluster's nodes only (their
// repl_listen hosts): WAL streams, and the postgres database for
// pg_rewind and slot management. Over TLS unless inter_node = "none".
func (e *Engine) hba() string {
	kind := "hostssl"
	if e.cfg.Ident == nil {
		kind = "host"
	}
	var b strings.Builder
	b.WriteString("# the physical engine: the replication role from the cluster's nodes\n")
	seen := map[string]bool{}
	for _, n := range e.c.Nodes {
		h, _, err := net.SplitHostPort(n.Repl)
		if err != nil {
			continue
		}
		var addrs []string
		if ip := net.ParseIP(h); ip != nil {
			addrs = []string{ip.String()}
		} else if ips, err := net.LookupIP(h); err == nil {
			for _, ip := range ips {
				addrs = append(addrs, ip.String())
			}
		}
		for _, a := range addrs {
			if seen[a] {
				continue
			}
			seen[a] = true
			mask := "/32"
			if strings.Contains(a, ":") {
				mask = "/128"
			}
			fmt.Fprintf(&b, "%s replication %s %s%s scram-sha-256\n", kind, ReplicationRole, a, mask)
			fmt.Fprintf(&b, "%s postgres %s %s%s scram-sha-256\n", kind, ReplicationRole, a, mask)
		}
	}
	switch {
	case e.direct() && e.cfg.Ident != nil:
		// router.direct: sessions from the router, wherever it runs, by
		// its cluster certificate alone (verified with the cluster CA,
		// its name mapped to the cluster's roles by routerMap).
		b.WriteString("# router.direct: the router's sessions, by its cluster certificate\n")
		fmt.Fprintf(&b, "hostssl all all 0.0.0.0/0 cert map=%s\nhostssl all all ::/0 cert map=%s\n", routerMap, routerMap)
	case e.direct():
		// inter_node = "none": no certificates; SCRAM with the router's
		// derived passwords (RouterPassword), over loopback unless the
		// file forced clear text between hosts (allow_insecure).
		b.WriteString("# router.direct without inter-node TLS: the router's sessions, by SCRAM\n")
		nets := []string{"127.0.0.0/8", "::1/128"}
		if !e.c.AllLoopback() {
			nets = []string{"0.0.0.0/0", "::/0"}
		}
		for _, n := range nets {
			fmt.Fprintf(&b, "host all all %s scram-sha-256\n", n)
		}
	}
	return b.String()
}

// routerMap is the pg_ident.conf map of router.direct.
const routerMap = "tandem_router"

// direct reports whether the router logs in to this node's server itself
// (router.direct on a managed server).
func (e *Engine) direct() bool {
	return e.c.RouterDirect() && !e.external
}

// RouterPassword is the password the router logs in with as role on the
// servers of cluster, with router.direct and no cluster certificates
// (security.inter_node = "none"): an HMAC of the admin token, which the
// router and every node hold, as the replication role's password is. The
// servers keep only its SCRAM verifier; no user knows it.
func RouterPassword(token, cluster, role string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("tandem router direct " + cluster + "\x00" + role))
	return hex.EncodeToString(m.Sum(nil))
}

// setRolePasswords gives the users' roles the router's passwords
// (router.direct in clear text: SCRAM over loopback), and none otherwise,
// so a password left from an earlier configuration admits nobody. The
// roles and their passwords reach the replicas with the WAL.
func (e *Engine) setRolePasswords(ctx context.Context, c *pgconn.PgConn) error {
	for _, r := range e.roles() {
		pw := "NULL"
		if e.direct() && e.cfg.Ident == nil {
			v, err := pgwire.SCRAMVerifier(RouterPassword(e.cfg.Token, e.c.Name, r.Name))
			if err != nil {
				return err
			}
			pw = quoteLiteral(v)
		}
		if err := execAll(ctx, c, "ALTER ROLE "+quoteIdent(r.Name)+" PASSWORD "+pw); err != nil {
			return fmt.Errorf("physical: %w", err)
		}
	}
	return nil
}

// ident maps the router's certificate to every role of the cluster's
// users (router.direct): PostgreSQL 15 has no "any role" in a map, so one
// line per role; the replication role and the server's superuser are not
// among them.
func (e *Engine) ident() string {
	if !e.direct() || e.cfg.Ident == nil {
		return ""
	}
	var b strings.Builder
	for _, r := range e.roles() {
		fmt.Fprintf(&b, "%s %s %s\n", routerMap, secure.RouterID, quoteIdentName(r.Name))
	}
	return b.String()
}

// quoteIdentName writes a role name as pg_ident.conf reads it (double
// quotes around names with anything but letters, digits and _).
func quoteIdentName(name string) string {
	for _, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		}
	}
	return name
}

// settings are the server's replication settings for role; the cluster
// file's nodes.postgres.settings override them.
func (e *Engine) settings(st state) map[string]string {
	s := map[string]string{
		"wal_level":                    "replica",
		"max_wal_senders":              strconv.Itoa(len(e.c.Nodes) + 4),
		"max_replication_slots":        strconv.Itoa(len(e.c.Nodes) + 4),
		"hot_standby":                  "on",
		"hot_standby_feedback":         "on",
		"wal_log_hints":                "on", // pg_rewind needs it
		"max_slot_wal_keep_size":       "'" + e.c.Repl.MaxSlotWALKeepSize + "'",
		"wal_receiver_status_interval": "'1s'",
		"recovery_target_timeline":     "'latest'",
	}
	// The level as the state has it (ALTER SYSTEM writes the same at set
	// and promote); the engine's own sessions commit with
	// synchronous_commit = local, so set-up never waits for a standby.
	if sc, err := SynchronousCommit(st.Safeness); err == nil {
		s["synchronous_commit"] = sc
	}
	if names, err := StandbyNames(e.c.Repl.Ack, e.standbys()); err == nil {
		s["synchronous_standby_names"] = quoteLiteral(names)
	}
	if e.cfg.Ident != nil {
		s["ssl"] = "on"
		s["ssl_cert_file"] = "'" + filepath.Join(e.dir, "server.crt") + "'"
		s["ssl_key_file"] = "'" + filepath.Join(e.dir, "server.key") + "'"
		s["ssl_min_protocol_version"] = "'TLSv1.2'"
		if e.direct() { // (Ident != nil here)
			// cert authentication of the router (hba) verifies with it
			s["ssl_ca_file"] = "'" + filepath.Join(e.dir, "ca.crt") + "'"
		}
	}
	if st.Role == RoleStandby {
		if p, ok := e.c.Node(st.Primary); ok {
			s["primary_conninfo"] = "'" + strings.ReplaceAll(e.conninfo(p, ""), "'", "''") + "'"
			s["primary_slot_name"] = "'" + slotName(e.cfg.ID) + "'"
		}
	} else {
		s["primary_conninfo"] = "''"
		s["primary_slot_name"] = "''"
	}
	for k, v := range e.node.Postgres.Settings {
		s[k] = v
	}
	return s
}

// ---- running the server ----

// startServer starts the server in the role st says (standby.signal
// present for a standby).
func (e *Engine) startServer(ctx context.Context, st state) error {
	if e.external {
		return e.startExternal(ctx, st)
	}
	signal := filepath.Join(e.pgdata, "standby.signal")
	if st.Role == RoleStandby {
		if err := e.writeOwned(signal, nil); err != nil {
			return err
		}
	} else if err := os.Remove(signal); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("physical: %w", err)
	}
	// A socket an older version left in the data directory (a crashed
	// server's) would break the next pg_rewind from this server.
	if old, _ := filepath.Glob(filepath.Join(e.pgdata, ".s.PGSQL.*")); len(old) > 0 {
		for _, f := range old {
			_ = os.Remove(f)
		}
	}
	m, err := postgres.StartManaged(ctx, postgres.ManagedConfig{
		SocketDir: e.dir,
		DataDir:   e.pgdata,
		BinDir:    e.bin,
		Port:      e.port,
		Listen:    e.host,
		HBA:       e.hba(),
		Ident:     e.ident(),
		NoInitdb:  st.Role == RoleStandby,
		Settings:  e.settings(st),
		Logger:    e.log,
	})
	if err != nil {
		return err
	}
	e.serve(m, "the managed PostgreSQL server exited")
	return nil
}

// server is what the engine asks of the PostgreSQL server it runs: a
// managed one (postgres.Managed) or an operator's (external.go).
type server interface {
	// Done is closed when the server is gone.
	Done() <-chan struct{}
	// Freeze makes the server take no write and answer nothing until
	// Thaw; Stop and StopImmediate end it (an external server: fence it
	// for good, it is not tandem's to stop).
	Freeze() error
	Thaw() error
	Stop() error
	StopImmediate() error
}

// srvRef holds the running server (an atomic.Pointer needs a type).
type srvRef struct{ server }

// serve makes s the running server; its end, unless the engine asked
// for it, fails the node.
func (e *Engine) serve(s server, gone string) {
	ref := &srvRef{s}
	e.stopping.Store(false)
	e.srv.Store(ref)
	go func() {
		<-s.Done()
		if e.stopping.Load() || e.srv.Load() != ref {
			return
		}
		if st, _ := e.state(); e.external && st.Role == RoleStandby {
			// An operator's standby restarting (or down for a while)
			// holds no lease and no commit of anyone's: the node stays
			// up and takes the server up again once it answers (Watch,
			// every 5 s). A primary's server gone takes the node down,
			// so that its lease lapses and the coordinator promotes.
			if e.srv.CompareAndSwap(ref, nil) {
				e.closeConn()
				e.log.Warn("the external standby's server does not answer: this node takes it up again when it does")
			}
			return
		}
		e.log.Error(gone, "server", e.where())
		e.failOnce.Do(func() { close(e.failed) })
	}()
}

// stopServer stops the server (fast shutdown: a primary's WAL senders
// send everything up to the shutdown checkpoint to connected standbys
// first).
func (e *Engine) stopServer() {
	m := e.srv.Load()
	if m == nil {
		return
	}
	e.stopping.Store(true)
	_ = m.Stop() // kills a frozen server
	e.closeConn()
	e.srv.Store(nil)
	e.frozen.Store(false)
}

// fenceServer stops the server at once (immediate shutdown), for a
// primary that lost its lease: a fast shutdown would end the sessions at
// once too, but its postmaster then waits for the WAL senders to ship the
// shutdown checkpoint to standbys that, cut off, never answer (until
// wal_sender_timeout), holding opMu all that time. The data directory is
// crash-consistent: pg_rewind or the next start recovers it.
func (e *Engine) fenceServer() {
	m := e.srv.Load()
	if m == nil {
		return
	}
	e.stopping.Store(true)
	_ = m.StopImmediate() // kills a frozen server
	e.closeConn()
	e.srv.Store(nil)
	e.frozen.Store(false)
}

// writeOwned writes a file owned by the server's OS user.
func (e *Engine) writeOwned(p string, b []byte) error {
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return fmt.Errorf("physical: write %s: %w", p, err)
	}
	if e.cred != nil {
		if err := os.Chown(p, int(e.cred.Uid), int(e.cred.Gid)); err != nil {
			return fmt.Errorf("physical: %w", err)
		}
	}
	return nil
}

// tool runs a PostgreSQL program as the server's OS user.
func (e *Engine) tool(ctx context.Context, name string, args ...string) error {
	p := filepath.Join(e.bin, name)
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C"}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, lastLines(string(out), 6))
	}
	e.log.Debug("ran "+name, "output", lastLines(string(out), 3))
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Start brings the node's server up in its role: a primary as it stands
// (initdb'ed on first start), a standby from a base backup of the
// primary when it has no data yet, rewound first when it was a primary.
// A primary whose peers report a newer primary steps down first.
func (e *Engine) Start(ctx context.Context) error {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	if err := os.MkdirAll(e.dir, 0o700); err != nil {
		return fmt.Errorf("physical: %w", err)
	}
	if err := e.loadState(); err != nil {
		return err
	}
	if !e.external {
		if err := e.writeFiles(); err != nil {
			return err
		}
	}
	st, _ := e.state()
	if st.Role == RolePrimary {
		if newer, epoch := e.newerPrimary(ctx, st.Epoch); newer != "" {
			e.log.Warn("another node is the primary of a newer epoch: this node follows it", "primary", newer, "epoch", epoch)
			if err := e.setState(func(s *state) { s.Role, s.Primary, s.Epoch, s.Rewind = RoleStandby, newer, epoch, true }); err != nil {
				return err
			}
			st, _ = e.state()
		}
	}
	if st.Role == RolePrimary {
		if err := e.startServer(ctx, st); err != nil {
			return err
		}
		return e.setUpPrimary(ctx)
	}
	err := e.startStandby(ctx)
	if e.external && errors.Is(err, ErrRejoin) {
		// The node runs fenced and takes the server up once its
		// operator made it a standby (Watch).
		e.log.Error("the external server cannot follow yet", "err", err)
		return nil
	}
	return err
}

// newerPrimary asks the other nodes' admin addresses whether one is the
// primary of an epoch after epoch.
func (e *Engine) newerPrimary(ctx context.Context, epoch uint64) (string, uint64) {
	best, bestEpoch := "", epoch
	for i := range e.c.Nodes {
		n := &e.c.Nodes[i]
		if n.ID == e.cfg.ID || n.Metrics == "" {
			continue
		}
		cl := http.Client{Timeout: 2 * time.Second}
		if e.cfg.Ident != nil && e.c.AdminTLS(n.Metrics) {
			cl.Transport = &http.Transport{TLSClientConfig: e.cfg.Ident.ClientTLS(n.ID)}
		}
		// The probe's answer has the role and epoch (Probe).
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.c.AdminURL(n.Metrics, "/status")+"?probe=1", nil)
		req.Header.Set("Authorization", "Bearer "+e.cfg.Token)
		resp, err := cl.Do(req)
		if err != nil {
			continue
		}
		var s struct {
			Role string `json:"role"`
			Repl *struct {
				Epoch uint64 `json:"epoch"`
			} `json:"replication"`
		}
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err == nil && s.Role == RolePrimary && s.Repl != nil && s.Repl.Epoch > bestEpoch {
			best, bestEpoch = n.ID, s.Repl.Epoch
		}
	}
	return best, bestEpoch
}

// exec runs statements on one connection, stopping at the first error.
func execAll(ctx context.Context, c *pgconn.PgConn, stmts ...string) error {
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s).ReadAll(); err != nil {
			return err
		}
	}
	return nil
}

// query runs sql and returns its rows as text.
func query(ctx context.Context, c *pgconn.PgConn, sql string, args ...string) ([][]string, error) {
	params := make([][]byte, len(args))
	for i, a := range args {
		params[i] = []byte(a)
	}
	res := c.ExecParams(ctx, sql, params, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, res.Err
	}
	rows := make([][]string, len(res.Rows))
	for i, r := range res.Rows {
		rows[i] = make([]string, len(r))
		for j, v := range r {
			rows[i][j] = string(v)
		}
	}
	return rows, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// setUpPrimary makes the replication role (its SCRAM verifier, computed
// here, so the password never reaches the server's log), lets it run
// pg_rewind's functions, creates the replicas' slots, the database and
// the users' roles, then applies the safeness level. Its own session
// commits with synchronous_commit = local: nothing waits for a standby
// that may not exist yet.
func (e *Engine) setUpPrimary(ctx context.Context) error {
	c, err := e.connect(ctx)
	if err != nil {
		return fmt.Errorf("physical: connect to the primary's server: %w", err)
	}
	defer c.Close(context.Background())
	if e.external {
		// The operator's server: its roles and databases are the
		// operator's; tandem keeps the slots and the safeness level.
		if err := execAll(ctx, c, "SET synchronous_commit = local"); err != nil {
			return fmt.Errorf("physical: %w", err)
		}
		if err := e.ensureSlots(ctx, c); err != nil {
			return err
		}
		st, _ := e.state()
		since, err := e.applySafeness(ctx, c, st.Safeness, false)
		if err != nil {
			return err
		}
		return e.awaitArmed(ctx, since)
	}
	verifier, err := pgwire.SCRAMVerifier(e.password())
	if err != nil {
		return err
	}
	rows, err := query(ctx, c, "SELECT 1 FROM pg_roles WHERE rolname = $1", ReplicationRole)
	if err != nil {
		return fmt.Errorf("physical: %w", err)
	}
	verb := "CREATE"
	if len(rows) > 0 {
		verb = "ALTER"
	}
	stmts := []string{
		"SET synchronous_commit = local",
		verb + " ROLE " + ReplicationRole + " WITH REPLICATION LOGIN NOSUPERUSER PASSWORD " + quoteLiteral(verifier),
		// pg_rewind's source connection (PostgreSQL's documented grants).
		"GRANT EXECUTE ON function pg_catalog.pg_ls_dir(text, boolean, boolean) TO " + ReplicationRole,
		"GRANT EXECUTE ON function pg_catalog.pg_stat_file(text, boolean) TO " + ReplicationRole,
		"GRANT EXECUTE ON function pg_catalog.pg_read_binary_file(text) TO " + ReplicationRole,
		"GRANT EXECUTE ON function pg_catalog.pg_read_binary_file(text, bigint, bigint, boolean) TO " + ReplicationRole,
	}
	// A node about to rewind from a just-promoted primary may ask it for
	// the checkpoint that writes its timeline (sourceCheckpointed).
	if rows, err := query(ctx, c, "SELECT 1 FROM pg_roles WHERE rolname = 'pg_checkpoint'"); err == nil && len(rows) > 0 {
		stmts = append(stmts, "GRANT pg_checkpoint TO "+ReplicationRole)
	}
	if err := execAll(ctx, c, stmts...); err != nil {
		return fmt.Errorf("physical: the replication role: %w", err)
	}
	if err := e.ensureSlots(ctx, c); err != nil {
		return err
	}
	// Each user gets a role and a database of its name (as on a
	// standalone managed server); the database tandem's DSNs name
	// belongs to the first user, who may create tables in it.
	if err := postgres.EnsureRolesConn(ctx, c, e.roles()); err != nil {
		return err
	}
	if err := e.setRolePasswords(ctx, c); err != nil {
		return err
	}
	rows, err = query(ctx, c, "SELECT 1 FROM pg_database WHERE datname = $1", config.DefaultDatabase)
	if err != nil {
		return fmt.Errorf("physical: %w", err)
	}
	if len(rows) == 0 {
		owner, _ := e.c.InternalUser()
		if err := execAll(ctx, c, "CREATE DATABASE "+quoteIdent(config.DefaultDatabase)+" OWNER "+quoteIdent(owner)); err != nil {
			return fmt.Errorf("physical: create database %s: %w", config.DefaultDatabase, err)
		}
	}
	st, _ := e.state()
	since, err := e.applySafeness(ctx, c, st.Safeness, false)
	if err != nil {
		return err
	}
	return e.awaitArmed(ctx, since)
}

// roles are the cluster file's users as roles of the server.
func (e *Engine) roles() []postgres.Role {
	if len(e.c.Users) == 0 {
		name, _ := e.c.InternalUser()
		return []postgres.Role{{Name: name}}
	}
	var rs []postgres.Role
	for _, u := range e.c.Users {
		rs = append(rs, postgres.Role{Name: u.Name, Superuser: u.Superuser})
	}
	return rs
}

// ensureSlots gives every other node a physical slot on this primary
// (reserving WAL from now on), and drops a slot in this node's own name
// (left from when it was a replica's primary's copy).
func (e *Engine) ensureSlots(ctx context.Context, c *pgconn.PgConn) error {
	for _, n := range e.c.Nodes {
		slot := slotName(n.ID)
		if n.ID == e.cfg.ID {
			if _, err := query(ctx, c, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot); err != nil {
				return fmt.Errorf("physical: drop slot %s: %w", slot, err)
			}
			continue
		}
		// The node itself may make its slot at the same moment (a
		// standby repointed here at a promotion): that is as good.
		if _, err := query(ctx, c, "SELECT pg_create_physical_replication_slot($1, true) WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)", slot); err != nil && !isDuplicate(err) {
			return fmt.Errorf("physical: create slot %s: %w", slot, err)
		}
	}
	return nil
}

// standbys are the other nodes' ids (their application_name).
func (e *Engine) standbys() []string {
	var ids []string
	for _, n := range e.c.Nodes {
		if n.ID != e.cfg.ID {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// applySafeness sets synchronous_commit and synchronous_standby_names
// with ALTER SYSTEM and reloads the configuration. When the reload gives
// synchronous_standby_names a new non-empty value (or any non-empty value
// with arm: a restore after a degrade, whose earlier attempt may have
// reloaded the names and failed before they were armed), it returns the
// server's time before the reload: until awaitArmed(since) returns,
// commits may not wait for the standbys yet (see awaitArmed). "" when
// nothing is to be waited for.
func (e *Engine) applySafeness(ctx context.Context, c *pgconn.PgConn, safeness string, arm bool) (since string, err error) {
	sc, err := SynchronousCommit(safeness)
	if err != nil {
		return "", err
	}
	names, err := StandbyNames(e.c.Repl.Ack, e.standbys())
	if err != nil {
		return "", err
	}
	rows, err := query(ctx, c, "SELECT current_setting('synchronous_standby_names'), clock_timestamp()::text")
	if err != nil {
		e.dropSettings()
		return "", fmt.Errorf("physical: apply safeness %s: %w", safeness, err)
	}
	if err := execAll(ctx, c,
		"ALTER SYSTEM SET synchronous_commit = "+quoteLiteral(sc),
		"ALTER SYSTEM SET synchronous_standby_names = "+quoteLiteral(names),
		"SELECT pg_reload_conf()"); err != nil {
		e.dropSettings()
		return "", fmt.Errorf("physical: apply safeness %s: %w", safeness, err)
	}
	// Status shows what was just set: this session may run its next query
	// before it has handled the reload's signal and read the old values.
	e.cacheSettings([2]string{sc, names})
	e.log.Info("safeness applied", "safeness", safeness, "synchronous_commit", sc, "synchronous_standby_names", names)
	if names != "" && (arm || rows[0][0] != names) {
		since = rows[0][1]
	}
	return since, nil
}

// awaitArmed returns once PostgreSQL's commits wait for the standbys a
// reload (at or after since, the server's clock) named in
// synchronous_standby_names. A backend decides at commit whether to wait
// by a flag in shared memory (WalSndCtl->sync_standbys_defined) that only
// the checkpointer sets, when it handles the reload's signal: in the
// middle of a checkpoint that can be a second later, and meanwhile
// commits are acknowledged without the standby although the walsenders
// (and so pg_stat_replication) already call it synchronous. e2e
// TestPhysicalPair saw a 2-safe-visible write missing on a rejoined
// standby that way. So: a new session (the postmaster forks it only
// after its reload handler, which signals the checkpointer, has
// returned) that shows the reload, then a CHECKPOINT, which the
// checkpointer starts only after it handled the pending signal.
// Runs on a connection of its own: a checkpoint can take seconds, and
// the status connection renews the lease.
func (e *Engine) awaitArmed(ctx context.Context, since string) error {
	if since == "" {
		return nil
	}
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for {
		c, err := e.connect(ctx)
		if err != nil {
			return fmt.Errorf("physical: arm synchronous replication: %w", err)
		}
		rows, err := query(ctx, c, "SELECT (pg_conf_load_time() >= $1::timestamptz)::text", since)
		if err == nil && rows[0][0] == "true" {
			err = execAll(ctx, c, "CHECKPOINT")
			c.Close(context.Background())
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "42501" {
				// An external server's role without pg_checkpoint: the
				// checkpointer handles a signal within a checkpoint's
				// write delay (100 ms) unless it is behind schedule.
				e.log.Warn("CHECKPOINT refused (grant pg_checkpoint to tandem's role): waiting 1 s for the checkpointer to read synchronous_standby_names instead", "err", err)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Second):
				}
				return nil
			}
			if err != nil {
				return fmt.Errorf("physical: arm synchronous replication: %w", err)
			}
			e.log.Debug("synchronous replication armed", "took", time.Since(start).Round(time.Millisecond))
			return nil
		}
		c.Close(context.Background())
		if err != nil {
			return fmt.Errorf("physical: arm synchronous replication: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("physical: arm synchronous replication: the server has not reloaded its configuration %v after pg_reload_conf()", time.Since(start).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// startStandby starts this node as a hot standby of its primary: a base
// backup first when it has no data, pg_rewind first when the data was a
// primary's (a base backup when rewinding fails), its slot made sure of.
func (e *Engine) startStandby(ctx context.Context) error {
	if e.external {
		return e.startStandbyExternal(ctx)
	}
	st, _ := e.state()
	p, slot, err := e.primaryAndSlot(ctx, st)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(filepath.Join(e.pgdata, "PG_VERSION"))
	switch {
	case errors.Is(statErr, os.ErrNotExist):
		if err := e.baseBackupRetry(ctx, p); err != nil {
			return err
		}
	case slot == "lost":
		// Down past max_slot_wal_keep_size: the WAL it needs is gone.
		e.log.Warn("this node's slot on the primary was lost (max_slot_wal_keep_size): re-seeding with a base backup", "primary", p.ID)
		if err := e.baseBackupRetry(ctx, p); err != nil {
			return err
		}
	case st.Rewind:
		if err := e.rewind(ctx, p); err != nil {
			e.log.Warn("pg_rewind failed: re-seeding with a base backup", "err", err)
			if err := e.baseBackupRetry(ctx, p); err != nil {
				return err
			}
		}
	}
	if st.Rewind {
		if err := e.setState(func(s *state) { s.Rewind = false }); err != nil {
			return err
		}
		st.Rewind = false
	}
	if err := e.startServer(ctx, st); err != nil {
		return err
	}
	// Slots this data directory held as a primary (or copied from one)
	// would keep WAL on the standby for nobody; the next promote makes
	// the ones it needs.
	err = e.withConn(ctx, func(c *pgconn.PgConn) error {
		_, err := query(ctx, c, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'tandem\_%' AND NOT active`)
		return err
	})
	if err != nil {
		e.log.Warn("could not drop stale replication slots on this standby", "err", err)
	}
	// The standbys this node waits for once promoted, set now (a standby
	// ignores them): at the promote its checkpointer has long read them,
	// so commits wait at once and the promote needs no checkpoint for it
	// (awaitArmed).
	if names, nerr := StandbyNames(e.c.Repl.Ack, e.standbys()); nerr == nil && names != "" {
		err = e.withConn(ctx, func(c *pgconn.PgConn) error {
			return execAll(ctx, c, "ALTER SYSTEM SET synchronous_standby_names = "+quoteLiteral(names), "SELECT pg_reload_conf()")
		})
		if err != nil {
			e.log.Warn("could not set synchronous_standby_names on this standby for its promotion", "err", err)
		}
	}
	return nil
}

// primaryAndSlot is the node a standby follows (st.Primary), once its
// server answers, and this node's slot's wal_status there (made if
// missing).
func (e *Engine) primaryAndSlot(ctx context.Context, st state) (*config.Node, string, error) {
	p, ok := e.c.Node(st.Primary)
	if !ok {
		return nil, "", fmt.Errorf("physical: this node follows %q, which the cluster file does not list", st.Primary)
	}
	if err := e.waitPrimary(ctx, p); err != nil {
		return nil, "", err
	}
	slot, err := e.slotOnPrimary(ctx, p, true)
	if err != nil {
		return nil, "", err
	}
	return p, slot, nil
}

// waitPrimary waits until the primary's server accepts the replication
// role (it may be starting too).
func (e *Engine) waitPrimary(ctx context.Context, p *config.Node) error {
	var last error
	for i := 0; ; i++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := e.connectTo(cctx, p)
		cancel()
		if err == nil {
			c.Close(context.Background())
			return nil
		}
		last = err
		if i%20 == 0 {
			e.log.Info("waiting for the primary's server", "primary", p.ID, "addr", p.Repl, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("physical: the primary %s (%s) never answered: %w", p.ID, p.Repl, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// slotOnPrimary returns this node's slot's wal_status on the primary
// ("" when missing); with create it makes a missing slot.
func (e *Engine) slotOnPrimary(ctx context.Context, p *config.Node, create bool) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := e.connectTo(cctx, p)
	if err != nil {
		return "", fmt.Errorf("physical: connect to the primary %s: %w", p.ID, err)
	}
	defer c.Close(context.Background())
	slot := slotName(e.cfg.ID)
	rows, err := query(cctx, c, "SELECT coalesce(wal_status, '') FROM pg_replication_slots WHERE slot_name = $1", slot)
	if err != nil {
		return "", fmt.Errorf("physical: slot %s on %s: %w", slot, p.ID, err)
	}
	if len(rows) > 0 || !create {
		if len(rows) == 0 {
			return "", nil
		}
		return rows[0][0], nil
	}
	if _, err := query(cctx, c, "SELECT pg_create_physical_replication_slot($1, true)", slot); err != nil && !isDuplicate(err) {
		return "", fmt.Errorf("physical: create slot %s on %s: %w", slot, p.ID, err)
	}
	return "reserved", nil
}

// isDuplicate reports PostgreSQL's duplicate_object (42710): a slot made
// by the other side of a race (a promoted primary making its standbys'
// slots while a standby makes its own).
func isDuplicate(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42710"
}

// dropOwnSlot drops this node's slot on the primary (before a re-seed of
// a lost one).
func (e *Engine) dropOwnSlot(ctx context.Context, p *config.Node) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := e.connectTo(cctx, p)
	if err != nil {
		return fmt.Errorf("physical: connect to the primary %s: %w", p.ID, err)
	}
	defer c.Close(context.Background())
	_, err = query(cctx, c, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", slotName(e.cfg.ID))
	return err
}

// baseBackup replaces the data directory with a base backup of p's
// server, taken as the server's OS user through this node's slot.
func (e *Engine) baseBackup(ctx context.Context, p *config.Node) error {
	e.log.Info("seeding with pg_basebackup", "primary", p.ID, "addr", p.Repl, "slot", slotName(e.cfg.ID))
	if err := os.RemoveAll(e.pgdata); err != nil {
		return fmt.Errorf("physical: clear %s: %w", e.pgdata, err)
	}
	if err := os.MkdirAll(e.pgdata, 0o700); err != nil {
		return fmt.Errorf("physical: %w", err)
	}
	if err := postgres.PrepareForUser(e.pgdata, filepath.Join(filepath.Dir(e.pgdata), "postgres.log"), e.cred); err != nil {
		return err
	}
	status, err := e.slotOnPrimary(ctx, p, true)
	if err != nil {
		return err
	}
	if status == "lost" {
		if err := e.dropOwnSlot(ctx, p); err != nil {
			return fmt.Errorf("physical: drop the lost slot: %w", err)
		}
		if _, err := e.slotOnPrimary(ctx, p, true); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := e.tool(ctx, "pg_basebackup", "-D", e.pgdata, "-d", e.conninfo(p, ""), "-X", "stream", "-S", slotName(e.cfg.ID), "-c", "fast", "--no-sync"); err != nil {
		return fmt.Errorf("physical: base backup from %s: %w", p.ID, err)
	}
	e.log.Info("base backup done", "primary", p.ID, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// baseBackupAttempts bounds baseBackupRetry.
const baseBackupAttempts = 4

// baseBackupRetry is baseBackup, tried again (after the primary answers
// again) when it fails: a base backup that the primary's server cut off
// (its lease lapsed for a Raft election on a loaded machine and it fenced
// itself, then came back) made a starting replica exit (e2e
// TestPhysicalAutomaticFailover and TestPhysicalSingleMaster at start-up,
// load 12-16).
func (e *Engine) baseBackupRetry(ctx context.Context, p *config.Node) error {
	var err error
	for i := 1; i <= baseBackupAttempts; i++ {
		if err = e.baseBackup(ctx, p); err == nil || ctx.Err() != nil {
			return err
		}
		if i == baseBackupAttempts {
			break
		}
		e.log.Warn("the base backup failed; trying again once the primary answers", "primary", p.ID, "attempt", i, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i) * time.Second):
		}
		if werr := e.waitPrimary(ctx, p); werr != nil {
			return fmt.Errorf("%w (and then: %v)", err, werr)
		}
	}
	return err
}

// rewind runs pg_rewind on the (cleanly stopped, or crashed: pg_rewind
// recovers it first) data directory against p's server.
func (e *Engine) rewind(ctx context.Context, p *config.Node) error {
	if err := e.sourceCheckpointed(ctx, p, 2*time.Minute); err != nil {
		return err
	}
	// A postmaster killed with its node (Pdeathsig) may still be an
	// unreaped zombie named by postmaster.pid: pg_rewind's single-user
	// crash recovery would take it for a running server and fail (the
	// node then fell back to a base backup).
	if err := postgres.ClearStaleLock(ctx, e.pgdata, e.log); err != nil {
		return fmt.Errorf("physical: before pg_rewind: %w", err)
	}
	e.log.Info("pg_rewind to the new primary's timeline", "primary", p.ID)
	return e.tool(ctx, "pg_rewind", "--target-pgdata", e.pgdata, "--source-server", e.conninfo(p, "postgres"))
}

// sourceCheckpointed waits until p's pg_control names the timeline p's
// server writes on. pg_rewind decides from the source's pg_control
// whether the timelines diverged; a promoted server writes its new
// timeline there only at its first checkpoint, which its engine forces
// right after pg_promote, off the failover's path (checkpointAfterPromote).
// Until then pg_rewind would see the old timeline and say "no rewind
// required", and this node, its WAL past the fork, could not follow. If
// the checkpoint has not happened after a moment (the new primary's
// engine died before it, or it is slow), this node asks for one itself:
// tandem_repl is a member of pg_checkpoint (PostgreSQL 15). A source in
// recovery is not a promoted primary: nothing to wait for.
func (e *Engine) sourceCheckpointed(ctx context.Context, p *config.Node, within time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var c *pgconn.PgConn
	defer func() {
		if c != nil {
			c.Close(context.Background())
		}
	}()
	start, asked, logged := time.Now(), false, false
	var last error
	for {
		if c == nil || c.IsClosed() {
			var err error
			if c, err = e.connectTo(cctx, p); err != nil {
				c, last = nil, err
			}
		}
		if c != nil {
			rows, err := query(cctx, c, `SELECT (SELECT timeline_id FROM pg_control_checkpoint())::text, pg_is_in_recovery()::text,
				CASE WHEN pg_is_in_recovery() THEN '' ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END`)
			last = err
			if err == nil && len(rows) == 1 {
				if rows[0][1] == "true" {
					return nil
				}
				ckpt, err1 := strconv.ParseUint(rows[0][0], 10, 32)
				cur, err2 := strconv.ParseUint(rows[0][2], 16, 32)
				if err1 == nil && err2 == nil && ckpt == cur {
					if logged {
						e.log.Info("the new primary's checkpoint is done: its pg_control names its timeline", "primary", p.ID, "timeline", cur, "waited", time.Since(start).Round(time.Millisecond))
					}
					return nil
				}
				last = fmt.Errorf("its pg_control names timeline %s, it writes on timeline %s", rows[0][0], rows[0][2])
				if !logged {
					e.log.Info("waiting for the new primary's checkpoint before pg_rewind (its pg_control still names the old timeline)", "primary", p.ID, "checkpoint_timeline", ckpt, "timeline", cur)
					logged = true
				}
				if !asked && time.Since(start) > time.Second {
					asked = true
					if err := execAll(cctx, c, "CHECKPOINT"); err != nil {
						e.log.Warn("asking the new primary for a checkpoint failed; waiting for its own", "primary", p.ID, "err", err)
					}
					continue
				}
			}
		}
		select {
		case <-cctx.Done():
			return fmt.Errorf("physical: %w: %s did not checkpoint its new timeline within %v: %v", ErrSourceNotCheckpointed, p.ID, within, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops the server.
func (e *Engine) Close() {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	e.stopServer()
}

// ErrOtherEngine: a node's data directory was made by the other
// replication engine.
var ErrOtherEngine = errors.New("the node's data was made by another replication engine")

// StatePath is where the physical engine keeps a node's state (role,
// epoch), under the node's data directory: its presence says the node's
// PostgreSQL data directory is this engine's.
func StatePath(nodeDataDir string) string {
	return filepath.Join(nodeDataDir, "physical", "state.json")
}

// ---- the status connection ----

// errFrozen: the server is frozen (fenced for a lost lease): nothing is
// asked of it until it is thawed or killed.
var errFrozen = errors.New("the server is frozen: this primary lost its lease and takes no request until the coordinator renews it")

func (e *Engine) withConn(ctx context.Context, f func(*pgconn.PgConn) error) error {
	if e.frozen.Load() {
		return errFrozen
	}
	e.connMu.Lock()
	defer e.connMu.Unlock()
	if e.srv.Load() == nil {
		return errors.New("the server is stopped")
	}
	if e.frozen.Load() {
		return errFrozen
	}
	if e.conn == nil || e.conn.IsClosed() {
		c, err := e.connect(ctx)
		if err != nil {
			return err
		}
		if err := execAll(ctx, c, "SET synchronous_commit = local", "SET application_name = "+quoteLiteral(engineApp)); err != nil {
			c.Close(context.Background())
			return err
		}
		e.conn = c
	}
	err := f(e.conn)
	if err != nil && e.conn.IsClosed() {
		e.conn = nil
	}
	return err
}

func (e *Engine) closeConn() {
	e.connMu.Lock()
	defer e.connMu.Unlock()
	if e.conn != nil {
		e.conn.Close(context.Background())
		e.conn = nil
	}
}
