// Package config owns the cluster configuration file (TOML): parsing,
// defaults and validation. Errors name the file, the field and what is wrong.
//
// It must not start anything: it only describes a cluster.
package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/secure"
)

// ErrInvalid marks every validation failure (errors.Is(err, ErrInvalid)).
var ErrInvalid = errors.New("invalid configuration")

// Designs tandem knows.
var Designs = []string{"standalone", "hot-standby", "single-master", "multi-master", "raidb-0", "raidb-1", "raidb-2"}

// Implemented designs (the others are refused with a clear message).
var Implemented = map[string]bool{"standalone": true, "hot-standby": true, "single-master": true, "multi-master": true}

// MaxSingleMasterNodes bounds a single-master cluster (a primary and up to
// 15 replicas).
const MaxSingleMasterNodes = 16

// Replicated reports whether the design runs on the replication core (a
// primary whose writesets the other nodes apply in GSN order): hot-standby
// and single-master. Everything that holds for a hot-standby standby holds
// for a single-master replica.
func (c *Cluster) Replicated() bool {
	return c.Design == "hot-standby" || c.Design == "single-master"
}

// MultiMaster reports the multi-master design: every node takes writes,
// the coordinator's certifier orders them (package multimaster).
func (c *Cluster) MultiMaster() bool { return c.Design == "multi-master" }

// MaxMultiMasterNodes bounds a multi-master cluster.
const MaxMultiMasterNodes = 16

// MultiMasterConf configures the multi-master design ([multi_master]).
type MultiMasterConf struct {
	// WindowWritesets and WindowBytes bound the certifier's window of
	// recent committed writesets (defaults 10,000 and 16 MiB): a
	// transaction whose snapshot is older than the window is aborted
	// (40001), and a node further behind is re-seeded.
	WindowWritesets int   `toml:"window_writesets"`
	WindowBytes     int64 `toml:"window_bytes"`
	// ApplyConflictWait is how long certified writesets wait for the
	// node's write lock held by a local transaction before that
	// transaction is aborted with 40001 (PostgreSQL's
	// max_standby_streaming_delay, for the same reason); default 1s. A
	// local transaction that wrote a row a waiting writeset wrote is
	// aborted at once (early certification).
	ApplyConflictWait Duration `toml:"apply_conflict_wait"`
	// CertifyTimeout bounds a COMMIT's wait for the certifier (no
	// leader); past it the client gets 08007 (outcome unknown). Default 30s.
	CertifyTimeout Duration `toml:"certify_timeout"`
	// ApplyBatchDelay makes a node's apply loop wait this long after the
	// first certified writeset of other nodes arrives before it applies
	// what has arrived, in one back-end transaction (at most 512). A
	// batch costs one commit (and its WAL flush) whatever it holds, so
	// an apply-bound node spends less per writeset; the price is
	// freshness: a session whose next transaction needs another node's
	// commit, and a local commit certified after it, wait up to this
	// much longer (PostgreSQL's commit_delay trades the same way).
	// Default 0: apply at once. At most 1s.
	ApplyBatchDelay Duration `toml:"apply_batch_delay"`
	// SequenceStride interleaves the nodes' sequences: node i (its place
	// in [[nodes]], from 0) draws from every sequence that counts up by 1
	// only values that are i+1 modulo the stride, so two nodes never draw
	// the same value (MySQL's auto_increment_increment and _offset, as
	// Galera sets them). On PostgreSQL back ends such sequences count by
	// the stride; on SQLite the draw skips to the node's next value and
	// conflicts with no other node's draw.
	// Default 0: the number of nodes. 1: no interleaving (concurrent draws
	// on two nodes may collide: one transaction aborts). Every node must
	// use the same value; a larger one leaves room to add nodes.
	SequenceStride int `toml:"sequence_stride"`
}

// SequenceStride is multi-master's sequence stride (MultiMasterConf's
// SequenceStride, defaulted) and the residue node id draws (its place in
// [[nodes]] plus one, modulo the stride).
func (c *Cluster) SequenceStride(id string) (stride, offset int) {
	stride = c.MM.SequenceStride
	if stride == 0 {
		stride = len(c.Nodes)
	}
	if stride <= 1 {
		return 1, 0
	}
	for i, n := range c.Nodes {
		if n.ID == id {
			return stride, (i + 1) % stride
		}
	}
	return stride, 0
}

// Cluster is one cluster file.
type Cluster struct {
	Name     string      `toml:"cluster"`
	Design   string      `toml:"design"`
	Auth     string      `toml:"auth"` // scram-sha-256 (default) | md5 | trust
	RunDir   string      `toml:"run_dir"`
	Router   *Router     `toml:"router"`
	Users    []User      `toml:"users"`
	Nodes    []Node      `toml:"nodes"`
	Limits   Limits      `toml:"limits"`
	LogLevel string      `toml:"log_level"`
	TLS      TLS         `toml:"tls"`
	Repl     Replication `toml:"replication"`
	Security Security    `toml:"security"`
	// Witness is the coordinator's vote-only member (no data) that lets a
	// pair keep a Raft quorum when one node dies.
	Witness *Witness `toml:"witness"`
	// Lab, when present, runs the cluster as emulated hosts on this
	// machine (CPU quotas per process; package lab).
	Lab *Lab `toml:"lab"`
	// MultiMaster configures design = "multi-master".
	MM MultiMasterConf `toml:"multi_master"`

	// File is the path this cluster was read from (not a TOML field).
	File string `toml:"-"`
	// ClearTextPasswords names the users whose password the file holds in
	// clear text (warned about at start; not a TOML field).
	ClearTextPasswords []string `toml:"-"`
}

// Router is the optional standalone router process.
type Router struct {
	Listen     string `toml:"listen"`
	ReadListen string `toml:"read_listen"` // sessions here go to a standby
	// UnixSocketDir: the router also listens on Unix sockets in this
	// directory, .s.PGSQL.<port> for listen's port (and read_listen's),
	// as PostgreSQL names its own: psql -h DIR -p PORT.
	UnixSocketDir  string   `toml:"unix_socket_dir"`
	HealthInterval Duration `toml:"health_interval"`
	Metrics        string   `toml:"metrics"`
	// Policy balances transactions over the nodes that may take them:
	// least-connected (default), round-robin, single, random or source
	// (router/DESIGN.md, "Balancing policies").
	Policy string `toml:"policy"`
	// MaxLag takes a node out of read rotation while it is further behind
	// the primary than this: a number of GSNs (max_lag = 1000) or a time
	// (max_lag = "2s": how long its oldest unapplied commit has waited).
	// Unset: 10000 GSNs. It is also the bound of read_consistency =
	// "bounded": a read sees the primary's state of at most that long (or
	// that many GSNs) ago. On the physical engine a number is bytes of
	// WAL (unset: 16 MiB).
	MaxLag Lag `toml:"max_lag"`
	// Split routes each transaction on the listen port: read-only ones to
	// a replica, the rest to the primary (router/txroute.go). The
	// single-master design always does; a hot-standby cluster opts in
	// (its standby then serves reads).
	Split bool `toml:"split"`
	// ReadConsistency of routed reads: session (default: read your writes,
	// monotonic reads) | strong | bounded | eventual; a session changes it
	// with SET tandem.read_consistency.
	ReadConsistency string `toml:"read_consistency"`
	// ReadWait: how long a replica waits to catch up with what a read
	// needs before the read runs on the primary instead (default 1s).
	ReadWait Duration `toml:"read_wait"`
	// ReadOnlyFunctions: user functions that change nothing, so that an
	// autocommit SELECT calling them may run on a replica.
	ReadOnlyFunctions []string `toml:"read_only_functions"`
	// Direct (engine = "physical", managed servers): the router logs in
	// to each node's PostgreSQL server itself, over TLS with its cluster
	// certificate, which the servers map to the cluster's roles (with
	// security.inter_node = "none": in clear text, by SCRAM with
	// passwords derived from the admin token): one hop
	// between the client and the server, as HAProxy's, instead of the
	// router's and the node's. The nodes keep relaying the clients that
	// come to them directly. Unset: on wherever it can be (RouterDirect).
	Direct *bool `toml:"direct"`
}

