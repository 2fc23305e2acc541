package multimaster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/certifier"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/writeset"
)

// Sentinel errors; test them with errors.Is.
var (
	// ErrAborted: the certifier aborted the transaction (a concurrent
	// committed transaction wrote one of its rows), or its snapshot was
	// older than the certifier's window. The client sees 40001.
	ErrAborted = errors.New("multi-master: transaction aborted by certification")
	// ErrUnknown: the certifier did not answer in time; the transaction
	// may or may not have committed (08007).
	ErrUnknown = errors.New("multi-master: certification outcome unknown")
	// ErrApplyFailed: the transaction was certified but its writeset
	// failed to apply (e.g. a unique constraint against a concurrent
	// commit of another node); every node skipped it alike.
	ErrApplyFailed = errors.New("multi-master: certified writeset failed to apply")
	// ErrReseeding: this node is being re-seeded and takes no writes.
	ErrReseeding = errors.New("multi-master: node is re-seeding")
)

// DDLTable is the pseudo-table whose whole-table key every DDL writeset
// carries, so two concurrent schema changes never both commit.
const DDLTable = "_tandem_ddl"

// Store is what the agent needs from a back end (backend/sqlite
// implements it).
type Store interface {
	// AppliedGSN is the last GSN recorded in the back end.
	AppliedGSN() (gsn, epoch uint64, err error)
	// ApplyBatch applies consecutive writesets in one transaction,
	// recording the last GSN with them, exactly once; a writeset the back
	// end refuses is a *writeset.ApplyError.
	ApplyBatch(ctx context.Context, batch []*writeset.Writeset) error
	// SnapshotBytes is a consistent copy and the GSN it holds; Restore
	// replaces the database with one.
	SnapshotBytes(ctx context.Context) ([]byte, uint64, error)
	Restore(ctx context.Context, data []byte) error
}

// WriterHolder is an optional Store capability: abort the local
// transaction that holds the node's write lock (SQLite has one writer), so
// certified writesets are not held up behind it. keys says whether that
// transaction wrote one of the given conflict keys (writeset.ConflictKeys
// form); abort ends it with err (the client sees 40001).
type WriterHolder interface {
	// WriterConflicts reports whether a local transaction holds the write
	// lock, and whether it wrote any of keys.
	WriterConflicts(keys []string) (held, conflict bool)
	// AbortWriter ends the local transaction holding the write lock with
	// err; it reports whether there was one.
	AbortWriter(err *pgwire.Error) bool
}

// LockWaiter is an optional Store capability: ApplyBatch waiting at most
// wait for the node's write lock (then an error), and without a deadline
// once it has it. Without it, the apply waits as long as the back end's
// own busy timeout before the agent can act on the holder.
type LockWaiter interface {
	ApplyBatchWithin(ctx context.Context, batch []*writeset.Writeset, wait time.Duration) error
}

// Certifier is the coordinator's side the agent uses (coordinator
// implements it).
type Certifier interface {
	Certify(ctx context.Context, req certifier.Request) (certifier.Decision, error)
	FollowCertified(ctx context.Context, from uint64) (<-chan *certifier.Committed, <-chan error)
	// WaitKnown returns once FollowCertified can deliver GSN gsn (this
	// member's copy of the certifier has it, or the leader's answer
	// brought it ahead).
	WaitKnown(ctx context.Context, gsn uint64) error
	CertStatus() coordinator.CertStatus
}

