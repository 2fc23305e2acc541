// Package profiler measures a planner profile on a standalone PostgreSQL
// database, the way seed 003 §4.1.1 estimates its model parameters: it runs
// the workload's read-only transactions, its update transactions and the
// application of their writesets in separate phases, measures how long the
// server's CPU and disk were busy in each, and divides by the completions of
// the phase (the Utilization Law). A last phase runs the whole mix for A_1,
// L(1) and a check that the separately measured demands add up.
//
// CPU is the utime+stime of the postmaster and every process descending from
// it (/proc/PID/stat, including the cutime/cstime of backends that exited);
// disk busy time is "time spent doing I/Os" of the device(s) holding the data
// directory (/proc/diskstats), cross-checked with the tree's own block I/O
// (/proc/PID/io). So the profiler must run on the database host, with
// permission to read the server's /proc entries (root or the server's user).
//
// It drives the workload through package bench and applies writesets with the
// SQL of package writeset; the planner package stays pure computation.
package profiler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/planner"
)

// ErrBadOption reports an invalid option; the message names the flag.
var ErrBadOption = errors.New("invalid option")

// Phase names.
const (
	PhaseRead   = "read-only"
	PhaseUpdate = "update"
	PhaseApply  = "writeset-apply"
	PhaseMix    = "mix"
	PhaseIdle   = "idle"
)

// Options configure Run. The comments name the flags of `tandem plan profile`.
type Options struct {
	// Workload to drive (--workload). Required.
	Workload bench.Workload
	// DSN of the standalone database, loaded with the workload (--dsn).
	DSN string
	// Mix (--mix) and, for the custom mix, Weights (--weights).
	Mix, Weights string
	// Clients per phase (--clients); 0 means 8.
	Clients int
	// Duration of each measured phase (--duration); 0 means 10 s.
	Duration time.Duration
	// Rampup runs before each measured phase, unmeasured (--rampup).
	Rampup time.Duration
	// Think time of the clients (--think); it becomes the profile's Z.
	Think time.Duration
	// Uniform keys instead of the workload's skewed default (--uniform).
	Uniform bool
	// Seed of the clients' random sources (--seed); 0 picks one.
	Seed uint64
	// PID of the server's postmaster (--pid); 0 finds the process listening
	// on the DSN's port.
	PID int
	// Disks (--disk): device names from /proc/diskstats; nil means the
	// device(s) holding the data directory and pg_wal, ["all"] every
	// physical disk.
	Disks []string
	// CPUs divides the CPU busy time (--cpus): the planner models the CPU as
	// one queue, so an n-CPU host is one server n times as fast. 0 means the
	// CPUs the postmaster may run on; 1 keeps raw CPU-seconds.
	CPUs float64
	// ApplyClients is the number of parallel writeset appliers
	// (--apply-clients); 0 means Clients.
	ApplyClients int
	// ReplicaPID (--replica-pid) is the process tree of a replica that
	// follows the profiled node (a tandem node of a replicated cluster, the
	// profiled one its primary or a multi-master peer). With it the
	// profiler does not replay writesets itself: ws is the CPU the
	// replica's tree used during the update phase per committed update
	// transaction (what a replica really spends on the writesets it
	// applies, seed 003's ws), and that phase's disk busy time is split
	// between the two trees by their I/O bytes. 0 means no replica: the
	// writeset-apply phase replays captured writesets through the DSN.
	ReplicaPID int
	// ReplicaReads (--replica-reads) says that the DSN balances read-only
	// transactions over the profiled node and the replica (a router in
	// front of both): the read-only and mix phases then count both trees'
	// CPU, so rc is what a read costs the nodes wherever it ran. Needs
	// ReplicaPID.
	ReplicaReads bool
	// ReplicaRouted, with ReplicaReads, returns how many transactions the
	// DSN's router has routed to the replica so far (a counter). The
	// profiler reads it around the mix phase: the reads that ran on the
	// replica split the mix phase's CPU between the two trees, so that
	// the profiled node's update demand can be taken from the mix
	// (Report.Split, Report.ReplicatedMixDemands). nil: no split.
	ReplicaRouted func(context.Context) (uint64, error)
	// ReplicaBatches, with ReplicaPID, returns the replica's apply
	// counters so far: the batches of writesets it applied (one back-end
	// transaction each) and the writesets in them. The profiler reads
	// them around the update phase: the writesets per batch at which ws
	// was measured (Profile.ApplyBatch). nil: not known.
	ReplicaBatches func(context.Context) (batches, writesets uint64, err error)
	// Certify returns the profiled node's certification round trips so
	// far and their summed seconds (multi-master's /status). The profiler
	// reads them around the update phase: their mean is the certifier
	// delay of the model (Profile.CertifierDelay). nil: not measured.
	Certify func(context.Context) (count uint64, seconds float64, err error)
	// SkipMix skips the full-mix phase (--skip-mix): A_1 and L(1) then come
	// from the update phase.
	SkipMix bool
	// NoQuiesce skips the VACUUM of the workload's tables and the
	// CHECKPOINT before each phase (--no-quiesce).
	NoQuiesce bool
	// Name of the profile (--name); "" means WORKLOAD-MIX.
	Name string
	// Logger for progress; nil means slog.Default().
	Logger *slog.Logger
	// FS is where /proc and /sys are; the zero value means HostFS.
	FS ProcFS
	// Speed, when set, gives each phase the machine's memory latency over
	// it (Phase.MemLatencyNS): lab.MemoryProbe.
	Speed SpeedProbe
	// Idle (--idle), when > 0, measures an idle phase of this length first:
	// no transaction, the server's tree (and the replica's) doing only
	// their own work. That CPU per second (Report.Background) is
	// subtracted from every later phase's CPU before the demands are
	// computed, and the profile carries it as the resources' bg and
	// bg_replica, which the models give its share of the capacity (a
	// background that does not grow with the load, charged per
	// transaction at the profile's rate, overcharges a node that runs
	// faster). 0: no idle phase, background counted in the demands.
	Idle time.Duration
}

// Background is what the profiled tree and the replica's used with no
// transaction running (Options.Idle), in cores.
type Background struct {
	ServerCores  float64 `json:"server_cores"`
	ReplicaCores float64 `json:"replica_cores,omitempty"`
}

// SpeedProbe says how fast the machine's memory was between two times:
// the median latency of one load in nanoseconds and the number of
// samples (lab.MemoryProbe).
type SpeedProbe interface {
	Median(from, to time.Time) (ns float64, n int)
}

