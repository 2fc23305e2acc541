package physical

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/coordinator"
)

// Automatic failover for the physical engine (replication.failover =
// "automatic"; DESIGN.md "Automatic failover"). The coordinator's map and
// failover rule are the writeset engine's, with WAL positions (LSNs as
// 64-bit numbers) where that engine has GSNs:
//
//   - the primary holds the coordinator's lease (a Keeper); the position
//     it renews with is what its synchronous standby confirmed at the
//     safeness level (pg_stat_replication), so a standby's own report
//     reaches it at once;
//   - PostgreSQL acknowledges commits itself, so the lease cannot gate
//     them one by one: a primary whose lease runs out freezes its server
//     (fencing: every process SIGSTOPped) before the coordinator may
//     promote another node (lease + grace); it goes on if the lease comes
//     back, and is killed, never continued, if another node was promoted. At a 2-safe level a commit needs the synchronous standby's
//     confirmation anyway, and a standby being promoted confirms nothing
//     more, so the old primary cannot acknowledge what the new one lacks;
//     the fence is what keeps it from taking any write in the new epoch;
//   - before it empties synchronous_standby_names (degrade) it marks its
//     standbys degraded in the map, so the rule never promotes a standby
//     that lacks a commit answered at 1-safe; the mark goes once the
//     standby confirmed the WAL position at which the level was restored;
//   - standbys report the WAL they received every 250 ms;
//   - every node follows the map: named the primary of a newer epoch, a
//     standby promotes itself (pg_promote) with the map's epoch; a primary
//     the map replaced stops and follows the new one (pg_rewind).

// reportEvery is how often a standby tells the coordinator what it holds.
const reportEvery = 250 * time.Millisecond

// Automatic reports whether this node acts on the coordinator's map.
func (e *Engine) Automatic() bool { return e.coord != nil && e.c.Repl.Failover == "automatic" }

// AttachCoordinator wires the engine to the coordinator (with failover =
// "automatic"; with "manual" the group keeps the map and nothing acts).
func (e *Engine) AttachCoordinator(ctx context.Context, co *coordinator.Coordinator) {
	if co == nil {
		return
	}
	e.coord = co
	if !e.Automatic() {
		return
	}
	e.keeper = coordinator.NewKeeper(co, e.leaseEpoch, e.confirmed.Load)
	go e.keeper.Run(ctx)
	go e.fenceLoop(ctx)
	go e.coordLoop(ctx)
	go e.watchMap(ctx)
}

// leaseEpoch is the epoch the keeper renews the lease for: this node's
// while it is the primary with its server running, and while it is fenced
// (its server frozen or stopped for a lost lease): the coordinator grants
// the lease again only if this node is still the primary of that epoch,
// and only such a grant continues or restarts the server (fenceLoop,
// coordLoop).
func (e *Engine) leaseEpoch() uint64 {
	st, _ := e.state()
	if st.Role != RolePrimary || e.released.Load() || (e.srv.Load() == nil && !e.fenced.Load()) {
		return 0
	}
	return st.Epoch
}

// ParseLSN reads PostgreSQL's text form of a WAL position ("16/B374D848")
// as the 64-bit number it stands for.
func ParseLSN(s string) (uint64, error) { return parseLSN(s) }

// FormatLSN writes a WAL position in PostgreSQL's text form (pg_lsn).
func FormatLSN(n uint64) string { return fmt.Sprintf("%X/%X", n>>32, uint32(n)) }

// parseLSN reads PostgreSQL's text form of a WAL position ("16/B374D848").
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("not an LSN: %q", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("not an LSN: %q", s)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("not an LSN: %q", s)
	}
	return h<<32 | l, nil
}

// confirmedAt is the WAL position the synchronous standbys confirmed at
// safeness level (the highest among them; 0 when none streams).
func confirmedAt(level string, reps []Replica) uint64 {
	var best uint64
	for _, r := range reps {
		if r.SyncState != "sync" && r.SyncState != "quorum" {
			continue
		}
		v := r.Written
		switch level {
		case "2-safe-visible":
			v = r.Replayed
		case "2-safe-durable":
			v = r.Flushed
		}
		if n, err := parseLSN(v); err == nil && n > best {
			best = n
		}
	}
	return best
}

