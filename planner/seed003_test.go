package planner

import (
	"math"
	"strings"
	"testing"
)

// paperTolerance is the error margin seed 003 claims between its model and
// its measurements ("an error margin below 15%", §6.2.1; "within 15%", §8).
const paperTolerance = 0.15

// The numbers seed 003 prints in its text (§6.2.1): measured TPC-W
// throughput on the multi-master system. Its predicted curves are only
// plotted, so the predictions are held to the paper's own 15% margin from
// these measurements.
func TestSeed003PublishedThroughput(t *testing.T) {
	tests := []struct {
		profile  string
		replicas int
		measured float64 // tps
	}{
		{"tpcw-browsing", 1, 22},
		{"tpcw-browsing", 16, 347},
		{"tpcw-ordering", 1, 45},
		{"tpcw-ordering", 16, 304},
	}
	for _, tt := range tests {
		p := builtin(t, tt.profile)
		pred := predict(t, p, MultiMaster, []int{tt.replicas}, DefaultParams(p))
		devs, err := Compare(pred, []Observation{{Replicas: tt.replicas, ThroughputTPS: tt.measured}})
		if err != nil {
			t.Fatal(err)
		}
		if e := devs[0].ThroughputError; math.Abs(e) > paperTolerance {
			t.Errorf("%s MM N=%d: predicted %.1f tps, paper measured %.0f: error %.1f%% beyond %.0f%%",
				tt.profile, tt.replicas, devs[0].PredictedTPS, tt.measured, 100*e, 100*paperTolerance)
		}
	}
}

// The qualitative results of §6.2: browsing scales almost linearly on
// multi-master (measured speedup 15.7 at 16), ordering far less (6.7);
// single-master ordering saturates on the master CPU at about 4 replicas
// while single-master browsing keeps scaling.
func TestSeed003QualitativeTPCW(t *testing.T) {
	all := span(1, 16)
	browsing, ordering := builtin(t, "tpcw-browsing"), builtin(t, "tpcw-ordering")
	mmB := predict(t, browsing, MultiMaster, all, DefaultParams(browsing))
	mmO := predict(t, ordering, MultiMaster, all, DefaultParams(ordering))
	smB := predict(t, browsing, SingleMaster, all, DefaultParams(browsing))
	smO := predict(t, ordering, SingleMaster, all, DefaultParams(ordering))
	at := func(p Prediction, n int) Point {
		pt, ok := p.At(n)
		if !ok {
			t.Fatalf("%s %s: no point at %d", p.Profile, p.Design, n)
		}
		return pt
	}

	if s := at(mmB, 16).Speedup; s < 14.5 {
		t.Errorf("MM browsing speedup at 16 = %.2f, want almost linear (paper: 15.7)", s)
	}
	if s := at(mmO, 16).Speedup; s > 8.5 || s < 5 {
		t.Errorf("MM ordering speedup at 16 = %.2f, want far below linear (paper: 6.7)", s)
	}
	if at(mmO, 16).Bottleneck != "replica.cpu" {
		t.Errorf("MM ordering bottleneck = %s, want replica.cpu (writeset apply on every CPU)", at(mmO, 16).Bottleneck)
	}

	// SM ordering: the master saturates at about 4 replicas.
	x4 := at(smO, 4).ThroughputTPS
	for n := 4; n <= 16; n++ {
		pt := at(smO, n)
		if pt.Bottleneck != "master.cpu" {
			t.Errorf("SM ordering N=%d: bottleneck %s, want master.cpu", n, pt.Bottleneck)
		}
		if u, _ := pt.Resource("master.cpu"); u.Utilization < 0.99 {
			t.Errorf("SM ordering N=%d: master CPU at %.2f, want saturated", n, u.Utilization)
		}
		if pt.ThroughputTPS > 1.02*x4 {
			t.Errorf("SM ordering N=%d: %.1f tps, more than at 4 replicas (%.1f): not saturated", n, pt.ThroughputTPS, x4)
		}
		if pt.Balance != BalanceMasterBottleneck {
			t.Errorf("SM ordering N=%d: balance %s", n, pt.Balance)
		}
	}
	if x3 := at(smO, 3).ThroughputTPS; x3 > 0.9*x4 {
		t.Errorf("SM ordering: %.1f tps at 3 replicas, %.1f at 4: want still growing up to 4", x3, x4)
	}
	if at(smO, 16).ThroughputTPS > 0.6*at(mmO, 16).ThroughputTPS {
		t.Errorf("SM ordering at 16 (%.1f) should be far below MM (%.1f)", at(smO, 16).ThroughputTPS, at(mmO, 16).ThroughputTPS)
	}
	// SM browsing keeps scaling like MM.
	if s := at(smB, 16).Speedup; s < 14.5 {
		t.Errorf("SM browsing speedup at 16 = %.2f, want almost linear", s)
	}
	if r := at(smB, 16).ThroughputTPS / at(mmB, 16).ThroughputTPS; r < 0.95 || r > 1.05 {
		t.Errorf("SM/MM browsing at 16 = %.3f, want about equal", r)
	}
	// Response times (figures 7, 9): browsing almost flat, ordering rising.
	if r := at(mmB, 16).ResponseTimeS / at(mmB, 1).ResponseTimeS; r > 1.3 {
		t.Errorf("MM browsing response grows %.2fx from 1 to 16 replicas, want almost flat", r)
	}
	if r := at(mmO, 16).ResponseTimeS / at(mmO, 1).ResponseTimeS; r < 3 {
		t.Errorf("MM ordering response grows only %.2fx, want a clear rise", r)
	}
	if at(smO, 8).ResponseTimeS < 3*at(smO, 4).ResponseTimeS {
		t.Errorf("SM ordering response at 8 = %.0f ms vs %.0f ms at 4: want a rapid rise after 4", 1000*at(smO, 8).ResponseTimeS, 1000*at(smO, 4).ResponseTimeS)
	}
	// §6.3.2: the certifier sees at most about 150 requests/s (TPC-W
	// ordering at 16 replicas).
	if c := at(mmO, 16).CertifierRPS; math.Abs(c-150)/150 > paperTolerance {
		t.Errorf("certifier load at 16 replicas = %.0f req/s, paper: about 150", c)
	}
}

