package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Executor runs the protocol for a Backend. It implements Handler.
type Executor struct {
	Backend Backend
	// StatementTimeout is statement_timeout's default (0: none); a
	// session changes it with SET. On back ends that speak the protocol
	// (RawSession: PostgreSQL) the server enforces its own setting instead.
	StatementTimeout time.Duration
	// IdleInTransactionTimeout and IdleSessionTimeout are the defaults of
	// idle_in_transaction_session_timeout (FATAL 25P03) and
	// idle_session_timeout (FATAL 57P05); 0: off. Sessions change them
	// with SET. tandem enforces them on every back end it executes for.
	IdleInTransactionTimeout time.Duration
	IdleSessionTimeout       time.Duration
	// MessageReadTimeout bounds the time from a message's first byte to
	// its last (0: none).
	MessageReadTimeout time.Duration
	// Keepalive is what the server set on client sockets (SHOW
	// tcp_keepalives_*; SET changes the session's socket).
	Keepalive Keepalive
	// Logger logs sessions ended by a timeout (nil: slog.Default()).
	Logger *slog.Logger
	// NodeID is the node's id (SHOW tandem.node); Positions its
	// replication positions for the router's read consistency (nil:
	// unreplicated), ReadWait how long SET tandem.min_applied_gsn waits
	// (router.read_wait; 0: 1 s). See readgsn.go.
	NodeID    string
	Positions Positions
	ReadWait  time.Duration
	// ReadConsistency is router.read_consistency (SHOW
	// tandem.read_consistency before a SET).
	ReadConsistency string
}

func (e *Executor) log() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.Default()
}

// Open starts a back-end session for an authenticated client.
func (e *Executor) Open(ctx context.Context, c *Conn) (Session, error) {
	bs, err := e.Backend.NewSession(ctx, c.User, c.Database)
	if err != nil {
		return nil, err
	}
	params := e.Backend.ParameterStatus()
	if p, ok := bs.(interface{ ParameterStatus() [][2]string }); ok {
		params = p.ParameterStatus() // the session's own (is_superuser of its role)
	}
	if app, ok := c.Params["application_name"]; ok {
		// The client's name for itself, as PostgreSQL reports it back
		// (ParameterStatus, SHOW, pg_stat_activity); RESET returns to it.
		params = withParam(params, "application_name", app)
	}
	s := &execSession{c: c, bs: bs, params: params, stmts: map[string]*prepared{}, portals: map[string]*portal{}, settings: map[string]string{}, defTimeout: e.StatementTimeout, e: e}
	s.watch.s = s
	if err := s.startupZone(ctx); err != nil {
		bs.Close()
		return nil, err
	}
	if tag := c.Params[SessionTagParam]; tag != "" {
		s.note = &CommitNote{Tag: tag}
	}
	if u, ok := bs.(SettingsUser); ok {
		u.UseSettings(s)
	}
	if u, ok := bs.(TerminateUser); ok {
		u.UseTerminate(s.terminate)
	}
	if n, ok := bs.(Notifier); ok {
		n.UseNotify(c.ProcessID, s.queueNotify)
		s.notifier = n
	}
	s.idler, _ = bs.(Idler)
	c.HoldMemoryUntilRelease() // released when a batch ends (readMessage)
	register(s)
	return s, nil
}

// withParam is params with name set to v (a copy: params may be the back
// end's, shared by its sessions).
func withParam(params [][2]string, name, v string) [][2]string {
	out := make([][2]string, 0, len(params)+1)
	for _, kv := range params {
		if !strings.EqualFold(kv[0], name) {
			out = append(out, kv)
		}
	}
	return append(out, [2]string{name, v})
}

type prepared struct {
	sql       string
	paramOIDs []uint32
	st        Statement // nil for statements tandem answers itself
	cols      []Column
	described bool
}

type portal struct {
	stmt    *prepared
	args    []any
	raw     [][]byte // RawSession: parameters as sent
	rawFmt  []int16
	formats []int16
	cols    []Column
	res     Result
	done    bool
}

type execSession struct {
	c        *Conn
	bs       BackendSession
	params   [][2]string
	stmts    map[string]*prepared
	portals  map[string]*portal
	settings map[string]string
	// startZone: the TimeZone of the startup packet ("": UTC);
	// zoneName / zoneLoc: the zone rows were last printed in.
	startZone, zoneName string
	zoneLoc             *time.Location
	// tx: what the open transaction block did to the settings
	// (txsettings.go).
	tx txSettings
	// txIsolation: the level the open transaction block asked for.
	txIsolation string
	failed      bool // an error inside a transaction block: only ROLLBACK works
	implicit    bool // an extended-protocol batch's implicit transaction, committed at Sync
	skip        bool // after an extended-protocol error: discard until Sync
	row         []any
	buf         []byte
	// watch stops the running statement when the client hangs up or
	// statement_timeout (defTimeout unless SET) passes.
	watch      stmtWatch
	defTimeout time.Duration
	e          *Executor
	// inBatch: an extended-protocol message came after the last
	// ReadyForQuery; the idle timeouts wait for Sync, as in PostgreSQL.
	inBatch bool
	// note: a session tagged by the router (commitnote.go).
	note         *CommitNote
	reportedGSN  uint64
	reportedRead uint64
	// reportedApplied: readgsn.go
	reportedApplied uint64
	// killed: the session was terminated from outside (terminate.go).
	killed atomic.Pointer[Error]
	// notifier: the back end's LISTEN / NOTIFY; notes: what waits for
	// the client (notify.go).
	notifier Notifier
	notes    notifyQueue
	// act: what pg_stat_activity shows of the session (activity.go).
	act activity
	// idler: bs, when it wants to know (Idler).
	idler Idler
}

// statementTimeout is the session's statement_timeout; 0 where the back
// end enforces its own (PostgreSQL).
func (s *execSession) statementTimeout() time.Duration {
	if _, raw := s.bs.(RawSession); raw {
		return 0
	}
	if v, ok := s.setting("statement_timeout"); ok {
		d, _ := ParseTimeout("statement_timeout", v) // checked at SET
		return d
	}
	return s.defTimeout
}

func (s *execSession) ParameterStatus() [][2]string { return s.params }
func (s *execSession) Cancel()                      { s.bs.Cancel() }

