package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestMultiMasterPostgresConflicts: on PostgreSQL back ends, the applier
// runs next to local REPEATABLE READ transactions that hold row locks, and
// never waits behind one for good.
//   - idle: a session on n2 holds an uncommitted UPDATE of a row and goes
//     idle; n1 commits the same row. n2 applies within seconds, the
//     session's next statement gets 40001 naming the table and the key, and
//     its connection stays usable (it reads n1's value).
//   - busy: the session holds the row and runs a long statement; n1 commits
//     the row; n2 applies within seconds and the statement gets 40001.
//   - the other order: the session's snapshot predates n1's commit but it
//     holds no lock; n2 applies, the session still reads its snapshot, and
//     its UPDATE of the row gets PostgreSQL's own 40001.
func TestMultiMasterPostgresConflicts(t *testing.T) {
	s := upMultiMaster(t, "postgres", 3, "[limits]\nidle_in_transaction_session_timeout = \"120s\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c1 := connect(t, s.dsn(s.nodes["n1"]))
	defer c1.Close(ctx)
	c2 := connect(t, s.dsn(s.nodes["n2"]))
	defer c2.Close(ctx)
	s.setup(ctx, c1, acctSchema...)

	// Idle holder.
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
	t.Logf("idle holder: n2 applied n1's commit %s after it", time.Since(start).Round(time.Millisecond))
	_, err = tx.Exec(ctx, "UPDATE acct SET bal = 1 WHERE id = 8")
	if sqlstate(err) != "40001" || !strings.Contains(err.Error(), `"acct"`) || !strings.Contains(err.Error(), "('7')") {
		t.Fatalf("the idle holder's next statement: %v; want 40001 naming \"acct\" key ('7'), as the certifier names it", err)
	}
	t.Logf("the idle holder got: %v", err)
	_ = tx.Rollback(ctx)
	var bal int
	if err := c2.QueryRow(ctx, "SELECT bal FROM acct WHERE id = 7").Scan(&bal); err != nil || bal != 500 {
		t.Fatalf("the aborted session's connection afterwards: bal %d, %v; want 500 on the same connection", bal, err)
	}

	// Busy holder: its statement runs while the applier waits.
	tx, err = c2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE acct SET bal = 0 WHERE id = 5"); err != nil {
		t.Fatal(err)
	}
	sleepErr := make(chan error, 1)
	go func() {
		_, err := tx.Exec(ctx, "SELECT pg_sleep(30)")
		sleepErr <- err
	}()
	time.Sleep(300 * time.Millisecond)
	start = time.Now()
	if _, err := c1.Exec(ctx, "UPDATE acct SET bal = 600 WHERE id = 5"); err != nil {
		t.Fatal(err)
	}
	s.waitConverged(s.ids, 10*time.Second)
	t.Logf("busy holder: n2 applied n1's commit %s after it", time.Since(start).Round(time.Millisecond))
	select {
	case err = <-sleepErr:
	case <-time.After(10 * time.Second):
		t.Fatal("the busy holder's statement still runs 10 s after n2 applied")
	}
	if sqlstate(err) != "40001" {
		t.Fatalf("the busy holder's statement: %v; want 40001", err)
	}
	_ = tx.Rollback(ctx)

	// The other order: PostgreSQL's own first-updater-wins on n2.
	tx, err = c2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, "SELECT bal FROM acct WHERE id = 3").Scan(&bal); err != nil || bal != 100 {
		t.Fatalf("read in the snapshot: %d %v", bal, err)
	}
	if _, err := c1.Exec(ctx, "UPDATE acct SET bal = 700 WHERE id = 3"); err != nil {
		t.Fatal(err)
	}
	s.waitConverged(s.ids, 10*time.Second)
	if err := tx.QueryRow(ctx, "SELECT bal FROM acct WHERE id = 3").Scan(&bal); err != nil || bal != 100 {
		t.Fatalf("the snapshot after n2 applied n1's commit: read %d, %v; want 100 (REPEATABLE READ)", bal, err)
	}
	_, err = tx.Exec(ctx, "UPDATE acct SET bal = bal + 1 WHERE id = 3")
	if sqlstate(err) != "40001" {
		t.Fatalf("updating a row changed after the snapshot: %v; want 40001", err)
	}
	_ = tx.Rollback(ctx)

	got := s.sameEverywhere(s.ids, "SELECT id, bal FROM acct WHERE id IN (3, 5, 7, 8) ORDER BY id")
	if got != "3 700\n5 600\n7 500\n8 100\n" {
		t.Fatalf("rows:\n%s", got)
	}
	st, err := s.mmStatus("n2")
	if err != nil || st.MM.EarlyAborts < 2 {
		t.Fatalf("n2 reports %+v early aborts (%v); want 2", st.MM, err)
	}
}

