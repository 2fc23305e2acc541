package e2e

// The single-master design on the physical engine: a primary and two
// replicas of managed PostgreSQL under `tandem up`, PostgreSQL's streaming
// replication between them, the router routing each transaction with
// read consistency by WAL positions (router/lsn.go).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// upPhysSM starts a single-master cluster of n managed PostgreSQL nodes on
// the physical engine: 2-safe-received (remote_write: a replica may not
// have replayed what it acknowledged), ack = one, automatic failover (every
// node votes; lease 2 s, grace 1 s: with 1 s / 500 ms a Raft election on
// the loaded machine made the primary fence itself mid-test now and then,
// the cost of a lapse physical/DESIGN.md describes). lines[id] are more of node id's fields (lines["router"]: the
// router's, lines["replication"]: the replication section's), settings[id]
// more of its server's settings.
func upPhysSM(t *testing.T, n int, lines, settings map[string]string) *smCluster {
	t.Helper()
	havePostgres(t)
	dir := t.TempDir()
	s := &smCluster{t: t, dir: dir, nodes: map[string]string{}, admin: map[string]string{}}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster = \"physsm\"\ndesign = \"single-master\"\nrun_dir = %q\n", filepath.Join(dir, "run"))
	// The defaults, but for the keys lines["replication"] sets.
	b.WriteString("[replication]\n")
	for _, kv := range [][2]string{{"engine", "physical"}, {"safeness", "2-safe-received"}, {"ack", "one"}, {"failover", "automatic"}, {"lease", "2s"}, {"lease_grace", "1s"}, {"ack_timeout", "2s"}} {
		if !regexp(`(?m)^\s*` + kv[0] + `\s*=`).MatchString(lines["replication"]) {
			fmt.Fprintf(&b, "%s = %q\n", kv[0], kv[1])
		}
	}
	b.WriteString(lines["replication"])
	s.reads = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s.radmin = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	fmt.Fprintf(&b, "[router]\nlisten = \"127.0.0.1:%d\"\nread_listen = %q\nmetrics = %q\nhealth_interval = \"100ms\"\n", freePort(t), s.reads, s.radmin)
	b.WriteString(lines["router"])
	b.WriteString("[[users]]\nname = \"tandem\"\npassword = \"secret\"\n")
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("n%d", i)
		s.ids = append(s.ids, id)
		s.nodes[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		s.admin[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		fmt.Fprintf(&b, "[[nodes]]\nid = %q\nlisten = %q\nmetrics = %q\nrepl_listen = \"127.0.0.1:%d\"\nraft_listen = \"127.0.0.1:%d\"\nbackend = \"postgres\"\n",
			id, s.nodes[id], s.admin[id], freePort(t), freePort(t))
		b.WriteString(lines[id])
		if !strings.Contains(lines[id], "dsn =") { // an external server's settings are its operator's
			fmt.Fprintf(&b, "[nodes.postgres]\nsettings = { fsync = \"off\", max_connections = \"60\"%s }\n", settings[id])
		}
	}
	file := filepath.Join(dir, "physsm.toml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Cluster = &Cluster{RunDir: filepath.Join(dir, "run")}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("PHYSSM_LOGS") != "" {
			for _, id := range s.ids {
				l, _ := os.ReadFile(filepath.Join(s.RunDir, "logs", id+".log"))
				l = []byte(withoutRaft(string(l)))
				p, _ := os.ReadFile(filepath.Join(s.RunDir, id, "postgres.log"))
				t.Logf("%s node log (tail):\n%s\n%s server log (tail):\n%s", id, tailText(string(l), 60), id, tailText(string(p), 15))
			}
			r, _ := os.ReadFile(filepath.Join(s.RunDir, "logs", "router.log"))
			t.Logf("router log (tail):\n%s", tailText(string(r), 40))
		}
	})
	s.Cluster = upFile(t, dir, file, filepath.Join(dir, "run"))
	return s
}

// physStatusOf reads node id's /status.
func (s *smCluster) physStatusOf(id string) (physStatus, error) {
	var st physStatus
	err := getStatusJSON("http://"+s.admin[id]+"/status", &st)
	if err == nil && st.Physical == nil {
		err = errors.New("no physical section")
	}
	return st, err
}

