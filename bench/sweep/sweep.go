package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/bench"
	_ "github.com/tandemdb/tandem/bench/workloads/tm1" // registers the tm1 workload
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
)

// Options of a sweep. The field comments name the flag of `tandem bench sweep`.
type Options struct {
	// Subscribers is TM1's P (--subscribers), or with another Workload its
	// scale (--scale: TPC-C's warehouses, Epinions' scale).
	Subscribers int
	// Workload (--workload) is the bench workload every configuration
	// runs: tm1 ("" too), tpcc or epinions (the seed001 suite's).
	Workload string
	// Clients (--clients), Rampup (--rampup), Duration (--duration) of each run.
	Clients  int
	Rampup   time.Duration
	Duration time.Duration
	// Mixes to run on each configuration, in order (--mixes).
	Mixes []string
	// Configs to run (--configs), see SelectConfigs; with Suite, the
	// suite's (SelectSuite).
	Configs []Config
	// Suite (--suite) names the suite the configurations come from; the
	// report then holds its tables (SuiteSeed001: Report.Seed001).
	Suite string
	// Rounds (--rounds): with more than one, every round runs every
	// configuration (odd rounds in order, even rounds in reverse, so slow
	// drift of the machine hits all alike) and the table shows medians.
	Rounds int
	// Lab (--lab), when set, runs every configuration on emulated hosts
	// (cgroup CPU quotas, as tandem bench scaleout): each node, or each
	// PostgreSQL server of the peers, in a host of CPUPerNode cores ("n1",
	// "n2"), tandem's router, HAProxy or pgpool-II in one of CPURouter
	// ("router"), and the sweep's workload client in one of CPUClient
	// ("client"), so a second server brings its own CPU as a second
	// machine would. CPU only: everything stays on 127.0.0.1.
	Lab *config.Lab
	// Unix (--unix): every system's clients connect over a Unix socket
	// beside its front door (PostgreSQL's own, HAProxy's, pgpool-II's,
	// tandem's unix_socket_dir) instead of TCP loopback.
	Unix bool
	// ReadConsistency (--read-consistency) is the router's read_consistency
	// in every tandem configuration with a router ("" = its default,
	// session: a read after a write waits until its replica has the write,
	// which neither pgpool-II nor HAProxy offers; eventual is their
	// guarantee).
	ReadConsistency string
	// Interleave (--interleave) keeps every system of a round running
	// until the round ends instead of stopping each before the next
	// starts, and runs the configurations of one safeness level side by
	// side (byLevel), so the systems compared at a level are measured
	// seconds apart rather than minutes (a system shared by several, the
	// PostgreSQL pair's levels or tandem's physical pair's, switches
	// between them each time). On a machine whose speed drifts within
	// minutes this is what makes their ratio trustworthy. While one is
	// measured, the others' tandem processes wait stopped (SIGSTOP: an
	// idle node's own polling would be on the machine during the others'
	// windows); PostgreSQL servers stay up, idle. With Lab the systems
	// share one set of emulated hosts (each system's primary server in
	// host n1, and so on), as software installed side by side on the
	// same machines: an idle one costs its host next to nothing. Not
	// with the lab's network namespaces (a host has one address).
	Interleave bool
	// sharedLab is the emulated hosts every system of an interleaved
	// sweep runs in (Interleave with Lab), opened once by Run.
	sharedLab *lab.Lab
	// Exe is the tandem binary that runs the nodes (default: this executable).
	Exe string
	// PGBinDir holds PostgreSQL's binaries ("" = PATH, /usr/lib/postgresql/*/bin).
	PGBinDir string
	// TempDir is where the sweep's temporary directory goes ("" = os.TempDir()).
	TempDir string
	// FailedLogs receives, for each configuration that failed or saw
	// unexpected errors, a copy of its processes' logs (in a directory
	// named after the round and configuration) before the temporary
	// directory is removed; "" keeps none.
	FailedLogs string
	// Progress receives one line per configuration; nil means none.
	Progress io.Writer
	// Logger for life-cycle messages; nil means slog.Default().
	Logger *slog.Logger
	// TandemVersion is recorded in the report.
	TandemVersion string
}

