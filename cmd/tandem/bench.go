package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/trace"
	_ "github.com/tandemdb/tandem/bench/workloads/epinions" // registers the epinions workload
	_ "github.com/tandemdb/tandem/bench/workloads/rubis"    // registers the rubis workload
	_ "github.com/tandemdb/tandem/bench/workloads/tm1"      // registers the tm1 workload
	_ "github.com/tandemdb/tandem/bench/workloads/tpcc"     // registers the tpcc workload
	"github.com/tandemdb/tandem/bench/workloads/tpcw"       // registers the tpcw workload; --items
)

// errBenchErrors marks a run that finished but saw unexpected errors.
var errBenchErrors = errors.New("unexpected errors during the run")

// newBenchCmd builds `tandem bench` with its load, run and compare
// subcommands. Other files may add more with AddCommand on the result.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load and run benchmark workloads (TM1/TATP, TPC-C, Epinions, TPC-W, RUBiS), record and replay traces, compare results",
		Long: `Built-in workloads driven over the PostgreSQL wire protocol, against a tandem
cluster or any PostgreSQL-compatible server: TM1 (TATP) after the reference
kit (shared/specs/tm1.md), TPC-C and Epinions with BenchBase's semantics,
TPC-W-like and RUBiS-like web workloads with seed 003's mixes and think time.
MQTh, per-transaction outcomes, success rates and latency percentiles, a
per-second timeline, JSON/CSV and an offline HTML report; statement traces
recorded from a run and replayed on C clients. See bench/README.md.`,
		Example: `  tandem bench load --workload tm1 --subscribers 100000 --dsn postgres://postgres@127.0.0.1:5432/postgres
  tandem bench run --workload tm1 --mix r80w20 --clients 8 --rampup 5s --duration 30s --dsn ... --out results/pg
  tandem bench compare results/pg/result.json results/tandem/result.json`,
	}
	cmd.AddCommand(newBenchLoadCmd(), newBenchRunCmd(), newBenchCompareCmd(), newBenchReportCmd(), newBenchRecordCmd(), newBenchReplayCmd())
	return cmd
}

// benchWorkloadFlag is --workload with the registered names in its help.
func benchWorkloadHelp() string {
	return "workload to use (" + strings.Join(bench.Workloads(), ", ") + ")"
}

// benchScaleFlags binds --subscribers and its generic alias --scale to one value.
func benchScaleFlags(cmd *cobra.Command, p *int, def int, help string) {
	cmd.Flags().IntVar(p, "subscribers", def, help)
	cmd.Flags().IntVar(p, "scale", def, "the workload's scale factor: TM1 subscribers, TPC-C warehouses, Epinions units of 2,000 users and 1,000 items, TPC-W emulated browsers (2,880 customers each), RUBiS units of 1,000 users, 10 active and 500 old items")
	cmd.Flags().IntVar(p, "warehouses", def, "alias of --scale for tpcc: number of TPC-C warehouses")
}

// benchDefaultLoadScale is `bench load`'s scale when no scale flag is given.
var benchDefaultLoadScale = map[string]int{"tm1": 100000, "tpcc": 1, "epinions": 1, "tpcw": 10, "rubis": 10}

// benchScaleChanged tells whether a scale flag was given.
func benchScaleChanged(cmd *cobra.Command) bool {
	f := cmd.Flags()
	return f.Changed("subscribers") || f.Changed("scale") || f.Changed("warehouses")
}

