package planner

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func builtin(t *testing.T, name string) Profile {
	t.Helper()
	p, err := BuiltinProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func predict(t *testing.T, p Profile, d Design, replicas []int, par Params) Prediction {
	t.Helper()
	pred, err := Predict(p, d, replicas, par)
	if err != nil {
		t.Fatalf("%s %s: %v", p.Name, d, err)
	}
	return pred
}

func span(lo, hi int) []int {
	var out []int
	for n := lo; n <= hi; n++ {
		out = append(out, n)
	}
	return out
}

func TestAbortGrowthFormula(t *testing.T) {
	tests := []struct {
		name          string
		a1            float64
		n             int
		cw, l1, wantA float64
	}{
		{"N=1, CW=L1 gives A1", 0.0053, 1, 0.2, 0.2, 0.0053},
		{"no aborts stay none", 0, 16, 0.3, 0.1, 0},
		// (1-A_N) = (1-A_1)^(N·CW/L1) = 0.99^(4·2) = 0.99^8.
		{"N=4, CW=2·L1", 0.01, 4, 0.2, 0.1, 1 - math.Pow(0.99, 8)},
		{"unknown L1 keeps A1", 0.01, 8, 0.2, 0, 0.01},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MultiMasterAbort(tt.a1, tt.n, tt.cw, tt.l1); !near(got, tt.wantA, 1e-14) {
				t.Errorf("A = %.16g, want %.16g", got, tt.wantA)
			}
		})
	}
}

// A_N equals A_1 at one replica and rises with N, for both ways of
// iterating the conflict window; the per-population reading of §4.1.1 gives
// slightly fewer aborts than the fixed point, as the paper says.
func TestMultiMasterAbortGrowth(t *testing.T) {
	for _, name := range []string{"tpcw-browsing", "tpcw-shopping", "tpcw-ordering"} {
		p := builtin(t, name)
		p.A1 = 0.0053 // §6.3.3's middle value, to make growth visible
		fixed := predict(t, p, MultiMaster, span(1, 16), DefaultParams(p))
		par := DefaultParams(p)
		par.CWMode = CWPerPopulation
		perPop := predict(t, p, MultiMaster, span(1, 16), par)
		if got := fixed.Points[0].AbortRate; !near(got, p.A1, 1e-12) {
			t.Errorf("%s: A_1 = %.15g, want the profile's %g", name, got, p.A1)
		}
		for i := 1; i < len(fixed.Points); i++ {
			prev, pt := fixed.Points[i-1], fixed.Points[i]
			if !(pt.AbortRate > prev.AbortRate) {
				t.Errorf("%s: A_%d = %g not above A_%d = %g", name, pt.Replicas, pt.AbortRate, prev.Replicas, prev.AbortRate)
			}
			// The fixed point is self-consistent: A_N = f(CW(N)).
			if want := MultiMasterAbort(p.A1, pt.Replicas, pt.ConflictWindowS, fixed.L1); !near(pt.AbortRate, want, 1e-9) {
				t.Errorf("%s N=%d: A_N = %g but the formula on CW(N) gives %g", name, pt.Replicas, pt.AbortRate, want)
			}
			pp := perPop.Points[i]
			if !(pp.AbortRate < pt.AbortRate) || pp.AbortRate < 0.8*pt.AbortRate {
				t.Errorf("%s N=%d: per-population A_N = %g, fixed point %g: want slightly lower", name, pt.Replicas, pp.AbortRate, pt.AbortRate)
			}
		}
	}
}

// D_MM(N) = Pr·rc + Pw/(1-A_N)·wc + Pw·(N-1)·ws (§3.3.2), per resource.
func TestMultiMasterDemand(t *testing.T) {
	p := builtin(t, "tpcw-ordering")
	pred := predict(t, p, MultiMaster, []int{1, 5, 16}, DefaultParams(p))
	for _, pt := range pred.Points {
		for _, r := range p.Resources {
			want := p.Pr*r.RC + p.Pw/(1-pt.AbortRate)*r.WC + p.Pw*float64(pt.Replicas-1)*r.WS
			got, ok := pt.Resource("replica." + r.Name)
			if !ok {
				t.Fatalf("N=%d: no replica.%s", pt.Replicas, r.Name)
			}
			if !near(got.DemandS, want, 1e-12) {
				t.Errorf("N=%d %s: D = %g, want %g", pt.Replicas, r.Name, got.DemandS, want)
			}
		}
		// Response time by Little's law: N·C/X - Z.
		if want := float64(pt.Clients)/pt.ThroughputTPS - p.ThinkTime; !near(pt.ResponseTimeS, want, 1e-9) {
			t.Errorf("N=%d: R = %g, Little's law gives %g", pt.Replicas, pt.ResponseTimeS, want)
		}
	}
}

// syntheticProfile builds a one-resource mix for the balancing tests.
func syntheticProfile(pr, rc, wc, ws float64, clients int) Profile {
	return Profile{
		Version: ProfileVersion, Name: "synthetic", Workload: "test", Mix: "test",
		Pr: pr, Pw: 1 - pr, A1: 0.001,
		Resources: []Resource{{Name: "cpu", RC: rc, WC: wc, WS: ws}},
		ThinkTime: 1, ClientsPerReplica: clients,
	}
}

