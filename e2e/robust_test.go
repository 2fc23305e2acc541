package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tandemdb/tandem/cluster"
	"golang.org/x/sys/unix"
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

// passwordAfterAuth: a session sends a PasswordMessage after
// authentication; the server refuses it (08P01) and ends that session.
func passwordAfterAuth(dsn string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return fmt.Errorf("the client's login: %w", err)
		}
		nc := c.PgConn().Conn()
		defer nc.Close()
		msg := append([]byte{'p', 0, 0, 0, 4 + 4}, "pwd\x00"...)
		if _, err := nc.Write(msg); err != nil {
			return err
		}
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, _ := io.ReadAll(nc)
		if !strings.Contains(string(got), "08P01") {
			return fmt.Errorf("a PasswordMessage after authentication got %q, want 08P01", got)
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
		terminate, password := terminateOwnBackend(c.DSN), passwordAfterAuth(c.DSN)
		n := 0
		kill := func(ctx context.Context) error { // both kinds, in turn
			n++
			if n%2 == 0 {
				return password(ctx)
			}
			return terminate(ctx)
		}
		if refused := loginsDuringSessionFailures(t, c.DSN, kill); len(refused) > 0 {
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

// openFDs counts a process's open file descriptors.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestAcceptSurvivesFDExhaustion: issue 18 item 2. A real node whose
// open-file limit is lowered to a little above what it uses gets twice that
// many idle sockets on its front door and on its replication port: accept
// fails with EMFILE, and the node neither exits nor drops the session it
// already serves; when the flood ends it serves new sessions again, and its
// replication listener still takes a standby.
func TestAcceptSurvivesFDExhaustion(t *testing.T) {
	h := writeHSOn(t, "sqlite", "1-safe", "relaxed", "")
	file, err := os.ReadFile(h.file)
	if err != nil {
		t.Fatal(err)
	}
	replAddr := regexp(`repl_listen = "([^"]+)"`).FindStringSubmatch(string(file))[1] // n1's
	h.start("n1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := h.dsn(h.nodes["n1"])
	a := connect(t, dsn)
	for _, sql := range []string{"CREATE TABLE f (id int PRIMARY KEY)", "INSERT INTO f VALUES (1)"} {
		if _, err := a.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	h.mu.Lock()
	pid := h.procs["n1"].Process.Pid
	h.mu.Unlock()
	limit := uint64(openFDs(t, pid) + 64)
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	// The node reports its limits on /status (and so in `tandem status --json`).
	var st struct {
		Files struct{ Soft, Hard uint64 } `json:"open_files_limit"`
	}
	resp, err := http.Get("http://" + h.admin["n1"] + "/status")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.Files.Soft != limit || st.Files.Hard != limit {
		t.Fatalf("/status open_files_limit %+v (%v), want soft = hard = %d", st.Files, err, limit)
	}
	if out := h.tandem("status", "--json"); !strings.Contains(out, fmt.Sprintf(`"soft": %d`, limit)) {
		t.Fatalf("tandem status --json does not report the open-file limit %d:\n%s", limit, out)
	}
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for _, addr := range []string{h.nodes["n1"], replAddr} {
		for i := uint64(0); i < 2*limit; i++ {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatalf("flood connection %d to %s: %v", i, addr, err)
			}
			flood = append(flood, c)
		}
	}
	// The node is out of descriptors (its accept fails with EMFILE).
	deadline := time.Now().Add(10 * time.Second)
	for openFDs(t, pid) < int(limit) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := openFDs(t, pid); n < int(limit) {
		t.Fatalf("the node holds %d descriptors, want its limit %d", n, limit)
	}
	if !alive(pid) {
		t.Fatal("the node exited when it ran out of descriptors")
	}
	// The session opened before the flood still works.
	if _, err := a.Exec(ctx, "INSERT INTO f VALUES (2)"); err != nil {
		t.Fatalf("established session during the flood: %v", err)
	}
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	// New sessions are served again once the flood ends.
	var last error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !alive(pid) {
			b, _ := os.ReadFile(filepath.Join(h.dir, "n1.log"))
			t.Fatalf("the node exited:\n%s", b)
		}
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		c, err := pgx.Connect(cctx, dsn)
		if err == nil {
			var n int
			err = c.QueryRow(cctx, "SELECT count(*) FROM f").Scan(&n)
			c.Close(cctx)
			if err == nil && n != 2 {
				err = fmt.Errorf("%d rows, want 2", n)
			}
		}
		ccancel()
		if last = err; err == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("no new session after the flood: %v", last)
	}
	if _, err := a.Exec(ctx, "INSERT INTO f VALUES (3)"); err != nil {
		t.Fatalf("established session after the flood: %v", err)
	}
	// The replication listener still accepts: a standby attaches and
	// catches up.
	h.start("n2")
	var got int
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && got != 3; time.Sleep(100 * time.Millisecond) {
		got = len(idsIn(h.dsn(h.nodes["n2"]), "f"))
	}
	if got != 3 {
		t.Fatalf("the standby has %d of 3 rows after the flood", got)
	}
}

// idsIn returns the ids in table on a node (empty on any error).
func idsIn(dsn, table string) map[int64]bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := map[int64]bool{}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return out
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SELECT id FROM "+table)
	if err != nil {
		return out
	}
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			out[id] = true
		}
	}
	return out
}

