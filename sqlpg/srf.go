package sqlpg

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// Set-returning json functions: SQLite's json_each walks an object or an
// array; the value column is rebuilt as PostgreSQL prints it (json text
// for json/jsonb, unquoted text for the *_text forms).

// jsonSRF describes one set-returning json function.
type jsonSRF struct {
	cols  []string // output columns
	types []uint32 // their types
	kinds []string // what each column is: key, json, text
	need  string   // json_type the argument must have ("object", "array")
}

var jsonSRFs = map[string]jsonSRF{
	"jsonb_each":                {[]string{"key", "value"}, []uint32{25, 3802}, []string{"key", "json"}, "object"},
	"json_each":                 {[]string{"key", "value"}, []uint32{25, 114}, []string{"key", "json"}, "object"},
	"jsonb_each_text":           {[]string{"key", "value"}, []uint32{25, 25}, []string{"key", "text"}, "object"},
	"json_each_text":            {[]string{"key", "value"}, []uint32{25, 25}, []string{"key", "text"}, "object"},
	"jsonb_object_keys":         {[]string{"jsonb_object_keys"}, []uint32{25}, []string{"key"}, "object"},
	"json_object_keys":          {[]string{"json_object_keys"}, []uint32{25}, []string{"key"}, "object"},
	"jsonb_array_elements":      {[]string{"value"}, []uint32{3802}, []string{"json"}, "array"},
	"json_array_elements":       {[]string{"value"}, []uint32{114}, []string{"json"}, "array"},
	"jsonb_array_elements_text": {[]string{"value"}, []uint32{25}, []string{"text"}, "array"},
	"json_array_elements_text":  {[]string{"value"}, []uint32{25}, []string{"text"}, "array"},
	// jsonb_path_query is typed here; it is placed as unnest of an array
	// of its results' jsonb texts (jsonPathUnnest).
	"jsonb_path_query": {[]string{"jsonb_path_query"}, []uint32{3802}, []string{"text"}, "array"},
}

// jsonSRFColumn is the SQL of one output column over json_each's row
// alias a.
func jsonSRFColumn(kind, a string) string {
	switch kind {
	case "key":
		return a + ".key"
	case "text":
		return fmt.Sprintf("CASE %[1]s.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN NULL ELSE %[1]s.value END", a)
	}
	return fmt.Sprintf("CASE %[1]s.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null' WHEN 'text' THEN json_quote(%[1]s.value) ELSE %[1]s.value END", a)
}

// jsonSRFFrom is the FROM item (a subquery) for fn(arg) AS alias(cols).
func (t *translator) jsonSRFFrom(name string, arg *pg_query.Node, alias string, colnames []string) (*pg_query.Node, error) {
	d := jsonSRFs[name]
	if len(colnames) > len(d.cols) {
		return nil, &pgwire.Error{Code: "42P10", Message: fmt.Sprintf("table %q has %d columns available but %d columns specified", alias, len(d.cols), len(colnames))}
	}
	argSQL, err := deparseExpr(arg)
	if err != nil {
		return nil, err
	}
	var sel []string
	for i, c := range d.cols {
		if i < len(colnames) {
			c = colnames[i]
		}
		sel = append(sel, jsonSRFColumn(d.kinds[i], "_je")+" AS "+quoteIdent(c))
	}
	// A scalar or the wrong kind of container is an error in PostgreSQL.
	check := fmt.Sprintf("CASE WHEN _ja.j IS NULL THEN NULL WHEN json_type(_ja.j) = '%s' THEN _ja.j ELSE _pg_raise('22023', 'cannot call %s on a non-%s') END", d.need, name, d.need)
	if d.need == "object" && strings.HasSuffix(name, "_keys") {
		check = fmt.Sprintf("CASE WHEN _ja.j IS NULL THEN NULL WHEN json_type(_ja.j) = 'object' THEN _ja.j ELSE _pg_raise('22023', 'cannot call %s on a scalar') END", name)
	}
	order := "_je.id"
	if d.need == "object" && strings.HasPrefix(name, "jsonb") {
		order = "length(_je.key), _je.key" // jsonb keeps its keys sorted: shorter first
	}
	sub := fmt.Sprintf("SELECT * FROM (SELECT %s FROM (SELECT %s AS j) AS _ja, json_each(%s) AS _je ORDER BY %s) AS %s",
		strings.Join(sel, ", "), argSQL, check, order, quoteIdent(alias))
	tree, err := parseGenerated(sub)
	if err != nil {
		return nil, unsupported("%s with these arguments", name)
	}
	return tree.Stmts[0].Stmt.GetSelectStmt().FromClause[0], nil
}

