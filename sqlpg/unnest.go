package sqlpg

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tandemdb/tandem/pgwire"
)

// unnest in FROM: unnest(a [, b ...]) [WITH ORDINALITY] [AS] x(c1 [, c2 ...] [, ord])
// becomes one json_each table-valued function per array in the same FROM
// list, zipped by position (their keys are equal). SQLite lets a
// table-valued function use the columns of the FROM items before it, so
// an array from an earlier table works as PostgreSQL's implicit LATERAL
// does (FROM pg_index i, unnest(i.indkey)). References to x.c1 ... (and
// unqualified c1 ... in the same select) read the json_each columns, and
// a * in the select list lists them by name.

// unnestItem is one unnest FROM item, rewritten.
type unnestItem struct {
	alias string
	cols  []string
	exprs []func() *pg_query.Node // each column's value over the json_each aliases
}

// isUnnestFrom: a FROM item unnest(...) the select handles (unnestFrom).
func isUnnestFrom(rf *pg_query.RangeFunction) bool {
	if len(rf.Functions) != 1 || rf.IsRowsfrom {
		return false
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 {
		return false
	}
	f := items[0].GetFuncCall()
	return f != nil && lastName(f.Funcname) == "unnest" && len(f.Args) > 0 && len(strs(f.Funcname)) == 1
}

// expandarrayAsUnnest rewrites information_schema._pg_expandarray(a) in
// FROM (Hibernate's index metadata query joins it) as what it is,
// unnest(a) WITH ORDINALITY with the columns x and n.
func expandarrayAsUnnest(rf *pg_query.RangeFunction) {
	if len(rf.Functions) != 1 || rf.IsRowsfrom || rf.Ordinality {
		return
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 {
		return
	}
	f := items[0].GetFuncCall()
	if f == nil || lastName(f.Funcname) != "_pg_expandarray" || len(f.Args) != 1 {
		return
	}
	f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("unnest")}
	rf.Ordinality = true
	if rf.Alias == nil {
		rf.Alias = &pg_query.Alias{Aliasname: "_pg_expandarray"}
	}
	if len(rf.Alias.Colnames) == 0 {
		rf.Alias.Colnames = []*pg_query.Node{pg_query.MakeStrNode("x"), pg_query.MakeStrNode("n")}
	}
}

func colRef(names ...string) *pg_query.Node {
	var f []*pg_query.Node
	for _, n := range names {
		f = append(f, pg_query.MakeStrNode(n))
	}
	return pg_query.MakeColumnRefNode(f, -1)
}

// placeUnnest replaces the FROM item n, an unnest(...), with its json_each
// items (a join of them, zipped by position, for several arrays).
func (t *translator) placeUnnest(n *pg_query.Node, rf *pg_query.RangeFunction) *unnestItem {
	delete(t.unnestPending, rf)
	f := rf.Functions[0].GetList().GetItems()[0].GetFuncCall()
	delete(t.srfPending, f)
	alias := "unnest"
	var colnames []string
	if rf.Alias != nil {
		alias = rf.Alias.Aliasname
		colnames = strs(rf.Alias.Colnames)
	}
	want := len(f.Args)
	if rf.Ordinality {
		want++
	}
	if len(colnames) > want {
		t.fail(&pgwire.Error{Code: "42P10", Message: fmt.Sprintf("table %q has %d columns available but %d columns specified", alias, want, len(colnames))})
		return nil
	}
	it := &unnestItem{alias: alias}
	t.subq++
	base := fmt.Sprintf("_tandem_un%d", t.subq)
	first := ""
	var joined *pg_query.Node
	for i, a := range f.Args {
		each := fmt.Sprintf("%s_%d", base, i+1)
		item := &pg_query.Node{Node: &pg_query.Node_RangeFunction{RangeFunction: &pg_query.RangeFunction{
			Functions: []*pg_query.Node{pg_query.MakeListNode([]*pg_query.Node{call("json_each", call("_pg_array_json", a)), nil})},
			Alias:     &pg_query.Alias{Aliasname: each},
		}}}
		if first == "" {
			first, joined = each, item
		} else {
			same := pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("=")},
				colRef(each, "key"), colRef(first, "key"), -1)
			joined = &pg_query.Node{Node: &pg_query.Node_JoinExpr{JoinExpr: &pg_query.JoinExpr{
				Jointype: pg_query.JoinType_JOIN_INNER, Larg: joined, Rarg: item, Quals: same}}}
		}
		name := alias
		if len(f.Args) > 1 && rf.Alias == nil {
			name = "unnest"
		}
		if i < len(colnames) {
			name = colnames[i]
		}
		it.cols = append(it.cols, name)
		it.exprs = append(it.exprs, func() *pg_query.Node { return colRef(each, "value") })
	}
	if rf.Ordinality {
		name := "ordinality"
		if len(f.Args) < len(colnames) {
			name = colnames[len(f.Args)]
		}
		it.cols = append(it.cols, name)
		it.exprs = append(it.exprs, func() *pg_query.Node {
			return pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("+")},
				colRef(first, "key"), pg_query.MakeAConstIntNode(1, -1), -1)
		})
	}
	n.Node = joined.Node
	return it
}

