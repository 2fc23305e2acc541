package e2e

// The physical-replication engine (replication.engine = "physical"): a pair
// of managed PostgreSQL servers under `tandem up`, PostgreSQL's streaming
// replication between them, sessions relayed through the router.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/config"
)

// physPair is a physical-engine pair started with `tandem up`.
type physPair struct {
	t             *testing.T
	c             *Cluster
	file          string
	router, reads string
	nodes         map[string]string // id -> listen
	admin         map[string]string // id -> metrics
	logDir        string            // without c: where the node logs are
	// h: the processes, for clusters a test starts one by one (nil with c).
	h *hsCluster
}

func startPhysPair(t *testing.T, safeness string) *physPair {
	t.Helper()
	havePostgres(t)
	dir := t.TempDir()
	p := &physPair{t: t, nodes: map[string]string{}, admin: map[string]string{}}
	p.router = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p.reads = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var b strings.Builder
	fmt.Fprintf(&b, "cluster = \"phys\"\ndesign = \"hot-standby\"\nrun_dir = %q\n", filepath.Join(dir, "run"))
	// No engine line: physical is the default for managed PostgreSQL.
	fmt.Fprintf(&b, "[replication]\nsafeness = %q\n", safeness)
	fmt.Fprintf(&b, "[router]\nlisten = %q\nread_listen = %q\nhealth_interval = \"100ms\"\n", p.router, p.reads)
	b.WriteString("[[users]]\nname = \"tandem\"\npassword = \"secret\"\n")
	for _, id := range []string{"n1", "n2"} {
		p.nodes[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p.admin[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		fmt.Fprintf(&b, "[[nodes]]\nid = %q\nlisten = %q\nmetrics = %q\nrepl_listen = \"127.0.0.1:%d\"\nbackend = \"postgres\"\n", id, p.nodes[id], p.admin[id], freePort(t))
		b.WriteString("[nodes.postgres]\nsettings = { fsync = \"off\", max_connections = \"100\" }\n")
	}
	p.file = filepath.Join(dir, "phys.toml")
	if err := os.WriteFile(p.file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p.c = upFile(t, dir, p.file, filepath.Join(dir, "run"))
	return p
}

// logTail is the last n lines of a node's log.
func (p *physPair) logTail(id string, n int) string {
	path := filepath.Join(p.logDir, id+".log") // nodes started one by one (hsCluster)
	if p.c != nil {
		path = filepath.Join(p.c.RunDir, "logs", id+".log")
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *physPair) dsn(addr string) string {
	return "postgres://tandem:secret@" + addr + "/tandem?sslmode=disable"
}

func (p *physPair) tandem(args ...string) string {
	p.t.Helper()
	out, err := exec.Command(tandemBin, append(args, "-c", p.file)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tandem %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// physStatus is the part of a node's /status the tests read.
type physStatus struct {
	Role     string `json:"role"`
	Physical *struct {
		Role               string `json:"role"`
		Epoch              uint64 `json:"epoch"`
		SynchronousCommit  string `json:"synchronous_commit"`
		Degraded           bool   `json:"degraded"`
		LSN                string `json:"lsn"`
		Timeline           uint64 `json:"timeline"`
		CheckpointTimeline uint64 `json:"checkpoint_timeline"`
		Received           string `json:"receive_lsn"`
		Replayed           string `json:"replay_lsn"`
		Receiver           string `json:"receiver"`
		ExternalServer     string `json:"external_server"`
		Rejoin             string `json:"rejoin"`
		Error              string `json:"error"`
		Replicas           []struct {
			Node      string `json:"node"`
			State     string `json:"state"`
			SyncState string `json:"sync_state"`
			Sent      string `json:"sent_lsn"`
			Flushed   string `json:"flush_lsn"`
			Replayed  string `json:"replay_lsn"`
		} `json:"replicas"`
		Slots []struct {
			Name   string `json:"name"`
			Active bool   `json:"active"`
		} `json:"slots"`
	} `json:"physical"`
}

func (p *physPair) status(id string) physStatus {
	p.t.Helper()
	var s physStatus
	if err := getStatusJSON("http://"+p.admin[id]+"/status", &s); err != nil {
		p.t.Fatalf("status of %s: %v", id, err)
	}
	if s.Physical == nil {
		p.t.Fatalf("status of %s has no physical section", id)
	}
	return s
}

// waitStreaming waits until primary reports standby streaming (and, with
// sync, synchronous).
func (p *physPair) waitStreaming(primary, standby string) physStatus {
	p.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := p.status(primary)
		for _, r := range s.Physical.Replicas {
			// Not degraded: the primary's commits wait for it (PostgreSQL
			// calls it sync a moment before that, physical/DESIGN.md).
			if r.Node == standby && r.State == "streaming" && r.SyncState == "sync" && !s.Physical.Degraded {
				return s
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s never reported %s streaming synchronously: %+v\n%s log:\n%s", primary, standby, s.Physical, primary, p.logTail(primary, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestPhysicalPair(t *testing.T) {
	p := startPhysPair(t, "2-safe-visible")
	ctx := context.Background()
	p.waitStreaming("n1", "n2")

	w := connect(t, p.dsn(p.router))
	defer w.Close(ctx)
	if _, err := w.Exec(ctx, "CREATE TABLE acct (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	var sc string
	if err := w.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil || sc != "remote_apply" {
		t.Fatalf("2-safe-visible: synchronous_commit %q (%v), want remote_apply", sc, err)
	}

	// 2-safe-visible: a commit acknowledged on the primary is visible at
	// once on the standby (through the router's read port).
	r := connect(t, p.dsn(p.reads))
	defer r.Close(ctx)
	var where string
	if err := r.QueryRow(ctx, "SELECT pg_is_in_recovery()::text").Scan(&where); err != nil || where != "true" {
		t.Fatalf("the read port's session is not on the standby: %q %v", where, err)
	}
	stale := 0
	for i := 1; i <= 100; i++ {
		if _, err := w.Exec(ctx, "INSERT INTO acct VALUES ($1, 'x')", i); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := r.QueryRow(ctx, "SELECT count(*) FROM acct WHERE id = $1", i).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			stale++
		}
	}
	if stale != 0 {
		t.Fatalf("2-safe-visible: %d of 100 acknowledged commits were not visible on the standby at once", stale)
	}
	// The standby's sessions are read-only: PostgreSQL's own 25006.
	_, err := r.Exec(ctx, "INSERT INTO acct VALUES (1000, 'no')")
	var out []byte
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25006" {
		t.Fatalf("write on the standby: %v, want SQLSTATE 25006", err)
	}

	// The server's TCP listener (repl_listen) admits the replication role
	// only, only over TLS: a user's role, or the replication role in
	// clear text or with a wrong password, is refused.
	cfg, err := config.Load(p.file)
	if err != nil {
		t.Fatal(err)
	}
	n1, _ := cfg.Node("n1")
	rh, rp, _ := net.SplitHostPort(n1.Repl)
	for _, dsn := range []string{
		fmt.Sprintf("host=%s port=%s user=tandem password=secret dbname=tandem sslmode=require", rh, rp),
		fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=require", rh, rp),
		fmt.Sprintf("host=%s port=%s user=tandem_repl password=guess dbname=postgres sslmode=require", rh, rp),
		fmt.Sprintf("host=%s port=%s user=tandem_repl password=guess dbname=postgres sslmode=disable", rh, rp),
	} {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := pgx.Connect(cctx, dsn)
		cancel()
		if err == nil {
			c.Close(ctx)
			t.Fatalf("the replication listener let %q in", dsn)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "28000" && pe.Code != "28P01") {
			t.Fatalf("%q: %v, want 28000 or 28P01", dsn, err)
		}
	}

	// tandem set changes synchronous_commit at run time.
	for level, want := range map[string]string{"2-safe-received": "remote_write", "2-safe-durable": "on", "1-safe": "local", "2-safe-visible": "remote_apply"} {
		p.tandem("set", "safeness="+level)
		c := connect(t, p.dsn(p.router))
		if err := c.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil || sc != want {
			t.Fatalf("after set safeness=%s: synchronous_commit %q (%v), want %s", level, sc, err, want)
		}
		c.Close(ctx)
		if s := p.status("n1"); s.Physical.SynchronousCommit != want {
			t.Fatalf("after set safeness=%s: /status says %q", level, s.Physical.SynchronousCommit)
		}
	}
	out, err = exec.Command(tandemBin, "set", "-c", p.file, "durability=relaxed").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "writeset") {
		t.Fatalf("set durability=relaxed on the physical engine: %v %s", err, out)
	}

	// Status: LSNs of the primary and of the standby's stream, its slot.
	s := p.waitStreaming("n1", "n2")
	if s.Physical.LSN == "" || len(s.Physical.Replicas) != 1 || s.Physical.Replicas[0].Replayed == "" || s.Physical.Replicas[0].Flushed == "" {
		t.Fatalf("primary status without LSNs: %+v", s.Physical)
	}
	if len(s.Physical.Slots) != 1 || s.Physical.Slots[0].Name != "tandem_n2" || !s.Physical.Slots[0].Active {
		t.Fatalf("primary slots: %+v", s.Physical.Slots)
	}
	if s2 := p.status("n2"); s2.Physical.Receiver != "streaming" || s2.Physical.Replayed == "" {
		t.Fatalf("standby status: %+v", s2.Physical)
	}
	// The router's probe (?probe=1): role, epoch and the position the
	// router reads (the primary's LSN, the standby's replay position),
	// without the replication views (no replicas, no slots).
	for id, role := range map[string]string{"n1": "primary", "n2": "standby"} {
		var pr physStatus
		if err := getStatusJSON("http://"+p.admin[id]+"/status?probe=1", &pr); err != nil || pr.Physical == nil {
			t.Fatalf("probe of %s: %v %+v", id, err, pr)
		}
		ph := pr.Physical
		if pr.Role != role || ph.Epoch == 0 || ph.Error != "" || len(ph.Replicas) != 0 || len(ph.Slots) != 0 {
			t.Fatalf("probe of %s: %+v, want role %s, an epoch, no replicas or slots", id, ph, role)
		}
		if (role == "primary") != (ph.LSN != "") || (role == "standby") != (ph.Replayed != "") {
			t.Fatalf("probe of %s: lsn %q replay_lsn %q, want the %s's position", id, ph.LSN, ph.Replayed, role)
		}
	}
	text := p.tandem("status")
	for _, want := range []string{"REPLICA", "streaming", "sync", "tandem_n2", "SYNCHRONOUS_COMMIT"} {
		if !strings.Contains(text, want) {
			t.Fatalf("tandem status lacks %q:\n%s", want, text)
		}
	}

	// pgbench through the router, as against PostgreSQL itself.
	pgbench, err := postgres.FindTool("", "pgbench")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(p.router)
	bench := func(args ...string) string {
		cmd := exec.Command(pgbench, append([]string{"-h", host, "-p", port, "-U", "tandem"}, append(args, "tandem")...)...)
		cmd.Env = append(os.Environ(), "PGPASSWORD=secret", "PGSSLMODE=disable")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	bench("-i", "-s", "1", "-q")
	out2 := bench("-T", "5", "-c", "4", "-j", "2")
	if !strings.Contains(out2, "number of failed transactions: 0") && !strings.Contains(out2, "tps =") {
		t.Fatalf("pgbench run:\n%s", out2)
	}
	// psql through the router, and through the read port.
	psql, err := postgres.FindTool("", "psql")
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{p.router: "100|f", p.reads: "100|t"} {
		out, err := exec.Command(psql, p.dsn(addr), "-Atc", "SELECT count(*), pg_is_in_recovery() FROM acct").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Fatalf("psql through %s: %q %v, want %q", addr, out, err, want)
		}
	}
	var n int
	if err := r.QueryRow(ctx, "SELECT count(*) FROM pgbench_accounts").Scan(&n); err != nil || n != 100000 {
		t.Fatalf("pgbench_accounts on the standby: %d (%v), want 100000", n, err)
	}

	// Switchover under writes: nothing acknowledged is lost, and the old
	// primary rejoins as a standby (pg_rewind).
	acked := switchoverUnderLoad(t, p, "n2")
	checkAcked(t, p.dsn(p.router), acked)
	waitRejoined(t, p, "n2", "n1")
	// And back: n1 rewound and streaming can take over again.
	acked2 := switchoverUnderLoad(t, p, "n1")
	checkAcked(t, p.dsn(p.router), acked)
	checkAcked(t, p.dsn(p.router), acked2)
	waitRejoined(t, p, "n1", "n2")
	logs, _ := os.ReadFile(filepath.Join(p.c.RunDir, "logs", "n1.log"))
	if !strings.Contains(string(logs), "pg_rewind") {
		t.Fatalf("n1's log shows no pg_rewind")
	}

	// promote refuses while the primary answers, and says what to use.
	out, err = exec.Command(tandemBin, "promote", "n2", "-c", p.file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "switchover") || !strings.Contains(string(out), "--force") {
		t.Fatalf("promote n2 while n1 answers: %v\n%s", err, out)
	}
	// promote --force under writes fences the primary first (its server
	// stopped), the standby replays the fenced primary's WAL to its end
	// before it takes over: nothing acknowledged is lost, and the fenced
	// primary rejoins by pg_rewind.
	acked3 := handOverUnderLoad(t, p, "n2", func() {
		out := p.tandem("promote", "--force", "n2")
		for _, want := range []string{"fenced the primary n1 (its server stopped) at LSN", "node n2 is the primary of epoch", "lost: nothing"} {
			if !strings.Contains(out, want) {
				t.Fatalf("promote --force lacks %q:\n%s", want, out)
			}
		}
		t.Logf("%s", strings.TrimSpace(out))
	})
	checkAcked(t, p.dsn(p.router), append(append(acked, acked2...), acked3...))
	waitRejoined(t, p, "n2", "n1")
}

// switchoverUnderLoad runs 4 writers through the router, switches over to
// to, and returns the ids whose commit was acknowledged.
func switchoverUnderLoad(t *testing.T, p *physPair, to string) []int64 {
	t.Helper()
	return handOverUnderLoad(t, p, to, func() {
		out := p.tandem("switchover", "--to", to)
		if !strings.Contains(out, "switchover done: "+to+" is the primary") {
			t.Fatalf("switchover: %s", out)
		}
		t.Logf("%s", strings.TrimSpace(out))
	})
}

// handOverUnderLoad runs 4 writers through the router, runs handOver
// (which makes to the primary) among them, and returns the ids whose
// commit was acknowledged.
func handOverUnderLoad(t *testing.T, p *physPair, to string, handOver func()) []int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := connect(t, p.dsn(p.router))
	_, _ = c.Exec(ctx, "CREATE TABLE IF NOT EXISTS audit (id bigint PRIMARY KEY)")
	c.Close(ctx)
	var mu sync.Mutex
	var acked []int64
	var next atomic.Int64
	next.Store(time.Now().UnixNano() / 1000)
	start := time.Now()
	ackLog.reset(start)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conn *pgx.Conn
			conns := 0
			for ctx.Err() == nil {
				if conn == nil {
					cctx, cc := context.WithTimeout(ctx, 3*time.Second)
					conn, _ = pgx.Connect(cctx, p.dsn(p.router))
					cc()
					if conn == nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					conns++
				}
				id := next.Add(1)
				sent := time.Now()
				ackLog.add(id, fmt.Sprintf("in flight: writer %d connection %d (backend %d) sent %s", i, conns, conn.PgConn().PID(), sent.Sub(start)))
				if _, err := conn.Exec(ctx, "INSERT INTO audit VALUES ($1)", id); err != nil {
					ackLog.add(id, fmt.Sprintf("failed: writer %d connection %d (backend %d) sent %s, answered %s: %v", i, conns, conn.PgConn().PID(), sent.Sub(start), time.Since(start), err))
					conn.Close(context.Background())
					conn = nil
					continue
				}
				ackLog.add(id, fmt.Sprintf("acknowledged: writer %d connection %d (backend %d) sent %s, answered %s", i, conns, conn.PgConn().PID(), sent.Sub(start), time.Since(start)))
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	t.Logf("hand-over to %s from %s", to, time.Since(start))
	handOver()
	t.Logf("hand-over to %s done at %s", to, time.Since(start))
	// Writes go on against the new primary.
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		after := len(acked)
		mu.Unlock()
		if after > before+20 {
			break
		}
		if time.Now().After(deadline) {
			p.stalled(to)
			cancel()
			wg.Wait()
			t.Fatalf("no writes succeeded through the router after %s became the primary", to)
		}
	}
	cancel()
	wg.Wait()
	if s := p.status(to); s.Role != "primary" {
		t.Fatalf("%s is %s after the switchover", to, s.Role)
	}
	return acked
}

// ackLog keeps what handOverUnderLoad's writers saw of each id, for a
// lost commit's report.
var ackLog = &idLog{}

// lostIDs are the acknowledged ids checkAcked did not find (a test's
// cleanup may look for them elsewhere).
var lostIDs []int64

type idLog struct {
	mu    sync.Mutex
	start time.Time
	m     map[int64]string
}

func (l *idLog) reset(start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start, l.m = start, map[int64]string{}
}

func (l *idLog) add(id int64, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m != nil {
		l.m[id] = what
	}
}

func (l *idLog) get(id int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.m[id]; ok {
		return w
	}
	return "(not sent)"
}

// stalled logs where the writers of handOverUnderLoad wait: the new
// primary's sessions as its server sees them, and the router's goroutines
// (SIGQUIT makes Go print them to the router's log, and end it).
func (p *physPair) stalled(to string) {
	t := p.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, p.dsn(p.nodes[to])); err != nil {
		t.Logf("stalled: %s's sessions: %v", to, err)
	} else {
		rows, err := c.Query(ctx, "SELECT pid, coalesce(application_name, ''), coalesce(state, ''), coalesce(wait_event_type, '') || ':' || coalesce(wait_event, ''), coalesce(backend_start::text, ''), coalesce(state_change::text, ''), left(coalesce(query, ''), 80) FROM pg_stat_activity WHERE backend_type = 'client backend'")
		if err == nil {
			for rows.Next() {
				var pid int32
				var app, state, wait, start, change, q string
				if rows.Scan(&pid, &app, &state, &wait, &start, &change, &q) == nil {
					t.Logf("stalled: %s's server: pid %d app %q %s wait %s started %s changed %s: %s", to, pid, app, state, wait, start, change, q)
				}
			}
			rows.Close()
		}
		if err != nil {
			t.Logf("stalled: %s's sessions: %v", to, err)
		}
		c.Close(ctx)
	}
	// What the writers last saw.
	ackLog.mu.Lock()
	var last []int64
	for id := range ackLog.m {
		last = append(last, id)
	}
	ackLog.mu.Unlock()
	slices.Sort(last)
	if len(last) > 16 {
		last = last[len(last)-16:]
	}
	for _, id := range last {
		what := ackLog.get(id)
		if strings.HasPrefix(what, "in flight") {
			// Did it run on the new primary (its answer lost on the way
			// back) or never arrive?
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if c, err := pgx.Connect(ctx, p.dsn(p.nodes[to])); err == nil {
				var n int
				err = c.QueryRow(ctx, "SELECT count(*) FROM audit WHERE id = $1", id).Scan(&n)
				what += fmt.Sprintf("; on %s: %d rows (%v)", to, n, err)
				c.Close(ctx)
			}
			cancel()
		}
		t.Logf("stalled: id %d %s", id, what)
	}
	if p.h == nil {
		return
	}
	// The router's own log lines (before the goroutine dump below).
	if b, err := os.ReadFile(filepath.Join(p.h.dir, "router.log")); err == nil {
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "time=") && !strings.Contains(l, "component=coordinator") {
				lines = append(lines, l)
			}
		}
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		t.Logf("stalled: the router's log:\n%s", strings.Join(lines, "\n"))
	}
	for _, name := range []string{"router", to} {
		p.h.mu.Lock()
		r := p.h.procs[name]
		p.h.mu.Unlock()
		if r == nil || r.Process == nil {
			continue
		}
		_ = r.Process.Signal(syscall.SIGQUIT)
		time.Sleep(time.Second)
		b, _ := os.ReadFile(filepath.Join(p.h.dir, name+".log"))
		t.Logf("stalled: %s's relay goroutines:\n%s", name, relayGoroutines(string(b)))
	}
}

// relayGoroutines keeps the goroutines of a Go traceback that run the
// router's relay code (the sessions), without register dumps.
func relayGoroutines(dump string) string {
	var out []string
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, "tandem/router.") && strings.HasPrefix(strings.TrimSpace(g), "goroutine ") {
			var keep []string
			for _, l := range strings.Split(g, "\n") {
				// Frames and their call sites only.
				if l = strings.TrimSpace(l); l != "" {
					if i := strings.Index(l, " fp="); i > 0 {
						l = l[:i]
					}
					keep = append(keep, l)
				}
			}
			out = append(out, strings.Join(keep, "\n"))
		}
	}
	return strings.Join(out, "\n\n")
}

