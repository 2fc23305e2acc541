package sqlpg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Advisory locks (pg_advisory_lock and its family), as PostgreSQL's: held
// by a session (until unlocked or the session ends) or by its transaction
// (until COMMIT or ROLLBACK), exclusive or shared, counted (taken twice,
// unlocked twice), keyed by one bigint or by two integers (two separate
// key spaces). Migration tools take one before they migrate (Rails,
// Prisma, golang-migrate, Flyway). The table of locks is the node's
// (AdvisoryLocks, one per database); a session's holds are its
// AdvisorySession, which the back end binds to the connection before each
// statement (UseSession). A wait ends with the statement (its context:
// cancel, statement_timeout); there is no deadlock detection.

// AdvisoryLocks is a database's table of advisory locks.
type AdvisoryLocks struct {
	mu      sync.Mutex
	held    map[advKey]map[*AdvisorySession]*advHolds
	changed chan struct{} // closed (and replaced) when a lock is released
}

type advKey struct {
	pair bool // two int4 keys (a, b) rather than one int8 (a)
	a, b int64
}

// advHolds are one session's holds of one key: exclusive and shared, at
// session and at transaction level.
type advHolds struct {
	ex, sh, xex, xsh int
}

func (h *advHolds) exclusive() bool { return h.ex+h.xex > 0 }
func (h *advHolds) shared() bool    { return h.sh+h.xsh > 0 }
func (h *advHolds) none() bool      { return h.ex+h.sh+h.xex+h.xsh == 0 }

// NewAdvisoryLocks returns an empty lock table.
func NewAdvisoryLocks() *AdvisoryLocks {
	return &AdvisoryLocks{held: map[advKey]map[*AdvisorySession]*advHolds{}, changed: make(chan struct{})}
}

// AdvisorySession is one session's side of the lock table.
type AdvisorySession struct {
	locks *AdvisoryLocks
	mu    sync.Mutex
	ctx   context.Context // the running statement's (waits end with it)
}

// Session returns a session's handle on the table.
func (l *AdvisoryLocks) Session() *AdvisorySession {
	return &AdvisorySession{locks: l, ctx: context.Background()}
}

// Bind makes ctx the context waits of the statement about to run end
// with; it returns s.
func (s *AdvisorySession) Bind(ctx context.Context) *AdvisorySession {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	return s
}

func (s *AdvisorySession) context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

// grantable reports whether s may take key in that mode now (the caller
// holds l.mu): no other session holds it exclusively, and for an
// exclusive lock no other session holds it at all.
func (l *AdvisoryLocks) grantable(s *AdvisorySession, k advKey, exclusive bool) bool {
	for other, h := range l.held[k] {
		if other == s {
			continue
		}
		if h.exclusive() || exclusive && h.shared() {
			return false
		}
	}
	return true
}

// errLockNotAvailable: a try_ lock's answer (false), not an error.
var errLockNotAvailable = errors.New("advisory lock not available")

// lock takes key for s, waiting when wait is set (else
// errLockNotAvailable).
func (l *AdvisoryLocks) lock(s *AdvisorySession, k advKey, exclusive, xact, wait bool) error {
	for {
		l.mu.Lock()
		if l.grantable(s, k, exclusive) {
			m := l.held[k]
			if m == nil {
				m = map[*AdvisorySession]*advHolds{}
				l.held[k] = m
			}
			h := m[s]
			if h == nil {
				h = &advHolds{}
				m[s] = h
			}
			switch {
			case exclusive && xact:
				h.xex++
			case exclusive:
				h.ex++
			case xact:
				h.xsh++
			default:
				h.sh++
			}
			l.mu.Unlock()
			return nil
		}
		changed := l.changed
		l.mu.Unlock()
		if !wait {
			return errLockNotAvailable
		}
		ctx := s.context()
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("[SQLSTATE 57014] canceling statement due to user request (waiting for an advisory lock): %w", ctx.Err())
		}
	}
}

