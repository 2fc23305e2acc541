package sqlite

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
)

// Long plain literals of a large statement become parameters after the
// statement's own; typed, prefixed, dollar-quoted and commented ones stay.
func TestHoistLiterals(t *testing.T) {
	big := strings.Repeat("x", hoistMinLiteral)
	pad := " /*" + strings.Repeat(" ", hoistMinStatement) + "*/"
	cases := []struct {
		name, sql, want string
		vals            []any
	}{
		{"small statement", "INSERT INTO t VALUES ('" + big + "')", "", nil},
		{"insert", "INSERT INTO t VALUES (1, '" + big + "')" + pad, "INSERT INTO t VALUES (1, $1)" + pad, []any{big}},
		{"after the statement's own parameters", "UPDATE t SET v = '" + big + "' WHERE id = $2 AND w = '" + big + "y'" + pad,
			"UPDATE t SET v = $3 WHERE id = $2 AND w = $4" + pad, []any{big, big + "y"}},
		{"doubled quotes", "SELECT '" + big + "''s'" + pad, "SELECT $1" + pad, []any{big + "'s"}},
		{"short literal stays", "SELECT 'a', '" + big + "'" + pad, "SELECT 'a', $1" + pad, []any{big}},
		{"typed literal stays", "SELECT DATE '" + big + "'" + pad, "", nil},
		{"E string stays", "SELECT E'" + big + "\\''" + pad, "", nil},
		{"unicode string stays", "SELECT U&'" + big + "'" + pad, "", nil},
		{"continued literal stays", "SELECT '" + big + "'\n'more'" + pad, "", nil},
		{"in a comment", "SELECT 1 -- '" + big + "'\n" + pad, "", nil},
		{"dollar quoted", "SELECT $q$ '" + big + "' $q$" + pad, "", nil},
		{"cast", "INSERT INTO t VALUES ('" + big + "'::jsonb)" + pad, "INSERT INTO t VALUES ($1::jsonb)" + pad, []any{big}},
	}
	for _, c := range cases {
		got, vals := hoistLiterals(c.sql)
		want := c.want
		if want == "" {
			want = c.sql
		}
		if got != want || !reflect.DeepEqual(vals, c.vals) {
			t.Errorf("%s: hoisted %d values, text %.60q..., want %d values, %.60q...", c.name, len(vals), got, len(c.vals), want)
		}
	}
}

// A large statement with hoisted literals runs as written: the values
// arrive intact, the statement's own parameters keep their places, and
// RETURNING returns them.
func TestHoistedStatementRuns(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	s, err := db.NewSession(ctx, "u", "d")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(sql string, args ...any) []any {
		t.Helper()
		st, err := s.Prepare(ctx, sql)
		if err != nil {
			t.Fatalf("%.80s: %v", sql, err)
		}
		if st.NumParams() != len(args) {
			t.Fatalf("%.80s: %d parameters, want %d", sql, st.NumParams(), len(args))
		}
		res, err := s.Execute(ctx, st, args)
		if err != nil {
			t.Fatalf("%.80s: %v", sql, err)
		}
		defer res.Close()
		if res.Columns() == nil {
			return nil
		}
		row := make([]any, len(res.Columns()))
		if ok, err := res.Next(row); !ok || err != nil {
			t.Fatalf("%.80s: no row (%v)", sql, err)
		}
		return row
	}
	run("CREATE TABLE t (id int PRIMARY KEY, v text, w text)")
	v := strings.Repeat("ab'", hoistMinStatement/3)
	lit := strings.ReplaceAll(v, "'", "''")
	row := run("INSERT INTO t VALUES ($1, '"+lit+"', $2) RETURNING length(v), w", int64(1), "w")
	if row[0] != int64(len(v)) || row[1] != "w" {
		t.Fatalf("RETURNING %v, want %d, w", row, len(v))
	}
	row = run("SELECT v = '" + lit + "', length(w) FROM t WHERE id = 1")
	if row[0] != true && row[0] != int64(1) {
		t.Fatalf("the stored value differs from the literal: %v", row)
	}
}

