package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// retryingWriters insert unique ids through dsn until ctx ends; a failed
// statement (the primary died, a failover is under way) is not counted as
// acknowledged, and the writer reconnects and goes on. It returns every
// id whose COMMIT was answered success, and the time of each writer's
// first success of a statement sent after killedAt was set.
type retryingWriters struct {
	mu        sync.Mutex
	acked     []int64
	count     atomic.Int64
	errors    atomic.Int64
	killedAt  atomic.Int64 // unix nanos; 0: not yet
	firstBack atomic.Int64 // unix nanos of the first success after killedAt
	base      atomic.Int64 // added to each run's writer numbers (several runs at once)
}

func (rw *retryingWriters) run(ctx context.Context, dsn string, n int) {
	var wg sync.WaitGroup
	first := int(rw.base.Add(int64(n))) - n
	for w := first; w < first+n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var c *pgx.Conn
			defer func() {
				if c != nil {
					c.Close(context.Background())
				}
			}()
			for i := 1; ctx.Err() == nil; i++ {
				if c == nil {
					cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					var err error
					c, err = pgx.Connect(cctx, dsn)
					cancel()
					if err != nil {
						c = nil
						time.Sleep(20 * time.Millisecond)
						continue
					}
				}
				id := int64(w)*10_000_000 + int64(i)
				started := time.Now().UnixNano()
				qctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				_, err := c.Exec(qctx, "INSERT INTO t VALUES ($1, $2)", id, "w"+strconv.Itoa(w))
				cancel()
				if err != nil {
					rw.errors.Add(1)
					c.Close(context.Background())
					c = nil
					continue
				}
				now := time.Now().UnixNano()
				if k := rw.killedAt.Load(); k != 0 && started > k {
					rw.firstBack.CompareAndSwap(0, now)
				}
				rw.mu.Lock()
				rw.acked = append(rw.acked, id)
				rw.mu.Unlock()
				rw.count.Add(1)
			}
		}(w)
	}
	wg.Wait()
}

// startWriters runs n retrying writers through dsn until the returned
// stop, once 200 commits went through.
func startWriters(dsn string, n int) (*retryingWriters, func()) {
	rw := &retryingWriters{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rw.run(ctx, dsn, n); close(done) }()
	for rw.count.Load() < 200 {
		time.Sleep(20 * time.Millisecond)
	}
	return rw, func() { cancel(); <-done }
}

// pause SIGSTOPs the named processes; the returned resume SIGCONTs them
// (once; also at the test's end).
func (h *hsCluster) pause(names ...string) (resume func()) {
	for _, n := range names {
		h.signal(n, syscall.SIGSTOP)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			for _, n := range names {
				h.signal(n, syscall.SIGCONT)
			}
		})
	}
	h.t.Cleanup(resume)
	return resume
}

// nodeRole reads a node's role and epoch from its /status.
func nodeRole(t *testing.T, admin string) (string, uint64) {
	var st struct {
		Role string `json:"role"`
		Repl struct {
			Epoch uint64 `json:"epoch"`
		} `json:"replication"`
	}
	getStatus(t, admin, &st)
	return st.Role, st.Repl.Epoch
}