// Report is the outcome of a profiling run: the profile and the raw
// measurements it was computed from.
type Report struct {
	Profile       planner.Profile `json:"profile"`
	Target        string          `json:"target"`
	ServerVersion string          `json:"server_version"`
	PID           int             `json:"pid"`
	PIDFrom       string          `json:"pid_from"`
	// ReplicaPID is Options.ReplicaPID: ws is measured on its tree.
	ReplicaPID   int      `json:"replica_pid,omitempty"`
	DataDir      string   `json:"data_dir,omitempty"`
	Disks        []string `json:"disks"`
	DisksFrom    string   `json:"disks_from"`
	CPUs         float64  `json:"cpus"`
	CPUsFrom     string   `json:"cpus_from"`
	HostCPUs     int      `json:"host_cpus"`
	Scale        int      `json:"scale"`
	ScaleName    string   `json:"scale_name"`
	Clients      int      `json:"clients"`
	ApplyClients int      `json:"apply_clients"`
	Seed         uint64   `json:"seed"`
	Phases       []*Phase `json:"phases"`
	// Check compares the mix phase's measured demand with the demand the
	// separately measured rc and wc predict for it.
	Check []MixCheck `json:"mix_check,omitempty"`
	// Split is the mix phase's CPU split between the profiled node and
	// its replica by the reads each served (Options.ReplicaRouted).
	Split *MixSplit `json:"mix_split,omitempty"`
	// Background is the idle phase's CPU (Options.Idle), subtracted from
	// every other phase's.
	Background *Background `json:"background,omitempty"`
	// Batched is a second profile of the replica's apply at a larger
	// batch size (`tandem plan validate`, multi-master), from which
	// Profile's ws_batch_s comes; nil when not taken.
	Batched  *Report  `json:"batched_profile,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Phase is what one measured phase did and used.
type Phase struct {
	Name string `json:"name"`
	// Completions is the Utilization Law's denominator: committed reads,
	// update attempts, applied writesets, or (mix) committed transactions.
	Completions int64   `json:"completions"`
	What        string  `json:"completions_are"`
	WallS       float64 `json:"wall_s"`
	// Transactions of the phase by outcome (bench phases).
	Started    int64 `json:"started,omitempty"`
	Committed  int64 `json:"committed,omitempty"`
	RolledBack int64 `json:"rolled_back,omitempty"`
	Aborted    int64 `json:"aborted,omitempty"`
	Errors     int64 `json:"errors,omitempty"`
	// Per class, for the mix phase and the A_1 / L(1) figures.
	ReadStarted     int64   `json:"read_started,omitempty"`
	ReadCommitted   int64   `json:"read_committed,omitempty"`
	UpdateStarted   int64   `json:"update_started,omitempty"`
	UpdateAborted   int64   `json:"update_aborted,omitempty"`
	UpdateCommitted int64   `json:"update_committed,omitempty"`
	UpdateMeanMs    float64 `json:"update_mean_ms,omitempty"`
	// Writesets (apply phase).
	Writesets     int `json:"writesets,omitempty"`
	WritesetRows  int `json:"writeset_rows,omitempty"`
	CapturedTotal int `json:"captured_writesets,omitempty"`
	// CaptureUpdates is how many update transactions the capture run ran
	// to their end (committed, or rolled back by the workload's rules):
	// CapturedTotal of them committed a writeset.
	CaptureUpdates int64 `json:"capture_updates,omitempty"`

	// ServerCPUS is CPU-seconds of the postmaster tree (raw, not divided).
	ServerCPUS float64 `json:"server_cpu_s"`
	// ServerProcs is the largest number of live processes in the tree seen
	// at the phase's start or end.
	ServerProcs int `json:"server_processes"`
	// DiskBusyS is the summed "time spent doing I/Os" of the disks.
	DiskBusyS float64 `json:"disk_busy_s"`
	// DeviceReadBytes/DeviceWriteBytes are what the disks transferred;
	// ServerReadBytes/ServerWriteBytes what the server tree caused
	// (/proc/PID/io; write_bytes minus cancelled_write_bytes).
	DeviceReadBytes  uint64 `json:"device_read_bytes"`
	DeviceWriteBytes uint64 `json:"device_write_bytes"`
	ServerReadBytes  uint64 `json:"server_read_bytes"`
	ServerWriteBytes uint64 `json:"server_write_bytes"`
	ServerIOUnread   int    `json:"server_io_unreadable,omitempty"`
	// ReplicaCPUS and ReplicaIOBytes are what the replica's tree
	// (Options.ReplicaPID) used in the phase, CPU-seconds raw and
	// /proc/PID/io bytes read + written.
	ReplicaCPUS float64 `json:"replica_cpu_s,omitempty"`
	// SenderCPUS is the part of ServerCPUS the profiled tree's WAL
	// senders used (streaming to the replica), CPU-seconds raw.
	SenderCPUS     float64 `json:"walsender_cpu_s,omitempty"`
	ReplicaIOBytes uint64  `json:"replica_io_bytes,omitempty"`
	// ReadsOnReplica: ServerCPUS includes ReplicaCPUS (Options.ReplicaReads).
	ReadsOnReplica bool `json:"reads_on_replica,omitempty"`
	// RoutedToReplica is how many transactions the router sent the
	// replica during the phase (Options.ReplicaRouted); nil when not read.
	RoutedToReplica *uint64 `json:"routed_to_replica,omitempty"`
	// ReplicaApplyBatches and ReplicaApplyWritesets are the batches the
	// replica applied during the phase and the writesets in them
	// (Options.ReplicaBatches; update and apply phases, and the mix phase
	// when the replica serves no reads).
	ReplicaApplyBatches   uint64 `json:"replica_apply_batches,omitempty"`
	ReplicaApplyWritesets uint64 `json:"replica_apply_writesets,omitempty"`
	// Certifications and CertifyMeanS are the profiled node's
	// certification round trips in the phase and their mean
	// (Options.Certify; update phase).
	Certifications uint64  `json:"certifications,omitempty"`
	CertifyMeanS   float64 `json:"certify_mean_s,omitempty"`
	// ClientCPUS is this process's CPU (the load driver and appliers).
	ClientCPUS float64 `json:"client_cpu_s"`
	// HostBusyS and HostStealS are the whole host's CPU busy and stolen
	// time (/proc/stat), HostCapacityS is wall × CPUs.
	HostBusyS     float64 `json:"host_busy_s"`
	HostStealS    float64 `json:"host_steal_s"`
	HostCapacityS float64 `json:"host_capacity_s"`
	// Samples of the server's process titles taken during the phase, and
	// how many saw an autovacuum worker.
	Samples           int `json:"samples"`
	AutovacuumSamples int `json:"autovacuum_samples,omitempty"`
	// MemLatencyNS is the machine's memory latency during the phase
	// (Options.Speed; 0 without it).
	MemLatencyNS float64 `json:"mem_latency_ns,omitempty"`
	// BackgroundCPUS and ReplicaBackgroundCPUS are what was subtracted
	// from ServerCPUS and ReplicaCPUS for the trees' idle work over the
	// phase (Options.Idle): the raw figures are the sums.
	BackgroundCPUS        float64 `json:"background_cpu_s,omitempty"`
	ReplicaBackgroundCPUS float64 `json:"replica_background_cpu_s,omitempty"`
	// CgroupPeriods and CgroupThrottled are the CFS bandwidth counters of
	// the cgroup whose quota limits the server (ProcFS.ThrottlingOf) over
	// the phase: the scheduler periods it had work in, and how many of
	// them it used up its quota in. None without a quota.
	CgroupPeriods   uint64 `json:"cgroup_periods,omitempty"`
	CgroupThrottled uint64 `json:"cgroup_throttled_periods,omitempty"`
}

// CPUPerCompletion is raw server CPU-seconds per completion.
func (p *Phase) CPUPerCompletion() float64 { return safeDiv(p.ServerCPUS, float64(p.Completions)) }

// DiskPerCompletion is disk busy seconds per completion.
func (p *Phase) DiskPerCompletion() float64 { return safeDiv(p.DiskBusyS, float64(p.Completions)) }

// IOShare is the server tree's /proc/PID/io bytes over the bytes the disks
// moved (NaN when the disks moved nothing). Page-cache accounting counts
// dirtied pages (whole folios on recent kernels) when they are dirtied, so
// it can exceed 1; a value well below 1 means other processes' I/O.
func (p *Phase) IOShare() float64 {
	dev := float64(p.DeviceReadBytes + p.DeviceWriteBytes)
	if dev == 0 {
		return math.NaN()
	}
	return float64(p.ServerReadBytes+p.ServerWriteBytes) / dev
}

// OtherCPUS is host CPU busy time neither the server tree nor this process
// used: other processes' work, competing for the same CPUs.
func (p *Phase) OtherCPUS() float64 { return math.Max(0, p.HostBusyS-p.ServerCPUS-p.ClientCPUS) }

// MixCheck compares, for one resource, the busy time measured in the mix
// phase with reads·rc + update attempts·wc from the separate phases.
type MixCheck struct {
	Resource  string  `json:"resource"`
	MeasuredS float64 `json:"measured_busy_s"`
	PredictS  float64 `json:"predicted_busy_s"`
	// Error is (predicted − measured) / measured.
	Error float64 `json:"error"`
	// WCFromMix is the update demand the mix phase implies when its reads
	// cost rc: (measured − reads·rc) / update attempts, seconds (as in the
	// profile, CPU divided by the CPUs). It is what wc would be if demands
	// were taken under the mix's concurrency; compare it with the profile's
	// wc when Error is large.
	WCFromMix float64 `json:"wc_from_mix_s"`
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// classes splits a mix's transaction types into read-only and update.
type classes struct {
	txs      []bench.TxInfo
	weights  []float64
	readOnly map[string]bool
	pr, pw   float64
}

func (c classes) weightsFor(readOnly bool) string {
	parts := make([]string, len(c.txs))
	for i, t := range c.txs {
		w := 0.0
		if t.ReadOnly == readOnly {
			w = c.weights[i]
		}
		parts[i] = strconv.FormatFloat(w, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

func (c classes) allWeights() string {
	parts := make([]string, len(c.weights))
	for i, w := range c.weights {
		parts[i] = strconv.FormatFloat(w, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// profiler holds one run's state.
type profiler struct {
	opts    Options
	fs      ProcFS
	log     *slog.Logger
	cfg     *pgx.ConnConfig
	admin   *pgx.Conn
	cls     classes
	mixName string
	rep     *Report
	seed    uint64
	phaseNo uint64
	disks   []string
	vacErr  error
	ckptErr error
	// bg is the idle phase's CPU per second of the profiled tree and of
	// the replica's (cores), subtracted from every later phase.
	bg *Background
}

// Run measures the profile. It needs a loaded workload at opts.DSN and, to
// read the server's /proc accounting, the server on this host. Profiling
// changes the data the way the workload's update transactions do.
func Run(ctx context.Context, opts Options) (*Report, error) {
	p, err := newProfiler(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer p.admin.Close(context.Background())
	return p.run(ctx)
}

func newProfiler(ctx context.Context, opts Options) (*profiler, error) {
	if opts.Workload == nil {
		return nil, fmt.Errorf("%w: --workload: no workload", ErrBadOption)
	}
	if opts.Clients == 0 {
		opts.Clients = 8
	}
	if opts.Duration == 0 {
		opts.Duration = 10 * time.Second
	}
	switch {
	case opts.Clients < 0:
		return nil, fmt.Errorf("%w: --clients must be > 0, got %d", ErrBadOption, opts.Clients)
	case opts.Duration < 0:
		return nil, fmt.Errorf("%w: --duration must be > 0, got %s", ErrBadOption, opts.Duration)
	case opts.Rampup < 0:
		return nil, fmt.Errorf("%w: --rampup must be >= 0, got %s", ErrBadOption, opts.Rampup)
	case opts.Idle < 0:
		return nil, fmt.Errorf("%w: --idle must be >= 0 (0: no idle phase), got %s", ErrBadOption, opts.Idle)
	case opts.Think < 0:
		return nil, fmt.Errorf("%w: --think must be >= 0, got %s", ErrBadOption, opts.Think)
	case opts.PID < 0:
		return nil, fmt.Errorf("%w: --pid must be > 0, got %d", ErrBadOption, opts.PID)
	case opts.CPUs < 0 || math.IsNaN(opts.CPUs) || math.IsInf(opts.CPUs, 0):
		return nil, fmt.Errorf("%w: --cpus must be > 0 (0 = detect), got %g", ErrBadOption, opts.CPUs)
	case opts.ApplyClients < 0:
		return nil, fmt.Errorf("%w: --apply-clients must be > 0, got %d", ErrBadOption, opts.ApplyClients)
	case opts.ReplicaPID < 0:
		return nil, fmt.Errorf("%w: --replica-pid must be > 0, got %d", ErrBadOption, opts.ReplicaPID)
	case opts.ReplicaRouted != nil && !opts.ReplicaReads:
		return nil, fmt.Errorf("%w: a count of the transactions routed to the replica needs reads balanced over both nodes (ReplicaReads)", ErrBadOption)
	case opts.ReplicaReads && opts.ReplicaPID == 0:
		return nil, fmt.Errorf("%w: --replica-reads needs --replica-pid (the node that takes the other reads)", ErrBadOption)
	case opts.ReplicaPID > 0 && opts.ReplicaPID == opts.PID:
		return nil, fmt.Errorf("%w: --replica-pid %d is the profiled process itself (--pid): give the replica's node", ErrBadOption, opts.ReplicaPID)
	}
	if opts.ApplyClients == 0 {
		opts.ApplyClients = opts.Clients
	}
	mix, err := bench.ResolveMix(opts.Workload, opts.Mix, opts.Weights)
	if err != nil {
		return nil, fmt.Errorf("--mix: %w", err)
	}
	cls := classes{txs: opts.Workload.Transactions(), weights: mix.Weights, readOnly: map[string]bool{}}
	var sum float64
	for i, t := range cls.txs {
		cls.readOnly[t.Name] = t.ReadOnly
		sum += mix.Weights[i]
		if t.ReadOnly {
			cls.pr += mix.Weights[i]
		} else {
			cls.pw += mix.Weights[i]
		}
	}
	cls.pr, cls.pw = cls.pr/sum, cls.pw/sum
	if strings.TrimSpace(opts.DSN) == "" {
		return nil, fmt.Errorf("%w: --dsn is required", ErrBadOption)
	}
	cfg, err := pgx.ParseConfig(opts.DSN)
	if err != nil {
		return nil, fmt.Errorf("%w: --dsn %s: %v", ErrBadOption, bench.RedactDSN(opts.DSN), err)
	}
	if opts.FS.Proc == "" {
		opts.FS = HostFS
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Name == "" {
		opts.Name = opts.Workload.Name() + "-" + mix.Name
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "tandem-plan-profile"
	}
	admin, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("--dsn: connect to %s: %w", bench.RedactDSN(opts.DSN), err)
	}
	return &profiler{opts: opts, fs: opts.FS, log: log, cfg: cfg, admin: admin, cls: cls, mixName: mix.Name}, nil
}

func (p *profiler) run(ctx context.Context) (*Report, error) {
	o := p.opts
	started := time.Now()
	p.rep = &Report{
		Target:        bench.RedactDSN(o.DSN),
		ServerVersion: p.admin.PgConn().ParameterStatus("server_version"),
		ScaleName:     o.Workload.ScaleName(),
		Clients:       o.Clients,
		ApplyClients:  o.ApplyClients,
		HostCPUs:      runtime.NumCPU(),
	}
	var err error
	if p.rep.Scale, err = o.Workload.DetectScale(ctx, p.admin); err != nil {
		return nil, fmt.Errorf("--dsn: is the %s workload loaded (tandem bench load)? %w", o.Workload.Name(), err)
	}
	if p.rep.Scale == 0 {
		return nil, fmt.Errorf("--dsn: %w: %s has no %s; run `tandem bench load --workload %s` first", bench.ErrNotLoaded, p.rep.Target, o.Workload.ScaleName(), o.Workload.Name())
	}
	if err := p.locateServer(); err != nil {
		return nil, err
	}
	p.seed = o.Seed
	if p.seed == 0 {
		p.seed = uint64(time.Now().UnixNano())
	}
	p.rep.Seed = p.seed
	p.checkOtherSessions(ctx)
	p.log.Info("profiling", "workload", o.Workload.Name(), "mix", p.mixName, "pr", round(p.cls.pr, 4), "pw", round(p.cls.pw, 4),
		"clients", o.Clients, "duration", o.Duration, "pid", p.rep.PID, "disks", strings.Join(p.disks, ","), "cpus", p.rep.CPUs)

	if o.Idle > 0 {
		idle, err := p.idlePhase(ctx)
		if err != nil {
			return nil, err
		}
		p.rep.Phases = append(p.rep.Phases, idle)
	}
	var read, update, apply, mixPh *Phase
	if p.cls.pr > 0 {
		if read, err = p.benchPhase(ctx, PhaseRead, p.cls.weightsFor(true)); err != nil {
			return nil, err
		}
		read.Completions, read.What = read.ReadCommitted, "committed read-only transactions"
	}
	if p.cls.pw > 0 {
		if update, err = p.benchPhase(ctx, PhaseUpdate, p.cls.weightsFor(false)); err != nil {
			return nil, err
		}
		update.Completions, update.What = update.UpdateStarted-update.Errors, "update transaction attempts (started, any outcome but unexpected errors)"
		if o.ReplicaPID > 0 {
			apply = p.replicaApply(update)
		} else if apply, err = p.applyPhase(ctx); err != nil {
			return nil, err
		}
	}
	if !o.SkipMix {
		if mixPh, err = p.benchPhase(ctx, PhaseMix, p.cls.allWeights()); err != nil {
			return nil, err
		}
		mixPh.Completions, mixPh.What = mixPh.Started-mixPh.Aborted-mixPh.Errors, "transactions not aborted (committed or rolled back by the workload's rules)"
	}
	for _, ph := range []*Phase{read, update, apply, mixPh} {
		if ph != nil {
			p.rep.Phases = append(p.rep.Phases, ph)
		}
	}
	if err := p.buildProfile(started, read, update, apply, mixPh); err != nil {
		return nil, err
	}
	return p.rep, nil
}

// locateServer finds the postmaster, its data directory, the disks and CPUs.
func (p *profiler) locateServer() error {
	o := p.opts
	if o.PID > 0 {
		if _, err := p.fs.Stat(o.PID); err != nil {
			return fmt.Errorf("--pid %d: %w", o.PID, err)
		}
		p.rep.PID, p.rep.PIDFrom = o.PID, "--pid"
	} else {
		host, port := p.cfg.Host, int(p.cfg.Port)
		pid, err := p.fs.FindServer(host, port)
		if err != nil {
			return fmt.Errorf("--pid: %w", err)
		}
		p.rep.PID, p.rep.PIDFrom = pid, fmt.Sprintf("the process listening on the --dsn address %s", hostPort(host, port))
	}
	st, err := p.fs.Stat(p.rep.PID)
	if err != nil {
		return fmt.Errorf("--pid %d: %w", p.rep.PID, err)
	}
	if st.Comm != "postgres" && st.Comm != "postmaster" {
		p.warn(fmt.Sprintf("process %d is %q, not postgres: the CPU and I/O measured are that process tree's", p.rep.PID, st.Comm))
	}
	if o.ReplicaPID > 0 {
		if _, err := p.fs.Stat(o.ReplicaPID); err != nil {
			return fmt.Errorf("--replica-pid %d: %w", o.ReplicaPID, err)
		}
		p.rep.ReplicaPID = o.ReplicaPID
	}
	if _, err := p.fs.IO(p.rep.PID); err != nil {
		p.warn(fmt.Sprintf("cannot read /proc/%d/io (%v): no per-process I/O cross-check; run as root or the server's user", p.rep.PID, err))
	}
	if dir, err := p.fs.DataDir(p.rep.PID); err == nil {
		p.rep.DataDir = dir
	}
	stats, err := p.fs.Diskstats()
	if err != nil {
		return fmt.Errorf("--disk: %w", err)
	}
	have := make([]string, len(stats))
	for i, d := range stats {
		have[i] = d.Name
	}
	switch {
	case len(o.Disks) == 1 && o.Disks[0] == "all":
		p.disks, p.rep.DisksFrom = p.fs.PhysicalDisks(stats), "--disk all: every physical disk, busy times summed"
	case len(o.Disks) > 0:
		for _, d := range o.Disks {
			d = strings.TrimPrefix(strings.TrimSpace(d), "/dev/")
			if !slices.Contains(have, d) {
				return fmt.Errorf("--disk: %w: no device %q in /proc/diskstats (have %s)", ErrBadOption, d, strings.Join(have, ", "))
			}
			if !slices.Contains(p.disks, d) {
				p.disks = append(p.disks, d)
			}
		}
		p.rep.DisksFrom = "--disk"
	case p.rep.DataDir != "":
		names, unresolved := p.fs.DevicesOf(stats, p.rep.DataDir, p.rep.DataDir+"/pg_wal")
		if len(names) > 0 && len(unresolved) == 0 {
			p.disks, p.rep.DisksFrom = names, "the device(s) holding the data directory and pg_wal"
			break
		}
		p.disks, p.rep.DisksFrom = p.fs.PhysicalDisks(stats), fmt.Sprintf("every physical disk: %s is on no block device listed in /proc/diskstats", strings.Join(unresolved, ", "))
	default:
		p.disks, p.rep.DisksFrom = p.fs.PhysicalDisks(stats), "every physical disk: the server's data directory is unknown (cannot read /proc/PID/cwd)"
	}
	if len(p.disks) == 0 {
		return fmt.Errorf("--disk: %w: no disk to measure (have %s)", ErrBadOption, strings.Join(have, ", "))
	}
	p.rep.Disks = p.disks
	if o.CPUs > 0 {
		p.rep.CPUs, p.rep.CPUsFrom = o.CPUs, "--cpus"
	} else {
		n, how, err := p.fs.CPUsOf(p.rep.PID)
		if err != nil {
			n, how = float64(runtime.NumCPU()), "runtime.NumCPU (the server's affinity is unreadable)"
		}
		p.rep.CPUs, p.rep.CPUsFrom = n, "the server's "+how
	}
	return nil
}

func hostPort(host string, port int) string {
	if strings.HasPrefix(host, "/") {
		return host + "/.s.PGSQL." + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

func (p *profiler) warn(msg string) {
	p.log.Warn(msg)
	p.rep.Warnings = append(p.rep.Warnings, msg)
}

// checkOtherSessions warns about client sessions that are not the
// profiler's: their work is in the measured tree.
func (p *profiler) checkOtherSessions(ctx context.Context) {
	var n int
	err := p.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'`).Scan(&n)
	if err == nil && n > 0 {
		p.warn(fmt.Sprintf("%d other client sessions are active on the server: their work is counted in the measured CPU and disk", n))
	}
}