func (s *execSession) Close() {
	unregister(s)
	for _, p := range s.portals {
		if p.res != nil {
			p.res.Close()
		}
	}
	for _, p := range s.stmts {
		if p.st != nil {
			p.st.Close()
		}
	}
	s.bs.Close()
}

// ready appends ReadyForQuery and notes the session idle.
func (s *execSession) ready() {
	s.syncTx()
	tx := s.txStatus()
	if s.notifier != nil {
		s.notifier.RequestDone()
		s.appendNotifies(tx)
	}
	s.c.Append(&pgproto3.ReadyForQuery{TxStatus: tx})
	s.idle(tx)
	if s.idler != nil {
		s.idler.Idle()
	}
}

// Idler is a back-end session told when a request was answered
// (ReadyForQuery): a cancel that came between its runs ends there.
type Idler interface{ Idle() }

func (s *execSession) txStatus() byte {
	if s.failed {
		return 'E'
	}
	return s.bs.TxStatus()
}

// Serve runs the message loop.
func (s *execSession) Serve(ctx context.Context) error {
	c := s.c
	if s.note != nil {
		ctx = WithCommitNote(ctx, s.note)
	}
	for {
		typ, frame, err := s.readMessage()
		if err != nil && errors.Is(err, ErrOutOfMemory) {
			// The message was read past: refuse it, as PostgreSQL refuses
			// a statement it has no memory for, and go on.
			s.inBatch = typ != 'S' && typ != 'Q'
			if !s.skip {
				s.sendError(err)
				if typ == 'Q' {
					s.ready()
				} else {
					s.skip = true
				}
			}
			continue
		}
		if err != nil {
			var fe *fatalError
			if errors.As(err, &fe) {
				s.fatal(fe.err)
				return fe.err
			}
			if errors.Is(err, ErrMessageTooLarge) || errors.Is(err, ErrMalformed) {
				s.fatal(err)
			}
			return err
		}
		s.inBatch = typ != 'S' && typ != 'Q'
		body := frameBody(frame)
		if s.skip && typ != 'S' && typ != 'X' {
			continue
		}
		var herr error
		switch typ {
		case 'Q':
			herr = s.simpleQuery(ctx, body)
		case 'P':
			herr = s.parse(ctx, body)
		case 'B':
			herr = s.bind(body)
		case 'D':
			herr = s.describe(ctx, body)
		case 'E':
			herr = s.execute(ctx, body)
		case 'C':
			herr = s.closeMsg(body)
		case 'S':
			s.skip = false
			s.endImplicit(ctx)
			s.reportCommit()
			s.reportRead()
			s.ready()
		case 'H':
			if err := c.Flush(); err != nil {
				return err
			}
		case 'X':
			return nil
		case 'd', 'c', 'f':
			// COPY data outside COPY: PostgreSQL ignores it.
		default:
			s.fatal(Errorf(CodeProtocolViolation, "invalid frontend message type %d", typ))
			return fmt.Errorf("%w: message type %d", ErrMalformed, typ)
		}
		if herr != nil {
			var fe *fatalError
			if errors.As(herr, &fe) {
				s.fatal(fe.err)
				return fe.err
			}
			if errors.Is(herr, io.EOF) || errors.Is(herr, io.ErrUnexpectedEOF) {
				return herr
			}
			s.sendError(herr)
			if typ != 'Q' {
				s.skip = true
			}
		}
		if err := s.killedErr(); err != nil {
			var fe *fatalError
			errors.As(err, &fe)
			s.fatal(fe.err)
			return fe.err
		}
		if ls, ok := s.bs.(LostSession); ok && ls.Lost() {
			// This session's back-end connection ended: end the session
			// (the client was told why, or is now).
			s.fatal(Errorf(CodeAdminShutdown, "tandem: this session's connection to the back end ended; the transaction in progress, if any, did not commit"))
			return fmt.Errorf("%w: back-end connection ended", io.ErrUnexpectedEOF)
		}
	}
}

type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }

func (s *execSession) fatal(err error) {
	er := ToErrorResponse(err)
	if er.Code == CodeInternal && (errors.Is(err, ErrMalformed) || errors.Is(err, ErrMessageTooLarge)) {
		er.Code = CodeProtocolViolation
		er.Message = "tandem: " + er.Message
	}
	er.Severity, er.SeverityUnlocalized = "FATAL", "FATAL"
	s.c.Append(er)
	_ = s.c.Flush()
}

func (s *execSession) sendError(err error) {
	if s.implicit {
		// An error rolls the whole batch back, as in PostgreSQL.
		s.implicit = false
		if s.bs.TxStatus() == 'T' {
			if rerr := s.runInternal(context.Background(), "ROLLBACK"); rerr != nil {
				s.failed = true
			}
		}
	} else if s.bs.TxStatus() == 'T' {
		s.failed = true
	}
	er := ToErrorResponse(err)
	if er.Code == CodeQueryCanceled && s.watch.timedOut() {
		er.Message = "canceling statement due to statement timeout"
	}
	s.c.Append(er)
}

func malformed(what string, err error) error {
	return &fatalError{fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)}
}

// ---- simple query protocol ----

func (s *execSession) simpleQuery(ctx context.Context, body []byte) error {
	query, ok := cString(body)
	if !ok || len(query)+1 != len(body) {
		return malformed("Query", errors.New("invalid message format"))
	}
	s.dropUnnamed()
	// As in PostgreSQL, a simple Query also destroys the unnamed
	// statement (which may hold a large text).
	if old := s.stmts[""]; old != nil {
		if old.st != nil {
			old.st.Close()
		}
		delete(s.stmts, "")
	}
	s.started(query)
	stmts := SplitStatements(query)
	if len(stmts) == 0 {
		s.c.Append(&pgproto3.EmptyQueryResponse{})
		s.ready()
		return nil
	}
	// Several statements outside a transaction block run as one implicit
	// transaction, as in PostgreSQL (unless they manage transactions).
	implicit := len(stmts) > 1 && s.bs.TxStatus() == 'I' && !anyTxControl(stmts)
	if implicit {
		if err := s.runInternal(ctx, "BEGIN"); err != nil {
			s.sendError(err)
			s.ready()
			return nil
		}
	}
	var failed error
	for i := range stmts {
		// The statement's text is the message's: hold it only where it
		// is used (a back end may release a large one early, OneShot).
		sql := stmts[i]
		stmts[i] = ""
		kw := s.txWords(sql)
		if err := s.runSimple(ctx, sql); err != nil {
			var fe *fatalError
			if errors.As(err, &fe) || errors.Is(err, io.EOF) {
				return err
			}
			failed = err
			break
		}
		s.afterTx(kw)
	}
	if implicit {
		if failed != nil {
			s.tx.ending = "ROLLBACK" // the SETs of the failed statements' block too
			_ = s.runInternal(ctx, "ROLLBACK")
		} else if err := s.runInternal(ctx, "COMMIT"); err != nil {
			failed = err
		}
	}
	if failed != nil {
		s.sendError(failed)
	}
	s.reportCommit()
	s.reportRead()
	s.ready()
	return nil
}

