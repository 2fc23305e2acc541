package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/term"
)

// Think time distributions (RunOptions.ThinkDist).
const (
	ThinkFixed       = "fixed"
	ThinkExponential = "exponential"
)

// ErrInterrupted means the run's context was cancelled before the measured
// window ended; Run still returns the partial result.
var ErrInterrupted = errors.New("run interrupted")

// RunOptions configure Run. The field comments name the matching flag of
// `tandem bench run`.
type RunOptions struct {
	// Workload to run (--workload). Required.
	Workload Workload
	// DSN of the target (--dsn). Required.
	DSN string
	// Mix name (--mix); "" means the workload's default; "custom" takes Weights.
	Mix string
	// Weights for the custom mix (--weights), see ResolveMix.
	Weights string
	// Clients is the number of concurrent clients, each with its own
	// connection (--clients); 0 means 8.
	Clients int
	// Rampup precedes the measured window (--rampup); its transactions are
	// run but not counted.
	Rampup time.Duration
	// Duration of the measured window (--duration). Required.
	Duration time.Duration
	// Think is a pause after each transaction (--think): fixed, or the mean
	// of an exponential distribution (ThinkDist).
	Think time.Duration
	// ThinkDist is ThinkFixed or ThinkExponential (--think-dist); "" means
	// exponential for workloads that implement ThinkTimer, fixed otherwise.
	ThinkDist string
	// Retries bounds how many times a transaction that aborted with 40001
	// (serialization failure) or 40P01 (deadlock) is run again, at once and
	// with the same type, before it counts as aborted (--retries); 0 means
	// never. No retry starts after the measured window has ended. The
	// latency of a retried transaction includes its retries.
	Retries int
	// Uniform keys instead of the workload's skewed default (--uniform).
	Uniform bool
	// Seed of the clients' random sources (--seed); 0 picks one from the
	// clock. The seed used is in the result.
	Seed uint64
	// Simple uses the simple query protocol instead of prepared statements (--simple).
	Simple bool
	// Scale of the loaded database (--subscribers); 0 detects it.
	Scale int
	// Progress receives a live line once per second and the first
	// unexpected errors; nil means none.
	Progress io.Writer
	// Logger for life-cycle messages; nil means slog.Default().
	Logger *slog.Logger
	// TandemVersion is recorded in the result; "" means the build's module version.
	TandemVersion string
	// Tracer, when set, traces every statement of every client connection
	// (`tandem bench record` sets a trace.Recorder).
	Tracer pgx.QueryTracer
	// Wait is how each client waits for the server's answers (--wait):
	// WaitPoller ("" too) parks the client's goroutine in the Go runtime's
	// network poller; WaitThread waits in the kernel on the goroutine's own
	// thread, as a JDBC driver's threads do, and needs more Go Ps
	// (GOMAXPROCS) than clients.
	Wait string
	// OnStart, if set, is called with the run's start (time 0 of the
	// timeline) once every client is connected, e.g. to schedule a fault
	// in the measured window.
	OnStart func(start time.Time)
}

// How clients wait for the server's answers (RunOptions.Wait).
const (
	WaitPoller = "poller"
	WaitThread = "thread"
)

