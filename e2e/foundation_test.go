package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var backends = []string{"sqlite", "postgres"}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestClientsThroughTandem drives both back ends with pgx in the simple and
// extended protocols, binary results, errors, rollbacks and a cancel.
func TestClientsThroughTandem(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be})
			ctx := context.Background()
			conn := connect(t, c.DSN)

			// DDL and simple-protocol writes.
			for _, q := range []string{
				"DROP TABLE IF EXISTS acct",
				"CREATE TABLE acct (id INTEGER PRIMARY KEY, name VARCHAR(20) NOT NULL UNIQUE, balance BIGINT, rate DOUBLE PRECISION, data BYTEA)",
			} {
				if _, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if _, err := conn.Exec(ctx, "INSERT INTO acct VALUES (2, 'bob', 50, NULL, NULL)", pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, "INSERT INTO acct VALUES ($1, $2, $3, $4, $5)", 1, "alice", 100, 0.5, []byte{1, 2}); err != nil {
				t.Fatal(err)
			}

			// Extended protocol with a prepared statement, parameters and
			// binary results (pgx asks for binary int8/float8/bytea).
			if _, err := conn.Prepare(ctx, "byid", "SELECT id, name, balance, rate, data FROM acct WHERE id = $1"); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				var id, bal int64
				var name string
				var rate *float64
				var data []byte
				if err := conn.QueryRow(ctx, "byid", 1).Scan(&id, &name, &bal, &rate, &data); err != nil {
					t.Fatal(err)
				}
				if id != 1 || name != "alice" || bal != 100 || rate == nil || *rate != 0.5 || string(data) != "\x01\x02" {
					t.Fatalf("row = %d %q %d %v %x", id, name, bal, rate, data)
				}
			}
			var n int64
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM acct WHERE balance > $1", 10).Scan(&n); err != nil || n != 2 {
				t.Fatalf("count = %d, %v", n, err)
			}
			// RowsAffected through the extended protocol.
			tag, err := conn.Exec(ctx, "UPDATE acct SET balance = balance + $1 WHERE id = $2", 5, 2)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("update: %v %v", tag, err)
			}
			tag, err = conn.Exec(ctx, "UPDATE acct SET balance = 0 WHERE id = $1", 99)
			if err != nil || tag.RowsAffected() != 0 {
				t.Fatalf("0-row update: %v %v", tag, err)
			}

			// A SQL error keeps its SQLSTATE and the session stays usable.
			_, err = conn.Exec(ctx, "INSERT INTO acct VALUES ($1, $2, 1, 1, NULL)", 3, "alice")
			if sqlState(err) != "23505" {
				t.Fatalf("duplicate name: want 23505, got %v", err)
			}
			_, err = conn.Exec(ctx, "SELECT * FROM missing_table")
			if sqlState(err) != "42P01" {
				t.Fatalf("missing table: want 42P01, got %v", err)
			}
			_, err = conn.Exec(ctx, "SELEC 1")
			if sqlState(err) != "42601" {
				t.Fatalf("syntax: want 42601, got %v", err)
			}

			// A transaction with an error, then a rollback: nothing of it stays.
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO acct VALUES (10, 'carol', 1, 1, NULL)"); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO acct VALUES (11, 'carol', 1, 1, NULL)"); sqlState(err) != "23505" {
				t.Fatalf("want 23505 in tx, got %v", err)
			}
			if _, err := tx.Exec(ctx, "SELECT 1"); sqlState(err) != "25P02" {
				t.Fatalf("want 25P02 in failed tx, got %v", err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM acct WHERE id = 10").Scan(&n); err != nil || n != 0 {
				t.Fatalf("rolled-back row visible: %d %v", n, err)
			}
			// A committed transaction stays.
			if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "INSERT INTO acct VALUES (12, 'dave', 7, 1, NULL)")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := conn.QueryRow(ctx, "SELECT balance FROM acct WHERE id = 12").Scan(&n); err != nil || n != 7 {
				t.Fatalf("committed row: %d %v", n, err)
			}

			// Row limits and PortalSuspended: pgx's Query in a transaction
			// with a cursor is awkward; use pgconn's extended protocol directly.
			pc := conn.PgConn()
			rr := pc.ExecParams(ctx, "SELECT id FROM acct ORDER BY id", nil, nil, nil, nil)
			rows := 0
			for rr.NextRow() {
				rows++
			}
			if _, err := rr.Close(); err != nil || rows != 3 {
				t.Fatalf("rows=%d err=%v", rows, err)
			}

			// Cancel a long statement; the session survives.
			long := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 2000000000) SELECT count(*) FROM c"
			if be == "postgres" {
				long = "SELECT pg_sleep(60)"
			}
			errc := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := conn.Exec(ctx, long)
				errc <- err
			}()
			time.Sleep(300 * time.Millisecond)
			if err := pc.CancelRequest(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-errc:
				if sqlState(err) != "57014" {
					t.Fatalf("cancel: want 57014, got %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("canceled statement still running after 30 s")
			}
			t.Logf("cancel returned after %s", time.Since(start))
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM acct").Scan(&n); err != nil || n != 3 {
				t.Fatalf("after cancel: %d %v", n, err)
			}
		})
	}
}

