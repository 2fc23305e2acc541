// Package lab emulates separate hosts on this one machine: every process a
// launcher starts (each node with its managed PostgreSQL, the router, the
// workload client) runs in its own cgroup, and a node's cgroup carries a
// CPU quota (cgroup v1's cpu.cfs_quota_us, or cpu.max on cgroup v2), so N
// nodes of 0.25 CPU each behave like N small hosts and scale-out becomes
// measurable on two cores. Optionally each node also gets its own network
// namespace, joined to the others by veth pairs on a bridge, with netem
// delay, jitter and loss on every link (or, where the kernel has no
// netem, by TUN devices between which the launcher forwards packets with
// that delay, jitter and loss: userlink.go). Results are emulated, and
// say so.
//
// Everything the lab creates is named tandem-lab-<launcher pid>-<host>, so
// the next lab to start removes what a launcher killed with SIGKILL left
// behind (when that pid is gone); Close removes the rest on a normal exit.
//
// It also measures the machine's memory speed, which other guests of a
// virtual machine's host move without stolen time (speed.go: a probe, and
// a hog to calibrate against).
//
// It owns cgroups, network namespaces and their statistics. It must not
// start tandem processes (package cluster does, and hands each pid to a
// Host). See DESIGN.md.
package lab

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/internal/proctree"
)

// ErrUnsupported means this machine cannot run the lab (not root, no cgroup
// cpu controller, no ip or tc, a kernel with neither netem nor TUN devices
// for a net_ field); the message says which.
var ErrUnsupported = errors.New("the lab cannot run on this machine")

// Prefix starts the name of every cgroup the lab creates.
const Prefix = "tandem-lab-"

// Host names the lab uses besides node ids.
const (
	ClientHost = "client"
	RouterHost = "router"
)

// Lab is one launcher's emulated hosts.
type Lab struct {
	Spec  config.Lab
	owner int
	ctl   *controller
	log   *slog.Logger

	mu     sync.Mutex
	hosts  []*Host
	net    *Net // nil without network namespaces
	closed bool
}

// Host is one emulated host: a cgroup and the quota it carries.
type Host struct {
	Name string  `json:"name"`
	CPU  float64 `json:"cpu"` // cores; 0: no quota
	// Cgroup is the cgroup's name under the controller's root.
	Cgroup string `json:"cgroup"`
	// Netns is the host's network namespace and Addr its address there
	// ("" when the host stays in the root namespace).
	Netns string `json:"netns,omitempty"`
	Addr  string `json:"addr,omitempty"`
	lab   *Lab
}

// Check reports why this machine cannot run a lab of spec (nil: it can).
func Check(spec config.Lab) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w: cgroups are Linux only", ErrUnsupported)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (the lab creates cgroups under /sys/fs/cgroup; run as root, or drop [lab] / --lab)", ErrUnsupported)
	}
	if _, err := findController(); err != nil {
		return err
	}
	if spec.NetnsOn() {
		return checkNet(spec.Network())
	}
	return nil
}

func selfPid() int { return os.Getpid() }

// New checks the machine, removes what dead launchers left behind, and
// returns an empty lab owned by this process.
func New(spec config.Lab, log *slog.Logger) (*Lab, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := Check(spec); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	ctl, err := findController()
	if err != nil {
		return nil, err
	}
	l := &Lab{Spec: spec, owner: os.Getpid(), ctl: ctl, log: log}
	removed, err := sweep(ctl, l.owner)
	if err != nil {
		log.Warn("lab: could not remove every leftover cgroup of an earlier lab", "err", err)
	}
	nets, err := sweepNet(l.owner)
	if err != nil {
		log.Warn("lab: could not remove every leftover namespace or link of an earlier lab", "err", err)
	}
	if len(removed)+len(nets) > 0 {
		log.Info("lab: removed leftovers of launchers that are gone", "cgroups", removed, "network", nets)
	}
	if spec.NetnsOn() {
		if l.net, err = newNet(l.owner, netSpec{delay: spec.NetDelay.Duration, jitter: spec.NetJitter.Duration, loss: spec.NetLoss}); err != nil {
			return nil, err
		}
		if l.net.sw != nil {
			log.Info("lab: links emulated in user space (TUN devices; this kernel has no netem, or "+LinksEnv+"=userspace)",
				"net_delay", spec.NetDelay.Duration, "net_jitter", spec.NetJitter.Duration, "net_loss", spec.NetLoss)
			if spec.NetDelay.Duration < time.Millisecond {
				log.Warn("lab: user-space links add about 0.2-0.3 ms to every round trip on top of net_delay (measured on a 2-core VM); below a millisecond the emulated delay is mostly that overhead: prefer a kernel with netem (sch_netem)")
			}
		}
	}
	return l, nil
}

