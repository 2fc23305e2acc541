package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/bench"
)

// runBenchCmd runs `tandem bench ARGS...` and returns stdout, stderr and the error.
func runBenchCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newBenchCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	cmd.SilenceUsage = true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func TestBenchFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"load needs dsn", []string{"load", "--subscribers", "10"}, "dsn"},
		{"load needs subscribers > 0", []string{"load", "--dsn", "postgres://127.0.0.1:1/x", "--subscribers", "0"}, "--subscribers"},
		{"load bad method", []string{"load", "--dsn", "postgres://127.0.0.1:1/x", "--method", "fast"}, "--method"},
		{"unknown workload", []string{"load", "--dsn", "postgres://127.0.0.1:1/x", "--workload", "tpcz"}, "--workload"},
		{"items for tpcw only", []string{"load", "--dsn", "postgres://127.0.0.1:1/x", "--items", "1000"}, "--items"},
		{"items > 0", []string{"load", "--dsn", "postgres://127.0.0.1:1/x", "--workload", "tpcw", "--items", "0"}, "--items"},
		{"run needs dsn", []string{"run"}, "dsn"},
		{"custom mix needs weights", []string{"run", "--dsn", "postgres://127.0.0.1:1/x", "--mix", "custom"}, "--weights"},
		{"unknown mix", []string{"run", "--dsn", "postgres://127.0.0.1:1/x", "--mix", "r50w50"}, "--mix"},
		{"bad duration", []string{"run", "--dsn", "postgres://127.0.0.1:1/x", "--duration", "0s"}, "--duration"},
		{"bad clients", []string{"run", "--dsn", "postgres://127.0.0.1:1/x", "--clients", "-2"}, "--clients"},
		{"bad think distribution", []string{"run", "--dsn", "postgres://127.0.0.1:1/x", "--think-dist", "normal"}, "--think-dist"},
		{"compare needs files", []string{"compare"}, "arg"},
		{"compare missing file", []string{"compare", "/nonexistent/result.json"}, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runBenchCmd(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestBenchProcs(t *testing.T) {
	tests := []struct{ flag, clients, cpus, want int }{
		{0, 8, 2, 1}, {0, 1, 2, 1}, {0, 9, 2, 2}, {0, 64, 2, 2}, {0, 64, 16, 8}, {3, 8, 2, 3},
	}
	for _, tc := range tests {
		if got := benchProcs(tc.flag, tc.clients, tc.cpus); got != tc.want {
			t.Errorf("benchProcs(%d, %d, %d) = %d, want %d", tc.flag, tc.clients, tc.cpus, got, tc.want)
		}
	}
}

func TestRunProcs(t *testing.T) {
	tests := []struct {
		flag, clients, cpus int
		quota               float64
		wait                string
		want                int
	}{
		{0, 4, 2, 0, bench.WaitPoller, 4},    // one P per client
		{0, 1, 2, 0, bench.WaitPoller, 1},    //
		{0, 8, 2, 0, bench.WaitPoller, 4},    // at most twice the CPUs
		{0, 64, 16, 0, bench.WaitPoller, 32}, //
		{0, 8, 2, 0.4, bench.WaitPoller, 1},  // a client quota of 0.4 cores: one P
		{0, 8, 2, 1.5, bench.WaitPoller, 2},  // rounded up
		{3, 8, 2, 0.4, bench.WaitPoller, 3},  // --procs wins
		{0, 4, 2, 0, bench.WaitThread, 5},    // waiting on threads: one P per client and one more
		{0, 8, 2, 0.4, bench.WaitThread, 9},  // whatever the quota
		{3, 8, 2, 0, bench.WaitThread, 3},    // --procs wins (the run refuses too few)
	}
	for _, tc := range tests {
		if got := runProcs(tc.flag, tc.clients, tc.cpus, tc.quota, tc.wait); got != tc.want {
			t.Errorf("runProcs(%d, %d, %d, %g, %s) = %d, want %d", tc.flag, tc.clients, tc.cpus, tc.quota, tc.wait, got, tc.want)
		}
	}
}

func TestRunWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("waiting on threads is Linux's")
	}
	tests := []struct {
		flag    string
		clients int
		want    string
		err     bool
	}{
		{"auto", 4, bench.WaitThread, false},
		{"", 16, bench.WaitThread, false},
		{"auto", 17, bench.WaitPoller, false},
		{"thread", 64, bench.WaitThread, false},
		{"poller", 1, bench.WaitPoller, false},
		{"threads", 4, "", true},
	}
	for _, tc := range tests {
		got, err := runWait(tc.flag, tc.clients)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("runWait(%q, %d) = %q, %v; want %q (error %v)", tc.flag, tc.clients, got, err, tc.want, tc.err)
		}
	}
}

