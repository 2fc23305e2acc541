package sqlpg

import "strings"

// The contract between the translator, the catalog and backend/sqlite.
//
// Metadata tables live in the SQLite database itself (names start with
// _tandem_, so capture triggers skip them and the DDL writeset that creates a
// table carries the statements that describe it: a standby that applies the
// DDL gets the same metadata).

// MetadataDDL creates tandem's PostgreSQL metadata tables; idempotent. The
// back end runs it on its writer connection at open.
const MetadataDDL = `CREATE TABLE IF NOT EXISTS _tandem_columns (
	table_name  TEXT NOT NULL,
	column_name TEXT NOT NULL,
	type_oid    INTEGER NOT NULL,  -- PostgreSQL type OID (int4 = 23, numeric = 1700, ...)
	typmod      INTEGER NOT NULL DEFAULT -1, -- PostgreSQL atttypmod: varchar(n) = n+4; numeric(p,s) = ((p<<16)|s)+4
	identity    TEXT NOT NULL DEFAULT '',    -- '' | 'a' (ALWAYS) | 'd' (BY DEFAULT), as pg_attribute.attidentity
	sequence    TEXT,                        -- owned sequence feeding the default (serial, identity), or NULL
	PRIMARY KEY (table_name, column_name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _tandem_sequences (
	name        TEXT PRIMARY KEY,
	type_oid    INTEGER NOT NULL DEFAULT 20,
	start_value INTEGER NOT NULL DEFAULT 1,
	increment   INTEGER NOT NULL DEFAULT 1,
	min_value   INTEGER NOT NULL DEFAULT 1,
	max_value   INTEGER NOT NULL DEFAULT 9223372036854775807,
	cycle       INTEGER NOT NULL DEFAULT 0,
	last_value  INTEGER NOT NULL DEFAULT 1,
	is_called   INTEGER NOT NULL DEFAULT 0,
	owner_table TEXT,
	owner_column TEXT,
	generation  INTEGER NOT NULL DEFAULT 0, -- counts setval, RESTART and cycles: the writes that move last_value back (writeset.SequenceTable)
	stride      INTEGER NOT NULL DEFAULT 0  -- the last draw's multi-master stride, 0 for any other write
);
CREATE TABLE IF NOT EXISTS _tandem_constraints (
	name       TEXT PRIMARY KEY, -- the index ALTER TABLE ADD CONSTRAINT made
	table_name TEXT NOT NULL,
	kind       TEXT NOT NULL     -- 'p' (PRIMARY KEY) | 'u' (UNIQUE)
);
CREATE TABLE IF NOT EXISTS _tandem_views (
	name       TEXT PRIMARY KEY,
	definition TEXT NOT NULL, -- the view's query as PostgreSQL's SQL (pg_get_viewdef)
	sqlite_sql TEXT NOT NULL  -- sqlite_schema.sql when it was recorded: a rewrite since (RENAME) makes it stale
);
CREATE TABLE IF NOT EXISTS _tandem_matviews (
	name       TEXT PRIMARY KEY,  -- the table holding the rows
	definition TEXT NOT NULL,     -- the query as PostgreSQL's SQL (pg_matviews.definition)
	query      TEXT NOT NULL,     -- the SQLite query REFRESH runs
	populated  INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS _tandem_comments (
	kind        TEXT NOT NULL,           -- 'rel' | 'col' | 'schema' | 'type'
	name        TEXT NOT NULL,           -- the relation, schema or type
	column_name TEXT NOT NULL DEFAULT '', -- for 'col'
	comment     TEXT,                    -- NULL: none (for the public schema: not even the default)
	PRIMARY KEY (kind, name, column_name)
);
CREATE TABLE IF NOT EXISTS _tandem_enums (
	oid    INTEGER PRIMARY KEY,  -- the type's OID (from 900000)
	name   TEXT NOT NULL UNIQUE, -- CREATE TYPE name AS ENUM
	labels TEXT NOT NULL         -- the labels in order, a JSON array
);`

