package physical

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/config"
)

// External servers (nodes.dsn): the operator runs PostgreSQL and has made
// its servers one streaming-replication cluster (nodes[0] the primary, the
// others hot standbys of it). tandem reaches each only with SQL, as the
// dsn's role, so it does what SQL can: the replicas' slots, the safeness
// level (ALTER SYSTEM), repointing standbys (primary_conninfo and
// primary_slot_name, reloaded), pg_promote, status, and fencing at the
// door. It cannot start, stop, seed or rewind a server: a base backup, a
// rewind and the restart of an old primary as a standby are the
// operator's (ErrRejoin says what to run). See DESIGN.md "External
// servers".

// ErrRejoin: an external server that was a primary (or never became a
// standby) must be rewound or re-seeded by its operator before this node
// can follow the new primary.
var ErrRejoin = errors.New("the external server must be made a standby of the new primary by its operator")

// Door is the node's front door to its server's sessions: closed, it
// opens no new session (an external server's fence).
type Door interface {
	SetOpen(open bool)
}

// newExternal prepares the engine of a node whose server is external.
func newExternal(cfg Config, n *config.Node, log *slog.Logger) (*Engine, error) {
	if _, err := pgconn.ParseConfig(n.DSN); err != nil {
		return nil, fmt.Errorf("%w: %s: field nodes.dsn (node %s): %v", config.ErrInvalid, cfg.Cluster.File, n.ID, err)
	}
	dataDir, err := filepath.Abs(n.DataDir)
	if err != nil {
		return nil, fmt.Errorf("physical: %w", err)
	}
	return &Engine{cfg: cfg, c: cfg.Cluster, node: n, log: log.With("engine", "physical", "external_server", dsnAddr(n.DSN)), external: true, door: cfg.Door,
		dir: filepath.Join(dataDir, "physical"), changed: make(chan struct{}), failed: make(chan struct{})}, nil
}

// External reports whether the node's server is an operator's (nodes.dsn).
func (e *Engine) External() bool { return e.external }

// where names the server for logs.
func (e *Engine) where() string {
	if e.external {
		return dsnAddr(e.node.DSN)
	}
	return e.pgdata
}

// dsnAddr is a dsn's host:port (its first host), for messages: never its
// password.
func dsnAddr(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "(unparsable dsn)"
	}
	if strings.HasPrefix(cfg.Host, "/") {
		return filepath.Join(cfg.Host, ".s.PGSQL."+strconv.Itoa(int(cfg.Port)))
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

// connectDSN opens a SQL session on the server of a node's dsn as
// replication.server_role (the dsn's own role serves the sessions), 5 s
// to connect unless the dsn says otherwise.
func (e *Engine) connectDSN(ctx context.Context, dsn string) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("nodes.dsn: %w", err)
	}
	cfg.User, cfg.Password = e.c.Repl.ServerRole, e.c.Repl.ServerPassword
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = engineApp
	return pgconn.ConnectConfig(ctx, cfg)
}

// extServer is an external server as the engine runs it: watched (Done
// closes when it stops answering) and fenced at the door.
type extServer struct {
	e        *Engine
	done     chan struct{}
	quit     chan struct{}
	doneOnce sync.Once
	quitOnce sync.Once
}

// Down-detection of an external server: it is gone once it has not
// answered for extDownAfter (and at least extDownTries probes).
const (
	extProbeEvery = 250 * time.Millisecond
	extDownAfter  = time.Second
	extDownTries  = 3
)

func (s *extServer) Done() <-chan struct{} { return s.done }

// watch probes the server on a connection of its own.
func (s *extServer) watch() {
	var c *pgconn.PgConn
	defer func() {
		if c != nil {
			c.Close(context.Background())
		}
	}()
	var failingSince time.Time
	tries := 0
	t := time.NewTicker(extProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var err error
		if c == nil || c.IsClosed() {
			c, err = s.e.connectDSN(ctx, s.e.node.DSN)
		}
		if err == nil {
			_, err = c.Exec(ctx, "SELECT 1").ReadAll()
		}
		cancel()
		if err == nil {
			failingSince, tries = time.Time{}, 0
			continue
		}
		if c != nil {
			c.Close(context.Background())
			c = nil
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
		}
		tries++
		if tries >= extDownTries && time.Since(failingSince) >= extDownAfter {
			s.e.log.Error("the external server does not answer", "err", err)
			s.doneOnce.Do(func() { close(s.done) })
			return
		}
	}
}

