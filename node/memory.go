package node

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Idle collection (releaseIdleMemory): a heap of at least idleHeap bytes
// that no collection has visited for idleAfter is collected; when that
// frees little, the wait doubles, up to idleMax.
const (
	idleHeap  = 64 << 20
	idleAfter = 10 * time.Second
	idleMax   = 2 * time.Minute
)

// releaseIdleMemory collects garbage that an idle node would otherwise
// keep: Go collects only as the heap grows, so the memory of a large
// statement that ended (a prepared statement dropped later, a session
// closed, a buffer left in a pool) would stay until the runtime's forced
// collection minutes later.
func releaseIdleMemory(ctx context.Context, tick time.Duration) {
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/memory/classes/heap/objects:bytes"}}
	read := func() (cycles, objects uint64, ok bool) {
		metrics.Read(samples)
		if samples[0].Value.Kind() != metrics.KindUint64 || samples[1].Value.Kind() != metrics.KindUint64 {
			return 0, 0, false
		}
		return samples[0].Value.Uint64(), samples[1].Value.Uint64(), true
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	wait := idleAfter
	lastCycles, _, ok := read()
	if !ok {
		return // not reported by this runtime
	}
	since := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cycles, objects, _ := read()
		if cycles != lastCycles {
			lastCycles, since = cycles, time.Now()
			continue
		}
		if objects < idleHeap || time.Since(since) < wait {
			continue
		}
		runtime.GC()
		debug.FreeOSMemory()
		var after uint64
		lastCycles, after, _ = read()
		since = time.Now()
		if after > objects*3/4 {
			wait = min(2*wait, idleMax) // mostly live: look less often
		} else {
			wait = idleAfter
		}
	}
}
