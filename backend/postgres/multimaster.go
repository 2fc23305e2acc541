package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/writeset"
)

// Multi-master on PostgreSQL (issue 15; see DESIGN.md "Multi-master").
// Every transaction runs REPEATABLE READ (snapshot isolation); its first
// statement reads the GSN the database holds, which is exactly the GSN its
// snapshot reflects, since the applier records it in the same transaction
// as the writes. At COMMIT the writeset is captured as on a single-master
// primary, the transaction rolls back, and the certifier decides; a
// committed writeset comes back through the certified log, which every
// node applies in GSN order.
//
// The applier runs with a short lock_timeout next to local transactions
// that hold row locks. While it waits, a watcher reads who blocks it
// (pg_blocking_pids); the multi-master agent then aborts those sessions
// (WriterConflicts, AbortWriter): a local transaction that wrote a row a
// certified writeset writes cannot commit anyway (first committer wins).
// An idle session's transaction is rolled back on its own connection; a
// busy one's statement is cancelled. Either way its client gets 40001 and
// keeps its connection.

// Certifier is the Replicator of the multi-master design (the node's
// multi-master agent implements it): a transaction's writes are not
// committed where they ran. At COMMIT its writeset is captured and the
// transaction rolled back; Certify has the certifier decide and, on a
// commit, returns once the node applied the writeset from the certified
// log. snapshot is the GSN the transaction's snapshot reflected; tables,
// for a transaction that ran DDL, the tables that existed before or after
// it (whole-table conflict keys).
type Certifier interface {
	Certify(ctx context.Context, ws *writeset.Writeset, snapshot uint64, tables []string) error
}

// ErrNotCertifier: EnableMultiMaster was given a Replicator that does not
// certify.
var ErrNotCertifier = errors.New("postgres: multi-master needs a certifying replicator")

const (
	// mmIsolation: every multi-master transaction is snapshot isolation.
	mmIsolation = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"
	// snapshotQuery is a multi-master transaction's first statement: it
	// takes the snapshot and reads the GSN the snapshot reflects. Through
	// a PL/pgSQL function, which plans its query once per session: the
	// inlined _tandem.applied() was planned at every BEGIN (0.2 ms).
	snapshotQuery = "SELECT _tandem.snapshot_gsn()"
	// applyLockTimeout bounds each lock wait of the applier; past it the
	// agent aborts the local transactions that block it and retries.
	applyLockTimeout = "50ms"
	// watchEvery: how often the watcher reads the applier's blockers
	// while a batch runs.
	watchEvery = 15 * time.Millisecond
)

// mmState is a multi-master back end's bookkeeping: its sessions by server
// process id, and who blocked the applier in its last lock wait.
type mmState struct {
	mu       sync.Mutex
	sessions map[uint32]*Session
	blockers []blocker
	applying []*writeset.Writeset // the batch the applier runs (or last ran)

	monMu sync.Mutex
	mon   *pgconn.PgConn // the watcher's connection
}

// blocker is a server process the applier waited for.
type blocker struct {
	pid    uint32
	writer bool // its transaction has an id: it wrote or locked rows
}

// EnableMultiMaster is EnableReplication for the multi-master design: r
// must implement Certifier. Call it before serving sessions.
func (b *Backend) EnableMultiMaster(ctx context.Context, r Replicator) error {
	if _, ok := r.(Certifier); !ok {
		return ErrNotCertifier
	}
	b.mm = &mmState{sessions: map[uint32]*Session{}}
	return b.EnableReplication(ctx, r)
}

func (m *mmState) register(s *Session) {
	m.mu.Lock()
	m.sessions[s.pid] = s
	m.mu.Unlock()
}

func (m *mmState) unregister(s *Session) {
	m.mu.Lock()
	if m.sessions[s.pid] == s {
		delete(m.sessions, s.pid)
	}
	m.mu.Unlock()
}

// monitor runs fn on the watcher's connection (connecting it first).
func (b *Backend) monitor(ctx context.Context, fn func(c *pgconn.PgConn) error) error {
	m := b.mm
	m.monMu.Lock()
	defer m.monMu.Unlock()
	if m.mon == nil || m.mon.IsClosed() {
		c, err := pgconn.ConnectConfig(ctx, b.cfg)
		if err != nil {
			return err
		}
		m.mon = c
	}
	err := fn(m.mon)
	if err != nil && !m.mon.IsClosed() {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			m.mon.Close(context.Background())
		}
	}
	return err
}

