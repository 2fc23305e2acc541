package sqlpg

import (
	"errors"
	"fmt"
	"strings"
)

// ALTER TABLE ... ALTER COLUMN on SQLite. SQLite cannot alter a column, but
// its documentation allows editing a table's CREATE statement in
// sqlite_master (PRAGMA writable_schema) for changes that leave the stored
// rows as they are: adding or removing NOT NULL (after checking no row holds
// NULL) and setting or dropping DEFAULT. The new text is computed inside
// the statement that stores it (_tandem_alter_column, a function of the old
// text), so two sessions altering one table never overwrite each other's
// change with a text read earlier; a table created and dropped in the same
// script then bumps the schema cookie, so every other connection reloads
// the schema (the editing one resets its own with writable_schema = RESET).

// ErrAlterColumn is wrapped by AlterColumnSQL's refusals.
var ErrAlterColumn = errors.New("cannot alter the column")

// Column alterations AlterColumnSQL knows.
const (
	AlterSetNotNull  = "set_not_null"
	AlterDropNotNull = "drop_not_null"
	AlterSetDefault  = "set_default"  // arg: the SQLite expression
	AlterDropDefault = "drop_default" //
	AlterSetType     = "set_type"     // arg: the SQLite declared type
	// AlterSetEnumCheck: the column's enum CHECK (_tandem_enum_ok) is
	// replaced by arg (its new CHECK text, or "" for none).
	AlterSetEnumCheck = "set_enum_check"
	// AlterSetLimitCheck: the column's type-limit CHECK (limitCheck) is
	// replaced by arg (its new text, or "" for none).
	AlterSetLimitCheck = "set_limit_check"
	// Table-level (col is empty): add a table constraint (arg: its SQLite
	// text), drop the constraint named arg (a no-op when it is not in the
	// text: a UNIQUE constraint is an index).
	AlterAddConstraint  = "add_constraint"
	AlterDropConstraint = "drop_constraint"
	// AlterDropReferences (table-level): remove every foreign key to the
	// table named arg (DROP TABLE arg CASCADE).
	AlterDropReferences = "drop_references"
)

// alterColumnScript is what the translator emits for one alteration of
// column col of table: check (may be empty) runs first.
func alterColumnScript(table, col, action, arg, check string) []string {
	var out []string
	if check != "" {
		out = append(out, check)
	}
	a := "NULL"
	if action == AlterSetDefault || action == AlterSetType || action == AlterSetEnumCheck || action == AlterSetLimitCheck || action == AlterAddConstraint || action == AlterDropConstraint || action == AlterDropReferences {
		a = quoteLit(arg)
	}
	return append(out,
		"PRAGMA writable_schema = ON",
		fmt.Sprintf("UPDATE sqlite_master SET sql = _tandem_alter_column(sql, %s, %s, %s) WHERE type = 'table' AND name = %s",
			quoteLit(col), quoteLit(action), a, quoteLit(table)),
		"PRAGMA writable_schema = RESET",
		`CREATE TABLE "_tandem_schema_bump" (x)`,
		`DROP TABLE "_tandem_schema_bump"`)
}

// AlterColumnSQL returns create (a table's CREATE TABLE text as SQLite
// stores it) with column col altered by action.
func AlterColumnSQL(create, col, action, arg string) (string, error) {
	open := strings.IndexByte(create, '(')
	if open < 0 {
		return "", fmt.Errorf("%w: no column list in %q", ErrAlterColumn, create)
	}
	items, err := splitTop(create[open+1:])
	if err != nil {
		return "", err
	}
	switch action {
	case AlterAddConstraint:
		last := open + 1 + items[len(items)-1][1] // the closing parenthesis
		return NameChecks(create[:last] + ", " + arg + create[last:]), nil
	case AlterDropConstraint:
		if out := dropConstraint(create, open, items, arg); out != create {
			return out, nil
		}
		if out := dropDefaultNamedFK(create, open, items, arg); out != create {
			return out, nil
		}
		return dropCheck(create, arg), nil
	case AlterDropReferences:
		// One reference at a time, then the column list again.
		for range 1000 {
			next := dropReference(create, open, items, arg)
			if next == create {
				return create, nil
			}
			create = next
			if items, err = splitTop(create[open+1:]); err != nil {
				return "", err
			}
		}
		return "", fmt.Errorf("%w: too many references to %q", ErrAlterColumn, arg)
	}
	// items[i] = [start, end) offsets into create.
	for _, it := range items {
		start, end := open+1+it[0], open+1+it[1]
		def := create[start:end]
		toks := tokens(def)
		if len(toks) == 0 || !identIs(toks[0].text, col) {
			continue
		}
		nd, err := alterDef(def, toks, action, arg)
		if err != nil {
			return "", err
		}
		return create[:start] + nd + create[end:], nil
	}
	return "", fmt.Errorf("%w: column %q not found", ErrAlterColumn, col)
}

