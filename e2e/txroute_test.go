package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	"github.com/jackc/pgx/v5/pgproto3"
)

// Transaction routing (issue 12, router/txroute.go), on a hot-standby pair
// with [router] split = true: the standby plays the replica. Each test
// starts the cluster with `tandem up` and talks to the router with pgx.

// splitCluster writes a hot-standby cluster with split routing (extra goes
// into [router]) and runs `tandem up`. Several checks expect a read-only
// transaction to land on the replica n2, so the primary gets a read weight
// of 0 (no reads while the replica is healthy); delay, if set, is
// TANDEM_TEST_APPLY_DELAY for the tandem processes (e.g. "n2=20ms").
func splitCluster(t *testing.T, backend, routerExtra, delay string) (*hsCluster, *Cluster) {
	t.Helper()
	h := writeHSOn(t, backend, "2-safe-received", "relaxed", "")
	b, err := os.ReadFile(h.file)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "[router]\n", "[router]\nsplit = true\n"+routerExtra, 1)
	// The primary takes no reads while the replica is healthy.
	s = strings.Replace(s, "[[nodes]]\nid = \"n1\"\n", "[[nodes]]\nid = \"n1\"\nread_weight = 0\n", 1)
	if !strings.Contains(s, "read_weight = 0") {
		t.Fatal("splitCluster: no node n1 in the cluster file")
	}
	if err := os.WriteFile(h.file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if delay != "" {
		t.Setenv("TANDEM_TEST_APPLY_DELAY", delay)
	}
	c := upFile(t, h.dir, h.file, filepath.Join(h.dir, "run"))
	return h, c
}

// flushThenWrite runs read as a plain query, then prepares write with
// Parse, Describe and Flush, reads the answers, and runs it with Bind,
// Execute and Sync, as asyncpg does a statement it has not prepared
// before.
func flushThenWrite(t *testing.T, pc *pgconn.PgConn, write, read string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := pc.Exec(ctx, read).ReadAll(); err != nil {
		t.Fatalf("%s: %v", read, err)
	}
	fe := pc.Frontend()
	fe.Send(&pgproto3.Parse{Name: "flushed_1", Query: write})
	fe.Send(&pgproto3.Describe{ObjectType: 'S', Name: "flushed_1"})
	fe.Send(&pgproto3.Flush{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	next := func() pgproto3.BackendMessage {
		t.Helper()
		_ = pc.Conn().SetReadDeadline(time.Now().Add(15 * time.Second))
		m, err := fe.Receive()
		if err != nil {
			t.Fatalf("%s: %v", write, err)
		}
		return m
	}
	for done := false; !done; {
		switch m := next().(type) {
		case *pgproto3.ErrorResponse:
			t.Fatalf("Parse/Describe/Flush of %s: %s %s", write, m.Code, m.Message)
		case *pgproto3.NoData, *pgproto3.RowDescription:
			done = true
		}
	}
	fe.Send(&pgproto3.Bind{PreparedStatement: "flushed_1"})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Close{ObjectType: 'S', Name: "flushed_1"})
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		switch m := next().(type) {
		case *pgproto3.ErrorResponse:
			t.Errorf("Bind/Execute/Sync of %s after a flushed Parse: %s %s", write, m.Code, m.Message)
		case *pgproto3.ReadyForQuery:
			_ = pc.Conn().SetReadDeadline(time.Time{})
			return
		}
	}
}

// nodeOf runs sql followed by SHOW tandem.node as one simple-protocol
// request (routed as one) and returns the node that ran it.
func nodeOf(t *testing.T, conn *pgx.Conn, sql string) (string, error) {
	t.Helper()
	res, err := conn.PgConn().Exec(context.Background(), sql+"; SHOW tandem.node").ReadAll()
	if err != nil {
		return "", err
	}
	last := res[len(res)-1]
	if len(last.Rows) != 1 {
		return "", fmt.Errorf("SHOW tandem.node: %d rows", len(last.Rows))
	}
	return string(last.Rows[0][0]), nil
}

