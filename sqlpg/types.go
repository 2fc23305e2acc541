package sqlpg

import (
	"fmt"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Result typing: PostgreSQL types a result column by its expression; SQLite
// only by the value it happens to hold. The translator infers the type from
// the statement (column references through _tandem_columns, casts,
// functions, literals, operators) before rewriting it.

type scope struct {
	tables []scopeTable
	// using: the merged columns of a FROM that is one JOIN ... USING or
	// NATURAL JOIN of two tables (SELECT * lists them once, first).
	using []string
}

type scopeTable struct {
	alias string
	cols  []Column
	table string // the table's name, for a table of the schema
}

func (t *translator) scopeOf(from []*pg_query.Node) (*scope, bool) {
	sc := &scope{}
	ok := true
	var add func(n *pg_query.Node)
	add = func(n *pg_query.Node) {
		switch x := n.Node.(type) {
		case *pg_query.Node_RangeVar:
			r := x.RangeVar
			if cte, isCTE := t.ctes[strings.ToLower(r.Relname)]; isCTE && r.Schemaname == "" {
				alias := r.Relname
				if r.Alias != nil {
					alias = r.Alias.Aliasname
				}
				if cte == nil {
					ok = false
				}
				sc.tables = append(sc.tables, scopeTable{alias: strings.ToLower(alias), cols: cte})
				return
			}
			var cols []Column
			if t.sch != nil && (r.Schemaname == "" || strings.EqualFold(r.Schemaname, "public")) {
				cols = t.sch.Columns(r.Relname)
			}
			schema := strings.ToLower(r.Schemaname)
			if view, ok := CatalogRelation(schema, r.Relname); ok && t.sch != nil {
				cols = catalogColumns(t.sch.Columns(view), schema == "information_schema")
			}
			if cols == nil {
				ok = false
			}
			alias := r.Relname
			if r.Alias != nil {
				alias = r.Alias.Aliasname
			}
			st := scopeTable{alias: strings.ToLower(alias), cols: cols}
			if schema == "" || schema == "public" {
				st.table = r.Relname
			}
			sc.tables = append(sc.tables, st)
		case *pg_query.Node_JoinExpr:
			before := len(sc.tables)
			add(x.JoinExpr.Larg)
			add(x.JoinExpr.Rarg)
			if len(x.JoinExpr.UsingClause) > 0 || x.JoinExpr.IsNatural {
				// Merged columns: typed when the join is the whole FROM
				// of two tables, else star typing is left to values.
				if len(from) != 1 || before != 0 || len(sc.tables) != 2 || x.JoinExpr.Larg.GetRangeVar() == nil || x.JoinExpr.Rarg.GetRangeVar() == nil {
					ok = false
					return
				}
				if x.JoinExpr.IsNatural {
					for _, l := range sc.tables[0].cols {
						for _, r := range sc.tables[1].cols {
							if l.Name == r.Name {
								sc.using = append(sc.using, l.Name)
							}
						}
					}
				} else {
					sc.using = strs(x.JoinExpr.UsingClause)
				}
			}
		case *pg_query.Node_RangeFunction:
			rf := x.RangeFunction
			f := (*pg_query.FuncCall)(nil)
			if len(rf.Functions) == 1 && !rf.Ordinality {
				if items := rf.Functions[0].GetList().GetItems(); len(items) > 0 {
					f = items[0].GetFuncCall()
				}
			}
			if f != nil && len(f.Args) == 0 && catalogInFrom[lastName(f.Funcname)] && t.sch != nil {
				name := lastName(f.Funcname)
				view, _ := CatalogRelation("pg_catalog", name)
				alias := name
				if rf.Alias != nil {
					alias = rf.Alias.Aliasname
				}
				sc.tables = append(sc.tables, scopeTable{alias: strings.ToLower(alias), cols: catalogColumns(t.sch.Columns(view), false)})
				return
			}
			if f != nil && (len(f.Args) == 1 || lastName(f.Funcname) == "jsonb_path_query") {
				if d, isJSON := jsonSRFs[lastName(f.Funcname)]; isJSON {
					alias := lastName(f.Funcname)
					names := d.cols
					if rf.Alias != nil {
						alias = rf.Alias.Aliasname
						if cn := strs(rf.Alias.Colnames); len(cn) > 0 {
							names = append(append([]string{}, cn...), d.cols[min(len(cn), len(d.cols)):]...)
						} else if alias != "" && lastName(f.Funcname) == "jsonb_path_query" {
							names = []string{alias}
						}
					}
					var cols []Column
					for i := range d.cols {
						if i < len(names) {
							cols = append(cols, Column{Name: names[i], Type: Types[d.types[i]], Typmod: -1})
						}
					}
					sc.tables = append(sc.tables, scopeTable{alias: strings.ToLower(alias), cols: cols})
					return
				}
			}
			if f != nil && scalarInFrom[lastName(f.Funcname)] && !rf.Ordinality {
				// A function of one value: one column, named after the
				// alias (or its column alias), else the function.
				name := lastName(f.Funcname)
				alias, col := name, name
				if rf.Alias != nil {
					alias, col = rf.Alias.Aliasname, rf.Alias.Aliasname
					if cn := strs(rf.Alias.Colnames); len(cn) > 0 {
						col = cn[0]
					}
				}
				c := Column{Name: col, Typmod: -1}
				if oid, ok := funcTypes[name]; ok {
					c.Type = Types[oid]
				}
				sc.tables = append(sc.tables, scopeTable{alias: strings.ToLower(alias), cols: []Column{c}})
				return
			}
			expandarrayAsUnnest(rf)
			if isUnnestFrom(rf) {
				// unnest(a, ...) [WITH ORDINALITY]: the arrays' element types.
				args := rf.Functions[0].GetList().GetItems()[0].GetFuncCall().Args
				alias := "unnest"
				var names []string
				if rf.Alias != nil {
					alias, names = rf.Alias.Aliasname, strs(rf.Alias.Colnames)
				}
				var cols []Column
				for i, a := range args {
					c := Column{Name: alias, Typmod: -1}
					if len(args) > 1 && rf.Alias == nil {
						c.Name = "unnest"
					}
					if i < len(names) {
						c.Name = names[i]
					}
					if at := t.exprType(a, sc); at.Type != nil && at.Type.Elem != 0 {
						c.Type = Types[at.Type.Elem]
					}
					cols = append(cols, c)
				}
				if rf.Ordinality {
					c := Column{Name: "ordinality", Type: Types[20], Typmod: -1}
					if _, ok := t.subscripts[rf]; ok {
						c.Type = Types[23] // generate_subscripts' integer (subscriptsLateral)
					}
					if len(args) < len(names) {
						c.Name = names[len(args)]
					}
					cols = append(cols, c)
				}
				sc.tables = append(sc.tables, scopeTable{alias: strings.ToLower(alias), cols: cols})
				return
			}
			if f == nil || lastName(f.Funcname) != "generate_series" || len(f.Args) < 2 {
				ok = false
				return
			}
			alias, col := "generate_series", "generate_series"
			if rf.Alias != nil {
				alias, col = rf.Alias.Aliasname, rf.Alias.Aliasname
				if len(rf.Alias.Colnames) > 0 {
					col = rf.Alias.Colnames[0].GetString_().GetSval()
				}
			}
			var cols []Column
			if typ := typeByName(t.seriesType(f.Args)); typ != nil {
				cols = []Column{{Name: col, Type: typ, Typmod: -1}}
			} else {
				ok = false
			}
			sc.tables = append(sc.tables, scopeTable{alias: strings.ToLower(alias), cols: cols})
		case *pg_query.Node_RangeSubselect:
			alias := ""
			if x.RangeSubselect.Alias != nil {
				alias = x.RangeSubselect.Alias.Aliasname
			}
			var cols []Column
			if sel := x.RangeSubselect.Subquery.GetSelectStmt(); sel != nil {
				cols = t.selectCols(sel)
				if x.RangeSubselect.Alias != nil && len(x.RangeSubselect.Alias.Colnames) == len(cols) {
					for i, n := range strs(x.RangeSubselect.Alias.Colnames) {
						cols[i].Name = n
					}
				}
			}
			if cols == nil {
				ok = false
			}
			sc.tables = append(sc.tables, scopeTable{alias: strings.ToLower(alias), cols: cols})
		default:
			ok = false
		}
	}
	for _, n := range from {
		add(n)
	}
	return sc, ok
}

// seriesType is the element type of generate_series(args): int4, int8,
// numeric, timestamp or timestamptz ("" when it cannot tell).
func (t *translator) seriesType(args []*pg_query.Node) string {
	rank := map[string]int{"int2": 1, "int4": 1, "int8": 2, "numeric": 3, "float8": 3, "float4": 3}
	best, num, ts, tz := 0, false, false, false
	for i, a := range args {
		ct := t.exprType(a, nil)
		name := ""
		if ct.Type != nil {
			name = ct.Type.Name
		}
		if i == 2 && (name == "interval" || ((ts || tz) && (name == "" || name == "unknown" || name == "text"))) {
			continue
		}
		switch name {
		case "timestamp":
			ts = true
		case "timestamptz", "date":
			tz = true
		default:
			r, isNum := rank[name]
			if !isNum {
				return ""
			}
			num = true
			if r > best {
				best = r
			}
		}
	}
	switch {
	case num && (ts || tz):
		return ""
	case tz:
		return "timestamptz"
	case ts:
		return "timestamp"
	case best == 1:
		return "int4"
	case best == 2:
		return "int8"
	case best == 3:
		return "numeric"
	}
	return ""
}

// unifyNumeric is the common type of two numeric columns (PostgreSQL's
// implicit widening); other pairs keep the left one.
func unifyNumeric(l, r ColType) ColType {
	rank := map[string]int{"int2": 1, "int4": 2, "int8": 3, "numeric": 4, "float4": 5, "float8": 6}
	if l.Type == nil || r.Type == nil {
		if l.Type == nil {
			return r
		}
		return l
	}
	lr, lok := rank[l.Type.Name]
	rr, rok := rank[r.Type.Name]
	if lok && rok && lr == rr && l.Type.Name == "numeric" && l.Typmod != r.Typmod {
		// Two scales: each value keeps its own (3.75 is not 3.8 in a
		// column whose first value was 1.5).
		return ColType{Type: l.Type, Typmod: -1}
	}
	if !lok || !rok || lr >= rr {
		return l
	}
	return ColType{Type: r.Type, Typmod: -1}
}

// typeByName finds a PostgreSQL type by name (nil when unknown).
func typeByName(name string) *Type {
	if name == "" {
		return nil
	}
	for _, ty := range Types {
		if ty.Name == name {
			return ty
		}
	}
	return nil
}

func targetNames(s *pg_query.SelectStmt) []string {
	for s.Op != pg_query.SetOperation_SETOP_NONE && s.Larg != nil {
		s = s.Larg
	}
	if len(s.ValuesLists) > 0 {
		var out []string
		for i := range s.ValuesLists[0].GetList().GetItems() {
			out = append(out, fmt.Sprintf("column%d", i+1))
		}
		return out
	}
	var out []string
	for _, n := range s.TargetList {
		rt := n.GetResTarget()
		if rt == nil {
			return nil
		}
		if rt.Name != "" {
			out = append(out, rt.Name)
			continue
		}
		if cr := rt.Val.GetColumnRef(); cr != nil {
			f := cr.Fields[len(cr.Fields)-1]
			if f.GetAStar() != nil {
				return nil
			}
			out = append(out, f.GetString_().GetSval())
			continue
		}
		out = append(out, "?column?")
	}
	return out
}

func (t *translator) selectTypes(s *pg_query.SelectStmt) []ColType {
	if s.WithClause != nil {
		if t.ctes == nil {
			t.ctes = map[string][]Column{}
		}
		for _, c := range s.WithClause.Ctes {
			cte := c.GetCommonTableExpr()
			if cte == nil {
				continue
			}
			sel := cte.Ctequery.GetSelectStmt()
			var cols []Column
			if sel != nil {
				types := t.selectTypes(sel)
				names := targetNames(sel)
				if len(cte.Aliascolnames) == len(types) {
					names = strs(cte.Aliascolnames)
				}
				if types != nil && len(names) == len(types) {
					for i, ty := range types {
						cols = append(cols, Column{Name: names[i], Type: ty.Type, Typmod: ty.Typmod, Enum: ty.Enum})
					}
				}
			}
			for i, name := range t.dmlCTE {
				if name == cte.Ctename && t.dmlCols[i] != nil {
					cols = t.dmlCols[i] // a data-modifying CTE: its RETURNING types
				}
			}
			t.ctes[strings.ToLower(cte.Ctename)] = cols
		}
	}
	if s.Op != pg_query.SetOperation_SETOP_NONE && s.Larg != nil && s.Rarg != nil {
		// A set operation's column is the common type of its arms'
		// (numbers widen: integer UNION numeric is numeric).
		l, r := t.selectTypes(s.Larg), t.selectTypes(s.Rarg)
		if len(l) != len(r) {
			return l
		}
		for i := range l {
			l[i] = unifyNumeric(l[i], r[i])
		}
		return l
	}
	if len(s.ValuesLists) > 0 {
		row := s.ValuesLists[0].GetList().GetItems()
		out := make([]ColType, len(row))
		for i, e := range row {
			out[i] = t.exprType(e, nil)
		}
		for _, r := range s.ValuesLists[1:] {
			for i, e := range r.GetList().GetItems() {
				if i < len(out) {
					out[i] = unifyNumeric(out[i], t.exprType(e, nil)) // every row's, not the first's
				}
			}
		}
		return out
	}
	cols := t.selectCols(s)
	if cols == nil {
		return nil
	}
	out := make([]ColType, len(cols))
	for i, c := range cols {
		out[i] = ColType{Type: c.Type, Typmod: c.Typmod, Enum: c.Enum}
	}
	return out
}

// selectCols are a plain select's result columns, names and types, with
// * expanded; nil when a * covers a FROM item of unknown columns.
func (t *translator) selectCols(s *pg_query.SelectStmt) []Column {
	if s.Op != pg_query.SetOperation_SETOP_NONE && s.Larg != nil && s.Rarg != nil || len(s.ValuesLists) > 0 {
		types, names := t.selectTypes(s), targetNames(s)
		if types == nil || len(types) != len(names) {
			return nil
		}
		out := make([]Column, len(types))
		for i, ty := range types {
			out[i] = Column{Name: names[i], Type: ty.Type, Typmod: ty.Typmod, Enum: ty.Enum}
		}
		return out
	}
	sc, complete := t.scopeOf(s.FromClause)
	var out []Column
	for _, n := range s.TargetList {
		rt := n.GetResTarget()
		if rt == nil {
			return nil
		}
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			if !complete {
				return nil
			}
			qual := ""
			if len(cr.Fields) == 2 {
				qual = strings.ToLower(cr.Fields[0].GetString_().GetSval())
			}
			merged := map[string]bool{}
			if qual == "" && len(sc.using) > 0 {
				for _, u := range sc.using {
					for _, c := range sc.tables[0].cols {
						if c.Name == u {
							out = append(out, Column{Name: c.Name, Type: c.Type, Typmod: c.Typmod, Enum: c.Enum})
							merged[u] = true
						}
					}
				}
			}
			for _, tb := range sc.tables {
				if qual != "" && tb.alias != qual {
					continue
				}
				for _, c := range tb.cols {
					if !merged[c.Name] {
						out = append(out, Column{Name: c.Name, Type: c.Type, Typmod: c.Typmod, Enum: c.Enum})
					}
				}
			}
			continue
		}
		name := rt.Name
		if name == "" {
			if cr := rt.Val.GetColumnRef(); cr != nil {
				name = cr.Fields[len(cr.Fields)-1].GetString_().GetSval()
			} else if name, _ = figureColname(rt.Val); name == "" {
				name = "?column?"
			}
		}
		ty := t.exprType(rt.Val, sc)
		out = append(out, Column{Name: name, Type: ty.Type, Typmod: ty.Typmod, Enum: ty.Enum})
	}
	return out
}