// Hoisting changes nothing a client sees: a statement with a long literal
// (hoisted) answers the column types a short one (not hoisted) does, and
// the values it should.
func TestHoistedLikeWritten(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	s, err := db.NewSession(ctx, "u", "d")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cases := []struct {
		q    func(v string) string
		want func(v string) any
	}{
		{func(v string) string { return "SELECT '" + v + "'" }, func(v string) any { return v }},
		{func(v string) string { return "SELECT length('" + v + "')" }, func(v string) any { return int64(len(v)) }},
		{func(v string) string { return "SELECT '" + v + "' || 'y'" }, func(v string) any { return v + "y" }},
		{func(v string) string { return "SELECT upper('" + v + "') = '" + strings.ToUpper(v) + "'" }, func(string) any { return true }},
		{func(v string) string { return "SELECT '" + v + "' LIKE 'x%'" }, func(string) any { return true }},
		{func(v string) string { return "SELECT CAST('" + v + "' AS varchar) = '" + v + "'" }, func(string) any { return true }},
	}
	run := func(q string) (pgwire.Column, any) {
		t.Helper()
		st, err := s.Prepare(ctx, q)
		if err != nil {
			t.Fatalf("%.50s: %v", q, err)
		}
		res, err := s.Execute(ctx, st, nil)
		if err != nil {
			t.Fatalf("%.50s: %v", q, err)
		}
		defer res.Close()
		row := make([]any, 1)
		if ok, err := res.Next(row); !ok || err != nil {
			t.Fatalf("%.50s: no row (%v)", q, err)
		}
		return res.Columns()[0], row[0]
	}
	short, long := strings.Repeat("x", 100), strings.Repeat("x", hoistMinStatement)
	for i, c := range cases {
		if _, vals := hoistLiterals(c.q(long)); vals == nil {
			t.Fatalf("case %d: nothing hoisted", i)
		}
		cs, vs := run(c.q(short))
		cl, vl := run(c.q(long))
		if cs != cl {
			t.Errorf("case %d: column %+v hoisted, %+v written", i, cl, cs)
		}
		if !reflect.DeepEqual(vs, c.want(short)) || !reflect.DeepEqual(vl, c.want(long)) {
			t.Errorf("case %d: values %T / %T, not what the statement says", i, vs, vl)
		}
	}
}

// A large text to translate reserves translateCost times its size in the
// session's budget (refused with 53200 when that does not fit), and past
// maxTranslateBytes it is refused with 54000.
func TestReserveTranslation(t *testing.T) {
	cases := []struct {
		name     string
		size     int
		limit    int64 // 0: no budget
		wantCode string
		reserved int64
	}{
		{"short: not counted", translateReserveMin - 1, 1 << 30, "", 0},
		{"counted", 1 << 20, 1 << 30, "", translateCost << 20},
		{"no budget", 1 << 20, 0, "", 0},
		{"does not fit the budget", 1 << 20, 10 << 20, pgwire.CodeOutOfMemory, 0},
		{"too large", maxTranslateBytes + 1, 1 << 40, pgwire.CodeProgramLimitExceeded, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			var b *pgwire.MemoryBudget
			if c.limit > 0 {
				b = pgwire.NewMemoryBudget(c.limit, 0, nil)
				ctx = pgwire.WithMemoryBudget(ctx, b)
			}
			release, err := reserveTranslation(ctx, strings.Repeat("x", c.size))
			if err != nil {
				if code := pgwire.ToErrorResponse(err).Code; code != c.wantCode {
					t.Fatalf("err %v (%s), want SQLSTATE %q", err, code, c.wantCode)
				}
				return
			}
			if c.wantCode != "" {
				t.Fatalf("no error, want SQLSTATE %s", c.wantCode)
			}
			if b != nil && b.InUse() != c.reserved {
				t.Fatalf("reserved %d, want %d", b.InUse(), c.reserved)
			}
			release()
			if b != nil && b.InUse() != 0 {
				t.Fatalf("%d in use after release", b.InUse())
			}
		})
	}
}
