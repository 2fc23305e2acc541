package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// failedCommit runs PostgreSQL's failed-transaction sequence on c: an
// error inside BEGIN ... COMMIT makes every later statement fail with 25P02
// and the COMMIT roll the block back, answering ROLLBACK. It also checks
// that ROLLBACK TO SAVEPOINT clears the failed state. The table ft must
// exist and be empty.
func failedCommit(t *testing.T, ctx context.Context, c *pgx.Conn) {
	t.Helper()
	mustExec := func(sql string, args ...any) pgconn.CommandTag {
		t.Helper()
		tag, err := c.Exec(ctx, sql, args...)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return tag
	}
	wantCode := func(err error, code, what string) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != code {
			t.Fatalf("%s: got %v, want SQLSTATE %s", what, err, code)
		}
	}
	mustExec("BEGIN")
	mustExec("INSERT INTO ft VALUES (1)")
	_, err := c.Exec(ctx, "SELECT * FROM nosuch")
	wantCode(err, "42P01", "SELECT from a missing table")
	_, err = c.Exec(ctx, "INSERT INTO ft VALUES (2)")
	wantCode(err, "25P02", "INSERT after the error (simple protocol)")
	_, err = c.Exec(ctx, "INSERT INTO ft VALUES ($1)", 3)
	wantCode(err, "25P02", "INSERT after the error (extended protocol)")
	if tag := mustExec("COMMIT"); tag.String() != "ROLLBACK" {
		t.Fatalf("COMMIT of a failed transaction answered %q, want ROLLBACK", tag.String())
	}
	// The session is usable again and nothing of the block remains.
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM ft").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after the rolled-back COMMIT: %d (%v), want 0", n, err)
	}

	// The same through the extended protocol's COMMIT (pgx's Tx).
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO ft VALUES ($1)", 4); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, "INSERT INTO ft VALUES ($1)", 4) // duplicate key
	wantCode(err, "23505", "duplicate INSERT")
	if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("pgx Commit of a failed transaction: %v, want ErrTxCommitRollback", err)
	}

	// ROLLBACK TO SAVEPOINT undoes the failure; the rest commits.
	mustExec("BEGIN")
	mustExec("INSERT INTO ft VALUES (5)")
	mustExec("SAVEPOINT s1")
	_, err = c.Exec(ctx, "SELECT * FROM nosuch")
	wantCode(err, "42P01", "SELECT from a missing table")
	mustExec("ROLLBACK TO SAVEPOINT s1")
	mustExec("INSERT INTO ft VALUES (6)")
	if tag := mustExec("COMMIT"); tag.String() != "COMMIT" {
		t.Fatalf("COMMIT after ROLLBACK TO SAVEPOINT answered %q", tag.String())
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM ft").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows after the savepoint block: %d (%v), want 2 (5 and 6)", n, err)
	}
}

