package lab

import (
	"testing"
	"time"
)

// TestMemoryProbe: the probe samples on its own, its median covers only
// the samples inside the window asked for, and it stops.
func TestMemoryProbe(t *testing.T) {
	p := StartMemoryProbe()
	from := time.Now()
	time.Sleep(4 * probeInterval)
	to := time.Now()
	time.Sleep(2 * probeInterval)
	p.Stop()
	ns, n := p.Median(from, to)
	if n < 2 || n > 6 {
		t.Fatalf("%d samples in a window of 4 intervals, want 2-6", n)
	}
	// A dependent load from 8 MiB takes between an L2 hit and a trip to
	// memory through a cold TLB on any machine this runs on.
	if ns < 1 || ns > 2000 {
		t.Fatalf("median latency %.1f ns per load: not a memory latency", ns)
	}
	if _, n := p.Median(to.Add(time.Hour), to.Add(2*time.Hour)); n != 0 {
		t.Fatalf("%d samples in a window after the probe stopped", n)
	}
	all, _ := p.Median(time.Time{}, time.Now())
	p.mu.Lock()
	total := len(p.samples)
	p.mu.Unlock()
	time.Sleep(2 * probeInterval)
	p.mu.Lock()
	after := len(p.samples)
	p.mu.Unlock()
	if after != total || all <= 0 {
		t.Fatalf("samples went on after Stop (%d then %d), or none at all", total, after)
	}
}
