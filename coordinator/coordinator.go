package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/certifier"
	"github.com/tandemdb/tandem/secure"
)

// Config is one voter's part of the group. Every voter must be given the
// same Voters, InitialPrimary, Safeness, Automatic and Lease.
type Config struct {
	ID     string   // this voter's member id (its certificate's CN)
	Dir    string   // Raft log, stable store and snapshots
	Voters []Member // every voter, with its raft address; Role "witness" marks the witness
	// NonVoters are members that hold the log and follow the map but do
	// not vote (single-master nodes past the first 3 or 5): the leader
	// adds them to the Raft configuration with AddNonvoter. Every member
	// must be given the same list.
	NonVoters []Member
	Identity  *secure.Identity // the cluster certificate of ID (mutual TLS is required)

	// The map the group starts from when it has none.
	InitialPrimary string
	InitialEpoch   uint64
	Safeness       string // the configured safeness level
	Automatic      bool   // failover = "automatic"

	// Lease is the primary's lease, measured on its own clock from its
	// request; Grace is what the coordinator waits beyond it (default
	// Lease/2) before it calls the lease lapsed.
	Lease time.Duration
	Grace time.Duration

	// Raft timers (defaults 500 ms each on loopback-friendly settings).
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration

	// CertWindow bounds the multi-master certifier's window of committed
	// writesets (zero fields: the certifier package's defaults). The
	// leader stamps its own into every certification entry, so members
	// never diverge; give every member the same.
	CertWindow certifier.Window

	// PreferLeader is the voter that should lead the group whenever it
	// can (multi-master: the witness, a host without clients, as seed
	// 003's certifier runs on machines of its own). A leader that is
	// another voter hands leadership to it (LeadershipTransferToServer),
	// retrying with a growing pause when it cannot. Empty: no preference.
	PreferLeader string

	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: metrics are kept but not registered
}

