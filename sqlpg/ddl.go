package sqlpg

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// DDL: CREATE TABLE is written out by hand (PostgreSQL types become SQLite
// affinities, each column's PostgreSQL type is recorded in _tandem_columns
// by the same script); the rest is rewritten and deparsed.

// limitPrefix names the CHECK constraints that hold a column to its type's
// limits: hidden from the catalog (CheckConstraints), answered with
// PostgreSQL's error (LimitError).
const limitPrefix = "_tandem_lim_"

// limitCheck is the constraint that keeps a column's values within what
// its PostgreSQL type holds, "" for a type without such a limit: a
// smallint's or integer's range (22003), varchar(n) / char(n)'s length
// (22001; trailing spaces past n are allowed, as PostgreSQL truncates
// them), numeric(p,s)'s precision (22003). SQLite checks it on every write
// (INSERT, UPDATE, COPY, a standby's apply) in its own code; values of
// another storage class (text a column's affinity could not convert) are
// left to the checks that read literals (22P02).
func limitCheck(col string, typ *Type, mod int32) string {
	c := quoteIdent(col)
	switch {
	case typ.Name == "int2":
		return "CONSTRAINT " + quoteIdent(limitPrefix+"int2") + " CHECK (typeof(" + c + ") <> 'integer' OR " + c + " BETWEEN -32768 AND 32767)"
	case typ.Name == "int4":
		return "CONSTRAINT " + quoteIdent(limitPrefix+"int4") + " CHECK (typeof(" + c + ") <> 'integer' OR " + c + " BETWEEN -2147483648 AND 2147483647)"
	case (typ.Name == "varchar" || typ.Name == "bpchar") && mod > 4:
		return "CONSTRAINT " + quoteIdent(fmt.Sprintf("%s%s_%d", limitPrefix, typ.Name, mod-4)) +
			fmt.Sprintf(" CHECK (typeof(%s) <> 'text' OR length(rtrim(%s, ' ')) <= %d)", c, c, mod-4)
	case typ.Name == "numeric" && mod >= 4:
		p, sc := (mod-4)>>16, (mod-4)&0xffff
		if p < sc {
			return ""
		}
		return "CONSTRAINT " + quoteIdent(fmt.Sprintf("%snumeric_%d_%d", limitPrefix, p, sc)) +
			fmt.Sprintf(" CHECK (typeof(%s) NOT IN ('integer', 'real') OR abs(round(%s, %d)) < 1e%d)", c, c, sc, p-sc)
	}
	return ""
}

// LimitError is PostgreSQL's error for a row that broke the type limit
// checked by the constraint named name (limitCheck); ok is false for any
// other constraint.
func LimitError(name string) (err *pgwire.Error, ok bool) {
	kind, ok := strings.CutPrefix(name, limitPrefix)
	if !ok {
		return nil, false
	}
	var n, p, sc int
	switch {
	case kind == "int2":
		return &pgwire.Error{Code: "22003", Message: "smallint out of range"}, true
	case kind == "int4":
		return &pgwire.Error{Code: "22003", Message: "integer out of range"}, true
	case scan(kind, "varchar_%d", &n):
		return &pgwire.Error{Code: "22001", Message: fmt.Sprintf("value too long for type character varying(%d)", n)}, true
	case scan(kind, "bpchar_%d", &n):
		return &pgwire.Error{Code: "22001", Message: fmt.Sprintf("value too long for type character(%d)", n)}, true
	case scan(kind, "numeric_%d_%d", &p, &sc):
		return &pgwire.Error{Code: "22003", Message: "numeric field overflow",
			Detail: fmt.Sprintf("A field with precision %d, scale %d must round to an absolute value less than 10^%d.", p, sc, p-sc)}, true
	}
	return nil, false
}

func scan(s, format string, args ...any) bool {
	n, err := fmt.Sscanf(s, format, args...)
	return err == nil && n == len(args)
}

// onCommit checks a CREATE TABLE's ON COMMIT clause: PostgreSQL's error
// for a table that is not temporary, and a refusal of the actions the
// SQLite back end does not carry out (accepted, they would leave the
// table, or its rows, in place after COMMIT).
func onCommit(a pg_query.OnCommitAction, temp bool) error {
	switch a {
	case pg_query.OnCommitAction_ON_COMMIT_ACTION_UNDEFINED, pg_query.OnCommitAction_ONCOMMIT_NOOP:
		return nil
	}
	if !temp {
		return &pgwire.Error{Code: "42P16", Message: "ON COMMIT can only be used on temporary tables"}
	}
	switch a {
	case pg_query.OnCommitAction_ONCOMMIT_DROP, pg_query.OnCommitAction_ONCOMMIT_DELETE_ROWS:
		what := map[pg_query.OnCommitAction]string{pg_query.OnCommitAction_ONCOMMIT_DROP: "ON COMMIT DROP", pg_query.OnCommitAction_ONCOMMIT_DELETE_ROWS: "ON COMMIT DELETE ROWS"}[a]
		return &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: what + " is not supported on the SQLite back end",
			Hint: "drop the table (DROP TABLE) or empty it (DELETE FROM) before COMMIT yourself; ON COMMIT PRESERVE ROWS, the default, is supported",
			Err:  ErrNotSupported}
	}
	return nil
}

