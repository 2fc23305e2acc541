package physical

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSynchronousCommit(t *testing.T) {
	for _, tc := range []struct{ safeness, want string }{
		{"1-safe", "local"},
		{"2-safe-received", "remote_write"},
		{"2-safe-visible", "remote_apply"},
		{"2-safe-durable", "on"},
		{"3-safe", ""},
	} {
		got, err := SynchronousCommit(tc.safeness)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.safeness, got, err, tc.want)
		}
	}
}

func TestStandbyNames(t *testing.T) {
	for _, tc := range []struct {
		ack      string
		standbys []string
		want     string
	}{
		{"one", []string{"n3", "n2"}, `FIRST 1 ("n2", "n3")`},
		{"all", []string{"n2", "n3", "n4"}, `FIRST 3 ("n2", "n3", "n4")`},
		{"majority", []string{"n2", "n3", "n4"}, `ANY 2 ("n2", "n3", "n4")`},
		{"majority", []string{"n2", "n3", "n4", "n5"}, `ANY 3 ("n2", "n3", "n4", "n5")`},
		{"all", []string{`we"ird`}, `FIRST 1 ("we""ird")`},
		{"all", nil, ""},
	} {
		got, err := StandbyNames(tc.ack, tc.standbys)
		if err != nil || got != tc.want {
			t.Errorf("%s %v: %q, %v; want %q", tc.ack, tc.standbys, got, err, tc.want)
		}
	}
	if _, err := StandbyNames("most", []string{"n2"}); err == nil {
		t.Error("ack most accepted")
	}
}

func TestCheckDurability(t *testing.T) {
	for d, want := range map[string]error{"strict": nil, "": nil, "relaxed": ErrNotExpressible, "adaptive": ErrNotExpressible} {
		if err := CheckDurability(d); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("%q: %v, want %v", d, err, want)
		}
	}
	if err := CheckDurability("lazy"); err == nil || errors.Is(err, ErrNotExpressible) {
		t.Errorf("lazy: %v", err)
	}
}

func TestSlotName(t *testing.T) {
	for id, want := range map[string]string{"n2": "tandem_n2", "Node-B.1": "tandem_node_b_1"} {
		if got := slotName(id); got != want {
			t.Errorf("%q: %q, want %q", id, got, want)
		}
	}
}

func TestParseLSN(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0/0", 0, true},
		{"0/30289E8", 0x30289E8, true},
		{"16/B374D848", 0x16<<32 | 0xB374D848, true},
		{" 1/0 ", 1 << 32, true},
		{"", 0, false},
		{"30289E8", 0, false},
		{"x/1", 0, false},
		{"1/100000000", 0, false},
	} {
		got, err := parseLSN(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseLSN(%q) = %x, %v; want %x, ok %v", c.in, got, err, c.want, c.ok)
		}
		if c.ok {
			// FormatLSN writes what PostgreSQL writes (no padding).
			if back := FormatLSN(got); back != strings.TrimSpace(c.in) {
				t.Errorf("FormatLSN(%x) = %q, want %q", got, back, strings.TrimSpace(c.in))
			}
		}
	}
}

// TestAckCount: the number of standbys a commit waits for, as
// StandbyNames writes it (the degrade watch compares the streaming
// standbys with it).
func TestAckCount(t *testing.T) {
	for _, c := range []struct {
		ack  string
		n    int
		want int
	}{
		{"one", 0, 0}, {"one", 1, 1}, {"one", 3, 1},
		{"majority", 1, 1}, {"majority", 2, 2}, {"majority", 3, 2}, {"majority", 4, 3},
		{"all", 1, 1}, {"all", 3, 3},
	} {
		if got := AckCount(c.ack, c.n); got != c.want {
			t.Errorf("AckCount(%s, %d) = %d, want %d", c.ack, c.n, got, c.want)
		}
		ids := make([]string, c.n)
		for i := range ids {
			ids[i] = fmt.Sprintf("n%d", i+2)
		}
		names, err := StandbyNames(c.ack, ids)
		if err != nil {
			t.Fatal(err)
		}
		if c.n > 0 && !strings.Contains(names, fmt.Sprintf(" %d (", c.want)) {
			t.Errorf("StandbyNames(%s, %d) = %q, does not wait for %d", c.ack, c.n, names, c.want)
		}
	}
}

// TestConfirmedAt: the lease renewals carry what the synchronous standby
// confirmed at the level's column; asynchronous and potential standbys
// count for nothing.
func TestConfirmedAt(t *testing.T) {
	reps := []Replica{
		{Node: "n2", SyncState: "sync", Written: "0/300", Flushed: "0/200", Replayed: "0/100"},
		{Node: "n3", SyncState: "async", Written: "0/900", Flushed: "0/900", Replayed: "0/900"},
		{Node: "n4", SyncState: "potential", Written: "0/800", Flushed: "0/800", Replayed: "0/800"},
	}
	for level, want := range map[string]uint64{"2-safe-received": 0x300, "2-safe-durable": 0x200, "2-safe-visible": 0x100, "1-safe": 0x300} {
		if got := confirmedAt(level, reps); got != want {
			t.Errorf("%s: %x, want %x", level, got, want)
		}
	}
	if got := confirmedAt("2-safe-received", reps[1:]); got != 0 {
		t.Errorf("no synchronous standby: %x, want 0", got)
	}
}