// dropConstraint removes the constraint named name: a table-level item
// (with the comma before it), or a named constraint inside a column
// definition (up to the next constraint of that column).
func dropConstraint(create string, open int, items [][2]int, name string) string {
	for i, it := range items {
		start, end := open+1+it[0], open+1+it[1]
		toks := tokens(create[start:end])
		for j := 0; j+1 < len(toks); j++ {
			if !strings.EqualFold(toks[j].text, "CONSTRAINT") || !identIs(toks[j+1].text, name) {
				continue
			}
			if j == 0 { // a table constraint: the whole item
				if i > 0 {
					start = open + 1 + items[i-1][1] // from the comma before it
				}
				return create[:start] + create[end:]
			}
			from := j + 2
			if j+2 < len(toks) && strings.EqualFold(toks[j+2].text, "REFERENCES") {
				from = j + 3
			}
			return cutClause(create, start, end, toks, j, from)
		}
	}
	return create
}

// cutClause removes a column's constraint clause that starts at token j
// (of toks, the tokens of create[start:end]) and runs up to the column's
// next constraint, looked for from token from on.
func cutClause(create string, start, end int, toks []token, j, from int) string {
	stop := len(toks)
	// toks[from] is the clause's own keyword (CHECK of CONSTRAINT c CHECK
	// (...)) or the referenced table: the next clause starts after it.
	for m := from + 1; m < len(toks); m++ {
		w := strings.ToUpper(toks[m].text)
		if strings.EqualFold(toks[m-1].text, "SET") {
			continue // ON DELETE SET NULL | SET DEFAULT
		}
		if w == "CONSTRAINT" || w == "PRIMARY" || w == "UNIQUE" || w == "CHECK" || w == "DEFAULT" || w == "COLLATE" || w == "GENERATED" || w == "REFERENCES" ||
			(w == "NOT" && m+1 < len(toks) && strings.EqualFold(toks[m+1].text, "NULL")) || (w == "NULL" && !strings.EqualFold(toks[m-1].text, "NOT")) {
			stop = m
			break
		}
	}
	cutEnd := end
	if stop < len(toks) {
		cutEnd = start + toks[stop].start
	}
	s := start + toks[j].start
	for s > start && (create[s-1] == ' ' || create[s-1] == '\t') {
		s--
	}
	if stop < len(toks) {
		return create[:s] + " " + create[cutEnd:]
	}
	return create[:s] + create[cutEnd:]
}

// dropReference removes the first foreign key to table: a table-level
// FOREIGN KEY item (with the comma before it), or the REFERENCES clause
// of a column (with its CONSTRAINT name, up to the column's next
// constraint). It returns create unchanged when there is none.
func dropReference(create string, open int, items [][2]int, table string) string {
	return dropReferenceWhere(create, open, items, func(toks []token, k int) bool { return identIs(toks[k+1].text, table) })
}

// dropDefaultNamedFK removes the foreign key without a CONSTRAINT name
// that the catalog calls <table>_<column>_fkey (PostgreSQL's default name,
// which a migration tool reads back and drops by).
func dropDefaultNamedFK(create string, open int, items [][2]int, name string) string {
	head := tokens(create[:open])
	if len(head) == 0 {
		return create
	}
	table := unquoteIdent(head[len(head)-1].text)
	named := func(col string) bool { return strings.EqualFold(table+"_"+unquoteIdent(col)+"_fkey", name) }
	return dropReferenceWhere(create, open, items, func(toks []token, k int) bool {
		if k >= 2 && strings.EqualFold(toks[k-2].text, "CONSTRAINT") {
			return false // named: dropped by its name
		}
		if strings.EqualFold(toks[0].text, "FOREIGN") && len(toks) > 2 {
			g := strings.TrimSpace(toks[2].text)
			return len(g) > 2 && !strings.Contains(g, ",") && named(strings.TrimSpace(g[1:len(g)-1]))
		}
		if strings.EqualFold(toks[0].text, "CONSTRAINT") {
			return false
		}
		return named(toks[0].text)
	})
}

func unquoteIdent(tok string) string {
	if len(tok) >= 2 && (tok[0] == '"' || tok[0] == '`') {
		return strings.ReplaceAll(tok[1:len(tok)-1], tok[:1]+tok[:1], tok[:1])
	}
	return tok
}