func (o *Options) validate() error {
	switch {
	case o.Subscribers <= 0 && o.workload() == "tm1":
		return fmt.Errorf("%w: --subscribers must be > 0 (got %d)", ErrBadOption, o.Subscribers)
	case o.Subscribers <= 0:
		return fmt.Errorf("%w: --scale must be > 0 (got %d)", ErrBadOption, o.Subscribers)
	case o.Clients <= 0:
		return fmt.Errorf("%w: --clients must be > 0 (got %d)", ErrBadOption, o.Clients)
	case o.Rampup < 0:
		return fmt.Errorf("%w: --rampup must be >= 0 (got %s)", ErrBadOption, o.Rampup)
	case o.Duration <= 0:
		return fmt.Errorf("%w: --duration must be > 0 (got %s)", ErrBadOption, o.Duration)
	case o.Rounds <= 0:
		return fmt.Errorf("%w: --rounds must be >= 1 (got %d)", ErrBadOption, o.Rounds)
	case o.ReadConsistency != "" && !slices.Contains(config.ReadConsistencies, o.ReadConsistency):
		return fmt.Errorf("%w: --read-consistency %q: use %s", ErrBadOption, o.ReadConsistency, strings.Join(config.ReadConsistencies, ", "))
	case len(o.Mixes) == 0:
		return fmt.Errorf("%w: --mixes: no mix", ErrBadOption)
	case len(o.Configs) == 0:
		return fmt.Errorf("%w: --configs: no configuration", ErrBadOption)
	}
	if o.Interleave && o.Lab != nil && o.Lab.NetnsOn() {
		return fmt.Errorf("%w: --interleave keeps several systems running at once in the same emulated hosts, and with netns each host has one address: use --lab without netns, or no --interleave", ErrBadOption)
	}
	if o.Lab != nil {
		if o.Lab.NetnsOn() {
			return fmt.Errorf("%w: --lab: the sweep runs PostgreSQL's servers and proxies on 127.0.0.1; it emulates CPU only (cpu=, router=, client=): leave out netns and net_* (network emulation: tandem bench scaleout)", ErrBadOption)
		}
		if err := lab.Check(*o.Lab); err != nil {
			return fmt.Errorf("%w: --lab: %w", ErrBadOption, err)
		}
	}
	for _, c := range o.Configs {
		if c.kind == kindPGPairHAProxy {
			if _, err := FindHAProxy(); err != nil {
				return fmt.Errorf("%w: --configs %s needs HAProxy: %w; or leave the pg-pair-haproxy-* configurations out", ErrBadOption, c.Name, err)
			}
			break
		}
	}
	for _, c := range o.Configs {
		if c.kind == kindPGPairPgpool {
			if _, err := FindPgpool(); err != nil {
				return fmt.Errorf("%w: --configs %s needs pgpool-II: %w; or leave the pg-pair-pgpool-* configurations out", ErrBadOption, c.Name, err)
			}
			break
		}
	}
	for _, c := range o.Configs {
		if c.Family == FamilyPostgres || c.Family == FamilyTandemPG {
			if _, err := postgres.FindBinDir(o.PGBinDir); err != nil {
				return fmt.Errorf("%w: --configs %s needs PostgreSQL (%w); leave the pg-* configurations out", ErrBadOption, c.Name, err)
			}
			break
		}
	}
	return nil
}

// system is a started, loaded configuration.
type system interface {
	dsn() string
	// use switches the system to the configuration (PostgreSQL's
	// synchronous_commit) and waits until it is settled.
	use(ctx context.Context, c Config) error
	// settled waits until replication has caught up (after the load, and
	// before each mix, so no run pays for the previous one's backlog).
	settled(ctx context.Context) error
	// standbyLag is how far the standby's apply is behind the primary,
	// in the unit named; ok is false without a standby.
	standbyLag(ctx context.Context) (lag int64, unit string, ok bool)
	// exited reports a process of the system that stopped running.
	exited() error
	// logDir is where the system's processes log.
	logDir() string
	stop()
}

// pauser is a system whose own processes can wait, stopped, while an
// interleaved round measures another (Options.Interleave).
type pauser interface {
	pause()
	resume()
}

// step is one configuration in one round.
type step struct {
	cfg   Config
	round int
}