// coordLoop: a standby reports what it received; a primary keeps the
// confirmed position for its lease renewals, clears degraded marks, and
// fences itself when its lease ran out.
func (e *Engine) coordLoop(ctx context.Context) {
	t := time.NewTicker(reportEvery / 5)
	defer t.Stop()
	var lastReport time.Time
	var reported uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, _ := e.state()
		if st.Role == RolePrimary {
			e.unfenceIfLeaseBack(ctx, st)
		}
		m := e.coord.Map()
		if !m.Initialized || e.srv.Load() == nil {
			continue
		}
		switch st.Role {
		case RoleStandby:
			if m.Primary == e.cfg.ID || time.Since(lastReport) < reportEvery {
				continue
			}
			lastReport = time.Now()
			var lsn uint64
			err := e.withConn(ctx, func(c *pgconn.PgConn) error {
				rows, err := query(ctx, c, "SELECT coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn(), '0/0')::text")
				if err == nil && len(rows) == 1 {
					lsn, err = parseLSN(rows[0][0])
				}
				return err
			})
			if err != nil {
				continue
			}
			if a, ok := m.Acks[e.cfg.ID]; ok && a.Epoch == m.Epoch && lsn == reported {
				continue // nothing new, and the map has it
			}
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err = e.coord.ReportAck(cctx, m.Epoch, lsn, m.Safeness)
			cancel()
			if err == nil {
				reported = lsn
			} else if !errors.Is(err, coordinator.ErrStaleEpoch) && ctx.Err() == nil {
				e.log.Debug("reporting to the coordinator failed", "err", err)
			}
		case RolePrimary:
			// As often as the standbys report (the loop's 50 ms tick
			// is for unfencing): asked at 20 Hz, the question alone
			// kept an idle primary's server busy 0.04 core.
			if m.Primary != e.cfg.ID || m.Epoch != st.Epoch || time.Since(lastReport) < reportEvery {
				continue
			}
			lastReport = time.Now()
			conf, err := e.syncConfirmed(ctx, st.Safeness)
			if err != nil {
				continue
			}
			for {
				cur := e.confirmed.Load()
				if conf <= cur || e.confirmed.CompareAndSwap(cur, conf) {
					break
				}
			}
			e.clearDegraded(ctx, m, conf)
		}
	}
}

// fenceLoop checks the lease every 50 ms, on its own: coordLoop's other
// work (SQL on the status connection, Raft calls that wait out their
// timeouts while the coordinator is out of reach) delayed the check by
// more than a second on a loaded machine (e2e TestPhysicalFencePartition).
func (e *Engine) fenceLoop(ctx context.Context) {
	t := time.NewTicker(reportEvery / 5)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if st, _ := e.state(); st.Role == RolePrimary {
			e.thawIfLeaseBack(st)
			e.fenceIfLeaseLost(ctx, st)
			e.killIfFrozenPastGrace(st)
		}
	}
}

