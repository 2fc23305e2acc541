package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
	"github.com/tandemdb/tandem/writeset"
)

// Replicator sees every read-write transaction at COMMIT (declared here,
// where it is used; the node's replication agent implements it).
type Replicator interface {
	Writable() error
	Prepare(ctx context.Context, ws *writeset.Writeset) (after func(ctx context.Context, ok bool) error, err error)
}

// Backend runs client sessions on a PostgreSQL server through tandem's
// executor (rather than the relay), so that tandem controls COMMIT: the
// replicated designs capture writesets there. Values cross as raw protocol
// bytes; statements, types and errors are PostgreSQL's own.
type Backend struct {
	// BinDir holds pg_dump and pg_restore (re-seeding); empty: search.
	BinDir string
	// StrictDatabase: a session naming a database other than the one
	// replicated gets 3D000 (the managed pair); otherwise any name reaches
	// it (an external DSN names the database).
	StrictDatabase bool
	dsn            string
	cfg            *pgconn.Config
	applyMu        sync.Mutex
	apply          *pgconn.PgConn
	// applyStmts are the statements prepared on applyStmtsOn (the apply
	// connection they were prepared on), by text: applyPrepared.
	applyStmts   map[string]string
	applyStmtsOn *pgconn.PgConn
	repl         Replicator
	commitMu     sync.Mutex // GSN order = commit order
	params       [][2]string
	seq          atomic.Uint64
	seqs         seqFence // sequences moved past the rows before writing as primary
	// sessionRoles: sessions log in as their client's role (UseRoles).
	sessionRoles bool
	// mm: the multi-master design (EnableMultiMaster; multimaster.go).
	mm *mmState
}

// NewBackend connects sessions with the given DSN.
func NewBackend(ctx context.Context, dsn string) (*Backend, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres back end DSN: %w", err)
	}
	b := &Backend{cfg: cfg, dsn: dsn}
	c, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres back end: %w", err)
	}
	for _, k := range []string{"server_version", "server_encoding", "client_encoding", "DateStyle", "integer_datetimes", "standard_conforming_strings", "TimeZone", "IntervalStyle", "is_superuser", "application_name"} {
		b.params = append(b.params, [2]string{k, c.ParameterStatus(k)})
	}
	c.Close(ctx)
	return b, nil
}

// ParameterStatus implements pgwire.Backend.
func (b *Backend) ParameterStatus() [][2]string { return b.params }

// NewSession implements pgwire.Backend.
func (b *Backend) NewSession(ctx context.Context, user, database string) (pgwire.BackendSession, error) {
	if b.StrictDatabase && database != "" && database != b.cfg.Database {
		// The pair replicates one database; another name would silently
		// reach it (or an unreplicated one): refuse, as PostgreSQL
		// refuses a database it does not have.
		return nil, &pgwire.Error{Severity: "FATAL", Code: "3D000",
			Message: fmt.Sprintf("database %q does not exist: this hot-standby pair replicates database %q", database, b.cfg.Database),
			Hint:    fmt.Sprintf("connect to database %q (CREATE DATABASE does not replicate)", b.cfg.Database)}
	}
	cfg := b.cfg.Copy()
	if b.sessionRoles {
		cfg.User = user
	}
	// The server's notifications for this session (LISTEN) go to its
	// client (pgwire.Notifier): with a statement's answers, or at once
	// while the session idles after a LISTEN (watchIdle).
	var s *Session
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if s != nil && s.queueNotify != nil {
			s.queueNotify(n.Channel, n.Payload, n.PID)
		}
	}
	c, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return nil, pe // no such role, and the like: the server's words
		}
		return nil, &pgwire.Error{Severity: "FATAL", Code: pgwire.CodeCannotConnectNow, Message: "tandem: cannot reach the PostgreSQL back end: " + err.Error(), Err: err}
	}
	s = &Session{b: b, c: c, pid: c.PID()}
	if b.mm != nil {
		b.mm.register(s)
	}
	return s, nil
}

// ParameterStatus is the back end's, with the values that belong to this
// session's role (is_superuser: sessions log in as their client's role).
func (s *Session) ParameterStatus() [][2]string {
	out := make([][2]string, len(s.b.params))
	copy(out, s.b.params)
	for i, kv := range out {
		if kv[0] == "is_superuser" {
			out[i][1] = s.c.ParameterStatus("is_superuser")
		}
	}
	return out
}

