package profiler

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrServerNotFound means the back end's server process could not be found
// from the DSN; --pid names it explicitly.
var ErrServerNotFound = errors.New("cannot find the database server process")

// Socket is a listening socket from /proc/net/{tcp,tcp6,unix}.
type Socket struct {
	Port  int    // TCP port (0 for unix sockets)
	Path  string // unix socket path
	Inode uint64
}

const tcpListen = "0A" // TCP_LISTEN in /proc/net/tcp's st column

// soAcceptCon is __SO_ACCEPTCON in /proc/net/unix's Flags column: a
// listening socket.
const soAcceptCon = 0x10000

// ParseNetTCP returns the listening sockets of /proc/net/tcp or tcp6.
func ParseNetTCP(r io.Reader) ([]Socket, error) {
	var out []Socket
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first { // header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		if f[3] != tcpListen {
			continue
		}
		_, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			return nil, fmt.Errorf("%w: net/tcp local address %q", ErrProc, f[1])
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("%w: net/tcp port %q", ErrProc, portHex)
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: net/tcp inode %q", ErrProc, f[9])
		}
		out = append(out, Socket{Port: int(port), Inode: inode})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProc, err)
	}
	return out, nil
}

// ParseNetUnix returns the unix sockets of /proc/net/unix that have a path.
func ParseNetUnix(r io.Reader) ([]Socket, error) {
	var out []Socket
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		// Num RefCount Protocol Flags Type St Inode [Path]
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		inode, err := strconv.ParseUint(f[6], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: net/unix inode %q", ErrProc, f[6])
		}
		// Only listening sockets (__SO_ACCEPTCON in Flags): a connection
		// the server accepted carries the same path, held by a backend.
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: net/unix flags %q", ErrProc, f[3])
		}
		if flags&soAcceptCon == 0 {
			continue
		}
		out = append(out, Socket{Path: f[7], Inode: inode})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProc, err)
	}
	return out, nil
}

// SocketOwners returns the processes holding a file descriptor on one of
// the socket inodes, and how many processes' fd tables could not be read.
func (p ProcFS) SocketOwners(inodes map[uint64]bool) (pids []int, unreadable int, err error) {
	ents, err := os.ReadDir(p.Proc)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrProc, err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		fdDir := p.path(e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			if errors.Is(err, os.ErrPermission) {
				unreadable++
			}
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			num, ok := strings.CutPrefix(link, "socket:[")
			if !ok {
				continue
			}
			ino, err := strconv.ParseUint(strings.TrimSuffix(num, "]"), 10, 64)
			if err == nil && inodes[ino] {
				pids = append(pids, pid)
				break
			}
		}
	}
	slices.Sort(pids)
	return pids, unreadable, nil
}

// IsLocalHost reports whether host (a DSN host: name, address or unix
// socket directory) is this machine.
func IsLocalHost(host string) bool {
	if host == "" || strings.HasPrefix(host, "/") || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		if addrs, err := net.LookupIP(host); err == nil && len(addrs) > 0 {
			ip = addrs[0]
		} else {
			return false
		}
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range ifAddrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// FindServer returns the PID of the server listening on host:port (TCP) or
// on the unix socket host/.s.PGSQL.port: the process holding the listening
// socket; when several do (a server whose children inherit it), the one the
// others descend from. The error says what to do instead (--pid).
func (p ProcFS) FindServer(host string, port int) (int, error) {
	if !IsLocalHost(host) {
		return 0, fmt.Errorf("%w: --dsn host %q is not this machine; profiling reads the server's /proc accounting, so run tandem on the database host (or pass --pid of a local postmaster)", ErrServerNotFound, host)
	}
	inodes := map[uint64]bool{}
	where := ""
	if strings.HasPrefix(host, "/") {
		path := filepath.Join(host, ".s.PGSQL."+strconv.Itoa(port))
		where = "unix socket " + path
		f, err := os.Open(p.path("net", "unix"))
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrServerNotFound, err)
		}
		socks, err := ParseNetUnix(f)
		f.Close()
		if err != nil {
			return 0, err
		}
		for _, s := range socks {
			if s.Path == path {
				inodes[s.Inode] = true
			}
		}
	} else {
		where = "TCP port " + strconv.Itoa(port)
		for _, name := range []string{"tcp", "tcp6"} {
			f, err := os.Open(p.path("net", name))
			if err != nil {
				continue // no IPv6
			}
			socks, err := ParseNetTCP(f)
			f.Close()
			if err != nil {
				return 0, err
			}
			for _, s := range socks {
				if s.Port == port {
					inodes[s.Inode] = true
				}
			}
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("%w: nothing listens on %s of this machine (check --dsn, or pass --pid)", ErrServerNotFound, where)
	}
	owners, unreadable, err := p.SocketOwners(inodes)
	if err != nil {
		return 0, err
	}
	if len(owners) == 0 {
		hint := ""
		if unreadable > 0 {
			hint = fmt.Sprintf(": the file descriptors of %d processes were unreadable; run as root or as the server's user", unreadable)
		}
		return 0, fmt.Errorf("%w: no process found holding the socket listening on %s%s (or pass --pid)", ErrServerNotFound, where, hint)
	}
	all, err := p.AllStats()
	if err != nil {
		return 0, err
	}
	roots := RootsAmong(all, owners)
	if len(roots) != 1 {
		return 0, fmt.Errorf("%w: several unrelated processes hold the socket on %s (pids %v); pass --pid", ErrServerNotFound, where, roots)
	}
	return roots[0], nil
}

