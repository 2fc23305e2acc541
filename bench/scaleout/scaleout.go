// Package scaleout measures how a replicated design scales with the number
// of nodes on emulated hosts (package lab): for each N it starts a fresh
// cluster of N nodes under the lab's CPU quotas (N = 1: one node alone,
// Options.Alone), loads the workload, runs each mix with the workload client in its
// own cgroup, and records throughput X(N), response times and every host's
// CPU utilisation from its cgroup; medians over rounds, and the efficiency
// X(N) / (N * X(1)). Results are emulated.
//
// It owns the sweep's order and arithmetic. It reuses package bench for the
// load and the run, package cluster to start processes and package lab for
// the hosts; it must not implement a workload or a node.
package scaleout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
	"github.com/tandemdb/tandem/multimaster"
	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/physical"
	"github.com/tandemdb/tandem/planner/profiler"
	"github.com/tandemdb/tandem/secure"
)

// ErrBadOption is an option the sweep cannot run with.
var ErrBadOption = errors.New("bad scale-out option")

// Designs the sweep knows.
var Designs = []string{"single-master", "hot-standby", "multi-master"}

// Options of a sweep.
type Options struct {
	Design  string // single-master | hot-standby | multi-master
	Backend string // sqlite | postgres
	// Engine replicates at N > 1: "writeset" (tandem's log; the default,
	// every back end) or "physical" (PostgreSQL's streaming replication:
	// postgres, single-master or hot-standby).
	Engine   string
	Nodes    []int // the Ns, e.g. 1, 2, 3, 4
	Workload bench.Workload
	Mixes    []string
	Scale    int // e.g. TM1 subscribers
	// ClientsPerNode: the run at N has N * ClientsPerNode closed-loop
	// clients (seed 003: C clients per replica).
	ClientsPerNode int
	Rampup         time.Duration
	Duration       time.Duration
	Rounds         int
	Lab            config.Lab
	// Exe is the tandem binary the nodes run (default: this executable).
	Exe string
	// Dir holds the clusters' files and run directories (removed after
	// each N unless KeepDir).
	Dir      string
	KeepDir  bool
	Logger   *slog.Logger
	Progress io.Writer
	// Superuser makes the clients' role a superuser of each managed
	// PostgreSQL (users[].superuser): `tandem plan validate`'s profiler
	// needs CHECKPOINT between its phases, so that one phase's dirty
	// pages (the load's, first of all) are not written during the next.
	Superuser bool
	// NoQuiesce skips settling each cluster (VACUUM, CHECKPOINT) before
	// each measured window (quiesce.go).
	NoQuiesce     bool
	quiesceWarned bool
	// ReadConsistency is the router's read_consistency at N > 1 (session,
	// strong, bounded, eventual; "" is the router's default, session): what
	// reading one's own writes costs on replicas is part of the figure.
	ReadConsistency string
	// MaxSteal: a measured window in which the hypervisor took more than
	// this many cores from the machine (/proc/stat's steal) is measured
	// again, up to StealRetries times; 0 keeps every window. On this
	// development machine a transaction's CPU time rose by up to 1.6x in
	// windows with 0.1-0.4 cores stolen (docs/benchmarks.md).
	MaxSteal float64
	// Speed, when set, gives each window the machine's memory latency
	// over it (Point.MemLatencyNS): lab.MemoryProbe.
	Speed SpeedProbe
	// Alone is how clients reach N = 1 on the physical engine
	// (single-master): AloneRouted (the default) or AloneSocket.
	Alone string
}

// How clients reach N = 1 on the physical engine (Options.Alone).
const (
	// AloneRouted: the primary alone behind the router, on its own host,
	// which reaches the server over TCP with TLS as it reaches every
	// server at N >= 2 (router.direct): N = 1 differs from N >= 2 only in
	// the replicas, and its clients are on other hosts, as seed 003's.
	AloneRouted = "router"
	// AloneSocket: the standalone server's own Unix socket, as a client
	// on the database's host reaches it (no TCP, no TLS: 0.036 against
	// 0.089 ms of the host's CPU per TM1 read through the router's TLS
	// hop on 0.15-core hosts, 2026-12-06).
	AloneSocket = "socket"
)

// AloneModes are Options.Alone's values.
var AloneModes = []string{AloneRouted, AloneSocket}

// alone is Report.Alone.
func (o Options) alone() string {
	switch {
	case o.routedAlone():
		return AloneRouted
	case o.Backend == "postgres" && o.Engine == config.EnginePhysical:
		return AloneSocket
	}
	return ""
}

// routedAlone reports whether N = 1 is the primary alone behind the
// router (Options.Alone).
func (o Options) routedAlone() bool {
	return o.Backend == "postgres" && o.Engine == config.EnginePhysical && o.Design == "single-master" && o.Alone != AloneSocket
}

// SpeedProbe says how fast the machine's memory was between two times:
// the median latency of one load in nanoseconds and the number of
// samples (lab.MemoryProbe).
type SpeedProbe interface {
	Median(from, to time.Time) (ns float64, n int)
}

// Host is one emulated host's use over a measured window.
type Host struct {
	Name string  `json:"name"`
	Kind string  `json:"kind"` // node | router | client
	CPU  float64 `json:"cpu_quota"`
	// Util is the CPU it used in cores (CPU seconds per second); Share is
	// Util over its quota (0 without one).
	Util  float64 `json:"util"`
	Share float64 `json:"share,omitempty"`
	// Periods is how many 10 ms scheduler periods it ran in over the
	// window, Throttled in how many of them it hit its quota.
	Periods   int64 `json:"periods"`
	Throttled int64 `json:"throttled_periods"`
}

