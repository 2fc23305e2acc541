package physical

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/secure"
)

// PromoteResult is what /admin/promote answers (the writeset engine's
// fields, GSNs zero, and the WAL position).
type PromoteResult struct {
	Node    string `json:"node"`
	Epoch   uint64 `json:"epoch"`
	LastGSN uint64 `json:"last_gsn"`
	// LastLSN is the new primary's WAL position when it took over.
	LastLSN string `json:"last_lsn"`
	Engine  string `json:"engine"`
}

// Promote makes this standby the primary of the next epoch with
// pg_promote. With fencedLSN (the old primary's last WAL position, from a
// demote or fence) it first waits up to wait until it has replayed that
// far, so nothing the old primary committed is lost.
func (e *Engine) Promote(ctx context.Context, fencedLSN string, wait time.Duration) (PromoteResult, error) {
	return e.promote(ctx, fencedLSN, wait, 0)
}

// promote is Promote into epoch (0: the next one).
func (e *Engine) promote(ctx context.Context, fencedLSN string, wait time.Duration, epoch uint64) (PromoteResult, error) {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	st, _ := e.state()
	if st.Role != RoleStandby {
		return PromoteResult{}, fmt.Errorf("%w: node %s is already the primary of epoch %d", ErrNotStandby, e.cfg.ID, st.Epoch)
	}
	if e.srv.Load() == nil {
		return PromoteResult{}, fmt.Errorf("node %s: its server is stopped (it is being re-seeded or rewound); try again", e.cfg.ID)
	}
	if fencedLSN != "" {
		deadline := time.Now().Add(wait)
		for {
			var caught bool
			err := e.withConn(ctx, func(c *pgconn.PgConn) error {
				rows, err := query(ctx, c, "SELECT pg_wal_lsn_diff(coalesce(pg_last_wal_replay_lsn(), '0/0'), $1::pg_lsn) >= 0", fencedLSN)
				if err == nil && len(rows) == 1 {
					caught = rows[0][0] == "t"
				}
				return err
			})
			if err != nil {
				return PromoteResult{}, fmt.Errorf("node %s: replay position: %w", e.cfg.ID, err)
			}
			if caught {
				break
			}
			if time.Now().After(deadline) {
				return PromoteResult{}, fmt.Errorf("%w: node %s did not replay up to %s within %v", ErrNotCaught, e.cfg.ID, fencedLSN, wait)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	start := time.Now()
	err := e.withConn(ctx, func(c *pgconn.PgConn) error {
		rows, err := query(ctx, c, "SELECT pg_promote(true, 60)")
		if err == nil && (len(rows) != 1 || rows[0][0] != "t") {
			err = fmt.Errorf("pg_promote did not finish within 60 s")
		}
		return err
	})
	if err != nil {
		return PromoteResult{}, fmt.Errorf("node %s: promote: %w", e.cfg.ID, err)
	}
	e.degraded.Store(false)
	if epoch == 0 {
		st, _ := e.state()
		epoch = st.Epoch + 1
	}
	e.fenced.Store(false)
	e.released.Store(false)
	e.confirmed.Store(0)
	if err := e.setState(func(s *state) { s.Role, s.Primary, s.Epoch, s.Rewind = RolePrimary, e.cfg.ID, epoch, false }); err != nil {
		return PromoteResult{}, err
	}
	st, _ = e.state()
	res := PromoteResult{Node: e.cfg.ID, Epoch: st.Epoch, Engine: config.EnginePhysical}
	var since string
	err = e.withConn(ctx, func(c *pgconn.PgConn) error {
		if err := e.ensureSlots(ctx, c); err != nil {
			return err
		}
		since, err = e.applySafeness(ctx, c, st.Safeness, false)
		return err
	})
	if err == nil {
		err = e.awaitArmed(ctx, since)
	}
	if err == nil {
		err = e.withConn(ctx, func(c *pgconn.PgConn) error {
			rows, err := query(ctx, c, "SELECT pg_current_wal_lsn()::text")
			if err == nil && len(rows) == 1 {
				res.LastLSN = rows[0][0]
			}
			return err
		})
	}
	if err != nil {
		return res, fmt.Errorf("node %s: promoted, but setting up as primary failed: %w", e.cfg.ID, err)
	}
	e.log.Info("promoted", "epoch", st.Epoch, "lsn", res.LastLSN, "took", time.Since(start).Round(time.Millisecond))
	// The new timeline reaches pg_control only with the end-of-recovery
	// checkpoint, which a promotion spreads out (checkpoint_completion_target).
	// pg_rewind reads its source's pg_control: before that checkpoint it
	// sees the old timeline, says "no rewind required", and an old primary
	// whose WAL went past the fork cannot follow. The checkpoint is forced
	// here, after the node already serves (it cost 0.1-0.6 s of every
	// failover when it ran before); a node about to rewind from this one
	// waits for it (sourceCheckpointed).
	go e.checkpointAfterPromote(st.Epoch)
	return res, nil
}

// checkpointAfterPromote forces the checkpoint that writes the new
// timeline into pg_control, on its own connection (the status connection
// stays free), and records that it happened for /status.
func (e *Engine) checkpointAfterPromote(epoch uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := e.connect(ctx)
	if err == nil {
		err = execAll(ctx, c, "CHECKPOINT")
		c.Close(context.Background())
	}
	if err != nil {
		// A node rewinding from this one asks for the checkpoint itself.
		e.log.Warn("the checkpoint after the promotion failed", "epoch", epoch, "err", err)
		return
	}
	e.log.Info("checkpoint after the promotion done: the new timeline is in pg_control", "epoch", epoch, "took", time.Since(start).Round(time.Millisecond))
}

// Demote stops this primary (fencing it: from now on it accepts no
// write) so that node to can take over: to must be streaming from it, and
// the fast shutdown sends it everything up to the shutdown checkpoint.
// It answers the last WAL position (the shutdown checkpoint); the node
// stays stopped until told to follow (/admin/follow). With to empty it
// fences (promote --force).
func (e *Engine) Demote(ctx context.Context, to string) (string, error) {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	st, _ := e.state()
	if st.Role != RolePrimary {
		return "", fmt.Errorf("%w: node %s is a standby of %s", ErrNotPrimary, e.cfg.ID, st.Primary)
	}
	if to != "" {
		if _, ok := e.c.Node(to); !ok || to == e.cfg.ID {
			return "", fmt.Errorf("no other node %q in the cluster file", to)
		}
		var streaming bool
		err := e.withConn(ctx, func(c *pgconn.PgConn) error {
			rows, err := query(ctx, c, "SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'", to)
			streaming = len(rows) > 0
			return err
		})
		if err != nil {
			return "", fmt.Errorf("node %s: %w", e.cfg.ID, err)
		}
		if !streaming {
			return "", fmt.Errorf("%w: %s (see tandem status)", ErrNoTarget, to)
		}
	}
	e.stopServer()
	var lsn string
	var err error
	if e.external {
		lsn, err = e.lastLSNExternal(ctx)
	} else {
		lsn, err = e.checkpointLSN(ctx)
	}
	if err != nil {
		return "", err
	}
	if err := e.setState(func(s *state) { s.Role, s.Primary, s.Rewind = RoleStandby, to, true }); err != nil {
		return "", err
	}
	e.log.Info("demoted: the server is stopped until this node follows the new primary", "to", to, "last_lsn", lsn)
	return lsn, nil
}

// checkpointLSN reads the stopped server's last checkpoint (pg_controldata).
func (e *Engine) checkpointLSN(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.bin, "pg_controldata"), "-D", e.pgdata)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	cmd.Env = []string{"LANG=C", "LC_ALL=C"}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("pg_controldata: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "Latest checkpoint location" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("pg_controldata: no latest checkpoint location")
}

// Follow makes this node a hot standby of primary: a primary that still
// runs is stopped first (fenced); a data directory that was a primary's
// is rewound (pg_rewind, a base backup when that fails); a standby of
// another primary restarts with the new primary_conninfo.
func (e *Engine) Follow(ctx context.Context, primary string) error {
	return e.follow(ctx, primary, 0)
}

// follow is Follow in epoch (0: the newest a peer reports).
func (e *Engine) follow(ctx context.Context, primary string, epoch uint64) error {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	if primary == e.cfg.ID {
		return fmt.Errorf("node %s cannot follow itself", primary)
	}
	if _, ok := e.c.Node(primary); !ok {
		return fmt.Errorf("no node %q in the cluster file", primary)
	}
	st, _ := e.state()
	if st.Role == RoleStandby && st.Primary == primary && !st.Rewind && e.srv.Load() != nil {
		if epoch > st.Epoch {
			return e.setState(func(s *state) { s.Epoch = epoch })
		}
		return nil
	}
	if epoch == 0 {
		_, epoch = e.newerPrimary(ctx, st.Epoch)
	}
	wasPrimary := st.Role == RolePrimary
	// A standby repointed to a promoted replica (single-master: the other
	// replicas follow the new primary) may have received WAL of the old
	// primary's past the new timeline's fork (it reported less than the
	// promoted one before the failover, and streamed on): PostgreSQL
	// then refuses the new timeline ("forked off ... before current
	// recovery point"). pg_rewind finds out, and is a no-op ("no rewind
	// required") when it did not.
	repointed := st.Role == RoleStandby && st.Primary != primary
	e.fenced.Store(false)
	e.stopServer()
	if err := e.setState(func(s *state) {
		s.Role, s.Primary, s.Epoch = RoleStandby, primary, max(s.Epoch, epoch)
		s.Rewind = s.Rewind || wasPrimary || repointed
	}); err != nil {
		return err
	}
	return e.startStandby(ctx)
}

// Set changes the safeness level (synchronous_commit and the standby
// names, by ALTER SYSTEM and a reload, on a primary; a standby keeps it
// for when it is promoted). Durability other than strict is refused.
func (e *Engine) Set(ctx context.Context, safeness, durability string) error {
	if err := CheckDurability(durability); err != nil {
		return err
	}
	if safeness == "" {
		return nil
	}
	if _, err := SynchronousCommit(safeness); err != nil {
		return err
	}
	e.opMu.Lock()
	defer e.opMu.Unlock()
	st, _ := e.state()
	if e.Automatic() && st.Role == RolePrimary {
		// The map carries the level the failover rule applies. Raised
		// from 1-safe, the standbys may lack what was committed at
		// 1-safe: marked degraded first, cleared once they hold it.
		if st.Safeness == "1-safe" && safeness != "1-safe" {
			if err := e.markDegraded(ctx, st.Epoch); err != nil {
				return fmt.Errorf("safeness %s: %w", safeness, err)
			}
			e.cleanFrom.Store(0)
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := e.coord.SetSafeness(cctx, safeness)
		cancel()
		if err != nil {
			return fmt.Errorf("record safeness %s in the cluster map: %w", safeness, err)
		}
	}
	if st.Role == RolePrimary {
		var since string
		if err := e.withConn(ctx, func(c *pgconn.PgConn) (err error) {
			since, err = e.applySafeness(ctx, c, safeness, e.degraded.Load())
			return err
		}); err != nil {
			return err
		}
		if err := e.awaitArmed(ctx, since); err != nil {
			return err
		}
		// Every commit from here waits as the level says.
		if err := e.withConn(ctx, func(c *pgconn.PgConn) error {
			rows, err := query(ctx, c, "SELECT pg_current_wal_lsn()::text")
			if err == nil && len(rows) == 1 {
				if n, perr := parseLSN(rows[0][0]); perr == nil {
					e.cleanFrom.Store(n)
				}
			}
			return err
		}); err != nil {
			return err
		}
		e.degraded.Store(false) // Watch degrades again if no standby streams
	}
	return e.setState(func(s *state) { s.Safeness = safeness })
}

// RegisterAdmin serves the operator actions on the node's admin address,
// as the writeset engine does (the command line is the same): POST
// /admin/promote[?fenced_lsn=LSN&wait=DUR], /admin/fence,
// /admin/demote?to=ID, /admin/follow?primary=ID,
// /admin/set?safeness=...&durability=...; each needs the admin token.
func (e *Engine) RegisterAdmin(mux *http.ServeMux, token string, log *slog.Logger) {
	reply := secure.ReplyJSON
	post := func(h func(w http.ResponseWriter, req *http.Request)) http.Handler {
		return secure.AdminAction(token, log, h)
	}
	// Role changes outlive a client that gives up waiting (a base backup
	// must not be killed half way).
	opCtx := func(req *http.Request) (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(req.Context()), 10*time.Minute)
	}
	e.registerXact(mux, token, log)
	mux.Handle("/admin/promote", post(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		wait := 30 * time.Second
		if v := q.Get("wait"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				reply(w, nil, fmt.Errorf("wait: %w", err))
				return
			}
			wait = d
		}
		ctx, cancel := opCtx(req)
		defer cancel()
		if e.Automatic() {
			// failover = "automatic": the coordinator decides; it hands
			// the role over once the primary released its lease (a
			// switchover) or the lease lapsed.
			res, err := e.promoteCoordinated(ctx, q.Get("reason"))
			reply(w, res, err)
			return
		}
		res, err := e.Promote(ctx, q.Get("fenced_lsn"), wait)
		reply(w, res, err)
	}))
	mux.Handle("/admin/fence", post(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := opCtx(req)
		defer cancel()
		lsn, err := e.Demote(ctx, "")
		reply(w, map[string]any{"last_gsn": 0, "last_lsn": lsn}, err)
	}))
	mux.Handle("/admin/demote", post(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := opCtx(req)
		defer cancel()
		lsn, err := e.Demote(ctx, req.URL.Query().Get("to"))
		if err == nil && e.Automatic() {
			// The hand-over waits for the lease: give it up now that
			// this node takes no write.
			e.releaseLease(ctx, lsn)
		}
		reply(w, map[string]any{"last_gsn": 0, "last_lsn": lsn}, err)
	}))
	mux.Handle("/admin/follow", post(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := opCtx(req)
		defer cancel()
		if e.Automatic() {
			reply(w, nil, fmt.Errorf("failover = \"automatic\": the coordinator's map decides whom node %s follows", e.cfg.ID))
			return
		}
		err := e.Follow(ctx, req.URL.Query().Get("primary"))
		reply(w, e.Status(req.Context()), err)
	}))
	// GET /position: this node's role, epoch and WAL position as a
	// number, where the writeset engine's answers a GSN: on the primary
	// pg_current_wal_insert_lsn() (every commit acknowledged so far ends
	// at or below it), on a standby pg_last_wal_replay_lsn(). The
	// router's strong and bounded reads wait for it on a replica.
	mux.Handle("/position", secure.RequireToken(token, log, false, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		st, _ := e.state()
		lsn, err := e.Position(req.Context())
		reply(w, map[string]any{"role": st.Role, "epoch": st.Epoch, "applied_gsn": lsn, "lsn": FormatLSN(lsn)}, err)
	})))
	mux.Handle("/admin/set", post(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		err := e.Set(req.Context(), q.Get("safeness"), q.Get("durability"))
		reply(w, e.Status(req.Context()), err)
	}))
}

