package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/backend/postgres"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildExe  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildTandem builds (once per test binary) the tandem binary the clusters'
// node processes run.
func buildTandem(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "tandem-sweep-test-bin-"); buildErr != nil {
			return
		}
		buildExe = filepath.Join(buildDir, "tandem")
		out, err := exec.Command("go", "build", "-o", buildExe, "github.com/tandemdb/tandem/cmd/tandem").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build tandem: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildExe
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// TestSweepEndToEnd runs two tiny configurations for real: a standalone
// node and a hot-standby pair, both mixes, and checks the numbers and files.
func TestSweepEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clusters; skipped with -short")
	}
	exe := buildTandem(t)
	tmp := t.TempDir()
	configs, err := SelectConfigs("standalone-relaxed,hs-received-relaxed")
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{
		Subscribers: 1000, Clients: 4, Rampup: 200 * time.Millisecond, Duration: time.Second,
		Mixes: []string{"r80w20", "r20w80"}, Configs: configs, Rounds: 1,
		Exe: exe, TempDir: tmp, Progress: &progress, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatalf("sweep: %v\nprogress:\n%s", err, progress.String())
	}
	for _, c := range []string{"standalone-relaxed", "hs-received-relaxed"} {
		for _, mix := range []string{"r80w20", "r20w80"} {
			cell, ok := rep.Cell(c, mix)
			if !ok || cell.MQTh <= 0 || cell.Errors != 0 {
				t.Errorf("%s %s: %+v", c, mix, cell)
			}
		}
		if !strings.Contains(progress.String(), c) {
			t.Errorf("no progress line for %s:\n%s", c, progress.String())
		}
	}
	if n := strings.Count(progress.String(), "\n"); n != 2 {
		t.Errorf("%d progress lines, want one per configuration:\n%s", n, progress.String())
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := rep.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{FileJSON, FileCSV, FileHTML} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// Everything the sweep started is gone: its temporary directory too.
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("left behind in the temporary directory: %v", left)
	}
}

