package sqlpg

import (
	"errors"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
)

// TestPgDumpStatements: what pg_dump sends and writes, translated without
// a database.
func TestPgDumpStatements(t *testing.T) {
	for _, c := range []struct{ sql, want, code string }{
		// a catalog's tableoid is the catalog's OID, named tableoid
		{"SELECT n.tableoid, n.oid FROM pg_namespace n", "2615 AS tableoid", ""},
		{"SELECT tableoid, oid FROM pg_catalog.pg_type", "1247 AS tableoid", ""},
		{"SELECT c.tableoid AS contableoid FROM pg_class t JOIN pg_constraint c ON c.conrelid = t.oid", "2606 AS contableoid", ""},
		{"SELECT 'pg_extension'::regclass", "_tandem_oid('pg_extension')", ""},
		{"SELECT 'pg_catalog.pg_class'::pg_catalog.regclass", "_tandem_oid('pg_class')", ""},
		// NO MINVALUE / NO MAXVALUE are the type's bounds
		{"CREATE SEQUENCE s AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1", "VALUES ('s', 23, 1, 1, 1, 2147483647, 0, 1, 0, NULL, NULL)", ""},
		{"CREATE SEQUENCE s INCREMENT BY -1", "VALUES ('s', 20, -1, -1, -9223372036854775808, -1, 0, -1, 0, NULL, NULL)", ""},
		{"CREATE SEQUENCE s AS text", "", "22023"},
		{"ALTER SEQUENCE public.s OWNED BY public.t.id", "owner_table = 't', owner_column = 'id'", ""},
		{"ALTER SEQUENCE s OWNED BY NONE", "owner_table = NULL", ""},
		// OWNER TO changes nothing, for a known role
		{"ALTER TABLE public.t OWNER TO tandem", "", ""},
		{"ALTER TABLE public.t OWNER TO somebody_else", "", "42704"},
		{"ALTER SCHEMA public OWNER TO pg_database_owner", "", ""},
		// comments are kept, and dropped with IS NULL
		{"COMMENT ON TABLE public.t IS 'x''y'", "VALUES ('rel', 't', '', 'x''y')", ""},
		{`COMMENT ON COLUMN "T".c IS 'z'`, "VALUES ('col', 'T', 'c', 'z')", ""},
		{"COMMENT ON COLUMN t.c IS NULL", "DELETE FROM _tandem_comments WHERE kind = 'col' AND name = 't' AND column_name = 'c'", ""},
		{"COMMENT ON SCHEMA public IS NULL", "VALUES ('schema', 'public', '', NULL)", ""},
		{"COMMENT ON SCHEMA other IS 'x'", "", "3F000"},
		{"COMMENT ON COLUMN other.t.c IS 'x'", "", "3F000"},
		{"COMMENT ON FUNCTION f() IS 'x'", "", ""},
	} {
		tr, err := Translate(c.sql, nil)
		if c.code != "" {
			var pe *pgwire.Error
			if !errors.As(err, &pe) || pe.Code != c.code {
				t.Errorf("%s: error %v, want SQLSTATE %s", c.sql, err, c.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if c.want == "" {
			if !tr.Noop {
				t.Errorf("%s: %q, want no statement", c.sql, tr.SQL)
			}
			continue
		}
		if !strings.Contains(tr.SQL, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.sql, tr.SQL, c.want)
		}
	}
}

func TestViewDefinition(t *testing.T) {
	def := "SELECT o.id, u.email FROM orders o JOIN \"Users\" u ON u.id = o.user_id WHERE o.total > 1"
	if got := viewDefinition(def, false); got != " "+def+";" {
		t.Errorf("unqualified: %q", got)
	}
	got := viewDefinition("WITH w AS (SELECT 1 AS x) SELECT * FROM w, t", true)
	if !strings.Contains(got, "FROM w, public.t") || !strings.HasSuffix(got, ";") {
		t.Errorf("qualified: %q", got)
	}
	if got := viewReads("v", `CREATE VIEW v AS SELECT * FROM "Users" JOIN orders USING (id)`); got != `["orders","users"]` {
		t.Errorf("viewReads: %s", got)
	}
}

func TestCatalogRelOIDs(t *testing.T) {
	for name, want := range map[string]int64{"pg_class": 1259, "pg_extension": 3079, "pg_attrdef": 2604, "pg_rewrite": 2618} {
		if got := RelOID(name); got != want {
			t.Errorf("RelOID(%s) = %d, want %d", name, got, want)
		}
	}
	if RelOID("orders") < 16384 {
		t.Errorf("a user relation's OID is below 16384")
	}
}

func TestViewRename(t *testing.T) {
	for _, c := range []struct {
		def, table, old, new string
		column               bool
		want                 string // "" : cannot follow
	}{
		{"SELECT a.id FROM a WHERE a.x > 1", "a", "a", "b", false, "SELECT b.id FROM b WHERE b.x > 1"},
		{"SELECT id FROM a x JOIN c ON c.id = x.id", "a", "a", "b", false, "SELECT id FROM b x JOIN c ON c.id = x.id"},
		{"SELECT id, c FROM t", "t", "c", "d", true, "SELECT id, d AS c FROM t"},
		{"SELECT x.c FROM t x JOIN u ON u.id = x.id", "t", "c", "d", true, "SELECT x.d AS c FROM t x JOIN u ON u.id = x.id"},
		{"SELECT u.c FROM t JOIN u ON true", "t", "c", "d", true, "SELECT u.c FROM t JOIN u ON true"},
		{"SELECT c FROM t JOIN u ON true", "t", "c", "d", true, ""},
		{"SELECT id FROM other", "t", "c", "d", true, "SELECT id FROM other"},
	} {
		got, ok := viewRename(c.def, c.table, c.old, c.new, c.column)
		if c.want == "" {
			if ok {
				t.Errorf("%s: followed to %q, want it given up", c.def, got)
			}
			continue
		}
		if !ok || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.def, got, ok, c.want)
		}
	}
}
