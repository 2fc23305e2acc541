package router

import (
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"
)

func testRouter(cfg Config) *Router {
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, id := range []string{"n1", "n2", "n3"} {
		cfg.Nodes = append(cfg.Nodes, Upstream{Node: id, Addr: "127.0.0.1:1"})
	}
	return New(cfg)
}

func candIDs(cs []Candidate) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestReadCandidates: who may take a read, step by step: weights, read
// weight 0 on the primary, drain, a down node, lag beyond max_lag and back
// within half of it.
func TestReadCandidates(t *testing.T) {
	r := testRouter(Config{Weights: []int{1, 2, 3}, ReadWeights: []int{0, -1, -1}, MaxLagGSNs: 100})
	if got := r.ReadCandidates(); len(got) != 0 {
		t.Fatalf("before any probe (roles unknown, the primary at read weight 0): %v", candIDs(got))
	}
	r.setRole("n2", "standby", 1)
	r.setRole("n3", "standby", 1)
	steps := []struct {
		what string
		do   func()
		want []string
	}{
		{"the primary takes no reads (read_weight 0)", func() {}, []string{"n2", "n3"}},
		{"drained", func() { _ = r.SetDraining("n3", true) }, []string{"n2"}},
		{"undrained", func() { _ = r.SetDraining("n3", false) }, []string{"n2", "n3"}},
		{"down", func() { r.report("n2", errors.New("refused")); r.report("n2", errors.New("refused")) }, []string{"n3"}},
		{"up", func() { r.report("n2", nil) }, []string{"n2", "n3"}},
		{"n3 lags 150 GSNs (max 100)", func() {
			r.setProgress("n1", "primary", 1000, 1000)
			r.setProgress("n2", "standby", 990, 0)
			r.setProgress("n3", "standby", 850, 0)
		}, []string{"n2"}},
		{"n3 at 70 behind: still out (back within half of max_lag)", func() { r.setProgress("n3", "standby", 930, 0) }, []string{"n2"}},
		{"n3 at 40 behind: back", func() { r.setProgress("n3", "standby", 960, 0) }, []string{"n2", "n3"}},
	}
	for _, s := range steps {
		s.do()
		if got := candIDs(r.ReadCandidates()); !slices.Equal(got, s.want) {
			t.Fatalf("%s: candidates %v, want %v", s.what, got, s.want)
		}
	}
	st := r.Status()
	if st[2].AppliedGSN != 960 || st[2].Lag != 40 || st[2].Lagging || st[1].Weight != 2 || st[1].ReadWeight != 2 || st[0].ReadWeight != 0 || st[0].Lag != 0 {
		t.Fatalf("status %+v", st)
	}
	if err := r.SetDraining("n9", true); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("drain of an unknown node: %v", err)
	}
}

// TestReadCandidatesEpoch: on WAL positions (the physical engine) a
// standby that has not followed the primary's epoch is out of read
// rotation (it may replay the old timeline past the new one's fork) until
// it reports the new epoch; on GSNs epochs do not take part.
func TestReadCandidatesEpoch(t *testing.T) {
	for _, tc := range []struct {
		lsn  bool
		want [][]string
	}{
		{true, [][]string{{"n2", "n3"}, {"n1", "n3"}, {"n1", "n2", "n3"}}},
		{false, [][]string{{"n2", "n3"}, {"n1", "n2", "n3"}, {"n1", "n2", "n3"}}},
	} {
		r := testRouter(Config{LSN: tc.lsn})
		r.setRole("n1", "primary", 1)
		r.setRole("n2", "standby", 1)
		r.setRole("n3", "standby", 1)
		steps := []func(){
			func() { r.report("n1", errors.New("refused")); r.report("n1", errors.New("refused")) },
			func() { r.setRole("n3", "primary", 2); r.report("n1", nil); r.setRole("n1", "standby", 2) },
			func() { r.setRole("n2", "standby", 2) },
		}
		for i, step := range steps {
			step()
			if got := candIDs(r.ReadCandidates()); !slices.Equal(got, tc.want[i]) {
				t.Fatalf("lsn %v, step %d: candidates %v, want %v", tc.lsn, i, got, tc.want[i])
			}
		}
	}
}

// Begin/End keep the open transactions Candidate.Active shows, and count
// transactions routed per node.
func TestBeginEnd(t *testing.T) {
	r := testRouter(Config{})
	r.setRole("n2", "standby", 1)
	r.setRole("n3", "standby", 1)
	r.Begin(1)
	r.Begin(1)
	r.Begin(2)
	r.End(1)
	r.End(0) // nothing open there: stays 0
	cs := r.ReadCandidates()
	active := map[string]int{}
	for _, c := range cs {
		active[c.ID] = c.Active
	}
	if active["n1"] != 0 || active["n2"] != 1 || active["n3"] != 1 {
		t.Fatalf("active %v", active)
	}
	st := r.Status()
	if st[1].Transactions != 2 || st[2].Transactions != 1 || st[0].Transactions != 0 {
		t.Fatalf("transactions %+v", st)
	}
	merged := MergeStatus(st, st)
	if merged[1].Transactions != 4 || merged[1].Active != 2 {
		t.Fatalf("merged %+v", merged[1])
	}
}

// A time-based max_lag: a node whose oldest missing GSN the primary had
// longer ago than max_lag is out of read rotation.
func TestMaxLagTime(t *testing.T) {
	r := testRouter(Config{MaxLagTime: 50 * time.Millisecond})
	r.setRole("n2", "standby", 1)
	r.setRole("n3", "standby", 1)
	r.setProgress("n1", "primary", 10, 10)
	r.setProgress("n2", "standby", 10, 0)
	r.setProgress("n3", "standby", 9, 0)
	if got := candIDs(r.ReadCandidates()); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Fatalf("fresh lag: %v", got)
	}
	time.Sleep(80 * time.Millisecond)
	r.setProgress("n3", "standby", 9, 0)
	if got := candIDs(r.ReadCandidates()); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("n3 lags GSN 10 by more than 50ms: %v", got)
	}
	if st := r.Status()[2]; st.LagTime < 50*time.Millisecond || !st.Lagging {
		t.Fatalf("n3 %+v", st)
	}
	r.setProgress("n3", "standby", 10, 0)
	if got := candIDs(r.ReadCandidates()); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Fatalf("n3 caught up: %v", got)
	}
}

// TestPickReplicaSticky: on the physical engine (LSN) least-connected
// keeps a session's reads on the node of its last read at eventual as at
// session, while that node is a candidate; round-robin still chooses per
// transaction at eventual; a drained node lets the session move.
func TestPickReplicaSticky(t *testing.T) {
	for _, tc := range []struct {
		policy string
		cons   consistency
		sticky bool
	}{
		{"", consEventual, true},
		{"least-connected", consEventual, true},
		{"least-connected", consSession, true},
		{"round-robin", consEventual, false},
	} {
		r := testRouter(Config{LSN: true, Policy: tc.policy, ReadWeights: []int{0, -1, -1}})
		r.setRole("n1", "primary", 1)
		r.setRole("n2", "standby", 1)
		r.setRole("n3", "standby", 1)
		s := &splitSession{rt: r, cons: tc.cons, stick: 2} // n3
		picks := map[int]int{}
		for i := 0; i < 20; i++ {
			picks[s.pickReplica()]++
		}
		if tc.sticky && picks[2] != 20 {
			t.Errorf("policy %q, consistency %d: reads on %v, want all 20 on n3 (the session's node)", tc.policy, tc.cons, picks)
		}
		if !tc.sticky && (picks[1] == 0 || picks[2] == 0) {
			t.Errorf("policy %q, consistency %d: reads on %v, want both replicas", tc.policy, tc.cons, picks)
		}
		if tc.sticky {
			_ = r.SetDraining("n3", true)
			if got := s.pickReplica(); got != 1 {
				t.Errorf("policy %q: n3 drained, the read went to node %d, want n2", tc.policy, got)
			}
		}
	}
}

