package sqlpg

// More of PostgreSQL's built-in functions on the SQLite back end: integer
// arithmetic (gcd, lcm, factorial), a numeric's scale (scale, min_scale,
// trim_scale), width_bucket, the SHA-2 digests, regexp_match and
// regexp_count, the three-argument array_to_string and string_to_array,
// make_interval, make_timestamp(tz) and date_bin.

import (
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func init() {
	extraFuncs = append(extraFuncs,
		namedFunc{"gcd", func(a, b any) (any, error) { return gcdLcm(a, b, false) }},
		namedFunc{"bit_length", func(v any) any {
			switch x := v.(type) {
			case nil:
				return nil
			case []byte:
				return int64(8 * len(x))
			default:
				return int64(8 * len(fmt.Sprint(toText(x))))
			}
		}},
		namedFunc{"array_ndims", func(a any) any {
			if d := arrayDims(a); len(d) > 0 {
				return int64(len(d))
			}
			return nil
		}},
		namedFunc{"lcm", func(a, b any) (any, error) { return gcdLcm(a, b, true) }},
		namedFunc{"factorial", func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			n, ok := v.(int64)
			if !ok {
				return nil, invalid("bigint", v)
			}
			if n < 0 {
				return nil, fmt.Errorf("[SQLSTATE 2201E] factorial of a negative number is undefined")
			}
			f := new(big.Int).MulRange(1, n)
			if n == 0 {
				f.SetInt64(1)
			}
			if f.IsInt64() {
				return f.Int64(), nil
			}
			return f.String(), nil // numeric: the digits
		}},
		namedFunc{"scale", func(v any) any { return numericScaleText(v, false) }},
		namedFunc{"min_scale", func(v any) any { return numericScaleText(v, true) }},
		namedFunc{"trim_scale", func(v any) any {
			if v == nil {
				return nil
			}
			s := numericString(v)
			if strings.Contains(s, ".") {
				s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
			}
			return s
		}},
		namedFunc{"width_bucket", func(op, lo, hi any, count int64) (any, error) {
			x, ok1 := numeric(op)
			l, ok2 := numeric(lo)
			h, ok3 := numeric(hi)
			if op == nil || lo == nil || hi == nil {
				return nil, nil
			}
			if !ok1 || !ok2 || !ok3 {
				return nil, invalid("numeric", op)
			}
			if count <= 0 {
				return nil, fmt.Errorf("[SQLSTATE 2201G] count must be greater than zero")
			}
			if l == h {
				return nil, fmt.Errorf("[SQLSTATE 2201G] lower bound cannot equal upper bound")
			}
			if l < h {
				switch {
				case x < l:
					return int64(0), nil
				case x >= h:
					return count + 1, nil
				}
				return int64(math.Floor((x-l)/(h-l)*float64(count))) + 1, nil
			}
			switch {
			case x > l:
				return int64(0), nil
			case x <= h:
				return count + 1, nil
			}
			return int64(math.Floor((l-x)/(l-h)*float64(count))) + 1, nil
		}},
		namedFunc{"sha224", shaFunc(func(b []byte) []byte { s := sha256.Sum224(b); return s[:] })},
		namedFunc{"sha256", shaFunc(func(b []byte) []byte { s := sha256.Sum256(b); return s[:] })},
		namedFunc{"sha384", shaFunc(func(b []byte) []byte { s := sha512.Sum384(b); return s[:] })},
		namedFunc{"sha512", shaFunc(func(b []byte) []byte { s := sha512.Sum512(b); return s[:] })},
		namedFunc{"regexp_match", func(s, p any, flags ...any) (any, error) {
			re, text, null, err := regexFor("regexp_match", s, p, flags)
			if null || err != nil {
				return nil, err
			}
			m := re.FindStringSubmatchIndex(text)
			if m == nil {
				return nil, nil
			}
			var parts []any
			if len(m) == 2 {
				parts = append(parts, text[m[0]:m[1]])
			}
			for i := 2; i < len(m); i += 2 {
				if m[i] < 0 {
					parts = append(parts, nil)
				} else {
					parts = append(parts, text[m[i]:m[i+1]])
				}
			}
			return arrayLiteral(parts), nil
		}},
		namedFunc{"regexp_count", func(s, p any, rest ...any) (any, error) {
			var flags []any
			start := int64(1)
			if len(rest) > 0 {
				n, ok := rest[0].(int64)
				if !ok || n < 1 {
					return nil, fmt.Errorf("[SQLSTATE 22023] invalid value for parameter \"start\": %v", rest[0])
				}
				start = n
				flags = rest[1:]
			}
			re, text, null, err := regexFor("regexp_count", s, p, flags)
			if null || err != nil {
				return nil, err
			}
			r := []rune(text)
			if int(start) > len(r) {
				return int64(0), nil
			}
			return int64(len(re.FindAllStringIndex(string(r[start-1:]), -1))), nil
		}},
		namedFunc{"array_to_string", func(a any, sep string, null ...any) any {
			if a == nil {
				return nil
			}
			var out []string
			for _, e := range arrayValues(a) {
				if e == nil {
					if len(null) == 0 || null[0] == nil {
						continue // NULLs are left out
					}
					out = append(out, fmt.Sprint(toText(null[0])))
					continue
				}
				out = append(out, fmt.Sprint(e))
			}
			return strings.Join(out, sep)
		}},
		namedFunc{"string_to_array", func(s, sep any, null ...any) any {
			if s == nil {
				return nil
			}
			text := fmt.Sprint(toText(s))
			var parts []string
			switch {
			case text == "":
				return "{}"
			case sep == nil:
				for _, r := range text {
					parts = append(parts, string(r)) // each character
				}
			default:
				parts = strings.Split(text, fmt.Sprint(toText(sep)))
			}
			args := make([]any, len(parts))
			for i, p := range parts {
				args[i] = p
				if len(null) > 0 && null[0] != nil && p == fmt.Sprint(toText(null[0])) {
					args[i] = nil
				}
			}
			return arrayLiteral(args)
		}},
		namedFunc{"make_interval", func(args ...any) (any, error) {
			// years, months, weeks, days, hours, mins, secs (positional;
			// named arguments are put in this order by the translation).
			var f [7]float64
			for i, a := range args {
				if i >= len(f) {
					return nil, fmt.Errorf("[SQLSTATE 42883] function make_interval with %d arguments does not exist", len(args))
				}
				if a == nil {
					return nil, nil
				}
				x, ok := numeric(a)
				if !ok {
					return nil, invalid("integer", a)
				}
				f[i] = x
			}
			iv := interval{months: int64(f[0])*12 + int64(f[1]), days: int64(f[2])*7 + int64(f[3]),
				micros: int64(f[4])*3600e6 + int64(f[5])*60e6 + int64(math.Round(f[6]*1e6))}
			return iv.String(), nil
		}},
		namedFunc{"make_timestamp", func(y, mo, d, h, mi int64, sec any) (any, error) {
			tm, err := makeTime(y, mo, d, h, mi, sec, time.UTC)
			if err != nil {
				return nil, err
			}
			return tm.Format(TimestampLayout), nil
		}},
		namedFunc{"date_bin", func(stride, src, origin any) (any, error) {
			if stride == nil || src == nil || origin == nil {
				return nil, nil
			}
			iv, ok := parseInterval(fmt.Sprint(toText(stride)))
			if !ok {
				return nil, invalid("interval", stride)
			}
			if iv.months != 0 {
				return nil, fmt.Errorf("[SQLSTATE 22023] timestamps cannot be binned into intervals containing months or years")
			}
			step := iv.days*usPerDay + iv.micros
			if step <= 0 {
				return nil, fmt.Errorf("[SQLSTATE 22023] stride must be greater than zero")
			}
			ts, zone, ok1 := toTimeIn(src, time.UTC)
			o, _, ok2 := toTimeIn(origin, time.UTC)
			if !ok1 || !ok2 {
				return nil, invalid("timestamp", src)
			}
			diff := ts.Sub(o).Microseconds()
			bins := diff / step
			if diff < 0 && diff%step != 0 {
				bins--
			}
			out := o.Add(time.Duration(bins*step) * time.Microsecond)
			if zone {
				return formatTZ(out), nil
			}
			return out.Format(TimestampLayout), nil
		}},
	)
}

