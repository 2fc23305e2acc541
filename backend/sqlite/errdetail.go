package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
)

// Constraint violations completed as PostgreSQL reports them (the
// constraint's name, the table, DETAIL with the key's values), on the
// error path only: the statement's own values where they are constants or
// parameters, and queries on the tables for the rest. Where the answer is
// not certain, the error keeps what SQLite said and goes without DETAIL.

// pgVal is one value written, as PostgreSQL prints it and as SQLite
// compares it.
type pgVal struct {
	null bool
	text string
	v    driver.Value
}

// completeConstraintError fills in a 23505 / 23503 / 23502 / 23514 error.
func (s *Session) completeConstraintError(ctx context.Context, st *Statement, args []any, pe *pgwire.Error) {
	var w *sqlpg.WriteShape
	if st != nil {
		w = sqlpg.ShapeOfWrite(st.orig)
	}
	c, done, err := s.readConn(ctx)
	if err != nil {
		return
	}
	defer done()
	e := &errCtx{s: s, c: c, w: w, args: args}
	switch pe.Code {
	case "23505":
		e.unique(pe)
	case "23503":
		if w != nil {
			e.foreignKey(pe)
		}
	case "23502":
		if w != nil && pe.Table == w.Table {
			if row, ok := e.failingRow(func(vals map[string]pgVal) bool { return vals[pe.Column].null }, false); ok {
				pe.Detail = "Failing row contains (" + row + ")."
			}
		}
	case "23514":
		if pe.Constraint != "" {
			e.check(pe)
		}
	}
}

type errCtx struct {
	s    *Session
	c    *conn
	w    *sqlpg.WriteShape
	args []any
	cols []sqlpg.Column
}

func (e *errCtx) columns() []sqlpg.Column {
	if e.cols == nil && e.w != nil {
		e.cols = tableColumnList(e.c, e.w.Table)
	}
	return e.cols
}

func (e *errCtx) column(name string) *sqlpg.Column {
	for i, c := range e.columns() {
		if c.Name == name {
			return &e.columns()[i]
		}
	}
	return nil
}

// formatValue reads a written value as a column of type t stores and
// prints it; ok is false for types whose printing is not certain here.
func formatValue(t *sqlpg.Type, wv sqlpg.WriteValue, args []any) (pgVal, bool) {
	if !wv.Known {
		return pgVal{}, false
	}
	text := wv.Text
	if wv.Param > 0 {
		if wv.Param > len(args) {
			return pgVal{}, false
		}
		switch a := args[wv.Param-1].(type) {
		case omittedArg:
			return pgVal{}, false // too large to keep (smallArgs)
		case nil:
			return pgVal{null: true, text: "null"}, true
		case string:
			text = a
		case []byte:
			text = string(a)
		case int64:
			text = strconv.FormatInt(a, 10)
		case int32:
			text = strconv.FormatInt(int64(a), 10)
		case bool:
			text = strconv.FormatBool(a)
		default:
			return pgVal{}, false
		}
	} else if wv.Null {
		return pgVal{null: true, text: "null"}, true
	}
	if t == nil {
		return pgVal{}, false
	}
	switch t.Name {
	case "int2", "int4", "int8":
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return pgVal{}, false
		}
		return pgVal{text: strconv.FormatInt(n, 10), v: n}, true
	case "text", "varchar", "name":
		return pgVal{text: text, v: text}, true
	case "bool":
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "t", "true", "yes", "on", "1":
			return pgVal{text: "t", v: int64(1)}, true
		case "f", "false", "no", "off", "0":
			return pgVal{text: "f", v: int64(0)}, true
		}
	}
	return pgVal{}, false
}

// formatStored prints a value read from SQLite as a column of type t.
func formatStored(t *sqlpg.Type, v driver.Value) (string, bool) {
	if t == nil {
		return "", false
	}
	switch t.Name {
	case "int2", "int4", "int8":
		if n, ok := v.(int64); ok {
			return strconv.FormatInt(n, 10), true
		}
	case "text", "varchar", "name":
		switch s := v.(type) {
		case string:
			return s, true
		case []byte:
			return string(s), true
		}
	}
	return "", false
}

