// Package node runs one tandem node: a back-end database (embedded SQLite,
// or a managed or external PostgreSQL) with tandem's front door in the same
// process, so a client statement crosses one tandem hop to its back end.
//
// It owns the node's life cycle: opening or starting the back end, serving
// the PostgreSQL protocol, the admin HTTP endpoint (metrics, status), and
// orderly shutdown. It must not decide cluster membership (coordinator)
// nor implement the protocol (pgwire), SQLite details (backend/sqlite) or
// the replication core (replication: node starts its agent and wires it).
package node

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/backend/sqlite"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/multimaster"
	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/physical"
	"github.com/tandemdb/tandem/replication"
	"github.com/tandemdb/tandem/router"
	"github.com/tandemdb/tandem/secure"
)

// ErrBackendExited means the node's managed PostgreSQL server stopped.
var ErrBackendExited = errors.New("back end exited")

// Status is what a node reports on /status.
type Status struct {
	ID       string              `json:"id"`
	Backend  string              `json:"backend"`
	Role     string              `json:"role"`
	Listen   string              `json:"listen"`
	Sessions int64               `json:"sessions"`
	Started  time.Time           `json:"started"`
	Detail   string              `json:"detail,omitempty"`
	Repl     *replication.Status `json:"replication,omitempty"`
	// Physical: the physical engine's LSNs, replicas and slots.
	Physical *physical.Status `json:"physical,omitempty"`
	Files    *FileLimit       `json:"open_files_limit,omitempty"`
	// Coordinator is this node's voter in the coordinator group (when the
	// cluster file gives it a raft_listen address).
	Coordinator *coordinator.Status `json:"coordinator,omitempty"`
	// MultiMaster: the multi-master agent (certifications, applied GSN).
	MultiMaster *multimaster.Status `json:"multi_master,omitempty"`
}

