package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestStandbyTransactionBlocks: on a standby, BEGIN opens a read-only
// block, as on PostgreSQL's hot standby, so drivers that always open one
// (psycopg by default, pgjdbc with autocommit off) can read there; a write
// inside it gets 25006. Both back ends.
func TestStandbyTransactionBlocks(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			createTestTable(t, h.dsn(h.nodes["n1"]))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := connect(t, h.dsn(h.nodes["n1"]))
			if _, err := p.Exec(ctx, "INSERT INTO t VALUES (1, 'a')"); err != nil {
				t.Fatal(err)
			}
			waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM t", 1)
			s := connect(t, h.dsn(h.nodes["n2"]))
			if _, err := s.Exec(ctx, "BEGIN"); err != nil {
				t.Fatalf("BEGIN on a standby: %v", err)
			}
			var n int
			if err := s.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
				t.Fatalf("a read in a standby's block: %d %v", n, err)
			}
			_, err := s.Exec(ctx, "INSERT INTO t VALUES (2, 'b')")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "25006" {
				t.Fatalf("a write in a standby's block: %v, want 25006", err)
			}
			if _, err := s.Exec(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