// TestAutomaticFailover: a hot-standby pair with a witness and
// failover = "automatic". Writers go through the router and record every
// acknowledged commit; the primary is SIGKILLed at a random moment; nobody
// types promote. The coordinator promotes the standby, the router follows,
// the writers go on; every acknowledged commit is on the new primary at
// the 2-safe levels (1-safe: counted). The old primary is restarted and
// rejoins as a standby of the new epoch, identical to the new primary.
// TANDEM_FAULT_TRIALS sets the trials per level (default here: 2).
func TestAutomaticFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	trials := 2
	if n, err := strconv.Atoi(os.Getenv("TANDEM_FAULT_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			for _, level := range []string{"2-safe-visible", "1-safe", "2-safe-received", "2-safe-durable"} {
				t.Run(level, func(t *testing.T) {
					var rtos []time.Duration
					lostTotal, ackedTotal := 0, 0
					for trial := 0; trial < trials; trial++ {
						h := writeHSFile(t, be, level, "relaxed", "failover = \"automatic\"\nlease = \"600ms\"\nlease_grace = \"300ms\"\nack_timeout = \"1s\"\n", true)
						h.start("witness")
						h.start("n1")
						h.start("n2")
						h.start("router")
						createTestTable(t, h.dsn(h.router))
						rw := &retryingWriters{}
						ctx, cancel := context.WithCancel(context.Background())
						done := make(chan struct{})
						go func() { rw.run(ctx, h.dsn(h.router), 4); close(done) }()
						target := int64(20 + rand.Intn(300))
						for wait := time.Now().Add(30 * time.Second); rw.count.Load() < target && time.Now().Before(wait); {
							time.Sleep(2 * time.Millisecond)
						}
						if rw.count.Load() < target {
							cancel()
							<-done
							t.Fatalf("trial %d: only %d commits acknowledged in 30 s before the kill", trial, rw.count.Load())
						}
						// The standby has followed (at 1-safe nothing waits for
						// it: a standby whose first connection failed could be
						// promoted without the table, and every write after the
						// failover fail, as 1-safe allows).
						waitStandby(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM t")
						var cs struct {
							Coord struct {
								Leader string `json:"leader"`
							} `json:"coordinator"`
						}
						getStatus(t, h.admin["n1"], &cs)
						rw.killedAt.Store(time.Now().UnixNano())
						h.kill("n1")
						// No promote typed: wait for the writers to commit again.
						for wait := time.Now().Add(30 * time.Second); rw.firstBack.Load() == 0 && time.Now().Before(wait); {
							time.Sleep(5 * time.Millisecond)
						}
						if rw.firstBack.Load() == 0 {
							cancel()
							<-done
							t.Fatalf("trial %d: no commit succeeded within 30 s of the primary's SIGKILL (no automatic failover)\n%s", trial, tailLog(h, "n2"))
						}
						rto := time.Duration(rw.firstBack.Load() - rw.killedAt.Load())
						rtos = append(rtos, rto)
						if os.Getenv("TANDEM_FAILOVER_DEBUG") != "" && rto > 1500*time.Millisecond {
							t.Logf("slow failover (%v):\n%s\n%s", rto, tailLog(h, "n2"), tailLog(h, "router"))
						}
						time.Sleep(500 * time.Millisecond) // some commits on the new primary
						cancel()
						<-done
						if role, epoch := nodeRole(t, h.admin["n2"]); role != "primary" || epoch < 2 {
							t.Fatalf("trial %d: n2 is %s of epoch %d after the failover", trial, role, epoch)
						}
						have := ids(t, h.dsn(h.nodes["n2"]))
						lost := 0
						for _, id := range rw.acked {
							if !have[id] {
								lost++
							}
						}
						lostTotal += lost
						ackedTotal += len(rw.acked)
						if level != "1-safe" && lost > 0 {
							t.Fatalf("trial %d: %d of %d acknowledged commits lost at %s after an automatic failover", trial, lost, len(rw.acked), level)
						}
						// The old primary comes back: a standby of the new epoch,
						// its divergent tail (if any) discarded, identical to n2.
						h.start("n1")
						var role string
						var epoch uint64
						for wait := time.Now().Add(30 * time.Second); time.Now().Before(wait); time.Sleep(50 * time.Millisecond) {
							if role, epoch = nodeRole(t, h.admin["n1"]); role == "standby" && epoch >= 2 {
								break
							}
						}
						if role != "standby" || epoch < 2 {
							t.Fatalf("trial %d: the restarted old primary is %s of epoch %d, want a standby of epoch >= 2\n%s", trial, role, epoch, tailLog(h, "n1"))
						}
						var got map[int64]bool
						for wait := time.Now().Add(30 * time.Second); time.Now().Before(wait); time.Sleep(100 * time.Millisecond) {
							if got, _ = idsErr(h.dsn(h.nodes["n1"])); len(got) == len(have) {
								break
							}
						}
						if len(got) != len(have) {
							t.Fatalf("trial %d: the rejoined old primary has %d rows, the new primary %d\n%s", trial, len(got), len(have), tailLog(h, "n1"))
						}
						for id := range have {
							if !got[id] {
								t.Fatalf("trial %d: row %d of the new primary is missing on the rejoined old primary", trial, id)
							}
						}
						t.Logf("trial %d: %d acknowledged, %d lost, %d failed statements; first commit %v after the SIGKILL (Raft leader at the kill: %s)", trial, len(rw.acked), lost, rw.errors.Load(), rto.Round(time.Millisecond), cs.Coord.Leader)
						h.stopAll()
					}
					t.Logf("%s: %d trials, %d acknowledged commits, %d lost; time from SIGKILL to the first commit: %v", level, trials, ackedTotal, lostTotal, rtos)
				})
			}
		})
	}
}

