package sqlpg

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// checkedLiteralTypes are the column types whose input a string literal
// in VALUES is converted to when the statement is parsed, as PostgreSQL
// does: a bad literal fails at Parse, before any row is written.
// (Dates and timestamps are left out: PostgreSQL reads more spellings of
// them, 'infinity' among them, than the cast functions do.)
var checkedLiteralTypes = map[string]bool{"int2": true, "int4": true, "int8": true, "numeric": true, "float4": true,
	"float8": true, "bool": true, "uuid": true}

// insertChecks does what PostgreSQL checks of an INSERT before it runs:
// string literals in VALUES must read as their column's type (22P02 ...),
// and a primary key column that SQLite would number itself (its rowid)
// but that is neither serial nor has a default cannot be left out or
// NULL (23502). DEFAULT for a column without one becomes NULL.
func (t *translator) insertChecks(s *pg_query.InsertStmt, cols []Column) error {
	if len(cols) == 0 {
		return nil
	}
	byName := map[string]Column{}
	for _, c := range cols {
		byName[c.Name] = c
	}
	var target []Column
	if len(s.Cols) > 0 {
		for _, n := range s.Cols {
			rt := n.GetResTarget()
			if rt == nil {
				return nil
			}
			c, ok := byName[rt.Name]
			if !ok {
				return nil // the back end reports the unknown column
			}
			target = append(target, c)
		}
	} else {
		target = cols
	}
	// The integer primary key SQLite would number.
	var pk *Column
	npk := 0
	for i, c := range cols {
		if c.PK > 0 {
			npk++
			pk = &cols[i]
		}
	}
	if npk != 1 || pk.Type == nil || (pk.Type.Name != "int2" && pk.Type.Name != "int4" && pk.Type.Name != "int8") {
		pk = nil
	}
	// rowid: the INTEGER PRIMARY KEY SQLite numbers itself when given
	// NULL, serial or not: an explicit NULL fails as PostgreSQL's NOT
	// NULL does. pk: one that is neither serial nor defaulted, which
	// must be given.
	rowid := pk
	if pk != nil && (pk.Serial || pk.Default) {
		pk = nil
	}
	// The row fails when it is written (not when the statement is
	// parsed): an INSERT ... SELECT of no rows succeeds.
	notNullOf := func(c *Column) *pg_query.Node {
		return call("_pg_raise", strConst("23502"), strConst(fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", c.Name, s.Relation.Relname)))
	}
	notNull := func() *pg_query.Node { return notNullOf(pk) }
	sel := s.SelectStmt.GetSelectStmt()
	if pk != nil && len(s.Cols) > 0 && sel != nil {
		listed := false
		for _, c := range target {
			if c.Name == pk.Name {
				listed = true
			}
		}
		switch {
		case listed:
		case len(sel.ValuesLists) > 0 && sel.Op == pg_query.SetOperation_SETOP_NONE:
			s.Cols = append(s.Cols, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: pk.Name}}})
			target = append(target, *pk)
			for _, row := range sel.ValuesLists {
				if l := row.GetList(); l != nil {
					l.Items = append(l.Items, notNull())
				}
			}
		case sel.Op == pg_query.SetOperation_SETOP_NONE && len(sel.TargetList) == len(s.Cols):
			s.Cols = append(s.Cols, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: pk.Name}}})
			sel.TargetList = append(sel.TargetList, pg_query.MakeResTargetNodeWithVal(notNull(), -1))
		}
	}
	if sel == nil || len(sel.ValuesLists) == 0 || sel.Op != pg_query.SetOperation_SETOP_NONE {
		return nil
	}
	if len(s.Cols) == 0 {
		// Fewer values than columns: the rest take their defaults, as
		// in PostgreSQL (SQLite wants a column list for that).
		k := len(sel.ValuesLists[0].GetList().GetItems())
		if k < len(cols) {
			for _, c := range cols[:k] {
				s.Cols = append(s.Cols, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: c.Name}}})
			}
		}
	}
	for _, row := range sel.ValuesLists {
		items := row.GetList().GetItems()
		for i, v := range items {
			if i >= len(target) {
				break
			}
			c := target[i]
			if v.GetSetToDefault() != nil && !c.Default && !c.Serial {
				v.Node = (&pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}).Node
			}
			ac := v.GetAConst()
			if ac == nil {
				continue
			}
			if ac.Isnull && rowid != nil && c.Name == rowid.Name {
				v.Node = notNullOf(rowid).Node
				continue
			}
			sv := ac.GetSval()
			if sv != nil {
				if err := dateFieldError(c, sv.Sval); err != nil {
					return err
				}
			}
			if sv != nil && normalizeTimeLiteral(c, sv, t.loc) {
				continue
			}
			if sv != nil && c.Enum != nil && !slices.Contains(c.Enum.Labels, sv.Sval) {
				// As PostgreSQL, when the statement is parsed.
				return &pgwire.Error{Code: "22P02", Message: fmt.Sprintf("invalid input value for enum %s: %q", quoteIdentIfNeeded(c.Enum.Name), sv.Sval)}
			}
			if sv != nil && c.Type != nil && !checkedLiteralTypes[c.Type.Name] {
				if err := checkLiteral(c, sv.Sval); err != nil {
					return err
				}
			}
			if sv == nil || c.Type == nil || !checkedLiteralTypes[c.Type.Name] {
				continue
			}
			fn, ok := castFunc(c.Type).(func(any) (any, error))
			if !ok {
				continue
			}
			out, err := fn(sv.Sval)
			if err != nil {
				return literalError(err)
			}
			if b, ok := out.(bool); ok {
				// Stored as SQLite keeps booleans, 1 / 0: a 't' or 'yes'
				// left as text would read false in WHERE.
				v.Node = boolConst(b).Node
			}
			if u, ok := out.(string); ok && c.Type.Name == "uuid" {
				sv.Sval = u // as uuid_out writes it: lower case, hyphens
			}
		}
	}
	return nil
}

