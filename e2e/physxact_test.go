package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/config"
)

// TestPhysicalCommitInFlight: on the physical engine, a COMMIT in flight
// when the primary is SIGKILLed is resolved by asking the new primary
// (design.md guarantee 7), not answered 08007: one that never finished
// (a deferred trigger still sleeping) gets 40001 and is not there; one
// whose commit record reached the standby (replay paused there, so the
// 2-safe-visible COMMIT waited for it) but whose answer was lost gets
// COMMIT, and its row is there. The second happens on the third timeline,
// so the new primary finds the transaction's timeline two steps back in
// its history. Both designs: hot-standby sessions ride the router's
// relay, single-master ones its transaction routing (a replica serves
// reads).
func TestPhysicalCommitInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	for _, design := range []string{"hot-standby", "single-master"} {
		t.Run(design, func(t *testing.T) { testPhysicalCommitInFlight(t, design) })
	}
}

func testPhysicalCommitInFlight(t *testing.T, design string) {
	h := physicalHS(t, "2-safe-visible", "failover = \"automatic\"\nlease = \"1s\"\nlease_grace = \"500ms\"\nack_timeout = \"2s\"\n", true)
	b, err := os.ReadFile(h.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.file, []byte(strings.Replace(string(b), "design = \"hot-standby\"", "design = \""+design+"\"", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(h.file)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Design != design {
		t.Fatalf("design %q, want %q", cfg.Design, design)
	}
	p := h.startCoordinatedPair()
	ctx := context.Background()
	setup := connect(t, h.dsn(h.router))
	for _, q := range []string{
		"CREATE TABLE slow (id int PRIMARY KEY)",
		// A COMMIT that inserted a negative id sleeps in its deferred
		// trigger: in flight for as long as the test needs.
		"CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM pg_sleep(60); RETURN NULL; END$$",
		"CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON slow DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.id < 0) EXECUTE FUNCTION slow_commit()",
		// A plain SELECT (no function call in its text) that runs long.
		"CREATE VIEW slow_read AS SELECT 1 AS s FROM pg_sleep(60)",
	} {
		if _, err := setup.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	setup.Close(ctx)
	waitCoordinated(t, h.admin["n1"], "n1", "n2")

	// commitInFlight runs BEGIN; INSERT id; COMMIT through the router and
	// kills node victim once the COMMIT has been waiting a second.
	c := connect(t, h.dsn(h.router))
	defer c.Close(ctx)
	// The COMMIT goes in the simple protocol (psql, psycopg, pgx), in the
	// extended one (Parse, Bind, Execute, Sync), or, prepared, as the
	// statement jdbc_commit bound (Bind, Execute, Sync).
	commitInFlight := func(id int, act func(), protocol string) error {
		t.Helper()
		if _, err := c.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "INSERT INTO slow VALUES ($1)", id); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			switch protocol {
			case "prepared":
				done <- c.PgConn().ExecPrepared(cctx, "jdbc_commit", nil, nil, nil).Read().Err
			case "extended":
				done <- c.PgConn().ExecParams(cctx, "COMMIT", nil, nil, nil, nil).Read().Err
			default:
				_, err := c.Exec(cctx, "COMMIT")
				done <- err
			}
		}()
		select {
		case err := <-done:
			t.Fatalf("the COMMIT of %d returned before the kill: %v", id, err)
		case <-time.After(time.Second):
		}
		act()
		return <-done
	}
	count := func(id int) int {
		t.Helper()
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM slow WHERE id = $1", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// 0. The server ends the COMMIT's session (pg_terminate_backend from
	// another session: FATAL 57P01, which says nothing of the outcome;
	// PostgreSQL's shutdowns and the node's relay say the same): the
	// router asks the primary, which knows the transaction aborted, and
	// answers 40001. The session goes on.
	err = commitInFlight(-5, func() {
		k := connect(t, h.dsn(h.nodes["n1"]))
		defer k.Close(ctx)
		var n int
		if err := k.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = 'COMMIT' AND state = 'active'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("terminating the COMMIT's backend: %d terminated (%v)", n, err)
		}
	}, "simple")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "40001" {
		t.Fatalf("a COMMIT whose backend was terminated: %v, want SQLSTATE 40001 (resolved: it aborted)", err)
	}
	if n := count(-5); n != 0 {
		t.Fatalf("the terminated COMMIT's row is there (%d)", n)
	}

	// 0a. The router's query that names a COMMIT's transaction (xactQuery,
	// prepared once per server connection) fails, here because a
	// function dropped every prepared statement where the router cannot
	// see it: the transaction is aborted, and its COMMIT, which the
	// server answers ROLLBACK, must reach the client as an error, in the
	// simple and the extended protocol; the next COMMIT prepares the
	// query again and commits.
	for i, extended := range []bool{false, true} {
		x := connect(t, h.dsn(h.router))
		tx := func(id int, dealloc bool) error {
			t.Helper()
			for _, q := range []string{"BEGIN", fmt.Sprintf("INSERT INTO slow VALUES (%d)", id)} {
				if _, err := x.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if dealloc {
				if _, err := x.Exec(ctx, "DO $$ BEGIN EXECUTE chr(68) || 'EALLOCATE ALL'; END $$"); err != nil {
					t.Fatal(err)
				}
			}
			if extended {
				_, err := x.PgConn().ExecParams(ctx, "COMMIT", nil, nil, nil, nil).Close()
				return err
			}
			_, err := x.Exec(ctx, "COMMIT")
			return err
		}
		base := 100 + 10*i // positive: no sleep at COMMIT
		if err := tx(base, false); err != nil {
			t.Fatal(err)
		}
		err := tx(base+1, true)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "26000" || !strings.Contains(pe.Message, "rolled back, not committed") {
			t.Fatalf("extended %v: a COMMIT whose transaction the router's query aborted: %v, want the query's error (26000, rolled back)", extended, err)
		}
		if err := tx(base+2, false); err != nil {
			t.Fatalf("extended %v: the next transaction: %v", extended, err)
		}
		if n0, n1, n2 := count(base), count(base+1), count(base+2); n0 != 1 || n1 != 0 || n2 != 1 {
			t.Fatalf("extended %v: rows %d %d %d, want 1 0 1", extended, n0, n1, n2)
		}
		x.Close(ctx)
	}

	// 0b. The server ends a session idle in a transaction while its node
	// stays primary (an operator's pg_terminate_backend): that is no
	// failover, and the session ends as it would on PostgreSQL, with the
	// server's one FATAL 57P01; its transaction did not commit.
	{
		victim := connect(t, h.dsn(h.router))
		if _, err := victim.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := victim.Exec(ctx, "INSERT INTO slow VALUES (-6)"); err != nil {
			t.Fatal(err)
		}
		var pid int
		if err := victim.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatal(err)
		}
		k := connect(t, h.dsn(h.nodes["n1"]))
		var ok bool
		if err := k.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend(%d): %v %v", pid, ok, err)
		}
		k.Close(ctx)
		vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := victim.Exec(vctx, "INSERT INTO slow VALUES (-7)")
		cancel()
		if !errors.As(err, &pe) || pe.Code != "57P01" || pe.Severity != "FATAL" {
			t.Fatalf("the next statement of a session the server ended: %v, want FATAL 57P01 (the session ends, as on PostgreSQL)", err)
		}
		if !victim.IsClosed() {
			t.Fatal("the client's connection is still open after the server's FATAL")
		}
		if n := count(-6); n != 0 {
			t.Fatalf("the terminated session's row is there (%d)", n)
		}
	}

	// 0c. The same, the client's next message being its COMMIT, spoken
	// as libpq would read it: the FATAL and the connection's end, never
	// a COMMIT tag (routed sessions on the router's epoll loop once went
	// on after the server's FATAL, and a COMMIT there, outside any
	// transaction, was answered COMMIT: psql printed it after the error).
	{
		vc, err := pgconn.Connect(ctx, h.dsn(h.router))
		if err != nil {
			t.Fatal(err)
		}
		res, err := vc.Exec(ctx, "BEGIN; INSERT INTO slow VALUES (-8); SELECT pg_backend_pid()").ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		pid := string(res[2].Rows[0][0])
		hj, err := vc.Hijack()
		if err != nil {
			t.Fatal(err)
		}
		k := connect(t, h.dsn(h.nodes["n1"]))
		var ok bool
		if err := k.QueryRow(ctx, "SELECT pg_terminate_backend($1::int)", pid).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend(%s): %v %v", pid, ok, err)
		}
		k.Close(ctx)
		time.Sleep(500 * time.Millisecond) // the FATAL and the end reach the router
		got, code, fatal, ended := commitRaw(t, hj)
		hj.Conn.Close()
		if code != "57P01" || !fatal || !ended {
			t.Fatalf("a COMMIT after the server ended the session got %v (connection ended %v), want FATAL 57P01 and the end", got, ended)
		}
		if n := count(-8); n != 0 {
			t.Fatalf("the terminated session's row is there (%d)", n)
		}
	}

	// 1. The COMMIT never finished on n1; another session's plain SELECT
	// was running there too.
	r := connect(t, h.dsn(h.router))
	defer r.Close(ctx)
	if design == "single-master" {
		// Its reads would go to the replica. (The router hands the SET on
		// to PostgreSQL quoted: bare, primary is a reserved word there;
		// inside a transaction too.)
		tx, err := r.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "CREATE TEMP TABLE here (i int)"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SET tandem.route = primary"); err != nil {
			t.Fatalf("SET tandem.route inside a transaction: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Exec(ctx, "SET tandem.route = primary"); err != nil {
			t.Fatal(err)
		}
		var rt string
		if err := r.QueryRow(ctx, "SHOW tandem.route").Scan(&rt); err != nil || rt != "primary" {
			t.Fatalf("SHOW tandem.route = %q (%v)", rt, err)
		}
	}
	readDone := make(chan error, 1)
	go func() {
		var s int
		rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		readDone <- r.QueryRow(rctx, "SELECT s FROM slow_read").Scan(&s)
	}()
	err = commitInFlight(-1, func() { h.kill("n1") }, "extended")
	if !errors.As(err, &pe) || pe.Code != "40001" {
		t.Fatalf("a COMMIT that never finished on the killed primary: %v, want SQLSTATE 40001 (resolved: it did not take effect)", err)
	}
	t.Logf("unfinished COMMIT: %s: %s", pe.Code, pe.Message)
	if err := <-readDone; !errors.As(err, &pe) || pe.Code != "40001" {
		t.Fatalf("a plain SELECT in flight at the failover: %v, want SQLSTATE 40001 (it changed nothing: retry)", err)
	}
	var one int
	if err := r.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("the reading session after the failover: %v", err)
	}
	if n := count(-1); n != 0 {
		t.Fatalf("the unfinished transaction's row is on the new primary (%d)", n)
	}
	if s := p.status("n2"); s.Physical.Role != "primary" || s.Physical.Epoch != 2 {
		t.Fatalf("n2 after the failover: %+v", s.Physical)
	}

	// 2. The old primary comes back as the new one's standby; its replay
	// is paused, so a 2-safe-visible COMMIT waits for it with its commit
	// record already there; then the primary is killed. Once in the
	// simple protocol, once as pgjdbc commits: a COMMIT prepared once and
	// bound each time (Bind, Execute, Sync: no text goes with it).
	committedInFlight := func(id int, primary, standby string, epoch uint64, protocol string) {
		t.Helper()
		h.start(standby)
		p.waitStreaming(primary, standby)
		waitCoordinated(t, h.admin[primary], primary, standby)
		n, _ := cfg.Node(standby)
		_, port, _ := net.SplitHostPort(n.Repl)
		su, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable", filepath.Join(n.DataDir, "physical"), port))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := su.Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
			t.Fatal(err)
		}
		su.Close(ctx)
		if protocol == "prepared" {
			if _, err := c.PgConn().Prepare(ctx, "jdbc_commit", "COMMIT", nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := commitInFlight(id, func() { h.kill(primary) }, protocol); err != nil {
			t.Fatalf("a COMMIT (%s protocol) whose record reached the standby that took over: %v, want COMMIT (resolved: it took effect)", protocol, err)
		}
		if n := count(id); n != 1 {
			t.Fatalf("the committed row %d is not on the new primary (%d)", id, n)
		}
		if s := p.status(standby); s.Physical.Role != "primary" || s.Physical.Epoch != epoch {
			t.Fatalf("%s after the failover: %+v", standby, s.Physical)
		}
	}
	committedInFlight(2, "n2", "n1", 3, "simple")
	committedInFlight(3, "n1", "n2", 4, "prepared")
}