// makeTime is make_timestamp's fields checked as PostgreSQL checks them.
func makeTime(y, mo, d, h, mi int64, secs any, loc *time.Location) (time.Time, error) {
	sec, ok := numeric(secs)
	if !ok {
		return time.Time{}, invalid("double precision", secs)
	}
	whole := math.Floor(sec)
	tm := time.Date(int(y), time.Month(mo), int(d), int(h), int(mi), int(whole), int(math.Round((sec-whole)*1e9)), loc)
	if mo < 1 || mo > 12 || d < 1 || tm.Day() != int(d) || h < 0 || h > 24 || mi < 0 || mi > 59 || sec < 0 || sec > 60 {
		return time.Time{}, fmt.Errorf("[SQLSTATE 22008] date field value out of range: %d-%02d-%02d %02d:%02d:%v", y, mo, d, h, mi, sec)
	}
	return tm, nil
}

func gcdLcm(a, b any, lcm bool) (any, error) {
	if a == nil || b == nil {
		return nil, nil
	}
	x, ok1 := a.(int64)
	y, ok2 := b.(int64)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("[SQLSTATE 0A000] gcd and lcm of numeric values are not supported on the SQLite back end (integers are)")
	}
	g := new(big.Int).GCD(nil, nil, new(big.Int).Abs(big.NewInt(x)), new(big.Int).Abs(big.NewInt(y)))
	if !lcm {
		if !g.IsInt64() {
			return nil, fmt.Errorf("[SQLSTATE 22003] bigint out of range")
		}
		return g.Int64(), nil
	}
	if x == 0 || y == 0 {
		return int64(0), nil
	}
	l := new(big.Int).Mul(big.NewInt(x), big.NewInt(y))
	l.Abs(l).Div(l, g)
	if !l.IsInt64() {
		return nil, fmt.Errorf("[SQLSTATE 22003] bigint out of range")
	}
	return l.Int64(), nil
}