// Config configures an Agent.
type Config struct {
	ID    string
	Store Store
	Cert  Certifier
	// ApplyConflictWait: how long certified writesets wait for a local
	// transaction holding the write lock before it is aborted.
	ApplyConflictWait time.Duration
	// CertifyTimeout bounds a COMMIT's wait for the certifier.
	CertifyTimeout time.Duration
	// ApplyBatchDelay: how long the apply loop lets other nodes'
	// writesets gather after the first before applying them in one batch
	// (0: at once; multi_master.apply_batch_delay).
	ApplyBatchDelay time.Duration
	// MaxWritesetBytes bounds one transaction's writeset (54000 past it).
	MaxWritesetBytes int64
	// Reseed fetches a snapshot from a peer when this node fell behind
	// the certifier's window (nil: the node stops applying and says so).
	Reseed     func(ctx context.Context, minGSN uint64) ([]byte, error)
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Agent is one node's multi-master agent.
type Agent struct {
	cfg  Config
	log  *slog.Logger
	boot string
	seq  atomic.Uint64

	applied  atomic.Uint64
	applying atomic.Uint64
	// applyMu serializes applies: the loop over the certifier's log, and
	// a committer applying its own writeset when it is next (fastApply).
	applyMu   sync.Mutex
	appliedMu sync.Mutex
	appliedCh chan struct{}
	// failed: own writesets that were certified but failed to apply,
	// by GSN, until their committer reads the outcome.
	failedMu sync.Mutex
	failed   map[uint64]error

	sessions pgwire.SessionGSNs

	reseeding atomic.Bool
	stalled   atomic.Pointer[string] // why the apply loop stopped (nil: running)

	commits, aborts, tooOld, unknown, skipped, earlyAborts atomic.Uint64
	// applyBatches and applyWritesets count the batches of certified
	// writesets Run applied and the writesets in them (a committer's own
	// writeset its session applied, fastApply, is in neither).
	applyBatches, applyWritesets atomic.Uint64
	// applyOwn counts this node's own writesets among applyWritesets
	// (their committer could not apply them first: a GSN before theirs
	// was not applied here yet), fastApplies those their committer
	// applied, each in a batch of its own (fastApply).
	applyOwn, fastApplies atomic.Uint64
	// certifications and certifyNanos count this node's certification
	// round trips and their summed time (the histogram's count and sum,
	// in /status for tandem plan validate's certifier delay).
	certifications, certifyNanos atomic.Uint64
	// What a commit waits for after its certification, when its
	// committer cannot apply it at once: logWait, for this node to know
	// its GSN and every one before it (its copy of the certifier, at
	// Raft's next append from the leader, or the leader's answer:
	// coordinator/early.go); applyWait, then for the apply loop to apply
	// it. waits counts those commits, the nanos their summed waits.
	waits, logWaitNanos, applyWaitNanos atomic.Uint64
	// batchDelay is ApplyBatchDelay as set now (SetApplyBatchDelay).
	batchDelay                         atomic.Int64
	mWait, mCert, mLogWait, mApplyWait prometheus.Histogram
}

// MaxApplyBatchDelay bounds apply_batch_delay.
const MaxApplyBatchDelay = time.Second

// ErrBadDelay: an apply batch delay out of [0, MaxApplyBatchDelay].
var ErrBadDelay = errors.New("multi-master: apply_batch_delay must be between 0 and 1s")

// SetApplyBatchDelay changes multi_master.apply_batch_delay on the
// running node, from the next batch on.
func (a *Agent) SetApplyBatchDelay(d time.Duration) error {
	if d < 0 || d > MaxApplyBatchDelay {
		return fmt.Errorf("%w: got %s", ErrBadDelay, d)
	}
	a.batchDelay.Store(int64(d))
	a.log.Info("apply batch delay set", "apply_batch_delay", d)
	return nil
}

// New returns an agent at the store's applied GSN; Run applies.
func New(cfg Config) (*Agent, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ApplyConflictWait <= 0 {
		cfg.ApplyConflictWait = time.Second
	}
	if cfg.CertifyTimeout <= 0 {
		cfg.CertifyTimeout = 30 * time.Second
	}
	g, _, err := cfg.Store.AppliedGSN()
	if err != nil {
		return nil, fmt.Errorf("multi-master: read the applied GSN: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	a := &Agent{cfg: cfg, log: cfg.Logger.With("design", "multi-master"), boot: hex.EncodeToString(b[:]), failed: map[uint64]error{}}
	a.batchDelay.Store(int64(cfg.ApplyBatchDelay))
	a.applied.Store(g)
	a.mWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tandem_mm_certify_seconds",
		Help: "Time from an update transaction's COMMIT to its certification and local apply.", Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16)})
	a.mCert = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tandem_mm_certifier_round_trip_seconds",
		Help: "Time an update transaction's certification request took (the certifier's round trip, Raft commit included).", Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16)})
	a.mLogWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tandem_mm_commit_log_wait_seconds",
		Help: "Time a certified commit its committer could not apply at once waited for this node to know it and every GSN before it (its copy of the certifier's log, or the leader's answer).", Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16)})
	a.mApplyWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tandem_mm_commit_apply_wait_seconds",
		Help: "Time such a commit then waited for the apply loop to apply it (and every GSN before it).", Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16)})
	if reg := cfg.Registerer; reg != nil {
		counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
		}
		reg.MustRegister(a.mWait, a.mCert, a.mLogWait, a.mApplyWait,
			counter("tandem_mm_commits_total", "Update transactions of this node the certifier committed.", &a.commits),
			counter("tandem_mm_aborts_total", "Update transactions of this node the certifier aborted (write-write conflict, 40001).", &a.aborts),
			counter("tandem_mm_too_old_total", "Update transactions refused because their snapshot was older than the certifier's window.", &a.tooOld),
			counter("tandem_mm_early_aborts_total", "Local transactions aborted because they held the write lock a certified writeset needed.", &a.earlyAborts),
			counter("tandem_mm_apply_skipped_total", "Certified writesets that failed to apply (on every node alike) and were skipped.", &a.skipped),
			counter("tandem_mm_apply_batches_total", "Batches of certified writesets of other sessions this node applied, each in one back-end transaction.", &a.applyBatches),
			counter("tandem_mm_apply_batch_writesets_total", "Writesets in those batches (divided by the batches: how many a batch carried).", &a.applyWritesets),
			counter("tandem_mm_apply_own_writesets_total", "This node's own writesets among those (their committer found an earlier GSN not applied yet).", &a.applyOwn),
			counter("tandem_mm_fast_applies_total", "This node's own writesets their committer applied at once, each in a back-end transaction of its own.", &a.fastApplies),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tandem_mm_applied_gsn", Help: "The last certified GSN this node applied."}, func() float64 { return float64(a.applied.Load()) }),
		)
	}
	return a, nil
}

