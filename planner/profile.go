package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// ProfileVersion is the version of the profile file format this package
// writes and reads.
const ProfileVersion = 1

// Profile is what the models need to know about a workload, measured on one
// standalone database (seed 003 §4). All times are in seconds.
//
// The JSON form is the profile file format; see docs/planner.md.
type Profile struct {
	// Version is the file format version, ProfileVersion.
	Version int `json:"version"`
	// Name identifies the profile in reports, e.g. "tpcw-shopping".
	Name string `json:"name"`
	// Workload and Mix name the benchmark and its transaction mix.
	Workload string `json:"workload"`
	Mix      string `json:"mix"`
	// Description is free text.
	Description string `json:"description,omitempty"`

	// Pr and Pw are the fractions of read-only and update transactions;
	// Pr + Pw = 1.
	Pr float64 `json:"pr"`
	Pw float64 `json:"pw"`
	// A1 is the probability that an update transaction aborts on the
	// standalone database, in [0, 1).
	A1 float64 `json:"a1"`
	// L1 is L(1), the mean response time of an update transaction on the
	// standalone database, seconds. 0 means "not measured": each model then
	// uses its own conflict window at one replica, so that A_1 is reproduced
	// exactly at N = 1 (see planner/DESIGN.md).
	L1 float64 `json:"l1_s"`

	// Resources lists the service demands per resource (cpu, disk, ...).
	Resources []Resource `json:"resources"`

	// ThinkTime is the clients' think time Z, seconds.
	ThinkTime float64 `json:"think_time_s"`
	// ClientsPerReplica is C: a system of N replicas has N·C clients.
	ClientsPerReplica int `json:"clients_per_replica"`

	// SingleMasterAborts optionally gives the master's abort rate A'_N
	// measured with a scaled update workload (seed 003 §4.1.2). Where a
	// replica count is missing the model estimates A'_N.
	SingleMasterAborts []MeasuredAbort `json:"single_master_aborts,omitempty"`

	// ApplyBatch is how many writesets a replica applied per batch (one
	// back-end transaction each) while WS was measured. With a resource's
	// WSBatch it makes ws depend on the batch size (Profile.WSAt); 0: not
	// known, ws is charged as measured at every batch size.
	ApplyBatch float64 `json:"apply_batch_writesets,omitempty"`

	// WritesetsPerUpdate is the share of update transactions that commit a
	// writeset: the rest end without one (rolled back by the workload's
	// rules, as TM1 does with 17.5 % of its updates, or changing no row).
	// Only those with one are certified and applied elsewhere, and WS is
	// per writeset, so the models charge Pw·WritesetsPerUpdate writesets
	// per transaction. 0: not measured, every update has one (seed 003).
	WritesetsPerUpdate float64 `json:"writesets_per_update,omitempty"`

	// ConflictRate is c in A = 1 − exp(−c·λ·W): how likely an update
	// attempt is to abort per unit of its exposure, λ·W, the committed
	// writesets per second of the whole system times the attempt's
	// conflict window, seconds (planner/DESIGN.md "Abort growth"). It is
	// a property of the workload's keys, measured by the profiler over
	// every phase that ran updates. With it, multi-master grows A_N from
	// its own λ(N) and CW(N); without it (0), by seed 003's N·CW(N)/L(1).
	ConflictRate float64 `json:"conflict_rate,omitempty"`

	// CertifierDelay is the mean certification round trip measured on a
	// multi-master node while it was profiled, seconds: what the
	// certifier adds to an update's commit (Params.CertifierDelay takes
	// it in tandem plan validate). 0: not measured.
	CertifierDelay float64 `json:"certifier_delay_s,omitempty"`

	// MasterReadShare is the share of read-only transactions among those
	// the master ran in the phase its WC comes from (see Resource.WCSat);
	// 0 with no WCSat.
	MasterReadShare float64 `json:"master_read_share,omitempty"`

	// Measured records where and how the numbers were obtained.
	Measured Measurement `json:"measured"`
	// Trust holds a note per field ("pr", "a1", "l1_s", "resources.cpu.ws_s",
	// ...) saying how far the value can be trusted: measured, derived,
	// copied from a paper, an upper bound, a guess.
	Trust map[string]string `json:"trust,omitempty"`
}