// RouterDirect reports whether the router logs in to the nodes' servers
// itself (router.direct): as the file says, and by default wherever it
// can, the physical engine on managed servers.
func (c *Cluster) RouterDirect() bool {
	if c.Router == nil {
		return false
	}
	if c.Router.Direct != nil {
		return *c.Router.Direct
	}
	if !c.Physical() {
		return false
	}
	for _, n := range c.Nodes {
		if n.DSN != "" {
			return false
		}
	}
	return true
}

// DefaultMaxLagGSNs is router.max_lag when unset.
const DefaultMaxLagGSNs = 10000

// DefaultMaxLagBytes is router.max_lag when unset on the physical engine,
// whose positions are WAL positions: a count in max_lag is bytes of WAL
// there (16 MiB, one WAL segment).
const DefaultMaxLagBytes = 16 << 20

// Lag is router.max_lag: a number of GSNs or a duration.
type Lag struct {
	GSNs uint64
	Time time.Duration
	bad  error
}

// ErrBadLag is a max_lag value that is neither.
var ErrBadLag = errors.New(`not a lag (write a number of GSNs, e.g. 1000, or a time, e.g. "2s")`)

// UnmarshalTOML implements toml.Unmarshaler; Validate reports a bad value.
func (l *Lag) UnmarshalTOML(v any) error {
	*l = Lag{}
	switch x := v.(type) {
	case int64:
		if x <= 0 {
			l.bad = fmt.Errorf("%d: %w", x, ErrBadLag)
			return nil
		}
		l.GSNs = uint64(x)
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil || d <= 0 {
			l.bad = fmt.Errorf("%q: %w", x, ErrBadLag)
			return nil
		}
		l.Time = d
	default:
		l.bad = fmt.Errorf("%v: %w", v, ErrBadLag)
	}
	return nil
}

// String is the lag as written in the cluster file.
func (l Lag) String() string {
	if l.Time > 0 {
		return l.Time.String()
	}
	return strconv.FormatUint(l.GSNs, 10) + " GSNs"
}

// Policies are the router's balancing policies (router.policy).
var Policies = []string{"least-connected", "round-robin", "single", "random", "source"}

// ReadConsistencies are router.read_consistency's values.
var ReadConsistencies = []string{"session", "strong", "bounded", "eventual"}

// DefaultMaxWritesetBytes is replication.max_writeset_bytes when unset: a
// migration that rewrites a few hundred thousand rows in one transaction
// fits; MaxWritesetLimit is the replication log's record limit.
const (
	DefaultMaxWritesetBytes = 256 << 20
	MaxWritesetLimit        = 1 << 30
)

// Replication engines (replication.engine).
const (
	// EnginePhysical: PostgreSQL's own streaming replication of its WAL,
	// run by tandem (package physical); managed PostgreSQL back ends only.
	EnginePhysical = "physical"
	// EngineWriteset: tandem's writeset log (package replication); every
	// back end.
	EngineWriteset = "writeset"
)

// Replication configures the replicated designs (hot-standby).
type Replication struct {
	// Engine: "physical" (PostgreSQL's streaming replication; the default
	// when every node is a managed PostgreSQL) or "writeset" (tandem's
	// log; the default otherwise, and the only engine on SQLite).
	Engine string `toml:"engine"`
	// MaxSlotWALKeepSize bounds the WAL a physical replication slot keeps
	// for a replica that is down (PostgreSQL's max_slot_wal_keep_size;
	// default "1GB"); past it the replica is re-seeded by a base backup.
	MaxSlotWALKeepSize string `toml:"max_slot_wal_keep_size"`
	// ServerRole and ServerPassword: the role the physical engine logs in
	// as on external servers (nodes.dsn) to run them: slots, safeness,
	// pg_promote, repointing, fencing (grants: docs/operations.md
	// "External servers"). Sessions log in as each dsn's own role, which
	// must be another: clients must not hold these rights. The password
	// takes env:NAME or file:PATH.
	ServerRole     string `toml:"server_role"`
	ServerPassword string `toml:"server_password"`
	// Safeness: when COMMIT returns relative to the standbys.
	Safeness string `toml:"safeness"` // 1-safe | 2-safe-received | 2-safe-visible | 2-safe-durable
	// Ack: how many standbys must answer (one | majority | all).
	Ack string `toml:"ack"`
	// Durability of the primary's own log, and of the standbys' logs.
	Durability        string   `toml:"durability"`         // strict | relaxed | adaptive
	StandbyDurability string   `toml:"standby_durability"` // strict | relaxed
	FlushInterval     Duration `toml:"flush_interval"`
	// AckTimeout bounds a 2-safe commit's wait for a standby; then
	// OnStandbyLoss decides: block (keep waiting) or degrade (go on 1-safe).
	AckTimeout    Duration `toml:"ack_timeout"`
	OnStandbyLoss string   `toml:"on_standby_loss"`
	// OnApplyFailure: what a standby does with a writeset it cannot apply:
	// "stop" (default: stop following, report it, wait for the operator)
	// or "reseed" (replace its database with a snapshot of the primary's,
	// discarding whatever made the writeset fail).
	OnApplyFailure string `toml:"on_apply_failure"`
	// RetainRecords is the log window kept for catching up (then re-seed).
	RetainRecords uint64 `toml:"retain_records"`
	// SegmentBytes is the size of a log segment (the unit of trimming).
	SegmentBytes int64 `toml:"segment_bytes"`
	// MaxWritesetBytes bounds one transaction's writeset (its encoded
	// rows and DDL): a COMMIT past it is rolled back with 54000.
	MaxWritesetBytes int64 `toml:"max_writeset_bytes"`
	// Failover: "manual" (default: a person runs tandem promote) or
	// "automatic" (the coordinator promotes when the primary's lease
	// lapses; needs raft_listen on every node).
	Failover string `toml:"failover"`
	// Lease is the primary's lease; LeaseGrace what the coordinator waits
	// beyond it before it calls the lease lapsed (default lease/2).
	Lease      Duration `toml:"lease"`
	LeaseGrace Duration `toml:"lease_grace"`
}

// Witness is the coordinator's vote-only member.
type Witness struct {
	ID         string `toml:"id"`
	RaftListen string `toml:"raft_listen"`
	Metrics    string `toml:"metrics"`  // optional: /metrics and /status
	DataDir    string `toml:"data_dir"` // Raft log and snapshots (default RUN_DIR/ID)
}

// Security configures the trust between tandem's processes and the admin
// API (see docs/operations.md, "Security").
type Security struct {
	// InterNode: "mtls" (default: every channel between tandem processes
	// uses TLS with certificates of the cluster CA, each end's identity
	// checked) or "none" (plain TCP; refused unless every address is
	// loopback or allow_insecure is set).
	InterNode string `toml:"inter_node"`
	// CertDir holds ca.crt, ca.key and one certificate per node, for the
	// router and for the command line (default: RUN_DIR/certs).
	CertDir string `toml:"cert_dir"`
	// AdminToken is the admin API's bearer token: "file:PATH" (default
	// file:CERT_DIR/admin.token, created at first start), "env:NAME", or the
	// token itself (warned about).
	AdminToken string `toml:"admin_token"`
	// MetricsAuth: /metrics and /status need the token too (default false,
	// the Prometheus convention: readable, change nothing).
	MetricsAuth bool `toml:"metrics_auth"`
	// Pprof serves /debug/pprof (with the token) when true.
	Pprof bool `toml:"pprof"`
	// AdminHTTPS: the admin (metrics) addresses serve HTTPS with the
	// node's cluster certificate: "auto" (default: those not on
	// loopback), "on" (all), "off" (none; the token then travels in
	// clear text off loopback). Needs inter_node = "mtls".
	AdminHTTPS string `toml:"admin_https"`
	// AllowInsecure permits inter_node = "none" and auth = "trust" on
	// addresses that are not loopback.
	AllowInsecure bool `toml:"allow_insecure"`
}

// Safeness levels.
var SafenessLevels = []string{"1-safe", "2-safe-received", "2-safe-visible", "2-safe-durable"}

