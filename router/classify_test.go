package router

import (
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

func TestClassify(t *testing.T) {
	c := newClassifier([]string{"app.safe_lookup", "pure_fn"})
	for _, tc := range []struct {
		sql   string
		class stmtClass
		force route
	}{
		{"SELECT 1", classRead, routeAuto},
		{"select abalance from pgbench_accounts where aid = $1", classRead, routeAuto},
		{"SELECT a, b FROM t WHERE x = 'for'", classRead, routeAuto}, // parser path: FOR in a literal
		{"SELECT count(*) FROM t", classRead, routeAuto},
		{"SELECT lower(name), now() FROM t", classRead, routeAuto},
		{"SELECT pg_catalog.upper('a')", classRead, routeAuto},
		{"SELECT * FROM generate_series(1, 3)", classRead, routeAuto},
		{"WITH x AS (SELECT 1) SELECT * FROM x", classRead, routeAuto},
		{"SELECT * FROM t WHERE id IN (SELECT id FROM u)", classRead, routeAuto},
		{"SHOW tandem.node", classRead, routeAuto},
		{"EXPLAIN SELECT 1", classRead, routeAuto},
		{"SELECT pure_fn(1)", classRead, routeAuto},
		{"SELECT app.safe_lookup(1)", classRead, routeAuto},
		{"BEGIN READ ONLY", classBeginRO, routeAuto},
		{"START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", classBeginRO, routeAuto},
		{"BEGIN READ ONLY; SELECT 1; COMMIT", classBeginRO, routeAuto},
		{"COMMIT", classNeutral, routeAuto},
		{"ROLLBACK", classNeutral, routeAuto},
		{"SET application_name = 'x'", classNeutral, routeAuto},
		{"DISCARD ALL", classNeutral, routeAuto},
		// the primary
		{"BEGIN", classWrite, routeAuto},
		{"BEGIN READ WRITE", classWrite, routeAuto},
		{"SELECT nextval('s')", classWrite, routeAuto},
		{"SELECT currval('s')", classWrite, routeAuto},
		{"SELECT setval('s', 5)", classWrite, routeAuto},
		{"SELECT pg_advisory_lock(1)", classWrite, routeAuto},
		{"SELECT lo_create(0)", classWrite, routeAuto},
		{"SELECT txid_current()", classWrite, routeAuto},
		{"SELECT set_config('a.b', 'c', false)", classWrite, routeAuto},
		{"SELECT my_func()", classWrite, routeAuto},
		{"SELECT other.pure_fn()", classWrite, routeAuto},
		{"SELECT * FROM t FOR UPDATE", classWrite, routeAuto},
		{"SELECT * FROM t FOR SHARE", classWrite, routeAuto},
		{"SELECT * FROM t FOR NO KEY UPDATE SKIP LOCKED", classWrite, routeAuto},
		{"SELECT * INTO newt FROM t", classWrite, routeAuto},
		{"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", classWrite, routeAuto},
		{"WITH u AS (UPDATE t SET v = 1 RETURNING *) SELECT 1", classWrite, routeAuto},
		{"SELECT 1; UPDATE t SET v = 1", classWrite, routeAuto},
		{"INSERT INTO t VALUES (1)", classWrite, routeAuto},
		{"UPDATE t SET v = 1", classWrite, routeAuto},
		{"DELETE FROM t", classWrite, routeAuto},
		{"CREATE TABLE t (id int)", classWrite, routeAuto},
		{"LOCK TABLE t", classWrite, routeAuto},
		{"COPY t FROM STDIN", classWrite, routeAuto},
		{"PREPARE TRANSACTION 'x'", classWrite, routeAuto},
		{"EXPLAIN ANALYZE DELETE FROM t", classWrite, routeAuto},
		{"SELECT (", classWrite, routeAuto}, // a syntax error: the primary says so
		{"", classWrite, routeAuto},
		// forcing
		{"/* tandem:primary */ SELECT 1", classRead, routePrimary},
		{"/* tandem:replica */ UPDATE t SET v = 1", classWrite, routeReplica},
		{"  /*tandem:replica*/ SELECT 1", classRead, routeReplica},
		{"/* other */ SELECT 1", classRead, routeAuto},
	} {
		got := c.classify(tc.sql)
		if got.class != tc.class || got.force != tc.force {
			t.Errorf("%q: class %d force %v; want class %d force %v", tc.sql, got.class, got.force, tc.class, tc.force)
		}
		// Twice: the cached answer is the same.
		if again := c.classify(tc.sql); again != got {
			t.Errorf("%q: cached %v, first %v", tc.sql, again, got)
		}
	}
}

func TestReadOnlyDefault(t *testing.T) {
	c := newClassifier(nil)
	for _, tc := range []struct {
		sql  string
		want int8
	}{
		{"SET default_transaction_read_only = on", 1},
		{"SET default_transaction_read_only TO true", 1},
		{"SET SESSION default_transaction_read_only = 1", 1},
		{"SET default_transaction_read_only = off", -1},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", 1},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", -1},
		{"RESET default_transaction_read_only", -1},
		{"RESET ALL", -1},
		{"DISCARD ALL", -1},
		{"SET application_name = 'x'", 0},
	} {
		if got := c.classify(tc.sql).readOnlyDefault; got != tc.want {
			t.Errorf("%q: readOnlyDefault %d; want %d", tc.sql, got, tc.want)
		}
	}
}