// placeLateral replaces a LATERAL (subquery) FROM item, which SQLite
// lacks, with json_each over its rows gathered as json by a correlated
// scalar subquery: a table-valued function may use the FROM items before
// it, as LATERAL allows.
//
//	JOIN LATERAL (sub) o ON c  ->  JOIN json_each((SELECT json_group_array(json_array(_l.a, ...)) FROM (sub) _l)) _tandem_latN ON c
//
// and o.a reads json_extract(_tandem_latN.value, '$[0]').
func (t *translator) placeLateral(n *pg_query.Node, rs *pg_query.RangeSubselect) *unnestItem {
	delete(t.lateralPending, rs)
	sub := rs.Subquery.GetSelectStmt()
	if sub == nil || rs.Alias == nil {
		t.fail(unsupported("this LATERAL subquery"))
		return nil
	}
	nameTargets(leftmost(sub).TargetList) // max(x) is named max, as PostgreSQL names it
	names := targetNames(sub)
	if names == nil {
		t.fail(unsupported("a LATERAL subquery with *"))
		return nil
	}
	cols := append([]string{}, names...)
	for i, c := range strs(rs.Alias.Colnames) {
		if i < len(cols) {
			cols[i] = c
		}
	}
	t.subq++
	each := fmt.Sprintf("_tandem_lat%d", t.subq)
	inner := fmt.Sprintf("_tandem_latrows%d", t.subq)
	// json_array reads the subquery's columns by their names.
	var elems []*pg_query.Node
	seen := map[string]bool{}
	for _, nm := range names {
		if seen[nm] || nm == "?column?" {
			t.fail(unsupported("a LATERAL subquery with unnamed or repeated columns"))
			return nil
		}
		seen[nm] = true
		elems = append(elems, colRef(inner, nm))
	}
	gather := &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(call("json_group_array", call("json_array", elems...)), -1)},
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: rs.Subquery, Alias: &pg_query.Alias{Aliasname: inner}}}}},
		Op: pg_query.SetOperation_SETOP_NONE,
	}
	scalar := &pg_query.Node{Node: &pg_query.Node_SubLink{SubLink: &pg_query.SubLink{SubLinkType: pg_query.SubLinkType_EXPR_SUBLINK,
		Subselect: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: gather}}}}}
	n.Node = &pg_query.Node_RangeFunction{RangeFunction: &pg_query.RangeFunction{
		Functions: []*pg_query.Node{pg_query.MakeListNode([]*pg_query.Node{call("json_each", scalar), {}})},
		Alias:     &pg_query.Alias{Aliasname: each},
	}}
	it := &unnestItem{alias: rs.Alias.Aliasname}
	for i, c := range cols {
		i := i
		it.cols = append(it.cols, c)
		it.exprs = append(it.exprs, func() *pg_query.Node {
			return call("json_extract", colRef(each, "value"), strConst(fmt.Sprintf("$[%d]", i)))
		})
	}
	return it
}

// subscriptShift: an unnest WITH ORDINALITY that stands for a LATERAL
// subquery of unnest(arr) and generate_subscripts(arr, 1) + plus.
type subscriptShift struct {
	arr  *pg_query.Node
	plus int64
}

