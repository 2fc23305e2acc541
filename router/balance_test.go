package router

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/tandemdb/tandem/config"
)

func cands(weights ...int) []Candidate {
	var cs []Candidate
	for i, w := range weights {
		cs = append(cs, Candidate{Index: i, ID: fmt.Sprintf("n%d", i+1), Weight: w})
	}
	return cs
}

var local = netip.MustParseAddr("127.0.0.1")

// withinShare checks that counts follow the weights within tol (a
// fraction of each node's expected share).
func withinShare(t *testing.T, counts []int, weights []int, tol float64) {
	t.Helper()
	total, wsum := 0, 0
	for i := range counts {
		total += counts[i]
		wsum += weights[i]
	}
	for i, n := range counts {
		want := float64(total) * float64(weights[i]) / float64(wsum)
		if d := float64(n) - want; d > tol*want || -d > tol*want {
			t.Fatalf("node %d got %d of %d picks, want %.0f ± %.0f%% (counts %v, weights %v)", i, n, total, want, tol*100, counts, weights)
		}
	}
}

// TestBalancerPolicies: 1,000 picks per policy and weighting.
func TestBalancerPolicies(t *testing.T) {
	cases := []struct {
		name    string
		policy  string
		weights []int
		hold    bool // transactions stay open (Active grows with each pick)
		tol     float64
	}{
		{"least-connected, open transactions, weights 1:2:3", "least-connected", []int{1, 2, 3}, true, 0.10},
		{"least-connected, short transactions, weights 1:2:3", "", []int{1, 2, 3}, false, 0.10},
		{"least-connected, equal weights", "least-connected", []int{1, 1, 1, 1}, true, 0.10},
		{"round-robin exact, 1:1:2", "round-robin", []int{1, 1, 2}, false, 0},
		{"round-robin exact, 5:3:2", "round-robin", []int{5, 3, 2}, false, 0},
		{"round-robin exact, equal", "round-robin", []int{1, 1, 1, 1, 1}, false, 0},
		{"random roughly uniform", "random", []int{1, 1, 1}, false, 0.10},
		{"random weighted 1:3", "random", []int{1, 3}, false, 0.10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBalancerSeed(tc.policy, 42)
			if err != nil {
				t.Fatal(err)
			}
			cs := cands(tc.weights...)
			counts := make([]int, len(cs))
			for range 1000 {
				i := b.Pick(cs, local)
				counts[i]++
				if tc.hold {
					cs[i].Active++
				}
			}
			withinShare(t, counts, tc.weights, tc.tol)
		})
	}
}

// Round-robin is exact in every round, not only over the run.
func TestRoundRobinRounds(t *testing.T) {
	b, _ := NewBalancer("round-robin")
	cs := cands(3, 1, 2)
	for round := range 100 {
		counts := make([]int, 3)
		for range 6 {
			counts[b.Pick(cs, local)]++
		}
		if !slices.Equal(counts, []int{3, 1, 2}) {
			t.Fatalf("round %d: %v", round, counts)
		}
	}
}

// Least-connected goes where the fewest transactions per weight are open.
func TestLeastConnectedLoad(t *testing.T) {
	b, _ := NewBalancer("least-connected")
	cs := cands(1, 2, 1)
	cs[0].Active, cs[1].Active, cs[2].Active = 3, 4, 1 // 3, 2, 1 per weight
	for range 10 {
		if i := b.Pick(cs, local); i != 2 {
			t.Fatalf("picked %d, want the least loaded (2)", i)
		}
	}
	cs[2].Active = 5 // 3, 2, 5 per weight
	if i := b.Pick(cs, local); i != 1 {
		t.Fatalf("picked %d, want 1 (4 open over weight 2)", i)
	}
}

