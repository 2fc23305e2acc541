package sqlpg

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// Enum types (CREATE TYPE ... AS ENUM). A type is a row of _tandem_enums
// (its OID, name and labels in order, as JSON); a column of the type is
// TEXT holding the label, with a CHECK that calls _tandem_enum_ok with
// the type's labels written out, so SQLite refuses any other value
// (22P02, as PostgreSQL) without reading the metadata. ALTER TYPE ... ADD
// VALUE rewrites those CHECKs in the tables' stored text. ORDER BY and
// <, >, <=, >= of an enum column go by the labels' positions
// (_tandem_enum_ord), as PostgreSQL's do; other places (min, max, a
// subquery's output) compare labels as text.

// Enum is an enum type.
type Enum struct {
	OID    uint32
	Name   string
	Labels []string
}

// EnumLister is a Schema that knows the database's enum types.
type EnumLister interface {
	// Enum returns the enum type of that name, if any.
	Enum(name string) (Enum, bool)
}

// EnumQuery reads one enum type by name: the back end's EnumLister runs it
// (oid, labels as JSON).
const EnumQuery = `SELECT oid, labels FROM _tandem_enums WHERE name = ?`

// ParseEnumLabels reads the labels column of _tandem_enums.
func ParseEnumLabels(labels string) []string {
	var out []string
	_ = json.Unmarshal([]byte(labels), &out)
	return out
}

func enumLabelsJSON(labels []string) string {
	b, _ := json.Marshal(labels)
	return string(b)
}

// enumOf looks up an enum type named by tn (public or unqualified).
func (t *translator) enumOf(tn *pg_query.TypeName) (Enum, bool) {
	if tn == nil || len(tn.ArrayBounds) > 0 || len(tn.Typmods) > 0 {
		return Enum{}, false
	}
	names := strs(tn.Names)
	if len(names) == 0 || len(names) > 2 || (len(names) == 2 && !strings.EqualFold(names[0], "public")) {
		return Enum{}, false
	}
	el, ok := t.sch.(EnumLister)
	if !ok {
		return Enum{}, false
	}
	return el.Enum(names[len(names)-1])
}

// resolveType is resolveType with the database's enum types: an enum is
// stored as text.
func (t *translator) resolveType(tn *pg_query.TypeName) (*Type, int32, *Enum, error) {
	typ, mod, err := resolveType(tn)
	if err == nil {
		return typ, mod, nil, nil
	}
	if e, ok := t.enumOf(tn); ok {
		return TypeByName["text"], -1, &e, nil
	}
	return nil, 0, nil, err
}

// enumCheck is the CHECK a column of enum type e carries.
func enumCheck(col string, e *Enum) string {
	args := []string{quoteLit(e.Name), quoteIdent(col)}
	for _, l := range e.Labels {
		args = append(args, quoteLit(l))
	}
	return "CHECK (_tandem_enum_ok(" + strings.Join(args, ", ") + "))"
}

// enumValueSQL is value (SQL) checked against enum e's labels.
func enumValueSQL(value string, e *Enum) string {
	args := []string{quoteLit(e.Name), value}
	for _, l := range e.Labels {
		args = append(args, quoteLit(l))
	}
	return "_tandem_enum_value(" + strings.Join(args, ", ") + ")"
}

// createEnum is CREATE TYPE name AS ENUM (labels).
func (t *translator) createEnum(s *pg_query.CreateEnumStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "CREATE TYPE"
	names := strs(s.TypeName)
	if len(names) == 2 && !strings.EqualFold(names[0], "public") {
		return nil, unsupported("objects outside the public schema")
	}
	name := names[len(names)-1]
	if TypeByName[strings.ToLower(name)] != nil {
		return nil, &pgwire.Error{Code: "42710", Message: fmt.Sprintf("type %q already exists", name)}
	}
	if _, ok := t.enumOf(&pg_query.TypeName{Names: s.TypeName}); ok {
		return nil, &pgwire.Error{Code: "42710", Message: fmt.Sprintf("type %q already exists", name)}
	}
	labels := strs(s.Vals)
	for i, l := range labels {
		if len(l) > 63 {
			return nil, &pgwire.Error{Code: "22023", Message: fmt.Sprintf("invalid enum label %q", l), Detail: "Labels must be 63 bytes or less."}
		}
		if slices.Contains(labels[:i], l) {
			return nil, &pgwire.Error{Code: "42710", Message: fmt.Sprintf("enum label %q used more than once", l)}
		}
	}
	tr.SQL = fmt.Sprintf("INSERT INTO _tandem_enums (oid, name, labels) SELECT coalesce(max(oid), %d) + 1, %s, %s FROM _tandem_enums",
		firstEnumOID-1, quoteLit(name), quoteLit(enumLabelsJSON(labels)))
	return tr, nil
}