func (c *Config) defaults() error {
	if c.ID == "" || c.Dir == "" {
		return fmt.Errorf("%w: coordinator config needs an id and a directory", ErrBadCommand)
	}
	if c.Identity == nil {
		return fmt.Errorf("%w: the coordinator's Raft traffic needs the cluster certificates (security.inter_node = \"mtls\")", secure.ErrNoCerts)
	}
	if _, ok := c.self(); !ok {
		return fmt.Errorf("%w: %q is not among the voters or non-voters", ErrNotMember, c.ID)
	}
	if c.Lease <= 0 {
		c.Lease = time.Second
	}
	if c.Grace <= 0 {
		c.Grace = c.Lease / 2
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 500 * time.Millisecond
	}
	if c.ElectionTimeout <= 0 {
		c.ElectionTimeout = 500 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

func (c *Config) self() (Member, bool) {
	for _, v := range c.members() {
		if v.ID == c.ID {
			return v, true
		}
	}
	return Member{}, false
}

// members are the voters and the non-voters.
func (c *Config) members() []Member {
	return append(slices.Clone(c.Voters), c.NonVoters...)
}

// nonVoter reports whether this member is a non-voter.
func (c *Config) nonVoter() bool {
	for _, v := range c.NonVoters {
		if v.ID == c.ID {
			return true
		}
	}
	return false
}

// Coordinator is one running voter.
type Coordinator struct {
	cfg       Config
	log       *slog.Logger
	fsm       *fsm
	raft      *raft.Raft
	layer     *tlsLayer
	transport *raft.NetworkTransport
	stores    *logStores // the Raft log (raft-wal) and stable store (bbolt): logstore.go
	met       *metrics
	// nudging / nudgeAgain: a barrier entry that carries the commit index
	// of forwarded certifications to the followers is in flight, and
	// another was asked for meanwhile (cert.go, nudgeFollowers).
	nudging, nudgeAgain atomic.Bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu            sync.Mutex
	leaderSince   time.Time     // zero while not leader
	leaderTerm    uint64        // the term leaderSince belongs to
	prevLeader    string        // the last Raft leader this voter followed (empty: none seen)
	lastNote      string        // last reason a lapse did not lead to a change, logged once
	lastMove      time.Time     // last leadership transfer (placeLeadership)
	lastJoin      time.Time     // last check that the non-voters are in the Raft configuration
	transferNext  time.Time     // leader: the next try to hand leadership to cfg.PreferLeader
	transferPause time.Duration // leader: the pause after a failed hand-over (doubling)

	fwdMu   sync.Mutex
	fwdIdle []*fwdConn // idle request connections to the leader

	certQ chan *certCall // certifications waiting to be forwarded (cert.go)
	early earlyLog       // certified writesets ahead of this copy of the log (early.go)

	// ready is closed once raft is set: the transport's layer serves
	// members' forwarded requests from the moment it binds, before
	// NewRaft returns (serveForward waits for it).
	ready chan struct{}
}

// Start opens the stores, binds the raft address and joins the group;
// a voter with no Raft state bootstraps it with the configured voters
// (every voter does the same, which hashicorp/raft allows).
func Start(cfg Config) (*Coordinator, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	self, _ := cfg.self()
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, log: cfg.Logger.With("component", "coordinator", "id", cfg.ID), fsm: newFSM(), certQ: make(chan *certCall, 1024), ready: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.met = newMetrics(c, cfg.Registerer)
	registerCertMetrics(c, cfg.Registerer)
	registerRaftMetrics(cfg.Registerer)
	c.fsm.onApply = c.applied

	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Info, Output: slogWriter{c.log}})
	stores, err := openLogStores(cfg.Dir, hlog)
	if err != nil {
		return nil, fmt.Errorf("coordinator: raft stores in %s: %w", cfg.Dir, err)
	}
	c.stores = stores
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hlog)
	if err != nil {
		stores.close()
		return nil, fmt.Errorf("coordinator: snapshots in %s: %w", cfg.Dir, err)
	}
	layer, err := newTLSLayer(self.RaftAddr, cfg.Identity, cfg.members(), c.serveForward, c.met.rejected, c.log)
	if err != nil {
		stores.close()
		return nil, err
	}
	c.layer = layer
	c.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: layer, MaxPool: 3, Timeout: 2 * time.Second, Logger: hlog})

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.HeartbeatTimeout / 2
	// How long the leader waits without new entries before it sends the
	// followers the commit index anyway (hashicorp/raft's default, 50 ms):
	// followers apply a change of primary within it. 20 ms cost an idle
	// pair a tenth of a core in heartbeats.
	rc.CommitTimeout = 50 * time.Millisecond
	rc.SnapshotThreshold = 1024
	if v := os.Getenv("TANDEM_TEST_RAFT_SNAPSHOT_INTERVAL"); v != "" {
		// Tests only: how often Raft checks whether to snapshot (and so
		// compact its log); hashicorp/raft's default is 120 s.
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			rc.SnapshotInterval = d
			cfg.Logger.Warn("TANDEM_TEST_RAFT_SNAPSHOT_INTERVAL: Raft snapshots are checked more often than in production (tests only)", "interval", d)
		}
	}
	rc.TrailingLogs = 1024
	rc.Logger = hlog

	has, err := raft.HasExistingState(stores.logs, stores.stable, snaps)
	if err != nil {
		c.closeStores()
		return nil, err
	}
	r, err := raft.NewRaft(rc, c.fsm, stores.logs, stores.stable, snaps, c.transport)
	if err != nil {
		c.closeStores()
		return nil, fmt.Errorf("coordinator: starting raft: %w", err)
	}
	c.raft = r
	close(c.ready)
	// A non-voter never bootstraps: the leader adds it (step).
	if !has && !cfg.nonVoter() {
		var servers []raft.Server
		for _, v := range cfg.Voters {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(v.ID), Address: raft.ServerAddress(v.RaftAddr)})
		}
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			_ = c.Close()
			return nil, fmt.Errorf("coordinator: bootstrap: %w", err)
		}
	}
	c.wg.Add(2)
	go c.run()
	go c.certDispatch()
	c.log.Info("coordinator started", "raft", layer.Addr().String(), "voters", len(cfg.Voters), "non_voters", len(cfg.NonVoters), "non_voter", cfg.nonVoter(), "automatic", cfg.Automatic,
		"lease", cfg.Lease, "grace", cfg.Grace)
	return c, nil
}

