package sqlpg_test

// FuzzTranslate feeds the translator random and mutated statements (seeded
// with every statement of the differential corpus, testdata/corpus/*.sql)
// and checks that it never panics, and that every statement either
//   - is refused with a *pgwire.Error whose SQLSTATE PostgreSQL could give
//     at parse analysis (0A000 unsupported, 42601 syntax, another class 42,
//     class 22 or 3F000 code), or
//   - translates into SQLite SQL that SQLite compiles: on an in-memory
//     database with MetadataDDL, the catalog and the corpus's tables, each
//     output statement prepares, or fails only on a name the input itself
//     made up (no such table / column / index ...). A SQLite parse error,
//     an unknown SQLite function or a wrong argument count is a translator
//     bug.
//
// The seed corpus runs in every `go test`; `make test` fuzzes for 10 s:
//
//	go test -run '^$' -fuzz FuzzTranslate -fuzztime 10s ./sqlpg

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
)

// corpusStatements returns the statements of testdata/corpus/*.sql (each
// ends with ';' at the end of a line there), without comment lines.
func corpusStatements(tb testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.sql"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no corpus: %v", err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var cur []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			cur = append(cur, line)
			if strings.HasSuffix(strings.TrimSpace(line), ";") {
				if s := strings.TrimSpace(strings.Join(cur, "\n")); s != ";" {
					out = append(out, strings.TrimSuffix(s, ";"))
				}
				cur = nil
			}
		}
	}
	return out
}

// fuzzDB is an in-memory SQLite database as backend/sqlite sets one up:
// the translator's and the catalog's functions, MetadataDDL, the catalog's
// views.
func fuzzDB(tb testing.TB) *sqlite3.SQLiteConn {
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		if err := sqlpg.RegisterFunctions(c); err != nil {
			return err
		}
		return sqlpg.RegisterCatalogFunctions(c)
	}}
	dc, err := drv.Open(":memory:")
	if err != nil {
		tb.Fatal(err)
	}
	c := dc.(*sqlite3.SQLiteConn)
	tb.Cleanup(func() { c.Close() })
	exec := func(sql string) error { _, err := c.Exec(sql, nil); return err }
	if err := exec("PRAGMA case_sensitive_like = ON"); err != nil {
		tb.Fatal(err)
	}
	if err := exec(sqlpg.MetadataDDL); err != nil {
		tb.Fatal(err)
	}
	if err := sqlpg.InstallCatalog(exec); err != nil {
		tb.Fatal(err)
	}
	return c
}

// sqliteInputErrors are SQLite's complaints about what the input itself
// got wrong (names the fuzzer made up, a wrong number of values or
// columns): PostgreSQL refuses those too, and the back end maps them to
// PostgreSQL's SQLSTATEs. A function is the input's business unless its
// name starts with "_" (the translator's own helpers, which must exist):
// PostgreSQL functions the translator does not handle show up in the
// differential corpus instead. Anything else SQLite refuses (its parser's
// "syntax error", "row value misused", a missing helper ...) is a
// translator bug.
var sqliteInputErrors = regexp.MustCompile(`no such (table|column|index|view|savepoint|collation|trigger)|` +
	`has no column named|already exists|there is already an? \w+ named|duplicate column name|ambiguous column name|no tables specified|unknown database|` +
	`columns but \d+ values were supplied|values for \d+ columns|term out of range|` +
	`do not have the same number of result columns|all VALUES must have the same number of terms|` +
	`no such function: [^_]|wrong number of arguments to function [^_]|ON CONFLICT clause does not match any|` +
	`use DROP (VIEW|TABLE) to delete|because it is a view|` +
	`ORDER BY term does not match any column|cannot join using column|` +
	`cannot rename columns of view|no such window|misuse of aggregate|misuse of window function|` +
	`IN\(\.\.\.\) element has \d+ terms? - expected|may not be used as a window function|` +
	`circular reference: |variable number must be between`)

