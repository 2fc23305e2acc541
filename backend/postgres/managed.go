// Package postgres is tandem's PostgreSQL back end: an external server reached
// by DSN, or a managed one whose data directory, initdb and server process
// tandem owns.
//
// It owns the life cycle of a managed server (initdb, configuration, start,
// readiness, stop); in the replicated designs it also owns the back-end side
// of a client session (pgwire.Backend over pgconn, values passed as raw
// protocol bytes), writeset capture by triggers, apply, and re-seeding with
// pg_dump / pg_restore. It must not read or write the client socket (pgwire)
// nor make routing decisions (router); the standalone design does not use its
// sessions at all: the router relays frames to the server.
package postgres

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrBinariesNotFound means initdb/postgres could not be located.
var ErrBinariesNotFound = errors.New("postgres binaries not found")

// ErrNoCluster means a data directory that should hold a cluster does not.
var ErrNoCluster = errors.New("no PostgreSQL cluster")

// ErrNotReady means the server did not accept connections in time.
var ErrNotReady = errors.New("postgres server did not become ready")

// ManagedConfig describes a server tandem runs itself.
type ManagedConfig struct {
	// DataDir is the PostgreSQL data directory (created by initdb if absent).
	DataDir string
	// BinDir holds initdb and postgres; empty means search PATH and the
	// usual Debian location /usr/lib/postgresql/*/bin.
	BinDir string
	// Port names the server's Unix socket (DataDir/.s.PGSQL.Port), and
	// with TCP its 127.0.0.1 port; 0: 5432 on the socket alone (the
	// directory is private, so nothing can collide), a free port with TCP.
	Port int
	// TCP also opens 127.0.0.1:Port, trusting every local OS user as any
	// role, superuser included: for benchmarks and tests that compare
	// against a plain server, never for a node. Without it the server
	// listens on its Unix socket only, in the 0700 data directory, which
	// only the server's OS user and root can reach.
	TCP bool
	// Avoid lists ports a free pick must not take: ports the cluster file
	// gives to listeners that are not bound yet (the node binds its own
	// after its server is up), which the kernel may well call free.
	Avoid []int
	// Settings are extra postgresql.conf lines (name -> value), e.g.
	// synchronous_commit=off.
	Settings map[string]string
	// Listen is a TCP address list (PostgreSQL's listen_addresses) the
	// server opens beside its socket, on Port, for the physical engine's
	// WAL streams; HBA is then appended to pg_hba.conf and must admit only
	// what should come in over it (the replication role from the
	// cluster's hosts). Empty: the socket alone (or TCP above).
	Listen string
	HBA    string
	// Ident is the whole pg_ident.conf (user name maps the HBA lines
	// name); empty: one with no map.
	Ident string
	// NoInitdb: the data directory must already hold a cluster (a base
	// backup); a missing one is an error, never a fresh initdb.
	NoInitdb bool
	// LogFile receives the server's output; empty means DataDir/../postgres.log.
	LogFile string
	// SocketDir holds the server's Unix socket (empty: DataDir). The
	// physical engine keeps it out of the data directory: pg_rewind copies
	// every file of its source's data directory and cannot read a socket.
	SocketDir string
	// Logger for life-cycle events; nil means slog.Default().
	Logger *slog.Logger
}

// Managed is a running managed server.
type Managed struct {
	cfg  ManagedConfig
	port int
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	once sync.Once

	mu     sync.Mutex // frozen; Freeze, Thaw and the kill of a frozen server
	frozen bool
}