// Run drives the workload against opts.DSN: Clients closed-loop clients, each
// on its own connection, for Rampup and then Duration. Transactions started
// during the ramp-up are run but not counted; MQTh and latencies cover the
// counted transactions started in the measured window. Cancelling ctx stops
// the run early: Run then returns the partial result and an error wrapping
// ErrInterrupted.
func Run(ctx context.Context, opts RunOptions) (*Result, error) {
	r, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

type runner struct {
	opts   RunOptions
	w      Workload
	txs    []TxInfo
	mix    Mix
	picker picker
	cfg    *pgx.ConnConfig
	params ClientParams
	log    *slog.Logger
	errs   errLog

	progressMu sync.Mutex
	liveLine   bool // progress goes to a terminal: rewrite one line

	start, measureStart, end time.Time
}

func newRunner(opts RunOptions) (*runner, error) {
	if opts.Workload == nil {
		return nil, fmt.Errorf("%w: no workload (--workload)", ErrBadOption)
	}
	if opts.Clients == 0 {
		opts.Clients = 8
	}
	switch {
	case opts.Clients < 0:
		return nil, fmt.Errorf("%w: --clients must be > 0 (got %d)", ErrBadOption, opts.Clients)
	case opts.Duration <= 0:
		return nil, fmt.Errorf("%w: --duration must be > 0 (got %s)", ErrBadOption, opts.Duration)
	case opts.Rampup < 0:
		return nil, fmt.Errorf("%w: --rampup must be >= 0 (got %s)", ErrBadOption, opts.Rampup)
	case opts.Retries < 0 || opts.Retries > 1000:
		return nil, fmt.Errorf("%w: --retries must be 0..1000 (got %d)", ErrBadOption, opts.Retries)
	case opts.Think < 0:
		return nil, fmt.Errorf("%w: --think must be >= 0 (got %s)", ErrBadOption, opts.Think)
	case opts.ThinkDist != "" && opts.ThinkDist != ThinkFixed && opts.ThinkDist != ThinkExponential:
		return nil, fmt.Errorf("%w: --think-dist %q (want %s or %s)", ErrBadOption, opts.ThinkDist, ThinkFixed, ThinkExponential)
	case opts.Scale < 0:
		return nil, fmt.Errorf("%w: --%s must be >= 0 (got %d)", ErrBadOption, opts.Workload.ScaleName(), opts.Scale)
	}
	if len(opts.Workload.Transactions()) > 255 {
		return nil, fmt.Errorf("workload %s: more than 255 transaction types", opts.Workload.Name())
	}
	if opts.ThinkDist == "" {
		opts.ThinkDist = ThinkFixed
		if _, ok := opts.Workload.(ThinkTimer); ok {
			opts.ThinkDist = ThinkExponential
		}
	}
	mix, err := ResolveMix(opts.Workload, opts.Mix, opts.Weights)
	if err != nil {
		return nil, err
	}
	cfg, err := parseDSN(opts.DSN)
	if err != nil {
		return nil, err
	}
	if opts.Simple {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	switch opts.Wait {
	case "", WaitPoller:
	case WaitThread:
		if !threadWaitSupported {
			return nil, fmt.Errorf("%w: --wait %s needs Linux", ErrBadOption, WaitThread)
		}
		if p := runtime.GOMAXPROCS(0); p <= opts.Clients {
			return nil, fmt.Errorf("%w: --wait %s needs more Go processors than clients (GOMAXPROCS %d, %d clients): each client keeps one while it waits; raise --procs or use --wait %s", ErrBadOption, WaitThread, p, opts.Clients, WaitPoller)
		}
		cfg.DialFunc = dialThreadWait
	default:
		return nil, fmt.Errorf("%w: --wait %q (want %s or %s)", ErrBadOption, opts.Wait, WaitPoller, WaitThread)
	}
	if opts.Tracer != nil {
		cfg.Tracer = opts.Tracer
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "tandem-bench"
	}
	// pgx's simple protocol needs client_encoding UTF8; a server created
	// with SQL_ASCII would otherwise default to that.
	if _, ok := cfg.RuntimeParams["client_encoding"]; !ok {
		cfg.RuntimeParams["client_encoding"] = "UTF8"
	}
	if opts.Seed == 0 {
		opts.Seed = uint64(time.Now().UnixNano())
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	r := &runner{
		opts:   opts,
		w:      opts.Workload,
		txs:    opts.Workload.Transactions(),
		mix:    mix,
		picker: newPicker(mix.Weights),
		cfg:    cfg,
		log:    log,
	}
	if f, ok := opts.Progress.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.liveLine = true
	}
	return r, nil
}

// clientState is one client's connection, workload client and random source.
type clientState struct {
	id  int
	rng *rand.Rand
	rec *recorder
	cl  Client
	// mu guards conn against interrupt; the client goroutine, the only
	// writer, reads it without the lock.
	mu   sync.Mutex
	conn *pgx.Conn
	// lost: the client's connection broke at least once (it reconnected).
	lost bool
}

// interrupt closes the client's socket under a running query: pgx then fails
// the query at once and marks the connection closed.
func (cs *clientState) interrupt() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.conn != nil {
		if nc := cs.conn.PgConn().Conn(); nc != nil {
			_ = nc.Close()
		}
	}
}

func (r *runner) connect(ctx context.Context, cs *clientState) error {
	conn, err := pgx.ConnectConfig(ctx, r.cfg.Copy())
	if err != nil {
		return fmt.Errorf("client %d: connect to %s: %w", cs.id, RedactDSN(r.opts.DSN), err)
	}
	p := r.params
	p.Client, p.Clients = cs.id, r.opts.Clients
	cl, err := r.w.NewClient(ctx, conn, cs.rng, p)
	if err != nil {
		conn.Close(context.Background())
		return fmt.Errorf("client %d: %w", cs.id, err)
	}
	cs.mu.Lock()
	cs.conn, cs.cl = conn, cl
	cs.mu.Unlock()
	return nil
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	opts := r.opts
	setupCfg := r.cfg.Copy()
	setupCfg.Tracer = nil // the driver's own queries are not the workload's
	setup, err := pgx.ConnectConfig(ctx, setupCfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", RedactDSN(opts.DSN), err)
	}
	serverVersion := setup.PgConn().ParameterStatus("server_version")
	scale := opts.Scale
	if scale == 0 {
		scale, err = r.w.DetectScale(ctx, setup)
		if err != nil {
			setup.Close(context.Background())
			return nil, fmt.Errorf("detect --%s (is the %s workload loaded? run `tandem bench load`): %w", r.w.ScaleName(), r.w.Name(), err)
		}
		if scale == 0 {
			setup.Close(context.Background())
			return nil, fmt.Errorf("%w: %s has no %s; run `tandem bench load --workload %s` first", ErrNotLoaded, RedactDSN(opts.DSN), r.w.ScaleName(), r.w.Name())
		}
	}
	setup.Close(context.Background())
	r.params = ClientParams{Scale: scale, Uniform: opts.Uniform, Simple: opts.Simple}

	// Connect every client before the clock starts.
	clients := make([]*clientState, opts.Clients)
	recs := make([]*recorder, opts.Clients)
	var wg sync.WaitGroup
	errs := make([]error, opts.Clients)
	for i := range clients {
		recs[i] = &recorder{buf: make([]record, 0, 1024)}
		clients[i] = &clientState{id: i, rng: rand.New(rand.NewPCG(opts.Seed, uint64(i)+1)), rec: recs[i]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.connect(ctx, clients[i])
		}()
	}
	wg.Wait()
	defer func() {
		for _, cs := range clients {
			if cs.conn != nil {
				cs.conn.Close(context.Background())
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	res := &Result{
		Workload:      r.w.Name(),
		Mix:           r.mix.Name,
		Weights:       map[string]float64{},
		Clients:       opts.Clients,
		RampupS:       opts.Rampup.Seconds(),
		DurationS:     opts.Duration.Seconds(),
		ThinkMs:       float64(opts.Think) / float64(time.Millisecond),
		ThinkDist:     opts.ThinkDist,
		Retries:       opts.Retries,
		Scale:         scale,
		ScaleName:     r.w.ScaleName(),
		Uniform:       opts.Uniform,
		Seed:          opts.Seed,
		Protocol:      "extended (prepared statements)",
		Target:        RedactDSN(opts.DSN),
		TandemVersion: opts.TandemVersion,
		Environment:   environment(serverVersion),
	}
	if opts.Simple {
		res.Protocol = "simple"
	}
	res.Environment.Wait = WaitPoller
	if opts.Wait != "" {
		res.Environment.Wait = opts.Wait
	}
	if res.TandemVersion == "" {
		res.TandemVersion = buildVersion()
	}
	for i, t := range r.txs {
		res.TransactionOrder = append(res.TransactionOrder, t.Name)
		res.Weights[t.Name] = r.mix.Weights[i]
	}

	col := newCollector(r.txs, recs, opts.Rampup)
	r.start = time.Now()
	r.measureStart = r.start.Add(opts.Rampup)
	r.end = r.measureStart.Add(opts.Duration)
	res.StartedAt = r.start.UTC().Truncate(time.Second)
	if opts.OnStart != nil {
		opts.OnStart(r.start)
	}
	r.log.Debug("bench run starting", "workload", res.Workload, "mix", res.Mix, "clients", opts.Clients,
		"rampup", opts.Rampup, "duration", opts.Duration, res.ScaleName, scale, "target", res.Target)

	// Transactions run with context.Background(): pgx then sets up no
	// per-query context watcher, which is a measurable share of a client's
	// CPU. Cancelling ctx closes the clients' sockets instead, which fails
	// the queries in flight just as promptly.
	runCtx, cancelClients := context.WithCancel(ctx)
	defer cancelClients()
	stopInterrupt := context.AfterFunc(runCtx, func() {
		for _, cs := range clients {
			cs.interrupt()
		}
	})
	defer stopInterrupt()
	var cwg sync.WaitGroup
	for _, cs := range clients {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			r.clientLoop(runCtx, cs)
		}()
	}
	clientsDone := make(chan struct{})
	go func() {
		cwg.Wait()
		close(clientsDone)
	}()

	ticker := time.NewTicker(time.Second)
	last := r.start
loop:
	for {
		select {
		case now := <-ticker.C:
			col.collect()
			p := col.point(now.Sub(r.start), now.Sub(last))
			last = now
			r.printProgress(p)
		case <-clientsDone:
			break loop
		}
	}
	ticker.Stop()
	finished := time.Now()
	col.collect()
	if iv := finished.Sub(last); iv > 50*time.Millisecond || len(col.timeline) == 0 {
		col.point(finished.Sub(r.start), iv)
	}
	if r.liveLine && opts.Progress != nil {
		fmt.Fprintln(opts.Progress)
	}

	measuredEnd := r.end
	interrupted := ctx.Err() != nil && finished.Before(r.end)
	if interrupted {
		measuredEnd = finished
	}
	measured := measuredEnd.Sub(r.measureStart).Seconds()
	if measured < 0 {
		measured = 0
	}
	res.MeasuredS = round3(measured)
	res.FinishedAt = finished.UTC().Truncate(time.Second)
	res.Interrupted = interrupted
	for _, cs := range clients {
		if cs.lost {
			res.ClientsDisconnected++
		}
	}
	r.fill(res, col, measured)
	if interrupted {
		return res, fmt.Errorf("%w after %.1fs (measured %.1fs of %s): %w", ErrInterrupted,
			finished.Sub(r.start).Seconds(), measured, opts.Duration, context.Cause(ctx))
	}
	return res, nil
}

// fill computes the result's statistics from the collector.
func (r *runner) fill(res *Result, col *collector, measured float64) {
	var all outcomeCounts
	var allRetries int64
	for i := range r.txs {
		for o := range numOutcomes {
			all[o] += col.counts[i][o]
		}
		allRetries += col.retries[i]
	}
	started := all.started()
	res.Transactions = map[string]*TxResult{}
	for i, t := range r.txs {
		tr := txResult(col.counts[i], col.retries[i], col.hist[i], started, measured)
		res.Transactions[t.Name] = &tr
	}
	res.Totals = txResult(all, allRetries, col.total, started, measured)
	var upAborts int64
	for _, t := range r.txs {
		if !t.ReadOnly {
			tr := res.Transactions[t.Name]
			res.UpdateAttempts += tr.Attempts
			upAborts += tr.Aborts
		}
	}
	if res.UpdateAttempts > 0 {
		res.UpdateAbortRate = round6(float64(upAborts) / float64(res.UpdateAttempts))
	}
	if measured > 0 {
		res.MQTh = round3(float64(all.counted()) / measured)
		res.TotalTPS = round3(float64(started) / measured)
		res.CompletedTPS = round3(float64(all.completed()) / measured)
	}
	if n := col.done.TotalCount(); n > 0 {
		res.CompletedMeanMs = round3(col.done.Mean() / 1000)
		res.CompletedCostMs = round3((col.done.Mean()*float64(n) + float64(col.abortedUs)) / float64(n) / 1000)
	}
	if col.updDone.TotalCount() > 0 {
		res.UpdateMeanMs = round3(col.updDone.Mean() / 1000)
	}
	if col.readDone.TotalCount() > 0 {
		res.ReadMeanMs = round3(col.readDone.Mean() / 1000)
	}
	if pm, ok := r.w.(PerMinuteReporter); ok {
		t, name := pm.PerMinute()
		if int(t) >= 0 && int(t) < len(r.txs) {
			res.PerMinute = &PerMinute{Name: name, Transaction: r.txs[t].Name}
			if measured > 0 {
				res.PerMinute.Value = round3(float64(col.counts[t].counted()) * 60 / measured)
			}
		}
	}
	res.Timeline = col.timeline
	r.errs.mu.Lock()
	if len(r.errs.byState) > 0 {
		res.ErrorsBySQLState = r.errs.byState
	}
	res.FirstErrors = r.errs.first
	r.errs.mu.Unlock()
}

// clientLoop runs transactions back to back until the measured window ends.
func (r *runner) clientLoop(ctx context.Context, cs *clientState) {
	var timer *time.Timer
	if r.opts.Think > 0 {
		timer = time.NewTimer(time.Hour)
		timer.Stop()
	}
	for {
		now := time.Now()
		if !now.Before(r.end) || ctx.Err() != nil {
			return
		}
		t := r.picker.pick(cs.rng)
		out, err := cs.cl.Run(context.Background(), t)
		var retries uint16
		for out == Aborted && int(retries) < r.opts.Retries && Retryable(err) &&
			!cs.conn.IsClosed() && ctx.Err() == nil && time.Now().Before(r.end) {
			r.errs.note(r.txs[t], out, err)
			retries++
			out, err = cs.cl.Run(context.Background(), t)
		}
		lat := time.Since(now)
		if ctx.Err() != nil {
			return // interrupted mid-transaction: its outcome means nothing
		}
		out = settle(out, err)
		cs.rec.add(record{lat: lat, typ: t, out: out, measured: !now.Before(r.measureStart), retries: retries})
		if err != nil {
			if msg := r.errs.note(r.txs[t], out, err); msg != "" {
				r.reportError(cs.id, msg)
			}
		}
		if cs.conn.IsClosed() {
			if ctx.Err() != nil {
				return
			}
			cs.lost = true
			if !r.reconnect(ctx, cs) {
				return
			}
		}
		if timer != nil {
			d := min(thinkTime(r.opts.Think, r.opts.ThinkDist, cs.rng), time.Until(r.end))
			if d <= 0 {
				return
			}
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
	}
}

// thinkTime draws one think time: mean itself, or from the exponential
// distribution of that mean.
func thinkTime(mean time.Duration, dist string, rng *rand.Rand) time.Duration {
	if dist == ThinkExponential {
		return time.Duration(rng.ExpFloat64() * float64(mean))
	}
	return mean
}

// reconnect replaces a client's broken connection, retrying with backoff
// until it succeeds or the run ends.
func (r *runner) reconnect(ctx context.Context, cs *clientState) bool {
	backoff := 50 * time.Millisecond
	for {
		if ctx.Err() != nil || !time.Now().Before(r.end) {
			return false
		}
		err := r.connect(ctx, cs)
		if err == nil {
			r.log.Info("bench client reconnected", "client", cs.id)
			return true
		}
		// Debug: during a failover every client fails here a few times;
		// the summary counts the clients that had to reconnect.
		r.log.Debug("bench client reconnect failed", "client", cs.id, "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return false
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (r *runner) reportError(client int, msg string) {
	if r.opts.Progress == nil {
		r.log.Error("unexpected error", "client", client, "err", msg)
		return
	}
	r.progressMu.Lock()
	defer r.progressMu.Unlock()
	if r.liveLine {
		fmt.Fprint(r.opts.Progress, "\r\033[K")
	}
	fmt.Fprintf(r.opts.Progress, "UNEXPECTED ERROR (client %d): %s\n", client, msg)
}

func (r *runner) printProgress(p TimelinePoint) {
	w := r.opts.Progress
	if w == nil {
		return
	}
	phase := "measure"
	if !p.Measured {
		phase = "ramp-up"
	}
	total := r.opts.Rampup + r.opts.Duration
	r.progressMu.Lock()
	defer r.progressMu.Unlock()
	if r.liveLine {
		fmt.Fprint(w, "\r\033[K")
	}
	fmt.Fprintf(w, "%5.0fs/%.0fs %-7s %9.1f tps  rolled back %-5d aborted %-5d errors %d",
		p.T, total.Seconds(), phase, p.TPS, p.RolledBack, p.Aborted, p.Errors)
	if !r.liveLine {
		fmt.Fprintln(w)
	}
}

// Environment describes where a run happened.
type Environment struct {
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GoMaxProcs int    `json:"gomaxprocs"`
	// Wait is how the clients waited for answers (RunOptions.Wait).
	Wait          string `json:"wait,omitempty"`
	Hostname      string `json:"hostname"`
	ServerVersion string `json:"server_version,omitempty"`
}

func environment(serverVersion string) Environment {
	host, _ := os.Hostname()
	return Environment{
		GoVersion:     runtime.Version(),
		OS:            runtime.GOOS,
		Arch:          runtime.GOARCH,
		CPUs:          runtime.NumCPU(),
		GoMaxProcs:    runtime.GOMAXPROCS(0),
		Hostname:      host,
		ServerVersion: serverVersion,
	}
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