func (c *Coordinator) closeStores() {
	c.cancel() // a forwarded request waiting for ready gives up
	if c.transport != nil {
		c.transport.Close()
	}
	if c.layer != nil {
		c.layer.Close()
		c.layer.wait()
	}
	if c.stores != nil {
		c.stores.close()
	}
}

// Close leaves the group (as a crash would: the others elect without it)
// and releases the port and the stores.
func (c *Coordinator) Close() error {
	c.cancel()
	c.closeForwards()
	c.wg.Wait()
	var err error
	if c.raft != nil {
		err = c.raft.Shutdown().Error()
	}
	c.closeStores()
	c.fsm.closeWatchers()
	return err
}

// placeLeadership hands the Raft leadership to the node the failover rule
// would promote now (the standby to be), or away from the primary when no
// standby qualifies. It reports whether it moved the leadership.
func (c *Coordinator) placeLeadership(m Map, since time.Time) bool {
	if len(c.cfg.Voters) < 2 || time.Since(c.lastMove) < 5*time.Second || time.Since(since) < c.cfg.ElectionTimeout {
		return false
	}
	want := ""
	if d, err := Decide(Situation{Map: m, SinceLease: 1 << 62, Grace: c.cfg.Grace}); err == nil && d.Target != m.Primary {
		want = d.Target
	}
	if want == c.cfg.ID || want == "" && m.Primary != c.cfg.ID {
		return false
	}
	// A standby that leads stays: replicas' reports move all the time, and
	// chasing the best of them would move the leadership every few
	// seconds. The primary and the witness hand it on.
	if self, _ := m.Member(c.cfg.ID); m.Primary != c.cfg.ID && self.Role != RoleWitness {
		return false
	}
	var addr string
	for _, v := range c.cfg.Voters {
		if v.ID == want {
			addr = v.RaftAddr
		}
	}
	if want != "" && addr == "" {
		return false // not a voter (a non-voting replica)
	}
	c.lastMove = time.Now()
	var err error
	if want == "" {
		err = c.raft.LeadershipTransfer().Error()
	} else {
		err = c.raft.LeadershipTransferToServer(raft.ServerID(want), raft.ServerAddress(addr)).Error()
	}
	if err != nil {
		c.log.Debug("moving the Raft leadership failed", "to", want, "err", err)
		return false
	}
	c.log.Info("moved the Raft leadership to the node a failover would promote (a failover then needs no Raft round trip)", "to", want)
	return true
}

// run is the leader's duty: initialize the map, and change the primary
// when the rule in Decide says so. It reads local state only; followers
// idle.
func (c *Coordinator) run() {
	defer c.wg.Done()
	step := c.cfg.Lease / 16
	if step < 10*time.Millisecond {
		step = 10 * time.Millisecond
	}
	t := time.NewTicker(step)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.step()
	}
}

