package replication

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/replog"
	"github.com/tandemdb/tandem/secure"
	"github.com/tandemdb/tandem/writeset"
)

// Replication errors.
var (
	ErrNotPrimary  = errors.New("this node is not the primary")
	ErrStaleEpoch  = errors.New("stream from an older epoch")
	ErrNotCaughtUp = errors.New("standby has not caught up")
	// ErrHandedOver: the commit waited for a standby's acknowledgement
	// on a primary that another node replaced (forced promote, step-down);
	// it is not known to survive on the new primary.
	ErrHandedOver = errors.New("the primary role moved to another node while the commit waited for its acknowledgement")
)

// SQLSTATEs a commit gets when its primary is replaced while it waits.
const (
	codeSerialization     = "40001" // known not to survive on the new primary
	codeResolutionUnknown = "08007" // transaction_resolution_unknown
)

// Roles.
const (
	RolePrimary = "primary"
	RoleStandby = "standby"
)

// replState is what a node persists about its role (role.json).
type replState struct {
	Role    string `json:"role"`
	Epoch   uint64 `json:"epoch"`
	Primary string `json:"primary"` // node id a standby follows
}

// peer is one standby as the primary sees it.
type peer struct {
	id                         string
	received, durable, applied atomic.Uint64
	connected                  atomic.Bool
}

// Store is what the agent needs from a back end (declared here, where it
// is used; backend/sqlite and backend/postgres implement it).
type Store interface {
	// AppliedGSN and epoch recorded in the back end.
	AppliedGSN() (gsn, epoch uint64, err error)
	// Apply applies a writeset and records its GSN, exactly once.
	Apply(ctx context.Context, ws *writeset.Writeset) error
	// ApplyBatch applies consecutive writesets, recording the last GSN
	// with them (all or none on SQLite; on PostgreSQL a refused batch goes
	// again one writeset at a time, so the ones before a failing one
	// apply). A writeset the back end refuses is a *writeset.ApplyError.
	ApplyBatch(ctx context.Context, batch []*writeset.Writeset) error
	// SnapshotBytes is a consistent copy and the GSN it holds.
	SnapshotBytes(ctx context.Context) ([]byte, uint64, error)
	// Restore replaces the database with a snapshot.
	Restore(ctx context.Context, data []byte) error
}

// Agent is the replication agent of one node: on the primary it assigns
// GSNs, logs writesets, ships them and waits for acknowledgements per the
// safeness level; on a standby it receives, logs, applies and acknowledges.
type Agent struct {
	// promoteFailed: the map named this node the primary and promoting
	// failed; watchMap tries again with the map it last saw.
	promoteFailed atomic.Bool
	id            string
	cfg           *config.Cluster
	log           *slog.Logger
	db            Store
	rlog          *replog.Log
	dir           string
	stateMu       sync.Mutex
	state         replState
	changed       chan struct{} // closed (and replaced) when state changes

	safeness atomic.Value // string
	degraded atomic.Bool
	// degradePending: a degrade is being recorded in the cluster map (the
	// flag above not yet set); cleanFrom: the log's last GSN when the
	// primary last stopped running degraded (or started, or was
	// promoted). Every commit answered 1-safe has a GSN at most that, so a
	// standby holding cleanFrom holds them all (clearDegraded).
	degradePending atomic.Bool
	cleanFrom      atomic.Uint64
	fenced         atomic.Bool // no new commits (switchover, demotion)
	// takeover: fenced for a forced promote of another node; commits that
	// wait for an ack keep waiting (no degrade) until acked or handed over.
	takeover atomic.Bool
	// prepMu: Prepare holds it shared from Writable to the log append, so
	// Fence reads a last GSN no racing commit passes.
	prepMu sync.RWMutex
	// handover (under ackMu): set when this primary follows another node;
	// commits still waiting resolve against it.
	handover *handover
	inflight sync.WaitGroup
	ackMu    sync.Mutex
	ackCond  *sync.Cond
	peers    map[string]*peer

	// standby side
	received    atomic.Uint64
	applied     atomic.Uint64
	primaryLast atomic.Uint64 // the primary's last GSN as last heard
	follow      context.CancelFunc
	followDone  chan struct{}

	// ident authenticates the replication stream (nil: inter_node =
	// "none"); token goes with the peers' /status polls.
	ident *secure.Identity
	token string

	// applyFail is set while this standby holds a writeset it cannot
	// apply: it stops following until restarted (or told to follow).
	applyFail atomic.Pointer[ApplyFailure]
	// failedPeers: standbys that reported an apply failure (primary side,
	// under ackMu); cleared when the standby attaches again.
	failedPeers map[string]ApplyFailure

	mDegraded    prometheus.Gauge
	mCommits     prometheus.Counter
	mWaits       *prometheus.HistogramVec
	mApplyFailed prometheus.Gauge
	// reseeding: the next stream asks for a snapshot (on_apply_failure =
	// reseed); mApplyReseeds counts such re-seeds.
	reseeding     atomic.Bool
	mApplyReseeds prometheus.Counter
	mPeersFailed  prometheus.Gauge

	// Automatic failover (coordinate.go): the coordinator, the lease
	// keeper (nil unless failover = "automatic"), the highest GSN answered
	// success to a client, whether this primary released its lease, and
	// the serialization of degraded marks.
	coord         *coordinator.Coordinator
	keeper        *coordinator.Keeper
	ackedMax      atomic.Uint64
	leaseReleased atomic.Bool
	degradeMu     sync.Mutex
	mFailovers    prometheus.Counter
	mPromoteSecs  prometheus.Gauge
	// opMu serializes changes of role (the map watch, admin actions).
	opMu sync.Mutex
	// sessions: the highest GSN per router session tag (sessions.go).
	sessions pgwire.SessionGSNs
	// Read consistency (positions.go): the GSN being applied, waiters
	// for the applied GSN, and the test-only apply delay.
	applying   atomic.Uint64
	appliedMu  sync.Mutex
	appliedCh  chan struct{}
	applyDelay time.Duration
}

// ApplyFailure is a writeset a standby cannot apply: its GSN, the
// statement the back end refused and the error. The standby shows it in
// /status and reports it to the primary.
type ApplyFailure struct {
	GSN       uint64    `json:"gsn"`
	Statement string    `json:"statement"`
	Error     string    `json:"error"`
	At        time.Time `json:"at"`
}

// handshakeTimeout bounds a replication connection's TLS handshake and
// the peer's hello.
const handshakeTimeout = 10 * time.Second

// isMember reports whether peer names a node of the cluster map other
// than self.
func isMember(c *config.Cluster, self string) func(string) bool {
	return func(peer string) bool {
		if peer == self {
			return false
		}
		_, ok := c.Node(peer)
		return ok
	}
}

// SetTrust gives the agent the node's cluster certificate (nil:
// inter_node = "none") and the admin token its peers' /status polls need.
func (r *Agent) SetTrust(ident *secure.Identity, token string) { r.ident, r.token = ident, token }

// Role is "primary" or "standby".
func (r *Agent) Role() string { return r.role() }

// Following reports whether the standby side is running.
func (r *Agent) Following() bool { return r.follow != nil }

func (r *Agent) role() string {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	return r.state.Role
}

// stateNow is the role, epoch and primary, and a channel closed at the
// next change (the router's watch follows it).
func (r *Agent) stateNow() (replState, <-chan struct{}) {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.state, r.changed
}

func (r *Agent) epoch() uint64 {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	return r.state.Epoch
}