func tailLog(h *hsCluster, name string) string {
	b, _ := os.ReadFile(filepath.Join(h.dir, name+".log"))
	return fmt.Sprintf("--- %s.log (tail) ---\n%s", name, tailStr(b, 4000))
}

// TestSessionsSurviveFailover: sessions through the router keep their
// client connection across an automatic failover. An idle session keeps
// its named prepared statement and its SET and goes on on the new
// primary; a session with a transaction open gets 40001 for it, rolls
// back, and goes on too.
func TestSessionsSurviveFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			h := writeHSFile(t, be, "2-safe-visible", "relaxed", "failover = \"automatic\"\nlease = \"600ms\"\nlease_grace = \"300ms\"\nack_timeout = \"1s\"\n", true)
			h.start("witness")
			h.start("n1")
			h.start("n2")
			h.start("router")
			sessionsSurvive(t, survivalTarget{
				router: h.dsn(h.router),
				kill:   func() { h.kill("n1") },
				promoted: func() string {
					if role, _ := nodeRole(t, h.admin["n2"]); role == "primary" {
						return "n2"
					}
					return ""
				},
				nodeDSN:   func(id string) string { return h.dsn(h.nodes[id]) },
				logs:      func() string { return tailLog(h, "router") + tailLog(h, "n2") },
				oneWriter: be == "sqlite",
			})
		})
	}
}

// survivalTarget is a cluster whose primary sessionsSurvive kills.
type survivalTarget struct {
	router   string        // the router's client DSN
	kill     func()        // SIGKILL the primary
	promoted func() string // the node that took over, "" until one did
	nodeDSN  func(id string) string
	logs     func() string // for failure messages
	// oneWriter: the back end runs one write transaction at a time
	// (SQLite), so no second one may be open at the kill.
	oneWriter bool
}

