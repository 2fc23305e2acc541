package router

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/tandemdb/tandem/pgwire"
)

func TestSQLPrepareNames(t *testing.T) {
	for _, c := range []struct {
		stmt string
		name string
		ok   bool
	}{
		{"PREPARE ins (int, text) AS INSERT INTO t VALUES ($1, $2)", "ins", true},
		{"prepare Foo AS SELECT 1", "foo", true},
		{`PREPARE "Mixed ""q""" AS SELECT 1`, `Mixed "q"`, true},
		{"  PREPARE\tq1(int) AS SELECT $1", "q1", true},
		{"PREPARE TRANSACTION 'gid-1'", "", false},
		{"PREPARE transaction AS SELECT 1", "transaction", true},
		{"PREPARE (int) AS SELECT 1", "", false},
	} {
		name, ok := sqlPrepareName(c.stmt)
		if name != c.name || ok != c.ok {
			t.Errorf("sqlPrepareName(%q) = %q, %v; want %q, %v", c.stmt, name, ok, c.name, c.ok)
		}
	}
	for _, c := range []struct {
		stmt    string
		name    string
		all, ok bool
	}{
		{"DEALLOCATE ins", "ins", false, true},
		{"DEALLOCATE PREPARE Ins", "ins", false, true},
		{"deallocate all", "all", true, true},
		{"DEALLOCATE PREPARE ALL", "all", true, true},
		{`DEALLOCATE "all"`, "all", false, true},
		{"DEALLOCATE", "", false, false},
	} {
		name, all, ok := deallocateTarget(c.stmt)
		if name != c.name || all != c.all || ok != c.ok {
			t.Errorf("deallocateTarget(%q) = %q, %v, %v; want %q, %v, %v", c.stmt, name, all, ok, c.name, c.all, c.ok)
		}
	}
	for q, want := range map[string]bool{
		"SET a = 1":                   false,
		"SET a = 1;":                  false,
		"SET a = 1; \n":               false,
		"SET a = 1; INSERT INTO t ..": true,
		"SELECT ';'":                  true, // may hold several: SplitStatements decides
	} {
		if got := innerSemicolon(q); got != want {
			t.Errorf("innerSemicolon(%q) = %v, want %v", q, got, want)
		}
	}
}

func rememberSession(t *testing.T) (*splitSession, *nodeConn) {
	t.Helper()
	r := New(Config{Survive: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Nodes: []Upstream{{Node: "n1", Addr: "127.0.0.1:1"}}})
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	pc := &pgwire.Conn{Conn: a, Framer: pgwire.NewFramer(a, a, 1<<20), User: "u", Database: "d"}
	s := r.newSplit(context.Background(), pc)
	nc := &nodeConn{idx: 0, stmts: map[string]uint64{}}
	s.conns[0] = nc
	return s, nc
}

// TestRememberSessionState: what a session's queries and parsed
// statements leave to replay where the session goes next (at a failover,
// the new primary): its settings and SQL PREPAREs in order, without the
// other statements of a query that held several, and the DEALLOCATEs of
// the SQL-prepared statements only.
func TestRememberSessionState(t *testing.T) {
	s, nc := rememberSession(t)
	for _, q := range []string{
		"SET statement_timeout = '7s'",
		"SET application_name = 'a'; INSERT INTO t VALUES (1, 'x'); SET search_path = public, other",
		"INSERT INTO t VALUES (2, 'y')",
		"SELECT 1",
		"PREPARE ins (int, text) AS INSERT INTO t VALUES ($1, $2)",
		"PREPARE TRANSACTION 'g1'",
		"SET LOCAL lock_timeout = '1s'",
		"PREPARE sel AS SELECT 1",
		"DEALLOCATE sel",
		"DEALLOCATE nosuch",
	} {
		s.remember('Q', queryFrame(q), 0)
	}
	// pgjdbc's extended protocol: Parse of a SET and of a PREPARE.
	s.remember('P', parseFrame("", "SET lock_timeout = '3s'"), 0)
	s.remember('P', parseFrame("", "PREPARE upd AS UPDATE t SET v = $1"), 0)
	want := []string{
		"SET statement_timeout = '7s'",
		"SET application_name = 'a'",
		"SET search_path = public, other",
		"PREPARE ins (int, text) AS INSERT INTO t VALUES ($1, $2)",
		"PREPARE sel AS SELECT 1",
		`DEALLOCATE "sel"`,
		"SET lock_timeout = '3s'",
		"PREPARE upd AS UPDATE t SET v = $1",
	}
	if !slices.Equal(s.settings, want) {
		t.Fatalf("settings:\n%q\nwant\n%q", s.settings, want)
	}
	if nc.setDone != len(s.settings) {
		t.Errorf("the connection the statements went to has run %d of %d", nc.setDone, len(s.settings))
	}
	s.remember('Q', queryFrame("DEALLOCATE ALL"), 0)
	got := s.settings[len(want):]
	slices.Sort(got)
	if !slices.Equal(got, []string{`DEALLOCATE "ins"`, `DEALLOCATE "upd"`}) {
		t.Errorf("after DEALLOCATE ALL: %q, want a DEALLOCATE of each SQL-prepared statement, not ALL", got)
	}
}