func (t *translator) returningTypes(rel *pg_query.RangeVar, list []*pg_query.Node) []ColType {
	if len(list) == 0 {
		return nil
	}
	sel := &pg_query.SelectStmt{FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: rel}}}, TargetList: list}
	return t.selectTypes(sel)
}

func ct(oid uint32) ColType { return ColType{Type: Types[oid], Typmod: -1} }

var funcTypes = map[string]uint32{
	"_pg_series_array": 1007, "_pg_array_subscripts": 1007, "generate_subscripts": 23,
	"justify_hours": 1186, "justify_days": 1186, "justify_interval": 1186,
	"uuid_generate_v4": 2950, "uuid_nil": 2950, "digest": 17, "hmac": 17, "gen_random_bytes": 17, "crypt": 25, "gen_salt": 25,
	"percentile_cont": 701, "_pg_percentile_cont": 701,
	"count": 20, "row_number": 20, "rank": 20, "dense_rank": 20, "ntile": 23, "percent_rank": 701, "cume_dist": 701,
	"now": 1184, "current_timestamp": 1184, "clock_timestamp": 1184, "statement_timestamp": 1184, "transaction_timestamp": 1184,
	"length": 23, "char_length": 23, "character_length": 23, "octet_length": 23, "strpos": 23, "position": 23, "ascii": 23,
	"lower": 25, "upper": 25, "substr": 25, "substring": 25, "trim": 25, "btrim": 25, "ltrim": 25, "rtrim": 25, "concat": 25,
	"concat_ws": 25, "replace": 25, "left": 25, "right": 25, "lpad": 25, "rpad": 25, "repeat": 25, "reverse": 25,
	"split_part": 25, "initcap": 25, "md5": 25, "to_hex": 25, "chr": 25, "string_agg": 25, "version": 25, "translate": 25,
	"current_database": 19, "current_schema": 19, "current_user": 19, "session_user": 19,
	"random": 701, "date_part": 701, "sqrt": 701, "exp": 701, "ln": 701, "log": 701, "power": 701, "pi": 701, "cbrt": 701,
	"degrees": 701, "radians": 701, "extract": 1700,
	"bool_and": 16, "bool_or": 16, "every": 16, "starts_with": 16,
	"string_to_array": 1009, "_pg_format": 25, "format": 25, "regexp_split_to_array": 1009,
	"has_table_privilege": 16, "has_schema_privilege": 16, "has_database_privilege": 16, "has_column_privilege": 16,
	"has_sequence_privilege": 16, "has_function_privilege": 16, "pg_table_is_visible": 16, "pg_type_is_visible": 16,
	"pg_function_is_visible": 16, "_pg_array_contains": 16, "_pg_array_overlap": 16, "pg_is_in_recovery": 16, "current_schemas": 1003,
	"gen_random_uuid": 2950, "date_trunc": 1114, "pg_backend_pid": 23, "pg_terminate_backend": 16, "pg_cancel_backend": 16, "nextval": 20, "currval": 20, "setval": 20, "json_agg": 114, "jsonb_agg": 3802, "row_to_json": 114,
	"json_object_agg": 114, "jsonb_object_agg": 3802, "_pg_json_object_agg": 114, "_pg_jsonb_object_agg": 3802, "pg_index_column_has_property": 16,
	"_tandem_nextval": 20, "_tandem_currval": 20, "_tandem_setval": 20, "lastval": 20,
	"pg_try_advisory_lock": 16, "pg_try_advisory_lock_shared": 16, "pg_try_advisory_xact_lock": 16, "pg_try_advisory_xact_lock_shared": 16,
	"pg_advisory_unlock": 16, "pg_advisory_unlock_shared": 16,
	"_pg_now": 1184, "_pg_current_timestamp": 1184, "_pg_statement_timestamp": 1184, "_pg_clock_timestamp": 1184, "_pg_current_date": 1082, "_pg_localtimestamp": 1114, "_pg_current_time": 1083,
	"jsonb_build_object": 3802, "json_build_object": 114, "json_build_array": 114, "jsonb_build_array": 3802, "to_json": 114, "to_jsonb": 3802,
	"json_array_length": 23, "jsonb_array_length": 23, "array_length": 23, "cardinality": 23, "array_position": 23, "array_upper": 23, "array_lower": 23, "array_ndims": 23, "json_typeof": 25, "jsonb_typeof": 25,
	"jsonb_set": 3802, "regexp_replace": 25, "overlay": 25, "inet_server_port": 23, "inet_client_port": 23, "inet_server_addr": 869, "inet_client_addr": 869,
	"factorial": 1700, "div": 1700, "bit_length": 23, "timeofday": 25, "to_number": 1700, "jsonb_strip_nulls": 3802, "scale": 23, "min_scale": 23, "trim_scale": 1700, "width_bucket": 23,
	"sha224": 17, "sha256": 17, "sha384": 17, "sha512": 17, "regexp_match": 1009, "regexp_count": 23, "array_to_string": 25,
	"make_interval": 1186, "make_timestamp": 1114, "make_timestamptz": 1184,
	"to_timestamp": 1184, "make_date": 1082, "age": 1186, "encode": 25, "decode": 17, "pg_typeof": 2206,
}

