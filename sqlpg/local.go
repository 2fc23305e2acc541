package sqlpg

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// RelName is a relation as a statement names it (Schema empty when the
// name is not qualified).
type RelName struct{ Schema, Name string }

// DDLTargets says what a schema statement does with session-local
// objects, from PostgreSQL's grammar: Temp when it creates a temporary
// object (CREATE TEMP TABLE / VIEW / SEQUENCE, CREATE TEMP TABLE AS,
// SELECT INTO TEMP, or a name qualified with pg_temp), and Rels, the
// existing relations it drops, alters, renames, truncates or indexes. The
// replicated back ends (SQLite and PostgreSQL) use it to keep temporary
// objects out of writesets: a statement is session-local when Temp is set
// or when every relation in Rels is a temporary one (which only the
// session's own connection can tell). A statement that does not parse, or
// is not one of these, gives the zero value.
func DDLTargets(sql string) (temp bool, rels []RelName) {
	tree, err := pg_query.Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return false, nil
	}
	rv := func(r *pg_query.RangeVar) {
		if r != nil {
			rels = append(rels, RelName{Schema: r.Schemaname, Name: r.Relname})
		}
	}
	isTemp := func(r *pg_query.RangeVar) bool {
		return r != nil && (r.Relpersistence == "t" || r.Schemaname == "pg_temp")
	}
	switch s := tree.Stmts[0].Stmt.Node.(type) {
	case *pg_query.Node_CreateStmt:
		return isTemp(s.CreateStmt.Relation), nil
	case *pg_query.Node_CreateTableAsStmt:
		if in := s.CreateTableAsStmt.Into; in != nil {
			return isTemp(in.Rel), nil
		}
	case *pg_query.Node_ViewStmt:
		return isTemp(s.ViewStmt.View), nil
	case *pg_query.Node_CreateSeqStmt:
		return isTemp(s.CreateSeqStmt.Sequence), nil
	case *pg_query.Node_SelectStmt:
		if in := s.SelectStmt.IntoClause; in != nil {
			return isTemp(in.Rel), nil
		}
	case *pg_query.Node_IndexStmt:
		rv(s.IndexStmt.Relation)
	case *pg_query.Node_AlterTableStmt:
		rv(s.AlterTableStmt.Relation)
	case *pg_query.Node_RenameStmt:
		rv(s.RenameStmt.Relation)
	case *pg_query.Node_TruncateStmt:
		for _, n := range s.TruncateStmt.Relations {
			rv(n.GetRangeVar())
		}
	case *pg_query.Node_DropStmt:
		switch s.DropStmt.RemoveType {
		case pg_query.ObjectType_OBJECT_TABLE, pg_query.ObjectType_OBJECT_VIEW, pg_query.ObjectType_OBJECT_SEQUENCE, pg_query.ObjectType_OBJECT_INDEX:
		default:
			return false, nil
		}
		for _, o := range s.DropStmt.Objects {
			parts := strs(o.GetList().GetItems())
			switch len(parts) {
			case 1:
				rels = append(rels, RelName{Name: parts[0]})
			case 2:
				rels = append(rels, RelName{Schema: parts[0], Name: parts[1]})
			default:
				return false, nil // a database-qualified name: not ours to judge
			}
		}
	}
	return false, rels
}
