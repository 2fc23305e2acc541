package sqlpg

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Intervals are carried as PostgreSQL's text form ("1 year 2 mons 3 days
// 04:05:06"); date and timestamp arithmetic is done here.

type interval struct {
	months, days int64
	micros       int64
}

var intervalUnits = map[string]func(iv *interval, n float64){
	"year": func(iv *interval, n float64) { iv.months += int64(n * 12) }, "years": nil, "y": nil,
	"mon": func(iv *interval, n float64) { iv.months += int64(n) }, "mons": nil, "month": nil, "months": nil,
	"week": func(iv *interval, n float64) { iv.days += int64(n * 7) }, "weeks": nil, "w": nil,
	"day": func(iv *interval, n float64) { iv.days += int64(n) }, "days": nil, "d": nil,
	"hour": func(iv *interval, n float64) { iv.micros += int64(n * 3600e6) }, "hours": nil, "h": nil,
	"minute": func(iv *interval, n float64) { iv.micros += int64(n * 60e6) }, "minutes": nil, "min": nil, "mins": nil, "m": nil,
	"second": func(iv *interval, n float64) { iv.micros += int64(n * 1e6) }, "seconds": nil, "sec": nil, "secs": nil, "s": nil,
	"millisecond": func(iv *interval, n float64) { iv.micros += int64(n * 1e3) }, "milliseconds": nil, "ms": nil,
	"microsecond": func(iv *interval, n float64) { iv.micros += int64(n) }, "microseconds": nil, "us": nil,
}

func init() {
	var last func(*interval, float64)
	for _, k := range []string{"year", "years", "y", "mon", "mons", "month", "months", "week", "weeks", "w", "day", "days", "d",
		"hour", "hours", "h", "minute", "minutes", "min", "mins", "m", "second", "seconds", "sec", "secs", "s",
		"millisecond", "milliseconds", "ms", "microsecond", "microseconds", "us"} {
		if f := intervalUnits[k]; f != nil {
			last = f
		} else {
			intervalUnits[k] = last
		}
	}
}

func parseInterval(s string) (interval, bool) {
	var iv interval
	f := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	neg := false
	if len(f) > 0 && f[len(f)-1] == "ago" {
		neg, f = true, f[:len(f)-1]
	}
	for i := 0; i < len(f); i++ {
		w := strings.TrimPrefix(f[i], "@")
		if strings.Contains(w, ":") {
			sign := int64(1)
			if strings.HasPrefix(w, "-") {
				sign, w = -1, w[1:]
			}
			parts := strings.Split(w, ":")
			var h, m int64
			var sec float64
			var err error
			if h, err = strconv.ParseInt(parts[0], 10, 64); err != nil {
				return iv, false
			}
			if len(parts) > 1 {
				if m, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
					return iv, false
				}
			}
			if len(parts) > 2 {
				if sec, err = strconv.ParseFloat(parts[2], 64); err != nil {
					return iv, false
				}
			}
			iv.micros += sign * (h*3600e6 + m*60e6 + int64(math.Round(sec*1e6)))
			continue
		}
		n, err := strconv.ParseFloat(w, 64)
		unit := ""
		if err != nil {
			// "1day" style
			j := strings.IndexFunc(w, func(r rune) bool { return r >= 'a' && r <= 'z' })
			if j <= 0 {
				return iv, false
			}
			if n, err = strconv.ParseFloat(w[:j], 64); err != nil {
				return iv, false
			}
			unit = w[j:]
		} else if i+1 < len(f) {
			i++
			unit = f[i]
		} else {
			unit = "second"
		}
		add := intervalUnits[strings.TrimSuffix(unit, ",")]
		if add == nil {
			return iv, false
		}
		add(&iv, n)
	}
	if neg {
		iv.months, iv.days, iv.micros = -iv.months, -iv.days, -iv.micros
	}
	return iv, true
}

