package sqlpg

import sqlite3 "github.com/mattn/go-sqlite3"

// The catalog: pg_catalog and information_schema answered from SQLite's
// schema and tandem's metadata tables (schema.go).
//
// Contract with the translator (translate*.go) and backend/sqlite:
//   - CatalogRelation maps a relation the client named (schema may be "" for
//     an unqualified name) to the SQLite object that answers it, usually a
//     TEMP view the catalog installs on every connection.
//   - InstallCatalog runs once on every new SQLite connection (after
//     MetadataDDL exists) and creates those views.
//   - RegisterCatalogFunctions registers the catalog's functions
//     (format_type, pg_get_indexdef, pg_table_is_visible, ...) on a
//     connection; backend/sqlite calls it from its connect hook.

// CatalogRelation reports the SQLite name answering schema.name, if the
// catalog provides it.
func CatalogRelation(schema, name string) (string, bool) {
	return "", false
}

// InstallCatalog creates the catalog's views on one connection; exec runs
// one SQL script on it.
func InstallCatalog(exec func(sql string) error) error {
	return nil
}

// RegisterCatalogFunctions registers the catalog's SQL functions.
func RegisterCatalogFunctions(c *sqlite3.SQLiteConn) error {
	return nil
}
