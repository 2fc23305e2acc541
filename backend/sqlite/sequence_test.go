package sqlite

import (
	"context"
	"testing"
)

// TestCurrvalIsTheSessions: currval and lastval answer what nextval
// returned in the same session, whatever other sessions drew since (an
// application reading back the id it inserted: INSERT, then SELECT
// currval), a rollback does not undo them, and DISCARD SEQUENCES forgets
// them.
func TestCurrvalIsTheSessions(t *testing.T) {
	db := open(t)
	a, _ := db.NewSession(context.Background(), "u", "d")
	defer a.Close()
	b, _ := db.NewSession(context.Background(), "u", "d")
	defer b.Close()
	steps := []struct {
		s    string // "a" or "b"
		sql  string
		rows string
		code string
	}{
		{"a", "CREATE TABLE t (id serial PRIMARY KEY, v int)", "", ""},
		{"a", "CREATE SEQUENCE q", "", ""},
		{"a", "SELECT currval('t_id_seq')", "", "55000"},
		{"a", "SELECT lastval()", "", "55000"},
		{"a", "INSERT INTO t (v) VALUES (1)", "", ""},
		{"b", "INSERT INTO t (v) VALUES (2)", "", ""},
		{"b", "INSERT INTO t (v) VALUES (3)", "", ""},
		{"a", "SELECT currval('t_id_seq')", "1", ""},
		{"b", "SELECT currval('t_id_seq')", "3", ""},
		{"a", "SELECT lastval()", "1", ""},
		{"a", "SELECT nextval('q')", "1", ""},
		{"a", "SELECT lastval()", "1", ""},
		{"b", "SELECT nextval('q')", "2", ""},
		{"a", "SELECT currval('q')", "1", ""},
		{"a", "BEGIN", "", ""},
		{"a", "INSERT INTO t (v) VALUES (4)", "", ""},
		{"a", "ROLLBACK", "", ""},
		{"a", "SELECT currval('t_id_seq')", "4", ""},
		{"a", "SELECT setval('q', 10)", "10", ""},
		{"a", "SELECT currval('q')", "10", ""},
		{"a", "SELECT lastval()", "4", ""},
		{"a", "SELECT currval('nosuch')", "", "42P01"},
		{"a", "DISCARD SEQUENCES", "", ""},
		{"a", "SELECT currval('t_id_seq')", "", "55000"},
		{"b", "SELECT currval('t_id_seq')", "3", ""},
	}
	for _, st := range steps {
		s := a
		if st.s == "b" {
			s = b
		}
		if st.sql == "DISCARD SEQUENCES" {
			s.(interface{ Discard(string) }).Discard("SEQUENCES")
			continue
		}
		rows, _, err := fetchIDs(t, s, st.sql)
		if st.code != "" {
			if code(err) != st.code {
				t.Fatalf("%s %s: want SQLSTATE %s, got %v", st.s, st.sql, st.code, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", st.s, st.sql, err)
		}
		if rows != st.rows {
			t.Fatalf("%s %s: rows %q, want %q", st.s, st.sql, rows, st.rows)
		}
	}
}
