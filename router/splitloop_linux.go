//go:build linux

package router

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tandemdb/tandem/pgwire"
)

// Routed sessions on the epoll loops (DESIGN.md, "Routed sessions on the
// loops"). Profiling pgbench -S through transaction routing put the
// router's extra CPU against the plain hop in Go's scheduler: each
// request woke the session's client goroutine and each answer its node
// reader, through the netpoller. Here a routed session's client socket
// and node sockets join one epoll loop, and the loop's goroutine runs
// the session's own code: the client's messages (clientMsg: gathering,
// classifying, routing, sending) and the nodes' answers (nodeFrame), over
// the same Framers, now reading and writing the raw descriptors without
// blocking (loopConn). What could block — dialing a node, waiting for a
// replica to catch up, asking the primary its position, waiting for
// answers in flight — runs on a helper goroutine instead (the same code
// as on the goroutine relay), while the loop reads nothing more from
// that client and goes on relaying the nodes' answers; the helper gives
// the session back to the loop when the request is sent.

// clientHigh: with this many bytes waiting for the client, the loop
// reads no more answers from the session's nodes (back-pressure).
const clientHigh = 256 << 10

// splitLoop is a routed session's place on an epoll loop. Its fields are
// the loop's (under l.mu), except where noted.
type splitLoop struct {
	l    *loop
	id   int32
	s    *splitSession
	cfd  int
	clc  *loopConn
	ctls bool // the client speaks TLS (over clc; the Framer reads through it)
	// held: the client's messages stopped for a node's full socket (a
	// TLS client's may wait in crypto/tls, where nothing reports them)
	held  bool
	cmu   sync.Mutex // guards cpend (clc.mu)
	cpend []byte
	creg  bool
	cmask uint32
	nodes []*loopNode // by node index
	// busy: a helper goroutine runs the client side; inline: the loop's
	// goroutine does (both under l.mu; inline is read by addNode).
	busy, inline bool
	cgone        bool // the client hung up while busy
	ending       bool // end once the helper returns
	ended        bool
	err          error
	done         chan struct{}
	// a client message begun and not finished (message_read_timeout)
	partial time.Time
	timer   *time.Timer
}

// loopNode is one of the session's node connections on the loop.
type loopNode struct {
	nc   *nodeConn
	fd   int
	lc   *loopConn
	mu   sync.Mutex // guards pend (lc.mu)
	pend []byte
	reg  bool
	mask uint32
}

// lockedWrite is Write for a routed session's connection (c.mu set).
func (c *loopConn) lockedWrite(b []byte) (int, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, net.ErrClosed
	}
	if len(*c.pend) > 0 {
		*c.pend = append(*c.pend, b...)
	} else {
		w, err := writeAll(c.fd, b)
		if err != nil {
			c.mu.Unlock()
			return w, err
		}
		if w < len(b) {
			*c.pend = append(*c.pend, b[w:]...)
		}
	}
	wait := c.block && len(*c.pend) > 0
	c.mu.Unlock()
	if wait {
		return len(b), c.drain()
	}
	return len(b), nil
}

// drain writes the pending bytes, waiting for the socket to take them
// (a helper goroutine's write to a node: the loop is not told, and while
// the helper runs the loop leaves the node's pending bytes to it).
func (c *loopConn) drain() error {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return net.ErrClosed
		}
		if err := flushPend(c.fd, c.pend); err != nil {
			c.mu.Unlock()
			return err
		}
		left, fd := len(*c.pend), c.fd
		c.mu.Unlock()
		if left == 0 {
			return nil
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		if _, err := unix.Poll(fds, 1000); err != nil && err != unix.EINTR {
			return err
		}
	}
}

// flushPend writes what the socket takes of *pend and keeps the rest.
func flushPend(fd int, pend *[]byte) error {
	if len(*pend) == 0 {
		return nil
	}
	w, err := writeAll(fd, *pend)
	if err != nil {
		return err
	}
	if w == len(*pend) && cap(*pend) > 1<<20 {
		*pend = nil
		return nil
	}
	*pend = (*pend)[:copy(*pend, (*pend)[w:])]
	return nil
}