// Both branches of the balancing algorithm of seed 003 figure 3, and the
// Pr:Pw read:write ratio of every single-master solution.
func TestSingleMasterBalancing(t *testing.T) {
	tests := []struct {
		name    string
		p       Profile
		n       int
		balance string
	}{
		{"browsing: master has spare capacity", builtin(t, "tpcw-browsing"), 4, BalanceMasterSpare},
		{"shopping: master has spare capacity", builtin(t, "tpcw-shopping"), 8, BalanceMasterSpare},
		{"ordering: master is the bottleneck", builtin(t, "tpcw-ordering"), 8, BalanceMasterBottleneck},
		{"bidding: master is the bottleneck", builtin(t, "rubis-bidding"), 12, BalanceMasterBottleneck},
		{"cheap updates: spare", syntheticProfile(0.7, 0.030, 0.002, 0.001, 20), 3, BalanceMasterSpare},
		{"costly updates: bottleneck", syntheticProfile(0.7, 0.010, 0.060, 0.005, 40), 3, BalanceMasterBottleneck},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pred := predict(t, tt.p, SingleMaster, []int{tt.n}, DefaultParams(tt.p))
			pt := pred.Points[0]
			if pt.Balance != tt.balance {
				t.Fatalf("balance = %q, want %q", pt.Balance, tt.balance)
			}
			if got, want := pt.ReadTPS/pt.WriteTPS, tt.p.Pr/tt.p.Pw; !near(got, want, 1e-6) {
				t.Errorf("read:write = %.9g, want Pr:Pw = %.9g", got, want)
			}
			if !near(pt.ReadTPS+pt.WriteTPS, pt.ThroughputTPS, 1e-12) {
				t.Errorf("reads %g + writes %g != throughput %g", pt.ReadTPS, pt.WriteTPS, pt.ThroughputTPS)
			}
			master := maxUtil(pt, "master.")
			slaveRead := pt.ReadTPS - pt.MasterReadTPS
			switch tt.balance {
			case BalanceMasterSpare:
				// The master takes extra reads, and it is not idle.
				if !(pt.MasterReadTPS > 0) {
					t.Errorf("master runs no reads (E = %g)", pt.MasterReadTPS)
				}
			case BalanceMasterBottleneck:
				// No extra reads; the master saturates, the slaves do not.
				if pt.MasterReadTPS != 0 {
					t.Errorf("E = %g, want 0", pt.MasterReadTPS)
				}
				if master < 0.99 || maxUtil(pt, "slave.") >= master {
					t.Errorf("master utilisation %g, slave %g: want a saturated master", master, maxUtil(pt, "slave."))
				}
				if pt.Bottleneck[:len("master.")] != "master." {
					t.Errorf("bottleneck = %s, want a master resource", pt.Bottleneck)
				}
				// With no extra reads the slave demand is seed 003's
				// D_slave(N) = rc + Pw/Pr·(N-1)·ws.
				for _, r := range tt.p.Resources {
					sr, _ := pt.Resource("slave." + r.Name)
					want := r.RC + tt.p.Pw/tt.p.Pr*float64(tt.n-1)*r.WS
					if !near(sr.DemandS, want, 1e-6) {
						t.Errorf("D_slave %s = %g, want %g", r.Name, sr.DemandS, want)
					}
				}
			}
			// Slaves apply every committed writeset: D_slave = rc + ws·X_w/X_slave.
			for _, r := range tt.p.Resources {
				sr, _ := pt.Resource("slave." + r.Name)
				want := r.RC + r.WS*pt.WriteTPS/(slaveRead/float64(tt.n-1))
				if !near(sr.DemandS, want, 1e-6) {
					t.Errorf("D_slave %s = %g, want rc + ws·Xw/Xs = %g", r.Name, sr.DemandS, want)
				}
			}
		})
	}
}

// In the spare-capacity case the master takes reads until a read waits as
// long there as on a slave (what a least-loaded balancer converges to).
func TestSingleMasterSpareEqualisesReads(t *testing.T) {
	p := builtin(t, "tpcw-browsing")
	m, err := newSingleMaster(p, DefaultParams(p))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 4, 16} {
		st, err := m.balance(n, p.A1, float64(n-1)*p.Pw/p.Pr, p.MasterReadShare)
		if err != nil {
			t.Fatal(err)
		}
		if st.balance != BalanceMasterSpare {
			t.Fatalf("N=%d: balance %q", n, st.balance)
		}
		if !near(st.master.ResponseTime[0], st.slave.ResponseTime, 1e-6) {
			t.Errorf("N=%d: read response master %g, slave %g", n, st.master.ResponseTime[0], st.slave.ResponseTime)
		}
	}
}

func maxUtil(pt Point, prefix string) float64 {
	u := 0.0
	for _, r := range pt.Resources {
		if len(r.Name) >= len(prefix) && r.Name[:len(prefix)] == prefix && r.Kind == "queueing" {
			u = math.Max(u, r.Utilization)
		}
	}
	return u
}

// The single-master ratio holds over every replica count of every built-in
// mix that has both reads and updates.
func TestSingleMasterRatioEverywhere(t *testing.T) {
	for _, name := range BuiltinProfileNames() {
		p := builtin(t, name)
		pred := predict(t, p, SingleMaster, span(1, 16), DefaultParams(p))
		for _, pt := range pred.Points {
			if p.Pw == 0 {
				if pt.WriteTPS != 0 {
					t.Errorf("%s N=%d: %g writes/s in a read-only mix", name, pt.Replicas, pt.WriteTPS)
				}
				continue
			}
			if got, want := pt.ReadTPS/pt.WriteTPS, p.Pr/p.Pw; !near(got, want, 1e-6) {
				t.Errorf("%s N=%d (%s): read:write = %.9g, want %.9g", name, pt.Replicas, pt.Balance, got, want)
			}
			if want := float64(pt.Clients)/pt.ThroughputTPS - p.ThinkTime; !near(pt.ResponseTimeS, want, 1e-9) {
				t.Errorf("%s N=%d: R = %g, Little's law gives %g", name, pt.Replicas, pt.ResponseTimeS, want)
			}
		}
	}
}

// Measured A'_N in the profile replaces the estimate (§4.1.2).
func TestSingleMasterMeasuredAbort(t *testing.T) {
	p := builtin(t, "tpcw-ordering")
	p.SingleMasterAborts = []MeasuredAbort{{Replicas: 6, Abort: 0.02}}
	pred := predict(t, p, SingleMaster, []int{4, 6}, DefaultParams(p))
	pt6, _ := pred.At(6)
	if pt6.AbortRate != 0.02 || !pt6.AbortMeasured {
		t.Errorf("N=6: A' = %g measured=%v, want the profile's 0.02", pt6.AbortRate, pt6.AbortMeasured)
	}
	pt4, _ := pred.At(4)
	if pt4.AbortMeasured {
		t.Errorf("N=4 marked measured")
	}
}

// Without updates both designs are N independent replicas.
func TestReadOnlyMixScalesLinearly(t *testing.T) {
	p := builtin(t, "rubis-browsing")
	for _, d := range []Design{MultiMaster, SingleMaster} {
		pred := predict(t, p, d, []int{1, 7, 16}, DefaultParams(p))
		x1 := pred.Points[0].ThroughputTPS
		for _, pt := range pred.Points {
			if !near(pt.ThroughputTPS, float64(pt.Replicas)*x1, 1e-9) || pt.AbortRate != 0 {
				t.Errorf("%s N=%d: X = %g, want %g; A = %g", d, pt.Replicas, pt.ThroughputTPS, float64(pt.Replicas)*x1, pt.AbortRate)
			}
		}
	}
}

