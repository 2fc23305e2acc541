package sweep

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
)

// TestSweepOnEmulatedHosts runs seed 001's rows on emulated hosts: tandem's
// pair behind its router (SQLite) and PostgreSQL's pair behind HAProxy.
// Every process must have run in its host (each host's cgroup counted CPU:
// n1 and n2 the servers, router the router or HAProxy, client this
// process), no host may have used more than its quota, and nothing of the
// lab may remain afterwards, this process back in the root cgroup.
func TestSweepOnEmulatedHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clusters; skipped with -short")
	}
	const quota = 0.3
	spec := config.Lab{CPUPerNode: quota, CPURouter: quota, CPUClient: quota}
	if err := lab.Check(spec); err != nil {
		t.Skip("this machine cannot run the lab:", err)
	}
	names := "sm-lb-round-robin"
	if _, err := postgres.FindBinDir(""); err == nil {
		if _, err := FindHAProxy(); err == nil {
			names += ",pg-pair-haproxy-remote_write"
		}
	}
	configs, err := SelectSuite(SuiteSeed001, "sqlite", names)
	if err != nil {
		t.Fatal(err)
	}
	exe := buildTandem(t)
	// Short: a managed server's Unix socket lives in its data directory.
	tmp, err := os.MkdirTemp("", "tsl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{
		Subscribers: 1000, Clients: 4, Rampup: 300 * time.Millisecond, Duration: 2 * time.Second,
		Mixes: []string{"r80w20"}, Configs: configs, Rounds: 1, Suite: SuiteSeed001, Lab: &spec,
		Exe: exe, TempDir: tmp, Progress: &progress, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatalf("sweep: %v\nprogress:\n%s", err, progress.String())
	}
	if rep.Params.Lab != spec.String() {
		t.Errorf("report's lab = %q, want %q", rep.Params.Lab, spec.String())
	}
	for _, m := range rep.Runs {
		if m.Err != "" || m.MQTh <= 0 {
			t.Errorf("%s: MQTh %.1f, error %q", m.Config, m.MQTh, m.Err)
			continue
		}
		for _, h := range []string{"n1", "n2", "router", "client"} {
			// Ramp-up included: the cgroup limits each 100 ms period, so
			// a whole run can only exceed the quota by a period's worth.
			if v, ok := m.HostCPU[h]; !ok || v <= 0.005 || v > quota*1.15 {
				t.Errorf("%s: host %s used %.3f cores (want > 0 and at most its quota %.2f); all: %v", m.Config, h, v, quota, m.HostCPU)
			}
		}
	}
	var b strings.Builder
	if err := rep.Print(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "CPU per host") || !strings.Contains(b.String(), "emulated hosts") {
		t.Errorf("the table does not show the hosts:\n%s", b.String())
	}
	var h strings.Builder
	if err := rep.WriteHTML(&h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "CPU per host") || !strings.Contains(h.String(), "emulated hosts") {
		t.Errorf("the HTML report does not show the hosts")
	}
	if left := lab.Cgroups(os.Getpid()); len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
	cg, _ := os.ReadFile("/proc/self/cgroup")
	if strings.Contains(string(cg), lab.Prefix) {
		t.Errorf("this process is still in a lab cgroup:\n%s", cg)
	}
}

func TestSweepLabRefusesNetwork(t *testing.T) {
	on := true
	configs, _ := SelectConfigs("standalone-relaxed")
	o := Options{Subscribers: 10, Clients: 1, Duration: time.Second, Rounds: 1, Mixes: []string{"r80w20"}, Configs: configs,
		Lab: &config.Lab{CPUPerNode: 0.5, Netns: &on}}
	err := o.validate()
	if err == nil || !strings.Contains(err.Error(), "CPU only") {
		t.Fatalf("validate with netns = %v, want a refusal that says the sweep emulates CPU only", err)
	}
}
