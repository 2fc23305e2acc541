package sqlpg

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// CREATE TABLE new (LIKE src [INCLUDING ... | EXCLUDING ...]). The LIKE
// clause becomes the source's columns (PostgreSQL's column definitions:
// types with typmods, enum types, NOT NULL; identity with INCLUDING
// IDENTITY, which gives the new table a sequence of its own) before the
// table is written out as any other; what is copied as SQLite has it
// (defaults, CHECK constraints, indexes) is copied from the source's
// stored texts, so it is exactly what the source runs. Indexes and key
// constraints are named for the new table as PostgreSQL names them
// (new_pkey, new_col_key, new_col_idx); CHECK constraints keep their
// names; foreign keys are never copied.

// LikeSourcer is a Schema that describes a table for LIKE.
type LikeSourcer interface {
	LikeSource(table string) *LikeSource
}

// LikeSource is what LIKE copies of a table besides its columns.
type LikeSource struct {
	Create   string            // SQLite's CREATE TABLE text
	NotNull  map[string]bool   // columns declared NOT NULL (or in the primary key)
	Uniques  [][]string        // UNIQUE constraints the table's text declares, columns in order
	Indexes  []LikeIndex       // indexes CREATE INDEX or ADD CONSTRAINT made
	Comments map[string]string // column comments
}

// LikeIndex is an index's stored text and, for one ALTER TABLE ADD
// CONSTRAINT made, the constraint's kind ('p' or 'u').
type LikeIndex struct {
	SQL, Kind string
}

// PostgreSQL's CREATE_TABLE_LIKE_* bits.
const (
	likeComments    = 1 << 0
	likeConstraints = 1 << 2
	likeDefaults    = 1 << 3
	likeIdentity    = 1 << 5
	likeIndexes     = 1 << 6
)

// likeCopy is what LIKE clauses add besides table elements: SQLite text
// for column defaults and CHECK constraints, statements to run after the
// CREATE TABLE (indexes, comments).
type likeCopy struct {
	defaults map[string]string // column -> SQLite DEFAULT text
	seqs     map[string]string // column -> sequence its copied default draws from
	checks   []string
	after    []string
	used     map[string]bool // index names chosen so far
}

// expandLike replaces s's LIKE clauses by the source tables' columns and
// key constraints.
func (t *translator) expandLike(s *pg_query.CreateStmt, table string) (*likeCopy, error) {
	lc := &likeCopy{defaults: map[string]string{}, seqs: map[string]string{}, used: map[string]bool{}}
	var elts []*pg_query.Node
	for _, e := range s.TableElts {
		like := e.GetTableLikeClause()
		if like == nil {
			elts = append(elts, e)
			continue
		}
		src, err := t.tableName(like.Relation)
		if err != nil {
			return nil, err
		}
		var cols []Column
		if t.sch != nil {
			cols = t.sch.Columns(src)
		}
		ls, ok := t.sch.(LikeSourcer)
		if !ok {
			return nil, unsupported("CREATE TABLE ... (LIKE ...)")
		}
		info := ls.LikeSource(src)
		if cols == nil || info == nil {
			return nil, &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", src)}
		}
		opts := like.Options
		var pk []string
		for _, c := range cols {
			if c.PK > 0 {
				pk = append(pk, "")
			}
		}
		for _, c := range cols {
			if c.PK > 0 && int(c.PK) <= len(pk) {
				pk[c.PK-1] = c.Name
			}
			typ := ""
			switch {
			case c.Enum != nil:
				typ = quoteIdentIfNeeded(c.Enum.Name)
			case c.Type != nil:
				typ = FormatType(int64(c.Type.OID), int64(c.Typmod))
			default:
				typ = "text"
			}
			def := quoteIdent(c.Name) + " " + typ
			identity := c.Identity != "" && opts&likeIdentity != 0
			if identity {
				def += " GENERATED " + map[string]string{"a": "ALWAYS", "d": "BY DEFAULT"}[c.Identity] + " AS IDENTITY"
			} else if info.NotNull[c.Name] || c.PK > 0 || c.Identity != "" {
				def += " NOT NULL"
			}
			tree, err := pg_query.Parse("CREATE TABLE x (" + def + ")")
			if err != nil {
				return nil, fmt.Errorf("LIKE %s: column %s: %w", src, c.Name, err)
			}
			elts = append(elts, tree.Stmts[0].Stmt.GetCreateStmt().TableElts[0])
			if opts&likeDefaults != 0 && c.Identity == "" && c.DefaultSQL != "" {
				d := c.DefaultSQL
				if ch := d[0]; ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' {
					switch strings.ToUpper(d) {
					case "NULL", "TRUE", "FALSE", "CURRENT_TIME", "CURRENT_DATE", "CURRENT_TIMESTAMP":
					default:
						d = "(" + d + ")" // SQLite keeps an expression's parentheses out of dflt_value
					}
				}
				lc.defaults[c.Name] = d
				if strings.HasPrefix(c.DefaultSQL, "_tandem_nextval(") && c.Sequence != "" {
					// The source's sequence numbers the new table's rows
					// too (for an integer primary key, the translator
					// writes it into each INSERT).
					lc.seqs[c.Name] = c.Sequence
				}
			}
			if opts&likeComments != 0 {
				if cm, ok := info.Comments[c.Name]; ok {
					lc.after = append(lc.after, fmt.Sprintf("INSERT OR REPLACE INTO _tandem_comments (kind, name, column_name, comment) VALUES ('col', %s, %s, %s)",
						quoteLit(table), quoteLit(c.Name), quoteLit(cm)))
				}
			}
		}
		if opts&likeConstraints != 0 {
			for _, k := range CheckConstraints(info.Create) {
				lc.checks = append(lc.checks, "CONSTRAINT "+quoteIdent(k.Name)+" CHECK "+k.Group)
			}
		}
		if opts&likeIndexes == 0 {
			continue
		}
		key := func(kind string, cols []string) *pg_query.Node {
			var keys []*pg_query.Node
			for _, c := range cols {
				keys = append(keys, pg_query.MakeStrNode(c))
			}
			ct := pg_query.ConstrType_CONSTR_UNIQUE
			if kind == "p" {
				ct = pg_query.ConstrType_CONSTR_PRIMARY
			}
			return &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: &pg_query.Constraint{Contype: ct, Keys: keys, Location: -1}}}
		}
		if len(pk) > 0 && !hasIndexKind(info.Indexes, "p") {
			elts = append(elts, key("p", pk))
			lc.used[table+"_pkey"] = true
		}
		for _, u := range info.Uniques {
			elts = append(elts, key("u", u))
			lc.used[table+"_"+strings.Join(u, "_")+"_key"] = true
		}
		for _, ix := range info.Indexes {
			stmt, err := t.likeIndex(table, ix, lc)
			if err != nil {
				return nil, err
			}
			lc.after = append(lc.after, stmt...)
		}
	}
	s.TableElts = elts
	return lc, nil
}