func TestPredictErrors(t *testing.T) {
	p := builtin(t, "tpcw-shopping")
	par := DefaultParams(p)
	tests := []struct {
		name     string
		p        Profile
		d        Design
		replicas []int
		par      func(Params) Params
		want     error
	}{
		{"no replicas", p, MultiMaster, nil, nil, ErrInvalidParams},
		{"zero replicas", p, MultiMaster, []int{0}, nil, ErrInvalidParams},
		{"too many replicas", p, MultiMaster, []int{MaxReplicas + 1}, nil, ErrInvalidParams},
		{"unknown design", p, Design("raidb-9"), []int{1}, nil, ErrUnknownDesign},
		{"negative think", p, MultiMaster, []int{1}, func(q Params) Params { q.ThinkTime = -1; return q }, ErrInvalidParams},
		{"zero clients", p, SingleMaster, []int{1}, func(q Params) Params { q.ClientsPerReplica = 0; return q }, ErrInvalidParams},
		{"bad cw mode", p, MultiMaster, []int{1}, func(q Params) Params { q.CWMode = "guess"; return q }, ErrInvalidParams},
		{"bad profile", func() Profile { q := p.clone(); q.Pw = 0.5; return q }(), MultiMaster, []int{1}, nil, ErrInvalidProfile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := par
			if tt.par != nil {
				q = tt.par(q)
			}
			if _, err := Predict(tt.p, tt.d, tt.replicas, q); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	p := builtin(t, "tpcw-browsing")
	pred := predict(t, p, MultiMaster, []int{1, 16}, DefaultParams(p))
	devs, err := Compare(pred, []Observation{{Replicas: 1, ThroughputTPS: 22}, {Replicas: 16, ThroughputTPS: 347, ResponseTimeS: 0.3}})
	if err != nil {
		t.Fatal(err)
	}
	pt1, _ := pred.At(1)
	if want := (pt1.ThroughputTPS - 22) / 22; devs[0].ThroughputError != want || devs[0].ResponseTimeError != nil {
		t.Errorf("deviation at 1: %+v, want throughput error %g and no response error", devs[0], want)
	}
	if devs[1].ResponseTimeError == nil {
		t.Errorf("deviation at 16 lacks the response time error")
	}
	if _, err := Compare(pred, []Observation{{Replicas: 8, ThroughputTPS: 100}}); !errors.Is(err, ErrNoPoint) {
		t.Errorf("missing point: err = %v, want ErrNoPoint", err)
	}
	if _, err := Compare(pred, []Observation{{Replicas: 1}}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("zero throughput: err = %v, want ErrInvalidParams", err)
	}
}

// Odd but valid inputs: tiny and large populations, extreme mixes, no think
// time, a resource that reads never use, high standalone abort rates. Every
// prediction must succeed with finite numbers, Pr:Pw and Little's law, or
// (with aborts) stop with ErrAbortsDiverge.
func TestPredictRobustness(t *testing.T) {
	mixes := []float64{0.01, 0.3, 0.99}
	for _, pr := range mixes {
		for _, clients := range []int{1, 3, 25} {
			for _, think := range []float64{0, 1} {
				for _, a1 := range []float64{0, 0.05} {
					p := Profile{
						Version: ProfileVersion, Name: "odd", Pr: pr, Pw: 1 - pr, A1: a1,
						Resources: []Resource{
							{Name: "cpu", RC: 0.02, WC: 0.03, WS: 0.01},
							{Name: "log", RC: 0, WC: 0.005, WS: 0.002},
						},
						ThinkTime: think, ClientsPerReplica: clients,
					}
					for _, d := range []Design{MultiMaster, SingleMaster} {
						pred, err := Predict(p, d, []int{1, 2, 5, 16}, DefaultParams(p))
						if a1 > 0 && errors.Is(err, ErrAbortsDiverge) {
							// A 5% standalone abort rate on a mostly-update
							// mix can legitimately run away.
							continue
						}
						if err != nil {
							t.Fatalf("pr=%g C=%d Z=%g A1=%g %s: %v", pr, clients, think, a1, d, err)
						}
						for _, pt := range pred.Points {
							bad := math.IsNaN(pt.ThroughputTPS) || !(pt.ThroughputTPS > 0) || math.IsNaN(pt.ResponseTimeS) ||
								pt.ResponseTimeS < 0 || pt.AbortRate < 0 || pt.AbortRate >= 1
							if bad {
								t.Errorf("pr=%g C=%d Z=%g A1=%g %s N=%d: %+v", pr, clients, think, a1, d, pt.Replicas, pt)
								continue
							}
							if got := pt.ReadTPS / pt.WriteTPS; !near(got, pr/(1-pr), 1e-6) {
								t.Errorf("pr=%g C=%d Z=%g A1=%g %s N=%d (%s): read:write %g", pr, clients, think, a1, d, pt.Replicas, pt.Balance, got)
							}
							if want := float64(pt.Clients)/pt.ThroughputTPS - think; !near(pt.ResponseTimeS, want, 1e-9) {
								t.Errorf("pr=%g C=%d Z=%g %s N=%d: R %g, Little %g", pr, clients, think, d, pt.Replicas, pt.ResponseTimeS, want)
							}
						}
					}
				}
			}
		}
	}
}

// An abort rate far beyond the models' assumptions stops with a clear error
// instead of an infinite demand.
func TestAbortsDiverge(t *testing.T) {
	p := builtin(t, "tpcw-ordering")
	p.A1 = 0.5
	for _, d := range []Design{MultiMaster, SingleMaster} {
		if _, err := Predict(p, d, []int{16}, DefaultParams(p)); !errors.Is(err, ErrAbortsDiverge) {
			t.Errorf("%s: err = %v, want ErrAbortsDiverge", d, err)
		}
	}
	if err := checkAbort(0.2); err != nil {
		t.Errorf("checkAbort(0.2) = %v", err)
	}
}

// A mix of updates only: the single master runs everything, the slaves only
// apply writesets.
func TestSingleMasterUpdatesOnly(t *testing.T) {
	p := syntheticProfile(0, 0.01, 0.02, 0.005, 10)
	p.Pr, p.Pw = 0, 1
	pred := predict(t, p, SingleMaster, []int{1, 4, 8}, DefaultParams(p))
	for _, pt := range pred.Points[1:] {
		if pt.Balance != BalanceNoReads || pt.ReadTPS != 0 {
			t.Errorf("N=%d: balance %s, reads %g", pt.Replicas, pt.Balance, pt.ReadTPS)
		}
		s, _ := pt.Resource("slave.cpu")
		if !near(s.Utilization, pt.WriteTPS*0.005, 1e-12) {
			t.Errorf("N=%d: slave cpu %g, want Xw·ws = %g", pt.Replicas, s.Utilization, pt.WriteTPS*0.005)
		}
		if pt.ThroughputTPS > 1/0.02 {
			t.Errorf("N=%d: %g tps beyond the master's 1/wc", pt.Replicas, pt.ThroughputTPS)
		}
	}
}

// A measured L(1) is used as given.
func TestMeasuredL1(t *testing.T) {
	p := builtin(t, "tpcw-shopping")
	p.L1 = 0.1
	for _, d := range []Design{MultiMaster, SingleMaster} {
		pred := predict(t, p, d, []int{1, 8}, DefaultParams(p))
		if pred.L1 != 0.1 || pred.L1Derived {
			t.Errorf("%s: L1 %g derived %v", d, pred.L1, pred.L1Derived)
		}
	}
	mm := predict(t, p, MultiMaster, []int{8}, DefaultParams(p))
	derived := predict(t, builtin(t, "tpcw-shopping"), MultiMaster, []int{8}, DefaultParams(p))
	// A shorter L(1) than the derived one (about 167 ms) means more aborts.
	if !(mm.Points[0].AbortRate > derived.Points[0].AbortRate) {
		t.Errorf("A_8 with L1 = 100 ms: %g, derived L1: %g", mm.Points[0].AbortRate, derived.Points[0].AbortRate)
	}
}

func TestParseDesigns(t *testing.T) {
	tests := []struct {
		in   string
		want []Design
	}{
		{"mm", []Design{MultiMaster}},
		{"SM", []Design{SingleMaster}},
		{"both", []Design{MultiMaster, SingleMaster}},
		{"single-master,multi-master", []Design{MultiMaster, SingleMaster}},
	}
	for _, tt := range tests {
		got, err := ParseDesigns(tt.in)
		if err != nil || len(got) != len(tt.want) || got[0] != tt.want[0] {
			t.Errorf("ParseDesigns(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	if _, err := ParseDesigns("raidb-1"); !errors.Is(err, ErrUnknownDesign) {
		t.Errorf("err = %v, want ErrUnknownDesign", err)
	}
}

// A WAL sender's cost per replica (wsend) is charged on the master once
// per replica beyond the one the profile streamed to: nothing changes at
// N = 1 and 2; where the master bounds the system (updates only) its
// capacity at N replicas is 1/(wc + (N-2)·wsend).
func TestSingleMasterWALSenders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pr, pw float64
	}{{"updates only", 0, 1}, {"20 % updates", 0.8, 0.2}} {
		t.Run(tc.name, func(t *testing.T) {
			base := syntheticProfile(0, 0.004, 0.02, 0.005, 10)
			base.Pr, base.Pw = tc.pr, tc.pw
			with := base
			with.Resources = append([]Resource(nil), base.Resources...)
			with.Resources[0].WSend = 0.004
			n := []int{1, 2, 4, 8}
			p0 := predict(t, base, SingleMaster, n, DefaultParams(base))
			p1 := predict(t, with, SingleMaster, n, DefaultParams(with))
			for i, pt := range p1.Points {
				was := p0.Points[i].ThroughputTPS
				switch {
				case pt.Replicas <= 2 && !near(pt.ThroughputTPS, was, 1e-9):
					t.Errorf("N=%d: %g tps with wsend, %g without: the profiled replica is already in wc", pt.Replicas, pt.ThroughputTPS, was)
				case pt.Replicas > 2 && !(pt.ThroughputTPS < was):
					t.Errorf("N=%d: %g tps with wsend, not below %g without", pt.Replicas, pt.ThroughputTPS, was)
				}
				if tc.pr == 0 {
					capacity := 1 / (0.02 + float64(max(pt.Replicas-2, 0))*0.004)
					if pt.Replicas > 1 && pt.ThroughputTPS > capacity*(1+1e-9) {
						t.Errorf("N=%d: %g tps beyond the master's 1/(wc + (N-2)·wsend) = %g", pt.Replicas, pt.ThroughputTPS, capacity)
					}
				}
			}
		})
	}
	bad := syntheticProfile(0, 0.004, 0.02, 0.005, 10)
	bad.Resources[0].WSend = 0.03
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "wsend_s") {
		t.Errorf("wsend above wc: want an error naming wsend_s, got %v", err)
	}
}

// A node's background (BG, BGReplica) takes its share of the resource's
// capacity: each model predicts with it exactly what it predicts without
// it from demands divided by 1 - BG (the master's or a multi-master
// replica's) and 1 - BGReplica (a single-master slave's), whatever the
// load; and a background of 0.95 or more, or negative, is refused.
func TestBackground(t *testing.T) {
	for _, tc := range []struct {
		name   string
		design Design
		pr     float64
	}{{"single-master, 20 % updates", SingleMaster, 0.8}, {"single-master, updates only", SingleMaster, 0}, {"single-master, read-only", SingleMaster, 1}, {"multi-master, 20 % updates", MultiMaster, 0.8}} {
		t.Run(tc.name, func(t *testing.T) {
			bg, bgr := 0.2, 0.1
			with := syntheticProfile(tc.pr, 0.004, 0.02, 0.005, 10)
			with.Resources[0].BG, with.Resources[0].BGReplica = bg, bgr
			// With the same background on every node, the model must be
			// the one of demands / (1 - BG) without any.
			same := syntheticProfile(tc.pr, 0.004, 0.02, 0.005, 10)
			same.Resources[0].BG, same.Resources[0].BGReplica = bg, bg
			scaled := syntheticProfile(tc.pr, 0.004/(1-bg), 0.02/(1-bg), 0.005/(1-bg), 10)
			n := []int{1, 2, 4}
			p1 := predict(t, same, tc.design, n, DefaultParams(same))
			p2 := predict(t, scaled, tc.design, n, DefaultParams(scaled))
			for i, pt := range p1.Points {
				if !near(pt.ThroughputTPS, p2.Points[i].ThroughputTPS, 1e-9) {
					t.Errorf("N=%d: %g tps with BG %g, %g with demands / (1 - BG)", pt.Replicas, pt.ThroughputTPS, bg, p2.Points[i].ThroughputTPS)
				}
			}
			// A lighter replica background never predicts less.
			p3 := predict(t, with, tc.design, n, DefaultParams(with))
			for i, pt := range p3.Points {
				if pt.ThroughputTPS < p1.Points[i].ThroughputTPS*(1-1e-9) {
					t.Errorf("N=%d: %g tps with BGReplica %g, below %g with %g", pt.Replicas, pt.ThroughputTPS, bgr, p1.Points[i].ThroughputTPS, bg)
				}
			}
		})
	}
	for _, v := range []float64{-0.1, 0.95, 1.2} {
		p := syntheticProfile(0.8, 0.004, 0.02, 0.005, 10)
		p.Resources[0].BGReplica = v
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "bg_replica") {
			t.Errorf("bg_replica %g: want an error naming it, got %v", v, err)
		}
	}
}

