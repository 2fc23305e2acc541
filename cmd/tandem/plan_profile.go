package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/bench"
	_ "github.com/tandemdb/tandem/bench/workloads/epinions" // registers the epinions workload
	_ "github.com/tandemdb/tandem/bench/workloads/rubis"    // registers the rubis workload
	_ "github.com/tandemdb/tandem/bench/workloads/tm1"      // registers the tm1 workload
	_ "github.com/tandemdb/tandem/bench/workloads/tpcc"     // registers the tpcc workload
	_ "github.com/tandemdb/tandem/bench/workloads/tpcw"     // registers the tpcw workload
	"github.com/tandemdb/tandem/planner"
	"github.com/tandemdb/tandem/planner/profiler"
)

type planProfileFlags struct {
	workload string
	opts     profiler.Options
	disk     string
	out      string
	json     bool
}

// newPlanProfileCmd builds `tandem plan profile`: measure a planner profile
// on a standalone database (seed 003 §4.1.1).
func newPlanProfileCmd() *cobra.Command {
	f := &planProfileFlags{}
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Measure a workload profile (rc, wc, ws, A1, L1) on a standalone PostgreSQL",
		Long: `Measures the inputs of the capacity planner on one standalone PostgreSQL
loaded with the workload (tandem bench load), as seed 003 §4.1.1 does, by the
Utilization Law (demand = resource busy time / completions) over separate
phases:

  read-only       the mix's read-only transactions only         -> rc
  update          the mix's update transactions only            -> wc
  writeset-apply  the writesets of update transactions, captured
                  by triggers in an unmeasured run, undone, then
                  applied by primary key                         -> ws
  mix             the whole mix                                  -> A1, L1, a check

CPU is the utime+stime of the postmaster and all its descendants
(/proc/PID/stat), disk the busy time of the device holding the data directory
(/proc/diskstats), cross-checked with the server's /proc/PID/io. Run it on
the database host as root or as the server's user. Every field of the written
profile carries a trust note. The run changes the data as the workload's
updates do. See docs/planner.md.`,
		Example: `  tandem plan profile --workload tm1 --mix r80w20 --dsn postgres://postgres@127.0.0.1:5432/postgres --out tm1.json
  tandem plan profile --mix r20w80 --dsn ... --clients 16 --duration 30s --rampup 5s --disk nvme0n1 --json
  tandem plan predict --profile tm1.json --design both --replicas 1..8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			return runPlanProfile(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "tm1", "workload to profile ("+strings.Join(bench.Workloads(), ", ")+")")
	fl.StringVar(&f.opts.Mix, "mix", "", "transaction mix (default: the workload's first, tm1 r80w20), or custom")
	fl.StringVar(&f.opts.Weights, "weights", "", "weights for --mix custom: one number per transaction type, or NAME=weight,...")
	fl.StringVar(&f.opts.DSN, "dsn", "", "DSN of the standalone database, loaded with the workload (required)")
	fl.IntVar(&f.opts.Clients, "clients", 8, "concurrent clients in each phase")
	fl.DurationVar(&f.opts.Duration, "duration", 10*time.Second, "measured time of each phase (the unmeasured writeset capture runs --rampup plus --duration; the apply phase stops after at most --duration)")
	fl.DurationVar(&f.opts.Rampup, "rampup", 2*time.Second, "unmeasured warm-up before each measured phase")
	fl.DurationVar(&f.opts.Idle, "idle", 0, "measure an idle phase of this length first (no transaction): the server's own CPU per second, left out of the demands and kept in the profile as the CPU's bg (the models give the host 1 - bg of its capacity); 0: none")
	fl.DurationVar(&f.opts.Think, "think", 0, "client think time (becomes the profile's Z)")
	fl.BoolVar(&f.opts.Uniform, "uniform", false, "uniform keys instead of the workload's skewed default")
	fl.Uint64Var(&f.opts.Seed, "seed", 0, "seed of the clients' random sources (0 = from the clock)")
	fl.IntVar(&f.opts.PID, "pid", 0, "PID of the server's postmaster (default: the process listening on the --dsn port, found via /proc/net and /proc/*/fd)")
	fl.StringVar(&f.disk, "disk", "", "device(s) to measure, e.g. nvme0n1 or sda,sdb, or all (default: the device holding the data directory and pg_wal)")
	fl.Float64Var(&f.opts.CPUs, "cpus", 0, "divide CPU busy time by this many CPUs (default: the CPUs the server may use; 1 = raw CPU-seconds)")
	fl.IntVar(&f.opts.ReplicaPID, "replica-pid", 0, "PID of a tandem node replicating the profiled one (its primary or a multi-master peer): ws is then that node's process tree's CPU per committed update during the update phase, instead of a replay of captured writesets through --dsn")
	fl.BoolVar(&f.opts.ReplicaReads, "replica-reads", false, "the --dsn balances reads over the profiled node and the --replica-pid node (a router): rc counts both trees' CPU")
	fl.IntVar(&f.opts.ApplyClients, "apply-clients", 0, "parallel writeset appliers in the writeset-apply phase (default: --clients)")
	fl.BoolVar(&f.opts.SkipMix, "skip-mix", false, "skip the full-mix phase; A1 and L1 then come from the update phase")
	fl.BoolVar(&f.opts.NoQuiesce, "no-quiesce", false, "do not VACUUM the workload's tables and CHECKPOINT before each phase")
	fl.StringVar(&f.opts.Name, "name", "", "profile name (default: WORKLOAD-MIX)")
	fl.StringVar(&f.out, "out", "", "profile file to write (default: NAME.profile.json)")
	fl.BoolVar(&f.json, "json", false, "print the full report (profile and raw measurements) as JSON instead of the table")
	_ = cmd.MarkFlagRequired("dsn")
	return cmd
}

func runPlanProfile(cmd *cobra.Command, f *planProfileFlags) error {
	w, err := bench.Lookup(f.workload)
	if err != nil {
		return fmt.Errorf("--workload: %w", err)
	}
	f.opts.Workload = w
	if d := strings.TrimSpace(f.disk); d != "" {
		for _, s := range strings.Split(d, ",") {
			if s = strings.TrimSpace(s); s != "" {
				f.opts.Disks = append(f.opts.Disks, s)
			}
		}
		if len(f.opts.Disks) > 1 && containsFold(f.opts.Disks, "all") {
			return fmt.Errorf("--disk: %w: \"all\" cannot be combined with device names", errPlanFlag)
		}
	}
	if f.opts.Duration <= 0 {
		return fmt.Errorf("--duration: %w: must be > 0, got %s", errPlanFlag, f.opts.Duration)
	}
	if cmd.Flags().Changed("cpus") && f.opts.CPUs <= 0 {
		return fmt.Errorf("--cpus: %w: must be > 0, got %g", errPlanFlag, f.opts.CPUs)
	}
	if cmd.Flags().Changed("pid") && f.opts.PID <= 0 {
		return fmt.Errorf("--pid: %w: must be > 0, got %d", errPlanFlag, f.opts.PID)
	}
	f.opts.Logger = logger(cmd)

	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep, err := profiler.Run(ctx, f.opts)
	if err != nil {
		return fmt.Errorf("plan profile: %w", err)
	}
	path := f.out
	if path == "" {
		path = rep.Profile.Name + ".profile.json"
	}
	var buf bytes.Buffer
	if err := planner.EncodeProfile(&buf, rep.Profile); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	// The file must load as any profile does (plan predict --profile FILE).
	if _, err := planner.LoadProfileFile(path); err != nil {
		return fmt.Errorf("--out: the written profile does not load back: %w", err)
	}
	out := cmd.OutOrStdout()
	if f.json {
		if err := rep.WriteJSON(out); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
		return nil
	}
	if err := rep.PrintTable(out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nwrote %s; predict with: tandem plan predict --profile %s\n", path, path)
	return nil
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
