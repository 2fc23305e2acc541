package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/certifier"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/multimaster"
	"github.com/tandemdb/tandem/secure"
)

// startMultiMaster runs a multi-master node over its database (SQLite, or
// PostgreSQL on the writeset engine): the node's coordinator member (which
// holds the certifier), the agent that certifies the node's commits and
// applies the certified log, and the capture that routes every commit
// through it (enable).
func startMultiMaster(ctx context.Context, c *config.Cluster, id string, db multimaster.Store, enable func(*multimaster.Agent) error, ident *secure.Identity, token string, log *slog.Logger, reg prometheus.Registerer) (*multimaster.Agent, *coordinator.Coordinator, error) {
	cfg, err := CoordinatorConfig(c, id, ident, log, reg)
	if err != nil {
		return nil, nil, err
	}
	cfg.CertWindow = certifier.Window{Count: c.MM.WindowWritesets, Bytes: c.MM.WindowBytes}
	coord, err := coordinator.Start(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: coordinator (field nodes.raft_listen): %w", id, err)
	}
	agent, err := multimaster.New(multimaster.Config{
		ID: id, Store: db, Cert: coord,
		ApplyConflictWait: c.MM.ApplyConflictWait.Duration,
		CertifyTimeout:    c.MM.CertifyTimeout.Duration,
		ApplyBatchDelay:   c.MM.ApplyBatchDelay.Duration,
		MaxWritesetBytes:  c.Repl.MaxWritesetBytes,
		Reseed: func(ctx context.Context, minGSN uint64) ([]byte, error) {
			return fetchPeerSnapshot(ctx, c, id, ident, token, minGSN)
		},
		Logger: log, Registerer: reg,
	})
	if err != nil {
		_ = coord.Close()
		return nil, nil, fmt.Errorf("node %s: %w", id, err)
	}
	if err := enable(agent); err != nil {
		_ = coord.Close()
		return nil, nil, fmt.Errorf("node %s: %w", id, err)
	}
	go agent.Run(ctx)
	return agent, coord, nil
}

// registerMultiMasterAdmin serves what the other nodes and the router ask a
// multi-master node (admin token required): a snapshot of its database for
// a node that fell behind the certifier's window, and the highest GSN it
// applied for a router session tag.
func registerMultiMasterAdmin(mux *http.ServeMux, agent *multimaster.Agent, db multimaster.Store, token string, log *slog.Logger) {
	// GET /mm/snapshot: the database as of the GSN in X-Tandem-GSN.
	mux.Handle("/mm/snapshot", secure.RequireToken(token, log, false, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		data, gsn, err := db.SnapshotBytes(req.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Tandem-GSN", strconv.FormatUint(gsn, 10))
		_, _ = w.Write(data)
	})))
	// POST /admin/set?apply_batch_delay=D: multi_master.apply_batch_delay
	// on this running node (`tandem set`); the node's /status.
	mux.Handle("/admin/set", secure.AdminAction(token, log, func(w http.ResponseWriter, req *http.Request) {
		v := req.URL.Query().Get("apply_batch_delay")
		d, err := time.ParseDuration(v)
		switch {
		case v == "":
			err = errors.New("multi-master: only apply_batch_delay can be set at run time (e.g. apply_batch_delay=25ms)")
		case err != nil:
			err = fmt.Errorf("apply_batch_delay %q: %w (write a duration such as 25ms)", v, err)
		default:
			err = agent.SetApplyBatchDelay(d)
		}
		secure.ReplyJSON(w, agent.Status(), err)
	}))
	// GET /session?tag=T: as on the replication core (router/survive.go).
	mux.Handle("/session", secure.RequireToken(token, log, false, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		g, found := agent.SessionGSN(req.URL.Query().Get("tag"))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"gsn": g, "found": found, "applied_gsn": agent.AppliedGSN()})
	})))
}

// errNoPeerSnapshot: no other node could give a snapshot recent enough.
var errNoPeerSnapshot = errors.New("no peer has a snapshot within the certifier's window")

// fetchPeerSnapshot asks the other nodes, in order, for a snapshot at GSN
// minGSN or later (one inside the certifier's window, so the node can
// follow the certified log from it).
func fetchPeerSnapshot(ctx context.Context, c *config.Cluster, self string, ident *secure.Identity, token string, minGSN uint64) ([]byte, error) {
	var errs []error
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.ID == self || n.Metrics == "" {
			continue
		}
		cl := http.Client{Timeout: 5 * time.Minute}
		if ident != nil && c.AdminTLS(n.Metrics) {
			cl.Transport = &http.Transport{TLSClientConfig: ident.ClientTLS(n.ID)}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.AdminURL(n.Metrics, "/mm/snapshot"), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := cl.Do(req)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.ID, err))
			continue
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %s: %s", resp.Status, data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.ID, err))
			continue
		}
		g, _ := strconv.ParseUint(resp.Header.Get("X-Tandem-GSN"), 10, 64)
		if g < minGSN {
			errs = append(errs, fmt.Errorf("%s: its snapshot is at GSN %d, before the window (%d)", n.ID, g, minGSN))
			continue
		}
		return data, nil
	}
	return nil, fmt.Errorf("%w: %w", errNoPeerSnapshot, errors.Join(errs...))
}
