package planner

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// handPrediction is a prediction written by hand (not computed by a model),
// so the expected errors below can be worked out on paper.
func handPrediction() Prediction {
	return Prediction{Profile: "hand", Workload: "tm1", Mix: "r80w20", Design: SingleMaster, Points: []Point{
		{Replicas: 1, ThroughputTPS: 100, ResponseTimeS: 0.080, Bottleneck: "master.cpu"},
		{Replicas: 2, ThroughputTPS: 190, ResponseTimeS: 0.084, Bottleneck: "master.cpu"},
		{Replicas: 3, ThroughputTPS: 250, ResponseTimeS: 0.096, Bottleneck: "master.cpu"},
	}}
}

func TestValidateArithmetic(t *testing.T) {
	type want struct {
		tputErr, respErr       []float64 // NaN: no response time measured
		predSpeed, measSpeed   []float64
		within                 []bool
		maxAbs, meanAbs, maxRT float64
		worst                  int
		all                    bool
	}
	nan := math.NaN()
	cases := []struct {
		name string
		obs  []Observation
		tol  float64
		want want
	}{{
		// (100-110)/110 = -0.090909, (190-171)/171 = +0.111111, (250-200)/200 = +0.25;
		// response (0.080-0.072)/0.072 = +0.111111, (0.084-0.100)/0.100 = -0.16.
		name: "three points, one outside 15 %",
		obs: []Observation{
			{Replicas: 3, ThroughputTPS: 200}, // out of order on purpose
			{Replicas: 1, ThroughputTPS: 110, ResponseTimeS: 0.072},
			{Replicas: 2, ThroughputTPS: 171, ResponseTimeS: 0.100},
		},
		tol: 0.15,
		want: want{
			tputErr:   []float64{-0.0909091, 0.1111111, 0.25},
			respErr:   []float64{0.1111111, -0.16, nan},
			predSpeed: []float64{1, 1.9, 2.5},
			measSpeed: []float64{1, 1.5545455, 1.8181818},
			within:    []bool{true, true, false},
			maxAbs:    0.25, worst: 3,
			meanAbs: (0.0909091 + 0.1111111 + 0.25) / 3,
			maxRT:   0.16,
			all:     false,
		},
	}, {
		// (100-80)/80 = +0.25, (190-200)/200 = -0.05: no N = 1 measured
		// is fine for N = 1's prediction; at 30 % all are within.
		name: "wider tolerance, all within",
		obs:  []Observation{{Replicas: 1, ThroughputTPS: 80}, {Replicas: 2, ThroughputTPS: 200, ResponseTimeS: 0.084}},
		tol:  0.30,
		want: want{
			tputErr:   []float64{0.25, -0.05},
			respErr:   []float64{nan, 0},
			predSpeed: []float64{1, 1.9},
			measSpeed: []float64{1, 2.5},
			within:    []bool{true, true},
			maxAbs:    0.25, worst: 1, meanAbs: 0.15, maxRT: 0, all: true,
		},
	}, {
		// Without N = 1 measured there is no measured speedup; 250 vs 217.3913:
		// (250-217.3913)/217.3913 = 0.15 exactly at the boundary counts as within.
		name: "no measured N = 1, error on the boundary",
		obs:  []Observation{{Replicas: 3, ThroughputTPS: 250 / 1.15}},
		tol:  0.15,
		want: want{
			tputErr: []float64{0.15}, respErr: []float64{nan},
			predSpeed: []float64{2.5}, measSpeed: []float64{0},
			within: []bool{true}, maxAbs: 0.15, worst: 3, meanAbs: 0.15, all: true,
		},
	}}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Validate(handPrediction(), tc.obs, tc.tol)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Points) != len(tc.want.tputErr) {
				t.Fatalf("%d points, want %d", len(v.Points), len(tc.want.tputErr))
			}
			for i, p := range v.Points {
				if i > 0 && p.Replicas <= v.Points[i-1].Replicas {
					t.Errorf("points not in replica order: %d after %d", p.Replicas, v.Points[i-1].Replicas)
				}
				if !near(p.ThroughputError, tc.want.tputErr[i]) {
					t.Errorf("N=%d throughput error %.7f, want %.7f", p.Replicas, p.ThroughputError, tc.want.tputErr[i])
				}
				switch we := tc.want.respErr[i]; {
				case math.IsNaN(we) && p.ResponseTimeError != nil:
					t.Errorf("N=%d response error %v, want none (not measured)", p.Replicas, *p.ResponseTimeError)
				case !math.IsNaN(we) && (p.ResponseTimeError == nil || !near(*p.ResponseTimeError, we)):
					t.Errorf("N=%d response error %v, want %.7f", p.Replicas, p.ResponseTimeError, we)
				}
				if !near(p.PredictedSpeedup, tc.want.predSpeed[i]) || !near(p.MeasuredSpeedup, tc.want.measSpeed[i]) {
					t.Errorf("N=%d speedups %.7f / %.7f, want %.7f / %.7f", p.Replicas, p.PredictedSpeedup, p.MeasuredSpeedup, tc.want.predSpeed[i], tc.want.measSpeed[i])
				}
				if p.Within != tc.want.within[i] {
					t.Errorf("N=%d within %v, want %v (error %.4f, tolerance %.2f)", p.Replicas, p.Within, tc.want.within[i], p.ThroughputError, tc.tol)
				}
			}
			if !near(v.MaxAbsThroughputError, tc.want.maxAbs) || v.WorstReplicas != tc.want.worst {
				t.Errorf("max |error| %.7f at N=%d, want %.7f at N=%d", v.MaxAbsThroughputError, v.WorstReplicas, tc.want.maxAbs, tc.want.worst)
			}
			if !near(v.MeanAbsThroughputError, tc.want.meanAbs) {
				t.Errorf("mean |error| %.7f, want %.7f", v.MeanAbsThroughputError, tc.want.meanAbs)
			}
			if !near(v.MaxAbsResponseTimeError, tc.want.maxRT) {
				t.Errorf("max |response error| %.7f, want %.7f", v.MaxAbsResponseTimeError, tc.want.maxRT)
			}
			if v.AllWithin != tc.want.all {
				t.Errorf("all within %v, want %v", v.AllWithin, tc.want.all)
			}
		})
	}
}

