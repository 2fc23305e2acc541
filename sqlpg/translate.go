package sqlpg

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tandemdb/tandem/pgwire"
)

// Translation is one PostgreSQL statement made ready for SQLite.
type Translation struct {
	// SQL is what SQLite runs: one statement, or for DDL a script of
	// several (Script holds them one by one).
	SQL    string
	Script []string
	// Kind is the statement's first keyword as the client wrote it
	// (SELECT, INSERT, CREATE ...), Tag the command tag's verb phrase
	// for statements whose tag is not derived from Kind (CREATE TABLE).
	Kind string
	Tag  string
	// DDL is true when the statement changes the schema.
	DDL bool
	// Passthrough: the statement is transaction control or a setting;
	// the caller handles it from the original text.
	Passthrough bool
	// Noop: accepted and does nothing on SQLite (COMMENT ON, LOCK).
	Noop bool
	// Cols are the PostgreSQL types of the result columns, when the
	// translator could infer them (nil entries: unknown).
	Cols []ColType
	// Names of a RETURNING list's columns (Describe of a write).
	Names []string
	// SeqNames: the sequences nextval/currval/setval name with a
	// literal; they must exist when the statement is parsed (PostgreSQL
	// resolves 's'::regclass then), which the caller checks.
	SeqNames []string
	// Created: CREATE TABLE AS's table (its command tag counts its rows).
	Created string
	// Locking: a SELECT ... FOR UPDATE / FOR SHARE (the clause is
	// dropped: SQLite's single writer serialises the block instead).
	Locking bool
	// TableFree: a SELECT that reads no table (SELECT 1, SELECT now(),
	// SELECT pg_try_advisory_xact_lock(1)): its answer does not depend on
	// a transaction's snapshot.
	TableFree bool
	// Volatile: the statement calls a function with a side effect that
	// changes no row (an advisory lock, pg_terminate_backend): it runs on
	// a reader, and is not run to be described.
	Volatile bool
	// Writes: a query that changes rows although SQLite sees a read
	// (SELECT nextval(...) writes _tandem_sequences through a function).
	Writes bool
	// Notify: LISTEN, UNLISTEN or NOTIFY, which the back end carries out
	// itself (SQL is empty).
	Notify *Notify
	// Deferred: the statement fails with this error when executed (not
	// when parsed or described), as PostgreSQL's executor refuses it (a
	// materialized view not populated, or written to).
	Deferred error
	// Merge: a MERGE, carried out by the back end in steps (merge.go);
	// SQL is empty.
	Merge *MergePlan
	// Params: the types of parameters $1.. the statement gives them
	// (params.go), 0 where it says nothing; may be shorter than the
	// statement's parameters.
	Params []uint32
}

// Notify is a LISTEN, UNLISTEN (Channel "*": every channel) or NOTIFY.
type Notify struct {
	Kind             string // LISTEN, UNLISTEN, NOTIFY
	Channel, Payload string
}

// ColType is a result column's PostgreSQL type.
type ColType struct {
	Type   *Type
	Typmod int32
	// Enum: the enum type of a column of one (Type is text), so that
	// ORDER BY and comparisons follow the labels' order.
	Enum *Enum
}

// Schema is what the translator asks about existing tables. backend/sqlite
// implements it over its connection.
type Schema interface {
	// Columns of a table in declaration order with their PostgreSQL
	// types; nil when the table does not exist.
	Columns(table string) []Column
}

// Zoned is a Schema that knows the session's TimeZone: a timestamptz
// literal without an offset that the translation stores or compares is
// read in it (otherwise in UTC).
type Zoned interface {
	Zone() *time.Location
}

// zoneOfSchema is sch's zone, UTC when it has none.
func zoneOfSchema(sch Schema) *time.Location {
	if z, ok := sch.(Zoned); ok {
		if l := z.Zone(); l != nil {
			return l
		}
	}
	return time.UTC
}

// Column is one table column.
type Column struct {
	Name   string
	Type   *Type
	Typmod int32
	// Identity: "a" for GENERATED ALWAYS AS IDENTITY, "d" for BY
	// DEFAULT, "" otherwise.
	Identity string
	Default  bool // has a DEFAULT
	// DefaultSQL: the DEFAULT as the back end stores it (SQLite's
	// expression text), "" if none or unknown.
	DefaultSQL string
	// Enum: the column's enum type (its Type is text), nil if none.
	Enum   *Enum
	Serial bool  // serial or identity: numbered when left out
	PK     int64 // position in the primary key (1-based), 0 if not in it
	// Sequence: the sequence its DEFAULT draws from (serial and identity
	// columns of tables created since sequences number them), else "".
	Sequence string
	// Generated: "s" for GENERATED ALWAYS AS (...) STORED, else "".
	Generated string
}

// ErrNotSupported is wrapped by every 0A000 refusal.
var ErrNotSupported = fmt.Errorf("not supported on the SQLite back end")

// Unsupported is the 0A000 refusal of what the back end itself cannot
// do, worded as the translator's.
func Unsupported(format string, args ...any) error { return unsupported(format, args...) }

func unsupported(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: msg + " is not supported on the SQLite back end", Hint: "see docs/sql.md for the supported subset, or use a PostgreSQL back end", Err: ErrNotSupported}
}

// schemaVersion is bumped by every DDL; cached translations of an older
// version are re-made (their result types may have changed).
var schemaVersion atomic.Uint64

// SchemaChanged invalidates cached translations (and what back ends cache
// under SchemaVersion).
func SchemaChanged() { schemaVersion.Add(1) }

// SchemaVersion is the number SchemaChanged bumps: a back end that caches
// what its Schema answers keeps it while the number stays the same.
func SchemaVersion() uint64 { return schemaVersion.Load() }

type cached struct {
	tr  *Translation
	ver uint64
}

var cache sync.Map // sql -> cached
var cacheSize, cacheBytes atomic.Int64

// The cache is emptied when it holds maxCache translations or about
// maxCacheBytes of text (keys and translated SQL): without the byte bound,
// 4096 texts of up to maxCachedText each could pin hundreds of MiB.
const (
	maxCache      = 4096
	maxCacheBytes = 16 << 20
)

// maxCachedText: longer statements are translated each time, not cached
// (a chunked INSERT's chunks, 32 KiB each, are never run twice: cached,
// they raised a 12 MiB INSERT's heap to 3.7x its size, 1.2x without).
const maxCachedText = 16 << 10

// Translate translates one statement (the caller has split a multi-statement
// Query already). Translations are cached by text.
func Translate(sql string, sch Schema) (*Translation, error) {
	ver := schemaVersion.Load()
	key := sql
	if loc := zoneOfSchema(sch); loc != time.UTC {
		key = sql + "\x00" + loc.String() // its literals read in the zone
	}
	if v, ok := cache.Load(key); ok {
		c := v.(cached)
		if c.ver == ver {
			return c.tr, nil
		}
	}
	tr, err := translate(sql, sch)
	if err != nil {
		return nil, err
	}
	if tr.DDL || len(sql) >= maxCachedText {
		return tr, nil // a large text would stay in memory as the key
	}
	n := int64(len(sql) + len(tr.SQL))
	for _, q := range tr.Script {
		n += int64(len(q))
	}
	if cacheSize.Add(1) > maxCache || cacheBytes.Add(n) > maxCacheBytes {
		cache.Range(func(k, _ any) bool { cache.Delete(k); return true })
		cacheSize.Store(0)
		cacheBytes.Store(0)
	}
	cache.Store(key, cached{tr, ver})
	return tr, nil
}

// TranslateFresh translates without the shared cache, neither reading nor
// filling it: for a connection whose schema other sessions do not see (its
// own temporary tables, or DDL its open transaction has not committed).
func TranslateFresh(sql string, sch Schema) (*Translation, error) {
	return translate(sql, sch)
}

