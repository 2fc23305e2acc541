package lab

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The lab's network: one /24 of 10.213.0.0/16 per lab (the first whose
// addresses no interface of the root namespace carries), a hub namespace
// with a bridge, one namespace per emulated host joined to the bridge by
// a veth pair, and one veth pair from the root namespace (where the
// router and the client stay) into the hub. Host i (1-based) is
// 10.213.K.(10+i); the witness is 10.213.K.10; the root namespace's end
// is 10.213.K.1. Every interface but the root's end lives in a lab
// namespace, so deleting the namespaces removes them; the root end goes
// with its peer.
const (
	netBase  = "10.213." // config.LabNetwork
	hubName  = "hub"
	bridge   = "br0"
	hostIf   = "eth0"
	rootAddr = 1
)

// Net is a lab's network.
type Net struct {
	owner  int
	third  int    // K in 10.213.K.0/24
	rootIf string // veth end in the root namespace
	hub    string // hub namespace
	spec   netSpec
	hosts  []string // namespaces made, hub first
	ports  int      // bridge ports made (names h1, h2, ...)
	// sw is the process that forwards packets between TUN devices when
	// the links are emulated in user space (userlink.go); nil on the bridge.
	sw *linksProc
}

// Links says how the lab's links are made: "bridge" (no emulation),
// "netem" (the bridge with netem on every egress) or "user space" (TUN
// devices and the launcher's forwarding, where the kernel has no netem).
func (n *Net) Links() string {
	switch {
	case n.sw != nil:
		return "user space"
	case n.spec.any():
		return "netem"
	}
	return "bridge"
}

// netSpec is the link emulation: each host's egress (and the root end's)
// delays by half the round trip.
type netSpec struct {
	delay, jitter time.Duration
	loss          float64
}

// NetnsName is the name of host's network namespace for launcher owner.
func NetnsName(owner int, host string) string { return CgroupName(owner, host) }

// rootIfName is the root namespace's veth end of launcher owner's lab
// (at most 15 characters: "tl" and a pid).
func rootIfName(owner int) string { return "tl" + strconv.Itoa(owner) }

// ipRun runs ip (or tc) with args.
func ipRun(tool string, args ...string) (string, error) {
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// checkNet reports why this machine cannot make the lab's network.
func checkNet(network bool) error {
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s (iproute2) is not installed; the lab's network namespaces need it (apt-get install iproute2)", ErrUnsupported, tool)
		}
	}
	if !network {
		return nil
	}
	if userLinksWanted() {
		if err := checkTun(); err != nil {
			return fmt.Errorf("%w: %s=userspace asks for user-space links, but this process cannot make TUN devices: %v", ErrUnsupported, LinksEnv, err)
		}
		return nil
	}
	if err := netemWorks(); err != nil {
		// No netem: the links are emulated in user space (userlink.go).
		if terr := checkTun(); terr != nil {
			return fmt.Errorf("%w: this kernel has no netem queueing discipline (CONFIG_NET_SCH_NETEM; modprobe sch_netem) and TUN devices cannot be made either (%v), so lab.net_delay, net_jitter and net_loss cannot be emulated: %v", ErrUnsupported, terr, err)
		}
	}
	return nil
}

// netemWorks tries netem on the loopback of a throwaway namespace (netem
// is a kernel module, CONFIG_NET_SCH_NETEM).
func netemWorks() error {
	probe := NetnsName(selfPid(), "probe")
	if _, err := ipRun("ip", "netns", "add", probe); err != nil {
		return fmt.Errorf("%w: cannot create a network namespace: %v", ErrUnsupported, err)
	}
	defer ipRun("ip", "netns", "del", probe) //nolint:errcheck
	if _, err := ipRun("tc", "-n", probe, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"); err != nil {
		return err
	}
	return nil
}

