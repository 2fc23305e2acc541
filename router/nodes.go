package router

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// This file keeps what the router knows about each node beyond health and
// role: its weights, whether an operator drained it, how far behind the
// primary it is (from its /status, probed every health_interval), and the
// sessions and transactions the router sent there. ReadCandidates is what
// a read-only transaction may be balanced over; Begin and End count the
// transactions the routing code sends to a node.

// ErrUnknownNode is a node id the router does not know.
var ErrUnknownNode = errors.New("no such node")

// DefaultMaxLagGSNs is Config.MaxLagGSNs when neither it nor MaxLagTime is
// set.
const DefaultMaxLagGSNs = 10000

// nodeState is the per-node part of Router beyond NodeStatus (under mu).
// The counters each transaction moves are atomics in Router (active,
// routed): no lock per transaction.
type nodeState struct {
	sessions    uint64
	hasProgress bool
	applied     uint64 // the node's applied GSN at the last probe
	lagging     bool   // out of read rotation for lag
}

// gsnSample is the primary's last GSN as one probe saw it.
type gsnSample struct {
	at  time.Time
	gsn uint64
}

// maxSamples bounds the primary's GSN history kept for a time-based
// max_lag (at the default 500 ms health_interval, 8 minutes).
const maxSamples = 1024

// routeView is what routing a transaction reads, without the router's
// mutex: the primary's index and the read candidates (their open
// transactions come from Router.active at the pick). It is rebuilt under
// mu at every change of a node's role, epoch, health, drain or lag
// (refreshLocked), and swapped atomically: with many sessions on few
// cores, taking one mutex several times per transaction made sessions
// queue for it.
type routeView struct {
	primary int
	reads   []Candidate
}

// refreshLocked rebuilds the routing view (under mu).
func (r *Router) refreshLocked() {
	v := &routeView{primary: r.primaryIndexLocked()}
	for i, st := range r.st {
		if !st.Healthy || st.Draining || r.nodes[i].lagging || st.ReadWeight <= 0 {
			continue
		}
		// Only roles a node reported: before its first probe a node's
		// role is a guess ("replica").
		if st.Role != "primary" && st.Role != "standby" {
			continue
		}
		// WAL positions (the physical engine): a standby that has not
		// followed the primary's epoch yet may still replay the old
		// timeline, past the new one's fork (a node that was stopped or
		// cut off at the failover while its server streamed on): its
		// reads could show commits the cluster lost, and its replay
		// position is no measure against the new timeline's. Its node
		// takes the new epoch when it follows (after a rewind).
		if p := v.primary; r.cfg.LSN && st.Role == "standby" && p >= 0 && r.st[p].Role == "primary" && st.Epoch < r.st[p].Epoch {
			continue
		}
		v.reads = append(v.reads, Candidate{Index: i, ID: st.ID, Weight: st.ReadWeight})
	}
	r.view.Store(v)
}

func (r *Router) initNodes() {
	r.nodes = make([]nodeState, len(r.cfg.Nodes))
	r.active = make([]atomic.Int64, len(r.cfg.Nodes))
	r.routed = make([]atomic.Uint64, len(r.cfg.Nodes))
	for i := range r.st {
		r.st[i].Weight = 1
		if i < len(r.cfg.Weights) && r.cfg.Weights[i] > 0 {
			r.st[i].Weight = r.cfg.Weights[i]
		}
		r.st[i].ReadWeight = r.st[i].Weight
		if i < len(r.cfg.ReadWeights) && r.cfg.ReadWeights[i] >= 0 {
			r.st[i].ReadWeight = r.cfg.ReadWeights[i]
		}
	}
	if r.cfg.MaxLagGSNs == 0 && r.cfg.MaxLagTime == 0 {
		r.cfg.MaxLagGSNs = DefaultMaxLagGSNs
	}
	pol, err := NewBalancer(r.cfg.Policy)
	if err != nil {
		r.log.Warn("unknown balancing policy; using least-connected", "policy", r.cfg.Policy, "err", err)
		pol, _ = NewBalancer("")
	}
	r.balancer = pol
}

// index is the position of node id in Config.Nodes (-1: unknown).
func (r *Router) index(id string) int {
	for i, n := range r.cfg.Nodes {
		if n.Node == id {
			return i
		}
	}
	return -1
}

// SetDraining marks node draining (on) or not: a draining node gets no new
// sessions or transactions from this router; those running there finish.
func (r *Router) SetDraining(id string, on bool) error {
	i := r.index(id)
	if i < 0 {
		return fmt.Errorf("%w %q", ErrUnknownNode, id)
	}
	r.mu.Lock()
	changed := r.st[i].Draining != on
	r.st[i].Draining = on
	r.refreshLocked()
	r.mu.Unlock()
	if changed {
		r.log.Info("node draining", "node", id, "draining", on)
	}
	return nil
}