// plan orders the steps: round after round, odd rounds in configuration
// order and even rounds reversed (groups sharing a setup stay contiguous).
func plan(configs []Config, rounds int) []step {
	var out []step
	for r := 1; r <= rounds; r++ {
		cs := slices.Clone(configs)
		if r%2 == 0 {
			slices.Reverse(cs)
		}
		for _, c := range cs {
			out = append(out, step{cfg: c, round: r})
		}
	}
	return out
}

// byLevel orders configurations for an interleaved sweep: those of one
// safeness level side by side (levels in config.SafenessLevels' order,
// configurations without one first), each level's in the usual order, so
// that the systems compared at a level are measured one after the other.
func byLevel(cs []Config) []Config {
	out := slices.Clone(cs)
	rank := func(c Config) int { return slices.Index(config.SafenessLevels, c.Level) }
	slices.SortStableFunc(out, func(a, b Config) int { return rank(a) - rank(b) })
	return out
}

// Run runs the sweep and builds its report. Cancelling ctx (Ctrl-C) stops
// the run in progress; everything started is stopped and removed, and the
// report of what was measured is returned with an error wrapping
// bench.ErrInterrupted. A configuration that fails to start or run is
// recorded in the report and the sweep goes on; the error then says how
// many runs failed.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Rounds == 0 {
		o.Rounds = 1
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if o.Lab != nil && o.Progress != nil {
		fmt.Fprintf(o.Progress, "emulated hosts (%s): each node or server its own CPU quota, the router, HAProxy or pgpool-II theirs, the client its own (results are emulated)\n", o.Lab.String())
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the tandem binary: %w", err)
		}
		o.Exe = exe
	}
	w, err := bench.Lookup(o.workload())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	root, err := os.MkdirTemp(o.TempDir, "tandem-sweep-")
	if err != nil {
		return nil, fmt.Errorf("create the sweep's temporary directory: %w", err)
	}
	defer os.RemoveAll(root)

	host, _ := os.Hostname()
	env := Environment{Hostname: host, CPUs: runtime.NumCPU(), GoMaxProcs: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(), LoadStart: loadAvg(), Tandem: o.TandemVersion}
	params := Params{Subscribers: o.Subscribers, Clients: o.Clients, RampupS: o.Rampup.Seconds(), DurationS: o.Duration.Seconds(),
		Mixes: o.Mixes, Rounds: o.Rounds, FlushInterval: flushInterval, Suite: o.Suite, Unix: o.Unix, ReadConsistency: o.ReadConsistency}
	if o.ReadConsistency != "" {
		cs := make([]Config, len(o.Configs))
		for i, c := range o.Configs {
			if c.Policy != "" {
				c.ReadConsistency = o.ReadConsistency
			}
			cs[i] = c
		}
		o.Configs = cs
	}
	if o.workload() != "tm1" {
		params.Workload, params.ScaleName = o.workload(), w.ScaleName()
	}
	if o.Lab != nil {
		params.Lab = o.Lab.String()
	}
	started := time.Now()
	var runs []Measurement
	if o.Interleave {
		o.Configs = byLevel(o.Configs)
		if o.Lab != nil {
			lb, err := o.openLab(log)
			if err != nil {
				return nil, err
			}
			o.sharedLab = lb
			defer func() {
				if err := lb.Close(); err != nil {
					log.Warn("could not remove the emulated hosts", "err", err)
				}
			}()
		}
	}
	steps := plan(o.Configs, o.Rounds)

	// The running systems by setup: one at a time, or with Interleave
	// every one of the round's.
	type liveSys struct {
		sys   system
		lab   *lab.Lab // its emulated hosts (Options.Lab)
		round int
		dir   string
	}
	live := map[string]*liveSys{}
	closeOne := func(key string) {
		l := live[key]
		if l == nil {
			return
		}
		delete(live, key)
		if p, ok := l.sys.(pauser); ok {
			p.resume() // a stopped process cannot shut down cleanly
		}
		l.sys.stop()
		if l.lab != nil && l.lab != o.sharedLab {
			if err := l.lab.Close(); err != nil {
				log.Warn("could not remove the configuration's emulated hosts", "err", err)
			}
		}
		_ = os.RemoveAll(l.dir)
	}
	closeAll := func() {
		for k := range live {
			closeOne(k)
		}
	}
	defer closeAll()
	failAll := func(c Config, round int, err error) {
		for _, mix := range o.Mixes {
			runs = append(runs, Measurement{Config: c.Name, Mix: mix, Round: round, Err: err.Error(), StartedAt: time.Now().UTC().Truncate(time.Second)})
		}
	}

	interrupted := false
	setupFailed := map[string]error{}
	for i, st := range steps {
		if ctx.Err() != nil {
			interrupted = true
			break
		}
		c := st.cfg
		t0 := time.Now()
		var loadTook time.Duration
		setupID := fmt.Sprintf("r%d-%s", st.round, c.setup())
		if err := setupFailed[setupID]; err != nil {
			// The shared setup already failed in this round: do not retry.
			failAll(c, st.round, err)
			o.progress(i, len(steps), st, nil, err, 0, time.Since(t0))
			continue
		}
		key := c.setup()
		for k, l := range live {
			// A system serves only its round; without Interleave only
			// the current configuration's runs.
			if l.round != st.round || (!o.Interleave && k != key) {
				closeOne(k)
			}
		}
		cur := live[key]
		if cur == nil {
			dir := filepath.Join(root, setupID)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("create %s: %w", dir, err)
			}
			s, lb, lt, err := o.startAndLoad(ctx, c, dir, w, log)
			if err != nil {
				if ctx.Err() != nil {
					interrupted = true
					break
				}
				log.Error("configuration failed to start", "config", c.Name, "round", st.round, "err", err)
				o.keepLogs(dir, setupID, c.Name, log)
				setupFailed[setupID] = err
				failAll(c, st.round, err)
				o.progress(i, len(steps), st, nil, err, 0, time.Since(t0))
				_ = os.RemoveAll(dir)
				continue
			}
			if ps, ok := s.(*pgSystem); ok {
				params.PostgreSQL = ps.version
			}
			cur = &liveSys{sys: s, lab: lb, round: st.round, dir: dir}
			live[key] = cur
			loadTook = lt
		}
		if o.Interleave {
			// The others wait, stopped, while this one is measured.
			for k, l := range live {
				if p, ok := l.sys.(pauser); ok {
					if k == key {
						p.resume()
					} else {
						p.pause()
					}
				}
			}
		}
		sys, sysLab := cur.sys, cur.lab
		if err := sys.use(ctx, c); err != nil {
			if ctx.Err() != nil {
				interrupted = true
				break
			}
			failAll(c, st.round, err)
			o.progress(i, len(steps), st, nil, err, loadTook, time.Since(t0))
			o.keepLogs(sys.logDir(), setupID, c.Name, log)
			closeOne(key)
			continue
		}
		var mine []Measurement
		for k, mix := range o.Mixes {
			m := o.runMix(ctx, w, sys, sysLab, c, mix, st.round, log)
			if ctx.Err() != nil {
				// A run cut short measures nothing comparable: leave it out.
				interrupted = true
				break
			}
			mine = append(mine, m)
			if err := sys.exited(); err != nil {
				// The other mixes cannot run on a crashed system.
				for _, rest := range o.Mixes[k+1:] {
					mine = append(mine, Measurement{Config: c.Name, Mix: rest, Round: st.round, StartedAt: time.Now().UTC().Truncate(time.Second),
						Err: "not run: " + err.Error()})
				}
				break
			}
		}
		runs = append(runs, mine...)
		if interrupted {
			break
		}
		if troubled(mine) {
			o.keepLogs(sys.logDir(), setupID, c.Name, log)
			if sys.exited() != nil {
				// A crashed system serves no further configuration.
				closeOne(key)
			}
		}
		o.progress(i, len(steps), st, mine, nil, loadTook, time.Since(t0))
	}
	closeAll()

	env.LoadEnd = loadAvg()
	rep := Build(params, env, o.Configs, runs)
	rep.StartedAt, rep.FinishedAt = started.UTC().Truncate(time.Second), time.Now().UTC().Truncate(time.Second)
	rep.Interrupted = interrupted
	if interrupted {
		return rep, fmt.Errorf("sweep: %w: %w", bench.ErrInterrupted, context.Cause(ctx))
	}
	if n := rep.Failed(); n > 0 {
		return rep, fmt.Errorf("sweep: %d of %d runs failed (see the table)", n, len(runs))
	}
	return rep, nil
}

