package writeset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Dialect is what the apply helpers need to know about a back end's SQL.
// It is defined here, where it is used; back-end packages may provide their
// own implementation or use Postgres and SQLite.
//
// The statement shapes themselves (INSERT ... ON CONFLICT (pk) DO UPDATE SET
// col = excluded.col, UPDATE ... WHERE pk, DELETE ... WHERE pk) are shared:
// PostgreSQL (9.5+) and SQLite (3.24+) both accept them, so a dialect only
// spells identifiers and parameters.
type Dialect interface {
	// Name identifies the dialect in errors and logs.
	Name() string
	// Placeholder returns the bind-parameter marker for the i-th argument,
	// counting from 1.
	Placeholder(i int) string
	// QuoteIdent quotes one identifier (no schema qualification).
	QuoteIdent(name string) string
}

// Postgres and SQLite are the dialects of the two supported back ends.
var (
	Postgres Dialect = postgresDialect{}
	SQLite   Dialect = sqliteDialect{}
)

type postgresDialect struct{}

func (postgresDialect) Name() string                  { return "postgres" }
func (postgresDialect) Placeholder(i int) string      { return "$" + strconv.Itoa(i) }
func (postgresDialect) QuoteIdent(name string) string { return quoteDouble(name) }

type sqliteDialect struct{}

func (sqliteDialect) Name() string                  { return "sqlite" }
func (sqliteDialect) Placeholder(int) string        { return "?" }
func (sqliteDialect) QuoteIdent(name string) string { return quoteDouble(name) }

