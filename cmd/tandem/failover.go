package main

// The parts `tandem demo` and `tandem bench failover` share: a hot-standby
// pair with a witness started on this machine, the primary SIGKILLed, and
// audit writers that record every acknowledged commit and check afterwards
// that each one is on the new primary.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
)

// errNoFailover means no node became the primary of a newer epoch in time.
var errNoFailover = errors.New("no new primary")

// pairSpec is a hot-standby pair to start: n1 (the first primary) and n2,
// the router in front and, with automatic failover, a witness.
type pairSpec struct {
	Dir     string // cluster file and run directory go here
	Name    string // cluster name
	Backend string // sqlite | postgres
	// Engine is replication.engine: writeset ("" too) or physical
	// (PostgreSQL's streaming replication; postgres only).
	Engine   string
	Safeness string // "" = the default level
	Failover string // automatic | manual
	Lease    time.Duration
	Grace    time.Duration
	// AckTimeout bounds a 2-safe commit's wait for the standby (0: the
	// default); after a failover the new primary's standby is the dead
	// node, so its first 2-safe commits wait this long before it degrades.
	AckTimeout time.Duration
}

// errPairEngine: a pair's engine is unknown or cannot run its back end.
var errPairEngine = errors.New("pair engine")

// engine is the spec's replication.engine.
func (s pairSpec) engine() string {
	if s.Engine == "" {
		return config.EngineWriteset
	}
	return s.Engine
}

// pairFile renders the spec's cluster file on free loopback ports.
func pairFile(s pairSpec) (string, error) {
	engine := s.engine()
	switch {
	case engine != config.EngineWriteset && engine != config.EnginePhysical:
		return "", fmt.Errorf("%w %q: use %s or %s", errPairEngine, engine, config.EngineWriteset, config.EnginePhysical)
	case engine == config.EnginePhysical && s.Backend != "postgres":
		return "", fmt.Errorf("%w: %s replication ships PostgreSQL's WAL and needs backend postgres, not %q", errPairEngine, engine, s.Backend)
	}
	// Every address at once, each held until all are chosen.
	var ports cluster.Ports
	defer ports.Release()
	addr := ports.Addr
	var b strings.Builder
	auto := s.Failover == "automatic"
	fmt.Fprintf(&b, "cluster = %q\ndesign = \"hot-standby\"\nrun_dir = %q\n\n[replication]\nengine = %q\n", s.Name, filepath.Join(s.Dir, "run"), engine)
	if engine == config.EnginePhysical {
		// PostgreSQL flushes the primary's WAL at every commit: the
		// physical engine runs strict durability only.
		b.WriteString("durability = \"strict\"\n")
	}
	if s.Safeness != "" {
		fmt.Fprintf(&b, "safeness = %q\n", s.Safeness)
	}
	fmt.Fprintf(&b, "failover = %q\n", s.Failover)
	if s.Lease > 0 {
		fmt.Fprintf(&b, "lease = %q\n", s.Lease.String())
	}
	if s.Grace > 0 {
		fmt.Fprintf(&b, "lease_grace = %q\n", s.Grace.String())
	}
	if s.AckTimeout > 0 {
		fmt.Fprintf(&b, "ack_timeout = %q\n", s.AckTimeout.String())
	}
	router, err := addr()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "\n[router]\nlisten = %q\n\n[[users]]\nname = \"tandem\"\npassword = \"tandem\"\n\n", router)
	if auto {
		w, err := addr()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "[witness]\nid = \"witness\"\nraft_listen = %q\n\n", w)
	}
	for _, id := range []string{"n1", "n2"} {
		var a [4]string
		for i := range a {
			if a[i], err = addr(); err != nil {
				return "", err
			}
		}
		fmt.Fprintf(&b, "[[nodes]]\nid = %q\nlisten = %q\nmetrics = %q\nrepl_listen = %q\n", id, a[0], a[1], a[2])
		if auto {
			fmt.Fprintf(&b, "raft_listen = %q\n", a[3])
		}
		fmt.Fprintf(&b, "backend = %q\n\n", s.Backend)
	}
	return b.String(), nil
}

// pair is a running hot-standby pair.
type pair struct {
	spec pairSpec
	cfg  *config.Cluster
	lc   *cluster.Local
}

