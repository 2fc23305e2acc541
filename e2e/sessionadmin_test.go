package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestSessionAdminSQLite: on the SQLite back end an operator sees a
// node's sessions in pg_stat_activity and ends them as on PostgreSQL: a
// session idle in a transaction (on SQLite it holds the one write lock)
// is ended by pg_terminate_backend, gets FATAL 57P01, and its transaction
// is rolled back; a long query is stopped by pg_cancel_backend (57014)
// and its session goes on; pg_backend_pid() is the session's own process
// id, the one its BackendKeyData carried.
func TestSessionAdminSQLite(t *testing.T) {
	c := startCluster(t, clusterSpec{backend: "sqlite"})
	ctx := context.Background()
	admin := connect(t, c.DSN)
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE TABLE adm (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	cfg, err := pgx.ParseConfig(c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "victim"
	victim, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close(ctx)
	var pid int64
	if err := victim.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if uint32(pid) != victim.PgConn().PID() {
		t.Fatalf("pg_backend_pid() = %d, the session's BackendKeyData said %d", pid, victim.PgConn().PID())
	}
	var adminPID int64
	if err := admin.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&adminPID); err != nil || adminPID == pid {
		t.Fatalf("two sessions share pg_backend_pid() %d (%v)", pid, err)
	}
	if _, err := victim.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := victim.Exec(ctx, "INSERT INTO adm VALUES (1)"); err != nil {
		t.Fatal(err)
	}

	var (
		gotPID                          int64
		user, state, query, addr, btype string
		xactStart                       *string
	)
	if err := admin.QueryRow(ctx, `SELECT pid, usename, state, query, client_addr, backend_type, xact_start
		FROM pg_stat_activity WHERE application_name = 'victim'`).Scan(&gotPID, &user, &state, &query, &addr, &btype, &xactStart); err != nil {
		t.Fatalf("the victim in pg_stat_activity: %v", err)
	}
	if gotPID != pid || user != "tandem" || state != "idle in transaction" || !strings.Contains(query, "INSERT INTO adm") ||
		addr != "127.0.0.1" || btype != "client backend" || xactStart == nil {
		t.Fatalf("pg_stat_activity shows pid %d user %q state %q query %q addr %q type %q xact_start %v; want pid %d, tandem, idle in transaction, its INSERT, 127.0.0.1, client backend, a transaction start",
			gotPID, user, state, query, addr, btype, xactStart, pid)
	}
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = pg_backend_pid() AND state = 'active'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the asking session active in pg_stat_activity: %d rows (%v)", n, err)
	}

	var ok bool
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid+1000003).Scan(&ok); err != nil || ok {
		t.Fatalf("pg_terminate_backend of no session = %v (%v), want false", ok, err)
	}
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'victim'").Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend of the victim = %v (%v), want true", ok, err)
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = victim.Exec(vctx, "INSERT INTO adm VALUES (2)")
	cancel()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57P01" || pe.Severity != "FATAL" {
		t.Fatalf("the terminated session's next statement: %v, want FATAL 57P01", err)
	}
	if !victim.IsClosed() {
		t.Fatal("the terminated session's connection is still open")
	}
	// Its transaction rolled back and the write lock is free.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := admin.Exec(wctx, "INSERT INTO adm VALUES (3)"); err != nil {
		t.Fatalf("a write after the terminated session: %v", err)
	}
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM adm WHERE id IN (1, 2)").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the terminated session's rows: %d (%v), want none", n, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the terminated session is still in pg_stat_activity")
		}
	}

	// pg_cancel_backend stops a long query; its session goes on.
	long := connect(t, c.DSN)
	defer long.Close(ctx)
	var longPID int64
	if err := long.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&longPID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		lctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		var s int64
		done <- long.QueryRow(lctx, "SELECT count(*) FROM generate_series(1, 2000000000)").Scan(&s)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query LIKE '%generate_series%'", longPID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the long query never showed as active in pg_stat_activity")
		}
	}
	if err := admin.QueryRow(ctx, "SELECT pg_cancel_backend($1)", longPID).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_cancel_backend = %v (%v), want true", ok, err)
	}
	select {
	case err := <-done:
		if !errors.As(err, &pe) || pe.Code != "57014" {
			t.Fatalf("the canceled query: %v, want 57014", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long query did not stop within 30 s of pg_cancel_backend")
	}
	var one int
	if err := long.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("the canceled session afterwards: %v", err)
	}
	// statement_timeout stops it too, also while the back end runs it to
	// describe it (pgx describes before it executes).
	if _, err := long.Exec(ctx, "SET statement_timeout = '300ms'"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = long.QueryRow(ctx, "SELECT count(*) FROM generate_series(1, 2000000000)").Scan(new(int64))
	if !errors.As(err, &pe) || pe.Code != "57014" || !strings.Contains(pe.Message, "statement timeout") {
		t.Fatalf("a long query under statement_timeout 300ms: %v (after %v), want 57014 statement timeout", err, time.Since(start))
	}
}