func (t *translator) createTable(s *pg_query.CreateStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "CREATE TABLE"
	name, err := t.tableName(s.Relation)
	if err != nil {
		return nil, err
	}
	t.creating = name
	if len(s.InhRelations) > 0 {
		return nil, unsupported("INHERITS")
	}
	if s.Partspec != nil || s.Partbound != nil {
		return nil, unsupported("partitioned tables")
	}
	if s.OfTypename != nil {
		return nil, unsupported("CREATE TABLE OF type")
	}
	if len(s.TableElts) == 0 {
		return nil, unsupported("a table without columns")
	}
	if s.Relation.Relpersistence != "t" {
		if err := t.caseClash(name); err != nil {
			return nil, err
		}
	}
	temp := s.Relation.Relpersistence == "t"
	if err := onCommit(s.Oncommit, temp); err != nil {
		return nil, err
	}
	var lc *likeCopy
	for _, e := range s.TableElts {
		if e.GetTableLikeClause() != nil {
			if lc, err = t.expandLike(s, name); err != nil {
				return nil, err
			}
			break
		}
	}
	// Which single column is the primary key (for INTEGER PRIMARY KEY)?
	pkCols := map[string]bool{}
	for _, e := range s.TableElts {
		if c := e.GetConstraint(); c != nil && c.Contype == pg_query.ConstrType_CONSTR_PRIMARY {
			for _, k := range strs(c.Keys) {
				pkCols[k] = true
			}
			t.pkName = c.Conname
		}
		if cd := e.GetColumnDef(); cd != nil {
			for _, cn := range cd.Constraints {
				if c := cn.GetConstraint(); c != nil && c.Contype == pg_query.ConstrType_CONSTR_PRIMARY {
					pkCols[cd.Colname] = true
					t.pkName = c.Conname
				}
			}
		}
	}
	colNames := map[string]bool{}
	for _, e := range s.TableElts {
		if cd := e.GetColumnDef(); cd != nil {
			if colNames[cd.Colname] {
				return nil, &pgwire.Error{Code: "42701", Message: fmt.Sprintf("column %q specified more than once", cd.Colname)}
			}
			colNames[cd.Colname] = true
		}
	}
	for _, e := range s.TableElts {
		if c := e.GetConstraint(); c != nil && (c.Contype == pg_query.ConstrType_CONSTR_PRIMARY || c.Contype == pg_query.ConstrType_CONSTR_UNIQUE) {
			for _, k := range strs(c.Keys) {
				if !colNames[k] {
					return nil, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q named in key does not exist", k)}
				}
			}
		}
	}
	// SQLite wants every column before the table constraints;
	// PostgreSQL takes them in any order.
	var defs, cons, meta []string
	for _, e := range s.TableElts {
		switch x := e.Node.(type) {
		case *pg_query.Node_ColumnDef:
			def, m, err := t.columnDef(name, x.ColumnDef, len(pkCols) == 1 && pkCols[x.ColumnDef.Colname], temp)
			if err != nil {
				return nil, err
			}
			if lc != nil {
				if d, ok := lc.defaults[x.ColumnDef.Colname]; ok {
					// LIKE ... INCLUDING DEFAULTS: the source's, as stored.
					def += " DEFAULT " + d
					if seq := lc.seqs[x.ColumnDef.Colname]; seq != "" && m != "" {
						m = strings.Replace(m, ", NULL)", ", "+quoteLit(seq)+")", 1)
					}
				}
			}
			defs = append(defs, def)
			if m != "" {
				meta = append(meta, m)
			}
		case *pg_query.Node_Constraint:
			c := x.Constraint
			if c.Contype == pg_query.ConstrType_CONSTR_PRIMARY && len(pkCols) == 1 && t.intPK {
				continue // became INTEGER PRIMARY KEY on the column
			}
			def, err := t.tableConstraint(c)
			if err != nil {
				return nil, err
			}
			if def != "" {
				cons = append(cons, def)
			}
		default:
			return nil, unsupported("this table element")
		}
	}
	if lc != nil {
		cons = append(cons, lc.checks...)
	}
	defs = append(defs, cons...)
	create := "CREATE "
	if temp {
		create += "TEMP "
	}
	create += "TABLE "
	if s.IfNotExists {
		create += "IF NOT EXISTS "
	}
	create += quoteIdent(name) + " (\n\t" + strings.Join(defs, ",\n\t") + "\n)"
	tr.Script = append(tr.Script, NameChecks(create))
	tr.Script = append(tr.Script, t.triggers...)
	// A temporary table's metadata too: the back end writes the
	// statements of session-local DDL to the session's temporary copy
	// of the metadata table (TempColumns).
	if s.IfNotExists {
		// Metadata only for a table this statement created: if it
		// existed, its rows are already there (INSERT OR IGNORE).
		for i := range meta {
			meta[i] = strings.Replace(meta[i], "INSERT OR REPLACE", "INSERT OR IGNORE", 1)
		}
	}
	tr.Script = append(tr.Script, meta...)
	if lc != nil {
		tr.Script = append(tr.Script, lc.after...)
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	return tr, nil
}

func (t *translator) columnDef(table string, cd *pg_query.ColumnDef, onlyPK, temp bool) (def, meta string, err error) {
	if cd.TypeName == nil {
		return "", "", unsupported("a column without a type")
	}
	typ, mod, enum, err := t.resolveType(cd.TypeName)
	if err != nil {
		return "", "", err
	}
	tname := strings.ToLower(strs(cd.TypeName.Names)[len(cd.TypeName.Names)-1])
	serial := strings.Contains(tname, "serial")
	identity := ""
	var parts []string
	pk := false
	for _, cn := range cd.Constraints {
		c := cn.GetConstraint()
		if c == nil {
			continue
		}
		switch c.Contype {
		case pg_query.ConstrType_CONSTR_IDENTITY:
			identity = c.GeneratedWhen
			if identity == "" {
				identity = "d"
			}
		case pg_query.ConstrType_CONSTR_PRIMARY:
			pk = true
		}
	}
	if pk {
		onlyPK = true
	}
	intPK := onlyPK && (typ.Name == "int2" || typ.Name == "int4" || typ.Name == "int8")
	numbered := serial || identity != ""
	if numbered && typ.Name != "int2" && typ.Name != "int4" && typ.Name != "int8" {
		return "", "", &pgwire.Error{Code: "22023", Message: "identity column type must be smallint, integer, or bigint"}
	}
	seqName := table + "_" + cd.Colname + "_seq"
	if ix, ok := t.sch.(interface{ RelationExists(string) bool }); ok && !temp {
		// Numbered when a relation has the name, as PostgreSQL does.
		base := seqName
		for n := 1; ix.RelationExists(seqName); n++ {
			seqName = base + itoa(n)
		}
	}
	if intPK {
		// The rowid alias. Left out, SQLite numbers it max(rowid)+1 and
		// ignores its DEFAULT: for a serial or identity column the
		// translator writes the sequence's nextval into each INSERT
		// (serialFill); the DEFAULT below shows the catalog where the
		// values come from.
		if t.pkName != "" {
			// The constraint's name, which SQLite keeps in the text only
			// (the catalog reads it back: ORMs compare names).
			parts = append(parts, "INTEGER CONSTRAINT "+quoteIdent(t.pkName)+" PRIMARY KEY")
		} else {
			parts = append(parts, "INTEGER PRIMARY KEY")
		}
		t.intPK = true
	} else {
		parts = append(parts, typ.SQLite)
	}
	constraintAttrs(cd.Constraints)
	for _, cn := range cd.Constraints {
		c := cn.GetConstraint()
		if c == nil {
			continue
		}
		s, err := t.columnConstraint(c, intPK)
		if err != nil {
			return "", "", err
		}
		if s != "" {
			parts = append(parts, s)
		}
	}
	typeOID := typ.OID
	if enum != nil {
		parts = append(parts, enumCheck(cd.Colname, enum))
		typeOID = enum.OID
	} else if lim := limitCheck(cd.Colname, typ, mod); lim != "" {
		parts = append(parts, lim)
	}
	if numbered && !temp {
		// A sequence of the column's type numbers it, as in PostgreSQL
		// (temporary tables keep SQLite's numbering: sequences are not
		// session-local here).
		maxv := map[string]int64{"int2": 32767, "int4": 2147483647, "int8": 9223372036854775807}[typ.Name]
		parts = append(parts, "DEFAULT ("+"_tandem_nextval("+quoteLit(quoteIdentIfNeeded(seqName))+"))")
		if !intPK {
			parts = append(parts, "NOT NULL")
		}
		t.triggers = append(t.triggers, fmt.Sprintf("INSERT INTO _tandem_sequences (name, type_oid, max_value, owner_table, owner_column) VALUES (%s, %d, %d, %s, %s)",
			quoteLit(seqName), typ.OID, maxv, quoteLit(table), quoteLit(cd.Colname)))
	}
	if numbered && temp {
		// A temporary table's serial or identity column counts in the
		// session (its connection's _tandem_temp_serial), as
		// PostgreSQL's temporary sequence would.
		parts = append(parts, "DEFAULT (_tandem_temp_serial("+quoteLit(table+"."+cd.Colname)+"))")
		if !intPK {
			parts = append(parts, "NOT NULL")
		}
	}
	def = quoteIdent(cd.Colname) + " " + strings.Join(parts, " ")
	seq := "NULL"
	if numbered && !temp {
		seq = quoteLit(seqName)
	}
	meta = fmt.Sprintf("INSERT OR REPLACE INTO _tandem_columns (table_name, column_name, type_oid, typmod, identity, sequence) VALUES (%s, %s, %d, %d, %s, %s)",
		quoteLit(table), quoteLit(cd.Colname), typeOID, mod, quoteLit(identity), seq)
	return def, meta, nil
}

func (t *translator) columnConstraint(c *pg_query.Constraint, intPK bool) (string, error) {
	name := ""
	if c.Conname != "" {
		name = "CONSTRAINT " + quoteIdent(c.Conname) + " "
	}
	switch c.Contype {
	case pg_query.ConstrType_CONSTR_NOTNULL:
		return "NOT NULL", nil
	case pg_query.ConstrType_CONSTR_NULL:
		return "", nil
	case pg_query.ConstrType_CONSTR_DEFAULT:
		e, err := t.expr(c.RawExpr)
		if err != nil {
			return "", err
		}
		return "DEFAULT (" + e + ")", nil
	case pg_query.ConstrType_CONSTR_PRIMARY:
		if intPK {
			return "", nil
		}
		return name + "PRIMARY KEY", nil
	case pg_query.ConstrType_CONSTR_UNIQUE:
		return name + "UNIQUE", nil
	case pg_query.ConstrType_CONSTR_CHECK:
		e, err := t.expr(c.RawExpr)
		if err != nil {
			return "", err
		}
		return name + "CHECK (" + e + ")", nil
	case pg_query.ConstrType_CONSTR_FOREIGN:
		ref, err := t.references(c)
		if err != nil {
			return "", err
		}
		return name + ref, nil
	case pg_query.ConstrType_CONSTR_IDENTITY:
		return "", nil
	case pg_query.ConstrType_CONSTR_GENERATED:
		e, err := t.expr(c.RawExpr)
		if err != nil {
			return "", err
		}
		return "GENERATED ALWAYS AS (" + e + ") STORED", nil
	case pg_query.ConstrType_CONSTR_ATTR_DEFERRABLE, pg_query.ConstrType_CONSTR_ATTR_NOT_DEFERRABLE,
		pg_query.ConstrType_CONSTR_ATTR_DEFERRED, pg_query.ConstrType_CONSTR_ATTR_IMMEDIATE:
		return "", nil
	}
	return "", unsupported("this column constraint")
}

// constraintAttrs applies a column's DEFERRABLE, NOT DEFERRABLE,
// INITIALLY DEFERRED and INITIALLY IMMEDIATE (separate items of its
// constraint list in the raw parse tree) to the constraint before them,
// as PostgreSQL's transformConstraintAttrs: INITIALLY DEFERRED alone
// makes it deferrable.
func constraintAttrs(list []*pg_query.Node) {
	var last *pg_query.Constraint
	sawDeferrability := false
	for _, n := range list {
		c := n.GetConstraint()
		if c == nil {
			continue
		}
		switch c.Contype {
		case pg_query.ConstrType_CONSTR_ATTR_DEFERRABLE, pg_query.ConstrType_CONSTR_ATTR_NOT_DEFERRABLE:
			if last != nil {
				last.Deferrable = c.Contype == pg_query.ConstrType_CONSTR_ATTR_DEFERRABLE
				sawDeferrability = true
			}
		case pg_query.ConstrType_CONSTR_ATTR_DEFERRED:
			if last != nil {
				last.Initdeferred = true
				if !sawDeferrability {
					last.Deferrable = true
				}
			}
		case pg_query.ConstrType_CONSTR_ATTR_IMMEDIATE:
			if last != nil {
				last.Initdeferred = false
			}
		default:
			last, sawDeferrability = c, false
		}
	}
}

func (t *translator) references(c *pg_query.Constraint) (string, error) {
	if err := t.checkReferenced(c); err != nil {
		return "", err
	}
	s := "REFERENCES " + quoteIdent(c.Pktable.Relname)
	if len(c.PkAttrs) > 0 {
		s += " (" + identList(strs(c.PkAttrs)) + ")"
	}
	act := func(a string) string {
		switch a {
		case "c":
			return "CASCADE"
		case "n":
			return "SET NULL"
		case "d":
			return "SET DEFAULT"
		case "r":
			return "RESTRICT"
		}
		return ""
	}
	if a := act(c.FkDelAction); a != "" {
		s += " ON DELETE " + a
	}
	if a := act(c.FkUpdAction); a != "" {
		s += " ON UPDATE " + a
	}
	if c.Deferrable {
		s += " DEFERRABLE"
		if c.Initdeferred {
			s += " INITIALLY DEFERRED"
		}
	}
	return s, nil
}

func identList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = quoteIdent(c)
	}
	return strings.Join(q, ", ")
}

