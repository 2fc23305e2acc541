package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDemoFailover runs `tandem demo` short (small TM1, a few seconds):
// the hot-standby pair's primary is SIGKILLed mid-run; the summary must
// say a failover happened (a new primary of a newer epoch, a first commit
// after the kill) and that every acknowledged audit commit is on the new
// primary; result.json and report.html carry the failover.
func TestDemoFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "report")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tandemBin, "demo", "--subscribers", "1000", "--clients", "2", "--rampup", "1s", "--duration", "5s",
		"--out", out, "--dir", filepath.Join(dir, "run"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tandem demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), tailStr(stderr.Bytes(), 4000))
	}
	s := stdout.String()
	for _, want := range []string{"failover: SIGKILL of the primary n1", "new primary n2, epoch", "failover took"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	m := mustCompile(`acknowledged commits checked: (\d+), lost: (\d+)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("summary has no acknowledged-commit check:\n%s", s)
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 || m[2] != "0" {
		t.Errorf("acknowledged commits checked %s, lost %s: want some checked and 0 lost", m[1], m[2])
	}
	var res struct {
		Failover *struct {
			Recovered  bool   `json:"recovered"`
			NewPrimary string `json:"new_primary"`
			Epoch      uint64 `json:"epoch"`
			Acked      int64  `json:"acked_checked"`
			Lost       int64  `json:"lost"`
		} `json:"failover"`
		Events []struct {
			Kind string `json:"kind"`
		} `json:"events"`
	}
	b, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if f := res.Failover; f == nil || !f.Recovered || f.NewPrimary != "n2" || f.Epoch < 2 || f.Acked == 0 || f.Lost != 0 {
		t.Errorf("result.json failover = %+v", f)
	}
	if len(res.Events) != 2 || res.Events[0].Kind != "fault" || res.Events[1].Kind != "recovery" {
		t.Errorf("result.json events = %+v, want the kill and the recovery", res.Events)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), ">SIGKILL n1 (primary)</text>") {
		t.Errorf("report.html does not mark the kill on the timeline")
	}
}

// TestBenchFailoverShort runs one trial of `tandem bench failover` at
// 2-safe-visible without the lease-cost runs: the JSON must show a
// recovered trial with acknowledged commits and none lost.
func TestBenchFailoverShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tandemBin, "bench", "failover", "--trials", "1", "--levels", "2-safe-visible", "--lease-rounds", "0",
		"--json", "--out", filepath.Join(dir, "out"), "--dir", filepath.Join(dir, "run"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tandem bench failover: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), tailStr(stderr.Bytes(), 4000))
	}
	var res struct {
		Trials []struct {
			Level     string  `json:"level"`
			Recovered bool    `json:"recovered"`
			RTOMs     float64 `json:"rto_ms"`
			Acked     int64   `json:"acked"`
			Lost      int64   `json:"lost"`
			Sessions  int     `json:"sessions"`
			Error     string  `json:"error"`
		} `json:"trials"`
		Levels []struct {
			Level    string  `json:"level"`
			Trials   int     `json:"trials"`
			MedianMs float64 `json:"rto_median_ms"`
		} `json:"levels"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	if len(res.Trials) != 1 || len(res.Levels) != 1 {
		t.Fatalf("want 1 trial and 1 level, got %+v", res)
	}
	tr := res.Trials[0]
	if tr.Level != "2-safe-visible" || !tr.Recovered || tr.RTOMs <= 0 || tr.Acked == 0 || tr.Lost != 0 || tr.Sessions != 4 || tr.Error != "" {
		t.Errorf("trial = %+v", tr)
	}
	if l := res.Levels[0]; l.Trials != 1 || l.MedianMs != tr.RTOMs {
		t.Errorf("level summary = %+v, trial RTO %v", l, tr.RTOMs)
	}
	for _, f := range []string{"failover.json", "failover.html"} {
		if _, err := os.Stat(filepath.Join(dir, "out", f)); err != nil {
			t.Errorf("--out: %v", err)
		}
	}
}
