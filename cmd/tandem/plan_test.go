package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/planner"
	"github.com/tandemdb/tandem/planner/profiler"
)

func runPlan(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newPlanCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestPlanPredictTable(t *testing.T) {
	out, err := runPlan(t, "predict", "--profile", "tpcw-ordering", "--design", "both", "--replicas", "1..4,8")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+2*5 {
		t.Fatalf("want a header and 10 rows, got:\n%s", out)
	}
	for _, want := range []string{"PROFILE", "TPS", "RESP_MS", "ABORT_%", "BOTTLENECK", "UTILISATION"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("header lacks %s: %s", want, lines[0])
		}
	}
	if !strings.Contains(out, "master-bottleneck") || !strings.Contains(out, "replica.cpu=") {
		t.Errorf("table lacks single-master balance or utilisations:\n%s", out)
	}
}

func TestPlanPredictJSONAndFiles(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "plan.html")
	svg := filepath.Join(dir, "plan.svg")
	out, err := runPlan(t, "predict", "--profile", "tpcw-browsing,rubis-bidding", "--design", "mm",
		"--replicas", "1,2,16", "--json", "--html", html, "--svg", svg,
		"--clients-per-replica", "20", "--think", "500ms", "--lb-delay", "2ms", "--certifier-delay", "10ms")
	if err != nil {
		t.Fatal(err)
	}
	var set planner.PredictionSet
	if err := json.Unmarshal([]byte(out), &set); err != nil {
		t.Fatalf("--json output is not a PredictionSet: %v\n%s", err, out)
	}
	if len(set.Predictions) != 2 {
		t.Fatalf("%d predictions, want 2", len(set.Predictions))
	}
	want := planner.Params{ClientsPerReplica: 20, ThinkTime: 0.5, LBDelay: 0.002, CertifierDelay: 0.01, CWMode: planner.CWFixedPoint, ApplyCost: planner.ApplyPerBatch, AbortModel: planner.AbortModelRate}
	for _, p := range set.Predictions {
		if p.Design != planner.MultiMaster || len(p.Points) != 3 {
			t.Errorf("%s: design %s, %d points", p.Profile, p.Design, len(p.Points))
		}
		if !reflect.DeepEqual(p.Params, want) {
			t.Errorf("%s: params %+v, want %+v", p.Profile, p.Params, want)
		}
		if p.Points[2].Clients != 16*20 {
			t.Errorf("%s: %d clients at 16 replicas, want 320", p.Profile, p.Points[2].Clients)
		}
	}
	for _, f := range []string{html, svg} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("tpcw-browsing MM")) {
			t.Errorf("%s lacks the chart", f)
		}
	}
}

