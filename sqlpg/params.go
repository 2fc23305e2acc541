package sqlpg

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Parameter types, as PostgreSQL reports them in ParameterDescription.
// Drivers encode a value by the type the server gives its parameter
// (asyncpg sends every one in binary and refuses a value that does not
// fit; pgjdbc and pgx pick a codec by it), so an explicit cast must give
// its type: `$1::int` is int4, `$1::oid[]` oid[], `$1::mood` the enum.
// Besides casts, a parameter compared with an expression of known type
// takes that type (`price > $1`), one in `x = ANY($1)` the array of x's
// type, one in `x IN ($1, $2)` x's type. The back end fills what this
// leaves unknown from the statement's text (INSERT ... VALUES, LIMIT).

// castParams records the types of parameters under an explicit cast.
// It runs on the parsed statement, before anything rewrites it.
func (t *translator) castParams(raw *pg_query.Node) {
	walkNode(raw, func(n *pg_query.Node) {
		if f := n.GetFuncCall(); f != nil {
			t.noteFuncParams(f)
			return
		}
		c := n.GetTypeCast()
		if c == nil || c.Arg.GetParamRef() == nil || c.TypeName == nil {
			return
		}
		t.setParam(c.Arg.GetParamRef().Number, t.oidOfTypeName(c.TypeName))
	})
}

// oidOfTypeName is the OID of a type name (0 when tandem does not know
// it): an enum's own, a reg* type's PostgreSQL OID.
func (t *translator) oidOfTypeName(tn *pg_query.TypeName) uint32 {
	names := strs(tn.Names)
	if len(names) == 0 {
		return 0
	}
	switch strings.ToLower(names[len(names)-1]) {
	case "regclass":
		return 2205
	case "regtype":
		return 2206
	case "regproc":
		return 24
	case "regprocedure":
		return 2202
	case "regnamespace":
		return 4089
	case "regrole":
		return 4096
	}
	typ, _, e, err := t.resolveType(tn)
	switch {
	case err != nil:
		return 0
	case e != nil:
		return e.OID
	}
	return typ.OID
}

// setParam records parameter $i's type; the first type found holds
// (castParams runs first: a cast is what PostgreSQL goes by).
func (t *translator) setParam(i int32, oid uint32) {
	if i < 1 || i > 65535 || oid == 0 {
		return
	}
	for int(i) > len(t.params) {
		t.params = append(t.params, 0)
	}
	if t.params[i-1] == 0 {
		t.params[i-1] = oid
	}
}

// funcParams are the argument types of functions a client calls with
// parameters (pg_terminate_backend($1)), by name and argument count.
var funcParams = map[string][]uint32{
	"pg_terminate_backend/1": {23}, "pg_cancel_backend/1": {23}, "pg_sleep/1": {701},
	"pg_advisory_lock/1": {20}, "pg_advisory_unlock/1": {20}, "pg_try_advisory_lock/1": {20},
	"pg_advisory_xact_lock/1": {20}, "pg_try_advisory_xact_lock/1": {20},
	"pg_advisory_lock_shared/1": {20}, "pg_advisory_unlock_shared/1": {20}, "pg_try_advisory_lock_shared/1": {20},
	"pg_advisory_lock/2": {23, 23}, "pg_advisory_unlock/2": {23, 23}, "pg_try_advisory_lock/2": {23, 23},
	"pg_advisory_xact_lock/2": {23, 23}, "pg_try_advisory_xact_lock/2": {23, 23},
	"current_setting/1": {25}, "current_setting/2": {25, 16}, "set_config/3": {25, 25, 16},
	"pg_notify/2": {25, 25},
}

// noteFuncParams types the parameters passed straight to a function of
// funcParams.
func (t *translator) noteFuncParams(f *pg_query.FuncCall) {
	types := funcParams[lastName(f.Funcname)+"/"+strconv.Itoa(len(f.Args))]
	for i, a := range f.Args {
		if p := a.GetParamRef(); p != nil && i < len(types) {
			t.setParam(p.Number, types[i])
		}
	}
}

// OID is the type's OID in RowDescription and ParameterDescription: an
// enum column's is its enum type's (0 when unknown).
func (c ColType) OID() uint32 {
	if c.Enum != nil {
		return c.Enum.OID
	}
	if c.Type != nil {
		return c.Type.OID
	}
	return 0
}

