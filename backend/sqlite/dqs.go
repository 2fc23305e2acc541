package sqlite

/*
extern int sqlite3_db_config(void *db, int op, ...);

// SQLITE_DBCONFIG_DQS_DML (1013): no double-quoted string literals in
// SELECT, INSERT, UPDATE and DELETE.
static int tandem_no_dqs_dml(void *db) {
	return sqlite3_db_config(db, 1013, 0, (int *)0);
}
*/
import "C"

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// noDoubleQuotedStrings turns off SQLite's double-quoted string literal
// (https://sqlite.org/quirks.html#dblquote) for a connection's queries.
// With it, a double-quoted name that is no column ("Nmae", a typo, or a
// column another statement dropped) was read as the string 'Nmae': SELECT
// answered the name as a value and UPDATE t SET a = "Nmae" wrote it,
// where PostgreSQL fails with 42703. ORMs quote every identifier, so
// every typo met it. The driver does not expose sqlite3_db_config; its
// connection's handle is read from the driver's struct (the driver's
// version is pinned in go.mod, and a test checks the setting holds).
func noDoubleQuotedStrings(c *sqlite3.SQLiteConn) error {
	f := reflect.ValueOf(c).Elem().FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Pointer {
		return fmt.Errorf("sqlite: the driver's connection has no db handle to configure")
	}
	db := *(*unsafe.Pointer)(unsafe.Pointer(f.UnsafeAddr()))
	if db == nil {
		return fmt.Errorf("sqlite: the connection is closed")
	}
	if rc := C.tandem_no_dqs_dml(db); rc != 0 {
		return fmt.Errorf("sqlite: turning off double-quoted strings: code %d", int(rc))
	}
	return nil
}