func (r *Agent) saveState(s replState) error {
	r.stateMu.Lock()
	r.state = s
	if r.changed != nil {
		close(r.changed)
	}
	r.changed = make(chan struct{})
	r.stateMu.Unlock()
	b, _ := json.MarshalIndent(s, "", "  ")
	tmp := filepath.Join(r.dir, "role.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	f, err := os.Open(tmp)
	if err == nil {
		_ = f.Sync()
		f.Close()
	}
	return os.Rename(tmp, filepath.Join(r.dir, "role.json"))
}

func durabilityMode(s string) replog.Mode {
	switch s {
	case "strict":
		return replog.Strict
	case "adaptive":
		return replog.Adaptive
	}
	return replog.Relaxed
}

// newRepl opens the node's replication log and recovers: the back end
// re-applies whatever the log holds beyond its applied GSN.
func New(ctx context.Context, c *config.Cluster, id, dir string, db Store, log *slog.Logger, reg prometheus.Registerer) (*Agent, error) {
	r := &Agent{id: id, cfg: c, log: log.With("component", "replication"), db: db, dir: dir, peers: map[string]*peer{}, failedPeers: map[string]ApplyFailure{}}
	r.applyDelay = testApplyDelay(id, r.log)
	r.ackCond = sync.NewCond(&r.ackMu)
	r.safeness.Store(c.Repl.Safeness)
	r.mDegraded = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tandem_repl_degraded", Help: "1 while the primary commits 1-safe because no standby answered within ack_timeout."})
	r.mCommits = prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem_repl_commits_total", Help: "Replicated commits (GSNs assigned) on this node."})
	r.mWaits = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tandem_repl_commit_wait_seconds", Help: "Time a commit waited for durability and acknowledgements.", Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16)}, []string{"safeness"})
	r.mApplyFailed = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tandem_repl_apply_failed", Help: "1 while this standby holds a writeset it cannot apply and has stopped following (see /status replication.apply_failed)."})
	r.mPeersFailed = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tandem_repl_standbys_apply_failed", Help: "Standbys that reported a writeset they cannot apply (primary; see /status replication.failed_standbys)."})
	r.mApplyReseeds = prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem_repl_apply_failure_reseeds_total", Help: "Re-seeds this standby asked for after a writeset it could not apply (replication.on_apply_failure = reseed)."})
	r.mFailovers = prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem_repl_coordinated_promotions_total", Help: "Times the coordinator made this node the primary (failover = automatic: failovers, promotes and switchovers)."})
	r.mPromoteSecs = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tandem_repl_last_promotion_seconds", Help: "How long this node took, the last time the coordinator named it primary, to apply what it had received and take writes (the failover's last step; tandem_coord_last_change_wait_seconds is the wait for the lease before it)."})
	reg.MustRegister(r.mDegraded, r.mCommits, r.mWaits, r.mApplyFailed, r.mPeersFailed, r.mApplyReseeds, r.mFailovers, r.mPromoteSecs)

	// Role: persisted, else the first node of the file is the primary.
	st := replState{Role: RoleStandby, Primary: c.Nodes[0].ID}
	if b, err := os.ReadFile(filepath.Join(dir, "role.json")); err == nil {
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("node %s: read role.json: %w", id, err)
		}
	} else if c.Nodes[0].ID == id {
		st = replState{Role: RolePrimary, Epoch: 1, Primary: id}
	}
	applied, dbEpoch, err := db.AppliedGSN()
	if err != nil {
		return nil, err
	}
	if dbEpoch > st.Epoch {
		st.Epoch = dbEpoch
	}
	mode := durabilityMode(c.Repl.Durability)
	if st.Role == RoleStandby {
		mode = durabilityMode(c.Repl.StandbyDurability)
	}
	rl, err := replog.Open(filepath.Join(dir, "replog"), replog.Options{Mode: mode, FlushInterval: c.Repl.FlushInterval.Duration,
		RetainRecords: c.Repl.RetainRecords, SegmentSize: c.Repl.SegmentBytes, MaxRecordSize: int(c.Repl.MaxWritesetBytes), FirstGSN: applied + 1, FirstEpoch: st.Epoch, Logger: r.log})
	if err != nil {
		return nil, fmt.Errorf("node %s: open replication log: %w", id, err)
	}
	r.rlog = rl
	if rec := rl.Recovered(); rec.DroppedBytes > 0 {
		r.log.Warn("replication log: dropped a torn tail", "bytes", rec.DroppedBytes, "reason", rec.Reason)
	}
	// Exactly-once recovery: re-apply what the log holds beyond the back end.
	if last := rl.LastGSN(); last > applied {
		if applied+1 < rl.FirstGSN() {
			rl.Close()
			return nil, fmt.Errorf("node %s: the back end is at GSN %d but the log starts at %d: re-seed this node", id, applied, rl.FirstGSN())
		}
		n, err := r.replay(ctx, applied+1, last)
		var ae *writeset.ApplyError
		switch {
		case err != nil && errors.As(err, &ae) && st.Role == RoleStandby:
			// A standby that cannot apply what it received starts
			// anyway, to report it (it does not follow).
			r.setApplyFailed(ae)
			applied += uint64(n)
		case err != nil:
			rl.Close()
			return nil, err
		default:
			r.log.Info("recovered from the replication log", "reapplied", n, "applied_gsn", last)
			applied = last
		}
	} else if last < applied {
		// The back end is ahead of the log (a log tail lost in a machine
		// crash under relaxed durability): those GSNs cannot be shipped.
		r.log.Warn("back end is ahead of the replication log; restarting the log after it", "log_last", last, "applied", applied)
		rl.Close()
		if err := os.RemoveAll(filepath.Join(dir, "replog")); err != nil {
			return nil, err
		}
		if rl, err = replog.Open(filepath.Join(dir, "replog"), replog.Options{Mode: mode, FlushInterval: c.Repl.FlushInterval.Duration, RetainRecords: c.Repl.RetainRecords, SegmentSize: c.Repl.SegmentBytes, MaxRecordSize: int(c.Repl.MaxWritesetBytes), FirstGSN: applied + 1, FirstEpoch: st.Epoch, Logger: r.log}); err != nil {
			return nil, err
		}
		r.rlog = rl
	}
	r.setApplied(applied)
	r.cleanFrom.Store(r.rlog.LastGSN()) // what it answered before a restart may have been 1-safe
	r.received.Store(rl.LastGSN())
	if err := r.saveState(st); err != nil {
		return nil, err
	}
	r.indexSessions(100_000)
	return r, nil
}

// indexSessions rebuilds the session tags' highest GSNs from the last max
// records of the log, so a restarted node still answers for the sessions
// whose commits it holds (sessions.go).
func (r *Agent) indexSessions(max uint64) {
	first, last := r.rlog.FirstGSN(), r.rlog.LastGSN()
	if last < first {
		return
	}
	if last-first+1 > max {
		first = last - max + 1
	}
	it, err := r.rlog.ReadFrom(first)
	if err != nil {
		return
	}
	defer it.Close()
	for {
		rec, ok, err := it.TryNext()
		if err != nil || !ok {
			return
		}
		if ws, err := writeset.Decode(rec.Data); err == nil {
			r.sessions.Note(ws.Session, rec.GSN)
		}
	}
}

func (r *Agent) replay(ctx context.Context, from, to uint64) (int, error) {
	it, err := r.rlog.ReadFrom(from)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	n := 0
	for g := from; g <= to; g++ {
		rec, err := it.Next(ctx)
		if err != nil {
			return n, err
		}
		ws, err := writeset.Decode(rec.Data)
		if err != nil {
			return n, fmt.Errorf("replay GSN %d: %w", rec.GSN, err)
		}
		ws.GSN, ws.Epoch = rec.GSN, rec.Epoch
		if err := r.db.Apply(ctx, ws); err != nil {
			return n, err
		}
		r.sessions.Note(ws.Session, ws.GSN)
		n++
	}
	return n, nil
}

// ---- primary side: sqlite.Replicator ----

// Writable implements sqlite.Replicator.
func (r *Agent) Writable() error {
	if r.role() != RolePrimary {
		r.stateMu.Lock()
		p := r.state.Primary
		r.stateMu.Unlock()
		return &pgwire.Error{Code: "25006", Message: fmt.Sprintf("node %s is a standby (read-only): writes go to the primary %s", r.id, p),
			Hint: "connect through the router, or to the primary; `tandem status` shows which node it is", Err: ErrNotPrimary}
	}
	if r.fenced.Load() {
		return &pgwire.Error{Code: "57P03", Message: fmt.Sprintf("node %s is handing over its primary role; retry in a moment", r.id), Err: ErrNotPrimary}
	}
	return nil
}

// Prepare implements sqlite.Replicator: assign the GSN, log the writeset.
// It runs under the SQLite writer lock, so GSN order is commit order.
func (r *Agent) Prepare(ctx context.Context, ws *writeset.Writeset) (func(context.Context, bool) error, error) {
	r.prepMu.RLock()
	defer r.prepMu.RUnlock()
	if err := r.Writable(); err != nil {
		return nil, err
	}
	r.inflight.Add(1)
	ws.GSN = r.rlog.LastGSN() + 1
	ws.Epoch = r.epoch()
	ws.Origin = r.id
	note := pgwire.CommitNoteFrom(ctx)
	if note != nil {
		ws.Session = note.Tag
	}
	data := writeset.Encode(ws)
	gsn, err := r.rlog.Append(replog.Record{GSN: ws.GSN, Epoch: ws.Epoch, Data: data})
	if errors.Is(err, replog.ErrTooLarge) {
		r.inflight.Done()
		return nil, &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
			Message: fmt.Sprintf("tandem: this transaction's writeset is %d bytes, more than replication.max_writeset_bytes (%d); it was rolled back", len(data), r.cfg.Repl.MaxWritesetBytes),
			Hint:    "split it into smaller transactions (e.g. a data migration in batches of rows), or raise replication.max_writeset_bytes", Err: err}
	}
	if err != nil {
		r.inflight.Done()
		return nil, &pgwire.Error{Code: "58030", Message: "tandem: cannot append to the replication log: " + err.Error(), Err: err}
	}
	r.mCommits.Inc()
	r.ackMu.Lock()
	r.ackCond.Broadcast() // wake shippers
	r.ackMu.Unlock()
	epoch := ws.Epoch
	return func(ctx context.Context, ok bool) error {
		defer r.inflight.Done()
		if !ok {
			r.log.Error("back-end commit failed after the writeset was logged; the node re-applies it from the log at restart", "gsn", gsn)
			return nil
		}
		r.setApplied(gsn)
		if note != nil {
			r.sessions.Note(note.Tag, gsn)
		}
		if err := r.waitSafe(ctx, gsn); err != nil {
			return err
		}
		if err := r.leaseGate(ctx, gsn, epoch); err != nil {
			return err
		}
		if note != nil {
			note.Committed(gsn)
		}
		return nil
	}, nil
}