// FindBinDir returns the directory holding initdb and postgres.
func FindBinDir(configured string) (string, error) {
	if configured != "" {
		if _, err := os.Stat(filepath.Join(configured, "postgres")); err != nil {
			return "", fmt.Errorf("%w: %s has no postgres binary (set bin_dir to the directory holding initdb and postgres)", ErrBinariesNotFound, configured)
		}
		return configured, nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // a symlink on PATH: use the real bin dir, which has every tool
		}
		return filepath.Dir(p), nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(matches) > 0 {
		// Highest version last in lexical order for same digit count; good enough.
		return filepath.Dir(matches[len(matches)-1]), nil
	}
	return "", fmt.Errorf("%w: install PostgreSQL (apt-get install -y postgresql) or set bin_dir", ErrBinariesNotFound)
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePortAvoiding is FreePort that never returns one of avoid.
func freePortAvoiding(avoid []int) (int, error) {
	for i := 0; i < 64; i++ {
		p, err := FreePort()
		if err != nil {
			return 0, err
		}
		if !slices.Contains(avoid, p) {
			return p, nil
		}
	}
	return 0, errors.New("no free port outside the cluster file's ports")
}

// StartManaged initialises (if needed) and starts a PostgreSQL server as a
// child process. When tandem runs as root, the server runs as the "postgres"
// OS user, which PostgreSQL requires. The server is killed if this process
// dies (Pdeathsig), so nothing is left running after a SIGKILL.
func StartManaged(ctx context.Context, cfg ManagedConfig) (*Managed, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	bin, err := FindBinDir(cfg.BinDir)
	if err != nil {
		return nil, err
	}
	cfg.BinDir = bin
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	cfg.DataDir = dataDir
	if cfg.LogFile == "" {
		cfg.LogFile = filepath.Join(filepath.Dir(dataDir), "postgres.log")
	}
	cred, err := ServerCredential()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	if cred != nil {
		if err := prepareForUser(dataDir, cfg.LogFile, cred); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) && cfg.NoInitdb {
		return nil, fmt.Errorf("%w: %s holds no PostgreSQL cluster (expected a base backup)", ErrNoCluster, dataDir)
	} else if errors.Is(err, os.ErrNotExist) {
		log.Info("initdb", "data_dir", dataDir)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", dataDir, "-U", "postgres",
			"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb %s: %w: %s", dataDir, err, lastLines(string(out), 5))
		}
	}
	port := cfg.Port
	if port == 0 && !cfg.TCP {
		port = 5432
	}
	if port == 0 {
		if port, err = freePortAvoiding(cfg.Avoid); err != nil {
			return nil, err
		}
	}
	if cfg.SocketDir == "" {
		cfg.SocketDir = dataDir
	}
	if sock := socketPath(cfg.SocketDir, port); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("%w: the server's Unix socket %s would be %d bytes, over the system's %d: use a shorter data_dir", ErrSocketPath, sock, len(sock), maxSocketPath)
	}
	if err := writeConf(dataDir, port, cfg, cred); err != nil {
		return nil, err
	}
	if err := clearStaleLock(ctx, dataDir, log); err != nil {
		return nil, err
	}
	// The socket's name no longer changes between starts, so its lock file
	// from a postmaster killed with its node must go as postmaster.pid does.
	if err := clearStaleLockFile(ctx, socketPath(cfg.SocketDir, port)+".lock", log); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open postgres log: %w", err)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", dataDir)
	// The server's own libpq clients (a standby's WAL receiver) must not
	// take the node's PG* client variables (PGPASSWORD would override
	// the passfile primary_conninfo names).
	cmd.Env = serverEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	m := &Managed{cfg: cfg, port: port, cmd: cmd, done: make(chan struct{})}
	go func() {
		m.err = cmd.Wait()
		logf.Close()
		close(m.done)
	}()
	if err := m.waitReady(ctx, 60*time.Second); err != nil {
		m.Stop()
		return nil, fmt.Errorf("%w (log: %s): %s", err, cfg.LogFile, tailFile(cfg.LogFile, 5))
	}
	log.Info("postgres started", "data_dir", dataDir, "socket", socketPath(cfg.SocketDir, port), "tcp", cfg.TCP, "pid", cmd.Process.Pid)
	return m, nil
}

func (m *Managed) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-m.done:
			return fmt.Errorf("%w: server exited: %v", ErrNotReady, m.err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := pgconn.Connect(cctx, m.DSN("postgres"))
		cancel()
		if err == nil {
			c.Close(context.Background())
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ErrNotReady
}

// Port is the server's port: the number in its socket's name, and its
// 127.0.0.1 port when it was started with TCP.
func (m *Managed) Port() int { return m.port }

// Socket is the path of the server's Unix socket.
func (m *Managed) Socket() string { return socketPath(m.socketDir(), m.port) }

// socketDir is where the server's Unix socket is (ManagedConfig.SocketDir).
func (m *Managed) socketDir() string {
	if m.cfg.SocketDir != "" {
		return m.cfg.SocketDir
	}
	return m.cfg.DataDir
}

// TCP reports whether the server also listens on 127.0.0.1.
func (m *Managed) TCP() bool { return m.cfg.TCP }

// maxSocketPath is sun_path's size on Linux less its NUL.
const maxSocketPath = 107

// ErrSocketPath means the data directory is too deep for a Unix socket.
var ErrSocketPath = errors.New("unix socket path too long")

func socketPath(dir string, port int) string {
	return filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port))
}