// Writable implements sqlite.Replicator: every node takes writes, except
// while it is re-seeded.
func (a *Agent) Writable() error {
	if a.reseeding.Load() {
		return &pgwire.Error{Code: pgwire.CodeCannotConnectNow, Message: fmt.Sprintf("node %s is being re-seeded from another node; retry in a moment or on another node", a.cfg.ID), Err: ErrReseeding}
	}
	return nil
}

// Prepare implements sqlite.Replicator; multi-master commits go through
// Certify instead (the back end checks for it first).
func (a *Agent) Prepare(context.Context, *writeset.Writeset) (func(context.Context, bool) error, error) {
	return nil, fmt.Errorf("multi-master: internal error: a commit bypassed certification")
}

// Certify certifies a local update transaction whose writes the back end
// has captured into ws and rolled back: snapshot is the GSN its snapshot
// reflected, tables the tables a DDL statement in it touched (each a
// whole-table key). On a commit it returns once this node has applied the
// writeset (in GSN order, like every other node), so the session reads its
// own write; on an abort, a 40001 error naming the conflict.
func (a *Agent) Certify(ctx context.Context, ws *writeset.Writeset, snapshot uint64, tables []string) error {
	start := time.Now()
	if err := a.Writable(); err != nil {
		return err
	}
	ws.GSN, ws.Epoch, ws.Origin = 0, 0, a.cfg.ID
	note := pgwire.CommitNoteFrom(ctx)
	if note != nil {
		ws.Session = note.Tag
	}
	keys := certifier.KeysOf(ws)
	if ws.DDL != "" {
		keys = append(keys, certifier.Key{Table: DDLTable})
		for _, t := range tables {
			keys = append(keys, certifier.Key{Table: t})
		}
		keys = certifier.SortKeys(keys)
	}
	data := writeset.Encode(ws)
	if max := a.cfg.MaxWritesetBytes; max > 0 && int64(len(data)) > max {
		return &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
			Message: fmt.Sprintf("tandem: this transaction's writeset is %d bytes, more than replication.max_writeset_bytes (%d); it was rolled back", len(data), max),
			Hint:    "split it into smaller transactions, or raise replication.max_writeset_bytes"}
	}
	if len(data) > coordinator.MaxCertifyBytes-certifyOverhead(keys) {
		return &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
			Message: fmt.Sprintf("tandem: this transaction's writeset is %d bytes, more than a multi-master certification takes (%d bytes with its keys, the certifier's Raft log record limit); it was rolled back", len(data), coordinator.MaxCertifyBytes),
			Hint:    "split it into smaller transactions"}
	}
	id := a.boot + "-" + strconv.FormatUint(a.seq.Add(1), 36)
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CertifyTimeout)
	certStart := time.Now()
	d, err := a.cfg.Cert.Certify(cctx, certifier.Request{ID: id, Snapshot: snapshot, Keys: keys, Writeset: data})
	cancel()
	rt := time.Since(certStart)
	a.mCert.Observe(rt.Seconds())
	a.certifications.Add(1)
	a.certifyNanos.Add(uint64(rt.Nanoseconds()))
	switch {
	case errors.Is(err, certifier.ErrSnapshotTooOld):
		a.tooOld.Add(1)
		return &pgwire.Error{Code: "40001", Message: "could not serialize access: " + err.Error(),
			Hint: "retry the transaction; if this node is far behind, it catches up first", Err: fmt.Errorf("%w: %w", ErrAborted, err)}
	case errors.Is(err, certifier.ErrBadRequest):
		// Refused before it was ordered: nothing was committed. A bug of
		// this node's build (or of a mixed-version cluster), not the
		// client's.
		return &pgwire.Error{Code: pgwire.CodeInternal, Message: "tandem: internal error: the certifier refused this transaction's request as malformed, so it was not committed: " + err.Error(),
			Hint: "report it with the node's log; check that every node runs the same tandem version", Err: fmt.Errorf("%w: %w", ErrAborted, err)}
	case err != nil && ctx.Err() != nil:
		return err // the client is gone or canceled
	case err != nil:
		a.unknown.Add(1)
		return &pgwire.Error{Code: "08007", Message: fmt.Sprintf("tandem: the certifier did not answer within %s (multi_master.certify_timeout): whether this transaction committed is unknown (%v)", a.cfg.CertifyTimeout, err),
			Hint: "check whether its changes are there before retrying it; `tandem status` shows the coordinator", Err: fmt.Errorf("%w: %w", ErrUnknown, err)}
	}
	if !d.Committed {
		a.aborts.Add(1)
		msg := "could not serialize access due to concurrent update"
		if c := d.Conflict; c != nil {
			msg += fmt.Sprintf(": %s was written by the transaction committed at GSN %d (on node %s) after this transaction's snapshot (GSN %d)", c.Key, c.GSN, c.Origin, d.Snapshot)
		}
		return &pgwire.Error{Code: "40001", Message: msg, Hint: "retry the transaction (multi-master: the first committer wins)", Err: fmt.Errorf("%w: %w", ErrAborted, d.Err())}
	}
	a.commits.Add(1)
	if !a.fastApply(ctx, ws, d.GSN) && a.applied.Load() < d.GSN {
		certified := time.Now()
		if err := a.cfg.Cert.WaitKnown(ctx, d.GSN); err != nil {
			return err
		}
		logged := time.Now()
		if err := a.WaitApplied(ctx, d.GSN, 0); err != nil {
			return err
		}
		lw, aw := logged.Sub(certified), time.Since(logged)
		a.mLogWait.Observe(lw.Seconds())
		a.mApplyWait.Observe(aw.Seconds())
		a.waits.Add(1)
		a.logWaitNanos.Add(uint64(lw.Nanoseconds()))
		a.applyWaitNanos.Add(uint64(aw.Nanoseconds()))
	}
	if err := a.WaitApplied(ctx, d.GSN, 0); err != nil {
		return err
	}
	a.mWait.Observe(time.Since(start).Seconds())
	if err := a.takeFailed(d.GSN); err != nil {
		return err
	}
	if note != nil {
		note.Committed(d.GSN)
	}
	return nil
}