// TestRememberSessionCompacts: an application that prepares and
// deallocates per request does not grow the list without end; what the
// list replays is the same.
func TestRememberSessionCompacts(t *testing.T) {
	s, nc := rememberSession(t)
	s.remember('Q', queryFrame("SET a = 1"), 0)
	s.remember('Q', queryFrame("PREPARE keep AS SELECT 1"), 0)
	// Refused by the server (the name is taken): what the session has is
	// the first.
	s.remember('Q', queryFrame("PREPARE keep AS SELECT 'refused'"), 0)
	for i := 0; i < 1000; i++ {
		s.remember('Q', queryFrame(fmt.Sprintf("PREPARE p%d AS SELECT %d", i%3, i)), 0)
		s.remember('Q', queryFrame(fmt.Sprintf("DEALLOCATE p%d", i%3)), 0)
	}
	s.remember('Q', queryFrame("PREPARE p1 AS SELECT 'last'"), 0)
	s.remember('Q', queryFrame("SET b = 2"), 0)
	if len(s.settings) > 40 {
		t.Fatalf("%d entries kept after 1,000 PREPARE/DEALLOCATE pairs", len(s.settings))
	}
	// Replayed in order on a fresh connection, the list leaves the same
	// settings and live statements as the session has.
	var set []string
	live := map[string]string{}
	for _, st := range s.settings {
		switch firstWord(st) {
		case "SET":
			set = append(set, st)
		case "PREPARE":
			n, _ := sqlPrepareName(st)
			if _, taken := live[n]; !taken {
				live[n] = st
			}
		case "DEALLOCATE":
			n, _, _ := deallocateTarget(st)
			delete(live, n)
		}
	}
	if !slices.Equal(set, []string{"SET a = 1", "SET b = 2"}) || len(live) != 2 || live["keep"] != "PREPARE keep AS SELECT 1" || live["p1"] != "PREPARE p1 AS SELECT 'last'" {
		t.Errorf("the compacted list replays settings %q and statements %q\n%q", set, live, s.settings)
	}
	if nc.setDone != len(s.settings) {
		t.Errorf("the open connection's place in the list: %d of %d", nc.setDone, len(s.settings))
	}
}

