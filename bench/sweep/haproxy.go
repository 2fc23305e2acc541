package sweep

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/pgwire"
)

// ErrNoHAProxy means the haproxy binary is not installed; the message
// names the fix.
var ErrNoHAProxy = errors.New("haproxy is not installed (apt-get install haproxy, or scripts/install-deps.sh)")

// HAProxy's settings, as Patroni's example haproxy.cfg has them (the
// stack users assemble instead of tandem's pair: HAProxy in TCP mode in
// front of PostgreSQL's streaming pair, a health check that sends traffic
// only to the primary). maxconn is raised from the example's 100 so the
// proxy never queues the benchmark's clients.
const (
	haproxyMaxConn        = 2000
	haproxyTimeoutClient  = "30m"
	haproxyTimeoutServer  = "30m"
	haproxyTimeoutConnect = "4s"
	haproxyTimeoutCheck   = "5s"
	// default-server inter 3s fall 3 rise 2 on-marked-down shutdown-sessions
	haproxyInter = "3s"
	haproxyFall  = 3
	haproxyRise  = 2
	// primaryCheckPath is the REST endpoint HAProxy checks; Patroni's
	// answers 200 on the leader and 503 elsewhere.
	primaryCheckPath = "/primary"
)

// haproxyDirs are where FindHAProxy looks when haproxy is not on PATH.
var haproxyDirs = []string{"/usr/sbin", "/usr/local/sbin"}

// FindHAProxy returns the haproxy binary: on PATH, else where Debian puts
// it (/usr/sbin, often not on a user's PATH).
func FindHAProxy() (string, error) {
	return findSbin("haproxy", haproxyDirs, ErrNoHAProxy)
}

// findSbin finds the executable name on PATH, else in dirs (where Debian
// installs daemons, often not on a user's PATH); notFound when neither.
func findSbin(name string, dirs []string, notFound error) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", notFound
}

// haproxyBackend is one PostgreSQL server behind HAProxy.
type haproxyBackend struct {
	Name string
	// Port is the server's PostgreSQL port on 127.0.0.1.
	Port int
	// CheckPort is the port of its primary check (Patroni's REST API port).
	CheckPort int
}

// haproxyConfig is what haproxy.cfg says.
type haproxyConfig struct {
	// Listen is the port clients connect to (127.0.0.1).
	Listen int
	// StatsSocket is the Unix socket of HAProxy's runtime API (mode 600,
	// level user: read-only statistics, no listener on the network).
	StatsSocket string
	// UnixDir, when set, also binds the listen section to the Unix
	// socket UnixDir/.s.PGSQL.<Listen> (the sweep's --unix).
	UnixDir  string
	Backends []haproxyBackend
}

// render writes haproxy.cfg: Patroni's example (mode tcp, a listen section
// for the primary whose servers are both nodes, an HTTP check of each
// node's primary endpoint, its timeouts), bound to 127.0.0.1.
func (h haproxyConfig) render() string {
	var b strings.Builder
	b.WriteString("# written by tandem bench sweep: HAProxy in front of PostgreSQL's streaming pair,\n")
	b.WriteString("# configured as Patroni's example haproxy.cfg (the check endpoint answers as Patroni's\n")
	b.WriteString("# REST API does: 200 on the primary, 503 on a server in recovery).\n")
	fmt.Fprintf(&b, "global\n    maxconn %d\n", haproxyMaxConn)
	fmt.Fprintf(&b, "    stats socket %s mode 600 level user\n\n", h.StatsSocket)
	b.WriteString("defaults\n    mode tcp\n    retries 2\n")
	fmt.Fprintf(&b, "    timeout client %s\n    timeout connect %s\n    timeout server %s\n    timeout check %s\n\n",
		haproxyTimeoutClient, haproxyTimeoutConnect, haproxyTimeoutServer, haproxyTimeoutCheck)
	b.WriteString("listen primary\n")
	fmt.Fprintf(&b, "    bind 127.0.0.1:%d\n", h.Listen)
	if h.UnixDir != "" {
		fmt.Fprintf(&b, "    bind %s mode 666\n", pgwire.UnixSocketPath(h.UnixDir, h.Listen))
	}
	fmt.Fprintf(&b, "    maxconn %d\n", haproxyMaxConn)
	fmt.Fprintf(&b, "    option httpchk OPTIONS %s\n    http-check expect status 200\n", primaryCheckPath)
	fmt.Fprintf(&b, "    default-server inter %s fall %d rise %d on-marked-down shutdown-sessions\n", haproxyInter, haproxyFall, haproxyRise)
	for _, s := range h.Backends {
		fmt.Fprintf(&b, "    server %s 127.0.0.1:%d maxconn %d check port %d\n", s.Name, s.Port, haproxyMaxConn, s.CheckPort)
	}
	return b.String()
}

