package postgres

import (
	"context"
	"strings"
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

// fenceServer starts a server with fenceFixture's tables and returns a
// back end on it, a client connection and an apply connection (closed
// when the test ends).
func fenceServer(ctx context.Context, t *testing.T) (*Backend, *pgx.Conn, *pgconn.PgConn) {
	t.Helper()
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
	t.Cleanup(func() { ac.Close(context.Background()) })
	return b, c, ac
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
	b, c, ac := fenceServer(ctx, t)
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

// TestStrideSequences: with a stride (multi-master), the fence makes every
// sequence that counts up by 1 count by the stride and moves it to the
// node's own residue past what it handed out and past its columns' values;
// a descending sequence is left alone; the fence after an applied batch
// keeps the residue; a second node's residue never meets the first's.
func TestStrideSequences(t *testing.T) {
	ctx := context.Background()
	b, c, ac := fenceServer(ctx, t)
	batch := []*writeset.Writeset{{Rows: []writeset.Row{{Table: "f_serial", Op: writeset.OpInsert}, {Table: "f_ahead", Op: writeset.OpInsert}}}}
	// The batch fence's list is read while the sequences count by 1, as
	// when a batch applied a CREATE TABLE before the node wrote.
	if _, err := b.fenceStatements(ctx, ac, batch); err != nil {
		t.Fatal(err)
	}
	b.SetSequenceStride(3, 2)
	if err := b.fenceSequences(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		"f_serial_id_seq":    8,          // past 7
		"f_big_id_seq":       5000000003, // past 5000000000, 2 modulo 3
		"f_ident_id_seq":     5,          // past 3
		"f_free":             152,        // past 150
		"f_ahead_id_seq":     53,         // past its own 50
		"f_down":             -1,         // counts down: untouched
		"f_unused":           2,
		"f_empty_id_seq":     2,
		`"Odd ""T'x_id_seq"`: 44,
	}
	draw := func(seq string) int64 {
		t.Helper()
		var got int64
		if err := c.QueryRow(ctx, "SELECT nextval($1::regclass)", seq).Scan(&got); err != nil {
			t.Fatalf("nextval(%s): %v", seq, err)
		}
		return got
	}
	for seq, w := range want {
		if got := draw(seq); got != w {
			t.Errorf("after the fence nextval(%s) = %d, want %d", seq, got, w)
		}
		step := int64(3)
		if seq == "f_down" {
			step = -1
		}
		if got := draw(seq); got != w+step {
			t.Errorf("second nextval(%s) = %d, want %d", seq, got, w+step)
		}
	}
	// Fenced again (a restart, a re-seed): interleaved sequences only move
	// forward, and stay on the residue.
	b.seqs.stale()
	if err := b.fenceSequences(ctx); err != nil {
		t.Fatal(err)
	}
	if got := draw("f_serial_id_seq"); got != 14 {
		t.Errorf("after a second fence nextval(f_serial_id_seq) = %d, want 14", got)
	}
	// A batch applied another node's rows: the batch's fence moves past
	// them to the node's next own value, and leaves a sequence ahead.
	for _, q := range []string{"INSERT INTO f_serial VALUES (19), (21)", "INSERT INTO f_ahead VALUES (30)"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	stmts, err := b.fenceStatements(ctx, ac, batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := ac.Exec(ctx, q).ReadAll(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if got := draw("f_serial_id_seq"); got != 23 {
		t.Errorf("after a batch of rows up to 21 nextval(f_serial_id_seq) = %d, want 23 (past 21, 2 modulo 3)", got)
	}
	if got := draw("f_ahead_id_seq"); got != 59 {
		t.Errorf("f_ahead_id_seq (ahead of the batch's 30) drew %d, want 59", got)
	}
	var incs int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_sequence WHERE seqincrement = 3").Scan(&incs); err != nil || incs != 8 {
		t.Errorf("%d sequences count by 3 (%v), want 8 (all but the descending one)", incs, err)
	}
}

// TestStrideSequencesNotOwner: a sequence the back end's role may not
// alter (an external server's, another role's) is left as it is, and the
// others are interleaved.
func TestStrideSequencesNotOwner(t *testing.T) {
	ctx := context.Background()
	m, c := startTestServer(t)
	for _, q := range []string{
		"CREATE ROLE app LOGIN",
		"GRANT CREATE, USAGE ON SCHEMA public TO app",
		"CREATE TABLE theirs (id serial PRIMARY KEY)",
		"CREATE TABLE mine (id serial PRIMARY KEY)",
		"ALTER TABLE mine OWNER TO app",
		"GRANT SELECT ON theirs TO app",
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dsn := strings.NewReplacer("user=postgres", "user=app", "postgres://postgres@", "postgres://app@").Replace(m.DSN("postgres"))
	b, err := NewBackend(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	b.SetSequenceStride(4, 3)
	if err := b.fenceSequences(ctx); err != nil {
		t.Fatalf("fence as a role that owns one sequence of two: %v", err)
	}
	rows, err := c.Query(ctx, "SELECT sequencename, increment_by FROM pg_sequences ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for rows.Next() {
		var name string
		var inc int64
		if err := rows.Scan(&name, &inc); err != nil {
			t.Fatal(err)
		}
		got[name] = inc
	}
	if got["mine_id_seq"] != 4 || got["theirs_id_seq"] != 1 {
		t.Errorf("increments %v, want mine_id_seq 4 (its owner's) and theirs_id_seq 1 (another role's)", got)
	}
}
