package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestSettingsInTransactions: settings follow transaction blocks as on
// PostgreSQL, through pgx's extended protocol on the SQLite back end: a
// SET LOCAL (statement_timeout, TimeZone) holds until the block ends and
// is enforced while it holds, a SET inside a rolled-back block is undone
// and ParameterStatus reports the way back, set_config(..., true) is
// local, and pg_sleep waits until a statement timeout or a cancel ends it.
func TestSettingsInTransactions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startCluster(t, clusterSpec{backend: "sqlite"})
	conn := connect(t, c.DSN)
	show := func(name string) string {
		t.Helper()
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	timeoutErr := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "57014"
	}

	// SET LOCAL statement_timeout is enforced inside the block only.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '150ms'"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = tx.Exec(ctx, "SELECT pg_sleep($1)", 5.0)
	if !timeoutErr(err) || time.Since(start) > 3*time.Second {
		t.Fatalf("pg_sleep(5) under SET LOCAL statement_timeout 150ms: %v after %s", err, time.Since(start))
	}
	_ = tx.Rollback(ctx)
	if v := show("statement_timeout"); v != "0" {
		t.Fatalf("statement_timeout after the block: %q", v)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_sleep($1)", 0.3); err != nil {
		t.Fatalf("pg_sleep(0.3) after the block ended: %v", err)
	}

	// A SET in a rolled-back block is undone, TimeZone reported back.
	tx, _ = conn.Begin(ctx)
	if _, err := tx.Exec(ctx, "SET TimeZone = 'Asia/Tokyo'"); err != nil {
		t.Fatal(err)
	}
	if got := conn.PgConn().ParameterStatus("TimeZone"); got != "Asia/Tokyo" {
		t.Fatalf("ParameterStatus inside the block: %q", got)
	}
	var text string
	if err := tx.QueryRow(ctx, "SELECT $1::timestamptz::text", "2024-01-05 10:00+00").Scan(&text); err != nil || text != "2024-01-05 19:00:00+09" {
		t.Fatalf("Tokyo's view inside the block: %q %v", text, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if v := show("TimeZone"); v != "UTC" {
		t.Fatalf("TimeZone after ROLLBACK: %q", v)
	}
	if got := conn.PgConn().ParameterStatus("TimeZone"); got != "UTC" {
		t.Fatalf("ParameterStatus after ROLLBACK: %q", got)
	}

	// Committed SETs stay, SET LOCAL and set_config(..., true) do not;
	// ROLLBACK TO a savepoint undoes what came after it.
	tx, _ = conn.Begin(ctx)
	for _, q := range []string{
		"SET application_name = 'kept'",
		"SAVEPOINT a",
		"SET application_name = 'after-a'",
		"ROLLBACK TO SAVEPOINT a",
		"SELECT set_config('search_path', 'public, other', true)",
		"SET LOCAL lock_timeout = '5s'",
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var app, path, lock string
	if err := tx.QueryRow(ctx, "SELECT current_setting('application_name'), current_setting('search_path'), current_setting('lock_timeout')").Scan(&app, &path, &lock); err != nil {
		t.Fatal(err)
	}
	if app != "kept" || path != "public, other" || lock != "5s" {
		t.Fatalf("inside the block: application_name %q, search_path %q, lock_timeout %q", app, path, lock)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if app, path, lock = show("application_name"), show("search_path"), show("lock_timeout"); app != "kept" || path == "public, other" || lock != "0" {
		t.Fatalf("after COMMIT: application_name %q, search_path %q, lock_timeout %q", app, path, lock)
	}

	// A cancel ends pg_sleep.
	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SELECT pg_sleep(30)")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	if err := conn.PgConn().CancelRequest(cctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !timeoutErr(err) {
			t.Fatalf("pg_sleep(30) after a cancel request: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pg_sleep(30) went on after a cancel request")
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the session after the cancel: %v", err)
	}
}
