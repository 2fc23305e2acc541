package router

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"

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
