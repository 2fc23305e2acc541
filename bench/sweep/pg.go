package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/backend/postgres"
)

// pgSettings are the postgresql.conf lines of every server of the sweep
// (besides the managed defaults: shared_buffers 128MB, max_connections 300,
// fsync on). The standalone server gets the same ones, so the pair differs
// from it only by its synchronous standby.
var pgSettings = map[string]string{
	"wal_level":       "replica",
	"max_wal_senders": "4",
	"hot_standby":     "on",
	// As Patroni runs every server it manages (its CMDLINE_OPTIONS force
	// wal_log_hints = on: pg_rewind needs it, or data checksums), and as
	// tandem's physical engine runs its own: the pair that HAProxy fronts
	// is the one a Patroni user has, and the pair direct differs from
	// tandem's only by the relay. It costs the first change of a page's
	// hint bits after each checkpoint a full-page image in the WAL.
	"wal_log_hints": "on",
}

// PGPair is a PostgreSQL streaming-replication pair run by the sweep: a
// primary with synchronous_standby_names = '*' and a standby cloned with
// pg_basebackup -R, both managed servers on 127.0.0.1.
type PGPair struct {
	Primary *postgres.Managed
	Standby *postgres.Managed
	log     *slog.Logger
}

// StartPGPair initialises a primary in dir/primary, clones it into
// dir/standby with pg_basebackup (as the postgres OS user when root), starts
// the standby on another port and waits until pg_stat_replication shows it
// streaming as the synchronous standby.
func StartPGPair(ctx context.Context, dir, binDir string, log *slog.Logger) (*PGPair, error) {
	return startPGPair(ctx, dir, binDir, nil, log)
}

// startPGPair is StartPGPair with more settings on both servers.
func startPGPair(ctx context.Context, dir, binDir string, extra map[string]string, log *slog.Logger) (*PGPair, error) {
	if log == nil {
		log = slog.Default()
	}
	bin, err := postgres.FindBinDir(binDir)
	if err != nil {
		return nil, err
	}
	base := clone(pgSettings)
	for k, v := range extra {
		base[k] = v
	}
	settings := clone(base)
	settings["synchronous_standby_names"] = "'*'"
	primary, err := postgres.StartManaged(ctx, postgres.ManagedConfig{
		DataDir: filepath.Join(dir, "primary", "pgdata"), BinDir: bin, Settings: settings, Logger: log,
		TCP: true, // the standby streams over 127.0.0.1 (PostgreSQL's own pair, the comparison)
	})
	if err != nil {
		return nil, fmt.Errorf("start the PostgreSQL primary: %w", err)
	}
	p := &PGPair{Primary: primary, log: log}
	standbyData := filepath.Join(dir, "standby", "pgdata")
	if err := basebackup(ctx, bin, primary.Port(), standbyData); err != nil {
		p.Stop()
		return nil, err
	}
	standby, err := postgres.StartManaged(ctx, postgres.ManagedConfig{
		DataDir: standbyData, BinDir: bin, Settings: clone(base), Logger: log, TCP: true,
	})
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("start the PostgreSQL standby: %w", err)
	}
	p.Standby = standby
	if err := p.WaitStreaming(ctx, 60*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// basebackup clones the primary into dataDir, writing standby.signal and
// primary_conninfo (-R), streaming the WAL it needs (-X stream).
func basebackup(ctx context.Context, bin string, port int, dataDir string) error {
	cred, err := postgres.ServerCredential()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create standby data directory: %w", err)
	}
	if cred != nil {
		// The primary's start made the common ancestors traversable; the
		// standby's directories are new.
		for _, d := range []string{filepath.Dir(dataDir), dataDir} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("chown %s for the postgres user: %w", d, err)
			}
		}
	}
	tool, err := postgres.FindTool(bin, "pg_basebackup")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, tool,
		"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres",
		"-D", dataDir, "-R", "-X", "stream", "-c", "fast", "--no-password")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_basebackup into %s: %w: %s", dataDir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ReplicationState is one row of the primary's pg_stat_replication.
type ReplicationState struct {
	Application string
	State       string
	SyncState   string
}