// checkLiteral fails, as PostgreSQL does when it parses the statement,
// when a string written to a column of c's type cannot be read as one:
// the numbers, booleans, uuids, byteas and arrays (22P02, 22003, 22023).
func checkLiteral(c Column, text string) error {
	if c.Type == nil || c.Enum != nil {
		return nil
	}
	if !checkedLiteralTypes[c.Type.Name] && c.Type.Name != "bytea" && (c.Type.Cat != 'A' || c.Type.Elem == 0) {
		return nil
	}
	fn, ok := castFunc(c.Type).(func(any) (any, error))
	if !ok {
		return nil
	}
	if _, err := fn(text); err != nil {
		return literalError(err)
	}
	return nil
}

// normalizeTimeLiteral rewrites a string literal written to a date,
// timestamp or timestamptz column in the form the column keeps (a
// timestamptz in UTC: '2024-01-02 03:00:00+02' is '2024-01-02
// 01:00:00+00'), so that stored values compare and sort as times; before,
// a literal kept its offset and ORDER BY, min/max and comparisons read it
// as text. A literal the cast cannot read (now, today, infinity) stays as
// it was. It reports whether the column is of such a type.
func normalizeTimeLiteral(c Column, sv *pg_query.String, loc *time.Location) bool {
	if c.Type != nil && c.Type.Name == "time" {
		if out, ok, err := timeOfDay(sv.Sval); ok && err == nil {
			sv.Sval = out // '9:30' sorts after '10:00' as text; 09:30:00 does not
		}
		return true
	}
	if c.Type == nil || (c.Type.Name != "timestamptz" && c.Type.Name != "timestamp" && c.Type.Name != "date") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(sv.Sval)) {
	case "now", "today", "tomorrow", "yesterday", "epoch", "infinity", "-infinity", "allballs":
		return true // read when the statement runs (its text may be cached)
	}
	if fn, ok := castFuncIn(c.Type, func() *time.Location { return loc }).(func(any) (any, error)); ok {
		if out, err := fn(padISO(sv.Sval)); err == nil {
			if text, ok := out.(string); ok {
				sv.Sval = text
			}
		}
	}
	return true
}