// nodePollable reports whether a node connection can join a loop.
func nodePollable(nc *nodeConn) bool {
	if _, _, ok := tlsOverLoop(nc.conn); ok {
		return true
	}
	return pollable(nc.conn) && nc.fr.Buffered() == 0
}

// serveLoop runs the session on an epoll loop until it ends; ok is false
// when it cannot (a connection that is not a socket, a TLS client not
// made over a loopConn, TANDEM_RELAY_POLL=off), and the caller runs it
// on goroutines.
func (s *splitSession) serveLoop(ctx context.Context) (ok bool, err error) {
	cliConn := s.client.Conn
	_, clc, cliTLS := tlsOverLoop(s.client.Conn)
	if cliTLS {
		cliConn = clc.Conn
	}
	if pollDisabled || (s.client.TLS && !cliTLS) || !pollable(cliConn) {
		return false, nil
	}
	for _, nc := range s.conns {
		if nc != nil && !nodePollable(nc) {
			return false, nil
		}
	}
	loopsOnce.Do(startLoops)
	if loopsErr != nil {
		return false, nil
	}
	cfd, err := rawFD(cliConn)
	if err != nil {
		return false, nil
	}
	l := loops[int(loopNext.Add(1))%len(loops)]
	sl := &splitLoop{l: l, id: int32(sessIDs.Add(1) & 0x7fffffff), s: s, cfd: cfd,
		nodes: make([]*loopNode, len(s.conns)), done: make(chan struct{}), ctls: cliTLS}
	if cliTLS {
		// The Framer already reads and writes through the TLS
		// connection; only the transport under it changes.
		clc.mu = &sl.cmu
		sl.clc = clc
	} else {
		sl.clc = &loopConn{Conn: s.client.Conn, mu: &sl.cmu}
		s.client.Framer.SetReader(sl.clc)
		s.client.Framer.SetWriter(sl.clc)
	}
	sl.clc.attach(cfd, &sl.cpend)
	l.mu.Lock()
	s.lp = sl
	s.loopRef.Store(sl)
	s.polled.Store(true)
	s.rt.paths.WithLabelValues("epoll").Inc()
	l.split[sl.id] = sl
	for _, nc := range s.conns {
		if nc == nil {
			continue
		}
		if err := sl.attachNode(nc); err != nil {
			sl.finish(fmt.Errorf("relay: %w", err))
			break
		}
	}
	if !sl.ended {
		sl.clientStep() // what the client sent right after startup
	}
	if !sl.ended {
		sl.register()
	}
	l.mu.Unlock()
	select {
	case <-sl.done:
	case <-ctx.Done():
		l.mu.Lock()
		if sl.busy {
			sl.ending = true
		} else {
			sl.finish(nil)
		}
		l.mu.Unlock()
		<-sl.done
	}
	// Close the nodes first (a back end rolls back what was open), then
	// the client, after what it is still owed (best effort).
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	l.mu.Lock()
	for _, ln := range sl.nodes {
		if ln != nil {
			sl.closeNode(ln, net.ErrClosed)
		}
	}
	if sl.timer != nil {
		sl.timer.Stop()
	}
	sl.cmu.Lock()
	_ = flushPend(cfd, &sl.cpend)
	sl.cpend = nil
	sl.clc.closed = true
	sl.cmu.Unlock()
	if sl.creg {
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, cfd, nil)
	}
	unix.Close(cfd)
	l.mu.Unlock()
	return true, sl.err
}

