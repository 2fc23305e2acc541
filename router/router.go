// Package router is tandem's client-facing routing: it decides which node
// serves a session and relays the session there without re-encoding.
//
// It owns session routing, node health as seen from the front door, and
// failure reporting to clients. It must not touch back-end storage or the
// replication log (node does) nor parse SQL beyond what routing needs.
package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/pgwire"
)

// ErrNoNode means no healthy node can serve the session.
var ErrNoNode = errors.New("no node available")

// Config of a router.
type Config struct {
	Nodes           []Upstream // the first is the primary (standalone: the only node)
	MaxMessageBytes int
	Logger          *slog.Logger
	Registerer      prometheus.Registerer
	// Reads routes sessions to standbys (round robin over healthy ones),
	// falling back to the primary: the router's read port.
	Reads bool
	// MessageReadTimeout bounds the time from a client message's first
	// byte to its last where the relay reads whole messages (the
	// two-goroutine relay: a TLS client; routed sessions, on the loops
	// too); 0: none. The byte-streaming relay (epoll loops, clear text or
	// TLS to the node) passes partial messages on, and the node enforces
	// its own and ends the session with FATAL 08P01.
	MessageReadTimeout time.Duration
	// QuietDialEvery: how often Watch dials a node that has no admin
	// address (its PostgreSQL server, for a node's own relay) while the
	// node is up and nothing suggested it failed (no session's connect or
	// connection broke); 0: at every probe. Each dial costs the server a
	// fork and an exit (1.9 ms of CPU measured, a 0.25-core lab host's
	// 1.5 % at two a second); a session's failed connect, or its
	// connection ending, makes Watch dial at once either way.
	QuietDialEvery time.Duration
	// Survive keeps a session whose node connection ends (a failover):
	// the write port's sessions are routed sessions (txroute.go; pinned
	// to the primary without Split), which go on on the primary known
	// then, with their prepared statements and settings (survive.go).
	// Write port only.
	Survive bool
	// Weights and ReadWeights are the nodes' weights (by position in
	// Nodes; missing or 0: 1) and weights for reads (missing: the weight;
	// 0: no reads). Policy balances reads over them (balance.go).
	Weights     []int
	ReadWeights []int
	Policy      string
	// MaxLagGSNs and MaxLagTime take a node out of read rotation while it
	// is further behind the primary (router.max_lag; neither set: 10000
	// GSNs).
	MaxLagGSNs uint64
	MaxLagTime time.Duration
	// Split routes each transaction (txroute.go): read-only ones to a
	// replica, with ReadConsistency (session, strong, bounded, eventual;
	// bounded by MaxLagGSNs / MaxLagTime) and ReadWait (how long a replica
	// may take to catch up before the primary runs the read);
	// ReadOnlyFunctions are user functions a routed read may call.
	Split bool
	// MultiMaster (with Split): every node takes writes (design
	// multi-master), so every transaction, read or write, is balanced
	// over the healthy nodes by the policy, and the read consistency
	// level holds for all of them (a node must have applied the session's
	// last commit before it serves its next transaction).
	MultiMaster bool
	// LSN: the nodes' positions are PostgreSQL WAL positions, not GSNs
	// (the physical engine; lsn.go): a session's commit position is asked
	// of the primary when a read follows a write, and a replica waits for
	// it with a DO block polling pg_last_wal_replay_lsn().
	LSN               bool
	ReadConsistency   string
	ReadWait          time.Duration
	ReadOnlyFunctions []string
}

// NodeStatus is the router's view of one node.
type NodeStatus struct {
	ID        string    `json:"id"`
	Addr      string    `json:"addr"`
	Role      string    `json:"role"`
	Epoch     uint64    `json:"epoch,omitempty"` // the epoch the node reports its role in
	Healthy   bool      `json:"healthy"`
	LastError string    `json:"last_error,omitempty"`
	Since     time.Time `json:"since"`
	// Weight and ReadWeight are the node's (nodes.weight, read_weight);
	// Draining: tandem drain; AppliedGSN and Lag (GSNs behind the
	// primary; LagTime: since the primary had the oldest GSN the node
	// lacks) from its /status at the last probe; Lagging: out of read
	// rotation for max_lag. Sessions and Transactions were routed there
	// by this router; Active transactions are open there now.
	Weight       int           `json:"weight"`
	ReadWeight   int           `json:"read_weight"`
	Draining     bool          `json:"draining"`
	AppliedGSN   uint64        `json:"applied_gsn"`
	Lag          uint64        `json:"lag"`
	LagTime      time.Duration `json:"lag_time"`
	Lagging      bool          `json:"lagging"`
	Sessions     uint64        `json:"sessions"`
	Transactions uint64        `json:"transactions"`
	Active       int           `json:"active"`
}

