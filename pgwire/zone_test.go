package pgwire

import (
	"testing"
	"time"
)

// TestLoadZone: TimeZone values as PostgreSQL 15 reads them (the names
// SHOW gives back and the offset of 2024-01-05 10:00 UTC there).
func TestLoadZone(t *testing.T) {
	at := time.Date(2024, 1, 5, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in, name string
		off      int // seconds east
		bad      bool
	}{
		{in: "UTC", name: "UTC"},
		{in: "utc", name: "UTC"},
		{in: "Europe/Berlin", name: "Europe/Berlin", off: 3600},
		{in: "europe/berlin", name: "Europe/Berlin", off: 3600},
		{in: "America/New_York", name: "America/New_York", off: -5 * 3600},
		{in: "5", name: "<+05>-05", off: 5 * 3600},
		{in: "+3", name: "<+03>-03", off: 3 * 3600},
		{in: "-5", name: "<-05>+05", off: -5 * 3600},
		{in: "5.5", name: "<+05:30>-05:30", off: 5*3600 + 1800},
		{in: "INTERVAL '+05:30' HOUR TO MINUTE", name: "<+05:30>-05:30", off: 5*3600 + 1800},
		{in: "UTC+3", name: "UTC+3", off: -3 * 3600},
		{in: "GMT-2", name: "GMT-2", off: 2 * 3600},
		{in: "-3:30", name: "-3:30", off: 3*3600 + 1800},
		{in: "<+03>-03", name: "<+03>-03", off: 3 * 3600},
		{in: "EST", name: "EST", off: -5 * 3600},
		{in: "Z", bad: true},
		{in: "Mars/Olympus", bad: true},
		{in: "../../etc/passwd", bad: true},
		{in: "", bad: true},
		{in: "99", bad: true},
	} {
		loc, name, err := LoadZone(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("LoadZone(%q) = %q, want 22023", c.in, name)
			}
			continue
		}
		if err != nil {
			t.Errorf("LoadZone(%q): %v", c.in, err)
			continue
		}
		if _, off := at.In(loc).Zone(); name != c.name || off != c.off {
			t.Errorf("LoadZone(%q) = %q at %+d s, want %q at %+d s", c.in, name, off, c.name, c.off)
		}
	}
}

// TestAppendTimestamptz: offsets printed as PostgreSQL prints them.
func TestAppendTimestamptz(t *testing.T) {
	kolkata, _, _ := LoadZone("Asia/Kolkata")
	paris, _, _ := LoadZone("Europe/Paris")
	for _, c := range []struct {
		t    time.Time
		loc  *time.Location
		want string
	}{
		{time.Date(2024, 1, 5, 10, 0, 0, 0, time.UTC), time.UTC, "2024-01-05 10:00:00+00"},
		{time.Date(2024, 1, 5, 10, 0, 0, 123456000, time.UTC), kolkata, "2024-01-05 15:30:00.123456+05:30"},
		{time.Date(1890, 1, 1, 0, 0, 0, 0, time.UTC), paris, "1890-01-01 00:09:21+00:09:21"},
	} {
		if got := FormatTimestamptz(c.t, c.loc); got != c.want {
			t.Errorf("FormatTimestamptz(%v, %v) = %q, want %q", c.t, c.loc, got, c.want)
		}
	}
}

// TestSavepointName: the savepoint a RELEASE or ROLLBACK TO names.
func TestSavepointName(t *testing.T) {
	for _, c := range []struct {
		kw   []string
		want string
	}{
		{[]string{"ROLLBACK"}, ""},
		{[]string{"ROLLBACK", "TO", "A"}, "a"},
		{[]string{"ROLLBACK", "TO", "SAVEPOINT", "B"}, "b"},
		{[]string{"ROLLBACK", "WORK", "TO", "SAVEPOINT", "C"}, "c"},
		{[]string{"RELEASE", "SAVEPOINT", "D"}, "d"},
		{[]string{"RELEASE", "E"}, "e"},
	} {
		if got := savepointName(c.kw); got != c.want {
			t.Errorf("savepointName(%v) = %q, want %q", c.kw, got, c.want)
		}
	}
}
