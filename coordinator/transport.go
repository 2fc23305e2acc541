package coordinator

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tandemdb/tandem/secure"
)

// rpcForward is the first byte of a connection carrying a request for the
// leader; hashicorp/raft's own RPC types are small integers (0-3), so the
// two share one listener.
const rpcForward byte = 0xC7

// handshakeTimeout bounds an incoming TLS handshake and its first byte.
const handshakeTimeout = 5 * time.Second

// tlsLayer is a raft.StreamLayer over mutual TLS: a peer must present a
// certificate of the cluster's CA naming a voter, and the dialer pins the
// server's identity by the address-to-id map of the voters.
type tlsLayer struct {
	ln      net.Listener
	ident   *secure.Identity
	addrIDs map[string]string // raft address -> member id
	conns   chan net.Conn     // raft's connections, after the handshake
	forward func(net.Conn)    // serves a forwarded request
	log     *slog.Logger

	rejected interface{ Inc() }

	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup

	mu   sync.Mutex
	live map[net.Conn]struct{} // accepted connections, closed with the layer
}

func newTLSLayer(addr string, ident *secure.Identity, voters []Member, forward func(net.Conn), rejected interface{ Inc() }, log *slog.Logger) (*tlsLayer, error) {
	l := &tlsLayer{ident: ident, addrIDs: map[string]string{}, conns: make(chan net.Conn),
		forward: forward, rejected: rejected, log: log, done: make(chan struct{}), live: map[net.Conn]struct{}{}}
	allowed := map[string]bool{}
	for _, v := range voters {
		l.addrIDs[v.RaftAddr] = v.ID
		allowed[v.ID] = true
	}
	cfg := ident.ServerTLS(func(peer string) bool { return allowed[peer] })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("raft_listen %s: %w", addr, err)
	}
	l.ln = ln
	l.wg.Add(1)
	go l.acceptLoop(cfg)
	return l, nil
}

func (l *tlsLayer) acceptLoop(cfg *tls.Config) {
	defer l.wg.Done()
	for {
		raw, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.log.Warn("raft listener stopped", "err", err)
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.serve(tls.Server(raw, cfg))
		}()
	}
}

// serve finishes the handshake off the accept loop (a slow or hostile peer
// holds up nobody) and routes the connection by its first byte.
func (l *tlsLayer) serve(c *tls.Conn) {
	if !l.track(c) {
		return
	}
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := c.Handshake(); err != nil {
		if l.rejected != nil {
			l.rejected.Inc()
		}
		l.log.Warn("raft connection refused", "remote", c.RemoteAddr().String(), "err", err)
		l.untrack(c)
		c.Close()
		return
	}
	br := bufio.NewReader(c)
	b, err := br.Peek(1)
	if err != nil {
		l.untrack(c)
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	pc := &peekedConn{Conn: c, r: br, l: l}
	if b[0] == rpcForward {
		_, _ = br.ReadByte()
		l.forward(pc)
		return
	}
	select {
	case l.conns <- pc:
	case <-l.done:
		pc.Close()
	}
}

// Accept hands raft the next authenticated connection.
func (l *tlsLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// track registers an accepted connection; false once the layer closed.
func (l *tlsLayer) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live == nil {
		c.Close()
		return false
	}
	l.live[c] = struct{}{}
	return true
}

func (l *tlsLayer) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.live, c)
	l.mu.Unlock()
}

// Close stops accepting and closes every accepted connection (raft's
// handlers would otherwise wait on them until the peer hangs up).
func (l *tlsLayer) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.ln.Close()
		l.mu.Lock()
		for c := range l.live {
			c.Close()
		}
		l.live = nil
		l.mu.Unlock()
	})
	return err
}

// wait returns once every connection handler has returned.
func (l *tlsLayer) wait() { l.wg.Wait() }

func (l *tlsLayer) Addr() net.Addr { return l.ln.Addr() }

// Dial reaches the voter at address, which must be one of the map's.
func (l *tlsLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	id, ok := l.addrIDs[string(address)]
	if !ok {
		return nil, fmt.Errorf("%w: no voter at %s", ErrNotMember, address)
	}
	return l.dialID(context.Background(), id, string(address), timeout)
}

func (l *tlsLayer) dialID(ctx context.Context, id, address string, timeout time.Duration) (*tls.Conn, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: l.ident.ClientTLS(id)}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

// peerOf is the certificate identity of a connection the layer accepted.
func peerOf(c net.Conn) string {
	if pc, ok := c.(*peekedConn); ok {
		c = pc.Conn
	}
	if tc, ok := c.(*tls.Conn); ok {
		return secure.PeerID(tc.ConnectionState())
	}
	return ""
}

type peekedConn struct {
	net.Conn
	r *bufio.Reader
	l *tlsLayer
}

func (p *peekedConn) Close() error {
	p.l.untrack(p.Conn)
	return p.Conn.Close()
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }
