package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/certifier"
	"github.com/tandemdb/tandem/secure"
	"github.com/tandemdb/tandem/writeset"
)

func certKey(table string, pk ...int64) certifier.Key {
	vs := make([]writeset.Value, len(pk))
	for i, v := range pk {
		vs[i] = writeset.Int(v)
	}
	_, b, _ := writeset.SplitKey(writeset.RowKey(table, vs))
	return certifier.Key{Table: table, PK: b}
}

// certGroup starts three voters n1, n2, n3 on loopback over mutual TLS.
func certGroup(t *testing.T) *group {
	t.Helper()
	root := t.TempDir()
	g := &group{t: t, certs: filepath.Join(root, "certs"), dirs: map[string]string{},
		regs: map[string]*prometheus.Registry{}, cs: map[string]*Coordinator{}}
	issue(t, g.certs, "n1", "n2", "n3")
	addrs := freeAddrs(t, 3)
	g.voters = []Member{{ID: "n1", RaftAddr: addrs[0]}, {ID: "n2", RaftAddr: addrs[1]}, {ID: "n3", RaftAddr: addrs[2]}}
	for _, v := range g.voters {
		g.dirs[v.ID] = filepath.Join(root, v.ID)
	}
	t.Cleanup(func() {
		for id := range g.cs {
			g.stop(id)
		}
	})
	for _, v := range g.voters {
		g.start(v.ID)
	}
	g.leader(10*time.Second, "")
	return g
}

// logOf is a member's certified log: GSN -> request id, for GSNs 1..last.
func logOf(t *testing.T, c *Coordinator, last uint64) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitCertified(ctx, last); err != nil {
		t.Fatalf("%s: GSN %d not certified here: %v (status %+v)", c.cfg.ID, last, err, c.CertStatus())
	}
	es, err := c.CommittedSince(0, 0)
	if err != nil {
		t.Fatalf("%s: %v", c.cfg.ID, err)
	}
	var ids []string
	for i, e := range es {
		if e.GSN != uint64(i+1) {
			t.Fatalf("%s: entry %d has GSN %d", c.cfg.ID, i, e.GSN)
		}
		if string(e.Writeset) != "ws:"+e.ID {
			t.Fatalf("%s: GSN %d carries %q", c.cfg.ID, e.GSN, e.Writeset)
		}
		ids = append(ids, e.ID)
	}
	return ids
}