// UseNotify implements pgwire.Notifier.
func (s *Session) UseNotify(_ uint32, queue func(channel, payload string, sender uint32)) {
	s.queueNotify = queue
}

// RequestDone implements pgwire.Notifier: the server sent what there was
// with the statements' answers; a listener idles with a watcher.
func (s *Session) RequestDone() { s.watchIdle() }

// Session is one client session on its own server connection.
type Session struct {
	b *Backend
	c *pgconn.PgConn
	// queueNotify passes the server's notifications to the client.
	queueNotify func(channel, payload string, sender uint32)
	// listens: the session said LISTEN (watchIdle); watch is the idle
	// watcher running (under watchMu).
	listens bool
	watchMu sync.Mutex
	watch   *idleWatch
	// committing: the COMMIT of a transaction whose writeset is logged is
	// running; Cancel leaves it alone (cancelMu: a cancel already sent has
	// landed before the COMMIT starts).
	committing atomic.Bool
	cancelMu   sync.Mutex
	inTx       bool
	// pending is a BEGIN not yet sent: it goes in one round trip with
	// the transaction's first statement (nothing at all for an empty one).
	pending string
	// The block's replicated script when it ran DDL (txddl.go).
	txScript []string
	txMarks  []txMark
	txDDL    bool
	// Multi-master (multimaster.go): use is held while a call from the
	// client uses the connection (the applier aborts an idle transaction
	// on it); doomed is an abort by the applier not yet reported; snap
	// is the GSN the transaction's snapshot reflects (snapOK: read).
	use    sync.Mutex
	doomed atomic.Pointer[pgwire.Error]
	// cancelAt: when the applier last cancelled the session's statement
	// (Unix ns). The cancel is asynchronous: it may land on a later
	// statement, after doomed was reported (abortedErr).
	cancelAt atomic.Int64
	pid      uint32
	// setvalRan: the session's last statement called setval (restride).
	setvalRan bool
	snap      uint64
	snapOK    bool
	// certifying: the session's COMMIT is capturing, rolling back and
	// certifying (the applier does not abort it).
	certifying atomic.Bool
}

// Statement is a statement prepared on the server.
type Statement struct {
	sql   string
	name  string
	desc  *pgconn.StatementDescription
	kind  string
	words []string
	s     *Session
	// oneShot: the statement runs once (a simple Query's): a large one
	// lets go of its text before it runs (releaseText).
	oneShot bool
	// setval: multi-master with a sequence stride, and the text calls
	// setval (restride); read once, at Prepare.
	setval bool
}

// SetOneShot implements pgwire.OneShot.
func (st *Statement) SetOneShot() { st.oneShot = true }

// releaseTextMin: a one-shot statement at least this large lets go of its
// text before it runs (releaseText).
const releaseTextMin = 8 << 20

// releaseText drops a one-shot statement's reference to its text (the
// client's message; the server has had it since Prepare) and collects it,
// with the copy pgx encoded for the server, so that the writeset's copies
// of the row (the image read back, the encoding) do not come on top of
// them.
func (st *Statement) releaseText() {
	if !st.oneShot || len(st.sql) < releaseTextMin {
		return
	}
	st.kind = strings.Clone(st.kind)
	for i, w := range st.words {
		st.words[i] = strings.Clone(w)
	}
	st.sql = ""
	if st.desc != nil {
		d := *st.desc
		d.SQL = ""
		st.desc = &d
	}
	runtime.GC()
}

func (st *Statement) SQL() string         { return st.sql }
func (st *Statement) NumParams() int      { return len(st.desc.ParamOIDs) }
func (st *Statement) ParamOIDs() []uint32 { return st.desc.ParamOIDs }
func (st *Statement) Close() error {
	st.s.lockUse()
	defer st.s.use.Unlock()
	if st.name != "" && st.s.c != nil && !st.s.c.IsClosed() {
		return st.s.c.Deallocate(context.Background(), st.name)
	}
	return nil
}