// rowValues reads row i of the statement by column name: every column of
// the table, those the statement leaves out at NULL when they have no
// default. ok is false when a value is not known.
func (e *errCtx) rowValues(i int, need []string) (map[string]pgVal, bool) {
	w := e.w
	if w == nil || w.Kind != "INSERT" || i >= len(w.Rows) || w.With {
		return nil, false
	}
	cols := e.columns()
	if len(cols) == 0 {
		return nil, false
	}
	names := w.Columns
	if names == nil {
		for _, c := range cols {
			names = append(names, c.Name)
		}
		names = names[:min(len(names), len(w.Rows[i]))]
	}
	if len(names) != len(w.Rows[i]) {
		return nil, false
	}
	out := map[string]pgVal{}
	for _, n := range need {
		col := e.column(n)
		if col == nil {
			return nil, false
		}
		j := indexOf(names, n)
		if j < 0 {
			if col.Default || col.Serial || col.Identity != "" {
				return nil, false
			}
			out[n] = pgVal{null: true, text: "null"}
			continue
		}
		v, ok := formatValue(col.Type, w.Rows[i][j], e.args)
		if !ok {
			return nil, false
		}
		out[n] = v
	}
	return out, true
}

func indexOf(names []string, n string) int {
	for i, x := range names {
		if x == n {
			return i
		}
	}
	return -1
}

// failingRow prints the row PostgreSQL's "Failing row contains (...)"
// shows: of an INSERT, the first row fails says is the one (any row
// when each says so: then the statement must write one row); of an
// UPDATE that changes one row, that row as it was to become.
func (e *errCtx) failingRow(fails func(map[string]pgVal) bool, any bool) (string, bool) {
	w := e.w
	if w == nil || w.OnConflict == "UPDATE" || w.With {
		return "", false
	}
	var names []string
	for _, c := range e.columns() {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return "", false
	}
	if w.Kind == "UPDATE" {
		return e.updatedRow(names)
	}
	if w.Kind != "INSERT" || any && len(w.Rows) != 1 {
		return "", false
	}
	for i := range w.Rows {
		vals, ok := e.rowValues(i, names)
		if !ok {
			return "", false
		}
		if fails(vals) {
			parts := make([]string, len(names))
			for i, n := range names {
				parts[i] = vals[n].text
			}
			return strings.Join(parts, ", "), true
		}
	}
	return "", false
}

// updatedRow is the one row an UPDATE changes, with its SET values
// (constants or parameters); ok is false when it changes another number
// of rows.
func (e *errCtx) updatedRow(names []string) (string, bool) {
	w := e.w
	ref := sqlpg.QuoteIdent(w.Ref)
	set := map[string]pgVal{}
	for j, c := range w.Columns {
		col := e.column(c)
		if col == nil {
			return "", false
		}
		v, ok := formatValue(col.Type, w.Rows[0][j], e.args)
		if !ok {
			return "", false
		}
		set[c] = v
	}
	var targets []string
	for _, n := range names {
		targets = append(targets, ref+"."+sqlpg.QuoteIdent(n))
	}
	q, ok := w.RowsQuery(strings.Join(targets, ", "), "true", 2)
	if !ok {
		return "", false
	}
	tr, err := e.s.translate(e.c, q)
	if err != nil || tr.SQL == "" || len(tr.Script) > 1 {
		return "", false
	}
	var qa []driver.Value
	for _, a := range e.args {
		qa = append(qa, a)
	}
	rows, err := e.c.c.Query(tr.SQL, qa)
	if err != nil {
		return "", false
	}
	defer rows.Close()
	v := make([]driver.Value, len(names))
	if rows.Next(v) != nil {
		return "", false
	}
	parts := make([]string, len(names))
	for i, n := range names {
		if x, ok := set[n]; ok {
			parts[i] = x.text
			continue
		}
		if v[i] == nil {
			parts[i] = "null"
			continue
		}
		t, ok := formatStored(e.column(n).Type, v[i])
		if !ok {
			return "", false
		}
		parts[i] = t
	}
	if rows.Next(make([]driver.Value, len(names))) == nil {
		return "", false // more than one row: which is first is not certain
	}
	return strings.Join(parts, ", "), true
}