// TestCertifyGroup: three members certify concurrently, each round a set of
// three requests on one row from one snapshot, plus one private row each.
// Exactly one of each conflicting set commits and the others abort naming
// the row; every private request commits; the GSNs are gapless and every
// member holds the same log; the origin is the requester's certificate.
func TestCertifyGroup(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() { noLeaks(t, base) })
	g := certGroup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const rounds = 40
	type result struct {
		id    string
		round int
		own   bool
		d     certifier.Decision
		err   error
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	for _, id := range []string{"n1", "n2", "n3"} {
		c := g.cs[id]
		for r := 0; r < rounds; r++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				rid := fmt.Sprintf("%s-row-%d", id, r)
				d, err := c.Certify(ctx, certifier.Request{ID: rid, Origin: "forged", Snapshot: 0,
					Keys: []certifier.Key{certKey("counter", int64(r))}, Writeset: []byte("ws:" + rid)})
				mu.Lock()
				results = append(results, result{id: rid, round: r, d: d, err: err})
				mu.Unlock()
			}()
			go func() {
				defer wg.Done()
				rid := fmt.Sprintf("%s-own-%d", id, r)
				d, err := c.Certify(ctx, certifier.Request{ID: rid, Snapshot: 0,
					Keys: []certifier.Key{certKey("private_"+id, int64(r))}, Writeset: []byte("ws:" + rid)})
				mu.Lock()
				results = append(results, result{id: rid, round: r, own: true, d: d, err: err})
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	winners := map[int][]string{}
	gsns := map[uint64]string{}
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("%s: %v", r.id, r.err)
		}
		if r.d.ID != r.id {
			t.Fatalf("%s: decision for %s", r.id, r.d.ID)
		}
		if r.d.Committed {
			if other, dup := gsns[r.d.GSN]; dup {
				t.Fatalf("GSN %d given to %s and %s", r.d.GSN, other, r.id)
			}
			gsns[r.d.GSN] = r.id
			if !r.own {
				winners[r.round] = append(winners[r.round], r.id)
			}
			continue
		}
		if r.own {
			t.Fatalf("%s aborted without a conflict: %v", r.id, r.d.Err())
		}
		if err := r.d.Err(); !errors.Is(err, certifier.ErrConflict) || r.d.Conflict.Key != certKey("counter", int64(r.round)) {
			t.Fatalf("%s: abort %v", r.id, err)
		}
	}
	for r := 0; r < rounds; r++ {
		if len(winners[r]) != 1 {
			t.Fatalf("round %d: %d commits (%v), want exactly 1", r, len(winners[r]), winners[r])
		}
	}
	n := uint64(len(gsns))
	if n != 4*rounds {
		t.Fatalf("%d commits, want %d", n, 4*rounds)
	}
	for g := uint64(1); g <= n; g++ {
		if gsns[g] == "" {
			t.Fatalf("GSN %d missing: GSNs are not gapless", g)
		}
	}
	ref := logOf(t, g.cs["n1"], n)
	for gsn, id := range gsns {
		if ref[gsn-1] != id {
			t.Fatalf("GSN %d is %s in the log, %s was told", gsn, ref[gsn-1], id)
		}
	}
	for _, id := range []string{"n2", "n3"} {
		if got := logOf(t, g.cs[id], n); fmt.Sprint(got) != fmt.Sprint(ref) {
			t.Fatalf("%s's log differs from n1's:\n%v\n%v", id, got, ref)
		}
	}
	// The metrics of a follower's copy count what it applied. The last
	// round's aborts may be Raft entries after the last commit, which a
	// follower applies once the leader's next append tells it they are
	// committed: wait for them a moment.
	gather := func() map[string]float64 {
		mfs, err := g.regs["n2"].Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				name := mf.GetName()
				for _, l := range m.GetLabel() {
					name += "/" + l.GetValue()
				}
				got[name] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
		return got
	}
	metricsOK := func(got map[string]float64) bool {
		return got["tandem_coord_cert_decisions_total/commit"] == float64(n) && got["tandem_coord_cert_decisions_total/conflict"] == 2*rounds &&
			got["tandem_coord_cert_last_gsn"] == float64(n) && got["tandem_coord_cert_window_writesets"] == float64(n)
	}
	got := gather()
	for deadline := time.Now().Add(5 * time.Second); !metricsOK(got) && time.Now().Before(deadline); got = gather() {
		time.Sleep(20 * time.Millisecond)
	}
	if !metricsOK(got) {
		t.Fatalf("metrics on n2: %v", got)
	}
	// A follower of n3's log from GSN 5 gets 6..n in order, then waits; the
	// next certification reaches it.
	fctx, fcancel := context.WithCancel(ctx)
	feed, ferr := g.cs["n3"].FollowCertified(fctx, 5)
	for want := uint64(6); want <= n; want++ {
		select {
		case e := <-feed:
			if e == nil || e.GSN != want || e.ID != ref[want-1] {
				t.Fatalf("followed %+v, want GSN %d (%s)", e, want, ref[want-1])
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("GSN %d not followed", want)
		}
	}
	// Nothing is too old with the default window: no error.
	select {
	case err := <-ferr:
		t.Fatalf("follow stopped: %v", err)
	default:
	}
	es, _ := g.cs["n2"].CommittedSince(0, 0)
	for _, e := range es {
		if want := e.ID[:2]; e.Origin != want {
			t.Fatalf("GSN %d: origin %q, the requester was %s", e.GSN, e.Origin, want)
		}
	}
	// A retry from its origin gets the same decision (request ids are
	// scoped to the origin, which the leader takes from the certificate).
	for _, r := range results[:10] {
		d, err := g.cs[r.id[:2]].Certify(ctx, certifier.Request{ID: r.id, Snapshot: 0, Keys: []certifier.Key{certKey("x", 1)}})
		if err != nil || d.Committed != r.d.Committed || d.GSN != r.d.GSN {
			t.Fatalf("retry of %s: %+v %v, first %+v", r.id, d, err, r.d)
		}
	}
	select {
	case e := <-feed:
		t.Fatalf("followed %+v before it was certified", e)
	case <-time.After(50 * time.Millisecond):
	}
	nd, err := g.cs["n1"].Certify(ctx, certifier.Request{ID: "n1-followed", Snapshot: n, Keys: []certifier.Key{certKey("followed", 1)}, Writeset: []byte("ws:n1-followed")})
	if err != nil || nd.GSN != n+1 {
		t.Fatalf("%+v %v", nd, err)
	}
	select {
	case e := <-feed:
		if e == nil || e.GSN != n+1 || e.ID != "n1-followed" {
			t.Fatalf("followed %+v, want GSN %d", e, n+1)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the new GSN was not followed")
	}
	fcancel()
	for range feed {
	}
	n++
	if err := g.cs["n1"].WaitCertified(ctx, n); err != nil {
		t.Fatal(err)
	}
	st := g.cs["n1"].CertStatus()
	if st.Last != n || st.Len != int(n) {
		t.Fatalf("status %+v", st)
	}
	// 240 requests at once, at most 4 batches in flight per member: they
	// left in batches, fewer entries than requests.
	if st.Entries >= uint64(len(results)) {
		t.Fatalf("%d requests in %d Raft entries: not batched", len(results), st.Entries)
	}
	t.Logf("%d requests in %d Raft entries", len(results), st.Entries)
	// Errors cross the hop as themselves.
	follower := ""
	for id, c := range g.cs {
		if c.raft.State() != raft.Leader {
			follower = id
		}
	}
	if _, err := g.cs[follower].Certify(ctx, certifier.Request{ID: "future", Snapshot: n + 5, Keys: []certifier.Key{certKey("x", 1)}}); !errors.Is(err, certifier.ErrBadRequest) {
		t.Fatalf("snapshot from the future through %s: %v", follower, err)
	}
	if _, err := g.cs[follower].Certify(ctx, certifier.Request{ID: "nokeys"}); !errors.Is(err, certifier.ErrBadRequest) {
		t.Fatalf("no keys: %v", err)
	}
	// A request the Raft log could not read back is refused before it is
	// proposed.
	huge := certifier.Request{ID: "huge", Snapshot: n, Keys: []certifier.Key{certKey("x", 1)}, Writeset: make([]byte, MaxCertifyBytes)}
	if _, err := g.cs[follower].Certify(ctx, huge); !errors.Is(err, certifier.ErrBadRequest) {
		t.Fatalf("a request of %d bytes: %v", MaxCertifyBytes, err)
	}
}

// TestCertifyLeaderLoss: two members certify in a loop (conflicting keys,
// snapshots from their own copy of the log) while the leader is closed mid
// stream; certification goes on under the new leader; every request gets a
// decision, every commit is in the log once at the GSN its requester was
// told, no aborted request is in the log, and a retry of every id returns
// its decision. The closed leader then comes back from its directory, a
// member restarts from a snapshot of its own, and both hold the same log
// and decisions.
func TestCertifyLeaderLoss(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() { noLeaks(t, base) })
	g := certGroup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	leader := g.leader(10*time.Second, "")
	var others []string
	for _, v := range g.voters {
		if v.ID != leader {
			others = append(others, v.ID)
		}
	}
	type sent struct {
		req certifier.Request
		d   certifier.Decision
	}
	var mu sync.Mutex
	var all []sent
	const perWorker = 150
	var progress sync.WaitGroup
	progress.Add(1)
	var once sync.Once
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for _, id := range others {
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := g.cs[id]
				for i := 0; i < perWorker; i++ {
					if i == perWorker/3 {
						once.Do(progress.Done)
					}
					snap := c.CertStatus().Last
					r := certifier.Request{ID: fmt.Sprintf("%s/%d/%d", id, w, i), Snapshot: snap,
						Keys: certifier.SortKeys([]certifier.Key{certKey("acct", int64((i*7+w)%11)), certKey("acct", int64((i*3+w*5)%17+11))})}
					r.Writeset = []byte("ws:" + r.ID)
					d, err := c.Certify(ctx, r)
					if errors.Is(err, certifier.ErrSnapshotTooOld) {
						errc <- fmt.Errorf("%s: too old with the default window: %v", r.ID, err)
						return
					}
					if err != nil {
						errc <- fmt.Errorf("%s: %v", r.ID, err)
						return
					}
					mu.Lock()
					all = append(all, sent{req: r, d: d})
					mu.Unlock()
				}
			}()
		}
	}
	progress.Wait()
	mu.Lock()
	atClose := len(all)
	mu.Unlock()
	t0 := time.Now()
	g.stop(leader)
	t.Logf("closing the leader took %v", time.Since(t0))
	wg.Wait()
	t.Logf("the stream ended %v after the close", time.Since(t0))
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	newLeader := g.leader(10*time.Second, leader)
	t.Logf("%d decisions; leader %s closed after %d, %s leads; requests answered by an earlier decision on %s: %d",
		len(all), leader, atClose, newLeader, newLeader, g.cs[newLeader].CertStatus().Retries)
	if atClose == 0 || atClose == len(all) {
		t.Fatalf("the leader was not closed mid-stream (%d of %d decided before)", atClose, len(all))
	}

	check := func(c *Coordinator) {
		t.Helper()
		var last uint64
		for _, s := range all {
			last = max(last, s.d.GSN)
		}
		log := logOf(t, c, last)
		if uint64(len(log)) != last {
			t.Fatalf("%s: log has %d entries, the highest GSN told is %d", c.cfg.ID, len(log), last)
		}
		inLog := map[string]int{}
		for _, id := range log {
			inLog[id]++
		}
		commits := 0
		for _, s := range all {
			switch {
			case s.d.Committed:
				commits++
				if log[s.d.GSN-1] != s.req.ID || inLog[s.req.ID] != 1 {
					t.Fatalf("%s: %s was told GSN %d; the log has %q there and the id %d times", c.cfg.ID, s.req.ID, s.d.GSN, log[s.d.GSN-1], inLog[s.req.ID])
				}
			case inLog[s.req.ID] != 0:
				t.Fatalf("%s: %s was told abort (%v) but is in the log", c.cfg.ID, s.req.ID, s.d.Err())
			}
			if d, ok := c.certDecision(s.d.Origin, s.req.ID); !ok || d.Committed != s.d.Committed || d.GSN != s.d.GSN {
				t.Fatalf("%s: remembered decision of %s: %+v %v, told %+v", c.cfg.ID, s.req.ID, d, ok, s.d)
			}
		}
		if commits != len(log) {
			t.Fatalf("%s: %d commits told, %d in the log", c.cfg.ID, commits, len(log))
		}
	}
	if len(all) != 2*3*perWorker {
		t.Fatalf("%d decisions, want %d", len(all), 2*3*perWorker)
	}
	for _, id := range others {
		check(g.cs[id])
	}
	// Retries (as after a leader change) return the earlier decisions.
	for _, s := range all[:60] {
		d, err := g.cs[s.req.ID[:2]].Certify(ctx, s.req)
		if err != nil || d.Committed != s.d.Committed || d.GSN != s.d.GSN {
			t.Fatalf("retry of %s: %+v %v, first %+v", s.req.ID, d, err, s.d)
		}
	}

	// The closed leader comes back from its directory and catches up.
	g.start(leader)
	check(g.cs[leader])

	// A member snapshots, restarts from the snapshot and the log after it,
	// and keeps every decision.
	snapper := others[1]
	if err := g.cs[snapper].raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	more := certifier.Request{ID: "after-snapshot", Snapshot: g.cs[snapper].CertStatus().Last, Keys: []certifier.Key{certKey("fresh", 1)}, Writeset: []byte("ws:after-snapshot")}
	d, err := g.cs[others[0]].Certify(ctx, more)
	if err != nil || !d.Committed {
		t.Fatalf("after the snapshot: %+v %v", d, err)
	}
	all = append(all, sent{req: more, d: d})
	g.stop(snapper)
	g.start(snapper)
	check(g.cs[snapper])
	for _, id := range []string{leader, others[0]} {
		a, b := logOf(t, g.cs[id], d.GSN), logOf(t, g.cs[snapper], d.GSN)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("logs of %s and %s differ", id, snapper)
		}
	}
}