func parseFrame(name, q string) []byte {
	b := []byte{'P', 0, 0, 0, 0}
	b = append(b, name...)
	b = append(b, 0)
	b = append(b, q...)
	b = append(b, 0, 0, 0)
	n := len(b) - 1
	b[1], b[2], b[3], b[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b
}

// TestRememberSessionTransactional: a SET in a transaction block that
// rolls back (or before the savepoint a ROLLBACK TO returns to, or in a
// query of several statements that fails) is undone by PostgreSQL, and
// is not replayed on the session's next connection either; SQL PREPARE
// is not transactional and stays.
func TestRememberSessionTransactional(t *testing.T) {
	type step struct {
		q      string // sent by the client, or
		tag    string // the node's CommandComplete, or
		err    bool   // its ErrorResponse,
		status byte   // then its ReadyForQuery
	}
	q := func(s string) step { return step{q: s} }
	ok := func(tag string, status byte) step { return step{tag: tag, status: status} }
	fail := func(status byte) step { return step{err: true, status: status} }
	for _, c := range []struct {
		name  string
		steps []step
		want  []string
	}{
		{"outside a block", []step{q("SET a = 1"), ok("SET", 'I')}, []string{"SET a = 1"}},
		{"committed", []step{q("BEGIN"), ok("BEGIN", 'T'), q("SET a = 1"), ok("SET", 'T'), q("COMMIT"), ok("COMMIT", 'I')}, []string{"SET a = 1"}},
		{"rolled back", []step{q("SET a = 0"), ok("SET", 'I'), q("BEGIN"), ok("BEGIN", 'T'), q("SET a = 1"), ok("SET", 'T'), q("ROLLBACK"), ok("ROLLBACK", 'I')},
			[]string{"SET a = 0"}},
		{"failed block's COMMIT", []step{q("BEGIN"), ok("BEGIN", 'T'), q("SET a = 1"), ok("SET", 'T'), q("SELECT 1/0"), fail('E'), q("COMMIT"), ok("ROLLBACK", 'I')},
			nil},
		{"one query, rolled back", []step{q("BEGIN; SET a = 1; ROLLBACK"), ok("BEGIN", 0), ok("SET", 0), ok("ROLLBACK", 'I')}, nil},
		{"implicit block that failed", []step{q("SET a = 1; SELECT 1/0"), ok("SET", 0), fail('I')}, nil},
		{"implicit block that ran", []step{q("SET a = 1; SELECT 1"), ok("SET", 0), ok("SELECT 1", 'I')}, []string{"SET a = 1"}},
		{"savepoints", []step{q("BEGIN"), ok("BEGIN", 'T'), q("SET a = 1"), ok("SET", 'T'), q("SAVEPOINT \"Sp\""), ok("SAVEPOINT", 'T'),
			q("SET b = 2"), ok("SET", 'T'), q("SAVEPOINT inner"), ok("SAVEPOINT", 'T'), q("RESET a"), ok("RESET", 'T'), q("RELEASE inner"), ok("RELEASE", 'T'),
			q("ROLLBACK TO SAVEPOINT \"Sp\""), ok("ROLLBACK", 'T'), q("SET c = 3"), ok("SET", 'T'), q("COMMIT"), ok("COMMIT", 'I')},
			[]string{"SET a = 1", "SET c = 3"}},
		{"PREPARE stays", []step{q("BEGIN"), ok("BEGIN", 'T'), q("SET a = 1"), ok("SET", 'T'), q("PREPARE p AS SELECT 1"), ok("PREPARE", 'T'), q("SET b = 2"), ok("SET", 'T'),
			q("ROLLBACK"), ok("ROLLBACK", 'I')},
			[]string{"PREPARE p AS SELECT 1"}},
		{"SET LOCAL", []step{q("BEGIN"), ok("BEGIN", 'T'), q("SET LOCAL a = 1"), ok("SET", 'T'), q("COMMIT"), ok("COMMIT", 'I')}, nil},
		{"read only, rolled back", []step{q("BEGIN"), ok("BEGIN", 'T'), q("SET default_transaction_read_only = on"), ok("SET", 'T'), q("ROLLBACK"), ok("ROLLBACK", 'I')}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, nc := rememberSession(t)
			s.cur = 0
			for _, st := range c.steps {
				switch {
				case st.q != "":
					s.remember('Q', queryFrame(st.q), 0)
				case st.err:
					f, _ := pgwire.ToErrorResponse(&pgwire.Error{Code: "22012", Message: "division by zero"}).Encode(nil)
					s.nodeFrame(nc, 'E', f)
				default:
					f, _ := (&pgproto3.CommandComplete{CommandTag: []byte(st.tag)}).Encode(nil)
					s.nodeFrame(nc, 'C', f)
				}
				if st.status != 0 {
					s.nodeFrame(nc, 'Z', []byte{'Z', 0, 0, 0, 5, st.status})
				}
			}
			s.settleTentative()
			if !slices.Equal(s.settings, c.want) {
				t.Errorf("settings %q, want %q", s.settings, c.want)
			}
			if nc.setDone != len(s.settings) {
				t.Errorf("the connection that ran them has run %d of %d", nc.setDone, len(s.settings))
			}
			if s.readOnly {
				t.Error("default_transaction_read_only is on after its block rolled back")
			}
		})
	}
}

