package tpcc_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/backend/postgres"
)

// One PostgreSQL server for the whole package; each test gets its own database.
var (
	pg      *postgres.Managed
	pgSkip  string
	dbCount atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if _, err := postgres.FindBinDir(""); err != nil {
		pgSkip = err.Error()
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "tandem-tpcc-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pg, err = postgres.StartManaged(context.Background(), postgres.ManagedConfig{
		DataDir:  filepath.Join(dir, "pg"),
		Settings: map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"},
		Logger:   quiet,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start postgres:", err)
		return 1
	}
	defer pg.Stop()
	return m.Run()
}

// newDB creates a fresh database and returns its DSN.
func newDB(t *testing.T) string {
	t.Helper()
	if pg == nil {
		t.Skip("no PostgreSQL: " + pgSkip)
	}
	name := fmt.Sprintf("tpcc_%d", dbCount.Add(1))
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return pg.DSN(name)
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}