func translate(sql string, sch Schema) (tr *Translation, err error) {
	tree, err := Parse(sql)
	if err != nil {
		return nil, err
	}
	if len(tree.Stmts) == 0 {
		return &Translation{Noop: true, Kind: "EMPTY"}, nil
	}
	if len(tree.Stmts) > 1 {
		return nil, pgwire.Errorf(pgwire.CodeSyntax, "cannot insert multiple commands into a prepared statement")
	}
	raw := tree.Stmts[0].Stmt
	kind := firstWord(sql)
	t := &translator{sch: sch, loc: zoneOfSchema(sch)}
	t.exactAvg, t.exactDiv = exactAvgTargets(raw.GetSelectStmt())
	tr = &Translation{Kind: kind}
	if ms := raw.GetMergeStmt(); ms != nil {
		return t.merge(ms)
	}
	if raw.GetViewStmt() != nil || raw.GetCreateTableAsStmt() != nil || isSchemaStmt(raw) {
		// A view's query, a CHECK or DEFAULT are kept, not run, and
		// PostgreSQL binds no parameter to a utility statement.
		var pr *pg_query.ParamRef
		walkNode(raw, func(n *pg_query.Node) {
			if p := n.GetParamRef(); p != nil && pr == nil {
				pr = p
			}
		})
		if pr != nil {
			return nil, &pgwire.Error{Code: "42P02", Message: fmt.Sprintf("there is no parameter $%d", pr.Number)}
		}
	}
	if strings.IndexByte(sql, '$') >= 0 {
		t.hasParams = true
		var bad int32
		walkNode(raw, func(n *pg_query.Node) {
			if p := n.GetParamRef(); p != nil && p.Number > 65535 && bad == 0 {
				bad = p.Number
			}
		})
		if bad != 0 {
			// The protocol binds at most 65535 (PostgreSQL's answer
			// when the Bind cannot have given it).
			return nil, &pgwire.Error{Code: "42P02", Message: fmt.Sprintf("there is no parameter $%d", bad)}
		}
		t.castParams(raw)
	}
	// Before anything types the statement: catalogs' tableoid, sequences
	// read as relations.
	lower := strings.ToLower(sql)
	if strings.Contains(lower, "exists") {
		existsTargets(raw)
	}
	if strings.Contains(lower, "generate_subscripts") {
		t.subscriptLaterals(raw)
	}
	if strings.Contains(lower, "generate_s") {
		t.seriesAsUnnest(raw)
	}
	if strings.Contains(lower, "tableoid") {
		tableOIDs(raw)
	}
	// FROM t AS x(a, b): a subquery, before anything types the statement.
	walkNode(raw, func(n *pg_query.Node) {
		if r := n.GetRangeVar(); r != nil && r.Alias != nil && len(r.Alias.Colnames) > 0 && t.err == nil &&
			(r.Schemaname == "" || strings.EqualFold(r.Schemaname, "public")) {
			t.renamedColumns(n, r)
		}
	})
	if t.err != nil {
		return nil, t.err
	}
	if sch != nil && !namesNoSequence(sch, lower) {
		t.sequenceRelations(raw)
	}
	// No nextval, currval or setval in the text: sequenceFuncs has
	// nothing to find unless the translation adds one (serialFill).
	t.noSeqCalls = !strings.Contains(lower, "nextval") && !strings.Contains(lower, "currval") && !strings.Contains(lower, "setval")
	defer func() {
		if tr != nil {
			tr.Params = t.params
			tr.SeqNames = t.seqNames
			tr.Volatile = t.volatile
			tr.Locking = t.locking
			if _, ok := raw.Node.(*pg_query.Node_SelectStmt); ok && t.writes {
				// SELECT nextval(...): a write (INSERT ... are anyway).
				tr.Writes = true
			}
			if _, ok := raw.Node.(*pg_query.Node_SelectStmt); ok && !t.writes {
				free := true
				walkNode(raw, func(n *pg_query.Node) {
					switch n.Node.(type) {
					case *pg_query.Node_RangeVar, *pg_query.Node_RangeFunction, *pg_query.Node_RangeSubselect,
						*pg_query.Node_JoinExpr, *pg_query.Node_RangeTableFunc, *pg_query.Node_CommonTableExpr:
						free = false
					}
				})
				tr.TableFree = free
			}
		}
	}()
	// The target of INSERT, UPDATE and DELETE is a RangeVar outside any
	// Node, which the rewrite does not visit: "public"."t" is t here too
	// (Prisma and golang-migrate qualify every table), a table of another
	// schema does not exist (42P01, as PostgreSQL).
	var target *pg_query.RangeVar
	var returning []*pg_query.Node
	switch n := raw.Node.(type) {
	case *pg_query.Node_InsertStmt:
		target, returning = n.InsertStmt.Relation, n.InsertStmt.ReturningList
	case *pg_query.Node_UpdateStmt:
		target, returning = n.UpdateStmt.Relation, n.UpdateStmt.ReturningList
	case *pg_query.Node_DeleteStmt:
		target, returning = n.DeleteStmt.Relation, n.DeleteStmt.ReturningList
	}
	if target != nil {
		if t.rangeVar(target); t.err != nil {
			return nil, t.err
		}
		// RETURNING t.* of the target: SQLite's RETURNING takes * only.
		for _, r := range returning {
			rt := r.GetResTarget()
			if rt == nil {
				continue
			}
			if cr := rt.Val.GetColumnRef(); cr != nil && len(cr.Fields) == 2 && cr.Fields[1].GetAStar() != nil {
				if f := cr.Fields[0].GetString_(); f != nil && (strings.EqualFold(f.Sval, target.Relname) || (target.Alias != nil && strings.EqualFold(f.Sval, target.Alias.Aliasname))) {
					cr.Fields = cr.Fields[1:]
				}
			}
		}
		// RETURNING a.col with the target's alias a: SQLite's RETURNING
		// knows the table by its name only.
		if target.Alias != nil && target.Alias.Aliasname != "" {
			// After the rewrite: the result's types are inferred with
			// the alias.
			t.afterRewrite = append(t.afterRewrite, func() {
				for _, r := range returning {
					walkNode(r, func(x *pg_query.Node) {
						if cr := x.GetColumnRef(); cr != nil && len(cr.Fields) >= 2 {
							if f := cr.Fields[0].GetString_(); f != nil && strings.EqualFold(f.Sval, target.Alias.Aliasname) {
								cr.Fields[0] = pg_query.MakeStrNode(target.Relname)
							}
						}
					})
				}
			})
		}
	}
	switch raw.Node.(type) {
	case *pg_query.Node_SelectStmt, *pg_query.Node_InsertStmt, *pg_query.Node_UpdateStmt, *pg_query.Node_DeleteStmt,
		*pg_query.Node_DeclareCursorStmt:
		// PostgreSQL finds these when it runs the statement (Describe
		// succeeds): the translation is made, and fails when executed.
		tr.Deferred = t.matviewAccess(raw, target)
	}
	if isSchemaStmt(raw) && strings.Contains(lower, "distinct") && nullsNotDistinct(raw) {
		// Accepted, SQLite's unique index would still let NULLs repeat.
		return nil, unsupported("UNIQUE NULLS NOT DISTINCT")
	}
	if strings.Contains(lower, "enum_") {
		t.enumFuncs(raw)
	}
	if t.hasParams {
		t.inferParams(raw)
	}
	switch raw.Node.(type) {
	case *pg_query.Node_SelectStmt, *pg_query.Node_ViewStmt, *pg_query.Node_CreateTableAsStmt, *pg_query.Node_DeclareCursorStmt:
		// Statements whose result or definition has column names (a
		// large INSERT ... VALUES is not walked for nothing).
		if strings.Contains(lower, "select") {
			nameDerived(raw)
		}
	}
	var ctasMeta []string    // CREATE TABLE AS: the new table's column types
	var matview, mvSkip bool // CREATE MATERIALIZED VIEW [WITH NO DATA]
	var mvDef string         // its query as PostgreSQL's SQL
	switch n := raw.Node.(type) {
	case *pg_query.Node_TransactionStmt, *pg_query.Node_VariableSetStmt, *pg_query.Node_VariableShowStmt,
		*pg_query.Node_DiscardStmt:
		tr.Passthrough = true
		return tr, nil
	case *pg_query.Node_SelectStmt:
		if n.SelectStmt.IntoClause != nil {
			return nil, unsupported("SELECT INTO")
		}
		if err := t.dmlCTEs(n.SelectStmt); err != nil {
			return nil, err
		}
		tr.Cols = t.selectTypes(n.SelectStmt)
		t.expandUsingStar(n.SelectStmt)
		nameTargets(leftmost(n.SelectStmt).TargetList)
		names := targetNames(n.SelectStmt)
		err = t.rewrite(raw)
		t.finishDMLCTEs()
		if t.writes {
			// Described from its select list: running it would draw a
			// value.
			tr.Names = names
		}
	case *pg_query.Node_InsertStmt:
		s := n.InsertStmt
		if s.OnConflictClause != nil && s.OnConflictClause.Infer != nil && s.OnConflictClause.Infer.Conname != "" {
			// ON CONFLICT ON CONSTRAINT name: SQLite names the columns of
			// the conflict; they are the constraint's.
			inf := s.OnConflictClause.Infer
			ck, ok := t.sch.(interface{ ConstraintKey(string, string) []string })
			if !ok || s.Relation == nil {
				return nil, unsupported("ON CONFLICT ON CONSTRAINT")
			}
			cols := ck.ConstraintKey(s.Relation.Relname, inf.Conname)
			if len(cols) == 0 {
				return nil, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("constraint %q for table %q does not exist", inf.Conname, s.Relation.Relname)}
			}
			inf.Conname = ""
			for _, c := range cols {
				inf.IndexElems = append(inf.IndexElems, &pg_query.Node{Node: &pg_query.Node_IndexElem{IndexElem: &pg_query.IndexElem{Name: c,
					Ordering: pg_query.SortByDir_SORTBY_DEFAULT, NullsOrdering: pg_query.SortByNulls_SORTBY_NULLS_DEFAULT}}})
			}
		}
		if s.OnConflictClause != nil && s.OnConflictClause.Infer != nil {
			for _, e := range s.OnConflictClause.Infer.IndexElems {
				if ie := e.GetIndexElem(); ie != nil && (len(ie.Opclass) > 0 || len(ie.Collation) > 0) {
					return nil, unsupported("ON CONFLICT with an operator class or collation")
				}
			}
		}
		if s.Override != pg_query.OverridingKind_OVERRIDING_NOT_SET && s.Override != pg_query.OverridingKind_OVERRIDING_KIND_UNDEFINED {
			return nil, unsupported("INSERT ... OVERRIDING")
		}
		var always map[string]bool
		var tcols []Column
		if s.Relation != nil && t.sch != nil {
			tcols = t.sch.Columns(s.Relation.Relname)
			if tcols == nil && (s.Relation.Schemaname == "" || strings.EqualFold(s.Relation.Schemaname, "public")) {
				// As PostgreSQL, before anything else about the statement
				// (a DEFAULT it could not place, say).
				return nil, &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", s.Relation.Relname)}
			}
		}
		if len(s.Cols) > 0 {
			for _, c := range tcols {
				if c.Identity == "a" {
					if always == nil {
						always = map[string]bool{}
					}
					always[c.Name] = true
				}
			}
		}
		if err := t.generatedInsert(s, tcols); err != nil {
			return nil, err
		}
		if s.OnConflictClause != nil && len(s.OnConflictClause.TargetList) > 0 {
			if s.OnConflictClause.TargetList, err = generatedTargets(s.OnConflictClause.TargetList, tcols); err != nil {
				return nil, err
			}
		}
		if err := t.insertChecks(s, tcols); err != nil {
			return nil, err
		}
		t.roundInsert(s, tcols)
		for _, c := range s.Cols {
			if rt := c.GetResTarget(); rt != nil && len(rt.Indirection) > 0 {
				return nil, unsupported("INSERT into a subfield or array element (%s...)", rt.Name)
			}
			if rt := c.GetResTarget(); rt != nil && always[rt.Name] {
				return nil, &pgwire.Error{Code: "428C9", Message: fmt.Sprintf("cannot insert a non-DEFAULT value into column %q", rt.Name),
					Detail: fmt.Sprintf("Column %q is an identity column defined as GENERATED ALWAYS.", rt.Name)}
			}
		}
		if s.OnConflictClause != nil {
			for _, c := range s.OnConflictClause.TargetList {
				if rt := c.GetResTarget(); rt != nil && len(rt.Indirection) > 0 {
					return nil, unsupported("UPDATE of a subfield or array element (%s...)", rt.Name)
				}
			}
		}
		t.serialFill(s, tcols)
		t.defaultFill(s, tcols)
		tr.Cols = t.returningTypes(s.Relation, s.ReturningList)
		tr.Names = t.returningNames(s.Relation, s.ReturningList)
		nameTargets(s.ReturningList)
		err = t.rewrite(raw)
	case *pg_query.Node_UpdateStmt:
		for _, c := range n.UpdateStmt.TargetList {
			if rt := c.GetResTarget(); rt != nil && len(rt.Indirection) > 0 {
				return nil, unsupported("UPDATE of a subfield or array element (%s...)", rt.Name)
			}
		}
		if u := n.UpdateStmt; u.Relation != nil && t.sch != nil {
			if u.TargetList, err = generatedTargets(u.TargetList, t.sch.Columns(u.Relation.Relname)); err != nil {
				return nil, err
			}
		}
		if err := t.updateDefaults(n.UpdateStmt); err != nil {
			return nil, err
		}
		t.roundUpdate(n.UpdateStmt)
		tr.Cols = t.returningTypes(n.UpdateStmt.Relation, n.UpdateStmt.ReturningList)
		tr.Names = t.returningNames(n.UpdateStmt.Relation, n.UpdateStmt.ReturningList)
		nameTargets(n.UpdateStmt.ReturningList)
		err = t.rewrite(raw)
	case *pg_query.Node_DeleteStmt:
		if d := n.DeleteStmt; len(d.UsingClause) > 0 {
			// DELETE FROM t USING u WHERE c: DELETE FROM t WHERE EXISTS
			// (SELECT 1 FROM u WHERE c), c correlated to t's row.
			if len(d.ReturningList) > 0 {
				return nil, unsupported("DELETE ... USING with RETURNING")
			}
			sub := &pg_query.SelectStmt{
				TargetList:  []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeAConstIntNode(1, -1), -1)},
				FromClause:  d.UsingClause,
				WhereClause: d.WhereClause,
			}
			d.UsingClause = nil
			d.WhereClause = &pg_query.Node{Node: &pg_query.Node_SubLink{SubLink: &pg_query.SubLink{SubLinkType: pg_query.SubLinkType_EXISTS_SUBLINK,
				Subselect: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sub}}}}}
		}
		tr.Cols = t.returningTypes(n.DeleteStmt.Relation, n.DeleteStmt.ReturningList)
		tr.Names = t.returningNames(n.DeleteStmt.Relation, n.DeleteStmt.ReturningList)
		nameTargets(n.DeleteStmt.ReturningList)
		err = t.rewrite(raw)
	case *pg_query.Node_ExplainStmt:
		if err := t.rewrite(n.ExplainStmt.Query); err != nil {
			return nil, err
		}
		inner, err := deparseStmt(n.ExplainStmt.Query)
		if err != nil {
			return nil, err
		}
		tr.SQL = "EXPLAIN QUERY PLAN " + inner
		return tr, nil
	case *pg_query.Node_CreateStmt:
		return t.createTable(n.CreateStmt, tr)
	case *pg_query.Node_CreateTableAsStmt:
		ctas := n.CreateTableAsStmt
		matview = ctas.Objtype == pg_query.ObjectType_OBJECT_MATVIEW
		if ctas.Objtype != pg_query.ObjectType_OBJECT_TABLE && !matview {
			return nil, unsupported("%s", nodeName(raw))
		}
		tr.DDL, tr.Tag = true, "SELECT"
		into := ctas.Into
		if into != nil && into.Rel != nil && len(into.ColNames) > 0 {
			// CREATE TABLE t (a, b) AS: the names become the query's AS
			// names (SQLite's CREATE TABLE AS takes no column list).
			if sel := ctas.Query.GetSelectStmt(); sel != nil && starOf(sel) == "" {
				targets := leftmost(sel).TargetList
				if len(into.ColNames) > len(targets) {
					return nil, &pgwire.Error{Code: "42601", Message: "too many column names were specified"}
				}
				for i, c := range strs(into.ColNames) {
					if rt := targets[i].GetResTarget(); rt != nil && len(sel.ValuesLists) == 0 {
						rt.Name = c
					}
				}
				if len(sel.ValuesLists) == 0 {
					into.ColNames = nil
				}
			}
		}
		if matview && into != nil && into.Rel != nil {
			if into.Rel.Relpersistence == "t" {
				return nil, &pgwire.Error{Code: "0A000", Message: "materialized views must not use temporary tables or views"}
			}
			if ix, ok := t.sch.(interface{ RelationExists(string) bool }); ok && ix.RelationExists(into.Rel.Relname) {
				if ctas.IfNotExists {
					tr.DDL, tr.Noop, tr.Tag = false, true, "CREATE MATERIALIZED VIEW"
					return tr, nil
				}
				return nil, &pgwire.Error{Code: "42P07", Message: fmt.Sprintf("relation %q already exists", into.Rel.Relname)}
			}
			if err := t.matviewAccess(ctas.Query, nil); err != nil {
				return nil, err
			}
			mvDef, _ = pg_query.Deparse(&pg_query.ParseResult{Stmts: []*pg_query.RawStmt{{Stmt: ctas.Query}}})
			mvSkip, into.SkipData = into.SkipData, false
			ctas.Objtype = pg_query.ObjectType_OBJECT_TABLE
			if mvSkip {
				tr.Tag = "CREATE MATERIALIZED VIEW"
			}
		}
		if into != nil && into.Rel != nil {
			if err := onCommit(into.OnCommit, into.Rel.Relpersistence == "t"); err != nil {
				return nil, err
			}
			name, err := t.tableName(into.Rel)
			if err != nil {
				return nil, err
			}
			into.Rel.Schemaname = "" // public: SQLite's main
			tr.Created = name
			// The new table's column types, as PostgreSQL types the
			// query's columns (SQLite declares them by affinity only).
			if sel := n.CreateTableAsStmt.Query.GetSelectStmt(); sel != nil {
				types, names := t.selectTypes(sel), targetNames(sel)
				if star := starOf(sel); star != "" && t.sch != nil {
					// SELECT * FROM t: t's columns.
					types, names = nil, nil
					for _, c := range t.sch.Columns(star) {
						types, names = append(types, ColType{Type: c.Type, Typmod: c.Typmod}), append(names, c.Name)
					}
				}
				if cn := strs(into.ColNames); len(cn) > 0 {
					names = cn
				}
				if types != nil && len(names) == len(types) {
					for i, c := range types {
						if c.Type != nil {
							ctasMeta = append(ctasMeta, fmt.Sprintf("INSERT OR REPLACE INTO _tandem_columns (table_name, column_name, type_oid, typmod) VALUES (%s, %s, %d, %d)",
								quoteLit(name), quoteLit(names[i]), c.Type.OID, c.Typmod))
						}
					}
				}
			}
		}
		err = t.rewrite(raw)
	case *pg_query.Node_RefreshMatViewStmt:
		return t.refreshMatview(n.RefreshMatViewStmt, tr)
	case *pg_query.Node_IndexStmt:
		return t.createIndex(raw, n.IndexStmt, tr)
	case *pg_query.Node_ViewStmt:
		return t.createView(raw, n.ViewStmt, tr)
	case *pg_query.Node_DropStmt:
		return t.drop(n.DropStmt, tr)
	case *pg_query.Node_AlterTableStmt:
		return t.alterTable(n.AlterTableStmt, tr)
	case *pg_query.Node_RenameStmt:
		return t.rename(n.RenameStmt, tr)
	case *pg_query.Node_TruncateStmt:
		tr.Tag = "TRUNCATE TABLE"
		for _, r := range n.TruncateStmt.Relations {
			name, err := t.tableName(r.GetRangeVar())
			if err != nil {
				return nil, err
			}
			if _, ok := t.matviews()[name]; ok {
				return nil, &pgwire.Error{Code: "42809", Message: fmt.Sprintf("%q is not a table", name)}
			}
			tr.Script = append(tr.Script, "DELETE FROM "+quoteIdent(name))
			if n.TruncateStmt.RestartSeqs {
				// RESTART IDENTITY: the table's own sequences start again.
				tr.Script = append(tr.Script, "UPDATE _tandem_sequences SET last_value = coalesce(_tandem_seq_reset(name), start_value), is_called = 0, generation = generation + 1, stride = 0 WHERE owner_table = "+quoteLit(name))
			}
		}
		tr.SQL = strings.Join(tr.Script, ";\n")
		if len(tr.Script) == 1 {
			tr.Script = nil
		}
		return tr, nil
	case *pg_query.Node_CreateEnumStmt:
		return t.createEnum(n.CreateEnumStmt, tr)
	case *pg_query.Node_AlterEnumStmt:
		return t.alterEnum(n.AlterEnumStmt, tr)
	case *pg_query.Node_CreateSeqStmt:
		return t.createSequence(n.CreateSeqStmt, tr)
	case *pg_query.Node_AlterSeqStmt:
		return t.alterSequence(n.AlterSeqStmt, tr)
	case *pg_query.Node_AlterOwnerStmt:
		// ALTER SCHEMA|TYPE|FUNCTION ... OWNER TO: no owners here (see
		// alterTable).
		if err := knownRole(n.AlterOwnerStmt.Newowner); err != nil {
			return nil, err
		}
		tr.Noop, tr.Tag = true, "ALTER "+strings.TrimPrefix(n.AlterOwnerStmt.ObjectType.String(), "OBJECT_")
		return tr, nil
	case *pg_query.Node_CommentStmt:
		return t.comment(n.CommentStmt, tr)
	case *pg_query.Node_CreateExtensionStmt:
		return createExtension(n.CreateExtensionStmt, tr)
	case *pg_query.Node_ListenStmt:
		tr.Notify, tr.Tag = &Notify{Kind: "LISTEN", Channel: n.ListenStmt.Conditionname}, "LISTEN"
		return tr, nil
	case *pg_query.Node_UnlistenStmt:
		ch := n.UnlistenStmt.Conditionname
		if ch == "" {
			ch = "*"
		}
		tr.Notify, tr.Tag = &Notify{Kind: "UNLISTEN", Channel: ch}, "UNLISTEN"
		return tr, nil
	case *pg_query.Node_NotifyStmt:
		tr.Notify, tr.Tag = &Notify{Kind: "NOTIFY", Channel: n.NotifyStmt.Conditionname, Payload: n.NotifyStmt.Payload}, "NOTIFY"
		return tr, nil
	case *pg_query.Node_LockStmt:
		tr.Noop, tr.Tag = true, "LOCK TABLE"
		return tr, nil
	case *pg_query.Node_CreateSchemaStmt:
		if n.CreateSchemaStmt.Schemaname == "public" && n.CreateSchemaStmt.IfNotExists {
			tr.Noop, tr.Tag = true, "CREATE SCHEMA"
			return tr, nil
		}
		return nil, unsupported("CREATE SCHEMA (only the public schema exists)")
	case *pg_query.Node_VacuumStmt:
		if n.VacuumStmt.IsVacuumcmd {
			tr.SQL, tr.Tag = "VACUUM", "VACUUM"
		} else {
			tr.SQL, tr.Tag = "ANALYZE", "ANALYZE"
		}
		return tr, nil
	default:
		return nil, unsupported("%s", nodeName(raw))
	}
	if err != nil {
		return nil, err
	}
	for _, f := range t.afterRewrite {
		f()
	}
	out, err := deparseStmt(raw)
	if err != nil {
		return nil, err
	}
	tr.SQL = out
	if tr.Created != "" {
		// The types first; the back end counts the new table's rows.
		tr.Script = append(ctasMeta, out)
		if matview {
			query, err := deparseStmt(raw.GetCreateTableAsStmt().Query)
			if err != nil {
				return nil, err
			}
			populated := 1
			if mvSkip {
				populated = 0
				tr.Script = append(tr.Script, "DELETE FROM "+quoteIdent(tr.Created))
				tr.Created = "" // the command tag counts no rows
			}
			tr.Script = append(tr.Script, fmt.Sprintf("INSERT OR REPLACE INTO _tandem_matviews (name, definition, query, populated) VALUES (%s, %s, %s, %d)",
				quoteLit(raw.GetCreateTableAsStmt().Into.Rel.Relname), quoteLit(mvDef), quoteLit(query), populated))
		}
		tr.SQL = strings.Join(tr.Script, ";\n")
	}
	return tr, nil
}

// starOf is t for SELECT * FROM t (one table, no other column).
func starOf(sel *pg_query.SelectStmt) string {
	if len(sel.TargetList) != 1 || len(sel.FromClause) != 1 {
		return ""
	}
	cr := sel.TargetList[0].GetResTarget().GetVal().GetColumnRef()
	rv := sel.FromClause[0].GetRangeVar()
	if cr == nil || rv == nil || len(cr.Fields) != 1 || cr.Fields[0].GetAStar() == nil {
		return ""
	}
	return rv.Relname
}

func nodeName(n *pg_query.Node) string {
	name := fmt.Sprintf("%T", n.Node)
	name = strings.TrimPrefix(name, "*pg_query.Node_")
	name = strings.TrimSuffix(name, "Stmt")
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return "the statement " + strings.ToUpper(b.String())
}

func firstWord(sql string) string {
	kw := pgwire.Keywords(sql, 1)
	if len(kw) == 0 {
		return ""
	}
	return kw[0]
}

// deparseStmt turns a rewritten statement back into text, with
// PostgreSQL's $n parameters written as SQLite's ?n.
func deparseStmt(stmt *pg_query.Node) (string, error) {
	restore := markKeywords(stmt)
	out, err := pg_query.Deparse(&pg_query.ParseResult{Stmts: []*pg_query.RawStmt{{Stmt: stmt}}})
	restore()
	out = unquoteMarks(out)
	if err != nil {
		return "", &pgwire.Error{Code: pgwire.CodeFeatureNotSupported, Message: "tandem cannot translate this statement for the SQLite back end: " + err.Error(), Err: ErrNotSupported}
	}
	return dollarParams(plainStrings(aliasAS(stmt, out))), nil
}

// aliasAS writes the target alias of DELETE and UPDATE with AS, which
// SQLite requires there ("DELETE FROM t x" is "DELETE FROM t AS x").
func aliasAS(stmt *pg_query.Node, out string) string {
	var rel *pg_query.RangeVar
	prefix := ""
	switch x := stmt.Node.(type) {
	case *pg_query.Node_DeleteStmt:
		rel, prefix = x.DeleteStmt.Relation, "DELETE FROM "
	case *pg_query.Node_UpdateStmt:
		rel, prefix = x.UpdateStmt.Relation, "UPDATE "
	}
	if rel == nil || rel.Alias == nil || rel.Alias.Aliasname == "" {
		return out
	}
	// The deparser writes "<prefix><relation> <alias>" after any WITH.
	i := strings.Index(out, prefix)
	if i < 0 {
		return out
	}
	rest := out[i+len(prefix):]
	from := 0
	if strings.HasPrefix(rest, `"`) {
		// a quoted name: its closing quote ("" inside is one quote)
		for j := 1; j < len(rest); j++ {
			if rest[j] == '"' {
				if j+1 < len(rest) && rest[j+1] == '"' {
					j++
					continue
				}
				from = j
				break
			}
		}
	}
	sp := strings.IndexByte(rest[from:], ' ')
	if sp < 0 {
		return out
	}
	sp += from
	return out[:i+len(prefix)+sp] + " AS" + rest[sp:]
}

// plainStrings rewrites the deparser's E'...' escape-string literals into
// SQLite's plain '...' literals.
func plainStrings(s string) string {
	if !strings.Contains(s, "E'") {
		return s
	}
	var b strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			b.WriteByte(c)
			if c == quote {
				quote = 0
			}
			continue
		}
		if c == '"' {
			quote = c
			b.WriteByte(c)
			continue
		}
		if c == '\'' {
			quote = c
			b.WriteByte(c)
			continue
		}
		if c == 'E' && i+1 < len(s) && s[i+1] == '\'' && (i == 0 || !isIdent(s[i-1])) {
			j := i + 2
			b.WriteByte('\'')
			for j < len(s) {
				d := s[j]
				if d == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteString("''")
						j += 2
						continue
					}
					break
				}
				if d == '\\' && j+1 < len(s) {
					j++
					switch e := s[j]; e {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'r':
						b.WriteByte('\r')
					case 'b':
						b.WriteByte('\b')
					case 'f':
						b.WriteByte('\f')
					case '\'':
						b.WriteString("''")
					default:
						b.WriteByte(e)
					}
					j++
					continue
				}
				b.WriteByte(d)
				j++
			}
			b.WriteByte('\'')
			i = j
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// deparseExpr deparses one expression (through SELECT expr).
func deparseExpr(e *pg_query.Node) (string, error) {
	sel := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(e, 0)},
	}}}
	out, err := deparseStmt(sel)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(out, "SELECT "), nil
}

// dollarParams rewrites $n outside literals and quoted identifiers to ?n.
func dollarParams(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return swapParamMarks(s, '$', '?')
}

