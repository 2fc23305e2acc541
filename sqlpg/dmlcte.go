package sqlpg

import (
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	sqlite3 "github.com/mattn/go-sqlite3"
	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Data-modifying statements in WITH (WITH x AS (INSERT ... RETURNING ...)
// SELECT ... FROM x): SQLite has none. The statement in the CTE is
// translated on its own and run by a function of the connection,
// _tandem_dml(sql, $1, $2 ...), inside the query and its transaction (as
// nextval is); the function answers the RETURNING rows as a json array of
// arrays, which the CTE, MATERIALIZED so it runs once, reads back with
// json_each. Unlike PostgreSQL, the rest of the query sees the rows as the
// statement left them (PostgreSQL: as they were before it).

// dmlCTEs rewrites the data-modifying CTEs of s; the query then writes.
func (t *translator) dmlCTEs(s *pg_query.SelectStmt) error {
	if s.WithClause == nil {
		return nil
	}
	for _, n := range s.WithClause.Ctes {
		cte := n.GetCommonTableExpr()
		if cte == nil || cte.Ctequery.GetSelectStmt() != nil {
			continue
		}
		q := cte.Ctequery
		var returning []*pg_query.Node
		switch x := q.Node.(type) {
		case *pg_query.Node_InsertStmt:
			returning = x.InsertStmt.ReturningList
		case *pg_query.Node_UpdateStmt:
			returning = x.UpdateStmt.ReturningList
		case *pg_query.Node_DeleteStmt:
			returning = x.DeleteStmt.ReturningList
		default:
			return unsupported("this statement in WITH")
		}
		if len(returning) == 0 {
			return unsupported("a data-modifying statement in WITH without RETURNING")
		}
		text, err := pg_query.Deparse(&pg_query.ParseResult{Stmts: []*pg_query.RawStmt{{Stmt: q}}})
		if err != nil {
			return unsupported("this statement in WITH")
		}
		sub, err := translate(text, t.sch)
		if err != nil {
			return err
		}
		if sub.SQL == "" || len(sub.Script) > 0 || len(sub.Names) == 0 {
			return unsupported("this statement in WITH")
		}
		names := sub.Names
		if len(cte.Aliascolnames) > 0 {
			if len(cte.Aliascolnames) > len(names) {
				return unsupported("more column names than RETURNING columns in WITH")
			}
			copy(names, strs(cte.Aliascolnames))
			cte.Aliascolnames = nil
		}
		// The client's parameters the statement uses, passed on.
		maxParam := 0
		walkNode(q, func(m *pg_query.Node) {
			if p := m.GetParamRef(); p != nil && int(p.Number) > maxParam {
				maxParam = int(p.Number)
			}
		})
		args := []*pg_query.Node{strConst(sub.SQL)}
		for i := 1; i <= maxParam; i++ {
			args = append(args, &pg_query.Node{Node: &pg_query.Node_ParamRef{ParamRef: &pg_query.ParamRef{Number: int32(i)}}})
		}
		var targets, placeholder []*pg_query.Node
		for i, name := range names {
			targets = append(targets, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: name,
				Val: call("json_extract", colRef("_tandem_dml", "value"), strConst(fmt.Sprintf("$[%d]", i)))}}})
			placeholder = append(placeholder, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: name,
				Val: &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}}}})
		}
		// SQLite's json_each: placed after the rewrite (finishDMLCTEs),
		// which would take it for PostgreSQL's.
		final := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
			TargetList: targets,
			FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeFunction{RangeFunction: &pg_query.RangeFunction{
				Functions: []*pg_query.Node{pg_query.MakeListNode([]*pg_query.Node{call("json_each", call("_tandem_dml", args...)), {}})},
				Alias:     &pg_query.Alias{Aliasname: "_tandem_dml"},
			}}}},
			Op: pg_query.SetOperation_SETOP_NONE,
		}}}
		cte.Ctequery = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{TargetList: placeholder, Op: pg_query.SetOperation_SETOP_NONE}}}
		t.dmlFinal = append(t.dmlFinal, func() { cte.Ctequery = final })
		cte.Ctematerialized = pg_query.CTEMaterialize_CTEMaterializeAlways
		if t.ctes == nil {
			t.ctes = map[string][]Column{}
		}
		var cols []Column
		if len(sub.Cols) == len(names) {
			for i, c := range sub.Cols {
				cols = append(cols, Column{Name: names[i], Type: c.Type, Typmod: c.Typmod})
			}
		}
		t.dmlCTE = append(t.dmlCTE, cte.Ctename)
		t.dmlCols = append(t.dmlCols, cols)
		t.writes = true
	}
	return nil
}

// finishDMLCTEs puts the json_each reads of the data-modifying CTEs in
// place, after the rewrite.
func (t *translator) finishDMLCTEs() {
	for _, f := range t.dmlFinal {
		f()
	}
}

// registerDMLFunction registers _tandem_dml on c (see dmlCTEs).
func registerDMLFunction(c *sqlite3.SQLiteConn) error {
	return c.RegisterFunc("_tandem_dml", func(sql string, args ...any) (string, error) {
		vals := make([]driver.Value, len(args))
		for i, a := range args {
			vals[i] = a
		}
		rows, err := c.Query(sql, vals)
		if err != nil {
			return "", err
		}
		defer rows.Close()
		out := [][]any{}
		n := len(rows.Columns())
		for {
			row := make([]driver.Value, n)
			if err := rows.Next(row); err != nil {
				if err == io.EOF {
					break
				}
				return "", err
			}
			r := make([]any, n)
			for i, v := range row {
				if b, ok := v.([]byte); ok {
					v = `\x` + hex.EncodeToString(b)
				}
				r[i] = v
			}
			out = append(out, r)
		}
		b, err := json.Marshal(out)
		return string(b), err
	}, false)
}
