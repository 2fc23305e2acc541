package pgwire

import "time"

// TerminateUser is a BackendSession that may have to end its client's
// session from outside the session's own goroutine: multi-master ends a
// local transaction that holds up certified writesets, as PostgreSQL's hot
// standby ends a session that conflicts with recovery. The executor hands
// it a function that does so safely: the running statement, if any, is
// canceled, and the session ends with e as a FATAL error at its next read
// (at once when it is idle); closing the session rolls its transaction
// back.
type TerminateUser interface {
	UseTerminate(func(e *Error))
}

// terminate ends the session with e (TerminateUser).
func (s *execSession) terminate(e *Error) {
	if !s.killed.CompareAndSwap(nil, e) {
		return
	}
	s.e.log().Info("session ended", "reason", e.Message, "remote", s.c.RemoteAddr, "user", s.c.User)
	s.bs.Cancel()
	// Wake a wait for the client's next message (readMessage checks
	// killed after it sets its own deadline, so neither order loses it).
	_ = s.c.Conn.SetReadDeadline(time.Now())
}

// killedErr is the FATAL error of a terminated session, nil otherwise.
func (s *execSession) killedErr() error {
	if e := s.killed.Load(); e != nil {
		return &fatalError{e}
	}
	return nil
}

// copyReadErr is the error of a failed read of COPY data: the session's
// FATAL error when it was terminated (the read was woken by terminate's
// deadline, whose "i/o timeout" would hide the reason), else err as FATAL.
func (s *execSession) copyReadErr(err error) error {
	if kerr := s.killedErr(); kerr != nil {
		return kerr
	}
	return &fatalError{err}
}
