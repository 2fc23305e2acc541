package sqlite

import (
	"sync"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
)

// LISTEN / NOTIFY among the sessions of one node, as PostgreSQL has them
// among the sessions of one server: a NOTIFY (or pg_notify) is sent when
// its transaction commits, once per distinct channel and payload, to
// every session that listens on the channel then, the notifying session
// included; a rolled back transaction sends nothing. pgwire puts them on
// each listener's wire (pgwire/notify.go). Not as PostgreSQL: LISTEN and
// UNLISTEN take effect at once, not at COMMIT; and a notification goes no
// further than its node (a standby's sessions do not get the primary's,
// and a session that a router moves to a new primary listens again only
// when it says LISTEN again).

// notification is one NOTIFY of a transaction.
type notification struct{ channel, payload string }

// listeners is who listens to what on this node.
type listeners struct {
	mu sync.Mutex
	on map[string]map[*Session]bool
}

func (l *listeners) listen(s *Session, channel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on == nil {
		l.on = map[string]map[*Session]bool{}
	}
	if l.on[channel] == nil {
		l.on[channel] = map[*Session]bool{}
	}
	l.on[channel][s] = true
}

// unlisten stops s listening on channel ("*": on every channel).
func (l *listeners) unlisten(s *Session, channel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch, set := range l.on {
		if channel == "*" || ch == channel {
			delete(set, s)
			if len(set) == 0 {
				delete(l.on, ch)
			}
		}
	}
}

// send hands each notification to the sessions listening on its channel.
func (l *listeners) send(notes []notification, sender uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range notes {
		for s := range l.on[n.channel] {
			if s.queueNotify != nil {
				s.queueNotify(n.channel, n.payload, sender)
			}
		}
	}
}

// UseNotify implements pgwire.Notifier.
func (s *Session) UseNotify(pid uint32, queue func(channel, payload string, sender uint32)) {
	s.pid, s.queueNotify = pid, queue
}

// RequestDone implements pgwire.Notifier: outside a block, what the
// session's transactions committed goes to the listeners.
func (s *Session) RequestDone() {
	if s.TxStatus() != 'I' {
		return
	}
	s.committed = append(s.committed, s.notes...) // statements that were their own transactions
	s.dropNotes()
	if len(s.committed) == 0 {
		return
	}
	notes := s.committed
	s.committed = nil
	s.db.listeners.send(notes, s.pid)
}

// addNote records a NOTIFY of the running transaction; a second one with
// the same channel and payload in the same transaction is dropped, as
// PostgreSQL drops it (noteSet: a transaction may notify many times).
func (s *Session) addNote(channel, payload string) error {
	if channel == "" {
		return pgwire.Errorf("22023", "channel name cannot be empty")
	}
	if len(channel) >= 64 {
		return pgwire.Errorf("22023", "channel name too long")
	}
	if len(payload) >= 8000 {
		return pgwire.Errorf("22023", "payload string too long")
	}
	n := notification{channel, payload}
	if s.noteSet == nil {
		s.noteSet = map[notification]bool{}
	}
	if !s.noteSet[n] {
		s.noteSet[n] = true
		s.notes = append(s.notes, n)
	}
	return nil
}

// endNotes ends the transaction's NOTIFYs: kept for the listeners when it
// committed, dropped when it rolled back.
func (s *Session) endNotes(committed bool) {
	if committed {
		s.committed = append(s.committed, s.notes...)
	}
	s.dropNotes()
}

// dropNotes forgets the running transaction's NOTIFYs.
func (s *Session) dropNotes() {
	s.notes, s.noteSet = nil, nil
}

// runNotify carries out LISTEN, UNLISTEN and NOTIFY.
func (s *Session) runNotify(n *sqlpg.Notify) (pgwire.Result, error) {
	switch n.Kind {
	case "LISTEN":
		s.db.listeners.listen(s, n.Channel)
	case "UNLISTEN":
		s.db.listeners.unlisten(s, n.Channel)
	case "NOTIFY":
		if err := s.addNote(n.Channel, n.Payload); err != nil {
			return nil, err
		}
	}
	return &cmdResult{tag: n.Kind}, nil
}

// notifyFunc is pg_notify(channel, payload) on connection c: a NOTIFY of
// the transaction of the session that holds c.
func notifyFunc(c *conn) func(channel, payload any) (any, error) {
	return func(channel, payload any) (any, error) {
		s := c.owner.Load()
		if s == nil {
			return nil, pgwire.Errorf("55000", "pg_notify is not available on this connection")
		}
		ch, _ := channel.(string)
		p, _ := payload.(string)
		if b, ok := payload.([]byte); ok {
			p = string(b)
		}
		return "", s.addNote(ch, p)
	}
}