func (t *translator) exprType(e *pg_query.Node, sc *scope) ColType {
	if e == nil {
		return ColType{}
	}
	switch x := e.Node.(type) {
	case *pg_query.Node_ColumnRef:
		f := strs(x.ColumnRef.Fields)
		if sc == nil || len(f) == 0 {
			return ColType{}
		}
		col := strings.ToLower(f[len(f)-1])
		qual := ""
		if len(f) >= 2 {
			qual = strings.ToLower(f[len(f)-2])
		}
		for _, tb := range sc.tables {
			if qual != "" && tb.alias != qual {
				continue
			}
			for _, c := range tb.cols {
				if strings.EqualFold(c.Name, col) {
					return ColType{Type: c.Type, Typmod: c.Typmod, Enum: c.Enum}
				}
			}
		}
	case *pg_query.Node_ParamRef:
		// A parameter typed so far (by a cast, or an operator below).
		if oid := t.paramType(x.ParamRef.Number); oid != 0 && Types[oid] != nil {
			return ColType{Type: Types[oid], Typmod: -1}
		}
	case *pg_query.Node_AConst:
		c := x.AConst
		switch {
		case c.Isnull:
			return ColType{} // unknown: typed by what it meets
		case c.GetIval() != nil:
			return ct(23)
		case c.GetFval() != nil:
			f := c.GetFval().Fval
			if i := strings.IndexByte(f, '.'); i >= 0 && !strings.ContainsAny(f, "eE") {
				return numericScale(int32(len(f) - i - 1))
			}
			if _, err := strconv.ParseInt(f, 10, 64); err == nil {
				return ct(20) // an integer literal past int4 is bigint
			}
			return ct(1700)
		case c.GetBoolval() != nil:
			return ct(16)
		case c.GetSval() != nil:
			return ct(25)
		}
	case *pg_query.Node_TypeCast:
		typ, mod, err := resolveType(x.TypeCast.TypeName)
		if err == nil {
			if sv := x.TypeCast.Arg.GetAConst().GetSval(); sv != nil && typ.Name == "numeric" && mod < 4 {
				// '3.50'::numeric keeps the scale it is written with.
				if v := strings.TrimSpace(sv.Sval); plainDecimal(v) {
					return numericScale(int32(fracDigits(v)))
				}
			}
			return ColType{Type: typ, Typmod: mod}
		}
		if e, ok := t.enumOf(x.TypeCast.TypeName); ok {
			return ColType{Type: TypeByName["text"], Typmod: -1, Enum: &e}
		}
	case *pg_query.Node_FuncCall:
		name := lastName(x.FuncCall.Funcname)
		switch name {
		case "sum":
			if len(x.FuncCall.Args) == 1 {
				a := t.exprType(x.FuncCall.Args[0], sc)
				if a.Type != nil {
					switch a.Type.Name {
					case "int2", "int4":
						return ct(20)
					case "int8":
						return ct(1700)
					case "numeric":
						return ColType{Type: a.Type, Typmod: a.Typmod}
					case "float4", "float8":
						return ct(701)
					}
				}
			}
			return ct(1700)
		case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
			if len(x.FuncCall.Args) == 1 {
				if a := t.exprType(x.FuncCall.Args[0], sc); a.Type != nil && (a.Type.Name == "float8" || a.Type.Name == "float4") {
					return ct(701)
				}
			}
			return ct(1700)
		case "avg":
			if len(x.FuncCall.Args) == 1 {
				if a := t.exprType(x.FuncCall.Args[0], sc); a.Type != nil && a.Type.Cat == 'N' && a.Type.Name != "float8" && a.Type.Name != "float4" {
					return numericScale(16)
				}
			}
			if len(x.FuncCall.Args) == 1 {
				if a := t.exprType(x.FuncCall.Args[0], sc); a.Type != nil && (a.Type.Name == "float8" || a.Type.Name == "float4") {
					return ct(701)
				}
			}
			return ct(1700)
		case "gcd", "lcm":
			if len(x.FuncCall.Args) == 2 {
				a, b := t.exprType(x.FuncCall.Args[0], sc), t.exprType(x.FuncCall.Args[1], sc)
				if a.Type != nil && b.Type != nil && (a.Type.Name == "int8" || b.Type.Name == "int8") {
					return ct(20)
				}
				if a.Type != nil && a.Type.Name == "numeric" {
					return ct(1700)
				}
				return ct(23)
			}
		case "date_bin":
			if len(x.FuncCall.Args) == 3 {
				if a := t.exprType(x.FuncCall.Args[1], sc); a.Type != nil && a.Type.Name == "timestamptz" {
					return ct(1184)
				}
			}
			return ct(1114)
		case "min", "max", "abs", "lag", "lead", "first_value", "last_value", "nth_value", "coalesce", "nullif", "ceil", "ceiling", "floor", "mod", "trunc":
			if len(x.FuncCall.Args) > 0 {
				a := t.exprType(x.FuncCall.Args[0], sc)
				if name == "trunc" || name == "ceil" || name == "ceiling" || name == "floor" {
					if name == "trunc" && len(x.FuncCall.Args) == 2 && a.Type != nil && a.Type.Name != "float8" && a.Type.Name != "float4" {
						if c := x.FuncCall.Args[1].GetAConst(); c != nil && c.GetIval() != nil && c.GetIval().Ival >= 0 {
							return numericScale(c.GetIval().Ival) // trunc(x, 2): two decimals, as round
						}
					}
					if a.Type != nil && a.Type.Name == "numeric" {
						return ct(1700)
					}
					if a.Type != nil && a.Type.Cat == 'N' && name == "mod" {
						return ColType{Type: a.Type, Typmod: -1}
					}
					return ct(701)
				}
				if name == "min" || name == "max" || name == "abs" || name == "coalesce" || name == "nullif" {
					return a
				}
				return ColType{Type: a.Type, Typmod: -1}
			}
		case "array_append", "array_remove", "array_cat", "array_replace", "array_prepend":
			// The array argument's type.
			i := 0
			if name == "array_prepend" {
				i = 1
			}
			if len(x.FuncCall.Args) > i {
				if a := t.exprType(x.FuncCall.Args[i], sc); a.Type != nil && a.Type.Elem != 0 {
					return ColType{Type: a.Type, Typmod: -1}
				}
			}
		case "timezone":
			if len(x.FuncCall.Args) == 2 {
				a := t.exprType(x.FuncCall.Args[1], sc)
				if a.Type != nil && a.Type.Name == "timestamp" {
					return ct(1184)
				}
				return ct(1114)
			}
		case "to_date":
			return ct(1082)
		case "generate_series":
			if typ := typeByName(t.seriesType(x.FuncCall.Args)); typ != nil && len(x.FuncCall.Args) >= 2 {
				return ColType{Type: typ, Typmod: -1}
			}
		case "jsonb_path_query", "jsonb_path_query_tz", "jsonb_path_query_array", "jsonb_path_query_array_tz", "jsonb_path_query_first", "jsonb_path_query_first_tz":
			return ct(3802)
		case "jsonb_path_exists", "jsonb_path_exists_tz", "jsonb_path_match", "jsonb_path_match_tz":
			return ct(16)
		case "jsonb_object_keys", "json_object_keys", "jsonb_array_elements", "json_array_elements", "jsonb_array_elements_text", "json_array_elements_text":
			return ct(jsonSRFs[name].types[0])
		case "unnest":
			if len(x.FuncCall.Args) == 1 {
				if a := t.exprType(x.FuncCall.Args[0], sc); a.Type != nil && a.Type.Elem != 0 && Types[a.Type.Elem] != nil {
					return ColType{Type: Types[a.Type.Elem], Typmod: -1}
				}
			}
			return ct(25)
		case "date_trunc":
			if len(x.FuncCall.Args) == 2 {
				// A date is truncated as a timestamptz (its implicit cast).
				if a := t.exprType(x.FuncCall.Args[1], sc); a.Type != nil && (a.Type.Name == "timestamptz" || a.Type.Name == "date") {
					return ct(1184)
				}
			}
			return ct(1114)
		case "extract":
			// numeric with the field's scale (PostgreSQL 14 and later).
			if len(x.FuncCall.Args) == 2 {
				field := strings.ToLower(x.FuncCall.Args[0].GetAConst().GetSval().GetSval())
				a := t.exprType(x.FuncCall.Args[1], sc)
				if a.Type != nil && a.Type.Name == "date" {
					return numericScale(0)
				}
				switch field {
				case "epoch", "second":
					return numericScale(6)
				case "milliseconds":
					return numericScale(3)
				case "":
					return ct(1700)
				}
				return numericScale(0)
			}
			return ct(1700)
		case "sign":
			if len(x.FuncCall.Args) == 1 {
				if a := t.exprType(x.FuncCall.Args[0], sc); a.Type != nil && a.Type.Name == "numeric" {
					return ct(1700)
				}
			}
			return ct(701)
		case "array_agg":
			if len(x.FuncCall.Args) == 1 {
				if a := t.exprType(x.FuncCall.Args[0], sc); a.Type != nil && a.Type.Array != 0 && Types[a.Type.Array] != nil {
					return ColType{Type: Types[a.Type.Array], Typmod: -1}
				}
			}
			return ct(1009)
		case "percentile_disc", "mode":
			// Of the WITHIN GROUP (ORDER BY x) expression's type.
			if len(x.FuncCall.AggOrder) == 1 {
				if sb := x.FuncCall.AggOrder[0].GetSortBy(); sb != nil {
					return t.exprType(sb.Node, sc)
				}
			}
		case "_pg_percentile_disc", "_pg_mode":
			if k := len(x.FuncCall.Args); k > 0 {
				i := 0
				if k == 3 {
					i = 1
				}
				return t.exprType(x.FuncCall.Args[i], sc)
			}
		case "round":
			if len(x.FuncCall.Args) == 2 {
				if c := x.FuncCall.Args[1].GetAConst(); c != nil && c.GetIval() != nil {
					return numericScale(c.GetIval().Ival)
				}
			}
			if len(x.FuncCall.Args) > 0 {
				if a := t.exprType(x.FuncCall.Args[0], sc); a.Type != nil && (a.Type.Name == "float8" || a.Type.Name == "float4") && len(x.FuncCall.Args) == 1 {
					return ct(701)
				}
			}
			return ct(1700)
		}
		if oid, ok := funcTypes[name]; ok {
			return ct(oid)
		}
		if strings.HasPrefix(name, "_cast_") {
			if typ := TypeByName[strings.TrimPrefix(name, "_cast_")]; typ != nil {
				return ColType{Type: typ, Typmod: -1}
			}
		}
	case *pg_query.Node_AIndirection:
		// (information_schema._pg_expandarray(arr)).n / .x: the position
		// (integer) and the element.
		if f := x.AIndirection.Arg.GetFuncCall(); f != nil && lastName(f.Funcname) == "_pg_expandarray" && len(f.Args) == 1 && len(x.AIndirection.Indirection) == 1 {
			switch x.AIndirection.Indirection[0].GetString_().GetSval() {
			case "n":
				return ct(23)
			case "x":
				if at := t.exprType(f.Args[0], sc); at.Type != nil && at.Type.Elem != 0 {
					return ct(at.Type.Elem)
				}
			}
		}
		// arr[i]: the element type (a slice arr[i:j] keeps the array type)
		at := t.exprType(x.AIndirection.Arg, sc)
		if at.Type != nil && at.Type.Elem != 0 {
			for _, ind := range x.AIndirection.Indirection {
				if ai := ind.GetAIndices(); ai == nil || ai.IsSlice {
					return ColType{}
				}
			}
			return ct(at.Type.Elem)
		}
	case *pg_query.Node_AExpr:
		a := x.AExpr
		switch a.Kind {
		case pg_query.A_Expr_Kind_AEXPR_OP:
			op := lastName(a.Name)
			switch op {
			case "~":
				if a.Lexpr == nil {
					return t.exprType(a.Rexpr, sc) // bitwise NOT
				}
				return ct(16)
			case "<<", ">>":
				return t.exprType(a.Lexpr, sc)
			case "&", "|", "#":
				l, r := t.exprType(a.Lexpr, sc), t.exprType(a.Rexpr, sc)
				if l.Type != nil && r.Type != nil && (l.Type.Name == "int8" || r.Type.Name == "int8") {
					return ct(20)
				}
				if l.Type != nil && r.Type != nil && l.Type.Name == "int2" && r.Type.Name == "int2" {
					return ct(21)
				}
				if l.Type != nil {
					return ColType{Type: l.Type, Typmod: -1}
				}
				return r
			case "=", "<>", "!=", "<", ">", "<=", ">=", "~*", "!~", "!~*", "~~", "!~~", "~~*", "!~~*", "@>", "<@", "?", "&&", "@?", "@@":
				return ct(16)
			case "||":
				l, r := t.exprType(a.Lexpr, sc), t.exprType(a.Rexpr, sc)
				switch {
				case (l.Type != nil && l.Type.Name == "jsonb") || (r.Type != nil && r.Type.Name == "jsonb"):
					return ct(3802)
				case l.Type != nil && l.Type.Elem != 0:
					return ColType{Type: l.Type, Typmod: -1}
				case r.Type != nil && r.Type.Elem != 0:
					return ColType{Type: r.Type, Typmod: -1}
				}
				return ct(25)
			case "->>", "#>>":
				return ct(25)
			case "#>":
				l := t.exprType(a.Lexpr, sc)
				if l.Type != nil && l.Type.Name == "json" {
					return ct(114)
				}
				return ct(3802)
			case "->":
				l := t.exprType(a.Lexpr, sc)
				if l.Type != nil && l.Type.Name == "json" {
					return ct(114)
				}
				return ct(3802)
			case "+", "-", "*", "/", "%":
				l, r := t.exprType(a.Lexpr, sc), t.exprType(a.Rexpr, sc)
				// A string beside a time or an interval is read as the
				// operator takes it (opParam): ts + '1 day' an interval.
				if unknownLit(a.Rexpr) && timeLike(l) {
					if oid := opParam(op, l, true); oid != 0 {
						r = ct(oid)
					}
				} else if unknownLit(a.Lexpr) && timeLike(r) {
					if oid := opParam(op, r, false); oid != 0 {
						l = ct(oid)
					}
				}
				if op == "-" && l.Type != nil && l.Type.Name == "jsonb" {
					return l
				}
				if op == "*" {
					if d := dateType(l, r, op); d.Type != nil {
						return d
					}
				}
				if a.Lexpr == nil {
					return r
				}
				if d := dateType(l, r, op); d.Type != nil {
					return d
				}
				res := arith(l, r)
				if res.Type != nil && res.Type.Name == "numeric" && (op == "+" || op == "-" || op == "*") {
					ls, rs := scaleOf(l), scaleOf(r)
					if ls < 0 || rs < 0 {
						return ct(1700)
					}
					if op == "*" {
						return numericScale(ls + rs)
					}
					return numericScale(max(ls, rs))
				}
				return res
			case "^":
				return ct(701)
			}
		case pg_query.A_Expr_Kind_AEXPR_LIKE, pg_query.A_Expr_Kind_AEXPR_ILIKE, pg_query.A_Expr_Kind_AEXPR_IN,
			pg_query.A_Expr_Kind_AEXPR_OP_ANY, pg_query.A_Expr_Kind_AEXPR_OP_ALL,
			pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN, pg_query.A_Expr_Kind_AEXPR_DISTINCT,
			pg_query.A_Expr_Kind_AEXPR_NOT_DISTINCT, pg_query.A_Expr_Kind_AEXPR_SIMILAR:
			return ct(16)
		case pg_query.A_Expr_Kind_AEXPR_NULLIF:
			if l := t.exprType(a.Lexpr, sc); l.Type != nil || a.Lexpr.GetAConst() == nil || !a.Lexpr.GetAConst().Isnull {
				return l
			}
			return t.exprType(a.Rexpr, sc) // nullif(NULL, 1): the other's type
		}
	case *pg_query.Node_AArrayExpr:
		for _, e := range x.AArrayExpr.Elements {
			if e.GetAArrayExpr() != nil {
				return t.exprType(e, sc) // ARRAY[[1,2],[3,4]]: its rows' type
			}
			if c := t.exprType(e, sc); c.Type != nil && c.Type.Array != 0 && Types[c.Type.Array] != nil {
				return ColType{Type: Types[c.Type.Array], Typmod: -1}
			}
		}
		return ct(1009)
	case *pg_query.Node_BoolExpr, *pg_query.Node_NullTest, *pg_query.Node_BooleanTest:
		return ct(16)
	case *pg_query.Node_GroupingFunc:
		return ct(23)
	case *pg_query.Node_SubLink:
		switch x.SubLink.SubLinkType {
		case pg_query.SubLinkType_EXISTS_SUBLINK, pg_query.SubLinkType_ANY_SUBLINK, pg_query.SubLinkType_ALL_SUBLINK:
			return ct(16)
		case pg_query.SubLinkType_EXPR_SUBLINK:
			if sel := x.SubLink.Subselect.GetSelectStmt(); sel != nil {
				if ts := t.selectTypes(sel); len(ts) == 1 {
					return ts[0]
				}
			}
		case pg_query.SubLinkType_ARRAY_SUBLINK:
			// array(SELECT x ...): an array of x's type (text[] when
			// unknown), so drivers read it as a list.
			if sel := x.SubLink.Subselect.GetSelectStmt(); sel != nil {
				if ts := t.selectTypes(sel); len(ts) == 1 && ts[0].Type != nil && ts[0].Type.Array != 0 && Types[ts[0].Type.Array] != nil {
					return ColType{Type: Types[ts[0].Type.Array], Typmod: -1}
				}
			}
			return ct(1009)
		}
	case *pg_query.Node_CaseExpr:
		for _, w := range x.CaseExpr.Args {
			if r := t.exprType(w.GetCaseWhen().GetResult(), sc); r.Type != nil && r.Type.OID != 25 {
				return ColType{Type: r.Type, Typmod: -1}
			}
		}
		if r := t.exprType(x.CaseExpr.Defresult, sc); r.Type != nil {
			return ColType{Type: r.Type, Typmod: -1}
		}
		return ct(25)
	case *pg_query.Node_CoalesceExpr:
		for _, a := range x.CoalesceExpr.Args {
			if r := t.exprType(a, sc); r.Type != nil {
				return ColType{Type: r.Type, Typmod: -1}
			}
		}
	case *pg_query.Node_MinMaxExpr:
		for _, a := range x.MinMaxExpr.Args {
			if r := t.exprType(a, sc); r.Type != nil {
				return ColType{Type: r.Type, Typmod: -1}
			}
		}
	case *pg_query.Node_SqlvalueFunction:
		switch x.SqlvalueFunction.Op {
		case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
			return ct(1082)
		case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
			return ct(1184)
		case pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
			return ct(1114)
		case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N,
			pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME_N:
			return ct(1083)
		default:
			return ct(19)
		}
	}
	return ColType{}
}

