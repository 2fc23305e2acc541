package physical

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/config"
)

// Replica is one WAL stream as the primary sees it (pg_stat_replication).
type Replica struct {
	Node      string `json:"node"` // its application_name
	State     string `json:"state"`
	SyncState string `json:"sync_state"`
	Sent      string `json:"sent_lsn"`
	Written   string `json:"write_lsn"`
	Flushed   string `json:"flush_lsn"`
	Replayed  string `json:"replay_lsn"`
	// LagBytes is the primary's position less the replica's replay.
	LagBytes  int64  `json:"lag_bytes"`
	WriteLag  string `json:"write_lag,omitempty"`
	FlushLag  string `json:"flush_lag,omitempty"`
	ReplayLag string `json:"replay_lag,omitempty"`
}

// Slot is one replication slot on this server.
type Slot struct {
	Name       string `json:"name"`
	Active     bool   `json:"active"`
	RestartLSN string `json:"restart_lsn"`
	WALStatus  string `json:"wal_status"`
	// SafeWALBytes is how much more WAL may be written before the slot
	// is lost (max_slot_wal_keep_size); -1 when unbounded.
	SafeWALBytes int64 `json:"safe_wal_bytes"`
}

// Status is the physical engine's part of a node's /status.
type Status struct {
	Engine   string `json:"engine"`
	Role     string `json:"role"`
	Epoch    uint64 `json:"epoch"`
	Primary  string `json:"primary"`
	Safeness string `json:"safeness"`
	// The server's settings as it runs them.
	SynchronousCommit       string `json:"synchronous_commit,omitempty"`
	SynchronousStandbyNames string `json:"synchronous_standby_names,omitempty"`
	// LSN: the primary's current WAL position (pg_current_wal_lsn).
	LSN string `json:"lsn,omitempty"`
	// A primary's timeline, and the one its pg_control names (its last
	// checkpoint's): they differ from a promotion until the checkpoint
	// that follows it, and a node rewinding from this one waits until
	// they are the same (pg_rewind reads pg_control).
	Timeline           uint64 `json:"timeline,omitempty"`
	CheckpointTimeline uint64 `json:"checkpoint_timeline,omitempty"`
	// A standby's received and replayed positions, the bytes between them,
	// the age of the last replayed commit (seconds; it grows while the
	// primary is idle, as PostgreSQL's own measure does), and its WAL
	// receiver's state ("streaming" when connected).
	Received       string   `json:"receive_lsn,omitempty"`
	Replayed       string   `json:"replay_lsn,omitempty"`
	ReplayLagBytes int64    `json:"replay_lag_bytes,omitempty"`
	ReplayDelay    *float64 `json:"last_replayed_commit_age_seconds,omitempty"`
	Receiver       string   `json:"receiver,omitempty"`
	// Degraded: no standby streamed for ack_timeout and this primary
	// commits 1-safe (replication.on_standby_loss = "degrade").
	Degraded bool      `json:"degraded,omitempty"`
	Replicas []Replica `json:"replicas,omitempty"`
	Slots    []Slot    `json:"slots,omitempty"`
	// Error: the server could not be asked (stopped, starting).
	Error string `json:"error,omitempty"`
	// ExternalServer: the operator's server (nodes.dsn) this node runs
	// on, host:port; Rejoin: what its operator must do before the node
	// can take it up again (it is fenced until then).
	ExternalServer string `json:"external_server,omitempty"`
	Rejoin         string `json:"rejoin,omitempty"`
}

// Status reads the engine's state and the server's replication views.
func (e *Engine) Status(ctx context.Context) Status {
	return e.status(ctx, func(ctx context.Context, c *pgconn.PgConn, s *Status) error {
		var recovering string
		if set, ok := e.cachedSettings(); ok {
			rows, err := query(ctx, c, `SELECT pg_is_in_recovery()::text`)
			if err != nil {
				return err
			}
			s.SynchronousCommit, s.SynchronousStandbyNames, recovering = set[0], set[1], rows[0][0]
		} else {
			rows, err := query(ctx, c, `SELECT (SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'),
			(SELECT reset_val FROM pg_settings WHERE name = 'synchronous_standby_names'), pg_is_in_recovery()::text`)
			if err != nil {
				return err
			}
			s.SynchronousCommit, s.SynchronousStandbyNames, recovering = rows[0][0], rows[0][1], rows[0][2]
			e.cacheSettings([2]string{rows[0][0], rows[0][1]})
		}
		if recovering == "false" {
			return e.primaryStatus(ctx, c, s)
		}
		return e.standbyStatus(ctx, c, s)
	})
}