// checkAcked looks every acknowledged id up through dsn.
func checkAcked(t *testing.T, dsn string, acked []int64) {
	t.Helper()
	c := connect(t, dsn)
	defer c.Close(context.Background())
	rows, err := c.Query(context.Background(), "SELECT id FROM audit")
	if err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		have[id] = true
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	lost := 0
	for _, id := range acked {
		if !have[id] {
			lost++
			lostIDs = append(lostIDs, id)
			// What the writers saw around it.
			for d := int64(-4); d <= 4; d++ {
				t.Logf("lost %d: id %+d %s", id, d, ackLog.get(id+d))
			}
		}
	}
	if lost > 0 || len(acked) == 0 {
		t.Fatalf("acknowledged commits: %d, lost: %d", len(acked), lost)
	}
	t.Logf("acknowledged commits checked: %d, lost: 0", len(acked))
}

// waitRejoined waits until standby streams from primary again, and a
// write on the primary is visible on the standby's own listener.
func waitRejoined(t *testing.T, p *physPair, primary, standby string) {
	t.Helper()
	p.waitStreaming(primary, standby)
	if s := p.status(standby); s.Physical.Role != "standby" || s.Physical.Receiver != "streaming" {
		t.Fatalf("%s after rejoining: %+v", standby, s.Physical)
	}
	ctx := context.Background()
	w := connect(t, p.dsn(p.nodes[primary]))
	defer w.Close(ctx)
	id := time.Now().UnixNano()
	if _, err := w.Exec(ctx, "INSERT INTO audit VALUES ($1)", id); err != nil {
		t.Fatal(err)
	}
	r := connect(t, p.dsn(p.nodes[standby]))
	defer r.Close(ctx)
	var n int
	if err := r.QueryRow(ctx, "SELECT count(*) FROM audit WHERE id = $1", id).Scan(&n); err != nil || n != 1 {
		t.Fatalf("a 2-safe-visible write on %s is not on the rejoined %s: %d %v", primary, standby, n, err)
	}
}

