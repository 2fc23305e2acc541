package profiler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// statLine builds a /proc/PID/stat line with the given times (fields 14-17)
// and starttime (field 22); the other fields are what a real line holds.
func statLine(pid int, comm string, ppid int, ut, st, cut, cst uint64) string {
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 1043 25 0 0 %d %d %d %d 20 0 1 0 %d 224309248 5018 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0",
		pid, comm, ppid, ppid, ppid, ut, st, cut, cst, 1000+pid)
}

func TestParseStat(t *testing.T) {
	// A real line of a PostgreSQL backend: the comm is truncated to 15
	// characters; spaces and parentheses in it must not shift the fields.
	line := "4739 (postgres: walw) S 4626 4626 4626 0 -1 4194368 157 0 0 0 12 34 5 6 20 0 1 0 1186 224309248 1234 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n"
	s, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := ProcStat{PID: 4739, Comm: "postgres: walw", State: 'S', PPID: 4626, UTime: 12, STime: 34, CUTime: 5, CSTime: 6, StartTime: 1186}
	if s != want {
		t.Fatalf("ParseStat = %+v\nwant %+v", s, want)
	}
	if s.Ticks() != 57 {
		t.Errorf("Ticks = %d, want 57", s.Ticks())
	}
	tricky, err := ParseStat([]byte(statLine(7, "a) (b ) c", 1, 1, 2, 3, 4)))
	if err != nil || tricky.Comm != "a) (b ) c" || tricky.PPID != 1 || tricky.CSTime != 4 {
		t.Fatalf("comm with parentheses: %+v %v", tricky, err)
	}
	for _, bad := range []string{"", "12 no comm", "x (a) S 1", "5 (a) S 1 2 3", "5 (a) S 1 1 1 0 -1 0 0 0 0 0 -7 1 1 1 20 0 1 0 9"} {
		if _, err := ParseStat([]byte(bad)); !errors.Is(err, ErrProc) {
			t.Errorf("ParseStat(%q): err %v, want ErrProc", bad, err)
		}
	}
}

func TestDescendants(t *testing.T) {
	all := map[int]ProcStat{
		1:   {PID: 1, PPID: 0},
		100: {PID: 100, PPID: 1}, // postmaster
		103: {PID: 103, PPID: 100},
		101: {PID: 101, PPID: 100},
		110: {PID: 110, PPID: 103}, // grandchild
		200: {PID: 200, PPID: 1},   // unrelated
		201: {PID: 201, PPID: 200},
	}
	if got, want := Descendants(all, 100), []int{100, 101, 103, 110}; !reflect.DeepEqual(got, want) {
		t.Errorf("Descendants(100) = %v, want %v", got, want)
	}
	if got := Descendants(all, 110); !reflect.DeepEqual(got, []int{110}) {
		t.Errorf("Descendants(leaf) = %v", got)
	}
	if got := RootsAmong(all, []int{101, 100, 201}); !reflect.DeepEqual(got, []int{100, 201}) {
		t.Errorf("RootsAmong = %v, want [100 201]", got)
	}
	// A holder that exited before the process table was read is no root.
	if got := RootsAmong(all, []int{100, 999}); !reflect.DeepEqual(got, []int{100}) {
		t.Errorf("RootsAmong with a vanished pid = %v, want [100]", got)
	}
}

const diskstatsFixture = `   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 83425 11102 3984122 46672 362037 68930 16210336 127210 0 43740 189002 55273 40 7614048 6739 123652 8379
 254       1 vda1 80000 11000 3900000 46000 360000 68000 16200000 127000 0 43000 188000
   8       0 sda 10 0 80 5 20 0 160 30 1 42 35 0 0 0 0
 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
`