// DownAfter is how many consecutive failures of fresh connections to a
// node (health probes, refused connects) mark it down: one failure may be
// a blip, and one session's lost connection is no evidence at all.
const DownAfter = 2

// Router implements pgwire.Handler.
//
// A node's health comes only from evidence about the node: health probes
// on fresh connections and connects that fail, DownAfter in a row to mark
// it down, one success to mark it up. A session whose own connection ends
// (the server terminated that backend, or refused a malformed message) ends
// alone; it only makes the router probe the node at once.
type Router struct {
	cfg   Config
	log   *slog.Logger
	mu    sync.Mutex
	st    []NodeStatus
	fails []int         // consecutive failures per node (under mu)
	probe chan struct{} // asks Watch to probe now
	ups   prometheus.Gauge
	sess  prometheus.Counter
	fail  prometheus.Counter
	// waits: how long a replica took to show what a read needed (read
	// consistency), by outcome; positions: the session commit positions
	// asked of the primary (physical engine, lsn.go).
	waits     *prometheus.HistogramVec
	positions prometheus.Counter
	// paths: sessions by how they are relayed ("epoll", "goroutines")
	paths *prometheus.CounterVec

	// changed is closed at the next change of a node's role or health
	// (under mu): sessions waiting for a new primary wake at once.
	changed chan struct{}

	// routed sessions that survive a failover (Survive), to move off a
	// node that is down or no longer the primary (under smu).
	smu      sync.Mutex
	sessions map[abandoner]struct{}

	// routedPort: the write port's sessions are routed sessions
	// (txroute.go): with Split, or with Survive alone, when every
	// transaction goes to the primary (pinned) and the routed session
	// is only the way a session survives a failover on the epoll loops.
	routedPort, pinned bool

	// per-node counters, lag and drain (nodes.go; under mu, but for the
	// atomics and the view)
	view     atomic.Pointer[routeView]
	active   []atomic.Int64  // open transactions routed to each node
	routed   []atomic.Uint64 // transactions routed to each node
	nodes    []nodeState
	samples  []gsnSample
	balancer Balancer

	// transaction routing (txroute.go, consistency.go)
	cls   *classifier
	cons  consistency
	known []atomic.Uint64 // per node: a GSN it is known to have applied
	// committed: the highest commit GSN a routed session was told of
	// (the writeset engine's CommitGSNParam): a new session's floor.
	committed atomic.Uint64
	pmu       sync.Mutex
	pcur      *gsnFetch
	hc        map[string]*http.Client // by node: admin clients (under pmu)
}

// New builds a router.
func New(cfg Config) *Router {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = 64 << 20
	}
	r := &Router{cfg: cfg, log: cfg.Logger, fails: make([]int, len(cfg.Nodes)), probe: make(chan struct{}, 1)}
	r.known = make([]atomic.Uint64, len(cfg.Nodes))
	r.routedPort = !cfg.Reads && (cfg.Split || cfg.Survive)
	r.pinned = r.routedPort && !cfg.Split
	if cfg.Split {
		r.cls = newClassifier(cfg.ReadOnlyFunctions)
		r.cons, _ = parseConsistency(cfg.ReadConsistency)
	}
	now := time.Now()
	for i, n := range cfg.Nodes {
		role := "replica"
		if i == 0 {
			role = "primary"
		}
		r.st = append(r.st, NodeStatus{ID: n.Node, Addr: n.Addr, Role: role, Healthy: true, Since: now})
	}
	r.initNodes()
	r.refreshLocked()
	port := "write"
	if cfg.Reads {
		port = "read"
	}
	labels := prometheus.Labels{"port": port}
	r.ups = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tandem_router_nodes_healthy", Help: "Nodes the router sees as healthy.", ConstLabels: labels})
	r.sess = prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem_router_sessions_total", Help: "Client sessions opened through the router.", ConstLabels: labels})
	r.fail = prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem_router_session_failures_total", Help: "Sessions that could not reach a node.", ConstLabels: labels})
	r.waits = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tandem_router_read_wait_seconds",
		Help:        "Reads that asked a replica to wait until it had applied what the session's read consistency needs: the wait's duration, by outcome (applied: the replica ran the read; behind: it was still behind after read_wait, or the wait failed: single-master runs the read on the primary, multi-master refuses it).",
		ConstLabels: labels, Buckets: []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5}}, []string{"outcome"})
	r.positions = prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem_router_commit_position_queries_total",
		Help: "Physical engine, read consistency session: queries that asked the primary for a session's commit position (WAL insert LSN) before a read on a replica.", ConstLabels: labels})
	r.paths = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tandem_router_relayed_sessions_total",
		Help:        "Client sessions by how they were relayed: epoll (on the router's epoll loops, clear text or TLS on either side) or goroutines (connections that are not sockets, TANDEM_RELAY_POLL=off).",
		ConstLabels: labels}, []string{"path"})
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(r.ups, r.sess, r.fail, r.waits, r.positions, r.paths)
	}
	r.ups.Set(float64(len(cfg.Nodes)))
	return r
}

