package sqlpg

import (
	"encoding/json"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// TempFunction is a PL/pgSQL function of a session's own, created in
// pg_temp with OUT parameters only: what Sequelize's findOrCreate (and
// create with ignoreDuplicates) sends: it creates pg_temp.testfunc(OUT
// response "T", OUT sequelize_caught_exception text) whose body INSERTs
// ... RETURNING * INTO response and catches unique_violation with GET
// STACKED DIAGNOSTICS, calls it in FROM and drops it. The body is the
// part of PL/pgSQL a DO block may use (DoBlock), plus INTO an OUT
// parameter and GET STACKED DIAGNOSTICS; the back end runs it when a
// query calls the function. Functions with IN parameters, other
// languages and other schemas answer 0A000.
type TempFunction struct {
	Name    string
	Outs    []FuncOut
	Body    *DoBlock
	Replace bool
}

// FuncOut is an OUT parameter: a name and the type as written (a table's
// name for its row type; an array type's element type and []).
type FuncOut struct {
	Name, Type string
}

// Out is the OUT parameter of that name, if any.
func (f *TempFunction) Out(name string) (FuncOut, bool) {
	for _, o := range f.Outs {
		if strings.EqualFold(o.Name, name) {
			return o, true
		}
	}
	return FuncOut{}, false
}

// DoDiag is one item of GET [STACKED] DIAGNOSTICS: Var receives Item
// (PG_EXCEPTION_DETAIL, MESSAGE_TEXT, RETURNED_SQLSTATE ...).
type DoDiag struct {
	Var, Item string
}

// ParseTempFunction reads CREATE [OR REPLACE] FUNCTION pg_temp.name(OUT
// ...) ... LANGUAGE plpgsql; ok is false for any other statement, and an
// error for a function the SQLite back end cannot keep.
func ParseTempFunction(sql string) (fn *TempFunction, ok bool, err error) {
	tree, err := Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return nil, false, nil
	}
	cf := tree.Stmts[0].Stmt.GetCreateFunctionStmt()
	if cf == nil || cf.IsProcedure {
		return nil, false, nil
	}
	names := strs(cf.Funcname)
	if len(names) != 2 || !strings.EqualFold(names[0], "pg_temp") {
		return nil, true, unsupported("CREATE FUNCTION (except a PL/pgSQL function of the session's own, in pg_temp, with OUT parameters)")
	}
	fn = &TempFunction{Name: strings.ToLower(names[1]), Replace: cf.Replace}
	for _, p := range cf.Parameters {
		fp := p.GetFunctionParameter()
		if fp == nil || fp.Mode != pg_query.FunctionParameterMode_FUNC_PARAM_OUT || fp.ArgType == nil {
			return nil, true, unsupported("CREATE FUNCTION with IN parameters")
		}
		tn := strs(fp.ArgType.Names)
		if len(tn) == 2 && strings.EqualFold(tn[0], "pg_catalog") {
			tn = tn[1:] // int is pg_catalog.int4
		}
		typ := strings.Join(tn, ".")
		if len(fp.ArgType.ArrayBounds) > 0 {
			typ += "[]"
		}
		fn.Outs = append(fn.Outs, FuncOut{Name: fp.Name, Type: typ})
	}
	var body, lang string
	for _, o := range cf.Options {
		de := o.GetDefElem()
		if de == nil {
			continue
		}
		switch de.Defname {
		case "as":
			if l := de.Arg.GetList(); l != nil && len(l.Items) > 0 {
				body = l.Items[0].GetString_().GetSval()
			}
		case "language":
			lang = de.Arg.GetString_().GetSval()
		}
	}
	if !strings.EqualFold(lang, "plpgsql") {
		return nil, true, unsupported("CREATE FUNCTION in the language %s", lang)
	}
	if len(fn.Outs) == 0 {
		return nil, true, unsupported("CREATE FUNCTION without OUT parameters")
	}
	// PL/pgSQL's parser on the same parameters (their types are not
	// looked up): the datums name them.
	var params []string
	for _, o := range fn.Outs {
		params = append(params, "OUT "+quoteIdent(o.Name)+" text")
	}
	tag := "tandem_fn"
	for strings.Contains(body, "$"+tag+"$") {
		tag += "_"
	}
	js, err := pg_query.ParsePlPgSqlToJSON("CREATE FUNCTION _tandem_fn(" + strings.Join(params, ", ") + ") RETURNS record LANGUAGE plpgsql AS $" + tag + "$" + body + "$" + tag + "$")
	if err != nil {
		if strings.Contains(err.Error(), "unrecognized exception condition") {
			return nil, true, &pgwire.Error{Code: "42704", Message: err.Error()}
		}
		return nil, true, pgwire.Errorf(pgwire.CodeSyntax, "CREATE FUNCTION: %v", err)
	}
	var fns []struct {
		Fn struct {
			Datums []map[string]struct {
				Refname string `json:"refname"`
			} `json:"datums"`
			Action struct {
				Block plBlock `json:"PLpgSQL_stmt_block"`
			} `json:"action"`
		} `json:"PLpgSQL_function"`
	}
	if err := json.Unmarshal([]byte(js), &fns); err != nil || len(fns) != 1 {
		return nil, true, pgwire.Errorf(pgwire.CodeSyntax, "CREATE FUNCTION: cannot read the body")
	}
	var datums []string
	for _, d := range fns[0].Fn.Datums {
		name := ""
		for kind, v := range d {
			if kind == "PLpgSQL_var" {
				name = v.Refname
			}
		}
		datums = append(datums, name)
	}
	for i, name := range datums {
		if i >= len(fn.Outs) && name != "" && name != "found" && name != "sqlstate" && name != "sqlerrm" {
			return nil, true, unsupported("variables in a function (DECLARE)")
		}
	}
	items, err := convertItemsIn(fns[0].Fn.Action.Block.Body, datums)
	if err != nil {
		return nil, true, err
	}
	if len(items) == 1 && items[0].Block != nil {
		fn.Body = items[0].Block
	} else {
		fn.Body = &DoBlock{Body: items}
	}
	return fn, true, nil
}

