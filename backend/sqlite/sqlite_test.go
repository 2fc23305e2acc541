package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tandemdb/tandem/pgwire"
)

func TestInferParams(t *testing.T) {
	cols := map[string]map[string]string{
		"acct":  {"id": "INTEGER", "name": "VARCHAR(20)", "data": "BYTEA", "rate": "DOUBLE PRECISION", "\x00order": "id,name,data,rate"},
		"other": {"k": "INTEGER", "flag": "BOOLEAN", "\x00order": "k,flag"},
	}
	lookup := func(t string) map[string]string { return cols[t] }
	cases := []struct {
		sql  string
		n    int
		want []uint32
	}{
		{"SELECT * FROM acct WHERE id = $1", 1, []uint32{pgwire.OIDInt8}},
		{"SELECT * FROM acct a WHERE a.name = $1 AND $2 < a.rate", 2, []uint32{pgwire.OIDText, pgwire.OIDFloat8}},
		{"INSERT INTO acct VALUES ($1, $2, $3, $4)", 4, []uint32{pgwire.OIDInt8, pgwire.OIDText, pgwire.OIDBytea, pgwire.OIDFloat8}},
		{"INSERT INTO acct (data, id) VALUES ($1, $2)", 2, []uint32{pgwire.OIDBytea, pgwire.OIDInt8}},
		{"UPDATE acct SET data = $1 WHERE id = $2", 2, []uint32{pgwire.OIDBytea, pgwire.OIDInt8}},
		{"SELECT * FROM acct JOIN other o ON o.k = acct.id WHERE o.flag = $1 LIMIT $2", 2, []uint32{pgwire.OIDBool, pgwire.OIDInt8}},
		{"SELECT $1 + 1", 1, []uint32{0}},
		{"SELECT * FROM unknown_table WHERE x = $1", 1, []uint32{0}},
	}
	for _, c := range cases {
		if got := inferParams(c.sql, c.n, lookup); !reflect.DeepEqual(got, c.want) {
			t.Errorf("inferParams(%q) = %v, want %v", c.sql, got, c.want)
		}
	}
}

func TestOIDForDecl(t *testing.T) {
	cases := map[string]uint32{
		"INTEGER": pgwire.OIDInt8, "smallint": pgwire.OIDInt8, "VARCHAR(15)": pgwire.OIDText, "CHAR(3)": pgwire.OIDText,
		"BLOB": pgwire.OIDBytea, "bytea": pgwire.OIDBytea, "REAL": pgwire.OIDFloat8, "DOUBLE PRECISION": pgwire.OIDFloat8,
		"BOOLEAN": pgwire.OIDBool, "NUMERIC(10,2)": pgwire.OIDNumeric, "TIMESTAMP": pgwire.OIDTimestamp, "": 0,
	}
	for decl, want := range cases {
		if got := oidForDecl(decl); got != want {
			t.Errorf("oidForDecl(%q) = %d, want %d", decl, got, want)
		}
	}
}

