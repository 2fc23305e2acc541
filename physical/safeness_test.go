package physical

import (
	"errors"
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
