package sqlpg

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/tandemdb/tandem/pgwire"
)

// Generated columns (GENERATED ALWAYS AS (...) STORED) are SQLite's own
// generated columns: SQLite computes them and refuses to be given a
// value for one. PostgreSQL accepts DEFAULT for them, and counts them in
// an INSERT without a column list, where SQLite does not: such an INSERT
// gets its column list written out, and the generated columns' DEFAULTs
// are taken out of it.

// generatedInsert takes the generated columns of cols out of an INSERT
// (428C9 when one is given a value other than DEFAULT, as PostgreSQL).
func (t *translator) generatedInsert(s *pg_query.InsertStmt, cols []Column) error {
	gen := map[string]bool{}
	for _, c := range cols {
		if c.Generated != "" {
			gen[c.Name] = true
		}
	}
	if len(gen) == 0 || s.SelectStmt == nil {
		return nil
	}
	sel := s.SelectStmt.GetSelectStmt()
	values := sel != nil && len(sel.ValuesLists) > 0 && sel.Op == pg_query.SetOperation_SETOP_NONE
	if len(s.Cols) == 0 {
		// Positional: PostgreSQL's positions count the generated columns.
		n := 0
		switch {
		case values:
			for _, row := range sel.ValuesLists {
				n = max(n, len(row.GetList().GetItems()))
			}
		case sel != nil && sel.Op == pg_query.SetOperation_SETOP_NONE:
			for _, tl := range sel.TargetList {
				if hasStar(tl.GetResTarget().GetVal()) {
					return nil
				}
			}
			n = len(sel.TargetList)
		default:
			return nil
		}
		if n == 0 || n > len(cols) {
			return nil
		}
		for _, c := range cols[:n] {
			s.Cols = append(s.Cols, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: c.Name}}})
		}
	}
	for i := len(s.Cols) - 1; i >= 0; i-- {
		name := s.Cols[i].GetResTarget().GetName()
		if !gen[name] {
			continue
		}
		bad := &pgwire.Error{Code: "428C9", Message: fmt.Sprintf("cannot insert a non-DEFAULT value into column %q", name),
			Detail: fmt.Sprintf("Column %q is a generated column.", name)}
		if !values {
			return bad
		}
		for _, row := range sel.ValuesLists {
			items := row.GetList().GetItems()
			if i < len(items) && items[i].GetSetToDefault() == nil {
				return bad
			}
		}
		for _, row := range sel.ValuesLists {
			if l := row.GetList(); i < len(l.Items) {
				l.Items = append(l.Items[:i:i], l.Items[i+1:]...)
			}
		}
		s.Cols = append(s.Cols[:i:i], s.Cols[i+1:]...)
	}
	if len(s.Cols) == 0 && values && len(sel.ValuesLists) == 1 {
		s.SelectStmt = nil // every column DEFAULT: DEFAULT VALUES
	}
	return nil
}

// generatedTargets takes the generated columns' SET c = DEFAULT out of an
// UPDATE's (or ON CONFLICT DO UPDATE's) target list; any other value for
// one is 428C9, as PostgreSQL.
func generatedTargets(list []*pg_query.Node, cols []Column) ([]*pg_query.Node, error) {
	gen := map[string]bool{}
	var first string
	for _, c := range cols {
		if c.Generated != "" {
			gen[c.Name] = true
		} else if first == "" {
			first = c.Name
		}
	}
	if len(gen) == 0 {
		return list, nil
	}
	var out []*pg_query.Node
	for _, n := range list {
		rt := n.GetResTarget()
		if rt == nil || !gen[rt.Name] {
			out = append(out, n)
			continue
		}
		if rt.Val.GetSetToDefault() == nil || len(rt.Indirection) > 0 {
			return nil, &pgwire.Error{Code: "428C9", Message: fmt.Sprintf("column %q can only be updated to DEFAULT", rt.Name),
				Detail: fmt.Sprintf("Column %q is a generated column.", rt.Name)}
		}
	}
	if len(out) == 0 && len(list) > 0 && first != "" {
		// SET g = DEFAULT alone: the row is written again (SQLite
		// recomputes the generated columns).
		out = append(out, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: first,
			Val: &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{
				{Node: &pg_query.Node_String_{String_: &pg_query.String{Sval: first}}}}}}}}}})
	}
	return out, nil
}
