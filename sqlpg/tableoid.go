package sqlpg

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// catalogOIDs are the OIDs PostgreSQL 15 gives its catalog tables: a
// catalog's tableoid, its 'pg_class'::regclass, and pg_depend's classid
// values (pg_dump reads all three).
var catalogOIDs = map[string]int64{
	"pg_aggregate": 2600, "pg_am": 2601, "pg_amop": 2602, "pg_amproc": 2603, "pg_attrdef": 2604,
	"pg_attribute": 1249, "pg_authid": 1260, "pg_auth_members": 1261, "pg_cast": 2605, "pg_class": 1259,
	"pg_collation": 3456, "pg_constraint": 2606, "pg_conversion": 2607, "pg_database": 1262,
	"pg_default_acl": 826, "pg_depend": 2608, "pg_description": 2609, "pg_enum": 3501,
	"pg_event_trigger": 3466, "pg_extension": 3079, "pg_foreign_data_wrapper": 2328,
	"pg_foreign_server": 1417, "pg_foreign_table": 3118, "pg_index": 2610, "pg_inherits": 2611,
	"pg_init_privs": 3394, "pg_language": 2612, "pg_largeobject": 2613, "pg_largeobject_metadata": 2995,
	"pg_namespace": 2615, "pg_opclass": 2616, "pg_operator": 2617, "pg_opfamily": 2753,
	"pg_partitioned_table": 3350, "pg_policy": 3256, "pg_proc": 1255, "pg_publication": 6104,
	"pg_publication_namespace": 6237, "pg_publication_rel": 6106, "pg_range": 3541, "pg_rewrite": 2618,
	"pg_seclabel": 3596, "pg_sequence": 2224, "pg_shdescription": 2396, "pg_shseclabel": 3592, "pg_statistic_ext": 3381,
	"pg_subscription": 6100, "pg_tablespace": 1213, "pg_transform": 3576, "pg_trigger": 2620,
	"pg_ts_config": 3602, "pg_ts_dict": 3600, "pg_ts_parser": 3601, "pg_ts_template": 3764, "pg_type": 1247,
	"pg_user_mapping": 1418,
}

// tableOIDs replaces a catalog's tableoid, a system column tandem's
// catalog views do not have, by the catalog's OID (pg_dump selects
// x.tableoid from nearly every catalog it reads). A qualified reference
// resolves through the FROM lists of its select and the selects around
// it; an unqualified one only where its select reads one relation.
func tableOIDs(stmt *pg_query.Node) {
	type scope struct {
		byAlias map[string]int64
		rels    int
		only    int64
	}
	var walk func(m protoreflect.Message, scopes []scope)
	walk = func(m protoreflect.Message, scopes []scope) {
		// Every select's FROM list, an arm of a UNION too (arms are
		// SelectStmt messages, not Nodes).
		if sel, ok := m.Interface().(*pg_query.SelectStmt); ok {
			{
				sc := scope{byAlias: map[string]int64{}}
				var add func(f *pg_query.Node)
				add = func(f *pg_query.Node) {
					switch y := f.Node.(type) {
					case *pg_query.Node_RangeVar:
						sc.rels++
						r := y.RangeVar
						schema := strings.ToLower(r.Schemaname)
						oid, isCat := catalogOIDs[strings.ToLower(r.Relname)]
						if !isCat || (schema != "" && schema != "pg_catalog") {
							return
						}
						alias := strings.ToLower(r.Relname)
						if r.Alias != nil {
							alias = strings.ToLower(r.Alias.Aliasname)
						}
						sc.byAlias[alias] = oid
						sc.only = oid
					case *pg_query.Node_JoinExpr:
						add(y.JoinExpr.Larg)
						add(y.JoinExpr.Rarg)
					default:
						sc.rels++
					}
				}
				for _, f := range sel.FromClause {
					add(f)
				}
				scopes = append(scopes[:len(scopes):len(scopes)], sc)
			}
		}
		if n, ok := m.Interface().(*pg_query.Node); ok {
			switch x := n.Node.(type) {
			case *pg_query.Node_ResTarget:
				// The column keeps its name once the reference is a constant.
				if cr := x.ResTarget.Val.GetColumnRef(); cr != nil && x.ResTarget.Name == "" {
					if f := strs(cr.Fields); len(f) > 0 && strings.EqualFold(f[len(f)-1], "tableoid") {
						x.ResTarget.Name = "tableoid"
					}
				}
			case *pg_query.Node_ColumnRef:
				f := strs(x.ColumnRef.Fields)
				if len(f) == 0 || len(f) > 2 || !strings.EqualFold(f[len(f)-1], "tableoid") || len(scopes) == 0 {
					return
				}
				var oid int64
				if len(f) == 2 {
					for i := len(scopes) - 1; i >= 0 && oid == 0; i-- {
						oid = scopes[i].byAlias[strings.ToLower(f[0])]
					}
				} else if sc := scopes[len(scopes)-1]; sc.rels == 1 {
					oid = sc.only
				}
				if oid != 0 {
					n.Node = pg_query.MakeAConstIntNode(oid, -1).Node
				}
				return
			}
		}
		eachChild(m, func(c protoreflect.Message) { walk(c, scopes) })
	}
	walk(stmt.ProtoReflect(), nil)
}

