package main

import (
	"strings"
	"testing"

	"github.com/tandemdb/tandem/replication"
)

// TestLossReport: the promote report never says "lost: 0" unless the old
// primary was fenced and gave its last GSN.
func TestLossReport(t *testing.T) {
	cases := []struct {
		name string
		res  replication.PromoteResult
		want string
		not  string
	}{
		{"fenced, nothing lost", replication.PromoteResult{LastGSN: 50, PrimaryGSN: 50, PrimaryKnown: true}, "lost: 0 GSNs (the old primary was fenced at GSN 50)", ""},
		{"fenced, tail missing", replication.PromoteResult{LastGSN: 48, PrimaryGSN: 50, PrimaryKnown: true, LostGSNs: 2}, "lost: 2 GSNs", ""},
		{"never heard", replication.PromoteResult{LastGSN: 50}, "lost: unknown", "lost: 0"},
		{"heard, caught up", replication.PromoteResult{LastGSN: 50, PrimaryGSN: 50}, "lost: unknown, at least 0 GSNs", "lost: 0"},
		{"heard, behind", replication.PromoteResult{LastGSN: 40, PrimaryGSN: 50, LostGSNs: 10}, "lost: unknown, at least 10 GSNs", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := lossReport(c.res)
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %q, want prefix %q", got, c.want)
			}
			if c.not != "" && strings.HasPrefix(got, c.not) {
				t.Fatalf("got %q", got)
			}
		})
	}
}