func TestParseDiskstats(t *testing.T) {
	ds, err := ParseDiskstats(strings.NewReader(diskstatsFixture))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 5 {
		t.Fatalf("%d devices, want 5", len(ds))
	}
	want := DiskStat{Major: 254, Minor: 0, Name: "vda", Reads: 83425, SectorsRead: 3984122, Writes: 362037, SectorsWritten: 16210336, IOTicksMs: 43740}
	if ds[1] != want {
		t.Errorf("vda = %+v\nwant %+v", ds[1], want)
	}
	if ds[2].Name != "vda1" || ds[2].IOTicksMs != 43000 {
		t.Errorf("11-field (old kernel) partition line: %+v", ds[2])
	}
	if ds[3].IOTicksMs != 42 || ds[3].SectorsWritten != 160 {
		t.Errorf("sda = %+v", ds[3])
	}
	for _, bad := range []string{"254 0 vda 1 2 3", "x 0 vda 1 2 3 4 5 6 7 8 9 10 11", "254 0 vda 1 2 3 4 5 6 7 8 9 ten 11"} {
		if _, err := ParseDiskstats(strings.NewReader(bad)); !errors.Is(err, ErrProc) {
			t.Errorf("ParseDiskstats(%q): err %v, want ErrProc", bad, err)
		}
	}
}