// TLS for the front door (nodes and router).
type TLS struct {
	Cert    string `toml:"cert"`
	Key     string `toml:"key"`
	Require bool   `toml:"require"`
}

// User may connect through the front door.
type User struct {
	Name     string `toml:"name"`
	Password string `toml:"password"`
	// Superuser makes the user's role on a managed PostgreSQL a superuser
	// (default: an ordinary role, which cannot run COPY ... PROGRAM or
	// read server files).
	Superuser bool `toml:"superuser"`
}

// Limits protect the front door.
type Limits struct {
	MaxMessageBytes int `toml:"max_message_bytes"`
	MaxConnections  int `toml:"max_connections"`
	// StatementTimeout is statement_timeout's default on the SQLite back
	// end (0: none); sessions change it with SET. PostgreSQL back ends take
	// theirs from nodes.postgres.settings.
	StatementTimeout Duration `toml:"statement_timeout"`
	// MaxStartupConnections bounds connections not yet authenticated (0:
	// a quarter of the open-file limit, at least 64); StartupTimeout is
	// how long one may take to authenticate (0: 10 s).
	MaxStartupConnections int      `toml:"max_startup_connections"`
	StartupTimeout        Duration `toml:"startup_timeout"`
	// IdleInTransactionSessionTimeout ends a session left idle inside a
	// transaction block (FATAL 25P03, its transaction rolls back), as
	// PostgreSQL's setting of that name. Unset: 60 s on the SQLite back
	// end, where one idle writer blocks every other, 0 (off) on
	// PostgreSQL; 0 turns it off. Sessions change it with SET.
	IdleInTransactionSessionTimeout *Timeout `toml:"idle_in_transaction_session_timeout"`
	// IdleSessionTimeout ends a session idle outside a transaction (FATAL
	// 57P05); 0 (default) turns it off.
	IdleSessionTimeout Timeout `toml:"idle_session_timeout"`
	// MessageReadTimeout bounds how long a message, once begun, may take
	// to arrive whole (0: off; default 60 s): a client that sends half a
	// message and stops is disconnected.
	MessageReadTimeout *Timeout `toml:"message_read_timeout"`
	// TCP keepalives on client sockets (PostgreSQL's tcp_keepalives_*):
	// idle time before the first probe, time between probes, probes lost
	// before the connection is dropped. 0: the system's value.
	TCPKeepalivesIdle     Seconds `toml:"tcp_keepalives_idle"`
	TCPKeepalivesInterval Seconds `toml:"tcp_keepalives_interval"`
	TCPKeepalivesCount    int     `toml:"tcp_keepalives_count"`
	// MessageMemory bounds the bytes of large messages (64 KiB and more)
	// a node holds at once across sessions (0: a quarter of the memory,
	// at most 1 GiB, at least max_message_bytes); a message past it waits
	// up to MessageMemoryWait (default 5 s; 0: not at all), then gets
	// ERROR 53200.
	MessageMemory     int64    `toml:"message_memory"`
	MessageMemoryWait *Timeout `toml:"message_memory_wait"`
}

// DefaultMessageMemoryWait is how long a message waits for room in
// limits.message_memory by default.
const DefaultMessageMemoryWait = 5 * time.Second

// MemoryWait is the wait for room in limits.message_memory.
func (l Limits) MemoryWait() time.Duration {
	if l.MessageMemoryWait != nil {
		return l.MessageMemoryWait.Duration
	}
	return DefaultMessageMemoryWait
}

// Timeout is a PostgreSQL time setting in the cluster file: an integer in
// milliseconds, or a string with a unit ("100ms", "5s", "1min", "2h", or
// Go's "1m30s"); 0 turns it off.
type Timeout struct {
	time.Duration
	bad error // a value that is not a time; Validate names the field
}

// ErrBadTimeout is a value Timeout cannot read.
var ErrBadTimeout = errors.New(`not a time (write milliseconds, or e.g. "100ms", "5s", "1min"; 0 turns it off)`)

// UnmarshalTOML implements toml.Unmarshaler. A bad value is kept and
// reported by Validate, which knows the field's name.
func (t *Timeout) UnmarshalTOML(v any) error {
	t.Duration, t.bad = 0, nil
	switch x := v.(type) {
	case int64:
		if x < 0 {
			t.bad = fmt.Errorf("%d: %w", x, ErrBadTimeout)
			return nil
		}
		t.Duration = time.Duration(x) * time.Millisecond
	case string:
		t.Duration, t.bad = ParseTimeout(x)
	default:
		t.bad = fmt.Errorf("%v: %w", v, ErrBadTimeout)
	}
	return nil
}

// Seconds is a Timeout whose bare numbers count seconds (PostgreSQL's
// tcp_keepalives_idle and _interval).
type Seconds struct{ Timeout }

// UnmarshalTOML implements toml.Unmarshaler.
func (t *Seconds) UnmarshalTOML(v any) error {
	if x, ok := v.(int64); ok && x >= 0 {
		t.Duration, t.bad = time.Duration(x)*time.Second, nil
		return nil
	}
	if x, ok := v.(string); ok {
		if n, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && n >= 0 {
			t.Duration, t.bad = time.Duration(n*float64(time.Second)), nil
			return nil
		}
	}
	return t.Timeout.UnmarshalTOML(v)
}