func getStatusJSON(url string, v any) error {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// TestPhysicalPromoteAfterCrash: the primary's node and server are
// SIGKILLed under writes at each 2-safe level; `tandem
// promote` makes the standby the primary with every acknowledged commit;
// writes go on there (degraded to 1-safe once no standby streams), and the
// old primary, restarted, finds the newer primary, rewinds with pg_rewind
// and streams from it (at 2-safe-durable its WAL is deleted first, so the
// rewind fails and it re-seeds itself by a base backup).
func TestPhysicalPromoteAfterCrash(t *testing.T) {
	for _, level := range []string{"2-safe-received", "2-safe-visible", "2-safe-durable"} {
		t.Run(level, func(t *testing.T) { testPhysicalPromoteAfterCrash(t, level) })
	}
}

// TestPhysicalSyncRepArmed: a primary that degraded to 1-safe (its
// standby gone) says it is no longer degraded only once its commits wait
// for the standby again. PostgreSQL's backends decide that by a flag only
// the checkpointer sets when it reads the reloaded
// synchronous_standby_names; with the checkpointer stopped (SIGSTOP, as a
// long checkpoint would hold it) the walsender already calls the returned
// standby synchronous while commits are still answered without it.
func TestPhysicalSyncRepArmed(t *testing.T) {
	h := physicalHS(t, "2-safe-visible", "", false)
	h.start("n1")
	h.start("n2")
	p := &physPair{t: t, file: h.file, router: h.router, reads: h.reads, nodes: h.nodes, admin: h.admin, logDir: h.dir}
	p.waitStreaming("n1", "n2")
	ctx := context.Background()
	w := connect(t, h.dsn(h.nodes["n1"]))
	defer w.Close(ctx)
	if _, err := w.Exec(ctx, "CREATE TABLE audit (id bigint PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	// The standby goes; after ack_timeout the primary degrades.
	h.kill("n2")
	reapServers(t, filepath.Join(h.dir, "run", "n2"))
	waitDegraded(t, p, "n1", true, 30*time.Second)

	ckpt := serverProcess(t, filepath.Join(h.dir, "run", "n1", "pgdata"), "checkpointer")
	if err := syscall.Kill(ckpt, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(ckpt, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)

	// The standby is back and streams; the checkpointer has not read the
	// names, so the primary must still say degraded.
	h.start("n2")
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := p.status("n1")
		streams := false
		for _, r := range s.Physical.Replicas {
			streams = streams || (r.Node == "n2" && r.State == "streaming")
		}
		if streams {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2 never streamed again: %+v", s.Physical)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if s := p.status("n1"); !s.Physical.Degraded {
			t.Fatalf("n1 says it is not degraded while its checkpointer, which arms synchronous replication, is stopped: %+v", s.Physical)
		}
	}

	// Once the checkpointer runs, the level holds again: a commit is
	// visible on the standby when it is acknowledged.
	resume()
	waitDegraded(t, p, "n1", false, 30*time.Second)
	r := connect(t, h.dsn(h.nodes["n2"]))
	defer r.Close(ctx)
	for i := int64(1); i <= 20; i++ {
		if _, err := w.Exec(ctx, "INSERT INTO audit VALUES ($1)", i); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := r.QueryRow(ctx, "SELECT count(*) FROM audit WHERE id = $1", i).Scan(&n); err != nil || n != 1 {
			t.Fatalf("a 2-safe-visible write on n1 is not on n2 when acknowledged: %d %v", n, err)
		}
	}
	// And a commit waits while the standby cannot apply it (its startup
	// process stopped).
	startup := serverProcess(t, filepath.Join(h.dir, "run", "n2", "pgdata"), "startup")
	if err := syscall.Kill(startup, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(startup, syscall.SIGCONT) })
	done := make(chan error, 1)
	go func() {
		_, err := w.Exec(ctx, "INSERT INTO audit VALUES (21)")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a 2-safe-visible commit was acknowledged while the standby could not apply it (err %v)", err)
	case <-time.After(1500 * time.Millisecond):
	}
	_ = syscall.Kill(startup, syscall.SIGCONT)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the commit never returned after the standby's startup process resumed")
	}
}

