package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// hsCluster is a hot-standby cluster file; processes are started by the
// test (tandem up, or single tandem node processes).
type hsCluster struct {
	t      *testing.T
	dir    string
	file   string
	router string
	reads  string
	nodes  map[string]string // id -> listen
	admin  map[string]string
	// witness: the witness's raft address (coordinated clusters only).
	witness string
	procs   map[string]*exec.Cmd
	exited  map[string]chan struct{} // closed when the process was reaped
	// wrap: a command a process is started under (e.g. ip netns exec NS).
	wrap map[string][]string
	// lease, grace: the cluster file's (partition tests).
	lease, grace time.Duration
	mu           sync.Mutex
}

// hsBackend is the back end the hot-standby tests run on (set per subtest).
func writeHS(t *testing.T, safeness, durability, extra string) *hsCluster {
	return writeHSOn(t, backendOf(t), safeness, durability, extra)
}

// backendOf reads the back end from the subtest name (".../sqlite/..." or
// ".../postgres/...").
func backendOf(t *testing.T) string {
	for _, part := range strings.Split(t.Name(), "/") {
		if part == "postgres" {
			return "postgres"
		}
	}
	return "sqlite"
}

func writeHSOn(t *testing.T, backend, safeness, durability, extra string) *hsCluster {
	return writeHSFile(t, backend, safeness, durability, extra, false)
}

// writeHSFile writes the cluster file; coordinated adds a witness and
// raft addresses (the coordinator; replication.failover comes in extra).
func writeHSFile(t *testing.T, backend, safeness, durability, extra string, coordinated bool) *hsCluster {
	if backend == "postgres" {
		havePostgres(t)
	}
	t.Helper()
	h := &hsCluster{t: t, dir: t.TempDir(), nodes: map[string]string{}, admin: map[string]string{}, procs: map[string]*exec.Cmd{}, exited: map[string]chan struct{}{}}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster = \"hs\"\ndesign = \"hot-standby\"\nrun_dir = %q\nlog_level = \"info\"\n", filepath.Join(h.dir, "run"))
	if !strings.Contains(extra, "ack_timeout") {
		extra += "ack_timeout = \"5s\"\n"
	}
	// These tests exercise the writeset engine (trigger capture, GSNs);
	// the physical engine has its own (physical_test.go).
	fmt.Fprintf(&b, "[replication]\nengine = \"writeset\"\nsafeness = %q\ndurability = %q\n%s\n", safeness, durability, extra)
	h.router = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	h.reads = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	fmt.Fprintf(&b, "[router]\nlisten = %q\nread_listen = %q\nhealth_interval = \"100ms\"\n", h.router, h.reads)
	b.WriteString("[[users]]\nname = \"tandem\"\npassword = \"secret\"\n")
	if coordinated {
		h.witness = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		fmt.Fprintf(&b, "[witness]\nid = \"wit\"\nraft_listen = %q\n", h.witness)
	}
	for _, id := range []string{"n1", "n2"} {
		h.nodes[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		h.admin[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		fmt.Fprintf(&b, "[[nodes]]\nid = %q\nlisten = %q\nmetrics = %q\nrepl_listen = \"127.0.0.1:%d\"\nbackend = %q\n", id, h.nodes[id], h.admin[id], freePort(t), backend)
		if coordinated {
			fmt.Fprintf(&b, "raft_listen = \"127.0.0.1:%d\"\n", freePort(t))
		}
	}
	h.file = filepath.Join(h.dir, "hs.toml")
	if err := os.WriteFile(h.file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.stopAll)
	return h
}

func (h *hsCluster) dsn(addr string) string {
	return "postgres://tandem:secret@" + addr + "/tandem?sslmode=disable"
}

// start runs one process (a node id, or "router") and waits until it serves.
func (h *hsCluster) start(name string) {
	h.t.Helper()
	args := []string{"node", "-c", h.file, "--id", name}
	addr := h.nodes[name]
	switch name {
	case "router":
		args, addr = []string{"router", "-c", h.file}, h.router
	case "witness":
		args, addr = []string{"witness", "-c", h.file}, h.witness
	}
	logf, err := os.OpenFile(filepath.Join(h.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(tandemBin, args...)
	if w := h.wrap[name]; len(w) > 0 {
		cmd = exec.Command(w[0], append(append(w[1:len(w):len(w)], tandemBin), args...)...)
	}
	cmd.Dir = h.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	logf.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	h.mu.Lock()
	h.procs[name] = cmd
	h.exited[name] = exited
	h.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(h.dir, name+".log"))
			h.t.Fatalf("%s exited at start:\n%s", name, b)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(h.dir, name+".log"))
	h.t.Fatalf("%s did not start:\n%s", name, b)
}

// kill sends SIGKILL to a process started by start and waits until it is
// reaped. A thread-group leader shows as a zombie while its other threads
// are still exiting and holding its sockets; a restart that only waited for
// that could find its probe answered by the dying process's listener (and
// its first client reset when that listener went away).
func (h *hsCluster) kill(name string) {
	h.mu.Lock()
	cmd, exited := h.procs[name], h.exited[name]
	delete(h.procs, name)
	delete(h.exited, name)
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		h.t.Errorf("%s (pid %d) not reaped 30 s after SIGKILL", name, cmd.Process.Pid)
	}
}

