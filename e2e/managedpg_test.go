package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestManagedPostgresLockedDown (issue 18 item 9): the managed PostgreSQL
// of a standalone node listens on its Unix socket only, in a 0700
// directory; a client runs as the role of its own name, without superuser,
// in the database it named; COPY ... TO PROGRAM fails with 42501 for it and
// works for a user the cluster file makes a superuser.
func TestManagedPostgresLockedDown(t *testing.T) {
	c := startCluster(t, clusterSpec{backend: "postgres",
		extra: "[[users]]\nname = \"boss\"\npassword = \"bosspw\"\nsuperuser = true\n"})
	ctx := context.Background()

	// The server: no TCP listener, socket in a 0700 directory.
	pgdata := filepath.Join(c.RunDir, "n1", "pgdata")
	pidFile, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(pidFile), "\n")
	if len(lines) < 6 {
		t.Fatalf("postmaster.pid: %q", pidFile)
	}
	port, _ := strconv.Atoi(strings.TrimSpace(lines[3]))
	if listen := strings.TrimSpace(lines[5]); listen != "" {
		t.Errorf("the managed server listens on %q; want no TCP address", listen)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if pc, err := pgconn.Connect(cctx, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", port)); err == nil {
		pc.Close(ctx)
		t.Errorf("connected to the managed server over TCP 127.0.0.1:%d", port)
	}
	cancel()
	st, err := os.Stat(pgdata)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("socket directory %s is %v; want 0700", pgdata, st.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(pgdata, ".s.PGSQL."+strconv.Itoa(port))); err != nil {
		t.Errorf("no socket in %s: %v", pgdata, err)
	}
	// Another local OS user cannot reach the socket.
	if os.Geteuid() == 0 {
		if u, err := user.Lookup("nobody"); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			cmd := exec.Command(psqlBin(t), "-X", "-h", pgdata, "-p", strconv.Itoa(port), "-U", "postgres", "-d", "postgres", "-c", "SELECT 1")
			cmd.Dir = "/"
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Errorf("user nobody reached the managed server's socket:\n%s", out)
			} else if !strings.Contains(string(out), "ermission denied") {
				t.Logf("nobody refused (not with EACCES?): %s", out)
			}
		}
	}

	// An ordinary user: its own role and database.
	conn := connect(t, c.DSN)
	var cu, db string
	var super string
	if err := conn.QueryRow(ctx, "SELECT current_user, current_database(), current_setting('is_superuser')").Scan(&cu, &db, &super); err != nil {
		t.Fatal(err)
	}
	if cu != "tandem" || db != "tandem" || super != "off" {
		t.Errorf("current_user %q, database %q, superuser %q; want tandem, tandem, off", cu, db, super)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE mine (k int PRIMARY KEY); INSERT INTO mine VALUES (1)"); err != nil {
		t.Fatalf("an ordinary user creates a table in its own database: %v", err)
	}
	_, err = conn.Exec(ctx, "COPY (SELECT 1) TO PROGRAM 'cat > /dev/null'")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("COPY TO PROGRAM as an ordinary user: want 42501, got %v", err)
	}
	// A database nobody created: PostgreSQL's answer.
	other := strings.Replace(c.DSN, "/tandem?", "/nosuch?", 1)
	cctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if oc, err := pgx.Connect(cctx, other); err == nil {
		oc.Close(ctx)
		t.Error("connected to a database that does not exist")
	} else if !errors.As(err, &pe) || pe.Code != "3D000" {
		t.Errorf("unknown database: want 3D000, got %v", err)
	}

	// A user the cluster file makes a superuser.
	boss := strings.Replace(strings.Replace(c.DSN, "tandem:secret@", "boss:bosspw@", 1), "/tandem?", "/boss?", 1)
	bc := connect(t, boss)
	if err := bc.QueryRow(ctx, "SELECT current_user, current_setting('is_superuser')").Scan(&cu, &super); err != nil {
		t.Fatal(err)
	}
	if cu != "boss" || super != "on" {
		t.Errorf("superuser = true: current_user %q superuser %q", cu, super)
	}
	if _, err := bc.Exec(ctx, "COPY (SELECT 1) TO PROGRAM 'cat > /dev/null'"); err != nil {
		t.Errorf("COPY TO PROGRAM as a superuser: %v", err)
	}
}

