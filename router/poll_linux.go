//go:build linux

package router

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tandemdb/tandem/pgwire"
)

// The pass-through path on Linux: once a session is authenticated and its
// upstream connected, both sockets leave Go's netpoller and join one of a
// few epoll loops (level-triggered). A wake-up costs one read and one write,
// with no goroutine hand-off and no read that ends in EAGAIN; see DESIGN.md.

// pollLoops is the number of epoll loops (TANDEM_RELAY_LOOPS overrides).
// The default, GOMAXPROCS-1 (at least 1), leaves one P idle: while a P is
// idle the runtime's sysmon does not take Ps away from threads blocked in
// epoll_wait, and backs off instead of waking every 20 us. With one loop
// per P, sysmon churned: select-only through the relay fell from ~25k to
// ~19k tps on 2 cores (docs/benchmarks.md).
func pollLoops() int {
	if v, err := strconv.Atoi(os.Getenv("TANDEM_RELAY_LOOPS")); err == nil && v > 0 {
		return v
	}
	return max(1, runtime.GOMAXPROCS(0)-1)
}

// TANDEM_RELAY_POLL=off keeps every session on the two-goroutine relay.
var pollDisabled = os.Getenv("TANDEM_RELAY_POLL") == "off"

var (
	loopsOnce sync.Once
	loops     []*loop
	loopsErr  error
	loopNext  atomic.Uint32
	sessIDs   atomic.Uint32
)

const scratchSize = 64 << 10

type loop struct {
	epfd    int
	mu      sync.Mutex
	sess    map[int32]*psess
	split   map[int32]*splitLoop // routed sessions (splitloop_linux.go)
	scratch []byte
	events  []unix.EpollEvent
	errbuf  []byte
}

// direction is one way of a session: bytes read from src and not yet
// written to dst, and a streaming frame scanner.
type direction struct {
	src, dst *int
	pend     []byte // unsent bytes (only after a short write)
	hdr      [5]byte
	hn       int  // header bytes seen of the current frame
	need     int  // body bytes left of the current frame
	zNext    bool // the next body byte is a ReadyForQuery status
	fromCli  bool
	lastTyp  byte // type of the last frame begun
	// srcTLS / dstTLS: the TLS connection read from / written to, over
	// srcLC / the other direction's loopConn (looptls_linux.go); nil on
	// a clear-text side.
	srcTLS, dstTLS *tls.Conn
	srcLC          *loopConn
}

type psess struct {
	id       int32
	r        *relay
	cfd, ufd int
	cmask    uint32 // epoll interest registered per fd
	umask    uint32
	creg     bool
	ureg     bool
	c2u, u2c direction
	done     chan struct{}
	err      error
	ended    bool
	// ulc, clc: the loopConns under a TLS upstream and a TLS client
	// (looptls_linux.go); nil on a clear-text side.
	ulc, clc *loopConn
}

func startLoops() {
	n := pollLoops()
	for i := 0; i < n; i++ {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			loopsErr = fmt.Errorf("epoll_create1: %w", err)
			return
		}
		l := &loop{epfd: epfd, sess: make(map[int32]*psess), split: make(map[int32]*splitLoop), scratch: make([]byte, scratchSize), events: make([]unix.EpollEvent, 128)}
		loops = append(loops, l)
		go l.run()
	}
}

// rawFD takes a connection's socket out of Go's runtime: it duplicates the
// descriptor (the copy shares the non-blocking open file) and closes the
// original, which also removes it from the Go netpoller.
func rawFD(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	c.Close()
	return fd, nil
}