func open(t *testing.T) *DB {
	t.Helper()
	db, err := Open(Options{Path: filepath.Join(t.TempDir(), "t.db"), ReadPool: 2, BusyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func run(t *testing.T, s pgwire.BackendSession, sql string, args ...any) (pgwire.Result, error) {
	t.Helper()
	ctx := context.Background()
	st, err := s.Prepare(ctx, sql)
	if err != nil {
		return nil, err
	}
	res, err := s.Execute(ctx, st, args)
	if err != nil {
		return nil, err
	}
	row := make([]any, len(res.Columns()))
	for {
		ok, err := res.Next(row)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
	}
	return res, res.Close()
}

// Errors keep their SQLSTATE; tags follow PostgreSQL.
func TestErrorsAndTags(t *testing.T) {
	db := open(t)
	s, _ := db.NewSession(context.Background(), "u", "d")
	defer s.Close()
	steps := []struct {
		sql  string
		args []any
		tag  string
		code string
	}{
		{"CREATE TABLE p (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)", nil, "CREATE TABLE", ""},
		{"CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id))", nil, "CREATE TABLE", ""},
		{"INSERT INTO p VALUES ($1, $2)", []any{int64(1), "a"}, "INSERT 0 1", ""},
		{"INSERT INTO p VALUES (2, 'a')", nil, "", "23505"},
		{"INSERT INTO p VALUES (1, 'b')", nil, "", "23505"},
		{"INSERT INTO p VALUES (3, NULL)", nil, "", "23502"},
		{"INSERT INTO c VALUES (1, 99)", nil, "", "23503"},
		{"UPDATE p SET name = 'z' WHERE id = 42", nil, "UPDATE 0", ""},
		{"DELETE FROM p WHERE id = 1", nil, "DELETE 1", ""},
		{"SELECT * FROM nope", nil, "", "42P01"},
		{"SELEC 1", nil, "", "42601"},
		{"SELECT nope FROM p", nil, "", "42703"},
		{"SELECT id FROM p", nil, "SELECT 0", ""},
		{"-- only a comment", nil, "", "42601"},
	}
	for _, st := range steps {
		res, err := run(t, s, st.sql, st.args...)
		if st.code != "" {
			var pe *pgwire.Error
			if !errors.As(err, &pe) || pe.Code != st.code {
				t.Errorf("%s: want SQLSTATE %s, got %v", st.sql, st.code, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", st.sql, err)
			continue
		}
		if res.Tag() != st.tag {
			t.Errorf("%s: tag %q, want %q", st.sql, res.Tag(), st.tag)
		}
	}
}

// A read-write transaction holds the single writer: a second writer waits
// at most busy_timeout and gets 40001; closing the session frees it.
func TestWriterLockAndClose(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	a, _ := db.NewSession(ctx, "u", "d")
	b, _ := db.NewSession(ctx, "u", "d")
	defer b.Close()
	if _, err := run(t, a, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, a, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, a, "INSERT INTO t VALUES (1, 1)"); err != nil {
		t.Fatal(err)
	}
	if a.TxStatus() != 'T' {
		t.Fatal("not in a transaction")
	}
	// Reads still run (read pool) and do not see the uncommitted row.
	res, err := run(t, b, "SELECT id FROM t")
	if err != nil || res.Tag() != "SELECT 0" {
		t.Fatalf("read during a write transaction: %v %v", res, err)
	}
	_, err = run(t, b, "INSERT INTO t VALUES (2, 2)")
	var pe *pgwire.Error
	if !errors.As(err, &pe) || pe.Code != "40001" {
		t.Fatalf("second writer: want 40001, got %v", err)
	}
	a.Close() // the client vanished: roll back, free the writer
	if _, err := run(t, b, "INSERT INTO t VALUES (2, 2)"); err != nil {
		t.Fatalf("writer not freed by Close: %v", err)
	}
	res, _ = run(t, b, "SELECT id FROM t")
	if res.Tag() != "SELECT 1" {
		t.Fatalf("rolled-back row visible: %s", res.Tag())
	}
}

// A reader's schema is only brought up to date when it next runs a
// statement: DDL prepared on a reader that last ran before a DROP must not
// fail with SQLite's "already exists" for what the DROP removed. The
// statements are Hibernate 7's schema "create" (in autocommit) and a unit of
// work after it (in a transaction block, which reads on the writer).
func TestDDLAfterDropOnStaleReader(t *testing.T) {
	db, err := Open(Options{Path: filepath.Join(t.TempDir(), "t.db"), ReadPool: 4, BusyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	s, _ := db.NewSession(ctx, "u", "d")
	defer s.Close()
	schema := []string{
		"alter table if exists Order_tags drop constraint if exists FKdf2qnyvpqwmf4kfhhx41ylb3o",
		"alter table if exists orders drop constraint if exists FK624gtjin3po807j3vix093tlf",
		"drop table if exists customer cascade",
		"drop table if exists Order_tags cascade",
		"drop table if exists orders cascade",
		"drop sequence if exists customer_SEQ",
		"create sequence customer_SEQ start with 1 increment by 50",
		"create table customer (version integer not null, id bigint not null, email varchar(255) not null unique, name varchar(255), primary key (id))",
		"create table Order_tags (Order_id bigint not null, tags varchar(255))",
		"create table orders (due date, eta numeric(21,0), gift boolean not null, total numeric(12,2), createdAt timestamp(6) with time zone, customer_id bigint not null, id bigint generated by default as identity, placed_at timestamp(6) with time zone, ref uuid, status varchar(255) check ((status in ('NEW','PAID','SHIPPED'))), attrs jsonb, blob bytea, primary key (id))",
		"create index IDXk45kil9p0yii72qmr8tonjsh on orders (placed_at)",
		"alter table if exists Order_tags add constraint FKdf2qnyvpqwmf4kfhhx41ylb3o foreign key (Order_id) references orders",
		"alter table if exists orders add constraint FK624gtjin3po807j3vix093tlf foreign key (customer_id) references customer",
	}
	work := []string{
		"BEGIN",
		"insert into customer values (0, 1, 'a', 'b')",
		"insert into orders (customer_id, gift) values (1, true)",
		"insert into Order_tags values (1, 'x')",
		"select count(*) from orders o join customer c on c.id = o.customer_id where o.placed_at is null",
		"select * from Order_tags",
		"COMMIT",
	}
	for round := 0; round < 3; round++ {
		// Hibernate's start: a transaction that reads settings.
		start := []string{"BEGIN", "select current_schema()", "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'default_transaction_isolation'", "COMMIT"}
		for _, sql := range append(append(start, schema...), work...) {
			if _, err := run(t, s, sql); err != nil {
				t.Fatalf("round %d: %s: %v", round, sql, err)
			}
		}
	}
}

// SQL's PREPARE, EXECUTE and DEALLOCATE, as PostgreSQL answers them.
func TestSQLPrepare(t *testing.T) {
	db := open(t)
	s, _ := db.NewSession(context.Background(), "u", "d")
	defer s.Close()
	steps := []struct{ sql, tag, code string }{
		{"CREATE TABLE pq (id int PRIMARY KEY, v text, d date)", "CREATE TABLE", ""},
		{"PREPARE ins(int, text) AS INSERT INTO pq VALUES ($1, $2)", "PREPARE", ""},
		{"EXECUTE ins(1, 'a')", "INSERT 0 1", ""},
		{"EXECUTE ins(2, 'b' || 'c')", "INSERT 0 1", ""},
		{"EXECUTE ins(3)", "", "42601"},
		{"PREPARE ins AS SELECT 1", "", "42P05"},
		{"PREPARE bad AS SELECT * FROM no_such_table", "", "42P01"},
		{"EXECUTE bad", "", "26000"},
		{"PREPARE q AS SELECT id, v FROM pq WHERE id >= $1 ORDER BY id", "PREPARE", ""},
		{"EXECUTE q(2)", "SELECT 1", ""},
		{"EXECUTE q('1')", "SELECT 2", ""},
		{"PREPARE nxt(date) AS SELECT $1 + 1", "PREPARE", ""},
		{"EXECUTE nxt('2024-02-28')", "SELECT 1", ""},
		{"PREPARE upd(int) AS UPDATE pq SET v = upper(v) WHERE id = $1 RETURNING v", "PREPARE", ""},
		{"EXECUTE upd(2)", "UPDATE 1", ""},
		{"DEALLOCATE PREPARE q", "DEALLOCATE", ""},
		{"EXECUTE q(1)", "", "26000"},
		{"DEALLOCATE q", "", "26000"},
		{"DEALLOCATE ALL", "DEALLOCATE ALL", ""},
		{"EXECUTE ins(4, 'd')", "", "26000"},
	}
	for _, st := range steps {
		res, err := run(t, s, st.sql)
		if st.code != "" {
			var pe *pgwire.Error
			if !errors.As(err, &pe) || pe.Code != st.code {
				t.Errorf("%s: want SQLSTATE %s, got %v", st.sql, st.code, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", st.sql, err)
			continue
		}
		if res.Tag() != st.tag {
			t.Errorf("%s: tag %q, want %q", st.sql, res.Tag(), st.tag)
		}
	}
	res, err := run(t, s, "SELECT string_agg(id || v, ',' ORDER BY id) FROM pq")
	if err != nil || res.Tag() != "SELECT 1" {
		t.Fatal(res, err)
	}
}

// COPY FROM stores values as an INSERT of their literals would: booleans
// as 1 / 0 (a 't' kept as text read false in WHERE), dates and times in
// the column's form (a timestamptz in UTC, so rows sort as times), and
// refuses what the column's type cannot read (22P02 / 22007).
func TestCopyFromTypedColumns(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	bs, _ := db.NewSession(ctx, "u", "d")
	defer bs.Close()
	s := bs.(*Session)
	if _, err := run(t, s, "CREATE TABLE cpt (id int, b boolean, at timestamptz, d date, n numeric(6,2))"); err != nil {
		t.Fatal(err)
	}
	rows := func(r ...[]string) func() ([]*string, bool, error) {
		i := 0
		return func() ([]*string, bool, error) {
			if i == len(r) {
				return nil, false, nil
			}
			out := make([]*string, len(r[i]))
			for j := range r[i] {
				if r[i][j] != `\N` {
					out[j] = &r[i][j]
				}
			}
			i++
			return out, true, nil
		}
	}
	n, err := s.CopyFrom(ctx, "cpt", nil, rows(
		[]string{"1", "t", "2024-01-02 03:00:00+05", "2024-1-2", "1.5"},
		[]string{"2", "f", "2024-01-02 01:00:00+00", "2024-01-01", `\N`},
		[]string{"3", "yes", "2024-01-01 23:30:00-01", `\N`, "2"}))
	if err != nil || n != 3 {
		t.Fatalf("COPY: %d rows, %v", n, err)
	}
	wantRows(t, s, "SELECT id FROM cpt ORDER BY at", "1,3,2")
	wantRows(t, s, "SELECT id FROM cpt WHERE b ORDER BY id", "1,3")
	wantRows(t, s, "SELECT id FROM cpt WHERE d = '2024-01-02'", "1")
	for _, bad := range [][]string{{"4", "maybe", `\N`, `\N`, `\N`}, {"4", `\N`, "yesterday-ish", `\N`, `\N`}, {"4", `\N`, `\N`, `\N`, "x"}} {
		if _, err := s.CopyFrom(ctx, "cpt", nil, rows(bad)); err == nil {
			t.Errorf("COPY of %v: no error", bad)
		}
	}
	wantRows(t, s, "SELECT count(*) FROM cpt", "3")
}

// Constraint violations read as PostgreSQL's, with the fields ORMs use:
// the unique constraint's name (looked up: SQLite names only columns),
// the not-null column and its table, the check's name.
func TestConstraintErrors(t *testing.T) {
	db := open(t)
	s, _ := db.NewSession(context.Background(), "u", "d")
	defer s.Close()
	for _, sql := range []string{
		"CREATE TABLE ech (id int PRIMARY KEY, u text UNIQUE, a int, b int, n int NOT NULL DEFAULT 1 CHECK (n > 0), CONSTRAINT ab_uq UNIQUE (a, b))",
		"INSERT INTO ech VALUES (1, 'a', 1, 1)",
		"CREATE TABLE ech_c (id int PRIMARY KEY, p int REFERENCES ech)",
		"INSERT INTO ech_c VALUES (1, 1)",
	} {
		if _, err := run(t, s, sql); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ sql, code, msg, constraint, column string }{
		{"INSERT INTO ech VALUES (1, 'b', 2, 2)", "23505", `duplicate key value violates unique constraint "ech_pkey"`, "ech_pkey", ""},
		{"INSERT INTO ech VALUES (2, 'a', 2, 2)", "23505", `duplicate key value violates unique constraint "ech_u_key"`, "ech_u_key", ""},
		{"INSERT INTO ech VALUES (3, 'c', 1, 1)", "23505", `duplicate key value violates unique constraint "ab_uq"`, "ab_uq", ""},
		{"UPDATE ech SET n = NULL", "23502", `null value in column "n" of relation "ech" violates not-null constraint`, "", "n"},
		{"UPDATE ech SET n = 0", "23514", `new row for relation "ech" violates check constraint "ech_n_check"`, "ech_n_check", ""},
		{"INSERT INTO ech_c VALUES (2, 9)", "23503", `insert or update on table "ech_c" violates foreign key constraint "ech_c_p_fkey"`, "ech_c_p_fkey", ""},
		{"DELETE FROM ech", "23503", `update or delete on table "ech" violates foreign key constraint "ech_c_p_fkey" on table "ech_c"`, "ech_c_p_fkey", ""},
	}
	for _, tc := range tests {
		_, err := run(t, s, tc.sql)
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code != tc.code || pe.Message != tc.msg || pe.Constraint != tc.constraint || pe.Column != tc.column {
			t.Errorf("%s: %+v, want %s %q constraint %q column %q", tc.sql, pe, tc.code, tc.msg, tc.constraint, tc.column)
		}
	}
}

// Constraint violations with PostgreSQL's DETAIL and fields: which of
// two foreign keys failed (SQLite does not say), the referenced side, an
// expression index named from SQLite's "index 'x'", the unique key's
// values, the failing row of a not-null violation.
func TestConstraintErrorDetails(t *testing.T) {
	db := open(t)
	s, _ := db.NewSession(context.Background(), "u", "d")
	defer s.Close()
	for _, sql := range []string{
		"CREATE TABLE r6a (id int PRIMARY KEY)",
		"CREATE TABLE r6b (id int, a int CONSTRAINT r6b_a_fk REFERENCES r6a (id), b int CONSTRAINT r6b_b_fk REFERENCES r6a (id))",
		"INSERT INTO r6a VALUES (1)",
		"INSERT INTO r6b VALUES (1, 1, 1)",
		"CREATE TABLE u2 (id bigserial PRIMARY KEY, name varchar(64) NOT NULL, UNIQUE (name))",
		"CREATE UNIQUE INDEX u2_lower_name ON u2 (lower(name))",
		"INSERT INTO u2 (name) VALUES ('bob')",
		"CREATE TABLE m2 (a int, b text, PRIMARY KEY (a, b))",
		"CREATE TABLE nn (id int PRIMARY KEY, v text NOT NULL)",
	} {
		if _, err := run(t, s, sql); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ sql, code, msg, detail, table, constraint string }{
		{"INSERT INTO r6b VALUES (2, 99, NULL)", "23503", `insert or update on table "r6b" violates foreign key constraint "r6b_a_fk"`, `Key (a)=(99) is not present in table "r6a".`, "r6b", "r6b_a_fk"},
		{"INSERT INTO r6b VALUES (2, 1, 99)", "23503", `insert or update on table "r6b" violates foreign key constraint "r6b_b_fk"`, `Key (b)=(99) is not present in table "r6a".`, "r6b", "r6b_b_fk"},
		{"UPDATE r6b SET b = 7", "23503", `insert or update on table "r6b" violates foreign key constraint "r6b_b_fk"`, `Key (b)=(7) is not present in table "r6a".`, "r6b", "r6b_b_fk"},
		{"DELETE FROM r6a", "23503", `update or delete on table "r6a" violates foreign key constraint "r6b_a_fk" on table "r6b"`, `Key (id)=(1) is still referenced from table "r6b".`, "r6b", "r6b_a_fk"},
		{"INSERT INTO u2 (name) VALUES ('bob')", "23505", `duplicate key value violates unique constraint "u2_name_key"`, `Key (name)=(bob) already exists.`, "u2", "u2_name_key"},
		{"INSERT INTO u2 (name) VALUES ('BOB')", "23505", `duplicate key value violates unique constraint "u2_lower_name"`, "", "u2", "u2_lower_name"},
		{"INSERT INTO m2 VALUES (1, 'x'), (1, 'x')", "23505", `duplicate key value violates unique constraint "m2_pkey"`, `Key (a, b)=(1, x) already exists.`, "m2", "m2_pkey"},
		{"INSERT INTO nn (id) VALUES (1)", "23502", `null value in column "v" of relation "nn" violates not-null constraint`, `Failing row contains (1, null).`, "nn", ""},
	}
	for _, tc := range tests {
		_, err := run(t, s, tc.sql)
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code != tc.code || pe.Message != tc.msg || pe.Detail != tc.detail || pe.Table != tc.table || pe.Constraint != tc.constraint || pe.Schema != "public" {
			t.Errorf("%s: %+v, want %s %q detail %q table %q constraint %q", tc.sql, pe, tc.code, tc.msg, tc.detail, tc.table, tc.constraint)
		}
	}
}

// DO blocks: Sequelize's enum creation (the second a no-op through its
// handler), IF on a query, a handled exception undoing its block's
// statements first, RAISE EXCEPTION rolling the DO back, a DO inside a
// transaction block ending with it.
func TestDoBlocks(t *testing.T) {
	db := open(t)
	bs, _ := db.NewSession(context.Background(), "u", "d")
	s := bs.(*Session)
	defer s.Close()
	enum := `DO 'BEGIN CREATE TYPE "public"."enum_Users_role" AS ENUM(''admin'',''editor''); EXCEPTION WHEN duplicate_object THEN null; END'`
	upsert := `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM dt WHERE id = 1) THEN INSERT INTO dt VALUES (1, 'first'); ELSE UPDATE dt SET v = 'again' WHERE id = 1; END IF; END $$`
	steps := []struct{ sql, code string }{
		{enum, ""},
		{enum, ""},
		{"CREATE TABLE dt (id int PRIMARY KEY, v text)", ""},
		{upsert, ""},
		{upsert, ""},
		{"DO $$ BEGIN INSERT INTO dt VALUES (2, 'x'); INSERT INTO dt VALUES (1, 'dup'); EXCEPTION WHEN unique_violation THEN INSERT INTO dt VALUES (3, 'handled'); END $$", ""},
		{"DO $$ BEGIN INSERT INTO dt VALUES (4, 'y'); RAISE EXCEPTION 'stop here'; END $$", "P0001"},
		{"DO $$ BEGIN INSERT INTO dt VALUES (5, 'z'); INSERT INTO dt VALUES (1, 'dup'); END $$", "23505"},
		{"BEGIN", ""},
		{"DO $$ BEGIN INSERT INTO dt VALUES (6, 'in tx'); END $$", ""},
		{"ROLLBACK", ""},
		{"DO $$ DECLARE n int; BEGIN n := 1; END $$", "0A000"},
	}
	for _, st := range steps {
		_, err := run(t, s, st.sql)
		var pe *pgwire.Error
		if st.code == "" && err != nil || st.code != "" && (!errors.As(err, &pe) || pe.Code != st.code) {
			t.Fatalf("%s: %v, want %q", st.sql, err, st.code)
		}
	}
	wantRows(t, s, "SELECT id || ':' || v FROM dt ORDER BY id", "1:again,3:handled")
	wantRows(t, s, "SELECT count(*) FROM pg_type WHERE typname = 'enum_Users_role'", "1")
}

// ADD COLUMN of a serial or identity column, or with a nextval default:
// the rows already there are numbered, later rows draw from the sequence
// (SQLite adds columns with constant defaults only; Flyway migrations do
// this).
func TestAddSerialColumn(t *testing.T) {
	db := open(t)
	bs, _ := db.NewSession(context.Background(), "u", "d")
	s := bs.(*Session)
	defer s.Close()
	for _, sql := range []string{
		"CREATE TABLE ac (id int PRIMARY KEY, v text)",
		"INSERT INTO ac VALUES (1, 'a'), (2, 'b')",
		"CREATE SEQUENCE invoice_no_seq START WITH 100",
		"ALTER TABLE ac ADD COLUMN invoice_no bigint DEFAULT nextval('invoice_no_seq')",
		"ALTER TABLE ac ADD COLUMN n serial",
		"ALTER TABLE ac ADD COLUMN g int GENERATED BY DEFAULT AS IDENTITY",
		"INSERT INTO ac (id, v) VALUES (3, 'c')",
	} {
		if _, err := run(t, s, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	wantRows(t, s, "SELECT id || ' ' || invoice_no || ' ' || n || ' ' || g FROM ac ORDER BY id", "1 100 1 1,2 101 2 2,3 102 3 3")
	wantRows(t, s, "SELECT column_default FROM information_schema.columns WHERE table_name = 'ac' AND column_name = 'invoice_no'", "nextval('invoice_no_seq'::regclass)")
	if _, err := run(t, s, "INSERT INTO ac (id, v, n) VALUES (4, 'd', NULL)"); err == nil {
		t.Error("NULL into a serial column (NOT NULL) accepted")
	}
}

// TestCatalogParamTypes: a parameter compared with a catalog column takes
// the catalog's type (relname = $1 is name, oid = $1 is oid), where the
// catalog view's declared types made it bytea and the text a client sent
// matched no row.
func TestCatalogParamTypes(t *testing.T) {
	db := open(t)
	s, _ := db.NewSession(context.Background(), "u", "d")
	defer s.Close()
	if _, err := run(t, s, "CREATE TABLE cpt (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		sql  string
		oid  uint32
		arg  any
		rows int
	}{
		{"SELECT relname FROM pg_class WHERE relname = $1", 19, "cpt", 1},
		{"SELECT attname FROM pg_attribute WHERE attname = $1", 19, "v", 1},
		{"SELECT relname FROM pg_class WHERE oid = $1", 26, nil, 0},
	} {
		st, err := s.Prepare(ctx, c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		if got := st.(*Statement).ParamOIDs(); len(got) != 1 || got[0] != c.oid {
			t.Errorf("%s: parameter types %v, want [%d]", c.sql, got, c.oid)
		}
		if c.arg == nil {
			continue
		}
		res, err := s.Execute(ctx, st, []any{c.arg})
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		rows, _, _, err := drain(res)
		if err != nil || len(rows) != c.rows {
			t.Errorf("%s with %v: %d rows, %v; want %d", c.sql, c.arg, len(rows), err, c.rows)
		}
	}
	// pg_database_size is the file's pages (it answered 8192 always).
	st, err := s.Prepare(ctx, "SELECT pg_database_size(current_database())")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Execute(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, _, err := drain(res)
	if n, ok := rows[0][0].(int64); err != nil || !ok || n <= 8192 || n%512 != 0 {
		t.Errorf("pg_database_size: %v %v", rows, err)
	}
}