// startPair writes the cluster file, starts every process and waits until
// the standby is attached to n1 and not degraded.
func startPair(ctx context.Context, s pairSpec, log *slog.Logger) (*pair, error) {
	text, err := pairFile(s)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(s.Dir, s.Name+".toml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("write cluster file: %w", err)
	}
	c, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	lc, err := cluster.Start(ctx, cluster.Options{Config: c, Logger: log, LogLevel: "warn"})
	if err != nil {
		return nil, err
	}
	p := &pair{spec: s, cfg: c, lc: lc}
	if err := p.waitAttached(ctx, "n1", 60*time.Second); err != nil {
		lc.Stop()
		return nil, fmt.Errorf("%w; n2's log ends: %s", err, logTail(lc.Proc("n2").Log, 5))
	}
	return p, nil
}

// logTail is the last n lines of a log file, joined with " | ".
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func (p *pair) stop() { p.lc.Stop() }

// dsn is the router's DSN.
func (p *pair) dsn() string { return p.lc.DSN() }

// nodeDSN is a node's own DSN (its client port, not the router).
func (p *pair) nodeDSN(id string) string {
	return fmt.Sprintf("postgres://tandem:tandem@%s/tandem?sslmode=disable", p.node(id).Listen)
}

func (p *pair) node(id string) *config.Node {
	for i := range p.cfg.Nodes {
		if p.cfg.Nodes[i].ID == id {
			return &p.cfg.Nodes[i]
		}
	}
	return nil
}

func (p *pair) status(id string) (*nodeStatus, error) {
	var st nodeStatus
	if err := getJSON(p.node(id), "/status", &st); err != nil {
		return nil, err
	}
	if st.Repl == nil {
		return nil, fmt.Errorf("node %s: no replication section in /status", id)
	}
	if p.spec.engine() == config.EnginePhysical && st.Physical == nil {
		return nil, fmt.Errorf("node %s: no physical section in /status", id)
	}
	return &st, nil
}

// roleEpoch is a node's role, epoch and whether it commits degraded, from
// its engine's section of /status.
func (st *nodeStatus) roleEpoch() (string, uint64, bool) {
	if ps := st.Physical; ps != nil {
		return ps.Role, ps.Epoch, ps.Degraded
	}
	return st.Repl.Role, st.Repl.Epoch, st.Repl.Degraded
}

// standbyReady says whether a primary's /status shows a standby that
// replicates: attached (writeset), or streaming WAL and, at a 2-safe
// level, synchronous (physical: pg_stat_replication's state and
// sync_state); otherwise why not.
func (p *pair) standbyReady(st *nodeStatus) (bool, string) {
	ps := st.Physical
	if ps == nil {
		if len(st.Repl.Standbys) == 0 {
			return false, "no standby attached"
		}
		return true, ""
	}
	if ps.Error != "" {
		return false, "the primary's server: " + ps.Error
	}
	for _, r := range ps.Replicas {
		if r.State != "streaming" {
			continue
		}
		if r.SyncState == "sync" || r.SyncState == "quorum" || p.spec.Safeness == "1-safe" {
			return true, ""
		}
	}
	return false, fmt.Sprintf("no standby streams synchronously (replicas: %+v)", ps.Replicas)
}