// fenceIfLeaseLost freezes a primary's server once its lease ran out: from
// then on the coordinator may promote another node (after grace more), and
// this one must take no write. The lease is checked only after it was held
// once in this epoch (a primary that has just started acquires it first).
// Frozen (every process SIGSTOPped where it is), the server answers
// nothing, and it continues where it was if the lease comes back
// (thawIfLeaseBack); if another node is made the primary instead, it is
// killed without ever running again (onMap, follow). Where it cannot be
// frozen it is stopped (immediate shutdown) and restarted later.
func (e *Engine) fenceIfLeaseLost(ctx context.Context, st state) {
	if e.fenced.Load() || e.srv.Load() == nil {
		return
	}
	g := e.keeper.Grant()
	if g.Epoch == st.Epoch {
		e.heldEpoch.Store(st.Epoch)
	}
	if e.heldEpoch.Load() != st.Epoch || e.keeper.Check(st.Epoch) == nil {
		return
	}
	// No lock is taken before the server is frozen or told to quit: an
	// operation that holds opMu (a degrade waiting for the coordinator, a
	// Set) must not delay the fence. It then waits on the frozen server
	// (or fails against the stopped one).
	e.fenced.Store(true)
	start := time.Now()
	m := e.srv.Load()
	if m == nil {
		return
	}
	err := m.Freeze()
	if err == nil {
		e.frozenAt.Store(time.Now().UnixNano())
		e.frozen.Store(true)
		e.log.Warn("this primary lost its lease (the coordinator is out of reach): its server is frozen so that it takes no write while another node may be promoted; it goes on if the lease comes back", "epoch", st.Epoch, "took", time.Since(start).Round(time.Microsecond))
		return
	}
	e.log.Warn("this primary lost its lease (the coordinator is out of reach), and freezing its server failed: stopping it so that it takes no write while another node may be promoted", "epoch", st.Epoch, "err", err)
	e.stopping.Store(true)
	_ = m.StopImmediate()
	e.opMu.Lock()
	e.fenceServer()
	e.opMu.Unlock()
	e.log.Warn("the fenced primary's server is down", "epoch", st.Epoch, "took", time.Since(start).Round(time.Millisecond))
}

// killIfFrozenPastGrace kills a primary's server that stayed frozen for
// lease_grace: from then on the coordinator may promote another node, and
// the frozen server's sessions would wait for nothing (a partition can
// last); killed, they end and their clients go elsewhere. The server runs
// again (crash recovery) once the lease is back (unfenceIfLeaseBack), or
// rewinds to follow the new primary.
func (e *Engine) killIfFrozenPastGrace(st state) {
	if !e.frozen.Load() || time.Since(time.Unix(0, e.frozenAt.Load())) < e.c.Repl.LeaseGrace.Duration {
		return
	}
	m := e.srv.Load()
	if m == nil {
		return
	}
	start := time.Now()
	e.stopping.Store(true)
	_ = m.StopImmediate() // kills the frozen server: it never runs again
	e.opMu.Lock()
	e.fenceServer()
	e.opMu.Unlock()
	e.log.Warn("the lease did not come back within lease_grace, so another node may be promoted: the frozen server was killed (its sessions end; crash recovery when it runs again)", "epoch", st.Epoch, "lease_grace", e.c.Repl.LeaseGrace.Duration)
	e.log.Warn("the fenced primary's server is down", "epoch", st.Epoch, "took", time.Since(start).Round(time.Millisecond))
}

// thawIfLeaseBack continues a frozen primary's server once the keeper
// holds the lease of its epoch again: the coordinator granted it, so no
// one was promoted meanwhile (see unfenceIfLeaseBack for why the map is not
// enough). It takes no lock that an operation waiting on the frozen server
// may hold.
func (e *Engine) thawIfLeaseBack(st state) {
	if !e.frozen.Load() || e.keeper.Check(st.Epoch) != nil {
		return
	}
	m := e.srv.Load()
	if m == nil {
		return
	}
	if err := m.Thaw(); err != nil {
		e.log.Error("continuing the frozen primary failed", "err", err)
		return
	}
	e.frozen.Store(false)
	e.fenced.Store(false)
	e.log.Info("the lease is back and this node is still the primary: its server goes on", "epoch", st.Epoch)
}