// Begin counts a transaction routed to node index (Config.Nodes) until End.
func (r *Router) Begin(index int) {
	if index >= 0 && index < len(r.active) {
		r.active[index].Add(1)
		r.routed[index].Add(1)
	}
}

// End is the end of a transaction Begin counted.
func (r *Router) End(index int) {
	if index >= 0 && index < len(r.active) {
		if r.active[index].Add(-1) < 0 {
			r.active[index].Add(1) // an End without its Begin
		}
	}
}

// countSession counts a session the router opened on node index.
func (r *Router) countSession(index int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if index >= 0 && index < len(r.nodes) {
		r.nodes[index].sessions++
	}
}

// ReadCandidates are the nodes a read-only transaction may go to now:
// healthy, not draining, not lagging beyond max_lag, read weight > 0; the
// primary among them unless its read weight is 0. Each carries its read
// weight and its open transactions (Begin/End).
func (r *Router) ReadCandidates() []Candidate { return r.readCandidates(nil) }

// readCandidates is ReadCandidates appended to buf[:0] (a session reuses
// its buffer: no allocation per transaction).
func (r *Router) readCandidates(buf []Candidate) []Candidate {
	buf = buf[:0]
	v := r.view.Load()
	if v == nil {
		return buf
	}
	for _, c := range v.reads {
		c.Active = int(r.active[c.Index].Load())
		buf = append(buf, c)
	}
	return buf
}

// Balancer is the router's balancing policy (Config.Policy).
func (r *Router) Balancer() Balancer { return r.balancer }

// readNode picks the node a read port session goes to: a replica from the
// read candidates by the policy, else the primary.
func (r *Router) readNode(client string) (int, bool) {
	var reps []Candidate
	for _, c := range r.ReadCandidates() {
		r.mu.Lock()
		role := r.st[c.Index].Role
		r.mu.Unlock()
		if role != "primary" {
			reps = append(reps, c)
		}
	}
	if len(reps) == 0 {
		return 0, false
	}
	return reps[r.balancer.Pick(reps, clientAddr(client))].Index, true
}

// clientAddr is the IP of a client's remote address ("host:port"); the
// zero Addr when it has none (a Unix socket).
func clientAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, _ := netip.ParseAddr(host)
	return a
}

