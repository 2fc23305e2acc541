package writeset

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3"
)

// backend is the little a test needs from a database: run a transaction of
// statements, and list query results as rendered Values.
type backend interface {
	execTx(sts []Stmt) error
	dump(t *testing.T, query string) []string
}

// These tests run the generated SQL on real back ends, to prove the text
// is accepted and that applying is idempotent. SQLite always runs; PostgreSQL
// runs when TANDEM_TEST_POSTGRES_DSN names a database the test may create
// tables in, e.g. "postgres://user@localhost:5432/tandem_test".

func TestApplySQLite(t *testing.T) {
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "apply.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		if strings.Contains(err.Error(), "cgo") {
			t.Skipf("SQLite driver unavailable: %v", err)
		}
		t.Fatal(err)
	}
	runApplyScenario(t, sqlBackend{db}, SQLite, []string{
		`CREATE TABLE subscriber (s_id INTEGER PRIMARY KEY, bit_1 BOOLEAN, vlr REAL, name TEXT, blob BLOB)`,
		`CREATE TABLE cf (s_id INTEGER, sf_type INTEGER, numberx TEXT, PRIMARY KEY (s_id, sf_type))`,
	})
}

func TestApplyPostgres(t *testing.T) {
	dsn := os.Getenv("TANDEM_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("TANDEM_TEST_POSTGRES_DSN not set")
	}
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range []string{`DROP TABLE IF EXISTS subscriber`, `DROP TABLE IF EXISTS cf`} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	runApplyScenario(t, pgBackend{ctx, conn}, Postgres, []string{
		`CREATE TABLE subscriber (s_id BIGINT PRIMARY KEY, bit_1 BOOLEAN, vlr DOUBLE PRECISION, name TEXT, blob BYTEA)`,
		`CREATE TABLE cf (s_id BIGINT, sf_type BIGINT, numberx TEXT, PRIMARY KEY (s_id, sf_type))`,
	})
}

func runApplyScenario(t *testing.T, db backend, d Dialect, ddl []string) {
	t.Helper()
	subCols := []string{"s_id", "bit_1", "vlr", "name", "blob"}
	sub := func(op Op, id int64, after ...Value) Row {
		return Row{Table: "subscriber", Op: op, KeyCols: []string{"s_id"}, Key: []Value{Int(id)}, Cols: subCols, After: after}
	}
	cfCols := []string{"s_id", "sf_type", "numberx"}
	cf := func(op Op, s, typ int64, after ...Value) Row {
		r := Row{Table: "cf", Op: op, KeyCols: []string{"s_id", "sf_type"}, Key: []Value{Int(s), Int(typ)}}
		if op != OpDelete {
			r.Cols, r.After = cfCols, after
		}
		return r
	}
	steps := []*Writeset{
		{GSN: 1, DDL: ddl[0], Rows: []Row{{Table: "subscriber", Op: OpDDL}}},
		{GSN: 2, DDL: ddl[1], Rows: []Row{{Table: "cf", Op: OpDDL}}},
		{GSN: 3, Rows: []Row{
			sub(OpInsert, 1, Int(1), Bool(true), Float(-1.5), Text("it's ✓"), Bytes([]byte{0, 1, 2})),
			sub(OpInsert, 2, Int(2), Bool(false), Null(), Null(), Null()),
			cf(OpInsert, 1, 1, Int(1), Int(1), Text("a")),
			cf(OpInsert, 1, 2, Int(1), Int(2), Text("b")),
		}},
		{GSN: 4, Rows: []Row{
			sub(OpUpdate, 1, Int(1), Bool(false), Float(math.MaxFloat64), Text("renamed"), Null()),
			cf(OpUpdate, 1, 2, Int(1), Int(3), Text("moved")), // key change (1,2) -> (1,3)
			cf(OpDelete, 1, 1),
		}},
		{GSN: 5, Rows: []Row{
			// An update of a row this node lost is repaired by the upsert.
			sub(OpUpdate, 3, Int(3), Bool(true), Float(0), Text(""), Bytes(nil)),
		}},
	}
	apply := func(ws *Writeset) {
		t.Helper()
		if err := ws.Validate(); err != nil {
			t.Fatalf("GSN %d: %v", ws.GSN, err)
		}
		// Go through the encoding, as a shipped writeset would.
		got, err := Decode(Encode(ws))
		if err != nil {
			t.Fatalf("GSN %d: %v", ws.GSN, err)
		}
		sts, err := Statements(d, got)
		if err != nil {
			t.Fatalf("GSN %d: %v", ws.GSN, err)
		}
		if err := db.execTx(sts); err != nil {
			t.Fatalf("GSN %d: %v", ws.GSN, err)
		}
	}
	for _, ws := range steps {
		apply(ws)
		if !ws.IsDDL() {
			apply(ws) // re-applying after a crash must change nothing
		}
	}

	wantSub := []string{
		"1 false 1.7976931348623157e+308 'renamed' NULL",
		"2 false NULL NULL NULL",
		"3 true 0 '' x''",
	}
	if got := db.dump(t, `SELECT s_id, bit_1, vlr, name, blob FROM subscriber ORDER BY s_id`); !slices.Equal(got, wantSub) {
		t.Errorf("subscriber:\n got %q\nwant %q", got, wantSub)
	}
	wantCF := []string{"1 3 'moved'"}
	if got := db.dump(t, `SELECT s_id, sf_type, numberx FROM cf ORDER BY s_id, sf_type`); !slices.Equal(got, wantCF) {
		t.Errorf("cf:\n got %q\nwant %q", got, wantCF)
	}
}

type sqlBackend struct{ db *sql.DB }

func (b sqlBackend) execTx(sts []Stmt) error {
	tx, err := b.db.Begin()
	if err != nil {
		return err
	}
	for _, st := range sts {
		if _, err := tx.Exec(st.SQL, st.Args...); err != nil {
			tx.Rollback()
			return fmt.Errorf("%s: %w", st.SQL, err)
		}
	}
	return tx.Commit()
}

func (b sqlBackend) dump(t *testing.T, query string) []string {
	t.Helper()
	rows, err := b.db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, render(t, vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type pgBackend struct {
	ctx  context.Context
	conn *pgx.Conn
}

func (b pgBackend) execTx(sts []Stmt) error {
	tx, err := b.conn.Begin(b.ctx)
	if err != nil {
		return err
	}
	for _, st := range sts {
		if _, err := tx.Exec(b.ctx, st.SQL, st.Args...); err != nil {
			tx.Rollback(b.ctx)
			return fmt.Errorf("%s: %w", st.SQL, err)
		}
	}
	return tx.Commit(b.ctx)
}

func (b pgBackend) dump(t *testing.T, query string) []string {
	t.Helper()
	rows, err := b.conn.Query(b.ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, render(t, vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func render(t *testing.T, vals []any) string {
	t.Helper()
	line := ""
	for i, x := range vals {
		v, err := FromAny(x)
		if err != nil {
			t.Fatalf("column %d: %v", i, err)
		}
		if i > 0 {
			line += " "
		}
		line += v.String()
	}
	return line
}