// TestFSMSnapshotCertifier: the FSM's snapshot carries the map and the
// certifier; a snapshot written before the certifier existed (the map as
// JSON alone) restores an empty certifier.
func TestFSMSnapshotCertifier(t *testing.T) {
	f := newFSM()
	idx := uint64(0)
	put := func(r certifier.Request) certApplied {
		idx++
		a := f.Apply(&raft.Log{Index: idx, Data: encodeCertEntry(certifier.Window{Count: 3}, [][]byte{r.Encode()})}).(certBatchApplied)
		if a.err != nil || len(a.out) != 1 {
			t.Fatalf("entry %d: %+v", idx, a)
		}
		return a.out[0]
	}
	if err := apply(&f.m, Command{Op: OpInit, Members: []Member{{ID: "n1"}}, Primary: "n1", LeaseDur: time.Second}, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if a := put(certifier.Request{ID: fmt.Sprint(i), Snapshot: uint64(i), Keys: []certifier.Key{certKey("t", 1)}, Writeset: []byte{byte(i)}}); a.err != nil || a.d.GSN != uint64(i+1) {
			t.Fatalf("%d: %+v", i, a)
		}
	}
	if a := put(certifier.Request{ID: "late", Snapshot: 3, Keys: []certifier.Key{certKey("t", 1)}}); a.err != nil || a.d.Committed || a.d.Conflict.GSN != 5 {
		t.Fatalf("conflict: %+v", a)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if m, _ := g.state(); m.Primary != "n1" || !m.Initialized {
		t.Fatalf("map %+v", m)
	}
	if g.cert.s.Last() != 5 || g.cert.s.Base() != 2 {
		t.Fatalf("certifier last %d base %d", g.cert.s.Last(), g.cert.s.Base())
	}
	if d, ok := g.cert.s.Lookup("", "late"); !ok || d.Committed {
		t.Fatalf("abort not remembered: %+v %v", d, ok)
	}
	es, err := g.cert.s.CommittedSince(2, 0)
	if err != nil || len(es) != 3 || es[0].Writeset[0] != 2 {
		t.Fatalf("window %v %v", es, err)
	}
	// The map alone, as older builds wrote it.
	old := newFSM()
	mapOnly := sink.Bytes()[:bytes.Index(sink.Bytes(), []byte("TCS1"))]
	if err := old.Restore(io.NopCloser(bytes.NewReader(mapOnly))); err != nil {
		t.Fatal(err)
	}
	if m, _ := old.state(); m.Primary != "n1" || old.cert.s.Last() != 0 {
		t.Fatalf("old snapshot: map %+v certifier last %d", m, old.cert.s.Last())
	}
	// A corrupt certifier part is an error, not an empty certifier.
	bad := append(append([]byte(nil), mapOnly...), "TCS1\xff"...)
	if err := newFSM().Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, certifier.ErrCorruptSnapshot) {
		t.Fatalf("corrupt certifier: %v", err)
	}
	// Malformed entries are refused, and leave the certifier as it was.
	good := encodeCertEntry(certifier.Window{}, [][]byte{(&certifier.Request{ID: "z", Snapshot: 5, Keys: []certifier.Key{certKey("z", 1)}}).Encode()})
	for _, bad := range [][]byte{{certEntryTag, 0xff}, {certEntryTag, 0, 0, 0, 0}, good[:len(good)-1], append(append([]byte(nil), good...), 0)} {
		idx++
		if a := f.Apply(&raft.Log{Index: idx, Data: bad}).(certBatchApplied); !errors.Is(a.err, certifier.ErrBadRequest) || f.cert.s.Last() != 5 {
			t.Fatalf("malformed entry %x: %+v", bad, a)
		}
	}
	// A batch is certified in order: of two requests on one row from the
	// same snapshot the first commits and the second aborts; a request that
	// does not decode fails alone.
	r1 := certifier.Request{ID: "b1", Snapshot: 5, Keys: []certifier.Key{certKey("t", 2)}}
	r2 := certifier.Request{ID: "b2", Snapshot: 5, Keys: []certifier.Key{certKey("t", 2)}}
	idx++
	a := f.Apply(&raft.Log{Index: idx, Data: encodeCertEntry(certifier.Window{}, [][]byte{r1.Encode(), {9}, r2.Encode()})}).(certBatchApplied)
	if a.err != nil || len(a.out) != 3 || !a.out[0].d.Committed || a.out[0].d.GSN != 6 || !errors.Is(a.out[1].err, certifier.ErrBadRequest) ||
		a.out[2].d.Committed || a.out[2].d.Conflict.GSN != 6 {
		t.Fatalf("batch: %+v", a)
	}
}

