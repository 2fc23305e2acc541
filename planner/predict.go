package planner

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Design is a replication design the planner models. The names are the
// design names of tandem's vocabulary.
type Design string

const (
	// MultiMaster is certification-based multi-master replication under
	// generalized snapshot isolation (seed 003 §3.2.1, §3.3.2).
	MultiMaster Design = "multi-master"
	// SingleMaster is primary copy with read-only slaves (seed 003 §3.2.2,
	// §3.3.3).
	SingleMaster Design = "single-master"
)

// ParseDesigns turns "mm", "sm", "both" or the full design names
// (comma-separated) into designs, in the order multi-master, single-master.
func ParseDesigns(s string) ([]Design, error) {
	want := map[Design]bool{}
	for _, f := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(f)) {
		case "mm", "multi-master", "multimaster":
			want[MultiMaster] = true
		case "sm", "single-master", "singlemaster", "master-slave":
			want[SingleMaster] = true
		case "both", "all":
			want[MultiMaster], want[SingleMaster] = true, true
		default:
			return nil, fmt.Errorf("%w: %q (want mm, sm or both)", ErrUnknownDesign, f)
		}
	}
	var out []Design
	for _, d := range []Design{MultiMaster, SingleMaster} {
		if want[d] {
			out = append(out, d)
		}
	}
	return out, nil
}

// CWMode selects how the multi-master model obtains the conflict window
// CW(N) that drives abort growth.
type CWMode string

const (
	// CWFixedPoint re-solves the whole MVA with the abort rate given by the
	// conflict window of the previous solution until the abort rate stops
	// changing: CW(N) is then consistent with the population it is used for.
	CWFixedPoint CWMode = "fixed-point"
	// CWPerPopulation is the literal reading of seed 003 §4.1.1: inside one
	// MVA recursion, the demands at population i+1 use the conflict window
	// of population i. The paper notes this slightly underestimates aborts.
	CWPerPopulation CWMode = "per-population"
)

// Paper defaults for the delays around the replicas.
const (
	// DefaultLBDelay is the load balancer plus LAN delay, 1 ms (seed 003 §6.3.1).
	DefaultLBDelay = 0.001
	// DefaultCertifierDelay is the certifier delay centre, 12 ms (seed 003 §6.3.2).
	DefaultCertifierDelay = 0.012
	// MaxReplicas bounds the replica counts the planner accepts.
	MaxReplicas = 256
	// MaxClients bounds N·C, the total population the MVA recursions visit.
	MaxClients = 20000
)

// Params are the model inputs that describe the deployment rather than the
// workload. Times are in seconds.
type Params struct {
	// ClientsPerReplica is C; a system of N replicas has N·C clients.
	ClientsPerReplica int `json:"clients_per_replica"`
	// ThinkTime is Z.
	ThinkTime float64 `json:"think_time_s"`
	// LBDelay is the delay centre for the load balancer and the LAN, paid by
	// every transaction attempt.
	LBDelay float64 `json:"lb_delay_s"`
	// CertifierDelay is the certifier delay centre, paid by every update
	// attempt in multi-master.
	CertifierDelay float64 `json:"certifier_delay_s"`
	// CWMode is how multi-master iterates the conflict window.
	CWMode CWMode `json:"cw_mode"`
	// AbortModel is how multi-master's abort rate grows with N: ""
	// (AbortModelAuto) by the system's writeset rate when the profile
	// has a ConflictRate, else seed 003's; AbortModelSeed003 always
	// seed 003's.
	AbortModel AbortModel `json:"abort_model,omitempty"`
	// ApplyCost is how multi-master charges a replica's apply of the
	// other nodes' writesets at B writesets per apply batch ("" is
	// ApplyPerBatch).
	ApplyCost ApplyCost `json:"apply_cost,omitempty"`
}

// AbortModel selects multi-master's abort growth (planner/DESIGN.md
// "Abort growth").
type AbortModel string