// quoteDouble is the SQL-standard identifier quoting both back ends use.
func quoteDouble(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Stmt is one SQL statement with its bind arguments (nil, int64, float64,
// string, []byte or bool). The SQL text depends only on the dialect, the
// operation, the table and the column lists, never on values, so appliers
// can cache prepared statements by text.
type Stmt struct {
	SQL  string
	Args []any
}

// Statements returns the statements that apply ws on a back end speaking d,
// in order: the DDL statement of a DDL record, or one statement per row.
// Run them in one transaction, together with recording ws.GSN as the node's
// applied GSN. The statements are idempotent for inserts, updates and
// deletes, so re-applying a writeset after a crash is harmless.
func Statements(d Dialect, ws *Writeset) ([]Stmt, error) {
	if err := ws.Validate(); err != nil {
		return nil, err
	}
	out := make([]Stmt, 0, len(ws.Rows)+1)
	if ws.IsDDL() {
		// A transaction's DDL runs first; its rows carry their final
		// images, against the final schema.
		out = append(out, Stmt{SQL: ws.DDL})
	}
	for i := range ws.Rows {
		if ws.Rows[i].Op == OpDDL {
			continue
		}
		s, err := rowStatement(d, &ws.Rows[i])
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// RowStatement returns the statement that applies one data row:
//   - insert, and update that keeps the primary key: an upsert of the full
//     after-image (INSERT ... ON CONFLICT (pk) DO UPDATE SET ...), which is
//     idempotent and also repairs a missing row;
//   - update that changes the primary key: UPDATE ... SET <after-image>
//     WHERE <old key> (a no-op if already applied);
//   - delete: DELETE ... WHERE <key>.
func RowStatement(d Dialect, r *Row) (Stmt, error) {
	if err := r.Validate(); err != nil {
		return Stmt{}, err
	}
	return rowStatement(d, r)
}

func rowStatement(d Dialect, r *Row) (Stmt, error) {
	if st, ok, err := sequenceStatement(d, r); ok {
		return st, err
	}
	var (
		sql  string
		err  error
		args []any
	)
	switch {
	case r.Op == OpInsertRow:
		sql, err = InsertSQL(d, r.Table, r.Cols)
		args = appendArgs(nil, r.After)
	case r.Op == OpDeleteRow:
		sql, err = DeleteRowSQL(d, r.Table, r.Cols)
		args = appendArgs(nil, r.After)
	case r.Op == OpDelete:
		sql, err = DeleteSQL(d, r.Table, r.KeyCols)
		args = appendArgs(nil, r.Key)
	case r.Op == OpUpdate && r.keyChanged():
		sql, err = UpdateSQL(d, r.Table, r.Cols, r.KeyCols)
		args = appendArgs(appendArgs(make([]any, 0, len(r.After)+len(r.Key)), r.After), r.Key)
	default:
		sql, err = UpsertSQL(d, r.Table, r.Cols, r.KeyCols)
		args = appendArgs(nil, r.After)
	}
	if err != nil {
		return Stmt{}, err
	}
	return Stmt{SQL: sql, Args: args}, nil
}

func appendArgs(dst []any, vs []Value) []any {
	if dst == nil {
		dst = make([]any, 0, len(vs))
	}
	for _, v := range vs {
		dst = append(dst, v.Any())
	}
	return dst
}

// InsertSQL returns INSERT INTO t (c1, ..., cn) [OVERRIDING SYSTEM VALUE]
// VALUES (p1, ..., pn): a row of a table without a primary key.
func InsertSQL(d Dialect, table string, cols []string) (string, error) {
	if err := checkStmtCols(table, cols, cols, true); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(quoteTable(d, table))
	b.WriteString(" (")
	writeIdents(&b, d, cols, ", ")
	b.WriteString(")")
	if d.Name() == "postgres" {
		b.WriteString(" OVERRIDING SYSTEM VALUE")
	}
	b.WriteString(" VALUES (")
	for i := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Placeholder(i + 1))
	}
	b.WriteString(")")
	return b.String(), nil
}

// DeleteRowSQL deletes one row whose every column equals the bound image
// (NULL equal to NULL): a row of a table without a primary key. PostgreSQL
// compares text forms (the image's own form, and every type has one, where
// not every type has an equality operator) and addresses the row by ctid;
// SQLite compares with IS and addresses it by rowid. It scans the table:
// that is the cost of having no key.
func DeleteRowSQL(d Dialect, table string, cols []string) (string, error) {
	if err := checkStmtCols(table, cols, cols, true); err != nil {
		return "", err
	}
	id, eq := "rowid", " IS "
	if d.Name() == "postgres" {
		id, eq = "ctid", " IS NOT DISTINCT FROM "
	}
	t := quoteTable(d, table)
	var b strings.Builder
	b.WriteString("DELETE FROM ")
	b.WriteString(t)
	b.WriteString(" WHERE " + id + " = (SELECT " + id + " FROM ")
	b.WriteString(t)
	b.WriteString(" WHERE ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(d.QuoteIdent(c))
		if d.Name() == "postgres" {
			b.WriteString("::text")
		}
		b.WriteString(eq)
		b.WriteString(d.Placeholder(i + 1))
	}
	b.WriteString(" LIMIT 1)")
	return b.String(), nil
}

// UpsertSQL returns
//
//	INSERT INTO t (c1, ..., cn) [OVERRIDING SYSTEM VALUE] VALUES (p1, ..., pn)
//	ON CONFLICT (k1, ...) DO UPDATE SET c = excluded.c, ...
//
// binding the values of cols in order. When every column is a key column the
// conflict action is DO NOTHING. Every key column must be among cols.
func UpsertSQL(d Dialect, table string, cols, keyCols []string) (string, error) {
	if err := checkStmtCols(table, cols, keyCols, true); err != nil {
		return "", err
	}
	var b strings.Builder
	if d.Name() == "sqlite" && len(keyCols) == 1 && keyCols[0] == "rowid" {
		// A table without a primary key, identified by its rowid, which
		// no ON CONFLICT clause can name.
		b.WriteString("INSERT OR REPLACE INTO ")
		b.WriteString(quoteTable(d, table))
		b.WriteString(" (")
		writeIdents(&b, d, cols, ", ")
		b.WriteString(") VALUES (")
		for i := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(d.Placeholder(i + 1))
		}
		b.WriteString(")")
		return b.String(), nil
	}
	b.WriteString("INSERT INTO ")
	b.WriteString(quoteTable(d, table))
	b.WriteString(" (")
	writeIdents(&b, d, cols, ", ")
	b.WriteString(")")
	if d.Name() == "postgres" {
		// The after-image carries identity values too, even for
		// GENERATED ALWAYS columns.
		b.WriteString(" OVERRIDING SYSTEM VALUE")
	}
	b.WriteString(" VALUES (")
	for i := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Placeholder(i + 1))
	}
	b.WriteString(") ON CONFLICT (")
	writeIdents(&b, d, keyCols, ", ")
	b.WriteString(") DO ")
	first := true
	for _, c := range cols {
		if slices.Contains(keyCols, c) {
			continue
		}
		if first {
			b.WriteString("UPDATE SET ")
			first = false
		} else {
			b.WriteString(", ")
		}
		q := d.QuoteIdent(c)
		b.WriteString(q)
		b.WriteString(" = excluded.")
		b.WriteString(q)
	}
	if first {
		b.WriteString("NOTHING")
	}
	return b.String(), nil
}

