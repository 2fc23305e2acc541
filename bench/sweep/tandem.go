package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
)

// Replication settings every hot-standby configuration shares. A 2-safe
// commit blocks (never degrades to 1-safe) so the level measured is the
// level named; the sweep checks the standby is attached before loading.
const (
	flushInterval = "10ms"
	ackTimeout    = "5s"
	onStandbyLoss = "block"
)

// tandemSystem is a running tandem cluster of one configuration.
type tandemSystem struct {
	cfg     Config
	local   *cluster.Local
	primary string // the primary's metrics (admin) address; "" for standalone
	router  string // the router's metrics address; "" without a router
	unix    bool   // clients connect over the entry's Unix socket
	exe     string // the tandem binary, for `tandem set`
	file    string // the cluster file
	level   string // the safeness level the cluster runs at now
}

// clusterFile renders the configuration's cluster file; addr hands out free
// 127.0.0.1 addresses.
func clusterFile(c Config, runDir string, addr func() (string, error)) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by tandem bench sweep: configuration %s\n", c.Name)
	fmt.Fprintf(&b, "cluster = %q\ndesign = %q\nrun_dir = %q\nlog_level = \"warn\"\n\n", "sweep-"+c.Name, c.Design, runDir)
	nodes := []string{"n1"}
	replicated := c.Design == "hot-standby" || c.Design == "single-master"
	if replicated {
		nodes = append(nodes, "n2")
		engine := c.Engine
		if engine == "" {
			engine = "writeset"
		}
		fmt.Fprintf(&b, "[replication]\nengine = %q\nsafeness = %q\ndurability = %q\nstandby_durability = %q\n", engine, c.Safeness, c.Durability, c.StandbyDurability)
		fmt.Fprintf(&b, "flush_interval = %q\nack_timeout = %q\non_standby_loss = %q\n", flushInterval, ackTimeout, onStandbyLoss)
		if c.Failover != "" {
			fmt.Fprintf(&b, "failover = %q\n", c.Failover)
		}
		if c.Design == "single-master" {
			b.WriteString("ack = \"one\"\n")
		}
		b.WriteString("\n")
	}
	if c.Policy != "" {
		// The router in front: single-master routes each transaction,
		// writes to the primary and reads by the policy.
		listen, err := addr()
		if err != nil {
			return "", err
		}
		metrics, err := addr()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "[router]\nlisten = %q\nmetrics = %q\npolicy = %q\n", listen, metrics, c.Policy)
		if c.ReadConsistency != "" {
			fmt.Fprintf(&b, "read_consistency = %q\n", c.ReadConsistency)
		}
		if c.Direct {
			b.WriteString("direct = true\n")
		}
		b.WriteString("\n")
	}
	if c.InterNode != "" {
		fmt.Fprintf(&b, "[security]\ninter_node = %q\n\n", c.InterNode)
	}
	automatic := c.Failover == "automatic"
	if automatic {
		raft, err := addr()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "[witness]\nid = \"witness\"\nraft_listen = %q\n\n", raft)
	}
	b.WriteString("[[users]]\nname = \"tandem\"\npassword = \"tandem\"\n")
	if c.sharedPhysical() {
		// use settles the pair between its levels with CHECKPOINT, as
		// the PostgreSQL pair is settled, through the cluster's own door.
		b.WriteString("superuser = true\n")
	}
	b.WriteString("\n")
	for _, id := range nodes {
		listen, err := addr()
		if err != nil {
			return "", err
		}
		metrics, err := addr()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "[[nodes]]\nid = %q\nlisten = %q\nmetrics = %q\n", id, listen, metrics)
		if replicated {
			repl, err := addr()
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "repl_listen = %q\n", repl)
		}
		if automatic {
			raft, err := addr()
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "raft_listen = %q\n", raft)
		}
		if c.Backend == "postgres" {
			b.WriteString("backend = \"postgres\"\n\n")
			continue
		}
		fmt.Fprintf(&b, "backend = \"sqlite\"\n[nodes.sqlite]\nsynchronous = %q\n\n", c.SQLiteSynchronous)
	}
	return b.String(), nil
}

// startTandem writes the cluster file into dir and starts the cluster; for
// hot-standby and single-master it waits until the standby (n2) is
// attached to the primary.
// A port taken between its pick and its process's bind
// (cluster.PortTaken) costs a new file and another start, at most twice.
func startTandem(ctx context.Context, c Config, dir, exe string, unix bool, lb *lab.Lab, log *slog.Logger) (*tandemSystem, error) {
	for attempt := 1; ; attempt++ {
		s, err := startTandemOnce(ctx, c, dir, exe, unix, lb, log)
		if err == nil || attempt == 3 || !cluster.PortTaken(err) {
			return s, err
		}
		log.Warn("a port picked for the cluster was taken before its process bound it: starting again with new ports", "config", c.Name, "attempt", attempt, "err", err)
		_ = os.RemoveAll(filepath.Join(dir, "run"))
	}
}

