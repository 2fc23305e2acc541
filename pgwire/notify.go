package pgwire

import (
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// LISTEN / NOTIFY for back ends that carry them themselves (the SQLite
// back end; PostgreSQL's own sessions relay PostgreSQL's messages). The
// back end keeps who listens to what and which notifications a
// transaction made; pgwire puts each one on its client's wire as
// PostgreSQL does: between transactions, before the ReadyForQuery that
// ends the request when the session has one to give, and at once to a
// session that is idle outside a transaction block (a session idle in a
// block gets them after the block ends).

// Notifier is a back-end session with LISTEN / NOTIFY. UseNotify gives it
// this session's process ID (the one a notification names as its sender)
// and the function that queues a notification for this session's client;
// the back end may call that function from any goroutine. RequestDone is
// called before each ReadyForQuery: the back end hands over, through the
// queue functions of the listening sessions, what its transactions
// committed since the last call.
type Notifier interface {
	UseNotify(pid uint32, queue func(channel, payload string, sender uint32))
	RequestDone()
}

// notifyQueue holds the notifications for one session's client.
type notifyQueue struct {
	mu       sync.Mutex
	q        []pgproto3.NotificationResponse
	waiting  bool // the session waits for its client's next message, idle outside a block
	woken    bool // a deadline was set to wake that wait
	overflow bool // some were dropped (logged once)
}

// maxQueuedNotifies bounds what waits for one client (a session in a long
// block, or a client that does not read its socket): past it the newest
// are dropped and the session's log says so, rather than the node's
// memory growing without end.
const maxQueuedNotifies = 1 << 16

// queueNotify is the function a Notifier calls for this session.
func (s *execSession) queueNotify(channel, payload string, sender uint32) {
	n := &s.notes
	n.mu.Lock()
	if len(n.q) >= maxQueuedNotifies {
		first := !n.overflow
		n.overflow = true
		n.mu.Unlock()
		if first {
			s.e.log().Warn("notifications dropped: the session's client has not taken the ones queued for it", "remote", s.c.RemoteAddr, "queued", maxQueuedNotifies)
		}
		return
	}
	n.q = append(n.q, pgproto3.NotificationResponse{PID: sender, Channel: channel, Payload: payload})
	wake := n.waiting && !n.woken
	if wake {
		n.woken = true
	}
	n.mu.Unlock()
	if wake {
		// Wake the wait for the client's next message (readMessage).
		_ = s.c.Conn.SetReadDeadline(time.Now())
	}
}

// appendNotifies puts the queued notifications on the session's output,
// when its transaction status lets them go (outside a block).
func (s *execSession) appendNotifies(tx byte) {
	if tx != 'I' {
		return
	}
	n := &s.notes
	n.mu.Lock()
	q := n.q
	n.q, n.overflow = nil, false
	n.mu.Unlock()
	for i := range q {
		s.c.Append(&q[i])
	}
}

// idleWait marks the session as waiting idle (outside a block) for its
// client, or as no longer waiting; it reports whether a wake-up had been
// asked for (its deadline must be cleared).
func (s *execSession) idleWait(waiting bool) (woken bool) {
	n := &s.notes
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waiting = waiting
	woken, n.woken = n.woken, false
	return woken
}

// hasNotifies reports whether notifications wait to be sent.
func (s *execSession) hasNotifies() bool {
	n := &s.notes
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.q) > 0
}
