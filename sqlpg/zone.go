package sqlpg

// The session's TimeZone on the SQLite back end. A timestamptz is stored
// in UTC with PostgreSQL's "+00" (TimestamptzLayout), so a stored value
// says what it is: text with an offset is an instant, text without one a
// wall clock (timestamp, date). What PostgreSQL does in the session's
// zone is done here in it too: a timestamptz read from text without an
// offset, a timestamp or date cast to timestamptz, a timestamptz cast to
// date, timestamp or text, extract, date_trunc, to_char, adding days or
// months, current_date and localtimestamp. Values are printed in the
// zone by pgwire (AppendTimestamptz).

import (
	"fmt"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/tandemdb/tandem/pgwire"
)

// zoneOf is a function giving the zone to read and print in.
type zoneOf func() *time.Location

func utcZone() *time.Location { return time.UTC }

// zoned reports whether a layout of timeLayouts reads an offset.
func zoned(layout string) bool {
	return strings.Contains(layout, "-07") || strings.Contains(layout, "Z07")
}

// parseTimeIn reads s as ParseTime does, a value without an offset in
// loc; zone reports whether s had one (a timestamptz).
func parseTimeIn(s string, loc *time.Location) (tm time.Time, zone, ok bool) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "now":
		return time.Now(), true, true
	case "today", "tomorrow", "yesterday":
		y, m, d := time.Now().In(loc).Date()
		d += map[string]int{"today": 0, "tomorrow": 1, "yesterday": -1}[strings.ToLower(s)]
		return time.Date(y, m, d, 0, 0, 0, 0, loc), false, true
	case "epoch":
		return time.Unix(0, 0).UTC(), true, true
	}
	for _, l := range timeLayouts {
		if zoned(l) {
			if t, err := time.Parse(l, s); err == nil {
				return t, true, true
			}
		} else if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t, false, true
		}
	}
	return time.Time{}, false, false
}

// toTimeIn is toTime with text without an offset read in loc.
func toTimeIn(v any, loc *time.Location) (tm time.Time, zone, ok bool) {
	switch x := v.(type) {
	case string:
		return parseTimeIn(x, loc)
	case []byte:
		return parseTimeIn(string(x), loc)
	}
	tm, ok = toTime(v)
	return tm, ok, ok
}

// localTime is v as a wall clock of loc: an instant (a value with an
// offset) converted to loc, a wall clock as it is (in UTC's clothes).
func localTime(v any, loc *time.Location) (time.Time, bool) {
	tm, zone, ok := toTimeIn(v, time.UTC)
	if !ok {
		return tm, false
	}
	if zone {
		tm = tm.In(loc)
	}
	return tm, true
}

// formatTZ is a timestamptz as tandem stores it (UTC).
func formatTZ(tm time.Time) string { return tm.UTC().Format(TimestamptzLayout) }

// loc is the zone of the session whose statement runs on the connection.
func (k *clock) loc() *time.Location {
	st := k.sessionSettings()
	if st == nil {
		return time.UTC
	}
	name, ok := st.Setting("timezone")
	if !ok || name == "UTC" || name == "" {
		return time.UTC
	}
	k.mu.Lock()
	if name == k.zoneName && k.zone != nil {
		l := k.zone
		k.mu.Unlock()
		return l
	}
	k.mu.Unlock()
	l, _, err := pgwire.LoadZone(name)
	if err != nil {
		l = time.UTC // checked when set
	}
	k.mu.Lock()
	k.zoneName, k.zone = name, l
	k.mu.Unlock()
	return l
}

// ConnZone is the zone of the session whose statement runs on c (UTC
// outside a client's session).
func ConnZone(c *sqlite3.SQLiteConn) *time.Location {
	loc := time.UTC
	withClock(c, func(k *clock) { loc = k.loc() })
	return loc
}

