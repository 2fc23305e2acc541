// Package sweep runs a matrix of cluster configurations through the same
// workload and prints the comparison of seed 000 (Wolski & Raatikka,
// figures 4-6): TM1's MQTh per configuration and mix, with ratios to a
// baseline, for tandem's standalone and hot-standby designs at every safeness
// and durability level, and for PostgreSQL's own streaming replication pair
// at the matching synchronous_commit levels, with clients connected
// directly (pg-pair-*) and through HAProxy (pg-pair-haproxy-*), the stack
// users assemble instead of tandem's physical pair (hs-pgphys-*).
//
// HAProxy runs as a child of the sweep (haproxy -db, its own process
// group, Pdeathsig) with haproxy.cfg, haproxy.log and a read-only stats
// socket in the setup's directory, configured as Patroni's example
// haproxy.cfg: mode tcp, one listen section whose servers are both nodes,
// timeout client/server 30m, connect 4s, an HTTP check (OPTIONS /primary,
// expect 200; inter 3s fall 3 rise 2, on-marked-down shutdown-sessions).
// Without Patroni the check is answered by a small endpoint per server in
// the sweep process that does what Patroni's REST API does for /primary:
// 200 when SELECT pg_is_in_recovery() is false on a kept connection, 503
// otherwise (HAProxy's own pgsql-check only sees that a server accepts
// connections, so it would send clients to the standby too). The sweep
// waits until HAProxy marks the primary UP and the standby DOWN before it
// loads, and records per run how many connections HAProxy sent to each
// server (Measurement.Proxied).
//
// It owns the life cycle of what it measures: for each configuration it
// writes a cluster file with free 127.0.0.1 ports and starts it with
// cluster.Start (the tandem binary's node processes), or runs managed
// PostgreSQL servers itself (initdb, pg_basebackup, streaming standby); it
// loads TM1 with bench.Load, runs each mix with bench.Run, and stops and
// removes everything it started, also when the sweep is cancelled.
//
// It must not reach into node, router or replication internals: a tandem
// configuration is a cluster file, the only things it reads from a running
// cluster are the public /status documents of its nodes (to wait for the
// standby) and of its router (transactions routed per node), and a
// PostgreSQL configuration is a DSN plus ALTER SYSTEM.
//
// A suite (--suite, Options.Suite) is another set of configurations run by
// the same machinery. seed001 is seed 001's table (Silvestrini, chapter 4,
// tables 5.1-5.4): per system, n1 (one node), n1+(n2) (a synchronised
// second node, every client on n1) and n1+n2+<balancer>; for tandem the
// pair is a single-master cluster with no router (n1+(n2)) or behind the
// router with each of its balancing policies, for PostgreSQL the
// streaming pair direct or behind HAProxy. Its tables give each
// configuration's gain or overhead against the best case and its
// system's n1 (GainOverhead), and seed 001's matrices; where the router
// balanced, how many transactions it sent to each node (its public
// /status, read before and after each run as HAProxy's statistics are).
// Configurations are workload-independent: --workload runs them on TM1,
// TPC-C or Epinions.
//
// The report (Build, Report) is a pure function of the measurements, so the
// table, the ratios and the checks are unit-tested without running anything.
package sweep
