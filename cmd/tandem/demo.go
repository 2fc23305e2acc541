package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
)

// errDemoLost means the demo's failover lost acknowledged commits (or
// could not check them): the demo exits non-zero.
var errDemoLost = errors.New("acknowledged commits lost")

type demoFlags struct {
	design               string
	safeness             string
	subscribers, clients int
	auditWriters         int
	duration, rampup     time.Duration
	killAt               time.Duration
	lease, grace         time.Duration
	mix, out, dir        string
}

func newDemoCmd() *cobra.Command {
	f := &demoFlags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The main job: a SQLite hot-standby pair with automatic failover runs TM1, its primary is SIGKILLed mid-run, nothing acknowledged is lost",
		Long: `demo starts a hot-standby pair on the embedded SQLite back end (two node
processes, a witness and the router, failover = "automatic"), loads a small
TM1 (TATP) population through the router, runs the R80W20 mix with a live
progress line and, in the middle of the measured window, SIGKILLs the
primary. The coordinator promotes the standby, the router follows it, the
TM1 clients go on through the router (a client whose connection broke
reconnects) and the run finishes on the new primary.

Besides TM1, audit writers insert unique ids through the router and record
every commit that was acknowledged; afterwards each one is looked up on the
new primary. The summary prints the failover (time of the kill, the first
successful commit after it, the new primary and its epoch) and
"acknowledged commits checked: N, lost: 0"; report.html marks the kill and
the recovery on the throughput timeline; result.json carries the failover,
with the sessions that kept their connection.
The demo exits non-zero if an acknowledged commit is missing.

--design standalone runs the earlier demo: one SQLite node, no failover.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.design, "design", "hot-standby", "hot-standby (a pair with automatic failover; the primary is killed mid-run) or standalone (one node, no failover)")
	fs.StringVar(&f.safeness, "safeness", "", "hot-standby: safeness level (default: the cluster default, 2-safe-received)")
	fs.IntVar(&f.subscribers, "subscribers", 10000, "TM1 population size")
	fs.IntVar(&f.clients, "clients", 8, "concurrent TM1 clients")
	fs.IntVar(&f.auditWriters, "audit-writers", 2, "hot-standby: writers that record every acknowledged commit, checked after the failover")
	fs.DurationVar(&f.duration, "duration", 20*time.Second, "measured window")
	fs.DurationVar(&f.rampup, "rampup", 3*time.Second, "ramp-up before the measured window")
	fs.DurationVar(&f.killAt, "kill-at", 0, "hot-standby: when to SIGKILL the primary, counted from the start of the measured window (default: its middle)")
	fs.DurationVar(&f.lease, "lease", time.Second, "hot-standby: the primary's lease")
	fs.DurationVar(&f.grace, "lease-grace", 500*time.Millisecond, "hot-standby: what the coordinator waits beyond the lease before it promotes")
	fs.StringVar(&f.mix, "mix", "r80w20", "r80w20, r20w80 or read-only")
	fs.StringVar(&f.out, "out", "", "directory for result.json, timeline.csv and report.html (default ./tandem-demo-report)")
	fs.StringVar(&f.dir, "dir", "", "keep the cluster's data and logs in this directory (default: a temporary one, removed)")
	return cmd
}

func (f *demoFlags) run(cmd *cobra.Command) error {
	log := quietLogger(cmd)
	ctx := cmd.Context()
	switch f.design {
	case "hot-standby", "standalone":
	default:
		return fmt.Errorf("--design %q: use hot-standby or standalone", f.design)
	}
	if f.safeness != "" {
		if err := config.ValidateSafeness(f.safeness); err != nil {
			return fmt.Errorf("--safeness: %w", err)
		}
	}
	if f.killAt == 0 {
		f.killAt = f.duration / 2
	}
	if f.killAt < 0 || f.killAt >= f.duration {
		return fmt.Errorf("--kill-at %s must lie in the measured window (0 to --duration %s)", f.killAt, f.duration)
	}
	if f.auditWriters < 1 {
		return fmt.Errorf("--audit-writers must be at least 1 (got %d)", f.auditWriters)
	}
	if f.dir == "" {
		d, err := os.MkdirTemp("", "tandem-demo-")
		if err != nil {
			return err
		}
		f.dir = d
		defer os.RemoveAll(d)
	} else if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	if f.out == "" {
		f.out = "tandem-demo-report"
	}
	w, err := bench.Lookup("tm1")
	if err != nil {
		return err
	}
	opts := bench.RunOptions{Workload: w, Mix: f.mix, Clients: f.clients, Rampup: f.rampup, Duration: f.duration,
		Scale: f.subscribers, Progress: os.Stderr, Logger: log, TandemVersion: version}
	var res *bench.Result
	var runErr error
	if f.design == "standalone" {
		res, runErr = f.standalone(ctx, log, opts)
	} else {
		res, runErr = f.hotStandby(ctx, log, opts)
	}
	if res == nil {
		return runErr
	}
	out := cmd.OutOrStdout()
	if err := res.PrintSummary(out); err != nil {
		return err
	}
	if err := res.WriteFiles(f.out); err != nil {
		return err
	}
	abs, _ := filepath.Abs(filepath.Join(f.out, "report.html"))
	fmt.Fprintf(out, "\nreport: %s (also result.json and timeline.csv in %s)\n", abs, f.out)
	return runErr
}

// load populates TM1 through dsn.
func (f *demoFlags) load(ctx context.Context, log *slog.Logger, w bench.Workload, dsn string) error {
	fmt.Fprintf(os.Stderr, "tandem demo: loading TM1 with %d subscribers\n", f.subscribers)
	if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: dsn, Scale: f.subscribers, Drop: true, Progress: os.Stderr, Logger: log}); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

func (f *demoFlags) announce(opts bench.RunOptions) {
	fmt.Fprintf(os.Stderr, "tandem demo: running %s with %d clients: %s ramp-up, %s measured\n", opts.Mix, opts.Clients, opts.Rampup, opts.Duration)
}

// standalone is the earlier demo: one SQLite node, no failover.
func (f *demoFlags) standalone(ctx context.Context, log *slog.Logger, opts bench.RunOptions) (*bench.Result, error) {
	port, err := postgres.FreePort()
	if err != nil {
		return nil, err
	}
	file := filepath.Join(f.dir, "demo.toml")
	text := fmt.Sprintf(`cluster = "demo"
design = "standalone"
run_dir = %q
[[users]]
name = "tandem"
password = "tandem"
[[nodes]]
id = "n1"
listen = "127.0.0.1:%d"
backend = "sqlite"
`, filepath.Join(f.dir, "run"), port)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return nil, err
	}
	c, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "tandem demo: starting a standalone SQLite cluster in %s\n", f.dir)
	lc, err := cluster.Start(ctx, cluster.Options{Config: c, Logger: log, LogLevel: "warn"})
	if err != nil {
		return nil, err
	}
	defer lc.Stop()
	fmt.Fprintf(os.Stderr, "tandem demo: cluster up at %s\n", bench.RedactDSN(lc.DSN()))
	if err := f.load(ctx, log, opts.Workload, lc.DSN()); err != nil {
		return nil, err
	}
	opts.DSN = lc.DSN()
	f.announce(opts)
	res, err := bench.Run(ctx, opts)
	if err != nil && !errors.Is(err, bench.ErrInterrupted) {
		return nil, fmt.Errorf("run: %w", err)
	}
	return res, err
}

// hotStandby runs TM1 and the audit writers through the router of a pair
// with automatic failover, SIGKILLs the primary in the measured window and
// checks every acknowledged audit commit on the new primary.
func (f *demoFlags) hotStandby(ctx context.Context, log *slog.Logger, opts bench.RunOptions) (*bench.Result, error) {
	spec := pairSpec{Dir: f.dir, Name: "demo", Backend: "sqlite", Safeness: f.safeness, Failover: "automatic", Lease: f.lease, Grace: f.grace}
	fmt.Fprintf(os.Stderr, "tandem demo: starting a hot-standby SQLite pair (n1 primary, n2 standby, a witness, the router; automatic failover, lease %s, grace %s) in %s\n", f.lease, f.grace, f.dir)
	p, err := startPair(ctx, spec, log)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	fmt.Fprintf(os.Stderr, "tandem demo: cluster up; clients connect through the router at %s\n", bench.RedactDSN(p.dsn()))
	if err := f.load(ctx, log, opts.Workload, p.dsn()); err != nil {
		return nil, err
	}
	if err := createAuditTable(ctx, p.dsn()); err != nil {
		return nil, err
	}
	if err := p.waitAttached(ctx, "n1", 60*time.Second); err != nil {
		return nil, err
	}
	st, err := p.status("n1")
	if err != nil {
		return nil, err
	}
	fo := &bench.Failover{Killed: "n1", Safeness: st.Repl.Safeness, Lease: f.lease.String(), LeaseGrace: f.grace.String(), Sessions: f.clients + f.auditWriters}
	epoch := st.Repl.Epoch

	audit := &auditWriters{}
	actx, stopAudit := context.WithCancel(ctx)
	defer stopAudit()
	auditDone := audit.run(actx, p.dsn(), f.auditWriters)

	// The fault: scheduled from the run's start, in the measured window.
	started := make(chan time.Time, 1)
	opts.OnStart = func(t time.Time) { started <- t }
	runOver := make(chan struct{})
	faultDone := make(chan error, 1)
	go func() {
		var t0 time.Time
		select {
		case t0 = <-started:
		case <-runOver:
			faultDone <- errors.New("the run ended before the kill")
			return
		}
		select {
		case <-time.After(time.Until(t0.Add(f.rampup + f.killAt))):
		case <-runOver:
			faultDone <- errors.New("the run ended before the kill")
			return
		}
		killed := time.Now()
		audit.markKill(killed)
		p.kill("n1")
		fo.KilledAt = killed
		fo.KillT = killed.Sub(t0).Seconds()
		logf(opts.Progress, "tandem demo: SIGKILL sent to the primary n1 at %.1fs; no promote typed\n", fo.KillT)
		id, ep, err := p.waitPrimary(ctx, "n1", epoch, 30*time.Second)
		if err == nil {
			fo.NewPrimary, fo.Epoch = id, ep
		}
		if back, ok := audit.waitBack(ctx, 30*time.Second); ok {
			fo.Recovered, fo.FirstCommitAt = true, back
			fo.RecoveredT = back.Sub(t0).Seconds()
			fo.DurationMs = float64(back.Sub(killed).Microseconds()) / 1000
			logf(opts.Progress, "tandem demo: %s is the primary of epoch %d; first commit %.0f ms after the kill\n", fo.NewPrimary, fo.Epoch, fo.DurationMs)
		}
		faultDone <- err
	}()
	opts.DSN = p.dsn()
	f.announce(opts)
	fmt.Fprintf(os.Stderr, "tandem demo: %d audit writers record every acknowledged commit; the primary will be SIGKILLed %s into the measured window\n", f.auditWriters, f.killAt)
	res, runErr := bench.Run(ctx, opts)
	close(runOver)
	// The fault goroutine's waits are bounded (30 s each after the kill).
	foErr := <-faultDone
	stopAudit()
	<-auditDone
	if runErr != nil && !errors.Is(runErr, bench.ErrInterrupted) {
		return nil, fmt.Errorf("run: %w", runErr)
	}
	if fo.KilledAt.IsZero() {
		return res, errors.Join(runErr, fmt.Errorf("the primary was not killed: %w", foErr))
	}
	res.Failover = fo
	res.Events = append(res.Events, bench.Event{T: fo.KillT, Label: "SIGKILL n1 (primary)", Kind: bench.EventFault})
	if fo.Recovered {
		res.Events = append(res.Events, bench.Event{T: fo.RecoveredT, Label: fmt.Sprintf("first commit on %s (+%.0f ms)", orDash(fo.NewPrimary), fo.DurationMs), Kind: bench.EventRecovery})
	}
	fo.SessionsSurvived = f.clients - res.ClientsDisconnected + int(audit.survived.Load())
	checkOn := fo.NewPrimary
	if checkOn == "" {
		checkOn = "n2"
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fo.AckedChecked, fo.Lost, err = audit.check(cctx, p.nodeDSN(checkOn))
	if err != nil {
		fo.CheckError = err.Error()
	}
	switch {
	case fo.CheckError != "":
		runErr = errors.Join(runErr, fmt.Errorf("%w: cannot check: %s", errDemoLost, fo.CheckError))
	case fo.Lost > 0:
		runErr = errors.Join(runErr, fmt.Errorf("%w: %d of %d", errDemoLost, fo.Lost, fo.AckedChecked))
	case foErr != nil:
		runErr = errors.Join(runErr, foErr)
	}
	return res, runErr
}

// logf writes a line between the run's progress lines (clearing the live
// line first on a terminal).
func logf(w io.Writer, format string, args ...any) {
	if w == nil {
		w = os.Stderr
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		format = "\r\033[K" + format
	}
	fmt.Fprintf(w, format, args...)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
