package sqlpg

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// GROUP BY ROLLUP / CUBE / GROUPING SETS, which SQLite lacks, become a
// UNION ALL of one plain GROUP BY per grouping set; in each arm the
// grouping expressions outside its set read NULL (as PostgreSQL's rows
// for that set show them) and grouping(...) is the set's constant. The
// ORDER BY and LIMIT apply to the union, by output column name or
// position.

// groupingSetsOf expands a GROUP BY list into its grouping sets (each a
// list of expressions); ok is false when there is no grouping set in it.
func (t *translator) groupingSetsOf(group []*pg_query.Node) (sets [][]*pg_query.Node, ok bool) {
	sets = [][]*pg_query.Node{{}}
	cross := func(with [][]*pg_query.Node) {
		var out [][]*pg_query.Node
		for _, a := range sets {
			for _, b := range with {
				out = append(out, append(append([]*pg_query.Node{}, a...), b...))
			}
		}
		sets = out
	}
	for _, g := range group {
		gs := g.GetGroupingSet()
		if gs == nil {
			cross([][]*pg_query.Node{{g}})
			continue
		}
		ok = true
		var cols []*pg_query.Node
		for _, c := range gs.Content {
			if c.GetGroupingSet() != nil && gs.Kind != pg_query.GroupingSetKind_GROUPING_SET_SETS {
				t.fail(unsupported("nested grouping sets"))
				return nil, true
			}
			cols = append(cols, c)
		}
		switch gs.Kind {
		case pg_query.GroupingSetKind_GROUPING_SET_EMPTY:
			cross([][]*pg_query.Node{{}})
		case pg_query.GroupingSetKind_GROUPING_SET_ROLLUP:
			var with [][]*pg_query.Node
			for i := len(cols); i >= 0; i-- {
				with = append(with, flatten(cols[:i]))
			}
			cross(with)
		case pg_query.GroupingSetKind_GROUPING_SET_CUBE:
			var with [][]*pg_query.Node
			n := len(cols)
			for mask := (1 << n) - 1; mask >= 0; mask-- {
				var set []*pg_query.Node
				for i := 0; i < n; i++ {
					if mask&(1<<(n-1-i)) != 0 {
						set = append(set, cols[i])
					}
				}
				with = append(with, flatten(set))
			}
			cross(with)
		case pg_query.GroupingSetKind_GROUPING_SET_SETS:
			var with [][]*pg_query.Node
			for _, c := range cols {
				inner := c.GetGroupingSet()
				switch {
				case inner == nil:
					with = append(with, flatten([]*pg_query.Node{c}))
				case inner.Kind == pg_query.GroupingSetKind_GROUPING_SET_EMPTY:
					with = append(with, []*pg_query.Node{})
				case inner.Kind == pg_query.GroupingSetKind_GROUPING_SET_SIMPLE:
					with = append(with, inner.Content)
				default:
					t.fail(unsupported("nested grouping sets"))
					return nil, true
				}
			}
			cross(with)
		default:
			t.fail(unsupported("this grouping set"))
			return nil, true
		}
	}
	return sets, ok
}

// flatten: (a, b) in ROLLUP / CUBE is a row of columns grouped together.
func flatten(cols []*pg_query.Node) []*pg_query.Node {
	var out []*pg_query.Node
	for _, c := range cols {
		if r := c.GetRowExpr(); r != nil {
			out = append(out, r.Args...)
			continue
		}
		if gs := c.GetGroupingSet(); gs != nil && gs.Kind == pg_query.GroupingSetKind_GROUPING_SET_SIMPLE {
			out = append(out, gs.Content...)
			continue
		}
		out = append(out, c)
	}
	return out
}

