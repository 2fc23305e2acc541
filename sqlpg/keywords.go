package sqlpg

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// sqliteKeywords are SQLite's keywords. PostgreSQL's deparser quotes an
// identifier only when it is a keyword to PostgreSQL, so a name that is
// an unreserved word there but a keyword to SQLite (SELECT 0 AS set,
// a column called "action" or "plan") must be quoted by tandem.
var sqliteKeywords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`abort action add after all alter always analyze and as asc attach autoincrement
		before begin between by cascade case cast check collate column commit conflict constraint create cross
		current current_date current_time current_timestamp database default deferrable deferred delete desc
		detach distinct do drop each else end escape except exclude exclusive exists explain fail filter first
		following for foreign from full generated glob group groups having if ignore immediate in index indexed
		initially inner insert instead intersect into is isnull join key last left like limit match materialized
		natural no not nothing notnull null nulls of offset on or order others outer over partition plan pragma
		preceding primary query raise range recursive references regexp reindex release rename replace restrict
		returning right rollback row rows savepoint select set table temp temporary then ties to transaction
		trigger unbounded union unique update using vacuum values view virtual when where window with without`) {
		sqliteKeywords[w] = true
	}
}

// quoteMark, appended to a name, makes the deparser quote it (it is not a
// plain lower-case identifier character); unquoteMarks takes it out of
// the text again.
const quoteMark = "\u24e0"

// markKeywords marks every identifier in the tree that SQLite reads as a
// keyword; the returned function unmarks the tree.
func markKeywords(stmt *pg_query.Node) (restore func()) {
	var marked []*string
	mark := func(s *string) {
		if s != nil && sqliteKeywords[*s] {
			*s += quoteMark
			marked = append(marked, s)
		}
	}
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		switch x := m.Interface().(type) {
		case *pg_query.ColumnRef:
			for _, f := range x.Fields {
				if s := f.GetString_(); s != nil {
					mark(&s.Sval)
				}
			}
			return
		case *pg_query.FuncCall:
			// A function named as a SQLite keyword (set()): SQLite takes
			// a quoted function name.
			if n := len(x.Funcname); n > 0 {
				if s := x.Funcname[n-1].GetString_(); s != nil {
					mark(&s.Sval)
				}
			}
		case *pg_query.ResTarget:
			mark(&x.Name)
		case *pg_query.RangeVar:
			mark(&x.Relname)
		case *pg_query.Alias:
			mark(&x.Aliasname)
			for _, c := range x.Colnames {
				if s := c.GetString_(); s != nil {
					mark(&s.Sval)
				}
			}
			return
		case *pg_query.CommonTableExpr:
			mark(&x.Ctename)
			for _, c := range x.Aliascolnames {
				if s := c.GetString_(); s != nil {
					mark(&s.Sval)
				}
			}
		case *pg_query.Node:
			// A constant names nothing; a list's items are walked
			// directly (a large VALUES list is made of these).
			switch y := x.Node.(type) {
			case *pg_query.Node_AConst:
				return
			case *pg_query.Node_List:
				for _, it := range y.List.Items {
					if it != nil {
						walk(it.ProtoReflect())
					}
				}
				return
			}
		}
		eachChild(m, walk)
	}
	walk(stmt.ProtoReflect())
	return func() {
		for _, s := range marked {
			*s = strings.TrimSuffix(*s, quoteMark)
		}
	}
}

func unquoteMarks(s string) string {
	if !strings.Contains(s, quoteMark) {
		return s
	}
	return strings.ReplaceAll(s, quoteMark, "")
}
