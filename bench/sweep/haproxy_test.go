package sweep

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/backend/postgres"
)

func needHAProxy(t *testing.T) {
	t.Helper()
	if _, err := FindHAProxy(); err != nil {
		t.Skip(err)
	}
}

// TestHAProxyConfig checks haproxy.cfg says what Patroni's example says,
// and (with haproxy installed) that haproxy accepts it.
func TestHAProxyConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := haproxyConfig{Listen: 15000, StatsSocket: filepath.Join(dir, "haproxy.sock"), UnixDir: dir, Backends: []haproxyBackend{
		{Name: "pg1", Port: 15432, CheckPort: 18008}, {Name: "pg2", Port: 15433, CheckPort: 18009},
	}}
	text := cfg.render()
	for _, want := range []string{
		"    maxconn 2000\n",
		"    stats socket " + cfg.StatsSocket + " mode 600 level user\n",
		"    mode tcp\n",
		"    timeout client 30m\n",
		"    timeout server 30m\n",
		"    timeout connect 4s\n",
		"listen primary\n    bind 127.0.0.1:15000\n    bind " + filepath.Join(dir, ".s.PGSQL.15000") + " mode 666\n",
		"    option httpchk OPTIONS /primary\n    http-check expect status 200\n",
		"    default-server inter 3s fall 3 rise 2 on-marked-down shutdown-sessions\n",
		"    server pg1 127.0.0.1:15432 maxconn 2000 check port 18008\n",
		"    server pg2 127.0.0.1:15433 maxconn 2000 check port 18009\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "*:") || strings.Contains(text, "0.0.0.0") {
		t.Errorf("haproxy.cfg binds beyond 127.0.0.1:\n%s", text)
	}
	bin, err := FindHAProxy()
	if err != nil {
		t.Log("haproxy not installed: the file is not checked by haproxy -c")
		return
	}
	f := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", f).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c rejects the configuration: %v\n%s\n%s", err, out, text)
	}
}

func TestParseStats(t *testing.T) {
	in := "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,\n" +
		"primary,FRONTEND,,,3,5,2000,12,0,0,0,0,0,,,,,OPEN,\n" +
		"primary,pg1,0,0,3,5,2000,12,0,0,,0,,0,0,0,0,UP,\n" +
		"primary,pg2,0,0,0,0,2000,0,0,0,,0,,0,0,0,0,DOWN,\n" +
		"primary,BACKEND,0,0,3,5,200,12,0,0,0,0,,0,0,0,0,UP,\n\n"
	got, err := parseStats(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerStat{{Name: "pg1", Status: "UP", Sessions: 12, Current: 3}, {Name: "pg2", Status: "DOWN"}}
	if len(got) != len(want) {
		t.Fatalf("parseStats = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("server %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "# pxname,svname\nprimary,pg1\n"} {
		if _, err := parseStats(strings.NewReader(bad)); err == nil {
			t.Errorf("parseStats(%q): no error", bad)
		}
	}
}

// TestHAProxyPair puts HAProxy in front of a real streaming pair: clients
// reach the primary only; after a promotion of the standby and the old
// primary's stop, HAProxy's check sends them to the new primary; Stop
// leaves no process behind.
func TestHAProxyPair(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and HAProxy; skipped with -short")
	}
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip("PostgreSQL is not installed:", err)
	}
	needHAProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p, err := StartPGPair(ctx, dir, "", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	h, err := StartHAProxy(ctx, dir, []*postgres.Managed{p.Primary, p.Standby}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	if !strings.Contains(h.DSN("postgres"), ":"+strconv.Itoa(h.Port())+"/") || h.Port() == p.Primary.Port() || h.Port() == p.Standby.Port() {
		t.Fatalf("DSN %s does not reach HAProxy's port %d", h.DSN("postgres"), h.Port())
	}
	// ask connects through HAProxy and says which server answered.
	ask := func() (inRecovery bool, port int, err error) {
		c, err := pgx.Connect(ctx, h.DSN("postgres"))
		if err != nil {
			return false, 0, err
		}
		defer c.Close(context.Background())
		err = c.QueryRow(ctx, "SELECT pg_is_in_recovery(), current_setting('port')::int").Scan(&inRecovery, &port)
		return inRecovery, port, err
	}
	for i := 0; i < 6; i++ {
		rec, port, err := ask()
		if err != nil {
			t.Fatal(err)
		}
		if rec || port != p.Primary.Port() {
			t.Fatalf("connection %d through HAProxy reached port %d (in recovery %v), want the primary's %d", i, port, rec, p.Primary.Port())
		}
	}
	st, err := h.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].Status != "UP" || st[0].Sessions < 6 || st[1].Status != "DOWN" || st[1].Sessions != 0 {
		t.Fatalf("HAProxy stats = %+v, want pg1 UP with >= 6 sessions, pg2 DOWN with none", st)
	}

	// Failover by hand (what Patroni would do): promote the standby, stop
	// the old primary. HAProxy's check moves the clients.
	standby := &pgSystem{server: p.Standby}
	if err := standby.exec(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SELECT pg_promote(true, 60)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_ = p.Primary.Stop()
	deadline := time.Now().Add(45 * time.Second)
	for {
		rec, port, err := ask()
		if err == nil && !rec && port == p.Standby.Port() {
			break
		}
		if time.Now().After(deadline) {
			st, _ := h.Stats()
			t.Fatalf("HAProxy did not move clients to the promoted standby within 45 s: last answer port %d recovery %v err %v; stats %+v", port, rec, err, st)
		}
		time.Sleep(500 * time.Millisecond)
	}

	pid := h.PID()
	h.Stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("haproxy (pid %d) still running after Stop (kill: %v)", pid, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "haproxy.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stats socket left after Stop (%v)", err)
	}
}

// TestSweepHAProxy runs pg-pair-haproxy-remote_write through the sweep:
// the workload's connections go through HAProxy to the primary only, and
// nothing is left running afterwards.
func TestSweepHAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and HAProxy; skipped with -short")
	}
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip("PostgreSQL is not installed:", err)
	}
	needHAProxy(t)
	// A short directory: the servers' Unix sockets live under it (107 bytes at most).
	tmp, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	var configs []Config
	configs, err = SelectConfigs("pg-pair-haproxy-remote_write")
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const clients = 4
	rep, err := Run(ctx, Options{
		Subscribers: 1000, Clients: clients, Rampup: 200 * time.Millisecond, Duration: time.Second,
		Mixes: []string{"r80w20", "r20w80"}, Configs: configs, Rounds: 1,
		Exe: "/bin/false", TempDir: tmp, Progress: &progress, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatalf("sweep: %v\nprogress:\n%s", err, progress.String())
	}
	for _, m := range rep.Runs {
		if m.MQTh <= 0 || m.Errors != 0 {
			t.Errorf("%s %s: MQTh %v, %d errors (%s)", m.Config, m.Mix, m.MQTh, m.Errors, m.FirstError)
		}
		if m.Proxied["pg1"] < clients || m.Proxied["pg2"] != 0 {
			t.Errorf("%s %s: connections through HAProxy %v, want >= %d to pg1 (the primary) and none to pg2", m.Config, m.Mix, m.Proxied, clients)
		}
	}
	if len(rep.Runs) != 2 {
		t.Errorf("%d runs, want 2", len(rep.Runs))
	}
	// No haproxy of this sweep is left: none has its config under tmp.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), "haproxy") && strings.Contains(string(b), tmp) {
			t.Errorf("haproxy still running after the sweep: %s %q", f, b)
		}
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("left behind in the temporary directory: %v", left)
	}
}