func TestTxWord(t *testing.T) {
	for _, c := range []struct {
		st   string
		kind byte
		name string
	}{
		{"BEGIN", 'B', ""},
		{"begin isolation level serializable", 'B', ""},
		{"START TRANSACTION READ ONLY", 'B', ""},
		{"START", 0, ""},
		{"COMMIT", 'C', ""},
		{"end;", 'C', ""},
		{"COMMIT PREPARED 'g'", 0, ""},
		{"ROLLBACK", 'R', ""},
		{"ABORT", 'R', ""},
		{"ROLLBACK PREPARED 'g'", 0, ""},
		{"ROLLBACK TO SAVEPOINT a", 'T', "a"},
		{"rollback to B", 'T', "b"},
		{`ROLLBACK TO SAVEPOINT "B"`, 'T', "B"},
		{"SAVEPOINT Sp1;", 'S', "sp1"},
		{"RELEASE SAVEPOINT sp1", 'L', "sp1"},
		{"RELEASE sp1", 'L', "sp1"},
		{"SELECT 1", 0, ""},
	} {
		kind, name := txWord(c.st)
		if kind != c.kind || name != c.name {
			t.Errorf("txWord(%q) = %q %q, want %q %q", c.st, kind, name, c.kind, c.name)
		}
	}
}

// TestTxWordAllocates: BEGIN and COMMIT pass here on every explicit
// transaction.
func TestTxWordAllocates(t *testing.T) {
	for _, st := range []string{"BEGIN", "commit;", "ROLLBACK"} {
		if n := testing.AllocsPerRun(100, func() { txWord(st) }); n != 0 {
			t.Errorf("txWord(%q) allocates %v times", st, n)
		}
	}
}

func TestSetsConfig(t *testing.T) {
	for _, c := range []struct {
		st   string
		want bool
	}{
		{"SELECT pg_catalog.set_config('search_path', '', false)", true},
		{"select set_config('app.user', 'u1', false), set_config('app.role', 'r', false)", true},
		{"SELECT SET_CONFIG('search_path', 'public', false)", true},
		{"SELECT set_config('app.user', 'u1', true)", true}, // no lasting effect replayed either
		{"SELECT set_config($1, $2, false)", false},
		{"SELECT set_config('app.user', name, false) FROM users WHERE id = 1", false},
		{"SELECT set_config('a.b', 'c', false) INTO t", false},
		{"SELECT 1", false},
		{"UPDATE t SET v = 'set_config'", false},
	} {
		if got := setsConfig(c.st); got != c.want {
			t.Errorf("setsConfig(%q) = %v, want %v", c.st, got, c.want)
		}
	}
}