// groupingSets rewrites s when its GROUP BY has grouping sets.
func (t *translator) groupingSets(s *pg_query.SelectStmt) bool {
	sets, ok := t.groupingSetsOf(s.GroupClause)
	if !ok || t.err != nil {
		return ok
	}
	// Every grouping expression, for NULL outside its sets.
	seen := map[string]bool{}
	for _, set := range sets {
		for _, e := range set {
			seen[normExpr(e)] = true
		}
	}
	names := targetNames(s)
	if names == nil {
		t.fail(unsupported("GROUPING SETS with *"))
		return true
	}
	var arms []*pg_query.SelectStmt
	for _, set := range sets {
		in := map[string]bool{}
		for _, e := range set {
			in[normExpr(e)] = true
		}
		arm := proto.Clone(&pg_query.SelectStmt{TargetList: s.TargetList, FromClause: s.FromClause, WhereClause: s.WhereClause,
			HavingClause: s.HavingClause, WindowClause: s.WindowClause}).(*pg_query.SelectStmt)
		for i, tn := range arm.TargetList {
			if rt := tn.GetResTarget(); rt != nil && rt.Name == "" {
				rt.Name = names[i]
				if rt.Val.GetGroupingFunc() != nil {
					rt.Name = "grouping"
				}
			}
		}
		arm.GroupClause = nil
		for _, e := range set {
			arm.GroupClause = append(arm.GroupClause, proto.Clone(e).(*pg_query.Node))
		}
		agg := false
		for _, tn := range arm.TargetList {
			walkNode(tn, func(m *pg_query.Node) {
				if f := m.GetFuncCall(); f != nil && f.Over == nil && (aggregates[lastName(f.Funcname)] || lastName(f.Funcname) == "group_concat" || lastName(f.Funcname) == "_pg_string_agg_distinct") {
					agg = true
				}
			})
		}
		if len(set) == 0 && !agg {
			// The empty set is one group of every row: without an
			// aggregate SQLite would return each row, so group by a
			// constant (NULL: an integer would name a column). With
			// one, no GROUP BY gives the row even for no rows.
			arm.GroupClause = []*pg_query.Node{{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}}
		}
		// Outside the set, a grouping expression reads NULL; grouping()
		// is 1 for each argument outside it.
		var fix func(n *pg_query.Node)
		fix = func(n *pg_query.Node) {
			if n == nil || n.Node == nil {
				return
			}
			if f := n.GetGroupingFunc(); f != nil {
				v := int64(0)
				for _, a := range f.Args {
					v <<= 1
					if !in[normExpr(a)] {
						v |= 1
					}
				}
				n.Node = pg_query.MakeAConstIntNode(v, -1).Node
				return
			}
			if n.GetSubLink() != nil {
				return
			}
			if k := normExpr(n); seen[k] && !in[k] && n.GetAConst() == nil {
				n.Node = (&pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}).Node
				return
			}
			children(n, fix)
		}
		for _, tn := range arm.TargetList {
			if rt := tn.GetResTarget(); rt != nil {
				fix(rt.Val)
			}
		}
		fix(arm.HavingClause)
		arms = append(arms, arm)
	}
	// SQLite has no parenthesised compound selects: the union so far is a
	// subquery of the next.
	u := arms[0]
	for _, a := range arms[1:] {
		if u.Op != pg_query.SetOperation_SETOP_NONE {
			t.subq++
			u = &pg_query.SelectStmt{
				TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeAStarNode()}, -1), -1)},
				FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
					Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: u}}, Alias: &pg_query.Alias{Aliasname: fmt.Sprintf("_tandem_gs%d", t.subq)}}}}},
			}
		}
		u = &pg_query.SelectStmt{Op: pg_query.SetOperation_SETOP_UNION, All: true, Larg: u, Rarg: a}
	}
	u.SortClause, u.LimitCount, u.LimitOffset, u.LimitOption, u.WithClause = s.SortClause, s.LimitCount, s.LimitOffset, s.LimitOption, s.WithClause
	proto.Reset(s)
	proto.Merge(s, u)
	return true
}