// Point is one (N, mix, round) measurement.
type Point struct {
	N       int     `json:"n"`
	Mix     string  `json:"mix"`
	Round   int     `json:"round"`
	Clients int     `json:"clients"`
	X       float64 `json:"x"` // MQTh, transactions/s
	MeanMs  float64 `json:"mean_ms"`
	P90Ms   float64 `json:"p90_ms"`
	// XDone and MeanDoneMs count every transaction run to its end
	// (committed, or rolled back by the workload's rules): the unit of a
	// planner profile's demands (bench.Result.CompletedTPS).
	XDone      float64 `json:"x_completed,omitempty"`
	MeanDoneMs float64 `json:"mean_completed_ms,omitempty"`
	// CostDoneMs is the clients' time per completed transaction, the
	// time of the aborted ones (not retried) included
	// (bench.Result.CompletedCostMs): the planner's response time.
	CostDoneMs float64 `json:"cost_completed_ms,omitempty"`
	// AbortRate is the share of the UpdateAttempts that aborted (class
	// 40, retries included: bench.Result.UpdateAbortRate).
	AbortRate      float64 `json:"abort_rate,omitempty"`
	UpdateAttempts int64   `json:"update_attempts,omitempty"`
	// UpdateMeanMs is the update transactions' mean response time
	// (bench.Result.UpdateMeanMs): the window the planner's CW(N) models.
	UpdateMeanMs float64 `json:"update_mean_ms,omitempty"`
	// ReadMeanMs is the read-only transactions' (bench.Result.ReadMeanMs).
	ReadMeanMs float64 `json:"read_mean_ms,omitempty"`
	Errors     int64   `json:"errors"`
	Hosts      []Host  `json:"hosts"`
	// MachineBusy is the cores every process of the machine used over
	// the window (the root cgroup's CPU time: lab.MachineCPU), of
	// MachineCPUs; Steal the cores the hypervisor took from this machine.
	// Emulated hosts are independent only while MachineBusy stays below
	// MachineCPUs: at it, every cgroup waits for the others.
	MachineBusy float64 `json:"machine_busy"`
	Steal       float64 `json:"steal"`
	MachineCPUs int     `json:"machine_cpus"`
	// StealRetries is how many earlier windows of this point were
	// discarded for losing more than Options.MaxSteal to the hypervisor.
	StealRetries int `json:"steal_retries,omitempty"`
	// MemLatencyNS is the machine's memory latency over the window
	// (Options.Speed; 0 without it): what other guests of the hypervisor
	// did to this machine's caches, which moves a transaction's CPU cost
	// by up to 2x without any stolen time (lab/speed.go).
	MemLatencyNS float64 `json:"mem_latency_ns,omitempty"`
	// Routed is, at N > 1, how many transactions the router sent each
	// node over the window (its /status counts at both ends): what each
	// host served, which its CPU is divided by to get a demand.
	Routed map[string]uint64 `json:"routed,omitempty"`
	// ApplyBatch is, in a multi-master cluster, how many writesets a
	// node's batch of certified writesets carried over the window, all
	// nodes together (their /status apply counters at both ends): a
	// batch is one back-end transaction, so its fixed cost is shared by
	// this many writesets.
	ApplyBatch float64 `json:"apply_batch_writesets,omitempty"`
	// ApplyOwnShare is the share of those writesets their own node had
	// committed (their committer found an earlier GSN not applied yet,
	// so the loop applied them), FastApplyShare the share of the nodes'
	// commits their committer applied at once, each in a back-end
	// transaction of its own.
	ApplyOwnShare  float64 `json:"apply_own_share,omitempty"`
	FastApplyShare float64 `json:"fast_apply_share,omitempty"`
	// CertifyMs is, in a multi-master cluster, the nodes' mean
	// certification round trip over the window (their /status): the
	// certifier's delay on an update's commit.
	CertifyMs float64 `json:"certify_ms,omitempty"`
	// LogWaitMs and ApplyWaitMs are, in a multi-master cluster, what a
	// commit its committer could not apply at once waited for after its
	// certification, on average over the window: for its node to know it
	// and every GSN before it (its copy of the certifier's log, or the
	// leader's answer), then for the apply loop to apply it (the nodes'
	// /status).
	LogWaitMs   float64 `json:"log_wait_ms,omitempty"`
	ApplyWaitMs float64 `json:"apply_wait_ms,omitempty"`
}

// Row is the median over rounds of one (N, mix).
type Row struct {
	N          int     `json:"n"`
	Mix        string  `json:"mix"`
	Clients    int     `json:"clients"`
	X          float64 `json:"x"`
	Efficiency float64 `json:"efficiency"` // X(N) / (N * X(1)); 0 without X(1)
	MeanMs     float64 `json:"mean_ms"`
	P90Ms      float64 `json:"p90_ms"`
	// XDone, MeanDoneMs, AbortRate and UpdateAttempts are the medians of
	// Point's (0: not measured; an abort rate is measured where
	// UpdateAttempts > 0).
	XDone          float64 `json:"x_completed,omitempty"`
	MeanDoneMs     float64 `json:"mean_completed_ms,omitempty"`
	CostDoneMs     float64 `json:"cost_completed_ms,omitempty"`
	AbortRate      float64 `json:"abort_rate,omitempty"`
	UpdateAttempts float64 `json:"update_attempts,omitempty"`
	// NodeUtil is the median node's utilisation (cores), MaxNodeUtil the
	// busiest node's; RouterUtil and ClientUtil those processes'.
	NodeUtil    float64 `json:"node_util"`
	MaxNodeUtil float64 `json:"max_node_util"`
	RouterUtil  float64 `json:"router_util"`
	ClientUtil  float64 `json:"client_util"`
	// MachineBusy is the median of the rounds' whole-machine busy cores.
	MachineBusy float64 `json:"machine_busy"`
	// MemLatencyNS is the median of the rounds' memory latencies (0: not
	// measured).
	MemLatencyNS float64 `json:"mem_latency_ns,omitempty"`
	Rounds       int     `json:"rounds"`
}