// compared is the type a parameter compared with an expression of type c
// takes: c's, but text for a varchar (varchar has no operators of its
// own: PostgreSQL compares it as text).
func compared(c ColType) uint32 {
	if c.Enum == nil && c.Type != nil && c.Type.Name == "varchar" {
		return TypeByName["text"].OID
	}
	return c.OID()
}

// noteParams types the parameters an operator meets (sc: the tables in
// scope), as PostgreSQL resolves an operator with one unknown argument:
// the unknown takes the other argument's type where such an operator
// exists (`id + $1`: int4, `ts - $1`: timestamptz), else the one
// operator that takes the known type (`ts + $1`: interval, `j ->> $1`:
// text).
func (t *translator) noteParams(e *pg_query.A_Expr, sc *scope) {
	if e == nil || e.Rexpr == nil {
		return
	}
	if e.Lexpr == nil {
		return // prefix operators: `-$1` is ambiguous in PostgreSQL too
	}
	lp, rp := paramOf(e.Lexpr), paramOf(e.Rexpr)
	other := func() (int32, ColType) {
		if rp != 0 {
			return rp, t.exprType(e.Lexpr, sc)
		}
		return lp, t.exprType(e.Rexpr, sc)
	}
	switch e.Kind {
	case pg_query.A_Expr_Kind_AEXPR_OP:
		op := lastName(e.Name)
		if l, r := e.Lexpr.GetRowExpr(), e.Rexpr.GetRowExpr(); l != nil && r != nil && isComparison(op) {
			t.rowParams(l.Args, r.Args, sc) // (a, b) = ($1, $2)
			return
		}
		if lp == 0 && rp == 0 {
			return
		}
		if lp != 0 && rp != 0 {
			if op == "||" {
				t.setParam(lp, 25)
				t.setParam(rp, 25)
			}
			return
		}
		p, o := other()
		t.setParam(p, opParam(op, o, rp != 0))
	case pg_query.A_Expr_Kind_AEXPR_DISTINCT, pg_query.A_Expr_Kind_AEXPR_NOT_DISTINCT:
		if (lp == 0) != (rp == 0) {
			p, o := other()
			t.setParam(p, compared(o))
		}
	case pg_query.A_Expr_Kind_AEXPR_NULLIF:
		if (lp == 0) != (rp == 0) {
			p, o := other()
			t.setParam(p, o.OID())
		}
	case pg_query.A_Expr_Kind_AEXPR_LIKE, pg_query.A_Expr_Kind_AEXPR_ILIKE:
		if f := e.Rexpr.GetFuncCall(); f != nil && lastName(f.Funcname) == "like_escape" && len(f.Args) == 2 {
			// x LIKE $1 ESCAPE 'c' is x LIKE like_escape($1, 'c'): text
			// (Tortoise ORM's startswith; asyncpg cannot send an
			// untyped parameter).
			t.setParam(paramOf(f.Args[0]), 25)
			t.setParam(paramOf(f.Args[1]), 25)
		}
		if rp != 0 {
			if ct := t.exprType(e.Lexpr, sc); ct.Type == nil || ct.Type.Cat == 'S' && ct.Enum == nil {
				t.setParam(rp, 25)
			}
		}
		if lp != 0 {
			t.setParam(lp, 25)
		}
	case pg_query.A_Expr_Kind_AEXPR_OP_ANY, pg_query.A_Expr_Kind_AEXPR_OP_ALL:
		if rp != 0 {
			if ct := t.exprType(e.Lexpr, sc); ct.Type != nil && ct.Enum == nil && ct.Type.Array != 0 && Types[ct.Type.Array] != nil {
				if el := Types[compared(ct)]; el != nil && el.Array != 0 {
					t.setParam(rp, el.Array)
				}
			}
		} else if lp != 0 {
			// $1 = ANY(ARRAY[1, 2]): the array's element type.
			if ct := t.exprType(e.Rexpr, sc); ct.Type != nil && ct.Type.Elem != 0 {
				t.setParam(lp, ct.Type.Elem)
			}
		}
	case pg_query.A_Expr_Kind_AEXPR_IN:
		l := e.Rexpr.GetList()
		if l == nil {
			return
		}
		if row := e.Lexpr.GetRowExpr(); row != nil {
			for _, item := range l.Items { // (a, b) IN (($1, $2), ...)
				if r := item.GetRowExpr(); r != nil {
					t.rowParams(row.Args, r.Args, sc)
				}
			}
			return
		}
		if lp != 0 {
			if c := t.commonType(l.Items, sc); c != 0 {
				t.setParam(lp, c)
			}
			return
		}
		var oid uint32
		for _, item := range l.Items {
			if p := paramOf(item); p != 0 {
				if oid == 0 {
					oid = t.exprType(e.Lexpr, sc).OID() // varchar stays varchar here
				}
				t.setParam(p, oid)
			}
		}
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN,
		pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
		l := e.Rexpr.GetList()
		if l == nil {
			return
		}
		if lp != 0 {
			t.setParam(lp, t.commonType(l.Items, sc))
			return
		}
		var oid uint32
		for _, item := range l.Items {
			if p := paramOf(item); p != 0 {
				if oid == 0 {
					oid = compared(t.exprType(e.Lexpr, sc))
				}
				t.setParam(p, oid)
			}
		}
	}
}