// release drops holds of s chosen by drop (which changes h) and wakes
// the waiters; the caller holds l.mu.
func (l *AdvisoryLocks) releaseLocked(s *AdvisorySession, k advKey, drop func(h *advHolds)) {
	h := l.held[k][s]
	if h == nil {
		return
	}
	drop(h)
	if h.none() {
		delete(l.held[k], s)
		if len(l.held[k]) == 0 {
			delete(l.held, k)
		}
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// unlock drops one session-level hold of key: false if s had none.
func (l *AdvisoryLocks) unlock(s *AdvisorySession, k advKey, exclusive bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[k][s]
	if h == nil || exclusive && h.ex == 0 || !exclusive && h.sh == 0 {
		return false
	}
	l.releaseLocked(s, k, func(h *advHolds) {
		if exclusive {
			h.ex--
		} else {
			h.sh--
		}
	})
	return true
}

// EndTransaction releases the transaction-level locks of s (COMMIT,
// ROLLBACK, the end of a statement outside a transaction block).
func (s *AdvisorySession) EndTransaction() { s.release(false) }

// ReleaseAll releases every lock of s (the session ends).
func (s *AdvisorySession) ReleaseAll() { s.release(true) }

// UnlockAll releases the session-level locks of s
// (pg_advisory_unlock_all).
func (s *AdvisorySession) UnlockAll() {
	l := s.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, m := range l.held {
		if h := m[s]; h != nil && h.ex+h.sh > 0 {
			l.releaseLocked(s, k, func(h *advHolds) { h.ex, h.sh = 0, 0 })
		}
	}
}

func (s *AdvisorySession) release(all bool) {
	l := s.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, m := range l.held {
		h := m[s]
		if h == nil || !all && h.xex+h.xsh == 0 {
			continue
		}
		l.releaseLocked(s, k, func(h *advHolds) {
			h.xex, h.xsh = 0, 0
			if all {
				h.ex, h.sh = 0, 0
			}
		})
	}
}

func sessionAdvisory(c *sqlite3.SQLiteConn) (s *AdvisorySession) {
	withClock(c, func(k *clock) { s = k.adv })
	return s
}

// advisoryKey reads a function's key arguments: one bigint, or two
// integers.
func advisoryKey(name string, args []any) (advKey, error) {
	num := func(v any) (int64, bool) {
		switch x := v.(type) {
		case int64:
			return x, true
		case float64:
			if x == float64(int64(x)) {
				return int64(x), true
			}
		}
		return 0, false
	}
	switch len(args) {
	case 1:
		if a, ok := num(args[0]); ok {
			return advKey{a: a}, nil
		}
	case 2:
		a, ok1 := num(args[0])
		b, ok2 := num(args[1])
		if ok1 && ok2 && a == int64(int32(a)) && b == int64(int32(b)) {
			return advKey{pair: true, a: a, b: b}, nil
		}
	}
	return advKey{}, fmt.Errorf("[SQLSTATE 42883] function %s with %d arguments of these types does not exist (one bigint key, or two integer keys)", name, len(args))
}

// registerAdvisoryFunctions registers pg_advisory_lock and its family on
// c. The lock functions return ” (PostgreSQL's void prints empty).
func registerAdvisoryFunctions(c *sqlite3.SQLiteConn) error {
	session := func(name string) (*AdvisorySession, error) {
		s := sessionAdvisory(c)
		if s == nil {
			return nil, fmt.Errorf("[SQLSTATE 55000] %s: no client session on this connection", name)
		}
		return s, nil
	}
	// prepare reads a call's session and key; null is false when an
	// argument is NULL (the functions are strict, as PostgreSQL's).
	prepare := func(name string, args []any) (s *AdvisorySession, k advKey, null bool, err error) {
		for _, a := range args {
			if a == nil {
				return nil, k, true, nil
			}
		}
		if s, err = session(name); err == nil {
			k, err = advisoryKey(name, args)
		}
		return s, k, false, err
	}
	lockFn := func(name string, exclusive, xact, try bool) any {
		return func(args ...any) (any, error) {
			s, k, null, err := prepare(name, args)
			if null || err != nil {
				return nil, err
			}
			err = s.locks.lock(s, k, exclusive, xact, !try)
			switch {
			case try:
				if errors.Is(err, errLockNotAvailable) {
					return false, nil
				}
				return err == nil, err
			case err != nil:
				return nil, err
			}
			return "", nil
		}
	}
	unlockFn := func(name string, exclusive bool) any {
		return func(args ...any) (any, error) {
			s, k, null, err := prepare(name, args)
			if null || err != nil {
				return nil, err
			}
			return s.locks.unlock(s, k, exclusive), nil
		}
	}
	fns := []struct {
		name string
		fn   any
	}{
		{"pg_advisory_lock", lockFn("pg_advisory_lock", true, false, false)},
		{"pg_advisory_lock_shared", lockFn("pg_advisory_lock_shared", false, false, false)},
		{"pg_advisory_xact_lock", lockFn("pg_advisory_xact_lock", true, true, false)},
		{"pg_advisory_xact_lock_shared", lockFn("pg_advisory_xact_lock_shared", false, true, false)},
		{"pg_try_advisory_lock", lockFn("pg_try_advisory_lock", true, false, true)},
		{"pg_try_advisory_lock_shared", lockFn("pg_try_advisory_lock_shared", false, false, true)},
		{"pg_try_advisory_xact_lock", lockFn("pg_try_advisory_xact_lock", true, true, true)},
		{"pg_try_advisory_xact_lock_shared", lockFn("pg_try_advisory_xact_lock_shared", false, true, true)},
		{"pg_advisory_unlock", unlockFn("pg_advisory_unlock", true)},
		{"pg_advisory_unlock_shared", unlockFn("pg_advisory_unlock_shared", false)},
		// pg_sleep and its forms wait as long as the statement may: a
		// cancel or statement_timeout ends the wait (57014), as the
		// advisory locks' waits. The connection (and a write lock its
		// block holds) stays taken while it sleeps, as on PostgreSQL.
		{"pg_sleep", func(secs any) (any, error) {
			if secs == nil {
				return "", nil
			}
			x, ok := numeric(secs)
			if !ok {
				return nil, invalid("double precision", secs)
			}
			return sleepFor(session, "pg_sleep", time.Duration(x*float64(time.Second)))
		}},
		{"pg_sleep_for", func(iv any) (any, error) {
			if iv == nil {
				return "", nil
			}
			d, ok := parseInterval(fmt.Sprint(toText(iv)))
			if !ok {
				return nil, invalid("interval", iv)
			}
			return sleepFor(session, "pg_sleep_for", time.Duration(d.micros+(d.days+d.months*30)*usPerDay)*time.Microsecond)
		}},
		{"pg_sleep_until", func(ts any) (any, error) {
			if ts == nil {
				return "", nil
			}
			tm, ok := toTime(ts)
			if !ok {
				return nil, invalid("timestamp with time zone", ts)
			}
			return sleepFor(session, "pg_sleep_until", time.Until(tm))
		}},
		{"pg_advisory_unlock_all", func() (any, error) {
			s, err := session("pg_advisory_unlock_all")
			if err != nil {
				return nil, err
			}
			s.UnlockAll()
			return "", nil
		}},
	}
	for _, f := range fns {
		// Not deterministic: each call takes or releases a lock.
		if err := c.RegisterFunc(f.name, nullsAsNil(f.fn), false); err != nil {
			return fmt.Errorf("sqlpg: register %s: %w", f.name, err)
		}
	}
	return nil
}

// sleepFor waits d (pg_sleep) or until the running statement's context
// ends.
func sleepFor(session func(string) (*AdvisorySession, error), name string, d time.Duration) (any, error) {
	if d <= 0 {
		return "", nil
	}
	ctx := context.Background()
	if s, err := session(name); err == nil {
		ctx = s.context()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return "", nil
	case <-ctx.Done():
		return nil, fmt.Errorf("[SQLSTATE 57014] canceling statement due to user request (in %s): %w", name, ctx.Err())
	}
}
