package e2e

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// netNS is a network namespace made for one test: a veth pair, one end
// (rootIP) in the test's namespace, the other (nsIP) inside, on a /30 of
// 10.250.0.0/16 that no interface or route of the machine uses. Nothing
// is routed beyond the pair: the namespace has no default route, and the
// root end's /30 is the only route to nsIP.
type netNS struct {
	name         string // ip netns name
	rootIf, nsIf string // veth ends
	rootIP, nsIP string
	cut          bool
	t            *testing.T
}

// nsPrefix names every namespace these tests make, followed by the
// creating process's pid, so a run killed before its cleanup can be swept
// by the next one (only when that pid is gone).
const nsPrefix = "tdmpt-"

// skipOrFailNetns skips the test with the reason, or fails it in CI
// (CI=true), where the partition tests must run.
func skipOrFailNetns(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("partition test cannot run in CI: %s (scripts/deps.d/netns.sh installs iproute2; the tests need root)", msg)
	}
	t.Skipf("partition test skipped: %s", msg)
}

// ipCmd runs ip with args and returns its combined output.
func ipCmd(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// needNetns skips (fails in CI) when this machine cannot make network
// namespaces.
func needNetns(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		skipOrFailNetns(t, "network namespaces are Linux only")
	}
	if os.Geteuid() != 0 {
		skipOrFailNetns(t, "not root (ip netns needs CAP_SYS_ADMIN and CAP_NET_ADMIN)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skipOrFailNetns(t, "ip (iproute2) not found")
	}
	if _, err := exec.LookPath("tc"); err != nil {
		skipOrFailNetns(t, "tc (iproute2) not found")
	}
}

// newTag returns 6 random hex digits that name one test's namespaces and
// interfaces.
func newTag(t *testing.T) string {
	var rb [3]byte
	if _, err := rand.Read(rb[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(rb[:])
}

// newNetNS makes the namespace and its veth pair, or skips (fails in CI)
// when this machine cannot. Cleanup removes both, on success and failure.
func newNetNS(t *testing.T) *netNS {
	t.Helper()
	needNetns(t)
	sweepStaleNetNS(t)
	tag := newTag(t)
	ns := &netNS{t: t, name: fmt.Sprintf("%s%d-%s", nsPrefix, os.Getpid(), tag), rootIf: "tdr" + tag, nsIf: "tdn" + tag}
	hosts, err := freeSubnet(30)
	if err != nil {
		skipOrFailNetns(t, "%v", err)
	}
	ns.rootIP, ns.nsIP = hosts[0], hosts[1]
	if _, err := ipCmd("netns", "add", ns.name); err != nil {
		skipOrFailNetns(t, "%v", err)
	}
	t.Cleanup(ns.remove)
	for _, args := range [][]string{
		{"link", "add", ns.rootIf, "type", "veth", "peer", "name", ns.nsIf},
		{"link", "set", ns.nsIf, "netns", ns.name},
		{"addr", "add", ns.rootIP + "/30", "dev", ns.rootIf},
		{"link", "set", ns.rootIf, "up"},
		{"-n", ns.name, "addr", "add", ns.nsIP + "/30", "dev", ns.nsIf},
		{"-n", ns.name, "link", "set", ns.nsIf, "up"},
		{"-n", ns.name, "link", "set", "lo", "up"},
	} {
		if _, err := ipCmd(args...); err != nil {
			skipOrFailNetns(t, "%v", err)
		}
	}
	t.Logf("network namespace %s: %s (%s) <-> %s (%s, inside)", ns.name, ns.rootIP, ns.rootIf, ns.nsIP, ns.nsIf)
	return ns
}

// remove deletes the veth pair and the namespace (errors only logged: a
// cleanup must not hide the test's own failure).
func (ns *netNS) remove() {
	if _, err := ipCmd("link", "del", ns.rootIf); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		ns.t.Logf("cleanup: %v", err)
	}
	if _, err := ipCmd("netns", "del", ns.name); err != nil {
		ns.t.Logf("cleanup: %v", err)
	}
}

// sweepStaleNetNS removes namespaces of earlier runs whose process is gone
// (a run killed by a timeout never ran its cleanups).
func sweepStaleNetNS(t *testing.T) {
	out, err := ipCmd("netns", "list")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], nsPrefix) {
			continue
		}
		rest := strings.TrimPrefix(f[0], nsPrefix)
		pidStr, tag, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil {
			continue
		}
		if syscall.Kill(pid, 0) == nil || pid == os.Getpid() {
			continue // its test is still running
		}
		ipCmd("link", "del", "tdr"+tag)
		if _, err := ipCmd("netns", "del", f[0]); err == nil {
			t.Logf("removed the stale namespace %s of an earlier run", f[0])
		}
	}
}