// subscriptLaterals replaces, before anything else reads the statement,
// each LATERAL subquery subscriptsLateral recognises by its unnest.
func (t *translator) subscriptLaterals(raw *pg_query.Node) {
	walkNode(raw, func(n *pg_query.Node) {
		rs := n.GetRangeSubselect()
		if rs == nil || !rs.Lateral {
			return
		}
		if rf, arr, plus, ok := subscriptsLateral(rs); ok {
			if t.subscripts == nil {
				t.subscripts = map[*pg_query.RangeFunction]subscriptShift{}
			}
			t.subscripts[rf] = subscriptShift{arr: arr, plus: plus}
			n.Node = &pg_query.Node_RangeFunction{RangeFunction: rf}
		}
	})
}

// subscriptsLateral recognises LATERAL (SELECT unnest(a), generate_subscripts(a, 1) [+ k]) AS x(v, i),
// each element with its subscript (drizzle-kit reads an index's columns
// so), and gives it as unnest(a) WITH ORDINALITY AS x(v, i); the caller
// makes i the subscript from a's lower bound, plus k.
func subscriptsLateral(rs *pg_query.RangeSubselect) (rf *pg_query.RangeFunction, arr *pg_query.Node, plus int64, ok bool) {
	sub := rs.Subquery.GetSelectStmt()
	if sub == nil || rs.Alias == nil || len(rs.Alias.Colnames) != 2 || sub.Op != pg_query.SetOperation_SETOP_NONE || len(sub.FromClause) > 0 ||
		sub.WhereClause != nil || len(sub.GroupClause) > 0 || len(sub.SortClause) > 0 || sub.LimitCount != nil || len(sub.TargetList) != 2 {
		return nil, nil, 0, false
	}
	u := sub.TargetList[0].GetResTarget().GetVal().GetFuncCall()
	g := sub.TargetList[1].GetResTarget().GetVal()
	if e := g.GetAExpr(); e != nil && e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && lastName(e.Name) == "+" && e.Rexpr.GetAConst().GetIval() != nil {
		plus = int64(e.Rexpr.GetAConst().GetIval().Ival)
		g = e.Lexpr
	}
	gs := g.GetFuncCall()
	if u == nil || gs == nil || lastName(u.Funcname) != "unnest" || lastName(gs.Funcname) != "generate_subscripts" || len(u.Args) != 1 || len(gs.Args) != 2 ||
		gs.Args[1].GetAConst().GetIval() == nil || gs.Args[1].GetAConst().GetIval().Ival != 1 || !sameExpr(u.Args[0], gs.Args[0]) {
		return nil, nil, 0, false
	}
	return &pg_query.RangeFunction{
		Functions:  []*pg_query.Node{pg_query.MakeListNode([]*pg_query.Node{{Node: &pg_query.Node_FuncCall{FuncCall: u}}, {}})},
		Ordinality: true,
		Alias:      rs.Alias,
	}, u.Args[0], plus, true
}

// sameExpr reports whether a and b are the same expression, wherever
// each is written in the statement.
func sameExpr(a, b *pg_query.Node) bool {
	strip := func(n *pg_query.Node) *pg_query.Node {
		c := proto.Clone(n).(*pg_query.Node)
		var clear func(m protoreflect.Message)
		clear = func(m protoreflect.Message) {
			if f := m.Descriptor().Fields().ByName("location"); f != nil {
				m.Clear(f)
			}
			eachChild(m, clear)
		}
		clear(c.ProtoReflect())
		return c
	}
	return proto.Equal(strip(a), strip(b))
}

// fromLeaf is one FROM item in order: an unnest (item) or another (name).
type fromLeaf struct {
	item *unnestItem
	name string
}