// check: SQLite names the constraint only; PostgreSQL names the table.
func (e *errCtx) check(pe *pgwire.Error) {
	table := ""
	if e.w != nil {
		table = e.w.Table
	}
	rows, err := e.c.c.Query(`SELECT (SELECT relname FROM pg_class WHERE oid = conrelid) FROM pg_constraint WHERE contype = 'c' AND conname = ?1
		ORDER BY (SELECT relname FROM pg_class WHERE oid = conrelid) = ?2 DESC`, []driver.Value{pe.Constraint, table})
	if err != nil {
		return
	}
	v := make([]driver.Value, 1)
	if rows.Next(v) == nil {
		if t, ok := v[0].(string); ok {
			pe.Message = fmt.Sprintf("new row for relation %q violates check constraint %q", t, pe.Constraint)
			pe.Schema, pe.Table = "public", t
		}
	}
	rows.Close()
	if pe.Table != "" && table == pe.Table {
		// Which row: a single row is the one.
		if row, ok := e.failingRow(func(map[string]pgVal) bool { return true }, true); ok {
			pe.Detail = "Failing row contains (" + row + ")."
		}
	}
}

// exists runs a query with arguments and says whether it returns a row.
func (e *errCtx) exists(q string, args []driver.Value) (bool, error) {
	rows, err := e.c.c.Query(q, args)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	v := make([]driver.Value, len(rows.Columns()))
	return rows.Next(v) == nil, nil
}

// uniqueIndex is a unique index of a table in PostgreSQL's order.
type uniqueIndex struct {
	name string
	cols []string // nil for an expression index
}

func (e *errCtx) uniqueIndexes(table string) []uniqueIndex {
	rows, err := e.c.c.Query(`SELECT relname, (SELECT json_group_array(ii.name) FROM pragma_index_info(coalesce(sqlite_name, '')) ii), cols, sqlite_name
		FROM _pg_index_all WHERE tbl = ?1 AND isunique AND NOT partial
		ORDER BY isprimary DESC, (SELECT rowid FROM main.sqlite_schema WHERE name = sqlite_name)`, []driver.Value{table})
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []uniqueIndex
	v := make([]driver.Value, 4)
	for rows.Next(v) == nil {
		ix := uniqueIndex{name: asString(v[0])}
		if v[3] == nil {
			ix.cols = []string{strings.Trim(asString(v[2]), `"`)} // the rowid alias
		} else if list := asString(v[1]); list != "" && list != "[null]" && !strings.Contains(list, "null") {
			for _, n := range strings.Split(strings.Trim(list, "[]"), ",") {
				uq, err := strconv.Unquote(n)
				if err != nil {
					return nil
				}
				ix.cols = append(ix.cols, uq)
			}
		}
		out = append(out, ix)
	}
	return out
}