// RUBiS (§6.2.2): browsing scales linearly on both designs; bidding scales
// modestly on multi-master (writeset disk cost close to the update's) and is
// bounded by the master on single-master.
func TestSeed003QualitativeRUBiS(t *testing.T) {
	all := span(1, 16)
	bidding := builtin(t, "rubis-bidding")
	mm := predict(t, bidding, MultiMaster, all, DefaultParams(bidding))
	sm := predict(t, bidding, SingleMaster, all, DefaultParams(bidding))
	mm16, _ := mm.At(16)
	mm6, _ := mm.At(6)
	if mm16.Speedup > 4.5 {
		t.Errorf("MM bidding speedup at 16 = %.2f, want modest", mm16.Speedup)
	}
	if mm16.ThroughputTPS > 1.25*mm6.ThroughputTPS {
		t.Errorf("MM bidding: %.1f tps at 16, %.1f at 6: want little gain past 6 replicas", mm16.ThroughputTPS, mm6.ThroughputTPS)
	}
	if mm16.Bottleneck != "replica.disk" {
		t.Errorf("MM bidding bottleneck = %s, want replica.disk", mm16.Bottleneck)
	}
	sm6, _ := sm.At(6)
	sm16, _ := sm.At(16)
	if !strings.HasPrefix(sm16.Bottleneck, "master.") || sm16.ThroughputTPS > 1.02*sm6.ThroughputTPS {
		t.Errorf("SM bidding at 16: %.1f tps (6: %.1f), bottleneck %s: want bounded by the master", sm16.ThroughputTPS, sm6.ThroughputTPS, sm16.Bottleneck)
	}
}

// §6.3.3, figure 14: TPC-W shopping on multi-master with artificially raised
// A_1 of 0.24%, 0.53% and 0.90% measured A_16 = 10%, 17% and 29%. The
// paper says its model tracks the trend and under-estimates, most at 0.90%.
// Without the paper's L(1) (unpublished), the built-in profile derives it,
// and the prediction stays below the measurement but within a factor of two.
func TestSeed003AbortTrend(t *testing.T) {
	p := builtin(t, "tpcw-shopping")
	prev := 0.0
	for _, tt := range []struct{ a1, measured16 float64 }{{0.0024, 0.10}, {0.0053, 0.17}, {0.0090, 0.29}} {
		p.A1 = tt.a1
		pred := predict(t, p, MultiMaster, []int{1, 16}, DefaultParams(p))
		a16 := pred.Points[1].AbortRate
		if a16 <= prev {
			t.Errorf("A_1 = %g: A_16 = %g not above the previous %g", tt.a1, a16, prev)
		}
		if a16 >= tt.measured16 || a16 < tt.measured16/2 {
			t.Errorf("A_1 = %g: predicted A_16 = %.1f%%, measured %.0f%%: want below, within a factor of two", tt.a1, 100*a16, 100*tt.measured16)
		}
		prev = a16
	}
}
