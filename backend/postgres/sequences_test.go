package postgres

import (
	"context"
	"testing"
)

// TestFenceSequences: rows applied with their values (as on a standby)
// leave the sequences behind; the fence moves each sequence feeding a
// column past the column's largest value, leaves one already ahead where
// it is, and skips a descending sequence and a sequence no column uses.
func TestFenceSequences(t *testing.T) {
	ctx := context.Background()
	m, c := startTestServer(t)
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
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	b, err := NewBackend(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.fenceSequences(ctx); err != nil {
		t.Fatal(err)
	}
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
	} {
		var got int64
		if err := c.QueryRow(ctx, "SELECT nextval($1::regclass)", tc.seq).Scan(&got); err != nil {
			t.Fatalf("nextval(%s): %v", tc.seq, err)
		}
		if got != tc.want {
			t.Errorf("after the fence nextval(%s) = %d, want %d", tc.seq, got, tc.want)
		}
	}
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