// unnestFrom rewrites the unnest items of s's FROM list (also inside
// joins).
func (t *translator) unnestFrom(s *pg_query.SelectStmt) {
	var items []*unnestItem
	var leaves []fromLeaf
	var place func(n *pg_query.Node, usingJoin bool)
	place = func(n *pg_query.Node, usingJoin bool) {
		switch x := n.Node.(type) {
		case *pg_query.Node_RangeSubselect:
			if x.RangeSubselect.Lateral {
				if it := t.placeLateral(n, x.RangeSubselect); it != nil {
					items = append(items, it)
					leaves = append(leaves, fromLeaf{item: it})
				}
				return
			}
		case *pg_query.Node_RangeFunction:
			if isUnnestFrom(x.RangeFunction) {
				shift, shifted := t.subscripts[x.RangeFunction]
				if it := t.placeUnnest(n, x.RangeFunction); it != nil {
					if shifted {
						ord := it.exprs[1]
						it.exprs[1] = func() *pg_query.Node { // from the array's lower bound: 0 for an int2vector; an integer
							sum := pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("+")}, ord(),
								pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("-")},
									call("array_lower", proto.Clone(shift.arr).(*pg_query.Node), pg_query.MakeAConstIntNode(1, -1)),
									pg_query.MakeAConstIntNode(1-shift.plus, -1), -1), -1)
							return call("_cast_int4", sum)
						}
					}
					items = append(items, it)
					leaves = append(leaves, fromLeaf{item: it})
				}
				return
			}
		case *pg_query.Node_JoinExpr:
			j := x.JoinExpr
			u := usingJoin || len(j.UsingClause) > 0 || j.IsNatural
			place(j.Larg, u)
			place(j.Rarg, u)
			if j.Alias != nil {
				leaves = append(leaves, fromLeaf{name: ""})
			}
			return
		}
		name := fromItemName(n)
		if usingJoin {
			name = ""
		}
		leaves = append(leaves, fromLeaf{name: name})
	}
	for _, n := range s.FromClause {
		place(n, false)
	}
	if len(items) == 0 {
		return
	}
	t.qualifyEachNames(s)
	// * in the select list: every FROM item's columns in order.
	var targets []*pg_query.Node
	for _, tn := range s.TargetList {
		rt := tn.GetResTarget()
		cr := rt.GetVal().GetColumnRef()
		if cr == nil || cr.Fields[len(cr.Fields)-1].GetAStar() == nil {
			targets = append(targets, tn)
			continue
		}
		qual := ""
		if len(cr.Fields) == 2 {
			qual = cr.Fields[0].GetString_().GetSval()
		}
		mine := false
		for _, it := range items {
			mine = mine || it.alias == qual
		}
		if qual != "" && !mine {
			targets = append(targets, tn)
			continue
		}
		for _, l := range leaves {
			if it := l.item; it != nil {
				if qual != "" && qual != it.alias {
					continue
				}
				for i, c := range it.cols {
					targets = append(targets, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: c, Val: it.exprs[i]()}}})
				}
				continue
			}
			if qual != "" {
				continue
			}
			if l.name == "" {
				t.fail(unsupported("SELECT * over unnest(...) and this FROM item"))
				return
			}
			targets = append(targets, pg_query.MakeResTargetNodeWithVal(pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(l.name), pg_query.MakeAStarNode()}, -1), -1))
		}
	}
	s.TargetList = targets
	// Column references.
	find := func(qual, col string) func() *pg_query.Node {
		for _, it := range items {
			if qual != "" && qual != it.alias {
				continue
			}
			for i, c := range it.cols {
				if c == col {
					return it.exprs[i]
				}
			}
		}
		return nil
	}
	// A bare name inside a nested select reads an unnest column only
	// when no FROM item of the nested selects can have that column (the
	// catalog functions' templates nest selects over derived tables of
	// their own: pg_get_indexdef(i.indexrelid, k + 1)).
	var nested []*pg_query.SelectStmt
	free := func(col string) bool {
		for _, sel := range nested {
			if t.fromMayHave(sel.FromClause, col) {
				return false
			}
		}
		return true
	}
	var walk func(m protoreflect.Message, top bool)
	walk = func(m protoreflect.Message, top bool) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			if fd.Message() == nil || fd.IsMap() {
				return true
			}
			one := func(x protoreflect.Message) {
				n, ok := x.Interface().(*pg_query.Node)
				if ok && n != nil && n.Node != nil {
					if cr := n.GetColumnRef(); cr != nil {
						f := strs(cr.Fields)
						var e func() *pg_query.Node
						switch {
						case len(f) == 2 && cr.Fields[1].GetString_() != nil:
							e = find(f[0], f[1])
						case len(f) == 1 && cr.Fields[0].GetString_() != nil && (top || free(f[0])):
							e = find("", f[0])
						}
						if e != nil {
							n.Node = e().Node
						}
						return
					}
					if sel := n.GetSelectStmt(); sel != nil {
						nested = append(nested, sel)
						walk(x, false)
						nested = nested[:len(nested)-1]
						return
					}
				}
				walk(x, top)
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
	// Bare column names in the select list keep their names.
	for _, tn := range s.TargetList {
		rt := tn.GetResTarget()
		if cr := rt.GetVal().GetColumnRef(); rt != nil && rt.Name == "" && cr != nil {
			if f := cr.Fields[len(cr.Fields)-1].GetString_(); f != nil {
				q := ""
				if len(cr.Fields) == 2 {
					q = cr.Fields[0].GetString_().GetSval()
				}
				if find(q, f.Sval) != nil {
					rt.Name = f.Sval
				}
			}
		}
	}
	// Every clause, join conditions included.
	s.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				x := l.Get(i).Message()
				if n, ok := x.Interface().(*pg_query.Node); ok {
					wrapper := &pg_query.List{Items: []*pg_query.Node{n}}
					walk(wrapper.ProtoReflect(), true)
				}
			}
			return true
		}
		if n, ok := v.Message().Interface().(*pg_query.Node); ok {
			wrapper := &pg_query.List{Items: []*pg_query.Node{n}}
			walk(wrapper.ProtoReflect(), true)
		}
		return true
	})
}