// firstEnumOID: enum types are numbered from here (above PostgreSQL's
// built-in OIDs and tandem's relation OIDs' usual range).
const firstEnumOID = 900000

// alterEnum is ALTER TYPE name ADD VALUE [IF NOT EXISTS] 'x' [BEFORE |
// AFTER 'y'].
func (t *translator) alterEnum(s *pg_query.AlterEnumStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "ALTER TYPE"
	e, ok := t.enumOf(&pg_query.TypeName{Names: s.TypeName})
	if !ok {
		return nil, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("type %q does not exist", strings.Join(strs(s.TypeName), "."))}
	}
	if s.OldVal != "" {
		return nil, unsupported("ALTER TYPE ... RENAME VALUE")
	}
	if slices.Contains(e.Labels, s.NewVal) {
		if s.SkipIfNewValExists {
			tr.Noop = true
			return tr, nil
		}
		return nil, &pgwire.Error{Code: "42710", Message: fmt.Sprintf("enum label %q already exists", s.NewVal)}
	}
	labels := slices.Clone(e.Labels)
	at := len(labels)
	if s.NewValNeighbor != "" {
		i := slices.Index(labels, s.NewValNeighbor)
		if i < 0 {
			return nil, &pgwire.Error{Code: "22023", Message: fmt.Sprintf("%q is not an existing enum label", s.NewValNeighbor)}
		}
		at = i
		if s.NewValIsAfter {
			at = i + 1
		}
	}
	labels = slices.Insert(labels, at, s.NewVal)
	js := quoteLit(enumLabelsJSON(labels))
	tr.Script = []string{
		fmt.Sprintf("UPDATE _tandem_enums SET labels = %s WHERE oid = %d", js, e.OID),
		"PRAGMA writable_schema = ON",
		fmt.Sprintf("UPDATE sqlite_master SET sql = _tandem_enum_relabel(sql, %s, %s) WHERE type = 'table' AND instr(sql, %s) > 0",
			quoteLit(e.Name), js, quoteLit("_tandem_enum_ok("+quoteLit(e.Name))),
		"PRAGMA writable_schema = RESET", `CREATE TABLE "_tandem_schema_bump" (x)`, `DROP TABLE "_tandem_schema_bump"`,
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	return tr, nil
}

// renameEnum is ALTER TYPE name RENAME TO new: the metadata and the
// tables' CHECKs follow.
func (t *translator) renameEnum(s *pg_query.RenameStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "ALTER TYPE"
	var tn *pg_query.TypeName
	if l := s.Object.GetList(); l != nil {
		tn = &pg_query.TypeName{Names: l.Items}
	}
	e, ok := t.enumOf(tn)
	if !ok {
		name := ""
		if tn != nil {
			name = strings.Join(strs(tn.Names), ".")
		}
		return nil, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("type %q does not exist", name)}
	}
	if _, taken := t.enumOf(&pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(s.Newname)}}); taken || TypeByName[s.Newname] != nil {
		return nil, &pgwire.Error{Code: "42710", Message: fmt.Sprintf("type %q already exists", s.Newname)}
	}
	from, to := quoteLit("_tandem_enum_ok("+quoteLit(e.Name)+","), quoteLit("_tandem_enum_ok("+quoteLit(s.Newname)+",")
	tr.Script = []string{
		fmt.Sprintf("UPDATE _tandem_enums SET name = %s WHERE oid = %d", quoteLit(s.Newname), e.OID),
		"PRAGMA writable_schema = ON",
		fmt.Sprintf("UPDATE sqlite_master SET sql = replace(sql, %s, %s) WHERE type = 'table' AND instr(sql, %s) > 0", from, to, from),
		"PRAGMA writable_schema = RESET", `CREATE TABLE "_tandem_schema_bump" (x)`, `DROP TABLE "_tandem_schema_bump"`,
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	return tr, nil
}

