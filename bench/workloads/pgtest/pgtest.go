// Package pgtest is the test harness the workload packages share: one
// managed PostgreSQL server for a whole test binary, a fresh database per
// test. It owns nothing else and is imported by tests only.
package pgtest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/backend/postgres"
)

// Server is a package's PostgreSQL, started by Run.
type Server struct {
	pg     *postgres.Managed
	skip   string
	prefix string
	n      atomic.Int64
}

// Run starts the server (fsync off: tests, not benchmarks), runs the
// package's tests and stops it. Without PostgreSQL the tests that need it
// skip, saying why. prefix names the databases (prefix_1, prefix_2, ...).
func (s *Server) Run(m *testing.M, prefix string) int {
	s.prefix = prefix
	if _, err := postgres.FindBinDir(""); err != nil {
		s.skip = err.Error()
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "tandem-"+prefix+"-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s.pg, err = postgres.StartManaged(context.Background(), postgres.ManagedConfig{
		DataDir:  filepath.Join(dir, "pg"),
		Settings: map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"},
		Logger:   quiet,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start postgres:", err)
		return 1
	}
	defer s.pg.Stop()
	return m.Run()
}

// NewDB creates a fresh database (CREATE DATABASE name options...) and
// returns its DSN; without PostgreSQL the test or benchmark skips.
func (s *Server) NewDB(t testing.TB, options ...string) string {
	t.Helper()
	if s.pg == nil {
		t.Skip("no PostgreSQL: " + s.skip)
	}
	name := fmt.Sprintf("%s_%d", s.prefix, s.n.Add(1))
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, strings.Join(append([]string{"CREATE DATABASE", name}, options...), " ")); err != nil {
		t.Fatal(err)
	}
	return s.pg.DSN(name)
}

// Connect opens a connection closed when the test ends.
func Connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}