// fromItemName is the name a FROM item's columns are qualified with.
func fromItemName(n *pg_query.Node) string {
	switch x := n.Node.(type) {
	case *pg_query.Node_RangeVar:
		if x.RangeVar.Alias != nil {
			return x.RangeVar.Alias.Aliasname
		}
		return x.RangeVar.Relname
	case *pg_query.Node_RangeSubselect:
		if x.RangeSubselect.Alias != nil {
			return x.RangeSubselect.Alias.Aliasname
		}
	case *pg_query.Node_RangeFunction:
		if x.RangeFunction.Alias != nil {
			return x.RangeFunction.Alias.Aliasname
		}
	}
	return ""
}

// setOpAll rewrites INTERSECT ALL and EXCEPT ALL, which SQLite lacks: each
// arm's rows are numbered within their group of equal rows
// (row_number() OVER (PARTITION BY every column)), so the plain INTERSECT
// or EXCEPT of the numbered rows keeps min(m, n) or max(m - n, 0) copies
// of a row, as PostgreSQL does:
//
//	WITH _l(c1, ...) AS (left), _r(c1, ...) AS (right)
//	SELECT c1 AS name1, ... FROM (SELECT c1, ..., row_number() OVER (PARTITION BY c1, ...) FROM _l
//	                             INTERSECT SELECT ... FROM _r) ORDER BY / LIMIT as written
func (t *translator) setOpAll(s *pg_query.SelectStmt) bool {
	if !s.All || (s.Op != pg_query.SetOperation_SETOP_INTERSECT && s.Op != pg_query.SetOperation_SETOP_EXCEPT) || s.Larg == nil || s.Rarg == nil {
		return false
	}
	names := targetNames(s.Larg)
	if names == nil {
		t.fail(unsupported("%s ALL of a select with *", map[bool]string{true: "INTERSECT", false: "EXCEPT"}[s.Op == pg_query.SetOperation_SETOP_INTERSECT]))
		return true
	}
	t.subq++
	l, r := fmt.Sprintf("_tandem_l%d", t.subq), fmt.Sprintf("_tandem_r%d", t.subq)
	var cols []string
	for i := range names {
		cols = append(cols, fmt.Sprintf("c%d", i+1))
	}
	strNodes := func() []*pg_query.Node {
		var out []*pg_query.Node
		for _, c := range cols {
			out = append(out, pg_query.MakeStrNode(c))
		}
		return out
	}
	arm := func(from string) *pg_query.SelectStmt {
		var targets, part []*pg_query.Node
		for _, c := range cols {
			targets = append(targets, pg_query.MakeResTargetNodeWithVal(colRef(c), -1))
			part = append(part, colRef(c))
		}
		rn := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("row_number")}, nil, -1)
		rn.GetFuncCall().Over = &pg_query.WindowDef{PartitionClause: part, FrameOptions: 1058}
		targets = append(targets, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: "_tandem_rn", Val: rn}}})
		return &pg_query.SelectStmt{TargetList: targets, FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: &pg_query.RangeVar{Relname: from, Inh: true, Relpersistence: "p"}}}}}
	}
	cte := func(name string, q *pg_query.SelectStmt) *pg_query.Node {
		return &pg_query.Node{Node: &pg_query.Node_CommonTableExpr{CommonTableExpr: &pg_query.CommonTableExpr{
			Ctename: name, Aliascolnames: strNodes(), Ctequery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: q}}}}}
	}
	inner := &pg_query.SelectStmt{Op: s.Op, Larg: arm(l), Rarg: arm(r)}
	var outTargets []*pg_query.Node
	for i, c := range cols {
		outTargets = append(outTargets, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: names[i], Val: colRef(c)}}})
	}
	with := s.WithClause
	if with == nil {
		with = &pg_query.WithClause{}
	}
	with.Ctes = append(with.Ctes, cte(l, s.Larg), cte(r, s.Rarg))
	*s = pg_query.SelectStmt{
		TargetList:  outTargets,
		FromClause:  []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: inner}}, Alias: &pg_query.Alias{Aliasname: fmt.Sprintf("_tandem_all%d", t.subq)}}}}},
		WithClause:  with,
		SortClause:  s.SortClause,
		LimitCount:  s.LimitCount,
		LimitOffset: s.LimitOffset,
		LimitOption: s.LimitOption,
		Op:          pg_query.SetOperation_SETOP_NONE,
	}
	return true
}

