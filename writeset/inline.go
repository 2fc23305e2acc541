package writeset

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Inline returns a statement's SQL with its arguments written in as
// literals, for a script that runs as text: a transaction block's DDL
// writeset carries the rows written before each of its DDL statements this
// way, in statement order. PostgreSQL gets every value as an untyped
// string literal, which it resolves from the column as it does a text
// parameter; SQLite gets integers, reals and blobs in their own syntax.
// Placeholders inside quoted identifiers or strings are left alone.
func Inline(d Dialect, s Stmt) (string, error) {
	lit := make([]string, len(s.Args))
	pg := d.Name() == "postgres"
	for i, a := range s.Args {
		var err error
		if lit[i], err = literal(a, pg); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	var quote byte
	next := 0 // SQLite's ? placeholders count in order
	for i := 0; i < len(s.SQL); i++ {
		ch := s.SQL[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '"' || ch == '\'':
			quote = ch
		case ch == '$' && pg:
			j := i + 1
			for j < len(s.SQL) && s.SQL[j] >= '0' && s.SQL[j] <= '9' {
				j++
			}
			if n, err := strconv.Atoi(s.SQL[i+1 : j]); err == nil && n >= 1 && n <= len(lit) {
				b.WriteString(lit[n-1])
				i = j - 1
				continue
			}
		case ch == '?' && !pg:
			if next >= len(lit) {
				return "", fmt.Errorf("%w: more placeholders than arguments", ErrInvalid)
			}
			b.WriteString(lit[next])
			next++
			continue
		}
		b.WriteByte(ch)
	}
	return b.String(), nil
}

func literal(a any, pg bool) (string, error) {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := a.(type) {
	case nil:
		return "NULL", nil
	case string:
		return quote(v), nil
	case int64:
		if pg {
			return quote(strconv.FormatInt(v, 10)), nil
		}
		return strconv.FormatInt(v, 10), nil
	case float64:
		if pg {
			return quote(strconv.FormatFloat(v, 'g', -1, 64)), nil
		}
		switch {
		case math.IsNaN(v):
			return "NULL", nil // SQLite stores NaN as NULL
		case math.IsInf(v, 1):
			return "9e999", nil
		case math.IsInf(v, -1):
			return "-9e999", nil
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0" // stays a REAL
		}
		return s, nil
	case []byte:
		if pg {
			return quote(`\x` + hex.EncodeToString(v)), nil
		}
		return "X'" + hex.EncodeToString(v) + "'", nil
	case bool:
		if pg {
			return quote(strconv.FormatBool(v)), nil
		}
		if v {
			return "1", nil
		}
		return "0", nil
	}
	return "", fmt.Errorf("%w: cannot write %T as a literal", ErrInvalid, a)
}