func TestFastRead(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"SELECT abalance FROM pgbench_accounts WHERE aid = 42;", true},
		{"select * from t where a = $1", true},
		{"SELECT * FROM t FOR UPDATE", false},
		{"SELECT * INTO x FROM t", false},
		{"SELECT f(1)", false},
		{"SELECT 1; DELETE FROM t", false},
		{"SELECT 1 -- c", false},
		{"SELECT /* c */ 1", false},
		{"SELECTX 1", false},
		{"WITH x AS (SELECT 1) SELECT 1", false},
		{"SELECT forward FROM t", true}, // a word that starts with "for"
	} {
		if got := fastRead(tc.sql); got != tc.want {
			t.Errorf("fastRead(%q) = %v; want %v", tc.sql, got, tc.want)
		}
	}
}

func TestTandemSet(t *testing.T) {
	for _, tc := range []struct {
		sql, name, val string
		ok             bool
	}{
		{"SET tandem.route = primary", "tandem.route", "primary", true},
		{"SET tandem.route TO 'replica';", "tandem.route", "replica", true},
		{"set session tandem.read_consistency = strong", "tandem.read_consistency", "strong", true},
		{"SET tandem.route=auto", "tandem.route", "auto", true},
		{"RESET tandem.route", "tandem.route", "", true},
		{"RESET ALL", "all", "", true},
		{"SET application_name = 'x'", "", "", false},
		{"SHOW tandem.route", "", "", false},
		// A multi-statement query: the first statement's setting.
		{"SET tandem.read_consistency = eventual; INSERT INTO kv VALUES (1); SELECT count(*) FROM kv", "tandem.read_consistency", "eventual", true},
		{"SET tandem.route TO primary ;SELECT 1", "tandem.route", "primary", true},
		{"SELECT 1; SET tandem.route = primary", "", "", false},
	} {
		name, val, ok := tandemSet(tc.sql)
		if name != tc.name || val != tc.val || ok != tc.ok {
			t.Errorf("tandemSet(%q) = %q %q %v; want %q %q %v", tc.sql, name, val, ok, tc.name, tc.val, tc.ok)
		}
	}
}

func BenchmarkClassifyFast(b *testing.B) {
	c := newClassifier(nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.classify("SELECT abalance FROM pgbench_accounts WHERE aid = 12345;")
	}
}

