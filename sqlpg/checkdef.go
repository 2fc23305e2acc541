package sqlpg

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// A CHECK constraint's expression as PostgreSQL prints it
// (pg_get_constraintdef, information_schema.check_constraints): the
// expression PostgreSQL's parse analysis makes of it, deparsed by
// ruleutils, every operator in parentheses, constants with the casts
// their coercion to the column's type adds. ORMs read that form back
// (MikroORM reads an enum's values from `s = ANY (ARRAY['a'::text, ...])`),
// and compare it with what they would write.
//
// The stored text is tandem's translation (libpg_query's deparse of the
// rewritten tree), so it is parsed again here and printed for the subset
// whose analysis is known: columns, literals, comparisons, IN lists,
// BETWEEN, AND / OR / NOT, IS [NOT] NULL, LIKE, integer arithmetic and a
// few string functions. Anything else keeps the stored text.

// pgCheckExpr is expr (the stored CHECK's parenthesised group) as
// PostgreSQL prints it; types maps each column (lower case) to its type
// OID. ok is false when some part is outside the subset.
func pgCheckExpr(expr string, types map[string]uint32) (out string, ok bool) {
	e, ok := deparseStored(expr, types)
	if !ok || e.typ != "bool" {
		return "", false
	}
	return e.text, true
}

