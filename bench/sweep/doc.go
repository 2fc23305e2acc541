// Package sweep runs a matrix of cluster configurations through the same
// workload and prints the comparison of seed 000 (Wolski & Raatikka,
// figures 4-6): TM1's MQTh per configuration and mix, with ratios to a
// baseline, for tandem's standalone and hot-standby designs at every safeness
// and durability level, and for PostgreSQL's own streaming replication pair
// at the matching synchronous_commit levels, with clients connected
// directly (pg-pair-*) and through HAProxy (pg-pair-haproxy-*), the stack
// users assemble instead of tandem's physical pair (hs-pgphys-*: clients
// on the primary node, its relay beside the server; hs-pgphys-router-*:
// clients through tandem's router, which logs in to the servers itself,
// router.direct, with TLS on that hop, or in clear text as HAProxy's
// hop is, hs-pgphys-router-cleartext-*; hs-pgphys-router-auto-*: with TLS
// and automatic failover, a witness and the primary's lease, as the
// examples run; sm-pgphys-router-auto-*: the same pair as single-master,
// each session's reads on the node the least-connected policy gives it,
// the standby included, at the router's read consistency).
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
// pgpool-II (the seed001 suite's pg-pair-pgpool-* rows) runs the same way
// (pgpool -n, its own process group, Pdeathsig SIGINT: its fast shutdown)
// with pgpool.conf, pool_hba.conf, pool_passwd, pcp.conf, pgpool.log, its
// pid file, pgpool_status and its sockets in the setup's directory, as
// seed 001 ran it (listing A.4): streaming_replication mode, load
// balancing on at equal weights, connection cache on (num_init_children
// 110, max_pool 10, child_life_time and connection_life_time 30 s, reset
// ABORT; DISCARD ALL), no periodic health or delay check and no automatic
// failover (DISALLOW_TO_FAILOVER). Two choices differ from seed 001's
// pgpool 3.2.7: reads are balanced per statement
// (statement_level_load_balance), not per session, so the benchmark's
// few long sessions do not put a random binomial share of the reads on
// each server (pgx prepares its statements, so a prepared SELECT stays on
// the server it was parsed on); and clients authenticate: pgpool listens
// on 127.0.0.1 and its Unix socket only, pool_hba.conf asks every client
// for SCRAM-SHA-256 against pool_passwd, which holds a random password
// the sweep also sets on the pair's postgres role (the pair itself trusts
// 127.0.0.1, as for every pg-* row; pgpool would pass the same password
// on were the servers to ask for it), and PCP listens on its Unix socket
// only with no user in pcp.conf. pg-pair-pgpool-nolb-remote_write is the
// same pgpool with the standby's backend_weight 0 (a reload switches it),
// seed 001's pass-through row. The sweep records per run the SELECTs
// pgpool sent to each server (select_cnt of SHOW pool_nodes,
// Measurement.Selects).
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
// standby) and of its router (transactions routed per node), the only
// things it changes are what `tandem set` changes (the physical pair's
// level between its configurations) and what SQL through the cluster's
// entry does, and a PostgreSQL configuration is a DSN plus ALTER SYSTEM.
// With --interleave (Options.Interleave) a round's systems stay up and
// the configurations of one safeness level run side by side.
//
// A suite (--suite, Options.Suite) is another set of configurations run by
// the same machinery. seed001 is seed 001's table (Silvestrini, chapter 4,
// tables 5.1-5.4): per system, n1 (one node), n1+(n2) (a synchronised
// second node, every client on n1) and n1+n2+<balancer>; for tandem the
// pair is a single-master cluster with no router (n1+(n2)) or behind the
// router with each of its balancing policies, for PostgreSQL the
// streaming pair direct, behind HAProxy, and behind pgpool-II balancing
// reads (n1+n2+pgpool-II) or not (n1+(n2)+pgpool-II). Its tables give each
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