// Single sticks to the highest weight; moves only when that node leaves
// or a strictly higher weight appears.
func TestSingleSticky(t *testing.T) {
	b, _ := NewBalancer("single")
	cs := cands(1, 3, 2)
	steps := []struct {
		what string
		cs   []Candidate
		want string
	}{
		{"highest weight", cs, "n2"},
		{"an equal weight appears: stays", append(slices.Clone(cs), Candidate{Index: 3, ID: "n4", Weight: 3}), "n2"},
		{"the chosen node leaves: next highest", []Candidate{cs[0], cs[2]}, "n3"},
		{"n2 (weight 3) is back, above n3 (2): moves back", cs, "n2"},
		{"order of candidates does not matter", []Candidate{cs[2], cs[1], cs[0]}, "n2"},
		{"n2 leaves, n4 (3) and n3 (2): n4", []Candidate{cs[0], cs[2], {Index: 3, ID: "n4", Weight: 3}}, "n4"},
		{"n2 back with the same weight as n4: stays on n4", append(slices.Clone(cs), Candidate{Index: 3, ID: "n4", Weight: 3}), "n4"},
	}
	for _, s := range steps {
		for range 1000 / len(steps) {
			if got := s.cs[b.Pick(s.cs, local)].ID; got != s.want {
				t.Fatalf("%s: picked %s, want %s", s.what, got, s.want)
			}
		}
	}
}

// Source: the same client address reaches the same node while the
// candidates are unchanged; one node leaving moves only its clients;
// addresses spread over the nodes by weight.
func TestSourceStable(t *testing.T) {
	b, _ := NewBalancer("source")
	cs := cands(1, 1, 1)
	first := map[netip.Addr]string{}
	counts := make([]int, 3)
	for x := 1; x <= 250; x++ {
		a := netip.AddrFrom4([4]byte{127, 0, 0, byte(x)})
		i := b.Pick(cs, a)
		first[a] = cs[i].ID
		counts[i]++
	}
	for range 4 { // 1,000 picks in all
		for a, id := range first {
			if got := cs[b.Pick(cs, a)].ID; got != id {
				t.Fatalf("%v moved from %s to %s with the same candidates", a, id, got)
			}
		}
	}
	withinShare(t, counts, []int{1, 1, 1}, 0.25) // 250 addresses: loose
	// n2 leaves: only n2's clients move.
	rest := []Candidate{cs[0], cs[2]}
	for a, id := range first {
		got := rest[b.Pick(rest, a)].ID
		if id != "n2" && got != id {
			t.Fatalf("%v moved from %s to %s though %s is still a candidate", a, id, got, id)
		}
	}
	// IPv4-mapped IPv6 is the same client.
	a := netip.AddrFrom4([4]byte{127, 0, 0, 7})
	if b.Pick(cs, netip.AddrFrom16(a.As16())) != b.Pick(cs, a) {
		t.Fatal("an IPv4-mapped address reached another node")
	}
}

func TestBadPolicy(t *testing.T) {
	if _, err := NewBalancer("fastest"); !errors.Is(err, ErrBadPolicy) {
		t.Fatalf("err %v", err)
	}
	// The cluster file's names are the router's.
	if !slices.Equal(config.Policies, Policies) {
		t.Fatalf("config.Policies %v, router.Policies %v", config.Policies, Policies)
	}
	for _, p := range Policies {
		if _, err := NewBalancer(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// BenchmarkPick is one pick per policy over 3 and 16 candidates.
func BenchmarkPick(b *testing.B) {
	for _, p := range Policies {
		for _, n := range []int{3, 16} {
			b.Run(fmt.Sprintf("%s/%d", p, n), func(b *testing.B) {
				bal, _ := NewBalancerSeed(p, 1)
				ws := make([]int, n)
				for i := range ws {
					ws[i] = 1 + i%3
				}
				cs := cands(ws...)
				addr := netip.AddrFrom4([4]byte{127, 0, 0, 9})
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					cs[bal.Pick(cs, addr)].Active ^= 1
				}
			})
		}
	}
}
