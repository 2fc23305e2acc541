package multimaster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandemdb/tandem/backend/sqlite"
	"github.com/tandemdb/tandem/certifier"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/secure"
	"github.com/tandemdb/tandem/writeset"
)

// node is one real multi-master node without its front door: a real SQLite
// database and a real one-member coordinator (Raft over mutual TLS) holding
// the certifier, with the agent applying its log.
type node struct {
	t     *testing.T
	db    *sqlite.DB
	coord *coordinator.Coordinator
	agent *Agent
	path  string
}

func startNode(t *testing.T, window certifier.Window, opts ...func(*Config)) *node {
	t.Helper()
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if _, err := secure.Issue(certs, []secure.Member{{ID: "n1", Hosts: []string{"127.0.0.1"}}}, false); err != nil {
		t.Fatal(err)
	}
	ident, err := secure.Load(certs, "n1")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	coord, err := coordinator.Start(coordinator.Config{ID: "n1", Dir: filepath.Join(dir, "raft"),
		Voters: []coordinator.Member{{ID: "n1", RaftAddr: addr}}, Identity: ident, InitialPrimary: "n1", InitialEpoch: 1,
		Safeness: "2-safe-received", Lease: time.Second, Grace: 500 * time.Millisecond,
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond, CertWindow: window, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tandem.db")
	db, err := sqlite.Open(sqlite.Options{Path: path, Synchronous: "NORMAL", ReadPool: 2, BusyTimeout: 5 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ID: "n1", Store: db, Cert: coord, ApplyConflictWait: 200 * time.Millisecond, Logger: log}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.EnableReplication(a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = coord.Close()
		db.Close()
	})
	// One member: it leads once it has elected itself.
	deadline := time.Now().Add(10 * time.Second)
	for coord.Status().Leader != "n1" {
		if time.Now().After(deadline) {
			t.Fatal("the one-member coordinator did not elect itself")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := &node{t: t, db: db, coord: coord, agent: a, path: path}
	n.exec("CREATE TABLE users (id int PRIMARY KEY, email text UNIQUE NOT NULL)")
	return n
}

// exec runs statements through a real SQLite session of the node (so a
// write goes through capture, rollback, certification and apply).
func (n *node) exec(stmts ...string) error {
	n.t.Helper()
	ctx := context.Background()
	s, err := n.db.NewSession(ctx, "tandem", "tandem")
	if err != nil {
		n.t.Fatal(err)
	}
	defer s.Close()
	for _, q := range stmts {
		st, err := s.Prepare(ctx, q)
		if err != nil {
			return err
		}
		res, err := s.Execute(ctx, st, nil)
		if err != nil {
			return err
		}
		res.Close()
	}
	return nil
}

// rows reads the users table from the database file (another connection).
func (n *node) rows() string {
	n.t.Helper()
	c, err := sql.Open("sqlite3", "file:"+n.path+"?mode=ro")
	if err != nil {
		n.t.Fatal(err)
	}
	defer c.Close()
	rs, err := c.Query("SELECT id, email FROM users ORDER BY id")
	if err != nil {
		n.t.Fatal(err)
	}
	defer rs.Close()
	var b strings.Builder
	for rs.Next() {
		var id int
		var email string
		_ = rs.Scan(&id, &email)
		b.WriteString(email + ";")
	}
	return b.String()
}

// user is the writeset of an insert into users.
func user(id int64, email string) *writeset.Writeset {
	k, _ := writeset.FromAny(id)
	e, _ := writeset.FromAny(email)
	return &writeset.Writeset{Rows: []writeset.Row{{Table: "users", Op: writeset.OpInsert, KeyCols: []string{"id"}, Key: []writeset.Value{k},
		Cols: []string{"id", "email"}, After: []writeset.Value{k, e}}}}
}

func code(err error) string {
	var pe *pgwire.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestCertifyOutcomes: what a committer sees for each kind of decision,
// against a real certifier and a real SQLite database.
func TestCertifyOutcomes(t *testing.T) {
	n := startNode(t, certifier.Window{Count: 2})
	ctx := testCtx(t)
	base := n.agent.AppliedGSN() // the CREATE TABLE
	cases := []struct {
		name     string
		ws       *writeset.Writeset
		snapshot func() uint64
		ddlTabs  []string
		code     string // "" = committed
		says     string
		rows     string
	}{
		{"a commit is applied before COMMIT returns", user(1, "a@x"), n.agent.AppliedGSN, nil, "", "", "a@x;"},
		{"the same row on an older snapshot: first committer wins", user(1, "b@x"), func() uint64 { return base }, nil, "40001", `table "users" key (1) was written by the transaction committed at GSN`, "a@x;"},
		{"another row on the older snapshot commits", user(2, "c@x"), func() uint64 { return base }, nil, "", "", "a@x;c@x;"},
		{"a UNIQUE value another node committed concurrently: skipped everywhere, the client gets 23505", user(3, "c@x"), func() uint64 { return base + 1 }, nil, "23505", "not committed", "a@x;c@x;"},
		{"DDL conflicts with a concurrent writer of its table", &writeset.Writeset{DDL: "CREATE INDEX users_email ON users (email)"}, func() uint64 { return base + 1 }, []string{"users"}, "40001", `table "users"`, "a@x;c@x;"},
		{"a writeset past the certifier's log record limit is refused before certification", user(5, strings.Repeat("x", coordinator.MaxCertifyBytes)), n.agent.AppliedGSN, nil, "54000", "more than a multi-master certification takes", "a@x;c@x;"},
		{"the window has moved past the snapshot", user(4, "d@x"), func() uint64 { return 0 }, nil, "40001", "window", "a@x;c@x;"},
	}
	for _, c := range cases {
		err := n.agent.Certify(ctx, c.ws, c.snapshot(), c.ddlTabs)
		if code(err) != c.code {
			t.Fatalf("%s: got %v; want SQLSTATE %q", c.name, err, c.code)
		}
		if c.says != "" && !strings.Contains(err.Error(), c.says) {
			t.Fatalf("%s: the error does not say %q: %v", c.name, c.says, err)
		}
		if got := n.rows(); got != c.rows {
			t.Fatalf("%s: rows %q, want %q", c.name, got, c.rows)
		}
		if st := n.agent.Status(); st.AppliedGSN != st.Certifier.Last {
			t.Fatalf("%s: applied GSN %d, certified %d: a COMMIT returned before its node applied", c.name, st.AppliedGSN, st.Certifier.Last)
		}
	}
	st := n.agent.Status()
	// Commits: the CREATE TABLE of startNode and the three above.
	if st.Commits != 4 || st.Aborts != 2 || st.TooOld != 1 || st.ApplySkipped != 1 {
		t.Fatalf("status counts: %+v", st)
	}
}

// TestSessionsThroughCertification: statements in real sessions of the
// back end: a transaction block's rows and an autocommit write are
// certified and applied, and a session's snapshot GSN is the GSN it saw.
func TestSessionsThroughCertification(t *testing.T) {
	n := startNode(t, certifier.Window{})
	if err := n.exec("BEGIN", "INSERT INTO users VALUES (10, 'x@y')", "INSERT INTO users VALUES (11, 'z@y')", "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := n.exec("UPDATE users SET email = 'w@y' WHERE id = 10"); err != nil {
		t.Fatal(err)
	}
	if got := n.rows(); got != "w@y;z@y;" {
		t.Fatalf("rows %q", got)
	}
	// A local unique violation is the back end's own error, before any
	// certification.
	if err := n.exec("INSERT INTO users VALUES (12, 'z@y')"); code(err) != "23505" {
		t.Fatalf("duplicate email: %v", err)
	}
	if st := n.agent.Status(); st.Commits != 3 || st.AppliedGSN != st.Certifier.Last {
		t.Fatalf("status: %+v", st)
	}
}

// TestEarlyAbortOfHolder: a session holding the node's write lock with an
// open update transaction is ended (through the terminate hook pgwire
// gives it) once certified writesets waited apply_conflict_wait, and the
// writeset applies.
func TestEarlyAbortOfHolder(t *testing.T) {
	n := startNode(t, certifier.Window{})
	ctx := testCtx(t)
	s, err := n.db.NewSession(ctx, "tandem", "tandem")
	if err != nil {
		t.Fatal(err)
	}
	terminated := make(chan *pgwire.Error, 1)
	s.(pgwire.TerminateUser).UseTerminate(func(e *pgwire.Error) {
		terminated <- e
		s.Close() // what pgwire does: the session ends and rolls back
	})
	runIn(t, s, "BEGIN", "INSERT INTO users VALUES (20, 'held@y')")
	start := time.Now()
	// Another node's writeset (as if certified elsewhere): the agent must
	// get past the idle holder.
	if err := n.agent.Certify(ctx, user(21, "other@y"), n.agent.AppliedGSN(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-terminated:
		if e.Code != "40001" || !strings.Contains(e.Message, "conflict with replication") {
			t.Fatalf("the holder was ended with %+v", e)
		}
	default:
		t.Fatal("the commit returned but the holder was not ended")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the apply took %s past a holder (apply_conflict_wait 200ms)", took)
	}
	if got := n.rows(); got != "other@y;" {
		t.Fatalf("rows %q: the holder's insert must be rolled back, the certified one applied", got)
	}
}

// TestOwnWritesetNotReappliedUnderLock: the log brings a node's own commit
// again after its committer applied it; the apply loop must pass it by
// without waiting for the write lock, so a local transaction holding the
// lock is neither waited for nor ended (before: after apply_conflict_wait
// it was ended with 40001 over a writeset with nothing left to do).
func TestOwnWritesetNotReappliedUnderLock(t *testing.T) {
	n := startNode(t, certifier.Window{})
	ctx := testCtx(t)
	own := user(50, "own@y")
	if err := n.agent.Certify(ctx, own, n.agent.AppliedGSN(), nil); err != nil {
		t.Fatal(err)
	}
	g := n.agent.AppliedGSN()
	s, err := n.db.NewSession(ctx, "tandem", "tandem")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	terminated := make(chan *pgwire.Error, 1)
	s.(pgwire.TerminateUser).UseTerminate(func(e *pgwire.Error) { terminated <- e })
	runIn(t, s, "BEGIN", "INSERT INTO users VALUES (51, 'holder@y')")
	// The loop's view of the log: the node's own GSN g again.
	again := user(50, "own@y")
	again.GSN, again.Origin = g, "n1"
	done := make(chan bool, 1)
	go func() { done <- n.agent.apply(ctx, []*writeset.Writeset{again}) }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("apply reported the context ended")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the apply loop waited for the write lock over a writeset this node had applied")
	}
	select {
	case e := <-terminated:
		t.Fatalf("the lock holder was ended over an applied writeset: %+v", e)
	case <-time.After(400 * time.Millisecond): // twice apply_conflict_wait
	}
}

// runIn runs statements in a session (a transaction left open holds the
// node's write lock).
func runIn(t *testing.T, s pgwire.BackendSession, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range stmts {
		st, err := s.Prepare(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Execute(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Close()
	}
}

// trailing is the real coordinator whose log follower reports, its first
// times, that it fell behind the certifier's window, as a follower does
// when the node's committers applied their own writesets ahead of it and
// a short window moved on.
type trailing struct {
	Certifier
	left atomic.Int32
}

func (c *trailing) FollowCertified(ctx context.Context, from uint64) (<-chan *certifier.Committed, <-chan error) {
	if c.left.Add(-1) < 0 {
		return c.Certifier.FollowCertified(ctx, from)
	}
	ch, errc := make(chan *certifier.Committed), make(chan error, 1)
	close(ch)
	errc <- fmt.Errorf("%w: injected", certifier.ErrSnapshotTooOld)
	return ch, errc
}

// TestTrailingFollowerIsNotReseed: a log follower that fell behind the
// window while the node itself is inside it follows again; it does not
// re-seed the node (before: the agent re-seeded, or, without a peer to
// re-seed from, stalled for good and every later COMMIT waited forever:
// seen as a 40-minute hang of TestCertifyOutcomes on a loaded machine).
func TestTrailingFollowerIsNotReseed(t *testing.T) {
	var reseeds atomic.Int32
	n := startNode(t, certifier.Window{Count: 2}, func(c *Config) {
		tr := &trailing{Certifier: c.Cert}
		tr.left.Store(3)
		c.Cert = tr
		c.Reseed = func(context.Context, uint64) ([]byte, error) {
			reseeds.Add(1)
			return nil, errors.New("no peer in this test")
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := int64(1); i <= 5; i++ {
		if err := n.agent.Certify(ctx, user(i, fmt.Sprintf("u%d@x", i)), n.agent.AppliedGSN(), nil); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	if got := n.rows(); got != "u1@x;u2@x;u3@x;u4@x;u5@x;" {
		t.Fatalf("rows %q", got)
	}
	if st := n.agent.Status(); reseeds.Load() != 0 || st.Reseeding || st.Stalled != "" {
		t.Fatalf("a node inside the window was re-seeded: %d re-seeds, status %+v", reseeds.Load(), st)
	}
}

// testCtx bounds a test's commits: a COMMIT that never returns fails the
// test in a minute instead of hanging the package until go test's timeout.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestGatherBatch: without apply_batch_delay a batch is what the log holds
// already; with it, what another node's writesets bring within the delay
// of the first (the node's own commits do not start the wait).
func TestGatherBatch(t *testing.T) {
	enc := writeset.Encode(&writeset.Writeset{})
	entry := func(g uint64, origin string) *certifier.Committed {
		return &certifier.Committed{GSN: g, Origin: origin, Writeset: enc}
	}
	for _, tc := range []struct {
		name        string
		delay       time.Duration
		firstOrigin string
		want        int // writesets in the batch
	}{
		{"no delay takes what is there", 0, "n2", 2},
		{"delay waits for later arrivals", 400 * time.Millisecond, "n2", 4},
		{"own commit does not start the wait", 400 * time.Millisecond, "n1", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Agent{cfg: Config{ID: "n1"}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if err := a.SetApplyBatchDelay(tc.delay); err != nil {
				t.Fatal(err)
			}
			ch := make(chan *certifier.Committed, 8)
			ch <- entry(2, tc.firstOrigin) // already there with the first
			go func() {
				time.Sleep(50 * time.Millisecond)
				ch <- entry(3, "n3")
				ch <- entry(4, "n2")
			}()
			start := time.Now()
			batch := a.gather(ch, []*writeset.Writeset{a.decode(entry(1, tc.firstOrigin))})
			if len(batch) != tc.want {
				t.Fatalf("batch of %d writesets, want %d", len(batch), tc.want)
			}
			for i, ws := range batch {
				if ws.GSN != uint64(i+1) {
					t.Fatalf("batch[%d] is GSN %d", i, ws.GSN)
				}
			}
			if tc.delay > 0 && tc.want > 2 && time.Since(start) < tc.delay {
				t.Fatalf("returned after %s, before the delay %s", time.Since(start), tc.delay)
			}
		})
	}
}

// TestSetApplyBatchDelayBounds: a delay out of [0, 1s] is refused and
// changes nothing.
func TestSetApplyBatchDelayBounds(t *testing.T) {
	a := &Agent{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, d := range []time.Duration{-time.Millisecond, 2 * time.Second} {
		if err := a.SetApplyBatchDelay(d); !errors.Is(err, ErrBadDelay) {
			t.Errorf("SetApplyBatchDelay(%s) = %v, want ErrBadDelay", d, err)
		}
	}
	if err := a.SetApplyBatchDelay(time.Second); err != nil || a.batchDelay.Load() != int64(time.Second) {
		t.Errorf("SetApplyBatchDelay(1s) = %v, delay now %s", err, time.Duration(a.batchDelay.Load()))
	}
}

// TestOwnWritesetCounters: a commit its committer applied at once counts
// as a fast apply; an own writeset the loop applies in a batch with
// another node's counts among the batch's own writesets (/status's
// fast_applies and apply_own_writesets, which tandem plan validate reads).
func TestOwnWritesetCounters(t *testing.T) {
	n := startNode(t, certifier.Window{})
	ctx := testCtx(t)
	before := n.agent.Status() // the CREATE TABLE of startNode counts too
	if err := n.exec("INSERT INTO users VALUES (60, 'fast@y')"); err != nil {
		t.Fatal(err)
	}
	// Its committer applies it at once, unless the log follower brought
	// it to the loop first (a race the test leaves open): one or the
	// other, never both.
	st0 := n.agent.Status()
	if fast, own := st0.FastApplies-before.FastApplies, st0.ApplyOwn-before.ApplyOwn; fast+own != 1 {
		t.Fatalf("one commit added fast applies %d, own writesets in batches %d; want one of them 1", fast, own)
	}
	g := n.agent.AppliedGSN()
	other, own := user(61, "other@y"), user(62, "own@y")
	other.GSN, other.Origin = g+1, "n2"
	own.GSN, own.Origin = g+2, "n1"
	if !n.agent.apply(ctx, []*writeset.Writeset{other, own}) {
		t.Fatal("apply reported the context ended")
	}
	st := n.agent.Status()
	if d := [4]uint64{st.ApplyBatches - st0.ApplyBatches, st.ApplyWritesets - st0.ApplyWritesets, st.ApplyOwn - st0.ApplyOwn, st.FastApplies - st0.FastApplies}; d != [4]uint64{1, 2, 1, 0} {
		t.Fatalf("a batch of another node's writeset and an own one added batches, writesets, own, fast %v; want [1 2 1 0]", d)
	}
	if got := n.rows(); got != "fast@y;other@y;own@y;" {
		t.Fatalf("rows %q", got)
	}
}

// TestCommitWaits: a commit whose committer cannot apply it at once (a GSN
// before it is not applied yet) waits first for this node's copy of the
// log, then for the apply loop, and /status splits its wait so
// (commit_waits, log_wait_seconds, apply_wait_seconds).
func TestCommitWaits(t *testing.T) {
	n := startNode(t, certifier.Window{})
	ctx := testCtx(t)
	before := n.agent.Status()
	// Hold the apply loop, and certify a writeset ahead of the session's.
	n.agent.applyMu.Lock()
	ahead := user(70, "ahead@y")
	d, err := n.coord.Certify(ctx, certifier.Request{ID: "ahead", Snapshot: n.agent.AppliedGSN(), Keys: certifier.KeysOf(ahead), Writeset: writeset.Encode(ahead)})
	if err != nil || !d.Committed {
		n.agent.applyMu.Unlock()
		t.Fatalf("certify the writeset ahead: %+v, %v", d, err)
	}
	done := make(chan error, 1)
	go func() { done <- n.exec("INSERT INTO users VALUES (71, 'waits@y')") }()
	const held = 150 * time.Millisecond
	time.Sleep(held)
	select {
	case err := <-done:
		n.agent.applyMu.Unlock()
		t.Fatalf("the commit returned while GSN %d was not applied: %v", d.GSN, err)
	default:
	}
	n.agent.applyMu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := n.agent.Status()
	if w := st.CommitWaits - before.CommitWaits; w != 1 {
		t.Fatalf("commit waits %d, want 1", w)
	}
	if f := st.FastApplies - before.FastApplies; f != 0 {
		t.Fatalf("fast applies %d, want 0", f)
	}
	// One member leads: its copy of the log has the GSN at once; the wait
	// is the apply loop's, at least as long as the loop was held (less
	// the time before the commit reached its wait).
	lw, aw := st.LogWaitSeconds-before.LogWaitSeconds, st.ApplyWaitSeconds-before.ApplyWaitSeconds
	if lw > 0.05 || aw < 0.05 {
		t.Fatalf("log wait %.3f s, apply wait %.3f s; want about 0 and most of the %s the loop was held", lw, aw, held)
	}
	if got := n.rows(); got != "ahead@y;waits@y;" {
		t.Fatalf("rows %q", got)
	}
}