// snapshot is the accounting at one instant.
type snapshot struct {
	at      time.Time
	tree    TreeUsage
	replica TreeUsage
	disks   []DiskStat
	host    HostCPU
	self    uint64
	// throttling of the server's cgroup (ok: it has a quota).
	throttling   Throttling
	throttlingOK bool
}

func (p *profiler) snapshot() (snapshot, error) {
	var s snapshot
	var err error
	// A process that exits while the tree is read has a stat but no io
	// file: read again, so it is counted in its parent instead.
	for try := 0; ; try++ {
		s.at = time.Now()
		if s.tree, err = p.fs.Tree(p.rep.PID); err != nil {
			return s, fmt.Errorf("--pid %d: %w", p.rep.PID, err)
		}
		if p.opts.ReplicaPID > 0 {
			if s.replica, err = p.fs.Tree(p.opts.ReplicaPID); err != nil {
				return s, fmt.Errorf("--replica-pid %d: %w", p.opts.ReplicaPID, err)
			}
		}
		if (s.tree.IOErrors == 0 && s.replica.IOErrors == 0) || try == 4 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	all, err := p.fs.Diskstats()
	if err != nil {
		return s, err
	}
	for _, d := range all {
		if slices.Contains(p.disks, d.Name) {
			s.disks = append(s.disks, d)
		}
	}
	if s.host, err = p.fs.HostCPU(); err != nil {
		return s, err
	}
	if s.self, err = p.fs.SelfTicks(); err != nil {
		return s, err
	}
	s.throttling, s.throttlingOK = p.fs.ThrottlingOf(p.rep.PID)
	return s, nil
}

// usage fills ph with the difference of two snapshots.
func usage(ph *Phase, a, b snapshot, hostCPUs int) {
	ph.WallS = b.at.Sub(a.at).Seconds()
	ph.ServerCPUS = float64(int64(b.tree.Ticks)-int64(a.tree.Ticks)) / ClockTicks
	ph.ServerProcs = max(a.tree.Processes, b.tree.Processes)
	ph.ServerIOUnread = max(a.tree.IOErrors, b.tree.IOErrors)
	ph.ServerReadBytes = sub(b.tree.IO.ReadBytes, a.tree.IO.ReadBytes)
	ph.ServerWriteBytes = sub(b.tree.IO.WriteBytes-b.tree.IO.CancelledWriteBytes, a.tree.IO.WriteBytes-a.tree.IO.CancelledWriteBytes)
	for _, d := range b.disks {
		for _, d0 := range a.disks {
			if d0.Name == d.Name {
				ph.DiskBusyS += float64(sub(d.IOTicksMs, d0.IOTicksMs)) / 1000
				ph.DeviceReadBytes += 512 * sub(d.SectorsRead, d0.SectorsRead)
				ph.DeviceWriteBytes += 512 * sub(d.SectorsWritten, d0.SectorsWritten)
			}
		}
	}
	ph.ClientCPUS = float64(sub(b.self, a.self)) / ClockTicks
	ph.ReplicaCPUS = float64(sub(b.replica.Ticks, a.replica.Ticks)) / ClockTicks
	ph.SenderCPUS = float64(sub(b.tree.SenderTicks, a.tree.SenderTicks)) / ClockTicks
	ph.ReplicaIOBytes = sub(b.replica.IO.ReadBytes+b.replica.IO.WriteBytes-b.replica.IO.CancelledWriteBytes,
		a.replica.IO.ReadBytes+a.replica.IO.WriteBytes-a.replica.IO.CancelledWriteBytes)
	ph.HostBusyS = float64(sub(b.host.Busy, a.host.Busy)) / ClockTicks
	ph.HostStealS = float64(sub(b.host.Steal, a.host.Steal)) / ClockTicks
	ph.HostCapacityS = ph.WallS * float64(hostCPUs)
	if a.throttlingOK && b.throttlingOK {
		ph.CgroupPeriods = sub(b.throttling.Periods, a.throttling.Periods)
		ph.CgroupThrottled = sub(b.throttling.Throttled, a.throttling.Throttled)
	}
}

func sub(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// prepare quiesces the server between phases: VACUUM the workload's tables,
// so that autovacuum does not clean up one phase's dead rows during the
// next, and CHECKPOINT, so that one phase's dirty pages are not written back
// during the next.
func (p *profiler) prepare(ctx context.Context) {
	if p.opts.NoQuiesce {
		return
	}
	if p.vacErr == nil {
		if _, err := p.admin.Exec(ctx, "VACUUM "+strings.Join(p.opts.Workload.Tables(), ", ")); err != nil {
			p.vacErr = err
			p.warn(fmt.Sprintf("VACUUM between phases failed (%v): autovacuum may clean up a phase's dead rows during the next one", err))
		}
	}
	if p.ckptErr == nil {
		if _, err := p.admin.Exec(ctx, "CHECKPOINT"); err != nil {
			p.ckptErr = err
			p.warn(fmt.Sprintf("CHECKPOINT between phases failed (%v): a phase's dirty pages may be written during the next one", err))
		}
	}
}

// baseline counts the server's client backends while none of the
// profiler's clients is connected (the admin connection's included).
func (p *profiler) baseline() (int, error) {
	if _, err := p.fs.Stat(p.rep.PID); err != nil {
		return 0, fmt.Errorf("--pid %d: %w", p.rep.PID, err)
	}
	n, _ := p.fs.ClientBackends(p.rep.PID)
	return n, nil
}

// settle waits until the client backends of a finished run have exited (and
// been reaped into the postmaster's cutime and I/O accounting), so that a
// snapshot does not catch one half gone and counts each exactly once.
// Background processes (autovacuum workers) may come and go meanwhile.
func (p *profiler) settle(backends int) {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		n, ok := p.fs.ClientBackends(p.rep.PID)
		if !ok || n <= backends {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watch samples the server's process titles every 200 ms until stop is
// closed, counting samples that saw an autovacuum worker; read the result
// from the returned channel after closing stop.
func (p *profiler) watch(stop <-chan struct{}) <-chan [2]int {
	out := make(chan [2]int, 1)
	go func() {
		var samples, autovac int
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				out <- [2]int{samples, autovac}
				return
			case <-t.C:
				if n, ok := p.fs.CountTitles(p.rep.PID, IsAutovacuumWorker); ok {
					samples++
					if n > 0 {
						autovac++
					}
				}
			}
		}
	}()
	return out
}

// measured runs fn between two snapshots, watching for autovacuum.
func (p *profiler) measured(name string, base int, fn func() error) (*Phase, error) {
	a, err := p.snapshot()
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	seen := p.watch(stop)
	t0 := time.Now()
	err = fn()
	t1 := time.Now()
	close(stop)
	w := <-seen
	if err != nil {
		return nil, err
	}
	p.settle(base)
	p.replicaCaughtUp()
	b, err := p.snapshot()
	if err != nil {
		return nil, err
	}
	ph := &Phase{Name: name, Samples: w[0], AutovacuumSamples: w[1]}
	if p.opts.Speed != nil {
		ns, _ := p.opts.Speed.Median(t0, t1)
		ph.MemLatencyNS = round(ns, 3)
	}
	usage(ph, a, b, p.rep.HostCPUs)
	if p.bg != nil {
		ph.BackgroundCPUS = math.Min(ph.ServerCPUS, p.bg.ServerCores*ph.WallS)
		ph.ServerCPUS -= ph.BackgroundCPUS
		ph.ReplicaBackgroundCPUS = math.Min(ph.ReplicaCPUS, p.bg.ReplicaCores*ph.WallS)
		ph.ReplicaCPUS -= ph.ReplicaBackgroundCPUS
	}
	if ph.AutovacuumSamples > 0 {
		p.warn(fmt.Sprintf("%s phase: autovacuum workers ran in %d of %d samples; their CPU and I/O are in the phase's figures", name, ph.AutovacuumSamples, ph.Samples))
	}
	return ph, nil
}

func (p *profiler) runOptions(weights string, d time.Duration) bench.RunOptions {
	p.phaseNo++
	return bench.RunOptions{
		Workload: p.opts.Workload,
		DSN:      p.opts.DSN,
		Mix:      "custom",
		Weights:  weights,
		Clients:  p.opts.Clients,
		Duration: d,
		Think:    p.opts.Think,
		Uniform:  p.opts.Uniform,
		Seed:     p.seed + p.phaseNo,
		Scale:    p.rep.Scale,
		Logger:   p.log,
	}
}

// benchPhase runs weights for the ramp-up (unmeasured) and then for the
// duration between two snapshots.
func (p *profiler) benchPhase(ctx context.Context, name, weights string) (*Phase, error) {
	base, err := p.baseline()
	if err != nil {
		return nil, err
	}
	p.prepare(ctx)
	if p.opts.Rampup > 0 {
		p.log.Info("phase ramp-up", "phase", name, "rampup", p.opts.Rampup)
		if _, err := bench.Run(ctx, p.runOptions(weights, p.opts.Rampup)); err != nil {
			return nil, fmt.Errorf("%s phase ramp-up: %w", name, err)
		}
	}
	p.settle(base)
	p.log.Info("phase", "phase", name, "duration", p.opts.Duration)
	var res *bench.Result
	var routed *uint64
	batches := p.opts.ReplicaBatches
	var b0, w0 uint64
	// The update phase's batches give ws its batch size; the mix phase's
	// give it to ws taken from the mix (multi-master's MixSplit).
	if batches != nil && (name == PhaseUpdate || name == PhaseMix && !p.opts.ReplicaReads) {
		var err error
		if b0, w0, err = batches(ctx); err != nil {
			p.warn(fmt.Sprintf("%s phase: reading the replica's apply batches: %v (the batch size of ws is not known)", name, err))
			batches = nil
		}
	} else {
		batches = nil
	}
	certify := p.opts.Certify
	var c0 uint64
	var s0 float64
	if certify != nil && name == PhaseUpdate {
		var err error
		if c0, s0, err = certify(ctx); err != nil {
			p.warn(fmt.Sprintf("%s phase: reading the node's certification round trips: %v (the certifier delay is not measured)", name, err))
			certify = nil
		}
	} else {
		certify = nil
	}
	ph, err := p.measured(name, base, func() error {
		count := p.opts.ReplicaRouted
		var before uint64
		if count != nil {
			var err error
			if before, err = count(ctx); err != nil {
				p.warn(fmt.Sprintf("%s phase: reading the transactions routed to the replica: %v (no split of the phase between the nodes)", name, err))
				count = nil
			}
		}
		var err error
		if res, err = bench.Run(ctx, p.runOptions(weights, p.opts.Duration)); err != nil {
			return fmt.Errorf("%s phase: %w", name, err)
		}
		if count != nil {
			if after, err := count(ctx); err != nil {
				p.warn(fmt.Sprintf("%s phase: reading the transactions routed to the replica: %v (no split of the phase between the nodes)", name, err))
			} else {
				n := sub(after, before)
				routed = &n
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ph.RoutedToReplica = routed
	if batches != nil {
		// After measured: the replica has worked off the phase's backlog.
		if b1, w1, err := batches(ctx); err != nil {
			p.warn(fmt.Sprintf("%s phase: reading the replica's apply batches: %v (the batch size of ws is not known)", name, err))
		} else {
			ph.ReplicaApplyBatches, ph.ReplicaApplyWritesets = sub(b1, b0), sub(w1, w0)
		}
	}
	if certify != nil {
		if c1, s1, err := certify(ctx); err != nil {
			p.warn(fmt.Sprintf("%s phase: reading the node's certification round trips: %v (the certifier delay is not measured)", name, err))
		} else if c1 > c0 {
			ph.Certifications, ph.CertifyMeanS = c1-c0, round((s1-s0)/float64(c1-c0), 6)
		}
	}
	p.fillCounts(ph, res)
	if p.opts.ReplicaReads && name != PhaseUpdate {
		// Reads ran on both nodes: their cost is both trees' CPU.
		ph.ServerCPUS += ph.ReplicaCPUS
		ph.ReadsOnReplica = true
	}
	if ph.Errors > 0 {
		p.warn(fmt.Sprintf("%s phase: %d unexpected errors (first: %s)", name, ph.Errors, strings.Join(res.FirstErrors, "; ")))
	}
	p.log.Info("phase done", "phase", name, "started", ph.Started, "server_cpu_s", round(ph.ServerCPUS, 3), "disk_busy_s", round(ph.DiskBusyS, 3), "client_cpu_s", round(ph.ClientCPUS, 3))
	return ph, nil
}

// idlePhase measures the trees with no transaction for Options.Idle
// after the server settled (VACUUM, CHECKPOINT), and sets the background
// every later phase is net of.
func (p *profiler) idlePhase(ctx context.Context) (*Phase, error) {
	base, err := p.baseline()
	if err != nil {
		return nil, err
	}
	p.prepare(ctx)
	p.replicaQuiet(20 * time.Second)
	p.log.Info("phase", "phase", PhaseIdle, "duration", p.opts.Idle)
	ph, err := p.measured(PhaseIdle, base, func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(p.opts.Idle):
			return nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("idle phase: %w", err)
	}
	ph.What = "none: no transaction ran"
	if ph.WallS > 0 {
		p.bg = &Background{ServerCores: round(ph.ServerCPUS/ph.WallS, 5), ReplicaCores: round(ph.ReplicaCPUS/ph.WallS, 5)}
		p.rep.Background = p.bg
	}
	return ph, nil
}

// writesetsPerUpdate is the share of update transactions that commit a
// writeset (planner.Profile.WritesetsPerUpdate), over the update
// transactions ws is measured against: with a real replica (ws per
// committed update of the update phase) the update phase's committed
// updates of those not aborted; else the captured writesets of the
// capture run's updates. 0: not measured.
func writesetsPerUpdate(update, apply *Phase) float64 {
	var f float64
	switch {
	case apply == nil:
		return 0
	case apply.CaptureUpdates > 0:
		f = float64(apply.CapturedTotal) / float64(apply.CaptureUpdates)
	case update != nil && update.UpdateStarted-update.UpdateAborted > 0:
		f = float64(update.UpdateCommitted) / float64(update.UpdateStarted-update.UpdateAborted)
	}
	if f <= 0 {
		return 0
	}
	return round(math.Min(1, f), 4)
}

// conflictRate is c of A = 1 − exp(−c·λ·W) (planner.Profile.ConflictRate)
// pooled over the phases that ran updates: each phase's exposure is its
// committed updates per second (λ) times their mean response time (W),
// and c = Σ n·(−ln(1 − a)) / Σ n·λ·W over the phases' n update attempts
// and abort rates a. 0 when no phase measured an abort, a commit and a
// response time.
func conflictRate(phases ...*Phase) float64 {
	var num, den float64
	aborted := int64(0)
	for _, ph := range phases {
		if ph == nil || ph.UpdateStarted <= 0 || ph.UpdateCommitted <= 0 || ph.UpdateMeanMs <= 0 || ph.WallS <= 0 || ph.UpdateAborted >= ph.UpdateStarted {
			continue
		}
		n := float64(ph.UpdateStarted)
		a := float64(ph.UpdateAborted) / n
		lambda := float64(ph.UpdateCommitted) / ph.WallS
		num += n * -math.Log1p(-a)
		den += n * lambda * ph.UpdateMeanMs / 1000
		aborted += ph.UpdateAborted
	}
	if aborted == 0 || den <= 0 {
		return 0
	}
	return num / den
}

// PooledConflictRate is c over the mix and update phases of every
// report together (their last of each): for mixes whose update
// transactions are the same types at the same relative weights, one
// workload's c measured with the counts of all (TM1's R80W20 and R20W80
// differ only in how many reads run beside the same updates); 0 when
// none measured an abort.
func PooledConflictRate(reps ...*Report) float64 {
	var phases []*Phase
	for _, r := range reps {
		if r != nil {
			phases = append(phases, r.lastPhase(PhaseMix), r.lastPhase(PhaseUpdate))
		}
	}
	return conflictRate(phases...)
}

// FillConflictRate sets the profile's ConflictRate from the report's mix
// and update phases (a report saved before it was measured); it reports
// whether the profile has one.
func (r *Report) FillConflictRate() bool {
	if r.Profile.ConflictRate == 0 {
		r.Profile.ConflictRate = PooledConflictRate(r)
	}
	return r.Profile.ConflictRate > 0
}

// A phase ran its host saturated when the host's quota held it back in
// at least saturatedPeriods of the scheduler periods it had work in; a
// report saved before the counters were recorded (2026-12-07) counts a
// phase that used at least saturatedShare of its quota.
const (
	saturatedPeriods = 0.9
	saturatedShare   = 0.8
)

// HostCapacity is the share of its CPU quota the profiled server's host
// delivered in phase ph (its tree's CPU, background included, over quota
// x wall time), when the quota held it back through the phase (ok):
// what an emulated host of this kind can run, which the lab's CFS quota
// alone does not say (planner.Resource.Capacity). Not ok without a quota
// (CPUs from the affinity mask or --cpus) or when the phase did not
// saturate the host.
func (r *Report) HostCapacity(ph *Phase) (float64, bool) {
	if ph == nil || r.CPUs <= 0 || ph.WallS <= 0 || !strings.Contains(r.CPUsFrom, "cgroup CPU quota") {
		return 0, false
	}
	share := r.quotaShare(ph)
	if ph.CgroupPeriods > 0 {
		if float64(ph.CgroupThrottled) < saturatedPeriods*float64(ph.CgroupPeriods) {
			return 0, false
		}
	} else if share < saturatedShare {
		return 0, false
	}
	return round(math.Min(1, share), 4), true
}

// quotaShare is the share of its CPUs the server's tree used in ph, its
// background included.
func (r *Report) quotaShare(ph *Phase) float64 {
	return safeDiv(ph.ServerCPUS+ph.BackgroundCPUS, r.CPUs*ph.WallS)
}

// FillCapacity sets the profile's CPU Capacity from the mix phase (the
// load the sweep runs) when it saturated the host, and clears it
// otherwise; it reports whether the profile has one.
func (r *Report) FillCapacity() bool {
	i := slices.IndexFunc(r.Profile.Resources, func(res planner.Resource) bool { return res.Name == ResCPU })
	if i < 0 {
		return false
	}
	cpu := &r.Profile.Resources[i]
	mix := r.lastPhase(PhaseMix)
	c, ok := r.HostCapacity(mix)
	// The background must leave room (planner.Profile.Validate).
	ok = ok && c-max(cpu.BG, cpu.BGReplica) >= 0.05
	cpu.Capacity = 0
	if !ok {
		delete(r.Profile.Trust, "resources.cpu.capacity")
		return false
	}
	cpu.Capacity = c
	how := fmt.Sprintf("its quota held it back in %d of %d scheduler periods", mix.CgroupThrottled, mix.CgroupPeriods)
	if mix.CgroupPeriods == 0 {
		how = "no throttling counters (a report saved before they were recorded): it used at least 0.8 of its quota"
	}
	if r.Profile.Trust == nil {
		r.Profile.Trust = map[string]string{}
	}
	r.Profile.Trust["resources.cpu.capacity"] = fmt.Sprintf("measured in the mix phase: the server's tree ran %.3f of its CPU quota (%s; %s); the models give a node that, less its background", c, r.CPUsFrom, how)
	return true
}

// FillWritesetsPerUpdate sets the profile's WritesetsPerUpdate from the
// report's phases when the profile has none (a report of a build that did
// not measure it; without the capture run's count, from the update
// phase's committed share). It reports whether it set it.
func (r *Report) FillWritesetsPerUpdate() bool {
	if r.Profile.WritesetsPerUpdate > 0 {
		return false
	}
	var update, apply *Phase
	for _, ph := range r.Phases {
		switch ph.Name {
		case PhaseUpdate:
			update = ph
		case PhaseApply:
			apply = ph
		}
	}
	if update != nil && apply != nil && apply.CaptureUpdates == 0 {
		// Replayed: the update phase's share stands in for the capture run's.
		apply = &Phase{Name: PhaseApply}
	}
	r.Profile.WritesetsPerUpdate = writesetsPerUpdate(update, apply)
	return r.Profile.WritesetsPerUpdate > 0
}

// fillCounts copies a bench result's outcome counts into ph, per class.
func (p *profiler) fillCounts(ph *Phase, res *bench.Result) {
	var latSum float64
	for _, name := range res.Types() {
		t := res.Transactions[name]
		if t == nil {
			continue
		}
		ph.Started += t.Started
		ph.Committed += t.Counted
		ph.RolledBack += t.RolledBack
		ph.Aborted += t.Aborted
		ph.Errors += t.Errors
		if p.cls.readOnly[name] {
			ph.ReadStarted += t.Started
			ph.ReadCommitted += t.Counted
		} else {
			ph.UpdateStarted += t.Started
			ph.UpdateAborted += t.Aborted
			ph.UpdateCommitted += t.Counted
			latSum += t.MeanMs * float64(t.Counted)
		}
	}
	ph.UpdateMeanMs = safeDiv(latSum, float64(ph.UpdateCommitted))
}

// replicaCaughtUp waits, when a replica is measured, until its tree has
// stopped working off the phase's writesets: two 200 ms samples in a row
// in which it used under 10 % of its host (of a CPU, or of the server's
// quota when that is less), at most 10 s (a replica under a CPU quota may
// be behind when the clients stop; its backlog belongs to the phase).
func (p *profiler) replicaCaughtUp() { p.replicaQuiet(10 * time.Second) }

// replicaQuiet is replicaCaughtUp with a limit. Before the idle phase it
// waits up to 20 s: a replica still busy with what the phases before
// left (its own checkpoint, autovacuum: the profiler quiesces the
// profiled server, not the replica) measured 0.16 of its 0.25-core host
// busy there, 10x its background, which the later phases then had
// subtracted from their ws.
func (p *profiler) replicaQuiet(limit time.Duration) {
	if p.opts.ReplicaPID <= 0 {
		return
	}
	const step = 200 * time.Millisecond
	quiet := 0.1 * step.Seconds()
	if p.rep != nil && p.rep.CPUs > 0 && p.rep.CPUs < 1 {
		quiet *= p.rep.CPUs
	}
	idle := 0
	prev, err := p.fs.Tree(p.opts.ReplicaPID)
	for deadline := time.Now().Add(limit); err == nil && idle < 2 && time.Now().Before(deadline); {
		time.Sleep(step)
		var cur TreeUsage
		if cur, err = p.fs.Tree(p.opts.ReplicaPID); err != nil {
			break
		}
		if float64(sub(cur.Ticks, prev.Ticks))/ClockTicks < quiet {
			idle++
		} else {
			idle = 0
		}
		prev = cur
	}
}

// replicaApply is the writeset-apply phase when a real replica follows the
// profiled node: the update phase's committed update transactions are the
// completions, the replica tree's CPU in that phase the busy time, and the
// phase's disk busy time is split between the primary and the replica by
// their I/O bytes (the update phase keeps the primary's share).
func (p *profiler) replicaApply(update *Phase) *Phase {
	ph := &Phase{Name: PhaseApply, Completions: update.UpdateCommitted,
		What:  fmt.Sprintf("committed update transactions of the update phase, applied by the replica (pid %d)", p.opts.ReplicaPID),
		WallS: update.WallS, ServerCPUS: update.ReplicaCPUS,
		ReplicaCPUS: update.ReplicaCPUS, ReplicaIOBytes: update.ReplicaIOBytes,
		HostBusyS: update.HostBusyS, HostStealS: update.HostStealS, HostCapacityS: update.HostCapacityS, ClientCPUS: update.ClientCPUS,
		DeviceReadBytes: update.DeviceReadBytes, DeviceWriteBytes: update.DeviceWriteBytes,
		ReplicaApplyBatches: update.ReplicaApplyBatches, ReplicaApplyWritesets: update.ReplicaApplyWritesets,
		Samples: update.Samples, AutovacuumSamples: update.AutovacuumSamples}
	if tp := p.treesProcs(); tp > 0 {
		ph.ServerProcs = tp
	}
	primaryIO := float64(update.ServerReadBytes + update.ServerWriteBytes)
	if total := primaryIO + float64(update.ReplicaIOBytes); total > 0 {
		share := float64(update.ReplicaIOBytes) / total
		ph.DiskBusyS = update.DiskBusyS * share
		update.DiskBusyS -= ph.DiskBusyS
	}
	if update.UpdateCommitted == 0 {
		p.warn("update phase: no update transaction committed, so no writeset for the replica: ws is 0")
	}
	return ph
}

// treesProcs is the replica tree's live process count, for the tick
// precision note; 0 when unreadable.
func (p *profiler) treesProcs() int {
	t, err := p.fs.Tree(p.opts.ReplicaPID)
	if err != nil {
		return 0
	}
	return t.Processes
}

// applyPhase captures writesets in an unmeasured run with triggers, undoes
// them, and measures applying them.
func (p *profiler) applyPhase(ctx context.Context) (*Phase, error) {
	tables := p.opts.Workload.Tables()
	base, err := p.baseline()
	if err != nil {
		return nil, err
	}
	meta, err := loadTableMeta(ctx, p.admin, tables)
	if err != nil {
		return nil, fmt.Errorf("%s phase: %w", PhaseApply, err)
	}
	if err := removeCapture(ctx, p.admin, tables); err != nil {
		return nil, fmt.Errorf("%s phase: %w", PhaseApply, err)
	}
	if err := installCapture(ctx, p.admin, meta); err != nil {
		return nil, fmt.Errorf("%s phase: %w", PhaseApply, err)
	}
	defer func() {
		if err := removeCapture(context.Background(), p.admin, tables); err != nil {
			p.warn(fmt.Sprintf("removing the capture triggers: %v (drop trigger %s on the workload tables, function %s and table %s by hand)", err, captureTrigger, captureFunc, captureTable))
		}
	}()
	p.log.Info("capturing writesets (unmeasured)", "duration", p.opts.Rampup+p.opts.Duration)
	capRes, err := bench.Run(ctx, p.runOptions(p.cls.weightsFor(false), p.opts.Rampup+p.opts.Duration))
	if err != nil {
		return nil, fmt.Errorf("%s phase: capture run: %w", PhaseApply, err)
	}
	t0 := time.Now()
	if err := removeTriggers(ctx, p.admin, tables); err != nil {
		return nil, fmt.Errorf("%s phase: %w", PhaseApply, err)
	}
	t1 := time.Now()
	forward, undo, err := readCapture(ctx, p.admin, meta)
	if err != nil {
		return nil, fmt.Errorf("%s phase: %w", PhaseApply, err)
	}
	p.log.Debug("captured writesets", "writesets", len(forward), "drop_triggers", t1.Sub(t0).Round(time.Millisecond), "read", time.Since(t1).Round(time.Millisecond))
	if len(forward) == 0 {
		return nil, fmt.Errorf("%s phase: the capture run committed no update transaction", PhaseApply)
	}
	applyCfg := p.cfg.Copy()
	applyCfg.RuntimeParams["application_name"] = "tandem-plan-profile-apply"
	p.log.Info("undoing the captured writesets (unmeasured)", "writesets", len(undo))
	if _, err := applyWritesets(ctx, applyCfg, undo, p.opts.ApplyClients, 0); err != nil {
		return nil, fmt.Errorf("%s phase: undo: %w", PhaseApply, err)
	}
	p.prepare(ctx)
	captured := len(forward)
	if p.opts.Rampup > 0 {
		// Warm up on the first writesets, at most a fifth of them; the
		// rest, a suffix, is measured.
		p.log.Info("phase ramp-up", "phase", PhaseApply, "rampup", p.opts.Rampup)
		warm, err := applyWritesets(ctx, applyCfg, forward[:max(1, len(forward)/5)], p.opts.ApplyClients, p.opts.Rampup)
		if err != nil {
			return nil, fmt.Errorf("%s phase ramp-up: %w", PhaseApply, err)
		}
		forward = forward[warm.Applied:]
		if len(forward) == 0 {
			return nil, fmt.Errorf("%s phase: the ramp-up applied all %d captured writesets; nothing left to measure (the appliers are much faster than the capture run: raise --duration)", PhaseApply, captured)
		}
	}
	p.settle(base)
	p.log.Info("phase", "phase", PhaseApply, "writesets", len(forward), "appliers", p.opts.ApplyClients, "at_most", p.opts.Duration)
	var res applyResult
	ph, err := p.measured(PhaseApply, base, func() error {
		var err error
		if res, err = applyWritesets(ctx, applyCfg, forward, p.opts.ApplyClients, p.opts.Duration); err != nil {
			return fmt.Errorf("%s phase: %w", PhaseApply, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ph.Completions, ph.What = int64(res.Applied), "writesets applied (one transaction each)"
	ph.Writesets, ph.WritesetRows, ph.CapturedTotal = res.Applied, res.Rows, captured
	if capRes != nil {
		// The capture run's whole length, ramp-up included, as captured.
		for _, t := range capRes.Transactions {
			ph.CaptureUpdates += t.Counted + t.RolledBack
		}
	}
	if res.Applied == len(forward) && ph.WallS < p.opts.Duration.Seconds()/2 {
		p.warn(fmt.Sprintf("%s phase: the appliers used up the captured writesets in %.1f s of the %s allowed (applying is faster than the capture run): a short window, see the tick precision in the notes; raise --duration for a longer one", PhaseApply, ph.WallS, p.opts.Duration))
	}
	p.log.Info("phase done", "phase", PhaseApply, "applied", res.Applied, "of", captured, "server_cpu_s", round(ph.ServerCPUS, 3), "disk_busy_s", round(ph.DiskBusyS, 3))
	return ph, nil
}

func round(v float64, places int) float64 {
	f := math.Pow(10, float64(places))
	return math.Round(v*f) / f
}

// Resource names in the profile.
const (
	ResCPU  = "cpu"
	ResDisk = "disk"
)

func (p *profiler) busy(ph *Phase) planner.PhaseBusy {
	if ph == nil {
		return planner.PhaseBusy{}
	}
	pb := planner.PhaseBusy{
		Busy:        map[string]float64{ResCPU: ph.ServerCPUS / p.rep.CPUs, ResDisk: ph.DiskBusyS},
		Completions: float64(ph.Completions),
	}
	if p.opts.ReplicaPID > 0 && ph.Name == PhaseUpdate && ph.SenderCPUS > 0 {
		// The primary's WAL sender to the replica: the model charges it
		// again for every further replica (planner.Resource.WSend).
		pb.SenderBusy = map[string]float64{ResCPU: ph.SenderCPUS / p.rep.CPUs}
	}
	return pb
}

func (p *profiler) buildProfile(started time.Time, read, update, apply, mixPh *Phase) error {
	o := p.opts
	m := planner.MeasuredProfile{
		Name:              o.Name,
		Workload:          o.Workload.Name(),
		Mix:               p.mixName,
		Description:       fmt.Sprintf("%s mix %s measured by tandem plan profile on %s (%d %s)", o.Workload.Name(), p.mixName, p.rep.Target, p.rep.Scale, p.rep.ScaleName),
		Pr:                p.cls.pr,
		Pw:                p.cls.pw,
		Reads:             p.busy(read),
		Updates:           p.busy(update),
		Writesets:         p.busy(apply),
		Resources:         []string{ResCPU, ResDisk},
		ThinkTime:         o.Think.Seconds(),
		ClientsPerReplica: o.Clients,
	}
	if apply != nil && apply.ReplicaApplyBatches > 0 {
		m.ApplyBatch = round(float64(apply.ReplicaApplyWritesets)/float64(apply.ReplicaApplyBatches), 3)
	}
	m.WritesetsPerUpdate = writesetsPerUpdate(update, apply)
	if update != nil {
		m.CertifierDelay = update.CertifyMeanS
	}
	// A_1 and L(1) come from the full mix (seed 003 §4.1.1 replays both
	// classes together for L(1)); without it, from the update phase.
	src := mixPh
	if src == nil {
		src = update
	}
	if src != nil && src.UpdateStarted > 0 {
		m.A1 = float64(src.UpdateAborted) / float64(src.UpdateStarted)
		m.L1 = src.UpdateMeanMs / 1000
	}
	// Both phases that ran updates: twice the aborts A_1 rests on.
	m.ConflictRate = conflictRate(mixPh, update)
	host, _ := os.Hostname()
	var wall float64
	var completions int64
	for _, ph := range p.rep.Phases {
		wall += ph.WallS
		completions += ph.Completions
	}
	disks := strings.Join(p.disks, "+")
	m.Measured = planner.Measurement{
		At:           started.UTC().Format(time.RFC3339),
		Source:       "tandem plan profile: Utilization Law over separate read-only, update and writeset-apply phases (seed 003 §4.1.1)",
		System:       fmt.Sprintf("PostgreSQL %s, postmaster pid %d, data dir %s, on %s (%s/%s, %d CPUs, disk %s)", p.rep.ServerVersion, p.rep.PID, orUnknown(p.rep.DataDir), host, runtime.GOOS, runtime.GOARCH, p.rep.HostCPUs, disks),
		Duration:     round(wall, 3),
		Transactions: completions,
	}
	m.Trust = p.trust(read, update, apply, mixPh, src)
	prof, err := planner.ProfileFromMeasurements(m)
	if err != nil {
		return fmt.Errorf("build profile: %w", err)
	}
	if p.bg != nil && p.rep.CPUs > 0 {
		frac := func(cores float64) float64 {
			f := round(cores/p.rep.CPUs, 5)
			if f > 0.9 {
				p.warn(fmt.Sprintf("idle phase: the tree kept %.0f%% of its %g CPUs busy with no transaction; the profile counts 90%%", 100*f, p.rep.CPUs))
				f = 0.9
			}
			return f
		}
		for i := range prof.Resources {
			if prof.Resources[i].Name == ResCPU {
				prof.Resources[i].BG = frac(p.bg.ServerCores)
				if o.ReplicaPID > 0 {
					prof.Resources[i].BGReplica = frac(p.bg.ReplicaCores)
				}
			}
		}
		if err := prof.Validate(); err != nil {
			return fmt.Errorf("build profile: %w", err)
		}
	}
	p.rep.Profile = prof
	if p.rep.FillCapacity() {
		if err := p.rep.Profile.Validate(); err != nil {
			return fmt.Errorf("build profile: %w", err)
		}
	}
	if mixPh != nil {
		p.rep.Check = mixCheck(prof, p.rep.CPUs, mixPh)
		p.rep.Split = splitMix(prof, p.rep.CPUs, mixPh)
		for _, c := range p.rep.Check {
			if math.Abs(c.Error) > 0.25 && c.MeasuredS > 0.05 {
				p.warn(fmt.Sprintf("%s: demands measured phase by phase predict %.2f s busy for the mix phase, measured %.2f s (%+.0f%%): the demands do not add up here: commit batching (group commit), caching or other processes' load differ between the phases", c.Resource, c.PredictS, c.MeasuredS, 100*c.Error))
			}
		}
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// mixCheck predicts the mix phase's busy time from rc and wc.
func mixCheck(prof planner.Profile, cpus float64, mixPh *Phase) []MixCheck {
	var out []MixCheck
	for _, r := range prof.Resources {
		measured := mixPh.DiskBusyS
		if r.Name == ResCPU {
			measured = mixPh.ServerCPUS / cpus
		}
		pred := float64(mixPh.ReadCommitted)*r.RC + float64(mixPh.UpdateStarted)*r.WC
		c := MixCheck{Resource: r.Name, MeasuredS: round(measured, 4), PredictS: round(pred, 4)}
		if measured > 0 {
			c.Error = round((pred-measured)/measured, 4)
		}
		if mixPh.UpdateStarted > 0 {
			c.WCFromMix = math.Max(0, measured-float64(mixPh.ReadCommitted)*r.RC) / float64(mixPh.UpdateStarted)
		}
		out = append(out, c)
	}
	return out
}

// MixSplit divides a replicated path's mix phase between its two nodes.
// The router balanced the reads over both and sent every update to the
// profiled node (the primary); the replica applied the updates. With the
// reads each node served at the read phase's rc, the rest of each node's
// CPU is its update work at the mix's rate and in the mix's company:
//
//	wc = (primary busy − primary's reads·rc) / update attempts
//	ws = (replica busy − replica's reads·rc) / committed updates
//
// (seconds, CPU divided by the CPUs as in the profile). The update phase
// measures both with updates alone, at their own rate, each waiting for
// the replica; on 0.25-core hosts it charged the primary more per update
// than it could have spent in the mix at N = 3 and 4 (docs/benchmarks.md).
//
// Multi-master's replicated path (clients on the profiled node only, no
// reads on the replica) splits the same way with every read on the
// profiled node: its tree's CPU less the reads at rc is its update work
// (wc, certification included), and the replica's CPU is its apply of
// the profiled node's writesets (ws, per committed update), at the batch
// size the replica applied them in during the mix (ApplyBatch).
type MixSplit struct {
	// ReadsPrimary and ReadsReplica are the mix's committed reads, shared
	// out as the router routed the phase's read attempts.
	ReadsPrimary float64 `json:"reads_primary"`
	ReadsReplica float64 `json:"reads_replica"`
	// PrimaryBusyS and ReplicaBusyS are each tree's CPU in the phase.
	PrimaryBusyS float64 `json:"primary_busy_s"`
	ReplicaBusyS float64 `json:"replica_busy_s"`
	RC           float64 `json:"rc_s"`
	WC           float64 `json:"wc_from_mix_s"`
	WS           float64 `json:"ws_from_mix_s"`
	// ApplyBatch is the writesets per batch the replica applied during
	// the mix (multi-master; 0: not read), the batch size WS holds.
	ApplyBatch float64 `json:"apply_batch_writesets,omitempty"`
	// MultiMaster: the split of a multi-master replicated path (every
	// read on the profiled node; no routing).
	MultiMaster bool `json:"multi_master,omitempty"`
}

// splitMix is the MixSplit of a replicated profile's mix phase, nil when
// the phase was not counted per node or the profile has no CPU resource.
func splitMix(prof planner.Profile, cpus float64, mixPh *Phase) *MixSplit {
	mm := mixPh.ReplicaApplyWritesets > 0 && !mixPh.ReadsOnReplica
	if !mm && (mixPh.RoutedToReplica == nil || !mixPh.ReadsOnReplica || mixPh.ReadStarted == 0) || mixPh.UpdateStarted == 0 || cpus <= 0 {
		return nil
	}
	var rc float64
	found := false
	for _, r := range prof.Resources {
		if r.Name == ResCPU {
			rc, found = r.RC, true
		}
	}
	if !found {
		return nil
	}
	if mm {
		// ServerCPUS is the profiled tree's alone (no reads on the replica).
		s := &MixSplit{ReadsPrimary: float64(mixPh.ReadCommitted), ReplicaBusyS: mixPh.ReplicaCPUS / cpus,
			PrimaryBusyS: mixPh.ServerCPUS / cpus, RC: rc, MultiMaster: true}
		s.WC = math.Max(0, s.PrimaryBusyS-s.ReadsPrimary*rc) / float64(mixPh.UpdateStarted)
		if mixPh.UpdateCommitted > 0 {
			s.WS = s.ReplicaBusyS / float64(mixPh.UpdateCommitted)
		}
		if mixPh.ReplicaApplyBatches > 0 {
			s.ApplyBatch = round(float64(mixPh.ReplicaApplyWritesets)/float64(mixPh.ReplicaApplyBatches), 3)
		}
		return s
	}
	share := math.Min(1, float64(*mixPh.RoutedToReplica)/float64(mixPh.ReadStarted))
	s := &MixSplit{
		ReadsReplica: share * float64(mixPh.ReadCommitted),
		ReplicaBusyS: mixPh.ReplicaCPUS / cpus,
		PrimaryBusyS: (mixPh.ServerCPUS - mixPh.ReplicaCPUS) / cpus,
		RC:           rc,
	}
	s.ReadsPrimary = float64(mixPh.ReadCommitted) - s.ReadsReplica
	s.WC = math.Max(0, s.PrimaryBusyS-s.ReadsPrimary*rc) / float64(mixPh.UpdateStarted)
	if mixPh.UpdateCommitted > 0 {
		s.WS = math.Max(0, s.ReplicaBusyS-s.ReadsReplica*rc) / float64(mixPh.UpdateCommitted)
	}
	return s
}