func (iv interval) String() string {
	// As PostgreSQL's IntervalStyle postgres: units plural unless the
	// value is 1 ("-1 days"), and a positive field after a negative one
	// signed ("-1 mons +1 day", "-1 days +02:00:00").
	var parts []string
	before := false // the last field written was negative
	add := func(n int64, unit string) {
		if n == 0 {
			return
		}
		p := ""
		if before && n > 0 {
			p = "+"
		}
		if n != 1 {
			unit += "s"
		}
		parts = append(parts, fmt.Sprintf("%s%d %s", p, n, unit))
		before = n < 0
	}
	add(iv.months/12, "year")
	add(iv.months%12, "mon")
	add(iv.days, "day")
	if iv.micros != 0 || len(parts) == 0 {
		us := iv.micros
		sign := ""
		if us < 0 {
			sign, us = "-", -us
		} else if before {
			sign = "+"
		}
		h := us / 3600e6
		us -= h * 3600e6
		m := us / 60e6
		us -= m * 60e6
		sec := us / 1e6
		frac := us % 1e6
		t := fmt.Sprintf("%s%02d:%02d:%02d", sign, h, m, sec)
		if frac != 0 {
			t += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, " ")
}

func addInterval(tm time.Time, iv interval, sign int64) time.Time {
	tm = tm.AddDate(0, int(sign*iv.months), 0)
	// PostgreSQL clamps to the month's last day (Jan 31 + 1 mon = Feb 29).
	tm = tm.AddDate(0, 0, int(sign*iv.days))
	return tm.Add(time.Duration(sign*iv.micros) * time.Microsecond)
}

func addMonthsClamped(tm time.Time, months int) time.Time {
	y, m, d := tm.Date()
	first := time.Date(y, m, 1, tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond(), tm.Location()).AddDate(0, months, 0)
	last := first.AddDate(0, 1, -1).Day()
	if d > last {
		d = last
	}
	return time.Date(first.Year(), first.Month(), d, tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond(), tm.Location())
}

func init() {
	extraFuncs = append(extraFuncs,
		namedFunc{"_cast_interval", func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			iv, ok := parseInterval(fmt.Sprint(toText(v)))
			if !ok {
				return nil, invalid("interval", v)
			}
			return iv.String(), nil
		}},
		namedFunc{"_pg_date_add", func(d any, n int64, sign int64) (any, error) {
			if d == nil {
				return nil, nil
			}
			tm, ok := toTime(d)
			if !ok {
				return nil, invalid("date", d)
			}
			return tm.AddDate(0, 0, int(sign*n)).Format(DateLayout), nil
		}},
		namedFunc{"_pg_date_diff", func(a, b any) (any, error) {
			if a == nil || b == nil {
				return nil, nil
			}
			ta, ok1 := toTime(a)
			tb, ok2 := toTime(b)
			if !ok1 || !ok2 {
				return nil, invalid("date", a)
			}
			return int64(math.Round(ta.Sub(tb).Hours() / 24)), nil
		}},
		namedFunc{"_pg_ts_add_ts", func(ts, ivs any, sign int64) (any, error) { return tsAdd(ts, ivs, sign, TimestampLayout) }},
		namedFunc{"_pg_ts_add_tz", func(ts, ivs any, sign int64) (any, error) { return tsAdd(ts, ivs, sign, TimestamptzLayout) }},
		namedFunc{"_pg_ts_diff", func(a, b any) (any, error) {
			if a == nil || b == nil {
				return nil, nil
			}
			ta, ok1 := toTime(a)
			tb, ok2 := toTime(b)
			if !ok1 || !ok2 {
				return nil, invalid("timestamp", a)
			}
			us := ta.Sub(tb).Microseconds()
			days := us / 86400e6
			return interval{days: days, micros: us - days*86400e6}.String(), nil
		}},
		namedFunc{"_pg_interval_add", func(a, b any, sign int64) (any, error) {
			if a == nil || b == nil {
				return nil, nil
			}
			x, ok1 := parseInterval(fmt.Sprint(toText(a)))
			y, ok2 := parseInterval(fmt.Sprint(toText(b)))
			if !ok1 || !ok2 {
				return nil, invalid("interval", a)
			}
			return interval{x.months + sign*y.months, x.days + sign*y.days, x.micros + sign*y.micros}.String(), nil
		}},
		namedFunc{"justify_hours", justify(func(iv interval) interval { return iv.justifyHours() })},
		namedFunc{"justify_days", justify(func(iv interval) interval { return iv.justifyDays() })},
		namedFunc{"justify_interval", justify(interval.justifyInterval)},
		namedFunc{"_pg_interval_mul", func(a, k any) (any, error) { return intervalScale(a, k, false) }},
		namedFunc{"_pg_interval_div", func(a, k any) (any, error) { return intervalScale(a, k, true) }},
		namedFunc{"age", func(a, b any) (any, error) { return ageIn(a, b, time.UTC) }},
		namedFunc{"encode", func(b any, format string) (any, error) {
			if b == nil {
				return nil, nil
			}
			var raw []byte
			switch x := b.(type) {
			case []byte:
				raw = x
			default:
				raw = []byte(fmt.Sprint(toText(x)))
			}
			switch format {
			case "hex":
				return hex.EncodeToString(raw), nil
			case "base64":
				return base64.StdEncoding.EncodeToString(raw), nil
			case "escape":
				return string(raw), nil
			}
			return nil, fmt.Errorf("unrecognized encoding: %q", format)
		}},
		namedFunc{"decode", func(s string, format string) (any, error) {
			switch format {
			case "hex":
				return hex.DecodeString(s)
			case "base64":
				return base64.StdEncoding.DecodeString(s)
			case "escape":
				return []byte(s), nil
			}
			return nil, fmt.Errorf("unrecognized encoding: %q", format)
		}},
	)
}