// startAndLoad starts the configuration's system (on its emulated hosts
// with Options.Lab), loads the workload into it and waits until it has
// settled; then, with a lab, this process joins the client's host.
func (o *Options) startAndLoad(ctx context.Context, c Config, dir string, w bench.Workload, log *slog.Logger) (system, *lab.Lab, time.Duration, error) {
	lb := o.sharedLab
	if lb == nil {
		var err error
		if lb, err = o.openLab(log); err != nil {
			return nil, nil, 0, err
		}
	}
	var s system
	fail := func(err error) (system, *lab.Lab, time.Duration, error) {
		if s != nil {
			s.stop()
		}
		if lb != nil && lb != o.sharedLab {
			_ = lb.Close()
		}
		return nil, nil, 0, err
	}
	switch c.kind {
	case kindTandem:
		ts, err := startTandem(ctx, c, dir, o.Exe, o.Unix, lb, log)
		if err != nil {
			return fail(err)
		}
		s = ts
	default:
		ps, err := startPG(ctx, c, dir, o.PGBinDir, log)
		if err != nil {
			return fail(err)
		}
		ps.unix = o.Unix
		s = ps
		if lb != nil {
			if err := placePG(lb, ps); err != nil {
				return fail(fmt.Errorf("configuration %s: %w", c.Name, err))
			}
		}
	}
	t0 := time.Now()
	if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: s.dsn(), Scale: o.Subscribers, Drop: true, Logger: log}); err != nil {
		return fail(fmt.Errorf("configuration %s: load %s (scale %d): %w", c.Name, workloadTitle(w.Name()), o.Subscribers, err))
	}
	if err := s.settled(ctx); err != nil {
		return fail(err)
	}
	if lb != nil {
		if err := o.joinClient(lb); err != nil {
			return fail(err)
		}
	}
	return s, lb, time.Since(t0), nil
}