// Freeze fences the server: the node's door closes (no new session), and
// on the server itself default_transaction_read_only is set and every
// client session but the engine's is terminated. A server out of reach
// is fenced by the door alone (nothing of tandem's reaches it then).
func (s *extServer) Freeze() error {
	s.e.fenceExternal()
	return nil
}

// Thaw opens the door again and lifts the read-only default.
func (s *extServer) Thaw() error {
	return s.e.unfenceExternal()
}

// Stop and StopImmediate fence the server for good (until the engine
// takes it up again) and stop watching it: it is not tandem's to stop.
func (s *extServer) Stop() error {
	s.e.fenceExternal()
	s.quitOnce.Do(func() { close(s.quit) })
	return nil
}

func (s *extServer) StopImmediate() error { return s.Stop() }

// setDoor opens or closes the node's door (no Door: a test engine).
func (e *Engine) setDoor(open bool) {
	if e.door != nil {
		e.door.SetOpen(open)
	}
}

// fenceExternal closes the door, then makes the server refuse writes by
// default and ends its client sessions (the node's relayed ones among
// them).
func (e *Engine) fenceExternal() {
	e.setDoor(false)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := e.connectDSN(ctx, e.node.DSN)
	if err == nil {
		err = execAll(ctx, c,
			"ALTER SYSTEM SET default_transaction_read_only = on",
			"SELECT pg_reload_conf()",
			terminateClients)
		c.Close(context.Background())
	}
	if err != nil {
		e.log.Warn("fencing the external server: the node's door is closed, but the server could not be made read-only", "err", err)
		return
	}
	e.log.Warn("the external server is fenced: the node's door is closed, the server is read-only by default and its client sessions were ended")
}

// terminateClients ends every client session on the server but the one
// that asks (the engine's own status and probe sessions reconnect).
const terminateClients = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"

// unfenceExternal lifts fenceExternal's read-only default and opens the
// door.
func (e *Engine) unfenceExternal() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := e.connectDSN(ctx, e.node.DSN)
	if err != nil {
		return fmt.Errorf("physical: unfence %s: %w", e.where(), err)
	}
	defer c.Close(context.Background())
	if err := execAll(ctx, c, "ALTER SYSTEM RESET default_transaction_read_only", "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("physical: unfence %s: %w", e.where(), err)
	}
	e.setDoor(true)
	return nil
}