// TestFailedTransactionCommitRollsBack: issue 18 item 11. On every back end
// and design, COMMIT of a transaction that hit an error answers ROLLBACK and
// keeps none of its rows; in between, statements get 25P02. On the
// hot-standby pair the standby has none of the rows either.
func TestFailedTransactionCommitRollsBack(t *testing.T) {
	for _, be := range backends {
		t.Run("standalone/"+be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := connect(t, c.DSN)
			if _, err := a.Exec(ctx, "CREATE TABLE ft (id int PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			failedCommit(t, ctx, a)
		})
	}
	for _, be := range backends {
		t.Run("hot-standby/"+be, func(t *testing.T) {
			h := writeHSOn(t, be, "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			h.start("router")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := connect(t, h.dsn(h.router))
			if _, err := a.Exec(ctx, "CREATE TABLE ft (id int PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			failedCommit(t, ctx, a)
			// At 2-safe-visible the standby applied every commit when COMMIT
			// returned: it has exactly the committed rows.
			s := connect(t, h.dsn(h.nodes["n2"]))
			var got string
			if err := s.QueryRow(ctx, "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM ft").Scan(&got); err != nil || got != "5,6" {
				t.Fatalf("standby's rows: %q (%v), want 5,6", got, err)
			}
		})
	}
}

// TestRunDirOwnerOnly: issue 18 item 10. A hot-standby SQLite cluster under
// `tandem up` writes its run directory (databases with -wal/-shm,
// replication logs, role.json, logs, cluster.json) readable by its owner
// only: no file or directory grants anything to group or others. The
// process runs with umask 0 so that only tandem's explicit modes count.
func TestRunDirOwnerOnly(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	h := writeHSOn(t, "sqlite", "2-safe-visible", "relaxed", "")
	runDir := filepath.Join(h.dir, "run")
	c := upFile(t, h.dir, h.file, runDir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := connect(t, c.DSN)
	for _, sql := range []string{"CREATE TABLE p (id int PRIMARY KEY)", "INSERT INTO p VALUES (1)"} {
		if _, err := a.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	seen := map[string]bool{}
	err := filepath.WalkDir(runDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil // a file renamed or removed meanwhile
			}
			return err
		}
		rel, _ := filepath.Rel(runDir, path)
		if info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v: group or others have access", rel, info.Mode().Perm())
		}
		seen[filepath.Base(path)] = true
		if strings.HasSuffix(path, ".seg") || strings.Contains(rel, "replog"+string(filepath.Separator)) {
			seen["<replog file>"] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen what it is meant to check.
	for _, name := range []string{"tandem.db", "tandem.db-wal", "tandem.db-shm", "role.json", "cluster.json", "n1.log", "<replog file>"} {
		if !seen[name] {
			t.Errorf("%s not found under the run directory (saw %v)", name, seen)
		}
	}
}

// loginsDuringSessionFailures logs in 200 times to dsn (and runs SELECT 1)
// while, after every tenth login, kill ends one other session's connection
// (20 events in all). It returns the refused logins.
func loginsDuringSessionFailures(t *testing.T, dsn string, kill func(ctx context.Context) error) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var refused []error
	for i := 0; i < 200; i++ {
		if i%10 == 0 {
			if err := kill(ctx); err != nil {
				t.Fatalf("session failure %d: %v", i/10+1, err)
			}
		}
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			err = c.QueryRow(ctx, "SELECT 1").Scan(new(int))
			c.Close(ctx)
		}
		if err != nil {
			refused = append(refused, err)
		}
	}
	return refused
}

// terminateOwnBackend: a session runs pg_terminate_backend on its own
// server backend and must get FATAL 57P01 (that session only).
func terminateOwnBackend(dsn string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return fmt.Errorf("the killing client's login: %w", err)
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
		if sqlState(err) != "57P01" {
			return fmt.Errorf("pg_terminate_backend of its own backend: %v, want SQLSTATE 57P01", err)
		}
		return nil
	}
}

// malformedQuery: a session sends a Query without its NUL terminator; the
// node refuses it with FATAL 08P01 and closes that session.
func malformedQuery(dsn string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return fmt.Errorf("the malformed client's login: %w", err)
		}
		nc := c.PgConn().Conn()
		defer nc.Close()
		body := "SELECT 1" // no NUL
		msg := append([]byte{'Q', 0, 0, 0, byte(4 + len(body))}, body...)
		if _, err := nc.Write(msg); err != nil {
			return err
		}
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, _ := io.ReadAll(nc)
		if !strings.Contains(string(got), "08P01") {
			return fmt.Errorf("a Query without its NUL got %q, want FATAL 08P01", got)
		}
		return nil
	}
}

// TestSessionFailureIsolation: issue 18 item 1. One session's lost back-end
// connection ends that session only: the node (or router) is not marked
// down, and 200 logins made while 20 such sessions die are all served.
func TestSessionFailureIsolation(t *testing.T) {
	t.Run("standalone/postgres", func(t *testing.T) {
		c := startCluster(t, clusterSpec{backend: "postgres"})
		if refused := loginsDuringSessionFailures(t, c.DSN, terminateOwnBackend(c.DSN)); len(refused) > 0 {
			t.Fatalf("%d of 200 logins refused, first: %v", len(refused), refused[0])
		}
	})
	for _, be := range backends {
		t.Run("router-hot-standby/"+be, func(t *testing.T) {
			h := writeHSOn(t, be, "1-safe", "relaxed", "")
			h.start("n1")
			h.start("n2")
			h.start("router")
			dsn := h.dsn(h.router)
			kill := malformedQuery(dsn)
			if be == "postgres" {
				kill = terminateOwnBackend(dsn)
			}
			if refused := loginsDuringSessionFailures(t, dsn, kill); len(refused) > 0 {
				t.Fatalf("%d of 200 logins refused, first: %v", len(refused), refused[0])
			}
		})
	}
}