// unfenceIfLeaseBack restarts a fenced primary's stopped server (one that
// could not be frozen) once the keeper
// holds the lease of its epoch again: the coordinator granted it, so no
// one was promoted meanwhile. A map naming this node the primary of its
// epoch is not enough: a node that was cut off applies the entries it
// missed one by one once it reaches the group again, and the first of
// them may be from before a failover it has not applied yet (restarting
// on such a map, a cut-off primary took writes at 1-safe after the other
// node was promoted: e2e TestPhysicalFencePartition).
func (e *Engine) unfenceIfLeaseBack(ctx context.Context, st state) {
	if !e.fenced.Load() || e.frozen.Load() || e.keeper.Check(st.Epoch) != nil {
		return
	}
	e.opMu.Lock()
	cur, _ := e.state()
	var err error
	if e.fenced.Load() && cur.Role == RolePrimary && cur.Epoch == st.Epoch && e.srv.Load() == nil {
		if err = e.startServer(ctx, cur); err == nil {
			e.fenced.Store(false)
		}
	}
	e.opMu.Unlock()
	if err != nil {
		e.log.Error("restarting the fenced primary failed", "err", err)
		return
	}
	e.log.Info("the lease is back and this node is still the primary: its server runs again", "epoch", st.Epoch)
}

// markDegraded records in the map, before this primary commits without
// its standbys, that they may lack what it commits from now on. It fails
// (and the caller must not degrade) when the coordinator cannot apply it.
func (e *Engine) markDegraded(ctx context.Context, epoch uint64) error {
	if !e.Automatic() {
		return nil
	}
	for _, n := range e.c.Nodes {
		if n.ID == e.cfg.ID {
			continue
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		err := e.coord.SetDegraded(cctx, epoch, n.ID, true)
		cancel()
		if err != nil {
			return fmt.Errorf("mark standby %s degraded in the cluster map: %w", n.ID, err)
		}
	}
	return nil
}

// clearDegraded tells the map a standby holds every commit again: once
// this primary commits at its level again and the synchronous standby
// confirmed the position at which it did (cleanFrom: every commit answered
// while degraded is before it).
func (e *Engine) clearDegraded(ctx context.Context, m coordinator.Map, conf uint64) {
	from := e.cleanFrom.Load()
	if e.degraded.Load() || from == 0 || conf < from || e.keeper.Check(m.Epoch) != nil {
		return
	}
	for id, a := range m.Acks {
		if !a.Degraded {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := e.coord.SetDegraded(cctx, m.Epoch, id, false)
		cancel()
		if err != nil {
			e.log.Debug("clearing a standby's degraded mark failed", "standby", id, "err", err)
			continue
		}
		e.log.Info("the standby holds every commit again: eligible for failover", "standby", id)
	}
}

// watchMap follows the coordinator's map.
func (e *Engine) watchMap(ctx context.Context) {
	ch := e.coord.Watch(ctx)
	retry := time.NewTicker(promoteRetry)
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
			if m.Primary != e.cfg.ID {
				e.promoteFailed.Store(false) // another node is named: nothing to retry
			}
			e.onMap(ctx, m)
		case <-retry.C:
			// A promotion the map asked for failed (the server was
			// stopped): no new map may come, since the map already
			// names this node; ask again.
			if e.promoteFailed.Load() {
				e.onMap(ctx, last)
			}
		}
	}
}

// promoteRetry is how often a failed promotion is tried again.
const promoteRetry = time.Second