// primary picks the node sessions go to: the healthy node that reports
// the primary role in the newest epoch (a deposed primary that has not
// heard of its successor yet loses to it), else any node reporting the
// primary role, else the first node (roles not reported).
func (r *Router) primary() (Upstream, NodeStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.primaryIndexLocked()
	return r.cfg.Nodes[i], r.st[i]
}

// primaryIndexLocked is primary's choice (under mu).
func (r *Router) primaryIndexLocked() int {
	best := -1
	for i, st := range r.st {
		if st.Role == "primary" && st.Healthy && (best < 0 || st.Epoch > r.st[best].Epoch) {
			best = i
		}
	}
	if best >= 0 {
		return best
	}
	for i, st := range r.st {
		if st.Role == "primary" {
			return i
		}
	}
	return 0
}

// standby picks a healthy standby that is neither draining nor lagging,
// by the balancing policy (the read port).
func (r *Router) standby(client string) (Upstream, NodeStatus, bool) {
	i, ok := r.readNode(client)
	if !ok {
		return Upstream{}, NodeStatus{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg.Nodes[i], r.st[i], true
}

// openWait is how long a new session waits for a primary during a
// failover (Survive) before it is refused.
const openWait = 15 * time.Second

// Open implements pgwire.Handler: route to the primary. The write port
// with Split or Survive opens routed sessions (txroute.go); with Survive
// (automatic failover) a session that finds the primary down waits for
// the new one, up to openWait, instead of failing at once.
func (r *Router) Open(ctx context.Context, c *pgwire.Conn) (pgwire.Session, error) {
	if len(r.cfg.Nodes) == 0 {
		return nil, ErrNoNode
	}
	if r.routedPort {
		deadline := time.Now().Add(openWait)
		for {
			changed := r.changes()
			s, err := r.openSplit(ctx, c)
			if err == nil || !r.cfg.Survive || !errors.Is(err, ErrNoNode) && !errors.Is(err, ErrUpstreamDown) || time.Now().After(deadline) || ctx.Err() != nil {
				if err != nil {
					r.fail.Inc()
				}
				return s, err
			}
			select {
			case <-ctx.Done():
			case <-changed:
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	s, err := r.open(ctx, c)
	if err != nil {
		r.fail.Inc()
	}
	return s, err
}

// open relays a session on a relay (relay.go), to the primary or, on the
// read port, a standby: the read port's sessions, and the write port's
// without Split or Survive.
func (r *Router) open(ctx context.Context, c *pgwire.Conn) (pgwire.Session, error) {
	up, st := r.primary()
	if r.cfg.Reads {
		if sup, sst, ok := r.standby(c.RemoteAddr); ok {
			up, st = sup, sst
		}
	}
	if !st.Healthy {
		return nil, &pgwire.Error{Severity: "FATAL", Code: pgwire.CodeCannotConnectNow,
			Message: fmt.Sprintf("tandem: node %s is down (%s)", up.Node, st.LastError),
			Hint:    "restart the node, or promote a standby (`tandem promote NODE`), and reconnect", Err: ErrNoNode}
	}
	rl, err := newRelay(ctx, r.log, up, c, r.cfg.MaxMessageBytes, r.suspect)
	if rl != nil {
		rl.readTimeout = r.cfg.MessageReadTimeout
		rl.paths = r.paths
	}
	if err != nil {
		if errors.Is(err, ErrUpstreamDown) {
			// A fresh connection failed: evidence about the node.
			r.report(up.Node, err)
			r.suspect(up.Node, err)
		}
		return nil, err
	}
	r.sess.Inc()
	r.countSession(r.index(up.Node))
	return rl, nil
}

// suspect asks Watch to probe the nodes now (a session's connection
// ended, or a connect failed). It never marks a node down by itself.
func (r *Router) suspect(string, error) {
	select {
	case r.probe <- struct{}{}:
	default:
	}
}

// report records one probe or connect outcome for node: a success marks it
// up, DownAfter failures in a row mark it down.
func (r *Router) report(node string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.st {
		if r.st[i].ID != node {
			continue
		}
		if err == nil {
			r.fails[i] = 0
		} else {
			r.fails[i]++
			if r.fails[i] < DownAfter {
				continue
			}
		}
		r.setLocked(i, err == nil, err)
	}
	n := 0
	for _, s := range r.st {
		if s.Healthy {
			n++
		}
	}
	r.ups.Set(float64(n))
}

// failing reports whether some node that is still up has failed its last
// probe (so Watch confirms soon instead of waiting a full interval).
func (r *Router) failing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.st {
		if s.Healthy && r.fails[i] > 0 {
			return true
		}
	}
	return false
}

func (r *Router) setLocked(i int, healthy bool, err error) {
	s := &r.st[i]
	if s.Healthy == healthy {
		return
	}
	s.Healthy, s.Since = healthy, time.Now()
	r.notifyLocked()
	if healthy {
		s.LastError = ""
		r.log.Info("node is up", "node", s.ID)
		return
	}
	if err != nil {
		s.LastError = err.Error()
	}
	r.known[i].Store(0)
	r.log.Warn("node is down", "node", s.ID, "err", err, "consecutive_failures", r.fails[i])
	go r.moveSessionsOff(s.ID, "the node is down")
}

// moveSessionsOff ends the server connections of the surviving sessions
// bound to node (Survive): each moves to the primary the router knows now
// as if its connection had broken. A silent partition or a deposed primary
// that still answers its TCP would otherwise hold them.
func (r *Router) moveSessionsOff(node, why string) {
	r.smu.Lock()
	var moved int
	for rl := range r.sessions {
		if rl.abandon(node) {
			moved++
		}
	}
	r.smu.Unlock()
	if moved > 0 {
		r.log.Info("moving sessions off a node", "node", node, "sessions", moved, "why", why)
	}
}

// classify is a statement's class for transaction routing. On a pinned
// port every statement goes to the primary, unparsed: only the plain
// SELECT the fast path recognises is a read there, which tells a failover
// that such a statement in flight changed nothing (40001, not 08007).
func (r *Router) classify(q string) classification {
	if r.pinned {
		if fastRead(q) {
			return classification{class: classRead}
		}
		return classification{class: classWrite}
	}
	return r.cls.classify(q)
}

// abandoner is a session that can let go of its connection to a node
// (splitSession).
type abandoner interface{ abandon(node string) bool }

func (r *Router) track(a abandoner, on bool) {
	r.smu.Lock()
	defer r.smu.Unlock()
	if on {
		if r.sessions == nil {
			r.sessions = map[abandoner]struct{}{}
		}
		r.sessions[a] = struct{}{}
	} else {
		delete(r.sessions, a)
	}
}

func (r *Router) setRole(node, role string, epoch uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.st {
		if r.st[i].ID == node && (r.st[i].Role != role || r.st[i].Epoch != epoch) {
			r.log.Info("node role", "node", node, "role", role, "epoch", epoch)
			r.st[i].Role, r.st[i].Epoch = role, epoch
			if r.cfg.LSN {
				// A replica repointed at a failover may be rewound
				// (pg_rewind): its replay position can go back.
				r.known[i].Store(0)
			}
			r.notifyLocked()
			if role == "primary" {
				// Any other node that was the primary of an older epoch
				// is deposed: its sessions move here.
				for j := range r.st {
					if j != i && r.st[j].Role == "primary" && r.st[j].Epoch < epoch {
						go r.moveSessionsOff(r.st[j].ID, "a newer primary: "+node)
					}
				}
			}
		}
	}
}

// changes returns a channel closed at the next change of a node's role or
// health. Take it before reading the state it should wake a wait for.
func (r *Router) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

func (r *Router) notifyLocked() {
	r.refreshLocked()
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Status returns the router's view of the nodes.
func (r *Router) Status() []NodeStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]NodeStatus(nil), r.st...)
	r.fillCountsLocked(out)
	return out
}

// Watch probes every node until ctx ends: its admin /status when it has
// an admin address (health and role), else a TCP connect.
func (r *Router) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	cl := http.Client{Timeout: every + time.Second}
	// One client per node with TLS, kept for every probe: its connection
	// stays open between probes (a Transport made per probe paid a TLS
	// handshake on both ends every health_interval).
	tlsClients := make([]*http.Client, len(r.cfg.Nodes))
	for i, n := range r.cfg.Nodes {
		if n.AdminTLS != nil {
			tr := &http.Transport{TLSClientConfig: n.AdminTLS, MaxIdleConnsPerHost: 1, IdleConnTimeout: 10 * every}
			defer tr.CloseIdleConnections()
			tlsClients[i] = &http.Client{Timeout: cl.Timeout, Transport: tr}
		}
	}
	lastDial := make([]time.Time, len(r.cfg.Nodes))
	suspected := true // the first round probes every node
	for {
		for i, n := range r.cfg.Nodes {
			var err error
			if n.Admin == "" && !suspected && r.cfg.QuietDialEvery > 0 && time.Since(lastDial[i]) < r.cfg.QuietDialEvery && r.quiet(i) {
				continue
			}
			if n.Admin != "" {
				var st struct {
					Role string `json:"role"`
					Repl *struct {
						Epoch    uint64 `json:"epoch"`
						Assigned uint64 `json:"assigned_gsn"`
						Applied  uint64 `json:"applied_gsn"`
					} `json:"replication"`
				}
				var resp *http.Response
				url := n.AdminURL
				if url == "" {
					url = "http://" + n.Admin + "/status"
				}
				if !strings.Contains(url, "?") {
					// What the router reads (role, epoch, positions)
					// without what a person reads: on the physical engine
					// one small query instead of the replication views
					// (node.StatusProbe).
					url += "?probe=1"
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if n.AdminToken != "" {
					req.Header.Set("Authorization", "Bearer "+n.AdminToken)
				}
				hc := &cl
				if tlsClients[i] != nil {
					hc = tlsClients[i]
				}
				resp, err = hc.Do(req)
				if err == nil {
					err = json.NewDecoder(resp.Body).Decode(&st)
					_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16)) // to EOF: the connection is kept
					resp.Body.Close()
				}
				if err == nil && st.Role != "" {
					var epoch uint64
					if st.Repl != nil {
						epoch = st.Repl.Epoch
					}
					r.setRole(n.Node, st.Role, epoch)
					if st.Repl != nil {
						r.setProgress(n.Node, st.Role, st.Repl.Applied, st.Repl.Assigned)
					}
				}
			} else {
				lastDial[i] = time.Now()
				d := net.Dialer{Timeout: every}
				var c net.Conn
				c, err = d.DialContext(ctx, network(n.Addr), n.Addr)
				if err == nil {
					c.Close()
				}
			}
			if ctx.Err() != nil {
				return
			}
			r.report(n.Node, err)
		}
		var confirm <-chan time.Time
		if r.failing() {
			// Confirm a first failure soon rather than a full interval later.
			confirm = time.After(min(every/4, 50*time.Millisecond))
		}
		suspected = false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.probe:
			suspected = true
		case <-confirm:
			suspected = true
		}
	}
}

