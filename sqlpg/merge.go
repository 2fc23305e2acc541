package sqlpg

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// MergePlan is how the back end carries out a MERGE, which SQLite does
// not have. PostgreSQL joins the source to the target once, and each
// joined row takes the first WHEN clause of its kind whose condition
// holds; every value an action writes is computed from that row before
// any row changes. So does the plan: Fill evaluates, in one statement,
// which clause each joined row takes and every value its action writes,
// into a temporary table of this connection (Create); the Steps then
// carry the actions out from it, one statement per clause in the
// clauses' order, each translated as an ordinary UPDATE, DELETE or
// INSERT of the target (so defaults, serial columns, numeric scales and
// constraints apply as they do there). The temporary table is not
// replicated (capture follows the tables of the main database only);
// the rows the steps change are, as any statement's.
type MergePlan struct {
	// Create makes the empty work table temp._tandem_merge.
	Create string
	// Query is the plan: which clause each joined row takes and the
	// values its action writes; the client's parameters are its (?1 ...).
	Query string
	// Fill fills the work table from Query.
	Fill string
	// Twice finds a target row that two source rows would both update
	// or delete (PostgreSQL's 21000); "" when no clause updates or
	// deletes.
	Twice string
	// Steps carry the actions out; they take no parameters.
	Steps []string
	// Count counts the rows the command inserted, updated or deleted
	// (its command tag's number).
	Count string
	// Drop removes the work table.
	Drop string
}

// ErrMergeTwice is PostgreSQL's error for a target row that more than
// one source row would change.
var ErrMergeTwice = &pgwire.Error{Code: "21000", Message: "MERGE command cannot affect row a second time",
	Hint: "Ensure that not more than one source row matches any one target row."}

const mergeWork = "_tandem_merge"

