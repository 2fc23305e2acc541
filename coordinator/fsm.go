package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tandemdb/tandem/certifier"
)

// fsm is the Raft state machine: the map, plus what this process observed
// locally and never replicates (when it applied the lease's last entry, on
// its monotonic clock).
type fsm struct {
	mu        sync.Mutex
	m         Map
	leaseSeen time.Time
	watchers  map[chan Map]struct{}
	changed   chan struct{}            // closed and replaced at every change
	onApply   func(before, after *Map) // metrics and logs; called under mu

	// The certifier (multi-master) lives beside the map, under its own
	// lock: its entries never clone the map (cert.go).
	cert certState
}

func newFSM() *fsm {
	return &fsm{watchers: map[chan Map]struct{}{}, changed: make(chan struct{}), cert: newCertState()}
}

// waitIndex returns once the map holds the change at Raft index idx (or
// a later one), or when ctx ends.
func (f *fsm) waitIndex(ctx context.Context, idx uint64) {
	for {
		f.mu.Lock()
		ok, ch := f.m.Index >= idx, f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// applied is what Raft hands back from Apply to the proposer.
type applied struct {
	m   Map
	err error
}

func (f *fsm) Apply(l *raft.Log) any {
	if len(l.Data) > 0 && l.Data[0] == certEntryTag {
		return f.cert.apply(l)
	}
	var c Command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return applied{err: fmt.Errorf("%w: %v", ErrBadCommand, err)}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	next := f.m.Clone()
	if err := apply(&next, c, l.Index); err != nil {
		return applied{m: f.m.Clone(), err: err}
	}
	before := f.m
	f.m = next
	switch c.Op {
	case OpInit, OpLease, OpRelease, OpTransition:
		f.leaseSeen = time.Now()
	}
	if f.onApply != nil {
		f.onApply(&before, &f.m)
	}
	f.notifyLocked()
	return applied{m: f.m.Clone()}
}

func (f *fsm) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
	for ch := range f.watchers {
		snap := f.m.Clone()
		select {
		case ch <- snap:
		default:
			// The watcher has not taken the previous map: replace it, so a
			// slow watcher sees the latest map and never blocks Raft.
			select {
			case <-ch:
			default:
			}
			select {
			case ch <- snap:
			default:
			}
		}
	}
}

func (f *fsm) state() (Map, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.Clone(), f.leaseSeen
}

func (f *fsm) watch() chan Map {
	ch := make(chan Map, 1)
	f.mu.Lock()
	f.watchers[ch] = struct{}{}
	if f.m.Initialized {
		ch <- f.m.Clone()
	}
	f.mu.Unlock()
	return ch
}

func (f *fsm) unwatch(ch chan Map) {
	f.mu.Lock()
	if _, ok := f.watchers[ch]; ok {
		delete(f.watchers, ch)
		close(ch)
	}
	f.mu.Unlock()
}

func (f *fsm) closeWatchers() {
	f.mu.Lock()
	for ch := range f.watchers {
		delete(f.watchers, ch)
		close(ch)
	}
	f.mu.Unlock()
}

// Snapshot is the map as JSON followed by the certifier's state (its own
// binary format, cert.go); raft calls it between applies, and the
// certifier's copy is cheap (its window's entries are shared), so the
// encoding happens in Persist, off the apply path.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	b, err := json.Marshal(f.m)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return fullSnapshot{m: b, cert: f.cert.snapshot()}, nil
}

// Restore replaces the map and the certifier. The lease is timed from now:
// whatever this process saw before is older than the snapshot's last
// entry. A snapshot written before the certifier existed (the map alone)
// restores an empty certifier.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var m Map
	dec := json.NewDecoder(rc)
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("coordinator: restoring the map: %w", err)
	}
	if err := f.cert.restore(io.MultiReader(dec.Buffered(), rc)); err != nil {
		return err
	}
	if m.Acks == nil {
		m.Acks = map[string]Ack{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m = m
	f.leaseSeen = time.Now()
	f.notifyLocked()
	return nil
}

type fullSnapshot struct {
	m    []byte
	cert *certifier.Snapshot
}

func (s fullSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.m); err != nil {
		_ = sink.Cancel()
		return err
	}
	if _, err := s.cert.WriteTo(sink); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s fullSnapshot) Release() {}