// swapParamMarks writes each parameter mark from (a $ or ? before a
// digit) outside literals and quoted identifiers as to.
func swapParamMarks(s string, from, to byte) string {
	var b strings.Builder
	b.Grow(len(s))
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == from && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' && (i == 0 || !isIdent(s[i-1])):
			c = to
		}
		b.WriteByte(c)
	}
	return b.String()
}

// parseGenerated parses SQL the translator wrote around deparsed parts:
// their parameters, ?n for SQLite already, are $n again for PostgreSQL's
// parser (which reads `?1` as the prefix operator ? applied to 1).
func parseGenerated(s string) (*pg_query.ParseResult, error) {
	if strings.Contains(s, "?") {
		s = swapParamMarks(s, '?', '$')
	}
	return pg_query.Parse(s)
}

// byteaValue is v read as bytea. The SQLite driver returns an empty
// blob from a function as NULL, so an empty bytea is SQLite's own
// zeroblob(0): an empty literal is that, any other value is checked.
func byteaValue(v *pg_query.Node) *pg_query.Node {
	if sv := v.GetAConst().GetSval(); sv != nil {
		if b, err := byteaIn(sv.Sval); err == nil && len(b) == 0 {
			return call("zeroblob", pg_query.MakeAConstIntNode(0, -1))
		}
		return call("_cast_bytea", v)
	}
	return template("coalesce(_cast_bytea(__arg0__), CASE WHEN (__arg0__) IS NOT NULL THEN zeroblob(0) END)", v)
}

// fractional reports whether c is a type whose division is not an
// integer division: numeric, real, double precision.
func fractional(c ColType) bool {
	if c.Type == nil || c.Enum != nil {
		return false
	}
	switch c.Type.Name {
	case "numeric", "float4", "float8":
		return true
	}
	return false
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// translator carries one statement's state.
type translator struct {
	// droppingMatviews: DROP MATERIALIZED VIEW drops the tables as DROP
	// TABLE does (which otherwise refuses a materialized view).
	droppingMatviews bool
	// exactAvg: avg calls whose value is only printed (numdiv.go).
	exactAvg map[*pg_query.FuncCall]bool
	// params: the parameters' types found so far (params.go).
	params []uint32
	// outputParams: bare parameters in select lists, text unless the
	// rest of the statement types them (selectParams).
	outputParams []int32
	hasParams    bool // the text has a $: parameter types are looked for
	// subscripts: unnests that stand for LATERAL (SELECT unnest(a),
	// generate_subscripts(a, 1)) (unnest.go).
	subscripts map[*pg_query.RangeFunction]subscriptShift
	// regclassOf: x::regclass rewritten, with its x (x::regclass::oid).
	regclassOf map[*pg_query.Node]*pg_query.Node
	exactDiv   map[*pg_query.A_Expr]bool
	// loc: the session's zone (Zoned), for literals read at translation.
	loc *time.Location
	// creating: the table a CREATE TABLE makes (a foreign key may
	// reference it before it exists).
	creating string
	// noSeqCalls: the statement calls no sequence function (sequenceFuncs
	// skips its walk).
	noSeqCalls bool
	sch        Schema
	err        error
	intPK      bool
	pkName     string // CREATE TABLE: the name of its primary key constraint, if given
	subq       int
	triggers   []string
	ctes       map[string][]Column
	opTypes    map[*pg_query.A_Expr][2]ColType
	aggArg     map[*pg_query.FuncCall]ColType // sum/avg/min/max: the argument's type
	// typeofArg: pg_typeof's argument's type, found with its scope.
	typeofArg map[*pg_query.FuncCall]ColType
	castArg   map[*pg_query.TypeCast]ColType // casts of a numeric: its type
	jsonArg   map[*pg_query.FuncCall]bool    // json_agg of a json or jsonb value
	rowAgg    map[*pg_query.FuncCall]bool    // json_agg of a whole row
	// srfPending: set-returning functions not (yet) placed where SQLite
	// can run them (FROM, or a select list's top level).
	srfPending map[*pg_query.FuncCall]string
	// jsonPathArgs: a jsonb_path_* call's target and path types, found
	// with their scope (a text column is not a jsonpath: 42883).
	jsonPathArgs map[*pg_query.FuncCall][2]ColType
	// unnestPending: unnest(...) FROM items not (yet) placed by their
	// select.
	unnestPending map[*pg_query.RangeFunction]bool
	// lateralPending: LATERAL subqueries not (yet) placed.
	lateralPending map[*pg_query.RangeSubselect]bool
	// seqNames: sequences named by literals in nextval/currval/setval;
	// writes: the statement calls nextval or setval.
	seqNames []string
	writes   bool
	volatile bool // calls an advisory lock function
	locking  bool // SELECT ... FOR UPDATE / SHARE
	// dmlCTE, dmlCols: data-modifying CTEs made readable (dmlCTEs) and
	// their RETURNING columns.
	dmlCTE   []string
	dmlCols  [][]Column
	dmlFinal []func()
	// afterRewrite: replacements made once the rewrite is done (a
	// column's DEFAULT, already in the back end's SQL, must not be
	// translated again).
	afterRewrite []func()
}

func (t *translator) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// rewrite walks the tree bottom-up and rewrites every node SQLite does not
// understand into one it does (or records a refusal).
func (t *translator) rewrite(n *pg_query.Node) error {
	if n == nil || n.Node == nil {
		return t.err
	}
	t.annotate(n)
	t.sequenceFuncs(n)
	visit(n.ProtoReflect(), t.node)
	for _, name := range t.srfPending {
		t.fail(unsupported("the set-returning function %s in this position (only in FROM or at the top of a select list)", name))
		break
	}
	if len(t.lateralPending) > 0 {
		t.fail(unsupported("LATERAL subqueries in this position"))
	}
	if len(t.unnestPending) > 0 {
		t.fail(unsupported("unnest(...) in this FROM position (only directly in a select's FROM list)"))
	}
	return t.err
}

// setReturning are the set-returning functions the translator places.
var setReturning = map[string]bool{"generate_series": true, "unnest": true, "generate_subscripts": true}

func isSetReturning(name string) bool {
	_, j := jsonSRFs[name]
	return j || setReturning[name]
}

// isSchemaStmt: CREATE TABLE, CREATE INDEX or ALTER TABLE (the statements
// that can declare a unique constraint).
func isSchemaStmt(n *pg_query.Node) bool {
	switch n.Node.(type) {
	case *pg_query.Node_CreateStmt, *pg_query.Node_IndexStmt, *pg_query.Node_AlterTableStmt:
		return true
	}
	return false
}

// nullsNotDistinct reports whether a statement declares a unique
// constraint or index NULLS NOT DISTINCT.
func nullsNotDistinct(n *pg_query.Node) bool {
	found := false
	walkNode(n, func(x *pg_query.Node) {
		if c := x.GetConstraint(); c != nil && c.NullsNotDistinct {
			found = true
		}
		if i := x.GetIndexStmt(); i != nil && i.NullsNotDistinct {
			found = true
		}
	})
	if i := n.GetIndexStmt(); i != nil && i.NullsNotDistinct {
		found = true
	}
	return found
}

func walkNode(n *pg_query.Node, fn func(*pg_query.Node)) {
	if n == nil || n.Node == nil {
		return
	}
	walkMsg(n.ProtoReflect(), fn)
}

func walkMsg(m protoreflect.Message, fn func(*pg_query.Node)) {
	eachChild(m, func(c protoreflect.Message) { visit(c, fn) })
}

// eachChild calls f for each message m holds, in a field or a list.
func eachChild(m protoreflect.Message, f func(protoreflect.Message)) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				f(l.Get(i).Message())
			}
			return true
		}
		f(v.Message())
		return true
	})
}

func visit(m protoreflect.Message, fn func(*pg_query.Node)) {
	n, ok := m.Interface().(*pg_query.Node)
	if ok {
		// Fast paths for the nodes a large VALUES list is made of
		// (reflection over each constant's value was most of the
		// translator's time on a multi-row INSERT): constants and
		// strings hold no nodes, a list holds only nodes.
		switch x := n.Node.(type) {
		case *pg_query.Node_AConst, *pg_query.Node_String_, *pg_query.Node_Integer, *pg_query.Node_Float, *pg_query.Node_Boolean:
			fn(n)
			return
		case *pg_query.Node_List:
			for i := 0; i < len(x.List.Items); i++ {
				if it := x.List.Items[i]; it != nil {
					visit(it.ProtoReflect(), fn)
				}
			}
			fn(n)
			return
		}
	}
	walkMsg(m, fn)
	if ok && n.Node != nil {
		fn(n)
	}
}

func strs(nodes []*pg_query.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.GetString_().GetSval())
	}
	return out
}

func lastName(nodes []*pg_query.Node) string {
	s := strs(nodes)
	if len(s) == 0 {
		return ""
	}
	return strings.ToLower(s[len(s)-1])
}

func call(name string, args ...*pg_query.Node) *pg_query.Node {
	n := pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(name)}, args, -1)
	n.GetFuncCall().Funcformat = pg_query.CoercionForm_COERCE_EXPLICIT_CALL
	return n
}

func strConst(s string) *pg_query.Node { return pg_query.MakeAConstStrNode(s, -1) }

func (t *translator) node(n *pg_query.Node) {
	switch x := n.Node.(type) {
	case *pg_query.Node_TypeCast:
		t.typeCast(n, x.TypeCast)
	case *pg_query.Node_AExpr:
		t.aExpr(n, x.AExpr)
	case *pg_query.Node_FuncCall:
		t.funcCall(n, x.FuncCall)
	case *pg_query.Node_SqlvalueFunction:
		t.sqlValue(n, x.SqlvalueFunction)
	case *pg_query.Node_MinMaxExpr:
		name := "_pg_greatest"
		if x.MinMaxExpr.Op == pg_query.MinMaxOp_IS_LEAST {
			name = "_pg_least"
		}
		n.Node = call(name, x.MinMaxExpr.Args...).Node
	case *pg_query.Node_RangeVar:
		t.rangeVar(x.RangeVar)
	case *pg_query.Node_SelectStmt:
		if err := dupCTE(x.SelectStmt.WithClause); err != nil {
			t.fail(err)
			return
		}
		t.selectStmt(x.SelectStmt)
	case *pg_query.Node_InsertStmt:
		if err := dupCTE(x.InsertStmt.WithClause); err != nil {
			t.fail(err)
		}
	case *pg_query.Node_UpdateStmt:
		if err := dupCTE(x.UpdateStmt.WithClause); err != nil {
			t.fail(err)
		}
	case *pg_query.Node_DeleteStmt:
		if err := dupCTE(x.DeleteStmt.WithClause); err != nil {
			t.fail(err)
		}
	case *pg_query.Node_ColumnRef:
		// schema.table.column: SQLite knows no schemas; the catalog's
		// relations are views with their own names.
		f := x.ColumnRef.Fields
		if len(f) > 3 {
			t.fail(&pgwire.Error{Code: "0A000", Message: "cross-database references are not implemented"})
			return
		}
		if len(f) == 3 {
			schema := strings.ToLower(f[0].GetString_().GetSval())
			table := f[1].GetString_().GetSval()
			switch schema {
			case "public":
				x.ColumnRef.Fields = f[1:]
			case "pg_catalog", "information_schema":
				if view, ok := CatalogRelation(schema, table); ok {
					x.ColumnRef.Fields = []*pg_query.Node{pg_query.MakeStrNode(view), f[2]}
				} else {
					t.fail(&pgwire.Error{Code: "42P01", Message: fmt.Sprintf("missing FROM-clause entry for table %q", table)})
				}
			default:
				t.fail(&pgwire.Error{Code: "42P01", Message: fmt.Sprintf("missing FROM-clause entry for table %q", table)})
			}
		}
	case *pg_query.Node_NullTest:
		// (a, b) IS NULL: every field is NULL; IS NOT NULL: none is.
		if r := x.NullTest.Arg.GetRowExpr(); r != nil && len(r.Args) > 0 {
			var tests []*pg_query.Node
			for _, a := range r.Args {
				tests = append(tests, &pg_query.Node{Node: &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{Arg: a, Nulltesttype: x.NullTest.Nulltesttype}}})
			}
			n.Node = pg_query.MakeBoolExprNode(pg_query.BoolExprType_AND_EXPR, tests, -1).Node
		}
	case *pg_query.Node_BooleanTest:
		switch x.BooleanTest.Booltesttype {
		case pg_query.BoolTestType_IS_UNKNOWN:
			n.Node = &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{Arg: x.BooleanTest.Arg, Nulltesttype: pg_query.NullTestType_IS_NULL}}
		case pg_query.BoolTestType_IS_NOT_UNKNOWN:
			n.Node = &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{Arg: x.BooleanTest.Arg, Nulltesttype: pg_query.NullTestType_IS_NOT_NULL}}
		}
	case *pg_query.Node_CommonTableExpr:
		if x.CommonTableExpr.Ctequery.GetSelectStmt() == nil {
			t.fail(unsupported("data-modifying statements in WITH"))
		}
	case *pg_query.Node_CollateClause:
		if x.CollateClause.Arg != nil {
			n.Node = x.CollateClause.Arg.Node
		}
	case *pg_query.Node_RangeFunction:
		t.rangeFunction(n, x.RangeFunction)
	case *pg_query.Node_RangeSubselect:
		if x.RangeSubselect.Lateral {
			// Placed by its select (unnestFrom), which knows the FROM list.
			if t.lateralPending == nil {
				t.lateralPending = map[*pg_query.RangeSubselect]bool{}
			}
			t.lateralPending[x.RangeSubselect] = true
			return
		}
		t.subselectAliases(x.RangeSubselect)
	case *pg_query.Node_SubLink:
		s := x.SubLink
		switch s.SubLinkType {
		case pg_query.SubLinkType_ANY_SUBLINK:
			if len(s.OperName) > 0 && lastName(s.OperName) != "=" {
				t.quantified(n, s, false)
				return
			}
			s.OperName = nil
			if err := inArity(s); err != nil {
				t.fail(err)
				return
			}
		case pg_query.SubLinkType_EXPR_SUBLINK:
			t.scalarSubquery(n, s)
		case pg_query.SubLinkType_ALL_SUBLINK:
			t.quantified(n, s, true)
		case pg_query.SubLinkType_ARRAY_SUBLINK:
			// ARRAY(SELECT x ...) as PostgreSQL's text form '{a,b}'.
			sel := s.Subselect.GetSelectStmt()
			if sel == nil || len(leftmost(sel).TargetList) != 1 {
				t.fail(unsupported("ARRAY(subquery) with more than one column"))
				return
			}
			leftmost(sel).TargetList[0].GetResTarget().Name = "_tandem_a"
			e := template("(SELECT '{' || coalesce(group_concat(_tandem_a, ','), '') || '}' FROM _tandem_placeholder)")
			inner := e.GetSubLink().Subselect.GetSelectStmt()
			inner.FromClause = []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
				Subquery: s.Subselect, Alias: &pg_query.Alias{Aliasname: "_tandem_sub"}}}}}
			n.Node = e.Node
		}
	case *pg_query.Node_AArrayExpr:
		nested := len(x.AArrayExpr.Elements) > 0
		for _, e := range x.AArrayExpr.Elements {
			if fn := lastName(e.GetFuncCall().GetFuncname()); e.GetAArrayExpr() == nil && fn != "_pg_array" && fn != "_pg_array_md" {
				nested = false
			}
		}
		if nested {
			// ARRAY[[1,2],[3,4]]: a multidimensional array, {{1,2},{3,4}}.
			n.Node = call("_pg_array_md", x.AArrayExpr.Elements...).Node
			return
		}
		n.Node = call("_pg_array", x.AArrayExpr.Elements...).Node
	case *pg_query.Node_AIndirection:
		ind := x.AIndirection.Indirection
		if len(ind) == 1 && ind[0].GetString_().GetSval() == "x" && x.AIndirection.Arg.GetColumnRef() != nil {
			// (col).x of an _pg_expandarray result: the element itself.
			n.Node = x.AIndirection.Arg.Node
			return
		}
		if len(ind) == 1 {
			if ai := ind[0].GetAIndices(); ai != nil && !ai.IsSlice && ai.Uidx != nil {
				n.Node = call("_pg_array_get", x.AIndirection.Arg, ai.Uidx).Node
				return
			}
		}
		for _, i := range ind {
			if i.GetAIndices() != nil {
				t.fail(unsupported("array slices and multi-dimensional subscripts"))
			}
			if i.GetString_() != nil && lastName(x.AIndirection.Arg.GetFuncCall().GetFuncname()) != "_pg_expandarray" {
				t.fail(unsupported("selecting a field of a composite value ((x).field)"))
			}
		}

	case *pg_query.Node_SetToDefault:
		t.fail(unsupported("DEFAULT in a VALUES list (leave the column out of the column list instead)"))
	case *pg_query.Node_XmlExpr, *pg_query.Node_XmlSerialize:
		t.fail(unsupported("XML functions"))
	case *pg_query.Node_AConst:
		if x.AConst.GetBsval() != nil {
			t.fail(unsupported("bit-string constants (B'...' and X'...')"))
		}
	}
}

// existsTargets gives EXISTS (SELECT FROM ...) a column: PostgreSQL
// allows a select list with none, SQLite does not, and EXISTS reads none
// (drizzle-kit's introspection writes it so).
func existsTargets(raw *pg_query.Node) {
	walkNode(raw, func(n *pg_query.Node) {
		sl := n.GetSubLink()
		if sl == nil || sl.SubLinkType != pg_query.SubLinkType_EXISTS_SUBLINK {
			return
		}
		if sel := sl.Subselect.GetSelectStmt(); sel != nil && sel.Op == pg_query.SetOperation_SETOP_NONE && len(sel.TargetList) == 0 && len(sel.ValuesLists) == 0 {
			sel.TargetList = []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeAConstIntNode(1, -1), -1)}
		}
	})
}

// noColumns: s, or an arm of it, is a SELECT without columns.
func noColumns(s *pg_query.SelectStmt) bool {
	if s == nil {
		return false
	}
	if s.Op != pg_query.SetOperation_SETOP_NONE {
		return noColumns(s.Larg) || noColumns(s.Rarg)
	}
	return len(s.TargetList) == 0 && len(s.ValuesLists) == 0
}