func writeResult(t *testing.T, dir string, mqth, p99 float64) string {
	t.Helper()
	r := &bench.Result{Workload: "tm1", Mix: "r80w20", Clients: 8, Scale: 1000, ScaleName: "subscribers", MQTh: mqth,
		TransactionOrder: []string{"GET_SUBSCRIBER_DATA"},
		Transactions:     map[string]*bench.TxResult{"GET_SUBSCRIBER_DATA": {Started: 10, Counted: 10, SuccessRate: 1, P50Ms: 0.2, P99Ms: p99}}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, bench.ResultJSON)
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBenchCompare(t *testing.T) {
	dir := t.TempDir()
	a := writeResult(t, filepath.Join(dir, "standalone"), 1000, 1)
	b := writeResult(t, filepath.Join(dir, "hot-standby"), 900, 3)
	out, _, err := runBenchCmd(t, "compare", a, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"standalone", "hot-standby", "x0.900 (-10.0%)", "-10.00%", "11.11%", "(x3.00)", "GET_SUBSCRIBER_DATA"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runBenchCmd(t, "compare", "--json", a, b)
	if err != nil {
		t.Fatal(err)
	}
	var c bench.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("compare --json: %v\n%s", err, out)
	}
	if len(c.Runs) != 2 || c.Runs[1].MQThRatio != 0.9 || c.Runs[0].Label != "standalone" {
		t.Errorf("compare --json: %+v", c)
	}
}

// TestBenchLoadRun runs the commands end to end against a real PostgreSQL.
func TestBenchLoadRun(t *testing.T) {
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	ctx := context.Background()
	m, err := postgres.StartManaged(ctx, postgres.ManagedConfig{DataDir: t.TempDir() + "/pg", Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	dsn := m.DSN("postgres")

	out, stderr, err := runBenchCmd(t, "load", "--dsn", dsn, "--subscribers", "500", "--workers", "2")
	if err != nil || !strings.Contains(out, "loaded tm1: 500 subscribers") || !strings.Contains(stderr, "rows") {
		t.Fatalf("load: %v\nstdout %s\nstderr %s", err, out, stderr)
	}
	if _, _, err := runBenchCmd(t, "load", "--dsn", dsn, "--subscribers", "500"); err == nil || !strings.Contains(err.Error(), "--drop") {
		t.Fatalf("second load: %v, want refusal naming --drop", err)
	}

	dir := filepath.Join(t.TempDir(), "pg")
	start := time.Now()
	out, stderr, err = runBenchCmd(t, "run", "--dsn", dsn, "--clients", "2", "--rampup", "500ms", "--duration", "1500ms", "--out", dir)
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out, stderr)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("run took %s", time.Since(start))
	}
	for _, want := range []string{"MQTh", "GET_SUBSCRIBER_DATA", "TOTAL", "500 subscribers", "report.html"} {
		if !strings.Contains(out, want) {
			t.Errorf("run summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "tps") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	for _, f := range []string{bench.ResultJSON, bench.TimelineCSV, bench.ReportHTML} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	out, _, err = runBenchCmd(t, "run", "--dsn", dsn, "--clients", "1", "--rampup", "0s", "--duration", "500ms", "--json", "--quiet", "--simple", "--mix", "read-only")
	if err != nil {
		t.Fatal(err)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.MQTh <= 0 || res.Mix != "read-only" || res.Protocol != "simple" {
		t.Fatalf("run --json: %v %+v", err, res)
	}

	// RUBiS: its clients think 900 ms on average (exponential) unless --think says otherwise.
	if out, stderr, err := runBenchCmd(t, "load", "--workload", "rubis", "--scale", "1", "--dsn", dsn, "--quiet"); err != nil || !strings.Contains(out, "loaded rubis: 1 scale") {
		t.Fatalf("load rubis: %v\n%s\n%s", err, out, stderr)
	}
	for _, tc := range []struct {
		args  []string
		think float64
		dist  string
	}{
		{nil, 900, bench.ThinkExponential},
		{[]string{"--think", "0"}, 0, bench.ThinkExponential},
		{[]string{"--think", "5ms", "--think-dist", "fixed"}, 5, bench.ThinkFixed},
	} {
		args := append([]string{"run", "--workload", "rubis", "--dsn", dsn, "--clients", "2", "--rampup", "0s", "--duration", "500ms", "--json", "--quiet"}, tc.args...)
		out, stderr, err := runBenchCmd(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, stderr)
		}
		var res bench.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Workload != "rubis" || res.ThinkMs != tc.think || res.ThinkDist != tc.dist {
			t.Errorf("run rubis %v: %v: workload %s, think %v ms %s; want %v ms %s", tc.args, err, res.Workload, res.ThinkMs, res.ThinkDist, tc.think, tc.dist)
		}
	}

	// Without --clients, RUBiS runs seed 003's 50 clients per replica.
	out, stderr, err = runBenchCmd(t, "run", "--workload", "rubis", "--dsn", dsn, "--think", "0", "--rampup", "0s", "--duration", "300ms", "--json", "--quiet")
	if err != nil {
		t.Fatalf("run rubis: %v\n%s", err, stderr)
	}
	var def bench.Result
	if err := json.Unmarshal([]byte(out), &def); err != nil || def.Clients != 50 {
		t.Errorf("run rubis without --clients: %v, %d clients, want 50", err, def.Clients)
	}

	// Record a RUBiS run and replay it on the same server.
	tracePath := filepath.Join(t.TempDir(), "rubis.trace")
	if out, stderr, err := runBenchCmd(t, "record", "--workload", "rubis", "--dsn", dsn, "--think", "0", "--clients", "2", "--rampup", "0s",
		"--duration", "500ms", "--quiet", "--trace", tracePath); err != nil || !strings.Contains(stderr, "recorded") || !strings.Contains(out, "MQTh") {
		t.Fatalf("record: %v\n%s\n%s", err, out, stderr)
	}
	out, stderr, err = runBenchCmd(t, "replay", "--trace", tracePath, "--dsn", dsn, "--clients", "3", "--json")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	var rr struct {
		Transactions int64 `json:"transactions"`
		Statements   int64 `json:"statements"`
	}
	if err := json.Unmarshal([]byte(out), &rr); err != nil || rr.Transactions < 10 || rr.Statements < rr.Transactions {
		t.Fatalf("replay --json: %v %s", err, out)
	}
	if _, _, err := runBenchCmd(t, "replay", "--trace", filepath.Join(t.TempDir(), "none"), "--dsn", dsn); err == nil || !strings.Contains(err.Error(), "--trace") {
		t.Fatalf("replay of a missing trace: %v", err)
	}
}
