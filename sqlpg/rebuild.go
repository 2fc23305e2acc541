package sqlpg

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// Dropping a table's declared primary key. SQLite keeps a primary key in
// the table itself: an INTEGER PRIMARY KEY is the rowid (the column's
// values are not in the rows' records), any other has an index of its own
// (sqlite_autoindex_t_N) that the table's text declares. Editing the
// stored text, as the column alterations do, would lose the rowid alias's
// values or leave the index orphaned (a malformed schema), so the table is
// rebuilt as SQLite's documentation describes: renamed aside (with
// legacy_alter_table, so the views that read it are neither rewritten nor
// checked), made again from its edited text, its rows copied with their
// rowids, the old one dropped, its indexes and triggers made again. The
// back end's capture triggers are not copied: it installs them again after
// any DDL, keyed by the rowid now.

// TableDefiner is a Schema that gives what a table rebuild needs.
type TableDefiner interface {
	// TableDef: the table's CREATE TABLE text as SQLite stores it (""
	// when it is not a table of the main schema), its stored columns in
	// order (not generated ones), and the CREATE INDEX / CREATE TRIGGER
	// texts of its own indexes and triggers (not the back end's capture
	// triggers, not the indexes its text declares).
	TableDef(table string) (create string, cols []string, others []string)
	// ReferencingKeys: the foreign keys that reference table, of any
	// table (itself included).
	ReferencingKeys(table string) []ForeignKeyRef
	// ColumnIndexes: the indexes of table that read column col, other
	// than those its text declares (CREATE INDEX, ADD CONSTRAINT).
	ColumnIndexes(table, col string) []string
}

// ForeignKeyRef is a foreign key: the table it is on, its name as the
// catalog gives it, and the referenced columns (attnums of the referenced
// table, in key order).
type ForeignKeyRef struct {
	Table, Name string
	RefCols     []int
}

// DropPrimaryKeySQL returns create (a CREATE TABLE text as SQLite stores
// it) without its PRIMARY KEY clause, its columns cols NOT NULL (as
// PostgreSQL leaves them after DROP CONSTRAINT of the key).
func DropPrimaryKeySQL(create string, cols []string) (string, error) {
	open := strings.IndexByte(create, '(')
	if open < 0 {
		return "", fmt.Errorf("%w: no column list in %q", ErrAlterColumn, create)
	}
	items, err := splitTop(create[open+1:])
	if err != nil {
		return "", err
	}
	out, found := create, false
	for i, it := range items {
		start, end := open+1+it[0], open+1+it[1]
		toks := tokens(create[start:end])
		for j := 0; j+1 < len(toks); j++ {
			if !strings.EqualFold(toks[j].text, "PRIMARY") || !strings.EqualFold(toks[j+1].text, "KEY") {
				continue
			}
			from := j
			if j >= 2 && strings.EqualFold(toks[j-2].text, "CONSTRAINT") {
				from = j - 2
			}
			if from == 0 { // a table constraint: the whole item
				if i > 0 {
					start = open + 1 + items[i-1][1] // from the comma before it
				}
				out = create[:start] + create[end:]
			} else {
				out = cutClause(create, start, end, toks, from, j+1)
			}
			found = true
			break
		}
		if found {
			break
		}
	}
	if !found {
		return "", fmt.Errorf("%w: no PRIMARY KEY in %q", ErrAlterColumn, create)
	}
	for _, c := range cols {
		if out, err = AlterColumnSQL(out, c, AlterSetNotNull, ""); err != nil {
			return "", err
		}
	}
	return out, nil
}

// dropPrimaryKey is ALTER TABLE table DROP CONSTRAINT of the primary key
// the table declares (ok false: cmd names another constraint, or the key
// is an index ALTER TABLE ADD PRIMARY KEY made, dropped as an index).
func (t *translator) dropPrimaryKey(table string, cmd *pg_query.AlterTableCmd) (script []string, ok bool, err error) {
	if t.sch == nil {
		return nil, false, nil
	}
	cols := t.sch.Columns(table)
	var pk []string
	var pkNums []int
	for i := range cols {
		if cols[i].PK > 0 {
			pk = append(pk, "")
			pkNums = append(pkNums, 0)
		}
	}
	for i, c := range cols {
		if c.PK > 0 && int(c.PK) <= len(pk) {
			pk[c.PK-1], pkNums[c.PK-1] = c.Name, i+1
		}
	}
	if len(pk) == 0 {
		return nil, false, nil
	}
	td, isDef := t.sch.(TableDefiner)
	if !isDef {
		return nil, false, nil
	}
	create, stored, others := td.TableDef(table)
	if create == "" {
		return nil, true, unsupported("ALTER TABLE DROP CONSTRAINT of a temporary table's primary key")
	}
	pkName := ConstraintName(create, "p", strings.Join(pk, ","))
	if pkName == "" {
		pkName = table + "_pkey"
	}
	if pkName != cmd.Name {
		return nil, false, nil
	}
	// The foreign keys that reference the key depend on it (2BP01, or
	// dropped with CASCADE, as PostgreSQL); any other reference to the
	// table would see its parent dropped under it by the rebuild.
	same := func(a, b []int) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	var onKey []ForeignKeyRef
	for _, fk := range td.ReferencingKeys(table) {
		if !same(fk.RefCols, pkNums) {
			return nil, true, unsupported("ALTER TABLE DROP CONSTRAINT of the primary key of a table other foreign keys reference (%s on table %s)", fk.Name, fk.Table)
		}
		onKey = append(onKey, fk)
	}
	if len(onKey) > 0 && cmd.Behavior != pg_query.DropBehavior_DROP_CASCADE {
		var detail []string
		for _, fk := range onKey {
			detail = append(detail, fmt.Sprintf("constraint %s on table %s depends on index %s", fk.Name, fk.Table, pkName))
		}
		return nil, true, &pgwire.Error{Code: "2BP01",
			Message: fmt.Sprintf("cannot drop constraint %s on table %s because other objects depend on it", pkName, table),
			Detail:  strings.Join(detail, "\n"), Hint: "Use DROP ... CASCADE to drop the dependent objects too."}
	}
	for _, fk := range onKey {
		if strings.EqualFold(fk.Table, table) {
			if create, err = AlterColumnSQL(create, "", AlterDropConstraint, fk.Name); err != nil {
				return nil, true, err
			}
			continue
		}
		script = append(script, alterColumnScript(fk.Table, "", AlterDropConstraint, fk.Name, "")...)
	}
	next, err := DropPrimaryKeySQL(create, pk)
	if err != nil {
		return nil, true, unsupported("ALTER TABLE DROP CONSTRAINT of this primary key (%v)", err)
	}
	aside := "_tandem_rebuild_" + table
	list := identList(stored)
	script = append(script,
		"PRAGMA legacy_alter_table = ON",
		"ALTER TABLE "+quoteIdent(table)+" RENAME TO "+quoteIdent(aside),
		"PRAGMA legacy_alter_table = OFF",
		next,
		"INSERT INTO "+quoteIdent(table)+" (rowid, "+list+") SELECT rowid, "+list+" FROM "+quoteIdent(aside),
		"DROP TABLE "+quoteIdent(aside))
	return append(script, others...), true, nil
}
