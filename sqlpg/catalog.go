package sqlpg

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	sqlite3 "github.com/mattn/go-sqlite3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// The catalog: pg_catalog and information_schema answered from SQLite's
// schema (sqlite_schema and the pragma table-valued functions) and
// tandem's metadata tables (schema.go).
//
// Every catalog relation is a TEMP view installed on each connection
// (InstallCatalog); CatalogRelation maps the name a client wrote to it.
// A relation's OID is a hash of its name (RelOID), so it is the same on
// every connection and node, and 'name'::regclass needs no lookup.
// Functions that need no database (format_type, pg_get_expr, ...) are Go
// functions; the few that look rows up (pg_get_indexdef,
// pg_get_constraintdef, pg_get_viewdef) are rewritten by the translator
// into subqueries on these views.

// RegclassName reads a relation's name as PostgreSQL reads the text of a
// regclass: [schema.]name, a quoted part as written, an unquoted one in
// lower case ('"Foo"' is Foo, 'public.Foo' is foo).
func RegclassName(text string) string {
	parts, cur, quoted := []string{}, strings.Builder{}, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '"' && quoted && i+1 < len(text) && text[i+1] == '"':
			cur.WriteByte('"')
			i++
		case c == '"':
			quoted = !quoted
		case c == '.' && !quoted:
			parts = append(parts, cur.String())
			cur.Reset()
		case quoted:
			cur.WriteByte(c)
		default:
			cur.WriteString(strings.ToLower(string(c)))
		}
	}
	parts = append(parts, cur.String())
	return parts[len(parts)-1]
}

// RelOID is the OID tandem gives a relation named name.
func RelOID(name string) int64 {
	if oid, ok := catalogOIDs[name]; ok {
		return oid // 'pg_class'::regclass
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return 16384 + int64(h.Sum32()%1_000_000_000)
}

const (
	nsCatalog = 11
	nsPublic  = 2200
	nsInfo    = 13000
)

var (
	usersMu sync.Mutex
	users   = []string{"tandem"}
)

// SetUsers names the cluster's users (pg_roles, \du); the node calls it
// at start.
func SetUsers(names []string) {
	usersMu.Lock()
	defer usersMu.Unlock()
	if len(names) > 0 {
		users = append([]string(nil), names...)
	}
}

var catalogViews = map[string]string{} // lower-case name as clients write it -> view

// CatalogRelation reports the SQLite name answering schema.name, if the
// catalog provides it.
func CatalogRelation(schema, name string) (string, bool) {
	catalogOnce.Do(func() { catalogDDL = catalogSQL() })
	name = strings.ToLower(name)
	switch schema {
	case "information_schema":
		v, ok := catalogViews["information_schema."+name]
		return v, ok
	case "", "pg_catalog":
		v, ok := catalogViews[name]
		return v, ok
	}
	return "", false
}

// relOIDArg is an OID argument as the OID: a relation's name (a
// non-constant x::regclass is the name here) becomes its OID.
func relOIDArg(v any) any {
	if b, ok := v.([]byte); ok {
		v = string(b)
	}
	if s, ok := v.(string); ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			return n
		}
		return RelOID(RegclassName(s))
	}
	return v
}

// btreeOpclass is a default btree operator class of PostgreSQL 15 (its
// pg_opclass row): an index column's indclass entry by its type.
type btreeOpclass struct {
	oid, family, intype uint32
	name                string
}

var btreeOpclasses = []btreeOpclass{
	{10003, 424, 16, "bool_ops"}, {10006, 428, 17, "bytea_ops"}, {10007, 429, 18, "char_ops"}, {10028, 1994, 19, "name_ops"},
	{3124, 1976, 20, "int8_ops"}, {1979, 1976, 21, "int2_ops"}, {1978, 1976, 23, "int4_ops"}, {3126, 1994, 25, "text_ops"},
	{1981, 1989, 26, "oid_ops"}, {10012, 1970, 700, "float4_ops"}, {3123, 1970, 701, "float8_ops"}, {10004, 426, 1042, "bpchar_ops"},
	{3122, 434, 1082, "date_ops"}, {10038, 1996, 1083, "time_ops"}, {3128, 434, 1114, "timestamp_ops"}, {3127, 434, 1184, "timestamptz_ops"},
	{10022, 1982, 1186, "interval_ops"}, {10041, 2000, 1266, "timetz_ops"}, {3125, 1988, 1700, "numeric_ops"}, {10000, 397, 2277, "array_ops"},
	{10065, 2968, 2950, "uuid_ops"}, {10069, 3522, 3500, "enum_ops"}, {10088, 4033, 3802, "jsonb_ops"},
}

// opclassOf is the default btree operator class of a column of type oid
// (0 when there is none): varchar's is text's, an enum's enum_ops, an
// array's array_ops.
func opclassOf(oid uint32) uint32 {
	switch {
	case oid == 1043:
		oid = 25
	case pgwire.IsEnumOID(oid):
		oid = 3500
	case Types[oid] != nil && Types[oid].Cat == 'A':
		oid = 2277
	}
	for _, c := range btreeOpclasses {
		if c.intype == oid {
			return c.oid
		}
	}
	return 0
}

// opclassSQL is pg_opclass: the default btree classes.
func opclassSQL() string {
	rows := make([]string, len(btreeOpclasses))
	for i, c := range btreeOpclasses {
		rows[i] = fmt.Sprintf("(%d, '%s', 403, 11, 10, %d, 1, %d, 0)", c.oid, c.name, c.family, c.intype)
	}
	return `SELECT CAST(column1 AS INTEGER) AS oid, column2 AS opcname, CAST(column3 AS INTEGER) AS opcmethod, CAST(column4 AS INTEGER) AS opcnamespace,
		CAST(column5 AS INTEGER) AS opcowner, CAST(column6 AS INTEGER) AS opcfamily, column7 AS opcdefault, CAST(column8 AS INTEGER) AS opcintype,
		CAST(column9 AS INTEGER) AS opckeytype FROM (VALUES ` + strings.Join(rows, ", ") + `)`
}

// fkNameSQL is the name of the foreign key of row f of
// pragma_foreign_key_list(m.name): the name it was given, else
// PostgreSQL's table_col1_col2_fkey.
const fkNameSQL = `coalesce(_tandem_constraint_name(m.sql, 'f', (SELECT group_concat(x.c, ',') FROM (SELECT g."from" AS c FROM pragma_foreign_key_list(m.name) g WHERE g.id = f.id ORDER BY g.seq) x)),
	m.name || '_' || (SELECT group_concat(x.c, '_') FROM (SELECT g."from" AS c FROM pragma_foreign_key_list(m.name) g WHERE g.id = f.id ORDER BY g.seq) x) || '_fkey')`

// fkToSQL is the referenced column of row g of pragma_foreign_key_list
// (for table f."table"): named, or that table's primary key column at the
// same position when the key names none.
const fkToSQL = `coalesce(g."to", (SELECT q.name FROM pragma_table_xinfo(f."table") q WHERE q.pk = g.seq + 1))`

const userTables = `main.sqlite_schema m WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\'`