func (t *translator) tableConstraint(c *pg_query.Constraint) (string, error) {
	name := ""
	if c.Conname != "" {
		name = "CONSTRAINT " + quoteIdent(c.Conname) + " "
	}
	switch c.Contype {
	case pg_query.ConstrType_CONSTR_PRIMARY:
		return name + "PRIMARY KEY (" + identList(strs(c.Keys)) + ")", nil
	case pg_query.ConstrType_CONSTR_UNIQUE:
		return name + "UNIQUE (" + identList(strs(c.Keys)) + ")", nil
	case pg_query.ConstrType_CONSTR_CHECK:
		e, err := t.expr(c.RawExpr)
		if err != nil {
			return "", err
		}
		return name + "CHECK (" + e + ")", nil
	case pg_query.ConstrType_CONSTR_FOREIGN:
		ref, err := t.references(c)
		if err != nil {
			return "", err
		}
		return name + "FOREIGN KEY (" + identList(strs(c.FkAttrs)) + ") " + ref, nil
	case pg_query.ConstrType_CONSTR_EXCLUSION:
		return "", unsupported("EXCLUDE constraints")
	}
	return "", unsupported("this table constraint")
}

// expr translates one expression to SQLite text.
func (t *translator) expr(e *pg_query.Node) (string, error) {
	if err := t.rewrite(e); err != nil {
		return "", err
	}
	return deparseExpr(e)
}

func (t *translator) createIndex(raw *pg_query.Node, s *pg_query.IndexStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "CREATE INDEX"
	method := strings.ToLower(s.AccessMethod)
	switch method {
	case "", "btree", "hash":
		s.AccessMethod = ""
	case "gin", "gist", "brin", "spgist":
		// SQLite builds a b-tree over the same columns (it serves
		// equality and order, not containment or overlap: those scan),
		// and the catalog shows the method asked for, so that schema
		// tools (peewee's jsonb and array fields, Django's GinIndex)
		// find the index they made.
		if s.Unique {
			return nil, &pgwire.Error{Code: "0A000", Message: fmt.Sprintf("access method %q does not support unique indexes", method)}
		}
		s.AccessMethod = ""
	default:
		return nil, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("access method %q does not exist", s.AccessMethod)}
	}
	if len(s.IndexIncludingParams) > 0 {
		return nil, unsupported("CREATE INDEX ... INCLUDE")
	}
	if s.NullsNotDistinct {
		return nil, unsupported("NULLS NOT DISTINCT")
	}
	s.Concurrent = false
	s.Options = nil
	s.TableSpace = ""
	if _, err := t.tableName(s.Relation); err != nil {
		return nil, err
	}
	s.Relation.Schemaname, s.Relation.Catalogname = "", ""
	if t.sch != nil {
		// A quoted name that is no column would be a string to SQLite
		// (its double-quoted string literal in DDL): an index on a
		// constant, unique over the whole table.
		if cols := t.sch.Columns(s.Relation.Relname); cols != nil {
			for _, p := range s.IndexParams {
				ie := p.GetIndexElem()
				if ie == nil || ie.Name == "" {
					continue
				}
				i := slices.IndexFunc(cols, func(c Column) bool { return c.Name == ie.Name })
				if i < 0 {
					return nil, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q does not exist", ie.Name)}
				}
				if c := cols[i]; len(ie.Opclass) == 0 && c.Type != nil && !defaultOpclass(method, c) {
					return nil, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("data type %s has no default operator class for access method %q", c.Type.SQL, method),
						Hint: "You must specify an operator class for the index or define a default operator class for the data type."}
				}
			}
		}
	}
	if s.Idxname == "" {
		// PostgreSQL's name: table_cols_idx (an expression's function
		// name, else expr), numbered when taken; a UNIQUE index is an
		// index too (_key is for constraints).
		s.Idxname = t.chooseName(s.Relation.Relname, indexColumnNames(s.IndexParams), "idx", map[string]bool{})
	}
	// SQLite's indexes have no NULLS FIRST / LAST: an explicit one is
	// kept as a comment in the column list, which SQLite keeps in the
	// index's stored text (nullsMarker), for the catalog.
	nulls, explicit := make([]byte, 0, len(s.IndexParams)), false
	opclasses, anyOpclass := make([]string, 0, len(s.IndexParams)), false
	for _, p := range s.IndexParams {
		if ie := p.GetIndexElem(); ie != nil {
			// A non-default operator class (gin's jsonb_path_ops) means
			// nothing to SQLite's b-tree; it is kept for the catalog.
			oc := ""
			if names := strs(ie.Opclass); len(names) > 0 && len(ie.Opclassopts) == 0 {
				oc = strings.ToLower(names[len(names)-1])
				if !isIdent(oc[0]) || strings.IndexFunc(oc, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) >= 0 {
					oc = ""
				}
				anyOpclass = anyOpclass || oc != ""
			}
			opclasses = append(opclasses, oc)
			ie.Opclass, ie.Opclassopts, ie.Collation = nil, nil, nil
			switch ie.NullsOrdering {
			case pg_query.SortByNulls_SORTBY_NULLS_FIRST:
				nulls, explicit = append(nulls, 'F'), true
			case pg_query.SortByNulls_SORTBY_NULLS_LAST:
				nulls, explicit = append(nulls, 'L'), true
			default:
				nulls = append(nulls, '-')
			}
			ie.NullsOrdering = pg_query.SortByNulls_SORTBY_NULLS_DEFAULT
		}
	}
	if err := t.rewrite(raw); err != nil {
		return nil, err
	}
	out, err := deparseStmt(raw)
	if err != nil {
		return nil, err
	}
	out = strings.Replace(out, " USING  (", " (", 1)
	if explicit {
		out = withNullsMarker(out, string(nulls))
	}
	if anyOpclass {
		out = withMarker(out, opclassMarker+strings.Join(opclasses, ",")+"*/")
	}
	if method != "" && method != "btree" {
		out = withMarker(out, methodMarker+method+"*/")
	}
	tr.SQL = out
	return tr, nil
}

// defaultOpclass reports whether PostgreSQL has a default operator class
// of the access method for the column's type (gin: jsonb and arrays;
// gist: ranges; spgist: ranges and text; brin: scalars).
func defaultOpclass(method string, c Column) bool {
	if c.Enum != nil {
		return method == "" || method == "btree" || method == "hash"
	}
	switch method {
	case "gin":
		return c.Type.Name == "jsonb" || c.Type.Cat == 'A'
	case "gist":
		return c.Type.Cat == 'R'
	case "spgist":
		return c.Type.Cat == 'R' || c.Type.Name == "text"
	case "brin":
		return c.Type.Cat != 'A' && c.Type.Name != "jsonb" && c.Type.Name != "json" && c.Type.Name != "bool"
	}
	return true
}

// nullsMarker starts the comment that keeps an index's NULLS FIRST /
// LAST: one letter per column, F, L or - (not given).
const nullsMarker = "/*tandem:nulls="

// withNullsMarker puts the comment before the closing parenthesis of
// the CREATE INDEX's column list (SQLite keeps comments there).
func withNullsMarker(sql, nulls string) string {
	on := strings.Index(sql, " ON ")
	if on < 0 {
		return sql
	}
	open := strings.IndexByte(sql[on:], '(')
	if open < 0 {
		return sql
	}
	open += on
	items, err := splitTop(sql[open+1:])
	if err != nil || len(items) == 0 {
		return sql
	}
	end := open + 1 + items[len(items)-1][1] // the closing parenthesis
	return sql[:end] + " " + nullsMarker + nulls + "*/" + sql[end:]
}

// opclassMarker keeps the operator classes an index's columns named
// (comma-separated, "" for the default).
const opclassMarker = "/*tandem:opclass="

// indexOpclass is the operator class an index column named, "" if none.
func indexOpclass(sql string, seq int) string {
	i := strings.Index(sql, opclassMarker)
	if i < 0 {
		return ""
	}
	rest := sql[i+len(opclassMarker):]
	if j := strings.Index(rest, "*/"); j >= 0 {
		rest = rest[:j]
	}
	list := strings.Split(rest, ",")
	if seq < 0 || seq >= len(list) {
		return ""
	}
	return list[seq]
}

// indexNulls reads an index column's NULLS ordering from its stored
// text (withNullsMarker): 'F', 'L', or 0 when not given.
func indexNulls(sql string, seq int) byte {
	i := strings.Index(sql, nullsMarker)
	if i < 0 {
		return 0
	}
	codes := sql[i+len(nullsMarker):]
	if seq < 0 || seq >= len(codes) || (codes[seq] != 'F' && codes[seq] != 'L') {
		return 0
	}
	return codes[seq]
}