// unique names the index SQLite reported and, where the row is known,
// finds the one PostgreSQL checks first and the key's values.
func (e *errCtx) unique(pe *pgwire.Error) {
	if pe.Table != "" && pe.Constraint == "" {
		e.s.nameUniqueViolationOn(e.c, pe)
	} else if pe.Table == "" && pe.Constraint != "" {
		rows, err := e.c.c.Query(`SELECT tbl_name FROM main.sqlite_schema WHERE type = 'index' AND name = ?1`, []driver.Value{pe.Constraint})
		if err == nil {
			v := make([]driver.Value, 1)
			if rows.Next(v) == nil {
				pe.Table = asString(v[0])
			}
			rows.Close()
		}
	}
	pe.Column = "" // PostgreSQL names the constraint, not its columns
	w := e.w
	if w == nil || pe.Table != w.Table || pe.Constraint == "" || w.OnConflict == "UPDATE" {
		return
	}
	idx := e.uniqueIndexes(w.Table)
	reported := -1
	for i, ix := range idx {
		if ix.name == pe.Constraint {
			reported = i
		}
	}
	if reported < 0 {
		return
	}
	setDetail := func(ix uniqueIndex, vals map[string]pgVal) {
		parts := make([]string, len(ix.cols))
		for i, c := range ix.cols {
			parts[i] = vals[c].text
		}
		pe.Constraint = ix.name
		pe.Message = fmt.Sprintf("duplicate key value violates unique constraint %q", ix.name)
		pe.Detail = fmt.Sprintf("Key (%s)=(%s) already exists.", sqlpg.QuoteIdents(ix.cols), strings.Join(parts, ", "))
	}
	if w.Kind == "UPDATE" {
		// Index by index in PostgreSQL's order, those whose columns the
		// statement sets: the first whose new key a row already has.
		for k, ix := range idx[:reported+1] {
			if ix.cols == nil {
				return // an expression: its value is not known here
			}
			vals := map[string]pgVal{}
			q := "SELECT 1 FROM " + sqlpg.QuoteIdent(w.Table) + " WHERE "
			var qa []driver.Value
			n := 0
			for j, c := range ix.cols {
				col := e.column(c)
				i := indexOf(w.Columns, c)
				if col == nil || i < 0 {
					continue
				}
				v, ok := formatValue(col.Type, w.Rows[0][i], e.args)
				if !ok || v.null {
					return
				}
				vals[c] = v
				if j > 0 {
					q += " AND "
				}
				q += sqlpg.QuoteIdent(c) + " = ?"
				qa = append(qa, v.v)
				n++
			}
			if n == 0 {
				continue // unchanged
			}
			if n < len(ix.cols) {
				return
			}
			found, err := e.exists(q+" LIMIT 1", qa)
			if err != nil {
				return
			}
			if found {
				setDetail(ix, vals)
				return
			}
			if k == reported {
				return
			}
		}
		return
	}
	if w.Kind != "INSERT" || w.Rows == nil || (w.OnConflict != "" && len(w.Rows) != 1) {
		return
	}
	// Row by row, index by index in PostgreSQL's order: the first key
	// already in the table (or written by an earlier row).
	var earlier []map[string]pgVal
	for i := range w.Rows {
		for k, ix := range idx {
			if w.OnConflict != "" && (len(w.Arbiter) == 0 || sameCols(w.Arbiter, ix.cols) || len(w.Arbiter) == 1 && w.Arbiter[0] == "\x00"+ix.name) {
				continue
			}
			if ix.cols == nil {
				if k == reported {
					return // an expression: its value is not known here
				}
				if k < reported {
					return
				}
				continue
			}
			vals, ok := e.rowValues(i, ix.cols)
			if !ok {
				if k != reported && e.serialOnly(ix.cols, i) {
					continue // a key drawn from its sequence
				}
				return
			}
			conflict, null := false, false
			q := "SELECT 1 FROM " + sqlpg.QuoteIdent(w.Table) + " WHERE "
			var qa []driver.Value
			for j, c := range ix.cols {
				if vals[c].null {
					null = true
				}
				if j > 0 {
					q += " AND "
				}
				q += sqlpg.QuoteIdent(c) + " = ?"
				qa = append(qa, vals[c].v)
			}
			if null {
				continue
			}
			for _, r := range earlier {
				same := true
				for _, c := range ix.cols {
					if x, ok := r[c]; !ok || x.null || x.text != vals[c].text {
						same = false
					}
				}
				conflict = conflict || same
			}
			if !conflict {
				found, err := e.exists(q+" LIMIT 1", qa)
				if err != nil {
					return
				}
				conflict = found
			}
			if conflict {
				setDetail(ix, vals)
				return
			}
		}
		var names []string
		for _, ix := range idx {
			names = append(names, ix.cols...)
		}
		r, ok := e.rowValues(i, names)
		if !ok {
			r = map[string]pgVal{}
		}
		earlier = append(earlier, r)
	}
}

