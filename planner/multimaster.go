package planner

import (
	"fmt"
	"math"
)

// Centre names of the models.
const (
	centreLB        = "load-balancer"
	centreCertifier = "certifier"
)

// multiMaster is the multi-master model of seed 003 figure 1. All replicas
// are identical and evenly loaded, so the network of one replica with C
// clients is solved and the system throughput is N times its throughput
// (§3.2.1: MVA adds one client per replica at each step).
//
// Per replica:
//
//	CPU, disk:      queueing centres, D_MM(N) = Pr·rc + Pw/(1-A_N)·wc + Pw·f·(N-1)·ws(B_N)
//	load balancer:  delay centre, (Pr + Pw/(1-A_N))·lb   every attempt crosses it
//	certifier:      delay centre, Pw·f/(1-A_N)·cert     every update attempt with a writeset is certified
//	think time Z:   delay centre outside the response time
//
// f is Profile.WSShare, the share of update transactions that commit a
// writeset (1 in seed 003; TM1 rolls 17.5 % of its updates back by its
// rules, and those neither reach the certifier nor are applied elsewhere).
//
// Aborted update attempts are retried until they commit, so a committed
// update costs 1/(1-A_N) attempts (§3.3.1); the throughput counts commits.
//
// ws(B) is seed 003's ws when the profile has no per-batch part
// (Resource.WSBatch). With one, a node applies the other nodes' writesets
// in batches, one back-end transaction each, and pays the per-batch part
// once per batch: ws(B) = ws_1 + ws_batch/B, B_N the writesets per batch at
// N (batchSize; planner/DESIGN.md "Apply batches").
type multiMaster struct {
	p       Profile
	par     Params
	l1Value float64
	derived bool
}

func newMultiMaster(p Profile, par Params) (*multiMaster, error) {
	m := &multiMaster{p: p, par: par, l1Value: p.L1}
	if p.L1 == 0 {
		// L(1) not measured: use the model's own conflict window at one
		// replica, so that A_N = A_1 at N = 1 (planner/DESIGN.md).
		sol, err := SolveMVA(m.network(1, p.A1, p.ApplyBatch), par.ClientsPerReplica)
		if err != nil {
			return nil, fmt.Errorf("deriving L(1): %w", err)
		}
		m.l1Value = m.conflictWindow(p.A1, sol)
		m.derived = true
	}
	return m, nil
}

func (m *multiMaster) l1() (float64, bool) { return m.l1Value, m.derived }

// demands returns the per-replica centre demands at n replicas, abort
// probability a and b writesets per apply batch: the resources in profile
// order, then the load balancer and the certifier.
func (m *multiMaster) demands(n int, a, b float64) []float64 {
	p := m.p
	attempts := 0.0 // update attempts per committed transaction
	if p.Pw > 0 {
		attempts = p.Pw / (1 - a)
	}
	d := make([]float64, 0, len(p.Resources)+2)
	for _, r := range p.Resources {
		d = append(d, (p.Pr*r.RC+attempts*r.WC+p.Pw*p.WSShare()*float64(n-1)*p.WSFor(r, b, m.par.ApplyCost))*r.masterScale())
	}
	d = append(d, (p.Pr+attempts)*m.par.LBDelay, attempts*p.WSShare()*m.par.CertifierDelay)
	return d
}

func (m *multiMaster) shape() ([]string, []CenterKind) {
	names := make([]string, 0, len(m.p.Resources)+2)
	kinds := make([]CenterKind, 0, len(m.p.Resources)+2)
	for _, r := range m.p.Resources {
		names = append(names, "replica."+r.Name)
		kinds = append(kinds, Queueing)
	}
	names = append(names, centreLB, centreCertifier)
	kinds = append(kinds, Delay, Delay)
	return names, kinds
}

func (m *multiMaster) network(n int, a, b float64) Network {
	names, kinds := m.shape()
	d := m.demands(n, a, b)
	net := Network{Think: m.par.ThinkTime}
	for i := range names {
		net.Centers = append(net.Centers, Center{Name: names[i], Kind: kinds[i], Demand: d[i]})
	}
	return net
}

// batched reports whether ws depends on the batch size at n replicas.
func (m *multiMaster) batched(n int) bool {
	if n < 2 || m.p.Pw == 0 || m.p.ApplyBatch <= 0 {
		return false
	}
	if m.par.ApplyCost != ApplySplit {
		return len(m.p.Resources) > 0
	}
	for _, r := range m.p.Resources {
		if r.WSBatch > 0 {
			return true
		}
	}
	return false
}

