package sqlpg

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/tandemdb/tandem/pgwire"
)

// PostgreSQL functions SQLite lacks (or has with other semantics), as Go
// functions registered on every connection. The translator renames calls
// to them (funcRename, _cast_*, _pg_*).

var errDivZero = errors.New("division by zero")

// raisedRe finds an error _pg_raise made in a SQLite error message.
var raisedRe = regexp.MustCompile(`\[SQLSTATE ([0-9A-Z]{5})\] (.*)`)

// Raised reads an error the translated SQL raised with _pg_raise (its
// PostgreSQL SQLSTATE and message) out of SQLite's error text.
func Raised(msg string) (code, text string, ok bool) {
	m := raisedRe.FindStringSubmatch(msg)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// A raised message may carry PostgreSQL's DETAIL and HINT after these
// markers: "msg\x1fD:detail\x1fH:hint" (SplitRaised).
const (
	RaisedDetail = "\x1fD:"
	RaisedHint   = "\x1fH:"
)

// SplitRaised separates a raised message from its DETAIL and HINT.
func SplitRaised(text string) (msg, detail, hint string) {
	msg = text
	if i := strings.Index(msg, RaisedHint); i >= 0 {
		msg, hint = msg[:i], msg[i+len(RaisedHint):]
	}
	if i := strings.Index(msg, RaisedDetail); i >= 0 {
		msg, detail = msg[:i], msg[i+len(RaisedDetail):]
	}
	return msg, detail, hint
}

// ErrInvalidInput marks a value a cast cannot read (SQLSTATE 22P02).
var ErrInvalidInput = errors.New("invalid input syntax")

func invalid(typ string, v any) error {
	switch typ {
	case "date", "timestamp", "timestamptz", "timestamp with time zone", "timestamp without time zone",
		"time", "time without time zone", "time with time zone", "interval":
		// PostgreSQL's datetime input fails with 22007.
		return fmt.Errorf("[SQLSTATE 22007] invalid input syntax for type %s: %q", typ, fmt.Sprint(v))
	}
	return fmt.Errorf("%w for type %s: %q", ErrInvalidInput, typ, fmt.Sprint(v))
}

// TimestamptzLayout is how tandem writes timestamps with time zone (UTC),
// the way PostgreSQL prints them with TimeZone=UTC.
const (
	TimestamptzLayout = "2006-01-02 15:04:05.999999-07"
	TimestampLayout   = "2006-01-02 15:04:05.999999"
	DateLayout        = "2006-01-02"
)

var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999-07", "2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04", "2006-01-02 15:04-07", "2006-01-02 15:04-07:00", "2006-01-02T15:04",
	"2006-01-02", "2006-01-02 15:04:05.999999999 -0700 MST", "2006-01-02 15:04:05.999999999-0700",
	"2006-01-02 -07", "2006-01-02 -07:00", "2006-01-02 15:04:05.999999999 -07", "2006-01-02 15:04:05.999999999 -07:00",
	// Unpadded months, days and hours, which PostgreSQL reads too.
	"2006-1-2 15:04:05.999999999-07:00", "2006-1-2 15:04:05.999999999-07", "2006-1-2 15:04:05.999999999", "2006-1-2 15:04", "2006-1-2",
}

// ParseTime reads the timestamp forms clients and SQLite write.
func ParseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "now":
		return time.Now().UTC(), true
	case "today":
		return time.Now().UTC().Truncate(24 * time.Hour), true
	case "epoch":
		return time.Unix(0, 0).UTC(), true
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func toTime(v any) (time.Time, bool) {
	switch x := v.(type) {
	case time.Time:
		return x, true
	case string:
		return ParseTime(x)
	case []byte:
		return ParseTime(string(x))
	case int64:
		return time.Unix(x, 0).UTC(), true
	case float64:
		return time.Unix(0, int64(x*1e9)).UTC(), true
	}
	return time.Time{}, false
}

func toInt(typ string, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("integer out of range")
		}
		return int64(math.Round(x)), nil
	case bool:
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case string, []byte:
		s := strings.TrimSpace(fmt.Sprintf("%s", x))
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, invalid(typ, s)
		}
		return i, nil
	}
	return nil, invalid(typ, v)
}

func toFloat(typ string, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	case string, []byte:
		s := strings.TrimSpace(fmt.Sprintf("%s", x))
		switch strings.ToLower(s) {
		case "nan":
			return math.NaN(), nil
		case "infinity", "inf":
			return math.Inf(1), nil
		case "-infinity", "-inf":
			return math.Inf(-1), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, invalid(typ, s)
		}
		return f, nil
	}
	return nil, invalid(typ, v)
}

func toNumeric(v any) (any, error) {
	switch x := v.(type) {
	case string, []byte:
		s := strings.TrimSpace(fmt.Sprintf("%s", x))
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		return toFloat("numeric", s)
	}
	return toFloat("numeric", v)
}

func toText(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return x
	case []byte:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return string(pgwire.AppendFloat(nil, x, 64))
	case time.Time:
		return x.UTC().Format(TimestamptzLayout)
	}
	return fmt.Sprint(v)
}

func toBool(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		return x != 0, nil
	case float64:
		return x != 0, nil
	case bool:
		return x, nil
	case string, []byte:
		s := strings.ToLower(strings.TrimSpace(fmt.Sprintf("%s", x)))
		switch s {
		case "t", "true", "y", "yes", "on", "1":
			return true, nil
		case "f", "false", "n", "no", "off", "0":
			return false, nil
		}
		return nil, invalid("boolean", s)
	}
	return nil, invalid("boolean", v)
}

// uuidHex reads a uuid as PostgreSQL's uuid_in does: 32 hex digits,
// optionally in braces, a hyphen allowed after any group of four; it
// gives the digits in lower case.
func uuidHex(s string) (string, bool) {
	if strings.HasPrefix(s, "{") {
		if !strings.HasSuffix(s, "}") {
			return "", false
		}
		s = s[1 : len(s)-1]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9' || c >= 'a' && c <= 'f':
			b.WriteByte(c)
		case c >= 'A' && c <= 'F':
			b.WriteByte(c + 'a' - 'A')
		case c == '-' && b.Len() > 0 && b.Len()%4 == 0 && i+1 < len(s) && s[i+1] != '-':
		default:
			return "", false
		}
	}
	return b.String(), b.Len() == 32
}

var plainIdentRe = regexp.MustCompile(`^[a-z_][a-z0-9_$]*$`)