func arith(l, r ColType) ColType {
	rank := func(c ColType) int {
		if c.Type == nil {
			return -1
		}
		switch c.Type.Name {
		case "int2":
			return 1
		case "int4":
			return 2
		case "int8":
			return 3
		case "numeric":
			return 4
		case "float4":
			return 5
		case "float8":
			return 6
		}
		return -1
	}
	a, b := rank(l), rank(r)
	if a < 0 || b < 0 {
		if a >= 0 && r.Type == nil {
			return ColType{Type: l.Type, Typmod: -1}
		}
		if b >= 0 && l.Type == nil {
			return ColType{Type: r.Type, Typmod: -1}
		}
		return ColType{}
	}
	if (a == 4 && b >= 5) || (b == 4 && a >= 5) || (a == 5 && b != 5) || (b == 5 && a != 5) {
		return ct(701) // float4 with anything else is float8, as in PostgreSQL
	}
	if a == 1 && b == 1 {
		return ct(21)
	}
	if a >= b {
		if a <= 2 {
			return ct(23)
		}
		return ColType{Type: l.Type, Typmod: -1}
	}
	if b <= 2 {
		return ct(23)
	}
	return ColType{Type: r.Type, Typmod: -1}
}

var catalogBools = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`relhasindex relisshared relhasrules relhastriggers relhassubclass relrowsecurity
		relforcerowsecurity relispopulated relispartition indisunique indnullsnotdistinct indisprimary indisexclusion indimmediate
		indisclustered indisvalid indcheckxmin indisready indislive indisreplident attnotnull atthasdef atthasmissing attisdropped
		attislocal attbyval condeferrable condeferred convalidated conislocal connoinherit typbyval typispreferred typisdefined
		typnotnull datistemplate datallowconn hasindexes hasrules hastriggers rowsecurity rolsuper rolinherit rolcreaterole
		rolcreatedb rolcanlogin rolreplication rolbypassrls usecreatedb usesuper userepl usebypassrls collisdeterministic
		polpermissive puballtables pubinsert pubupdate pubdelete pubtruncate pubviaroot admin_option proretset tgisinternal
		inhdetachpending pending_restart seqcycle barelabel is_called extrelocatable lanispl lanpltrusted prosecdef proleakproof
		proisstrict opcdefault oprcanmerge oprcanhash is_instead tgdeferrable tginitdeferred subenabled subbinary substream
		subdisableonerr condefault cycle ispopulated`) {
		catalogBools[n] = true
	}
}

