package sqlpg_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
)

// TestMergePlan: a MERGE's parameter types are the columns' they are
// written to or compared with (PostgreSQL 15's, checked against it), and
// its plan fills the work table once and carries out one step per
// clause that changes rows, in the clauses' order.
func TestMergePlan(t *testing.T) {
	cases := []struct {
		sql    string
		params []uint32
		steps  []string // each step's first word
		twice  bool     // a clause updates or deletes
	}{
		{`MERGE INTO pt t USING (SELECT 1) s ON t.id = $1 WHEN MATCHED THEN UPDATE SET n = $2 WHEN NOT MATCHED THEN INSERT (id, s, m) VALUES ($1, $3, $4)`,
			[]uint32{23, 1700, 1043, 900001}, []string{"UPDATE", "INSERT"}, true},
		{`MERGE INTO pt USING (VALUES ($1::int8)) v(x) ON pt.id = v.x WHEN MATCHED AND pt.n > $2 THEN DELETE WHEN MATCHED THEN DO NOTHING`,
			[]uint32{20, 1700}, []string{"DELETE"}, true},
		{`MERGE INTO pt USING pt AS o ON pt.id = o.id + 1 WHEN NOT MATCHED THEN INSERT VALUES (o.id + 1, o.s)`,
			nil, []string{"INSERT"}, false},
		{`MERGE INTO pt USING pt AS o ON pt.id = o.id WHEN NOT MATCHED THEN DO NOTHING`, nil, nil, false},
	}
	for _, c := range cases {
		tr, err := sqlpg.TranslateFresh(c.sql, paramSchema{})
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		mp := tr.Merge
		if mp == nil || tr.SQL != "" || tr.Kind != "MERGE" {
			t.Errorf("%s: not a merge plan: %+v", c.sql, tr)
			continue
		}
		if fmt.Sprint(tr.Params) != fmt.Sprint(c.params) {
			t.Errorf("%s: parameter types %v, want %v", c.sql, tr.Params, c.params)
		}
		var words []string
		for _, s := range mp.Steps {
			words = append(words, strings.Fields(s)[0])
		}
		if fmt.Sprint(words) != fmt.Sprint(c.steps) {
			t.Errorf("%s: steps %q, want %v", c.sql, mp.Steps, c.steps)
		}
		if (mp.Twice != "") != c.twice {
			t.Errorf("%s: twice check %q", c.sql, mp.Twice)
		}
		if !strings.HasPrefix(mp.Fill, "INSERT INTO temp._tandem_merge ") || !strings.HasSuffix(mp.Fill, mp.Query) {
			t.Errorf("%s: fill %q", c.sql, mp.Fill)
		}
	}
}

// TestMergeRefused: what PostgreSQL refuses when it parses a MERGE is
// refused with its SQLSTATE, and what the SQLite back end cannot do is
// 0A000 naming it.
func TestMergeRefused(t *testing.T) {
	cases := []struct{ sql, code string }{
		{`MERGE INTO nosuch t USING pt s ON true WHEN MATCHED THEN DELETE`, "42P01"},
		{`MERGE INTO pt t USING pt s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nosuch = 1`, "42703"},
		{`MERGE INTO pt t USING pt s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id, 1)`, "42601"},
		{`MERGE INTO pt t USING pt s ON t.id = s.id WHEN MATCHED THEN UPDATE SET m = 'bad'`, "22P02"},
		{`MERGE INTO pt t USING pt s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES ('x')`, "22P02"},
		{`MERGE INTO pt t USING pt s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING *`, "0A000"},
		{`MERGE INTO pt t USING pt s ON t.id = s.id WHEN NOT MATCHED THEN INSERT DEFAULT VALUES`, "0A000"},
		{`MERGE INTO other.pt t USING pt s ON t.id = s.id WHEN MATCHED THEN DELETE`, "3F000"},
	}
	for _, c := range cases {
		_, err := sqlpg.TranslateFresh(c.sql, paramSchema{})
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: %v, want SQLSTATE %s", c.sql, err, c.code)
		}
	}
}