func (c *Coordinator) step() {
	if c.raft.State() != raft.Leader {
		_, id := c.raft.LeaderWithID()
		c.mu.Lock()
		c.leaderSince = time.Time{}
		if id != "" {
			c.prevLeader = string(id)
		}
		c.mu.Unlock()
		return
	}
	term := c.raft.CurrentTerm()
	c.mu.Lock()
	since, prev := c.leaderSince, c.prevLeader
	if c.leaderTerm != term {
		since = time.Time{} // leadership lost and won again between two steps
	}
	c.mu.Unlock()
	if since.IsZero() {
		// New leader: apply everything committed before deciding anything,
		// and time the lease from now at the earliest.
		if err := c.raft.Barrier(c.cfg.ElectionTimeout * 4).Error(); err != nil {
			return
		}
		since = time.Now()
		c.mu.Lock()
		c.leaderSince, c.leaderTerm = since, term
		c.mu.Unlock()
		c.log.Info("leading the coordinator group", "term", term)
	}
	m, seen := c.fsm.state()
	if !m.Initialized {
		var members []Member
		for _, v := range c.cfg.members() {
			members = append(members, Member{ID: v.ID, RaftAddr: v.RaftAddr, Role: v.Role})
		}
		_, err := c.applyLocal(c.ctx, Command{Op: OpInit, From: c.cfg.ID, Members: members, Primary: c.cfg.InitialPrimary,
			Epoch: c.cfg.InitialEpoch, Safeness: c.cfg.Safeness, Automatic: c.cfg.Automatic, LeaseDur: c.cfg.Lease})
		if err != nil {
			c.log.Error("initializing the cluster map", "err", err)
		}
		return
	}
	c.addNonVoters()
	// The lapse is timed from when this voter applied the lease's last
	// entry: after the Barrier that is the latest committed renewal, and
	// it was applied here after it was committed, so after its holder's
	// t0 (DESIGN.md). While no leader was there the holder could not
	// renew, so a new leader restarts the timer at its takeover, unless
	// the leader it replaces was the holder itself: then the primary's
	// node is the one that went silent, and the election ran while its
	// lease ran out rather than before (DESIGN.md, "A new leader").
	if seen.IsZero() || (prev != m.Lease.Holder && seen.Before(since)) {
		seen = since
	}
	// Where the Raft leadership should sit: on the standby the failover
	// rule would promote. When the primary dies, that node then decides,
	// applies the change and promotes itself with no Raft round trip in
	// between (a follower learns of a commit only at the leader's next
	// append, up to twice CommitTimeout later). Never on the primary: when
	// both die together a new leader must be elected (and apply the log)
	// before it can decide. At most one move every few seconds.
	if c.cfg.PreferLeader != "" {
		// Multi-master: no primary to fail over; the leadership sits with
		// the preferred voter.
		c.transferToPreferred()
	} else if c.placeLeadership(m, since) {
		return
	}
	wait := time.Since(seen)
	d, err := Decide(Situation{Map: m, SinceLease: wait, Grace: c.cfg.Grace})
	switch {
	case err == nil:
	case errors.Is(err, ErrManual), errors.Is(err, ErrNoCandidate):
		note := fmt.Sprintf("%d/%d %v", m.Epoch, m.Lease.Seq, err)
		c.mu.Lock()
		first := c.lastNote != note
		c.lastNote = note
		c.mu.Unlock()
		if first {
			c.log.Warn("the primary's lease lapsed; no new primary", "primary", m.Primary, "epoch", m.Epoch, "reason", err)
		}
		return
	default:
		return
	}
	c.log.Warn("changing the primary", "from", m.Primary, "to", d.Target, "reason", d.Reason, "epoch", m.Epoch+1,
		"lease_seen_ago", wait, "lost", d.Lost)
	res, err := c.applyLocal(c.ctx, Command{Op: OpTransition, From: c.cfg.ID, Target: d.Target, Reason: d.Reason,
		Epoch: d.Epoch, ExpectSeq: d.ExpectSeq, Lost: d.Lost})
	if err != nil {
		c.log.Warn("change of primary not applied", "err", err)
		return
	}
	c.met.lastWait.Set(wait.Seconds())
	if d.Lost > 0 {
		c.log.Error("failover may have lost acknowledged commits (1-safe)", "lost", d.Lost, "new_primary", d.Target, "epoch", res.Epoch)
	}
}

// transferToPreferred hands leadership to cfg.PreferLeader when this
// leader is another voter: at most once per pause, which doubles after
// each failed transfer (from 5 s up to 5 min) and resets after a success.
// hashicorp/raft brings the target's log up to date and sends it
// TimeoutNow; new proposals get ErrLeadershipTransferInProgress meanwhile
// (certifications retry on it as on any change of leader).
func (c *Coordinator) transferToPreferred() {
	want := c.cfg.PreferLeader
	if want == "" || want == c.cfg.ID || time.Now().Before(c.transferNext) {
		return
	}
	var addr string
	for _, v := range c.cfg.Voters {
		if v.ID == want {
			addr = v.RaftAddr
		}
	}
	if addr == "" {
		return
	}
	if c.transferPause == 0 {
		c.transferPause = 5 * time.Second
	}
	c.transferNext = time.Now().Add(c.transferPause)
	err := c.raft.LeadershipTransferToServer(raft.ServerID(want), raft.ServerAddress(addr)).Error()
	if err != nil {
		c.log.Info("handing the coordinator's leadership to its preferred voter failed; keeping it", "to", want, "err", err, "retry_in", c.transferPause)
		c.transferPause = min(2*c.transferPause, 5*time.Minute)
		return
	}
	c.transferPause = 0
	c.log.Info("handed the coordinator's leadership to its preferred voter", "to", want)
}