// Resource holds the standalone service demands of one resource, seconds per
// transaction.
type Resource struct {
	// Name of the resource, e.g. "cpu" or "disk". Unique within a profile.
	Name string `json:"name"`
	// RC is the demand of a read-only transaction.
	RC float64 `json:"rc_s"`
	// WC is the demand of an update transaction (one attempt).
	WC float64 `json:"wc_s"`
	// WS is the demand of applying one propagated writeset.
	WS float64 `json:"ws_s"`
	// WSend is the master's demand per update attempt for streaming it
	// to one replica (PostgreSQL's WAL sender), measured on a replicated
	// path with one replica, where it is already part of WC. The
	// single-master model adds it once per replica beyond the first:
	// WC + (N - 2)·WSend at N >= 2. 0: not measured (nothing added).
	WSend float64 `json:"wsend_s,omitempty"`
	// WSBatch is the part of applying writesets paid once per batch
	// whatever it holds (BEGIN, the applied-GSN row, COMMIT and its WAL
	// flush, the apply loop's wake-up), measured by profiling the
	// replica at two batch sizes: at Profile.ApplyBatch writesets per
	// batch WS holds WSBatch / ApplyBatch of it. 0: not measured (ws
	// does not depend on the batch size).
	WSBatch float64 `json:"ws_batch_s,omitempty"`
	// BG is the fraction of the resource the profiled node keeps busy
	// with no transaction at all (its own loops: a replicated node's
	// coordinator, lease and probes; a PostgreSQL's background
	// processes), measured in an idle phase and left out of the demands
	// above; BGReplica the same of the replica that followed it (ws's
	// node). The models give such a centre only 1 - BG of its capacity
	// (its demands / (1 - BG)): the background does not grow with the
	// load, so charging it per transaction at the profile's rate
	// overcharges a node that runs faster. 0: none measured.
	BG        float64 `json:"bg,omitempty"`
	BGReplica float64 `json:"bg_replica,omitempty"`
	// Capacity is the fraction of the resource's nominal capacity the
	// profiled host delivered when it could take no more: an emulated
	// host of the lab whose CFS quota held it back in nearly every
	// scheduler period of a phase and which still ran less than its
	// quota (a tandem node and its PostgreSQL on 0.25-core hosts: 0.87-0.92
	// standalone, 0.90-0.98 in a multi-master cluster; planner/DESIGN.md
	// "What an emulated host delivers"). The models give the centre
	// Capacity - BG (BGReplica) of its nominal capacity, on every node:
	// the hosts are alike. 0: not measured (the whole of it).
	Capacity float64 `json:"capacity,omitempty"`
	// WCSat is an update attempt's demand on a master that runs updates
	// alone, every client of the profile updating (a replicated
	// profile's update phase), where WC is one measured in the mix, the
	// master serving reads beside its updates (Profile.MasterReadShare
	// of what it ran). The single-master model moves the master's update
	// demand from WC towards WCSat as the reads it serves fall (none when
	// it is the bottleneck). The multi-master rate model charges WCSat,
	// the attempt's own work, in the conflict window, and WC (which
	// carries what the mix costs beyond its phases) in the demands. 0:
	// not measured (WC throughout).
	WCSat float64 `json:"wc_saturated_s,omitempty"`
}

// WSAt is the demand per writeset of applying batches of b writesets at
// the resource: WS less its per-batch part at the profile's batch size,
// plus that part shared by b (at least 1). Without WSBatch, or with b <= 0
// (the profile's batch size), WS.
func (p Profile) WSAt(r Resource, b float64) float64 {
	if r.WSBatch <= 0 || p.ApplyBatch <= 0 || b <= 0 {
		return r.WS
	}
	b = max(b, 1)
	return max(0, r.WS-r.WSBatch/p.ApplyBatch) + r.WSBatch/b
}

// WSShare is WritesetsPerUpdate, 1 when not measured.
func (p Profile) WSShare() float64 {
	if p.WritesetsPerUpdate > 0 {
		return p.WritesetsPerUpdate
	}
	return 1
}

// WSFor is ws at b writesets per apply batch as cost c charges it:
// ApplySplit is WSAt; ApplyPerBatch (and "") scales the whole of ws with
// the batches, ws·ApplyBatch/b. Without the profile's batch size (or with
// b <= 0) it is ws as measured.
func (p Profile) WSFor(r Resource, b float64, c ApplyCost) float64 {
	if c == ApplySplit {
		return p.WSAt(r, b)
	}
	if p.ApplyBatch <= 0 || b <= 0 {
		return r.WS
	}
	return r.WS * p.ApplyBatch / max(b, 1)
}

