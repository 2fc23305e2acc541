package pgwire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"syscall"
	"time"
)

// Accept backoff: a listener whose accept fails for a temporary reason
// (out of file descriptors, an aborted connection) waits MinAcceptBackoff,
// doubling up to MaxAcceptBackoff, and tries again, as PostgreSQL's
// postmaster and net/http do: the process never exits for it, and the
// sessions it already serves go on.
const (
	MinAcceptBackoff = 5 * time.Millisecond
	MaxAcceptBackoff = time.Second
)

// Acceptor accepts connections from a listener, riding out temporary
// errors (EMFILE, ENFILE, ECONNABORTED, ENOBUFS, ...) with a backoff and
// logging them at most once per second. One goroutine calls Accept.
type Acceptor struct {
	L    net.Listener
	Log  *slog.Logger
	Name string // the listener, for the log: "front door", "replication"

	lastLog    time.Time
	suppressed int
}

// Accept returns the next connection, or the listener's error when it is
// closed (or fails for a reason that is not temporary), or ctx's error.
func (a *Acceptor) Accept(ctx context.Context) (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := a.L.Accept()
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !TemporaryAcceptError(err) {
			return nil, err
		}
		if delay == 0 {
			delay = MinAcceptBackoff
		} else {
			delay = min(2*delay, MaxAcceptBackoff)
		}
		a.logThrottled(err, delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func (a *Acceptor) logThrottled(err error, delay time.Duration) {
	now := time.Now()
	if now.Sub(a.lastLog) < time.Second {
		a.suppressed++
		return
	}
	log := a.Log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("accept failed; retrying", "listener", a.Name, "err", err, "retry_in", delay, "suppressed", a.suppressed)
	a.lastLog, a.suppressed = now, 0
}

// TemporaryAcceptError reports whether an accept error is worth retrying:
// resource exhaustion and connections that died in the queue, not a closed
// listener.
func TemporaryAcceptError(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ECONNRESET,
		syscall.ENOBUFS, syscall.ENOMEM, syscall.EAGAIN, syscall.EINTR, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
