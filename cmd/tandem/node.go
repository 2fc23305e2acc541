package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/physical"
	"github.com/tandemdb/tandem/router"
	"github.com/tandemdb/tandem/secure"
)

func newNodeCmd() *cobra.Command {
	var file, id string
	cmd := &cobra.Command{
		Use:   "node -c FILE --id ID",
		Short: "Run one node (its back end and its front door) in the foreground",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig(file)
			if err != nil {
				return err
			}
			log := fileLogger(cmd, c)
			if id == "" {
				if len(c.Nodes) != 1 {
					return errors.New("--id is required when the cluster has more than one node")
				}
				id = c.Nodes[0].ID
			}
			return node.Run(cmd.Context(), c, id, log, func(addr string) {
				if os.Getenv("TANDEM_READY_FD") == "3" {
					f := os.NewFile(3, "ready")
					fmt.Fprintln(f, addr)
					f.Close()
				}
			})
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	cmd.Flags().StringVar(&id, "id", "", "node id in the cluster file")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func newRouterCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "router -c FILE",
		Short: "Run the standalone router process in the foreground",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig(file)
			if err != nil {
				return err
			}
			log := fileLogger(cmd, c).With("component", "router")
			if c.Router == nil {
				return fmt.Errorf("%w: %s: field router: missing; add a [router] table with listen = \"host:port\"", config.ErrInvalid, c.File)
			}
			ident, err := node.Identity(c, secure.RouterID, log)
			if err != nil {
				return fmt.Errorf("router: %w", err)
			}
			token, err := node.AdminToken(c, true)
			if err != nil {
				return fmt.Errorf("router: %w: %s", config.ErrInvalid, err)
			}
			for _, u := range c.ClearTextPasswords {
				log.Warn("a password sits in clear text in the cluster file", "user", u, "file", c.File,
					"hint", "replace it with the verifier `tandem passwd` prints, or with env:NAME / file:PATH")
			}
			user, pass := c.InternalUser()
			var ups []router.Upstream
			for i, n := range c.Nodes {
				up := router.Upstream{Node: n.ID, Addr: n.Listen, Admin: n.Metrics, User: user, Password: pass, AdminToken: token}
				up.AdminURL = c.AdminURL(n.Metrics, "/status")
				if ident != nil {
					// The hop to a node is TLS; the node lets the router in
					// by its certificate, so no password travels, and in
					// the name of the client the router authenticated (on a
					// managed PostgreSQL the session runs as that role).
					up.TLS, up.Password, up.User = ident.ClientTLS(n.ID), "", ""
					if c.AdminTLS(n.Metrics) {
						up.AdminTLS = ident.ClientTLS(n.ID)
					}
				} else if c.TLS.Cert != "" {
					// inter_node = "none" (loopback only) and the nodes
					// speak TLS ([tls] require may refuse plain text):
					// encrypt as sslmode=require does, without
					// verifying, since no cluster CA exists.
					up.TLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // sslmode=require semantics, loopback only
				}
				if c.RouterDirect() {
					// router.direct: to the node's PostgreSQL server
					// itself, where it streams WAL, in the client's
					// role: by the router's certificate, which the
					// server maps to the role, or without inter-node
					// TLS by SCRAM with the role's derived password
					// (physical/DESIGN.md).
					up.Addr, up.Settings = n.Repl, node.SessionSettings(c, &c.Nodes[i])
					if ident == nil {
						cluster := c.Name
						up.TLS, up.User = nil, ""
						up.PasswordFor = func(role string) string { return physical.RouterPassword(token, cluster, role) }
					}
				}
				ups = append(ups, up)
			}
			var weights, readWeights []int
			for _, n := range c.Nodes {
				weights, readWeights = append(weights, n.BalanceWeight()), append(readWeights, n.ReadBalanceWeight())
			}
			balance := func(rc router.Config) router.Config {
				rc.Weights, rc.ReadWeights, rc.Policy = weights, readWeights, c.Router.Policy
				rc.MaxLagGSNs, rc.MaxLagTime = c.Router.MaxLag.GSNs, c.Router.MaxLag.Time
				return rc
			}
			reg := prometheus.NewRegistry()
			rt := router.New(balance(router.Config{Nodes: ups, MaxMessageBytes: c.Limits.MaxMessageBytes, MessageReadTimeout: c.Limits.MessageRead(), Logger: log,
				Survive: c.Repl.Failover == "automatic", Registerer: reg,
				Split: c.Router.Split || c.Design == "single-master" || c.MultiMaster(), MultiMaster: c.MultiMaster(), LSN: c.Physical(), ReadConsistency: c.Router.ReadConsistency, ReadWait: c.Router.ReadWait.Duration,
				ReadOnlyFunctions: c.Router.ReadOnlyFunctions}))
			go rt.Watch(cmd.Context(), c.Router.HealthInterval.Duration)
			if !c.MultiMaster() {
				rt.FollowRoles(cmd.Context()) // roles change at failovers; multi-master has none
			}
			tlsCfg, err := c.ServerTLS()
			if err != nil {
				return err
			}
			var trustCert func(tls.ConnectionState) bool
			if ident != nil {
				// The router serves its cluster certificate to tandem's
				// command line (which names "router") and the operator's
				// [tls] certificate, if any, to applications. The command
				// line logs in by its certificate, as on a node.
				if tlsCfg == nil {
					tlsCfg = ident.FrontDoorTLS()
				} else {
					tlsCfg = ident.FrontDoorWith(tlsCfg)
				}
				trustCert = func(cs tls.ConnectionState) bool { return secure.PeerID(cs) == secure.AdminID }
			}
			srv := pgwire.NewServer(pgwire.Config{Auth: pgwire.AuthMethod(c.Auth), Passwords: c.Password, TLS: tlsCfg, TLSTransport: router.ClientTransport, RequireTLS: c.TLS.Require, TrustCert: trustCert,
				MaxMessageBytes: c.Limits.MaxMessageBytes, MaxConnections: c.Limits.MaxConnections, Logger: log,
				MaxStartupConnections: c.Limits.MaxStartupConnections, StartupTimeout: c.Limits.StartupTimeout.Duration,
				Keepalive: pgwire.Keepalive{Idle: c.Limits.TCPKeepalivesIdle.Duration, Interval: c.Limits.TCPKeepalivesInterval.Duration, Count: c.Limits.TCPKeepalivesCount}}, rt)
			l, err := net.Listen("tcp", c.Router.Listen)
			if err != nil {
				return fmt.Errorf("router: listen on %s (field router.listen): %w", c.Router.Listen, err)
			}
			routers := map[string]*router.Router{"write": rt}
			var rr *router.Router
			if c.Router.ReadListen != "" {
				rr = router.New(balance(router.Config{Nodes: ups, MaxMessageBytes: c.Limits.MaxMessageBytes, MessageReadTimeout: c.Limits.MessageRead(), Logger: log.With("port", "read"), Reads: true, Registerer: reg}))
				routers["read"] = rr
			}
			if c.Router.Metrics != "" {
				if err := serveRouterAdmin(cmd.Context(), c, ident, token, log, reg, routers); err != nil {
					return err
				}
			}
			log.Info("router serving", "listen", l.Addr().String(), "nodes", len(ups))
			if os.Getenv("TANDEM_READY_FD") == "3" {
				f := os.NewFile(3, "ready")
				fmt.Fprintln(f, l.Addr().String())
				f.Close()
			}
			if c.Router.ReadListen != "" {
				go rr.Watch(cmd.Context(), c.Router.HealthInterval.Duration)
				rr.FollowRoles(cmd.Context())
				rsrv := pgwire.NewServer(pgwire.Config{Auth: pgwire.AuthMethod(c.Auth), Passwords: c.Password, TLS: tlsCfg, TLSTransport: router.ClientTransport, RequireTLS: c.TLS.Require, TrustCert: trustCert,
					MaxMessageBytes: c.Limits.MaxMessageBytes, MaxConnections: c.Limits.MaxConnections, Logger: log,
					MaxStartupConnections: c.Limits.MaxStartupConnections, StartupTimeout: c.Limits.StartupTimeout.Duration,
					Keepalive: pgwire.Keepalive{Idle: c.Limits.TCPKeepalivesIdle.Duration, Interval: c.Limits.TCPKeepalivesInterval.Duration, Count: c.Limits.TCPKeepalivesCount}}, rr)
				rl, err := net.Listen("tcp", c.Router.ReadListen)
				if err != nil {
					l.Close()
					return fmt.Errorf("router: listen on %s (field router.read_listen): %w", c.Router.ReadListen, err)
				}
				go func() { _ = rsrv.Serve(cmd.Context(), rl) }()
				defer rsrv.CloseAll()
				log.Info("router read port serving", "listen", rl.Addr().String())
				closeUnix, err := serveUnix(cmd.Context(), c.Router.UnixSocketDir, rl, rsrv, log.With("port", "read"))
				if err != nil {
					l.Close()
					return err
				}
				defer closeUnix()
			}
			closeUnix, err := serveUnix(cmd.Context(), c.Router.UnixSocketDir, l, srv, log)
			if err != nil {
				l.Close()
				return err
			}
			defer closeUnix()
			err = srv.Serve(cmd.Context(), l)
			srv.CloseAll()
			return err
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// serveUnix serves srv on the Unix socket of tcp's port in dir (the
// router's unix_socket_dir; nothing when dir is empty) until ctx ends,
// and returns a function that closes it (removing the socket file).
func serveUnix(ctx context.Context, dir string, tcp net.Listener, srv *pgwire.Server, log *slog.Logger) (func(), error) {
	ul, err := srv.ServeUnix(ctx, dir, tcp.Addr().(*net.TCPAddr).Port)
	if err != nil {
		return nil, fmt.Errorf("router: field router.unix_socket_dir: %w", err)
	}
	if ul == nil {
		return func() {}, nil
	}
	log.Info("router serving on a Unix socket", "socket", ul.Addr().String())
	return func() { ul.Close() }, nil
}