var txControl = map[string]bool{"BEGIN": true, "START": true, "COMMIT": true, "END": true, "ROLLBACK": true, "ABORT": true, "SAVEPOINT": true, "RELEASE": true}

func anyTxControl(stmts []string) bool {
	for _, s := range stmts {
		if txControl[FirstKeyword(s)] {
			return true
		}
	}
	return false
}

func (s *execSession) runInternal(ctx context.Context, sql string) error {
	st, err := s.bs.Prepare(ctx, sql)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := s.bs.Execute(ctx, st, nil)
	if err != nil {
		return err
	}
	return res.Close()
}

func (s *execSession) runSimple(ctx context.Context, sql string) error {
	if handled, err := s.failedTx(ctx, sql); handled {
		return err
	}
	if handled, err := s.special(ctx, sql, nil, true); handled {
		return err
	}
	if FirstKeyword(sql) == "COPY" {
		return s.copy(ctx, sql)
	}
	s.watch.begin(s.statementTimeout())
	defer s.watch.end()
	st, err := s.bs.Prepare(ctx, sql)
	if err != nil {
		return err
	}
	defer st.Close()
	if st.NumParams() > 0 {
		return Errorf("42P02", "there is no parameter $1")
	}
	if one, ok := st.(OneShot); ok {
		one.SetOneShot()
	}
	var kw []string
	if s.failed {
		kw = Keywords(sql, 3)
	}
	sql = "" // not held while the statement runs (see OneShot)
	res, err := s.bs.Execute(ctx, st, nil)
	if err != nil {
		return err
	}
	defer res.Close()
	cols := res.Columns()
	if cols != nil {
		s.c.Append(rowDescription(cols, nil))
	}
	if _, err := s.sendRows(res, cols, nil, 0); err != nil {
		return err
	}
	s.reportCommit()
	s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag())})
	s.afterStatementWords(kw)
	return nil
}

// failedTx handles a statement in a failed transaction block, as
// PostgreSQL does: ROLLBACK (and ROLLBACK TO SAVEPOINT) run; COMMIT or END
// rolls the transaction back and answers ROLLBACK; anything else is refused
// with 25P02. handled is false when the statement should run as usual.
func (s *execSession) failedTx(ctx context.Context, sql string) (handled bool, err error) {
	if !s.failed {
		return false, nil
	}
	kw := Keywords(sql, 2)
	if len(kw) == 0 {
		return true, Errorf(CodeInFailedTx, "current transaction is aborted, commands ignored until end of transaction block")
	}
	switch kw[0] {
	case "ROLLBACK", "ABORT":
		return false, nil
	case "COMMIT", "END":
		if len(kw) > 1 && kw[1] == "PREPARED" {
			break
		}
		s.tx.ending = "ROLLBACK"
		if s.bs.TxStatus() != 'I' {
			if err := s.runInternal(ctx, "ROLLBACK"); err != nil {
				return true, err
			}
		}
		s.syncTx()
		s.failed = false
		s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("ROLLBACK")})
		return true, nil
	}
	return true, Errorf(CodeInFailedTx, "current transaction is aborted, commands ignored until end of transaction block")
}

// afterStatement clears the failed state when the transaction ended or a
// ROLLBACK TO SAVEPOINT undid the failed part.
func (s *execSession) afterStatement(sql string) {
	s.noteIsolation(sql)
	if !s.failed {
		return
	}
	s.afterStatementWords(Keywords(sql, 3))
}

// afterStatementWords is afterStatement with the statement's first three
// keywords (read only when the transaction had failed).
func (s *execSession) afterStatementWords(kw []string) {
	if !s.failed {
		return
	}
	if s.bs.TxStatus() == 'I' {
		s.failed = false
		return
	}
	if len(kw) > 1 && kw[0] == "ROLLBACK" && (kw[1] == "TO" || (len(kw) > 2 && kw[2] == "TO")) {
		s.failed = false
	}
}

func rowDescription(cols []Column, formats []int16) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{Fields: make([]pgproto3.FieldDescription, len(cols))}
	for i, col := range cols {
		size := int16(-1)
		switch col.OID {
		case OIDInt8, OIDFloat8, OIDTimestamp, OIDTimestamptz:
			size = 8
		case OIDInt4, OIDFloat4, OIDDate:
			size = 4
		case OIDInt2:
			size = 2
		case OIDBool:
			size = 1
		}
		rd.Fields[i] = pgproto3.FieldDescription{Name: []byte(col.Name), DataTypeOID: col.OID, DataTypeSize: size, TypeModifier: -1, Format: formatFor(formats, i)}
	}
	return rd
}

func formatFor(formats []int16, i int) int16 {
	switch len(formats) {
	case 0:
		return 0
	case 1:
		return formats[0]
	}
	if i < len(formats) {
		return formats[i]
	}
	return 0
}

// sendRows streams up to max rows (0: all). more reports a suspended portal.
func (s *execSession) sendRows(res Result, cols []Column, formats []int16, max int64) (more bool, err error) {
	if cols == nil {
		cols = res.Columns()
	}
	if cols == nil {
		return false, nil
	}
	if cap(s.row) < len(cols) {
		s.row = make([]any, len(cols))
	}
	row := s.row[:len(cols)]
	loc := s.zone()
	var sent int64
	for {
		if max > 0 && sent >= max {
			return true, nil
		}
		ok, err := res.Next(row)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, nil
		}
		if err := s.appendDataRow(cols, formats, row, loc); err != nil {
			return false, err
		}
		sent++
		if s.c.Pending() > 256<<10 {
			if err := s.c.Flush(); err != nil {
				return false, err
			}
		}
	}
}

