// Package physical is tandem's physical-replication engine for managed
// PostgreSQL back ends (replication.engine = "physical"): PostgreSQL's own
// streaming replication of its WAL, run by tandem.
//
// It owns the managed servers' replication life cycle: the primary's
// replication settings, role and slots; replicas seeded with pg_basebackup
// and run as hot standbys; safeness mapped to synchronous_commit and
// synchronous_standby_names (changed at run time with ALTER SYSTEM);
// promote, switchover (the old primary stopped first, then rewound with
// pg_rewind and started as a replica) and re-seeding a replica whose slot
// was lost. It reports LSNs, lag and slots for /status. On external
// servers (nodes.dsn, external.go) it does what SQL can (slots, safeness,
// repointing, pg_promote, a fence at the node's door) and leaves seeding
// and rewinding to their operator.
//
// It must not relay client sessions (the node hands them to the router's
// zero-copy relay over the server's Unix socket), capture writesets
// (replication, backend/postgres) nor decide cluster membership
// (coordinator). See DESIGN.md for why.
package physical
