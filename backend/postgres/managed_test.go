package postgres

import (
	"context"
	"strings"
	"testing"

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