func startTandemOnce(ctx context.Context, c Config, dir, exe string, unix bool, lb *lab.Lab, log *slog.Logger) (*tandemSystem, error) {
	// Every address held until the file is written (picked one at a
	// time, the kernel may hand the same port out twice).
	var ports cluster.Ports
	text, err := clusterFile(c, filepath.Join(dir, "run"), ports.Addr)
	ports.Release()
	if err != nil {
		return nil, err
	}
	if unix {
		// Every front door also on a Unix socket (--unix): the
		// workload's clients connect to the entry's.
		line := fmt.Sprintf("unix_socket_dir = %q\n", filepath.Join(dir, "s"))
		text = strings.ReplaceAll(text, "[router]\n", "[router]\n"+line)
		text = strings.ReplaceAll(text, "[[nodes]]\n", "[[nodes]]\n"+line)
	}
	file := filepath.Join(dir, "cluster.toml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("write cluster file: %w", err)
	}
	cc, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	lc, err := cluster.Start(ctx, cluster.Options{Config: cc, Exe: exe, Logger: log, LogLevel: "warn", Lab: lb})
	if err != nil {
		return nil, fmt.Errorf("start cluster %s: %w", c.Name, err)
	}
	s := &tandemSystem{cfg: c, local: lc, unix: unix, exe: exe, file: file, level: c.Safeness}
	if cc.Router != nil {
		s.router = cc.Router.Metrics
	}
	if c.Design == "hot-standby" || c.Design == "single-master" {
		s.primary = cc.Nodes[0].Metrics
		if err := s.waitStandby(ctx, 60*time.Second, false); err != nil {
			lc.Stop()
			return nil, err
		}
	}
	return s, nil
}

func (s *tandemSystem) dsn() string {
	if s.unix {
		return s.local.UnixDSN()
	}
	return s.local.DSN()
}

// exited reports a node process that is no longer running (a crash during
// the run makes the measurement meaningless).
func (s *tandemSystem) exited() error {
	for _, p := range s.local.Procs {
		select {
		case <-p.Done():
			return fmt.Errorf("%s %s (pid %d) exited during the run; see its log %s", p.Kind, p.Name, p.PID, p.Log)
		default:
		}
	}
	return nil
}

func (s *tandemSystem) logDir() string { return filepath.Join(s.local.RunDir, "logs") }

// pause stops (SIGSTOP) the cluster's tandem processes while another
// system of an interleaved round is measured: an idle node still polls
// its server and renews what it holds (a physical-engine pair about 0.08
// of a core), which the other system's window would otherwise pay. Its
// PostgreSQL servers keep running (idle, they cost next to nothing).
// A cluster with automatic failover is not stopped: its primary's lease
// would lapse meanwhile, and the coordinator, continued, would fail over
// (seen: "lease_seen_ago=1m13s" at the resume, then `tandem set` refused
// by the frozen old primary); it stays up, idle, renewing its lease, a
// cost automatic failover has anyway.
func (s *tandemSystem) pause() {
	if s.cfg.Failover == "automatic" {
		return
	}
	s.signal(syscall.SIGSTOP)
}

// resume continues what pause stopped.
func (s *tandemSystem) resume() {
	if s.cfg.Failover == "automatic" {
		return
	}
	s.signal(syscall.SIGCONT)
}

func (s *tandemSystem) signal(sig syscall.Signal) {
	for _, p := range s.local.Procs {
		if p.PID > 0 {
			_ = syscall.Kill(p.PID, sig)
		}
	}
}