// CatalogColumns types the columns of catalog view view (the SQLite name
// CatalogRelation gives) as PostgreSQL's catalog types them, by name: a
// view's declared types say nothing (a UNION's columns have none), and a
// parameter compared with one (relname = $1) takes its type from here.
func CatalogColumns(view string, cols []Column) []Column {
	bare := make([]Column, len(cols))
	for i, c := range cols {
		bare[i] = Column{Name: c.Name}
	}
	return catalogColumns(bare, strings.HasPrefix(view, "_is_"))
}

func catalogColumns(cols []Column, infoSchema bool) []Column {
	out := make([]Column, len(cols))
	for i, c := range cols {
		c.Typmod = -1
		if infoSchema {
			// information_schema's domains: sql_identifier (name),
			// character_data and yes_or_no (varchar), cardinal_number (int4).
			switch {
			case strings.HasSuffix(c.Name, "_name") || strings.HasSuffix(c.Name, "_schema") || strings.HasSuffix(c.Name, "_catalog") ||
				c.Name == "dtd_identifier":
				c.Type = Types[19]
			case strings.HasSuffix(c.Name, "_length") || strings.HasSuffix(c.Name, "_precision") || strings.HasSuffix(c.Name, "_scale") ||
				strings.HasSuffix(c.Name, "_position") || strings.HasSuffix(c.Name, "_radix") || strings.HasSuffix(c.Name, "_octet_length") ||
				c.Name == "position_in_unique_constraint" || c.Name == "maximum_cardinality":
				c.Type = Types[23]
			default:
				c.Type = Types[1043]
			}
			out[i] = c
			continue
		}
		switch {
		case c.Name == "relkind" || c.Name == "contype" || c.Name == "typtype" || c.Name == "typcategory" || c.Name == "relpersistence" ||
			c.Name == "attidentity" || c.Name == "attgenerated" || c.Name == "typalign" || c.Name == "typstorage" || c.Name == "attalign" ||
			c.Name == "attstorage" || c.Name == "relreplident" || c.Name == "confupdtype" || c.Name == "confdeltype" || c.Name == "confmatchtype" ||
			c.Name == "typdelim" || c.Name == "prokind" || c.Name == "provolatile" || c.Name == "proparallel" || c.Name == "castcontext" ||
			c.Name == "castmethod" || c.Name == "defaclobjtype" || c.Name == "ev_type" || c.Name == "ev_enabled" || c.Name == "tgenabled" ||
			c.Name == "evtenabled" || c.Name == "polcmd" || c.Name == "amtype" || c.Name == "oprkind" || c.Name == "partstrat" ||
			c.Name == "privtype" || c.Name == "deptype" || c.Name == "subtwophasestate" || c.Name == "aggkind" || c.Name == "amoppurpose":
			c.Type = Types[18]
		case catalogBools[c.Name]:
			c.Type = Types[16]
		case c.Name == "oid" || strings.HasSuffix(c.Name, "relid") || strings.HasSuffix(c.Name, "namespace") ||
			strings.HasSuffix(c.Name, "owner") || strings.HasSuffix(c.Name, "typid") || c.Name == "typelem" || c.Name == "typarray" ||
			c.Name == "indexrelid" || c.Name == "conindid" || c.Name == "relam" || c.Name == "datdba" || c.Name == "attcollation" ||
			c.Name == "classid" || c.Name == "objid" || c.Name == "refclassid" || c.Name == "refobjid" || c.Name == "ev_class":
			c.Type = Types[26]
		case strings.HasSuffix(c.Name, "name") && c.Name != "name" && !strings.Contains(c.Name, "_"):
			c.Type = Types[19]
		case c.Name == "reloptions" || c.Name == "attoptions" || c.Name == "attfdwoptions" || c.Name == "fdwoptions" || c.Name == "srvoptions" ||
			c.Name == "umoptions" || c.Name == "setconfig" || c.Name == "rolconfig" || c.Name == "useconfig" || c.Name == "proconfig":
			c.Type = Types[1009] // text[]: NULL || array is the array
		case c.Name == "indkey" || c.Name == "indoption" || c.Name == "stxkeys" || c.Name == "partattrs":
			c.Type = Types[22]
		case c.Name == "indclass" || c.Name == "indcollation" || c.Name == "proargtypes" || c.Name == "partclass" || c.Name == "partcollation":
			c.Type = Types[30]
		case c.Name == "attndims":
			c.Type = Types[23]
		case (c.Name == "typinput" || c.Name == "typoutput" || c.Name == "typreceive" || c.Name == "typsend") && Types[24] != nil:
			c.Type = Types[24] // regproc
		case c.Name == "roles":
			c.Type = Types[1003] // pg_policies.roles: name[]
		case c.Name == "polroles" || c.Name == "conexclop":
			c.Type = Types[1028] // oid[]
		case c.Name == "last_value":
			c.Type = Types[20] // pg_sequences.last_value: NULL before the first nextval
		case c.Name == "enumlabel":
			c.Type = Types[19]
		case c.Name == "enumsortorder":
			c.Type = Types[700]
		case c.Name == "attnum" || c.Name == "indnatts" || c.Name == "indnkeyatts" || c.Name == "relnatts" || c.Name == "typlen" || c.Name == "adnum":
			c.Type = Types[21]
		}
		out[i] = c
	}
	return out
}

