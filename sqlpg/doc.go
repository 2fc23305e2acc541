// Package sqlpg is PostgreSQL's SQL on the SQLite back end: it parses every
// client statement with the real PostgreSQL grammar (libpg_query through
// pganalyze/pg_query_go), translates what SQLite can do into SQLite SQL,
// answers the PostgreSQL catalog (pg_catalog, information_schema) from
// SQLite's schema plus tandem's own metadata tables, and refuses the rest
// with SQLSTATE 0A000 naming the construct.
//
// It owns the translation, the PostgreSQL type of every column (kept in
// _tandem_columns, written by the same statements that change the schema, so
// it replicates with them), sequences (_tandem_sequences) and the catalog
// views and functions. It must not touch connections' life cycle, locks,
// transactions or replication: backend/sqlite calls it and runs what it
// returns.
package sqlpg