// MarshalText implements encoding.TextMarshaler.
func (t Timeout) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// ParseTimeout reads a time as PostgreSQL does ("250" is milliseconds;
// units us, ms, s, min, h, d) or as Go does ("1m30s").
func ParseTimeout(s string) (time.Duration, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	units := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	if num, err := strconv.ParseFloat(v[:i], 64); err == nil && num >= 0 {
		if u, ok := units[strings.TrimSpace(v[i:])]; ok {
			return time.Duration(num * float64(u)), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%q: %w", s, ErrBadTimeout)
}

// Default timeouts (see docs/operations.md, "Limits and timeouts").
const (
	DefaultIdleInTransactionSQLite = 60 * time.Second
	DefaultMessageReadTimeout      = 60 * time.Second
)

// IdleInTransaction is the idle_in_transaction_session_timeout default for
// a node with this back end.
func (l Limits) IdleInTransaction(backend string) time.Duration {
	if l.IdleInTransactionSessionTimeout != nil {
		return l.IdleInTransactionSessionTimeout.Duration
	}
	if backend == "sqlite" {
		return DefaultIdleInTransactionSQLite
	}
	return 0
}

// MessageRead is the message read deadline (0: none).
func (l Limits) MessageRead() time.Duration {
	if l.MessageReadTimeout != nil {
		return l.MessageReadTimeout.Duration
	}
	return DefaultMessageReadTimeout
}

// Node is one back end plus tandem's agent beside it.
type Node struct {
	ID      string `toml:"id"`
	Listen  string `toml:"listen"`
	Metrics string `toml:"metrics"`
	Repl    string `toml:"repl_listen"` // replication stream (replicated designs)
	Raft    string `toml:"raft_listen"` // coordinator (Raft) address
	Backend string `toml:"backend"`     // sqlite | postgres
	DataDir string `toml:"data_dir"`
	DSN     string `toml:"dsn"` // postgres: external server; empty means managed
	// UnixSocketDir: the node's front door also listens on a Unix socket
	// in this directory, .s.PGSQL.<listen's port> (psql -h DIR -p PORT):
	// clients on the node's host skip TCP.
	UnixSocketDir string `toml:"unix_socket_dir"`
	// Weight is the node's share of the transactions the router balances
	// (default 1); ReadWeight its share of read-only transactions
	// (default: Weight; 0 on the primary keeps reads off it).
	Weight     *int          `toml:"weight"`
	ReadWeight *int          `toml:"read_weight"`
	Postgres   PGOptions     `toml:"postgres"`
	SQLite     SQLiteOptions `toml:"sqlite"`
}

// BalanceWeight is the node's weight for the router (default 1).
func (n Node) BalanceWeight() int {
	if n.Weight == nil {
		return 1
	}
	return *n.Weight
}

// ReadBalanceWeight is the node's weight for read-only transactions
// (default: its weight).
func (n Node) ReadBalanceWeight() int {
	if n.ReadWeight == nil {
		return n.BalanceWeight()
	}
	return *n.ReadWeight
}

// PGOptions configure a managed PostgreSQL.
type PGOptions struct {
	BinDir   string            `toml:"bin_dir"`
	Port     int               `toml:"port"`
	Settings map[string]string `toml:"settings"`
}

// SQLiteOptions configure the embedded back end.
type SQLiteOptions struct {
	Synchronous string   `toml:"synchronous"` // OFF | NORMAL | FULL
	ReadPool    int      `toml:"read_pool"`
	BusyTimeout Duration `toml:"busy_timeout"`
}

// Duration reads "250ms", "5s" from TOML.
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (write e.g. \"500ms\" or \"5s\")", string(b))
	}
	d.Duration = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Load reads, defaults and validates a cluster file.
func Load(path string) (*Cluster, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	return Parse(path, data)
}

// Parse is Load on bytes; path is used in messages and to resolve relative paths.
func Parse(path string, data []byte) (*Cluster, error) {
	return ParseWithRunDir(path, data, "")
}

// ParseWithRunDir is Parse with run_dir overridden (when not empty).
func ParseWithRunDir(path string, data []byte, runDir string) (*Cluster, error) {
	var c Cluster
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, fmt.Errorf("%w: %s:%d: %s", ErrInvalid, path, perr.Position.Line, perr.Message)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("%w: %s: unknown field %q (check the spelling; see examples/)", ErrInvalid, path, keys[0])
	}
	c.File = path
	if runDir != "" {
		c.RunDir = runDir
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := c.resolveSecrets(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Cluster) applyDefaults() {
	if c.Design == "" {
		c.Design = "standalone"
	}
	if c.Auth == "" {
		c.Auth = "scram-sha-256"
	}
	if c.RunDir == "" && c.Name != "" {
		c.RunDir = filepath.Join(".tandem", c.Name)
	}
	if c.Limits.MaxMessageBytes == 0 {
		c.Limits.MaxMessageBytes = 64 << 20
	}
	if c.Limits.MaxConnections == 0 {
		c.Limits.MaxConnections = 500
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.Security.InterNode == "" {
		c.Security.InterNode = "mtls"
	}
	if c.Security.CertDir == "" {
		c.Security.CertDir = filepath.Join(c.RunDir, "certs")
	}
	if c.Security.AdminHTTPS == "" {
		c.Security.AdminHTTPS = "auto"
	}
	if c.Security.AdminToken == "" {
		c.Security.AdminToken = "file:" + filepath.Join(c.Security.CertDir, "admin.token")
	}
	if mm := &c.MM; true {
		if mm.ApplyConflictWait.Duration == 0 {
			mm.ApplyConflictWait.Duration = time.Second
		}
		if mm.CertifyTimeout.Duration == 0 {
			mm.CertifyTimeout.Duration = 30 * time.Second
		}
	}
	r := &c.Repl
	if r.Engine == "" {
		r.Engine = EngineWriteset
		// Physical where it can run and nothing asks for what only the
		// writeset engine offers: a hot-standby pair or a single-master
		// cluster of managed servers whose file sets no log durability
		// (relaxed and adaptive are tandem's log's; PostgreSQL's own is
		// always strict).
		if (c.Design == "hot-standby" || c.Design == "single-master") && c.allManagedPostgres() && r.Durability == "" && r.StandbyDurability == "" {
			r.Engine = EnginePhysical
		}
	}
	if r.MaxSlotWALKeepSize == "" {
		r.MaxSlotWALKeepSize = "1GB"
	}
	if r.Safeness == "" {
		r.Safeness = "2-safe-received"
	}
	if r.Ack == "" {
		r.Ack = "all"
	}
	if r.Durability == "" {
		r.Durability = "relaxed"
	}
	if r.StandbyDurability == "" {
		r.StandbyDurability = "relaxed"
	}
	if r.FlushInterval.Duration == 0 {
		r.FlushInterval.Duration = 10 * time.Millisecond
	}
	if r.AckTimeout.Duration == 0 {
		r.AckTimeout.Duration = 2 * time.Second
	}
	if r.OnStandbyLoss == "" {
		r.OnStandbyLoss = "degrade"
	}
	if r.OnApplyFailure == "" {
		r.OnApplyFailure = "stop"
	}
	if r.RetainRecords == 0 {
		r.RetainRecords = 1_000_000
	}
	if r.MaxWritesetBytes == 0 {
		r.MaxWritesetBytes = DefaultMaxWritesetBytes
	}
	if r.Failover == "" {
		r.Failover = "manual"
	}
	if r.Lease.Duration == 0 {
		r.Lease.Duration = time.Second
	}
	if r.LeaseGrace.Duration == 0 {
		r.LeaseGrace.Duration = r.Lease.Duration / 2
	}
	if w := c.Witness; w != nil && w.DataDir == "" && w.ID != "" {
		w.DataDir = filepath.Join(c.RunDir, w.ID)
	} else if w != nil && w.DataDir != "" && !filepath.IsAbs(w.DataDir) {
		w.DataDir = filepath.Join(c.RunDir, w.DataDir)
	}
	if c.Router != nil && c.Router.HealthInterval.Duration == 0 {
		c.Router.HealthInterval.Duration = 500 * time.Millisecond
	}
	if c.Router != nil {
		if c.Router.Policy == "" {
			c.Router.Policy = "least-connected"
		}
		if c.Router.MaxLag == (Lag{}) {
			c.Router.MaxLag.GSNs = DefaultMaxLagGSNs
			if c.Replicated() && c.Repl.Engine == EnginePhysical {
				// The physical engine's positions are WAL bytes.
				c.Router.MaxLag.GSNs = DefaultMaxLagBytes
			}
		}
		if c.Router.ReadConsistency == "" {
			c.Router.ReadConsistency = "session"
		}
		if c.Router.ReadWait.Duration == 0 {
			c.Router.ReadWait.Duration = time.Second
		}
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Backend == "" {
			n.Backend = "sqlite"
		}
		if n.DataDir == "" && n.ID != "" {
			n.DataDir = filepath.Join(c.RunDir, n.ID)
		} else if n.DataDir != "" && !filepath.IsAbs(n.DataDir) {
			n.DataDir = filepath.Join(c.RunDir, n.DataDir)
		}
		if n.SQLite.Synchronous == "" {
			n.SQLite.Synchronous = "NORMAL"
		}
		if n.SQLite.ReadPool == 0 {
			n.SQLite.ReadPool = 4
		}
		if n.SQLite.BusyTimeout.Duration == 0 {
			n.SQLite.BusyTimeout.Duration = 5 * time.Second
		}
	}
}

// Validate checks every field; the first problem found is returned.
func (c *Cluster) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: field %s: %s", ErrInvalid, c.File, field, fmt.Sprintf(format, args...))
	}
	if c.Name == "" {
		return bad("cluster", "missing: give the cluster a name, e.g. cluster = \"demo\"")
	}
	known := false
	for _, d := range Designs {
		known = known || d == c.Design
	}
	if !known {
		return bad("design", "%q is not a design; use one of %s", c.Design, strings.Join(Designs, ", "))
	}
	if !Implemented[c.Design] {
		return bad("design", "%q is not available in this version of tandem yet; use standalone, hot-standby, single-master or multi-master", c.Design)
	}
	switch c.Auth {
	case "scram-sha-256", "md5", "trust":
	default:
		return bad("auth", "%q is not an authentication method; use scram-sha-256, md5 or trust", c.Auth)
	}
	if c.Auth != "trust" && len(c.Users) == 0 {
		return bad("users", "no users: add [[users]] with name and password, or set auth = \"trust\"")
	}
	seenUser := map[string]bool{}
	for i, u := range c.Users {
		f := fmt.Sprintf("users[%d]", i)
		if u.Name == "" {
			return bad(f+".name", "missing")
		}
		if seenUser[u.Name] {
			return bad(f+".name", "user %q is listed twice", u.Name)
		}
		seenUser[u.Name] = true
		if u.Name == "postgres" && !u.Superuser && c.hasManagedPostgres() {
			return bad(f+".superuser", "the user \"postgres\" is the managed PostgreSQL's bootstrap superuser: set superuser = true, or name the user otherwise")
		}
		if c.Auth != "trust" && u.Password == "" {
			return bad(f+".password", "missing for user %q (auth = %s needs one)", u.Name, c.Auth)
		}
	}
	if len(c.Nodes) == 0 {
		return bad("nodes", "no nodes: add at least one [[nodes]] table")
	}
	switch c.Security.InterNode {
	case "mtls":
	case "none":
		if !c.Security.AllowInsecure && !c.AllLoopback() {
			return bad("security.inter_node", "\"none\" sends replication and admin traffic in clear text between hosts; use \"mtls\" (the default), or set security.allow_insecure = true to force it")
		}
	default:
		return bad("security.inter_node", "%q: use mtls (the default) or none", c.Security.InterNode)
	}
	switch c.Security.AdminHTTPS {
	case "auto", "off":
	case "on":
		if c.Security.InterNode != "mtls" {
			return bad("security.admin_https", "\"on\" serves the admin addresses with the cluster's certificates, which need inter_node = \"mtls\"")
		}
	default:
		return bad("security.admin_https", "%q: use auto (the default), on or off", c.Security.AdminHTTPS)
	}
	if c.Auth == "trust" && !c.Security.AllowInsecure && !c.AllLoopback() {
		return bad("auth", "\"trust\" lets anyone who reaches a non-loopback listener in without a password; use scram-sha-256, or set security.allow_insecure = true to force it")
	}
	if c.Security.InterNode == "none" && c.Router != nil && len(c.Users) > 0 && strings.HasPrefix(c.Users[0].Password, "SCRAM-SHA-256$") {
		return bad("users[0].password", "the router logs in to the nodes as the first user, and without inter-node TLS (security.inter_node = \"none\") it needs that user's password, not a verifier; use inter_node = \"mtls\" or give the password (env:NAME or file:PATH)")
	}
	for i, u := range c.Users {
		if c.Auth == "md5" && strings.HasPrefix(u.Password, "SCRAM-SHA-256$") {
			return bad(fmt.Sprintf("users[%d].password", i), "a SCRAM-SHA-256 verifier cannot check md5 logins; use auth = \"scram-sha-256\" or give the password")
		}
	}
	if c.Design == "standalone" && len(c.Nodes) != 1 {
		return bad("nodes", "design standalone takes exactly 1 node, found %d", len(c.Nodes))
	}
	if c.Design == "hot-standby" && len(c.Nodes) < 2 {
		return bad("nodes", "design hot-standby needs a primary and at least one standby, found %d node(s)", len(c.Nodes))
	}
	if c.Design == "single-master" && len(c.Nodes) == 1 && !(c.Physical() && c.Repl.Safeness == "1-safe") {
		// A primary alone behind its router: the physical engine on
		// 1-safe commits, which wait for no replica (the scale-out
		// sweep's N = 1, --alone router).
		return bad("nodes", "design single-master takes a primary and 1 to %d replicas (2 to %d nodes), found 1 node; a primary alone needs replication.engine = \"physical\" and replication.safeness = \"1-safe\"", MaxSingleMasterNodes-1, MaxSingleMasterNodes)
	}
	if c.Design == "single-master" && (len(c.Nodes) < 1 || len(c.Nodes) > MaxSingleMasterNodes) {
		return bad("nodes", "design single-master takes a primary and 1 to %d replicas (2 to %d nodes), found %d node(s)", MaxSingleMasterNodes-1, MaxSingleMasterNodes, len(c.Nodes))
	}
	if c.MultiMaster() {
		if err := c.validateMultiMaster(bad); err != nil {
			return err
		}
	}
	if c.Replicated() {
		if err := ValidateSafeness(c.Repl.Safeness); err != nil {
			return bad("replication.safeness", "%v", err)
		}
		if _, err := ParseDurability(c.Repl.Durability); err != nil {
			return bad("replication.durability", "%v", err)
		}
		if _, err := ParseDurability(c.Repl.StandbyDurability); err != nil {
			return bad("replication.standby_durability", "%v", err)
		}
		switch c.Repl.Ack {
		case "one", "majority", "all":
		default:
			return bad("replication.ack", "%q: use one, majority or all", c.Repl.Ack)
		}
		switch c.Repl.OnStandbyLoss {
		case "block", "degrade":
		default:
			return bad("replication.on_standby_loss", "%q: use block or degrade", c.Repl.OnStandbyLoss)
		}
		if c.Repl.MaxWritesetBytes < 1<<10 || c.Repl.MaxWritesetBytes > MaxWritesetLimit {
			return bad("replication.max_writeset_bytes", "%d: use 1024 to %d bytes", c.Repl.MaxWritesetBytes, int64(MaxWritesetLimit))
		}
		switch c.Repl.OnApplyFailure {
		case "stop", "reseed":
		default:
			return bad("replication.on_apply_failure", "%q: use stop or reseed", c.Repl.OnApplyFailure)
		}
		if err := c.validateEngine(bad); err != nil {
			return err
		}
		for i, n := range c.Nodes {
			if n.Repl == "" && !(c.Physical() && n.DSN != "") {
				return bad(fmt.Sprintf("nodes[%d].repl_listen", i), "missing: every node of a %s cluster needs a replication address", c.Design)
			}
			if n.Metrics == "" {
				return bad(fmt.Sprintf("nodes[%d].metrics", i), "missing: %s nodes are administered through their metrics (admin) address", c.Design)
			}
		}
	}
	addrs := map[string]string{}
	checkAddr := func(field, addr string, required bool) error {
		if addr == "" {
			if required {
				return bad(field, "missing: give host:port, e.g. \"127.0.0.1:5433\"")
			}
			return nil
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "" {
			return bad(field, "%q is not host:port", addr)
		}
		_ = host
		if other, ok := addrs[addr]; ok {
			return bad(field, "address %s is already used by %s", addr, other)
		}
		addrs[addr] = field
		return nil
	}
	sockets := map[string]string{}
	checkSocketDir := func(field, dir string, listens ...string) error {
		if dir == "" {
			return nil
		}
		for _, a := range listens {
			if a == "" {
				continue
			}
			_, ps, _ := net.SplitHostPort(a)
			port, _ := strconv.Atoi(ps)
			p := pgwire.UnixSocketPath(dir, port)
			if len(p) > pgwire.MaxUnixPath {
				return bad(field, "the socket %s would be %d bytes, over the kernel's %d: choose a shorter directory", p, len(p), pgwire.MaxUnixPath)
			}
			if other, ok := sockets[p]; ok {
				return bad(field, "socket %s is already %s's: give each front door on a host its own port or directory", p, other)
			}
			sockets[p] = field
		}
		return nil
	}
	if c.Router != nil {
		if err := checkAddr("router.listen", c.Router.Listen, true); err != nil {
			return err
		}
		if err := checkAddr("router.metrics", c.Router.Metrics, false); err != nil {
			return err
		}
		if err := checkAddr("router.read_listen", c.Router.ReadListen, false); err != nil {
			return err
		}
		if err := checkSocketDir("router.unix_socket_dir", c.Router.UnixSocketDir, c.Router.Listen, c.Router.ReadListen); err != nil {
			return err
		}
		known := false
		for _, p := range Policies {
			known = known || p == c.Router.Policy
		}
		if !known {
			return bad("router.policy", "%q is not a balancing policy; use one of %s", c.Router.Policy, strings.Join(Policies, ", "))
		}
		if err := c.Router.MaxLag.bad; err != nil {
			return bad("router.max_lag", "%v", err)
		}
		if !slices.Contains(ReadConsistencies, c.Router.ReadConsistency) {
			return bad("router.read_consistency", "%q is not one of %s", c.Router.ReadConsistency, strings.Join(ReadConsistencies, ", "))
		}
		if c.Router.Split && c.Design != "hot-standby" && c.Design != "single-master" {
			return bad("router.split", "routes reads to replicas, which design %q has none of; use design = \"single-master\" (or \"hot-standby\")", c.Design)
		}
		if c.Router.ReadWait.Duration < 0 {
			return bad("router.read_wait", "must not be negative")
		}
		if c.Router.Direct != nil && *c.Router.Direct {
			if !c.Physical() {
				return bad("router.direct", "the router logs in to each node's PostgreSQL server itself, which only engine = \"physical\" on managed PostgreSQL servers lets it do; remove router.direct")
			}
			for i, n := range c.Nodes {
				if n.DSN != "" {
					return bad("router.direct", "nodes[%d] (%s) names a dsn: an operator's server admits whom its operator's pg_hba.conf says, not tandem's router; remove router.direct", i, n.ID)
				}
			}
		}
		for i, f := range c.Router.ReadOnlyFunctions {
			if strings.TrimSpace(f) == "" || strings.ContainsAny(f, " ();") {
				return bad(fmt.Sprintf("router.read_only_functions[%d]", i), "%q is not a function name (write name or schema.name)", f)
			}
		}
	}
	seen := map[string]bool{}
	for i, n := range c.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		if n.ID == "" {
			return bad(f+".id", "missing: give each node an id, e.g. id = \"n1\"")
		}
		if seen[n.ID] {
			return bad(f+".id", "node id %q is used twice", n.ID)
		}
		seen[n.ID] = true
		if n.Weight != nil && (*n.Weight < 1 || *n.Weight > 1000) {
			return bad(f+".weight", "%d: use 1 to 1000 (a node's share of the transactions the router balances; drain it with `tandem drain` instead of 0)", *n.Weight)
		}
		if n.ReadWeight != nil && (*n.ReadWeight < 0 || *n.ReadWeight > 1000) {
			return bad(f+".read_weight", "%d: use 0 (no reads) to 1000", *n.ReadWeight)
		}
		if err := checkAddr(f+".listen", n.Listen, true); err != nil {
			return err
		}
		if err := checkAddr(f+".metrics", n.Metrics, false); err != nil {
			return err
		}
		if err := checkSocketDir(f+".unix_socket_dir", n.UnixSocketDir, n.Listen); err != nil {
			return err
		}
		if err := checkAddr(f+".repl_listen", n.Repl, false); err != nil {
			return err
		}
		if err := checkAddr(f+".raft_listen", n.Raft, false); err != nil {
			return err
		}
		switch n.Backend {
		case "sqlite":
			if n.DSN != "" {
				return bad(f+".dsn", "a sqlite node has no dsn; remove it or set backend = \"postgres\"")
			}
			switch strings.ToUpper(n.SQLite.Synchronous) {
			case "OFF", "NORMAL", "FULL", "EXTRA":
			default:
				return bad(f+".sqlite.synchronous", "%q: use OFF, NORMAL or FULL", n.SQLite.Synchronous)
			}
			if n.SQLite.ReadPool < 1 || n.SQLite.ReadPool > 256 {
				return bad(f+".sqlite.read_pool", "%d: use 1..256", n.SQLite.ReadPool)
			}
		case "postgres":
			if n.Postgres.Port < 0 || n.Postgres.Port > 65535 {
				return bad(f+".postgres.port", "%d is not a TCP port", n.Postgres.Port)
			}
		default:
			return bad(f+".backend", "%q is not a back end; use sqlite or postgres", n.Backend)
		}
	}
	if err := c.validateCoordinator(bad, checkAddr); err != nil {
		return err
	}
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		return bad("tls", "set both cert and key (PEM files), or neither")
	}
	if c.TLS.Require && c.TLS.Cert == "" {
		return bad("tls.require", "requires tls.cert and tls.key")
	}
	if c.TLS.Cert != "" {
		if _, err := tls.LoadX509KeyPair(c.TLS.Cert, c.TLS.Key); err != nil {
			return bad("tls.cert", "cannot load the certificate and key: %v", err)
		}
	}
	if c.Limits.MaxMessageBytes < 1024 {
		return bad("limits.max_message_bytes", "%d is too small (at least 1024)", c.Limits.MaxMessageBytes)
	}
	if c.Limits.MaxStartupConnections < 0 {
		return bad("limits.max_startup_connections", "%d is negative (0 sizes it to the open-file limit)", c.Limits.MaxStartupConnections)
	}
	if c.Limits.StartupTimeout.Duration < 0 {
		return bad("limits.startup_timeout", "%v is negative (0 is the default, 10s)", c.Limits.StartupTimeout.Duration)
	}
	if c.Limits.StatementTimeout.Duration < 0 {
		return bad("limits.statement_timeout", "%v is negative (0 turns it off)", c.Limits.StatementTimeout.Duration)
	}
	l := &c.Limits
	for _, t := range []struct {
		field string
		t     *Timeout
	}{
		{"limits.idle_in_transaction_session_timeout", l.IdleInTransactionSessionTimeout},
		{"limits.idle_session_timeout", &l.IdleSessionTimeout},
		{"limits.message_read_timeout", l.MessageReadTimeout},
		{"limits.tcp_keepalives_idle", &l.TCPKeepalivesIdle.Timeout},
		{"limits.tcp_keepalives_interval", &l.TCPKeepalivesInterval.Timeout},
	} {
		if t.t != nil && t.t.bad != nil {
			return bad(t.field, "%v", t.t.bad)
		}
	}
	if m := c.Limits.MessageMemory; m != 0 && m < int64(c.Limits.MaxMessageBytes) {
		return bad("limits.message_memory", "%d is below limits.max_message_bytes (%d): a message of the maximum size could never run (0 sizes it to the memory)", m, c.Limits.MaxMessageBytes)
	}
	if k := c.Limits.TCPKeepalivesCount; k < 0 || k > 127 {
		return bad("limits.tcp_keepalives_count", "%d: use 0 (the system's) to 127", k)
	}
	for _, t := range []struct {
		field string
		d     time.Duration
		min   time.Duration
	}{
		{"limits.tcp_keepalives_idle", c.Limits.TCPKeepalivesIdle.Duration, time.Second},
		{"limits.tcp_keepalives_interval", c.Limits.TCPKeepalivesInterval.Duration, time.Second},
		{"limits.message_read_timeout", c.Limits.MessageRead(), 100 * time.Millisecond},
	} {
		if t.d != 0 && t.d < t.min {
			return bad(t.field, "%v is below %v (0 turns it off or takes the system's value)", t.d, t.min)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return bad("log_level", "%q: use debug, info, warn or error", c.LogLevel)
	}
	if c.Lab != nil {
		if err := c.Lab.check(bad); err != nil {
			return err
		}
	}
	return nil
}

// validateEngine checks replication.engine against the back ends: the
// physical engine runs PostgreSQL's streaming replication between managed
// servers, whose data directories and configuration tandem owns.
func (c *Cluster) validateEngine(bad func(field, format string, args ...any) error) error {
	switch c.Repl.Engine {
	case EngineWriteset:
		return nil
	case EnginePhysical:
		if !c.Replicated() {
			return bad("replication.engine", "\"physical\" runs the hot-standby and single-master designs, not design %q; use engine = \"writeset\"", c.Design)
		}
	default:
		return bad("replication.engine", "%q: use physical (PostgreSQL's streaming replication) or writeset (tandem's log)", c.Repl.Engine)
	}
	external := 0
	for _, n := range c.Nodes {
		if n.DSN != "" {
			external++
		}
	}
	for i, n := range c.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		if n.Backend != "postgres" {
			return bad("replication.engine", "\"physical\" ships PostgreSQL's WAL, and %s (%s) has backend = %q; use engine = \"writeset\" for SQLite", f, n.ID, n.Backend)
		}
		if external > 0 && n.DSN == "" {
			// One streaming cluster is either the operator's or
			// tandem's: a managed replica cannot base-backup an
			// operator's primary, nor an operator's standby follow a
			// managed one.
			return bad(f+".dsn", "missing: with engine = \"physical\" every node's server is external (dsn) or every one is managed; %d of %d nodes name a dsn", external, len(c.Nodes))
		}
		if n.DSN != "" {
			if n.Postgres.Port != 0 {
				return bad(f+".postgres.port", "%d: an external server's port is its dsn's; remove postgres.port", n.Postgres.Port)
			}
			if len(n.Postgres.Settings) > 0 {
				return bad(f+".postgres.settings", "an external server's configuration is its operator's (tandem sets only the replication settings docs/operations.md \"External servers\" lists); remove postgres.settings")
			}
			if c.Repl.ServerRole == "" {
				return bad("replication.server_role", "missing: with engine = \"physical\" on external servers (nodes.dsn) the engine logs in to them as this role to run slots, safeness, pg_promote and fencing (its grants: docs/operations.md \"External servers\"), and %s.dsn's role serves the sessions", f)
			}
			if pc, err := pgconn.ParseConfig(n.DSN); err != nil {
				return bad(f+".dsn", "%v", err)
			} else if pc.User == c.Repl.ServerRole {
				return bad(f+".dsn", "its role %q is replication.server_role: every client session would hold the engine's rights (ALTER SYSTEM, pg_promote, reading server files); give the dsn an ordinary role", pc.User)
			}
			continue
		}
		if n.Postgres.Port != 0 {
			return bad(f+".postgres.port", "%d: with engine = \"physical\" the server listens on repl_listen's port (the other nodes stream its WAL from there, the node relays sessions to it); remove postgres.port, or use engine = \"writeset\"", n.Postgres.Port)
		}
		if n.Repl != "" && unspecifiedHost(n.Repl) {
			return bad(f+".repl_listen", "%q: with engine = \"physical\" PostgreSQL listens here for the other nodes' WAL streams, which dial it; give a host they can reach, not a wildcard", n.Repl)
		}
	}
	if _, err := parseSize(c.Repl.MaxSlotWALKeepSize); err != nil {
		return bad("replication.max_slot_wal_keep_size", "%v", err)
	}
	return nil
}