// addNonVoters has the leader add the configured non-voters that the Raft
// configuration lacks (at most every 2 s; AddNonvoter is a no-op for a
// member already there).
func (c *Coordinator) addNonVoters() {
	if len(c.cfg.NonVoters) == 0 || time.Since(c.lastJoin) < 2*time.Second {
		return
	}
	c.lastJoin = time.Now()
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return
	}
	have := map[raft.ServerID]bool{}
	for _, s := range f.Configuration().Servers {
		have[s.ID] = true
	}
	for _, v := range c.cfg.NonVoters {
		if have[raft.ServerID(v.ID)] {
			continue
		}
		if err := c.raft.AddNonvoter(raft.ServerID(v.ID), raft.ServerAddress(v.RaftAddr), 0, 2*time.Second).Error(); err != nil {
			c.log.Warn("adding a non-voter to the coordinator group failed; retrying", "member", v.ID, "err", err)
			continue
		}
		c.log.Info("added a non-voter to the coordinator group", "member", v.ID, "raft", v.RaftAddr)
	}
}

// applied runs under the FSM's lock after each entry that changed the map.
func (c *Coordinator) applied(before, after *Map) {
	c.met.epoch.Set(float64(after.Epoch))
	if len(after.History) > 0 && (len(before.History) == 0 || after.History[len(after.History)-1] != before.History[len(before.History)-1]) {
		t := after.History[len(after.History)-1]
		c.met.transitions.WithLabelValues(t.Reason).Inc()
		c.met.lost.Add(float64(t.Lost))
	}
}

// applyLocal proposes c on this voter, which must lead.
func (c *Coordinator) applyLocal(ctx context.Context, cmd Command) (Map, error) {
	b, err := json.Marshal(cmd)
	if err != nil {
		return Map{}, err
	}
	f := c.raft.Apply(b, 5*time.Second)
	errc := make(chan error, 1)
	go func() { errc <- f.Error() }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		// The entry may still commit; the caller treats the outcome as
		// unknown (a lease it does not know it holds is not held).
		return Map{}, fmt.Errorf("%w: %v", ErrNoLeader, ctx.Err())
	}
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			return Map{}, fmt.Errorf("%w: %v", ErrNotLeader, err)
		}
		if errors.Is(err, raft.ErrRaftShutdown) {
			return Map{}, ErrClosed
		}
		return Map{}, err
	}
	a, _ := f.Response().(applied)
	return a.m, a.err
}

// remoteOps may be asked of the leader by another member.
var remoteOps = map[string]bool{OpLease: true, OpRelease: true, OpAck: true, OpDegrade: true, OpHandOver: true, OpSafeness: true, OpRefine: true, OpTail: true}