var noSuchFunction = regexp.MustCompile(`no such function: (\S+)`)

// renamedArity: a wrong number of arguments to a function the translator
// renamed (now is _pg_now).
var renamedArity = regexp.MustCompile(`wrong number of arguments to function _pg_(\w+)\(\)`)

// sqliteSyntaxMessage is SQLite's parser talking: never for the client.
var sqliteSyntaxMessage = regexp.MustCompile(`near ".*": syntax error|unrecognized token:`)

// knownTranslatorBugs are classes of failures already reported and not
// fixed yet, matched against "translated SQL -> SQLite's message": an input that
// hits one is logged and skipped, so the fuzzer keeps looking for new ones.
// Remove an entry when its bug is fixed.
var knownTranslatorBugs = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`near "(INSERT|UPDATE|DELETE)": syntax error`), "data-modifying statements in WITH are passed to SQLite, which has none"},
	{regexp.MustCompile(`row value misused`), "row constructors (ROW(...), (a, b) IS NULL) are passed to SQLite"},
	{regexp.MustCompile(`near "ORDER": syntax error`), "VALUES ... ORDER BY is passed to SQLite"},
	{regexp.MustCompile(`(?is)\bSELECT\s*(-> |(FROM|WHERE|GROUP|HAVING|WINDOW|ORDER|LIMIT|OFFSET|UNION|EXCEPT|INTERSECT)\b)`), "an empty target list (SELECT with no columns) is passed to SQLite"},
	{regexp.MustCompile(`(?is)^CREATE TABLE "[^"]*" \(\s*(CHECK|PRIMARY|UNIQUE|FOREIGN|CONSTRAINT|EXCLUDE|\))`), "tables without columns (CREATE TABLE t (), CREATE TABLE t (CHECK (...))) are passed to SQLite"},
	{regexp.MustCompile("unrecognized token: \"[!~@#&|^<>=?+*/%`-]|near \"[!~@#&|^<>=?+*/%`-]+\": syntax error"), "prefix and unknown operators are passed through (SELECT !0, SELECT &0)"},
	{regexp.MustCompile("(?s)`.*-> .*(syntax error|unrecognized token)"), "operators made of PostgreSQL's operator characters (`, ?, ...) are passed through"},
	{regexp.MustCompile(`near "'.*'": syntax error`), "bit-string literals (B'...', X'...') are passed through"},
	{regexp.MustCompile(`default value of column .* is not constant`), "column references in DEFAULT are passed to SQLite (PostgreSQL refuses them)"},
	{regexp.MustCompile(`(?is)^UPDATE \S+ (AS )?\S+ SET .*-> .*syntax error`), "UPDATE t alias SET ... is passed to SQLite, which has no UPDATE alias"},
}

func knownBug(msg string) string {
	for _, k := range knownTranslatorBugs {
		if k.re.MatchString(msg) {
			return k.why
		}
	}
	return ""
}