// validateMultiMaster checks a multi-master cluster: 2 to 16 nodes on
// SQLite or PostgreSQL (the writeset engine), each with a raft_listen address (the certifier runs on the
// coordinator's Raft group) and an admin address.
func (c *Cluster) validateMultiMaster(bad func(field, format string, args ...any) error) error {
	if len(c.Nodes) < 2 || len(c.Nodes) > MaxMultiMasterNodes {
		return bad("nodes", "design multi-master takes 2 to %d nodes, found %d", MaxMultiMasterNodes, len(c.Nodes))
	}
	if field, err := c.CheckMultiMasterBackends(); err != nil {
		return bad(field, "%v", err)
	}
	for i, n := range c.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		if n.Raft == "" {
			return bad(f+".raft_listen", "missing: multi-master certifies every update transaction on the coordinator's Raft group, so every node needs a raft_listen address")
		}
		if n.Metrics == "" {
			return bad(f+".metrics", "missing: multi-master nodes re-seed from each other and are administered through their metrics (admin) address")
		}
	}
	if len(c.Nodes) == 2 && c.Witness == nil {
		return bad("witness", "missing: two multi-master nodes keep the certifier's quorum only with a third vote; add [witness] with id and raft_listen")
	}
	mm := c.MM
	if mm.WindowWritesets < 0 {
		return bad("multi_master.window_writesets", "%d: must be positive (0: the default, 10000)", mm.WindowWritesets)
	}
	if mm.WindowBytes < 0 {
		return bad("multi_master.window_bytes", "%d: must be positive (0: the default, 16 MiB)", mm.WindowBytes)
	}
	if mm.ApplyConflictWait.Duration < 0 || mm.CertifyTimeout.Duration < 0 {
		return bad("multi_master", "apply_conflict_wait and certify_timeout must be positive")
	}
	if d := mm.ApplyBatchDelay.Duration; d < 0 || d > time.Second {
		return bad("multi_master.apply_batch_delay", "%s: must be between 0 (apply at once, the default) and 1s", d)
	}
	if k := mm.SequenceStride; k < 0 || k > 1000 || (k > 1 && k < len(c.Nodes)) {
		return bad("multi_master.sequence_stride", "%d: must be at least the number of nodes (%d) so that no two nodes draw the same sequence values, at most 1000 (0: the number of nodes, the default; 1: no interleaving)", k, len(c.Nodes))
	}
	return nil
}