// startExternal takes up the external server in the role st says: it
// must already be one (a primary out of recovery, a standby in it); a
// standby is pointed at its primary (primary_conninfo, primary_slot_name)
// when it is not yet.
func (e *Engine) startExternal(ctx context.Context, st state) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := e.connectDSN(cctx, e.node.DSN)
	if err != nil {
		return fmt.Errorf("physical: node %s: connect to its external server %s: %w", e.cfg.ID, e.where(), err)
	}
	defer c.Close(context.Background())
	rows, err := query(cctx, c, "SELECT pg_is_in_recovery()::text, current_setting('primary_conninfo'), current_setting('primary_slot_name'), current_setting('default_transaction_read_only'), current_setting('max_slot_wal_keep_size')")
	if err != nil {
		return fmt.Errorf("physical: node %s: ask its external server %s: %w (replication.server_role needs pg_monitor: see docs/operations.md \"External servers\")", e.cfg.ID, e.where(), err)
	}
	inRecovery, conninfo, slot, readOnly := rows[0][0] == "true", rows[0][1], rows[0][2], rows[0][3] == "on"
	if rows[0][4] != e.c.Repl.MaxSlotWALKeepSize {
		// The slots tandem makes keep WAL for replicas that are down:
		// bounded as on a managed server (PostgreSQL's default keeps it
		// all, until the disk fills). Set on standbys too, for the day
		// one is promoted.
		if err := execAll(cctx, c, "ALTER SYSTEM SET max_slot_wal_keep_size = "+quoteLiteral(e.c.Repl.MaxSlotWALKeepSize), "SELECT pg_reload_conf()"); err != nil {
			return fmt.Errorf("physical: node %s: bound the slots' WAL on %s (max_slot_wal_keep_size; replication.server_role needs ALTER SYSTEM on it: docs/operations.md \"External servers\"): %w", e.cfg.ID, e.where(), err)
		}
	}
	switch {
	case st.Role == RolePrimary && inRecovery:
		return fmt.Errorf("physical: node %s is the primary of epoch %d, but its external server %s is a standby (in recovery): at the first start nodes[0] must name the operator's primary, and after a failover the cluster's state says which node is the primary (tandem status)", e.cfg.ID, st.Epoch, e.where())
	case st.Role == RoleStandby && !inRecovery:
		e.fenceExternal()
		msg := fmt.Sprintf("make %s a standby of %s's server (pg_rewind or pg_basebackup -R, standby.signal, start it); this node takes it up within 5 s", e.where(), st.Primary)
		e.rejoin.Store(&msg)
		return fmt.Errorf("%w: node %s follows %s, but its server %s is a primary (not in recovery); it is fenced (read-only, no session through tandem). Make it a standby of %s (pg_rewind --target-pgdata DIR --source-server '<%s's conninfo>' --write-recovery-conf, or a fresh pg_basebackup -R), start it, and this node takes it up within 5 s",
			ErrRejoin, e.cfg.ID, st.Primary, e.where(), st.Primary, st.Primary)
	}
	if st.Role == RoleStandby {
		p, ok := e.c.Node(st.Primary)
		if !ok {
			return fmt.Errorf("physical: this node follows %q, which the cluster file does not list", st.Primary)
		}
		want, err := repointConninfo(conninfo, p.DSN, e.cfg.ID, e.c.Repl.ServerRole)
		if err != nil {
			return fmt.Errorf("physical: node %s: %w", e.cfg.ID, err)
		}
		if want != conninfo || slot != slotName(e.cfg.ID) {
			if err := execAll(cctx, c,
				"ALTER SYSTEM SET primary_conninfo = "+quoteLiteral(want),
				"ALTER SYSTEM SET primary_slot_name = "+quoteLiteral(slotName(e.cfg.ID)),
				"SELECT pg_reload_conf()"); err != nil {
				return fmt.Errorf("physical: node %s: point its external server at %s: %w (replication.server_role needs ALTER SYSTEM on primary_conninfo and primary_slot_name: docs/operations.md \"External servers\")", e.cfg.ID, p.ID, err)
			}
			e.log.Info("the external standby now streams from its primary", "primary", p.ID, "primary_conninfo", redactConninfo(want), "slot", slotName(e.cfg.ID))
		}
		if st.Rewind {
			past, err := e.pastFork(cctx, c, p)
			if err != nil {
				e.log.Warn("could not check whether the external standby can follow its new primary's timeline", "primary", p.ID, "err", err)
			} else if past != "" {
				e.fenceExternal()
				msg := fmt.Sprintf("%s; rewind %s to %s's server (pg_rewind --target-pgdata DIR --source-server '<%s's conninfo>' --write-recovery-conf, or a fresh pg_basebackup -R) and start it; this node takes it up within 5 s", past, e.where(), p.ID, p.ID)
				e.rejoin.Store(&msg)
				return fmt.Errorf("%w: node %s: %s: it is fenced (no session through tandem: its data holds commits that are not in the cluster's history)", ErrRejoin, e.cfg.ID, msg)
			}
		}
	}
	if readOnly {
		// Left by a fence of this engine (or set by hand): a primary
		// takes writes again, a standby takes none anyway.
		if err := execAll(cctx, c, "ALTER SYSTEM RESET default_transaction_read_only", "SELECT pg_reload_conf()"); err != nil {
			return fmt.Errorf("physical: node %s: lift the read-only default on %s: %w", e.cfg.ID, e.where(), err)
		}
	}
	e.rejoin.Store(nil)
	s := &extServer{e: e, done: make(chan struct{}), quit: make(chan struct{})}
	go s.watch()
	e.serve(s, "the external PostgreSQL server stopped answering")
	e.setDoor(true)
	return nil
}