// masterScale is the factor a node's demands at this resource take for
// what the host delivers (Capacity) and its background (BG):
// 1 / (Capacity - BG).
func (r Resource) masterScale() float64 { return capacityScale(r.Capacity, r.BG) }

// replicaScale is masterScale for a replica (BGReplica).
func (r Resource) replicaScale() float64 { return capacityScale(r.Capacity, r.BGReplica) }

func capacityScale(capacity, bg float64) float64 {
	c := 1.0
	if capacity > 0 && capacity < 1 {
		c = capacity
	}
	if bg > 0 && bg < c {
		c -= bg
	}
	return 1 / c
}

// MeasuredAbort is a measured single-master abort rate at one replica count.
type MeasuredAbort struct {
	Replicas int     `json:"replicas"`
	Abort    float64 `json:"abort"`
}

// Measurement is the provenance of a profile.
type Measurement struct {
	// At is when the profile was measured (RFC 3339 or free text).
	At string `json:"at,omitempty"`
	// Source says where the numbers come from: a tool run, a paper table.
	Source string `json:"source,omitempty"`
	// System describes the standalone database and its host.
	System string `json:"system,omitempty"`
	// Duration is how long the measurement ran, seconds.
	Duration float64 `json:"duration_s,omitempty"`
	// Transactions is how many transactions were observed.
	Transactions int64 `json:"transactions,omitempty"`
}