// dropEnums is DROP TYPE [IF EXISTS] name, ...: refused (2BP01) while a
// column has the type.
func (t *translator) dropEnums(s *pg_query.DropStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "DROP TYPE"
	cascade := s.Behavior == pg_query.DropBehavior_DROP_CASCADE
	for _, o := range s.Objects {
		tn := o.GetTypeName()
		if tn == nil {
			continue
		}
		e, ok := t.enumOf(tn)
		if !ok {
			if s.MissingOk {
				continue
			}
			return nil, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("type %q does not exist", strings.Join(strs(tn.Names), "."))}
		}
		check := fmt.Sprintf(`SELECT _pg_raise('2BP01', 'cannot drop type %s because other objects depend on it' || char(31) || 'D:column ' || quote_ident(column_name) || ' of table ' || quote_ident(table_name) || ' depends on type %s' || char(31) || 'H:Use DROP ... CASCADE to drop the dependent objects too.') FROM _tandem_columns WHERE type_oid = %d LIMIT 1`,
			strings.ReplaceAll(e.Name, "'", "''"), strings.ReplaceAll(e.Name, "'", "''"), e.OID)
		if cascade {
			// With nothing of the type left (Flyway's clean drops the
			// tables first) CASCADE has nothing to drop; dropping the
			// columns of the type is not done here.
			check = fmt.Sprintf(`SELECT _pg_raise('0A000', 'DROP TYPE %s CASCADE would drop column ' || column_name || ' of table ' || table_name || ', which the SQLite back end does not do: drop or alter the column first') FROM _tandem_columns WHERE type_oid = %d LIMIT 1`,
				strings.ReplaceAll(e.Name, "'", "''"), e.OID)
		}
		tr.Script = append(tr.Script, check, fmt.Sprintf("DELETE FROM _tandem_enums WHERE oid = %d", e.OID),
			"DELETE FROM _tandem_comments WHERE kind = 'type' AND name = "+quoteLit(e.Name))
	}
	if len(tr.Script) == 0 {
		tr.Noop = true
		return tr, nil
	}
	tr.SQL = strings.Join(tr.Script, ";\n")
	if len(tr.Script) == 1 {
		tr.Script = nil
	}
	return tr, nil
}

// enumCast is x::enum: the value, checked against the labels.
func enumCast(arg *pg_query.Node, e *Enum) *pg_query.Node {
	args := []*pg_query.Node{strConst(e.Name), arg}
	for _, l := range e.Labels {
		args = append(args, strConst(l))
	}
	return call("_tandem_enum_value", args...)
}

// enumOrd is value's position among enum e's labels (22P02 for another
// value): what an enum sorts and compares by.
func enumOrd(value *pg_query.Node, e *Enum) *pg_query.Node {
	args := []*pg_query.Node{strConst(e.Name), value}
	for _, l := range e.Labels {
		args = append(args, strConst(l))
	}
	return call("_tandem_enum_ord", args...)
}

// sortEnums makes ORDER BY of an enum column (of the select's FROM) sort
// in the labels' order, as PostgreSQL does, not as text.
func (t *translator) sortEnums(s *pg_query.SelectStmt) {
	if len(s.SortClause) == 0 || len(s.FromClause) == 0 || t.sch == nil {
		return
	}
	var sc *scope
	for _, sb := range s.SortClause {
		b := sb.GetSortBy()
		if b == nil || b.Node.GetColumnRef() == nil {
			continue
		}
		if sc == nil {
			sc, _ = t.scopeOf(s.FromClause)
		}
		key := b.Node
		if f := b.Node.GetColumnRef().Fields; len(f) == 1 {
			// A bare name is an output column's first (PostgreSQL's
			// rule): m::text AS m sorts as text.
			name := strings.ToLower(f[0].GetString_().GetSval())
			for i, out := range targetNames(s) {
				if strings.ToLower(out) == name && i < len(s.TargetList) {
					key = s.TargetList[i].GetResTarget().GetVal()
					break
				}
			}
		}
		if key == nil || key.GetColumnRef() == nil {
			continue
		}
		if ct := t.exprType(key, sc); ct.Enum != nil {
			b.Node = enumOrd(b.Node, ct.Enum)
		}
	}
}

// enumCompare makes <, >, <= and >= of an enum column compare the labels'
// positions (against a label, or a column of the same type).
func (t *translator) enumCompare(e *pg_query.A_Expr) {
	known, ok := t.opTypes[e]
	if !ok {
		return
	}
	l, r := known[0].Enum, known[1].Enum
	switch {
	case l != nil && (r == nil || r.OID == l.OID):
		e.Lexpr, e.Rexpr = enumOrd(e.Lexpr, l), enumOrd(e.Rexpr, l)
	case r != nil && l == nil:
		e.Lexpr, e.Rexpr = enumOrd(e.Lexpr, r), enumOrd(e.Rexpr, r)
	}
}

