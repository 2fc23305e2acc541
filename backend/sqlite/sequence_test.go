package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
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

// TestSequenceStride: a multi-master node (here the second of three)
// draws from sequences that count up by 1 only values that are 2 modulo
// 3, past what it handed out in a rolled-back transaction, from where a
// setval or RESTART puts the sequence, and wraps a cycle to its own first
// value; other sequences draw as PostgreSQL's do.
func TestSequenceStride(t *testing.T) {
	db := open(t)
	db.SetSequenceStride(3, 2)
	s, _ := db.NewSession(context.Background(), "u", "d")
	defer s.Close()
	steps := []struct{ sql, rows, code string }{
		{"CREATE SEQUENCE s", "", ""},
		{"SELECT nextval('s')", "2", ""},
		{"SELECT nextval('s')", "5", ""},
		{"BEGIN", "", ""},
		{"SELECT nextval('s')", "8", ""},
		{"ROLLBACK", "", ""},
		{"SELECT nextval('s')", "11", ""},
		{"SELECT stride FROM _tandem_sequences WHERE name = 's'", "3", ""},
		{"SELECT setval('s', 20)", "20", ""},
		{"SELECT stride FROM _tandem_sequences WHERE name = 's'", "0", ""},
		{"SELECT nextval('s')", "23", ""},
		{"SELECT setval('s', 21, false)", "21", ""},
		{"SELECT nextval('s')", "23", ""},
		{"ALTER SEQUENCE s RESTART", "", ""},
		{"SELECT nextval('s')", "2", ""},
		{"SELECT generation FROM _tandem_sequences WHERE name = 's'", "3", ""},
		{"CREATE SEQUENCE c MAXVALUE 6 CYCLE", "", ""},
		{"SELECT nextval('c')", "2", ""},
		{"SELECT nextval('c')", "5", ""},
		{"SELECT nextval('c')", "2", ""},
		{"SELECT generation FROM _tandem_sequences WHERE name = 'c'", "1", ""},
		{"CREATE SEQUENCE e MAXVALUE 6", "", ""},
		{"SELECT nextval('e')", "2", ""},
		{"SELECT nextval('e')", "5", ""},
		{"SELECT nextval('e')", "", "2200H"},
		{"CREATE SEQUENCE big START 9223372036854775806", "", ""},
		{"SELECT nextval('big')", "", "2200H"}, // 9223372036854775806 is 0 modulo 3; 2 modulo 3 would overflow
		{"CREATE SEQUENCE down INCREMENT BY -1", "", ""},
		{"SELECT nextval('down')", "-1", ""},
		{"SELECT nextval('down')", "-2", ""},
		{"CREATE SEQUENCE two INCREMENT BY 2", "", ""},
		{"SELECT nextval('two')", "1", ""},
		{"SELECT nextval('two')", "3", ""},
		{"CREATE TABLE t (id serial PRIMARY KEY, v int)", "", ""},
		{"INSERT INTO t (v) VALUES (1), (2) RETURNING id", "2,5", ""},
		{"SELECT currval('t_id_seq')", "5", ""},
	}
	for _, st := range steps {
		rows, _, err := fetchIDs(t, s, st.sql)
		if st.code != "" {
			if code(err) != st.code {
				t.Fatalf("%s: want SQLSTATE %s, got %v (rows %q)", st.sql, st.code, err, rows)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", st.sql, err)
		}
		if rows != st.rows {
			t.Fatalf("%s: rows %q, want %q", st.sql, rows, st.rows)
		}
	}
}

// TestSequenceUpgrade: a database whose sequences table an earlier tandem
// made (no generation, no stride) opens, and its sequences draw on.
func TestSequenceUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE _tandem_sequences (name TEXT PRIMARY KEY, type_oid INTEGER NOT NULL DEFAULT 20, start_value INTEGER NOT NULL DEFAULT 1,
			increment INTEGER NOT NULL DEFAULT 1, min_value INTEGER NOT NULL DEFAULT 1, max_value INTEGER NOT NULL DEFAULT 9223372036854775807,
			cycle INTEGER NOT NULL DEFAULT 0, last_value INTEGER NOT NULL DEFAULT 1, is_called INTEGER NOT NULL DEFAULT 0, owner_table TEXT, owner_column TEXT)`,
		`INSERT INTO _tandem_sequences (name, last_value, is_called) VALUES ('old', 41, 1)`,
	} {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	db, err := Open(Options{Path: path, ReadPool: 1, BusyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, _ := db.NewSession(context.Background(), "u", "d")
	defer s.Close()
	if rows, _, err := fetchIDs(t, s, "SELECT nextval('old')"); err != nil || rows != "42" {
		t.Fatalf("nextval after the upgrade: %q %v", rows, err)
	}
}