// deparseStored parses a stored expression and deparses it as
// PostgreSQL prints it; ok is false when some part is outside the subset.
func deparseStored(expr string, types map[string]uint32) (dexpr, bool) {
	tree, err := pg_query.Parse("SELECT " + expr)
	if err != nil || len(tree.Stmts) != 1 {
		return dexpr{}, false
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 || sel.FromClause != nil {
		return dexpr{}, false
	}
	d := checkDeparser{types: types}
	e := d.expr(sel.TargetList[0].GetResTarget().GetVal())
	return e, !d.bad
}

type checkDeparser struct {
	types map[string]uint32
	bad   bool
}

// dexpr is a deparsed expression and its type ("unknown" for a string
// literal not yet coerced; lit: the literal's value then).
type dexpr struct {
	text, typ string
	konst     bool // a constant (a literal, or a cast of one)
	lit       string
}

var checkTypeSQL = map[string]string{
	"text": "text", "varchar": "character varying", "bpchar": "bpchar", "int2": "smallint", "int4": "integer",
	"int8": "bigint", "numeric": "numeric", "bool": "boolean",
	// Columns of these types are printed, compared with their own type
	// and tested for NULL; no literal is coerced to them.
	"timestamptz": "timestamp with time zone", "timestamp": "timestamp without time zone", "date": "date",
	"float8": "double precision", "float4": "real", "uuid": "uuid", "jsonb": "jsonb", "json": "json", "bytea": "bytea",
}

func (d *checkDeparser) fail() dexpr {
	d.bad = true
	return dexpr{}
}

func (d *checkDeparser) expr(n *pg_query.Node) dexpr {
	if n == nil || d.bad {
		return d.fail()
	}
	switch {
	case n.GetColumnRef() != nil:
		f := n.GetColumnRef().Fields
		if len(f) != 1 || f[0].GetString_() == nil {
			return d.fail()
		}
		name := f[0].GetString_().Sval
		oid, ok := d.types[strings.ToLower(name)]
		t := Types[oid]
		if !ok || t == nil || checkTypeSQL[t.Name] == "" {
			return d.fail()
		}
		return dexpr{text: quoteIdentIfNeeded(name), typ: t.Name}
	case n.GetAConst() != nil:
		c := n.GetAConst()
		switch {
		case c.Isnull:
			return d.fail()
		case c.GetIval() != nil || (c.GetSval() == nil && c.GetFval() == nil && c.GetBoolval() == nil):
			v := int64(c.GetIval().GetIval())
			if v < 0 {
				return dexpr{text: "'" + strconv.FormatInt(v, 10) + "'::integer", typ: "int4", konst: true}
			}
			return dexpr{text: strconv.FormatInt(v, 10), typ: "int4", konst: true}
		case c.GetFval() != nil:
			s := c.GetFval().Fval
			typ, sql := "numeric", "numeric"
			if !strings.ContainsAny(s, ".eE") {
				typ, sql = "int8", "bigint" // an integer too large for int4
			}
			if strings.HasPrefix(s, "-") {
				return dexpr{text: "'" + s + "'::" + sql, typ: typ, konst: true}
			}
			return dexpr{text: s, typ: typ, konst: true}
		case c.GetSval() != nil:
			return dexpr{typ: "unknown", konst: true, lit: c.GetSval().Sval}
		case c.GetBoolval() != nil:
			if c.GetBoolval().Boolval {
				return dexpr{text: "true", typ: "bool", konst: true}
			}
			return dexpr{text: "false", typ: "bool", konst: true}
		}
		return d.fail()
	case n.GetBoolExpr() != nil:
		b := n.GetBoolExpr()
		var parts []string
		for _, a := range b.Args {
			e := d.expr(a)
			if d.bad || e.typ != "bool" {
				return d.fail()
			}
			parts = append(parts, e.text)
		}
		switch b.Boolop {
		case pg_query.BoolExprType_AND_EXPR:
			return dexpr{text: "(" + strings.Join(parts, " AND ") + ")", typ: "bool"}
		case pg_query.BoolExprType_OR_EXPR:
			return dexpr{text: "(" + strings.Join(parts, " OR ") + ")", typ: "bool"}
		case pg_query.BoolExprType_NOT_EXPR:
			if f := b.Args[0].GetFuncCall(); f != nil && len(parts) == 1 && strings.HasSuffix(parts[0], ")") && strings.Contains(parts[0], " ~~ ") &&
				len(f.Funcname) == 1 && strings.EqualFold(f.Funcname[0].GetString_().GetSval(), "like") {
				return dexpr{text: strings.Replace(parts[0], " ~~ ", " !~~ ", 1), typ: "bool"} // NOT LIKE
			}
			if len(parts) == 1 {
				return dexpr{text: "(NOT " + parts[0] + ")", typ: "bool"}
			}
		}
		return d.fail()
	case n.GetNullTest() != nil:
		t := n.GetNullTest()
		e := d.expr(t.Arg)
		if d.bad || e.typ == "unknown" {
			return d.fail()
		}
		if t.Nulltesttype == pg_query.NullTestType_IS_NOT_NULL {
			return dexpr{text: "(" + e.text + " IS NOT NULL)", typ: "bool"}
		}
		return dexpr{text: "(" + e.text + " IS NULL)", typ: "bool"}
	case n.GetBooleanTest() != nil:
		t := n.GetBooleanTest()
		e := d.expr(t.Arg)
		if d.bad || e.typ != "bool" {
			return d.fail()
		}
		test := map[pg_query.BoolTestType]string{pg_query.BoolTestType_IS_TRUE: "IS TRUE", pg_query.BoolTestType_IS_NOT_TRUE: "IS NOT TRUE",
			pg_query.BoolTestType_IS_FALSE: "IS FALSE", pg_query.BoolTestType_IS_NOT_FALSE: "IS NOT FALSE",
			pg_query.BoolTestType_IS_UNKNOWN: "IS UNKNOWN", pg_query.BoolTestType_IS_NOT_UNKNOWN: "IS NOT UNKNOWN"}[t.Booltesttype]
		if test == "" {
			return d.fail()
		}
		return dexpr{text: "(" + e.text + " " + test + ")", typ: "bool"}
	case n.GetAExpr() != nil:
		return d.aexpr(n.GetAExpr())
	case n.GetFuncCall() != nil:
		return d.funcCall(n.GetFuncCall())
	}
	return d.fail()
}

func opName(names []*pg_query.Node) string {
	if len(names) != 1 || names[0].GetString_() == nil {
		return ""
	}
	return names[0].GetString_().Sval
}

func (d *checkDeparser) aexpr(a *pg_query.A_Expr) dexpr {
	op := opName(a.Name)
	switch a.Kind {
	case pg_query.A_Expr_Kind_AEXPR_OP:
		if a.Lexpr == nil {
			return d.fail()
		}
		return d.binary(op, d.expr(a.Lexpr), d.expr(a.Rexpr))
	case pg_query.A_Expr_Kind_AEXPR_IN:
		return d.in(op, a.Lexpr, a.Rexpr)
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		l := a.Rexpr.GetList()
		if l == nil || len(l.Items) != 2 {
			return d.fail()
		}
		x := d.expr(a.Lexpr)
		if a.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN {
			lo, hi := d.binary(">=", x, d.expr(l.Items[0])), d.binary("<=", x, d.expr(l.Items[1]))
			return dexpr{text: "(" + lo.text + " AND " + hi.text + ")", typ: "bool"}
		}
		lo, hi := d.binary("<", x, d.expr(l.Items[0])), d.binary(">", x, d.expr(l.Items[1]))
		return dexpr{text: "(" + lo.text + " OR " + hi.text + ")", typ: "bool"}
	}
	return d.fail()
}

// checkNumRank orders the numeric types as PostgreSQL's implicit casts do.
var checkNumRank = map[string]int{"int2": 1, "int4": 2, "int8": 3, "numeric": 4}

func isString(t string) bool { return t == "text" || t == "varchar" || t == "bpchar" }

// coerce is e as type to: a literal takes the type (with its cast
// printed), anything else is cast.
func (d *checkDeparser) coerce(e dexpr, to string) dexpr {
	if d.bad {
		return e
	}
	if e.typ == to {
		return e
	}
	sql := checkTypeSQL[to]
	if sql == "" {
		return d.fail()
	}
	if e.typ == "unknown" {
		if !isString(to) {
			return d.fail()
		}
		return dexpr{text: quoteLit(e.lit) + "::" + sql, typ: to, konst: true}
	}
	return dexpr{text: "(" + e.text + ")::" + sql, typ: to, konst: e.konst}
}

// common is the type PostgreSQL's select_common_type gives these.
func (d *checkDeparser) common(es []dexpr) string {
	t := "unknown"
	for _, e := range es {
		switch {
		case e.typ == "unknown" || e.typ == t:
		case t == "unknown":
			t = e.typ
		case checkNumRank[t] > 0 && checkNumRank[e.typ] > 0:
			if checkNumRank[e.typ] > checkNumRank[t] {
				t = e.typ
			}
		case isString(t) && isString(e.typ):
			t = "text"
		default:
			d.bad = true
		}
	}
	if t == "unknown" {
		t = "text"
	}
	return t
}

// operands makes l and r fit a comparison operator PostgreSQL has: the
// integer types compare across, a numeric with an integer as numeric,
// the string types as text unless both are bpchar.
func (d *checkDeparser) operands(l, r dexpr) (dexpr, dexpr) {
	switch {
	case l.typ == "unknown" && r.typ == "unknown":
		return d.coerce(l, "text"), d.coerce(r, "text")
	case l.typ == "unknown":
		l = d.coerce(l, textFor(r.typ))
	case r.typ == "unknown":
		r = d.coerce(r, textFor(l.typ))
	}
	switch {
	case l.typ == r.typ && l.typ != "varchar":
		return l, r
	case checkNumRank[l.typ] > 0 && checkNumRank[r.typ] > 0:
		if l.typ == "numeric" || r.typ == "numeric" {
			return d.coerce(l, "numeric"), d.coerce(r, "numeric")
		}
		return l, r
	case isString(l.typ) && isString(r.typ):
		return d.coerce(l, "text"), d.coerce(r, "text")
	}
	d.bad = true
	return l, r
}

// textFor is the type a string literal compared with a t takes: t, but
// text for a varchar (varchar's comparisons are text's).
func textFor(t string) string {
	if t == "varchar" {
		return "text"
	}
	return t
}

func (d *checkDeparser) binary(op string, l, r dexpr) dexpr {
	if d.bad {
		return dexpr{}
	}
	switch op {
	case "!=":
		op = "<>"
		fallthrough
	case "=", "<>", "<", ">", "<=", ">=":
		l, r = d.operands(l, r)
		return dexpr{text: "(" + l.text + " " + op + " " + r.text + ")", typ: "bool"}
	case "+", "-", "*", "/", "%":
		if checkNumRank[l.typ] == 0 || checkNumRank[l.typ] > 3 || l.typ != r.typ {
			return d.fail() // integers of one type only
		}
		return dexpr{text: "(" + l.text + " " + op + " " + r.text + ")", typ: l.typ}
	}
	return d.fail()
}

func (d *checkDeparser) in(op string, lexpr, rexpr *pg_query.Node) dexpr {
	list := rexpr.GetList()
	if list == nil || len(list.Items) == 0 || (op != "=" && op != "<>") {
		return d.fail()
	}
	x := d.expr(lexpr)
	if x.konst {
		return d.fail()
	}
	var items []dexpr
	for _, it := range list.Items {
		e := d.expr(it)
		if !e.konst {
			return d.fail() // PostgreSQL makes an OR of comparisons then
		}
		items = append(items, e)
	}
	if d.bad {
		return dexpr{}
	}
	if len(items) == 1 {
		return d.binary(op, x, items[0])
	}
	ct := d.common(append([]dexpr{x}, items...))
	parts := make([]string, len(items))
	for i, e := range items {
		parts[i] = d.coerce(e, ct).text
	}
	if d.bad {
		return dexpr{}
	}
	arr := "ARRAY[" + strings.Join(parts, ", ") + "]"
	switch {
	case ct == "varchar":
		// No varchar = varchar: text's, the array cast to text[].
		x, arr = d.coerce(x, "text"), "("+arr+")::text[]"
	case checkNumRank[ct] > 0 && checkNumRank[x.typ] > 0 && (ct == "numeric") != (x.typ == "numeric"):
		x = d.coerce(x, "numeric")
	case ct != x.typ && !(checkNumRank[ct] > 0 && checkNumRank[x.typ] > 0):
		x = d.coerce(x, ct)
	}
	quant := "ANY"
	if op == "<>" {
		quant = "ALL"
	}
	return dexpr{text: "(" + x.text + " " + op + " " + quant + " (" + arr + "))", typ: "bool"}
}

func (d *checkDeparser) funcCall(f *pg_query.FuncCall) dexpr {
	if len(f.Funcname) != 1 || f.AggStar || f.AggDistinct || f.Over != nil {
		return d.fail()
	}
	name := strings.ToLower(f.Funcname[0].GetString_().GetSval())
	switch {
	case (name == "_pg_div" || name == "_pg_mod") && len(f.Args) == 2:
		// tandem's / and % (PostgreSQL's division by zero, integer
		// division of integers).
		return d.binary(map[string]string{"_pg_div": "/", "_pg_mod": "%"}[name], d.expr(f.Args[0]), d.expr(f.Args[1]))
	case (name == "_pg_int2_range" || name == "_pg_int4_range" || name == "_pg_int8_range") && len(f.Args) == 1:
		// tandem's overflow check around integer arithmetic: the
		// arithmetic itself.
		return d.expr(f.Args[0])
	case name == "like" && len(f.Args) == 3:
		// LIKE as tandem writes it: like(pattern, x, escape '\').
		if esc := f.Args[2].GetAConst().GetSval(); esc == nil || esc.Sval != `\` {
			return d.fail()
		}
		x, p := d.operands(d.expr(f.Args[1]), d.expr(f.Args[0]))
		if !isString(x.typ) {
			return d.fail()
		}
		return dexpr{text: "(" + x.text + " ~~ " + p.text + ")", typ: "bool"}
	case (name == "length" || name == "char_length" || name == "lower" || name == "upper") && len(f.Args) == 1:
		a := d.expr(f.Args[0])
		if !isString(a.typ) && a.typ != "unknown" {
			return d.fail()
		}
		if a.typ != "bpchar" {
			a = d.coerce(a, "text")
		}
		typ := "text"
		if name == "length" || name == "char_length" {
			typ = "int4"
		}
		if a.typ == "bpchar" && typ == "text" {
			return d.fail() // lower(bpchar) is lower(text) over a cast
		}
		return dexpr{text: name + "(" + a.text + ")", typ: typ}
	}
	return d.fail()
}

// pgExpr is expr (a stored expression, its parenthesised group) as
// PostgreSQL prints it, of any type the subset knows (a generated
// column's expression, an index's predicate).
func pgExpr(expr string, types map[string]uint32) (out string, ok bool) {
	e, ok := deparseStored(expr, types)
	if !ok || e.typ == "unknown" {
		return "", false
	}
	return e.text, true
}

// GeneratedExpr is the parenthesised expression of column col's
// GENERATED ALWAYS AS (...) in a CREATE TABLE text, "" if it has none.
func GeneratedExpr(create, col string) string {
	open := strings.IndexByte(create, '(')
	if open < 0 {
		return ""
	}
	items, err := splitTop(create[open+1:])
	if err != nil {
		return ""
	}
	for _, it := range items {
		toks := tokens(create[open+1+it[0] : open+1+it[1]])
		if len(toks) == 0 || !strings.EqualFold(unquoteIdent(toks[0].text), col) {
			continue
		}
		for j := 1; j+1 < len(toks); j++ {
			if strings.EqualFold(toks[j].text, "AS") && strings.HasPrefix(toks[j+1].text, "(") &&
				(strings.EqualFold(toks[j-1].text, "ALWAYS") || strings.EqualFold(toks[j-1].text, "GENERATED")) {
				return toks[j+1].text
			}
		}
	}
	return ""
}
