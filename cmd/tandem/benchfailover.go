package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/config"
)

// errFailoverBench marks a failover benchmark that lost acknowledged
// commits at a 2-safe level or saw a trial fail.
var errFailoverBench = errors.New("failover benchmark failed")

type benchFailoverFlags struct {
	trials        int
	levels        string
	backend       string
	engine        string
	writers       int
	lease, grace  time.Duration
	ackTimeout    time.Duration
	killMin       time.Duration
	killMax       time.Duration
	leaseRounds   int
	leaseDuration time.Duration
	leaseScale    int
	leaseClients  int
	leaseMix      string
	out           string
	json          bool
	keep          string
}

func newBenchFailoverCmd() *cobra.Command {
	f := &benchFailoverFlags{}
	cmd := &cobra.Command{
		Use:   "failover",
		Short: "Automatic failover: time from SIGKILL of the primary to the first commit, lost acknowledged commits, per safeness level; and the lease's steady-state cost",
		Long: `Runs --trials trials per safeness level (--levels) on a hot-standby pair
with a witness and failover = "automatic" (--backend sqlite or postgres;
--engine writeset, or physical: PostgreSQL's streaming replication under
tandem's coordinator, --backend postgres only).
Each trial starts the cluster, runs --writers writers through the router
that insert unique ids and record every acknowledged commit, SIGKILLs the
primary at a random moment, and measures the time from the kill to the
first successful commit of a statement sent after it (RTO), the
acknowledged commits missing on the new primary, and the sessions that
kept their connection (opened before the kill, committed again after it
on the same connection; a writer whose connection broke reconnects). It prints each
trial and, per level, the median, p99 (nearest rank) and maximum RTO.

Then, with --lease-rounds > 0, the steady-state cost of the coordinator
and the lease: TM1 (--lease-mix, default R20W80) through the router of a
pair with failover = "manual" (no witness, no coordinator) and one with
"automatic", alternating within each round, and the ratio of their MQTh.

--out writes failover.json and failover.html (a chart of every trial);
--json prints the JSON instead of the tables. The command exits non-zero
if an acknowledged commit was lost at a 2-safe level or a trial failed.`,
		Example: `  tandem bench failover --trials 10 --out results/failover
  tandem bench failover --trials 1 --levels 2-safe-visible --lease-rounds 0
  tandem bench failover --backend postgres --trials 5 --lease-rounds 2
  tandem bench failover --backend postgres --engine physical --trials 5 --lease-rounds 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fs := cmd.Flags()
	fs.IntVar(&f.trials, "trials", 5, "trials per safeness level")
	fs.StringVar(&f.levels, "levels", strings.Join(config.SafenessLevels, ","), "safeness levels, comma-separated")
	fs.StringVar(&f.backend, "backend", "sqlite", "sqlite or postgres (managed PostgreSQL servers)")
	fs.StringVar(&f.engine, "engine", config.EngineWriteset, "replication.engine of the pairs: writeset, or physical (PostgreSQL's streaming replication; --backend postgres only)")
	fs.IntVar(&f.writers, "writers", 4, "writers through the router, one connection each")
	fs.DurationVar(&f.lease, "lease", time.Second, "the primary's lease")
	fs.DurationVar(&f.grace, "lease-grace", 500*time.Millisecond, "what the coordinator waits beyond the lease before it promotes")
	fs.DurationVar(&f.ackTimeout, "ack-timeout", 0, "replication.ack_timeout: a 2-safe commit's longest wait for the standby (0: the default, 2s); the new primary's first commits wait it out for the dead node before it degrades")
	fs.DurationVar(&f.killMin, "kill-min", 500*time.Millisecond, "earliest kill, after the writers' first commits")
	fs.DurationVar(&f.killMax, "kill-max", 2500*time.Millisecond, "latest kill")
	fs.IntVar(&f.leaseRounds, "lease-rounds", 2, "rounds of the steady-state lease cost (0: skip it)")
	fs.DurationVar(&f.leaseDuration, "lease-duration", 10*time.Second, "measured window of each lease-cost run")
	fs.IntVar(&f.leaseScale, "lease-subscribers", 5000, "TM1 subscribers of the lease-cost runs")
	fs.IntVar(&f.leaseClients, "lease-clients", 8, "TM1 clients of the lease-cost runs")
	fs.StringVar(&f.leaseMix, "lease-mix", "r20w80", "TM1 mix of the lease-cost runs")
	fs.StringVar(&f.out, "out", "", "directory for failover.json and failover.html")
	fs.BoolVar(&f.json, "json", false, "print the result as JSON instead of the tables")
	fs.StringVar(&f.keep, "dir", "", "keep every trial's cluster files and logs under this directory (default: temporary, removed)")
	return cmd
}

func (f *benchFailoverFlags) run(cmd *cobra.Command) error {
	log := quietLogger(cmd)
	ctx := cmd.Context()
	var levels []string
	for _, l := range strings.Split(f.levels, ",") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if err := config.ValidateSafeness(l); err != nil {
			return fmt.Errorf("--levels: %w", err)
		}
		levels = append(levels, l)
	}
	switch {
	case len(levels) == 0:
		return errors.New("--levels: name at least one safeness level")
	case f.trials < 0:
		return fmt.Errorf("--trials must be >= 0 (got %d)", f.trials)
	case f.backend != "sqlite" && f.backend != "postgres":
		return fmt.Errorf("--backend %q: use sqlite or postgres", f.backend)
	case f.engine != config.EngineWriteset && f.engine != config.EnginePhysical:
		return fmt.Errorf("--engine %q: use %s or %s", f.engine, config.EngineWriteset, config.EnginePhysical)
	case f.engine == config.EnginePhysical && f.backend != "postgres":
		return fmt.Errorf("--engine physical ships PostgreSQL's WAL: it needs --backend postgres (got --backend %s)", f.backend)
	case f.writers < 1:
		return fmt.Errorf("--writers must be at least 1 (got %d)", f.writers)
	case f.killMin < 0 || f.killMax < f.killMin:
		return fmt.Errorf("--kill-min %s and --kill-max %s: need 0 <= min <= max", f.killMin, f.killMax)
	case f.leaseRounds < 0:
		return fmt.Errorf("--lease-rounds must be >= 0 (got %d)", f.leaseRounds)
	}
	root := f.keep
	if root == "" {
		d, err := os.MkdirTemp("", "tandem-bench-failover-")
		if err != nil {
			return err
		}
		root = d
		defer os.RemoveAll(d)
	}
	res := bench.NewFailoverBench(version)
	res.Backend, res.Engine, res.Writers, res.Lease, res.LeaseGrace = f.backend, f.engine, f.writers, f.lease.String(), f.grace.String()
	res.AckTimeout = "2s (default)"
	if f.ackTimeout > 0 {
		res.AckTimeout = f.ackTimeout.String()
	}
	progress := cmd.ErrOrStderr()
	for _, level := range levels {
		for i := 1; i <= f.trials; i++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			dir := filepath.Join(root, fmt.Sprintf("%s-%d", level, i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			t := f.trial(ctx, log, dir, level, i)
			res.Trials = append(res.Trials, t)
			line := fmt.Sprintf("%s trial %d: ", level, i)
			if t.Recovered {
				line += fmt.Sprintf("first commit %.0f ms after the SIGKILL, new primary %s (epoch %d), %d acknowledged, %d lost", t.RTOMs, t.NewPrimary, t.Epoch, t.Acked, t.Lost)
			} else {
				line += "NOT recovered"
			}
			if t.Error != "" {
				line += ": " + t.Error
			}
			fmt.Fprintln(progress, line)
		}
	}
	res.Summarize()
	if f.leaseRounds > 0 {
		lc, err := f.leaseCost(ctx, log, root)
		if err != nil {
			return fmt.Errorf("lease cost: %w", err)
		}
		res.LeaseCost = lc
	}
	out := cmd.OutOrStdout()
	if f.out != "" {
		if err := res.WriteFiles(f.out); err != nil {
			return err
		}
	}
	if f.json {
		if err := res.WriteJSON(out); err != nil {
			return err
		}
	} else {
		if err := res.Print(out); err != nil {
			return err
		}
		if f.out != "" {
			fmt.Fprintf(out, "\nwrote %s and %s in %s\n", bench.FailoverJSON, bench.FailoverHTML, f.out)
		}
	}
	var bad []string
	for _, l := range res.Levels {
		if l.Lost > 0 && l.Level != "1-safe" {
			bad = append(bad, fmt.Sprintf("%s lost %d acknowledged commits", l.Level, l.Lost))
		}
		if l.Errors > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d trials failed", l.Level, l.Errors))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", errFailoverBench, strings.Join(bad, "; "))
	}
	return nil
}

// trial runs one failover trial; its error, if any, is in the result.
func (f *benchFailoverFlags) trial(ctx context.Context, log *slog.Logger, dir, level string, n int) bench.FailoverTrial {
	t := bench.FailoverTrial{Level: level, Trial: n, Sessions: f.writers}
	fail := func(err error) bench.FailoverTrial {
		t.Error = err.Error()
		return t
	}
	p, err := startPair(ctx, pairSpec{Dir: dir, Name: "failover", Backend: f.backend, Engine: f.engine, Safeness: level, Failover: "automatic", Lease: f.lease, Grace: f.grace, AckTimeout: f.ackTimeout}, log)
	if err != nil {
		return fail(err)
	}
	defer p.stop()
	if err := createAuditTable(ctx, p.dsn()); err != nil {
		return fail(err)
	}
	audit := &auditWriters{}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	began := time.Now()
	done := audit.run(wctx, p.dsn(), f.writers)
	defer func() { stop(); <-done }()
	if err := audit.waitCount(ctx, 20, 30*time.Second); err != nil {
		return fail(fmt.Errorf("before the kill: %w", err))
	}
	wait := f.killMin + time.Duration(rand.Int64N(int64(f.killMax-f.killMin)+1))
	select {
	case <-time.After(time.Until(began.Add(wait))):
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	st, err := p.status("n1")
	if err != nil {
		return fail(fmt.Errorf("the primary's status before the kill: %w", err))
	}
	_, epoch0, degraded := st.roleEpoch()
	t.Degraded = degraded
	killed := time.Now()
	audit.markKill(killed)
	p.kill("n1")
	t.KillAfterMs = ms(killed.Sub(began))
	id, epoch, perr := p.waitPrimary(ctx, "n1", epoch0, 30*time.Second)
	if perr == nil {
		t.NewPrimary, t.Epoch, t.PromotedMs = id, epoch, ms(time.Since(killed))
	}
	if back, ok := audit.waitBack(ctx, 30*time.Second); ok {
		t.Recovered, t.RTOMs = true, ms(back.Sub(killed))
		time.Sleep(300 * time.Millisecond) // some commits on the new primary
	}
	stop()
	<-done
	t.Failed = audit.errors.Load()
	t.Survived = int(audit.survived.Load())
	if perr != nil {
		return fail(perr)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if t.Acked, t.Lost, err = audit.check(cctx, p.nodeDSN(id)); err != nil {
		return fail(err)
	}
	if !t.Recovered {
		return fail(errors.New("no commit succeeded within 30 s of the kill"))
	}
	return t
}

// quietLogger is logger(cmd), at level warn unless --log-level was given:
// a benchmark's progress lines should not drown in process start-ups.
func quietLogger(cmd *cobra.Command) *slog.Logger {
	log := logger(cmd)
	if cmd.Flags().Changed("log-level") {
		return log
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// leaseCost runs TM1 on a pair with failover = manual and one with
// automatic, alternating (ABBA) within rounds.
func (f *benchFailoverFlags) leaseCost(ctx context.Context, log *slog.Logger, root string) (*bench.LeaseCost, error) {
	w, err := bench.Lookup("tm1")
	if err != nil {
		return nil, err
	}
	lc := &bench.LeaseCost{Workload: "tm1", Mix: f.leaseMix, Scale: f.leaseScale, Clients: f.leaseClients, Duration: f.leaseDuration.Seconds()}
	for r := 1; r <= f.leaseRounds; r++ {
		modes := []string{"manual", "automatic"}
		if r%2 == 0 {
			modes = []string{"automatic", "manual"}
		}
		round := bench.LeaseCostRound{Round: r, FirstGiven: modes[0]}
		for _, mode := range modes {
			dir := filepath.Join(root, fmt.Sprintf("lease-%d-%s", r, mode))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			mqth, cpu, err := f.leaseRun(ctx, log, w, dir, mode)
			if err != nil {
				return nil, fmt.Errorf("round %d, failover %s: %w", r, mode, err)
			}
			fmt.Fprintf(os.Stderr, "lease cost round %d: failover %s: MQTh %.1f, %.0f µs CPU per transaction\n", r, mode, mqth, cpu)
			if mode == "manual" {
				round.Manual, round.ManualCPUUs = mqth, round3(cpu)
			} else {
				round.Automatic, round.AutomaticCPUUs = mqth, round3(cpu)
			}
		}
		if round.Manual > 0 {
			round.Ratio = round3(round.Automatic / round.Manual)
		}
		if round.ManualCPUUs > 0 && round.AutomaticCPUUs > 0 {
			round.CPURatio = round3(round.AutomaticCPUUs / round.ManualCPUUs)
		}
		lc.Rounds = append(lc.Rounds, round)
	}
	lc.Summarize()
	return lc, nil
}

// leaseRun loads TM1 on a fresh pair and runs it; it returns MQTh and the
// CPU time all the cluster's processes spent per counted transaction.
func (f *benchFailoverFlags) leaseRun(ctx context.Context, log *slog.Logger, w bench.Workload, dir, mode string) (float64, float64, error) {
	p, err := startPair(ctx, pairSpec{Dir: dir, Name: "lease-" + mode, Backend: f.backend, Engine: f.engine, Failover: mode, Lease: f.lease, Grace: f.grace, AckTimeout: f.ackTimeout}, log)
	if err != nil {
		return 0, 0, err
	}
	defer p.stop()
	if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: p.dsn(), Scale: f.leaseScale, Drop: true, Logger: log}); err != nil {
		return 0, 0, fmt.Errorf("load: %w", err)
	}
	if err := p.waitAttached(ctx, "n1", 60*time.Second); err != nil {
		return 0, 0, err
	}
	before := p.cpuTime()
	res, err := bench.Run(ctx, bench.RunOptions{Workload: w, DSN: p.dsn(), Mix: f.leaseMix, Clients: f.leaseClients,
		Rampup: 2 * time.Second, Duration: f.leaseDuration, Scale: f.leaseScale, Logger: log, TandemVersion: version})
	if err != nil {
		return 0, 0, err
	}
	cpu := p.cpuTime() - before
	if res.Totals.Errors > 0 {
		return 0, 0, fmt.Errorf("%d unexpected errors (first: %s)", res.Totals.Errors, firstOr(res.FirstErrors, "?"))
	}
	// Counted transactions of the whole run (ramp-up included), as the
	// CPU time covers it.
	var counted float64
	for _, pt := range res.Timeline {
		counted += pt.TPS * pt.IntervalS
	}
	var perTx float64
	if counted > 0 && cpu > 0 {
		perTx = float64(cpu.Microseconds()) / counted
	}
	return res.MQTh, perTx, nil
}

func round3(f float64) float64 {
	return float64(int64(f*1000+0.5)) / 1000
}