// sessionsSurvive: sessions through the router keep their client
// connection across an automatic failover. An idle session keeps its
// named prepared statement and its SET and goes on on the new primary; a
// session with a transaction open gets 40001 for it, rolls back, and goes
// on too; a psql session fed statement by statement goes on.
func sessionsSurvive(t *testing.T, c survivalTarget) {
	createTestTable(t, c.router)
	ctx := context.Background()
	idle := connect(t, c.router)
	defer idle.Close(ctx)
	if _, err := idle.Exec(ctx, "SET statement_timeout = '7s'"); err != nil {
		t.Fatal(err)
	}
	if _, err := idle.Prepare(ctx, "ins", "INSERT INTO t VALUES ($1, $2)"); err != nil {
		t.Fatal(err)
	}
	if _, err := idle.Exec(ctx, "ins", 1, "before"); err != nil {
		t.Fatal(err)
	}
	// A statement SQL PREPARE made, and a SET in the extended protocol
	// (as pgjdbc sends every statement).
	if _, err := idle.Exec(ctx, "PREPARE sqlins (int, text) AS INSERT INTO t VALUES ($1, $2)"); err != nil {
		t.Fatal(err)
	}
	if err := idle.PgConn().ExecParams(ctx, "SET lock_timeout = '3s'", nil, nil, nil, nil).Read().Err; err != nil {
		t.Fatal(err)
	}
	// A query of a SET and a write: only the SET is replayed.
	if _, err := idle.Exec(ctx, "SET application_name = 'idle-multi'; UPDATE t SET w = w || '+' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	// SETs PostgreSQL undid: in a block that rolled back, after the
	// savepoint a block returned to, in a query of several statements
	// that failed (its implicit block). The replay must not make them
	// (the checks after the failover want 7s, 3s and idle-multi).
	for _, q := range []string{"BEGIN", "SET statement_timeout = '9s'", "ROLLBACK",
		"BEGIN", "SAVEPOINT sp", "SET lock_timeout = '8s'", "ROLLBACK TO SAVEPOINT sp", "COMMIT"} {
		if _, err := idle.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := idle.Exec(ctx, "SET application_name = 'undone'; SELECT 1/0"); err == nil {
		t.Fatal("SELECT 1/0 did not fail")
	}
	// A setting made by set_config (pg_dump's way with search_path).
	if _, err := idle.Exec(ctx, "SELECT set_config('tandem_test.mark', 'kept', false)"); err != nil {
		t.Fatal(err)
	}
	// A listener (a job queue's worker): its session never ends, so it
	// never says LISTEN again; after the failover, once its session ran a
	// statement there (the checks below), it must hear the new primary's
	// NOTIFYs. (One that sends nothing is not reconnected: not yet.)
	if _, err := idle.Exec(ctx, "LISTEN tandem_jobs"); err != nil {
		t.Fatal(err)
	}
	notify(t, c.router, "before")
	heard(t, idle, "before")
	// A psql session, fed statement by statement.
	psql := exec.Command(psqlBin(t), "-X", "-q", "-A", "-t", c.router)
	psqlIn, err := psql.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var psqlOut strings.Builder
	psql.Stdout, psql.Stderr = &psqlOut, &psqlOut
	if err := psql.Start(); err != nil {
		t.Fatal(err)
	}
	defer psql.Process.Kill()
	fmt.Fprintln(psqlIn, "SET application_name = 'psql-survivor'; INSERT INTO t VALUES (10, 'psql before');")
	for wait := time.Now().Add(20 * time.Second); !ids(t, c.router)[10]; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("psql's first statement did not arrive: %s", psqlOut.String())
		}
	}
	inTx := connect(t, c.router)
	defer inTx.Close(ctx)
	tx, err := inTx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO t VALUES (2, 'lost')"); err != nil {
		t.Fatal(err)
	}
	// A session whose next word after the failover is COMMIT, and
	// pgjdbc's sessions (JdbcFailover.java).
	var commitTx *pgx.Conn
	var txAtCommit pgx.Tx
	var jdbcGo func() string
	if !c.oneWriter {
		jdbcGo = startJdbcFailover(t, c.router)
		commitTx = connect(t, c.router)
		defer commitTx.Close(ctx)
		if txAtCommit, err = commitTx.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := txAtCommit.Exec(ctx, "INSERT INTO t VALUES (6, 'lost at commit')"); err != nil {
			t.Fatal(err)
		}
	}
	c.kill()
	var primary string
	for wait := time.Now().Add(30 * time.Second); primary == ""; time.Sleep(20 * time.Millisecond) {
		if primary = c.promoted(); primary == "" && time.Now().After(wait) {
			t.Fatalf("no node promoted within 30 s\n%s", c.logs())
		}
	}
	// The idle session: same connection, its prepared statement and its
	// setting on the new primary.
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := idle.Exec(qctx, "ins", 3, "after"); err != nil {
		t.Fatalf("the idle session's prepared statement after the failover: %v\n%s", err, c.logs())
	}
	var st string
	if err := idle.QueryRow(qctx, "SHOW statement_timeout").Scan(&st); err != nil || st != "7s" {
		t.Fatalf("SHOW statement_timeout after the failover = %q, %v; want 7s (the session's SET replayed, not the one of its block that rolled back)", st, err)
	}
	if err := idle.QueryRow(qctx, "SHOW lock_timeout").Scan(&st); err != nil || st != "3s" {
		t.Fatalf("SHOW lock_timeout after the failover = %q, %v; want 3s (the session's SET in the extended protocol replayed, not the one its ROLLBACK TO SAVEPOINT undid)", st, err)
	}
	if err := idle.QueryRow(qctx, "SELECT current_setting('tandem_test.mark', true)").Scan(&st); err != nil || st != "kept" {
		t.Fatalf("current_setting('tandem_test.mark') after the failover = %q, %v; want kept (the session's set_config replayed)", st, err)
	}
	notify(t, c.router, "after")
	heard(t, idle, "after")
	if _, err := idle.Exec(qctx, "EXECUTE sqlins (8, 'sql prepare after')"); err != nil {
		t.Fatalf("EXECUTE of the statement SQL PREPARE made before the failover: %v\n%s", err, c.logs())
	}
	var app, w1 string
	if err := idle.QueryRow(qctx, "SELECT current_setting('application_name'), (SELECT w FROM t WHERE id = 1)").Scan(&app, &w1); err != nil || app != "idle-multi" || w1 != "before+" {
		t.Fatalf("after the failover application_name = %q and row 1 = %q (%v); want idle-multi and before+ (the query's SET replayed, its UPDATE not run again; not the SET of the query that failed)", app, w1, err)
	}
	// The session in a transaction: 40001, then it rolls back and goes on.
	_, err = tx.Exec(qctx, "INSERT INTO t VALUES (4, 'in lost tx')")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "40001" {
		t.Fatalf("a statement of the transaction open at the failover: %v; want SQLSTATE 40001", err)
	}
	// Its ROLLBACK in the extended protocol, as pgjdbc sends it.
	if err := inTx.PgConn().ExecParams(qctx, "ROLLBACK", nil, nil, nil, nil).Read().Err; err != nil {
		t.Fatalf("rollback (extended protocol) after the 40001: %v", err)
	}
	if st := inTx.PgConn().TxStatus(); st != 'I' {
		t.Fatalf("after its ROLLBACK the session is in state %q, want 'I'", st)
	}
	if _, err := inTx.Exec(qctx, "INSERT INTO t VALUES (5, 'after rollback')"); err != nil {
		t.Fatalf("the session after its rollback: %v", err)
	}
	// Its COMMIT: 40001, and the transaction is over, as after a COMMIT
	// that fails on PostgreSQL: the next statement runs, no ROLLBACK.
	want := map[int64]bool{1: true, 2: false, 3: true, 4: false, 5: true, 8: true, 10: true, 11: true}
	if txAtCommit != nil {
		if err := txAtCommit.Commit(qctx); !errors.As(err, &pe) || pe.Code != "40001" {
			t.Fatalf("the COMMIT of the transaction open at the failover: %v; want SQLSTATE 40001", err)
		}
		if st := commitTx.PgConn().TxStatus(); st != 'I' {
			t.Fatalf("after the lost transaction's COMMIT the session is in state %q, want 'I' (no transaction)", st)
		}
		if _, err := commitTx.Exec(qctx, "INSERT INTO t VALUES (7, 'after the failed commit')"); err != nil {
			t.Fatalf("the session after its failed COMMIT: %v", err)
		}
		want[6], want[7] = false, true
	}
	if jdbcGo != nil {
		out := jdbcGo()
		t.Logf("JdbcFailover.java:\n%s", out)
		for id, w := range map[int64]bool{100: false, 101: false, 102: true, 103: false, 104: true} {
			want[id] = w
		}
	}
	fmt.Fprintln(psqlIn, "INSERT INTO t VALUES (11, 'psql after'); SELECT 'app=' || current_setting('application_name');")
	psqlIn.Close()
	psqlDone := make(chan error, 1)
	go func() { psqlDone <- psql.Wait() }()
	var psqlErr error
	select {
	case psqlErr = <-psqlDone:
	case <-time.After(30 * time.Second):
		t.Fatalf("psql did not finish 30 s after the failover: %s", psqlOut.String())
	}
	if out := psqlOut.String(); !strings.Contains(out, "app=psql-survivor") || strings.Contains(out, "connection") {
		t.Fatalf("the psql session across the failover (exit %v) printed:\n%s\nwant its setting kept and no lost connection\n%s", psqlErr, out, c.logs())
	}
	have := ids(t, c.nodeDSN(primary))
	for id, want := range want {
		if have[id] != want {
			t.Errorf("row %d on the new primary: %v, want %v", id, have[id], want)
		}
	}
}

