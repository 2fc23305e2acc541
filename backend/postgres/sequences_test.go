package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/writeset"
)

// TestFenceSequences: rows applied with their values (as on a standby)
// leave the sequences behind; the fence moves each sequence feeding a
// column past the column's largest value, leaves one already ahead where
// it is, and skips a descending sequence and a sequence no column uses.
func TestFenceSequences(t *testing.T) {
	ctx := context.Background()
	m, c := startTestServer(t)
	fenceFixture(ctx, t, c)
	b, err := NewBackend(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.fenceSequences(ctx); err != nil {
		t.Fatal(err)
	}
	checkFenced(ctx, t, c)
	// Once fenced, the next call does nothing until rows are applied again.
	if _, err := c.Exec(ctx, "INSERT INTO f_serial VALUES (100)"); err != nil {
		t.Fatal(err)
	}
	if err := b.fenceSequences(ctx); err != nil {
		t.Fatal(err)
	}
	var got int64
	if err := c.QueryRow(ctx, "SELECT nextval('f_serial_id_seq')").Scan(&got); err != nil || got != 9 {
		t.Fatalf("a second fence without an apply in between moved the sequence: nextval %d (%v), want 9", got, err)
	}
	b.seqs.stale()
	if err := b.fenceSequences(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "SELECT nextval('f_serial_id_seq')").Scan(&got); err != nil || got != 101 {
		t.Fatalf("after an apply the fence did not run again: nextval %d (%v), want 101", got, err)
	}
}

// fenceFixture makes tables whose sequences stand where applied rows
// left them (explicit values, the sequences untouched).
func fenceFixture(ctx context.Context, t *testing.T, c *pgx.Conn) {
	t.Helper()
	for _, q := range []string{
		"CREATE TABLE f_serial (id serial PRIMARY KEY)",
		"CREATE TABLE f_big (id bigserial PRIMARY KEY)",
		"CREATE TABLE f_ident (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY)",
		"CREATE SEQUENCE f_free START 100",
		"CREATE TABLE f_default (id bigint PRIMARY KEY DEFAULT nextval('f_free'))",
		"CREATE TABLE f_ahead (id serial PRIMARY KEY)",
		"CREATE SEQUENCE f_down INCREMENT -1 START -1",
		"CREATE TABLE f_desc (id int PRIMARY KEY DEFAULT nextval('f_down'))",
		"CREATE SEQUENCE f_unused",
		"CREATE TABLE f_empty (id serial PRIMARY KEY)",
		// Applied rows: explicit values, the sequences untouched.
		"INSERT INTO f_serial VALUES (1), (7)",
		"INSERT INTO f_big VALUES (5000000000)",
		"INSERT INTO f_ident OVERRIDING SYSTEM VALUE VALUES (3)",
		"INSERT INTO f_default VALUES (100), (150)",
		"SELECT setval('f_ahead_id_seq', 50)",
		"INSERT INTO f_ahead VALUES (10)",
		"INSERT INTO f_desc VALUES (-5)",
		`CREATE TABLE "Odd ""T'x" (id serial PRIMARY KEY)`,
		`INSERT INTO "Odd ""T'x" VALUES (41)`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// checkFenced checks every sequence of fenceFixture after a fence.
func checkFenced(ctx context.Context, t *testing.T, c *pgx.Conn) {
	t.Helper()
	for _, tc := range []struct {
		seq  string
		want int64
	}{
		{"f_serial_id_seq", 8},
		{"f_big_id_seq", 5000000001},
		{"f_ident_id_seq", 4},
		{"f_free", 151},
		{"f_ahead_id_seq", 51},
		{"f_down", -1},
		{"f_unused", 1},
		{"f_empty_id_seq", 1},
		{`"Odd ""T'x_id_seq"`, 42},
	} {
		var got int64
		if err := c.QueryRow(ctx, "SELECT nextval($1::regclass)", tc.seq).Scan(&got); err != nil {
			t.Fatalf("nextval(%s): %v", tc.seq, err)
		}
		if got != tc.want {
			t.Errorf("after the fence nextval(%s) = %d, want %d", tc.seq, got, tc.want)
		}
	}
}

// TestFenceStatements: multi-master's fence after an applied batch moves
// the sequences of the tables the batch wrote as the whole fence does,
// and nothing for a batch of deletes or of tables without sequences.
func TestFenceStatements(t *testing.T) {
	ctx := context.Background()
	m, c := startTestServer(t)
	fenceFixture(ctx, t, c)
	b, err := NewBackend(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	ac, err := pgconn.Connect(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close(ctx)
	rows := func(op writeset.Op, tables ...string) []*writeset.Writeset {
		ws := &writeset.Writeset{}
		for _, tb := range tables {
			ws.Rows = append(ws.Rows, writeset.Row{Table: tb, Op: op})
		}
		return []*writeset.Writeset{ws}
	}
	for _, batch := range [][]*writeset.Writeset{rows(writeset.OpDelete, "f_serial"), rows(writeset.OpUpdate, "no_such_table")} {
		if got, err := b.fenceStatements(ctx, ac, batch); err != nil || len(got) != 0 {
			t.Fatalf("fence statements for %v: %q (%v), want none", batch[0].Rows, got, err)
		}
	}
	all := rows(writeset.OpUpdate, "f_serial", "f_big", "f_ident", "f_default", "f_ahead", "f_desc", "f_empty", `Odd "T'x`, "f_serial")
	stmts, err := b.fenceStatements(ctx, ac, all)
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 7 {
		t.Errorf("%d statements, want 7 (one per sequence that counts up, f_serial once): %q", len(stmts), stmts)
	}
	for _, q := range stmts {
		if _, err := ac.Exec(ctx, q).ReadAll(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	checkFenced(ctx, t, c)
}

func TestCopyLoads(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"COPY t FROM STDIN", true},
		{"copy t (a, b) from stdin with (format csv)", true},
		{`COPY "My Table" ("a b") FROM STDIN`, true},
		{"COPY public.t FROM '/tmp/x'", true},
		{`COPY "s"."t" FROM STDIN BINARY`, true},
		{"COPY t TO STDOUT", false},
		{"COPY t (a) TO STDOUT (FORMAT csv)", false},
		{"COPY (SELECT * FROM t WHERE x = 'from') TO STDOUT", false},
		{"COPY (SELECT 1 FROM t) TO STDOUT", false},
	} {
		if got := copyFromRe.MatchString(tc.sql); got != tc.want {
			t.Errorf("%q loads = %v, want %v", tc.sql, got, tc.want)
		}
	}
}