// returningNames are the result column names of a RETURNING list.
func (t *translator) returningNames(rel *pg_query.RangeVar, list []*pg_query.Node) []string {
	var out []string
	for _, n := range list {
		rt := n.GetResTarget()
		if rt == nil {
			return nil
		}
		if rt.Name != "" {
			out = append(out, rt.Name)
			continue
		}
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			if t.sch == nil {
				return nil
			}
			cols := t.sch.Columns(rel.Relname)
			if cols == nil {
				return nil
			}
			for _, c := range cols {
				out = append(out, c.Name)
			}
			continue
		}
		name, _ := figureColname(rt.Val)
		out = append(out, name)
	}
	return out
}

// numericScale is a numeric result that prints with scale digits (as
// PostgreSQL's display scale of a computed numeric).
func numericScale(scale int32) ColType {
	if scale < 0 {
		return ct(1700)
	}
	return ColType{Type: Types[1700], Typmod: (1000<<16 | scale) + 4}
}

// scaleOf is a value's display scale when the type says it: -1 unknown.
func scaleOf(c ColType) int32 {
	if c.Type == nil {
		return -1
	}
	switch c.Type.Name {
	case "numeric":
		if c.Typmod >= 4 {
			return (c.Typmod - 4) & 0xffff
		}
	case "int2", "int4", "int8":
		return 0
	}
	return -1
}

