package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
)

// SQL cursors (DECLARE, FETCH, MOVE, CLOSE) live in the session, as
// PostgreSQL keeps them in the backend: a cursor is its query's running
// result on the transaction block's connection, read on by FETCH. WITH
// HOLD cursors are materialized when their block commits (PostgreSQL does
// the same, into a tuplestore), or at once when declared outside a block;
// SCROLL cursors are materialized when declared, so they can move in any
// direction. Others scan forward only (55000 otherwise, as PostgreSQL's NO
// SCROLL cursors).

// cursor is one SQL cursor of a session.
type cursor struct {
	name   string
	cols   []pgwire.Column
	res    pgwire.Result // running (nil once materialized)
	rows   [][]any       // materialized: rows base+1 .. base+len(rows)
	base   int64
	pos    int64 // PostgreSQL's position: 0 before the first row, n+1 after the last
	end    bool  // pos is past the last row (streaming: its count is pos-1)
	hold   bool
	scroll bool
	// held: what the materialized rows took of the node's memory budget
	// (limits.message_memory), returned when the cursor is dropped.
	held []func()
}

// materialized reports whether every row left is in memory.
func (c *cursor) materialized() bool { return c.res == nil }

// last is the number of rows of a materialized cursor.
func (c *cursor) last() int64 { return c.base + int64(len(c.rows)) }

// materialize reads what is left of a running cursor into memory, taking
// its size from the node's memory budget as it grows (a chunk at a time),
// so cursors kept open cannot take more than limits.message_memory
// together with the messages being run.
func (c *cursor) materialize(ctx context.Context) error {
	if c.res == nil {
		return nil
	}
	res := c.res
	c.res = nil
	defer res.Close()
	c.base, c.rows = c.pos, nil
	if c.end {
		c.base = c.pos - 1
		return nil
	}
	var size, reserved int64
	budget := pgwire.MemoryBudgetFrom(ctx)
	for {
		row := make([]any, len(c.cols))
		ok, err := res.Next(row)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		c.rows = append(c.rows, row)
		size += rowBytes(row)
		if size > reserved && budget != nil {
			release, err := budget.Reserve(materializeChunk, fmt.Sprintf("keeping the rows of cursor %q", c.name))
			if err != nil {
				c.release()
				return err
			}
			c.held = append(c.held, release)
			reserved += materializeChunk
		}
		if size > maxMaterialized {
			c.release()
			return &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
				Message: fmt.Sprintf("cursor %q: more than %d MiB of rows to keep in memory (a WITH HOLD or SCROLL cursor is materialized on the SQLite back end)", c.name, maxMaterialized>>20),
				Hint:    "declare it without HOLD and SCROLL inside a transaction block, where it streams (Django: run iterator() inside transaction.atomic(), or set DISABLE_SERVER_SIDE_CURSORS)"}
		}
	}
}

// materializeChunk is how much of the memory budget a materialized
// cursor takes at a time.
const materializeChunk = 1 << 20

// release drops a cursor's rows and returns their memory budget.
func (c *cursor) release() {
	c.rows = nil
	for _, f := range c.held {
		f()
	}
	c.held = nil
}

// maxMaterialized bounds the rows a WITH HOLD or SCROLL cursor keeps in
// memory (PostgreSQL spills them to disk; this back end refuses past it).
var maxMaterialized int64 = 256 << 20

// rowBytes estimates a row's size in memory.
func rowBytes(row []any) int64 {
	n := int64(24 * len(row))
	for _, v := range row {
		switch v := v.(type) {
		case string:
			n += int64(len(v))
		case []byte:
			n += int64(len(v))
		}
	}
	return n
}

// next returns the row after the position and moves onto it; ok=false
// (the position past the last row) at the end.
func (c *cursor) next() (row []any, ok bool, err error) {
	if c.end {
		return nil, false, nil
	}
	if c.materialized() {
		if c.pos >= c.last() {
			c.pos, c.end = c.last()+1, true
			return nil, false, nil
		}
		c.pos++
		return c.rows[c.pos-c.base-1], true, nil
	}
	row = make([]any, len(c.cols))
	if ok, err = c.res.Next(row); err != nil {
		return nil, false, err
	}
	c.pos++
	if !ok {
		c.end = true
		return nil, false, nil
	}
	return row, true, nil
}

// seek moves a SCROLL (materialized, base 0) cursor to position t and
// returns the row there, if any.
func (c *cursor) seek(t int64) []any {
	n := c.last()
	switch {
	case t <= 0:
		c.pos, c.end = 0, false
		return nil
	case t > n:
		c.pos, c.end = n+1, true
		return nil
	}
	c.pos, c.end = t, false
	return c.rows[t-1]
}

var errForwardOnly = &pgwire.Error{Code: "55000", Message: "cursor can only scan forward",
	Hint: "Declare it with SCROLL option to enable backward scan."}