const (
	// AbortModelAuto grows A_N with the writesets the system commits
	// per second when the profile measured its ConflictRate, else as
	// seed 003 does.
	AbortModelAuto AbortModel = ""
	// AbortModelRate is AbortModelAuto, named for flags.
	AbortModelRate AbortModel = "rate"
	// AbortModelSeed003 is seed 003's (1 − A_1)^(N·CW(N)/L(1)).
	AbortModelSeed003 AbortModel = "seed003"
)

// ApplyCost is how multi-master's ws depends on the writesets per apply
// batch B (planner/DESIGN.md "Apply batches").
type ApplyCost string

const (
	// ApplyPerBatch charges ws per batch: ws(B) = ws · B_p / B, B_p the
	// batch size the profile measured ws at (apply_batch_writesets).
	ApplyPerBatch ApplyCost = "per-batch"
	// ApplySplit charges the profile's split: ws(B) = ws_1 + ws_batch / B
	// (ws_batch_s; ws as measured without one).
	ApplySplit ApplyCost = "split"
)

// DefaultParams takes C and Z from the profile and the delays from seed 003.
func DefaultParams(p Profile) Params {
	return Params{
		ClientsPerReplica: p.ClientsPerReplica,
		ThinkTime:         p.ThinkTime,
		LBDelay:           DefaultLBDelay,
		CertifierDelay:    DefaultCertifierDelay,
		CWMode:            CWFixedPoint,
		ApplyCost:         ApplyPerBatch,
	}
}

func (par Params) validate() error {
	bad := func(name, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidParams, name, fmt.Sprintf(format, args...))
	}
	okTime := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	if par.ClientsPerReplica < 1 {
		return bad("clients per replica", "must be >= 1, got %d", par.ClientsPerReplica)
	}
	switch par.AbortModel {
	case AbortModelAuto, AbortModelRate, AbortModelSeed003:
	default:
		return bad("abort growth", "%q: want %s or %s", par.AbortModel, AbortModelRate, AbortModelSeed003)
	}
	if !okTime(par.ThinkTime) {
		return bad("think time", "must be >= 0 seconds, got %g", par.ThinkTime)
	}
	if !okTime(par.LBDelay) {
		return bad("load balancer delay", "must be >= 0 seconds, got %g", par.LBDelay)
	}
	if !okTime(par.CertifierDelay) {
		return bad("certifier delay", "must be >= 0 seconds, got %g", par.CertifierDelay)
	}
	switch par.CWMode {
	case CWFixedPoint, CWPerPopulation:
	default:
		return bad("conflict window mode", "%q (want %s or %s)", par.CWMode, CWFixedPoint, CWPerPopulation)
	}
	switch par.ApplyCost {
	case "", ApplyPerBatch, ApplySplit:
	default:
		return bad("apply cost", "%q (want %s or %s)", par.ApplyCost, ApplyPerBatch, ApplySplit)
	}
	return nil
}

// PredictionVersion is the version of the Prediction JSON format.
const PredictionVersion = 1

// Prediction is a model's forecast for one profile and design over a range
// of replica counts. Its JSON form is what `tandem plan predict --json`
// prints and what a validation run compares measurements against (Compare).
type Prediction struct {
	Version  int    `json:"version"`
	Profile  string `json:"profile"`
	Workload string `json:"workload"`
	Mix      string `json:"mix"`
	Design   Design `json:"design"`
	Params   Params `json:"params"`
	// L1 is the L(1) the model used, seconds; L1Derived is true when the
	// profile had none and the model derived it (planner/DESIGN.md).
	L1        float64 `json:"l1_s"`
	L1Derived bool    `json:"l1_derived"`
	Points    []Point `json:"points"`
}