// freeSubnet picks a subnet of 10.250.0.0/16 with the given prefix length
// that overlaps no address and no route of this machine, and returns its
// host addresses.
func freeSubnet(bits int) ([]string, error) {
	var used []*net.IPNet
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			used = append(used, n)
		}
	}
	if out, err := ipCmd("-4", "route", "show", "table", "all"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			for _, w := range f {
				if _, n, err := net.ParseCIDR(w); err == nil {
					used = append(used, n)
				} else if ip := net.ParseIP(w); ip != nil && ip.To4() != nil {
					used = append(used, &net.IPNet{IP: ip, Mask: net.CIDRMask(32, 32)})
				}
			}
		}
	}
	size := uint16(1) << (32 - bits)
	for tries := 0; tries < 200; tries++ {
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		base := binary.BigEndian.Uint16(b[:]) &^ (size - 1)
		sub := &net.IPNet{IP: net.IPv4(10, 250, byte(base>>8), byte(base)).To4(), Mask: net.CIDRMask(bits, 32)}
		clash := false
		for _, u := range used {
			if u.Contains(sub.IP) || sub.Contains(u.IP) {
				clash = true
				break
			}
		}
		if !clash {
			var hosts []string
			for i := uint16(1); i < size-1; i++ {
				v := base + i
				hosts = append(hosts, net.IPv4(10, 250, byte(v>>8), byte(v)).String())
			}
			return hosts, nil
		}
	}
	return nil, fmt.Errorf("no free /%d in 10.250.0.0/16", bits)
}

// exec is the command prefix that runs a program inside the namespace.
func (ns *netNS) exec() []string { return []string{"ip", "netns", "exec", ns.name} }

