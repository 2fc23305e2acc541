package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/writeset"
)

// BenchmarkCaptureImage: what a commit's capture costs per row, from
// _tandem.img to the writeset's rows (encoded, for the large row): a
// TM1-like 34-column row (the path every small transaction takes) and a
// 12 MiB row (its value read in pieces).
//
//	go test -run '^$' -bench CaptureImage ./backend/postgres
func BenchmarkCaptureImage(b *testing.B) {
	if _, err := FindBinDir(""); err != nil {
		b.Skip(err)
	}
	ctx := context.Background()
	m, err := StartManaged(ctx, ManagedConfig{DataDir: b.TempDir() + "/pg", Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Stop()
	c, err := pgconn.Connect(ctx, m.DSN("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	var defs, sel []string
	for i := 0; i < 33; i++ {
		typ := []string{"int", "smallint", "varchar(15)", "bigint"}[i%4]
		defs = append(defs, fmt.Sprintf("c%d %s", i, typ))
		sel = append(sel, map[string]string{"int": "i", "smallint": "(i % 100)::smallint", "varchar(15)": "'v' || i", "bigint": "i * 1000"}[typ])
	}
	setup := fmt.Sprintf(`CREATE TABLE sub (s_id int PRIMARY KEY, %s); INSERT INTO sub SELECT i, %s FROM generate_series(1, 1000) i;
		CREATE TABLE big (id int PRIMARY KEY, v text); INSERT INTO big VALUES (1, repeat('x', 12 << 20))`, strings.Join(defs, ", "), strings.Join(sel, ", "))
	if _, err := c.Exec(ctx, setup).ReadAll(); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, setupSQL).ReadAll(); err != nil {
		b.Fatal(err)
	}
	if err := installAll(ctx, c); err != nil {
		b.Fatal(err)
	}
	s := &Session{c: c}
	for _, bc := range []struct{ name, table, key string }{{"34 columns", "sub", "[7]"}, {"12 MiB", "big", "[1]"}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := readWS(c.ExecParams(ctx, "SELECT $1::text, $2::text, _tandem.img($1, $2::jsonb)", [][]byte{[]byte(bc.table), []byte(bc.key)}, nil, nil, nil))
				if err != nil || len(rows) != 1 || rows[0].Op != writeset.OpUpdate {
					b.Fatalf("%v %+v", err, rows)
				}
				if err := s.setRows(ctx, &writeset.Writeset{}, rows); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCaptureNoKey: what small rows of a table without a primary key
// cost, from their capture trigger to the writeset's rows (the path whose
// trigger tests each image's size, fullRowCaptureFunction): a transaction
// that updates one row of a 12-column table (two events) and inserts one,
// reads its writeset and rolls back.
//
//	go test -run '^$' -bench CaptureNoKey ./backend/postgres
func BenchmarkCaptureNoKey(b *testing.B) {
	if _, err := FindBinDir(""); err != nil {
		b.Skip(err)
	}
	ctx := context.Background()
	m, err := StartManaged(ctx, ManagedConfig{DataDir: b.TempDir() + "/pg", Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Stop()
	c, err := pgconn.Connect(ctx, m.DSN("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	setup := `CREATE TABLE log (id int, a text, b bigint, c varchar(20), d timestamptz, e numeric, f text, g int[], h bytea, i bool, j text, k int);
		CREATE INDEX ON log (id);
		INSERT INTO log SELECT n, 'text ' || n, n * 1000, 'v' || n, '2026-11-27 12:00:00+00', n / 7.0, NULL, ARRAY[n, n + 1], '\x0102', n % 2 = 0, repeat('z', 40), n FROM generate_series(1, 1000) n`
	if _, err := c.Exec(ctx, setup).ReadAll(); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, setupSQL).ReadAll(); err != nil {
		b.Fatal(err)
	}
	if err := installAll(ctx, c); err != nil {
		b.Fatal(err)
	}
	s := &Session{c: c}
	const tx = `BEGIN; UPDATE log SET a = a || 'x' WHERE id = 7;
		INSERT INTO log VALUES (2000, 'new', 1, 'c', now(), 1.5, NULL, '{1}', '\x00', true, 'j', 3)`
	for b.Loop() {
		if _, err := c.Exec(ctx, tx).ReadAll(); err != nil {
			b.Fatal(err)
		}
		rows, err := s.captureRows(ctx)
		if err != nil || len(rows) != 3 {
			b.Fatalf("%v: %d rows", err, len(rows))
		}
		if err := s.setRows(ctx, &writeset.Writeset{}, rows); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Exec(ctx, "ROLLBACK").ReadAll(); err != nil {
			b.Fatal(err)
		}
	}
}