// runaway never ends on its own.
const runaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"

// TestStatementStopsWithItsClient: issue 18 item 12 on SQLite.
// statement_timeout (from the cluster file, and SET) ends a runaway query
// with 57014; a CancelRequest ends it; a client that hangs up stops it, so
// its session ends (the node's session count falls back).
func TestStatementStopsWithItsClient(t *testing.T) {
	c := startCluster(t, clusterSpec{backend: "sqlite", extra: "[limits]\nstatement_timeout = \"1500ms\"\n"})
	file, err := os.ReadFile(c.File)
	if err != nil {
		t.Fatal(err)
	}
	admin := regexp(`metrics = "([^"]+)"`).FindStringSubmatch(string(file))[1]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := connect(t, c.DSN)
	show := func(want string) {
		t.Helper()
		var got string
		if err := a.QueryRow(ctx, "SHOW statement_timeout").Scan(&got); err != nil || got != want {
			t.Fatalf("SHOW statement_timeout = %q (%v), want %q", got, err, want)
		}
	}
	timesOut := func() {
		t.Helper()
		_, err := a.Exec(ctx, runaway)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" || !strings.Contains(pe.Message, "statement timeout") {
			t.Fatalf("runaway query: %v, want 57014 canceling statement due to statement timeout", err)
		}
	}
	show("1500ms")
	timesOut() // the cluster file's default
	if _, err := a.Exec(ctx, "SET statement_timeout = 200"); err != nil {
		t.Fatal(err)
	}
	show("200ms")
	timesOut()
	if _, err := a.Exec(ctx, "SET statement_timeout = 'soon'"); sqlState(err) != "22023" {
		t.Fatalf("SET statement_timeout = 'soon': %v, want 22023", err)
	}
	if _, err := a.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	show("0")

	// A CancelRequest stops it; the session goes on.
	done := make(chan error, 1)
	go func() { _, err := a.Exec(ctx, runaway); done <- err }()
	var qerr error
cancelLoop:
	for {
		select {
		case qerr = <-done:
			break cancelLoop
		case <-time.After(200 * time.Millisecond):
			// Again until it lands (the first may precede the statement).
			if err := a.PgConn().CancelRequest(ctx); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("the runaway query was not cancelled")
		}
	}
	if sqlState(qerr) != "57014" {
		t.Fatalf("cancelled runaway query: %v, want 57014", qerr)
	}
	if err := a.QueryRow(ctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Fatalf("the session after a cancel: %v", err)
	}

	// A client that hangs up mid-statement stops it.
	sessions := func() int64 {
		t.Helper()
		var st struct{ Sessions int64 }
		resp, err := http.Get("http://" + admin + "/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.Sessions
	}
	b := connect(t, c.DSN)
	if _, err := b.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	if n := sessions(); n != 2 {
		t.Fatalf("%d sessions, want 2", n)
	}
	nc := b.PgConn().Conn()
	q := append([]byte{'Q', 0, 0, 0, byte(4 + len(runaway) + 1)}, runaway...)
	if _, err := nc.Write(append(q, 0)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let it run
	nc.Close()
	var n int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n = sessions(); n == 1 {
			break
		}
	}
	if n != 1 {
		t.Fatalf("%d sessions 10 s after the client hung up, want 1: its statement still runs", n)
	}
}

