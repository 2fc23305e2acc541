package planner

import (
	"fmt"
	"math"
	"strings"
)

// Measuring a profile (seed 003 §4.1.1) is done elsewhere (the profiler opens
// connections and reads /proc); what is pure arithmetic lives here: the
// Utilization Law that turns resource busy time and completions into service
// demands, the assembly and validation of the measured profile, and the
// standalone demand D(1) of §3.3.1 used to check that demands measured phase
// by phase add up to what the full mix uses.

// PhaseBusy is what one profiling phase measured: how long each resource was
// busy during the phase and how many transactions (or writesets) completed in
// the same interval.
type PhaseBusy struct {
	// Busy is the busy time per resource name ("cpu", "disk"), seconds.
	Busy map[string]float64
	// Completions is what the busy time is divided by: committed read-only
	// transactions, update transaction attempts, or applied writesets.
	Completions float64
	// SenderBusy is the part of Busy its WAL senders spent streaming to
	// a replica (update phase of a replicated path; nil: not measured).
	SenderBusy map[string]float64
}

// ServiceDemand applies the Utilization Law (Lazowska et al. 1984; seed 003
// §4.1.1): the mean demand of a transaction at a resource is the resource's
// busy time divided by the completions in the same interval, D = B/C = U/X.
func ServiceDemand(busy, completions float64) (float64, error) {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !finite(busy) || busy < 0 {
		return 0, fmt.Errorf("%w: busy time must be >= 0 seconds, got %g", ErrInvalidProfile, busy)
	}
	if !finite(completions) || completions <= 0 {
		return 0, fmt.Errorf("%w: no completions to divide %g s of busy time by (got %g)", ErrInvalidProfile, busy, completions)
	}
	return busy / completions, nil
}

// MeasuredProfile holds the raw results of a profiling run, before the
// Utilization Law turns them into a Profile.
type MeasuredProfile struct {
	Name, Workload, Mix, Description string
	// Pr and Pw are the fractions of read-only and update transactions.
	Pr, Pw float64
	// A1 and L1 are the standalone abort probability and update response
	// time (seconds).
	A1, L1 float64
	// Reads, Updates and Writesets are the three measured phases: read-only
	// transactions (rc), update attempts (wc) and writeset applications
	// (ws). A class the mix does not contain (Pr = 0 or Pw = 0) needs no
	// phase; its demands are 0.
	Reads, Updates, Writesets PhaseBusy
	// ApplyBatch is the writesets per apply batch during the writeset
	// phase (Profile.ApplyBatch); 0: not known.
	ApplyBatch float64
	// WritesetsPerUpdate is Profile.WritesetsPerUpdate; 0: not measured.
	WritesetsPerUpdate float64
	// CertifierDelay is Profile.CertifierDelay; 0: not measured.
	CertifierDelay float64
	// ConflictRate is Profile.ConflictRate; 0: not measured.
	ConflictRate float64
	// Resources names the resources to put in the profile, in order.
	Resources []string
	// ThinkTime and ClientsPerReplica are Z and C of the profiling run.
	ThinkTime         float64
	ClientsPerReplica int
	Measured          Measurement
	Trust             map[string]string
}

// ProfileFromMeasurements applies the Utilization Law phase by phase (rc from
// the read-only phase, wc from the update phase, ws from the writeset-apply
// phase, per resource) and returns the validated profile. An error names the
// phase and resource at fault.
func ProfileFromMeasurements(m MeasuredProfile) (Profile, error) {
	p := Profile{
		Version:           ProfileVersion,
		Name:              m.Name,
		Workload:          m.Workload,
		Mix:               m.Mix,
		Description:       m.Description,
		Pr:                m.Pr,
		Pw:                m.Pw,
		A1:                m.A1,
		L1:                m.L1,
		ThinkTime:         m.ThinkTime,
		ClientsPerReplica: m.ClientsPerReplica,
		ApplyBatch:        m.ApplyBatch,
		Measured:          m.Measured,

		WritesetsPerUpdate: m.WritesetsPerUpdate,
		CertifierDelay:     m.CertifierDelay,
		ConflictRate:       m.ConflictRate,
	}
	if len(m.Trust) > 0 {
		p.Trust = make(map[string]string, len(m.Trust))
		for k, v := range m.Trust {
			p.Trust[k] = v
		}
	}
	if len(m.Resources) == 0 {
		return Profile{}, fmt.Errorf("%w: field %q: no resource measured", ErrInvalidProfile, "resources")
	}
	demand := func(phase string, needed bool, pb PhaseBusy, res string) (float64, error) {
		if !needed {
			return 0, nil
		}
		busy, ok := pb.Busy[res]
		if !ok {
			return 0, fmt.Errorf("%w: %s phase: resource %q was not measured", ErrInvalidProfile, phase, res)
		}
		d, err := ServiceDemand(busy, pb.Completions)
		if err != nil {
			return 0, fmt.Errorf("%s phase, resource %q: %w", phase, res, err)
		}
		return d, nil
	}
	for _, name := range m.Resources {
		r := Resource{Name: strings.TrimSpace(name)}
		var err error
		if r.RC, err = demand("read-only", m.Pr > 0, m.Reads, name); err != nil {
			return Profile{}, err
		}
		if r.WC, err = demand("update", m.Pw > 0, m.Updates, name); err != nil {
			return Profile{}, err
		}
		if r.WS, err = demand("writeset-apply", m.Pw > 0, m.Writesets, name); err != nil {
			return Profile{}, err
		}
		if b, ok := m.Updates.SenderBusy[name]; ok && m.Pw > 0 && m.Updates.Completions > 0 {
			r.WSend = b / m.Updates.Completions
		}
		p.Resources = append(p.Resources, r)
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// StandaloneDemand is D(1) of seed 003 §3.3.1 at the named resource: the mean
// demand per committed transaction of the whole mix on one standalone
// database, Pr·rc + Pw/(1 − A_1)·wc. It reports false for an unknown
// resource.
func (p Profile) StandaloneDemand(resource string) (float64, bool) {
	for _, r := range p.Resources {
		if r.Name == resource {
			return p.Pr*r.RC + p.Pw/(1-p.A1)*r.WC, true
		}
	}
	return 0, false
}