// numericString is a number's decimal text as tandem prints a numeric.
func numericString(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strings.TrimSpace(fmt.Sprint(toText(v)))
}

// numericScaleText is scale (digits after the point as written) or
// min_scale (without trailing zeros) of a numeric.
func numericScaleText(v any, min bool) any {
	if v == nil {
		return nil
	}
	s := numericString(v)
	i := strings.IndexByte(s, '.')
	if i < 0 {
		return int64(0)
	}
	frac := s[i+1:]
	if min {
		frac = strings.TrimRight(frac, "0")
	}
	return int64(len(frac))
}

// shaFunc is one of the SHA-2 digests of a bytea (text: its bytes).
func shaFunc(sum func([]byte) []byte) func(any) any {
	return func(v any) any {
		switch x := v.(type) {
		case nil:
			return nil
		case []byte:
			return sum(x)
		default:
			return sum([]byte(fmt.Sprint(toText(x))))
		}
	}
}

// arrayValues are an array's elements in its text form, flattened, an
// unquoted NULL as nil.
func arrayValues(a any) []any {
	s := strings.TrimSpace(fmt.Sprint(toText(a)))
	if len(s) < 2 || s[0] != '{' {
		return nil
	}
	var out []any
	var b strings.Builder
	quoted, inQuotes, any := false, false, false
	flush := func() {
		if !any {
			return
		}
		v := b.String()
		if !quoted && strings.EqualFold(v, "null") {
			out = append(out, nil)
		} else {
			out = append(out, v)
		}
		b.Reset()
		quoted, any = false, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			inQuotes = !inQuotes
			quoted, any = true, true
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			any = true
		case inQuotes:
			b.WriteByte(c)
		case c == '{':
		case c == ',' || c == '}':
			flush()
		case c == ' ' && !any:
		default:
			b.WriteByte(c)
			any = true
		}
	}
	return out
}

