package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// replView is the replication section of a node's /status.
type replView struct {
	Role           string                  `json:"role"`
	Degraded       bool                    `json:"degraded"`
	Assigned       uint64                  `json:"assigned_gsn"`
	Applied        uint64                  `json:"applied_gsn"`
	Standbys       map[string][3]uint64    `json:"standbys"`
	ApplyFailed    *applyFailure           `json:"apply_failed"`
	FailedStandbys map[string]applyFailure `json:"failed_standbys"`
}

type applyFailure struct {
	GSN       uint64 `json:"gsn"`
	Statement string `json:"statement"`
	Error     string `json:"error"`
}

func replStatus(t *testing.T, admin string) replView {
	t.Helper()
	st, err := tryReplStatus(admin)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// tryReplStatus is replStatus for a node that may still be starting.
func tryReplStatus(admin string) (replView, error) {
	var st struct {
		Repl replView `json:"replication"`
	}
	resp, err := http.Get("http://" + admin + "/status")
	if err != nil {
		return replView{}, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return replView{}, fmt.Errorf("%s/status: %w", admin, err)
	}
	return st.Repl, nil
}

// TestTempTablesNotReplicated: temporary tables, their rows, DROP of a
// temporary table and session settings never reach the replication log
// (issue 19 item 5), on both back ends. Two sessions on the primary each
// create a TEMP table of the same name and write to it; the primary's GSN
// does not move for any of it, the standby goes on applying (a permanent
// table's row written afterwards arrives, applied GSN = the primary's) and
// has no such table.
func TestTempTablesNotReplicated(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := connect(t, h.dsn(h.nodes["n1"]))
			b := connect(t, h.dsn(h.nodes["n1"]))
			s := connect(t, h.dsn(h.nodes["n2"]))
			exec := func(c *pgx.Conn, sql string) {
				t.Helper()
				if _, err := c.Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			count := func(c *pgx.Conn, sql string) int64 {
				t.Helper()
				var n int64
				if err := c.QueryRow(ctx, sql).Scan(&n); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
				return n
			}
			exec(a, "CREATE TABLE perm (id int PRIMARY KEY, v text)")
			exec(a, "INSERT INTO perm VALUES (1, 'before')")
			before := replStatus(t, h.admin["n1"]).Assigned

			exec(a, "SET application_name = 'session-a'")
			exec(a, "CREATE TEMP TABLE trace (id int)")
			exec(b, "CREATE TEMPORARY TABLE trace (id int, note text)")
			exec(a, "INSERT INTO trace VALUES (1)")
			exec(b, "INSERT INTO trace VALUES (2, 'x'), (3, 'y')")
			exec(b, "UPDATE trace SET note = 'z' WHERE id = 3")
			exec(b, "CREATE INDEX trace_note ON trace (note)")
			exec(a, "BEGIN")
			exec(a, "INSERT INTO trace VALUES (4)")
			exec(a, "DELETE FROM trace WHERE id = 1")
			exec(a, "COMMIT")
			if n := count(a, "SELECT count(*) FROM trace"); n != 1 {
				t.Fatalf("session a sees %d rows in its trace, want 1", n)
			}
			if n := count(b, "SELECT count(*) FROM trace WHERE note IS NOT NULL"); n != 2 {
				t.Fatalf("session b sees %d rows in its trace, want 2", n)
			}
			exec(a, "DROP TABLE trace")
			// A temporary table's columns keep their types: serial
			// numbers, timestamptz in UTC (sorted as times), numeric(6,2).
			exec(a, "CREATE TEMP TABLE typed (id serial, at timestamptz, amount numeric(6,2))")
			exec(a, "INSERT INTO typed (at, amount) VALUES ('2024-01-02 03:04:05+02', 1.5), ('2024-01-01 23:00:00+00', 2)")
			var typed string
			if err := a.QueryRow(ctx, "SELECT string_agg(id || ' ' || amount::text || ' ' || pg_typeof(at) || ' ' || pg_typeof(amount), ', ' ORDER BY at) FROM typed").Scan(&typed); err != nil {
				t.Fatal(err)
			}
			if want := "2 2.00 timestamp with time zone numeric, 1 1.50 timestamp with time zone numeric"; typed != want {
				t.Fatalf("temporary table's typed rows: %q, want %q", typed, want)
			}
			exec(a, "DROP TABLE typed")
			if got := replStatus(t, h.admin["n1"]).Assigned; got != before {
				t.Fatalf("temporary tables moved the primary's GSN from %d to %d: they were replicated", before, got)
			}

			// A transaction writing both: only the permanent row travels.
			exec(b, "BEGIN")
			exec(b, "INSERT INTO trace VALUES (5, 'w')")
			exec(b, "INSERT INTO perm VALUES (2, 'mixed')")
			exec(b, "COMMIT")
			exec(a, "INSERT INTO perm VALUES (3, 'after')")
			want := replStatus(t, h.admin["n1"]).Assigned
			if want != before+2 {
				t.Fatalf("primary's GSN %d after two permanent writes from %d", want, before)
			}
			waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM perm", 3)
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				st := replStatus(t, h.admin["n2"])
				if st.Applied == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("standby applied GSN %d, primary %d: lag did not return to 0", st.Applied, want)
				}
			}
			if n := count(s, "SELECT count(*) FROM pg_class WHERE relname = 'trace'"); n != 0 {
				t.Fatalf("the standby has %d relations named trace", n)
			}
			if _, err := s.Exec(ctx, "SELECT * FROM trace"); err == nil {
				t.Fatal("SELECT from trace on the standby succeeded")
			}
		})
	}
}
