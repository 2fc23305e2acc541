// Package sqlite is tandem's embedded back end: one SQLite database in WAL
// mode behind pgwire's Backend interface.
//
// It owns the database file, its connections (one writer plus a read pool),
// statement preparation, type mapping to PostgreSQL OIDs, the mapping of
// SQLite errors to SQLSTATEs, and in the replicated designs writeset capture
// by triggers, exactly-once apply and snapshots (capture.go). It must not read or write the client socket
// (pgwire does) nor decide routing (router does).
package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
	"github.com/tandemdb/tandem/writeset"
)

// ErrClosed is returned after Close.
var ErrClosed = errors.New("sqlite back end is closed")

// ErrWriteLockBusy: another transaction held the write lock for longer
// than the wait (the client sees 40001).
var ErrWriteLockBusy = errors.New("sqlite write lock busy")

// Options configure the back end.
type Options struct {
	Path        string // database file
	Synchronous string // OFF | NORMAL | FULL
	ReadPool    int
	BusyTimeout time.Duration
	Logger      *slog.Logger
}

// DB is one SQLite database shared by every session of a node.
type DB struct {
	// listeners: the sessions' LISTENs (notify.go).
	listeners listeners
	opts      Options
	log       *slog.Logger
	writer    chan *conn // capacity 1: holding it is holding the write lock
	readers   chan *conn
	all       []*conn
	mu        sync.Mutex
	closed    bool
	repl      Replicator // nil: standalone
	pks       sync.Map   // table -> primary-key columns (replicated designs)
	images    sync.Map   // table -> select list of a row's after-image (capture.go imageOf)
	// holder: the session whose transaction block holds the write lock
	// (multi-master aborts it when it holds up certified writesets).
	holderMu sync.Mutex
	holder   *Session
	// advisory: the database's advisory locks (pg_advisory_lock ...).
	advisory *sqlpg.AdvisoryLocks
}

type conn struct {
	// owner: the session that holds the connection now (pg_notify's
	// transaction), nil while it waits in a pool.
	owner atomic.Pointer[Session]
	c     *sqlite3.SQLiteConn
	stmts map[string]*sqlite3.SQLiteStmt
	ro    bool
	// private: a session's own connection (it holds the session's
	// temporary objects); token is the shared writer it holds as the
	// write lock while it writes.
	private bool
	token   *conn
	// open counts the results running on the connection (a statement
	// that is not reset keeps its read snapshot: the connection must
	// not go back to a pool with one).
	open atomic.Int32
	// busy: cached statements a result still steps (a suspended portal,
	// a cursor); running the same SQL again meanwhile takes a statement
	// of its own (prepareFor), since a cached statement run again is
	// reset under the result that steps it.
	busy map[*sqlite3.SQLiteStmt]int
	// meta caches what the translator asks about the schema (columns,
	// sequences) at one schema version (sqlpg.SchemaVersion): a
	// statement's translation asks for a table's columns several times,
	// and the simple protocol translates every statement text anew.
	meta schemaCache
}

// schemaCache: a connection's cached answers of one schema version.
type schemaCache struct {
	ver  uint64
	cols map[string][]sqlpg.Column
	seqs map[string]bool          // nil until read
	mvs  map[string]sqlpg.Matview // nil until read
}

// current empties the cache when the schema version has moved on.
func (m *schemaCache) current() {
	if ver := sqlpg.SchemaVersion(); m.cols == nil || m.ver != ver {
		*m = schemaCache{ver: ver, cols: map[string][]sqlpg.Column{}}
	}
}

const (
	stmtCacheSize = 512
	// stmtCacheMaxSQL: longer statements are not cached. The cache keeps
	// a statement's text and SQLite's program, so caching every
	// statement up to hoistMinStatement could pin 512 x 64 KiB of text
	// and more of programs; long statements are rarely run twice (a
	// chunked INSERT's chunks never are).
	stmtCacheMaxSQL = 16 << 10
)

func (c *conn) prepare(sql string) (*sqlite3.SQLiteStmt, error) {
	if st, ok := c.stmts[sql]; ok {
		return st, nil
	}
	ds, err := c.prepareFresh(sql)
	if err != nil {
		return nil, err
	}
	st := ds.(*sqlite3.SQLiteStmt)
	if len(c.stmts) >= stmtCacheSize {
		for k, old := range c.stmts {
			if c.busy[old] > 0 {
				continue // a result steps it: it is finalized with the cache
			}
			old.Close()
			delete(c.stmts, k)
			break
		}
	}
	c.stmts[sql] = st
	return st, nil
}

// prepareFor prepares a statement's SQL; closeStmt finalizes it when it
// is not cached: large statements (SQLite's program holds its literals)
// and those with hoisted values (SQLite keeps bound values until the next
// binding) are prepared for one use so that nothing of them stays.
func (c *conn) prepareFor(st *Statement) (ps *sqlite3.SQLiteStmt, closeStmt func(), err error) {
	if st.hoisted == nil && len(st.sql) < stmtCacheMaxSQL {
		if ps, err = c.prepare(st.sql); err != nil || c.busy[ps] == 0 {
			return ps, func() {}, err
		}
	}
	ds, err := c.prepareFresh(st.sql)
	if err != nil {
		return nil, nil, err
	}
	return ds.(*sqlite3.SQLiteStmt), func() { ds.Close() }, nil
}

// prepareFresh prepares sql against the database's current schema. A
// connection learns of another connection's DDL only when it next runs a
// statement, and SQLite checks CREATE's name at prepare time against the
// schema the connection last read: a reader that last ran before a DROP
// says the dropped table or index "already exists" (Hibernate's schema
// "create" drops and recreates in autocommit, its reads run on the
// writer). Such an error is checked again after the connection has read
// the schema.
func (c *conn) prepareFresh(sql string) (driver.Stmt, error) {
	ds, err := c.c.Prepare(sql)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		return ds, err
	}
	rows, qerr := c.c.Query("SELECT 1 FROM sqlite_schema LIMIT 1", nil)
	if qerr != nil {
		return nil, err
	}
	rows.Next(make([]driver.Value, 1))
	rows.Close()
	return c.c.Prepare(sql)
}

// largeArgs reports whether a parameter value is large enough that
// SQLite's copy of it should not outlive the statement.
// argsBytes is the size of the text and bytea values in args.
func argsBytes(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v)
		case []byte:
			n += len(v)
		}
	}
	return n
}

func largeArgs(args []any) bool {
	for _, a := range args {
		switch v := a.(type) {
		case string:
			if len(v) >= hoistMinLiteral {
				return true
			}
		case []byte:
			if len(v) >= hoistMinLiteral {
				return true
			}
		}
	}
	return false
}

// containsFold is strings.Contains of upper-case word in s, ignoring
// case, without an upper-cased copy of s.
func containsFold(s, word string) bool {
	first := string([]byte{word[0], word[0] | 0x20})
	for i := 0; i+len(word) <= len(s); i++ {
		j := strings.IndexAny(s[i:], first)
		if j < 0 {
			return false
		}
		i += j
		if i+len(word) <= len(s) && strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

func (c *conn) exec(sql string) error {
	_, err := c.c.Exec(sql, nil)
	return err
}

func (c *conn) close() {
	for _, st := range c.stmts {
		st.Close()
	}
	sqlpg.Forget(c.c)
	c.c.Close()
}

// Open opens (creating if needed) the database.
func Open(opts Options) (*DB, error) {
	if opts.ReadPool <= 0 {
		opts.ReadPool = 4
	}
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.Synchronous == "" {
		opts.Synchronous = "NORMAL"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create directory: %w", err)
	}
	if err := ownerOnly(opts.Path); err != nil {
		return nil, err
	}
	db := &DB{opts: opts, log: opts.Logger, writer: make(chan *conn, 1), readers: make(chan *conn, opts.ReadPool), advisory: sqlpg.NewAdvisoryLocks()}
	if err := db.openConns(); err != nil {
		return nil, err
	}
	return db, nil
}

func (db *DB) openConns() error {
	db.all = nil
	w, err := db.openConn(false)
	if err != nil {
		return err
	}
	db.all = append(db.all, w)
	db.writer <- w
	for i := 0; i < db.opts.ReadPool; i++ {
		r, err := db.openConn(true)
		if err != nil {
			db.Close()
			return err
		}
		db.all = append(db.all, r)
		db.readers <- r
	}
	return nil
}

// openConn opens one connection (read-only: query_only).
func (db *DB) openConn(ro bool) (*conn, error) {
	opts := db.opts
	drv := &sqlite3.SQLiteDriver{ConnectHook: registerFunctions}
	dsn := fmt.Sprintf("%s?_journal_mode=WAL&_synchronous=%s&_busy_timeout=%d&_foreign_keys=on&_txlock=deferred",
		fileURI(opts.Path), strings.ToUpper(opts.Synchronous), opts.BusyTimeout.Milliseconds())
	dc, err := drv.Open(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", opts.Path, err)
	}
	c := &conn{c: dc.(*sqlite3.SQLiteConn), stmts: map[string]*sqlite3.SQLiteStmt{}, ro: ro}
	if err := c.c.RegisterFunc("_tandem_notify", notifyFunc(c), false); err != nil {
		c.close()
		return nil, fmt.Errorf("sqlite: register pg_notify: %w", err)
	}
	// PostgreSQL's LIKE is case-sensitive (ILIKE is translated).
	if err := c.exec("PRAGMA case_sensitive_like = ON"); err != nil {
		c.close()
		return nil, err
	}
	if !ro {
		if err := c.exec(sqlpg.MetadataDDL); err != nil {
			c.close()
			return nil, fmt.Errorf("sqlite: create metadata tables: %w", err)
		}
		if err := upgradeMetadata(c); err != nil {
			c.close()
			return nil, fmt.Errorf("sqlite: upgrade metadata tables: %w", err)
		}
		if err := c.exec(sqlpg.SequenceTriggersDDL); err != nil {
			c.close()
			return nil, fmt.Errorf("sqlite: sequence triggers: %w", err)
		}
	}
	if err := sqlpg.InstallCatalog(c.exec); err != nil {
		c.close()
		return nil, fmt.Errorf("sqlite: install catalog: %w", err)
	}
	if ro {
		if err := c.exec("PRAGMA query_only = ON"); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// upgradeMetadata adds what a database made by an earlier tandem lacks
// (sqlpg.MetadataUpgrade).
func upgradeMetadata(c *conn) error {
	stmts, err := sqlpg.MetadataUpgrade(func(table, column string) (bool, error) {
		rows, err := c.c.Query("SELECT 1 FROM pragma_table_info(?) WHERE name = ?", []driver.Value{table, column})
		if err != nil {
			return false, err
		}
		defer rows.Close()
		return rows.Next(make([]driver.Value, 1)) == nil, nil
	})
	if err != nil {
		return err
	}
	for _, st := range stmts {
		if err := c.exec(st); err != nil {
			return err
		}
	}
	return nil
}

// Replace swaps the database file for another one (a re-seed from a
// snapshot): it waits until every connection is free, closes them, moves
// the file into place and reopens. Capture stays enabled.
func (db *DB) Replace(file string) error {
	w := <-db.writer
	rs := make([]*conn, 0, db.opts.ReadPool)
	for i := 0; i < db.opts.ReadPool; i++ {
		rs = append(rs, <-db.readers)
	}
	w.close()
	for _, r := range rs {
		r.close()
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		_ = os.Remove(db.opts.Path + suffix)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		return fmt.Errorf("sqlite: replace database: %w", err)
	}
	if err := os.Rename(file, db.opts.Path); err != nil {
		return fmt.Errorf("sqlite: replace database: %w", err)
	}
	return db.openConns()
}

// fileURI is path as an SQLite file: URI ('?', '#' and '%' escaped, so a
// directory name holding them names the right file).
func fileURI(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// ownerOnly creates the database file with mode 0600 before SQLite opens
// it (SQLite gives its -wal and -shm files the database file's mode) and
// sets 0600 on a database and journal files an older version left
// readable by others.
func ownerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: create database file: %w", err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("sqlite: %w", err)
		}
	}
	return nil
}

func registerFunctions(c *sqlite3.SQLiteConn) error {
	if err := noDoubleQuotedStrings(c); err != nil {
		return err
	}
	if err := c.RegisterFunc("version", func() string {
		v, _, _ := sqlite3.Version()
		return "PostgreSQL 15.0 (tandem, SQLite " + v + " back end)"
	}, true); err != nil {
		return err
	}
	if err := sqlpg.RegisterFunctions(c); err != nil {
		return err
	}
	return sqlpg.RegisterCatalogFunctions(c)
}

// Close closes every connection.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	for _, c := range db.all {
		c.close()
	}
	return nil
}

// Path of the database file.
func (db *DB) Path() string { return db.opts.Path }

// ParameterStatus implements pgwire.Backend.
func (db *DB) ParameterStatus() [][2]string {
	v, _, _ := sqlite3.Version()
	return [][2]string{
		{"server_version", "15.0 (tandem/SQLite " + v + ")"},
		{"server_encoding", "UTF8"},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"integer_datetimes", "on"},
		{"standard_conforming_strings", "on"},
		{"TimeZone", "UTC"},
		{"IntervalStyle", "postgres"},
		{"is_superuser", "on"},
		{"application_name", ""},
	}
}

// NewSession implements pgwire.Backend.
func (db *DB) NewSession(ctx context.Context, user, database string) (pgwire.BackendSession, error) {
	db.mu.Lock()
	closed := db.closed
	db.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	return &Session{db: db, adv: db.advisory.Session()}, nil
}

// acquire takes the writer (rw) or a reader, waiting at most BusyTimeout.
func (db *DB) acquire(ctx context.Context, rw bool) (*conn, error) {
	return db.acquireWithin(ctx, rw, db.opts.BusyTimeout)
}

// acquireWithin is acquire waiting at most wait.
func (db *DB) acquireWithin(ctx context.Context, rw bool, wait time.Duration) (*conn, error) {
	pool := db.readers
	if rw {
		pool = db.writer
	}
	select {
	case c := <-pool:
		return c, nil
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case c := <-pool:
		return c, nil
	case <-ctx.Done():
		return nil, &pgwire.Error{Code: pgwire.CodeQueryCanceled, Message: "canceling statement due to user request", Err: ctx.Err()}
	case <-t.C:
		if rw {
			return nil, &pgwire.Error{Code: "40001", Message: fmt.Sprintf("could not obtain the SQLite write lock within %s: another transaction holds it", wait), Hint: "retry the transaction", Err: ErrWriteLockBusy}
		}
		return nil, &pgwire.Error{Code: "53300", Message: "no SQLite read connection free", Hint: "raise nodes.sqlite.read_pool"}
	}
}

func (db *DB) release(c *conn) {
	if n := c.open.Load(); n != 0 || !c.c.AutoCommit() {
		db.log.Error("sqlite: internal error: a connection went back to its pool with a result running or a transaction open; rolled back", "open_results", n, "autocommit", c.c.AutoCommit(), "reader", c.ro, "stack", string(debug.Stack()))
		_ = c.exec("ROLLBACK")
	}
	if c.private {
		// A session's own connection stays with the session; the write
		// lock it held goes back.
		c.ro = false
		if t := c.token; t != nil {
			c.token = nil
			db.writer <- t
		}
		return
	}
	c.owner.Store(nil)
	if c.ro {
		db.readers <- c
	} else {
		db.writer <- c
	}
}