// status is the engine's state and what ask reads of the server into it
// (Error: the server could not be asked), with an external server's
// address and what its operator must do.
func (e *Engine) status(ctx context.Context, ask func(context.Context, *pgconn.PgConn, *Status) error) Status {
	st, _ := e.state()
	s := Status{Engine: config.EnginePhysical, Role: st.Role, Epoch: st.Epoch, Primary: st.Primary, Safeness: st.Safeness, Degraded: e.degraded.Load()}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := e.withConn(ctx, func(c *pgconn.PgConn) error { return ask(ctx, c, &s) }); err != nil {
		s.Error = err.Error()
	}
	if e.external {
		s.ExternalServer = e.where()
		if r := e.rejoin.Load(); r != nil {
			s.Rejoin = *r
		}
	}
	return s
}

// Probe is Status for the router's health probe, twice a second from
// every router: the engine's role, epoch and safeness, and the server's
// WAL position (a primary's current one, a standby's replay position) in
// one query of functions. Status reads pg_stat_replication (0.38 ms of a
// backend's CPU per query against 0.07 for its function, measured) and the
// slots, which only a person reads.
func (e *Engine) Probe(ctx context.Context) Status {
	return e.status(ctx, func(ctx context.Context, c *pgconn.PgConn, s *Status) error {
		rows, err := query(ctx, c, `SELECT pg_catalog.pg_is_in_recovery()::text,
			coalesce((CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_lsn() END)::text, '')`)
		if err != nil {
			return err
		}
		if rows[0][0] == "false" {
			s.LSN = rows[0][1]
		} else {
			s.Replayed = rows[0][1]
		}
		return nil
	})
}