func (h *hsCluster) stopAll() {
	h.mu.Lock()
	names := make([]string, 0, len(h.procs))
	for n := range h.procs {
		names = append(names, n)
	}
	h.mu.Unlock()
	for _, n := range names {
		h.kill(n)
	}
	reapServers(h.t, h.dir)
}

// reapServers kills the PostgreSQL processes still working under dir after
// their nodes were SIGKILLed: a postmaster dies with its node (Pdeathsig),
// but its children notice only at their next check, and a standby's
// startup process kept writing into the data directory while the test's
// TempDir was being removed ("directory not empty").
func reapServers(t testing.TB, dir string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
			if err != nil || !strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
				continue
			}
			if comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); strings.TrimSpace(string(comm)) != "postgres" {
				continue
			}
			if st := procStateOf(pid); st == 0 || st == 'Z' {
				continue
			}
			left = append(left, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("PostgreSQL processes %v still run under %s 10 s after their nodes were killed", left, dir)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *hsCluster) tandem(args ...string) string {
	h.t.Helper()
	out, err := exec.Command(tandemBin, append(args, "-c", h.file)...).CombinedOutput()
	if err != nil {
		h.t.Fatalf("tandem %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// ids returns the ids in table t on a node.
func ids(t *testing.T, dsn string) map[int64]bool {
	t.Helper()
	out, err := idsErr(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func idsErr(dsn string) (map[int64]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SELECT id FROM t")
	if err != nil {
		return nil, err
	}
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		out[id] = true
	}
	return out, rows.Err()
}

// writers insert unique ids through dsn until stop or an error, and return
// every id whose COMMIT was acknowledged.
func writers(ctx context.Context, dsn string, n int) ([]int64, int) {
	return writersCounting(ctx, dsn, n, nil)
}

// writersCounting is writers with a live count of acknowledged commits.
func writersCounting(ctx context.Context, dsn string, n int, count *atomic.Int64) ([]int64, int) {
	var mu sync.Mutex
	var acked []int64
	var wg sync.WaitGroup
	failed := 0
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var c *pgx.Conn
			var err error
			for tries := 0; tries < 50; tries++ { // the router may still be learning roles
				if c, err = pgx.Connect(context.Background(), dsn); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				return
			}
			defer c.Close(context.Background())
			for i := 1; ctx.Err() == nil; i++ {
				id := int64(w)*10_000_000 + int64(i)
				qctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := c.Exec(qctx, "INSERT INTO t VALUES ($1, $2)", id, "w"+strconv.Itoa(w))
				cancel()
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
				if count != nil {
					count.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	return acked, failed
}

func faultTrials() int {
	if n, err := strconv.Atoi(os.Getenv("TANDEM_FAULT_TRIALS")); err == nil && n > 0 {
		return n
	}
	return 2
}

// TestFailoverSafeness: at each safeness level, SIGKILL the primary at a
// random moment under concurrent writers, promote the standby, and check
// every acknowledged commit. 2-safe levels lose nothing; 1-safe reports
// its loss. TANDEM_FAULT_TRIALS (default 2; `make test-faults`: 20) sets
// the trials per level.
func TestFailoverSafeness(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			if testing.Short() {
				t.Skip("fault test")
			}
			trials := faultTrials()
			for _, level := range []string{"1-safe", "2-safe-received", "2-safe-visible", "2-safe-durable"} {
				t.Run(level, func(t *testing.T) {
					lostTotal, ackedTotal := 0, 0
					for trial := 0; trial < trials; trial++ {
						h := writeHS(t, level, "relaxed", "")
						h.start("n1")
						h.start("n2")
						h.start("router")
						createTestTable(t, h.dsn(h.router))
						ctx, cancel := context.WithCancel(context.Background())
						done := make(chan struct{})
						var acked []int64
						var count atomic.Int64
						go func() { acked, _ = writersCounting(ctx, h.dsn(h.router), 4, &count); close(done) }()
						// SIGKILL the primary mid-stream: after a random number of
						// acknowledged commits (so every trial has some).
						target := int64(10 + rand.Intn(300))
						for wait := time.Now().Add(20 * time.Second); count.Load() < target && time.Now().Before(wait); {
							time.Sleep(2 * time.Millisecond)
						}
						h.kill("n1")
						select {
						case <-done:
						case <-time.After(30 * time.Second):
							cancel()
							t.Fatal("writers hung after the primary was killed")
						}
						cancel()
						out := h.tandem("promote", "n2")
						if strings.Contains(out, "lost: 0 GSNs") || !strings.Contains(out, "lost: unknown") {
							t.Errorf("trial %d: after a kill the old primary's last GSN is not known, so the loss is unknown; promote said: %s", trial, out)
						}
						// The first commit on the new primary, which has no standby:
						// degraded from the start, it does not wait ack_timeout (5 s).
						first := connect(t, h.dsn(h.nodes["n2"]))
						t0 := time.Now()
						if _, err := first.Exec(context.Background(), "INSERT INTO t VALUES (-1, 'first')"); err != nil {
							t.Fatalf("trial %d: first commit after the promote: %v", trial, err)
						}
						rto := time.Since(t0)
						first.Close(context.Background())
						if rto > time.Second {
							t.Errorf("trial %d: the first commit after the promote took %v at %s (ack_timeout 5 s): want < 1 s", trial, rto, level)
						}
						have := ids(t, h.dsn(h.nodes["n2"]))
						lost := 0
						for _, id := range acked {
							if !have[id] {
								lost++
							}
						}
						lostTotal += lost
						ackedTotal += len(acked)
						if level != "1-safe" && lost > 0 {
							t.Fatalf("trial %d: %d of %d acknowledged commits lost at %s\n%s", trial, lost, len(acked), level, out)
						}
						if len(acked) == 0 {
							t.Fatalf("trial %d: no commit was acknowledged before the kill", trial)
						}
						t.Logf("trial %d: %d acknowledged, %d lost, first commit after the promote %v; promote said: %s", trial, len(acked), lost, rto.Round(time.Millisecond), strings.TrimSpace(strings.ReplaceAll(out, "\n", "; ")))
						h.stopAll()
					}
					t.Logf("%s: %d trials, %d acknowledged commits, %d lost", level, trials, ackedTotal, lostTotal)
				})
			}
		})
	}
}

// TestStandbyReadsVisible: at 2-safe-visible a read at the standby right
// after an acknowledged commit sees it.
func TestStandbyReadsVisible(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			h := writeHS(t, "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			ctx := context.Background()
			p := connect(t, h.dsn(h.nodes["n1"]))
			s := connect(t, h.dsn(h.nodes["n2"]))
			if _, err := p.Exec(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT)"); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 300; i++ {
				if _, err := p.Exec(ctx, "INSERT INTO t VALUES ($1, 'x')", i); err != nil {
					t.Fatal(err)
				}
				var n int
				if err := s.QueryRow(ctx, "SELECT count(*) FROM t WHERE id = $1", i).Scan(&n); err != nil || n != 1 {
					t.Fatalf("commit %d acknowledged but not visible at the standby (n=%d, %v)", i, n, err)
				}
			}
			// Contrast: the standby refuses writes with a clear message.
			if _, err := s.Exec(ctx, "INSERT INTO t VALUES (0, 'x')"); sqlState(err) != "25006" || !strings.Contains(err.Error(), "standby") {
				t.Fatalf("write at the standby: %v", err)
			}
		})
	}
}