// TestCertifyKillLeaderProcess: the leader is a child process and is
// SIGKILLed while four sessions of n1 certify through it; certification
// goes on under the new leader, no decision is lost or duplicated (every
// commit told is in n1's log once at its GSN, no abort is), and the killed
// voter restarts from its directory with the same log.
func TestCertifyKillLeaderProcess(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a helper process")
	}
	if runtime.GOOS != "linux" {
		t.Skip("uses Pdeathsig")
	}
	root := t.TempDir()
	certs := filepath.Join(root, "certs")
	issue(t, certs, "n1", "n2", "n3")
	addrs := freeAddrs(t, 3)
	voters := []Member{{ID: "n1", RaftAddr: addrs[0]}, {ID: "n2", RaftAddr: addrs[1]}, {ID: "n3", RaftAddr: addrs[2]}}
	children := map[string]*exec.Cmd{}
	spawn := func(id string) {
		b, _ := json.Marshal(childSpec{ID: id, Dir: filepath.Join(root, id), Certs: certs, Voters: voters})
		cmd := exec.Command(os.Args[0], "-test.run=^TestVoterProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+string(b))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[id] = cmd
	}
	kill := func(id string) {
		if cmd := children[id]; cmd != nil {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			delete(children, id)
		}
	}
	defer func() {
		for id := range children {
			kill(id)
		}
	}()
	spawn("n2")
	spawn("n3")
	ident, err := secure.Load(certs, "n1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ID: "n1", Dir: filepath.Join(root, "n1"), Voters: voters, Identity: ident, Logger: testLogger(t).With("voter", "n1")}
	timing(&cfg)
	n1, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	leaderOther := func(not string) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if id, _ := n1.Leader(); id != "" && id != not {
				return id
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no leader other than %q", not)
		return ""
	}
	leader := leaderOther("")
	if leader == "n1" {
		if err := n1.raft.LeadershipTransfer().Error(); err != nil {
			t.Fatal(err)
		}
		leader = leaderOther("n1")
	}
	type sent struct {
		req certifier.Request
		d   certifier.Decision
	}
	var mu sync.Mutex
	var all []sent
	const perSession = 150
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perSession; i++ {
				r := certifier.Request{ID: fmt.Sprintf("%d/%d", w, i), Snapshot: n1.CertStatus().Last,
					Keys: certifier.SortKeys([]certifier.Key{certKey("acct", int64((i*5+w)%13)), certKey("acct", int64((i+w*3)%7+13))})}
				r.Writeset = []byte("ws:" + r.ID)
				d, err := n1.Certify(ctx, r)
				if err != nil {
					errc <- fmt.Errorf("%s: %v", r.ID, err)
					return
				}
				mu.Lock()
				all = append(all, sent{req: r, d: d})
				mu.Unlock()
			}
		}()
	}
	// Kill the leader once a third of the requests are decided, or when
	// the sessions ended early (their errors say why) or the time ran out:
	// a loop that only counted decisions hung a CI run for 30 minutes.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		mu.Lock()
		n := len(all)
		mu.Unlock()
		if n >= perSession {
			break
		}
		select {
		case <-done:
			break wait
		case <-ctx.Done():
			break wait
		case <-tick.C:
		}
	}
	kill(leader)
	<-done
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	newLeader := leaderOther(leader)
	var last uint64
	commits := 0
	for _, s := range all {
		if s.d.Committed {
			commits++
			last = max(last, s.d.GSN)
		}
	}
	log := logOf(t, n1, last)
	inLog := map[string]int{}
	for _, id := range log {
		inLog[id]++
	}
	for _, s := range all {
		if s.d.Committed && (log[s.d.GSN-1] != s.req.ID || inLog[s.req.ID] != 1) {
			t.Fatalf("%s was told GSN %d; the log has %q there and the id %d times", s.req.ID, s.d.GSN, log[s.d.GSN-1], inLog[s.req.ID])
		}
		if !s.d.Committed && inLog[s.req.ID] != 0 {
			t.Fatalf("%s was told abort but is in the log", s.req.ID)
		}
	}
	if len(all) != 4*perSession || commits != len(log) {
		t.Fatalf("%d decisions (%d commits), %d in the log", len(all), commits, len(log))
	}
	t.Logf("%d decisions, %d commits; leader %s SIGKILLed, %s leads; %d answered by an earlier decision", len(all), commits, leader, newLeader, n1.CertStatus().Retries)
	// The killed voter restarts from its directory; with n1 and it alone
	// (the other killed) the group certifies, and n1's log is intact.
	spawn(leader)
	other := "n2"
	if leader == "n2" {
		other = "n3"
	}
	time.Sleep(2 * time.Second) // let the restarted voter catch up
	kill(other)
	d, err := n1.Certify(ctx, certifier.Request{ID: "after", Snapshot: last, Keys: []certifier.Key{certKey("fresh", 1)}, Writeset: []byte("ws:after")})
	if err != nil || !d.Committed || d.GSN != last+1 {
		t.Fatalf("with the restarted voter: %+v %v", d, err)
	}
	if got := logOf(t, n1, last); fmt.Sprint(got[:last]) != fmt.Sprint(log) {
		t.Fatal("n1's log changed")
	}
}