// TestRememberSetConfig: a SELECT of set_config is replayed as a setting,
// and follows its block as a SET does.
func TestRememberSetConfig(t *testing.T) {
	s, nc := rememberSession(t)
	s.cur = 0
	cc := func(tag string, status byte) {
		f, _ := (&pgproto3.CommandComplete{CommandTag: []byte(tag)}).Encode(nil)
		s.nodeFrame(nc, 'C', f)
		s.nodeFrame(nc, 'Z', []byte{'Z', 0, 0, 0, 5, status})
	}
	s.remember('Q', queryFrame("SELECT pg_catalog.set_config('search_path', 'app', false)"), 0)
	cc("SELECT 1", 'I')
	s.remember('P', parseFrame("", "SELECT set_config('app.user', 'u1', false)"), 0)
	cc("SELECT 1", 'I')
	s.remember('Q', queryFrame("BEGIN"), 0)
	cc("BEGIN", 'T')
	s.remember('Q', queryFrame("SELECT set_config('app.user', 'u2', false)"), 0)
	cc("SELECT 1", 'T')
	s.remember('Q', queryFrame("ROLLBACK"), 0)
	cc("ROLLBACK", 'I')
	s.settleTentative()
	want := []string{"SELECT pg_catalog.set_config('search_path', 'app', false)", "SELECT set_config('app.user', 'u1', false)"}
	if !slices.Equal(s.settings, want) {
		t.Errorf("settings %q, want %q", s.settings, want)
	}
}

func TestListenTarget(t *testing.T) {
	for _, c := range []struct {
		st      string
		ch      string
		all, ok bool
	}{
		{"LISTEN jobs", "jobs", false, true},
		{"listen Jobs;", "jobs", false, true},
		{`LISTEN "Jobs"`, "Jobs", false, true},
		{"UNLISTEN jobs", "jobs", false, true},
		{"UNLISTEN *", "", true, true},
		{"unlisten * ;", "", true, true},
		{"LISTEN", "", false, false},
		{"LISTEN a b", "", false, false},
	} {
		ch, all, ok := listenTarget(c.st)
		if ch != c.ch || all != c.all || ok != c.ok {
			t.Errorf("listenTarget(%q) = %q %v %v, want %q %v %v", c.st, ch, all, ok, c.ch, c.all, c.ok)
		}
	}
}

// TestRememberListen: a session's LISTENs are replayed where it goes
// (their UNLISTENs too, and not those of a block that rolled back), and a
// listener that comes and goes per request does not grow the list.
func TestRememberListen(t *testing.T) {
	s, nc := rememberSession(t)
	s.cur = 0
	answer := func(tag string, status byte) {
		f, _ := (&pgproto3.CommandComplete{CommandTag: []byte(tag)}).Encode(nil)
		s.nodeFrame(nc, 'C', f)
		s.nodeFrame(nc, 'Z', []byte{'Z', 0, 0, 0, 5, status})
	}
	for _, st := range []struct {
		q, tag string
		status byte
	}{
		{"LISTEN jobs", "LISTEN", 'I'},
		{`LISTEN "Mail"`, "LISTEN", 'I'},
		{"LISTEN gone", "LISTEN", 'I'},
		{"UNLISTEN gone", "UNLISTEN", 'I'},
		{"BEGIN", "BEGIN", 'T'},
		{"LISTEN never", "LISTEN", 'T'},
		{"ROLLBACK", "ROLLBACK", 'I'},
	} {
		s.remember('Q', queryFrame(st.q), 0)
		answer(st.tag, st.status)
	}
	for i := 0; i < 1000; i++ {
		s.remember('Q', queryFrame(fmt.Sprintf("LISTEN tmp%d", i%3)), 0)
		answer("LISTEN", 'I')
		s.remember('Q', queryFrame(fmt.Sprintf("UNLISTEN tmp%d", i%3)), 0)
		answer("UNLISTEN", 'I')
	}
	s.settleTentative()
	if len(s.settings) > 40 {
		t.Fatalf("%d entries kept after 1,000 LISTEN/UNLISTEN pairs", len(s.settings))
	}
	on := map[string]bool{}
	for _, st := range s.settings {
		ch, all, _ := listenTarget(st)
		switch {
		case firstWord(st) == "LISTEN":
			on[ch] = true
		case all:
			clear(on)
		default:
			delete(on, ch)
		}
	}
	if len(on) != 2 || !on["jobs"] || !on["Mail"] {
		t.Errorf("the list replays LISTEN on %v, want jobs and Mail\n%q", on, s.settings)
	}
	if nc.setDone != len(s.settings) {
		t.Errorf("the open connection's place in the list: %d of %d", nc.setDone, len(s.settings))
	}
}