// Session is one client session's view of the database. A session holds
// a connection only while a statement or a transaction block runs.
type Session struct {
	db *DB
	// LISTEN / NOTIFY (notify.go): the session's process ID and the
	// function that queues a notification for its client (pgwire's);
	// the running transaction's NOTIFYs, and those committed and not
	// yet handed to the listeners.
	pid         uint32
	queueNotify func(channel, payload string, sender uint32)
	notes       []notification
	noteSet     map[notification]bool
	committed   []notification
	// sqlPrepared: the statements of SQL's PREPARE, by name (the
	// protocol's named statements are pgwire's).
	sqlPrepared map[string]*sqlpg.PreparedStmt
	held        *conn // during a transaction block
	// lazy: a read-write BEGIN not yet started: the block takes the
	// write lock at its first statement that reads or writes a table
	// (PostgreSQL's transaction takes its snapshot at its first
	// statement too), so a block that so far only took an advisory lock
	// or read the clock holds nothing (Flyway holds such a block open on
	// one connection while it migrates on another).
	lazy *Statement
	// blockResults: results still running on held (portals a client
	// left suspended); they end with the block, as PostgreSQL drops a
	// transaction's portals at its end.
	blockResults []*rowResult
	// priv is the session's own connection, opened by its first
	// temporary object (SQLite keeps temporary objects per connection,
	// so the shared pool would mix sessions' temporary tables): from
	// then on every statement of the session runs on it, taking the
	// shared writer as the write lock while it writes.
	priv *conn
	inTx bool
	// schemaDirty: a DDL statement ran in the transaction that is open
	// (or just ended): settleSchema invalidates the cached translations
	// and column lists once it has committed or rolled back.
	schemaDirty bool
	txDDL       []string    // DDL run in the open transaction block, in order (replicated designs)
	marks       []savepoint // savepoints of the open block, for txDDL
	mu          sync.Mutex
	cancel      context.CancelFunc
	canceled    bool
	// cancelPending: a cancel came while no run was going on, inside a
	// request (Cancel, armCancel, Idle).
	cancelPending bool
	// settings: the client session's settings (current_setting()).
	settings pgwire.Settings
	// seqs: currval and lastval of the session (sqlpg.Sequences).
	seqs sqlpg.Sequences
	// adv: the session's advisory locks, released when it ends (those of
	// its transaction when the transaction ends).
	adv *sqlpg.AdvisorySession
	// terminate ends the client's session (pgwire.TerminateUser);
	// aborting: it was asked to, for holding the write lock.
	terminate func(*pgwire.Error)
	aborting  bool
	// cursors: the session's SQL cursors (cursor.go); blockCursors: the
	// ones the open transaction block declared.
	cursors      map[string]*cursor
	blockCursors []string
	cursorMarks  []cursorMark
	// funcs: the session's own functions (CREATE FUNCTION pg_temp...,
	// function.go); frame: the OUT parameters of the one running.
	funcs map[string]*sqlpg.TempFunction
	frame *funcFrame
}

// UseTerminate implements pgwire.TerminateUser.
func (s *Session) UseTerminate(f func(*pgwire.Error)) { s.terminate = f }

// UseSettings implements pgwire.SettingsUser.
func (s *Session) UseSettings(st pgwire.Settings) { s.settings = st }

// Discard implements pgwire.Discarder: DISCARD ALL and DISCARD SEQUENCES
// forget the session's currval and lastval.
func (s *Session) Discard(what string) {
	if what == "ALL" || what == "SEQUENCES" {
		s.seqs.Reset()
	}
	if what == "ALL" { // and DEALLOCATE ALL, CLOSE ALL
		s.DeallocateSQL("")
		s.closeCursors()
	}
	if what == "ALL" || what == "TEMP" || what == "TEMPORARY" {
		s.funcs = nil // pg_temp's functions
	}
}

// savepoint remembers how much DDL a transaction had run when it was set.
type savepoint struct {
	name string
	ddl  int
}

// Statement is a parsed statement.
type Statement struct {
	created string // CREATE TABLE AS's new table
	// notify: LISTEN, UNLISTEN or NOTIFY (notify.go).
	notify *sqlpg.Notify
	// doBlock: a DO block (run statement by statement: executeDo).
	doBlock *sqlpg.DoBlock
	// fn: CREATE FUNCTION pg_temp...; dropFn: DROP FUNCTION of one;
	// call: a query over one (function.go).
	fn     *sqlpg.TempFunction
	dropFn *dropFunc
	call   *sqlpg.FuncCall
	// sqlPrep: SQL's PREPARE or DEALLOCATE (EXECUTE is prepared as the
	// statement it runs).
	sqlPrep *sqlpg.PreparedStmt
	// deferred: a utility statement (DDL) the translator refused; as in
	// PostgreSQL, it fails when executed, not when parsed.
	deferred  error
	sql       string
	nparams   int
	readonly  bool
	writes    bool // a query that writes through a function (nextval)
	volatile  bool // a query that takes or releases advisory locks: not run to describe
	tableFree bool // a SELECT that reads no table (runs outside a lazy block's start)
	locking   bool // SELECT ... FOR UPDATE / SHARE: starts a lazy block
	rows      bool // returns rows
	kind      string
	words     []string
	paramOIDs []uint32
	params    []uint32 // the types the translation found (sqlpg.Translation.Params)
	s         *Session
	orig      string           // the client's text (PostgreSQL SQL)
	script    []string         // DDL translated into several SQLite statements
	merge     *sqlpg.MergePlan // a MERGE, run in steps (merge.go)
	noop      bool             // accepted, nothing to run (COMMENT ON, LOCK)
	ddl       bool             // changes the schema
	tag       string           // command tag verb when it is not the first keyword
	types     []sqlpg.ColType  // PostgreSQL result types the translator inferred
	names     []string         // RETURNING column names, when the translator knows them
	// hoisted: the values of a large statement's long literals, bound
	// after the client's parameters (hoist.go); the statement runs on a
	// prepared program of its own, finalized after it runs, so SQLite
	// holds no copy of them afterwards.
	hoisted []any
	// oneShot: the statement runs once (a simple Query's), so a large
	// one may let go of its text after it ran (releaseText).
	oneShot bool
	// chunked: a large multi-row INSERT run in chunks of rows (chunk.go).
	chunked *chunkPlan
	// cursor: DECLARE, FETCH, MOVE or CLOSE (cursor.go); inner: the
	// query a DECLARE runs.
	cursor *sqlpg.CursorStmt
	inner  *Statement
}

// execSQL is the SQLite SQL the statement really runs (a DDL script joined
// by semicolons): what a DDL writeset carries.
func (st *Statement) execSQL() string { return st.sql }

// SetOneShot implements pgwire.OneShot.
func (st *Statement) SetOneShot() { st.oneShot = true }

// releaseTextMin: a one-shot statement at least this large lets go of its
// text once it has run, before its commit (releaseText).
const releaseTextMin = 8 << 20

// releaseText drops a one-shot statement's references to its text and
// literals (the client's message: SQLite holds its own copy of what was
// bound) and collects them, so the commit's copies of the row (its image,
// its writeset) do not come on top of the message. It reports whether it
// did.
func (st *Statement) releaseText() bool {
	if !st.oneShot || len(st.orig) < releaseTextMin {
		return false
	}
	st.kind = strings.Clone(st.kind)
	for i, w := range st.words {
		st.words[i] = strings.Clone(w)
	}
	st.tag = strings.Clone(st.tag)
	st.sql, st.orig, st.hoisted = "", "", nil
	runtime.GC()
	return true
}

// translateOff sends statements to SQLite untranslated (benchmark baseline:
// TANDEM_SQLITE_TRANSLATE=off).
var translateOff = os.Getenv("TANDEM_SQLITE_TRANSLATE") == "off"

// schema answers the translator's questions about tables on a connection.
type schema struct {
	c   *conn
	loc *time.Location
}

// Zone implements sqlpg.Zoned: the session's TimeZone.
func (sc schema) Zone() *time.Location { return sc.loc }

// zone is the session's TimeZone (UTC unless the client set one).
func (s *Session) zone() *time.Location {
	if s.settings == nil {
		return time.UTC
	}
	name, ok := s.settings.Setting("timezone")
	if !ok || name == "UTC" {
		return time.UTC
	}
	loc, _, err := pgwire.LoadZone(name)
	if err != nil {
		return time.UTC // checked when set
	}
	return loc
}

// Columns implements sqlpg.Schema.
func (sc schema) Columns(table string) []sqlpg.Column {
	return tableColumnList(sc.c, table)
}

// Enum implements sqlpg.EnumLister.
func (sc schema) Enum(name string) (sqlpg.Enum, bool) {
	rows, err := sc.c.c.Query(sqlpg.EnumQuery, []driver.Value{name})
	if err != nil {
		return sqlpg.Enum{}, false
	}
	defer rows.Close()
	vals := make([]driver.Value, 2)
	if rows.Next(vals) != nil {
		return sqlpg.Enum{}, false
	}
	oid, _ := vals[0].(int64)
	labels, _ := vals[1].(string)
	return sqlpg.Enum{OID: uint32(oid), Name: name, Labels: sqlpg.ParseEnumLabels(labels)}, true
}

// Views implements sqlpg.ViewLister.
func (sc schema) Views() map[string]string {
	rows, err := sc.c.c.Query(`SELECT name, sql FROM main.sqlite_schema WHERE type = 'view'`, nil)
	if err != nil {
		return nil
	}
	defer rows.Close()
	vals := make([]driver.Value, 2)
	out := map[string]string{}
	for rows.Next(vals) == nil {
		name, _ := vals[0].(string)
		sql, _ := vals[1].(string)
		out[name] = sql
	}
	return out
}

// RelationExists reports whether a table, view or index has the name
// (the translator numbers a constraint's name when it is taken).
func (sc schema) RelationExists(name string) bool {
	rows, err := sc.c.c.Query(`SELECT 1 FROM sqlite_master WHERE lower(name) = lower(?) UNION ALL SELECT 1 FROM _pg_index_all WHERE lower(relname) = lower(?) UNION ALL SELECT 1 FROM _tandem_sequences WHERE lower(name) = lower(?)`, []driver.Value{name, name, name})
	if err != nil {
		return false
	}
	defer rows.Close()
	return rows.Next(make([]driver.Value, 1)) == nil
}