// waitApplied waits until the standby has the row id in t.
func waitStandby(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			var n int
			err = c.QueryRow(ctx, sql).Scan(&n)
			c.Close(ctx)
			if err == nil && n > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby does not answer %q with rows: %v", sql, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTxRouting(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			h, c := splitCluster(t, backend, "", "")
			ctx := context.Background()
			conn := connect(t, c.DSN)
			for _, q := range []string{
				"CREATE TABLE acct (id int PRIMARY KEY, v int)",
				"CREATE SEQUENCE seq",
				"INSERT INTO acct VALUES (1, 10), (2, 20)",
			} {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			waitStandby(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM acct")

			// Autocommit reads reach the replica.
			replica := 0
			for i := 0; i < 20; i++ {
				n, err := nodeOf(t, conn, "SELECT v FROM acct WHERE id = 1")
				if err != nil {
					t.Fatal(err)
				}
				if n == "n2" {
					replica++
				}
			}
			if replica == 0 {
				t.Errorf("no autocommit SELECT of 20 reached the replica n2")
			}
			for _, q := range []string{"SELECT count(*), max(v) FROM acct", "SELECT lower('A')", "SELECT * FROM acct a JOIN acct b ON a.id = b.id"} {
				if n, err := nodeOf(t, conn, q); err != nil || n == "n1" && replica == 20 {
					t.Errorf("%s: ran on %s (%v); a read", q, n, err)
				}
			}
			// Writes and what may write reach the primary.
			for _, q := range []string{
				"SELECT nextval('seq')",
				"SELECT v FROM acct WHERE id = 1 FOR UPDATE",
				"UPDATE acct SET v = v + 1 WHERE id = 2",
				"INSERT INTO acct VALUES (3, 30)",
				"DELETE FROM acct WHERE id = 3",
				"CREATE TABLE other (id int PRIMARY KEY)",
				"WITH d AS (DELETE FROM acct WHERE id = 99 RETURNING id) SELECT count(*) FROM d",
				"SELECT set_config('application_name', 'x', false)",
				"/* tandem:primary */ SELECT 1",
			} {
				n, err := nodeOf(t, conn, q)
				if err != nil {
					t.Errorf("%s: %v", q, err)
					continue
				}
				if n != "n1" {
					t.Errorf("%s: ran on %s; want the primary n1", q, n)
				}
			}
			// asyncpg prepares with Parse, Describe, Flush, then sends
			// Bind, Execute, Sync: after a read (the session's home is
			// the replica), the insert still reaches the primary.
			flushThenWrite(t, conn.PgConn(), "INSERT INTO acct VALUES (5, 50)", "SELECT v FROM acct WHERE id = 1")
			// A write transaction runs on the primary, every statement.
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var in string
			if err := tx.QueryRow(ctx, "SHOW tandem.node").Scan(&in); err != nil || in != "n1" {
				t.Errorf("plain BEGIN: first statement on %q (%v); want n1", in, err)
			}
			if _, err := tx.Exec(ctx, "UPDATE acct SET v = v + 1 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			// A READ ONLY transaction runs on the replica; a write in it
			// gets 25006.
			tx, err = conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.QueryRow(ctx, "SHOW tandem.node").Scan(&in); err != nil || in != "n2" {
				t.Errorf("BEGIN READ ONLY: ran on %q (%v); want the replica n2", in, err)
			}
			_, err = tx.Exec(ctx, "INSERT INTO acct VALUES (4, 40)")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "25006" {
				t.Errorf("a write in a READ ONLY transaction: want 25006, got %v", err)
			} else {
				t.Logf("write in READ ONLY: %s", pe.Message)
			}
			_ = tx.Rollback(ctx)
			// BEGIN; SET TRANSACTION READ ONLY: the block runs on the
			// replica (the router answers BEGIN and sends it along with
			// the block's first request).
			for _, q := range []string{"BEGIN", "SET TRANSACTION READ ONLY"} {
				if _, err := conn.PgConn().Exec(ctx, q).ReadAll(); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if st := conn.PgConn().TxStatus(); st != 'T' {
				t.Errorf("after BEGIN: transaction status %c", st)
			}
			res, err := conn.PgConn().Exec(ctx, "SHOW tandem.node").ReadAll()
			if err != nil || string(res[0].Rows[0][0]) != "n2" {
				t.Errorf("BEGIN; SET TRANSACTION READ ONLY: ran on %v (%v); want n2", res, err)
			}
			if _, err := conn.PgConn().Exec(ctx, "COMMIT").ReadAll(); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"BEGIN", "SAVEPOINT a"} {
				if _, err := conn.PgConn().Exec(ctx, q).ReadAll(); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if n, err := nodeOf(t, conn, "SELECT 1"); err != nil || n != "n1" {
				t.Errorf("BEGIN; SAVEPOINT: the block ran on %s (%v); want the primary", n, err)
			}
			if _, err := conn.PgConn().Exec(ctx, "ROLLBACK").ReadAll(); err != nil {
				t.Fatal(err)
			}
			// A CancelRequest (with the key the router gave the client)
			// reaches the node running the transaction: the replica here.
			tx, err = conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
			if err != nil {
				t.Fatal(err)
			}
			long := "SELECT pg_sleep(20)"
			if backend == "sqlite" {
				long = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 2000000000) SELECT count(*) FROM c"
			}
			go func() {
				time.Sleep(300 * time.Millisecond)
				_ = conn.PgConn().CancelRequest(context.Background())
			}()
			start := time.Now()
			lctx, lcancel := context.WithTimeout(ctx, 15*time.Second)
			_, err = tx.Exec(lctx, long)
			lcancel()
			// 57014 comes from the node that ran it; a cancel sent
			// elsewhere would leave the query running.
			if !errors.As(err, &pe) || pe.Code != "57014" || time.Since(start) > 10*time.Second {
				t.Errorf("cancelled a long query on the replica: %v after %v; want 57014 within seconds", err, time.Since(start))
			}
			_ = tx.Rollback(ctx)
			if conn.IsClosed() {
				t.Fatalf("the session ended after a cancel")
			}
			// Forcing with the session setting.
			if _, err := conn.Exec(ctx, "SET tandem.route = primary"); err != nil {
				t.Fatal(err)
			}
			var rt string
			if err := conn.QueryRow(ctx, "SHOW tandem.route").Scan(&rt); err != nil || rt != "primary" {
				t.Errorf("SHOW tandem.route = %q (%v)", rt, err)
			}
			if n, _ := nodeOf(t, conn, "SELECT 1"); n != "n1" {
				t.Errorf("SET tandem.route = primary: a read ran on %s", n)
			}
			if _, err := conn.Exec(ctx, "SET tandem.route = replica"); err != nil {
				t.Fatal(err)
			}
			if n, _ := nodeOf(t, conn, "SELECT 1"); n != "n2" {
				t.Errorf("SET tandem.route = replica: a read ran on %s", n)
			}
			if _, err := conn.Exec(ctx, "SET tandem.route = sideways"); err == nil {
				t.Errorf("SET tandem.route = sideways: no error")
			}
			if _, err := conn.Exec(ctx, "RESET tandem.route"); err != nil {
				t.Fatal(err)
			}
			// Named prepared statements work wherever the next
			// transaction lands (pgx prepares and caches them).
			for i := 0; i < 5; i++ {
				var v int
				if err := conn.QueryRow(ctx, "SELECT v FROM acct WHERE id = $1", 2).Scan(&v); err != nil {
					t.Fatalf("prepared read %d: %v", i, err)
				}
				if _, err := conn.Exec(ctx, "UPDATE acct SET v = v + $1 WHERE id = $2", 1, 1); err != nil {
					t.Fatalf("prepared write %d: %v", i, err)
				}
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := tx.QueryRow(ctx, "SELECT v FROM acct WHERE id = $1", 2).Scan(&v); err != nil {
					t.Fatalf("prepared read on the primary %d: %v", i, err)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// Session settings follow the session.
			if _, err := conn.Exec(ctx, "SET application_name = 'routed'"); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				res, err := conn.PgConn().Exec(ctx, "SELECT current_setting('application_name'); SHOW tandem.node").ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				if got := string(res[0].Rows[0][0]); got != "routed" {
					t.Errorf("application_name on %s = %q; want routed", res[1].Rows[0][0], got)
				}
				if _, err := conn.Exec(ctx, "UPDATE acct SET v = v WHERE id = 1"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// pairs is how many write-then-read pairs the consistency test runs
// (TANDEM_TEST_PAIRS; 1,000 by default, the issue asks for 10,000).
func pairs() int {
	if v, err := strconv.Atoi(os.Getenv("TANDEM_TEST_PAIRS")); err == nil && v > 0 {
		return v
	}
	return 1000
}

// TestReadConsistency: with the replica's apply slowed on purpose, sessions
// write a value and read it back at once, concurrently. At session and
// strong no read is stale; at eventual some are (the test can see them).
// A reader session never sees the counter go back (monotonic reads).
func TestReadConsistency(t *testing.T) {
	for _, run := range []struct{ backend, level string }{
		{"sqlite", "session"}, {"sqlite", "strong"}, {"sqlite", "bounded"}, {"sqlite", "eventual"},
		{"postgres", "session"}, {"postgres", "strong"}, {"postgres", "eventual"},
	} {
		level := run.level
		t.Run(run.backend+"/"+level, func(t *testing.T) {
			h, c := splitCluster(t, run.backend, fmt.Sprintf("read_consistency = %q\nread_wait = \"2s\"\n", level), "n2=15ms")
			ctx := context.Background()
			setup := connect(t, c.DSN)
			if _, err := setup.Exec(ctx, "CREATE TABLE cell (id int PRIMARY KEY, v int)"); err != nil {
				t.Fatal(err)
			}
			const workers = 4
			for w := 0; w < workers+1; w++ {
				if _, err := setup.Exec(ctx, "INSERT INTO cell VALUES ($1, 0)", w); err != nil {
					t.Fatal(err)
				}
			}
			// The sessions below read rows another session wrote: wait
			// until the replica has them (session consistency covers a
			// session's own writes).
			waitStandby(t, h.dsn(h.nodes["n2"]), fmt.Sprintf("SELECT count(*) FROM cell HAVING count(*) = %d", workers+1))
			total := pairs()
			var stale, onReplica, done atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, workers+2)
			for w := 1; w <= workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					conn, err := pgx.Connect(ctx, c.DSN)
					if err != nil {
						errs <- err
						return
					}
					defer conn.Close(ctx)
					for i := 1; done.Add(1) <= int64(total); i++ {
						if _, err := conn.Exec(ctx, "UPDATE cell SET v = $1 WHERE id = $2", i, w); err != nil {
							errs <- fmt.Errorf("write: %w", err)
							return
						}
						res, err := conn.PgConn().Exec(ctx, fmt.Sprintf("SELECT v FROM cell WHERE id = %d; SHOW tandem.node", w)).ReadAll()
						if err != nil {
							errs <- fmt.Errorf("read: %w", err)
							return
						}
						if v, _ := strconv.Atoi(string(res[0].Rows[0][0])); v != i {
							stale.Add(1)
						}
						if string(res[1].Rows[0][0]) == "n2" {
							onReplica.Add(1)
						}
					}
				}(w)
			}
			// Monotonic reads: one session reads a counter another bumps.
			stop := make(chan struct{})
			var back atomic.Int64
			var mwg sync.WaitGroup
			mwg.Add(2)
			go func() {
				defer mwg.Done()
				conn, err := pgx.Connect(ctx, c.DSN)
				if err != nil {
					errs <- err
					return
				}
				defer conn.Close(ctx)
				for i := 1; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := conn.Exec(ctx, "UPDATE cell SET v = $1 WHERE id = 0", i); err != nil {
						errs <- err
						return
					}
				}
			}()
			go func() {
				defer mwg.Done()
				conn, err := pgx.Connect(ctx, c.DSN)
				if err != nil {
					errs <- err
					return
				}
				defer conn.Close(ctx)
				last := -1
				for {
					select {
					case <-stop:
						return
					default:
					}
					var v int
					if err := conn.QueryRow(ctx, "SELECT v FROM cell WHERE id = 0", pgx.QueryExecModeSimpleProtocol).Scan(&v); err != nil {
						errs <- err
						return
					}
					if v < last {
						back.Add(1)
					}
					last = max(last, v)
				}
			}()
			wg.Wait()
			close(stop)
			mwg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			t.Logf("%s: %d write-then-read pairs, %d stale, %d read on the replica; monotonic reader went back %d times", level, total, stale.Load(), onReplica.Load(), back.Load())
			// A new session reads what another session committed before
			// it connected (pgbench -S after pgbench -i): it starts where
			// the router knows the cluster is.
			const fresh = 20
			var freshStale, freshReplica int
			for k := 1; k <= fresh; k++ {
				if _, err := setup.Exec(ctx, "UPDATE cell SET v = $1 WHERE id = 0", 1_000_000+k); err != nil {
					t.Fatal(err)
				}
				conn, err := pgx.Connect(ctx, c.DSN)
				if err != nil {
					t.Fatal(err)
				}
				res, err := conn.PgConn().Exec(ctx, "SELECT v FROM cell WHERE id = 0; SHOW tandem.node").ReadAll()
				conn.Close(ctx)
				if err != nil {
					t.Fatalf("a new session's first read: %v", err)
				}
				if v, _ := strconv.Atoi(string(res[0].Rows[0][0])); v != 1_000_000+k {
					freshStale++
				}
				if string(res[1].Rows[0][0]) == "n2" {
					freshReplica++
				}
			}
			t.Logf("%s: %d new sessions read another's commit first: %d stale, %d on the replica", level, fresh, freshStale, freshReplica)
			if level == "session" || level == "strong" {
				if freshStale != 0 {
					t.Errorf("%s: %d of %d new sessions did not see a commit acknowledged before they connected", level, freshStale, fresh)
				}
				if freshReplica == 0 {
					t.Errorf("%s: no new session's first read ran on the replica: the check proves nothing", level)
				}
			}
			switch level {
			case "bounded":
				// max_lag is 1 s and the replica is some 15 ms behind:
				// stale reads may happen; the reads must work and reach it.
				if onReplica.Load() == 0 {
					t.Errorf("bounded: no read ran on the replica")
				}
			case "eventual":
				if stale.Load() == 0 {
					t.Errorf("eventual: no stale read in %d pairs with the replica slowed; the test cannot see staleness", total)
				}
			default:
				if stale.Load() != 0 {
					t.Errorf("%s: %d stale reads of %d", level, stale.Load(), total)
				}
				if back.Load() != 0 {
					t.Errorf("%s: the reader saw the counter go back %d times", level, back.Load())
				}
				if onReplica.Load() == 0 {
					t.Errorf("%s: no read ran on the replica: the test proves nothing", level)
				}
			}
		})
	}
}

// TestReplicaKillUnderReads: SIGKILL the replica under read load: each
// session sees at most its in-flight transaction fail, with a retryable
// SQLSTATE, and goes on reading (on the primary).
func TestReplicaKillUnderReads(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) { replicaKillUnderReads(t, backend) })
	}
}

