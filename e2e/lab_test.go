package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
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
	// The client in its own emulated host too (bench run --lab).
	run := exec.CommandContext(ctx, tandemBin, "bench", "run", "--workload", "tm1", "--mix", "read-only", "--clients", "8",
		"--rampup", "1s", "--duration", "5s", "--dsn", c.DSN, "--quiet", "--json", "--lab", "client=1")
	var runErr strings.Builder
	run.Stderr = &runErr
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
		t.Errorf("bench run: %v: %s", err, runErr.String())
	}
	if !regexp(`lab: the client \(1 CPU, cgroup tandem-lab-\d+-client\) used \d\.\d\d CPU`).MatchString(runErr.String()) {
		t.Errorf("bench run --lab did not report the client's CPU: %s", runErr.String())
	}
	if left := lab.Cgroups(run.Process.Pid); len(left) > 0 {
		t.Errorf("bench run --lab left %v", left)
	}
}

// A SIGKILLed launcher leaves its cgroups (and, for a PostgreSQL node,
// the postmaster its node started in the node's cgroup) behind, and its
// network namespaces and root link where the machine has them; the next
// lab to start removes all of it; a normal stop leaves nothing.
func TestLabCleanupAfterSIGKILL(t *testing.T) {
	needLab(t)
	labArg := "cpu=0.5"
	if err := lab.Check(config.Lab{NetDelay: config.Duration{Duration: 2 * time.Millisecond}}); err == nil {
		// Namespaces with emulated links: netem, or where the kernel has
		// none, TUN devices the launcher forwards between (which vanish
		// with the launcher).
		labArg += ",netns=true,delay=2ms"
	} else if err := lab.Check(config.Lab{Netns: ptr(true)}); err == nil {
		labArg += ",netns=true"
		t.Logf("link emulation not tested: %v", err)
	} else {
		t.Logf("network namespaces not tested: %v", err)
	}
	backend := "sqlite"
	if _, err := exec.LookPath("pg_config"); err == nil {
		backend = "postgres"
	}
	dir := t.TempDir()
	first := startClusterArgs(t, dir, clusterSpec{backend: backend}, "--lab", labArg)
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

	second := startClusterArgs(t, t.TempDir(), clusterSpec{backend: "sqlite"}, "--lab", labArg)
	if left := lab.Cgroups(owner); len(left) > 0 {
		t.Errorf("the next lab left the dead launcher's cgroups %v", left)
	}
	if left := append(lab.Namespaces(owner), lab.RootLinks(owner)...); len(left) > 0 {
		t.Errorf("the next lab left the dead launcher's namespaces and links %v", left)
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
	if left := append(append(lab.Cgroups(owner2), lab.Namespaces(owner2)...), lab.RootLinks(owner2)...); len(left) > 0 {
		t.Errorf("after a normal stop, %v remain", left)
	}
}

func ptr[T any](v T) *T { return &v }

// needLabNet skips a test of the lab's network where this machine cannot
// make it (no ip or tc, or, with delay, a kernel without netem).
func needLabNet(t *testing.T, spec config.Lab) {
	t.Helper()
	needLab(t)
	if err := lab.Check(spec); err != nil {
		t.Skipf("lab network test skipped: %v", err)
	}
}

// tcpFrom reports whether addr accepts a TCP connection from inside
// network namespace ns ("" for this one).
func tcpFrom(ns, addr string) bool {
	host, port, _ := net.SplitHostPort(addr)
	probe := fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port)
	args := []string{"bash", "-c", probe}
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, args[0], args[1:]...).Run() == nil
}