// updateDefaults: SET col = DEFAULT for a column without a default is
// SET col = NULL; a time literal is checked and stored as INSERT stores it.
func (t *translator) updateDefaults(s *pg_query.UpdateStmt) error {
	if s.Relation == nil || t.sch == nil {
		return nil
	}
	var cols []Column
	for _, n := range s.TargetList {
		rt := n.GetResTarget()
		if rt == nil {
			continue
		}
		ac := rt.Val.GetAConst()
		if rt.Val.GetSetToDefault() == nil && (ac == nil || ac.GetSval() == nil) {
			continue
		}
		if cols == nil {
			cols = t.sch.Columns(s.Relation.Relname)
		}
		for _, c := range cols {
			if c.Name != rt.Name {
				continue
			}
			if rt.Val.GetSetToDefault() != nil && !c.Default && !c.Serial {
				rt.Val = &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}}
			} else if !c.Serial {
				t.fillDefault(rt.Val, c)
			}
			if ac != nil && ac.GetSval() != nil {
				if err := dateFieldError(c, ac.GetSval().Sval); err != nil {
					return err
				}
				normalizeTimeLiteral(c, ac.GetSval(), t.loc) // as INSERT does
				if err := checkLiteral(c, ac.GetSval().Sval); err != nil {
					return err
				}
			}
			if ac != nil && ac.GetSval() != nil && c.Type != nil && c.Type.Name == "bool" {
				// SET flag = 't': stored as 1 / 0, as INSERT does.
				if b, err := toBool(ac.GetSval().Sval); err == nil && b != nil {
					rt.Val = boolConst(b.(bool))
				}
			}
		}
	}
	return nil
}

// fillDefault replaces DEFAULT at v with column c's default expression as
// the back end stores it, once the rewrite is done (it is the back end's
// SQL already). A DEFAULT it cannot place stays, and is refused (0A000).
func (t *translator) fillDefault(v *pg_query.Node, c Column) {
	if v.GetSetToDefault() == nil || c.DefaultSQL == "" {
		return
	}
	tree, err := pg_query.Parse("SELECT " + c.DefaultSQL)
	if err != nil || len(tree.Stmts) != 1 {
		return
	}
	tl := tree.Stmts[0].Stmt.GetSelectStmt().GetTargetList()
	if len(tl) != 1 || tl[0].GetResTarget().GetVal() == nil {
		return
	}
	expr := tl[0].GetResTarget().GetVal()
	// A NULL stands in while the statement is rewritten.
	v.Node = &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}
	t.afterRewrite = append(t.afterRewrite, func() { v.Node = expr.Node })
}

// literalError is a conversion function's error as PostgreSQL's.
func literalError(err error) error {
	if code, text, ok := Raised(err.Error()); ok {
		msg, detail, hint := SplitRaised(text)
		return &pgwire.Error{Code: code, Message: msg, Detail: detail, Hint: hint}
	}
	if errors.Is(err, ErrInvalidInput) {
		return &pgwire.Error{Code: "22P02", Message: err.Error()}
	}
	return &pgwire.Error{Code: "22P02", Message: err.Error()}
}