// Describe implements pgwire.Statement.
func (st *Statement) Describe(context.Context) ([]pgwire.Column, error) {
	if len(st.desc.Fields) == 0 {
		return nil, nil
	}
	cols := make([]pgwire.Column, len(st.desc.Fields))
	for i, f := range st.desc.Fields {
		cols[i] = pgwire.Column{Name: f.Name, OID: f.DataTypeOID}
	}
	return cols, nil
}

// TxStatus implements pgwire.BackendSession.
func (s *Session) TxStatus() byte {
	if s.inTx {
		return 'T'
	}
	return 'I'
}

// Prepare implements pgwire.BackendSession.
func (s *Session) Prepare(ctx context.Context, sql string) (pgwire.Statement, error) {
	return s.PrepareTyped(ctx, sql, nil)
}

// PrepareTyped implements pgwire.TypedPreparer: the statement is prepared on
// the server with the client's parameter types (0: the server infers).
func (s *Session) PrepareTyped(ctx context.Context, sql string, paramOIDs []uint32) (pgwire.Statement, error) {
	s.lockUse()
	defer s.use.Unlock()
	words := pgwire.Keywords(sql, 4)
	st := &Statement{sql: sql, words: words, s: s}
	st.setval = s.b.seqs.stride > 1 && strings.Contains(strings.ToLower(sql), "setval")
	if len(words) > 0 {
		st.kind = words[0]
	}
	if isTxControl(st) {
		st.desc = &pgconn.StatementDescription{}
		return st, nil
	}
	st.name = "tandem_" + strconv.FormatUint(s.b.seq.Add(1), 36)
	d, err := s.c.Prepare(ctx, st.name, sql, paramOIDs)
	if err != nil {
		return nil, err
	}
	st.desc = d
	return st, nil
}

func isTxControl(st *Statement) bool {
	switch st.kind {
	case "BEGIN", "START", "COMMIT", "END", "ABORT":
		return true
	case "ROLLBACK":
		return !(len(st.words) > 1 && st.words[1] == "TO")
	}
	return false
}

// Execute implements pgwire.BackendSession (simple protocol: text results).
func (s *Session) Execute(ctx context.Context, ps pgwire.Statement, args []any) (pgwire.Result, error) {
	return s.ExecuteRaw(ctx, ps, nil, nil, nil)
}

// ExecuteRaw implements pgwire.RawSession.
func (s *Session) ExecuteRaw(ctx context.Context, ps pgwire.Statement, params [][]byte, paramFormats, resultFormats []int16) (pgwire.Result, error) {
	if err := s.enter(ctx, ps.(*Statement)); err != nil {
		s.release()
		return nil, err
	}
	defer s.release()
	res, err := s.executeRaw(ctx, ps, params, paramFormats, resultFormats)
	return res, s.abortedErr(err)
}

