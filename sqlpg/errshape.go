package sqlpg

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Constraint violations as PostgreSQL reports them: SQLite names the
// columns of a unique key, or only the kind of a foreign key violation,
// and no values. The back end completes such an error, on the error path
// only, from what the statement wrote: WriteShape reads the statement's
// target and the values it writes where they are constants or
// parameters; queries on the tables find the rest (which foreign key,
// which referenced row).

// WriteValue is one value a statement writes: known when it is a
// constant or a parameter.
type WriteValue struct {
	Known   bool
	Null    bool
	Default bool   // DEFAULT: the column's default (a serial column's sequence)
	Text    string // the constant as written (a string's contents)
	Param   int    // 1-based parameter number, 0 if a constant
}

// WriteShape is an INSERT, UPDATE or DELETE as error reports need it.
type WriteShape struct {
	Kind  string // INSERT, UPDATE, DELETE
	Table string
	Ref   string // how the statement names the table: its alias, else its name
	// Columns: an INSERT's target list (nil: the table's columns in
	// order), an UPDATE's SET columns.
	Columns []string
	// Rows: an INSERT ... VALUES's rows, an UPDATE's one row of SET
	// values; nil for INSERT ... SELECT.
	Rows       [][]WriteValue
	OnConflict string   // "", "NOTHING" or "UPDATE"
	Arbiter    []string // ON CONFLICT (cols)
	With       bool     // has a WITH clause
	from       []*pg_query.Node
	rel        *pg_query.RangeVar
	where      *pg_query.Node
}

// ShapeOfWrite reads a writing statement; nil for anything else.
func ShapeOfWrite(sql string) *WriteShape {
	tree, err := pg_query.Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return nil
	}
	w := &WriteShape{}
	switch n := tree.Stmts[0].Stmt.Node.(type) {
	case *pg_query.Node_InsertStmt:
		s := n.InsertStmt
		w.Kind, w.rel, w.With = "INSERT", s.Relation, s.WithClause != nil
		for _, t := range s.Cols {
			if rt := t.GetResTarget(); rt != nil {
				if len(rt.Indirection) > 0 {
					return nil
				}
				w.Columns = append(w.Columns, rt.Name)
			}
		}
		if sel := s.SelectStmt.GetSelectStmt(); sel != nil && len(sel.ValuesLists) > 0 {
			for _, l := range sel.ValuesLists {
				var row []WriteValue
				for _, v := range l.GetList().GetItems() {
					row = append(row, valueOf(v))
				}
				w.Rows = append(w.Rows, row)
			}
		} else if s.SelectStmt == nil {
			w.Rows = [][]WriteValue{{}} // DEFAULT VALUES
		}
		if oc := s.OnConflictClause; oc != nil {
			w.OnConflict = "NOTHING"
			if oc.Action == pg_query.OnConflictAction_ONCONFLICT_UPDATE {
				w.OnConflict = "UPDATE"
			}
			if oc.Infer != nil {
				for _, e := range oc.Infer.IndexElems {
					if ie := e.GetIndexElem(); ie != nil && ie.Name != "" {
						w.Arbiter = append(w.Arbiter, ie.Name)
					}
				}
				if oc.Infer.Conname != "" {
					w.Arbiter = []string{"\x00" + oc.Infer.Conname}
				}
			}
		}
	case *pg_query.Node_UpdateStmt:
		s := n.UpdateStmt
		w.Kind, w.rel, w.With, w.from, w.where = "UPDATE", s.Relation, s.WithClause != nil, s.FromClause, s.WhereClause
		var row []WriteValue
		for _, t := range s.TargetList {
			rt := t.GetResTarget()
			if rt == nil || len(rt.Indirection) > 0 || rt.Val.GetMultiAssignRef() != nil {
				return nil
			}
			w.Columns = append(w.Columns, rt.Name)
			row = append(row, valueOf(rt.Val))
		}
		w.Rows = [][]WriteValue{row}
	case *pg_query.Node_DeleteStmt:
		s := n.DeleteStmt
		w.Kind, w.rel, w.With, w.from, w.where = "DELETE", s.Relation, s.WithClause != nil, s.UsingClause, s.WhereClause
	default:
		return nil
	}
	if w.rel == nil || w.rel.Schemaname != "" && w.rel.Schemaname != "public" {
		return nil
	}
	w.Table, w.Ref = w.rel.Relname, w.rel.Relname
	if w.rel.Alias != nil && w.rel.Alias.Aliasname != "" {
		w.Ref = w.rel.Alias.Aliasname
	}
	return w
}