// serialFill draws serial and identity values from their sequences where
// SQLite would not: a left-out INTEGER PRIMARY KEY (the rowid alias) is
// numbered max(rowid)+1 by SQLite, which ignores its DEFAULT, so the
// INSERT lists the column with the sequence's nextval; DEFAULT in a VALUES
// list becomes the nextval of a serial column. Other left-out serial
// columns take their DEFAULT, which draws from the sequence.
func (t *translator) serialFill(s *pg_query.InsertStmt, cols []Column) {
	var pk *Column
	npk := 0
	bySeq := map[string]Column{}
	for i, c := range cols {
		if c.PK > 0 {
			npk++
			pk = &cols[i]
		}
		if c.Sequence != "" {
			bySeq[c.Name] = c
		}
	}
	if len(bySeq) == 0 {
		return
	}
	if npk != 1 || pk.Sequence == "" {
		pk = nil
	}
	t.noSeqCalls = false // the nextval calls below
	next := func(c Column) *pg_query.Node { return call("nextval", strConst(quoteIdentIfNeeded(c.Sequence))) }
	sel := s.SelectStmt.GetSelectStmt()
	if s.SelectStmt == nil {
		// DEFAULT VALUES
		if pk != nil {
			s.Cols = []*pg_query.Node{{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: pk.Name}}}}
			s.SelectStmt = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
				ValuesLists: []*pg_query.Node{{Node: &pg_query.Node_List{List: &pg_query.List{Items: []*pg_query.Node{next(*pk)}}}}},
				Op:          pg_query.SetOperation_SETOP_NONE}}}
		}
		return
	}
	values := sel != nil && len(sel.ValuesLists) > 0 && sel.Op == pg_query.SetOperation_SETOP_NONE
	var target []string
	if len(s.Cols) > 0 {
		for _, n := range s.Cols {
			target = append(target, n.GetResTarget().GetName())
		}
	} else if values {
		for _, c := range cols {
			target = append(target, c.Name)
		}
	} else {
		return // INSERT INTO t SELECT ...: the select gives every column
	}
	listed := false
	if values {
		for _, row := range sel.ValuesLists {
			for i, v := range row.GetList().GetItems() {
				if i >= len(target) {
					break
				}
				if c, ok := bySeq[target[i]]; ok && v.GetSetToDefault() != nil {
					v.Node = next(c).Node
				}
			}
		}
	}
	if pk == nil {
		return
	}
	for _, n := range target {
		if n == pk.Name {
			listed = true
		}
	}
	if listed || sel == nil {
		return
	}
	s.Cols = append(s.Cols, &pg_query.Node{Node: &pg_query.Node_ResTarget{ResTarget: &pg_query.ResTarget{Name: pk.Name}}})
	if values {
		for _, row := range sel.ValuesLists {
			if l := row.GetList(); l != nil {
				l.Items = append(l.Items, next(*pk))
			}
		}
		return
	}
	// INSERT ... SELECT: SELECT *, nextval(..) FROM (the select).
	star := &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{{Node: &pg_query.Node_AStar{AStar: &pg_query.A_Star{}}}}}}}
	s.SelectStmt = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(star, -1), pg_query.MakeResTargetNodeWithVal(next(*pk), -1)},
		FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{
			Subquery: s.SelectStmt, Alias: &pg_query.Alias{Aliasname: "_tandem_src"}}}}},
		// WHERE true: SQLite would read an ON CONFLICT after the FROM as
		// a join's ON.
		WhereClause: boolConst(true),
		Op:          pg_query.SetOperation_SETOP_NONE}}}
}

// defaultFill removes DEFAULT from a VALUES list (SQLite has no DEFAULT
// there): for a column without a default it is NULL; a column with one
// whose every row says DEFAULT leaves the column list, and SQLite applies
// the default (TypeORM's multi-row INSERT); where only some rows leave a
// column to its default, those rows get the default's expression as the
// back end stores it (SQLite's defaults are constant expressions, so this
// is what SQLite itself would insert). Serial columns were drawn already
// (serialFill).
func (t *translator) defaultFill(s *pg_query.InsertStmt, cols []Column) {
	sel := s.SelectStmt.GetSelectStmt()
	if sel == nil || len(sel.ValuesLists) == 0 || sel.Op != pg_query.SetOperation_SETOP_NONE {
		return
	}
	var target []string
	if len(s.Cols) > 0 {
		for _, n := range s.Cols {
			target = append(target, n.GetResTarget().GetName())
		}
	} else {
		for _, c := range cols {
			target = append(target, c.Name)
		}
	}
	byName := map[string]Column{}
	for _, c := range cols {
		byName[c.Name] = c
	}
	drop := map[int]bool{}
	for i, name := range target {
		c, known := byName[name]
		all, some := true, false
		for _, row := range sel.ValuesLists {
			items := row.GetList().GetItems()
			if i >= len(items) {
				return // a row of another length: PostgreSQL's error
			}
			if items[i].GetSetToDefault() != nil {
				some = true
			} else {
				all = false
			}
		}
		switch {
		case !some || !known:
		case !c.Default && !c.Serial:
			for _, row := range sel.ValuesLists {
				if v := row.GetList().GetItems()[i]; v.GetSetToDefault() != nil {
					v.Node = &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true}}
				}
			}
		case all && len(s.Cols) > 0 && len(target) > 1:
			drop[i] = true
		case !c.Serial:
			for _, row := range sel.ValuesLists {
				t.fillDefault(row.GetList().GetItems()[i], c)
			}
		}
	}
	if len(drop) == 0 || len(drop) == len(target) {
		return
	}
	keep := func(items []*pg_query.Node) []*pg_query.Node {
		var out []*pg_query.Node
		for i, n := range items {
			if !drop[i] {
				out = append(out, n)
			}
		}
		return out
	}
	s.Cols = keep(s.Cols)
	for _, row := range sel.ValuesLists {
		if l := row.GetList(); l != nil {
			l.Items = keep(l.Items)
		}
	}
}