// handover is how a replaced primary resolves the commits that still
// wait for an acknowledgement: GSNs up to upto are in the new primary's
// log (when known), later ones are not.
type handover struct {
	to    string
	known bool
	upto  uint64
}

// outcome is the answer of a commit at gsn that waited on a primary that
// was handed over: success when the new primary holds it, 40001 when it is
// known not to, 08007 when nobody can tell.
func (h *handover) outcome(id string, gsn uint64) error {
	switch {
	case h.known && gsn <= h.upto:
		return nil
	case h.known:
		return &pgwire.Error{Code: codeSerialization, Message: fmt.Sprintf("node %s lost its primary role to %s before the standby acknowledged GSN %d; the new primary does not have this transaction (it stops at GSN %d)", id, h.to, gsn, h.upto),
			Hint: "the transaction did not survive the failover: retry it on the new primary", Err: ErrHandedOver}
	default:
		return &pgwire.Error{Code: codeResolutionUnknown, Message: fmt.Sprintf("node %s lost its primary role to %s before the standby acknowledged GSN %d; whether the new primary has this transaction is unknown", id, h.to, gsn),
			Hint: "check on the new primary whether the transaction's changes are there before retrying it", Err: ErrHandedOver}
	}
}

// waitSafe blocks until gsn is durable locally (per the log's mode) and
// acknowledged per the safeness level. A commit on a primary that is
// replaced meanwhile never answers success unless the new primary holds
// it: the handover is checked before every other way out, and a primary
// fenced for a takeover does not degrade.
func (r *Agent) waitSafe(ctx context.Context, gsn uint64) error {
	start := time.Now()
	level := r.safeness.Load().(string)
	defer func() { r.mWaits.WithLabelValues(level).Observe(time.Since(start).Seconds()) }()
	if err := r.rlog.WaitDurable(ctx, gsn); err != nil {
		return &pgwire.Error{Code: "58030", Message: "tandem: replication log flush failed: " + err.Error(), Err: err}
	}
	if level == "1-safe" {
		r.ackMu.Lock()
		h := r.handover
		r.ackMu.Unlock()
		if h != nil {
			return h.outcome(r.id, gsn)
		}
		return nil
	}
	deadline := time.Now().Add(r.cfg.Repl.AckTimeout.Duration)
	timer := time.AfterFunc(r.cfg.Repl.AckTimeout.Duration, func() {
		r.ackMu.Lock()
		r.ackCond.Broadcast()
		r.ackMu.Unlock()
	})
	defer timer.Stop()
	stop := context.AfterFunc(ctx, func() {
		r.ackMu.Lock()
		r.ackCond.Broadcast()
		r.ackMu.Unlock()
	})
	defer stop()
	r.ackMu.Lock()
	defer r.ackMu.Unlock()
	for {
		if h := r.handover; h != nil {
			return h.outcome(r.id, gsn)
		}
		if r.acked(level, gsn) {
			if r.degraded.Load() && !r.takeover.Load() {
				r.degraded.Store(false)
				r.cleanFrom.Store(r.rlog.LastGSN())
				r.mDegraded.Set(0)
				r.log.Info("standby caught up: commits are 2-safe again", "safeness", level)
				r.rlog.SetStandbyAttached(true)
			}
			return nil
		}
		takeover := r.takeover.Load()
		if r.degraded.Load() && !takeover {
			return nil // running 1-safe until a standby catches up
		}
		if ctx.Err() != nil {
			return &pgwire.Error{Code: "57014", Message: "canceled while waiting for the standby; the transaction is committed on the primary but its standby acknowledgement is unknown", Err: ctx.Err()}
		}
		if time.Now().After(deadline) {
			if r.cfg.Repl.OnStandbyLoss == "degrade" && !takeover && r.Automatic() {
				// The map must say the standby is degraded before any
				// commit is answered without it; without a quorum that
				// cannot be written, and the commit keeps waiting.
				if e := r.leaseGone(start); e != nil {
					return e
				}
				// Without a lease the coordinator is likely out of reach:
				// the attempt must not outlast the moment the commit is
				// due its 08007 (leaseGone).
				var due time.Time
				if r.keeper != nil && r.keeper.Check(r.epoch()) != nil {
					due = start.Add(r.cfg.Repl.Lease.Duration + r.cfg.Repl.LeaseGrace.Duration + r.cfg.Repl.AckTimeout.Duration + 50*time.Millisecond)
				}
				r.degradePending.Store(true)
				r.ackMu.Unlock()
				err := r.markDegradedBy(ctx, due)
				r.ackMu.Lock()
				if err != nil {
					r.degradePending.Store(false)
					if e := r.leaseGone(start); e != nil {
						return e
					}
					r.log.Warn("no standby acknowledged within ack_timeout, but the coordinator cannot record the degrade: commits wait", "gsn", gsn, "err", err)
					deadline = time.Now().Add(r.cfg.Repl.AckTimeout.Duration)
					timer.Reset(r.cfg.Repl.AckTimeout.Duration)
					continue
				}
			}
			if r.cfg.Repl.OnStandbyLoss == "degrade" && !takeover {
				r.degraded.Store(true)
				r.degradePending.Store(false)
				r.mDegraded.Set(1)
				r.rlog.SetStandbyAttached(false)
				r.log.Warn("no standby acknowledged within ack_timeout: degrading to 1-safe (on_standby_loss = degrade)", "gsn", gsn, "safeness", level, "ack_timeout", r.cfg.Repl.AckTimeout.Duration)
				return nil
			}
			if e := r.leaseGone(start); e != nil {
				return e // on_standby_loss = block, cut off from the coordinator
			}
			deadline = time.Now().Add(r.cfg.Repl.AckTimeout.Duration)
			if takeover {
				r.log.Warn("fenced for a takeover: the commit waits for the standby's acknowledgement or the handover", "gsn", gsn)
			} else {
				r.log.Warn("no standby acknowledged within ack_timeout: commits wait (on_standby_loss = block)", "gsn", gsn)
			}
			timer.Reset(r.cfg.Repl.AckTimeout.Duration)
		}
		r.ackCond.Wait()
	}
}

