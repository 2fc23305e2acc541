package planner

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// The built-in profiles hold seed 003's tables 2-5 exactly (ms in the
// paper, seconds here).
func TestBuiltinProfilesMatchPaperTables(t *testing.T) {
	type row struct{ rc, wc, ws float64 } // ms, as printed
	tests := []struct {
		name      string
		pr, pw    float64
		clients   int
		cpu, disk row
	}{
		{"tpcw-browsing", 0.95, 0.05, 30, row{41.62, 17.47, 3.48}, row{14.56, 8.74, 2.62}},
		{"tpcw-shopping", 0.80, 0.20, 40, row{41.43, 12.51, 3.18}, row{15.11, 6.05, 1.81}},
		{"tpcw-ordering", 0.50, 0.50, 50, row{22.46, 13.48, 4.04}, row{12.62, 8.34, 1.67}},
		{"rubis-browsing", 1.00, 0.00, 50, row{25.29, 0, 0}, row{11.36, 0, 0}},
		{"rubis-bidding", 0.80, 0.20, 50, row{25.29, 41.51, 9.83}, row{11.36, 48.61, 35.28}},
	}
	if got := BuiltinProfileNames(); len(got) != len(tests) {
		t.Errorf("built-in profiles %v, want %d", got, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := builtin(t, tt.name)
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			if p.Pr != tt.pr || p.Pw != tt.pw || p.ClientsPerReplica != tt.clients || p.ThinkTime != 1.0 {
				t.Errorf("Pr %g Pw %g C %d Z %g", p.Pr, p.Pw, p.ClientsPerReplica, p.ThinkTime)
			}
			for _, want := range []struct {
				res string
				r   row
			}{{"cpu", tt.cpu}, {"disk", tt.disk}} {
				var got *Resource
				for i := range p.Resources {
					if p.Resources[i].Name == want.res {
						got = &p.Resources[i]
					}
				}
				if got == nil {
					t.Fatalf("no %s resource", want.res)
				}
				if !near(1000*got.RC, want.r.rc, 1e-12) || !near(1000*got.WC, want.r.wc, 1e-12) || !near(1000*got.WS, want.r.ws, 1e-12) {
					t.Errorf("%s = %+v, want %+v ms", want.res, *got, want.r)
				}
			}
			for _, field := range []string{"a1", "l1_s", "resources", "pr"} {
				if p.Trust[field] == "" {
					t.Errorf("no trust note for %s", field)
				}
			}
		})
	}
	if _, err := BuiltinProfile("tpcw-nonsense"); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("err = %v, want ErrUnknownProfile", err)
	}
}

func TestBuiltinIsACopy(t *testing.T) {
	p := builtin(t, "tpcw-ordering")
	p.Resources[0].RC = 99
	p.Trust["a1"] = "changed"
	q := builtin(t, "tpcw-ordering")
	if q.Resources[0].RC == 99 || q.Trust["a1"] == "changed" {
		t.Fatal("changing a returned profile changed the built-in")
	}
}

func TestProfileRoundTrip(t *testing.T) {
	for _, name := range BuiltinProfileNames() {
		p := builtin(t, name)
		p.SingleMasterAborts = []MeasuredAbort{{Replicas: 4, Abort: 0.001}}
		var buf bytes.Buffer
		if err := EncodeProfile(&buf, p); err != nil {
			t.Fatal(err)
		}
		q, err := DecodeProfile(&buf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Errorf("%s: round trip changed the profile:\n%+v\n%+v", name, p, q)
		}
	}
}