// TestPsql runs psql -c and psql -f with a multi-statement script.
func TestPsql(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql not installed")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be, auth: "md5"})
			script := filepath.Join(t.TempDir(), "s.sql")
			os.WriteFile(script, []byte(`
-- a script with several statements, one line holding two
CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT);
INSERT INTO items VALUES (1, 'one'); INSERT INTO items VALUES (2, 'two; not a separator');
BEGIN;
UPDATE items SET label = 'uno' WHERE id = 1;
COMMIT;
SELECT id, label FROM items ORDER BY id;
`), 0o644)
			out, err := psql(c, "-v", "ON_ERROR_STOP=1", "-f", script)
			if err != nil {
				t.Fatalf("psql -f: %v\n%s", err, out)
			}
			if !strings.Contains(out, "uno") || !strings.Contains(out, "two; not a separator") {
				t.Fatalf("psql -f output:\n%s", out)
			}
			out, err = psql(c, "-At", "-c", "SELECT count(*) FROM items")
			if err != nil || strings.TrimSpace(out) != "2" {
				t.Fatalf("psql -c: %v %q", err, out)
			}
			out, err = psql(c, "-c", "SELECT * FROM nothing_here")
			if err == nil || !strings.Contains(out, "nothing_here") {
				t.Fatalf("psql error not reported: %v %q", err, out)
			}
			// Multi-statement Query: atomic as in PostgreSQL.
			out, _ = psql(c, "-c", "INSERT INTO items VALUES (3, 'three'); INSERT INTO items VALUES (1, 'dup')")
			out2, err := psql(c, "-At", "-c", "SELECT count(*) FROM items")
			if err != nil || strings.TrimSpace(out2) != "2" {
				t.Fatalf("a failed multi-statement query left rows: %q (%s)", out2, out)
			}
			// COPY FROM STDIN via psql \copy (text and CSV).
			data := filepath.Join(t.TempDir(), "rows.tsv")
			os.WriteFile(data, []byte("10\tten\n11\t\\N\n12\ttab\\there\n"), 0o644)
			if out, err := psql(c, "-c", `\copy items FROM '`+data+`'`); err != nil {
				t.Fatalf("\\copy text: %v %s", err, out)
			}
			csvf := filepath.Join(t.TempDir(), "rows.csv")
			os.WriteFile(csvf, []byte("id,label\n20,\"twenty, quoted\"\n21,\n"), 0o644)
			if out, err := psql(c, "-c", `\copy items FROM '`+csvf+`' WITH (FORMAT csv, HEADER true)`); err != nil {
				t.Fatalf("\\copy csv: %v %s", err, out)
			}
			out, err = psql(c, "-At", "-c", "SELECT count(*), sum(CASE WHEN label IS NULL THEN 1 ELSE 0 END) FROM items")
			if err != nil || strings.TrimSpace(out) != "7|2" {
				t.Fatalf("after copy: %q %v", out, err)
			}
			out, err = psql(c, "-At", "-c", "SELECT label FROM items WHERE id = 20")
			if err != nil || strings.TrimSpace(out) != "twenty, quoted" {
				t.Fatalf("csv value: %q %v", out, err)
			}
			// COPY TO STDOUT on both back ends (SQLite: over a SELECT).
			out, err = psql(c, "-At", "-c", `COPY (SELECT id FROM items ORDER BY id LIMIT 2) TO STDOUT`)
			if err != nil || strings.TrimSpace(out) != "1\n2" {
				t.Fatalf("COPY TO STDOUT: %q %v", out, err)
			}
			// \d shows a table's constraints as PostgreSQL names them.
			if out, err := psql(c, "-v", "ON_ERROR_STOP=1", "-c", `CREATE TABLE d_parent (id int PRIMARY KEY, code text UNIQUE);
				CREATE TABLE d_child (id int PRIMARY KEY, parent_id int REFERENCES d_parent, n int CHECK (n > 0), m int, CHECK (n < m))`); err != nil {
				t.Fatalf("psql: %v\n%s", err, out)
			}
			out, err = psql(c, "-c", `\d d_child`)
			for _, want := range []string{"Check constraints:", `"d_child_check" CHECK (n < m)`, `"d_child_n_check" CHECK (n > 0)`,
				"Foreign-key constraints:", `"d_child_parent_id_fkey" FOREIGN KEY (parent_id) REFERENCES d_parent(id)`} {
				if err != nil || !strings.Contains(out, want) {
					t.Fatalf("\\d d_child: no %q (%v):\n%s", want, err, out)
				}
			}
			out, err = psql(c, "-c", `\d d_parent`)
			for _, want := range []string{`"d_parent_pkey" PRIMARY KEY, btree (id)`, `"d_parent_code_key" UNIQUE CONSTRAINT, btree (code)`,
				"Referenced by:", `TABLE "d_child" CONSTRAINT "d_child_parent_id_fkey" FOREIGN KEY (parent_id) REFERENCES d_parent(id)`} {
				if err != nil || !strings.Contains(out, want) {
					t.Fatalf("\\d d_parent: no %q (%v):\n%s", want, err, out)
				}
			}
		})
	}
}