// runMix runs one mix and turns its result into a measurement.
func (o *Options) runMix(ctx context.Context, w bench.Workload, s system, lb *lab.Lab, c Config, mix string, round int, log *slog.Logger) Measurement {
	m := Measurement{Config: c.Name, Mix: mix, Round: round}
	if err := s.exited(); err != nil {
		m.Err = err.Error()
		return m
	}
	if err := s.settled(ctx); err != nil {
		m.Err = fmt.Sprintf("before %s: %v", mix, err)
		return m
	}
	var proxiedBefore, routedBefore, selectsBefore map[string]int64
	if ps, ok := s.(*pgSystem); ok {
		proxiedBefore, _ = ps.proxied()
		selectsBefore, _ = ps.selects(ctx)
	}
	if ts, ok := s.(*tandemSystem); ok {
		routedBefore, _ = ts.routed(ctx)
	}
	m.LoadAvg, m.StartedAt = loadAvg(), time.Now().UTC().Truncate(time.Second)
	usageBefore, runStart := hostUsage(lb), time.Now()
	// A process of the system that dies ends the run at once.
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-watchDone:
				return
			case <-t.C:
				if err := s.exited(); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	res, err := bench.Run(runCtx, bench.RunOptions{
		Workload: w, DSN: s.dsn(), Mix: mix, Clients: o.Clients, Rampup: o.Rampup, Duration: o.Duration,
		Scale: o.Subscribers, Logger: log, TandemVersion: o.TandemVersion,
	})
	if xerr := s.exited(); xerr != nil && ctx.Err() == nil {
		m.Err = xerr.Error()
		return m
	}
	if err != nil {
		m.Err = fmt.Sprintf("run %s: %v", mix, err)
		return m
	}
	m.HostCPU = hostCores(usageBefore, hostUsage(lb), time.Since(runStart))
	m.MQTh, m.TotalTPS, m.MeasuredS = res.MQTh, res.TotalTPS, res.MeasuredS
	m.P50Ms, m.P99Ms = res.Totals.P50Ms, res.Totals.P99Ms
	// An unknown outcome (08007) has no business in a run without
	// failures: counted with the errors here.
	m.Aborted, m.Errors = res.Totals.Aborted, res.Totals.Errors+res.Totals.Unknown
	if len(res.FirstErrors) > 0 {
		m.FirstError = res.FirstErrors[0]
	}
	if ps, ok := s.(*pgSystem); ok && proxiedBefore != nil {
		if after, ok := ps.proxied(); ok {
			m.Proxied = map[string]int64{}
			for name, n := range after {
				m.Proxied[name] = n - proxiedBefore[name]
			}
		}
	}
	if ps, ok := s.(*pgSystem); ok && selectsBefore != nil {
		if after, ok := ps.selects(ctx); ok {
			m.Selects = map[string]int64{}
			for id, n := range after {
				m.Selects[id] = n - selectsBefore[id]
			}
		}
	}
	if ts, ok := s.(*tandemSystem); ok && routedBefore != nil {
		if after, ok := ts.routed(ctx); ok {
			m.Routed = map[string]int64{}
			for id, n := range after {
				m.Routed[id] = n - routedBefore[id]
			}
		}
	}
	if lag, unit, ok := s.standbyLag(ctx); ok {
		m.StandbyLag, m.StandbyLagUnit = lag, unit
	}
	if ts, ok := s.(*tandemSystem); ok && ts.degraded(ctx) {
		m.Err = "the primary degraded to 1-safe during the run (no standby acknowledgement within ack_timeout)"
	}
	return m
}

