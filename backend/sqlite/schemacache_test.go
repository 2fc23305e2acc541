package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/writeset"
)

type sessionT = pgwire.BackendSession

// shape runs sql and returns its result's columns as name:type-OID.
func shape(t *testing.T, s sessionT, sql string) string {
	t.Helper()
	res, err := run(t, s, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for _, c := range res.Columns() {
		out = append(out, fmt.Sprintf("%s:%d", c.Name, c.OID))
	}
	return strings.Join(out, ",")
}

// logReplicator keeps the writesets a primary commits, numbered from 1.
type logReplicator struct{ log []*writeset.Writeset }

func (r *logReplicator) Writable() error { return nil }
func (r *logReplicator) Prepare(_ context.Context, ws *writeset.Writeset) (func(context.Context, bool) error, error) {
	ws.GSN, ws.Epoch = uint64(len(r.log)+1), 1
	r.log = append(r.log, ws)
	return func(context.Context, bool) error { return nil }, nil
}

// Cached translations and column lists follow the schema a statement sees:
// after another session's DDL commits, after a DDL rolled back (whole or
// to a savepoint), beside another session's temporary table, and after DDL that arrives as a writeset (a standby's
// apply), a query reports the column types of that moment.
func TestSchemaCachesFollowDDL(t *testing.T) {
	ctx := context.Background()
	for _, replicated := range []bool{false, true} {
		t.Run(fmt.Sprintf("replicated=%v", replicated), func(t *testing.T) {
			db := open(t)
			repl := &logReplicator{}
			if replicated {
				if err := db.EnableReplication(repl); err != nil {
					t.Fatal(err)
				}
			}
			s1, _ := db.NewSession(ctx, "u", "d")
			defer s1.Close()
			s2, _ := db.NewSession(ctx, "u", "d")
			defer s2.Close()
			const q = "SELECT a, b FROM t"
			steps := []struct {
				s    sessionT
				sql  string
				want string // the shape of a query; "" for a statement
			}{
				{s1, "CREATE TABLE t (a int PRIMARY KEY, b int)", ""},
				{s2, q, "a:23,b:23"},
				{s1, "BEGIN", ""},
				{s1, "ALTER TABLE t ALTER COLUMN b TYPE text", ""},
				{s1, q, "a:23,b:25"},
				{s2, q, "a:23,b:23"}, // not committed yet
				{s1, "COMMIT", ""},
				{s2, q, "a:23,b:25"},
				{s1, q, "a:23,b:25"},
				{s1, "BEGIN", ""},
				{s1, "ALTER TABLE t ALTER COLUMN b TYPE bigint USING length(b)", ""},
				{s1, q, "a:23,b:20"},
				{s2, q, "a:23,b:25"},
				{s1, "ROLLBACK", ""},
				{s1, q, "a:23,b:25"},
				{s2, q, "a:23,b:25"},
				{s1, "BEGIN", ""},
				{s1, "SAVEPOINT x", ""},
				{s1, "ALTER TABLE t ALTER COLUMN b TYPE bigint USING length(b)", ""},
				{s1, q, "a:23,b:20"},
				{s1, "ROLLBACK TO x", ""},
				{s1, q, "a:23,b:25"},
				{s1, "COMMIT", ""},
				{s2, q, "a:23,b:25"},
				// A temporary table hides the permanent one in its
				// session only.
				{s1, "CREATE TEMP TABLE t (a text, b bigint)", ""},
				{s1, q, "a:25,b:20"},
				{s2, q, "a:23,b:25"},
				{s1, q, "a:25,b:20"},
			}
			for i, st := range steps {
				if st.want == "" {
					if _, err := run(t, st.s, st.sql); err != nil {
						t.Fatalf("step %d: %s: %v", i, st.sql, err)
					}
					continue
				}
				if got := shape(t, st.s, st.sql); got != st.want {
					t.Fatalf("step %d: %s: columns %s, want %s", i, st.sql, got, st.want)
				}
			}
			if !replicated {
				return
			}
			// A standby that applies the primary's log, serving reads
			// between the writesets.
			standby := open(t)
			if _, _, err := standby.AppliedGSN(); err != nil {
				t.Fatal(err)
			}
			rs, _ := standby.NewSession(ctx, "u", "d")
			defer rs.Close()
			var ddls int
			for _, ws := range repl.log {
				if err := standby.Apply(ctx, ws); err != nil {
					t.Fatalf("apply GSN %d: %v", ws.GSN, err)
				}
				if !ws.IsDDL() {
					continue
				}
				ddls++
				want := map[int]string{1: "a:23,b:23", 2: "a:23,b:25"}[ddls]
				if got := shape(t, rs, q); got != want {
					t.Fatalf("standby after DDL %d (%s): columns %s, want %s", ddls, ws.DDL, got, want)
				}
			}
			if ddls != 2 {
				t.Fatalf("%d DDL writesets in the primary's log, want 2", ddls)
			}
		})
	}
}
