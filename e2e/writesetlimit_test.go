package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestWritesetLimit: a transaction whose writeset exceeds
// replication.max_writeset_bytes is rolled back with 54000 and a hint, on
// both back ends, leaving nothing on either node; the pair goes on, and a
// migration under the limit (ALTER, UPDATE of every row, CREATE INDEX in
// one block) replicates whole. Before the limit was a setting, a 20,000-row
// data migration failed at COMMIT with 58030 against a fixed 16 MiB.
func TestWritesetLimit(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "max_writeset_bytes = 1048576\n")
			h.start("n1")
			h.start("n2")
			h.start("router")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			p := connect(t, h.dsn(h.router))
			exec := func(sql string) error {
				_, err := p.Exec(ctx, sql)
				return err
			}
			for _, q := range []string{
				"CREATE TABLE big (id int PRIMARY KEY, pad text)",
				"INSERT INTO big SELECT g, 'x' FROM generate_series(1, 2000) g",
			} {
				if err := exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			// About 2,000 rows x 1 KiB: twice the limit.
			if err := exec("BEGIN"); err != nil {
				t.Fatal(err)
			}
			if err := exec("UPDATE big SET pad = repeat('y', 1000)"); err != nil {
				t.Fatal(err)
			}
			err := exec("COMMIT")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "54000" || !strings.Contains(pe.Message, "max_writeset_bytes") || pe.Hint == "" {
				t.Fatalf("COMMIT of a 2 MiB writeset with a 1 MiB limit: %v, want 54000 naming max_writeset_bytes with a hint", err)
			}
			for _, n := range []string{h.router, h.nodes["n2"]} {
				waitRows(t, h.dsn(n), "SELECT count(*) FROM big WHERE pad = 'x'", 2000)
			}
			// Under the limit, a migration in one block replicates whole.
			for _, q := range []string{"BEGIN", "ALTER TABLE big ADD COLUMN tier int",
				"UPDATE big SET tier = id % 3", "CREATE INDEX big_tier ON big (tier)", "COMMIT"} {
				if err := exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM big WHERE tier = id % 3", 2000)
			waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM pg_indexes WHERE indexname = 'big_tier'", 1)
		})
	}
}
