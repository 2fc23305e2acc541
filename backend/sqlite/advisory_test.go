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
	q := func(s any, sql, want string) { t.Helper(); wantRows(t, s.(*Session), sql, want) }
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

// TestLazyBegin: a read-write block takes the write lock at its first
// write (a READ COMMITTED block's reads run on readers, each on what was
// committed when it began, as PostgreSQL's), at a locking read, or at the
// first read of a REPEATABLE READ block, not at BEGIN: while it has only
// taken an advisory lock or read, another session writes (Flyway holds
// such a block open on one connection while it migrates on another).
func TestLazyBegin(t *testing.T) {
	db := open(t)
	a, _ := db.NewSession(context.Background(), "u", "d")
	defer a.Close()
	b, _ := db.NewSession(context.Background(), "u", "d")
	defer b.Close()
	run := wantRows
	sa, sb := a.(*Session), b.(*Session)
	run(t, sa, "CREATE TABLE lb (id int PRIMARY KEY)", "")
	run(t, sa, "BEGIN", "")
	if sa.TxStatus() != 'T' {
		t.Fatalf("after BEGIN: status %c", sa.TxStatus())
	}
	run(t, sa, "SELECT pg_try_advisory_xact_lock(1)", "true")
	run(t, sa, "SELECT 40 + 2", "42")
	run(t, sb, "INSERT INTO lb VALUES (1)", "") // a holds no write lock yet
	run(t, sb, "SELECT pg_try_advisory_lock(1)", "false")
	// READ COMMITTED, as PostgreSQL's: until the block writes, each read
	// sees what was committed when it began, on a reader.
	run(t, sa, "SELECT count(*) FROM lb", "1")
	run(t, sb, "INSERT INTO lb VALUES (3)", "")
	run(t, sa, "SELECT count(*) FROM lb", "2")
	if sa.held != nil {
		t.Fatal("the block took the write lock for a read")
	}
	run(t, sa, "SELECT id FROM lb WHERE id = 1 FOR UPDATE", "1") // a locking read starts it
	if sa.held == nil {
		t.Fatal("SELECT ... FOR UPDATE did not start the block")
	}
	run(t, sa, "INSERT INTO lb VALUES (2)", "")
	run(t, sa, "COMMIT", "")
	run(t, sb, "SELECT pg_try_advisory_lock(1)", "true")
	run(t, sb, "SELECT count(*) FROM lb", "3")
	// A REPEATABLE READ block reads one snapshot: its first read starts it.
	run(t, sa, "BEGIN ISOLATION LEVEL REPEATABLE READ", "")
	run(t, sa, "SELECT count(*) FROM lb", "3")
	if sa.held == nil {
		t.Fatal("a REPEATABLE READ block read outside its snapshot")
	}
	run(t, sa, "COMMIT", "")
	// SAVEPOINT starts the block (SQLite calls it read-only).
	run(t, sa, "BEGIN", "")
	run(t, sa, "SAVEPOINT s1", "")
	if sa.held == nil {
		t.Fatal("SAVEPOINT did not start the block")
	}
	run(t, sa, "SELECT count(*) FROM lb", "3")
	run(t, sa, "ROLLBACK TO SAVEPOINT s1", "")
	run(t, sa, "RELEASE SAVEPOINT s1", "")
	run(t, sa, "COMMIT", "")
	// A block that never started: ROLLBACK has nothing to undo, and
	// its transaction-level lock is gone.
	run(t, sa, "BEGIN", "")
	run(t, sa, "SELECT pg_try_advisory_xact_lock(2)", "true")
	run(t, sa, "ROLLBACK", "")
	if sa.TxStatus() != 'I' {
		t.Fatalf("after ROLLBACK: status %c", sa.TxStatus())
	}
	run(t, sb, "SELECT pg_try_advisory_lock(2)", "true")
}

// wantRows runs sql on s and wants its rows as fetchIDs writes them.
func wantRows(t *testing.T, s *Session, sql, want string) {
	t.Helper()
	rows, _, err := fetchIDs(t, s, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if rows != want {
		t.Fatalf("%s: %q, want %q", sql, rows, want)
	}
}