// pastFork says why the external standby behind c cannot follow p, the
// primary it was pointed at after a failover, or "" when it can: its
// server replayed its old timeline past the position where p's timeline
// forked from it (it received WAL of the lost primary that the promoted
// standby had not: commits that are not in the cluster's history), or its
// timeline is not in p's history at all. PostgreSQL then refuses to
// follow ("new timeline forked off current database system timeline
// before current recovery point"), and until it is rewound its reads
// would show those commits. A standby that receives p's timeline already
// follows; one whose last restartpoint is older than its switch to p's
// timeline looks past the fork too, so it is given a few seconds to
// start streaming it.
func (e *Engine) pastFork(ctx context.Context, c *pgconn.PgConn, p *config.Node) (string, error) {
	const probe = "SELECT coalesce(pg_last_wal_replay_lsn()::text, ''), (SELECT timeline_id FROM pg_control_checkpoint())::text, coalesce((SELECT status FROM pg_stat_wal_receiver), ''), coalesce((SELECT received_tli FROM pg_stat_wal_receiver)::text, '0')"
	rows, err := query(ctx, c, probe)
	if err != nil {
		return "", err
	}
	if rows[0][0] == "" {
		return "", nil
	}
	// (A receiver that streams is not enough: pointed at the promoted
	// standby, it streams the old timeline's tail up to the switch and
	// stops, again every few seconds; only one that receives the
	// primary's timeline follows it.)
	replay, err := parseLSN(rows[0][0])
	if err != nil {
		return "", err
	}
	tli, err := strconv.ParseUint(rows[0][1], 10, 32)
	if err != nil {
		return "", fmt.Errorf("the standby's timeline %q: %w", rows[0][1], err)
	}
	pc, err := e.connectDSN(ctx, p.DSN)
	if err != nil {
		return "", fmt.Errorf("connect to %s's server: %w", p.ID, err)
	}
	defer pc.Close(context.Background())
	prow, err := query(ctx, pc, "SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) WHERE NOT pg_is_in_recovery()")
	if err != nil || len(prow) != 1 {
		return "", fmt.Errorf("%s's server's timeline: not a primary (%v)", p.ID, err)
	}
	ptli, err := strconv.ParseUint(prow[0][0], 16, 32)
	if err != nil {
		return "", err
	}
	if rtli, _ := strconv.ParseUint(rows[0][3], 10, 32); tli >= ptli || rtli >= ptli {
		return "", nil // on the primary's timeline already
	}
	hist, err := query(ctx, pc, "SELECT pg_read_file('pg_wal/' || $1 || '.history')", fmt.Sprintf("%08X", ptli))
	if err != nil {
		return "", fmt.Errorf("%s's timeline history: %w", p.ID, err)
	}
	var why string
	if sp, ok := switchPoint(hist[0][0], tli); !ok {
		why = fmt.Sprintf("its server is on timeline %d, which is not in the history of %s's timeline %d", tli, p.ID, ptli)
	} else if replay > sp {
		why = fmt.Sprintf("its server replayed timeline %d up to %s, past %s, where %s's timeline %d forked from it", tli, FormatLSN(replay), FormatLSN(sp), p.ID, ptli)
	} else {
		return "", nil
	}
	// The restartpoint's timeline lags a switch: a standby that took the
	// new timeline at the fork streams within a moment.
	for range 30 {
		select {
		case <-ctx.Done():
			return why, nil
		case <-time.After(100 * time.Millisecond):
		}
		if rows, err := query(ctx, c, probe); err == nil && rows[0][2] == "streaming" {
			if rtli, _ := strconv.ParseUint(rows[0][3], 10, 32); rtli >= ptli {
				return "", nil
			}
		}
	}
	return why, nil
}

// startStandbyExternal is startStandby for an external server: its slot
// on the primary made sure of, then taken up (pointed at the primary).
func (e *Engine) startStandbyExternal(ctx context.Context) error {
	st, _ := e.state()
	p, status, err := e.primaryAndSlot(ctx, st)
	if err != nil {
		return err
	}
	if status == "lost" {
		e.log.Error("this node's slot on the primary was lost (max_slot_wal_keep_size): the external server needs a fresh base backup of the primary (pg_basebackup -R), which is its operator's to take", "primary", p.ID)
	}
	if err := e.startExternal(ctx, st); err != nil {
		return err
	}
	if st.Rewind {
		return e.setState(func(s *state) { s.Rewind = false })
	}
	return nil
}

