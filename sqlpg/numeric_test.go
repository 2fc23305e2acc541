package sqlpg

import (
	"math"
	"testing"
)

func TestFormatNumeric(t *testing.T) {
	for _, c := range []struct {
		f     float64
		scale int
		want  string
	}{
		{1.005, 2, "1.01"},
		{2.675, 2, "2.68"},
		{10.125, 2, "10.13"},
		{-0.005, 2, "-0.01"},
		{-0.004, 2, "0.00"},
		{0.285, 2, "0.29"},
		{1.1 * 1.15, 2, "1.27"},
		{0.1 + 0.2, 2, "0.30"},
		{999.995, 2, "1000.00"},
		{9.5, 0, "10"},
		{-9.5, 0, "-10"},
		{0.4, 0, "0"},
		{0, 2, "0.00"},
		{5, 3, "5.000"},
		{0.0004, 3, "0.000"},
		{0.0005, 3, "0.001"},
		{0.00001234, 6, "0.000012"},
		{123.456, 1, "123.5"},
		{1e20, 2, "100000000000000000000.00"},
		{123456789012345678, 0, "123456789012345680"},
		{1e-300, 2, "0.00"},
		{math.NaN(), 2, "NaN"},
		{math.Inf(-1), 2, "-Infinity"},
	} {
		if got := FormatNumeric(c.f, c.scale); got != c.want {
			t.Errorf("FormatNumeric(%v, %d) = %q, want %q", c.f, c.scale, got, c.want)
		}
	}
}

func TestRoundNumeric(t *testing.T) {
	for _, c := range []struct {
		f     float64
		scale int
		want  float64
	}{
		{1.005, 2, 1.01},
		{2.675, 2, 2.68},
		{-2.675, 2, -2.68},
		{1234.5, -2, 1200},
		{1250, -2, 1300},
		{0.5, 0, 1},
	} {
		if got := RoundNumeric(c.f, c.scale); got != c.want {
			t.Errorf("RoundNumeric(%v, %d) = %v, want %v", c.f, c.scale, got, c.want)
		}
	}
}

func TestDateFields(t *testing.T) {
	date := Column{Name: "d", Type: &Type{Name: "date"}}
	ts := Column{Name: "ts", Type: &Type{Name: "timestamptz"}}
	for _, c := range []struct {
		col  Column
		in   string
		bad  bool
		want string // padISO
	}{
		{date, "2024-02-29", false, "2024-02-29"},
		{date, "2024-2-9", false, "2024-02-09"},
		{date, "2024-02-30", true, ""},
		{date, "2023-02-29", true, ""},
		{date, "2024-13-01", true, ""},
		{date, "2024-00-10", true, ""},
		{date, "0044-03-15 BC", false, "0044-03-15 BC"},
		{date, "infinity", false, "infinity"},
		{date, "Jan 5 2024", false, "Jan 5 2024"},
		{ts, "2024-01-01 24:00:00", false, "2024-01-02 00:00:00"},
		{ts, "2024-01-01 24:00:01", true, ""},
		{ts, "2024-01-01 10:61", true, ""},
		{ts, "2024-1-5 1:2:3.25+01", false, "2024-01-05 01:02:03.25+01"},
		{ts, "2024-02-29 23:59:60+02", false, "2024-03-01 00:00:00+02"},
		{ts, "2024-01-05 10:00:00 UTC", false, "2024-01-05 10:00:00+00"},
		{ts, "2024-01-05T10:00:00Z", false, "2024-01-05 10:00:00+00"},
		{Column{Name: "s", Type: &Type{Name: "text"}}, "2024-02-30", false, ""},
	} {
		err := dateFieldError(c.col, c.in)
		if (err != nil) != c.bad {
			t.Errorf("dateFieldError(%s, %q) = %v, want bad=%v", c.col.Type.Name, c.in, err, c.bad)
		}
		if !c.bad && c.want != "" {
			if got := padISO(c.in); got != c.want {
				t.Errorf("padISO(%q) = %q, want %q", c.in, got, c.want)
			}
		}
	}
}

func TestTimeOfDay(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok, bad  bool
	}{
		{"1:2", "01:02:00", true, false},
		{"9:30:15.50", "09:30:15.5", true, false},
		{"10:00:60", "10:01:00", true, false},
		{"23:59:60", "24:00:00", true, false},
		{"24:00", "24:00:00", true, false},
		{"24:00:01", "", true, true},
		{"25:61", "", true, true},
		{"10:00+02", "", false, false},
		{"allballs", "", false, false},
	} {
		got, ok, err := timeOfDay(c.in)
		if ok != c.ok || (err != nil) != c.bad || !c.bad && got != c.want {
			t.Errorf("timeOfDay(%q) = %q, %v, %v; want %q, %v, bad=%v", c.in, got, ok, err, c.want, c.ok, c.bad)
		}
	}
}