// distinctOn rewrites SELECT DISTINCT ON (d...) list ... ORDER BY s...:
// the first row of each group in the ORDER BY's order, numbered by a
// window function, with the sort keys carried out of the subquery:
//
//	SELECT name1, ... FROM (SELECT list, row_number() OVER (PARTITION BY d... ORDER BY s...) AS _rn,
//	                        s1 AS _o1, ... FROM ...) WHERE _rn = 1 ORDER BY _o1, ... LIMIT ...
func (t *translator) distinctOn(s *pg_query.SelectStmt) bool {
	if len(s.DistinctClause) == 0 || s.DistinctClause[0] == nil || s.DistinctClause[0].Node == nil {
		return false
	}
	names := targetNames(s)
	if names == nil || s.Op != pg_query.SetOperation_SETOP_NONE {
		t.fail(unsupported("SELECT DISTINCT ON with *"))
		return true
	}
	// A position or an output name in DISTINCT ON / ORDER BY means that
	// select-list entry.
	resolve := func(e *pg_query.Node) *pg_query.Node {
		if c := e.GetAConst(); c != nil && c.GetIval() != nil {
			if i := int(c.GetIval().Ival); i >= 1 && i <= len(s.TargetList) {
				return s.TargetList[i-1].GetResTarget().Val
			}
		}
		if cr := e.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_() != nil {
			for _, tn := range s.TargetList {
				if rt := tn.GetResTarget(); rt.Name != "" && rt.Name == cr.Fields[0].GetString_().Sval {
					return rt.Val
				}
			}
		}
		return e
	}
	t.sortNulls(s)
	t.subq++
	var part []*pg_query.Node
	for _, d := range s.DistinctClause {
		part = append(part, resolve(d))
	}
	var inner []*pg_query.Node
	for i, tn := range s.TargetList {
		rt := tn.GetResTarget()
		inner = append(inner, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: fmt.Sprintf("_tandem_c%d", i+1), Val: rt.Val}}})
	}
	var winOrder, outerOrder []*pg_query.Node
	for i, sn := range s.SortClause {
		sb := sn.GetSortBy()
		e := resolve(sb.Node)
		o := fmt.Sprintf("_tandem_o%d", i+1)
		inner = append(inner, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: o, Val: e}}})
		winOrder = append(winOrder, &pg_query.Node{Node: &pg_query.Node_SortBy{SortBy: &pg_query.SortBy{Node: e, SortbyDir: sb.SortbyDir, SortbyNulls: sb.SortbyNulls}}})
		outerOrder = append(outerOrder, &pg_query.Node{Node: &pg_query.Node_SortBy{SortBy: &pg_query.SortBy{Node: colRef(o), SortbyDir: sb.SortbyDir, SortbyNulls: sb.SortbyNulls}}})
	}
	rn := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode("row_number")}, nil, -1)
	rn.GetFuncCall().Over = &pg_query.WindowDef{PartitionClause: part, OrderClause: winOrder, FrameOptions: 1058}
	inner = append(inner, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: "_tandem_rn", Val: rn}}})
	sub := &pg_query.SelectStmt{
		TargetList: inner, FromClause: s.FromClause, WhereClause: s.WhereClause, GroupClause: s.GroupClause,
		HavingClause: s.HavingClause, WindowClause: s.WindowClause, Op: pg_query.SetOperation_SETOP_NONE,
	}
	var outer []*pg_query.Node
	for i, n := range names {
		outer = append(outer, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: n, Val: colRef(fmt.Sprintf("_tandem_c%d", i+1))}}})
	}
	*s = pg_query.SelectStmt{
		TargetList: outer,
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sub}}, Alias: &pg_query.Alias{Aliasname: fmt.Sprintf("_tandem_don%d", t.subq)}}}}},
		WhereClause: pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("=")}, colRef("_tandem_rn"), pg_query.MakeAConstIntNode(1, -1), -1),
		SortClause:  outerOrder,
		WithClause:  s.WithClause,
		LimitCount:  s.LimitCount,
		LimitOffset: s.LimitOffset,
		LimitOption: s.LimitOption,
		Op:          pg_query.SetOperation_SETOP_NONE,
	}
	return true
}

