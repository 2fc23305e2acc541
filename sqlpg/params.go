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

// noteParams types the parameters an operator compares with an
// expression of known type (sc: the tables in scope).
func (t *translator) noteParams(e *pg_query.A_Expr, sc *scope) {
	if e == nil || e.Lexpr == nil || e.Rexpr == nil {
		return
	}
	switch e.Kind {
	case pg_query.A_Expr_Kind_AEXPR_OP:
		switch lastName(e.Name) {
		case "=", "<>", "!=", "<", ">", "<=", ">=":
		default:
			return
		}
		if p := e.Rexpr.GetParamRef(); p != nil {
			t.setParam(p.Number, compared(t.exprType(e.Lexpr, sc)))
		} else if p := e.Lexpr.GetParamRef(); p != nil {
			t.setParam(p.Number, compared(t.exprType(e.Rexpr, sc)))
		}
	case pg_query.A_Expr_Kind_AEXPR_LIKE, pg_query.A_Expr_Kind_AEXPR_ILIKE:
		if p := e.Rexpr.GetParamRef(); p != nil {
			if ct := t.exprType(e.Lexpr, sc); ct.Type != nil && ct.Type.Cat == 'S' && ct.Enum == nil {
				t.setParam(p.Number, compared(ct))
			}
		}
	case pg_query.A_Expr_Kind_AEXPR_OP_ANY, pg_query.A_Expr_Kind_AEXPR_OP_ALL:
		if p := e.Rexpr.GetParamRef(); p != nil {
			if ct := t.exprType(e.Lexpr, sc); ct.Type != nil && ct.Enum == nil && ct.Type.Array != 0 && Types[ct.Type.Array] != nil {
				if el := Types[compared(ct)]; el != nil && el.Array != 0 {
					t.setParam(p.Number, el.Array)
				}
			}
		}
	case pg_query.A_Expr_Kind_AEXPR_IN:
		l := e.Rexpr.GetList()
		if l == nil {
			return
		}
		var oid uint32
		for _, item := range l.Items {
			if p := item.GetParamRef(); p != nil {
				if oid == 0 {
					oid = compared(t.exprType(e.Lexpr, sc))
				}
				t.setParam(p.Number, oid)
			}
		}
	}
}