func atoi64(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// settingsTTL is how long Status reuses the server's synchronous_commit
// and synchronous_standby_names: reading them scans pg_settings twice
// (every GUC of the server, as text), and every router probes every
// node's /status twice a second. The engine's own changes replace the
// copy with the values they set (applySafeness, a degrade): read back at
// once, this session could still show the old ones, not having handled
// the reload's signal yet. A change of role drops it. Only an operator's
// own ALTER SYSTEM shows up to this much later.
const settingsTTL = time.Second

func (e *Engine) cachedSettings() ([2]string, bool) {
	e.setMu.Lock()
	defer e.setMu.Unlock()
	return e.settings2, !e.settingsAt.IsZero() && time.Since(e.settingsAt) < settingsTTL
}

func (e *Engine) cacheSettings(v [2]string) {
	e.setMu.Lock()
	defer e.setMu.Unlock()
	e.settings2, e.settingsAt = v, time.Now()
}

// dropSettings forgets the cached settings (the engine changed them).
func (e *Engine) dropSettings() {
	e.setMu.Lock()
	defer e.setMu.Unlock()
	e.settingsAt = time.Time{}
}

func (e *Engine) primaryStatus(ctx context.Context, c *pgconn.PgConn, s *Status) error {
	rows, err := query(ctx, c, `SELECT pg_current_wal_lsn()::text, substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8),
		(SELECT timeline_id FROM pg_control_checkpoint())::text`)
	if err != nil {
		return err
	}
	s.LSN = rows[0][0]
	s.Timeline, _ = strconv.ParseUint(rows[0][1], 16, 32)
	s.CheckpointTimeline, _ = strconv.ParseUint(rows[0][2], 10, 32)
	rows, err = query(ctx, c, `SELECT application_name, state, sync_state,
		coalesce(sent_lsn::text, ''), coalesce(write_lsn::text, ''), coalesce(flush_lsn::text, ''), coalesce(replay_lsn::text, ''),
		coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint, -1)::text,
		coalesce(write_lag::text, ''), coalesce(flush_lag::text, ''), coalesce(replay_lag::text, '')
		FROM pg_stat_replication ORDER BY application_name`)
	if err != nil {
		return err
	}
	for _, r := range rows {
		s.Replicas = append(s.Replicas, Replica{Node: r[0], State: r[1], SyncState: r[2], Sent: r[3], Written: r[4], Flushed: r[5], Replayed: r[6],
			LagBytes: atoi64(r[7]), WriteLag: r[8], FlushLag: r[9], ReplayLag: r[10]})
	}
	return e.slotStatus(ctx, c, s)
}

func (e *Engine) slotStatus(ctx context.Context, c *pgconn.PgConn, s *Status) error {
	rows, err := query(ctx, c, `SELECT slot_name, active::text, coalesce(restart_lsn::text, ''), coalesce(wal_status, ''), coalesce(safe_wal_size, -1)::text
		FROM pg_replication_slots WHERE slot_type = 'physical' ORDER BY slot_name`)
	if err != nil {
		return err
	}
	for _, r := range rows {
		s.Slots = append(s.Slots, Slot{Name: r[0], Active: r[1] == "true", RestartLSN: r[2], WALStatus: r[3], SafeWALBytes: atoi64(r[4])})
	}
	return nil
}

// standbyStatus: the replay lag is never below 0 (a restarted standby's
// receive position starts at the segment it streams from, which may be
// before what it replayed from its own WAL).
func (e *Engine) standbyStatus(ctx context.Context, c *pgconn.PgConn, s *Status) error {
	rows, err := query(ctx, c, `SELECT coalesce(pg_last_wal_receive_lsn()::text, ''), coalesce(pg_last_wal_replay_lsn()::text, ''),
		greatest(coalesce(pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::bigint, 0), 0)::text,
		coalesce(extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8::text, ''),
		coalesce((SELECT status FROM pg_stat_wal_receiver), 'stopped')`)
	if err != nil {
		return err
	}
	r := rows[0]
	s.Received, s.Replayed, s.ReplayLagBytes, s.Receiver = r[0], r[1], atoi64(r[2]), r[4]
	if r[3] != "" {
		if f, err := strconv.ParseFloat(r[3], 64); err == nil {
			s.ReplayDelay = &f
		}
	}
	return e.slotStatus(ctx, c, s)
}

// streams is what Watch needs every 250 ms, in one small query where
// Status makes four or five (two scans of pg_settings, the control file,
// the slots): on a primary, how many standbys stream from it; on a
// standby, whether its WAL receiver streams. With Status here an idle
// primary's server spent about 0.1 core on the engine's own questions
// (measured on lab hosts of 0.2 core), which a lab host's quota then
// lacked for clients. The functions behind the views, not the views:
// pg_stat_replication joins every backend's entry (pg_stat_get_activity,
// max_connections of them) to the WAL senders' and cost a backend 0.38 ms
// of CPU per query, its function alone 0.07 ms (measured, PostgreSQL 15).
func (e *Engine) streams(ctx context.Context, primary bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	sql := streamingSendersQuery
	if !primary {
		sql = `SELECT count(*)::text FROM pg_catalog.pg_stat_get_wal_receiver() WHERE pid IS NOT NULL AND status = 'streaming'`
	}
	var n int
	err := e.withConn(ctx, func(c *pgconn.PgConn) error {
		rows, err := query(ctx, c, sql)
		if err == nil && len(rows) == 1 {
			n, err = strconv.Atoi(rows[0][0])
		}
		return err
	})
	return n, err
}

// streamingSendersQuery counts the WAL senders that stream (streams).
const streamingSendersQuery = `SELECT count(*)::text FROM pg_catalog.pg_stat_get_wal_senders() WHERE state = 'streaming'`

// syncConfirmed is the WAL position the synchronous standbys confirmed at
// level (confirmedAt over pg_stat_replication's synchronous rows only),
// for the lease renewals: one small query, where Status makes five.
func (e *Engine) syncConfirmed(ctx context.Context, level string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var reps []Replica
	err := e.withConn(ctx, func(c *pgconn.PgConn) error {
		rows, err := query(ctx, c, `SELECT sync_state, coalesce(write_lsn::text, ''), coalesce(flush_lsn::text, ''), coalesce(replay_lsn::text, '')
			FROM pg_catalog.pg_stat_get_wal_senders() WHERE sync_state IN ('sync', 'quorum')`)
		for _, r := range rows {
			reps = append(reps, Replica{SyncState: r[0], Written: r[1], Flushed: r[2], Replayed: r[3]})
		}
		return err
	})
	return confirmedAt(level, reps), err
}

// Watch keeps the cluster working through a lost standby, until ctx ends.
// A primary asks the other nodes every 2 s whether one is the primary of a
// newer epoch, and steps down to follow it if so.
// On a primary with replication.on_standby_loss = "degrade" (the default)
// and a 2-safe level, when fewer standbys than synchronous_standby_names
// waits for (AckCount; one, for a pair) have streamed for ack_timeout it
// empties synchronous_standby_names (commits go on 1-safe; /status says
// degraded), and restores it once enough stream again. On a standby
// it re-seeds when its slot on the primary was lost
// (max_slot_wal_keep_size passed while it was down or slow): its WAL
// receiver cannot stream any more, so it checks the slot whenever the
// receiver has not been streaming for a while, and a lost slot brings a
// fresh base backup.
func (e *Engine) Watch(ctx context.Context, every time.Duration) {
	var lostSince time.Time // when no standby streamed (primary) / the receiver stopped (standby)
	var lastRetry time.Time // an external standby's last take-up attempt
	go e.stepDownLoop(ctx, 2*time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		st, _ := e.state()
		if e.srv.Load() == nil {
			lostSince = time.Time{}
			if e.external && st.Role == RoleStandby && time.Since(lastRetry) >= 5*time.Second {
				lastRetry = time.Now()
				e.retryExternal(ctx)
			}
			continue
		}
		n, err := e.streams(ctx, st.Role == RolePrimary)
		if err != nil {
			continue
		}
		streaming := n > 0
		if st.Role == RolePrimary {
			// Enough standbys stream for the level to hold: the
			// number synchronous_standby_names waits for (ack).
			streaming = n > 0 && n >= AckCount(e.c.Repl.Ack, len(e.standbys()))
		}
		if streaming {
			lostSince = time.Time{}
			if st.Role == RolePrimary && e.degraded.Load() {
				e.setDegraded(ctx, false)
			}
			continue
		}
		if lostSince.IsZero() {
			lostSince = time.Now()
		}
		if st.Role == RolePrimary {
			if !e.degraded.Load() && st.Safeness != "1-safe" && e.c.Repl.OnStandbyLoss == "degrade" && time.Since(lostSince) >= e.c.Repl.AckTimeout.Duration {
				e.setDegraded(ctx, true)
			}
			continue
		}
		if time.Since(lostSince) < 3*time.Second {
			continue
		}
		lostSince = time.Now() // next check of the slot in 3 s
		p, ok := e.c.Node(st.Primary)
		if !ok {
			continue
		}
		status, err := e.slotOnPrimary(ctx, p, false)
		if err != nil || status != "lost" {
			continue
		}
		e.log.Warn("this standby's slot on the primary was lost (max_slot_wal_keep_size): re-seeding with a base backup", "primary", p.ID)
		e.reseed(ctx, p)
		lostSince = time.Time{}
	}
}

// stepDownLoop: a primary that another node replaced (a promote it did
// not hear of: it was unreachable) steps down as soon as it hears of the
// newer epoch: its server stops, its data is rewound to the new primary's
// timeline, and it streams from it.
func (e *Engine) stepDownLoop(ctx context.Context, every time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		st, _ := e.state()
		if st.Role != RolePrimary {
			continue
		}
		if newer, epoch := e.newerPrimary(ctx, st.Epoch); newer != "" {
			e.log.Warn("another node is the primary of a newer epoch: this primary steps down and follows it", "primary", newer, "epoch", epoch)
			if err := e.Follow(ctx, newer); err != nil {
				e.log.Error("stepping down failed", "err", err)
			}
		}
	}
}