// Replication returns the primary's pg_stat_replication rows.
func (p *PGPair) Replication(ctx context.Context) ([]ReplicationState, error) {
	c, err := pgx.Connect(ctx, p.Primary.DSN("postgres"))
	if err != nil {
		return nil, fmt.Errorf("connect to the PostgreSQL primary: %w", err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, "SELECT application_name, state, sync_state FROM pg_stat_replication")
	if err != nil {
		return nil, fmt.Errorf("query pg_stat_replication: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ReplicationState, error) {
		var s ReplicationState
		err := r.Scan(&s.Application, &s.State, &s.SyncState)
		return s, err
	})
}

// WaitStreaming waits until a standby streams as the synchronous standby.
func (p *PGPair) WaitStreaming(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last := "no standby in pg_stat_replication"
	for {
		st, err := p.Replication(ctx)
		if err != nil {
			last = err.Error()
		}
		for _, s := range st {
			if s.State == "streaming" && s.SyncState == "sync" {
				p.log.Info("PostgreSQL standby streaming", "application", s.Application, "sync_state", s.SyncState)
				return nil
			}
			last = fmt.Sprintf("standby %q state %s sync_state %s", s.Application, s.State, s.SyncState)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL standby not streaming synchronously within %s: %s", limit, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitReplayed waits until the standby has replayed the primary's current
// WAL position.
func (p *PGPair) WaitReplayed(ctx context.Context, limit time.Duration) error {
	c, err := pgx.Connect(ctx, p.Primary.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect to the PostgreSQL primary: %w", err)
	}
	defer c.Close(context.Background())
	var target string
	if err := c.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&target); err != nil {
		return fmt.Errorf("read the primary's WAL position: %w", err)
	}
	deadline := time.Now().Add(limit)
	for {
		var done bool
		err := c.QueryRow(ctx, "SELECT coalesce(bool_and(replay_lsn >= $1::pg_lsn), false) FROM pg_stat_replication", target).Scan(&done)
		if err != nil {
			return fmt.Errorf("read the standby's replay position: %w", err)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL standby did not replay up to %s within %s", target, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops the standby, then the primary; safe to call more than once.
func (p *PGPair) Stop() {
	if p.Standby != nil {
		_ = p.Standby.Stop()
	}
	if p.Primary != nil {
		_ = p.Primary.Stop()
	}
}

// pgSystem is a PostgreSQL configuration's running system: one server, or a pair.
type pgSystem struct {
	server *postgres.Managed // the server clients use (the pair's primary)
	pair   *PGPair
	// proxy is HAProxy in front of the pair (pg-pair-haproxy-*): clients
	// connect to it; the sweep's own statements go to the primary.
	proxy *HAProxy
	// pool is pgpool-II in front of the pair (pg-pair-pgpool-*): clients
	// connect to it; the sweep's own statements go to the primary.
	pool *Pgpool
	log  *slog.Logger
	dir  string
	// version is the server_version.
	version string
	// unix: the workload's clients connect over Unix sockets (--unix).
	unix bool
	// tls: the workload's clients speak TLS to the servers, through
	// HAProxy (Config.ClientTLS).
	tls bool
}

func startPG(ctx context.Context, c Config, dir, binDir string, log *slog.Logger) (*pgSystem, error) {
	s := &pgSystem{log: log, dir: dir, tls: c.ClientTLS}
	if c.kind == kindPGPair || c.kind == kindPGPairHAProxy || c.kind == kindPGPairPgpool {
		var extra map[string]string
		if c.ClientTLS {
			var err error
			if extra, err = serverTLS(filepath.Join(dir, "tls")); err != nil {
				return nil, fmt.Errorf("configuration %s: the servers' certificate: %w", c.Name, err)
			}
		}
		p, err := startPGPair(ctx, dir, binDir, extra, log)
		if err != nil {
			return nil, err
		}
		s.pair, s.server = p, p.Primary
		if c.kind == kindPGPairHAProxy {
			h, err := StartHAProxy(ctx, dir, []*postgres.Managed{p.Primary, p.Standby}, log)
			if err != nil {
				p.Stop()
				return nil, fmt.Errorf("configuration %s: %w", c.Name, err)
			}
			s.proxy = h
		}
		if c.kind == kindPGPairPgpool {
			pool, err := StartPgpool(ctx, dir, []*postgres.Managed{p.Primary, p.Standby}, log)
			if err != nil {
				p.Stop()
				return nil, fmt.Errorf("configuration %s: %w", c.Name, err)
			}
			s.pool = pool
		}
	} else {
		// A standalone server has no standby to rewind: PostgreSQL's
		// default, wal_log_hints off.
		settings := clone(pgSettings)
		delete(settings, "wal_log_hints")
		m, err := postgres.StartManaged(ctx, postgres.ManagedConfig{
			DataDir: filepath.Join(dir, "pgdata"), BinDir: binDir, Settings: settings, Logger: log, TCP: true,
		})
		if err != nil {
			return nil, fmt.Errorf("start PostgreSQL: %w", err)
		}
		s.server = m
	}
	if err := s.exec(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SHOW server_version").Scan(&s.version)
	}); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// dsn is where the workload's clients connect: HAProxy or pgpool-II
// when there is one, else the (primary) server.
func (s *pgSystem) dsn() string {
	if s.unix {
		switch {
		case s.proxy != nil:
			return s.proxy.UnixDSN("postgres")
		case s.pool != nil:
			return s.pool.UnixDSN("postgres")
		}
		return s.server.SocketDSN("postgres")
	}
	if s.proxy != nil && s.tls {
		return strings.Replace(s.proxy.DSN("postgres"), "sslmode=disable", "sslmode=require", 1)
	}
	if s.proxy != nil {
		return s.proxy.DSN("postgres")
	}
	if s.pool != nil {
		return s.pool.DSN("postgres")
	}
	return s.server.DSN("postgres")
}

// proxied reports how many connections HAProxy has sent to each server
// so far (ok false without HAProxy).
func (s *pgSystem) proxied() (map[string]int64, bool) {
	if s.proxy == nil {
		return nil, false
	}
	st, err := s.proxy.Stats()
	if err != nil {
		return nil, false
	}
	out := map[string]int64{}
	for _, x := range st {
		out[x.Name] = x.Sessions
	}
	return out, true
}

// selects reports how many SELECTs pgpool-II has sent to each server so
// far, n1 the primary (ok false without pgpool).
func (s *pgSystem) selects(ctx context.Context) (map[string]int64, bool) {
	if s.pool == nil {
		return nil, false
	}
	nodes, err := s.pool.Nodes(ctx)
	if err != nil {
		s.log.Warn("pgpool-II's SHOW pool_nodes", "err", err)
		return nil, false
	}
	out := map[string]int64{}
	for _, n := range nodes {
		out[fmt.Sprintf("n%d", n.ID+1)] = n.Selects
	}
	return out, true
}

func (s *pgSystem) exited() error {
	if s.proxy != nil {
		if err := s.proxy.exited(); err != nil {
			return err
		}
	}
	if s.pool != nil {
		if err := s.pool.exited(); err != nil {
			return err
		}
	}
	for _, m := range []*postgres.Managed{s.server, s.standby()} {
		if m == nil {
			continue
		}
		select {
		case <-m.Done():
			return fmt.Errorf("PostgreSQL server %s (pid %d) exited during the run; see %s", m.DataDir(), m.PID(), filepath.Join(filepath.Dir(m.DataDir()), "postgres.log"))
		default:
		}
	}
	return nil
}

func (s *pgSystem) standby() *postgres.Managed {
	if s.pair == nil {
		return nil
	}
	return s.pair.Standby
}

// logDir holds the servers' logs (postgres.log beside each data directory).
func (s *pgSystem) logDir() string { return s.dir }

// exec runs the sweep's own statements on the (primary) server directly.
func (s *pgSystem) exec(ctx context.Context, f func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, s.server.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer c.Close(context.Background())
	return f(c)
}

// use switches the server to the configuration's synchronous_commit (ALTER
// SYSTEM, pg_reload_conf) and waits until new sessions see it; before that
// it vacuums and checkpoints, so each level on a shared server starts from
// the same kind of state and no checkpoint left over from the previous
// level lands in its window. With pgpool-II it sets the standby's weight
// (a reload) first.
func (s *pgSystem) use(ctx context.Context, c Config) error {
	if s.pool != nil && c.StandbyWeight != nil {
		if err := s.pool.SetStandbyWeight(ctx, *c.StandbyWeight); err != nil {
			return fmt.Errorf("configuration %s: %w", c.Name, err)
		}
	}
	return s.exec(ctx, func(conn *pgx.Conn) error {
		for _, q := range []string{"VACUUM", "CHECKPOINT",
			"ALTER SYSTEM SET synchronous_commit = '" + c.SynchronousCommit + "'", "SELECT pg_reload_conf()"} {
			if _, err := conn.Exec(ctx, q); err != nil {
				return fmt.Errorf("configuration %s: %s: %w", c.Name, q, err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var v string
			err := s.exec(ctx, func(fresh *pgx.Conn) error {
				return fresh.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v)
			})
			if err != nil {
				return err
			}
			if v == c.SynchronousCommit {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("configuration %s: synchronous_commit is still %q 10 s after pg_reload_conf()", c.Name, v)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return s.settled(ctx)
	})
}

func (s *pgSystem) settled(ctx context.Context) error {
	if s.pair == nil {
		return nil
	}
	if err := s.pair.WaitStreaming(ctx, 60*time.Second); err != nil {
		return err
	}
	return s.pair.WaitReplayed(ctx, 5*time.Minute)
}

func (s *pgSystem) standbyLag(ctx context.Context) (int64, string, bool) {
	if s.pair == nil {
		return 0, "", false
	}
	var lag *int64
	err := s.exec(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn))::bigint FROM pg_stat_replication").Scan(&lag)
	})
	if err != nil || lag == nil {
		return 0, "", false
	}
	return *lag, "WAL bytes", true
}

func (s *pgSystem) stop() {
	if s.proxy != nil {
		s.proxy.Stop()
	}
	if s.pool != nil {
		s.pool.Stop()
	}
	if s.pair != nil {
		s.pair.Stop()
		return
	}
	if s.server != nil {
		_ = s.server.Stop()
	}
}