func (t *translator) selectStmt(s *pg_query.SelectStmt) {
	if len(s.LockingClause) > 0 {
		t.locking = true
	}
	s.LockingClause = nil
	if noColumns(s) {
		t.fail(unsupported("a SELECT without columns"))
		return
	}
	t.unnestFrom(s)
	if t.groupingSets(s) {
		t.sortNulls(s)
		return
	}
	// SQLite has no parenthesised compound selects: a nested set
	// operation becomes a subquery.
	wrap := func(arm *pg_query.SelectStmt) *pg_query.SelectStmt {
		if arm == nil || (arm.Op == pg_query.SetOperation_SETOP_NONE && len(arm.SortClause) == 0 && arm.LimitCount == nil && arm.WithClause == nil) {
			return arm
		}
		if arm.Op != pg_query.SetOperation_SETOP_NONE {
			// A set operation of set operations (four UNION ALL arms
			// are ((a, b), c), d): the walk visits nodes, not the arms
			// of one, so each level is made here, its own arms first.
			t.selectStmt(arm)
		}
		t.sortNulls(arm)
		t.subq++
		return &pg_query.SelectStmt{
			TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeAStarNode()}, -1), -1)},
			FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
				Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: arm}}, Alias: &pg_query.Alias{Aliasname: fmt.Sprintf("_tandem_set%d", t.subq)}}}}},
		}
	}
	if s.Op != pg_query.SetOperation_SETOP_NONE {
		t.setOpLiterals(s)
		s.Larg, s.Rarg = wrap(s.Larg), wrap(s.Rarg)
	}
	if t.setOpAll(s) {
		t.sortNulls(s)
		return
	}
	if len(s.ValuesLists) > 0 && (len(s.SortClause) > 0 || s.LimitCount != nil || s.LimitOffset != nil) {
		// SQLite has no ORDER BY or LIMIT on a bare VALUES: select from
		// it (its columns are column1, column2 ... in both dialects).
		t.subq++
		inner := &pg_query.SelectStmt{ValuesLists: s.ValuesLists}
		s.ValuesLists = nil
		s.TargetList = []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeAStarNode()}, -1), -1)}
		s.FromClause = []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: inner}}, Alias: &pg_query.Alias{Aliasname: fmt.Sprintf("_tandem_values%d", t.subq)}}}}}
	}
	t.targetSRFs(s)
	t.distinctOn(s)
	if s.LimitOption == pg_query.LimitOption_LIMIT_OPTION_WITH_TIES {
		t.fail(unsupported("FETCH ... WITH TIES"))
	}

	if c := s.LimitCount.GetAConst(); c != nil && c.Isnull {
		s.LimitCount = pg_query.MakeAConstIntNode(-1, -1) // LIMIT ALL
	}
	if s.LimitOffset != nil && s.LimitCount == nil {
		s.LimitCount = pg_query.MakeAConstIntNode(-1, -1)
	}
	// A LIMIT or OFFSET that is not a constant (a parameter: GORM's
	// First, any paginating ORM) may be NULL, which PostgreSQL reads as
	// no limit and no offset, and SQLite refuses (datatype mismatch; the
	// statement's Describe binds NULL to every parameter).
	orDefault := func(n *pg_query.Node, def int32) *pg_query.Node {
		if n == nil || n.GetAConst() != nil {
			return n
		}
		return &pg_query.Node{Node: &pg_query.Node_CoalesceExpr{CoalesceExpr: &pg_query.CoalesceExpr{
			Args: []*pg_query.Node{n, pg_query.MakeAConstIntNode(int64(def), -1)}}}}
	}
	s.LimitCount, s.LimitOffset = orDefault(s.LimitCount, -1), orDefault(s.LimitOffset, 0)
	t.sortNulls(s)
}

// setOpLiterals: a string literal in a set operation's column takes the
// type of the other arm's column when that is a number (SELECT 1 UNION
// SELECT 'a' is 22P02 in PostgreSQL).
func (t *translator) setOpLiterals(s *pg_query.SelectStmt) {
	l, r := s.Larg, s.Rarg
	if l == nil || r == nil || l.Op != pg_query.SetOperation_SETOP_NONE || r.Op != pg_query.SetOperation_SETOP_NONE ||
		len(l.TargetList) != len(r.TargetList) {
		return
	}
	lt, rt := t.selectTypes(l), t.selectTypes(r)
	if len(lt) != len(l.TargetList) || len(rt) != len(r.TargetList) {
		return
	}
	isNum := func(c ColType) bool {
		return c.Type != nil && (c.Type.Name == "int2" || c.Type.Name == "int4" || c.Type.Name == "int8" || c.Type.Name == "numeric" || c.Type.Name == "float4" || c.Type.Name == "float8")
	}
	lit := func(n *pg_query.Node) *pg_query.ResTarget {
		rt := n.GetResTarget()
		if rt != nil && rt.Val.GetAConst() != nil && rt.Val.GetAConst().GetSval() != nil {
			return rt
		}
		return nil
	}
	for i := range l.TargetList {
		if x := lit(r.TargetList[i]); x != nil && lit(l.TargetList[i]) == nil && isNum(lt[i]) {
			x.Val = call("_cast_"+lt[i].Type.Name, x.Val)
		} else if x := lit(l.TargetList[i]); x != nil && lit(r.TargetList[i]) == nil && isNum(rt[i]) {
			x.Val = call("_cast_"+rt[i].Type.Name, x.Val)
		}
	}
}

// sortNulls makes ORDER BY place NULLs where PostgreSQL does, and sort
// an enum column in its labels' order.
func (t *translator) sortNulls(s *pg_query.SelectStmt) {
	t.sortEnums(s)
	t.nullsLast(s.SortClause)
	for _, w := range s.WindowClause {
		if wd := w.GetWindowDef(); wd != nil {
			t.nullsLast(wd.OrderClause)
		}
	}
}

// nullsLast gives an ORDER BY list (a query's, a window's, an
// aggregate's) PostgreSQL's default NULL placement: PostgreSQL sorts NULLs
// as larger than any value, SQLite as smaller, so without it rank() over
// (ORDER BY x DESC) and string_agg(... ORDER BY x) disagreed wherever x
// was NULL.
func (t *translator) nullsLast(order []*pg_query.Node) {
	for _, sb := range order {
		b := sb.GetSortBy()
		if b == nil {
			continue
		}
		if b.SortbyDir == pg_query.SortByDir_SORTBY_USING {
			t.fail(unsupported("ORDER BY ... USING"))
		}
		if b.SortbyNulls == pg_query.SortByNulls_SORTBY_NULLS_DEFAULT || b.SortbyNulls == pg_query.SortByNulls_SORT_BY_NULLS_UNDEFINED {
			if b.SortbyDir == pg_query.SortByDir_SORTBY_DESC {
				b.SortbyNulls = pg_query.SortByNulls_SORTBY_NULLS_FIRST
			} else {
				b.SortbyNulls = pg_query.SortByNulls_SORTBY_NULLS_LAST
			}
		}
	}
}

func (t *translator) rangeVar(r *pg_query.RangeVar) {
	switch strings.ToLower(r.Schemaname) {
	case "", "public":
		if r.Schemaname == "" {
			if name, ok := CatalogRelation("", r.Relname); ok {
				r.Relname = name
			}
		}
		r.Schemaname = ""
	case "pg_catalog", "information_schema":
		name, ok := CatalogRelation(strings.ToLower(r.Schemaname), r.Relname)
		if !ok {
			t.fail(unsupported("the catalog relation %s.%s", r.Schemaname, r.Relname))
			return
		}
		if r.Alias == nil && !strings.EqualFold(name, r.Relname) {
			// information_schema.columns is the view _is_columns: the query
			// may still name it columns (TypeORM: SELECT columns.* ...).
			r.Alias = &pg_query.Alias{Aliasname: strings.ToLower(r.Relname)}
		}
		r.Schemaname, r.Relname = "", name
	default:
		if r.Catalogname == "" {
			// A reference to a relation: PostgreSQL names the relation
			// (CREATE in another schema is 3F000, tableName).
			t.fail(&pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation \"%s.%s\" does not exist", r.Schemaname, r.Relname), Hint: "the SQLite back end has only the public schema"})
		}
	}
	r.Catalogname = ""
}

// renamedColumns rewrites FROM t AS x(a, b), which renames t's first
// columns, into the subquery (SELECT c1 AS a, c2 AS b, c3 ... FROM t) AS
// x: SQLite's table aliases take no column list.
func (t *translator) renamedColumns(n *pg_query.Node, r *pg_query.RangeVar) {
	var cols []Column
	if t.sch != nil {
		cols = t.sch.Columns(r.Relname)
	}
	if cols == nil {
		if _, ok := CatalogRelation("", r.Relname); ok || r.Relname != "" && strings.HasPrefix(r.Relname, "_") {
			t.fail(unsupported("column aliases for a catalog relation"))
			return
		}
		t.fail(&pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", r.Relname)})
		return
	}
	names := strs(r.Alias.Colnames)
	if len(names) > len(cols) {
		t.fail(&pgwire.Error{Code: "42P10", Message: fmt.Sprintf("table \"%s\" has %d columns available but %d columns specified", r.Alias.Aliasname, len(cols), len(names))})
		return
	}
	var targets []*pg_query.Node
	for i, c := range cols {
		ref := pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(c.Name)}, -1)
		name := c.Name
		if i < len(names) {
			name = names[i]
		}
		targets = append(targets, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: name, Val: ref}}})
	}
	inner := &pg_query.RangeVar{Schemaname: r.Schemaname, Relname: r.Relname, Inh: true, Relpersistence: r.Relpersistence}
	n.Node = &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
		Subquery: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
			TargetList: targets,
			FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: inner}}},
			Op:         pg_query.SetOperation_SETOP_NONE,
		}}},
		Alias: &pg_query.Alias{Aliasname: r.Alias.Aliasname},
	}}
}

func (t *translator) tableName(r *pg_query.RangeVar) (string, error) {
	if r == nil {
		return "", unsupported("this table reference")
	}
	switch strings.ToLower(r.Schemaname) {
	case "", "public":
		return r.Relname, nil
	}
	return "", &pgwire.Error{Code: "3F000", Message: fmt.Sprintf("schema %q does not exist", r.Schemaname), Hint: "the SQLite back end has only the public schema"}
}

// regclassLookup is the SQL of x::regclass (col "_tandem_n": the name) or
// x::regclass::oid ("_tandem_o") for an x that is an OID or a name.
func regclassLookup(col string) string {
	return "(SELECT _r." + col + " FROM (SELECT oid AS _tandem_o, relname AS _tandem_n FROM pg_class) _r WHERE _r._tandem_o = " +
		"CASE WHEN typeof(__arg0__) = 'text' THEN _tandem_oid(_tandem_relname(__arg0__)) ELSE __arg0__ END)"
}

func (t *translator) typeCast(n *pg_query.Node, c *pg_query.TypeCast) {
	names := strs(c.TypeName.Names)
	switch strings.ToLower(names[len(names)-1]) {
	case "regclass":
		if sv := c.Arg.GetAConst().GetSval(); sv != nil {
			n.Node = call("_tandem_oid", strConst(RegclassName(sv.Sval))).Node
			return
		}
		// An OID, or a name (text: pg_get_serial_sequence(...)::regclass):
		// the relation's name. pg_class's columns are renamed inside so
		// that an unqualified oid in the argument (SELECT oid::regclass
		// FROM pg_class) is the outer row's.
		if hasAggregate(c.Arg) {
			// The lookup is a subquery, where SQLite cannot see the
			// outer query's aggregate.
			t.fail(unsupported("::regclass of an aggregate"))
			return
		}
		if t.regclassOf == nil {
			t.regclassOf = map[*pg_query.Node]*pg_query.Node{}
		}
		t.regclassOf[n] = c.Arg
		n.Node = template(regclassLookup("_tandem_n"), c.Arg).Node
		return
	case "regtype":
		if len(c.TypeName.ArrayBounds) > 0 {
			n.Node = call("_tandem_regtype_array", c.Arg).Node // '{int,int8}'::regtype[]
			return
		}
		n.Node = call("_tandem_regtype", c.Arg).Node
		return
	case "jsonpath":
		// A literal path is read now, as PostgreSQL reads it at parse
		// analysis: its errors come at Describe.
		if len(c.TypeName.ArrayBounds) == 0 && !t.checkPathLiteral(c.Arg) {
			return
		}
	case "regnamespace":
		// As regtype: an OID prints the schema's name, a name is its OID.
		n.Node = call("_tandem_regnamespace", c.Arg).Node
		return
	case "regoper":
		n.Node = call("_tandem_regoper", c.Arg).Node
		return
	case "regproc", "regprocedure", "regrole":
		n.Node = c.Arg.Node
		return
	}
	typ, mod, err := resolveType(c.TypeName)
	if a, ok := t.regclassOf[c.Arg]; ok && err == nil && typ.Cat == 'N' {
		// x::regclass::oid: the relation's OID.
		n.Node = template(regclassLookup("_tandem_o"), a).Node
		return
	}
	if err != nil {
		if e, ok := t.enumOf(c.TypeName); ok {
			n.Node = enumCast(c.Arg, &e).Node
			return
		}
		t.fail(err)
		return
	}
	if sv := c.Arg.GetAConst().GetSval(); sv != nil && (typ.Cat == 'A' || typ.Name == "bytea") {
		// '{1,x}'::int[] fails when the statement is parsed, as in PostgreSQL.
		if err := checkLiteral(Column{Type: typ}, sv.Sval); err != nil {
			t.fail(err)
			return
		}
	}
	if f := c.Arg.GetFuncCall(); f != nil && lastName(f.Funcname) == "_tandem_regnamespace" && (typ.Cat == 'S' || typ.Cat == 'N') {
		// x::regnamespace::text: the schema's name; ::oid its OID.
		fn := "_tandem_regnamespace_name"
		if typ.Cat == 'N' {
			fn = "_tandem_regnamespace_oid"
		}
		n.Node = call(fn, f.Args...).Node
		if typ.Name != "oid" && typ.Cat == 'N' {
			n.Node = call("_cast_"+typ.Name, n).Node
		}
		return
	}
	if f := c.Arg.GetFuncCall(); f != nil && lastName(f.Funcname) == "_tandem_regtype" && typ.Cat == 'S' {
		// x::regtype::text: the type's name, as regtype's output.
		n.Node = call("_tandem_regtype_name", f.Args...).Node
		return
	}
	if f := c.Arg.GetFuncCall(); f != nil && lastName(f.Funcname) == "_tandem_oid" && len(f.Args) == 1 && (typ.Cat == 'S') {
		// 'name'::regclass::text: the relation's name (it must exist).
		if sv := f.Args[0].GetAConst().GetSval(); sv != nil {
			n.Node = template("coalesce((SELECT _t.relname FROM pg_class _t WHERE _t.oid = __arg0__), _pg_raise('42P01', __arg1__))",
				c.Arg, strConst(fmt.Sprintf("relation %q does not exist", sv.Sval))).Node
			return
		}
	}
	if a, ok := t.castArg[c]; ok && typ.Cat == 'S' {
		// A numeric prints with its scale (12.50::text is 12.50).
		if sc := scaleOf(a); sc >= 0 {
			c.Arg = call("_pg_numeric_text", c.Arg, pg_query.MakeAConstIntNode(int64(sc), -1))
		}
		if a.Type != nil && a.Type.Name == "bool" {
			c.Arg = boolText(c.Arg) // true::text is true, not SQLite's 1
		}
		if a.Type != nil && a.Type.Name == "timestamptz" {
			c.Arg = call("_pg_tstz_text", c.Arg) // in the session's zone
		}
		if a.Type != nil && a.Type.Name == "bytea" {
			c.Arg = call("_pg_bytea_text", c.Arg) // bytea's output form, \x and hex
		}
	}
	if a, ok := t.castArg[c]; ok && a.Type != nil && a.Type.Name == "timestamptz" {
		switch typ.Name {
		case "date", "timestamp", "time":
			// The instant's wall clock in the session's zone.
			c.Arg = call("_pg_tstz_local", c.Arg)
		}
	}
	cast := call("_cast_"+typ.Name, c.Arg)
	if typ.Name == "bytea" {
		cast = byteaValue(c.Arg)
	}
	if typ.Name == "numeric" && mod >= 4 {
		p, s := int64((mod-4)>>16), int64((mod-4)&0xffff)
		cast = call("_pg_numeric_typmod", cast, pg_query.MakeAConstIntNode(p, -1), pg_query.MakeAConstIntNode(s, -1))
	}
	if (typ.Name == "varchar" || typ.Name == "bpchar") && mod > 4 {
		cast = call("substr", cast, pg_query.MakeAConstIntNode(1, -1), pg_query.MakeAConstIntNode(int64(mod-4), -1))
	}
	n.Node = cast.Node
}

// resolveType maps a TypeName to a tandem Type and typmod.
func resolveType(tn *pg_query.TypeName) (*Type, int32, error) {
	names := strs(tn.Names)
	name := strings.ToLower(names[len(names)-1])
	if len(names) == 2 && !strings.EqualFold(names[0], "pg_catalog") && !strings.EqualFold(names[0], "public") {
		return nil, 0, unsupported("the type %s", strings.Join(names, "."))
	}
	typ := TypeByName[name]
	if typ == nil {
		return nil, 0, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("type %q does not exist", name), Hint: "the SQLite back end knows the types listed in docs/sql.md"}
	}
	if len(tn.ArrayBounds) > 0 {
		if typ.Array == 0 || Types[typ.Array] == nil {
			return nil, 0, unsupported("arrays of %s", name)
		}
		typ = Types[typ.Array]
	}
	mod := int32(-1)
	var mods []int32
	for _, m := range tn.Typmods {
		if c := m.GetAConst(); c != nil && c.GetIval() != nil {
			mods = append(mods, c.GetIval().Ival)
		}
	}
	switch typ.Name {
	case "varchar", "bpchar":
		if len(mods) > 0 {
			mod = mods[0] + 4
		} else if typ.Name == "bpchar" && name != "bpchar" {
			mod = 1 + 4 // char without length is char(1)
		}
	case "numeric":
		if len(mods) == 1 {
			mod = (mods[0] << 16) + 4
		} else if len(mods) == 2 {
			mod = (mods[0]<<16 | mods[1]) + 4
		}
	case "timestamp", "timestamptz", "time", "timetz":
		if len(mods) > 0 {
			mod = mods[0]
		}
	}
	return typ, mod, nil
}

