package sqlpg

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// regexpReplace is regexp_replace(s, pattern, replacement [, flags]):
// the first match, or every one with flag g; \1..\9 and \& in the
// replacement; flag i ignores case. Other flags answer 0A000.
func regexpReplace(s, pattern, repl any, flags ...any) (any, error) {
	if s == nil || pattern == nil || repl == nil {
		return nil, nil
	}
	f := ""
	if len(flags) > 0 {
		if flags[0] == nil {
			return nil, nil
		}
		f = fmt.Sprint(toText(flags[0]))
	}
	global, fold := false, ""
	for _, c := range f {
		switch c {
		case 'g':
			global = true
		case 'i':
			fold = "i"
		case 'c':
			fold = ""
		default:
			return nil, fmt.Errorf("[SQLSTATE 0A000] regexp_replace flag %q is not supported on the SQLite back end", string(c))
		}
	}
	re, err := compile(fmt.Sprint(toText(pattern)), fold)
	if err != nil {
		return nil, fmt.Errorf("[SQLSTATE 2201B] %v", err)
	}
	text, rp := fmt.Sprint(toText(s)), fmt.Sprint(toText(repl))
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
		b.WriteString(text[last:m[0]])
		for i := 0; i < len(rp); i++ {
			if rp[i] == '\\' && i+1 < len(rp) {
				c := rp[i+1]
				switch {
				case c >= '1' && c <= '9':
					g := int(c - '0')
					if 2*g+1 < len(m) && m[2*g] >= 0 {
						b.WriteString(text[m[2*g]:m[2*g+1]])
					}
					i++
					continue
				case c == '&':
					b.WriteString(text[m[0]:m[1]])
					i++
					continue
				case c == '\\':
					b.WriteByte('\\')
					i++
					continue
				}
			}
			b.WriteByte(rp[i])
		}
		last = m[1]
		if !global {
			break
		}
	}
	b.WriteString(text[last:])
	return b.String(), nil
}

// overlay is overlay(s PLACING r FROM start [FOR count]).
func overlay(s, r, start any, count ...any) (any, error) {
	if s == nil || r == nil || start == nil {
		return nil, nil
	}
	rs, rr := []rune(fmt.Sprint(toText(s))), []rune(fmt.Sprint(toText(r)))
	st, err := toInt("integer", start)
	if err != nil {
		return nil, err
	}
	n := int64(len(rr))
	if len(count) > 0 {
		if count[0] == nil {
			return nil, nil
		}
		c, err := toInt("integer", count[0])
		if err != nil {
			return nil, err
		}
		n = c.(int64)
	}
	from := st.(int64)
	if from < 1 {
		return nil, fmt.Errorf("[SQLSTATE 22011] negative substring length not allowed")
	}
	head := string(rs[:min(int(from-1), len(rs))])
	tail := ""
	if k := from - 1 + n; k < int64(len(rs)) && k >= 0 {
		tail = string(rs[k:])
	}
	return head + string(rr) + tail, nil
}

// varianceAgg is var_samp / stddev_samp (sample) or var_pop / stddev_pop
// over the non-NULL values (Welford's method).
type varianceAgg struct {
	n          int64
	mean, m2   float64
	pop, sqrtR bool
}

func (a *varianceAgg) Step(v any) {
	x, ok := numeric(v)
	if v == nil || !ok {
		return
	}
	a.n++
	d := x - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (x - a.mean)
}

func (a *varianceAgg) Done() any {
	div := float64(a.n - 1)
	if a.pop {
		div = float64(a.n)
	}
	if div <= 0 {
		if a.pop && a.n == 1 {
			return 0.0
		}
		return nil
	}
	r := a.m2 / div
	if a.sqrtR {
		return math.Sqrt(r)
	}
	return r
}

func registerAggregates(c *sqlite3.SQLiteConn) error {
	for _, a := range []struct {
		name      string
		pop, sqrt bool
	}{
		{"stddev", false, true}, {"stddev_samp", false, true}, {"stddev_pop", true, true},
		{"variance", false, false}, {"var_samp", false, false}, {"var_pop", true, false},
	} {
		a := a
		if err := c.RegisterAggregator(a.name, func() *varianceAgg { return &varianceAgg{pop: a.pop, sqrtR: a.sqrt} }, true); err != nil {
			return fmt.Errorf("sqlpg: register %s: %w", a.name, err)
		}
	}
	if err := c.RegisterAggregator("_pg_string_agg_distinct", func() *stringAggDistinct { return &stringAggDistinct{} }, true); err != nil {
		return fmt.Errorf("sqlpg: register _pg_string_agg_distinct: %w", err)
	}
	return nil
}

func init() {
	extraFuncs = append(extraFuncs,
		namedFunc{"regexp_replace", regexpReplace},
		namedFunc{"_pg_overlay", overlay},
	)
}

// similarToRegex is PostgreSQL's similar_to_escape: a SIMILAR TO pattern
// as a regular expression matching the whole string (% any text, _ any
// character, the escape character, by default \, makes the next one
// literal; | * + ? {} () [] keep their regex meaning).
func similarToRegex(pat, esc string) (string, error) {
	var escR rune = -1
	if r := []rune(esc); len(r) == 1 {
		escR = r[0]
	} else if len(r) > 1 {
		return "", fmt.Errorf("[SQLSTATE 22025] invalid escape string")
	}
	var b strings.Builder
	b.WriteString("^(?:")
	rs := []rune(pat)
	inBracket := false
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == escR:
			if i+1 < len(rs) {
				i++
				b.WriteString(regexp.QuoteMeta(string(rs[i])))
			} else {
				return "", fmt.Errorf("[SQLSTATE 2201B] invalid regular expression: invalid escape sequence at end of pattern")
			}
		case inBracket:
			b.WriteRune(c)
			if c == ']' {
				inBracket = false
			}
		case c == '[':
			inBracket = true
			b.WriteRune(c)
		case c == '%':
			b.WriteString(".*")
		case c == '_':
			b.WriteString(".")
		case c == '.' || c == '^' || c == '$' || c == '\\':
			b.WriteString(`\` + string(c))
		default:
			b.WriteRune(c)
		}
	}
	b.WriteString(")$")
	return b.String(), nil
}

func init() {
	extraFuncs = append(extraFuncs, namedFunc{"similar_to_escape", func(args ...any) (any, error) {
		if len(args) == 0 || len(args) > 2 || args[0] == nil {
			return nil, nil
		}
		esc := `\`
		if len(args) == 2 {
			if args[1] == nil {
				return nil, nil
			}
			esc = fmt.Sprint(toText(args[1]))
		}
		return similarToRegex(fmt.Sprint(toText(args[0])), esc)
	}})
}

// stringAggDistinct is string_agg(DISTINCT x, sep [ORDER BY x]): SQLite's
// group_concat takes DISTINCT with one argument only. Values are kept in
// the order they arrive (ORDER BY sorts them) without repeats.
type stringAggDistinct struct {
	seen map[string]bool
	b    strings.Builder
	any  bool
}

func (a *stringAggDistinct) Step(x, sep any) {
	if x == nil {
		return
	}
	v := fmt.Sprint(toText(x))
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	if a.seen[v] {
		return
	}
	a.seen[v] = true
	if a.any && sep != nil {
		a.b.WriteString(fmt.Sprint(toText(sep)))
	}
	a.any = true
	a.b.WriteString(v)
}

func (a *stringAggDistinct) Done() any {
	if !a.any {
		return nil
	}
	return a.b.String()
}
