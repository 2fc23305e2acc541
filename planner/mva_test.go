package planner

import (
	"errors"
	"math"
	"testing"
)

func near(a, b, rel float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

func oneCentre(d, z float64) Network {
	return Network{Think: z, Centers: []Center{{Name: "cpu", Kind: Queueing, Demand: d}}}
}

// Hand-computed MVA recursions and textbook closed forms.
func TestMVAClosedForms(t *testing.T) {
	tests := []struct {
		name string
		net  Network
		n    int
		x    float64 // expected throughput
		r    float64 // expected response time (think excluded); <0: skip
	}{
		// One client: no queueing, X = 1/(D+Z).
		{"N=1 X=1/(D+Z)", oneCentre(0.04, 1), 1, 1 / 1.04, 0.04},
		{"N=1 two centres and a delay", Network{Think: 0.5, Centers: []Center{
			{Name: "cpu", Kind: Queueing, Demand: 0.03},
			{Name: "disk", Kind: Queueing, Demand: 0.02},
			{Name: "lan", Kind: Delay, Demand: 0.001},
		}}, 1, 1 / 0.551, 0.051},
		// D = Z = 1 by hand: Q(1) = 0.5; R(2) = 1.5, X(2) = 2/2.5 = 0.8;
		// Q(2) = 1.2; R(3) = 2.2, X(3) = 3/3.2 = 0.9375.
		{"N=2 by hand", oneCentre(1, 1), 2, 0.8, 1.5},
		{"N=3 by hand", oneCentre(1, 1), 3, 0.9375, 2.2},
		// No think time, one centre: always busy, X = 1/D, R = N·D.
		{"Z=0 one centre N=7", oneCentre(0.25, 0), 7, 4, 1.75},
		// K balanced centres, no think time: X(N) = N / ((N+K-1)·D).
		{"balanced K=3 N=5", Network{Centers: []Center{
			{Name: "a", Kind: Queueing, Demand: 0.1},
			{Name: "b", Kind: Queueing, Demand: 0.1},
			{Name: "c", Kind: Queueing, Demand: 0.1},
		}}, 5, 5 / (7 * 0.1), 0.7},
		// Delay centres only: X = N/(Z + ΣD) whatever N.
		{"delay only N=40", Network{Think: 1, Centers: []Center{{Name: "lb", Kind: Delay, Demand: 0.012}}}, 40, 40 / 1.012, 0.012},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := SolveMVA(tt.net, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !near(s.Throughput, tt.x, 1e-12) {
				t.Errorf("X = %.15g, want %.15g", s.Throughput, tt.x)
			}
			if tt.r >= 0 && !near(s.ResponseTime, tt.r, 1e-12) {
				t.Errorf("R = %.15g, want %.15g", s.ResponseTime, tt.r)
			}
			// Little's law over the whole network: N = X·(Z + R).
			if got := s.Throughput * (tt.net.Think + s.ResponseTime); !near(got, float64(tt.n), 1e-12) {
				t.Errorf("X·(Z+R) = %g, want N = %d", got, tt.n)
			}
		})
	}
}

// The machine-repairman model (one queueing centre, think time Z, N
// clients) has the closed form X = (1 - p0)/D with
// p0 = 1 / Σ_{k=0..N} N!/(N-k)! · (D/Z)^k (Kleinrock 1975, M/M/1//N).
func TestMVAMachineRepairman(t *testing.T) {
	for _, tt := range []struct{ d, z float64 }{{0.04162, 1}, {0.5, 2}, {0.01, 0.05}} {
		curve, err := SolveMVACurve(oneCentre(tt.d, tt.z), 60)
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 60; n++ {
			sum, term := 1.0, 1.0
			for k := 1; k <= n; k++ {
				term *= float64(n-k+1) * tt.d / tt.z
				sum += term
			}
			want := (1 - 1/sum) / tt.d
			if !near(curve[n].Throughput, want, 1e-9) {
				t.Errorf("D=%g Z=%g N=%d: X = %.12g, closed form %.12g", tt.d, tt.z, n, curve[n].Throughput, want)
			}
		}
	}
}

// Asymptotic bounds (Lazowska et al. 1984 §5.2): N/(N·D + Z) <= X(N) <=
// min(1/Dmax, N/(D+Z)), for every N.
func TestMVAAsymptoticBounds(t *testing.T) {
	nets := []Network{
		oneCentre(0.04, 1),
		{Think: 1, Centers: []Center{
			{Name: "cpu", Kind: Queueing, Demand: 0.0416},
			{Name: "disk", Kind: Queueing, Demand: 0.0146},
			{Name: "lb", Kind: Delay, Demand: 0.001},
			{Name: "cert", Kind: Delay, Demand: 0.0006},
		}},
		{Think: 0.2, Centers: []Center{
			{Name: "a", Kind: Queueing, Demand: 0.05},
			{Name: "b", Kind: Queueing, Demand: 0.05},
		}},
	}
	for i, net := range nets {
		curve, err := SolveMVACurve(net, 300)
		if err != nil {
			t.Fatal(err)
		}
		d, dmax, delay := 0.0, 0.0, 0.0
		for _, c := range net.Centers {
			d += c.Demand
			if c.Kind == Queueing {
				dmax = math.Max(dmax, c.Demand)
			} else {
				delay += c.Demand
			}
		}
		for n := 1; n <= 300; n++ {
			x := curve[n].Throughput
			if x > 1/dmax*(1+1e-12) {
				t.Errorf("net %d N=%d: X = %g above 1/Dmax = %g", i, n, x, 1/dmax)
			}
			if hi := float64(n) / (d + net.Think); x > hi*(1+1e-12) {
				t.Errorf("net %d N=%d: X = %g above N/(D+Z) = %g", i, n, x, hi)
			}
			if lo := float64(n) / (float64(n)*(d-delay) + delay + net.Think); x < lo*(1-1e-12) {
				t.Errorf("net %d N=%d: X = %g below N/(N·D+Z) = %g", i, n, x, lo)
			}
			if n > 1 && x < curve[n-1].Throughput*(1-1e-12) {
				t.Errorf("net %d N=%d: throughput fell from %g to %g", i, n, curve[n-1].Throughput, x)
			}
		}
	}
}