// Validate checks every field and reports the first bad one by its JSON name.
func (p Profile) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: field %q: %s", ErrInvalidProfile, field, fmt.Sprintf(format, args...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if p.Version != ProfileVersion {
		return bad("version", "must be %d, got %d", ProfileVersion, p.Version)
	}
	if strings.TrimSpace(p.Name) == "" {
		return bad("name", "must not be empty")
	}
	if !finite(p.Pr) || p.Pr < 0 || p.Pr > 1 {
		return bad("pr", "must be in [0, 1], got %g", p.Pr)
	}
	if !finite(p.Pw) || p.Pw < 0 || p.Pw > 1 {
		return bad("pw", "must be in [0, 1], got %g", p.Pw)
	}
	if math.Abs(p.Pr+p.Pw-1) > 1e-9 {
		return bad("pw", "pr + pw must be 1, got %g + %g = %g", p.Pr, p.Pw, p.Pr+p.Pw)
	}
	if !finite(p.A1) || p.A1 < 0 || p.A1 >= 1 {
		return bad("a1", "must be in [0, 1), got %g", p.A1)
	}
	if !finite(p.L1) || p.L1 < 0 {
		return bad("l1_s", "must be >= 0 seconds (0 = derive from the model), got %g", p.L1)
	}
	if len(p.Resources) == 0 {
		return bad("resources", "at least one resource (cpu, disk) is needed")
	}
	if !finite(p.ConflictRate) || p.ConflictRate < 0 {
		return bad("conflict_rate", "must be >= 0, got %g", p.ConflictRate)
	}
	if !finite(p.CertifierDelay) || p.CertifierDelay < 0 {
		return bad("certifier_delay_s", "must be >= 0 seconds, got %g", p.CertifierDelay)
	}
	if !finite(p.WritesetsPerUpdate) || p.WritesetsPerUpdate < 0 || p.WritesetsPerUpdate > 1 {
		return bad("writesets_per_update", "must be in (0, 1] (0: not measured), got %g", p.WritesetsPerUpdate)
	}
	if !finite(p.ApplyBatch) || p.ApplyBatch < 0 || p.ApplyBatch > 0 && p.ApplyBatch < 1 {
		return bad("apply_batch_writesets", "must be 0 (not known) or >= 1 writesets per batch, got %g", p.ApplyBatch)
	}
	seen := map[string]bool{}
	needs := false
	for i, r := range p.Resources {
		where := fmt.Sprintf("resources[%d]", i)
		if strings.TrimSpace(r.Name) == "" {
			return bad(where+".name", "must not be empty")
		}
		if strings.ContainsAny(r.Name, ". \t") {
			return bad(where+".name", "must not contain dots or spaces, got %q", r.Name)
		}
		if seen[r.Name] {
			return bad(where+".name", "duplicate resource %q", r.Name)
		}
		seen[r.Name] = true
		for _, f := range []struct {
			name string
			v    float64
		}{{"rc_s", r.RC}, {"wc_s", r.WC}, {"ws_s", r.WS}, {"wsend_s", r.WSend}} {
			if !finite(f.v) || f.v < 0 {
				return bad(where+"."+f.name, "must be >= 0 seconds, got %g", f.v)
			}
		}
		if p.Pr > 0 && r.RC > 0 || p.Pw > 0 && r.WC > 0 {
			needs = true
		}
		if r.WSend > r.WC {
			return bad(where+".wsend_s", "%g s is more than wc_s (%g s), of which it is a part", r.WSend, r.WC)
		}
		if !finite(r.WSBatch) || r.WSBatch < 0 {
			return bad(where+".ws_batch_s", "must be >= 0 seconds, got %g", r.WSBatch)
		}
		if r.WSBatch > 0 && p.ApplyBatch < 1 {
			return bad(where+".ws_batch_s", "needs apply_batch_writesets (>= 1), the batch size at which ws_s was measured")
		}
		if r.WSBatch > 0 && r.WSBatch/p.ApplyBatch > r.WS*(1+1e-9) {
			return bad(where+".ws_batch_s", "%g s shared by %g writesets is more than ws_s (%g s), of which it is a part", r.WSBatch, p.ApplyBatch, r.WS)
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"bg", r.BG}, {"bg_replica", r.BGReplica}} {
			if !finite(f.v) || f.v < 0 || f.v >= 0.95 {
				return bad(where+"."+f.name, "must be a fraction of the resource in [0, 0.95), got %g", f.v)
			}
		}
		if !finite(r.Capacity) || r.Capacity < 0 || r.Capacity > 1 {
			return bad(where+".capacity", "must be a fraction of the resource in (0, 1] (0: not measured, the whole), got %g", r.Capacity)
		}
		if r.Capacity > 0 && r.Capacity-max(r.BG, r.BGReplica) < 0.05 {
			return bad(where+".capacity", "%g leaves less than 0.05 of the resource beside its background (bg %g, bg_replica %g)", r.Capacity, r.BG, r.BGReplica)
		}
	}
	if !needs {
		return bad("resources", "the transactions of the mix need no service at any resource: every rc_s (pr > 0) and wc_s (pw > 0) is zero")
	}
	if !finite(p.ThinkTime) || p.ThinkTime < 0 {
		return bad("think_time_s", "must be >= 0 seconds, got %g", p.ThinkTime)
	}
	if p.ClientsPerReplica < 1 {
		return bad("clients_per_replica", "must be >= 1, got %d", p.ClientsPerReplica)
	}
	seenN := map[int]bool{}
	for i, m := range p.SingleMasterAborts {
		where := fmt.Sprintf("single_master_aborts[%d]", i)
		if m.Replicas < 1 {
			return bad(where+".replicas", "must be >= 1, got %d", m.Replicas)
		}
		if seenN[m.Replicas] {
			return bad(where+".replicas", "duplicate replica count %d", m.Replicas)
		}
		seenN[m.Replicas] = true
		if !finite(m.Abort) || m.Abort < 0 || m.Abort >= 1 {
			return bad(where+".abort", "must be in [0, 1), got %g", m.Abort)
		}
	}
	return nil
}

// singleMasterAbort returns the measured A'_N for n replicas, if any.
func (p Profile) singleMasterAbort(n int) (float64, bool) {
	for _, m := range p.SingleMasterAborts {
		if m.Replicas == n {
			return m.Abort, true
		}
	}
	return 0, false
}

// DecodeProfile reads one profile in the JSON format, rejecting unknown fields
// (a misspelt field would otherwise silently read as zero), and validates it.
func DecodeProfile(r io.Reader) (Profile, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Profile{}, fmt.Errorf("%w: field %q: expected %v, got JSON %s", ErrInvalidProfile, te.Field, te.Type, te.Value)
		}
		return Profile{}, fmt.Errorf("%w: %v", ErrInvalidProfile, err)
	}
	if dec.More() {
		return Profile{}, fmt.Errorf("%w: trailing data after the profile object", ErrInvalidProfile)
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// LoadProfileFile reads and validates a profile file.
func LoadProfileFile(path string) (Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return Profile{}, fmt.Errorf("open profile: %w", err)
	}
	defer f.Close()
	p, err := DecodeProfile(f)
	if err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", path, err)
	}
	return p, nil
}

// EncodeProfile writes p as indented JSON.
func EncodeProfile(w io.Writer, p Profile) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("encode profile %s: %w", p.Name, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write profile %s: %w", p.Name, err)
	}
	return nil
}