// watchApply records, while the applier (server process pid) runs a batch,
// the server processes that block it, until done is closed.
func (b *Backend) watchApply(pid uint32, done <-chan struct{}) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		var found []blocker
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := b.monitor(ctx, func(c *pgconn.PgConn) error {
			rows, err := query(ctx, c, `SELECT a.pid, a.backend_xid IS NOT NULL
				FROM pg_stat_activity a WHERE a.pid = ANY (pg_blocking_pids($1))`, strconv.FormatUint(uint64(pid), 10))
			for _, r := range rows {
				p, _ := strconv.ParseUint(r[0], 10, 32)
				found = append(found, blocker{pid: uint32(p), writer: r[1] == "t"})
			}
			return err
		})
		cancel()
		if err == nil && len(found) > 0 {
			b.mm.mu.Lock()
			b.mm.blockers = found
			b.mm.mu.Unlock()
		}
	}
}

// watch starts the watcher over the applier's connection c for one apply,
// in the multi-master design; the returned function stops it. The
// blockers it records stay until the next apply (the agent reads them
// after this one gave up).
func (b *Backend) watch(c *pgconn.PgConn, batch []*writeset.Writeset) (stop func()) {
	if b.mm == nil {
		return func() {}
	}
	b.mm.mu.Lock()
	b.mm.blockers, b.mm.applying = nil, batch
	b.mm.mu.Unlock()
	done := make(chan struct{})
	go b.watchApply(c.PID(), done)
	return func() { close(done) }
}

// lockWait reports a server error that says a lock wait was given up
// (lock_timeout, a deadlock, a cancel): the apply is retried, never
// skipped.
func lockWait(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "55P03", "40001", "40P01", "57014":
		return true
	}
	return false
}

// blockingSessions returns the tandem sessions among the applier's last
// blockers, and whether one of them holds a transaction id.
func (b *Backend) blockingSessions() (out []*Session, writer bool, batch []*writeset.Writeset) {
	if b.mm == nil {
		return nil, false, nil
	}
	b.mm.mu.Lock()
	defer b.mm.mu.Unlock()
	for _, bl := range b.mm.blockers {
		if s := b.mm.sessions[bl.pid]; s != nil {
			out = append(out, s)
			writer = writer || bl.writer
		}
	}
	return out, writer, b.mm.applying
}

// WriterConflicts implements multimaster.WriterHolder: held reports that
// tandem sessions blocked the applier in its last lock wait, conflict
// that one of them has a transaction id (it wrote, or locked rows with
// SELECT ... FOR UPDATE / FOR SHARE). The applier waits for row locks
// only: a local transaction that holds one on a row a certified writeset
// writes either wrote it (and cannot commit: first committer wins) or
// locked it; both are aborted at once (see DESIGN.md). keys are not
// needed: the server says who blocks.
func (b *Backend) WriterConflicts(keys []string) (held, conflict bool) {
	ss, writer, _ := b.blockingSessions()
	return len(ss) > 0, writer
}

// AbortWriter implements multimaster.WriterHolder: every tandem session
// that blocked the applier is aborted with err (its client sees it at its
// next statement, or as the answer to the one it runs).
func (b *Backend) AbortWriter(e *pgwire.Error) bool {
	ss, writer, batch := b.blockingSessions()
	n := 0
	for _, s := range ss {
		if s.abort(b, abortError(e, batch, writer), batch) {
			n++
		}
	}
	if b.mm != nil {
		b.mm.mu.Lock()
		b.mm.blockers = nil
		b.mm.mu.Unlock()
	}
	return n > 0
}

// abortError is the error an aborted session gets: the agent's (its
// SQLSTATE and cause), in words that fit PostgreSQL back ends, where the
// session keeps its connection.
func abortError(e *pgwire.Error, batch []*writeset.Writeset, writer bool) *pgwire.Error {
	c := *e
	g := uint64(0)
	if len(batch) > 0 {
		g = batch[0].GSN
	}
	if writer {
		c.Message = fmt.Sprintf("could not serialize access due to concurrent update: a transaction committed on another node (GSN %d) writes a row this transaction wrote or locked; this transaction was rolled back", g)
		c.Hint = "retry the transaction (multi-master: the first committer wins)"
	} else {
		c.Message = fmt.Sprintf("canceling transaction due to conflict with replication: it held a lock that the transaction committed on another node (GSN %d) needs for longer than multi_master.apply_conflict_wait; it was rolled back", g)
		c.Hint = "retry the transaction; keep transactions short while schema changes run"
	}
	return &c
}

