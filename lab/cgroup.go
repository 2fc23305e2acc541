package lab

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CFSPeriod is the scheduler period the lab's quotas are written against
// (a quota of q cores is q*10 ms of CPU time per 10 ms), unless the quota
// would fall below the kernel's 1 ms minimum: then the period grows to
// 1 ms / q. Not the kernel's default 100 ms: a host of 0.25 CPU would run
// at full speed for 25 ms and then stall for 75, so a replica's
// acknowledgement or a read could wait 75 ms, which no small host does;
// with 10 ms a stall is at most 7.5 ms.
const CFSPeriod = 10 * time.Millisecond

// minQuota is the kernel's smallest CFS quota.
const minQuota = time.Millisecond

// Priority is the scheduler weight of a host with a quota, as a multiple
// of an ordinary process's (cpu.shares 1024 on v1, cpu.weight 100 on v2).
// A quota is a cap, not a guarantee: on a machine busy with other work a
// host of 0.25 CPU would get its fair share of the cores, maybe less than
// 0.25, and the lab would emulate slower hosts than it says. With 16 times
// an ordinary process's weight the host gets its quota ahead of unrelated
// processes (up to some 8 runnable competitors per core); the quota still
// bounds what it takes.
const Priority = 16

// period is the CFS period for a quota of cpu cores.
func period(cpu float64) time.Duration {
	p := CFSPeriod
	if need := time.Duration(float64(minQuota) / cpu); need > p {
		p = need
	}
	return p
}

// controller is the machine's CPU controller: the cgroup v1 cpu hierarchy
// (and cpuacct, co-mounted or not) or the cgroup v2 unified hierarchy.
type controller struct {
	v2   bool
	cpu  string // v1: the cpu hierarchy's mount; v2: the unified mount
	acct string // v1: the cpuacct hierarchy's mount ("" when absent)
}

// mountinfo is read from here (a test may point it elsewhere).
var mountinfo = "/proc/self/mountinfo"

// findController reads the mount table: a v1 hierarchy with the cpu
// controller wins (a controller lives in one hierarchy only; where v1 has
// it, v2's unified tree has not); else a v2 mount whose cgroup.controllers
// lists cpu.
func findController() (*controller, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read the mount table: %v", ErrUnsupported, err)
	}
	defer f.Close()
	var v1cpu, v1acct, v2 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		mnt := unescapeMount(pf[4])
		switch qf[0] {
		case "cgroup":
			opts := strings.Split(qf[2], ",")
			if slices.Contains(opts, "cpu") && v1cpu == "" {
				v1cpu = mnt
			}
			if slices.Contains(opts, "cpuacct") && v1acct == "" {
				v1acct = mnt
			}
		case "cgroup2":
			if v2 == "" {
				b, err := os.ReadFile(filepath.Join(mnt, "cgroup.controllers"))
				if err == nil && slices.Contains(strings.Fields(string(b)), "cpu") {
					v2 = mnt
				}
			}
		}
	}
	switch {
	case v1cpu != "":
		return &controller{cpu: v1cpu, acct: v1acct}, nil
	case v2 != "":
		return &controller{v2: true, cpu: v2}, nil
	}
	return nil, fmt.Errorf("%w: no cgroup cpu controller is mounted (neither cgroup v1's cpu hierarchy, e.g. /sys/fs/cgroup/cpu, nor a cgroup v2 tree whose cgroup.controllers lists cpu)", ErrUnsupported)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// dirs are the directories of cgroup name (one per hierarchy).
func (c *controller) dirs(name string) []string {
	d := []string{filepath.Join(c.cpu, name)}
	if !c.v2 && c.acct != "" && c.acct != c.cpu {
		d = append(d, filepath.Join(c.acct, name))
	}
	return d
}

// create makes cgroup name with a quota of cpu cores (0: none).
func (c *controller) create(name string, cpu float64) error {
	if c.v2 {
		// The root must hand the cpu controller down to its children.
		ctl := filepath.Join(c.cpu, "cgroup.subtree_control")
		b, _ := os.ReadFile(ctl)
		if !slices.Contains(strings.Fields(string(b)), "cpu") {
			if err := os.WriteFile(ctl, []byte("+cpu"), 0); err != nil {
				return fmt.Errorf("%w: cannot enable the cpu controller for child cgroups (%s): %v", ErrUnsupported, ctl, err)
			}
		}
	}
	for _, d := range c.dirs(name) {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			if errors.Is(err, os.ErrPermission) {
				return fmt.Errorf("%w: cannot create cgroup %s: %v (the lab needs root)", ErrUnsupported, d, err)
			}
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
	}
	if cpu <= 0 {
		return nil
	}
	per := period(cpu).Microseconds()
	quota := int64(cpu * float64(per))
	d := filepath.Join(c.cpu, name)
	if c.v2 {
		if err := writeFile(filepath.Join(d, "cpu.weight"), strconv.Itoa(100*Priority)); err != nil {
			return err
		}
		return writeFile(filepath.Join(d, "cpu.max"), fmt.Sprintf("%d %d", quota, per))
	}
	if err := writeFile(filepath.Join(d, "cpu.shares"), strconv.Itoa(1024*Priority)); err != nil {
		return err
	}
	// A new cgroup has no quota (-1), so the period can go first.
	if err := writeFile(filepath.Join(d, "cpu.cfs_period_us"), strconv.FormatInt(per, 10)); err != nil {
		return err
	}
	return writeFile(filepath.Join(d, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10))
}