// workload is the workload's name ("" is tm1).
func (o *Options) workload() string {
	if o.Workload == "" {
		return "tm1"
	}
	return o.Workload
}

// progress writes the configuration's line.
func (o *Options) progress(i, n int, st step, ms []Measurement, err error, load, took time.Duration) {
	if o.Progress == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%*d/%d] ", len(strconv.Itoa(n)), i+1, n)
	if o.Rounds > 1 {
		fmt.Fprintf(&b, "round %d ", st.round)
	}
	fmt.Fprintf(&b, "%-34s", st.cfg.Name)
	if err != nil {
		fmt.Fprintf(&b, " FAILED: %v", err)
	}
	la := 0.0
	if len(ms) == 0 {
		la = loadAvg()
	}
	for i, m := range ms {
		if i > 0 {
			b.WriteString(",")
		}
		if m.Err != "" {
			fmt.Fprintf(&b, " %s FAILED (%s)", mixTitle(m.Mix), m.Err)
			continue
		}
		fmt.Fprintf(&b, " %s %8.1f MQTh", mixTitle(m.Mix), m.MQTh)
		if m.Errors > 0 {
			fmt.Fprintf(&b, " (%d unexpected errors)", m.Errors)
		}
		if m.StandbyLag > 0 {
			fmt.Fprintf(&b, " (standby %d %s behind)", m.StandbyLag, m.StandbyLagUnit)
		}
		la = max(la, m.LoadAvg)
	}
	if load > 0 {
		fmt.Fprintf(&b, "; %s load %s", workloadTitle(o.workload()), load.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "; took %s, loadavg %.1f\n", took.Round(time.Second), la)
	_, _ = io.WriteString(o.Progress, b.String())
}

// troubled tells whether a run failed or saw unexpected errors.
func troubled(ms []Measurement) bool {
	for _, m := range ms {
		if m.Err != "" || m.Errors > 0 {
			return true
		}
	}
	return false
}

// keepLogs copies the *.log files under dir into FailedLogs/r<round>-<config>.
func (o *Options) keepLogs(dir, setupID, config string, log *slog.Logger) {
	if o.FailedLogs == "" {
		return
	}
	name := setupID
	if !strings.HasSuffix(setupID, "-"+config) {
		name += "-" + config // a shared PostgreSQL setup: say which level
	}
	dst := filepath.Join(o.FailedLogs, name)
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".log") {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		target := filepath.Join(dst, strings.ReplaceAll(rel, string(filepath.Separator), "_"))
		if err := os.MkdirAll(dst, 0o755); err == nil && os.WriteFile(target, b, 0o644) == nil {
			n++
		}
		return nil
	})
	if n > 0 {
		log.Warn("kept the logs of a configuration that failed", "config", config, "dir", dst, "files", n)
	}
}

// loadAvg is the 1-minute load average (0 where /proc/loadavg is missing).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// IsInterrupted tells whether err comes from a cancelled sweep.
func IsInterrupted(err error) bool { return errors.Is(err, bench.ErrInterrupted) }