// Report is a whole sweep.
type Report struct {
	Design  string `json:"design"`
	Backend string `json:"backend"`
	Engine  string `json:"engine,omitempty"`
	// ReadConsistency is the router's at N > 1 ("" for its default).
	ReadConsistency string `json:"read_consistency,omitempty"`
	// Alone is how N = 1 was reached on the physical engine's
	// single-master (Options.Alone), "" elsewhere.
	Alone    string    `json:"alone,omitempty"`
	Workload string    `json:"workload"`
	Scale    int       `json:"scale"`
	Lab      string    `json:"lab"`
	Emulated bool      `json:"emulated"`
	Duration string    `json:"duration"`
	Rampup   string    `json:"rampup"`
	Started  time.Time `json:"started"`
	Rows     []Row     `json:"rows"`
	Points   []Point   `json:"points"`
}

func (o *Options) check() error {
	if !slices.Contains(Designs, o.Design) {
		return fmt.Errorf("%w: --design %q: use %s", ErrBadOption, o.Design, strings.Join(Designs, " or "))
	}
	if o.Backend != "sqlite" && o.Backend != "postgres" {
		return fmt.Errorf("%w: --backend %q: use sqlite or postgres", ErrBadOption, o.Backend)
	}
	if o.ReadConsistency != "" && !slices.Contains(config.ReadConsistencies, o.ReadConsistency) {
		return fmt.Errorf("%w: --read-consistency %q: use %s", ErrBadOption, o.ReadConsistency, strings.Join(config.ReadConsistencies, ", "))
	}
	if o.Alone != "" && !slices.Contains(AloneModes, o.Alone) {
		return fmt.Errorf("%w: --alone %q: use %s", ErrBadOption, o.Alone, strings.Join(AloneModes, " or "))
	}
	switch o.Engine {
	case "", config.EngineWriteset:
	case config.EnginePhysical:
		if o.Backend != "postgres" || o.Design == "multi-master" {
			return fmt.Errorf("%w: --engine physical ships PostgreSQL's WAL: it needs --backend postgres and single-master or hot-standby (have %s, %s)", ErrBadOption, o.Backend, o.Design)
		}
	default:
		return fmt.Errorf("%w: --engine %q: use writeset or physical", ErrBadOption, o.Engine)
	}
	if len(o.Nodes) == 0 {
		return fmt.Errorf("%w: --nodes: give N or a range, e.g. 1..4", ErrBadOption)
	}
	if o.MaxSteal < 0 {
		return fmt.Errorf("%w: --max-steal %g: give cores >= 0 (0 keeps every window)", ErrBadOption, o.MaxSteal)
	}
	for _, n := range o.Nodes {
		if n < 1 || n > config.MaxSingleMasterNodes {
			return fmt.Errorf("%w: --nodes: %d is not 1 to %d", ErrBadOption, n, config.MaxSingleMasterNodes)
		}
	}
	if o.Rounds < 1 || o.ClientsPerNode < 1 || o.Duration <= 0 || o.Scale < 1 || o.Workload == nil || len(o.Mixes) == 0 {
		return fmt.Errorf("%w: rounds, clients, duration, scale, workload and mixes must be set (rounds %d, clients %d, duration %v, scale %d)", ErrBadOption, o.Rounds, o.ClientsPerNode, o.Duration, o.Scale)
	}
	return nil
}

// ParseNodes reads --nodes: "1..4", "1,2,4" or "3".
func ParseNodes(s string) ([]int, error) {
	var ns []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "..")
		var a, b int
		if _, err := fmt.Sscanf(lo, "%d", &a); err != nil {
			return nil, fmt.Errorf("%w: --nodes %q: %q is not a number", ErrBadOption, s, lo)
		}
		b = a
		if isRange {
			if _, err := fmt.Sscanf(hi, "%d", &b); err != nil {
				return nil, fmt.Errorf("%w: --nodes %q: %q is not a number", ErrBadOption, s, hi)
			}
		}
		if a < 1 || b < a {
			return nil, fmt.Errorf("%w: --nodes %q: write N, N..M with 1 <= N <= M, or a list", ErrBadOption, s)
		}
		for n := a; n <= b; n++ {
			if !slices.Contains(ns, n) {
				ns = append(ns, n)
			}
		}
	}
	sort.Ints(ns)
	return ns, nil
}

// Run runs the sweep: rounds outermost, so a slow spell of the machine
// spreads over every N rather than hitting one.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := lab.Check(o.Lab); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Exe = exe
	}
	rep := &Report{Design: o.Design, Backend: o.Backend, Engine: o.Engine, ReadConsistency: o.ReadConsistency, Alone: o.alone(), Workload: o.Workload.Name(), Scale: o.Scale, Lab: o.Lab.String(),
		Emulated: true, Duration: o.Duration.String(), Rampup: o.Rampup.String(), Started: time.Now().UTC()}
	for r := 1; r <= o.Rounds; r++ {
		for _, n := range o.Nodes {
			pts, err := o.one(ctx, n, r)
			rep.Points = append(rep.Points, pts...)
			if err != nil {
				rep.Rows = Summarise(rep.Points)
				return rep, fmt.Errorf("N = %d, round %d: %w", n, r, err)
			}
		}
	}
	rep.Rows = Summarise(rep.Points)
	return rep, nil
}