// merge translates MERGE into a MergePlan.
func (t *translator) merge(m *pg_query.MergeStmt) (*Translation, error) {
	if len(m.ReturningList) > 0 {
		return nil, unsupported("MERGE ... RETURNING")
	}
	if m.Relation == nil {
		return nil, unsupported("this MERGE target")
	}
	table, err := t.tableName(m.Relation)
	if err != nil {
		return nil, err
	}
	var cols []Column
	if t.sch != nil {
		cols = t.sch.Columns(table)
	}
	if cols == nil {
		return nil, &pgwire.Error{Code: "42P01", Message: fmt.Sprintf("relation %q does not exist", table)}
	}
	byName := map[string]Column{}
	for _, c := range cols {
		byName[c.Name] = c
	}
	alias := table
	if m.Relation.Alias != nil && m.Relation.Alias.Aliasname != "" {
		alias = m.Relation.Alias.Aliasname
	}
	qt, qa := quoteIdent(table), quoteIdent(alias)

	// The source, and a marker of its side of the join when a clause
	// acts on target rows no source row matches (a FULL JOIN then).
	bySource := false
	for _, w := range m.MergeWhenClauses {
		if wc := w.GetMergeWhenClause(); wc != nil && wc.MatchKind == pg_query.MergeMatchKind_MERGE_WHEN_NOT_MATCHED_BY_SOURCE {
			bySource = true
		}
	}
	src, err := fromItemSQL(m.SourceRelation)
	if err != nil {
		return nil, err
	}
	srcPresent := "TRUE"
	if bySource {
		salias := sourceAlias(m.SourceRelation)
		if salias == "" {
			return nil, unsupported("WHEN NOT MATCHED BY SOURCE with this source")
		}
		src = "(SELECT 1 AS _tandem_src, * FROM " + src + ") AS " + quoteIdent(salias)
		srcPresent = quoteIdent(salias) + "._tandem_src IS NOT NULL"
	}
	cond, err := pgSQLExpr(m.JoinCondition)
	if err != nil {
		return nil, err
	}
	join := "LEFT JOIN"
	if bySource {
		join = "FULL JOIN"
	}
	tPresent := qa + ".rowid IS NOT NULL"

	// One CASE picks each joined row's clause (1-based); the values of
	// clause i are computed only for the rows that take it.
	type action struct {
		kind pg_query.CmdType
		cols []string // the target columns it writes
		vals []string // their values' columns in the work table ("" for DEFAULT)
	}
	var acts []action
	var whens []string
	var values []string // the work table's value expressions, in order
	for i, w := range m.MergeWhenClauses {
		wc := w.GetMergeWhenClause()
		if wc == nil {
			return nil, unsupported("this MERGE clause")
		}
		var when string
		switch wc.MatchKind {
		case pg_query.MergeMatchKind_MERGE_WHEN_MATCHED:
			when = tPresent + " AND " + srcPresent
		case pg_query.MergeMatchKind_MERGE_WHEN_NOT_MATCHED_BY_TARGET:
			when = qa + ".rowid IS NULL"
		case pg_query.MergeMatchKind_MERGE_WHEN_NOT_MATCHED_BY_SOURCE:
			when = "NOT (" + srcPresent + ")"
		default:
			return nil, unsupported("this MERGE clause")
		}
		if wc.Condition != nil {
			c, err := pgSQLExpr(wc.Condition)
			if err != nil {
				return nil, err
			}
			when += " AND (" + c + ")"
		}
		whens = append(whens, "WHEN "+when+" THEN "+strconv.Itoa(i+1))
		a := action{kind: wc.CommandType}
		addValue := func(col string, e *pg_query.Node) error {
			c, ok := byName[col]
			if !ok {
				return &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q of relation %q does not exist", col, table)}
			}
			a.cols = append(a.cols, col)
			if e == nil || e.GetSetToDefault() != nil {
				a.vals = append(a.vals, "")
				return nil
			}
			if sv := e.GetAConst().GetSval(); sv != nil {
				// A string literal is read as the column's type when
				// the statement is parsed, as an INSERT's VALUES.
				if err := literalFits(c, sv.Sval); err != nil {
					return err
				}
			}
			x, err := pgSQLExpr(e)
			if err != nil {
				return err
			}
			values = append(values, "CASE WHEN _tandem_act = "+strconv.Itoa(i+1)+" THEN CAST(("+x+") AS "+castTypeOf(c)+") END")
			name := "_v" + strconv.Itoa(len(values))
			a.vals = append(a.vals, name)
			return nil
		}
		switch wc.CommandType {
		case pg_query.CmdType_CMD_UPDATE:
			for _, n := range wc.TargetList {
				rt := n.GetResTarget()
				if rt == nil || len(rt.Indirection) > 0 {
					return nil, unsupported("MERGE ... UPDATE SET of an element or field")
				}
				v := rt.Val
				if mr := v.GetMultiAssignRef(); mr != nil {
					row := mr.Source.GetRowExpr()
					if row == nil || int(mr.Colno) > len(row.Args) {
						return nil, unsupported("MERGE ... UPDATE SET (...) = (SELECT ...)")
					}
					v = row.Args[mr.Colno-1]
				}
				if err := addValue(rt.Name, v); err != nil {
					return nil, err
				}
			}
		case pg_query.CmdType_CMD_INSERT:
			if wc.Override != pg_query.OverridingKind_OVERRIDING_NOT_SET && wc.Override != pg_query.OverridingKind_OVERRIDING_KIND_UNDEFINED {
				return nil, unsupported("MERGE ... INSERT OVERRIDING")
			}
			names := make([]string, 0, len(cols))
			if len(wc.TargetList) > 0 {
				for _, n := range wc.TargetList {
					names = append(names, n.GetResTarget().GetName())
				}
			} else {
				for _, c := range cols {
					if c.Generated == "" {
						names = append(names, c.Name)
					}
				}
			}
			if len(wc.Values) == 0 {
				return nil, unsupported("MERGE ... INSERT DEFAULT VALUES")
			}
			if len(wc.Values) > len(names) {
				return nil, &pgwire.Error{Code: "42601", Message: "INSERT has more expressions than target columns"}
			}
			if len(wc.Values) < len(names) && len(wc.TargetList) > 0 {
				return nil, &pgwire.Error{Code: "42601", Message: "INSERT has more target columns than expressions"}
			}
			for j, v := range wc.Values {
				if err := addValue(names[j], v); err != nil {
					return nil, err
				}
			}
		case pg_query.CmdType_CMD_DELETE, pg_query.CmdType_CMD_NOTHING:
		default:
			return nil, unsupported("this MERGE action")
		}
		acts = append(acts, a)
	}
	if len(acts) == 0 {
		return nil, &pgwire.Error{Code: "42601", Message: "syntax error at end of input"}
	}

	// The plan: PostgreSQL's SQL, translated as any SELECT (the client's
	// parameters, casts, functions). A value expression names the
	// source's and the target's columns by their aliases, which a derived
	// table would hide, so it picks its clause from a repeat of the CASE
	// (cheap next to the writes).
	actCase := "CASE " + strings.Join(whens, " ") + " END"
	with := ""
	if m.WithClause != nil {
		w, err := deparseWith(m.WithClause)
		if err != nil {
			return nil, err
		}
		with = w + " "
	}
	var plan strings.Builder
	plan.WriteString(with + "SELECT " + actCase + " AS _tandem_act, " + qa + ".rowid AS _tandem_trid, row_number() OVER () AS _tandem_rn")
	for _, v := range values {
		plan.WriteString(", " + strings.Replace(v, "_tandem_act", "("+actCase+")", 1))
	}
	plan.WriteString(" FROM " + src + " " + join + " " + qt)
	if alias != table {
		plan.WriteString(" AS " + qa)
	}
	plan.WriteString(" ON " + cond)
	ptr, err := translate(plan.String(), t.sch)
	if err != nil {
		return nil, err
	}
	mp := &MergePlan{Drop: "DROP TABLE IF EXISTS temp." + mergeWork}
	workCols := []string{"_tandem_act", "_tandem_trid", "_tandem_rn"}
	for i := range values {
		workCols = append(workCols, "_v"+strconv.Itoa(i+1))
	}
	mp.Create = "CREATE TEMP TABLE " + mergeWork + " (" + strings.Join(workCols, ", ") + ")"
	mp.Query = ptr.SQL
	mp.Fill = "INSERT INTO temp." + mergeWork + " " + ptr.SQL

	var changing, counted []string
	for i, a := range acts {
		n := strconv.Itoa(i + 1)
		var step string
		switch a.kind {
		case pg_query.CmdType_CMD_UPDATE:
			changing, counted = append(changing, n), append(counted, n)
			sets := make([]string, len(a.cols))
			for j, c := range a.cols {
				if a.vals[j] == "" {
					sets[j] = quoteIdent(c) + " = DEFAULT"
				} else {
					sets[j] = quoteIdent(c) + " = _m." + a.vals[j]
				}
			}
			step = "UPDATE " + qt + " SET " + strings.Join(sets, ", ") + " FROM " + mergeWork + " AS _m WHERE _m._tandem_act = " + n + " AND " + qt + ".rowid = _m._tandem_trid"
		case pg_query.CmdType_CMD_DELETE:
			changing, counted = append(changing, n), append(counted, n)
			step = "DELETE FROM " + qt + " WHERE rowid IN (SELECT _tandem_trid FROM " + mergeWork + " WHERE _tandem_act = " + n + ")"
		case pg_query.CmdType_CMD_INSERT:
			counted = append(counted, n)
			var ic, iv []string
			for j, c := range a.cols {
				if a.vals[j] == "" {
					continue // DEFAULT: left to the column's default
				}
				ic, iv = append(ic, quoteIdent(c)), append(iv, "_m."+a.vals[j])
			}
			if len(ic) == 0 {
				return nil, unsupported("MERGE ... INSERT of defaults only")
			}
			step = "INSERT INTO " + qt + " (" + strings.Join(ic, ", ") + ") SELECT " + strings.Join(iv, ", ") + " FROM " + mergeWork + " AS _m WHERE _m._tandem_act = " + n + " ORDER BY _m._tandem_rn"
		default:
			continue
		}
		str, err := translate(step, t.sch)
		if err != nil {
			return nil, err
		}
		if len(str.Script) > 0 || str.SQL == "" {
			return nil, unsupported("this MERGE action")
		}
		mp.Steps = append(mp.Steps, str.SQL)
	}
	if len(changing) > 0 {
		mp.Twice = "SELECT 1 FROM temp." + mergeWork + " WHERE _tandem_act IN (" + strings.Join(changing, ", ") + ") GROUP BY _tandem_trid HAVING count(*) > 1 LIMIT 1"
	}
	if len(counted) > 0 {
		mp.Count = "SELECT count(*) FROM temp." + mergeWork + " WHERE _tandem_act IN (" + strings.Join(counted, ", ") + ")"
	} else {
		mp.Count = "SELECT 0"
	}
	return &Translation{Kind: "MERGE", Merge: mp, Params: ptr.Params, SeqNames: ptr.SeqNames}, nil
}