// dropReferenceWhere removes the first REFERENCES clause (or table-level
// FOREIGN KEY item) that match accepts (toks: its item's tokens, k: the
// REFERENCES token).
func dropReferenceWhere(create string, open int, items [][2]int, match func(toks []token, k int) bool) string {
	for i, it := range items {
		start, end := open+1+it[0], open+1+it[1]
		toks := tokens(create[start:end])
		for k := 0; k+1 < len(toks); k++ {
			if !strings.EqualFold(toks[k].text, "REFERENCES") || !match(toks, k) {
				continue
			}
			if w := strings.ToUpper(toks[0].text); w == "FOREIGN" || w == "CONSTRAINT" && len(toks) > 2 && strings.EqualFold(toks[2].text, "FOREIGN") {
				if i > 0 {
					start = open + 1 + items[i-1][1] // from the comma before it
				}
				return create[:start] + create[end:]
			}
			j := k
			if k >= 2 && strings.EqualFold(toks[k-2].text, "CONSTRAINT") {
				j = k - 2
			}
			from := k + 1 // REFERENCES t: the next clause starts after t
			if k+2 < len(toks) && strings.HasPrefix(toks[k+2].text, "(") {
				from = k + 2 // REFERENCES t (cols)
			}
			return cutClause(create, start, end, toks, j, from)
		}
	}
	return create
}

// alterDef rewrites one column definition.
func alterDef(def string, toks []token, action, arg string) (string, error) {
	if strip, ok := map[string]func(string) string{AlterSetEnumCheck: stripEnumCheck, AlterSetLimitCheck: stripLimitCheck}[action]; ok {
		def = strip(def)
		if arg != "" {
			def = strings.TrimRight(def, " \t\n") + " " + arg
		}
		return def, nil
	}
	// Remove spans in reverse order so offsets stay valid.
	var cut [][2]int
	notNull, dflt := -1, -1
	for i := 1; i < len(toks); i++ {
		w := strings.ToUpper(toks[i].text)
		switch {
		case w == "NOT" && i+1 < len(toks) && strings.EqualFold(toks[i+1].text, "NULL"):
			notNull = i
		case w == "DEFAULT" && i+1 < len(toks):
			dflt = i
		}
	}
	out := def
	switch action {
	case AlterSetType:
		if len(toks) < 2 {
			return "", fmt.Errorf("%w: column %s has no declared type", ErrAlterColumn, toks[0].text)
		}
		if strings.EqualFold(toks[1].text, "INTEGER") && len(toks) > 2 && strings.EqualFold(toks[2].text, "PRIMARY") {
			if strings.EqualFold(arg, "INTEGER") {
				return def, nil // the rowid alias stays one
			}
			return "", fmt.Errorf("%w: %s is the table's rowid (an integer primary key); its type stays an integer", ErrAlterColumn, toks[0].text)
		}
		return def[:toks[1].start] + arg + def[toks[1].end:], nil
	case AlterDropNotNull:
		if notNull < 0 {
			return def, nil
		}
		from := notNull
		if from >= 3 && strings.EqualFold(toks[from-2].text, "CONSTRAINT") {
			from -= 2 // CONSTRAINT name NOT NULL
		}
		cut = append(cut, [2]int{toks[from].start, toks[notNull+1].end})
	case AlterSetNotNull:
		if notNull >= 0 {
			return def, nil
		}
		return strings.TrimRight(def, " \t\n") + " NOT NULL", nil
	case AlterDropDefault, AlterSetDefault:
		if dflt >= 0 {
			end := toks[dflt+1].end
			if (toks[dflt+1].text == "-" || toks[dflt+1].text == "+") && dflt+2 < len(toks) {
				end = toks[dflt+2].end
			}
			cut = append(cut, [2]int{toks[dflt].start, end})
		}
	default:
		return "", fmt.Errorf("%w: unknown alteration %q", ErrAlterColumn, action)
	}
	for i := len(cut) - 1; i >= 0; i-- {
		s, e := cut[i][0], cut[i][1]
		for s > 0 && (out[s-1] == ' ' || out[s-1] == '\t') {
			s--
		}
		out = out[:s] + out[e:]
	}
	if action == AlterSetDefault {
		out = strings.TrimRight(out, " \t\n") + " DEFAULT (" + arg + ")"
	}
	return out, nil
}

