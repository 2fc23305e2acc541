package main

import (
	"math"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/bench/scaleout"
	"github.com/tandemdb/tandem/planner"
	"github.com/tandemdb/tandem/planner/profiler"
)

func TestSummariseSpeed(t *testing.T) {
	rep := func(ls ...float64) *profiler.Report {
		r := &profiler.Report{}
		for _, l := range ls {
			r.Phases = append(r.Phases, &profiler.Phase{MemLatencyNS: l})
		}
		return r
	}
	sweep := &scaleout.Report{Points: []scaleout.Point{{MemLatencyNS: 130}, {MemLatencyNS: 150}, {MemLatencyNS: 0}, {MemLatencyNS: 140}}}
	// Interleaved rounds: every round's phases count, not the medians'
	// copies in Profiles.
	rounds := []profileRound{
		{Round: 1, Standalone: []*profiler.Report{rep(100, 0, 110)}, Replicated: []*profiler.Report{rep(120)}},
		{Round: 2, Standalone: []*profiler.Report{rep(90)}},
	}
	s := summariseSpeed(rounds, []*profiler.Report{rep(1000)}, nil, sweep)
	want := speedSummary{Profiles: speedRange{N: 4, Min: 90, Median: 105, Max: 120}, Windows: speedRange{N: 3, Min: 130, Median: 140, Max: 150}, Ratio: 1.333}
	if s == nil || *s != want {
		t.Fatalf("summary %+v, want %+v", s, want)
	}
	if !strings.Contains(s.warning(), "WARNING") {
		t.Errorf("windows at 1.33x the profiles' latency: no warning")
	}
	// One round: the profiles themselves.
	s = summariseSpeed(nil, []*profiler.Report{rep(100)}, []*profiler.Report{rep(104)}, &scaleout.Report{Points: []scaleout.Point{{MemLatencyNS: 108}}})
	if s == nil || s.Profiles.Median != 102 || s.Ratio != 1.059 || s.warning() != "" {
		t.Errorf("one round: %+v, warning %q; want profiles median 102, ratio 1.059, no warning", s, s.warning())
	}
	if s := summariseSpeed(nil, []*profiler.Report{rep(0)}, nil, nil); s != nil {
		t.Errorf("nothing measured: %+v, want nil", s)
	}
	if w := (&speedSummary{Ratio: 0.85}).warning(); w == "" {
		t.Error("windows 15 % faster than the profiles: no warning")
	}
}

// TestSplitApplyBatches: ws at two batch sizes splits along the line
// through them; larger batches that cost no less per writeset leave no
// part per batch, and a warning says so; batch sizes too close are not
// split.
func TestSplitApplyBatches(t *testing.T) {
	rep := func(b1, ws1, b2, ws2 float64) *profiler.Report {
		r := &profiler.Report{}
		r.Profile.Mix, r.Profile.Pw, r.Profile.ApplyBatch = "r80w20", 0.2, b1
		r.Profile.Resources = []planner.Resource{{Name: "cpu", WS: ws1}}
		r.Batched = &profiler.Report{}
		r.Batched.Profile.Pw, r.Batched.Profile.ApplyBatch = 0.2, b2
		r.Batched.Profile.Resources = []planner.Resource{{Name: "cpu", WS: ws2}}
		return r
	}
	for _, tc := range []struct {
		name      string
		r         *profiler.Report
		wantBatch float64
		warn      string
	}{
		{"split", rep(1.5, 0.004, 4.5, 0.002), 0.0045, ""},
		{"larger batches cost more", rep(1.5, 0.003, 4.5, 0.0035), 0, "no part per batch to split off"},
		{"too close", rep(1.5, 0.004, 2, 0.002), 0, "too close to split ws"},
	} {
		splitApplyBatches(tc.r)
		if got := tc.r.Profile.Resources[0].WSBatch; math.Abs(got-tc.wantBatch) > 1e-12 {
			t.Errorf("%s: ws_batch %g, want %g", tc.name, got, tc.wantBatch)
		}
		warned := strings.Join(tc.r.Warnings, "; ")
		if (tc.warn == "") != (warned == "") || !strings.Contains(warned, tc.warn) {
			t.Errorf("%s: warnings %q, want %q", tc.name, warned, tc.warn)
		}
	}
}

// The validation compares the model's unit, completed transactions, when
// the sweep measured them, and says which it compared; the certifier
// delay is the flag's when given, else the replicated profile's
// measurement at N >= 2 (none at N = 1), else seed 003's.
func TestValidationUnitsAndCertifier(t *testing.T) {
	if got := completedX(100, 120); got != 120 {
		t.Errorf("completedX(100, 120) = %g, want the completed 120", got)
	}
	if got := completedX(100, 0); got != 100 {
		t.Errorf("completedX(100, 0) = %g, want the counted 100 (an older sweep)", got)
	}
	now := &scaleout.Report{Rows: []scaleout.Row{{Mix: "r20w80", N: 1, X: 690, XDone: 802}}}
	old := &scaleout.Report{Rows: []scaleout.Row{{Mix: "r20w80", N: 1, X: 690}}}
	if in := unitInput(now, "r20w80"); in.Value != "completed transactions" {
		t.Errorf("sweep with completions: %+v", in)
	}
	if in := unitInput(old, "r20w80"); !strings.Contains(in.Value, "MQTh") || !strings.Contains(in.Source, "older build") {
		t.Errorf("older sweep: %+v", in)
	}
	measured := &profiler.Report{Profile: planner.Profile{CertifierDelay: 0.0098}}
	for _, tc := range []struct {
		name  string
		repl  *profiler.Report
		f     planValidateFlags
		delay float64
		want  string
	}{
		{"measured", measured, planValidateFlags{}, 0.0098, "N >= 2: 9.80 ms"},
		{"not measured", &profiler.Report{}, planValidateFlags{}, planner.DefaultCertifierDelay, "12ms"},
		{"flag", measured, planValidateFlags{certifierDelay: 3e6, certifierDelaySet: true}, 0.0098, "3ms"},
	} {
		if got := certifierDelayFor(tc.repl.Profile); math.Abs(got-tc.delay) > 1e-12 {
			t.Errorf("%s: delay %g, want %g", tc.name, got, tc.delay)
		}
		if in := certifierInput(tc.repl, &tc.f); !strings.Contains(in.Value, tc.want) || in.Measured != (tc.name == "measured") {
			t.Errorf("%s: input %+v, want value with %q", tc.name, in, tc.want)
		}
	}
}