// FuzzCertEntry: whatever a certifier entry holds, applying it never
// panics (a panic in apply would stop the member), and it either fails as
// a whole with ErrBadRequest or answers every request it carries.
func FuzzCertEntry(f *testing.F) {
	r := certifier.Request{ID: "a", Snapshot: 0, Keys: []certifier.Key{certKey("t", 1)}, Writeset: []byte("w")}
	f.Add(encodeCertEntry(certifier.Window{Count: 2}, [][]byte{r.Encode(), r.Encode()})[1:])
	f.Add(encodeCertEntry(certifier.Window{}, [][]byte{{1, 0}})[1:])
	f.Add([]byte{0, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fsm := newFSM()
		a := fsm.Apply(&raft.Log{Index: 1, Data: append([]byte{certEntryTag}, b...)}).(certBatchApplied)
		if a.err != nil {
			if !errors.Is(a.err, certifier.ErrBadRequest) || len(a.out) != 0 {
				t.Fatalf("entry error %v with %d outcomes", a.err, len(a.out))
			}
			return
		}
		if _, reqs, err := decodeCertEntry(append([]byte{certEntryTag}, b...)); err != nil || len(reqs) != len(a.out) {
			t.Fatalf("%d outcomes for an entry that decodes to %d (%v)", len(a.out), len(reqs), err)
		}
	})
}

