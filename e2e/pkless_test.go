package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTablesWithoutPrimaryKey: tables without a primary key replicate on
// both pairs (issue 9 item 7): duplicate rows, NULLs, a json column, an
// update of duplicates, a delete of one of two equal rows, a column added
// in a block, and then a primary key added (the identity changes from the
// whole row to the key). The standby's rows equal the primary's as a
// multiset after each step.
func TestTablesWithoutPrimaryKey(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			p := connect(t, h.dsn(h.nodes["n1"]))
			s := connect(t, h.dsn(h.nodes["n2"]))
			exec := func(sql string) {
				t.Helper()
				if _, err := p.Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			dump := func(c *pgx.Conn, q string) string {
				t.Helper()
				rows, err := c.Query(ctx, q)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				defer rows.Close()
				var out []string
				for rows.Next() {
					vals, err := rows.Values()
					if err != nil {
						t.Fatal(err)
					}
					var b strings.Builder
					for _, v := range vals {
						b.WriteString(strings.TrimSpace(strings.ReplaceAll(fmt.Sprint(v), "\n", " ")))
						b.WriteString("|")
					}
					out = append(out, b.String())
				}
				if err := rows.Err(); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				return strings.Join(out, "\n")
			}
			same := func(step, q string) {
				t.Helper()
				want := dump(p, q)
				var got string
				for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					if got = dump(s, q); got == want {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: standby\n%s\nprimary\n%s", step, got, want)
					}
				}
			}
			const all = "SELECT id, v, note, doc::text FROM log ORDER BY id, v NULLS FIRST, note NULLS FIRST, doc::text NULLS FIRST"
			exec("CREATE TABLE log (id int, v text, note text, doc json)")
			exec(`INSERT INTO log VALUES (1, 'a', NULL, '{"k": [1, 2]}'), (1, 'a', NULL, '{"k": [1, 2]}'), (2, NULL, 'n', NULL), (3, 'c', 'x', '[]')`)
			same("inserts with duplicates and NULLs", all)
			exec("UPDATE log SET v = 'b' WHERE id = 1")
			same("update of two equal rows", all)
			if backend == "postgres" {
				// (ctid is PostgreSQL's; the SQLite back end has no such column)
				exec("DELETE FROM log WHERE ctid = (SELECT ctid FROM log WHERE id = 1 LIMIT 1)")
				same("delete of one of two equal rows", all)
			}
			exec("UPDATE log SET note = NULL WHERE id = 3")
			exec("DELETE FROM log WHERE v IS NULL")
			same("update to NULL, delete by NULL", all)
			// A column added in a block, with rows before and after it.
			exec("BEGIN")
			exec("INSERT INTO log VALUES (5, 'e', 'before', NULL)")
			exec("ALTER TABLE log ADD COLUMN extra int")
			exec("INSERT INTO log VALUES (6, 'f', 'after', NULL, 42)")
			exec("UPDATE log SET extra = 7 WHERE id = 5")
			exec("COMMIT")
			same("a column added in a block", "SELECT id, v, note, extra FROM log ORDER BY id, v, note, extra")
			// From full-row identity to a primary key.
			exec("DELETE FROM log WHERE id = 1")
			exec("ALTER TABLE log ADD PRIMARY KEY (id)")
			exec("UPDATE log SET v = 'by key' WHERE id = 6")
			exec("INSERT INTO log VALUES (7, 'g', NULL, NULL, NULL)")
			same("after a primary key was added", "SELECT id, v, note, extra FROM log ORDER BY id")
		})
	}
}