// use switches the physical-engine pair, which serves its four levels as
// PostgreSQL's own pair does (Config.setup), to c's level with `tandem
// set`, and settles it as the pair is settled between its levels (VACUUM
// and CHECKPOINT through the cluster's entry, whose user is a superuser
// in these configurations, then the standby caught up). Every other
// tandem configuration has a cluster of its own.
func (s *tandemSystem) use(ctx context.Context, c Config) error {
	if !c.sharedPhysical() {
		return nil
	}
	if c.Safeness != s.level {
		out, err := exec.CommandContext(ctx, s.exe, "set", "-c", s.file, "safeness="+c.Safeness).CombinedOutput()
		if err != nil {
			return fmt.Errorf("configuration %s: tandem set safeness=%s: %w: %s", c.Name, c.Safeness, err, strings.TrimSpace(string(out)))
		}
		s.level = c.Safeness
	}
	conn, err := pgx.Connect(ctx, s.dsn())
	if err != nil {
		return fmt.Errorf("configuration %s: connect: %w", c.Name, err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{"VACUUM", "CHECKPOINT"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("configuration %s: %s: %w", c.Name, q, err)
		}
	}
	return s.waitStandby(ctx, 5*time.Minute, true)
}

// settled waits, after the load, until the standby has applied everything:
// the measured window must not pay for the load's replication backlog.
func (s *tandemSystem) settled(ctx context.Context) error {
	if s.primary == "" {
		return nil
	}
	return s.waitStandby(ctx, 5*time.Minute, true)
}

func (s *tandemSystem) stop() { s.local.Stop() }

// nodeStatus is the part of a node's /status the sweep reads.
type nodeStatus struct {
	Repl *struct {
		Role     string               `json:"role"`
		Degraded bool                 `json:"degraded"`
		Assigned uint64               `json:"assigned_gsn"`
		Standbys map[string][3]uint64 `json:"standbys"` // received, durable, applied
	} `json:"replication"`
	// Physical: the physical engine's view (its WAL streams).
	Physical *struct {
		LSN      string `json:"lsn"`
		Replicas []struct {
			Node     string `json:"node"`
			State    string `json:"state"`
			Replayed string `json:"replay_lsn"`
		} `json:"replicas"`
	} `json:"physical"`
}

// waitStandby polls the primary's /status until a standby is attached
// (and, with caughtUp, has applied the primary's last GSN).
func (s *tandemSystem) waitStandby(ctx context.Context, limit time.Duration, caughtUp bool) error {
	cl := http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(limit)
	last := "no answer"
	for {
		st, err := getStatus(ctx, &cl, s.primary)
		switch {
		case err != nil:
			last = err.Error()
		case st.Repl == nil:
			last = "no replication section in /status"
		case st.Repl.Role != "primary":
			last = "n1 is " + st.Repl.Role + ", not primary"
		case st.Physical != nil:
			// The physical engine: a standby streams; caught up when it
			// replayed the primary's WAL position.
			last = "no standby streaming"
			for _, r := range st.Physical.Replicas {
				if r.State == "streaming" {
					if !caughtUp || r.Replayed == st.Physical.LSN {
						return nil
					}
					last = fmt.Sprintf("standby %s replayed %s of %s", r.Node, r.Replayed, st.Physical.LSN)
				}
			}
		case len(st.Repl.Standbys) == 0:
			last = "no standby attached"
		default:
			if !caughtUp {
				return nil
			}
			done := true
			for id, pos := range st.Repl.Standbys {
				if pos[2] < st.Repl.Assigned {
					done = false
					last = fmt.Sprintf("standby %s applied GSN %d of %d", id, pos[2], st.Repl.Assigned)
				}
			}
			if done {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("configuration %s: standby not ready within %s (%s)", s.cfg.Name, limit, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func getStatus(ctx context.Context, cl *http.Client, addr string) (*nodeStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /status: %s", resp.Status)
	}
	var st nodeStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("decode /status: %w", err)
	}
	return &st, nil
}

func (s *tandemSystem) standbyLag(ctx context.Context) (int64, string, bool) {
	if s.primary == "" {
		return 0, "", false
	}
	cl := http.Client{Timeout: 2 * time.Second}
	st, err := getStatus(ctx, &cl, s.primary)
	if err != nil || st.Repl == nil || len(st.Repl.Standbys) == 0 {
		return 0, "", false
	}
	var lag int64
	for _, pos := range st.Repl.Standbys {
		lag = max(lag, int64(st.Repl.Assigned)-int64(pos[2]))
	}
	return lag, "GSN", true
}

// degraded tells whether the primary runs 1-safe for lack of a standby
// (never expected with on_standby_loss = block; checked after each run).
func (s *tandemSystem) degraded(ctx context.Context) bool {
	if s.primary == "" {
		return false
	}
	cl := http.Client{Timeout: 2 * time.Second}
	st, err := getStatus(ctx, &cl, s.primary)
	return err == nil && st.Repl != nil && st.Repl.Degraded
}

// routed reads how many transactions the router has sent to each node so
// far, from its public /status (ok false without a router).
func (s *tandemSystem) routed(ctx context.Context) (map[string]int64, bool) {
	if s.router == "" {
		return nil, false
	}
	cl := http.Client{Timeout: 2 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.router+"/status", nil)
	if err != nil {
		return nil, false
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var nodes []struct {
		ID           string `json:"id"`
		Transactions int64  `json:"transactions"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&nodes) != nil {
		return nil, false
	}
	out := map[string]int64{}
	for _, n := range nodes {
		out[n.ID] += n.Transactions
	}
	return out, true
}