// Nodes in their own namespaces reach each other only through the lab's
// links: a node's address from the cluster file (loopback) answers
// neither from this namespace nor from the other node's, its lab address
// answers from both, and writes through the router replicate over them.
func TestLabNetnsLinks(t *testing.T) {
	needLabNet(t, config.Lab{Netns: ptr(true)})
	s := upSingleMaster(t, "sqlite", 3, "[lab]\nnetns = true\n")
	n1, n2, r := labProc(t, s.Cluster, "n1"), labProc(t, s.Cluster, "n2"), labProc(t, s.Cluster, "router")
	if n1.Netns == "" || n2.Netns == "" || n1.Netns == n2.Netns || r.Netns != "" {
		t.Fatalf("namespaces: n1 %q, n2 %q, router %q; want two of their own and the router in this one", n1.Netns, n2.Netns, r.Netns)
	}
	if n1.Addr == s.nodes["n1"] || !strings.HasPrefix(n1.Addr, "10.213.") {
		t.Fatalf("n1 serves on %s, not on the lab network (file: %s)", n1.Addr, s.nodes["n1"])
	}
	for _, c := range []struct {
		from, addr string
		want       bool
	}{
		{"", s.nodes["n1"], false},
		{n2.Netns, s.nodes["n1"], false},
		{"", n1.Addr, true},
		{n2.Netns, n1.Addr, true},
		{n1.Netns, n2.Addr, true},
	} {
		if got := tcpFrom(c.from, c.addr); got != c.want {
			t.Errorf("TCP to %s from namespace %q: connected %v, want %v", c.addr, c.from, got, c.want)
		}
	}
	// The command line, given the original file, finds the nodes where
	// they run.
	out, err := s.tandem("status")
	if err != nil || !regexp(`n2\s+node\s+\S+\s+`+strings.ReplaceAll(n2.Addr, ".", `\.`)+`\s+sqlite\s+up`).MatchString(out) {
		t.Errorf("tandem status -c %s: %v\n%s", s.File, err, out)
	}
	db := connect(t, s.DSN)
	ctx := context.Background()
	if _, err := db.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	insertRows(t, s.DSN, 0, 50)
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, err := idsErr(s.dsn(n2.Addr))
		if err == nil && len(m) == 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2 (%s, namespace %s) holds %d of 50 rows (err %v)", n2.Addr, n2.Netns, len(m), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A lab round trip of D adds about D to a replicated commit: the client
// (this namespace) reaches the primary over one emulated link (D) and the
// primary waits for its replica over another (D), so an autocommit INSERT
// takes about 2D and a SELECT about D; the difference, generously
// bounded, is the replication's round trip.
func TestLabNetemDelay(t *testing.T) {
	const d = 40 * time.Millisecond
	needLabNet(t, config.Lab{NetDelay: config.Duration{Duration: d}})
	s := upSingleMaster(t, "sqlite", 3, "safeness = \"2-safe-received\"\n[lab]\nnet_delay = \"40ms\"\n")
	n1 := labProc(t, s.Cluster, "n1")
	db := connect(t, s.dsn(n1.Addr))
	ctx := context.Background()
	if _, err := db.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	median := func(sql string, arg func(i int) []any) time.Duration {
		var ds []time.Duration
		for i := 0; i < 15; i++ {
			t0 := time.Now()
			if _, err := db.Exec(ctx, sql, arg(i)...); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	sel := median("SELECT $1::int", func(i int) []any { return []any{i} })
	ins := median("INSERT INTO t (id, v) VALUES ($1, 'x')", func(i int) []any { return []any{i} })
	repl := ins - sel
	t.Logf("lab round trip %v: SELECT %v, replicated INSERT %v, difference %v", d, sel, ins, repl)
	if sel < d/2 || sel > 3*d {
		t.Errorf("a SELECT from this namespace took %v; a lab round trip of %v should make it about that", sel, d)
	}
	if repl < d/2 || repl > 3*d {
		t.Errorf("a replicated commit took %v longer than a SELECT; a lab round trip of %v should make it about that", repl, d)
	}
}

// `tandem bench scaleout` on a tiny configuration runs end to end: a
// fresh cluster per N under the lab's quota, X(N) and the CPU of every
// host from its cgroup, and no node above its quota.
func TestLabScaleout(t *testing.T) {
	needLab(t)
	for _, tc := range []struct{ name, backend, engine string }{
		{"sqlite", "sqlite", "writeset"},
		// PostgreSQL's streaming replication under the lab: the replica is
		// seeded by pg_basebackup, and the sweep waits for its replay.
		{"postgres-physical", "postgres", "physical"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.backend == "postgres" {
				havePostgres(t)
			}
			t.Parallel()
			testLabScaleout(t, tc.backend, tc.engine)
		})
	}
}

func testLabScaleout(t *testing.T, backend, engine string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tandemBin, "bench", "scaleout", "--design", "single-master", "--nodes", "1..2",
		"--backend", backend, "--engine", engine,
		"--mix", "r80w20", "--lab", "cpu=0.25", "--subscribers", "1000", "--rampup", "1s", "--duration", "3s", "--json")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench scaleout: %v\n%s", err, stderr.String())
	}
	out := []byte(stdout.String())
	var rep struct {
		Emulated bool   `json:"emulated"`
		Engine   string `json:"engine"`
		Alone    string `json:"alone"`
		Rows     []struct {
			N            int     `json:"n"`
			X            float64 `json:"x"`
			Efficiency   float64 `json:"efficiency"`
			MemLatencyNS float64 `json:"mem_latency_ns"`
		} `json:"rows"`
		Points []struct {
			N           int               `json:"n"`
			X           float64           `json:"x"`
			MachineBusy float64           `json:"machine_busy"`
			MachineCPUs int               `json:"machine_cpus"`
			Routed      map[string]uint64 `json:"routed"`
			Hosts       []struct {
				Name string  `json:"name"`
				Kind string  `json:"kind"`
				CPU  float64 `json:"cpu_quota"`
				Util float64 `json:"util"`
			} `json:"hosts"`
		} `json:"points"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !rep.Emulated || rep.Engine != engine || len(rep.Rows) != 2 || rep.Rows[0].N != 1 || rep.Rows[1].N != 2 {
		t.Fatalf("report: %s", out)
	}
	// N = 1 on the physical engine is the primary alone behind the
	// router (--alone router, the default): its clients reach the server
	// over the router's TLS hop, as at N = 2.
	routedAlone := engine == "physical"
	if wantAlone := map[bool]string{true: "router"}[routedAlone]; rep.Alone != wantAlone {
		t.Errorf("N = 1 reached by %q, want %q", rep.Alone, wantAlone)
	}
	for _, r := range rep.Rows {
		if r.X <= 0 || r.Efficiency <= 0 {
			t.Errorf("N = %d: X %v, efficiency %v", r.N, r.X, r.Efficiency)
		}
		// The machine's memory latency over the window (lab/speed.go): a
		// dependent load from 8 MiB, between a cache hit and a trip to
		// memory through a cold TLB.
		if r.MemLatencyNS < 1 || r.MemLatencyNS > 2000 {
			t.Errorf("N = %d: memory latency %v ns", r.N, r.MemLatencyNS)
		}
	}
	for _, p := range rep.Points {
		kinds := map[string]int{}
		for _, h := range p.Hosts {
			kinds[h.Kind]++
			if h.Kind == "node" && (h.CPU != 0.25 || h.Util > 0.25*1.15 || h.Util <= 0) {
				t.Errorf("N = %d: node %s quota %v used %v", p.N, h.Name, h.CPU, h.Util)
			}
		}
		routed := p.N > 1 || routedAlone
		if kinds["node"] != p.N || kinds["client"] != 1 || routed != (kinds["router"] == 1) {
			t.Errorf("N = %d: hosts %v", p.N, kinds)
		}
		// Behind the router, what it sent each node over the window: the
		// window's transactions (3 s at X), every node among them.
		if routed {
			var routed uint64
			for _, v := range p.Routed {
				routed += v
			}
			if len(p.Routed) != p.N || p.Routed["n1"] == 0 || float64(routed) < 0.5*3*p.X || float64(routed) > 2*3*p.X {
				t.Errorf("N = %d: routed %v over a 3 s window at %.0f tx/s", p.N, p.Routed, p.X)
			}
		} else if len(p.Routed) != 0 {
			t.Errorf("N = 1 has no router, yet routed %v", p.Routed)
		}
		// The whole machine was busy at least as much as the hosts it
		// ran, and no more than its cores.
		var hosts float64
		for _, h := range p.Hosts {
			hosts += h.Util
		}
		if p.MachineCPUs < 1 || p.MachineBusy < 0.9*hosts || p.MachineBusy > float64(p.MachineCPUs)*1.05 {
			t.Errorf("N = %d: machine busy %v of %d cores, the hosts used %v", p.N, p.MachineBusy, p.MachineCPUs, hosts)
		}
	}
	// PostgreSQL: each window began on a settled cluster (quiesce.go).
	if strings.Contains(stderr.String(), "could not settle") {
		t.Errorf("the sweep could not quiesce its clusters: %s", stderr.String())
	}
	if left := append(lab.Cgroups(cmd.Process.Pid), lab.Namespaces(cmd.Process.Pid)...); len(left) > 0 {
		t.Errorf("the sweep left %v behind", left)
	}
}
