package pgwire

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zone names on machines without /usr/share/zoneinfo
)

// ErrUnknownZone: LoadZone could not read a TimeZone value.
var ErrUnknownZone = Errorf("22023", "unknown time zone")

// zoneCache keeps what LoadZone read, by the text it was given.
var zoneCache sync.Map // string -> zoneEntry

type zoneEntry struct {
	loc  *time.Location
	name string
}

// LoadZone reads a value of the TimeZone setting as PostgreSQL does and
// returns the zone and the name SHOW answers for it:
//
//   - a zone of the IANA database, in any case ('europe/paris' is
//     Europe/Paris), and its abbreviations that name zones (EST, UTC, GMT);
//   - a number of hours east of Greenwich ('5', '+5.5', SET TIME ZONE -7),
//     named as PostgreSQL names it (<+05>-05);
//   - INTERVAL 'hh:mm' (SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE),
//     east as well;
//   - a POSIX zone string, whose offset counts hours west ('UTC+3' is
//     three hours behind Greenwich, '-3:30' three and a half ahead).
//
// Anything else is 22023, as PostgreSQL's "invalid value for parameter".
func LoadZone(val string) (*time.Location, string, error) {
	if e, ok := zoneCache.Load(val); ok {
		z := e.(zoneEntry)
		return z.loc, z.name, nil
	}
	loc, name, err := loadZone(val)
	if err != nil {
		return nil, "", Errorf("22023", "invalid value for parameter \"TimeZone\": %q", val)
	}
	zoneCache.Store(val, zoneEntry{loc, name})
	return loc, name, nil
}

func loadZone(val string) (*time.Location, string, error) {
	v := strings.TrimSpace(val)
	if up := strings.ToUpper(v); strings.HasPrefix(up, "INTERVAL") {
		// INTERVAL '+05:30' [HOUR TO MINUTE]: east of Greenwich.
		q := strings.TrimSpace(v[len("INTERVAL"):])
		if i := strings.IndexByte(q, '\''); i >= 0 {
			if j := strings.IndexByte(q[i+1:], '\''); j >= 0 {
				if off, ok := clockOffset(q[i+1 : i+1+j]); ok {
					return eastZone(off)
				}
			}
		}
		return nil, "", ErrUnknownZone
	}
	v = strings.Trim(v, `'"`)
	if v == "" {
		return nil, "", ErrUnknownZone
	}
	if h, err := strconv.ParseFloat(v, 64); err == nil {
		if math.Abs(h) > 15 || math.IsNaN(h) {
			return nil, "", ErrUnknownZone
		}
		return eastZone(int(math.Round(h * 3600)))
	}
	if v[0] == '<' {
		// <+05>-05: POSIX's quoted name and offset west, as eastZone
		// names a zone (and SHOW gives it back).
		if i := strings.IndexByte(v, '>'); i > 1 {
			if off, ok := clockOffset(v[i+1:]); ok {
				return time.FixedZone(v, -off), v, nil
			}
		}
		return nil, "", ErrUnknownZone
	}
	switch strings.ToUpper(v) {
	case "UTC", "GMT", "UCT", "UNIVERSAL", "ZULU", "GREENWICH":
		return time.UTC, strings.ToUpper(v), nil
	}
	if v[0] == '+' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9') {
		// A POSIX offset by itself: hours west.
		if off, ok := clockOffset(v); ok {
			return time.FixedZone(v, -off), v, nil
		}
		return nil, "", ErrUnknownZone
	}
	// A POSIX string: a name of three or more letters and an offset west
	// (UTC+3, GMT-2, EST5).
	if i := strings.IndexAny(v, "+-0123456789"); i >= 3 && !strings.Contains(v, "/") {
		name := v[:i]
		ok := true
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				ok = false
			}
		}
		if off, good := clockOffset(v[i:]); ok && good {
			return time.FixedZone(v, -off), v, nil
		}
	}
	if strings.Contains(v, "..") || strings.HasPrefix(v, "/") {
		return nil, "", ErrUnknownZone
	}
	if loc, err := time.LoadLocation(v); err == nil {
		return loc, v, nil
	}
	if name, ok := zoneNames()[strings.ToLower(v)]; ok {
		if loc, err := time.LoadLocation(name); err == nil {
			return loc, name, nil
		}
	}
	return nil, "", ErrUnknownZone
}

// ParseOffset reads an offset [+-]h[:mm[:ss]] or [+-]hhmm as seconds
// (the sign as written).
func ParseOffset(s string) (int, bool) { return clockOffset(s) }

// clockOffset reads [+-]h[:mm[:ss]] or [+-]hhmm as seconds.
func clockOffset(s string) (int, bool) {
	s = strings.TrimSpace(s)
	sign := 1
	if s != "" && (s[0] == '+' || s[0] == '-') {
		if s[0] == '-' {
			sign = -1
		}
		s = s[1:]
	}
	parts := strings.Split(s, ":")
	if len(parts) == 1 && len(s) == 4 {
		parts = []string{s[:2], s[2:]}
	}
	if len(parts) > 3 || parts[0] == "" {
		return 0, false
	}
	secs := 0
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || (i > 0 && (n > 59 || len(p) != 2)) {
			return 0, false
		}
		secs += n * []int{3600, 60, 1}[i]
	}
	if secs > 15*3600 {
		return 0, false
	}
	return sign * secs, true
}