func TestPlanProfiles(t *testing.T) {
	out, err := runPlan(t, "profiles")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tpcw-browsing", "tpcw-shopping", "tpcw-ordering", "rubis-browsing", "rubis-bidding"} {
		if !strings.Contains(out, name) {
			t.Errorf("profiles lacks %s:\n%s", name, out)
		}
	}
	// --show prints a profile file that predict reads back.
	shown, err := runPlan(t, "profiles", "--show", "tpcw-shopping")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shopping.json")
	if err := os.WriteFile(path, []byte(strings.Replace(shown, `"clients_per_replica": 40`, `"clients_per_replica": 10`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runPlan(t, "predict", "--profile", path, "--replicas", "2", "--json", "--design", "sm")
	if err != nil {
		t.Fatal(err)
	}
	var set planner.PredictionSet
	if err := json.Unmarshal([]byte(out), &set); err != nil {
		t.Fatal(err)
	}
	if got := set.Predictions[0].Points[0].Clients; got != 20 {
		t.Errorf("profile file not used: %d clients at 2 replicas, want 20", got)
	}
}

func TestPlanErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"version":1,"name":"x","pr":0.5,"pw":0.4}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		naming string
		is     error
	}{
		{"unknown profile", []string{"predict", "--profile", "tpcw-nothing"}, "--profile", planner.ErrUnknownProfile},
		{"bad profile file", []string{"predict", "--profile", bad}, `"pw"`, planner.ErrInvalidProfile},
		{"bad design", []string{"predict", "--profile", "tpcw-ordering", "--design", "raid"}, "--design", planner.ErrUnknownDesign},
		{"reversed range", []string{"predict", "--profile", "tpcw-ordering", "--replicas", "4..1"}, "--replicas", errPlanFlag},
		{"zero replicas", []string{"predict", "--profile", "tpcw-ordering", "--replicas", "0"}, "--replicas", errPlanFlag},
		{"words", []string{"predict", "--profile", "tpcw-ordering", "--replicas", "a..b"}, "--replicas", errPlanFlag},
		{"too many clients", []string{"predict", "--profile", "tpcw-ordering", "--replicas", "256", "--clients-per-replica", "1000"}, "--replicas", planner.ErrInvalidParams},
		{"zero clients", []string{"predict", "--profile", "tpcw-ordering", "--clients-per-replica", "0"}, "--clients-per-replica", errPlanFlag},
		{"negative think", []string{"predict", "--profile", "tpcw-ordering", "--think", "-1s"}, "--think", errPlanFlag},
		{"negative certifier", []string{"predict", "--profile", "tpcw-ordering", "--certifier-delay", "-1ms"}, "--certifier-delay", errPlanFlag},
		{"bad cw mode", []string{"predict", "--profile", "tpcw-ordering", "--cw-mode", "magic"}, "--cw-mode", errPlanFlag},
		{"bad apply cost", []string{"predict", "--profile", "tpcw-ordering", "--apply-cost", "per-writeset"}, "--apply-cost", errPlanFlag},
		{"bad demands", []string{"validate", "--demands", "magic"}, "--demands", errPlanFlag},
		{"bad validate apply cost", []string{"validate", "--apply-cost", "magic"}, "--apply-cost", errPlanFlag},
		{"negative max-steal", []string{"validate", "--max-steal", "-1"}, "--max-steal", errPlanFlag},
		{"unknown show", []string{"profiles", "--show", "tpcw"}, "--show", planner.ErrUnknownProfile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runPlan(t, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.naming) {
				t.Errorf("error %q does not name %s", err, tt.naming)
			}
		})
	}
	if _, err := runPlan(t, "predict"); err == nil || !strings.Contains(err.Error(), "profile") {
		t.Errorf("missing --profile: err = %v", err)
	}
}

func TestParseReplicas(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"1..4", []int{1, 2, 3, 4}},
		{"8", []int{8}},
		{"1,2,4,8", []int{1, 2, 4, 8}},
		{"1..3, 8, 2", []int{1, 2, 3, 8}},
	}
	for _, tt := range tests {
		got, err := parseReplicas(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseReplicas(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", ",", "0..2", "1..999", "x", "2..1", "-3"} {
		if _, err := parseReplicas(in); !errors.Is(err, errPlanFlag) {
			t.Errorf("parseReplicas(%q): err = %v, want errPlanFlag", in, err)
		}
	}
}

// The validation's prediction takes N = 1 from the standalone profile and
// every larger N from the replicated path's, speedups against the
// standalone N = 1.
func TestMergePredictions(t *testing.T) {
	stand := planner.Prediction{Profile: "tm1-r80w20", Points: []planner.Point{
		{Replicas: 1, ThroughputTPS: 1000, Speedup: 1}, {Replicas: 2, ThroughputTPS: 2000, Speedup: 2}, {Replicas: 3, ThroughputTPS: 3000, Speedup: 3}}}
	repl := planner.Prediction{Profile: "tm1-r80w20-replicated", Points: []planner.Point{
		{Replicas: 1, ThroughputTPS: 500, Speedup: 1}, {Replicas: 2, ThroughputTPS: 900, Speedup: 1.8}, {Replicas: 3, ThroughputTPS: 1200, Speedup: 2.4}}}
	got := mergePredictions(stand, repl)
	want := []struct {
		n       int
		x, spdp float64
	}{{1, 1000, 1}, {2, 900, 0.9}, {3, 1200, 1.2}}
	if len(got.Points) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(got.Points), len(want), got.Points)
	}
	for i, w := range want {
		p := got.Points[i]
		if p.Replicas != w.n || p.ThroughputTPS != w.x || math.Abs(p.Speedup-w.spdp) > 1e-12 {
			t.Errorf("point %d: N %d X %g speedup %g, want N %d X %g speedup %g", i, p.Replicas, p.ThroughputTPS, p.Speedup, w.n, w.x, w.spdp)
		}
	}
	if !strings.Contains(got.Profile, "tm1-r80w20 (N = 1)") || !strings.Contains(got.Profile, "replicated (N >= 2)") {
		t.Errorf("profile %q does not say which profile gave which N", got.Profile)
	}
	if stand.Points[1].ThroughputTPS != 2000 || repl.Points[1].Speedup != 1.8 {
		t.Error("mergePredictions changed its inputs")
	}
}