// setDegraded empties synchronous_standby_names (on) or restores the
// safeness level's (off).
func (e *Engine) setDegraded(ctx context.Context, on bool) {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	st, _ := e.state()
	if st.Role != RolePrimary {
		return
	}
	if on {
		// Automatic failover: the map learns first that the standbys may
		// lack what is committed from now on; without it, no degrade.
		if err := e.markDegraded(ctx, st.Epoch); err != nil {
			e.log.Error("no standby streams, but the coordinator could not record it: commits keep waiting", "err", err)
			return
		}
	}
	skipped := false
	var since string
	if !on {
		err := e.withConn(ctx, func(c *pgconn.PgConn) (err error) {
			since, err = e.applySafeness(ctx, c, st.Safeness, true)
			return err
		})
		if err == nil {
			// Until then commits may still be answered without the
			// standby: still degraded.
			err = e.awaitArmed(ctx, since)
		}
		if err != nil {
			e.log.Error("could not restore synchronous_standby_names", "err", err)
			return
		}
	}
	err := e.withConn(ctx, func(c *pgconn.PgConn) error {
		if !on {
			// Every commit from here waits for the standby: once it
			// confirmed this position it holds everything.
			rows, err := query(ctx, c, "SELECT pg_current_wal_lsn()::text")
			if err == nil && len(rows) == 1 {
				if n, perr := parseLSN(rows[0][0]); perr == nil {
					e.cleanFrom.Store(n)
				}
			}
			return err
		}
		// Decided a moment ago, and the map's entry took a Raft round:
		// a standby may stream by now (a switchover's old primary
		// rejoining). Degrading then would answer the next commits
		// without it although it is there (e2e TestPhysicalPair saw a
		// 2-safe-visible write missing on a standby reported synchronous).
		rows, err := query(ctx, c, `SELECT (`+streamingSendersQuery+`), pg_current_wal_lsn()::text`)
		if err != nil {
			return err
		}
		if n, _ := strconv.Atoi(rows[0][0]); n > 0 && n >= AckCount(e.c.Repl.Ack, len(e.standbys())) {
			// Not degraded: every commit from here waits for the
			// standby, so the map's mark clears once it confirmed this.
			if l, perr := parseLSN(rows[0][1]); perr == nil {
				e.cleanFrom.Store(l)
			}
			skipped = true
			return nil
		}
		// Said before it is so: once the checkpointer reads the reload,
		// waiting commits return at once, and /status must not call a
		// commit answered without the standby not degraded (e2e
		// TestPhysicalPromoteAfterCrash read degraded = false right after
		// such a commit when this was set afterwards).
		e.degraded.Store(true)
		if err := execAll(ctx, c, "ALTER SYSTEM SET synchronous_standby_names = ''", "SELECT pg_reload_conf()"); err != nil {
			e.degraded.Store(false)
			e.dropSettings()
			return err
		}
		// What Status shows: this session may not have read the reload yet.
		sc, _ := SynchronousCommit(st.Safeness)
		e.cacheSettings([2]string{sc, ""})
		return nil
	})
	if err != nil {
		e.log.Error("could not change synchronous_standby_names", "degrade", on, "err", err)
		return
	}
	if skipped {
		e.log.Info("a standby streams after all: not degraded")
		return
	}
	e.degraded.Store(on)
	if on {
		e.log.Warn("no standby streams: commits go on 1-safe (replication.on_standby_loss = \"degrade\")", "after", e.c.Repl.AckTimeout.Duration)
	} else {
		e.log.Info("a standby streams again: commits wait for it as the safeness level says", "safeness", st.Safeness)
	}
}

// reseed replaces a standby's data with a fresh base backup.
func (e *Engine) reseed(ctx context.Context, p *config.Node) {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	st, _ := e.state()
	if st.Role != RoleStandby || st.Primary != p.ID {
		return
	}
	if e.external {
		e.log.Error("the external standby needs a fresh base backup of the primary (pg_basebackup -R), which is its operator's to take; it streams nothing until then", "primary", p.ID, "server", e.where())
		return
	}
	e.stopServer()
	if err := e.dropOwnSlot(ctx, p); err != nil {
		e.log.Error("re-seed: drop the lost slot", "err", err)
	}
	if err := e.baseBackup(ctx, p); err != nil {
		e.log.Error("re-seed failed; the node stays down until restarted", "err", err)
		return
	}
	if err := e.startServer(ctx, st); err != nil {
		e.log.Error("re-seed: start", "err", err)
	}
}