// srfCount counts the set-returning functions at the top of a select list.
func srfCount(s *pg_query.SelectStmt) int {
	n := 0
	for _, tn := range s.TargetList {
		if f := tn.GetResTarget().GetVal().GetFuncCall(); f != nil && (isSetReturning(lastName(f.Funcname)) || lastName(f.Funcname) == "_pg_expandarray") {
			n++
		}
	}
	return n
}

// jsonTargetSRF places a one-column json set-returning function at the top
// of a select list: json_each joins the FROM list (it may use the columns
// of the tables before it) and the column reads its row. With other
// set-returning functions beside it (PostgreSQL zips them) it is refused.
func (t *translator) jsonTargetSRF(s *pg_query.SelectStmt, rt *pg_query.ResTarget, f *pg_query.FuncCall, name string, placed int) bool {
	d, ok := jsonSRFs[name]
	if !ok || len(f.Args) != 1 || len(d.cols) != 1 {
		return false
	}
	if srfCount(s) > 1 {
		return false // stays pending: refused
	}
	t.subq++
	alias := fmt.Sprintf("_tandem_srf%d", t.subq)
	s.FromClause = append(s.FromClause, &pg_query.Node{Node: &pg_query.Node_RangeFunction{RangeFunction: &pg_query.RangeFunction{
		Functions: []*pg_query.Node{pg_query.MakeListNode([]*pg_query.Node{call("json_each", f.Args[0]), nil})},
		Alias:     &pg_query.Alias{Aliasname: alias},
	}}})
	if rt.Name == "" {
		rt.Name = name
	}
	rt.Val = template(jsonSRFColumn(d.kinds[0], alias))
	delete(t.srfPending, f)
	return true
}

// seriesTargetSRF: SELECT generate_series(a, b [, step]) alone in its
// select list, with arguments that use no column, joins the series to
// the FROM list.
func (t *translator) seriesTargetSRF(s *pg_query.SelectStmt, rt *pg_query.ResTarget, f *pg_query.FuncCall, name string) bool {
	if name != "generate_series" || srfCount(s) > 1 {
		return false
	}
	if readsColumn(f.Args) {
		return false // over a column: unnested beside the FROM (targetSRFs)
	}
	t.subq++
	alias := fmt.Sprintf("_tandem_srf%d", t.subq)
	rf := &pg_query.RangeFunction{
		Functions: []*pg_query.Node{pg_query.MakeListNode([]*pg_query.Node{{Node: &pg_query.Node_FuncCall{FuncCall: f}}, nil})},
		Alias:     &pg_query.Alias{Aliasname: alias, Colnames: []*pg_query.Node{pg_query.MakeStrNode("v")}},
	}
	item := &pg_query.Node{Node: &pg_query.Node_RangeFunction{RangeFunction: rf}}
	t.rangeFunction(item, rf)
	if item.GetRangeFunction() != nil {
		return false
	}
	s.FromClause = append(s.FromClause, item)
	if rt.Name == "" {
		rt.Name = name
	}
	rt.Val = pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(alias), pg_query.MakeStrNode("v")}, -1)
	return true
}