// TestBothKilledDurable: at 2-safe-durable, SIGKILL both nodes after
// acknowledged commits, restart them, nothing acknowledged is lost.
func TestBothKilledDurable(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			h := writeHS(t, "2-safe-durable", "relaxed", "standby_durability = \"strict\"\n")
			h.start("n1")
			h.start("n2")
			createTestTable(t, h.dsn(h.nodes["n1"]))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan []int64)
			go func() { a, _ := writers(ctx, h.dsn(h.nodes["n1"]), 4); done <- a }()
			time.Sleep(700 * time.Millisecond)
			h.kill("n1")
			h.kill("n2")
			cancel()
			acked := <-done
			h.start("n1")
			h.start("n2")
			for _, node := range []string{"n1", "n2"} {
				var have map[int64]bool
				deadline := time.Now().Add(15 * time.Second)
				for {
					have = ids(t, h.dsn(h.nodes[node]))
					missing := 0
					for _, id := range acked {
						if !have[id] {
							missing++
						}
					}
					if missing == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: %d of %d acknowledged commits missing after restarting both nodes", node, missing, len(acked))
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			t.Logf("%d acknowledged commits, all present on both nodes after a double SIGKILL", len(acked))
		})
	}
}

// TestDurableAckRelaxedStandby: at 2-safe-durable a commit returns once the
// standby wrote it to its log on disk (seed 000: "strictly durable"), also
// when the standby's own log is relaxed: the standby flushes at once (group
// commit) instead of waiting for its background flush. With flush_interval
// = 60s, a standby that waited for its timer would hold every commit for up
// to a minute. The level is switched at run time (`tandem set`), so this
// also checks that the primary tells its standby. The mechanism is the
// standby's log and does not depend on the back end.
func TestDurableAckRelaxedStandby(t *testing.T) {
	h := writeHSOn(t, "sqlite", "2-safe-received", "relaxed", "standby_durability = \"relaxed\"\nflush_interval = \"60s\"\n")
	h.start("n1")
	h.start("n2")
	createTestTable(t, h.dsn(h.nodes["n1"]))
	h.tandem("set", "safeness=2-safe-durable")
	p := connect(t, h.dsn(h.nodes["n1"]))
	for i := 1; i <= 50; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err := p.Exec(ctx, "INSERT INTO t VALUES ($1, 'x')", i)
		cancel()
		if err != nil {
			t.Fatalf("commit %d at 2-safe-durable with a relaxed standby log (flush_interval 60s): %v", i, err)
		}
	}
	var st struct {
		Repl struct {
			Safeness string               `json:"safeness"`
			Assigned uint64               `json:"assigned_gsn"`
			Standbys map[string][3]uint64 `json:"standbys"`
		} `json:"replication"`
	}
	resp, err := http.Get("http://" + h.admin["n1"] + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Repl.Safeness != "2-safe-durable" || st.Repl.Standbys["n2"][1] < st.Repl.Assigned {
		t.Fatalf("primary status after 50 durable commits: %+v", st.Repl)
	}
}

