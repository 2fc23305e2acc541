package sqlpg

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// An index as PostgreSQL prints it (pg_indexes.indexdef, pg_get_indexdef,
// pg_index.indpred / indexprs), read from the CREATE INDEX text SQLite
// keeps: its expression columns and WHERE predicate are deparsed as
// ruleutils prints them (checkdef.go's subset, else the stored text),
// and the access method the user asked for rides in the column list as
// a comment (methodMarker), as the NULLS ordering does: SQLite builds
// the same b-tree for every method.

// methodMarker keeps an index's access method other than btree.
const methodMarker = "/*tandem:using="

// withMarker puts a comment before the closing parenthesis of the CREATE
// INDEX's column list (SQLite keeps comments there).
func withMarker(sql, comment string) string {
	open, items := indexColumnList(sql)
	if open < 0 || len(items) == 0 {
		return sql
	}
	end := open + 1 + items[len(items)-1][1] // the closing parenthesis
	return sql[:end] + " " + comment + sql[end:]
}

// indexColumnList finds the column list of a CREATE INDEX text: the
// offset of its opening parenthesis and its items (relative to after it).
func indexColumnList(sql string) (int, [][2]int) {
	on := strings.Index(sql, " ON ")
	if on < 0 {
		return -1, nil
	}
	open := strings.IndexByte(sql[on:], '(')
	if open < 0 {
		return -1, nil
	}
	open += on
	items, err := splitTop(sql[open+1:])
	if err != nil {
		return -1, nil
	}
	return open, items
}

// indexMethod is the access method an index was created with.
func indexMethod(sql string) string {
	if i := strings.Index(sql, methodMarker); i >= 0 {
		rest := sql[i+len(methodMarker):]
		if j := strings.Index(rest, "*/"); j > 0 {
			return rest[:j]
		}
	}
	return "btree"
}

// indexItems is the expression of each column-list item of a CREATE
// INDEX text (without its ordering, collation and tandem's comments),
// and the text of its WHERE predicate ("" if none).
func indexItems(sql string) (items []string, pred string) {
	open, list := indexColumnList(sql)
	if open < 0 || len(list) == 0 {
		return nil, ""
	}
	for _, it := range list {
		s := sql[open+1+it[0] : open+1+it[1]]
		if c := strings.Index(s, "/*"); c >= 0 {
			s = s[:c]
		}
		toks := tokens(s)
		end := 0
		for _, tk := range toks {
			u := strings.ToUpper(tk.text)
			if u == "ASC" || u == "DESC" || u == "COLLATE" || u == "NULLS" {
				break
			}
			end = tk.end
		}
		items = append(items, strings.TrimSpace(s[:end]))
	}
	rest := strings.TrimSpace(sql[open+1+list[len(list)-1][1]+1:])
	if len(rest) > 6 && strings.EqualFold(rest[:6], "WHERE ") {
		pred = strings.TrimSpace(rest[6:])
	}
	return items, pred
}

// isColumnItem: the item is a plain column name.
func isColumnItem(item string) bool {
	tree, err := pg_query.Parse("SELECT " + item)
	if err != nil || len(tree.Stmts) != 1 {
		return false
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	return sel != nil && len(sel.TargetList) == 1 && sel.TargetList[0].GetResTarget().GetVal().GetColumnRef() != nil
}

// pgIndexExpr is an index's expression (or predicate) as PostgreSQL
// prints it, else the stored text in parentheses.
func pgIndexExpr(e string, types map[string]uint32) string {
	if out, ok := pgExpr(e, types); ok {
		return out
	}
	if unparen(e) != e || looksLikeFunction(e) {
		return e
	}
	return "(" + e + ")"
}

// looksLikeFunction: s is one function call (ruleutils prints an index
// expression that is not one in parentheses).
func looksLikeFunction(s string) bool {
	i := strings.IndexByte(s, '(')
	if i <= 0 || !strings.HasSuffix(s, ")") {
		return false
	}
	for _, c := range s[:i] {
		if !(c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return unparen(s[i:]) != s[i:]
}

// indexKey is the seq'th (0-based) key of an index as pg_get_indexdef
// prints it in the column list (wrap) or alone: an expression not a
// function call is in parentheses in the list.
func indexKey(sql string, seq int, types map[string]uint32, wrap bool) string {
	items, _ := indexItems(sql)
	if seq < 0 || seq >= len(items) {
		return ""
	}
	out := pgIndexExpr(items[seq], types)
	if wrap && !looksLikeFunction(out) {
		out = "(" + out + ")"
	}
	return out
}

// indexExprs is pg_index.indexprs as pg_get_expr prints it: the
// expression keys, NULL ("") when every key is a column.
func indexExprs(sql string, types map[string]uint32) string {
	items, _ := indexItems(sql)
	var out []string
	for _, it := range items {
		if !isColumnItem(it) {
			out = append(out, pgIndexExpr(it, types))
		}
	}
	return strings.Join(out, ", ")
}

// indexPred is pg_index.indpred as pg_get_expr prints it, "" if none.
func indexPred(sql string, types map[string]uint32) string {
	_, pred := indexItems(sql)
	if pred == "" {
		return ""
	}
	return pgIndexExpr(pred, types)
}