// dateType is the type of date and timestamp arithmetic.
// unknownLit: a string literal, of no type until its operator gives it one.
func unknownLit(n *pg_query.Node) bool {
	c := n.GetAConst()
	return c != nil && c.GetSval() != nil
}

// timeLike: a date, timestamp, timestamptz or interval.
func timeLike(c ColType) bool {
	if c.Type == nil {
		return false
	}
	switch c.Type.Name {
	case "date", "timestamp", "timestamptz", "interval":
		return true
	}
	return false
}

func dateType(l, r ColType, op string) ColType {
	if l.Type == nil || r.Type == nil {
		return ColType{}
	}
	ln, rn := l.Type.Name, r.Type.Name
	isInt := ln == "int2" || ln == "int4" || ln == "int8"
	rInt := rn == "int2" || rn == "int4" || rn == "int8"
	switch {
	case ln == "date" && rInt, isInt && rn == "date" && op == "+":
		return ct(1082)
	case ln == "date" && rn == "date" && op == "-":
		return ct(23)
	case ln == "date" && rn == "interval":
		return ct(1114)
	case (ln == "timestamp" || ln == "timestamptz") && rn == "interval":
		return ColType{Type: l.Type, Typmod: -1}
	case ln == "interval" && rn == "date" && op == "+":
		return ct(1114)
	case ln == "interval" && (rn == "timestamp" || rn == "timestamptz") && op == "+":
		return ColType{Type: r.Type, Typmod: -1}
	case (ln == "timestamp" || ln == "timestamptz") && (rn == "timestamp" || rn == "timestamptz") && op == "-":
		return ct(1186)
	case ln == "interval" && rn == "interval":
		return ct(1186)
	case op == "*" && (ln == "interval" && r.Type.Cat == 'N' || rn == "interval" && l.Type.Cat == 'N'):
		return ct(1186)
	case op == "/" && ln == "interval" && r.Type.Cat == 'N':
		return ct(1186)
	}
	return ColType{}
}

// annotate records, for every + and - in a statement, its operands' types
// with the statement's tables in scope, before the rewrite: the date and
// interval arithmetic needs them for column references.
func (t *translator) annotate(stmt *pg_query.Node) {
	if t.opTypes == nil {
		t.opTypes = map[*pg_query.A_Expr][2]ColType{}
	}
	var sels []*pg_query.SelectStmt
	var sc *scope
	switch x := stmt.Node.(type) {
	case *pg_query.Node_SelectStmt:
		t.annotateSelect(x.SelectStmt)
		return
	case *pg_query.Node_UpdateStmt:
		sc, _ = t.scopeOf(append([]*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: x.UpdateStmt.Relation}}}, x.UpdateStmt.FromClause...))
	case *pg_query.Node_DeleteStmt:
		sc, _ = t.scopeOf([]*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: x.DeleteStmt.Relation}}})
	case *pg_query.Node_InsertStmt:
		sc, _ = t.scopeOf([]*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: x.InsertStmt.Relation}}})
	default:
		return
	}
	visit(stmt.ProtoReflect(), func(n *pg_query.Node) {
		if sel := n.GetSelectStmt(); sel != nil {
			sels = append(sels, sel)
		}
		t.noteOp(n, sc)
	})
	for _, sel := range sels {
		t.annotateSelect(sel)
	}
}

func (t *translator) annotateSelect(s *pg_query.SelectStmt) {
	if s.Op != pg_query.SetOperation_SETOP_NONE {
		if s.Larg != nil {
			t.annotateSelect(s.Larg)
		}
		if s.Rarg != nil {
			t.annotateSelect(s.Rarg)
		}
		return
	}
	sc, _ := t.scopeOf(s.FromClause)
	t.groupCheck(s)
	sels := selectClauses(s, false, func(m *pg_query.Node) { t.noteOp(m, sc) })
	for _, f := range s.FromClause {
		if rs := f.GetRangeSubselect(); rs != nil {
			if sel := rs.Subquery.GetSelectStmt(); sel != nil {
				sels = append(sels, sel)
			}
		}
	}
	for _, sel := range sels {
		t.annotateSelect(sel)
	}
}

// selectClauses visits, bottom-up, every node of the clauses of a SELECT
// that read its FROM: the select list, WHERE, HAVING, with quals the join
// conditions, GROUP BY and ORDER BY. It answers the SELECTs nested in them.
func selectClauses(s *pg_query.SelectStmt, quals bool, fn func(*pg_query.Node)) []*pg_query.SelectStmt {
	var sels []*pg_query.SelectStmt
	walk := func(nodes ...*pg_query.Node) {
		for _, n := range nodes {
			if n == nil || n.Node == nil {
				continue
			}
			visit(n.ProtoReflect(), func(m *pg_query.Node) {
				if sel := m.GetSelectStmt(); sel != nil {
					sels = append(sels, sel)
				}
				fn(m)
			})
		}
	}
	walk(s.TargetList...)
	walk(s.WhereClause, s.HavingClause)
	if quals {
		walk(joinQuals(s.FromClause)...)
	}
	walk(s.GroupClause...)
	walk(s.SortClause...)
	return sels
}