// checkTranslate applies the property to one statement.
func checkTranslate(t *testing.T, c *sqlite3.SQLiteConn, sql string) {
	out, err := translateForFuzz(c, sql)
	defer c.Exec("DROP TABLE IF EXISTS temp._tandem_merge", nil) // a MERGE's work table
	if err != nil {
		var pe *pgwire.Error
		if !errors.As(err, &pe) {
			t.Fatalf("%q: refused with a %T, not a *pgwire.Error: %v", sql, err, err)
		}
		// 2BP01: DROP of what a view depends on (the translator lists
		// the views); 54000: a literal past a limit PostgreSQL checks
		// when it parses (an array's 6 dimensions).
		if pe.Code != "0A000" && pe.Code != "2BP01" && pe.Code != "54000" && !strings.HasPrefix(pe.Code, "42") && !strings.HasPrefix(pe.Code, "22") && !strings.HasPrefix(pe.Code, "3F") {
			t.Fatalf("%q: refused with SQLSTATE %s (want 0A000, 42601 or another parse-analysis code: 42xxx, 22xxx, 3F000, 2BP01, 54000): %v", sql, pe.Code, err)
		}
		if sqliteSyntaxMessage.MatchString(pe.Message) {
			t.Fatalf("%q: refused with a SQLite parser message: %v", sql, err)
		}
		return
	}
	for _, s := range out {
		st, err := c.Prepare(s)
		if err != nil {
			if why := knownBug(s + " -> " + err.Error()); why != "" {
				t.Skipf("known translator bug (%s): %q -> %s: %v", why, sql, s, err)
			}
			if m := noSuchFunction.FindStringSubmatch(err.Error()); m != nil && !strings.HasPrefix(m[1], "_pg_") && !strings.HasPrefix(m[1], "_cast_") && !strings.HasPrefix(m[1], "_tandem_") {
				continue // a function the input named (_x is no helper of the translator's)
			}
			if m := renamedArity.FindStringSubmatch(err.Error()); m != nil && strings.Contains(strings.ToLower(sql), m[1]+"(") {
				continue // now(0): a function the input named, under tandem's name
			}
			if !sqliteInputErrors.MatchString(err.Error()) {
				t.Fatalf("%q translated into SQLite SQL that SQLite refuses:\n  %s\n  %v", sql, s, err)
			}
			continue
		}
		st.Close()
	}
}

func FuzzTranslate(f *testing.F) {
	stmts := corpusStatements(f)
	for _, s := range stmts {
		f.Add(s)
	}
	for _, s := range []string{"", ";", "SELECT", "SELECT $1", "SELECT $1::int + $2", "select 1; select 2",
		"SELECT '\\x00'::bytea", "SELECT 1 FROM (SELECT 2) AS \"a\"\"b\"", "SELECT E'\\\\'", "SELECT U&'\\0000'",
		"CREATE TABLE \"weird name\" (\"select\" int, \"\" text)", "SELECT 1e400", "SELECT -9223372036854775808",
		"SELECT ARRAY[[1,2],[3,4]]", "SELECT ROW(1, 'a')", "SELECT (1, 2) = (1, 2)", "WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r",
	} {
		f.Add(s)
	}
	c := fuzzDB(f)
	// The corpus's tables exist, so mutated statements about them compile.
	for _, s := range stmts {
		if strings.HasPrefix(strings.ToUpper(s), "CREATE ") {
			if out, err := translateForFuzz(c, s); err == nil {
				for _, o := range out {
					_, _ = c.Exec(o, nil)
				}
				sqlpg.SchemaChanged()
			}
		}
	}
	f.Fuzz(func(t *testing.T, sql string) {
		checkTranslate(t, c, sql)
	})
}

// translateForFuzz runs the translator and returns the SQLite statements
// to compile (none for statements the back end handles itself).
func translateForFuzz(c *sqlite3.SQLiteConn, sql string) ([]string, error) {
	tr, err := sqlpg.Translate(sql, fuzzSchema{c})
	if err != nil {
		return nil, err
	}
	switch {
	case tr.Passthrough, tr.Noop:
		return nil, nil
	case len(tr.Script) > 0:
		return tr.Script, nil
	case tr.Merge != nil:
		// Its steps read the work table, which exists while it runs.
		mp := tr.Merge
		if _, err := c.Exec(mp.Drop+"; "+mp.Create, nil); err != nil {
			return nil, fmt.Errorf("MERGE work table %q: %w", mp.Create, err)
		}
		out := append([]string{mp.Query, mp.Fill, mp.Count}, mp.Steps...)
		if mp.Twice != "" {
			out = append(out, mp.Twice)
		}
		return out, nil
	}
	return []string{tr.SQL}, nil
}

// fuzzSchema answers the translator's questions about tables from the
// SQLite database: PRAGMA table_info for the columns, _tandem_columns for
// their PostgreSQL types (else by declared type, as for tables made
// without the translator).
type fuzzSchema struct{ c *sqlite3.SQLiteConn }