func catalogSQL() []string {
	var v []string
	add := func(name, sql string) {
		view := name
		if strings.HasPrefix(name, "information_schema.") {
			view = "_is_" + strings.TrimPrefix(name, "information_schema.")
		}
		catalogViews[name] = view
		v = append(v, "CREATE TEMP VIEW IF NOT EXISTS "+quoteIdent(view)+" AS "+sql)
	}
	add("pg_namespace", `SELECT CAST(11 AS INTEGER) AS oid, 'pg_catalog' AS nspname, CAST(10 AS INTEGER) AS nspowner, NULL AS nspacl
		UNION ALL SELECT 2200, 'public', 6171, NULL UNION ALL SELECT 13000, 'information_schema', 10, NULL`)
	add("pg_opclass", opclassSQL())
	add("pg_am", `SELECT CAST(2 AS INTEGER) AS oid, 'heap' AS amname, 't' AS amtype, 0 AS amhandler UNION ALL SELECT 403, 'btree', 'i', 0
		UNION ALL SELECT 405, 'hash', 'i', 0 UNION ALL SELECT 783, 'gist', 'i', 0 UNION ALL SELECT 2742, 'gin', 'i', 0
		UNION ALL SELECT 4000, 'spgist', 'i', 0 UNION ALL SELECT 3580, 'brin', 'i', 0`)
	// Indexes, with PostgreSQL's names for the ones SQLite makes itself
	// (primary keys and UNIQUE constraints), and the rowid alias of an
	// INTEGER PRIMARY KEY as the _pkey index PostgreSQL would have.
	add("_pg_index_all", `SELECT m.name AS tbl, il.name AS sqlite_name,
			CASE WHEN il.origin = 'pk' THEN coalesce(_tandem_constraint_name(m.sql, 'p', (SELECT group_concat(ii.name, ',') FROM pragma_index_info(il.name) ii)), m.name || '_pkey')
			     WHEN il.name LIKE 'sqlite\_autoindex\_%' ESCAPE '\' THEN coalesce(_tandem_constraint_name(m.sql, 'u', (SELECT group_concat(ii.name, ',') FROM pragma_index_info(il.name) ii)),
			          m.name || '_' || (SELECT group_concat(ii.name, '_') FROM pragma_index_info(il.name) ii) || '_key')
			     ELSE il.name END AS relname,
			il."unique" AS isunique, (il.origin = 'pk' OR coalesce(k.kind, '') = 'p') AS isprimary,
			CASE k.kind WHEN 'p' THEN 'pk' WHEN 'u' THEN 'u' ELSE il.origin END AS origin, il.partial AS partial,
			(SELECT group_concat(coalesce(quote_ident(ii.name), _tandem_index_key((SELECT ix.sql FROM main.sqlite_schema ix WHERE ix.name = il.name), ii.seqno, `+indexTypes+`, 0)), ', ')
				FROM pragma_index_info(il.name) ii) AS cols,
			(SELECT group_concat(coalesce(quote_ident(x.name), _tandem_index_key(ix.sql, x.seqno, `+indexTypes+`, 1)) || _tandem_index_opclass(coalesce(ix.sql, ''), x.seqno) || CASE WHEN x."desc" THEN ' DESC' ELSE '' END || _tandem_index_nulls(coalesce(ix.sql, ''), x.seqno, x."desc"), ', ')
				FROM pragma_index_xinfo(il.name) x LEFT JOIN main.sqlite_schema ix ON ix.name = il.name WHERE x.key = 1) AS keys,
			(SELECT group_concat(coalesce(p.cid + 1, 0), ' ') FROM pragma_index_info(il.name) ii LEFT JOIN pragma_table_xinfo(m.name) p ON p.name = ii.name) AS colnums,
			(SELECT count(*) FROM pragma_index_info(il.name)) AS ncols,
			(SELECT group_concat(_tandem_indoption(coalesce(ix.sql, ''), x.seqno, x."desc"), ' ')
				FROM pragma_index_xinfo(il.name) x LEFT JOIN main.sqlite_schema ix ON ix.name = il.name WHERE x.key = 1) AS options,
			(SELECT group_concat(_tandem_opclass(coalesce(tc.type_oid, _tandem_decl_oid(p.type))), ' ') FROM pragma_index_info(il.name) ii JOIN pragma_table_xinfo(m.name) p ON p.name = ii.name
				LEFT JOIN main._tandem_columns tc ON tc.table_name = m.name AND tc.column_name = ii.name) AS classes,
			(SELECT _tandem_index_method(ix.sql) FROM main.sqlite_schema ix WHERE ix.name = il.name) AS method,
			(SELECT _tandem_index_pred(ix.sql, `+indexTypes+`) FROM main.sqlite_schema ix WHERE ix.name = il.name AND il.partial) AS pred,
			(SELECT _tandem_index_exprs(ix.sql, `+indexTypes+`) FROM main.sqlite_schema ix WHERE ix.name = il.name) AS exprs
		FROM `+userTables+` AND m.type = 'table' AND il.name IS NOT NULL
		UNION ALL
		SELECT m.name, NULL, coalesce(_tandem_constraint_name(m.sql, 'p', (SELECT p.name FROM pragma_table_xinfo(m.name) p WHERE p.pk = 1)), m.name || '_pkey'), 1, 1, 'pk', 0,
			(SELECT quote_ident(p.name) FROM pragma_table_xinfo(m.name) p WHERE p.pk = 1),
			(SELECT quote_ident(p.name) FROM pragma_table_xinfo(m.name) p WHERE p.pk = 1),
			(SELECT p.cid + 1 FROM pragma_table_xinfo(m.name) p WHERE p.pk = 1), 1, '0',
			(SELECT _tandem_opclass(coalesce(tc.type_oid, _tandem_decl_oid(p.type))) FROM pragma_table_xinfo(m.name) p
				LEFT JOIN main._tandem_columns tc ON tc.table_name = m.name AND tc.column_name = p.name WHERE p.pk = 1),
			'btree', NULL, NULL
		FROM `+userTables+` AND m.type = 'table'
			AND (SELECT count(*) FROM pragma_table_xinfo(m.name) WHERE pk > 0) = 1
			AND EXISTS (SELECT 1 FROM pragma_table_xinfo(m.name) WHERE pk = 1 AND upper(type) = 'INTEGER')`)
	// pragma_index_list needs the table as an argument: join it per table.
	// An index ALTER TABLE ADD CONSTRAINT made (SQLite cannot add a key to
	// a table) is that constraint (_tandem_constraints).
	v[len(v)-1] = strings.Replace(v[len(v)-1], "FROM "+userTables+" AND m.type = 'table' AND il.name IS NOT NULL",
		"FROM main.sqlite_schema m, pragma_index_list(m.name) il LEFT JOIN main._tandem_constraints k ON k.name = il.name WHERE m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND m.name NOT LIKE '\\_tandem\\_%' ESCAPE '\\' AND m.type = 'table'", 1)
	add("pg_class", `SELECT CAST(_tandem_oid(m.name) AS INTEGER) AS oid, m.name AS relname, CAST(2200 AS INTEGER) AS relnamespace,
			CAST(0 AS INTEGER) AS reltype, CAST(0 AS INTEGER) AS reloftype, CAST(10 AS INTEGER) AS relowner,
			CAST(CASE m.type WHEN 'table' THEN 2 ELSE 0 END AS INTEGER) AS relam, CAST(0 AS INTEGER) AS relfilenode,
			CAST(0 AS INTEGER) AS reltablespace, 0 AS relpages, -1.0 AS reltuples, 0 AS relallvisible, CAST(0 AS INTEGER) AS reltoastrelid,
			EXISTS (SELECT 1 FROM _pg_index_all i WHERE i.tbl = m.name) AS relhasindex, 0 AS relisshared, 'p' AS relpersistence,
			CASE WHEN m.type = 'view' THEN 'v' WHEN EXISTS (SELECT 1 FROM main._tandem_matviews mv WHERE mv.name = m.name) THEN 'm' ELSE 'r' END AS relkind,
			(SELECT count(*) FROM pragma_table_xinfo(m.name)) AS relnatts, CASE m.type WHEN 'table' THEN json_array_length(_tandem_checks(m.sql)) ELSE 0 END AS relchecks,
			0 AS relhasrules,
			(m.type = 'table' AND (EXISTS (SELECT 1 FROM pragma_foreign_key_list(m.name))
				OR EXISTS (SELECT 1 FROM main.sqlite_schema o, pragma_foreign_key_list(o.name) f WHERE o.type = 'table' AND f."table" = m.name))) AS relhastriggers,
			0 AS relhassubclass, 0 AS relrowsecurity, 0 AS relforcerowsecurity,
			coalesce((SELECT mv.populated FROM main._tandem_matviews mv WHERE mv.name = m.name), 1) AS relispopulated, 'd' AS relreplident,
			0 AS relispartition, CAST(0 AS INTEGER) AS relrewrite, 0 AS relfrozenxid, 0 AS relminmxid, NULL AS relacl, NULL AS reloptions, NULL AS relpartbound
		FROM `+userTables+` AND m.type IN ('table', 'view')
		UNION ALL
		SELECT CAST(_tandem_oid(i.relname) AS INTEGER), i.relname, 2200, 0, 0, 10, CASE i.method WHEN 'hash' THEN 405 WHEN 'gin' THEN 2742 WHEN 'gist' THEN 783 WHEN 'spgist' THEN 4000 WHEN 'brin' THEN 3580 ELSE 403 END, 0, 0, 0, -1.0, 0, 0, 0, 0, 'p', 'i', i.ncols,
			0, 0, 0, 0, 0, 0, 1, 'n', 0, 0, 0, 0, NULL, NULL, NULL
		FROM _pg_index_all i
		UNION ALL
		SELECT CAST(_tandem_oid(s.name) AS INTEGER), s.name, 2200, 0, 0, 10, 0, 0, 0, 0, -1.0, 0, 0, 0, 0, 'p', 'S', 3,
			0, 0, 0, 0, 0, 0, 1, 'n', 0, 0, 0, 0, NULL, NULL, NULL
		FROM main._tandem_sequences s`)
	// pg_depend: a serial or identity column's sequence depends on the
	// column ('a' auto, 'i' internal for identity), which is how ORMs find
	// it (Django's get_sequences).
	add("pg_depend", `SELECT CAST(_tandem_oid('pg_class') AS INTEGER) AS classid, CAST(_tandem_oid(s.name) AS INTEGER) AS objid, 0 AS objsubid,
			CAST(_tandem_oid('pg_class') AS INTEGER) AS refclassid, CAST(_tandem_oid(s.owner_table) AS INTEGER) AS refobjid,
			(SELECT p.cid + 1 FROM pragma_table_xinfo(s.owner_table) p WHERE p.name = s.owner_column) AS refobjsubid,
			CASE WHEN coalesce((SELECT c.identity FROM main._tandem_columns c WHERE c.table_name = s.owner_table AND c.column_name = s.owner_column), '') = '' THEN 'a' ELSE 'i' END AS deptype
		FROM main._tandem_sequences s WHERE s.owner_table IS NOT NULL
		UNION ALL
		SELECT 2604, CAST(_tandem_oid(d.tbl || '.' || d.col) AS INTEGER), 0, 1259, CAST(_tandem_oid(d.seq) AS INTEGER), 0, 'n'
		FROM (SELECT m.name AS tbl, p.name AS col, _tandem_default_seq(CASE WHEN coalesce(tc.identity, '') = '' THEN tc.sequence END, p.dflt_value) AS seq
			FROM main.sqlite_schema m, pragma_table_xinfo(m.name) p
				LEFT JOIN main._tandem_columns tc ON tc.table_name = m.name AND tc.column_name = p.name
			WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type = 'table') d
		WHERE d.seq IS NOT NULL AND EXISTS (SELECT 1 FROM main._tandem_sequences s WHERE s.name = d.seq)
		UNION ALL
		SELECT 2618, CAST(_tandem_oid(m.name || '._RETURN') AS INTEGER), 0, 1259, CAST(_tandem_oid((SELECT o.name FROM main.sqlite_schema o WHERE lower(o.name) = r.value)) AS INTEGER), 0, 'n'
		FROM main.sqlite_schema m, json_each(_tandem_view_refs(m.name, m.sql)) r
		WHERE m.type = 'view' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\'
			AND EXISTS (SELECT 1 FROM main.sqlite_schema o WHERE lower(o.name) = r.value AND o.type IN ('table', 'view'))
		UNION ALL
		SELECT 2618, CAST(_tandem_oid(m.name || '._RETURN') AS INTEGER), 0, 1259, CAST(_tandem_oid(m.name) AS INTEGER), 0, 'i'
		FROM `+userTables+` AND m.type = 'view'`)
	// A view is its _RETURN rule, which depends on the relations its
	// query reads (pg_dump creates them first).
	add("pg_rewrite", `SELECT CAST(_tandem_oid(m.name || '._RETURN') AS INTEGER) AS oid, '_RETURN' AS rulename, CAST(_tandem_oid(m.name) AS INTEGER) AS ev_class,
			'1' AS ev_type, 'O' AS ev_enabled, 1 AS is_instead, NULL AS ev_qual, NULL AS ev_action
		FROM `+userTables+` AND m.type = 'view'`)
	add("pg_index", `SELECT CAST(_tandem_oid(i.relname) AS INTEGER) AS indexrelid, CAST(_tandem_oid(i.tbl) AS INTEGER) AS indrelid,
			i.ncols AS indnatts, i.ncols AS indnkeyatts, i.isunique AS indisunique, 0 AS indnullsnotdistinct, i.isprimary AS indisprimary,
			0 AS indisexclusion, 1 AS indimmediate, 0 AS indisclustered, 1 AS indisvalid, 0 AS indcheckxmin, 1 AS indisready,
			1 AS indislive, 0 AS indisreplident, i.colnums AS indkey, _tandem_zeros(i.ncols) AS indcollation, coalesce(i.classes, _tandem_zeros(i.ncols)) AS indclass, coalesce(i.options, _tandem_zeros(i.ncols)) AS indoption,
			nullif(i.exprs, '') AS indexprs, nullif(i.pred, '') AS indpred
		FROM _pg_index_all i`)
	add("pg_attribute", `SELECT CAST(_tandem_oid(m.name) AS INTEGER) AS attrelid, p.name AS attname,
			CAST(coalesce(tc.type_oid, _tandem_decl_oid(p.type)) AS INTEGER) AS atttypid,
			CAST(coalesce(tc.typmod, -1) AS INTEGER) AS atttypmod, CAST(p.cid + 1 AS INTEGER) AS attnum,
			(p."notnull" OR p.pk > 0) AS attnotnull, (`+colDefault+` IS NOT NULL) AS atthasdef,
			0 AS atthasmissing, coalesce(tc.identity, '') AS attidentity, CASE WHEN p.hidden IN (2, 3) THEN 's' ELSE '' END AS attgenerated, 0 AS attisdropped, 1 AS attislocal,
			0 AS attinhcount, CAST(0 AS INTEGER) AS attcollation, -1 AS attstattarget, _tandem_attndims(coalesce(tc.type_oid, _tandem_decl_oid(p.type))) AS attndims, -1 AS attlen, 0 AS attbyval,
			'i' AS attalign, _tandem_typstorage(coalesce(tc.type_oid, _tandem_decl_oid(p.type))) AS attstorage, '' AS attcompression, NULL AS attacl,
			NULL AS attoptions, NULL AS attfdwoptions, NULL AS attmissingval
		FROM main.sqlite_schema m, pragma_table_xinfo(m.name) p LEFT JOIN main._tandem_columns tc ON tc.table_name = m.name AND tc.column_name = p.name
		WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type IN ('table', 'view') AND p.hidden IN (0, 2, 3)
		UNION ALL
		SELECT CAST(_tandem_oid(i.relname) AS INTEGER), p.name, CAST(coalesce(tc.type_oid, _tandem_decl_oid(p.type)) AS INTEGER),
			CAST(coalesce(tc.typmod, -1) AS INTEGER), CAST(ii.seqno + 1 AS INTEGER), 0, 0, 0, '', '', 0, 1, 0, CAST(0 AS INTEGER), -1, 0, -1, 0,
			'i', _tandem_typstorage(coalesce(tc.type_oid, _tandem_decl_oid(p.type))), '', NULL, NULL, NULL, NULL
		FROM _pg_index_all i, pragma_index_info(coalesce(i.sqlite_name, '')) ii JOIN pragma_table_xinfo(i.tbl) p ON p.name = ii.name
			LEFT JOIN main._tandem_columns tc ON tc.table_name = i.tbl AND tc.column_name = p.name
		WHERE i.sqlite_name IS NOT NULL
		UNION ALL
		SELECT CAST(_tandem_oid(i.relname) AS INTEGER), p.name, CAST(coalesce(tc.type_oid, _tandem_decl_oid(p.type)) AS INTEGER),
			CAST(coalesce(tc.typmod, -1) AS INTEGER), 1, 0, 0, 0, '', '', 0, 1, 0, CAST(0 AS INTEGER), -1, 0, -1, 0,
			'i', _tandem_typstorage(coalesce(tc.type_oid, _tandem_decl_oid(p.type))), '', NULL, NULL, NULL, NULL
		FROM _pg_index_all i JOIN pragma_table_xinfo(i.tbl) p ON p.pk = 1
			LEFT JOIN main._tandem_columns tc ON tc.table_name = i.tbl AND tc.column_name = p.name
		WHERE i.sqlite_name IS NULL`)
	add("pg_attrdef", `SELECT CAST(_tandem_oid(m.name || '.' || p.name) AS INTEGER) AS oid, CAST(_tandem_oid(m.name) AS INTEGER) AS adrelid,
			CAST(p.cid + 1 AS INTEGER) AS adnum,
			`+colDefault+` AS adbin
		FROM main.sqlite_schema m, pragma_table_xinfo(m.name) p LEFT JOIN main._tandem_columns tc ON tc.table_name = m.name AND tc.column_name = p.name
		WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type = 'table'
			AND `+colDefault+` IS NOT NULL`)
	add("pg_constraint", `SELECT CAST(_tandem_oid(i.relname) AS INTEGER) AS oid, i.relname AS conname, CAST(2200 AS INTEGER) AS connamespace,
			CASE WHEN i.isprimary THEN 'p' ELSE 'u' END AS contype, 0 AS condeferrable, 0 AS condeferred, 1 AS convalidated,
			CAST(_tandem_oid(i.tbl) AS INTEGER) AS conrelid, CAST(0 AS INTEGER) AS contypid, CAST(_tandem_oid(i.relname) AS INTEGER) AS conindid,
			CAST(0 AS INTEGER) AS conparentid, CAST(0 AS INTEGER) AS confrelid, ' ' AS confupdtype, ' ' AS confdeltype, ' ' AS confmatchtype,
			1 AS conislocal, 0 AS coninhcount, 1 AS connoinherit, '{' || replace(i.colnums, ' ', ',') || '}' AS conkey, NULL AS confkey,
			NULL AS conexclop, NULL AS conbin, CASE WHEN i.isprimary THEN 'PRIMARY KEY (' ELSE 'UNIQUE (' END || i.cols || ')' AS _condef
		FROM _pg_index_all i WHERE i.origin IN ('pk', 'u')
		UNION ALL
		SELECT CAST(_tandem_oid(fk.name) AS INTEGER), fk.name, 2200, 'f', (fk.deferral & 1) <> 0, (fk.deferral & 2) <> 0, 1,
			CAST(_tandem_oid(fk.tbl) AS INTEGER), 0,
			coalesce((SELECT CAST(_tandem_oid(i.relname) AS INTEGER) FROM _pg_index_all i WHERE i.tbl = fk.reftbl AND i.isunique AND CAST(i.colnums AS TEXT) = fk.refnums), 0),
			0, CAST(_tandem_oid(fk.reftbl) AS INTEGER),
			CASE fk.on_update WHEN 'CASCADE' THEN 'c' WHEN 'SET NULL' THEN 'n' WHEN 'SET DEFAULT' THEN 'd' WHEN 'RESTRICT' THEN 'r' ELSE 'a' END,
			CASE fk.on_delete WHEN 'CASCADE' THEN 'c' WHEN 'SET NULL' THEN 'n' WHEN 'SET DEFAULT' THEN 'd' WHEN 'RESTRICT' THEN 'r' ELSE 'a' END,
			's', 1, 0, 1, '{' || replace(fk.nums, ' ', ',') || '}', '{' || replace(fk.refnums, ' ', ',') || '}', NULL, NULL,
			'FOREIGN KEY (' || fk.cols || ') REFERENCES ' || _tandem_qualify(fk.reftbl) || '(' || fk.refcols || ')'
				|| CASE WHEN fk.on_update IN ('CASCADE', 'SET NULL', 'SET DEFAULT', 'RESTRICT') THEN ' ON UPDATE ' || fk.on_update ELSE '' END
				|| CASE WHEN fk.on_delete IN ('CASCADE', 'SET NULL', 'SET DEFAULT', 'RESTRICT') THEN ' ON DELETE ' || fk.on_delete ELSE '' END
				|| CASE WHEN fk.deferral & 1 THEN ' DEFERRABLE' ELSE '' END || CASE WHEN fk.deferral & 2 THEN ' INITIALLY DEFERRED' ELSE '' END
		FROM (SELECT m.name AS tbl, f."table" AS reftbl, f.on_update AS on_update, f.on_delete AS on_delete, `+fkNameSQL+` AS name,
				_tandem_fk_deferral(m.sql, (SELECT group_concat(x.c, ',') FROM (SELECT g."from" AS c FROM pragma_foreign_key_list(m.name) g WHERE g.id = f.id ORDER BY g.seq) x)) AS deferral,
				(SELECT group_concat(x.n, ' ') FROM (SELECT p.cid + 1 AS n FROM pragma_foreign_key_list(m.name) g JOIN pragma_table_xinfo(m.name) p ON p.name = g."from" WHERE g.id = f.id ORDER BY g.seq) x) AS nums,
				(SELECT group_concat(x.c, ', ') FROM (SELECT quote_ident(g."from") AS c FROM pragma_foreign_key_list(m.name) g WHERE g.id = f.id ORDER BY g.seq) x) AS cols,
				(SELECT group_concat(x.n, ' ') FROM (SELECT p.cid + 1 AS n FROM pragma_foreign_key_list(m.name) g JOIN pragma_table_xinfo(f."table") p ON p.name = `+fkToSQL+` WHERE g.id = f.id ORDER BY g.seq) x) AS refnums,
				(SELECT group_concat(x.c, ', ') FROM (SELECT quote_ident(`+fkToSQL+`) AS c FROM pragma_foreign_key_list(m.name) g WHERE g.id = f.id ORDER BY g.seq) x) AS refcols
			FROM main.sqlite_schema m, pragma_foreign_key_list(m.name) f
			WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type = 'table' AND f.seq = 0) fk
		UNION ALL
		SELECT CAST(_tandem_oid(m.name || '.' || json_extract(c.value, '$.name')) AS INTEGER), json_extract(c.value, '$.name'), 2200, 'c', 0, 0, 1,
			CAST(_tandem_oid(m.name) AS INTEGER), 0, 0, 0, 0, ' ', ' ', ' ', 1, 0, 0,
			'{' || coalesce((SELECT group_concat(x.n, ',') FROM (SELECT p.cid + 1 AS n FROM json_each(json_extract(c.value, '$.cols')) k JOIN pragma_table_xinfo(m.name) p ON lower(p.name) = lower(k.value) ORDER BY k.key) x), '') || '}',
			NULL, NULL, substr(json_extract(c.value, '$.def'), 8, length(json_extract(c.value, '$.def')) - 8), json_extract(c.value, '$.def')
		FROM main.sqlite_schema m, json_each(_tandem_checks(m.sql, (SELECT json_group_object(lower(tc.column_name), tc.type_oid) FROM main._tandem_columns tc WHERE tc.table_name = m.name))) c
		WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type = 'table' AND m.sql LIKE '%CHECK%'`)
	// pg_type from tandem's type table.
	var types []string
	oids := make([]int, 0, len(Types))
	for oid := range Types {
		oids = append(oids, int(oid))
	}
	sort.Ints(oids)
	for _, oid := range oids {
		t := Types[uint32(oid)]
		byval := 0
		if t.Len > 0 && t.Len <= 8 {
			byval = 1
		}
		coll := 0
		if t.Cat == 'S' {
			coll = 100
		}
		in, out, recv, send := typeIOFuncs(t)
		types = append(types, fmt.Sprintf("(%d, %s, %d, %d, %d, 'b', %s, 1, ',', 0, %d, %d, %s, %s, 0, 0, -1, 0, %d, NULL, %s, %s)",
			t.OID, quoteLit(t.Name), nsCatalog, t.Len, byval, quoteLit(string(t.Cat)), t.Elem, t.Array, quoteLit(in), quoteLit(out), coll, quoteLit(recv), quoteLit(send)))
	}
	add("pg_type", `SELECT CAST(column1 AS INTEGER) AS oid, column2 AS typname, CAST(column3 AS INTEGER) AS typnamespace, CAST(10 AS INTEGER) AS typowner,
			column4 AS typlen, column5 AS typbyval, column6 AS typtype, column7 AS typcategory, 0 AS typispreferred, column8 AS typisdefined,
			column9 AS typdelim, CAST(column10 AS INTEGER) AS typrelid, CAST(column11 AS INTEGER) AS typelem, CAST(column12 AS INTEGER) AS typarray,
			column13 AS typinput, column14 AS typoutput, column21 AS typreceive, column22 AS typsend, 'i' AS typalign, _tandem_typstorage(column1) AS typstorage,
			column15 AS typnotnull, CAST(column16 AS INTEGER) AS typbasetype, column17 AS typtypmod, column18 AS typndims,
			CAST(column19 AS INTEGER) AS typcollation, column20 AS typdefault, NULL AS typdefaultbin, NULL AS typacl, CAST(0 AS INTEGER) AS typsubscript, '-' AS typanalyze
		FROM (VALUES `+strings.Join(types, ", ")+`
			UNION ALL SELECT oid, name, 2200, 4, 1, 'e', 'E', 1, ',', 0, 0, 0, 'enum_in', 'enum_out', 0, 0, -1, 0, 0, NULL, 'enum_recv', 'enum_send' FROM _tandem_enums)`)
	add("pg_enum", `SELECT CAST(e.oid * 1000 + j.key AS INTEGER) AS oid, CAST(e.oid AS INTEGER) AS enumtypid, j.key + 1.0 AS enumsortorder, j.value AS enumlabel
		FROM _tandem_enums e, json_each(e.labels) j`)
	add("pg_database", `SELECT CAST(16384 AS INTEGER) AS oid, 'tandem' AS datname, CAST(10 AS INTEGER) AS datdba, 6 AS encoding, 'c' AS datlocprovider,
			0 AS datistemplate, 1 AS datallowconn, -1 AS datconnlimit, 'C.UTF-8' AS datcollate, 'C.UTF-8' AS datctype, NULL AS daticulocale,
			NULL AS datcollversion, NULL AS datacl, CAST(1663 AS INTEGER) AS dattablespace, 0 AS datfrozenxid, 0 AS datminmxid`)
	add("pg_tables", `SELECT 'public' AS schemaname, m.name AS tablename, 'tandem' AS tableowner, NULL AS tablespace,
			EXISTS (SELECT 1 FROM _pg_index_all i WHERE i.tbl = m.name) AS hasindexes, 0 AS hasrules, 0 AS hastriggers, 0 AS rowsecurity
		FROM `+userTables+` AND m.type = 'table' AND NOT EXISTS (SELECT 1 FROM main._tandem_matviews mv WHERE mv.name = m.name)`)
	// A materialized view: its table and its record (_tandem_matviews).
	add("pg_matviews", `SELECT 'public' AS schemaname, mv.name AS matviewname, 'tandem' AS matviewowner, NULL AS tablespace,
			EXISTS (SELECT 1 FROM _pg_index_all i WHERE i.tbl = mv.name) AS hasindexes, mv.populated AS ispopulated,
			_tandem_viewdef(mv.definition) AS definition
		FROM main._tandem_matviews mv WHERE EXISTS (SELECT 1 FROM main.sqlite_schema m WHERE m.type = 'table' AND m.name = mv.name)`)
	// A view's definition: its query as PostgreSQL's SQL, as recorded at
	// CREATE VIEW, while SQLite's text is still the one recorded with it;
	// else (a view from before, or one SQLite rewrote for a rename) the
	// query SQLite runs.
	add("pg_views", `SELECT 'public' AS schemaname, m.name AS viewname, 'tandem' AS viewowner,
			_tandem_viewdef(coalesce((SELECT tv.definition FROM main._tandem_views tv WHERE tv.name = m.name AND tv.sqlite_sql = m.sql),
				substr(m.sql, instr(upper(m.sql), ' AS ') + 4))) AS definition
		FROM `+userTables+` AND m.type = 'view'`)
	add("pg_indexes", `SELECT 'public' AS schemaname, i.tbl AS tablename, i.relname AS indexname, NULL AS tablespace,
			'CREATE ' || CASE WHEN i.isunique THEN 'UNIQUE ' ELSE '' END || 'INDEX ' || quote_ident(i.relname) || ' ON public.' || quote_ident(i.tbl) || ' USING ' || coalesce(i.method, 'btree') || ' (' || i.keys || ')' || coalesce(' WHERE ' || nullif(i.pred, ''), '') AS indexdef
		FROM _pg_index_all i`)
	add("pg_sequences", `SELECT 'public' AS schemaname, name AS sequencename, 'tandem' AS sequenceowner, CAST(type_oid AS INTEGER) AS data_type,
			start_value, min_value, max_value, increment AS increment_by, cycle, 1 AS cache_size, CASE WHEN is_called THEN last_value END AS last_value FROM main._tandem_sequences`)
	add("pg_sequence", `SELECT CAST(_tandem_oid(name) AS INTEGER) AS seqrelid, CAST(type_oid AS INTEGER) AS seqtypid, start_value AS seqstart,
			increment AS seqincrement, max_value AS seqmax, min_value AS seqmin, 1 AS seqcache, cycle AS seqcycle FROM main._tandem_sequences`)
	// A sequence read as a relation (SELECT last_value, is_called FROM s):
	// the translator reads this view for s (sequenceRelations).
	add("_pg_seqrel", `SELECT name AS seqname, last_value, CAST(0 AS INTEGER) AS log_cnt, is_called FROM main._tandem_sequences`)
	add("pg_tablespace", `SELECT CAST(1663 AS INTEGER) AS oid, 'pg_default' AS spcname, CAST(10 AS INTEGER) AS spcowner, NULL AS spcacl, NULL AS spcoptions
		UNION ALL SELECT 1664, 'pg_global', 10, NULL, NULL`)
	add("pg_settings", `SELECT column1 AS name, column2 AS setting, NULL AS unit, 'tandem' AS category, '' AS short_desc, '' AS extra_desc,
			'user' AS context, 'string' AS vartype, 'default' AS source, NULL AS min_val, NULL AS max_val, NULL AS enumvals,
			column2 AS boot_val, column2 AS reset_val, NULL AS sourcefile, NULL AS sourceline, 0 AS pending_restart
		FROM (VALUES ('server_version', '15.0'), ('server_version_num', '150000'), ('server_encoding', 'UTF8'), ('client_encoding', 'UTF8'),
			('DateStyle', 'ISO, MDY'), ('TimeZone', 'UTC'), ('standard_conforming_strings', 'on'), ('integer_datetimes', 'on'),
			('max_connections', '100'), ('search_path', '"$user", public'), ('default_transaction_isolation', 'read committed'), ('max_identifier_length', '63'),
			('max_index_keys', '32'), ('max_function_args', '100'), ('block_size', '8192'))`)
	usersMu.Lock()
	var roles []string
	for i, u := range users {
		roles = append(roles, fmt.Sprintf("(%d, %s)", 10+i*0, quoteLit(u)))
		_ = i
	}
	usersMu.Unlock()
	// pg_database_owner owns the public schema, as in PostgreSQL 15 (a
	// role nobody logs in as; pg_dump looks owners up here).
	roles = append(roles, "(6171, 'pg_database_owner')")
	roleCols := `CAST(column1 AS INTEGER) AS oid, column2 AS rolname, column1 <> 6171 AS rolsuper, 1 AS rolinherit, column1 <> 6171 AS rolcreaterole,
			column1 <> 6171 AS rolcreatedb, column1 <> 6171 AS rolcanlogin, 0 AS rolreplication, -1 AS rolconnlimit, '********' AS rolpassword, NULL AS rolvaliduntil, 0 AS rolbypassrls, NULL AS rolconfig`
	add("pg_roles", "SELECT "+roleCols+" FROM (VALUES "+strings.Join(roles, ", ")+")")
	add("pg_authid", "SELECT "+roleCols+" FROM (VALUES "+strings.Join(roles, ", ")+")")
	add("pg_user", `SELECT rolname AS usename, oid AS usesysid, rolcreatedb AS usecreatedb, rolsuper AS usesuper, rolreplication AS userepl,
			rolbypassrls AS usebypassrls, rolpassword AS passwd, rolvaliduntil AS valuntil, rolconfig AS useconfig FROM pg_roles WHERE rolcanlogin`)
	add("pg_auth_members", `SELECT CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS roleid, CAST(0 AS INTEGER) AS member, CAST(0 AS INTEGER) AS grantor, 0 AS admin_option WHERE 0`)
	add("pg_collation", `SELECT CAST(100 AS INTEGER) AS oid, 'default' AS collname, CAST(11 AS INTEGER) AS collnamespace, CAST(10 AS INTEGER) AS collowner,
			'd' AS collprovider, 1 AS collisdeterministic, -1 AS collencoding, NULL AS collcollate, NULL AS collctype, NULL AS colliculocale, NULL AS collversion`)
	add("pg_description", descriptionSQL)
	add("pg_proc", `SELECT CAST(0 AS INTEGER) AS oid, '' AS proname, CAST(11 AS INTEGER) AS pronamespace, CAST(10 AS INTEGER) AS proowner,
			CAST(0 AS INTEGER) AS prolang, 0 AS procost, 0 AS prorows, CAST(0 AS INTEGER) AS provariadic, 'f' AS prokind, 0 AS prosecdef,
			0 AS proleakproof, 0 AS proisstrict, 0 AS proretset, 'v' AS provolatile, 'u' AS proparallel, 0 AS pronargs, 0 AS pronargdefaults,
			CAST(0 AS INTEGER) AS prorettype, '' AS proargtypes, NULL AS proallargtypes, NULL AS proargmodes, NULL AS proargnames,
			NULL AS proargdefaults, NULL AS protrftypes, NULL AS prosrc, NULL AS probin, NULL AS prosqlbody, NULL AS proconfig, NULL AS proacl WHERE 0`)
	for _, empty := range []struct{ name, cols string }{
		{"pg_inherits", "CAST(0 AS INTEGER) AS inhrelid, CAST(0 AS INTEGER) AS inhparent, 0 AS inhseqno, 0 AS inhdetachpending"},
		{"pg_trigger", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS tgrelid, CAST(0 AS INTEGER) AS tgparentid, '' AS tgname, CAST(0 AS INTEGER) AS tgfoid, 0 AS tgtype, 0 AS tgisinternal, 'O' AS tgenabled, CAST(0 AS INTEGER) AS tgconstrrelid, CAST(0 AS INTEGER) AS tgconstrindid, CAST(0 AS INTEGER) AS tgconstraint, 0 AS tgdeferrable, 0 AS tginitdeferred, 0 AS tgnargs, '' AS tgattr, NULL AS tgargs, NULL AS tgqual, NULL AS tgoldtable, NULL AS tgnewtable"},
		{"pg_policy", "CAST(0 AS INTEGER) AS oid, '' AS polname, CAST(0 AS INTEGER) AS polrelid, '' AS polcmd, 1 AS polpermissive, NULL AS polroles, NULL AS polqual, NULL AS polwithcheck"},
		{"pg_statistic_ext", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS stxrelid, '' AS stxname, CAST(0 AS INTEGER) AS stxnamespace, CAST(10 AS INTEGER) AS stxowner, '' AS stxkeys, -1 AS stxstattarget, '' AS stxkind, NULL AS stxexprs"},
		{"pg_publication", "CAST(0 AS INTEGER) AS oid, '' AS pubname, CAST(10 AS INTEGER) AS pubowner, 0 AS puballtables, 0 AS pubinsert, 0 AS pubupdate, 0 AS pubdelete, 0 AS pubtruncate, 0 AS pubviaroot"},
		{"pg_publication_rel", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS prpubid, CAST(0 AS INTEGER) AS prrelid, NULL AS prqual, NULL AS prattrs"},
		{"pg_publication_namespace", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS pnpubid, CAST(0 AS INTEGER) AS pnnspid"},
		{"pg_partitioned_table", "CAST(0 AS INTEGER) AS partrelid, '' AS partstrat, 0 AS partnatts, CAST(0 AS INTEGER) AS partdefid, '' AS partattrs, '' AS partclass, '' AS partcollation, NULL AS partexprs"},
		{"pg_foreign_table", "CAST(0 AS INTEGER) AS ftrelid, CAST(0 AS INTEGER) AS ftserver"},
		{"pg_extension", "CAST(0 AS INTEGER) AS oid, '' AS extname, CAST(0 AS INTEGER) AS extowner, CAST(0 AS INTEGER) AS extnamespace, 0 AS extrelocatable, '' AS extversion, NULL AS extconfig, NULL AS extcondition"},
		{"pg_event_trigger", "CAST(0 AS INTEGER) AS oid, '' AS evtname, '' AS evtevent, CAST(10 AS INTEGER) AS evtowner, CAST(0 AS INTEGER) AS evtfoid, 'O' AS evtenabled, NULL AS evttags"},
		{"pg_opfamily", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS opfmethod, '' AS opfname, CAST(11 AS INTEGER) AS opfnamespace, CAST(10 AS INTEGER) AS opfowner"},
		{"pg_amop", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS amopfamily, CAST(0 AS INTEGER) AS amoplefttype, CAST(0 AS INTEGER) AS amoprighttype, 0 AS amopstrategy, 's' AS amoppurpose, CAST(0 AS INTEGER) AS amopopr, CAST(0 AS INTEGER) AS amopmethod, CAST(0 AS INTEGER) AS amopsortfamily"},
		{"pg_amproc", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS amprocfamily, CAST(0 AS INTEGER) AS amproclefttype, CAST(0 AS INTEGER) AS amprocrighttype, 0 AS amprocnum, CAST(0 AS INTEGER) AS amproc"},
		{"pg_language", "CAST(0 AS INTEGER) AS oid, '' AS lanname, CAST(10 AS INTEGER) AS lanowner, 0 AS lanispl, 0 AS lanpltrusted, CAST(0 AS INTEGER) AS lanplcallfoid, CAST(0 AS INTEGER) AS laninline, CAST(0 AS INTEGER) AS lanvalidator, NULL AS lanacl"},
		{"pg_aggregate", "CAST(0 AS INTEGER) AS aggfnoid, 'n' AS aggkind, 0 AS aggnumdirectargs, CAST(0 AS INTEGER) AS aggtransfn, CAST(0 AS INTEGER) AS aggfinalfn, CAST(0 AS INTEGER) AS aggtranstype, NULL AS agginitval"},
		{"pg_ts_parser", "CAST(0 AS INTEGER) AS oid, '' AS prsname, CAST(11 AS INTEGER) AS prsnamespace, CAST(0 AS INTEGER) AS prsstart, CAST(0 AS INTEGER) AS prstoken, CAST(0 AS INTEGER) AS prsend, CAST(0 AS INTEGER) AS prsheadline, CAST(0 AS INTEGER) AS prslextype"},
		{"pg_ts_template", "CAST(0 AS INTEGER) AS oid, '' AS tmplname, CAST(11 AS INTEGER) AS tmplnamespace, CAST(0 AS INTEGER) AS tmplinit, CAST(0 AS INTEGER) AS tmpllexize"},
		{"pg_ts_dict", "CAST(0 AS INTEGER) AS oid, '' AS dictname, CAST(11 AS INTEGER) AS dictnamespace, CAST(10 AS INTEGER) AS dictowner, CAST(0 AS INTEGER) AS dicttemplate, NULL AS dictinitoption"},
		{"pg_ts_config", "CAST(0 AS INTEGER) AS oid, '' AS cfgname, CAST(11 AS INTEGER) AS cfgnamespace, CAST(10 AS INTEGER) AS cfgowner, CAST(0 AS INTEGER) AS cfgparser"},
		{"pg_foreign_data_wrapper", "CAST(0 AS INTEGER) AS oid, '' AS fdwname, CAST(10 AS INTEGER) AS fdwowner, CAST(0 AS INTEGER) AS fdwhandler, CAST(0 AS INTEGER) AS fdwvalidator, NULL AS fdwacl, NULL AS fdwoptions"},
		{"pg_default_acl", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS defaclrole, CAST(0 AS INTEGER) AS defaclnamespace, 'r' AS defaclobjtype, NULL AS defaclacl"},
		{"pg_conversion", "CAST(0 AS INTEGER) AS oid, '' AS conname, CAST(11 AS INTEGER) AS connamespace, CAST(10 AS INTEGER) AS conowner, 0 AS conforencoding, 0 AS contoencoding, CAST(0 AS INTEGER) AS conproc, 0 AS condefault"},
		{"pg_cast", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS castsource, CAST(0 AS INTEGER) AS casttarget, CAST(0 AS INTEGER) AS castfunc, 'e' AS castcontext, 'f' AS castmethod"},
		{"pg_transform", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS trftype, CAST(0 AS INTEGER) AS trflang, CAST(0 AS INTEGER) AS trffromsql, CAST(0 AS INTEGER) AS trftosql"},
		{"pg_subscription", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS subdbid, '' AS subname, CAST(10 AS INTEGER) AS subowner, 0 AS subenabled, 0 AS subbinary, 0 AS substream, 'd' AS subtwophasestate, 0 AS subdisableonerr, '' AS subconninfo, NULL AS subslotname, '' AS subsynccommit, NULL AS subpublications"},
		{"pg_largeobject_metadata", "CAST(0 AS INTEGER) AS oid, CAST(10 AS INTEGER) AS lomowner, NULL AS lomacl"},
		{"pg_init_privs", "CAST(0 AS INTEGER) AS objoid, CAST(0 AS INTEGER) AS classoid, 0 AS objsubid, 'i' AS privtype, NULL AS initprivs"},
		{"pg_seclabel", "CAST(0 AS INTEGER) AS objoid, CAST(0 AS INTEGER) AS classoid, 0 AS objsubid, '' AS provider, '' AS label"},
		{"pg_seclabels", "CAST(0 AS INTEGER) AS objoid, CAST(0 AS INTEGER) AS classoid, 0 AS objsubid, '' AS objtype, CAST(0 AS INTEGER) AS objnamespace, '' AS objname, '' AS provider, '' AS label"},
		{"pg_db_role_setting", "CAST(0 AS INTEGER) AS setdatabase, CAST(0 AS INTEGER) AS setrole, NULL AS setconfig"},
		{"pg_shseclabel", "CAST(0 AS INTEGER) AS objoid, CAST(0 AS INTEGER) AS classoid, '' AS provider, '' AS label"},
		{"pg_options_to_table", "'' AS option_name, '' AS option_value"},
		{"pg_user_mapping", "CAST(0 AS INTEGER) AS oid, CAST(0 AS INTEGER) AS umuser, CAST(0 AS INTEGER) AS umserver, NULL AS umoptions"},
		{"pg_operator", "CAST(0 AS INTEGER) AS oid, '' AS oprname, CAST(11 AS INTEGER) AS oprnamespace, CAST(10 AS INTEGER) AS oprowner, 'b' AS oprkind, 0 AS oprcanmerge, 0 AS oprcanhash, CAST(0 AS INTEGER) AS oprleft, CAST(0 AS INTEGER) AS oprright, CAST(0 AS INTEGER) AS oprresult, CAST(0 AS INTEGER) AS oprcom, CAST(0 AS INTEGER) AS oprnegate, CAST(0 AS INTEGER) AS oprcode, CAST(0 AS INTEGER) AS oprrest, CAST(0 AS INTEGER) AS oprjoin"},
		{"pg_shdescription", "CAST(0 AS INTEGER) AS objoid, CAST(0 AS INTEGER) AS classoid, '' AS description"},
		{"pg_foreign_server", "CAST(0 AS INTEGER) AS oid, '' AS srvname, CAST(10 AS INTEGER) AS srvowner, CAST(0 AS INTEGER) AS srvfdw, NULL AS srvtype, NULL AS srvversion, NULL AS srvacl, NULL AS srvoptions"},
		{"pg_matviews", "'' AS schemaname, '' AS matviewname, '' AS matviewowner, NULL AS tablespace, 0 AS hasindexes, 0 AS ispopulated, '' AS definition"},
		{"pg_policy", "CAST(0 AS INTEGER) AS oid, '' AS polname, CAST(0 AS INTEGER) AS polrelid, '*' AS polcmd, 1 AS polpermissive, NULL AS polroles, NULL AS polqual, NULL AS polwithcheck"},
		{"pg_policies", "'' AS schemaname, '' AS tablename, '' AS policyname, '' AS permissive, NULL AS roles, '' AS cmd, NULL AS qual, NULL AS with_check"},
		{"pg_rules", "'' AS schemaname, '' AS tablename, '' AS rulename, '' AS definition"},
		{"pg_prepared_xacts", "CAST(0 AS INTEGER) AS \"transaction\", '' AS gid, NULL AS prepared, '' AS owner, '' AS \"database\""},
		{"pg_publication_tables", "'' AS pubname, '' AS schemaname, '' AS tablename, NULL AS attnames, NULL AS rowfilter"},
		{"pg_range", "CAST(0 AS INTEGER) AS rngtypid, CAST(0 AS INTEGER) AS rngsubtype, CAST(0 AS INTEGER) AS rngmultitypid, CAST(0 AS INTEGER) AS rngcollation, CAST(0 AS INTEGER) AS rngsubopc, CAST(0 AS INTEGER) AS rngcanonical, CAST(0 AS INTEGER) AS rngsubdiff"},
	} {
		add(empty.name, "SELECT "+empty.cols+" WHERE 0")
	}
	// This node's sessions (pgwire.Activities), as PostgreSQL 15 shows
	// them; wait events, transaction ids and query ids are not tracked.
	add("pg_stat_activity", `SELECT CAST(16384 AS INTEGER) AS datid, json_extract(value, '$.datname') AS datname, json_extract(value, '$.pid') AS pid,
			NULL AS leader_pid, CAST(10 AS INTEGER) AS usesysid, json_extract(value, '$.usename') AS usename,
			json_extract(value, '$.application_name') AS application_name, json_extract(value, '$.client_addr') AS client_addr,
			NULL AS client_hostname, json_extract(value, '$.client_port') AS client_port, json_extract(value, '$.backend_start') AS backend_start,
			json_extract(value, '$.xact_start') AS xact_start, json_extract(value, '$.query_start') AS query_start,
			json_extract(value, '$.state_change') AS state_change, NULL AS wait_event_type, NULL AS wait_event,
			json_extract(value, '$.state') AS state, NULL AS backend_xid, NULL AS backend_xmin, NULL AS query_id,
			json_extract(value, '$.query') AS query, 'client backend' AS backend_type
		FROM json_each(_tandem_activity())`)
	// pg_get_keywords(): PostgreSQL 15's keywords (pgjdbc's
	// DatabaseMetaData.getSQLKeywords reads them; Hibernate asks at start).
	add("pg_get_keywords", keywordsSQL())
	// Statistics views: the user tables, with no counters (SQLite keeps
	// none: NULL, not a made-up zero). Sequelize's describeTable joins
	// pg_statio_all_tables to read column comments.
	for _, v := range []string{"pg_statio_all_tables", "pg_statio_user_tables"} {
		add(v, `SELECT CAST(_tandem_oid(m.name) AS INTEGER) AS relid, 'public' AS schemaname, m.name AS relname,
			NULL AS heap_blks_read, NULL AS heap_blks_hit, NULL AS idx_blks_read, NULL AS idx_blks_hit,
			NULL AS toast_blks_read, NULL AS toast_blks_hit, NULL AS tidx_blks_read, NULL AS tidx_blks_hit
		FROM `+userTables+` AND m.type = 'table'`)
	}
	for _, v := range []string{"pg_stat_all_tables", "pg_stat_user_tables"} {
		add(v, `SELECT CAST(_tandem_oid(m.name) AS INTEGER) AS relid, 'public' AS schemaname, m.name AS relname,
			NULL AS seq_scan, NULL AS seq_tup_read, NULL AS idx_scan, NULL AS idx_tup_fetch, NULL AS n_tup_ins, NULL AS n_tup_upd,
			NULL AS n_tup_del, NULL AS n_tup_hot_upd, NULL AS n_live_tup, NULL AS n_dead_tup, NULL AS n_mod_since_analyze,
			NULL AS n_ins_since_vacuum, NULL AS last_vacuum, NULL AS last_autovacuum, NULL AS last_analyze, NULL AS last_autoanalyze,
			NULL AS vacuum_count, NULL AS autovacuum_count, NULL AS analyze_count, NULL AS autoanalyze_count
		FROM `+userTables+` AND m.type = 'table'`)
	}
	// Index statistics: the indexes, counts NULL (not kept here).
	for _, v := range []string{"pg_stat_all_indexes", "pg_stat_user_indexes"} {
		add(v, `SELECT CAST(_tandem_oid(i.tbl) AS INTEGER) AS relid, CAST(_tandem_oid(i.relname) AS INTEGER) AS indexrelid, 'public' AS schemaname,
			i.tbl AS relname, i.relname AS indexrelname, NULL AS idx_scan, NULL AS idx_tup_read, NULL AS idx_tup_fetch
		FROM _pg_index_all i`)
	}
	for _, v := range []string{"pg_statio_all_indexes", "pg_statio_user_indexes"} {
		add(v, `SELECT CAST(_tandem_oid(i.tbl) AS INTEGER) AS relid, CAST(_tandem_oid(i.relname) AS INTEGER) AS indexrelid, 'public' AS schemaname,
			i.tbl AS relname, i.relname AS indexrelname, NULL AS idx_blks_read, NULL AS idx_blks_hit
		FROM _pg_index_all i`)
	}
	add("information_schema.schemata", `SELECT 'tandem' AS catalog_name, column1 AS schema_name, 'tandem' AS schema_owner, NULL AS default_character_set_catalog,
			NULL AS default_character_set_schema, NULL AS default_character_set_name, NULL AS sql_path
		FROM (VALUES ('public'), ('pg_catalog'), ('information_schema'))`)
	add("information_schema.sequences", `SELECT 'tandem' AS sequence_catalog, 'public' AS sequence_schema, name AS sequence_name,
			CASE type_oid WHEN 21 THEN 'smallint' WHEN 23 THEN 'integer' ELSE 'bigint' END AS data_type,
			CASE type_oid WHEN 21 THEN 16 WHEN 23 THEN 32 ELSE 64 END AS numeric_precision, 2 AS numeric_precision_radix, 0 AS numeric_scale,
			CAST(start_value AS TEXT) AS start_value, CAST(min_value AS TEXT) AS minimum_value, CAST(max_value AS TEXT) AS maximum_value,
			CAST(increment AS TEXT) AS increment, CASE WHEN cycle THEN 'YES' ELSE 'NO' END AS cycle_option
		FROM main._tandem_sequences`)
	add("information_schema.tables", `SELECT 'tandem' AS table_catalog, 'public' AS table_schema, m.name AS table_name,
			CASE m.type WHEN 'table' THEN 'BASE TABLE' ELSE 'VIEW' END AS table_type, NULL AS self_referencing_column_name,
			NULL AS reference_generation, NULL AS user_defined_type_catalog, NULL AS user_defined_type_schema, NULL AS user_defined_type_name,
			CASE m.type WHEN 'table' THEN 'YES' ELSE 'NO' END AS is_insertable_into, 'NO' AS is_typed, NULL AS commit_action
		FROM `+userTables+` AND m.type IN ('table', 'view') AND NOT EXISTS (SELECT 1 FROM main._tandem_matviews mv WHERE mv.name = m.name)`)
	add("information_schema.columns", `SELECT 'tandem' AS table_catalog, 'public' AS table_schema, m.name AS table_name, p.name AS column_name,
			p.cid + 1 AS ordinal_position, CASE WHEN p.hidden IN (2, 3) THEN NULL ELSE `+colDefault+` END AS column_default, CASE WHEN p."notnull" OR p.pk > 0 THEN 'NO' ELSE 'YES' END AS is_nullable,
			_tandem_type_sql(coalesce(tc.type_oid, _tandem_decl_oid(p.type))) AS data_type,
			CASE WHEN coalesce(tc.type_oid, 0) IN (1043, 1042) AND tc.typmod > 4 THEN tc.typmod - 4 END AS character_maximum_length,
			NULL AS character_octet_length,
			CASE coalesce(tc.type_oid, _tandem_decl_oid(p.type)) WHEN 21 THEN 16 WHEN 23 THEN 32 WHEN 20 THEN 64 WHEN 700 THEN 24 WHEN 701 THEN 53
				WHEN 1700 THEN CASE WHEN tc.typmod > 4 THEN (tc.typmod - 4) >> 16 END END AS numeric_precision,
			CASE coalesce(tc.type_oid, _tandem_decl_oid(p.type)) WHEN 21 THEN 2 WHEN 23 THEN 2 WHEN 20 THEN 2 WHEN 700 THEN 2 WHEN 701 THEN 2 WHEN 1700 THEN 10 END AS numeric_precision_radix,
			CASE coalesce(tc.type_oid, _tandem_decl_oid(p.type)) WHEN 21 THEN 0 WHEN 23 THEN 0 WHEN 20 THEN 0
				WHEN 1700 THEN CASE WHEN tc.typmod > 4 THEN (tc.typmod - 4) & 65535 END END AS numeric_scale,
			CASE WHEN coalesce(tc.type_oid, _tandem_decl_oid(p.type)) IN (1083, 1114, 1184, 1266) THEN CASE WHEN coalesce(tc.typmod, -1) >= 0 THEN tc.typmod ELSE 6 END
				WHEN coalesce(tc.type_oid, _tandem_decl_oid(p.type)) = 1082 THEN 0 WHEN coalesce(tc.type_oid, _tandem_decl_oid(p.type)) = 1186 THEN 6 END AS datetime_precision,
			NULL AS interval_type, NULL AS interval_precision, NULL AS character_set_catalog, NULL AS character_set_schema,
			NULL AS character_set_name, NULL AS collation_catalog, NULL AS collation_schema, NULL AS collation_name, NULL AS domain_catalog,
			NULL AS domain_schema, NULL AS domain_name, 'tandem' AS udt_catalog, CASE WHEN tc.type_oid >= 900000 THEN 'public' ELSE 'pg_catalog' END AS udt_schema,
			_tandem_type_name(coalesce(tc.type_oid, _tandem_decl_oid(p.type))) AS udt_name,
			NULL AS scope_catalog, NULL AS scope_schema, NULL AS scope_name, NULL AS maximum_cardinality,
			CAST(p.cid + 1 AS TEXT) AS dtd_identifier, 'NO' AS is_self_referencing,
			CASE WHEN coalesce(tc.identity, '') <> '' THEN 'YES' ELSE 'NO' END AS is_identity,
			CASE tc.identity WHEN 'a' THEN 'ALWAYS' WHEN 'd' THEN 'BY DEFAULT' END AS identity_generation,
			CAST(sq.start_value AS TEXT) AS identity_start, CAST(sq.increment AS TEXT) AS identity_increment,
			CAST(sq.max_value AS TEXT) AS identity_maximum, CAST(sq.min_value AS TEXT) AS identity_minimum,
			CASE WHEN sq.cycle THEN 'YES' ELSE 'NO' END AS identity_cycle,
			CASE WHEN p.hidden IN (2, 3) THEN 'ALWAYS' ELSE 'NEVER' END AS is_generated,
			CASE WHEN p.hidden IN (2, 3) THEN `+colGenerated+` END AS generation_expression, 'YES' AS is_updatable
		FROM main.sqlite_schema m, pragma_table_xinfo(m.name) p LEFT JOIN main._tandem_columns tc ON tc.table_name = m.name AND tc.column_name = p.name
			LEFT JOIN main._tandem_sequences sq ON sq.name = tc.sequence AND coalesce(tc.identity, '') <> ''
		WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type IN ('table', 'view') AND NOT EXISTS (SELECT 1 FROM main._tandem_matviews mv WHERE mv.name = m.name)`)
	// As PostgreSQL 15, table_constraints lists each NOT NULL column as a
	// CHECK constraint named <namespace oid>_<table oid>_<column>_not_null.
	add("information_schema.table_constraints", `SELECT 'tandem' AS constraint_catalog, 'public' AS constraint_schema, c.conname AS constraint_name,
			'tandem' AS table_catalog, 'public' AS table_schema, (SELECT relname FROM pg_class WHERE oid = c.conrelid) AS table_name,
			CASE c.contype WHEN 'p' THEN 'PRIMARY KEY' WHEN 'u' THEN 'UNIQUE' WHEN 'f' THEN 'FOREIGN KEY' ELSE 'CHECK' END AS constraint_type,
			CASE WHEN c.condeferrable THEN 'YES' ELSE 'NO' END AS is_deferrable, CASE WHEN c.condeferred THEN 'YES' ELSE 'NO' END AS initially_deferred,
			'YES' AS enforced, NULL AS nulls_distinct
		FROM pg_constraint c
		UNION ALL
		SELECT 'tandem', 'public', '2200_' || _tandem_oid(m.name) || '_' || (p.cid + 1) || '_not_null', 'tandem', 'public', m.name,
			'CHECK', 'NO', 'NO', 'YES', NULL
		FROM main.sqlite_schema m, pragma_table_xinfo(m.name) p
		WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type = 'table' AND (p."notnull" OR p.pk > 0)`)
	// CHECK constraints as PostgreSQL 15 lists them: each CHECK with its
	// deparsed expression, and each NOT NULL column as a check of its own
	// (named as in table_constraints). PostgreSQL's also lists its
	// catalogs' NOT NULL columns; tandem's, the user tables' only.
	add("information_schema.check_constraints", `SELECT 'tandem' AS constraint_catalog, 'public' AS constraint_schema, c.conname AS constraint_name,
			substr(c._condef, 7) AS check_clause
		FROM pg_constraint c WHERE c.contype = 'c'
		UNION ALL
		SELECT 'tandem', 'public', '2200_' || _tandem_oid(m.name) || '_' || (p.cid + 1) || '_not_null', p.name || ' IS NOT NULL'
		FROM main.sqlite_schema m, pragma_table_xinfo(m.name) p
		WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type = 'table' AND (p."notnull" OR p.pk > 0)`)
	// The columns of PRIMARY KEY, UNIQUE and FOREIGN KEY constraints
	// (GORM's AutoMigrate reads them to find a table's unique columns).
	add("information_schema.key_column_usage", `SELECT 'tandem' AS constraint_catalog, 'public' AS constraint_schema, i.relname AS constraint_name,
			'tandem' AS table_catalog, 'public' AS table_schema, i.tbl AS table_name, ii.name AS column_name,
			ii.seqno + 1 AS ordinal_position, CAST(NULL AS INTEGER) AS position_in_unique_constraint
		FROM _pg_index_all i, pragma_index_info(i.sqlite_name) ii WHERE i.origin IN ('pk', 'u') AND i.sqlite_name IS NOT NULL
		UNION ALL
		SELECT 'tandem', 'public', i.relname, 'tandem', 'public', i.tbl, (SELECT p.name FROM pragma_table_xinfo(i.tbl) p WHERE p.pk = 1), 1, NULL
		FROM _pg_index_all i WHERE i.origin = 'pk' AND i.sqlite_name IS NULL
		UNION ALL
		SELECT 'tandem', 'public', `+fkNameSQL+`, 'tandem', 'public', m.name, f."from", f.seq + 1, f.seq + 1
		FROM main.sqlite_schema m, pragma_foreign_key_list(m.name) f
		WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type = 'table'`)
	// Foreign keys with the key constraint they reference (none when that
	// is a unique index, not a constraint) and their actions (peewee's
	// and Doctrine's introspection read it).
	add("information_schema.referential_constraints", `SELECT 'tandem' AS constraint_catalog, 'public' AS constraint_schema, c.conname AS constraint_name,
			CASE WHEN k.conname IS NOT NULL THEN 'tandem' END AS unique_constraint_catalog,
			CASE WHEN k.conname IS NOT NULL THEN 'public' END AS unique_constraint_schema, k.conname AS unique_constraint_name,
			CASE c.confmatchtype WHEN 'f' THEN 'FULL' WHEN 'p' THEN 'PARTIAL' ELSE 'NONE' END AS match_option,
			`+fkRule("c.confupdtype")+` AS update_rule, `+fkRule("c.confdeltype")+` AS delete_rule
		FROM pg_constraint c LEFT JOIN pg_constraint k ON k.contype IN ('p', 'u') AND k.conrelid = c.confrelid AND _tandem_same_keys(k.conkey, c.confkey)
		WHERE c.contype = 'f'`)
	// The columns each constraint uses: its own table's for a key or a
	// CHECK, the referenced table's for a foreign key (as PostgreSQL).
	add("information_schema.constraint_column_usage", `SELECT 'tandem' AS table_catalog, 'public' AS table_schema, k.table_name AS table_name,
			k.column_name AS column_name, 'tandem' AS constraint_catalog, 'public' AS constraint_schema, k.constraint_name AS constraint_name
		FROM _is_key_column_usage k WHERE k.position_in_unique_constraint IS NULL
		UNION ALL
		SELECT 'tandem', 'public', f."table", coalesce(f."to", (SELECT p.name FROM pragma_table_xinfo(f."table") p WHERE p.pk = f.seq + 1)),
			'tandem', 'public', `+fkNameSQL+`
		FROM main.sqlite_schema m, pragma_foreign_key_list(m.name) f
		WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type = 'table'
		UNION ALL
		SELECT 'tandem', 'public', m.name, p.name, 'tandem', 'public', json_extract(c.value, '$.name')
		FROM main.sqlite_schema m, json_each(_tandem_checks(m.sql)) c, json_each(json_extract(c.value, '$.cols')) k
			JOIN pragma_table_xinfo(m.name) p ON lower(p.name) = lower(k.value)
		WHERE m.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND m.name NOT LIKE '\_tandem\_%' ESCAPE '\' AND m.type = 'table' AND m.sql LIKE '%CHECK%'`)
	return v
}

// typeIOFuncs are a type's input, output, receive and send functions as
// PostgreSQL names them (array_in for every array type: ActiveRecord
// registers an array type only when its typinput is array_in).
func typeIOFuncs(t *Type) (in, out, recv, send string) {
	if t.Cat == 'A' && t.Elem != 0 && t.Name != "int2vector" && t.Name != "oidvector" {
		return "array_in", "array_out", "array_recv", "array_send"
	}
	switch t.Name {
	case "numeric", "date", "time", "timetz", "timestamp", "timestamptz", "interval", "uuid", "json", "jsonb", "jsonpath",
		"inet", "cidr", "macaddr", "xml", "bit", "varbit", "pg_lsn":
		return t.Name + "_in", t.Name + "_out", t.Name + "_recv", t.Name + "_send"
	case "money":
		return "cash_in", "cash_out", "cash_recv", "cash_send"
	}
	if t.Cat == 'R' {
		return "range_in", "range_out", "range_recv", "range_send"
	}
	return t.Name + "in", t.Name + "out", t.Name + "recv", t.Name + "send"
}

// fkRule is information_schema's word for a foreign key action code.
func fkRule(col string) string {
	return "CASE " + col + " WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END"
}

var (
	catalogOnce sync.Once
	catalogDDL  []string
)

// InstallCatalog creates the catalog's views on one connection; exec runs
// one SQL script on it.
func InstallCatalog(exec func(sql string) error) error {
	catalogOnce.Do(func() { catalogDDL = catalogSQL() })
	for _, q := range catalogDDL {
		if err := exec(q); err != nil {
			return fmt.Errorf("sqlpg: catalog view: %w\n%s", err, q)
		}
	}
	return nil
}

var namespaces = map[int64]string{nsCatalog: "pg_catalog", nsPublic: "public", nsInfo: "information_schema"}

// regnamespaceName is regnamespace's output: the schema's name, or the
// number of an OID that names none.
func regnamespaceName(v any) any {
	if x, ok := v.(int64); ok {
		if name, ok := namespaces[x]; ok {
			return quoteIdentIfNeeded(name)
		}
		return strconv.FormatInt(x, 10)
	}
	return v
}

// regnamespaceOID is regnamespace's input: a schema's name (as an
// identifier: lower case unless quoted) or an OID written as digits.
func regnamespaceOID(s string) (any, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	name := RegclassName(s)
	for oid, n := range namespaces {
		if n == name {
			return oid, nil
		}
	}
	return nil, fmt.Errorf("[SQLSTATE 3F000] schema %q does not exist", name)
}

// FormatType is PostgreSQL's format_type(oid, typmod).
func FormatType(oid int64, typmod int64) string {
	t := Types[uint32(oid)]
	if t == nil {
		return "???"
	}
	base := t.SQL
	arr := ""
	if t.Elem != 0 {
		if e := Types[t.Elem]; e != nil {
			base, arr = e.SQL, "[]"
			t = e
		}
	}
	if typmod >= 0 {
		switch t.Name {
		case "varchar", "bpchar":
			if typmod > 4 {
				base += fmt.Sprintf("(%d)", typmod-4)
			}
		case "numeric":
			if typmod > 4 {
				m := typmod - 4
				base += fmt.Sprintf("(%d,%d)", m>>16, m&0xffff)
			}
		case "timestamp", "timestamptz", "time", "timetz":
			word := strings.Index(base, " ")
			if word > 0 {
				base = base[:word] + fmt.Sprintf("(%d)", typmod) + base[word:]
			}
		}
	}
	return base + arr
}

// colDefault is a column's default as PostgreSQL shows it (pg_attrdef,
// information_schema.columns): nextval('t_id_seq'::regclass) for a serial
// column, none for an identity column, else SQLite's default expression
// (p: its pragma_table_xinfo row, tc: its _tandem_columns row; the catalog
// reads pragma_table_xinfo, which lists generated columns too).
const colDefault = `(CASE WHEN p.hidden IN (2, 3) THEN ` + colGenerated + ` WHEN tc.sequence IS NOT NULL THEN CASE WHEN coalesce(tc.identity, '') = '' THEN 'nextval(''' || _tandem_qualify(tc.sequence) || '''::regclass)' END ELSE _tandem_display_default(p.dflt_value, coalesce(tc.type_oid, _tandem_decl_oid(p.type))) END)`

// indexTypes is the column types (JSON: name -> type OID) of an index's
// table m, for the deparse of its expressions.
const indexTypes = `(SELECT json_group_object(lower(g.column_name), g.type_oid) FROM main._tandem_columns g WHERE g.table_name = m.name)`

// colGenerated is a generated column's expression as PostgreSQL prints
// it (pg_attrdef.adbin, information_schema.columns.generation_expression),
// read from the table's CREATE text (m: its sqlite_schema row).
const colGenerated = `_tandem_generated(m.sql, p.name, (SELECT json_group_object(lower(g.column_name), g.type_oid) FROM main._tandem_columns g WHERE g.table_name = m.name))`

// RegisterCatalogFunctions registers the catalog's SQL functions.
func RegisterCatalogFunctions(c *sqlite3.SQLiteConn) error {
	// searchPath: the schemas of the session's search_path, in order.
	searchPath := func() []string {
		path := `"$user", public`
		if v, ok := clocks.Load(c); ok {
			if st := v.(*clock).sessionSettings(); st != nil {
				if p, ok := st.Setting("search_path"); ok {
					path = p
				}
			}
		}
		var out []string
		for _, part := range strings.Split(path, ",") {
			part = strings.TrimSpace(part)
			if len(part) >= 2 && part[0] == '"' && part[len(part)-1] == '"' {
				part = part[1 : len(part)-1]
			} else {
				part = strings.ToLower(part)
			}
			if part != "" && part != "$user" {
				out = append(out, part)
			}
		}
		return out
	}
	onPath := func(schema string) bool {
		for _, s := range searchPath() {
			if s == schema {
				return true
			}
		}
		return false
	}
	qualify := func(name string) string {
		if onPath("public") {
			return quoteIdentIfNeeded(name)
		}
		return "public." + quoteIdentIfNeeded(name)
	}
	// enumName is the name of an enum type (CREATE TYPE ... AS ENUM).
	enumName := func(oid int64) (string, bool) {
		if oid < firstEnumOID {
			return "", false
		}
		rows, err := c.Query(`SELECT name FROM _tandem_enums WHERE oid = ?`, []driver.Value{oid})
		if err != nil {
			return "", false
		}
		defer rows.Close()
		v := make([]driver.Value, 1)
		if rows.Next(v) != nil {
			return "", false
		}
		name, ok := v[0].(string)
		return name, ok
	}
	// enumOID is the OID of an enum type by name ("public"."x" or x).
	enumOID := func(name string) (int64, bool) {
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			if schema := strings.Trim(name[:i], `" `); !strings.EqualFold(schema, "public") {
				return 0, false
			}
			name = name[i+1:]
		}
		name = strings.TrimSpace(name)
		if strings.HasPrefix(name, `"`) {
			name = strings.ReplaceAll(strings.Trim(name, `"`), `""`, `"`)
		} else {
			name = strings.ToLower(name)
		}
		rows, err := c.Query(`SELECT oid FROM _tandem_enums WHERE name = ?`, []driver.Value{name})
		if err != nil {
			return 0, false
		}
		defer rows.Close()
		v := make([]driver.Value, 1)
		if rows.Next(v) != nil {
			return 0, false
		}
		oid, ok := v[0].(int64)
		return oid, ok
	}
	// regtypeFn is x::regtype: a type's SQL name for an OID, the OID for a
	// name (NULL when unknown).
	regtypeFn := func(v any) any {
		switch x := v.(type) {
		case int64:
			if t := Types[uint32(x)]; t != nil {
				return t.SQL
			}
			if name, ok := enumName(x); ok {
				return quoteIdentIfNeeded(name)
			}
			return fmt.Sprint(x)
		case string:
			n := strings.ToLower(strings.TrimSpace(x))
			if t := TypeByName[n]; t != nil {
				return int64(t.OID)
			}
			// A qualified, quoted name: "pg_catalog"."int4" (TypeORM).
			if i := strings.LastIndexByte(n, '.'); i >= 0 {
				if schema := strings.Trim(n[:i], `"`); schema == "pg_catalog" || schema == "public" {
					n = n[i+1:]
				}
			}
			if t := TypeByName[strings.Trim(n, `"`)]; t != nil {
				return int64(t.OID)
			}
			if oid, ok := enumOID(x); ok {
				return oid
			}
		}
		return nil
	}
	fns := []struct {
		name string
		fn   any
	}{
		{"_tandem_oid", func(name any) any { // NULL::regclass is NULL
			if s, ok := name.(string); ok {
				return RelOID(s)
			}
			if b, ok := name.([]byte); ok {
				return RelOID(string(b))
			}
			return nil
		}},
		{"_tandem_attndims", func(typeOID int64) int64 { // an array column's dimensions: 1 (what CREATE TABLE declares)
			if t := Types[uint32(typeOID)]; t != nil && t.Cat == 'A' && t.Elem != 0 && t.OID != 22 && t.OID != 30 {
				return 1
			}
			return 0
		}},
		// An index key column's indoption bits (1 DESC, 2 NULLS FIRST),
		// and the words pg_get_indexdef adds for its NULLS ordering.
		{"_tandem_indoption", func(sql string, seq int64, desc bool) int64 {
			first := desc // PostgreSQL's defaults: ASC NULLS LAST, DESC NULLS FIRST
			if n := indexNulls(sql, int(seq)); n != 0 {
				first = n == 'F'
			}
			var o int64
			if desc {
				o |= 1
			}
			if first {
				o |= 2
			}
			return o // ASC (NULLS LAST) 0, DESC (NULLS FIRST) 3
		}},
		// pg_index_column_has_property for a btree index column (options:
		// the index's indoption); NULL for a column it does not have or a
		// property btree does not know.
		{"_tandem_index_column_property", func(options string, col int64, prop string) any {
			opts := strings.Fields(options)
			if col < 1 || col > int64(len(opts)) {
				return nil
			}
			o, _ := strconv.Atoi(opts[col-1])
			switch strings.ToLower(prop) {
			case "asc":
				return o&1 == 0
			case "desc":
				return o&1 != 0
			case "nulls_first":
				return o&2 != 0
			case "nulls_last":
				return o&2 == 0
			case "orderable", "returnable", "search_array", "search_nulls":
				return true
			case "distance_orderable":
				return false
			}
			return nil
		}},
		// Two int2vector / smallint[] texts with the same members in any
		// order ('{3,4}' and '{4,3}': a foreign key names the key's
		// columns in its own order).
		{"_tandem_same_keys", func(a, b any) bool {
			set := func(v any) []string {
				s := strings.Trim(strings.TrimSpace(fmt.Sprint(toText(v))), "{}")
				f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
				slices.Sort(f)
				return f
			}
			if a == nil || b == nil {
				return false
			}
			return slices.Equal(set(a), set(b))
		}},
		{"_tandem_index_opclass", func(sql string, seq int64) string {
			if oc := indexOpclass(sql, int(seq)); oc != "" {
				return " " + oc
			}
			return ""
		}},
		{"_tandem_index_nulls", func(sql string, seq int64, desc bool) string {
			switch n := indexNulls(sql, int(seq)); {
			case n == 'F' && !desc:
				return " NULLS FIRST"
			case n == 'L' && desc:
				return " NULLS LAST"
			}
			return ""
		}},
		{"_tandem_pretty_indexdef", func(def any, pretty any) any {
			s, ok := def.(string)
			if !ok || !truthy(pretty) {
				return def
			}
			// Its table qualified only when not on the search_path.
			if i := strings.Index(s, " ON public."); i >= 0 {
				if j := strings.Index(s[i:], " USING "); j > 0 {
					s = s[:i] + " ON " + qualify(unquoteIdent(s[i+len(" ON public."):i+j])) + s[i+j:]
				}
			}
			return prettyIndexdef(s)
		}},
		{"_tandem_index_method", func(sql any) string {
			s, _ := sql.(string)
			return indexMethod(s)
		}},
		{"_tandem_index_key", func(sql any, seq int64, types any, wrap bool) any {
			s, _ := sql.(string)
			if k := indexKey(s, int(seq), jsonTypes(types), wrap); k != "" {
				return k
			}
			return nil
		}},
		{"_tandem_index_pred", func(sql, types any) any {
			s, _ := sql.(string)
			if p := indexPred(s, jsonTypes(types)); p != "" {
				return p
			}
			return nil
		}},
		{"_tandem_index_exprs", func(sql, types any) any {
			s, _ := sql.(string)
			if e := indexExprs(s, jsonTypes(types)); e != "" {
				return e
			}
			return nil
		}},
		{"_tandem_opclass", func(typeOID int64) int64 { // the default btree operator class of a column's type
			return int64(opclassOf(uint32(typeOID)))
		}},
		{"_tandem_relname", func(v any) any { // NULL (or a number) is NULL: pg_get_serial_sequence(NULL, c)
			switch x := v.(type) {
			case string:
				return RegclassName(x)
			case []byte:
				return RegclassName(string(x))
			}
			return nil
		}},
		// The connection's addresses are not known to the back end:
		// NULL, as PostgreSQL answers over a Unix socket.
		{"inet_server_port", func() any { return nil }},
		{"inet_client_port", func() any { return nil }},
		{"inet_server_addr", func() any { return nil }},
		{"inet_client_addr", func() any { return nil }},
		{"_tandem_zeros", func(n int64) string { return strings.TrimSpace(strings.Repeat("0 ", int(max(n, 0)))) }},
		{"_tandem_seq_exhausted", func(name string, limit int64, up bool) (int64, error) {
			if up {
				return 0, fmt.Errorf("[SQLSTATE 2200H] nextval: reached maximum value of sequence %q (%d)", name, limit)
			}
			return 0, fmt.Errorf("[SQLSTATE 2200H] nextval: reached minimum value of sequence %q (%d)", name, limit)
		}},
		{"_tandem_seq_not_called", func(name string) (int64, error) {
			return 0, fmt.Errorf("[SQLSTATE 55000] currval of sequence %q is not yet defined in this session", name)
		}},
		{"_tandem_decl_oid", func(decl string) int64 {
			if t := DeclType(decl); t != nil {
				return int64(t.OID)
			}
			return 25
		}},
		{"_tandem_type_sql", func(oid int64) string {
			if t := Types[uint32(oid)]; t != nil {
				if t.Elem != 0 {
					return "ARRAY"
				}
				return t.SQL
			}
			return "USER-DEFINED"
		}},
		{"_tandem_type_name", func(oid int64) string {
			if t := Types[uint32(oid)]; t != nil {
				return t.Name
			}
			name, _ := enumName(oid)
			return name
		}},
		{"format_type", func(oid any, typmod any) any {
			o, ok := oid.(int64)
			if !ok {
				return nil
			}
			if name, ok := enumName(o); ok {
				return qualify(name) // an enum type lives in public
			}
			m, ok := typmod.(int64)
			if !ok {
				m = -1
			}
			return FormatType(o, m)
		}},
		{"pg_get_userbyid", func(oid any) string {
			if oid == int64(6171) {
				return "pg_database_owner" // the public schema's owner
			}
			return users[0]
		}},
		// How a type's values are stored (pg_type.typstorage, psql's
		// Storage column): plain for fixed-length types, main for
		// numeric, extended for the other variable-length ones.
		{"_tandem_typstorage", func(oid any) string {
			o, _ := oid.(int64)
			t := Types[uint32(o)]
			switch {
			case t == nil || t.Len > 0:
				return "p"
			case t.Name == "numeric":
				return "m"
			}
			return "x"
		}},
		// No object has privileges of its own (every user may do
		// everything): a NULL ACL is PostgreSQL's "the default".
		{"acldefault", func(any, any) any { return nil }},
		{"pg_get_triggerdef", func(args ...any) any { return nil }},
		{"pg_get_function_sqlbody", func(any) any { return nil }},
		// The one tablespace, pg_default: its location is the data
		// directory's, which PostgreSQL prints as ''.
		{"pg_tablespace_location", func(any) string { return "" }},
		// Argument types of a function: there are none (pg_proc is empty).
		{"oidvectortypes", func(any) string { return "" }},
		{"pg_table_is_visible", func(any) bool { return true }},
		{"pg_type_is_visible", func(any) bool { return true }},
		{"pg_function_is_visible", func(any) bool { return true }},
		{"pg_collation_is_visible", func(any) bool { return true }},
		{"pg_conversion_is_visible", func(any) bool { return true }},
		{"pg_statistics_obj_is_visible", func(any) bool { return true }},
		{"pg_opfamily_is_visible", func(any) bool { return true }},
		// The database's encoding (psql's \dO, \l).
		{"getdatabaseencoding", func() string { return "UTF8" }},
		{"pg_char_to_encoding", func(name any) int64 {
			if strings.EqualFold(fmt.Sprint(toText(name)), "UTF8") {
				return 6
			}
			return -1
		}},
		{"pg_opclass_is_visible", func(any) bool { return true }},
		{"pg_operator_is_visible", func(any) bool { return true }},
		{"pg_ts_config_is_visible", func(any) bool { return true }},
		// A column's DEFAULT as information_schema.columns shows it: in
		// PostgreSQL's spelling (now(), not _pg_now()), a number unquoted.
		{"_tandem_display_default", func(expr, oid any) any {
			if expr == nil {
				return nil
			}
			d := displayExpr(fmt.Sprint(expr), qualify)
			o, _ := oid.(int64)
			t := Types[uint32(o)]
			if t != nil && t.Name == "bool" {
				switch d {
				case "1", "'1'", "'t'", "'true'":
					return "true"
				case "0", "'0'", "'f'", "'false'":
					return "false"
				}
			}
			if strings.HasPrefix(d, "-") {
				// A negative number: PostgreSQL keeps the constant it
				// folded, typed integer or numeric ('-1'::integer).
				if _, err := strconv.ParseInt(d, 10, 32); err == nil {
					return "'" + d + "'::integer"
				}
				if _, err := strconv.ParseFloat(d, 64); err == nil {
					return "'" + d + "'::numeric"
				}
			}
			if len(d) < 2 || d[0] != '\'' || d[len(d)-1] != '\'' || strings.Count(d, "'")%2 != 0 {
				return d
			}
			if t == nil {
				// An enum's label: 'a'::mood.
				if name, ok := enumName(o); ok {
					return d + "::" + qualify(name) // public.mood for pg_dump's empty search_path
				}
			}
			if t == nil {
				return d
			}
			// A string constant keeps its cast to the column's type:
			// '0'::numeric, '{}'::jsonb, 'x'::character varying.
			return d + "::" + t.SQL
		}},
		{"pg_get_expr", func(expr any, args ...any) any {
			if expr == nil {
				return nil
			}
			out := displayExpr(fmt.Sprint(expr), qualify)
			if len(args) > 1 && truthy(args[1]) {
				out = prettyExpr(out) // pretty: psql's \d
			}
			return out
		}},
		// A generated column's expression (the table's CREATE text, the
		// column, its table's column types as JSON): PostgreSQL's deparse
		// where the subset knows it, else the stored text.
		{"_tandem_generated", func(create, col, types any) any {
			c, _ := create.(string)
			name, _ := col.(string)
			g := GeneratedExpr(c, name)
			if g == "" {
				return nil
			}
			var m map[string]uint32
			if s, ok := types.(string); ok {
				_ = json.Unmarshal([]byte(s), &m)
			}
			if e, ok := pgExpr(g, m); ok {
				return e
			}
			return g
		}},
		{"obj_description", func(args ...any) any {
			if len(args) == 0 || args[0] == nil {
				return nil
			}
			q, vals := `SELECT description FROM pg_description WHERE objoid = ? AND objsubid = 0`, []driver.Value{relOIDArg(args[0])}
			if len(args) > 1 {
				if cat, ok := args[1].(string); ok {
					q += ` AND classoid = ?`
					vals = append(vals, RelOID(RegclassName(cat)))
				}
			}
			return lookupOne(c, q, vals)
		}},
		{"col_description", func(oid, n any) any {
			if oid == nil || n == nil {
				return nil
			}
			return lookupOne(c, `SELECT description FROM pg_description WHERE objoid = ? AND classoid = 1259 AND objsubid = ?`, []driver.Value{relOIDArg(oid), n})
		}},
		{"shobj_description", func(args ...any) any { return nil }},
		{"has_table_privilege", func(args ...any) bool { return true }},
		{"has_schema_privilege", func(args ...any) bool { return true }},
		{"has_database_privilege", func(args ...any) bool { return true }},
		{"has_column_privilege", func(args ...any) bool { return true }},
		{"has_sequence_privilege", func(args ...any) bool { return true }},
		{"pg_has_role", func(args ...any) bool { return true }},
		{"pg_encoding_to_char", func(int64) string { return "UTF8" }},
		{"pg_size_pretty", func(n int64) string {
			switch {
			case n < 10*1024:
				return fmt.Sprintf("%d bytes", n)
			case n < 10*1024*1024:
				return fmt.Sprintf("%d kB", (n+512)/1024)
			}
			return fmt.Sprintf("%d MB", (n+512*1024)/(1024*1024))
		}},
		{"pg_relation_size", func(args ...any) int64 { return 8192 }},
		{"pg_total_relation_size", func(args ...any) int64 { return 8192 }},
		{"pg_table_size", func(args ...any) int64 { return 8192 }},
		// The database's size: SQLite's pages times their size (the
		// main file; the WAL is not counted).
		{"pg_database_size", func(args ...any) any {
			pages, size := lookupOne(c, "PRAGMA page_count", nil), lookupOne(c, "PRAGMA page_size", nil)
			p, ok1 := pages.(int64)
			z, ok2 := size.(int64)
			if !ok1 || !ok2 {
				return nil
			}
			return p * z
		}},
		{"current_schemas", func(implicit bool) string { // pg_catalog first when asked for the implicit schemas, as PostgreSQL
			var out []string
			has := false
			for _, sch := range searchPath() {
				if sch == "pg_catalog" || sch == "public" || sch == "information_schema" {
					out = append(out, sch)
					has = has || sch == "pg_catalog"
				}
			}
			if implicit && !has {
				out = append([]string{"pg_catalog"}, out...)
			}
			return "{" + strings.Join(out, ",") + "}"
		}},
		// A relation's name as regclass prints it: qualified when public
		// is not on the search path (pg_dump sets it empty).
		{"_tandem_qualify", qualify},
		// The sequence a column's DEFAULT draws from: its serial's, or the
		// one a nextval default names (pg_depend: pg_dump creates the
		// sequence before it sets such a default).
		{"_tandem_default_seq", func(seq, dflt any) any {
			if s, ok := seq.(string); ok && s != "" {
				return s
			}
			if d, ok := dflt.(string); ok {
				if s := defaultSequence(d); s != "" {
					return s
				}
			}
			return nil
		}},
		// The relations a view's query reads (a JSON array of names).
		{"_tandem_view_refs", viewReads},
		{"_tandem_view_rename", func(def, table, old, new string, column bool) any {
			if out, ok := viewRename(def, table, old, new, column); ok {
				return out
			}
			return nil
		}},
		{"_tandem_viewdef", func(def any) any {
			if def == nil {
				return nil
			}
			return viewDefinition(fmt.Sprint(def), !onPath("public"))
		}},
		{"pg_is_in_recovery", func() bool { return false }},
		// No table is partitioned: a relation is its own only ancestor
		// and root (psql's \d asks for a table's "Referenced by").
		{"pg_partition_ancestors", func(rel any) any { return rel }},
		{"pg_partition_root", func(rel any) any { return rel }},
		{"_tandem_regtype", regtypeFn},
		// x::regnamespace: a schema's name for an OID, the OID for a name.
		{"_tandem_regnamespace", func(v any) (any, error) {
			if s, ok := v.(string); ok {
				return regnamespaceOID(s)
			}
			return regnamespaceName(v), nil
		}},
		{"_tandem_regnamespace_name", func(v any) (any, error) {
			if s, ok := v.(string); ok {
				oid, err := regnamespaceOID(s)
				if err != nil {
					return nil, err
				}
				v = oid
			}
			return regnamespaceName(v), nil
		}},
		{"_tandem_regnamespace_oid", func(v any) (any, error) {
			if s, ok := v.(string); ok {
				return regnamespaceOID(s)
			}
			return v, nil
		}},
		// x::regoper: tandem knows no operators by OID; NULL stays NULL
		// and an OID prints as its number (PostgreSQL's form for an OID
		// it does not know).
		{"_tandem_regoper", func(v any) (any, error) {
			switch x := v.(type) {
			case string:
				if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
					return n, nil
				}
				return nil, fmt.Errorf("[SQLSTATE 42883] operator does not exist: %s", x)
			}
			return v, nil
		}},
		// '{int,int8}'::regtype[]: each name's OID ({23,20}).
		{"_tandem_regtype_array", func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			var out []string
			for _, e := range arrayElems(v) {
				oid, ok := regtypeFn(e).(int64)
				if !ok {
					return nil, fmt.Errorf("[SQLSTATE 42704] type %q does not exist", e)
				}
				out = append(out, strconv.FormatInt(oid, 10))
			}
			return "{" + strings.Join(out, ",") + "}", nil
		}},
		// x::regtype::text: the type's name whether x is an OID or a name.
		{"_tandem_regtype_name", func(v any) any {
			if x, ok := v.(string); ok {
				v = nil
				if t := TypeByName[strings.ToLower(strings.TrimSpace(x))]; t != nil {
					v = int64(t.OID)
				} else if i := strings.LastIndexByte(x, '.'); i >= 0 {
					if t := TypeByName[strings.ToLower(strings.Trim(x[i+1:], `" `))]; t != nil {
						v = int64(t.OID)
					}
				}
				if oid, ok := enumOID(x); ok && v == nil {
					v = oid
				}
			}
			if x, ok := v.(int64); ok {
				if t := Types[uint32(x)]; t != nil {
					return t.SQL
				}
				if name, ok := enumName(x); ok {
					return quoteIdentIfNeeded(name)
				}
				return fmt.Sprint(x)
			}
			return nil
		}},
		{"to_regtype", func(name any) any {
			if name == nil {
				return nil
			}
			n := strings.ToLower(strings.TrimSpace(fmt.Sprint(toText(name))))
			n = strings.TrimPrefix(n, "pg_catalog.")
			if t := TypeByName[strings.Trim(n, `"`)]; t != nil {
				return int64(t.OID)
			}
			return nil
		}},
	}
	for _, name := range []string{"pg_get_statisticsobjdef_columns", "pg_get_triggerdef", "pg_get_ruledef", "pg_get_partkeydef",
		"pg_get_function_arguments", "pg_get_function_result", "pg_get_functiondef", "pg_get_partition_constraintdef",
		"pg_get_function_identity_arguments", "pg_get_statisticsobjdef", "pg_relation_is_publishable", "pg_get_keywords"} {
		fns = append(fns, struct {
			name string
			fn   any
		}{name, func(args ...any) any { return nil }})
	}
	for _, f := range fns {
		if err := c.RegisterFunc(f.name, nullsAsNil(f.fn), true); err != nil {
			return fmt.Errorf("sqlpg: register %s: %w", f.name, err)
		}
	}
	return nil
}

// displayExpr shows a stored (translated) default the way the client
// wrote it.
var nextvalCallRe = regexp.MustCompile(`^_tandem_nextval\('((?:[^']|'')*)'\)$`)

// defaultSequence is the sequence a stored DEFAULT _tandem_nextval('s')
// draws from ("" for another default).
func defaultSequence(s string) string {
	if m := nextvalCallRe.FindStringSubmatch(s); m != nil && m[0] == s {
		return RegclassName(strings.ReplaceAll(m[1], "''", "'"))
	}
	return ""
}

// displayExpr is a stored DEFAULT as PostgreSQL prints it; qualify names
// a nextval's sequence as regclass prints it on the session's path.
// jsonTypes reads a table's column types as the catalog passes them
// (JSON: lower-case name -> type OID).
func jsonTypes(v any) map[string]uint32 {
	var m map[string]uint32
	if s, ok := v.(string); ok {
		_ = json.Unmarshal([]byte(s), &m)
	}
	return m
}

// truthy: a SQL boolean argument that is true.
func truthy(v any) bool {
	switch x := v.(type) {
	case int64:
		return x != 0
	case bool:
		return x
	case string:
		return x == "t" || x == "true" || x == "1"
	}
	return false
}

// unparen is s without the parentheses around all of it, if it has them.
func unparen(s string) string {
	if len(s) < 2 || s[0] != '(' || s[len(s)-1] != ')' {
		return s
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'':
			for i++; i < len(s) && s[i] != '\''; i++ {
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i < len(s)-1 {
				return s
			}
		}
	}
	return s[1 : len(s)-1]
}

func displayExpr(s string, qualify func(string) string) string {
	r := strings.NewReplacer("_pg_now()", "now()", "_pg_current_timestamp()", "CURRENT_TIMESTAMP", "_pg_current_date()", "CURRENT_DATE",
		"_pg_localtimestamp()", "LOCALTIMESTAMP", "_pg_current_time()", "CURRENT_TIME", "_pg_random()", "random()", `"current_user"()`, "CURRENT_USER")
	s = r.Replace(s)
	for _, w := range []string{"_pg_int2_range(", "_pg_int4_range(", "_pg_int8_range("} {
		// Integer arithmetic's range check: PostgreSQL's parenthesised expression.
		if strings.HasPrefix(s, w) && strings.HasSuffix(s, ")") {
			s = "(" + s[len(w):len(s)-1] + ")"
		}
	}
	if seq := defaultSequence(s); seq != "" {
		return "nextval(" + quoteLit(qualify(seq)) + "::regclass)"
	}
	if strings.HasPrefix(s, "_cast_") {
		if i := strings.Index(s, "("); i > 0 && strings.HasSuffix(s, ")") {
			typ := s[len("_cast_"):i]
			s = s[i+1:len(s)-1] + "::" + typ
		}
	}
	return s
}

// keywordsSQL is pg_get_keywords()'s rows as a VALUES list.
func keywordsSQL() string {
	desc := map[byte]string{'U': "unreserved", 'C': "unreserved (cannot be function or type name)",
		'T': "reserved (can be function or type name)", 'R': "reserved"}
	var b strings.Builder
	b.WriteString(`SELECT column1 AS word, column2 AS catcode, column3 AS barelabel, column4 AS catdesc, column5 AS baredesc FROM (VALUES `)
	for i, k := range pgKeywords {
		if i > 0 {
			b.WriteString(", ")
		}
		bare, baredesc := 0, "requires AS"
		if k.barelabel {
			bare, baredesc = 1, "can be bare label"
		}
		fmt.Fprintf(&b, "('%s', '%c', %d, '%s', '%s')", k.word, k.catcode, bare, desc[k.catcode], baredesc)
	}
	b.WriteString(")")
	return b.String()
}

// viewDefinition is a view's query as pg_get_viewdef prints it: a space,
// the query, a semicolon; with qualify, every relation it reads that is
// not a CTE of its own is written public.name (pg_dump reads definitions
// with an empty search_path). Text that does not parse (SQLite's own
// query, for a view whose PostgreSQL text is not known) is kept as is.
func viewDefinition(def string, qualify bool) string {
	def = strings.TrimSuffix(strings.TrimSpace(def), ";")
	if qualify {
		if tree, err := pg_query.Parse(def); err == nil && len(tree.Stmts) == 1 {
			ctes := map[string]bool{}
			visit(tree.Stmts[0].Stmt.ProtoReflect(), func(n *pg_query.Node) {
				if c := n.GetCommonTableExpr(); c != nil {
					ctes[strings.ToLower(c.Ctename)] = true
				}
			})
			visit(tree.Stmts[0].Stmt.ProtoReflect(), func(n *pg_query.Node) {
				if r := n.GetRangeVar(); r != nil && r.Schemaname == "" && !ctes[strings.ToLower(r.Relname)] {
					if _, isCat := CatalogRelation("", r.Relname); !isCat {
						r.Schemaname = "public"
					}
				}
			})
			if out, err := pg_query.Deparse(tree); err == nil {
				def = out
			}
		}
	}
	return " " + def + ";"
}

// viewReads lists, as a JSON array, the relations a CREATE VIEW statement
// (as SQLite stores it) names besides the view itself.
func viewReads(view, sql string) string {
	refs, _ := viewRefs(map[string]string{view: sql})
	var names []string
	for r := range refs[view].rels {
		if r != strings.ToLower(view) {
			names = append(names, r)
		}
	}
	sort.Strings(names)
	b, _ := json.Marshal(names)
	if names == nil {
		return "[]"
	}
	return string(b)
}

// lookupOne is the first column of the first row of a query on c, or nil.
func lookupOne(c *sqlite3.SQLiteConn, q string, args []driver.Value) any {
	rows, err := c.Query(q, args)
	if err != nil {
		return nil
	}
	defer rows.Close()
	v := make([]driver.Value, len(rows.Columns()))
	if rows.Next(v) != nil || len(v) == 0 {
		return nil
	}
	return v[0]
}