// primaryCheck answers HAProxy's health check for one PostgreSQL server,
// as Patroni's REST API does for GET/OPTIONS /primary: 200 when the server
// is not in recovery, 503 when it is (or cannot be reached). It keeps one
// connection to its server over the Unix socket, as Patroni does. It
// listens on 127.0.0.1 only, serves nothing but that status and lives as
// long as the benchmark's HAProxy.
type primaryCheck struct {
	dsn string
	srv *http.Server
	ln  net.Listener

	mu   sync.Mutex
	conn *pgx.Conn
}

func startPrimaryCheck(dsn string) (*primaryCheck, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for HAProxy's primary check: %w", err)
	}
	c := &primaryCheck{dsn: dsn, ln: ln}
	c.srv = &http.Server{Handler: c, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

func (c *primaryCheck) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

// ServeHTTP answers the check.
func (c *primaryCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != primaryCheckPath {
		http.NotFound(w, r)
		return
	}
	primary, err := c.isPrimary(r.Context())
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case primary:
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "primary\n")
	default:
		http.Error(w, "in recovery", http.StatusServiceUnavailable)
	}
}

func (c *primaryCheck) isPrimary(ctx context.Context) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	if c.conn == nil {
		conn, err := pgx.Connect(ctx, c.dsn)
		if err != nil {
			return false, fmt.Errorf("connect: %w", err)
		}
		c.conn = conn
	}
	var inRecovery bool
	if err := c.conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil {
		_ = c.conn.Close(context.Background())
		c.conn = nil
		return false, fmt.Errorf("pg_is_in_recovery(): %w", err)
	}
	return !inRecovery, nil
}

func (c *primaryCheck) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = c.srv.Shutdown(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		_ = c.conn.Close(ctx)
		c.conn = nil
	}
}

// HAProxy is a haproxy process run by the sweep in front of a PostgreSQL
// pair, with the primary checks it polls. Its files (haproxy.cfg,
// haproxy.log, the stats socket) are in its directory.
type HAProxy struct {
	cfg    haproxyConfig
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	checks []*primaryCheck
	once   sync.Once
}

// StartHAProxy writes dir/haproxy.cfg for the servers (the first one is
// expected to be the primary), starts haproxy on a free 127.0.0.1 port
// and waits until its checks have marked exactly that server UP and every
// other DOWN, so no client is sent to the standby.
func StartHAProxy(ctx context.Context, dir string, servers []*postgres.Managed, log *slog.Logger) (*HAProxy, error) {
	if log == nil {
		log = slog.Default()
	}
	bin, err := FindHAProxy()
	if err != nil {
		return nil, err
	}
	port, err := postgres.FreePort()
	if err != nil {
		return nil, fmt.Errorf("find a port for HAProxy: %w", err)
	}
	h := &HAProxy{dir: dir, done: make(chan struct{})}
	h.cfg = haproxyConfig{Listen: port, StatsSocket: filepath.Join(dir, "haproxy.sock"), UnixDir: dir}
	for i, m := range servers {
		c, err := startPrimaryCheck(m.SocketDSN("postgres"))
		if err != nil {
			h.Stop()
			return nil, err
		}
		h.checks = append(h.checks, c)
		h.cfg.Backends = append(h.cfg.Backends, haproxyBackend{Name: fmt.Sprintf("pg%d", i+1), Port: m.Port(), CheckPort: c.port()})
	}
	cfgFile := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgFile, []byte(h.cfg.render()), 0o600); err != nil {
		h.Stop()
		return nil, fmt.Errorf("write %s: %w", cfgFile, err)
	}
	logFile, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		h.Stop()
		return nil, fmt.Errorf("create HAProxy's log: %w", err)
	}
	defer logFile.Close()
	// -db: stay in the foreground (a child of the sweep), messages to stderr.
	h.cmd = exec.Command(bin, "-db", "-f", cfgFile)
	h.cmd.Stdout, h.cmd.Stderr = logFile, logFile
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := h.cmd.Start(); err != nil {
		h.cmd = nil
		h.Stop()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	log.Info("HAProxy started", "pid", h.cmd.Process.Pid, "listen", port, "config", cfgFile)
	if err := h.waitRouting(ctx, 60*time.Second); err != nil {
		h.Stop()
		return nil, err
	}
	return h, nil
}