func (s fuzzSchema) Columns(table string) []sqlpg.Column {
	types := map[string]sqlpg.Column{}
	seqs := map[string]string{}
	for _, r := range s.query("SELECT column_name, type_oid, typmod, identity, sequence IS NOT NULL, coalesce(sequence, '') FROM _tandem_columns WHERE table_name = ?", table) {
		seqs[r[0].(string)] = r[5].(string)
		if t := sqlpg.Types[uint32(r[1].(int64))]; t != nil {
			c := sqlpg.Column{Name: r[0].(string), Type: t, Typmod: int32(r[2].(int64)), Serial: r[4] == int64(1)}
			c.Identity, _ = r[3].(string)
			types[r[0].(string)] = c
		}
	}
	enums := map[string]sqlpg.Enum{}
	for _, r := range s.query("SELECT c.column_name, e.oid, e.name, e.labels FROM _tandem_columns c JOIN _tandem_enums e ON e.oid = c.type_oid WHERE c.table_name = ?", table) {
		enums[r[0].(string)] = sqlpg.Enum{OID: uint32(r[1].(int64)), Name: r[2].(string), Labels: sqlpg.ParseEnumLabels(r[3].(string))}
	}
	var cols []sqlpg.Column
	for _, r := range s.query("SELECT name, type, dflt_value IS NOT NULL, pk, dflt_value LIKE '\\_tandem\\_nextval(%' ESCAPE '\\', coalesce(dflt_value, '') FROM pragma_table_info(?)", table) {
		name, decl := r[0].(string), r[1].(string)
		col, ok := types[name]
		if !ok {
			col = sqlpg.Column{Name: name, Type: sqlpg.DeclType(decl), Typmod: -1}
		}
		col.Default = r[2] == int64(1)
		col.PK = r[3].(int64)
		col.DefaultSQL = r[5].(string)
		if e, ok := enums[name]; ok {
			col.Enum = &e
		}
		if r[4] == int64(1) {
			col.Sequence = seqs[name]
		}
		cols = append(cols, col)
	}
	return cols
}

func (s fuzzSchema) Enum(name string) (sqlpg.Enum, bool) {
	r := s.query(sqlpg.EnumQuery, name)
	if len(r) == 0 {
		return sqlpg.Enum{}, false
	}
	return sqlpg.Enum{OID: uint32(r[0][0].(int64)), Name: name, Labels: sqlpg.ParseEnumLabels(r[0][1].(string))}, true
}

func (s fuzzSchema) Views() map[string]string {
	out := map[string]string{}
	for _, r := range s.query("SELECT name, sql FROM main.sqlite_schema WHERE type = 'view'") {
		out[r[0].(string)] = r[1].(string)
	}
	return out
}

func (s fuzzSchema) PrimaryKey(table string) []string {
	var out []string
	for _, r := range s.query("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", table) {
		out = append(out, r[0].(string))
	}
	return out
}

// RelationExists: as the back end's (a taken constraint name is numbered).
func (s fuzzSchema) RelationExists(name string) bool {
	return len(s.query(`SELECT 1 FROM sqlite_master WHERE lower(name) = lower(?) UNION ALL SELECT 1 FROM _pg_index_all WHERE lower(relname) = lower(?) UNION ALL SELECT 1 FROM _tandem_sequences WHERE lower(name) = lower(?)`, name, name, name)) > 0
}

// StoredName: as the back end's.
func (s fuzzSchema) StoredName(name string) string {
	if r := s.query(`SELECT name FROM sqlite_master WHERE lower(name) = lower(?) AND type IN ('table', 'view', 'index') LIMIT 1`, name); len(r) > 0 {
		return r[0][0].(string)
	}
	return ""
}

func (s fuzzSchema) query(sql string, args ...driver.Value) [][]driver.Value {
	rows, err := s.c.Query(sql, args)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out [][]driver.Value
	for {
		r := make([]driver.Value, len(rows.Columns()))
		if rows.Next(r) != nil {
			return out
		}
		out = append(out, r)
	}
}
