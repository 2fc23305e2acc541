package lab

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
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
// rewriting. A packet's order on a link is kept (netem reorders packets
// under jitter). The forwarding costs the launcher CPU (a read and a
// write per packet) outside every host's cgroup; see DESIGN.md.
//
// The devices belong to the launcher's open files: when the launcher
// exits, even by SIGKILL, they vanish with them, and the next lab sweeps
// the namespaces as it does for the bridge.

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

// switchboard forwards packets between the lab's TUN devices.
type switchboard struct {
	spec netSpec
	done chan struct{}
	wg   sync.WaitGroup

	mu    sync.Mutex
	ports map[[4]byte]*tunPort
	all   []*tunPort
	rng   *rand.Rand

	forwarded, dropped atomic.Uint64
}

// tunPort is one TUN device and the queue of packets due to it.
type tunPort struct {
	name string
	fd   int
	q    chan duePacket
}

type duePacket struct {
	b   []byte
	due time.Time
}

// portQueue bounds the packets in flight towards one port (a full
// queue drops, as a full netem queue does).
const portQueue = 8192

func newSwitchboard(spec netSpec) *switchboard {
	return &switchboard{spec: spec, done: make(chan struct{}), ports: map[[4]byte]*tunPort{},
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))}
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
	p := &tunPort{name: name, fd: fd, q: make(chan duePacket, portQueue)}
	s.mu.Lock()
	s.ports[addr] = p
	s.all = append(s.all, p)
	s.mu.Unlock()
	s.wg.Add(2)
	go s.read(p)
	go s.write(p)
}

// oneWay draws a packet's delay on one crossing: half the round trip,
// jitter uniform within half the jitter either side, never negative.
func (s *switchboard) oneWay() time.Duration {
	d := s.spec.delay / 2
	if j := s.spec.jitter / 2; j > 0 {
		s.mu.Lock()
		d += time.Duration(s.rng.Int64N(int64(2*j)+1)) - j
		s.mu.Unlock()
	}
	return max(d, 0)
}

// lose draws whether a packet is lost on one crossing (loss is a percentage).
func (s *switchboard) lose() bool {
	if s.spec.loss <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Float64()*100 < s.spec.loss
}

// read takes packets from p's device and queues each for the port of
// its destination address.
func (s *switchboard) read(p *tunPort) {
	defer s.wg.Done()
	buf := make([]byte, 65536)
	pfd := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	for {
		select {
		case <-s.done:
			return
		default:
		}
		n, err := unix.Read(p.fd, buf)
		if err == unix.EAGAIN || err == unix.EINTR {
			_, _ = unix.Poll(pfd, 100)
			continue
		}
		if err != nil {
			return // the device is gone (closed)
		}
		if n < 20 || buf[0]>>4 != 4 {
			continue // not IPv4 (the devices' own IPv6 chatter)
		}
		var dst [4]byte
		copy(dst[:], buf[16:20])
		s.mu.Lock()
		to := s.ports[dst]
		s.mu.Unlock()
		if to == nil || s.lose() {
			s.dropped.Add(1)
			continue
		}
		pkt := duePacket{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(s.oneWay())}
		select {
		case to.q <- pkt:
		default:
			s.dropped.Add(1)
		}
	}
}

// write delivers p's queued packets when they are due. It sleeps in the
// kernel (nanosleep on a thread of its own) rather than on the Go
// runtime's timers, whose waits round up to a millisecond when the
// process is otherwise idle: the lab's delays are fractions of one.
func (s *switchboard) write(p *tunPort) {
	defer s.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The kernel's default timer slack (50 us) would add itself to
	// every sleep; this thread asks for none.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	pfd := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLOUT}}
	for {
		var pkt duePacket
		select {
		case <-s.done:
			return
		case pkt = <-p.q:
		}
		if wait := time.Until(pkt.due); wait > 0 {
			ts := unix.NsecToTimespec(wait.Nanoseconds())
			for unix.Nanosleep(&ts, &ts) == unix.EINTR {
			}
		}
		for {
			_, err := unix.Write(p.fd, pkt.b)
			if err == unix.EAGAIN || err == unix.EINTR {
				_, _ = unix.Poll(pfd, 100)
				continue
			}
			if err != nil {
				s.dropped.Add(1)
			} else {
				s.forwarded.Add(1)
			}
			break
		}
	}
}

// stop ends the forwarding and closes every device.
func (s *switchboard) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.all {
		unix.Close(p.fd)
	}
	s.all, s.ports = nil, map[[4]byte]*tunPort{}
}
