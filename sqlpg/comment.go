package sqlpg

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// Comments (COMMENT ON) live in _tandem_comments, one row per object:
// kind 'rel' (a table, view, sequence or index, by name), 'col' (a
// table's or view's column), 'schema' (public), 'type' (an enum) or 'con'
// (a constraint: its name, and its table in column_name). The
// catalog's pg_description, obj_description and col_description read
// them (psql's \d+ and \dt+, pg_dump, ORMs' column comments). Renames
// and drops keep them in step (renameComments, dropComments).

// comment is COMMENT ON TABLE | VIEW | SEQUENCE | INDEX | COLUMN |
// SCHEMA | TYPE | CONSTRAINT c ON t ... IS 'text' | NULL (a constraint's
// comment goes when its table does; one whose constraint was dropped is
// kept but not shown). Other objects (functions, ...) do not exist here or
// have no place for a comment:
// the statement is accepted and nothing is kept, as before.
func (t *translator) comment(s *pg_query.CommentStmt, tr *Translation) (*Translation, error) {
	tr.Tag = "COMMENT"
	var kind, name, col, check string
	names := strs(s.Object.GetList().GetItems())
	qualified := func(n []string, parts int) error {
		if len(n) > parts && !strings.EqualFold(n[0], "public") {
			return &pgwire.Error{Code: "3F000", Message: fmt.Sprintf("schema %q does not exist", n[0])}
		}
		return nil
	}
	switch s.Objtype {
	case pg_query.ObjectType_OBJECT_TABLE, pg_query.ObjectType_OBJECT_VIEW, pg_query.ObjectType_OBJECT_SEQUENCE, pg_query.ObjectType_OBJECT_INDEX:
		if len(names) == 0 {
			return nil, &pgwire.Error{Code: "42601", Message: "COMMENT ON needs an object name"}
		}
		if err := qualified(names, 1); err != nil {
			return nil, err
		}
		kind, name = "rel", names[len(names)-1]
		check = fmt.Sprintf("SELECT _pg_raise('42P01', %s) WHERE NOT EXISTS (SELECT 1 FROM pg_class WHERE relname = %s)",
			quoteLit(fmt.Sprintf("relation %q does not exist", name)), quoteLit(name))
	case pg_query.ObjectType_OBJECT_COLUMN:
		if len(names) < 2 {
			return nil, &pgwire.Error{Code: "42601", Message: "column name must be qualified"}
		}
		if err := qualified(names, 2); err != nil {
			return nil, err
		}
		kind, name, col = "col", names[len(names)-2], names[len(names)-1]
		check = fmt.Sprintf("SELECT _pg_raise('42P01', %s) WHERE NOT EXISTS (SELECT 1 FROM pg_class WHERE relname = %s);\n"+
			"SELECT _pg_raise('42703', %s) WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = %s AND a.attname = %s)",
			quoteLit(fmt.Sprintf("relation %q does not exist", name)), quoteLit(name),
			quoteLit(fmt.Sprintf("column %q of relation %q does not exist", col, name)), quoteLit(name), quoteLit(col))
	case pg_query.ObjectType_OBJECT_TABCONSTRAINT:
		// COMMENT ON CONSTRAINT c ON t: kind 'con', the constraint's
		// name, its table in column_name.
		if len(names) < 2 {
			return nil, &pgwire.Error{Code: "42601", Message: "COMMENT ON CONSTRAINT needs a constraint and its table"}
		}
		if err := qualified(names, 2); err != nil {
			return nil, err
		}
		kind, name, col = "con", names[len(names)-1], names[len(names)-2]
		check = fmt.Sprintf("SELECT _pg_raise('42704', %s) WHERE NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = %s AND conrelid = _tandem_oid(%s))",
			quoteLit(fmt.Sprintf("constraint %q for table %q does not exist", name, col)), quoteLit(name), quoteLit(col))
	case pg_query.ObjectType_OBJECT_SCHEMA:
		kind, name = "schema", s.Object.GetString_().GetSval()
		if name != "public" {
			return nil, &pgwire.Error{Code: "3F000", Message: fmt.Sprintf("schema %q does not exist", name)}
		}
	case pg_query.ObjectType_OBJECT_TYPE, pg_query.ObjectType_OBJECT_DOMAIN:
		tn := s.Object.GetTypeName()
		if tn == nil {
			tr.Noop = true
			return tr, nil
		}
		kind, name = "type", lastName(tn.Names)
		check = fmt.Sprintf("SELECT _pg_raise('42704', %s) WHERE NOT EXISTS (SELECT 1 FROM _tandem_enums WHERE name = %s)",
			quoteLit(fmt.Sprintf("type %q does not exist", name)), quoteLit(name))
	default:
		tr.Noop = true
		return tr, nil
	}
	tr.DDL = true
	if check != "" {
		tr.Script = append(tr.Script, strings.Split(check, ";\n")...)
	}
	switch {
	case s.Comment != "":
		tr.Script = append(tr.Script, fmt.Sprintf("INSERT OR REPLACE INTO _tandem_comments (kind, name, column_name, comment) VALUES (%s, %s, %s, %s)",
			quoteLit(kind), quoteLit(name), quoteLit(col), quoteLit(s.Comment)))
	case kind == "schema":
		// No comment, not even the default one ('standard public schema').
		tr.Script = append(tr.Script, fmt.Sprintf("INSERT OR REPLACE INTO _tandem_comments (kind, name, column_name, comment) VALUES ('schema', %s, '', NULL)", quoteLit(name)))
	default:
		tr.Script = append(tr.Script, fmt.Sprintf("DELETE FROM _tandem_comments WHERE kind = %s AND name = %s AND column_name = %s", quoteLit(kind), quoteLit(name), quoteLit(col)))
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	return tr, nil
}

// renameComments: the statements that keep comments with a relation
// renamed from old to new (its columns' too).
func renameComments(old, new string) string {
	o, n := quoteLit(old), quoteLit(new)
	return "UPDATE _tandem_comments SET name = CASE WHEN name = " + o + " THEN " + n + " ELSE name END, " +
		"column_name = CASE WHEN kind = 'con' AND column_name = " + o + " THEN " + n + " ELSE column_name END " +
		"WHERE kind IN ('rel', 'col', 'con') AND name = " + o + " OR kind = 'con' AND column_name = " + o
}

// dropComments: the statement that drops the comments of a relation and
// its columns.
func dropComments(name string) string {
	return "DELETE FROM _tandem_comments WHERE kind IN ('rel', 'col') AND name = " + quoteLit(name) + " OR kind = 'con' AND column_name = " + quoteLit(name)
}

// descriptionSQL is pg_description: the comments kept, and the public
// schema's default one unless a COMMENT ON SCHEMA public replaced it.
const descriptionSQL = `SELECT * FROM (SELECT CAST(CASE c.kind WHEN 'schema' THEN 2200 WHEN 'type' THEN (SELECT e.oid FROM main._tandem_enums e WHERE e.name = c.name)
			WHEN 'con' THEN (SELECT k.oid FROM pg_constraint k WHERE k.conname = c.name AND k.conrelid = _tandem_oid(c.column_name))
			ELSE _tandem_oid(c.name) END AS INTEGER) AS objoid,
		CAST(CASE c.kind WHEN 'schema' THEN 2615 WHEN 'type' THEN 1247 WHEN 'con' THEN 2606 ELSE 1259 END AS INTEGER) AS classoid,
		CASE WHEN c.kind = 'col' THEN (SELECT p.cid + 1 FROM pragma_table_xinfo(c.name) p WHERE p.name = c.column_name) ELSE 0 END AS objsubid,
		c.comment AS description
	FROM main._tandem_comments c WHERE c.comment IS NOT NULL) WHERE objoid IS NOT NULL
	UNION ALL
	SELECT 2200, 2615, 0, 'standard public schema' WHERE NOT EXISTS (SELECT 1 FROM main._tandem_comments WHERE kind = 'schema' AND name = 'public')`

// viewRename is a view's PostgreSQL text after a rename of what it reads:
// the table old renamed new, or (column) table's column old renamed new.
// ok is false when the text cannot be followed for sure (a column named
// without its table in a query of several relations): the caller then
// forgets the text, and pg_get_viewdef gives the query SQLite runs.
func viewRename(def, table, old, new string, column bool) (string, bool) {
	tree, err := pg_query.Parse(def)
	if err != nil || len(tree.Stmts) != 1 {
		return "", false
	}
	root := tree.Stmts[0].Stmt
	var rels []*pg_query.RangeVar
	visit(root.ProtoReflect(), func(n *pg_query.Node) {
		if r := n.GetRangeVar(); r != nil && (r.Schemaname == "" || r.Schemaname == "public") {
			rels = append(rels, r)
		}
	})
	if !column {
		changed := false
		for _, r := range rels {
			if r.Relname == old {
				r.Relname, changed = new, true
			}
		}
		if !changed {
			return def, true
		}
		visit(root.ProtoReflect(), func(n *pg_query.Node) {
			if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) >= 2 {
				if q := cr.Fields[len(cr.Fields)-2].GetString_(); q != nil && q.Sval == old {
					q.Sval = new
				}
			}
		})
	} else {
		names := map[string]bool{} // what the table is called in the query
		for _, r := range rels {
			if r.Relname == table {
				if r.Alias != nil {
					names[r.Alias.Aliasname] = true
				} else {
					names[table] = true
				}
			}
		}
		if len(names) == 0 {
			return def, true
		}
		ok := true
		rename := func(cr *pg_query.ColumnRef) bool {
			last := cr.Fields[len(cr.Fields)-1].GetString_()
			if last == nil || last.Sval != old {
				return false
			}
			if len(cr.Fields) >= 2 {
				q := cr.Fields[len(cr.Fields)-2].GetString_()
				if q == nil || !names[q.Sval] {
					return false
				}
			} else if len(rels) != 1 {
				ok = false // whose column? not known here
				return false
			}
			last.Sval = new
			return true
		}
		renamed := map[*pg_query.ColumnRef]bool{}
		visit(root.ProtoReflect(), func(n *pg_query.Node) {
			if cr := n.GetColumnRef(); cr != nil && rename(cr) {
				renamed[cr] = true
			}
			// The view's column keeps its name, as in PostgreSQL (children
			// are visited first: the reference is renamed by now).
			if rt := n.GetResTarget(); rt != nil && rt.Name == "" && renamed[rt.Val.GetColumnRef()] {
				rt.Name = old
			}
		})
		if !ok {
			return "", false
		}
	}
	out, err := pg_query.Deparse(tree)
	if err != nil {
		return "", false
	}
	return out, true
}

// viewRenameScripts keep the recorded PostgreSQL text of the views that
// are current (SQLite's text unchanged since it was recorded) through a
// rename, around the rename statement itself: before it, the text is
// followed (or forgotten) and marked; after it, SQLite's rewritten text
// is recorded with it.
func viewRenameScripts(table, old, new string, column bool) (before, after []string) {
	col := "0"
	if column {
		col = "1"
	}
	call := fmt.Sprintf("_tandem_view_rename(definition, %s, %s, %s, %s)", quoteLit(table), quoteLit(old), quoteLit(new), col)
	current := "sqlite_sql = (SELECT m.sql FROM sqlite_master m WHERE m.type = 'view' AND m.name = _tandem_views.name)"
	before = []string{
		"DELETE FROM _tandem_views WHERE " + current + " AND " + call + " IS NULL",
		"UPDATE _tandem_views SET definition = " + call + ", sqlite_sql = '' WHERE " + current,
	}
	after = []string{"UPDATE _tandem_views SET sqlite_sql = coalesce((SELECT m.sql FROM sqlite_master m WHERE m.type = 'view' AND m.name = _tandem_views.name), '') WHERE sqlite_sql = ''"}
	return before, after
}
