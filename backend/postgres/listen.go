package postgres

import "context"

// A session that said LISTEN gets the server's notifications while it is
// idle, as from PostgreSQL itself: PostgreSQL sends them on the session's
// connection whenever they come, but pgconn reads that connection only
// while a call runs. So after each request (RequestDone) a listening
// session outside a block hands its connection to a watcher goroutine,
// which waits in WaitForNotification (each notification reaches the
// client through OnNotification and pgwire's queue, at once) and holds
// use meanwhile, as a call from the client would: the multi-master
// applier, which only ever aborts a session in a transaction, finds it
// busy and leaves it alone. Every call from the client stops the watcher
// first (lockUse). Stopping cancels the wait, which pgconn turns into a
// read deadline: a timeout leaves the connection usable, a message half
// read included (pgproto3 resumes it).

// idleWatch is a running watcher.
type idleWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// lockUse takes use for a call from the client, stopping the watcher.
func (s *Session) lockUse() {
	s.stopWatch()
	s.use.Lock()
}

// watchIdle starts the watcher when the session listens and idles outside
// a block (a block's notifications wait for its end in PostgreSQL too).
func (s *Session) watchIdle() {
	if !s.listens || s.inTx || s.pending != "" || s.c == nil || s.c.IsClosed() {
		return
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watch != nil {
		return
	}
	s.use.Lock()
	ctx, cancel := context.WithCancel(context.Background())
	w := &idleWatch{cancel: cancel, done: make(chan struct{})}
	s.watch = w
	go func() {
		defer close(w.done)
		defer s.use.Unlock()
		for ctx.Err() == nil {
			if err := s.c.WaitForNotification(ctx); err != nil {
				// Stopped, or the connection ended: the client's next
				// call finds out which.
				return
			}
		}
	}()
}

// stopWatch stops the watcher, if one runs, and waits until it let go of
// the connection.
func (s *Session) stopWatch() {
	s.watchMu.Lock()
	w := s.watch
	s.watch = nil
	s.watchMu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// watching reports whether a watcher holds the connection now.
func (s *Session) watching() bool {
	s.watchMu.Lock()
	w := s.watch
	s.watchMu.Unlock()
	if w == nil {
		return false
	}
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}
