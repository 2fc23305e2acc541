package pgwire

import "context"

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