// seriesAsUnnest rewrites, before anything else reads the statement, the
// FROM items SQLite's derived tables cannot express as unnest of an array
// the series' arguments give, so that they take unnest's json_each path,
// which may read the FROM items before it (PostgreSQL's implicit
// LATERAL): generate_subscripts(arr, dim) in FROM (MikroORM's index query:
// FROM generate_subscripts(idx.indkey, 1) AS k), and generate_series
// whose bounds read a column (FROM t, generate_series(1, t.n) g). A
// generate_series of constants keeps its own plan (a recursive CTE, any
// length, any type).
func (t *translator) seriesAsUnnest(raw *pg_query.Node) {
	walkNode(raw, func(n *pg_query.Node) {
		rf := n.GetRangeFunction()
		if rf == nil || rf.IsRowsfrom || len(rf.Functions) != 1 {
			return
		}
		items := rf.Functions[0].GetList().GetItems()
		if len(items) == 0 || items[0].GetFuncCall() == nil || (len(items) > 1 && items[1] != nil && items[1].Node != nil) {
			return
		}
		f := items[0].GetFuncCall()
		name := lastName(f.Funcname)
		var arr *pg_query.Node
		switch {
		case name == "generate_subscripts" && (len(f.Args) == 1 || len(f.Args) == 2):
			arr = call("_pg_array_subscripts", f.Args...)
		case name == "generate_series" && (len(f.Args) == 2 || len(f.Args) == 3) && readsColumn(f.Args):
			arr = call("_pg_series_array", f.Args...)
		default:
			return
		}
		f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("unnest")}
		f.Args = []*pg_query.Node{arr}
		if rf.Alias == nil {
			rf.Alias = &pg_query.Alias{Aliasname: name}
		}
	})
}

// readsColumn: one of the expressions names a column.
func readsColumn(args []*pg_query.Node) bool {
	found := false
	for _, a := range args {
		if a.GetColumnRef() != nil {
			return true
		}
		walkNode(a, func(m *pg_query.Node) {
			if m.GetColumnRef() != nil {
				found = true
			}
		})
	}
	return found
}