// Point is the prediction at one replica count.
type Point struct {
	Replicas int `json:"replicas"`
	// Clients is N·C.
	Clients int `json:"clients"`
	// ThroughputTPS counts committed transactions per second, system-wide;
	// ReadTPS and WriteTPS split it into read-only and update transactions.
	ThroughputTPS float64 `json:"throughput_tps"`
	ReadTPS       float64 `json:"read_tps"`
	WriteTPS      float64 `json:"write_tps"`
	// Speedup is ThroughputTPS over the same design's throughput at N = 1.
	Speedup float64 `json:"speedup"`
	// ResponseTimeS is the mean response time of a committed transaction,
	// retries included, by Little's law: N·C/X - Z.
	ResponseTimeS float64 `json:"response_time_s"`
	// AbortRate is the probability that an update attempt aborts: A_N in
	// multi-master, A'_N in single-master.
	AbortRate float64 `json:"abort_rate"`
	// AbortMeasured is true when AbortRate was taken from the profile's
	// measured single-master abort rates rather than estimated.
	AbortMeasured bool `json:"abort_measured,omitempty"`
	// ConflictWindowS is the conflict window of an update attempt: CW(N) in
	// multi-master, the master's update residence time in single-master.
	ConflictWindowS float64 `json:"conflict_window_s"`
	// Bottleneck names the queueing resource with the highest utilisation:
	// the one that saturates first.
	Bottleneck string `json:"bottleneck"`
	// Resources lists every centre of the model.
	Resources []ResourcePoint `json:"resources"`
	// Balance says which case of the single-master balancing algorithm
	// (seed 003 figure 3) produced the point; empty for multi-master.
	Balance string `json:"balance,omitempty"`
	// MasterReadTPS is E, the read-only transactions per second the master
	// runs in single-master.
	MasterReadTPS float64 `json:"master_read_tps,omitempty"`
	// CertifierRPS is the certification requests per second (multi-master).
	CertifierRPS float64 `json:"certifier_rps,omitempty"`
	// ApplyBatch is the writesets a multi-master node applies per batch
	// (the model's B_N); 0 when the profile's ws has no per-batch part.
	ApplyBatch float64 `json:"apply_batch_writesets,omitempty"`
	// Iterations is how many outer fixed-point iterations the model needed.
	Iterations int `json:"iterations"`
}

// Single-master balancing cases (seed 003 figure 3).
const (
	BalanceStandalone       = "standalone"        // N = 1: the master alone
	BalanceBalanced         = "balanced"          // the initial split already had ratio Pr:Pw
	BalanceMasterSpare      = "master-spare"      // master has spare capacity: it takes extra reads
	BalanceMasterBottleneck = "master-bottleneck" // master is the bottleneck: clients queue at it
	BalanceFewerWriters     = "fewer-writers"     // reads lagged but the master had no read capacity to spare: fewer clients wait on updates
	BalanceNoUpdates        = "no-updates"        // Pw = 0: every replica serves reads alike
	BalanceNoReads          = "no-reads"          // Pr = 0: the master serves everything
)

// ResourcePoint is the state of one centre at one replica count.
type ResourcePoint struct {
	// Name is role.resource: "replica.cpu", "master.disk", "slave.cpu",
	// "load-balancer", "certifier".
	Name string `json:"name"`
	// Kind is "queueing" or "delay".
	Kind string `json:"kind"`
	// DemandS is the mean service demand of a transaction served by this
	// centre, seconds (D_MM(N), D_master(N), D_slave(N) of seed 003).
	DemandS float64 `json:"demand_s"`
	// Utilization of one such centre (each replica's, each slave's); for a
	// delay centre, the mean number of requests in it.
	Utilization float64 `json:"utilization"`
	// ResidenceTimeS is the time a transaction served here spends here.
	ResidenceTimeS float64 `json:"residence_time_s"`
	// QueueLength is the mean number of transactions at one such centre.
	QueueLength float64 `json:"queue_length"`
}

// Resource returns the point's resource called name.
func (pt Point) Resource(name string) (ResourcePoint, bool) {
	for _, r := range pt.Resources {
		if r.Name == name {
			return r, true
		}
	}
	return ResourcePoint{}, false
}

// At returns the point for n replicas.
func (p Prediction) At(n int) (Point, bool) {
	for _, pt := range p.Points {
		if pt.Replicas == n {
			return pt, true
		}
	}
	return Point{}, false
}