// startJdbcFailover starts JdbcFailover.java against the router and waits
// until its transactions are open; the function it returns tells it the
// failover is over and returns its output once it passed.
func startJdbcFailover(t *testing.T, router string) func() string {
	t.Helper()
	java, jar, dir := compileJava(t, "testdata/failover/JdbcFailover.java")
	u, err := url.Parse(router)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	jdbc := fmt.Sprintf("jdbc:postgresql://%s%s?sslmode=disable&user=%s&password=%s", u.Host, u.Path, url.QueryEscape(u.User.Username()), url.QueryEscape(pw))
	cmd := exec.Command(java, "-cp", jar+string(os.PathListSeparator)+dir, "JdbcFailover", jdbc)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW := io.Pipe()
	cmd.Stdout, cmd.Stderr = outW, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var out strings.Builder
	var mu sync.Mutex
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(outR)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if sc.Text() == "READY" {
				once.Do(func() { close(ready) })
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { err := cmd.Wait(); outW.Close(); exited <- err }()
	text := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("JdbcFailover.java ended before its transactions were open (%v):\n%s", err, text())
	case <-time.After(60 * time.Second):
		t.Fatalf("JdbcFailover.java did not open its transactions within 60 s:\n%s", text())
	}
	return func() string {
		t.Helper()
		fmt.Fprintln(in, "GO")
		in.Close()
		select {
		case err := <-exited:
			if err != nil || !strings.Contains(text(), "JdbcFailover: ok") {
				t.Fatalf("JdbcFailover.java after the failover (%v):\n%s", err, text())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("JdbcFailover.java did not finish within 60 s of the failover:\n%s", text())
		}
		return text()
	}
}

// steadyWriters runs retrying writers through the router until stop is
// called; stop returns every acknowledged id.
func steadyWriters(h *hsCluster, n int) (rw *retryingWriters, stop func() []int64) {
	rw = &retryingWriters{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rw.run(ctx, h.dsn(h.router), n); close(done) }()
	return rw, func() []int64 {
		cancel()
		<-done
		return rw.acked
	}
}

// commitsGoOn waits until the writers acknowledged more commits.
func commitsGoOn(t *testing.T, rw *retryingWriters, more int64, within time.Duration, what string) {
	t.Helper()
	from := rw.count.Load()
	for wait := time.Now().Add(within); rw.count.Load() < from+more; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("%s: only %d commits in %v", what, rw.count.Load()-from, within)
		}
	}
}