// fastApply applies the committer's own writeset at once when every GSN
// before it is applied here: this node's copy of the certifier learns of
// the commit only with the leader's next Raft append (a barrier, an extra
// disk write and round trip later), and the writeset is at hand. The loop
// over the log then finds the GSN applied and skips it (apply is exactly
// once by GSN). When the node is further behind, the loop applies it in
// its turn. A failure here is left to the loop, which handles it. It
// reports whether it applied the writeset.
func (a *Agent) fastApply(ctx context.Context, ws *writeset.Writeset, g uint64) bool {
	if a.applied.Load() != g-1 {
		return false
	}
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	if a.applied.Load() != g-1 {
		return false
	}
	ws.GSN = g
	a.applying.Store(g)
	if err := a.applyBatch(ctx, []*writeset.Writeset{ws}); err != nil {
		return false
	}
	a.done([]*writeset.Writeset{ws})
	a.fastApplies.Add(1)
	return true
}

// takeFailed returns (and forgets) the apply failure of own GSN g.
func (a *Agent) takeFailed(g uint64) error {
	a.failedMu.Lock()
	defer a.failedMu.Unlock()
	err := a.failed[g]
	delete(a.failed, g)
	return err
}

// Run applies the certifier's log in GSN order until ctx ends.
func (a *Agent) Run(ctx context.Context) {
	for ctx.Err() == nil {
		from := a.applied.Load()
		fctx, cancel := context.WithCancel(ctx)
		ch, errc := a.cfg.Cert.FollowCertified(fctx, from)
		var batch []*writeset.Writeset
		for e := range ch {
			batch = append(batch[:0], a.decode(e))
			batch = a.gather(ch, batch)
			if !a.apply(ctx, batch) {
				break
			}
		}
		cancel()
		for range ch { // let the follower end
		}
		var err error
		select {
		case err = <-errc:
		default:
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, certifier.ErrSnapshotTooOld) {
			// The follower's position is not the node's: committers apply
			// their own writesets (fastApply) ahead of it, so it can fall
			// behind a short window while the node has not. Only a node
			// whose applied GSN is below the window is re-seeded.
			if a.applied.Load() >= a.cfg.Cert.CertStatus().Base {
				a.log.Debug("the log follower trailed the window, the node did not: following again", "applied_gsn", a.applied.Load(), "err", err)
				continue
			}
			a.reseed(ctx, err)
			continue
		}
		if err != nil {
			a.log.Warn("following the certifier's log stopped; retrying", "applied_gsn", a.applied.Load(), "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// maxBatch bounds the writesets of one apply batch.
const maxBatch = 512

// gather adds to batch what else the log has brought, up to maxBatch:
// what is there already, or, with ApplyBatchDelay, what arrives within it
// of the first writeset of another node (the node's own commits, which
// their committers apply, do not start the wait).
func (a *Agent) gather(ch <-chan *certifier.Committed, batch []*writeset.Writeset) []*writeset.Writeset {
	var timeout <-chan time.Time
	delay := time.Duration(a.batchDelay.Load())
	arm := func() {
		if timeout == nil && delay > 0 && batch[len(batch)-1].Origin != a.cfg.ID {
			timeout = time.After(delay) // collected unfired (Go 1.23)
		}
	}
	arm()
	for len(batch) < maxBatch {
		if timeout == nil {
			select {
			case e, ok := <-ch:
				if !ok {
					return batch
				}
				batch = append(batch, a.decode(e))
				arm()
				continue
			default:
				return batch
			}
		}
		select {
		case e, ok := <-ch:
			if !ok {
				return batch
			}
			batch = append(batch, a.decode(e))
		case <-timeout:
			return batch
		}
	}
	return batch
}

// decode turns a certified entry into the writeset to apply. An entry
// that does not decode (it cannot: the node encoded it) becomes an empty
// writeset that records its GSN, as on every other node, and its
// committer gets the error.
func (a *Agent) decode(e *certifier.Committed) *writeset.Writeset {
	ws, err := writeset.Decode(e.Writeset)
	if err != nil {
		a.log.Error("a certified writeset does not decode; it is skipped on every node", "gsn", e.GSN, "origin", e.Origin, "err", err)
		if e.Origin == a.cfg.ID {
			a.noteFailed(e.GSN, &pgwire.Error{Code: "XX000", Message: "tandem: the certified writeset does not decode: " + err.Error(), Err: ErrApplyFailed})
		}
		ws = &writeset.Writeset{}
	}
	ws.GSN, ws.Origin = e.GSN, e.Origin
	return ws
}

func (a *Agent) noteFailed(g uint64, err error) {
	a.failedMu.Lock()
	defer a.failedMu.Unlock()
	a.failed[g] = err
	// Committers that left do not read theirs: keep a bounded map.
	if len(a.failed) > 10_000 {
		for k := range a.failed {
			if k+10_000 < g {
				delete(a.failed, k)
			}
		}
	}
}

// apply applies a batch, waiting out a busy write lock (and aborting the
// local transaction that holds it, see conflicts), and skipping a
// writeset that fails to apply. It reports false when ctx ended.
//
// The log brings this node's own commits too, which their committer has
// mostly applied already (fastApply): those are dropped before the write
// lock is asked for. The store would find them applied, but only under the
// lock, so a local transaction holding it (a session's next one, under
// load) was waited for and, after apply_conflict_wait, ended with 40001
// over a writeset with nothing left to do (seen as pgbench -i failing).
func (a *Agent) apply(ctx context.Context, batch []*writeset.Writeset) bool {
	if batch = a.unapplied(batch); len(batch) == 0 {
		return true
	}
	last := batch[len(batch)-1].GSN
	a.applying.Store(last)
	var waitStart time.Time
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if waitStart.IsZero() {
				waitStart = time.Now()
			}
			a.unblock(batch, time.Since(waitStart))
		}
		a.applyMu.Lock()
		if batch = a.unapplied(batch); len(batch) == 0 {
			a.applyMu.Unlock()
			return true
		}
		err := a.applyBatch(ctx, batch)
		if err == nil {
			a.done(batch)
			a.applyBatches.Add(1)
			a.applyWritesets.Add(uint64(len(batch)))
			a.applyOwn.Add(a.own(batch))
		}
		a.applyMu.Unlock()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		var ae *writeset.ApplyError
		if errors.As(err, &ae) {
			return a.applyEach(ctx, batch)
		}
		if attempt%100 == 99 {
			a.log.Warn("cannot apply certified writesets yet; retrying", "from_gsn", batch[0].GSN, "to_gsn", last, "err", err)
		}
	}
}

// own is how many of batch's writesets this node committed.
func (a *Agent) own(batch []*writeset.Writeset) uint64 {
	var n uint64
	for _, ws := range batch {
		if ws.Origin == a.cfg.ID {
			n++
		}
	}
	return n
}

// unapplied is batch without its writesets this node has applied (a
// prefix: batches are in GSN order).
func (a *Agent) unapplied(batch []*writeset.Writeset) []*writeset.Writeset {
	g := a.applied.Load()
	i := 0
	for i < len(batch) && batch[i].GSN <= g {
		i++
	}
	return batch[i:]
}

// lockWait is how long one apply attempt waits for the write lock before
// the agent looks at who holds it.
const lockWait = 50 * time.Millisecond

func (a *Agent) applyBatch(ctx context.Context, batch []*writeset.Writeset) error {
	if lw, ok := a.cfg.Store.(LockWaiter); ok {
		return lw.ApplyBatchWithin(ctx, batch, lockWait)
	}
	return a.cfg.Store.ApplyBatch(ctx, batch)
}

// unblock is early certification: a local transaction holding the write
// lock that wrote a row a waiting writeset wrote cannot commit (its
// snapshot does not include the writeset), so it is aborted at once; any
// other holder is aborted after ApplyConflictWait, as PostgreSQL's hot
// standby cancels what holds up recovery past max_standby_streaming_delay.
func (a *Agent) unblock(batch []*writeset.Writeset, waited time.Duration) {
	wh, ok := a.cfg.Store.(WriterHolder)
	if !ok {
		return
	}
	var keys []string
	for _, ws := range batch {
		keys = append(keys, writeset.ConflictKeys(ws)...)
	}
	held, conflict := wh.WriterConflicts(keys)
	if !held {
		return
	}
	var e *pgwire.Error
	switch {
	case conflict:
		e = &pgwire.Error{Code: "40001", Message: fmt.Sprintf("terminating connection due to conflict with replication: a transaction committed on another node (GSN %d) wrote a row this session's transaction wrote; it was rolled back", batch[0].GSN),
			Hint: "retry the transaction (multi-master: the first committer wins)", Err: ErrAborted}
	case waited >= a.cfg.ApplyConflictWait:
		e = &pgwire.Error{Code: "40001", Message: fmt.Sprintf("terminating connection due to conflict with replication: this session's transaction held node %s's write lock for more than %s while certified writesets waited (multi_master.apply_conflict_wait); it was rolled back", a.cfg.ID, a.cfg.ApplyConflictWait),
			Hint: "reconnect and retry the transaction; keep update transactions short", Err: ErrAborted}
	default:
		return
	}
	if wh.AbortWriter(e) {
		a.earlyAborts.Add(1)
		a.log.Info("aborted a local transaction that held up certified writesets", "gsn", batch[0].GSN, "conflict", conflict, "waited", waited)
	}
}

// applyEach applies a batch one writeset at a time after the back end
// refused one: a writeset that fails deterministically (it fails on every
// node alike, from the same state) is skipped, recording its GSN, and its
// committer gets the error.
func (a *Agent) applyEach(ctx context.Context, batch []*writeset.Writeset) bool {
	for _, ws := range batch {
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				a.unblock([]*writeset.Writeset{ws}, 0)
			}
			a.applyMu.Lock()
			err := a.applyBatch(ctx, []*writeset.Writeset{ws})
			if err == nil {
				a.done([]*writeset.Writeset{ws})
			}
			a.applyMu.Unlock()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return false
			}
			var ae *writeset.ApplyError
			if !errors.As(err, &ae) {
				continue
			}
			if !deterministic(ae.Err) {
				// Only a refusal every node meets alike may be skipped;
				// anything else (I/O, a canceled or interrupted
				// statement, a lock) is retried: a node stalls rather
				// than diverge.
				if attempt%50 == 49 {
					a.log.Error("a certified writeset keeps failing to apply for a reason that is not the data's; retrying", "gsn", ws.GSN, "origin", ws.Origin, "statement", ae.Statement, "err", ae.Err)
				}
				select {
				case <-ctx.Done():
					return false
				case <-time.After(min(time.Duration(attempt+1)*10*time.Millisecond, time.Second)):
				}
				continue
			}
			a.skipped.Add(1)
			a.log.Warn("a certified writeset failed to apply; it is skipped on every node", "gsn", ws.GSN, "origin", ws.Origin, "statement", ae.Statement, "err", ae.Err)
			if ws.Origin == a.cfg.ID {
				code, msg := sqlstate(ae.Err)
				e := &pgwire.Error{Code: code, Message: msg + " (the transaction conflicted with a concurrent transaction of another node; it was not committed)",
					Hint: "retry the transaction if the conflicting row allows it", Err: fmt.Errorf("%w: %w", ErrApplyFailed, ae.Err)}
				a.noteFailed(ws.GSN, e)
			}
			ws = &writeset.Writeset{GSN: ws.GSN, Origin: ws.Origin, Session: ws.Session}
		}
	}
	return true
}

