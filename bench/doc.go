// Package bench owns workload driving and result reporting for tandem: it
// creates and populates a workload's tables (Load), drives a closed-loop
// multi-client run against any PostgreSQL-wire endpoint (Run), keeps the
// statistics (outcome counts, HdrHistogram latencies, a per-second timeline),
// and writes the results (summary table, result.json, timeline.csv and an
// offline HTML report with inline SVG charts) and comparisons of runs.
//
// It talks to its target only through the PostgreSQL wire protocol (pgx), so
// the same run can measure a plain PostgreSQL server or a tandem cluster of
// any design. It must not know about cluster internals (routers, nodes,
// replication log, designs): a tandem cluster is just a DSN here.
//
// Workloads plug in through the Workload and Client interfaces and register
// themselves with Register (see bench/workloads/tm1); the driver, statistics
// and reports never name a workload's tables or transactions.
package bench