func replicaKillUnderReads(t *testing.T, backend string) {
	h, c := splitCluster(t, backend, "", "")
	ctx := context.Background()
	setup := connect(t, c.DSN)
	if _, err := setup.Exec(ctx, "CREATE TABLE r (id int PRIMARY KEY, v int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec(ctx, "INSERT INTO r VALUES (1, 1)"); err != nil {
		t.Fatal(err)
	}
	waitStandby(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM r")
	const sessions = 6
	var wg sync.WaitGroup
	var okAfter, reads atomic.Int64
	failures := make([]int, sessions)
	codes := make([][]string, sessions)
	killed := make(chan struct{})
	stop := make(chan struct{})
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, c.DSN)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			for {
				select {
				case <-stop:
					return
				default:
				}
				var v int
				err := conn.QueryRow(ctx, "SELECT v FROM r WHERE id = 1").Scan(&v)
				if err != nil {
					var pe *pgconn.PgError
					code := "?"
					if errors.As(err, &pe) {
						code = pe.Code
					} else if conn.IsClosed() {
						t.Errorf("session %d ended: %v", s, err)
						return
					}
					failures[s]++
					codes[s] = append(codes[s], code+": "+err.Error())
					continue
				}
				reads.Add(1)
				select {
				case <-killed:
					okAfter.Add(1)
				default:
				}
			}
		}(s)
	}
	time.Sleep(time.Second)
	var pid int
	for _, p := range c.Procs() {
		if p.Name == "n2" {
			pid = p.PID
		}
	}
	if pid == 0 {
		t.Fatal("no n2 process")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	close(killed)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	for s := 0; s < sessions; s++ {
		if failures[s] > 1 {
			t.Errorf("session %d: %d failures; at most the one in flight may fail: %v", s, failures[s], codes[s])
		}
		for _, c := range codes[s] {
			if !strings.HasPrefix(c, "40001") {
				t.Errorf("session %d: failure %s; want 40001 (retryable)", s, c)
			}
		}
	}
	if okAfter.Load() == 0 {
		t.Errorf("no read succeeded after the replica was killed")
	}
	t.Logf("%d reads; %d after the kill; failures per session %v", reads.Load(), okAfter.Load(), failures)
	// The replica comes back, catches up and is used again (the session
	// read on the primary meanwhile: its reads need the replica caught up).
	h.start("n2")
	conn := connect(t, c.DSN)
	if _, err := conn.Exec(ctx, "UPDATE r SET v = v + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := nodeOf(t, conn, "SELECT v FROM r WHERE id = 1")
		if err == nil && n == "n2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted replica is not used again within 30 s (last read on %s, %v)", n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM r WHERE id = 1").Scan(&v); err != nil || v != 2 {
		t.Errorf("after the replica rejoined: v = %d (%v); want 2 (the session's own write)", v, err)
	}
}

