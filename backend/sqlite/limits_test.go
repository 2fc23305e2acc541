package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
)

// A column keeps to its type's limits on every write, with PostgreSQL's
// errors: smallint and integer ranges and numeric(p,s)'s precision (22003),
// varchar(n) and char(n) lengths (22001), as literals, parameters and
// expressions, in INSERT, UPDATE and ALTER COLUMN TYPE; the constraints do
// not show in the catalog.
func TestTypeLimits(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	s, _ := db.NewSession(ctx, "u", "d")
	defer s.Close()
	for _, sql := range []string{
		"CREATE TABLE lim (id int PRIMARY KEY, s smallint, i integer, b bigint, n numeric(4,2), v varchar(3), c char(2), t text)",
		"INSERT INTO lim VALUES (1, 32767, -2147483648, 9000000000, 99.99, 'abc', 'ab', 'long text')",
		"INSERT INTO lim (id, v) VALUES (2, 'ab   ')", // trailing spaces past n: allowed
		"INSERT INTO lim (id, n) VALUES (3, 1.234)",
	} {
		if _, err := run(t, s, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, tc := range []struct {
		sql  string
		args []any
		code string
	}{
		{"INSERT INTO lim (id, s) VALUES (10, 32768)", nil, "22003"},
		{"INSERT INTO lim (id, s) VALUES (10, $1)", []any{int64(-40000)}, "22003"},
		{"INSERT INTO lim (id, i) VALUES (10, 2147483648)", nil, "22003"},
		{"UPDATE lim SET i = i - 1 WHERE id = 1", nil, "22003"},
		{"INSERT INTO lim (id, n) VALUES (10, 123.4)", nil, "22003"},
		{"INSERT INTO lim (id, n) VALUES (10, $1)", []any{float64(99.999)}, "22003"},
		{"INSERT INTO lim (id, v) VALUES (10, 'abcd')", nil, "22001"},
		{"INSERT INTO lim (id, v) VALUES (10, $1)", []any{"wxyz"}, "22001"},
		{"UPDATE lim SET v = v || 'x' WHERE id = 1", nil, "22001"},
		{"INSERT INTO lim (id, c) VALUES (10, 'abc')", nil, "22001"},
		{"ALTER TABLE lim ALTER COLUMN b TYPE integer", nil, "22003"},
		{"ALTER TABLE lim ALTER COLUMN t TYPE varchar(4)", nil, "22001"},
	} {
		_, err := run(t, s, tc.sql, tc.args...)
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code != tc.code {
			t.Errorf("%s %v: %v, want SQLSTATE %s", tc.sql, tc.args, err, tc.code)
		}
	}
	// Within the limits, and a type change that widens them.
	for _, sql := range []string{
		"INSERT INTO lim (id, s, i, n, v, c) VALUES (11, -32768, 2147483647, -99.99, 'xyz', 'x')",
		"ALTER TABLE lim ALTER COLUMN s TYPE integer",
		"INSERT INTO lim (id, s) VALUES (12, 40000)",
		"ALTER TABLE lim ALTER COLUMN v TYPE varchar(10)",
		"UPDATE lim SET v = 'abcdefghij' WHERE id = 2",
		"ALTER TABLE lim ADD COLUMN s2 smallint",
	} {
		if _, err := run(t, s, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var pe *pgwire.Error
	if _, err := run(t, s, "UPDATE lim SET s2 = 70000 WHERE id = 1"); !errors.As(err, &pe) || pe.Code != "22003" {
		t.Errorf("an added smallint column: %v, want 22003", err)
	}
	// Renamed, the column keeps its limit; dropped, it takes it along.
	for _, sql := range []string{"ALTER TABLE lim RENAME COLUMN c TO c2", "ALTER TABLE lim DROP COLUMN s2", "ALTER TABLE lim DROP COLUMN n"} {
		if _, err := run(t, s, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := run(t, s, "UPDATE lim SET c2 = 'abc' WHERE id = 1"); !errors.As(err, &pe) || pe.Code != "22001" {
		t.Errorf("a renamed char(2) column: %v, want 22001", err)
	}
	// COPY checks them too.
	if _, err := run(t, s, "CREATE TABLE lim2 (a smallint, v varchar(2))"); err != nil {
		t.Fatal(err)
	}
	// numeric(4,4), a scale equal to the precision (TPC-C's taxes): below 1.
	if _, err := run(t, s, "CREATE TABLE tax (r numeric(4,4))"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, s, "INSERT INTO tax VALUES (0.1234)"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, s, "INSERT INTO tax VALUES (1.5)"); !errors.As(err, &pe) || pe.Code != "22003" {
		t.Errorf("1.5 into numeric(4,4): %v, want 22003", err)
	}
	str := func(v string) *string { return &v }
	for _, tc := range []struct {
		row  []*string
		code string
	}{
		{[]*string{str("1"), str("ab")}, ""},
		{[]*string{str("40000"), str("ab")}, "22003"},
		{[]*string{str("1"), str("abc")}, "22001"},
	} {
		sent := false
		_, err := s.(interface {
			CopyFrom(context.Context, string, []string, func() ([]*string, bool, error)) (int64, error)
		}).CopyFrom(ctx, "lim2", []string{"a", "v"}, func() ([]*string, bool, error) {
			if sent {
				return nil, false, nil
			}
			sent = true
			return tc.row, true, nil
		})
		if tc.code == "" && err != nil {
			t.Errorf("COPY %v: %v", tc.row, err)
		}
		if tc.code != "" && (!errors.As(err, &pe) || pe.Code != tc.code) {
			t.Errorf("COPY of a row out of the limits: %v, want %s", err, tc.code)
		}
	}
	// The user's CHECK constraints only.
	st, _ := s.Prepare(ctx, "SELECT count(*) FROM pg_constraint WHERE contype = 'c'")
	r, err := s.Execute(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]any, 1)
	if ok, err := r.Next(row); !ok || err != nil {
		t.Fatal(err)
	}
	r.Close()
	if n, _ := row[0].(int64); n != 0 {
		t.Errorf("pg_constraint lists %v CHECK constraints, want 0 (the type limits are tandem's own)", row[0])
	}
}
