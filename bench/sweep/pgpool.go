package sweep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
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
)

// ErrNoPgpool means the pgpool binary (pgpool-II) is not installed; the
// message names the fix.
var ErrNoPgpool = errors.New("pgpool-II is not installed (apt-get install pgpool2, or scripts/install-deps.sh)")

// pgpool-II's settings, as seed 001 ran it (Silvestrini, listing A.4:
// pgpool-II 3.2.7 in master/slave "stream" mode, the load balancing and
// connection cache on, both nodes of weight 1, automatic failover off),
// in pgpool-II 4.3's names.
const (
	pgpoolNumInitChildren    = 110 // pre-forked children: one client each
	pgpoolMaxPool            = 10  // cached backend connections per child
	pgpoolChildLifeTime      = 30  // s an idle child lives before it is re-forked
	pgpoolConnectionLifeTime = 30  // s a cached backend connection lives unused
	pgpoolResetQueryList     = "ABORT; DISCARD ALL"
	// pgpoolUser is the role pgpool authenticates clients as (pool_passwd)
	// and checks the servers with (sr_check_user).
	pgpoolUser = "postgres"
)

// pgpoolDirs are where FindPgpool looks when pgpool is not on PATH.
var pgpoolDirs = []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/bin"}

// FindPgpool returns the pgpool binary: on PATH, else where Debian's
// pgpool2 package puts it (/usr/sbin, often not on a user's PATH).
func FindPgpool() (string, error) {
	return findSbin("pgpool", pgpoolDirs, ErrNoPgpool)
}

// pgpoolBackend is one PostgreSQL server behind pgpool-II.
type pgpoolBackend struct {
	// Port is the server's PostgreSQL port on 127.0.0.1.
	Port int
	// Weight is backend_weight: its share of the balanced reads (0: none).
	Weight int
}

// pgpoolConfig is what pgpool.conf says.
type pgpoolConfig struct {
	// Listen is the port clients connect to (127.0.0.1).
	Listen int
	// PCPPort names the PCP socket (PCP listens on no TCP address).
	PCPPort int
	// Dir holds pgpool's files: its sockets, pid file, pgpool_status,
	// pool_passwd.
	Dir      string
	Backends []pgpoolBackend
}

func (p pgpoolConfig) passwdFile() string { return filepath.Join(p.Dir, "pool_passwd") }
func (p pgpoolConfig) pidFile() string    { return filepath.Join(p.Dir, "pgpool.pid") }

// render writes pgpool.conf: streaming-replication mode with seed 001's
// load balancing and connection cache, listening on 127.0.0.1 only,
// clients authenticated by pool_hba.conf, every file in Dir.
func (p pgpoolConfig) render() string {
	var b strings.Builder
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	set := func(name string, v any) { fmt.Fprintf(&b, "%s = %v\n", name, v) }
	b.WriteString("# written by tandem bench sweep: pgpool-II in front of PostgreSQL's streaming pair,\n")
	b.WriteString("# as seed 001 ran it (listing A.4: streaming mode, load balancing, connection cache,\n")
	b.WriteString("# equal weights, automatic failover off), on 127.0.0.1 with SCRAM at its door.\n")
	set("backend_clustering_mode", q("streaming_replication"))
	b.WriteString("\n# connections: 127.0.0.1 only; PCP on its Unix socket only (pcp.conf has no user)\n")
	set("listen_addresses", q("127.0.0.1"))
	set("port", p.Listen)
	set("socket_dir", q(p.Dir))
	set("pcp_listen_addresses", q(""))
	set("pcp_port", p.PCPPort)
	set("pcp_socket_dir", q(p.Dir))
	set("wd_ipc_socket_dir", q(p.Dir))
	b.WriteString("\n# authentication: pool_hba.conf (SCRAM-SHA-256), the password in pool_passwd\n")
	set("enable_pool_hba", "on")
	set("pool_passwd", q(p.passwdFile()))
	set("allow_clear_text_frontend_auth", "off")
	set("authentication_timeout", 60)
	set("ssl", "off")
	b.WriteString("\n# pool: seed 001's\n")
	set("num_init_children", pgpoolNumInitChildren)
	set("max_pool", pgpoolMaxPool)
	set("child_life_time", pgpoolChildLifeTime)
	set("child_max_connections", 0)
	set("connection_life_time", pgpoolConnectionLifeTime)
	set("client_idle_limit", 0)
	set("connection_cache", "on")
	set("reset_query_list", q(pgpoolResetQueryList))
	b.WriteString("\n# load balancing: reads to both servers by weight, per statement; writes, and the\n")
	b.WriteString("# reads after a write in a transaction, to the primary\n")
	set("load_balance_mode", "on")
	set("statement_level_load_balance", "on")
	set("disable_load_balance_on_write", q("transaction"))
	b.WriteString("\n# checks: the primary is found at start (pg_is_in_recovery as sr_check_user); as in\n")
	b.WriteString("# seed 001 no periodic health or delay check and no automatic failover\n")
	set("sr_check_period", 0)
	set("sr_check_user", q(pgpoolUser))
	set("health_check_period", 0)
	set("failover_on_backend_error", "off")
	set("search_primary_node_timeout", 10)
	set("use_watchdog", "off")
	set("memory_cache_enabled", "off")
	set("memqcache_oiddir", q(filepath.Join(p.Dir, "oiddir")))
	b.WriteString("\n# files\n")
	set("pid_file_name", q(p.pidFile()))
	set("logdir", q(p.Dir))
	set("log_destination", q("stderr"))
	for i, s := range p.Backends {
		fmt.Fprintf(&b, "\n# n%d\n", i+1)
		set(fmt.Sprintf("backend_hostname%d", i), q("127.0.0.1"))
		set(fmt.Sprintf("backend_port%d", i), s.Port)
		set(fmt.Sprintf("backend_weight%d", i), s.Weight)
		set(fmt.Sprintf("backend_flag%d", i), q("DISALLOW_TO_FAILOVER"))
		set(fmt.Sprintf("backend_application_name%d", i), q(fmt.Sprintf("n%d", i+1)))
	}
	return b.String()
}

