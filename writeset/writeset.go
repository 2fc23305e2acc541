package writeset

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid is returned (wrapped) by Validate and by the SQL helpers for a
// writeset or row that breaks the rules documented on Row and Writeset.
var ErrInvalid = errors.New("writeset: invalid")

// Op is what a row change did. The numeric values are part of the encoding;
// never reorder.
type Op uint8

// The operations. The zero Op is invalid, so a forgotten field is caught.
const (
	OpInsert Op = 1
	OpUpdate Op = 2
	OpDelete Op = 3
	// OpDDL marks a row of a DDL writeset: it names a table the statement in
	// Writeset.DDL creates, alters or drops, and carries no key or image. It
	// lets placement filtering (raidb-2/0) and certification know which
	// tables a DDL record touches.
	OpDDL Op = 4
	// OpInsertRow and OpDeleteRow are the changes of a table without a
	// primary key, identified by its whole row (PostgreSQL's REPLICA
	// IDENTITY FULL): insert this row; delete one row equal to this image
	// (NULLs equal). An update is a delete of the old image and an insert
	// of the new one. Cols and After hold the image; KeyCols and Key are
	// empty.
	OpInsertRow Op = 5
	OpDeleteRow Op = 6
)

// String returns the SQL-ish name of the operation.
func (o Op) String() string {
	switch o {
	case OpInsert:
		return "insert"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	case OpDDL:
		return "ddl"
	case OpInsertRow:
		return "insert-row"
	case OpDeleteRow:
		return "delete-row"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Valid reports whether o is one of the defined operations.
func (o Op) Valid() bool { return o >= OpInsert && o <= OpDeleteRow }

// Row is one changed row.
//
// Rules (checked by Validate, and by Decode on every decoded writeset):
//   - Table is the table name as stored in the back end's catalog, optionally
//     schema-qualified ("public.subscriber"); it is non-empty and has no NUL.
//   - KeyCols are the primary-key column names, Key the primary-key values in
//     the same order (both non-empty, no NULL key value). For an update Key is
//     the key the row had before the update, so an update that changes the
//     primary key is still addressable; for an insert it is the new key.
//   - For OpInsert and OpUpdate, Cols and After hold the full after-image:
//     every column of the row, After[i] the value of Cols[i]; Cols contains
//     every key column; for an insert the after-image key equals Key.
//   - For OpDelete, Cols and After are nil.
//   - For OpDDL (only in a DDL writeset), only Table is set.
//
// KeyCols is an addition to the minimal (Table, Op, Key, Cols, After) shape:
// with it a writeset is self-describing, so a node can build DELETE and
// key-changing UPDATE statements without a schema cache that would have to
// follow DDL in GSN order.
type Row struct {
	Table   string
	Op      Op
	KeyCols []string
	Key     []Value
	Cols    []string
	After   []Value // nil for a delete
}

// Writeset is what one committed update transaction changed, or one DDL
// statement, with its place in the global order.
type Writeset struct {
	// GSN is the global sequence number: the gap-free total order of
	// committed update transactions. Zero until the writeset is sequenced.
	GSN uint64
	// Epoch is the cluster-map epoch under which the writeset was committed.
	Epoch uint64
	// Origin is the id of the node that ran the transaction.
	Origin string
	// Rows are the changed rows, in the order the transaction changed them.
	Rows []Row
	// DDL is non-empty for a DDL record: the statement every node runs, in
	// GSN order. A DDL writeset's Rows (possibly none) are OpDDL rows naming
	// the tables it touches.
	DDL string
	// Session tags the client session that committed it (the router's
	// tag, through which a session whose COMMIT was in flight at a
	// failover learns from the new primary whether it was applied); empty
	// for sessions that came without one.
	Session string
	// Encoded, when set, holds the rows already encoded (in place of
	// Rows, which is then empty): a producer that writes a large value
	// straight into its encoding sets it (see Encoder). Decode never sets
	// it.
	Encoded *Encoder
}

// IsDDL reports whether ws is a DDL record.
func (ws *Writeset) IsDDL() bool { return ws.DDL != "" }

// Validate checks the rules documented on Row and Writeset. The error wraps
// ErrInvalid and names the offending row.
func (ws *Writeset) Validate() error {
	if ws == nil {
		return fmt.Errorf("%w: nil writeset", ErrInvalid)
	}
	if strings.IndexByte(ws.Origin, 0) >= 0 {
		return fmt.Errorf("%w: origin contains NUL", ErrInvalid)
	}
	for i := range ws.Rows {
		r := &ws.Rows[i]
		var err error
		if ws.IsDDL() && r.Op == OpDDL {
			err = r.validateDDL()
		} else {
			err = r.Validate()
		}
		if err != nil {
			return fmt.Errorf("row %d (%s %q): %w", i, r.Op, r.Table, err)
		}
	}
	return nil
}

func (r *Row) validateDDL() error {
	if r.Op != OpDDL {
		return fmt.Errorf("%w: a DDL writeset may hold only %s rows", ErrInvalid, OpDDL)
	}
	if err := checkIdent("table", r.Table); err != nil {
		return err
	}
	if r.KeyCols != nil || r.Key != nil || r.Cols != nil || r.After != nil {
		return fmt.Errorf("%w: a %s row carries no key or image", ErrInvalid, OpDDL)
	}
	return nil
}

// Validate checks one data row (OpInsert, OpUpdate, OpDelete) against the
// rules documented on Row.
func (r *Row) Validate() error {
	switch r.Op {
	case OpInsert, OpUpdate, OpDelete:
	case OpInsertRow, OpDeleteRow:
		return r.validateFullRow()
	case OpDDL:
		return fmt.Errorf("%w: %s row outside a DDL writeset", ErrInvalid, OpDDL)
	default:
		return fmt.Errorf("%w: bad operation %s", ErrInvalid, r.Op)
	}
	if err := checkIdent("table", r.Table); err != nil {
		return err
	}
	if len(r.KeyCols) == 0 {
		return fmt.Errorf("%w: no primary key (replicated tables need one)", ErrInvalid)
	}
	if len(r.Key) != len(r.KeyCols) {
		return fmt.Errorf("%w: %d key values for %d key columns", ErrInvalid, len(r.Key), len(r.KeyCols))
	}
	if err := checkCols("key column", r.KeyCols); err != nil {
		return err
	}
	for i, v := range r.Key {
		if v.IsNull() {
			return fmt.Errorf("%w: key column %q is NULL", ErrInvalid, r.KeyCols[i])
		}
	}
	if r.Op == OpDelete {
		if r.Cols != nil || r.After != nil {
			return fmt.Errorf("%w: a delete has no after-image", ErrInvalid)
		}
		return nil
	}
	if len(r.Cols) == 0 {
		return fmt.Errorf("%w: %s without an after-image", ErrInvalid, r.Op)
	}
	if len(r.After) != len(r.Cols) {
		return fmt.Errorf("%w: %d after-image values for %d columns", ErrInvalid, len(r.After), len(r.Cols))
	}
	if err := checkCols("column", r.Cols); err != nil {
		return err
	}
	for i, kc := range r.KeyCols {
		j := slices.Index(r.Cols, kc)
		if j < 0 {
			return fmt.Errorf("%w: key column %q missing from the after-image", ErrInvalid, kc)
		}
		if r.Op == OpInsert && r.After[j] != r.Key[i] {
			return fmt.Errorf("%w: insert key %s differs from after-image %s for %q", ErrInvalid, r.Key[i], r.After[j], kc)
		}
	}
	return nil
}

// validateFullRow checks a row of a table without a primary key: no key,
// a whole image (NULLs allowed).
func (r *Row) validateFullRow() error {
	if err := checkIdent("table", r.Table); err != nil {
		return err
	}
	if len(r.KeyCols) != 0 || len(r.Key) != 0 {
		return fmt.Errorf("%w: a %s row has no key", ErrInvalid, r.Op)
	}
	if len(r.Cols) == 0 {
		return fmt.Errorf("%w: %s without an image", ErrInvalid, r.Op)
	}
	if len(r.After) != len(r.Cols) {
		return fmt.Errorf("%w: %d image values for %d columns", ErrInvalid, len(r.After), len(r.Cols))
	}
	return checkCols("column", r.Cols)
}

// keyChanged reports whether an update's after-image moves the row to a new
// primary key. It assumes a valid row.
func (r *Row) keyChanged() bool {
	for i, kc := range r.KeyCols {
		if j := slices.Index(r.Cols, kc); j >= 0 && r.After[j] != r.Key[i] {
			return true
		}
	}
	return false
}

func checkIdent(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s name", ErrInvalid, what)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%w: %s name %q contains NUL", ErrInvalid, what, s)
	}
	return nil
}

func checkCols(what string, cols []string) error {
	for i, c := range cols {
		if err := checkIdent(what, c); err != nil {
			return err
		}
		if slices.Contains(cols[:i], c) {
			return fmt.Errorf("%w: duplicate %s %q", ErrInvalid, what, c)
		}
	}
	return nil
}

// ApplyError is a writeset a node's back end refused to apply: one of its
// statements failed (an object the node has and the writeset's origin did
// not, a constraint the node's data breaks). Applying it again gives the
// same answer, so a standby stops following instead of retrying; the
// back ends return it, the node reports it. Transient failures (a lost
// server connection, a busy database) are not ApplyErrors.
type ApplyError struct {
	GSN       uint64
	Statement string // the statement that failed (DDL text or row SQL)
	Err       error
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("cannot apply GSN %d: statement %q: %v", e.GSN, e.Statement, e.Err)
}

func (e *ApplyError) Unwrap() error { return e.Err }
