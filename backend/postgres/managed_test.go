package postgres

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startTestServer starts a managed server (fsync off) that stops with the
// test, and a pgx connection to its postgres database; it skips the test
// where PostgreSQL is not installed.
func startTestServer(t *testing.T) (*Managed, *pgx.Conn) {
	t.Helper()
	if _, err := FindBinDir(""); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	m, err := StartManaged(ctx, ManagedConfig{DataDir: t.TempDir() + "/pg", Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	c, err := pgx.Connect(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return m, c
}

func TestManagedStartQueryStop(t *testing.T) {
	ctx := context.Background()
	m, c := startTestServer(t)
	var v string
	if err := c.QueryRow(ctx, "show fsync").Scan(&v); err != nil || v != "off" {
		t.Fatalf("fsync=%q err=%v", v, err)
	}
	c.Close(ctx)
	m.Stop()
	select {
	case <-m.Done():
	default:
		t.Fatal("server still running after Stop")
	}
}

func TestServerEnv(t *testing.T) {
	got := serverEnv([]string{"PATH=/bin", "PGPASSWORD=x", "PGSSLMODE=disable", "LANG=C", "XPG=1"})
	if strings.Join(got, " ") != "PATH=/bin LANG=C XPG=1" {
		t.Fatalf("serverEnv: %v", got)
	}
}

// TestRestartAfterPostmasterKilled: a postmaster killed with its node
// leaves its backends running until they notice; a node restarted at once
// starts a new postmaster, which refuses to start while an old backend
// holds the shared memory ("pre-existing shared memory block is still in
// use"; seen in the double-SIGKILL test). The start must end such
// backends instead of failing. The test stops a backend (SIGSTOP) so that
// it cannot notice its postmaster's death: the slow orphan, made certain.
func TestRestartAfterPostmasterKilled(t *testing.T) {
	m, c := startTestServer(t)
	ctx := context.Background()
	var backend int
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(backend, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(backend, syscall.SIGKILL)
	if err := syscall.Kill(m.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-m.Done()
	time.Sleep(200 * time.Millisecond)
	if left := orphansIn(m.DataDir()); len(left) != 1 || left[0] != backend {
		t.Fatalf("orphans after the postmaster's death: %v, want the stopped backend %d", left, backend)
	}
	cfg := m.cfg
	cfg.Port = m.Port()
	m2, err := StartManaged(ctx, cfg)
	if err != nil {
		t.Fatalf("start after the postmaster was killed: %v", err)
	}
	defer m2.Stop()
	if left := orphansIn(m.DataDir()); len(left) == 0 || slices.Contains(left, backend) {
		t.Fatalf("postgres processes in the data directory after the restart: %v (the old backend %d must be gone, the new server's there)", left, backend)
	}
}
