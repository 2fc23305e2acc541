package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/backend/postgres"
)

func needPgpool(t *testing.T) {
	t.Helper()
	if _, err := FindPgpool(); err != nil {
		t.Skip(err)
	}
}

// TestPgpoolConfig checks pgpool.conf says what seed 001's listing A.4
// says in pgpool-II 4.3's names, listens on 127.0.0.1 only, admits
// clients only through pool_hba.conf and keeps every file in its
// directory.
func TestPgpoolConfig(t *testing.T) {
	dir := "/tmp/sweep-r1/pg-pair-pgpool"
	common := []string{
		"backend_clustering_mode = 'streaming_replication'\n",
		"listen_addresses = '127.0.0.1'\n",
		"socket_dir = '" + dir + "'\n",
		"pcp_listen_addresses = ''\n",
		"pcp_socket_dir = '" + dir + "'\n",
		"enable_pool_hba = on\n",
		"pool_passwd = '" + dir + "/pool_passwd'\n",
		"allow_clear_text_frontend_auth = off\n",
		"num_init_children = 110\n",
		"max_pool = 10\n",
		"child_life_time = 30\n",
		"connection_life_time = 30\n",
		"connection_cache = on\n",
		"reset_query_list = 'ABORT; DISCARD ALL'\n",
		"load_balance_mode = on\n",
		"statement_level_load_balance = on\n",
		"sr_check_user = 'postgres'\n",
		"health_check_period = 0\n",
		"failover_on_backend_error = off\n",
		"use_watchdog = off\n",
		"pid_file_name = '" + dir + "/pgpool.pid'\n",
		"logdir = '" + dir + "'\n",
		"memqcache_oiddir = '" + dir + "/oiddir'\n",
	}
	for _, tc := range []struct {
		name     string
		cfg      pgpoolConfig
		want     []string
		backends int
	}{
		{
			name: "balanced pair",
			cfg: pgpoolConfig{Listen: 15000, PCPPort: 15001, Dir: dir, Backends: []pgpoolBackend{
				{Port: 15432, Weight: 1}, {Port: 15433, Weight: 1}}},
			want: []string{
				"port = 15000\n", "pcp_port = 15001\n",
				"backend_hostname0 = '127.0.0.1'\nbackend_port0 = 15432\nbackend_weight0 = 1\nbackend_flag0 = 'DISALLOW_TO_FAILOVER'\n",
				"backend_hostname1 = '127.0.0.1'\nbackend_port1 = 15433\nbackend_weight1 = 1\nbackend_flag1 = 'DISALLOW_TO_FAILOVER'\n",
			},
			backends: 2,
		},
		{
			name: "standby weight 0 (pass-through)",
			cfg: pgpoolConfig{Listen: 16000, PCPPort: 16001, Dir: dir, Backends: []pgpoolBackend{
				{Port: 25432, Weight: 1}, {Port: 25433, Weight: 0}}},
			want:     []string{"port = 16000\n", "backend_port0 = 25432\nbackend_weight0 = 1\n", "backend_port1 = 25433\nbackend_weight1 = 0\n"},
			backends: 2,
		},
		{
			name:     "a quote in the directory is doubled",
			cfg:      pgpoolConfig{Listen: 1, PCPPort: 2, Dir: "/tmp/o'k", Backends: []pgpoolBackend{{Port: 3, Weight: 1}}},
			want:     []string{"socket_dir = '/tmp/o''k'\n", "pid_file_name = '/tmp/o''k/pgpool.pid'\n"},
			backends: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.cfg.render()
			want := tc.want
			if tc.cfg.Dir == dir {
				want = append(slices.Clone(common), want...)
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("pgpool.conf lacks %q:\n%s", w, text)
				}
			}
			if got := strings.Count(text, "backend_hostname"); got != tc.backends {
				t.Errorf("%d backends, want %d", got, tc.backends)
			}
			for _, bad := range []string{"'*'", "0.0.0.0", "/etc/", "/var/"} {
				if strings.Contains(text, bad) {
					t.Errorf("pgpool.conf has %q:\n%s", bad, text)
				}
			}
			// Every setting once, each line "name = value" or a comment.
			seen := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				name, _, ok := strings.Cut(line, " = ")
				if !ok {
					t.Errorf("line %q is not name = value", line)
				}
				if seen[name] {
					t.Errorf("%s set twice", name)
				}
				seen[name] = true
			}
		})
	}
	if !strings.Contains(pgpoolHBA, "host  all all 127.0.0.1/32 scram-sha-256\n") || !strings.Contains(pgpoolHBA, "local all all scram-sha-256\n") ||
		strings.Contains(pgpoolHBA, "trust") {
		t.Errorf("pool_hba.conf:\n%s", pgpoolHBA)
	}
	if got := passwdLine("postgres", "abc"); got != "postgres:TEXTabc\n" {
		t.Errorf("pool_passwd line %q", got)
	}
}