// one measures N nodes in a fresh cluster and lab: every mix once.
func (o *Options) one(ctx context.Context, n, round int) ([]Point, error) {
	env, err := Start(ctx, *o, n, fmt.Sprintf("n%d-r%d", n, round))
	if err != nil {
		return nil, err
	}
	defer env.Close()
	var pts []Point
	for _, mix := range o.Mixes {
		var p Point
		for try := 0; ; try++ {
			o.quiesce(ctx, env)
			p, err = o.measure(ctx, env, mix)
			p.Round, p.StealRetries = round, try
			if err != nil {
				return pts, fmt.Errorf("mix %s: %w", mix, err)
			}
			fmt.Fprintf(o.Progress, "  %-10s X = %8.1f/s  mean %.2f ms%s  %s%s; machine %.2f of %d cores, steal %.2f%s\n", mix, p.X, p.MeanMs, classLine(p), hostsLine(p.Hosts), routedLine(p.Routed)+applyLine(p)+abortLine(p.AbortRate), p.MachineBusy, p.MachineCPUs, p.Steal, memLine(p.MemLatencyNS))
			if o.MaxSteal <= 0 || p.Steal <= o.MaxSteal || try >= StealRetries {
				break
			}
			fmt.Fprintf(o.Progress, "  %-10s the hypervisor took %.2f cores during that window (more than --max-steal %.2f): measuring again\n", mix, p.Steal, o.MaxSteal)
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// DefaultMaxSteal is the commands' --max-steal: 0.05 cores.
const DefaultMaxSteal = 0.05

// StealRetries is how many times a window that lost more than MaxSteal
// cores to the hypervisor is measured again (the last one counts).
const StealRetries = 2

// measure runs one mix and reads every host's cgroup over the measured
// window (from the end of the ramp-up to the end of the run).
func (o *Options) measure(ctx context.Context, env *Env, mix string) (Point, error) {
	lb, lc, dsn, n := env.Lab, env.Cluster, env.DSN, env.N
	p := Point{N: n, Mix: mix, Clients: n * o.ClientsPerNode}
	type sample struct {
		at      time.Time
		u       map[string]lab.Usage
		machine time.Duration // every process's CPU time
		host    profiler.HostCPU
		routed  map[string]uint64
		apply   ApplyCount // multi-master: every node's together
		ok, hok bool
		aok     bool
	}
	read := func() sample {
		s := sample{at: time.Now()}
		if m, err := lb.MachineCPU(); err == nil {
			s.machine, s.ok = m, true
		}
		if h, err := profiler.HostFS.HostCPU(); err == nil {
			s.host, s.hok = h, true
		}
		s.u = lb.Usage()
		if env.Config != nil && env.Config.Router != nil {
			// Best effort: a router without an admin address has none.
			s.routed, _ = RoutedTransactions(ctx, env.Config)
		}
		if env.Config != nil && env.Config.MultiMaster() && n > 1 {
			if counts, err := ApplyBatches(ctx, env.Config); err == nil {
				for _, c := range counts {
					s.apply = s.apply.Add(c)
				}
				s.aok = true
			}
		}
		return s
	}
	first := make(chan sample, 1)
	var timer *time.Timer
	res, err := bench.Run(ctx, bench.RunOptions{Workload: o.Workload, DSN: dsn, Mix: mix, Clients: p.Clients,
		Rampup: o.Rampup, Duration: o.Duration, Scale: o.Scale, Logger: o.Logger,
		OnStart: func(time.Time) { timer = time.AfterFunc(o.Rampup, func() { first <- read() }) }})
	last := read()
	if timer != nil {
		timer.Stop()
	}
	if err != nil {
		return p, err
	}
	if res.Totals.Unknown > 0 {
		return p, fmt.Errorf("%d transactions ended with SQLSTATE 08007 (outcome unknown) in a run without failures", res.Totals.Unknown)
	}
	if res.Totals.Errors > 0 {
		return p, fmt.Errorf("%d unexpected errors (first: %s)", res.Totals.Errors, strings.Join(res.FirstErrors, "; "))
	}
	for _, pr := range lc.Procs {
		select {
		case <-pr.Done():
			return p, fmt.Errorf("%s %s exited during the run; see %s", pr.Kind, pr.Name, pr.Log)
		default:
		}
	}
	var s0 sample
	select {
	case s0 = <-first:
	default:
		return p, errors.New("the measured window's start was never reached")
	}
	p.X, p.MeanMs, p.P90Ms, p.Errors = res.MQTh, res.Totals.MeanMs, res.Totals.P90Ms, res.Totals.Errors
	p.XDone, p.MeanDoneMs, p.CostDoneMs, p.AbortRate, p.UpdateAttempts = res.CompletedTPS, res.CompletedMeanMs, res.CompletedCostMs, res.UpdateAbortRate, res.UpdateAttempts
	p.UpdateMeanMs, p.ReadMeanMs = res.UpdateMeanMs, res.ReadMeanMs
	wall := last.at.Sub(s0.at).Seconds()
	if s0.ok && last.ok && wall > 0 {
		p.MachineBusy = round3((last.machine - s0.machine).Seconds() / wall)
		p.MachineCPUs = runtime.NumCPU()
	}
	if o.Speed != nil {
		p.MemLatencyNS, _ = o.Speed.Median(s0.at, last.at)
		p.MemLatencyNS = round3(p.MemLatencyNS)
	}
	if s0.hok && last.hok && wall > 0 {
		// Steal comes from the hypervisor's steal clock, not a tick
		// sample, so /proc/stat's figure holds.
		p.Steal = round3(float64(last.host.Steal-s0.host.Steal) / (wall * profiler.ClockTicks))
	}
	if s0.routed != nil && last.routed != nil {
		p.Routed = make(map[string]uint64, len(last.routed))
		for id, v := range last.routed {
			p.Routed[id] = v - s0.routed[id]
		}
	}
	if s0.aok && last.aok {
		d := last.apply.Sub(s0.apply)
		p.ApplyBatch = round3(d.PerBatch())
		p.ApplyOwnShare = round3(d.OwnShare())
		p.FastApplyShare = round3(d.FastShare())
		p.CertifyMs = round3(1000 * d.CertifyMean())
		lw, aw := d.WaitMeans()
		p.LogWaitMs, p.ApplyWaitMs = round3(1000*lw), round3(1000*aw)
	}
	kinds := map[string]string{lab.ClientHost: "client"}
	for _, pr := range lc.Procs {
		kinds[pr.Name] = pr.Kind
	}
	for _, h := range lb.Hosts() {
		u0, ok0 := s0.u[h.Name]
		u1, ok1 := last.u[h.Name]
		if !ok0 || !ok1 || wall <= 0 {
			continue
		}
		d := u1.Sub(u0)
		hs := Host{Name: h.Name, Kind: kinds[h.Name], CPU: h.CPU, Util: round3(d.CPU.Seconds() / wall), Periods: d.Periods, Throttled: d.Throttled}
		if h.CPU > 0 {
			hs.Share = round3(hs.Util / h.CPU)
		}
		p.Hosts = append(p.Hosts, hs)
	}
	return p, nil
}

// classLine is the progress lines' mean response time of the read-only
// and the update transactions ("" unless the mix has both).
func classLine(p Point) string {
	if p.ReadMeanMs <= 0 || p.UpdateMeanMs <= 0 {
		return ""
	}
	return fmt.Sprintf(" (reads %.2f, updates %.2f)", p.ReadMeanMs, p.UpdateMeanMs)
}

// memLine is the progress lines' memory latency ("" when not measured).
func memLine(ns float64) string {
	if ns <= 0 {
		return ""
	}
	return fmt.Sprintf(", memory %.0f ns", ns)
}

func hostsLine(hs []Host) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, fmt.Sprintf("%s %.2f", h.Name, h.Util))
	}
	return "CPU " + strings.Join(parts, ", ")
}