func (t *translator) createView(raw *pg_query.Node, s *pg_query.ViewStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "CREATE VIEW"
	if _, err := t.tableName(s.View); err != nil {
		return nil, err
	}
	if err := t.caseClash(s.View.Relname); err != nil {
		return nil, err
	}
	s.View.Schemaname = "" // public: SQLite's main (Liquibase qualifies every name)
	if err := t.viewColumnNames(s); err != nil {
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code == pgwire.CodeFeatureNotSupported {
			return nil, err
		}
		// PostgreSQL finds these when it runs the statement, not at
		// Parse (a Describe succeeds).
		tr.Script = []string{fmt.Sprintf("SELECT _pg_raise(%s, %s)", quoteLit(pe.Code), quoteLit(pe.Message))}
		tr.SQL = tr.Script[0]
		return tr, nil
	}
	// The query as PostgreSQL's SQL, for pg_get_viewdef (pg_dump).
	pgDef, _ := pg_query.Deparse(&pg_query.ParseResult{Stmts: []*pg_query.RawStmt{{Stmt: s.Query}}})
	// The view's column types, as PostgreSQL would type its query.
	var meta []string
	if sel := s.Query.GetSelectStmt(); sel != nil {
		types := t.selectTypes(sel)
		names := targetNames(sel)
		if len(s.Aliases) > 0 {
			names = strs(s.Aliases) // VALUES: every column named (viewColumnNames)
		}
		if types != nil && len(names) == len(types) {
			meta = append(meta, "DELETE FROM _tandem_columns WHERE table_name = "+quoteLit(s.View.Relname))
			for i, c := range types {
				if c.Type == nil {
					continue
				}
				meta = append(meta, fmt.Sprintf("INSERT OR REPLACE INTO _tandem_columns (table_name, column_name, type_oid, typmod) VALUES (%s, %s, %d, %d)",
					quoteLit(s.View.Relname), quoteLit(names[i]), c.Type.OID, c.Typmod))
			}
		}
	}
	replace := s.Replace
	s.Replace = false
	s.Options = nil
	// A column of the view keeps its name when the column it reads is
	// renamed, as in PostgreSQL: SQLite rewrites a view's text on RENAME
	// COLUMN, so a bare column reference (the view's column a from t.a)
	// gets its name as an alias.
	if sel := s.Query.GetSelectStmt(); sel != nil {
		for sel.Op != pg_query.SetOperation_SETOP_NONE && sel.Larg != nil {
			sel = sel.Larg
		}
		for _, n := range sel.TargetList {
			if rt := n.GetResTarget(); rt != nil && rt.Name == "" {
				if cr := rt.Val.GetColumnRef(); cr != nil && len(cr.Fields) > 0 {
					if f := cr.Fields[len(cr.Fields)-1].GetString_(); f != nil {
						rt.Name = f.Sval
					}
				}
			}
		}
	}
	if err := t.rewrite(raw); err != nil {
		return nil, err
	}
	out, err := deparseStmt(raw)
	if err != nil {
		return nil, err
	}
	if replace {
		tr.Script = []string{"DROP VIEW IF EXISTS " + quoteIdent(s.View.Relname), out}
	} else {
		tr.Script = []string{out}
	}
	// SQLite resolves a view's names only when it is used: compile it
	// now, so a view of a missing column or table fails as in
	// PostgreSQL (42703, 42P01).
	tr.Script = append(tr.Script, "SELECT * FROM "+quoteIdent(s.View.Relname)+" LIMIT 0")
	tr.Script = append(tr.Script, meta...)
	if pgDef != "" && s.View.Relpersistence != "t" {
		tr.Script = append(tr.Script, fmt.Sprintf("INSERT OR REPLACE INTO _tandem_views (name, definition, sqlite_sql) VALUES (%s, %s, %s)",
			quoteLit(s.View.Relname), quoteLit(pgDef), quoteLit(out)))
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	if len(tr.Script) == 1 {
		tr.Script = nil
	}
	return tr, nil
}

func (t *translator) drop(s *pg_query.DropStmt, tr *Translation) (*Translation, error) {
	tr.DDL = true
	var what string
	switch s.RemoveType {
	case pg_query.ObjectType_OBJECT_EXTENSION:
		// The extensions CREATE EXTENSION accepts hold nothing to drop.
		for _, o := range s.Objects {
			if name := o.GetString_().GetSval(); !extensions[strings.ToLower(name)] && !s.MissingOk {
				return nil, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("extension %q does not exist", name)}
			}
		}
		tr.DDL, tr.Noop, tr.Tag = false, true, "DROP EXTENSION"
		return tr, nil
	case pg_query.ObjectType_OBJECT_TABLE:
		what = "TABLE"
		if err := t.notMatview(s, "table"); err != nil {
			return nil, err
		}
	case pg_query.ObjectType_OBJECT_INDEX:
		what = "INDEX"
	case pg_query.ObjectType_OBJECT_VIEW:
		what = "VIEW"
		if err := t.notMatview(s, "view"); err != nil {
			return nil, err
		}
	case pg_query.ObjectType_OBJECT_MATVIEW:
		return t.dropMatviews(s, tr)
	case pg_query.ObjectType_OBJECT_SEQUENCE:
		tr.Tag = "DROP SEQUENCE"
		for _, o := range s.Objects {
			names := strs(o.GetList().GetItems())
			if len(names) == 0 {
				continue
			}
			tr.Script = append(tr.Script, "DELETE FROM _tandem_sequences WHERE name = "+quoteLit(names[len(names)-1]), dropComments(names[len(names)-1]))
		}
		tr.SQL = strings.Join(tr.Script, ";\n")
		if len(tr.Script) == 1 {
			tr.Script = nil
		}
		return tr, nil
	case pg_query.ObjectType_OBJECT_TYPE:
		return t.dropEnums(s, tr)
	case pg_query.ObjectType_OBJECT_SCHEMA:
		if s.MissingOk {
			tr.Noop, tr.Tag = true, "DROP "+strings.TrimPrefix(s.RemoveType.String(), "OBJECT_")
			return tr, nil
		}
		return nil, unsupported("DROP %s", strings.TrimPrefix(s.RemoveType.String(), "OBJECT_"))
	default:
		return nil, unsupported("DROP %s", strings.TrimPrefix(s.RemoveType.String(), "OBJECT_"))
	}
	tr.Tag = "DROP " + what
	if s.Concurrent {
		s.Concurrent = false
	}
	// SQLite matches names without regard to case: DROP TABLE foo must not
	// drop "Foo", which PostgreSQL keeps apart.
	if sn, ok := t.sch.(interface{ StoredName(string) string }); ok {
		kept := s.Objects[:0]
		for _, o := range s.Objects {
			names := strs(o.GetList().GetItems())
			if len(names) == 0 {
				kept = append(kept, o)
				continue
			}
			name := names[len(names)-1]
			if stored := sn.StoredName(name); stored != "" && stored != name {
				if s.MissingOk {
					continue // as absent: PostgreSQL skips it
				}
				return nil, &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("%s %q does not exist", strings.ToLower(what), name),
					Hint: fmt.Sprintf("%q exists: the SQLite back end cannot keep names that differ only in case apart; quote the name as it was created", stored)}
			}
			kept = append(kept, o)
		}
		s.Objects = kept
		if len(s.Objects) == 0 {
			tr.Noop = true
			return tr, nil
		}
	}
	if what == "TABLE" {
		// Foreign keys of other tables to the dropped ones: PostgreSQL
		// refuses (2BP01), or with CASCADE drops those constraints; SQLite
		// would drop the table and leave them dangling (every later write
		// to the referencing table: "no such table").
		var dropped []string
		for _, o := range s.Objects {
			if names := strs(o.GetList().GetItems()); len(names) > 0 {
				dropped = append(dropped, quoteLit(strings.ToLower(names[len(names)-1])))
			}
		}
		list := strings.Join(dropped, ", ")
		if s.Behavior == pg_query.DropBehavior_DROP_CASCADE {
			for _, name := range dropped {
				tr.Script = append(tr.Script, "PRAGMA writable_schema = ON",
					fmt.Sprintf("UPDATE sqlite_master SET sql = _tandem_alter_column(sql, '', %s, %s) WHERE type = 'table' AND lower(name) NOT IN (%s) AND instr(upper(sql), 'REFERENCES') > 0",
						quoteLit(AlterDropReferences), name, list),
					"PRAGMA writable_schema = RESET", `CREATE TABLE "_tandem_schema_bump" (x)`, `DROP TABLE "_tandem_schema_bump"`)
			}
		} else if len(dropped) > 0 {
			tr.Script = append(tr.Script, fmt.Sprintf(`SELECT _pg_raise('2BP01', 'cannot drop table ' || f."table" || ' because other objects depend on it' || char(31) || 'D:constraint ' || m.name || '_' || f."from" || '_fkey on table ' || quote_ident(m.name) || ' depends on table ' || f."table" || char(31) || 'H:Use DROP ... CASCADE to drop the dependent objects too.') FROM main.sqlite_schema m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table' AND lower(m.name) NOT IN (%s) AND lower(f."table") IN (%s) LIMIT 1`, list, list))
		}
	}
	if what == "TABLE" || what == "VIEW" {
		var names []string
		for _, o := range s.Objects {
			if n := strs(o.GetList().GetItems()); len(n) > 0 {
				names = append(names, n[len(n)-1])
			}
		}
		if vl, ok := t.sch.(ViewLister); ok {
			// The wrong kind, before what depends on it (PostgreSQL's
			// order).
			views := vl.Views()
			for _, n := range names {
				_, isView := views[n]
				if _, mv := t.matviews()[n]; mv {
					continue
				}
				switch {
				case what == "TABLE" && isView:
					return nil, &pgwire.Error{Code: "42809", Message: fmt.Sprintf("%q is not a table", n), Hint: "Use DROP VIEW to remove a view."}
				case what == "VIEW" && !isView && t.sch.Columns(n) != nil:
					return nil, &pgwire.Error{Code: "42809", Message: fmt.Sprintf("%q is not a view", n), Hint: "Use DROP TABLE to remove a table."}
				}
			}
		}
		deps := t.viewDependents(strings.ToLower(what), names)
		if len(deps) > 0 && s.Behavior != pg_query.DropBehavior_DROP_CASCADE {
			var detail []string
			for _, d := range deps {
				what := "view"
				if d.matview {
					what = "materialized view"
				}
				detail = append(detail, fmt.Sprintf("%s %s depends on %s %s", what, d.view, d.kind, d.on))
			}
			return nil, &pgwire.Error{Code: "2BP01",
				Message: fmt.Sprintf("cannot drop %s %s because other objects depend on it", deps[0].kind, deps[0].on),
				Detail:  strings.Join(detail, "\n"), Hint: "Use DROP ... CASCADE to drop the dependent objects too."}
		}
		for _, d := range deps {
			if d.matview {
				tr.Script = append(tr.Script, "DROP TABLE IF EXISTS "+quoteIdent(d.view),
					"DELETE FROM _tandem_columns WHERE table_name = "+quoteLit(d.view),
					"DELETE FROM _tandem_matviews WHERE name = "+quoteLit(d.view), dropComments(d.view))
				continue
			}
			tr.Script = append(tr.Script, "DROP VIEW IF EXISTS "+quoteIdent(d.view),
				"DELETE FROM _tandem_columns WHERE table_name = "+quoteLit(d.view),
				"DELETE FROM _tandem_views WHERE name = "+quoteLit(d.view))
		}
	}
	for _, o := range s.Objects {
		names := strs(o.GetList().GetItems())
		if len(names) == 0 {
			continue
		}
		if len(names) > 1 && !strings.EqualFold(names[0], "public") {
			return nil, unsupported("objects outside the public schema")
		}
		name := names[len(names)-1]
		stmt := "DROP " + what + " "
		if s.MissingOk {
			stmt += "IF EXISTS "
		}
		tr.Script = append(tr.Script, stmt+quoteIdent(name))
		if what == "TABLE" {
			// The sequences of its serial and identity columns go with it.
			tr.Script = append(tr.Script, "DELETE FROM _tandem_sequences WHERE owner_table = "+quoteLit(name))
		}
		if what == "TABLE" || what == "VIEW" {
			tr.Script = append(tr.Script, "DELETE FROM _tandem_columns WHERE table_name = "+quoteLit(name),
				"DELETE FROM _tandem_constraints WHERE table_name = "+quoteLit(name))
		}
		if what == "VIEW" {
			tr.Script = append(tr.Script, "DELETE FROM _tandem_views WHERE name = "+quoteLit(name))
		}
		tr.Script = append(tr.Script, dropComments(name))
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	return tr, nil
}

