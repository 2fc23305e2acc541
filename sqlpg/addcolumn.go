package sqlpg

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// ALTER TABLE ... ADD COLUMN. SQLite's ADD COLUMN takes neither PRIMARY
// KEY nor UNIQUE, nor a REFERENCES clause with a default other than NULL,
// and refuses a NOT NULL column without a default on a table with rows
// (with its own message): the column is added without them, then its key
// is added as ALTER TABLE ADD CONSTRAINT adds one (a unique index; a
// primary key's column NOT NULL first) and its foreign key as ADD
// CONSTRAINT ... FOREIGN KEY (the rows checked first). What PostgreSQL
// checks on the rows there (NOT NULL, CHECK) is checked before, with the
// column's default as their value, and fails as PostgreSQL fails.

// constraintNameFree refuses (42710) a constraint name the table has: a
// table's constraint names are its own (Hibernate's schema "update"
// relies on the error to not add a key twice). CHECK constraints are
// found in the table's definition.
func constraintNameFree(table, conname string) string {
	return fmt.Sprintf("SELECT _pg_raise('42710', %s) WHERE EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = _tandem_oid(%s) AND conname = %s)"+
		" OR instr((SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s), %s) > 0",
		quoteLit(fmt.Sprintf("constraint %q for relation %q already exists", conname, table)), quoteLit(table), quoteLit(conname),
		quoteLit(table), quoteLit("CONSTRAINT "+quoteIdent(conname)))
}

// addKey is ALTER TABLE table ADD [CONSTRAINT name] PRIMARY KEY / UNIQUE
// (columns): SQLite cannot add a constraint to a table, a unique index
// enforces the same rows (recorded in _tandem_constraints as the
// constraint). A primary key's columns become NOT NULL first (23502 when
// a row holds NULL), and a table has one primary key (42P16), as in
// PostgreSQL.
func (t *translator) addKey(table string, c *pg_query.Constraint) []string {
	keys := strs(c.Keys)
	idx := c.Conname
	primary := c.Contype == pg_query.ConstrType_CONSTR_PRIMARY
	if idx == "" {
		if primary {
			idx = table + "_pkey"
		} else {
			idx = table + "_" + strings.Join(keys, "_") + "_key"
		}
		// Numbered when taken, as PostgreSQL chooses (Sequelize's
		// sync({alter}) adds the same UNIQUE again each time).
		if ix, ok := t.sch.(interface{ RelationExists(string) bool }); ok {
			base := idx
			for n := 1; ix.RelationExists(idx); n++ {
				idx = base + itoa(n)
			}
		}
	}
	var script []string
	kind := "u"
	if primary {
		kind = "p"
		script = append(script, fmt.Sprintf("SELECT _pg_raise('42P16', %s) WHERE EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = _tandem_oid(%s) AND contype = 'p')",
			quoteLit(fmt.Sprintf("multiple primary keys for table %q are not allowed", table)), quoteLit(table)))
		for _, k := range keys {
			if t.sch != nil && !hasColumn(t.sch.Columns(table), k) {
				continue // added by this statement, or missing: CREATE INDEX says which
			}
			script = append(script, alterColumnScript(table, k, AlterSetNotNull, "", notNullCheck(table, k))...)
		}
	}
	for _, k := range keys {
		// SQLite reads a quoted name that is no column as a string (an
		// index on a constant): PostgreSQL's 42703 first. Checked when
		// the script runs, after columns this statement adds.
		msg := fmt.Sprintf("column %q named in key does not exist", k)
		if primary {
			msg = fmt.Sprintf("column %q of relation %q does not exist", k, table) // its NOT NULL comes first
		}
		script = append(script, fmt.Sprintf("SELECT _pg_raise('42703', %s) WHERE NOT EXISTS (SELECT 1 FROM pragma_table_info(%s) WHERE name = %s)",
			quoteLit(msg), quoteLit(table), quoteLit(k)))
	}
	return append(script, "CREATE UNIQUE INDEX "+quoteIdent(idx)+" ON "+quoteIdent(table)+" ("+identList(keys)+")",
		fmt.Sprintf("INSERT OR REPLACE INTO _tandem_constraints (name, table_name, kind) VALUES (%s, %s, %s)", quoteLit(idx), quoteLit(table), quoteLit(kind)))
}

// notNullCheck fails (23502) when a row holds NULL in column col.
func notNullCheck(table, col string) string {
	return fmt.Sprintf("SELECT _pg_raise('23502', %s) FROM %s WHERE %s IS NULL LIMIT 1",
		quoteLit(fmt.Sprintf("column %q of relation %q contains null values", col, table)), quoteIdent(table), quoteIdent(col))
}

