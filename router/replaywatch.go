package router

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/pgwire"
)

// Waiting for a replica's replay on the physical engine (Config.LSN): one
// watcher per replica, shared by every session whose read waits there.
//
// A read at session consistency that follows the session's write needs
// the replica to have replayed the WAL up to the session's commit
// position. Until 2026-12-08 each such read sent its replica a DO block
// that polled pg_last_wal_replay_lsn() every millisecond on the session's
// own connection: a PL/pgSQL block compiled per wait, and a wake-up per
// millisecond per waiting session. On emulated hosts, where a throttled
// replica replays 5-10 ms behind, that cost the replica about as much CPU
// per read that waited as four reads (docs/benchmarks.md "Reads after
// writes on the physical pair's standby"). The watcher polls instead: one
// prepared statement on a connection of its own, every PollEvery while
// any session waits, none while none does; each answer releases every
// waiter it satisfies and tells the router what the replica has replayed
// (Router.known), so the reads that follow need no wait at all.
//
// If the watcher cannot reach the replica (its dial or a poll fails), the
// waiters get the error and their reads run on the primary, as when the
// DO block timed out; the next wait dials again.

// replayPollEvery is the pause between two polls while sessions wait.
const replayPollEvery = 500 * time.Microsecond

// replayPollQuery: NULL position and false while promoted (a node out of
// recovery has everything it will ever have, and every waiter goes on).
const replayPollQuery = "SELECT pg_catalog.pg_is_in_recovery(), pg_catalog.pg_last_wal_replay_lsn()::text"

// errReplayBehind: the replica did not replay far enough within
// router.read_wait (the read runs on the primary).
var errReplayBehind = errors.New("the replica did not replay the session's commit position in time")

type replayWaiter struct {
	need uint64
	ch   chan error
}

type replayWatch struct {
	rt  *Router
	idx int

	mu      sync.Mutex
	waiters map[*replayWaiter]struct{}
	running bool
	// login: the user, database and parameters of the session that
	// started the poller (any session's role may read the replay
	// position; the connection runs nothing else).
	login *pgwire.Conn
	conn  *pgconn.PgConn // the poller's (only the poller goroutine uses it)
	polls atomic.Uint64  // answers received (tests)
}

// replayWatch is node idx's watcher.
func (r *Router) replayWatch(idx int) *replayWatch {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if r.watches == nil {
		r.watches = make([]*replayWatch, len(r.cfg.Nodes))
	}
	if r.watches[idx] == nil {
		r.watches[idx] = &replayWatch{rt: r, idx: idx, waiters: map[*replayWaiter]struct{}{}}
	}
	return r.watches[idx]
}

// forget drops what the router knew of node i's replay (a rewind or a
// restart may take it back) and makes any poll in flight not count.
func (r *Router) forget(i int) {
	r.gen[i].Add(1)
	r.known[i].Store(0)
}

// wait returns once the replica has replayed need (or was promoted), or
// errReplayBehind after limit, or the poller's error. client's login
// starts the poller if none runs.
func (w *replayWatch) wait(ctx context.Context, need uint64, limit time.Duration, client *pgwire.Conn) error {
	if w.rt.applied(w.idx) >= need {
		return nil
	}
	wt := &replayWaiter{need: need, ch: make(chan error, 1)}
	w.mu.Lock()
	w.waiters[wt] = struct{}{}
	if !w.running {
		w.running = true
		w.login = &pgwire.Conn{User: client.User, Database: client.Database, Params: client.Params}
		go w.poll()
	}
	w.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-wt.ch:
		return err
	case <-t.C:
	case <-ctx.Done():
	}
	w.mu.Lock()
	delete(w.waiters, wt)
	w.mu.Unlock()
	select {
	case err := <-wt.ch: // released meanwhile
		return err
	default:
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w (%s, router.read_wait)", errReplayBehind, limit)
}

// release answers every waiter that need no more than lsn (all of them
// when all is set), and all of them with err when err is set.
func (w *replayWatch) release(lsn uint64, all bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.releaseLocked(lsn, all, err)
}

func (w *replayWatch) releaseLocked(lsn uint64, all bool, err error) {
	for wt := range w.waiters {
		if err != nil || all || wt.need <= lsn {
			wt.ch <- err
			delete(w.waiters, wt)
		}
	}
}

// poll runs while sessions wait: one poll, the waiters it satisfies
// released, a pause, again.
func (w *replayWatch) poll() {
	for {
		w.mu.Lock()
		if len(w.waiters) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		login := w.login
		w.mu.Unlock()
		gen := w.rt.gen[w.idx].Load()
		lsn, recovering, err := w.position(login)
		if err != nil {
			if w.conn != nil {
				w.conn.Close(context.Background())
				w.conn = nil
			}
			w.rt.log.Debug("the replay watcher could not read a replica's position: its waiting reads go to the primary", "node", w.rt.cfg.Nodes[w.idx].Node, "err", err)
			w.mu.Lock()
			// Released and stopped at once: a session that comes after
			// starts a poller of its own, which dials again.
			w.releaseLocked(0, true, fmt.Errorf("the replay position of node %s: %w", w.rt.cfg.Nodes[w.idx].Node, err))
			w.running = false
			w.mu.Unlock()
			return
		}
		w.polls.Add(1)
		if w.rt.gen[w.idx].Load() == gen {
			// Not across a rewind or restart the router saw meanwhile.
			if !recovering {
				w.release(0, true, nil)
			} else {
				w.rt.noteApplied(w.idx, lsn)
				w.release(lsn, false, nil)
			}
		}
		time.Sleep(replayPollEvery)
	}
}

// position reads the replica's replay position on the watcher's
// connection, dialled as login's session would be.
func (w *replayWatch) position(login *pgwire.Conn) (uint64, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if w.conn == nil {
		cfg, err := upstreamConfig(w.rt.cfg.Nodes[w.idx], login, "")
		if err != nil {
			return 0, false, err
		}
		c, err := pgconn.ConnectConfig(ctx, cfg)
		if err != nil {
			return 0, false, err
		}
		if _, err := c.Prepare(ctx, "tandem_replay", replayPollQuery, nil); err != nil {
			c.Close(context.Background())
			return 0, false, err
		}
		w.conn = c
	}
	res := w.conn.ExecPrepared(ctx, "tandem_replay", nil, nil, nil).Read()
	if res.Err != nil {
		return 0, false, res.Err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 2 {
		return 0, false, fmt.Errorf("replay position: %d rows", len(res.Rows))
	}
	if string(res.Rows[0][0]) != "t" {
		return 0, false, nil
	}
	if res.Rows[0][1] == nil {
		return 0, true, nil // in recovery, nothing replayed yet
	}
	lsn, err := parseLSN(string(res.Rows[0][1]))
	return lsn, true, err
}