// fromMayHave reports whether a FROM list may have a column named col:
// a table of the schema that has it (or whose columns tandem does not
// know), a subquery with an output of that name, any function.
func (t *translator) fromMayHave(from []*pg_query.Node, col string) bool {
	for _, n := range from {
		switch x := n.Node.(type) {
		case *pg_query.Node_RangeVar:
			if t.sch == nil {
				return true
			}
			cols := t.sch.Columns(x.RangeVar.Relname)
			if cols == nil {
				return true
			}
			for _, c := range cols {
				if strings.EqualFold(c.Name, col) {
					return true
				}
			}
		case *pg_query.Node_RangeSubselect:
			sub := x.RangeSubselect.Subquery.GetSelectStmt()
			if sub == nil {
				return true
			}
			names := targetNames(sub)
			if names == nil {
				return true
			}
			if x.RangeSubselect.Alias != nil {
				for _, c := range strs(x.RangeSubselect.Alias.Colnames) {
					if strings.EqualFold(c, col) {
						return true
					}
				}
			}
			for _, c := range names {
				if strings.EqualFold(c, col) {
					return true
				}
			}
		case *pg_query.Node_JoinExpr:
			if t.fromMayHave([]*pg_query.Node{x.JoinExpr.Larg, x.JoinExpr.Rarg}, col) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// eachColumns are the columns of SQLite's json_each, which unnest and
// the select list's set-returning functions become.
var eachColumns = map[string]bool{"key": true, "value": true, "type": true, "atom": true, "id": true, "parent": true, "fullkey": true, "path": true, "json": true, "root": true}

// qualifyEachNames qualifies the select's bare column names that a
// json_each about to join its FROM also has (id, key, value, type ...)
// with the FROM item they belong to: `SELECT id, unnest(tags) FROM posts`
// is otherwise an ambiguous column in SQLite.
func (t *translator) qualifyEachNames(s *pg_query.SelectStmt) {
	sc, _ := t.scopeOf(s.FromClause)
	if sc == nil {
		return
	}
	owner := func(col string) string {
		found := ""
		for _, tb := range sc.tables {
			for _, c := range tb.cols {
				if strings.EqualFold(c.Name, col) {
					if found != "" {
						return "" // PostgreSQL's error, not ours to settle
					}
					found = tb.alias
				}
			}
		}
		return found
	}
	fix := func(n *pg_query.Node) {
		walkNode(n, func(m *pg_query.Node) {
			if m.GetSelectStmt() != nil {
				return
			}
			cr := m.GetColumnRef()
			if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetString_() == nil {
				return
			}
			col := cr.Fields[0].GetString_().Sval
			if !eachColumns[strings.ToLower(col)] {
				return
			}
			if a := owner(col); a != "" {
				cr.Fields = []*pg_query.Node{pg_query.MakeStrNode(a), pg_query.MakeStrNode(col)}
			}
		})
	}
	wrap := func(n *pg_query.Node) {
		if n == nil || n.Node == nil {
			return
		}
		fix(&pg_query.Node{Node: &pg_query.Node_List{List: &pg_query.List{Items: []*pg_query.Node{n}}}})
	}
	for _, n := range s.TargetList {
		wrap(n)
	}
	wrap(s.WhereClause)
	wrap(s.HavingClause)
	for _, n := range s.GroupClause {
		wrap(n)
	}
	for _, n := range s.SortClause {
		wrap(n)
	}
}

// starOfFrom writes a bare * in the select list as each FROM item's own
// (t.*, ...) before json_each joins the FROM: its columns (key, value ...)
// are not the query's.
func starOfFrom(s *pg_query.SelectStmt) {
	var out []*pg_query.Node
	for _, tn := range s.TargetList {
		cr := tn.GetResTarget().GetVal().GetColumnRef()
		if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetAStar() == nil {
			out = append(out, tn)
			continue
		}
		for _, f := range s.FromClause {
			name := fromItemName(f)
			if name == "" {
				return // a join's merged columns: left as it was
			}
			out = append(out, pg_query.MakeResTargetNodeWithVal(pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(name), pg_query.MakeAStarNode()}, -1), -1))
		}
	}
	s.TargetList = out
}
