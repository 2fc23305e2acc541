package sqlpg

import (
	"math"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// CursorStmt is a SQL cursor statement (DECLARE, FETCH, MOVE, CLOSE) as
// the back end runs it: the cursor's state lives in the session, not in
// SQLite, so the translator only reads the statement.
type CursorStmt struct {
	Kind string // DECLARE, FETCH, MOVE or CLOSE
	Name string // the cursor; "" for CLOSE ALL
	// DECLARE: the query's text (PostgreSQL SQL, to translate) and options.
	Query          string
	Hold, Scroll   bool
	Binary         bool
	NoScrollOption bool // NO SCROLL was written
	// FETCH and MOVE.
	Dir   FetchDir
	Count int64 // FetchAll for ALL
}

// FetchDir is a FETCH or MOVE direction, as PostgreSQL's grammar reduces
// them (NEXT is FORWARD 1, PRIOR BACKWARD 1, FIRST ABSOLUTE 1, LAST
// ABSOLUTE -1).
type FetchDir int

const (
	FetchForward FetchDir = iota
	FetchBackward
	FetchAbsolute
	FetchRelative
)

// FetchAll is the count of FETCH ALL (PostgreSQL's FETCH_ALL).
const FetchAll = math.MaxInt64

// Options of DECLARE (PostgreSQL's CURSOR_OPT_*).
const (
	cursorBinary   = 0x0001
	cursorScroll   = 0x0002
	cursorNoScroll = 0x0004
	cursorHold     = 0x0020
)

// ParseCursor reads a DECLARE, FETCH, MOVE or CLOSE statement; ok=false
// when sql is none of them.
func ParseCursor(sql string) (cs *CursorStmt, ok bool, err error) {
	tree, err := Parse(sql)
	if err != nil {
		return nil, false, err
	}
	if len(tree.Stmts) != 1 {
		return nil, false, nil
	}
	switch n := tree.Stmts[0].Stmt.Node.(type) {
	case *pg_query.Node_DeclareCursorStmt:
		d := n.DeclareCursorStmt
		q, err := pg_query.Deparse(&pg_query.ParseResult{Stmts: []*pg_query.RawStmt{{Stmt: d.Query}}})
		if err != nil {
			return nil, false, pgwire.Errorf(pgwire.CodeSyntax, "DECLARE: %v", err)
		}
		return &CursorStmt{Kind: "DECLARE", Name: d.Portalname, Query: q,
			Hold: d.Options&cursorHold != 0, Scroll: d.Options&cursorScroll != 0,
			NoScrollOption: d.Options&cursorNoScroll != 0, Binary: d.Options&cursorBinary != 0}, true, nil
	case *pg_query.Node_FetchStmt:
		f := n.FetchStmt
		cs := &CursorStmt{Kind: "FETCH", Name: f.Portalname, Count: f.HowMany}
		if f.Ismove {
			cs.Kind = "MOVE"
		}
		switch f.Direction {
		case pg_query.FetchDirection_FETCH_BACKWARD:
			cs.Dir = FetchBackward
		case pg_query.FetchDirection_FETCH_ABSOLUTE:
			cs.Dir = FetchAbsolute
		case pg_query.FetchDirection_FETCH_RELATIVE:
			cs.Dir = FetchRelative
		}
		return cs, true, nil
	case *pg_query.Node_ClosePortalStmt:
		return &CursorStmt{Kind: "CLOSE", Name: n.ClosePortalStmt.Portalname}, true, nil
	}
	return nil, false, nil
}