// TestPickMultiMasterSticky: in a multi-master cluster least-connected
// keeps a session on the node of its last transaction while that node has
// applied what the session needs; not when it has not (nor drained), and
// round-robin balances every transaction.
func TestPickMultiMasterSticky(t *testing.T) {
	for _, tc := range []struct {
		policy string
		sticky bool
	}{
		{"", true},
		{"least-connected", true},
		{"round-robin", false},
	} {
		r := testRouter(Config{MultiMaster: true, Policy: tc.policy})
		for _, id := range []string{"n1", "n2", "n3"} {
			r.setRole(id, "primary", 1)
		}
		for i := range 3 {
			r.noteApplied(i, 10)
		}
		s := &splitSession{rt: r, cons: consSession, stick: 2, lastCommit: 10} // n3
		picks := map[int]int{}
		for range 30 {
			picks[s.pickReplica()]++
		}
		if tc.sticky && picks[2] != 30 {
			t.Errorf("policy %q: transactions on %v, want all 30 on n3 (the session's node)", tc.policy, picks)
		}
		if !tc.sticky && (picks[0] == 0 || picks[1] == 0 || picks[2] == 0) {
			t.Errorf("policy %q: transactions on %v, want every node", tc.policy, picks)
		}
		if !tc.sticky {
			continue
		}
		// n3 has not applied the session's last commit (known): another node.
		s.lastCommit = 11
		r.noteApplied(0, 11)
		if got := s.pickReplica(); got != 0 {
			t.Errorf("policy %q: n3 behind the session, the transaction went to node %d, want n1 (the only one ready)", tc.policy, got)
		}
		r.noteApplied(2, 11)
		if got := s.pickReplica(); got != 2 {
			t.Errorf("policy %q: n3 caught up, the transaction went to node %d, want n3", tc.policy, got)
		}
		_ = r.SetDraining("n3", true)
		if got := s.pickReplica(); got == 2 {
			t.Errorf("policy %q: n3 drained, the transaction still went there", tc.policy)
		}
	}
}

// TestMultiMasterProbeApplied: in a multi-master cluster the health
// probe's applied GSN makes a node ready for new sessions. Known only
// from sessions' answers, every new session (needing the highest GSN known
// anywhere) went to the node of the last commit.
func TestMultiMasterProbeApplied(t *testing.T) {
	for _, probed := range []bool{false, true} {
		r := testRouter(Config{MultiMaster: true})
		for _, id := range []string{"n1", "n2", "n3"} {
			r.setRole(id, "primary", 1)
		}
		r.noteApplied(1, 20) // a commit answered on n2
		if probed {
			for _, id := range []string{"n1", "n2", "n3"} {
				r.setProgress(id, "primary", 20, 20)
			}
		}
		picks := map[int]int{}
		for range 30 {
			s := &splitSession{rt: r, cons: consSession, stick: -1, lastRead: r.maxApplied()}
			picks[s.pickReplica()]++
		}
		if probed && (picks[0] == 0 || picks[1] == 0 || picks[2] == 0) {
			t.Errorf("every node probed at GSN 20: 30 new sessions went to %v, want every node", picks)
		}
		if !probed && picks[1] != 30 {
			t.Errorf("only n2 known at GSN 20: new sessions went to %v, want all on n2", picks)
		}
	}
	// A standby of the writeset engine reports an upper bound: not noted.
	r := testRouter(Config{})
	r.setRole("n1", "primary", 1)
	r.setRole("n2", "standby", 1)
	r.setProgress("n2", "standby", 20, 0)
	if got := r.applied(1); got != 0 {
		t.Errorf("writeset standby's probe noted as applied %d, want 0", got)
	}
}
