package bench

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Dialect is the one place where a workload's SQL may differ between the
// targets it runs on. Every workload speaks PostgreSQL's SQL to all of
// them; tandem's SQLite back end translates it, and the few statements it
// answers differently (or with 0A000) are chosen here, not in copies of
// the workload.
type Dialect int

const (
	// DialectPostgres is PostgreSQL, directly or through tandem's
	// PostgreSQL back end.
	DialectPostgres Dialect = iota
	// DialectSQLite is tandem's embedded SQLite back end.
	DialectSQLite
)

func (d Dialect) String() string {
	if d == DialectSQLite {
		return "sqlite"
	}
	return "postgres"
}

// DialectOf tells which back end answers on conn, from its server_version
// (tandem's SQLite back end reports "15.0 (tandem/SQLite 3.x)").
func DialectOf(conn *pgx.Conn) Dialect {
	if strings.Contains(conn.PgConn().ParameterStatus("server_version"), "SQLite") {
		return DialectSQLite
	}
	return DialectPostgres
}

// SyncSerial returns the statement that moves the sequence of serial column
// table.column past the largest value loaded with explicit ids. Both back
// ends need it: tandem's SQLite back end keeps real sequences, as
// PostgreSQL does, and a row loaded with an explicit id does not move them.
func (d Dialect) SyncSerial(table, column string) string {
	return fmt.Sprintf("SELECT setval(pg_get_serial_sequence('%s', '%s'), coalesce(max(%s), 0) + 1, false) FROM %s",
		table, column, column, table)
}
