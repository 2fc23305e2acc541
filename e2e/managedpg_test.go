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