// Net is the lab's network (nil without network namespaces).
func (l *Lab) Net() *Net { return l.net }

// Host numbers on the lab network (Net.Addr).
const (
	WitnessNum   = 10
	firstNodeNum = 11
)

// NodeNum is the lab network's host number of the i-th node (0-based).
func NodeNum(i int) int { return firstNodeNum + i }

// Isolate gives the host its own network namespace with the lab
// network's address number num (Net.Addr); without a lab network it does
// nothing. Call it before the host's process starts (Command).
func (h *Host) Isolate(num int) error {
	l := h.lab
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.net == nil || h.Netns != "" {
		return nil
	}
	ns, err := l.net.addHost(h.Name, num)
	if err != nil {
		return fmt.Errorf("lab host %s: %w", h.Name, err)
	}
	h.Netns, h.Addr = ns, l.net.Addr(num)
	return nil
}

// Command is the argv that runs exe with args on the host: inside its
// network namespace when it has one.
func (h *Host) Command(exe string, args []string) (string, []string) {
	if h.Netns == "" {
		return exe, args
	}
	return "ip", append([]string{"netns", "exec", h.Netns, exe}, args...)
}

// Sweep removes the cgroups, network namespaces and root links of labs
// whose launcher is gone (killing any process still in the cgroups) and
// returns their names.
func Sweep() ([]string, error) {
	ctl, err := findController()
	if err != nil {
		return nil, err
	}
	removed, err := sweep(ctl, os.Getpid())
	nets, nerr := sweepNet(os.Getpid())
	return append(removed, nets...), errors.Join(err, nerr)
}

// Owner is the launcher pid in the lab's names.
func (l *Lab) Owner() int { return l.owner }

// Controller describes the cgroup hierarchy in use, for messages.
func (l *Lab) Controller() string {
	if l.ctl.v2 {
		return "cgroup v2 (" + l.ctl.cpu + ", cpu.max)"
	}
	return "cgroup v1 (" + l.ctl.cpu + ", cpu.cfs_quota_us)"
}

// CgroupName is the name of host's cgroup for launcher pid owner.
func CgroupName(owner int, host string) string {
	return Prefix + strconv.Itoa(owner) + "-" + cleanName(host)
}

// cleanName keeps a host name to characters safe in a path.
func cleanName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// Host creates (or returns) the emulated host name with a quota of cpu
// cores (0: none; usage is measured either way).
func (l *Lab) Host(name string, cpu float64) (*Host, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("lab: closed")
	}
	for _, h := range l.hosts {
		if h.Name == name {
			return h, nil
		}
	}
	h := &Host{Name: name, CPU: cpu, Cgroup: CgroupName(l.owner, name), lab: l}
	if err := l.ctl.create(h.Cgroup, cpu); err != nil {
		_ = l.ctl.remove(h.Cgroup)
		return nil, fmt.Errorf("lab host %s: %w", name, err)
	}
	l.hosts = append(l.hosts, h)
	return h, nil
}

// QuotaFor is the quota of a process of kind (node, router, witness,
// client) under the lab's spec.
func (l *Lab) QuotaFor(kind string) float64 {
	switch kind {
	case "node":
		return l.Spec.CPUPerNode
	case "router":
		return l.Spec.CPURouter
	case "client":
		return l.Spec.CPUClient
	}
	return 0
}

// Hosts returns the lab's hosts in creation order.
func (l *Lab) Hosts() []*Host {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.hosts)
}

// Join moves process pid (all its threads; the children it starts later
// follow it) into the host's cgroup.
func (h *Host) Join(pid int) error {
	if err := h.lab.ctl.join(h.Cgroup, pid); err != nil {
		return fmt.Errorf("lab host %s: %w", h.Name, err)
	}
	return nil
}

