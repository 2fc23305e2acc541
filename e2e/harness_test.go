// Package e2e holds end-to-end tests: they build the real tandem binary,
// start clusters with `tandem up` as separate OS processes, and talk to them
// with real clients (pgx, psql, pgbench).
package e2e

import (
	"bufio"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	rx "regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/cluster"
)

var tandemBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tandem-e2e-bin")
	if err != nil {
		panic(err)
	}
	tandemBin = filepath.Join(dir, "tandem")
	build := exec.Command("go", "build", "-o", tandemBin, "../cmd/tandem")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cannot build tandem:", err)
		os.Exit(1)
	}
	segs := pgSegments()
	code := m.Run()
	removeOrphanSegments(segs)
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	portsMu sync.Mutex
	given   = map[int]bool{}
)

// freePort returns a free loopback port never handed out before in this
// test binary (the kernel may offer a just-closed port again). With
// TANDEM_E2E_PORTS=LO-HI (the Makefile's two halves of this package, run
// at once) it picks from that range only, so that two test binaries never
// hand out the same port; LO-HI should lie below the kernel's ephemeral
// range (ip_local_port_range), which outgoing connections use.
func freePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	lo, hi, ranged, err := portRange(os.Getenv("TANDEM_E2E_PORTS"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		var p int
		var err error
		if ranged {
			p, err = freePortIn(lo, hi)
		} else {
			p, err = postgres.FreePort()
		}
		if err != nil {
			t.Fatal(err)
		}
		if !given[p] {
			given[p] = true
			return p
		}
	}
	t.Fatal("no fresh free port")
	return 0
}

// portRange parses TANDEM_E2E_PORTS ("LO-HI"); empty means none.
func portRange(v string) (lo, hi int, ok bool, err error) {
	if v == "" {
		return 0, 0, false, nil
	}
	a, b, cut := strings.Cut(v, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if !cut || err1 != nil || err2 != nil || lo < 1024 || hi > 65535 || hi-lo < 100 {
		return 0, 0, false, fmt.Errorf("TANDEM_E2E_PORTS=%q: want LO-HI, 1024 <= LO, HI <= 65535, at least 100 ports", v)
	}
	return lo, hi, true, nil
}

// freePortIn is a random port of [lo, hi] that 127.0.0.1 can listen on now.
func freePortIn(lo, hi int) (int, error) {
	var last error
	for i := 0; i < 200; i++ {
		p := lo + mrand.IntN(hi-lo+1)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			last = err
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d: %w", lo, hi, last)
}

func havePostgres(t testing.TB) {
	t.Helper()
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip("PostgreSQL is not installed:", err)
	}
}

// Cluster is a `tandem up` process and what it printed.
type Cluster struct {
	t      testing.TB
	cmd    *exec.Cmd
	DSN    string
	RunDir string
	File   string
	done   chan struct{}
}

type clusterSpec struct {
	backend string // sqlite | postgres
	router  bool
	auth    string
	extra   string
}

// startCluster writes a cluster file with free ports and runs `tandem up`.
func startCluster(t testing.TB, spec clusterSpec) *Cluster {
	t.Helper()
	return startClusterArgs(t, t.TempDir(), spec)
}

// startClusterArgs is startCluster in dir with more arguments for
// `tandem up`.
func startClusterArgs(t testing.TB, dir string, spec clusterSpec, args ...string) *Cluster {
	t.Helper()
	if spec.backend == "postgres" {
		havePostgres(t)
	}
	if spec.auth == "" {
		spec.auth = "scram-sha-256"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster = \"e2e\"\ndesign = \"standalone\"\nauth = %q\nrun_dir = %q\n", spec.auth, filepath.Join(dir, "run"))
	b.WriteString("[[users]]\nname = \"tandem\"\npassword = \"secret\"\n")
	if spec.router {
		fmt.Fprintf(&b, "[router]\nlisten = \"127.0.0.1:%d\"\nhealth_interval = \"200ms\"\n", freePort(t))
	}
	fmt.Fprintf(&b, "[[nodes]]\nid = \"n1\"\nlisten = \"127.0.0.1:%d\"\nmetrics = \"127.0.0.1:%d\"\nbackend = %q\n", freePort(t), freePort(t), spec.backend)
	if spec.backend == "postgres" {
		b.WriteString("[nodes.postgres]\nsettings = { fsync = \"off\", max_connections = \"100\" }\n")
	}
	b.WriteString(spec.extra)
	file := filepath.Join(dir, "cluster.toml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return upFileArgs(t, dir, file, filepath.Join(dir, "run"), args...)
}

// upFile runs `tandem up -c file` in dir and waits for its DSN; runDir is
// the cluster file's run_dir.
func upFile(t testing.TB, dir, file, runDir string) *Cluster {
	t.Helper()
	return upFileArgs(t, dir, file, runDir)
}

// upFileArgs is upFile with more arguments for `tandem up`.
func upFileArgs(t testing.TB, dir, file, runDir string, args ...string) *Cluster {
	t.Helper()
	cmd := exec.Command(tandemBin, append([]string{"up", "-c", file}, args...)...)
	cmd.Dir = dir
	stdout, _ := cmd.StdoutPipe()
	logf, _ := os.Create(filepath.Join(dir, "up.log"))
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, cmd: cmd, RunDir: runDir, File: file, done: make(chan struct{})}
	go func() { cmd.Wait(); close(c.done) }()
	dsnRe := rx.MustCompile(`psql "([^"]+)"`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := dsnRe.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case c.DSN = <-found:
	case <-c.done:
		b, _ := os.ReadFile(filepath.Join(dir, "up.log"))
		t.Fatalf("tandem up exited: %s", b)
	case <-time.After(120 * time.Second):
		c.Stop()
		t.Fatal("tandem up did not print a DSN within 120 s")
	}
	t.Cleanup(c.Stop)
	return c
}

// Stop sends SIGTERM and waits; then checks that no child is left.
func (c *Cluster) Stop() {
	select {
	case <-c.done:
		return
	default:
	}
	procs, _ := cluster.ReadState(c.RunDir)
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
		c.t.Errorf("tandem up did not stop within 60 s of SIGTERM")
	}
	for _, p := range procs {
		if alive(p.PID) {
			c.t.Errorf("%s %s (pid %d) still running after tandem up stopped", p.Kind, p.Name, p.PID)
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
}

// Procs returns the processes `tandem up` started.
func (c *Cluster) Procs() []*cluster.Proc {
	procs, err := cluster.ReadState(c.RunDir)
	if err != nil {
		c.t.Fatal(err)
	}
	return procs
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

func connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func hostPort(dsn string) string {
	m := rx.MustCompile(`@([^/]+)/`).FindStringSubmatch(dsn)
	if m == nil {
		return ""
	}
	return m[1]
}

var _ = net.Dial

type regexpT = rx.Regexp

func mustCompile(s string) *regexpT { return rx.MustCompile(s) }

func regexp(s string) *regexpT { return mustCompile(s) }