// caseClash refuses a new relation whose name differs only in case from
// one that exists: SQLite's names ignore case (CREATE TABLE foo would
// fail beside "Foo", or worse, a later DROP would find the other one).
func (t *translator) caseClash(name string) error {
	sn, ok := t.sch.(interface{ StoredName(string) string })
	if !ok {
		return nil
	}
	if stored := sn.StoredName(name); stored != "" && stored != name {
		return &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: fmt.Sprintf("relation %q differs only in case from %q, which exists: the SQLite back end cannot keep them apart", name, stored),
			Hint: "give it another name, or use a PostgreSQL back end"}
	}
	return nil
}

// nextvalDefaultRe finds a column definition's sequence default.
var nextvalDefaultRe = regexp.MustCompile(` DEFAULT \((_tandem_nextval\('(?:[^']|'')*'\))\)`)

// renameView: SQLite cannot rename a view; it is made again under the
// new name from its stored text (the views that read it keep the old
// name, as SQLite would leave them).
func (t *translator) renameView(s *pg_query.RenameStmt, tr *Translation) (*Translation, error) {
	name, err := t.tableName(s.Relation)
	if err != nil {
		return nil, err
	}
	tr.Tag = "ALTER TABLE"
	if s.RenameType == pg_query.ObjectType_OBJECT_VIEW {
		tr.Tag = "ALTER VIEW"
	}
	vl, ok := t.sch.(ViewLister)
	if !ok {
		return nil, unsupported("ALTER VIEW ... RENAME")
	}
	def, found := vl.Views()[name]
	if !found {
		if s.MissingOk {
			tr.Noop = true
			return tr, nil
		}
		return nil, &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", name)}
	}
	as := strings.Index(strings.ToUpper(def), " AS ")
	if as < 0 {
		return nil, unsupported("renaming this view")
	}
	tr.Script = []string{"DROP VIEW " + quoteIdent(name), "CREATE VIEW " + quoteIdent(s.Newname) + def[as:],
		"UPDATE _tandem_columns SET table_name = " + quoteLit(s.Newname) + " WHERE table_name = " + quoteLit(name),
		renameComments(name, s.Newname),
		"UPDATE _tandem_views SET name = " + quoteLit(s.Newname) + ", sqlite_sql = " + quoteLit("CREATE VIEW "+quoteIdent(s.Newname)+def[as:]) +
			" WHERE name = " + quoteLit(name) + " AND sqlite_sql = " + quoteLit(def)}
	tr.SQL = strings.Join(tr.Script, ";\n")
	return tr, nil
}

// ViewLister is a Schema that can list the views: DROP TABLE and DROP
// VIEW find the views that depend on what they drop (SQLite would drop a
// table under a view and leave the view failing at its next use).
type ViewLister interface {
	// Views maps each view's name to its CREATE VIEW text as stored.
	Views() map[string]string
}

// viewDependent: view depends on the object on, of kind "table" or
// "view".
type viewDependent struct {
	view, kind, on string
	matview        bool // view is a materialized view
}

// viewDependents lists the views that depend on the dropped objects of
// kind ("table" or "view"), directly or through other views, in the
// order PostgreSQL reports them. A view whose text does not parse is
// taken to depend on nothing.
func (t *translator) viewDependents(kind string, dropped []string) []viewDependent {
	vl, ok := t.sch.(ViewLister)
	if !ok || len(dropped) == 0 {
		return nil
	}
	views := vl.Views()
	mvs := t.matviews()
	if len(mvs) > 0 {
		// Materialized views depend on what their query reads too.
		views = maps.Clone(views)
		for n, mv := range mvs {
			views[n] = "CREATE VIEW " + quoteIdent(n) + " AS " + mv.Query
		}
	}
	refs, names := viewRefs(views)
	if len(names) == 0 {
		return nil
	}
	for n := range mvs {
		if r, ok := refs[n]; ok {
			r.matview = true
			refs[n] = r
		}
	}
	return dependents(refs, names, kind, dropped, nil)
}

// viewRef is what a view's text names: relations, and columns by their
// last name (star: it selects a *).
type viewRef struct {
	rels, cols map[string]bool
	star       bool
	matview    bool // a materialized view's query
}

// viewRefs parses each view's text (names sorted).
func viewRefs(views map[string]string) (map[string]viewRef, []string) {
	refs := map[string]viewRef{}
	var names []string
	for name, sql := range views {
		tree, err := Parse(sql)
		if err != nil || len(tree.Stmts) != 1 {
			continue
		}
		r := viewRef{rels: map[string]bool{}, cols: map[string]bool{}}
		ctes := map[string]bool{}
		walkNode(tree.Stmts[0].Stmt, func(n *pg_query.Node) {
			switch x := n.Node.(type) {
			case *pg_query.Node_RangeVar:
				r.rels[strings.ToLower(x.RangeVar.Relname)] = true
			case *pg_query.Node_CommonTableExpr:
				ctes[strings.ToLower(x.CommonTableExpr.Ctename)] = true
			case *pg_query.Node_ColumnRef:
				if f := x.ColumnRef.Fields; len(f) > 0 {
					if f[len(f)-1].GetAStar() != nil {
						r.star = true
					} else if s := f[len(f)-1].GetString_(); s != nil {
						r.cols[strings.ToLower(s.Sval)] = true
					}
				}
			}
		})
		for c := range ctes {
			delete(r.rels, c)
		}
		delete(r.rels, strings.ToLower(name))
		refs[name] = r
		names = append(names, name)
	}
	sort.Strings(names)
	return refs, names
}

// columnDependents lists the views that depend on column col of table,
// directly or through other views. A view depends on it when it names the
// table and the column (or selects a *): a view that joins another table
// with a column of the same name counts too.
func (t *translator) columnDependents(table, col string) []viewDependent {
	vl, ok := t.sch.(ViewLister)
	if !ok {
		return nil
	}
	refs, names := viewRefs(vl.Views())
	if len(names) == 0 {
		return nil
	}
	direct := func(v string) bool {
		r := refs[v]
		return r.rels[strings.ToLower(table)] && (r.star || r.cols[strings.ToLower(col)])
	}
	return dependents(refs, names, "table", []string{table}, direct)
}

// dependents walks the views breadth first from the dropped objects: a
// view depends on a dropped object when it names it (or, for the first
// level, when direct says so), on a view found earlier when it names it.
func dependents(refs map[string]viewRef, names []string, kind string, dropped []string, direct func(string) bool) []viewDependent {
	gone := map[string]string{} // lower-case name -> kind
	var order []string          // names as given, in the order they went
	for _, d := range dropped {
		if _, ok := gone[strings.ToLower(d)]; !ok {
			gone[strings.ToLower(d)] = kind
			order = append(order, d)
		}
	}
	var out []viewDependent
	for i := 0; i < len(order); i++ {
		on := order[i]
		for _, v := range names {
			if _, ok := gone[strings.ToLower(v)]; ok {
				continue
			}
			if i < len(dropped) && direct != nil {
				if !direct(v) {
					continue
				}
			} else if !refs[v].rels[strings.ToLower(on)] {
				continue
			}
			out = append(out, viewDependent{view: v, kind: gone[strings.ToLower(on)], on: on, matview: refs[v].matview})
			gone[strings.ToLower(v)] = "view"
			if refs[v].matview {
				gone[strings.ToLower(v)] = "materialized view"
			}
			order = append(order, v)
		}
	}
	return out
}