// abort ends the session's transaction with e: an idle session's is
// rolled back on its connection now (nothing else uses it), its error
// naming a row it wrote that the certified batch writes; a busy one's
// statement is cancelled, and the error it gets becomes e. A session in
// the middle of its COMMIT is left alone: it rolls back by itself and the
// certifier gives it its answer. It reports whether it aborted.
func (s *Session) abort(b *Backend, e *pgwire.Error, batch []*writeset.Writeset) bool {
	if s.certifying.Load() {
		return false
	}
	if s.use.TryLock() {
		defer s.use.Unlock()
		if s.c == nil || s.c.IsClosed() || !s.inTx || s.pending != "" || s.certifying.Load() {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if m := s.conflictOf(ctx, batch); m != "" {
			c := *e
			c.Message = "could not serialize access due to concurrent update: " + m + "; this transaction was rolled back"
			e = &c
		}
		s.doomed.Store(e)
		if _, err := s.c.Exec(ctx, "ROLLBACK").ReadAll(); err != nil {
			s.c.Close(context.Background())
		}
		return true
	}
	s.doomed.Store(e)
	s.cancelAt.Store(time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = b.monitor(ctx, func(c *pgconn.PgConn) error {
		_, err := query(ctx, c, "SELECT pg_cancel_backend($1)", strconv.FormatUint(uint64(s.pid), 10))
		return err
	})
	return true
}

// conflictOf names a row the session's open transaction wrote that the
// batch writes too (read from its capture rows, which only it sees), as
// the certifier would name it; "" if none is found.
func (s *Session) conflictOf(ctx context.Context, batch []*writeset.Writeset) string {
	rows, err := query(ctx, s.c, "SELECT tbl, pk::text FROM _tandem.capture WHERE txid = txid_current_if_assigned() AND ev IS NULL")
	if err != nil {
		return ""
	}
	for _, r := range rows {
		for _, ws := range batch {
			for i := range ws.Rows {
				row := &ws.Rows[i]
				if row.Table != r[0] || len(row.Key) == 0 {
					continue
				}
				key, err := keyValues(r[1], len(row.Key))
				if err != nil || !sameText(key, row.Key) {
					continue
				}
				vals := make([]string, len(key))
				for k, v := range key {
					vals[k] = v.String() // as the certifier names keys: PostgreSQL's are text, '7'
				}
				return fmt.Sprintf("table %q key (%s) was written by the transaction committed at GSN %d (on node %s) after this transaction's snapshot (GSN %d)",
					row.Table, strings.Join(vals, ", "), ws.GSN, ws.Origin, s.snap)
			}
		}
	}
	return ""
}

// sameText compares two keys in text form.
func sameText(a, b []writeset.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, ok1 := a[i].AsText()
		y, ok2 := b[i].AsText()
		if !ok1 || !ok2 || x != y {
			return false
		}
	}
	return true
}

// enter takes the session's connection for one call from its client and
// settles an abort by the applier: the transaction is rolled back (if it
// was not already) and the statement gets the abort's error, except a
// ROLLBACK, which ends the transaction as usual (a COMMIT ends it too, with
// the error, as a COMMIT that fails does). release must follow.
func (s *Session) enter(ctx context.Context, st *Statement) error {
	s.lockUse()
	if s.doomed.Load() == nil {
		return nil
	}
	return s.settle(ctx, st.kind, st.words)
}

// enterSQL is enter for a statement that was not prepared (COPY).
func (s *Session) enterSQL(ctx context.Context, sql string) error {
	s.lockUse()
	if s.doomed.Load() == nil {
		return nil
	}
	w := pgwire.Keywords(sql, 4)
	kind := ""
	if len(w) > 0 {
		kind = w[0]
	}
	return s.settle(ctx, kind, w)
}

func (s *Session) settle(ctx context.Context, kind string, words []string) error {
	e := s.doomed.Swap(nil)
	if e == nil || !s.inTx || s.pending != "" {
		return nil // the transaction it blocked ended (or never reached the server)
	}
	_ = s.exec(ctx, "ROLLBACK")
	switch kind {
	case "ROLLBACK", "ABORT":
		if !(len(words) > 1 && words[1] == "TO") {
			return nil
		}
	case "COMMIT", "END":
		s.inTx = false
		s.takeScript()
	}
	return e
}

func (s *Session) release() { s.use.Unlock() }

// abortedErr turns the error of a statement the applier cancelled into
// the abort's error.
func (s *Session) abortedErr(err error) error {
	if err == nil {
		return nil
	}
	if e := s.doomed.Swap(nil); e != nil {
		return e
	}
	// A cancel the applier sent may land late, on a statement after the
	// one it meant (that one finished and the abort was reported at the
	// next statement): the client then gets what the abort would have
	// given it, a conflict to retry, not a cancel it never asked for.
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgwire.CodeQueryCanceled {
		if at := s.cancelAt.Load(); at != 0 && time.Since(time.Unix(0, at)) < lateCancel {
			s.cancelAt.Store(0)
			return &pgwire.Error{Code: "40001", Message: "could not serialize access: the statement was cancelled for a transaction committed on another node (a late cancel of an earlier conflict); retry the transaction", Err: err}
		}
	}
	return err
}

// lateCancel bounds how long after the applier cancelled a session's
// statement a query cancel is taken for that one.
const lateCancel = 5 * time.Second

// beginBatch queues a transaction's BEGIN and, in the multi-master design,
// its isolation level and snapshot read; beginResults reads their results.
func (s *Session) beginBatch(bt *pgconn.Batch, begin string) {
	bt.ExecParams(begin, nil, nil, nil, nil)
	if s.b.mm != nil {
		bt.ExecParams(mmIsolation, nil, nil, nil, nil)
		bt.ExecParams(snapshotQuery, nil, nil, nil, nil)
	}
}

// beginResults reads the results of beginBatch, leaving mrr at the last
// one read.
func (s *Session) beginResults(mrr *pgconn.MultiResultReader) error {
	n := 1
	if s.b.mm != nil {
		n = 3
	}
	s.snap, s.snapOK = 0, false
	for i := 0; i < n; i++ {
		if !mrr.NextResult() {
			return mrr.Close()
		}
		rr := mrr.ResultReader()
		if i == 2 {
			for rr.NextRow() {
				if v := rr.Values(); len(v) == 1 {
					g, err := strconv.ParseUint(string(v[0]), 10, 64)
					s.snap, s.snapOK = g, err == nil
				}
			}
		}
		if _, err := rr.Close(); err != nil {
			_ = mrr.Close()
			return err
		}
	}
	return nil
}

// sendBegin begins a transaction now (one round trip).
func (s *Session) sendBegin(ctx context.Context, begin string) error {
	var bt pgconn.Batch
	s.beginBatch(&bt, begin)
	mrr := s.c.ExecBatch(ctx, &bt)
	if err := s.beginResults(mrr); err != nil {
		return err
	}
	return mrr.Close()
}

// certifiedCommit is replicatedCommit in the multi-master design: the
// transaction is rolled back and its writeset certified.
func (s *Session) certifiedCommit(ctx context.Context, cr Certifier, ws *writeset.Writeset) error {
	var tables []string
	if ws.DDL != "" {
		after, err := userTables(ctx, s.c)
		if err != nil {
			_ = s.exec(context.Background(), "ROLLBACK")
			return err
		}
		tables = after
	}
	if err := s.exec(ctx, "ROLLBACK"); err != nil {
		return err
	}
	if ws.DDL != "" {
		// And the tables as they were before it: a dropped or renamed
		// table conflicts with its concurrent writers too.
		before, err := userTables(ctx, s.c)
		if err != nil {
			return err
		}
		tables = append(tables, before...)
	}
	snap := s.snap
	if !s.snapOK {
		snap = 0 // unknown: the certifier refuses it as too old (40001), never commits it blindly
	}
	return cr.Certify(ctx, ws, snap, tables)
}

// userTables lists the replicated tables (the public schema's, but
// tandem's own).
func userTables(ctx context.Context, c *pgconn.PgConn) ([]string, error) {
	rows, err := query(ctx, c, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname NOT LIKE '\_tandem\_%' ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list tables: %w", err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r[0]
	}
	return out, nil
}

// noTxDDLError refuses CREATE INDEX CONCURRENTLY and its kind in the
// multi-master design: they commit where they run, before certification.
func noTxDDLError(st *Statement) error {
	return &pgwire.Error{Code: pgwire.CodeFeatureNotSupported,
		Message: fmt.Sprintf("%s ... CONCURRENTLY is not supported in a multi-master cluster: it commits outside a transaction, before the certifier could decide", strings.Join(st.words[:min(2, len(st.words))], " ")),
		Hint:    "run it without CONCURRENTLY"}
}

// inserts reports whether a batch inserts rows (its sequences may need to
// move past them).
func inserts(batch []*writeset.Writeset) bool {
	for _, ws := range batch {
		for i := range ws.Rows {
			if op := ws.Rows[i].Op; op != writeset.OpDelete && op != writeset.OpDeleteRow {
				return true
			}
		}
	}
	return false
}