// CheckMultiMasterBackends names the first node whose back end the
// multi-master design cannot run on in this version, and why ("" and nil:
// all can). It runs on SQLite, and on PostgreSQL with the writeset engine.
func (c *Cluster) CheckMultiMasterBackends() (field string, err error) {
	for i, n := range c.Nodes {
		switch n.Backend {
		case "sqlite", "":
		case "postgres":
			if c.Repl.Engine == EnginePhysical {
				return "replication.engine", fmt.Errorf("\"physical\" cannot run multi-master: PostgreSQL's streaming replication has one writable server, and multi-master certifies and applies writesets on every node; use engine = \"writeset\" (the default)")
			}
		default:
			return fmt.Sprintf("nodes[%d].backend", i), fmt.Errorf("%q: multi-master runs on sqlite or postgres back ends", n.Backend)
		}
	}
	return "", nil
}

// parseSize checks a PostgreSQL memory size ("512MB", "1GB", "-1").
func parseSize(s string) (int64, error) {
	v := strings.TrimSpace(s)
	if v == "-1" {
		return -1, nil
	}
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	mult := map[string]int64{"kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}[strings.TrimSpace(v[i:])]
	if err != nil || mult == 0 || n <= 0 {
		return 0, fmt.Errorf("%q is not a size: write e.g. \"512MB\" or \"4GB\" (kB, MB, GB, TB)", s)
	}
	return n * mult, nil
}

// validateCoordinator checks the coordinator's fields: raft_listen on
// every node or none, the witness, failover and the lease.
func (c *Cluster) validateCoordinator(bad func(field, format string, args ...any) error, checkAddr func(field, addr string, required bool) error) error {
	r := c.Repl
	switch r.Failover {
	case "manual", "automatic":
	default:
		return bad("replication.failover", "%q: use manual (the default) or automatic", r.Failover)
	}
	if r.Lease.Duration < 50*time.Millisecond {
		return bad("replication.lease", "%v is too short (at least 50ms)", r.Lease.Duration)
	}
	if r.LeaseGrace.Duration <= 0 {
		return bad("replication.lease_grace", "%v: must be positive (it covers clock-rate differences and Raft latency)", r.LeaseGrace.Duration)
	}
	withRaft := 0
	for _, n := range c.Nodes {
		if n.Raft != "" {
			withRaft++
		}
	}
	if !c.Coordinated() {
		if r.Failover == "automatic" {
			return bad("replication.failover", "\"automatic\" needs the coordinator: give every node a raft_listen address (and a [witness] for a pair)")
		}
		return nil
	}
	if !c.Replicated() && !c.MultiMaster() {
		return bad("nodes[0].raft_listen", "the coordinator runs in replicated designs (hot-standby, single-master, multi-master); remove raft_listen and [witness] for %s", c.Design)
	}
	for i, n := range c.Nodes {
		if n.Raft == "" {
			return bad(fmt.Sprintf("nodes[%d].raft_listen", i), "missing: when one node has a raft_listen address, every node needs one (they are the coordinator's voters)")
		}
		if unspecifiedHost(n.Raft) {
			return bad(fmt.Sprintf("nodes[%d].raft_listen", i), "%q: the other voters dial this address too; give a host they can reach, not a wildcard", n.Raft)
		}
	}
	if c.Security.InterNode != "mtls" {
		return bad("security.inter_node", "the coordinator's Raft traffic needs mutual TLS (\"mtls\", the default): a stranger must not vote")
	}
	if w := c.Witness; w != nil {
		if w.ID == "" {
			return bad("witness.id", "missing: give the witness an id, e.g. id = \"w\"")
		}
		if _, clash := c.Node(w.ID); clash || w.ID == secure.RouterID || w.ID == secure.AdminID {
			return bad("witness.id", "%q is already the id of a node, the router or the command line", w.ID)
		}
		if err := checkAddr("witness.raft_listen", w.RaftListen, true); err != nil {
			return err
		}
		if unspecifiedHost(w.RaftListen) {
			return bad("witness.raft_listen", "%q: the voters dial this address too; give a host they can reach, not a wildcard", w.RaftListen)
		}
		if err := checkAddr("witness.metrics", w.Metrics, false); err != nil {
			return err
		}
	}
	if len(c.Nodes) == 2 && c.Witness == nil {
		return bad("witness", "missing: a pair keeps a coordinator quorum only with a third vote; add [witness] with id and raft_listen")
	}
	return nil
}

// unspecifiedHost reports a wildcard listen address (0.0.0.0, ::, or no
// host), which nobody can dial.
func unspecifiedHost(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(h)
	return h == "" || (ip != nil && ip.IsUnspecified())
}

// Coordinated reports whether the cluster runs the coordinator (a node has
// a raft_listen address, or there is a witness).
func (c *Cluster) Coordinated() bool {
	if c.Witness != nil {
		return true
	}
	for _, n := range c.Nodes {
		if n.Raft != "" {
			return true
		}
	}
	return false
}

// Voter is one member of the coordinator's Raft group.
type Voter struct {
	ID, RaftListen string
	Witness        bool
}

// Voters are the coordinator's voters, an odd number: the first 3 or 5
// nodes, or with a witness the first 2 or 4 and the witness. The other
// nodes are the coordinator's non-voters (NonVoters).
func (c *Cluster) Voters() []Voter {
	k := min(len(c.Nodes), 5)
	if c.Witness != nil {
		k = min(k, 4)
		k -= k % 2
	} else if k%2 == 0 {
		k--
	}
	var vs []Voter
	for _, n := range c.Nodes[:k] {
		vs = append(vs, Voter{ID: n.ID, RaftListen: n.Raft})
	}
	if w := c.Witness; w != nil {
		vs = append(vs, Voter{ID: w.ID, RaftListen: w.RaftListen, Witness: true})
	}
	return vs
}

// NonVoters are the nodes past the voters (single-master with more than 3
// or 5 nodes): they hold a copy of the coordinator's log, as Raft
// non-voters, and follow its map, but do not vote.
func (c *Cluster) NonVoters() []Voter {
	if !c.Coordinated() {
		return nil
	}
	voter := map[string]bool{}
	for _, v := range c.Voters() {
		voter[v.ID] = true
	}
	var vs []Voter
	for _, n := range c.Nodes {
		if !voter[n.ID] {
			vs = append(vs, Voter{ID: n.ID, RaftListen: n.Raft})
		}
	}
	return vs
}

// Node returns the node with the given id.
func (c *Cluster) Node(id string) (*Node, bool) {
	for i := range c.Nodes {
		if c.Nodes[i].ID == id {
			return &c.Nodes[i], true
		}
	}
	return nil, false
}

// AllLoopback reports whether every listener of the cluster is on a
// loopback address (a cluster on one machine).
func (c *Cluster) AllLoopback() bool {
	addrs := []string{}
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Listen, n.Metrics, n.Repl, n.Raft)
	}
	if c.Witness != nil {
		addrs = append(addrs, c.Witness.RaftListen, c.Witness.Metrics)
	}
	if c.Router != nil {
		addrs = append(addrs, c.Router.Listen, c.Router.ReadListen, c.Router.Metrics)
	}
	for _, a := range addrs {
		if a != "" && !IsLoopback(a) && !c.inLabNetwork(a) {
			return false
		}
	}
	return true
}

