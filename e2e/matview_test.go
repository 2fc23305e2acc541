package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestMatviewSQLitePair: on the SQLite hot-standby pair, a materialized
// view's rows and state replicate: CREATE MATERIALIZED VIEW (with and
// without data), REFRESH (a write of its rows; DDL when it changes whether
// the view is populated), REFRESH inside a block, DROP; and CREATE TABLE
// ... (LIKE ... INCLUDING ALL) makes the same table on the standby; rows
// of a table with generated columns apply (the standby computes them). At
// 2-safe-visible the standby has applied a commit when COMMIT returns.
// MERGE's changes replicate as well.
func TestMatviewSQLitePair(t *testing.T) {
	h := writeHSOn(t, "sqlite", "2-safe-visible", "relaxed", "")
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
	both := map[string]*pgx.Conn{"primary": p, "standby": s}
	rows := func(what, q, want string) {
		t.Helper()
		for name, c := range both {
			var got string
			if err := c.QueryRow(ctx, q).Scan(&got); err != nil || got != want {
				t.Fatalf("%s: %s on the %s: %q (%v), want %q", what, q, name, got, err, want)
			}
		}
	}
	unpopulated := func(what, view string) {
		t.Helper()
		for name, c := range both {
			var n int
			err := c.QueryRow(ctx, "SELECT count(*) FROM "+view).Scan(&n)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "55000" {
				t.Fatalf("%s: reading %s on the %s: %v, want 55000", what, view, name, err)
			}
		}
	}
	sums := "SELECT coalesce(string_agg(grp || '=' || total, ',' ORDER BY grp), '') FROM mvr_sum"

	exec("CREATE TABLE mvr_t (id int PRIMARY KEY, grp text NOT NULL, n int NOT NULL)")
	exec("INSERT INTO mvr_t VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 5)")
	exec("CREATE MATERIALIZED VIEW mvr_sum AS SELECT grp, sum(n) AS total FROM mvr_t GROUP BY grp")
	exec("CREATE UNIQUE INDEX mvr_sum_grp ON mvr_sum (grp)")
	rows("created", sums, "a=3,b=5")
	rows("catalog", "SELECT string_agg(matviewname || ':' || ispopulated || ':' || hasindexes, ',') FROM pg_matviews", "mvr_sum:true:true")

	exec("INSERT INTO mvr_t VALUES (4, 'c', 7)")
	rows("before REFRESH", sums, "a=3,b=5")
	exec("REFRESH MATERIALIZED VIEW mvr_sum")
	rows("REFRESH", sums, "a=3,b=5,c=7")
	exec("DELETE FROM mvr_t WHERE grp = 'b'")
	exec("REFRESH MATERIALIZED VIEW CONCURRENTLY mvr_sum")
	rows("REFRESH CONCURRENTLY (fewer rows)", sums, "a=3,c=7")

	exec("BEGIN")
	exec("UPDATE mvr_t SET n = n * 10")
	exec("REFRESH MATERIALIZED VIEW mvr_sum")
	exec("COMMIT")
	rows("REFRESH in a block", sums, "a=30,c=70")
	exec("BEGIN")
	exec("UPDATE mvr_t SET n = 0")
	exec("REFRESH MATERIALIZED VIEW mvr_sum")
	exec("ROLLBACK")
	rows("REFRESH rolled back", sums, "a=30,c=70")

	exec("REFRESH MATERIALIZED VIEW mvr_sum WITH NO DATA")
	unpopulated("REFRESH WITH NO DATA", "mvr_sum")
	exec("CREATE MATERIALIZED VIEW mvr_later AS SELECT id, n FROM mvr_t WITH NO DATA")
	unpopulated("created WITH NO DATA", "mvr_later")
	exec("REFRESH MATERIALIZED VIEW mvr_sum")
	exec("REFRESH MATERIALIZED VIEW mvr_later")
	rows("populated again", sums, "a=30,c=70")
	rows("populated", "SELECT string_agg(id || ':' || n, ',' ORDER BY id) FROM mvr_later", "1:10,2:20,4:70")
	exec("ALTER MATERIALIZED VIEW mvr_later RENAME TO mvr_renamed")
	exec("INSERT INTO mvr_t VALUES (5, 'd', 1)")
	exec("REFRESH MATERIALIZED VIEW mvr_renamed")
	rows("renamed", "SELECT count(*)::text FROM mvr_renamed", "4")

	exec("CREATE TABLE mvr_copy (LIKE mvr_t INCLUDING ALL)")
	exec("INSERT INTO mvr_copy SELECT * FROM mvr_t")
	rows("LIKE", "SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'mvr_copy'", "mvr_copy_pkey")
	rows("LIKE's rows", "SELECT count(*)::text FROM mvr_copy", "4")

	exec("DROP MATERIALIZED VIEW mvr_sum, mvr_renamed")
	rows("dropped", "SELECT count(*)::text FROM pg_class WHERE relkind = 'm'", "0")
	exec("INSERT INTO mvr_copy VALUES (6, 'e', 1)")
	rows("applying after", "SELECT count(*)::text FROM mvr_copy", "5")

	// Generated columns: the standby computes them (an after-image that
	// named one stopped the standby: cannot INSERT into generated column).
	exec("CREATE TABLE mvr_gen (id serial PRIMARY KEY, a int NOT NULL, s int GENERATED ALWAYS AS (a * 2) STORED)")
	exec("INSERT INTO mvr_gen (a) VALUES (21)")
	exec("UPDATE mvr_gen SET a = 5")
	exec("CREATE TABLE mvr_gen_nokey (a int, s int GENERATED ALWAYS AS (a + 1) STORED)")
	exec("INSERT INTO mvr_gen_nokey (a) VALUES (1)")
	rows("generated column", "SELECT string_agg(id || ':' || a || ':' || s, ',') FROM mvr_gen", "1:5:10")
	rows("generated column, no key", "SELECT string_agg(a || ':' || s, ',') FROM mvr_gen_nokey", "1:2")
	exec("INSERT INTO mvr_copy VALUES (7, 'f', 1)")
	rows("applying after generated columns", "SELECT count(*)::text FROM mvr_copy", "6")

	// MERGE: its rows replicate as the UPDATE, DELETE and INSERT it runs
	// (its work table is the connection's own, never replicated); one
	// that fails leaves nothing on either node.
	exec("CREATE TABLE mvr_stock (id serial PRIMARY KEY, sku text UNIQUE NOT NULL, qty int NOT NULL)")
	exec("INSERT INTO mvr_stock (sku, qty) VALUES ('a', 1), ('b', 2), ('c', 3)")
	merge := `MERGE INTO mvr_stock t USING (VALUES ($1::text, $2::int)) s(sku, d) ON t.sku = s.sku
		WHEN MATCHED AND t.qty + s.d <= 0 THEN DELETE
		WHEN MATCHED THEN UPDATE SET qty = t.qty + s.d
		WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (s.sku, s.d)`
	for _, a := range []struct {
		sku string
		d   int
		tag string
	}{{"a", 10, "MERGE 1"}, {"b", -2, "MERGE 1"}, {"d", 4, "MERGE 1"}} {
		tag, err := p.Exec(ctx, merge, a.sku, a.d)
		if err != nil || tag.String() != a.tag {
			t.Fatalf("MERGE %s %d: %q, %v", a.sku, a.d, tag, err)
		}
	}
	stock := "SELECT string_agg(id || ':' || sku || ':' || qty, ',' ORDER BY id) FROM mvr_stock"
	rows("MERGE", stock, "1:a:11,3:c:3,4:d:4")
	_, err := p.Exec(ctx, "MERGE INTO mvr_stock t USING (SELECT 'c' AS sku UNION ALL SELECT 'c') s ON t.sku = s.sku WHEN MATCHED THEN UPDATE SET qty = 0")
	if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "21000" {
		t.Fatalf("MERGE of a row matched twice: %v, want 21000", err)
	}
	exec("MERGE INTO mvr_stock t USING mvr_copy s ON t.id = s.id WHEN MATCHED THEN UPDATE SET qty = t.qty + s.n WHEN NOT MATCHED AND s.id > 6 THEN INSERT (sku, qty) VALUES (s.grp, s.n)")
	rows("MERGE from a table", stock, "1:a:21,3:c:3,4:d:74,5:f:1")
}
