package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
)

// TestAlterColumn: ALTER COLUMN SET / DROP NOT NULL and SET / DROP DEFAULT
// on the SQLite back end behave as in PostgreSQL, in and out of a block,
// and another session sees the new schema at once (Django's AddField sends
// ADD COLUMN ... DEFAULT then ALTER COLUMN ... DROP DEFAULT).
func TestAlterColumn(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	s, _ := db.NewSession(ctx, "u", "d")
	defer s.Close()
	o, _ := db.NewSession(ctx, "u", "d")
	defer o.Close()
	steps := []struct {
		sess pgwire.BackendSession
		sql  string
		code string
	}{
		{s, "CREATE TABLE t (id int PRIMARY KEY, v text, n int DEFAULT 5)", ""},
		{s, "INSERT INTO t (id) VALUES (1)", ""},
		{s, "ALTER TABLE t ALTER COLUMN v SET NOT NULL", "23502"}, // row 1 has NULL
		{s, "UPDATE t SET v = 'x'", ""},
		{s, "ALTER TABLE t ALTER COLUMN v SET NOT NULL", ""},
		{o, "INSERT INTO t (id) VALUES (2)", "23502"}, // the other session sees it
		{s, "ALTER TABLE t ALTER COLUMN v SET DEFAULT 'd' || 'e'", ""},
		{o, "INSERT INTO t (id) VALUES (2)", ""},
		{o, "SELECT 1/count(*) FROM t WHERE id = 2 AND v = 'de' AND n = 5", ""}, // 22012 unless the row has both defaults
		{s, "BEGIN", ""},
		{s, "ALTER TABLE t ALTER COLUMN n DROP DEFAULT, ALTER COLUMN v DROP NOT NULL", ""},
		{s, "INSERT INTO t (id, v) VALUES (3, NULL)", ""},
		{s, "ROLLBACK", ""}, // the block's changes go with it
		{o, "INSERT INTO t (id, v) VALUES (3, NULL)", "23502"},
		{s, "ALTER TABLE t ALTER COLUMN nosuch DROP DEFAULT", "42703"},
		{s, "ALTER TABLE t ALTER COLUMN n DROP DEFAULT", ""},
		{o, "INSERT INTO t (id, v) VALUES (4, 'y')", ""},
		{o, "SELECT 1/count(*) FROM t WHERE id = 4 AND n IS NULL", ""},
		{o, "SELECT 1/count(*) FROM pg_attribute WHERE attrelid = 't'::regclass AND attname = 'v' AND attnotnull", ""},
		// ALTER COLUMN TYPE
		{s, "CREATE TABLE ty (id int PRIMARY KEY, s varchar(20), n text)", ""},
		{s, "INSERT INTO ty VALUES (1, 'hello world', '42')", ""},
		{s, "ALTER TABLE ty ALTER COLUMN s TYPE varchar(5)", "22001"},
		{s, "ALTER TABLE ty ALTER COLUMN s TYPE varchar(50)", ""},
		{o, "SELECT 1/count(*) FROM information_schema.columns WHERE table_name = 'ty' AND column_name = 's' AND character_maximum_length = 50", ""},
		{s, "ALTER TABLE ty ALTER COLUMN n TYPE int USING n::integer", ""},
		{o, "SELECT 1/count(*) FROM ty WHERE n + 1 = 43", ""},
		{o, "SELECT 1/count(*) FROM information_schema.columns WHERE table_name = 'ty' AND column_name = 'n' AND data_type = 'integer'", ""},
		{s, "ALTER TABLE ty ALTER COLUMN s TYPE int", "22P02"}, // 'hello world'
		{s, "ALTER TABLE ty ALTER COLUMN id TYPE bigint", ""},
		{o, "INSERT INTO ty (s, n) VALUES ('x', 1)", "23502"}, // not serial: as in PostgreSQL
		{o, "INSERT INTO ty (id, s, n) VALUES (7, 'x', 1)", ""},
		{o, "SELECT 1/count(*) FROM ty WHERE rowid = 7", ""}, // id is still the rowid
		{s, "ALTER TABLE ty ALTER COLUMN id TYPE text", "0A000"},
		{s, "SELECT 1/(1 - count(*)) FROM t WHERE id = 3", ""}, // the rolled-back row is not there
		{s, "SELECT 1/count(*) FROM t WHERE id = 3", "22012"},  // (and the checks above can fail)
	}
	for i, st := range steps {
		_, err := run(t, st.sess, st.sql)
		var pe *pgwire.Error
		switch {
		case st.code == "" && err != nil:
			t.Fatalf("step %d %s: %v", i, st.sql, err)
		case st.code != "" && (!errors.As(err, &pe) || pe.Code != st.code):
			t.Fatalf("step %d %s: %v, want SQLSTATE %s", i, st.sql, err, st.code)
		}
	}
}