// applyLine is the progress lines' writesets per apply batch
// (multi-master), "" when not measured.
// abortLine is the progress lines' update abort rate ("" with none).
func abortLine(a float64) string {
	if a <= 0 {
		return ""
	}
	return fmt.Sprintf("; %.2f%% of update attempts aborted", 100*a)
}

func applyLine(p Point) string {
	var out string
	if p.ApplyBatch > 0 {
		out = fmt.Sprintf("; %.1f writesets per apply batch (%.0f %% the node's own; own applied at once %.0f %%)", p.ApplyBatch, 100*p.ApplyOwnShare, 100*p.FastApplyShare)
	}
	if p.CertifyMs > 0 {
		out += fmt.Sprintf("; certification %.2f ms", p.CertifyMs)
	}
	if p.LogWaitMs > 0 || p.ApplyWaitMs > 0 {
		out += fmt.Sprintf(", then waits for the node's log %.2f ms and its apply %.2f ms", p.LogWaitMs, p.ApplyWaitMs)
	}
	return out
}

// routedLine is the progress lines' share of the window's transactions
// the router sent each node ("" without the router's counts).
func routedLine(r map[string]uint64) string {
	var total uint64
	ids := make([]string, 0, len(r))
	for id, v := range r {
		total += v
		ids = append(ids, id)
	}
	if total == 0 {
		return ""
	}
	slices.Sort(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s %.0f%%", id, 100*float64(r[id])/float64(total))
	}
	return "; routed " + strings.Join(parts, ", ")
}

// Summarise takes the median over rounds of each (N, mix) and the
// efficiency against N = 1 of the same mix.
func Summarise(pts []Point) []Row {
	type key struct {
		n   int
		mix string
	}
	groups := map[key][]Point{}
	var keys []key
	for _, p := range pts {
		k := key{p.N, p.Mix}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].mix != keys[j].mix {
			return firstIndex(pts, keys[i].mix) < firstIndex(pts, keys[j].mix)
		}
		return keys[i].n < keys[j].n
	})
	var rows []Row
	x1 := map[string]float64{}
	for _, k := range keys {
		g := groups[k]
		r := Row{N: k.n, Mix: k.mix, Clients: g[0].Clients, Rounds: len(g)}
		r.X = median(g, func(p Point) float64 { return p.X })
		r.MeanMs = median(g, func(p Point) float64 { return p.MeanMs })
		r.P90Ms = median(g, func(p Point) float64 { return p.P90Ms })
		r.XDone = median(g, func(p Point) float64 { return p.XDone })
		r.MeanDoneMs = median(g, func(p Point) float64 { return p.MeanDoneMs })
		r.CostDoneMs = median(g, func(p Point) float64 { return p.CostDoneMs })
		r.AbortRate = median(g, func(p Point) float64 { return p.AbortRate })
		r.UpdateAttempts = median(g, func(p Point) float64 { return float64(p.UpdateAttempts) })
		r.NodeUtil = median(g, func(p Point) float64 { return medianNode(p.Hosts) })
		r.MaxNodeUtil = median(g, func(p Point) float64 { return maxNode(p.Hosts) })
		r.RouterUtil = median(g, func(p Point) float64 { return kindUtil(p.Hosts, "router") })
		r.ClientUtil = median(g, func(p Point) float64 { return kindUtil(p.Hosts, "client") })
		r.MachineBusy = median(g, func(p Point) float64 { return p.MachineBusy })
		r.MemLatencyNS = median(g, func(p Point) float64 { return p.MemLatencyNS })
		if k.n == 1 {
			x1[k.mix] = r.X
		}
		if x := x1[k.mix]; x > 0 {
			r.Efficiency = round3(r.X / (float64(k.n) * x))
		}
		rows = append(rows, r)
	}
	return rows
}

