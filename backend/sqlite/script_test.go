package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"
)

func TestCutStatement(t *testing.T) {
	for _, tc := range []struct{ in, piece, rest string }{
		{"SELECT 1; SELECT 2", "SELECT 1;", " SELECT 2"},
		{"INSERT INTO t VALUES ('a;b'); x", "INSERT INTO t VALUES ('a;b');", " x"},
		{"INSERT INTO t VALUES ('it''s;'); x", "INSERT INTO t VALUES ('it''s;');", " x"},
		{`CREATE TABLE "a;b" (x); y`, `CREATE TABLE "a;b" (x);`, " y"},
		{"SELECT [a;b]; y", "SELECT [a;b];", " y"},
		{"SELECT 1 -- c;\n; y", "SELECT 1 -- c;\n;", " y"},
		{"SELECT /* ; */ 1; y", "SELECT /* ; */ 1;", " y"},
		{"SELECT 1", "SELECT 1", ""},
		{"SELECT /* open", "SELECT /* open", ""},
	} {
		p, r := cutStatement(tc.in)
		if p != tc.piece || r != tc.rest {
			t.Errorf("cutStatement(%q) = %q, %q; want %q, %q", tc.in, p, r, tc.piece, tc.rest)
		}
	}
}

// TestExecScriptLarge: a script of many statements larger than a chunk,
// with strings holding semicolons and a trigger whose body has statements
// of its own, runs whole and in order.
func TestExecScriptLarge(t *testing.T) {
	db := open(t)
	c, err := db.acquire(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.release(c)
	var b strings.Builder
	b.WriteString("CREATE TABLE s (id INTEGER PRIMARY KEY, v TEXT);\nCREATE TABLE log (n INTEGER);\n")
	for i := 1; i <= 20000; i++ {
		if i == 10000 {
			// A trigger straddling chunk boundaries is never cut.
			b.WriteString("CREATE TRIGGER tr AFTER INSERT ON s BEGIN INSERT INTO log VALUES (new.id); INSERT INTO log VALUES (-new.id); END;\n")
		}
		fmt.Fprintf(&b, "INSERT INTO s VALUES (%d, 'v;%d''x');\n", i, i)
	}
	if n := b.Len(); n < 10*scriptChunk {
		t.Fatalf("script of %d bytes does not span chunks", n)
	}
	if _, err := c.execScript(b.String()); err != nil {
		t.Fatal(err)
	}
	row := func(q string) int64 {
		rows, err := c.c.Query(q, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		v := make([]driver.Value, 1)
		if err := rows.Next(v); err != nil {
			t.Fatal(err)
		}
		return v[0].(int64)
	}
	n, logged := row("SELECT count(*) FROM s WHERE v LIKE 'v;%''x'"), row("SELECT count(*) FROM log")
	if n != 20000 || logged != 2*10001 {
		t.Fatalf("rows %d (want 20000), trigger rows %d (want %d)", n, logged, 2*10001)
	}
	// A failing statement reports its chunk.
	stmt, err := c.execScript(strings.Repeat("INSERT INTO log VALUES (1);\n", 5000) + "INSERT INTO nosuch VALUES (1);\n")
	if err == nil || !strings.Contains(stmt, "nosuch") || len(stmt) > 2*scriptChunk {
		t.Fatalf("failing script: err %v, statement of %d bytes", err, len(stmt))
	}
}