// A host that delivers only Capacity of its nominal resource, less its
// background, is predicted as one with demands / (Capacity - BG) and no
// background, by every model and on every node (masters, multi-master
// nodes and single-master slaves alike: the hosts are of one kind); at
// saturation the throughput falls with Capacity. A capacity above 1,
// negative, or leaving under 0.05 beside the background is refused.
func TestCapacity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		design Design
		pr     float64
	}{{"single-master, 20 % updates", SingleMaster, 0.8}, {"single-master, read-only", SingleMaster, 1}, {"multi-master, 20 % updates", MultiMaster, 0.8}, {"multi-master, updates only", MultiMaster, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			const capacity, bg = 0.88, 0.03
			with := syntheticProfile(tc.pr, 0.004, 0.02, 0.005, 10)
			with.Resources[0].Capacity, with.Resources[0].BG, with.Resources[0].BGReplica = capacity, bg, bg
			if err := with.Validate(); err != nil {
				t.Fatal(err)
			}
			f := 1 / (capacity - bg)
			scaled := syntheticProfile(tc.pr, 0.004*f, 0.02*f, 0.005*f, 10)
			whole := syntheticProfile(tc.pr, 0.004, 0.02, 0.005, 10)
			n := []int{1, 2, 4}
			p1 := predict(t, with, tc.design, n, DefaultParams(with))
			p2 := predict(t, scaled, tc.design, n, DefaultParams(scaled))
			p3 := predict(t, whole, tc.design, n, DefaultParams(whole))
			for i, pt := range p1.Points {
				if !near(pt.ThroughputTPS, p2.Points[i].ThroughputTPS, 1e-9) {
					t.Errorf("N=%d: %g tps with capacity %g and bg %g, %g with demands / (capacity - bg)", pt.Replicas, pt.ThroughputTPS, capacity, bg, p2.Points[i].ThroughputTPS)
				}
				if pt.ThroughputTPS >= p3.Points[i].ThroughputTPS {
					t.Errorf("N=%d: %g tps on hosts delivering %g, not below %g on whole ones", pt.Replicas, pt.ThroughputTPS, capacity, p3.Points[i].ThroughputTPS)
				}
			}
		})
	}
	for _, tc := range []struct{ capacity, bg float64 }{{-0.1, 0}, {1.2, 0}, {0.3, 0.26}} {
		p := syntheticProfile(0.8, 0.004, 0.02, 0.005, 10)
		p.Resources[0].Capacity, p.Resources[0].BG = tc.capacity, tc.bg
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "capacity") {
			t.Errorf("capacity %g with bg %g: want an error naming capacity, got %v", tc.capacity, tc.bg, err)
		}
	}
}