func tsAdd(ts, ivs any, sign int64, layout string) (any, error) {
	if ts == nil || ivs == nil {
		return nil, nil
	}
	tm, ok := toTime(ts)
	if !ok {
		return nil, invalid("timestamp", ts)
	}
	iv, ok := parseInterval(fmt.Sprint(toText(ivs)))
	if !ok {
		return nil, invalid("interval", ivs)
	}
	if iv.months != 0 {
		tm = addMonthsClamped(tm, int(sign*iv.months))
		iv.months = 0
	}
	return addInterval(tm, iv, sign).Format(layout), nil
}

const usPerDay = 86400e6

// justify wraps one of PostgreSQL's justify_* functions over interval text.
func justify(f func(interval) interval) func(any) (any, error) {
	return func(a any) (any, error) {
		if a == nil {
			return nil, nil
		}
		iv, ok := parseInterval(fmt.Sprint(toText(a)))
		if !ok {
			return nil, invalid("interval", a)
		}
		return f(iv).String(), nil
	}
}

// carry moves lo's whole units of size into hi; agree then makes their
// signs agree (1 day -1 hour is 23:00:00).
func carry(hi, lo *int64, size int64) {
	whole := *lo / size
	*lo -= whole * size
	*hi += whole
}

func agree(hi, lo *int64, size int64) {
	switch {
	case *hi > 0 && *lo < 0:
		*lo += size
		*hi--
	case *hi < 0 && *lo > 0:
		*lo -= size
		*hi++
	}
}

// justifyHours moves whole 24-hour periods into days (justify_hours).
func (iv interval) justifyHours() interval {
	carry(&iv.days, &iv.micros, usPerDay)
	agree(&iv.days, &iv.micros, usPerDay)
	return iv
}

// justifyDays moves whole 30-day periods into months (justify_days).
func (iv interval) justifyDays() interval {
	carry(&iv.months, &iv.days, 30)
	agree(&iv.months, &iv.days, 30)
	return iv
}

// justifyInterval is PostgreSQL's justify_interval: both, with the signs
// made to agree.
func (iv interval) justifyInterval() interval {
	if iv.days > 0 && iv.micros > 0 || iv.days < 0 && iv.micros < 0 {
		carry(&iv.months, &iv.days, 30)
	}
	carry(&iv.days, &iv.micros, usPerDay)
	carry(&iv.months, &iv.days, 30)
	switch {
	case iv.months > 0 && (iv.days < 0 || iv.days == 0 && iv.micros < 0):
		iv.days += 30
		iv.months--
	case iv.months < 0 && (iv.days > 0 || iv.days == 0 && iv.micros > 0):
		iv.days -= 30
		iv.months++
	}
	agree(&iv.days, &iv.micros, usPerDay)
	return iv
}

// intervalScale is interval * factor (or / divisor) as PostgreSQL's
// interval_mul and interval_div: a fraction of a month becomes days (30
// to a month), a fraction of a day becomes time, rounded to microseconds
// ('1 month' / 2 is 15 days, '1 day' * 1.5 is 1 day 12:00:00).
func intervalScale(a, k any, div bool) (any, error) {
	if a == nil || k == nil {
		return nil, nil
	}
	iv, ok := parseInterval(fmt.Sprint(toText(a)))
	f, ok2 := numeric(k)
	if !ok || !ok2 {
		return nil, invalid("interval", a)
	}
	scale := func(x float64) float64 { return x * f }
	if div {
		if f == 0 {
			return nil, fmt.Errorf("[SQLSTATE 22012] division by zero")
		}
		scale = func(x float64) float64 { return x / f }
	}
	months := scale(float64(iv.months))
	days := scale(float64(iv.days))
	out := interval{months: int64(months), days: int64(days)}
	monthDays := (months - float64(out.months)) * 30
	secRemainder := (days - float64(out.days) + monthDays - math.Trunc(monthDays)) * 86400
	secRemainder = math.Round(secRemainder*1e6) / 1e6
	if math.Abs(secRemainder) >= 86400 {
		out.days += int64(secRemainder / 86400)
		secRemainder -= math.Trunc(secRemainder/86400) * 86400
	}
	out.days += int64(monthDays)
	out.micros = int64(math.RoundToEven(scale(float64(iv.micros)) + secRemainder*1e6))
	return out.String(), nil
}
