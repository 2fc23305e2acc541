package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/pgwire"
)

// This file is the replication agent's side of automatic failover
// (replication.failover = "automatic"; coordinator/DESIGN.md, "What is
// wired"):
//
//   - the primary holds the coordinator's lease (a Keeper) and answers a
//     COMMIT only while the lease of the commit's epoch is valid
//     (leaseGate);
//   - before it stops waiting for a standby (degrade) it marks that
//     standby degraded in the map, so the failover rule never promotes a
//     standby that lacks an acknowledged commit; it clears the mark once
//     the standby holds everything;
//   - standbys report what they hold every 100 ms;
//   - every node follows the map: named primary of a newer epoch, it
//     promotes itself with the map's epoch; named standby, it follows the
//     map's primary (a deposed primary answers its waiting commits, then
//     rejoins, its divergent tail discarded by a re-seed).

// ErrLeaseLost: a commit waited for the primary's lease, which did not
// come back (the coordinator's quorum is unreachable from this node).
var ErrLeaseLost = errors.New("the primary lost its lease before the commit could be acknowledged")

// reportEvery is how often a standby tells the coordinator what it holds
// (when that changed): each report is a Raft entry on every voter. The
// failover rule needs one report per epoch (2-safe: "not degraded" is what
// counts); the GSN ranks standbys, and a hand-over waits for the target to
// report the primary's last acknowledged GSN, so this bounds that wait.
const reportEvery = 250 * time.Millisecond

// automatic reports whether this node acts on the coordinator's map.
func (r *Agent) Automatic() bool { return r.coord != nil && r.cfg.Repl.Failover == "automatic" }

// attachCoordinator wires the agent to the coordinator: the lease keeper,
// the standby's reports, the primary's degraded marks and the map watch.
// Only with failover = "automatic"; with "manual" the group keeps the map
// and nothing acts on it.
func (r *Agent) AttachCoordinator(ctx context.Context, co *coordinator.Coordinator) {
	if co == nil {
		return
	}
	r.coord = co
	if !r.Automatic() {
		return
	}
	r.keeper = coordinator.NewKeeper(co, r.leaseEpoch, r.ackedMax.Load)
	go r.keeper.Run(ctx)
	go r.reportLoop(ctx)
	go r.watchMap(ctx)
}

// leaseEpoch is the epoch the keeper renews the lease for: this node's
// while it is the primary and has not released the lease (0: none).
func (r *Agent) leaseEpoch() uint64 {
	if r.role() != RolePrimary || r.leaseReleased.Load() {
		return 0
	}
	return r.epoch()
}

// noteAcked records gsn as acknowledged to a client.
func (r *Agent) noteAcked(gsn uint64) {
	for {
		cur := r.ackedMax.Load()
		if gsn <= cur || r.ackedMax.CompareAndSwap(cur, gsn) {
			return
		}
	}
}