func (t *translator) aExpr(n *pg_query.Node, e *pg_query.A_Expr) {
	op := lastName(e.Name)
	if e.Lexpr == nil && (e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || strings.Contains(op, "~~")) {
		// ~~ 'x' and its family as prefix operators: PostgreSQL has none.
		t.fail(&pgwire.Error{Code: "42883", Message: fmt.Sprintf("operator does not exist: %s unknown", op),
			Hint: "No operator matches the given name and argument type. You might need to add an explicit type cast."})
		return
	}
	switch e.Kind {
	case pg_query.A_Expr_Kind_AEXPR_ILIKE:
		e.Kind = pg_query.A_Expr_Kind_AEXPR_LIKE
		if op == "!~~*" {
			e.Name = []*pg_query.Node{pg_query.MakeStrNode("!~~")}
		} else {
			e.Name = []*pg_query.Node{pg_query.MakeStrNode("~~")}
		}
		e.Lexpr = call("lower", e.Lexpr)
		if f := e.Rexpr.GetFuncCall(); f != nil && lastName(f.Funcname) == "like_escape" && len(f.Args) == 2 {
			f.Args[0] = call("lower", f.Args[0]) // ILIKE p ESCAPE c: the pattern, not the escape
		} else {
			e.Rexpr = call("lower", e.Rexpr)
		}
		t.like(n, e)
	case pg_query.A_Expr_Kind_AEXPR_LIKE:
		t.like(n, e)
	case pg_query.A_Expr_Kind_AEXPR_DISTINCT:
		n.Node = call("_pg_distinct", e.Lexpr, e.Rexpr).Node
	case pg_query.A_Expr_Kind_AEXPR_NOT_DISTINCT:
		n.Node = call("_pg_not_distinct", e.Lexpr, e.Rexpr).Node
	case pg_query.A_Expr_Kind_AEXPR_SIMILAR:
		// x SIMILAR TO p: the regex match of similar_to_escape(p).
		fn := "_pg_regex"
		if op == "!~" {
			fn = "_pg_not_regex"
		}
		n.Node = call(fn, e.Lexpr, e.Rexpr, strConst("")).Node
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		if known, ok := t.opTypes[e]; ok {
			for _, b := range e.Rexpr.GetList().GetItems() {
				if sv := b.GetAConst().GetSval(); sv != nil {
					normalizeTimeLiteral(Column{Type: known[0].Type}, sv, t.loc)
				}
			}
		}
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
		t.fail(unsupported("BETWEEN SYMMETRIC"))
	case pg_query.A_Expr_Kind_AEXPR_OP_ANY, pg_query.A_Expr_Kind_AEXPR_OP_ALL:
		anyEq := e.Kind == pg_query.A_Expr_Kind_AEXPR_OP_ANY && op == "="
		allNe := e.Kind == pg_query.A_Expr_Kind_AEXPR_OP_ALL && (op == "<>" || op == "!=")
		if !anyEq && !allNe {
			cmp := map[string]string{"=": "=", "<>": "<>", "!=": "<>", "<": "<", ">": ">", "<=": "<=", ">=": ">="}[op]
			if cmp == "" {
				t.fail(unsupported("%s ANY/ALL (array)", op))
				return
			}
			// Three-valued, as PostgreSQL: ANY is true when one element
			// compares true, else NULL when one compares NULL; ALL is false
			// when one compares false, else NULL when one compares NULL.
			yes, no, want := "1", "0", "1"
			if e.Kind == pg_query.A_Expr_Kind_AEXPR_OP_ALL {
				yes, no, want = "0", "1", "0"
			}
			cmpv := "coalesce(__arg0__ " + cmp + " _e.value, -1)"
			n.Node = template("CASE WHEN __arg1__ IS NULL THEN NULL ELSE (SELECT CASE WHEN count(*) FILTER (WHERE "+cmpv+" = "+want+") > 0 THEN "+yes+
				" WHEN count(*) FILTER (WHERE "+cmpv+" = -1) > 0 THEN NULL ELSE "+no+" END FROM json_each(_pg_array_json(__arg1__)) AS _e) END",
				e.Lexpr, e.Rexpr).Node
			return
		}
		if f := e.Rexpr.GetFuncCall(); f != nil && lastName(f.Funcname) == "_pg_array" && len(f.Args) > 0 {
			e.Kind = pg_query.A_Expr_Kind_AEXPR_IN
			if allNe {
				e.Name = []*pg_query.Node{pg_query.MakeStrNode("<>")}
			}
			e.Rexpr = pg_query.MakeListNode(f.Args)
			return
		}
		fn := "_pg_array_has"
		if allNe {
			fn = "_pg_array_lacks"
		}
		n.Node = call(fn, e.Rexpr, e.Lexpr).Node
	case pg_query.A_Expr_Kind_AEXPR_OP:
		e.Name = []*pg_query.Node{pg_query.MakeStrNode(op)}
		switch op {
		case "+", "-", "*", "/", "%":
			t.unknownOperand(e)
		case "=", "<>", "!=", "<", ">", "<=", ">=":
			t.boolLiteral(e)
			t.timeLiteral(e)
			t.typedLiteral(e)
		}
		switch op {
		case "<", ">", "<=", ">=":
			t.enumCompare(e)
		}
		switch op {
		case "~", "~*", "!~", "!~*":
			if e.Lexpr == nil {
				if op != "~" {
					t.fail(unsupported("the prefix operator %s", op))
				}
				return // prefix ~ is bitwise NOT in both dialects
			}
			flags := ""
			if strings.HasSuffix(op, "*") {
				flags = "i"
			}
			fn := "_pg_regex"
			if op[0] == '!' {
				fn = "_pg_not_regex"
			}
			n.Node = call(fn, e.Lexpr, e.Rexpr, strConst(flags)).Node
		case "^":
			n.Node = call("power", e.Lexpr, e.Rexpr).Node
		case "#", "<<", ">>":
			// On integers: exclusive or, shifts (on other types they are
			// geometric, network or range operators).
			l, r := t.operandTypes(e)
			isInt := func(c ColType) bool {
				return c.Type != nil && (c.Type.Name == "int2" || c.Type.Name == "int4" || c.Type.Name == "int8")
			}
			if e.Lexpr == nil || !isInt(l) || !isInt(r) {
				t.fail(unsupported("the operator %s", op))
				return
			}
			if op == "#" {
				n.Node = template("((__arg0__) | (__arg1__)) - ((__arg0__) & (__arg1__))", e.Lexpr, e.Rexpr).Node
			}
		case "||":
			t.concatOp(n, e)
		case "/", "%":
			if op == "/" && t.exactDiv[e] {
				if known, ok := t.opTypes[e]; ok && exactDivTypes(known[0], known[1]) {
					// A numeric quotient only printed: PostgreSQL's digits.
					n.Node = call("_pg_numeric_div_exact", e.Lexpr, e.Rexpr,
						pg_query.MakeAConstIntNode(int64(scaleOf(known[0])), -1), pg_query.MakeAConstIntNode(int64(scaleOf(known[1])), -1)).Node
					return
				}
			}
			if op == "/" && e.Lexpr != nil {
				l := t.exprType(e.Lexpr, nil)
				if known, ok := t.opTypes[e]; ok && known[0].Type != nil {
					l = known[0] // a column's type, read with the statement's tables
				}
				if l.Type != nil && l.Type.Name == "interval" {
					n.Node = call("_pg_interval_div", e.Lexpr, e.Rexpr).Node // interval / number
					return
				}
			}
			if e.Lexpr != nil {
				// SQLite answers NULL for a division by zero; PostgreSQL
				// fails with 22012.
				fn := map[string]string{"/": "_pg_div", "%": "_pg_mod"}[op]
				if known, ok := t.opTypes[e]; ok && op == "/" && (fractional(known[0]) || fractional(known[1])) {
					// A numeric holding a whole number is an integer in
					// SQLite (11.00 is 11): its quotient must not be
					// an integer division.
					fn = "_pg_fdiv"
				}
				n.Node = call(fn, e.Lexpr, e.Rexpr).Node
			}
		case "~~", "!~~":
			e.Kind = pg_query.A_Expr_Kind_AEXPR_LIKE
			t.like(n, e)
		case "+", "-":
			if op == "-" && t.isJSONB(e, true) {
				n.Node = call("_pg_jsonb_delete", e.Lexpr, e.Rexpr).Node
				return
			}
			t.dateArith(n, e, op)
			t.intRange(n, e)
		case "*":
			t.intervalMul(n, e)
			t.intRange(n, e)
		case "~~*", "!~~*":
			e.Kind = pg_query.A_Expr_Kind_AEXPR_ILIKE
			t.aExpr(n, e)
		case "#>", "#>>", "@>", "<@", "?":
			if e.Lexpr != nil && (op == "@>" || op == "<@") && t.arrayOperands(e) {
				a, b := e.Lexpr, e.Rexpr
				if op == "<@" {
					a, b = b, a
				}
				n.Node = call("_pg_array_contains", a, b).Node
				return
			}
			if e.Lexpr != nil {
				l, r := t.operandTypes(e)
				isJSON := func(c ColType) bool { return c.Type != nil && (c.Type.Name == "jsonb" || c.Type.Name == "json") }
				jsonOK := isJSON(l) || (op == "<@" && isJSON(r))
				if op != "@>" && op != "<@" && l.Type != nil && l.Type.Name == "json" {
					jsonOK = op == "#>" || op == "#>>" // ? exists for jsonb only
				}
				if (op == "@>" || op == "<@") && (l.Type == nil || l.Type.Name != "jsonb") && (r.Type == nil || r.Type.Name != "jsonb") {
					jsonOK = false // containment is jsonb's (and arrays', not supported)
				}
				if jsonOK {
					fn := map[string]string{"#>": "_pg_json_path", "#>>": "_pg_json_path_text", "@>": "_pg_jsonb_contains", "?": "_pg_jsonb_exists"}[op]
					if op == "<@" {
						n.Node = call("_pg_jsonb_contains", e.Rexpr, e.Lexpr).Node
						return
					}
					n.Node = call(fn, e.Lexpr, e.Rexpr).Node
					return
				}
			}
			t.fail(unsupported("the operator %s", op))
		case "->>":
			if e.Lexpr != nil {
				n.Node = call("_pg_json_field_text", e.Lexpr, e.Rexpr).Node
				return
			}
			t.fail(unsupported("the operator %s", op))
		case "@?", "@@":
			if t.jsonPathOp(n, e, op) {
				return
			}
			t.fail(unsupported("the operator %s", op))
		case "?|", "?&", "#-", "&&", "|/", "||/", "@":
			if op == "&&" && e.Lexpr != nil && t.arrayOperands(e) {
				n.Node = call("_pg_array_overlap", e.Lexpr, e.Rexpr).Node
				return
			}
			if e.Lexpr == nil && op == "@" {
				n.Node = call("abs", e.Rexpr).Node
				return
			}
			if e.Lexpr == nil && op == "|/" {
				n.Node = call("sqrt", e.Rexpr).Node
				return
			}
			t.fail(unsupported("the operator %s", op))
		default:
			if !sqliteOps[op] {
				t.fail(unsupported("the operator %s", op))
			}
		}
	}
}

// sqliteOps are the binary and unary operators SQLite shares with
// PostgreSQL (the others are rewritten above or refused).
var sqliteOps = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true, "||": true, "=": true, "<>": true, "!=": true,
	"<": true, ">": true, "<=": true, ">=": true, "&": true, "|": true, "~": true, "->": true, "->>": true, "<<": true, ">>": true}

// funcRename maps PostgreSQL functions to SQLite's or tandem's own (funcs.go).
var funcRename = map[string]string{
	"pg_notify": "_tandem_notify",
	"strpos":    "instr", "btrim": "trim", "char_length": "length", "character_length": "length",
	"string_agg": "group_concat", "now": "_pg_now", "transaction_timestamp": "_pg_now",
	"statement_timestamp": "_pg_statement_timestamp", "clock_timestamp": "_pg_clock_timestamp", "random": "_pg_random",
	"date_part": "_pg_date_part", "extract": "_pg_date_part", "bool_and": "min", "bool_or": "max", "every": "min",
	"ceiling": "ceil", "substring": "_pg_substring", "substr": "_pg_substring", "log10": "_pg_log10", "format": "_pg_format",
}

var unsupportedFuncs = map[string]string{
	"regexp_matches": "regexp_matches", "to_tsvector": "full-text search",
	"to_tsquery":  "full-text search",
	"row_to_json": "row_to_json of anything but a FROM item of known columns", "json_populate_record": "json_populate_record", "jsonb_populate_record": "jsonb_populate_record",
	"txid_current": "txid_current",
}

func (t *translator) funcCall(n *pg_query.Node, f *pg_query.FuncCall) {
	t.nullsLast(f.AggOrder)
	if f.Over != nil {
		t.nullsLast(f.Over.OrderClause)
	}
	names := strs(f.Funcname)
	name := strings.ToLower(names[len(names)-1])
	if strings.HasPrefix(name, "pg_advisory_") || strings.HasPrefix(name, "pg_try_advisory_") ||
		name == "pg_terminate_backend" || name == "pg_cancel_backend" || name == "pg_notify" || strings.HasPrefix(name, "pg_sleep") {
		t.volatile = true // a side effect: never run to be described
	}
	if name == "_pg_expandarray" {
		return // a set-returning function in a select list: targetSRFs
	}
	if f.Over == nil && !f.AggWithinGroup && len(names) == 1 {
		switch name {
		case "row_number", "ntile", "lag", "lead", "first_value", "last_value", "nth_value", "rank", "dense_rank", "percent_rank", "cume_dist":
			t.fail(&pgwire.Error{Code: "42809", Message: fmt.Sprintf("window function %s requires an OVER clause", name)})
			return
		}
	}
	if _, ok := jsonPathKinds[name]; ok && len(names) == 1 {
		if !t.jsonPathCall(n, f, name) {
			return
		}
	} else if name != "make_interval" && slices.ContainsFunc(f.Args, func(a *pg_query.Node) bool { return a.GetNamedArgExpr() != nil }) {
		t.fail(unsupported("named arguments (name => value) to %s", name))
		return
	}
	if isSetReturning(name) && len(names) == 1 {
		if t.srfPending == nil {
			t.srfPending = map[*pg_query.FuncCall]string{}
		}
		t.srfPending[f] = name
		return
	}
	if len(names) == 2 && !strings.EqualFold(names[0], "pg_catalog") && !strings.EqualFold(names[0], "public") {
		t.fail(&pgwire.Error{Code: "42883", Message: fmt.Sprintf("function %s does not exist", strings.Join(names, "."))})
		return
	}
	if what, ok := unsupportedFuncs[name]; ok {
		t.fail(unsupported("%s", what))
		return
	}
	if a, ok := t.aggArg[f]; ok && a.Type != nil {
		// PostgreSQL has no sum/avg of text or boolean, nor min/max of
		// boolean (SQLite would answer with numbers).
		bad := a.Type.Name == "bool" || a.Type.Name == "json" || a.Type.Name == "jsonb"
		if name == "sum" || name == "avg" {
			bad = bad || a.Type.Cat == 'S' || a.Type.Cat == 'D' || a.Type.Name == "uuid" || a.Type.Name == "bytea"
		}
		if bad {
			t.fail(&pgwire.Error{Code: "42883", Message: fmt.Sprintf("function %s(%s) does not exist", name, a.Type.SQL),
				Hint: "No function matches the given name and argument types. You might need to add explicit type casts."})
			return
		}
	}
	if name == "avg" && t.exactAvg[f] {
		if a, ok := t.aggArg[f]; ok && a.Type != nil && (a.Type.Name == "int2" || a.Type.Name == "int4" || a.Type.Name == "int8" || a.Type.Name == "numeric") {
			// Printed as PostgreSQL prints avg: exact digits, its scale.
			f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_pg_avg_exact")}
			f.Args = append(f.Args, pg_query.MakeAConstIntNode(int64(scaleOf(a)), -1))
			return
		}
	}
	if f.AggDistinct && name == "string_agg" && len(f.Args) == 2 && f.Over == nil {
		// SQLite's group_concat takes DISTINCT with one argument only.
		f.AggDistinct = false
		f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_pg_string_agg_distinct")}
		return
	}
	if f.AggDistinct && len(f.Args) > 1 {
		t.fail(unsupported("DISTINCT in an aggregate with more than one argument"))
		return
	}
	if f.AggWithinGroup {
		t.orderedSetAgg(f, name)
		return
	}
	if f.Over != nil && f.Over.FrameOptions&0x10000 != 0 {
		// FRAMEOPTION_EXCLUDE_* are supported by SQLite too.
	}
	sqlSyntax := f.Funcformat == pg_query.CoercionForm_COERCE_SQL_SYNTAX
	f.Funcformat = pg_query.CoercionForm_COERCE_EXPLICIT_CALL
	if name == "pg_typeof" && len(f.Args) == 1 {
		typ := "unknown"
		c := t.exprType(f.Args[0], nil)
		if known, ok := t.typeofArg[f]; ok && known.Type != nil {
			c = known
		}
		if c.Type != nil {
			typ = c.Type.SQL
		}
		n.Node = strConst(typ).Node
		return
	}
	if tpl, ok := catalogTemplates[name]; ok {
		if name == "pg_get_constraintdef" && len(f.Args) >= 2 {
			// pretty: a CHECK's expression without the outer parentheses
			// PostgreSQL adds (psql's \d).
			tpl = "(SELECT CASE WHEN _t._k = 'c' AND __arg1__ THEN 'CHECK (' || pg_get_expr(_t._b, 0, 1) || ')' ELSE _t._d END FROM (SELECT oid AS _o, contype AS _k, conbin AS _b, _condef AS _d FROM pg_constraint) _t WHERE _t._o = __arg0__)"
		}
		if name == "pg_get_indexdef" && len(f.Args) >= 2 {
			// pg_get_indexdef(index, column, pretty): column 0 is the whole
			// definition, column k the k-th key column (pgjdbc's and
			// Hibernate's index metadata).
			tpl = "(SELECT CASE WHEN __arg1__ = 0 THEN _t._d ELSE split_part(_t._c, ', ', __arg1__) END FROM (SELECT x.indexname AS _n, x.indexdef AS _d, i.cols AS _c FROM pg_indexes x JOIN _pg_index_all i ON i.relname = x.indexname AND i.tbl = x.tablename) _t WHERE _tandem_oid(_t._n) = __arg0__)"
			if len(f.Args) >= 3 {
				// pretty (psql's \d): its expressions and predicate so.
				tpl = strings.Replace(tpl, "THEN _t._d ELSE", "THEN _tandem_pretty_indexdef(_t._d, __arg2__) ELSE", 1)
			}
		}
		n.Node = template(tpl, f.Args...).Node
		return
	}
	if (name == "json_object_agg" || name == "jsonb_object_agg") && len(f.Args) == 2 && f.Over == nil && !f.AggDistinct {
		// An aggregate of tandem's own, over the value as json text.
		val := f.Args[1]
		if !t.jsonArg[f] {
			val = call("to_json", val)
		}
		f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_pg_" + name)}
		f.Args = []*pg_query.Node{f.Args[0], val}
		return
	}
	if (name == "json_agg" || name == "jsonb_agg") && len(f.Args) == 1 && f.Over == nil {
		// '[' || group_concat(each value's json, ', ') || ']', PostgreSQL's
		// layout for both (NULL for no rows, as PostgreSQL).
		if f.AggDistinct {
			t.fail(unsupported("%s(DISTINCT ...)", name))
			return
		}
		elem := f.Args[0]
		if !t.jsonArg[f] {
			elem = call("to_json", elem)
		}
		elem = call("coalesce", elem, strConst("null")) // NULL is a json null in the array
		sep := ", "
		if t.rowAgg[f] && name == "json_agg" {
			sep = ", \n " // rows: each on a line, as PostgreSQL's json_agg
		}
		f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("group_concat")}
		f.Args = []*pg_query.Node{elem, strConst(sep)}
		agg := &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: f}}
		cat := func(l, r *pg_query.Node) *pg_query.Node {
			return pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("||")}, l, r, -1)
		}
		n.Node = cat(cat(strConst("["), agg), strConst("]")).Node
		return
	}
	if name == "array_agg" && len(f.Args) == 1 {
		// The array's text form: '{' || group_concat(element, ',') || '}'
		// (NULL for no rows, as PostgreSQL).
		f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("group_concat")}
		f.Args = []*pg_query.Node{call("_pg_array_elem", f.Args[0]), strConst(",")}
		if f.AggDistinct {
			f.Args = f.Args[:1] // SQLite's DISTINCT takes one argument: "," is its separator
		}
		agg := &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: f}}
		cat := func(l, r *pg_query.Node) *pg_query.Node {
			return pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("||")}, l, r, -1)
		}
		n.Node = cat(cat(strConst("{"), agg), strConst("}")).Node
		return
	}
	switch name {
	case "make_interval":
		// Named arguments (days => 3) in their positions, 0 for the rest.
		names := []string{"years", "months", "weeks", "days", "hours", "mins", "secs"}
		named := false
		for _, a := range f.Args {
			if a.GetNamedArgExpr() != nil {
				named = true
			}
		}
		if !named {
			break
		}
		args := make([]*pg_query.Node, len(names))
		for i, a := range f.Args {
			na := a.GetNamedArgExpr()
			if na == nil {
				if i < len(args) {
					args[i] = a
				}
				continue
			}
			j := slices.Index(names, strings.ToLower(na.Name))
			if j < 0 {
				t.fail(&pgwire.Error{Code: "42883", Message: fmt.Sprintf("function make_interval has no argument named %q", na.Name)})
				return
			}
			args[j] = na.Arg
		}
		last := 0
		for i, a := range args {
			if a != nil {
				last = i
			}
		}
		for i := range args[:last+1] {
			if args[i] == nil {
				args[i] = pg_query.MakeAConstIntNode(0, -1)
			}
		}
		f.Args = args[:last+1]
	case "timezone":
		if len(f.Args) != 2 {
			break
		}
		a := t.aggArg[f]
		fn := "_pg_at_zone_tz"
		if a.Type != nil {
			switch a.Type.Name {
			case "timestamp":
				fn = "_pg_at_zone_ts"
			case "timestamptz", "date", "text", "unknown":
			default:
				t.fail(unsupported("AT TIME ZONE of a %s", a.Type.SQL))
				return
			}
		}
		if f.Args[0].GetTypeCast() == nil && f.Args[0].GetAConst() == nil && f.Args[0].GetColumnRef() == nil && f.Args[0].GetParamRef() == nil && f.Args[0].GetFuncCall() == nil {
			t.fail(unsupported("AT TIME ZONE with this zone"))
			return
		}
		isInterval := false
		if tc := f.Args[0].GetTypeCast(); tc != nil && len(tc.TypeName.Names) > 0 && strings.EqualFold(lastName(tc.TypeName.Names), "interval") {
			isInterval = true
		}
		if fc := f.Args[0].GetFuncCall(); fc != nil && lastName(fc.Funcname) == "_cast_interval" {
			isInterval = true // the cast, translated already
		}
		if isInterval {
			// AT TIME ZONE INTERVAL '+03:00': hours east, not POSIX's west.
			f.Args[0] = call("_pg_interval_zone", f.Args[0])
		}
		n.Node = call(fn, f.Args...).Node
		return
	case "position":
		if sqlSyntax && len(f.Args) == 2 { // POSITION(a IN b) is position(b, a)
			n.Node = call("instr", f.Args[0], f.Args[1]).Node
			return
		}
	case "trim", "btrim", "ltrim", "rtrim":
	case "overlay":
		n.Node = call("_pg_overlay", f.Args...).Node
		return
	case "count":
		if len(f.Args) == 0 && !f.AggStar {
			f.AggStar = true
		}
	case "round":
		// Halves away from zero on the decimal written (numeric.go):
		// SQLite's round(2.675, 2) is 2.67, PostgreSQL's 2.68.
		if len(f.Args) == 1 {
			if a := t.exprType(f.Args[0], nil); a.Type != nil && (a.Type.Name == "float8" || a.Type.Name == "float4") {
				n.Node = call("_pg_rint", f.Args...).Node
				return
			}
		}
		if len(f.Args) == 1 || len(f.Args) == 2 {
			n.Node = call("_pg_round", f.Args...).Node
			return
		}
	}
	if to, ok := funcRename[name]; ok {
		name = to
	}
	f.Funcname = []*pg_query.Node{pg_query.MakeStrNode(name)}
	if name == "group_concat" && len(f.AggOrder) > 0 {
		// SQLite 3.44 accepts ORDER BY inside the call, as PostgreSQL.
	}
}

