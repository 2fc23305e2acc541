package sqlpg

import (
	"strings"
)

// CheckConstraint is one CHECK constraint of a table, read from the CREATE
// TABLE text SQLite keeps (which has no names for unnamed constraints).
type CheckConstraint struct {
	// Name is the name given, else the one PostgreSQL would choose:
	// table_column_check for a column's constraint or one reading a
	// single column, table_check otherwise, numbered when taken.
	Name string
	// Group is the expression with its parentheses, as stored.
	Group string
	// Cols are the table's columns the expression reads.
	Cols []string
	// start, end: the clause's bytes in the CREATE TABLE text, with its
	// CONSTRAINT name (a table-level item from the comma before it).
	start, end int
	at         int  // the offset of its CHECK keyword
	named      bool // the text names it
}

// CheckConstraints lists the CHECK constraints of a CREATE TABLE text, in
// the order they are declared.
func CheckConstraints(create string) []CheckConstraint {
	open := strings.IndexByte(create, '(')
	if open < 0 {
		return nil
	}
	items, err := splitTop(create[open+1:])
	if err != nil {
		return nil
	}
	head := tokens(create[:open])
	if len(head) == 0 {
		return nil
	}
	table := unquoteIdent(head[len(head)-1].text)
	isKeyword := func(w string) bool {
		switch strings.ToUpper(w) {
		case "CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN":
			return true
		}
		return false
	}
	var cols []string
	for _, it := range items {
		toks := tokens(create[open+1+it[0] : open+1+it[1]])
		if len(toks) > 0 && !isKeyword(toks[0].text) {
			cols = append(cols, unquoteIdent(toks[0].text))
		}
	}
	var out []CheckConstraint
	explicit := map[string]bool{}
	for i, it := range items {
		base := open + 1 + it[0]
		toks := tokens(create[base : open+1+it[1]])
		if len(toks) == 0 {
			continue
		}
		tableLevel := isKeyword(toks[0].text)
		for j := 0; j+1 < len(toks); j++ {
			if !strings.EqualFold(toks[j].text, "CHECK") || !strings.HasPrefix(toks[j+1].text, "(") {
				continue
			}
			if strings.HasPrefix(toks[j+1].text, "(_tandem_") {
				continue // tandem's own (an enum column's values): not a constraint of the user's
			}
			if j >= 2 && strings.EqualFold(toks[j-2].text, "CONSTRAINT") && strings.HasPrefix(unquoteIdent(toks[j-1].text), limitPrefix) {
				continue // tandem's own (the column type's limits)
			}
			c := CheckConstraint{Group: toks[j+1].text, start: base + toks[j].start, end: base + toks[j+1].end, at: base + toks[j].start}
			if j >= 2 && strings.EqualFold(toks[j-2].text, "CONSTRAINT") {
				c.Name, c.named = unquoteIdent(toks[j-1].text), true
				c.start = base + toks[j-2].start
				explicit[strings.ToLower(c.Name)] = true
			}
			if tableLevel {
				c.Cols = columnsRead(c.Group, cols)
				if i > 0 {
					c.start = open + 1 + items[i-1][1] // from the comma before it
				}
			} else {
				c.Cols = []string{unquoteIdent(toks[0].text)}
			}
			out = append(out, c)
		}
	}
	taken := map[string]bool{}
	for k := range explicit {
		taken[k] = true
	}
	for i := range out {
		if out[i].Name != "" {
			continue
		}
		base := table + "_check"
		if len(out[i].Cols) == 1 {
			base = table + "_" + out[i].Cols[0] + "_check"
		}
		name := base
		for n := 1; taken[strings.ToLower(name)]; n++ {
			name = base + itoa(n)
		}
		taken[strings.ToLower(name)] = true
		out[i].Name = name
	}
	return out
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// columnsRead are the names among cols that the expression text uses,
// each once, in the order it first uses them (words and quoted names
// outside string literals; a word before "(" is a function's name).
func columnsRead(expr string, cols []string) []string {
	used := map[string]bool{}
	var order []string // first use first, as PostgreSQL's conkey
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '\'':
			j := i + 1
			for j < len(expr) && !(expr[j] == '\'' && (j+1 >= len(expr) || expr[j+1] != '\'')) {
				if expr[j] == '\'' {
					j++
				}
				j++
			}
			i = j + 1
		case c == '"':
			j := strings.IndexByte(expr[i+1:], '"')
			if j < 0 {
				return nil
			}
			order = append(order, strings.ToLower(expr[i+1:i+1+j]))
			i += j + 2
		case isWordByte(c) && c != '.' && !(c >= '0' && c <= '9'):
			j := i
			for j < len(expr) && isWordByte(expr[j]) && expr[j] != '.' {
				j++
			}
			if j < len(expr) && expr[j] == '(' {
				i = j // a function's name
				continue
			}
			order = append(order, strings.ToLower(expr[i:j]))
			i = j
		default:
			i++
		}
	}
	var out []string
	for _, w := range order {
		for _, c := range cols {
			if strings.ToLower(c) == w && !used[w] {
				used[w] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// dropCheck removes the CHECK constraint called name (given or chosen).
func dropCheck(create, name string) string {
	for _, c := range CheckConstraints(create) {
		if strings.EqualFold(c.Name, name) {
			return create[:c.start] + create[c.end:]
		}
	}
	return create
}

// NameChecks gives every unnamed CHECK constraint of a CREATE TABLE text
// the name PostgreSQL would choose, written into the text (CONSTRAINT
// "name" CHECK (...)), so that names stay when other constraints come and
// go, and SQLite's violation errors name the constraint.
func NameChecks(create string) string {
	cs := CheckConstraints(create)
	for i := len(cs) - 1; i >= 0; i-- {
		if !cs[i].named {
			create = create[:cs[i].at] + "CONSTRAINT " + quoteIdent(cs[i].Name) + " " + create[cs[i].at:]
		}
	}
	return create
}

// CheckName is the name PostgreSQL chooses for an unnamed CHECK
// constraint of table reading expr, before numbering: table_column_check
// when it reads one of cols, else table_check.
func CheckName(table, expr string, cols []string) string {
	if read := columnsRead(expr, cols); len(read) == 1 {
		return table + "_" + read[0] + "_check"
	}
	return table + "_check"
}