// appendDataRow encodes a DataRow straight into the output buffer.
func (s *execSession) appendDataRow(cols []Column, formats []int16, row []any, loc *time.Location) error {
	b := s.buf[:0]
	b = append(b, 'D', 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(row)))
	for i, v := range row {
		if v == nil {
			b = binary.BigEndian.AppendUint32(b, 0xffffffff)
			continue
		}
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		var err error
		b, err = appendValue(b, cols[i].OID, formatFor(formats, i), v, loc)
		if err != nil {
			return err
		}
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	s.c.AppendRaw(b)
	s.buf = b
	return nil
}

// ---- extended query protocol ----

func (s *execSession) dropUnnamed() {
	if p := s.portals[""]; p != nil {
		if p.res != nil {
			p.res.Close()
		}
		delete(s.portals, "")
	}
}

// decodeParse decodes a Parse message; from a large (owned) frame the
// query text is not copied (see OwnedFrameBytes).
func decodeParse(body []byte) (pgproto3.Parse, error) {
	var m pgproto3.Parse
	if len(body)+5 < OwnedFrameBytes {
		err := m.Decode(body)
		return m, err
	}
	bad := errors.New("invalid message format")
	i := bytes.IndexByte(body, 0)
	if i < 0 {
		return m, bad
	}
	m.Name = string(body[:i]) // a map key: copied, or it would keep the frame
	rest := body[i+1:]
	q, ok := cString(rest)
	if !ok {
		return m, bad
	}
	m.Query = q
	rest = rest[len(q)+1:]
	if len(rest) < 2 {
		return m, bad
	}
	n := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) != 4*n {
		return m, bad
	}
	if n > 0 {
		m.ParameterOIDs = make([]uint32, n)
	}
	for k := range n {
		m.ParameterOIDs[k] = binary.BigEndian.Uint32(rest[4*k:])
	}
	return m, nil
}

func (s *execSession) parse(ctx context.Context, body []byte) error {
	m, err := decodeParse(body)
	if err != nil {
		return malformed("Parse", err)
	}
	s.started(m.Query) // a back end may run it to describe it
	if s.failed {
		// As PostgreSQL: in a failed block only the statements that end
		// it can be parsed.
		switch kw := Keywords(m.Query, 1); {
		case len(kw) == 0:
		case kw[0] == "ROLLBACK", kw[0] == "ABORT", kw[0] == "COMMIT", kw[0] == "END":
		default:
			return Errorf(CodeInFailedTx, "current transaction is aborted, commands ignored until end of transaction block")
		}
	}
	if m.Name != "" {
		if _, dup := s.stmts[m.Name]; dup {
			return Errorf(CodeDuplicatePStmt, "prepared statement %q already exists", m.Name)
		}
	} else if old := s.stmts[""]; old != nil {
		if old.st != nil {
			old.st.Close()
		}
		delete(s.stmts, "")
	}
	stmts := SplitStatements(m.Query)
	if len(stmts) > 1 {
		return Errorf(CodeSyntax, "cannot insert multiple commands into a prepared statement")
	}
	p := &prepared{sql: m.Query, paramOIDs: append([]uint32(nil), m.ParameterOIDs...)}
	if len(stmts) == 1 && !s.isSpecial(stmts[0]) && FirstKeyword(stmts[0]) != "COPY" {
		var st Statement
		var err error
		if tp, ok := s.bs.(TypedPreparer); ok {
			st, err = tp.PrepareTyped(ctx, stmts[0], p.paramOIDs)
		} else {
			st, err = s.bs.Prepare(ctx, stmts[0])
		}
		if err != nil {
			return err
		}
		p.st = st
		if _, ok := s.bs.(TypedPreparer); ok {
			if pt, ok := st.(ParamTyper); ok {
				// The server's answer: the client's types where it gave
				// them, the inferred ones elsewhere.
				p.paramOIDs = append([]uint32(nil), pt.ParamOIDs()...)
			}
		}
		for len(p.paramOIDs) < st.NumParams() {
			p.paramOIDs = append(p.paramOIDs, 0)
		}
		if pt, ok := st.(ParamTyper); ok {
			for i, oid := range pt.ParamOIDs() {
				if i < len(p.paramOIDs) && p.paramOIDs[i] == 0 {
					p.paramOIDs[i] = oid
				}
			}
		}
	}
	s.stmts[m.Name] = p
	s.c.Append(&pgproto3.ParseComplete{})
	return nil
}

