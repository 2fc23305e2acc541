package profiler

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrProc reports /proc or /sys content that could not be read or parsed.
var ErrProc = errors.New("cannot read process accounting")

// ClockTicks is USER_HZ, the unit of the times in /proc/PID/stat and
// /proc/stat. Linux reports them in 1/100 s on every architecture tandem
// builds for, whatever the kernel's internal HZ.
const ClockTicks = 100

// ProcFS reads process and device accounting below Proc (normally "/proc")
// and Sys (normally "/sys"); tests point them at fixture trees.
type ProcFS struct {
	Proc string
	Sys  string
}

// HostFS is the running system's /proc and /sys.
var HostFS = ProcFS{Proc: "/proc", Sys: "/sys"}

func (p ProcFS) path(elem ...string) string {
	return filepath.Join(append([]string{p.Proc}, elem...)...)
}

// ProcStat is the part of /proc/PID/stat the profiler uses. Times are in
// clock ticks (ClockTicks per second).
type ProcStat struct {
	PID   int
	Comm  string
	State byte
	PPID  int
	// UTime and STime are the process's own user and system time; CUTime
	// and CSTime the times of its children that have exited and been
	// waited for (and, recursively, their children).
	UTime, STime, CUTime, CSTime uint64
	// StartTime is when the process started, ticks after boot; with PID it
	// identifies a process across snapshots.
	StartTime uint64
}

// Ticks is the CPU time of the process and of its reaped children.
func (s ProcStat) Ticks() uint64 { return s.UTime + s.STime + s.CUTime + s.CSTime }