// partition cuts the veth pair in both directions: every packet either
// end sends is dropped (a pfifo qdisc of length 0), silently, as a
// network that lost its link would; connections stay open and hang.
// Inside the namespace nsIP still reaches itself (over lo).
func (ns *netNS) partition() {
	ns.t.Helper()
	for _, args := range [][]string{
		{"-n", ns.name, "qdisc", "replace", "dev", ns.nsIf, "root", "pfifo", "limit", "0"},
		{"qdisc", "replace", "dev", ns.rootIf, "root", "pfifo", "limit", "0"},
	} {
		if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
			ns.t.Fatalf("tc %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ns.cut = true
}

// heal removes the cut.
func (ns *netNS) heal() {
	ns.t.Helper()
	for _, args := range [][]string{
		{"-n", ns.name, "qdisc", "del", "dev", ns.nsIf, "root"},
		{"qdisc", "del", "dev", ns.rootIf, "root"},
	} {
		if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
			ns.t.Fatalf("tc %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ns.cut = false
}

// dial opens a TCP connection from inside the namespace.
func (ns *netNS) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return nsDial(ns.name)(ctx, network, addr)
}

// nsDial dials from inside the named namespace: a thread of this process
// enters it, creates the socket, and goes back (a socket stays in the
// namespace it was made in). A thread that cannot go back is not returned
// to the Go scheduler: it ends with its goroutine.
func nsDial(name string) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			restored := false
			defer func() {
				if restored {
					runtime.UnlockOSThread()
				}
			}()
			orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				restored = true
				ch <- result{nil, fmt.Errorf("open own netns: %w", err)}
				return
			}
			defer unix.Close(orig)
			target, err := unix.Open(filepath.Join("/run/netns", name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				restored = true
				ch <- result{nil, fmt.Errorf("open netns %s: %w", name, err)}
				return
			}
			defer unix.Close(target)
			if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
				restored = true
				ch <- result{nil, fmt.Errorf("setns %s: %w", name, err)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			restored = unix.Setns(orig, unix.CLONE_NEWNET) == nil
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

// netLab is a switch (a bridge inside a namespace of its own) with the
// test's namespace and one namespace per member plugged in, each by a
// veth pair, on one /29 of 10.250.0.0/16: the root end is .1, the members
// .2, .3, ... in order. Ports of the bridge can be isolated from each
// other (bridge_slave isolated: isolated ports do not exchange frames,
// each still reaches the root): a partition between members that all
// still reach the router and the test.
type netLab struct {
	t      *testing.T
	sw     string // the switch's namespace
	rootIf string
	rootIP string
	rootPt string // the root's port on the bridge
	ns     map[string]*labNS
}

type labNS struct{ name, port, ip string }

// newNetLab makes the switch and the members' namespaces (member names:
// one letter each), or skips (fails in CI). Cleanup removes them all.
func newNetLab(t *testing.T, members ...string) *netLab {
	t.Helper()
	needNetns(t)
	sweepStaleNetNS(t)
	tag := newTag(t)
	prefix := fmt.Sprintf("%s%d-%s-", nsPrefix, os.Getpid(), tag)
	l := &netLab{t: t, sw: prefix + "sw", rootIf: "tdr" + tag, rootPt: "tdp" + tag + "r", ns: map[string]*labNS{}}
	hosts, err := freeSubnet(29)
	if err != nil {
		skipOrFailNetns(t, "%v", err)
	}
	if len(members) > len(hosts)-1 {
		t.Fatalf("a /29 has room for %d members", len(hosts)-1)
	}
	l.rootIP = hosts[0]
	if _, err := ipCmd("netns", "add", l.sw); err != nil {
		skipOrFailNetns(t, "%v", err)
	}
	t.Cleanup(l.remove)
	steps := [][]string{
		{"-n", l.sw, "link", "add", "br0", "type", "bridge"},
		{"-n", l.sw, "link", "set", "br0", "up"},
		{"link", "add", l.rootIf, "type", "veth", "peer", "name", l.rootPt},
		{"link", "set", l.rootPt, "netns", l.sw},
		{"-n", l.sw, "link", "set", l.rootPt, "master", "br0", "up"},
		{"addr", "add", l.rootIP + "/29", "dev", l.rootIf},
		{"link", "set", l.rootIf, "up"},
	}
	for i, m := range members {
		n := &labNS{name: prefix + m, port: "tdp" + tag + m, ip: hosts[i+1]}
		l.ns[m] = n
		in := "tdn" + tag + m
		if _, err := ipCmd("netns", "add", n.name); err != nil {
			skipOrFailNetns(t, "%v", err)
		}
		steps = append(steps,
			[]string{"link", "add", in, "type", "veth", "peer", "name", n.port},
			[]string{"link", "set", n.port, "netns", l.sw},
			[]string{"-n", l.sw, "link", "set", n.port, "master", "br0", "up"},
			[]string{"link", "set", in, "netns", n.name},
			[]string{"-n", n.name, "addr", "add", n.ip + "/29", "dev", in},
			[]string{"-n", n.name, "link", "set", in, "up"},
			[]string{"-n", n.name, "link", "set", "lo", "up"},
		)
	}
	for _, args := range steps {
		if _, err := ipCmd(args...); err != nil {
			skipOrFailNetns(t, "%v", err)
		}
	}
	t.Logf("network lab %s: root %s, members %v", l.sw, l.rootIP, members)
	return l
}

// remove deletes the root's veth and every namespace (the other veths go
// with them).
func (l *netLab) remove() {
	if _, err := ipCmd("link", "del", l.rootIf); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		l.t.Logf("cleanup: %v", err)
	}
	for _, n := range l.ns {
		if _, err := ipCmd("netns", "del", n.name); err != nil {
			l.t.Logf("cleanup: %v", err)
		}
	}
	if _, err := ipCmd("netns", "del", l.sw); err != nil {
		l.t.Logf("cleanup: %v", err)
	}
}

// isolate turns port isolation on or off for the members' ports: isolated
// members no longer reach each other (frames dropped silently at the
// bridge) but still reach the root.
func (l *netLab) isolate(on bool, members ...string) {
	l.t.Helper()
	v := "off"
	if on {
		v = "on"
	}
	for _, m := range members {
		if _, err := ipCmd("-n", l.sw, "link", "set", "dev", l.ns[m].port, "type", "bridge_slave", "isolated", v); err != nil {
			l.t.Fatal(err)
		}
	}
}

func (l *netLab) ip(m string) string     { return l.ns[m].ip }
func (l *netLab) exec(m string) []string { return []string{"ip", "netns", "exec", l.ns[m].name} }
func (l *netLab) dial(m string) dialFunc { return nsDial(l.ns[m].name) }
