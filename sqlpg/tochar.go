package sqlpg

import (
	"fmt"
	"github.com/tandemdb/tandem/pgwire"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // AT TIME ZONE with any IANA zone, whatever the host has
)

// PostgreSQL's to_char / to_date / to_timestamp(text, format) for dates
// and timestamps: the template patterns people use (YYYY, MM, DD, HH24,
// MI, SS, Mon, Month, Dy, Day, AM ...), FM, quoted text. A pattern outside
// that subset fails with 0A000 naming it (never a different string).

type fmtToken struct {
	pat     string // the pattern, "" for literal text
	lit     string
	fm      bool // FM: no padding
	upper   bool // MON / MONTH / DAY / DY
	lower   bool // mon / month / day / dy
	literal bool
}

// datePatterns, longest first so HH24 wins over HH and MONTH over MON.
var datePatterns = []string{"MONTH", "YYYY", "HH24", "HH12", "YYY", "MON", "DAY", "DDD", "MS", "US", "YY", "MM", "DD", "HH", "MI", "SS", "DY", "AM", "PM", "TZH", "TZM", "TZ", "OF", "Q", "D", "Y"}

func tokenizeDateFormat(f string) ([]fmtToken, error) {
	var out []fmtToken
	fm := false
	for i := 0; i < len(f); {
		c := f[i]
		if c == '"' {
			j := strings.IndexByte(f[i+1:], '"')
			if j < 0 {
				j = len(f) - i - 1
			}
			out = append(out, fmtToken{lit: f[i+1 : i+1+j], literal: true})
			i += j + 2
			continue
		}
		if c == '\\' && i+1 < len(f) {
			out = append(out, fmtToken{lit: f[i+1 : i+2], literal: true})
			i += 2
			continue
		}
		if strings.HasPrefix(strings.ToUpper(f[i:]), "FM") {
			fm = true
			i += 2
			continue
		}
		matched := false
		for _, p := range datePatterns {
			if len(f)-i >= len(p) && strings.EqualFold(f[i:i+len(p)], p) {
				src := f[i : i+len(p)]
				tok := fmtToken{pat: p, fm: fm}
				switch p {
				case "MONTH", "MON", "DAY", "DY", "AM", "PM":
					tok.upper = src == strings.ToUpper(src)
					tok.lower = src == strings.ToLower(src)
				}
				out = append(out, tok)
				fm = false
				i += len(p)
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' {
			j := i
			for j < len(f) && (f[j] >= 'A' && f[j] <= 'Z' || f[j] >= 'a' && f[j] <= 'z') {
				j++
			}
			return nil, fmt.Errorf("[SQLSTATE 0A000] the date/time template pattern %q is not supported on the SQLite back end", f[i:j])
		}
		out = append(out, fmtToken{lit: string(c), literal: true})
		i++
	}
	return out, nil
}

func caseName(name string, tok fmtToken, width int) string {
	switch {
	case tok.upper:
		name = strings.ToUpper(name)
	case tok.lower:
		name = strings.ToLower(name)
	}
	if !tok.fm && width > 0 && len(name) < width {
		name += strings.Repeat(" ", width-len(name))
	}
	return name
}

func zpad(n int, width int, fm bool) string {
	if fm {
		return strconv.Itoa(n)
	}
	return fmt.Sprintf("%0*d", width, n)
}

// formatDate is to_char(timestamp, format).
func formatDate(tm time.Time, f string) (string, error) {
	toks, err := tokenizeDateFormat(f)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, t := range toks {
		if t.literal {
			b.WriteString(t.lit)
			continue
		}
		h12 := tm.Hour() % 12
		if h12 == 0 {
			h12 = 12
		}
		switch t.pat {
		case "YYYY":
			b.WriteString(zpad(tm.Year(), 4, t.fm))
		case "YYY":
			b.WriteString(zpad(tm.Year()%1000, 3, t.fm))
		case "YY":
			b.WriteString(zpad(tm.Year()%100, 2, t.fm))
		case "Y":
			b.WriteString(strconv.Itoa(tm.Year() % 10))
		case "MM":
			b.WriteString(zpad(int(tm.Month()), 2, t.fm))
		case "DD":
			b.WriteString(zpad(tm.Day(), 2, t.fm))
		case "DDD":
			b.WriteString(zpad(tm.YearDay(), 3, t.fm))
		case "D":
			b.WriteString(strconv.Itoa(int(tm.Weekday()) + 1))
		case "HH24":
			b.WriteString(zpad(tm.Hour(), 2, t.fm))
		case "HH12", "HH":
			b.WriteString(zpad(h12, 2, t.fm))
		case "MI":
			b.WriteString(zpad(tm.Minute(), 2, t.fm))
		case "SS":
			b.WriteString(zpad(tm.Second(), 2, t.fm))
		case "MS":
			b.WriteString(zpad(tm.Nanosecond()/1e6, 3, t.fm))
		case "US":
			b.WriteString(zpad(tm.Nanosecond()/1e3, 6, t.fm))
		case "Q":
			b.WriteString(strconv.Itoa((int(tm.Month())-1)/3 + 1))
		case "MONTH":
			b.WriteString(caseName(tm.Month().String(), t, 9))
		case "MON":
			b.WriteString(caseName(tm.Month().String()[:3], t, 0))
		case "DAY":
			b.WriteString(caseName(tm.Weekday().String(), t, 9))
		case "DY":
			b.WriteString(caseName(tm.Weekday().String()[:3], t, 0))
		case "AM", "PM":
			m := "AM"
			if tm.Hour() >= 12 {
				m = "PM"
			}
			if t.lower {
				m = strings.ToLower(m)
			}
			b.WriteString(m)
		case "TZ":
			name, _ := tm.Zone()
			if t.lower {
				name = strings.ToLower(name)
			}
			b.WriteString(name)
		case "OF": // the offset from UTC: +01, -05, +05:30
			_, off := tm.Zone()
			b.Write(pgwire.AppendOffset(nil, off))
		case "TZH":
			_, off := tm.Zone()
			b.Write(pgwire.AppendOffset(nil, off/3600*3600)[:3])
		case "TZM":
			_, off := tm.Zone()
			if off < 0 {
				off = -off
			}
			fmt.Fprintf(&b, "%02d", off%3600/60)
		}
	}
	return b.String(), nil
}

// parseDate is to_date / to_timestamp(text, format).
func parseDate(s, f string) (time.Time, error) {
	toks, err := tokenizeDateFormat(f)
	if err != nil {
		return time.Time{}, err
	}
	year, month, day, hour, minute, sec, nsec := 1, 1, 1, 0, 0, 0, 0
	pm, ampm := false, false
	i := 0
	bad := func() (time.Time, error) {
		return time.Time{}, fmt.Errorf("[SQLSTATE 22007] invalid value %q for %q", s, f)
	}
	num := func(max int) (int, bool) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		j := i
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		for j < len(s) && j-i < max && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s[i:j])
		if err != nil {
			return 0, false
		}
		i = j
		return n, true
	}
	name := func(names []string) (int, bool) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		for k, nm := range names {
			if len(s)-i >= len(nm) && strings.EqualFold(s[i:i+len(nm)], nm) {
				i += len(nm)
				return k, true
			}
		}
		return 0, false
	}
	var months, short, days, shortDays []string
	for m := time.January; m <= time.December; m++ {
		months = append(months, m.String())
		short = append(short, m.String()[:3])
	}
	for d := time.Sunday; d <= time.Saturday; d++ {
		days = append(days, d.String())
		shortDays = append(shortDays, d.String()[:3])
	}
	for _, t := range toks {
		if t.literal {
			// Separators match any one non-alphanumeric character (or none).
			if i < len(s) && !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= 'a' && s[i] <= 'z') {
				i++
			}
			continue
		}
		var ok bool
		var n int
		switch t.pat {
		case "YYYY":
			year, ok = num(4)
		case "YY":
			n, ok = num(2)
			year = 2000 + n
			if n >= 70 {
				year = 1900 + n
			}
		case "MM":
			month, ok = num(2)
		case "DD":
			day, ok = num(2)
		case "HH24":
			hour, ok = num(2)
		case "HH12", "HH":
			hour, ok = num(2)
			ampm = true
		case "MI":
			minute, ok = num(2)
		case "SS":
			sec, ok = num(2)
		case "MS":
			n, ok = num(3)
			nsec = n * 1e6
		case "US":
			n, ok = num(6)
			nsec = n * 1e3
		case "MONTH":
			n, ok = name(months)
			month = n + 1
		case "MON":
			n, ok = name(short)
			month = n + 1
		case "DAY":
			_, ok = name(days)
		case "DY":
			_, ok = name(shortDays)
		case "AM", "PM":
			for i < len(s) && s[i] == ' ' {
				i++
			}
			if len(s)-i >= 2 {
				pm = strings.EqualFold(s[i:i+2], "PM")
				ok = pm || strings.EqualFold(s[i:i+2], "AM")
				i += 2
			}
		default:
			return time.Time{}, fmt.Errorf("[SQLSTATE 0A000] the template pattern %q in to_date/to_timestamp is not supported on the SQLite back end", t.pat)
		}
		if !ok {
			return bad()
		}
	}
	if ampm && pm && hour < 12 {
		hour += 12
	} else if ampm && !pm && hour == 12 {
		hour = 0
	}
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 24 || minute > 59 || sec > 60 {
		return time.Time{}, fmt.Errorf("[SQLSTATE 22008] date/time field value out of range: %q", s)
	}
	tm := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if tm.Day() != day {
		return time.Time{}, fmt.Errorf("[SQLSTATE 22008] date/time field value out of range: %q", s)
	}
	return tm, nil
}