func isComparison(op string) bool {
	switch op {
	case "=", "<>", "!=", "<", ">", "<=", ">=":
		return true
	}
	return false
}

// paramOf is n's parameter number when n is a bare parameter ($3), else 0.
func paramOf(n *pg_query.Node) int32 {
	if p := n.GetParamRef(); p != nil {
		return p.Number
	}
	return 0
}

// rowParams types the parameters of one row compared with another,
// column by column.
func (t *translator) rowParams(l, r []*pg_query.Node, sc *scope) {
	for i := range min(len(l), len(r)) {
		if p := paramOf(r[i]); p != 0 {
			t.setParam(p, compared(t.exprType(l[i], sc)))
		} else if p := paramOf(l[i]); p != 0 {
			t.setParam(p, compared(t.exprType(r[i], sc)))
		}
	}
}

// opParam is the type PostgreSQL gives an unknown operand of op whose
// other operand has type o (onRight: the unknown is the right operand);
// 0 where PostgreSQL finds no single operator, or tandem does not know.
func opParam(op string, o ColType, onRight bool) uint32 {
	if o.Type == nil {
		return 0
	}
	name := o.Type.Name
	if o.Enum != nil {
		name = "enum"
	}
	if isComparison(op) {
		return compared(o)
	}
	switch op {
	case "+", "-", "*", "/", "%":
		switch name {
		case "int2", "int4", "int8", "numeric", "float4", "float8":
			return o.Type.OID
		case "timestamptz", "timestamp":
			switch {
			case op == "-" && onRight:
				return o.Type.OID // ts - ts: an interval
			case op == "+":
				return 1186
			}
		case "date":
			if op == "-" && onRight {
				return 1082
			}
		case "interval":
			switch op {
			case "+", "-":
				return 1186
			case "*", "/":
				if onRight {
					return 701
				}
			}
		}
	case "||":
		switch {
		case name == "jsonb":
			return 3802
		case o.Type.Elem != 0:
			return o.Type.OID // an array with an array
		case o.Type.Cat == 'S' || name == "enum":
			return 25
		}
	case "~", "~*", "!~", "!~*":
		if o.Type.Cat == 'S' {
			return 25
		}
	case "->", "->>", "?":
		if onRight && (name == "jsonb" || name == "json" && op != "?") {
			return 25
		}
	case "#>", "#>>", "?|", "?&":
		if onRight && (name == "jsonb" || name == "json" && op[0] == '#') {
			return 1009
		}
	case "@>", "<@", "&&":
		if name == "jsonb" && op != "&&" || o.Type.Elem != 0 {
			return o.Type.OID
		}
	case "@?", "@@":
		if onRight && name == "jsonb" {
			return 4072
		}
	}
	if op == "-" && onRight && name == "jsonb" {
		return 25 // jsonb - key
	}
	return 0
}