func (t *translator) alterTable(s *pg_query.AlterTableStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "ALTER TABLE"
	if ownerOnly(s.Cmds) {
		// OWNER TO (every pg_dump writes it): the SQLite back end has no
		// owners (every user may do everything), so it changes nothing
		// once the role is known.
		for _, c := range s.Cmds {
			if err := knownRole(c.GetAlterTableCmd().Newowner); err != nil {
				return nil, err
			}
		}
		tr.Tag = "ALTER " + strings.TrimPrefix(s.Objtype.String(), "OBJECT_")
		tr.Noop = true
		return tr, nil
	}
	if s.Objtype != pg_query.ObjectType_OBJECT_TABLE {
		return nil, unsupported("ALTER %s", strings.TrimPrefix(s.Objtype.String(), "OBJECT_"))
	}
	name, err := t.tableName(s.Relation)
	if err != nil {
		return nil, err
	}
	if vl, ok := t.sch.(ViewLister); ok {
		if _, isView := vl.Views()[name]; isView {
			// PostgreSQL refuses these on a view (SQLite's "cannot drop
			// column from view" has no SQLSTATE); the rest is not
			// supported on a view here.
			for _, c := range s.Cmds {
				action := map[pg_query.AlterTableType]string{
					pg_query.AlterTableType_AT_AddColumn:       "ADD COLUMN",
					pg_query.AlterTableType_AT_DropColumn:      "DROP COLUMN",
					pg_query.AlterTableType_AT_AlterColumnType: "ALTER COLUMN ... SET DATA TYPE",
					pg_query.AlterTableType_AT_SetNotNull:      "ALTER COLUMN ... SET NOT NULL",
					pg_query.AlterTableType_AT_DropNotNull:     "ALTER COLUMN ... DROP NOT NULL",
					pg_query.AlterTableType_AT_AddConstraint:   "ADD CONSTRAINT",
					pg_query.AlterTableType_AT_DropConstraint:  "DROP CONSTRAINT",
				}[c.GetAlterTableCmd().Subtype]
				if action != "" {
					return nil, &pgwire.Error{Code: "42809", Message: fmt.Sprintf("ALTER action %s cannot be performed on relation %q", action, name)}
				}
			}
			return nil, unsupported("ALTER TABLE of a view")
		}
	}
	for _, c := range s.Cmds {
		cmd := c.GetAlterTableCmd()
		switch cmd.Subtype {
		case pg_query.AlterTableType_AT_AddColumn:
			cd := cmd.Def.GetColumnDef()
			if cmd.MissingOk && t.sch != nil {
				exists := false
				for _, col := range t.sch.Columns(name) {
					if strings.EqualFold(col.Name, cd.Colname) {
						exists = true
					}
				}
				if exists {
					continue
				}
			}
			script, err := t.addColumn(name, cd)
			if err != nil {
				return nil, err
			}
			tr.Script = append(tr.Script, script...)
		case pg_query.AlterTableType_AT_AddConstraint:
			c := cmd.Def.GetConstraint()
			if c == nil {
				return nil, unsupported("this ALTER TABLE ADD CONSTRAINT")
			}
			if c.Conname != "" {
				tr.Script = append(tr.Script, constraintNameFree(name, c.Conname))
			}
			switch c.Contype {
			case pg_query.ConstrType_CONSTR_PRIMARY, pg_query.ConstrType_CONSTR_UNIQUE:
				tr.Script = append(tr.Script, t.addKey(name, c)...)
			case pg_query.ConstrType_CONSTR_FOREIGN, pg_query.ConstrType_CONSTR_CHECK:
				script, err := t.addConstraint(name, c)
				if err != nil {
					return nil, err
				}
				tr.Script = append(tr.Script, script...)
			default:
				return nil, unsupported("ALTER TABLE ADD CONSTRAINT of this kind")
			}
		case pg_query.AlterTableType_AT_DropConstraint:
			if script, ok, err := t.dropPrimaryKey(name, cmd); err != nil {
				return nil, err
			} else if ok {
				tr.Script = append(tr.Script, script...)
				continue
			}
			exists := fmt.Sprintf("EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = %s AND tbl_name = %s) OR instr((SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s), %s) > 0"+
				" OR EXISTS (SELECT 1 FROM pg_constraint WHERE contype IN ('f', 'c') AND conrelid = _tandem_oid(%s) AND conname = %s)",
				quoteLit(cmd.Name), quoteLit(name), quoteLit(name), quoteLit("CONSTRAINT "+quoteIdent(cmd.Name)), quoteLit(name), quoteLit(cmd.Name))
			if !cmd.MissingOk {
				tr.Script = append(tr.Script, fmt.Sprintf("SELECT _pg_raise('42704', %s) WHERE NOT (%s)",
					quoteLit(fmt.Sprintf("constraint %q of relation %q does not exist", cmd.Name, name)), exists))
			}
			tr.Script = append(tr.Script, "DROP INDEX IF EXISTS "+quoteIdent(cmd.Name), "DELETE FROM _tandem_constraints WHERE name = "+quoteLit(cmd.Name))
			tr.Script = append(tr.Script, alterColumnScript(name, "", AlterDropConstraint, cmd.Name, "")...)
		case pg_query.AlterTableType_AT_SetNotNull, pg_query.AlterTableType_AT_DropNotNull, pg_query.AlterTableType_AT_ColumnDefault:
			if t.sch != nil && !hasColumn(t.sch.Columns(name), cmd.Name) {
				return nil, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q of relation %q does not exist", cmd.Name, name)}
			}
			action, arg, check := AlterDropNotNull, "", ""
			switch {
			case cmd.Subtype == pg_query.AlterTableType_AT_SetNotNull:
				action = AlterSetNotNull
				check = fmt.Sprintf("SELECT _pg_raise('23502', %s) FROM %s WHERE %s IS NULL LIMIT 1",
					quoteLit(fmt.Sprintf("column %q of relation %q contains null values", cmd.Name, name)), quoteIdent(name), quoteIdent(cmd.Name))
			case cmd.Subtype == pg_query.AlterTableType_AT_ColumnDefault && cmd.Def == nil:
				action = AlterDropDefault
			case cmd.Subtype == pg_query.AlterTableType_AT_ColumnDefault:
				e, err := t.expr(cmd.Def)
				if err != nil {
					return nil, err
				}
				action, arg = AlterSetDefault, e
			}
			tr.Script = append(tr.Script, alterColumnScript(name, cmd.Name, action, arg, check)...)
		case pg_query.AlterTableType_AT_AddIdentity:
			// ALTER COLUMN c ADD GENERATED ... AS IDENTITY [(options)]
			// (pg_dump writes every identity column so): a sequence of the
			// column's type numbers it from now on.
			script, err := t.addIdentity(name, cmd)
			if err != nil {
				return nil, err
			}
			tr.Script = append(tr.Script, script...)
		case pg_query.AlterTableType_AT_AlterColumnType:
			script, err := t.alterColumnType(name, cmd)
			if err != nil {
				return nil, err
			}
			tr.Script = append(tr.Script, script...)
		case pg_query.AlterTableType_AT_DropColumn:
			if deps := t.columnDependents(name, cmd.Name); len(deps) > 0 {
				if cmd.Behavior != pg_query.DropBehavior_DROP_CASCADE {
					var detail []string
					for _, d := range deps {
						if d.kind == "table" {
							detail = append(detail, fmt.Sprintf("view %s depends on column %s of table %s", d.view, cmd.Name, name))
						} else {
							detail = append(detail, fmt.Sprintf("view %s depends on view %s", d.view, d.on))
						}
					}
					return nil, &pgwire.Error{Code: "2BP01",
						Message: fmt.Sprintf("cannot drop column %s of table %s because other objects depend on it", cmd.Name, name),
						Detail:  strings.Join(detail, "\n"), Hint: "Use DROP ... CASCADE to drop the dependent objects too."}
				}
				for _, d := range deps {
					tr.Script = append(tr.Script, "DROP VIEW IF EXISTS "+quoteIdent(d.view),
						"DELETE FROM _tandem_columns WHERE table_name = "+quoteLit(d.view))
				}
			}
			if td, ok := t.sch.(TableDefiner); ok {
				// The indexes that read it go with it, as in PostgreSQL
				// (SQLite refuses to drop an indexed column).
				for _, idx := range td.ColumnIndexes(name, cmd.Name) {
					tr.Script = append(tr.Script, "DROP INDEX "+quoteIdent(idx), "DELETE FROM _tandem_constraints WHERE name = "+quoteLit(idx), dropComments(idx))
				}
			}
			tr.Script = append(tr.Script, "ALTER TABLE "+quoteIdent(name)+" DROP COLUMN "+quoteIdent(cmd.Name),
				"DELETE FROM _tandem_columns WHERE table_name = "+quoteLit(name)+" AND column_name = "+quoteLit(cmd.Name),
				"DELETE FROM _tandem_comments WHERE kind = 'col' AND name = "+quoteLit(name)+" AND column_name = "+quoteLit(cmd.Name))
		default:
			return nil, unsupported("ALTER TABLE %s", strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(cmd.Subtype.String(), "AT_"), "_", " ")))
		}
	}
	if len(tr.Script) == 0 {
		tr.Noop = true
		return tr, nil
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	return tr, nil
}

