package sqlpg

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// PreparedStmt is one of SQL's prepared-statement commands: PREPARE name
// [(types)] AS statement, EXECUTE name [(args)], DEALLOCATE [PREPARE]
// name | ALL. The back end keeps the statements of its session (the SQLite
// back end: PostgreSQL's own server keeps its own).
type PreparedStmt struct {
	Kind  string   // PREPARE, EXECUTE, DEALLOCATE
	Name  string   // "" with All
	All   bool     // DEALLOCATE ALL
	Types []string // PREPARE's parameter types (SQL), if given
	Query string   // PREPARE's statement
	Args  []string // EXECUTE's arguments (SQL expressions)
}

// ParsePrepared reads a PREPARE, EXECUTE or DEALLOCATE statement; ok is
// false for any other statement.
func ParsePrepared(sql string) (ps *PreparedStmt, ok bool, err error) {
	tree, err := Parse(sql)
	if err != nil {
		return nil, false, err
	}
	if len(tree.Stmts) != 1 {
		return nil, false, nil
	}
	switch n := tree.Stmts[0].Stmt.Node.(type) {
	case *pg_query.Node_PrepareStmt:
		p := n.PrepareStmt
		q, err := pgDeparse(p.Query)
		if err != nil {
			return nil, false, pgwire.Errorf(pgwire.CodeSyntax, "PREPARE: %v", err)
		}
		out := &PreparedStmt{Kind: "PREPARE", Name: p.Name, Query: q}
		for _, a := range p.Argtypes {
			tn := a.GetTypeName()
			if tn == nil {
				return nil, false, unsupported("this PREPARE parameter type")
			}
			s, err := deparseExpr(&pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}, TypeName: tn}}})
			if err != nil {
				return nil, false, err
			}
			out.Types = append(out.Types, s[len("NULL::"):])
		}
		return out, true, nil
	case *pg_query.Node_ExecuteStmt:
		e := n.ExecuteStmt
		out := &PreparedStmt{Kind: "EXECUTE", Name: e.Name}
		for _, a := range e.Params {
			s, err := deparseExpr(a)
			if err != nil {
				return nil, false, err
			}
			out.Args = append(out.Args, s)
		}
		return out, true, nil
	case *pg_query.Node_DeallocateStmt:
		d := n.DeallocateStmt
		return &PreparedStmt{Kind: "DEALLOCATE", Name: d.Name, All: d.Name == ""}, true, nil
	}
	return nil, false, nil
}

// BindPrepared is a prepared statement's text with its parameters $n
// replaced by EXECUTE's arguments, each cast to the parameter's declared
// type when PREPARE gave one (42601 for a count that does not match).
func BindPrepared(name, query string, types, args []string) (string, error) {
	tree, err := Parse(query)
	if err != nil {
		return "", err
	}
	if len(tree.Stmts) != 1 {
		return "", pgwire.Errorf(pgwire.CodeSyntax, "a prepared statement holds one statement")
	}
	want := len(types)
	nodes := make([]*pg_query.Node, len(args))
	for i, a := range args {
		t, err := pg_query.Parse("SELECT " + a)
		if err != nil {
			return "", pgwire.Errorf(pgwire.CodeSyntax, "EXECUTE argument %d: %v", i+1, err)
		}
		nodes[i] = t.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
	}
	var params []*pg_query.Node
	visit(tree.Stmts[0].Stmt.ProtoReflect(), func(n *pg_query.Node) {
		if n.GetParamRef() != nil {
			params = append(params, n)
		}
	})
	for _, n := range params {
		if i := int(n.GetParamRef().Number); i > want {
			want = i
		}
	}
	if len(args) != want {
		return "", &pgwire.Error{Code: pgwire.CodeSyntax, Message: fmt.Sprintf("wrong number of parameters for prepared statement %q", name),
			Detail: fmt.Sprintf("Expected %d parameters but got %d.", want, len(args))}
	}
	var bad error
	for _, n := range params { // replaced after the walk: an argument is not walked
		p := n.GetParamRef()
		i := int(p.Number) - 1
		if i < 0 {
			bad = pgwire.Errorf("42P02", "there is no parameter $%d", p.Number)
			break
		}
		arg := nodes[i]
		if i < len(types) {
			tt, err := pg_query.Parse("SELECT NULL::" + types[i])
			if err == nil {
				tn := tt.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val.GetTypeCast().TypeName
				arg = &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: arg, TypeName: tn}}}
			}
		}
		n.Node = arg.Node
	}
	if bad != nil {
		return "", bad
	}
	return pgDeparse(tree.Stmts[0].Stmt)
}

// pgDeparse is PostgreSQL's text of a statement (parameters stay $n: the
// text is translated again when it runs).
func pgDeparse(stmt *pg_query.Node) (string, error) {
	return pg_query.Deparse(&pg_query.ParseResult{Stmts: []*pg_query.RawStmt{{Stmt: stmt}}})
}

// DMLTarget is the table an INSERT, UPDATE or DELETE writes ("" for any
// other statement) and the statement's kind.
func DMLTarget(sql string) (kind, table string) {
	tree, err := Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return "", ""
	}
	switch n := tree.Stmts[0].Stmt.Node.(type) {
	case *pg_query.Node_InsertStmt:
		return "INSERT", n.InsertStmt.GetRelation().GetRelname()
	case *pg_query.Node_UpdateStmt:
		return "UPDATE", n.UpdateStmt.GetRelation().GetRelname()
	case *pg_query.Node_DeleteStmt:
		return "DELETE", n.DeleteStmt.GetRelation().GetRelname()
	}
	return "", ""
}