// numRank orders the numeric types as PostgreSQL's implicit casts do.
var numRank = map[string]int{"int2": 1, "int4": 2, "int8": 3, "numeric": 4, "float4": 5, "float8": 6}

// commonType is the type PostgreSQL resolves a list of expressions to
// (a CASE's results, COALESCE's arguments, an ARRAY's elements) for
// the unknowns among them: the widest numeric type, else the first
// known type, else text.
func (t *translator) commonType(items []*pg_query.Node, sc *scope) uint32 {
	var first ColType
	best, rank := ColType{}, 0
	for _, it := range items {
		if paramOf(it) != 0 && t.paramType(paramOf(it)) == 0 {
			continue
		}
		if c := it.GetAConst(); c != nil && (c.Isnull || c.GetSval() != nil) {
			continue // unknown literals: typed by the others
		}
		c := t.exprType(it, sc)
		if c.Type == nil {
			continue
		}
		if first.Type == nil {
			first = c
		}
		if r := numRank[c.Type.Name]; r > rank && c.Enum == nil {
			best, rank = c, r
		}
	}
	switch {
	case rank > 0:
		return best.Type.OID
	case first.Type != nil:
		return first.OID()
	}
	return 25
}

// paramType is parameter i's type found so far (0: none yet).
func (t *translator) paramType(i int32) uint32 {
	if i >= 1 && int(i) <= len(t.params) {
		return t.params[i-1]
	}
	return 0
}

// commonParams types the unknown parameters among items by commonType.
func (t *translator) commonParams(items []*pg_query.Node, sc *scope) {
	var oid uint32
	for _, it := range items {
		if p := paramOf(it); p != 0 && t.paramType(p) == 0 {
			if oid == 0 {
				oid = t.commonType(items, sc)
			}
			t.setParam(p, oid)
		}
	}
}

// funcArgs are the argument types PostgreSQL resolves an unknown
// argument of these functions to (0: not typed by position), by name,
// or by name and argument count where overloads differ.
var funcArgs = map[string][]uint32{
	"lower": {25}, "upper": {25}, "length": {25}, "char_length": {25}, "character_length": {25}, "octet_length": {25}, "bit_length": {25},
	"substr": {25, 23, 23}, "substring": {25, 23, 23}, "replace": {25, 25, 25}, "btrim": {25, 25}, "ltrim": {25, 25}, "rtrim": {25, 25},
	"left": {25, 23}, "right": {25, 23}, "strpos": {25, 25}, "position": {25, 25}, "split_part": {25, 25, 23}, "md5": {25},
	"repeat": {25, 23}, "initcap": {25}, "reverse": {25}, "lpad": {25, 23, 25}, "rpad": {25, 23, 25}, "ascii": {25}, "chr": {23},
	"regexp_replace": {25, 25, 25, 25}, "regexp_match": {25, 25, 25}, "regexp_matches": {25, 25, 25},
	"regexp_split_to_array": {25, 25, 25}, "regexp_split_to_table": {25, 25, 25}, "starts_with": {25, 25}, "translate": {25, 25, 25},
	"to_number": {25, 25}, "to_date": {25, 25}, "to_timestamp/1": {701}, "to_timestamp/2": {25, 25},
	"quote_ident": {25}, "quote_literal": {25}, "quote_nullable": {25}, "string_to_array": {25, 25, 25},
	"array_to_string": {0, 25, 25}, "date_trunc": {25, 0, 25}, "date_part": {25}, "to_char": {0, 25}, "string_agg": {25, 25},
	"make_date": {23, 23, 23}, "make_time": {23, 23, 701}, "make_timestamp": {23, 23, 23, 23, 23, 701},
	"make_timestamptz": {23, 23, 23, 23, 23, 701, 25}, "encode": {17, 25}, "decode": {25, 25}, "similar_to_escape": {25, 25},
	"abs/1": {701}, "sqrt": {701}, "cbrt": {701}, "exp": {701}, "ln": {701}, "power": {701, 701}, "pow": {701, 701},
	"jsonb_set": {0, 1009, 3802, 16}, "jsonb_insert": {0, 1009, 3802, 16}, "jsonb_extract_path_text": {0, 25},
	"jsonb_extract_path": {0, 25}, "to_tsvector/1": {25}, "to_tsquery/1": {25}, "plainto_tsquery/1": {25},
	"gen_random_uuid": {}, "uuid_generate_v4": {},
	"jsonb_path_query": {3802, 4072, 3802, 16}, "jsonb_path_query_array": {3802, 4072, 3802, 16}, "jsonb_path_query_first": {3802, 4072, 3802, 16},
	"jsonb_path_exists": {3802, 4072, 3802, 16}, "jsonb_path_match": {3802, 4072, 3802, 16},
	"jsonb_path_query_tz": {3802, 4072, 3802, 16}, "jsonb_path_query_array_tz": {3802, 4072, 3802, 16}, "jsonb_path_query_first_tz": {3802, 4072, 3802, 16},
	"jsonb_path_exists_tz": {3802, 4072, 3802, 16}, "jsonb_path_match_tz": {3802, 4072, 3802, 16},
}