func (s *execSession) bind(body []byte) error {
	var m pgproto3.Bind
	if err := m.Decode(body); err != nil {
		return malformed("Bind", err)
	}
	p := s.stmts[m.PreparedStatement]
	if p == nil {
		return Errorf(CodeUndefinedPStmt, "prepared statement %q does not exist", m.PreparedStatement)
	}
	if len(m.Parameters) != len(p.paramOIDs) {
		return Errorf(CodeProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d", len(m.Parameters), m.PreparedStatement, len(p.paramOIDs))
	}
	if len(m.ParameterFormatCodes) > 1 && len(m.ParameterFormatCodes) != len(m.Parameters) {
		return Errorf(CodeProtocolViolation, "bind message has %d parameter formats but %d parameters", len(m.ParameterFormatCodes), len(m.Parameters))
	}
	var args []any
	var raw [][]byte
	var rawFmt []int16
	if _, ok := s.bs.(RawSession); ok && p.st != nil {
		raw = make([][]byte, len(m.Parameters))
		owned := len(body)+5 >= OwnedFrameBytes
		for i, b := range m.Parameters {
			switch {
			case b == nil:
			case owned:
				// The frame is the message's own (see OwnedFrameBytes):
				// its values are used where they are, not copied.
				raw[i] = b
			default:
				raw[i] = append([]byte{}, b...)
			}
		}
		rawFmt = append([]int16(nil), m.ParameterFormatCodes...)
	} else {
		args = make([]any, len(m.Parameters))
		loc := s.zone() // once per Bind: text timestamptz values without an offset
		for i, rv := range m.Parameters {
			var v any
			var err error
			if f := formatFor(m.ParameterFormatCodes, i); f == 0 && len(rv) >= BudgetMinMessage && len(body)+5 >= OwnedFrameBytes {
				// A large text value of an owned frame: read in place
				// (see OwnedFrameBytes), not copied.
				v, err = decodeText(p.paramOIDs[i], unsafe.String(&rv[0], len(rv)), loc)
			} else {
				v, err = decodeParam(p.paramOIDs[i], f, rv, loc)
			}
			if err != nil {
				return err
			}
			args[i] = v
		}
	}
	if m.DestinationPortal == "" {
		s.dropUnnamed()
	} else if _, dup := s.portals[m.DestinationPortal]; dup {
		return Errorf("42P03", "cursor %q already exists", m.DestinationPortal)
	}
	s.portals[m.DestinationPortal] = &portal{stmt: p, args: args, raw: raw, rawFmt: rawFmt, formats: append([]int16(nil), m.ResultFormatCodes...)}
	s.c.Append(&pgproto3.BindComplete{})
	return nil
}

func (s *execSession) stmtColumns(ctx context.Context, p *prepared) ([]Column, error) {
	if p.st == nil && !p.described && FirstKeyword(p.sql) == "SHOW" {
		if _, raw := s.bs.(RawSession); !raw || tandemSetting(showName(p.sql)) {
			p.cols, p.described = []Column{{Name: showColumn(showName(p.sql)), OID: OIDText}}, true
		}
	}
	if p.described || p.st == nil {
		return p.cols, nil
	}
	cols, err := p.st.Describe(ctx)
	if err != nil {
		return nil, err
	}
	p.cols, p.described = cols, true
	return cols, nil
}

func (s *execSession) describe(ctx context.Context, body []byte) error {
	var m pgproto3.Describe
	if err := m.Decode(body); err != nil {
		return malformed("Describe", err)
	}
	// A back end may run the statement to describe it (SQLite steps to
	// its first row): statement_timeout and a client that hangs up stop
	// that as they stop a statement.
	s.watch.begin(s.statementTimeout())
	defer s.watch.end()
	switch m.ObjectType {
	case 'S':
		p := s.stmts[m.Name]
		if p == nil {
			return Errorf(CodeUndefinedPStmt, "prepared statement %q does not exist", m.Name)
		}
		cols, err := s.stmtColumns(ctx, p)
		if err != nil {
			return err
		}
		s.c.Append(&pgproto3.ParameterDescription{ParameterOIDs: p.paramOIDs})
		if cols == nil {
			s.c.Append(&pgproto3.NoData{})
		} else {
			s.c.Append(rowDescription(cols, nil))
		}
	case 'P':
		pt := s.portals[m.Name]
		if pt == nil {
			if pd, ok := s.bs.(PortalDescriber); ok && m.Name != "" {
				// A cursor made with DECLARE lives on the back end.
				cols, found, err := pd.DescribePortal(ctx, m.Name)
				if err != nil {
					return err
				}
				if found {
					if cols == nil {
						s.c.Append(&pgproto3.NoData{})
					} else {
						s.c.Append(rowDescription(cols, nil))
					}
					return nil
				}
			}
			return Errorf(CodeUndefinedCursor, "portal %q does not exist", m.Name)
		}
		cols, err := s.stmtColumns(ctx, pt.stmt)
		if err != nil {
			return err
		}
		pt.cols = cols
		if cols == nil {
			s.c.Append(&pgproto3.NoData{})
		} else {
			s.c.Append(rowDescription(cols, pt.formats))
		}
	default:
		return malformed("Describe", fmt.Errorf("object type %q", m.ObjectType))
	}
	return nil
}

func (s *execSession) execute(ctx context.Context, body []byte) error {
	var m pgproto3.Execute
	if err := m.Decode(body); err != nil {
		return malformed("Execute", err)
	}
	pt := s.portals[m.Portal]
	if pt == nil {
		return Errorf(CodeUndefinedCursor, "portal %q does not exist", m.Portal)
	}
	if pt.done {
		s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 0")})
		return nil
	}
	if pt.res == nil {
		s.started(pt.stmt.sql)
	}
	if pt.res == nil && strings.TrimSpace(pt.stmt.sql) != "" {
		if handled, err := s.failedTx(ctx, pt.stmt.sql); handled {
			pt.done = true
			return err
		}
	}
	if pt.stmt.st == nil {
		sql := strings.TrimSpace(pt.stmt.sql)
		if sql == "" {
			s.c.Append(&pgproto3.EmptyQueryResponse{})
			return nil
		}
		if handled, err := s.special(ctx, sql, pt, false); handled {
			pt.done = true
			return err
		}
	}
	s.watch.begin(s.statementTimeout())
	defer s.watch.end()
	if pt.res == nil {
		if done, err := s.implicitTx(ctx, pt.stmt.sql); done || err != nil {
			pt.done = true
			return err
		}
		if FirstKeyword(pt.stmt.sql) == "COPY" {
			pt.done = true
			return s.copy(ctx, pt.stmt.sql)
		}
		var res Result
		var err error
		// A portal's values are used once: the back end has them now, and
		// the portal does not hold them while it runs (a back end may let
		// a large one go before its commit) nor while the session idles.
		args, raw := pt.args, pt.raw
		pt.args, pt.raw = nil, nil
		if pe, ok := s.bs.(PortalExecutor); ok && m.MaxRows > 0 {
			res, err = pe.ExecutePortal(ctx, pt.stmt.st, raw, pt.rawFmt, pt.formats, int(m.MaxRows))
		} else if rs, ok := s.bs.(RawSession); ok {
			res, err = rs.ExecuteRaw(ctx, pt.stmt.st, raw, pt.rawFmt, pt.formats)
		} else {
			res, err = s.bs.Execute(ctx, pt.stmt.st, args)
		}
		if err != nil {
			return err
		}
		pt.res = res
		if pt.cols == nil && res.Columns() != nil && !pt.stmt.described {
			pt.cols = res.Columns()
		}
	}
	cols := pt.cols
	if cols == nil && pt.stmt.described && pt.stmt.cols != nil {
		cols = pt.stmt.cols
	}
	more, err := s.sendRows(pt.res, cols, pt.formats, int64(m.MaxRows))
	if err != nil {
		pt.res.Close()
		pt.res, pt.done = nil, true
		return err
	}
	if more {
		s.c.Append(&pgproto3.PortalSuspended{})
		return nil
	}
	tag := pt.res.Tag()
	err = pt.res.Close()
	pt.res, pt.done = nil, true
	if err != nil {
		return err
	}
	s.reportCommit()
	s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
	s.afterStatement(pt.stmt.sql)
	s.afterTx(s.txWords(pt.stmt.sql))
	return nil
}

func (s *execSession) closeMsg(body []byte) error {
	var m pgproto3.Close
	if err := m.Decode(body); err != nil {
		return malformed("Close", err)
	}
	switch m.ObjectType {
	case 'S':
		if p := s.stmts[m.Name]; p != nil {
			if p.st != nil {
				p.st.Close()
			}
			delete(s.stmts, m.Name)
		}
	case 'P':
		if p := s.portals[m.Name]; p != nil {
			if p.res != nil {
				p.res.Close()
			}
			delete(s.portals, m.Name)
		}
	default:
		return malformed("Close", fmt.Errorf("object type %q", m.ObjectType))
	}
	s.c.Append(&pgproto3.CloseComplete{})
	return nil
}

// ---- statements tandem answers itself (SET, SHOW, RESET, DISCARD) ----

var defaultSettings = map[string]string{
	"client_encoding": "UTF8", "datestyle": "ISO, MDY", "timezone": "UTC", "integer_datetimes": "on",
	"standard_conforming_strings": "on", "server_encoding": "UTF8",
	"application_name": "", "search_path": `"$user", public`, "extra_float_digits": "1", "statement_timeout": "0",
	"default_transaction_isolation": "read committed", "transaction_read_only": "off",
	"server_version_num": "150000", "max_identifier_length": "63", "default_transaction_read_only": "off",
	"intervalstyle": "postgres", "lc_collate": "C.UTF-8", "lc_ctype": "C.UTF-8", "is_superuser": "on",
	"max_connections": "100", "idle_in_transaction_session_timeout": "0", "lock_timeout": "0",
	"jit": "off", // no JIT on this back end; asyncpg reads and sets it around its type introspection
	// PostgreSQL 15's defaults that clients and tools read (SQLAlchemy
	// 2.1's reflection reads default_table_access_method; Rails and
	// pg_dump's scripts set client_min_messages and read it back).
	"default_table_access_method": "heap", "default_tablespace": "", "temp_tablespaces": "", "row_security": "on",
	"bytea_output": "hex", "client_min_messages": "notice", "check_function_bodies": "on", "xmloption": "content",
	"lc_messages": "C.UTF-8", "lc_monetary": "C.UTF-8", "lc_numeric": "C.UTF-8", "lc_time": "C.UTF-8",
	"default_toast_compression": "pglz", "password_encryption": "scram-sha-256", "escape_string_warning": "on",
	"array_nulls": "on", "backslash_quote": "safe_encoding", "block_size": "8192", "session_replication_role": "origin",
	"track_commit_timestamp": "off", "synchronous_commit": "on", "default_with_oids": "off", "quote_all_identifiers": "off",
	"log_min_messages": "warning", "transform_null_equals": "off", "enable_seqscan": "on", "random_page_cost": "4",
	"work_mem": "4MB", "maintenance_work_mem": "64MB",
}

// showName is the setting a SHOW names, in PostgreSQL's spelling.
func showName(sql string) string {
	name := strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sql[strings.Index(strings.ToUpper(sql), "SHOW")+4:]), ";")))
	name = strings.Join(strings.Fields(name), " ")
	switch name {
	case "transaction isolation level":
		return "transaction_isolation"
	case "time zone":
		return "timezone"
	case "session authorization":
		return "session_authorization"
	}
	return name
}