// masterWCAt moves the master's update demand from wc (measured with the
// profile's share of reads) to the saturated demand (updates alone) as
// the master's read share falls; wsend still comes on top per replica.
func TestMasterWCAt(t *testing.T) {
	r := Resource{Name: "cpu", WC: 0.004, WCSat: 0.003, WSend: 0.0002}
	for _, tc := range []struct {
		name          string
		r             Resource
		n             int
		share, shareP float64
		want          float64
	}{
		{"at the profile's share", r, 2, 0.4, 0.4, 0.004},
		{"above it", r, 2, 0.7, 0.4, 0.004},
		{"no reads", r, 2, 0, 0.4, 0.003},
		{"half way", r, 2, 0.2, 0.4, 0.0035},
		{"no reads, four replicas", r, 4, 0, 0.4, 0.003 + 2*0.0002},
		{"not measured", Resource{WC: 0.004}, 3, 0, 0.4, 0.004},
		{"no share measured", r, 2, 0, 0, 0.004},
		// Updates alone no cheaper: nothing to move towards.
		{"saturated dearer", Resource{WC: 0.004, WCSat: 0.005}, 2, 0, 0.4, 0.004},
	} {
		if got := masterWCAt(tc.r, tc.n, tc.share, tc.shareP); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%s: masterWCAt = %g, want %g", tc.name, got, tc.want)
		}
	}
}

// With the saturated demand measured, a master that is the bottleneck
// (it serves no reads) runs its updates at that demand: more update
// throughput than with wc alone, and the same where the master keeps
// the profile's share of reads.
func TestSingleMasterSaturatedDemand(t *testing.T) {
	base := Profile{Version: ProfileVersion, Name: "p", Workload: "w", Mix: "m", Pr: 0.8, Pw: 0.2, ClientsPerReplica: 8,
		Resources: []Resource{{Name: "cpu", RC: 0.0005, WC: 0.004, WS: 0.001}}}
	sat := base
	sat.Resources = []Resource{{Name: "cpu", RC: 0.0005, WC: 0.004, WS: 0.001, WCSat: 0.003}}
	sat.MasterReadShare = 0.4
	par := Params{ClientsPerReplica: 8, CWMode: CWFixedPoint}
	p0, err := Predict(base, SingleMaster, []int{1, 4}, par)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := Predict(sat, SingleMaster, []int{1, 4}, par)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p0.At(4)
	b, _ := p1.At(4)
	if a.MasterReadTPS > 1e-6 || b.MasterReadTPS > 1e-6 {
		t.Fatalf("N = 4: the master serves reads (%g, %g): not the bottleneck case", a.MasterReadTPS, b.MasterReadTPS)
	}
	// Updates alone at 0.003 s: the master commits 1/0.003 a second.
	if math.Abs(b.WriteTPS-1/0.003) > 1 || math.Abs(a.WriteTPS-1/0.004) > 1 {
		t.Errorf("N = 4 update rates %g (wc) and %g (saturated), want %g and %g", a.WriteTPS, b.WriteTPS, 1/0.004, 1/0.003)
	}
	s0, _ := p0.At(1)
	s1, _ := p1.At(1)
	if s0.ThroughputTPS != s1.ThroughputTPS {
		t.Errorf("N = 1 moved: %g, %g (one node runs the mix at wc)", s0.ThroughputTPS, s1.ThroughputTPS)
	}
}