// RootsAmong returns the candidates none of whose ancestors is a candidate.
func RootsAmong(all map[int]ProcStat, candidates []int) []int {
	is := map[int]bool{}
	for _, c := range candidates {
		is[c] = true
	}
	var out []int
	for _, c := range candidates {
		if _, alive := all[c]; !alive {
			continue // exited since it was seen holding the socket
		}
		root := true
		seen := map[int]bool{}
		for pid := all[c].PPID; pid > 0 && !seen[pid]; pid = all[pid].PPID {
			seen[pid] = true
			if is[pid] {
				root = false
				break
			}
			if _, ok := all[pid]; !ok {
				break
			}
		}
		if root {
			out = append(out, c)
		}
	}
	return out
}

// DataDir returns the server's working directory, which for PostgreSQL is
// its data directory (the postmaster chdirs there).
func (p ProcFS) DataDir(pid int) (string, error) {
	d, err := os.Readlink(p.path(strconv.Itoa(pid), "cwd"))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrProc, err)
	}
	return d, nil
}

// DevicesOf returns the /proc/diskstats devices holding the given paths
// (following symlinks, so a pg_wal symlinked elsewhere counts), without
// duplicates; paths on no listed block device (tmpfs, overlay) are
// returned in unresolved.
func (p ProcFS) DevicesOf(stats []DiskStat, paths ...string) (names, unresolved []string) {
	for _, path := range paths {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			continue // pg_wal may not exist on other engines
		}
		maj, mnr := int(unix.Major(uint64(st.Dev))), int(unix.Minor(uint64(st.Dev)))
		name := ""
		for _, d := range stats {
			if d.Major == maj && d.Minor == mnr {
				name = d.Name
			}
		}
		if name == "" {
			name = p.mountSourceDevice(stats, maj, mnr)
		}
		if name == "" {
			unresolved = append(unresolved, path)
			continue
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, unresolved
}

// mountSourceDevice finds the mount with device maj:mnr in
// /proc/self/mountinfo and returns its source if that is a /dev block device
// listed in stats (btrfs and some device-mapper setups report an anonymous
// st_dev but a real mount source).
func (p ProcFS) mountSourceDevice(stats []DiskStat, maj, mnr int) string {
	b, err := os.ReadFile(p.path("self", "mountinfo"))
	if err != nil {
		return ""
	}
	want := fmt.Sprintf("%d:%d", maj, mnr)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[2] != want {
			continue
		}
		sep := slices.Index(f, "-")
		if sep < 0 || sep+2 >= len(f) {
			continue
		}
		src := strings.TrimPrefix(f[sep+2], "/dev/")
		for _, d := range stats {
			if d.Name == src {
				return src
			}
		}
	}
	return ""
}

// PhysicalDisks returns the whole, non-virtual disks among stats: not
// partitions (per /sys/class/block/NAME/partition) and not loop, ram, zram,
// dm- or md devices, which sit on top of others or in memory.
func (p ProcFS) PhysicalDisks(stats []DiskStat) []string {
	var out []string
	for _, d := range stats {
		n := d.Name
		if strings.HasPrefix(n, "loop") || strings.HasPrefix(n, "ram") || strings.HasPrefix(n, "zram") ||
			strings.HasPrefix(n, "dm-") || strings.HasPrefix(n, "md") || strings.HasPrefix(n, "sr") {
			continue
		}
		if _, err := os.Stat(filepath.Join(p.Sys, "class/block", n, "partition")); err == nil {
			continue
		}
		out = append(out, n)
	}
	return out
}