// identIs reports whether an identifier token names col: quoted exactly,
// bare case-insensitively (as SQLite compares names).
func identIs(tok, col string) bool {
	if len(tok) >= 2 {
		switch tok[0] {
		case '"':
			return strings.EqualFold(strings.ReplaceAll(tok[1:len(tok)-1], `""`, `"`), col)
		case '`':
			return strings.EqualFold(strings.ReplaceAll(tok[1:len(tok)-1], "``", "`"), col)
		case '[':
			return strings.EqualFold(tok[1:len(tok)-1], col)
		}
	}
	return strings.EqualFold(tok, col)
}

// splitTop splits a column list (the text after CREATE TABLE's opening
// parenthesis) at its top-level commas, up to the closing parenthesis;
// it returns the items' offsets.
func splitTop(s string) ([][2]int, error) {
	var out [][2]int
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"', '`':
			j := i + 1
			for j < len(s) {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			i = j
		case '[':
			for i < len(s) && s[i] != ']' {
				i++
			}
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return append(out, [2]int{start, i}), nil
			}
			depth--
		case ',':
			if depth == 0 {
				out = append(out, [2]int{start, i})
				start = i + 1
			}
		}
	}
	return nil, fmt.Errorf("%w: unterminated column list", ErrAlterColumn)
}

type token struct {
	text       string
	start, end int
}

