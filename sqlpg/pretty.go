package sqlpg

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// prettyExpr is an expression as ruleutils prints it with pretty set
// (pg_get_expr(e, rel, true), pg_get_indexdef(i, 0, true): psql's \d),
// from its plain print (every operator in parentheses): the
// parentheses its precedence rules make unneeded are left out, as
// isSimpleNode does. Outside the forms the catalog prints, the plain
// print without its outer parentheses.
func prettyExpr(s string) string {
	tree, err := pg_query.Parse("SELECT " + s)
	if err != nil || len(tree.Stmts) != 1 {
		return unparen(s)
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 || sel.FromClause != nil {
		return unparen(s)
	}
	p := prettyPrinter{}
	out := p.print(sel.TargetList[0].GetResTarget().GetVal())
	if p.bad {
		return unparen(s)
	}
	return out.text
}

type prettyPrinter struct{ bad bool }

// pnode is a printed node: its kind ("simple": a column, constant,
// function call or cast; "op", "bool", "test", "saop") and operator.
type pnode struct {
	text, kind, op string
}

// child is c as an argument of a parent of kind / operator op (left: c
// is its left operand), in parentheses unless isSimpleNode says not.
func (p *prettyPrinter) child(c pnode, kind, op string, left bool) string {
	simple := false
	switch c.kind {
	case "simple":
		simple = true
	case "op":
		switch kind {
		case "bool":
			simple = true
		case "op":
			lo, hi := strings.Contains("+-", c.op) && len(c.op) == 1, strings.Contains("*/%", c.op) && len(c.op) == 1
			plo, phi := strings.Contains("+-", op) && len(op) == 1, strings.Contains("*/%", op) && len(op) == 1
			switch {
			case !(lo || hi) || !(plo || phi):
			case hi && plo:
				simple = true
			case lo && phi:
			default:
				simple = left // (a - b) - c, not a - (b - c)
			}
		}
	case "test":
		simple = kind == "bool"
	case "bool":
		if kind == "bool" {
			simple = ((c.op == "NOT" || c.op == "AND") && (op == "AND" || op == "OR")) || (c.op == "OR" && op == "OR")
		}
	}
	if simple {
		return c.text
	}
	return "(" + c.text + ")"
}

func (p *prettyPrinter) print(n *pg_query.Node) pnode {
	if n == nil || p.bad {
		p.bad = true
		return pnode{}
	}
	switch {
	case n.GetColumnRef() != nil:
		var parts []string
		for _, f := range n.GetColumnRef().Fields {
			if f.GetString_() == nil {
				p.bad = true
				return pnode{}
			}
			parts = append(parts, quoteIdentIfNeeded(f.GetString_().Sval))
		}
		return pnode{text: strings.Join(parts, "."), kind: "simple"}
	case n.GetAConst() != nil:
		c := n.GetAConst()
		switch {
		case c.Isnull:
			return pnode{text: "NULL", kind: "simple"}
		case c.GetSval() != nil:
			return pnode{text: quoteLit(c.GetSval().Sval), kind: "simple"}
		case c.GetFval() != nil:
			return pnode{text: c.GetFval().Fval, kind: "simple"}
		case c.GetBoolval() != nil:
			return pnode{text: strconv.FormatBool(c.GetBoolval().Boolval), kind: "simple"}
		default:
			return pnode{text: strconv.FormatInt(int64(c.GetIval().GetIval()), 10), kind: "simple"}
		}
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		names := strs(tc.TypeName.Names)
		if len(names) == 0 || len(tc.TypeName.Typmods) > 0 {
			p.bad = true
			return pnode{}
		}
		typ := names[len(names)-1]
		if sql := checkTypeSQL[typ]; sql != "" {
			typ = sql
		}
		if len(tc.TypeName.ArrayBounds) > 0 {
			typ += "[]"
		}
		return pnode{text: p.child(p.print(tc.Arg), "cast", "", true) + "::" + typ, kind: "simple"}
	case n.GetFuncCall() != nil:
		f := n.GetFuncCall()
		if f.AggStar || f.AggDistinct || f.Over != nil || len(f.AggOrder) > 0 || f.AggFilter != nil {
			p.bad = true
			return pnode{}
		}
		var args []string
		for _, a := range f.Args {
			args = append(args, p.print(a).text)
		}
		return pnode{text: strings.Join(strs(f.Funcname), ".") + "(" + strings.Join(args, ", ") + ")", kind: "simple"}
	case n.GetAArrayExpr() != nil:
		var els []string
		for _, e := range n.GetAArrayExpr().Elements {
			els = append(els, p.print(e).text)
		}
		return pnode{text: "ARRAY[" + strings.Join(els, ", ") + "]", kind: "simple"}
	case n.GetBoolExpr() != nil:
		b := n.GetBoolExpr()
		op := map[pg_query.BoolExprType]string{pg_query.BoolExprType_AND_EXPR: "AND", pg_query.BoolExprType_OR_EXPR: "OR", pg_query.BoolExprType_NOT_EXPR: "NOT"}[b.Boolop]
		if op == "NOT" {
			if len(b.Args) != 1 {
				p.bad = true
				return pnode{}
			}
			return pnode{text: "NOT " + p.child(p.print(b.Args[0]), "bool", op, true), kind: "bool", op: op}
		}
		var parts []string
		for _, a := range b.Args {
			parts = append(parts, p.child(p.print(a), "bool", op, false))
		}
		return pnode{text: strings.Join(parts, " "+op+" "), kind: "bool", op: op}
	case n.GetNullTest() != nil:
		t := n.GetNullTest()
		test := " IS NULL"
		if t.Nulltesttype == pg_query.NullTestType_IS_NOT_NULL {
			test = " IS NOT NULL"
		}
		return pnode{text: p.child(p.print(t.Arg), "test", "", true) + test, kind: "test"}
	case n.GetBooleanTest() != nil:
		t := n.GetBooleanTest()
		test := map[pg_query.BoolTestType]string{pg_query.BoolTestType_IS_TRUE: "IS TRUE", pg_query.BoolTestType_IS_NOT_TRUE: "IS NOT TRUE",
			pg_query.BoolTestType_IS_FALSE: "IS FALSE", pg_query.BoolTestType_IS_NOT_FALSE: "IS NOT FALSE",
			pg_query.BoolTestType_IS_UNKNOWN: "IS UNKNOWN", pg_query.BoolTestType_IS_NOT_UNKNOWN: "IS NOT UNKNOWN"}[t.Booltesttype]
		if test == "" {
			p.bad = true
			return pnode{}
		}
		return pnode{text: p.child(p.print(t.Arg), "test", "", true) + " " + test, kind: "test"}
	case n.GetAExpr() != nil:
		a := n.GetAExpr()
		op := opName(a.Name)
		switch a.Kind {
		case pg_query.A_Expr_Kind_AEXPR_OP:
			if op == "" || a.Rexpr == nil {
				p.bad = true
				return pnode{}
			}
			r := p.child(p.print(a.Rexpr), "op", op, false)
			if a.Lexpr == nil {
				return pnode{text: op + " " + r, kind: "op", op: op}
			}
			return pnode{text: p.child(p.print(a.Lexpr), "op", op, true) + " " + op + " " + r, kind: "op", op: op}
		case pg_query.A_Expr_Kind_AEXPR_OP_ANY, pg_query.A_Expr_Kind_AEXPR_OP_ALL:
			q := "ANY"
			if a.Kind == pg_query.A_Expr_Kind_AEXPR_OP_ALL {
				q = "ALL"
			}
			return pnode{text: p.child(p.print(a.Lexpr), "saop", op, true) + " " + op + " " + q + " (" + p.print(a.Rexpr).text + ")", kind: "saop", op: op}
		}
	}
	p.bad = true
	return pnode{}
}

// prettyIndexdef is an index's definition (pg_indexes.indexdef) as
// pg_get_indexdef(i, 0, true) prints it: its expression keys and
// predicate pretty.
func prettyIndexdef(def string) string {
	open, items := indexColumnList(def)
	if open < 0 || len(items) == 0 {
		return def
	}
	var b strings.Builder
	b.WriteString(def[:open+1])
	for i, it := range items {
		s := def[open+1+it[0] : open+1+it[1]]
		if i > 0 {
			b.WriteString(",")
		}
		lead := len(s) - len(strings.TrimLeft(s, " "))
		body := strings.TrimLeft(s, " ")
		if strings.HasPrefix(body, "(") {
			if e := unparen(body); e != body {
				body = "(" + prettyExpr(e) + ")"
			}
		}
		b.WriteString(s[:lead] + body)
	}
	rest := def[open+1+items[len(items)-1][1]:] // from the closing parenthesis
	if w := strings.Index(rest, ") WHERE "); w == 0 {
		rest = ") WHERE " + prettyExpr(rest[len(") WHERE "):])
	}
	b.WriteString(rest)
	return b.String()
}