// showColumn is SHOW's result column name (PostgreSQL keeps the setting's
// own capitalisation).
func showColumn(name string) string {
	switch name {
	case "timezone":
		return "TimeZone"
	case "datestyle":
		return "DateStyle"
	case "intervalstyle":
		return "IntervalStyle"
	}
	return name
}

func (s *execSession) isSpecial(sql string) bool {
	switch FirstKeyword(sql) {
	case "SET", "RESET", "DISCARD", "DEALLOCATE":
		return true
	case "SHOW":
		// A back end that speaks PostgreSQL answers SHOW itself, but for
		// the settings tandem enforces.
		_, raw := s.bs.(RawSession)
		return !raw || tandemSetting(showName(sql))
	}
	return false
}

// keptByTandem: settings a PostgreSQL back end's session must not take
// from the client, since tandem's own statements and capture triggers run
// in it: the search path (they name tandem's tables unqualified) and the
// role (they need its privileges). tandem answers them as it does on SQLite.
func keptByTandem(kw []string, m []string) bool {
	for _, w := range kw[1:] {
		if w == "ROLE" || w == "AUTHORIZATION" {
			return true
		}
	}
	return m != nil && strings.EqualFold(m[1], "search_path")
}

// specialSetRe: SET's forms without = or TO (SET ROLE x, SET TIME ZONE
// x, SET NAMES x, SET SCHEMA x, SET SESSION AUTHORIZATION x).
var specialSetRe = regexp.MustCompile(`(?is)^\s*SET\s+(?:SESSION\s+|LOCAL\s+)?(ROLE|SESSION\s+AUTHORIZATION|TIME\s+ZONE|NAMES|SCHEMA)\s+(.*?)\s*;?\s*$`)

// specialSet reads one of those forms as setRe's match: the setting it
// sets and the value.
func specialSet(sql string) []string {
	m := specialSetRe.FindStringSubmatch(sql)
	if m == nil {
		return nil
	}
	name := map[string]string{"ROLE": "role", "SESSIONAUTHORIZATION": "session_authorization", "TIMEZONE": "TimeZone",
		"NAMES": "client_encoding", "SCHEMA": "search_path"}[strings.ToUpper(strings.Join(strings.Fields(m[1]), ""))]
	val := m[2]
	if name == "TimeZone" && strings.EqualFold(val, "LOCAL") {
		val = "DEFAULT"
	}
	return []string{m[0], name, val}
}

var setRe = regexp.MustCompile(`(?is)^\s*SET\s+(?:SESSION\s+|LOCAL\s+)?([a-z_.]+)\s*(?:=|\s+TO\s+)\s*(.*?)\s*;?\s*$`)