// TestPostgresStatementStopsWithItsClient: issue 18 item 12 on PostgreSQL
// back ends. A client that hangs up mid-statement without Terminate gets
// its statement cancelled on the server, which would otherwise run it to
// the end (it notices a closed socket only when it writes): on the
// standalone relay (a cancel when the client is gone) and on the
// hot-standby executor (the statement watch sees the hang-up).
func TestPostgresStatementStopsWithItsClient(t *testing.T) {
	t.Run("standalone-relay", func(t *testing.T) {
		c := startCluster(t, clusterSpec{backend: "postgres"})
		hangUpStopsSleeper(t, c.DSN)
	})
	t.Run("hot-standby-executor", func(t *testing.T) {
		h := writeHSOn(t, "postgres", "1-safe", "relaxed", "")
		h.start("n1")
		hangUpStopsSleeper(t, h.dsn(h.nodes["n1"]))
	})
}

func hangUpStopsSleeper(t *testing.T, dsn string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := connect(t, dsn)
	const sleeper = "SELECT pg_sleep(60) -- hang-up test"
	active := func() int {
		t.Helper()
		var n int
		if err := a.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query = $1 AND state = 'active'", sleeper).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	b := connect(t, dsn)
	nc := b.PgConn().Conn()
	q := append([]byte{'Q', 0, 0, 0, byte(4 + len(sleeper) + 1)}, sleeper...)
	if _, err := nc.Write(append(q, 0)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); active() == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sleeper never started")
		}
	}
	nc.Close()
	n := 1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n = active(); n == 0 {
			break
		}
	}
	if n != 0 {
		t.Fatal("the server still runs the statement 10 s after its client hung up")
	}
}

// TestStartupConnectionsLimited: issue 18 item 2 (unauthenticated
// sockets). Connections still in startup count against
// limits.max_startup_connections (past it: FATAL 53300 at once) and are
// closed after limits.startup_timeout; the session opened before the flood
// goes on, and logins work again once the flood is gone.
func TestStartupConnectionsLimited(t *testing.T) {
	c := startCluster(t, clusterSpec{backend: "sqlite", extra: "[limits]\nmax_startup_connections = 10\nstartup_timeout = \"1s\"\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := connect(t, c.DSN)
	addr := hostPort(c.DSN)
	var flood []net.Conn
	defer func() {
		for _, nc := range flood {
			nc.Close()
		}
	}()
	for i := 0; i < 20; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, nc)
	}
	// At most 10 are held in startup; the others are refused at once with
	// FATAL 53300.
	type answer struct {
		got []byte
		err error
	}
	answers := make([]answer, len(flood))
	var wg sync.WaitGroup
	for i, nc := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			answers[i].got, answers[i].err = io.ReadAll(nc)
		}()
	}
	wg.Wait()
	var idle []net.Conn
	refused := 0
	for i, nc := range flood {
		got, err := answers[i].got, answers[i].err
		switch {
		case strings.Contains(string(got), "53300") && strings.Contains(string(got), "max_startup_connections 10"):
			refused++
		case errors.Is(err, os.ErrDeadlineExceeded) && len(got) == 0:
			idle = append(idle, nc)
		default:
			t.Fatalf("a connection in the flood got %q, %v", got, err)
		}
	}
	if len(idle) > 10 || refused < 5 {
		t.Fatalf("%d connections held in startup and %d refused, want at most 10 held", len(idle), refused)
	}
	if err := a.QueryRow(ctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Fatalf("the session opened before the flood: %v", err)
	}
	// startup_timeout closes the idle ones.
	for _, nc := range idle {
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(nc); err != nil {
			t.Fatalf("an idle connection in startup was not closed by startup_timeout: %v", err)
		}
	}
	b, err := pgx.Connect(ctx, c.DSN)
	if err != nil {
		t.Fatalf("login after the idle connections timed out: %v", err)
	}
	b.Close(ctx)
}