// CopyValue is the value COPY FROM stores for text s in column c, as an
// INSERT of the literal would store it: a boolean as 1 / 0, a date or
// timestamp in the column's form (a timestamptz in UTC), numbers, uuids
// and enum labels checked (22P02); other types as they are.
func CopyValue(c Column, s string) (any, error) { return CopyValueIn(c, s, time.UTC) }

// CopyValueIn is CopyValue with a timestamptz without an offset read in
// the session's zone loc.
func CopyValueIn(c Column, s string, loc *time.Location) (any, error) {
	if c.Enum != nil && !slices.Contains(c.Enum.Labels, s) {
		return nil, &pgwire.Error{Code: "22P02", Message: fmt.Sprintf("invalid input value for enum %s: %q", quoteIdentIfNeeded(c.Enum.Name), s)}
	}
	if c.Type == nil {
		return s, nil
	}
	switch c.Type.Name {
	case "time":
		if out, ok, err := timeOfDay(s); ok {
			if err != nil {
				return nil, &pgwire.Error{Code: "22008", Message: fmt.Sprintf("date/time field value out of range: %q", s)}
			}
			return out, nil
		}
		return s, nil
	case "timestamptz", "timestamp", "date":
		if l := strings.ToLower(strings.TrimSpace(s)); l == "infinity" || l == "-infinity" {
			return s, nil
		}
		if err := dateFieldError(c, s); err != nil {
			return nil, err
		}
		fn, ok := castFuncIn(c.Type, func() *time.Location { return loc }).(func(any) (any, error))
		if !ok {
			return s, nil
		}
		out, err := fn(padISO(s)) // now and today too: read as COPY reads the row
		if err != nil {
			return nil, &pgwire.Error{Code: "22007", Message: fmt.Sprintf("invalid input syntax for type %s: %q", c.Type.SQL, s)}
		}
		return out, nil
	}
	if !checkedLiteralTypes[c.Type.Name] {
		return s, nil
	}
	fn, ok := castFunc(c.Type).(func(any) (any, error))
	if !ok {
		return s, nil
	}
	out, err := fn(s)
	if err != nil {
		return nil, literalError(err)
	}
	if b, ok := out.(bool); ok {
		if b {
			return int64(1), nil
		}
		return int64(0), nil
	}
	if _, sc, ok := numericScaleOf(c); ok {
		// Stored rounded to the column's scale, as an INSERT (roundTo).
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return FormatNumeric(f, int(sc)), nil
		}
	}
	return s, nil
}

// numericScaleOf is the precision and scale a numeric(p,s) column rounds
// its values to; ok is false for any other column.
func numericScaleOf(c Column) (p, s int64, ok bool) {
	if c.Type == nil || c.Type.Name != "numeric" || c.Typmod < 4 {
		return 0, 0, false
	}
	p, s = int64((c.Typmod-4)>>16), int64((c.Typmod-4)&0xffff)
	return p, s, p >= s
}