// TestMonotonicReads: a session's reads alternate between the primary
// (forced) and the slowed replica; a read after a fresher one never sees
// an older value (the replica waits, or the read falls back to the
// primary after a short read_wait).
func TestMonotonicReads(t *testing.T) {
	_, c := splitCluster(t, "sqlite", "read_wait = \"20ms\"\n", "n2=10ms")
	ctx := context.Background()
	r := connect(t, c.DSN) // the reader made the row: its reads see it
	if _, err := r.Exec(ctx, "CREATE TABLE mono (id int PRIMARY KEY, v int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Exec(ctx, "INSERT INTO mono VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		conn, err := pgx.Connect(ctx, c.DSN)
		if err != nil {
			done <- err
			return
		}
		defer conn.Close(ctx)
		for i := 1; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := conn.Exec(ctx, "UPDATE mono SET v = $1 WHERE id = 1", i); err != nil {
				done <- err
				return
			}
		}
	}()
	last, back := -1, 0
	on := map[string]int{}
	deadline := time.Now().Add(4 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		// Every third read is forced to the primary (the freshest
		// state); the next one goes to the slowed replica, which must
		// first catch up with what the session has seen.
		q := "SELECT v FROM mono WHERE id = 1; SHOW tandem.node"
		if i%3 == 0 {
			q = "/* tandem:primary */ " + q
		}
		res, err := r.PgConn().Exec(ctx, q).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		v, _ := strconv.Atoi(string(res[0].Rows[0][0]))
		on[string(res[1].Rows[0][0])]++
		if v < last {
			back++
		}
		last = max(last, v)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("reads per node %v; went back %d times; last value %d", on, back, last)
	if back != 0 {
		t.Errorf("a read saw an older value than an earlier read %d times", back)
	}
	if on["n1"] == 0 || on["n2"] == 0 {
		t.Errorf("the reads did not alternate between the primary and the replica (%v): the test proves little", on)
	}
}