// TestUpRunDirFlag: `tandem up --run-dir D` runs the whole cluster in D,
// not in the file's run_dir: the processes it starts get D too (they
// used to read the file's run_dir, issue certificates of their own there
// and fail the TLS check of the ones D held), and `tandem status
// --run-dir D` finds them.
func TestUpRunDirFlag(t *testing.T) {
	h := writeHSOn(t, "sqlite", "2-safe-visible", "relaxed", "")
	fileRun := filepath.Join(h.dir, "run") // the file's run_dir
	flagRun := filepath.Join(h.dir, "elsewhere")
	c := upFileArgs(t, h.dir, h.file, flagRun, "--run-dir", flagRun)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := connect(t, c.DSN)
	for _, sql := range []string{"CREATE TABLE p (id int PRIMARY KEY)", "INSERT INTO p VALUES (1)"} {
		if _, err := a.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, f := range []string{"certs/ca.crt", "logs/n1.log", "logs/n2.log", "n1", "n2"} {
		if _, err := os.Stat(filepath.Join(flagRun, f)); err != nil {
			t.Errorf("--run-dir %s: %v", flagRun, err)
		}
	}
	if _, err := os.Stat(fileRun); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the file's run_dir %s was used (stat: %v)", fileRun, err)
	}
	out, err := exec.Command(tandemBin, "status", "-c", h.file, "--run-dir", flagRun).CombinedOutput()
	if err != nil {
		t.Fatalf("tandem status --run-dir: %v\n%s", err, out)
	}
	for _, id := range []string{"n1", "n2"} {
		if !regexp(id + `\s+node\s+\S+\s+\S+\s+\S+\s+up`).MatchString(string(out)) {
			t.Fatalf("tandem status --run-dir does not report %s up:\n%s", id, out)
		}
	}
}

// TestDown: `tandem down -c FILE` stops the `tandem up` of that file (in
// the run directory --run-dir names): the up process exits, every node's
// port closes and the run directory's record goes; a second down says no
// cluster runs there (exit status non-zero), and a record left by an up
// that was SIGKILLed is removed.
func TestDown(t *testing.T) {
	h := writeHSOn(t, "sqlite", "2-safe-visible", "relaxed", "")
	run := filepath.Join(h.dir, "run")
	c := upFileArgs(t, h.dir, h.file, run, "--run-dir", run)
	procs, err := cluster.ReadState(run)
	if err != nil || len(procs) == 0 {
		t.Fatalf("cluster.json: %v %v", procs, err)
	}
	out, err := exec.Command(tandemBin, "down", "-c", h.file, "--run-dir", run).CombinedOutput()
	if err != nil {
		t.Fatalf("tandem down: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "stopped") {
		t.Errorf("tandem down said %q", out)
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("tandem up still runs after tandem down returned")
	}
	for _, p := range procs {
		if conn, err := net.DialTimeout("tcp", p.Addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s (%s) still accepts connections after tandem down", p.Name, p.Addr)
		}
		if syscall.Kill(p.PID, 0) == nil {
			t.Errorf("%s (pid %d) still runs after tandem down", p.Name, p.PID)
		}
	}
	if _, err := os.Stat(filepath.Join(run, "cluster.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cluster.json after tandem down: %v", err)
	}
	out, err = exec.Command(tandemBin, "down", "-c", h.file, "--run-dir", run).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no `tandem up` runs") {
		t.Errorf("second tandem down: %v\n%s", err, out)
	}
	// A record whose up process is gone (SIGKILLed, or a reboot).
	stale := fmt.Sprintf(`{"cluster": "x", "procs": [], "up_pid": %d}`, c.cmd.Process.Pid)
	if err := os.WriteFile(filepath.Join(run, "cluster.json"), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(tandemBin, "down", "-c", h.file, "--run-dir", run).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no longer runs") {
		t.Errorf("tandem down of a stale record: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(run, "cluster.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale cluster.json after tandem down: %v", err)
	}
}