// submit has the leader apply cmd as this member's request: directly when
// this voter leads, else over the TLS channel. It retries while there is
// no leader, the leader changes or the map is not initialized yet, until
// ctx ends.
func (c *Coordinator) submit(ctx context.Context, cmd Command) (Map, error) {
	cmd.From = c.cfg.ID
	backoff := 20 * time.Millisecond
	for {
		var m Map
		var err error
		if c.raft.State() == raft.Leader {
			m, err = c.applyLocal(ctx, cmd)
		} else if m, err = c.forward(ctx, cmd); m.Index > 0 {
			// Read your writes: this voter's map (Map, Watch, Status)
			// shows the request's effect before the call returns, unless
			// it trails the leader by more than a moment.
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			c.fsm.waitIndex(wctx, m.Index)
			cancel()
		}
		// The first leader initializes the map just after its election.
		retry := errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoLeader) || errors.Is(err, ErrUninitialized)
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, net.ErrClosed) {
			retry = true
		}
		if !retry {
			return m, err
		}
		select {
		case <-ctx.Done():
			return Map{}, fmt.Errorf("%w (%v)", err, ctx.Err())
		case <-c.ctx.Done():
			return Map{}, ErrClosed
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// fwdConn is a connection to the leader that carries requests one after
// another (a JSON command, a JSON result); idle ones are kept for the next
// request, so a lease renewal or a standby's report does not pay a TLS
// handshake each time.
type fwdConn struct {
	id   string
	conn net.Conn
	enc  *json.Encoder
	dec  *json.Decoder
}

// maxIdleForward bounds the idle connections kept to the leader (a
// multi-master node certifies from many sessions at once; each request
// holds a connection until its answer).
const maxIdleForward = 16

func (c *Coordinator) takeForward(ctx context.Context, id, addr string) (*fwdConn, error) {
	c.fwdMu.Lock()
	for len(c.fwdIdle) > 0 {
		f := c.fwdIdle[len(c.fwdIdle)-1]
		c.fwdIdle = c.fwdIdle[:len(c.fwdIdle)-1]
		if f.id == id {
			c.fwdMu.Unlock()
			return f, nil
		}
		f.conn.Close() // to a former leader
	}
	c.fwdMu.Unlock()
	conn, err := c.layer.dialID(ctx, id, addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte{rpcForward}); err != nil {
		conn.Close()
		return nil, err
	}
	return &fwdConn{id: id, conn: conn, enc: json.NewEncoder(conn), dec: json.NewDecoder(conn)}, nil
}

func (c *Coordinator) putForward(f *fwdConn) {
	c.fwdMu.Lock()
	defer c.fwdMu.Unlock()
	if len(c.fwdIdle) >= maxIdleForward || c.ctx.Err() != nil {
		f.conn.Close()
		return
	}
	c.fwdIdle = append(c.fwdIdle, f)
}

func (c *Coordinator) closeForwards() {
	c.fwdMu.Lock()
	defer c.fwdMu.Unlock()
	for _, f := range c.fwdIdle {
		f.conn.Close()
	}
	c.fwdIdle = nil
}

func (c *Coordinator) forward(ctx context.Context, cmd Command) (Map, error) {
	addr, id := c.raft.LeaderWithID()
	if id == "" {
		return Map{}, ErrNoLeader
	}
	f, err := c.takeForward(ctx, string(id), string(addr))
	if err != nil {
		return Map{}, fmt.Errorf("%w: reaching %s: %v", ErrNoLeader, id, err)
	}
	dl := time.Now().Add(10 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	_ = f.conn.SetDeadline(dl)
	if err := f.enc.Encode(cmd); err != nil {
		f.conn.Close()
		return Map{}, fmt.Errorf("%w: %v", ErrNoLeader, err)
	}
	var res Result
	if err := f.dec.Decode(&res); err != nil {
		f.conn.Close()
		return Map{}, fmt.Errorf("%w: answer from %s: %v", ErrNoLeader, id, err)
	}
	_ = f.conn.SetDeadline(time.Time{})
	c.putForward(f)
	return res.Map, errorFrom(res.Err)
}

// forwardIdle is how long the leader keeps a member's idle request
// connection open.
const forwardIdle = time.Minute

// serveForward answers a member's requests on the leader, one after
// another on the connection. Each counts as the certificate's identity,
// whatever its payload says.
func (c *Coordinator) serveForward(conn net.Conn) {
	defer conn.Close()
	dec, enc := json.NewDecoder(conn), json.NewEncoder(conn)
	from := peerOf(conn)
	select {
	case <-c.ready:
	case <-c.ctx.Done():
		return
	}
	for c.ctx.Err() == nil {
		_ = conn.SetDeadline(time.Now().Add(forwardIdle))
		var cmd Command
		if err := dec.Decode(&cmd); err != nil {
			return
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		cmd.From = from
		var res Result
		if cmd.Op == OpCertify && cmd.From != "" {
			res = c.serveCertify(cmd.From, cmd.Certs)
			if cmd.CertEarly && res.Err == "" {
				res.Early = c.earlyFor(cmd.CertSince, res.Certs)
			}
		} else if !remoteOps[cmd.Op] || cmd.From == "" {
			res.Err = fmt.Sprintf("%v: op %q cannot be asked remotely", ErrBadCommand, cmd.Op)
		} else if c.raft.State() != raft.Leader {
			res.Err = ErrNotLeader.Error()
		} else {
			m, err := c.applyLocal(c.ctx, cmd)
			res.Map = m
			if err != nil {
				res.Err = err.Error()
			}
		}
		if err := enc.Encode(res); err != nil {
			return
		}
	}
}

// Map is this voter's copy of the map (a follower's may trail the
// leader's by what is in flight, though never behind this voter's own
// requests once they returned; Watch delivers each change).
func (c *Coordinator) Map() Map {
	m, _ := c.fsm.state()
	return m
}

// Watch delivers the map after every change applied here, starting with
// the current one, until ctx ends or the coordinator closes. A slow reader
// skips to the latest map; it never delays Raft.
func (c *Coordinator) Watch(ctx context.Context) <-chan Map {
	in := c.fsm.watch()
	go func() {
		select {
		case <-ctx.Done():
		case <-c.ctx.Done():
		}
		c.fsm.unwatch(in)
	}()
	return in
}

// Grant is a lease as its holder must use it: valid until ValidUntil on
// this process's monotonic clock, measured from before the request left.
type Grant struct {
	Epoch      uint64
	Seq        uint64
	Duration   time.Duration
	ValidUntil time.Time
}

// Valid reports whether the lease still holds at now.
func (g Grant) Valid(now time.Time) bool { return g.Epoch != 0 && now.Before(g.ValidUntil) }

// AcquireLease asks for (or renews) the primary's lease in epoch, and
// reports gsn, the highest GSN this primary acknowledged to a client. The
// primary acknowledges commits only while the returned grant is Valid.
func (c *Coordinator) AcquireLease(ctx context.Context, epoch, gsn uint64) (Grant, error) {
	t0 := time.Now() // before the request: the grant cannot start earlier on any clock
	m, err := c.submit(ctx, Command{Op: OpLease, Epoch: epoch, GSN: gsn})
	if err != nil {
		return Grant{}, err
	}
	return Grant{Epoch: m.Lease.Epoch, Seq: m.Lease.Seq, Duration: m.Lease.Duration, ValidUntil: t0.Add(m.Lease.Duration)}, nil
}

// RenewLease is AcquireLease under its other name.
func (c *Coordinator) RenewLease(ctx context.Context, epoch, gsn uint64) (Grant, error) {
	return c.AcquireLease(ctx, epoch, gsn)
}

// ReleaseLease gives the lease up (a switchover, or a clean stop); the
// caller must have stopped acknowledging first.
func (c *Coordinator) ReleaseLease(ctx context.Context, epoch, gsn uint64) error {
	_, err := c.submit(ctx, Command{Op: OpRelease, Epoch: epoch, GSN: gsn})
	return err
}

// ReportAck records what this standby has acknowledged in epoch, and at
// which level.
func (c *Coordinator) ReportAck(ctx context.Context, epoch, gsn uint64, level string) error {
	_, err := c.submit(ctx, Command{Op: OpAck, Epoch: epoch, GSN: gsn, Level: level})
	return err
}

// SetDegraded is the primary telling the group it stops (or resumes)
// waiting for standby. It must be applied before the primary acknowledges
// any commit without that standby.
func (c *Coordinator) SetDegraded(ctx context.Context, epoch uint64, standby string, degraded bool) error {
	_, err := c.submit(ctx, Command{Op: OpDegrade, Epoch: epoch, Standby: standby, Degraded: degraded})
	return err
}

// Promote asks for target to become the primary once the current lease is
// free (released, or lapsed). epoch 0 means "whatever the current one is".
func (c *Coordinator) Promote(ctx context.Context, target string, epoch uint64) error {
	_, err := c.submit(ctx, Command{Op: OpHandOver, Target: target, Epoch: epoch, Reason: "promote"})
	return err
}

// Switchover is a planned Promote: the primary sees ErrHandingOver on its
// next renewal, stops acknowledging and releases the lease.
func (c *Coordinator) Switchover(ctx context.Context, target string, epoch uint64) error {
	_, err := c.submit(ctx, Command{Op: OpHandOver, Target: target, Epoch: epoch, Reason: "switchover"})
	return err
}

// RefineLoss reports the last GSN the new primary of epoch holds, so the
// change's loss count is commit_gsn - gsn rather than an estimate from the
// standbys' reports.
func (c *Coordinator) RefineLoss(ctx context.Context, epoch, gsn uint64) error {
	_, err := c.submit(ctx, Command{Op: OpRefine, Epoch: epoch, GSN: gsn})
	return err
}

// ReportTail is the old primary of the change into epoch, back: gsn is the
// highest GSN it answered success to a client (exact), or the end of its
// log when it does not know that (after a restart: an upper bound).
func (c *Coordinator) ReportTail(ctx context.Context, epoch, gsn uint64, exact bool) error {
	_, err := c.submit(ctx, Command{Op: OpTail, Epoch: epoch, GSN: gsn, Degraded: exact})
	return err
}

// SetSafeness records the safeness level the failover rule judges
// standbys by (tandem set). Raising it, the primary marks its standbys
// degraded first: they may lack commits acknowledged at the lower level.
func (c *Coordinator) SetSafeness(ctx context.Context, level string) error {
	_, err := c.submit(ctx, Command{Op: OpSafeness, Safeness: level})
	return err
}

// Leader is the current Raft leader's id and address ("" when none is
// known).
func (c *Coordinator) Leader() (id, addr string) {
	a, i := c.raft.LeaderWithID()
	return string(i), string(a)
}

// Addr is the raft listener's address.
func (c *Coordinator) Addr() string { return c.layer.Addr().String() }

// MemberStatus is one member as `tandem status` shows it.
type MemberStatus struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	Role     string `json:"role"`
	Voter    bool   `json:"voter"`
	Ack      *Ack   `json:"ack,omitempty"`
}

// Status is the coordinator as this voter sees it.
type Status struct {
	ID             string         `json:"id"`
	State          string         `json:"state"`
	Leader         string         `json:"leader"`
	Term           uint64         `json:"term"`
	Members        []MemberStatus `json:"members"`
	Epoch          uint64         `json:"epoch"`
	Primary        string         `json:"primary"`
	Automatic      bool           `json:"automatic"`
	LeaseHolder    string         `json:"lease_holder"`
	LeaseRemaining time.Duration  `json:"lease_remaining"` // as measured here, from the last lease entry applied here
	Lost           uint64         `json:"lost"`
	Transitions    []Transition   `json:"transitions,omitempty"`
}

// Status reports members, leader, term, and the lease.
func (c *Coordinator) Status() Status {
	m, seen := c.fsm.state()
	_, lid := c.raft.LeaderWithID()
	s := Status{ID: c.cfg.ID, State: c.raft.State().String(), Leader: string(lid), Term: c.raft.CurrentTerm(),
		Epoch: m.Epoch, Primary: m.Primary, Automatic: m.Automatic, Lost: m.Lost, Transitions: m.History}
	if m.Lease.Holder != "" && !m.Released {
		s.LeaseHolder = m.Lease.Holder
		if r := m.Lease.Duration - time.Since(seen); r > 0 {
			s.LeaseRemaining = r
		}
	}
	voters := map[string]bool{}
	if f := c.raft.GetConfiguration(); f.Error() == nil {
		for _, sv := range f.Configuration().Servers {
			voters[string(sv.ID)] = sv.Suffrage == raft.Voter
		}
	}
	for _, mem := range m.Members {
		ms := MemberStatus{ID: mem.ID, RaftAddr: mem.RaftAddr, Role: mem.Role, Voter: voters[mem.ID]}
		if a, ok := m.Acks[mem.ID]; ok {
			ms.Ack = &a
		}
		s.Members = append(s.Members, ms)
	}
	return s
}

// slogWriter carries hashicorp/raft's log lines into slog.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	lvl := slog.LevelInfo
	switch {
	case strings.Contains(line, "[ERROR]"):
		lvl = slog.LevelError
	case strings.Contains(line, "[WARN]"):
		lvl = slog.LevelWarn
	case strings.Contains(line, "[DEBUG]"), strings.Contains(line, "[TRACE]"):
		lvl = slog.LevelDebug
	}
	if i := strings.Index(line, "raft: "); i >= 0 {
		line = line[i+len("raft: "):]
	}
	w.log.Log(context.Background(), lvl, line, "from", "raft")
	return len(p), nil
}