// UpdateSQL returns
//
//	UPDATE t SET c1 = p1, ..., cn = pn WHERE k1 = pn+1 AND ...
//
// binding the values of cols, then the old key values.
func UpdateSQL(d Dialect, table string, cols, keyCols []string) (string, error) {
	if err := checkStmtCols(table, cols, keyCols, true); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("UPDATE ")
	b.WriteString(quoteTable(d, table))
	b.WriteString(" SET ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.QuoteIdent(c))
		b.WriteString(" = ")
		b.WriteString(d.Placeholder(i + 1))
	}
	writeWhere(&b, d, keyCols, len(cols)+1)
	return b.String(), nil
}

// DeleteSQL returns DELETE FROM t WHERE k1 = p1 AND ..., binding the key
// values.
func DeleteSQL(d Dialect, table string, keyCols []string) (string, error) {
	if err := checkStmtCols(table, nil, keyCols, false); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("DELETE FROM ")
	b.WriteString(quoteTable(d, table))
	writeWhere(&b, d, keyCols, 1)
	return b.String(), nil
}

func writeWhere(b *strings.Builder, d Dialect, keyCols []string, first int) {
	b.WriteString(" WHERE ")
	for i, k := range keyCols {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(d.QuoteIdent(k))
		b.WriteString(" = ")
		b.WriteString(d.Placeholder(first + i))
	}
}

func writeIdents(b *strings.Builder, d Dialect, names []string, sep string) {
	for i, n := range names {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(d.QuoteIdent(n))
	}
}

// quoteTable quotes a possibly schema-qualified table name part by part:
// "public.t" becomes "public"."t". A table name that itself contains a dot
// cannot be expressed.
func quoteTable(d Dialect, table string) string {
	parts := strings.Split(table, ".")
	for i, p := range parts {
		parts[i] = d.QuoteIdent(p)
	}
	return strings.Join(parts, ".")
}

func checkStmtCols(table string, cols, keyCols []string, needCols bool) error {
	if err := checkIdent("table", table); err != nil {
		return err
	}
	for _, p := range strings.Split(table, ".") {
		if p == "" {
			return fmt.Errorf("%w: table name %q has an empty part", ErrInvalid, table)
		}
	}
	if len(keyCols) == 0 {
		return fmt.Errorf("%w: table %q: no primary key columns", ErrInvalid, table)
	}
	if err := checkCols("key column", keyCols); err != nil {
		return err
	}
	if !needCols {
		return nil
	}
	if len(cols) == 0 {
		return fmt.Errorf("%w: table %q: no columns", ErrInvalid, table)
	}
	if err := checkCols("column", cols); err != nil {
		return err
	}
	for _, k := range keyCols {
		if !slices.Contains(cols, k) {
			return fmt.Errorf("%w: table %q: key column %q not among the columns", ErrInvalid, table, k)
		}
	}
	return nil
}
