package sqlite

import (
	"regexp"
	"strconv"
	"strings"
)

// Parameter type inference. SQLite has no parameter types, but drivers
// encode values by the types the server reports in ParameterDescription
// (a []byte as bytea, an int as int8). Like PostgreSQL, we infer a
// parameter's type from the column it is compared with or assigned to;
// where nothing says, the type stays unspecified (0) and the client sends
// text, which SQLite's column affinity converts.

var (
	reTables    = regexp.MustCompile(`(?i)\b(?:FROM|JOIN|INTO|UPDATE)\s+("?[A-Za-z_][A-Za-z0-9_]*"?)`)
	reWord      = regexp.MustCompile(`^\s+([A-Za-z_][A-Za-z0-9_]*)`)
	reColParam  = regexp.MustCompile(`(?i)(?:([A-Za-z_][A-Za-z0-9_]*)\.)?("?[A-Za-z_][A-Za-z0-9_]*"?)\s*(?:=|<>|!=|<=|>=|<|>|\bLIKE\b|\bIN\s*\()\s*\$(\d+)`)
	reParamCol  = regexp.MustCompile(`(?i)\$(\d+)\s*(?:=|<>|!=|<=|>=|<|>)\s*(?:([A-Za-z_][A-Za-z0-9_]*)\.)?("?[A-Za-z_][A-Za-z0-9_]*"?)`)
	reLimit     = regexp.MustCompile(`(?i)\b(?:LIMIT|OFFSET)\s+\$(\d+)`)
	reInsert    = regexp.MustCompile(`(?is)^\s*(?:INSERT|REPLACE)\s+(?:OR\s+\w+\s+)?INTO\s+("?[A-Za-z_][A-Za-z0-9_]*"?)\s*(?:\(([^)]*)\))?\s*VALUES\s*\((.*)\)\s*(?:ON\s+CONFLICT.*|RETURNING.*)?;?\s*$`)
	reParamOnly = regexp.MustCompile(`^\s*\$(\d+)\s*$`)
)

var keywords = map[string]bool{"AND": true, "OR": true, "NOT": true, "WHERE": true, "SET": true, "ON": true, "THEN": true, "WHEN": true, "ELSE": true, "SELECT": true, "BY": true,
	"JOIN": true, "LEFT": true, "RIGHT": true, "INNER": true, "OUTER": true, "CROSS": true, "NATURAL": true, "USING": true, "GROUP": true, "ORDER": true,
	"LIMIT": true, "OFFSET": true, "VALUES": true, "DEFAULT": true, "RETURNING": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "HAVING": true, "WINDOW": true}

// inferParams returns one OID per parameter (0 where unknown). columns
// gives a table's declared column types (lower-case names).
func inferParams(sql string, n int, columns func(table string) map[string]string) []uint32 {
	oids := make([]uint32, n)
	if n == 0 {
		return oids
	}
	set := func(idx string, decl string) {
		i, err := strconv.Atoi(idx)
		if err != nil || i < 1 || i > n || oids[i-1] != 0 || decl == "" {
			return
		}
		oids[i-1] = oidForDecl(decl)
	}
	unq := func(s string) string { return strings.ToLower(strings.Trim(s, `"`)) }
	aliases := map[string]string{}
	var tables []string
	for _, loc := range reTables.FindAllStringSubmatchIndex(sql, -1) {
		t := unq(sql[loc[2]:loc[3]])
		tables = append(tables, t)
		aliases[t] = t
		rest := sql[loc[1]:]
		w := reWord.FindStringSubmatch(rest)
		if w != nil && strings.EqualFold(w[1], "AS") {
			w = reWord.FindStringSubmatch(rest[len(w[0]):])
		}
		if w != nil && !keywords[strings.ToUpper(w[1])] {
			aliases[strings.ToLower(w[1])] = t
		}
	}
	lookup := func(alias, col string) string {
		col = unq(col)
		if alias != "" {
			if t, ok := aliases[strings.ToLower(alias)]; ok {
				return columns(t)[col]
			}
			return ""
		}
		for _, t := range tables {
			if d, ok := columns(t)[col]; ok {
				return d
			}
		}
		return ""
	}
	if m := reInsert.FindStringSubmatch(sql); m != nil {
		table := unq(m[1])
		cols := columns(table)
		var names []string
		if m[2] != "" {
			for _, c := range strings.Split(m[2], ",") {
				names = append(names, unq(strings.TrimSpace(c)))
			}
		} else {
			names = orderedColumns(table, columns)
		}
		for i, v := range splitTopLevel(m[3]) {
			if pm := reParamOnly.FindStringSubmatch(v); pm != nil && i < len(names) {
				set(pm[1], cols[names[i]])
			}
		}
	}
	for _, m := range reColParam.FindAllStringSubmatch(sql, -1) {
		if keywords[strings.ToUpper(unq(m[2]))] {
			continue
		}
		set(m[3], lookup(m[1], m[2]))
	}
	for _, m := range reParamCol.FindAllStringSubmatch(sql, -1) {
		set(m[1], lookup(m[2], m[3]))
	}
	for _, m := range reLimit.FindAllStringSubmatch(sql, -1) {
		set(m[1], "INTEGER")
	}
	return oids
}

// orderedColumns needs the declaration order; columns() maps carry it in
// the special key "\x00order" as a comma-separated list.
func orderedColumns(table string, columns func(string) map[string]string) []string {
	o := columns(table)["\x00order"]
	if o == "" {
		return nil
	}
	return strings.Split(o, ",")
}

// splitTopLevel splits a VALUES list at commas outside parentheses/quotes.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