func TestParsePoolNodes(t *testing.T) {
	// SHOW pool_nodes of pgpool-II 4.3.
	names := []string{"node_id", "hostname", "port", "status", "pg_status", "lb_weight", "role", "pg_role", "select_cnt",
		"load_balance_node", "replication_delay", "replication_state", "replication_sync_state", "last_status_change"}
	table := [][]string{
		{"0", "127.0.0.1", "15432", "up", "up", "0.500000", "primary", "primary", "120", "false", "0", "", "", "2026-11-27 17:00:00"},
		{"1", "127.0.0.1", "15433", "waiting", "up", "0.500000", "standby", "standby", "0", "true", "0", "", "", "2026-11-27 17:00:00"},
	}
	got, err := parsePoolNodes(names, table)
	if err != nil {
		t.Fatal(err)
	}
	want := []PoolNode{
		{ID: 0, Port: 15432, Status: "up", Role: "primary", Weight: 0.5, Selects: 120},
		{ID: 1, Port: 15433, Status: "waiting", Role: "standby", Weight: 0.5},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parsePoolNodes = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		names []string
		table [][]string
		err   string
	}{
		{names[:8], table, "no select_cnt column"},
		{names, nil, "no node"},
		{names, [][]string{table[0][:5]}, "5 values for 14 columns"},
		{names, [][]string{append([]string{"x"}, table[0][1:]...)}, `node_id "x"`},
		{names, [][]string{{"0", "h", "1", "up", "up", "0.5", "primary", "primary", "many", "", "", "", "", ""}}, `select_cnt "many"`},
	} {
		if _, err := parsePoolNodes(tc.names, tc.table); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parsePoolNodes(%v) error %v, want %q", tc.table, err, tc.err)
		}
	}
}

// sysvShm lists the System V shared memory segments created by pid
// (/proc/sysvipc/shm's cpid column).
func sysvShm(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 0 {
		return nil
	}
	col := slices.Index(strings.Fields(lines[0]), "cpid")
	var out []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if col >= 0 && col < len(f) && f[col] == strconv.Itoa(pid) {
			out = append(out, l)
		}
	}
	return out
}