// TestApplyBatches: with a per-batch part of ws (Resource.WSBatch) the
// multi-master model applies the other nodes' writesets in batches that
// grow with N, charges less per writeset than the profile measured at its
// smaller batch, and so predicts more than the flat ws; without one,
// nothing changes. The batch size obeys its own equation at the solution.
func TestApplyBatches(t *testing.T) {
	flat := syntheticProfile(0.2, 0.004, 0.008, 0.004, 8)
	flat.ThinkTime = 0
	batched := flat
	batched.Resources = append([]Resource(nil), flat.Resources...)
	batched.ApplyBatch = 1.5
	batched.Resources[0].WSBatch = 0.7 * 0.004 * 1.5
	par := DefaultParams(flat)
	par.ApplyCost = ApplySplit
	pf := predict(t, flat, MultiMaster, span(1, 4), par)
	pb := predict(t, batched, MultiMaster, span(1, 4), par)
	prev := 0.0
	for i, n := range span(1, 4) {
		f, b := pf.Points[i], pb.Points[i]
		if f.ApplyBatch != 0 {
			t.Errorf("N=%d: flat ws gave a batch size %g", n, f.ApplyBatch)
		}
		if n == 1 {
			if b.ApplyBatch != 0 || !near(b.ThroughputTPS, f.ThroughputTPS, 1e-9) {
				t.Errorf("N=1 applies nothing: batch %g, X %g vs %g", b.ApplyBatch, b.ThroughputTPS, f.ThroughputTPS)
			}
			continue
		}
		if b.ApplyBatch <= prev || b.ApplyBatch < 1 {
			t.Errorf("N=%d: batch %g, want > %g (grows with N)", n, b.ApplyBatch, prev)
		}
		prev = b.ApplyBatch
		if n >= 3 && b.ThroughputTPS <= f.ThroughputTPS {
			t.Errorf("N=%d: X %g with batches of %.1f, not above %g with ws flat", n, b.ThroughputTPS, b.ApplyBatch, f.ThroughputTPS)
		}
		// B = (1 + λ·ws_batch·(1+U)) / (1 − λ·ws_1·(1+U)) at the solution.
		u := b.Resources[0].Utilization
		lambda := float64(n-1) * batched.Pw * b.ThroughputTPS / float64(n)
		r := batched.Resources[0]
		one := r.WS - r.WSBatch/batched.ApplyBatch
		want := (1 + lambda*r.WSBatch*(1+u)) / (1 - lambda*one*(1+u))
		if !near(b.ApplyBatch, want, 1e-3) {
			t.Errorf("N=%d: batch %g, its equation gives %g", n, b.ApplyBatch, want)
		}
	}
}

// TestApplyPerBatch: charged per batch (the default), ws at B writesets
// per batch is ws·B_p/B, the batch grows with N and obeys B = 1 +
// λ·ws·B_p·(1+U) at the solution, and the nodes' CPU per transaction
// grows with N less than with ws flat. An unknown cost is refused.
func TestApplyPerBatch(t *testing.T) {
	p := syntheticProfile(0.2, 0.004, 0.008, 0.004, 8)
	p.ThinkTime = 0
	p.ApplyBatch = 1.5
	par := DefaultParams(p)
	if par.ApplyCost != ApplyPerBatch {
		t.Fatalf("default apply cost %q, want %q", par.ApplyCost, ApplyPerBatch)
	}
	pb := predict(t, p, MultiMaster, span(1, 4), par)
	flat := p
	flat.ApplyBatch = 0
	pf := predict(t, flat, MultiMaster, span(1, 4), par)
	prev := 0.0
	r := p.Resources[0]
	for i, n := range span(2, 4) {
		b := pb.Points[i+1]
		if b.ApplyBatch <= prev || b.ApplyBatch < 1 {
			t.Errorf("N=%d: batch %g, want > %g", n, b.ApplyBatch, prev)
		}
		prev = b.ApplyBatch
		u := b.Resources[0].Utilization
		lambda := float64(n-1) * p.Pw * b.ThroughputTPS / float64(n)
		if want := 1 + lambda*r.WS*p.ApplyBatch*(1+u); !near(b.ApplyBatch, want, 1e-3) {
			t.Errorf("N=%d: batch %g, its equation gives %g", n, b.ApplyBatch, want)
		}
	}
	grow := func(pr Prediction, prof Profile) float64 {
		d2, _ := prof.SystemDemand("cpu", 2, pr.Points[1].AbortRate, pr.Points[1].ApplyBatch, par.ApplyCost)
		d4, _ := prof.SystemDemand("cpu", 4, pr.Points[3].AbortRate, pr.Points[3].ApplyBatch, par.ApplyCost)
		return d4 / d2
	}
	if gb, gf := grow(pb, p), grow(pf, flat); gb >= gf {
		t.Errorf("CPU per transaction from N = 2 to 4: x%.3f per batch, x%.3f flat; want less growth per batch", gb, gf)
	}
	par.ApplyCost = "per-writeset"
	if _, err := Predict(p, MultiMaster, span(1, 2), par); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("apply cost %q: %v, want ErrInvalidParams", par.ApplyCost, err)
	}
}

