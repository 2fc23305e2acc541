package sqlpg

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tandemdb/tandem/pgwire"
)

// aggregates are the aggregate functions the translator knows: a select
// list that calls one (without OVER) groups its rows.
var aggregates = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true, "string_agg": true, "array_agg": true,
	"bool_and": true, "bool_or": true, "every": true, "json_agg": true, "jsonb_agg": true, "json_object_agg": true,
	"jsonb_object_agg": true, "stddev": true, "stddev_samp": true, "stddev_pop": true, "variance": true,
	"var_samp": true, "var_pop": true, "bit_and": true, "bit_or": true,
	"percentile_cont": true, "percentile_disc": true, "mode": true,
}

// groupCheck fails with 42803, as PostgreSQL does, when a grouped SELECT
// (GROUP BY, HAVING or an aggregate) uses a column outside an aggregate
// that is neither grouped nor functionally dependent on a grouped primary
// key; SQLite would answer with a value from an arbitrary row. It checks
// only what it can resolve: every table of FROM known, plain GROUP BY
// items; anything else is let through.
func (t *translator) groupCheck(s *pg_query.SelectStmt) {
	if s.Op != pg_query.SetOperation_SETOP_NONE || t.err != nil {
		return
	}
	grouped := len(s.GroupClause) > 0 || s.HavingClause != nil
	if len(s.GroupClause) == 0 && s.HavingClause != nil {
		agg := false
		for _, n := range s.TargetList {
			agg = agg || hasAggregate(n)
		}
		if !agg {
			// One group of all rows in PostgreSQL (one row even of no
			// rows); SQLite refuses HAVING unless its select list has an
			// aggregate: the first column gets one it does not show,
			// iif(count(*) IS NULL, NULL, x), which is x.
			wrapped := false
			for _, n := range s.TargetList {
				rt := n.GetResTarget()
				if rt == nil || rt.Val == nil || rt.Val.GetColumnRef() != nil && hasStar(rt.Val) {
					continue
				}
				cnt := &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: &pg_query.FuncCall{
					Funcname: []*pg_query.Node{pg_query.MakeStrNode("count")}, AggStar: true, Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL}}}
				isNull := &pg_query.Node{Node: &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{Arg: cnt, Nulltesttype: pg_query.NullTestType_IS_NULL}}}
				rt.Val = call("iif", isNull, &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}, rt.Val)
				wrapped = true
				break
			}
			if !wrapped {
				t.fail(unsupported("HAVING without GROUP BY or an aggregate"))
				return
			}
		}
	}
	if !grouped {
		for _, n := range s.TargetList {
			if hasAggregate(n) {
				grouped = true
				break
			}
		}
	}
	if !grouped {
		return
	}
	sc, ok := t.scopeOf(s.FromClause)
	if !ok || sc == nil {
		return
	}
	// The grouped expressions (column qualifiers dropped) and columns.
	exprs := map[string]bool{}
	type colKey struct{ alias, col string }
	cols := map[colKey]bool{}
	resolve := func(cr *pg_query.ColumnRef) (colKey, bool) {
		f := strs(cr.Fields)
		if len(f) == 0 || cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			return colKey{}, false
		}
		col := strings.ToLower(f[len(f)-1])
		qual := ""
		if len(f) >= 2 {
			qual = strings.ToLower(f[len(f)-2])
		}
		var found []colKey
		for _, tb := range sc.tables {
			if qual != "" && tb.alias != qual {
				continue
			}
			for _, c := range tb.cols {
				if strings.EqualFold(c.Name, col) {
					found = append(found, colKey{tb.alias, col})
				}
			}
		}
		if len(found) != 1 {
			return colKey{}, false // an outer reference, ambiguous or unknown: not ours to judge
		}
		return found[0], true
	}
	for _, g := range s.GroupClause {
		if g.GetGroupingSet() != nil {
			return
		}
		e := g
		if c := g.GetAConst(); c != nil && c.GetIval() != nil {
			i := int(c.GetIval().Ival)
			if i < 1 || i > len(s.TargetList) {
				return
			}
			e = s.TargetList[i-1].GetResTarget().GetVal()
		} else if cr := g.GetColumnRef(); cr != nil && len(cr.Fields) == 1 {
			if _, ok := resolve(cr); !ok {
				// GROUP BY an output column's name.
				name := cr.Fields[0].GetString_().GetSval()
				for _, tl := range s.TargetList {
					if rt := tl.GetResTarget(); rt != nil && rt.Name == name {
						e = rt.Val
					}
				}
			}
		}
		if e == nil {
			return
		}
		if cr := e.GetColumnRef(); cr != nil {
			if k, ok := resolve(cr); ok {
				cols[k] = true
			}
		}
		exprs[normExpr(e)] = true
	}
	// Tables whose primary key is grouped: all their columns are.
	pkGrouped := map[string]bool{}
	pk, ok := t.sch.(interface{ PrimaryKey(string) []string })
	if !ok {
		return // without primary keys, no functional dependency is known
	}
	{
		for _, tb := range sc.tables {
			if tb.table == "" {
				continue
			}
			keys := pk.PrimaryKey(tb.table)
			all := len(keys) > 0
			for _, k := range keys {
				if !cols[colKey{tb.alias, strings.ToLower(k)}] {
					all = false
				}
			}
			pkGrouped[tb.alias] = all
		}
	}
	var bad *colKey
	var check func(n *pg_query.Node)
	check = func(n *pg_query.Node) {
		if n == nil || n.Node == nil || bad != nil {
			return
		}
		if exprs[normExpr(n)] {
			return
		}
		switch x := n.Node.(type) {
		case *pg_query.Node_FuncCall:
			if x.FuncCall.Over == nil && aggregates[lastName(x.FuncCall.Funcname)] {
				return
			}
		case *pg_query.Node_SubLink:
			if x.SubLink.Testexpr != nil {
				check(x.SubLink.Testexpr)
			}
			return
		case *pg_query.Node_ColumnRef:
			k, ok := resolve(x.ColumnRef)
			if ok && !cols[k] && !pkGrouped[k.alias] {
				bad = &k
			}
			return
		}
		// Top-down, to stop at aggregates and grouped expressions.
		children(n, check)
	}
	for _, tl := range s.TargetList {
		if rt := tl.GetResTarget(); rt != nil {
			check(rt.Val)
		}
	}
	check(s.HavingClause)
	for _, sb := range s.SortClause {
		b := sb.GetSortBy()
		if b == nil {
			continue
		}
		if c := b.Node.GetAConst(); c != nil {
			continue
		}
		if cr := b.Node.GetColumnRef(); cr != nil && len(cr.Fields) == 1 {
			name := cr.Fields[0].GetString_().GetSval()
			isAlias := false
			for _, tl := range s.TargetList {
				if rt := tl.GetResTarget(); rt != nil && rt.Name == name {
					isAlias = true
				}
			}
			if isAlias {
				continue
			}
		}
		check(b.Node)
	}
	if bad != nil {
		t.fail(&pgwire.Error{Code: "42803", Message: fmt.Sprintf("column \"%s.%s\" must appear in the GROUP BY clause or be used in an aggregate function", bad.alias, bad.col)})
	}
}

