package planner

import (
	"fmt"
	"math"
)

// singleMaster is the single-master model of seed 003 figure 2 and §3.3.3:
// one master runs every update transaction (and, when it has spare capacity,
// some read-only ones); N-1 slaves run read-only transactions and apply the
// master's writesets.
//
// The master is a two-class network: class 0 read-only transactions with
// demands rc, class 1 update transactions with demands wc/(1-A'_N) (retries
// included). A slave is a single-class network of read-only transactions
// whose demand carries the writesets it applies: rc + ρ·ws, with ρ the
// writesets applied per read served (ρ = (N-1)·Pw/Pr when the master runs no
// reads, seed 003's D_slave(N); N·(N-1)·W/(N·R-E) with extra reads E).
// Clients are split between the master and the slaves by the balancing
// algorithm of the paper's figure 3 until the slaves' plus the master's
// read throughput over the master's update throughput is Pr:Pw.
type singleMaster struct {
	p       Profile
	par     Params
	l1Value float64
	derived bool
	// xw1 is the committed update rate of the standalone database (N = 1),
	// the W of seed 003 §3.3.1, used to scale the master's abort rate.
	xw1 float64
}

func newSingleMaster(p Profile, par Params) (*singleMaster, error) {
	m := &singleMaster{p: p, par: par, l1Value: p.L1}
	a1 := m.initialAbort(1)
	sol, err := SolveMVA(m.masterOnlyNetwork(1, a1), par.ClientsPerReplica)
	if err != nil {
		return nil, fmt.Errorf("standalone database: %w", err)
	}
	m.xw1 = p.Pw * sol.Throughput
	if p.L1 == 0 {
		// Derived L(1): the update residence time of the standalone
		// database, the single-master system at N = 1.
		m.l1Value = m.singleClassCW(1, sol)
		m.derived = true
	}
	return m, nil
}

func (m *singleMaster) l1() (float64, bool) { return m.l1Value, m.derived }

// initialAbort is the measured A'_N when the profile has one, else A_1.
func (m *singleMaster) initialAbort(n int) float64 {
	if a, ok := m.p.singleMasterAbort(n); ok {
		return a
	}
	if m.p.Pw == 0 {
		return 0
	}
	return m.p.A1
}

// masterAbort returns A'_N for a master committing xw updates per second
// with conflict window cw. A measured value wins (seed 003 §4.1.2 measures
// A'_N directly). Otherwise the derivation of §3.3.1 applies to the master,
// which "resolves all conflicts locally, like a standalone system, but at a
// higher rate of update transactions" (§3.3.3):
//
//	(1 - A'_N) = (1 - A_1)^((X_w(N)·CW'(N)) / (W·L(1)))
func (m *singleMaster) masterAbort(n int, xw, cw float64) (float64, bool) {
	if a, ok := m.p.singleMasterAbort(n); ok {
		return a, true
	}
	if m.p.Pw == 0 || m.p.A1 == 0 {
		return 0, false
	}
	if m.xw1 <= 0 || m.l1Value <= 0 {
		return m.p.A1, false
	}
	return AbortGrowth(m.p.A1, xw*cw/(m.xw1*m.l1Value)), false
}

func (m *singleMaster) updateAttempts(a float64) float64 {
	if m.p.Pw == 0 {
		return 0
	}
	return m.p.Pw / (1 - a)
}

// masterOnlyNetwork is the master running the whole mix as one class: the
// standalone database of §3.3.1, D(1) = Pr·rc + Pw/(1-A_1)·wc, behind the
// load balancer.
func (m *singleMaster) masterOnlyNetwork(n int, a float64) Network {
	att := m.updateAttempts(a)
	net := Network{Think: m.par.ThinkTime}
	for _, r := range m.p.Resources {
		net.Centers = append(net.Centers, Center{Name: "master." + r.Name, Kind: Queueing, Demand: (m.p.Pr*r.RC + att*m.onlyWC(r, n)) * r.masterScale()})
	}
	net.Centers = append(net.Centers, Center{Name: centreLB, Kind: Delay, Demand: (m.p.Pr + att) * m.par.LBDelay})
	return net
}