// clone returns a deep copy of p.
func (p Profile) clone() Profile {
	q := p
	q.Resources = append([]Resource(nil), p.Resources...)
	q.SingleMasterAborts = append([]MeasuredAbort(nil), p.SingleMasterAborts...)
	if p.Trust != nil {
		q.Trust = make(map[string]string, len(p.Trust))
		for k, v := range p.Trust {
			q.Trust[k] = v
		}
	}
	return q
}

// MedianProfile combines profiles of one workload and mix measured more
// than once (fresh clusters, minutes apart) into one: every demand (each
// resource's rc, wc, ws and wsend) and A_1 and L(1) is the median of the
// profiles' values, the rest is the first profile's. On a shared or
// virtual machine one profile is one sample of a CPU cost that moves by
// up to 1.3x between fresh clusters (docs/benchmarks.md); the median of
// profiles taken between the sweep's rounds follows what the sweep
// measures. The profiles must have the same resources in the same order.
func MedianProfile(ps []Profile) (Profile, error) {
	if len(ps) == 0 {
		return Profile{}, fmt.Errorf("%w: no profile to combine", ErrInvalidProfile)
	}
	out := ps[0]
	out.Resources = append([]Resource(nil), ps[0].Resources...)
	for _, p := range ps[1:] {
		if len(p.Resources) != len(out.Resources) {
			return Profile{}, fmt.Errorf("%w: profiles %q and %q have different resources", ErrInvalidProfile, ps[0].Name, p.Name)
		}
		for i, r := range p.Resources {
			if r.Name != out.Resources[i].Name {
				return Profile{}, fmt.Errorf("%w: profiles %q and %q have different resources (%s, %s)", ErrInvalidProfile, ps[0].Name, p.Name, out.Resources[i].Name, r.Name)
			}
		}
	}
	median := func(vs []float64) float64 {
		if len(vs) == 0 {
			return 0
		}
		slices.Sort(vs)
		if len(vs)%2 == 1 {
			return vs[len(vs)/2]
		}
		return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	med := func(f func(Profile) float64) float64 {
		vs := make([]float64, len(ps))
		for i, p := range ps {
			vs[i] = f(p)
		}
		return median(vs)
	}
	out.A1 = med(func(p Profile) float64 { return p.A1 })
	out.L1 = med(func(p Profile) float64 { return p.L1 })
	for i := range out.Resources {
		r := &out.Resources[i]
		r.RC = med(func(p Profile) float64 { return p.Resources[i].RC })
		r.WC = med(func(p Profile) float64 { return p.Resources[i].WC })
		r.WS = med(func(p Profile) float64 { return p.Resources[i].WS })
		r.WSend = min(r.WC, med(func(p Profile) float64 { return p.Resources[i].WSend }))
		r.WSBatch = med(func(p Profile) float64 { return p.Resources[i].WSBatch })
		r.BG = med(func(p Profile) float64 { return p.Resources[i].BG })
		r.BGReplica = med(func(p Profile) float64 { return p.Resources[i].BGReplica })
		r.WCSat = med(func(p Profile) float64 { return p.Resources[i].WCSat })
		// A capacity is measured or not (0): the median of those measured.
		var caps []float64
		for _, p := range ps {
			if c := p.Resources[i].Capacity; c > 0 {
				caps = append(caps, c)
			}
		}
		r.Capacity = median(caps)
	}
	out.MasterReadShare = med(func(p Profile) float64 { return p.MasterReadShare })
	out.ApplyBatch = med(func(p Profile) float64 { return p.ApplyBatch })
	out.WritesetsPerUpdate = med(func(p Profile) float64 { return p.WritesetsPerUpdate })
	out.CertifierDelay = med(func(p Profile) float64 { return p.CertifierDelay })
	out.ConflictRate = med(func(p Profile) float64 { return p.ConflictRate })
	for i := range out.Resources {
		// The medians of WS and WSBatch come from different profiles:
		// keep the per-batch part inside WS at the median batch size.
		r := &out.Resources[i]
		if out.ApplyBatch > 0 {
			r.WSBatch = min(r.WSBatch, r.WS*out.ApplyBatch)
		}
	}
	if len(ps) > 1 {
		out.Measured.Source = fmt.Sprintf("median of %d profiles (each demand, A_1 and L(1) separately); the first: %s", len(ps), ps[0].Measured.Source)
	}
	return out, nil
}