func (t *translator) sqlValue(n *pg_query.Node, v *pg_query.SQLValueFunction) {
	switch v.Op {
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
		n.Node = call("_pg_current_date").Node
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
		n.Node = call("_pg_current_timestamp").Node // now(), under the name a DEFAULT shows
	case pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
		n.Node = call("_pg_localtimestamp").Node
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N,
		pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME_N:
		n.Node = call("_pg_current_time").Node
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_USER, pg_query.SQLValueFunctionOp_SVFOP_USER,
		pg_query.SQLValueFunctionOp_SVFOP_SESSION_USER, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:
		n.Node = call("current_user").Node
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
		n.Node = call("current_database").Node
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
		n.Node = call("current_schema").Node
	}
}

// scalarInFrom: functions of one value that clients call in FROM.
var scalarInFrom = map[string]bool{"current_schema": true, "current_database": true, "current_user": true, "session_user": true,
	"version": true, "current_setting": true, "now": true, "pg_backend_pid": true, "inet_server_addr": true, "inet_server_port": true}

// partitionAncestorsFrom: pg_partition_ancestors(rel) [WITH ORDINALITY]
// in FROM (psql's \d asks it for a table's triggers) is the relation
// alone, no table being partitioned: one row, rel (and depth 1).
func partitionAncestorsFrom(rf *pg_query.RangeFunction) *pg_query.Node {
	if len(rf.Functions) != 1 || rf.IsRowsfrom {
		return nil
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 {
		return nil
	}
	f := items[0].GetFuncCall()
	if f == nil || lastName(f.Funcname) != "pg_partition_ancestors" || len(f.Args) != 1 {
		return nil
	}
	arg, err := deparseExpr(f.Args[0])
	if err != nil {
		return nil
	}
	alias, cols := "pg_partition_ancestors", []string{"relid", "ordinality"}
	if rf.Alias != nil {
		alias = rf.Alias.Aliasname
		for i, c := range strs(rf.Alias.Colnames) {
			if i < len(cols) {
				cols[i] = c
			}
		}
	}
	sel := fmt.Sprintf("%s AS %s", arg, quoteIdent(cols[0]))
	if rf.Ordinality {
		sel += ", 1 AS " + quoteIdent(cols[1])
	}
	tree, err := parseGenerated(fmt.Sprintf("SELECT * FROM (SELECT %s) AS %s", sel, quoteIdent(alias)))
	if err != nil {
		return nil
	}
	return tree.Stmts[0].Stmt.GetSelectStmt().FromClause[0]
}

// catalogInFrom: set-returning catalog functions without arguments whose
// rows are a catalog view of the same name.
// pg_options_to_table(options) has no rows: no relation, server or
// wrapper has options here.
var catalogInFrom = map[string]bool{"pg_get_keywords": true, "pg_options_to_table": true}

// rangeFunction: generate_series in FROM becomes a recursive CTE subquery.
func (t *translator) rangeFunction(n *pg_query.Node, rf *pg_query.RangeFunction) {
	expandarrayAsUnnest(rf)
	if len(rf.Functions) == 1 && !rf.IsRowsfrom {
		if items := rf.Functions[0].GetList().GetItems(); len(items) > 0 && items[0].GetFuncCall() != nil {
			if f := items[0].GetFuncCall(); jsonPathUnnest(f, rf, nil) {
				delete(t.srfPending, f)
			}
		}
	}
	if isUnnestFrom(rf) {
		// Placed by its select (unnestFrom), which knows the FROM list.
		if t.unnestPending == nil {
			t.unnestPending = map[*pg_query.RangeFunction]bool{}
		}
		t.unnestPending[rf] = true
		return
	}
	if from := partitionAncestorsFrom(rf); from != nil {
		n.Node = from.Node
		return
	}
	if len(rf.Functions) != 1 || rf.Ordinality || rf.IsRowsfrom {
		t.fail(unsupported("this function in FROM"))
		return
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 {
		t.fail(unsupported("this function in FROM"))
		return
	}
	f := items[0].GetFuncCall()
	if f == nil {
		t.fail(unsupported("this function in FROM"))
		return
	}
	name := lastName(f.Funcname)
	if _, ok := jsonSRFs[name]; ok && len(f.Args) == 1 {
		alias := name
		var colnames []string
		if rf.Alias != nil {
			alias = rf.Alias.Aliasname
			colnames = strs(rf.Alias.Colnames)
		}
		from, err := t.jsonSRFFrom(name, f.Args[0], alias, colnames)
		if err != nil {
			t.fail(err)
			return
		}
		delete(t.srfPending, f)
		n.Node = from.Node
		return
	}
	if catalogInFrom[name] && (len(f.Args) == 0 || name == "pg_options_to_table") {
		// A catalog function returning a fixed table is its catalog view.
		alias := rf.Alias
		if alias == nil {
			alias = &pg_query.Alias{Aliasname: name}
		}
		n.Node = &pg_query.Node_RangeVar{RangeVar: &pg_query.RangeVar{Schemaname: "pg_catalog", Relname: name, Inh: true, Relpersistence: "p", Alias: alias}}
		t.node(n)
		return
	}
	if scalarInFrom[name] {
		// A function returning one value in FROM is a one-row table of
		// one column named after the alias, else the function (TypeORM:
		// SELECT * FROM current_schema()).
		alias, col := name, name
		if rf.Alias != nil {
			alias, col = rf.Alias.Aliasname, rf.Alias.Aliasname
			if len(rf.Alias.Colnames) > 0 {
				col = rf.Alias.Colnames[0].GetString_().GetSval()
			}
		}
		call, err := deparseExpr(items[0])
		if err != nil {
			t.fail(err)
			return
		}
		tree, err := parseGenerated(fmt.Sprintf("SELECT * FROM (SELECT %s AS %s) AS %s", call, quoteIdent(col), quoteIdent(alias)))
		if err != nil {
			t.fail(unsupported("%s in FROM", name))
			return
		}
		from := tree.Stmts[0].Stmt.GetSelectStmt().FromClause[0]
		n.Node = from.Node
		return
	}
	if name != "generate_series" || len(f.Args) < 2 || len(f.Args) > 3 {
		t.fail(unsupported("the set-returning function %s in FROM", name))
		return
	}
	delete(t.srfPending, f)
	alias := "generate_series"
	col := "generate_series"
	if rf.Alias != nil {
		alias = rf.Alias.Aliasname
		col = alias
		if len(rf.Alias.Colnames) > 0 {
			col = rf.Alias.Colnames[0].GetString_().GetSval()
		}
		if len(rf.Alias.Colnames) > 1 {
			t.fail(&pgwire.Error{Code: "42P10", Message: fmt.Sprintf("table %q has 1 columns available but %d columns specified", alias, len(rf.Alias.Colnames))})
			return
		}
	}
	var parts [3]string
	for i, a := range f.Args {
		s, err := deparseExpr(a)
		if err != nil {
			t.fail(err)
			return
		}
		parts[i] = s
	}
	step := "1"
	if parts[2] != "" {
		step = parts[2]
	}
	var sub string
	switch gsType := t.seriesType(f.Args); gsType {
	case "int4", "int8", "numeric":
		// The first row only when the range is not empty.
		sub = fmt.Sprintf("SELECT * FROM (WITH RECURSIVE _gs(v) AS (SELECT %[1]s WHERE CASE WHEN (%[2]s) > 0 THEN (%[1]s) <= (%[3]s) WHEN (%[2]s) < 0 THEN (%[1]s) >= (%[3]s) ELSE _pg_raise('22023', 'step size cannot equal zero') END UNION ALL SELECT v + (%[2]s) FROM _gs WHERE CASE WHEN (%[2]s) > 0 THEN v + (%[2]s) <= (%[3]s) ELSE v + (%[2]s) >= (%[3]s) END) SELECT v AS %[4]s FROM _gs) AS %[5]s",
			parts[0], step, parts[1], quoteIdent(col), quoteIdent(alias))
	case "timestamp", "timestamptz":
		if parts[2] == "" {
			t.fail(unsupported("generate_series of timestamps without a step"))
			return
		}
		// Timestamps in one layout compare as text; the step is an
		// interval added by the interval arithmetic functions. A step
		// that does not move forward is refused (no endless series).
		add := map[string]string{"timestamp": "_pg_ts_add_ts", "timestamptz": "_pg_ts_add_tz"}[gsType]
		cast := "_cast_" + gsType
		sub = fmt.Sprintf("SELECT * FROM (WITH RECURSIVE _gs(v) AS (SELECT %[6]s(%[1]s) WHERE CASE WHEN %[7]s(%[6]s(%[1]s), %[2]s, 1) > %[6]s(%[1]s) THEN %[6]s(%[1]s) <= %[6]s(%[3]s) ELSE _pg_raise('0A000', 'generate_series with a step that does not move forward is not supported on the SQLite back end') END UNION ALL SELECT %[7]s(v, %[2]s, 1) FROM _gs WHERE %[7]s(v, %[2]s, 1) <= %[6]s(%[3]s)) SELECT v AS %[4]s FROM _gs) AS %[5]s",
			parts[0], parts[2], parts[1], quoteIdent(col), quoteIdent(alias), cast, add)
	default:
		t.fail(unsupported("generate_series over %s", gsType))
		return
	}
	tree, err := parseGenerated(sub)
	if err != nil {
		t.fail(unsupported("generate_series with these arguments"))
		return
	}
	from := tree.Stmts[0].Stmt.GetSelectStmt().FromClause[0]
	n.Node = from.Node
}

// dupCTE: a WITH list naming one query twice is 42712, as in PostgreSQL
// (SQLite's "duplicate WITH table name" has no SQLSTATE).
func dupCTE(w *pg_query.WithClause) error {
	if w == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, c := range w.Ctes {
		name := c.GetCommonTableExpr().GetCtename()
		if seen[name] {
			return &pgwire.Error{Code: "42712", Message: fmt.Sprintf("WITH query name %q specified more than once", name)}
		}
		seen[name] = true
	}
	return nil
}

// inArity: x IN (subquery) with as many columns on each side, checked as
// PostgreSQL checks it (SQLite's "sub-select returns 1 columns - expected
// 2" has no SQLSTATE). A subquery whose columns come from * is left to
// SQLite.
func inArity(s *pg_query.SubLink) error {
	sel := s.Subselect.GetSelectStmt()
	if sel == nil || s.Testexpr == nil {
		return nil
	}
	left := 1
	if r := s.Testexpr.GetRowExpr(); r != nil {
		left = len(r.Args)
	}
	lm := leftmost(sel)
	right := len(lm.TargetList)
	if len(lm.ValuesLists) > 0 {
		right = len(lm.ValuesLists[0].GetList().GetItems())
	}
	for _, tn := range lm.TargetList {
		if cr := tn.GetResTarget().GetVal().GetColumnRef(); cr != nil && len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			return nil
		}
	}
	switch {
	case right == 0:
		return nil
	case left > right:
		return &pgwire.Error{Code: "42601", Message: "subquery has too few columns"}
	case left < right:
		return &pgwire.Error{Code: "42601", Message: "subquery has too many columns"}
	}
	return nil
}

// quantified: x op ANY / SOME / ALL (subquery) for a comparison op, with
// SQL's three-valued answer: ALL is false when some comparison is false,
// else NULL when some is NULL, else true; ANY the mirror image.
func (t *translator) quantified(n *pg_query.Node, s *pg_query.SubLink, all bool) {
	op := lastName(s.OperName)
	kind := "ANY"
	if all {
		kind = "ALL"
	}
	switch op {
	case "=", "<>", "!=", "<", ">", "<=", ">=":
	default:
		t.fail(unsupported("%s %s (subquery)", op, kind))
		return
	}
	sel := s.Subselect.GetSelectStmt()
	if sel == nil || s.Testexpr == nil || s.Testexpr.GetRowExpr() != nil {
		t.fail(unsupported("%s %s (subquery) of a row", op, kind))
		return
	}
	lm := leftmost(sel)
	if len(lm.TargetList) != 1 {
		t.fail(unsupported("%s %s (subquery) with more than one column", op, kind))
		return
	}
	rt := lm.TargetList[0].GetResTarget()
	if cr := rt.GetVal().GetColumnRef(); cr == nil || cr.Fields[len(cr.Fields)-1].GetAStar() == nil {
		if rt.Name == "" {
			rt.Name = "_tandem_q"
		}
	} else {
		t.fail(unsupported("%s %s (SELECT * ...)", op, kind))
		return
	}
	x, err := deparseExpr(s.Testexpr)
	if err != nil {
		t.fail(err)
		return
	}
	sub, err := deparseStmt(s.Subselect)
	if err != nil {
		t.fail(err)
		return
	}
	t.subq++
	v := fmt.Sprintf("_tandem_qs%d.%s", t.subq, quoteIdent(rt.Name))
	cmp := fmt.Sprintf("(%s) %s %s", x, op, v)
	from := fmt.Sprintf("(%s) AS _tandem_qs%d", sub, t.subq)
	var sql string
	if all {
		sql = fmt.Sprintf("CASE WHEN EXISTS (SELECT 1 FROM %[1]s WHERE NOT (%[2]s)) THEN 0 WHEN EXISTS (SELECT 1 FROM %[1]s WHERE (%[2]s) IS NULL) THEN NULL ELSE 1 END", from, cmp)
	} else {
		sql = fmt.Sprintf("CASE WHEN EXISTS (SELECT 1 FROM %[1]s WHERE %[2]s) THEN 1 WHEN EXISTS (SELECT 1 FROM %[1]s WHERE (%[2]s) IS NULL) THEN NULL ELSE 0 END", from, cmp)
	}
	tree, err := parseGenerated("SELECT " + sql)
	if err != nil {
		t.fail(unsupported("%s %s (subquery) here", op, kind))
		return
	}
	n.Node = tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val.Node
}

// scalarSubquery: a scalar subquery that returns two rows fails with 21000
// in PostgreSQL, where SQLite takes the first. Unless it cannot return
// more than one row (LIMIT 1, no FROM, an aggregate without GROUP BY), it
// reads at most two rows and raises on the second.
func (t *translator) scalarSubquery(n *pg_query.Node, s *pg_query.SubLink) {
	sel := s.Subselect.GetSelectStmt()
	if sel == nil {
		return
	}
	if c := sel.LimitCount.GetAConst(); c != nil && c.GetIval() != nil && c.GetIval().Ival <= 1 {
		return
	}
	lm := leftmost(sel)
	if len(lm.TargetList) != 1 {
		return
	}
	rt := lm.TargetList[0].GetResTarget()
	if rt == nil || rt.Val == nil {
		return
	}
	if cr := rt.Val.GetColumnRef(); cr != nil && len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
		return
	}
	if sel.Op == pg_query.SetOperation_SETOP_NONE {
		if len(sel.FromClause) == 0 && len(sel.ValuesLists) == 0 {
			return
		}
		if f := rt.Val.GetFuncCall(); f != nil && len(sel.GroupClause) == 0 && f.Over == nil {
			switch lastName(f.Funcname) {
			case "count", "sum", "avg", "min", "max", "total", "group_concat":
				return
			}
		}
	}
	if rt.Name == "" {
		rt.Name = "_tandem_s"
	}
	e := template("(SELECT CASE WHEN count(*) > 1 THEN _pg_raise('21000', 'more than one row returned by a subquery used as an expression') ELSE min(_tandem_s) END FROM (SELECT * FROM _tandem_placeholder LIMIT 2) AS _tandem_one)")
	outer := e.GetSubLink().Subselect.GetSelectStmt()
	visit(outer.ProtoReflect(), func(m *pg_query.Node) {
		if cr := m.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_().GetSval() == "_tandem_s" {
			cr.Fields = []*pg_query.Node{pg_query.MakeStrNode(rt.Name)}
		}
	})
	inner := outer.FromClause[0].GetRangeSubselect().Subquery.GetSelectStmt()
	t.subq++
	inner.FromClause = []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
		Subquery: s.Subselect, Alias: &pg_query.Alias{Aliasname: fmt.Sprintf("_tandem_sub%d", t.subq)}}}}}
	n.Node = e.Node
}