func psql(c *Cluster, args ...string) (string, error) {
	cmd := exec.Command("psql", append([]string{c.DSN}, args...)...)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPgbench runs pgbench -i and pgbench -T (simple and prepared) on
// PostgreSQL, and a custom pgbench script on SQLite (pgbench -i uses
// PostgreSQL-only DDL).
func TestPgbench(t *testing.T) {
	if _, err := exec.LookPath("pgbench"); err != nil {
		t.Skip("pgbench not installed")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be})
			run := func(args ...string) string {
				cmd := exec.Command("pgbench", append(args, c.DSN)...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("pgbench %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			if be == "postgres" {
				run("-i", "-s", "1", "-q")
				for _, mode := range []string{"simple", "prepared"} {
					out := run("-T", "3", "-c", "4", "-M", mode)
					if !strings.Contains(out, "number of failed transactions: 0") || !strings.Contains(out, "tps = ") {
						t.Fatalf("pgbench -M %s:\n%s", mode, out)
					}
				}
				return
			}
			if out, err := psql(c, "-c", "CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)"); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			if out, err := psql(c, "-c", "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 1000) INSERT INTO kv SELECT i, 0 FROM s"); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			script := filepath.Join(t.TempDir(), "kv.sql")
			os.WriteFile(script, []byte("\\set k random(1, 1000)\nBEGIN;\nUPDATE kv SET v = v + 1 WHERE k = :k;\nSELECT v FROM kv WHERE k = :k;\nEND;\n"), 0o644)
			for _, mode := range []string{"simple", "prepared"} {
				out := run("-n", "-T", "3", "-c", "4", "-M", mode, "-f", script)
				if !strings.Contains(out, "number of failed transactions: 0") || !strings.Contains(out, "tps = ") {
					t.Fatalf("pgbench -M %s:\n%s", mode, out)
				}
			}
			out, err := psql(c, "-At", "-c", "SELECT sum(v) > 0 FROM kv")
			if err != nil || strings.TrimSpace(out) != "1" && strings.TrimSpace(out) != "t" {
				t.Fatalf("no updates landed: %q %v", out, err)
			}
		})
	}
}

