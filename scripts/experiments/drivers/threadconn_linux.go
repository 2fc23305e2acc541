package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// threadWaitSupported says whether WaitThread works on this system.
const threadWaitSupported = true

// waitSlice bounds one wait in the kernel: a deadline set while a client
// waits (pgx's context cancellation) takes effect within it. The Go
// runtime's own preemption signals interrupt a wait sooner (recvfrom(2) on
// a socket with SO_RCVTIMEO is never restarted after a signal).
const waitSlice = 5 * time.Millisecond

// threadConn (a copy of bench/threadwait_linux.go) is a client socket whose reads and writes wait in the kernel
// on the calling goroutine's own thread, as a JDBC thread blocked in
// recv(2) does, instead of parking the goroutine in the Go runtime's
// network poller. Its system calls are raw (the goroutine keeps its Go P
// while it waits), so a process using it needs more Ps than clients
// (RunOptions.Wait). Why: docs/benchmarks.md, "Waiting on the client's own
// thread".
type threadConn struct {
	fd     int
	la, ra net.Addr
	rd, wd atomic.Int64 // deadlines in Unix ns; 0: none
	// state counts the Read and Write calls in progress and carries
	// closedBit and releasedBit: the descriptor is closed by whichever of
	// Close and the last call in progress comes last, so that no call ever
	// uses a descriptor number the process has reused.
	state atomic.Int64
}

const (
	closedBit   = 1 << 61
	releasedBit = 1 << 62
)

// dialThreadWait dials as pgx does and hands the connection's socket to a
// threadConn (a duplicate of it, in blocking mode with a receive and send
// timeout of waitSlice, outside the network poller).
func dialThreadWait(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("dial %s %s: %T has no socket", network, addr, c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) { fd, dupErr = syscall.Dup(int(s)) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, os.NewSyscallError("dup", dupErr)
	}
	tc := &threadConn{fd: fd, la: c.LocalAddr(), ra: c.RemoteAddr()}
	syscall.CloseOnExec(fd)
	tv := syscall.NsecToTimeval(waitSlice.Nanoseconds())
	for _, err := range []error{
		syscall.SetNonblock(fd, false),
		syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv),
		syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv),
	} {
		if err != nil {
			syscall.Close(fd)
			return nil, os.NewSyscallError("setsockopt", err)
		}
	}
	return tc, nil
}

func (c *threadConn) acquire() bool {
	if c.state.Add(1)&closedBit != 0 {
		c.release()
		return false
	}
	return true
}

func (c *threadConn) release() {
	if c.state.Add(-1) == closedBit && c.state.CompareAndSwap(closedBit, closedBit|releasedBit) {
		syscall.Close(c.fd)
	}
}

func (c *threadConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.la.Network(), Source: c.la, Addr: c.ra, Err: err}
}

// waited handles a wait that ended without data (its slice ran out, or a
// signal came): it gives the Go scheduler its turn (a stop-the-world or a
// preemption is waiting for this goroutine) and says whether to go on.
func (c *threadConn) waited(op string, deadline *atomic.Int64) error {
	if c.state.Load()&closedBit != 0 {
		return c.opError(op, net.ErrClosed)
	}
	if d := deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
		return c.opError(op, os.ErrDeadlineExceeded)
	}
	runtime.Gosched()
	return nil
}

func (c *threadConn) Read(b []byte) (int, error) {
	if !c.acquire() {
		return 0, c.opError("read", net.ErrClosed)
	}
	defer c.release()
	if len(b) == 0 {
		return 0, nil
	}
	for {
		if d := c.rd.Load(); d != 0 && time.Now().UnixNano() >= d {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		switch e {
		case 0:
			if n == 0 {
				if c.state.Load()&closedBit != 0 {
					return 0, c.opError("read", net.ErrClosed)
				}
				return 0, io.EOF
			}
			return int(n), nil
		case syscall.EAGAIN, syscall.EINTR:
			if err := c.waited("read", &c.rd); err != nil {
				return 0, err
			}
		default:
			return 0, c.opError("read", os.NewSyscallError("recvfrom", e))
		}
	}
}

func (c *threadConn) Write(b []byte) (int, error) {
	if !c.acquire() {
		return 0, c.opError("write", net.ErrClosed)
	}
	defer c.release()
	done := 0
	for done < len(b) {
		if d := c.wd.Load(); d != 0 && time.Now().UnixNano() >= d {
			return done, c.opError("write", os.ErrDeadlineExceeded)
		}
		n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done), syscall.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			done += int(n)
		case syscall.EAGAIN, syscall.EINTR:
			if err := c.waited("write", &c.wd); err != nil {
				return done, err
			}
		default:
			return done, c.opError("write", os.NewSyscallError("sendto", e))
		}
	}
	return done, nil
}

// Close shuts the socket down, which wakes a Read or Write waiting on it,
// and closes the descriptor once none is in progress.
func (c *threadConn) Close() error {
	// Hold the descriptor while shutting it down: a call in progress that
	// ends meanwhile must not close it under us.
	if c.state.Add(1)&closedBit != 0 {
		c.release()
		return nil
	}
	for {
		s := c.state.Load()
		if s&closedBit != 0 {
			c.release()
			return nil
		}
		if c.state.CompareAndSwap(s, s|closedBit) {
			break
		}
	}
	err := syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	c.release()
	if err != nil && !errors.Is(err, syscall.ENOTCONN) {
		return c.opError("close", os.NewSyscallError("shutdown", err))
	}
	return nil
}

func (c *threadConn) LocalAddr() net.Addr  { return c.la }
func (c *threadConn) RemoteAddr() net.Addr { return c.ra }

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func (c *threadConn) SetDeadline(t time.Time) error {
	c.rd.Store(unixNano(t))
	c.wd.Store(unixNano(t))
	return nil
}

func (c *threadConn) SetReadDeadline(t time.Time) error {
	c.rd.Store(unixNano(t))
	return nil
}

func (c *threadConn) SetWriteDeadline(t time.Time) error {
	c.wd.Store(unixNano(t))
	return nil
}