// Port is the port clients connect to.
func (h *HAProxy) Port() int { return h.cfg.Listen }

// DSN reaches the database through HAProxy.
func (h *HAProxy) DSN(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", h.cfg.Listen, database)
}

// UnixDSN reaches the database through HAProxy's Unix socket.
func (h *HAProxy) UnixDSN(database string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", h.cfg.UnixDir, h.cfg.Listen, database)
}

// Done is closed when the haproxy process has exited.
func (h *HAProxy) Done() <-chan struct{} { return h.done }

// PID of the haproxy process (0 before it started).
func (h *HAProxy) PID() int {
	if h.cmd == nil || h.cmd.Process == nil {
		return 0
	}
	return h.cmd.Process.Pid
}

// exited tells why haproxy stopped running, or nil while it runs.
func (h *HAProxy) exited() error {
	select {
	case <-h.done:
		return fmt.Errorf("HAProxy (pid %d) exited during the run; see %s", h.PID(), filepath.Join(h.dir, "haproxy.log"))
	default:
		return nil
	}
}

// ServerStat is one server line of HAProxy's statistics.
type ServerStat struct {
	Name string
	// Status is UP, DOWN, "UP 1/2" (going down), "DOWN 1/2" (going up)...
	Status string
	// Sessions is the number of connections HAProxy has sent to it
	// (stot); Current those open now (scur).
	Sessions int64
	Current  int64
}

// Stats reads the servers' lines of `show stat` on the stats socket.
func (h *HAProxy) Stats() ([]ServerStat, error) {
	conn, err := net.DialTimeout("unix", h.cfg.StatsSocket, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("HAProxy stats socket: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return nil, fmt.Errorf("HAProxy stats socket: %w", err)
	}
	return parseStats(bufio.NewReader(conn))
}

// parseStats reads `show stat` CSV (its header line starts with "# ").
func parseStats(r io.Reader) ([]ServerStat, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read HAProxy stats: %w", err)
	}
	text := strings.TrimPrefix(strings.TrimSpace(string(b)), "# ")
	cr := csv.NewReader(strings.NewReader(text))
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("parse HAProxy stats: %w", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("parse HAProxy stats: empty answer")
	}
	col := map[string]int{}
	for i, n := range recs[0] {
		col[n] = i
	}
	for _, n := range []string{"svname", "status", "stot", "scur"} {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("parse HAProxy stats: no %s column in %q", n, strings.Join(recs[0], ","))
		}
	}
	var out []ServerStat
	for _, rec := range recs[1:] {
		if len(rec) <= max(col["svname"], col["status"], col["stot"], col["scur"]) {
			continue
		}
		name := rec[col["svname"]]
		if name == "FRONTEND" || name == "BACKEND" {
			continue
		}
		s := ServerStat{Name: name, Status: rec[col["status"]]}
		s.Sessions, _ = strconv.ParseInt(rec[col["stot"]], 10, 64)
		s.Current, _ = strconv.ParseInt(rec[col["scur"]], 10, 64)
		out = append(out, s)
	}
	return out, nil
}

// waitRouting waits until the first server is UP and every other DOWN.
func (h *HAProxy) waitRouting(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last := "no statistics yet"
	for {
		if err := h.exited(); err != nil {
			log, _ := os.ReadFile(filepath.Join(h.dir, "haproxy.log"))
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(log)))
		}
		st, err := h.Stats()
		if err != nil {
			last = err.Error()
		} else if len(st) == len(h.cfg.Backends) {
			ok := true
			var states []string
			for i, s := range st {
				want := "DOWN"
				if i == 0 {
					want = "UP"
				}
				ok = ok && s.Status == want
				states = append(states, s.Name+" "+s.Status)
			}
			if ok {
				return nil
			}
			last = strings.Join(states, ", ")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("HAProxy did not route to the primary only within %s: %s", limit, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop kills haproxy (its process group), waits for it and stops the
// checks; safe to call more than once.
func (h *HAProxy) Stop() {
	h.once.Do(func() {
		if h.cmd != nil && h.cmd.Process != nil {
			_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
			<-h.done
		}
		for _, c := range h.checks {
			c.stop()
		}
		_ = os.Remove(h.cfg.StatsSocket)
	})
}