// StoredName is the name a table, view or index was created with, for a
// name that matches it without regard to case ("" for none).
func (sc schema) StoredName(name string) string {
	rows, err := sc.c.c.Query(`SELECT name FROM sqlite_master WHERE lower(name) = lower(?1) AND type IN ('table', 'view', 'index')
		UNION ALL SELECT name FROM temp.sqlite_master WHERE lower(name) = lower(?1) AND type IN ('table', 'view', 'index') LIMIT 1`, []driver.Value{name})
	if err != nil {
		return ""
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if rows.Next(v) != nil {
		return ""
	}
	s, _ := v[0].(string)
	return s
}

// PrimaryKey lists a table's primary key columns in key order (the
// translator checks a new foreign key's rows against them).
func (sc schema) PrimaryKey(table string) []string {
	rows, err := sc.c.c.Query(`SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk`, []driver.Value{table})
	if err != nil {
		return nil
	}
	defer rows.Close()
	vals := make([]driver.Value, 1)
	var out []string
	for rows.Next(vals) == nil {
		if s, ok := vals[0].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// TableDef implements sqlpg.TableDefiner: a table's stored text, its
// stored columns and the texts of its indexes and triggers (not the
// capture triggers, which refreshCapture makes).
func (sc schema) TableDef(table string) (create string, cols []string, others []string) {
	rows, err := sc.c.c.Query(`SELECT type, sql FROM main.sqlite_schema WHERE tbl_name = ?1 AND sql IS NOT NULL
			AND NOT EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE type = 'table' AND name = ?1)
			AND NOT (type = 'trigger' AND name LIKE '\_tandem\_%' ESCAPE '\' AND sql LIKE '%INTO _tandem_capture%')
		ORDER BY type = 'table' DESC, rowid`, []driver.Value{table})
	if err != nil {
		return "", nil, nil
	}
	vals := make([]driver.Value, 2)
	for rows.Next(vals) == nil {
		typ, sql := asString(vals[0]), asString(vals[1])
		switch {
		case typ == "table" && create == "":
			create = sql
		case typ == "index" || typ == "trigger":
			others = append(others, sql)
		}
	}
	rows.Close()
	if create == "" {
		return "", nil, nil
	}
	rows, err = sc.c.c.Query(`SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0 ORDER BY cid`, []driver.Value{table})
	if err != nil {
		return "", nil, nil
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	for rows.Next(v) == nil {
		cols = append(cols, asString(v[0]))
	}
	return create, cols, others
}

// ColumnIndexes implements sqlpg.TableDefiner: the indexes made by
// CREATE INDEX or ADD CONSTRAINT (not those the table's text declares)
// that read column col of table.
func (sc schema) ColumnIndexes(table, col string) []string {
	rows, err := sc.c.c.Query(`SELECT m.name FROM main.sqlite_schema m WHERE m.type = 'index' AND m.tbl_name = ?1 AND m.sql IS NOT NULL
			AND (EXISTS (SELECT 1 FROM pragma_index_xinfo(m.name) x WHERE x.key = 1 AND lower(x.name) = lower(?2))
				OR EXISTS (SELECT 1 FROM pragma_index_xinfo(m.name) x WHERE x.cid = -2) AND instr(lower(m.sql), lower('"' || replace(?2, '"', '""') || '"')) > 0
				OR instr(lower(substr(m.sql, instr(upper(m.sql), ' WHERE '))), lower('"' || replace(?2, '"', '""') || '"')) > 0 AND instr(upper(m.sql), ' WHERE ') > 0)
		ORDER BY m.rowid`, []driver.Value{table, col})
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	v := make([]driver.Value, 1)
	for rows.Next(v) == nil {
		out = append(out, asString(v[0]))
	}
	return out
}

// ReferencingKeys implements sqlpg.TableDefiner: the foreign keys that
// reference table, as the catalog names them.
func (sc schema) ReferencingKeys(table string) []sqlpg.ForeignKeyRef {
	rows, err := sc.c.c.Query(`SELECT (SELECT relname FROM pg_class WHERE oid = c.conrelid AND relkind = 'r'), c.conname, c.confkey
		FROM pg_constraint c WHERE c.contype = 'f' AND c.confrelid = _tandem_oid(?) ORDER BY 1, 2`, []driver.Value{table})
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []sqlpg.ForeignKeyRef
	vals := make([]driver.Value, 3)
	for rows.Next(vals) == nil {
		fk := sqlpg.ForeignKeyRef{Table: asString(vals[0]), Name: asString(vals[1])}
		for _, n := range strings.Split(strings.Trim(asString(vals[2]), "{}"), ",") {
			if i, err := strconv.Atoi(strings.TrimSpace(n)); err == nil {
				fk.RefCols = append(fk.RefCols, i)
			}
		}
		out = append(out, fk)
	}
	return out
}

// ParamOIDs implements pgwire.ParamTyper.
func (st *Statement) ParamOIDs() []uint32 { return st.paramOIDs }

// tableColumns reads a table's declared column types (lower-case names),
// plus the declaration order under the key "\x00order".
func tableColumns(c *conn, table string) map[string]string {
	out := map[string]string{}
	var order []string
	cols := tableColumnList(c, table)
	if view, ok := sqlpg.CatalogRelation("", table); ok && strings.EqualFold(view, table) {
		// A catalog view: typed by name as PostgreSQL's catalog (its
		// UNION's declared types would make relname bytea).
		cols = sqlpg.CatalogColumns(view, cols)
	}
	for _, col := range cols {
		name := strings.ToLower(col.Name)
		if col.Enum != nil {
			out[name] = enumDecl + strconv.FormatUint(uint64(col.Enum.OID), 10)
		} else if col.Type != nil {
			out[name] = col.Type.Name // lower case: a PostgreSQL type name
		}
		order = append(order, name)
	}
	out["\x00order"] = strings.Join(order, ",")
	return out
}

func (st *Statement) SQL() string    { return st.sql }
func (st *Statement) NumParams() int { return st.nparams }
func (st *Statement) Close() error   { return nil }

// TxStatus implements pgwire.BackendSession.
func (s *Session) TxStatus() byte {
	if s.inTx || s.lazy != nil {
		return 'T'
	}
	return 'I'
}

// Prepare parses the statement once to learn its parameters and whether
// it writes.
func (s *Session) Prepare(ctx context.Context, sql string) (pgwire.Statement, error) {
	if pgwire.IsEmptyStatement(sql) {
		// SQLite prepares no statement for comments alone; executing that
		// would crash the driver.
		return nil, pgwire.Errorf(pgwire.CodeSyntax, "empty statement")
	}
	words := pgwire.Keywords(sql, 4)
	st := &Statement{sql: sql, orig: sql, words: words, s: s}
	if len(words) > 0 {
		st.kind = words[0]
	}
	switch st.kind {
	case "BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT":
		if !(st.kind == "ROLLBACK" && len(words) > 1 && words[1] == "TO") {
			st.readonly = true
			return st, nil
		}
	}
	if done, err := prepareFunction(st, sql); done || err != nil {
		return st, err
	}
	if st.kind == "DO" {
		b, ok, err := sqlpg.ParseDo(sql)
		if err != nil {
			return nil, err
		}
		if ok {
			st.doBlock = b
			return st, nil
		}
	}
	switch st.kind {
	case "PREPARE", "EXECUTE", "DEALLOCATE":
		p, ok, err := sqlpg.ParsePrepared(sql)
		if err != nil {
			return nil, err
		}
		if ok && p.Kind == "EXECUTE" {
			// EXECUTE name(args) is the prepared statement with its
			// arguments in place of its parameters.
			prep, found := s.sqlPrepared[p.Name]
			if !found {
				return nil, pgwire.Errorf(pgwire.CodeUndefinedPStmt, "prepared statement %q does not exist", p.Name)
			}
			bound, err := sqlpg.BindPrepared(p.Name, prep.Query, prep.Types, p.Args)
			if err != nil {
				return nil, err
			}
			return s.Prepare(ctx, bound)
		}
		if ok {
			st.sqlPrep, st.readonly = p, true
			return st, nil
		}
	}
	switch st.kind {
	case "DECLARE", "FETCH", "MOVE", "CLOSE":
		cs, ok, err := sqlpg.ParseCursor(sql)
		if err != nil {
			return nil, err
		}
		if ok {
			return s.prepareCursor(ctx, st, cs)
		}
	}
	if st.kind == "INSERT" && !translateOff {
		if p := planChunks(sql); p != nil {
			// The first chunk answers for the statement at Prepare (an
			// unknown table, a bad value).
			first := p.chunk(0)
			fps, err := s.Prepare(ctx, first)
			if err != nil {
				return nil, err
			}
			if p.returning {
				// Rows as the first chunk describes them.
				f := fps.(*Statement)
				st.rows, st.names, st.types = true, f.names, f.types
				st.sql = first
			}
			st.chunked = p
			return st, nil
		}
	}
	c, done, err := s.readConn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if !translateOff && st.kind != "PRAGMA" {
		text := sql
		switch st.kind {
		case "INSERT", "UPDATE", "DELETE", "SELECT", "WITH", "VALUES":
			text, st.hoisted = hoistLiterals(sql)
		}
		release, err := reserveTranslation(ctx, text)
		if err != nil {
			return nil, err
		}
		tr, err := s.translate(c, text)
		release()
		if err != nil {
			var pe *pgwire.Error
			if (isDDL(st.kind) || st.kind == "REFRESH" || st.kind == "TRUNCATE") && !(errors.As(err, &pe) && pe.Code == pgwire.CodeSyntax) {
				st.deferred, st.readonly = err, false
				return st, nil
			}
			return nil, err
		}
		if tr.Notify != nil {
			st.notify, st.tag, st.readonly, st.tableFree = tr.Notify, tr.Tag, true, true
			return st, nil
		}
		for _, name := range tr.SeqNames {
			// nextval('s') resolves 's' when the statement is parsed,
			// as PostgreSQL's regclass does.
			if err := sequenceExists(c, name); err != nil {
				return nil, err
			}
		}
		if tr.Passthrough {
			st.hoisted = nil
		} else {
			st.sql, st.script, st.noop, st.ddl, st.tag, st.types, st.names, st.writes = tr.SQL, tr.Script, tr.Noop, tr.DDL, tr.Tag, tr.Cols, tr.Names, tr.Writes
			st.params = tr.Params
			st.volatile, st.tableFree, st.locking = tr.Volatile, tr.TableFree, tr.Locking
			st.created = tr.Created
			st.deferred = tr.Deferred
			if tr.Merge != nil {
				// Prepared as its plan's query (its parameters); run
				// in steps (runMerge).
				st.merge, st.sql, st.tag = tr.Merge, tr.Merge.Query, ""
			}
		}
		if st.noop {
			st.readonly = true
			return st, nil
		}
		if len(st.script) > 0 {
			// A DDL script: run statement by statement in run().
			st.readonly = false
			return st, nil
		}
	}
	ps, closePS, err := c.prepareFor(st)
	if err != nil {
		return nil, mapError(err)
	}
	st.nparams = ps.NumInput() - len(st.hoisted)
	st.readonly = ps.Readonly() && !st.writes && st.merge == nil
	closePS()
	if st.nparams > 0 {
		orig := st.orig
		if st.hoisted != nil {
			orig = st.sql // the short text: its first parameters are the client's
		}
		st.paramOIDs = inferParams(orig, st.nparams, func(table string) map[string]string { return tableColumns(c, table) })
		for i, oid := range st.params {
			if i < len(st.paramOIDs) && oid != 0 {
				st.paramOIDs[i] = oid // the statement's own word (a cast) first
			}
		}
	}
	switch st.kind {
	case "SELECT", "WITH", "VALUES", "PRAGMA", "EXPLAIN", "TABLE":
		st.rows = true
	}
	if len(st.sql) < hoistMinStatement && strings.Contains(strings.ToUpper(st.sql), "RETURNING") || len(st.sql) >= hoistMinStatement && containsFold(st.sql, "RETURNING") {
		st.rows = true
	}
	if st.kind == "PRAGMA" || st.kind == "EXPLAIN" {
		// PRAGMA with assignment writes settings but has no rows to
		// describe; treat as read-only for routing.
		st.readonly = st.readonly || st.kind == "EXPLAIN"
	}
	return st, nil
}

// sequenceExists fails with 42P01 when no sequence has that name, and
// with 0A000 when it names the sequence PostgreSQL would create behind a
// serial or identity column (here the column numbers its rows itself).
func sequenceExists(c *conn, name string) error {
	exists := func(q string) bool {
		rows, err := c.c.Query(q, []driver.Value{name})
		if err != nil {
			return false
		}
		defer rows.Close()
		return rows.Next(make([]driver.Value, 1)) == nil
	}
	if exists(`SELECT 1 FROM _tandem_sequences WHERE name = ?`) {
		return nil
	}
	if exists(`SELECT 1 FROM _tandem_columns WHERE sequence = ?`) {
		return &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: fmt.Sprintf("the sequence %q of a serial or identity column is not supported on the SQLite back end (the column numbers rows itself)", name), Hint: "use a sequence of its own (CREATE SEQUENCE) or a PostgreSQL back end", Err: sqlpg.ErrNotSupported}
	}
	return &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", name)}
}

// CopyColumns implements pgwire.CopyColumner: COPY t TO without a column
// list leaves t's generated columns out, as PostgreSQL does (nil when t
// has none: every column, SELECT *).
func (s *Session) CopyColumns(ctx context.Context, table string) []string {
	if translateOff {
		return nil
	}
	name := strings.TrimSpace(table)
	if len(name) > 7 && strings.EqualFold(name[:7], "public.") {
		name = name[7:]
	}
	if strings.HasPrefix(name, `"`) && strings.HasSuffix(name, `"`) && len(name) > 1 {
		name = strings.ReplaceAll(name[1:len(name)-1], `""`, `"`)
	} else {
		name = strings.ToLower(name)
	}
	c, done, err := s.readConn(ctx)
	if err != nil {
		return nil
	}
	defer done()
	var out []string
	generated := false
	for _, col := range tableColumnList(c, name) {
		if col.Generated != "" {
			generated = true
			continue
		}
		out = append(out, quoteIdent(col.Name))
	}
	if !generated {
		return nil
	}
	return out
}

// readConn is the session's connection inside a transaction block (it
// sees the block's own changes), else a reader from the pool; done returns
// a borrowed one.
func (s *Session) readConn(ctx context.Context) (*conn, func(), error) {
	if s.held != nil {
		return s.held, func() {}, nil
	}
	c, err := s.acquire(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	return c, func() { s.db.release(c) }, nil
}

// Describe implements pgwire.Statement: read-only statements are run once
// with NULL parameters and no row is returned to anyone; their column
// names, declared types and (for expressions) first values give the types.
func (st *Statement) Describe(ctx context.Context) ([]pgwire.Column, error) {
	if st.call != nil {
		return st.s.callColumns(ctx, st.call)
	}
	if !st.rows {
		return nil, nil
	}
	if st.cursor != nil {
		// FETCH: the cursor's columns (none when it does not exist:
		// Execute answers 34000, as PostgreSQL).
		if c, ok := st.s.cursors[st.cursor.Name]; ok {
			return c.cols, nil
		}
		return nil, nil
	}
	if !st.readonly && (!st.writes || len(st.names) > 0 && len(st.names) == len(st.types)) {
		if len(st.names) > 0 && len(st.names) == len(st.types) {
			cols := make([]pgwire.Column, len(st.names))
			for i, n := range st.names {
				cols[i] = pgwire.Column{Name: n, OID: pgwire.OIDText}
				if oid := st.types[i].OID(); oid != 0 {
					cols[i].OID = oid
				}
			}
			return cols, nil
		}
		cols := returningColumns(st.sql)
		if len(st.types) == len(cols) {
			for i, t := range st.types {
				if oid := t.OID(); oid != 0 {
					cols[i].OID = oid
				}
			}
		}
		return cols, nil
	}
	// The run that describes it is canceled as a statement is (a
	// CancelRequest, pg_cancel_backend, statement_timeout): SQLite steps
	// to the first row, which for an aggregate is the whole query.
	ctx, cancel := context.WithCancel(ctx)
	st.s.armCancel(cancel)
	defer func() {
		st.s.mu.Lock()
		st.s.cancel = nil
		st.s.mu.Unlock()
		cancel()
	}()
	c, done, err := st.s.readConn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	ps, closePS, err := c.prepareFor(st)
	if err != nil {
		return nil, mapError(err)
	}
	defer closePS()
	sqlpg.UseSession(c.c, st.s.settings, &st.s.seqs, st.s.adv)
	args := make([]driver.NamedValue, st.nparams, st.nparams+len(st.hoisted))
	for i := range args {
		args[i] = driver.NamedValue{Ordinal: i + 1}
	}
	for _, v := range st.hoisted {
		args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: v})
	}
	var rows driver.Rows
	if st.writes || st.volatile {
		// SELECT nextval(...), pg_advisory_lock(...): described as a
		// subquery that produces no row, so nothing is written or locked
		// (on a reader, too).
		err = errors.New("writes")
	} else {
		rows, err = ps.QueryContext(ctx, args)
	}
	if err != nil && (st.writes || st.volatile) {
		if ps, err = c.prepare("SELECT * FROM (" + st.sql + ") WHERE 0"); err != nil {
			return nil, mapError(err)
		}
		if rows, err = ps.QueryContext(ctx, args); err != nil {
			return nil, mapError(err)
		}
	} else if err != nil {
		// SQLite steps once to describe; a statement that fails only
		// when it runs (1/0, sqrt(-1), a cast of a bad value) still
		// describes in PostgreSQL. Describe it as a subquery that
		// produces no row, so no expression is evaluated.
		var pe *pgwire.Error
		// Invalid literals (22P02, 22007, 22008) fail at Parse in
		// PostgreSQL too: those are answered as they are.
		if !errors.As(mapError(err), &pe) || !(strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "21") || pe.Code == "55000" || pe.Code == "42704") ||
			pe.Code == "22P02" || pe.Code == "22007" || pe.Code == "22008" {
			return nil, mapError(err)
		}
		if ps, err = c.prepare("SELECT * FROM (" + st.sql + ") WHERE 0"); err != nil {
			return nil, mapError(err)
		}
		if rows, err = ps.QueryContext(ctx, args); err != nil {
			return nil, mapError(err)
		}
	}
	defer rows.Close()
	r := rows.(*sqlite3.SQLiteRows)
	names := undedup(r.Columns())
	if len(names) == 0 {
		return nil, nil
	}
	decl := r.DeclTypes()
	vals := make([]driver.Value, len(names))
	if err := r.Next(vals); err != nil {
		for i := range vals {
			vals[i] = nil
		}
	}
	return columnsFor(names, decl, vals, st.types), nil
}

func columnsFor(names, decl []string, vals []driver.Value, types []sqlpg.ColType) []pgwire.Column {
	cols := make([]pgwire.Column, len(names))
	if len(types) != len(names) {
		types = nil
	}
	for i, n := range names {
		if types != nil && types[i].Type != nil {
			cols[i] = pgwire.Column{Name: n, OID: types[i].OID()}
			continue
		}
		oid := oidForDecl(decl[i])
		if oid == 0 {
			oid = oidForValue(vals[i], n)
		}
		cols[i] = pgwire.Column{Name: n, OID: oid}
	}
	return cols
}

// enumDecl marks an enum column's type in tableColumns: its OID follows.
const enumDecl = "\x00enum "

func oidForDecl(d string) uint32 {
	if rest, ok := strings.CutPrefix(d, enumDecl); ok {
		oid, _ := strconv.ParseUint(rest, 10, 32)
		return uint32(oid)
	}
	if t := sqlpg.TypeByName[d]; t != nil && t.Name == d {
		return t.OID // a PostgreSQL type name from _tandem_columns
	}
	d = strings.ToUpper(d)
	switch {
	case d == "":
		return 0
	case strings.Contains(d, "BOOL"):
		return pgwire.OIDBool
	case strings.Contains(d, "INT"):
		return pgwire.OIDInt8
	case strings.Contains(d, "CHAR"), strings.Contains(d, "CLOB"), strings.Contains(d, "TEXT"):
		return pgwire.OIDText
	case strings.Contains(d, "BLOB"), strings.Contains(d, "BYTEA"):
		return pgwire.OIDBytea
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"):
		return pgwire.OIDFloat8
	case strings.Contains(d, "TIMESTAMP"), strings.Contains(d, "DATETIME"):
		return pgwire.OIDTimestamp
	case d == "DATE":
		return pgwire.OIDDate
	case strings.Contains(d, "NUMERIC"), strings.Contains(d, "DECIMAL"):
		return pgwire.OIDNumeric
	}
	return pgwire.OIDText
}

func oidForValue(v driver.Value, name string) uint32 {
	switch v.(type) {
	case int64:
		return pgwire.OIDInt8
	case float64:
		return pgwire.OIDFloat8
	case []byte:
		return pgwire.OIDBytea
	case bool:
		return pgwire.OIDBool
	case time.Time:
		return pgwire.OIDTimestamp
	case string:
		return pgwire.OIDText
	}
	n := strings.ToLower(name)
	switch {
	case strings.HasPrefix(n, "count("), strings.HasPrefix(n, "sum("), strings.HasPrefix(n, "length("), strings.HasPrefix(n, "max("), strings.HasPrefix(n, "min("):
		return pgwire.OIDInt8
	case strings.HasPrefix(n, "avg("), strings.HasPrefix(n, "total("):
		return pgwire.OIDFloat8
	}
	return pgwire.OIDText
}

func returningColumns(sql string) []pgwire.Column {
	u := strings.ToUpper(sql)
	i := strings.LastIndex(u, "RETURNING")
	if i < 0 {
		return nil
	}
	var cols []pgwire.Column
	for _, part := range strings.Split(sql[i+len("RETURNING"):], ",") {
		p := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(part), ";"))
		if f := strings.Fields(p); len(f) > 0 {
			p = f[len(f)-1]
		}
		cols = append(cols, pgwire.Column{Name: strings.Trim(p, `"`), OID: pgwire.OIDText})
	}
	return cols
}

