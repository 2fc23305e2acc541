package sqlpg

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// viewColumnNames applies CREATE VIEW v (a, b, ...)'s column names. In
// PostgreSQL they are the view's column names, the first ones when there
// are fewer names than columns; pg_get_viewdef then shows the query's
// output columns under them (SELECT x AS a). So they become the AS names
// of the query's first select list (the leftmost arm of a set
// operation), and the view is stored, and recorded, without a column
// list. A VALUES query keeps SQLite's column list, every column named
// (column1, ... after the names given, as PostgreSQL names them). More
// names than columns is 42601, as in PostgreSQL. CREATE OR REPLACE VIEW
// keeps the columns of the view it replaces, in order and by name
// (42P16).
func (t *translator) viewColumnNames(s *pg_query.ViewStmt) error {
	names := strs(s.Aliases)
	sel := s.Query.GetSelectStmt()
	if sel != nil {
		for sel.Op != pg_query.SetOperation_SETOP_NONE && sel.Larg != nil {
			sel = sel.Larg
		}
	}
	if len(names) > 0 {
		if sel == nil {
			return unsupported("CREATE VIEW with a column list over this query")
		}
		tooMany := &pgwire.Error{Code: "42601", Message: "CREATE VIEW specifies more column names than columns"}
		if len(sel.ValuesLists) > 0 {
			n := len(sel.ValuesLists[0].GetList().GetItems())
			if len(names) > n {
				return tooMany
			}
			for i := len(names); i < n; i++ {
				s.Aliases = append(s.Aliases, pg_query.MakeStrNode(fmt.Sprintf("column%d", i+1)))
			}
		} else {
			for _, n := range sel.TargetList {
				if cr := n.GetResTarget().GetVal().GetColumnRef(); cr != nil && len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
					return unsupported("CREATE VIEW with a column list over a SELECT * (name the columns in the select list)")
				}
			}
			if len(names) > len(sel.TargetList) {
				return tooMany
			}
			for i, name := range names {
				if rt := sel.TargetList[i].GetResTarget(); rt != nil {
					rt.Name = name
				}
			}
			s.Aliases = nil
		}
	}
	if !s.Replace {
		return nil
	}
	vl, ok := t.sch.(ViewLister)
	if !ok || t.sch == nil {
		return nil
	}
	exists := false
	for v := range vl.Views() {
		if strings.EqualFold(v, s.View.Relname) {
			exists = true
		}
	}
	if !exists || sel == nil {
		return nil
	}
	old := t.sch.Columns(s.View.Relname)
	now := strs(s.Aliases)
	if len(now) == 0 {
		now = targetNames(sel)
	}
	if now == nil {
		return nil // a *: not known here
	}
	if len(now) < len(old) {
		return &pgwire.Error{Code: "42P16", Message: "cannot drop columns from view"}
	}
	for i := range old {
		if old[i].Name != now[i] {
			return &pgwire.Error{Code: "42P16", Message: fmt.Sprintf("cannot change name of view column %q to %q", old[i].Name, now[i]),
				Hint: "Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead."}
		}
	}
	return nil
}
