package writeset

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	mod := func(f func(ws *Writeset)) *Writeset {
		ws := dmlWriteset()
		f(ws)
		return ws
	}
	tests := []struct {
		name    string
		ws      *Writeset
		wantErr string // substring; "" means valid
	}{
		{"dml", dmlWriteset(), ""},
		{"ddl", ddlWriteset(), ""},
		{"ddl without rows", &Writeset{DDL: "DROP TABLE x"}, ""},
		{"empty writeset", &Writeset{GSN: 1}, ""},
		{"unsequenced", mod(func(ws *Writeset) { ws.GSN = 0 }), ""},
		{"nil", nil, "nil writeset"},
		{"origin NUL", mod(func(ws *Writeset) { ws.Origin = "a\x00" }), "origin contains NUL"},
		{"op zero", mod(func(ws *Writeset) { ws.Rows[0].Op = 0 }), "bad operation"},
		{"op unknown", mod(func(ws *Writeset) { ws.Rows[0].Op = 99 }), "bad operation"},
		{"ddl row in dml", mod(func(ws *Writeset) { ws.Rows[0] = Row{Table: "t", Op: OpDDL} }), "outside a DDL writeset"},
		{"empty table", mod(func(ws *Writeset) { ws.Rows[1].Table = "" }), "empty table name"},
		{"table NUL", mod(func(ws *Writeset) { ws.Rows[1].Table = "t\x00" }), "contains NUL"},
		{"no pk", mod(func(ws *Writeset) { ws.Rows[2].KeyCols, ws.Rows[2].Key = nil, nil }), "no primary key"},
		{"key arity", mod(func(ws *Writeset) { ws.Rows[2].Key = ws.Rows[2].Key[:1] }), "1 key values for 3 key columns"},
		{"null key", mod(func(ws *Writeset) { ws.Rows[2].Key[1] = Null() }), `key column "sf_type" is NULL`},
		{"dup key col", mod(func(ws *Writeset) { ws.Rows[2].KeyCols[1] = "s_id" }), `duplicate key column "s_id"`},
		{"empty key col", mod(func(ws *Writeset) { ws.Rows[2].KeyCols[1] = "" }), "empty key column name"},
		{"delete with image", mod(func(ws *Writeset) { ws.Rows[2].Cols = []string{"a"}; ws.Rows[2].After = []Value{Int(1)} }), "delete has no after-image"},
		{"update without image", mod(func(ws *Writeset) { ws.Rows[0].Cols, ws.Rows[0].After = nil, nil }), "without an after-image"},
		{"image arity", mod(func(ws *Writeset) { ws.Rows[0].After = ws.Rows[0].After[:2] }), "2 after-image values for 5 columns"},
		{"dup col", mod(func(ws *Writeset) { ws.Rows[0].Cols[2] = "bit_1" }), `duplicate column "bit_1"`},
		{"key col missing from image", mod(func(ws *Writeset) { ws.Rows[0].Cols[0] = "other" }), `key column "s_id" missing`},
		{"insert key differs", mod(func(ws *Writeset) { ws.Rows[1].Key[0] = Int(8) }), "insert key 8 differs"},
		// Transactional DDL: the statements, then the block's rows.
		{"ddl with dml row", func() *Writeset { ws := ddlWriteset(); ws.Rows = append(ws.Rows, insertRow()); return ws }(), ""},
		{"ddl with bad dml row", func() *Writeset {
			ws := ddlWriteset()
			r := insertRow()
			r.Key = nil
			ws.Rows = append(ws.Rows, r)
			return ws
		}(), "key"},
		{"ddl row with key", func() *Writeset { ws := ddlWriteset(); ws.Rows[0].Key = []Value{Int(1)}; return ws }(), "carries no key"},
		{"ddl row no table", func() *Writeset { ws := ddlWriteset(); ws.Rows[0].Table = ""; return ws }(), "empty table name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ws.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %q, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestKeyChanged(t *testing.T) {
	tests := []struct {
		row  Row
		want bool
	}{
		{updateRow(), false},
		{keyChangeRow(), true},
		{insertRow(), false},
	}
	for _, tt := range tests {
		if got := tt.row.keyChanged(); got != tt.want {
			t.Errorf("%s %s: keyChanged() = %v, want %v", tt.row.Op, tt.row.Table, got, tt.want)
		}
	}
}