// reservedWords are PostgreSQL's reserved key words (quote_ident quotes them).
var reservedWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric authorization binary both case cast check collate
		collation column concurrently constraint create cross current_catalog current_date current_role current_schema current_time
		current_timestamp current_user default deferrable desc distinct do else end except false fetch for foreign freeze from full
		grant group having ilike in initially inner intersect into is isnull join lateral leading left like limit localtime
		localtimestamp natural not notnull null offset on only or order outer overlaps placing primary references returning right
		select session_user similar some symmetric system_user table tablesample then to trailing true union unique user using
		variadic verbose when where window with`) {
		reservedWords[w] = true
	}
}

// QuoteIdent quotes an identifier as PostgreSQL's quote_ident does: only
// when it is not a plain lower-case name or is a reserved word.
func QuoteIdent(s string) string {
	if plainIdentRe.MatchString(s) && !reservedWords[s] {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// dateShapeRe: a date written as PostgreSQL reads it whose fields may be
// out of range (2024-13-01 is 22008, not 22P02).
var dateShapeRe = regexp.MustCompile(`^\s*\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{1,2}(:\d{1,2}(\.\d+)?)?)?\s*$`)

// numericTypmod rounds a numeric to numeric(p,s)'s scale and fails with
// 22003 when it needs more than p digits.
func numericTypmod(v any, p, s int64) (any, error) {
	var f float64
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		f = float64(x)
	case float64:
		f = x
	case string:
		// A parameter sent as text: the column's affinity would read it
		// as a number after this.
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
			return v, nil
		}
	default:
		return v, nil
	}
	if math.IsNaN(f) {
		return f, nil
	}
	r := RoundNumeric(f, int(s))
	if math.Abs(r) >= math.Pow(10, float64(p-s)) {
		return nil, fmt.Errorf("[SQLSTATE 22003] numeric field overflow")
	}
	if s == 0 && math.Abs(r) < 1<<53 {
		return int64(r), nil
	}
	return r, nil
}

// pgSubstring is PostgreSQL's substring(s, start [, count]) (a negative
// count fails with 22011) and substring(s, pattern) (a POSIX regular
// expression: the first parenthesised part, else the whole match).
func pgSubstring(s any, args ...any) (any, error) {
	if s == nil || len(args) == 0 || len(args) > 2 {
		if len(args) == 0 || len(args) > 2 {
			return nil, fmt.Errorf("[SQLSTATE 42883] function substring with %d arguments does not exist", len(args)+1)
		}
		return nil, nil
	}
	for _, a := range args {
		if a == nil {
			return nil, nil
		}
	}
	text := fmt.Sprint(toText(s))
	if p, ok := args[0].(string); ok && len(args) == 1 {
		re, err := compile(p, "")
		if err != nil {
			return nil, fmt.Errorf("[SQLSTATE 2201B] %v", err)
		}
		m := re.FindStringSubmatch(text)
		if m == nil {
			return nil, nil
		}
		if len(m) > 1 {
			return m[1], nil
		}
		return m[0], nil
	}
	start, err := toInt("integer", args[0])
	if err != nil {
		return nil, err
	}
	r := []rune(text)
	from := start.(int64)
	to := int64(len(r)) + 1
	if len(args) == 2 {
		n, err := toInt("integer", args[1])
		if err != nil {
			return nil, err
		}
		if n.(int64) < 0 {
			return nil, fmt.Errorf("[SQLSTATE 22011] negative substring length not allowed")
		}
		to = min(to, from+n.(int64))
	}
	from = max(from, 1)
	if to <= from {
		return "", nil
	}
	return string(r[from-1 : to-1]), nil
}

func castFunc(t *Type) any { return castFuncIn(t, utcZone) }

// castFuncIn is the cast to t, text without an offset read in loc's zone
// when t is timestamptz.
func castFuncIn(t *Type, loc zoneOf) any {
	if t.Elem != 0 && t.Cat == 'A' && Types[t.Elem] != nil && t.Name != "int2vector" && t.Name != "oidvector" {
		elem := Types[t.Elem]
		return func(v any) (any, error) {
			switch x := v.(type) {
			case nil:
				return nil, nil
			case string:
				return arrayIn(x, elem)
			case []byte:
				return arrayIn(string(x), elem)
			}
			return v, nil
		}
	}
	switch t.Name {
	case "int2", "int4":
		lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
		if t.Name == "int2" {
			lo, hi = math.MinInt16, math.MaxInt16
		}
		return func(v any) (any, error) {
			r, err := toInt(t.SQL, v)
			if i, ok := r.(int64); ok && (i < lo || i > hi) {
				if s, ok := v.(string); ok {
					// Read from text: PostgreSQL's input message.
					return nil, fmt.Errorf("[SQLSTATE 22003] value %q is out of range for type %s", strings.TrimSpace(s), t.SQL)
				}
				return nil, fmt.Errorf("[SQLSTATE 22003] %s out of range", t.SQL)
			}
			return r, err
		}
	case "int8", "oid", "regproc":
		return func(v any) (any, error) { return toInt(t.SQL, v) }
	case "float4", "float8":
		return func(v any) (any, error) { return toFloat(t.SQL, v) }
	case "numeric":
		return func(v any) (any, error) { return toNumeric(v) }
	case "bool":
		return func(v any) (any, error) { return toBool(v) }
	case "date", "timestamp", "timestamptz":
		layout := map[string]string{"date": DateLayout, "timestamp": TimestampLayout, "timestamptz": TimestamptzLayout}[t.Name]
		return func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			tm, _, ok := toTimeIn(v, loc())
			if !ok {
				if s, isStr := v.(string); isStr && dateShapeRe.MatchString(s) {
					return nil, fmt.Errorf("[SQLSTATE 22008] date/time field value out of range: %q", s)
				}
				return nil, invalid(t.SQL, v)
			}
			if t.Name == "timestamptz" {
				tm = tm.UTC()
			}
			// A date or timestamp of text with an offset keeps its wall
			// clock ('2024-01-05 23:00-05'::date is 2024-01-05); a
			// timestamptz value is first made the session's wall clock
			// by the translation (_pg_tstz_local).
			return tm.Format(layout), nil
		}
	case "time", "timetz":
		return func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			if tm, ok := toTime(v); ok {
				return tm.Format("15:04:05.999999"), nil
			}
			s := fmt.Sprint(toText(v))
			if t.Name == "time" {
				if out, ok, err := timeOfDay(s); ok {
					return out, err
				}
			}
			for _, l := range []string{"15:04:05.999999", "15:04"} {
				if tm, err := time.Parse(l, s); err == nil {
					return tm.Format("15:04:05.999999"), nil
				}
			}
			return nil, invalid(t.SQL, v)
		}
	case "jsonpath":
		return castJSONPath
	case "uuid":
		return func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			s := fmt.Sprint(toText(v))
			h, ok := uuidHex(strings.TrimSpace(s))
			if !ok {
				return nil, invalid("uuid", s)
			}
			return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
		}
	case "bytea":
		return func(v any) (any, error) {
			switch x := v.(type) {
			case nil:
				return nil, nil
			case []byte:
				return x, nil
			case string:
				return byteaIn(x)
			}
			return []byte(fmt.Sprint(toText(v))), nil
		}
	}
	return func(v any) any { return toText(v) }
}

var (
	regexMu    sync.Mutex
	regexCache = map[string]*regexp.Regexp{}
)

func compile(p, flags string) (*regexp.Regexp, error) {
	key := flags + "\x00" + p
	regexMu.Lock()
	defer regexMu.Unlock()
	if re, ok := regexCache[key]; ok {
		return re, nil
	}
	src := p
	if flags == "i" {
		src = "(?i)" + p
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %v", err)
	}
	if len(regexCache) > 1000 {
		regexCache = map[string]*regexp.Regexp{}
	}
	regexCache[key] = re
	return re, nil
}

func cmpAny(a, b any) int {
	fa, aok := num(a)
	fb, bok := num(b)
	if aok && bok {
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	}
	return strings.Compare(fmt.Sprint(toText(a)), fmt.Sprint(toText(b)))
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func datePart(field string, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if str, isStr := v.(string); isStr && !dateShapeRe.MatchString(str) {
		if iv, ok := parseInterval(str); ok {
			return intervalPart(field, iv)
		}
	}
	tm, ok := toTime(v)
	if !ok {
		return nil, invalid("timestamp", v)
	}
	return datePartTime(field, tm)
}

// datePartTime is date_part of a time's fields in its own zone.
func datePartTime(field string, tm time.Time) (any, error) {
	switch strings.ToLower(field) {
	case "year":
		return float64(tm.Year()), nil
	case "month":
		return float64(tm.Month()), nil
	case "day":
		return float64(tm.Day()), nil
	case "hour":
		return float64(tm.Hour()), nil
	case "minute":
		return float64(tm.Minute()), nil
	case "second":
		return float64(tm.Second()) + float64(tm.Nanosecond())/1e9, nil
	case "milliseconds":
		return float64(tm.Second())*1000 + float64(tm.Nanosecond())/1e6, nil
	case "microseconds":
		return float64(tm.Second())*1e6 + float64(tm.Nanosecond())/1e3, nil
	case "dow":
		return float64(tm.Weekday()), nil
	case "isodow":
		d := int(tm.Weekday())
		if d == 0 {
			d = 7
		}
		return float64(d), nil
	case "doy":
		return float64(tm.YearDay()), nil
	case "week":
		_, w := tm.ISOWeek()
		return float64(w), nil
	case "quarter":
		return float64((int(tm.Month())-1)/3 + 1), nil
	case "epoch":
		return float64(tm.UnixNano()) / 1e9, nil
	case "decade":
		return float64(tm.Year() / 10), nil
	case "century":
		return float64((tm.Year() + 99) / 100), nil
	}
	return nil, fmt.Errorf("unit %q not supported", field)
}

// intervalPart is extract / date_part of an interval: its fields as
// PostgreSQL keeps them (months, days, time), epoch counting a month as
// 30 days and a year as 365.25.
func intervalPart(field string, iv interval) (any, error) {
	us := iv.micros
	switch strings.ToLower(field) {
	case "epoch":
		years, months := iv.months/12, iv.months%12
		return float64(years)*365.25*86400 + float64(months)*30*86400 + float64(iv.days)*86400 + float64(us)/1e6, nil
	case "year":
		return float64(iv.months / 12), nil
	case "month":
		return float64(iv.months % 12), nil
	case "day":
		return float64(iv.days), nil
	case "hour":
		return float64(us / 3600e6), nil
	case "minute":
		return float64(us % 3600e6 / 60e6), nil
	case "second":
		return float64(us%60e6) / 1e6, nil
	case "milliseconds":
		return float64(us%60e6) / 1e3, nil
	case "microseconds":
		return float64(us % 60e6), nil
	}
	return nil, fmt.Errorf("[SQLSTATE 0A000] interval unit %q not supported", field)
}

func dateTrunc(field string, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	tm, ok := toTime(v)
	if !ok {
		return nil, invalid("timestamp", v)
	}
	y, mo, d := tm.Date()
	var out time.Time
	switch strings.ToLower(field) {
	case "year":
		out = time.Date(y, 1, 1, 0, 0, 0, 0, tm.Location())
	case "quarter":
		out = time.Date(y, time.Month((int(mo)-1)/3*3+1), 1, 0, 0, 0, 0, tm.Location())
	case "month":
		out = time.Date(y, mo, 1, 0, 0, 0, 0, tm.Location())
	case "week":
		wd := (int(tm.Weekday()) + 6) % 7
		out = time.Date(y, mo, d-wd, 0, 0, 0, 0, tm.Location())
	case "day":
		out = time.Date(y, mo, d, 0, 0, 0, 0, tm.Location())
	case "hour":
		out = tm.Truncate(time.Hour)
	case "minute":
		out = tm.Truncate(time.Minute)
	case "second":
		out = tm.Truncate(time.Second)
	default:
		return nil, fmt.Errorf("unit %q not supported", field)
	}
	return out.Format(TimestampLayout), nil
}

func pad(s string, n int64, fill string, left bool) string {
	r := []rune(s)
	if int64(len(r)) >= n {
		return string(r[:max(n, 0)])
	}
	if fill == "" {
		return s
	}
	f := []rune(fill)
	var p []rune
	for int64(len(p)+len(r)) < n {
		p = append(p, f[len(p)%len(f)])
	}
	if left {
		return string(p) + s
	}
	return s + string(p)
}

// clock holds one connection's transaction and statement start times:
// now() and CURRENT_TIMESTAMP are the transaction's start, as in
// PostgreSQL, statement_timestamp() the statement's.
type clock struct {
	mu       sync.Mutex
	tx, stmt time.Time
	// settings of the session whose statement runs on the connection
	// (current_setting, set_config).
	settings pgwire.Settings
	// seqs: the sequence values of the session whose statement runs on
	// the connection (currval, lastval); nil outside a client's session.
	seqs *Sequences
	// adv: that session's advisory locks.
	adv *AdvisorySession
	// zoneName, zone: the session's TimeZone as last read (loc).
	zoneName string
	zone     *time.Location
}

var clocks sync.Map // *sqlite3.SQLiteConn -> *clock

// StatementStart marks the start of a statement on c (the back end calls
// it before each one): outside a transaction block it also starts the
// transaction time.
func StatementStart(c *sqlite3.SQLiteConn) {
	v, ok := clocks.Load(c)
	if !ok {
		return
	}
	k := v.(*clock)
	t := time.Now().UTC()
	k.mu.Lock()
	k.stmt = t
	if c.AutoCommit() {
		k.tx = t
	}
	k.mu.Unlock()
}

// Sequences is a session's state of the sequences it used: what nextval
// last returned in the session for each sequence (currval) and for any
// (lastval). As in PostgreSQL it is the session's own, and a rollback
// does not undo it. The zero value is ready to use.
type Sequences struct {
	mu       sync.Mutex
	last     map[string]int64
	lastName string
}

func (q *Sequences) set(name string, v int64, nextval bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.last == nil {
		q.last = map[string]int64{}
	}
	q.last[name] = v
	if nextval {
		q.lastName = name
	}
}

func (q *Sequences) get(name string) (int64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	v, ok := q.last[name]
	return v, ok
}

// Reset forgets every value (DISCARD SEQUENCES, DISCARD ALL).
func (q *Sequences) Reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.last, q.lastName = nil, ""
}

func sessionSequences(c *sqlite3.SQLiteConn) (q *Sequences) {
	withClock(c, func(k *clock) { q = k.seqs })
	return q
}

// UseSession binds a session's settings, sequence state and advisory
// locks to c for the statement about to run on it, in one step (the back
// end calls it before each statement and Describe).
func UseSession(c *sqlite3.SQLiteConn, settings pgwire.Settings, seqs *Sequences, adv *AdvisorySession) {
	withClock(c, func(k *clock) { k.settings, k.seqs, k.adv = settings, seqs, adv })
}

// withClock runs f on c's clock under its lock (nothing when c has none).
func withClock(c *sqlite3.SQLiteConn, f func(k *clock)) {
	if v, ok := clocks.Load(c); ok {
		k := v.(*clock)
		k.mu.Lock()
		defer k.mu.Unlock()
		f(k)
	}
}

// signalBackend is pg_terminate_backend(pid [, timeout]) or
// pg_cancel_backend(pid) for the session whose statement runs on k's
// connection (pgwire.SignalBackend). terminate's timeout is accepted and
// not waited for: the session ends at once or at its next read.
func signalBackend(k *clock, name string, args []any, terminate bool) (any, error) {
	if len(args) < 1 || len(args) > 2 || len(args) == 2 && !terminate {
		return nil, fmt.Errorf("[SQLSTATE 42883] function %s with %d arguments does not exist", name, len(args))
	}
	if args[0] == nil {
		return nil, nil
	}
	pid, ok := args[0].(int64)
	if !ok {
		return nil, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type integer: %q", fmt.Sprint(toText(args[0])))
	}
	done, err := pgwire.SignalBackend(k.sessionSettings(), pid, terminate)
	if err != nil {
		var pe *pgwire.Error
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("[SQLSTATE %s] %s: %s", pe.Code, pe.Message, pe.Detail)
		}
		return nil, err
	}
	return done, nil
}

// activityJSON is the process's sessions (pgwire.Activities) as a JSON
// array, the rows of pg_stat_activity.
func activityJSON() (string, error) {
	type row struct {
		PID          uint32  `json:"pid"`
		User         string  `json:"usename"`
		Database     string  `json:"datname"`
		Application  string  `json:"application_name"`
		ClientAddr   *string `json:"client_addr"`
		ClientPort   *int    `json:"client_port"`
		BackendStart string  `json:"backend_start"`
		XactStart    *string `json:"xact_start"`
		QueryStart   *string `json:"query_start"`
		StateChange  string  `json:"state_change"`
		State        string  `json:"state"`
		Query        string  `json:"query"`
	}
	ts := func(t time.Time) string { return t.UTC().Format(TimestamptzLayout) }
	opt := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		v := ts(t)
		return &v
	}
	var rows []row
	for _, a := range pgwire.Activities() {
		r := row{PID: a.PID, User: a.User, Database: a.Database, Application: a.Application,
			BackendStart: ts(a.BackendStart), XactStart: opt(a.XactStart), QueryStart: opt(a.QueryStart),
			StateChange: ts(a.StateChange), State: a.State, Query: a.Query}
		if a.ClientAddr != "" {
			r.ClientAddr = &a.ClientAddr
		}
		if a.ClientAddr != "" || a.ClientPort != 0 {
			r.ClientPort = &a.ClientPort
		}
		rows = append(rows, r)
	}
	b, err := json.Marshal(rows)
	if rows == nil {
		b = []byte("[]")
	}
	return string(b), err
}

func (k *clock) sessionSettings() pgwire.Settings {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.settings
}

// Forget drops c's clock (the connection is closed).
func Forget(c *sqlite3.SQLiteConn) { clocks.Delete(c) }

func (k *clock) times() (tx, stmt time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now().UTC()
	if k.tx.IsZero() {
		k.tx = now
	}
	if k.stmt.IsZero() {
		k.stmt = now
	}
	return k.tx, k.stmt
}

// pgFormat is PostgreSQL's format(): %s (text, NULL as empty), %I (an
// identifier, quoted when needed), %L (a literal, NULL unquoted), %%, and
// argument positions (%2$s).
func pgFormat(f string, args ...any) (any, error) {
	var b strings.Builder
	next := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(f) {
			return nil, fmt.Errorf("[SQLSTATE 22023] unterminated format() type specifier")
		}
		if f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		arg := next
		if j := strings.IndexByte(f[i:], '$'); j > 0 {
			if n, err := strconv.Atoi(f[i : i+j]); err == nil {
				arg, i = n-1, i+j+1
			}
		}
		if i >= len(f) {
			return nil, fmt.Errorf("[SQLSTATE 22023] unterminated format() type specifier")
		}
		if arg < 0 || arg >= len(args) {
			return nil, fmt.Errorf("[SQLSTATE 22023] too few arguments for format()")
		}
		next = arg + 1
		v := args[arg]
		switch f[i] {
		case 's':
			if v != nil {
				b.WriteString(fmt.Sprint(toText(v)))
			}
		case 'I':
			if v == nil {
				return nil, fmt.Errorf("[SQLSTATE 22004] null values cannot be formatted as an SQL identifier")
			}
			id := fmt.Sprint(toText(v))
			if id != "" && strings.ToLower(id) == id && !strings.ContainsAny(id, " \"-.") {
				b.WriteString(id)
			} else {
				b.WriteString(`"` + strings.ReplaceAll(id, `"`, `""`) + `"`)
			}
		case 'L':
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString("'" + strings.ReplaceAll(fmt.Sprint(toText(v)), "'", "''") + "'")
			}
		default:
			return nil, fmt.Errorf("[SQLSTATE 22023] unrecognized format() type specifier \"%c\"", f[i])
		}
	}
	return b.String(), nil
}