// TestSweepCancel stops a sweep in its first run: it returns quickly with
// an interrupted report and leaves nothing behind.
func TestSweepCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster; skipped with -short")
	}
	exe := buildTandem(t)
	tmp := t.TempDir()
	configs, _ := SelectConfigs("hs-received-relaxed,standalone-relaxed")
	ctx, cancel := context.WithCancel(context.Background())
	var progress strings.Builder
	done := make(chan struct{})
	var rep *Report
	var err error
	go func() {
		defer close(done)
		rep, err = Run(ctx, Options{
			Subscribers: 1000, Clients: 2, Duration: time.Minute, Mixes: []string{"r80w20"}, Configs: configs, Rounds: 1,
			Exe: exe, TempDir: tmp, Progress: &progress, Logger: quietLogger(),
		})
	}()
	// Cancel once the cluster is up and the run is under way.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if entries, _ := filepath.Glob(filepath.Join(tmp, "tandem-sweep-*", "*", "run", "cluster.json")); len(entries) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	cancel()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("sweep did not stop within 90 s of cancellation")
	}
	if !errors.Is(err, context.Canceled) || !IsInterrupted(err) || rep == nil || !rep.Interrupted {
		t.Fatalf("err %v, report %v", err, rep)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestPGPair sets up PostgreSQL's streaming pair, checks the standby
// streams as the synchronous standby, and tears it down completely.
func TestPGPair(t *testing.T) {
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip("PostgreSQL is not installed:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p, err := StartPGPair(ctx, dir, "", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			p.Stop()
		}
	}()
	st, err := p.Replication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].State != "streaming" || st[0].SyncState != "sync" {
		t.Fatalf("pg_stat_replication = %+v, want one standby streaming with sync_state sync", st)
	}
	// The standby is a hot standby in recovery, fed by the primary.
	sys := &pgSystem{server: p.Primary, pair: p}
	if err := sys.exec(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE TABLE pair_probe (id int primary key); INSERT INTO pair_probe VALUES (1)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplayed(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	standby := &pgSystem{server: p.Standby}
	if err := standby.exec(ctx, func(c *pgx.Conn) error {
		var inRecovery bool
		var n int
		if err := c.QueryRow(ctx, "SELECT pg_is_in_recovery(), (SELECT count(*) FROM pair_probe)").Scan(&inRecovery, &n); err != nil {
			return err
		}
		if !inRecovery || n != 1 {
			t.Errorf("standby: in recovery %v, rows %d", inRecovery, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Switching synchronous_commit takes effect for new sessions.
	c, _ := configByName("pg-pair-remote_apply")
	if err := sys.use(ctx, c); err != nil {
		t.Fatal(err)
	}

	pids := []int{p.Primary.PID(), p.Standby.PID()}
	p.Stop()
	stopped = true
	for _, pid := range pids {
		// Each postmaster leads its process group (Setpgid): no member may remain.
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group %d still has processes after Stop (kill: %v)", pid, err)
		}
	}
	for _, d := range []string{"primary", "standby"} {
		if _, err := os.Stat(filepath.Join(dir, d, "pgdata", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: postmaster.pid still there after Stop (%v)", d, err)
		}
	}
}

// TestSweepNodeCrash kills the primary node in the middle of a run: the run
// ends at once, both mixes are reported failed (not as numbers), the node
// logs are kept, and the sweep goes on to the next configuration.
func TestSweepNodeCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clusters; skipped with -short")
	}
	exe := buildTandem(t)
	tmp, logs := t.TempDir(), t.TempDir()
	configs, _ := SelectConfigs("hs-received-relaxed,hs-1safe-relaxed")
	var progress strings.Builder
	done := make(chan struct{})
	var rep *Report
	var err error
	start := time.Now()
	go func() {
		defer close(done)
		rep, err = Run(context.Background(), Options{
			Subscribers: 1000, Clients: 2, Duration: 30 * time.Second, Mixes: []string{"r20w80", "r80w20"}, Configs: configs, Rounds: 1,
			Exe: exe, TempDir: tmp, FailedLogs: logs, Progress: &progress, Logger: quietLogger(),
		})
	}()
	var pid int
	deadline := time.Now().Add(2 * time.Minute)
	for pid == 0 && time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(tmp, "tandem-sweep-*", "*hs-received-relaxed", "run", "cluster.json"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			var st struct {
				Procs []struct {
					Name string `json:"name"`
					PID  int    `json:"pid"`
				} `json:"procs"`
			}
			if json.Unmarshal(b, &st) == nil {
				for _, p := range st.Procs {
					if p.Name == "n1" {
						pid = p.PID
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the cluster did not start")
	}
	time.Sleep(4 * time.Second) // load, then into the first run
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the sweep did not finish")
	}
	if err == nil || rep == nil {
		t.Fatalf("err %v report %v", err, rep)
	}
	for _, mix := range []string{"r20w80", "r80w20"} {
		c, _ := rep.Cell("hs-received-relaxed", mix)
		if c == nil || c.Failed != 1 || len(c.Rounds) != 0 {
			t.Errorf("hs-received-relaxed %s: %+v, want one failed round and no number", mix, c)
		}
		if c, _ := rep.Cell("hs-1safe-relaxed", mix); c == nil || c.MQTh <= 0 {
			t.Errorf("hs-1safe-relaxed %s after the crash: %+v", mix, c)
		}
	}
	// The crash ends the 30 s window at once and the second mix is not
	// run: the next configuration starts right away.
	var next time.Time
	for _, m := range rep.Runs {
		if m.Config == "hs-1safe-relaxed" && (next.IsZero() || m.StartedAt.Before(next)) {
			next = m.StartedAt
		}
	}
	if gap := next.Sub(killed); gap > 20*time.Second {
		t.Errorf("the next configuration started %s after the crash (sweep started %s ago)", gap, time.Since(start).Round(time.Second))
	}
	kept, _ := filepath.Glob(filepath.Join(logs, "*hs-received-relaxed", "*n1.log"))
	if len(kept) != 1 {
		t.Errorf("n1's log not kept in %s: %v", logs, kept)
	}
	if !strings.Contains(progress.String(), "exited during the run") {
		t.Errorf("progress does not say the node exited:\n%s", progress.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
