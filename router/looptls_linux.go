//go:build linux

package router

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// TLS on the epoll loops. A session whose router-to-node hop is TLS (the
// default, security.inter_node = "mtls") used to stay on the two-goroutine
// relay: crypto/tls reads and writes through a blocking net.Conn. Profiles
// of TM1 through a hot-standby pair put most of what mutual TLS cost there,
// in the router, and not in the cipher: a goroutine hand-off, a netpoll
// wake-up and a read ending in EAGAIN per message, which the clear-text
// sessions on the loops do not pay (docs/benchmarks.md). So the TLS
// connection is made over a loopConn: until the session joins a loop it is
// the TCP connection itself (pgconn runs the handshake, with the cluster
// CA's verification unchanged, and the startup over it); on the loop it
// reads and writes the raw descriptor without ever blocking, and crypto/tls
// runs on the loop's goroutine. A read with nothing ready returns
// errWouldBlock, a net.Error that crypto/tls treats as temporary: it keeps
// what it has of a record and returns the error, so the loop tries again
// at the next readiness.

// errWouldBlock: the loop has nothing more to read on the socket now.
var errWouldBlock error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "relay: no input ready on the socket" }
func (wouldBlock) Timeout() bool   { return false }
func (wouldBlock) Temporary() bool { return true }

// loopConn is the transport under a TLS upstream. Before attach it is its
// TCP connection (Go's netpoller, deadlines and all); after, it belongs to
// one epoll loop and is used only under that loop's mutex.
type loopConn struct {
	net.Conn
	fd int // the loop's descriptor; -1 before attach
	// readable: a read may find bytes (epoll reported input, or the last
	// read filled its buffer). A read that comes back short clears it, so
	// draining crypto/tls's buffer costs no read that ends in EAGAIN.
	readable bool
	// pend is the direction's unsent bytes (ciphertext): what the socket
	// did not take; later writes queue behind it, the loop writes it out
	// on EPOLLOUT and reads no more from the client meanwhile.
	pend   *[]byte
	closed bool // the loop ended the session and closed fd
	// mu, when set (a routed session: splitloop_linux.go), guards pend
	// and closed: a helper goroutine writes too. block: writes wait until
	// the socket took everything (the helper's writes to a node).
	mu    *sync.Mutex
	block bool
}

// loopable wraps a dialed connection so that a TLS session over it can
// join an epoll loop later (see servePoll).
func loopable(c net.Conn) net.Conn {
	if pollDisabled || !pollable(c) {
		return c
	}
	return &loopConn{Conn: c, fd: -1}
}

// NetConn returns the connection c was made from (closed once c is
// attached: the loop owns a duplicate of its descriptor).
func (c *loopConn) NetConn() net.Conn { return c.Conn }

// attach switches c to the loop's descriptor fd (the TCP connection was
// duplicated and closed by rawFD); pend is where short writes leave the rest.
func (c *loopConn) attach(fd int, pend *[]byte) {
	c.fd, c.pend, c.readable = fd, pend, true
}

func (c *loopConn) Read(b []byte) (int, error) {
	if c.fd < 0 {
		return c.Conn.Read(b)
	}
	if c.closed {
		return 0, net.ErrClosed
	}
	if !c.readable || len(b) == 0 {
		return 0, errWouldBlock
	}
	for {
		n, err := rawRead(c.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			c.readable = false
			return 0, errWouldBlock
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		if n < len(b) {
			c.readable = false
		}
		return n, nil
	}
}

func (c *loopConn) Write(b []byte) (int, error) {
	if c.fd < 0 {
		return c.Conn.Write(b)
	}
	if c.mu != nil {
		return c.lockedWrite(b)
	}
	if c.closed {
		return 0, net.ErrClosed
	}
	if len(*c.pend) > 0 {
		*c.pend = append(*c.pend, b...)
		return len(b), nil
	}
	w, err := writeAll(c.fd, b)
	if err != nil {
		return w, err
	}
	if w < len(b) {
		*c.pend = append(*c.pend, b[w:]...)
	}
	return len(b), nil
}

// Close closes the TCP connection before attach; after, the loop owns
// (and has closed, or will close) the descriptor.
func (c *loopConn) Close() error {
	if c.fd < 0 {
		return c.Conn.Close()
	}
	if c.mu != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	c.closed = true
	return nil
}

// tlsOverLoop returns the TLS connection of a session's upstream or
// client and its loopConn, when the session can take that TLS onto a loop.
func tlsOverLoop(c net.Conn) (*tls.Conn, *loopConn, bool) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return nil, nil, false
	}
	lc, ok := tc.NetConn().(*loopConn)
	if !ok || lc.fd >= 0 {
		return nil, nil, false
	}
	return tc, lc, true
}

// pump passes on what a TLS side has for d's destination: records the
// socket holds and whatever crypto/tls has already buffered (which epoll
// does not see), until nothing more can be read without waiting, or d's
// destination is full (then the flush that empties it pumps again).
// Plaintext of records read back to back goes on in one write.
func (l *loop) pump(s *psess, d *direction) {
	for len(d.pend) == 0 && !s.ended {
		n := 0
		var err error
		for n < len(l.scratch) {
			var k int
			k, err = d.srcTLS.Read(l.scratch[n:])
			n += k
			if err != nil {
				break
			}
		}
		if n > 0 {
			l.forward(s, d, l.scratch[:n])
			if s.ended {
				return
			}
		}
		switch {
		case err == nil:
			continue // the scratch buffer filled: more may be there
		case errors.Is(err, errWouldBlock):
			return
		case errors.Is(err, io.EOF):
			err = nil
		}
		l.srcGone(s, d, err)
		return
	}
}
