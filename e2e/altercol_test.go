package e2e

import (
	"context"
	"testing"
	"time"
)

// TestAlterColumnReplicates: a migration that adds a column, fills it and
// then makes it NOT NULL and drops its default (what Django's AddField
// and Alembic's alter_column send) runs in one block on both pairs, and
// the standby has the same column definition afterwards; so do a column
// widened to varchar(40) and a type change with USING.
func TestAlterColumnReplicates(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			p := connect(t, h.dsn(h.nodes["n1"]))
			for _, q := range []string{
				"CREATE TABLE acct (id int PRIMARY KEY, name text)",
				"INSERT INTO acct VALUES (1, 'a'), (2, 'b')",
				"BEGIN",
				"ALTER TABLE acct ADD COLUMN tier int DEFAULT 0",
				"UPDATE acct SET tier = id * 10",
				"ALTER TABLE acct ALTER COLUMN tier SET NOT NULL",
				"ALTER TABLE acct ALTER COLUMN tier DROP DEFAULT",
				"ALTER TABLE acct ALTER COLUMN name SET DEFAULT 'anon'",
				"ALTER TABLE acct ALTER COLUMN name TYPE varchar(40)",
				"COMMIT",
				"ALTER TABLE acct ALTER COLUMN tier TYPE bigint USING tier + 1",
			} {
				if _, err := p.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			const def = `SELECT count(*) FROM information_schema.columns WHERE table_name = 'acct' AND (
				(column_name = 'tier' AND is_nullable = 'NO' AND column_default IS NULL) OR
				(column_name = 'name' AND is_nullable = 'YES' AND column_default LIKE '%anon%' AND character_maximum_length = 40))`
			waitRows(t, h.dsn(h.nodes["n1"]), def, 2)
			waitRows(t, h.dsn(h.nodes["n2"]), def, 2)
			waitRows(t, h.dsn(h.nodes["n2"]), "SELECT sum(tier) FROM acct", 32)
			waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM information_schema.columns WHERE table_name = 'acct' AND column_name = 'tier' AND data_type = 'bigint'", 1)
			// The standby's constraint holds for what it applies next.
			if _, err := p.Exec(ctx, "INSERT INTO acct (id) VALUES (3)"); err == nil {
				t.Fatal("a NULL into a NOT NULL column without default was accepted")
			}
			if _, err := p.Exec(ctx, "INSERT INTO acct (id, tier) VALUES (3, 5)"); err != nil {
				t.Fatal(err)
			}
			waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM acct WHERE name = 'anon'", 1)
		})
	}
}