// Run serves node id of the cluster until ctx ends or the back end fails.
// ready, if not nil, is called once the node accepts connections.
func Run(ctx context.Context, c *config.Cluster, id string, log *slog.Logger, ready func(addr string)) error {
	n, ok := c.Node(id)
	if !ok {
		return fmt.Errorf("%w: %s: no node with id %q", config.ErrInvalid, c.File, id)
	}
	log = log.With("node", id)
	// Data and run directories are owner-only, whatever the umask.
	for _, d := range []string{c.RunDir, n.DataDir} {
		if d == "" {
			continue
		}
		if err := config.PrivateDir(d); err != nil {
			return fmt.Errorf("node %s: %w", id, err)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	tlsCfg, err := c.ServerTLS()
	if err != nil {
		return err
	}
	ident, err := Identity(c, id, log)
	if err != nil {
		return fmt.Errorf("node %s: %w", id, err)
	}
	token, err := AdminToken(c, true)
	if err != nil {
		return fmt.Errorf("node %s: %w: %s", id, config.ErrInvalid, err)
	}
	for _, u := range c.ClearTextPasswords {
		log.Warn("a password sits in clear text in the cluster file", "user", u, "file", c.File,
			"hint", "replace it with the verifier `tandem passwd` prints, or with env:NAME / file:PATH")
	}
	var trustCert func(tls.ConnectionState) bool
	if ident != nil {
		// The front door serves the node's cluster certificate (clients
		// verify it with sslrootcert=CERT_DIR/ca.crt), and lets tandem's
		// own hops (router, command line, peers) in by their certificate.
		if tlsCfg == nil {
			tlsCfg = ident.FrontDoorTLS()
		} else {
			// Applications get the operator's certificate; tandem's
			// own hops, which name this node (SNI), the cluster one.
			tlsCfg = ident.FrontDoorWith(tlsCfg)
		}
		trustCert = func(cs tls.ConnectionState) bool {
			p := secure.PeerID(cs)
			_, isNode := c.Node(p)
			return p == secure.RouterID || p == secure.AdminID || isNode
		}
	}
	memLimit := c.Limits.MessageMemory
	if memLimit == 0 {
		memLimit = defaultMessageMemory(c.Limits.MaxMessageBytes)
	}
	budget := pgwire.NewMemoryBudget(memLimit, c.Limits.MemoryWait(), log)
	go releaseIdleMemory(ctx, 2*time.Second)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tandem_node_message_memory_bytes", Help: "Bytes of large messages the node holds now (limits.message_memory)."}, func() float64 { return float64(budget.InUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tandem_node_message_memory_limit_bytes", Help: "limits.message_memory."}, func() float64 { return float64(memLimit) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tandem_node_messages_refused_memory_total", Help: "Messages refused with 53200 for limits.message_memory."}, func() float64 { return float64(budget.Refused()) }))
	keepalive := pgwire.Keepalive{Idle: c.Limits.TCPKeepalivesIdle.Duration, Interval: c.Limits.TCPKeepalivesInterval.Duration, Count: c.Limits.TCPKeepalivesCount}
	pwcfg := pgwire.Config{
		TrustCert:       trustCert,
		TLS:             tlsCfg,
		RequireTLS:      c.TLS.Require,
		Auth:            pgwire.AuthMethod(c.Auth),
		Passwords:       c.Password,
		MaxMessageBytes: c.Limits.MaxMessageBytes,
		MaxConnections:  c.Limits.MaxConnections,
		Logger:          log,

		MaxStartupConnections: c.Limits.MaxStartupConnections,
		StartupTimeout:        c.Limits.StartupTimeout.Duration,
		Keepalive:             keepalive,
		Budget:                budget,
	}
	st := Status{ID: id, Backend: n.Backend, Role: "primary", Listen: n.Listen, Started: time.Now()}
	var handler pgwire.Handler
	var backendDone <-chan struct{}
	var repl *replication.Agent
	var mm *multimaster.Agent
	var db0 multimaster.Store // the back end (multi-master's snapshots)
	var phys *physical.Engine
	var door *gate // an external server's front door (physical engine)
	var coord *coordinator.Coordinator
	var replClose []func()
	defer func() {
		for i := len(replClose) - 1; i >= 0; i-- {
			replClose[i]()
		}
	}()
	// startRepl runs the replication agent of a replicated design over a
	// back end: recovery, the stream listener, log retention, and the
	// standby's follower.
	startRepl := func(db replication.Store, enable func(*replication.Agent) error) error {
		var err error
		if repl, err = replication.New(ctx, c, id, n.DataDir, db, log, reg); err != nil {
			return err
		}
		repl.SetTrust(ident, token)
		replClose = append(replClose, repl.Close)
		if err := enable(repl); err != nil {
			return err
		}
		rl, err := net.Listen("tcp", n.Repl)
		if err != nil {
			return fmt.Errorf("node %s: listen on %s (field nodes.repl_listen): %w", id, n.Repl, err)
		}
		go repl.Serve(ctx, rl)
		go repl.Retain(ctx, time.Second)
		repl.StepDownIfStale(ctx)
		if repl.Role() == replication.RoleStandby && !repl.Following() {
			repl.StartFollowing(ctx)
		}
		st.Role = repl.Role()
		if coord, err = startCoordinator(c, id, ident, log, reg); err != nil {
			return err
		}
		if coord != nil {
			replClose = append(replClose, func() { _ = coord.Close() })
			repl.AttachCoordinator(ctx, coord)
		}
		return nil
	}
	switch n.Backend {
	case "sqlite":
		var db *sqlite.DB
		db, err = sqlite.Open(sqlite.Options{
			Path:        filepath.Join(n.DataDir, "tandem.db"),
			Synchronous: n.SQLite.Synchronous,
			ReadPool:    n.SQLite.ReadPool,
			BusyTimeout: n.SQLite.BusyTimeout.Duration,
			Logger:      log,
		})
		if err != nil {
			return err
		}
		replClose = append(replClose, func() { db.Close() })
		db0 = db
		st.Detail = db.Path()
		handler = &pgwire.Executor{Backend: db, StatementTimeout: c.Limits.StatementTimeout.Duration,
			IdleInTransactionTimeout: c.Limits.IdleInTransaction("sqlite"), IdleSessionTimeout: c.Limits.IdleSessionTimeout.Duration,
			MessageReadTimeout: c.Limits.MessageRead(), Keepalive: keepalive, Logger: log}
		if c.Replicated() {
			if err := startRepl(db, func(r *replication.Agent) error { return db.EnableReplication(r) }); err != nil {
				return err
			}
		}
		if c.MultiMaster() {
			// Every node draws from its sequences only values of its own
			// (multi_master.sequence_stride).
			db.SetSequenceStride(c.SequenceStride(id))
			if mm, coord, err = startMultiMaster(ctx, c, id, db, func(a *multimaster.Agent) error { return db.EnableReplication(a) }, ident, token, log, reg); err != nil {
				return err
			}
			replClose = append(replClose, func() { _ = coord.Close() })
		}
	case "postgres":
		up := router.Upstream{Node: id}
		backendDSN := n.DSN
		// The writeset engine: tandem runs the sessions and captures
		// writesets (single-master, hot-standby on engine writeset,
		// multi-master).
		wsEngine := (c.Replicated() && !c.Physical()) || c.MultiMaster()
		if c.Physical() {
			// The physical engine: PostgreSQL's streaming replication;
			// sessions ride the relay as in the standalone design (a
			// standby's server answers writes with 25006 itself).
			pcfg := physical.Config{Cluster: c, ID: id, Ident: ident, Token: token, Logger: log}
			if n.DSN != "" {
				door = &gate{}
				pcfg.Door = door
			}
			eng, err := physical.New(pcfg)
			if err != nil {
				return fmt.Errorf("node %s: %w", id, err)
			}
			replClose = append(replClose, eng.Close)
			if err := eng.Start(ctx); err != nil {
				return fmt.Errorf("node %s: %w", id, err)
			}
			phys = eng
			backendDone = eng.Failed()
			if coord, err = startCoordinator(c, id, ident, log, reg); err != nil {
				return err
			}
			if coord != nil {
				replClose = append(replClose, func() { _ = coord.Close() })
				eng.AttachCoordinator(ctx, coord)
			}
			go eng.Watch(ctx, 250*time.Millisecond)
			if eng.External() {
				// The operator's server: sessions log in as the
				// dsn's role, as on a standalone external server.
				if up, err = externalUpstream(c, id, n.DSN); err != nil {
					return err
				}
				st.Detail = "external PostgreSQL at " + up.Addr + " (physical replication)"
			} else {
				up.Addr = eng.Socket()
				st.Detail = "managed PostgreSQL (physical replication), socket " + eng.Socket()
			}
		} else if n.DSN == "" {
			settings := map[string]string{}
			for k, v := range n.Postgres.Settings {
				settings[k] = v
			}
			if _, set := settings["synchronous_commit"]; !set && wsEngine {
				// tandem's replication log carries durability; the back end
				// stays crash-consistent and re-applies from the log.
				settings["synchronous_commit"] = "off"
			}
			if _, err := os.Stat(physical.StatePath(n.DataDir)); err == nil && wsEngine {
				return fmt.Errorf("node %s: %w: %s was made by the physical engine (%s exists): set engine = \"physical\" in [replication] to keep running it that way, or move this node's data directory away to start the writeset engine afresh",
					id, physical.ErrOtherEngine, filepath.Join(n.DataDir, "pgdata"), physical.StatePath(n.DataDir))
			}
			m, err := postgres.StartManaged(ctx, postgres.ManagedConfig{
				DataDir:  filepath.Join(n.DataDir, "pgdata"),
				BinDir:   n.Postgres.BinDir,
				Port:     n.Postgres.Port,
				Avoid:    clusterPorts(c),
				Settings: settings,
				Logger:   log,
			})
			if err != nil {
				return err
			}
			defer m.Stop()
			backendDone = m.Done()
			// The server listens on its Unix socket only (0700 data
			// directory). The relay logs in there in the client's name,
			// to the database the client named: the client's role is
			// an ordinary one unless the cluster file grants superuser.
			up.Addr = m.Socket()
			backendDSN = m.SocketDSN("postgres")
			if wsEngine {
				// The pair replicates one database: the one tandem's
				// DSNs name. A session naming another gets 3D000.
				if err := m.EnsureDatabase(ctx, config.DefaultDatabase); err != nil {
					return fmt.Errorf("node %s: %w", id, err)
				}
				backendDSN = m.SocketDSN(config.DefaultDatabase)
			}
			st.Detail = fmt.Sprintf("managed PostgreSQL pid %d socket %s", m.PID(), m.Socket())
			if !wsEngine {
				if err := m.EnsureRoles(ctx, pgRoles(c)); err != nil {
					return fmt.Errorf("node %s: %w", id, err)
				}
			}
		} else {
			if up, err = externalUpstream(c, id, n.DSN); err != nil {
				return err
			}
			st.Detail = "external PostgreSQL at " + up.Addr
		}
		if wsEngine {
			be, err := postgres.NewBackend(ctx, backendDSN)
			if err != nil {
				return err
			}
			be.BinDir = n.Postgres.BinDir
			be.StrictDatabase = n.DSN == ""
			if n.DSN == "" {
				// Sessions run as their client's role on the managed
				// server, not as its superuser.
				if err := be.UseRoles(ctx, pgRoles(c)); err != nil {
					return fmt.Errorf("node %s: %w", id, err)
				}
			}
			if c.MultiMaster() {
				// Every node draws from its sequences only values of its
				// own (multi_master.sequence_stride).
				be.SetSequenceStride(c.SequenceStride(id))
				if mm, coord, err = startMultiMaster(ctx, c, id, be, func(a *multimaster.Agent) error { return be.EnableMultiMaster(ctx, a) }, ident, token, log, reg); err != nil {
					return err
				}
				replClose = append(replClose, func() { _ = coord.Close() })
				db0 = be
				st.Role = "primary"
			} else if err := startRepl(be, func(r *replication.Agent) error { return be.EnableReplication(ctx, r) }); err != nil {
				return err
			}
			handler = &pgwire.Executor{Backend: be,
				IdleInTransactionTimeout: c.Limits.IdleInTransaction("postgres"), IdleSessionTimeout: c.Limits.IdleSessionTimeout.Duration,
				MessageReadTimeout: c.Limits.MessageRead(), Keepalive: keepalive, Logger: log}
			break
		}
		// The relay hands each client a server session of its own: the
		// server enforces the idle timeouts (its own SQLSTATEs, SET and
		// SHOW), set at connect unless nodes.postgres.settings names them.
		up.Settings = SessionSettings(c, n)
		// Watch: a server seen down is seen up again within 500 ms; one
		// seen up is dialed every 10 s, or at once when a session's
		// connect fails or its connection ends (each dial forks a
		// server process: QuietDialEvery).
		rt := router.New(router.Config{Nodes: []router.Upstream{up}, MaxMessageBytes: c.Limits.MaxMessageBytes, Logger: log, Registerer: reg, QuietDialEvery: 10 * time.Second})
		go rt.Watch(ctx, 500*time.Millisecond)
		handler = rt
		// TLS clients (the router's hop, by default) are relayed on the
		// epoll loops too.
		pwcfg.TLSTransport = router.ClientTransport
		if door != nil {
			door.Handler = rt
			handler = door
		}
	default:
		return fmt.Errorf("%w: node %s: backend %q", config.ErrInvalid, id, n.Backend)
	}

	if ex, ok := handler.(*pgwire.Executor); ok {
		// SHOW tandem.node, and the router's read consistency
		// (pgwire/readgsn.go).
		ex.NodeID = id
		if repl != nil {
			ex.Positions = repl
		}
		if mm != nil {
			ex.Positions = mm
		}
		if c.Router != nil {
			ex.ReadWait, ex.ReadConsistency = c.Router.ReadWait.Duration, c.Router.ReadConsistency
		}
	}
	srv := pgwire.NewServer(pwcfg, handler)
	sessions := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tandem_node_sessions", Help: "Open client sessions on this node."}, func() float64 { return float64(srv.Active()) })
	reg.MustRegister(sessions)
	l, err := net.Listen("tcp", n.Listen)
	if err != nil {
		return fmt.Errorf("node %s: listen on %s (field nodes.listen): %w", id, n.Listen, err)
	}
	if n.Metrics != "" {
		mux := http.NewServeMux()
		// Reads (metrics, status) are open unless security.metrics_auth;
		// actions and pprof always need the admin token.
		read := func(h http.Handler) http.Handler {
			if c.Security.MetricsAuth {
				return secure.RequireToken(token, log, false, h)
			}
			return h
		}
		mux.Handle("/metrics", read(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
		if c.Security.Pprof {
			mux.Handle("/debug/pprof/", secure.RequireToken(token, log, false, http.HandlerFunc(pprof.Index)))
			mux.Handle("/debug/pprof/profile", secure.RequireToken(token, log, false, http.HandlerFunc(pprof.Profile)))
			mux.Handle("/debug/pprof/symbol", secure.RequireToken(token, log, false, http.HandlerFunc(pprof.Symbol)))
			mux.Handle("/debug/pprof/trace", secure.RequireToken(token, log, false, http.HandlerFunc(pprof.Trace)))
		}
		if repl != nil {
			repl.RegisterAdmin(mux, token, log)
			mux.Handle("/watch", read(repl.WatchHandler()))
		}
		if mm != nil {
			registerMultiMasterAdmin(mux, mm, db0, token, log)
		}
		if phys != nil {
			phys.RegisterAdmin(mux, token, log)
			mux.Handle("/watch", read(phys.WatchHandler()))
		}
		mux.Handle("/status", read(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			s := st
			s.Sessions = srv.Active()
			s.Files = CurrentFileLimit()
			if repl != nil {
				rs := repl.Status()
				s.Repl, s.Role = &rs, rs.Role
			}
			if phys != nil {
				var ps physical.Status
				if req.URL.Query().Has("probe") {
					// The router's health probe (router.Watch), twice a
					// second: role, epoch and position only.
					ps = phys.Probe(req.Context())
				} else {
					ps = phys.Status(req.Context())
				}
				// The role, epoch and primary where the router and the
				// command line read them for either engine.
				s.Repl = &replication.Status{Role: ps.Role, Epoch: ps.Epoch, Primary: ps.Primary, Safeness: ps.Safeness, Durability: "strict", Effective: "strict", Degraded: ps.Degraded}
				// WAL positions where the writeset engine reports GSNs:
				// the router's lag and read consistency use them
				// (physical/DESIGN.md "Read consistency").
				if lsn, err := physical.ParseLSN(ps.LSN); err == nil && ps.Role == physical.RolePrimary {
					s.Repl.Applied, s.Repl.Assigned = lsn, lsn
				} else if lsn, err := physical.ParseLSN(ps.Replayed); err == nil {
					s.Repl.Applied = lsn
				}
				s.Role, s.Physical = ps.Role, &ps
			}
			if mm != nil {
				ms := mm.Status()
				s.MultiMaster = &ms
				// Every node takes writes: each reports the primary role
				// of epoch 1 where the router reads roles and GSNs.
				s.Role = "primary"
				s.Repl = &replication.Status{Role: "primary", Epoch: 1, Assigned: ms.Certifier.Last, Applied: ms.AppliedGSN, Safeness: "certified", Durability: "raft", Effective: "raft"}
			}
			if coord != nil {
				cs := coord.Status()
				s.Coordinator = &cs
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(s)
		})))
		hl, err := net.Listen("tcp", n.Metrics)
		if err != nil {
			l.Close()
			return fmt.Errorf("node %s: listen on %s (field nodes.metrics): %w", id, n.Metrics, err)
		}
		adminTLS := ident != nil && c.AdminTLS(n.Metrics)
		if !config.IsLoopback(n.Metrics) && !adminTLS {
			log.Warn("the admin address is not on loopback and inter_node = \"none\": the admin token crosses the network in clear text (HTTP)",
				"metrics", n.Metrics, "hint", "keep nodes.metrics on 127.0.0.1, or use inter_node = \"mtls\" (then it serves HTTPS)")
		}
		// net/http backs off on temporary accept errors (EMFILE) by itself.
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		if adminTLS {
			// Off loopback the admin address serves HTTPS with the node's
			// certificate (clients verify it with the cluster CA).
			hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{ident.Cert}}
			hl = tls.NewListener(hl, hs.TLSConfig)
		}
		go func() { _ = hs.Serve(hl) }()
		defer hs.Close()
	}
	log.Info("node serving", "listen", l.Addr().String(), "backend", n.Backend, "detail", st.Detail)
	if ready != nil {
		ready(l.Addr().String())
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(sctx, l) }()
	ul, err := srv.ServeUnix(sctx, n.UnixSocketDir, l.Addr().(*net.TCPAddr).Port)
	if err != nil {
		cancel()
		l.Close()
		return fmt.Errorf("node %s: field nodes.unix_socket_dir: %w", id, err)
	}
	if ul != nil {
		defer ul.Close()
		log.Info("node serving on a Unix socket", "socket", ul.Addr().String())
	}
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		runErr = err
	case <-backendDone:
		runErr = fmt.Errorf("node %s: %w: the managed PostgreSQL server stopped (see its log in %s)", id, ErrBackendExited, n.DataDir)
	}
	cancel()
	l.Close()
	srv.CloseAll()
	log.Info("node stopped")
	return runErr
}

// SessionSettings are the run-time settings a relayed session starts with
// on node n's PostgreSQL server: the cluster file's idle timeouts, which
// the server then enforces (its own SQLSTATEs, SET and SHOW), unless
// nodes.postgres.settings names them (nil: none).
func SessionSettings(c *config.Cluster, n *config.Node) map[string]string {
	var s map[string]string
	for name, d := range map[string]time.Duration{
		"idle_in_transaction_session_timeout": c.Limits.IdleInTransaction("postgres"),
		"idle_session_timeout":                c.Limits.IdleSessionTimeout.Duration,
	} {
		if _, set := n.Postgres.Settings[name]; !set && d > 0 {
			if s == nil {
				s = map[string]string{}
			}
			s[name] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	return s
}

// pgRoles are the cluster file's users as roles of a managed PostgreSQL.
// With auth = "trust" and no users listed, the default user (what `tandem
// up` prints and logs in as) is one, an ordinary role.
func pgRoles(c *config.Cluster) []postgres.Role {
	if len(c.Users) == 0 {
		name, _ := c.InternalUser()
		return []postgres.Role{{Name: name}}
	}
	roles := make([]postgres.Role, 0, len(c.Users))
	for _, u := range c.Users {
		roles = append(roles, postgres.Role{Name: u.Name, Superuser: u.Superuser})
	}
	return roles
}

// clusterPorts lists every port the cluster file names, so a managed server
// picking a free port cannot take one a listener of this cluster is about
// to bind.
func clusterPorts(c *config.Cluster) []int {
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Listen, n.Metrics, n.Repl)
	}
	if c.Router != nil {
		addrs = append(addrs, c.Router.Listen, c.Router.ReadListen, c.Router.Metrics)
	}
	var ports []int
	for _, a := range addrs {
		if _, p, err := net.SplitHostPort(a); err == nil {
			if n, err := strconv.Atoi(p); err == nil && n > 0 {
				ports = append(ports, n)
			}
		}
	}
	return ports
}

// externalUpstream is the relay's way to an external server: its address
// and the dsn's role, password and database.
func externalUpstream(c *config.Cluster, id, dsn string) (router.Upstream, error) {
	pc, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return router.Upstream{}, fmt.Errorf("%w: %s: field nodes.dsn (node %s): %v", config.ErrInvalid, c.File, id, err)
	}
	up := router.Upstream{Node: id, Addr: net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port)))}
	if strings.HasPrefix(pc.Host, "/") {
		up.Addr = filepath.Join(pc.Host, ".s.PGSQL."+strconv.Itoa(int(pc.Port)))
	}
	up.User, up.Password, up.Database = pc.User, pc.Password, pc.Database
	if pc.TLSConfig != nil && len(pc.Fallbacks) == 0 {
		// sslmode=require, verify-ca or verify-full: sessions travel
		// to the server over TLS as the dsn says (prefer and allow,
		// which fall back to plain text, keep plain text).
		up.TLS = pc.TLSConfig
	}
	return up, nil
}

// gate is a node's front door to an external server's sessions: the
// physical engine closes it while it fences the server (a lost lease, a
// server that must rejoin), and a closed door opens no session.
type gate struct {
	pgwire.Handler
	closed atomic.Bool
}

// SetOpen opens or closes the door.
func (g *gate) SetOpen(open bool) { g.closed.Store(!open) }

// Open refuses while the door is closed.
func (g *gate) Open(ctx context.Context, c *pgwire.Conn) (pgwire.Session, error) {
	if g.closed.Load() {
		return nil, &pgwire.Error{Code: pgwire.CodeCannotConnectNow, Message: "this node's PostgreSQL server is fenced (it is not the primary of the current epoch, or it lost its lease)",
			Hint: "connect through the router, or to the primary's node (tandem status)"}
	}
	return g.Handler.Open(ctx, c)
}