// model is one design's model for one profile and parameter set.
type model interface {
	solve(n int) (Point, error)
	l1() (float64, bool)
}

func newModel(p Profile, d Design, par Params) (model, error) {
	switch d {
	case MultiMaster:
		return newMultiMaster(p, par)
	case SingleMaster:
		return newSingleMaster(p, par)
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownDesign, d)
	}
}

// ValidateReplicas checks a list of replica counts.
func ValidateReplicas(replicas []int, clientsPerReplica int) error {
	if len(replicas) == 0 {
		return fmt.Errorf("%w: replicas: the list is empty", ErrInvalidParams)
	}
	for _, n := range replicas {
		if n < 1 || n > MaxReplicas {
			return fmt.Errorf("%w: replicas: %d is out of range 1..%d", ErrInvalidParams, n, MaxReplicas)
		}
		if n*clientsPerReplica > MaxClients {
			return fmt.Errorf("%w: replicas: %d replicas x %d clients = %d clients, more than the %d the planner solves", ErrInvalidParams, n, clientsPerReplica, n*clientsPerReplica, MaxClients)
		}
	}
	return nil
}

// Predict runs the model of design d for profile p at each replica count.
func Predict(p Profile, d Design, replicas []int, par Params) (Prediction, error) {
	if err := p.Validate(); err != nil {
		return Prediction{}, err
	}
	if err := par.validate(); err != nil {
		return Prediction{}, err
	}
	if err := ValidateReplicas(replicas, par.ClientsPerReplica); err != nil {
		return Prediction{}, err
	}
	m, err := newModel(p, d, par)
	if err != nil {
		return Prediction{}, fmt.Errorf("%s model for %s: %w", d, p.Name, err)
	}
	ns := append([]int(nil), replicas...)
	sort.Ints(ns)
	base, err := m.solve(1)
	if err != nil {
		return Prediction{}, fmt.Errorf("%s model for %s at 1 replica: %w", d, p.Name, err)
	}
	l1, derived := m.l1()
	pred := Prediction{
		Version: PredictionVersion, Profile: p.Name, Workload: p.Workload, Mix: p.Mix,
		Design: d, Params: par, L1: l1, L1Derived: derived,
	}
	for i, n := range ns {
		if i > 0 && n == ns[i-1] {
			continue
		}
		pt := base
		if n != 1 {
			pt, err = m.solve(n)
			if err != nil {
				return Prediction{}, fmt.Errorf("%s model for %s at %d replicas: %w", d, p.Name, n, err)
			}
		}
		if base.ThroughputTPS > 0 {
			pt.Speedup = pt.ThroughputTPS / base.ThroughputTPS
		}
		pred.Points = append(pred.Points, pt)
	}
	return pred, nil
}

// PredictionSet is the JSON document `tandem plan predict --json` prints.
type PredictionSet struct {
	Predictions []Prediction `json:"predictions"`
}

// Observation is a measured result at one replica count, for Compare.
type Observation struct {
	Replicas      int     `json:"replicas"`
	ThroughputTPS float64 `json:"throughput_tps"`
	// ResponseTimeS is optional: 0 means not measured.
	ResponseTimeS float64 `json:"response_time_s,omitempty"`
}

// Deviation compares a prediction with an observation at one replica count.
// Errors are relative: (predicted - measured) / measured.
type Deviation struct {
	Replicas            int      `json:"replicas"`
	PredictedTPS        float64  `json:"predicted_tps"`
	MeasuredTPS         float64  `json:"measured_tps"`
	ThroughputError     float64  `json:"throughput_error"`
	PredictedResponseS  float64  `json:"predicted_response_time_s"`
	MeasuredResponseS   float64  `json:"measured_response_time_s,omitempty"`
	ResponseTimeError   *float64 `json:"response_time_error,omitempty"`
	PredictedBottleneck string   `json:"predicted_bottleneck"`
}