// SequenceLister is a Schema that knows sequences (a sequence read as a
// relation: SELECT last_value, is_called FROM s, as pg_dump does).
type SequenceLister interface {
	IsSequence(name string) bool
}

// SequenceNamer is a Schema that can list its sequences: a statement whose
// text names none of them is not searched for sequences read as relations.
type SequenceNamer interface {
	SequenceNames() []string
}

// namesNoSequence reports whether lower (a statement's text in lower case)
// cannot name any of sch's sequences.
func namesNoSequence(sch Schema, lower string) bool {
	sn, ok := sch.(SequenceNamer)
	if !ok {
		return false
	}
	for _, name := range sn.SequenceNames() {
		if strings.Contains(name, `"`) || strings.Contains(lower, strings.ToLower(name)) {
			return false
		}
	}
	return true
}

// sequenceRelations rewrites a sequence in a select's FROM list as the
// catalog view of every sequence's state, restricted to that sequence:
// FROM s becomes FROM _pg_seqrel AS s WHERE s.seqname = 's'.
func (t *translator) sequenceRelations(stmt *pg_query.Node) {
	sl, ok := t.sch.(SequenceLister)
	if !ok {
		return
	}
	ctes := map[string]bool{}
	var sels []*pg_query.SelectStmt
	visit(stmt.ProtoReflect(), func(n *pg_query.Node) {
		if c := n.GetCommonTableExpr(); c != nil {
			ctes[strings.ToLower(c.Ctename)] = true
		}
		if sel := n.GetSelectStmt(); sel != nil {
			sels = append(sels, sel)
		}
	})
	for _, sel := range sels {
		var conds []*pg_query.Node
		var add func(f *pg_query.Node)
		add = func(f *pg_query.Node) {
			switch y := f.Node.(type) {
			case *pg_query.Node_RangeVar:
				r := y.RangeVar
				schema := strings.ToLower(r.Schemaname)
				if (schema != "" && schema != "public") || ctes[strings.ToLower(r.Relname)] || !sl.IsSequence(r.Relname) || t.sch.Columns(r.Relname) != nil {
					return
				}
				alias := r.Relname
				if r.Alias != nil {
					alias = r.Alias.Aliasname
				}
				conds = append(conds, pg_query.MakeAExprNode(pg_query.A_Expr_Kind_AEXPR_OP, []*pg_query.Node{pg_query.MakeStrNode("=")},
					colRef(alias, "seqname"), strConst(r.Relname), -1))
				r.Schemaname, r.Relname, r.Alias = "pg_catalog", "_pg_seqrel", &pg_query.Alias{Aliasname: alias}
			case *pg_query.Node_JoinExpr:
				add(y.JoinExpr.Larg)
				add(y.JoinExpr.Rarg)
			}
		}
		for _, f := range sel.FromClause {
			add(f)
		}
		if len(conds) == 0 {
			continue
		}
		if sel.WhereClause != nil {
			conds = append(conds, sel.WhereClause)
		}
		if len(conds) == 1 {
			sel.WhereClause = conds[0]
		} else {
			sel.WhereClause = pg_query.MakeBoolExprNode(pg_query.BoolExprType_AND_EXPR, conds, -1)
		}
	}
}