// TestDisconnectMidTransaction: a client that vanishes inside a
// transaction leaves no open transaction and no lock.
func TestDisconnectMidTransaction(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be})
			ctx := context.Background()
			a := connect(t, c.DSN)
			if _, err := a.Exec(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)"); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Exec(ctx, "INSERT INTO t VALUES (1, 0)"); err != nil {
				t.Fatal(err)
			}
			// b opens a transaction, writes, and vanishes (socket closed hard).
			b, err := pgx.Connect(ctx, c.DSN)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Exec(ctx, "BEGIN"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Exec(ctx, "UPDATE t SET v = 99 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if tc, ok := b.PgConn().Conn().(*net.TCPConn); ok {
				tc.SetLinger(0) // RST, like a crashed client
			}
			b.PgConn().Conn().Close()

			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if _, err := a.Exec(wctx, "UPDATE t SET v = v + 1 WHERE id = 1"); err != nil {
				t.Fatalf("the vanished client's lock was not released: %v", err)
			}
			var v int
			if err := a.QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil || v != 1 {
				t.Fatalf("v = %d (want 1: the vanished transaction must not commit), %v", v, err)
			}
		})
	}
}

// TestNodeKilled: SIGKILL the node under `tandem up` with a router in
// front; clients get a clear error and nothing hangs.
func TestNodeKilled(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be, router: true})
			ctx := context.Background()
			conn := connect(t, c.DSN)
			if _, err := conn.Exec(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			var node int
			for _, p := range c.Procs() {
				if p.Kind == "node" {
					node = p.PID
				}
			}
			if node == 0 {
				t.Fatal("no node process recorded")
			}
			if err := syscall.Kill(node, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			qctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			_, err := conn.Exec(qctx, "INSERT INTO t VALUES (1)")
			if err == nil {
				t.Fatal("a write succeeded on a killed node")
			}
			if qctx.Err() != nil {
				t.Fatal("the client hung after the node was killed")
			}
			t.Logf("in-session error: %v", err)
			// New sessions are refused with a clear message, quickly.
			deadline := time.Now().Add(10 * time.Second)
			var last error
			for time.Now().Before(deadline) {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				c2, err := pgx.Connect(cctx, c.DSN)
				cancel()
				if err == nil {
					c2.Close(ctx)
					t.Fatal("connected through the router to a killed node")
				}
				last = err
				if strings.Contains(err.Error(), "n1") && (sqlState(err) == "57P03") {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if sqlState(last) != "57P03" || !strings.Contains(last.Error(), "node n1") {
				t.Fatalf("want 57P03 naming node n1, got %v", last)
			}
			out, _ := exec.Command(tandemBin, "status", "-c", c.File).CombinedOutput()
			if !regexp(`n1\s+node\s+\S+\s+\S+\s+\S+\s+down`).MatchString(string(out)) {
				t.Fatalf("tandem status does not report n1 down:\n%s", out)
			}
			fmt.Println(string(out))
		})
	}
}