// TestWSFor: the split is WSAt; per batch, ws scales with B_p/B, and
// without the profile's batch size or at b <= 0 it is ws.
func TestWSFor(t *testing.T) {
	p := Profile{ApplyBatch: 2}
	r := Resource{WS: 0.004, WSBatch: 0.006}
	for _, tc := range []struct {
		name string
		p    Profile
		b    float64
		c    ApplyCost
		want float64
	}{
		{"split", p, 6, ApplySplit, 0.002},
		{"per batch at the profile's", p, 2, ApplyPerBatch, 0.004},
		{"per batch, larger", p, 8, ApplyPerBatch, 0.001},
		{"default is per batch", p, 4, "", 0.002},
		{"per batch, one", p, 0.5, ApplyPerBatch, 0.008},
		{"b <= 0", p, 0, ApplyPerBatch, 0.004},
		{"no batch size", Profile{}, 8, ApplyPerBatch, 0.004},
	} {
		if got := tc.p.WSFor(r, tc.b, tc.c); !near(got, tc.want, 1e-12) {
			t.Errorf("%s: WSFor = %g, want %g", tc.name, got, tc.want)
		}
	}
}

// TestWSAt: ws at the profile's batch size is WS; larger batches share
// the per-batch part; without it or at b <= 0, WS.
func TestWSAt(t *testing.T) {
	p := Profile{ApplyBatch: 2}
	r := Resource{WS: 0.004, WSBatch: 0.006} // 0.003 per batch at 2: 0.001 per writeset
	for _, tc := range []struct {
		name string
		r    Resource
		b    float64
		want float64
	}{
		{"profile's batch", r, 2, 0.004},
		{"one per batch", r, 1, 0.007},
		{"large batches", r, 6, 0.002},
		{"b <= 0 is the profile's", r, 0, 0.004},
		{"no per-batch part", Resource{WS: 0.004}, 6, 0.004},
	} {
		if got := p.WSAt(tc.r, tc.b); !near(got, tc.want, 1e-12) {
			t.Errorf("%s: WSAt = %g, want %g", tc.name, got, tc.want)
		}
	}
}

// TestWritesetsPerUpdate: only the share f of update transactions that
// commit a writeset is certified and applied elsewhere, so a profile with
// f and ws predicts what one with every update having a writeset and
// f·ws does (both models), f < 1 predicts more than f = 1, the certifier
// sees f of the updates, and the batch equation counts f of them.
func TestWritesetsPerUpdate(t *testing.T) {
	const f = 0.6
	for _, d := range []Design{MultiMaster, SingleMaster} {
		p := syntheticProfile(0.3, 0.004, 0.008, 0.006, 8)
		if d == SingleMaster {
			// Read-heavy, costly apply: the slaves' load sets X.
			p = syntheticProfile(0.8, 0.010, 0.002, 0.012, 8)
		}
		p.ThinkTime = 0 // saturated: the demands set X
		p.WritesetsPerUpdate = f
		scaled := p
		scaled.WritesetsPerUpdate = 0 // not measured: every update has one
		scaled.Resources = []Resource{p.Resources[0]}
		scaled.Resources[0].WS *= f
		all := p
		all.WritesetsPerUpdate = 1
		par := DefaultParams(p)
		par.CertifierDelay = 0 // scaled would certify every update
		got, want, every := predict(t, p, d, span(1, 4), par), predict(t, scaled, d, span(1, 4), par), predict(t, all, d, span(1, 4), par)
		above := 0
		for i, pt := range got.Points {
			if !near(pt.ThroughputTPS, want.Points[i].ThroughputTPS, 1e-9) {
				t.Errorf("%s N=%d: %g tps with f = %g, %g with ws x f", d, pt.Replicas, pt.ThroughputTPS, f, want.Points[i].ThroughputTPS)
			}
			if pt.ThroughputTPS < every.Points[i].ThroughputTPS*(1-1e-9) {
				t.Errorf("%s N=%d: %g tps with f = %g, below f = 1's %g", d, pt.Replicas, pt.ThroughputTPS, f, every.Points[i].ThroughputTPS)
			}
			if pt.ThroughputTPS > every.Points[i].ThroughputTPS*(1+1e-6) {
				above++
			}
			if d == MultiMaster {
				if w := pt.ThroughputTPS * p.Pw * f / (1 - pt.AbortRate); !near(pt.CertifierRPS, w, 1e-9) {
					t.Errorf("N=%d: certifier %g requests/s, want %g", pt.Replicas, pt.CertifierRPS, w)
				}
			}
		}
		if above == 0 {
			t.Errorf("%s: f = %g predicts no more than f = 1 at any N", d, f)
		}
	}
	// The batch equation: λ = (N − 1)·Pw·f·X_node.
	p := syntheticProfile(0.2, 0.004, 0.008, 0.004, 8)
	p.ThinkTime, p.ApplyBatch, p.WritesetsPerUpdate = 0, 1.5, f
	par := DefaultParams(p)
	pb := predict(t, p, MultiMaster, span(1, 3), par)
	for _, b := range pb.Points[1:] {
		n := b.Replicas
		lambda := float64(n-1) * p.Pw * f * b.ThroughputTPS / float64(n)
		if want := 1 + lambda*p.Resources[0].WS*p.ApplyBatch*(1+b.Resources[0].Utilization); !near(b.ApplyBatch, want, 1e-3) {
			t.Errorf("N=%d: batch %g, its equation with f gives %g", n, b.ApplyBatch, want)
		}
	}
	for _, bad := range []float64{-0.1, 1.01, math.NaN()} {
		q := syntheticProfile(0.2, 0.004, 0.008, 0.004, 8)
		q.WritesetsPerUpdate = bad
		if err := q.Validate(); !errors.Is(err, ErrInvalidProfile) {
			t.Errorf("writesets_per_update %g: %v, want ErrInvalidProfile", bad, err)
		}
	}
}

func TestRateAbort(t *testing.T) {
	tests := []struct {
		name                string
		c, lambda, w, wantA float64
	}{
		{"no exposure", 0.004, 0, 0.05, 0},
		{"no conflict rate", 0, 100, 0.05, 0},
		// c·λ·W = 0.004·100·0.05 = 0.02.
		{"small exposure", 0.004, 100, 0.05, 1 - math.Exp(-0.02)},
		{"twice the rate, twice the exponent", 0.004, 200, 0.05, 1 - math.Exp(-0.04)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RateAbort(tt.c, tt.lambda, tt.w); !near(got, tt.wantA, 1e-14) {
				t.Errorf("A = %.16g, want %.16g", got, tt.wantA)
			}
		})
	}
}

