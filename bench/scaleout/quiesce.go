package scaleout

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// quiesce settles a cluster before a measured window, as `tandem plan
// profile` settles its server before each phase (planner/profiler): VACUUM
// the workload's tables on the primary (every node under multi-master),
// CHECKPOINT it, wait until the replicas have replayed that, and CHECKPOINT
// each replica (on a hot standby, a restartpoint).
//
// Why: `tandem plan validate` compares the sweep with a profile measured
// on a quiesced server, so the sweep measures under the same conditions: a
// freshly loaded PostgreSQL otherwise does its after-load work at a moment
// that differs from cluster to cluster, inside a node's CPU quota: the
// first reads of each row set its hint bits (with wal_log_hints on, as the
// physical engine runs for pg_rewind, each page's first one is a full-page
// image in the WAL, which every replica replays), autovacuum vacuums and
// analyses the new tables, and the load's dirty pages are written back.
// Measured (docs/benchmarks.md, "Why the validation does not reproduce"), it did not narrow the
// spread between fresh clusters on this machine, which comes from
// elsewhere; it removes one cause, cheaply (a second or two per window).
//
// PostgreSQL back ends only (SQLite has none of it). Statements a node
// refuses are skipped and reported once: an unsettled node is a noisier
// measurement, not a wrong one.
func (o *Options) quiesce(ctx context.Context, e *Env) {
	if o.Backend != "postgres" || o.NoQuiesce {
		return
	}
	c := e.Config
	vacuum := "VACUUM " + strings.Join(o.Workload.Tables(), ", ")
	var failed []string
	run := func(id, addr string, stmts ...string) {
		dsn, err := HostDSN(e.DSN, addr)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", id, err))
			return
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		conn, err := pgx.Connect(cctx, dsn)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", id, err))
			return
		}
		defer conn.Close(context.Background())
		for _, s := range stmts {
			if _, err := conn.Exec(cctx, s, pgx.QueryExecModeSimpleProtocol); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %s: %v", id, strings.Fields(s)[0], err))
			}
		}
	}
	if c.MultiMaster() {
		for _, nd := range c.Nodes {
			run(nd.ID, nd.Listen, vacuum, "CHECKPOINT")
		}
	} else {
		run(c.Nodes[0].ID, c.Nodes[0].Listen, vacuum, "CHECKPOINT")
		if len(c.Nodes) > 1 {
			if err := waitApplied(ctx, c, len(c.Nodes)-1, 2*time.Minute); err != nil {
				failed = append(failed, err.Error())
			}
			for _, nd := range c.Nodes[1:] {
				run(nd.ID, nd.Listen, "CHECKPOINT")
			}
		}
	}
	if len(failed) > 0 && !o.quiesceWarned {
		o.quiesceWarned = true
		o.Logger.Warn("could not settle the cluster before a measured window (VACUUM, CHECKPOINT): after-load work may fall into the window", "errors", strings.Join(failed, "; "))
	}
}

// HostDSN is dsn (a URL) with its host:port replaced by addr: the same
// user and database at one node's own front door.
func HostDSN(dsn, addr string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("the cluster's DSN: %w", err)
	}
	u.Host = addr
	return u.String(), nil
}

// withRuntimeParam is dsn (a URL) with a run-time parameter that the
// client sends in its startup packet (pgx passes unknown URL parameters
// on as such).
func withRuntimeParam(dsn, name, value string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("the cluster's DSN: %w", err)
	}
	q := u.Query()
	q.Set(name, value)
	// pgx reads a space as %20, not as the form encoding's '+' (a '+'
	// in a value is encoded %2B, so every '+' here is a space).
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	return u.String(), nil
}

// ServerSocketDSN is dsn (a URL) pointed at the Unix socket of the managed
// PostgreSQL server in dataDir/pgdata (a standalone node's): the same user
// and database, no tandem process on the way.
func ServerSocketDSN(dsn, dataDir string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("the cluster's DSN: %w", err)
	}
	dir := filepath.Join(dataDir, "pgdata")
	socks, err := filepath.Glob(filepath.Join(dir, ".s.PGSQL.*"))
	if err != nil {
		return "", err
	}
	for _, s := range socks {
		if strings.HasSuffix(s, ".lock") {
			continue
		}
		port := strings.TrimPrefix(filepath.Base(s), ".s.PGSQL.")
		q := u.Query()
		q.Set("host", dir)
		q.Set("port", port)
		q.Set("sslmode", "disable")
		u.Host, u.RawQuery = "", q.Encode()
		return u.String(), nil
	}
	return "", fmt.Errorf("no PostgreSQL socket in %s", dir)
}