// attachNode moves a node connection onto the loop (under l.mu).
func (sl *splitLoop) attachNode(nc *nodeConn) error {
	ln := &loopNode{nc: nc, fd: -1}
	tc, lc, isTLS := tlsOverLoop(nc.conn)
	upConn := nc.conn
	if isTLS {
		upConn = lc.Conn
	} else {
		lc = &loopConn{Conn: nc.conn}
	}
	fd, err := rawFD(upConn)
	if err != nil {
		return err
	}
	lc.mu = &ln.mu
	lc.attach(fd, &ln.pend)
	lc.block = sl.busy
	if !isTLS {
		nc.fr.SetReader(lc)
		nc.fr.SetWriter(lc)
		nc.conn = lc
	} else {
		nc.conn = tc
	}
	ln.fd, ln.lc = fd, lc
	sl.nodes[nc.idx] = ln
	sl.setMask(fd, &ln.reg, &ln.mask, unix.EPOLLIN, int32(nc.idx+1))
	if !sl.ended {
		sl.nodeStep(ln) // crypto/tls may hold bytes read during startup
	}
	return nil
}

// addNode puts a connection the session opened on the loop (startNode).
func (sl *splitLoop) addNode(s *splitSession, nc *nodeConn) error {
	if !sl.inline {
		sl.l.mu.Lock()
		defer sl.l.mu.Unlock()
	}
	if sl.ended {
		return errors.New("relay: the session ended")
	}
	if !nodePollable(nc) {
		return errors.New("relay: a node connection that cannot join the loop")
	}
	return sl.attachNode(nc)
}

// event handles readiness of the client (side 0) or of node side-1.
func (sl *splitLoop) event(side int, ev uint32) {
	if side == 0 {
		if ev&unix.EPOLLOUT != 0 {
			sl.cmu.Lock()
			err := flushPend(sl.cfd, &sl.cpend)
			left := len(sl.cpend)
			sl.cmu.Unlock()
			if err != nil {
				sl.clientGone(err)
				return
			}
			if left < clientHigh {
				for _, ln := range sl.nodes {
					if ln != nil && !sl.ended {
						sl.nodeStep(ln) // answers held back
					}
				}
			}
		}
		if ev&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !sl.ended {
			if sl.busy {
				if ev&(unix.EPOLLHUP|unix.EPOLLERR) != 0 {
					sl.dropClient()
				}
			} else {
				sl.clc.readable = true
				sl.clientStep()
			}
		}
	} else if side-1 < len(sl.nodes) {
		ln := sl.nodes[side-1]
		if ln == nil {
			return
		}
		if ev&unix.EPOLLOUT != 0 && !sl.busy {
			// (while busy, the helper writes to the nodes and waits
			// for their sockets itself: drain)
			ln.mu.Lock()
			err := flushPend(ln.fd, &ln.pend)
			left := len(ln.pend)
			ln.mu.Unlock()
			if err != nil {
				sl.nodeGone(ln, err)
				return
			}
			if left == 0 && !sl.busy {
				sl.clientStep() // messages held back
			}
		}
		if ev&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !sl.ended && sl.nodes[side-1] == ln {
			if ev&(unix.EPOLLHUP|unix.EPOLLERR) != 0 && sl.clientFull() {
				sl.nodeGone(ln, errors.New("connection closed by the node"))
			} else {
				ln.lc.readable = true
				sl.nodeStep(ln)
			}
		}
		if !sl.busy && !sl.ended && (sl.s.client.FrameBuffered() || sl.ctls && sl.held) && !sl.nodesFull() {
			// Messages held back for a node that has since gone (its
			// pending bytes with it): epoll will not report them. A TLS
			// client's may sit in crypto/tls, which says nothing of
			// them: reading finds them, or costs no system call.
			sl.clientStep()
		}
	}
	if !sl.ended {
		sl.register()
	}
}

// clientStep handles what the client sent, message by message, until
// nothing whole is left, a node's socket is full, or a helper takes over.
func (sl *splitLoop) clientStep() {
	sl.inline = true
	sl.clientMsgs()
	if !sl.busy {
		sl.inline = false // (a helper's goroutine reads it: helper resets it first)
	}
}