// TestManagedPostgresRolesPair (issue 18 item 9): on the hot-standby pair
// of managed PostgreSQL servers a session runs as its client's role, not
// as a superuser, through the router; COPY ... TO PROGRAM fails with 42501
// for it and works for a superuser = true user; the tables a user creates
// stay writable by it on the new primary after a switchover (objects
// belong to one owner role on both nodes).
func TestManagedPostgresRolesPair(t *testing.T) {
	h := writeHSOn(t, "postgres", "2-safe-received", "relaxed", "")
	f, err := os.OpenFile(h.file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, "[[users]]\nname = \"boss\"\npassword = \"bosspw\"\nsuperuser = true\n")
	f.Close()
	c := upFile(t, h.dir, h.file, filepath.Join(h.dir, "run"))
	ctx := context.Background()
	conn := connect(t, c.DSN)
	var cu, super string
	if err := conn.QueryRow(ctx, "SELECT current_user, current_setting('is_superuser')").Scan(&cu, &super); err != nil {
		t.Fatal(err)
	}
	if cu != "tandem" || super != "off" {
		t.Errorf("through the router: current_user %q superuser %q; want tandem, off", cu, super)
	}
	if ps := conn.PgConn().ParameterStatus("is_superuser"); ps != "off" {
		t.Errorf("ParameterStatus is_superuser = %q at login; want off", ps)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE items (k serial PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO items (v) VALUES ('a'), ('b')"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "COPY (SELECT 1) TO PROGRAM 'cat > /dev/null'")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("COPY TO PROGRAM as an ordinary user on the pair: want 42501, got %v", err)
	}
	// The standby has the rows (applied as the owner role, not a superuser).
	std := strings.Replace(c.DSN, hostPort(c.DSN), h.nodes["n2"], 1)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := countRows(ctx, std, "items")
		if err == nil && n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("standby: %d rows, %v", n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	conn.Close(ctx)
	h.tandem("switchover")
	deadline = time.Now().Add(20 * time.Second)
	for {
		nc, err := pgx.Connect(ctx, c.DSN)
		if err == nil {
			_, err = nc.Exec(ctx, "INSERT INTO items (v) VALUES ('c')")
			if err == nil {
				_, err = nc.Exec(ctx, "ALTER TABLE items ADD COLUMN w int")
			}
			nc.Close(ctx)
		}
		if err == nil {
			break
		}
		if errors.As(err, &pe) && pe.Code == "42501" {
			t.Fatalf("the new primary refuses the table's creator: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("write after switchover: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	boss := strings.Replace(c.DSN, "tandem:secret@", "boss:bosspw@", 1)
	bc := connect(t, boss)
	if _, err := bc.Exec(ctx, "COPY (SELECT 1) TO PROGRAM 'cat > /dev/null'"); err != nil {
		t.Errorf("COPY TO PROGRAM as a superuser on the pair: %v", err)
	}
	// DDL only a superuser may run replicates: the standby (n1 since the
	// switchover) applies CREATE EXTENSION as its bootstrap superuser.
	if _, err := bc.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pgcrypto"); err != nil {
		t.Fatalf("CREATE EXTENSION as a superuser on the pair: %v", err)
	}
	if _, err := bc.Exec(ctx, "INSERT INTO items (v) VALUES (encode(digest('x', 'sha256'), 'hex'))"); err != nil {
		t.Fatalf("using the extension: %v", err)
	}
	std = strings.Replace(c.DSN, hostPort(c.DSN), h.nodes["n1"], 1)
	deadline = time.Now().Add(20 * time.Second)
	for {
		n, err := countRows(ctx, std, "items WHERE v = encode(digest('x', 'sha256'), 'hex')")
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			var st struct {
				Repl struct {
					ApplyFailed any `json:"apply_failed"`
				} `json:"replication"`
			}
			getStatus(t, h.admin["n1"], &st)
			t.Fatalf("the standby does not have the extension's row 20 s later (%d, %v); apply failure: %v", n, err, st.Repl.ApplyFailed)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// One replicated database: a session naming another gets 3D000.
	other := strings.Replace(c.DSN, "/tandem?", "/postgres?", 1)
	if oc, err := pgx.Connect(ctx, other); err == nil {
		oc.Close(ctx)
		t.Errorf("a session naming database postgres on the pair was let in")
	} else if !errors.As(err, &pe) || pe.Code != "3D000" {
		t.Errorf("a session naming database postgres on the pair: %v; want 3D000", err)
	}
	var db string
	if err := bc.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != "tandem" {
		t.Errorf("current_database() = %q, %v; want tandem (the database the client named)", db, err)
	}
}

func countRows(ctx context.Context, dsn, table string) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, dsn)
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	var n int
	err = c.QueryRow(cctx, "SELECT count(*) FROM "+table).Scan(&n)
	return n, err
}