// quiet reports whether node i is up with no failed probe or connect
// since its last success (Watch may skip dialing it).
func (r *Router) quiet(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st[i].Healthy && r.fails[i] == 0
}

// FollowRoles subscribes to every node's role stream (GET /watch on its
// admin address) until ctx ends: a promotion or a demotion reaches the
// router the moment the node makes it, not at the next health probe. A
// stream that breaks (the node died) is retried; health still comes from
// Watch's probes.
func (r *Router) FollowRoles(ctx context.Context) {
	for _, n := range r.cfg.Nodes {
		if n.AdminURL == "" || !strings.HasSuffix(n.AdminURL, "/status") {
			continue
		}
		go r.followRole(ctx, n)
	}
}

func (r *Router) followRole(ctx context.Context, n Upstream) {
	url := strings.TrimSuffix(n.AdminURL, "/status") + "/watch"
	tr := &http.Transport{TLSClientConfig: n.AdminTLS}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	for ctx.Err() == nil {
		func() {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			req, _ := http.NewRequestWithContext(sctx, http.MethodGet, url, nil)
			if n.AdminToken != "" {
				req.Header.Set("Authorization", "Bearer "+n.AdminToken)
			}
			resp, err := cl.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return
			}
			// The node repeats its state every second: 3 s of silence
			// means the stream (or the node) is gone.
			alive := time.AfterFunc(3*time.Second, cancel)
			defer alive.Stop()
			dec := json.NewDecoder(resp.Body)
			for {
				var st struct {
					Role  string `json:"role"`
					Epoch uint64 `json:"epoch"`
				}
				if err := dec.Decode(&st); err != nil {
					return
				}
				alive.Reset(3 * time.Second)
				if st.Role != "" {
					r.setRole(n.Node, st.Role, st.Epoch)
				}
			}
		}()
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