func TestDecodeProfileErrors(t *testing.T) {
	valid := `{"version":1,"name":"x","workload":"w","mix":"m","pr":0.8,"pw":0.2,"a1":0.001,"l1_s":0.05,
"resources":[{"name":"cpu","rc_s":0.04,"wc_s":0.01,"ws_s":0.003}],"think_time_s":1,"clients_per_replica":10,"measured":{}}`
	if _, err := DecodeProfile(strings.NewReader(valid)); err != nil {
		t.Fatalf("valid profile: %v", err)
	}
	tests := []struct {
		name, from, to, field string
	}{
		{"misspelt field", `"think_time_s"`, `"think_s"`, "think_s"},
		{"mix does not add up", `"pw":0.2`, `"pw":0.3`, `"pw"`},
		{"negative demand", `"rc_s":0.04`, `"rc_s":-0.04`, `resources[0].rc_s`},
		{"abort of one", `"a1":0.001`, `"a1":1`, `"a1"`},
		{"negative L1", `"l1_s":0.05`, `"l1_s":-1`, `"l1_s"`},
		{"no clients", `"clients_per_replica":10`, `"clients_per_replica":0`, `clients_per_replica`},
		{"wrong type", `"clients_per_replica":10`, `"clients_per_replica":"ten"`, `clients_per_replica`},
		{"wrong version", `"version":1`, `"version":7`, `"version"`},
		{"no resources", `[{"name":"cpu","rc_s":0.04,"wc_s":0.01,"ws_s":0.003}]`, `[]`, `"resources"`},
		{"dotted resource", `"name":"cpu"`, `"name":"cpu.0"`, `resources[0].name`},
		{"trailing data", `"measured":{}}`, `"measured":{}}{}`, "trailing"},
		{"per-batch part without the batch size", `"ws_s":0.003}`, `"ws_s":0.003,"ws_batch_s":0.002}`, `resources[0].ws_batch_s`},
		{"per-batch part above ws", `"ws_s":0.003}],`, `"ws_s":0.003,"ws_batch_s":0.007}],"apply_batch_writesets":2,`, `resources[0].ws_batch_s`},
		{"batch below one writeset", `"think_time_s":1`, `"apply_batch_writesets":0.5,"think_time_s":1`, `apply_batch_writesets`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.Replace(valid, tt.from, tt.to, 1)
			if in == valid {
				t.Fatalf("replacement %q not found", tt.from)
			}
			_, err := DecodeProfile(strings.NewReader(in))
			if !errors.Is(err, ErrInvalidProfile) {
				t.Fatalf("err = %v, want ErrInvalidProfile", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %s", err, tt.field)
			}
		})
	}
}

func samplePredictions(t *testing.T) []Prediction {
	t.Helper()
	var preds []Prediction
	for _, name := range []string{"tpcw-browsing", "tpcw-ordering"} {
		p := builtin(t, name)
		for _, d := range []Design{MultiMaster, SingleMaster} {
			preds = append(preds, predict(t, p, d, []int{1, 2, 4, 8}, DefaultParams(p)))
		}
	}
	return preds
}

func TestReports(t *testing.T) {
	preds := samplePredictions(t)

	var js bytes.Buffer
	if err := WriteJSON(&js, preds); err != nil {
		t.Fatal(err)
	}
	back, err := DecodePredictions(&js)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, preds) {
		t.Errorf("JSON round trip changed the predictions")
	}

	var svg bytes.Buffer
	if err := WriteSVG(&svg, preds); err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg.Bytes())
	if got := strings.Count(svg.String(), "<polyline"); got != 2*len(preds) {
		t.Errorf("SVG has %d lines, want %d (two charts x %d predictions)", got, 2*len(preds), len(preds))
	}
	if got := strings.Count(svg.String(), `stroke-dasharray="7 4" points=`); got != 4 {
		t.Errorf("SVG has %d dashed (single-master) lines, want 4", got)
	}

	var page bytes.Buffer
	if err := WriteHTML(&page, "plan <test>", preds); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	for _, want := range []string{"<!DOCTYPE html>", "plan &lt;test&gt;", "<svg", "tpcw-ordering SM", "master-bottleneck"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// Works offline: nothing to fetch (the SVG namespace is a name, not a
	// resource).
	stripped := strings.ReplaceAll(h, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"http://", "https://", "src=", "<link", "@import"} {
		if strings.Contains(stripped, bad) {
			t.Errorf("HTML refers to an external asset: %q", bad)
		}
	}

	var table bytes.Buffer
	if err := WriteTable(&table, preds); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 1+4*len(preds) || !strings.HasPrefix(lines[0], "PROFILE") {
		t.Errorf("table has %d lines:\n%s", len(lines), table.String())
	}
}

func checkXML(t *testing.T, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tt := range []struct{ v, top, step float64 }{
		{357.4, 400, 100}, {22, 25, 5}, {1, 1, 0.2}, {0, 1, 0.2}, {4858, 5000, 1000}, {9.3, 10, 2},
	} {
		top, step := niceCeil(tt.v)
		if !near(top, tt.top, 1e-12) || !near(step, tt.step, 1e-12) {
			t.Errorf("niceCeil(%g) = %g, %g; want %g, %g", tt.v, top, step, tt.top, tt.step)
		}
	}
}