// freeThird picks K for 10.213.K.0/24: the first no root-namespace
// interface has an address in.
func freeThird() (int, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, err
	}
	used := map[int]bool{}
	for _, a := range addrs {
		ip, _, err := net.ParseCIDR(a.String())
		if err != nil || ip.To4() == nil || !strings.HasPrefix(ip.String(), netBase) {
			continue
		}
		used[int(ip.To4()[2])] = true
	}
	for k := 0; k < 256; k++ {
		if !used[k] {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%w: every /24 of 10.213.0.0/16 is in use", ErrUnsupported)
}

// newNet makes the hub and the root namespace's link into it.
func newNet(owner int, spec netSpec) (*Net, error) {
	k, err := freeThird()
	if err != nil {
		return nil, err
	}
	n := &Net{owner: owner, third: k, rootIf: rootIfName(owner), hub: NetnsName(owner, hubName), spec: spec}
	if spec.any() && (userLinksWanted() || netemWorks() != nil) {
		return n.userLinks()
	}
	if _, err := ipRun("ip", "netns", "add", n.hub); err != nil {
		return nil, fmt.Errorf("%w: cannot create a network namespace: %v", ErrUnsupported, err)
	}
	n.hosts = append(n.hosts, n.hub)
	steps := [][]string{
		{"ip", "-n", n.hub, "link", "set", "lo", "up"},
		{"ip", "-n", n.hub, "link", "add", bridge, "type", "bridge"},
		{"ip", "-n", n.hub, "link", "set", bridge, "up"},
		{"ip", "link", "add", n.rootIf, "type", "veth", "peer", "name", "root", "netns", n.hub},
		{"ip", "-n", n.hub, "link", "set", "root", "master", bridge, "up"},
		{"ip", "addr", "add", n.Addr(rootAddr) + "/24", "dev", n.rootIf},
		{"ip", "link", "set", n.rootIf, "up"},
	}
	if spec.any() {
		steps = append(steps, append([]string{"tc", "qdisc", "add", "dev", n.rootIf, "root"}, spec.netem()...))
	}
	for _, s := range steps {
		if _, err := ipRun(s[0], s[1:]...); err != nil {
			n.close()
			return nil, fmt.Errorf("lab network: %w", err)
		}
	}
	return n, nil
}

// userLinks makes the root namespace's TUN device and starts the
// forwarding; hosts get theirs in addHost. There is no hub.
func (n *Net) userLinks() (*Net, error) {
	sw, err := startLinks(n.spec)
	if err != nil {
		return nil, err
	}
	n.sw = sw
	if err := n.addTun("", n.rootIf, rootAddr); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// addTun makes TUN device name in namespace ns ("": the root one) with
// the lab address number num, and forwards its packets.
func (n *Net) addTun(ns, name string, num int) error {
	fd, err := openTun(ns, name)
	if err != nil {
		return fmt.Errorf("lab network: %w", err)
	}
	ip := net.ParseIP(n.Addr(num)).To4()
	if err := n.sw.add(name, fd, [4]byte(ip)); err != nil {
		return err
	}
	pre := []string{"ip"}
	if ns != "" {
		pre = []string{"ip", "-n", ns}
	}
	for _, s := range [][]string{
		append(append([]string{}, pre...), "addr", "add", n.Addr(num)+"/24", "dev", name),
		append(append([]string{}, pre...), "link", "set", name, "up"),
	} {
		if _, err := ipRun(s[0], s[1:]...); err != nil {
			return fmt.Errorf("lab network: %w", err)
		}
	}
	return nil
}

// Addr is the address of the lab network's host number i (1: the root
// namespace's end, 10: the witness, 10+i: node i).
func (n *Net) Addr(i int) string { return netBase + strconv.Itoa(n.third) + "." + strconv.Itoa(i) }

// Subnet is the lab network in CIDR notation.
func (n *Net) Subnet() string { return netBase + strconv.Itoa(n.third) + ".0/24" }

func (s netSpec) any() bool { return s.delay > 0 || s.jitter > 0 || s.loss > 0 }

// netem is the qdisc of one egress: half the round trip's delay and
// jitter (a round trip crosses two egresses), the whole loss.
func (s netSpec) netem() []string {
	args := []string{"netem"}
	if s.delay > 0 || s.jitter > 0 {
		args = append(args, "delay", usec(s.delay/2))
		if s.jitter > 0 {
			args = append(args, usec(s.jitter/2))
		}
	}
	if s.loss > 0 {
		args = append(args, "loss", strconv.FormatFloat(s.loss, 'g', -1, 64)+"%")
	}
	return args
}

func usec(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + "us" }

// addHost makes host's namespace with address n.Addr(num) on the bridge.
func (n *Net) addHost(host string, num int) (string, error) {
	ns := NetnsName(n.owner, host)
	if _, err := ipRun("ip", "netns", "add", ns); err != nil {
		return "", fmt.Errorf("lab network: %w", err)
	}
	n.hosts = append(n.hosts, ns)
	if n.sw != nil {
		if _, err := ipRun("ip", "-n", ns, "link", "set", "lo", "up"); err != nil {
			return "", fmt.Errorf("lab network: %w", err)
		}
		if err := n.addTun(ns, hostIf, num); err != nil {
			return "", err
		}
		return ns, nil
	}
	n.ports++
	port := "h" + strconv.Itoa(n.ports)
	steps := [][]string{
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", n.hub, "link", "add", port, "type", "veth", "peer", "name", hostIf, "netns", ns},
		{"ip", "-n", n.hub, "link", "set", port, "master", bridge, "up"},
		{"ip", "-n", ns, "addr", "add", n.Addr(num) + "/24", "dev", hostIf},
		{"ip", "-n", ns, "link", "set", hostIf, "up"},
	}
	if n.spec.any() {
		steps = append(steps, append([]string{"tc", "-n", ns, "qdisc", "add", "dev", hostIf, "root"}, n.spec.netem()...))
	}
	for _, s := range steps {
		if _, err := ipRun(s[0], s[1:]...); err != nil {
			return "", fmt.Errorf("lab network: %w", err)
		}
	}
	return ns, nil
}

// close deletes the namespaces (with them every interface of the lab) and
// the root namespace's end.
func (n *Net) close() error {
	var errs []error
	if n.sw != nil {
		n.sw.stop() // the TUN devices, the root namespace's among them, go with the forwarding process
	}
	for i := len(n.hosts) - 1; i >= 0; i-- {
		if _, err := ipRun("ip", "netns", "del", n.hosts[i]); err != nil {
			errs = append(errs, err)
		}
	}
	n.hosts = nil
	if linkExists(n.rootIf) {
		if _, err := ipRun("ip", "link", "del", n.rootIf); err != nil && linkExists(n.rootIf) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// Namespaces lists the lab network namespaces of launcher owner (0: of
// every launcher).
func Namespaces(owner int) []string {
	out, err := ipRun("ip", "netns", "list")
	if err != nil {
		return nil
	}
	prefix := Prefix
	if owner > 0 {
		prefix = CgroupName(owner, "")
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			names = append(names, f[0])
		}
	}
	return names
}

// RootLinks lists the lab's interfaces in the root namespace of launcher
// owner (0: of every launcher).
func RootLinks(owner int) []string {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var names []string
	for _, i := range ifs {
		rest, ok := strings.CutPrefix(i.Name, "tl")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(rest)
		if err != nil || (owner > 0 && pid != owner) {
			continue
		}
		names = append(names, i.Name)
	}
	return names
}

// sweepNet removes the namespaces and root links of launchers other than
// self that are gone.
func sweepNet(self int) ([]string, error) {
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, nil
	}
	var removed []string
	var errs []error
	for _, ns := range Namespaces(0) {
		pid, ok := ownerOf(ns)
		if !ok || pid == self || pidAlive(pid) {
			continue
		}
		if _, err := ipRun("ip", "netns", "del", ns); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, ns)
	}
	for _, l := range RootLinks(0) {
		pid, _ := strconv.Atoi(strings.TrimPrefix(l, "tl"))
		if pid == self || pidAlive(pid) {
			continue
		}
		if _, err := ipRun("ip", "link", "del", l); err != nil && linkExists(l) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, l)
	}
	return removed, errors.Join(errs...)
}