// regexFor compiles a regexp function's pattern with its flags (i, c;
// others 0A000) and reads its text; null when an argument is NULL.
func regexFor(name string, s, p any, flags []any) (re *regexp.Regexp, text string, null bool, err error) {
	if s == nil || p == nil {
		return nil, "", true, nil
	}
	fold := ""
	if len(flags) > 0 {
		if flags[0] == nil {
			return nil, "", true, nil
		}
		for _, c := range fmt.Sprint(toText(flags[0])) {
			switch c {
			case 'i':
				fold = "i"
			case 'c':
				fold = ""
			default:
				return nil, "", false, fmt.Errorf("[SQLSTATE 0A000] %s flag %q is not supported on the SQLite back end", name, string(c))
			}
		}
	}
	re, err = compile(fmt.Sprint(toText(p)), fold)
	if err != nil {
		return nil, "", false, fmt.Errorf("[SQLSTATE 2201B] %v", err)
	}
	return re, fmt.Sprint(toText(s)), false, nil
}

// arrayDims are an array's lengths per dimension read from its text form
// ({{1,2,3},{4,5,6}} is [2 3]; {} has none).
func arrayDims(a any) []int {
	if a == nil {
		return nil
	}
	s := strings.TrimSpace(fmt.Sprint(toText(a)))
	if s != "" && s[0] != '{' {
		return []int{len(strings.Fields(s))} // an int2vector or oidvector: "1 2 3"
	}
	if len(s) < 2 || s == "{}" {
		return nil
	}
	var dims []int
	counting := []bool{} // per depth: still in the first group there
	depth, inQuotes := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuotes:
			if c == '\\' {
				i++
			} else if c == '"' {
				inQuotes = false
			}
		case c == '"':
			inQuotes = true
		case c == '{':
			depth++
			if depth > len(dims) {
				dims = append(dims, 1)
				counting = append(counting, true)
			}
		case c == '}':
			if depth-1 < len(counting) {
				counting[depth-1] = false
			}
			depth--
		case c == ',':
			if counting[depth-1] {
				dims[depth-1]++
			}
		}
	}
	return dims
}

func init() {
	extraFuncs = append(extraFuncs,
		namedFunc{"jsonb_strip_nulls", func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			x, err := decodeJSON(v)
			if err != nil {
				return nil, err
			}
			var b strings.Builder
			writeJSONB(&b, stripNulls(x))
			return b.String(), nil
		}},
		namedFunc{"to_number", toNumber},
	)
}

// stripNulls drops the null-valued fields of every object in v (array
// elements stay, as PostgreSQL's jsonb_strip_nulls).
func stripNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = stripNulls(e)
		}
	case []any:
		for i, e := range x {
			x[i] = stripNulls(e)
		}
	}
	return v
}

// toNumber is to_number(text, format): the digits of text, its decimal
// point where the format has D or '.', negative with a minus sign, MI,
// PR's angle brackets or parentheses; group separators and other text
// are skipped. The result has the format's digits after its point.
func toNumber(s, f any) (any, error) {
	if s == nil || f == nil {
		return nil, nil
	}
	text, format := fmt.Sprint(toText(s)), strings.ToUpper(fmt.Sprint(toText(f)))
	scale := 0
	if i := strings.IndexAny(format, "D."); i >= 0 {
		for _, c := range format[i+1:] {
			if c == '9' || c == '0' {
				scale++
			}
		}
	}
	var digits strings.Builder
	neg, point := false, false
	for _, c := range text {
		switch {
		case c >= '0' && c <= '9':
			digits.WriteRune(c)
		case c == '.' && !point && (strings.ContainsAny(format, "D.")):
			digits.WriteByte('.')
			point = true
		case c == '-' || c == '<' || c == '(':
			neg = true
		}
	}
	d := digits.String()
	if d == "" || d == "." {
		return nil, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type numeric: \" \"")
	}
	x, err := strconv.ParseFloat(d, 64)
	if err != nil {
		return nil, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type numeric: %q", d)
	}
	if neg {
		x = -x
	}
	return FormatNumeric(x, scale), nil
}
