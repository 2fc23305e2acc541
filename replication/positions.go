package replication

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Positions for the router's read consistency (pgwire.Positions; router
// DESIGN.md "Read consistency"): a replica waits itself until it has
// applied the GSN a read needs, and reports an upper bound of the state
// each read saw.

// setApplied records the applied GSN and wakes the reads waiting for it.
func (r *Agent) setApplied(g uint64) {
	r.applied.Store(g)
	r.appliedMu.Lock()
	if r.appliedCh != nil {
		close(r.appliedCh)
		r.appliedCh = nil
	}
	r.appliedMu.Unlock()
}

// AppliedGSN implements pgwire.Positions: the last GSN whose changes
// reads on this node see (on the primary: committed in the back end).
func (r *Agent) AppliedGSN() uint64 { return r.applied.Load() }

// ReadGSN implements pgwire.Positions: an upper bound of the state a read
// that ended now saw. A standby stores the GSN of the batch it is applying
// before the back end commits it, so a read that saw that batch reports at
// least its GSN; a primary reports its last assigned GSN.
func (r *Agent) ReadGSN() uint64 {
	g := max(r.applied.Load(), r.applying.Load())
	if r.role() == RolePrimary {
		g = max(g, r.rlog.LastGSN())
	}
	return g
}

// WaitApplied implements pgwire.Positions: it returns once this node has
// applied gsn, or an error after wait.
func (r *Agent) WaitApplied(ctx context.Context, gsn uint64, wait time.Duration) error {
	if r.applied.Load() >= gsn {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		r.appliedMu.Lock()
		if r.applied.Load() >= gsn {
			r.appliedMu.Unlock()
			return nil
		}
		if r.appliedCh == nil {
			r.appliedCh = make(chan struct{})
		}
		ch := r.appliedCh
		r.appliedMu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			return fmt.Errorf("node %s: applied GSN %d, waited %v for %d", r.id, r.applied.Load(), wait, gsn)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// testApplyDelay reads TANDEM_TEST_APPLY_DELAY, for tests only: "DUR"
// slows every standby's apply of each batch by DUR, "ID=DUR,ID=DUR" only
// the named nodes. The consistency tests use it to make a replica stale
// on purpose; it has no use in production.
func testApplyDelay(id string, log *slog.Logger) time.Duration {
	v := os.Getenv("TANDEM_TEST_APPLY_DELAY")
	if v == "" {
		return 0
	}
	for _, part := range strings.Split(v, ",") {
		k, d, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			d, k = k, id
		}
		if k != id {
			continue
		}
		dur, err := time.ParseDuration(d)
		if err != nil {
			log.Warn("TANDEM_TEST_APPLY_DELAY: not a duration; ignored", "value", v)
			return 0
		}
		log.Warn("TANDEM_TEST_APPLY_DELAY: this node's apply is slowed on purpose (tests only)", "delay", dur)
		return dur
	}
	return 0
}