// onMap makes this node what the map says it is.
func (e *Engine) onMap(ctx context.Context, m coordinator.Map) {
	if !m.Initialized {
		return
	}
	st, _ := e.state()
	switch {
	case m.Primary == e.cfg.ID && st.Role == RoleStandby && m.Epoch > st.Epoch:
		res, err := e.promote(ctx, "", 0, m.Epoch)
		e.keeper.Kick()
		if err != nil {
			if !e.promoteFailed.Swap(true) {
				e.log.Error("the coordinator named this node the primary, but promoting failed: trying again every second", "epoch", m.Epoch, "err", err)
			}
			return
		}
		e.promoteFailed.Store(false)
		e.log.Warn("the coordinator made this node the primary", "epoch", m.Epoch, "lsn", res.LastLSN)
		// The old primary is gone (that is why this node was promoted):
		// no standby streams, so with on_standby_loss = "degrade" commits
		// go on 1-safe from the first one, as the writeset engine's do,
		// instead of each waiting ack_timeout first. The map learns it
		// first (markDegraded); the level comes back once a standby
		// streams (Watch).
		if st, _ := e.state(); e.c.Repl.OnStandbyLoss == "degrade" && st.Safeness != "1-safe" && !e.anyStandbyStreams(ctx) {
			e.setDegraded(ctx, true)
		}
	case m.Primary == e.cfg.ID && st.Role == RolePrimary && m.Epoch == st.Epoch && e.fenced.Load():
		// Maybe the lease comes back before anyone was promoted: the
		// keeper asks now; only its grant restarts the server
		// (unfenceIfLeaseBack), not this map, which may be an old one.
		e.keeper.Kick()
	case m.Primary != e.cfg.ID && st.Role == RolePrimary && m.Epoch > st.Epoch:
		e.log.Warn("the coordinator made another node the primary: this node stops and follows it", "primary", m.Primary, "epoch", m.Epoch, "my_epoch", st.Epoch)
		// A frozen server is killed first, without opMu: an operation
		// holding it may be waiting on that server.
		if srv := e.srv.Load(); srv != nil && e.frozen.Load() {
			_ = srv.StopImmediate()
		}
		if err := e.follow(ctx, m.Primary, m.Epoch); err != nil {
			e.log.Error("following the new primary failed", "primary", m.Primary, "err", err)
		}
	case m.Primary != e.cfg.ID && st.Role == RoleStandby && (st.Primary != m.Primary || m.Epoch > st.Epoch):
		e.log.Info("the coordinator names a new primary: following it", "primary", m.Primary, "epoch", m.Epoch)
		if err := e.follow(ctx, m.Primary, m.Epoch); err != nil {
			e.log.Error("following the new primary failed", "primary", m.Primary, "err", err)
		}
	}
}

// promoteCoordinated asks the coordinator to hand the primary role to
// this node (tandem promote, switchover) and waits until the map names it
// and it has promoted itself.
func (e *Engine) promoteCoordinated(ctx context.Context, reason string) (PromoteResult, error) {
	m := e.coord.Map()
	if m.Primary != e.cfg.ID {
		var err error
		if reason == "switchover" {
			err = e.coord.Switchover(ctx, e.cfg.ID, m.Epoch)
		} else {
			err = e.coord.Promote(ctx, e.cfg.ID, m.Epoch)
		}
		if err != nil && e.coord.Map().Primary != e.cfg.ID {
			return PromoteResult{}, fmt.Errorf("ask the coordinator to make %s the primary: %w", e.cfg.ID, err)
		}
	}
	deadline := time.Now().Add(e.c.Repl.Lease.Duration + e.c.Repl.LeaseGrace.Duration + 30*time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if st, _ := e.state(); st.Role == RolePrimary && e.srv.Load() != nil {
			res := PromoteResult{Node: e.cfg.ID, Epoch: st.Epoch, Engine: "physical"}
			_ = e.withConn(ctx, func(c *pgconn.PgConn) error {
				rows, err := query(ctx, c, "SELECT pg_current_wal_lsn()::text")
				if err == nil && len(rows) == 1 {
					res.LastLSN = rows[0][0]
				}
				return err
			})
			return res, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return PromoteResult{}, fmt.Errorf("the coordinator did not make %s the primary in time (is it streaming? `tandem status` shows the map)", e.cfg.ID)
}

// releaseLease gives the lease up once this primary stopped (a
// switchover's demote), so the hand-over does not wait for it to lapse;
// the position is the old primary's last WAL record, which the target
// must report before it takes over.
func (e *Engine) releaseLease(ctx context.Context, lsn string) {
	st, _ := e.state()
	e.released.Store(true)
	n, _ := parseLSN(lsn)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := e.coord.ReleaseLease(cctx, st.Epoch, n); err != nil {
		e.log.Warn("releasing the lease failed; it lapses by itself", "err", err)
	}
}

// anyStandbyStreams reports whether a standby streams from this primary.
func (e *Engine) anyStandbyStreams(ctx context.Context) bool {
	s := e.Status(ctx)
	for _, r := range s.Replicas {
		if r.State == "streaming" {
			return true
		}
	}
	return false
}
