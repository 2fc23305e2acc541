package pgwire

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Keepalive is TCP keepalive on client sockets (PostgreSQL's
// tcp_keepalives_idle, _interval, _count). Zero fields take the defaults
// below (Go's, which tandem has always used).
type Keepalive struct {
	Idle, Interval time.Duration
	Count          int
}

// Keepalive defaults for zero fields.
const (
	DefaultKeepaliveIdle     = 15 * time.Second
	DefaultKeepaliveInterval = 15 * time.Second
	DefaultKeepaliveCount    = 9
)

// effective fills zero fields with the defaults.
func (k Keepalive) effective() Keepalive {
	if k.Idle <= 0 {
		k.Idle = DefaultKeepaliveIdle
	}
	if k.Interval <= 0 {
		k.Interval = DefaultKeepaliveInterval
	}
	if k.Count <= 0 {
		k.Count = DefaultKeepaliveCount
	}
	return k
}

// apply sets keepalive on a client socket (TLS or not); other sockets
// (Unix, in-memory pipes) are left alone.
func (k Keepalive) apply(nc net.Conn) error {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	tcp, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	e := k.effective()
	return tcp.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: e.Idle, Interval: e.Interval, Count: e.Count})
}

// Sentinel errors for sessions ended by a timeout (errors.Is).
var (
	ErrIdleInTransaction = errors.New("idle-in-transaction timeout")
	ErrIdleSession       = errors.New("idle-session timeout")
	ErrMessageTimeout    = errors.New("message read timeout")
)

// timeoutSetting: the settings tandem keeps and enforces itself on every
// executing back end, with their unit when none is written.
var timeoutSetting = map[string]time.Duration{
	"idle_in_transaction_session_timeout": time.Millisecond,
	"idle_session_timeout":                time.Millisecond,
	"tcp_keepalives_idle":                 time.Second,
	"tcp_keepalives_interval":             time.Second,
}

// tandemSetting reports whether SHOW name is answered by tandem even on a
// back end that answers SHOW itself.
func tandemSetting(name string) bool {
	_, ok := timeoutSetting[name]
	return ok || name == "tcp_keepalives_count" || name == NodeSetting || name == AppliedGSNSetting ||
		name == "tandem.route" || name == "tandem.read_consistency"
}

// normalizeSetting checks a SET of one of tandem's time settings and
// returns the value as SHOW prints it; other settings pass unchanged.
func normalizeSetting(name, val string) (string, error) {
	if unit, ok := timeoutSetting[name]; ok {
		d, err := parseTime(name, val, unit)
		if err != nil {
			return "", err
		}
		return FormatTimeout(d), nil
	}
	switch name {
	case "timezone":
		_, canon, err := LoadZone(val)
		if err != nil {
			return "", err
		}
		return canon, nil
	case "statement_timeout":
		d, err := ParseTimeout(name, val)
		if err != nil {
			return "", err
		}
		return FormatTimeout(d), nil
	case "tcp_keepalives_count":
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 0 || n > 127 {
			return "", Errorf("22023", "invalid value for parameter %q: %q", name, val)
		}
		return strconv.Itoa(n), nil
	}
	return val, nil
}

// parseTime is ParseTimeout with the setting's own unit for bare numbers
// (PostgreSQL's tcp_keepalives_* count seconds).
func parseTime(name, val string, unit time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(strings.Trim(strings.TrimSpace(val), `'"`))
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(unit)), nil
	}
	return ParseTimeout(name, v)
}

// sessionTime is a session's value of a time setting: SET, else def.
func (s *execSession) sessionTime(name string, def time.Duration) time.Duration {
	if v, ok := s.setting(name); ok {
		d, _ := parseTime(name, v, timeoutSetting[name]) // checked at SET
		return d
	}
	return def
}

// keepalive is the session's keepalive settings.
func (s *execSession) keepalive() Keepalive {
	k := Keepalive{
		Idle:     s.sessionTime("tcp_keepalives_idle", s.e.Keepalive.Idle),
		Interval: s.sessionTime("tcp_keepalives_interval", s.e.Keepalive.Interval),
		Count:    s.e.Keepalive.Count,
	}
	if v, ok := s.setting("tcp_keepalives_count"); ok {
		k.Count, _ = strconv.Atoi(v)
	}
	return k.effective()
}

// showTandemSetting answers SHOW for tandem's own settings.
func (s *execSession) showTandemSetting(name string) (string, bool) {
	if v, ok := s.showPosition(name); ok {
		return v, true
	}
	switch name {
	case "idle_in_transaction_session_timeout":
		return FormatTimeout(s.sessionTime(name, s.e.IdleInTransactionTimeout)), true
	case "idle_session_timeout":
		return FormatTimeout(s.sessionTime(name, s.e.IdleSessionTimeout)), true
	case "tcp_keepalives_idle":
		return FormatTimeout(s.keepalive().Idle), true
	case "tcp_keepalives_interval":
		return FormatTimeout(s.keepalive().Interval), true
	case "tcp_keepalives_count":
		return strconv.Itoa(s.keepalive().Count), true
	}
	return "", false
}