// leaseGate is the last step of a COMMIT on a coordinated primary: it
// answers success only while this node holds a valid lease of the epoch
// the commit was logged in. Without the lease the commit waits (a Raft
// election, a renewal in flight) until the lease comes back, the node is
// told to follow a new primary (the hand-over answers it), the client
// gives up, or lease + grace + ack_timeout pass (08007: whether it
// survives depends on which node the coordinator promotes).
func (r *Agent) leaseGate(ctx context.Context, gsn, epoch uint64) error {
	if r.keeper == nil {
		r.noteAcked(gsn)
		return nil
	}
	var deadline time.Time
	for {
		r.ackMu.Lock()
		h := r.handover
		r.ackMu.Unlock()
		if h != nil {
			return h.outcome(r.id, gsn)
		}
		err := r.keeper.Check(epoch)
		if err == nil {
			r.noteAcked(gsn)
			return nil
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(r.cfg.Repl.Lease.Duration + r.cfg.Repl.LeaseGrace.Duration + r.cfg.Repl.AckTimeout.Duration)
		}
		if ctx.Err() != nil {
			return &pgwire.Error{Code: "57014", Message: "canceled while waiting for the primary's lease; the transaction is logged on this node but was not acknowledged", Err: ctx.Err()}
		}
		if now.After(deadline) {
			r.log.Warn("a commit waited for the primary's lease in vain", "gsn", gsn, "epoch", epoch, "err", err)
			return &pgwire.Error{Code: codeResolutionUnknown,
				Message: fmt.Sprintf("node %s lost its primary lease (the coordinator is unreachable from it) before GSN %d could be acknowledged; whether the transaction survives depends on the next primary", r.id, gsn),
				Hint:    "check on the primary `tandem status` shows whether the transaction's changes are there before retrying it", Err: fmt.Errorf("%w: %w", ErrLeaseLost, err)}
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// markDegraded records in the map, before this primary acknowledges any
// commit without them, that it no longer waits for the other nodes. It
// fails (and the caller must not degrade) when the coordinator cannot
// apply it: without a quorum the primary cannot acknowledge anyway.
func (r *Agent) markDegraded(ctx context.Context) error { return r.markDegradedBy(ctx, time.Time{}) }

// markDegradedBy is markDegraded giving up at due (zero: 2 s per standby).
func (r *Agent) markDegradedBy(ctx context.Context, due time.Time) error {
	if !r.Automatic() {
		return nil
	}
	r.degradeMu.Lock()
	defer r.degradeMu.Unlock()
	ep := r.epoch()
	for _, n := range r.cfg.Nodes {
		if n.ID == r.id {
			continue
		}
		wait := 2 * time.Second
		if !due.IsZero() {
			wait = min(wait, max(time.Until(due), 50*time.Millisecond))
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
		err := r.coord.SetDegraded(cctx, ep, n.ID, true)
		cancel()
		if err != nil {
			return fmt.Errorf("mark standby %s degraded in the cluster map: %w", n.ID, err)
		}
	}
	return nil
}

// clearDegraded tells the map a standby holds every commit again: only
// when this primary no longer runs degraded (read first) and the standby
// acknowledged, at the configured level, the last GSN assigned after that
// (so every commit answered while degraded is on it).
func (r *Agent) clearDegraded(ctx context.Context, m coordinator.Map) {
	level := r.safeness.Load().(string)
	// Under degradeMu, so that a degrade recorded meanwhile comes after
	// this clear in the map, and with degradePending, so that a degrade
	// recorded just before is not undone before its flag is set.
	// Only while this primary holds its lease (the coordinator answered
	// within it), with a short timeout: the lock is held across the call,
	// and a commit recording a degrade must not wait long for it (a
	// primary cut off from the coordinator must answer its commits 08007
	// on time).
	if r.keeper != nil && r.keeper.Check(r.epoch()) != nil {
		return
	}
	r.degradeMu.Lock()
	defer r.degradeMu.Unlock()
	if level == "1-safe" || r.degraded.Load() || r.degradePending.Load() {
		return
	}
	// Not the log's end: under steady writes a standby is always a few
	// commits behind it, and the mark would never be cleared (a failover
	// then finds no candidate). Every commit since cleanFrom waited for
	// the standby.
	last := r.cleanFrom.Load()
	for id, a := range m.Acks {
		if !a.Degraded {
			continue
		}
		r.ackMu.Lock()
		p := r.peers[id]
		var pos uint64
		if p != nil {
			switch level {
			case "2-safe-received":
				pos = p.received.Load()
			case "2-safe-visible":
				pos = p.applied.Load()
			default:
				pos = p.durable.Load()
			}
		}
		r.ackMu.Unlock()
		if p == nil || pos < last {
			continue
		}
		wait := r.cfg.Repl.Lease.Duration / 2
		if wait <= 0 || wait > 2*time.Second {
			wait = 2 * time.Second
		}
		cctx, cancel := context.WithTimeout(ctx, wait)
		if err := r.coord.SetDegraded(cctx, m.Epoch, id, false); err == nil {
			r.log.Info("standby holds every commit again: no longer marked degraded in the cluster map", "standby", id, "gsn", pos)
		}
		cancel()
	}
}

// reportLoop: a standby reports what it holds; the primary clears
// degraded marks of standbys that caught up.
func (r *Agent) reportLoop(ctx context.Context) {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	type report struct {
		epoch, gsn uint64
		level      string
	}
	var last report
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m := r.coord.Map()
		if !m.Initialized {
			continue
		}
		switch r.role() {
		case RoleStandby:
			if m.Primary == r.id || r.applyFail.Load() != nil {
				continue
			}
			now := report{r.epoch(), r.rlog.LastGSN(), m.Safeness}
			if a, ok := m.Acks[r.id]; ok && now == last && a.Epoch == now.epoch {
				continue // nothing new, and the map has it
			}
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err := r.coord.ReportAck(cctx, now.epoch, now.gsn, now.level)
			cancel()
			if err == nil {
				last = now
			}
			if err != nil && !errors.Is(err, coordinator.ErrStaleEpoch) && ctx.Err() == nil {
				r.log.Debug("reporting to the coordinator failed", "err", err)
			}
		case RolePrimary:
			if m.Primary == r.id && m.Epoch == r.epoch() {
				r.clearDegraded(ctx, m)
			}
		}
	}
}

// watchMap follows the coordinator's map.
func (r *Agent) watchMap(ctx context.Context) {
	ch := r.coord.Watch(ctx)
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	var last coordinator.Map
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok || ctx.Err() != nil {
				return
			}
			last = m
			if m.Primary != r.id {
				r.promoteFailed.Store(false) // another node is named: nothing to retry
			}
			r.onMap(ctx, m)
		case <-retry.C:
			// A promotion the map asked for failed: no new map may
			// come, since the map already names this node; try again.
			if r.promoteFailed.Load() {
				r.onMap(ctx, last)
			}
		}
	}
}

// onMap makes this node what the map says it is.
func (r *Agent) onMap(ctx context.Context, m coordinator.Map) {
	if !m.Initialized {
		return
	}
	r.stateMu.Lock()
	st := r.state
	r.stateMu.Unlock()
	switch {
	case m.Primary == r.id && st.Role == RoleStandby && m.Epoch > st.Epoch:
		start := time.Now()
		res, err := r.promote(ctx, 0, 0, m.Epoch)
		r.mPromoteSecs.Set(time.Since(start).Seconds())
		if r.keeper != nil {
			r.keeper.Kick()
		}
		if err != nil {
			if !r.promoteFailed.Swap(true) {
				r.log.Error("the coordinator named this node the primary, but promoting failed: trying again every second", "epoch", m.Epoch, "err", err)
			}
			return
		}
		r.promoteFailed.Store(false)
		r.mFailovers.Inc()
		r.log.Warn("the coordinator made this node the primary", "epoch", m.Epoch, "last_gsn", res.LastGSN)
		go func() {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := r.coord.RefineLoss(cctx, m.Epoch, res.LastGSN); err != nil {
				r.log.Warn("reporting the promoted node's last GSN to the coordinator failed; the change's loss count stays an estimate", "err", err)
			}
		}()
	case m.Primary != r.id && st.Role == RolePrimary && m.Epoch > st.Epoch:
		r.log.Warn("the coordinator made another node the primary: this node stops acknowledging and follows it", "primary", m.Primary, "epoch", m.Epoch, "my_epoch", st.Epoch)
		// How far this node acknowledged: the change's 1-safe loss is
		// counted from it (after a restart only the log's end is known).
		acked, exact := r.ackedMax.Load(), true
		if acked == 0 {
			acked, exact = r.rlog.LastGSN(), false
		}
		for _, t := range m.History {
			if t.From == r.id && t.Epoch == st.Epoch+1 {
				go func(epoch uint64) {
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					if err := r.coord.ReportTail(cctx, epoch, acked, exact); err != nil {
						r.log.Warn("reporting how far this node acknowledged failed", "err", err)
					}
				}(t.Epoch)
			}
		}
		r.log.Warn("deposed: the last GSN this node answered success", "gsn", acked, "exact", exact)
		if err := r.followAs(ctx, m.Primary, 0, m.Epoch); err != nil {
			r.log.Error("following the new primary failed", "primary", m.Primary, "err", err)
		}
	case m.Primary != r.id && st.Role == RoleStandby && (st.Primary != m.Primary || m.Epoch > st.Epoch):
		r.log.Info("the coordinator names a new primary: following it", "primary", m.Primary, "epoch", m.Epoch)
		if err := r.followAs(ctx, m.Primary, 0, m.Epoch); err != nil {
			r.log.Error("following the new primary failed", "primary", m.Primary, "err", err)
		}
	}
}

// promoteCoordinated asks the coordinator to hand the primary role to
// this node (tandem promote, switchover) and waits until the map names it
// and it has promoted itself.
func (r *Agent) PromoteCoordinated(ctx context.Context, reason string) (PromoteResult, error) {
	m := r.coord.Map()
	if m.Primary != r.id {
		var err error
		if reason == "switchover" {
			err = r.coord.Switchover(ctx, r.id, m.Epoch)
		} else {
			err = r.coord.Promote(ctx, r.id, m.Epoch)
		}
		// A released lease may have been handed over by the failover
		// rule already (to this node: fine).
		if err != nil && r.coord.Map().Primary != r.id {
			return PromoteResult{}, fmt.Errorf("ask the coordinator to make %s the primary: %w", r.id, err)
		}
	}
	deadline := time.Now().Add(r.cfg.Repl.Lease.Duration + r.cfg.Repl.LeaseGrace.Duration + 15*time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if r.role() == RolePrimary {
			return PromoteResult{Node: r.id, Epoch: r.epoch(), LastGSN: r.rlog.LastGSN()}, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return PromoteResult{}, fmt.Errorf("the coordinator did not make %s the primary in time (is it caught up? `tandem status` shows the map)", r.id)
}

// releaseLease gives the lease up once this primary stopped acknowledging
// (switchover, forced promote of another node), so the hand-over does not
// wait for the lease to lapse.
func (r *Agent) releaseLease(ctx context.Context) {
	if !r.Automatic() {
		return
	}
	ep := r.epoch()
	r.leaseReleased.Store(true)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := r.coord.ReleaseLease(cctx, ep, r.ackedMax.Load()); err != nil {
		r.log.Warn("releasing the lease failed; it lapses by itself", "err", err)
	}
}

// setCoordinated records a new safeness level in the map (tandem set).
// Raising it from 1-safe, the primary first marks its standbys degraded:
// they may lack commits answered at 1-safe, and the mark is cleared once
// they hold everything.
func (r *Agent) setCoordinated(level string) error {
	if !r.Automatic() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r.role() == RolePrimary && r.safeness.Load().(string) == "1-safe" && level != "1-safe" {
		if err := r.markDegraded(ctx); err != nil {
			return fmt.Errorf("safeness %s: %w", level, err)
		}
	}
	if err := r.coord.SetSafeness(ctx, level); err != nil {
		return fmt.Errorf("record safeness %s in the cluster map: %w", level, err)
	}
	return nil
}

// leaseGone is the answer for a commit that has waited, since start, for
// its standby on a primary whose lease is gone: lease + grace + ack_timeout
// after the wait began without a lease, the node is cut off from the
// coordinator and another node may be the primary; nobody can say whether
// the commit survives (08007). nil while the lease holds or that time has
// not passed.
func (r *Agent) leaseGone(start time.Time) error {
	if r.keeper == nil {
		return nil
	}
	err := r.keeper.Check(r.epoch())
	if err == nil || time.Since(start) < r.cfg.Repl.Lease.Duration+r.cfg.Repl.LeaseGrace.Duration+r.cfg.Repl.AckTimeout.Duration {
		return nil
	}
	r.log.Warn("a commit waited for its standby on a primary without a lease: answering 08007", "err", err)
	return &pgwire.Error{Code: codeResolutionUnknown,
		Message: fmt.Sprintf("node %s lost its primary lease (the coordinator is unreachable from it) while the commit waited for its standby; whether the transaction survives depends on the next primary", r.id),
		Hint:    "check on the primary `tandem status` shows whether the transaction's changes are there before retrying it", Err: ErrLeaseLost}
}
