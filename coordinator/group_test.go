package coordinator

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tandemdb/tandem/certifier"
	"github.com/tandemdb/tandem/secure"
)

// freeAddrs reserves n loopback ports (bound and released: the voters'
// addresses must be known before any of them starts).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

func issue(t *testing.T, dir string, ids ...string) {
	t.Helper()
	var ms []secure.Member
	for _, id := range ids {
		ms = append(ms, secure.Member{ID: id, Hosts: []string{"127.0.0.1"}})
	}
	if _, err := secure.Issue(dir, ms, false); err != nil {
		t.Fatal(err)
	}
}

// noLeaks waits for the goroutines a test started to end.
func noLeaks(t *testing.T, base int) {
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left running (had %d):\n%s", n-base, base, buf[:runtime.Stack(buf, true)])
	}
}

type group struct {
	t      *testing.T
	certs  string
	voters []Member
	nonv   []Member
	dirs   map[string]string
	regs   map[string]*prometheus.Registry
	cs     map[string]*Coordinator
	// slow, when set, gives the group timers a loaded CI machine keeps
	// (a 2 s lease, 1 s Raft timeouts) for tests that check liveness
	// rather than how fast a loss is noticed.
	slow bool
	// prefer is every member's Config.PreferLeader.
	prefer string
}

// pairGroup prepares two nodes and a witness (n1, n2, w) on loopback over
// mutual TLS, started by the test (g.start); extra names more members to
// issue certificates for. Whatever runs is stopped at the test's end.
func pairGroup(t *testing.T, extra ...string) *group {
	t.Helper()
	root := t.TempDir()
	g := &group{t: t, certs: filepath.Join(root, "certs"), dirs: map[string]string{},
		regs: map[string]*prometheus.Registry{}, cs: map[string]*Coordinator{}}
	issue(t, g.certs, append([]string{"n1", "n2", "w"}, extra...)...)
	addrs := freeAddrs(t, 3)
	g.voters = []Member{{ID: "n1", RaftAddr: addrs[0]}, {ID: "n2", RaftAddr: addrs[1]}, {ID: "w", RaftAddr: addrs[2], Role: RoleWitness}}
	for _, v := range g.voters {
		g.dirs[v.ID] = filepath.Join(root, v.ID)
	}
	t.Cleanup(func() {
		for id := range g.cs {
			g.stop(id)
		}
	})
	return g
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (g *group) start(id string) *Coordinator {
	g.t.Helper()
	ident, err := secure.Load(g.certs, id)
	if err != nil {
		g.t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	lease, grace, raftTimeout := 400*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	if g.slow {
		lease, grace, raftTimeout = 2*time.Second, time.Second, time.Second
	}
	c, err := Start(Config{ID: id, Dir: g.dirs[id], Voters: g.voters, NonVoters: g.nonv, Identity: ident,
		InitialPrimary: "n1", InitialEpoch: 1, Safeness: "2-safe-received", Automatic: true,
		Lease: lease, Grace: grace, PreferLeader: g.prefer,
		HeartbeatTimeout: raftTimeout, ElectionTimeout: raftTimeout,
		Logger: testLogger(g.t).With("voter", id), Registerer: reg})
	if err != nil {
		g.t.Fatal(err)
	}
	g.cs[id], g.regs[id] = c, reg
	return c
}

func (g *group) stop(id string) {
	g.t.Helper()
	if c := g.cs[id]; c != nil {
		if err := c.Close(); err != nil {
			g.t.Logf("closing %s: %v", id, err)
		}
		delete(g.cs, id)
	}
}

// until waits for cond on c's map through Watch (no polling of the map).
func until(t *testing.T, c *Coordinator, within time.Duration, what string, cond func(Map) bool) Map {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last Map
	for m := range c.Watch(ctx) {
		last = m
		if cond(m) {
			return m
		}
	}
	t.Fatalf("%s: %s not reached within %v; last map %+v", c.cfg.ID, what, within, last)
	return Map{}
}

func (g *group) leader(within time.Duration, exclude string) string {
	g.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for id, c := range g.cs {
			if l, _ := c.Leader(); l != "" && l != exclude && l == id && c.Status().State == "Leader" {
				return id
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("no leader within %v", within)
	return ""
}

// TestGroup runs three voters (two nodes and a witness) on loopback over
// the real TLS transport: election, replication of the map, lease grant and
// lapse, failover to the standby that acknowledged, refusal of strangers,
// and the loss of the leader.
func TestGroup(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() { noLeaks(t, base) })
	g := pairGroup(t, "router")
	for _, v := range g.voters {
		g.start(v.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Election and the initial map on every voter.
	g.leader(10*time.Second, "")
	for _, c := range g.cs {
		until(t, c, 10*time.Second, "initialized map", func(m Map) bool { return m.Initialized && m.Primary == "n1" && m.Epoch == 1 })
	}

	// The primary takes the lease; the standby reports; both reach every voter.
	n1, n2 := g.cs["n1"], g.cs["n2"]
	if _, err := n2.AcquireLease(ctx, 1, 0); !errors.Is(err, ErrNotPrimary) {
		t.Fatalf("the standby got the lease: %v", err)
	}
	grant, err := n1.AcquireLease(ctx, 1, 5)
	if err != nil || !grant.Valid(time.Now()) || grant.Epoch != 1 {
		t.Fatalf("lease: %+v %v", grant, err)
	}
	if err := n2.ReportAck(ctx, 1, 5, "2-safe-received"); err != nil {
		t.Fatal(err)
	}
	for _, c := range g.cs {
		until(t, c, 5*time.Second, "ack replicated", func(m Map) bool {
			return m.Acks["n2"].GSN == 5 && m.Lease.Holder == "n1" && m.CommitGSN == 5
		})
	}
	// The witness hands a leadership it won to the node a failover would
	// promote (Coordinator.placeLeadership): between the two the group
	// has no leader for a moment.
	st := g.cs["w"].Status()
	for wait := time.Now().Add(5 * time.Second); st.Leader == "" && time.Now().Before(wait); st = g.cs["w"].Status() {
		time.Sleep(20 * time.Millisecond)
	}
	if st.LeaseHolder != "n1" || st.Epoch != 1 || len(st.Members) != 3 || st.Term == 0 || st.Leader == "" {
		t.Fatalf("status %+v", st)
	}

	// While the primary renews, nothing changes, well past lease + grace.
	renewUntil := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(renewUntil) {
		if grant, err = n1.RenewLease(ctx, 1, 6); err != nil {
			t.Fatalf("renew: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for id, c := range g.cs {
		if m := c.Map(); m.Primary != "n1" || m.Epoch != 1 {
			t.Fatalf("%s: primary changed while the lease was renewed: %+v", id, m)
		}
	}

	// The primary stops renewing: the standby that acknowledged becomes
	// the primary of epoch 2, and no voter sees that before the old
	// primary's own lease ran out.
	m := until(t, g.cs["w"], 10*time.Second, "failover", func(m Map) bool { return m.Primary == "n2" })
	seen := time.Now()
	if !seen.After(grant.ValidUntil) {
		t.Fatalf("new primary seen %v before the old lease expired", grant.ValidUntil.Sub(seen))
	}
	if m.Epoch != 2 || len(m.History) != 1 || m.History[0].Reason != "failover" || m.History[0].Lost != 0 {
		t.Fatalf("map after failover %+v", m)
	}
	if _, err := n1.RenewLease(ctx, 1, 6); !errors.Is(err, ErrNotPrimary) {
		t.Fatalf("old primary renewed after the failover: %v", err)
	}
	if _, err := n2.AcquireLease(ctx, 1, 6); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("new primary leased in the old epoch: %v", err)
	}
	if _, err := n2.AcquireLease(ctx, 2, 6); err != nil {
		t.Fatal(err)
	}
	var changes float64
	for _, reg := range g.regs {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "tandem_coord_primary_changes_total" {
				changes += mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
	}
	if changes != 3 {
		t.Fatalf("primary changes counted on the voters: %v, want 1 each", changes)
	}

	// Strangers: a certificate from another CA fails the handshake; a
	// certificate of this CA naming a non-voter is refused too.
	foreign := filepath.Join(t.TempDir(), "foreign")
	issue(t, foreign, "n1", "n3")
	for _, who := range []struct{ dir, id string }{{foreign, "n3"}, {foreign, "n1"}, {g.certs, "router"}} {
		ident, err := secure.Load(who.dir, who.id)
		if err != nil {
			t.Fatal(err)
		}
		before := testutil.ToFloat64(g.cs["n2"].met.rejected)
		cfg := ident.ClientTLS("n2")
		if who.dir == foreign {
			cfg.InsecureSkipVerify = true // the stranger trusts anything; the server must not
		}
		conn, err := tls.Dial("tcp", g.cs["n2"].Addr(), cfg)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = conn.Write([]byte{rpcForward})
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Fatalf("%s of %s: connection served", who.id, who.dir)
		}
		deadline := time.Now().Add(5 * time.Second)
		for testutil.ToFloat64(g.cs["n2"].met.rejected) == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if testutil.ToFloat64(g.cs["n2"].met.rejected) == before {
			t.Fatalf("%s of %s: no rejection counted", who.id, who.dir)
		}
	}

	// Kill the leader: the other two elect a new one, with the map intact.
	// It snapshots first, so its restart below restores the map from the
	// snapshot and then replays the entries after it. The leader may be
	// handing its leadership to the node a failover would promote
	// (Coordinator.placeLeadership) just then: ask the leader after it.
	var old string
	for try := 0; ; try++ {
		old = g.leader(5*time.Second, "")
		err := g.cs[old].raft.Snapshot().Error()
		if err == nil {
			break
		}
		if !errors.Is(err, raft.ErrLeadershipTransferInProgress) || try == 50 {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	g.stop(old)
	var rest *Coordinator
	for _, c := range g.cs {
		rest = c
	}
	newLeader := g.leader(10*time.Second, old)
	if newLeader == old {
		t.Fatal("no new leader")
	}
	got := g.cs[newLeader].Map()
	if got.Primary != "n2" || got.Epoch != 2 || len(got.History) != 1 {
		t.Fatalf("map on the new leader %s: %+v", newLeader, got)
	}
	// The group still takes requests from any survivor: a promote of n1
	// waits for n2's lease (taken once above, never renewed) to lapse.
	if err := rest.Promote(ctx, "n1", 2); err != nil {
		t.Fatal(err)
	}
	want := until(t, g.cs[newLeader], 10*time.Second, "promote applied", func(m Map) bool {
		return m.Primary == "n1" && m.Epoch == 3 && m.History[len(m.History)-1].Reason == "promote"
	})

	// The old leader comes back from its directory and catches up.
	g.start(old)
	back := until(t, g.cs[old], 10*time.Second, "rejoined map", func(m Map) bool { return m.Index >= want.Index && m.Epoch == 3 })
	if lead := g.cs[newLeader].Map(); !reflect.DeepEqual(back, lead) {
		t.Fatalf("restarted voter's map %+v\nleader's %+v", back, lead)
	}
}

// TestNonVoter: a single-master node past the first 3 voters joins as a
// Raft non-voter: it gets the map, its reports reach the leader, it can
// be chosen as the new primary, and it does not count toward the quorum.
func TestNonVoter(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() { noLeaks(t, base) })
	root := t.TempDir()
	g := &group{t: t, certs: filepath.Join(root, "certs"), dirs: map[string]string{},
		regs: map[string]*prometheus.Registry{}, cs: map[string]*Coordinator{}}
	issue(t, g.certs, "n1", "n2", "n3", "n4")
	addrs := freeAddrs(t, 4)
	g.voters = []Member{{ID: "n1", RaftAddr: addrs[0]}, {ID: "n2", RaftAddr: addrs[1]}, {ID: "n3", RaftAddr: addrs[2]}}
	g.nonv = []Member{{ID: "n4", RaftAddr: addrs[3]}}
	for _, v := range append(g.voters, g.nonv...) {
		g.dirs[v.ID] = filepath.Join(root, v.ID)
	}
	defer func() {
		for id := range g.cs {
			g.stop(id)
		}
	}()
	for _, v := range append(g.voters, g.nonv...) {
		g.start(v.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.leader(10*time.Second, "")
	n4 := g.cs["n4"]
	until(t, n4, 15*time.Second, "map on the non-voter", func(m Map) bool {
		return m.Initialized && m.Primary == "n1" && len(m.Members) == 4 && m.Members[3].Role == RoleStandby
	})
	if _, err := g.cs["n1"].AcquireLease(ctx, 1, 7); err != nil {
		t.Fatal(err)
	}
	if err := n4.ReportAck(ctx, 1, 7, "2-safe-received"); err != nil {
		t.Fatalf("report from the non-voter: %v", err)
	}
	st := g.cs["n1"].Status()
	voters := 0
	for _, m := range st.Members {
		if m.Voter {
			voters++
		}
		if m.ID == "n4" && m.Voter {
			t.Fatalf("n4 votes: %+v", st.Members)
		}
	}
	if voters != 3 {
		t.Fatalf("%d voters, want 3: %+v", voters, st.Members)
	}
	// The primary stops renewing: n4, the only standby that reported,
	// becomes the primary; the voters n2 and n3 are the quorum.
	g.stop("n1")
	m := until(t, n4, 15*time.Second, "failover to the non-voter", func(m Map) bool { return m.Primary == "n4" })
	if m.Epoch != 2 {
		t.Fatalf("map %+v", m)
	}
	if _, err := n4.AcquireLease(ctx, 2, 7); err != nil {
		t.Fatalf("lease for the non-voter primary: %v", err)
	}
}

// TestPreferLeader: with PreferLeader (multi-master's witness) the group's
// leadership goes to that voter once it runs, leaves it when it stops, and
// comes back to it when it returns; certifications are decided throughout.
func TestPreferLeader(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() { noLeaks(t, base) })
	g := pairGroup(t)
	g.prefer = "w"
	g.slow = true
	g.start("n1")
	g.start("n2")
	first := g.leader(15*time.Second, "")
	if first == "w" {
		t.Fatalf("leader %s before the witness started", first)
	}
	certify := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, id := range []string{"n1", "n2"} {
			d, err := g.cs[id].Certify(ctx, certifier.Request{ID: what + "-" + id, Keys: []certifier.Key{{Table: "t", PK: what + id}}, Writeset: []byte("x")})
			if err != nil || !d.Committed {
				t.Fatalf("%s: certify from %s: %+v %v", what, id, d, err)
			}
		}
	}
	certify("before")
	g.start("w")
	waitLeader := func(want string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			if c := g.cs[want]; c != nil && c.Status().State == "Leader" {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		l, _ := g.cs["n1"].Leader()
		t.Fatalf("%s does not lead within %v (leader: %q)", want, within, l)
	}
	waitLeader("w", 20*time.Second)
	certify("witness-leads")
	g.stop("w")
	if l := g.leader(15*time.Second, "w"); l == "w" {
		t.Fatalf("leader %s", l)
	}
	certify("witness-down")
	g.start("w")
	waitLeader("w", 40*time.Second)
	certify("witness-back")
}