// With a conflict rate the abort rate follows the writesets the model's
// cluster commits: the fixed point satisfies A_N = 1 − exp(−c·λ(N)·CW(N)),
// it still grows with N, and where the replicas saturate (λ grows less
// than N times one replica's) it stays below seed 003's growth from the
// same A_1; AbortModelSeed003 gives seed 003's figures exactly.
func TestMultiMasterRateAbortGrowth(t *testing.T) {
	p := builtin(t, "tpcw-ordering")
	p.A1 = 0.0053
	one := predict(t, p, MultiMaster, []int{1}, DefaultParams(p)).Points[0]
	// c such that N = 1 reproduces A_1 at the model's own λ(1) and CW(1).
	lambda1 := one.ThroughputTPS * p.Pw * p.WSShare()
	withC := p
	withC.ConflictRate = -math.Log1p(-p.A1) / (lambda1 * one.ConflictWindowS)
	seed := predict(t, p, MultiMaster, span(1, 16), DefaultParams(p))
	rate := predict(t, withC, MultiMaster, span(1, 16), DefaultParams(withC))
	par := DefaultParams(withC)
	par.AbortModel = AbortModelSeed003
	forced := predict(t, withC, MultiMaster, span(1, 16), par)
	if got := rate.Points[0].AbortRate; !near(got, p.A1, 1e-6) {
		t.Errorf("A_1 = %g, want about the profile's %g", got, p.A1)
	}
	below := 0
	for i, pt := range rate.Points {
		lambda := pt.ThroughputTPS * p.Pw * p.WSShare()
		if want := RateAbort(withC.ConflictRate, lambda, pt.ConflictWindowS); !near(pt.AbortRate, want, 1e-9) {
			t.Errorf("N=%d: A_N = %g, the rate form on the point's λ and CW gives %g", pt.Replicas, pt.AbortRate, want)
		}
		if i > 0 && !(pt.AbortRate > rate.Points[i-1].AbortRate) {
			t.Errorf("N=%d: A_N = %g not above A_%d = %g", pt.Replicas, pt.AbortRate, rate.Points[i-1].Replicas, rate.Points[i-1].AbortRate)
		}
		// On the same window, the rate form's exposure is λ(N)/(N·λ(1))
		// of seed 003's.
		if pt.AbortRate < MultiMasterAbort(p.A1, pt.Replicas, pt.ConflictWindowS, one.ConflictWindowS) {
			below++
		}
		if f := forced.Points[i]; f.AbortRate != seed.Points[i].AbortRate || f.ThroughputTPS != seed.Points[i].ThroughputTPS {
			t.Errorf("N=%d: --abort-model seed003 gives A %g X %g, seed 003 without a conflict rate %g %g", f.Replicas, f.AbortRate, f.ThroughputTPS, seed.Points[i].AbortRate, seed.Points[i].ThroughputTPS)
		}
	}
	// Ordering saturates its replicas' disks: per-replica throughput falls
	// with N, so on the same window the rate form grows more slowly than
	// N·CW/L1.
	if below < len(rate.Points)-1 {
		t.Errorf("the rate form is below seed 003's growth at only %d of %d N", below, len(rate.Points))
	}
}

func TestParamsAbortModel(t *testing.T) {
	p := builtin(t, "tpcw-shopping")
	par := DefaultParams(p)
	par.AbortModel = "magic"
	if _, err := Predict(p, MultiMaster, []int{1, 2}, par); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("abort model magic: %v, want ErrInvalidParams", err)
	}
}

// TestConflictWindowOwnDemand: with a measured profile (the rate model)
// the multi-master conflict window charges an update attempt its own work
// measured with updates alone (Resource.WCSat), stretched by the centre's
// demand over the transactions' own part of it (the other nodes'
// writesets, applied by the node's apply loop, slow every residence);
// seed 003's model (AbortModelSeed003) keeps wc·(1 + Q). The demands, so
// the throughput at a given abort rate, are the mix's wc either way.
func TestConflictWindowOwnDemand(t *testing.T) {
	p := builtin(t, "tpcw-ordering")
	p.ConflictRate = 0.001
	p.Resources = append([]Resource(nil), p.Resources...)
	for i := range p.Resources {
		p.Resources[i].WCSat = 0.75 * p.Resources[i].WC
	}
	par := DefaultParams(p)
	seed := par
	seed.AbortModel = AbortModelSeed003
	const a = 0.02
	for _, n := range []int{1, 2, 4} {
		rate, err := newMultiMaster(p, par)
		if err != nil {
			t.Fatal(err)
		}
		old, err := newMultiMaster(p, seed)
		if err != nil {
			t.Fatal(err)
		}
		s, err := SolveMVA(rate.network(n, a, p.ApplyBatch), par.ClientsPerReplica)
		if err != nil {
			t.Fatal(err)
		}
		if so, _ := SolveMVA(old.network(n, a, p.ApplyBatch), par.ClientsPerReplica); so.Throughput != s.Throughput {
			t.Errorf("N=%d: X %g under seed 003's window, %g under the rate model's; want the same demands", n, so.Throughput, s.Throughput)
		}
		wantRate, wantSeed := par.CertifierDelay, par.CertifierDelay
		for i, r := range p.Resources {
			c := s.Centers[i]
			own := (p.Pr*r.RC + p.Pw/(1-a)*r.WC) * r.masterScale()
			wantRate += r.WCSat * r.masterScale() * (1 + c.ArrivalQueue) * math.Max(1, c.Demand/own)
			wantSeed += r.WC * r.masterScale() * (1 + c.ArrivalQueue)
			if n == 1 && !near(c.Demand, own, 1e-12) {
				t.Errorf("N=1: %s demand %g, own part %g; want equal (no other node's writesets)", r.Name, c.Demand, own)
			}
			if n > 1 && !(c.Demand > own) {
				t.Errorf("N=%d: %s demand %g not above the own part %g", n, r.Name, c.Demand, own)
			}
		}
		if got := rate.conflictWindow(a, s); !near(got, wantRate, 1e-12) {
			t.Errorf("N=%d: rate model's CW = %g, want %g", n, got, wantRate)
		}
		if got := old.conflictWindow(a, s); !near(got, wantSeed, 1e-12) {
			t.Errorf("N=%d: seed 003's CW = %g, want %g", n, got, wantSeed)
		}
	}
}
