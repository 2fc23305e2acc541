package writeset

import (
	"math"
	"testing"
)

func TestInline(t *testing.T) {
	tests := []struct {
		name string
		d    Dialect
		s    Stmt
		want string
	}{
		{"postgres: every value a string literal", Postgres, Stmt{SQL: `INSERT INTO "t$1" ("a", "b", "c", "d", "e") VALUES ($1, $2, $3, $4, $5) -- '$1'`,
			Args: []any{int64(-3), "it's", nil, []byte{0, 0xff}, true}},
			`INSERT INTO "t$1" ("a", "b", "c", "d", "e") VALUES ('-3', 'it''s', NULL, '\x00ff', 'true') -- '$1'`},
		{"postgres: $10 is not $1 then 0", Postgres, Stmt{SQL: "$1,$10", Args: []any{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}}, "'a','j'"},
		{"sqlite: native literals", SQLite, Stmt{SQL: `UPDATE "q?" SET a = ?, b = ?, c = ?, d = ?, e = ? WHERE k = ? AND s = '?'`,
			Args: []any{int64(7), 2.0, []byte("hi"), false, math.Inf(1), "x'y"}},
			`UPDATE "q?" SET a = 7, b = 2.0, c = X'6869', d = 0, e = 9e999 WHERE k = 'x''y' AND s = '?'`},
	}
	for _, tt := range tests {
		got, err := Inline(tt.d, tt.s)
		if err != nil || got != tt.want {
			t.Errorf("%s: Inline = %q, %v\nwant %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := Inline(SQLite, Stmt{SQL: "? ?", Args: []any{int64(1)}}); err == nil {
		t.Error("more placeholders than arguments: no error")
	}
	if _, err := Inline(SQLite, Stmt{SQL: "?", Args: []any{struct{}{}}}); err == nil {
		t.Error("an unknown argument type: no error")
	}
}