// inLabNetwork reports whether addr is on the network the lab makes on
// this machine (lab.netns): private to the machine, like loopback.
func (c *Cluster) inLabNetwork(addr string) bool {
	if c.Lab == nil || !c.Lab.NetnsOn() {
		return false
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && labNetwork.Contains(ip)
}

// AdminTLS reports whether an admin (metrics) address serves HTTPS: with
// inter-node TLS on, every admin address that is not loopback does, so
// the admin token never crosses a network in clear text.
func (c *Cluster) AdminTLS(addr string) bool {
	if c.Security.InterNode != "mtls" {
		return false
	}
	switch c.Security.AdminHTTPS {
	case "on":
		return true
	case "off":
		return false
	}
	return !IsLoopback(addr)
}

// AdminURL is the URL of path on an admin address.
func (c *Cluster) AdminURL(addr, path string) string {
	if c.AdminTLS(addr) {
		return "https://" + addr + path
	}
	return "http://" + addr + path
}

// IsLoopback reports whether a listen address (host:port) is on loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// resolveSecrets replaces env:/file: references in users[].password by the
// secret they name, and remembers which passwords sat in clear text.
func (c *Cluster) resolveSecrets() error {
	for i := range c.Users {
		u := &c.Users[i]
		if u.Password == "" {
			continue
		}
		v, literal, err := secure.Resolve(u.Password)
		if err != nil {
			return fmt.Errorf("%w: %s: field users[%d].password: %v", ErrInvalid, c.File, i, err)
		}
		u.Password = v
		if literal && !strings.HasPrefix(v, "SCRAM-SHA-256$") {
			c.ClearTextPasswords = append(c.ClearTextPasswords, u.Name)
		}
	}
	if c.Repl.ServerPassword != "" {
		v, literal, err := secure.Resolve(c.Repl.ServerPassword)
		if err != nil {
			return fmt.Errorf("%w: %s: field replication.server_password: %v", ErrInvalid, c.File, err)
		}
		c.Repl.ServerPassword = v
		if literal {
			c.ClearTextPasswords = append(c.ClearTextPasswords, "replication.server_role "+c.Repl.ServerRole)
		}
	}
	return nil
}

// Password of a user ("" and false when unknown).
func (c *Cluster) Password(user string) (string, bool) {
	for _, u := range c.Users {
		if u.Name == user {
			return u.Password, true
		}
	}
	return "", false
}

// InternalUser is the user tandem's own hops (router -> node) log in as.
// DefaultDatabase is the database tandem's DSNs name, and the one a
// hot-standby pair on managed PostgreSQL replicates.
const DefaultDatabase = "tandem"

func (c *Cluster) InternalUser() (string, string) {
	if len(c.Users) > 0 {
		return c.Users[0].Name, c.Users[0].Password
	}
	return "tandem", ""
}

// allManagedPostgres reports whether every node runs a managed PostgreSQL.
func (c *Cluster) allManagedPostgres() bool {
	for _, n := range c.Nodes {
		if n.Backend != "postgres" || n.DSN != "" {
			return false
		}
	}
	return len(c.Nodes) > 0
}

// Physical reports whether the cluster replicates with the physical
// engine (a hot-standby pair, or a single-master primary and replicas, of
// managed PostgreSQL servers).
func (c *Cluster) Physical() bool {
	return c.Replicated() && c.Repl.Engine == EnginePhysical
}

// hasManagedPostgres reports whether a node runs a managed PostgreSQL.
func (c *Cluster) hasManagedPostgres() bool {
	for _, n := range c.Nodes {
		if n.Backend == "postgres" && n.DSN == "" {
			return true
		}
	}
	return false
}

// ServerTLS returns the front door's TLS configuration (nil: no TLS).
func (c *Cluster) ServerTLS() (*tls.Config, error) {
	if c.TLS.Cert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLS.Cert, c.TLS.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: field tls.cert: %v", ErrInvalid, c.File, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// ValidateSafeness checks a safeness level name.
func ValidateSafeness(s string) error {
	for _, l := range SafenessLevels {
		if s == l {
			return nil
		}
	}
	return fmt.Errorf("%q is not a safeness level; use %s", s, strings.Join(SafenessLevels, ", "))
}

// ParseDurability checks a durability name (strict, relaxed, adaptive).
func ParseDurability(s string) (string, error) {
	switch s {
	case "strict", "relaxed", "adaptive":
		return s, nil
	}
	return "", fmt.Errorf("%q is not a durability level; use strict, relaxed or adaptive", s)
}

// PrivateDir creates directory d if needed and makes it owner-only: no
// read or write for group and others, whatever the umask. Traverse bits
// already there stay: a managed PostgreSQL server runs as its own OS user
// and reaches its 0700 data directory through the run directory (the
// server's start makes its ancestors traversable, backend/postgres); taking
// that away at another node's start cut a running server off its own
// files (it panicked at its next checkpoint) and made pg_rewind fail.
func PrivateDir(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", d, err)
	}
	st, err := os.Stat(d)
	if err != nil {
		return err
	}
	if err := os.Chmod(d, 0o700|st.Mode().Perm()&0o011); err != nil {
		return fmt.Errorf("make %s owner-only: %w", d, err)
	}
	return nil
}