// TestAddConstraint: ALTER TABLE ADD CONSTRAINT FOREIGN KEY / CHECK (what
// Django sends for every ForeignKey) checks the rows first and then holds,
// DROP CONSTRAINT removes it (and a UNIQUE constraint's index), as in
// PostgreSQL.
func TestAddConstraint(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	s, _ := db.NewSession(ctx, "u", "d")
	defer s.Close()
	steps := []struct {
		sql  string
		code string
	}{
		{"CREATE TABLE author (id bigint PRIMARY KEY, name text)", ""},
		{"CREATE TABLE book (id serial PRIMARY KEY, author_id bigint, pages int)", ""},
		{"INSERT INTO author VALUES (1, 'a')", ""},
		{"INSERT INTO book (author_id, pages) VALUES (1, 10), (2, 20)", ""},
		{"ALTER TABLE book ADD CONSTRAINT book_author_fk FOREIGN KEY (author_id) REFERENCES author (id) DEFERRABLE INITIALLY DEFERRED", "23503"}, // author 2 is missing
		{"DELETE FROM book WHERE author_id = 2", ""},
		{"ALTER TABLE book ADD CONSTRAINT book_author_fk FOREIGN KEY (author_id) REFERENCES author DEFERRABLE INITIALLY DEFERRED", ""},
		{"INSERT INTO book (author_id, pages) VALUES (3, 1)", "23503"},
		{"ALTER TABLE book ADD CONSTRAINT pages_positive CHECK (pages > 10)", "23514"},
		{"ALTER TABLE book ADD CONSTRAINT pages_positive CHECK (pages > 0)", ""},
		{"INSERT INTO book (author_id, pages) VALUES (1, -1)", "23514"},
		{"ALTER TABLE book ADD CONSTRAINT book_pages_uniq UNIQUE (pages)", ""},
		{"INSERT INTO book (author_id, pages) VALUES (1, 10)", "23505"},
		{"ALTER TABLE book DROP CONSTRAINT book_pages_uniq", ""},
		{"ALTER TABLE book DROP CONSTRAINT pages_positive", ""},
		{"ALTER TABLE book DROP CONSTRAINT book_author_fk", ""},
		{"INSERT INTO book (author_id, pages) VALUES (3, -1)", ""}, // none holds any more
		{"INSERT INTO book (author_id, pages) VALUES (1, 10)", ""},
		{"ALTER TABLE book DROP CONSTRAINT nosuch", "42704"},
		{"ALTER TABLE book DROP CONSTRAINT IF EXISTS nosuch", ""},
	}
	for i, st := range steps {
		_, err := run(t, s, st.sql)
		var pe *pgwire.Error
		switch {
		case st.code == "" && err != nil:
			t.Fatalf("step %d %s: %v", i, st.sql, err)
		case st.code != "" && (!errors.As(err, &pe) || pe.Code != st.code):
			t.Fatalf("step %d %s: %v, want SQLSTATE %s", i, st.sql, err, st.code)
		}
	}
}
