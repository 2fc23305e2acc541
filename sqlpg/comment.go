package sqlpg

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// Comments (COMMENT ON) live in _tandem_comments, one row per object:
// kind 'rel' (a table, view, sequence or index, by name), 'col' (a
// table's or view's column), 'schema' (public) or 'type' (an enum). The
// catalog's pg_description, obj_description and col_description read
// them (psql's \d+ and \dt+, pg_dump, ORMs' column comments). Renames
// and drops keep them in step (renameComments, dropComments).

// comment is COMMENT ON TABLE | VIEW | SEQUENCE | INDEX | COLUMN |
// SCHEMA | TYPE ... IS 'text' | NULL. Other objects (functions,
// constraints, ...) do not exist here or have no place for a comment:
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
	return "UPDATE _tandem_comments SET name = " + quoteLit(new) + " WHERE kind IN ('rel', 'col') AND name = " + quoteLit(old)
}

// dropComments: the statement that drops the comments of a relation and
// its columns.
func dropComments(name string) string {
	return "DELETE FROM _tandem_comments WHERE kind IN ('rel', 'col') AND name = " + quoteLit(name)
}

// descriptionSQL is pg_description: the comments kept, and the public
// schema's default one unless a COMMENT ON SCHEMA public replaced it.
const descriptionSQL = `SELECT CAST(CASE c.kind WHEN 'schema' THEN 2200 WHEN 'type' THEN (SELECT e.oid FROM main._tandem_enums e WHERE e.name = c.name)
			ELSE _tandem_oid(c.name) END AS INTEGER) AS objoid,
		CAST(CASE c.kind WHEN 'schema' THEN 2615 WHEN 'type' THEN 1247 ELSE 1259 END AS INTEGER) AS classoid,
		CASE WHEN c.kind = 'col' THEN (SELECT p.cid + 1 FROM pragma_table_info(c.name) p WHERE p.name = c.column_name) ELSE 0 END AS objsubid,
		c.comment AS description
	FROM main._tandem_comments c WHERE c.comment IS NOT NULL
	UNION ALL
	SELECT 2200, 2615, 0, 'standard public schema' WHERE NOT EXISTS (SELECT 1 FROM main._tandem_comments WHERE kind = 'schema' AND name = 'public')`