// MetadataUpgrade brings metadata tables made by an earlier tandem up to
// MetadataDDL's shape: the statements to run, given a query that answers
// whether a table has a column. The back end runs them after MetadataDDL.
func MetadataUpgrade(hasColumn func(table, column string) (bool, error)) ([]string, error) {
	var out []string
	for _, c := range []struct{ table, column, def string }{
		{"_tandem_sequences", "generation", "INTEGER NOT NULL DEFAULT 0"},
		{"_tandem_sequences", "stride", "INTEGER NOT NULL DEFAULT 0"},
	} {
		ok, err := hasColumn(c.table, c.column)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, "ALTER TABLE "+c.table+" ADD COLUMN "+c.column+" "+c.def)
		}
	}
	return out, nil
}

// TempColumnsDDL creates, in a connection's temporary schema, the copy of
// _tandem_columns that describes the session's temporary tables (a
// session's own connection, made for its first temporary object).
const TempColumnsDDL = `CREATE TEMP TABLE IF NOT EXISTS _tandem_temp_columns (
	table_name  TEXT NOT NULL,
	column_name TEXT NOT NULL,
	type_oid    INTEGER NOT NULL,
	typmod      INTEGER NOT NULL DEFAULT -1,
	identity    TEXT NOT NULL DEFAULT '',
	sequence    TEXT,
	PRIMARY KEY (table_name, column_name)
) WITHOUT ROWID`

// TempMetadata points the metadata statements of session-local DDL (on
// temporary tables) at the session's temporary copy.
func TempMetadata(sql string) string {
	if strings.Contains(sql, "_tandem_constraints") && !strings.Contains(sql, ";") {
		return "SELECT 1" // constraints of temporary tables are not recorded
	}
	sql = strings.ReplaceAll(sql, "main._tandem_columns", "temp._tandem_temp_columns")
	return strings.ReplaceAll(sql, " _tandem_columns", " temp._tandem_temp_columns")
}

// Type is a PostgreSQL type as tandem knows it.
type Type struct {
	OID    uint32
	Name   string // pg_type.typname: int4, varchar, timestamptz, _int4 ...
	SQL    string // format_type's spelling without modifier: integer, character varying ...
	Len    int16  // pg_type.typlen (-1 variable)
	Elem   uint32 // element type of an array type, else 0
	Array  uint32 // the array type of this type, else 0
	Cat    byte   // pg_type.typcategory
	SQLite string // the declared type written into SQLite's schema (gives the column its affinity)
}

// Types is every PostgreSQL type tandem maps, by OID.
var Types = map[uint32]*Type{}

// TypeByName finds a type by typname or any of its SQL spellings
// (int, integer, int4; varchar, character varying; timestamptz,
// timestamp with time zone ...), lower case.
var TypeByName = map[string]*Type{}

