package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// kill SIGKILLs node id's process (as tandem up started it).
func (s *smCluster) kill(id string) {
	s.t.Helper()
	for _, p := range s.Procs() {
		if p.Name == id {
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
				s.t.Fatal(err)
			}
			return
		}
	}
	s.t.Fatalf("no pid for %s", id)
}

// restart starts node id again with `tandem node`, logging to
// ID-restart.log in the test's directory (shown when the test fails).
func (s *smCluster) restart(id string) {
	s.t.Helper()
	logf, _ := os.Create(filepath.Join(s.dir, id+"-restart.log"))
	cmd := exec.Command(tandemBin, "node", "-c", s.File, "--id", id)
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if s.t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			s.t.Logf("%s's log after its restart:\n%s", id, b)
		}
	})
}

// mmBackends are the back ends the multi-master tests run on.
var mmBackends = []string{"sqlite", "postgres"}

// eachMMBackend runs test once per back end of mmBackends.
func eachMMBackend(t *testing.T, test func(t *testing.T, backend string)) {
	for _, be := range mmBackends {
		t.Run(be, func(t *testing.T) { test(t, be) })
	}
}

// upMultiMaster writes a multi-master cluster file of n SQLite nodes (all
// vote in the coordinator, which certifies) with the router in front, and
// starts it with `tandem up`.
func upMultiMaster(t *testing.T, backend string, n int, extra string) *smCluster {
	t.Helper()
	if backend == "postgres" {
		havePostgres(t)
	}
	dir := t.TempDir()
	// Runs after the cluster stopped (cleanups run last first): a node
	// that logged an internal error fails the test, and with
	// TANDEM_KEEP_LOGS set a failed test's cluster directory is kept.
	t.Cleanup(func() {
		logs, _ := filepath.Glob(filepath.Join(dir, "run", "logs", "*.log"))
		for _, f := range logs {
			b, _ := os.ReadFile(f)
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "internal error") {
					t.Errorf("%s: %.600s", filepath.Base(f), line)
				}
			}
		}
		if keep := os.Getenv("TANDEM_KEEP_LOGS"); keep != "" && t.Failed() {
			dst := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
			out, err := exec.Command("cp", "-a", dir, dst).CombinedOutput()
			t.Logf("cluster directory kept in %s %s%v", dst, out, err)
		}
	})
	s := &smCluster{t: t, dir: dir, nodes: map[string]string{}, admin: map[string]string{}}
	var b strings.Builder
	if os.Getenv("TANDEM_E2E_DEBUG") != "" {
		b.WriteString("log_level = \"debug\"\n")
	}
	fmt.Fprintf(&b, "cluster = \"mm\"\ndesign = \"multi-master\"\nrun_dir = %q\n%s\n", filepath.Join(dir, "run"), extra)
	s.radmin = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	fmt.Fprintf(&b, "[router]\nlisten = \"127.0.0.1:%d\"\nmetrics = %q\nhealth_interval = \"100ms\"\n", freePort(t), s.radmin)
	b.WriteString("[[users]]\nname = \"tandem\"\npassword = \"secret\"\n")
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("n%d", i)
		s.ids = append(s.ids, id)
		s.nodes[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		s.admin[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		fmt.Fprintf(&b, "[[nodes]]\nid = %q\nlisten = %q\nmetrics = %q\nraft_listen = \"127.0.0.1:%d\"\nbackend = %q\n",
			id, s.nodes[id], s.admin[id], freePort(t), backend)
		if backend == "postgres" {
			b.WriteString("[nodes.postgres]\nsettings = { fsync = \"off\", max_connections = \"50\" }\n")
		}
	}
	file := filepath.Join(dir, "mm.toml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Cluster = upFile(t, dir, file, filepath.Join(dir, "run"))
	return s
}

// mmStatus is a multi-master node's /status, the parts the tests read.
type mmStatus struct {
	MM *struct {
		Applied     uint64 `json:"applied_gsn"`
		Commits     uint64 `json:"commits"`
		Aborts      uint64 `json:"aborts"`
		EarlyAborts uint64 `json:"early_aborts"`
		// Batches of certified writesets applied, and the writesets in
		// them (the node's own commits are applied by their sessions).
		ApplyBatches    uint64 `json:"apply_batches"`
		ApplyWritesets  uint64 `json:"apply_batch_writesets"`
		ApplyBatchDelay string `json:"apply_batch_delay"`
		Certifier       struct {
			Last uint64 `json:"last_gsn"`
		} `json:"certifier"`
	} `json:"multi_master"`
	Coordinator *struct {
		Leader string `json:"leader"`
	} `json:"coordinator"`
}

func (s *smCluster) mmStatus(id string) (mmStatus, error) {
	var st mmStatus
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + s.admin[id] + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	if err == nil && st.MM == nil {
		err = errors.New("no multi_master in /status")
	}
	return st, err
}

// waitConverged waits until every node listed has applied the same GSN,
// the certifier's last, and it stayed so for a moment, and returns it.
// The moment matters once clients stopped: a client that gives up on a
// COMMIT in flight (its context ends, pgx closes the connection) leaves
// the node to finish it, so a writeset can still be certified and
// applied right after a first convergence (seen in TestMultiMasterBank:
// the nodes compared while the last writesets landed, identical in the
// end).
func (s *smCluster) waitConverged(ids []string, within time.Duration) uint64 {
	s.t.Helper()
	deadline := time.Now().Add(within)
	var last string
	var seen uint64
	var since time.Time
	for time.Now().Before(deadline) {
		var gsns []uint64
		ok := true
		var want uint64
		for _, id := range ids {
			st, err := s.mmStatus(id)
			if err != nil {
				ok, last = false, err.Error()
				break
			}
			gsns = append(gsns, st.MM.Applied)
			want = max(want, st.MM.Certifier.Last)
		}
		if ok {
			same := true
			for _, g := range gsns {
				same = same && g == want
			}
			switch {
			case !same:
			case want != seen || since.IsZero():
				seen, since = want, time.Now()
			case time.Since(since) >= 500*time.Millisecond:
				return want
			}
			last = fmt.Sprintf("applied %v, certified %d", gsns, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("the nodes did not converge within %s: %s", within, last)
	return 0
}

// setup runs statements on c (a table and its rows) and waits until every
// node has applied them.
func (s *smCluster) setup(ctx context.Context, c *pgx.Conn, stmts ...string) {
	s.t.Helper()
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			s.t.Fatalf("%s: %v", q, err)
		}
	}
	s.waitConverged(s.ids, 30*time.Second)
}

// acctSchema is the ten-account table several tests start from.
var acctSchema = []string{"CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL)", "INSERT INTO acct SELECT g, 100 FROM generate_series(1, 10) g"}

// dump is a table's rows in key order, as text.
func dump(t *testing.T, dsn, query string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, query, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, vals...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// sameEverywhere checks that every node holds the same rows for query.
func (s *smCluster) sameEverywhere(ids []string, query string) string {
	s.t.Helper()
	first := dump(s.t, s.dsn(s.nodes[ids[0]]), query)
	for _, id := range ids[1:] {
		if got := dump(s.t, s.dsn(s.nodes[id]), query); got != first {
			s.t.Fatalf("node %s differs from %s for %q:\n%s\n---\n%s", id, ids[0], query, got, first)
		}
	}
	return first
}

func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestMultiMasterFirstCommitterWins: two transactions on two nodes update
// the same row; the first to commit wins, the other gets 40001 naming the
// table and the key. Transactions on different rows both commit, and every
// node ends with the same rows.
func TestMultiMasterFirstCommitterWins(t *testing.T) {
	eachMMBackend(t, testMultiMasterFirstCommitterWins)
}

func testMultiMasterFirstCommitterWins(t *testing.T, backend string) {
	s := upMultiMaster(t, backend, 3, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c1 := connect(t, s.dsn(s.nodes["n1"]))
	defer c1.Close(ctx)
	c2 := connect(t, s.dsn(s.nodes["n2"]))
	defer c2.Close(ctx)
	s.setup(ctx, c1, acctSchema...)

	for round := 0; round < 3; round++ {
		// Same row: both run before either commits.
		t1, err := c1.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := t1.Exec(ctx, "UPDATE acct SET bal = bal + 1 WHERE id = 7"); err != nil {
			t.Fatal(err)
		}
		if err := t1.Commit(ctx); err != nil {
			t.Fatalf("round %d: the first committer: %v", round, err)
		}
		// t2's snapshot (n2 may not have applied t1 yet: wait until it
		// has, then start it before t3 commits on n1).
		s.waitConverged(s.ids, 20*time.Second)
		t2, err := c2.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := t2.Exec(ctx, "UPDATE acct SET bal = bal + 10 WHERE id = 7"); err != nil {
			t.Fatal(err)
		}
		// n1 commits the same row after t2's snapshot: first committer.
		if _, err := c1.Exec(ctx, "UPDATE acct SET bal = bal + 100 WHERE id = 7"); err != nil {
			t.Fatalf("round %d: autocommit update on n1 while n2's transaction is open: %v", round, err)
		}
		err = t2.Commit(ctx)
		if sqlstate(err) != "40001" {
			t.Fatalf("round %d: the second committer: %v; want SQLSTATE 40001", round, err)
		}
		// The key as the writeset carries it: 7 on SQLite, '7' on
		// PostgreSQL (whose writesets carry every value as text).
		if !strings.Contains(err.Error(), `"acct"`) || !(strings.Contains(err.Error(), "(7)") || strings.Contains(err.Error(), "('7')")) {
			t.Fatalf("round %d: the 40001 does not name the table and key: %v", round, err)
		}
	}
	// Different rows on different nodes, concurrently open: both commit.
	t1, _ := c1.Begin(ctx)
	t2, _ := c2.Begin(ctx)
	if _, err := t1.Exec(ctx, "UPDATE acct SET bal = bal - 5 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := t2.Exec(ctx, "UPDATE acct SET bal = bal + 5 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := t2.Commit(ctx); err != nil {
		t.Fatalf("a transaction on another row: %v", err)
	}
	s.waitConverged(s.ids, 20*time.Second)
	got := s.sameEverywhere(s.ids, "SELECT id, bal FROM acct ORDER BY id")
	if !strings.Contains(got, "7 403\n") || !strings.Contains(got, "1 95\n") || !strings.Contains(got, "2 105\n") {
		t.Fatalf("rows after the rounds:\n%s", got)
	}
	// A session reads its own write through the router, whichever node it
	// lands on (read consistency session, the default).
	r := connect(t, s.DSN)
	defer r.Close(ctx)
	for i := 0; i < 30; i++ {
		if _, err := r.Exec(ctx, "UPDATE acct SET bal = $1 WHERE id = 3", i); err != nil {
			t.Fatal(err)
		}
		var v int
		if err := r.QueryRow(ctx, "SELECT bal FROM acct WHERE id = 3").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != i {
			t.Fatalf("through the router, read %d after writing %d", v, i)
		}
	}
}

// TestMultiMasterLostUpdate: clients on every node increment a few
// counters by read-modify-write in transactions, retrying on 40001; every
// node's counters end equal to the acknowledged increments.
func TestMultiMasterLostUpdate(t *testing.T) { eachMMBackend(t, testMultiMasterLostUpdate) }

func testMultiMasterLostUpdate(t *testing.T, backend string) {
	s := upMultiMaster(t, backend, 3, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := connect(t, s.DSN)
	if _, err := c.Exec(ctx, "CREATE TABLE counters (id int PRIMARY KEY, v int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO counters SELECT g, 0 FROM generate_series(1, 4) g"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	s.waitConverged(s.ids, 20*time.Second)
	// The nodes apply with multi_master.apply_batch_delay, set at run time
	// (`tandem set`, admin token from the cluster file): applies wait for
	// more writesets, and nothing may be lost for it.
	if out, err := exec.Command(tandemBin, "set", "-c", s.File, "apply_batch_delay=10ms").CombinedOutput(); err != nil {
		t.Fatalf("tandem set apply_batch_delay=10ms: %v\n%s", err, out)
	}
	for _, bad := range []struct{ arg, env, want string }{
		{"apply_batch_delay=2s", "", "between 0 and 1s"},
		{"safeness=1-safe", "", "takes apply_batch_delay"},
		{"apply_batch_delay=5ms", "TANDEM_ADMIN_TOKEN=wrong", "401"},
	} {
		cmd := exec.Command(tandemBin, "set", "-c", s.File, bad.arg)
		if bad.env != "" {
			cmd.Env = append(os.Environ(), bad.env)
		}
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), bad.want) {
			t.Errorf("tandem set %s (%s): err %v, output %s; want a failure saying %q", bad.arg, bad.env, err, out, bad.want)
		}
	}
	for _, id := range s.ids {
		if st, err := s.mmStatus(id); err != nil || st.MM.ApplyBatchDelay != "10ms" {
			t.Fatalf("%s: apply_batch_delay in /status %+v (%v), want 10ms", id, st.MM, err)
		}
	}
	var acked [5]atomic.Int64
	var aborts atomic.Int64
	var wg sync.WaitGroup
	for i, id := range s.ids {
		for k := 0; k < 3; k++ {
			wg.Add(1)
			go func(seed int64, dsn string) {
				defer wg.Done()
				rng := rand.New(rand.NewSource(seed))
				conn, err := pgx.Connect(ctx, dsn)
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close(context.Background())
				for n := 0; n < 40; n++ {
					ctr := 1 + rng.Intn(4)
					for {
						err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
							var v int
							if err := tx.QueryRow(ctx, "SELECT v FROM counters WHERE id = $1", ctr).Scan(&v); err != nil {
								return err
							}
							_, err := tx.Exec(ctx, "UPDATE counters SET v = $1 WHERE id = $2", v+1, ctr)
							return err
						})
						if err == nil {
							acked[ctr].Add(1)
							break
						}
						if sqlstate(err) != "40001" {
							t.Errorf("increment: %v", err)
							return
						}
						aborts.Add(1)
					}
				}
			}(int64(i*10+k), s.dsn(s.nodes[id]))
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	s.waitConverged(s.ids, 30*time.Second)
	var want strings.Builder
	for i := 1; i <= 4; i++ {
		fmt.Fprintln(&want, i, acked[i].Load())
	}
	got := s.sameEverywhere(s.ids, "SELECT id, v FROM counters ORDER BY id")
	if got != want.String() {
		t.Fatalf("counters:\n%s\nacknowledged increments:\n%s", got, want.String())
	}
	t.Logf("360 increments acknowledged, %d aborts (40001) retried", aborts.Load())
	if aborts.Load() == 0 {
		t.Fatal("no conflict at all among 9 clients on 4 counters: the test did not test anything")
	}
	// Each node applied at least every other node's commits, in batches
	// (its /status counters, which bench scaleout divides).
	sts := map[string]mmStatus{}
	for _, id := range s.ids {
		st, err := s.mmStatus(id)
		if err != nil {
			t.Fatal(err)
		}
		sts[id] = st
	}
	for _, id := range s.ids {
		var others uint64
		for _, o := range s.ids {
			if o != id {
				others += sts[o].MM.Commits
			}
		}
		st := sts[id].MM
		if st.ApplyWritesets < others || st.ApplyBatches == 0 || st.ApplyBatches > st.ApplyWritesets {
			t.Errorf("%s applied %d writesets in %d batches; the other nodes committed %d", id, st.ApplyWritesets, st.ApplyBatches, others)
		}
	}
}

// TestMultiMasterSessionStaysOnNode: through the router (least-connected,
// the default), a session's transactions stay on the node of its last
// one once every node is ready for it, so what it left there is found:
// a WITH HOLD cursor declared in autocommit is fetched from in twenty
// later autocommit statements. Balanced per transaction (the router once
// never recorded a multi-master session's node), the fetches went round
// the nodes that had applied the session's commit and one of them
// answered 34000.
func TestMultiMasterSessionStaysOnNode(t *testing.T) {
	s := upMultiMaster(t, "sqlite", 3, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := connect(t, s.DSN)
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE stay (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO stay SELECT g FROM generate_series(1, 100) g"); err != nil {
		t.Fatal(err)
	}
	// Every node applies the commit and the router's probes (every
	// 100 ms here) learn it: every node is ready for the session.
	s.waitConverged(s.ids, 20*time.Second)
	time.Sleep(500 * time.Millisecond)
	if _, err := c.Exec(ctx, "DECLARE held CURSOR WITH HOLD FOR SELECT id FROM stay ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	next := 1
	for i := 0; i < 20; i++ {
		rows, err := c.Query(ctx, "FETCH 5 FROM held")
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		for rows.Next() {
			var id int
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			if id != next {
				t.Fatalf("fetch %d: row %d, want %d", i, id, next)
			}
			next++
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("fetch %d (rows %d.. of the cursor): %v", i, next, err)
		}
	}
	if _, err := c.Exec(ctx, "CLOSE held"); err != nil {
		t.Fatal(err)
	}
	if next != 101 {
		t.Fatalf("fetched %d rows, want 100", next-1)
	}
}

// TestMultiMasterWriteSkew: GSI is not serializable. Two doctors are on
// call; two transactions on two nodes each check that the other is on
// call and take themselves off: both commit (write skew). Writing a common
// row in both (materializing the conflict) makes one of them abort.
func TestMultiMasterWriteSkew(t *testing.T) { eachMMBackend(t, testMultiMasterWriteSkew) }

func testMultiMasterWriteSkew(t *testing.T, backend string) {
	s := upMultiMaster(t, backend, 3, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c1 := connect(t, s.dsn(s.nodes["n1"]))
	defer c1.Close(ctx)
	c2 := connect(t, s.dsn(s.nodes["n2"]))
	defer c2.Close(ctx)
	s.setup(ctx, c1,
		"CREATE TABLE doctors (name text PRIMARY KEY, on_call boolean NOT NULL)",
		"CREATE TABLE shifts (id int PRIMARY KEY, version int NOT NULL)",
		"INSERT INTO doctors VALUES ('alice', true), ('bob', true)",
		"INSERT INTO shifts VALUES (1, 0)")
	offCall := func(tx pgx.Tx, me string, guard bool) error {
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM doctors WHERE on_call").Scan(&n); err != nil {
			return err
		}
		if n < 2 {
			return fmt.Errorf("only %d on call", n)
		}
		if guard {
			if _, err := tx.Exec(ctx, "UPDATE shifts SET version = version + 1 WHERE id = 1"); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, "UPDATE doctors SET on_call = false WHERE name = $1", me)
		return err
	}
	for _, guard := range []bool{false, true} {
		t1, _ := c1.Begin(ctx)
		t2, _ := c2.Begin(ctx)
		if err := offCall(t1, "alice", guard); err != nil {
			t.Fatal(err)
		}
		if err := offCall(t2, "bob", guard); err != nil {
			t.Fatal(err)
		}
		e1, e2 := t1.Commit(ctx), t2.Commit(ctx)
		s.waitConverged(s.ids, 20*time.Second)
		var on int
		if err := c1.QueryRow(ctx, "SELECT count(*) FROM doctors WHERE on_call").Scan(&on); err != nil {
			t.Fatal(err)
		}
		if !guard {
			if e1 != nil || e2 != nil || on != 0 {
				t.Fatalf("without a common write: commits %v / %v, %d on call; GSI allows write skew: both commit, nobody is on call", e1, e2, on)
			}
			t.Log("write skew observed: both transactions committed, nobody is on call")
			if _, err := c1.Exec(ctx, "UPDATE doctors SET on_call = true"); err != nil {
				t.Fatal(err)
			}
			s.waitConverged(s.ids, 20*time.Second)
			continue
		}
		if e1 != nil || sqlstate(e2) != "40001" || on != 1 {
			t.Fatalf("with the common write: commits %v / %v, %d on call; want the first to commit, the second 40001, one on call", e1, e2, on)
		}
	}
}

// bankDSNs are the direct addresses of every node and the router's.
func (s *smCluster) bankTargets() []string {
	out := []string{s.DSN}
	for _, id := range s.ids {
		out = append(out, s.dsn(s.nodes[id]))
	}
	return out
}

// TestMultiMasterBank: concurrent transfers between accounts through the
// router and every node while a reader on each node checks that each
// snapshot's total is constant; a node is SIGKILLed and restarted midway.
// Zero violations; every node ends identical, and the certifier's leader
// can be anyone (the next test kills it on purpose).
func TestMultiMasterBank(t *testing.T) { eachMMBackend(t, testMultiMasterBank) }

func testMultiMasterBank(t *testing.T, backend string) {
	s := upMultiMaster(t, backend, 3, "")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const accounts, total = 20, 20 * 1000
	c := connect(t, s.DSN)
	if _, err := c.Exec(ctx, "CREATE TABLE bank (id int PRIMARY KEY, bal int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, fmt.Sprintf("INSERT INTO bank SELECT g, 1000 FROM generate_series(1, %d) g", accounts)); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	s.waitConverged(s.ids, 20*time.Second)

	run, stop := context.WithCancel(ctx)
	var transfers, aborts, lost, checks atomic.Int64
	var violations atomic.Int64
	var wg sync.WaitGroup
	for i, dsn := range s.bankTargets() {
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func(seed int64, dsn string) {
				defer wg.Done()
				rng := rand.New(rand.NewSource(seed))
				var conn *pgx.Conn
				defer func() {
					if conn != nil {
						conn.Close(context.Background())
					}
				}()
				for run.Err() == nil {
					if conn == nil {
						var err error
						if conn, err = pgx.Connect(run, dsn); err != nil {
							conn = nil
							time.Sleep(50 * time.Millisecond)
							continue
						}
					}
					from, to := 1+rng.Intn(accounts), 1+rng.Intn(accounts)
					if from == to {
						continue
					}
					amt := 1 + rng.Intn(50)
					err := pgx.BeginFunc(run, conn, func(tx pgx.Tx) error {
						if _, err := tx.Exec(run, "UPDATE bank SET bal = bal - $1 WHERE id = $2", amt, from); err != nil {
							return err
						}
						_, err := tx.Exec(run, "UPDATE bank SET bal = bal + $1 WHERE id = $2", amt, to)
						return err
					})
					switch {
					case err == nil:
						transfers.Add(1)
					case sqlstate(err) == "40001":
						aborts.Add(1)
					default:
						if run.Err() == nil {
							lost.Add(1) // the node died under it: reconnect
						}
						conn.Close(context.Background())
						conn = nil
					}
				}
			}(int64(i*7+k), dsn)
		}
	}
	for _, id := range s.ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			for run.Err() == nil {
				conn, err := pgx.Connect(run, s.dsn(s.nodes[id]))
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				for run.Err() == nil {
					var sum int64
					err := pgx.BeginTxFunc(run, conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
						var a, b int64
						if err := tx.QueryRow(run, "SELECT sum(bal) FROM bank WHERE id <= 10").Scan(&a); err != nil {
							return err
						}
						if err := tx.QueryRow(run, "SELECT sum(bal) FROM bank WHERE id > 10").Scan(&b); err != nil {
							return err
						}
						sum = a + b
						return nil
					})
					if err != nil {
						break
					}
					checks.Add(1)
					if sum != total {
						violations.Add(1)
						t.Errorf("node %s: a snapshot's total is %d, want %d", id, sum, total)
					}
				}
				conn.Close(context.Background())
			}
		}(id)
	}
	time.Sleep(5 * time.Second)
	// SIGKILL n3 under load, and restart it.
	before := transfers.Load()
	s.kill("n3")
	time.Sleep(3 * time.Second)
	s.restart("n3")
	time.Sleep(8 * time.Second)
	stop()
	wg.Wait()
	if transfers.Load() <= before {
		t.Fatalf("no transfer committed after n3 was killed (%d before)", before)
	}
	s.waitConverged(s.ids, 60*time.Second)
	got := s.sameEverywhere(s.ids, "SELECT id, bal FROM bank ORDER BY id")
	var sum int
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		var id, bal int
		fmt.Sscan(line, &id, &bal)
		sum += bal
	}
	if sum != total {
		t.Fatalf("final total %d, want %d", sum, total)
	}
	t.Logf("%d transfers, %d aborts (40001), %d lost to the kill, %d snapshot checks, %d violations", transfers.Load(), aborts.Load(), lost.Load(), checks.Load(), violations.Load())
	if checks.Load() < 10 {
		t.Fatalf("only %d snapshot checks ran", checks.Load())
	}
}

// TestMultiMasterCertifierLeaderKill: the node that leads the coordinator
// (and so the certifier) is SIGKILLed under load: Raft elects another,
// no certified writeset is lost or applied twice (each acknowledged insert
// is on every node exactly once, and nothing else is), and every node
// ends identical once the killed node is back.
func TestMultiMasterCertifierLeaderKill(t *testing.T) {
	eachMMBackend(t, testMultiMasterCertifierLeaderKill)
}

func testMultiMasterCertifierLeaderKill(t *testing.T, backend string) {
	s := upMultiMaster(t, backend, 3, "")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := connect(t, s.DSN)
	if _, err := c.Exec(ctx, "CREATE TABLE t (id bigint PRIMARY KEY, who text)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	s.waitConverged(s.ids, 20*time.Second)
	var leader string
	for deadline := time.Now().Add(20 * time.Second); leader == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st, err := s.mmStatus("n1"); err == nil && st.Coordinator != nil {
			leader = st.Coordinator.Leader
		}
	}
	if _, ok := s.nodes[leader]; !ok {
		t.Fatalf("no node leads the coordinator (leader %q)", leader)
	}
	var others []string
	for _, id := range s.ids {
		if id != leader {
			others = append(others, id)
		}
	}
	// Writers on the two other nodes directly (and through the router).
	rw := &retryingWriters{}
	run, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, dsn := range []string{s.dsn(s.nodes[others[0]]), s.dsn(s.nodes[others[1]]), s.DSN} {
		wg.Add(1)
		go func(dsn string) { defer wg.Done(); rw.run(run, dsn, 2) }(dsn)
	}
	time.Sleep(3 * time.Second)
	before := rw.count.Load()
	rw.killedAt.Store(time.Now().UnixNano())
	s.kill(leader)
	t.Logf("killed the certifier's leader %s after %d commits", leader, before)
	time.Sleep(6 * time.Second)
	if rw.count.Load() <= before {
		t.Fatalf("no commit after the leader %s was killed", leader)
	}
	s.restart(leader)
	time.Sleep(3 * time.Second)
	stop()
	wg.Wait()
	acked, have := s.ackedOnceEverywhere(rw)
	// Unacknowledged ones may be there (their answer was lost with the
	// connection), but nothing twice: ids are primary keys, so a double
	// apply would have failed the apply and stalled the nodes.
	t.Logf("%d acknowledged inserts all on every node exactly once; %d rows in all; %d errors seen by writers", len(acked), len(have), rw.errors.Load())
}

// ackedOnceEverywhere waits for every node to apply everything, checks
// that table t (id bigint) is the same on every node and holds each of
// rw's acknowledged ids exactly once, and returns those ids and how often
// each id is there.
func (s *smCluster) ackedOnceEverywhere(rw *retryingWriters) ([]int64, map[int64]int) {
	s.t.Helper()
	s.waitConverged(s.ids, 60*time.Second)
	got := s.sameEverywhere(s.ids, "SELECT id FROM t ORDER BY id")
	have := map[int64]int{}
	for _, line := range strings.Fields(got) {
		var id int64
		fmt.Sscan(line, &id)
		have[id]++
	}
	rw.mu.Lock()
	acked := append([]int64(nil), rw.acked...)
	rw.mu.Unlock()
	sort.Slice(acked, func(i, j int) bool { return acked[i] < acked[j] })
	var missing []int64
	for _, id := range acked {
		if have[id] != 1 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		s.t.Fatalf("%d of %d acknowledged inserts are not on the nodes exactly once: %v", len(missing), len(acked), missing[:min(10, len(missing))])
	}
	return acked, have
}

// TestMultiMasterEarlyAbort: a session holds an uncommitted update on n2
// and goes idle; n1 commits the same row. n2 must apply that certified
// writeset without waiting for the idle session (no hidden stall behind a
// local transaction): the session's transaction is aborted (40001) within
// apply_conflict_wait and n2 converges at once, long before the idle
// transaction timeout would have ended it.
func TestMultiMasterEarlyAbort(t *testing.T) { eachMMBackend(t, testMultiMasterEarlyAbort) }

func testMultiMasterEarlyAbort(t *testing.T, backend string) {
	s := upMultiMaster(t, backend, 3, "[multi_master]\napply_conflict_wait = \"300ms\"\n[limits]\nidle_in_transaction_session_timeout = \"120s\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c1 := connect(t, s.dsn(s.nodes["n1"]))
	defer c1.Close(ctx)
	s.setup(ctx, c1, acctSchema...)
	c2 := connect(t, s.dsn(s.nodes["n2"]))
	defer c2.Close(ctx)
	tx, err := c2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE acct SET bal = 0 WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c1.Exec(ctx, "UPDATE acct SET bal = 500 WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	s.waitConverged(s.ids, 10*time.Second)
	took := time.Since(start)
	_, err = tx.Exec(ctx, "UPDATE acct SET bal = 1 WHERE id = 8")
	if err == nil {
		err = tx.Commit(ctx)
	}
	if sqlstate(err) != "40001" {
		t.Fatalf("the idle session's transaction after n2 applied a conflicting commit: %v; want 40001", err)
	}
	t.Logf("n2 applied n1's commit %s after it, past the idle session; the session got: %v", took.Round(time.Millisecond), err)
	got := s.sameEverywhere(s.ids, "SELECT id, bal FROM acct WHERE id IN (7, 8) ORDER BY id")
	if got != "7 500\n8 100\n" {
		t.Fatalf("rows 7 and 8:\n%s", got)
	}
	st, err := s.mmStatus("n2")
	if err != nil || st.MM.EarlyAborts == 0 {
		t.Fatalf("n2 reports no early abort: %+v %v", st.MM, err)
	}
	if backend != "sqlite" {
		return
	}
	// The same while the session is in the middle of a COPY FROM STDIN
	// (pgbench -i's load): it holds the write lock while n1 commits a row
	// it did not touch, and gets the 40001 that says why after
	// apply_conflict_wait, not the "i/o timeout" of the read it was in.
	c3 := connect(t, s.dsn(s.nodes["n2"]))
	defer c3.Close(ctx)
	tx3, err := c3.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent, release := make(chan struct{}), make(chan struct{})
	copied := make(chan error, 1)
	go func() {
		row := 0
		_, err := tx3.CopyFrom(ctx, pgx.Identifier{"acct"}, []string{"id", "bal"}, pgx.CopyFromFunc(func() ([]any, error) {
			row++
			switch row {
			case 1:
				return []any{1001, 1}, nil
			case 2:
				// Hold the stream open; pgx reads the server's error
				// meanwhile but returns it once this source returns.
				close(sent)
				// Long enough for a slow certification on a loaded
				// machine (n2 applied a commit 929 ms after it in a CI
				// run); without the abort the COPY ends here, and the
				// test fails.
				select {
				case <-release:
				case <-time.After(15 * time.Second):
				}
			}
			return nil, nil
		}))
		copied <- err
	}()
	<-sent
	// pgx runs the source as soon as it sent the COPY, before n2 read it:
	// wait until n2 runs it (pg_stat_activity), and a moment more for its
	// write lock, or n1's commit may be applied before the COPY takes it
	// (a CI run on a loaded machine: the COPY then ended without conflict).
	mon := connect(t, s.dsn(s.nodes["n2"]))
	defer mon.Close(ctx)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := mon.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND lower(query) LIKE 'copy%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the COPY never ran on n2 (pg_stat_activity)")
		}
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := c1.Exec(ctx, "UPDATE acct SET bal = 600 WHERE id = 9"); err != nil {
		t.Fatal(err)
	}
	var copyErr error
	select {
	case copyErr = <-copied:
	case <-time.After(20 * time.Second):
		t.Fatal("the COPY holding n2's write lock was not ended 20 s after n1's commit (apply_conflict_wait 300ms)")
	}
	close(release)
	if sqlstate(copyErr) != "40001" || !strings.Contains(copyErr.Error(), "conflict with replication") {
		t.Fatalf("a COPY holding the write lock past apply_conflict_wait got %v; want 40001 naming the conflict with replication", copyErr)
	}
	t.Logf("the COPY got: %v", copyErr)
	if got := s.sameEverywhere(s.ids, "SELECT count(*) FROM acct WHERE id = 1001 OR (id = 9 AND bal = 600)"); got != "1\n" {
		t.Fatalf("after the COPY's abort: %q rows, want n1's update only", got)
	}
}

// TestMultiMasterEarlyAbortRouted: the early abort of
// TestMultiMasterEarlyAbort through the router. The node ends the idle
// session's transaction (SQLite: a FATAL 40001, and the connection) while
// the client sends nothing; the client's next message is its COMMIT. The
// router must not answer that COMMIT with success: libpq (psql,
// psycopg2's commit()) reads the FATAL as an asynchronous notice and
// then the CommandComplete, so a COMMIT tag after it reports a rolled
// back transaction as committed. The test speaks the protocol itself
// (pgx would stop at the FATAL whatever followed it).
func TestMultiMasterEarlyAbortRouted(t *testing.T) {
	eachMMBackend(t, testMultiMasterEarlyAbortRouted)
}

func testMultiMasterEarlyAbortRouted(t *testing.T, backend string) {
	s := upMultiMaster(t, backend, 3, "[multi_master]\napply_conflict_wait = \"300ms\"\n[limits]\nidle_in_transaction_session_timeout = \"120s\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := connect(t, s.DSN)
	defer c.Close(ctx)
	s.setup(ctx, c, acctSchema...)
	s.waitConverged(s.ids, 20*time.Second)

	a, err := pgconn.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Exec(ctx, "BEGIN; UPDATE acct SET bal = 0 WHERE id = 7; SHOW tandem.node").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	node := string(res[2].Rows[0][0])
	var other string
	for _, id := range s.ids {
		if id != node {
			other = id
			break
		}
	}
	hj, err := a.Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer hj.Conn.Close()
	o := connect(t, s.dsn(s.nodes[other]))
	defer o.Close(ctx)
	if _, err := o.Exec(ctx, "UPDATE acct SET bal = 500 WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	// The node serving the session applies the commit past it (early abort).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := s.mmStatus(node)
		if err == nil && st.MM.EarlyAborts > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not abort the routed session's transaction 20 s after %s's conflicting commit: %+v %v", node, other, st.MM, err)
		}
	}
	s.waitConverged(s.ids, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // the node's FATAL and end reach the router

	got, code, fatal, ended := commitRaw(t, hj)
	t.Logf("session on %s, conflicting commit on %s; the COMMIT got %v, connection ended %v", node, other, got, ended)
	if code != "40001" {
		t.Fatalf("the session's transaction rolled back on %s; the client was told %v, want 40001", node, got)
	}
	if fatal && !ended {
		t.Fatalf("after the FATAL the router kept the session open: %v", got)
	}
	if got := s.sameEverywhere(s.ids, "SELECT bal FROM acct WHERE id = 7"); got != "500\n" {
		t.Fatalf("row 7: %q, want %s's 500", got, other)
	}
}

// commitRaw sends COMMIT on a hijacked connection whose transaction the
// server ended, and reads the answer as libpq would see it: the messages
// (severity and SQLSTATE of errors, command tags, ReadyForQuery), the
// first error's SQLSTATE, whether an error was FATAL, and whether the
// connection ended. A COMMIT tag fails the test: libpq reports the last
// result, so psql and psycopg2 would read success.
func commitRaw(t *testing.T, hj *pgconn.HijackedConn) (got []string, code string, fatal, ended bool) {
	t.Helper()
	fe := hj.Frontend
	fe.Send(&pgproto3.Query{String: "COMMIT"})
	_ = fe.Flush() // a write error: the router closed the connection already
	_ = hj.Conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		msg, err := fe.Receive()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("no answer to the COMMIT in 15 s (messages %v)", got)
			}
			return got, code, fatal, true
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			got = append(got, m.Severity+" "+m.Code)
			if code == "" {
				code = m.Code
			}
			fatal = fatal || m.Severity == "FATAL"
		case *pgproto3.CommandComplete:
			got = append(got, "tag "+string(m.CommandTag))
			if string(m.CommandTag) == "COMMIT" {
				t.Fatalf("the COMMIT of a transaction the server ended was answered %v: a client reads success", got)
			}
		case *pgproto3.ReadyForQuery:
			return append(got, "ready "+string(m.TxStatus)), code, fatal, false
		case *pgproto3.NoticeResponse:
		default:
			got = append(got, fmt.Sprintf("%T", m))
		}
	}
}

// TestMultiMasterUniqueConflict: two nodes insert different primary keys
// with the same value of a UNIQUE column, both before either commits. The
// certifier sees no common key and commits both; the second fails to
// apply on every node alike (unique violation), so every node skips it
// and its client gets 23505 instead of a success. Nodes stay identical.
func TestMultiMasterUniqueConflict(t *testing.T) { eachMMBackend(t, testMultiMasterUniqueConflict) }

func testMultiMasterUniqueConflict(t *testing.T, backend string) {
	s := upMultiMaster(t, backend, 3, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c1 := connect(t, s.dsn(s.nodes["n1"]))
	defer c1.Close(ctx)
	c2 := connect(t, s.dsn(s.nodes["n2"]))
	defer c2.Close(ctx)
	if _, err := c1.Exec(ctx, "CREATE TABLE users (id int PRIMARY KEY, email text UNIQUE NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	s.waitConverged(s.ids, 20*time.Second)
	t1, _ := c1.Begin(ctx)
	t2, _ := c2.Begin(ctx)
	// Both insert before either commits, so neither snapshot has the
	// other's row.
	if _, err := t1.Exec(ctx, "INSERT INTO users VALUES (1, 'a@example.com')"); err != nil {
		t.Fatal(err)
	}
	if _, err := t2.Exec(ctx, "INSERT INTO users VALUES (2, 'a@example.com')"); err != nil {
		t.Fatal(err)
	}
	e1 := t1.Commit(ctx)
	if e1 != nil {
		t.Fatalf("the first insert: %v", e1)
	}
	// t2 is open on n2, holding up t1's apply there (SQLite's write lock,
	// or PostgreSQL's wait on t2's uncommitted unique key): it commits at
	// once (23505 at the apply), unless n2 ended it first (40001), which is
	// also correct.
	e2 := t2.Commit(ctx)
	if sqlstate(e2) != "23505" && sqlstate(e2) != "40001" {
		t.Fatalf("the second insert of the same email: %v; want 23505 (unique violation at apply) or 40001", e2)
	}
	t.Logf("the second committer got: %v", e2)
	s.waitConverged(s.ids, 20*time.Second)
	if got := s.sameEverywhere(s.ids, "SELECT id, email FROM users ORDER BY id"); got != "1 a@example.com\n" {
		t.Fatalf("users:\n%s", got)
	}
	// The cluster goes on: later writes apply everywhere.
	if _, err := c2.Exec(ctx, "INSERT INTO users VALUES (3, 'b@example.com')"); err != nil {
		t.Fatal(err)
	}
	s.waitConverged(s.ids, 20*time.Second)
	s.sameEverywhere(s.ids, "SELECT id, email FROM users ORDER BY id")
}

// TestMultiMasterReseed: a node down for longer than the certifier's
// window (50 writesets here) cannot catch up from the log; restarted, it
// re-seeds itself from a peer's snapshot and follows from there, ending
// identical to the others.
func TestMultiMasterReseed(t *testing.T) { eachMMBackend(t, testMultiMasterReseed) }

func testMultiMasterReseed(t *testing.T, backend string) {
	// Raft compacts its log soon after 1,024 entries (it checks every
	// 120 s by default), so n3 cannot catch up by replaying it.
	t.Setenv("TANDEM_TEST_RAFT_SNAPSHOT_INTERVAL", "300ms")
	s := upMultiMaster(t, backend, 3, "[multi_master]\nwindow_writesets = 50\n")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := connect(t, s.dsn(s.nodes["n1"]))
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	s.waitConverged(s.ids, 20*time.Second)
	s.kill("n3")
	// More commits than the coordinator keeps in its Raft log (1,024
	// trailing entries past a snapshot every 1,024): n3 cannot replay
	// them from the log either, only from a snapshot of the certifier,
	// whose window (50) starts past n3's GSN.
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cw := connect(t, s.dsn(s.nodes["n1"]))
			defer cw.Close(ctx)
			for i := w*700 + 1; i <= (w+1)*700; i++ {
				// A window of 50 is short: under load a snapshot can fall
				// out of it (40001, too old); retry as a client should.
				for {
					_, err := cw.Exec(ctx, "INSERT INTO t VALUES ($1, 'x')", i)
					if err == nil {
						break
					}
					if sqlstate(err) != "40001" {
						t.Error(err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	time.Sleep(2 * time.Second) // a Raft snapshot and compaction on n1 and n2
	s.restart("n3")
	s.waitConverged(s.ids, 60*time.Second)
	// It takes writes again, and they reach everyone.
	c3 := connect(t, s.dsn(s.nodes["n3"]))
	defer c3.Close(ctx)
	if _, err := c3.Exec(ctx, "INSERT INTO t VALUES (2801, 'from n3')"); err != nil {
		t.Fatal(err)
	}
	s.waitConverged(s.ids, 20*time.Second)
	got := s.sameEverywhere(s.ids, "SELECT count(*), max(id) FROM t")
	if got != "2801 2801\n" {
		t.Fatalf("after the re-seed: %s", got)
	}
	b, _ := os.ReadFile(filepath.Join(s.dir, "n3-restart.log"))
	if !strings.Contains(string(b), "re-seeded from a peer") {
		t.Fatalf("n3 did not say it re-seeded:\n%s", b)
	}
}

func TestMultiMasterSequences(t *testing.T) { eachMMBackend(t, testMultiMasterSequences) }

// testMultiMasterSequences: every node draws serial and identity values
// for its own inserts; after applying the others' rows its sequences move
// past them (the fence after each applied batch), so inserts taking turns
// on the nodes never reuse a value, also for a table created while the
// cluster runs (the fence's list of sequences is read again after DDL).
func testMultiMasterSequences(t *testing.T, backend string) {
	s := upMultiMaster(t, backend, 3, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := connect(t, s.dsn(s.nodes["n1"]))
	for _, q := range []string{
		"CREATE TABLE items (id bigserial PRIMARY KEY, origin text NOT NULL)",
		"CREATE TABLE tags (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, origin text NOT NULL)",
		"CREATE TABLE plain (k int PRIMARY KEY, origin text NOT NULL)",
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c.Close(ctx)
	conns := map[string]*pgx.Conn{}
	for _, id := range s.ids {
		conns[id] = connect(t, s.dsn(s.nodes[id]))
	}
	insert := func(round int, tables ...string) {
		t.Helper()
		for _, id := range s.ids {
			s.waitConverged(s.ids, 20*time.Second)
			for _, tbl := range tables {
				var err error
				if tbl == "plain" {
					_, err = conns[id].Exec(ctx, "INSERT INTO plain VALUES ($1, $2)", round*10+len(id)+int(id[1]-'0'), id)
				} else {
					_, err = conns[id].Exec(ctx, "INSERT INTO "+tbl+" (origin) VALUES ($1), ($1)", id)
				}
				if err != nil {
					t.Fatalf("round %d: insert into %s on %s after applying the others' rows: %v", round, tbl, id, err)
				}
			}
		}
	}
	for round := 1; round <= 3; round++ {
		insert(round, "items", "tags", "plain")
	}
	// A table made while the cluster runs: its sequence is fenced too.
	// (A DDL writeset conflicts with every concurrent write, so it waits
	// until n2 has the last round's rows, and is retried as a client
	// retries 40001.)
	s.waitConverged(s.ids, 20*time.Second)
	for try := 0; ; try++ {
		_, err := conns["n2"].Exec(ctx, "CREATE TABLE later (id serial PRIMARY KEY, origin text NOT NULL)")
		if err == nil {
			break
		}
		if sqlstate(err) != "40001" || try == 5 {
			t.Fatalf("CREATE TABLE later on n2: %v", err)
		}
	}
	for round := 4; round <= 5; round++ {
		insert(round, "later", "items")
	}
	s.waitConverged(s.ids, 30*time.Second)
	for tbl, want := range map[string]int{"items": 30, "tags": 18, "later": 12} {
		// Interleaved (multi_master.sequence_stride, by default the number
		// of nodes): n1 draws 1, 4, 7 ..., n2 2, 5, 8 ..., n3 3, 6, 9 ...
		got := s.sameEverywhere(s.ids, "SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE id % 3 <> substr(origin, 2)::int % 3) FROM "+tbl)
		if w := fmt.Sprintf("%d %d 0\n", want, want); got != w {
			t.Errorf("%s: count, distinct ids, ids off their node's residue = %q, want %q (every value drawn once, each node's own): %s", tbl, got, w,
				s.sameEverywhere(s.ids, "SELECT string_agg(id || origin, ' ' ORDER BY id) FROM "+tbl))
		}
	}
	// A client's setval (bench load's, a migration's) puts n1's sequence
	// where it says, off n1's residue: n1's next draw is its own next
	// value (1001 is 2 modulo 3: without that n1 would draw 1002, n3's
	// value, on SQLite, and 1004, n2's, on PostgreSQL).
	if _, err := conns["n1"].Exec(ctx, "SELECT setval('items_id_seq', 1001)"); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := conns["n1"].QueryRow(ctx, "INSERT INTO items (origin) VALUES ('n1') RETURNING id").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if id <= 1001 || id%3 != 1 {
		t.Errorf("after setval(1001) n1 drew %d, want a value past 1001 that is 1 modulo 3 (n1's)", id)
	}
	// The setval reached every node: n2 draws past it too.
	s.waitConverged(s.ids, 20*time.Second)
	if err := conns["n2"].QueryRow(ctx, "INSERT INTO items (origin) VALUES ('n2') RETURNING id").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if id <= 1001 || id%3 != 2 {
		t.Errorf("after setval(1001) on n1, n2 drew %d, want a value past 1001 that is 2 modulo 3 (n2's)", id)
	}
	// A transaction that only draws (an ORM fetching ids ahead): on
	// SQLite its writeset has no conflict key, and the certifier commits
	// it; every node's sequence then stands past the value.
	var drawn int64
	if err := conns["n3"].QueryRow(ctx, "SELECT nextval('items_id_seq')").Scan(&drawn); err != nil {
		t.Fatalf("nextval alone on n3: %v", err)
	}
	if drawn <= id || drawn%3 != 0 {
		t.Errorf("nextval alone on n3 drew %d, want a value past %d that is 0 modulo 3 (n3's)", drawn, id)
	}
	if backend == "sqlite" {
		s.waitConverged(s.ids, 20*time.Second)
		if got := s.sameEverywhere(s.ids, "SELECT last_value FROM items_id_seq"); got != fmt.Sprintf("%d\n", drawn) {
			t.Errorf("items_id_seq's last_value on every node = %q, want %d (n3's draw, replicated)", got, drawn)
		}
	}
	// Every node at the same moment. The nodes draw interleaved values,
	// so no insert conflicts with another. Without the stride, on
	// PostgreSQL two nodes drew the same value and the second insert met
	// the first's row, applied meanwhile: 23505 (TPC-W's shopping mix);
	// on SQLite concurrent draws conflicted on the sequence's replicated
	// row (40001 x1512 for these 360 inserts).
	var (
		mu    sync.Mutex
		codes = map[string]int{}
		acked int
		wg    sync.WaitGroup
	)
	for _, id := range s.ids {
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				c, err := pgx.Connect(ctx, s.dsn(s.nodes[id]))
				if err != nil {
					t.Errorf("connect to %s: %v", id, err)
					return
				}
				defer c.Close(context.Background())
				for i := 0; i < 40; i++ {
					for try := 0; ; try++ {
						_, err := c.Exec(ctx, "INSERT INTO items (origin) VALUES ($1)", id)
						mu.Lock()
						if err == nil {
							acked++
						} else {
							codes[sqlstate(err)]++
						}
						mu.Unlock()
						if err == nil {
							break
						}
						if sqlstate(err) != "40001" || try == 500 {
							t.Errorf("concurrent insert on %s: %v", id, err)
							return
						}
					}
				}
			}(id)
		}
	}
	wg.Wait()
	t.Logf("%s: %d concurrent inserts acknowledged, errors by SQLSTATE %v", backend, acked, codes)
	if len(codes) > 0 {
		t.Errorf("concurrent inserts through three nodes got %v, want no error: interleaved sequences never draw a value twice", codes)
	}
	s.waitConverged(s.ids, 30*time.Second)
	before := 30 + 2 // and the inserts after setval
	got := s.sameEverywhere(s.ids, "SELECT count(*), count(DISTINCT id) FROM items")
	if w := fmt.Sprintf("%d %d\n", before+acked, before+acked); got != w {
		t.Errorf("items after the concurrent inserts: count, distinct ids = %q, want %q", got, w)
	}
}

// TestMultiMasterWitnessLeads: with a [witness] the certifier's Raft
// leadership goes to the witness, a process without clients
// (coordinator/DESIGN.md, "Where the certifier leads"); while the witness
// is SIGKILLed a node leads and writes go on; when it is back it leads
// again. Every acknowledged insert is on every node exactly once, and a
// node's /metrics carries hashicorp/raft's own metrics.
func TestMultiMasterWitnessLeads(t *testing.T) {
	s := upMultiMaster(t, "sqlite", 3, fmt.Sprintf("[witness]\nid = \"w\"\nraft_listen = \"127.0.0.1:%d\"\n", freePort(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := connect(t, s.DSN)
	if _, err := c.Exec(ctx, "CREATE TABLE t (id bigint PRIMARY KEY, who text)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	leader := func() string {
		st, err := s.mmStatus("n3") // a non-voter with a witness: it follows the leader too
		if err != nil || st.Coordinator == nil {
			return ""
		}
		return st.Coordinator.Leader
	}
	waitLeader := func(what string, within time.Duration, ok func(string) bool) string {
		t.Helper()
		var l string
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if l = leader(); ok(l) {
				return l
			}
		}
		t.Fatalf("%s: not within %v (leader %q)", what, within, l)
		return ""
	}
	waitLeader("the witness leads", 30*time.Second, func(l string) bool { return l == "w" })

	rw := &retryingWriters{}
	run, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); rw.run(run, s.DSN, 3) }()
	time.Sleep(2 * time.Second)
	before := rw.count.Load()
	if before == 0 {
		t.Fatal("no commit with the witness leading")
	}
	s.kill("w")
	l := waitLeader("a node leads while the witness is down", 20*time.Second, func(l string) bool { return l != "" && l != "w" })
	mid := rw.count.Load()
	time.Sleep(2 * time.Second)
	if rw.count.Load() <= mid {
		t.Fatalf("no commit while %s leads", l)
	}
	logf, _ := os.Create(filepath.Join(s.dir, "w-restart.log"))
	defer logf.Close()
	cmd := exec.Command(tandemBin, "witness", "-c", s.File)
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The node that leads retries the hand-over after 5 s, 10 s, 20 s.
	waitLeader("the witness leads again", 60*time.Second, func(l string) bool { return l == "w" })
	mid = rw.count.Load()
	time.Sleep(2 * time.Second)
	if rw.count.Load() <= mid {
		t.Fatal("no commit after the witness took the leadership back")
	}
	stop()
	wg.Wait()

	resp, err := http.Get("http://" + s.admin["n1"] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"tandem_raft_rpc_appendEntries_storeLogs_count", "tandem_raft_fsm_apply_count"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("n1's /metrics has no %s", m)
		}
	}

	acked, _ := s.ackedOnceEverywhere(rw)
	t.Logf("%d acknowledged inserts on every node; %d errors seen by writers; leaders: w, %s, w", len(acked), rw.errors.Load(), l)
}