// Execute implements pgwire.BackendSession.
func (s *Session) Execute(ctx context.Context, ps pgwire.Statement, args []any) (pgwire.Result, error) {
	// What a constraint error's DETAIL may print: the arguments, large
	// ones left out. The statement's own arguments are released once
	// SQLite has them (replicatedAutocommit): keeping them here for an
	// error that rarely comes kept a 12 MiB value alive through the
	// commit and its replication.
	small := smallArgs(args)
	res, err := s.execute(ctx, ps, args)
	if err != nil && s.TxStatus() == 'I' {
		s.dropNotes() // a statement that was its own transaction failed
	}
	var pe *pgwire.Error
	if err != nil && errors.As(err, &pe) && pe.Detail == "" {
		switch pe.Code {
		case "23505", "23503", "23502", "23514":
			st, _ := ps.(*Statement)
			s.completeConstraintError(ctx, st, small, pe)
		}
	}
	return res, err
}

// omittedArg stands for an argument smallArgs left out.
type omittedArg struct{}

// smallArgs is args with values of more than 4 KiB left out (omittedArg).
func smallArgs(args []any) []any {
	large := false
	for _, a := range args {
		switch x := a.(type) {
		case string:
			large = large || len(x) > 4096
		case []byte:
			large = large || len(x) > 4096
		}
	}
	if !large {
		return args // nothing to let go of: no copy on the common path
	}
	out := make([]any, len(args))
	for i, a := range args {
		switch x := a.(type) {
		case string:
			if len(x) > 4096 {
				out[i] = omittedArg{}
				continue
			}
		case []byte:
			if len(x) > 4096 {
				out[i] = omittedArg{}
				continue
			}
		}
		out[i] = a
	}
	return out
}

