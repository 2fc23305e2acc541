package pgwire

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Error is an error with a SQLSTATE, sent to clients as ErrorResponse.
type Error struct {
	Severity string // ERROR (default) or FATAL
	Code     string
	Message  string
	Detail   string
	Hint     string
	Position int32
	// The object the error is about (ErrorResponse's fields s, t, c, n):
	// ORMs read them to tell which column a constraint violation names.
	Schema, Table, Column, Constraint string
	Err                               error
}

func (e *Error) Error() string {
	if e.Hint != "" {
		return e.Message + " (" + e.Hint + ")"
	}
	return e.Message
}

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error with a SQLSTATE.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// SQLSTATEs used by tandem itself.
const (
	CodeProtocolViolation     = "08P01"
	CodeConnectionFailure     = "08006"
	CodeFeatureNotSupported   = "0A000"
	CodeInvalidPassword       = "28P01"
	CodeInvalidAuth           = "28000"
	CodeQueryCanceled         = "57014"
	CodeAdminShutdown         = "57P01"
	CodeCannotConnectNow      = "57P03"
	CodeInFailedTx            = "25P02"
	CodeDuplicatePStmt        = "42P05"
	CodeUndefinedPStmt        = "26000"
	CodeUndefinedCursor       = "34000"
	CodeSyntax                = "42601"
	CodeInternal              = "XX000"
	CodeTooManyConnections    = "53300"
	CodeOutOfMemory           = "53200"
	CodeIdleInTxTimeout       = "25P03"
	CodeIdleSessionTimeout    = "57P05"
	CodeProgramLimitExceeded  = "54000"
	CodeInsufficientPrivilege = "42501"
)

// ToErrorResponse converts any error into the message a client sees. A
// PostgreSQL server error keeps every field; tandem errors keep their
// SQLSTATE; anything else is XX000.
func ToErrorResponse(err error) *pgproto3.ErrorResponse {
	var te *Error
	if errors.As(err, &te) {
		sev := te.Severity
		if sev == "" {
			sev = "ERROR"
		}
		return &pgproto3.ErrorResponse{Severity: sev, SeverityUnlocalized: sev, Code: te.Code, Message: te.Message, Detail: te.Detail, Hint: te.Hint, Position: te.Position,
			SchemaName: te.Schema, TableName: te.Table, ColumnName: te.Column, ConstraintName: te.Constraint}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &pgproto3.ErrorResponse{Severity: pe.Severity, SeverityUnlocalized: pe.SeverityUnlocalized, Code: pe.Code, Message: pe.Message, Detail: pe.Detail, Hint: pe.Hint,
			Position: pe.Position, InternalPosition: pe.InternalPosition, InternalQuery: pe.InternalQuery, Where: pe.Where,
			SchemaName: pe.SchemaName, TableName: pe.TableName, ColumnName: pe.ColumnName, DataTypeName: pe.DataTypeName,
			ConstraintName: pe.ConstraintName, File: pe.File, Line: pe.Line, Routine: pe.Routine}
	}
	return &pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: CodeInternal, Message: err.Error()}
}