func firstIndex(pts []Point, mix string) int {
	return slices.IndexFunc(pts, func(p Point) bool { return p.Mix == mix })
}

func median(g []Point, f func(Point) float64) float64 {
	vs := make([]float64, len(g))
	for i, p := range g {
		vs[i] = f(p)
	}
	return round3(medianOf(vs))
}

func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	sort.Float64s(vs)
	m := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[m]
	}
	return (vs[m-1] + vs[m]) / 2
}

func nodeUtils(hs []Host) []float64 {
	var vs []float64
	for _, h := range hs {
		if h.Kind == "node" {
			vs = append(vs, h.Util)
		}
	}
	return vs
}

func medianNode(hs []Host) float64 { return medianOf(nodeUtils(hs)) }

func maxNode(hs []Host) float64 {
	vs := nodeUtils(hs)
	if len(vs) == 0 {
		return 0
	}
	return slices.Max(vs)
}

func kindUtil(hs []Host, kind string) float64 {
	for _, h := range hs {
		if h.Kind == kind {
			return h.Util
		}
	}
	return 0
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// clusterFile is the cluster of N nodes: N = 1 a standalone node (its own
// front door, no router, no replication) or, on the physical engine's
// single-master (Options.Alone), the primary alone behind the router on
// 1-safe commits; else the design with a router
// (single-master routes each transaction: reads to replicas, writes to the
// primary; hot-standby sends everything to the primary; multi-master
// balances every transaction over every node, with a witness at every N
// where the certifier leads, as seed 003's runs on machines of its own
// and as the profile's two nodes have it: coordinator/DESIGN.md), safeness
// 2-safe-received with ack one and relaxed durability, manual failover (no
// coordinator: its CPU would blur the figure).
func clusterFile(o Options, n int, runDir string) (string, error) {
	design, backend, engine, superuser := o.Design, o.Backend, o.Engine, o.Superuser
	// Every address at once ("nodes[1].listen is already used by
	// nodes[0].metrics" was seen when they were picked one at a time).
	var ports cluster.Ports
	defer ports.Release()
	addr := ports.Addr
	var b strings.Builder
	d := design
	alone := n == 1 && o.routedAlone()
	if n == 1 && !alone {
		d = "standalone"
	}
	fmt.Fprintf(&b, "# written by tandem bench scaleout\ncluster = \"scaleout-%d\"\ndesign = %q\nrun_dir = %q\nlog_level = \"warn\"\n", n, d, runDir)
	b.WriteString("[[users]]\nname = \"tandem\"\npassword = \"tandem\"\n")
	if superuser && backend == "postgres" {
		b.WriteString("superuser = true\n")
	}
	if n > 1 && d == "multi-master" {
		w, err := addr()
		if err != nil {
			return "", err
		}
		// Its metrics: the Raft leader's own view of the round trip to
		// each node (tandem_raft_replication_appendEntries_rpc).
		wm, err := addr()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "[witness]\nid = \"w\"\nraft_listen = %q\nmetrics = %q\n", w, wm)
	}
	if n > 1 || alone {
		switch {
		case alone:
			// No replica to wait for.
			b.WriteString("[replication]\nengine = \"physical\"\nsafeness = \"1-safe\"\n")
		case engine == config.EnginePhysical:
			// remote_write, FIRST 1; PostgreSQL's own WAL flush (strict).
			b.WriteString("[replication]\nengine = \"physical\"\nsafeness = \"2-safe-received\"\nack = \"one\"\n")
		default:
			b.WriteString("[replication]\nengine = \"writeset\"\nsafeness = \"2-safe-received\"\nack = \"one\"\ndurability = \"relaxed\"\n")
		}
		r, err := addr()
		if err != nil {
			return "", err
		}
		// The router's admin address: `tandem plan validate` reads how
		// many transactions it sent each node (RoutedTransactions).
		rm, err := addr()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "[router]\nlisten = %q\nmetrics = %q\n", r, rm)
		if o.ReadConsistency != "" {
			fmt.Fprintf(&b, "read_consistency = %q\n", o.ReadConsistency)
		}
	}
	for i := 1; i <= n; i++ {
		var a [3]string
		for j := range a {
			v, err := addr()
			if err != nil {
				return "", err
			}
			a[j] = v
		}
		fmt.Fprintf(&b, "[[nodes]]\nid = \"n%d\"\nlisten = %q\nmetrics = %q\nbackend = %q\n", i, a[0], a[1], backend)
		switch {
		case n > 1 && d == "multi-master":
			// The certifier runs on the coordinator: every node votes.
			fmt.Fprintf(&b, "raft_listen = %q\n", a[2])
		case n > 1 || alone:
			fmt.Fprintf(&b, "repl_listen = %q\n", a[2])
		}
		if backend == "postgres" {
			b.WriteString("[nodes.postgres]\nsettings = { max_connections = \"200\" }\n")
		}
	}
	return b.String(), nil
}

