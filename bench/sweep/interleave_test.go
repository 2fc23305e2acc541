package sweep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
)

// TestSweepInterleave: with Interleave a round keeps its systems running
// and runs the configurations of one safeness level side by side; tandem's physical pair
// serves its levels on one cluster (`tandem set` between them), as
// PostgreSQL's pair serves its synchronous_commit levels, and is stopped
// while the pair is measured.
func TestSweepInterleave(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clusters; skipped with -short")
	}
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip("PostgreSQL is not installed:", err)
	}
	configs, err := SelectConfigs("hs-pgphys-1safe,pg-pair-local,hs-pgphys-visible,pg-pair-remote_apply")
	if err != nil {
		t.Fatal(err)
	}
	exe := buildTandem(t)
	tmp, err := os.MkdirTemp("", "tsi")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{
		Subscribers: 1000, Clients: 4, Rampup: 300 * time.Millisecond, Duration: time.Second,
		Mixes: []string{"r80w20"}, Configs: configs, Rounds: 1, Interleave: true,
		Exe: exe, TempDir: tmp, Progress: &progress, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatalf("sweep: %v\nprogress:\n%s", err, progress.String())
	}
	for _, m := range rep.Runs {
		if m.MQTh <= 0 || m.Errors != 0 {
			t.Errorf("%s: MQTh %v, %d errors (%s)", m.Config, m.MQTh, m.Errors, m.FirstError)
		}
	}
	if len(rep.Runs) != 4 {
		t.Errorf("%d runs, want 4", len(rep.Runs))
	}
	// Level by level (one progress line each, as it ends).
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	var order []string
	for _, l := range lines {
		for _, c := range configs {
			if strings.Contains(l, c.Name+" ") {
				order = append(order, c.Name)
			}
		}
	}
	if got, want := strings.Join(order, ","), "pg-pair-local,hs-pgphys-1safe,pg-pair-remote_apply,hs-pgphys-visible"; got != want {
		t.Errorf("runs in the order %s, want %s:\n%s", got, want, progress.String())
	}
	// Each system was started and loaded once: the second physical level
	// and the second PostgreSQL level reused theirs.
	loads := 0
	for _, l := range lines {
		if strings.Contains(l, " load ") {
			loads++
			if strings.Contains(l, "hs-pgphys-visible") || strings.Contains(l, "pg-pair-remote_apply") {
				t.Errorf("a second level started a system of its own: %s", l)
			}
		}
	}
	if loads != 2 {
		t.Errorf("%d systems loaded, want 2 (the physical pair, PostgreSQL's pair):\n%s", loads, progress.String())
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("left behind in the temporary directory: %v", left)
	}
}

// TestSweepInterleaveRefusesLabNetns: systems side by side share the
// emulated hosts' CPU, not a host's one network address.
func TestSweepInterleaveRefusesLabNetns(t *testing.T) {
	configs, _ := SelectConfigs("standalone-relaxed")
	on := true
	o := Options{Subscribers: 10, Clients: 1, Duration: time.Second, Rounds: 1, Mixes: []string{"r80w20"}, Configs: configs,
		Lab: &config.Lab{CPUPerNode: 0.5, Netns: &on}, Interleave: true}
	if err := o.validate(); err == nil || !strings.Contains(err.Error(), "--interleave") {
		t.Fatalf("validate with Interleave and a Lab with netns = %v, want a refusal naming --interleave", err)
	}
	o.Lab = &config.Lab{CPUPerNode: 0.5}
	if err := o.validate(); err != nil {
		t.Fatalf("validate with Interleave and a Lab without netns: %v", err)
	}
}

// TestPauseSparesAutomaticFailover: an interleaved round stops an idle
// tandem cluster's processes (SIGSTOP), but not a cluster with automatic
// failover, whose primary's lease would lapse meanwhile and whose
// coordinator, continued, would fail over. A real process stands in for
// the cluster's; its state is read from /proc.
func TestPauseSparesAutomaticFailover(t *testing.T) {
	for _, tc := range []struct {
		failover string
		stopped  bool
	}{{"", true}, {"automatic", false}} {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s := &tandemSystem{cfg: Config{Failover: tc.failover}, local: &cluster.Local{Procs: []*cluster.Proc{{PID: cmd.Process.Pid}}}}
		s.pause()
		stopped := false
		for i := 0; i < 100 && !stopped; i++ {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
			if err != nil {
				t.Fatal(err)
			}
			// pid (comm) STATE ...
			f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			stopped = len(f) > 0 && f[0] == "T"
			if !tc.stopped {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if stopped != tc.stopped {
			t.Errorf("failover %q: stopped %v, want %v", tc.failover, stopped, tc.stopped)
		}
		s.resume()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