// roundTo makes v, a value assigned to column c, the value PostgreSQL
// stores: a numeric(p,s) column keeps its values rounded to s digits
// (1.005 is stored as 1.01), where SQLite would keep what it was given
// and only the output was rounded. A numeric literal is rounded here; any
// other value goes through the assignment cast (_pg_numeric_typmod,
// which also refuses an overflow with 22003).
func roundTo(c Column, v *pg_query.Node) {
	if c.Type != nil && c.Type.Name == "bytea" && c.Enum == nil && v != nil && v.GetAConst().GetSval() != nil {
		// A string written to a bytea column is bytea's input form
		// ('\x0001ff' is three bytes), not the string's characters.
		lit := &pg_query.Node{Node: v.Node}
		v.Node = byteaValue(lit).Node
		return
	}
	if c.Type != nil && c.Type.Elem != 0 && c.Type.Cat == 'A' && v != nil && (v.GetAConst().GetSval() != nil || v.GetParamRef() != nil) {
		// An array's text in PostgreSQL's output form (see arrayIn).
		v.Node = call("_cast_"+c.Type.Name, &pg_query.Node{Node: v.Node}).Node
		return
	}
	if c.Type != nil && c.Type.Name == "uuid" && v != nil {
		if sv := v.GetAConst().GetSval(); sv != nil {
			if h, ok := uuidHex(strings.TrimSpace(sv.Sval)); ok {
				sv.Sval = h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
			} else {
				v.Node = call("_cast_uuid", &pg_query.Node{Node: v.Node}).Node // 22P02 when it runs
			}
		}
		return
	}
	_, s, ok := numericScaleOf(c)
	if !ok || v == nil || v.GetSetToDefault() != nil {
		return
	}
	if ac := v.GetAConst(); ac != nil {
		switch {
		case ac.Isnull, ac.GetIval() != nil:
			return
		case ac.GetFval() != nil:
			if f, err := strconv.ParseFloat(ac.GetFval().Fval, 64); err == nil && !math.IsInf(f, 0) {
				ac.GetFval().Fval = FormatNumeric(f, int(s))
				return
			}
		}
	}
	p, _, _ := numericScaleOf(c)
	v.Node = call("_pg_numeric_typmod", &pg_query.Node{Node: v.Node}, pg_query.MakeAConstIntNode(p, -1), pg_query.MakeAConstIntNode(s, -1)).Node
}

// roundInsert rounds what an INSERT writes to numeric(p,s) columns (see
// roundTo): VALUES rows, a plain SELECT's targets, ON CONFLICT's SET.
func (t *translator) roundInsert(s *pg_query.InsertStmt, cols []Column) {
	rounds := false
	for _, c := range cols {
		if _, _, ok := numericScaleOf(c); ok {
			rounds = true
			break
		}
		if c.Type != nil && (c.Type.Name == "timestamptz" || c.Type.Name == "timestamp" || c.Type.Name == "date" || c.Type.Name == "time") {
			rounds = true // a SELECT's time literal, below
		}
		if c.Type != nil && (c.Type.Name == "bytea" || c.Type.Name == "uuid" || c.Type.Elem != 0 && c.Type.Cat == 'A') {
			rounds = true // a string literal is bytea's (an array's) input form
		}
	}
	if !rounds {
		return
	}
	byName := func(name string) (Column, bool) {
		for _, c := range cols {
			if c.Name == name {
				return c, true
			}
		}
		return Column{}, false
	}
	target := cols
	if len(s.Cols) > 0 {
		target = nil
		for _, n := range s.Cols {
			rt := n.GetResTarget()
			if rt == nil {
				return
			}
			c, ok := byName(rt.Name)
			if !ok {
				return
			}
			target = append(target, c)
		}
	}
	if sel := s.SelectStmt.GetSelectStmt(); sel != nil && sel.Op == pg_query.SetOperation_SETOP_NONE {
		for _, row := range sel.ValuesLists {
			for i, v := range row.GetList().GetItems() {
				if i < len(target) {
					roundTo(target[i], v)
				}
			}
		}
		if len(sel.ValuesLists) == 0 {
			for i, n := range sel.TargetList {
				rt := n.GetResTarget()
				if rt == nil || i >= len(target) || hasStar(rt.Val) {
					break
				}
				roundTo(target[i], rt.Val)
				if sv := rt.Val.GetAConst().GetSval(); sv != nil {
					// Stored as a VALUES row stores it (in the session's
					// zone for a timestamptz without an offset).
					normalizeTimeLiteral(target[i], sv, t.loc)
				}
			}
		}
	}
	if oc := s.OnConflictClause; oc != nil {
		for _, n := range oc.TargetList {
			if rt := n.GetResTarget(); rt != nil && len(rt.Indirection) == 0 {
				if c, ok := byName(rt.Name); ok {
					roundTo(c, rt.Val)
				}
			}
		}
	}
}

// roundUpdate rounds what an UPDATE's SET writes to numeric(p,s) columns.
func (t *translator) roundUpdate(s *pg_query.UpdateStmt) {
	if s.Relation == nil || t.sch == nil {
		return
	}
	var cols []Column
	for _, n := range s.TargetList {
		rt := n.GetResTarget()
		if rt == nil || len(rt.Indirection) > 0 || rt.Val.GetMultiAssignRef() != nil {
			continue
		}
		if cols == nil {
			if cols = t.sch.Columns(s.Relation.Relname); cols == nil {
				return
			}
		}
		for _, c := range cols {
			if c.Name == rt.Name {
				roundTo(c, rt.Val)
			}
		}
	}
}