// nameUniqueViolation completes a unique violation's error with the name
// of the constraint (or unique index) on its columns, as PostgreSQL names
// it ("duplicate key value violates unique constraint "t_a_key""): SQLite
// names only the columns, and ORMs read the constraint's name.
func (s *Session) nameUniqueViolationOn(c *conn, pe *pgwire.Error) {
	var quoted []string
	for _, col := range strings.Split(pe.Column, ", ") {
		quoted = append(quoted, sqlpg.QuoteIdent(col))
	}
	rows, err := c.c.Query(`SELECT relname FROM _pg_index_all WHERE tbl = ? AND isunique AND cols = ? ORDER BY length(relname), relname`, []driver.Value{pe.Table, strings.Join(quoted, ", ")})
	if err != nil {
		return
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if rows.Next(v) == nil {
		if name, ok := v[0].(string); ok {
			pe.Constraint = name
			pe.Message = fmt.Sprintf("duplicate key value violates unique constraint %q", name)
		}
	}
}

// execute is Execute before its errors are completed.
func (s *Session) execute(ctx context.Context, ps pgwire.Statement, args []any) (pgwire.Result, error) {
	st := ps.(*Statement)
	if len(st.words) > 1 && (st.kind == "CREATE" || st.kind == "DROP") && st.words[1] == "DATABASE" {
		if s.inTx || s.lazy != nil {
			return nil, pgwire.Errorf("25001", "%s DATABASE cannot run inside a transaction block", st.kind)
		}
		return nil, &pgwire.Error{Code: pgwire.CodeFeatureNotSupported,
			Message: fmt.Sprintf("%s DATABASE is not supported on the SQLite back end: a node serves one database (its SQLite file)", st.kind),
			Hint:    "run one node or cluster per database"}
	}
	if st.deferred != nil {
		return nil, st.deferred
	}
	if st.sqlPrep != nil {
		return s.executePrepared(ctx, st.sqlPrep)
	}
	if st.doBlock != nil {
		return s.executeDo(ctx, st.doBlock)
	}
	if st.fn != nil || st.dropFn != nil || st.call != nil {
		return s.executeFunction(ctx, st)
	}
	if st.notify != nil {
		return s.runNotify(st.notify)
	}
	if !s.inTx && s.lazy == nil && s.adv != nil {
		// The last statement outside a block was its own transaction:
		// its transaction-level advisory locks are over.
		s.adv.EndTransaction()
	}
	if s.lazy != nil {
		switch {
		case st.kind == "BEGIN" || st.kind == "START" || st.kind == "COMMIT" || st.kind == "END" ||
			(st.kind == "ROLLBACK" || st.kind == "ABORT") && !(len(st.words) > 1 && st.words[1] == "TO"):
			// Handled below, without starting the block.
		case st.tableFree && st.cursor == nil:
			// Reads no table: runs on a reader, the block still unstarted.
		case isQuery(st.kind) && st.readonly && !st.writes && !st.locking && st.cursor == nil && s.readCommittedReads():
			// READ COMMITTED, as PostgreSQL's: each statement sees what
			// was committed when it began. Until the block writes, its
			// reads run on readers and hold up no writer.
		default:
			if err := s.startLazy(ctx); err != nil {
				return nil, err
			}
		}
	}
	if st.chunked != nil {
		return s.execChunked(ctx, st)
	}
	if st.cursor != nil {
		return s.executeCursor(ctx, st, args)
	}
	switch st.kind {
	case "BEGIN", "START":
		return s.begin(ctx, st)
	case "COMMIT", "END":
		return s.finish(ctx, "COMMIT")
	case "ROLLBACK", "ABORT":
		if !(len(st.words) > 1 && st.words[1] == "TO") {
			return s.finish(ctx, "ROLLBACK")
		}
	case "SAVEPOINT", "RELEASE", "LOCK":
		if !s.inTx {
			return nil, pgwire.Errorf("25P01", "%s can only be used in transaction blocks", map[string]string{"LOCK": "LOCK TABLE"}[st.kind]+map[bool]string{true: st.kind}[st.kind != "LOCK"])
		}
	}
	if s.inTx && concurrently(st.words) {
		// As PostgreSQL: a concurrent index build cannot be part of a
		// transaction block.
		obj := "INDEX"
		if st.kind == "REINDEX" {
			obj = ""
		}
		return nil, pgwire.Errorf("25001", "%s cannot run inside a transaction block", strings.TrimSpace(st.kind+" "+obj)+" CONCURRENTLY")
	}
	if st.tag == "VACUUM" || st.tag == "ANALYZE" {
		// Maintenance of this node's own file: not replicated, and not
		// possible inside a transaction (as in PostgreSQL).
		if s.inTx {
			return nil, pgwire.Errorf("25001", "%s cannot run inside a transaction block", st.tag)
		}
		c, err := s.acquire(ctx, true)
		if err != nil {
			return nil, err
		}
		defer s.db.release(c)
		if err := c.exec(st.sql); err != nil {
			return nil, mapError(err)
		}
		return &cmdResult{tag: st.tag}, nil
	}
	local, creates, err := s.sessionLocal(st)
	if err != nil {
		return nil, err
	}
	if local {
		// A temporary table's metadata is the session's own.
		st.sql = sqlpg.TempMetadata(st.sql)
		for i := range st.script {
			st.script[i] = sqlpg.TempMetadata(st.script[i])
		}
	}
	if creates {
		if s.db.repl != nil {
			if err := s.db.repl.Writable(); err != nil {
				return nil, err
			}
		}
		if err := s.ensurePrivate(); err != nil {
			return nil, err
		}
	}
	if s.held == nil && !st.readonly && s.db.repl != nil && st.kind != "PRAGMA" {
		return s.replicatedAutocommit(ctx, st, args, local)
	}
	if s.held != nil && !s.held.ro && s.db.repl != nil {
		switch {
		case (isDDL(st.kind) || st.ddl) && !local:
			// Transactional DDL: it runs in the block; COMMIT ships it
			// with the block's rows as one writeset, in statement order:
			// the rows written so far go into the script first, as SQL
			// with their images at this point (a later DDL may rename
			// their table, or need them: a constraint they make true).
			harvested, err := s.db.capture(s.held)
			if err != nil {
				return nil, err
			}
			for i := range harvested {
				rs, err := writeset.RowStatement(writeset.SQLite, &harvested[i])
				if err == nil {
					var sql string
					if sql, err = writeset.Inline(writeset.SQLite, rs); err == nil {
						s.txDDL = append(s.txDDL, sql)
					}
				}
				if err != nil {
					return nil, fmt.Errorf("sqlite: transactional DDL: %w", err)
				}
			}
			res, err := s.run(ctx, s.held, st, args, func() {})
			if err != nil {
				return nil, err
			}
			if len(st.script) == 0 {
				s.txDDL = append(s.txDDL, st.execSQL())
			} else {
				s.txDDL = append(s.txDDL, st.script...)
			}
			// Capture the rows later statements of the block write to
			// the tables it created.
			s.db.pks.Clear()
			s.db.images.Clear()
			if err := refreshCapture(s.held); err != nil {
				return nil, err
			}
			return res, nil
		case st.kind == "SAVEPOINT" && len(st.words) > 1:
			s.marks = append(s.marks, savepoint{name: strings.ToLower(st.words[1]), ddl: len(s.txDDL)})
		case st.kind == "ROLLBACK" && len(st.words) > 1 && st.words[1] == "TO":
			name := strings.ToLower(st.words[len(st.words)-1])
			for i := len(s.marks) - 1; i >= 0; i-- {
				if s.marks[i].name == name {
					s.txDDL = s.txDDL[:s.marks[i].ddl]
					s.marks = s.marks[:i+1]
					break
				}
			}
		}
	}
	c := s.held
	autocommit := c == nil
	if autocommit {
		var err error
		if c, err = s.acquire(ctx, !st.readonly); err != nil {
			return nil, err
		}
	} else if c.ro && !st.readonly {
		return nil, pgwire.Errorf("25006", "cannot execute %s in a read-only transaction", st.kind)
	}
	release := func() {
		if autocommit {
			s.db.release(c)
		}
	}
	res, err := s.run(ctx, c, st, args, release)
	if err == nil && s.inTx {
		switch st.kind {
		case "SAVEPOINT", "RELEASE", "ROLLBACK":
			s.noteSavepoint(st)
		}
	}
	return res, err
}

// executeOn runs a statement on a connection the caller holds.
func (s *Session) executeOn(ctx context.Context, c *conn, st *Statement, args []any) (pgwire.Result, error) {
	return s.run(ctx, c, st, args, func() {})
}

// translate translates a statement for connection c. The translations
// cached by text are shared by every session, so a connection whose schema
// the others do not see (the session's own temporary tables, DDL of its
// open transaction) neither reads nor fills them.
func (s *Session) translate(c *conn, text string) (*sqlpg.Translation, error) {
	if c.private || (s.schemaDirty && c == s.held) {
		return sqlpg.TranslateFresh(text, schema{c, s.zone()})
	}
	return sqlpg.Translate(text, schema{c, s.zone()})
}

// forgetSchema empties the schema cache of the connection the session
// holds before it goes back to the pool, if the transaction ran DDL: what
// it cached meanwhile described the transaction's own schema.
func (s *Session) forgetSchema(c *conn) {
	if s.schemaDirty && c != nil {
		c.meta = schemaCache{}
	}
}

// settleSchema invalidates cached translations and column lists after a
// transaction that ran DDL has ended.
func (s *Session) settleSchema() {
	if s.schemaDirty {
		s.schemaDirty = false
		sqlpg.SchemaChanged()
	}
}

// run executes st on c; release is called when the statement is done.
func (s *Session) run(ctx context.Context, c *conn, st *Statement, args []any, release func()) (pgwire.Result, error) {
	if st.noop {
		release()
		return &cmdResult{tag: commandTag(st, 0)}, nil
	}
	if st.ddl {
		// Bumped now for this connection's next statements, and again
		// when the transaction ends (settleSchema): until it commits
		// or rolls back, other connections still read the old schema
		// and may cache it under the new version.
		if s.inTx {
			s.schemaDirty = true
		}
		defer sqlpg.SchemaChanged()
	} else if s.schemaDirty && st.kind == "ROLLBACK" {
		defer sqlpg.SchemaChanged() // ROLLBACK TO: DDL may be undone
	}
	sqlpg.StatementStart(c.c)
	sqlpg.UseSession(c.c, s.settings, &s.seqs, s.adv.Bind(ctx))
	if len(st.script) > 0 {
		// All or nothing, as one PostgreSQL statement: a script that
		// fails half-way (a view that does not compile) leaves nothing.
		if err := c.exec("SAVEPOINT _tandem_script"); err != nil {
			release()
			return nil, mapError(err)
		}
		for _, q := range st.script {
			if err := c.exec(q); err != nil {
				_ = c.exec("ROLLBACK TO _tandem_script")
				_ = c.exec("RELEASE _tandem_script")
				release()
				return nil, mapError(err)
			}
		}
		var n int64
		if st.created != "" {
			// CREATE TABLE AS (after its columns' types): its rows.
			if rows, err := c.c.Query("SELECT count(*) FROM "+quoteIdent(st.created), nil); err == nil {
				v := make([]driver.Value, 1)
				if rows.Next(v) == nil {
					n, _ = v[0].(int64)
				}
				rows.Close()
			}
		}
		if err := c.exec("RELEASE _tandem_script"); err != nil {
			release()
			return nil, mapError(err)
		}
		release()
		return &cmdResult{tag: commandTag(st, n)}, nil
	}
	var sqlst *sqlite3.SQLiteStmt
	var closeStmt func()
	var err error
	transient := st.hoisted != nil || len(st.sql) >= hoistMinStatement || largeArgs(args)
	if transient && st.hoisted == nil && len(st.sql) < hoistMinStatement {
		// Large parameter values: SQLite keeps a copy of what is bound
		// to a statement until it is bound again, so the statement
		// runs on a program of its own, finalized after it.
		var ds driver.Stmt
		if ds, err = c.c.Prepare(st.sql); err == nil {
			sqlst, closeStmt = ds.(*sqlite3.SQLiteStmt), func() { ds.Close() }
		}
	} else {
		sqlst, closeStmt, err = c.prepareFor(st)
	}
	if err != nil {
		release()
		return nil, mapError(err)
	}
	// closeStmt finalizes a statement prepared for this run only (a
	// transient one, or the cached one was busy); a no-op otherwise.
	rel := release
	release = func() { closeStmt(); rel() }
	nargs := make([]driver.NamedValue, len(args), len(args)+len(st.hoisted))
	for i, a := range args {
		if str, ok := a.(string); ok && i < len(st.paramOIDs) && st.paramOIDs[i] != 0 {
			// A uuid or an array sent as text: in the form the column
			// keeps (lower case; array_out's), as a literal is, or 22P02.
			v, err := sqlpg.ParamIn(st.paramOIDs[i], str)
			if err != nil {
				release()
				return nil, mapError(err)
			}
			a = v
		}
		if tm, ok := a.(time.Time); ok {
			// In the form the column keeps, as a literal is (the driver
			// would write "+00:00", which compares unequal as text).
			var oid uint32
			if i < len(st.paramOIDs) {
				oid = st.paramOIDs[i]
			}
			a = timeArg(tm, oid)
		}
		nargs[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	for _, v := range st.hoisted {
		nargs = append(nargs, driver.NamedValue{Ordinal: len(nargs) + 1, Value: v})
	}
	sctx, cancel := context.WithCancel(ctx)
	s.armCancel(cancel)
	s.adv.Bind(sctx) // an advisory lock's wait ends with the statement
	done := func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
		cancel()
		release()
		if !s.inTx && s.lazy == nil && s.adv != nil {
			// The statement was its own transaction: its
			// transaction-level advisory locks end with it.
			s.adv.EndTransaction()
		}
	}
	if st.merge != nil {
		n, err := runMerge(sctx, c, st.merge, nargs)
		done()
		if err != nil {
			return nil, err
		}
		return &cmdResult{tag: fmt.Sprintf("MERGE %d", n)}, nil
	}
	if !st.rows {
		r, err := sqlst.ExecContext(sctx, nargs)
		done()
		if err != nil {
			return nil, mapError(err)
		}
		n, _ := r.RowsAffected()
		return &cmdResult{tag: commandTag(st, n)}, nil
	}
	rows, err := sqlst.QueryContext(sctx, nargs)
	if err != nil {
		done()
		return nil, mapError(err)
	}
	r := rows.(*sqlite3.SQLiteRows)
	names := undedup(r.Columns()) // as Describe names them
	if len(names) == 0 {
		r.Close()
		done()
		return &cmdResult{tag: commandTag(st, 0)}, nil
	}
	// The statement steps under this result until it is closed: the same
	// SQL meanwhile takes a statement of its own (prepareFor).
	if c.busy == nil {
		c.busy = map[*sqlite3.SQLiteStmt]int{}
	}
	c.busy[sqlst]++
	stepping := sqlst
	untrack := func() {
		if c.busy[stepping]--; c.busy[stepping] <= 0 {
			delete(c.busy, stepping)
		}
		done()
	}
	res := &rowResult{st: st, c: c, rows: r, done: untrack, vals: make([]driver.Value, len(names))}
	// Peek the first row so expression columns get a type from a value.
	if err := r.Next(res.vals); err != nil {
		if err != io.EOF {
			r.Close()
			untrack()
			return nil, mapError(err)
		}
		res.eof = true
	} else {
		res.peeked = true
	}
	// Running on c until its Close (release checks).
	c.open.Add(1)
	if c == s.held || s.lazy != nil { // a lazy block's reads run on readers, and end with it too
		if len(s.blockResults) >= 64 { // a long block: forget the ended ones
			s.blockResults = slices.DeleteFunc(s.blockResults, func(r *rowResult) bool { return r.closed })
		}
		s.blockResults = append(s.blockResults, res)
	}
	res.cols = columnsFor(names, r.DeclTypes(), res.vals, st.types)
	if len(st.types) == len(names) {
		res.types = st.types
		if res.peeked {
			normalizeRow(res.vals, res.types)
		}
	}
	return res, nil
}

func (s *Session) begin(ctx context.Context, st *Statement) (pgwire.Result, error) {
	tag := "BEGIN"
	if st.kind == "START" {
		tag = "START TRANSACTION"
	}
	if s.inTx || s.lazy != nil {
		return &cmdResult{tag: tag}, nil // PostgreSQL warns and carries on
	}
	ro := strings.Contains(strings.ToUpper(st.sql), "READ ONLY")
	if !ro && s.db.repl != nil {
		if err := s.db.repl.Writable(); err != nil {
			var pe *pgwire.Error
			if !errors.As(err, &pe) || pe.Code != "25006" {
				return nil, err
			}
			// A standby's blocks are read-only, as on PostgreSQL's hot
			// standby: drivers that always open one (psycopg, pgjdbc
			// with autocommit off) read there; a write in it gets 25006.
			ro = true
		}
	}
	if !ro && s.lazy == nil && s.priv == nil {
		s.lazy = st // started by the block's first statement that needs it (startLazy)
		return &cmdResult{tag: tag}, nil
	}
	c, err := s.acquire(ctx, !ro)
	if err != nil {
		return nil, err
	}
	if c.private && ro {
		c.ro = true // until the block ends (release)
	}
	stmt := "BEGIN"
	if !ro {
		stmt = "BEGIN IMMEDIATE"
	}
	if err := c.exec(stmt); err != nil {
		s.db.release(c)
		return nil, mapError(err)
	}
	s.held, s.inTx = c, true
	if !ro {
		s.db.setHolder(s)
	}
	return &cmdResult{tag: tag}, nil
}

// readCommittedReads reports whether the session's unstarted block may
// read on readers: its isolation level is READ COMMITTED (a REPEATABLE
// READ or SERIALIZABLE block reads one snapshot, taken with the write
// lock at its first statement), and the design is not multi-master
// (whose transactions run on one snapshot, certified at COMMIT).
func (s *Session) readCommittedReads() bool {
	if _, mm := s.db.repl.(Certifier); mm {
		return false
	}
	if strings.Contains(strings.ToUpper(s.lazy.sql), "ISOLATION") && !strings.Contains(strings.ToUpper(s.lazy.sql), "READ COMMITTED") {
		return false
	}
	if s.settings != nil {
		if l, ok := s.settings.Setting("transaction_isolation"); ok && !strings.EqualFold(l, "read committed") && !strings.EqualFold(l, "read uncommitted") {
			return false
		}
	}
	return true
}

// isQuery: a statement of this first keyword reads (SAVEPOINT, RELEASE
// and the like are "read-only" to SQLite too, but belong to the block).
func isQuery(kind string) bool {
	switch kind {
	case "SELECT", "WITH", "VALUES", "TABLE":
		return true
	}
	return false
}

// startLazy starts a block whose BEGIN was deferred: it takes the write
// lock now.
func (s *Session) startLazy(ctx context.Context) error {
	st := s.lazy
	if st == nil {
		return nil
	}
	s.lazy = nil
	c, err := s.acquire(ctx, true)
	if err != nil {
		s.lazy = st // still in the block; the statement failed
		return err
	}
	if err := c.exec("BEGIN IMMEDIATE"); err != nil {
		s.db.release(c)
		s.lazy = st
		return mapError(err)
	}
	s.held, s.inTx = c, true
	s.db.setHolder(s)
	return nil
}

func (s *Session) finish(ctx context.Context, verb string) (pgwire.Result, error) {
	res, err := s.finishTx(ctx, verb)
	committed := false
	if err == nil {
		if r, ok := res.(*cmdResult); ok && r.tag == "COMMIT" {
			committed = true
		}
	}
	s.endNotes(committed)
	return res, err
}

// finishTx is finish before the transaction's NOTIFYs are settled.
func (s *Session) finishTx(ctx context.Context, verb string) (pgwire.Result, error) {
	if s.adv != nil {
		defer s.adv.EndTransaction()
	}
	if s.lazy != nil {
		// A block that never started has nothing to commit; its
		// portals end with it.
		s.lazy = nil
		s.endBlockResults()
		return &cmdResult{tag: verb}, nil
	}
	if !s.inTx {
		return &cmdResult{tag: verb}, nil
	}
	defer s.settleSchema()
	s.db.clearHolder(s)
	kept, cerr := s.endBlockCursors(ctx, verb == "COMMIT")
	if cerr != nil {
		verb = "ROLLBACK" // a held cursor's row failed: the commit fails
	}
	s.endBlockResults()
	c := s.held
	s.forgetSchema(c)
	ddl := strings.Join(s.txDDL, ";\n")
	s.txDDL, s.marks = nil, nil
	if verb == "COMMIT" && !c.ro && s.db.repl != nil {
		s.held, s.inTx = nil, false
		if ddl != "" {
			defer sqlpg.SchemaChanged()
		}
		err := s.db.replicatedCommit(ctx, c, ddl)
		if err != nil {
			s.dropCursors(kept)
			return nil, err
		}
		return &cmdResult{tag: verb}, nil
	}
	err := c.exec(verb)
	if err != nil && verb == "COMMIT" {
		err = deferredForeignKeyError(c, err) // read before the rollback
		// The commit failed: roll back so the connection is clean.
		_ = c.exec("ROLLBACK")
		s.dropCursors(kept)
	}
	s.held, s.inTx = nil, false
	s.db.release(c)
	if cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, mapError(err)
	}
	return &cmdResult{tag: verb}, nil
}

// replicatedCommit captures the transaction's writeset (or takes the DDL),
// hands it to the replicator, commits, releases the writer and then waits
// for the safeness level. It consumes c (returns it to the pool).
func (db *DB) replicatedCommit(ctx context.Context, c *conn, ddl string) error {
	fail := func(err error) error {
		_ = c.exec("ROLLBACK")
		db.release(c)
		return err
	}
	ws := &writeset.Writeset{DDL: ddl}
	if ddl != "" {
		db.pks.Clear()
		db.images.Clear()
		if err := refreshCapture(c); err != nil {
			return fail(err)
		}
		// The rows the transaction wrote besides its DDL (transactional
		// DDL): their final images, applied after the DDL.
		rows, err := db.capture(c)
		if err != nil {
			return fail(err)
		}
		ws.Rows = rows
	} else {
		rows, err := db.capture(c)
		if err != nil {
			return fail(err)
		}
		if len(rows) == 0 { // nothing written: a plain commit
			err := c.exec("COMMIT")
			db.release(c)
			return mapErrorOrNil(err)
		}
		ws.Rows = rows
	}
	if cr, ok := db.repl.(Certifier); ok {
		return db.certifiedCommit(ctx, c, cr, ws)
	}
	after, err := db.repl.Prepare(ctx, ws)
	if err != nil {
		return fail(err)
	}
	if err := c.execCached("UPDATE _tandem_meta SET applied_gsn = ?, epoch = ? WHERE id = 1", int64(ws.GSN), int64(ws.Epoch)); err != nil {
		_ = after(ctx, false)
		return fail(mapError(err))
	}
	if err := c.exec("COMMIT"); err != nil {
		err = deferredForeignKeyError(c, err)
		_ = after(ctx, false)
		return fail(err)
	}
	db.release(c)
	return after(ctx, true)
}

// certifiedCommit is replicatedCommit in the multi-master design: the
// writer holds the write lock since BEGIN IMMEDIATE, so the GSN recorded
// in _tandem_meta is exactly what the transaction's snapshot reflects.
// The transaction rolls back (the write lock is free during the
// certifier's round trip) and its writeset comes back through the
// certified log. It consumes c.
func (db *DB) certifiedCommit(ctx context.Context, c *conn, cr Certifier, ws *writeset.Writeset) error {
	snap, err := db.appliedCached(c)
	if err != nil {
		_ = c.exec("ROLLBACK")
		db.release(c)
		return mapError(err)
	}
	var tables []string
	if ws.DDL != "" {
		after, err := userTables(c)
		if err != nil {
			_ = c.exec("ROLLBACK")
			db.release(c)
			return mapError(err)
		}
		tables = after
	}
	_ = c.exec("ROLLBACK")
	if ws.DDL != "" {
		// And the tables as they were before it (a dropped or renamed
		// table conflicts with its concurrent writers too).
		before, err := userTables(c)
		if err != nil {
			db.release(c)
			return mapError(err)
		}
		tables = append(tables, before...)
	}
	db.release(c)
	return cr.Certify(ctx, ws, snap, tables)
}

func (db *DB) setHolder(s *Session) {
	db.holderMu.Lock()
	db.holder, s.aborting = s, false
	db.holderMu.Unlock()
}

func (db *DB) clearHolder(s *Session) {
	db.holderMu.Lock()
	if db.holder == s {
		db.holder = nil
	}
	db.holderMu.Unlock()
}

// WriterConflicts implements multimaster.WriterHolder: whether a
// transaction block holds the write lock. Whether it wrote one of keys is
// not known without reading its uncommitted capture rows on its own
// connection, which only its session may use: conflict is always false,
// and the holder is aborted after multi_master.apply_conflict_wait.
func (db *DB) WriterConflicts(keys []string) (held, conflict bool) {
	db.holderMu.Lock()
	defer db.holderMu.Unlock()
	return db.holder != nil && !db.holder.aborting, false
}

// AbortWriter implements multimaster.WriterHolder: the session whose
// transaction block holds the write lock ends with e (FATAL; its
// transaction rolls back when it closes, which frees the lock).
func (db *DB) AbortWriter(e *pgwire.Error) bool {
	db.holderMu.Lock()
	h := db.holder
	if h == nil || h.aborting || h.terminate == nil {
		db.holderMu.Unlock()
		return false
	}
	h.aborting = true
	term := h.terminate
	db.holderMu.Unlock()
	term(e)
	return true
}

// Cancel implements pgwire.BackendSession.
func (s *Session) Cancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.canceled = true
		s.cancel()
		return
	}
	// Between the statements of a request (a Parse being analysed, the
	// step before an Execute): the request's next run is canceled, as
	// PostgreSQL's pending interrupt is; Idle drops it once the request
	// is answered, so a cancel that finds the session idle does nothing.
	s.cancelPending = true
}

// armCancel installs the cancel of the run that starts (s.mu not held);
// a cancel pending since the request began fires at once.
func (s *Session) armCancel(cancel context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancel, s.canceled = cancel, false
	if s.cancelPending {
		s.cancelPending, s.canceled = false, true
		cancel()
	}
}

// Idle implements pgwire.Idler: the request was answered.
func (s *Session) Idle() {
	s.mu.Lock()
	s.cancelPending = false
	s.mu.Unlock()
}

