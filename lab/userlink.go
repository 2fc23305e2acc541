package lab

import (
	"container/heap"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// User-space links: where the kernel has no netem (CONFIG_NET_SCH_NETEM
// unset, as on this project's development machines) the lab still
// emulates delay, jitter and loss. Each host's namespace gets a TUN
// device (eth0) instead of a veth on the bridge, the root namespace one
// too (tl<launcher pid>), and the launcher forwards every IPv4 packet
// between them after the link's one-way delay: the same topology and
// addresses as the bridge, the same per-crossing delay (half the round
// trip, plus uniform jitter of half the jitter either side) and loss as
// netem on each egress. TUN devices carry whole IP packets without
// offloads (no segmentation, checksums complete), so nothing needs
// rewriting. Jitter reorders packets, as netem's does. The forwarding runs
// in a process of its own (below) and costs CPU (a read and a write per
// packet) outside every host's cgroup; see DESIGN.md.
//
// The devices belong to the forwarding process's open files: when it
// exits (with the launcher, even after a SIGKILL) they vanish with them,
// and the next lab sweeps the namespaces as it does for the bridge.

// LinksEnv forces the lab's links into user space ("userspace") even
// where netem exists, so that both kinds can be tested on one machine.
const LinksEnv = "TANDEM_LAB_LINKS"

// userLinksWanted reports whether the user asked for user-space links.
func userLinksWanted() bool { return os.Getenv(LinksEnv) == "userspace" }

// checkTun reports whether this process can make TUN devices.
func checkTun() error {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/net/tun: %w", err)
	}
	unix.Close(fd)
	return nil
}

// switchboard forwards packets between the lab's TUN devices: one OS
// thread waits in ppoll(2) on every device (and an eventfd that says the
// set changed or the lab stops) with the time until the next packet is
// due as its timeout (nanoseconds, timer slack 1 ns), reads what arrived,
// and writes what is due. One thread and one wake-up per event, where a
// reader and a writer per device cost three wake-ups and two hand-offs
// per packet (measured: at 1,500 TM1 transactions a second the machine
// was busy 1.7 of its 2 cores where the hosts used 0.6); the Go runtime's
// own timers round a
// sub-millisecond wait up to a millisecond when the process is idle.
type switchboard struct {
	spec netSpec
	wake int           // eventfd: the ports changed, or stop
	done chan struct{} // closed when the loop has ended

	mu       sync.Mutex
	ports    map[[4]byte]*tunPort
	all      []*tunPort
	gen      int // bumped when the ports change
	stopping bool

	rng *rand.Rand // the loop's only
}

// tunPort is one TUN device.
type tunPort struct {
	name string
	fd   int
}

// duePacket is a packet on its way to a port.
type duePacket struct {
	b   []byte
	to  *tunPort
	due time.Time
	seq uint64
}

// dueHeap orders packets by due time (then arrival).
type dueHeap []duePacket

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(duePacket)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// maxInFlight bounds the packets held back at once (more are dropped, as
// a full netem queue drops).
const maxInFlight = 65536

func newSwitchboard(spec netSpec) (*switchboard, error) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("lab network: eventfd: %w", err)
	}
	s := &switchboard{spec: spec, wake: efd, done: make(chan struct{}), ports: map[[4]byte]*tunPort{},
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))}
	go s.loop()
	return s, nil
}

// kick interrupts the loop's wait.
func (s *switchboard) kick() {
	var one [8]byte
	one[0] = 1 // little-endian 1
	_, _ = unix.Write(s.wake, one[:])
}

// openTun makes TUN device name in network namespace ns ("" for this
// process's) and returns its file descriptor (non-blocking). The device
// lives as long as the descriptor.
func openTun(ns, name string) (int, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// A thread that entered another namespace and could not come
		// back is never unlocked: the runtime then ends it with the
		// goroutine instead of reusing it.
		runtime.LockOSThread()
		back := -1
		if ns != "" {
			self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				ch <- result{-1, fmt.Errorf("open this thread's network namespace: %w", err)}
				return
			}
			defer unix.Close(self)
			target, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				ch <- result{-1, fmt.Errorf("open namespace %s: %w", ns, err)}
				runtime.UnlockOSThread()
				return
			}
			err = unix.Setns(target, unix.CLONE_NEWNET)
			unix.Close(target)
			if err != nil {
				ch <- result{-1, fmt.Errorf("enter namespace %s: %w", ns, err)}
				runtime.UnlockOSThread()
				return
			}
			back = self
		}
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err == nil {
			var ifr *unix.Ifreq
			if ifr, err = unix.NewIfreq(name); err == nil {
				ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
				if err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
					unix.Close(fd)
					err = fmt.Errorf("TUNSETIFF %s: %w", name, err)
				}
			}
		} else {
			err = fmt.Errorf("open /dev/net/tun: %w", err)
		}
		if back >= 0 {
			if serr := unix.Setns(back, unix.CLONE_NEWNET); serr != nil {
				if err == nil {
					unix.Close(fd)
				}
				ch <- result{-1, fmt.Errorf("return from namespace %s: %w", ns, serr)}
				return // the thread stays locked and dies with this goroutine
			}
		}
		runtime.UnlockOSThread()
		if err != nil {
			ch <- result{-1, err}
			return
		}
		ch <- result{fd, nil}
	}()
	r := <-ch
	return r.fd, r.err
}