// arrayElemFuncs take an array and an element: an unknown element gets
// the array's element type (the index of the array argument).
var arrayElemFuncs = map[string]int{"array_append": 0, "array_remove": 0, "array_position": 0, "array_positions": 0, "array_replace": 0, "array_prepend": 1}

// noteFuncArgs types the unknown parameters passed to a function.
func (t *translator) noteFuncArgs(f *pg_query.FuncCall, sc *scope) {
	if len(f.Args) == 0 {
		return
	}
	name := lastName(f.Funcname)
	if ai, ok := arrayElemFuncs[name]; ok && len(f.Args) >= 2 {
		arr := t.exprType(f.Args[ai], sc)
		for i, a := range f.Args {
			if p := paramOf(a); p != 0 && i != ai && arr.Type != nil && arr.Type.Elem != 0 {
				t.setParam(p, arr.Type.Elem)
			}
		}
		return
	}
	switch name {
	case "generate_series":
		t.commonParams(f.Args[:min(2, len(f.Args))], sc)
		return
	case "coalesce", "greatest", "least":
		t.commonParams(f.Args, sc)
		return
	}
	types, ok := funcArgs[name+"/"+strconv.Itoa(len(f.Args))]
	if !ok {
		types = funcArgs[name]
	}
	for i, a := range f.Args {
		if p := paramOf(a); p != 0 && i < len(types) {
			t.setParam(p, types[i])
		}
	}
}

// noteParamNode types the parameters of the expression nodes that are
// not operators: function arguments, CASE, COALESCE, GREATEST and
// LEAST, ARRAY[...], boolean connectives.
func (t *translator) noteParamNode(n *pg_query.Node, sc *scope) {
	switch x := n.Node.(type) {
	case *pg_query.Node_FuncCall:
		t.noteFuncArgs(x.FuncCall, sc)
	case *pg_query.Node_CoalesceExpr:
		t.commonParams(x.CoalesceExpr.Args, sc)
	case *pg_query.Node_MinMaxExpr:
		t.commonParams(x.MinMaxExpr.Args, sc)
	case *pg_query.Node_AArrayExpr:
		t.commonParams(x.AArrayExpr.Elements, sc)
	case *pg_query.Node_BoolExpr:
		for _, a := range x.BoolExpr.Args {
			if p := paramOf(a); p != 0 {
				t.setParam(p, 16)
			}
		}
	case *pg_query.Node_CaseExpr:
		c := x.CaseExpr
		var results []*pg_query.Node
		for _, w := range c.Args {
			cw := w.GetCaseWhen()
			if cw == nil {
				continue
			}
			if p := paramOf(cw.Expr); p != 0 {
				if c.Arg != nil {
					t.setParam(p, compared(t.exprType(c.Arg, sc)))
				} else {
					t.setParam(p, 16)
				}
			}
			results = append(results, cw.Result)
		}
		if c.Defresult != nil {
			results = append(results, c.Defresult)
		}
		t.commonParams(results, sc)
	}
}