// TestNoHAProxy: without the haproxy binary the sweep refuses the
// pg-pair-haproxy-* configurations before starting anything, and says how
// to install it.
func TestNoHAProxy(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := haproxyDirs
	haproxyDirs = []string{t.TempDir()}
	defer func() { haproxyDirs = saved }()
	if _, err := FindHAProxy(); !errors.Is(err, ErrNoHAProxy) {
		t.Fatalf("FindHAProxy = %v, want ErrNoHAProxy", err)
	}
	configs, err := SelectConfigs("pg-standalone-on,pg-pair-haproxy-on")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Options{Subscribers: 10, Clients: 1, Duration: time.Second, Rounds: 1,
		Mixes: []string{"r80w20"}, Configs: configs, Exe: "/bin/false", TempDir: t.TempDir()})
	if !errors.Is(err, ErrBadOption) || !errors.Is(err, ErrNoHAProxy) ||
		!strings.Contains(err.Error(), "apt-get install haproxy") || !strings.Contains(err.Error(), "pg-pair-haproxy-on") {
		t.Fatalf("Run = %v, want ErrBadOption naming pg-pair-haproxy-on and apt-get install haproxy", err)
	}
}

// TestHAProxyClientTLS: the pg-pair-haproxy-tls-* configurations' clients
// reach the primary through HAProxy in TLS (sslmode=require, HAProxy
// passing the session through), both servers speak TLS, and the
// clear-text configurations' clients do not.
func TestHAProxyClientTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and HAProxy; skipped with -short")
	}
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip("PostgreSQL is not installed:", err)
	}
	needHAProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, ok := configByName("pg-pair-haproxy-tls-remote_write")
	if !ok || !c.ClientTLS || c.kind != kindPGPairHAProxy {
		t.Fatalf("configuration %+v", c)
	}
	s, err := startPG(ctx, c, t.TempDir(), "", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	if !strings.Contains(s.dsn(), "sslmode=require") || !strings.Contains(s.dsn(), ":"+strconv.Itoa(s.proxy.Port())+"/") {
		t.Fatalf("DSN %s: not HAProxy's port %d with sslmode=require", s.dsn(), s.proxy.Port())
	}
	conn, err := pgx.Connect(ctx, s.dsn())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var tlsOn, rec bool
	var version string
	if err := conn.QueryRow(ctx, "SELECT s.ssl, coalesce(s.version, ''), pg_is_in_recovery() FROM pg_stat_ssl s WHERE s.pid = pg_backend_pid()").Scan(&tlsOn, &version, &rec); err != nil {
		t.Fatal(err)
	}
	if !tlsOn || rec || !strings.HasPrefix(version, "TLS") {
		t.Errorf("through HAProxy: ssl %v (%q), in recovery %v; want a TLS session on the primary", tlsOn, version, rec)
	}
	// The standby takes over with the same settings.
	sc, err := pgx.Connect(ctx, s.pair.Standby.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close(context.Background())
	var sslSetting string
	if err := sc.QueryRow(ctx, "SHOW ssl").Scan(&sslSetting); err != nil || sslSetting != "on" {
		t.Errorf("the standby's ssl = %q (%v), want on", sslSetting, err)
	}
	clear, _ := configByName("pg-pair-haproxy-remote_write")
	if clear.ClientTLS {
		t.Errorf("%s encrypts; it is the clear-text peer", clear.Name)
	}
}