// TestPrimaryAloneDurability: the primary without a standby (degraded to
// 1-safe), SIGKILLed and restarted: strict loses no acknowledged commit;
// relaxed loses at most what was not flushed (the log's writes reach the
// OS at once, so a process crash loses nothing here either; a machine
// crash could lose up to flush_interval).
func TestPrimaryAloneDurability(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			for _, dur := range []string{"strict", "relaxed"} {
				t.Run(dur, func(t *testing.T) {
					h := writeHS(t, "2-safe-received", dur, "ack_timeout = \"100ms\"\non_standby_loss = \"degrade\"\n")
					h.start("n1")
					createTestTable(t, h.dsn(h.nodes["n1"]))
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan []int64)
					go func() { a, _ := writers(ctx, h.dsn(h.nodes["n1"]), 4); done <- a }()
					time.Sleep(800 * time.Millisecond)
					h.kill("n1")
					cancel()
					acked := <-done
					h.start("n1")
					have := ids(t, h.dsn(h.nodes["n1"]))
					lost := 0
					for _, id := range acked {
						if !have[id] {
							lost++
						}
					}
					if lost > 0 {
						t.Fatalf("%s: %d of %d acknowledged commits lost after SIGKILL and restart", dur, lost, len(acked))
					}
					t.Logf("%s: %d acknowledged, 0 lost", dur, len(acked))
				})
			}
		})
	}
}