// TestCoordinatorFaults: with automatic failover, faults that must not
// fail over: the witness killed (it may be the Raft leader), the standby
// killed (the primary degrades, recorded in the map, and recovers when it
// returns), and every process killed at once and restarted (the same
// primary, nothing acknowledged lost).
func TestCoordinatorFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	h := writeHSFile(t, "sqlite", "2-safe-visible", "relaxed", "failover = \"automatic\"\nlease = \"600ms\"\nlease_grace = \"300ms\"\nack_timeout = \"1s\"\n", true)
	h.start("witness")
	h.start("n1")
	h.start("n2")
	h.start("router")
	createTestTable(t, h.dsn(h.router))
	rw, stop := steadyWriters(h, 2)
	commitsGoOn(t, rw, 50, 20*time.Second, "at start")

	h.kill("witness")
	commitsGoOn(t, rw, 200, 20*time.Second, "after the witness was killed")
	if role, epoch := nodeRole(t, h.admin["n1"]); role != "primary" || epoch != 1 {
		t.Fatalf("after the witness was killed n1 is %s of epoch %d: nothing should fail over", role, epoch)
	}
	h.start("witness")

	h.kill("n2")
	commitsGoOn(t, rw, 200, 20*time.Second, "after the standby was killed (degrade)")
	var st struct {
		Coord struct {
			Members []struct {
				ID  string `json:"id"`
				Ack *struct {
					Degraded bool `json:"degraded"`
				} `json:"ack"`
			} `json:"members"`
		} `json:"coordinator"`
		Repl struct {
			Degraded bool `json:"degraded"`
		} `json:"replication"`
	}
	marked := func() bool {
		for _, m := range st.Coord.Members {
			if m.ID == "n2" && m.Ack != nil {
				return m.Ack.Degraded
			}
		}
		return false
	}
	getStatus(t, h.admin["n1"], &st)
	if !st.Repl.Degraded || !marked() {
		t.Fatalf("the primary runs without its standby: degraded %v, marked degraded in the map %v; want both", st.Repl.Degraded, marked())
	}
	h.start("n2")
	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st.Coord.Members = nil
		getStatus(t, h.admin["n1"], &st)
		if !st.Repl.Degraded && !marked() {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("the standby came back, but after 30 s the primary is degraded %v, n2 marked degraded %v", st.Repl.Degraded, marked())
		}
	}
	commitsGoOn(t, rw, 50, 20*time.Second, "after the standby came back")
	acked := stop()

	// Everything at once, then everything again.
	for _, p := range []string{"router", "n1", "n2", "witness"} {
		h.kill(p)
	}
	for _, p := range []string{"witness", "n1", "n2", "router"} {
		h.start(p)
	}
	rw2, stop2 := steadyWriters(h, 2)
	commitsGoOn(t, rw2, 50, 30*time.Second, "after every process was restarted")
	acked = append(acked, stop2()...)
	r1, e1 := nodeRole(t, h.admin["n1"])
	r2, e2 := nodeRole(t, h.admin["n2"])
	if (r1 == "primary") == (r2 == "primary") {
		t.Fatalf("after a restart of everything: n1 %s (epoch %d), n2 %s (epoch %d); want exactly one primary", r1, e1, r2, e2)
	}
	primary := "n1"
	if r2 == "primary" {
		primary = "n2"
	}
	have := ids(t, h.dsn(h.nodes[primary]))
	lost := 0
	for _, id := range acked {
		if !have[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged commits missing on the primary %s", lost, len(acked), primary)
	}
	t.Logf("%d acknowledged commits through a witness kill, a standby kill and a restart of everything; primary %s; none lost", len(acked), primary)
}