func (sl *splitLoop) clientMsgs() {
	s := sl.s
	sl.held = false
	defer func() { sl.held = !sl.ended && !sl.busy && sl.nodesFull() }()
	for !sl.ended && !sl.busy && !sl.nodesFull() {
		typ, frame, err := s.client.ReadFrame()
		if err != nil {
			if errors.Is(err, errWouldBlock) {
				sl.watchPartial()
				return
			}
			if errors.Is(err, pgwire.ErrMessageTooLarge) || errors.Is(err, pgwire.ErrMalformed) {
				s.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation, Message: "tandem: " + err.Error()})
			}
			sl.finish(err)
			return
		}
		sl.partial = time.Time{}
		if stop, err := s.clientMsg(typ, frame); stop || err != nil {
			sl.finish(err)
			return
		}
	}
}

// watchPartial enforces message_read_timeout on a message the client
// began and has not finished, as the goroutine relay's read deadline does.
func (sl *splitLoop) watchPartial() {
	c := sl.s.client
	if sl.s.rl.readTimeout <= 0 || c.Buffered() == 0 || c.FrameBuffered() {
		sl.partial = time.Time{}
		return
	}
	if sl.partial.IsZero() {
		sl.partial = time.Now()
	}
	if sl.timer != nil {
		return
	}
	var fire func()
	fire = func() {
		sl.l.mu.Lock()
		defer sl.l.mu.Unlock()
		sl.timer = nil
		if sl.ended || sl.partial.IsZero() {
			return
		}
		if left := sl.s.rl.readTimeout - time.Since(sl.partial); left > 0 {
			sl.timer = time.AfterFunc(left, fire)
			return
		}
		if sl.busy {
			sl.timer = time.AfterFunc(sl.s.rl.readTimeout, fire)
			return
		}
		sl.s.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation,
			Message: fmt.Sprintf("terminating connection: a message was begun and not finished within message_read_timeout (%s)", pgwire.FormatTimeout(sl.s.rl.readTimeout))})
		sl.finish(fmt.Errorf("%w: %w", pgwire.ErrMessageTimeout, os.ErrDeadlineExceeded))
	}
	sl.timer = time.AfterFunc(sl.s.rl.readTimeout-time.Since(sl.partial), fire)
}

// nodeStep relays what node connection ln has for the client, until
// nothing more can be read without waiting or the client is far behind.
func (sl *splitLoop) nodeStep(ln *loopNode) {
	s, c := sl.s, sl.s.client
	for !sl.ended && sl.nodes[ln.nc.idx] == ln && !sl.clientFull() {
		typ, frame, err := ln.nc.fr.ReadFrame()
		if err != nil {
			if errors.Is(err, errWouldBlock) {
				break
			}
			sl.flushClient()
			sl.nodeGone(ln, err)
			return
		}
		frame, ok := s.nodeFrame(ln.nc, typ, frame)
		if !ok {
			continue
		}
		s.rl.wmu.Lock()
		c.AppendRaw(frame)
		if c.Pending() > 64<<10 {
			_ = c.Flush()
		}
		s.rl.wmu.Unlock()
	}
	sl.flushClient()
}

// flushClient writes what was gathered for the client (a failed write
// ends the session when the loop sees the client's socket fail).
func (sl *splitLoop) flushClient() {
	s := sl.s
	s.rl.wmu.Lock()
	_ = s.client.Flush()
	s.rl.wmu.Unlock()
}

// nodeGone: node connection ln ended (or failed): what was in flight
// there is answered (lost), as the goroutine reader does.
func (sl *splitLoop) nodeGone(ln *loopNode, err error) {
	s := sl.s
	sl.dropNode(ln)
	follow := s.lost(ln.nc, err)
	if follow == nil {
		close(ln.nc.done)
		return
	}
	go func() {
		defer close(ln.nc.done)
		follow() // resolveInFlight, settleHeld
		// Its answer may wait for the client's socket.
		sl.l.mu.Lock()
		if !sl.ended {
			sl.register()
		}
		sl.l.mu.Unlock()
	}()
}

// closeNode closes a node connection at the session's end.
func (sl *splitLoop) closeNode(ln *loopNode, err error) {
	sl.dropNode(ln)
	sl.s.lost(ln.nc, err) // the session is closed: only marks it dead
	close(ln.nc.done)
}

