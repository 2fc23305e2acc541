package lab

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tandemdb/tandem/config"
)

// TestMain doubles as a CPU burner: with TANDEM_LAB_TEST_SPIN set the test
// binary spins on every core until killed.
func TestMain(m *testing.M) {
	MaybeLinksHelper()
	if os.Getenv("TANDEM_LAB_TEST_SPIN") != "" {
		for i := 0; i < runtime.NumCPU(); i++ {
			go func() {
				for {
				}
			}()
		}
		select {}
	}
	if addr := os.Getenv("TANDEM_LAB_TEST_ECHO"); addr != "" {
		echo(addr)
		return
	}
	if addr := os.Getenv("TANDEM_LAB_TEST_PING"); addr != "" {
		d, err := pingMedian(addr, 9)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(d.Nanoseconds())
		return
	}
	os.Exit(m.Run())
}

// echo serves TCP on addr, sending back every byte it reads.
func echo(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() { _, _ = io.Copy(c, c); c.Close() }()
	}
}

// pingMedian is the median round trip of n one-byte exchanges with the
// echo server at addr.
func pingMedian(addr string, n int) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	b := []byte{1}
	var ds []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := c.Write(b); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return ds[n/2], nil
}

func TestOwnerOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"tandem-lab-123-n1", 123, true},
		{"tandem-lab-9-client", 9, true},
		{"tandem-lab-x-n1", 0, false},
		{"tandem-lab-123", 0, false},
		{"other-123-n1", 0, false},
		{"tandem-lab-0-n1", 0, false},
	} {
		pid, ok := ownerOf(tc.name)
		if pid != tc.pid || ok != tc.ok {
			t.Errorf("ownerOf(%q) = %d, %v; want %d, %v", tc.name, pid, ok, tc.pid, tc.ok)
		}
	}
	if got := CgroupName(42, "n/1 x"); got != "tandem-lab-42-n_1_x" {
		t.Errorf("CgroupName = %q", got)
	}
}