func pollable(c net.Conn) bool {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// servePoll runs the session on an epoll loop; ok is false when the
// session cannot (a non-socket connection, a TLS connection not made
// over a loopConn), and the caller relays it with goroutines instead. A
// TLS upstream (the router-to-node hop) and a TLS client (the front
// door's TLSTransport) made over loopConns run on the loop.
func (r *relay) servePoll(ctx context.Context) (ok bool, err error) {
	upConn, cliConn := r.conn, r.client.Conn
	utls, ulc, isTLS := tlsOverLoop(r.conn)
	if isTLS {
		upConn = ulc.Conn
	}
	ctls, clc, cliTLS := tlsOverLoop(r.client.Conn)
	if cliTLS {
		cliConn = clc.Conn
	}
	if pollDisabled || (r.client.TLS && !cliTLS) || !pollable(cliConn) || !pollable(upConn) || r.upFr.Buffered() > 0 {
		return false, nil
	}
	loopsOnce.Do(startLoops)
	if loopsErr != nil {
		return false, nil
	}
	cfd, err := rawFD(cliConn)
	if err != nil {
		return false, nil
	}
	ufd, err := rawFD(upConn)
	if err != nil {
		// The client descriptor already left Go; finish on it by hand.
		unix.Close(cfd)
		return true, fmt.Errorf("relay: %w", err)
	}
	r.polled.Store(true)
	r.countPath("epoll")
	l := loops[int(loopNext.Add(1))%len(loops)]
	s := &psess{id: int32(sessIDs.Add(1) & 0x7fffffff), r: r, cfd: cfd, ufd: ufd, done: make(chan struct{})}
	s.c2u = direction{src: &s.cfd, dst: &s.ufd, fromCli: true}
	s.u2c = direction{src: &s.ufd, dst: &s.cfd}
	l.mu.Lock()
	if isTLS {
		ulc.attach(ufd, &s.c2u.pend)
		s.ulc = ulc
		s.c2u.dstTLS, s.u2c.srcTLS, s.u2c.srcLC = utls, utls, ulc
	}
	if cliTLS {
		clc.attach(cfd, &s.u2c.pend)
		s.clc = clc
		s.u2c.dstTLS, s.c2u.srcTLS, s.c2u.srcLC = ctls, ctls, clc
	}
	// Bytes the client sent right after startup are already buffered.
	if b := r.client.TakeBuffered(); len(b) > 0 {
		l.forward(s, &s.c2u, b)
	}
	// crypto/tls may hold bytes read during startup.
	if cliTLS && !s.ended {
		l.pump(s, &s.c2u)
	}
	if isTLS && !s.ended {
		l.pump(s, &s.u2c)
	}
	if !s.ended {
		l.sess[s.id] = s
		l.register(s)
	}
	l.mu.Unlock()
	select {
	case <-s.done:
	case <-ctx.Done():
		l.mu.Lock()
		if !s.ended {
			l.end(s, nil)
		}
		l.mu.Unlock()
	}
	return true, s.err
}

func (l *loop) run() {
	for {
		n, err := unix.EpollWait(l.epfd, l.events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			panic(fmt.Sprintf("tandem relay: epoll_wait: %v", err))
		}
		l.mu.Lock()
		for i := 0; i < n; i++ {
			ev := &l.events[i]
			s := l.sess[ev.Fd]
			if s == nil {
				if sl := l.split[ev.Fd]; sl != nil && !sl.ended {
					sl.event(int(ev.Pad), ev.Events)
				}
				continue
			}
			if s.ended {
				continue
			}
			l.event(s, ev.Pad == 1, ev.Events)
		}
		l.mu.Unlock()
	}
}

// event handles readiness of the client (up=false) or upstream socket.
func (l *loop) event(s *psess, up bool, ev uint32) {
	in, out := &s.c2u, &s.u2c // in: read from this fd; out: written to it
	if up {
		in, out = &s.u2c, &s.c2u
	}
	if ev&unix.EPOLLOUT != 0 && len(out.pend) > 0 {
		if !l.flush(s, out) {
			return
		}
		if out.srcTLS != nil && len(out.pend) == 0 {
			// This side took what waited: pass on what crypto/tls
			// still holds of the other side's records (epoll does not
			// report it).
			l.pump(s, out)
			if s.ended {
				return
			}
		}
	}
	if ev&(unix.EPOLLHUP|unix.EPOLLERR) != 0 && len(in.pend) > 0 {
		// It hung up while what it sent still waits: nothing more can
		// be done for the session.
		l.srcGone(s, in, nil)
		return
	}
	if ev&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 && len(in.pend) == 0 && in.srcTLS != nil {
		in.srcLC.readable = true
		l.pump(s, in)
	} else if ev&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 && len(in.pend) == 0 {
		n, err := rawRead(*in.src, l.scratch)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
		case n == 0 || err != nil:
			l.srcGone(s, in, err)
			return
		default:
			l.forward(s, in, l.scratch[:n])
		}
	}
	if !s.ended {
		l.register(s)
	}
}