// masterWC is an update attempt's demand on the master of n replicas:
// wc, plus the WAL sender's wsend for each replica beyond the one the
// profile streamed to (a primary sends its WAL to every replica).
func masterWC(r Resource, n int) float64 {
	if n <= 2 {
		return r.WC
	}
	return r.WC + float64(n-2)*r.WSend
}

// twoDemands reports whether the profile measured the master's update
// demand in both regimes (masterWCAt), so that its read share matters.
func (m *singleMaster) twoDemands() bool {
	if m.p.MasterReadShare <= 0 {
		return false
	}
	for _, r := range m.p.Resources {
		if r.WCSat > 0 && r.WCSat < r.WC {
			return true
		}
	}
	return false
}

// onlyWC is the update demand of a master that receives every client
// (the whole mix): its share of reads is the mix's.
func (m *singleMaster) onlyWC(r Resource, n int) float64 {
	if n == 1 {
		return masterWC(r, n)
	}
	return masterWCAt(r, n, m.p.Pr, m.p.MasterReadShare)
}

// masterWCAt is masterWC on a master whose transactions are a share of
// reads: with a measured WCSat (updates alone) the update demand goes
// from WC, measured with the profile's share (shareP), down to WCSat as
// the share falls to 0, in proportion; at or above shareP it is WC.
func masterWCAt(r Resource, n int, share, shareP float64) float64 {
	wc := masterWC(r, n)
	if r.WCSat <= 0 || r.WCSat >= r.WC || shareP <= 0 || share >= shareP {
		return wc
	}
	return wc - (r.WC-r.WCSat)*(1-math.Max(0, share)/shareP)
}

// masterNetwork is the two-class master of n replicas: class 0 reads,
// class 1 updates.
func (m *singleMaster) masterNetwork(n int, a, share float64) ClassNetwork {
	retry := 1 / (1 - a)
	net := ClassNetwork{Think: [2]float64{m.par.ThinkTime, m.par.ThinkTime}}
	for _, r := range m.p.Resources {
		f := r.masterScale()
		net.Centers = append(net.Centers, ClassCenter{Name: "master." + r.Name, Kind: Queueing, Demand: [2]float64{r.RC * f, masterWCAt(r, n, share, m.p.MasterReadShare) * retry * f}})
	}
	net.Centers = append(net.Centers, ClassCenter{Name: centreLB, Kind: Delay, Demand: [2]float64{m.par.LBDelay, m.par.LBDelay * retry}})
	return net
}

// slaveNetwork is one slave: read-only transactions whose demand includes
// rho update transactions per read served, of which the share
// Profile.WSShare commit a writeset the slave applies.
func (m *singleMaster) slaveNetwork(rho float64) Network {
	net := Network{Think: m.par.ThinkTime}
	for _, r := range m.p.Resources {
		net.Centers = append(net.Centers, Center{Name: "slave." + r.Name, Kind: Queueing, Demand: (r.RC + rho*m.p.WSShare()*r.WS) * r.replicaScale()})
	}
	net.Centers = append(net.Centers, Center{Name: centreLB, Kind: Delay, Demand: m.par.LBDelay})
	return net
}

// singleClassCW is the update residence time of a single-class master
// solution of n replicas: Σ wc·(1 + Q) over the resources.
func (m *singleMaster) singleClassCW(n int, s Solution) float64 {
	if m.p.Pw == 0 {
		return 0
	}
	cw := 0.0
	for i, r := range m.p.Resources {
		cw += m.onlyWC(r, n) * r.masterScale() * (1 + s.Centers[i].ArrivalQueue)
	}
	return cw
}

