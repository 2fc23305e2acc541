package writeset

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRowStatement(t *testing.T) {
	tests := []struct {
		name     string
		row      Row
		postgres string
		sqlite   string
		args     []any
	}{
		{
			name:     "insert",
			row:      insertRow(),
			postgres: `INSERT INTO "call_forwarding" ("s_id", "sf_type", "start_time", "end_time", "numberx") OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5) ON CONFLICT ("s_id", "sf_type", "start_time") DO UPDATE SET "end_time" = excluded."end_time", "numberx" = excluded."numberx"`,
			sqlite:   `INSERT INTO "call_forwarding" ("s_id", "sf_type", "start_time", "end_time", "numberx") VALUES (?, ?, ?, ?, ?) ON CONFLICT ("s_id", "sf_type", "start_time") DO UPDATE SET "end_time" = excluded."end_time", "numberx" = excluded."numberx"`,
			args:     []any{int64(7), int64(2), int64(8), int64(16), "555-0100"},
		},
		{
			name:     "update keeping the key is an upsert",
			row:      updateRow(),
			postgres: `INSERT INTO "subscriber" ("s_id", "bit_1", "vlr_location", "msc_location", "blob") OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5) ON CONFLICT ("s_id") DO UPDATE SET "bit_1" = excluded."bit_1", "vlr_location" = excluded."vlr_location", "msc_location" = excluded."msc_location", "blob" = excluded."blob"`,
			sqlite:   `INSERT INTO "subscriber" ("s_id", "bit_1", "vlr_location", "msc_location", "blob") VALUES (?, ?, ?, ?, ?) ON CONFLICT ("s_id") DO UPDATE SET "bit_1" = excluded."bit_1", "vlr_location" = excluded."vlr_location", "msc_location" = excluded."msc_location", "blob" = excluded."blob"`,
			args:     []any{int64(7), true, int64(-3), nil, []byte{0, 1, 0xfe}},
		},
		{
			name:     "update changing the key addresses the old key",
			row:      keyChangeRow(),
			postgres: `UPDATE "public"."special_facility" SET "s_id" = $1, "sf_type" = $2, "data_a" = $3, "score" = $4 WHERE "s_id" = $5 AND "sf_type" = $6`,
			sqlite:   `UPDATE "public"."special_facility" SET "s_id" = ?, "sf_type" = ?, "data_a" = ?, "score" = ? WHERE "s_id" = ? AND "sf_type" = ?`,
			args:     []any{int64(1), int64(4), "x", keyChangeRow().After[3].Any(), int64(1), int64(1)},
		},
		{
			name:     "delete",
			row:      deleteRow(),
			postgres: `DELETE FROM "call_forwarding" WHERE "s_id" = $1 AND "sf_type" = $2 AND "start_time" = $3`,
			sqlite:   `DELETE FROM "call_forwarding" WHERE "s_id" = ? AND "sf_type" = ? AND "start_time" = ?`,
			args:     []any{int64(7), int64(2), int64(0)},
		},
		{
			name:     "key-only table does nothing on conflict",
			row:      Row{Table: "tags", Op: OpInsert, KeyCols: []string{"a", "b"}, Key: []Value{Int(1), Text("x")}, Cols: []string{"b", "a"}, After: []Value{Text("x"), Int(1)}},
			postgres: `INSERT INTO "tags" ("b", "a") OVERRIDING SYSTEM VALUE VALUES ($1, $2) ON CONFLICT ("a", "b") DO NOTHING`,
			sqlite:   `INSERT INTO "tags" ("b", "a") VALUES (?, ?) ON CONFLICT ("a", "b") DO NOTHING`,
			args:     []any{"x", int64(1)},
		},
		{
			name:     "identifiers are quoted",
			row:      Row{Table: `we"ird`, Op: OpDelete, KeyCols: []string{`Select`}, Key: []Value{Text("k")}},
			postgres: `DELETE FROM "we""ird" WHERE "Select" = $1`,
			sqlite:   `DELETE FROM "we""ird" WHERE "Select" = ?`,
			args:     []any{"k"},
		},
	}
	for _, tt := range tests {
		for _, d := range []struct {
			dialect Dialect
			want    string
		}{{Postgres, tt.postgres}, {SQLite, tt.sqlite}} {
			t.Run(tt.name+"/"+d.dialect.Name(), func(t *testing.T) {
				st, err := RowStatement(d.dialect, &tt.row)
				if err != nil {
					t.Fatal(err)
				}
				if st.SQL != d.want {
					t.Errorf("SQL:\n got %s\nwant %s", st.SQL, d.want)
				}
				if !reflect.DeepEqual(st.Args, tt.args) {
					t.Errorf("Args = %#v, want %#v", st.Args, tt.args)
				}
				if n := strings.Count(st.SQL, "?") + strings.Count(st.SQL, "$"); n != len(st.Args) {
					t.Errorf("%d placeholders for %d args", n, len(st.Args))
				}
			})
		}
	}
}