// JoinTree moves process pid and every process under it into the host's
// cgroup: for a server started outside the lab (a PostgreSQL postmaster,
// pgpool-II and its children). The root moves first, so a child it forks
// meanwhile is born in the host; the children it had already are found in
// /proc after that.
func (h *Host) JoinTree(pid int) error {
	if err := h.Join(pid); err != nil {
		return err
	}
	for _, p := range proctree.Descendants(pid) {
		if err := h.lab.ctl.join(h.Cgroup, p); err != nil && proctree.State(p) != 0 {
			return fmt.Errorf("lab host %s: %w", h.Name, err)
		}
	}
	return nil
}

// Usage reads every host's cgroup statistics, by host name (a host whose
// statistics cannot be read is left out).
func (l *Lab) Usage() map[string]Usage {
	out := map[string]Usage{}
	for _, h := range l.Hosts() {
		if u, err := h.Usage(); err == nil {
			out[h.Name] = u
		}
	}
	return out
}

// Procs lists the processes in the host's cgroup.
func (h *Host) Procs() []int { return h.lab.ctl.procs(h.Cgroup) }

// Usage reads the host's CPU time and throttling so far.
func (h *Host) Usage() (Usage, error) {
	u, err := h.lab.ctl.usage(h.Cgroup)
	if err != nil {
		return u, fmt.Errorf("lab host %s: %w", h.Name, err)
	}
	return u, nil
}

// MachineCPU reads the CPU time every process of the machine has used so
// far (the root cgroup's: cpuacct.usage on cgroup v1, cpu.stat's
// usage_usec on v2), in nanoseconds of the scheduler's clock. /proc/stat's
// busy ticks are a sample taken at each timer tick, which misses much of
// the work of quota-throttled cgroups (measured here: the machine "busy"
// 0.25 cores while its cgroups used 0.35), so the lab does not use them.
func (l *Lab) MachineCPU() (time.Duration, error) { return l.ctl.machine() }

// Close removes every host: a process still in one (a managed PostgreSQL
// its node left behind) is killed, except this process, which moves back
// to the root cgroup. Close is idempotent.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	hosts := l.hosts
	l.mu.Unlock()
	var errs []error
	for _, h := range hosts {
		if err := removeCgroup(l.ctl, h.Cgroup); err != nil {
			errs = append(errs, err)
		}
	}
	if l.net != nil {
		if err := l.net.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroup empties cgroup name (SIGKILL to its processes; this
// process is moved to the root instead) and removes it.
func removeCgroup(ctl *controller, name string) error {
	self := os.Getpid()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := ctl.procs(name)
		if slices.Contains(pids, self) {
			if err := ctl.join("", self); err != nil {
				return fmt.Errorf("leave cgroup %s: %w", name, err)
			}
			continue
		}
		if len(pids) == 0 {
			if err := ctl.remove(name); err == nil || time.Now().After(deadline) {
				return err
			}
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still holds processes %v after 10 s", name, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sweep removes the cgroups of launchers other than self that are gone.
func sweep(ctl *controller, self int) ([]string, error) {
	var removed []string
	var errs []error
	for _, name := range ctl.list(Prefix) {
		pid, ok := ownerOf(name)
		if !ok || pid == self || pidAlive(pid) {
			continue
		}
		if err := removeCgroup(ctl, name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// ownerOf parses the launcher pid out of a lab name.
func ownerOf(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(s, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(num)
	return pid, err == nil && pid > 0
}

// pidAlive reports whether a process pid exists (a zombie counts as gone).
func pidAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// ReadUsage reads the statistics of cgroup name (a Host's Cgroup, also
// one of another process's lab, e.g. from cluster.json).
func ReadUsage(name string) (Usage, error) {
	ctl, err := findController()
	if err != nil {
		return Usage{}, err
	}
	return ctl.usage(name)
}

// Cgroups lists the lab cgroups of launcher owner (0: of every launcher).
func Cgroups(owner int) []string {
	ctl, err := findController()
	if err != nil {
		return nil
	}
	prefix := Prefix
	if owner > 0 {
		prefix = CgroupName(owner, "")
	}
	return ctl.list(prefix)
}

// CgroupProcs lists the processes in cgroup name.
func CgroupProcs(name string) []int {
	ctl, err := findController()
	if err != nil {
		return nil
	}
	return ctl.procs(name)
}