// TestMultiMasterPostgresDDL: schema changes on PostgreSQL back ends are
// certified like rows. A block with DDL and rows commits on every node;
// two concurrent schema changes on two nodes: one commits, the other gets
// 40001; a schema change concurrent with a write to its table: one of them
// gets 40001; CREATE INDEX CONCURRENTLY is refused (0A000).
func TestMultiMasterPostgresDDL(t *testing.T) {
	s := upMultiMaster(t, "postgres", 3, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c1 := connect(t, s.dsn(s.nodes["n1"]))
	defer c1.Close(ctx)
	c2 := connect(t, s.dsn(s.nodes["n2"]))
	defer c2.Close(ctx)

	// DDL and rows in one block, on n2.
	tx, err := c2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL)",
		"INSERT INTO items VALUES (1, 'one'), (2, 'two')",
		"ALTER TABLE items ADD COLUMN qty int NOT NULL DEFAULT 5",
		"UPDATE items SET qty = 7 WHERE id = 2",
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	s.waitConverged(s.ids, 30*time.Second)
	if got := s.sameEverywhere(s.ids, "SELECT id, name, qty FROM items ORDER BY id"); got != "1 one 5\n2 two 7\n" {
		t.Fatalf("items:\n%s", got)
	}

	// Two concurrent schema changes.
	t1, _ := c1.Begin(ctx)
	t2, _ := c2.Begin(ctx)
	if _, err := t1.Exec(ctx, "ALTER TABLE items ADD COLUMN a int"); err != nil {
		t.Fatal(err)
	}
	if _, err := t2.Exec(ctx, "CREATE TABLE other (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	e1, e2 := t1.Commit(ctx), t2.Commit(ctx)
	if e1 != nil || sqlstate(e2) != "40001" {
		t.Fatalf("concurrent schema changes: %v / %v; want the first to commit, the second 40001", e1, e2)
	}
	s.waitConverged(s.ids, 30*time.Second)

	// A schema change against a concurrent write to its table.
	t1, _ = c1.Begin(ctx)
	t2, _ = c2.Begin(ctx)
	if _, err := t2.Exec(ctx, "SELECT 1"); err != nil { // t2's snapshot
		t.Fatal(err)
	}
	if _, err := t1.Exec(ctx, "UPDATE items SET qty = 9 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = t2.Exec(ctx, "ALTER TABLE items ADD COLUMN b int")
	if err == nil {
		err = t2.Commit(ctx)
	} else {
		_ = t2.Rollback(ctx)
	}
	if sqlstate(err) != "40001" {
		t.Fatalf("a schema change concurrent with a write to its table: %v; want 40001", err)
	}
	s.waitConverged(s.ids, 30*time.Second)
	got := s.sameEverywhere(s.ids, "SELECT column_name FROM information_schema.columns WHERE table_name = 'items' ORDER BY ordinal_position")
	if got != "id\nname\nqty\na\n" {
		t.Fatalf("columns of items:\n%s", got)
	}

	_, err = c1.Exec(ctx, "CREATE INDEX CONCURRENTLY items_name ON items (name)")
	if sqlstate(err) != "0A000" {
		t.Fatalf("CREATE INDEX CONCURRENTLY: %v; want 0A000", err)
	}
	if _, err := c1.Exec(ctx, "CREATE INDEX items_name ON items (name)"); err != nil {
		t.Fatal(err)
	}
	s.waitConverged(s.ids, 30*time.Second)
	s.sameEverywhere(s.ids, "SELECT indexname FROM pg_indexes WHERE tablename = 'items' ORDER BY 1")
}