// join moves pid (a whole process: every thread) into cgroup name.
func (c *controller) join(name string, pid int) error {
	for _, d := range c.dirs(name) {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// procs lists the processes in cgroup name (in any of its hierarchies).
func (c *controller) procs(name string) []int {
	var pids []int
	for _, d := range c.dirs(name) {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, p) {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

// remove deletes cgroup name's directories (they must hold no process).
func (c *controller) remove(name string) error {
	var errs []error
	for _, d := range c.dirs(name) {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// list returns the names of the cgroups directly under the hierarchies'
// roots that start with prefix.
func (c *controller) list(prefix string) []string {
	var names []string
	roots := []string{c.cpu}
	if !c.v2 && c.acct != "" && c.acct != c.cpu {
		roots = append(roots, c.acct)
	}
	for _, r := range roots {
		ents, err := os.ReadDir(r)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	return names
}

// Usage is what a cgroup's statistics say about the processes in it.
type Usage struct {
	// CPU is the CPU time used (user and system).
	CPU time.Duration `json:"cpu_ns"`
	// Periods is how many scheduler periods the cgroup ran in, Throttled
	// in how many of them it hit its quota, ThrottledTime how long its
	// threads waited for the next period.
	Periods       int64         `json:"periods"`
	Throttled     int64         `json:"throttled"`
	ThrottledTime time.Duration `json:"throttled_ns"`
}

// Sub is u minus an earlier reading.
func (u Usage) Sub(earlier Usage) Usage {
	return Usage{
		CPU:           u.CPU - earlier.CPU,
		Periods:       u.Periods - earlier.Periods,
		Throttled:     u.Throttled - earlier.Throttled,
		ThrottledTime: u.ThrottledTime - earlier.ThrottledTime,
	}
}

// usage reads cgroup name's statistics.
func (c *controller) usage(name string) (Usage, error) {
	var u Usage
	stat, err := readKV(filepath.Join(c.cpu, name, "cpu.stat"))
	if err != nil {
		return u, err
	}
	u.Periods, u.Throttled = stat["nr_periods"], stat["nr_throttled"]
	if c.v2 {
		u.CPU = time.Duration(stat["usage_usec"]) * time.Microsecond
		u.ThrottledTime = time.Duration(stat["throttled_usec"]) * time.Microsecond
		return u, nil
	}
	u.ThrottledTime = time.Duration(stat["throttled_time"]) // ns
	if c.acct == "" {
		return u, fmt.Errorf("%w: no cpuacct hierarchy is mounted: CPU time cannot be measured", ErrUnsupported)
	}
	b, err := os.ReadFile(filepath.Join(c.acct, name, "cpuacct.usage"))
	if err != nil {
		return u, fmt.Errorf("read cpu usage: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return u, fmt.Errorf("read cpu usage of %s: %w", name, err)
	}
	u.CPU = time.Duration(ns)
	return u, nil
}

// machine reads the root cgroup's CPU time: every process's.
func (c *controller) machine() (time.Duration, error) {
	if c.v2 {
		stat, err := readKV(filepath.Join(c.cpu, "cpu.stat"))
		if err != nil {
			return 0, err
		}
		v, ok := stat["usage_usec"]
		if !ok {
			return 0, fmt.Errorf("%w: the root cgroup's cpu.stat has no usage_usec", ErrUnsupported)
		}
		return time.Duration(v) * time.Microsecond, nil
	}
	if c.acct == "" {
		return 0, fmt.Errorf("%w: no cpuacct hierarchy is mounted: CPU time cannot be measured", ErrUnsupported)
	}
	b, err := os.ReadFile(filepath.Join(c.acct, "cpuacct.usage"))
	if err != nil {
		return 0, fmt.Errorf("read the machine's cpu usage: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read the machine's cpu usage: %w", err)
	}
	return time.Duration(ns), nil
}

// readKV reads a "key value" per line file (cpu.stat).
func readKV(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cgroup statistics: %w", err)
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m[f[0]] = v
			}
		}
	}
	return m, nil
}

func writeFile(path, v string) error {
	if err := os.WriteFile(path, []byte(v), 0); err != nil {
		return fmt.Errorf("write %q to %s: %w", v, path, err)
	}
	return nil
}