// pgpoolHBA is pool_hba.conf: SCRAM-SHA-256 for every client, on the
// Unix socket and on 127.0.0.1; nothing else is admitted.
const pgpoolHBA = "# written by tandem bench sweep: every client authenticates (SCRAM-SHA-256, pool_passwd)\n" +
	"local all all scram-sha-256\n" +
	"host  all all 127.0.0.1/32 scram-sha-256\n"

// pgpoolPCP is pcp.conf: no user, so PCP (on its Unix socket) admits nobody.
const pgpoolPCP = "# written by tandem bench sweep: no PCP user (the sweep does not use PCP)\n"

// passwdLine is pool_passwd's entry: the role's password in clear text
// (TEXT prefix), which pgpool needs for SCRAM with the client and, were
// the servers to ask for it, with them.
func passwdLine(user, password string) string { return user + ":TEXT" + password + "\n" }

// Pgpool is a pgpool-II process run by the sweep in front of a PostgreSQL
// pair. Its files (pgpool.conf, pool_hba.conf, pool_passwd, pcp.conf,
// pgpool.log, its pid file, pgpool_status and sockets) are in its directory.
type Pgpool struct {
	cfg      pgpoolConfig
	dir      string
	password string
	cmd      *exec.Cmd
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex // the configuration file (SetStandbyWeight)
}