// add starts forwarding from and to the TUN device fd, whose address is
// addr (IPv4).
func (s *switchboard) add(name string, fd int, addr [4]byte) {
	p := &tunPort{name: name, fd: fd}
	s.mu.Lock()
	s.ports[addr] = p
	s.all = append(s.all, p)
	s.gen++
	s.mu.Unlock()
	s.kick()
}

// oneWay (the loop's) draws a packet's delay on one crossing: half the
// round trip, jitter uniform within half the jitter either side, never
// negative.
func (s *switchboard) oneWay() time.Duration {
	d := s.spec.delay / 2
	if j := s.spec.jitter / 2; j > 0 {
		d += time.Duration(s.rng.Int64N(int64(2*j)+1)) - j
	}
	return max(d, 0)
}

// lose (the loop's) draws whether a packet is lost on one crossing (loss
// is a percentage).
func (s *switchboard) lose() bool {
	return s.spec.loss > 0 && s.rng.Float64()*100 < s.spec.loss
}

// loop is the switchboard's thread.
func (s *switchboard) loop() {
	defer close(s.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The kernel's default timer slack (50 us) would add itself to every
	// wait; this thread asks for none.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	var (
		q     dueHeap
		seq   uint64
		gen   = -1
		ports []*tunPort
		byDst map[[4]byte]*tunPort // the loop's copy, so a packet takes no lock
		pfds  []unix.PollFd
		buf   = make([]byte, 65536)
		drain [8]byte
	)
	for {
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		if gen != s.gen {
			gen, ports = s.gen, append([]*tunPort(nil), s.all...)
			byDst = maps.Clone(s.ports)
			pfds = append(pfds[:0], unix.PollFd{Fd: int32(s.wake), Events: unix.POLLIN})
			for _, p := range ports {
				pfds = append(pfds, unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN})
			}
		}
		s.mu.Unlock()
		var timeout *unix.Timespec
		if len(q) > 0 {
			ts := unix.NsecToTimespec(max(time.Until(q[0].due), 0).Nanoseconds())
			timeout = &ts
		}
		for i := range pfds {
			pfds[i].Revents = 0
		}
		if _, err := unix.Ppoll(pfds, timeout, nil); err != nil && err != unix.EINTR {
			return
		}
		if pfds[0].Revents != 0 {
			_, _ = unix.Read(s.wake, drain[:])
		}
		for i, p := range ports {
			if pfds[i+1].Revents&unix.POLLIN == 0 {
				continue
			}
			for {
				n, err := unix.Read(p.fd, buf)
				if err != nil {
					break // EAGAIN: read everything there was
				}
				if n < 20 || buf[0]>>4 != 4 {
					continue // not IPv4 (the devices' own IPv6 chatter)
				}
				var dst [4]byte
				copy(dst[:], buf[16:20])
				to := byDst[dst]
				if to == nil || s.lose() || len(q) >= maxInFlight {
					continue // dropped
				}
				d := s.oneWay()
				seq++
				heap.Push(&q, duePacket{b: append([]byte(nil), buf[:n]...), to: to, due: time.Now().Add(d), seq: seq})
			}
		}
		now := time.Now()
		for len(q) > 0 && !q[0].due.After(now) {
			pkt := heap.Pop(&q).(duePacket)
			_, _ = unix.Write(pkt.to.fd, pkt.b) // EAGAIN (the device's queue is full): dropped
		}
	}
}

// stop ends the forwarding and closes every device.
func (s *switchboard) stop() {
	s.mu.Lock()
	already := s.stopping
	s.stopping = true
	s.mu.Unlock()
	if already {
		return
	}
	s.kick()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.all {
		unix.Close(p.fd)
	}
	unix.Close(s.wake)
	s.all, s.ports = nil, map[[4]byte]*tunPort{}
}