// zoneFuncs are the functions whose answer depends on the session's
// zone, registered over their zone-less versions.
func zoneFuncs(k *clock) []namedFunc {
	loc := k.loc
	fns := []namedFunc{
		{"_cast_timestamptz", castFuncIn(TypeByName["timestamptz"], loc)},
		{"_pg_tstz_local", func(v any) any {
			if tm, ok := localTime(v, loc()); ok {
				return tm.Format(TimestampLayout)
			}
			return v
		}},
		{"_pg_date_part", func(field string, v any) (any, error) { return datePartIn(field, v, loc()) }},
		{"date_trunc", func(field string, v any) (any, error) { return dateTruncIn(field, v, loc()) }},
		{"_pg_ts_add_tz", func(ts, ivs any, sign int64) (any, error) { return tsAddTZ(ts, ivs, sign, loc()) }},
		{"_pg_current_date", func() string { t, _ := k.times(); return t.In(loc()).Format(DateLayout) }},
		{"_pg_localtimestamp", func() string { t, _ := k.times(); return t.In(loc()).Format(TimestampLayout) }},
		{"_pg_current_time", func() string { t, _ := k.times(); return t.In(loc()).Format("15:04:05.999999") }},
		{"to_char", func(v any, f string) (any, error) {
			if s, isStr := v.(string); isStr {
				if tm, zone, ok := toTimeIn(s, time.UTC); ok && zone {
					return formatDate(tm.In(loc()), f)
				}
			}
			return toChar(v, f)
		}},
		{"to_timestamp", func(s, f string) (any, error) {
			tm, err := parseDate(s, f)
			if err != nil {
				return nil, err
			}
			l := loc()
			return formatTZ(time.Date(tm.Year(), tm.Month(), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond(), l)), nil
		}},
		{"_pg_at_zone_tz", func(zone string, v any) (any, error) {
			if s, isStr := v.(string); isStr {
				// A literal without an offset is a timestamptz in the
				// session's zone.
				if tm, zoned, ok := toTimeIn(s, loc()); ok && !zoned {
					v = formatTZ(tm)
				}
			}
			return atZoneTZ(zone, v)
		}},
		{"_pg_json_timestamptz", func(v any) any {
			tm, zone, ok := toTimeIn(v, loc())
			if !ok || !zone {
				return v
			}
			tm = tm.In(loc())
			_, off := tm.Zone()
			return string(pgwire.AppendOffset(tm.AppendFormat(nil, "2006-01-02T15:04:05.999999"), off, true))
		}},
		{"_pg_json_timestamp", func(v any) any {
			if s, ok := v.(string); ok && len(s) > 10 && s[10] == ' ' {
				return s[:10] + "T" + s[11:]
			}
			return v
		}},
		{"age", func(a, b any) (any, error) { return ageIn(a, b, loc()) }},
		{"_pg_interval_zone", intervalZone},
		{"timeofday", func() string {
			// The clock's time as text: Sat Dec 05 01:23:45.123456 2026 UTC.
			return time.Now().In(loc()).Format("Mon Jan 02 15:04:05.000000 2006 MST")
		}},
		{"make_timestamptz", func(y, mo, d, h, mi int64, sec any, zone ...string) (any, error) {
			l := loc()
			if len(zone) > 0 {
				z, err := zoneLocation(zone[0])
				if err != nil {
					return nil, err
				}
				l = z
			}
			tm, err := makeTime(y, mo, d, h, mi, sec, l)
			if err != nil {
				return nil, err
			}
			return formatTZ(tm), nil
		}},
		{"_pg_tstz_text", func(v any) any {
			if v == nil {
				return nil
			}
			tm, zone, ok := toTimeIn(v, loc())
			if !ok || !zone {
				return toText(v)
			}
			return pgwire.FormatTimestamptz(tm, loc())
		}},
	}
	return fns
}

// intervalZone is the zone an interval names in AT TIME ZONE INTERVAL
// '+03:00': that far east of Greenwich, as pgwire names such a zone.
func intervalZone(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	iv, ok := parseInterval(fmt.Sprint(toText(v)))
	if !ok || iv.months != 0 || iv.days != 0 {
		return nil, fmt.Errorf("[SQLSTATE 22023] interval time zone %q must not include months or days", fmt.Sprint(toText(v)))
	}
	return pgwire.EastZoneName(int(iv.micros / 1e6)), nil
}

// datePartIn is extract / date_part with an instant's fields in loc.
func datePartIn(field string, v any, loc *time.Location) (any, error) {
	if s, isStr := v.(string); isStr && loc != time.UTC {
		if tm, zone, ok := toTimeIn(s, time.UTC); ok && zone {
			switch strings.ToLower(field) {
			case "epoch":
			case "timezone":
				_, off := tm.In(loc).Zone()
				return float64(off), nil
			case "timezone_hour":
				_, off := tm.In(loc).Zone()
				return float64(off / 3600), nil
			case "timezone_minute":
				_, off := tm.In(loc).Zone()
				return float64(off % 3600 / 60), nil
			default:
				return datePartTime(field, tm.In(loc))
			}
		}
	}
	return datePart(field, v)
}