// hasStar: n is a column reference ending in * (t.* or *).
func hasStar(n *pg_query.Node) bool {
	cr := n.GetColumnRef()
	return cr != nil && len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil
}

// isoDateTime reads the fields of an ISO date, with a time after it.
var isoDateTime = regexp.MustCompile(`^\s*(\d{4,})-(\d{1,2})-(\d{1,2})(?:(?:\s+|T)(\d{1,2}):(\d{1,2})(?::(\d{1,2}))?)?`)

// dateFieldError is PostgreSQL's 22008 for a literal written to a date,
// timestamp, timestamptz or time column whose ISO year-month-day (or hour,
// minute, second) is no date or time at all: '2024-02-30', '2024-13-01',
// '2024-01-01 25:00'. Without it SQLite keeps the text, and it compares
// and sorts as text with the real dates.
func dateFieldError(c Column, s string) error {
	if c.Type != nil && c.Type.Name == "time" {
		if _, _, err := timeOfDay(s); err != nil {
			return &pgwire.Error{Code: "22008", Message: fmt.Sprintf("date/time field value out of range: %q", s)}
		}
		return nil
	}
	if c.Type == nil || (c.Type.Name != "timestamptz" && c.Type.Name != "timestamp" && c.Type.Name != "date") {
		return nil
	}
	m := isoDateTime.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	num := func(s string) int {
		n, _ := strconv.Atoi(s)
		return n
	}
	y, mo, d := num(m[1]), num(m[2]), num(m[3])
	bad := mo < 1 || mo > 12 || d < 1 || d > time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day()
	if m[4] != "" {
		h, mi, sec := num(m[4]), num(m[5]), num(m[6])
		bad = bad || h > 24 || mi > 59 || sec > 60 || h == 24 && (mi > 0 || sec > 0)
	}
	if !bad {
		return nil
	}
	return &pgwire.Error{Code: "22008", Message: fmt.Sprintf("date/time field value out of range: %q", s)}
}

// padISO writes an ISO date and time with every field in its width and
// in range ('2024-1-5 1:2:3+01' is '2024-01-05 01:02:03+01', 24:00:00 the
// next day's midnight, a 60th second the next minute, a zone named UTC
// +00), as PostgreSQL reads them; anything else is returned as it is.
func padISO(s string) string {
	m := isoDateTime.FindStringSubmatch(s)
	if m == nil || m[4] == "" {
		if m != nil {
			num := func(s string) int { n, _ := strconv.Atoi(s); return n }
			return fmt.Sprintf("%04d-%02d-%02d", num(m[1]), num(m[2]), num(m[3])) + s[len(m[0]):]
		}
		return s
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	t := time.Date(num(m[1]), time.Month(num(m[2])), num(m[3]), num(m[4]), num(m[5]), num(m[6]), 0, time.UTC)
	rest := s[len(m[0]):]
	frac, zone := splitFraction(rest)
	switch z := strings.TrimSpace(zone); {
	case strings.EqualFold(z, "UTC"), strings.EqualFold(z, "GMT"), strings.EqualFold(z, "Z"), strings.EqualFold(z, "ZULU"):
		rest = frac + "+00"
	case strings.Contains(z, "/") && !strings.ContainsAny(z[:1], "+-0123456789"):
		// An IANA zone name (America/New_York): its offset at that wall
		// time. Abbreviations (CET, EST) are left to the cast:
		// PostgreSQL reads them as fixed offsets, where the IANA zone
		// of the same name follows daylight saving time.
		if loc, err := zoneLocation(z); err == nil {
			local := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, loc)
			rest = frac + local.Format("-07:00")
		}
	}
	return t.Format("2006-01-02 15:04:05") + rest
}

// splitFraction splits what follows an ISO time's seconds into its
// fraction (".25") and the rest (a zone).
func splitFraction(rest string) (frac, zone string) {
	i := 0
	if strings.HasPrefix(rest, ".") {
		i = 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
	}
	return rest[:i], rest[i:]
}
