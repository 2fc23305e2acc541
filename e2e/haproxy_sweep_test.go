package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench/sweep"
)

// TestSweepHAProxyCLI runs `tandem bench sweep --configs
// pg-pair-haproxy-remote_write` on a tiny scale: the table has the HAProxy
// row, sweep.json says every client connection went through HAProxy to the
// primary (none to the standby), and no haproxy process of the run is left.
func TestSweepHAProxyCLI(t *testing.T) {
	havePostgres(t)
	if _, err := sweep.FindHAProxy(); err != nil {
		t.Skip(err)
	}
	// A short directory: the servers' Unix sockets live under it (107 bytes at most).
	tmp, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tandemBin, "bench", "sweep", "--configs", "pg-pair-haproxy-remote_write",
		"--mixes", "r80w20,r20w80", "--subscribers", "1000", "--clients", "3", "--rampup", "200ms", "--duration", "1s", "--out", out)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tandem bench sweep: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "pg-pair-haproxy-remote_write") {
		t.Errorf("no pg-pair-haproxy-remote_write row:\n%s", b)
	}
	raw, err := os.ReadFile(filepath.Join(out, sweep.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var rep sweep.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs in sweep.json, want 2 (one per mix)", len(rep.Runs))
	}
	for _, m := range rep.Runs {
		if m.Err != "" || m.MQTh <= 0 {
			t.Errorf("%s %s: MQTh %v, error %q", m.Config, m.Mix, m.MQTh, m.Err)
		}
		if m.Proxied["pg1"] < 3 || m.Proxied["pg2"] != 0 {
			t.Errorf("%s %s: connections through HAProxy %v, want >= 3 to pg1 (the primary) and none to pg2", m.Config, m.Mix, m.Proxied)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		c, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(c), "haproxy") && strings.Contains(string(c), tmp) {
			t.Errorf("haproxy still running after the sweep: %s %q", f, c)
		}
	}
	// The sweep's temporary directory (under TMPDIR) is gone; only --out is left.
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		if e.Name() != "out" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