// waitDegraded waits until id's /status says degraded = want.
func waitDegraded(t *testing.T, p *physPair, id string, want bool, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := p.status(id)
		if s.Physical.Degraded == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: degraded never became %v within %v: %+v", id, want, within, s.Physical)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serverProcess is the pid of the PostgreSQL process of the server in
// pgdata whose title holds what (e.g. "checkpointer").
func serverProcess(t *testing.T, pgdata, what string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err != nil || cwd != pgdata {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if title := string(cmd); strings.HasPrefix(title, "postgres: ") && strings.Contains(title, what) {
			return pid
		}
	}
	t.Fatalf("no %q process of the server in %s", what, pgdata)
	return 0
}

// physicalHS is the writeset tests' hot-standby file (hsCluster: nodes
// started one by one) on the physical engine, with the nodes' and servers'
// logs printed when the test fails.
// startCoordinatedPair starts a physicalHS cluster made with coordinated
// = true (the witness, n1 the primary, n2, the router) and waits until n2
// streams from n1.
func (h *hsCluster) startCoordinatedPair() *physPair {
	h.t.Helper()
	h.start("witness")
	h.start("n1")
	h.start("n2")
	h.start("router")
	p := &physPair{t: h.t, file: h.file, router: h.router, reads: h.reads, nodes: h.nodes, admin: h.admin, logDir: h.dir, h: h}
	p.waitStreaming("n1", "n2")
	return p
}

func physicalHS(t *testing.T, safeness, extra string, coordinated bool) *hsCluster {
	t.Helper()
	h := writeHSFile(t, "postgres", safeness, "strict", extra, coordinated)
	b, err := os.ReadFile(h.file)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "engine = \"writeset\"", "engine = \"physical\"", 1)
	if err := os.WriteFile(h.file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range []string{"n1", "n2"} {
				b, _ := os.ReadFile(filepath.Join(h.dir, "run", id, "postgres.log"))
				l, _ := os.ReadFile(filepath.Join(h.dir, id+".log"))
				t.Logf("%s node log:\n%s\n%s server log (tail):\n%s", id, tailText(string(l), 40), id, tailText(string(b), 25))
			}
			// Where clients went (a switchover's writers, say).
			if r, err := os.ReadFile(filepath.Join(h.dir, "router.log")); err == nil {
				t.Logf("router log:\n%s", tailText(string(r), 40))
			}
		}
	})
	return h
}