// children calls fn on each direct child node of n (the nodes nearest
// below it, not their descendants).
func children(n *pg_query.Node, fn func(*pg_query.Node)) {
	childrenOf(n.ProtoReflect(), fn)
}

func childrenOf(m protoreflect.Message, fn func(*pg_query.Node)) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		one := func(mv protoreflect.Message) {
			if c, ok := mv.Interface().(*pg_query.Node); ok {
				fn(c)
				return
			}
			childrenOf(mv, fn)
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				one(l.Get(i).Message())
			}
			return true
		}
		one(v.Message())
		return true
	})
}

// hasAggregate: the expression calls an aggregate outside a subquery.
func hasAggregate(n *pg_query.Node) bool {
	found := false
	var walk func(n *pg_query.Node)
	walk = func(n *pg_query.Node) {
		if n == nil || n.Node == nil || found {
			return
		}
		switch x := n.Node.(type) {
		case *pg_query.Node_FuncCall:
			if x.FuncCall.Over == nil && aggregates[lastName(x.FuncCall.Funcname)] && len(x.FuncCall.Funcname) == 1 {
				found = true
				return
			}
		case *pg_query.Node_SubLink:
			return
		}
		children(n, walk)
	}
	walk(n)
	return found
}

// normExpr deparses an expression with its column references' qualifiers
// dropped (t.a and a compare equal).
func normExpr(n *pg_query.Node) string {
	c := proto.Clone(n).(*pg_query.Node)
	walkNode(c, func(m *pg_query.Node) {
		if cr := m.GetColumnRef(); cr != nil && len(cr.Fields) > 1 {
			cr.Fields = cr.Fields[len(cr.Fields)-1:]
		}
	})
	if cr := c.GetColumnRef(); cr != nil && len(cr.Fields) > 1 {
		cr.Fields = cr.Fields[len(cr.Fields)-1:]
	}
	s, err := deparseExpr(c)
	if err != nil {
		return ""
	}
	return s
}

// expandUsingStar writes SELECT * over one JOIN ... USING / NATURAL JOIN
// of two tables as PostgreSQL orders it (the merged columns first, then
// each table's others); SQLite keeps the left table's order.
func (t *translator) expandUsingStar(s *pg_query.SelectStmt) {
	if s.Op != pg_query.SetOperation_SETOP_NONE || len(s.FromClause) != 1 {
		return
	}
	j := s.FromClause[0].GetJoinExpr()
	if j == nil || (len(j.UsingClause) == 0 && !j.IsNatural) || j.Alias != nil {
		return
	}
	sc, ok := t.scopeOf(s.FromClause)
	if !ok || len(sc.using) == 0 || len(sc.tables) != 2 {
		return
	}
	l, r := sc.tables[0], sc.tables[1]
	ref := func(alias, col string) *pg_query.Node {
		return pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(alias), pg_query.MakeStrNode(col)}, -1)
	}
	var out []*pg_query.Node
	for _, tn := range s.TargetList {
		rt := tn.GetResTarget()
		cr := rt.GetVal().GetColumnRef()
		if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetAStar() == nil {
			out = append(out, tn)
			continue
		}
		merged := map[string]bool{}
		for _, u := range sc.using {
			merged[u] = true
			var v *pg_query.Node
			switch j.Jointype {
			case pg_query.JoinType_JOIN_RIGHT:
				v = ref(r.alias, u)
			case pg_query.JoinType_JOIN_FULL:
				v = call("coalesce", ref(l.alias, u), ref(r.alias, u))
			default:
				v = ref(l.alias, u)
			}
			out = append(out, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: u, Val: v}}})
		}
		for _, tb := range []scopeTable{l, r} {
			for _, c := range tb.cols {
				if !merged[c.Name] {
					out = append(out, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: c.Name, Val: ref(tb.alias, c.Name)}}})
				}
			}
		}
	}
	s.TargetList = out
}