// setProgress records a probe's reading of a node's replication: its
// role, applied GSN and (a primary) the last GSN it assigned; then every
// node's lag against the primary's last GSN, and who is out of read
// rotation for it. A node is taken out when its lag passes max_lag and
// put back once it is within half of it (so it does not flap at the
// edge).
func (r *Router) setProgress(node, role string, applied, assigned uint64) {
	i := r.index(node)
	if i < 0 {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes[i].hasProgress, r.nodes[i].applied = true, applied
	if (r.cfg.LSN && role != "primary" || r.cfg.MultiMaster) && applied > 0 {
		// A replay position read now holds from now on (until a
		// rewind, which comes with a change of epoch: setRole): reads
		// that need no more skip the replica's wait. A multi-master
		// node reports the GSN it has applied and committed (its
		// agent's), so without this a node no session had used lately
		// was never known to be ready, and every new session (whose
		// need is the highest GSN known anywhere) went to the node of
		// the last commit. (A writeset standby's applied GSN is an
		// upper bound while it applies, not this.)
		r.noteApplied(i, applied)
	}
	if role == "primary" {
		r.nodes[i].applied = max(applied, assigned)
		if n := len(r.samples); n == 0 || r.samples[n-1].gsn != r.nodes[i].applied {
			r.samples = append(r.samples, gsnSample{at: now, gsn: r.nodes[i].applied})
			if len(r.samples) > maxSamples {
				r.samples = r.samples[len(r.samples)-maxSamples:]
			}
		}
	}
	r.updateLagLocked(now)
}

func (r *Router) updateLagLocked(now time.Time) {
	var primaryGSN uint64
	for i, st := range r.st {
		if st.Role == "primary" && r.nodes[i].hasProgress {
			primaryGSN = max(primaryGSN, r.nodes[i].applied)
		}
	}
	for i := range r.st {
		st, ns := &r.st[i], &r.nodes[i]
		if !ns.hasProgress {
			continue
		}
		st.AppliedGSN = ns.applied
		st.Lag = 0
		if primaryGSN > ns.applied && st.Role != "primary" {
			st.Lag = primaryGSN - ns.applied
		}
		st.LagTime = 0
		if st.Lag > 0 {
			// How long ago the primary first had a GSN this node lacks.
			for _, s := range r.samples {
				if s.gsn > ns.applied {
					st.LagTime = now.Sub(s.at)
					break
				}
			}
		}
		over := r.cfg.MaxLagGSNs > 0 && st.Lag > r.cfg.MaxLagGSNs || r.cfg.MaxLagTime > 0 && st.LagTime > r.cfg.MaxLagTime
		under := (r.cfg.MaxLagGSNs == 0 || st.Lag <= r.cfg.MaxLagGSNs/2) && (r.cfg.MaxLagTime == 0 || st.LagTime <= r.cfg.MaxLagTime/2)
		switch {
		case over && !ns.lagging:
			ns.lagging = true
			r.log.Warn("node lags the primary: out of read rotation", "node", st.ID, "lag_gsns", st.Lag, "lag_time", st.LagTime)
		case under && ns.lagging:
			ns.lagging = false
			r.log.Info("node caught up: back in read rotation", "node", st.ID, "lag_gsns", st.Lag)
		}
		st.Lagging = ns.lagging
	}
	r.refreshLocked()
}

// fillCounts copies the counters into a status snapshot (under mu).
func (r *Router) fillCountsLocked(out []NodeStatus) {
	for i := range out {
		if i < len(r.nodes) {
			out[i].Active = int(r.active[i].Load())
			out[i].Sessions = r.nodes[i].sessions
			out[i].Transactions = r.routed[i].Load()
		}
	}
}

// MergeStatus adds the sessions, transactions and open transactions of
// other routers over the same nodes (the read port's) to base.
func MergeStatus(base []NodeStatus, others ...[]NodeStatus) []NodeStatus {
	out := append([]NodeStatus(nil), base...)
	for _, o := range others {
		for i := range out {
			if i < len(o) && o[i].ID == out[i].ID {
				out[i].Sessions += o[i].Sessions
				out[i].Transactions += o[i].Transactions
				out[i].Active += o[i].Active
			}
		}
	}
	return out
}

// NodeCollector exports NodeStatus as Prometheus metrics with a node
// label (and the port of each router: write, read).
type NodeCollector struct {
	Routers map[string]*Router // port -> router
}

var (
	descHealthy  = prometheus.NewDesc("tandem_router_node_healthy", "1 while the router sees the node up.", []string{"port", "node", "role"}, nil)
	descDraining = prometheus.NewDesc("tandem_router_node_draining", "1 while the node is drained (tandem drain).", []string{"port", "node"}, nil)
	descLagging  = prometheus.NewDesc("tandem_router_node_lagging", "1 while the node is out of read rotation for lag (router.max_lag).", []string{"port", "node"}, nil)
	descWeight   = prometheus.NewDesc("tandem_router_node_weight", "The node's weight (nodes.weight).", []string{"port", "node"}, nil)
	descRWeight  = prometheus.NewDesc("tandem_router_node_read_weight", "The node's weight for reads (nodes.read_weight).", []string{"port", "node"}, nil)
	descApplied  = prometheus.NewDesc("tandem_router_node_applied_gsn", "The node's applied GSN at the last probe.", []string{"port", "node"}, nil)
	descLag      = prometheus.NewDesc("tandem_router_node_lag_gsns", "GSNs the node is behind the primary at the last probe.", []string{"port", "node"}, nil)
	descLagSecs  = prometheus.NewDesc("tandem_router_node_lag_seconds", "How long ago the primary had the oldest GSN the node lacks.", []string{"port", "node"}, nil)
	descActive   = prometheus.NewDesc("tandem_router_node_active_transactions", "Transactions routed to the node and not finished.", []string{"port", "node"}, nil)
	descSess     = prometheus.NewDesc("tandem_router_node_sessions_total", "Sessions the router opened on the node.", []string{"port", "node"}, nil)
	descTxns     = prometheus.NewDesc("tandem_router_node_transactions_total", "Transactions the router routed to the node.", []string{"port", "node"}, nil)
)

// Describe implements prometheus.Collector.
func (c NodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHealthy, descDraining, descLagging, descWeight, descRWeight, descApplied, descLag, descLagSecs, descActive, descSess, descTxns} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c NodeCollector) Collect(ch chan<- prometheus.Metric) {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	for port, r := range c.Routers {
		for _, s := range r.Status() {
			g := func(d *prometheus.Desc, v float64) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, port, s.ID)
			}
			ch <- prometheus.MustNewConstMetric(descHealthy, prometheus.GaugeValue, b(s.Healthy), port, s.ID, s.Role)
			g(descDraining, b(s.Draining))
			g(descLagging, b(s.Lagging))
			g(descWeight, float64(s.Weight))
			g(descRWeight, float64(s.ReadWeight))
			g(descApplied, float64(s.AppliedGSN))
			g(descLag, float64(s.Lag))
			g(descLagSecs, s.LagTime.Seconds())
			g(descActive, float64(s.Active))
			ch <- prometheus.MustNewConstMetric(descSess, prometheus.CounterValue, float64(s.Sessions), port, s.ID)
			ch <- prometheus.MustNewConstMetric(descTxns, prometheus.CounterValue, float64(s.Transactions), port, s.ID)
		}
	}
}
