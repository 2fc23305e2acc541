package coordinator

import (
	"sync"
	"sync/atomic"

	"github.com/tandemdb/tandem/certifier"
)

// Certified writesets ahead of this member's copy of the log.
//
// A multi-master node answers a COMMIT once it has applied the writeset,
// in GSN order, so it first needs every writeset certified before it. A
// member that is not the certifier's leader learns of them from its own
// copy of the certifier, which applies an entry only once the leader's
// next append tells it the entry committed, and on hosts its clients keep
// busy that copy trailed the leader's answer by 10-13 ms per commit
// (tandem_mm_commit_log_wait_seconds, docs/benchmarks.md). The leader has
// them at hand when it answers a certification batch: the member asks for
// the writesets after what its copy has (Command.CertEarly), and the
// answer carries them up to the batch's last GSN (Result.Early), which
// FollowCertified then delivers ahead of the copy. They are committed
// entries (the leader applied them only once Raft committed them), so a
// later leader has them too, and they are the very entries the member's
// copy will apply: the node applies each GSN once, whichever brought it.
// Only the member's copy of the certifier changes its state; this is a
// read-ahead.

// Bounds of one answer's early writesets.
const (
	maxEarly      = 256
	maxEarlyBytes = 1 << 20
	// maxEarlyKept bounds what a member keeps ahead of its copy (more
	// means its copy is far behind: it catches up by itself).
	maxEarlyKept = 4096
)

// earlyLog holds the certified writesets the leader's answers brought,
// by GSN, until the member's copy of the certifier has them.
type earlyLog struct {
	mu      sync.Mutex
	m       map[uint64]*certifier.Committed
	changed chan struct{} // closed and replaced at every add
	// received counts the entries answers brought (CertStatus).
	received atomic.Uint64
}

// add keeps es, dropping what the member's copy has (at or below last).
func (l *earlyLog) add(es []*certifier.Committed, last uint64) {
	if len(es) == 0 {
		return
	}
	l.received.Add(uint64(len(es)))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[uint64]*certifier.Committed{}
	}
	l.prune(last)
	for _, e := range es {
		if e != nil && e.GSN > last {
			l.m[e.GSN] = e
		}
	}
	if len(l.m) > maxEarlyKept {
		clear(l.m)
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// prune drops the entries at or below last (l.mu held).
func (l *earlyLog) prune(last uint64) {
	for g := range l.m {
		if g <= last {
			delete(l.m, g)
		}
	}
}

// from returns the entries after next without a gap, at most limit.
func (l *earlyLog) from(next uint64, limit int) []*certifier.Committed {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*certifier.Committed
	for g := next + 1; len(out) < limit; g++ {
		e, ok := l.m[g]
		if !ok {
			break
		}
		out = append(out, e)
	}
	return out
}

// top is the last GSN reachable without a gap from last.
func (l *earlyLog) top(last uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if _, ok := l.m[last+1]; !ok {
			return last
		}
		last++
	}
}

// has reports whether gsn is held, and otherwise a channel closed at the
// next add.
func (l *earlyLog) has(gsn uint64) (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[gsn]; ok {
		return true, nil
	}
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return false, l.changed
}