// addIdentity is ALTER TABLE t ALTER COLUMN c ADD GENERATED ALWAYS|BY
// DEFAULT AS IDENTITY [(sequence options)]: the sequence (named by
// SEQUENCE NAME, else t_c_seq), the column's DEFAULT drawing from it, and
// the column recorded as identity.
func (t *translator) addIdentity(table string, cmd *pg_query.AlterTableCmd) ([]string, error) {
	c := cmd.Def.GetConstraint()
	if c == nil {
		return nil, unsupported("ALTER TABLE ADD IDENTITY without a definition")
	}
	var col *Column
	if t.sch != nil {
		for _, x := range t.sch.Columns(table) {
			if strings.EqualFold(x.Name, cmd.Name) {
				x := x
				col = &x
			}
		}
	}
	if col == nil {
		return nil, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q of relation %q does not exist", cmd.Name, table)}
	}
	if col.Identity != "" {
		return nil, &pgwire.Error{Code: "55000", Message: fmt.Sprintf("column %q of relation %q is already an identity column", cmd.Name, table)}
	}
	if col.Type == nil || (col.Type.Name != "int2" && col.Type.Name != "int4" && col.Type.Name != "int8") {
		return nil, &pgwire.Error{Code: "22023", Message: "identity column type must be smallint, integer, or bigint"}
	}
	seqName := table + "_" + cmd.Name + "_seq"
	var opts []*pg_query.Node
	for _, o := range c.Options {
		if d := o.GetDefElem(); d != nil && d.Defname == "sequence_name" {
			names := strs(d.Arg.GetList().GetItems())
			if len(names) > 0 {
				seqName = names[len(names)-1]
			}
			continue
		}
		opts = append(opts, o)
	}
	asType := &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(col.Type.Name)}}
	opts = append(opts, pg_query.MakeSimpleDefElemNode("as", &pg_query.Node{Node: &pg_query.Node_TypeName{TypeName: asType}}, -1))
	seq, err := t.createSequence(&pg_query.CreateSeqStmt{Sequence: &pg_query.RangeVar{Relname: seqName}, Options: opts}, &Translation{})
	if err != nil {
		return nil, err
	}
	identity := c.GeneratedWhen
	if identity == "" {
		identity = "d"
	}
	script := []string{seq.SQL,
		"UPDATE _tandem_sequences SET owner_table = " + quoteLit(table) + ", owner_column = " + quoteLit(col.Name) + ", stride = 0 WHERE name = " + quoteLit(seqName)}
	script = append(script, alterColumnScript(table, col.Name, AlterSetDefault, "_tandem_nextval("+quoteLit(quoteIdentIfNeeded(seqName))+")", "")...)
	return append(script, "UPDATE _tandem_columns SET identity = "+quoteLit(identity)+", sequence = "+quoteLit(seqName)+
		" WHERE table_name = "+quoteLit(table)+" AND column_name = "+quoteLit(col.Name)), nil
}

// ownerOnly: every command is OWNER TO.
func ownerOnly(cmds []*pg_query.Node) bool {
	for _, c := range cmds {
		if c.GetAlterTableCmd().GetSubtype() != pg_query.AlterTableType_AT_ChangeOwner {
			return false
		}
	}
	return len(cmds) > 0
}

// knownRole: a role OWNER TO may name (one of the cluster's users, or
// CURRENT_USER / SESSION_USER / CURRENT_ROLE), else 42704 as PostgreSQL.
func knownRole(r *pg_query.RoleSpec) error {
	if r == nil || r.Roletype != pg_query.RoleSpecType_ROLESPEC_CSTRING {
		return nil
	}
	usersMu.Lock()
	defer usersMu.Unlock()
	for _, u := range users {
		if u == r.Rolename {
			return nil
		}
	}
	if r.Rolename == "pg_database_owner" {
		return nil
	}
	return &pgwire.Error{Code: "42704", Message: fmt.Sprintf("role %q does not exist", r.Rolename),
		Hint: "the SQLite back end's roles are the cluster file's users; restore a dump made elsewhere with pg_restore --no-owner, or psql after pg_dump --no-owner"}
}

// addConstraint is ALTER TABLE ADD [CONSTRAINT name] FOREIGN KEY / CHECK:
// the rows must satisfy it first (23503 / 23514, as PostgreSQL checks
// them; NOT VALID skips the check as it does), then the constraint is
// appended to the table's stored definition.
func (t *translator) addConstraint(table string, c *pg_query.Constraint) ([]string, error) {
	unnamedCheck := c.Conname == "" && c.Contype == pg_query.ConstrType_CONSTR_CHECK
	if c.Conname == "" {
		switch c.Contype {
		case pg_query.ConstrType_CONSTR_FOREIGN:
			c.Conname = table + "_" + strings.Join(strs(c.FkAttrs), "_") + "_fkey"
		default:
			// PostgreSQL's choice, numbered if the table has it already
			// (the stored definition names it: AlterColumnSQL).
			if e, err := deparseExpr(c.RawExpr); err == nil && t.sch != nil {
				var cols []string
				for _, col := range t.sch.Columns(table) {
					cols = append(cols, col.Name)
				}
				c.Conname = CheckName(table, e, cols)
			} else {
				c.Conname = table + "_check"
			}
		}
	}
	name := c.Conname
	if unnamedCheck {
		c.Conname = "" // named, and numbered if taken, where it is stored (NameChecks)
	}
	text, err := t.tableConstraint(c)
	c.Conname = name
	if err != nil {
		return nil, err
	}
	check := ""
	tq := quoteIdent(table)
	if !c.SkipValidation {
		switch c.Contype {
		case pg_query.ConstrType_CONSTR_FOREIGN:
			fk, pk := strs(c.FkAttrs), strs(c.PkAttrs)
			if len(pk) == 0 && t.sch != nil {
				// REFERENCES t without columns: the parent's primary key
				pk = t.primaryKeyOf(c.Pktable.Relname)
			}
			if len(pk) == 0 {
				return nil, &pgwire.Error{Code: "42830", Message: fmt.Sprintf("there is no primary key for referenced table %q", c.Pktable.Relname)}
			}
			if len(pk) != len(fk) {
				return nil, &pgwire.Error{Code: "42830", Message: "number of referencing and referenced columns for foreign key disagree"}
			}
			var notNull, match []string
			for i := range fk {
				notNull = append(notNull, "_c."+quoteIdent(fk[i])+" IS NOT NULL")
				match = append(match, "_p."+quoteIdent(pk[i])+" = _c."+quoteIdent(fk[i]))
			}
			check = fmt.Sprintf("SELECT _pg_raise('23503', %s) FROM %s _c WHERE %s AND NOT EXISTS (SELECT 1 FROM %s _p WHERE %s) LIMIT 1",
				quoteLit(fmt.Sprintf("insert or update on table %q violates foreign key constraint %q", table, c.Conname)),
				tq, strings.Join(notNull, " AND "), quoteIdent(c.Pktable.Relname), strings.Join(match, " AND "))
		case pg_query.ConstrType_CONSTR_CHECK:
			e, err := t.expr(c.RawExpr)
			if err != nil {
				return nil, err
			}
			check = fmt.Sprintf("SELECT _pg_raise('23514', %s) FROM %s WHERE NOT (%s) LIMIT 1",
				quoteLit(fmt.Sprintf("check constraint %q of relation %q is violated by some row", c.Conname, table)), tq, e)
		}
	}
	return alterColumnScript(table, "", AlterAddConstraint, text, check), nil
}

// primaryKeyOf reads a table's primary key columns from the schema's
// catalog, when the schema can tell.
// checkReferenced checks the parent side of a foreign key when it is
// declared, as PostgreSQL does: the table exists (42P01), the columns
// exist (42703) and are its primary key or a unique constraint's, in any
// order (42830). SQLite accepts all of these in CREATE TABLE and then
// fails every write to the child with "foreign key mismatch". A table
// that references itself in its CREATE TABLE is not in the schema yet;
// SQLite checks that one.
func (t *translator) checkReferenced(c *pg_query.Constraint) error {
	if t.sch == nil || c.Pktable == nil || strings.EqualFold(c.Pktable.Relname, t.creating) {
		return nil
	}
	parent := c.Pktable.Relname
	cols := t.sch.Columns(parent)
	if cols == nil {
		return &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", parent)}
	}
	want := strs(c.PkAttrs)
	if len(want) == 0 {
		return nil // the primary key, looked up where the check is built
	}
	for _, w := range want {
		if !slices.ContainsFunc(cols, func(col Column) bool { return strings.EqualFold(col.Name, w) }) {
			return &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q referenced in foreign key constraint does not exist", w)}
		}
	}
	uk, ok := t.sch.(interface{ UniqueKeys(string) [][]string })
	if !ok {
		return nil
	}
	for _, key := range append(uk.UniqueKeys(parent), t.primaryKeyOf(parent)) {
		if len(key) == len(want) && !slices.ContainsFunc(want, func(w string) bool {
			return !slices.ContainsFunc(key, func(k string) bool { return strings.EqualFold(k, w) })
		}) {
			return nil
		}
	}
	return &pgwire.Error{Code: "42830", Message: fmt.Sprintf("there is no unique constraint matching given keys for referenced table %q", parent)}
}

func (t *translator) primaryKeyOf(table string) []string {
	if pk, ok := t.sch.(interface{ PrimaryKey(string) []string }); ok {
		return pk.PrimaryKey(table)
	}
	return nil
}