// Close rolls back an open transaction and returns the connection.
func (s *Session) Close() error {
	if s.adv != nil {
		s.adv.ReleaseAll()
	}
	s.db.listeners.unlisten(s, "*")
	s.dropNotes()
	s.committed = nil
	s.lazy = nil
	s.db.clearHolder(s)
	s.txDDL, s.marks = nil, nil
	s.closeCursors()
	s.endBlockResults()
	if s.inTx {
		s.forgetSchema(s.held)
		_ = s.held.exec("ROLLBACK")
		s.db.release(s.held)
		s.held, s.inTx = nil, false
		s.settleSchema()
	}
	if s.priv != nil {
		// Its temporary objects go with it, as on PostgreSQL.
		s.priv.close()
		s.priv = nil
	}
	return nil
}

// CopyFrom implements pgwire.CopyFromer with one INSERT per row in one
// transaction (the session's own when in a transaction block).
func (s *Session) CopyFrom(ctx context.Context, table string, columns []string, next func() ([]*string, bool, error)) (int64, error) {
	loc := s.zone() // a timestamptz without an offset is in the session's zone
	if err := s.startLazy(ctx); err != nil {
		return 0, err
	}
	own := !s.inTx
	c := s.held
	consumed := false // replicatedCommit released c
	if own {
		if s.db.repl != nil {
			if err := s.db.repl.Writable(); err != nil {
				return 0, err
			}
		}
		var err error
		if c, err = s.acquire(ctx, true); err != nil {
			return 0, err
		}
		defer func() {
			if !consumed {
				s.db.release(c)
			}
		}()
		if err := c.exec("BEGIN IMMEDIATE"); err != nil {
			return 0, mapError(err)
		}
	} else if c.ro {
		return 0, pgwire.Errorf("25006", "cannot execute COPY FROM in a read-only transaction")
	}
	fail := func(err error) (int64, error) {
		if own {
			_ = c.exec("ROLLBACK")
		}
		return 0, err
	}
	if !translateOff && len(columns) > 0 {
		for _, col := range tableColumnList(c, table) {
			for _, name := range columns {
				if col.Generated != "" && strings.EqualFold(name, col.Name) {
					return fail(&pgwire.Error{Code: "42P10", Message: fmt.Sprintf("column %q is a generated column", col.Name),
						Detail: "Generated columns cannot be used in COPY."})
				}
			}
		}
	}
	var n int64
	var stmt *sqlite3.SQLiteStmt
	width := -1
	args := []driver.NamedValue{}
	var copyCols []sqlpg.Column
	for {
		row, ok, err := next()
		if err != nil {
			return fail(err)
		}
		if !ok {
			break
		}
		if stmt == nil {
			width = len(row)
			q := "INSERT INTO " + quoteIdent(table)
			if len(columns) > 0 {
				if len(columns) != width {
					return fail(pgwire.Errorf("22P04", "COPY row has %d columns, expected %d", width, len(columns)))
				}
				qc := make([]string, len(columns))
				for i, col := range columns {
					qc[i] = quoteIdent(col)
				}
				q += " (" + strings.Join(qc, ", ") + ")"
			}
			q += " VALUES (" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
			if len(columns) > 0 && !translateOff {
				// Left-out serial columns draw from their sequences, as
				// in an INSERT (sqlpg numbers them).
				ph := make([]string, width)
				for i := range ph {
					ph[i] = fmt.Sprintf("$%d", i+1)
				}
				pgq := strings.TrimSuffix(q, strings.Repeat("?, ", width-1)+"?)") + strings.Join(ph, ", ") + ")"
				if tr, err := s.translate(c, pgq); err == nil && len(tr.Script) == 0 && tr.SQL != "" {
					q = tr.SQL
				}
			}
			if stmt, err = c.prepare(q); err != nil {
				return fail(mapError(err))
			}
			args = make([]driver.NamedValue, width)
			// The row's columns, in the order of its values.
			all := tableColumnList(c, table)
			copyCols = nil
			for _, col := range all {
				if col.Generated == "" {
					// COPY without a column list leaves generated
					// columns out, as SQLite's INSERT does.
					copyCols = append(copyCols, col)
				}
			}
			if len(columns) > 0 {
				copyCols = make([]sqlpg.Column, len(columns))
				for i, name := range columns {
					for _, col := range all {
						if strings.EqualFold(col.Name, name) {
							copyCols[i] = col
						}
					}
				}
			}
		}
		if len(row) != width {
			return fail(pgwire.Errorf("22P04", "COPY row %d has %d columns, expected %d", n+1, len(row), width))
		}
		for i, v := range row {
			args[i] = driver.NamedValue{Ordinal: i + 1}
			if v == nil {
				continue
			}
			args[i].Value = *v
			if i < len(copyCols) && !translateOff {
				// As an INSERT of the literal stores it: a boolean as
				// 1 / 0, a timestamptz in UTC (SQLite compares the text).
				val, err := sqlpg.CopyValueIn(copyCols[i], *v, loc)
				if err != nil {
					return fail(fmt.Errorf("COPY %s, line %d, column %s: %w", table, n+1, copyCols[i].Name, err))
				}
				args[i].Value = val
			}
		}
		if _, err := stmt.ExecContext(ctx, args); err != nil {
			return fail(fmt.Errorf("COPY %s, line %d: %w", table, n+1, mapError(err)))
		}
		n++
	}
	if own && s.db.repl != nil {
		// A COPY outside a block is a replicated transaction like any
		// other (certified in multi-master, shipped at its safeness in
		// a hot-standby pair) before it is acknowledged.
		consumed = true
		if err := s.db.replicatedCommit(ctx, c, ""); err != nil {
			return 0, err
		}
		return n, nil
	}
	if own {
		if err := c.exec("COMMIT"); err != nil {
			return fail(mapError(err))
		}
	}
	return n, nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func commandTag(st *Statement, n int64) string {
	if st.tag != "" {
		if st.tag == "SELECT" {
			return fmt.Sprintf("SELECT %d", n)
		}
		return st.tag
	}
	switch st.kind {
	case "INSERT", "REPLACE":
		return fmt.Sprintf("INSERT 0 %d", n)
	case "UPDATE":
		return fmt.Sprintf("UPDATE %d", n)
	case "DELETE":
		return fmt.Sprintf("DELETE %d", n)
	case "SELECT", "WITH", "VALUES", "TABLE", "PRAGMA", "EXPLAIN":
		return fmt.Sprintf("SELECT %d", n)
	case "CREATE", "DROP", "ALTER":
		w := st.words
		if len(w) > 1 {
			obj := w[1]
			if (obj == "UNIQUE" || obj == "TEMP" || obj == "TEMPORARY" || obj == "VIRTUAL") && len(w) > 2 {
				obj = w[2]
			}
			return st.kind + " " + obj
		}
	}
	return st.kind
}

type cmdResult struct{ tag string }

func (r *cmdResult) Columns() []pgwire.Column { return nil }
func (r *cmdResult) Next([]any) (bool, error) { return false, nil }
func (r *cmdResult) Tag() string              { return r.tag }
func (r *cmdResult) Close() error             { return nil }

type rowResult struct {
	types  []sqlpg.ColType // PostgreSQL types to format values as
	st     *Statement
	c      *conn
	rows   *sqlite3.SQLiteRows
	cols   []pgwire.Column
	vals   []driver.Value
	peeked bool
	eof    bool
	n      int64
	done   func()
	closed bool
	ended  bool // closed by the end of its transaction block
}

func (r *rowResult) Columns() []pgwire.Column { return r.cols }

// endBlockResults ends the results still running on the transaction
// block's connection before the block ends and the connection goes back
// to its pool: a statement that is not reset keeps its snapshot (and
// COMMIT fails under it), and a portal read after the block ended would
// run on a connection another session has. Reading one afterwards
// answers 34000, as PostgreSQL answers for a portal its transaction
// dropped.
func (s *Session) endBlockResults() {
	for _, r := range s.blockResults {
		if !r.closed {
			_ = r.Close()
			r.ended = true
		}
	}
	s.blockResults = nil
}

func (r *rowResult) Next(dst []any) (bool, error) {
	if r.ended {
		return false, pgwire.Errorf("34000", "portal does not exist: the transaction block it was opened in has ended")
	}
	if r.eof || r.closed {
		return false, nil
	}
	if r.peeked {
		r.peeked = false
	} else if err := r.rows.Next(r.vals); err != nil {
		if err == io.EOF {
			r.eof = true
			return false, nil
		}
		if s := r.st.s; s != nil && s.TxStatus() == 'I' {
			s.dropNotes() // the statement, its own transaction, failed
		}
		return false, mapError(err)
	} else if r.types != nil {
		normalizeRow(r.vals, r.types)
	}
	if len(dst) != len(r.vals) {
		return false, pgwire.Errorf(pgwire.CodeInternal, "tandem described %d result columns but the statement returned %d: describe the statement again", len(dst), len(r.vals))
	}
	for i, v := range r.vals {
		dst[i] = v
	}
	r.n++
	return true, nil
}

func (r *rowResult) Tag() string { return commandTag(r.st, r.n) }

func (r *rowResult) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.rows.Close()
	r.c.open.Add(-1)
	r.done()
	return mapErrorOrNil(err)
}

func mapErrorOrNil(err error) error {
	if err == nil {
		return nil
	}
	return mapError(err)
}

// mapError turns a SQLite error into a pgwire.Error with a SQLSTATE.
func mapError(err error) error {
	var pe *pgwire.Error
	if errors.As(err, &pe) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return &pgwire.Error{Code: pgwire.CodeQueryCanceled, Message: "canceling statement due to user request", Err: err}
	}
	var se sqlite3.Error
	if code, text, ok := sqlpg.Raised(err.Error()); ok {
		msg, detail, hint := sqlpg.SplitRaised(text)
		return &pgwire.Error{Code: code, Message: msg, Detail: detail, Hint: hint, Err: err}
	}
	if msg := err.Error(); strings.Contains(msg, sqlpg.ErrInvalidInput.Error()) {
		return &pgwire.Error{Code: "22P02", Message: msg, Err: err}
	} else if strings.Contains(msg, "division by zero") {
		return &pgwire.Error{Code: "22012", Message: "division by zero", Err: err}
	}
	if !errors.As(err, &se) {
		return &pgwire.Error{Code: pgwire.CodeInternal, Message: err.Error(), Err: err}
	}
	msg := se.Error()
	code := pgwire.CodeInternal
	switch se.Code {
	case sqlite3.ErrConstraint:
		switch se.ExtendedCode {
		case sqlite3.ErrConstraintUnique, sqlite3.ErrConstraintPrimaryKey:
			code = "23505"
			// "UNIQUE constraint failed: t.a, t.b": PostgreSQL's message,
			// with the table and the key's columns (the constraint's name
			// is looked up by the session: constraintNames).
			if ix, ok := strings.CutPrefix(msg, "UNIQUE constraint failed: index '"); ok {
				// An expression index: SQLite names the index (the
				// session finds its table).
				name := strings.TrimSuffix(ix, "'")
				return &pgwire.Error{Code: code, Message: fmt.Sprintf("duplicate key value violates unique constraint %q", name), Schema: "public",
					Constraint: name, Err: err}
			}
			if cols, ok := strings.CutPrefix(msg, "UNIQUE constraint failed: "); ok {
				table, names := "", []string{}
				for _, tc := range strings.Split(cols, ", ") {
					t, c, _ := strings.Cut(tc, ".")
					table, names = t, append(names, c)
				}
				return &pgwire.Error{Code: code, Message: "duplicate key value violates unique constraint", Schema: "public", Table: table,
					Column: strings.Join(names, ", "), Err: err}
			}
		case sqlite3.ErrConstraintForeignKey:
			code = "23503"
		case sqlite3.ErrConstraintNotNull:
			code = "23502"
			if tc, ok := strings.CutPrefix(msg, "NOT NULL constraint failed: "); ok {
				if t, c, ok := strings.Cut(tc, "."); ok {
					return &pgwire.Error{Code: code, Message: fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", c, t),
						Schema: "public", Table: t, Column: c, Err: err}
				}
			}
		case sqlite3.ErrConstraintCheck:
			code = "23514"
			if name, ok := strings.CutPrefix(msg, "CHECK constraint failed: "); ok {
				if le, ok := sqlpg.LimitError(name); ok {
					le.Err = err
					return le
				}
				return &pgwire.Error{Code: code, Message: fmt.Sprintf("new row violates check constraint %q", name), Constraint: name, Err: err}
			}
		default:
			code = "23000"
		}
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		code = "40001"
		msg = "could not serialize access: SQLite is busy (" + msg + ")"
	case sqlite3.ErrInterrupt:
		code, msg = pgwire.CodeQueryCanceled, "canceling statement due to user request"
	case sqlite3.ErrReadonly:
		code = "25006"
	case sqlite3.ErrTooBig:
		code = "54000"
	case sqlite3.ErrMismatch:
		// SQLite's only type check: a non-integer into an INTEGER
		// PRIMARY KEY, where PostgreSQL fails to read the integer.
		code, msg = "22P02", "invalid input syntax for type integer"
	case sqlite3.ErrRange:
		code = "22023"
	case sqlite3.ErrFull:
		code = "53100"
	case sqlite3.ErrError:
		switch {
		case strings.Contains(msg, "no such table"):
			code = "42P01"
			if name, ok := strings.CutPrefix(msg, "no such table: "); ok && !strings.ContainsAny(name, " \"") {
				msg = fmt.Sprintf("relation %q does not exist", strings.TrimPrefix(name, "main."))
			}
		case strings.Contains(msg, "duplicate column name"):
			code = "42701"
		case strings.HasPrefix(msg, "cannot modify ") && strings.HasSuffix(msg, " because it is a view"):
			name := strings.TrimSuffix(strings.TrimPrefix(msg, "cannot modify "), " because it is a view")
			return &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: fmt.Sprintf("writing to the view %q is not supported on the SQLite back end", name),
				Hint: "PostgreSQL writes through a simple view to its table; write to the table, or use a PostgreSQL back end", Err: errors.Join(err, sqlpg.ErrNotSupported)}
		case strings.HasPrefix(msg, "cannot rename columns of view "):
			return &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: "renaming a view's column is not supported on the SQLite back end",
				Hint: "recreate the view with the column named in its query (CREATE OR REPLACE VIEW ... AS SELECT x AS new_name ...)", Err: errors.Join(err, sqlpg.ErrNotSupported)}
		case strings.HasPrefix(msg, "misuse of aggregate"):
			// An aggregate where PostgreSQL allows none (WHERE, or an
			// outer query's aggregate inside a subquery there).
			code = "42803"
			msg = "aggregate functions are not allowed here (" + msg + ")"
		case strings.HasPrefix(msg, "misuse of window function"):
			code = "42P20"
			msg = "window functions are not allowed here (" + msg + ")"
		case strings.Contains(msg, "IN(...) element has"), strings.Contains(msg, "sub-select returns") && strings.Contains(msg, "expected"):
			code, msg = "42601", "unequal number of entries in row expressions ("+msg+")"
		case strings.HasPrefix(msg, "variable number must be between"):
			code, msg = "54000", "a statement on the SQLite back end takes at most 32766 parameters ("+msg+")"
		case strings.HasPrefix(msg, "circular reference: "):
			name := strings.TrimPrefix(msg, "circular reference: ")
			return &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", name),
				Hint: fmt.Sprintf("There is a WITH item named %q, but it cannot be referenced from this part of the query. Use WITH RECURSIVE, or re-order the WITH items to remove forward references.", name), Err: err}
		case strings.Contains(msg, "may not be used as a window function"):
			// min() OVER w: SQLite's scalar min of no arguments.
			code = "42883"
			msg = fmt.Sprintf("function %s does not exist as an aggregate or window function", strings.TrimSuffix(msg, " may not be used as a window function"))
		case strings.HasPrefix(msg, "no such window: "):
			code, msg = "42704", fmt.Sprintf("window %q does not exist", strings.TrimPrefix(msg, "no such window: "))
		case strings.HasPrefix(msg, "cannot join using column "):
			name, _, _ := strings.Cut(strings.TrimPrefix(msg, "cannot join using column "), " ")
			code, msg = "42703", fmt.Sprintf("column %q specified in USING clause does not exist in both tables", name)
		case strings.HasPrefix(msg, "use DROP VIEW to delete view "):
			name := strings.TrimPrefix(msg, "use DROP VIEW to delete view ")
			return &pgwire.Error{Code: "42809", Message: fmt.Sprintf("%q is not a table", name), Hint: "Use DROP VIEW to remove a view.", Err: err}
		case strings.HasPrefix(msg, "use DROP TABLE to delete table "):
			name := strings.TrimPrefix(msg, "use DROP TABLE to delete table ")
			return &pgwire.Error{Code: "42809", Message: fmt.Sprintf("%q is not a view", name), Hint: "Use DROP TABLE to remove a table.", Err: err}
		case strings.Contains(msg, "no such index"), strings.Contains(msg, "no such view"):
			code = "42704"
		case strings.Contains(msg, "has no column named"):
			code = "42703"
		case strings.Contains(msg, "values were supplied"):
			code = "42601"
		case strings.Contains(msg, "ORDER BY term out of range"), strings.Contains(msg, "GROUP BY term out of range"):
			code = "42P10"
		case strings.Contains(msg, "ORDER BY term does not match any column in the result set"):
			// ORDER BY of a UNION (or of grouping sets, run as one) by
			// a name that is no output column.
			code, msg = "42703", "a column in ORDER BY is not a column of the set operation's result"
		case strings.Contains(msg, "ON CONFLICT clause does not match"):
			code, msg = "42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification"
		case strings.Contains(msg, "ambiguous column name"):
			code = "42702"
		case strings.Contains(msg, "wrong number of arguments to function"):
			code = "42883"
			// PostgreSQL's words, and the function by the name the
			// client used (now is tandem's _pg_now).
			if name, ok := strings.CutPrefix(msg[strings.Index(msg, "wrong number of arguments to function"):], "wrong number of arguments to function "); ok {
				name = strings.TrimSuffix(strings.TrimPrefix(name, "_pg_"), "()")
				msg = fmt.Sprintf("function %s with this number of arguments does not exist", name)
			}
		case strings.Contains(msg, "cannot take square root"):
			code = "2201F"
		case strings.Contains(msg, "cannot take logarithm"):
			code = "2201E"
		case strings.Contains(msg, "no such column"):
			code = "42703"
			if name, ok := strings.CutPrefix(msg, "no such column: "); ok && strings.HasPrefix(name, `"`) {
				// "Nmae" - should this be a string literal in single-quotes?
				if i := strings.Index(name[1:], `"`); i >= 0 {
					msg = fmt.Sprintf("column %q does not exist", name[1:i+1])
				}
			} else if ok && !strings.ContainsAny(name, " \"") {
				if strings.Contains(name, ".") {
					msg = fmt.Sprintf("column %s does not exist", name) // PostgreSQL's form for t.c
				} else {
					msg = fmt.Sprintf("column %q does not exist", name)
				}
			}
		case strings.Contains(msg, "no such function"):
			code = "42883"
		case strings.Contains(msg, "already exists"), strings.Contains(msg, "there is already a"):
			code = "42P07"
		case strings.Contains(msg, "syntax error"), strings.Contains(msg, "incomplete input"), strings.Contains(msg, "unrecognized token"):
			code = "42601"
		case strings.Contains(msg, "cannot start a transaction within a transaction"):
			code = "25001"
		case strings.Contains(msg, "no such savepoint"):
			code = "3B001"
		case strings.Contains(msg, "do not have the same number of result columns"):
			code = "42601"
			op := "UNION"
			for _, o := range []string{"INTERSECT", "EXCEPT"} {
				if strings.Contains(msg, o) {
					op = o
				}
			}
			msg = "each " + op + " query must have the same number of columns"
		default:
			code = "42000"
		}
	}
	return &pgwire.Error{Code: code, Message: msg, Err: err}
}