// waitAttached waits until primary reports its standby attached and not
// degraded (a kill before that tests nothing).
func (p *pair) waitAttached(ctx context.Context, primary string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last := "no answer"
	for {
		st, err := p.status(primary)
		if err != nil {
			last = err.Error()
		} else if role, _, degraded := st.roleEpoch(); role != "primary" {
			last = primary + " is " + role
		} else if ok, why := p.standbyReady(st); !ok {
			last = why
		} else if degraded {
			last = "the primary runs degraded (its standby fell behind)"
		} else {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the pair is not ready within %s: %s", limit, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kill SIGKILLs a node and returns when it has exited.
func (p *pair) kill(id string) time.Time {
	pr := p.lc.Proc(id)
	at := time.Now()
	pr.Kill()
	return at
}

// waitPrimary waits until a node other than killed is the primary of an
// epoch above epoch, and returns it.
func (p *pair) waitPrimary(ctx context.Context, killed string, epoch uint64, limit time.Duration) (string, uint64, error) {
	deadline := time.Now().Add(limit)
	for {
		for _, n := range p.cfg.Nodes {
			if n.ID == killed {
				continue
			}
			if st, err := p.status(n.ID); err == nil {
				if role, e, _ := st.roleEpoch(); role == "primary" && e > epoch {
					return n.ID, e, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return "", 0, fmt.Errorf("%w within %s of the kill", errNoFailover, limit)
		}
		select {
		case <-ctx.Done():
			return "", 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// cpuTime is the user and system CPU time the pair's processes (nodes,
// router, witness) have used so far, from /proc (0 where unreadable; a
// managed PostgreSQL's own server processes are not counted).
func (p *pair) cpuTime() time.Duration {
	var total time.Duration
	for _, pr := range p.lc.Procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pr.PID))
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces, in
		// parentheses): state is field 3, utime 14, stime 15.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		ut, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		total += time.Duration(ut+st) * time.Second / clockTicks
	}
	return total
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on Linux
// everywhere in practice).
const clockTicks = 100

// auditTable is where audit writers insert.
const auditTable = "tandem_audit"

func createAuditTable(ctx context.Context, dsn string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("audit table: %w", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS "+auditTable); err != nil {
		return fmt.Errorf("audit table: %w", err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE "+auditTable+" (id BIGINT PRIMARY KEY, writer INTEGER NOT NULL)"); err != nil {
		return fmt.Errorf("audit table: %w", err)
	}
	return nil
}

// auditWriters insert unique ids through a DSN, each in its own autocommit
// transaction, and record every id whose COMMIT was answered success. A
// failed statement is not acknowledged; a writer whose connection broke
// reconnects and goes on.
type auditWriters struct {
	mu     sync.Mutex
	acked  []int64
	count  atomic.Int64
	errors atomic.Int64
	// killedAt is set (unix nanos) when the primary is killed; firstBack
	// is the answer of the first commit of a statement sent after it.
	killedAt  atomic.Int64
	firstBack atomic.Int64
	// survived counts connections opened before the kill that committed
	// again after it (sessions that survived the failover).
	survived atomic.Int64
}

// markKill records the kill's time; call it just before the kill.
func (a *auditWriters) markKill(at time.Time) { a.killedAt.Store(at.UnixNano()) }

// run starts n writers on dsn until ctx ends; it returns at once, done is
// closed when they have stopped.
func (a *auditWriters) run(ctx context.Context, dsn string, n int) (done <-chan struct{}) {
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.writer(ctx, dsn, w)
		}()
	}
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

func (a *auditWriters) writer(ctx context.Context, dsn string, w int) {
	var c *pgx.Conn
	var openedAt int64   // unix nanos the connection was opened
	var survivedSet bool // this connection was counted in survived
	defer func() {
		if c != nil {
			c.Close(context.Background())
		}
	}()
	for i := int64(1); ctx.Err() == nil; i++ {
		if c == nil {
			// The router may hold a new session until a new primary
			// serves: give it that long rather than retrying.
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			var err error
			c, err = pgx.Connect(cctx, dsn)
			cancel()
			if err != nil {
				c = nil
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
			openedAt, survivedSet = time.Now().UnixNano(), false
		}
		id := int64(w)*1_000_000_000 + i
		started := time.Now().UnixNano()
		k := a.killedAt.Load()
		qctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Exec(qctx, "INSERT INTO "+auditTable+" (id, writer) VALUES ($1, $2)", id, w)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return // stopped mid-statement: its outcome means nothing
			}
			a.errors.Add(1)
			// A session that survives the failover keeps its connection
			// (the router answers the statement in flight with an error);
			// only a broken connection is replaced.
			if c.IsClosed() {
				c = nil
			}
			continue
		}
		now := time.Now().UnixNano()
		if k != 0 && started > k {
			a.firstBack.CompareAndSwap(0, now)
			if openedAt < k && !survivedSet {
				survivedSet = true
				a.survived.Add(1)
			}
		}
		a.mu.Lock()
		a.acked = append(a.acked, id)
		a.mu.Unlock()
		a.count.Add(1)
	}
}

// waitCount waits until n commits were acknowledged in all.
func (a *auditWriters) waitCount(ctx context.Context, n int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for a.count.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d commits acknowledged within %s", a.count.Load(), limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// waitBack waits until a commit succeeded after the kill.
func (a *auditWriters) waitBack(ctx context.Context, limit time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(limit)
	for a.firstBack.Load() == 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Unix(0, a.firstBack.Load()), true
}

// check counts the acknowledged ids missing at dsn (the new primary).
func (a *auditWriters) check(ctx context.Context, dsn string) (checked, lost int64, err error) {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, 0, fmt.Errorf("check acknowledged commits: %w", err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, "SELECT id FROM "+auditTable)
	if err != nil {
		return 0, 0, fmt.Errorf("check acknowledged commits: %w", err)
	}
	have := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("check acknowledged commits: %w", err)
		}
		have[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("check acknowledged commits: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range a.acked {
		if !have[id] {
			lost++
		}
	}
	return int64(len(a.acked)), lost, nil
}