// alterColumnType is ALTER COLUMN ... TYPE t [USING expr]: values too long
// for a varchar(n) / char(n) fail with 22001 as in PostgreSQL; the values
// are converted with the cast PostgreSQL would use (or the USING
// expression), the declared type is edited in place (it gives the column
// its affinity) and tandem's column metadata gets the new type.
func (t *translator) alterColumnType(table string, cmd *pg_query.AlterTableCmd) ([]string, error) {
	cd := cmd.Def.GetColumnDef()
	if cd == nil || cd.TypeName == nil {
		return nil, unsupported("ALTER COLUMN TYPE without a type")
	}
	var old *Column
	if t.sch != nil {
		cols := t.sch.Columns(table)
		for i := range cols {
			if strings.EqualFold(cols[i].Name, cmd.Name) {
				old = &cols[i]
			}
		}
		if old == nil {
			return nil, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q of relation %q does not exist", cmd.Name, table)}
		}
	}
	typ, mod, enum, err := t.resolveType(cd.TypeName)
	if err != nil {
		return nil, err
	}
	if len(cd.TypeName.ArrayBounds) > 0 || typ.Cat == 'A' {
		return nil, unsupported("ALTER COLUMN TYPE to an array type")
	}
	col := quoteIdent(cmd.Name)
	value := col
	if cd.RawDefault != nil {
		if value, err = t.expr(cd.RawDefault); err != nil {
			return nil, err
		}
	}
	conv := "_cast_" + typ.Name + "(" + value + ")"
	typeOID := typ.OID
	if enum != nil {
		conv = enumValueSQL(value, enum)
		typeOID = enum.OID
	}
	var script []string
	if (typ.Name == "varchar" || typ.Name == "bpchar") && mod > 4 {
		script = append(script, fmt.Sprintf("SELECT _pg_raise('22001', %s) FROM %s WHERE length(%s) > %d LIMIT 1",
			quoteLit(fmt.Sprintf("value too long for type %s(%d)", typ.SQL, mod-4)), quoteIdent(table), conv, mod-4))
	}
	script = append(script, alterColumnScript(table, cmd.Name, AlterSetType, typ.SQLite, "")...)
	if enum != nil || old != nil && old.Enum != nil {
		// The enum's CHECK goes (from an enum) and comes (to one).
		check := ""
		if enum != nil {
			check = enumCheck(cmd.Name, enum)
		}
		script = append(script, alterColumnScript(table, cmd.Name, AlterSetEnumCheck, check, "")...)
	}
	// The new type's limits (none for an enum), checked on every row by
	// the UPDATE below as PostgreSQL checks them when it rewrites the
	// table (22003, 22001).
	lim := ""
	if enum == nil {
		lim = limitCheck(cmd.Name, typ, mod)
	}
	script = append(script, alterColumnScript(table, cmd.Name, AlterSetLimitCheck, lim, "")...)
	script = append(script,
		fmt.Sprintf("UPDATE %s SET %s = %s", quoteIdent(table), col, conv),
		fmt.Sprintf("INSERT OR IGNORE INTO _tandem_columns (table_name, column_name, type_oid, typmod) VALUES (%s, %s, %d, %d)", quoteLit(table), quoteLit(cmd.Name), typeOID, mod),
		fmt.Sprintf("UPDATE _tandem_columns SET type_oid = %d, typmod = %d WHERE table_name = %s AND column_name = %s", typeOID, mod, quoteLit(table), quoteLit(cmd.Name)))
	return script, nil
}

func hasColumn(cols []Column, name string) bool {
	for _, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

func (t *translator) rename(s *pg_query.RenameStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "ALTER TABLE"
	switch s.RenameType {
	case pg_query.ObjectType_OBJECT_TYPE:
		return t.renameEnum(s, tr)
	case pg_query.ObjectType_OBJECT_INDEX:
		// SQLite cannot rename an index: its stored definition is edited
		// (name and text), as for the column alterations.
		name, err := t.tableName(s.Relation)
		if err != nil {
			return nil, err
		}
		tr.Tag = "ALTER INDEX"
		exists := fmt.Sprintf("EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = %s AND sql IS NOT NULL)", quoteLit(name))
		if !s.MissingOk {
			tr.Script = append(tr.Script, fmt.Sprintf("SELECT _pg_raise('42P01', %s) WHERE NOT %s AND NOT EXISTS (SELECT 1 FROM _pg_index_all WHERE relname = %s)",
				quoteLit(fmt.Sprintf("relation %q does not exist", name)), exists, quoteLit(name)))
		}
		tr.Script = append(tr.Script, fmt.Sprintf("SELECT _pg_raise('0A000', %s) WHERE NOT %s AND EXISTS (SELECT 1 FROM _pg_index_all WHERE relname = %s)",
			quoteLit(fmt.Sprintf("renaming the index %q of a primary key or UNIQUE constraint declared with its table is not supported on the SQLite back end", name)), exists, quoteLit(name)))
		tr.Script = append(tr.Script, "PRAGMA writable_schema = ON",
			fmt.Sprintf("UPDATE sqlite_master SET name = %[2]s, sql = CASE WHEN upper(sql) LIKE 'CREATE UNIQUE%%' THEN 'CREATE UNIQUE INDEX ' ELSE 'CREATE INDEX ' END || %[3]s || substr(sql, instr(upper(sql), ' ON ')) WHERE type = 'index' AND name = %[1]s",
				quoteLit(name), quoteLit(s.Newname), quoteLit(quoteIdent(s.Newname))),
			"PRAGMA writable_schema = RESET", `CREATE TABLE "_tandem_schema_bump" (x)`, `DROP TABLE "_tandem_schema_bump"`,
			"UPDATE _tandem_constraints SET name = "+quoteLit(s.Newname)+" WHERE name = "+quoteLit(name), renameComments(name, s.Newname))
	case pg_query.ObjectType_OBJECT_SEQUENCE:
		// The sequence's row, the columns it numbers, and their
		// defaults (_tandem_nextval('name') in the tables' definitions).
		name, err := t.tableName(s.Relation)
		if err != nil {
			return nil, err
		}
		tr.Tag = "ALTER SEQUENCE"
		if !s.MissingOk {
			tr.Script = append(tr.Script, fmt.Sprintf("SELECT _pg_raise('42P01', %s) WHERE NOT EXISTS (SELECT 1 FROM _tandem_sequences WHERE name = %s)",
				quoteLit(fmt.Sprintf("relation %q does not exist", name)), quoteLit(name)))
		}
		oldCall, newCall := "_tandem_nextval("+quoteLit(quoteIdentIfNeeded(name))+")", "_tandem_nextval("+quoteLit(quoteIdentIfNeeded(s.Newname))+")"
		tr.Script = append(tr.Script,
			fmt.Sprintf("SELECT _pg_raise('42P07', %s) WHERE EXISTS (SELECT 1 FROM _tandem_sequences WHERE name = %s)", quoteLit(fmt.Sprintf("relation %q already exists", s.Newname)), quoteLit(s.Newname)),
			"UPDATE _tandem_sequences SET name = "+quoteLit(s.Newname)+", stride = 0 WHERE name = "+quoteLit(name),
			"UPDATE _tandem_columns SET sequence = "+quoteLit(s.Newname)+" WHERE sequence = "+quoteLit(name), renameComments(name, s.Newname),
			"PRAGMA writable_schema = ON",
			fmt.Sprintf("UPDATE sqlite_master SET sql = replace(sql, %s, %s) WHERE type = 'table' AND instr(sql, %s) > 0", quoteLit(oldCall), quoteLit(newCall), quoteLit(oldCall)),
			"PRAGMA writable_schema = RESET", `CREATE TABLE "_tandem_schema_bump" (x)`, `DROP TABLE "_tandem_schema_bump"`)
	case pg_query.ObjectType_OBJECT_VIEW:
		return t.renameView(s, tr)
	case pg_query.ObjectType_OBJECT_TABLE, pg_query.ObjectType_OBJECT_MATVIEW:
		name, err := t.tableName(s.Relation)
		if err != nil {
			return nil, err
		}
		if s.RenameType == pg_query.ObjectType_OBJECT_MATVIEW {
			tr.Tag = "ALTER MATERIALIZED VIEW"
			if _, ok := t.matviews()[name]; !ok {
				if s.MissingOk {
					tr.DDL, tr.Noop = false, true
					return tr, nil
				}
				if t.sch != nil && t.sch.Columns(name) != nil {
					return nil, &pgwire.Error{Code: "42809", Message: fmt.Sprintf("%q is not a materialized view", name)}
				}
				return nil, &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", name)}
			}
		}
		if vl, ok := t.sch.(ViewLister); ok {
			if _, isView := vl.Views()[name]; isView {
				return t.renameView(s, tr) // ALTER TABLE v RENAME TO w: PostgreSQL allows it (Liquibase's renameView)
			}
		}
		before, after := viewRenameScripts(name, name, s.Newname, false)
		tr.Script = append(before, "ALTER TABLE "+quoteIdent(name)+" RENAME TO "+quoteIdent(s.Newname),
			"UPDATE _tandem_columns SET table_name = "+quoteLit(s.Newname)+" WHERE table_name = "+quoteLit(name),
			"UPDATE _tandem_constraints SET table_name = "+quoteLit(s.Newname)+" WHERE table_name = "+quoteLit(name),
			"UPDATE _tandem_sequences SET owner_table = "+quoteLit(s.Newname)+", stride = 0 WHERE owner_table = "+quoteLit(name),
			"UPDATE _tandem_matviews SET name = "+quoteLit(s.Newname)+" WHERE name = "+quoteLit(name),
			renameComments(name, s.Newname))
		tr.Script = append(tr.Script, after...)
	case pg_query.ObjectType_OBJECT_COLUMN:
		name, err := t.tableName(s.Relation)
		if err != nil {
			return nil, err
		}
		before, after := viewRenameScripts(name, s.Subname, s.Newname, true)
		tr.Script = append(before, "ALTER TABLE "+quoteIdent(name)+" RENAME COLUMN "+quoteIdent(s.Subname)+" TO "+quoteIdent(s.Newname),
			"UPDATE _tandem_columns SET column_name = "+quoteLit(s.Newname)+" WHERE table_name = "+quoteLit(name)+" AND column_name = "+quoteLit(s.Subname),
			"UPDATE _tandem_sequences SET owner_column = "+quoteLit(s.Newname)+", stride = 0 WHERE owner_table = "+quoteLit(name)+" AND owner_column = "+quoteLit(s.Subname),
			"UPDATE _tandem_comments SET column_name = "+quoteLit(s.Newname)+" WHERE kind = 'col' AND name = "+quoteLit(name)+" AND column_name = "+quoteLit(s.Subname))
		tr.Script = append(tr.Script, after...)
	default:
		return nil, unsupported("ALTER ... RENAME of a %s", strings.ToLower(strings.TrimPrefix(s.RenameType.String(), "OBJECT_")))
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	return tr, nil
}