// classCW is the update residence time (one attempt) at a two-class master:
// R_{1,k}·(1-A'), since R_{1,k} = wc/(1-A')·(1 + Q_k).
func (m *singleMaster) classCW(s ClassSolution, a float64) float64 {
	cw := 0.0
	for i := range m.p.Resources {
		cw += s.Centers[i].Residence[1] * (1 - a)
	}
	return cw
}

func (m *singleMaster) solve(n int) (Point, error) {
	switch {
	case n == 1:
		return m.solveMasterOnly(1, m.par.ClientsPerReplica, BalanceStandalone)
	case m.p.Pw == 0:
		return m.solveNoUpdates(n)
	case m.p.Pr == 0:
		return m.solveMasterOnly(n, n*m.par.ClientsPerReplica, BalanceNoReads)
	}
	return m.solveBalanced(n)
}

// solveMasterOnly solves a master that receives every client: the
// standalone database at N = 1, or a mix without read-only transactions,
// where slaves have nothing to serve and only apply writesets.
func (m *singleMaster) solveMasterOnly(n, clients int, balance string) (Point, error) {
	a := m.initialAbort(n)
	var (
		sol       Solution
		measured  bool
		iters     int
		converged bool
	)
	_, measured = m.p.singleMasterAbort(n)
	var da damper
	for iters = 1; iters <= maxIterations; iters++ {
		s, err := SolveMVA(m.masterOnlyNetwork(n, a), clients)
		if err != nil {
			return Point{}, err
		}
		sol = s
		if n == 1 {
			// The standalone database is where A_1 was measured.
			converged = true
			break
		}
		next, _ := m.masterAbort(n, m.p.Pw*s.Throughput, m.singleClassCW(n, s))
		if err := checkAbort(next); err != nil {
			return Point{}, err
		}
		if math.Abs(next-a) <= smAbortTol {
			converged = true
			break
		}
		a = da.step(a, next)
	}
	if !converged {
		return Point{}, fmt.Errorf("%w: master abort rate still moving after %d iterations (A'_N = %g)", ErrNotConverged, maxIterations, a)
	}
	x := sol.Throughput
	pt := Point{
		Replicas: n, Clients: clients,
		ThroughputTPS: x, ReadTPS: m.p.Pr * x, WriteTPS: m.p.Pw * x,
		ResponseTimeS: sol.ResponseTime, AbortRate: a, AbortMeasured: measured,
		ConflictWindowS: m.singleClassCW(n, sol),
		Balance:         balance, MasterReadTPS: m.p.Pr * x, Iterations: iters,
	}
	for _, c := range sol.Centers {
		pt.Resources = append(pt.Resources, ResourcePoint{
			Name: c.Name, Kind: c.Kind.String(), DemandS: c.Demand,
			Utilization: c.Utilization, ResidenceTimeS: c.Residence, QueueLength: c.Queue,
		})
	}
	if n > 1 {
		// Slaves only apply the committed writesets.
		for _, r := range m.p.Resources {
			pt.Resources = append(pt.Resources, ResourcePoint{
				Name: "slave." + r.Name, Kind: Queueing.String(), DemandS: r.WS,
				Utilization: pt.WriteTPS * m.p.WSShare() * r.WS,
			})
		}
	}
	pt.Bottleneck = bottleneck(pt.Resources)
	return pt, nil
}