// intRangeFunc checks an integer result against its type's range (SQLite
// turns an overflowing 64-bit result into a float).
func intRangeFunc(name string, lo, hi int64) func(v any) (any, error) {
	return func(v any) (any, error) {
		switch x := v.(type) {
		case nil:
			return nil, nil
		case int64:
			if x < lo || x > hi {
				return nil, fmt.Errorf("[SQLSTATE 22003] %s out of range", name)
			}
			return x, nil
		case float64:
			return nil, fmt.Errorf("[SQLSTATE 22003] %s out of range", name)
		}
		return v, nil
	}
}

// RegisterFunctions registers every function the translator emits.
func RegisterFunctions(c *sqlite3.SQLiteConn) error {
	if err := registerAggregates(c); err != nil {
		return err
	}
	if err := registerEnumFunctions(c); err != nil {
		return err
	}
	if err := registerAdvisoryFunctions(c); err != nil {
		return err
	}
	if err := registerSequenceFunctions(c); err != nil {
		return err
	}
	if err := registerDMLFunction(c); err != nil {
		return err
	}
	reg := func(name string, fn any, pure bool) error {
		if err := c.RegisterFunc(name, nullsAsNil(fn), pure); err != nil {
			return fmt.Errorf("sqlpg: register %s: %w", name, err)
		}
		return nil
	}
	seen := map[string]bool{}
	for _, t := range Types {
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		if err := reg("_cast_"+t.Name, castFunc(t), true); err != nil {
			return err
		}
	}
	k := &clock{}
	clocks.Store(c, k)
	now := func() string { t, _ := k.times(); return t.Format(TimestamptzLayout) }
	stmtNow := func() string { _, t := k.times(); return t.Format(TimestamptzLayout) }
	clockNow := func() string { return time.Now().UTC().Format(TimestamptzLayout) }
	unknownSetting := func(name string) error {
		return fmt.Errorf("[SQLSTATE 42704] unrecognized configuration parameter %q", name)
	}
	currentSetting := func(args ...any) (any, error) {
		if len(args) < 1 || len(args) > 2 {
			return nil, fmt.Errorf("[SQLSTATE 42883] function current_setting with %d arguments does not exist", len(args))
		}
		if args[0] == nil {
			return nil, nil
		}
		name := strings.ToLower(fmt.Sprint(toText(args[0])))
		missingOK := false
		if len(args) == 2 {
			b, err := toBool(args[1])
			if err != nil {
				return nil, err
			}
			missingOK = b == true
		}
		if st := k.sessionSettings(); st != nil {
			if v, ok := st.Setting(name); ok {
				return v, nil
			}
		}
		if missingOK {
			return nil, nil
		}
		return nil, unknownSetting(name)
	}
	setConfig := func(name, value, local any) (any, error) {
		if name == nil {
			return nil, fmt.Errorf("[SQLSTATE 22004] SET requires parameter name")
		}
		n, v := strings.ToLower(fmt.Sprint(toText(name))), ""
		if value != nil {
			v = fmt.Sprint(toText(value))
		}
		if st := k.sessionSettings(); st != nil {
			set := st.SetSetting
			if b, _ := toBool(local); b == true {
				ls, ok := st.(pgwire.LocalSettings)
				if !ok {
					return v, nil // a session without blocks of its own
				}
				set = ls.SetLocalSetting // until the block ends
			}
			if err := set(n, v); err != nil {
				var pe *pgwire.Error
				if errors.As(err, &pe) {
					return nil, fmt.Errorf("[SQLSTATE %s] %s", pe.Code, pe.Message)
				}
				return nil, err
			}
		}
		return v, nil
	}
	fns := []struct {
		name string
		fn   any
		pure bool
	}{
		{"_pg_distinct", func(a, b any) bool {
			if a == nil || b == nil {
				return (a == nil) != (b == nil)
			}
			return cmpAny(a, b) != 0
		}, true},
		{"_pg_not_distinct", func(a, b any) bool {
			if a == nil || b == nil {
				return a == nil && b == nil
			}
			return cmpAny(a, b) == 0
		}, true},
		{"_pg_regex", func(s, p any, flags string) (any, error) {
			if s == nil || p == nil {
				return nil, nil
			}
			re, err := compile(fmt.Sprint(toText(p)), flags)
			if err != nil {
				return nil, err
			}
			return re.MatchString(fmt.Sprint(toText(s))), nil
		}, true},
		{"_pg_not_regex", func(s, p any, flags string) (any, error) {
			if s == nil || p == nil {
				return nil, nil
			}
			re, err := compile(fmt.Sprint(toText(p)), flags)
			if err != nil {
				return nil, err
			}
			return !re.MatchString(fmt.Sprint(toText(s))), nil
		}, true},
		{"_pg_now", now, false},
		{"_pg_current_timestamp", now, false},
		{"current_setting", currentSetting, false},
		{"set_config", setConfig, false},
		{"pg_backend_pid", func() int64 {
			if p, ok := k.sessionSettings().(interface{ BackendPID() uint32 }); ok {
				return int64(p.BackendPID())
			}
			return int64(os.Getpid())
		}, false},
		{"pg_terminate_backend", func(args ...any) (any, error) { return signalBackend(k, "pg_terminate_backend", args, true) }, false},
		{"pg_cancel_backend", func(args ...any) (any, error) { return signalBackend(k, "pg_cancel_backend", args, false) }, false},
		{"_tandem_activity", activityJSON, false},
		{"_pg_int2_range", intRangeFunc("smallint", -32768, 32767), true},
		{"_pg_numeric_typmod", numericTypmod, true},
		{"_pg_numeric_text", func(v any, scale int64) any {
			switch x := v.(type) {
			case int64:
				if scale == 0 {
					return strconv.FormatInt(x, 10)
				}
				return strconv.FormatInt(x, 10) + "." + strings.Repeat("0", int(scale))
			case float64:
				return FormatNumeric(x, int(scale))
			}
			return v
		}, true},
		{"_pg_int4_range", intRangeFunc("integer", -2147483648, 2147483647), true},
		{"_pg_int8_range", intRangeFunc("bigint", -9223372036854775808, 9223372036854775807), true},
		{"_pg_raise", func(code, msg string) (any, error) { return nil, fmt.Errorf("[SQLSTATE %s] %s", code, msg) }, false},
		{"_tandem_alter_column", func(create, col, action string, arg any) (string, error) {
			a, _ := arg.(string)
			out, err := AlterColumnSQL(create, col, action, a)
			if err != nil {
				return "", fmt.Errorf("[SQLSTATE 0A000] %v on the SQLite back end", err)
			}
			return out, nil
		}, true},
		{"_tandem_constraint_name", func(create any, kind, cols string) any {
			c, _ := create.(string)
			if name := ConstraintName(c, kind, cols); name != "" {
				return name
			}
			return nil
		}, true},
		{"_tandem_fk_deferral", func(create any, cols string) int64 {
			c, _ := create.(string)
			return int64(FKDeferral(c, cols))
		}, true},
		{"_tandem_checks", func(args ...any) (string, error) {
			// The table's CHECK constraints as JSON (pg_constraint's
			// contype 'c' rows): name, definition, columns read. With
			// the table's column types (JSON: name -> type OID) the
			// definition is PostgreSQL's deparse where pgCheckExpr
			// knows it.
			var c string
			if len(args) > 0 {
				c, _ = args[0].(string)
			}
			var types map[string]uint32
			if len(args) > 1 {
				if s, ok := args[1].(string); ok {
					_ = json.Unmarshal([]byte(s), &types)
				}
			}
			type check struct {
				Name string   `json:"name"`
				Def  string   `json:"def"`
				Cols []string `json:"cols"`
			}
			out := []check{}
			for _, k := range CheckConstraints(c) {
				def := "CHECK (" + k.Group + ")"
				if types != nil {
					if e, ok := pgCheckExpr(k.Group, types); ok {
						def = "CHECK (" + e + ")"
					}
				}
				out = append(out, check{k.Name, def, k.Cols})
			}
			b, err := json.Marshal(out)
			return string(b), err
		}, true},
		{"_pg_statement_timestamp", stmtNow, false},
		{"_pg_clock_timestamp", clockNow, false},
		{"_pg_current_date", func() string { t, _ := k.times(); return t.Format(DateLayout) }, false},
		{"_pg_localtimestamp", func() string { t, _ := k.times(); return t.Format(TimestampLayout) }, false},
		{"_pg_current_time", func() string { t, _ := k.times(); return t.Format("15:04:05.999999") }, false},
		{"_pg_random", func() float64 { return mrand.Float64() }, false},
		{"_pg_date_part", datePart, true},
		{"date_trunc", dateTrunc, true},
		{"_pg_greatest", func(args ...any) any {
			var best any
			for _, a := range args {
				if a != nil && (best == nil || cmpAny(a, best) > 0) {
					best = a
				}
			}
			return best
		}, true},
		{"_pg_least", func(args ...any) any {
			var best any
			for _, a := range args {
				if a != nil && (best == nil || cmpAny(a, best) < 0) {
					best = a
				}
			}
			return best
		}, true},
		{"_pg_round", func(v any, digits ...int64) any {
			d := 0
			if len(digits) > 0 {
				d = int(digits[0])
			}
			switch x := v.(type) {
			case float64:
				return RoundNumeric(x, d)
			case int64:
				if d < 0 {
					return int64(RoundNumeric(float64(x), d))
				}
			}
			return v
		}, true},
		{"_pg_log10", f1(math.Log10), true},
		{"ceil", f1(math.Ceil), true},
		{"floor", f1(math.Floor), true},
		{"trunc", func(v any, digits ...int64) any {
			x, ok := numeric(v)
			if !ok {
				return nil
			}
			if len(digits) == 1 {
				p := math.Pow(10, float64(digits[0]))
				return math.Trunc(x*p) / p
			}
			return math.Trunc(x)
		}, true},
		{"sqrt", func(v any) (any, error) {
			x, ok := num(v)
			if v == nil || !ok {
				return nil, nil
			}
			if x < 0 {
				return nil, errors.New("cannot take square root of a negative number")
			}
			return math.Sqrt(x), nil
		}, true},
		{"cbrt", f1(math.Cbrt), true},
		{"power", f2(math.Pow), true},
		{"exp", f1(math.Exp), true},
		{"ln", func(v any) (any, error) {
			x, ok := numeric(v)
			if !ok {
				return nil, nil
			}
			if x == 0 {
				return nil, errors.New("cannot take logarithm of zero")
			}
			if x < 0 {
				return nil, errors.New("cannot take logarithm of a negative number")
			}
			return math.Log(x), nil
		}, true},
		{"log", func(args ...any) any {
			var f []float64
			for _, a := range args {
				x, ok := num(a)
				if !ok {
					return nil
				}
				f = append(f, x)
			}
			if len(f) == 2 {
				return math.Log(f[1]) / math.Log(f[0])
			}
			if len(f) == 1 {
				return math.Log10(f[0])
			}
			return nil
		}, true},
		{"pi", func() float64 { return math.Pi }, true},
		{"degrees", f1(func(x float64) float64 { return x * 180 / math.Pi }), true},
		{"radians", f1(func(x float64) float64 { return x * math.Pi / 180 }), true},
		{"sign", func(v any) any {
			x, ok := num(v)
			if !ok {
				return nil
			}
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		}, true},
		{"mod", func(a, b int64) (int64, error) {
			if b == 0 {
				return 0, errors.New("division by zero")
			}
			return a % b, nil
		}, true},
		{"div", func(av, bv any) (any, error) {
			a, aok := num(av)
			b, bok := num(bv)
			if !aok || !bok {
				return nil, nil
			}
			if b == 0 {
				return 0, errors.New("division by zero")
			}
			return int64(a / b), nil
		}, true},
		{"concat", func(args ...any) string {
			var b strings.Builder
			for _, a := range args {
				if a != nil {
					b.WriteString(fmt.Sprint(toText(a)))
				}
			}
			return b.String()
		}, true},
		{"concat_ws", func(sep string, args ...any) string {
			var parts []string
			for _, a := range args {
				if a != nil {
					parts = append(parts, fmt.Sprint(toText(a)))
				}
			}
			return strings.Join(parts, sep)
		}, true},
		{"left", func(s string, n int64) string {
			r := []rune(s)
			if n < 0 {
				n = max(int64(len(r))+n, 0)
			}
			return string(r[:min(n, int64(len(r)))])
		}, true},
		{"right", func(s string, n int64) string {
			r := []rune(s)
			if n < 0 {
				n = max(int64(len(r))+n, 0)
			}
			n = min(n, int64(len(r)))
			return string(r[int64(len(r))-n:])
		}, true},
		{"lpad", func(s string, n int64, fill ...string) string {
			f := " "
			if len(fill) > 0 {
				f = fill[0]
			}
			return pad(s, n, f, true)
		}, true},
		{"rpad", func(s string, n int64, fill ...string) string {
			f := " "
			if len(fill) > 0 {
				f = fill[0]
			}
			return pad(s, n, f, false)
		}, true},
		{"repeat", func(s string, n int64) string {
			if n <= 0 {
				return ""
			}
			return strings.Repeat(s, int(n))
		}, true},
		{"reverse", func(s string) string {
			r := []rune(s)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			return string(r)
		}, true},
		{"split_part", func(s, sep string, n int64) (string, error) {
			if n == 0 {
				return "", errors.New("field position must not be zero")
			}
			parts := strings.Split(s, sep)
			if n < 0 {
				n = int64(len(parts)) + n + 1
			}
			if n < 1 || n > int64(len(parts)) {
				return "", nil
			}
			return parts[n-1], nil
		}, true},
		{"initcap", func(s string) string {
			r := []rune(strings.ToLower(s))
			up := true
			for i, c := range r {
				if up && unicode.IsLetter(c) {
					r[i] = unicode.ToUpper(c)
				}
				up = !unicode.IsLetter(c) && !unicode.IsDigit(c)
			}
			return string(r)
		}, true},
		{"md5", func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }, true},
		{"to_hex", func(n int64) string { return strconv.FormatInt(n, 16) }, true},
		{"chr", func(n int64) string { return string(rune(n)) }, true},
		{"ascii", func(s string) int64 {
			for _, r := range s {
				return int64(r)
			}
			return 0
		}, true},
		{"starts_with", func(s, p string) bool { return strings.HasPrefix(s, p) }, true},
		{"translate", func(s, from, to string) string {
			f, t := []rune(from), []rune(to)
			var b strings.Builder
			for _, c := range s {
				i := strings.IndexRune(string(f), c)
				if i < 0 {
					b.WriteRune(c)
					continue
				}
				idx := len([]rune(string(f)[:i]))
				if idx < len(t) {
					b.WriteRune(t[idx])
				}
			}
			return b.String()
		}, true},
		// PostgreSQL's upper / lower under a UTF-8 locale change every
		// letter; SQLite's only ASCII ones (ILIKE is lower() LIKE lower()).
		{"upper", caseFunc(strings.ToUpper), true},
		{"lower", caseFunc(strings.ToLower), true},
		{"_pg_rint", func(v any) any {
			if x, ok := v.(float64); ok {
				return math.RoundToEven(x) // round(double precision) is rint()
			}
			return v
		}, true},
		{"gen_random_uuid", func() string {
			var b [16]byte
			_, _ = rand.Read(b[:])
			b[6] = b[6]&0x0f | 0x40
			b[8] = b[8]&0x3f | 0x80
			h := hex.EncodeToString(b[:])
			return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
		}, false},
		{"current_database", func() string { return "tandem" }, true},
		{"current_schema", func() string { return "public" }, true},
		{"current_user", func() string { return "tandem" }, true},
	}
	for _, f := range fns {
		if err := reg(f.name, f.fn, f.pure); err != nil {
			return err
		}
	}
	for _, f := range extraFuncs {
		if err := reg(f.name, f.fn, true); err != nil {
			return err
		}
	}
	for _, f := range zoneFuncs(k) {
		// Over the zone-less versions above: the clock's read the
		// statement's time, the rest are deterministic as before.
		pure := !strings.HasPrefix(f.name, "_pg_current_") && f.name != "_pg_localtimestamp"
		if err := reg(f.name, f.fn, pure); err != nil {
			return err
		}
	}
	return registerExtensionFunctions(c)
}