// zoneLocation reads AT TIME ZONE's zone as PostgreSQL does: a name of
// the zone database in any case (UTC, europe/paris), an abbreviation that
// names a zone (EST), a POSIX string (UTC+3), or an offset alone, which
// is POSIX's too: '+3' is three hours west of Greenwich, 07:00 for 10:00
// UTC (unlike SET TIME ZONE '+3', which reads hours east).
func zoneLocation(zone string) (*time.Location, error) {
	z := strings.TrimSpace(zone)
	switch strings.ToUpper(z) {
	case "UTC", "GMT", "Z", "ZULU", "UCT":
		return time.UTC, nil
	}
	if z != "" && strings.ContainsAny(z[:1], "+-0123456789") {
		if off, ok := pgwire.ParseOffset(z); ok {
			return time.FixedZone(z, -off), nil
		}
	} else if loc, _, err := pgwire.LoadZone(z); err == nil {
		return loc, nil
	}
	return nil, fmt.Errorf("[SQLSTATE 22023] time zone %q not recognized", zone)
}

// toChar is to_char of a number, or of a date or timestamp in its own
// zone (a timestamptz in UTC; zoneFuncs reads it in the session's).
func toChar(v any, f string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case int64:
		return toCharNumber(float64(x), f)
	case float64:
		return toCharNumber(x, f)
	}
	tm, ok := toTime(v)
	if !ok {
		if s, isStr := v.(string); isStr {
			if x, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
				return toCharNumber(x, f)
			}
		}
		return nil, invalid("timestamp", v)
	}
	return formatDate(tm.UTC(), f)
}