// acked reports whether enough standbys acknowledged gsn at level. Called
// with ackMu held.
func (r *Agent) acked(level string, gsn uint64) bool {
	total, ok := 0, 0
	for _, p := range r.peers {
		total++
		var pos uint64
		switch level {
		case "2-safe-received":
			pos = p.received.Load()
		case "2-safe-visible":
			pos = p.applied.Load()
		case "2-safe-durable":
			pos = p.durable.Load()
		}
		if pos >= gsn {
			ok++
		}
	}
	standbys := len(r.cfg.Nodes) - 1
	if total < standbys {
		total = standbys
	}
	need := total
	switch r.cfg.Repl.Ack {
	case "one":
		need = 1
	case "majority":
		need = total/2 + 1
	}
	return ok >= need
}

// ---- stream protocol ----
//
// Frames are [type byte][length u32][body]. standby -> primary: 'H' hello
// (JSON), 'A' ack (received, durable, applied: 3 x u64). primary ->
// standby: 'R' record (gsn, epoch u64, writeset bytes), 'S' snapshot (gsn,
// epoch u64, SQLite file bytes), 'K' keepalive (primary's last GSN),
// 'W' durable acks wanted (1 byte: 1 at 2-safe-durable, else 0),
// 'E' error (text).

type hello struct {
	Node      string `json:"node"`
	Epoch     uint64 `json:"epoch"`
	LastGSN   uint64 `json:"last_gsn"`
	LastEpoch uint64 `json:"last_epoch"`
	// ApplyFailed: not a stream request but a report that this standby
	// cannot apply a writeset and has stopped following.
	ApplyFailed *ApplyFailure `json:"apply_failed,omitempty"`
	// Reseed asks the primary for a snapshot whatever the standby's GSN
	// (on_apply_failure = reseed after a writeset it could not apply).
	Reseed bool `json:"reseed,omitempty"`
}

func writeFrame(w *bufio.Writer, typ byte, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(n))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

func readFrame(rd *bufio.Reader, max int) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(rd, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:]))
	if n > max {
		return 0, nil, fmt.Errorf("replication frame of %d bytes exceeds %d", n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rd, b); err != nil {
		return 0, nil, err
	}
	return hdr[0], b, nil
}

func u64s(vs ...uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.BigEndian.PutUint64(b[8*i:], v)
	}
	return b
}

// serveStream accepts standby connections (only answered by a primary).
func (r *Agent) Serve(ctx context.Context, l net.Listener) {
	go func() { <-ctx.Done(); l.Close() }()
	acc := &pgwire.Acceptor{L: l, Log: r.log, Name: "replication " + l.Addr().String()}
	for {
		c, err := acc.Accept(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				r.log.Error("replication listener stopped", "err", err)
			}
			return
		}
		go func() {
			peer, c, err := r.authenticatePeer(c)
			if err != nil {
				r.log.Warn("replication: refused a connection", "remote", c.RemoteAddr().String(), "err", secure.Explain(err))
				c.Close()
				return
			}
			r.ship(ctx, c, peer)
		}()
	}
}

// authenticatePeer runs the TLS handshake of a replication connection: the
// peer must hold a certificate of this cluster's CA naming another node of
// the cluster map. It returns that node id ("" with inter_node = "none":
// the hello's claim is then checked against the map only).
func (r *Agent) authenticatePeer(c net.Conn) (string, net.Conn, error) {
	if r.ident == nil {
		return "", c, nil
	}
	tc := tls.Server(c, r.ident.ServerTLS(isMember(r.cfg, r.id)))
	_ = tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return "", c, err
	}
	_ = tc.SetDeadline(time.Time{})
	return secure.PeerID(tc.ConnectionState()), tc, nil
}

// dialPeer opens a replication connection to node id at addr.
func (r *Agent) dialPeer(ctx context.Context, id, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil || r.ident == nil {
		return c, err
	}
	tc := tls.Client(c, r.ident.ClientTLS(id))
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS handshake with %s at %s: %s", id, addr, secure.Explain(err))
	}
	return tc, nil
}