// Arrays are carried as PostgreSQL's text form, '{a,b}' (see docs/sql.md).

// isVector reports whether a is an int2vector or oidvector ("1 2 3", the
// catalogs' pg_index.indkey): its subscripts start at 0.
func isVector(a any) bool {
	s := strings.TrimSpace(fmt.Sprint(toText(a)))
	return s != "" && s[0] != '{'
}

func arrayElems(a any) []string {
	s := strings.TrimSpace(fmt.Sprint(toText(a)))
	if len(s) > 0 && s[0] != '{' {
		// int2vector / oidvector text form: "1 2 3"
		return strings.Fields(s)
	}
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil
	}
	s = s[1 : len(s)-1]
	if s == "" {
		return nil
	}
	var out []string
	var b strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == ',' && !quoted:
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(out, b.String())
}

// elemValues are an array's elements as arrayLiteral takes them back
// (NULL elements as nil).
func elemValues(arr any) []any {
	if arr == nil {
		return nil
	}
	var out []any
	for _, e := range arrayElems(arr) {
		if e == "NULL" {
			out = append(out, nil)
		} else {
			out = append(out, e)
		}
	}
	return out
}

func arrayLiteral(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if a == nil {
			parts[i] = "NULL"
			continue
		}
		v := fmt.Sprint(toText(a))
		if v == "" || strings.ContainsAny(v, `,{}" \`) || strings.EqualFold(v, "null") {
			v = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
		}
		parts[i] = v
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func arrayHas(arr, x any) any {
	if arr == nil || x == nil {
		return nil
	}
	want := fmt.Sprint(toText(x))
	for _, e := range arrayElems(arr) {
		if e == want {
			return true
		}
	}
	return false
}

// arrayMatch: with all, whether every element of b is in a (a @> b);
// else whether one is (a && b). NULL when either is NULL.
func arrayMatch(a, b any, all bool) any {
	if a == nil || b == nil {
		return nil
	}
	have := map[string]bool{}
	for _, e := range arrayElems(a) {
		have[e] = true
	}
	for _, e := range arrayElems(b) {
		if have[e] != all {
			return !all
		}
	}
	return all
}

func init() {
	extraFuncs = append(extraFuncs,
		namedFunc{"_pg_array", func(args ...any) string { return arrayLiteral(args) }},
		namedFunc{"_pg_array_md", func(args ...any) (any, error) {
			parts := make([]string, len(args))
			for i, a := range args {
				if a == nil {
					return nil, fmt.Errorf("[SQLSTATE 2202E] multidimensional arrays must have array expressions with matching dimensions")
				}
				parts[i] = fmt.Sprint(toText(a))
			}
			return "{" + strings.Join(parts, ",") + "}", nil
		}},
		namedFunc{"_pg_substring", pgSubstring},
		namedFunc{"_pg_array_has", arrayHas},
		// a @> b: every element of b is in a; a && b: they share one.
		namedFunc{"_pg_array_contains", func(a, b any) any { return arrayMatch(a, b, true) }},
		namedFunc{"_pg_array_overlap", func(a, b any) any { return arrayMatch(a, b, false) }},
		namedFunc{"_pg_array_cat", func(a, b any, aArr, bArr bool) any {
			// array || array, array || element, element || array
			var parts []any
			add := func(v any, isArr bool) {
				if !isArr {
					parts = append(parts, v)
					return
				}
				if v == nil {
					return
				}
				for _, e := range arrayElems(v) {
					if e == "NULL" {
						parts = append(parts, nil)
					} else {
						parts = append(parts, e)
					}
				}
			}
			add(a, aArr)
			add(b, bArr)
			return arrayLiteral(parts)
		}},
		namedFunc{"array_position", func(arr, x any) any {
			if arr == nil || x == nil {
				return nil
			}
			want := fmt.Sprint(toText(x))
			for i, e := range arrayElems(arr) {
				if e == want {
					return int64(i + 1)
				}
			}
			return nil
		}},
		namedFunc{"_pg_array_subscripts", func(args ...any) (any, error) {
			// generate_subscripts(arr [, dim]) as an array: 1..n, or
			// 0..n-1 for an int2vector or oidvector (pg_index.indkey).
			if len(args) == 0 || args[0] == nil || len(args) > 1 && args[1] == nil {
				return "{}", nil
			}
			if len(args) > 1 {
				if d, ok := args[1].(int64); !ok || d != 1 {
					dims := arrayDims(args[0])
					if !ok || d < 1 || int(d) > len(dims) {
						return "{}", nil
					}
					return seriesText(1, int64(dims[d-1]), 1), nil
				}
			}
			n := int64(len(arrayElems(args[0])))
			if dims := arrayDims(args[0]); len(dims) > 0 {
				n = int64(dims[0])
			}
			if isVector(args[0]) {
				return seriesText(0, n-1, 1), nil
			}
			return seriesText(1, n, 1), nil
		}},
		namedFunc{"_pg_series_array", func(args ...any) (any, error) {
			// generate_series(a, b [, step]) of integers as an array.
			if len(args) < 2 || args[0] == nil || args[1] == nil || len(args) > 2 && args[2] == nil {
				return "{}", nil
			}
			var v [3]int64
			v[2] = 1
			for i, a := range args {
				x, ok := a.(int64)
				if !ok {
					f, isF := a.(float64)
					if !isF || f != math.Trunc(f) {
						return nil, fmt.Errorf("[SQLSTATE 0A000] generate_series over a column of a type other than an integer is not supported on the SQLite back end")
					}
					x = int64(f)
				}
				v[i] = x
			}
			if v[2] == 0 {
				return nil, fmt.Errorf("[SQLSTATE 22023] step size cannot equal zero")
			}
			if n := (v[1] - v[0]) / v[2]; n > 10_000_000 {
				return nil, fmt.Errorf("[SQLSTATE 54000] generate_series over a column is limited to 10000000 values on the SQLite back end")
			}
			return seriesText(v[0], v[1], v[2]), nil
		}},
		namedFunc{"_pg_array_json", func(arr any) any { return arrayJSON(arr, 0) }},
		// _pg_array_json_pad(a, a1, ..., an): a's elements padded with
		// nulls to the longest of a1 ... an (set-returning functions in
		// one select list run in lockstep until the longest ends).
		namedFunc{"_pg_array_json_pad", func(args ...any) any {
			n := 0
			for _, a := range args[1:] {
				if a != nil {
					n = max(n, len(arrayElems(a)))
				}
			}
			return arrayJSON(args[0], n)
		}},
		namedFunc{"_pg_array_elem", func(v any) string {
			if v == nil {
				return "NULL"
			}
			return strings.Trim(arrayLiteral([]any{v}), "{}")
		}},
		namedFunc{"_pg_array_lacks", func(arr, x any) any {
			r := arrayHas(arr, x)
			if b, ok := r.(bool); ok {
				return !b
			}
			return r
		}},
		namedFunc{"array_length", func(arr any, dim int64) any {
			if d := arrayDims(arr); dim >= 1 && dim <= int64(len(d)) {
				return int64(d[dim-1])
			}
			return nil
		}},
		namedFunc{"_pg_array_get", func(arr any, i int64) any {
			if arr == nil {
				return nil
			}
			text := strings.TrimSpace(fmt.Sprint(toText(arr)))
			e := arrayElems(text)
			if isVector(text) {
				i++ // an int2vector's or oidvector's subscripts start at 0
			}
			if i < 1 || i > int64(len(e)) || e[i-1] == "NULL" {
				return nil
			}
			return e[i-1]
		}},
		namedFunc{"array_upper", func(arr any, dim int64) any {
			if d := arrayDims(arr); dim >= 1 && dim <= int64(len(d)) {
				if isVector(arr) {
					return int64(d[dim-1] - 1)
				}
				return int64(d[dim-1])
			}
			return nil
		}},
		namedFunc{"array_lower", func(arr any, dim int64) any {
			if d := arrayDims(arr); dim >= 1 && dim <= int64(len(d)) {
				if isVector(arr) {
					return int64(0)
				}
				return int64(1)
			}
			return nil
		}},
		namedFunc{"array_remove", func(arr, x any) any {
			if arr == nil {
				return nil
			}
			var keep []any
			for _, e := range arrayElems(arr) {
				if x == nil && e == "NULL" {
					continue
				}
				if x != nil && e == fmt.Sprint(toText(x)) {
					continue
				}
				keep = append(keep, e)
			}
			return arrayLiteral(keep)
		}},
		namedFunc{"array_append", func(arr, x any) any {
			return arrayLiteral(append(elemValues(arr), x))
		}},
		namedFunc{"array_prepend", func(x, arr any) any {
			return arrayLiteral(append([]any{x}, elemValues(arr)...))
		}},
		namedFunc{"array_cat", func(a, b any) any {
			if a == nil && b == nil {
				return nil
			}
			return arrayLiteral(append(elemValues(a), elemValues(b)...))
		}},
		namedFunc{"array_replace", func(arr, from, to any) any {
			if arr == nil {
				return nil
			}
			out := elemValues(arr)
			for i, e := range out {
				if e == nil && from == nil || e != nil && from != nil && e == fmt.Sprint(toText(from)) {
					out[i] = to
				}
			}
			return arrayLiteral(out)
		}},
		namedFunc{"cardinality", func(arr any) any {
			if arr == nil {
				return nil
			}
			return int64(len(arrayValues(arr))) // every element of every dimension
		}},
	)
}

type namedFunc struct {
	name string
	fn   any
}

var extraFuncs []namedFunc

// f1 and f2 lift float functions to SQLite's dynamic values (integers,
// doubles, numeric text; NULL in, NULL out).
func f1(fn func(float64) float64) func(any) any {
	return func(v any) any {
		x, ok := numeric(v)
		if !ok {
			return nil
		}
		return fn(x)
	}
}

func f2(fn func(float64, float64) float64) func(any, any) any {
	return func(a, b any) any {
		x, ok1 := numeric(a)
		y, ok2 := numeric(b)
		if !ok1 || !ok2 {
			return nil
		}
		return fn(x, y)
	}
}

func numeric(v any) (float64, bool) {
	if x, ok := num(v); ok {
		return x, true
	}
	if s, ok := v.(string); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return f, err == nil
	}
	return 0, false
}

// seriesText is the integer array {a, a+step, ... up to b}.
func seriesText(a, b, step int64) string {
	var sb strings.Builder
	sb.WriteByte('{')
	first := true
	for x := a; step > 0 && x <= b || step < 0 && x >= b; x += step {
		if !first {
			sb.WriteByte(',')
		}
		first = false
		sb.WriteString(strconv.FormatInt(x, 10))
	}
	sb.WriteByte('}')
	return sb.String()
}

// byteaIn reads bytea's input forms: hex (\x0001ff, spaces between
// pairs allowed) and escape (characters as they are, \\ for a backslash,
// \ooo for a byte in octal).
func byteaIn(s string) ([]byte, error) {
	if strings.HasPrefix(s, `\x`) {
		digits := strings.Join(strings.Fields(s[2:]), "")
		for _, r := range digits {
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return nil, fmt.Errorf("[SQLSTATE 22023] invalid hexadecimal digit: %q", string(r))
			}
		}
		if len(digits)%2 != 0 {
			return nil, fmt.Errorf("[SQLSTATE 22023] invalid hexadecimal data: odd number of digits")
		}
		b, err := hex.DecodeString(digits)
		if err != nil {
			return nil, invalid("bytea", s)
		}
		return b, nil
	}
	if !strings.Contains(s, `\`) {
		return []byte(s), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && s[i+2] >= '0' && s[i+2] <= '7' && s[i+3] >= '0' && s[i+3] <= '7':
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return nil, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type bytea")
		}
	}
	return out, nil
}

func init() {
	extraFuncs = append(extraFuncs,
		namedFunc{"_pg_bytea_text", func(a any) (any, error) {
			switch x := a.(type) {
			case nil:
				return nil, nil
			case []byte:
				return `\x` + hex.EncodeToString(x), nil
			case string:
				return `\x` + hex.EncodeToString([]byte(x)), nil
			}
			return `\x` + hex.EncodeToString([]byte(fmt.Sprint(toText(a)))), nil
		}},
		namedFunc{"_pg_div", func(a, b any) (any, error) {
			if a == nil || b == nil {
				return nil, nil
			}
			ai, aInt := a.(int64)
			bi, bInt := b.(int64)
			if aInt && bInt {
				if bi == 0 {
					return nil, errDivZero
				}
				return ai / bi, nil
			}
			x, ok1 := numeric(a)
			y, ok2 := numeric(b)
			if !ok1 || !ok2 {
				return nil, invalid("numeric", b)
			}
			if y == 0 {
				return nil, errDivZero
			}
			return x / y, nil
		}},
		namedFunc{"_pg_fdiv", func(a, b any) (any, error) {
			// a / b of a numeric or a float: never an integer division.
			if a == nil || b == nil {
				return nil, nil
			}
			x, ok1 := numeric(a)
			y, ok2 := numeric(b)
			if !ok1 || !ok2 {
				return nil, invalid("numeric", b)
			}
			if y == 0 {
				return nil, errDivZero
			}
			return x / y, nil
		}},
		namedFunc{"_pg_mod", func(a, b any) (any, error) {
			if a == nil || b == nil {
				return nil, nil
			}
			ai, aInt := a.(int64)
			bi, bInt := b.(int64)
			if aInt && bInt {
				if bi == 0 {
					return nil, errDivZero
				}
				return ai % bi, nil
			}
			x, ok1 := numeric(a)
			y, ok2 := numeric(b)
			if !ok1 || !ok2 {
				return nil, invalid("numeric", b)
			}
			if y == 0 {
				return nil, errDivZero
			}
			return math.Mod(x, y), nil
		}},
		namedFunc{"_pg_format", pgFormat},
		namedFunc{"quote_literal", func(v any) any {
			if v == nil {
				return nil
			}
			return "'" + strings.ReplaceAll(fmt.Sprint(toText(v)), "'", "''") + "'"
		}},
		namedFunc{"quote_nullable", func(v any) any {
			if v == nil {
				return "NULL"
			}
			return "'" + strings.ReplaceAll(fmt.Sprint(toText(v)), "'", "''") + "'"
		}},
		namedFunc{"quote_ident", QuoteIdent},
		namedFunc{"make_date", func(y, m, d int64) string {
			return time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC).Format(DateLayout)
		}},
		namedFunc{"to_timestamp", func(v any) any {
			x, ok := numeric(v)
			if !ok {
				return nil
			}
			return time.Unix(0, int64(x*1e9)).UTC().Format(TimestamptzLayout)
		}},
		namedFunc{"jsonb_typeof", jsonTypeof},
		namedFunc{"json_typeof", jsonTypeof},
	)
}

func jsonTypeof(v any) any {
	if v == nil {
		return nil
	}
	s := strings.TrimSpace(fmt.Sprint(toText(v)))
	switch {
	case s == "null":
		return "null"
	case s == "true" || s == "false":
		return "boolean"
	case strings.HasPrefix(s, "{"):
		return "object"
	case strings.HasPrefix(s, "["):
		return "array"
	case strings.HasPrefix(s, `"`):
		return "string"
	}
	return "number"
}