func hasIndexKind(ixs []LikeIndex, kind string) bool {
	for _, ix := range ixs {
		if ix.Kind == kind {
			return true
		}
	}
	return false
}

// likeIndex copies a source index to table under the name PostgreSQL
// would choose.
func (t *translator) likeIndex(table string, ix LikeIndex, lc *likeCopy) ([]string, error) {
	on := strings.Index(ix.SQL, " ON ")
	if on < 0 {
		return nil, unsupported("copying the index %q", ix.SQL)
	}
	open := strings.IndexByte(ix.SQL[on:], '(')
	if open < 0 {
		return nil, unsupported("copying the index %q", ix.SQL)
	}
	body := ix.SQL[on+open:]
	unique := strings.HasPrefix(strings.ToUpper(ix.SQL), "CREATE UNIQUE")
	var cols []string
	if tree, err := pg_query.Parse(ix.SQL); err == nil && len(tree.Stmts) == 1 {
		if is := tree.Stmts[0].Stmt.GetIndexStmt(); is != nil {
			cols = indexColumnNames(is.IndexParams)
		}
	}
	if len(cols) == 0 {
		cols = []string{"expr"}
	}
	var name string
	switch ix.Kind {
	case "p":
		name = t.chooseName(table, nil, "pkey", lc.used)
	case "u":
		name = t.chooseName(table, cols, "key", lc.used)
	default:
		name = t.chooseName(table, cols, "idx", lc.used)
	}
	head := "CREATE INDEX "
	if unique {
		head = "CREATE UNIQUE INDEX "
	}
	out := []string{head + quoteIdent(name) + " ON " + quoteIdent(table) + " " + body}
	if ix.Kind != "" {
		out = append(out, fmt.Sprintf("INSERT OR REPLACE INTO _tandem_constraints (name, table_name, kind) VALUES (%s, %s, %s)",
			quoteLit(name), quoteLit(table), quoteLit(ix.Kind)))
	}
	return out, nil
}

// indexColumnNames: PostgreSQL's ChooseIndexColumnNames, the names an
// index's name is made of (a column's name, an expression's function
// name, else "expr").
func indexColumnNames(params []*pg_query.Node) []string {
	var out []string
	for _, p := range params {
		ie := p.GetIndexElem()
		if ie == nil {
			continue
		}
		switch {
		case ie.Name != "":
			out = append(out, ie.Name)
		case ie.Expr != nil && ie.Expr.GetFuncCall() != nil:
			fn := strs(ie.Expr.GetFuncCall().Funcname)
			n := fn[len(fn)-1]
			if pgn, ok := strings.CutPrefix(n, "_pg_"); ok {
				n = pgn // a function the translation renamed
			}
			out = append(out, n)
		default:
			out = append(out, "expr")
		}
	}
	return out
}

// chooseName is PostgreSQL's ChooseRelationName: table_cols_suffix,
// truncated to 63 bytes, numbered when a relation (or a name chosen by
// the same statement) has it.
func (t *translator) chooseName(table string, cols []string, suffix string, used map[string]bool) string {
	name1 := table
	if len(cols) > 0 {
		name1 += "_" + strings.Join(cols, "_")
	}
	exists := func(n string) bool {
		if used[n] {
			return true
		}
		if ix, ok := t.sch.(interface{ RelationExists(string) bool }); ok {
			return ix.RelationExists(n)
		}
		return false
	}
	for pass := 0; ; pass++ {
		suf := suffix
		if pass > 0 {
			suf = suffix + itoa(pass)
		}
		n := name1
		if len(n)+1+len(suf) > 63 {
			n = n[:63-1-len(suf)]
		}
		n += "_" + suf
		if !exists(n) {
			used[n] = true
			return n
		}
	}
}