// ship streams the log to one standby and reads its acknowledgements.
func (r *Agent) ship(ctx context.Context, c net.Conn, authPeer string) {
	defer c.Close()
	rd, w := bufio.NewReader(c), bufio.NewWriterSize(c, 64<<10)
	// A peer that connects and says nothing holds a descriptor: it gets
	// handshakeTimeout to send its hello.
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	typ, body, err := readFrame(rd, 1<<20)
	if err != nil || typ != 'H' {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	var h hello
	if err := json.Unmarshal(body, &h); err != nil {
		return
	}
	sendErr := func(msg string) {
		_ = writeFrame(w, 'E', []byte(msg))
		_ = w.Flush()
	}
	// Only nodes of the cluster map stream, each as itself: a peer's
	// acknowledgements count toward safeness only under its own name.
	if !isMember(r.cfg, r.id)(h.Node) || (r.ident != nil && h.Node != authPeer) {
		r.log.Warn("replication: refused a peer that is not a node of this cluster", "remote", c.RemoteAddr().String(), "claims", h.Node, "certificate", authPeer)
		sendErr("not a node of this cluster")
		return
	}
	if r.role() != RolePrimary {
		sendErr(fmt.Sprintf("node %s is not the primary", r.id))
		return
	}
	if f := h.ApplyFailed; f != nil {
		r.ackMu.Lock()
		r.failedPeers[h.Node] = *f
		r.mPeersFailed.Set(float64(len(r.failedPeers)))
		r.ackMu.Unlock()
		r.log.Error("a standby cannot apply a writeset and stopped following: it counts as lost for safeness (on_standby_loss applies); restart or re-seed it (docs/operations.md)",
			"standby", h.Node, "gsn", f.GSN, "statement", f.Statement, "err", f.Error)
		return
	}
	if h.Epoch > r.epoch() {
		sendErr(fmt.Sprintf("standby %s is at epoch %d, this primary at %d: refusing to ship from an older epoch", h.Node, h.Epoch, r.epoch()))
		r.log.Error("a standby has a newer epoch than this primary: this node must step down", "standby", h.Node, "standby_epoch", h.Epoch)
		return
	}
	log := r.log.With("standby", h.Node)
	from := h.LastGSN + 1
	// Divergence: the standby holds GSNs this log does not (a lost 1-safe
	// tail of an old primary), or the log no longer covers the gap.
	reseed := h.Reseed || h.LastGSN > r.rlog.LastGSN() || from < r.rlog.FirstGSN()
	if !reseed && h.LastGSN >= r.rlog.FirstGSN() {
		if it, err := r.rlog.ReadFrom(h.LastGSN); err == nil {
			rec, ok, _ := it.TryNext()
			it.Close()
			if ok && rec.Epoch != h.LastEpoch {
				reseed = true
			}
		}
	}
	p := &peer{id: h.Node}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if reseed {
		log.Info("re-seeding the standby from a snapshot", "standby_last", h.LastGSN, "log_first", r.rlog.FirstGSN(), "log_last", r.rlog.LastGSN())
		data, gsn, err := r.db.SnapshotBytes(ctx)
		if err != nil {
			log.Error("snapshot failed", "err", err)
			sendErr("re-seed failed on the primary: " + err.Error())
			return
		}
		if err := writeFrame(w, 'S', u64s(gsn, r.epoch()), data); err != nil {
			return
		}
		from = gsn + 1
	}
	it, err := r.rlog.ReadFrom(from)
	if err != nil {
		sendErr(err.Error())
		return
	}
	defer it.Close()
	r.ackMu.Lock()
	r.peers[h.Node] = p
	if _, failed := r.failedPeers[h.Node]; failed {
		delete(r.failedPeers, h.Node)
		r.mPeersFailed.Set(float64(len(r.failedPeers)))
		log.Info("the standby that could not apply a writeset follows again")
	}
	r.ackMu.Unlock()
	p.connected.Store(true)
	log.Info("standby attached", "from_gsn", from)
	defer func() {
		p.connected.Store(false)
		r.ackMu.Lock()
		delete(r.peers, h.Node)
		others := len(r.peers)
		r.ackCond.Broadcast()
		r.ackMu.Unlock()
		if others == 0 {
			// adaptive durability: strict while no standby is attached
			r.rlog.SetStandbyAttached(false)
		}
		log.Warn("standby detached")
	}()
	// Acknowledgements.
	go func() {
		defer cancel()
		for {
			typ, body, err := readFrame(rd, 1<<10)
			if err != nil || typ != 'A' || len(body) != 24 {
				return
			}
			p.received.Store(binary.BigEndian.Uint64(body))
			p.durable.Store(binary.BigEndian.Uint64(body[8:]))
			p.applied.Store(binary.BigEndian.Uint64(body[16:]))
			last := r.rlog.LastGSN()
			caughtUp := p.applied.Load() >= last && r.safeness.Load().(string) != "1-safe"
			if caughtUp {
				r.rlog.SetStandbyAttached(true)
			}
			r.ackMu.Lock()
			// With several standbys (single-master), one caught up is
			// not enough under ack = majority or all: 2-safe resumes
			// once as many as ack asks for hold everything, or commits
			// would wait ack_timeout for a dead one again and again.
			if caughtUp && r.acked("2-safe-visible", last) && r.degraded.CompareAndSwap(true, false) {
				r.cleanFrom.Store(r.rlog.LastGSN())
				r.mDegraded.Set(0)
				r.log.Info("standby caught up: commits are 2-safe again", "standby", h.Node)
			}
			r.ackCond.Broadcast()
			r.ackMu.Unlock()
		}
	}()
	keep := time.NewTicker(200 * time.Millisecond)
	defer keep.Stop()
	// 'W' tells the standby whether commits wait for its durable ack
	// (2-safe-durable, which seed 000 defines as strictly durable on the
	// standby): at the start and whenever `tandem set` changes the level.
	wantSent := -1
	for {
		if want := boolByte(r.safeness.Load().(string) == "2-safe-durable"); int(want) != wantSent {
			if err := writeFrame(w, 'W', []byte{want}); err != nil {
				return
			}
			wantSent = int(want)
		}
		rec, ok, err := it.TryNext()
		if err != nil {
			log.Warn("reading the log for the standby failed", "err", err)
			return
		}
		if ok {
			if err := writeFrame(w, 'R', u64s(rec.GSN, rec.Epoch), rec.Data); err != nil {
				return
			}
			if w.Buffered() < 32<<10 {
				continue // batch what is already there
			}
		}
		if err := w.Flush(); err != nil {
			return
		}
		if ok {
			continue
		}
		// Nothing new: wait for an append, a keepalive tick or the end.
		wait, done := context.WithTimeout(ctx, 200*time.Millisecond)
		rec, err = it.Next(wait)
		done()
		if err == nil {
			if err := writeFrame(w, 'R', u64s(rec.GSN, rec.Epoch), rec.Data); err != nil {
				return
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-keep.C:
			if err := writeFrame(w, 'K', u64s(r.rlog.LastGSN())); err != nil {
				return
			}
		default:
		}
	}
}

// ---- standby side ----

// startFollowing connects to the primary and keeps following it.
func (r *Agent) StartFollowing(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	r.follow = cancel
	r.followDone = make(chan struct{})
	go func() {
		defer close(r.followDone)
		first := true
		for ctx.Err() == nil {
			r.stateMu.Lock()
			primary := r.state.Primary
			r.stateMu.Unlock()
			n, ok := r.cfg.Node(primary)
			if !ok || primary == r.id {
				r.log.Error("standby has no primary to follow", "primary", primary)
				return
			}
			// A writeset that cannot be applied is retried once when
			// following starts (a restart, /admin/follow), never in a
			// loop: the standby stops and tells the primary.
			if r.applyFail.Load() != nil && (!first || !r.retryApply(ctx)) {
				if r.cfg.Repl.OnApplyFailure != "reseed" {
					r.reportApplyFailure(ctx, primary, n.Repl)
					return
				}
				// on_apply_failure = reseed: the next stream starts with a
				// snapshot of the primary's database, which replaces this
				// one and whatever made the writeset fail.
				f := r.applyFail.Load()
				r.log.Warn("re-seeding from the primary after a writeset this standby could not apply (on_apply_failure = reseed)",
					"gsn", f.GSN, "statement", f.Statement, "err", f.Error)
				r.reseeding.Store(true)
				r.mApplyReseeds.Inc()
			}
			first = false
			err := r.followOnce(ctx, primary, n.Repl)
			if ctx.Err() != nil {
				return
			}
			if r.applyFail.Load() != nil && r.cfg.Repl.OnApplyFailure != "reseed" {
				continue
			}
			r.log.Warn("replication stream from the primary ended; reconnecting", "primary", primary, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
}

func (r *Agent) stopFollowing() {
	if r.follow != nil {
		r.follow()
		<-r.followDone
		r.follow = nil
	}
}

// catchUpLocal applies what this standby's log holds beyond its back end:
// records an earlier stream received and logged but whose apply had not
// run when that stream ended (a change of primary, a reconnect). The next
// stream starts after the log's end, so without this they would never be
// applied and every later writeset would meet a gap. Applying is exactly
// once (the back end skips GSNs it holds), so an apply of the old stream
// still finishing does no harm.
func (r *Agent) catchUpLocal(ctx context.Context) error {
	applied, _, err := r.db.AppliedGSN()
	if err != nil {
		return fmt.Errorf("read the applied GSN: %w", err)
	}
	last := r.rlog.LastGSN()
	if last <= applied {
		return nil
	}
	if applied+1 < r.rlog.FirstGSN() {
		r.log.Warn("the back end is behind what this standby's log still holds: asking the primary for a snapshot", "applied", applied, "log_first", r.rlog.FirstGSN())
		r.reseeding.Store(true)
		return nil
	}
	n, err := r.replay(ctx, applied+1, last)
	r.setApplied(applied + uint64(n))
	if err != nil {
		var ae *writeset.ApplyError
		if errors.As(err, &ae) {
			r.setApplyFailed(ae)
		}
		return fmt.Errorf("apply the log's tail (GSN %d to %d): %w", applied+1, last, err)
	}
	r.log.Info("applied the tail of this standby's log received on an earlier stream", "from", applied+1, "to", last)
	return nil
}

func (r *Agent) followOnce(ctx context.Context, primary, addr string) error {
	if !r.reseeding.Load() {
		if err := r.catchUpLocal(ctx); err != nil {
			return err
		}
	}
	c, err := r.dialPeer(ctx, primary, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	go func(ctx context.Context) { <-ctx.Done(); c.Close() }(ctx) // ctx is reassigned below: pass it (data race)
	rd, w := bufio.NewReaderSize(c, 64<<10), bufio.NewWriter(c)
	h := hello{Node: r.id, Epoch: r.epoch(), LastGSN: r.rlog.LastGSN(), LastEpoch: r.rlog.LastEpoch(), Reseed: r.reseeding.Load()}
	b, _ := json.Marshal(h)
	if err := writeFrame(w, 'H', b); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// Acknowledgements: one writer sends the three positions (received,
	// durable, applied) whenever any moved, one frame and one flush (one
	// TLS record) per wake-up, however many moved meanwhile: receiving,
	// applying and syncing a commit wake it up to three times, and the
	// ones that arrive while it writes are coalesced.
	ackKick := make(chan struct{}, 1)
	sendAck := func() error {
		select {
		case ackKick <- struct{}{}:
		default:
		}
		return nil
	}
	applyQ := make(chan *writeset.Writeset, 4096)
	errc := make(chan error, 3)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		var last [3]uint64
		for {
			select {
			case <-ctx.Done():
				return
			case <-ackKick:
			}
			now := [3]uint64{r.received.Load(), r.rlog.DurableGSN(), r.applied.Load()}
			if now == last {
				continue
			}
			if err := writeFrame(w, 'A', u64s(now[0], now[1], now[2])); err == nil {
				err = w.Flush()
				if err != nil {
					errc <- err
					return
				}
			} else {
				errc <- err
				return
			}
			last = now
		}
	}()
	// Applier: in GSN order, exactly once (the GSN is recorded with it).
	// The stream waits for it to stop before the next one starts.
	applierDone := make(chan struct{})
	defer func() { cancel(); <-applierDone }()
	go func() {
		defer close(applierDone)
		for {
			select {
			case <-ctx.Done():
				return
			case ws := <-applyQ:
				// Group apply: take what is already queued (bounded).
				batch := []*writeset.Writeset{ws}
				for len(batch) < 256 && len(applyQ) > 0 {
					batch = append(batch, <-applyQ)
				}
				if r.applyDelay > 0 {
					// TANDEM_TEST_APPLY_DELAY (tests only): a slow replica.
					select {
					case <-ctx.Done():
						return
					case <-time.After(r.applyDelay):
					}
				}
				r.applying.Store(batch[len(batch)-1].GSN)
				if err := r.db.ApplyBatch(ctx, batch); err != nil {
					var ae *writeset.ApplyError
					if errors.As(err, &ae) {
						r.setApplyFailed(ae)
					}
					errc <- fmt.Errorf("apply: %w", err)
					return
				}
				r.setApplied(batch[len(batch)-1].GSN)
				for _, ws := range batch {
					r.sessions.Note(ws.Session, ws.GSN)
				}
				if len(applyQ) == 0 {
					if err := sendAck(); err != nil {
						errc <- err
						return
					}
				}
			}
		}
	}()
	// Durability: acknowledge whenever the log's durable GSN moves. A
	// strict log is asked to sync what was received (group commit), and so
	// is a relaxed one while the primary's commits wait for a durable ack
	// (2-safe-durable: "written to a persistent log", seed 000); otherwise
	// a relaxed log reaches disk by itself within flush_interval. Idle,
	// this sleeps until a record arrives or the durable GSN moves.
	received := make(chan struct{}, 1)
	var wantDurable atomic.Bool
	go func() {
		var lastSent uint64
		for ctx.Err() == nil {
			moved := r.rlog.DurableChanged()
			target := r.received.Load()
			if r.rlog.DurableGSN() < target {
				var err error
				switch {
				case r.rlog.EffectiveMode() == replog.Strict:
					err = r.rlog.WaitDurable(ctx, target)
				case wantDurable.Load():
					err = r.rlog.Sync(ctx)
				}
				if err != nil {
					return
				}
			}
			if d := r.rlog.DurableGSN(); d != lastSent {
				lastSent = d
				if err := sendAck(); err != nil {
					errc <- err
					return
				}
				continue
			}
			select {
			case <-ctx.Done():
			case <-moved:
			case <-received:
			}
		}
	}()
	r.log.Info("following the primary", "addr", addr, "from_gsn", h.LastGSN+1)
	for {
		select {
		case err := <-errc:
			return err
		default:
		}
		typ, body, err := readFrame(rd, replog.MaxRecordLimit+1<<20) // a record or a snapshot, with its header
		if err != nil {
			return err
		}
		switch typ {
		case 'R':
			if len(body) < 16 {
				return errors.New("short record frame")
			}
			gsn, epoch := binary.BigEndian.Uint64(body), binary.BigEndian.Uint64(body[8:])
			if epoch < r.rlog.LastEpoch() {
				return fmt.Errorf("%w: record %d of epoch %d, this node is at epoch %d", ErrStaleEpoch, gsn, epoch, r.rlog.LastEpoch())
			}
			data := body[16:]
			if _, err := r.rlog.Append(replog.Record{GSN: gsn, Epoch: epoch, Data: data}); err != nil {
				return fmt.Errorf("append GSN %d: %w", gsn, err)
			}
			r.received.Store(gsn)
			select {
			case received <- struct{}{}:
			default:
			}
			ws, err := writeset.Decode(data)
			if err != nil {
				return fmt.Errorf("decode GSN %d: %w", gsn, err)
			}
			ws.GSN, ws.Epoch = gsn, epoch
			if epoch > r.epoch() {
				r.stateMu.Lock()
				st := r.state
				r.stateMu.Unlock()
				st.Epoch = epoch
				_ = r.saveState(st)
			}
			if rd.Buffered() == 0 {
				if err := sendAck(); err != nil {
					return err
				}
			}
			select {
			case applyQ <- ws:
			case <-ctx.Done():
				return ctx.Err()
			}
		case 'K':
			if len(body) == 8 {
				r.primaryLast.Store(binary.BigEndian.Uint64(body))
			}
		case 'W':
			if len(body) == 1 {
				wantDurable.Store(body[0] == 1)
				select { // a change to 2-safe-durable flushes what is waiting
				case received <- struct{}{}:
				default:
				}
			}
		case 'S':
			if len(body) < 16 {
				return errors.New("short snapshot frame")
			}
			gsn, epoch := binary.BigEndian.Uint64(body), binary.BigEndian.Uint64(body[8:])
			if err := r.installSnapshot(ctx, gsn, epoch, body[16:]); err != nil {
				return fmt.Errorf("install snapshot: %w", err)
			}
			if r.reseeding.Swap(false) {
				r.applyFail.Store(nil)
				r.mApplyFailed.Set(0)
				r.log.Info("re-seeded after the writeset this standby could not apply: following the primary again", "gsn", gsn)
			}
		case 'E':
			return fmt.Errorf("primary refused: %s", body)
		default:
			return fmt.Errorf("unknown replication frame %q", typ)
		}
	}
}

// setApplyFailed records a writeset this standby cannot apply.
func (r *Agent) setApplyFailed(ae *writeset.ApplyError) {
	f := &ApplyFailure{GSN: ae.GSN, Statement: ae.Statement, Error: ae.Err.Error(), At: time.Now().UTC()}
	r.applyFail.Store(f)
	r.mApplyFailed.Set(1)
	r.log.Error("cannot apply a writeset: this standby stops following the primary; fix the cause and restart it (it retries), or re-seed it (docs/operations.md)",
		"gsn", f.GSN, "statement", f.Statement, "err", f.Error)
}

// retryApply applies again, from the log, what was received but not
// applied; it clears the failure when everything applies.
func (r *Agent) retryApply(ctx context.Context) bool {
	from, last := r.applied.Load()+1, r.rlog.LastGSN()
	if from <= last {
		r.applying.Store(last)
		n, err := r.replay(ctx, from, last)
		r.setApplied(from - 1 + uint64(n))
		if err != nil {
			var ae *writeset.ApplyError
			if errors.As(err, &ae) {
				r.setApplyFailed(ae)
			} else {
				r.log.Error("retrying the writeset this standby could not apply failed", "err", err)
			}
			return false
		}
	}
	r.applyFail.Store(nil)
	r.mApplyFailed.Set(0)
	r.log.Info("the writeset that could not be applied is applied now: following the primary again", "applied_gsn", r.applied.Load())
	return true
}

// reportApplyFailure tells the primary that this standby stopped
// following (a hello carrying the failure), retrying until it is sent.
func (r *Agent) reportApplyFailure(ctx context.Context, primary, addr string) {
	f := r.applyFail.Load()
	for ctx.Err() == nil {
		err := func() error {
			c, err := r.dialPeer(ctx, primary, addr)
			if err != nil {
				return err
			}
			defer c.Close()
			w := bufio.NewWriter(c)
			b, _ := json.Marshal(hello{Node: r.id, Epoch: r.epoch(), LastGSN: r.rlog.LastGSN(), LastEpoch: r.rlog.LastEpoch(), ApplyFailed: f})
			if err := writeFrame(w, 'H', b); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			// The primary closes the connection once it has the report.
			_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
			_, _ = io.Copy(io.Discard, c)
			return nil
		}()
		if err == nil {
			r.log.Error("stopped following: told the primary this standby cannot apply GSN "+fmt.Sprint(f.GSN), "primary", primary)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// installSnapshot replaces the database with the primary's copy and
// restarts the log after it.
func (r *Agent) installSnapshot(ctx context.Context, gsn, epoch uint64, data []byte) error {
	if err := r.db.Restore(ctx, data); err != nil {
		return err
	}
	r.rlog.Close()
	if err := os.RemoveAll(filepath.Join(r.dir, "replog")); err != nil {
		return err
	}
	rl, err := replog.Open(filepath.Join(r.dir, "replog"), replog.Options{Mode: durabilityMode(r.cfg.Repl.StandbyDurability), FlushInterval: r.cfg.Repl.FlushInterval.Duration,
		RetainRecords: r.cfg.Repl.RetainRecords, SegmentSize: r.cfg.Repl.SegmentBytes, MaxRecordSize: int(r.cfg.Repl.MaxWritesetBytes), FirstGSN: gsn + 1, FirstEpoch: epoch, Logger: r.log})
	if err != nil {
		return err
	}
	r.rlog = rl
	r.received.Store(gsn)
	r.setApplied(gsn)
	r.log.Info("re-seeded from the primary's snapshot", "gsn", gsn, "bytes", len(data))
	return nil
}

// retain trims the log on the primary: segments every attached standby
// has applied go, keeping the configured window (retain_records) for
// standbys that reconnect; a standby behind the window is re-seeded.
func (r *Agent) Retain(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if r.role() != RolePrimary {
			continue
		}
		upTo := r.applied.Load()
		r.ackMu.Lock()
		for _, p := range r.peers {
			if a := p.applied.Load(); a < upTo {
				upTo = a
			}
		}
		r.ackMu.Unlock()
		if n, err := r.rlog.TrimBefore(upTo + 1); err != nil {
			r.log.Warn("trimming the replication log failed", "err", err)
		} else if n > 0 {
			r.log.Info("trimmed the replication log", "segments", n, "first_gsn", r.rlog.FirstGSN())
		}
	}
}

// stepDownIfStale asks the other nodes for their role: a node that
// believes it is the primary but finds a primary of a newer epoch becomes
// its standby (an old primary restarting after a failover). Two primaries
// never commit in the same epoch; fencing by lease comes with the
// coordinator.
func (r *Agent) StepDownIfStale(ctx context.Context) {
	if r.role() != RolePrimary {
		return
	}
	for _, n := range r.cfg.Nodes {
		if n.ID == r.id || n.Metrics == "" {
			continue
		}
		cl := http.Client{Timeout: time.Second}
		if r.ident != nil && r.cfg.AdminTLS(n.Metrics) {
			cl.Transport = &http.Transport{TLSClientConfig: r.ident.ClientTLS(n.ID)}
		}
		req, _ := http.NewRequest(http.MethodGet, r.cfg.AdminURL(n.Metrics, "/status"), nil)
		if r.token != "" {
			req.Header.Set("Authorization", "Bearer "+r.token)
		}
		resp, err := cl.Do(req)
		if err != nil {
			continue
		}
		var st struct {
			Agent *Status `json:"replication"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || st.Agent == nil {
			continue
		}
		if st.Agent.Role == RolePrimary && st.Agent.Epoch > r.epoch() {
			r.log.Warn("another node is the primary of a newer epoch: stepping down to standby", "primary", n.ID, "its_epoch", st.Agent.Epoch, "my_epoch", r.epoch())
			_ = r.Follow(ctx, n.ID, 0)
			return
		}
	}
}

// ---- operator actions ----

// PromoteResult reports a promotion. PrimaryKnown says whether
// PrimaryGSN is the old primary's last GSN (it was fenced and told us);
// otherwise PrimaryGSN is only the last one heard (0: none) and more may
// have been lost.
type PromoteResult struct {
	Node         string `json:"node"`
	Epoch        uint64 `json:"epoch"`
	LastGSN      uint64 `json:"last_gsn"`
	PrimaryGSN   uint64 `json:"primary_last_known_gsn"`
	PrimaryKnown bool   `json:"primary_gsn_exact"`
	LostGSNs     uint64 `json:"lost_gsns"`
}

// Promote makes this standby the primary of a new epoch, after applying
// everything it received. fencedGSN > 0 is the last GSN of the old
// primary, fenced first (promote --force): the standby waits up to
// wait for it to arrive, so nothing it acknowledged, even at 1-safe, is
// lost. With no standby attached the new primary starts degraded (under
// on_standby_loss = degrade), so its first commit does not wait
// ack_timeout.
func (r *Agent) Promote(ctx context.Context, fencedGSN uint64, wait time.Duration) (PromoteResult, error) {
	return r.promote(ctx, fencedGSN, wait, 0)
}

// promote is Promote into epoch (0: this node's epoch + 1; the
// coordinator's map gives it otherwise).
func (r *Agent) promote(ctx context.Context, fencedGSN uint64, wait time.Duration, epoch uint64) (PromoteResult, error) {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	if r.role() == RolePrimary {
		return PromoteResult{}, fmt.Errorf("node %s is already the primary", r.id)
	}
	if fencedGSN > 0 {
		deadline := time.Now().Add(wait)
		for r.rlog.LastGSN() < fencedGSN && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(2 * time.Millisecond)
		}
		if got := r.rlog.LastGSN(); got < fencedGSN {
			r.log.Warn("the fenced primary's tail did not arrive in time: promoting without it", "have", got, "fenced_gsn", fencedGSN)
		}
	}
	r.stopFollowing()
	// Apply whatever was received but not yet applied (from the log).
	if last := r.rlog.LastGSN(); last > r.applied.Load() {
		if _, err := r.replay(ctx, r.applied.Load()+1, last); err != nil {
			return PromoteResult{}, err
		}
		r.setApplied(last)
	}
	res := PromoteResult{Node: r.id, LastGSN: r.rlog.LastGSN(), PrimaryGSN: r.primaryLast.Load()}
	if fencedGSN > 0 {
		res.PrimaryGSN, res.PrimaryKnown = fencedGSN, true
	}
	if res.PrimaryGSN > res.LastGSN {
		res.LostGSNs = res.PrimaryGSN - res.LastGSN
	}
	if epoch == 0 {
		epoch = r.epoch() + 1
	}
	st := replState{Role: RolePrimary, Epoch: epoch, Primary: r.id}
	if err := r.saveState(st); err != nil {
		return res, err
	}
	r.leaseReleased.Store(false)
	res.Epoch = st.Epoch
	_ = r.rlog.SetMode(durabilityMode(r.cfg.Repl.Durability))
	r.ackMu.Lock()
	r.handover = nil
	alone := len(r.peers) == 0
	r.ackMu.Unlock()
	r.takeover.Store(false)
	r.fenced.Store(false)
	r.cleanFrom.Store(r.rlog.LastGSN())
	if alone && r.cfg.Repl.OnStandbyLoss == "degrade" && r.safeness.Load().(string) != "1-safe" {
		r.degradePending.Store(true)
		defer r.degradePending.Store(false)
		if err := r.markDegraded(ctx); err != nil {
			// Not recorded: the first commits wait ack_timeout and try again.
			r.log.Warn("promoted with no standby attached, but the coordinator cannot record it as degraded", "err", err)
			alone = false
		}
	}
	if alone && r.cfg.Repl.OnStandbyLoss == "degrade" && r.safeness.Load().(string) != "1-safe" {
		r.degraded.Store(true)
		r.mDegraded.Set(1)
		r.rlog.SetStandbyAttached(false)
		// Commits that arrived while the degrade was being recorded (the
		// role was already primary) wait for a standby: wake them.
		r.ackMu.Lock()
		r.ackCond.Broadcast()
		r.ackMu.Unlock()
		r.log.Warn("promoted with no standby attached: commits run 1-safe until one catches up (on_standby_loss = degrade)")
	} else {
		r.degraded.Store(false)
		r.mDegraded.Set(0)
	}
	r.log.Warn("promoted to primary", "epoch", st.Epoch, "last_gsn", res.LastGSN, "old_primary_gsn", res.PrimaryGSN, "old_primary_gsn_exact", res.PrimaryKnown, "lost_gsns", res.LostGSNs)
	return res, nil
}

// Fence stops this primary's commits for good because another node is
// being promoted in its place (promote --force), and returns its last
// GSN: no commit assigned a GSN after it. Commits that wait for an
// acknowledgement keep waiting (they do not degrade) until the standby
// acknowledges them or this node is told to follow the new primary.
func (r *Agent) Fence() (uint64, error) {
	if r.role() != RolePrimary {
		return 0, fmt.Errorf("%w: node %s", ErrNotPrimary, r.id)
	}
	r.takeover.Store(true)
	r.fenced.Store(true)
	r.prepMu.Lock() // no Prepare between Writable and its append
	last := r.rlog.LastGSN()
	r.prepMu.Unlock()
	r.ackMu.Lock()
	r.ackCond.Broadcast()
	r.ackMu.Unlock()
	r.log.Warn("fenced: another node is being promoted; no new commits", "last_gsn", last)
	r.releaseLease(context.Background())
	return last, nil
}

// Demote stops new commits, waits until the standby has applied every
// GSN (switchover), and turns this node into a standby of next.
func (r *Agent) Demote(ctx context.Context, next string) (uint64, error) {
	if r.role() != RolePrimary {
		return 0, fmt.Errorf("node %s is not the primary", r.id)
	}
	if _, ok := r.cfg.Node(next); !ok || next == r.id {
		return 0, fmt.Errorf("no standby %q to hand over to", next)
	}
	r.fenced.Store(true)
	r.inflight.Wait()
	last := r.rlog.LastGSN()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.ackMu.Lock()
		p := r.peers[next]
		caught := p != nil && p.applied.Load() >= last
		r.ackMu.Unlock()
		if caught {
			r.releaseLease(ctx)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.fenced.Store(false)
			return 0, fmt.Errorf("%w: %s did not apply GSN %d within 30 s; the primary role stays here", ErrNotCaughtUp, next, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return last, nil
}

// Follow makes this (demoted or restarted) node a standby of primary.
//
// upto, when known (> 0), is the new primary's last GSN at its promotion:
// commits of this node still waiting for an acknowledgement answer success
// up to it and 40001 past it; unknown (0), they answer 08007.
func (r *Agent) Follow(ctx context.Context, primary string, upto uint64) error {
	return r.followAs(ctx, primary, upto, 0)
}

// followAs is Follow into epoch (0: keep this node's; the coordinator's map
// gives it otherwise).
func (r *Agent) followAs(ctx context.Context, primary string, upto, epoch uint64) error {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	if _, ok := r.cfg.Node(primary); !ok || primary == r.id {
		return fmt.Errorf("no other node %q to follow", primary)
	}
	if r.role() == RolePrimary {
		r.prepMu.Lock() // no Prepare between Writable and inflight.Add
		r.fenced.Store(true)
		r.prepMu.Unlock()
		r.ackMu.Lock()
		r.handover = &handover{to: primary, known: upto > 0, upto: upto}
		r.ackCond.Broadcast()
		r.ackMu.Unlock()
		r.inflight.Wait() // every waiting commit has its answer before the re-seed
	}
	if epoch < r.epoch() {
		epoch = r.epoch()
	}
	r.stopFollowing()
	st := replState{Role: RoleStandby, Epoch: epoch, Primary: primary}
	if err := r.saveState(st); err != nil {
		return err
	}
	r.fenced.Store(false)
	r.takeover.Store(false)
	r.degraded.Store(false)
	r.mDegraded.Set(0)
	_ = r.rlog.SetMode(durabilityMode(r.cfg.Repl.StandbyDurability))
	r.StartFollowing(context.WithoutCancel(ctx))
	r.log.Info("following a new primary", "primary", primary)
	return nil
}

// Set changes safeness and durability at run time.
func (r *Agent) Set(safeness, durability string) error {
	if safeness != "" {
		if err := config.ValidateSafeness(safeness); err != nil {
			return err
		}
		if err := r.setCoordinated(safeness); err != nil {
			return err
		}
		r.safeness.Store(safeness)
		r.log.Info("safeness changed", "safeness", safeness)
	}
	if durability != "" {
		if _, err := config.ParseDurability(durability); err != nil {
			return err
		}
		if err := r.rlog.SetMode(durabilityMode(durability)); err != nil {
			return err
		}
		r.log.Info("durability changed", "durability", durability)
	}
	r.ackMu.Lock()
	r.ackCond.Broadcast()
	r.ackMu.Unlock()
	return nil
}

// Status is the replication part of /status.
type Status struct {
	Role        string               `json:"role"`
	Epoch       uint64               `json:"epoch"`
	Primary     string               `json:"primary"`
	Safeness    string               `json:"safeness"`
	Durability  string               `json:"durability"`
	Effective   string               `json:"effective_durability"`
	Degraded    bool                 `json:"degraded"`
	Assigned    uint64               `json:"assigned_gsn"`
	Durable     uint64               `json:"durable_gsn"`
	Received    uint64               `json:"received_gsn"`
	Applied     uint64               `json:"applied_gsn"`
	PrimaryLast uint64               `json:"primary_last_gsn,omitempty"`
	Standbys    map[string][3]uint64 `json:"standbys,omitempty"` // received, durable, applied
	// ApplyFailed: this standby cannot apply a writeset and stopped
	// following; FailedStandbys: standbys that reported so (primary).
	ApplyFailed    *ApplyFailure           `json:"apply_failed,omitempty"`
	FailedStandbys map[string]ApplyFailure `json:"failed_standbys,omitempty"`
	LogFirst       uint64                  `json:"log_first_gsn"`
	Fsyncs         uint64                  `json:"log_fsyncs"`
	PerFsync       float64                 `json:"log_records_per_fsync"`
}

// Status reports the replication state.
func (r *Agent) Status() Status {
	r.stateMu.Lock()
	st := r.state
	r.stateMu.Unlock()
	stats := r.rlog.Stats()
	s := Status{Role: st.Role, Epoch: st.Epoch, Primary: st.Primary, Safeness: r.safeness.Load().(string),
		Durability: stats.Mode.String(), Effective: stats.EffectiveMode.String(), Degraded: r.degraded.Load(),
		Assigned: r.rlog.LastGSN(), Durable: r.rlog.DurableGSN(), Received: r.received.Load(), Applied: r.applied.Load(),
		PrimaryLast: r.primaryLast.Load(), LogFirst: r.rlog.FirstGSN(), Fsyncs: stats.Fsyncs, PerFsync: stats.RecordsPerFsync(),
		ApplyFailed: r.applyFail.Load()}
	if st.Role == RolePrimary {
		s.Received = s.Assigned
		r.ackMu.Lock()
		s.Standbys = map[string][3]uint64{}
		for id, p := range r.peers {
			s.Standbys[id] = [3]uint64{p.received.Load(), p.durable.Load(), p.applied.Load()}
		}
		for id, f := range r.failedPeers {
			if s.FailedStandbys == nil {
				s.FailedStandbys = map[string]ApplyFailure{}
			}
			s.FailedStandbys[id] = f
		}
		r.ackMu.Unlock()
	}
	return s
}

// Close stops following and closes the log.
func (r *Agent) Close() {
	r.stopFollowing()
	r.rlog.Close()
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}
