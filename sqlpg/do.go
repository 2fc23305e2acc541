package sqlpg

import (
	"encoding/json"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// DoBlock is the part of PL/pgSQL a DO block may use on the SQLite back
// end (which has no procedural language): statements, IF / ELSIF / ELSE
// on SQL conditions, nested blocks, RAISE, and EXCEPTION handlers by
// condition name or SQLSTATE. That is what migrations and ORMs send
// (Sequelize creates an enum type in DO 'BEGIN CREATE TYPE ...;
// EXCEPTION WHEN duplicate_object THEN null; END'); variables, loops and
// PERFORM / EXECUTE are refused (0A000). The back end runs it.
type DoBlock struct {
	Body     []DoItem
	Handlers []DoHandler
}

// DoItem is one statement of a block: exactly one field is set.
type DoItem struct {
	SQL   string
	If    *DoIf
	Block *DoBlock
	Raise *DoRaise
	// Into: the OUT parameter (of a TempFunction) SQL's first row goes
	// into, "" for none.
	Into string
	// Diag: GET [STACKED] DIAGNOSTICS (a TempFunction's handler).
	Diag []DoDiag
}

// DoIf: the first condition that is true runs its body, else Else.
type DoIf struct {
	Conds  []string // SQL boolean expressions
	Bodies [][]DoItem
	Else   []DoItem
}

// DoHandler catches the errors whose SQLSTATE is among Codes ("" catches
// every error but query cancels, as WHEN OTHERS).
type DoHandler struct {
	Codes []string
	Body  []DoItem
}

// DoRaise: RAISE level 'message'. Only an EXCEPTION ends the block.
type DoRaise struct {
	Error   bool
	Code    string
	Message string
}

// conditionCodes are PL/pgSQL's condition names for the SQLSTATEs tandem
// reports.
var conditionCodes = map[string]string{
	"duplicate_object": "42710", "duplicate_table": "42P07", "duplicate_column": "42701", "duplicate_schema": "42P06",
	"duplicate_function": "42723", "duplicate_database": "42P04", "duplicate_alias": "42712", "undefined_object": "42704",
	"undefined_table": "42P01", "undefined_column": "42703", "undefined_function": "42883", "invalid_schema_name": "3F000",
	"unique_violation": "23505", "foreign_key_violation": "23503", "not_null_violation": "23502", "check_violation": "23514",
	"integrity_constraint_violation": "23000", "invalid_text_representation": "22P02", "division_by_zero": "22012",
	"numeric_value_out_of_range": "22003", "raise_exception": "P0001", "feature_not_supported": "0A000",
	"insufficient_privilege": "42501", "syntax_error": "42601", "dependent_objects_still_exist": "2BP01",
	"lock_not_available": "55P03", "serialization_failure": "40001", "deadlock_detected": "40P01", "object_in_use": "55006",
	"invalid_parameter_value": "22023", "string_data_right_truncation": "22001", "datetime_field_overflow": "22008",
	"wrong_object_type": "42809", "invalid_table_definition": "42P16", "others": "",
}

// ParseDo reads a DO statement; ok is false for any other statement.
func ParseDo(sql string) (block *DoBlock, ok bool, err error) {
	tree, err := Parse(sql)
	if err != nil {
		return nil, false, err
	}
	if len(tree.Stmts) != 1 {
		return nil, false, nil
	}
	d := tree.Stmts[0].Stmt.GetDoStmt()
	if d == nil {
		return nil, false, nil
	}
	var body, lang string
	for _, a := range d.Args {
		de := a.GetDefElem()
		if de == nil {
			continue
		}
		switch de.Defname {
		case "as":
			body = de.Arg.GetString_().GetSval()
		case "language":
			lang = de.Arg.GetString_().GetSval()
		}
	}
	if lang != "" && !strings.EqualFold(lang, "plpgsql") {
		return nil, true, unsupported("DO in the language %s", lang)
	}
	tag := "tandem_do"
	for strings.Contains(body, "$"+tag+"$") {
		tag += "_"
	}
	js, err := pg_query.ParsePlPgSqlToJSON("CREATE FUNCTION _tandem_do() RETURNS void LANGUAGE plpgsql AS $" + tag + "$" + body + "$" + tag + "$")
	if err != nil {
		if strings.Contains(err.Error(), "unrecognized exception condition") {
			return nil, true, &pgwire.Error{Code: "42704", Message: err.Error()}
		}
		return nil, true, pgwire.Errorf(pgwire.CodeSyntax, "DO: %v", err)
	}
	var fns []struct {
		Fn struct {
			Datums []json.RawMessage `json:"datums"`
			Action struct {
				Block plBlock `json:"PLpgSQL_stmt_block"`
			} `json:"action"`
		} `json:"PLpgSQL_function"`
	}
	if err := json.Unmarshal([]byte(js), &fns); err != nil || len(fns) != 1 {
		return nil, true, pgwire.Errorf(pgwire.CodeSyntax, "DO: cannot read the block")
	}
	if len(fns[0].Fn.Datums) > 3 { // found, sqlstate, sqlerrm: PL/pgSQL's own
		return nil, true, unsupported("variables in a DO block (DECLARE)")
	}
	// The function's body is the DO block, then an implicit RETURN.
	items, err := convertItemsIn(fns[0].Fn.Action.Block.Body, nil)
	if err != nil {
		return nil, true, err
	}
	if len(items) == 1 && items[0].Block != nil {
		return items[0].Block, true, nil
	}
	// A block without handlers is the function's own.
	return &DoBlock{Body: items}, true, nil
}

type plExpr struct {
	Expr struct {
		Query string `json:"query"`
	} `json:"PLpgSQL_expr"`
}

type plBlock struct {
	Body       []map[string]json.RawMessage `json:"body"`
	Exceptions struct {
		Block struct {
			List []struct {
				Exc struct {
					Conditions []struct {
						Cond struct {
							Name string `json:"condname"`
						} `json:"PLpgSQL_condition"`
					} `json:"conditions"`
					Action []map[string]json.RawMessage `json:"action"`
				} `json:"PLpgSQL_exception"`
			} `json:"exc_list"`
		} `json:"PLpgSQL_exception_block"`
	} `json:"exceptions"`
}

// convertItemsIn converts a PL/pgSQL body; datums names the function's
// variables by number (nil in a DO block, which has none).
func convertItemsIn(list []map[string]json.RawMessage, datums []string) ([]DoItem, error) {
	convertItems := func(l []map[string]json.RawMessage) ([]DoItem, error) { return convertItemsIn(l, datums) }
	where := "a DO block"
	if datums != nil {
		where = "a function"
	}
	var out []DoItem
	for _, m := range list {
		for kind, raw := range m {
			switch kind {
			case "PLpgSQL_stmt_execsql":
				var x struct {
					SQL    plExpr `json:"sqlstmt"`
					Into   bool   `json:"into"`
					Target struct {
						Row *struct {
							Fields []struct {
								Name string `json:"name"`
							} `json:"fields"`
						} `json:"PLpgSQL_row"`
						Var *struct {
							Refname string `json:"refname"`
						} `json:"PLpgSQL_var"`
					} `json:"target"`
				}
				if err := json.Unmarshal(raw, &x); err != nil {
					return nil, err
				}
				it := DoItem{SQL: x.SQL.Expr.Query}
				if x.Into {
					switch {
					case datums == nil:
						return nil, unsupported("SELECT ... INTO in a DO block")
					case x.Target.Row != nil && len(x.Target.Row.Fields) == 1:
						it.Into = x.Target.Row.Fields[0].Name
					case x.Target.Var != nil:
						it.Into = x.Target.Var.Refname
					default:
						return nil, unsupported("INTO several variables in a function")
					}
				}
				out = append(out, it)
			case "PLpgSQL_stmt_getdiag":
				var x struct {
					Items []struct {
						Item struct {
							Kind   string `json:"kind"`
							Target int    `json:"target"`
						} `json:"PLpgSQL_diag_item"`
					} `json:"diag_items"`
				}
				if err := json.Unmarshal(raw, &x); err != nil {
					return nil, err
				}
				if datums == nil {
					return nil, unsupported("GET DIAGNOSTICS in a DO block")
				}
				var it DoItem
				for _, d := range x.Items {
					if d.Item.Target < 0 || d.Item.Target >= len(datums) || datums[d.Item.Target] == "" {
						return nil, unsupported("GET DIAGNOSTICS into this target")
					}
					it.Diag = append(it.Diag, DoDiag{Var: datums[d.Item.Target], Item: d.Item.Kind})
				}
				out = append(out, it)
			case "PLpgSQL_stmt_if":
				var x struct {
					Cond   plExpr                       `json:"cond"`
					Then   []map[string]json.RawMessage `json:"then_body"`
					Elsifs []struct {
						E struct {
							Cond plExpr                       `json:"cond"`
							Body []map[string]json.RawMessage `json:"stmts"`
						} `json:"PLpgSQL_if_elsif"`
					} `json:"elsif_list"`
					Else []map[string]json.RawMessage `json:"else_body"`
				}
				if err := json.Unmarshal(raw, &x); err != nil {
					return nil, err
				}
				in := &DoIf{}
				then, err := convertItems(x.Then)
				if err != nil {
					return nil, err
				}
				in.Conds, in.Bodies = append(in.Conds, x.Cond.Expr.Query), append(in.Bodies, then)
				for _, e := range x.Elsifs {
					b, err := convertItems(e.E.Body)
					if err != nil {
						return nil, err
					}
					in.Conds, in.Bodies = append(in.Conds, e.E.Cond.Expr.Query), append(in.Bodies, b)
				}
				if in.Else, err = convertItems(x.Else); err != nil {
					return nil, err
				}
				out = append(out, DoItem{If: in})
			case "PLpgSQL_stmt_block":
				var x plBlock
				if err := json.Unmarshal(raw, &x); err != nil {
					return nil, err
				}
				b := &DoBlock{}
				var err error
				if b.Body, err = convertItems(x.Body); err != nil {
					return nil, err
				}
				for _, e := range x.Exceptions.Block.List {
					h := DoHandler{}
					for _, c := range e.Exc.Conditions {
						name := strings.ToLower(c.Cond.Name)
						code, known := conditionCodes[name]
						if !known {
							if len(name) != 5 {
								return nil, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("unrecognized exception condition %q", c.Cond.Name)}
							}
							code = strings.ToUpper(name) // WHEN SQLSTATE '42710'
						}
						h.Codes = append(h.Codes, code)
					}
					if h.Body, err = convertItems(e.Exc.Action); err != nil {
						return nil, err
					}
					b.Handlers = append(b.Handlers, h)
				}
				out = append(out, DoItem{Block: b})
			case "PLpgSQL_stmt_raise":
				var x struct {
					Level   int               `json:"elog_level"`
					Code    string            `json:"condname"`
					Message string            `json:"message"`
					Params  []json.RawMessage `json:"params"`
				}
				if err := json.Unmarshal(raw, &x); err != nil {
					return nil, err
				}
				if len(x.Params) > 0 {
					return nil, unsupported("RAISE with parameters in %s", where)
				}
				r := &DoRaise{Error: x.Level >= 21, Message: x.Message, Code: "P0001"}
				if c, ok := conditionCodes[strings.ToLower(x.Code)]; ok && c != "" {
					r.Code = c
				}
				out = append(out, DoItem{Raise: r})
			case "PLpgSQL_stmt_return":
				// the implicit RETURN after the block
			default:
				return nil, unsupported("%s in %s", strings.TrimPrefix(kind, "PLpgSQL_stmt_"), where)
			}
		}
	}
	return out, nil
}