// nullsAsNil wraps a function so that SQL NULL reaches its interface
// parameters as nil (the driver passes a nil []byte).
func nullsAsNil(fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	if w := strict(fn); reflect.ValueOf(w).Pointer() != v.Pointer() {
		return w
	}
	has := false
	for i := 0; i < t.NumIn(); i++ {
		in := t.In(i)
		if in.Kind() == reflect.Interface || (t.IsVariadic() && i == t.NumIn()-1 && in.Elem().Kind() == reflect.Interface) {
			has = true
		}
	}
	if !has {
		return fn
	}
	fix := func(a reflect.Value) reflect.Value {
		if a.Kind() == reflect.Interface && !a.IsNil() {
			if b, ok := a.Interface().([]byte); ok && b == nil {
				return reflect.Zero(a.Type())
			}
		}
		return a
	}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		for i := range args {
			if t.IsVariadic() && i == len(args)-1 {
				s := args[i]
				for j := 0; j < s.Len(); j++ {
					s.Index(j).Set(fix(s.Index(j)))
				}
				continue
			}
			args[i] = fix(args[i])
		}
		if t.IsVariadic() {
			return v.CallSlice(args)
		}
		return v.Call(args)
	}).Interface()
}

var (
	anyType   = reflect.TypeOf((*any)(nil)).Elem()
	errorType = reflect.TypeOf((*error)(nil)).Elem()
)