// forward scans b for frame boundaries and writes it on.
func (l *loop) forward(s *psess, d *direction, b []byte) {
	n, perr := d.scan(b, s.r)
	if n > 0 && d.dstTLS != nil {
		// Sealed into records; what the socket does not take waits in
		// d.pend (loopConn.Write).
		if _, err := d.dstTLS.Write(b[:n]); err != nil {
			l.dstGone(s, d, err)
			return
		}
	} else if n > 0 {
		w, err := writeAll(*d.dst, b[:n])
		if err != nil {
			l.dstGone(s, d, err)
			return
		}
		if w < n {
			d.pend = append(d.pend, b[w:n]...)
		}
	}
	if perr != nil {
		l.fatal(s, &pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation, Message: "tandem: " + perr.Error()})
		l.end(s, perr)
	}
}

// flush writes pending bytes of d; false when the session ended.
func (l *loop) flush(s *psess, d *direction) bool {
	w, err := writeAll(*d.dst, d.pend)
	if err != nil {
		l.dstGone(s, d, err)
		return false
	}
	if w == len(d.pend) {
		if cap(d.pend) > 1<<20 {
			d.pend = nil
		} else {
			d.pend = d.pend[:0]
		}
	} else {
		d.pend = d.pend[:copy(d.pend, d.pend[w:])]
	}
	return true
}

// srcGone: the side d reads from closed or failed.
func (l *loop) srcGone(s *psess, d *direction, err error) {
	if d.fromCli || s.r.closing.Load() {
		if d.fromCli && !s.r.closing.Load() {
			// The client vanished without Terminate: stop what it may
			// have left running (the server notices a closed socket only
			// when it next writes).
			go s.r.Cancel()
		}
		l.end(s, nil) // the client left (or the server closed after Terminate)
		return
	}
	l.upstreamLost(s, err)
}

// dstGone: writing to d's destination failed.
func (l *loop) dstGone(s *psess, d *direction, err error) {
	if d.fromCli && !s.r.closing.Load() {
		l.upstreamLost(s, err)
		return
	}
	l.end(s, nil)
}

func (l *loop) upstreamLost(s *psess, err error) {
	r := s.r
	if err == nil {
		err = errors.New("connection closed by the node")
	}
	r.log.Info("a session's connection to its node ended", "node", r.up.Node, "addr", r.up.Addr, "err", err)
	if r.onLost != nil {
		r.onLost(r.up.Node, err)
	}
	if d := &s.u2c; d.lastTyp == 'E' && d.need == 0 && d.hn == 0 {
		// The server's last word was a whole ErrorResponse with no
		// ReadyForQuery after it: a FATAL (message_read_timeout,
		// pg_terminate_backend), which the client has. A second one
		// from tandem would only blur why the session ended.
		l.end(s, fmt.Errorf("%w: %v", ErrUpstreamDown, err))
		return
	}
	l.fatal(s, lostError(r.up.Node))
	l.end(s, fmt.Errorf("%w: %v", ErrUpstreamDown, err))
}

// fatal sends an error of tandem's own to the client, after whatever the
// client is still owed (best effort: the session ends next).
func (l *loop) fatal(s *psess, e *pgwire.Error) {
	b, err := pgwire.ToErrorResponse(e).Encode(l.errbuf[:0])
	if err != nil {
		return
	}
	l.errbuf = b
	if len(s.u2c.pend) > 0 {
		w, _ := writeAll(s.cfd, s.u2c.pend)
		s.u2c.pend = s.u2c.pend[w:]
		if len(s.u2c.pend) > 0 {
			return // the client takes nothing more now
		}
	}
	if s.u2c.dstTLS != nil {
		_, _ = s.u2c.dstTLS.Write(b) // sealed, then written (loopConn.Write)
		return
	}
	_, _ = writeAll(s.cfd, b)
}