// registerEnumFunctions registers the enum checks on c.
func registerEnumFunctions(c *sqlite3.SQLiteConn) error {
	check := func(name string, v any, labels []any) error {
		if v == nil {
			return nil
		}
		s := fmt.Sprint(toText(v))
		for _, l := range labels {
			if fmt.Sprint(toText(l)) == s {
				return nil
			}
		}
		return fmt.Errorf("[SQLSTATE 22P02] invalid input value for enum %s: %q", quoteIdentIfNeeded(name), s)
	}
	// _tandem_enum_ok(type, value, labels...): true, or 22P02.
	if err := c.RegisterFunc("_tandem_enum_ok", nullsAsNil(func(name string, v any, labels ...any) (bool, error) {
		if err := check(name, v, labels); err != nil {
			return false, err
		}
		return true, nil
	}), true); err != nil {
		return fmt.Errorf("sqlpg: register _tandem_enum_ok: %w", err)
	}
	// _tandem_enum_value(type, value, labels...): the value, or 22P02.
	if err := c.RegisterFunc("_tandem_enum_value", nullsAsNil(func(name string, v any, labels ...any) (any, error) {
		if err := check(name, v, labels); err != nil {
			return nil, err
		}
		if v == nil {
			return nil, nil
		}
		return fmt.Sprint(toText(v)), nil
	}), true); err != nil {
		return fmt.Errorf("sqlpg: register _tandem_enum_value: %w", err)
	}
	// _tandem_enum_ord(type, value, labels...): the label's position, or
	// 22P02.
	if err := c.RegisterFunc("_tandem_enum_ord", nullsAsNil(func(name string, v any, labels ...any) (any, error) {
		if v == nil {
			return nil, nil
		}
		s := fmt.Sprint(toText(v))
		for i, l := range labels {
			if fmt.Sprint(toText(l)) == s {
				return int64(i), nil
			}
		}
		return nil, fmt.Errorf("[SQLSTATE 22P02] invalid input value for enum %s: %q", quoteIdentIfNeeded(name), s)
	}), true); err != nil {
		return fmt.Errorf("sqlpg: register _tandem_enum_ord: %w", err)
	}
	// _tandem_enum_range(lo, hi, labels...): enum_range(lo, hi).
	if err := c.RegisterFunc("_tandem_enum_range", nullsAsNil(func(lo, hi any, labels ...any) (string, error) {
		ls := make([]string, len(labels))
		for i, l := range labels {
			ls[i] = fmt.Sprint(toText(l))
		}
		return enumRange(lo, hi, ls)
	}), true); err != nil {
		return fmt.Errorf("sqlpg: register _tandem_enum_range: %w", err)
	}
	// _tandem_enum_relabel(create, type, labels): the CREATE TABLE text
	// with the type's CHECKs listing the new labels.
	if err := c.RegisterFunc("_tandem_enum_relabel", func(sql, name, labelsJSON string) string {
		return relabelEnum(sql, name, ParseEnumLabels(labelsJSON))
	}, true); err != nil {
		return fmt.Errorf("sqlpg: register _tandem_enum_relabel: %w", err)
	}
	return nil
}

// relabelEnum rewrites every _tandem_enum_ok('name', "col", ...) call in
// a CREATE TABLE text with labels.
func relabelEnum(sql, name string, labels []string) string {
	prefix := "_tandem_enum_ok(" + quoteLit(name) + ", "
	var b strings.Builder
	for {
		i := strings.Index(sql, prefix)
		if i < 0 {
			b.WriteString(sql)
			return b.String()
		}
		b.WriteString(sql[:i+len(prefix)])
		rest := sql[i+len(prefix):]
		// The column: a quoted identifier.
		col, n := scanQuotedIdent(rest)
		if n == 0 {
			b.WriteString(rest)
			return b.String()
		}
		// The call ends at the first ')' outside quotes.
		end := n
		for in := false; end < len(rest); end++ {
			if rest[end] == '\'' {
				in = !in
			} else if rest[end] == ')' && !in {
				break
			}
		}
		b.WriteString(col)
		for _, l := range labels {
			b.WriteString(", " + quoteLit(l))
		}
		sql = rest[end:]
	}
}

// scanQuotedIdent reads a "quoted" identifier at the start of s: its text
// with the quotes and its length, or 0.
func scanQuotedIdent(s string) (string, int) {
	if !strings.HasPrefix(s, `"`) {
		return "", 0
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '"' {
			if i+1 < len(s) && s[i+1] == '"' {
				i++
				continue
			}
			return s[:i+1], i + 1
		}
	}
	return "", 0
}