// maxApplyBatch is the most writesets a node applies in one batch
// (multimaster's maxBatch).
const maxApplyBatch = 512

// batchSize is the writesets per apply batch at n replicas that solution s
// implies: a batch is the writeset that wakes the node's apply loop plus
// those that arrived while it applied the previous one, B = 1 + λ·T, where
// λ = (N − 1)·Pw·f·X_node is the rate of the other nodes' writesets and T
// the batch's time at the node's centres, (ws_batch + B·ws_1)·(1 + U) at
// each: stretched by the centre's utilization U, the share of it the
// node's own transactions take (not by the arrival theorem's queue, which
// counts clients mostly not runnable: planner/DESIGN.md "Apply batches").
// Solved for B: B = (1 + λ·Σ ws_batch·(1+U)) / (1 − λ·Σ ws_1·(1+U)), at
// most maxApplyBatch (and that when the loop cannot keep up).
func (m *multiMaster) batchSize(n int, s Solution) float64 {
	lambda := float64(n-1) * m.p.Pw * m.p.WSShare() * s.Throughput
	var fixed, per float64
	for i, r := range m.p.Resources {
		u := 0.0
		if i < len(s.Centers) {
			u = s.Centers[i].Utilization
		}
		one := m.p.WSFor(r, math.Inf(1), m.par.ApplyCost) // ws_1: nothing of the batch's part
		fixed += (m.p.WSFor(r, 1, m.par.ApplyCost) - one) * r.masterScale() * (1 + u)
		per += one * r.masterScale() * (1 + u)
	}
	if lambda*per >= 1 {
		return maxApplyBatch
	}
	return math.Min(maxApplyBatch, (1+lambda*fixed)/(1-lambda*per))
}

// conflictWindow approximates CW(N) as in seed 003 §4.1.1: the time an update
// attempt spends at the CPU and disk plus the certification time, at abort
// rate a in solution s (empty: no queues yet); 0 when the mix has no
// update transactions. An update attempt's residence at a queueing centre
// is wc·(1 + Q), Q being the queue an arriving transaction finds (the
// arrival theorem).
//
// With the rate model (rateGrowth: a measured profile) two things change
// (planner/DESIGN.md "The conflict window of a measured profile"): wc is
// the attempt's own demand measured with updates alone (Resource.WCSat)
// where the profile has it, and the residence is stretched by D/D_own,
// the centre's demand per transaction over the transactions' own part of
// it (Pr·rc + attempts·wc). The other nodes' writesets are applied by the
// node's apply loop, a competitor for the centre that slows every
// transaction's residence, not work of the transaction's own, and the
// arrival queue (at most C) cannot carry it once the centre saturates.
func (m *multiMaster) conflictWindow(a float64, s Solution) float64 {
	if m.p.Pw == 0 {
		return 0
	}
	cw := m.par.CertifierDelay
	attempts := m.p.Pw / (1 - a)
	for i, r := range m.p.Resources {
		wc, q, stretch := r.WC, 0.0, 1.0
		if i < len(s.Centers) {
			q = s.Centers[i].ArrivalQueue
		}
		if m.rateGrowth() {
			if r.WCSat > 0 {
				wc = r.WCSat
			}
			if own := (m.p.Pr*r.RC + attempts*r.WC) * r.masterScale(); own > 0 && i < len(s.Centers) {
				stretch = math.Max(1, s.Centers[i].Demand/own)
			}
		}
		cw += wc * r.masterScale() * (1 + q) * stretch
	}
	return cw
}

// rateGrowth reports whether the abort rate grows with the system's
// writeset rate (Profile.ConflictRate) rather than by seed 003's N.
func (m *multiMaster) rateGrowth() bool {
	return m.p.ConflictRate > 0 && m.par.AbortModel != AbortModelSeed003
}

// abort is A_N at n replicas for solution s (empty: no queues yet).
//
// Seed 003: (1 − A_N) = (1 − A_1)^(N·CW(N)/L(1)), each of N replicas
// committing the profiled replica's updates. With the profile's
// ConflictRate c: A_N = 1 − exp(−c·λ(N)·CW(N)), λ(N) the writesets the
// whole system commits per second in s (N·X_replica·Pw·f): the exposure
// grows with the updates the replicas actually commit, which on busy
// hosts is far less than N times one replica's (planner/DESIGN.md
// "Abort growth").
func (m *multiMaster) abort(n int, a float64, s Solution) float64 {
	cw := m.conflictWindow(a, s)
	if m.rateGrowth() {
		lambda := float64(n) * s.Throughput * m.p.Pw * m.p.WSShare()
		return RateAbort(m.p.ConflictRate, lambda, cw)
	}
	if m.p.A1 == 0 {
		return 0
	}
	return MultiMasterAbort(m.p.A1, n, cw, m.l1Value)
}