// Compare lines up measurements with a prediction, replica count by replica
// count. Every observation needs a point of the same replica count.
func Compare(pred Prediction, obs []Observation) ([]Deviation, error) {
	out := make([]Deviation, 0, len(obs))
	for i, o := range obs {
		pt, ok := pred.At(o.Replicas)
		if !ok {
			return nil, fmt.Errorf("observation %d: %w: %d replicas (%s, %s)", i, ErrNoPoint, o.Replicas, pred.Profile, pred.Design)
		}
		if !(o.ThroughputTPS > 0) || math.IsInf(o.ThroughputTPS, 0) {
			return nil, fmt.Errorf("observation %d: %w: throughput_tps must be > 0, got %g", i, ErrInvalidParams, o.ThroughputTPS)
		}
		d := Deviation{
			Replicas: o.Replicas, PredictedTPS: pt.ThroughputTPS, MeasuredTPS: o.ThroughputTPS,
			ThroughputError:    (pt.ThroughputTPS - o.ThroughputTPS) / o.ThroughputTPS,
			PredictedResponseS: pt.ResponseTimeS, MeasuredResponseS: o.ResponseTimeS,
			PredictedBottleneck: pt.Bottleneck,
		}
		if o.ResponseTimeS > 0 {
			e := (pt.ResponseTimeS - o.ResponseTimeS) / o.ResponseTimeS
			d.ResponseTimeError = &e
		}
		out = append(out, d)
	}
	return out, nil
}

// bottleneck returns the queueing resource with the highest utilisation.
func bottleneck(rs []ResourcePoint) string {
	best, u := "", -1.0
	for _, r := range rs {
		if r.Kind == Queueing.String() && r.Utilization > u {
			best, u = r.Name, r.Utilization
		}
	}
	return best
}

// AbortGrowth returns 1 - (1 - a1)^exponent: the abort probability of an
// update transaction whose exposure to conflicts (concurrent update rate
// times conflict window) is exponent times that of the standalone database
// (seed 003 §3.3.1, §3.3.2).
func AbortGrowth(a1, exponent float64) float64 {
	if a1 <= 0 || exponent <= 0 {
		return 0
	}
	return 1 - math.Pow(1-a1, exponent)
}

// MultiMasterAbort is seed 003's abort growth for multi-master:
//
//	(1 - A_N) = (1 - A_1)^(N·CW(N)/L(1))
//
// An N-replica system runs about N times the updates of one replica, each
// exposed for CW(N) instead of L(1).
func MultiMasterAbort(a1 float64, n int, cw, l1 float64) float64 {
	if l1 <= 0 {
		return a1
	}
	return AbortGrowth(a1, float64(n)*cw/l1)
}

// RateAbort is the abort probability of an update attempt exposed for
// window seconds to a system committing lambda writesets per second, at
// conflict rate c (Profile.ConflictRate): 1 − exp(−c·λ·W). Each writeset
// committed inside the window conflicts with the attempt's with the same
// small probability, so seed 003's (1 − A_1)^exposure-ratio is this with
// the exposure counted in writesets instead of replicas.
func RateAbort(c, lambda, window float64) float64 {
	if c <= 0 || lambda <= 0 || window <= 0 {
		return 0
	}
	return -math.Expm1(-c * lambda * window)
}

// Fixed-point iteration limits. The multi-master iteration wraps an exact
// MVA and can be held to 1e-12; the single-master one wraps bisections
// (tolerance about 1e-9 of the population) and is held to what they resolve.
const (
	maxIterations = 500
	abortTol      = 1e-12
	smAbortTol    = 1e-9
	smRatioTol    = 1e-7
	// maxAbort is the highest abort rate the models accept before giving up
	// with ErrAbortsDiverge.
	maxAbort = 0.99
)

func checkAbort(a float64) error {
	if !(a < maxAbort) {
		return fmt.Errorf("%w: an update attempt would abort with probability %.4f (limit %g); the models assume small abort rates (seed 003 §3.4)", ErrAbortsDiverge, a, maxAbort)
	}
	return nil
}