// Position is the server's WAL position: on a primary the insert
// position (at or past the end of every commit acknowledged so far), on a
// standby the replay position (everything up to it is visible to its
// reads).
func (e *Engine) Position(ctx context.Context) (uint64, error) {
	var lsn uint64
	err := e.withConn(ctx, func(c *pgconn.PgConn) error {
		rows, err := query(ctx, c, "SELECT CASE WHEN pg_is_in_recovery() THEN coalesce(pg_last_wal_replay_lsn(), '0/0') ELSE pg_current_wal_insert_lsn() END::text")
		if err != nil {
			return err
		}
		lsn, err = ParseLSN(rows[0][0])
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("node %s: WAL position: %w", e.cfg.ID, err)
	}
	return lsn, nil
}

// WatchHandler serves GET /watch as the writeset engine does: the role,
// epoch and primary as JSON lines, one now, one at every change, and a
// repeat every second.
func (e *Engine) WatchHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fl, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			st, changed := e.state()
			fenced := st.Role == RoleStandby && st.Rewind
			if err := enc.Encode(map[string]any{"node": e.cfg.ID, "role": st.Role, "epoch": st.Epoch, "primary": st.Primary, "fenced": fenced}); err != nil {
				return
			}
			fl.Flush()
			select {
			case <-req.Context().Done():
				return
			case <-changed:
			case <-tick.C:
			}
		}
	})
}
