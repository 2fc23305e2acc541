package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/sweep"
)

// newSweepCmd builds `tandem bench sweep` (main.go adds it under bench).
func newSweepCmd() *cobra.Command {
	var (
		o       sweep.Options
		mixes   string
		configs string
		out     string
		asJSON  bool
		backend string
		scale   int
		labFlag string
	)
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run TM1 on every standalone, hot-standby and PostgreSQL-pair configuration and compare (seed 000, figures 4-6)",
		Long: `For each configuration, sweep starts a fresh system on this machine (a tandem
cluster of node processes with free 127.0.0.1 ports, or managed PostgreSQL
servers), loads TM1 (--subscribers, dropped and reloaded), runs each mix for
--rampup plus --duration with --clients closed-loop clients, and stops and
removes everything. It prints one table: MQTh per configuration and mix, tandem
rows as ratios to standalone-strict and PostgreSQL rows to pg-standalone-on,
then two measured checks (PASS/FAIL, informational): (a) at each safeness
level, tandem's hot-standby ratio against PostgreSQL's streaming-pair ratio;
(b) hs-received-relaxed on R20W80 against standalone-strict ("high
availability for free"). The mixes of a configuration run one after the
other on the same data (TM1 is steady-state); before each window the sweep
waits until the standby has applied (or replayed) everything. The PostgreSQL
pair is set up once per round and serves its four synchronous_commit levels
in turn (ALTER SYSTEM + pg_reload_conf, with VACUUM and CHECKPOINT between);
the standalone server likewise its two. A configuration that fails (a node
that dies ends its run at once) is reported as failed, its logs are kept in
OUT/failed-logs, and the sweep goes on; the command then exits non-zero.

Configurations: ` + strings.Join(sweep.ConfigNames(), ", ") + `.
See docs/benchmarks.md for what each one is and for results on this machine.

--suite seed001 runs seed 001's configuration table instead (Silvestrini,
chapter 4): for tandem (--backend: a comma list of sqlite, postgres for the
writeset engine on PostgreSQL back ends, postgres-physical for the physical
engine) one
node alone (n1), a single-master pair with every client on n1 (n1+(n2)), and
the pair behind the router with each balancing policy (n1+n2+least-connected,
round-robin, single, random, source: reads balanced, writes to n1); for
PostgreSQL one server, its streaming pair with clients on the primary, and
HAProxy in front of the pair. It prints, per mix, each configuration's MQTh
with its gain or overhead against the best case and against its system's n1;
the HTML report adds seed 001's gain/overhead matrices. --configs then picks
among the suite's configurations. --workload tpcc or epinions (seed 001's
own workloads; --scale, and by default the workload's first mix: TPC-C's
standard, Epinions' seed001) runs the same configurations on that workload.

--lab cpu=CORES,router=CORES,client=CORES (root; cgroup CPU quotas, as
tandem bench scaleout) runs every configuration on emulated hosts: each
tandem node or PostgreSQL server (with its children) in a host of its own
(n1, n2), tandem's router, HAProxy or pgpool-II in the router's, and the
sweep's client in the client's; the tables then show the CPU each host used.
On one machine a second server otherwise only shares the same cores; on
emulated hosts it brings its own, as seed 001's second machine did. CPU
only: one disk, loopback.`,
		Example: `  tandem bench sweep
  tandem bench sweep --configs standalone-strict,hs-received-relaxed --duration 30s --out results/sweep
  tandem bench sweep --subscribers 100000 --rounds 3 --json > sweep.json
  tandem bench sweep --suite seed001 --backend sqlite,postgres --mixes r80w20 --out results/seed001
  tandem bench sweep --suite seed001 --backend postgres-physical --out results/seed001-physical
  tandem bench sweep --suite seed001 --workload epinions --scale 1 --out results/seed001-epinions
  sudo tandem bench sweep --suite seed001 --backend postgres-physical --lab cpu=0.5,router=0.5,client=0.5 --out results/seed001-lab`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger(cmd)
			var err error
			if o.Workload != "tm1" {
				w, err := bench.Lookup(o.Workload)
				if err != nil {
					return fmt.Errorf("%w: %w", sweep.ErrBadOption, err)
				}
				if !cmd.Flags().Changed("mixes") {
					mixes = w.Mixes()[0].Name // the workload's default mix
				}
				if cmd.Flags().Changed("subscribers") {
					return fmt.Errorf("%w: --subscribers is TM1's; use --scale for --workload %s (%s)", sweep.ErrBadOption, o.Workload, w.ScaleName())
				}
				o.Subscribers = scale
			} else if cmd.Flags().Changed("scale") {
				return fmt.Errorf("%w: --scale is for --workload tpcc or epinions; TM1's is --subscribers", sweep.ErrBadOption)
			}
			if o.Mixes, err = sweep.SelectWorkloadMixes(o.Workload, mixes); err != nil {
				return err
			}
			if o.Suite != "" && !slices.Contains(sweep.Seed001Workloads, o.Workload) {
				return fmt.Errorf("%w: --workload %s: suite %s runs %s", sweep.ErrBadOption, o.Workload, o.Suite, strings.Join(sweep.Seed001Workloads, ", "))
			}
			switch {
			case o.Suite != "":
				if o.Configs, err = sweep.SelectSuite(o.Suite, backend, configs); err != nil {
					return err
				}
			case cmd.Flags().Changed("backend"):
				return fmt.Errorf("%w: --backend chooses the back ends of a suite's tandem rows; use it with --suite %s (the full sweep names its configurations with --configs)",
					sweep.ErrBadOption, sweep.SuiteSeed001)
			default:
				if o.Configs, err = sweep.SelectConfigs(configs); err != nil {
					return err
				}
			}
			if o.Rounds < 1 {
				return fmt.Errorf("%w: --rounds must be >= 1 (got %d)", sweep.ErrBadOption, o.Rounds)
			}
			if out != "" {
				if err := os.MkdirAll(out, 0o755); err != nil {
					return fmt.Errorf("--out %s: %w", out, err)
				}
				o.FailedLogs = filepath.Join(out, "failed-logs")
			}
			// The driver shares the machine with the servers: the same
			// GOMAXPROCS as `tandem bench run` (one P per 8 clients).
			procs := benchProcs(0, max(o.Clients, 1), runtime.NumCPU())
			if cmd.Flags().Changed("lab") {
				spec, err := labSpec(cmd, nil, labFlag)
				if err != nil {
					return fmt.Errorf("%w: %w", sweep.ErrBadOption, err)
				}
				o.Lab = spec
				if spec != nil {
					procs = capByQuota(procs, spec.CPUClient)
				}
			}
			prev := runtime.GOMAXPROCS(procs)
			defer runtime.GOMAXPROCS(prev)
			o.Progress = cmd.ErrOrStderr()
			o.TandemVersion = version
			// Children and the driver log only warnings: the progress lines
			// say what happens.
			if !cmd.Flags().Changed("log-level") {
				o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			} else {
				o.Logger = log
			}
			size := fmt.Sprintf("P=%d", o.Subscribers)
			if o.Workload != "tm1" {
				size = fmt.Sprintf("%s scale %d", o.Workload, o.Subscribers)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "tandem bench sweep: %d configuration(s) x %d mix(es) x %d round(s), %s, %d clients, %s ramp-up + %s each\n",
				len(o.Configs), len(o.Mixes), o.Rounds, size, o.Clients, o.Rampup, o.Duration)

			rep, runErr := sweep.Run(cmd.Context(), o)
			if rep == nil {
				return runErr
			}
			if out != "" {
				if err := rep.WriteFiles(out); err != nil {
					return err
				}
			}
			stdout := cmd.OutOrStdout()
			if asJSON {
				err = rep.WriteJSON(stdout)
			} else {
				err = rep.Print(stdout)
				if err == nil && out != "" {
					abs, _ := filepath.Abs(out)
					fmt.Fprintf(stdout, "\nwrote %s, %s and %s in %s\n", sweep.FileJSON, sweep.FileCSV, sweep.FileHTML, abs)
				}
			}
			if err != nil {
				return err
			}
			return runErr
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Subscribers, "subscribers", 20000, "TM1 subscribers P loaded into each configuration")
	f.IntVar(&o.Clients, "clients", 8, "concurrent clients, one connection each")
	f.DurationVar(&o.Rampup, "rampup", 3*time.Second, "ramp-up before each measured window (not counted)")
	f.DurationVar(&o.Duration, "duration", 15*time.Second, "measured window of each mix")
	f.StringVar(&mixes, "mixes", "r80w20,r20w80", "comma list of TM1 mixes: r80w20, r20w80, read-only")
	f.StringVar(&configs, "configs", "all", "comma list of configurations, or all: "+strings.Join(sweep.ConfigNames(), ", "))
	f.IntVar(&o.Rounds, "rounds", 1, "rounds; with more than one every round runs every configuration (alternating order) and the table shows medians")
	f.StringVar(&out, "out", "tandem-sweep", "directory for sweep.json, sweep.csv and sweep.html, and failed-logs/ with the logs of any configuration that failed (empty: write no files)")
	f.StringVar(&o.ReadConsistency, "read-consistency", "", "read_consistency of tandem's router in the configurations that have one: session, strong, bounded or eventual (default: the router's, session; eventual is what pgpool-II's and HAProxy's balancing give)")
	f.BoolVar(&o.Interleave, "interleave", false, "keep every system of a round running and run the configurations of one safeness level side by side, one window after another: the systems compared at a level are measured seconds apart, not minutes (tandem's processes wait, stopped, during the others' windows; with --lab they share the emulated hosts, not with its netns)")
	f.BoolVar(&o.Unix, "unix", false, "clients connect over Unix sockets (PostgreSQL's, HAProxy's, pgpool-II's, tandem's unix_socket_dir) instead of TCP loopback")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON instead of the table")
	f.StringVar(&o.Workload, "workload", "tm1", "workload every configuration runs: tm1, or tpcc or epinions (with --scale; mixes default to the workload's first)")
	f.IntVar(&scale, "scale", 1, "with --workload tpcc or epinions: its scale (TPC-C warehouses; Epinions 2,000 users and 1,000 items per unit)")
	f.StringVar(&o.Suite, "suite", "", "run a suite instead of --configs: seed001 (seed 001's n1 / n1+(n2) / n1+n2+balancer table, with PostgreSQL's peers)")
	f.StringVar(&backend, "backend", "sqlite", "with --suite: back ends of tandem's rows, a comma list of sqlite, postgres (writeset engine) and postgres-physical (physical engine)")
	f.StringVar(&labFlag, "lab", "", "emulated hosts (needs root): cpu=CORES for each node or server, router=CORES, client=CORES (CPU quotas only)")
	f.StringVar(&o.PGBinDir, "pg-bin-dir", "", "directory of PostgreSQL's initdb, postgres and pg_basebackup (default: PATH, then /usr/lib/postgresql/*/bin)")
	return cmd
}