// lastLSNExternal is a fenced external primary's last flushed WAL position, once
// no client session but the engine's is left on it (a commit that was
// being written finishes first).
func (e *Engine) lastLSNExternal(ctx context.Context) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := e.connectDSN(cctx, e.node.DSN)
	if err != nil {
		return "", fmt.Errorf("physical: %w", err)
	}
	defer c.Close(context.Background())
	for {
		rows, err := query(cctx, c, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> "+quoteLiteral(engineApp))
		if err != nil {
			return "", fmt.Errorf("physical: %w", err)
		}
		if rows[0][0] == "0" {
			break
		}
		if _, err := query(cctx, c, terminateClients); err != nil {
			return "", fmt.Errorf("physical: %w", err)
		}
		select {
		case <-cctx.Done():
			return "", fmt.Errorf("physical: client sessions still open on the fenced server: %w", cctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The flush position, not the insert one: every acknowledged commit
	// was flushed before it was answered (synchronous_commit is at least
	// local at every safeness level), and the WAL senders ship flushed
	// WAL only. Records inserted and not yet flushed (the fence's own
	// ALTER SYSTEM logs a hint-bit page image) may never be, and a target
	// waiting for them would wait for the lease to lapse instead.
	rows, err := query(cctx, c, "SELECT pg_current_wal_flush_lsn()::text")
	if err != nil {
		return "", fmt.Errorf("physical: %w", err)
	}
	return rows[0][0], nil
}

// retryExternal takes up a standby's external server that could not be
// taken up before (an old primary its operator is making a standby).
func (e *Engine) retryExternal(ctx context.Context) {
	if !e.opMu.TryLock() {
		return
	}
	defer e.opMu.Unlock()
	st, _ := e.state()
	if st.Role != RoleStandby || e.srv.Load() != nil {
		return
	}
	// Still a primary: it stays fenced as it was (nothing to log again).
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	c, err := e.connectDSN(cctx, e.node.DSN)
	if err == nil {
		var rows [][]string
		rows, err = query(cctx, c, "SELECT pg_is_in_recovery()::text")
		c.Close(context.Background())
		if err == nil && rows[0][0] != "true" {
			err = ErrRejoin
		}
	}
	cancel()
	if err != nil {
		return
	}
	// Bounded: opMu is held, and a promote the coordinator asks for
	// waits on it (waitPrimary would wait for a primary that is gone).
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := e.startStandbyExternal(sctx); err != nil {
		e.log.Debug("the external server is not yet a standby of the primary", "err", err)
		return
	}
	e.log.Info("the external server rejoined as a standby", "primary", st.Primary)
}

// repointConninfo is the standby's primary_conninfo aimed at the server
// of primaryDSN: its host and port, application_name the node's id (what
// synchronous_standby_names names), everything else (user, passfile,
// TLS settings) the operator's. With no primary_conninfo yet it is built
// from primaryDSN's host, port and TLS mode and user (the server role,
// which has REPLICATION); no password is ever written (the standby's
// server reads it from its own passfile).
func repointConninfo(current, primaryDSN, id, user string) (string, error) {
	pc, err := pgconn.ParseConfig(primaryDSN)
	if err != nil {
		return "", fmt.Errorf("the primary's nodes.dsn: %w", err)
	}
	kv, err := parseConninfo(current)
	if err != nil {
		return "", fmt.Errorf("the standby's primary_conninfo: %w", err)
	}
	if len(kv) == 0 {
		kv["user"] = user
		if pc.TLSConfig == nil {
			kv["sslmode"] = "disable"
		}
	}
	delete(kv, "hostaddr")
	kv["host"] = pc.Host
	kv["port"] = strconv.Itoa(int(pc.Port))
	kv["application_name"] = id
	return joinConninfo(kv), nil
}

// parseConninfo reads a libpq keyword=value connection string (values
// bare or single-quoted with backslash escapes).
func parseConninfo(s string) (map[string]string, error) {
	kv := map[string]string{}
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return kv, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, fmt.Errorf("%q: keyword without a value", s[i:])
		}
		key := strings.TrimSpace(s[i : i+eq])
		if key == "" || strings.ContainsAny(key, " \t'") {
			return nil, fmt.Errorf("bad keyword %q", key)
		}
		i += eq + 1
		skip()
		var b strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				ch := s[i]
				if ch == '\\' && i+1 < len(s) {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if ch == '\'' {
					i++
					closed = true
					break
				}
				b.WriteByte(ch)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quoted value of %s", key)
			}
		} else {
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
				i++
			}
		}
		kv[key] = b.String()
	}
}

// redactConninfo is a conninfo for logs: a password replaced.
func redactConninfo(s string) string {
	kv, err := parseConninfo(s)
	if err != nil {
		return "(unparsable)"
	}
	if _, ok := kv["password"]; ok {
		kv["password"] = "********"
	}
	return joinConninfo(kv)
}

// joinConninfo writes keyword='value' pairs in keyword order.
func joinConninfo(kv map[string]string) string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+quoteConn(kv[k]))
	}
	return strings.Join(parts, " ")
}
