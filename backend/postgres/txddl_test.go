package postgres

import (
	"testing"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/writeset"
)

func TestRenderRow(t *testing.T) {
	tests := []struct {
		name string
		row  writeset.Row
		want string
	}{
		{"upsert with quote and NULL", writeset.Row{Table: "t", Op: writeset.OpUpdate, KeyCols: []string{"id"}, Key: []writeset.Value{writeset.Text("1")},
			Cols: []string{"id", "v", "w"}, After: []writeset.Value{writeset.Text("1"), writeset.Text("it's $2"), writeset.Null()}},
			`INSERT INTO "t" ("id", "v", "w") OVERRIDING SYSTEM VALUE VALUES ('1', 'it''s $2', NULL) ON CONFLICT ("id") DO UPDATE SET "v" = excluded."v", "w" = excluded."w"`},
		{"delete, identifier holding $1", writeset.Row{Table: `we"$1ird`, Op: writeset.OpDelete, KeyCols: []string{"k$1"}, Key: []writeset.Value{writeset.Text("x")}},
			`DELETE FROM "we""$1ird" WHERE "k$1" = 'x'`},
	}
	for _, tt := range tests {
		got, err := renderRow(&tt.row)
		if err != nil || got != tt.want {
			t.Errorf("%s: renderRow = %q, %v\nwant %q", tt.name, got, err, tt.want)
		}
	}
}

func TestNoTxDDL(t *testing.T) {
	tests := []struct {
		sql, standby string
		ok           bool
	}{
		{"CREATE INDEX CONCURRENTLY i ON t (c)", "CREATE INDEX  i ON t (c)", true},
		{"create unique index concurrently if not exists i on t (c)", "create unique index  if not exists i on t (c)", true},
		{"DROP INDEX CONCURRENTLY i", "DROP INDEX  i", true},
		{"CREATE INDEX i ON t (c)", "", false},
		{"CREATE INDEX concurrently_i ON t (c)", "", false},
		{"CREATE TABLE t (concurrently int)", "", false},
		{"REINDEX TABLE CONCURRENTLY t", "REINDEX TABLE  t", true},
	}
	for _, tt := range tests {
		st := &Statement{sql: tt.sql}
		st.words = pgwire.Keywords(tt.sql, 4)
		st.kind = st.words[0]
		got, ok := noTxDDL(st)
		if ok != tt.ok || got != tt.standby {
			t.Errorf("noTxDDL(%q) = %q, %v; want %q, %v", tt.sql, got, ok, tt.standby, tt.ok)
		}
	}
}