func init() {
	for _, t := range []*Type{
		{16, "bool", "boolean", 1, 0, 1000, 'B', "BOOLEAN"},
		{17, "bytea", "bytea", -1, 0, 1001, 'U', "BLOB"},
		{18, "char", "\"char\"", 1, 0, 1002, 'S', "TEXT"},
		{19, "name", "name", 64, 0, 1003, 'S', "TEXT"},
		{20, "int8", "bigint", 8, 0, 1016, 'N', "INTEGER"},
		{21, "int2", "smallint", 2, 0, 1005, 'N', "INTEGER"},
		{22, "int2vector", "int2vector", -1, 21, 1006, 'A', "TEXT"}, // pg_index.indkey: "1 2" (arrayElems reads it)
		{23, "int4", "integer", 4, 0, 1007, 'N', "INTEGER"},
		{24, "regproc", "regproc", 4, 0, 1008, 'N', "INTEGER"},
		{25, "text", "text", -1, 0, 1009, 'S', "TEXT"},
		{26, "oid", "oid", 4, 0, 1028, 'N', "INTEGER"},
		{30, "oidvector", "oidvector", -1, 26, 1013, 'A', "TEXT"}, // pg_index.indclass
		{114, "json", "json", -1, 0, 199, 'U', "TEXT"},
		{142, "xml", "xml", -1, 0, 143, 'U', "TEXT"},
		{700, "float4", "real", 4, 0, 1021, 'N', "REAL"},
		{701, "float8", "double precision", 8, 0, 1022, 'N', "REAL"},
		{705, "unknown", "unknown", -2, 0, 0, 'X', "TEXT"},
		{1042, "bpchar", "character", -1, 0, 1014, 'S', "TEXT"},
		{1043, "varchar", "character varying", -1, 0, 1015, 'S', "TEXT"},
		{1082, "date", "date", 4, 0, 1182, 'D', "TEXT"},
		{1083, "time", "time without time zone", 8, 0, 1183, 'D', "TEXT"},
		{1114, "timestamp", "timestamp without time zone", 8, 0, 1115, 'D', "TEXT"},
		{1184, "timestamptz", "timestamp with time zone", 8, 0, 1185, 'D', "TEXT"},
		{1186, "interval", "interval", 16, 0, 1187, 'T', "TEXT"},
		{1266, "timetz", "time with time zone", 12, 0, 1270, 'D', "TEXT"},
		{1700, "numeric", "numeric", -1, 0, 1231, 'N', "NUMERIC"},
		{2205, "regclass", "regclass", 4, 0, 2210, 'N', "INTEGER"},
		{2206, "regtype", "regtype", 4, 0, 2211, 'N', "INTEGER"},
		{2203, "regoper", "regoper", 4, 0, 2208, 'N', "INTEGER"},
		{4089, "regnamespace", "regnamespace", 4, 0, 4090, 'N', "INTEGER"},
		{2950, "uuid", "uuid", 16, 0, 2951, 'U', "TEXT"},
		{3802, "jsonb", "jsonb", -1, 0, 3807, 'U', "TEXT"},
		{4072, "jsonpath", "jsonpath", -1, 0, 4073, 'U', "TEXT"},
	} {
		Types[t.OID] = t
		TypeByName[t.Name] = t
		TypeByName[t.SQL] = t
		arr := &Type{OID: t.Array, Name: "_" + t.Name, SQL: t.SQL + "[]", Len: -1, Elem: t.OID, Cat: 'A', SQLite: "TEXT"}
		if t.Array != 0 {
			Types[arr.OID] = arr
			TypeByName[arr.Name] = arr
			TypeByName[arr.SQL] = arr
		}
	}
	for alias, name := range map[string]string{
		"int": "int4", "smallint": "int2", "bigint": "int8", "boolean": "bool",
		"float": "float8", "double": "float8", "decimal": "numeric", "character": "bpchar",
		"char": "bpchar", "varchar": "varchar", "timestamp": "timestamp", "time": "time",
		"serial": "int4", "serial4": "int4", "bigserial": "int8", "serial8": "int8",
		"smallserial": "int2", "serial2": "int2", "string": "text",
	} {
		TypeByName[alias] = TypeByName[name]
	}
}

// DeclType maps a declared SQLite column type that has no _tandem_columns
// row (tables created before tandem kept metadata, or by SQLite-dialect
// DDL) to the PostgreSQL type clients see, by SQLite's affinity rules.
func DeclType(decl string) *Type {
	d := upper(decl)
	switch {
	case d == "":
		return nil // no declared type (a view's expression): typed by its values
	case contains(d, "BOOL"):
		return Types[16]
	case contains(d, "INT"):
		return Types[20]
	case contains(d, "CHAR"), contains(d, "CLOB"), contains(d, "TEXT"):
		return Types[25]
	case contains(d, "BLOB"), contains(d, "BYTEA"):
		return Types[17]
	case contains(d, "REAL"), contains(d, "FLOA"), contains(d, "DOUB"):
		return Types[701]
	case contains(d, "TIMESTAMP"), contains(d, "DATETIME"):
		return Types[1114]
	case d == "DATE":
		return Types[1082]
	case contains(d, "NUMERIC"), contains(d, "DECIMAL"):
		return Types[1700]
	}
	return Types[25]
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
