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

// TestTransactionalDDLSQLitePair: on the SQLite hot-standby pair, DDL inside
// a transaction block replicates with the block's rows as one unit; a
// rollback (or a rollback to a savepoint), or a SIGKILL of the primary
// inside the block, leaves no trace on either node (issue 19 item 1, SQLite
// back end). At 2-safe-visible the standby has
// applied a commit when COMMIT returns, so it is checked at once.
func TestTransactionalDDLSQLitePair(t *testing.T) { testTransactionalDDL(t, "sqlite") }

// TestTransactionalDDLPostgresPair: the same on the PostgreSQL pair. Both
// check statement order: rows written before a rename in the same block,
// and on PostgreSQL a data migration before ALTER ... SET NOT NULL.
func TestTransactionalDDLPostgresPair(t *testing.T) { testTransactionalDDL(t, "postgres") }

func testTransactionalDDL(t *testing.T, backend string) {
	h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "")
	h.start("n1")
	h.start("n2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := connect(t, h.dsn(h.nodes["n1"]))
	s := connect(t, h.dsn(h.nodes["n2"]))
	exec := func(sql string) {
		t.Helper()
		if _, err := p.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	tables := func(c *pgx.Conn) string {
		t.Helper()
		var names string
		if err := c.QueryRow(ctx, "SELECT coalesce(string_agg(tablename, ',' ORDER BY tablename), '') FROM pg_tables WHERE tablename LIKE 'tx\\_%'").Scan(&names); err != nil {
			t.Fatal(err)
		}
		return names
	}

	// CREATE + INSERT in one block, committed: both nodes have both.
	exec("BEGIN")
	exec("CREATE TABLE tx_a (id serial PRIMARY KEY, name varchar(20) NOT NULL, price numeric(8,2))")
	exec("INSERT INTO tx_a (name, price) VALUES ('one', 1.50), ('two', 2)")
	exec("CREATE INDEX tx_a_name ON tx_a (name)")
	exec("COMMIT")
	for name, c := range map[string]*pgx.Conn{"primary": p, "standby": s} {
		var n int
		var sum bool
		if err := c.QueryRow(ctx, "SELECT count(*), sum(price) = 3.5 FROM tx_a").Scan(&n, &sum); err != nil || n != 2 || !sum {
			t.Fatalf("%s after CREATE+INSERT committed: count %d sum right %v err %v", name, n, sum, err)
		}
	}
	// The standby reports the PostgreSQL types the primary recorded.
	var typ string
	if err := s.QueryRow(ctx, "SELECT data_type FROM information_schema.columns WHERE table_name = 'tx_a' AND column_name = 'name'").Scan(&typ); err != nil || typ != "character varying" {
		t.Fatalf("standby's column type: %q %v", typ, err)
	}

	// CREATE + INSERT rolled back: the table exists on no node.
	exec("BEGIN")
	exec("CREATE TABLE tx_b (id int PRIMARY KEY)")
	exec("INSERT INTO tx_b VALUES (1)")
	exec("ROLLBACK")
	// A savepoint rolled back takes its CREATE with it; the rest commits.
	exec("BEGIN")
	exec("CREATE TABLE tx_c (id int PRIMARY KEY, v text)")
	exec("SAVEPOINT s1")
	exec("CREATE TABLE tx_d (id int PRIMARY KEY)")
	exec("INSERT INTO tx_d VALUES (1)")
	exec("ROLLBACK TO SAVEPOINT s1")
	exec("INSERT INTO tx_c VALUES (1, 'kept')")
	exec("COMMIT")
	if got := tables(p); got != "tx_a,tx_c" {
		t.Fatalf("primary's tables: %q, want tx_a,tx_c", got)
	}
	if got := tables(s); got != "tx_a,tx_c" {
		t.Fatalf("standby's tables: %q, want tx_a,tx_c", got)
	}

	// ALTER TABLE ADD COLUMN + UPDATE of every row in one block.
	exec("BEGIN")
	exec("ALTER TABLE tx_a ADD COLUMN note text")
	exec("UPDATE tx_a SET note = 'n' || id")
	exec("COMMIT")
	var notes string
	if err := s.QueryRow(ctx, "SELECT string_agg(note, ',' ORDER BY id) FROM tx_a").Scan(&notes); err != nil || notes != "n1,n2" {
		t.Fatalf("standby after ALTER+UPDATE: %q %v", notes, err)
	}

	// The standby keeps applying afterwards (no gap, no stuck apply).
	exec("INSERT INTO tx_c VALUES (2, 'after')")
	var n int
	if err := s.QueryRow(ctx, "SELECT count(*) FROM tx_c").Scan(&n); err != nil || n != 2 {
		t.Fatalf("standby after a later write: %d rows, %v", n, err)
	}

	// Statements PostgreSQL refuses in a block answer 25001 there; outside
	// a block they run and replicate (issue 19 item 2).
	for _, q := range []string{"CREATE INDEX CONCURRENTLY tx_c_v ON tx_c (v)", "DROP INDEX CONCURRENTLY tx_a_name", "VACUUM", "CREATE DATABASE tx_other", "DROP DATABASE tx_other"} {
		exec("BEGIN")
		exec("INSERT INTO tx_c VALUES (100, 'rolled back')")
		_, err := p.Exec(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "25001" {
			t.Fatalf("%s in a block: %v, want SQLSTATE 25001", q, err)
		}
		exec("ROLLBACK")
	}
	exec("CREATE INDEX CONCURRENTLY tx_c_v ON tx_c (v)")
	exec("VACUUM")
	// Outside a block, CREATE DATABASE would make a database on the primary
	// alone: a replicated cluster is one database, so it is refused plainly.
	if _, err := p.Exec(ctx, "CREATE DATABASE tx_other"); err == nil {
		t.Fatal("CREATE DATABASE in a replicated cluster succeeded")
	} else if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, "database") {
		t.Fatalf("CREATE DATABASE outside a block: %v, want 0A000 naming the reason", err)
	}
	for name, c := range map[string]*pgx.Conn{"primary": p, "standby": s} {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE indexname = 'tx_c_v'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s: index tx_c_v made with CONCURRENTLY: %d (%v)", name, n, err)
		}
		if err := c.QueryRow(ctx, "SELECT count(*) FROM tx_c").Scan(&n); err != nil || n != 2 {
			t.Fatalf("%s: %d rows in tx_c after the refused blocks (%v), want 2", name, n, err)
		}
	}

	{
		// Statement order: rows fixed before the constraint that needs
		// them (PostgreSQL's SET NOT NULL; the SQLite back end has no
		// such ALTER, it builds an index instead), and, on both, rows
		// written before a rename in the same block.
		exec("BEGIN")
		exec("ALTER TABLE tx_a ADD COLUMN qty int")
		exec("UPDATE tx_a SET qty = id * 10")
		if backend == "postgres" {
			exec("ALTER TABLE tx_a ALTER COLUMN qty SET NOT NULL")
		} else {
			exec("CREATE UNIQUE INDEX tx_a_qty ON tx_a (qty)")
		}
		exec("INSERT INTO tx_c VALUES (3, 'renamed')")
		exec("ALTER TABLE tx_c RENAME TO tx_e")
		exec("INSERT INTO tx_e VALUES (4, 'after rename')")
		exec("SAVEPOINT s2")
		exec("ALTER TABLE tx_e ADD COLUMN gone int")
		exec("INSERT INTO tx_e VALUES (5, 'gone', 1)")
		exec("ROLLBACK TO SAVEPOINT s2")
		exec("COMMIT")
		var qty, vs, nullable string
		if err := s.QueryRow(ctx, "SELECT string_agg(qty::text, ',' ORDER BY id) FROM tx_a").Scan(&qty); err != nil || qty != "10,20" {
			t.Fatalf("standby's qty after the data migration: %q %v", qty, err)
		}
		if backend == "postgres" {
			if err := s.QueryRow(ctx, "SELECT is_nullable FROM information_schema.columns WHERE table_name = 'tx_a' AND column_name = 'qty'").Scan(&nullable); err != nil || nullable != "NO" {
				t.Fatalf("standby's qty nullable: %q %v", nullable, err)
			}
		}
		if err := s.QueryRow(ctx, "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM tx_e").Scan(&vs); err != nil || vs != "1:kept,2:after,3:renamed,4:after rename" {
			t.Fatalf("standby's tx_e: %q %v", vs, err)
		}
		if got := tables(s); got != "tx_a,tx_e" {
			t.Fatalf("standby's tables after the rename: %q", got)
		}
		var cols int
		if err := s.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'tx_e'").Scan(&cols); err != nil || cols != 2 {
			t.Fatalf("standby's tx_e has %d columns (%v), want 2: the rolled-back ADD COLUMN travelled", cols, err)
		}
		// And the standby goes on applying.
		exec("INSERT INTO tx_e VALUES (6, 'later')")
		if err := s.QueryRow(ctx, "SELECT count(*) FROM tx_e").Scan(&cols); err != nil || cols != 5 {
			t.Fatalf("standby after a later write: %d rows, %v", cols, err)
		}
	}
	st := h.tandem("status", "-c", h.file)
	if !strings.Contains(st, "n2") {
		t.Fatalf("status: %s", st)
	}

	// A SIGKILL of the primary between the ALTER and the UPDATE of a block
	// leaves neither on any node.
	exec("BEGIN")
	exec("ALTER TABLE tx_a ADD COLUMN killed int")
	h.kill("n1")
	h.start("n1")
	p2 := connect(t, h.dsn(h.nodes["n1"]))
	for name, c := range map[string]*pgx.Conn{"restarted primary": p2, "standby": s} {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'tx_a' AND column_name = 'killed'").Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s after a SIGKILL inside the block: column killed %d (%v)", name, n, err)
		}
	}
	if _, err := p2.Exec(ctx, "UPDATE tx_a SET name = name || '!'"); err != nil {
		t.Fatalf("a write after the restart: %v", err)
	}
	// (The standby may still be re-attaching: wait for it.)
	var names string
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = s.QueryRow(ctx, "SELECT string_agg(name, ',' ORDER BY id) FROM tx_a").Scan(&names); err == nil && names == "one!,two!" {
			return
		}
	}
	t.Fatalf("standby after the restart: %q %v", names, err)
}