// targetParams types the parameters written straight into a table's
// columns: INSERT's VALUES rows and SELECT list, UPDATE's SET.
// It runs before the numeric(p,s) columns' values are wrapped in their
// rounding (roundInsert, roundUpdate).
func (t *translator) targetParams(stmt *pg_query.Node, cols []Column) {
	if !t.hasParams || len(cols) == 0 {
		return
	}
	colType := func(name string) uint32 {
		for _, c := range cols {
			if strings.EqualFold(c.Name, name) {
				return ColType{Type: c.Type, Typmod: c.Typmod, Enum: c.Enum}.OID()
			}
		}
		return 0
	}
	switch x := stmt.Node.(type) {
	case *pg_query.Node_InsertStmt:
		var names []string
		for _, c := range x.InsertStmt.Cols {
			if rt := c.GetResTarget(); rt != nil {
				names = append(names, rt.Name)
			}
		}
		if len(x.InsertStmt.Cols) == 0 {
			for _, c := range cols {
				names = append(names, c.Name)
			}
		}
		row := func(items []*pg_query.Node) {
			for i, it := range items {
				if p := paramOf(it); p != 0 && i < len(names) {
					t.setParam(p, colType(names[i]))
				}
			}
		}
		sel := x.InsertStmt.SelectStmt.GetSelectStmt()
		switch {
		case sel == nil:
		case len(sel.ValuesLists) > 0:
			for _, l := range sel.ValuesLists {
				if l.GetList() != nil {
					row(l.GetList().Items)
				}
			}
		case sel.Op == pg_query.SetOperation_SETOP_NONE:
			var vals []*pg_query.Node
			for _, tn := range sel.TargetList {
				if rt := tn.GetResTarget(); rt != nil {
					vals = append(vals, rt.Val)
				}
			}
			row(vals)
		}
		if oc := x.InsertStmt.OnConflictClause; oc != nil {
			t.setParams(oc.TargetList, colType)
		}
	case *pg_query.Node_UpdateStmt:
		t.setParams(x.UpdateStmt.TargetList, colType)
	}
}

// setParams types the parameters of SET col = $n and SET (a, b) = ($1, $2).
func (t *translator) setParams(targets []*pg_query.Node, colType func(string) uint32) {
	for _, tn := range targets {
		rt := tn.GetResTarget()
		if rt == nil {
			continue
		}
		if p := paramOf(rt.Val); p != 0 {
			t.setParam(p, colType(rt.Name))
		} else if m := rt.Val.GetMultiAssignRef(); m != nil {
			if r := m.Source.GetRowExpr(); r != nil && int(m.Colno) <= len(r.Args) {
				if p := paramOf(r.Args[m.Colno-1]); p != 0 {
					t.setParam(p, colType(rt.Name))
				}
			}
		}
	}
}

// selectParams types the parameters a SELECT itself places: LIMIT and
// OFFSET (bigint), and, once the whole statement is seen, a bare
// parameter in a select list that nothing else typed (text, as
// PostgreSQL resolves an unknown output column), unless an arm of a
// UNION gives that column a type.
func (t *translator) selectParams(s *pg_query.SelectStmt, sc *scope) {
	for _, n := range []*pg_query.Node{s.LimitCount, s.LimitOffset} {
		if p := paramOf(n); p != 0 {
			t.setParam(p, 20)
		}
	}
	if s.Op != pg_query.SetOperation_SETOP_NONE {
		if s.Larg != nil && s.Rarg != nil {
			lt, rt := t.selectTypes(s.Larg), t.selectTypes(s.Rarg)
			arm := func(a *pg_query.SelectStmt, other []ColType) {
				for i, tn := range a.TargetList {
					if rt := tn.GetResTarget(); rt != nil && i < len(other) {
						if p := paramOf(rt.Val); p != 0 {
							t.setParam(p, other[i].OID())
						}
					}
				}
			}
			arm(s.Larg, rt)
			arm(s.Rarg, lt)
		}
		return
	}
	for _, tn := range s.TargetList {
		if rt := tn.GetResTarget(); rt != nil {
			if p := paramOf(rt.Val); p != 0 {
				t.outputParams = append(t.outputParams, p)
			}
		}
	}
}

// joinQuals are the ON conditions of a FROM list's joins.
func joinQuals(from []*pg_query.Node) []*pg_query.Node {
	var out []*pg_query.Node
	for _, f := range from {
		if j := f.GetJoinExpr(); j != nil {
			out = append(out, j.Quals)
			out = append(out, joinQuals([]*pg_query.Node{j.Larg, j.Rarg})...)
		}
	}
	return out
}

