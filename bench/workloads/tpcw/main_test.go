package tpcw_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench/workloads/pgtest"
)

// One PostgreSQL server for the whole package; each test gets its own database.
var pg pgtest.Server

func TestMain(m *testing.M) { os.Exit(pg.Run(m, "tpcw")) }

func newDB(t *testing.T) string { return pg.NewDB(t) }

func connect(t *testing.T, dsn string) *pgx.Conn { return pgtest.Connect(t, dsn) }