// The mount table decides the hierarchy: v1's cpu wins over a v2 tree
// without the cpu controller; cpuacct may sit in its own hierarchy.
func TestFindController(t *testing.T) {
	dir := t.TempDir()
	v2 := filepath.Join(dir, "unified")
	if err := os.MkdirAll(v2, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(lines string) {
		p := filepath.Join(dir, "mountinfo")
		if err := os.WriteFile(p, []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		mountinfo = p
	}
	t.Cleanup(func() { mountinfo = "/proc/self/mountinfo" })
	v2line := "30 20 0:26 / " + v2 + " rw,relatime - cgroup2 cgroup2 rw\n"
	for _, tc := range []struct {
		name, table, controllers string
		want                     *controller
	}{
		{"v1 separate", "25 20 0:21 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n26 20 0:22 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n" + v2line, "hugetlb",
			&controller{cpu: "/sys/fs/cgroup/cpu", acct: "/sys/fs/cgroup/cpuacct"}},
		{"v1 comounted", "25 20 0:21 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n", "",
			&controller{cpu: "/sys/fs/cgroup/cpu,cpuacct", acct: "/sys/fs/cgroup/cpu,cpuacct"}},
		{"v2 with cpu", v2line, "cpuset cpu io memory", &controller{v2: true, cpu: v2}},
		{"v2 without cpu", v2line, "memory pids", nil},
		{"escaped mount", `25 20 0:21 / /sys/fs/cgroup/my\040cpu rw - cgroup cgroup rw,cpu` + "\n", "", &controller{cpu: "/sys/fs/cgroup/my cpu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte(tc.controllers), 0o644); err != nil {
				t.Fatal(err)
			}
			write(tc.table)
			got, err := findController()
			if tc.want == nil {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("got %+v, %v; want ErrUnsupported", got, err)
				}
				return
			}
			if err != nil || *got != *tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// needRoot skips a test that creates cgroups when this machine cannot.
func needRoot(t *testing.T) {
	t.Helper()
	if err := Check(config.Lab{}); err != nil {
		t.Skipf("lab test skipped: %v", err)
	}
}

// spin starts a process that burns every core until killed.
func spin(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TANDEM_LAB_TEST_SPIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// quotaHost is a new lab (closed when the test ends) with one host n1
// under a quota of 0.25 CPU; it skips the test where that cannot be made.
func quotaHost(t *testing.T) (*Lab, *Host) {
	t.Helper()
	needRoot(t)
	l, err := New(config.Lab{CPUPerNode: 0.25}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	h, err := l.Host("n1", 0.25)
	if err != nil {
		t.Fatal(err)
	}
	return l, h
}

// A process that would use every core gets no more than its quota: its
// cgroup's CPU time over a busy interval stays at 0.25 CPU (with 15 %
// slack for the period boundaries), and the kernel reports throttling.
func TestQuotaHolds(t *testing.T) {
	l, h := quotaHost(t)
	weight, want := "cpu.shares", strconv.Itoa(1024*Priority)
	if l.ctl.v2 {
		weight, want = "cpu.weight", strconv.Itoa(100*Priority)
	}
	if b, err := os.ReadFile(filepath.Join(l.ctl.cpu, h.Cgroup, weight)); err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("%s of a host with a quota: %q, %v; want %s", weight, b, err, want)
	}
	cmd := spin(t)
	if err := h.Join(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let it settle under the quota
	u0, err := h.Usage()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(2 * time.Second)
	u1, err := h.Usage()
	if err != nil {
		t.Fatal(err)
	}
	d := u1.Sub(u0)
	used := d.CPU.Seconds() / time.Since(t0).Seconds()
	t.Logf("used %.3f CPU over %v; throttled in %d of %d periods (%v)", used, time.Since(t0).Round(time.Millisecond), d.Throttled, d.Periods, d.ThrottledTime)
	if used > 0.25*1.15 {
		t.Errorf("the process used %.3f CPU under a quota of 0.25", used)
	}
	if used < 0.05 {
		t.Errorf("the process used %.3f CPU: it did not run (is the usage read from the right cgroup?)", used)
	}
	if d.Throttled == 0 {
		t.Errorf("no throttled period while a process spins under a quota of 0.25")
	}
}

// The machine's CPU time counts every process, the lab's hosts included:
// over a window it grows by at least what a spinning host used.
func TestMachineCPU(t *testing.T) {
	l, h := quotaHost(t)
	cmd := spin(t)
	if err := h.Join(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	m0, err := l.MachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	u0, _ := h.Usage()
	time.Sleep(time.Second)
	m1, err := l.MachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	u1, _ := h.Usage()
	host := u1.Sub(u0).CPU
	t.Logf("machine %v, host %v over about a second", m1-m0, host)
	if host <= 0 || m1-m0 < host {
		t.Errorf("the machine used %v while one of its cgroups used %v", m1-m0, host)
	}
	if m1-m0 > time.Duration(runtime.NumCPU())*1100*time.Millisecond {
		t.Errorf("the machine used %v in about a second on %d CPUs", m1-m0, runtime.NumCPU())
	}
}

// Close removes every cgroup and kills what is left in them; a lab whose
// launcher died (SIGKILL: no Close) is swept by the next New.
func TestCleanup(t *testing.T) {
	needRoot(t)
	l, err := New(config.Lab{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Host("n1", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	cmd := spin(t)
	if err := h.Join(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	self, err := l.Host(ClientHost, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := self.Join(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if left := l.ctl.list(CgroupName(os.Getpid(), "")); len(left) > 0 {
		t.Errorf("after Close: cgroups %v remain", left)
	}
	_ = cmd.Wait() // killed by Close
	if cmd.ProcessState == nil || cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the process left in the cgroup was not killed: %v", cmd.ProcessState)
	}

	// A launcher gone without Close: a process of its own (a short-lived
	// child of ours stands in for it) left a cgroup with a process in it.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := CgroupName(dead.Process.Pid, "n1")
	if err := l.ctl.create(stale, 0.25); err != nil {
		t.Fatal(err)
	}
	orphan := spin(t)
	if err := l.ctl.join(stale, orphan.Process.Pid); err != nil {
		t.Fatal(err)
	}
	l2, err := New(config.Lab{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if left := l.ctl.list(stale); len(left) > 0 {
		t.Errorf("the stale cgroup %s of dead launcher %d was not swept", stale, dead.Process.Pid)
	}
	_ = orphan.Wait()
	if pidAlive(orphan.Process.Pid) {
		t.Errorf("the process in the stale cgroup survived the sweep")
	}
	// A live launcher's cgroups are not touched.
	live := CgroupName(os.Getppid(), "n1")
	if err := l.ctl.create(live, 0); err != nil {
		t.Fatal(err)
	}
	defer l.ctl.remove(live)
	if _, err := Sweep(); err != nil {
		t.Fatal(err)
	}
	if len(l.ctl.list(live)) == 0 {
		t.Errorf("the sweep removed %s, whose launcher (pid %s) is alive", live, strconv.Itoa(os.Getppid()))
	}
}

// The CFS period: 10 ms, longer where the quota would fall below the
// kernel's 1 ms.
func TestPeriod(t *testing.T) {
	for _, tc := range []struct {
		cpu  float64
		want time.Duration
	}{
		{0.25, 10 * time.Millisecond},
		{2, 10 * time.Millisecond},
		{0.1, 10 * time.Millisecond},
		{0.05, 20 * time.Millisecond},
		{0.01, 100 * time.Millisecond},
	} {
		if got := period(tc.cpu); got != tc.want {
			t.Errorf("period(%g) = %v, want %v", tc.cpu, got, tc.want)
		}
	}
}

// User-space links (for kernels without netem, forced here so that the
// test runs on either kind of kernel): a lab round trip of D makes a TCP
// exchange between the root namespace and a host, and between two hosts,
// take about D, and a lab with no delay on the same machine stays far
// below it; nothing of the network is left after Close.
func TestUserLinks(t *testing.T) {
	needRoot(t)
	const d = 30 * time.Millisecond
	t.Setenv(LinksEnv, "userspace")
	spec := config.Lab{NetDelay: config.Duration{Duration: d}}
	if err := Check(spec); err != nil {
		t.Skipf("lab network test skipped: %v", err)
	}
	l, err := New(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.Net().Links(); got != "user space" {
		t.Fatalf("links %q, want user space", got)
	}
	var hosts []*Host
	for i, name := range []string{"n1", "n2"} {
		h, err := l.Host(name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Isolate(NodeNum(i)); err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	// An echo server in n2's namespace.
	srv := net.JoinHostPort(hosts[1].Addr, "7777")
	exe, args := hosts[1].Command(os.Args[0], []string{"-test.run=^$"})
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "TANDEM_LAB_TEST_ECHO="+srv)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if _, err := io.ReadFull(out, make([]byte, len("listening"))); err != nil {
		t.Fatalf("echo server in %s: %v", hosts[1].Netns, err)
	}
	check := func(from string, rtt time.Duration) {
		t.Logf("round trip from %s to n2: %v (lab round trip %v)", from, rtt, d)
		if rtt < d*8/10 || rtt > 3*d {
			t.Errorf("round trip from %s to n2 took %v; the lab's links should make it about %v", from, rtt, d)
		}
	}
	rtt, err := pingMedian(srv, 9)
	if err != nil {
		t.Fatalf("from the root namespace: %v", err)
	}
	check("the root namespace", rtt)
	exe, args = hosts[0].Command(os.Args[0], []string{"-test.run=^$"})
	ping := exec.Command(exe, args...)
	ping.Env = append(os.Environ(), "TANDEM_LAB_TEST_PING="+srv)
	b, err := ping.Output()
	if err != nil {
		t.Fatalf("from n1's namespace: %v", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("from n1's namespace: %q", b)
	}
	check("n1's namespace", time.Duration(ns))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if left := append(Namespaces(l.Owner()), RootLinks(l.Owner())...); len(left) > 0 {
		t.Errorf("after Close, %v remain", left)
	}
}

// One crossing of a user-space link draws its delay within half the round
// trip plus or minus half the jitter, and loses about the loss asked for
// (netem's per-egress semantics; a round trip crosses twice).
func TestLinkDraws(t *testing.T) {
	for _, tc := range []struct {
		name           string
		spec           netSpec
		lo, hi         time.Duration
		lossLo, lossHi float64 // share of 100,000 draws, percent
	}{
		{"delay only", netSpec{delay: 2 * time.Millisecond}, time.Millisecond, time.Millisecond, 0, 0},
		{"jitter", netSpec{delay: 2 * time.Millisecond, jitter: time.Millisecond}, 500 * time.Microsecond, 1500 * time.Microsecond, 0, 0},
		{"jitter past zero", netSpec{delay: 200 * time.Microsecond, jitter: time.Millisecond}, 0, 600 * time.Microsecond, 0, 0},
		{"loss 5 %", netSpec{loss: 5}, 0, 0, 4.7, 5.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &switchboard{spec: tc.spec, rng: rand.New(rand.NewPCG(1, 2))}
			lost := 0
			minD, maxD := time.Hour, time.Duration(-1)
			const n = 100000
			for range n {
				d := s.oneWay()
				minD, maxD = min(minD, d), max(maxD, d)
				if s.lose() {
					lost++
				}
			}
			if minD < tc.lo || maxD > tc.hi {
				t.Errorf("delays in [%v, %v], want within [%v, %v]", minD, maxD, tc.lo, tc.hi)
			}
			if tc.spec.jitter > 0 && maxD-minD < (tc.hi-tc.lo)*9/10 {
				t.Errorf("delays in [%v, %v] do not spread over [%v, %v]", minD, maxD, tc.lo, tc.hi)
			}
			if pct := 100 * float64(lost) / n; pct < tc.lossLo || pct > tc.lossHi {
				t.Errorf("lost %.2f %%, want %.1f-%.1f %%", pct, tc.lossLo, tc.lossHi)
			}
		})
	}
}