// literalFits fails as PostgreSQL's parse analysis does when a string
// literal written to column c is no value of its type (22P02, 22008 ...).
func literalFits(c Column, text string) error {
	if err := dateFieldError(c, text); err != nil {
		return err
	}
	if c.Enum != nil && !slices.Contains(c.Enum.Labels, text) {
		return &pgwire.Error{Code: "22P02", Message: fmt.Sprintf("invalid input value for enum %s: %q", quoteIdentIfNeeded(c.Enum.Name), text)}
	}
	return checkLiteral(c, text)
}

// castTypeOf is the type a MERGE value is cast to for column c: the
// column's type without a length (varchar(n) and char(n) check lengths
// when written, as an assignment does, where a cast to varchar(n) would
// cut), an enum by its name.
func castTypeOf(c Column) string {
	if c.Enum != nil {
		return quoteIdent(c.Enum.Name)
	}
	if c.Type == nil {
		return "text"
	}
	switch c.Type.Name {
	case "varchar":
		return "varchar"
	case "bpchar":
		return "bpchar"
	case "bit", "varbit":
		return "text"
	}
	if c.Type.SQL != "" {
		return c.Type.SQL
	}
	return c.Type.Name
}

// fromItemSQL is a FROM item as PostgreSQL's SQL.
func fromItemSQL(n *pg_query.Node) (string, error) {
	sel := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeAStarNode()}, 0), 0)},
		FromClause: []*pg_query.Node{n},
	}}}
	out, err := pgDeparse(sel)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(out, "SELECT * FROM "), nil
}