// ParseStat parses one /proc/PID/stat line (proc(5)). The command name may
// contain spaces and parentheses, so fields are counted from the last ')'.
func ParseStat(b []byte) (ProcStat, error) {
	var s ProcStat
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 1 || closing < open {
		return s, fmt.Errorf("%w: stat line %.60q: no (comm)", ErrProc, b)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return s, fmt.Errorf("%w: stat line %.60q: bad pid", ErrProc, b)
	}
	s.PID = pid
	s.Comm = string(b[open+1 : closing])
	f := strings.Fields(string(b[closing+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 20 {
		return s, fmt.Errorf("%w: stat of pid %d: %d fields after comm, want at least 20", ErrProc, pid, len(f))
	}
	s.State = f[0][0]
	if s.PPID, err = strconv.Atoi(f[1]); err != nil {
		return s, fmt.Errorf("%w: stat of pid %d: ppid %q", ErrProc, pid, f[1])
	}
	for i, dst := range []*uint64{&s.UTime, &s.STime, &s.CUTime, &s.CSTime} {
		field := f[11+i] // fields 14..17
		v, err := strconv.ParseInt(field, 10, 64)
		if err != nil || v < 0 {
			return s, fmt.Errorf("%w: stat of pid %d: field %d %q is not a tick count", ErrProc, pid, 14+i, field)
		}
		*dst = uint64(v)
	}
	if s.StartTime, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return s, fmt.Errorf("%w: stat of pid %d: starttime %q", ErrProc, pid, f[19])
	}
	return s, nil
}

// Stat reads /proc/PID/stat.
func (p ProcFS) Stat(pid int) (ProcStat, error) {
	b, err := os.ReadFile(p.path(strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcStat{}, fmt.Errorf("%w: %w", ErrProc, err)
	}
	return ParseStat(b)
}

// AllStats reads the stat of every process. Processes that exit while it
// runs are skipped.
func (p ProcFS) AllStats() (map[int]ProcStat, error) {
	ents, err := os.ReadDir(p.Proc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProc, err)
	}
	out := make(map[int]ProcStat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		s, err := p.Stat(pid)
		if err != nil {
			continue // exited since ReadDir (ENOENT, ESRCH)
		}
		out[pid] = s
	}
	return out, nil
}

// Descendants returns root and every process descending from it in all
// (by PPID), root first, then breadth first, each level sorted by PID.
func Descendants(all map[int]ProcStat, root int) []int {
	children := map[int][]int{}
	for pid, s := range all {
		if pid != root {
			children[s.PPID] = append(children[s.PPID], pid)
		}
	}
	out := []int{root}
	seen := map[int]bool{root: true}
	for i := 0; i < len(out); i++ {
		kids := children[out[i]]
		slices.Sort(kids)
		for _, k := range kids {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// ProcIO is the part of /proc/PID/io the profiler uses: bytes the process
// (and its reaped children) made the block layer read and write.
type ProcIO struct {
	ReadBytes, WriteBytes, CancelledWriteBytes uint64
}

// ParseIO parses /proc/PID/io.
func ParseIO(r io.Reader) (ProcIO, error) {
	var out ProcIO
	found := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch strings.TrimSpace(k) {
		case "read_bytes":
			dst = &out.ReadBytes
		case "write_bytes":
			dst = &out.WriteBytes
		case "cancelled_write_bytes":
			dst = &out.CancelledWriteBytes
		default:
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return out, fmt.Errorf("%w: io %s: %q", ErrProc, k, v)
		}
		*dst = n
		found++
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%w: %w", ErrProc, err)
	}
	if found < 2 {
		return out, fmt.Errorf("%w: io accounting without read_bytes/write_bytes", ErrProc)
	}
	return out, nil
}

// IO reads /proc/PID/io (readable by the process's owner and root only).
func (p ProcFS) IO(pid int) (ProcIO, error) {
	f, err := os.Open(p.path(strconv.Itoa(pid), "io"))
	if err != nil {
		return ProcIO{}, fmt.Errorf("%w: %w", ErrProc, err)
	}
	defer f.Close()
	return ParseIO(f)
}

// TreeUsage is the accumulated resource use of a process tree at one instant.
// Because a parent's cutime/cstime and its /proc/PID/io include the children
// it has reaped, the sum over the live tree also covers every process of the
// tree that has exited since (PostgreSQL's postmaster reaps its backends), so
// the difference of two snapshots is the tree's use in between.
type TreeUsage struct {
	// Ticks is utime+stime+cutime+cstime summed over the tree.
	Ticks uint64
	// Processes is the number of live processes in the tree.
	Processes int
	// SenderTicks is the part of Ticks spent by the tree's WAL senders
	// (IsWALSender): a primary's cost of streaming to its replicas.
	SenderTicks uint64
	// IO sums /proc/PID/io over the tree; IOErrors counts processes whose io
	// file could not be read (permissions).
	IO       ProcIO
	IOErrors int
}

// Tree snapshots the accumulated CPU and I/O of root and its descendants.
func (p ProcFS) Tree(root int) (TreeUsage, error) {
	all, err := p.AllStats()
	if err != nil {
		return TreeUsage{}, err
	}
	if _, ok := all[root]; !ok {
		return TreeUsage{}, fmt.Errorf("%w: process %d does not exist (has the server stopped?)", ErrProc, root)
	}
	var u TreeUsage
	for _, pid := range Descendants(all, root) {
		u.Ticks += all[pid].Ticks()
		u.Processes++
		if pid != root {
			if b, err := os.ReadFile(p.path(strconv.Itoa(pid), "cmdline")); err == nil && IsWALSender(b) {
				u.SenderTicks += all[pid].Ticks()
			}
		}
		io, err := p.IO(pid)
		if err != nil {
			u.IOErrors++
			continue
		}
		u.IO.ReadBytes += io.ReadBytes
		u.IO.WriteBytes += io.WriteBytes
		u.IO.CancelledWriteBytes += io.CancelledWriteBytes
	}
	return u, nil
}

// IsClientBackend reports whether a PostgreSQL process title (its
// /proc/PID/cmdline, which the server rewrites) is a client backend's:
// "postgres: USER DB HOST(PORT) STATE" or "postgres: USER DB [local] STATE".
func IsClientBackend(cmdline []byte) bool {
	title := string(bytes.TrimRight(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), " "))
	if !strings.HasPrefix(title, "postgres: ") || IsWALSender(cmdline) {
		return false // the postmaster keeps its command line; a WAL sender is a replica's
	}
	if strings.Contains(title, "[local]") {
		return true
	}
	open := strings.LastIndexByte(title, '(')
	if open < 0 {
		return false
	}
	closing := strings.IndexByte(title[open:], ')')
	if closing < 2 {
		return false
	}
	_, err := strconv.Atoi(title[open+1 : open+closing])
	return err == nil
}

// CountTitles counts root's descendants whose process title
// (/proc/PID/cmdline) satisfies match; ok is false when no title could be
// read.
func (p ProcFS) CountTitles(root int, match func(cmdline []byte) bool) (n int, ok bool) {
	all, err := p.AllStats()
	if err != nil {
		return 0, false
	}
	for _, pid := range Descendants(all, root) {
		b, err := os.ReadFile(p.path(strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue
		}
		ok = true
		if match(b) {
			n++
		}
	}
	return n, ok
}

// ClientBackends counts the client backends among root's descendants.
func (p ProcFS) ClientBackends(root int) (n int, ok bool) {
	return p.CountTitles(root, IsClientBackend)
}

// IsWALSender reports whether a process title is a WAL sender's
// ("postgres: walsender USER HOST(PORT) STATE ..."): a primary's process
// streaming its WAL to one replica (or serving a base backup).
func IsWALSender(cmdline []byte) bool {
	return bytes.HasPrefix(cmdline, []byte("postgres: walsender "))
}

// IsAutovacuumWorker reports whether a process title is an autovacuum
// worker's.
func IsAutovacuumWorker(cmdline []byte) bool {
	return bytes.HasPrefix(cmdline, []byte("postgres: autovacuum worker"))
}

// SelfTicks is the CPU time of this process so far (utime+stime, ticks).
func (p ProcFS) SelfTicks() (uint64, error) {
	b, err := os.ReadFile(p.path("self", "stat"))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrProc, err)
	}
	s, err := ParseStat(b)
	if err != nil {
		return 0, err
	}
	return s.UTime + s.STime, nil
}

// DiskStat is one line of /proc/diskstats (Documentation/admin-guide/iostats).
type DiskStat struct {
	Major, Minor   int
	Name           string
	Reads          uint64 // field 1: reads completed
	SectorsRead    uint64 // field 3 (512-byte sectors)
	Writes         uint64 // field 5: writes completed
	SectorsWritten uint64 // field 7
	// IOTicksMs is field 10, "time spent doing I/Os" (ms): wall-clock time
	// during which at least one request was in flight, the device's busy
	// time.
	IOTicksMs uint64
}

// ParseDiskstats parses /proc/diskstats.
func ParseDiskstats(r io.Reader) ([]DiskStat, error) {
	var out []DiskStat
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 14 {
			return nil, fmt.Errorf("%w: diskstats line %d: %d fields, want at least 14", ErrProc, line, len(f))
		}
		var d DiskStat
		var err error
		if d.Major, err = strconv.Atoi(f[0]); err != nil {
			return nil, fmt.Errorf("%w: diskstats line %d: major %q", ErrProc, line, f[0])
		}
		if d.Minor, err = strconv.Atoi(f[1]); err != nil {
			return nil, fmt.Errorf("%w: diskstats line %d: minor %q", ErrProc, line, f[1])
		}
		d.Name = f[2]
		for _, c := range []struct {
			field int
			dst   *uint64
		}{{1, &d.Reads}, {3, &d.SectorsRead}, {5, &d.Writes}, {7, &d.SectorsWritten}, {10, &d.IOTicksMs}} {
			v, err := strconv.ParseUint(f[2+c.field], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: diskstats line %d (%s): field %d %q", ErrProc, line, d.Name, c.field, f[2+c.field])
			}
			*c.dst = v
		}
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProc, err)
	}
	return out, nil
}