func TestQuotedTandemSet(t *testing.T) {
	for _, c := range []struct{ q, want string }{
		{"SET tandem.route = primary", "SET tandem.route = 'primary'"},
		{"set tandem.route to 'replica'", "SET tandem.route = 'replica'"},
		{"SET tandem.read_consistency = eventual; INSERT INTO t VALUES (1)", "SET tandem.read_consistency = 'eventual'; INSERT INTO t VALUES (1)"},
		{"RESET tandem.route", ""},
		{"RESET ALL", ""},
	} {
		name, val, ok := tandemSet(c.q)
		if !ok {
			t.Fatalf("tandemSet(%q) not recognised", c.q)
		}
		if got := quotedTandemSet(c.q, name, val); got != c.want {
			t.Errorf("quotedTandemSet(%q) = %q, want %q", c.q, got, c.want)
		}
	}
}

// TestClassifyBatchUnnamed: each Bind of the unnamed statement takes the
// Parse before it. pgjdbc with autocommit off sends BEGIN and the first
// query as unnamed statements in one batch: classified by the last Parse,
// a read-write transaction that began with a SELECT went to a replica
// (its UPDATE then got 25006).
func TestClassifyBatchUnnamed(t *testing.T) {
	msg := func(m interface{ Encode([]byte) ([]byte, error) }) []byte {
		b, err := m.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	batch := func(qs ...string) []byte {
		var b []byte
		for _, q := range qs {
			b = append(b, msg(&pgproto3.Parse{Query: q})...)
			b = append(b, msg(&pgproto3.Bind{})...)
			b = append(b, msg(&pgproto3.Execute{})...)
		}
		return append(b, msg(&pgproto3.Sync{})...)
	}
	r := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Split: true})
	for _, c := range []struct {
		qs   []string
		want stmtClass
	}{
		{[]string{"BEGIN", "SELECT id FROM acct"}, classWrite},
		{[]string{"BEGIN READ ONLY", "SELECT id FROM acct"}, classBeginRO},
		{[]string{"SELECT id FROM acct"}, classRead},
		{[]string{"SELECT 1", "UPDATE acct SET bal = 0"}, classWrite},
	} {
		s := &splitSession{rt: r, batch: batch(c.qs...)}
		if got := s.classifyBatch().class; got != c.want {
			t.Errorf("%q: class %v, want %v", c.qs, got, c.want)
		}
	}
}

// TestClassifyDescribeCursor: Describe of a named portal the request does
// not bind is a WITH HOLD cursor's (outside a transaction), which lives on
// the primary where its DECLARE ran; a portal bound in the same request
// goes with its statement.
func TestClassifyDescribeCursor(t *testing.T) {
	msg := func(m interface{ Encode([]byte) ([]byte, error) }) []byte {
		b, err := m.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Split: true})
	for _, c := range []struct {
		name  string
		batch [][]byte
		want  stmtClass
	}{
		{"psycopg describes its named cursor", [][]byte{msg(&pgproto3.Describe{ObjectType: 'P', Name: "held"})}, classWrite},
		{"a portal bound here", [][]byte{msg(&pgproto3.Parse{Query: "SELECT id FROM acct"}), msg(&pgproto3.Bind{DestinationPortal: "p1"}),
			msg(&pgproto3.Describe{ObjectType: 'P', Name: "p1"}), msg(&pgproto3.Execute{Portal: "p1"})}, classRead},
		{"the unnamed portal", [][]byte{msg(&pgproto3.Parse{Query: "SELECT 1"}), msg(&pgproto3.Bind{}), msg(&pgproto3.Describe{ObjectType: 'P'}), msg(&pgproto3.Execute{})}, classRead},
	} {
		var b []byte
		for _, m := range c.batch {
			b = append(b, m...)
		}
		b = append(b, msg(&pgproto3.Sync{})...)
		s := &splitSession{rt: r, batch: b}
		if got := s.classifyBatch().class; got != c.want {
			t.Errorf("%s: class %v, want %v", c.name, got, c.want)
		}
	}
}