func isDDL(kind string) bool {
	switch kind {
	case "CREATE", "DROP", "ALTER":
		return true
	}
	return false
}

// replicatedAutocommit runs one writing statement as its own replicated
// transaction (DDL as a DDL writeset).
// A session-local statement (local: a temporary object) replicates only
// the rows it wrote to permanent tables, if any.
func (s *Session) replicatedAutocommit(ctx context.Context, st *Statement, args []any, local bool) (pgwire.Result, error) {
	if err := s.db.repl.Writable(); err != nil {
		return nil, err
	}
	c, err := s.acquire(ctx, true)
	if err != nil {
		return nil, err
	}
	if err := c.exec("BEGIN IMMEDIATE"); err != nil {
		s.db.release(c)
		return nil, mapError(err)
	}
	s.held, s.inTx = c, true
	defer s.settleSchema()
	bigArgs := argsBytes(args) >= releaseTextMin
	res, err := s.executeOn(ctx, c, st, args)
	args = nil // SQLite has its own copy: see the collection below
	s.forgetSchema(c)
	s.held, s.inTx = nil, false
	if err != nil {
		_ = c.exec("ROLLBACK")
		s.db.release(c)
		return nil, err
	}
	// Drain rows (RETURNING) before committing.
	buf, tag, cols, err := drain(res)
	if err != nil {
		_ = c.exec("ROLLBACK")
		s.db.release(c)
		return nil, err
	}
	ddl := ""
	if (isDDL(st.kind) || st.ddl) && !local {
		// (st.ddl: DDL of another verb, COMMENT ON)
		ddl = st.sql
	} else if !st.releaseText() && bigArgs {
		// Large parameter values (the client's Bind message, which
		// pgwire no longer holds once they are handed over): collected
		// before the commit's copies of the row, as releaseText does.
		runtime.GC()
	}
	if err := s.db.replicatedCommit(ctx, c, ddl); err != nil {
		return nil, err
	}
	return &bufResult{cols: cols, rows: buf, tag: tag}, nil
}

func drain(res pgwire.Result) ([][]any, string, []pgwire.Column, error) {
	defer res.Close()
	cols := res.Columns()
	var out [][]any
	for cols != nil {
		row := make([]any, len(cols))
		ok, err := res.Next(row)
		if err != nil {
			return nil, "", nil, err
		}
		if !ok {
			break
		}
		out = append(out, row)
	}
	return out, res.Tag(), cols, nil
}

type bufResult struct {
	cols []pgwire.Column
	rows [][]any
	i    int
	tag  string
}

func (r *bufResult) Columns() []pgwire.Column { return r.cols }
func (r *bufResult) Next(dst []any) (bool, error) {
	if r.i >= len(r.rows) {
		return false, nil
	}
	copy(dst, r.rows[r.i])
	r.i++
	return true, nil
}
func (r *bufResult) Tag() string  { return r.tag }
func (r *bufResult) Close() error { return nil }

// tableColumnList reads a table's columns with their PostgreSQL types:
// from _tandem_columns where the translator recorded them, else by the
// declared SQLite type. nil when the table does not exist.
func tableColumnList(c *conn, table string) []sqlpg.Column {
	c.meta.current()
	cols, ok := c.meta.cols[table]
	if !ok {
		cols = readColumnList(c, table)
		if len(c.meta.cols) >= 256 {
			clear(c.meta.cols)
		}
		c.meta.cols[table] = cols
	}
	return slices.Clone(cols)
}

// readColumnList reads a table's columns from SQLite and tandem's metadata.
func readColumnList(c *conn, table string) []sqlpg.Column {
	meta := "_tandem_columns"
	if c.private {
		// The session's own connection: a temporary table (which hides
		// a permanent one of its name) is described by the session's
		// temporary metadata.
		meta = `(SELECT * FROM temp._tandem_temp_columns WHERE EXISTS (SELECT 1 FROM temp.sqlite_master WHERE type = 'table' AND name = ?1)
			UNION ALL SELECT * FROM main._tandem_columns WHERE NOT EXISTS (SELECT 1 FROM temp.sqlite_master WHERE type = 'table' AND name = ?1))`
	}
	rows, err := c.c.Query(`SELECT p.name, p.type, m.type_oid, m.typmod, m.identity, p.dflt_value IS NOT NULL, m.sequence IS NOT NULL, p.pk,
		CASE WHEN p.dflt_value LIKE '\_tandem\_nextval(%' ESCAPE '\' THEN m.sequence END, p.dflt_value, en.name, en.labels, p.hidden FROM pragma_table_xinfo(?1) p
		LEFT JOIN `+meta+` m ON m.table_name = ?1 AND m.column_name = p.name LEFT JOIN _tandem_enums en ON en.oid = m.type_oid
		WHERE p.hidden IN (0, 2, 3) ORDER BY p.cid`, []driver.Value{table})
	if err != nil {
		return nil
	}
	defer rows.Close()
	vals := make([]driver.Value, 13)
	var out []sqlpg.Column
	for rows.Next(vals) == nil {
		name, _ := vals[0].(string)
		decl, _ := vals[1].(string)
		col := sqlpg.Column{Name: name, Typmod: -1}
		col.Identity, _ = vals[4].(string)
		col.Default = vals[5] == int64(1)
		col.Serial = vals[6] == int64(1)
		col.PK, _ = vals[7].(int64)
		col.Sequence, _ = vals[8].(string)
		col.DefaultSQL, _ = vals[9].(string)
		if h, _ := vals[12].(int64); h == 2 || h == 3 {
			col.Generated = "s" // a generated column (hidden from pragma_table_info)
		}
		if name, ok := vals[10].(string); ok {
			labels, _ := vals[11].(string)
			col.Enum = &sqlpg.Enum{OID: uint32(vals[2].(int64)), Name: name, Labels: sqlpg.ParseEnumLabels(labels)}
		}
		if oid, ok := vals[2].(int64); ok && sqlpg.Types[uint32(oid)] != nil {
			col.Type = sqlpg.Types[uint32(oid)]
			if m, ok := vals[3].(int64); ok {
				col.Typmod = int32(m)
			}
		} else {
			col.Type = sqlpg.DeclType(decl)
		}
		out = append(out, col)
	}
	return out
}

// undedup undoes the ":N" SQLite appends to a repeated column name when
// it expands a subquery's * (a statement described as SELECT * FROM (q)
// WHERE 0): PostgreSQL repeats the name.
func undedup(names []string) []string {
	seen := map[string]bool{}
	for i, n := range names {
		if j := strings.LastIndexByte(n, ':'); j > 0 && seen[n[:j]] {
			if _, err := strconv.Atoi(n[j+1:]); err == nil {
				names[i] = n[:j]
			}
		}
		seen[names[i]] = true
	}
	return names
}