// Diskstats reads /proc/diskstats.
func (p ProcFS) Diskstats() ([]DiskStat, error) {
	f, err := os.Open(p.path("diskstats"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProc, err)
	}
	defer f.Close()
	return ParseDiskstats(f)
}

// HostCPU is the first ("cpu") line of /proc/stat, in ticks summed over all
// CPUs.
type HostCPU struct {
	// Busy is user+nice+system+irq+softirq (guest time is inside user).
	Busy uint64
	// Idle is idle+iowait.
	Idle uint64
	// Steal is time the hypervisor ran something else while this guest
	// wanted to run.
	Steal uint64
}

// Total is all accounted time.
func (h HostCPU) Total() uint64 { return h.Busy + h.Idle + h.Steal }

// ParseProcStatCPU parses the aggregate cpu line of /proc/stat.
func ParseProcStatCPU(r io.Reader) (HostCPU, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return HostCPU{}, fmt.Errorf("%w: /proc/stat cpu line has %d fields", ErrProc, len(f))
		}
		v := make([]uint64, 8)
		for i := 0; i < 8 && i+1 < len(f); i++ {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return HostCPU{}, fmt.Errorf("%w: /proc/stat cpu field %d %q", ErrProc, i+1, f[i+1])
			}
			v[i] = n
		}
		// user nice system idle iowait irq softirq steal
		return HostCPU{Busy: v[0] + v[1] + v[2] + v[5] + v[6], Idle: v[3] + v[4], Steal: v[7]}, nil
	}
	if err := sc.Err(); err != nil {
		return HostCPU{}, fmt.Errorf("%w: %w", ErrProc, err)
	}
	return HostCPU{}, fmt.Errorf("%w: /proc/stat has no cpu line", ErrProc)
}