// TestFollowCertifiedTooOld: a reader that starts before the window is told
// it must be re-seeded; one inside it reads on from where it starts.
func TestFollowCertifiedTooOld(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &Coordinator{fsm: newFSM(), ctx: ctx}
	for i := 0; i < 6; i++ {
		r := certifier.Request{ID: fmt.Sprint(i), Snapshot: uint64(i), Keys: []certifier.Key{certKey("t", int64(i))}}
		c.fsm.Apply(&raft.Log{Index: uint64(i + 1), Data: encodeCertEntry(certifier.Window{Count: 3}, [][]byte{r.Encode()})})
	}
	feed, errc := c.FollowCertified(ctx, 2)
	if _, ok := <-feed; ok {
		t.Fatal("a reader before the window got a writeset")
	}
	if err := <-errc; !errors.Is(err, certifier.ErrSnapshotTooOld) || !strings.Contains(err.Error(), "re-seeded") {
		t.Fatalf("reader before the window: %v", err)
	}
	feed, _ = c.FollowCertified(ctx, 3)
	for want := uint64(4); want <= 6; want++ {
		if e := <-feed; e == nil || e.GSN != want {
			t.Fatalf("followed %+v, want GSN %d", e, want)
		}
	}
	cancel()
	for range feed {
	}
}
