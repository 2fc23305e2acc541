// Package cluster launches a whole tandem cluster on this machine: one OS
// process per node (so a test or an operator can SIGKILL one) and the
// optional router process, each logging into the run directory.
//
// It owns child processes and their readiness and shutdown. It must not
// implement node or router behaviour: it runs the tandem binary for that.
package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
)

// ErrNotReady means a process did not start serving in time.
var ErrNotReady = errors.New("process did not become ready")

// Options of a local cluster.
type Options struct {
	Config *config.Cluster
	// Exe is the tandem binary (default: this executable).
	Exe string
	// LogLevel for the children.
	LogLevel string
	Logger   *slog.Logger
	// ReadyTimeout bounds each process's start (default 120 s: initdb).
	ReadyTimeout time.Duration
	// Lab, when set, puts every process in its own emulated host (a
	// cgroup with the lab's quota for its kind) as soon as it started,
	// before it serves: what a node starts later (its managed
	// PostgreSQL) stays in the node's cgroup. The caller closes the lab
	// after Stop.
	Lab *lab.Lab
}

// Proc is one child process.
type Proc struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // node | router | witness
	Addr string `json:"addr"`
	PID  int    `json:"pid"`
	Log  string `json:"log"`
	// Cgroup is the process's lab cgroup ("" without a lab).
	Cgroup string `json:"cgroup,omitempty"`
	// Netns is its lab network namespace ("": the root namespace).
	Netns string `json:"netns,omitempty"`
	// Host is the process's emulated host (nil without a lab).
	Host *lab.Host `json:"-"`

	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	expect bool // exit expected (stopping)
	mu     sync.Mutex
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Kill sends SIGKILL (a crash the caller wants: not logged as an
// unexpected exit) and waits for the exit.
func (p *Proc) Kill() {
	p.mu.Lock()
	p.expect = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Local is a running local cluster.
type Local struct {
	opts   Options
	log    *slog.Logger
	Procs  []*Proc
	RunDir string
	mu     sync.Mutex
	stop   bool
}

// Start launches the witness (when the cluster file names one), every
// node, then the router, and waits until each serves.
func Start(ctx context.Context, opts Options) (*Local, error) {
	c := opts.Config
	if opts.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		opts.Exe = exe
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 120 * time.Second
	}
	if opts.LogLevel == "" {
		opts.LogLevel = c.LogLevel
	}
	runDir, err := filepath.Abs(c.RunDir)
	if err != nil {
		return nil, err
	}
	// The run directory holds data, logs and state: owner only, whatever
	// the umask (as PostgreSQL insists on for its data directory).
	for _, d := range []string{runDir, filepath.Join(runDir, "logs")} {
		if err := config.PrivateDir(d); err != nil {
			return nil, fmt.Errorf("run directory: %w", err)
		}
	}
	l := &Local{opts: opts, log: opts.Logger, RunDir: runDir}
	cfgPath, err := filepath.Abs(c.File)
	if err != nil {
		return nil, err
	}
	if w := c.Witness; w != nil {
		// The witness first: with it a pair's coordinator has a quorum as
		// soon as one node is up.
		p, err := l.spawn(ctx, w.ID, "witness", lab.WitnessNum, []string{"witness", "-c", cfgPath, "--run-dir", runDir})
		if err != nil {
			l.Stop()
			return nil, err
		}
		l.Procs = append(l.Procs, p)
	}
	for i, n := range c.Nodes {
		p, err := l.spawn(ctx, n.ID, "node", lab.NodeNum(i), []string{"node", "-c", cfgPath, "--id", n.ID, "--run-dir", runDir})
		if err != nil {
			l.Stop()
			return nil, err
		}
		l.Procs = append(l.Procs, p)
	}
	if c.Router != nil {
		p, err := l.spawn(ctx, "router", "router", 0, []string{"router", "-c", cfgPath, "--run-dir", runDir})
		if err != nil {
			l.Stop()
			return nil, err
		}
		l.Procs = append(l.Procs, p)
	}
	if err := l.writeState(); err != nil {
		l.Stop()
		return nil, err
	}
	return l, nil
}

// spawn starts one process; with a lab, in its emulated host, whose
// network namespace (when the lab has a network) has the lab address
// number labNum (0: the root namespace, where the router stays).
func (l *Local) spawn(ctx context.Context, name, kind string, labNum int, args []string) (*Proc, error) {
	logPath := filepath.Join(l.RunDir, "logs", name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	args = append(args, "--log-level", l.opts.LogLevel)
	exe := l.opts.Exe
	var host *lab.Host
	if lb := l.opts.Lab; lb != nil {
		if host, err = lb.Host(name, lb.QuotaFor(kind)); err != nil {
			pw.Close()
			return nil, fmt.Errorf("start %s %s in the lab: %w", kind, name, err)
		}
		if labNum > 0 {
			if err := host.Isolate(labNum); err != nil {
				pw.Close()
				return nil, fmt.Errorf("start %s %s in the lab: %w", kind, name, err)
			}
		}
		exe, args = host.Command(exe, args)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = mustWD()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(os.Environ(), "TANDEM_READY_FD=3")
	// Children die with us, and Ctrl-C in a terminal reaches only us: we
	// stop them in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, fmt.Errorf("start %s %s: %w", kind, name, err)
	}
	pw.Close()
	p := &Proc{Name: name, Kind: kind, PID: cmd.Process.Pid, Log: logPath, cmd: cmd, done: make(chan struct{})}
	if host != nil {
		// At once: the child is still initialising (ip netns exec, then
		// the Go runtime: the same pid) and has started nothing of its
		// own.
		if err := host.Join(p.PID); err != nil {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			return nil, fmt.Errorf("start %s %s in the lab: %w", kind, name, err)
		}
		p.Host, p.Cgroup, p.Netns = host, host.Cgroup, host.Netns
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
		p.mu.Lock()
		expected := p.expect
		p.mu.Unlock()
		if !expected {
			l.log.Error("process exited unexpectedly", "kind", kind, "name", name, "pid", p.PID, "err", p.err, "log", logPath)
		}
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			ready <- strings.TrimSpace(sc.Text())
		}
		close(ready)
	}()
	select {
	case addr, ok := <-ready:
		if ok && addr != "" {
			p.Addr = addr
			l.log.Info("started", "kind", kind, "name", name, "pid", p.PID, "addr", addr, "log", logPath)
			return p, nil
		}
		<-p.done
		return nil, fmt.Errorf("%w: %s %s exited: %v; last log lines: %s", ErrNotReady, kind, name, p.err, tail(logPath, 6))
	case <-time.After(l.opts.ReadyTimeout):
	case <-ctx.Done():
	}
	p.expect = true
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	return nil, fmt.Errorf("%w: %s %s did not serve within %s; see %s", ErrNotReady, kind, name, l.opts.ReadyTimeout, logPath)
}

func mustWD() string {
	wd, _ := os.Getwd()
	return wd
}

// Proc returns the process with the given name (node id or "router").
func (l *Local) Proc(name string) *Proc {
	for _, p := range l.Procs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Entry is the address clients connect to: the router when there is one,
// else the first node.
func (l *Local) Entry() string {
	if p := l.Proc("router"); p != nil {
		return p.Addr
	}
	for _, p := range l.Procs {
		if p.Kind == "node" {
			return p.Addr
		}
	}
	return ""
}

// UnixDSN reaches the entry process over its Unix socket (the router's,
// else the first node's unix_socket_dir), for the first configured user;
// "" when it has none.
func (l *Local) UnixDSN() string {
	c := l.opts.Config
	dir := ""
	if c.Router != nil && l.Proc("router") != nil {
		dir = c.Router.UnixSocketDir
	} else if len(c.Nodes) > 0 {
		dir = c.Nodes[0].UnixSocketDir
	}
	_, port, err := net.SplitHostPort(l.Entry())
	if dir == "" || err != nil {
		return ""
	}
	user, pass := c.InternalUser()
	dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=%s", dir, port, user, config.DefaultDatabase)
	if pass != "" && !strings.HasPrefix(pass, "SCRAM-SHA-256$") {
		dsn += " password=" + pass
	}
	return dsn
}

// DSN for the first configured user.
func (l *Local) DSN() string {
	c := l.opts.Config
	user, pass := c.InternalUser()
	cred := user
	if pass != "" && !strings.HasPrefix(pass, "SCRAM-SHA-256$") { // a verifier is no password: psql asks for it
		cred += ":" + pass
	}
	mode := "disable"
	if c.TLS.Require {
		mode = "require" // the front doors refuse plain text
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=%s", cred, l.Entry(), config.DefaultDatabase, mode)
}

// Stop terminates every process (SIGTERM, then SIGKILL after 30 s),
// router first, the witness last, and waits for them.
func (l *Local) Stop() {
	l.mu.Lock()
	if l.stop {
		l.mu.Unlock()
		return
	}
	l.stop = true
	l.mu.Unlock()
	for i := len(l.Procs) - 1; i >= 0; i-- {
		p := l.Procs[i]
		p.mu.Lock()
		p.expect = true
		p.mu.Unlock()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			l.log.Warn("process did not stop in 30 s; killing", "name", p.Name)
			_ = syscall.Kill(-p.PID, syscall.SIGKILL)
			<-p.done
		}
	}
	_ = os.Remove(filepath.Join(l.RunDir, "cluster.json"))
}

type state struct {
	Cluster string  `json:"cluster"`
	Design  string  `json:"design"`
	DSN     string  `json:"dsn"`
	Procs   []*Proc `json:"procs"`
	Started string  `json:"started"`
	// UpPID is the process that started them (`tandem up`): SIGTERM to it
	// stops them all (`tandem down`).
	UpPID int `json:"up_pid,omitempty"`
}

func (l *Local) writeState() error {
	b, _ := json.MarshalIndent(state{Cluster: l.opts.Config.Name, Design: l.opts.Config.Design, DSN: l.DSN(), Procs: l.Procs,
		Started: time.Now().Format(time.RFC3339), UpPID: os.Getpid()}, "", "  ")
	return os.WriteFile(filepath.Join(l.RunDir, "cluster.json"), b, 0o600)
}

// ReadUpPID returns the PID of the `tandem up` that recorded runDir's
// state (ErrNotExist: none runs from there).
func ReadUpPID(runDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(runDir, "cluster.json"))
	if err != nil {
		return 0, err
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(runDir, "cluster.json"), err)
	}
	if s.UpPID <= 0 {
		return 0, fmt.Errorf("%s names no `tandem up` process (written by an older build): stop it with Ctrl-C where it runs", filepath.Join(runDir, "cluster.json"))
	}
	return s.UpPID, nil
}

// RemoveState removes runDir's record of a `tandem up` that no longer
// runs.
func RemoveState(runDir string) error {
	return os.Remove(filepath.Join(runDir, "cluster.json"))
}

// ReadState returns the processes a running `tandem up` recorded.
func ReadState(runDir string) ([]*Proc, error) {
	b, err := os.ReadFile(filepath.Join(runDir, "cluster.json"))
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return s.Procs, nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