// valueOf reads a constant or a parameter (a constant under a cast: the
// column's type decides how it reads).
func valueOf(n *pg_query.Node) WriteValue {
	if tc := n.GetTypeCast(); tc != nil {
		n = tc.Arg
	}
	if p := n.GetParamRef(); p != nil {
		return WriteValue{Known: true, Param: int(p.Number)}
	}
	if n.GetSetToDefault() != nil {
		return WriteValue{Default: true}
	}
	c := n.GetAConst()
	if c == nil {
		return WriteValue{}
	}
	if c.Isnull {
		return WriteValue{Known: true, Null: true}
	}
	switch v := c.Val.(type) {
	case *pg_query.A_Const_Ival:
		return WriteValue{Known: true, Text: strconv.FormatInt(int64(v.Ival.Ival), 10)}
	case *pg_query.A_Const_Fval:
		return WriteValue{Known: true, Text: v.Fval.Fval}
	case *pg_query.A_Const_Sval:
		return WriteValue{Known: true, Text: v.Sval.Sval}
	case *pg_query.A_Const_Boolval:
		return WriteValue{Known: true, Text: strconv.FormatBool(v.Boolval.Boolval)}
	}
	return WriteValue{}
}

// RowsQuery is a query, in PostgreSQL's SQL, of targets over the rows an
// UPDATE or DELETE touches that also satisfy cond (both written with Ref
// naming the target table), limit rows at most. ok is false for an INSERT or
// a statement with WITH.
func (w *WriteShape) RowsQuery(targets, cond string, limit int64) (string, bool) {
	if w.Kind == "INSERT" || w.With {
		return "", false
	}
	tl, err := pg_query.Parse("SELECT " + targets + " WHERE " + cond)
	if err != nil {
		return "", false
	}
	sel := tl.Stmts[0].Stmt.GetSelectStmt()
	q := &pg_query.SelectStmt{TargetList: sel.TargetList, LimitOption: pg_query.LimitOption_LIMIT_OPTION_COUNT,
		LimitCount: pg_query.MakeAConstIntNode(limit, -1)}
	q.FromClause = append([]*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: w.rel}}}, w.from...)
	q.WhereClause = sel.WhereClause
	if w.where != nil {
		q.WhereClause = pg_query.MakeBoolExprNode(pg_query.BoolExprType_AND_EXPR, []*pg_query.Node{w.where, sel.WhereClause}, -1)
	}
	out, err := pg_query.Deparse(&pg_query.ParseResult{Stmts: []*pg_query.RawStmt{{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: q}}}}})
	if err != nil {
		return "", false
	}
	return out, true
}

// ForeignKeysSQL lists the foreign keys of table ?1 (child = ?1) and
// those that reference it (parent = ?1), one row per key column: child
// table, key id, constraint name, parent table, ON UPDATE, ON DELETE,
// column, referenced column, deferral (2: initially deferred). In PostgreSQL's checking order: by the
// child's creation, then declaration (SQLite numbers a table's keys last
// first).
const ForeignKeysSQL = `SELECT m.name, f.id, ` + fkNameSQL + `, f."table", f.on_update, f.on_delete, f."from",
	coalesce(f."to", (SELECT q.name FROM pragma_table_info(f."table") q WHERE q.pk = f.seq + 1)),
	_tandem_fk_deferral(m.sql, (SELECT group_concat(x.c, ',') FROM (SELECT g."from" AS c FROM pragma_foreign_key_list(m.name) g WHERE g.id = f.id ORDER BY g.seq) x))
	FROM main.sqlite_schema m, pragma_foreign_key_list(m.name) f
	WHERE m.type = 'table' AND (m.name = ?1 OR f."table" = ?1)
	ORDER BY m.rowid, f.id DESC, f.seq`

// QuoteIdents joins quoted identifiers as PostgreSQL's messages list
// columns ("a, b").
func QuoteIdents(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// QuoteLiteral quotes a string as an SQL literal.
func QuoteLiteral(s string) string { return quoteLit(s) }