// TestCatchUpAndReseed: a standby stopped for a while catches up from the
// log; when the log was trimmed past it, it is re-seeded; either way it
// ends with exactly the primary's rows and GSN.
func TestCatchUpAndReseed(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			h := writeHS(t, "2-safe-received", "relaxed", "retain_records = 20\nsegment_bytes = 4096\nack_timeout = \"200ms\"\n")
			h.start("n1")
			h.start("n2")
			ctx := context.Background()
			p := connect(t, h.dsn(h.nodes["n1"]))
			if _, err := p.Exec(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT)"); err != nil {
				t.Fatal(err)
			}
			insert := func(from, to int) {
				for i := from; i <= to; i++ {
					if _, err := p.Exec(ctx, "INSERT INTO t VALUES ($1, 'some text to fill the log segments')", i); err != nil {
						t.Fatal(err)
					}
				}
			}
			same := func(step string) {
				want := ids(t, h.dsn(h.nodes["n1"]))
				deadline := time.Now().Add(20 * time.Second)
				for {
					have, err := idsErr(h.dsn(h.nodes["n2"]))
					if err == nil && len(have) == len(want) {
						for id := range want {
							if !have[id] {
								t.Fatalf("%s: id %d missing on the standby", step, id)
							}
						}
						return
					}
					if time.Now().After(deadline) {
						b1, _ := os.ReadFile(filepath.Join(h.dir, "n1.log"))
						b2, _ := os.ReadFile(filepath.Join(h.dir, "n2.log"))
						t.Fatalf("%s: standby has %d rows, primary %d\n--- n1\n%s\n--- n2\n%s", step, len(have), len(want), tailStr(b1, 15), tailStr(b2, 15))
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			insert(1, 10)
			same("initial")
			// Catch-up from the log: 15 commits while the standby is down (inside
			// the retained window).
			h.kill("n2")
			insert(11, 25)
			h.start("n2")
			same("catch-up")
			// Re-seed: 400 commits while it is down; the primary trims its log.
			h.kill("n2")
			insert(26, 425)
			time.Sleep(1500 * time.Millisecond) // a trim pass
			h.start("n2")
			same("re-seed")
			b, _ := os.ReadFile(filepath.Join(h.dir, "n1.log"))
			if !strings.Contains(string(b), "re-seeding the standby") {
				t.Fatalf("the standby was not re-seeded (log not trimmed?):\n%s", b)
			}
			insert(426, 430)
			same("after re-seed")
		})
	}
}

// TestApplyExactlyOnce: SIGKILL the standby repeatedly while it applies;
// after each restart it resumes at its recorded GSN: no duplicate, no gap.
func TestApplyExactlyOnce(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			h := writeHS(t, "1-safe", "relaxed", "")
			h.start("n1")
			h.start("n2")
			ctx := context.Background()
			p := connect(t, h.dsn(h.nodes["n1"]))
			if _, err := p.Exec(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT)"); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Exec(ctx, "CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Exec(ctx, "INSERT INTO counter VALUES (1, 0)"); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			total := 0
			go func() {
				defer wg.Done()
				for i := 1; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					// One transaction: a new row and a counter increment. A
					// double apply would not change t (upsert) but the test reads
					// n against the number of rows.
					tx, err := p.Begin(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					tx.Exec(ctx, "INSERT INTO t VALUES ($1, 'x')", i)
					tx.Exec(ctx, "UPDATE counter SET n = n + 1 WHERE id = 1")
					if err := tx.Commit(ctx); err != nil {
						t.Error(err)
						return
					}
					total = i
				}
			}()
			for k := 0; k < 4; k++ {
				time.Sleep(time.Duration(150+rand.Intn(250)) * time.Millisecond)
				h.kill("n2")
				time.Sleep(100 * time.Millisecond)
				h.start("n2")
			}
			close(stop)
			wg.Wait()
			var pn, pc int
			if err := p.QueryRow(ctx, "SELECT (SELECT n FROM counter), (SELECT count(*) FROM t)").Scan(&pn, &pc); err != nil {
				t.Fatal(err)
			}
			if pn != pc || pc != total {
				t.Fatalf("primary: counter %d, rows %d, commits %d", pn, pc, total)
			}
			s := connect(t, h.dsn(h.nodes["n2"]))
			deadline := time.Now().Add(20 * time.Second)
			for {
				var sn, sc int
				if err := s.QueryRow(ctx, "SELECT (SELECT n FROM counter), (SELECT count(*) FROM t)").Scan(&sn, &sc); err != nil {
					t.Fatal(err)
				}
				if sn == pn && sc == pc {
					break
				}
				if sn != sc {
					t.Fatalf("standby counter %d but %d rows: a writeset was applied twice or skipped", sn, sc)
				}
				if time.Now().After(deadline) {
					t.Fatalf("standby at %d rows, primary %d", sc, pc)
				}
				time.Sleep(100 * time.Millisecond)
			}
			out := h.tandem("status")
			t.Logf("%d transactions; standby identical after 4 SIGKILLs\n%s", total, out)
		})
	}
}