// dateTruncIn is date_trunc: an instant (or a date, which PostgreSQL
// casts to timestamptz) truncated in loc, a timestamptz again; a wall
// clock truncated as it is.
func dateTruncIn(field string, v any, loc *time.Location) (any, error) {
	s, isStr := v.(string)
	if !isStr {
		return dateTrunc(field, v)
	}
	tm, zone, ok := toTimeIn(s, time.UTC)
	if !ok {
		return dateTrunc(field, v)
	}
	if !zone && len(strings.TrimSpace(s)) > len(DateLayout) {
		return dateTrunc(field, v) // a timestamp
	}
	if !zone {
		// A date: midnight in the session's zone.
		tm = time.Date(tm.Year(), tm.Month(), tm.Day(), 0, 0, 0, 0, loc)
	}
	w := tm.In(loc)
	y, mo, d := w.Date()
	var out time.Time
	switch strings.ToLower(field) {
	case "year":
		out = time.Date(y, 1, 1, 0, 0, 0, 0, loc)
	case "quarter":
		out = time.Date(y, time.Month((int(mo)-1)/3*3+1), 1, 0, 0, 0, 0, loc)
	case "month":
		out = time.Date(y, mo, 1, 0, 0, 0, 0, loc)
	case "week":
		wd := (int(w.Weekday()) + 6) % 7
		out = time.Date(y, mo, d-wd, 0, 0, 0, 0, loc)
	case "day":
		out = time.Date(y, mo, d, 0, 0, 0, 0, loc)
	case "hour":
		out = time.Date(y, mo, d, w.Hour(), 0, 0, 0, loc)
	case "minute":
		out = time.Date(y, mo, d, w.Hour(), w.Minute(), 0, 0, loc)
	case "second":
		out = time.Date(y, mo, d, w.Hour(), w.Minute(), w.Second(), 0, loc)
	default:
		return nil, fmt.Errorf("unit %q not supported", field)
	}
	return formatTZ(out), nil
}

// tsAddTZ is timestamptz ± interval: months and days on the calendar of
// loc (a day across a change to summer time is 23 hours), the time part
// as elapsed time, as PostgreSQL does.
func tsAddTZ(ts, ivs any, sign int64, loc *time.Location) (any, error) {
	if ts == nil || ivs == nil {
		return nil, nil
	}
	tm, _, ok := toTimeIn(ts, loc)
	if !ok {
		return nil, invalid("timestamp with time zone", ts)
	}
	iv, ok := parseInterval(fmt.Sprint(toText(ivs)))
	if !ok {
		return nil, invalid("interval", ivs)
	}
	tm = tm.In(loc)
	if iv.months != 0 {
		tm = addMonthsClamped(tm, int(sign*iv.months))
		iv.months = 0
	}
	return formatTZ(addInterval(tm, iv, sign)), nil
}

// ageIn is age(a, b): years, months and days between the two wall
// clocks, an instant's in loc (PostgreSQL's timestamptz_age counts days
// on the session's calendar: across a change to summer time two
// midnights are 2 days apart, not 1 day 23:00:00).
func ageIn(a, b any, loc *time.Location) (any, error) {
	if a == nil || b == nil {
		return nil, nil
	}
	ta, ok1 := localTime(a, loc)
	tb, ok2 := localTime(b, loc)
	if !ok1 || !ok2 {
		return nil, invalid("timestamp", a)
	}
	wall := func(t time.Time) time.Time {
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	}
	ta, tb = wall(ta), wall(tb)
	months := (ta.Year()-tb.Year())*12 + int(ta.Month()-tb.Month())
	mid := addMonthsClamped(tb, months)
	if mid.After(ta) {
		months--
		mid = addMonthsClamped(tb, months)
	}
	rest := ta.Sub(mid)
	days := int64(rest.Hours() / 24)
	return interval{int64(months), days, rest.Microseconds() - days*86400e6}.String(), nil
}
