// Package writeset defines the writeset: the rows one committed update
// transaction changed (table, primary key, operation, after-image), or one DDL
// statement, together with its place in the global order (GSN, epoch, origin
// node).
//
// The package owns:
//   - the in-memory types (Writeset, Row, Op, Value);
//   - the compact, versioned, canonical binary encoding (AppendEncode, Decode),
//     which is what the replication log stores and what nodes ship;
//   - conflict keys (ConflictKeys, RowKey, TableKey) that a certifier uses for
//     first-committer-wins;
//   - generation of the SQL that applies a writeset by primary key on a back
//     end (Statements, RowStatement), for any back end behind the small
//     Dialect interface defined here (PostgreSQL and SQLite are provided).
//
// It must not touch: back-end connections, capture triggers, the replication
// log, the network or the coordinator. It performs no I/O and has no
// dependencies outside the standard library, so every other core package can
// import it.
package writeset
