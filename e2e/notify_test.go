package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestListenNotifySQLite: LISTEN / NOTIFY between two sessions of a SQLite
// node, directly and through the router: a session idle outside a block
// gets a notification at once; a NOTIFY (or pg_notify with a parameter)
// inside a block is sent at COMMIT, once per distinct payload, and not at
// all after ROLLBACK; a listener inside a block gets what came meanwhile
// when its block ends; UNLISTEN stops them.
func TestListenNotifySQLite(t *testing.T) {
	for _, router := range []bool{false, true} {
		name := map[bool]string{false: "node", true: "router"}[router]
		t.Run(name, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: "sqlite", router: router})
			ctx := context.Background()
			n := connect(t, c.DSN)
			lconn, got := listener(t, c.DSN)
			exec := func(conn *pgconn.PgConn, sql string) { t.Helper(); execOn(t, conn, sql) }
			next := func(d time.Duration) *pgconn.Notification { t.Helper(); return nextNotification(t, lconn, got, d) }
			exec(lconn, "LISTEN jobs")

			// Idle listener, NOTIFY outside a block: at once.
			start := time.Now()
			exec(n.PgConn(), "NOTIFY jobs, 'one'")
			nt := next(5 * time.Second)
			if nt == nil || nt.Channel != "jobs" || nt.Payload != "one" {
				t.Fatalf("first notification: %+v", nt)
			}
			if !router && nt.PID != n.PgConn().PID() {
				t.Errorf("sender PID %d, want the notifying session's %d", nt.PID, n.PgConn().PID())
			}
			t.Logf("delivered to an idle listener in %v", time.Since(start))

			// In a block: nothing until COMMIT, then once per payload.
			tx, err := n.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"two", "two", "three"} {
				if _, err := tx.Exec(ctx, "SELECT pg_notify('jobs', $1)", p); err != nil {
					t.Fatal(err)
				}
			}
			if nt := next(300 * time.Millisecond); nt != nil {
				t.Fatalf("a notification before COMMIT: %+v", nt)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"two", "three"} {
				if nt := next(5 * time.Second); nt == nil || nt.Payload != want {
					t.Fatalf("after COMMIT: %+v, want payload %q", nt, want)
				}
			}
			if nt := next(300 * time.Millisecond); nt != nil {
				t.Fatalf("a duplicate payload was sent twice: %+v", nt)
			}

			// Rolled back: nothing.
			exec(n.PgConn(), "BEGIN; NOTIFY jobs, 'never'; ROLLBACK")
			if nt := next(300 * time.Millisecond); nt != nil {
				t.Fatalf("a rolled back NOTIFY was sent: %+v", nt)
			}

			// A listener in a block gets what came meanwhile when it ends.
			exec(lconn, "BEGIN; SELECT 1")
			exec(n.PgConn(), "NOTIFY jobs, 'later'")
			select {
			case nt := <-got:
				t.Fatalf("delivered inside the listener's block: %+v", nt)
			case <-time.After(300 * time.Millisecond):
			}
			exec(lconn, "COMMIT")
			if nt := next(time.Second); nt == nil || nt.Payload != "later" {
				t.Fatalf("after the listener's block: %+v", nt)
			}

			// Another channel, then UNLISTEN: nothing.
			exec(n.PgConn(), "NOTIFY other, 'x'")
			exec(lconn, "UNLISTEN jobs")
			exec(n.PgConn(), "NOTIFY jobs, 'gone'")
			if nt := next(300 * time.Millisecond); nt != nil {
				t.Fatalf("after UNLISTEN: %+v", nt)
			}
			// The listener's session is still in order.
			exec(lconn, "SELECT 1")
		})
	}
}

// TestListenNotifyPostgres: on a PostgreSQL back end behind tandem's
// executor a listening session gets the server's notifications while it
// is idle, as from PostgreSQL itself (backend/postgres/listen.go): at
// once, again after it ran a statement, not while it is in a block (then
// at the block's end), never a rolled-back one; and its session stays in
// order through all of it.
func TestListenNotifyPostgres(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		listenNotifyPostgres(t, startCluster(t, clusterSpec{backend: "postgres"}).DSN)
	})
	t.Run("writeset-primary", func(t *testing.T) {
		// Sessions on tandem's executor (capture, the writeset engine).
		h := writeHSOn(t, "postgres", "2-safe-visible", "relaxed", "")
		h.start("n1")
		h.start("n2")
		listenNotifyPostgres(t, h.dsn(h.nodes["n1"]))
	})
}

func listenNotifyPostgres(t *testing.T, dsn string) {
	ctx := context.Background()
	n := connect(t, dsn)
	l, got := listener(t, dsn)
	exec := func(conn *pgconn.PgConn, sql string) { t.Helper(); execOn(t, conn, sql) }
	next := func(d time.Duration) *pgconn.Notification { t.Helper(); return nextNotification(t, l, got, d) }
	exec(l, "LISTEN jobs")
	for _, payload := range []string{"one", "two"} {
		exec(n.PgConn(), "NOTIFY jobs, '"+payload+"'")
		if nt := next(5 * time.Second); nt == nil || nt.Channel != "jobs" || nt.Payload != payload {
			t.Fatalf("idle listener, NOTIFY %s: got %+v", payload, nt)
		}
		exec(l, "SELECT 1") // a statement between: the next one comes idle too
	}
	exec(n.PgConn(), "BEGIN; NOTIFY jobs, 'never'; ROLLBACK")
	exec(l, "BEGIN")
	exec(n.PgConn(), "NOTIFY jobs, 'after the block'")
	if nt := next(300 * time.Millisecond); nt != nil {
		t.Fatalf("a listener in a block got %+v", nt)
	}
	exec(l, "COMMIT")
	if nt := next(5 * time.Second); nt == nil || nt.Payload != "after the block" {
		t.Fatalf("after the listener's block: got %+v (a rolled-back NOTIFY must not come)", nt)
	}
	exec(l, "UNLISTEN jobs")
	exec(n.PgConn(), "NOTIFY jobs, 'unheard'")
	if nt := next(300 * time.Millisecond); nt != nil {
		t.Fatalf("after UNLISTEN: got %+v", nt)
	}
	// The listener's session is still in order.
	if err := l.ExecParams(ctx, "SELECT $1::text", [][]byte{[]byte("ok")}, nil, nil, nil).Read().Err; err != nil {
		t.Fatal(err)
	}
}

// execOn runs sql on conn.
func execOn(t *testing.T, conn *pgconn.PgConn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql).ReadAll(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// nextNotification waits up to d, idle, for the next notification of
// listener l (whose OnNotification feeds got); nil when none came.
func nextNotification(t *testing.T, l *pgconn.PgConn, got chan *pgconn.Notification, d time.Duration) *pgconn.Notification {
	t.Helper()
	select {
	case nt := <-got:
		return nt
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := l.WaitForNotification(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		t.Fatalf("waiting for a notification: %v", err)
	}
	select {
	case nt := <-got:
		return nt
	default:
		return nil
	}
}

// listener is a protocol-level connection whose notifications go to the
// channel it returns (pgconn hands them to OnNotification).
func listener(t *testing.T, dsn string) (*pgconn.PgConn, chan *pgconn.Notification) {
	t.Helper()
	got := make(chan *pgconn.Notification, 16)
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotification = func(_ *pgconn.PgConn, nt *pgconn.Notification) { got <- nt }
	conn, err := pgconn.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, got
}