// strict makes fn, a function of typed arguments (string, int64, float64,
// bool, []byte), a strict SQL function as PostgreSQL's are: NULL when any
// argument is NULL. Called with a NULL, the SQLite driver refused the
// call for such a function ("argument must be BLOB or TEXT"), so
// lpad(c, 3) of a NULL c failed the whole statement. A number given for
// a text argument is its text, a whole double or a numeric text for an
// integer one its value. Other functions are returned as they are.
func strict(fn any) any {
	if f := strictFast(fn); f != nil {
		return f
	}
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func || t.NumIn() == 0 || t.NumOut() == 0 || t.NumOut() > 2 ||
		t.NumOut() == 2 && t.Out(1) != errorType {
		return fn
	}
	simple := func(p reflect.Type) bool {
		switch p.Kind() {
		case reflect.String, reflect.Int64, reflect.Float64, reflect.Bool:
			return true
		case reflect.Slice:
			return p.Elem().Kind() == reflect.Uint8
		}
		return false
	}
	fixed := t.NumIn()
	if t.IsVariadic() {
		fixed--
	}
	if fixed == 0 {
		return fn
	}
	for i := 0; i < fixed; i++ {
		if !simple(t.In(i)) {
			return fn
		}
	}
	// A variadic tail of a simple type is strict too (lpad's fill); one
	// of any type takes NULLs (concat_ws skips them).
	var tail reflect.Type
	if t.IsVariadic() {
		tail = t.In(fixed).Elem()
		if !simple(tail) && tail != anyType {
			return fn
		}
	}
	ins := make([]reflect.Type, fixed)
	for i := range ins {
		ins[i] = anyType
	}
	if tail != nil {
		ins = append(ins, reflect.TypeOf([]any(nil)))
	}
	// Always with an error: a conversion's failure is the call's error.
	outs := []reflect.Type{anyType, errorType}
	ft := reflect.FuncOf(ins, outs, tail != nil)
	nilErr := reflect.Zero(errorType)
	answer := func(val reflect.Value, err error) []reflect.Value {
		out := []reflect.Value{reflect.Zero(anyType), nilErr}
		if val.IsValid() {
			out[0] = reflect.ValueOf(&[]any{val.Interface()}[0]).Elem()
		}
		if err != nil {
			out[1] = reflect.ValueOf(&err).Elem()
		}
		return out
	}
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		vals := make([]any, 0, len(args))
		for i, a := range args {
			if tail != nil && i == fixed {
				vals = append(vals, a.Interface().([]any)...)
				continue
			}
			vals = append(vals, a.Interface())
		}
		call := make([]reflect.Value, len(vals))
		for i, x := range vals {
			to := tail
			if i < fixed {
				to = t.In(i)
			}
			if to == anyType {
				if b, ok := x.([]byte); ok && b == nil {
					x = nil
				}
				call[i] = reflect.ValueOf(&x).Elem()
				continue
			}
			if b, ok := x.([]byte); x == nil || ok && b == nil && to.Kind() != reflect.Slice {
				return answer(reflect.Value{}, nil) // NULL in, NULL out
			}
			c, err := strictArg(x, to)
			if err != nil {
				return answer(reflect.Value{}, err)
			}
			call[i] = c
		}
		res := v.Call(call)
		if len(res) == 2 && !res[1].IsNil() {
			return answer(reflect.Value{}, res[1].Interface().(error))
		}
		return answer(res[0], nil)
	}).Interface()
}

