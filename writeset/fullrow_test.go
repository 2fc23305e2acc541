package writeset

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

func fullRow(op Op) Row {
	return Row{Table: "log", Op: op, Cols: []string{"id", "v"}, After: []Value{Int(1), Null()}}
}

func TestFullRowOps(t *testing.T) {
	tests := []struct {
		name     string
		row      Row
		postgres string
		sqlite   string
		wantErr  string
	}{
		{name: "insert-row", row: fullRow(OpInsertRow),
			postgres: `INSERT INTO "log" ("id", "v") OVERRIDING SYSTEM VALUE VALUES ($1, $2)`,
			sqlite:   `INSERT INTO "log" ("id", "v") VALUES (?, ?)`},
		{name: "delete-row", row: fullRow(OpDeleteRow),
			postgres: `DELETE FROM "log" WHERE ctid = (SELECT ctid FROM "log" WHERE "id"::text IS NOT DISTINCT FROM $1 AND "v"::text IS NOT DISTINCT FROM $2 LIMIT 1)`,
			sqlite:   `DELETE FROM "log" WHERE rowid = (SELECT rowid FROM "log" WHERE "id" IS ? AND "v" IS ? LIMIT 1)`},
		{name: "with a key", row: func() Row { r := fullRow(OpDeleteRow); r.KeyCols, r.Key = []string{"id"}, []Value{Int(1)}; return r }(),
			wantErr: "has no key"},
		{name: "without an image", row: Row{Table: "log", Op: OpInsertRow}, wantErr: "without an image"},
		{name: "short image", row: func() Row { r := fullRow(OpInsertRow); r.After = r.After[:1]; return r }(),
			wantErr: "1 image values for 2 columns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for d, want := range map[Dialect]string{Postgres: tc.postgres, SQLite: tc.sqlite} {
				st, err := RowStatement(d, &tc.row)
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("%s: err %v, want %q", d.Name(), err, tc.wantErr)
					}
					continue
				}
				if err != nil || st.SQL != want || len(st.Args) != 2 || st.Args[1] != nil {
					t.Fatalf("%s: %q %v %v, want %q", d.Name(), st.SQL, st.Args, err, want)
				}
			}
			if tc.wantErr != "" {
				return
			}
			ws := &Writeset{GSN: 3, Epoch: 1, Rows: []Row{tc.row}}
			got, err := Decode(Encode(ws))
			if err != nil || got.Rows[0].Op != tc.row.Op || len(got.Rows[0].After) != 2 {
				t.Fatalf("round trip: %+v %v", got, err)
			}
			if keys := ConflictKeys(ws); len(keys) != 1 || keys[0] != TableKey("log") {
				t.Fatalf("conflict keys %q, want the table's", keys)
			}
		})
	}
}

// TestApplyFullRowSQLite: on a real SQLite table without a key, an update
// of one of two equal rows (delete-row of the old image, insert-row of the
// new) leaves the other alone, and NULLs match NULLs.
func TestApplyFullRowSQLite(t *testing.T) {
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "fullrow.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE log (id INTEGER, v TEXT); INSERT INTO log VALUES (1, NULL), (1, NULL), (2, 'x')`); err != nil {
		t.Fatal(err)
	}
	ws := &Writeset{GSN: 1, Rows: []Row{
		fullRow(OpDeleteRow),
		{Table: "log", Op: OpInsertRow, Cols: []string{"id", "v"}, After: []Value{Int(1), Text("new")}},
	}}
	sts, err := Statements(SQLite, ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if _, err := db.Exec(st.SQL, st.Args...); err != nil {
			t.Fatalf("%s: %v", st.SQL, err)
		}
	}
	var got string
	if err := db.QueryRow(`SELECT group_concat(id || ':' || coalesce(v, 'NULL'), ',') FROM (SELECT * FROM log ORDER BY id, v)`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "1:NULL,1:new,2:x" {
		t.Fatalf("rows %s, want 1:NULL,1:new,2:x", got)
	}
}