// abandonNode ends the session's connection to node idx on the loop
// (splitSession.abandon). The loop owns the descriptor, so it is shut
// down, not closed: the loop sees the end at its next readiness and
// handles it as a lost connection. false: no such connection on the loop.
func (sl *splitLoop) abandonNode(idx int) bool {
	sl.l.mu.Lock()
	defer sl.l.mu.Unlock()
	if sl.ended || sl.nodes[idx] == nil {
		return false
	}
	_ = unix.Shutdown(sl.nodes[idx].fd, unix.SHUT_RDWR)
	return true
}

// dropNode takes ln off the loop and closes its descriptor.
func (sl *splitLoop) dropNode(ln *loopNode) {
	if ln.reg {
		_ = unix.EpollCtl(sl.l.epfd, unix.EPOLL_CTL_DEL, ln.fd, nil)
		ln.reg = false
	}
	ln.mu.Lock()
	ln.lc.closed = true
	ln.pend = nil
	ln.mu.Unlock()
	unix.Close(ln.fd)
	if sl.nodes[ln.nc.idx] == ln {
		sl.nodes[ln.nc.idx] = nil
	}
}

// clientGone: writing to the client failed.
func (sl *splitLoop) clientGone(err error) {
	if sl.busy {
		sl.dropClient()
		return
	}
	sl.finish(err)
}

// dropClient stops watching a client that is gone while a helper runs
// (its socket would report the failure again and again); the session
// ends when the helper returns.
func (sl *splitLoop) dropClient() {
	if sl.creg {
		_ = unix.EpollCtl(sl.l.epfd, unix.EPOLL_CTL_DEL, sl.cfd, nil)
	}
	sl.creg, sl.cgone = false, true
}

// endSession ends the session from the router's side (a node's server
// ended it: splitSession.endClient); Serve writes out what the client is
// still owed and closes its socket.
func (sl *splitLoop) endSession() { sl.finish(errServerEnded) }

// finish ends the session (Serve closes its sockets); with a helper
// running, once it returns.
func (sl *splitLoop) finish(err error) {
	if sl.ended {
		return
	}
	if sl.busy {
		sl.ending = true
		return
	}
	sl.ended, sl.err = true, err
	delete(sl.l.split, sl.id)
	close(sl.done)
}

// dispatch routes a gathered request (clientMsg). On the loop when
// nothing has to wait: no answers in flight, the node's connection open,
// and the replica known to have applied what the read needs; otherwise
// on a helper goroutine.
func (sl *splitLoop) dispatch(s *splitSession, end bool) error {
	s.mu.Lock()
	wait := s.resolving || s.pending > 0
	s.mu.Unlock()
	if wait {
		sl.helper(func() error { return s.dispatch(end) })
		return nil
	}
	d, done, err := s.decide(end)
	if done {
		s.resetBatch()
		return err
	}
	first := -1
	if !d.inTx && d.want == routeReplica {
		first = s.pickReplica() // as routeReq would, once
	}
	if sl.inlineOK(d, first) {
		err := s.routeReq(d, first)
		s.needs = d.rq.needs[:0]
		s.resetBatch()
		return err
	}
	sl.helper(func() error {
		defer s.resetBatch()
		defer func() { s.needs = d.rq.needs[:0] }()
		return s.routeReq(d, first)
	})
	return nil
}

