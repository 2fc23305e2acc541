package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/planner"
	"github.com/tandemdb/tandem/planner/profiler"
)

func runPlanProfileCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newPlanProfileCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func TestPlanProfileFlagErrors(t *testing.T) {
	dsn := "postgres://postgres@127.0.0.1:1/x?connect_timeout=2"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"dsn required", nil, "dsn"},
		{"unknown workload", []string{"--dsn", dsn, "--workload", "tpcz"}, "--workload"},
		{"unknown mix", []string{"--dsn", dsn, "--mix", "r50w50"}, "--mix"},
		{"custom needs weights", []string{"--dsn", dsn, "--mix", "custom"}, "--weights"},
		{"all with devices", []string{"--dsn", dsn, "--disk", "all,vda"}, "--disk"},
		{"zero duration", []string{"--dsn", dsn, "--duration", "0s"}, "--duration"},
		{"zero cpus", []string{"--dsn", dsn, "--cpus", "0"}, "--cpus"},
		{"negative pid", []string{"--dsn", dsn, "--pid", "-4"}, "--pid"},
		{"negative clients", []string{"--dsn", dsn, "--clients", "-1"}, "--clients"},
		{"unreachable", []string{"--dsn", dsn}, "--dsn: connect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runPlanProfileCmd(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one naming %q", err, c.want)
			}
		})
	}
}

// TestPlanProfileThenPredict profiles TM1 briefly on a real PostgreSQL and
// feeds the written file to `tandem plan predict --profile FILE`.
func TestPlanProfileThenPredict(t *testing.T) {
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
	w, err := bench.Lookup("tm1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: dsn, Scale: 1000, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tm1-r20w80.json")
	out, stderr, err := runPlanProfileCmd(t, "--dsn", dsn, "--mix", "r20w80", "--clients", "2", "--duration", "1s",
		"--rampup", "0s", "--skip-mix", "--out", file, "--json")
	if err != nil {
		t.Fatalf("plan profile: %v\n%s", err, stderr)
	}
	var rep profiler.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, out)
	}
	if rep.Profile.Mix != "r20w80" || len(rep.Phases) != 3 || rep.PID != m.PID() || rep.Profile.Pw != 0.8 {
		t.Errorf("report: mix %s, %d phases, pid %d (want %d), pw %g", rep.Profile.Mix, len(rep.Phases), rep.PID, m.PID(), rep.Profile.Pw)
	}
	if !strings.Contains(stderr, "wrote "+file) {
		t.Errorf("stderr lacks the file written: %s", stderr)
	}
	p, err := planner.LoadProfileFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Trust["a1"], "update phase") {
		t.Errorf("--skip-mix: a1 note should say it comes from the update phase: %s", p.Trust["a1"])
	}
	pred, err := runPlan(t, "predict", "--profile", file, "--design", "both", "--replicas", "1,2,4")
	if err != nil {
		t.Fatalf("plan predict --profile %s: %v", file, err)
	}
	if !strings.Contains(pred, "tm1-r20w80") || !strings.Contains(pred, "replica.cpu") || !strings.Contains(pred, "master.cpu") {
		t.Errorf("prediction table:\n%s", pred)
	}
}
