package sqlite

import (
	"context"
	"testing"
	"time"
)

// TestAdvisoryLocks: pg_advisory_lock and its family between two sessions
// of one node: try and wait, counted holds, the two key spaces,
// transaction-level locks released by COMMIT and at the end of an
// autocommit statement, every lock released when the session closes, and
// a wait that ends with the statement's cancel.
func TestAdvisoryLocks(t *testing.T) {
	db := open(t)
	a, _ := db.NewSession(context.Background(), "u", "d")
	b, _ := db.NewSession(context.Background(), "u", "d")
	defer b.Close()
	q := func(s interface{}, sql, want string) {
		t.Helper()
		rows, _, err := fetchIDs(t, s.(*Session), sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if rows != want {
			t.Fatalf("%s: %q, want %q", sql, rows, want)
		}
	}
	q(a, "SELECT pg_advisory_lock(42)", "")
	q(b, "SELECT pg_try_advisory_lock(42)", "false")
	q(a, "SELECT pg_try_advisory_lock(42)", "true") // a second hold
	q(b, "SELECT pg_try_advisory_lock(0, 42)", "true")
	q(b, "SELECT pg_try_advisory_lock_shared(43)", "true")
	q(a, "SELECT pg_try_advisory_lock_shared(43)", "true")
	q(a, "SELECT pg_try_advisory_lock(43)", "false")

	got := make(chan error, 1)
	go func() {
		_, _, err := fetchIDs(t, b, "SELECT pg_advisory_lock(42)")
		got <- err
	}()
	q(a, "SELECT pg_advisory_unlock(42)", "true")
	select {
	case err := <-got:
		t.Fatalf("b got the lock while a still held it once: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	q(a, "SELECT pg_advisory_unlock(42)", "true")
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b still waits after a unlocked")
	}
	q(a, "SELECT pg_advisory_unlock(42)", "false")

	// Transaction level: until COMMIT; in autocommit, until the statement ends.
	q(a, "BEGIN", "")
	q(a, "SELECT pg_advisory_xact_lock(7)", "")
	q(b, "SELECT pg_try_advisory_lock(7)", "false")
	q(a, "COMMIT", "")
	q(b, "SELECT pg_try_advisory_xact_lock(7)", "true")
	q(a, "SELECT pg_try_advisory_lock(7)", "true")
	q(a, "SELECT pg_advisory_unlock_all()", "")
	q(b, "SELECT pg_try_advisory_lock(7)", "true")

	// A wait ends when the statement is cancelled.
	go func() {
		time.Sleep(200 * time.Millisecond)
		a.Cancel()
	}()
	if _, _, err := fetchIDs(t, a, "SELECT pg_advisory_lock(7)"); code(err) != "57014" {
		t.Fatalf("cancelled wait: %v, want 57014", err)
	}
	// Closing a session releases its locks.
	q(a, "SELECT pg_advisory_lock(8)", "")
	a.Close()
	q(b, "SELECT pg_try_advisory_lock(8)", "true")
}
