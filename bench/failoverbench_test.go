package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestFailoverBenchSummary: per level, the median, p99 (nearest rank) and
// maximum of the recovered trials' RTO, the sums of acknowledged and lost
// commits and sessions, and failed trials; the lease cost's ratios.
func TestFailoverBenchSummary(t *testing.T) {
	b := &FailoverBench{Backend: "sqlite", Writers: 4}
	add := func(level string, rto float64, recovered bool, acked, lost int64, errMsg string) {
		b.Trials = append(b.Trials, FailoverTrial{Level: level, Trial: len(b.Trials) + 1, RTOMs: rto, Recovered: recovered,
			Acked: acked, Lost: lost, Sessions: 4, Error: errMsg})
	}
	add("2-safe-visible", 1500, true, 100, 0, "")
	add("2-safe-visible", 3000, true, 200, 0, "")
	add("2-safe-visible", 1700, true, 300, 0, "")
	add("2-safe-visible", 0, false, 0, 0, "no commit succeeded")
	add("1-safe", 1600, true, 50, 2, "")
	add("1-safe", 1400, true, 50, 1, "")
	b.Summarize()
	want := []FailoverLevel{
		{Level: "2-safe-visible", Trials: 4, Recovered: 3, MedianMs: 1700, P99Ms: 3000, MaxMs: 3000, Acked: 600, Sessions: 16, Errors: 1},
		{Level: "1-safe", Trials: 2, Recovered: 2, MedianMs: 1500, P99Ms: 1600, MaxMs: 1600, Acked: 100, Lost: 3, Sessions: 8},
	}
	if len(b.Levels) != len(want) {
		t.Fatalf("levels %+v", b.Levels)
	}
	for i := range want {
		if b.Levels[i] != want[i] {
			t.Errorf("level %d = %+v, want %+v", i, b.Levels[i], want[i])
		}
	}
	lc := &LeaseCost{Rounds: []LeaseCostRound{
		{Manual: 100, Automatic: 90, Ratio: 0.9, CPURatio: 1.1},
		{Manual: 200, Automatic: 200, Ratio: 1, CPURatio: 1.0},
		{Manual: 100, Automatic: 80, Ratio: 0.8, CPURatio: 1.2},
	}}
	lc.Summarize()
	if lc.Ratio != 0.925 || lc.MedianRatio != 0.9 || lc.MedianCPURatio != 1.1 {
		t.Errorf("lease cost ratios %v, median %v, CPU median %v", lc.Ratio, lc.MedianRatio, lc.MedianCPURatio)
	}
	b.LeaseCost = lc
	var text, js, html bytes.Buffer
	if err := b.Print(&text); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"!!! 2-safe-visible trial 4: no commit succeeded", "median of the rounds' ratios 0.900"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, text.String())
		}
	}
	if err := b.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back FailoverBench
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Levels) != 2 || back.LeaseCost == nil {
		t.Fatalf("JSON round trip: %v %+v", err, back)
	}
	if err := b.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if strings.Count(html.String(), "<svg") != 1 || strings.Contains(html.String(), "<script") {
		t.Errorf("failover.html: want one inline chart and no script")
	}
}