// TestCoordinatedSwitchover: with automatic failover, `tandem switchover`
// and `tandem promote` go through the coordinator: the switchover loses
// nothing and sessions go on; promote is refused while the primary
// answers, and --force fences it first.
func TestCoordinatedSwitchover(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	h := writeHSFile(t, "sqlite", "2-safe-visible", "relaxed", "failover = \"automatic\"\nlease = \"600ms\"\nlease_grace = \"300ms\"\nack_timeout = \"1s\"\n", true)
	h.start("witness")
	h.start("n1")
	h.start("n2")
	h.start("router")
	createTestTable(t, h.dsn(h.router))
	rw, stop := steadyWriters(h, 2)
	commitsGoOn(t, rw, 50, 20*time.Second, "at start")
	out := h.tandem("switchover", "--to", "n2")
	if role, epoch := nodeRole(t, h.admin["n2"]); role != "primary" || epoch != 2 {
		t.Fatalf("after switchover n2 is %s of epoch %d\n%s", role, epoch, out)
	}
	commitsGoOn(t, rw, 50, 20*time.Second, "after the switchover")
	for wait := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if role, epoch := nodeRole(t, h.admin["n1"]); role == "standby" && epoch == 2 {
			break
		}
		if time.Now().After(wait) {
			t.Fatal("the old primary does not follow the new one 20 s after the switchover")
		}
	}
	// promote without --force while the primary answers: refused.
	cmd := exec.Command(tandemBin, "promote", "n1", "-c", h.file)
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "switchover") {
		t.Fatalf("promote while the primary answers: %v\n%s", err, b)
	}
	out = h.tandem("promote", "--force", "n1")
	if role, epoch := nodeRole(t, h.admin["n1"]); role != "primary" || epoch != 3 {
		t.Fatalf("after promote --force n1 is %s of epoch %d\n%s", role, epoch, out)
	}
	commitsGoOn(t, rw, 50, 20*time.Second, "after promote --force")
	acked := stop()
	have := ids(t, h.dsn(h.nodes["n1"]))
	lost := 0
	for _, id := range acked {
		if !have[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged commits lost through a switchover and a forced promote at 2-safe-visible", lost, len(acked))
	}
	t.Logf("%d acknowledged, 0 lost, %d failed statements (sessions moved)", len(acked), rw.errors.Load())
}

// signal sends sig to a process started by h.start; after SIGSTOP it
// waits until every thread of the process is stopped (a signal is
// delivered when each thread next runs, which on a loaded machine may be
// milliseconds later).
func (h *hsCluster) signal(name string, sig syscall.Signal) {
	h.mu.Lock()
	cmd := h.procs[name]
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if sig != syscall.SIGSTOP {
		return
	}
	for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait); time.Sleep(2 * time.Millisecond) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", cmd.Process.Pid))
		stopped := len(tasks) > 0
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if i := strings.LastIndexByte(string(b), ')'); err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
	}
	h.t.Errorf("%s not stopped 5 s after SIGSTOP", name)
}

