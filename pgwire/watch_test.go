package pgwire

import (
	"testing"
	"time"
)

func TestParseTimeout(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"0", 0, false},
		{"200", 200 * time.Millisecond, false},
		{"'1500ms'", 1500 * time.Millisecond, false},
		{"5s", 5 * time.Second, false},
		{"2 min", 2 * time.Minute, false},
		{"1h", time.Hour, false},
		{"1.5s", 1500 * time.Millisecond, false},
		{"soon", 0, true},
		{"5 fortnights", 0, true},
		{"-1", 0, true},
	}
	for _, tc := range cases {
		got, err := ParseTimeout("statement_timeout", tc.in)
		if tc.bad {
			if e, ok := err.(*Error); !ok || e.Code != "22023" {
				t.Errorf("ParseTimeout(%q) = %v, %v; want 22023", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatTimeout(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0", 250 * time.Millisecond: "250ms", 5 * time.Second: "5s", 2 * time.Minute: "2min", 3 * time.Hour: "3h", 1500 * time.Millisecond: "1500ms"} {
		if got := FormatTimeout(d); got != want {
			t.Errorf("FormatTimeout(%v) = %q, want %q", d, got, want)
		}
	}
}

// BenchmarkStmtWatch: what watching costs a statement that ends at once
// (the common case): re-arming and stopping the session's one timer.
func BenchmarkStmtWatch(b *testing.B) {
	s := &execSession{}
	s.watch.s = s
	b.ReportAllocs()
	for b.Loop() {
		s.watch.begin(0)
		s.watch.end()
	}
}