func testPhysicalPromoteAfterCrash(t *testing.T, safeness string) {
	h := physicalHS(t, safeness, "", false)
	h.start("n1")
	h.start("n2")
	h.start("router")
	p := &physPair{t: t, file: h.file, router: h.router, reads: h.reads, nodes: h.nodes, admin: h.admin, logDir: h.dir}
	p.waitStreaming("n1", "n2")
	ctx := context.Background()
	c := connect(t, h.dsn(h.router))
	if _, err := c.Exec(ctx, "CREATE TABLE audit (id bigint PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)

	wctx, stop := context.WithCancel(ctx)
	var mu sync.Mutex
	var acked []int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.Connect(wctx, h.dsn(h.nodes["n1"]))
			if err != nil {
				return
			}
			defer conn.Close(context.Background())
			for wctx.Err() == nil {
				id := next.Add(1)
				if _, err := conn.Exec(wctx, "INSERT INTO audit VALUES ($1)", id); err != nil {
					return // the primary is gone
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(2 * time.Second)
	h.kill("n1")
	stop()
	wg.Wait()
	out := h.tandem("promote", "n2")
	if !strings.Contains(out, "node n2 is the primary of epoch 2") {
		t.Fatalf("promote: %s", out)
	}
	t.Logf("%s", strings.TrimSpace(out))
	checkAcked(t, h.dsn(h.nodes["n2"]), acked)

	// Writes go on on the new primary once it stops waiting for n1
	// (on_standby_loss = "degrade", ack_timeout 5 s in these files).
	// The router follows the new primary (its role stream) within moments.
	var w *pgx.Conn
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		wc, cancel := context.WithTimeout(ctx, 20*time.Second)
		w, err = pgx.Connect(wc, h.dsn(h.router))
		if err == nil {
			_, err = w.Exec(wc, "INSERT INTO audit VALUES (-1)")
		}
		cancel()
		if err == nil {
			break
		}
		if w != nil {
			w.Close(ctx)
		}
		if time.Now().After(deadline) {
			t.Fatalf("write through the router on the new primary with its standby down: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer w.Close(ctx)
	// It says so, at once: the engine sets the flag before it lets
	// commits go without the standby (a clean-clone CI run once read
	// degraded = false right after such a commit when it set it after).
	if s := p.status("n2"); !s.Physical.Degraded {
		t.Fatalf("n2 commits without its standby but does not say degraded: %+v", s.Physical)
	}

	// The old primary comes back as a standby of n2, rewound. At
	// 2-safe-durable its WAL is lost first (its pg_wal emptied, as on a
	// lost disk), so pg_rewind, which must read it, fails: the node
	// re-seeds itself with a base backup instead.
	breakRewind := safeness == "2-safe-durable"
	if breakRewind {
		reapServers(t, filepath.Join(h.dir, "run", "n1"))
		segs, _ := filepath.Glob(filepath.Join(h.dir, "run", "n1", "pgdata", "pg_wal", "0000*"))
		if len(segs) == 0 {
			t.Fatal("no WAL segment in n1's pg_wal to remove")
		}
		for _, f := range segs {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.start("n1")
	p.waitStreaming("n2", "n1")
	if s := p.status("n1"); s.Role != "standby" || s.Physical.Epoch != 2 {
		t.Fatalf("n1 after restart: %+v", s.Physical)
	}
	if s := p.status("n2"); s.Physical.Degraded {
		t.Fatalf("n2 still degraded with n1 streaming")
	}
	logs, _ := os.ReadFile(filepath.Join(h.dir, "n1.log"))
	switch rewound, failed := strings.Contains(string(logs), "pg_rewind to the new primary's timeline"), strings.Contains(string(logs), "pg_rewind failed: re-seeding with a base backup"); {
	case !rewound:
		t.Fatalf("n1 did not try pg_rewind:\n%s", logs)
	case breakRewind && (!failed || !strings.Contains(string(logs), "base backup done")):
		t.Fatalf("n1 without its WAL did not re-seed by a base backup:\n%s", logs)
	case !breakRewind && failed:
		t.Fatalf("n1 did not rejoin by pg_rewind:\n%s", logs)
	}
	if breakRewind {
		checkAcked(t, h.dsn(h.nodes["n1"]), acked) // a fresh copy of n2
	}
	// A write on n2 reaches n1.
	if _, err := w.Exec(ctx, "INSERT INTO audit VALUES (-2)"); err != nil {
		t.Fatal(err)
	}
	r := connect(t, h.dsn(h.nodes["n1"]))
	defer r.Close(ctx)
	deadline = time.Now().Add(15 * time.Second)
	for {
		var n int
		if err := r.QueryRow(ctx, "SELECT count(*) FROM audit WHERE id = -2").Scan(&n); err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a write on the new primary never reached the rejoined n1")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tailText(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestPhysicalReseedLostSlot: a replica down while the primary writes more
// WAL than max_slot_wal_keep_size loses its slot; when it starts again it
// is re-seeded with a fresh base backup by itself and streams.
func TestPhysicalReseedLostSlot(t *testing.T) {
	h := writeHSOn(t, "postgres", "1-safe", "strict", "max_slot_wal_keep_size = \"32MB\"\n")
	b, err := os.ReadFile(h.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.file, []byte(strings.Replace(string(b), "engine = \"writeset\"", "engine = \"physical\"", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(h.file)
	if err != nil {
		t.Fatal(err)
	}
	h.start("n1")
	h.start("n2")
	p := &physPair{t: t, file: h.file, nodes: h.nodes, admin: h.admin}
	p.waitStreaming("n1", "n2")
	h.kill("n2")

	ctx := context.Background()
	w := connect(t, h.dsn(h.nodes["n1"]))
	defer w.Close(ctx)
	if _, err := w.Exec(ctx, "CREATE TABLE big AS SELECT g AS id, repeat('x', 200) AS pad FROM generate_series(1, 400000) g"); err != nil {
		t.Fatal(err)
	}
	// The primary's superuser over its socket (in <data_dir>/physical;
	// root may use it) makes
	// checkpoints until the slot is lost.
	n1, _ := cfg.Node("n1")
	_, port, _ := net.SplitHostPort(n1.Repl)
	su, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable", filepath.Join(n1.DataDir, "physical"), port))
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := su.Exec(ctx, "SELECT pg_switch_wal()"); err != nil {
			t.Fatal(err)
		}
		if _, err := su.Exec(ctx, "CHECKPOINT"); err != nil {
			t.Fatal(err)
		}
		var status string
		if err := su.QueryRow(ctx, "SELECT coalesce(wal_status, '') FROM pg_replication_slots WHERE slot_name = 'tandem_n2'").Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status == "lost" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot of the stopped replica is %q, never lost", status)
		}
		if _, err := w.Exec(ctx, "UPDATE big SET pad = pad WHERE id % 4 = 0"); err != nil {
			t.Fatal(err)
		}
	}

	h.start("n2")
	p.waitStreaming("n1", "n2")
	logs, _ := os.ReadFile(filepath.Join(h.dir, "n2.log"))
	if !strings.Contains(string(logs), "re-seeding with a base backup") {
		t.Fatalf("n2 streams but was not re-seeded:\n%s", tailText(string(logs), 20))
	}
	r := connect(t, h.dsn(h.nodes["n2"]))
	defer r.Close(ctx)
	var n int
	if err := r.QueryRow(ctx, "SELECT count(*) FROM big").Scan(&n); err != nil || n != 400000 {
		t.Fatalf("the re-seeded replica has %d rows (%v), want 400000", n, err)
	}
}

// TestPhysicalDeposedPrimaryStepsDown: a standby promoted while its
// primary still runs (as after a promote the old primary did not hear of)
// makes the old primary step down: it hears of the newer epoch from the
// other node, stops, rewinds and streams from the new primary.
func TestPhysicalDeposedPrimaryStepsDown(t *testing.T) {
	h := writeHSOn(t, "postgres", "2-safe-received", "strict", "")
	b, err := os.ReadFile(h.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.file, []byte(strings.Replace(string(b), "engine = \"writeset\"", "engine = \"physical\"", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start("n1")
	h.start("n2")
	p := &physPair{t: t, file: h.file, nodes: h.nodes, admin: h.admin}
	p.waitStreaming("n1", "n2")
	token, err := os.ReadFile(filepath.Join(h.dir, "run", "certs", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.admin["n2"]+"/admin/promote", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"epoch":2`) {
		t.Fatalf("promote n2 behind n1's back: %s %s", resp.Status, body)
	}
	p.waitStreaming("n2", "n1")
	if s := p.status("n1"); s.Role != "standby" || s.Physical.Epoch != 2 {
		t.Fatalf("n1 did not step down: %+v", s.Physical)
	}
	logs, _ := os.ReadFile(filepath.Join(h.dir, "n1.log"))
	if !strings.Contains(string(logs), "steps down") || !strings.Contains(string(logs), "pg_rewind") {
		t.Fatalf("n1's log:\n%s", tailText(string(logs), 20))
	}
}

// TestPhysicalAutomaticFailover: the physical engine under the
// coordinator (failover = "automatic", a witness). The primary's node and
// server are SIGKILLed under writes through the router; nobody types
// promote: the coordinator promotes the standby once the lease lapsed,
// the router follows, writes go on (the new primary degrades to 1-safe
// with the coordinator's consent once no standby streams), every
// acknowledged commit is on the new primary, and the old primary,
// restarted, follows the map: it rewinds and streams from the new one.
func TestPhysicalAutomaticFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	h := physicalHS(t, "2-safe-received", "failover = \"automatic\"\nlease = \"1s\"\nlease_grace = \"500ms\"\nack_timeout = \"2s\"\n", true)
	p := h.startCoordinatedPair()
	createTestTable(t, h.dsn(h.router))
	killPrimaryUnderWriters(t, h, p)
	// The old primary comes back as a standby of the new one.
	h.start("n1")
	p.waitStreaming("n2", "n1")
	if s := p.status("n1"); s.Physical.Role != "standby" || s.Physical.Epoch != 2 {
		t.Fatalf("the restarted old primary: %+v", s.Physical)
	}
	// A switchover back goes through the coordinator (the old primary
	// stops, releases its lease; the map hands over once n1 reported its
	// last WAL record): nothing lost under writes.
	acked := switchoverUnderLoad(t, p, "n1")
	checkAcked(t, h.dsn(h.nodes["n1"]), acked)
	p.waitStreaming("n1", "n2")
	if s := p.status("n1"); s.Physical.Epoch != 3 {
		t.Fatalf("after the switchover n1 is in epoch %d, want 3", s.Physical.Epoch)
	}
}

// TestPhysicalSessionsSurvive: sessionsSurvive on the physical engine
// (PostgreSQL's own replication, the default for managed PostgreSQL
// pairs): psql, pgx and pgjdbc sessions through the router across a
// SIGKILL of the primary's node.
func TestPhysicalSessionsSurvive(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	h := physicalHS(t, "2-safe-received", "failover = \"automatic\"\nlease = \"1s\"\nlease_grace = \"500ms\"\nack_timeout = \"2s\"\n", true)
	p := h.startCoordinatedPair()
	waitCoordinated(t, h.admin["n1"], "n1", "n2")
	sessionsSurvive(t, survivalTarget{
		router: h.dsn(h.router),
		kill:   func() { h.kill("n1") },
		promoted: func() string {
			if s := p.status("n2"); s.Physical.Role == "primary" {
				return "n2"
			}
			return ""
		},
		nodeDSN: func(id string) string { return h.dsn(h.nodes[id]) },
		logs:    func() string { return tailLog(h, "router") + tailLog(h, "n2") },
	})
}

// waitCoordinated waits until the coordinator's map, as the node at admin
// sees it, holds a lease of primary and a report from standby in the
// current epoch: before that a dead primary is not replaced (no lease was
// granted, or no standby is known to hold its commits: the rule's
// ErrNoLease / ErrNoCandidate), and a test that kills the primary right
// after the start (a loaded CI machine: the first lease renewal failed
// while Raft elected its first leader) waits 30 s for nothing.
func waitCoordinated(t *testing.T, admin, primary, standby string) {
	t.Helper()
	var st struct {
		Coord struct {
			Epoch       uint64 `json:"epoch"`
			LeaseHolder string `json:"lease_holder"`
			Members     []struct {
				ID  string `json:"id"`
				Ack *struct {
					Epoch uint64 `json:"epoch"`
				} `json:"ack"`
			} `json:"members"`
		} `json:"coordinator"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := getStatusJSON("http://"+admin+"/status", &st)
		reported := false
		for _, m := range st.Coord.Members {
			if m.ID == standby && m.Ack != nil && m.Ack.Epoch == st.Coord.Epoch {
				reported = true
			}
		}
		if err == nil && st.Coord.LeaseHolder == primary && reported {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator never held %s's lease and %s's report together: %+v (%v)", primary, standby, st.Coord, err)
		}
	}
}

// failedOver waits until node id is the primary of epoch 2 (within), then
// until 100 more commits went through rw, stops the writers (stop) and
// returns the ids whose commit was acknowledged.
// killPrimaryUnderWriters SIGKILLs n1's node and server under 4 writers
// through the router of a coordinated pair and waits until n2 is the
// primary of epoch 2 with every acknowledged commit.
func killPrimaryUnderWriters(t *testing.T, h *hsCluster, p *physPair) {
	t.Helper()
	rw, stop := startWriters(h.dsn(h.router), 4)
	waitCoordinated(t, h.admin["n1"], "n1", "n2")
	rw.killedAt.Store(time.Now().UnixNano())
	h.kill("n1")
	acked := failedOver(t, p, rw, "n2", 30*time.Second, stop)
	requireNoneLost(t, acked, ids(t, h.dsn(h.nodes["n2"])))
}

func failedOver(t *testing.T, p *physPair, rw *retryingWriters, id string, within time.Duration, stop func()) []int64 {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		if s := p.status(id); s.Physical != nil && s.Physical.Role == "primary" && s.Physical.Epoch == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator did not promote %s within %v: %+v", id, within, p.status(id).Physical)
		}
	}
	waitWritesGoOn(t, rw)
	stop()
	rto := time.Duration(rw.firstBack.Load() - rw.killedAt.Load())
	t.Logf("first commit %v after the kill; %d failed statements", rto.Round(time.Millisecond), rw.errors.Load())
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return append([]int64(nil), rw.acked...)
}

// waitWritesGoOn waits until 100 more commits went through rw (60 s from
// its killedAt at most).
func waitWritesGoOn(t *testing.T, rw *retryingWriters) {
	t.Helper()
	for back := rw.count.Load(); rw.count.Load() < back+100; time.Sleep(50 * time.Millisecond) {
		if time.Since(time.Unix(0, rw.killedAt.Load())) > 60*time.Second {
			t.Fatal("writes did not go on through the router on the new primary")
		}
	}
}

// requireNoneLost fails the test when an acknowledged id is not in have
// (or nothing was acknowledged).
func requireNoneLost(t *testing.T, acked []int64, have map[int64]bool) {
	t.Helper()
	lost := 0
	for _, id := range acked {
		if !have[id] {
			lost++
		}
	}
	if lost > 0 || len(acked) == 0 {
		t.Fatalf("%d of %d acknowledged commits are not on the new primary", lost, len(acked))
	}
	t.Logf("%d acknowledged commits, 0 lost", len(acked))
}