// special answers SET/SHOW/RESET/DISCARD, which SQLite does not know.
func (s *execSession) special(ctx context.Context, sql string, pt *portal, simple bool) (bool, error) {
	kw := Keywords(sql, 3)
	if len(kw) == 0 {
		return false, nil
	}
	if g, ok, err := isMinApplied(kw, sql); ok {
		if err != nil {
			return true, err
		}
		return true, s.waitApplied(ctx, g)
	}
	if _, raw := s.bs.(RawSession); raw {
		switch kw[0] {
		case "SHOW":
			if !tandemSetting(showName(sql)) {
				return false, nil
			}
		case "SET", "RESET", "DISCARD":
			// PostgreSQL keeps the setting itself (time zone, isolation
			// level...); tandem still tracks it for ParameterStatus.
			m := setRe.FindStringSubmatch(sql)
			if len(kw) > 1 && kw[1] == "TANDEM" {
				break // the router's settings (tandem.route ...): tandem keeps them
			}
			if kw[0] == "SET" && keptByTandem(kw, m) {
				if m == nil {
					s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
					return true, nil
				}
				break
			}
			if err := s.runInternal(ctx, sql); err != nil {
				return true, err
			}
			if kw[0] == "DISCARD" && len(kw) > 1 && kw[1] == "ALL" {
				// The server dropped every prepared statement and cursor.
				s.stmts, s.portals = map[string]*prepared{}, map[string]*portal{}
			}
			if kw[0] == "SET" && m == nil {
				s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
				return true, nil
			}
		}
	}
	switch kw[0] {
	case "DEALLOCATE":
		return true, s.deallocate(ctx, sql)
	case "SET":
		if len(kw) > 1 && (kw[1] == "TRANSACTION" || (kw[1] == "SESSION" && len(kw) > 2 && kw[2] == "CHARACTERISTICS")) {
			if l := isolationLevel(sql); l != "" {
				if kw[1] == "SESSION" {
					s.beforeSet()
					delete(s.tx.local, "default_transaction_isolation")
					s.settings["default_transaction_isolation"] = l
				} else if s.bs.TxStatus() != 'I' {
					s.txIsolation = l
				}
			}
			s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
			return true, nil
		}
		m := setRe.FindStringSubmatch(sql)
		if m == nil {
			m = specialSet(sql)
		}
		if m == nil {
			return true, Errorf(CodeSyntax, "syntax error in SET: write SET name = value")
		}
		name := strings.ToLower(m[1])
		val := strings.Trim(m[2], `'"`)
		if !strings.EqualFold(val, "default") {
			v, err := normalizeSetting(name, val)
			if err != nil {
				return true, err
			}
			val = v
		}
		if len(kw) > 1 && kw[1] == "LOCAL" {
			// Until the block ends; outside one, a warning and nothing.
			if strings.EqualFold(val, "default") {
				val = s.sessionValue(name)
			}
			before := s.reported()
			if !s.setLocal(name, val) {
				s.c.Append(localWarning())
			}
			s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
			s.reportChanged(before)
			return true, nil
		}
		s.beforeSet()
		delete(s.tx.local, name)
		if strings.EqualFold(val, "default") {
			delete(s.settings, name)
		} else {
			s.settings[name] = val
		}
		if strings.HasPrefix(name, "tcp_keepalives_") {
			s.applyKeepalive()
		}
		s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
		if name == "application_name" || name == "client_encoding" || name == "datestyle" {
			s.c.Append(&pgproto3.ParameterStatus{Name: m[1], Value: val})
		}
		if name == "timezone" {
			v, _ := s.Setting("timezone")
			s.c.Append(&pgproto3.ParameterStatus{Name: "TimeZone", Value: v})
		}
		return true, nil
	case "RESET":
		before := s.reported()
		if len(kw) > 1 {
			s.beforeSet()
			if kw[1] == "ALL" {
				s.settings = map[string]string{}
				s.tx.local = nil
			} else {
				name := strings.ToLower(kw[1])
				if kw[1] == "TIME" {
					name = "timezone" // RESET TIME ZONE
				}
				delete(s.settings, name)
				delete(s.tx.local, name)
			}
			s.applyKeepalive()
		}
		s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("RESET")})
		s.reportChanged(before)
		return true, nil
	case "DISCARD":
		what := "ALL"
		if len(kw) > 1 {
			what = kw[1]
		}
		if what == "ALL" {
			s.settings = map[string]string{}
			s.applyKeepalive()
			// DISCARD ALL is also DEALLOCATE ALL and CLOSE ALL.
			for _, p := range s.stmts {
				if p.st != nil {
					p.st.Close()
				}
			}
			s.stmts, s.portals = map[string]*prepared{}, map[string]*portal{}
		}
		if d, ok := s.bs.(Discarder); ok {
			d.Discard(what)
		}
		s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("DISCARD " + what)})
		return true, nil
	case "SHOW":
		if len(kw) < 2 {
			return true, Errorf(CodeSyntax, "syntax error at end of input")
		}
		name := showName(sql)
		val, ok := s.Setting(name)
		if !ok {
			return true, Errorf("42704", "unrecognized configuration parameter %q", name)
		}
		cols := []Column{{Name: showColumn(name), OID: OIDText}}
		if simple || (pt != nil && pt.cols == nil) {
			if simple {
				s.c.Append(rowDescription(cols, nil))
			}
		}
		var formats []int16
		if pt != nil {
			formats = pt.formats
		}
		if err := s.appendDataRow(cols, formats, []any{val}, time.UTC); err != nil {
			return true, err
		}
		s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("SHOW")})
		return true, nil
	}
	return false, nil
}

// ---- COPY FROM STDIN ----

var copyRe = regexp.MustCompile(`(?is)^\s*COPY\s+("?[a-z_][a-z0-9_."]*)\s*(\(([^)]*)\))?\s+FROM\s+STDIN\s*(.*?)\s*;?\s*$`)

// copyIdent folds one identifier as PostgreSQL reads it: a quoted one as
// written, an unquoted one in lower case.
func copyIdent(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

// copyRelation is the table a COPY names: [public.]name (pg_dump
// qualifies every name), folded as copyIdent.
func copyRelation(s string) string {
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			quoted = !quoted
		case s[i] == '.' && !quoted:
			parts = append(parts, copyIdent(s[start:i]))
			start = i + 1
		}
	}
	parts = append(parts, copyIdent(s[start:]))
	if len(parts) == 2 && parts[0] == "public" {
		return parts[1]
	}
	return strings.Join(parts, ".")
}