// StartPgpool sets a random password on the pair's postgres role (on the
// primary, replicated to the standby), writes pgpool's files into dir for
// the servers (the first the primary, each of weight 1), starts pgpool
// on a free 127.0.0.1 port and waits until it has found the primary and
// the standby and answers through its own door.
func StartPgpool(ctx context.Context, dir string, servers []*postgres.Managed, log *slog.Logger) (*Pgpool, error) {
	if log == nil {
		log = slog.Default()
	}
	bin, err := FindPgpool()
	if err != nil {
		return nil, err
	}
	var ports [2]int
	for i := range ports {
		if ports[i], err = postgres.FreePort(); err != nil {
			return nil, fmt.Errorf("find a port for pgpool-II: %w", err)
		}
	}
	if ports[0] == ports[1] {
		ports[1]++
	}
	secret := make([]byte, 18)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("make pgpool-II's password: %w", err)
	}
	p := &Pgpool{dir: dir, password: hex.EncodeToString(secret), done: make(chan struct{})}
	p.cfg = pgpoolConfig{Listen: ports[0], PCPPort: ports[1], Dir: dir}
	for _, m := range servers {
		p.cfg.Backends = append(p.cfg.Backends, pgpoolBackend{Port: m.Port(), Weight: 1})
	}
	if len(servers) > 0 {
		if err := setRolePassword(ctx, servers[0], pgpoolUser, p.password); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name, text string
	}{
		{"pgpool.conf", p.cfg.render()},
		{"pool_hba.conf", pgpoolHBA},
		{"pool_passwd", passwdLine(pgpoolUser, p.password)},
		{"pcp.conf", pgpoolPCP},
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(f.text), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	logFile, err := os.Create(filepath.Join(dir, "pgpool.log"))
	if err != nil {
		return nil, fmt.Errorf("create pgpool-II's log: %w", err)
	}
	defer logFile.Close()
	// -n: stay in the foreground (a child of the sweep); -D: ignore any
	// pgpool_status (no node is remembered as down).
	p.cmd = exec.Command(bin, "-n", "-D", "-f", filepath.Join(dir, "pgpool.conf"),
		"-F", filepath.Join(dir, "pcp.conf"), "-a", filepath.Join(dir, "pool_hba.conf"))
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.Dir = dir // its processes' working directory says whose they are
	// Its own process group (Stop reaches its children); should the sweep
	// die, SIGINT is pgpool's fast shutdown, which ends its children and
	// removes its shared memory and sockets.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT, Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		p.cmd = nil
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	log.Info("pgpool-II started", "pid", p.cmd.Process.Pid, "listen", p.cfg.Listen, "config", filepath.Join(dir, "pgpool.conf"))
	if err := p.waitNodes(ctx, 60*time.Second, nil); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// setRolePassword gives the role its password on the server (the sweep's
// own connection, straight to the primary).
func setRolePassword(ctx context.Context, m *postgres.Managed, role, password string) error {
	c, err := pgx.Connect(ctx, m.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect to the PostgreSQL primary: %w", err)
	}
	defer c.Close(context.Background())
	q := fmt.Sprintf("ALTER ROLE %s PASSWORD '%s'", pgx.Identifier{role}.Sanitize(), password)
	if _, err := c.Exec(ctx, q); err != nil {
		return fmt.Errorf("set the password of role %s for pgpool-II: %w", role, err)
	}
	return nil
}

// Port is the port clients connect to.
func (p *Pgpool) Port() int { return p.cfg.Listen }

// DSN reaches the database through pgpool, with the password.
func (p *Pgpool) DSN(database string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", pgpoolUser, p.password, p.cfg.Listen, database)
}

// UnixDSN reaches the database through pgpool-II's Unix socket (in its
// socket_dir; pool_hba's local line asks the same SCRAM password).
func (p *Pgpool) UnixDSN(database string) string {
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable", p.cfg.Dir, p.cfg.Listen, pgpoolUser, p.password, database)
}

// Done is closed when the pgpool process has exited.
func (p *Pgpool) Done() <-chan struct{} { return p.done }

// PID of the pgpool process (0 before it started); its children are in
// the process group of that number.
func (p *Pgpool) PID() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *Pgpool) logPath() string { return filepath.Join(p.dir, "pgpool.log") }

// exited tells why pgpool stopped running, or nil while it runs.
func (p *Pgpool) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("pgpool-II (pid %d) exited during the run; see %s", p.PID(), p.logPath())
	default:
		return nil
	}
}

// PoolNode is one line of pgpool's SHOW pool_nodes.
type PoolNode struct {
	ID   int
	Port int
	// Status is pgpool's view: up, waiting (never used yet), down...
	Status string
	// Role is primary or standby, as pgpool found it.
	Role string
	// Weight is the normalised backend_weight (lb_weight).
	Weight float64
	// Selects is select_cnt: the SELECTs pgpool has sent to the node.
	Selects int64
}

// Nodes runs SHOW pool_nodes through pgpool's own door.
func (p *Pgpool) Nodes(ctx context.Context) ([]PoolNode, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		return nil, fmt.Errorf("connect through pgpool-II: %w", err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, "SHOW pool_nodes", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, fmt.Errorf("SHOW pool_nodes: %w", err)
	}
	var names []string
	for _, f := range rows.FieldDescriptions() {
		names = append(names, f.Name)
	}
	var table [][]string
	for rows.Next() {
		var line []string
		for _, v := range rows.RawValues() {
			line = append(line, string(v))
		}
		table = append(table, line)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("SHOW pool_nodes: %w", err)
	}
	return parsePoolNodes(names, table)
}