// HostCPU reads /proc/stat.
func (p ProcFS) HostCPU() (HostCPU, error) {
	f, err := os.Open(p.path("stat"))
	if err != nil {
		return HostCPU{}, fmt.Errorf("%w: %w", ErrProc, err)
	}
	defer f.Close()
	return ParseProcStatCPU(f)
}

// ParseCPUList parses a CPU list such as "0-3,8,10-11" (Cpus_allowed_list)
// and returns how many CPUs it names.
func ParseCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("%w: cpu list %q", ErrProc, s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("%w: cpu list %q", ErrProc, s)
			}
		}
		n += b - a + 1
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: empty cpu list %q", ErrProc, s)
	}
	return n, nil
}

// CPUsOf returns how many CPUs process pid can use: the CPUs its affinity
// mask allows, capped by a CFS quota of its cgroup (v2 cpu.max or v1
// cpu.cfs_quota_us) when there is one. how says which limit applied.
func (p ProcFS) CPUsOf(pid int) (cpus float64, how string, err error) {
	b, err := os.ReadFile(p.path(strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, "", fmt.Errorf("%w: %w", ErrProc, err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			if n, err = ParseCPUList(v); err != nil {
				return 0, "", err
			}
		}
	}
	if n == 0 {
		return 0, "", fmt.Errorf("%w: /proc/%d/status has no Cpus_allowed_list", ErrProc, pid)
	}
	cpus, how = float64(n), fmt.Sprintf("%d CPUs in its affinity mask", n)
	if q, _, ok := p.cgroupQuota(pid); ok && q < cpus {
		cpus, how = q, fmt.Sprintf("cgroup CPU quota of %.2f CPUs (affinity mask: %d)", q, n)
	}
	return cpus, how, nil
}

// Throttling is a cgroup's CFS bandwidth counters (its cpu.stat): the
// scheduler periods in which it had threads to run, and in how many of
// them it used up its quota and was held back until the next.
type Throttling struct {
	Periods   uint64
	Throttled uint64
}

// ThrottlingOf reads the counters of the cgroup whose quota limits pid
// (the tightest on its path, the one CPUsOf reports); ok is false when no
// quota limits it or its cpu.stat cannot be read.
func (p ProcFS) ThrottlingOf(pid int) (Throttling, bool) {
	_, dir, ok := p.cgroupQuota(pid)
	if !ok {
		return Throttling{}, false
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return Throttling{}, false
	}
	var t Throttling
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "nr_periods":
			t.Periods, seen = v, seen+1
		case "nr_throttled":
			t.Throttled, seen = v, seen+1
		}
	}
	return t, seen == 2
}

// cgroupQuota returns the tightest CFS quota, in CPUs, on pid's cgroup
// path, and the directory of the cgroup that sets it.
func (p ProcFS) cgroupQuota(pid int) (float64, string, bool) {
	b, err := os.ReadFile(p.path(strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return 0, "", false
	}
	best, bestDir, found := math.Inf(1), "", false
	consider := func(q float64, dir string) {
		if q > 0 && q < best {
			best, bestDir, found = q, dir, true
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls, cg := parts[1], parts[2]
		if ctrls == "" { // v2 unified hierarchy
			for dir := cg; ; dir = filepath.Dir(dir) {
				base := filepath.Join(p.Sys, "fs/cgroup", dir)
				if raw, err := os.ReadFile(filepath.Join(base, "cpu.max")); err == nil {
					f := strings.Fields(string(raw))
					if len(f) == 2 && f[0] != "max" {
						q, e1 := strconv.ParseFloat(f[0], 64)
						per, e2 := strconv.ParseFloat(f[1], 64)
						if e1 == nil && e2 == nil && per > 0 {
							consider(q/per, base)
						}
					}
				}
				if dir == "/" || dir == "." {
					break
				}
			}
			continue
		}
		if !slices.Contains(strings.Split(ctrls, ","), "cpu") {
			continue
		}
		for _, mount := range []string{ctrls, "cpu", "cpu,cpuacct"} {
			base := filepath.Join(p.Sys, "fs/cgroup", mount, cg)
			qb, e1 := os.ReadFile(filepath.Join(base, "cpu.cfs_quota_us"))
			pb, e2 := os.ReadFile(filepath.Join(base, "cpu.cfs_period_us"))
			if e1 != nil || e2 != nil {
				continue
			}
			q, e1 := strconv.ParseFloat(strings.TrimSpace(string(qb)), 64)
			per, e2 := strconv.ParseFloat(strings.TrimSpace(string(pb)), 64)
			if e1 == nil && e2 == nil && per > 0 {
				consider(q/per, base)
			}
			break
		}
	}
	return best, bestDir, found
}