func newBenchLoadCmd() *cobra.Command {
	var (
		workload string
		opts     bench.LoadOptions
		quiet    bool
		items    int
	)
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Create a workload's tables and populate them",
		Long: `Creates the workload's schema (portable CREATE TABLE statements that run on
PostgreSQL and on SQLite behind tandem) and populates it per the workload's
rules, in batched transactions on parallel connections, with COPY FROM STDIN
where the endpoint supports it and multi-row INSERT otherwise. It refuses to
touch tables that already hold rows unless --drop is given.`,
		Example: `  tandem bench load --workload tm1 --subscribers 100000 --dsn postgres://postgres@127.0.0.1:5432/postgres
  tandem bench load --subscribers 10000 --dsn postgres://127.0.0.1:5433/tandem --drop --method insert
  tandem bench load --workload tpcc --warehouses 2 --dsn postgres://127.0.0.1:5433/tandem
  tandem bench load --workload tpcw --scale 10 --items 10000 --dsn postgres://127.0.0.1:5433/tandem
  tandem bench load --workload rubis --scale 10 --dsn postgres://127.0.0.1:5433/tandem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := bench.Lookup(workload)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("items") {
				if w.Name() != tpcw.Name {
					return fmt.Errorf("--items is for --workload tpcw only")
				}
				if items <= 0 {
					return fmt.Errorf("--items must be > 0 (got %d)", items)
				}
				w = tpcw.NewWithConfig(tpcw.Config{Items: items})
			}
			opts.Workload = w
			if def, ok := benchDefaultLoadScale[w.Name()]; ok && !benchScaleChanged(cmd) {
				opts.Scale = def
			}
			if !quiet {
				opts.Progress = cmd.ErrOrStderr()
			}
			st, err := bench.Load(cmd.Context(), opts)
			if err != nil {
				return err
			}
			method := "INSERT"
			if st.UsedCopy {
				method = "COPY"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "loaded %s: %d %s, %d rows in %s (%.0f rows/s, %s)\n",
				w.Name(), opts.Scale, w.ScaleName(), st.Rows, st.Elapsed.Round(time.Millisecond),
				float64(st.Rows)/st.Elapsed.Seconds(), method)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&workload, "workload", "tm1", benchWorkloadHelp())
	f.StringVar(&opts.DSN, "dsn", "", "target DSN, e.g. postgres://user@127.0.0.1:5432/db (required)")
	benchScaleFlags(cmd, &opts.Scale, 100000, "number of TM1 subscribers P (tpcc: use --warehouses, default 1)")
	f.BoolVar(&opts.Drop, "drop", false, "drop the workload's existing tables first")
	f.IntVar(&opts.Workers, "workers", 0, "parallel loading connections (0 = number of CPUs)")
	f.IntVar(&opts.BatchSize, "batch", 1000, "subscribers (tpcc: items or stock rows; epinions, tpcw, rubis: rows of the leading table) per committed transaction")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the population's random values")
	f.StringVar(&opts.Method, "method", bench.MethodAuto, "auto (COPY, falling back to INSERT on SQLSTATE 0A000), copy or insert")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	f.IntVar(&items, "items", tpcw.DefaultItems, "tpcw: items in the catalogue (TPC-W: 1,000, 10,000, 100,000 ...; runs read the loaded count)")
	_ = cmd.MarkFlagRequired("dsn")
	return cmd
}

type benchRunFlags struct {
	workload string
	opts     bench.RunOptions
	out      string
	json     bool
	label    string
	quiet    bool
	procs    int
	wait     string
	trace    string // bench record: the trace file
	lab      string // --lab: the client's emulated host
}

// clientsPerProc is how many closed-loop clients one Go P (GOMAXPROCS)
// drives in the commands that run the driver inside a lab sweep (bench
// sweep, bench scaleout, plan validate).
const clientsPerProc = 8

// benchProcs is the GOMAXPROCS of the sweeps' in-process driver: one P per
// clientsPerProc clients, at most the CPUs. Each client spends nearly all its
// time waiting for the server; with fewer Ps the Go runtime hands threads
// over less often per network round trip (measured here: about 30 instead of
// 40 µs of client CPU per TM1 transaction with 8 clients), which matters
// when the driver shares a small machine with a whole cluster.
func benchProcs(flag, clients, cpus int) int {
	if flag > 0 {
		return flag
	}
	return max(1, min(cpus, (clients+clientsPerProc-1)/clientsPerProc))
}

// runProcs is the GOMAXPROCS of `tandem bench run`: the --procs flag, or one
// P per client, at most twice the CPUs, and at most the client's CPU quota
// (rounded up) when --lab gives it one; with --wait thread, one P per
// client and one for everything else (a waiting client keeps its P, and a
// blocked thread uses no CPU, so neither the CPUs nor a quota bound them).
// Clients are independent terminals,
// as a JDBC driver's threads are: with fewer Ps than clients, a client whose
// answer has arrived waits in the Go scheduler's queue while another client
// builds its next statement. That wait is small where a client does little
// per round trip (TM1: one P per 8 clients cost 0-5 %), but TPC-C's
// terminals spend about 0.5 ms of CPU per transaction over some 23 round
// trips, and one P for 4 of them ran 0.65-0.77 of BenchBase's throughput on
// an idle machine where one P each ran 0.95-1.22 (docs/benchmarks.md). A
// quota bounds the useful Ps: more threads than it allows only get
// throttled together.
func runProcs(flag, clients, cpus int, quota float64, wait string) int {
	if flag > 0 {
		return flag
	}
	if wait == bench.WaitThread {
		return clients + 1
	}
	return capByQuota(max(1, min(clients, 2*cpus)), quota)
}

// capByQuota bounds n Go Ps by a CPU quota of quota cores rounded up (0: no
// quota): more threads than it allows only get throttled together.
func capByQuota(n int, quota float64) int {
	if quota > 0 {
		n = min(n, max(1, int(math.Ceil(quota))))
	}
	return n
}

// threadWaitClients is the most clients --wait auto lets wait on threads
// of their own: each holds a Go P, and the garbage collector's workers
// grow with the Ps.
const threadWaitClients = 16

// runWait resolves --wait. A client blocked in the kernel on its own
// thread answers the server sooner than one parked in Go's network poller
// and woken through it (pgx against pgjdbc on one statement: the poller
// costs about 4 µs of client and 2 µs of server CPU per round trip;
// docs/benchmarks.md, "Waiting on the client's own thread").
func runWait(flag string, clients int) (string, error) {
	switch flag {
	case "auto", "":
		if runtime.GOOS == "linux" && clients > 0 && clients <= threadWaitClients {
			return bench.WaitThread, nil
		}
		return bench.WaitPoller, nil
	case bench.WaitThread, bench.WaitPoller:
		return flag, nil
	}
	return "", fmt.Errorf("--wait %q: want auto, %s or %s", flag, bench.WaitThread, bench.WaitPoller)
}

func newBenchRunCmd() *cobra.Command { return newBenchRunCmdWith(&benchRunFlags{}) }

func newBenchRunCmdWith(f *benchRunFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a workload mix with closed-loop clients and report MQTh and latencies",
		Long: `Runs the workload with --clients closed-loop clients, each on its own
connection, for --rampup (not counted) and then --duration (measured).
MQTh is counted transactions per second over the measured window; a write
that changes no row and an allowed integrity error roll back and are not
counted, class 40 errors are aborts, anything else is an unexpected error,
reported loudly (and the command exits non-zero). A live line on stderr shows
progress once per second; the summary goes to stdout (or JSON with --json).
Ctrl-C stops early and still reports what was measured.`,
		Example: `  tandem bench run --dsn postgres://postgres@127.0.0.1:5432/postgres --mix r80w20 --clients 8 --duration 30s
  tandem bench run --dsn ... --mix custom --weights GET_SUBSCRIBER_DATA=50,UPDATE_LOCATION=50 --out results/custom
  tandem bench run --dsn ... --mix r20w80 --simple --uniform --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.workload, "workload", "tm1", benchWorkloadHelp())
	fs.StringVar(&f.opts.DSN, "dsn", "", "target DSN, e.g. postgres://user@127.0.0.1:5432/db (required)")
	fs.StringVar(&f.opts.Mix, "mix", "", "transaction mix (default: the workload's first): tm1 r80w20, r20w80, read-only; tpcc standard, read-only; epinions seed001, benchbase; tpcw shopping, browsing, ordering; rubis bidding, browsing; or custom")
	fs.StringVar(&f.opts.Weights, "weights", "", "weights for --mix custom: one number per transaction type in order, or NAME=weight,...")
	fs.IntVar(&f.opts.Clients, "clients", 8, "concurrent clients, one connection each (default 8; tpcw 30, 40, 50 for browsing, shopping, ordering and rubis 50: seed 003's clients per replica)")
	fs.DurationVar(&f.opts.Rampup, "rampup", 5*time.Second, "ramp-up before the measured window (not counted)")
	fs.DurationVar(&f.opts.Duration, "duration", 30*time.Second, "measured window")
	fs.DurationVar(&f.opts.Think, "think", 0, "think time after each transaction (default: 0; tpcw and rubis 900ms, as seed 003's clients; 0 = none)")
	fs.StringVar(&f.opts.ThinkDist, "think-dist", "", "think time distribution: fixed, or exponential with --think as its mean (default: exponential for tpcw and rubis, fixed for the others)")
	fs.IntVar(&f.opts.Retries, "retries", -1, "times a transaction aborted with 40001 or 40P01 is run again before it counts as aborted (0 = never; default: 0 for tm1, whose specification counts aborts and whose reference client does not retry, 3 for the others, as seed 003's servlets and BenchBase do)")
	fs.BoolVar(&f.opts.Uniform, "uniform", false, "uniform s_id instead of NURand")
	fs.Uint64Var(&f.opts.Seed, "seed", 0, "seed of the clients' random sources (0 = from the clock; the seed used is in the result)")
	fs.BoolVar(&f.opts.Simple, "simple", false, "simple query protocol instead of prepared statements")
	benchScaleFlags(cmd, &f.opts.Scale, 0, "number of TM1 subscribers P (0 = detect: count of subscribers, or of TPC-C warehouses)")
	fs.StringVar(&f.out, "out", "", "directory for result.json, timeline.csv and report.html")
	fs.BoolVar(&f.json, "json", false, "print the result as JSON instead of the summary table")
	fs.StringVar(&f.label, "label", "", "name of this run in comparisons (default: the --out directory name)")
	fs.BoolVar(&f.quiet, "quiet", false, "no live progress line")
	fs.IntVar(&f.procs, "procs", 0, "GOMAXPROCS of the driver (0 = one per client, at most twice the CPUs and at most --lab's client quota rounded up; with --wait thread, one more than the clients)")
	fs.StringVar(&f.wait, "wait", "auto", "how each client waits for answers: thread (in the kernel on its own thread, as JDBC's; needs Linux), poller (Go's network poller), or auto: thread up to 16 clients, poller above")
	fs.StringVar(&f.lab, "lab", "", "run the client in its own emulated host (cgroup; needs root): client=CORES sets its CPU quota, \"on\" none; the CPU it used is reported")
	_ = cmd.MarkFlagRequired("dsn")
	return cmd
}