func TestValidateErrors(t *testing.T) {
	cases := []struct {
		name string
		obs  []Observation
		tol  float64
		want error
	}{
		{"no measurements", nil, 0.15, ErrInvalidParams},
		{"zero tolerance", []Observation{{Replicas: 1, ThroughputTPS: 1}}, 0, ErrInvalidParams},
		{"replica count not predicted", []Observation{{Replicas: 4, ThroughputTPS: 1}}, 0.15, ErrNoPoint},
		{"duplicate replica count", []Observation{{Replicas: 2, ThroughputTPS: 1}, {Replicas: 2, ThroughputTPS: 2}}, 0.15, ErrInvalidParams},
		{"zero throughput", []Observation{{Replicas: 1, ThroughputTPS: 0}}, 0.15, ErrInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Validate(handPrediction(), tc.obs, tc.tol); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestValidationHTML(t *testing.T) {
	v, err := Validate(handPrediction(), []Observation{{Replicas: 1, ThroughputTPS: 110, ResponseTimeS: 0.072}, {Replicas: 2, ThroughputTPS: 171}}, 0.15)
	if err != nil {
		t.Fatal(err)
	}
	v.Inputs = []Input{{Name: "lb_delay_s", Value: "0", Source: "<not measured>"}}
	var b bytes.Buffer
	if err := WriteValidationHTML(&b, "t", "emulated", []Validation{v}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"r80w20 predicted", "r80w20 measured", "stroke-dasharray", "<td>-9.1</td>", "<td>&#43;11.1</td>", "assumed: &lt;not measured&gt;"} {
		if !strings.Contains(s, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

func TestSystemDemand(t *testing.T) {
	p := Profile{Pr: 0.8, Pw: 0.2, Resources: []Resource{{Name: "cpu", RC: 0.001, WC: 0.004, WS: 0.002}}}
	cases := []struct {
		n    int
		a    float64
		want float64
		ok   bool
	}{
		{1, 0, 0.8*0.001 + 0.2*0.004, true},                   // 0.0016
		{3, 0, 0.8*0.001 + 0.2*0.004 + 0.2*2*0.002, true},     // 0.0024
		{2, 0.2, 0.8*0.001 + 0.2/0.8*0.004 + 0.2*0.002, true}, // 0.0022
		{0, 0, 0, false},
		{2, 1, 0, false},
	}
	for _, tc := range cases {
		got, ok := p.SystemDemand("cpu", tc.n, tc.a, 0, ApplyPerBatch)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("N=%d a=%g: %g %v, want %g %v", tc.n, tc.a, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := p.SystemDemand("disk", 1, 0, 0, ApplyPerBatch); ok {
		t.Error("unknown resource reported ok")
	}
}