func TestStatements(t *testing.T) {
	ws := dmlWriteset()
	sts, err := Statements(Postgres, ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != len(ws.Rows) {
		t.Fatalf("%d statements for %d rows", len(sts), len(ws.Rows))
	}
	for i, prefix := range []string{"INSERT INTO \"subscriber\"", "INSERT INTO \"call_forwarding\"", "DELETE FROM", "UPDATE \"public\""} {
		if !strings.HasPrefix(sts[i].SQL, prefix) {
			t.Errorf("statement %d = %q, want prefix %q", i, sts[i].SQL, prefix)
		}
	}

	ddl := ddlWriteset()
	sts, err = Statements(SQLite, ddl)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || sts[0].SQL != ddl.DDL || sts[0].Args != nil {
		t.Fatalf("DDL statements = %+v", sts)
	}

	bad := dmlWriteset()
	bad.Rows[2].KeyCols = nil
	if _, err := Statements(SQLite, bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Statements(invalid) = %v, want ErrInvalid", err)
	}
}

func TestSQLBuildersRefuse(t *testing.T) {
	tests := []struct {
		name string
		call func() (string, error)
		want string
	}{
		{"upsert no table", func() (string, error) { return UpsertSQL(Postgres, "", []string{"a"}, []string{"a"}) }, "empty table"},
		{"upsert empty schema part", func() (string, error) { return UpsertSQL(Postgres, "s.", []string{"a"}, []string{"a"}) }, "empty part"},
		{"upsert no key", func() (string, error) { return UpsertSQL(Postgres, "t", []string{"a"}, nil) }, "no primary key"},
		{"upsert no cols", func() (string, error) { return UpsertSQL(Postgres, "t", nil, []string{"a"}) }, "no columns"},
		{"upsert key not in cols", func() (string, error) { return UpsertSQL(Postgres, "t", []string{"b"}, []string{"a"}) }, "not among the columns"},
		{"upsert dup col", func() (string, error) { return UpsertSQL(Postgres, "t", []string{"a", "a"}, []string{"a"}) }, "duplicate"},
		{"update NUL col", func() (string, error) { return UpdateSQL(SQLite, "t", []string{"a", "b\x00"}, []string{"a"}) }, "NUL"},
		{"delete no key", func() (string, error) { return DeleteSQL(SQLite, "t", nil) }, "no primary key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sql, err := tt.call()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q, %v; want ErrInvalid mentioning %q", sql, err, tt.want)
			}
		})
	}
	row := deleteRow()
	row.Op = OpDDL
	if _, err := RowStatement(SQLite, &row); !errors.Is(err, ErrInvalid) {
		t.Fatalf("RowStatement(ddl row) = %v, want ErrInvalid", err)
	}
}

func TestDialects(t *testing.T) {
	tests := []struct {
		d           Dialect
		name, p1, q string
	}{
		{Postgres, "postgres", "$1", `"a""b"`},
		{SQLite, "sqlite", "?", `"a""b"`},
	}
	for _, tt := range tests {
		if tt.d.Name() != tt.name || tt.d.Placeholder(1) != tt.p1 || tt.d.QuoteIdent(`a"b`) != tt.q {
			t.Errorf("%s: Name=%q Placeholder(1)=%q QuoteIdent=%q", tt.name, tt.d.Name(), tt.d.Placeholder(1), tt.d.QuoteIdent(`a"b`))
		}
	}
	if got := Postgres.Placeholder(12); got != "$12" {
		t.Errorf("Postgres.Placeholder(12) = %q", got)
	}
}