// inlineOK reports whether routeReq would run without waiting: the
// target's connection is open and, for a read on a replica, the router
// already knows the replica has what the session's consistency needs.
func (sl *splitLoop) inlineOK(d decision, first int) bool {
	s := sl.s
	pi := s.rt.primaryIndex()
	var target int
	switch {
	case d.inTx:
		target = d.cur
	case d.want == routeAuto:
		target = d.cur
		if target < 0 || s.conns[target] == nil {
			target = pi
		}
	case d.want == routePrimary:
		target = pi
	default:
		target = first
	}
	if target < 0 || target >= len(s.conns) {
		return false
	}
	s.mu.Lock()
	nc := s.conns[target]
	open := nc != nil && !nc.dead
	need := max(s.lastCommit, s.lastRead)
	unknown := s.lsnDirty // the commit position must be asked first
	if s.rt.cfg.LSN && s.stick >= 0 && s.stick != target {
		unknown = true // another replica than the last read's: the primary's position first
	}
	s.mu.Unlock()
	if !open {
		return false
	}
	if d.want != routeReplica || d.inTx || !s.isReplica(target) {
		return true
	}
	switch s.cons {
	case consEventual:
		return true
	case consSession:
		return !unknown && (need == 0 || s.rt.applied(target) >= need)
	}
	return false // strong, bounded: the primary's position is asked
}

// helper runs fn (the client side's next step, which may wait) on its
// own goroutine; the loop reads nothing more from the client until it
// returns, and relays the nodes' answers meanwhile.
func (sl *splitLoop) helper(fn func() error) {
	sl.busy, sl.inline = true, false
	sl.setBlock(true)
	go func() {
		err := fn()
		sl.l.mu.Lock()
		defer sl.l.mu.Unlock()
		sl.busy = false
		sl.setBlock(false)
		if sl.ended {
			return
		}
		if err != nil || sl.cgone || sl.ending {
			sl.finish(err)
			return
		}
		sl.clientStep() // what the client sent meanwhile
		if !sl.ended {
			sl.register()
		}
	}()
}

// setBlock makes writes to the nodes wait for their sockets (a helper
// writes them, and the loop is not told) or not.
func (sl *splitLoop) setBlock(b bool) {
	for _, ln := range sl.nodes {
		if ln != nil {
			ln.mu.Lock()
			ln.lc.block = b
			ln.mu.Unlock()
		}
	}
}

// clientFull: the client is far behind; read no more answers for it.
func (sl *splitLoop) clientFull() bool {
	sl.cmu.Lock()
	defer sl.cmu.Unlock()
	return len(sl.cpend) >= clientHigh
}

// nodesFull: a node's socket did not take what was sent; read no more
// from the client until it has.
func (sl *splitLoop) nodesFull() bool {
	for _, ln := range sl.nodes {
		if ln == nil {
			continue
		}
		ln.mu.Lock()
		n := len(ln.pend)
		ln.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// register brings the epoll interest of the session's sockets up to date.
func (sl *splitLoop) register() {
	sl.cmu.Lock()
	cwait := len(sl.cpend)
	sl.cmu.Unlock()
	var cm uint32
	if cwait > 0 {
		cm |= unix.EPOLLOUT
	}
	if !sl.busy && !sl.nodesFull() {
		cm |= unix.EPOLLIN
	}
	if !sl.cgone {
		sl.setMask(sl.cfd, &sl.creg, &sl.cmask, cm, 0)
	}
	for i, ln := range sl.nodes {
		if ln == nil || sl.ended {
			continue
		}
		var m uint32
		if cwait < clientHigh {
			m |= unix.EPOLLIN
		}
		ln.mu.Lock()
		if len(ln.pend) > 0 && !sl.busy {
			m |= unix.EPOLLOUT
		}
		ln.mu.Unlock()
		sl.setMask(ln.fd, &ln.reg, &ln.mask, m, int32(i+1))
	}
}

// setMask registers fd or changes its interest.
func (sl *splitLoop) setMask(fd int, reg *bool, cur *uint32, want uint32, side int32) {
	if *reg && *cur == want {
		return
	}
	op := unix.EPOLL_CTL_MOD
	if !*reg {
		op = unix.EPOLL_CTL_ADD
	}
	ev := unix.EpollEvent{Events: want, Fd: sl.id, Pad: side}
	if err := unix.EpollCtl(sl.l.epfd, op, fd, &ev); err != nil {
		sl.finish(fmt.Errorf("relay: epoll_ctl: %w", err))
		return
	}
	*reg, *cur = true, want
}