// waitApplied polls the primary's /status until want standbys are
// attached and each applied the primary's last GSN (the load's backlog
// must not be paid in the measured window).
func waitApplied(ctx context.Context, c *config.Cluster, want int, limit time.Duration) error {
	if c.MultiMaster() {
		return waitConverged(ctx, c, limit)
	}
	primary := c.Nodes[0]
	cl := http.Client{Timeout: 2 * time.Second}
	if c.AdminTLS(primary.Metrics) {
		// Off loopback (the lab's namespaces) the admin address is HTTPS
		// with the cluster's certificates.
		ident, err := node.Identity(c, secure.AdminID, nil)
		if err != nil {
			return err
		}
		cl.Transport = &http.Transport{TLSClientConfig: ident.ClientTLS(primary.ID)}
	}
	deadline := time.Now().Add(limit)
	last := "no answer"
	for {
		var st struct {
			Repl *struct {
				Assigned uint64               `json:"assigned_gsn"`
				Standbys map[string][3]uint64 `json:"standbys"`
			} `json:"replication"`
			Physical *struct {
				LSN      string `json:"lsn"`
				Replicas []struct {
					Node     string `json:"node"`
					State    string `json:"state"`
					Replayed string `json:"replay_lsn"`
				} `json:"replicas"`
			} `json:"physical"`
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.AdminURL(primary.Metrics, "/status"), nil)
		resp, err := cl.Do(req)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		switch {
		case err != nil:
			last = err.Error()
		case c.Physical() && st.Physical == nil:
			last = "no physical section in /status"
		case c.Physical():
			ph := st.Physical
			var nodes, replayed []string
			for _, r := range ph.Replicas {
				if r.State == "streaming" {
					nodes, replayed = append(nodes, r.Node), append(replayed, r.Replayed)
				}
			}
			if last = physicalBehind(ph.LSN, nodes, replayed, want); last == "" {
				return nil
			}
		case st.Repl == nil:
			last = "no replication section in /status"
		case len(st.Repl.Standbys) < want:
			last = fmt.Sprintf("%d of %d standbys attached", len(st.Repl.Standbys), want)
		default:
			done := true
			for id, pos := range st.Repl.Standbys {
				if pos[2] < st.Repl.Assigned {
					done = false
					last = fmt.Sprintf("%s applied GSN %d of %d", id, pos[2], st.Repl.Assigned)
				}
			}
			if done {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replicas not caught up within %s (%s)", limit, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// physicalBehind says what a physical primary's streaming replicas (nodes,
// with their replay positions) still lack: "" once want of them stream and
// each replayed the primary's current WAL position lsn.
func physicalBehind(lsn string, nodes, replayed []string, want int) string {
	if len(nodes) < want {
		return fmt.Sprintf("%d of %d replicas streaming", len(nodes), want)
	}
	at, err := physical.ParseLSN(lsn)
	if err != nil {
		return fmt.Sprintf("the primary's position: %v", err)
	}
	for i, r := range replayed {
		if got, err := physical.ParseLSN(r); err != nil || got < at {
			return fmt.Sprintf("%s replayed %s of %s", nodes[i], r, lsn)
		}
	}
	return ""
}

// waitConverged polls every node of a multi-master cluster until each has
// applied the certifier's last GSN.
func waitConverged(ctx context.Context, c *config.Cluster, limit time.Duration) error {
	clients, closeIdle, err := mmClients(c)
	if err != nil {
		return err
	}
	// One client per node for the whole wait (a transport per poll left
	// a connection open each time).
	defer closeIdle()
	deadline := time.Now().Add(limit)
	last := "no answer"
	for {
		sts, err := mmStatuses(ctx, c, clients)
		if err != nil {
			last = err.Error()
		} else {
			var certified uint64
			applied := make([]uint64, len(sts))
			for i, st := range sts {
				applied[i] = st.AppliedGSN
				certified = max(certified, st.Certifier.Last)
			}
			done := true
			for _, a := range applied {
				done = done && a >= certified
			}
			if done {
				return nil
			}
			last = fmt.Sprintf("applied %v of %d", applied, certified)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nodes not converged within %s (%s)", limit, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// mmStatus is a multi-master node's /status as its agent reports it.
type mmStatus = multimaster.Status

// mmClients is an HTTP client per node of c for its admin address (HTTPS
// with the cluster's certificates off loopback), and a function that
// closes their idle connections.
func mmClients(c *config.Cluster) ([]*http.Client, func(), error) {
	ident, err := node.Identity(c, secure.AdminID, nil)
	if err != nil {
		return nil, nil, err
	}
	var trs []*http.Transport
	clients := make([]*http.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		clients[i] = &http.Client{Timeout: 2 * time.Second}
		if c.AdminTLS(n.Metrics) && ident != nil {
			tr := &http.Transport{TLSClientConfig: ident.ClientTLS(n.ID)}
			trs = append(trs, tr)
			clients[i].Transport = tr
		}
	}
	return clients, func() {
		for _, tr := range trs {
			tr.CloseIdleConnections()
		}
	}, nil
}

// SetApplyBatchDelay sets multi_master.apply_batch_delay on every node of
// the running multi-master cluster c (POST /admin/set, admin token).
func SetApplyBatchDelay(ctx context.Context, c *config.Cluster, d time.Duration) error {
	clients, closeIdle, err := mmClients(c)
	if err != nil {
		return err
	}
	defer closeIdle()
	token, err := node.AdminToken(c, false)
	if err != nil {
		return fmt.Errorf("set apply_batch_delay: %w", err)
	}
	for i, n := range c.Nodes {
		u := c.AdminURL(n.Metrics, "/admin/set") + "?" + url.Values{"apply_batch_delay": {d.String()}}.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := clients[i].Do(req)
		if err != nil {
			return fmt.Errorf("set apply_batch_delay on %s: %w", n.ID, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("set apply_batch_delay on %s: %s: %s", n.ID, resp.Status, strings.TrimSpace(string(body)))
		}
	}
	return nil
}

// ApplyCount is how many batches of certified writesets a multi-master
// node applied and how many writesets they carried, and how many
// certification round trips it made and their summed seconds (its
// /status).
type ApplyCount struct {
	Batches, Writesets uint64
	Certifications     uint64
	CertifySeconds     float64
	// Own is how many of Writesets their node committed; Fast how many
	// commits their committer applied in a batch of their own.
	Own, Fast uint64
	// Waits counts the commits their committer could not apply at once,
	// LogWaitSeconds and ApplyWaitSeconds their summed waits after
	// certification (multimaster.Status).
	Waits                            uint64
	LogWaitSeconds, ApplyWaitSeconds float64
}

// Sub is the count since earlier.
func (a ApplyCount) Sub(earlier ApplyCount) ApplyCount {
	return ApplyCount{a.Batches - earlier.Batches, a.Writesets - earlier.Writesets,
		a.Certifications - earlier.Certifications, a.CertifySeconds - earlier.CertifySeconds,
		a.Own - earlier.Own, a.Fast - earlier.Fast,
		a.Waits - earlier.Waits, a.LogWaitSeconds - earlier.LogWaitSeconds, a.ApplyWaitSeconds - earlier.ApplyWaitSeconds}
}

// Add is a and b together (nodes summed).
func (a ApplyCount) Add(b ApplyCount) ApplyCount {
	return ApplyCount{a.Batches + b.Batches, a.Writesets + b.Writesets,
		a.Certifications + b.Certifications, a.CertifySeconds + b.CertifySeconds,
		a.Own + b.Own, a.Fast + b.Fast,
		a.Waits + b.Waits, a.LogWaitSeconds + b.LogWaitSeconds, a.ApplyWaitSeconds + b.ApplyWaitSeconds}
}

// OwnShare is the share of the batches' writesets their own node
// committed, 0 without a batch.
func (a ApplyCount) OwnShare() float64 {
	if a.Writesets == 0 {
		return 0
	}
	return float64(a.Own) / float64(a.Writesets)
}

// FastShare is the share of the nodes' own writesets their committer
// applied at once, in a batch of its own (the rest rode in the apply
// loop's batches), 0 without one.
func (a ApplyCount) FastShare() float64 {
	if a.Own+a.Fast == 0 {
		return 0
	}
	return float64(a.Fast) / float64(a.Own+a.Fast)
}

// CertifyMean is the mean certification round trip in seconds, 0
// without one.
func (a ApplyCount) CertifyMean() float64 {
	if a.Certifications == 0 {
		return 0
	}
	return a.CertifySeconds / float64(a.Certifications)
}

// WaitMeans is the mean wait, in seconds, of a commit its committer could
// not apply at once, for its node's log and then for its apply; 0, 0
// without one.
func (a ApplyCount) WaitMeans() (log, apply float64) {
	if a.Waits == 0 {
		return 0, 0
	}
	return a.LogWaitSeconds / float64(a.Waits), a.ApplyWaitSeconds / float64(a.Waits)
}

// PerBatch is the writesets per batch, 0 without a batch.
func (a ApplyCount) PerBatch() float64 {
	if a.Batches == 0 {
		return 0
	}
	return float64(a.Writesets) / float64(a.Batches)
}

// ApplyBatches is every node's ApplyCount so far, in c.Nodes' order.
func ApplyBatches(ctx context.Context, c *config.Cluster) ([]ApplyCount, error) {
	sts, err := mmStatuses(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	out := make([]ApplyCount, len(sts))
	for i, st := range sts {
		out[i] = ApplyCount{Batches: st.ApplyBatches, Writesets: st.ApplyWritesets, Certifications: st.Certifications,
			CertifySeconds: st.CertifySeconds, Own: st.ApplyOwn, Fast: st.FastApplies,
			Waits: st.CommitWaits, LogWaitSeconds: st.LogWaitSeconds, ApplyWaitSeconds: st.ApplyWaitSeconds}
	}
	return out, nil
}

// mmStatuses reads every node's multi-master /status, in c.Nodes' order;
// clients nil makes (and closes) its own.
func mmStatuses(ctx context.Context, c *config.Cluster, clients []*http.Client) ([]mmStatus, error) {
	if clients == nil {
		cls, closeIdle, err := mmClients(c)
		if err != nil {
			return nil, err
		}
		defer closeIdle()
		clients = cls
	}
	out := make([]mmStatus, len(c.Nodes))
	for i, n := range c.Nodes {
		var st struct {
			MM *mmStatus `json:"multi_master"`
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.AdminURL(n.Metrics, "/status"), nil)
		if err != nil {
			return nil, err
		}
		resp, err := clients[i].Do(req)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		if err == nil && st.MM == nil {
			err = errors.New("no multi_master section in /status")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.ID, err)
		}
		out[i] = *st.MM
	}
	return out, nil
}