func leftmost(s *pg_query.SelectStmt) *pg_query.SelectStmt {
	for s.Op != pg_query.SetOperation_SETOP_NONE && s.Larg != nil {
		s = s.Larg
	}
	return s
}

// nameTargets gives every unnamed result column the name PostgreSQL would
// (FigureColname), before the rewrite changes the expressions: SQLite
// would name it by its text.
func nameTargets(list []*pg_query.Node) {
	for _, n := range list {
		rt := n.GetResTarget()
		if rt == nil || rt.Name != "" || rt.Val == nil {
			continue
		}
		if cr := rt.Val.GetColumnRef(); cr != nil {
			continue // SQLite names a column reference by the column, too
		}
		name, _ := figureColname(rt.Val)
		rt.Name = name
	}
}

// nameDerived names the unnamed result columns of every subquery in FROM
// and every WITH query that has no column list, as PostgreSQL does, so
// that the query over them sees those names (SELECT * FROM (SELECT
// count(*) FROM t) s has a column count; SQLite would call it count(*)).
func nameDerived(raw *pg_query.Node) {
	walkNode(raw, func(n *pg_query.Node) {
		var sub *pg_query.Node
		switch x := n.Node.(type) {
		case *pg_query.Node_RangeSubselect:
			if x.RangeSubselect.Alias == nil || len(x.RangeSubselect.Alias.Colnames) == 0 {
				sub = x.RangeSubselect.Subquery
			}
		case *pg_query.Node_CommonTableExpr:
			if len(x.CommonTableExpr.Aliascolnames) == 0 {
				sub = x.CommonTableExpr.Ctequery
			}
		}
		if sel := sub.GetSelectStmt(); sel != nil {
			nameTargets(leftmost(sel).TargetList)
		}
	})
}

// figureColname is PostgreSQL's FigureColnameInternal; strength 2 is a
// name from the expression, 1 from a type, 0 none.
func figureColname(n *pg_query.Node) (string, int) {
	switch x := n.Node.(type) {
	case *pg_query.Node_ColumnRef:
		f := x.ColumnRef.Fields
		if s := f[len(f)-1].GetString_(); s != nil {
			return s.Sval, 2
		}
	case *pg_query.Node_FuncCall:
		return lastName(x.FuncCall.Funcname), 2
	case *pg_query.Node_GroupingFunc:
		return "grouping", 2
	case *pg_query.Node_TypeCast:
		name, strength := figureColname(x.TypeCast.Arg)
		if strength <= 1 {
			tn := x.TypeCast.TypeName
			names := strs(tn.Names)
			if len(names) > 0 {
				typ := names[len(names)-1]
				if t := TypeByName[strings.ToLower(typ)]; t != nil {
					typ = t.Name
				}
				return typ, 1
			}
		}
		return name, strength
	case *pg_query.Node_AExpr:
		if x.AExpr.Kind == pg_query.A_Expr_Kind_AEXPR_NULLIF {
			return "nullif", 2
		}
	case *pg_query.Node_CaseExpr:
		if x.CaseExpr.Defresult != nil {
			if name, s := figureColname(x.CaseExpr.Defresult); s == 2 {
				return name, 2
			}
		}
		return "case", 1
	case *pg_query.Node_CoalesceExpr:
		return "coalesce", 2
	case *pg_query.Node_AArrayExpr:
		return "array", 2
	case *pg_query.Node_AIndirection:
		// (expr)[i] and (expr).field: the subscripted expression's name
		// (a field selection names the field).
		ind := x.AIndirection.Indirection
		if len(ind) > 0 {
			if s := ind[len(ind)-1].GetString_(); s != nil {
				return s.Sval, 2
			}
		}
		return figureColname(x.AIndirection.Arg)
	case *pg_query.Node_MinMaxExpr:
		if x.MinMaxExpr.Op == pg_query.MinMaxOp_IS_LEAST {
			return "least", 2
		}
		return "greatest", 2
	case *pg_query.Node_SubLink:
		switch x.SubLink.SubLinkType {
		case pg_query.SubLinkType_EXISTS_SUBLINK:
			return "exists", 2
		case pg_query.SubLinkType_ARRAY_SUBLINK:
			return "array", 2
		case pg_query.SubLinkType_EXPR_SUBLINK:
			if sel := x.SubLink.Subselect.GetSelectStmt(); sel != nil {
				sel = leftmost(sel)
				if len(sel.TargetList) > 0 {
					if rt := sel.TargetList[0].GetResTarget(); rt != nil {
						if rt.Name != "" {
							return rt.Name, 2
						}
						return figureColname(rt.Val)
					}
				}
			}
		}
	case *pg_query.Node_SqlvalueFunction:
		names := map[pg_query.SQLValueFunctionOp]string{
			pg_query.SQLValueFunctionOp_SVFOP_CURRENT_DATE: "current_date", pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME: "current_time",
			pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N: "current_time", pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP: "current_timestamp",
			pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N: "current_timestamp", pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME: "localtime",
			pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME_N: "localtime", pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP: "localtimestamp",
			pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N: "localtimestamp", pg_query.SQLValueFunctionOp_SVFOP_CURRENT_ROLE: "current_role",
			pg_query.SQLValueFunctionOp_SVFOP_CURRENT_USER: "current_user", pg_query.SQLValueFunctionOp_SVFOP_USER: "user",
			pg_query.SQLValueFunctionOp_SVFOP_SESSION_USER: "session_user", pg_query.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG: "current_catalog",
			pg_query.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA: "current_schema",
		}
		if name, ok := names[x.SqlvalueFunction.Op]; ok {
			return name, 2
		}
	}
	return "?column?", 0
}

// catalogTemplates: catalog functions that look rows up, as subqueries on
// the catalog views (__argN__ is the call's Nth argument). The views'
// columns are renamed inside a derived table so that an argument naming
// a column of the caller's row (pg_get_constraintdef(oid) over
// pg_constraint) is not taken for the view's column of the same name.
var catalogTemplates = map[string]string{
	"pg_get_indexdef":              "(SELECT _t._d FROM (SELECT indexname AS _n, indexdef AS _d FROM pg_indexes) _t WHERE _tandem_oid(_t._n) = __arg0__)",
	"pg_get_constraintdef":         "(SELECT _t._d FROM (SELECT oid AS _o, _condef AS _d FROM pg_constraint) _t WHERE _t._o = __arg0__)",
	"pg_get_viewdef":               "(SELECT _t._d FROM (SELECT viewname AS _n, definition AS _d FROM pg_views UNION ALL SELECT matviewname, definition FROM pg_matviews) _t WHERE _tandem_oid(_t._n) = __arg0__)",
	"pg_index_column_has_property": "(SELECT _tandem_index_column_property(_t._p, __arg1__, __arg2__) FROM (SELECT indexrelid AS _i, indoption AS _p FROM pg_index) _t WHERE _t._i = __arg0__)",
	"to_regclass":                  "(SELECT _t._o FROM (SELECT oid AS _o, relname AS _n FROM pg_class) _t WHERE _t._n = __arg0__)",
	"pg_sequence_last_value":       "(SELECT CASE WHEN _t._c THEN _t._l END FROM (SELECT name AS _n, last_value AS _l, is_called AS _c FROM main._tandem_sequences) _t WHERE _t._n = __arg0__ OR _tandem_oid(_t._n) = __arg0__)",
	"pg_get_serial_sequence":       "(SELECT 'public.' || quote_ident(_t._s) FROM (SELECT sequence AS _s, table_name AS _tn, column_name AS _cn FROM main._tandem_columns) _t WHERE _t._tn = _tandem_relname(__arg0__) AND _t._cn = __arg1__)",
}

// template parses a SQL expression with __argN__ placeholders and puts the
// given (already rewritten) nodes in their places.
func template(sql string, args ...*pg_query.Node) *pg_query.Node {
	tree, err := pg_query.Parse("SELECT " + sql)
	if err != nil {
		panic("sqlpg: bad template " + sql + ": " + err.Error())
	}
	e := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
	visit(e.ProtoReflect(), func(n *pg_query.Node) {
		cr := n.GetColumnRef()
		if cr == nil || len(cr.Fields) != 1 {
			return
		}
		name := cr.Fields[0].GetString_().GetSval()
		var i int
		if _, err := fmt.Sscanf(name, "__arg%d__", &i); err == nil && i < len(args) {
			n.Node = args[i].Node
		}
	})
	return e
}

// subselectAliases: FROM (subquery) AS a(x, y) names the subquery's
// columns, which SQLite cannot say; the names move into the subquery.
func (t *translator) subselectAliases(r *pg_query.RangeSubselect) {
	if r.Alias == nil || len(r.Alias.Colnames) == 0 {
		return
	}
	names := strs(r.Alias.Colnames)
	r.Alias.Colnames = nil
	sel := r.Subquery.GetSelectStmt()
	if sel == nil {
		return
	}
	if len(sel.ValuesLists) > 0 {
		width := len(sel.ValuesLists[0].GetList().GetItems())
		var targets []*pg_query.Node
		for i := 0; i < width; i++ {
			name := fmt.Sprintf("column%d", i+1)
			as := name
			if i < len(names) {
				as = names[i]
			}
			targets = append(targets, pg_query.MakeResTargetNodeWithNameAndVal(as, pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(name)}, -1), -1))
		}
		inner := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}
		r.Subquery = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
			TargetList: targets,
			FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{Subquery: inner}}}},
		}}}
		return
	}
	for i, tn := range leftmost(sel).TargetList {
		rt := tn.GetResTarget()
		if rt == nil || i >= len(names) {
			break
		}
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			t.fail(unsupported("column aliases on a subquery that selects *"))
			return
		}
		rt.Name = names[i]
	}
}

// like gives LIKE PostgreSQL's default escape character, the backslash
// (SQLite's LIKE has none): a LIKE b becomes like(b, a, '\'). PostgreSQL
// parses a LIKE b ESCAPE c as a LIKE like_escape(b, c): like(b, a, c), and
// ESCAPE ” (no escape character, which SQLite's like() refuses) like(b, a).
func (t *translator) like(n *pg_query.Node, e *pg_query.A_Expr) {
	if e.Rexpr == nil || e.Lexpr == nil {
		return
	}
	not := lastName(e.Name) == "!~~" || lastName(e.Name) == "!~~*"
	c := call("like", e.Rexpr, e.Lexpr, strConst("\\"))
	if f := e.Rexpr.GetFuncCall(); f != nil && lastName(f.Funcname) == "like_escape" && len(f.Args) == 2 {
		pat, esc := f.Args[0], f.Args[1]
		if k := esc.GetAConst(); k != nil && k.GetSval() != nil {
			if k.GetSval().Sval == "" {
				c = call("like", pat, e.Lexpr)
			} else {
				c = call("like", pat, e.Lexpr, esc)
			}
		} else {
			c = &pg_query.Node{Node: &pg_query.Node_CaseExpr{CaseExpr: &pg_query.CaseExpr{
				Args: []*pg_query.Node{{Node: &pg_query.Node_CaseWhen{CaseWhen: &pg_query.CaseWhen{
					Expr:   &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{Kind: pg_query.A_Expr_Kind_AEXPR_OP, Name: []*pg_query.Node{pg_query.MakeStrNode("=")}, Lexpr: esc, Rexpr: strConst("")}}},
					Result: call("like", pat, e.Lexpr)}}}},
				Defresult: call("like", pat, e.Lexpr, esc)}}}
		}
	}
	if not {
		c = &pg_query.Node{Node: &pg_query.Node_BoolExpr{BoolExpr: &pg_query.BoolExpr{Boolop: pg_query.BoolExprType_NOT_EXPR, Args: []*pg_query.Node{c}}}}
	}
	n.Node = c.Node
}

// dateArith: date and timestamp arithmetic, where the operands' types are
// known from literals, casts and functions.
func (t *translator) dateArith(n *pg_query.Node, e *pg_query.A_Expr, op string) {
	if e.Lexpr == nil {
		return
	}
	l, r := t.exprType(e.Lexpr, nil), t.exprType(e.Rexpr, nil)
	if known, ok := t.opTypes[e]; ok {
		if known[0].Type != nil {
			l = known[0]
		}
		if known[1].Type != nil {
			r = known[1]
		}
	}
	if l.Type == nil || r.Type == nil {
		return
	}
	ln, rn := l.Type.Name, r.Type.Name
	sign := pg_query.MakeAConstIntNode(1, -1)
	if op == "-" {
		sign = pg_query.MakeAConstIntNode(-1, -1)
	}
	isInt := func(s string) bool { return s == "int2" || s == "int4" || s == "int8" }
	isTS := func(s string) bool { return s == "date" || s == "timestamp" || s == "timestamptz" }
	switch {
	case ln == "date" && isInt(rn):
		n.Node = call("_pg_date_add", e.Lexpr, e.Rexpr, sign).Node
	case isInt(ln) && rn == "date" && op == "+":
		n.Node = call("_pg_date_add", e.Rexpr, e.Lexpr, sign).Node
	case ln == "date" && rn == "date" && op == "-":
		n.Node = call("_pg_date_diff", e.Lexpr, e.Rexpr).Node
	case isTS(ln) && rn == "interval":
		n.Node = call("_pg_ts_add_"+map[bool]string{true: "tz", false: "ts"}[ln == "timestamptz"], e.Lexpr, e.Rexpr, sign).Node
	case ln == "interval" && isTS(rn) && op == "+":
		n.Node = call("_pg_ts_add_"+map[bool]string{true: "tz", false: "ts"}[rn == "timestamptz"], e.Rexpr, e.Lexpr, sign).Node
	case isTS(ln) && isTS(rn) && op == "-" && ln != "date":
		n.Node = call("_pg_ts_diff", e.Lexpr, e.Rexpr).Node
	case ln == "interval" && rn == "interval":
		n.Node = call("_pg_interval_add", e.Lexpr, e.Rexpr, sign).Node
	}
}

