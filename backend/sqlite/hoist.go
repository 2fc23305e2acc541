package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/tandemdb/tandem/pgwire"
)

// Large statements: PostgreSQL's parser (libpg_query) copies a statement's
// text several times over (into C, into the parse tree, back out as
// protobuf and Go strings, through deparse), and SQLite keeps a literal in
// the prepared program: a 60 MiB INSERT cost about 7x its size in Go heap
// alone. A large statement's long plain string literals are therefore
// hoisted into parameters before translation: the translator and SQLite
// parse a short statement, and the values are bound at execution (the
// driver binds a Go string without copying it).
const (
	// hoistMinStatement: shorter statements are translated as written.
	hoistMinStatement = 64 << 10
	// hoistMinLiteral: shorter literals stay in the text.
	hoistMinLiteral = 4 << 10
)

// A statement that still is large after hoisting (a huge IN list, a
// multi-row INSERT with ON CONFLICT or RETURNING) goes whole through the
// translator, which allocates about 50x its text (measured: a 1 MiB IN
// list of integers). That memory is reserved in the node's message budget
// (limits.message_memory) for the translation, so the budget bounds it as
// it bounds messages; past maxTranslateBytes the statement is refused
// with 54000 rather than cost several hundred MiB.
const (
	// translateReserveMin: shorter texts are not counted (as messages
	// under pgwire.BudgetMinMessage are not).
	translateReserveMin = 64 << 10
	// translateCost: the translator's allocation per byte of text.
	translateCost = 50
	// maxTranslateBytes: longer texts are refused.
	maxTranslateBytes = 4 << 20
)

// reserveTranslation reserves the memory translating text costs in the
// session's message budget (see translateCost); release returns it.
func reserveTranslation(ctx context.Context, text string) (release func(), err error) {
	if len(text) < translateReserveMin {
		return func() {}, nil
	}
	if len(text) > maxTranslateBytes {
		return nil, &pgwire.Error{Code: pgwire.CodeProgramLimitExceeded,
			Message: fmt.Sprintf("statement too large to translate: %d bytes after its long string literals are bound (at most %d on the SQLite back end)", len(text), maxTranslateBytes),
			Hint:    "pass long lists and many rows as parameters (WHERE id = ANY($1) with an array; INSERT ... SELECT FROM unnest($1, $2)), split the statement, or use COPY"}
	}
	return pgwire.MemoryBudgetFrom(ctx).Reserve(int64(len(text))*translateCost, fmt.Sprintf("translating a statement of %d bytes", len(text)))
}

// hoistAfter: keywords a hoisted literal may follow (after any other word
// a literal may be a typed constant, DATE '...', which a parameter cannot
// replace).
var hoistAfter = map[string]bool{"SELECT": true, "THEN": true, "ELSE": true, "WHEN": true, "AND": true, "OR": true, "NOT": true,
	"LIKE": true, "ILIKE": true, "RETURNING": true, "WHERE": true, "HAVING": true, "IN": true}

// hoistLiterals returns sql with its long plain string literals ('...',
// not E”, B”, X”, U&”, dollar-quoted or typed ones) replaced by
// parameters numbered after the statement's own ($n+1, ...), and their
// values in order; vals is nil when nothing was hoisted. The values share
// sql's memory unless they contained doubled quotes.
func hoistLiterals(sql string) (string, []any) {
	if len(sql) < hoistMinStatement {
		return sql, nil
	}
	type lit struct {
		start, end int // the quoted literal, quotes included
		val        string
	}
	var lits []lit
	maxParam := 0
	prevWord := ""      // the last word before this point, upper-cased
	prevIsWord := false // the last token was a word
	n := len(sql)
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case isIdentByte(c):
			j := i
			for j < n && isIdentByte(sql[j]) {
				j++
			}
			if j < n && sql[j] == '\'' {
				// A prefixed literal (E'', B'', X'', N''): skip it whole.
				i = skipQuoted(sql, j, strings.EqualFold(sql[i:j], "E"))
				prevIsWord = false
				continue
			}
			if j-i <= 10 {
				prevWord = strings.ToUpper(sql[i:j])
			} else {
				prevWord = ""
			}
			prevIsWord = true
			i = j
		case c == '\'':
			end := skipQuoted(sql, i, false)
			next := end
			for next < n && (sql[next] == ' ' || sql[next] == '\t' || sql[next] == '\n' || sql[next] == '\r') {
				next++
			}
			continued := next < n && sql[next] == '\''
			unicode := i > 0 && sql[i-1] == '&' // U&'...'
			if !unicode && end-i-2 >= hoistMinLiteral && end <= n && sql[end-1] == '\'' && !continued && (!prevIsWord || hoistAfter[prevWord]) {
				v := sql[i+1 : end-1]
				if strings.Contains(v, "''") {
					v = strings.ReplaceAll(v, "''", "'")
				}
				lits = append(lits, lit{i, end, v})
			}
			prevIsWord = false
			i = end
		case c == '"':
			j := i + 1
			for j < n {
				if sql[j] == '"' {
					if j+1 < n && sql[j+1] == '"' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			prevWord, prevIsWord = "", true // a quoted identifier
			i = j + 1
		case c == '-' && i+1 < n && sql[i+1] == '-':
			for i < n && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && sql[i+1] == '*':
			depth := 0
			for i < n {
				if strings.HasPrefix(sql[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(sql[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
		case c == '$':
			j := i + 1
			for j < n && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
			if j > i+1 {
				if p, err := strconv.Atoi(sql[i+1 : j]); err == nil {
					maxParam = max(maxParam, p)
				}
				prevIsWord = false
				i = j
				continue
			}
			for j < n && isIdentByte(sql[j]) {
				j++
			}
			if j < n && sql[j] == '$' {
				tag := sql[i : j+1]
				k := strings.Index(sql[j+1:], tag)
				if k < 0 {
					return sql, nil // unterminated: leave it to the parser
				}
				i = j + 1 + k + len(tag)
			} else {
				i++
			}
			prevIsWord = false
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			prevIsWord = false
			i++
		}
	}
	if len(lits) == 0 {
		return sql, nil
	}
	var b strings.Builder
	vals := make([]any, len(lits))
	last := 0
	for k, l := range lits {
		b.WriteString(sql[last:l.start])
		b.WriteString("$" + strconv.Itoa(maxParam+k+1))
		last = l.end
		vals[k] = l.val
	}
	b.WriteString(sql[last:])
	return b.String(), vals
}

// skipQuoted returns the index after the literal whose opening quote is
// at i (” doubles a quote; backslash escapes in E” strings).
func skipQuoted(sql string, i int, backslash bool) int {
	n := len(sql)
	j := i + 1
	for j < n {
		switch sql[j] {
		case '\\':
			if backslash {
				j += 2
				continue
			}
		case '\'':
			if j+1 < n && sql[j+1] == '\'' {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return n
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