func tailStr(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestRouterReadPort: sessions on the router's read port run on the
// standby and see the primary's acknowledged commits (2-safe-visible);
// a write there is refused with a clear message.
func TestRouterReadPort(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			h := writeHS(t, "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			h.start("router")
			ctx := context.Background()
			w := connect(t, h.dsn(h.router))
			if _, err := w.Exec(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT)"); err != nil {
				t.Fatal(err)
			}
			// A session on the read port that refuses a write (25006) runs
			// on the standby; it must see the primary's acknowledged commit.
			deadline := time.Now().Add(10 * time.Second)
			for i := 1; ; i++ {
				r := connect(t, h.dsn(h.reads))
				_, err := r.Exec(ctx, "INSERT INTO t VALUES ($1, 'via read port')", -i)
				if sqlState(err) == "25006" {
					if _, err := w.Exec(ctx, "INSERT INTO t VALUES ($1, 'x')", i); err != nil {
						t.Fatal(err)
					}
					var n int
					if err := r.QueryRow(ctx, "SELECT count(*) FROM t WHERE id = $1", i).Scan(&n); err != nil || n != 1 {
						t.Fatalf("read port: acknowledged commit not visible (%d, %v)", n, err)
					}
					break
				}
				if err != nil {
					t.Fatalf("read port: %v", err)
				}
				if time.Now().After(deadline) {
					t.Fatal("read port sessions never reached the standby")
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Log("read port served by the standby")
		})
	}
}

// createTestTable creates the table the hot-standby tests write to.
func createTestTable(t *testing.T, dsn string) {
	t.Helper()
	c := connect(t, dsn)
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), "CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT)"); err != nil {
		t.Fatal(err)
	}
}

// TestIsolationLevelsNoFalseConflicts: on a PostgreSQL pair, REPEATABLE READ
// and SERIALIZABLE write transactions on disjoint rows commit although other
// transactions committed since their snapshot (tandem's own bookkeeping
// must not make them conflict), and what they wrote reaches the standby.
func TestIsolationLevelsNoFalseConflicts(t *testing.T) {
	h := writeHSOn(t, "postgres", "2-safe-visible", "relaxed", "")
	h.start("n1")
	h.start("n2")
	ctx := context.Background()
	a := connect(t, h.dsn(h.nodes["n1"]))
	b := connect(t, h.dsn(h.nodes["n1"]))
	if _, err := a.Exec(ctx, "CREATE TABLE k (id INTEGER PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	id := 0
	for _, iso := range []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable} {
		for i := 0; i < 3; i++ {
			tx, err := a.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
			if err != nil {
				t.Fatal(err)
			}
			var n int
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM k WHERE id < 0").Scan(&n); err != nil { // takes the snapshot
				t.Fatal(err)
			}
			id++
			if _, err := b.Exec(ctx, "INSERT INTO k VALUES ($1, 'other')", id); err != nil {
				t.Fatal(err)
			}
			id++
			if _, err := tx.Exec(ctx, "INSERT INTO k VALUES ($1, $2)", id, string(iso)); err != nil {
				t.Fatalf("%s: %v", iso, err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatalf("%s transaction failed at COMMIT after another transaction committed: %v", iso, err)
			}
		}
	}
	s := connect(t, h.dsn(h.nodes["n2"]))
	var n int
	if err := s.QueryRow(ctx, "SELECT count(*) FROM k").Scan(&n); err != nil || n != id {
		t.Fatalf("standby has %d rows (%v), want %d", n, err, id)
	}
}