// MedianProfile takes each demand's median over the profiles (the mean of
// the middle two for an even count), keeps wsend within wc, and refuses
// profiles of different resources.
func TestMedianProfile(t *testing.T) {
	mk := func(name string, rc, wc, ws, wsend, a1 float64) Profile {
		return Profile{Name: name, Pr: 0.8, Pw: 0.2, A1: a1, L1: 10 * a1, Resources: []Resource{
			{Name: "cpu", RC: rc, WC: wc, WS: ws, WSend: wsend}, {Name: "disk", RC: 0, WC: wc / 10}}}
	}
	a, b, c := mk("a", 0.1, 1.0, 0.5, 0.1, 0.01), mk("b", 0.3, 0.6, 0.7, 0.05, 0.03), mk("c", 0.2, 0.8, 0.2, 0.9, 0.02)
	// The saturated update demand and the master's read share: medians too.
	a.Resources[0].WCSat, b.Resources[0].WCSat, c.Resources[0].WCSat = 0.9, 0.5, 0.7
	a.MasterReadShare, b.MasterReadShare, c.MasterReadShare = 0.4, 0.2, 0.3
	for _, tc := range []struct {
		name             string
		ps               []Profile
		rc, wc, ws, send float64
		a1               float64
		wcSat, share     float64
	}{
		{"one", []Profile{a}, 0.1, 1.0, 0.5, 0.1, 0.01, 0.9, 0.4},
		// wsend's median 0.1 stays; each column sorted on its own.
		{"three", []Profile{a, b, c}, 0.2, 0.8, 0.5, 0.1, 0.02, 0.7, 0.3},
		// Two: means of the pair; wsend (0.5) capped at wc (0.7).
		{"two", []Profile{b, c}, 0.25, 0.7, 0.45, 0.475, 0.025, 0.6, 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MedianProfile(tc.ps)
			if err != nil {
				t.Fatal(err)
			}
			r := got.Resources[0]
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"rc", r.RC, tc.rc}, {"wc", r.WC, tc.wc}, {"ws", r.WS, tc.ws}, {"wsend", r.WSend, tc.send}, {"a1", got.A1, tc.a1}, {"l1", got.L1, 10 * tc.a1}, {"disk wc", got.Resources[1].WC, tc.wc / 10},
				{"wc_saturated", r.WCSat, tc.wcSat}, {"master_read_share", got.MasterReadShare, tc.share}} {
				if math.Abs(f.got-f.want) > 1e-12 {
					t.Errorf("%s = %g, want %g", f.name, f.got, f.want)
				}
			}
			if got.Name != tc.ps[0].Name || got.Pr != 0.8 {
				t.Errorf("name %q pr %g: want the first profile's", got.Name, got.Pr)
			}
		})
	}
	if a.Resources[0].RC != 0.1 {
		t.Errorf("an input profile changed: %+v", a.Resources[0])
	}
	// A capacity is the median of the profiles that measured one: a
	// profile without (0) does not pull it towards nothing.
	ca, cb, cc := a, b, c
	for i, p := range []*Profile{&ca, &cb, &cc} {
		p.Resources = append([]Resource(nil), p.Resources...)
		p.Resources[0].Capacity = []float64{0.9, 0, 0.86}[i]
	}
	if got, err := MedianProfile([]Profile{ca, cb, cc}); err != nil || math.Abs(got.Resources[0].Capacity-0.88) > 1e-12 {
		t.Errorf("capacity %g (%v): want 0.88, the median of 0.9 and 0.86", got.Resources[0].Capacity, err)
	}
	if got, err := MedianProfile([]Profile{b, cb}); err != nil || got.Resources[0].Capacity != 0 {
		t.Errorf("capacity %g (%v): want 0, none measured", got.Resources[0].Capacity, err)
	}
	// The apply batch and ws's per-batch part: medians, the part kept
	// inside ws at the median batch (ws 0.45 at 1.5: at most 0.675).
	b2, c2 := b, c
	b2.Resources = append([]Resource(nil), b.Resources...)
	c2.Resources = append([]Resource(nil), c.Resources...)
	b2.ApplyBatch, c2.ApplyBatch = 1, 2
	b2.Resources[0].WSBatch, c2.Resources[0].WSBatch = 0.7, 0.8
	if got, err := MedianProfile([]Profile{b2, c2}); err != nil || got.ApplyBatch != 1.5 || math.Abs(got.Resources[0].WSBatch-0.675) > 1e-12 {
		t.Errorf("apply batch %g, ws_batch %g (%v): want 1.5 and 0.675", got.ApplyBatch, got.Resources[0].WSBatch, err)
	}
	other := a
	other.Resources = []Resource{{Name: "cpu"}}
	if _, err := MedianProfile([]Profile{a, other}); !errors.Is(err, ErrInvalidProfile) {
		t.Errorf("different resources: err = %v, want ErrInvalidProfile", err)
	}
	if _, err := MedianProfile(nil); !errors.Is(err, ErrInvalidProfile) {
		t.Errorf("none: err = %v, want ErrInvalidProfile", err)
	}
}