func TestParseIOAndHostCPU(t *testing.T) {
	io, err := ParseIO(strings.NewReader("rchar: 414417218\nwchar: 513207378\nsyscr: 51809\nsyscw: 41105\nread_bytes: 4096\nwrite_bytes: 389451776\ncancelled_write_bytes: 20115456\n"))
	if err != nil || io != (ProcIO{ReadBytes: 4096, WriteBytes: 389451776, CancelledWriteBytes: 20115456}) {
		t.Fatalf("ParseIO = %+v, %v", io, err)
	}
	if _, err := ParseIO(strings.NewReader("rchar: 1\n")); !errors.Is(err, ErrProc) {
		t.Errorf("io without byte counts: err %v", err)
	}
	h, err := ParseProcStatCPU(strings.NewReader("cpu  174792 75 63914 84834 1000 0 12207 629 0 0\ncpu0 87369 28 30804 44337 188 0 5807 260 0 0\nintr 1 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (HostCPU{Busy: 174792 + 75 + 63914 + 12207, Idle: 84834 + 1000, Steal: 629}); h != want {
		t.Errorf("ParseProcStatCPU = %+v, want %+v", h, want)
	}
	if h.Total() != 174792+75+63914+84834+1000+12207+629 {
		t.Errorf("Total = %d", h.Total())
	}
	if _, err := ParseProcStatCPU(strings.NewReader("intr 1\n")); !errors.Is(err, ErrProc) {
		t.Errorf("no cpu line: err %v", err)
	}
	for s, want := range map[string]int{"0-1": 2, "0": 1, "0-3,8,10-11\n": 7} {
		if n, err := ParseCPUList(s); err != nil || n != want {
			t.Errorf("ParseCPUList(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	for _, bad := range []string{"", "3-1", "a"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
}

func TestParseNetSockets(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   101        0 105952 1 0000000050052728 100 0 0 10 0
   1: 0100007F:1538 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000   101        0 105990 1 0000000050052728 20 4 30 10 -1
   2: 00000000:D888 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 24177 1 00000000f71b1f18 100 0 0 10 0
`
	socks, err := ParseNetTCP(strings.NewReader(tcp))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Socket{{Port: 5432, Inode: 105952}, {Port: 55432, Inode: 24177}}; !reflect.DeepEqual(socks, want) {
		t.Errorf("ParseNetTCP = %+v, want listening sockets only %+v", socks, want)
	}
	unix := `Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 105953 /tmp/.s.PGSQL.5432
0000000000000000: 00000003 00000000 00000000 0001 03 105991
0000000000000000: 00000003 00000000 00000000 0001 03 105995 /tmp/.s.PGSQL.5432
`
	us, err := ParseNetUnix(strings.NewReader(unix))
	if err != nil || !reflect.DeepEqual(us, []Socket{{Path: "/tmp/.s.PGSQL.5432", Inode: 105953}}) {
		t.Errorf("ParseNetUnix = %+v, %v", us, err)
	}
}

// fixtureProc writes a fake /proc: a postmaster (100) with two children and
// a grandchild, an unrelated process (200), /proc/self, diskstats, stat and
// the TCP socket table, with the postmaster holding the listening socket.
func fixtureProc(t *testing.T) ProcFS {
	t.Helper()
	root := t.TempDir()
	proc, sys := filepath.Join(root, "proc"), filepath.Join(root, "sys")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	procs := []struct {
		pid, ppid         int
		comm              string
		ut, st, cut, cst  uint64
		readB, writeB, cb uint64
	}{
		{100, 1, "postgres", 10, 5, 300, 100, 4096, 100000, 1000},
		{101, 100, "postgres", 50, 20, 0, 0, 0, 8192, 0},
		{102, 100, "postgres", 7, 3, 0, 0, 0, 0, 0},
		{110, 102, "postgres", 1, 1, 0, 0, 512, 0, 0},
		{200, 1, "bash", 999, 999, 999, 999, 1, 1, 0},
	}
	for _, p := range procs {
		dir := filepath.Join(proc, fmt.Sprint(p.pid))
		write(filepath.Join(dir, "stat"), statLine(p.pid, p.comm, p.ppid, p.ut, p.st, p.cut, p.cst)+"\n")
		write(filepath.Join(dir, "io"), fmt.Sprintf("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: %d\nwrite_bytes: %d\ncancelled_write_bytes: %d\n", p.readB, p.writeB, p.cb))
		if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// 101 is a WAL sender (its title, as the server rewrites it).
	write(filepath.Join(proc, "101", "cmdline"), "postgres: walsender tandem_repl 127.0.0.1(40112) streaming 0/3000148\x00\x00")
	write(filepath.Join(proc, "102", "cmdline"), "postgres: tandem tandem [local] idle\x00")
	write(filepath.Join(proc, "self", "stat"), statLine(300, "tandem", 1, 40, 2, 0, 0)+"\n")
	write(filepath.Join(proc, "diskstats"), diskstatsFixture)
	write(filepath.Join(proc, "stat"), "cpu  100 0 50 800 10 0 5 3 0 0\n")
	write(filepath.Join(proc, "net", "tcp"), `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   101        0 105952 1 0000000050052728 100 0 0 10 0
`)
	write(filepath.Join(proc, "100", "status"), "Name:\tpostgres\nCpus_allowed:\tf\nCpus_allowed_list:\t0-3\n")
	write(filepath.Join(proc, "100", "cgroup"), "0::/db.slice/pg\n")
	write(filepath.Join(sys, "fs", "cgroup", "db.slice", "cpu.max"), "150000 100000\n")
	write(filepath.Join(sys, "fs", "cgroup", "db.slice", "pg", "cpu.max"), "max 100000\n")
	write(filepath.Join(sys, "fs", "cgroup", "db.slice", "cpu.stat"), "usage_usec 900\nnr_periods 3001\nnr_throttled 2961\nthrottled_usec 77\n")
	write(filepath.Join(sys, "fs", "cgroup", "db.slice", "pg", "cpu.stat"), "usage_usec 800\nnr_periods 5\nnr_throttled 0\n")
	write(filepath.Join(sys, "class", "block", "vda1", "partition"), "1\n")
	for _, l := range []struct{ pid, fd int }{{100, 3}, {100, 5}, {200, 4}} {
		target := "pipe:[777]"
		if l.fd == 5 {
			target = "socket:[105952]"
		}
		if err := os.Symlink(target, filepath.Join(proc, fmt.Sprint(l.pid), "fd", fmt.Sprint(l.fd))); err != nil {
			t.Fatal(err)
		}
	}
	return ProcFS{Proc: proc, Sys: sys}
}

func TestIsClientBackend(t *testing.T) {
	for title, want := range map[string]bool{
		"postgres: postgres postgres 127.0.0.1(38214) idle\x00\x00":     true,
		"postgres: app shop [local] SELECT":                             true,
		"postgres: bob db ::1(5000) UPDATE waiting":                     true,
		"postgres: checkpointer ":                                       false,
		"postgres: autovacuum worker tm1":                               false,
		"postgres: parallel worker for PID 12":                          false,
		"postgres: walsender repl 127.0.0.1(40112) streaming 0/3000148": false,
		"/usr/lib/postgresql/15/bin/postgres\x00-D\x00/tmp/pg(1)\x00":   false,
	} {
		if got := IsClientBackend([]byte(title)); got != want {
			t.Errorf("IsClientBackend(%q) = %v, want %v", title, got, want)
		}
	}
	if !IsAutovacuumWorker([]byte("postgres: autovacuum worker postgres\x00")) || IsAutovacuumWorker([]byte("postgres: autovacuum launcher")) {
		t.Error("IsAutovacuumWorker")
	}
}

func TestFixtureTree(t *testing.T) {
	fs := fixtureProc(t)
	u, err := fs.Tree(100)
	if err != nil {
		t.Fatal(err)
	}
	// Own and reaped-children times of 100, 101, 102 and 110; not 200's.
	if want := uint64(10 + 5 + 300 + 100 + 50 + 20 + 7 + 3 + 1 + 1); u.Ticks != want {
		t.Errorf("tree ticks = %d, want %d", u.Ticks, want)
	}
	if u.SenderTicks != 50+20 {
		t.Errorf("WAL sender ticks = %d, want 70 (process 101's)", u.SenderTicks)
	}
	if u.Processes != 4 || u.IOErrors != 0 {
		t.Errorf("processes %d, io errors %d", u.Processes, u.IOErrors)
	}
	if want := (ProcIO{ReadBytes: 4096 + 512, WriteBytes: 100000 + 8192, CancelledWriteBytes: 1000}); u.IO != want {
		t.Errorf("tree io = %+v, want %+v", u.IO, want)
	}
	if _, err := fs.Tree(999); !errors.Is(err, ErrProc) {
		t.Errorf("Tree of a missing pid: %v", err)
	}
	self, err := fs.SelfTicks()
	if err != nil || self != 42 {
		t.Errorf("SelfTicks = %d, %v", self, err)
	}
	h, err := fs.HostCPU()
	if err != nil || h.Busy != 155 || h.Steal != 3 {
		t.Errorf("HostCPU = %+v, %v", h, err)
	}
	cpus, how, err := fs.CPUsOf(100)
	if err != nil || cpus != 1.5 || !strings.Contains(how, "quota") {
		t.Errorf("CPUsOf = %g (%s), %v; want the parent cgroup's 1.5 CPU quota", cpus, how, err)
	}
	// The counters are the cgroup's whose quota applies, not the leaf's.
	if th, ok := fs.ThrottlingOf(100); !ok || th != (Throttling{Periods: 3001, Throttled: 2961}) {
		t.Errorf("ThrottlingOf = %+v %v, want the parent's 2961 of 3001 periods", th, ok)
	}
	if _, ok := fs.ThrottlingOf(200); ok {
		t.Error("ThrottlingOf a process without a cgroup file reported counters")
	}
	ds, err := fs.Diskstats()
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.PhysicalDisks(ds); !reflect.DeepEqual(got, []string{"vda", "sda"}) {
		t.Errorf("PhysicalDisks = %v, want [vda sda] (no loop, zram or partition)", got)
	}
}

func TestFixtureFindServer(t *testing.T) {
	fs := fixtureProc(t)
	pid, err := fs.FindServer("127.0.0.1", 5432)
	if err != nil || pid != 100 {
		t.Fatalf("FindServer(127.0.0.1:5432) = %d, %v; want 100", pid, err)
	}
	if pid, err := fs.FindServer("localhost", 5432); err != nil || pid != 100 {
		t.Errorf("FindServer(localhost) = %d, %v", pid, err)
	}
	if _, err := fs.FindServer("127.0.0.1", 6543); !errors.Is(err, ErrServerNotFound) || !strings.Contains(err.Error(), "nothing listens on TCP port 6543") {
		t.Errorf("no listener: %v", err)
	}
	if _, err := fs.FindServer("192.0.2.7", 5432); !errors.Is(err, ErrServerNotFound) || !strings.Contains(err.Error(), "not this machine") {
		t.Errorf("remote host: %v", err)
	}
	if _, err := fs.FindServer("/var/run/postgresql", 5432); !errors.Is(err, ErrServerNotFound) {
		t.Errorf("unix socket without /proc/net/unix: %v", err)
	}
}

func TestIsLocalHost(t *testing.T) {
	for host, want := range map[string]bool{"": true, "localhost": true, "127.0.0.1": true, "::1": true, "/tmp": true, "192.0.2.7": false} {
		if got := IsLocalHost(host); got != want {
			t.Errorf("IsLocalHost(%q) = %v, want %v", host, got, want)
		}
	}
}