// strictString is a non-NULL SQLite value as a text argument: a number
// as its text.
func strictString(x any) (string, error) {
	switch y := x.(type) {
	case string:
		return y, nil
	case []byte:
		return string(y), nil
	case int64:
		return strconv.FormatInt(y, 10), nil
	case float64:
		return string(pgwire.AppendFloat(nil, y, 64)), nil
	}
	return "", fmt.Errorf("[SQLSTATE 42883] argument of type %T where text was expected", x)
}

// strictInt is a non-NULL SQLite value as an integer argument.
func strictInt(x any) (int64, error) {
	switch y := x.(type) {
	case int64:
		return y, nil
	case float64:
		if y == math.Trunc(y) && math.Abs(y) < 1<<62 {
			return int64(y), nil
		}
	case string, []byte:
		if n, err := strconv.ParseInt(strings.TrimSpace(fmt.Sprint(toText(y))), 10, 64); err == nil {
			return n, nil
		}
		return 0, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type integer: %q", toText(y))
	}
	return 0, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type integer: %v", x)
}

// isNull: a SQL NULL as the driver passes it.
func isNull(x any) bool {
	b, ok := x.([]byte)
	return x == nil || ok && b == nil
}

// strictFast is strict without reflection for the signatures most
// functions have (reflection cost about 2 µs a call: lpad over a column
// took a third longer); nil for any other.
func strictFast(fn any) any {
	switch f := fn.(type) {
	case func(string) string:
		return strict1(f, strictText)
	case func(string) int64:
		return strict1(f, strictText)
	case func(int64) string:
		return strict1(f, strictNum)
	case func(int64) int64:
		return strict1(f, strictNum)
	case func(string, string) string:
		return strict2(f, strictText, strictText)
	case func(string, int64) string:
		return strict2(f, strictText, strictNum)
	case func(string, int64, ...string) string: // lpad, rpad
		return func(a, b any, rest ...any) (any, error) {
			fill := make([]string, len(rest))
			for i, r := range rest {
				x, ok, err := strictText(r)
				if !ok {
					return nil, err
				}
				fill[i] = x
			}
			return strict2(func(s string, n int64) string { return f(s, n, fill...) }, strictText, strictNum)(a, b)
		}
	}
	return nil
}