func (m *multiMaster) solve(n int) (Point, error) {
	c := m.par.ClientsPerReplica
	var (
		sol   Solution
		a     float64
		iters int
	)
	b := m.p.ApplyBatch
	switch {
	case (m.p.Pw == 0 || (m.p.A1 == 0 && !m.rateGrowth())) && !m.batched(n):
		// No update can abort: A_N = 0 at every N.
		s, err := SolveMVA(m.network(n, 0, b), c)
		if err != nil {
			return Point{}, err
		}
		sol, a, iters = s, 0, 1
	case m.par.CWMode == CWPerPopulation:
		names, kinds := m.shape()
		curve, err := solveSteps(m.par.ThinkTime, names, kinds, c, func(_ int, prev Solution) ([]float64, error) {
			// At step i+1 the abort rate comes from the conflict window of
			// step i, whose update residence is wc·(1 + Q_k(i-1)).
			// prev is empty at step 0: no queues.
			a = m.abort(n, a, prev)
			if err := checkAbort(a); err != nil {
				return nil, err
			}
			if m.batched(n) {
				b = m.batchSize(n, prev)
			}
			return m.demands(n, a, b), nil
		})
		if err != nil {
			return Point{}, err
		}
		sol, iters = curve[c], 1
	default:
		// Fixed point: A -> demands -> MVA -> CW -> A. The map is monotone
		// (a larger A means larger demands, longer queues, a longer CW) and
		// bounded (queues cannot exceed C), so iterating from A_1 climbs to
		// the least fixed point.
		//
		// With batched applies B joins the iteration: B -> demands ->
		// MVA -> X, Q -> B. A larger B lowers the demands, which raises X
		// (more writesets per second, a larger B) but shortens the queues
		// (a shorter batch, a smaller B), so B is damped (half a step).
		a = m.p.A1
		converged := false
		for iters = 1; iters <= maxIterations; iters++ {
			s, err := SolveMVA(m.network(n, a, b), c)
			if err != nil {
				return Point{}, err
			}
			sol = s
			next := m.abort(n, a, s)
			if err := checkAbort(next); err != nil {
				return Point{}, err
			}
			nextB := b
			if m.batched(n) {
				nextB = (b + m.batchSize(n, s)) / 2
			}
			if math.Abs(next-a) <= abortTol && math.Abs(nextB-b) <= batchTol*b {
				converged = true
				break
			}
			a, b = next, nextB
		}
		if !converged {
			return Point{}, fmt.Errorf("%w: abort rate or apply batch still moving after %d iterations (A_N = %g, B = %g)", ErrNotConverged, maxIterations, a, b)
		}
	}
	pt := m.point(n, sol, a, iters)
	if m.batched(n) {
		pt.ApplyBatch = b
	}
	return pt, nil
}

// batchTol is the relative change of the apply batch size the fixed
// point accepts as converged.
const batchTol = 1e-4

func (m *multiMaster) point(n int, sol Solution, a float64, iters int) Point {
	c := m.par.ClientsPerReplica
	perReplica := sol.Throughput
	x := float64(n) * perReplica
	pt := Point{
		Replicas: n, Clients: n * c,
		ThroughputTPS: x, ReadTPS: m.p.Pr * x, WriteTPS: m.p.Pw * x,
		ResponseTimeS:   sol.ResponseTime,
		AbortRate:       a,
		ConflictWindowS: m.conflictWindow(a, sol),
		Iterations:      iters,
	}
	if m.p.Pw > 0 {
		pt.CertifierRPS = x * m.p.Pw * m.p.WSShare() / (1 - a)
	}
	for _, cr := range sol.Centers {
		rp := ResourcePoint{
			Name: cr.Name, Kind: cr.Kind.String(), DemandS: cr.Demand,
			Utilization: cr.Utilization, ResidenceTimeS: cr.Residence, QueueLength: cr.Queue,
		}
		if cr.Name == centreCertifier {
			// One certifier for the whole system: report its total load.
			rp.Utilization *= float64(n)
			rp.QueueLength *= float64(n)
		}
		pt.Resources = append(pt.Resources, rp)
	}
	pt.Bottleneck = bottleneck(pt.Resources)
	return pt
}
