package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// syntheticResult runs the collector and the result computation on known
// records: per type, n counted with latencies 1..n ms, plus fixed numbers of
// other outcomes, half in the ramp-up.
func syntheticResult(t *testing.T) *Result {
	t.Helper()
	w := fakeWorkload{}
	txs := w.Transactions()
	rec := &recorder{}
	col := newCollector(txs, []*recorder{rec}, time.Second)
	add := func(typ TxType, out Outcome, lat time.Duration, measured bool, n int) {
		for range n {
			rec.add(record{lat: lat, typ: typ, out: out, measured: measured})
		}
	}
	// Ramp-up: must not count.
	add(0, Counted, 50*time.Millisecond, false, 500)
	col.collect()
	col.point(time.Second, time.Second)
	// Measured: READ 1000 counted with latencies 1..1000 ms, 200 of them no rows.
	for i := 1; i <= 1000; i++ {
		out := Counted
		if i%5 == 0 {
			out = CountedNoRows
		}
		add(0, out, time.Duration(i)*time.Millisecond, true, 1)
	}
	add(1, Counted, 2*time.Millisecond, true, 300)
	add(1, RolledBack, time.Millisecond, true, 100)
	add(1, AllowedError, time.Millisecond, true, 50)
	add(1, Aborted, time.Millisecond, true, 25)
	add(1, Failed, time.Millisecond, true, 20)
	add(1, Unknown, time.Millisecond, true, 5)
	col.collect()
	col.point(2*time.Second, time.Second)
	r := &runner{txs: txs}
	r.errs.note(txs[1], Failed, errors.New("boom"))
	res := &Result{Workload: "fake", Mix: "mostly-read", Clients: 1, RampupS: 1, DurationS: 10, MeasuredS: 10,
		Scale: 1234, ScaleName: "rows", Target: "postgres://u@h/db", Weights: map[string]float64{"READ": 80, "WRITE": 15, "OTHER": 5},
		TransactionOrder: []string{"READ", "WRITE", "OTHER"}, StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	r.fill(res, col, 10)
	return res
}

func TestResultStatistics(t *testing.T) {
	res := syntheticResult(t)
	read, write, other := res.Transactions["READ"], res.Transactions["WRITE"], res.Transactions["OTHER"]
	checks := []struct {
		name      string
		got, want float64
	}{
		{"READ started (ramp-up excluded)", float64(read.Started), 1000},
		{"READ counted", float64(read.Counted), 1000},
		{"READ hits", float64(read.Hits), 800},
		{"READ hit rate", read.HitRate, 0.8},
		{"READ success", read.SuccessRate, 1},
		{"WRITE started", float64(write.Started), 500},
		{"WRITE counted", float64(write.Counted), 300},
		{"WRITE rolled back incl. allowed", float64(write.RolledBack), 150},
		{"WRITE allowed", float64(write.AllowedErrors), 50},
		{"WRITE aborted", float64(write.Aborted), 25},
		{"WRITE errors", float64(write.Errors), 20},
		{"WRITE outcome unknown (08007)", float64(write.Unknown), 5},
		{"WRITE success", write.SuccessRate, 0.6},
		{"OTHER started", float64(other.Started), 0},
		{"total started", float64(res.Totals.Started), 1500},
		{"total counted", float64(res.Totals.Counted), 1300},
		{"MQTh = counted / 10 s", res.MQTh, 130},
		{"total tps", res.TotalTPS, 150},
		// Run to their end: counted, rolled back by the rules (allowed
		// errors included); not aborted, failed or unknown.
		{"completed tps", res.CompletedTPS, 145},
		// Update attempts (READ is read-only): 25 of WRITE's 500 aborted.
		{"update attempts", float64(res.UpdateAttempts), 500},
		{"update abort rate", res.UpdateAbortRate, 0.05},
		{"READ share", read.Share, 1000.0 / 1500},
		{"timeline points", float64(len(res.Timeline)), 2},
		{"timeline ramp-up tps", res.Timeline[0].TPS, 500},
		{"timeline measured tps", res.Timeline[1].TPS, 1300},
		{"timeline errors", float64(res.Timeline[1].Errors), 20},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-3 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// HdrHistogram with 3 significant digits: within 0.1%.
	lat := []struct {
		name      string
		got, want float64
	}{
		{"READ p50", read.P50Ms, 500}, {"READ p90", read.P90Ms, 900}, {"READ p99", read.P99Ms, 990}, {"READ max", read.MaxMs, 1000},
		{"WRITE p50", write.P50Ms, 2},
		// (Σ 1..1000 ms + 300 × 2 ms + 150 × 1 ms) / 1450
		{"completed mean", res.CompletedMeanMs, (500500 + 600 + 150) / 1450.0},

		// WRITE's 300 counted at 2 ms and 150 rolled back at 1 ms
		{"update mean", res.UpdateMeanMs, (600 + 150) / 450.0},
		// READ's 1000 at 1..1000 ms (the only read-only type)
		{"read mean", res.ReadMeanMs, 500500 / 1000.0},
	}
	for _, c := range lat {
		if math.Abs(c.got-c.want) > c.want*0.002 {
			t.Errorf("%s = %v ms, want %v", c.name, c.got, c.want)
		}
	}
	// The clients' time per completed transaction adds the 25 aborted at
	// 1 ms, spread over the 1450 completed (the failed and unknown ones
	// are not the model's retries); each mean is rounded to the µs.
	if d := res.CompletedCostMs - res.CompletedMeanMs; math.Abs(d-25.0/1450) > 0.0015 {
		t.Errorf("completed cost %v ms, completed mean %v ms: %v apart, want 25 ms / 1450 = %v", res.CompletedCostMs, res.CompletedMeanMs, d, 25.0/1450)
	}
	if res.Timeline[0].Measured || !res.Timeline[1].Measured {
		t.Errorf("timeline phases: %+v", res.Timeline)
	}
	if len(res.FirstErrors) != 1 || !strings.Contains(res.FirstErrors[0], "WRITE") {
		t.Errorf("first errors %v", res.FirstErrors)
	}
}

func TestResultFiles(t *testing.T) {
	res := syntheticResult(t)
	dir := filepath.Join(t.TempDir(), "out")
	if err := res.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	// result.json parses back, with the brief's keys.
	raw, err := os.ReadFile(filepath.Join(dir, ResultJSON))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"workload", "mix", "clients", "rampup_s", "duration_s", "rows", "target", "mqth", "transactions", "started_at", "tandem_version"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result.json lacks %q", k)
		}
	}
	if m["rows"].(float64) != 1234 {
		t.Errorf("scale under its name = %v", m["rows"])
	}
	tx := m["transactions"].(map[string]any)["WRITE"].(map[string]any)
	for _, k := range []string{"started", "counted", "rolled_back", "aborted", "errors", "success_rate", "p50_ms", "p90_ms", "p99_ms", "max_ms"} {
		if _, ok := tx[k]; !ok {
			t.Errorf("transaction lacks %q", k)
		}
	}
	back, err := ReadResult(filepath.Join(dir, ResultJSON))
	if err != nil {
		t.Fatal(err)
	}
	if back.MQTh != res.MQTh || back.Transactions["READ"].P99Ms != res.Transactions["READ"].P99Ms || back.Scale != 1234 {
		t.Errorf("round trip changed the result: %+v", back)
	}
	// timeline.csv: header and one row per point, same width.
	f, err := os.Open(filepath.Join(dir, TimelineCSV))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(res.Timeline) || len(rows[0]) != 7+3*3 || rows[0][3] != "tps" || rows[0][7] != "READ_tps" || rows[0][9] != "READ_p99_ms" {
		t.Fatalf("timeline.csv: %v", rows)
	}
	if rows[1][2] != "rampup" || rows[2][2] != "measure" {
		t.Errorf("phases %v", rows)
	}
	// report.html: inline SVG, nothing fetched.
	html, err := os.ReadFile(filepath.Join(dir, ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	s := string(html)
	if strings.Count(s, "<svg") != 4 || !strings.Contains(s, "<polyline") {
		t.Errorf("report has %d charts", strings.Count(s, "<svg"))
	}
	for _, bad := range []string{"<script", "http://", "https://"} {
		if strings.Contains(strings.ReplaceAll(s, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("report contains %q: it must render offline", bad)
		}
	}
	// The summary names every type and the totals.
	var sum bytes.Buffer
	if err := res.PrintSummary(&sum); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MQTh 130.0", "READ", "WRITE", "TOTAL", "UNEXPECTED ERRORS", "boom", "5 transactions ended with SQLSTATE 08007"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
}

func TestCompare(t *testing.T) {
	a, b := syntheticResult(t), syntheticResult(t)
	b.MQTh = a.MQTh * 0.8
	b.Transactions["READ"].P99Ms = a.Transactions["READ"].P99Ms * 2
	c, err := Compare([]*Result{a, b}, []string{"base", "slower"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Runs[1].MQThRatio; math.Abs(got-0.8) > 1e-6 {
		t.Errorf("MQTh ratio %v, want 0.8", got)
	}
	if got := c.Gain[0][1]; math.Abs(got+0.2) > 1e-6 {
		t.Errorf("gain of slower over base %v, want -0.2", got)
	}
	if got := c.Gain[1][0]; math.Abs(got-0.25) > 1e-6 {
		t.Errorf("gain of base over slower %v, want 0.25", got)
	}
	if got := c.Runs[1].Types["READ"].P99Ratio; math.Abs(got-2) > 1e-6 {
		t.Errorf("p99 ratio %v, want 2", got)
	}
	var out bytes.Buffer
	if err := c.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-20.00%", "25.00%", "00.00%", "(x2.00)", "x0.800"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := Compare(nil, nil); !errors.Is(err, ErrBadOption) {
		t.Errorf("empty compare: %v", err)
	}
}

func TestRunLabel(t *testing.T) {
	tests := []struct {
		label, path, want string
	}{
		{"", "results/pg/result.json", "pg"},
		{"", "a.json", "a"},
		{"mine", "results/pg/result.json", "mine"},
	}
	for _, tc := range tests {
		if got := RunLabel(&Result{Label: tc.label}, tc.path); got != tc.want {
			t.Errorf("RunLabel(%q, %q) = %q, want %q", tc.label, tc.path, got, tc.want)
		}
	}
}

func TestRunOptionErrors(t *testing.T) {
	w := fakeWorkload{}
	tests := []struct {
		name string
		opts RunOptions
		want string
	}{
		{"no workload", RunOptions{DSN: "postgres://h/db", Duration: time.Second}, "--workload"},
		{"no dsn", RunOptions{Workload: w, Duration: time.Second}, "--dsn"},
		{"no duration", RunOptions{Workload: w, DSN: "postgres://h/db"}, "--duration"},
		{"negative clients", RunOptions{Workload: w, DSN: "postgres://h/db", Duration: time.Second, Clients: -1}, "--clients"},
		{"negative rampup", RunOptions{Workload: w, DSN: "postgres://h/db", Duration: time.Second, Rampup: -time.Second}, "--rampup"},
		{"bad mix", RunOptions{Workload: w, DSN: "postgres://h/db", Duration: time.Second, Mix: "zzz"}, "--mix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(t.Context(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	if _, err := Load(t.Context(), LoadOptions{Workload: w, DSN: "postgres://h/db"}); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "--rows") {
		t.Errorf("load without scale: %v", err)
	}
	if _, err := Load(t.Context(), LoadOptions{Workload: w, DSN: "postgres://h/db", Scale: 1, Method: "fast"}); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "--method") {
		t.Errorf("load with bad method: %v", err)
	}
}

// TestFailoverInResult: a run's failover and events reach result.json, the
// summary, and the throughput chart's marks; a run without one shows none.
func TestFailoverInResult(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fo    *Failover
		wants []string
	}{
		{"none", nil, nil},
		{"recovered", &Failover{Killed: "n1", KillT: 1.5, Recovered: true, RecoveredT: 2.7, DurationMs: 1200, NewPrimary: "n2", Epoch: 3,
			Safeness: "2-safe-visible", Lease: "1s", LeaseGrace: "500ms", AckedChecked: 4321, Lost: 0, Sessions: 6},
			[]string{"SIGKILL of the primary n1 at 1.5s", "failover took 1200 ms", "new primary n2, epoch 3", "acknowledged commits checked: 4321, lost: 0", "0 of 6"}},
		{"not recovered", &Failover{Killed: "n1", KillT: 1.5, CheckError: "connection refused"},
			[]string{"NO commit succeeded", "no new primary found", "acknowledged commits NOT checked: connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := syntheticResult(t)
			res.Failover = tc.fo
			if tc.fo != nil {
				res.Events = []Event{{T: tc.fo.KillT, Label: "SIGKILL n1", Kind: EventFault}}
				if tc.fo.Recovered {
					res.Events = append(res.Events, Event{T: tc.fo.RecoveredT, Label: "first commit on n2", Kind: EventRecovery})
				}
			}
			dir := t.TempDir()
			if err := res.WriteFiles(dir); err != nil {
				t.Fatal(err)
			}
			back, err := ReadResult(filepath.Join(dir, ResultJSON))
			if err != nil {
				t.Fatal(err)
			}
			if (back.Failover == nil) != (tc.fo == nil) || len(back.Events) != len(res.Events) {
				t.Fatalf("round trip: failover %+v, events %v", back.Failover, back.Events)
			}
			if tc.fo != nil && (back.Failover.Lost != tc.fo.Lost || back.Failover.AckedChecked != tc.fo.AckedChecked || back.Failover.NewPrimary != tc.fo.NewPrimary) {
				t.Errorf("round trip changed the failover: %+v", back.Failover)
			}
			var sum bytes.Buffer
			if err := res.PrintSummary(&sum); err != nil {
				t.Fatal(err)
			}
			if tc.fo == nil && strings.Contains(sum.String(), "failover") {
				t.Errorf("summary of a run without failover mentions one:\n%s", sum.String())
			}
			for _, want := range tc.wants {
				if !strings.Contains(sum.String(), want) {
					t.Errorf("summary lacks %q:\n%s", want, sum.String())
				}
			}
			html, err := os.ReadFile(filepath.Join(dir, ReportHTML))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range res.Events {
				if !strings.Contains(string(html), ">"+e.Label+"</text>") {
					t.Errorf("report.html does not mark %q", e.Label)
				}
			}
			if got := strings.Contains(string(html), "<h2 style=\"font-size:16px\">Failover</h2>"); got != (tc.fo != nil) {
				t.Errorf("report.html failover section present = %v", got)
			}
		})
	}
}
