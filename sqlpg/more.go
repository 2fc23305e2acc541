package sqlpg

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
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
	for name, disc := range map[string]bool{"_pg_percentile_cont": false, "_pg_percentile_disc": true} {
		if err := c.RegisterAggregator(name, func() *percentileAgg { return &percentileAgg{disc: disc} }, true); err != nil {
			return fmt.Errorf("sqlpg: register %s: %w", name, err)
		}
	}
	if err := c.RegisterAggregator("_pg_avg_exact", func() *avgExact { return &avgExact{} }, true); err != nil {
		return err
	}
	if err := c.RegisterAggregator("_pg_mode", func() *modeAgg { return &modeAgg{} }, true); err != nil {
		return fmt.Errorf("sqlpg: register _pg_mode: %w", err)
	}
	for name, binary := range map[string]bool{"_pg_json_object_agg": false, "_pg_jsonb_object_agg": true} {
		if err := c.RegisterAggregator(name, func() *objectAgg { return &objectAgg{jsonb: binary} }, true); err != nil {
			return fmt.Errorf("sqlpg: register %s: %w", name, err)
		}
	}
	return nil
}

// objectAgg is json_object_agg(k, v) and jsonb_object_agg(k, v), v as
// json text (the translator wraps a value that is not json in to_json):
// json keeps the pairs in order, duplicates too, laid out as PostgreSQL's
// json_object_agg ({ "a" : 1, "b" : 2 }); jsonb keeps the last value of
// each key, in jsonb's key order.
type objectAgg struct {
	jsonb bool
	keys  []string
	vals  []string
	bad   error
}

func (a *objectAgg) Step(k, v any) {
	if b, ok := k.([]byte); ok && b == nil {
		k = nil // SQL NULL, as the driver hands it to an aggregate
	}
	if k == nil {
		if a.bad == nil {
			a.bad = fmt.Errorf("[SQLSTATE 22023] field name must not be null")
		}
		return
	}
	val := "null"
	if v != nil {
		val = fmt.Sprint(toText(v))
	}
	if val == "" {
		val = "null" // NULL (never json text)
	}
	a.keys = append(a.keys, fmt.Sprint(toText(k)))
	a.vals = append(a.vals, val)
}

func (a *objectAgg) Done() (any, error) {
	if a.bad != nil {
		return nil, a.bad
	}
	if len(a.keys) == 0 {
		return nil, nil
	}
	var b strings.Builder
	if !a.jsonb {
		b.WriteString("{ ")
		for i, k := range a.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONString(&b, k)
			b.WriteString(" : ")
			b.WriteString(a.vals[i])
		}
		b.WriteString(" }")
		return b.String(), nil
	}
	obj := map[string]any{}
	for i, k := range a.keys {
		dec := json.NewDecoder(strings.NewReader(a.vals[i]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type json")
		}
		obj[k] = v
	}
	writeJSONB(&b, obj)
	return b.String(), nil
}

// percentileAgg is percentile_cont (interpolated between the two nearest
// values) and percentile_disc (the first value whose position reaches
// the fraction) over the non-NULL values, in ascending or (desc)
// descending order.
type percentileAgg struct {
	disc, desc bool
	frac       float64
	fracSet    bool
	bad        error
	xs         []float64
	vals       []any // percentile_disc keeps the values themselves
}

func (a *percentileAgg) Step(frac, v any, desc int64) {
	if !a.fracSet {
		f, ok := numeric(frac)
		if frac == nil || !ok || f < 0 || f > 1 || math.IsNaN(f) {
			a.bad = fmt.Errorf("[SQLSTATE 22003] percentile value %v is not between 0 and 1", frac)
		}
		a.frac, a.fracSet, a.desc = f, true, desc != 0
	}
	if v == nil {
		return
	}
	if a.disc {
		a.vals = append(a.vals, v)
		return
	}
	if x, ok := numeric(v); ok {
		a.xs = append(a.xs, x)
	}
}

func (a *percentileAgg) Done() (any, error) {
	if a.bad != nil {
		return nil, a.bad
	}
	if a.disc {
		if len(a.vals) == 0 {
			return nil, nil
		}
		sort.SliceStable(a.vals, func(i, j int) bool {
			if a.desc {
				return cmpAny(a.vals[i], a.vals[j]) > 0
			}
			return cmpAny(a.vals[i], a.vals[j]) < 0
		})
		// PostgreSQL: the first value whose cumulative share reaches
		// the fraction.
		k := int(math.Ceil(a.frac*float64(len(a.vals)))) - 1
		return a.vals[max(k, 0)], nil
	}
	if len(a.xs) == 0 {
		return nil, nil
	}
	sort.Float64s(a.xs)
	if a.desc {
		slices.Reverse(a.xs)
	}
	pos := a.frac * float64(len(a.xs)-1)
	lo := math.Floor(pos)
	hi := math.Ceil(pos)
	x := a.xs[int(lo)]
	if hi != lo {
		x += (pos - lo) * (a.xs[int(hi)] - x)
	}
	return x, nil
}

// modeAgg is mode(): the most frequent non-NULL value, the first in sort
// order among equally frequent ones.
type modeAgg struct {
	vals []any
}

func (a *modeAgg) Step(v any) {
	if v != nil {
		a.vals = append(a.vals, v)
	}
}

func (a *modeAgg) Done() any {
	if len(a.vals) == 0 {
		return nil
	}
	sort.SliceStable(a.vals, func(i, j int) bool { return cmpAny(a.vals[i], a.vals[j]) < 0 })
	var best any
	bestN, n := 0, 0
	for i, v := range a.vals {
		if i > 0 && cmpAny(v, a.vals[i-1]) == 0 {
			n++
		} else {
			n = 1
		}
		if n > bestN {
			best, bestN = v, n
		}
	}
	return best
}

func init() {
	extraFuncs = append(extraFuncs,
		namedFunc{"regexp_replace", regexpReplace},
		namedFunc{"_pg_overlay", overlay},
		namedFunc{"regexp_split_to_array", regexpSplit},
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

// regexpSplit is regexp_split_to_array(s, pattern [, flags]): the pieces
// between the pattern's matches (an empty pattern splits into
// characters); flag i ignores case.
func regexpSplit(s, pattern any, flags ...any) (any, error) {
	re, text, null, err := regexFor("regexp_split_to_array", s, pattern, flags)
	if null || err != nil {
		return nil, err
	}
	parts := re.Split(text, -1)
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return arrayLiteral(out), nil
}