// PID of the postmaster.
func (m *Managed) PID() int { return m.cmd.Process.Pid }

// DataDir of the server.
func (m *Managed) DataDir() string { return m.cfg.DataDir }

// Done is closed when the server process exits.
func (m *Managed) Done() <-chan struct{} { return m.done }

// DSN for the superuser "postgres" on the given database: over TCP when
// the server has it, else over its Unix socket (reachable by root and the
// server's OS user only).
func (m *Managed) DSN(database string) string {
	if !m.cfg.TCP {
		return m.SocketDSN(database)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", m.port, database)
}

// SocketDSN reaches the server over its Unix socket (in the data
// directory): cheaper than TCP loopback for a node beside its server.
func (m *Managed) SocketDSN(database string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", m.socketDir(), m.port, database)
}

// Stop shuts the server down (fast mode: SIGINT), escalating to SIGKILL
// after 30 s. It is safe to call more than once. A frozen server is killed
// (every process of it), never continued.
func (m *Managed) Stop() error {
	m.once.Do(func() {
		if m.killIfFrozen() {
			return
		}
		_ = syscall.Kill(m.cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
		}
	})
	return nil
}

// StopImmediate shuts the server down in immediate mode (SIGQUIT: every
// backend quits at once, no shutdown checkpoint, crash recovery at the
// next start), escalating to SIGKILL of its process group after 10 s. A
// fast shutdown waits for the WAL senders to ship everything to their
// standbys, which a standby cut off by the network never confirms (the
// postmaster lingers until wal_sender_timeout): a fence must not wait for
// that. Safe to call more than once, and after Stop. A frozen server is
// killed, never continued.
func (m *Managed) StopImmediate() error {
	m.once.Do(func() {
		if m.killIfFrozen() {
			return
		}
		_ = syscall.Kill(m.cmd.Process.Pid, syscall.SIGQUIT)
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
		}
	})
	return nil
}

// Kill stops the server with SIGKILL (a crash), for fault tests.
func (m *Managed) Kill() {
	m.once.Do(func() {
		if m.killIfFrozen() {
			return
		}
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.done
	})
}

// ServerCredential is the OS user PostgreSQL programs run as: the
// "postgres" user when tandem runs as root (PostgreSQL refuses root), nil
// (this process's user) otherwise.
func ServerCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root: PostgreSQL refuses root and there is no \"postgres\" user to run it as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// PrepareForUser is prepareForUser for other packages (the physical
// engine's base backups): nothing to do when cred is nil.
func PrepareForUser(dataDir, logFile string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return prepareForUser(dataDir, logFile, cred)
}

// prepareForUser gives the postgres user the data directory and log file and
// makes sure it can traverse every ancestor directory.
func prepareForUser(dataDir, logFile string, cred *syscall.Credential) error {
	if err := os.Chown(dataDir, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("chown %s: %w", dataDir, err)
	}
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("create postgres log: %w", err)
	}
	f.Close()
	if err := os.Chown(logFile, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("chown %s: %w", logFile, err)
	}
	for d := filepath.Dir(dataDir); d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("make %s traversable for the postgres user: %w", d, err)
			}
		}
	}
	return nil
}

// hbaSocket is the managed server's whole pg_hba.conf without TCP: the
// socket's directory is the 0700 data directory, so only the server's OS
// user and root reach it, and they are trusted (root could read the data
// files anyway). tandem authenticated the client before it connects in
// the client's name.
const hbaSocket = "# written by tandem at every start: the Unix socket only (its directory is 0700)\nlocal all all trust\n"

// hbaTCP adds 127.0.0.1 (ManagedConfig.TCP: benchmarks and tests).
const hbaTCP = hbaSocket + "host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\nlocal replication all trust\n"