// strictText and strictNum read one argument of a strict function
// (false: NULL, or an error).
func strictText(a any) (string, bool, error) {
	if isNull(a) {
		return "", false, nil
	}
	s, err := strictString(a)
	return s, err == nil, err
}

func strictNum(a any) (int64, bool, error) {
	if isNull(a) {
		return 0, false, nil
	}
	n, err := strictInt(a)
	return n, err == nil, err
}

func strict1[A, R any](f func(A) R, ca func(any) (A, bool, error)) func(any) (any, error) {
	return func(a any) (any, error) {
		x, ok, err := ca(a)
		if !ok {
			return nil, err
		}
		return f(x), nil
	}
}

func strict2[A, B, R any](f func(A, B) R, ca func(any) (A, bool, error), cb func(any) (B, bool, error)) func(any, any) (any, error) {
	return func(a, b any) (any, error) {
		x, ok, err := ca(a)
		if !ok {
			return nil, err
		}
		y, ok, err := cb(b)
		if !ok {
			return nil, err
		}
		return f(x, y), nil
	}
}

// strictArg converts a SQLite value to a strict function's argument type.
func strictArg(x any, to reflect.Type) (reflect.Value, error) {
	switch to.Kind() {
	case reflect.String:
		if y, err := strictString(x); err == nil {
			return reflect.ValueOf(y).Convert(to), nil
		}
	case reflect.Int64:
		n, err := strictInt(x)
		if err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(n).Convert(to), nil
	case reflect.Float64:
		switch y := x.(type) {
		case float64:
			return reflect.ValueOf(y).Convert(to), nil
		case int64:
			return reflect.ValueOf(float64(y)).Convert(to), nil
		case string, []byte:
			if f, err := strconv.ParseFloat(strings.TrimSpace(fmt.Sprint(toText(y))), 64); err == nil {
				return reflect.ValueOf(f).Convert(to), nil
			}
		}
		return reflect.Value{}, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type double precision: %v", toText(x))
	case reflect.Bool:
		b, err := toBool(x)
		if bb, ok := b.(bool); ok && err == nil {
			return reflect.ValueOf(bb).Convert(to), nil
		}
		return reflect.Value{}, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type boolean: %v", toText(x))
	case reflect.Slice:
		switch y := x.(type) {
		case []byte:
			return reflect.ValueOf(y).Convert(to), nil
		case string:
			return reflect.ValueOf([]byte(y)).Convert(to), nil
		}
	}
	return reflect.Value{}, fmt.Errorf("[SQLSTATE 42883] argument of type %T where %s was expected", x, to)
}

var timeOfDayRe = regexp.MustCompile(`^\s*(\d{1,2}):(\d{1,2})(?::(\d{1,2})(\.\d{1,6})?)?\s*$`)

// timeOfDay reads a time of day written as H:M[:S[.frac]] the way
// PostgreSQL's time input does: fields padded ('1:2' is 01:02:00), a 60th
// second carried into the minute, 24:00:00 kept, and a field out of range
// 22008 (ok is false for any other spelling).
func timeOfDay(s string) (out string, ok bool, err error) {
	m := timeOfDayRe.FindStringSubmatch(s)
	if m == nil {
		return "", false, nil
	}
	h, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	sec, _ := strconv.Atoi(m[3])
	frac := strings.TrimRight(m[4], "0")
	if frac == "." {
		frac = ""
	}
	if h > 24 || mi > 59 || sec > 60 || h == 24 && (mi > 0 || sec > 0 || frac != "") {
		return "", true, fmt.Errorf("[SQLSTATE 22008] date/time field value out of range: %q", s)
	}
	if sec == 60 {
		sec, mi = 0, mi+1
		if mi == 60 {
			mi, h = 0, h+1
		}
		if h > 24 || h == 24 && (mi > 0 || frac != "") {
			return "", true, fmt.Errorf("[SQLSTATE 22008] date/time field value out of range: %q", s)
		}
	}
	return fmt.Sprintf("%02d:%02d:%02d%s", h, mi, sec, frac), true, nil
}

// caseFunc is upper or lower over any value (NULL stays NULL).
func caseFunc(f func(string) string) func(any) any {
	return func(v any) any {
		if v == nil {
			return nil
		}
		return f(fmt.Sprint(toText(v)))
	}
}

// arrayJSON is an array's elements as a JSON array (integers as numbers,
// NULL as null), padded with nulls to at least n elements.
func arrayJSON(arr any, n int) string {
	var b strings.Builder
	b.WriteByte('[')
	var elems []string
	if arr != nil {
		elems = arrayElems(arr)
	}
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		if _, err := strconv.ParseInt(e, 10, 64); err == nil {
			b.WriteString(e)
		} else if e == "NULL" {
			b.WriteString("null")
		} else {
			writeJSONString(&b, e)
		}
	}
	for i := len(elems); i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("null")
	}
	b.WriteByte(']')
	return b.String()
}