func (f *benchRunFlags) run(cmd *cobra.Command) error {
	if f.opts.Retries == -1 {
		f.opts.Retries = 3
		if f.workload == "tm1" {
			f.opts.Retries = 0
		}
	}
	if f.procs < 0 {
		return fmt.Errorf("--procs must be >= 0 (got %d)", f.procs)
	}
	w, err := bench.Lookup(f.workload)
	if err != nil {
		return err
	}
	if tt, ok := w.(bench.ThinkTimer); ok && !cmd.Flags().Changed("think") {
		f.opts.Think = tt.DefaultThink()
	}
	if dc, ok := w.(bench.ClientsAdvisor); ok && !cmd.Flags().Changed("clients") {
		mix := f.opts.Mix
		if mix == "" {
			mix = w.Mixes()[0].Name
		}
		if n := dc.DefaultClients(mix); n > 0 {
			f.opts.Clients = n
		}
	}
	wait, err := runWait(f.wait, f.opts.Clients)
	if err != nil {
		return err
	}
	f.opts.Wait = wait
	if f.opts.Clients > 0 {
		var quota float64
		if spec, err := labSpec(cmd, nil, f.lab); err == nil && spec != nil {
			quota = spec.CPUClient
		}
		prev := runtime.GOMAXPROCS(runProcs(f.procs, f.opts.Clients, runtime.NumCPU(), quota, wait))
		defer runtime.GOMAXPROCS(prev)
	}
	f.opts.Workload = w
	f.opts.TandemVersion = version
	if !f.quiet {
		f.opts.Progress = cmd.ErrOrStderr()
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var rec *trace.Recorder
	if f.trace != "" {
		file, err := os.Create(f.trace)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		defer file.Close()
		mix := f.opts.Mix
		if mix == "" {
			mix = w.Mixes()[0].Name
		}
		rec, err = trace.NewRecorder(file, trace.Header{Workload: w.Name(), Mix: mix, Clients: f.opts.Clients,
			Scale: f.opts.Scale, Target: bench.RedactDSN(f.opts.DSN)})
		if err != nil {
			return err
		}
		f.opts.Tracer = rec
	}
	client, err := f.joinLab(cmd)
	if err != nil {
		return err
	}
	res, runErr := bench.Run(ctx, f.opts)
	if client != nil {
		client.report(cmd.ErrOrStderr())
	}
	if rec != nil {
		if err := rec.Close(); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "recorded %d statements in %s\n", rec.Statements(), f.trace)
	}
	if res == nil {
		return runErr
	}
	res.Label = f.label
	if f.out != "" {
		if err := res.WriteFiles(f.out); err != nil {
			return err
		}
	}
	out := cmd.OutOrStdout()
	if f.json {
		err = res.WriteJSON(out)
	} else {
		err = res.PrintSummary(out)
		if err == nil && f.out != "" {
			fmt.Fprintf(out, "\nwrote %s, %s and %s in %s\n", bench.ResultJSON, bench.TimelineCSV, bench.ReportHTML, f.out)
		}
	}
	if err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if res.Totals.Errors > 0 {
		return fmt.Errorf("%w: %d in the measured window (first: %s)", errBenchErrors, res.Totals.Errors, firstOr(res.FirstErrors, "?"))
	}
	return nil
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

func newBenchCompareCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compare A.json B.json ...",
		Short: "Compare runs side by side: MQTh, per-type p50/p99 and success rates, ratios to the first",
		Long: `Reads result.json files of tandem bench run and prints them side by side:
MQTh with its ratio to the first run, the gain/overhead matrix of every run
over every other (as in seed 001's tables 5.1-5.4), and per transaction type
p50/p99 latency and success rate with ratios to the first run. Runs are named
by their --label, else by the directory holding result.json.`,
		Example: `  tandem bench compare results/pg/result.json results/standalone/result.json results/hot-standby/result.json`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return benchCompare(cmd.OutOrStdout(), args, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return cmd
}

func benchCompare(w io.Writer, paths []string, asJSON bool) error {
	var results []*bench.Result
	var labels []string
	for _, p := range paths {
		r, err := bench.ReadResult(p)
		if err != nil {
			return err
		}
		results = append(results, r)
		labels = append(labels, bench.RunLabel(r, p))
	}
	c, err := bench.Compare(results, labels)
	if err != nil {
		return err
	}
	if asJSON {
		return c.WriteJSON(w)
	}
	return c.Print(w)
}

func newBenchReportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report RESULT.json",
		Short: "Rewrite result.json, timeline.csv and report.html from a result file",
		Long: `Reads a result.json of tandem bench run and writes the three result files
again into --out (default: the directory holding RESULT.json), e.g. to
regenerate the HTML report with a newer tandem.`,
		Example: `  tandem bench report results/pg/result.json --out /tmp/pg-report`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := bench.ReadResult(args[0])
			if err != nil {
				return err
			}
			dir := out
			if dir == "" {
				dir = filepath.Dir(args[0])
			}
			if err := res.WriteFiles(dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s, %s and %s in %s\n", bench.ResultJSON, bench.TimelineCSV, bench.ReportHTML, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "output directory (default: the directory of RESULT.json)")
	return cmd
}