func TestPhaseSteal(t *testing.T) {
	rep := &profiler.Report{Phases: []*profiler.Phase{
		{Name: "read-only", WallS: 10, HostStealS: 0.2},
		{Name: "update", WallS: 10, HostStealS: 3}, // 0.3 cores
		{Name: "mix", WallS: 0, HostStealS: 9},     // no wall time: ignored
	}}
	if worst, name := phaseSteal(rep); math.Abs(worst-0.3) > 1e-12 || name != "update" {
		t.Errorf("phaseSteal = %g, %q; want 0.3, update", worst, name)
	}
	if worst, name := phaseSteal(&profiler.Report{}); worst != 0 || name != "" {
		t.Errorf("no phases: %g, %q", worst, name)
	}
}

// savedDemands: a replay of a validation whose command did not name
// --demands uses what the run used (its "wc from" input), not this
// build's default, which changed from phases to mix on 2026-12-06.
func TestSavedDemands(t *testing.T) {
	in := func(v string) []planner.Validation {
		return []planner.Validation{{Inputs: []planner.Input{{Name: "pr / pw", Value: "0.8 / 0.2"}, {Name: "wc from", Value: v}}}}
	}
	for _, tc := range []struct {
		name string
		vs   []planner.Validation
		want string
	}{
		{"old default", in("phases"), "phases"},
		{"mix", in("mix"), "mix"},
		{"no input (older build)", []planner.Validation{{}}, "mix"},
		{"unknown value", in("magic"), "mix"},
		{"no validation", nil, "mix"},
	} {
		if got := savedDemands(tc.vs, "mix"); got != tc.want {
			t.Errorf("%s: savedDemands = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestReplayStored re-models a validation kept in docs/data as it is
// stored (gzip): the standalone point takes the host capacity its profile
// measured, so the model's saturated N = 1 runs its node at that share of
// the 0.25-core quota, not at all of it; a run saved before the capacity
// was measured gets it from its phases as well.
// TestSameUpdates: mixes share a conflict rate only when they run the
// same update transactions at the same relative weights.
func TestSameUpdates(t *testing.T) {
	tm1, err := bench.Lookup("tm1")
	if err != nil {
		t.Fatal(err)
	}
	tpcw, err := bench.Lookup("tpcw")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		w     bench.Workload
		mixes []string
		want  bool
	}{
		{tm1, []string{"r80w20", "r20w80"}, true}, // 2:14:2:2 and 8:56:8:8
		{tm1, []string{"r80w20", "read-only"}, false},
		{tm1, []string{"r80w20", "no-such-mix"}, false},
		{tpcw, []string{"shopping", "ordering"}, false},
		{nil, []string{"r80w20", "r20w80"}, false},
	} {
		if got := sameUpdates(tc.w, tc.mixes); got != tc.want {
			t.Errorf("%v: sameUpdates = %v, want %v", tc.mixes, got, tc.want)
		}
	}
}

// TestReplayConflictRate: a replay pools the two TM1 mixes' conflict
// rates by default (one c for both, printed with each mix's own) and
// keeps each mix's with --conflict-rate per-mix.
func TestReplayConflictRate(t *testing.T) {
	file := filepath.Join("..", "..", "docs", "data", "validate-mm-2026-12-07", "tm1-200-1137-witness-30s.json.gz")
	growth := func(args ...string) []string {
		out, err := runPlan(t, append([]string{"validate", "--replay", file, "--json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Validations []struct {
				Inputs []struct{ Name, Value string } `json:"inputs"`
			} `json:"validations"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		var vals []string
		for _, v := range d.Validations {
			for _, in := range v.Inputs {
				if in.Name == "abort growth" {
					vals = append(vals, in.Value)
				}
			}
		}
		return vals
	}
	pooled, own := growth(), growth("--conflict-rate", "per-mix")
	if len(pooled) != 2 || len(own) != 2 {
		t.Fatalf("abort growth inputs: pooled %q, per-mix %q", pooled, own)
	}
	re := regexp.MustCompile(`N >= 2 ([0-9.]+)`)
	c := func(v string) string {
		m := re.FindStringSubmatch(v)
		if m == nil {
			t.Fatalf("no N >= 2 rate in %q", v)
		}
		return m[1]
	}
	if c(pooled[0]) != c(pooled[1]) || !strings.Contains(pooled[0], "this mix's profile alone") {
		t.Errorf("pooled: the mixes' rates differ or say nothing of their own: %q", pooled)
	}
	if c(own[0]) == c(own[1]) || strings.Contains(own[0], "alone") {
		t.Errorf("per-mix: %q", own)
	}
}

func TestReplayStored(t *testing.T) {
	type point struct {
		Replicas  int     `json:"replicas"`
		Predicted float64 `json:"predicted_tps"`
		Measured  float64 `json:"measured_tps"`
		CPUPerTx  float64 `json:"model_cpu_per_tx_s"`
	}
	type doc struct {
		Validations []struct {
			Points []point `json:"points"`
			Inputs []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"inputs"`
		} `json:"validations"`
	}
	for _, tc := range []struct {
		file, capacity string
		standalone     float64
	}{
		{"tm1-200-1459-capacity-30s.json.gz", "standalone 0.886; replicated 0.942", 0.886},
		{"tm1-200-1137-witness-30s.json.gz", "standalone 0.883; replicated 0.918", 0.883},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out, err := runPlan(t, "validate", "--replay", filepath.Join("..", "..", "docs", "data", "validate-mm-2026-12-07", tc.file), "--json")
			if err != nil {
				t.Fatal(err)
			}
			var d doc
			if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Validations) != 2 {
				t.Fatalf("replay: %v, %d validations", err, len(d.Validations))
			}
			v := d.Validations[0]
			var capIn string
			for _, in := range v.Inputs {
				if in.Name == "host capacity" {
					capIn = in.Value
				}
			}
			if !strings.HasPrefix(capIn, tc.capacity) {
				t.Errorf("host capacity input %q, want it to start %q", capIn, tc.capacity)
			}
			if len(v.Points) != 4 || v.Points[0].Replicas != 1 || v.Points[0].Predicted <= 0 || v.Points[0].Measured <= 0 {
				t.Fatalf("points %+v", v.Points)
			}
			// The standalone profile has no background: the node's CPU
			// at saturation is the capacity (MVA's utilisation just below).
			if used := v.Points[0].Predicted * v.Points[0].CPUPerTx / 0.25; used > tc.standalone*1.001 || used < tc.standalone*0.97 {
				t.Errorf("N = 1: the model runs the node at %.4f of its quota, want just under the capacity %g", used, tc.standalone)
			}
		})
	}
}