// atZoneTZ is timestamptz AT TIME ZONE zone: the wall-clock time there
// (a timestamp).
func atZoneTZ(zone string, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	loc, err := zoneLocation(zone)
	if err != nil {
		return nil, err
	}
	tm, ok := toTime(v)
	if !ok {
		return nil, invalid("timestamp with time zone", v)
	}
	return tm.In(loc).Format(TimestampLayout), nil
}

var dateTimeFuncs = []namedFunc{
	{"to_char", toChar},
	{"to_date", func(s, f string) (any, error) {
		tm, err := parseDate(s, f)
		if err != nil {
			return nil, err
		}
		return tm.Format(DateLayout), nil
	}},
	{"to_timestamp", func(s, f string) (any, error) {
		tm, err := parseDate(s, f)
		if err != nil {
			return nil, err
		}
		return tm.Format(TimestamptzLayout), nil
	}},
	// _pg_at_zone_tz: timestamptz AT TIME ZONE zone, the wall-clock time
	// there (a timestamp). _pg_at_zone_ts: timestamp AT TIME ZONE zone,
	// that wall-clock time there as a timestamptz.
	{"_pg_at_zone_tz", atZoneTZ},
	{"_pg_at_zone_ts", func(zone string, v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		loc, err := zoneLocation(zone)
		if err != nil {
			return nil, err
		}
		tm, ok := toTime(v)
		if !ok {
			return nil, invalid("timestamp", v)
		}
		w := time.Date(tm.Year(), tm.Month(), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond(), loc)
		return w.UTC().Format(TimestamptzLayout), nil
	}},
}

func init() { extraFuncs = append(extraFuncs, dateTimeFuncs...) }
