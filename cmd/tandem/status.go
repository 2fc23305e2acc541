package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/physical"
	"github.com/tandemdb/tandem/router"
	"github.com/tandemdb/tandem/secure"
)

// probe is one process's health as `tandem status` sees it.
type probe struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	Role      string  `json:"role"`
	Addr      string  `json:"addr"`
	Backend   string  `json:"backend,omitempty"`
	Healthy   bool    `json:"healthy"`
	LatencyMS float64 `json:"latency_ms,omitempty"`
	PID       int     `json:"pid,omitempty"`
	Error     string  `json:"error,omitempty"`
	Sessions  *int64  `json:"sessions,omitempty"`
	Repl      any     `json:"replication,omitempty"`
	Files     any     `json:"open_files_limit,omitempty"`
	// Nodes: the router's view of every node (its admin /status).
	Nodes []router.NodeStatus `json:"nodes,omitempty"`
	repl  *nodeStatus
}

func newStatusCmd() *cobra.Command {
	var file string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status -c FILE",
		Short: "Print the cluster's nodes, roles and health",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadCluster(file)
			if err != nil {
				return err
			}
			// The command line logs in to nodes by its cluster certificate
			// when it has one (no password needed).
			ident, _ := node.Identity(c, secure.AdminID, nil)
			pids := map[string]int{}
			if procs, err := cluster.ReadState(c.RunDir); err == nil {
				for _, p := range procs {
					pids[p.Name] = p.PID
				}
			}
			user, pass := c.InternalUser()
			var out []probe
			for _, n := range c.Nodes {
				p := probe{Name: n.ID, Kind: "node", Role: "primary", Addr: n.Listen, Backend: n.Backend, PID: pids[n.ID]}
				if c.Replicated() {
					// Its role is what its /status says; a node that does not
					// answer it (down) has none to show, not "primary".
					p.Role = "-"
				}
				pingPG(cmd.Context(), &p, user, pass, clientTLS(c, ident, n.ID))
				if n.Metrics != "" {
					var s struct {
						Sessions int64           `json:"sessions"`
						Files    *node.FileLimit `json:"open_files_limit"`
						nodeStatus
					}
					if getJSON(&n, "/status", &s) == nil {
						p.Sessions = &s.Sessions
						if s.Files != nil {
							p.Files = s.Files
						}
						if s.Repl != nil {
							p.Role, p.Repl, p.repl = s.Repl.Role, s.Repl, &s.nodeStatus
						}
					}
				}
				out = append(out, p)
			}
			if c.Router != nil {
				p := probe{Name: "router", Kind: "router", Role: "router", Addr: c.Router.Listen, PID: pids["router"]}
				pingPG(cmd.Context(), &p, user, pass, clientTLS(c, ident, secure.RouterID))
				if c.Router.Metrics != "" {
					var ns []router.NodeStatus
					if err := getJSON(routerAdmin(c), "/status", &ns); err == nil {
						p.Nodes = ns
					}
				}
				out = append(out, p)
			}
			if w := c.Witness; w != nil {
				out = append(out, probeWitness(w, pids[w.ID]))
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				doc := map[string]any{"cluster": c.Name, "design": c.Design, "processes": out}
				if cs := leaderView(out); cs != nil {
					doc["coordinator"] = cs
				}
				return enc.Encode(doc)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %q, design %s\n", c.Name, c.Design)
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tROLE\tADDRESS\tBACKEND\tHEALTH\tLATENCY\tPID\tDETAIL")
			for _, p := range out {
				health, lat := "down", "-"
				if p.Healthy {
					health, lat = "up", fmt.Sprintf("%.2f ms", p.LatencyMS)
				}
				detail := p.Error
				if p.Sessions != nil {
					detail = fmt.Sprintf("%d sessions", *p.Sessions)
				}
				pid := "-"
				if p.PID != 0 {
					pid = fmt.Sprint(p.PID)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Kind, p.Role, p.Addr, dash(p.Backend), health, lat, pid, detail)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if err := printRouterView(cmd.OutOrStdout(), out); err != nil {
				return err
			}
			if c.MultiMaster() {
				return printMultiMaster(cmd.OutOrStdout(), out)
			}
			if c.Physical() {
				if err := printPhysical(cmd.OutOrStdout(), out); err != nil {
					return err
				}
				printCoordinator(cmd.OutOrStdout(), out, true)
				return nil
			}
			if c.Design != "standalone" {
				fmt.Fprintln(cmd.OutOrStdout())
				tw = tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NODE\tROLE\tEPOCH\tASSIGNED\tDURABLE\tRECEIVED\tAPPLIED\tLAG\tSAFENESS\tDURABILITY\tSTATE")
				var primaryGSN uint64
				for _, p := range out {
					if p.Kind == "node" && p.repl != nil && p.repl.Repl != nil && p.repl.Repl.Role == "primary" {
						primaryGSN = p.repl.Repl.Assigned
					}
				}
				for _, p := range out {
					if p.Kind != "node" {
						continue
					}
					if p.repl == nil || p.repl.Repl == nil {
						if p.Kind == "node" {
							fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\tdown\n", p.Name)
						}
						continue
					}
					r := p.repl.Repl
					lag := "-"
					if primaryGSN >= r.Applied {
						lag = fmt.Sprint(primaryGSN - r.Applied)
					}
					state := "ok"
					if r.Degraded {
						state = "degraded (1-safe: no standby acknowledging)"
					}
					if f := r.ApplyFailed; f != nil {
						state = fmt.Sprintf("APPLY FAILED at GSN %d, stopped following: %s (statement %q); fix and restart, or re-seed", f.GSN, f.Error, f.Statement)
					}
					for _, id := range slices.Sorted(maps.Keys(r.FailedStandbys)) {
						state += fmt.Sprintf("; standby %s failed to apply GSN %d", id, r.FailedStandbys[id].GSN)
					}
					dur := r.Durability
					if r.Effective != r.Durability {
						dur += " (now " + r.Effective + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", p.Name, r.Role, r.Epoch, r.Assigned, r.Durable, r.Received, r.Applied, lag, r.Safeness, dur, state)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				printCoordinator(cmd.OutOrStdout(), out, false)
				return nil
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// printMultiMaster prints each node's certifications and applied GSN,
// and the certifier as the coordinator's leader holds it.
func printMultiMaster(w io.Writer, out []probe) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE	APPLIED	LAG	COMMITS	ABORTS	TOO OLD	UNKNOWN	EARLY ABORTS	APPLY SKIPPED	STATE")
	var cert *coordinator.CertStatus
	for _, p := range out {
		if p.Kind != "node" {
			continue
		}
		if p.repl == nil || p.repl.MultiMaster == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\tdown\n", p.Name)
			continue
		}
		m := p.repl.MultiMaster
		state := "ok"
		switch {
		case m.Stalled != "":
			state = m.Stalled
		case m.Reseeding:
			state = "re-seeding from a peer"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Name, m.AppliedGSN, m.Lag, m.Commits, m.Aborts, m.TooOld, m.Unknown, m.EarlyAborts, m.ApplySkipped, state)
		if cert == nil || m.Certifier.Last > cert.Last {
			c := m.Certifier
			cert = &c
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// How each node applied and what its commits waited for, since it
	// started (docs/operations.md "Multi-master").
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE	APPLY BATCHES	WRITESETS/BATCH	OWN IN BATCHES	OWN APPLIED AT ONCE	CERTIFY MS	THEN LOG MS	THEN APPLY MS")
	for _, p := range out {
		if p.Kind != "node" || p.repl == nil || p.repl.MultiMaster == nil {
			continue
		}
		m := p.repl.MultiMaster
		per, certMs, logMs, applyMs := "-", "-", "-", "-"
		if m.ApplyBatches > 0 {
			per = fmt.Sprintf("%.1f", float64(m.ApplyWritesets)/float64(m.ApplyBatches))
		}
		if m.Certifications > 0 {
			certMs = fmt.Sprintf("%.1f", 1000*m.CertifySeconds/float64(m.Certifications))
		}
		if m.CommitWaits > 0 {
			logMs = fmt.Sprintf("%.1f", 1000*m.LogWaitSeconds/float64(m.CommitWaits))
			applyMs = fmt.Sprintf("%.1f", 1000*m.ApplyWaitSeconds/float64(m.CommitWaits))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n", p.Name, m.ApplyBatches, per, m.ApplyOwn, m.FastApplies, certMs, logMs, applyMs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if cert != nil {
		fmt.Fprintf(w, "\ncertifier: last GSN %d, window %d writesets (%d bytes) after GSN %d; decisions on this member since it started: %d commits, %d conflicts, %d too old\n",
			cert.Last, cert.Len, cert.Bytes, cert.Base, cert.Commits, cert.Conflicts, cert.TooOld)
	}
	if cs := leaderView(out); cs != nil {
		fmt.Fprintf(w, "coordinator (as %s sees it): leader %s, term %d\n", cs.ID, dash(cs.Leader), cs.Term)
	}
	return nil
}

// printPhysical prints the physical engine's view: each node's role and
// WAL positions, the primary's WAL streams (pg_stat_replication) and the
// replication slots.
func printPhysical(w io.Writer, out []probe) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tEPOCH\tLSN\tRECEIVED\tREPLAYED\tREPLAY LAG\tSAFENESS\tSYNCHRONOUS_COMMIT\tSTATE")
	var streams []physical.Replica
	var slots []string
	for _, p := range out {
		if p.Kind != "node" {
			continue
		}
		if p.repl == nil || p.repl.Physical == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\tdown\n", p.Name)
			continue
		}
		ph := p.repl.Physical
		state := "ok"
		if ph.Rejoin != "" {
			state = "fenced, waiting for its operator: " + ph.Rejoin
		} else if ph.Error != "" {
			state = "server not answering: " + ph.Error
		} else if ph.Role == "standby" {
			state = "wal receiver " + ph.Receiver
		} else if ph.Degraded {
			state = "degraded (1-safe: no standby streaming)"
		}
		lag := "-"
		if ph.Role == "standby" && ph.Replayed != "" {
			lag = fmt.Sprintf("%d bytes", ph.ReplayLagBytes)
			if ph.ReplayDelay != nil {
				lag += fmt.Sprintf(", last replayed commit %s old", time.Duration(*ph.ReplayDelay*float64(time.Second)).Round(time.Millisecond))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, ph.Role, ph.Epoch, dash(ph.LSN), dash(ph.Received), dash(ph.Replayed), lag, ph.Safeness, dash(ph.SynchronousCommit), state)
		if ph.Role == "primary" {
			streams = append(streams, ph.Replicas...)
		}
		for _, sl := range ph.Slots {
			safe := "unbounded"
			if sl.SafeWALBytes >= 0 {
				safe = fmt.Sprintf("%d bytes", sl.SafeWALBytes)
			}
			slots = append(slots, fmt.Sprintf("%s\t%s\t%v\t%s\t%s\t%s", p.Name, sl.Name, sl.Active, dash(sl.RestartLSN), dash(sl.WALStatus), safe))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(streams) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "REPLICA\tSTATE\tSYNC\tSENT\tWRITTEN\tFLUSHED\tREPLAYED\tLAG BYTES\tWRITE LAG\tFLUSH LAG\tREPLAY LAG")
		for _, r := range streams {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Node, r.State, r.SyncState, dash(r.Sent), dash(r.Written), dash(r.Flushed), dash(r.Replayed), r.LagBytes, dash(r.WriteLag), dash(r.FlushLag), dash(r.ReplayLag))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(slots) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ON\tSLOT\tACTIVE\tRESTART LSN\tWAL STATUS\tSAFE WAL")
		for _, l := range slots {
			fmt.Fprintln(tw, l)
		}
		return tw.Flush()
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clientTLS is the command line's TLS configuration to reach server: its
// cluster certificate, else (inter_node = "none") encryption without
// verification when the front doors speak TLS (sslmode=require), else nil.
func clientTLS(c *config.Cluster, ident *secure.Identity, server string) *tls.Config {
	if ident != nil {
		return ident.ClientTLS(server)
	}
	if c.TLS.Cert != "" {
		return &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // sslmode=require semantics, loopback only
	}
	return nil
}

// pingPG logs in over the PostgreSQL protocol and runs SELECT 1.
func pingPG(ctx context.Context, p *probe, user, pass string, tlsCfg *tls.Config) {
	host, port, _ := net.SplitHostPort(p.Addr)
	cfg, err := pgconn.ParseConfig(fmt.Sprintf("host=%s port=%s sslmode=disable connect_timeout=3", host, port))
	if err != nil {
		p.Error = err.Error()
		return
	}
	// The user's own database, as libpq's default.
	cfg.User, cfg.Password, cfg.Database = user, pass, user
	if tlsCfg != nil {
		cfg.TLSConfig = tlsCfg
	}
	// A verifier is no password: with a certificate the process lets the
	// command line in without one; without, the server's refusal of the
	// password still proves it serves.
	verifier := strings.HasPrefix(pass, "SCRAM-SHA-256$")
	if verifier {
		cfg.Password = ""
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(cctx, cfg)
	if err != nil {
		var pe *pgconn.PgError
		if verifier && (tlsCfg == nil || len(tlsCfg.Certificates) == 0) && errors.As(err, &pe) && pe.Code == "28P01" {
			p.Healthy = true
			p.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
			return
		}
		p.Error = err.Error()
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(cctx, "SELECT 1").ReadAll(); err != nil {
		p.Error = err.Error()
		return
	}
	p.Healthy = true
	p.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
}

func getJSON(n *config.Node, path string, v any) error {
	cl := adminClient(n, 3*time.Second)
	url := adminURL(n, path)
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if cliToken != "" {
		req.Header.Set("Authorization", "Bearer "+cliToken)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// routerAdmin is the router's admin address as a node entry (adminPost,
// getJSON: the server certificate names "router").
func routerAdmin(c *config.Cluster) *config.Node {
	return &config.Node{ID: secure.RouterID, Metrics: c.Router.Metrics}
}

// printRouterView prints the router's view of the nodes: role, applied
// GSN, lag, weights, drain, and the sessions and transactions it routed.
func printRouterView(w io.Writer, out []probe) error {
	for _, p := range out {
		if p.Kind != "router" || len(p.Nodes) == 0 {
			continue
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "router (as it routes):")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NODE\tROLE\tHEALTH\tAPPLIED\tLAG\tWEIGHT\tREAD_WEIGHT\tDRAINING\tREADS\tSESSIONS\tTRANSACTIONS\tOPEN")
		for _, n := range p.Nodes {
			health := "up"
			if !n.Healthy {
				health = "down"
			}
			reads := "yes"
			switch {
			case !n.Healthy:
				reads = "no (down)"
			case n.Draining:
				reads = "no (draining)"
			case n.Lagging:
				reads = "no (lagging)"
			case n.ReadWeight == 0:
				reads = "no (read_weight 0)"
			}
			lag := fmt.Sprint(n.Lag)
			if n.LagTime > 0 {
				lag += fmt.Sprintf(" (%v)", n.LagTime.Round(time.Millisecond))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%d\t%d\t%v\t%s\t%d\t%d\t%d\n", n.ID, n.Role, health, n.AppliedGSN, lag, n.Weight, n.ReadWeight, n.Draining, reads, n.Sessions, n.Transactions, n.Active)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// serveRouterAdmin serves the router's admin address: /status (every
// node as the router sees it, with the read port's counts added) and
// /metrics (per-node labels), open unless security.metrics_auth; POST
// /admin/drain?node=ID and /admin/undrain?node=ID with the admin token.
// Off loopback (security.admin_https) it serves HTTPS with the router's
// cluster certificate, as the nodes do.
func serveRouterAdmin(ctx context.Context, c *config.Cluster, ident *secure.Identity, token string, log *slog.Logger, reg *prometheus.Registry, routers map[string]*router.Router) error {
	addr := c.Router.Metrics
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("router: listen on %s (field router.metrics): %w", addr, err)
	}
	reg.MustRegister(router.NodeCollector{Routers: routers})
	read := func(h http.Handler) http.Handler {
		if c.Security.MetricsAuth {
			return secure.RequireToken(token, log, false, h)
		}
		return h
	}
	status := func() []router.NodeStatus {
		var others [][]router.NodeStatus
		if rr := routers["read"]; rr != nil {
			others = append(others, rr.Status())
		}
		return router.MergeStatus(routers["write"].Status(), others...)
	}
	mux := http.NewServeMux()
	mux.Handle("/status", read(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(status())
	})))
	mux.Handle("/metrics", read(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	for path, on := range map[string]bool{"/admin/drain": true, "/admin/undrain": false} {
		mux.Handle(path, secure.AdminAction(token, log, func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			id := req.URL.Query().Get("node")
			for _, rt := range routers {
				if err := rt.SetDraining(id, on); err != nil {
					w.WriteHeader(http.StatusNotFound)
					_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
					return
				}
			}
			log.Info("drain changed by the admin API", "node", id, "draining", on)
			_ = json.NewEncoder(w).Encode(status())
		}))
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if ident != nil && c.AdminTLS(addr) {
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{ident.Cert}}
		l = tls.NewListener(l, hs.TLSConfig)
	} else if !config.IsLoopback(addr) {
		log.Warn("the router's admin address is not on loopback and serves HTTP: the admin token crosses the network in clear text",
			"metrics", addr, "hint", "keep router.metrics on 127.0.0.1, or use inter_node = \"mtls\" (then it serves HTTPS)")
	}
	go func() { _ = hs.Serve(l) }()
	go func() { <-ctx.Done(); hs.Close() }()
	return nil
}

// probeWitness asks the witness's admin address for its view of the
// coordinator.
func probeWitness(w *config.Witness, pid int) probe {
	p := probe{Name: w.ID, Kind: "witness", Role: "witness", Addr: w.RaftListen, PID: pid}
	if w.Metrics == "" {
		// Without an admin address, the Raft port accepting is all there
		// is to know; the nodes' coordinator section shows its vote.
		start := time.Now()
		if ok, msg := tcpAnswers(context.Background(), w.RaftListen); !ok {
			p.Error = msg
			return p
		}
		p.Healthy = true
		p.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
		return p
	}
	var s witnessStatus
	start := time.Now()
	if err := getJSON(&config.Node{ID: w.ID, Metrics: w.Metrics}, "/status", &s); err != nil {
		p.Error = err.Error()
		return p
	}
	p.Healthy = true
	p.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	p.repl = &nodeStatus{ID: w.ID, Role: "witness", Coordinator: s.Coordinator}
	return p
}

// leaderView is the coordinator's status from its leader, else from the
// first voter that answered (nil when none did).
func leaderView(out []probe) *coordinator.Status {
	var cs *coordinator.Status
	for _, p := range out {
		if p.repl == nil || p.repl.Coordinator == nil {
			continue
		}
		if cs == nil || p.repl.Coordinator.State == "Leader" {
			cs = p.repl.Coordinator
		}
	}
	return cs
}

// printCoordinator prints the coordinator group as its leader sees it (or
// the first voter that answered).
// printCoordinator prints the coordinator's map; with lsn (the physical
// engine) positions are WAL positions, printed as PostgreSQL does.
func printCoordinator(w io.Writer, out []probe, lsn bool) {
	cs := leaderView(out)
	if cs == nil {
		return
	}
	mode := "manual"
	if cs.Automatic {
		mode = "automatic"
	}
	fmt.Fprintf(w, "\ncoordinator (as %s sees it): leader %s, term %d, failover %s, epoch %d, primary %s\n",
		cs.ID, dash(cs.Leader), cs.Term, mode, cs.Epoch, dash(cs.Primary))
	if cs.LeaseHolder != "" {
		fmt.Fprintf(w, "  lease: held by %s, %v remaining\n", cs.LeaseHolder, cs.LeaseRemaining.Round(time.Millisecond))
	} else {
		fmt.Fprintln(w, "  lease: none held")
	}
	if cs.Lost > 0 {
		fmt.Fprintf(w, "  commits possibly lost by 1-safe failovers: %d\n", cs.Lost)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  MEMBER\tROLE\tVOTER\tRAFT\tREPORTED")
	for _, m := range cs.Members {
		ack := "-"
		if m.Ack != nil {
			ack = fmt.Sprintf("GSN %d at %s (epoch %d)", m.Ack.GSN, m.Ack.Level, m.Ack.Epoch)
			if lsn {
				ack = fmt.Sprintf("LSN %X/%X at %s (epoch %d)", m.Ack.GSN>>32, uint32(m.Ack.GSN), m.Ack.Level, m.Ack.Epoch)
			}
			if m.Ack.Degraded {
				ack += ", degraded"
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%s\t%s\n", m.ID, m.Role, m.Voter, m.RaftAddr, ack)
	}
	_ = tw.Flush()
	for _, t := range cs.Transitions {
		how := "estimated from reports"
		switch {
		case t.Refined && t.OldAcked != 0 && t.OldExact:
			how = "exact: the old primary acknowledged up to GSN " + strconv.FormatUint(max(t.CommitGSN, t.OldAcked), 10) + ", the new one held " + strconv.FormatUint(t.ToGSN, 10)
		case t.Refined && t.OldAcked != 0:
			how = "at most: the old primary's log ended at GSN " + strconv.FormatUint(t.OldAcked, 10) + " (it restarted), the new one held " + strconv.FormatUint(t.ToGSN, 10)
		case t.Refined && t.Lost == 0:
			how = "none of the acknowledged commits last reported; the old primary has not reported back yet"
		case t.Refined:
			how = "at least: acknowledged up to GSN " + strconv.FormatUint(t.CommitGSN, 10) + " as last reported; the old primary has not reported back yet"
		}
		fmt.Fprintf(w, "  epoch %d: %s -> %s (%s), lost %d (%s)\n", t.Epoch, t.From, t.To, t.Reason, t.Lost, how)
	}
}
