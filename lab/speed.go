package lab

// The machine's memory speed. On a virtual machine the hypervisor's other
// guests share the host's last-level cache and memory bandwidth, and what
// they do changes how long this machine's loads from memory take without
// any of it showing as stolen time: measured on this development machine
// (docs/benchmarks.md, "The machine's memory speed, and the nodes' background"), a standalone node's
// CPU per TM1 read-only transaction moved from 0.059 to 0.117 ms between
// fresh clusters minutes apart, and tracked the latency of a dependent
// load from an 8 MiB random ring (88.6 to 127 ns) with a correlation of
// 0.91-0.93, while a compute-bound loop stayed within 3 %. MemoryProbe
// measures that latency all the time at a small cost (about 2.5 % of one
// core), so that a measurement can say how fast the machine was while it
// ran.

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Probe geometry: each sample walks the same 70,000 dependent loads of
// an 8 MiB random ring from its start (20,000 unmeasured, then 50,000
// timed by the thread's CPU clock), about 4.5 MB of cache lines: how much
// of that working set the shared last-level cache kept since the last
// sample, and how fast the misses are answered, is what the other guests
// change. A sample takes about 5-7 ms of one CPU every 250 ms (about 2.5 %
// of a core), on each allowed CPU in turn.
const (
	probeRingEntries = 2 << 20 // uint32: 8 MiB
	probeSteps       = 50000
	probeWarm        = 20000
	probeInterval    = 250 * time.Millisecond
)

// MemoryProbe samples the machine's memory latency in the background.
type MemoryProbe struct {
	mu      sync.Mutex
	samples []speedSample
	stop    chan struct{}
	done    chan struct{}
}

type speedSample struct {
	at time.Time
	ns float64
}

// StartMemoryProbe starts sampling; Stop ends it.
func StartMemoryProbe() *MemoryProbe {
	p := &MemoryProbe{stop: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	go p.run(ready)
	<-ready
	return p
}

// ring is a random cyclic permutation: next[i] is the entry after i.
func ring(n int, r *rand.Rand) []uint32 {
	perm := r.Perm(n)
	next := make([]uint32, n)
	for i := range n {
		next[perm[i]] = uint32(perm[(i+1)%n])
	}
	return next
}

func (p *MemoryProbe) run(ready chan<- struct{}) {
	defer close(p.done)
	// The thread is this goroutine's alone and changes its CPU affinity;
	// returning while locked ends the thread, so no other goroutine
	// inherits the affinity.
	runtime.LockOSThread()
	next := ring(probeRingEntries, rand.New(rand.NewPCG(1, 2)))
	var cpus []int
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil {
		for c := range 1024 {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
	}
	close(ready)
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	var pos uint32
	for i := 0; ; i++ {
		if len(cpus) > 1 {
			var one unix.CPUSet
			one.Set(cpus[i%len(cpus)])
			_ = unix.SchedSetaffinity(0, &one)
		}
		pos = 0
		for range probeWarm {
			pos = next[pos]
		}
		c0 := threadCPU()
		for range probeSteps {
			pos = next[pos]
		}
		c1 := threadCPU()
		if c0 > 0 && c1 > c0 {
			p.mu.Lock()
			p.samples = append(p.samples, speedSample{at: time.Now(), ns: float64(c1-c0) / probeSteps})
			p.mu.Unlock()
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// threadCPU is the calling thread's CPU time: time the thread waited for
// a CPU does not count.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// Stop ends the sampling (the samples stay readable).
func (p *MemoryProbe) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// Median is the median latency of one load, in nanoseconds, over the
// samples taken between from and to, and how many there were (0: none,
// and ns is 0).
func (p *MemoryProbe) Median(from, to time.Time) (ns float64, n int) {
	p.mu.Lock()
	var vs []float64
	for _, s := range p.samples {
		if !s.at.Before(from) && !s.at.After(to) {
			vs = append(vs, s.ns)
		}
	}
	p.mu.Unlock()
	if len(vs) == 0 {
		return 0, 0
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], len(vs)
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, len(vs)
}