// inferParams types the statement's parameters from where they stand,
// before anything rewrites it (castParams ran first: a cast is what
// PostgreSQL goes by). Each SELECT is read with its own FROM in scope,
// expressions bottom-up, as PostgreSQL's parse analysis resolves them:
// `b = $1 + 1` types $1 by `+ 1` (int4), not by b.
func (t *translator) inferParams(stmt *pg_query.Node) {
	var sc *scope
	var rel *pg_query.RangeVar
	var from []*pg_query.Node
	switch x := stmt.Node.(type) {
	case *pg_query.Node_SelectStmt:
		t.paramSelect(x.SelectStmt)
		t.outputParamsText()
		return
	case *pg_query.Node_UpdateStmt:
		rel, from = x.UpdateStmt.Relation, x.UpdateStmt.FromClause
	case *pg_query.Node_DeleteStmt:
		rel, from = x.DeleteStmt.Relation, x.DeleteStmt.UsingClause
	case *pg_query.Node_InsertStmt:
		rel = x.InsertStmt.Relation
	default:
		return
	}
	if rel == nil {
		return
	}
	if t.sch != nil {
		t.targetParams(stmt, t.sch.Columns(rel.Relname))
	}
	from = append([]*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: rel}}}, from...)
	if ins := stmt.GetInsertStmt(); ins != nil && ins.OnConflictClause != nil {
		// ON CONFLICT ... DO UPDATE SET b = excluded.b + $1
		from = append(from, &pg_query.Node{Node: &pg_query.Node_RangeVar{RangeVar: &pg_query.RangeVar{
			Relname: rel.Relname, Inh: true, Relpersistence: "p", Alias: &pg_query.Alias{Aliasname: "excluded"}}}})
	}
	sc, _ = t.scopeOf(from)
	var sels []*pg_query.SelectStmt
	visit(stmt.ProtoReflect(), func(n *pg_query.Node) {
		if sel := n.GetSelectStmt(); sel != nil {
			sels = append(sels, sel)
		}
		t.paramNode(n, sc)
	})
	for _, sel := range sels {
		t.paramSelect(sel)
	}
	t.outputParamsText()
}

// paramSelect types the parameters of one SELECT and those nested in it.
func (t *translator) paramSelect(s *pg_query.SelectStmt) {
	if s == nil {
		return
	}
	if wc := s.WithClause; wc != nil {
		for _, c := range wc.Ctes {
			if cte := c.GetCommonTableExpr(); cte != nil {
				t.paramSelect(cte.Ctequery.GetSelectStmt())
			}
		}
	}
	if s.Op != pg_query.SetOperation_SETOP_NONE {
		t.paramSelect(s.Larg)
		t.paramSelect(s.Rarg)
		t.selectParams(s, nil)
		return
	}
	sc, _ := t.scopeOf(s.FromClause)
	visitNodes := func(nodes ...*pg_query.Node) {
		for _, n := range nodes {
			if n != nil && n.Node != nil {
				visit(n.ProtoReflect(), func(m *pg_query.Node) { t.paramNode(m, sc) })
			}
		}
	}
	sels := selectClauses(s, true, func(m *pg_query.Node) { t.paramNode(m, sc) })
	for _, f := range s.FromClause {
		if rs := f.GetRangeSubselect(); rs != nil {
			sels = append(sels, rs.Subquery.GetSelectStmt())
		}
		if rf := f.GetRangeFunction(); rf != nil {
			visitNodes(rf.Functions...)
		}
	}
	visitNodes(s.ValuesLists...)
	for _, sel := range sels {
		t.paramSelect(sel)
	}
	t.selectParams(s, sc)
}

// paramNode types the parameters one expression node places.
func (t *translator) paramNode(n *pg_query.Node, sc *scope) {
	if e := n.GetAExpr(); e != nil {
		t.noteParams(e, sc)
		return
	}
	t.noteParamNode(n, sc)
}

// outputParamsText types the select lists' bare parameters that nothing
// else typed as text.
func (t *translator) outputParamsText() {
	for _, p := range t.outputParams {
		t.setParam(p, 25)
	}
	t.outputParams = nil
}