// numericText prints a numeric without a declared scale, which SQLite
// holds as a double: to 15 significant digits, the most a double keeps of
// any decimal, so that a value written is read back as written and
// arithmetic on such values prints as PostgreSQL's exact numeric does
// where the exact result fits in them (0.1 + 0.2 is 0.3, not
// 0.30000000000000004).
func numericText(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 15, 64), 64)
	if err != nil {
		r = f
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// normalizeRow formats values the way PostgreSQL prints their types: SQLite
// stores timestamps as text in whatever form a client wrote, booleans as
// 0/1, and numerics as integers or doubles.
func normalizeRow(vals []driver.Value, types []sqlpg.ColType) {
	for i, v := range vals {
		if v == nil || types[i].Type == nil {
			continue
		}
		switch types[i].Type.OID {
		case pgwire.OIDTimestamptz, pgwire.OIDTimestamp, pgwire.OIDDate:
			var tm time.Time
			switch x := v.(type) {
			case string:
				t, ok := sqlpg.ParseTime(x)
				if !ok {
					continue
				}
				tm = t
			case time.Time:
				tm = x
			default:
				continue
			}
			if types[i].Type.OID == pgwire.OIDTimestamptz {
				tm = tm.UTC()
			}
			vals[i] = tm
		case pgwire.OIDNumeric:
			mod := types[i].Typmod
			if mod < 4 {
				if f, ok := v.(float64); ok {
					vals[i] = numericText(f)
				}
				continue
			}
			scale := int((mod - 4) & 0xffff)
			switch x := v.(type) {
			case float64:
				vals[i] = sqlpg.FormatNumeric(x, scale)
			case int64:
				if scale > 0 {
					vals[i] = strconv.FormatInt(x, 10) + "." + strings.Repeat("0", scale)
				} else {
					vals[i] = strconv.FormatInt(x, 10)
				}
			}
		case 3802: // jsonb prints normalised
			if x, ok := v.(string); ok {
				if n, ok := sqlpg.NormalizeJSONB(x); ok {
					vals[i] = n
				}
			}
		case pgwire.OIDBPChar:
			if n := int(types[i].Typmod) - 4; n > 0 {
				if x, ok := v.(string); ok && utf8.RuneCountInString(x) < n {
					vals[i] = x + strings.Repeat(" ", n-utf8.RuneCountInString(x))
				}
			}
		case pgwire.OIDBool:
			switch x := v.(type) {
			case int64:
				vals[i] = x != 0
			case string:
				if b, err := strconv.ParseBool(x); err == nil {
					vals[i] = b
				} else if x == "t" || x == "f" {
					vals[i] = x == "t"
				}
			}
		}
	}
}

// acquire is db.acquire for this session: the session's own connection
// once it has one (taking the shared writer as the write lock for rw).
func (s *Session) acquire(ctx context.Context, rw bool) (*conn, error) {
	if s.priv == nil {
		c, err := s.db.acquire(ctx, rw)
		if c != nil {
			c.owner.Store(s)
		}
		return c, err
	}
	if rw {
		w, err := s.db.acquire(ctx, true)
		if err != nil {
			return nil, err
		}
		s.priv.token = w
	}
	return s.priv, nil
}

// ensurePrivate gives the session a connection of its own before it
// creates a temporary object.
func (s *Session) ensurePrivate() error {
	if s.priv != nil {
		return nil
	}
	if s.inTx {
		return pgwire.Errorf(pgwire.CodeFeatureNotSupported, "on the SQLite back end, create a session's first temporary object outside a transaction block (it gives the session a connection of its own)")
	}
	c, err := s.db.openConn(false)
	if err != nil {
		return err
	}
	c.private = true
	c.owner.Store(s)
	// The counters of the session's temporary serial columns.
	serials := map[string]int64{}
	if err := c.c.RegisterFunc("_tandem_temp_serial", func(col string) int64 {
		serials[col]++
		return serials[col]
	}, false); err != nil {
		c.close()
		return fmt.Errorf("sqlite: session functions: %w", err)
	}
	if err := c.exec(sqlpg.TempColumnsDDL); err != nil {
		c.close()
		return fmt.Errorf("sqlite: session metadata: %w", err)
	}
	s.priv = c
	return nil
}

// sessionLocal reports whether a schema statement only concerns the
// session's temporary objects (CREATE TEMP ..., or DROP / ALTER / CREATE
// INDEX / TRUNCATE of temporary tables): such a statement is never
// replicated (issue 19 item 5). creates is set for a statement that
// creates a temporary object. A statement naming temporary and permanent
// relations together is refused: neither half could replicate alone.
func (s *Session) sessionLocal(st *Statement) (local, creates bool, err error) {
	if !(isDDL(st.kind) || st.ddl || st.kind == "TRUNCATE") {
		return false, false, nil
	}
	temp, rels := sqlpg.DDLTargets(st.orig)
	if temp {
		return true, true, nil
	}
	if len(rels) == 0 || s.priv == nil {
		return false, false, nil
	}
	n := 0
	for _, r := range rels {
		if r.Schema != "" && r.Schema != "pg_temp" {
			continue
		}
		rows, err := s.priv.c.Query("SELECT count(*) FROM temp.sqlite_master WHERE type IN ('table', 'view', 'index') AND lower(name) = lower(?)", []driver.Value{r.Name})
		if err != nil {
			return false, false, mapError(err)
		}
		v := make([]driver.Value, 1)
		if rows.Next(v) == nil && v[0].(int64) > 0 {
			n++
		}
		rows.Close()
	}
	switch n {
	case 0:
		return false, false, nil
	case len(rels):
		return true, false, nil
	}
	return false, false, pgwire.Errorf(pgwire.CodeFeatureNotSupported, "in a replicated cluster, %s temporary and permanent relations in separate statements (only the permanent ones replicate)", st.kind)
}

// concurrently: CREATE [UNIQUE] INDEX CONCURRENTLY, DROP INDEX
// CONCURRENTLY, REINDEX ... CONCURRENTLY (words: the leading keywords).
func concurrently(words []string) bool {
	w := append(append([]string(nil), words...), "", "", "", "")
	switch w[0] {
	case "CREATE":
		return (w[1] == "INDEX" && w[2] == "CONCURRENTLY") || (w[1] == "UNIQUE" && w[2] == "INDEX" && w[3] == "CONCURRENTLY")
	case "DROP":
		return w[1] == "INDEX" && w[2] == "CONCURRENTLY"
	case "REINDEX":
		return w[2] == "CONCURRENTLY"
	}
	return false
}

// executePrepared runs PREPARE (the statement is checked as PostgreSQL
// does at PREPARE: an unknown table fails here) and DEALLOCATE.
func (s *Session) executePrepared(ctx context.Context, p *sqlpg.PreparedStmt) (pgwire.Result, error) {
	switch p.Kind {
	case "PREPARE":
		if _, dup := s.sqlPrepared[p.Name]; dup {
			return nil, pgwire.Errorf(pgwire.CodeDuplicatePStmt, "prepared statement %q already exists", p.Name)
		}
		st, err := s.Prepare(ctx, p.Query)
		if err != nil {
			return nil, err
		}
		if st, ok := st.(*Statement); ok && st.deferred != nil {
			return nil, st.deferred
		}
		if s.sqlPrepared == nil {
			s.sqlPrepared = map[string]*sqlpg.PreparedStmt{}
		}
		s.sqlPrepared[p.Name] = p
		return &cmdResult{tag: "PREPARE"}, nil
	default: // DEALLOCATE (pgwire answers it in a simple query)
		if p.All {
			s.DeallocateSQL("")
			return &cmdResult{tag: "DEALLOCATE ALL"}, nil
		}
		if !s.DeallocateSQL(p.Name) {
			return nil, pgwire.Errorf(pgwire.CodeUndefinedPStmt, "prepared statement %q does not exist", p.Name)
		}
		return &cmdResult{tag: "DEALLOCATE"}, nil
	}
}

// DeallocateSQL implements pgwire.SQLDeallocator.
func (s *Session) DeallocateSQL(name string) bool {
	if name == "" {
		clear(s.sqlPrepared)
		return true
	}
	_, ok := s.sqlPrepared[name]
	delete(s.sqlPrepared, name)
	return ok
}

// timeArg is a time parameter as tandem stores the parameter's type: a
// date or timestamp as its wall clock, a timestamptz (and a time whose
// type is not known) in UTC.
func timeArg(tm time.Time, oid uint32) string {
	switch oid {
	case pgwire.OIDDate:
		return tm.Format(sqlpg.DateLayout)
	case pgwire.OIDTimestamp:
		return tm.Format(sqlpg.TimestampLayout)
	}
	return tm.UTC().Format(sqlpg.TimestamptzLayout)
}

// executeDo runs a DO block as PostgreSQL does: in one transaction (its
// own, or the block the session is in), each handled exception undoing
// its block's statements first (a savepoint per block with handlers).
func (s *Session) executeDo(ctx context.Context, b *sqlpg.DoBlock) (pgwire.Result, error) {
	if err := s.inTransaction(ctx, func() error { return s.runDoBlock(ctx, b, 0) }); err != nil {
		return nil, err
	}
	return &cmdResult{tag: "DO"}, nil
}

// inTransaction runs body in the session's transaction block, or in one
// of its own that commits when body succeeds and rolls back when it fails
// (a DO block, a call of the session's function: one statement each).
func (s *Session) inTransaction(ctx context.Context, body func() error) error {
	own := !s.inTx && s.lazy == nil
	if own {
		if err := s.runSQL(ctx, "BEGIN"); err != nil {
			return err
		}
	}
	err := body()
	if own {
		end := "COMMIT"
		if err != nil {
			end = "ROLLBACK"
		}
		if e := s.runSQL(ctx, end); err == nil {
			err = e
		}
	}
	return err
}

func (s *Session) runDoBlock(ctx context.Context, b *sqlpg.DoBlock, depth int) error {
	if len(b.Handlers) == 0 {
		return s.runDoItems(ctx, b.Body, depth)
	}
	sp := fmt.Sprintf("_tandem_do_%d", depth)
	if err := s.runSQL(ctx, "SAVEPOINT "+sp); err != nil {
		return err
	}
	err := s.runDoItems(ctx, b.Body, depth)
	if err == nil {
		return s.runSQL(ctx, "RELEASE SAVEPOINT "+sp)
	}
	code := ""
	var pe *pgwire.Error
	if errors.As(err, &pe) {
		code = pe.Code
	}
	for _, h := range b.Handlers {
		if !handles(h.Codes, code) {
			continue
		}
		if e := s.runSQL(ctx, "ROLLBACK TO SAVEPOINT "+sp); e != nil {
			return e
		}
		if s.frame != nil {
			s.frame.caught = pe // GET STACKED DIAGNOSTICS reads it
		}
		if e := s.runSQL(ctx, "RELEASE SAVEPOINT "+sp); e != nil {
			return e
		}
		return s.runDoItems(ctx, h.Body, depth+1)
	}
	return err
}

// handles reports whether a handler's conditions catch SQLSTATE code:
// the code itself, its class (a code ending in 000), or OTHERS ("") for
// anything but a cancel.
func handles(codes []string, code string) bool {
	for _, c := range codes {
		switch {
		case c == "" && code != pgwire.CodeQueryCanceled:
			return true
		case c == code:
			return true
		case len(c) == 5 && strings.HasSuffix(c, "000") && len(code) == 5 && c[:2] == code[:2]:
			return true
		}
	}
	return false
}

func (s *Session) runDoItems(ctx context.Context, items []sqlpg.DoItem, depth int) error {
	for _, it := range items {
		switch {
		case it.SQL != "" && it.Into != "":
			if err := s.runInto(ctx, it.SQL, it.Into); err != nil {
				return err
			}
		case it.SQL != "":
			if err := s.runSQL(ctx, it.SQL); err != nil {
				return err
			}
		case len(it.Diag) > 0:
			if err := s.getDiagnostics(it.Diag); err != nil {
				return err
			}
		case it.Block != nil:
			if err := s.runDoBlock(ctx, it.Block, depth+1); err != nil {
				return err
			}
		case it.Raise != nil:
			if it.Raise.Error {
				return &pgwire.Error{Code: it.Raise.Code, Message: it.Raise.Message}
			}
		case it.If != nil:
			ran := false
			for i, cond := range it.If.Conds {
				v, err := s.querySQL(ctx, "SELECT ("+cond+")")
				if err != nil {
					return err
				}
				if truthy(v) {
					if err := s.runDoItems(ctx, it.If.Bodies[i], depth); err != nil {
						return err
					}
					ran = true
					break
				}
			}
			if !ran {
				if err := s.runDoItems(ctx, it.If.Else, depth); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case int64:
		return x != 0
	case string:
		return x == "t" || x == "true" || x == "1"
	case []byte:
		return string(x) == "t" || string(x) == "true" || string(x) == "1"
	}
	return false
}

// runSQL runs one statement of the session's and drops its rows.
func (s *Session) runSQL(ctx context.Context, sql string) error {
	_, err := s.querySQL(ctx, sql)
	return err
}

// querySQL runs one statement of the session's: the first value of its
// first row, if any.
func (s *Session) querySQL(ctx context.Context, sql string) (any, error) {
	st, err := s.Prepare(ctx, sql)
	if err != nil {
		return nil, err
	}
	res, err := s.Execute(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var first any
	row := make([]any, len(res.Columns()))
	for n := 0; ; n++ {
		ok, err := res.Next(row)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if n == 0 && len(row) > 0 {
			first = row[0]
		}
	}
	return first, nil
}

// IsSequence implements sqlpg.SequenceLister.
func (sc schema) IsSequence(name string) bool {
	return sc.sequences()[name]
}

// SequenceNames implements sqlpg.SequenceNamer.
func (sc schema) SequenceNames() []string {
	return slices.Collect(maps.Keys(sc.sequences()))
}

// sequences: the database's sequences by name, cached at the schema
// version (CREATE and DROP SEQUENCE, and serial columns, are DDL).
func (sc schema) sequences() map[string]bool {
	m := &sc.c.meta
	m.current()
	if m.seqs != nil {
		return m.seqs
	}
	seqs := map[string]bool{}
	rows, err := sc.c.c.Query(`SELECT name FROM main._tandem_sequences`, nil)
	if err != nil {
		return seqs // not kept: the next statement asks again
	}
	defer rows.Close()
	vals := make([]driver.Value, 1)
	for rows.Next(vals) == nil {
		if name, ok := vals[0].(string); ok {
			seqs[name] = true
		}
	}
	m.seqs = seqs
	return seqs
}

// UniqueKeys are the column lists of a table's unique indexes that are
// neither partial nor on expressions (the primary key's among them,
// unless it is the rowid), for sqlpg's foreign-key checks.
// ConstraintKey is the columns of table's primary key or unique
// constraint name, in order (nil when it has none of that name).
func (sc schema) ConstraintKey(table, name string) []string {
	rows, err := sc.c.c.Query(`SELECT column_name FROM _is_key_column_usage WHERE lower(table_name) = lower(?) AND constraint_name = ?
		AND position_in_unique_constraint IS NULL ORDER BY ordinal_position`, []driver.Value{table, name})
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	vals := make([]driver.Value, 1)
	for rows.Next(vals) == nil {
		out = append(out, asString(vals[0]))
	}
	return out
}

func (sc schema) UniqueKeys(table string) [][]string {
	rows, err := sc.c.c.Query(`SELECT il.name, ii.name FROM pragma_index_list(?) il, pragma_index_info(il.name) ii
		WHERE il."unique" = 1 AND il.partial = 0 ORDER BY il.seq, ii.seqno`, []driver.Value{table})
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out [][]string
	var last string
	expr := false
	vals := make([]driver.Value, 2)
	for rows.Next(vals) == nil {
		idx := asString(vals[0])
		if idx != last || len(out) == 0 {
			if expr && len(out) > 0 {
				out = out[:len(out)-1]
			}
			out, last, expr = append(out, nil), idx, false
		}
		col, ok := vals[1].(string)
		if !ok {
			expr = true // an expression: no column list to match
			continue
		}
		out[len(out)-1] = append(out[len(out)-1], col)
	}
	if expr && len(out) > 0 {
		out = out[:len(out)-1]
	}
	return out
}

// LikeSource implements sqlpg.LikeSourcer: what CREATE TABLE ... (LIKE
// table) copies besides the columns (nil: no such table).
func (sc schema) LikeSource(table string) *sqlpg.LikeSource {
	create, _, _ := sc.TableDef(table)
	if create == "" {
		return nil
	}
	ls := &sqlpg.LikeSource{Create: create, NotNull: map[string]bool{}, Comments: map[string]string{}}
	query := func(sql string, n int, each func([]driver.Value)) {
		rows, err := sc.c.c.Query(sql, []driver.Value{table})
		if err != nil {
			return
		}
		defer rows.Close()
		vals := make([]driver.Value, n)
		for rows.Next(vals) == nil {
			each(vals)
		}
	}
	query(`SELECT name FROM pragma_table_info(?1) WHERE "notnull" OR pk > 0`, 1, func(v []driver.Value) { ls.NotNull[asString(v[0])] = true })
	query(`SELECT il.name FROM pragma_index_list(?1) il WHERE il.origin = 'u' ORDER BY length(il.name), il.name`, 1, func(v []driver.Value) {
		var cols []string
		query2, err := sc.c.c.Query(`SELECT name FROM pragma_index_info(?) ORDER BY seqno`, []driver.Value{asString(v[0])})
		if err != nil {
			return
		}
		vals := make([]driver.Value, 1)
		for query2.Next(vals) == nil {
			cols = append(cols, asString(vals[0]))
		}
		query2.Close()
		ls.Uniques = append(ls.Uniques, cols)
	})
	kinds := map[string]string{}
	query(`SELECT name, kind FROM main._tandem_constraints WHERE table_name = ?1`, 2, func(v []driver.Value) { kinds[asString(v[0])] = asString(v[1]) })
	query(`SELECT name, sql FROM main.sqlite_schema WHERE type = 'index' AND tbl_name = ?1 AND sql IS NOT NULL ORDER BY rowid`, 2, func(v []driver.Value) {
		ls.Indexes = append(ls.Indexes, sqlpg.LikeIndex{SQL: asString(v[1]), Kind: kinds[asString(v[0])]})
	})
	query(`SELECT column_name, comment FROM main._tandem_comments WHERE kind = 'col' AND name = ?1 AND comment IS NOT NULL`, 2, func(v []driver.Value) {
		ls.Comments[asString(v[0])] = asString(v[1])
	})
	return ls
}

// Matviews implements sqlpg.MatviewLister (cached per connection at the
// schema version: whether a view is populated changes by DDL only).
func (sc schema) Matviews() map[string]sqlpg.Matview {
	if !sc.c.private {
		sc.c.meta.current()
		if sc.c.meta.mvs != nil {
			return sc.c.meta.mvs
		}
	}
	out := map[string]sqlpg.Matview{}
	rows, err := sc.c.c.Query(`SELECT mv.name, mv.query, mv.populated,
			EXISTS (SELECT 1 FROM pragma_index_list(mv.name) il WHERE il."unique" AND NOT il.partial)
		FROM main._tandem_matviews mv`, nil)
	if err != nil {
		return out // a database from before materialized views, read only
	}
	defer rows.Close()
	vals := make([]driver.Value, 4)
	for rows.Next(vals) == nil {
		out[asString(vals[0])] = sqlpg.Matview{Query: asString(vals[1]), Populated: vals[2] == int64(1), UniqueIndex: vals[3] == int64(1)}
	}
	if !sc.c.private {
		sc.c.meta.mvs = out
	}
	return out
}