// sourceAlias is the name a MERGE source is known by, "" for a join.
func sourceAlias(n *pg_query.Node) string {
	switch s := n.Node.(type) {
	case *pg_query.Node_RangeVar:
		if s.RangeVar.Alias != nil {
			return s.RangeVar.Alias.Aliasname
		}
		return s.RangeVar.Relname
	case *pg_query.Node_RangeSubselect:
		if s.RangeSubselect.Alias != nil {
			return s.RangeSubselect.Alias.Aliasname
		}
	case *pg_query.Node_RangeFunction:
		if s.RangeFunction.Alias != nil {
			return s.RangeFunction.Alias.Aliasname
		}
	}
	return ""
}

// deparseWith is a WITH clause as PostgreSQL's SQL.
func deparseWith(w *pg_query.WithClause) (string, error) {
	sel := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeAConstIntNode(1, 0), 0)},
		WithClause: w,
	}}}
	out, err := pgDeparse(sel)
	if err != nil {
		return "", err
	}
	i := strings.LastIndex(out, " SELECT 1")
	if i < 0 {
		return "", unsupported("this WITH clause")
	}
	return out[:i], nil
}

// pgSQLExpr is an expression as PostgreSQL's SQL.
func pgSQLExpr(e *pg_query.Node) (string, error) {
	out, err := pgDeparse(&pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(e, 0)},
	}}})
	return strings.TrimPrefix(out, "SELECT "), err
}