func (s *execSession) copyIn(ctx context.Context, sql string) error {
	cf, ok := s.bs.(CopyFromer)
	m := copyRe.FindStringSubmatch(sql)
	if !ok || m == nil {
		return Errorf(CodeFeatureNotSupported, "this COPY form is not supported on the SQLite back end: only COPY table [(columns)] FROM STDIN and COPY table [(columns)] | (query) TO STDOUT are, in text, CSV or binary format (use INSERT, or a PostgreSQL back end)")
	}
	table := copyRelation(m[1])
	var columns []string
	if m[3] != "" {
		for _, c := range strings.Split(m[3], ",") {
			columns = append(columns, copyIdent(strings.TrimSpace(c)))
		}
	}
	opts := strings.ToLower(m[4])
	isCSV := strings.Contains(opts, "csv")
	header := strings.Contains(opts, "header")
	var binReader *binaryCopyReader
	if parseCopyOptions(opts).binary {
		// Binary fields are decoded by their columns' types.
		cols := "*"
		if len(columns) > 0 {
			cols = m[3]
		}
		st, err := s.bs.Prepare(ctx, "SELECT "+cols+" FROM "+m[1])
		if err != nil {
			return err
		}
		desc, err := st.Describe(ctx)
		st.Close()
		if err != nil {
			return err
		}
		binReader = &binaryCopyReader{}
		for _, c := range desc {
			binReader.oids = append(binReader.oids, c.OID)
		}
	}
	delim := byte('\t')
	if isCSV {
		delim = ','
	}
	if dm := regexp.MustCompile(`delimiter\s+(?:as\s+)?'(.)'`).FindStringSubmatch(opts); dm != nil {
		delim = dm[1][0]
	}
	nullStr := `\N`
	if isCSV {
		nullStr = ""
	}
	if nm := regexp.MustCompile(`null\s+(?:as\s+)?'([^']*)'`).FindStringSubmatch(opts); nm != nil {
		nullStr = nm[1]
	}
	ncols := len(columns)
	if ncols == 0 {
		ncols = -1
	}
	inFormat := byte(0)
	if binReader != nil {
		inFormat = 1
		ncols = len(binReader.oids)
	}
	colFormats := make([]uint16, max(ncols, 0))
	for i := range colFormats {
		colFormats[i] = uint16(inFormat)
	}
	s.c.Append(&pgproto3.CopyInResponse{OverallFormat: inFormat, ColumnFormatCodes: colFormats})
	if err := s.c.Flush(); err != nil {
		return err
	}
	// Collect the stream as lines.
	pr, pw := io.Pipe()
	readErr := make(chan error, 1)
	go func() {
		for {
			s.c.ReleaseMemory() // the last CopyData is consumed
			typ, frame, err := s.c.ReadFrame()
			if err != nil {
				err = s.copyReadErr(err)
				pw.CloseWithError(err)
				readErr <- err
				return
			}
			switch typ {
			case 'd':
				if _, err := pw.Write(frameBody(frame)); err != nil {
					// the loader stopped early (an error): drain until done
					continue
				}
			case 'c':
				pw.Close()
				readErr <- nil
				return
			case 'f':
				var f pgproto3.CopyFail
				_ = f.Decode(frameBody(frame))
				pw.CloseWithError(Errorf("57014", "COPY from stdin failed: %s", f.Message))
				readErr <- nil
				return
			case 'H', 'S':
				// allowed during COPY, ignored
			default:
				e := Errorf(CodeProtocolViolation, "unexpected message type %q during COPY from stdin", typ)
				pw.CloseWithError(e)
				readErr <- &fatalError{e}
				return
			}
		}
	}()
	var next func() ([]*string, bool, error)
	if binReader != nil {
		binReader.r = pr
		next = func() ([]*string, bool, error) {
			row, ok, err := binReader.next()
			if err != nil {
				return nil, false, copyErr(err)
			}
			return row, ok, nil
		}
	} else if isCSV {
		r := csv.NewReader(pr)
		r.Comma = rune(delim)
		r.FieldsPerRecord = -1
		first := true
		next = func() ([]*string, bool, error) {
			for {
				rec, err := r.Read()
				if err == io.EOF {
					return nil, false, nil
				}
				if err != nil {
					return nil, false, copyErr(err)
				}
				if first && header {
					first = false
					continue
				}
				first = false
				row := make([]*string, len(rec))
				for i := range rec {
					if rec[i] != nullStr {
						v := rec[i]
						row[i] = &v
					}
				}
				return row, true, nil
			}
		}
	} else {
		lr := newLineReader(pr)
		next = func() ([]*string, bool, error) {
			line, err := lr.next()
			if err == io.EOF || (err == nil && line == `\.`) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, copyErr(err)
			}
			fields := strings.Split(line, string(delim))
			row := make([]*string, len(fields))
			for i, f := range fields {
				if f == nullStr {
					continue
				}
				v := unescapeCopy(f)
				row[i] = &v
			}
			return row, true, nil
		}
	}
	n, err := cf.CopyFrom(ctx, table, columns, next)
	// Drain whatever the client still sends, then report.
	_, _ = io.Copy(io.Discard, pr)
	if rerr := <-readErr; rerr != nil {
		return rerr
	}
	if err != nil {
		return err
	}
	s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte(fmt.Sprintf("COPY %d", n))})
	return nil
}

func copyErr(err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	var fe *fatalError
	if errors.As(err, &fe) {
		return fe
	}
	return Errorf("22P04", "bad COPY data: %v", err)
}

type lineReader struct {
	r   io.Reader
	buf []byte
	eof bool
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: r} }

func (l *lineReader) next() (string, error) {
	for {
		if i := bytes.IndexByte(l.buf, '\n'); i >= 0 {
			line := string(bytes.TrimSuffix(l.buf[:i], []byte{'\r'}))
			l.buf = l.buf[i+1:]
			return line, nil
		}
		if l.eof {
			if len(l.buf) > 0 {
				line := string(l.buf)
				l.buf = nil
				return line, nil
			}
			return "", io.EOF
		}
		tmp := make([]byte, 32<<10)
		n, err := l.r.Read(tmp)
		l.buf = append(l.buf, tmp[:n]...)
		if err == io.EOF {
			l.eof = true
		} else if err != nil {
			return "", err
		}
	}
}

func unescapeCopy(f string) string {
	if strings.IndexByte(f, '\\') < 0 {
		return f
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '\\' || i+1 == len(f) {
			b.WriteByte(c)
			continue
		}
		i++
		switch f[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		default:
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