// applyKeepalive puts the session's keepalive settings on its socket.
func (s *execSession) applyKeepalive() {
	if err := s.keepalive().apply(s.c.Conn); err != nil {
		s.e.log().Debug("cannot set TCP keepalive", "remote", s.c.RemoteAddr, "err", err)
	}
}

// readMessage reads the next frame under the session's deadlines: while
// the session waits for a message after ReadyForQuery, idle_in_transaction_
// session_timeout (in a transaction block) or idle_session_timeout
// (outside one); once a message has begun, message_read_timeout until it
// is whole. A session past one gets a FATAL error and ends; its
// transaction rolls back when the session closes.
func (s *execSession) readMessage() (byte, []byte, error) {
	c := s.c
	deadline := false
	defer func() {
		if deadline {
			_ = c.Conn.SetReadDeadline(time.Time{})
		}
	}()
	if !s.inBatch {
		// The last batch is done (a Query, a Sync): its large messages
		// are no longer in use. Within an extended-protocol batch a
		// Bind's values are in use until its Execute has run.
		c.ReleaseMemory()
	}
	for c.Buffered() == 0 {
		// Idle outside a transaction block, a session gets the
		// notifications it was sent at once (notify.go): a wait for the
		// client is woken for them and resumed after.
		listen := s.notifier != nil && !s.inBatch && s.txStatus() == 'I'
		if listen {
			if s.idleWait(true) {
				_ = c.Conn.SetReadDeadline(time.Time{})
			}
			// Still marked waiting: one queued from here on wakes the
			// wait below at once.
			s.appendNotifies('I')
		}
		if err := c.Flush(); err != nil {
			if listen {
				s.idleWait(false)
			}
			return 0, nil, err
		}
		if listen && s.hasNotifies() {
			continue
		}
		var idle time.Duration
		var code, msg string
		var sentinel error
		if !s.inBatch {
			if s.txStatus() != 'I' {
				idle, code, msg, sentinel = s.sessionTime("idle_in_transaction_session_timeout", s.e.IdleInTransactionTimeout),
					CodeIdleInTxTimeout, "terminating connection due to idle-in-transaction timeout", ErrIdleInTransaction
			} else {
				idle, code, msg, sentinel = s.sessionTime("idle_session_timeout", s.e.IdleSessionTimeout),
					CodeIdleSessionTimeout, "terminating connection due to idle-session timeout", ErrIdleSession
			}
		}
		if idle > 0 {
			_ = c.Conn.SetReadDeadline(time.Now().Add(idle))
			deadline = true
		}
		if err := s.killedErr(); err != nil {
			if listen {
				s.idleWait(false)
			}
			return 0, nil, err
		}
		err := c.WaitInput()
		if listen && s.idleWait(false) {
			// A notification woke the wait (or came while it ended):
			// its deadline goes; the idle timeout starts again.
			_ = c.Conn.SetReadDeadline(time.Time{})
			deadline = false
			if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && s.killedErr() == nil {
				continue
			}
		}
		if err != nil {
			if kerr := s.killedErr(); kerr != nil {
				return 0, nil, kerr
			}
			if idle > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				s.e.log().Info("session ended", "reason", sentinel.Error(), "remote", c.RemoteAddr, "user", c.User, "timeout", idle)
				e := Errorf(code, "%s", msg)
				e.Err = sentinel
				return 0, nil, &fatalError{e}
			}
			return 0, nil, err
		}
		break
	}
	if !c.FrameBuffered() {
		if rd := s.e.MessageReadTimeout; rd > 0 {
			_ = c.Conn.SetReadDeadline(time.Now().Add(rd))
			deadline = true
		} else if deadline {
			_ = c.Conn.SetReadDeadline(time.Time{})
			deadline = false
		}
	}
	typ, frame, err := c.ReadFrame()
	// A session terminated while it waited never runs what it read, also
	// when the read returned the client's next message rather than
	// terminate's deadline (seen under load: the statement after
	// pg_terminate_backend ran and the one after it got the FATAL).
	if kerr := s.killedErr(); kerr != nil {
		return 0, nil, kerr
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		s.e.log().Info("session ended", "reason", ErrMessageTimeout.Error(), "remote", c.RemoteAddr, "user", c.User, "timeout", s.e.MessageReadTimeout)
		e := Errorf(CodeProtocolViolation, "terminating connection: a message was begun and not finished within message_read_timeout (%s)", FormatTimeout(s.e.MessageReadTimeout))
		e.Err = fmt.Errorf("%w: %w", ErrMessageTimeout, err)
		return 0, nil, &fatalError{e}
	}
	return typ, frame, err
}