func (s *Session) executeRaw(ctx context.Context, ps pgwire.Statement, params [][]byte, paramFormats, resultFormats []int16) (pgwire.Result, error) {
	st := ps.(*Statement)
	defer s.restride(st)()
	if st.kind == "LISTEN" {
		s.listens = true
	}
	switch st.kind {
	case "BEGIN", "START":
		if s.inTx {
			return &cmdResult{tag: "BEGIN"}, nil
		}
		readOnly := strings.Contains(strings.ToUpper(st.sql), "READ ONLY")
		standby := false
		if s.b.repl != nil && !readOnly {
			if err := s.b.repl.Writable(); err != nil {
				var pe *pgwire.Error
				if !errors.As(err, &pe) || pe.Code != codeReadOnlyTx {
					return nil, err
				}
				// A standby: the block is read-only, as on PostgreSQL's
				// hot standby (its reads work; a write gets 25006).
				standby = true
			} else if err := s.b.fenceSequences(ctx); err != nil {
				return nil, err
			}
		}
		switch {
		case lazyBegin(st) && standby:
			s.pending = "BEGIN READ ONLY"
		case lazyBegin(st):
			s.pending = st.sql
		default:
			if err := s.sendBegin(ctx, st.sql); err != nil {
				return nil, err
			}
			if standby {
				if err := s.exec(ctx, "SET TRANSACTION READ ONLY"); err != nil {
					_ = s.exec(ctx, "ROLLBACK")
					return nil, err
				}
			}
		}
		s.inTx = true
		return &cmdResult{tag: "BEGIN"}, nil
	case "COMMIT", "END":
		return s.finish(ctx, "COMMIT")
	case "ROLLBACK", "ABORT":
		if isTxControl(st) {
			return s.finish(ctx, "ROLLBACK")
		}
	}
	if s.b.repl != nil && len(st.words) > 1 && (st.kind == "CREATE" || st.kind == "DROP") && st.words[1] == "DATABASE" {
		// As PostgreSQL inside a block; outside one it would make or drop
		// a database on the primary alone.
		if s.inTx {
			return nil, pgwire.Errorf("25001", "%s DATABASE cannot run inside a transaction block", st.kind)
		}
		return nil, &pgwire.Error{Code: pgwire.CodeFeatureNotSupported,
			Message: fmt.Sprintf("%s DATABASE is not replicated: a replicated tandem cluster serves one database", st.kind),
			Hint:    "run one cluster per database, or create it on a standalone node"}
	}
	autocommit := !s.inTx && s.b.repl != nil && writes(st)
	if autocommit {
		if err := s.b.repl.Writable(); err != nil {
			return nil, err
		}
		if err := s.b.fenceSequences(ctx); err != nil {
			return nil, err
		}
		s.pending = "BEGIN"
		s.inTx = true
	}
	// Schema statements on temporary objects are the session's own:
	// never replicated (issue 19 item 5); their rows are not captured
	// either (temporary tables get no capture trigger).
	ddl := false
	if s.b.repl != nil && isDDL(st.kind) {
		local, err := s.sessionLocal(ctx, st)
		if err != nil {
			if autocommit {
				s.inTx, s.pending = false, ""
			}
			return nil, err
		}
		ddl = !local
	}
	if standbyText, ok := noTxDDL(st); ok && ddl {
		if s.b.mm != nil {
			if autocommit {
				s.inTx, s.pending = false, ""
			}
			return nil, noTxDDLError(st)
		}
		if autocommit {
			// It cannot run in a transaction: run it alone, then
			// replicate it.
			s.inTx, s.pending = false, ""
			return s.runNoTxDDL(ctx, st, standbyText, params, paramFormats, resultFormats)
		}
		ddl = false // in a block: the server answers 25001, as PostgreSQL does
	}
	if s.inTx && ddl && !autocommit {
		return s.blockDDL(ctx, st, params, paramFormats, resultFormats)
	}
	// An autocommit write fetches its writeset in the statement's own
	// batch (DDL is replicated as its statement, not as rows).
	withWS := autocommit && !ddl
	bigParams := false
	if withWS {
		st.releaseText()
		n := 0
		for _, p := range params {
			n += len(p)
		}
		bigParams = n >= releaseTextMin
	}
	rr, mrr, err := s.run(ctx, st, params, paramFormats, resultFormats, withWS)
	if bigParams {
		// The server has the values: the client's Bind message (which
		// pgwire no longer holds) and pgx's copy of it for the server
		// are collected before the writeset's copies of the row come.
		params = nil
		runtime.GC()
	}
	if err != nil {
		if autocommit {
			s.inTx = false
			_ = s.exec(ctx, "ROLLBACK")
		}
		return nil, err
	}
	var rows [][]any
	for rr.NextRow() {
		vals := rr.Values()
		row := make([]any, len(vals))
		for i, v := range vals {
			if v != nil {
				row[i] = pgwire.Raw(append([]byte{}, v...))
			}
		}
		rows = append(rows, row)
	}
	// The statement's own columns, before the reader moves on to the
	// writeset's result (pgconn reuses it).
	cols := colsOf(st, rr.FieldDescriptions())
	tag, err := rr.Close()
	var ws []capRow
	if mrr != nil {
		if err == nil && withWS {
			if !mrr.NextResult() {
				err = fmt.Errorf("postgres: no writeset result after %s", st.kind)
			} else {
				ws, err = readWS(mrr.ResultReader())
			}
		}
		if cerr := mrr.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if autocommit {
			s.inTx = false
			_ = s.exec(ctx, "ROLLBACK")
		}
		return nil, err
	}
	res := &rowsResult{cols: cols, rows: rows, tag: tag.String()}
	if s.inTx && !autocommit {
		s.trackSavepoint(st)
	}
	if autocommit {
		s.inTx = false
		ddlText := ""
		if ddl {
			ddlText = st.sql
		}
		var pre *[]capRow // nil: replicatedCommit reads the writeset
		if withWS {
			pre = &ws
		}
		if err := s.replicatedCommit(ctx, ddlText, pre); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// run executes a prepared statement, after the pending BEGIN if there is
// one and followed by wsQuery if withWS (all in one round trip; mrr is
// then to be closed after rr, the writeset read from mrr's next result).
func (s *Session) run(ctx context.Context, st *Statement, params [][]byte, paramFormats, resultFormats []int16, withWS bool) (*pgconn.ResultReader, *pgconn.MultiResultReader, error) {
	if s.pending == "" {
		return s.c.ExecPrepared(ctx, st.name, params, paramFormats, resultFormats), nil, nil
	}
	var bt pgconn.Batch
	s.beginBatch(&bt, s.pending)
	bt.ExecPrepared(st.name, params, paramFormats, resultFormats)
	if withWS {
		bt.ExecParams(wsQuery, nil, nil, nil, nil)
	}
	s.pending = ""
	mrr := s.c.ExecBatch(ctx, &bt)
	if err := s.beginResults(mrr); err != nil { // the BEGIN (and snapshot)
		return nil, nil, err
	}
	if !mrr.NextResult() {
		return nil, nil, mrr.Close()
	}
	return mrr.ResultReader(), mrr, nil
}

// flushBegin sends a pending BEGIN by itself.
func (s *Session) flushBegin(ctx context.Context) error {
	if s.pending == "" {
		return nil
	}
	sql := s.pending
	s.pending = ""
	return s.sendBegin(ctx, sql)
}

// lazyBegin: a plain BEGIN (no options that could fail) may wait for the
// transaction's first statement.
func lazyBegin(st *Statement) bool {
	switch len(st.words) {
	case 1:
		return st.kind == "BEGIN"
	case 2:
		return (st.kind == "BEGIN" && (st.words[1] == "TRANSACTION" || st.words[1] == "WORK")) ||
			(st.kind == "START" && st.words[1] == "TRANSACTION")
	}
	return false
}

func colsOf(st *Statement, fds []pgconn.FieldDescription) []pgwire.Column {
	if len(fds) == 0 {
		return nil
	}
	cols := make([]pgwire.Column, len(fds))
	for i, f := range fds {
		cols[i] = pgwire.Column{Name: f.Name, OID: f.DataTypeOID}
	}
	return cols
}

func writes(st *Statement) bool {
	switch st.kind {
	case "SELECT", "SHOW", "VALUES", "TABLE", "EXPLAIN", "SET", "RESET", "DISCARD", "DEALLOCATE", "PREPARE", "LISTEN", "NOTIFY", "VACUUM", "ANALYZE", "CHECKPOINT", "DECLARE", "FETCH", "MOVE", "CLOSE":
		return st.kind == "SELECT" && strings.Contains(strings.ToUpper(st.sql), " INTO ")
	case "WITH":
		u := strings.ToUpper(st.sql)
		return strings.Contains(u, "INSERT") || strings.Contains(u, "UPDATE") || strings.Contains(u, "DELETE")
	}
	return true
}

// restride: a client's setval puts a sequence where it says, which in
// multi-master may be off the node's residue (the stride), so the next
// write fences the sequences again (strideSQL moves it forward to the
// node's next own value). Marked when the statement returns, and again
// before the session's next statement, when the setval surely ran.
func (s *Session) restride(st *Statement) func() {
	if s.setvalRan {
		s.setvalRan = false
		s.b.seqs.stale()
	}
	if !st.setval {
		return func() {}
	}
	return func() {
		s.setvalRan = true
		s.b.seqs.stale()
	}
}

func isDDL(kind string) bool {
	switch kind {
	case "CREATE", "DROP", "ALTER", "TRUNCATE", "COMMENT", "GRANT", "REVOKE":
		return true
	}
	return false
}

func (s *Session) exec(ctx context.Context, sql string) error {
	_, err := s.c.Exec(ctx, sql).ReadAll()
	return err
}

func (s *Session) finish(ctx context.Context, verb string) (pgwire.Result, error) {
	if !s.inTx {
		return &cmdResult{tag: verb}, nil
	}
	s.inTx = false
	script := s.takeScript()
	if s.pending != "" {
		s.pending = "" // nothing ran: nothing to commit or roll back
		return &cmdResult{tag: verb}, nil
	}
	if verb == "COMMIT" && s.b.repl != nil {
		if err := s.replicatedCommit(ctx, script, nil); err != nil {
			return nil, err
		}
		return &cmdResult{tag: verb}, nil
	}
	res := s.c.Exec(ctx, verb)
	results, err := res.ReadAll()
	if err != nil {
		return nil, err
	}
	tag := verb
	if len(results) > 0 {
		tag = results[len(results)-1].CommandTag.String()
	}
	return &cmdResult{tag: tag}, nil
}

// Cancel implements pgwire.BackendSession.
func (s *Session) Cancel() {
	s.cancelMu.Lock()
	defer s.cancelMu.Unlock()
	if s.committing.Load() {
		return // a logged writeset's COMMIT is not cancelled (capture.go)
	}
	_ = s.c.CancelRequest(context.Background())
}

// Close implements pgwire.BackendSession: closing the connection rolls back.
func (s *Session) Close() error {
	s.lockUse()
	defer s.use.Unlock()
	if s.b.mm != nil {
		s.b.mm.unregister(s)
	}
	s.takeScript()
	return s.c.Close(context.Background())
}

func pgQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func pgLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

type cmdResult struct{ tag string }

func (r *cmdResult) Columns() []pgwire.Column { return nil }
func (r *cmdResult) Next([]any) (bool, error) { return false, nil }
func (r *cmdResult) Tag() string              { return r.tag }
func (r *cmdResult) Close() error             { return nil }

type rowsResult struct {
	cols []pgwire.Column
	rows [][]any
	i    int
	tag  string
}

func (r *rowsResult) Columns() []pgwire.Column { return r.cols }
func (r *rowsResult) Next(dst []any) (bool, error) {
	if r.i >= len(r.rows) {
		return false, nil
	}
	copy(dst, r.rows[r.i])
	r.i++
	return true, nil
}
func (r *rowsResult) Tag() string  { return r.tag }
func (r *rowsResult) Close() error { return nil }

// codeReadOnlyTx is the SQLSTATE a standby answers a write with.
const codeReadOnlyTx = "25006"

// Lost implements pgwire.LostSession: the server connection ended (the
// server terminated this backend, or went away).
func (s *Session) Lost() bool {
	if s.watching() {
		return false // the watcher has the connection; it ends when the connection does
	}
	return s.c != nil && s.c.IsClosed()
}

// sessionLocal reports whether a schema statement only concerns the
// session's temporary objects: CREATE TEMP ..., or DROP / ALTER / CREATE
// INDEX / TRUNCATE of relations that are all temporary (read from the
// catalog on the session's own connection, where its temporary schema is
// visible). A statement naming temporary and permanent relations together
// is refused: neither half could replicate alone.
func (s *Session) sessionLocal(ctx context.Context, st *Statement) (bool, error) {
	temp, rels := sqlpg.DDLTargets(st.sql)
	if temp || len(rels) == 0 {
		return temp, nil
	}
	n := 0
	for _, r := range rels {
		name := pgQuote(r.Name)
		if r.Schema != "" {
			name = pgQuote(r.Schema) + "." + name
		}
		rows, err := query(ctx, s.c, "SELECT relpersistence FROM pg_class WHERE oid = to_regclass($1)", name)
		if err != nil {
			return false, nil // the statement itself will say what is wrong
		}
		if len(rows) == 1 && rows[0][0] == "t" {
			n++
		}
	}
	switch n {
	case 0:
		return false, nil
	case len(rels):
		return true, nil
	}
	return false, pgwire.Errorf(pgwire.CodeFeatureNotSupported, "in a replicated cluster, %s temporary and permanent relations in separate statements (only the permanent ones replicate)", st.kind)
}