// waitReplicasStreaming waits until primary reports every one of
// replicas streaming.
func (s *smCluster) waitReplicasStreaming(primary string, replicas ...string) {
	s.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err := s.physStatusOf(primary)
		streaming := map[string]bool{}
		if err == nil {
			for _, r := range st.Physical.Replicas {
				streaming[r.Node] = r.State == "streaming"
			}
		}
		all := err == nil
		for _, id := range replicas {
			all = all && streaming[id]
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s does not report %v streaming within 90 s: %+v (err %v)", primary, replicas, st.Physical, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// settledPair waits until one of a and b is the primary and the other
// streams from it, and returns them (primary first).
func (s *smCluster) settledPair(within time.Duration, a, b string) (string, string) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for {
		for _, p := range [][2]string{{a, b}, {b, a}} {
			st, err := s.physStatusOf(p[0])
			if err != nil || st.Physical.Role != "primary" {
				continue
			}
			last = fmt.Sprintf("%s is the primary of epoch %d, its streams: %+v", p[0], st.Physical.Epoch, st.Physical.Replicas)
			for _, r := range st.Physical.Replicas {
				if r.Node == p[1] && r.State == "streaming" {
					return p[0], p[1]
				}
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("neither of %s and %s became the primary with the other streaming from it within %v (last: %s)", a, b, within, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// rywResult counts write-then-read pairs.
type rywResult struct {
	pairs, stale, onReplica, errs atomic.Int64
}

// writeThenRead runs sessions sessions of pairs pairs each through dsn:
// an autocommit INSERT (the primary), then at once a SELECT of that row
// (routed to a replica by the session's read consistency, cons). A pair
// is stale when the read does not see the row its own session committed.
// Each session runs setup first.
func writeThenRead(t *testing.T, dsn, cons string, sessions, pairs int, base int64, setup ...string) *rywResult {
	t.Helper()
	res := &rywResult{}
	var wg sync.WaitGroup
	for w := 0; w < sessions; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Errorf("session %d: %v", w, err)
				return
			}
			defer c.Close(context.Background())
			for _, q := range append([]string{"SET tandem.read_consistency = " + cons}, setup...) {
				if _, err := c.Exec(ctx, q); err != nil {
					t.Errorf("session %d: %s: %v", w, q, err)
					return
				}
			}
			for i := 0; i < pairs; i++ {
				id := base + int64(w)*100_000 + int64(i)
				if _, err := c.Exec(ctx, "INSERT INTO ryw VALUES ($1, $2)", id, w); err != nil {
					res.errs.Add(1)
					t.Errorf("session %d: insert %d: %v", w, id, err)
					return
				}
				var n int
				var replica bool
				if err := c.QueryRow(ctx, "SELECT count(*), pg_is_in_recovery() FROM ryw WHERE id = $1", id).Scan(&n, &replica); err != nil {
					res.errs.Add(1)
					t.Errorf("session %d: read %d: %v", w, id, err)
					return
				}
				res.pairs.Add(1)
				if n != 1 {
					res.stale.Add(1)
				}
				if replica {
					res.onReplica.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	return res
}

// TestPhysicalSingleMaster: a primary and two replicas on the physical
// engine at 2-safe-received (remote_write), n2 replaying 300 ms late
// (recovery_min_apply_delay: a replica that lags, as a loaded one does)
// and the only one in read rotation, writers going on in the background.
//
//   - read-your-writes: write-then-read pairs on 4 sessions through the
//     router at read_consistency = session: 0 stale, and most reads ran on
//     the replica (not sent to the primary); at eventual the same pairs
//     do see stale reads (so the test can fail); at strong a read sees
//     what another session committed just before;
//   - failover: SIGKILL of the primary's node (its server dies with it):
//     the coordinator promotes a replica, the other follows it (pg_rewind
//     when it streamed past the fork), writes go on through the router, and
//     every acknowledged commit is on both survivors.
func TestPhysicalSingleMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	// Reads go to the replicas (read_weight 0 on the primary), round
	// robin: n2 replays 300 ms late, n3 at once, so a read after a write
	// often meets a replica that lacks it, and a session whose reads
	// went from n3 to n2 would see time go back. cluster_name says which
	// server ran a read.
	s := upPhysSM(t, 3, map[string]string{"n1": "read_weight = 0\n", "router": "policy = \"round-robin\"\n"},
		map[string]string{"n1": `, cluster_name = "'n1'"`, "n2": `, recovery_min_apply_delay = "'300ms'", cluster_name = "'n2'"`, "n3": `, cluster_name = "'n3'"`})
	s.waitReplicasStreaming("n1", "n2", "n3")
	// tandem status: each replica's stream (ack = one: FIRST 1 (n2, n3),
	// n2 synchronous, n3 the potential one) and its slot on the primary.
	out, err := s.tandem("status")
	if err != nil {
		t.Fatalf("tandem status: %v\n%s", err, out)
	}
	for _, re := range []string{`(?m)^n2\s+streaming\s+sync\s`, `(?m)^n3\s+streaming\s+potential\s`, `(?m)^n1\s+tandem_n2\s+true\s`, `(?m)^n1\s+tandem_n3\s+true\s`} {
		if !regexp(re).MatchString(out) {
			t.Fatalf("tandem status lacks %s:\n%s", re, out)
		}
	}
	ctx := context.Background()
	c := connect(t, s.DSN)
	for _, q := range []string{"CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT)", "CREATE TABLE ryw (id bigint PRIMARY KEY, session int)"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	c.Close(ctx)

	// Write load all along (and the commits counted at the failover).
	rw := &retryingWriters{}
	wctx, stopWriters := context.WithCancel(ctx)
	wdone := make(chan struct{})
	go func() { rw.run(wctx, s.DSN, 2); close(wdone) }()
	defer func() { stopWriters(); <-wdone }()
	for rw.count.Load() < 50 {
		time.Sleep(20 * time.Millisecond)
	}

	t.Run("session", func(t *testing.T) {
		r := writeThenRead(t, s.DSN, "session", 4, 30, 1_000_000)
		t.Logf("session: %d pairs, %d stale, %d read on a replica", r.pairs.Load(), r.stale.Load(), r.onReplica.Load())
		if r.pairs.Load() != 120 {
			t.Fatalf("%d of 120 pairs ran", r.pairs.Load())
		}
		if r.stale.Load() != 0 {
			t.Errorf("read_consistency = session: %d of %d reads did not see their own session's commit", r.stale.Load(), r.pairs.Load())
		}
		// The reads must have gone to the replicas (the primary's read
		// weight is 0; it runs a read only when a replica cannot catch
		// up within read_wait, 1 s, which n2's 300 ms delay is not).
		if r.onReplica.Load() < r.pairs.Load()*3/4 {
			t.Errorf("only %d of %d reads ran on a replica", r.onReplica.Load(), r.pairs.Load())
		}
	})
	t.Run("session/synchronous_commit=off", func(t *testing.T) {
		// A commit made with synchronous_commit = off returns before it
		// is flushed: the router must wait for the primary's insert
		// position, not its flush position (router/lsn.go), else the
		// 300 ms-late replica serves reads that miss it.
		r := writeThenRead(t, s.DSN, "session", 4, 30, 5_000_000, "SET synchronous_commit = off")
		t.Logf("session, synchronous_commit off: %d pairs, %d stale, %d read on a replica", r.pairs.Load(), r.stale.Load(), r.onReplica.Load())
		if r.pairs.Load() != 120 || r.stale.Load() != 0 || r.onReplica.Load() < r.pairs.Load()*3/4 {
			t.Errorf("read_consistency = session, synchronous_commit = off: %d of %d pairs stale, %d on a replica (want 120 pairs, 0 stale, most on a replica)", r.stale.Load(), r.pairs.Load(), r.onReplica.Load())
		}
	})
	t.Run("eventual", func(t *testing.T) {
		r := writeThenRead(t, s.DSN, "eventual", 4, 30, 2_000_000)
		t.Logf("eventual: %d pairs, %d stale, %d read on a replica", r.pairs.Load(), r.stale.Load(), r.onReplica.Load())
		if r.stale.Load() == 0 {
			t.Errorf("read_consistency = eventual: no stale read in %d pairs, with n2 replaying 300 ms late: the session test above proves nothing", r.pairs.Load())
		}
	})
	t.Run("strong", func(t *testing.T) {
		// A commit acknowledged to one session is seen by another's
		// strong read (the primary's /position, then the replica waits).
		w, r := connect(t, s.DSN), connect(t, s.DSN)
		if _, err := r.Exec(ctx, "SET tandem.read_consistency = strong"); err != nil {
			t.Fatal(err)
		}
		stale, replica := 0, 0
		for i := int64(0); i < 20; i++ {
			id := 4_000_000 + i
			if _, err := w.Exec(ctx, "INSERT INTO ryw VALUES ($1, 9)", id); err != nil {
				t.Fatal(err)
			}
			var n int
			var rep bool
			if err := r.QueryRow(ctx, "SELECT count(*), pg_is_in_recovery() FROM ryw WHERE id = $1", id).Scan(&n, &rep); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				stale++
			}
			if rep {
				replica++
			}
		}
		t.Logf("strong: 20 reads of another session's commit, %d stale, %d on the replica", stale, replica)
		if stale != 0 || replica < 15 {
			t.Errorf("read_consistency = strong: %d of 20 reads missed another session's acknowledged commit, %d ran on the replica (want 0 stale, most on it)", stale, replica)
		}
	})
	t.Run("new-session", func(t *testing.T) {
		// A new session at session consistency reads a commit another
		// session had acknowledged before it connected (pgbench -S after
		// pgbench -i): its first read on a replica waits for the
		// primary's position, as a read after its own write does.
		w := connect(t, s.DSN)
		stale, replica := 0, 0
		for i := int64(0); i < 20; i++ {
			id := 6_000_000 + i
			if _, err := w.Exec(ctx, "INSERT INTO ryw VALUES ($1, 10)", id); err != nil {
				t.Fatal(err)
			}
			r, err := pgx.Connect(ctx, s.DSN)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			var rep bool
			err = r.QueryRow(ctx, "SELECT count(*), pg_is_in_recovery() FROM ryw WHERE id = $1", id).Scan(&n, &rep)
			r.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				stale++
			}
			if rep {
				replica++
			}
		}
		t.Logf("new sessions: 20 first reads of another session's commit, %d stale, %d on a replica", stale, replica)
		if stale != 0 || replica < 15 {
			t.Errorf("read_consistency = session, a new session's first read: %d of 20 missed a commit acknowledged before it connected, %d ran on a replica (want 0 stale, most on one)", stale, replica)
		}
	})
	t.Run("monotonic", func(t *testing.T) { monotonicReads(t, s) })
	if t.Failed() {
		return
	}

	t.Run("failover", func(t *testing.T) {
		var n1 int
		for _, p := range s.Procs() {
			if p.Name == "n1" {
				n1 = p.PID
			}
		}
		if n1 == 0 {
			t.Fatal("no n1 process")
		}
		for n := rw.count.Load(); rw.count.Load() < n+100; {
			time.Sleep(20 * time.Millisecond)
		}
		rw.killedAt.Store(time.Now().UnixNano())
		if err := syscall.Kill(n1, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var primary, other string
		for deadline := time.Now().Add(30 * time.Second); primary == ""; time.Sleep(50 * time.Millisecond) {
			for _, id := range []string{"n2", "n3"} {
				if st, err := s.physStatusOf(id); err == nil && st.Physical.Role == "primary" && st.Physical.Epoch > 1 {
					primary = id
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("no replica was promoted within 30 s of the SIGKILL")
			}
		}
		promotedAfter := time.Since(time.Unix(0, rw.killedAt.Load()))
		other = map[string]string{"n2": "n3", "n3": "n2"}[primary]
		for back := rw.count.Load(); rw.count.Load() < back+100; time.Sleep(50 * time.Millisecond) {
			if time.Since(time.Unix(0, rw.killedAt.Load())) > 60*time.Second {
				t.Fatal("writes did not go on through the router on the new primary")
			}
		}
		stopWriters()
		<-wdone
		rw.mu.Lock()
		acked := append([]int64(nil), rw.acked...)
		rw.mu.Unlock()
		t.Logf("%s promoted (seen %v after the SIGKILL); first commit %v after the SIGKILL; %d acknowledged commits, %d failed statements",
			primary, promotedAfter.Round(time.Millisecond), time.Duration(rw.firstBack.Load()-rw.killedAt.Load()).Round(time.Millisecond), len(acked), rw.errors.Load())
		// The other replica streams from the new primary. (On a loaded
		// machine a Raft election longer than the lease may make the
		// new primary lapse and the other replica take over in turn:
		// whichever is the primary then, the other must follow it.)
		primary, other = s.settledPair(90*time.Second, "n2", "n3")
		for _, id := range []string{primary, other} {
			deadline := time.Now().Add(30 * time.Second)
			for {
				have, err := idsErr(s.dsn(s.nodes[id]))
				missing := 0
				for _, a := range acked {
					if !have[a] {
						missing++
					}
				}
				if err == nil && missing == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s lacks %d of %d acknowledged commits (err %v)", id, missing, len(acked), err)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		// And read-your-writes holds through the new primary's replica.
		r := writeThenRead(t, s.DSN, "session", 2, 20, 3_000_000)
		if r.stale.Load() != 0 || r.pairs.Load() != 40 {
			t.Errorf("after the failover: %d of %d pairs stale (want 40 pairs, 0 stale)", r.stale.Load(), r.pairs.Load())
		}
	})
}

// withoutRaft drops the Raft library's lines from a node's log.
func withoutRaft(log string) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "from=raft") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// monotonicReads: another session increments a counter all along; one
// session reads it again and again through the router. At session
// consistency the counter never goes back, across replicas too: the
// session's reads stay on one replica (n3), and when that one is drained
// they move to n2, 300 ms behind it, only once n2 has what they saw. At eventual the same reads, balanced round robin over n2 and
// n3, do see it go back (the control: without it the session check
// proves nothing).
func monotonicReads(t *testing.T, s *smCluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	w := connect(t, s.DSN)
	defer w.Close(ctx)
	for _, q := range []string{"CREATE TABLE mono (id int PRIMARY KEY, v bigint)", "INSERT INTO mono VALUES (1, 0)"} {
		if _, err := w.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // n2 replays 300 ms late: the table must be there for eventual reads
	ictx, stop := context.WithCancel(ctx)
	idone := make(chan error, 1)
	go func() {
		for ictx.Err() == nil {
			if _, err := w.Exec(ictx, "UPDATE mono SET v = v + 1 WHERE id = 1"); err != nil && ictx.Err() == nil {
				idone <- err
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		idone <- nil
	}()
	defer func() {
		stop()
		if err := <-idone; err != nil {
			t.Errorf("incrementer: %v", err)
		}
	}()
	// reads runs n reads on c; drain, when not nil, is called once after
	// half of them with the node the last read ran on.
	reads := func(c *pgx.Conn, n int, drain func(node string)) (back int, on map[string]int) {
		on = map[string]int{}
		var last int64 = -1
		for i := 0; i < n; i++ {
			var v int64
			var node string
			if err := c.QueryRow(ctx, "SELECT v, current_setting('cluster_name') FROM mono WHERE id = 1").Scan(&v, &node); err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			on[node]++
			if v < last {
				back++
			}
			last = max(last, v)
			if drain != nil && i == n/2 {
				drain(node)
			}
			time.Sleep(3 * time.Millisecond)
		}
		return back, on
	}

	ev := connect(t, s.DSN)
	defer ev.Close(ctx)
	if _, err := ev.Exec(ctx, "SET tandem.read_consistency = eventual"); err != nil {
		t.Fatal(err)
	}
	back, on := reads(ev, 120, nil)
	t.Logf("eventual: 120 reads, the counter went back %d times, reads per server %v", back, on)
	if back == 0 || on["n2"] == 0 || on["n3"] == 0 {
		t.Fatalf("read_consistency = eventual: the counter went back %d times over reads on %v; want reads on n2 and n3 and some going back (else the session check below proves nothing)", back, on)
	}

	// At session: n2 drained, so the session's reads start on n3 (the
	// one ahead) and stay there; halfway n3 is drained and n2 back, so
	// they move to the replica 300 ms behind what they saw.
	drain := func(cmd, node string) {
		if out, err := s.tandem(cmd, node); err != nil {
			t.Fatalf("tandem %s %s: %v\n%s", cmd, node, err, out)
		}
	}
	drain("drain", "n2")
	time.Sleep(300 * time.Millisecond) // the router's view (health_interval 100 ms)
	sc := connect(t, s.DSN)            // session: the default
	defer sc.Close(ctx)
	back, on = reads(sc, 120, func(node string) {
		if node != "n3" {
			t.Errorf("read_consistency = session: with n2 drained the session's reads ran on %s, want n3", node)
		}
		// At once: n2, 300 ms behind, must not have what the last
		// read on n3 saw when the next read goes there (tandem drain
		// updates the router's view before it returns).
		drain("undrain", "n2")
		drain("drain", "n3")
	})
	drain("undrain", "n3")
	t.Logf("session: 120 reads (on n3, then n3 drained and n2 undrained after 60), the counter went back %d times, reads per server %v", back, on)
	if back != 0 {
		t.Errorf("read_consistency = session: the counter went back %d times in one session's reads (%v)", back, on)
	}
	if on["n2"] < 50 || on["n3"] < 50 {
		t.Errorf("read_consistency = session: reads per server %v; want about 60 on n3, then 60 on n2", on)
	}
}