// quoteIdentIfNeeded quotes a name as PostgreSQL's format_type does: only
// when it is not a plain lower-case identifier.
func quoteIdentIfNeeded(s string) string {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return quoteIdent(s)
		}
	}
	if s == "" {
		return quoteIdent(s)
	}
	return s
}

// enumFuncs replaces enum_range, enum_first and enum_last of an enum
// type's value (x::mood, NULL::mood: the argument gives the type) by the
// labels they answer, before anything else reads the tree: a typed array
// literal (enum_range, '{sad,ok,happy}'::text[]; the labels are text, as
// an enum's values are) or a label. enum_range(a, b) with a or b not
// NULL is the labels from a to b, found when the statement runs.
func (t *translator) enumFuncs(raw *pg_query.Node) {
	// A select list's enum_range(...)::text is named enum_range, as
	// PostgreSQL names it, whatever it becomes.
	walkNode(raw, func(n *pg_query.Node) {
		rt := n.GetResTarget()
		if rt == nil || rt.Name != "" || rt.Val == nil {
			return
		}
		v := rt.Val
		for v.GetTypeCast() != nil {
			v = v.GetTypeCast().Arg
		}
		if f := v.GetFuncCall(); f != nil {
			if name := lastName(f.Funcname); name == "enum_range" || name == "enum_first" || name == "enum_last" {
				rt.Name = name
			}
		}
	})
	walkNode(raw, func(n *pg_query.Node) {
		f := n.GetFuncCall()
		if f == nil || len(f.Args) == 0 || len(f.Args) > 2 || f.AggStar || f.Over != nil {
			return
		}
		name := lastName(f.Funcname)
		if name != "enum_range" && ((name != "enum_first" && name != "enum_last") || len(f.Args) != 1) {
			return
		}
		var e Enum
		found := false
		for _, a := range f.Args {
			if tc := a.GetTypeCast(); tc != nil {
				if x, ok := t.enumOf(tc.TypeName); ok {
					e, found = x, true
					break
				}
			}
		}
		if !found || len(e.Labels) == 0 {
			return
		}
		labels := make([]any, len(e.Labels))
		for i, l := range e.Labels {
			labels[i] = l
		}
		switch {
		case name == "enum_first":
			n.Node = strConst(e.Labels[0]).Node
		case name == "enum_last":
			n.Node = strConst(e.Labels[len(e.Labels)-1]).Node
		case len(f.Args) == 1 || (isTypedNull(f.Args[0]) && isTypedNull(f.Args[1])):
			n.Node = castNode(strConst(arrayLiteral(labels)), "text", true).Node
		default:
			args := []*pg_query.Node{f.Args[0], f.Args[1]}
			for _, l := range e.Labels {
				args = append(args, strConst(l))
			}
			n.Node = castNode(call("_tandem_enum_range", args...), "text", true).Node
		}
	})
}

// isTypedNull: n is NULL, or NULL cast to a type.
func isTypedNull(n *pg_query.Node) bool {
	if tc := n.GetTypeCast(); tc != nil {
		n = tc.Arg
	}
	return isNullConst(n)
}

// castNode is x::typ (typ[] when array).
func castNode(x *pg_query.Node, typ string, array bool) *pg_query.Node {
	tn := &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(typ)}, Typemod: -1}
	if array {
		tn.ArrayBounds = []*pg_query.Node{pg_query.MakeIntNode(-1)}
	}
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: x, TypeName: tn, Location: -1}}}
}

// enumRange is enum_range(lo, hi) over an enum's labels (lo, hi: labels
// or NULL for the first / last).
func enumRange(lo, hi any, labels []string) (string, error) {
	from, to := 0, len(labels)-1
	find := func(v any) (int, error) {
		s := fmt.Sprint(toText(v))
		for i, l := range labels {
			if l == s {
				return i, nil
			}
		}
		return 0, fmt.Errorf("[SQLSTATE 22P02] invalid input value for enum: %q", s)
	}
	var err error
	if lo != nil {
		if from, err = find(lo); err != nil {
			return "", err
		}
	}
	if hi != nil {
		if to, err = find(hi); err != nil {
			return "", err
		}
	}
	var out []any
	for i := from; i <= to; i++ {
		out = append(out, labels[i])
	}
	return arrayLiteral(out), nil
}