// fetch runs FETCH or MOVE on the cursor. FETCH FORWARD on a running
// cursor reads on as the client reads the result; the rest is computed
// here.
func (c *cursor) fetch(cs *sqlpg.CursorStmt) (pgwire.Result, error) {
	dir, count := cs.Dir, cs.Count
	if (dir == sqlpg.FetchForward || dir == sqlpg.FetchBackward) && count < 0 {
		// FETCH -n is FETCH BACKWARD n, as in PostgreSQL.
		dir, count = sqlpg.FetchForward+sqlpg.FetchBackward-dir, -count
	}
	if (dir == sqlpg.FetchForward || dir == sqlpg.FetchBackward) && count == 0 {
		dir = sqlpg.FetchRelative // the current row again
	}
	var target int64
	switch dir {
	case sqlpg.FetchAbsolute:
		target = count
		if count < 0 {
			if !c.scroll {
				return nil, errForwardOnly
			}
			target = c.last() + count + 1
		}
	case sqlpg.FetchRelative:
		target = c.pos + count
	}
	if !c.scroll {
		switch dir {
		case sqlpg.FetchBackward:
			return nil, errForwardOnly
		case sqlpg.FetchAbsolute, sqlpg.FetchRelative:
			if target <= c.pos {
				return nil, errForwardOnly
			}
		}
	}
	tag := func(n int64) string { return cs.Kind + " " + strconv.FormatInt(n, 10) }
	if dir == sqlpg.FetchForward && cs.Kind == "FETCH" {
		return &fetchResult{c: c, left: count, tag: cs.Kind}, nil
	}
	var out [][]any
	switch dir {
	case sqlpg.FetchForward:
		for ; count > 0; count-- {
			row, ok, err := c.next()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			out = append(out, row)
		}
	case sqlpg.FetchBackward:
		for ; count > 0 && c.pos > 0; count-- {
			if row := c.seek(c.pos - 1); row != nil {
				out = append(out, row)
			}
		}
	default: // ABSOLUTE, RELATIVE: one row
		var row []any
		if c.scroll {
			row = c.seek(target)
		} else {
			for c.pos < target {
				var ok bool
				var err error
				if row, ok, err = c.next(); err != nil {
					return nil, err
				} else if !ok {
					break
				}
			}
			if c.pos != target {
				row = nil
			}
		}
		if row != nil {
			out = append(out, row)
		}
	}
	if cs.Kind == "MOVE" {
		return &cmdResult{tag: tag(int64(len(out)))}, nil
	}
	return &bufResult{cols: c.cols, rows: out, tag: tag(int64(len(out)))}, nil
}

// fetchResult is FETCH FORWARD n on a cursor, read as the client reads.
type fetchResult struct {
	c    *cursor
	left int64
	n    int64
	tag  string
}

func (r *fetchResult) Columns() []pgwire.Column { return r.c.cols }
func (r *fetchResult) Next(dst []any) (bool, error) {
	if r.left <= 0 {
		return false, nil
	}
	row, ok, err := r.c.next()
	if err != nil || !ok {
		r.left = 0
		return false, err
	}
	r.left--
	r.n++
	copy(dst, row)
	return true, nil
}
func (r *fetchResult) Tag() string  { return r.tag + " " + strconv.FormatInt(r.n, 10) }
func (r *fetchResult) Close() error { return nil }

// prepareCursor prepares DECLARE, FETCH, MOVE and CLOSE.
func (s *Session) prepareCursor(ctx context.Context, st *Statement, cs *sqlpg.CursorStmt) (*Statement, error) {
	st.cursor, st.readonly = cs, true
	switch cs.Kind {
	case "DECLARE":
		if cs.Binary {
			return nil, &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: "DECLARE BINARY is not supported on the SQLite back end",
				Hint: "declare the cursor without BINARY (results in binary format can be asked for with the extended protocol's Bind)"}
		}
		q, err := s.Prepare(ctx, cs.Query)
		if err != nil {
			return nil, err
		}
		st.inner = q.(*Statement)
		if !st.inner.rows {
			return nil, pgwire.Errorf(pgwire.CodeSyntax, "DECLARE CURSOR must be a query that returns rows")
		}
		st.nparams, st.paramOIDs = st.inner.nparams, st.inner.paramOIDs
	case "FETCH":
		st.rows = true
	}
	return st, nil
}