// parsePoolNodes reads SHOW pool_nodes' columns by name.
func parsePoolNodes(names []string, table [][]string) ([]PoolNode, error) {
	col := map[string]int{}
	for i, n := range names {
		col[n] = i
	}
	for _, n := range []string{"node_id", "port", "status", "lb_weight", "role", "select_cnt"} {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("parse SHOW pool_nodes: no %s column in %q", n, strings.Join(names, ","))
		}
	}
	var out []PoolNode
	for _, line := range table {
		if len(line) != len(names) {
			return nil, fmt.Errorf("parse SHOW pool_nodes: %d values for %d columns", len(line), len(names))
		}
		var n PoolNode
		var err error
		if n.ID, err = strconv.Atoi(line[col["node_id"]]); err != nil {
			return nil, fmt.Errorf("parse SHOW pool_nodes: node_id %q", line[col["node_id"]])
		}
		if n.Port, err = strconv.Atoi(line[col["port"]]); err != nil {
			return nil, fmt.Errorf("parse SHOW pool_nodes: port %q", line[col["port"]])
		}
		if n.Weight, err = strconv.ParseFloat(line[col["lb_weight"]], 64); err != nil {
			return nil, fmt.Errorf("parse SHOW pool_nodes: lb_weight %q", line[col["lb_weight"]])
		}
		if n.Selects, err = strconv.ParseInt(line[col["select_cnt"]], 10, 64); err != nil {
			return nil, fmt.Errorf("parse SHOW pool_nodes: select_cnt %q", line[col["select_cnt"]])
		}
		n.Status, n.Role = line[col["status"]], line[col["role"]]
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("parse SHOW pool_nodes: no node")
	}
	return out, nil
}

// waitNodes waits until pgpool answers through its door with the first
// node as the primary and the others as standbys, none down, and (with
// weights) each node's lb_weight as its share of the weights.
func (p *Pgpool) waitNodes(ctx context.Context, limit time.Duration, weights []int) error {
	deadline := time.Now().Add(limit)
	last := "no answer yet"
	total := 0
	for _, w := range weights {
		total += w
	}
	for {
		if err := p.exited(); err != nil {
			log, _ := os.ReadFile(p.logPath())
			return fmt.Errorf("%w: %s", err, lastLines(string(log), 20))
		}
		nodes, err := p.Nodes(ctx)
		if err != nil {
			last = err.Error()
		} else {
			ok := len(nodes) == len(p.cfg.Backends)
			var states []string
			for i, n := range nodes {
				want := "standby"
				if i == 0 {
					want = "primary"
				}
				ok = ok && n.Role == want && (n.Status == "up" || n.Status == "waiting")
				if len(weights) == len(nodes) && total > 0 {
					d := n.Weight - float64(weights[i])/float64(total)
					ok = ok && d > -0.001 && d < 0.001
				}
				states = append(states, fmt.Sprintf("node %d %s %s weight %g", n.ID, n.Role, n.Status, n.Weight))
			}
			if ok {
				return nil
			}
			last = strings.Join(states, ", ")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgpool-II did not see the primary and the standby within %s: %s", limit, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// lastLines is the end of a log, for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// SetStandbyWeight sets backend_weight of every server but the primary
// (0: every read stays on the primary, pgpool a pass-through; 1: reads
// balanced evenly), reloads pgpool (SIGHUP) and waits until SHOW
// pool_nodes shows the weights. New sessions use them.
func (p *Pgpool) SetStandbyWeight(ctx context.Context, w int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	weights := []int{1}
	for i := 1; i < len(p.cfg.Backends); i++ {
		p.cfg.Backends[i].Weight = w
		weights = append(weights, w)
	}
	path := filepath.Join(p.dir, "pgpool.conf")
	if err := os.WriteFile(path, []byte(p.cfg.render()), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syscall.Kill(p.PID(), syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload pgpool-II (pid %d): %w", p.PID(), err)
	}
	return p.waitNodes(ctx, 30*time.Second, weights)
}

// Stop shuts pgpool down (SIGINT, its fast shutdown: the children end,
// its shared memory and sockets are removed), SIGKILLs its process group
// after 15 s or whatever of the group outlives it, and removes its pid
// file and sockets; safe to call more than once.
func (p *Pgpool) Stop() {
	p.once.Do(func() {
		if p.cmd != nil && p.cmd.Process != nil {
			pid := p.cmd.Process.Pid
			_ = syscall.Kill(pid, syscall.SIGINT)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				<-p.done
			}
			// Children that outlive the parent (the group keeps its id
			// while any member lives, so this reaches no one else).
			for i := 0; i < 50 && syscall.Kill(-pid, 0) == nil; i++ {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				time.Sleep(100 * time.Millisecond)
			}
		}
		_ = os.Remove(p.cfg.pidFile())
		for _, port := range []int{p.cfg.Listen, p.cfg.PCPPort} {
			_ = os.Remove(filepath.Join(p.dir, ".s.PGSQL."+strconv.Itoa(port)))
			_ = os.Remove(filepath.Join(p.dir, ".s.PGSQL."+strconv.Itoa(port)+".lock"))
		}
	})
}