// solveNoUpdates: without update transactions the master is one more
// read-only replica, so every replica serves C clients alike.
func (m *singleMaster) solveNoUpdates(n int) (Point, error) {
	c := m.par.ClientsPerReplica
	sol, err := SolveMVA(m.slaveNetwork(0), c)
	if err != nil {
		return Point{}, err
	}
	x := float64(n) * sol.Throughput
	pt := Point{
		Replicas: n, Clients: n * c, ThroughputTPS: x, ReadTPS: x,
		ResponseTimeS: sol.ResponseTime, Balance: BalanceNoUpdates,
		MasterReadTPS: sol.Throughput, Iterations: 1,
	}
	for _, role := range []string{"master", "slave"} {
		for i, r := range m.p.Resources {
			cr := sol.Centers[i]
			pt.Resources = append(pt.Resources, ResourcePoint{
				Name: role + "." + r.Name, Kind: Queueing.String(), DemandS: cr.Demand,
				Utilization: cr.Utilization, ResidenceTimeS: cr.Residence, QueueLength: cr.Queue,
			})
		}
	}
	lb := sol.Centers[len(sol.Centers)-1]
	pt.Resources = append(pt.Resources, ResourcePoint{
		Name: centreLB, Kind: Delay.String(), DemandS: lb.Demand,
		Utilization: float64(n) * lb.Utilization, ResidenceTimeS: lb.Residence, QueueLength: float64(n) * lb.Queue,
	})
	pt.Bottleneck = bottleneck(pt.Resources)
	return pt, nil
}

// damper relaxes a fixed-point iteration that overshoots. The master's
// abort rate feeds back negatively (more aborts, more demand, fewer updates
// committed, fewer conflicts), so plain iteration can oscillate; each time
// the step changes direction the step is halved (down to 1/64).
type damper struct {
	lambda float64
	last   float64
}

func (d *damper) step(cur, next float64) float64 {
	if d.lambda == 0 {
		d.lambda = 1
	}
	delta := next - cur
	if d.last != 0 && delta != 0 && math.Signbit(delta) != math.Signbit(d.last) && d.lambda > 1.0/64 {
		d.lambda /= 2
	}
	d.last = delta
	return cur + d.lambda*delta
}