// deterministic reports whether an apply failure is one every node meets
// alike from the same state: an integrity violation (class 23), a data
// exception (22), a schema error (42) or an unsupported feature (0A). Any
// other failure is the node's own and must not be skipped.
func deterministic(err error) bool {
	code, _ := sqlstate(err)
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "23", "22", "42", "0A":
		return true
	}
	return false
}

// sqlstate is the SQLSTATE and message of a back end's error: tandem's
// own (SQLite) or PostgreSQL's.
func sqlstate(err error) (code, msg string) {
	var pe *pgwire.Error
	if errors.As(err, &pe) {
		return pe.Code, pe.Message
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code, pg.Message
	}
	return "", ""
}

// done records an applied batch.
func (a *Agent) done(batch []*writeset.Writeset) {
	debug := a.log.Enabled(context.Background(), slog.LevelDebug)
	for _, ws := range batch {
		a.sessions.Note(ws.Session, ws.GSN)
		if debug {
			a.log.Debug("applied", "gsn", ws.GSN, "origin", ws.Origin, "rows", len(ws.Rows), "digest", fmt.Sprintf("%x", sha256.Sum256(writeset.Encode(ws)))[:12])
		}
	}
	if g := batch[len(batch)-1].GSN; g > a.applied.Load() {
		a.setApplied(g)
	}
}