// serialOnly: the key is one column the row leaves to its sequence.
func (e *errCtx) serialOnly(cols []string, row int) bool {
	if len(cols) != 1 {
		return false
	}
	if i := indexOf(e.w.Columns, cols[0]); i >= 0 && e.w.Columns != nil {
		// Named with DEFAULT (bun: VALUES (DEFAULT, 'bob')): drawn too.
		if row >= len(e.w.Rows) || i >= len(e.w.Rows[row]) || !e.w.Rows[row][i].Default {
			return false
		}
	}
	col := e.column(cols[0])
	return col != nil && (col.Serial || col.Identity != "") && e.w.Columns != nil
}

func sameCols(a, b []string) bool {
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

// fkey is one foreign key.
type fkey struct {
	child, name, parent, onUpdate, onDelete string
	cols, refs                              []string
	deferred                                bool // INITIALLY DEFERRED: checked at COMMIT
	id                                      int64
}

func (e *errCtx) foreignKeys(table string) []*fkey {
	rows, err := e.c.c.Query(sqlpg.ForeignKeysSQL, []driver.Value{table})
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []*fkey
	v := make([]driver.Value, 9)
	var last *fkey
	lastID := int64(-1)
	for rows.Next(v) == nil {
		id, _ := v[1].(int64)
		if last == nil || last.child != asString(v[0]) || id != lastID {
			last = &fkey{child: asString(v[0]), name: asString(v[2]), parent: asString(v[3]), onUpdate: asString(v[4]), onDelete: asString(v[5]), id: id}
			d, _ := v[8].(int64)
			last.deferred = d&2 != 0
			lastID = id
			out = append(out, last)
		}
		last.cols = append(last.cols, asString(v[6]))
		last.refs = append(last.refs, asString(v[7]))
	}
	return out
}

// foreignKey finds the key PostgreSQL would report: SQLite says only
// that one failed.
func (e *errCtx) foreignKey(pe *pgwire.Error) {
	w := e.w
	pe.Schema = "public"
	keys := e.foreignKeys(w.Table)
	var asChild, asParent []*fkey
	for _, k := range keys {
		if k.deferred {
			continue
		}
		if k.child == w.Table && w.Kind != "DELETE" {
			asChild = append(asChild, k)
		}
		if k.parent == w.Table && w.Kind != "INSERT" {
			asParent = append(asParent, k)
		}
	}
	childErr := func(k *fkey, detail string) {
		pe.Table, pe.Constraint = w.Table, k.name
		pe.Message = fmt.Sprintf("insert or update on table %q violates foreign key constraint %q", w.Table, k.name)
		pe.Detail = detail
	}
	parentErr := func(k *fkey, detail string) {
		pe.Table, pe.Constraint = k.child, k.name
		pe.Message = fmt.Sprintf("update or delete on table %q violates foreign key constraint %q on table %q", w.Table, k.name, k.child)
		pe.Detail = detail
	}
	// PostgreSQL runs the referenced side's checks first.
	if len(asParent) > 0 {
		if k, detail, ok := e.referencedViolation(asParent); ok {
			parentErr(k, detail)
			return
		}
	}
	if len(asChild) > 0 {
		if k, detail, ok := e.referencingViolation(asChild); ok {
			childErr(k, detail)
			return
		}
	}
	// Not found: named when one key can be the one.
	pe.Table = w.Table
	switch {
	case len(asChild) == 1 && len(asParent) == 0:
		childErr(asChild[0], "")
	case len(asParent) == 1 && len(asChild) == 0:
		parentErr(asParent[0], "")
	default:
		pe.Message = fmt.Sprintf("%s on table %q violates a foreign key constraint", map[bool]string{true: "update or delete", false: "insert or update"}[w.Kind == "DELETE"], w.Table)
	}
}

// referencingViolation: the first row written and key whose referenced
// row does not exist.
func (e *errCtx) referencingViolation(keys []*fkey) (*fkey, string, bool) {
	w := e.w
	if w.With || w.Rows == nil || w.OnConflict == "UPDATE" {
		return nil, "", false
	}
	var earlier []map[string]pgVal
	for i := range w.Rows {
		for _, k := range keys {
			var vals map[string]pgVal
			if w.Kind == "UPDATE" {
				n := 0
				vals = map[string]pgVal{}
				for _, c := range k.cols {
					if j := indexOf(w.Columns, c); j >= 0 {
						col := e.column(c)
						if col == nil {
							return nil, "", false
						}
						v, ok := formatValue(col.Type, w.Rows[0][j], e.args)
						if !ok {
							return nil, "", false
						}
						vals[c] = v
						n++
					}
				}
				if n == 0 {
					continue // the key is not changed
				}
				if n < len(k.cols) {
					return nil, "", false
				}
			} else {
				var ok bool
				if vals, ok = e.rowValues(i, k.cols); !ok {
					return nil, "", false
				}
			}
			q := "SELECT 1 FROM " + sqlpg.QuoteIdent(k.parent) + " WHERE "
			var qa []driver.Value
			var texts []string
			null := false
			for j, c := range k.cols {
				if vals[c].null {
					null = true // MATCH SIMPLE: not checked
				}
				if j > 0 {
					q += " AND "
				}
				q += sqlpg.QuoteIdent(k.refs[j]) + " = ?"
				qa = append(qa, vals[c].v)
				texts = append(texts, vals[c].text)
			}
			if null {
				continue
			}
			found, err := e.exists(q+" LIMIT 1", qa)
			if err != nil {
				return nil, "", false
			}
			if !found && k.parent == w.Table && w.Kind == "INSERT" {
				for _, r := range earlier { // a row of this statement
					same := true
					for j, c := range k.refs {
						if x, ok := r[c]; !ok || x.null || x.text != texts[j] {
							same = false
						}
					}
					found = found || same
				}
			}
			if !found {
				return k, fmt.Sprintf("Key (%s)=(%s) is not present in table %q.", sqlpg.QuoteIdents(k.cols), strings.Join(texts, ", "), k.parent), true
			}
		}
		if w.Kind == "UPDATE" {
			break
		}
		var names []string
		for _, k := range keys {
			if k.parent == w.Table {
				names = append(names, k.refs...)
			}
		}
		r, _ := e.rowValues(i, names)
		earlier = append(earlier, r)
	}
	return nil, "", false
}

// referencedViolation: the first row an UPDATE or DELETE changes whose
// key a referencing row still holds.
func (e *errCtx) referencedViolation(keys []*fkey) (*fkey, string, bool) {
	w := e.w
	ref := sqlpg.QuoteIdent(w.Ref)
	for _, k := range keys {
		action := k.onDelete
		if w.Kind == "UPDATE" {
			action = k.onUpdate
			changed := false
			for _, c := range k.refs {
				changed = changed || indexOf(w.Columns, c) >= 0
			}
			if !changed {
				continue
			}
		}
		if action != "NO ACTION" && action != "RESTRICT" {
			return nil, "", false // a cascade's own writes: not followed here
		}
		var targets, conds []string
		for j, c := range k.refs {
			targets = append(targets, ref+"."+sqlpg.QuoteIdent(c))
			conds = append(conds, fmt.Sprintf("_c.%s = %s.%s", sqlpg.QuoteIdent(k.cols[j]), ref, sqlpg.QuoteIdent(c)))
		}
		cond := fmt.Sprintf("EXISTS (SELECT 1 FROM %s _c WHERE %s)", sqlpg.QuoteIdent(k.child), strings.Join(conds, " AND "))
		if w.Kind == "UPDATE" {
			// A key set to the value it has is not a change.
			for j, c := range w.Columns {
				if indexOf(k.refs, c) < 0 {
					continue
				}
				col := e.column(c)
				if col == nil {
					return nil, "", false
				}
				v, ok := formatValue(col.Type, w.Rows[0][j], e.args)
				if !ok {
					return nil, "", false
				}
				if !v.null {
					cond += fmt.Sprintf(" AND %s.%s IS DISTINCT FROM %s", ref, sqlpg.QuoteIdent(c), sqlpg.QuoteLiteral(v.text))
				}
			}
		}
		q, ok := w.RowsQuery(strings.Join(targets, ", "), cond, 1)
		if !ok {
			return nil, "", false
		}
		tr, err := e.s.translate(e.c, q)
		if err != nil || tr.SQL == "" || len(tr.Script) > 1 {
			return nil, "", false
		}
		var qa []driver.Value
		for _, a := range e.args {
			qa = append(qa, a)
		}
		rows, err := e.c.c.Query(tr.SQL, qa)
		if err != nil {
			return nil, "", false
		}
		v := make([]driver.Value, len(rows.Columns()))
		hit := rows.Next(v) == nil
		rows.Close()
		if !hit {
			continue
		}
		texts := make([]string, len(k.refs))
		for j, c := range k.refs {
			col := e.column(c)
			if col == nil {
				return k, "", true
			}
			t, ok := formatStored(col.Type, v[j])
			if !ok {
				return k, "", true
			}
			texts[j] = t
		}
		return k, fmt.Sprintf("Key (%s)=(%s) is still referenced from table %q.", sqlpg.QuoteIdents(k.refs), strings.Join(texts, ", "), k.child), true
	}
	return nil, "", false
}

// deferredForeignKeyError words a COMMIT's foreign key failure (a
// deferred key) as PostgreSQL does, from the transaction still open on c:
// the first row PRAGMA foreign_key_check finds.
func deferredForeignKeyError(c *conn, err error) error {
	me := mapError(err)
	pe, ok := me.(*pgwire.Error)
	if !ok || pe.Code != "23503" {
		return me
	}
	rows, qerr := c.c.Query(`PRAGMA foreign_key_check`, nil)
	if qerr != nil {
		return me
	}
	v := make([]driver.Value, 4)
	if rows.Next(v) != nil {
		rows.Close()
		return me
	}
	table, rowid, fkid := asString(v[0]), v[1], v[3]
	rows.Close()
	e := &errCtx{c: c, w: &sqlpg.WriteShape{Table: table}}
	for _, k := range e.foreignKeys(table) {
		if k.child != table || k.id != fkid {
			continue
		}
		pe.Schema, pe.Table, pe.Constraint = "public", table, k.name
		pe.Message = fmt.Sprintf("insert or update on table %q violates foreign key constraint %q", table, k.name)
		var sel []string
		for _, col := range k.cols {
			sel = append(sel, sqlpg.QuoteIdent(col))
		}
		r, qerr := c.c.Query("SELECT "+strings.Join(sel, ", ")+" FROM "+sqlpg.QuoteIdent(table)+" WHERE rowid = ?", []driver.Value{rowid})
		if qerr != nil || rowid == nil {
			return pe
		}
		defer r.Close()
		vals := make([]driver.Value, len(sel))
		if r.Next(vals) != nil {
			return pe
		}
		texts := make([]string, len(k.cols))
		for j, col := range k.cols {
			cc := e.column(col)
			if cc == nil {
				return pe
			}
			t, ok := formatStored(cc.Type, vals[j])
			if !ok {
				return pe
			}
			texts[j] = t
		}
		pe.Detail = fmt.Sprintf("Key (%s)=(%s) is not present in table %q.", sqlpg.QuoteIdents(k.cols), strings.Join(texts, ", "), k.parent)
		return pe
	}
	return me
}
