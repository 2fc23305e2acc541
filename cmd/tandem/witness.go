package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/secure"
)

// witnessStatus is the witness's /status.
type witnessStatus struct {
	ID          string              `json:"id"`
	Kind        string              `json:"kind"`
	Started     time.Time           `json:"started"`
	Coordinator *coordinator.Status `json:"coordinator"`
}

func newWitnessCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "witness -c FILE",
		Short: "Run the cluster's witness in the foreground: a coordinator vote with no data, so a pair keeps a quorum when one node dies",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig(file)
			if err != nil {
				return err
			}
			log := fileLogger(cmd, c).With("process", "witness")
			w := c.Witness
			if w == nil {
				return fmt.Errorf("%w: %s: field witness: missing; add a [witness] table with id and raft_listen", config.ErrInvalid, c.File)
			}
			ident, err := node.Identity(c, w.ID, log)
			if err != nil {
				return fmt.Errorf("witness: %w", err)
			}
			if ident == nil {
				return fmt.Errorf("%w: %s: field security.inter_node: the witness votes over mutual TLS only", config.ErrInvalid, c.File)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg, err := node.CoordinatorConfig(c, w.ID, ident, log, reg)
			if err != nil {
				return err
			}
			co, err := coordinator.Start(cfg)
			if err != nil {
				return err
			}
			defer co.Close()
			if w.Metrics != "" {
				stop, err := serveWitnessAdmin(c, ident, co, reg, log)
				if err != nil {
					return err
				}
				defer stop()
			}
			if os.Getenv("TANDEM_READY_FD") == "3" {
				f := os.NewFile(3, "ready")
				fmt.Fprintln(f, co.Addr())
				f.Close()
			}
			// Log each change of the map the witness applies: its log is
			// the coordinator's history when the nodes' are gone.
			for m := range co.Watch(cmd.Context()) {
				log.Info("cluster map", "epoch", m.Epoch, "primary", m.Primary, "lease_holder", m.Lease.Holder,
					"lease_seq", m.Lease.Seq, "lost", m.Lost, "index", m.Index)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// serveWitnessAdmin serves the witness's /metrics and /status (read-only;
// behind the admin token when security.metrics_auth is set, over HTTPS off
// loopback, as a node's).
func serveWitnessAdmin(c *config.Cluster, ident *secure.Identity, co *coordinator.Coordinator, reg *prometheus.Registry, log *slog.Logger) (func(), error) {
	w := c.Witness
	token := ""
	if c.Security.MetricsAuth {
		t, err := node.AdminToken(c, true)
		if err != nil {
			return nil, fmt.Errorf("witness: %w: %s", config.ErrInvalid, err)
		}
		token = t
	}
	read := func(h http.Handler) http.Handler {
		if token == "" {
			return h
		}
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if !secure.BearerOK(r, token) {
				http.Error(rw, "admin token required", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(rw, r)
		})
	}
	started := time.Now()
	mux := http.NewServeMux()
	mux.Handle("/metrics", read(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	mux.Handle("/status", read(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		st := co.Status()
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(witnessStatus{ID: w.ID, Kind: "witness", Started: started, Coordinator: &st})
	})))
	l, err := net.Listen("tcp", w.Metrics)
	if err != nil {
		return nil, fmt.Errorf("witness: listen on %s (field witness.metrics): %w", w.Metrics, err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if c.AdminTLS(w.Metrics) {
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{ident.Cert}}
		l = tls.NewListener(l, hs.TLSConfig)
	}
	go func() { _ = hs.Serve(l) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}