// ParseDropTempFunction reads DROP FUNCTION [IF EXISTS] pg_temp.name[()]:
// ok is false for any other statement.
func ParseDropTempFunction(sql string) (name string, missingOk, ok bool) {
	tree, err := Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return "", false, false
	}
	ds := tree.Stmts[0].Stmt.GetDropStmt()
	if ds == nil || ds.RemoveType != pg_query.ObjectType_OBJECT_FUNCTION || len(ds.Objects) != 1 {
		return "", false, false
	}
	ow := ds.Objects[0].GetObjectWithArgs()
	if ow == nil {
		return "", false, false
	}
	names := strs(ow.Objname)
	if len(names) != 2 || !strings.EqualFold(names[0], "pg_temp") {
		return "", false, false
	}
	return strings.ToLower(names[1]), ds.MissingOk, true
}

// FuncCall is a query over one of the session's functions: SELECT
// targets FROM pg_temp.name() [AS alias].
type FuncCall struct {
	Name    string
	Targets []FuncTarget
}

// FuncTarget is one output column: an OUT parameter (Field "") or a field
// of one of a row type (Field "*": every field), named Name.
type FuncTarget struct {
	Out, Field, Name string
}

// ParseFuncCall reads a query over pg_temp.name(); ok is false for any
// other statement. Its select list may name OUT parameters (f.out, out),
// fields of a row-typed one ((f.out).col, (f.out).*) and *.
func ParseFuncCall(sql string) (call *FuncCall, ok bool, err error) {
	if !strings.Contains(strings.ToLower(sql), "pg_temp") {
		return nil, false, nil
	}
	tree, err := Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return nil, false, nil
	}
	s := tree.Stmts[0].Stmt.GetSelectStmt()
	if s == nil || len(s.FromClause) != 1 {
		return nil, false, nil
	}
	rf := s.FromClause[0].GetRangeFunction()
	if rf == nil || len(rf.Functions) != 1 {
		return nil, false, nil
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 {
		return nil, false, nil
	}
	fc := items[0].GetFuncCall()
	if fc == nil {
		return nil, false, nil
	}
	names := strs(fc.Funcname)
	if len(names) != 2 || !strings.EqualFold(names[0], "pg_temp") {
		return nil, false, nil
	}
	call = &FuncCall{Name: strings.ToLower(names[1])}
	if len(fc.Args) > 0 {
		return nil, true, unsupported("calling a function of the session's own with arguments")
	}
	if s.WhereClause != nil || len(s.GroupClause) > 0 || s.HavingClause != nil || len(s.SortClause) > 0 || s.LimitCount != nil || s.LimitOffset != nil || s.DistinctClause != nil || s.WithClause != nil {
		return nil, true, unsupported("this query over a function of the session's own (a select list of its OUT parameters only)")
	}
	alias := call.Name
	if rf.Alias != nil && rf.Alias.Aliasname != "" {
		alias = strings.ToLower(rf.Alias.Aliasname)
	}
	bad := func() (*FuncCall, bool, error) {
		return nil, true, unsupported("this select list over a function of the session's own (OUT parameters and their fields only)")
	}
	for _, n := range s.TargetList {
		rt := n.GetResTarget()
		if rt == nil || rt.Val == nil {
			return bad()
		}
		switch {
		case rt.Val.GetColumnRef() != nil:
			f := rt.Val.GetColumnRef().Fields
			if len(f) == 2 && strings.EqualFold(f[0].GetString_().GetSval(), alias) {
				f = f[1:]
			}
			if len(f) == 1 && f[0].GetAStar() != nil {
				call.Targets = append(call.Targets, FuncTarget{Out: "*", Name: rt.Name})
				continue
			}
			if len(f) != 1 || f[0].GetString_() == nil {
				return bad()
			}
			out := f[0].GetString_().GetSval()
			name := rt.Name
			if name == "" {
				name = out
			}
			call.Targets = append(call.Targets, FuncTarget{Out: out, Name: name})
		case rt.Val.GetAIndirection() != nil:
			ind := rt.Val.GetAIndirection()
			cr := ind.Arg.GetColumnRef()
			if cr == nil || len(ind.Indirection) != 1 {
				return bad()
			}
			f := cr.Fields
			if len(f) == 2 && strings.EqualFold(f[0].GetString_().GetSval(), alias) {
				f = f[1:]
			}
			if len(f) != 1 || f[0].GetString_() == nil {
				return bad()
			}
			out := f[0].GetString_().GetSval()
			var field string
			switch {
			case ind.Indirection[0].GetAStar() != nil:
				field = "*"
			case ind.Indirection[0].GetString_() != nil:
				field = ind.Indirection[0].GetString_().GetSval()
			default:
				return bad()
			}
			name := rt.Name
			if name == "" {
				name = field
			}
			call.Targets = append(call.Targets, FuncTarget{Out: out, Field: field, Name: name})
		default:
			return bad()
		}
	}
	return call, true, nil
}