func writeConf(dataDir string, port int, cfg ManagedConfig, cred *syscall.Credential) error {
	settings := cfg.Settings
	listen, hba := "''", hbaSocket
	if cfg.TCP {
		listen, hba = "'127.0.0.1'", hbaTCP
	} else if cfg.Listen != "" {
		listen, hba = "'"+cfg.Listen+"'", hbaSocket+cfg.HBA
	}
	hbaPath := filepath.Join(dataDir, "pg_hba.conf")
	if err := os.WriteFile(hbaPath, []byte(hba), 0o600); err != nil {
		return err
	}
	if cred != nil {
		_ = os.Chown(hbaPath, int(cred.Uid), int(cred.Gid))
	}
	identPath := filepath.Join(dataDir, "pg_ident.conf")
	if err := os.WriteFile(identPath, []byte("# written by tandem at every start\n"+cfg.Ident), 0o600); err != nil {
		return err
	}
	if cred != nil {
		_ = os.Chown(identPath, int(cred.Uid), int(cred.Gid))
	}
	base := map[string]string{
		"listen_addresses":           listen,
		"port":                       strconv.Itoa(port),
		"unix_socket_directories":    "'" + cfg.SocketDir + "'",
		"max_connections":            "300",
		"shared_buffers":             "'128MB'",
		"logging_collector":          "off",
		"dynamic_shared_memory_type": "posix",
	}
	for k, v := range settings {
		base[k] = v
	}
	var b strings.Builder
	b.WriteString("# written by tandem at every start; edit the node's settings in the cluster file instead\n")
	for k, v := range base {
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	path := filepath.Join(dataDir, "tandem.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return err
	}
	conf := filepath.Join(dataDir, "postgresql.conf")
	data, err := os.ReadFile(conf)
	if err != nil {
		return fmt.Errorf("read postgresql.conf: %w", err)
	}
	if !strings.Contains(string(data), "include_if_exists = 'tandem.conf'") {
		data = append(data, []byte("\ninclude_if_exists = 'tandem.conf'\n")...)
		if err := os.WriteFile(conf, data, 0o600); err != nil {
			return err
		}
	}
	if cred != nil {
		_ = os.Chown(path, int(cred.Uid), int(cred.Gid))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, " | ")
}

// clearStaleLock removes postmaster.pid when the process it names is dead
// or a zombie (a postmaster killed with its node: PostgreSQL's own check
// takes a zombie for a live server until someone reaps it). A live
// postmaster gets 10 s to go away.
func clearStaleLock(ctx context.Context, dataDir string, log *slog.Logger) error {
	return clearStaleLockFile(ctx, filepath.Join(dataDir, "postmaster.pid"), log)
}

// ClearStaleLock is clearStaleLock for the tools that run on a stopped
// data directory (the physical engine's pg_rewind, whose single-user
// crash recovery refuses a postmaster.pid naming a zombie postmaster
// killed with its node).
func ClearStaleLock(ctx context.Context, dataDir string, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	return clearStaleLock(ctx, dataDir, log)
}

// clearStaleLockFile removes one lock file (postmaster.pid, or a socket's
// .s.PGSQL.PORT.lock, which names the postmaster on its first line too)
// whose process is dead or a zombie.
func clearStaleLockFile(ctx context.Context, path string, log *slog.Logger) error {
	dataDir := filepath.Dir(path)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		first, _, _ := strings.Cut(string(b), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil || !processAlive(pid) {
			if filepath.Base(path) == "postmaster.pid" {
				killOrphans(ctx, dataDir, log)
			}
			log.Info("removing a stale lock file", "file", filepath.Base(path), "pid", pid)
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove stale %s: %w", path, err)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("another postmaster (pid %d) is running in %s; stop it first", pid, dataDir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// killOrphans ends the backends a dead postmaster left behind in
// dataDir. A postmaster killed with its node (Pdeathsig) leaves its
// backends running until they notice; one blocked writing to a client
// that stopped reading can outlive the node's restart, and a new
// postmaster then refuses to start ("pre-existing shared memory block is
// still in use"). Backends run in the data directory (their working
// directory) and each in a session of its own, so they are found by that:
// processes named postgres whose working directory is dataDir. It waits up
// to 5 s for them.
func killOrphans(ctx context.Context, dataDir string, log *slog.Logger) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := orphansIn(dataDir)
		if len(left) == 0 {
			return
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			log.Warn("backends of a dead postmaster are still running", "data_dir", dataDir, "pids", left)
			return
		}
		log.Info("ending the backends a dead postmaster left behind", "data_dir", dataDir, "pids", left)
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// orphansIn lists the live postgres processes working in dataDir.
func orphansIn(dataDir string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err != nil || cwd != dataDir {
			continue
		}
		if comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		if processAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// processAlive is true for a running (not zombie) process.
func processAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// FindTool locates a PostgreSQL program (pg_dump, pg_restore, ...): in the
// configured bin dir, next to the server, on PATH, then in Debian's
// /usr/lib/postgresql/*/bin.
func FindTool(binDir, name string) (string, error) {
	var dirs []string
	if binDir != "" {
		dirs = append(dirs, binDir)
	}
	if d, err := FindBinDir(""); err == nil {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if p := filepath.Join(d, name); fileExists(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("%w: %s (install postgresql-client)", ErrBinariesNotFound, name)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Role is a tandem user as a role of the managed server.
type Role struct {
	Name      string
	Superuser bool
}

// ErrBootstrapRole means the cluster file asks for the role "postgres"
// without superuser: it is the server's bootstrap superuser, which
// PostgreSQL does not let go of it.
var ErrBootstrapRole = errors.New(`the role "postgres" is the server's bootstrap superuser`)

// EnsureDatabase creates database name (owned by the bootstrap superuser)
// when it does not exist: the hot-standby pair replicates one database.
func (m *Managed) EnsureDatabase(ctx context.Context, name string) error {
	c, err := pgconn.Connect(ctx, m.SocketDSN("postgres"))
	if err != nil {
		return fmt.Errorf("managed postgres: connect to create database %s: %w", name, err)
	}
	defer c.Close(context.Background())
	res := c.ExecParams(ctx, "SELECT 1 FROM pg_database WHERE datname = $1", [][]byte{[]byte(name)}, nil, nil, nil).Read()
	if res.Err != nil {
		return fmt.Errorf("managed postgres: database %s: %w", name, res.Err)
	}
	if len(res.Rows) > 0 {
		return nil
	}
	if _, err := c.Exec(ctx, "CREATE DATABASE "+quoteIdent(name)).ReadAll(); err != nil {
		return fmt.Errorf("managed postgres: create database %s: %w", name, err)
	}
	return nil
}

// EnsureRoles makes each tandem user a login role of the same name,
// superuser only when granted (an existing role is altered to match), and
// gives each a database of its own name (libpq's default database) that it
// owns, when none exists. It runs as the bootstrap superuser over the
// socket: tandem's own connection.
func (m *Managed) EnsureRoles(ctx context.Context, roles []Role) error {
	c, err := pgconn.Connect(ctx, m.SocketDSN("postgres"))
	if err != nil {
		return fmt.Errorf("managed postgres: connect to create roles: %w", err)
	}
	defer c.Close(context.Background())
	return ensureRoles(ctx, c, roles, true)
}

// ensureRoles creates or alters each role, and with databases gives each
// a database of its name.
func ensureRoles(ctx context.Context, c *pgconn.PgConn, roles []Role, databases bool) error {
	for _, r := range roles {
		if r.Name == "postgres" {
			if !r.Superuser {
				return fmt.Errorf("%w: set superuser = true for it or use another name", ErrBootstrapRole)
			}
			continue
		}
		id := quoteIdent(r.Name)
		super := "NOSUPERUSER"
		if r.Superuser {
			super = "SUPERUSER"
		}
		res := c.ExecParams(ctx, "SELECT 1 FROM pg_roles WHERE rolname = $1", [][]byte{[]byte(r.Name)}, nil, nil, nil).Read()
		if res.Err != nil {
			return fmt.Errorf("managed postgres: role %s: %w", r.Name, res.Err)
		}
		stmt := "CREATE ROLE " + id + " LOGIN " + super
		if len(res.Rows) > 0 {
			stmt = "ALTER ROLE " + id + " LOGIN " + super
		}
		if _, err := c.Exec(ctx, stmt).ReadAll(); err != nil {
			return fmt.Errorf("managed postgres: %s: %w", stmt, err)
		}
		if !databases {
			continue
		}
		res = c.ExecParams(ctx, "SELECT 1 FROM pg_database WHERE datname = $1", [][]byte{[]byte(r.Name)}, nil, nil, nil).Read()
		if res.Err != nil {
			return fmt.Errorf("managed postgres: database %s: %w", r.Name, res.Err)
		}
		if len(res.Rows) == 0 {
			if _, err := c.Exec(ctx, "CREATE DATABASE "+id+" OWNER "+id).ReadAll(); err != nil {
				return fmt.Errorf("managed postgres: create database %s: %w", r.Name, err)
			}
		}
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// EnsureRolesConn is EnsureRoles on a connection the caller holds (the
// physical engine's, which commits with synchronous_commit = local).
func EnsureRolesConn(ctx context.Context, c *pgconn.PgConn, roles []Role) error {
	return ensureRoles(ctx, c, roles, true)
}

// serverEnv is env without libpq's client variables (PGPASSWORD, PGHOST,
// PGSSLMODE, ...).
func serverEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PG") {
			out = append(out, kv)
		}
	}
	return out
}