// targetSRFs: unnest(arr) and generate_subscripts(arr, 1) in a select
// list (catalog queries of ORMs use them) become a json_each over the
// array's elements joined to the FROM clause: one row per element.
func (t *translator) targetSRFs(s *pg_query.SelectStmt) {
	var each string // alias of the json_each of the first array
	eaches := map[string]string{}
	var arrays []*pg_query.Node    // each json_each's array
	var eachCalls []*pg_query.Node // each json_each's argument, _pg_array_json(array)
	defer func() {
		// Zipped arrays run until the longest ends, the others padded
		// with NULLs (PostgreSQL's rule for set-returning functions in a
		// select list).
		if len(arrays) < 2 {
			return
		}
		for i, c := range eachCalls {
			args := []*pg_query.Node{proto.Clone(arrays[i]).(*pg_query.Node)}
			for _, a := range arrays {
				args = append(args, proto.Clone(a).(*pg_query.Node))
			}
			c.Node = call("_pg_array_json_pad", args...).Node
		}
	}()
	for _, tn := range s.TargetList {
		rt := tn.GetResTarget()
		if rt == nil {
			continue
		}
		val := rt.Val
		field := ""
		if ind := val.GetAIndirection(); ind != nil && len(ind.Indirection) == 1 {
			field = ind.Indirection[0].GetString_().GetSval()
			val = ind.Arg
		}
		// unnest(...)::text: placed as unnest(...) is, under its cast.
		cast := rt.Val
		var slot **pg_query.Node
		isElems := func(n *pg_query.Node) bool {
			g := n.GetFuncCall()
			return g != nil && len(g.Args) > 0 && (lastName(g.Funcname) == "unnest" || lastName(g.Funcname) == "generate_subscripts")
		}
		if tc := val.GetTypeCast(); tc != nil && field == "" && isElems(tc.Arg) {
			slot, val = &tc.Arg, tc.Arg
		} else if g := val.GetFuncCall(); g != nil && field == "" && strings.HasPrefix(lastName(g.Funcname), "_cast_") && len(g.Args) == 1 && isElems(g.Args[0]) {
			slot, val = &g.Args[0], g.Args[0]
		}
		f := val.GetFuncCall()
		if f == nil || len(f.Args) == 0 {
			continue
		}
		name := lastName(f.Funcname)
		if field == "" && jsonPathUnnest(f, nil, rt) {
			name = "unnest"
		}
		if t.jsonTargetSRF(s, rt, f, name, len(eaches)) || t.seriesTargetSRF(s, rt, f, name) {
			continue
		}
		holder := f // the call whose argument is the series
		if w := f.Args[0].GetFuncCall(); w != nil && lastName(w.Funcname) == "_pg_tstz_local" && len(w.Args) == 1 {
			holder = w // a timestamptz series cast to date: its wall clock first
		}
		if inner := holder.Args[0].GetFuncCall(); strings.HasPrefix(name, "_cast_") && len(f.Args) == 1 && inner != nil && lastName(inner.Funcname) == "generate_series" {
			// generate_series(...)::date: the series placed as above, the
			// cast over its column.
			scratch := &pg_query.ResTarget{Name: rt.Name}
			if t.seriesTargetSRF(s, scratch, inner, "generate_series") {
				holder.Args[0] = scratch.Val
				if rt.Name == "" {
					rt.Name = "generate_series"
				}
				continue
			}
		}
		if name == "generate_series" && (len(f.Args) == 2 || len(f.Args) == 3) && field == "" {
			// Beside other set-returning functions, or over a column:
			// the series as an array, unnested with them in lockstep
			// (Atlas: generate_series(1, array_length(i.indkey, 1)) AS
			// ord, unnest(i.indkey) AS key).
			f.Args = []*pg_query.Node{call("_pg_series_array", f.Args...)}
			f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("unnest")}
			name = "unnest"
			if rt.Name == "" {
				rt.Name = "generate_series"
			}
		}
		if name != "unnest" && name != "generate_subscripts" && name != "_pg_expandarray" {
			continue
		}
		delete(t.srfPending, f)
		fromOne := false // _pg_expandarray's n counts from 1, whatever the array's lower bound
		if name == "_pg_expandarray" {
			fromOne = field == "n"
			// information_schema._pg_expandarray(arr): records (x, n),
			// element and position (pgjdbc's metadata queries).
			name = "unnest"
			if field == "n" {
				name = "generate_subscripts"
			}
		} else if field != "" {
			continue
		}
		txt, err := deparseExpr(f.Args[0])
		if err != nil {
			t.fail(err)
			return
		}
		alias, ok := eaches[txt]
		if !ok {
			if len(eaches) == 0 {
				t.qualifyEachNames(s)
				starOfFrom(s)
			}
			// Several arrays are zipped, as PostgreSQL does, by position.
			t.subq++
			alias = fmt.Sprintf("_tandem_srf%d", t.subq)
			eaches[txt] = alias
			arg := call("_pg_array_json", f.Args[0])
			arrays = append(arrays, f.Args[0])
			eachCalls = append(eachCalls, arg)
			s.FromClause = append(s.FromClause, &pg_query.Node{Node: &pg_query.Node_RangeFunction{RangeFunction: &pg_query.RangeFunction{
				Functions: []*pg_query.Node{pg_query.MakeListNode([]*pg_query.Node{call("json_each", arg), nil})},
				Alias:     &pg_query.Alias{Aliasname: alias},
			}}})
			if each == "" {
				each = alias
			} else {
				same := pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("=")},
					pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(alias), pg_query.MakeStrNode("key")}, -1),
					pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(each), pg_query.MakeStrNode("key")}, -1), -1)
				if s.WhereClause == nil {
					s.WhereClause = same
				} else {
					s.WhereClause = pg_query.MakeBoolExprNode(pg_query.BoolExprType_AND_EXPR, []*pg_query.Node{s.WhereClause, same}, -1)
				}
			}
		}
		if rt.Name == "" {
			rt.Name = name
		}
		if name == "unnest" {
			rt.Val = pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(alias), pg_query.MakeStrNode("value")}, -1)
		} else {
			// From the array's lower bound: 1, or 0 for an int2vector
			// (pg_index.indkey: ActiveRecord's primary key query).
			// NULL past the array's end, where a longer array zipped
			// beside it goes on (its json_each is padded).
			key := func() *pg_query.Node {
				return pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(alias), pg_query.MakeStrNode("key")}, -1)
			}
			lower := call("coalesce", call("array_lower", proto.Clone(f.Args[0]).(*pg_query.Node), pg_query.MakeAConstIntNode(1, -1)), pg_query.MakeAConstIntNode(1, -1))
			if fromOne {
				lower = pg_query.MakeAConstIntNode(1, -1)
			}
			sub := call("_cast_int4", pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("+")}, key(), lower, -1))
			within := pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("<")}, key(),
				call("coalesce", call("array_length", proto.Clone(f.Args[0]).(*pg_query.Node), pg_query.MakeAConstIntNode(1, -1)), pg_query.MakeAConstIntNode(0, -1)), -1)
			rt.Val = &pg_query.Node{Node: &pg_query.Node_CaseExpr{CaseExpr: &pg_query.CaseExpr{
				Args: []*pg_query.Node{{Node: &pg_query.Node_CaseWhen{CaseWhen: &pg_query.CaseWhen{Expr: within, Result: sub}}}},
			}}}
		}
		if slot != nil {
			*slot, rt.Val = rt.Val, cast
		}
	}
}

// operandTypes are the types of an operator's operands, as far as known.
func (t *translator) operandTypes(e *pg_query.A_Expr) (ColType, ColType) {
	var l, r ColType
	if e.Lexpr != nil {
		l = t.exprType(e.Lexpr, nil)
	}
	if e.Rexpr != nil {
		r = t.exprType(e.Rexpr, nil)
	}
	if known, ok := t.opTypes[e]; ok {
		if known[0].Type != nil {
			l = known[0]
		}
		if known[1].Type != nil {
			r = known[1]
		}
	}
	return l, r
}

// isJSONB: the operator's left operand (or either, when !leftOnly) is jsonb.
func (t *translator) isJSONB(e *pg_query.A_Expr, leftOnly bool) bool {
	l, r := t.operandTypes(e)
	if l.Type != nil && l.Type.Name == "jsonb" {
		return true
	}
	return !leftOnly && r.Type != nil && r.Type.Name == "jsonb"
}

// concatOp: || is string concatenation in SQLite; on jsonb and arrays it
// is PostgreSQL's merge and append.
func (t *translator) concatOp(n *pg_query.Node, e *pg_query.A_Expr) {
	if e.Lexpr == nil {
		return
	}
	l, r := t.operandTypes(e)
	isArr := func(c ColType) bool { return c.Type != nil && c.Type.Elem != 0 }
	switch {
	case t.isJSONB(e, false):
		n.Node = call("_pg_jsonb_concat", e.Lexpr, e.Rexpr).Node
	case isArr(l) || isArr(r):
		n.Node = call("_pg_array_cat", e.Lexpr, e.Rexpr, boolConst(isArr(l)), boolConst(isArr(r))).Node
	default:
		// A boolean concatenated prints as PostgreSQL's text of it,
		// true / false, not SQLite's 1 / 0.
		isBool := func(c ColType) bool { return c.Type != nil && c.Type.Name == "bool" }
		if isBool(l) {
			e.Lexpr = boolText(e.Lexpr)
		}
		if isBool(r) {
			e.Rexpr = boolText(e.Rexpr)
		}
		// A timestamptz prints in the session's zone.
		isTZ := func(c ColType) bool { return c.Type != nil && c.Type.Name == "timestamptz" }
		if isTZ(l) {
			e.Lexpr = call("_pg_tstz_text", e.Lexpr)
		}
		if isTZ(r) {
			e.Rexpr = call("_pg_tstz_text", e.Rexpr)
		}
	}
}

// boolText is a boolean's text as PostgreSQL prints it.
func boolText(b *pg_query.Node) *pg_query.Node {
	return template("CASE WHEN (__arg0__) THEN 'true' WHEN NOT (__arg0__) THEN 'false' END", b)
}

// unknownOperand: an untyped string literal next to a number takes the
// number's type, as in PostgreSQL (1 + 'a' is 22P02, 1 + '2' is 3).
func (t *translator) unknownOperand(e *pg_query.A_Expr) {
	if e.Lexpr == nil || e.Rexpr == nil {
		return
	}
	l, r := t.operandTypes(e)
	isLit := func(n *pg_query.Node) bool { c := n.GetAConst(); return c != nil && c.GetSval() != nil }
	isNum := func(c ColType) bool {
		return c.Type != nil && (c.Type.Name == "int2" || c.Type.Name == "int4" || c.Type.Name == "int8" || c.Type.Name == "numeric" || c.Type.Name == "float4" || c.Type.Name == "float8")
	}
	isTime := func(c ColType) bool {
		return c.Type != nil && (c.Type.Name == "timestamptz" || c.Type.Name == "timestamp" || c.Type.Name == "date" || c.Type.Name == "interval")
	}
	// A literal beside a time or an interval is read as PostgreSQL
	// resolves the operator (opParam): now() + '1 day' is an interval,
	// now() - '2024-01-01' a timestamptz; SQLite's own arithmetic on the
	// texts gave 2025 for now() - '1 day'.
	timeLit := func(lit **pg_query.Node, other ColType, onRight bool, i int) {
		oid := opParam(lastName(e.Name), other, onRight)
		typ := Types[oid]
		if typ == nil {
			return
		}
		*lit = call("_cast_"+typ.Name, *lit)
		known := t.opTypes[e]
		known[i] = ct(oid)
		if t.opTypes == nil {
			t.opTypes = map[*pg_query.A_Expr][2]ColType{}
		}
		t.opTypes[e] = known
	}
	switch {
	case isLit(e.Lexpr) && !isLit(e.Rexpr) && isNum(r):
		e.Lexpr = call("_cast_"+r.Type.Name, e.Lexpr)
	case isLit(e.Rexpr) && !isLit(e.Lexpr) && isNum(l):
		e.Rexpr = call("_cast_"+l.Type.Name, e.Rexpr)
	case isLit(e.Lexpr) && !isLit(e.Rexpr) && isTime(r):
		timeLit(&e.Lexpr, r, false, 0)
	case isLit(e.Rexpr) && !isLit(e.Lexpr) && isTime(l):
		timeLit(&e.Rexpr, l, true, 1)
	}
}

// boolLiteral: a string literal compared with a boolean reads as a
// boolean, as in PostgreSQL (flag = 't', flag <> 'no'; 'x' is 22P02):
// SQLite stores booleans as 1 / 0 and would compare the text.
func (t *translator) boolLiteral(e *pg_query.A_Expr) {
	if e.Lexpr == nil || e.Rexpr == nil {
		return
	}
	l, r := t.operandTypes(e)
	isLit := func(n *pg_query.Node) bool { c := n.GetAConst(); return c != nil && c.GetSval() != nil }
	isBool := func(c ColType) bool { return c.Type != nil && c.Type.Name == "bool" }
	switch {
	case isLit(e.Lexpr) && !isLit(e.Rexpr) && isBool(r):
		e.Lexpr = call("_cast_bool", e.Lexpr)
	case isLit(e.Rexpr) && !isLit(e.Lexpr) && isBool(l):
		e.Rexpr = call("_cast_bool", e.Rexpr)
	}
}

// typedLiteral: a string literal compared with a number or a uuid is
// read as that type when the statement is translated, as PostgreSQL
// reads it when it parses the statement: `id = 'abc'` fails with 22P02
// whether or not a row is read (SQLite compared the text and found
// nothing), and a uuid written in capitals finds the stored one.
func (t *translator) typedLiteral(e *pg_query.A_Expr) {
	if e.Lexpr == nil || e.Rexpr == nil {
		return
	}
	l, r := t.operandTypes(e)
	check := func(lit, other *pg_query.Node, c ColType) {
		sv := lit.GetAConst().GetSval()
		if sv == nil || other.GetAConst() != nil || c.Type == nil || c.Enum != nil {
			return
		}
		switch {
		case c.Type.Name == "bytea":
			if err := checkLiteral(Column{Type: c.Type}, sv.Sval); err != nil {
				t.fail(err)
				return
			}
			lit.Node = byteaValue(&pg_query.Node{Node: lit.Node}).Node // bytes, not the text
			return
		case c.Type.Cat == 'A' && c.Type.Elem != 0:
		case c.Type.Name == "int2", c.Type.Name == "int4", c.Type.Name == "int8", c.Type.Name == "numeric",
			c.Type.Name == "float4", c.Type.Name == "float8", c.Type.Name == "uuid":
		default:
			return
		}
		fn, ok := castFunc(c.Type).(func(any) (any, error))
		if !ok {
			return
		}
		out, err := fn(sv.Sval)
		if err != nil {
			t.fail(literalError(err))
			return
		}
		if u, ok := out.(string); ok && (c.Type.Name == "uuid" || c.Type.Cat == 'A') {
			sv.Sval = u // as the column keeps it: a uuid in lower case, an array as array_out writes it
		}
	}
	check(e.Rexpr, e.Lexpr, l)
	check(e.Lexpr, e.Rexpr, r)
}

// arrayOperands: an operator's operands are arrays (a column or cast of
// an array type, or ARRAY[...]), where @>, <@ and && compare elements.
func (t *translator) arrayOperands(e *pg_query.A_Expr) bool {
	l, r := t.operandTypes(e)
	isArr := func(n *pg_query.Node, c ColType) bool {
		if c.Type != nil && c.Type.Cat == 'A' {
			return true
		}
		if n.GetAArrayExpr() != nil || lastName(n.GetFuncCall().GetFuncname()) == "_pg_array" {
			return true // ARRAY[...], before or after its rewrite
		}
		if tc := n.GetTypeCast(); tc != nil && len(tc.TypeName.ArrayBounds) > 0 {
			return true
		}
		return false
	}
	return isArr(e.Lexpr, l) || isArr(e.Rexpr, r)
}

// timeLiteral: a string literal compared with a date, timestamp or
// timestamptz reads in the form the column keeps (a timestamptz in UTC),
// so that the stored text compares as a time: at < '2024-01-02
// 02:00:00+02' is at < '2024-01-02 00:00:00+00'.
func (t *translator) timeLiteral(e *pg_query.A_Expr) {
	if e.Lexpr == nil || e.Rexpr == nil {
		return
	}
	l, r := t.operandTypes(e)
	if sv := e.Rexpr.GetAConst().GetSval(); sv != nil && e.Lexpr.GetAConst() == nil {
		normalizeTimeLiteral(Column{Type: l.Type}, sv, t.loc)
	}
	if sv := e.Lexpr.GetAConst().GetSval(); sv != nil && e.Rexpr.GetAConst() == nil {
		normalizeTimeLiteral(Column{Type: r.Type}, sv, t.loc)
	}
}

func boolConst(b bool) *pg_query.Node {
	if b {
		return pg_query.MakeAConstIntNode(1, -1)
	}
	return pg_query.MakeAConstIntNode(0, -1)
}

// intRange: integer arithmetic fails with 22003 past its type's range,
// as in PostgreSQL (SQLite widens to 64 bits, then to a float). Only when
// both operands' types are known integers.
func (t *translator) intRange(n *pg_query.Node, e *pg_query.A_Expr) {
	if n.GetAExpr() != e || e.Lexpr == nil {
		return // rewritten already (date or interval arithmetic)
	}
	l, r := t.exprType(e.Lexpr, nil), t.exprType(e.Rexpr, nil)
	if known, ok := t.opTypes[e]; ok {
		if known[0].Type != nil {
			l = known[0]
		}
		if known[1].Type != nil {
			r = known[1]
		}
	}
	if l.Type == nil || r.Type == nil {
		return
	}
	isInt := func(s string) bool { return s == "int2" || s == "int4" || s == "int8" }
	if !isInt(l.Type.Name) || !isInt(r.Type.Name) {
		return
	}
	res := arith(l, r)
	if res.Type == nil {
		return
	}
	inner := &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: e}}
	n.Node = call("_pg_"+res.Type.Name+"_range", inner).Node
}

// intervalMul: interval * number and number * interval.
func (t *translator) intervalMul(n *pg_query.Node, e *pg_query.A_Expr) {
	l, r := t.exprType(e.Lexpr, nil), t.exprType(e.Rexpr, nil)
	if known, ok := t.opTypes[e]; ok {
		l, r = known[0], known[1]
	}
	switch {
	case l.Type != nil && l.Type.Name == "interval" && r.Type != nil && r.Type.Cat == 'N':
		n.Node = call("_pg_interval_mul", e.Lexpr, e.Rexpr).Node
	case r.Type != nil && r.Type.Name == "interval" && l.Type != nil && l.Type.Cat == 'N':
		n.Node = call("_pg_interval_mul", e.Rexpr, e.Lexpr).Node
	}
}

// orderedSetAgg is percentile_cont(f), percentile_disc(f) or mode() WITHIN
// GROUP (ORDER BY x [DESC]): an aggregate of tandem's own over x with the
// fraction and the direction as arguments (SQLite has no WITHIN GROUP).
func (t *translator) orderedSetAgg(f *pg_query.FuncCall, name string) {
	if len(f.AggOrder) != 1 || f.Over != nil || f.AggFilter != nil {
		t.fail(unsupported("WITHIN GROUP with more than one ORDER BY expression, a FILTER or OVER"))
		return
	}
	sb := f.AggOrder[0].GetSortBy()
	if sb == nil || sb.SortbyDir == pg_query.SortByDir_SORTBY_USING {
		t.fail(unsupported("WITHIN GROUP (ORDER BY ... USING)"))
		return
	}
	desc := int64(0)
	if sb.SortbyDir == pg_query.SortByDir_SORTBY_DESC {
		desc = 1
	}
	var args []*pg_query.Node
	switch name {
	case "percentile_cont", "percentile_disc":
		if len(f.Args) != 1 || f.Args[0].GetAArrayExpr() != nil || f.Args[0].GetArrayCoerceExpr() != nil {
			t.fail(unsupported("%s with an array of fractions", name))
			return
		}
		args = []*pg_query.Node{f.Args[0], sb.Node, pg_query.MakeAConstIntNode(desc, -1)}
	case "mode":
		if len(f.Args) != 0 {
			t.fail(&pgwire.Error{Code: "42883", Message: "function mode takes no arguments outside WITHIN GROUP"})
			return
		}
		args = []*pg_query.Node{sb.Node}
	default:
		t.fail(unsupported("WITHIN GROUP for %s", name))
		return
	}
	f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_pg_" + name)}
	f.Args, f.AggOrder, f.AggWithinGroup = args, nil, false
}