func TestMVAErrors(t *testing.T) {
	tests := []struct {
		name string
		net  Network
		n    int
	}{
		{"negative demand", oneCentre(-1, 1), 3},
		{"NaN demand", oneCentre(math.NaN(), 1), 3},
		{"negative think", oneCentre(1, -1), 3},
		{"negative population", oneCentre(1, 1), -1},
		{"zero cycle", Network{Centers: []Center{{Name: "x", Kind: Delay}}}, 2},
		{"unknown kind", Network{Centers: []Center{{Name: "x", Demand: 1}}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := SolveMVA(tt.net, tt.n); !errors.Is(err, ErrInvalidNetwork) {
				t.Fatalf("err = %v, want ErrInvalidNetwork", err)
			}
		})
	}
}

func TestMVA2(t *testing.T) {
	// By hand, one queueing centre, no think, D0 = 1, D1 = 2, population
	// (1, 1): Q(1,0) = 1, Q(0,1) = 1; R0 = 1·(1+1) = 2, R1 = 2·(1+1) = 4;
	// X0 = 1/2, X1 = 1/4; U = 1/2 + 2/4 = 1.
	net := ClassNetwork{Centers: []ClassCenter{{Name: "cpu", Kind: Queueing, Demand: [2]float64{1, 2}}}}
	s, err := SolveMVA2(net, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.Throughput[0], 0.5, 1e-15) || !near(s.Throughput[1], 0.25, 1e-15) {
		t.Errorf("X = %v, want [0.5 0.25]", s.Throughput)
	}
	if c := s.Centers[0]; !near(c.Utilization, 1, 1e-15) || !near(c.Residence[0], 2, 1e-15) || !near(c.Residence[1], 4, 1e-15) {
		t.Errorf("centre = %+v", c)
	}

	// Two identical classes behave as one class of the summed population,
	// and a class with no customers leaves the other's solution alone.
	mixed := ClassNetwork{Think: [2]float64{1, 1}, Centers: []ClassCenter{
		{Name: "cpu", Kind: Queueing, Demand: [2]float64{0.04, 0.04}},
		{Name: "disk", Kind: Queueing, Demand: [2]float64{0.015, 0.015}},
		{Name: "lb", Kind: Delay, Demand: [2]float64{0.001, 0.001}},
	}}
	single := Network{Think: 1, Centers: []Center{
		{Name: "cpu", Kind: Queueing, Demand: 0.04},
		{Name: "disk", Kind: Queueing, Demand: 0.015},
		{Name: "lb", Kind: Delay, Demand: 0.001},
	}}
	for _, pop := range [][2]int{{7, 0}, {0, 9}, {12, 18}, {30, 1}} {
		s2, err := SolveMVA2(mixed, pop[0], pop[1])
		if err != nil {
			t.Fatal(err)
		}
		s1, err := SolveMVA(single, pop[0]+pop[1])
		if err != nil {
			t.Fatal(err)
		}
		if got := s2.Throughput[0] + s2.Throughput[1]; !near(got, s1.Throughput, 1e-12) {
			t.Errorf("pop %v: X0+X1 = %.12g, single class %.12g", pop, got, s1.Throughput)
		}
		for cls := 0; cls < 2; cls++ {
			if pop[cls] > 0 && !near(s2.ResponseTime[cls], s1.ResponseTime, 1e-12) {
				t.Errorf("pop %v class %d: R = %g, single class %g", pop, cls, s2.ResponseTime[cls], s1.ResponseTime)
			}
		}
	}

	if _, err := SolveMVA2(net, -1, 0); !errors.Is(err, ErrInvalidNetwork) {
		t.Errorf("negative population: err = %v, want ErrInvalidNetwork", err)
	}
	if _, err := SolveMVA2(ClassNetwork{Centers: []ClassCenter{{Name: "x", Kind: Queueing, Demand: [2]float64{1, -1}}}}, 1, 1); !errors.Is(err, ErrInvalidNetwork) {
		t.Errorf("negative demand: err = %v, want ErrInvalidNetwork", err)
	}
}

// Interpolated populations agree with exact solutions at whole numbers and
// lie between them elsewhere.
func TestInterpolate(t *testing.T) {
	curve, err := SolveMVACurve(oneCentre(0.04, 1), 40)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= 40; n++ {
		if got := interpolate(curve, float64(n)); got.Throughput != curve[n].Throughput {
			t.Fatalf("N=%d: interpolated X %g != exact %g", n, got.Throughput, curve[n].Throughput)
		}
	}
	mid := interpolate(curve, 25.5)
	if !(mid.Throughput > curve[25].Throughput && mid.Throughput < curve[26].Throughput) {
		t.Errorf("X(25.5) = %g not between %g and %g", mid.Throughput, curve[25].Throughput, curve[26].Throughput)
	}
}