// TestCommitInFlightResolved: a COMMIT in flight when the primary dies is
// answered from the new primary's history, not with 08007. The witness is
// stopped (SIGSTOP), so the primary cannot record a degrade, and its
// standby cannot acknowledge: the COMMIT waits, unanswered, until the
// primary is SIGKILLed.
//
//   - applied: the standby is stopped (SIGSTOP) after the writeset reached
//     its socket; continued, it is promoted with the transaction, and the
//     router answers the COMMIT with success.
//   - not applied: the standby was SIGKILLed before the COMMIT; restarted,
//     it is promoted without the transaction, and the router answers 40001
//     ("it did not take effect").
//
// Either way the session goes on.
func TestCommitInFlightResolved(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	for _, tc := range []struct {
		name              string
		applied, prepared bool
	}{
		{"applied", true, false},
		{"not applied", false, false},
		// pgjdbc's COMMIT: prepared once, then Bind, Execute, Sync with
		// no text; it was taken for a statement inside the transaction
		// and answered 40001 although it had committed.
		{"applied, prepared COMMIT", true, true},
	} {
		applied := tc.applied
		t.Run(tc.name, func(t *testing.T) {
			h := writeHSFile(t, "sqlite", "2-safe-visible", "relaxed", "failover = \"automatic\"\nlease = \"600ms\"\nlease_grace = \"300ms\"\nack_timeout = \"1s\"\n", true)
			h.start("witness")
			h.start("n1")
			h.start("n2")
			h.start("router")
			createTestTable(t, h.dsn(h.router))
			ctx := context.Background()
			c := connect(t, h.dsn(h.router))
			defer c.Close(ctx)
			// A first commit, so the new primary knows the session.
			if _, err := c.Exec(ctx, "INSERT INTO t VALUES (1, 'acknowledged')"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // the standby reports it
			if tc.prepared {
				if _, err := c.PgConn().Prepare(ctx, "jdbc_commit", "COMMIT", nil); err != nil {
					t.Fatal(err)
				}
			}
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO t VALUES (2, 'in flight')"); err != nil {
				t.Fatal(err)
			}
			h.signal("witness", syscall.SIGSTOP)
			defer h.signal("witness", syscall.SIGCONT)
			if applied {
				h.signal("n2", syscall.SIGSTOP)
				defer h.signal("n2", syscall.SIGCONT)
			} else {
				h.kill("n2")
			}
			commitErr := make(chan error, 1)
			go func() {
				cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
				defer cancel()
				if tc.prepared {
					commitErr <- c.PgConn().ExecPrepared(cctx, "jdbc_commit", nil, nil, nil).Read().Err
					return
				}
				commitErr <- tx.Commit(cctx)
			}()
			select {
			case err := <-commitErr:
				t.Fatalf("the COMMIT was answered (%v) with its standby and the witness gone\n%s", err, tailLog(h, "n1"))
			case <-time.After(1300 * time.Millisecond):
				// Past ack_timeout (1 s): it waits, unanswered, until
				// lease + grace + ack_timeout (1.9 s) would answer 08007.
			}
			h.kill("n1")
			h.signal("witness", syscall.SIGCONT)
			if applied {
				h.signal("n2", syscall.SIGCONT)
			} else {
				h.start("n2")
			}
			var cerr error
			select {
			case cerr = <-commitErr:
			case <-time.After(60 * time.Second):
				t.Fatalf("the COMMIT in flight got no answer 60 s after the failover\n%s", tailLog(h, "router"))
			}
			var pe *pgconn.PgError
			if applied && cerr != nil {
				t.Fatalf("the COMMIT in flight, applied on the new primary: %v; want success\n%s", cerr, tailLog(h, "router"))
			}
			if !applied && (!errors.As(cerr, &pe) || pe.Code != "40001" || !strings.Contains(pe.Message, "did not take effect")) {
				t.Fatalf("the COMMIT in flight, not on the new primary: %v; want 40001 saying it did not take effect\n%s", cerr, tailLog(h, "router"))
			}
			have := ids(t, h.dsn(h.nodes["n2"]))
			if !have[1] || have[2] != applied {
				t.Fatalf("on the new primary: row 1 %v (want true), row 2 %v (want %v)", have[1], have[2], applied)
			}
			qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			if _, err := c.Exec(qctx, "INSERT INTO t VALUES (3, 'after')"); err != nil {
				t.Fatalf("the session after its resolved COMMIT: %v", err)
			}
		})
	}
}

// notify sends NOTIFY tandem_jobs with payload from a session of its own.
func notify(t *testing.T, dsn, payload string) {
	t.Helper()
	ctx := context.Background()
	c := connect(t, dsn)
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "SELECT pg_notify('tandem_jobs', $1)", payload); err != nil {
		t.Fatalf("NOTIFY %s: %v", payload, err)
	}
}

// heard waits for an idle listener's notification with payload.
func heard(t *testing.T, c *pgx.Conn, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("the listener did not hear %q: %v", payload, err)
		}
		if n.Channel == "tandem_jobs" && n.Payload == payload {
			return
		}
	}
}
