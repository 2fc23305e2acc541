package e2e

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
)

// needLab skips a test of the emulated-host lab where this machine cannot
// run it (not root, no cgroup cpu controller).
func needLab(t *testing.T) {
	t.Helper()
	if err := lab.Check(config.Lab{}); err != nil {
		t.Skipf("lab test skipped: %v", err)
	}
}

// labProc returns the process name of c and its lab cgroup.
func labProc(t *testing.T, c *Cluster, name string) *cluster.Proc {
	t.Helper()
	for _, p := range c.Procs() {
		if p.Name == name {
			if p.Cgroup == "" {
				t.Fatalf("%s runs in no lab cgroup (cluster.json: %+v)", name, p)
			}
			return p
		}
	}
	t.Fatalf("no process %s in cluster.json", name)
	return nil
}

// A node under a quota of 0.25 CPU gets no more than that while eight
// clients drive it as hard as they can: its cgroup's CPU time over a busy
// interval, with 15 % slack for period boundaries, and the kernel reports
// it throttled.
func TestLabQuotaUnderLoad(t *testing.T) {
	needLab(t)
	c := startCluster(t, clusterSpec{backend: "sqlite", extra: "[lab]\ncpu_per_node = 0.25\n"})
	n1 := labProc(t, c, "n1")
	if out, err := exec.Command(tandemBin, "bench", "load", "--workload", "tm1", "--subscribers", "2000", "--dsn", c.DSN, "--quiet").CombinedOutput(); err != nil {
		t.Fatalf("bench load: %v: %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, tandemBin, "bench", "run", "--workload", "tm1", "--mix", "read-only", "--clients", "8",
		"--rampup", "1s", "--duration", "5s", "--dsn", c.DSN, "--quiet", "--json")
	run.Stderr = os.Stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer run.Wait()
	time.Sleep(2 * time.Second) // ramp-up over, the node at its quota
	u0, err := lab.ReadUsage(n1.Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(3 * time.Second)
	u1, err := lab.ReadUsage(n1.Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(t0)
	d := u1.Sub(u0)
	used := d.CPU.Seconds() / wall.Seconds()
	t.Logf("node n1 (cgroup %s) used %.3f CPU over %v, throttled in %d of %d periods (%v)", n1.Cgroup, used, wall.Round(time.Millisecond), d.Throttled, d.Periods, d.ThrottledTime)
	if used > 0.25*1.15 {
		t.Errorf("node n1 used %.3f CPU under a quota of 0.25", used)
	}
	if used < 0.05 {
		t.Errorf("node n1 used %.3f CPU while 8 clients drove it: the workload did not reach it, or the wrong cgroup was read", used)
	}
	if d.Throttled == 0 {
		t.Errorf("node n1 was never throttled while 8 clients drove it under a quota of 0.25")
	}
	if err := run.Wait(); err != nil {
		t.Errorf("bench run: %v", err)
	}
}

// A SIGKILLed launcher leaves its cgroups (and, for a PostgreSQL node,
// the postmaster its node started in the node's cgroup) behind; the next
// lab to start removes both; a normal stop leaves nothing.
func TestLabCleanupAfterSIGKILL(t *testing.T) {
	needLab(t)
	backend := "sqlite"
	if _, err := exec.LookPath("pg_config"); err == nil {
		backend = "postgres"
	}
	dir := t.TempDir()
	first := startClusterArgs(t, dir, clusterSpec{backend: backend}, "--lab", "cpu=0.5")
	n1 := labProc(t, first, "n1")
	procs := lab.CgroupProcs(n1.Cgroup)
	if !slices.Contains(procs, n1.PID) {
		t.Fatalf("node n1 (pid %d) is not in its cgroup %s: %v", n1.PID, n1.Cgroup, procs)
	}
	if backend == "postgres" && len(procs) < 2 {
		t.Fatalf("the managed PostgreSQL of n1 is not in the node's cgroup %s: %v", n1.Cgroup, procs)
	}
	t.Logf("%s node n1: processes %v in %s", backend, procs, n1.Cgroup)
	owner := first.cmd.Process.Pid
	if got := lab.Cgroups(owner); len(got) != 1 {
		t.Fatalf("launcher %d: cgroups %v, want one (n1)", owner, got)
	}
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	<-first.done
	t.Logf("after SIGKILL of launcher %d: cgroups %v hold %v", owner, lab.Cgroups(owner), lab.CgroupProcs(n1.Cgroup))

	second := startClusterArgs(t, t.TempDir(), clusterSpec{backend: "sqlite"}, "--lab", "cpu=0.5")
	if left := lab.Cgroups(owner); len(left) > 0 {
		t.Errorf("the next lab left the dead launcher's cgroups %v", left)
	}
	for _, p := range procs {
		if alive(p) {
			t.Errorf("process %d of the dead launcher's cgroup survived the next lab's start", p)
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	owner2 := second.cmd.Process.Pid
	if got := lab.Cgroups(owner2); len(got) != 1 {
		t.Errorf("launcher %d: cgroups %v, want one (n1)", owner2, got)
	}
	second.Stop()
	if left := lab.Cgroups(owner2); len(left) > 0 {
		t.Errorf("after a normal stop, cgroups %v remain", left)
	}
}