// end closes both sockets: the upstream first, so the back end rolls back
// an open transaction and frees its locks.
func (l *loop) end(s *psess, err error) {
	if s.ended {
		return
	}
	s.ended = true
	s.err = err
	delete(l.sess, s.id)
	// The descriptors' numbers may be reused once closed.
	if s.ulc != nil {
		s.ulc.closed = true
	}
	if s.clc != nil {
		s.clc.closed = true
	}
	unix.Close(s.ufd)
	unix.Close(s.cfd)
	s.c2u.pend, s.u2c.pend = nil, nil
	close(s.done)
}

// register brings the epoll interest of both sockets up to date: read a
// side only while what it sent has been written on; watch for writability
// only while bytes wait.
func (l *loop) register(s *psess) {
	var cm, um uint32
	if len(s.c2u.pend) == 0 {
		cm |= unix.EPOLLIN
	} else {
		um |= unix.EPOLLOUT
	}
	if len(s.u2c.pend) == 0 {
		um |= unix.EPOLLIN
	} else {
		cm |= unix.EPOLLOUT
	}
	l.setMask(s, s.cfd, &s.creg, &s.cmask, cm, 0)
	if !s.ended {
		l.setMask(s, s.ufd, &s.ureg, &s.umask, um, 1)
	}
}

// setMask registers fd or changes its interest (a mask of 0 still reports
// hang-ups and errors).
func (l *loop) setMask(s *psess, fd int, reg *bool, cur *uint32, want uint32, side int32) {
	if *reg && *cur == want {
		return
	}
	op := unix.EPOLL_CTL_MOD
	if !*reg {
		op = unix.EPOLL_CTL_ADD
	}
	ev := unix.EpollEvent{Events: want, Fd: s.id, Pad: side}
	if err := unix.EpollCtl(l.epfd, op, fd, &ev); err != nil {
		l.end(s, fmt.Errorf("relay: epoll_ctl: %w", err))
		return
	}
	*reg, *cur = true, want
}

// scan walks the frames in b (which continues the stream after earlier
// chunks). From the client it checks message types and sizes and notes a
// Terminate; from the upstream it tracks the ReadyForQuery status. It
// returns how many bytes may be forwarded, and the protocol error at that
// point, if any.
func (d *direction) scan(b []byte, r *relay) (int, error) {
	i := 0
	for i < len(b) {
		if d.need > 0 {
			if d.zNext {
				r.txStatus.Store(uint32(b[i]))
				d.zNext = false
			}
			k := min(d.need, len(b)-i)
			i += k
			d.need -= k
			continue
		}
		start := i - d.hn
		k := min(5-d.hn, len(b)-i)
		copy(d.hdr[d.hn:], b[i:i+k])
		d.hn += k
		i += k
		if d.hn < 5 {
			break
		}
		d.hn = 0
		typ := d.hdr[0]
		d.lastTyp = typ
		l := int(binary.BigEndian.Uint32(d.hdr[1:]))
		if l < 4 {
			return max(start, 0), fmt.Errorf("%w: length %d of message %q", pgwire.ErrMalformed, l, typ)
		}
		if d.fromCli {
			if !frontendTypes[typ] {
				return max(start, 0), fmt.Errorf("%w: invalid frontend message type %d", pgwire.ErrMalformed, typ)
			}
			if l-4 > r.maxMsg {
				return max(start, 0), fmt.Errorf("%w: message %q of %d bytes (limit %d)", pgwire.ErrMessageTooLarge, typ, l-4, r.maxMsg)
			}
			if typ == 'X' {
				// The server closes after Terminate: that EOF ends the
				// session, it is not a failed node.
				r.closing.Store(true)
			}
		} else if typ == 'Z' && l == 5 {
			d.zNext = true
		}
		d.need = l - 4
	}
	return len(b), nil
}

func rawRead(fd int, b []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafePtr(b)), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// writeAll writes until done or the socket is full (then it returns how
// much went, and no error).
func writeAll(fd int, b []byte) (int, error) {
	w := 0
	for w < len(b) {
		n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafePtr(b[w:])), uintptr(len(b)-w))
		if e != 0 {
			if e == unix.EAGAIN {
				return w, nil
			}
			if e == unix.EINTR {
				continue
			}
			return w, e
		}
		w += int(n)
	}
	return w, nil
}

func unsafePtr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