// tokens splits a column definition into words, quoted names and strings,
// parenthesised groups and single punctuation characters.
func tokens(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(s) {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j < len(s) {
				j++
			}
			out = append(out, token{s[i:j], i, j})
			i = j
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				j = len(s) - i - 1
			}
			out = append(out, token{s[i : i+j+1], i, i + j + 1})
			i += j + 1
		case c == '(':
			depth, j := 0, i
			for ; j < len(s); j++ {
				if s[j] == '(' {
					depth++
				} else if s[j] == ')' {
					depth--
					if depth == 0 {
						break
					}
				} else if s[j] == '\'' || s[j] == '"' {
					q := s[j]
					for j++; j < len(s) && s[j] != q; j++ {
					}
				}
			}
			if j < len(s) {
				j++
			}
			out = append(out, token{s[i:j], i, j})
			i = j
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			out = append(out, token{s[i:j], i, j})
			i = j
		default:
			out = append(out, token{s[i : i+1], i, i + 1})
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// ConstraintName returns the name a CREATE TABLE text gives (CONSTRAINT
// name) to its primary key (kind "p"), a UNIQUE constraint ("u") or a
// foreign key ("f") on the columns cols (comma-separated, in order), or
// "" when it gives none: SQLite keeps no constraint names, and the catalog
// otherwise makes PostgreSQL's default ones (ORMs compare the names they
// gave: TypeORM's FK_..., UQ_..., PK_...).
func ConstraintName(create, kind, cols string) string {
	open := strings.IndexByte(create, '(')
	if open < 0 {
		return ""
	}
	items, err := splitTop(create[open+1:])
	if err != nil {
		return ""
	}
	want := strings.Split(cols, ",")
	same := func(group string) bool { return sameColumnList(strings.TrimSpace(group), want) }
	kindOf := func(w string) string {
		switch strings.ToUpper(w) {
		case "PRIMARY":
			return "p"
		case "UNIQUE":
			return "u"
		case "FOREIGN", "REFERENCES":
			return "f"
		}
		return ""
	}
	unquote := func(tok string) string {
		if len(tok) >= 2 && (tok[0] == '"' || tok[0] == '`') {
			return strings.ReplaceAll(tok[1:len(tok)-1], tok[:1]+tok[:1], tok[:1])
		}
		return tok
	}
	for _, it := range items {
		toks := tokens(create[open+1+it[0] : open+1+it[1]])
		if len(toks) < 3 {
			continue
		}
		if strings.EqualFold(toks[0].text, "CONSTRAINT") {
			// A table constraint: CONSTRAINT n PRIMARY KEY (..) | UNIQUE
			// (..) | FOREIGN KEY (..) REFERENCES ...
			k := kindOf(toks[2].text)
			g := 3
			if k == "p" || k == "f" {
				g = 4
			}
			if k == kind && g < len(toks) && same(toks[g].text) {
				return unquote(toks[1].text)
			}
			continue
		}
		if kindOf(toks[0].text) != "" || strings.EqualFold(toks[0].text, "CHECK") {
			continue // an unnamed table constraint
		}
		// A column: its own constraints apply to it alone.
		if len(want) != 1 || !identIs(toks[0].text, strings.TrimSpace(want[0])) {
			continue
		}
		for j := 1; j+2 < len(toks); j++ {
			if strings.EqualFold(toks[j].text, "CONSTRAINT") && kindOf(toks[j+2].text) == kind {
				return unquote(toks[j+1].text)
			}
		}
	}
	return ""
}

// FKDeferral reads from a CREATE TABLE text whether the foreign key on
// cols (comma-separated) is DEFERRABLE (1) and INITIALLY DEFERRED too
// (3), or neither (0): SQLite keeps the clause in the text only.
func FKDeferral(create, cols string) int {
	open := strings.IndexByte(create, '(')
	if open < 0 {
		return 0
	}
	items, err := splitTop(create[open+1:])
	if err != nil {
		return 0
	}
	want := strings.Split(cols, ",")
	same := func(group string) bool { return sameColumnList(group, want) }
	// deferral reads the clause's words after REFERENCES, up to the next
	// constraint of a column.
	deferral := func(toks []token) int {
		d := 0
		for j := 0; j < len(toks); j++ {
			w := strings.ToUpper(toks[j].text)
			next := ""
			if j+1 < len(toks) {
				next = strings.ToUpper(toks[j+1].text)
			}
			prev := ""
			if j > 0 {
				prev = strings.ToUpper(toks[j-1].text)
			}
			switch {
			case w == "CONSTRAINT" || w == "PRIMARY" || w == "UNIQUE" || w == "CHECK" || (w == "DEFAULT" && prev != "SET") || w == "COLLATE" ||
				w == "GENERATED" || w == "REFERENCES" || (w == "NOT" && next == "NULL"):
				return d
			case w == "NOT" && next == "DEFERRABLE":
				d = 0
				j++
			case w == "DEFERRABLE":
				d |= 1
			case w == "INITIALLY" && next == "DEFERRED":
				d |= 2
				j++
			case w == "INITIALLY" && next == "IMMEDIATE":
				d &^= 2
				j++
			}
		}
		return d
	}
	for _, it := range items {
		toks := tokens(create[open+1+it[0] : open+1+it[1]])
		if len(toks) < 3 {
			continue
		}
		k := 0
		if strings.EqualFold(toks[0].text, "CONSTRAINT") {
			k = 2
		}
		if k+2 < len(toks) && strings.EqualFold(toks[k].text, "FOREIGN") {
			if !same(toks[k+2].text) {
				continue
			}
			for j := k + 3; j < len(toks); j++ {
				if strings.EqualFold(toks[j].text, "REFERENCES") {
					return deferral(toks[j+1:])
				}
			}
			continue
		}
		if k > 0 || strings.EqualFold(toks[0].text, "PRIMARY") || strings.EqualFold(toks[0].text, "UNIQUE") || strings.EqualFold(toks[0].text, "CHECK") {
			continue
		}
		if len(want) != 1 || !identIs(toks[0].text, strings.TrimSpace(want[0])) {
			continue
		}
		for j := 1; j < len(toks); j++ {
			if strings.EqualFold(toks[j].text, "REFERENCES") {
				return deferral(toks[j+1:])
			}
		}
	}
	return 0
}

// stripLimitCheck removes a column definition's type-limit constraint
// (CONSTRAINT "_tandem_lim_..." CHECK (...)).
func stripLimitCheck(def string) string {
	i := strings.Index(def, `CONSTRAINT "`+limitPrefix)
	if i < 0 {
		return def
	}
	c := strings.Index(def[i:], "CHECK (")
	if c < 0 {
		return def
	}
	return cutCheck(def, i, i+c)
}

// stripEnumCheck removes a column definition's enum CHECK
// (CHECK (_tandem_enum_ok(...))).
func stripEnumCheck(def string) string {
	i := strings.Index(def, "CHECK (_tandem_enum_ok(")
	if i < 0 {
		return def
	}
	return cutCheck(def, i, i)
}

// cutCheck removes def[from:] up to the end of the CHECK (...) at check
// (quotes and parentheses balanced), with the blanks before from.
func cutCheck(def string, from, check int) string {
	depth, in, inIdent := 0, false, false
	for j := check + len("CHECK "); j < len(def); j++ {
		switch c := def[j]; {
		case c == '\'' && !inIdent:
			in = !in
		case c == '"' && !in:
			inIdent = !inIdent
		case in || inIdent:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				start := from
				for start > 0 && (def[start-1] == ' ' || def[start-1] == '\t') {
					start--
				}
				return def[:start] + def[j+1:]
			}
		}
	}
	return def
}

// sameColumnList: group, a parenthesised column list of a table's text,
// names the columns of want in order.
func sameColumnList(group string, want []string) bool {
	if len(group) < 2 || group[0] != '(' {
		return false
	}
	got := strings.Split(group[1:len(group)-1], ",")
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !identIs(strings.TrimSpace(got[i]), strings.TrimSpace(want[i])) {
			return false
		}
	}
	return true
}
