package sqlite

import (
	"context"
	"testing"
)

// TestNumericText: a numeric without a declared scale prints to 15
// significant digits (what a double keeps of a decimal), so arithmetic
// prints as PostgreSQL's exact numeric where the result fits.
func TestNumericText(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0.1 + 0.2, "0.3"},
		{0.2 * 3, "0.6"},
		{1.1 * 3, "3.3"},
		{123.456, "123.456"},
		{-0.000001234, "-0.000001234"},
		{1e20, "100000000000000000000"},
		{1.0 / 3, "0.333333333333333"},
		{99999999999.99, "99999999999.99"},
		{0, "0"},
	} {
		if got := numericText(c.f); got != c.want {
			t.Errorf("numericText(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}

// TestNumericStoredAtScale: a numeric(p,s) column keeps what is written
// to it rounded to s digits, halves away from zero on the decimal written,
// as PostgreSQL stores it: 1.005 is 1.01 (the double 1.00499999... would
// round to 1.00), in every write path (literal, parameter as number and
// as text, expression, INSERT ... SELECT, ON CONFLICT's SET, UPDATE,
// COPY), so sums and comparisons see the stored values; round() and casts
// round the same way.
func TestNumericStoredAtScale(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	bs, _ := db.NewSession(ctx, "u", "d")
	defer bs.Close()
	s := bs.(*Session)
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{"CREATE TABLE nsc (id int PRIMARY KEY, n numeric(6,2), w numeric(4,0), x numeric)", nil},
		{"INSERT INTO nsc VALUES (1, 1.005, 2.5, 1.005), (2, -2.675, -2.5, 2.675)", nil},
		{"INSERT INTO nsc VALUES ($1, $2, $3, $4)", []any{int64(3), float64(10.125), float64(0.5), float64(10.125)}},
		{"INSERT INTO nsc VALUES ($1, $2, $3, $4)", []any{int64(4), "0.285", "1.5", "0.285"}},
		{"INSERT INTO nsc (id, n) VALUES (5, 1.1 * 1.15)", nil},
		{"INSERT INTO nsc (id, n) SELECT 6, 3.335", nil},
		{"INSERT INTO nsc (id, n) VALUES (6, 0) ON CONFLICT (id) DO UPDATE SET n = excluded.n + 1.115", nil},
		{"INSERT INTO nsc (id, n) VALUES (7, 1)", nil},
		{"UPDATE nsc SET n = n + 0.005 WHERE id = 7", nil},
	} {
		if _, err := run(t, s, st.sql, st.args...); err != nil {
			t.Fatalf("%s: %v", st.sql, err)
		}
	}
	n, err := s.CopyFrom(ctx, "nsc", nil, func() func() ([]*string, bool, error) {
		done := false
		return func() ([]*string, bool, error) {
			if done {
				return nil, false, nil
			}
			done = true
			v := []string{"8", "4.445", "4.5", "4.445"}
			return []*string{&v[0], &v[1], &v[2], &v[3]}, true, nil
		}
	}())
	if err != nil || n != 1 {
		t.Fatalf("COPY: %d rows, %v", n, err)
	}
	// As PostgreSQL 15 answers them.
	wantRows(t, s, "SELECT n::text FROM nsc ORDER BY id", "1.01,-2.68,10.13,0.29,1.27,1.12,1.01,4.45")
	wantRows(t, s, "SELECT w::text FROM nsc WHERE id <= 4 ORDER BY id", "3,-3,1,2")
	wantRows(t, s, "SELECT x::text FROM nsc WHERE id <= 4 ORDER BY id", "1.005,2.675,10.125,0.285")
	wantRows(t, s, "SELECT sum(n)::text FROM nsc", "16.60")
	wantRows(t, s, "SELECT id FROM nsc WHERE n = 1.01 ORDER BY id", "1,7")
	wantRows(t, s, "SELECT round(x, 2)::text FROM nsc WHERE id <= 4 ORDER BY id", "1.01,2.68,10.13,0.29")
	wantRows(t, s, "SELECT round(-2.5)::text", "-3")
	wantRows(t, s, "SELECT round(1250, -2)::text", "1300")
	wantRows(t, s, "SELECT (2.675::numeric(6,2))::text", "2.68")
	if _, err := run(t, s, "INSERT INTO nsc (id, n) VALUES (9, $1)", float64(9999.995)); code(err) != "22003" {
		t.Errorf("9999.995 into numeric(6,2): %v, want 22003", err)
	}
}

// TestUnicodeCase: upper, lower and ILIKE change every letter, as
// PostgreSQL does under the C.UTF-8 locale tandem reports (SQLite's own
// upper and lower change only ASCII letters); round of a double rounds
// halves to even, as PostgreSQL's rint(); extract of an interval.
func TestUnicodeCase(t *testing.T) {
	db := open(t)
	bs, _ := db.NewSession(context.Background(), "u", "d")
	defer bs.Close()
	s := bs.(*Session)
	for _, sql := range []string{
		"CREATE TABLE uc (id int PRIMARY KEY, name text)",
		"INSERT INTO uc VALUES (1, 'éclair'), (2, 'Ölmühle'), (3, 'apple')",
	} {
		if _, err := run(t, s, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	wantRows(t, s, "SELECT upper(name) FROM uc ORDER BY id", "ÉCLAIR,ÖLMÜHLE,APPLE")
	wantRows(t, s, "SELECT lower(name) FROM uc ORDER BY id", "éclair,ölmühle,apple")
	wantRows(t, s, "SELECT id FROM uc WHERE name ILIKE 'É%' OR name ILIKE 'ö%' ORDER BY id", "1,2")
	wantRows(t, s, "SELECT round(2.5::float8)::text || ' ' || round(3.5::float8)::text || ' ' || round(2.5)::text", "2 4 3")
	wantRows(t, s, "SELECT extract(epoch from interval '1 day 2 hours')::text", "93600.000000")
}
