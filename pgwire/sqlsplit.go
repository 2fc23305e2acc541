package pgwire

import (
	"strings"
	"unicode"
)

// SplitStatements splits a Query message into statements at top-level
// semicolons, respecting quotes, comments, dollar quoting and the
// BEGIN ... END body of CREATE TRIGGER. Empty statements are dropped.
func SplitStatements(sql string) []string {
	var out []string
	start := 0
	depth := 0 // BEGIN..END nesting inside CREATE TRIGGER
	trigger := false
	i := 0
	n := len(sql)
	wordStart := -1
	words := 0 // words seen in the statement
	flushWord := func(end int) {
		if wordStart < 0 {
			return
		}
		word := sql[wordStart:end]
		wordStart = -1
		words++
		if !trigger && words > 4 {
			return // CREATE [TEMP] TRIGGER is in a statement's first words
		}
		w := strings.ToUpper(word)
		if !trigger {
			head := strings.ToUpper(strings.Join(strings.Fields(sql[start:end]), " "))
			if strings.HasPrefix(head, "CREATE TRIGGER") || strings.HasPrefix(head, "CREATE TEMP TRIGGER") || strings.HasPrefix(head, "CREATE TEMPORARY TRIGGER") {
				trigger = true
			}
		}
		if trigger {
			switch w {
			case "BEGIN", "CASE":
				depth++
			case "END":
				if depth > 0 {
					depth--
				}
			}
		}
	}
	for i < n {
		c := sql[i]
		isWord := c == '_' || unicode.IsLetter(rune(c)) || (wordStart >= 0 && c >= '0' && c <= '9')
		if isWord {
			if wordStart < 0 {
				wordStart = i
			}
			i++
			continue
		}
		flushWord(i)
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < n {
				if sql[j] == c {
					if j+1 < n && sql[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			i = j + 1
		case c == '-' && i+1 < n && sql[i+1] == '-':
			for i < n && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && sql[i+1] == '*':
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				i = n
			} else {
				i += j + 4
			}
		case c == '$':
			// $tag$ ... $tag$ (PostgreSQL dollar quoting); $1 is a parameter.
			j := i + 1
			for j < n && (sql[j] == '_' || unicode.IsLetter(rune(sql[j])) || (j > i+1 && sql[j] >= '0' && sql[j] <= '9')) {
				j++
			}
			if j < n && sql[j] == '$' {
				tag := sql[i : j+1]
				k := strings.Index(sql[j+1:], tag)
				if k < 0 {
					i = n
				} else {
					i = j + 1 + k + len(tag)
				}
			} else {
				i++
			}
		case c == ';' && depth == 0:
			if s := strings.TrimSpace(sql[start:i]); !IsEmptyStatement(s) {
				out = append(out, s)
			}
			start = i + 1
			trigger, words = false, 0
			i++
		default:
			i++
		}
	}
	flushWord(n)
	if s := strings.TrimSpace(sql[start:]); !IsEmptyStatement(s) {
		out = append(out, s)
	}
	return out
}

// FirstKeyword is the statement's leading keyword, upper-cased, after
// comments and parentheses.
func FirstKeyword(sql string) string {
	return keywordAt(sql, 0)
}

// Keywords returns up to n leading words, upper-cased.
func Keywords(sql string, n int) []string {
	var out []string
	rest := skipSpaceAndComments(sql)
	for len(out) < n && rest != "" {
		j := 0
		for j < len(rest) && (rest[j] == '_' || unicode.IsLetter(rune(rest[j])) || (j > 0 && rest[j] >= '0' && rest[j] <= '9')) {
			j++
		}
		if j == 0 {
			break
		}
		out = append(out, strings.ToUpper(rest[:j]))
		rest = skipSpaceAndComments(rest[j:])
	}
	return out
}

func keywordAt(sql string, _ int) string {
	k := Keywords(sql, 1)
	if len(k) == 0 {
		return ""
	}
	return k[0]
}

func skipSpaceAndComments(s string) string {
	for {
		s = strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '(' })
		switch {
		case strings.HasPrefix(s, "--"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
			} else {
				return ""
			}
		case strings.HasPrefix(s, "/*"):
			if i := strings.Index(s, "*/"); i >= 0 {
				s = s[i+2:]
			} else {
				return ""
			}
		default:
			return s
		}
	}
}

// IsEmptyStatement reports whether sql holds only white space and comments.
func IsEmptyStatement(sql string) bool {
	s := sql
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		switch {
		case s == "":
			return true
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return true
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s, "*/")
			if i < 0 {
				return true
			}
			s = s[i+2:]
		default:
			return false
		}
	}
}
