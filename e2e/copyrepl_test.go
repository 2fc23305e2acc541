package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A COPY FROM STDIN outside a transaction block is a replicated
// transaction of its own: acknowledged only once the design's guarantee
// holds (on the PostgreSQL writeset engine too). (It used to commit on the node alone and
// travel with the connection's next write: a hot standby at 2-safe visible
// did not have acknowledged rows, and multi-master certified them late,
// failing an unrelated later statement with 40001.)
func TestCopyFromReplicated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	copyRows := func(t *testing.T, dsn string) {
		t.Helper()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		for _, q := range []string{"DROP TABLE IF EXISTS cp_t", "CREATE TABLE cp_t (id int PRIMARY KEY, v text)"} {
			if _, err := c.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		tag, err := c.PgConn().CopyFrom(ctx, strings.NewReader("1\tone\n2\ttwo\n3\tthree\n"), "COPY cp_t FROM STDIN")
		if err != nil || tag.RowsAffected() != 3 {
			t.Fatalf("COPY: %v, %v", tag, err)
		}
	}
	count := func(t *testing.T, dsn string) (int, error) {
		t.Helper()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return 0, err
		}
		defer c.Close(ctx)
		var n int
		err = c.QueryRow(ctx, "SELECT count(*) FROM cp_t").Scan(&n)
		return n, err
	}

	for _, backend := range []string{"sqlite", "postgres"} {
		// At 2-safe visible the standby shows a commit before the
		// primary acknowledges it (postgres: the writeset engine).
		t.Run("hot-standby-"+backend, func(t *testing.T) {
			h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			waitStandbyCount(t, h.dsn(h.nodes["n2"]), "SELECT 1", 1)
			copyRows(t, h.dsn(h.nodes["n1"]))
			if n, err := count(t, h.dsn(h.nodes["n2"])); err != nil || n != 3 {
				t.Fatalf("the standby right after the COPY's acknowledgement: %d rows (%v), want 3", n, err)
			}
		})
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run("multi-master-"+backend, func(t *testing.T) { copyMultiMaster(t, backend, copyRows, count) })
	}
}

// copyMultiMaster: a COPY on one node of a multi-master cluster reaches
// the others.
func copyMultiMaster(t *testing.T, backend string, copyRows func(*testing.T, string), count func(*testing.T, string) (int, error)) {
	s := upMultiMaster(t, backend, 3, "")
	copyRows(t, s.dsn(s.nodes[s.ids[0]]))
	for _, id := range s.ids[1:] {
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := count(t, s.dsn(s.nodes[id]))
			if err == nil && n == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d rows (%v) 10 s after the COPY on %s was acknowledged, want 3", id, n, err, s.ids[0])
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