// ---- the forwarding process ----
//
// The switchboard runs in a process of its own, started by the launcher
// from its own executable: the launcher may join a lab host's cgroup (the
// workload client does), and forwarding inside that host would charge the
// links' CPU to the client's quota and measurements. The child stays in
// the cgroup the launcher had when the lab started. The launcher opens
// each TUN device (it must enter the host's namespace to do so) and hands
// the descriptor over a socket pair (SCM_RIGHTS); the child holds the
// only copy, so the devices vanish when it exits, which it does when the
// launcher closes the socket or dies (EOF, and a parent-death signal).

// linksHelperEnv marks the forwarding process and carries its link spec.
const linksHelperEnv = "TANDEM_LAB_LINKS_HELPER"

// MaybeLinksHelper runs the user-space links' forwarding process and
// exits when this process was started as one, and returns at once
// otherwise. Programs that can be a lab's launcher call it first thing in
// main (tandem does; so does this package's TestMain).
func MaybeLinksHelper() {
	v := os.Getenv(linksHelperEnv)
	if v == "" {
		return
	}
	var spec netSpec
	var delay, jitter int64
	if _, err := fmt.Sscanf(v, "%d,%d,%g", &delay, &jitter, &spec.loss); err != nil {
		fmt.Fprintf(os.Stderr, "tandem lab links: bad %s=%q: %v\n", linksHelperEnv, v, err)
		os.Exit(2)
	}
	spec.delay, spec.jitter = time.Duration(delay), time.Duration(jitter)
	os.Exit(runLinks(spec, 3))
}

// runLinks forwards between the devices handed over on ctl until ctl
// closes.
func runLinks(spec netSpec, ctl int) int {
	sw, err := newSwitchboard(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tandem lab links:", err)
		return 1
	}
	defer sw.stop()
	buf := make([]byte, 256)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(ctl, buf, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return 0 // the launcher is done (or gone)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 || n < 5 {
			fmt.Fprintln(os.Stderr, "tandem lab links: a malformed hand-over")
			return 1
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			fmt.Fprintln(os.Stderr, "tandem lab links: a hand-over without a device")
			return 1
		}
		sw.add(string(buf[4:n]), fds[0], [4]byte(buf[:4]))
		if _, err := unix.Write(ctl, []byte{1}); err != nil {
			return 0
		}
	}
}

// linksProc is the launcher's end of the forwarding process.
type linksProc struct {
	cmd  *exec.Cmd
	ctl  int
	mu   sync.Mutex
	done bool
}

// startLinks starts the forwarding process for links of spec.
func startLinks(spec netSpec) (*linksProc, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lab network: socketpair: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, fmt.Errorf("lab network: %w", err)
	}
	child := os.NewFile(uintptr(fds[1]), "lab-links")
	// The argument matters only where the executable is a Go test binary
	// that does not call MaybeLinksHelper: it then runs no test and
	// exits, and the hand-over below fails cleanly instead of the binary
	// running its package's tests again. tandem never reads it.
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d,%g", linksHelperEnv, spec.delay.Nanoseconds(), spec.jitter.Nanoseconds(), spec.loss))
	cmd.ExtraFiles = []*os.File{child}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	child.Close()
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("lab network: start the links' forwarding process: %w", err)
	}
	// A forwarding process that never answers must not hang the launcher.
	_ = unix.SetsockoptTimeval(fds[0], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10})
	return &linksProc{cmd: cmd, ctl: fds[0]}, nil
}

// add hands TUN device fd (address addr) to the forwarding process and
// closes this process's copy.
func (lp *linksProc) add(name string, fd int, addr [4]byte) error {
	defer unix.Close(fd)
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.done {
		return errors.New("lab network: the links' forwarding process has stopped")
	}
	if err := unix.Sendmsg(lp.ctl, append(addr[:], name...), unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("lab network: hand %s to the forwarding process: %w", name, err)
	}
	var ack [1]byte
	if n, err := unix.Read(lp.ctl, ack[:]); err != nil || n != 1 {
		return fmt.Errorf("lab network: the forwarding process did not take %s (%v)", name, err)
	}
	return nil
}

// stop ends the forwarding process (its devices vanish with it).
func (lp *linksProc) stop() {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.done {
		return
	}
	lp.done = true
	unix.Close(lp.ctl)
	exited := make(chan struct{})
	go func() { _ = lp.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = lp.cmd.Process.Kill()
		<-exited
	}
}