func (a *Agent) setApplied(g uint64) {
	a.applied.Store(g)
	a.appliedMu.Lock()
	if a.appliedCh != nil {
		close(a.appliedCh)
		a.appliedCh = nil
	}
	a.appliedMu.Unlock()
}

// AppliedGSN implements pgwire.Positions.
func (a *Agent) AppliedGSN() uint64 { return a.applied.Load() }

// ReadGSN implements pgwire.Positions: an upper bound of the state a read
// that ended now saw.
func (a *Agent) ReadGSN() uint64 { return max(a.applied.Load(), a.applying.Load()) }

// WaitApplied implements pgwire.Positions: it returns once this node has
// applied gsn; wait <= 0 waits as long as ctx.
func (a *Agent) WaitApplied(ctx context.Context, gsn uint64, wait time.Duration) error {
	if a.applied.Load() >= gsn {
		return nil
	}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		a.appliedMu.Lock()
		if a.applied.Load() >= gsn {
			a.appliedMu.Unlock()
			return nil
		}
		if a.appliedCh == nil {
			a.appliedCh = make(chan struct{})
		}
		ch := a.appliedCh
		a.appliedMu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			return fmt.Errorf("node %s: applied GSN %d, waited %v for %d", a.cfg.ID, a.applied.Load(), wait, gsn)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// SessionGSN is the highest GSN this node applied for a router session
// tag (the router resolves a COMMIT that was in flight on a node that
// died by asking another node).
func (a *Agent) SessionGSN(tag string) (uint64, bool) { return a.sessions.Get(tag) }

// reseed replaces a node that fell behind the certifier's window with a
// snapshot of a peer's database.
func (a *Agent) reseed(ctx context.Context, cause error) {
	st := a.cfg.Cert.CertStatus()
	if a.cfg.Reseed == nil {
		msg := fmt.Sprintf("applied GSN %d is behind the certifier's window (starts after GSN %d): this node must be re-seeded", a.applied.Load(), st.Base)
		a.stalled.Store(&msg)
		a.log.Error("this node fell behind the certifier's window and cannot re-seed", "applied_gsn", a.applied.Load(), "window_base", st.Base, "err", cause)
		<-ctx.Done()
		return
	}
	a.reseeding.Store(true)
	defer a.reseeding.Store(false)
	for ctx.Err() == nil {
		a.log.Warn("this node fell behind the certifier's window: re-seeding from a peer", "applied_gsn", a.applied.Load(), "window_base", st.Base)
		data, err := a.cfg.Reseed(ctx, st.Base)
		if err == nil {
			err = a.cfg.Store.Restore(ctx, data)
		}
		if err == nil {
			var g uint64
			if g, _, err = a.cfg.Store.AppliedGSN(); err == nil {
				a.setApplied(g)
				a.log.Info("re-seeded from a peer", "applied_gsn", g)
				a.stalled.Store(nil)
				return
			}
		}
		msg := "re-seeding failed: " + err.Error()
		a.stalled.Store(&msg)
		a.log.Error("re-seeding failed; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Status is the agent as /status shows it.
type Status struct {
	AppliedGSN   uint64 `json:"applied_gsn"`
	Lag          uint64 `json:"lag_gsns"` // certified (as this node's certifier copy knows) but not applied here
	Commits      uint64 `json:"commits"`
	Aborts       uint64 `json:"aborts"`
	TooOld       uint64 `json:"too_old"`
	Unknown      uint64 `json:"unknown"`
	EarlyAborts  uint64 `json:"early_aborts"`
	ApplySkipped uint64 `json:"apply_skipped"`
	// ApplyBatches and ApplyWritesets: the batches of certified
	// writesets applied here and the writesets they carried.
	ApplyBatches   uint64 `json:"apply_batches"`
	ApplyWritesets uint64 `json:"apply_batch_writesets"`
	// ApplyOwn is how many of ApplyWritesets this node committed (their
	// committer found a GSN before theirs not applied yet), FastApplies
	// how many of its commits their committer applied, one per
	// back-end transaction: with Commits they say how often a node's own
	// writeset shares a batch (planner/DESIGN.md "Apply batches").
	ApplyOwn    uint64 `json:"apply_own_writesets"`
	FastApplies uint64 `json:"fast_applies"`
	// Certifications is how many certification round trips this node
	// made, CertifySeconds their summed time: their mean is the delay
	// the certifier adds to an update's commit.
	Certifications uint64  `json:"certifications"`
	CertifySeconds float64 `json:"certify_seconds"`
	// CommitWaits counts the commits their committer could not apply at
	// once; LogWaitSeconds is their summed wait, after certification, for
	// this node to know them and every GSN before them (its copy of the
	// certifier's log, or the leader's answer), and ApplyWaitSeconds then
	// for the apply loop to apply them: with the
	// certification round trip, where a commit's time went after the
	// transaction's own work.
	CommitWaits      uint64  `json:"commit_waits"`
	LogWaitSeconds   float64 `json:"log_wait_seconds"`
	ApplyWaitSeconds float64 `json:"apply_wait_seconds"`
	// ApplyBatchDelay is multi_master.apply_batch_delay as set now.
	ApplyBatchDelay string                 `json:"apply_batch_delay"`
	Reseeding       bool                   `json:"reseeding,omitempty"`
	Stalled         string                 `json:"stalled,omitempty"`
	Certifier       coordinator.CertStatus `json:"certifier"`
}

// Status reports the agent.
func (a *Agent) Status() Status {
	cs := a.cfg.Cert.CertStatus()
	s := Status{AppliedGSN: a.applied.Load(), Commits: a.commits.Load(), Aborts: a.aborts.Load(), TooOld: a.tooOld.Load(),
		Unknown: a.unknown.Load(), EarlyAborts: a.earlyAborts.Load(), ApplySkipped: a.skipped.Load(), Reseeding: a.reseeding.Load(), Certifier: cs,
		ApplyBatches: a.applyBatches.Load(), ApplyWritesets: a.applyWritesets.Load(),
		ApplyOwn: a.applyOwn.Load(), FastApplies: a.fastApplies.Load(), ApplyBatchDelay: time.Duration(a.batchDelay.Load()).String(),
		Certifications: a.certifications.Load(), CertifySeconds: float64(a.certifyNanos.Load()) / 1e9,
		CommitWaits: a.waits.Load(), LogWaitSeconds: float64(a.logWaitNanos.Load()) / 1e9, ApplyWaitSeconds: float64(a.applyWaitNanos.Load()) / 1e9}
	if cs.Last > s.AppliedGSN {
		s.Lag = cs.Last - s.AppliedGSN
	}
	if p := a.stalled.Load(); p != nil {
		s.Stalled = *p
	}
	return s
}

// certifyOverhead bounds what a certification request adds to its
// writeset: the keys with their lengths, the ids and the snapshot GSN.
func certifyOverhead(keys []certifier.Key) int {
	n := 1 << 10
	for _, k := range keys {
		n += len(k.Table) + len(k.PK) + 2*10
	}
	return n
}