// eastZone is a fixed zone off seconds east, named as PostgreSQL names
// it: <+05:30>-05:30.
func eastZone(off int) (*time.Location, string, error) {
	name := EastZoneName(off)
	return time.FixedZone(name, off), name, nil
}

// EastZoneName names the zone off seconds east of Greenwich as
// PostgreSQL does (<+05:30>-05:30), a name LoadZone reads back.
func EastZoneName(off int) string {
	return "<" + string(appendOffset(nil, off, false)) + ">" + string(appendOffset(nil, -off, false))
}

var (
	zoneNameOnce sync.Once
	zoneNameMap  map[string]string
)

// zoneNames maps the lower-case names of the machine's zone database to
// their own (PostgreSQL matches zone names without regard to case).
func zoneNames() map[string]string {
	zoneNameOnce.Do(func() {
		zoneNameMap = map[string]string{}
		root := "/usr/share/zoneinfo"
		if d := os.Getenv("ZONEINFO"); d != "" {
			root = d
		}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil || strings.HasPrefix(rel, "posix") || strings.HasPrefix(rel, "right") || strings.Contains(rel, ".") {
				return nil
			}
			zoneNameMap[strings.ToLower(rel)] = rel
			return nil
		})
	})
	return zoneNameMap
}

// appendOffset appends a UTC offset as PostgreSQL prints it: +01,
// +05:30, -03:30, +00:09:21 (always with minutes when long is set, as
// ISO 8601 and JSON write it).
func appendOffset(dst []byte, off int, long bool) []byte {
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	h, m, s := off/3600, off%3600/60, off%60
	dst = append(dst, sign, byte('0'+h/10), byte('0'+h%10))
	if m != 0 || s != 0 || long {
		dst = append(dst, ':', byte('0'+m/10), byte('0'+m%10))
	}
	if s != 0 {
		dst = append(dst, ':', byte('0'+s/10), byte('0'+s%10))
	}
	return dst
}

// AppendTimestamptz appends t as PostgreSQL prints a timestamp with time
// zone in the session's zone loc: 2024-01-05 11:00:00+01.
func AppendTimestamptz(dst []byte, t time.Time, loc *time.Location) []byte {
	if loc == nil {
		loc = time.UTC
	}
	t = t.In(loc)
	dst = t.AppendFormat(dst, "2006-01-02 15:04:05.999999")
	_, off := t.Zone()
	return appendOffset(dst, off, false)
}

// AppendOffset appends a UTC offset of off seconds as PostgreSQL prints
// it (+01, +05:30, -03:30; +01:00 with long, as in JSON).
func AppendOffset(dst []byte, off int, long ...bool) []byte {
	return appendOffset(dst, off, len(long) > 0 && long[0])
}

// FormatTimestamptz is AppendTimestamptz as a string.
func FormatTimestamptz(t time.Time, loc *time.Location) string {
	return string(AppendTimestamptz(nil, t, loc))
}

// zone is the session's TimeZone (UTC unless set): timestamptz values
// print in it, and text ones without an offset are read in it.
func (s *execSession) zone() *time.Location {
	name, _ := s.Setting("timezone")
	if name == s.zoneName && s.zoneLoc != nil {
		return s.zoneLoc
	}
	loc, _, err := LoadZone(name)
	if err != nil {
		loc = time.UTC // checked when set
	}
	s.zoneName, s.zoneLoc = name, loc
	return loc
}

// startupZone applies the client's TimeZone startup parameter (pgjdbc
// sends the JVM's zone) as the session's default, as PostgreSQL does: a
// back end with a server of its own (RawSession) gets it as a SET there
// (the server reads the name and prints in it), tandem's own back end
// reads it here. A zone that does not exist is FATAL 22023.
func (s *execSession) startupZone(ctx context.Context) error {
	var val string
	found := false
	for k, v := range s.c.Params {
		if strings.EqualFold(k, "timezone") {
			val, found = v, true
		}
	}
	if !found {
		return nil
	}
	fatal := func(err error) error {
		e := &Error{Severity: "FATAL", Code: "22023", Message: fmt.Sprintf("invalid value for parameter \"TimeZone\": %q", val), Err: err}
		return e
	}
	canon := val
	if _, raw := s.bs.(RawSession); raw {
		if err := s.runInternal(ctx, "SET TimeZone TO "+quoteLiteral(val)); err != nil {
			return fatal(err)
		}
	} else {
		_, name, err := LoadZone(val)
		if err != nil {
			return fatal(err)
		}
		canon = name
	}
	s.startZone = canon
	s.params = withParam(s.params, "TimeZone", canon)
	return nil
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