// TestPgpoolPair puts pgpool-II in front of a real streaming pair: a
// client needs the password; writes go to the primary; reads are
// balanced to both servers (each answer says which one ran it, and
// pgpool's select_cnt agrees); with the standby's weight 0 every read
// stays on the primary; Stop leaves no process, socket, pid file or
// shared memory behind.
func TestPgpoolPair(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and pgpool-II; skipped with -short")
	}
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip("PostgreSQL is not installed:", err)
	}
	needPgpool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// A short directory: the servers' and pgpool's Unix sockets live under it.
	dir, err := os.MkdirTemp("", "pp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p, err := StartPGPair(ctx, dir, "", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	pool, err := StartPgpool(ctx, dir, []*postgres.Managed{p.Primary, p.Standby}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Stop()
	primary, standby := p.Primary.Port(), p.Standby.Port()
	if pool.Port() == primary || pool.Port() == standby || !strings.Contains(pool.DSN("postgres"), ":"+strconv.Itoa(pool.Port())+"/") {
		t.Fatalf("DSN %s does not reach pgpool's port %d", pool.DSN("postgres"), pool.Port())
	}

	// Authentication: no password, a wrong one, and the Unix socket
	// without one are refused; the right one is admitted.
	for _, dsn := range []string{
		fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pool.Port()),
		fmt.Sprintf("postgres://postgres:wrong@127.0.0.1:%d/postgres?sslmode=disable", pool.Port()),
		fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable", dir, pool.Port()),
	} {
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			c.Close(ctx)
			t.Errorf("pgpool admitted %s", dsn)
		}
	}

	c, err := pgx.Connect(ctx, pool.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	// Writes: the table is created and filled on the primary.
	var wport int
	if _, err := c.Exec(ctx, "CREATE TABLE pp (id int PRIMARY KEY, port int)"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "INSERT INTO pp VALUES (1, current_setting('port')::int) RETURNING port").Scan(&wport); err != nil {
		t.Fatal(err)
	}
	if wport != primary {
		t.Errorf("the INSERT ran on port %d, want the primary's %d", wport, primary)
	}
	if err := p.WaitReplayed(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	// reads runs n autocommit SELECTs (simple protocol: each statement is
	// balanced on its own) on fresh sessions through pgpool and counts the
	// ports that answered, and pgpool's select_cnt meanwhile.
	reads := func(n int) (map[int]int, map[int]int64) {
		t.Helper()
		before, err := pool.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ports := map[int]int{}
		for s := 0; s < 4; s++ {
			rc, err := pgx.Connect(ctx, pool.DSN("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n/4; i++ {
				var port, id int
				if err := rc.QueryRow(ctx, "SELECT current_setting('port')::int, id FROM pp WHERE id = 1", pgx.QueryExecModeSimpleProtocol).Scan(&port, &id); err != nil {
					t.Fatal(err)
				}
				ports[port]++
			}
			rc.Close(ctx)
		}
		after, err := pool.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sel := map[int]int64{}
		for i, n := range after {
			sel[n.Port] = n.Selects - before[i].Selects
		}
		return ports, sel
	}
	ports, sel := reads(80)
	if ports[primary] == 0 || ports[standby] == 0 || ports[primary]+ports[standby] != 80 {
		t.Errorf("80 reads through pgpool ran on %v; want both the primary (%d) and the standby (%d)", ports, primary, standby)
	}
	if sel[primary] < int64(ports[primary]) || sel[standby] < int64(ports[standby]) {
		t.Errorf("pgpool's select_cnt grew by %v, fewer than the reads each server answered %v", sel, ports)
	}
	// Reads after a write in a transaction stay on the primary.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE pp SET port = 0 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		var port int
		if err := tx.QueryRow(ctx, "SELECT current_setting('port')::int FROM pp WHERE id = 1").Scan(&port); err != nil {
			t.Fatal(err)
		}
		if port != primary {
			t.Fatalf("a read after a write in a transaction ran on port %d, want the primary's %d", port, primary)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// The standby's weight 0: pgpool passes every statement to the primary.
	if err := pool.SetStandbyWeight(ctx, 0); err != nil {
		t.Fatal(err)
	}
	ports, sel = reads(40)
	if ports[primary] != 40 || sel[standby] != 0 {
		t.Errorf("with the standby's weight 0, 40 reads ran on %v and select_cnt grew by %v; want all on the primary %d", ports, sel, primary)
	}
	if err := pool.SetStandbyWeight(ctx, 1); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)

	pid := pool.PID()
	if len(sysvShm(t, pid)) == 0 {
		t.Log("no System V shared memory attributed to pgpool (nothing to check after Stop)")
	}
	pool.Stop()
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pgpool's process group %d still has processes after Stop (kill: %v)", pid, err)
	}
	if left := sysvShm(t, pid); len(left) > 0 {
		t.Errorf("pgpool's shared memory left after Stop: %v", left)
	}
	for _, f := range []string{"pgpool.pid", ".s.PGSQL." + strconv.Itoa(pool.Port()), ".s.PGSQL." + strconv.Itoa(pool.cfg.PCPPort)} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after Stop (%v)", f, err)
		}
	}
}

// pgpoolPIDs lists the running processes whose executable is pgpool and
// whose working directory is under dir (a sweep's pgpool runs in its own
// directory): another test binary's pgpool-II (e2e runs its own at the
// same time) is not this test's.
func pgpoolPIDs(dir string) map[int]bool {
	bin, err := FindPgpool()
	if err != nil {
		return nil
	}
	real, _ := filepath.EvalSymlinks(bin)
	out := map[int]bool{}
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, e := range exes {
		target, err := os.Readlink(e)
		if err != nil || (target != bin && target != real) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err != nil || !strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			continue
		}
		out[pid] = true
	}
	return out
}

// TestSweepPgpool runs the suite's two pgpool-II rows through the sweep:
// balanced, the SELECTs go to both servers; with the standby's weight 0,
// to the primary only; both share one started pair and pgpool, and
// nothing is left running afterwards.
func TestSweepPgpool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and pgpool-II; skipped with -short")
	}
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip("PostgreSQL is not installed:", err)
	}
	needPgpool(t)
	tmp, err := os.MkdirTemp("", "pq")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	configs, err := SelectSuite(SuiteSeed001, "sqlite", "pg-pair-pgpool-remote_write,pg-pair-pgpool-nolb-remote_write")
	if err != nil {
		t.Fatal(err)
	}
	before := pgpoolPIDs(tmp)
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{
		Subscribers: 1000, Clients: 4, Rampup: 200 * time.Millisecond, Duration: time.Second,
		Mixes: []string{"r80w20"}, Configs: configs, Rounds: 1, Suite: SuiteSeed001,
		Exe: "/bin/false", TempDir: tmp, Progress: &progress, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatalf("sweep: %v\nprogress:\n%s", err, progress.String())
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(rep.Runs))
	}
	for _, m := range rep.Runs {
		if m.MQTh <= 0 || m.Errors != 0 {
			t.Errorf("%s: MQTh %v, %d errors (%s)", m.Config, m.MQTh, m.Errors, m.FirstError)
		}
		t.Logf("%s: %.0f MQTh, SELECTs per node %v", m.Config, m.MQTh, m.Selects)
		switch m.Config {
		case "pg-pair-pgpool-remote_write":
			if m.Selects["n1"] <= 0 || m.Selects["n2"] <= 0 {
				t.Errorf("%s: SELECTs per node %v, want both > 0 (reads balanced)", m.Config, m.Selects)
			}
		case "pg-pair-pgpool-nolb-remote_write":
			if m.Selects["n1"] <= 0 || m.Selects["n2"] != 0 {
				t.Errorf("%s: SELECTs per node %v, want all on n1", m.Config, m.Selects)
			}
		}
	}
	if n := strings.Count(progress.String(), "TM1 load "); n != 1 {
		t.Errorf("TM1 loaded %d times, want once (both rows share the setup):\n%s", n, progress.String())
	}
	if tb := rep.Seed001; len(tb) != 1 || len(tb[0].Rows) != 2 || tb[0].Rows[0].Selects == nil {
		t.Errorf("seed 001 table %+v, want the two pgpool rows with their SELECTs", tb)
	}
	for pid := range pgpoolPIDs(tmp) {
		if !before[pid] {
			t.Errorf("pgpool process %d still running after the sweep", pid)
		}
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("left behind in the temporary directory: %v", left)
	}
}