func (t *translator) noteOp(n *pg_query.Node, sc *scope) {
	if tc := n.GetTypeCast(); tc != nil {
		if a := t.exprType(tc.Arg, sc); a.Type != nil && (a.Type.Name == "numeric" || a.Type.Name == "bool" || a.Type.Name == "timestamptz" || a.Type.Name == "bytea") {
			if t.castArg == nil {
				t.castArg = map[*pg_query.TypeCast]ColType{}
			}
			t.castArg[tc] = a
		}
		return
	}
	if f := n.GetFuncCall(); f != nil && len(f.Args) == 1 && len(f.Funcname) == 1 {
		switch lastName(f.Funcname) {
		case "array_agg":
			if a := t.exprType(f.Args[0], sc); a.Type != nil && a.Type.Name == "numeric" && scaleOf(a) > 0 {
				// Elements with the column's scale ({1.500}, not {1.5}).
				f.Args[0] = call("_pg_numeric_text", f.Args[0], pg_query.MakeAConstIntNode(int64(scaleOf(a)), -1))
			}
			return
		case "sum", "avg", "min", "max":
			if t.aggArg == nil {
				t.aggArg = map[*pg_query.FuncCall]ColType{}
			}
			t.aggArg[f] = t.exprType(f.Args[0], sc)
			return
		}
	}
	if f := n.GetFuncCall(); f != nil && len(f.Funcname) == 1 && len(f.Args) == 1 && sc != nil {
		switch lastName(f.Funcname) {
		case "json_agg", "jsonb_agg", "to_json", "to_jsonb":
			// json_agg(r) of a FROM item r (not a column): its rows as
			// objects, row_to_json(r) each.
			if wholeRow(f.Args[0], sc) {
				row := &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: &pg_query.FuncCall{
					Funcname: []*pg_query.Node{pg_query.MakeStrNode("row_to_json")}, Args: []*pg_query.Node{f.Args[0]}, Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL}}}
				t.noteOp(row, sc)
				switch lastName(f.Funcname) {
				case "to_json":
					n.Node = row.Node
					return
				case "to_jsonb":
					n.Node = (&pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: row,
						TypeName: &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode("jsonb")}, Typemod: -1}}}}).Node
					return
				}
				f.Args[0] = row
				if t.jsonArg == nil {
					t.jsonArg = map[*pg_query.FuncCall]bool{}
				}
				t.jsonArg[f] = true // json already: aggregated as it is
				if t.rowAgg == nil {
					t.rowAgg = map[*pg_query.FuncCall]bool{}
				}
				t.rowAgg[f] = true // rows: PostgreSQL puts each on a line of its own
			}
		}
	}
	if f := n.GetFuncCall(); f != nil && len(f.Funcname) == 1 && lastName(f.Funcname) == "row_to_json" && len(f.Args) == 1 && sc != nil {
		// row_to_json(r) of a FROM item: json_object of its columns
		// (SQLite's layout is PostgreSQL's, compact).
		if cr := f.Args[0].GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_() != nil {
			alias := strings.ToLower(cr.Fields[0].GetString_().Sval)
			for _, tb := range sc.tables {
				if tb.alias != alias || len(tb.cols) == 0 {
					continue
				}
				var args []*pg_query.Node
				for _, c := range tb.cols {
					v := colRef(cr.Fields[0].GetString_().Sval, c.Name)
					if c.Type != nil && c.Type.Name == "bool" {
						v = template("json(CASE WHEN __arg0__ THEN 'true' WHEN NOT __arg0__ THEN 'false' END)", v)
					} else if c.Type != nil && (c.Type.Name == "json" || c.Type.Name == "jsonb") {
						v = call("json", v)
					} else if c.Type != nil && (c.Type.Name == "timestamptz" || c.Type.Name == "timestamp") {
						v = call("_pg_json_"+c.Type.Name, v) // ISO 8601, in the session's zone
					} else if sc := scaleOf(ColType{Type: c.Type, Typmod: c.Typmod}); c.Type != nil && c.Type.Name == "numeric" && sc > 0 {
						v = call("json", call("_pg_numeric_text", v, pg_query.MakeAConstIntNode(int64(sc), -1))) // with its scale
					}
					args = append(args, strConst(c.Name), v)
				}
				f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("json_object")}
				f.Args = args
				return
			}
		}
	}
	if f := n.GetFuncCall(); f != nil && len(f.Funcname) == 1 {
		switch lastName(f.Funcname) {
		case "jsonb_build_object", "json_build_object", "jsonb_build_array", "json_build_array", "to_json", "to_jsonb", "json_agg", "jsonb_agg",
			"json_object_agg", "jsonb_object_agg":
			// Booleans are integers in SQLite: mark them for the builder.
			for i, a := range f.Args {
				c := t.exprType(a, sc)
				if c.Type != nil && c.Type.Name == "bool" {
					f.Args[i] = call("_pg_json_bool", a)
				}
				if c.Type != nil && (c.Type.Name == "timestamptz" || c.Type.Name == "timestamp") {
					// ISO 8601, as PostgreSQL writes times in JSON: a
					// timestamptz in the session's zone.
					f.Args[i] = call("_pg_json_"+c.Type.Name, a)
				}
				if c.Type != nil && c.Type.Name == "numeric" && scaleOf(c) > 0 {
					// A numeric(p,s) with its scale (1.500, not 1.5).
					f.Args[i] = call("_pg_json_numeric", a, pg_query.MakeAConstIntNode(int64(scaleOf(c)), -1))
				}
				if c.Type != nil && (c.Type.Name == "json" || c.Type.Name == "jsonb") && strings.Contains(lastName(f.Funcname), "_build_") {
					// A json value is embedded as it is, not as a string.
					f.Args[i] = call("_pg_json_raw", a)
				}
				if c.Type != nil && (c.Type.Name == "json" || c.Type.Name == "jsonb") && strings.HasSuffix(lastName(f.Funcname), "_agg") {
					if t.jsonArg == nil {
						t.jsonArg = map[*pg_query.FuncCall]bool{}
					}
					t.jsonArg[f] = true // already json: aggregated as it is
				}
			}
			return
		}
	}
	if f := n.GetFuncCall(); f != nil && len(f.Args) >= 2 && len(f.Funcname) == 1 && jsonPathKinds[lastName(f.Funcname)] != "" {
		if t.jsonPathArgs == nil {
			t.jsonPathArgs = map[*pg_query.FuncCall][2]ColType{}
		}
		t.jsonPathArgs[f] = [2]ColType{t.exprType(f.Args[0], sc), t.exprType(f.Args[1], sc)}
		return
	}
	if f := n.GetFuncCall(); f != nil && len(f.Args) == 1 && lastName(f.Funcname) == "pg_typeof" {
		if t.typeofArg == nil {
			t.typeofArg = map[*pg_query.FuncCall]ColType{}
		}
		t.typeofArg[f] = t.exprType(f.Args[0], sc) // a column's type needs the scope
		return
	}
	if f := n.GetFuncCall(); f != nil && len(f.Args) == 2 && lastName(f.Funcname) == "timezone" {
		if t.aggArg == nil {
			t.aggArg = map[*pg_query.FuncCall]ColType{}
		}
		t.aggArg[f] = t.exprType(f.Args[1], sc) // AT TIME ZONE: the timestamp's type
		return
	}
	e := n.GetAExpr()
	if e != nil && (e.Kind == pg_query.A_Expr_Kind_AEXPR_BETWEEN || e.Kind == pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN) && e.Lexpr != nil {
		t.opTypes[e] = [2]ColType{t.exprType(e.Lexpr, sc), {}} // the bounds are read as its type
		return
	}
	if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil {
		return
	}
	switch lastName(e.Name) {
	case "+", "-", "*", "/", "%", "||", "@>", "<@", "?", "#>", "#>>", "&&", "@?", "@@", "=", "<>", "!=", "<", ">", "<=", ">=":
		t.opTypes[e] = [2]ColType{t.exprType(e.Lexpr, sc), t.exprType(e.Rexpr, sc)}
	}
}

// wholeRow reports whether n names a FROM item of sc with known columns
// and no column of that name is in scope (PostgreSQL's whole-row
// reference).
func wholeRow(n *pg_query.Node, sc *scope) bool {
	cr := n.GetColumnRef()
	if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetString_() == nil {
		return false
	}
	name := strings.ToLower(cr.Fields[0].GetString_().Sval)
	found := false
	for _, tb := range sc.tables {
		for _, c := range tb.cols {
			if strings.EqualFold(c.Name, name) {
				return false
			}
		}
		if tb.alias == name && len(tb.cols) > 0 {
			found = true
		}
	}
	return found
}

// plainDecimal: digits with at most one point and a sign (no exponent,
// NaN or Infinity).
func plainDecimal(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if s == "" || s == "." {
		return false
	}
	point := false
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && !point:
			point = true
		default:
			return false
		}
	}
	return true
}
