package pgwire

import (
	"context"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Backend is a database that cannot speak the protocol itself (SQLite):
// pgwire's executing server runs the protocol and calls it. Declared here,
// where it is used; backend/sqlite implements it.
type Backend interface {
	// NewSession opens the back-end side of one client session.
	NewSession(ctx context.Context, user, database string) (BackendSession, error)
	// ParameterStatus lists the values announced at startup.
	ParameterStatus() [][2]string
}

// BackendSession runs one client's statements. Transaction control arrives
// as statements (BEGIN, COMMIT, ROLLBACK, SAVEPOINT ...).
type BackendSession interface {
	// Prepare parses one statement ($1-style parameters).
	Prepare(ctx context.Context, sql string) (Statement, error)
	// Execute runs a prepared statement with decoded parameter values
	// (nil, int64, float64, bool, string, []byte, time.Time).
	Execute(ctx context.Context, st Statement, args []any) (Result, error)
	// TxStatus is 'I' idle or 'T' in a transaction block.
	TxStatus() byte
	// Cancel interrupts the running statement (from another goroutine).
	Cancel()
	// Close rolls back an open transaction and releases everything.
	Close() error
}

// Statement is a parsed statement.
type Statement interface {
	SQL() string
	NumParams() int
	// Describe returns the result columns without side effects; nil when
	// the statement returns no rows.
	Describe(ctx context.Context) ([]Column, error)
	Close() error
}

// OneShot is implemented by statements that can let go of their text
// once executed: a simple Query's statement runs once, and is told so
// before it runs (SetOneShot), so a back end may release a large
// statement's text (and the message it is read from) before its commit,
// rather than hold it through the commit's own copies of the data.
type OneShot interface {
	SetOneShot()
}

// Result is a running statement's output.
type Result interface {
	// Columns of the rows; nil for a command without rows.
	Columns() []Column
	// Next fills dst (len(Columns())) with the next row.
	Next(dst []any) (bool, error)
	// Tag is the CommandComplete tag, valid once Next returned false.
	Tag() string
	Close() error
}

// LostSession is implemented by sessions whose back-end connection can end
// under them (PostgreSQL: pg_terminate_backend, a server restart). Lost
// reports that it did; the executor then ends that client session, and only
// that one, with FATAL 57P01.
type LostSession interface {
	Lost() bool
}

// CopyFromer is implemented by sessions that load COPY FROM STDIN rows.
type CopyFromer interface {
	// CopyFrom inserts rows into table (columns may be nil: all, in
	// order). next returns the next row's text values (nil pointer is
	// NULL), or ok=false at the end.
	CopyFrom(ctx context.Context, table string, columns []string, next func() (row []*string, ok bool, err error)) (int64, error)
}

// RawSession is implemented by sessions on a back end that speaks the
// protocol's value formats itself (PostgreSQL): parameters go to it as the
// client sent them, and its rows hold Raw values already in the formats the
// client asked for, so nothing is re-typed on the way.
type RawSession interface {
	ExecuteRaw(ctx context.Context, st Statement, params [][]byte, paramFormats, resultFormats []int16) (Result, error)
}

// TypedPreparer is implemented by sessions whose back end types parameters
// itself (PostgreSQL): Parse's parameter type OIDs go to it as the client
// sent them (0: let the server infer), and the statement's ParamOIDs are the
// server's answer, so binary parameters are read with the client's types.
type TypedPreparer interface {
	PrepareTyped(ctx context.Context, sql string, paramOIDs []uint32) (Statement, error)
}

// PortalDescriber is implemented by sessions whose back end holds portals
// of its own (cursors made with DECLARE): Describe of a portal the executor
// does not know asks the back end. ok=false: no such portal there either.
type PortalDescriber interface {
	DescribePortal(ctx context.Context, name string) (cols []Column, ok bool, err error)
}

// CopyStreamer is implemented by sessions on a back end that runs COPY
// itself (PostgreSQL): the statement goes to it as the client wrote it, and
// the COPY sub-protocol is relayed message by message (every form and
// format the server accepts). It returns the CommandComplete tag.
type CopyStreamer interface {
	Copy(ctx context.Context, sql string, client CopyClient) (tag string, err error)
}

// CopyClient is the client's side of a relayed COPY.
type CopyClient interface {
	// Send passes a server message (CopyInResponse, CopyOutResponse,
	// CopyData, CopyDone) to the client; the executor buffers and flushes.
	Send(msg pgproto3.BackendMessage) error
	// Flush writes what Send buffered (before waiting for copy-in data).
	Flush() error
	// Receive returns the client's next COPY message: *pgproto3.CopyData,
	// *pgproto3.CopyDone or *pgproto3.CopyFail (Flush and Sync are skipped,
	// as PostgreSQL does during copy-in). The message is valid until the
	// next Receive.
	Receive() (pgproto3.FrontendMessage, error)
}

// PortalExecutor is implemented by raw sessions that can keep a portal on
// the back end: Execute with a row limit (fetch) then reads the result
// chunk by chunk instead of all at once.
type PortalExecutor interface {
	ExecutePortal(ctx context.Context, st Statement, params [][]byte, paramFormats, resultFormats []int16, fetch int) (Result, error)
}

// Raw is a value already encoded in its column's result format.
type Raw []byte

// ParamTyper is implemented by statements that can infer their parameter
// types; 0 means unspecified.
type ParamTyper interface {
	ParamOIDs() []uint32
}

// Column describes a result column.
type Column struct {
	Name string
	OID  uint32
}

// Type OIDs tandem uses.
const (
	OIDBool        = 16
	OIDBytea       = 17
	OIDInt8        = 20
	OIDInt2        = 21
	OIDInt4        = 23
	OIDText        = 25
	OIDFloat4      = 700
	OIDFloat8      = 701
	OIDUnknown     = 705
	OIDVarchar     = 1043
	OIDBPChar      = 1042
	OIDDate        = 1082
	OIDTimestamp   = 1114
	OIDTimestamptz = 1184
	OIDNumeric     = 1700
)

// FirstEnumOID: a back end that numbers its enum types from here (the
// SQLite back end's CREATE TYPE ... AS ENUM) gets them sent as
// PostgreSQL sends an enum: its label, in the binary format too, and a
// parameter of the type read as its label.
const FirstEnumOID = 900000

// IsEnumOID reports whether oid is such an enum type.
func IsEnumOID(oid uint32) bool { return oid >= FirstEnumOID && oid < FirstEnumOID+1<<20 }