// TestNoPgpool: without the pgpool binary the sweep refuses the
// pg-pair-pgpool-* configurations before starting anything, and says how
// to install it.
func TestNoPgpool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := pgpoolDirs
	pgpoolDirs = []string{t.TempDir()}
	defer func() { pgpoolDirs = saved }()
	if _, err := FindPgpool(); !errors.Is(err, ErrNoPgpool) {
		t.Fatalf("FindPgpool = %v, want ErrNoPgpool", err)
	}
	configs, err := SelectSuite(SuiteSeed001, "sqlite", "standalone-relaxed,pg-pair-pgpool-remote_write")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Options{Subscribers: 10, Clients: 1, Duration: time.Second, Rounds: 1,
		Mixes: []string{"r80w20"}, Configs: configs, Exe: "/bin/false", TempDir: t.TempDir()})
	if !errors.Is(err, ErrBadOption) || !errors.Is(err, ErrNoPgpool) ||
		!strings.Contains(err.Error(), "apt-get install pgpool2") || !strings.Contains(err.Error(), "pg-pair-pgpool-remote_write") {
		t.Fatalf("Run = %v, want ErrBadOption naming pg-pair-pgpool-remote_write and apt-get install pgpool2", err)
	}
}

// TestSweepPgpoolInterrupted cancels a sweep while its workload runs
// through pgpool-II: Run reports the interruption, and pgpool (with its
// children), the pair and the run directory are gone.
func TestSweepPgpoolInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and pgpool-II; skipped with -short")
	}
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip("PostgreSQL is not installed:", err)
	}
	needPgpool(t)
	tmp, err := os.MkdirTemp("", "pi")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	configs, err := SelectSuite(SuiteSeed001, "sqlite", "pg-pair-pgpool-remote_write")
	if err != nil {
		t.Fatal(err)
	}
	before := pgpoolPIDs(tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := Run(ctx, Options{
			Subscribers: 1000, Clients: 2, Duration: 2 * time.Minute, Mixes: []string{"r80w20"}, Configs: configs, Rounds: 1,
			Suite: SuiteSeed001, Exe: "/bin/false", TempDir: tmp, Logger: quietLogger(),
		})
		done <- result{rep, err}
	}()
	// Wait until pgpool's children serve sessions (their titles name the
	// user, database and client: "pgpool: postgres postgres 127.0.0.1(...)")
	// for 3 s: TM1 (1,000 subscribers) is loaded by then and the 2 minute
	// run under way.
	deadline := time.Now().Add(2 * time.Minute)
	var serving time.Time
	for serving.IsZero() || time.Since(serving) < 3*time.Second {
		for pid := range pgpoolPIDs(tmp) {
			if !before[pid] && serving.IsZero() {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				if strings.Contains(string(b), "postgres postgres 127.0.0.1") {
					serving = time.Now()
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no pgpool child served a session within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the sweep did not return within a minute of the cancellation")
	}
	if !IsInterrupted(r.err) || r.rep == nil || !r.rep.Interrupted || len(r.rep.Runs) != 0 {
		t.Errorf("Run = %v (report %+v), want an interrupted sweep with no run measured", r.err, r.rep)
	}
	for pid := range pgpoolPIDs(tmp) {
		if !before[pid] {
			t.Errorf("pgpool process %d still running after the interrupted sweep", pid)
		}
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("left behind in the temporary directory: %v", left)
	}
}
