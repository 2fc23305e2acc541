// Package sweep runs a matrix of cluster configurations through the same
// workload and prints the comparison of seed 000 (Wolski & Raatikka,
// figures 4-6): TM1's MQTh per configuration and mix, with ratios to a
// baseline, for tandem's standalone and hot-standby designs at every safeness
// and durability level, and for PostgreSQL's own streaming replication pair
// at the matching synchronous_commit levels.
//
// It owns the life cycle of what it measures: for each configuration it
// writes a cluster file with free 127.0.0.1 ports and starts it with
// cluster.Start (the tandem binary's node processes), or runs managed
// PostgreSQL servers itself (initdb, pg_basebackup, streaming standby); it
// loads TM1 with bench.Load, runs each mix with bench.Run, and stops and
// removes everything it started, also when the sweep is cancelled.
//
// It must not reach into node, router or replication internals: a tandem
// configuration is a cluster file, the only thing it reads from a running
// node is the public /status document (to wait for the standby), and a
// PostgreSQL configuration is a DSN plus ALTER SYSTEM.
//
// The report (Build, Report) is a pure function of the measurements, so the
// table, the ratios and the checks are unit-tested without running anything.
package sweep