// executeCursor runs DECLARE, FETCH, MOVE and CLOSE.
func (s *Session) executeCursor(ctx context.Context, st *Statement, args []any) (pgwire.Result, error) {
	cs := st.cursor
	switch cs.Kind {
	case "DECLARE":
		if !s.inTx && !cs.Hold {
			return nil, pgwire.Errorf("25P01", "DECLARE CURSOR can only be used in transaction blocks")
		}
		if _, dup := s.cursors[cs.Name]; dup {
			return nil, pgwire.Errorf("42P03", "cursor %q already exists", cs.Name)
		}
		res, err := s.Execute(ctx, st.inner, args)
		if err != nil {
			return nil, err
		}
		c := &cursor{name: cs.Name, cols: res.Columns(), res: res, hold: cs.Hold, scroll: cs.Scroll}
		if cs.Scroll || !s.inTx {
			if err := c.materialize(ctx); err != nil {
				s.dropCursor(c)
				return nil, err
			}
		}
		if s.cursors == nil {
			s.cursors = map[string]*cursor{}
		}
		s.cursors[cs.Name] = c
		if s.inTx {
			s.blockCursors = append(s.blockCursors, cs.Name)
		}
		return &cmdResult{tag: "DECLARE CURSOR"}, nil
	case "CLOSE":
		if cs.Name == "" {
			s.closeCursors()
			return &cmdResult{tag: "CLOSE CURSOR ALL"}, nil
		}
		c, ok := s.cursors[cs.Name]
		if !ok {
			return nil, pgwire.Errorf(pgwire.CodeUndefinedCursor, "cursor %q does not exist", cs.Name)
		}
		s.dropCursor(c)
		return &cmdResult{tag: "CLOSE CURSOR"}, nil
	}
	c, ok := s.cursors[cs.Name]
	if !ok {
		return nil, pgwire.Errorf(pgwire.CodeUndefinedCursor, "cursor %q does not exist", cs.Name)
	}
	return c.fetch(cs)
}

// DescribePortal implements pgwire.PortalDescriber: Describe of a cursor
// made with DECLARE (psycopg's named cursors ask for their columns so).
func (s *Session) DescribePortal(ctx context.Context, name string) ([]pgwire.Column, bool, error) {
	c, ok := s.cursors[name]
	if !ok {
		return nil, false, nil
	}
	return c.cols, true, nil
}

func (s *Session) dropCursor(c *cursor) {
	if c.res != nil {
		_ = c.res.Close()
		c.res = nil
	}
	c.release()
	delete(s.cursors, c.name)
}

func (s *Session) closeCursors() {
	for _, c := range s.cursors {
		s.dropCursor(c)
	}
	s.blockCursors, s.cursorMarks = nil, nil
}

// cursorMark is a savepoint of the open block and how many cursors the
// block had declared when it was set.
type cursorMark struct {
	name string
	n    int
}

// noteSavepoint follows SAVEPOINT, RELEASE and ROLLBACK TO (after they
// ran): as in PostgreSQL, rolling back to a savepoint closes the cursors
// declared after it (a cursor declared before it stays where FETCH left
// it).
func (s *Session) noteSavepoint(st *Statement) {
	if len(st.words) < 2 {
		return
	}
	name := strings.ToLower(st.words[len(st.words)-1])
	switch {
	case st.kind == "SAVEPOINT":
		s.cursorMarks = append(s.cursorMarks, cursorMark{name: name, n: len(s.blockCursors)})
	case st.kind == "RELEASE":
		for i := len(s.cursorMarks) - 1; i >= 0; i-- {
			if s.cursorMarks[i].name == name {
				s.cursorMarks = s.cursorMarks[:i]
				break
			}
		}
	case st.kind == "ROLLBACK" && st.words[1] == "TO":
		for i := len(s.cursorMarks) - 1; i >= 0; i-- {
			if m := s.cursorMarks[i]; m.name == name {
				s.dropCursors(s.blockCursors[m.n:])
				s.blockCursors = s.blockCursors[:m.n]
				s.cursorMarks = s.cursorMarks[:i+1]
				break
			}
		}
	}
}

// endBlockCursors runs before a transaction block ends (before its
// results end): at a commit, the WITH HOLD cursors the block declared are
// materialized and the others dropped; at a rollback, every cursor the
// block declared is dropped. An error (a row of a held cursor failed)
// fails the commit. kept: the cursors that outlive the block (if its
// commit fails, dropCursors drops them).
func (s *Session) endBlockCursors(ctx context.Context, commit bool) (kept []string, err error) {
	names := s.blockCursors
	s.blockCursors, s.cursorMarks = nil, nil
	for _, n := range names {
		c, ok := s.cursors[n]
		if !ok {
			continue
		}
		if commit && c.hold && err == nil {
			if err = c.materialize(ctx); err == nil {
				kept = append(kept, n)
				continue
			}
		}
		s.dropCursor(c)
	}
	if err != nil {
		// The commit fails: nothing the block declared survives it.
		s.dropCursors(kept)
		return nil, err
	}
	return kept, nil
}

// dropCursors drops the named cursors that exist.
func (s *Session) dropCursors(names []string) {
	for _, n := range names {
		if c, ok := s.cursors[n]; ok {
			s.dropCursor(c)
		}
	}
}