// findRoot finds x in [lo, hi] where f changes sign, f(lo) < 0 <= f(hi) or
// f(lo) > 0 >= f(hi), by the Illinois variant of regula falsi: bracketing
// like bisection, superlinear on smooth functions. f may report a point as
// unusable (ok false): it then counts as on hi's side, and the next step
// bisects. It stops when the bracket is narrower than tolX or |f| <= tolF,
// and returns the bracket end on lo's side when f is known there, so the
// answer is always a usable point.
func findRoot(f func(float64) (float64, bool, error), lo, hi, flo, fhi, tolX, tolF float64) (float64, error) {
	if flo == 0 || math.Abs(flo) <= tolF {
		return lo, nil
	}
	loSign := math.Signbit(flo)
	side := 0
	for i := 0; i < 300 && hi-lo > tolX; i++ {
		x := (lo + hi) / 2
		if !math.IsNaN(fhi) && fhi != flo {
			if r := (lo*fhi - hi*flo) / (fhi - flo); r > lo && r < hi {
				x = r
			}
		}
		fx, ok, err := f(x)
		if err != nil {
			return 0, err
		}
		switch {
		case !ok:
			hi, fhi, side = x, math.NaN(), 0
		case fx == 0 || math.Abs(fx) <= tolF:
			return x, nil
		case math.Signbit(fx) == loSign:
			lo, flo = x, fx
			if side == -1 && !math.IsNaN(fhi) {
				fhi /= 2
			}
			side = -1
		default:
			hi, fhi = x, fx
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
	return lo, nil
}

// maxWritesetsPerRead caps ρ, the writesets a slave applies per read it
// serves.
const maxWritesetsPerRead = 1e9

// smState is one split of the clients between master and slaves.
type smState struct {
	master  ClassSolution // class 0: extra reads E; class 1: updates
	slave   Solution      // one of the N-1 slaves
	balance string
}

// solveBalanced iterates the balancing of figure 3 to a fixed point of the
// master abort rate A'_N and the writesets per slave read ρ, which both
// depend on the throughputs the balancing produces.
func (m *singleMaster) solveBalanced(n int) (Point, error) {
	a := m.initialAbort(n)
	_, measured := m.p.singleMasterAbort(n)
	rho := float64(n-1) * m.p.Pw / m.p.Pr
	// share: the master's reads among its transactions, which sets its
	// update demand (masterWCAt); it starts where the profile measured WC.
	share := m.p.MasterReadShare
	var st smState
	var da, dr, ds damper
	for it := 1; it <= maxIterations; it++ {
		var err error
		st, err = m.balance(n, a, rho, share)
		if err != nil {
			return Point{}, err
		}
		xw, xs := st.master.Throughput[1], st.slave.Throughput
		nextRho := rho
		if xs > 0 {
			// When the slaves get (almost) no reads, each read carries an
			// unbounded share of writesets; the cap keeps the demand finite
			// (the slaves are then useless for reads, which is the answer).
			nextRho = math.Min(xw/xs, maxWritesetsPerRead)
		}
		nextShare := share
		if e := st.master.Throughput[0]; e+xw > 0 && m.twoDemands() {
			nextShare = e / (e + xw)
		}
		nextA, _ := m.masterAbort(n, xw, m.classCW(st.master, a))
		if err := checkAbort(nextA); err != nil {
			return Point{}, err
		}
		if math.Abs(nextA-a) <= smAbortTol && math.Abs(nextRho-rho) <= smRatioTol*math.Max(1, rho) && math.Abs(nextShare-share) <= smRatioTol {
			return m.balancedPoint(n, st, a, measured, it), nil
		}
		a, rho, share = da.step(a, nextA), dr.step(rho, nextRho), ds.step(share, nextShare)
	}
	return Point{}, fmt.Errorf("%w: single-master balance still moving after %d iterations (A'_N = %g, writesets per slave read = %g, master read share = %g)", ErrNotConverged, maxIterations, a, rho, share)
}

// balance is the balancing algorithm of seed 003 figure 3 for given
// demands (A'_N and ρ fixed). Clients are distributed among the master's
// update queue, the master's extra reads and the slaves so that the
// read:update throughput ratio is Pr:Pw (figure 3's stopping rule).
//
// Figure 3 starts from Pw·N·C update clients on the master and
// Pr·N·C/(N-1) read clients on each slave and compares the ratio with Pr:Pw:
//
//   - master bottleneck (reads ahead of Pr:Pw): j clients per slave move to
//     the master's update queue, i.e. w = Pw·N·C + j·(N-1) update clients and
//     (N·C - w)/(N-1) per slave, until the ratio is Pr:Pw. The ratio falls
//     as w grows, so this solves for w by bisection instead of stepping j by
//     one client: the same root, met exactly (throughputs are interpolated
//     between whole populations).
//   - master with spare capacity (reads behind): the master takes extra
//     reads. Figure 3 keeps the Pw·N·C update clients fixed and moves reads
//     until the ratio is Pr:Pw. With the paper's own TPC-W demands that
//     search never reaches the ratio (browsing and shopping at 2 to 4
//     replicas) or reaches it only with reads waiting several times longer
//     on the master than on a slave, and it does not meet the other case at
//     the boundary, so the iteration over A'_N could flip between the cases.
//     Here the update clients are instead whatever number gives the ratio
//     (the same bisection: clients spread in proportion to throughput times
//     residence time, the paper's property 2) and the master takes e extra
//     read clients until a read waits as long on the master as on a slave,
//     where the least-loaded load balancer of §5.2 settles.
//
// Both cases are one rule: w from the ratio, e = 0 unless a read would wait
// less on the master than on a slave. See planner/DESIGN.md.
func (m *singleMaster) balance(n int, a, rho, share float64) (smState, error) {
	p := m.p
	nm1 := float64(n - 1)
	total := float64(n * m.par.ClientsPerReplica)
	masterClients := p.Pw * total

	// One slave, populations up to every client it could receive.
	slaveCurve, err := SolveMVACurve(m.slaveNetwork(rho), int(math.Ceil(total/nm1)))
	if err != nil {
		return smState{}, fmt.Errorf("slave: %w", err)
	}
	// The master: e read clients (class 0) and w update clients (class 1);
	// the rest of the N·C clients are spread over the slaves.
	grid := &lazyGrid{net: m.masterNetwork(n, a, share), limit: int(math.Ceil(total))}
	split := func(e, w float64) (smState, error) {
		ms, err := grid.at(e, w)
		if err != nil {
			return smState{}, fmt.Errorf("master: %w", err)
		}
		sl := interpolate(slaveCurve, clampF((total-e-w)/nm1, 0, total))
		return smState{master: ms, slave: sl}, nil
	}
	// gap > 0: reads ahead of Pr:Pw; gap < 0: behind. It falls as w grows.
	gap := func(st smState) float64 {
		return p.Pw*(st.master.Throughput[0]+nm1*st.slave.Throughput) - p.Pr*st.master.Throughput[1]
	}

	// Figure 3's initial split and test.
	init, err := split(0, masterClients)
	if err != nil {
		return smState{}, err
	}
	g0 := gap(init)
	scale := p.Pw*nm1*init.slave.Throughput + p.Pr*init.master.Throughput[1]
	initialBalanced := math.Abs(g0) <= 1e-12*scale

	// writersFor finds w in [0, total-e] with gap 0. ok is false when even
	// total-e update clients leave reads ahead of Pr:Pw: the master holds
	// too many read clients for any balance.
	writersFor := func(e float64) (st smState, ok bool, err error) {
		room := total - e
		hi := math.Min(math.Max(masterClients, 1), room)
		if st, err = split(e, hi); err != nil {
			return smState{}, false, err
		}
		for gap(st) > 0 {
			if hi >= room {
				return smState{}, false, nil
			}
			hi = math.Min(2*hi+1, room)
			if st, err = split(e, hi); err != nil {
				return smState{}, false, err
			}
		}
		// No update clients: gap >= 0. Find the root in [0, hi].
		lo := 0.0
		at0, err := split(e, lo)
		if err != nil {
			return smState{}, false, err
		}
		tol := 1e-13 * (p.Pw*(at0.master.Throughput[0]+nm1*at0.slave.Throughput) + p.Pr*st.master.Throughput[1])
		w, err := findRoot(func(w float64) (float64, bool, error) {
			sm, err := split(e, w)
			return gap(sm), true, err
		}, lo, hi, gap(at0), gap(st), 1e-13*math.Max(hi, 1e-6), tol)
		if err != nil {
			return smState{}, false, err
		}
		st, err = split(e, w)
		return st, err == nil, err
	}
	// tooMany reports whether e extra read clients are at least as many as
	// the master should take: a read would wait as long there as on a
	// slave, or no balance exists with that many.
	tooMany := func(e float64) (smState, bool, error) {
		st, ok, err := writersFor(e)
		if err != nil || !ok {
			return st, true, err
		}
		return st, st.master.ResponseTime[0] >= st.slave.ResponseTime, nil
	}

	st, ok, err := writersFor(0)
	if err != nil {
		return smState{}, err
	}
	if !ok {
		return smState{}, fmt.Errorf("%w: %d replicas: no split of %g clients reaches read:update = %g:%g", ErrNotBalanced, n, total, p.Pr, p.Pw)
	}
	if st.master.ResponseTime[0] >= st.slave.ResponseTime {
		// A read would wait at least as long on the master: it takes none.
		switch {
		case initialBalanced:
			st.balance = BalanceBalanced
		case g0 > 0:
			st.balance = BalanceMasterBottleneck
		default:
			st.balance = BalanceFewerWriters
		}
		return st, nil
	}
	// The master has spare capacity: find how many reads it takes.
	lo, hi := 0.0, math.Max(1, p.Pr*total/nm1/2)
	for {
		_, over, err := tooMany(hi)
		if err != nil {
			return smState{}, err
		}
		if over {
			break
		}
		if hi >= total {
			return smState{}, fmt.Errorf("%w: %d replicas: reads wait longer on the slaves whatever the master takes", ErrNotBalanced, n)
		}
		lo, hi = hi, math.Min(2*hi, total)
	}
	// wait(e) = master read response - slave read response rises with e;
	// beyond the largest feasible e it counts as positive.
	waitAt := func(e float64) (float64, bool, error) {
		sm, ok, err := writersFor(e)
		if err != nil || !ok {
			return 0, false, err
		}
		return sm.master.ResponseTime[0] - sm.slave.ResponseTime, true, nil
	}
	wLo, _, err := waitAt(lo)
	if err != nil {
		return smState{}, err
	}
	wHi, okHi, err := waitAt(hi)
	if err != nil {
		return smState{}, err
	}
	if !okHi {
		wHi = math.NaN()
	}
	e, err := findRoot(waitAt, lo, hi, wLo, wHi, 1e-12*math.Max(hi, 1e-6), 1e-13*st.slave.ResponseTime)
	if err != nil {
		return smState{}, err
	}
	best, ok, err := writersFor(e)
	if err != nil {
		return smState{}, err
	}
	if !ok {
		return smState{}, fmt.Errorf("%w: %d replicas: no balance with %g extra read clients on the master", ErrNotBalanced, n, e)
	}
	best.balance = BalanceMasterSpare
	return best, nil
}

func (m *singleMaster) balancedPoint(n int, st smState, a float64, measured bool, iters int) Point {
	c := m.par.ClientsPerReplica
	nm1 := float64(n - 1)
	e, xw, xs := st.master.Throughput[0], st.master.Throughput[1], st.slave.Throughput
	reads := e + nm1*xs
	x := reads + xw
	total := float64(n * c)
	pt := Point{
		Replicas: n, Clients: n * c,
		ThroughputTPS: x, ReadTPS: reads, WriteTPS: xw,
		AbortRate: a, AbortMeasured: measured,
		ConflictWindowS: m.classCW(st.master, a),
		Balance:         st.balance, MasterReadTPS: e, Iterations: iters,
	}
	if x > 0 {
		pt.ResponseTimeS = total/x - m.par.ThinkTime
	}
	atMaster := e + xw
	lbQueue := 0.0
	for _, cc := range st.master.Centers {
		q := cc.Queue[0] + cc.Queue[1]
		if cc.Kind == Delay {
			lbQueue += q
			continue
		}
		rp := ResourcePoint{Name: cc.Name, Kind: cc.Kind.String(), Utilization: cc.Utilization, QueueLength: q}
		if atMaster > 0 {
			// D_master(N) = E/(NW+E)·rc + NW/(NW+E)·wc/(1-A'_N), §3.3.3.
			rp.DemandS = (e*cc.Demand[0] + xw*cc.Demand[1]) / atMaster
			rp.ResidenceTimeS = q / atMaster
		}
		pt.Resources = append(pt.Resources, rp)
	}
	for _, sc := range st.slave.Centers {
		if sc.Kind == Delay {
			lbQueue += nm1 * sc.Queue
			continue
		}
		pt.Resources = append(pt.Resources, ResourcePoint{
			Name: sc.Name, Kind: sc.Kind.String(), DemandS: sc.Demand,
			Utilization: sc.Utilization, ResidenceTimeS: sc.Residence, QueueLength: sc.Queue,
		})
	}
	lb := ResourcePoint{Name: centreLB, Kind: Delay.String(), Utilization: lbQueue, QueueLength: lbQueue}
	if x > 0 {
		lb.ResidenceTimeS = lbQueue / x
		lb.DemandS = lb.ResidenceTimeS
	}
	pt.Resources = append(pt.Resources, lb)
	pt.Bottleneck = bottleneck(pt.Resources)
	return pt
}

func clampF(v, lo, hi float64) float64 {
	return math.Max(lo, math.Min(hi, v))
}