// addColumn is ALTER TABLE table ADD COLUMN cd.
func (t *translator) addColumn(table string, cd *pg_query.ColumnDef) ([]string, error) {
	// What the column's constraints ask of the rows there, with the
	// column's default as its value (NULL without one).
	var dflt *pg_query.Node
	notNull := false
	var keys, fks, checks []*pg_query.Constraint
	var rest []*pg_query.Node
	for _, cn := range cd.Constraints {
		c := cn.GetConstraint()
		if c == nil {
			rest = append(rest, cn)
			continue
		}
		switch c.Contype {
		case pg_query.ConstrType_CONSTR_DEFAULT:
			dflt = c.RawExpr
		case pg_query.ConstrType_CONSTR_NOTNULL:
			notNull = true
		case pg_query.ConstrType_CONSTR_PRIMARY, pg_query.ConstrType_CONSTR_UNIQUE:
			keys = append(keys, &pg_query.Constraint{Contype: c.Contype, Conname: c.Conname, Keys: []*pg_query.Node{pg_query.MakeStrNode(cd.Colname)}})
			continue
		case pg_query.ConstrType_CONSTR_FOREIGN:
			fks = append(fks, c)
		case pg_query.ConstrType_CONSTR_CHECK:
			checks = append(checks, c)
		}
		rest = append(rest, cn)
	}
	tname := ""
	if cd.TypeName != nil && len(cd.TypeName.Names) > 0 {
		tname = strings.ToLower(strs(cd.TypeName.Names)[len(cd.TypeName.Names)-1])
	}
	numbered := strings.Contains(tname, "serial")
	for _, cn := range cd.Constraints {
		if c := cn.GetConstraint(); c != nil && c.Contype == pg_query.ConstrType_CONSTR_IDENTITY {
			numbered = true
		}
	}
	tq := quoteIdent(table)
	var pre []string
	// rows: the table's rows with the new column's value.
	rows := ""
	if !numbered {
		value := "NULL"
		if dflt != nil {
			v, err := t.expr(proto.Clone(dflt).(*pg_query.Node))
			if err != nil {
				return nil, err
			}
			value = "(" + v + ")"
		}
		rows = "(SELECT " + tq + ".*, " + value + " AS " + quoteIdent(cd.Colname) + " FROM " + tq + ")"
		if notNull {
			pre = append(pre, fmt.Sprintf("SELECT _pg_raise('23502', %s) FROM %s WHERE %s IS NULL LIMIT 1",
				quoteLit(fmt.Sprintf("column %q of relation %q contains null values", cd.Colname, table)), rows, quoteIdent(cd.Colname)))
		}
	}
	if t.sch != nil && rows != "" {
		var cols []string
		for _, col := range t.sch.Columns(table) {
			cols = append(cols, col.Name)
		}
		cols = append(cols, cd.Colname)
		for _, c := range checks {
			e, err := t.expr(proto.Clone(c.RawExpr).(*pg_query.Node))
			if err != nil {
				return nil, err
			}
			conname := c.Conname
			if conname == "" {
				conname = CheckName(table, e, cols)
			}
			pre = append(pre, fmt.Sprintf("SELECT _pg_raise('23514', %s) FROM %s WHERE NOT (%s) LIMIT 1",
				quoteLit(fmt.Sprintf("check constraint %q of relation %q is violated by some row", conname, table)), rows, e))
		}
	}
	// A foreign key with a default other than NULL: SQLite will not add
	// the column with it, so it is added after, as ADD CONSTRAINT.
	var later []*pg_query.Constraint
	if dflt != nil && !isNullConst(dflt) && len(fks) > 0 {
		var kept []*pg_query.Node
		for _, cn := range rest {
			if c := cn.GetConstraint(); c != nil && c.Contype == pg_query.ConstrType_CONSTR_FOREIGN {
				c.FkAttrs = []*pg_query.Node{pg_query.MakeStrNode(cd.Colname)}
				later = append(later, c)
				continue
			}
			kept = append(kept, cn)
		}
		rest = kept
	}
	cd.Constraints = rest
	def, meta, err := t.columnDef(table, cd, false, false)
	if err != nil {
		return nil, err
	}
	var script []string
	for _, k := range keys {
		if k.Conname != "" {
			script = append(script, constraintNameFree(table, k.Conname))
		}
		if k.Contype == pg_query.ConstrType_CONSTR_PRIMARY {
			script = append(script, fmt.Sprintf("SELECT _pg_raise('42P16', %s) WHERE EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = _tandem_oid(%s) AND contype = 'p')",
				quoteLit(fmt.Sprintf("multiple primary keys for table %q are not allowed", table)), quoteLit(table)))
		}
	}
	script = append(script, pre...)
	if m := nextvalDefaultRe.FindStringSubmatchIndex(def); m != nil {
		// SQLite adds columns with constant defaults only: the
		// column is added bare, its sequence made, the rows there
		// numbered, then the default (and NOT NULL) written into
		// the table's stored definition, as PostgreSQL fills them.
		call := def[m[2]:m[3]]
		bare := def[:m[0]] + def[m[1]:]
		notNull := strings.Contains(bare, " NOT NULL")
		bare = strings.Replace(bare, " NOT NULL", "", 1)
		script = append(script, "ALTER TABLE "+tq+" ADD COLUMN "+bare, meta)
		script = append(script, t.triggers...)
		t.triggers = nil
		script = append(script, "UPDATE "+tq+" SET "+quoteIdent(cd.Colname)+" = "+call)
		script = append(script, alterColumnScript(table, cd.Colname, AlterSetDefault, call, "")...)
		if notNull {
			script = append(script, alterColumnScript(table, cd.Colname, AlterSetNotNull, "", "")...)
		}
	} else {
		script = append(script, "ALTER TABLE "+tq+" ADD COLUMN "+def, meta)
		script = append(script, t.triggers...)
		t.triggers = nil
	}
	for _, c := range later {
		s, err := t.addConstraint(table, c)
		if err != nil {
			return nil, err
		}
		script = append(script, s...)
	}
	for _, k := range keys {
		if k.Contype == pg_query.ConstrType_CONSTR_PRIMARY {
			// NOT NULL first (the rows there hold the default)
			script = append(script, alterColumnScript(table, cd.Colname, AlterSetNotNull, "", notNullCheck(table, cd.Colname))...)
		}
		script = append(script, t.addKey(table, k)...)
	}
	return script, nil
}

// isNullConst: the expression is the constant NULL.
func isNullConst(n *pg_query.Node) bool {
	if c := n.GetAConst(); c != nil {
		return c.Isnull
	}
	return false
}
