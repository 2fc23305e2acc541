//go:build linux

package router

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/secure"
)

// pollRelay starts a relay between real sockets: client <-> relay <-> upstream.
// pre is written by the client and framed by the front door before the
// relay starts (bytes pipelined behind the startup).
// With tlsHop.up the relay-to-upstream hop is mutual TLS with cluster
// certificates, as the router-to-node hop is by default (upstream is then
// the server's end of that TLS connection); with tlsHop.cli the client
// speaks TLS to the relay, over the front door's ClientTransport.
func pollRelay(t testing.TB, ctx context.Context, maxMsg int, pre []byte, tlsHop hop) (client, upstream net.Conn, r *relay, done chan error) {
	return pollRelayLost(t, ctx, maxMsg, pre, nil, tlsHop)
}

// pollRelayLost is pollRelay with the router's loss callback set before
// the relay starts (setting it later races with the loop).
func pollRelayLost(t testing.TB, ctx context.Context, maxMsg int, pre []byte, onLost func(string, error), tlsHop hop) (client, upstream net.Conn, r *relay, done chan error) {
	cl, relayClientSide := tcpPair(t)
	relayUpSide, up := tcpPair(t)
	if tlsHop.up {
		relayUpSide, up = tlsPair(t, relayUpSide, up)
	}
	if tlsHop.cli {
		cl, relayClientSide = tlsClientPair(t, cl, relayClientSide)
	}
	pc := &pgwire.Conn{Conn: relayClientSide, Framer: pgwire.NewFramer(relayClientSide, relayClientSide, maxMsg), TLS: tlsHop.cli}
	if len(pre) > 0 {
		if _, err := cl.Write(pre); err != nil {
			t.Fatal(err)
		}
		// The front door reads the first frame; the rest stays buffered.
		if _, _, err := pc.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	}
	r = &relay{log: slog.New(slog.NewTextHandler(io.Discard, nil)), up: Upstream{Node: "n1"}, client: pc, conn: relayUpSide,
		upFr: pgwire.NewFramer(relayUpSide, relayUpSide, maxMsg), maxMsg: maxMsg, onLost: onLost}
	r.txStatus.Store('I')
	done = make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	return cl, up, r, done
}

var (
	hopCertsOnce sync.Once
	hopRouter    *secure.Identity
	hopNode      *secure.Identity
	hopCertsErr  error
)

// tlsPair runs the cluster's mutual TLS 1.3 handshake over a TCP pair:
// the relay's side as the router (over a loopConn, as dialUpstream makes
// it), the other as node n1.
func tlsPair(t testing.TB, relaySide, nodeSide net.Conn) (net.Conn, net.Conn) {
	t.Helper()
	lc := loopable(relaySide)
	if _, ok := lc.(*loopConn); !ok {
		t.Fatalf("the relay's side of the hop is a %T, want a loopConn", lc)
	}
	rc, nc := tlsHandshake(t, lc, nodeSide)
	// The relay's end is the relay's to close (after Serve, as the
	// router does); tcpPair closes the socket under it.
	t.Cleanup(func() { nc.Close() })
	return rc, nc
}

// tlsClientPair runs a TLS 1.3 handshake between a client and the
// relay's front door, which serves it over ClientTransport as the
// router's pgwire server does.
func tlsClientPair(t testing.TB, clientSide, relaySide net.Conn) (net.Conn, net.Conn) {
	t.Helper()
	lc := ClientTransport(relaySide)
	if _, ok := lc.(*loopConn); !ok {
		t.Fatalf("the relay's side of the client's connection is a %T, want a loopConn", lc)
	}
	cc, sc := tlsHandshake(t, clientSide, lc)
	t.Cleanup(func() { cc.Close() })
	return cc, sc
}

// tlsHandshake makes c the TLS client (as the router) and s the server
// (as node n1) and completes the handshake.
func tlsHandshake(t testing.TB, c, s net.Conn) (*tls.Conn, *tls.Conn) {
	t.Helper()
	hopCertsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tandem-relay-certs")
		if err != nil {
			hopCertsErr = err
			return
		}
		defer os.RemoveAll(dir)
		if _, hopCertsErr = secure.Issue(dir, []secure.Member{{ID: "n1"}, {ID: secure.RouterID}}, false); hopCertsErr != nil {
			return
		}
		if hopRouter, hopCertsErr = secure.Load(dir, secure.RouterID); hopCertsErr != nil {
			return
		}
		hopNode, hopCertsErr = secure.Load(dir, "n1")
	})
	if hopCertsErr != nil {
		t.Fatal(hopCertsErr)
	}
	rc := tls.Client(c, hopRouter.ClientTLS("n1"))
	nc := tls.Server(s, hopNode.ServerTLS(func(p string) bool { return p == secure.RouterID }))
	errc := make(chan error, 1)
	go func() { errc <- nc.Handshake() }()
	if err := rc.Handshake(); err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("TLS handshake (server): %v", err)
	}
	if rc.ConnectionState().Version != tls.VersionTLS13 {
		t.Fatalf("TLS version %x, want 1.3", rc.ConnectionState().Version)
	}
	return rc, nc
}

// hop says which sides of a test's relay speak TLS: up, the relay's hop
// to its node; cli, the client to the relay.
type hop struct{ up, cli bool }

// allocs is the allocations per round trip crypto/tls makes: a small
// reader each time it reads its connection (readFromUntil), for the
// record on each end of a TLS side and for the relay's look for more
// that finds nothing; nothing else.
func (h hop) allocs() float64 {
	n := 0.0
	if h.up {
		n += 3
	}
	if h.cli {
		n += 3
	}
	return n
}

// hops runs a test over clear text, a TLS hop, a TLS client, and both.
func hops(t *testing.T, f func(t *testing.T, tlsHop hop)) {
	for _, h := range []struct {
		name string
		hop  hop
	}{{"clear", hop{}}, {"tls", hop{up: true}}, {"tls-client", hop{cli: true}}, {"tls-both", hop{up: true, cli: true}}} {
		t.Run(h.name, func(t *testing.T) { f(t, h.hop) })
	}
}

func readError(t *testing.T, c net.Conn) *pgproto3.ErrorResponse {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	fr := pgwire.NewFramer(c, nil, 1<<20)
	for {
		typ, frame, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("want an ErrorResponse, got %v", err)
		}
		if typ == 'E' {
			var er pgproto3.ErrorResponse
			if err := er.Decode(frame[5:]); err != nil {
				t.Fatal(err)
			}
			return &er
		}
	}
}

func waitDone(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not end")
		return nil
	}
}

// TestPollRelayPassThroughNoAllocs: over real sockets, frames cross the
// epoll relay byte for byte, ReadyForQuery is tracked, and a round trip
// allocates nothing.
func TestPollRelayPassThroughNoAllocs(t *testing.T) {
	hops(t, func(t *testing.T, tlsHop hop) {
		cl, up, r, done := pollRelay(t, context.Background(), 1<<20, nil, tlsHop)
		req := encode(t, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("42")}}, &pgproto3.Execute{}, &pgproto3.Sync{})
		resp := encode(t, &pgproto3.BindComplete{}, &pgproto3.DataRow{Values: [][]byte{[]byte("hello")}}, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}, &pgproto3.ReadyForQuery{TxStatus: 'T'})
		gotReq := make([]byte, len(req))
		gotResp := make([]byte, len(resp))
		roundTrip := func() {
			if _, err := cl.Write(req); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(up, gotReq); err != nil {
				t.Fatal(err)
			}
			if _, err := up.Write(resp); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(cl, gotResp); err != nil {
				t.Fatal(err)
			}
		}
		roundTrip()
		if !r.polled.Load() {
			t.Fatal("the session did not take the epoll path")
		}
		if !bytes.Equal(gotReq, req) || !bytes.Equal(gotResp, resp) {
			t.Fatal("frames changed crossing the relay")
		}
		if r.txStatus.Load() != 'T' {
			t.Fatalf("transaction status not tracked: %c", r.txStatus.Load())
		}
		// The harness itself allocates nothing over bare sockets, so any
		// allocation counted here is the relay's, or crypto/tls's
		// (hop.allocs).
		limit := tlsHop.allocs()
		if a := testing.AllocsPerRun(500, roundTrip); a > limit && !(limit > 0 && raceOn) {
			t.Fatalf("the relay allocates per message: %.2f allocations per round trip (at most %v)", a, limit)
		}
		cl.Close()
		if err := waitDone(t, done); err != nil {
			t.Fatalf("a client that leaves is a clean end, got %v", err)
		}
	})
}

// TestPollRelayLargeMessagesBackpressure: multi-megabyte messages both ways
// to a slow reader fill the sockets; the relay parks bytes, waits for
// writability, and delivers everything in order.
func TestPollRelayLargeMessagesBackpressure(t *testing.T) {
	hops(t, func(t *testing.T, tlsHop hop) {
		cl, up, _, done := pollRelay(t, context.Background(), 64<<20, nil, tlsHop)
		big := make([]byte, 8<<20)
		_, _ = rand.Read(big)
		var toUp, toClient []byte
		for i := 0; i < 3; i++ {
			toUp = append(toUp, encode(t, &pgproto3.CopyData{Data: big[i*1000 : i*1000+3<<20]})...)
			toClient = append(toClient, encode(t, &pgproto3.DataRow{Values: [][]byte{big[i*7 : i*7+2<<20]}})...)
		}
		toUp = append(toUp, encode(t, &pgproto3.CopyDone{})...)
		toClient = append(toClient, encode(t, &pgproto3.ReadyForQuery{TxStatus: 'I'})...)
		errc := make(chan error, 2)
		go func() { _, err := cl.Write(toUp); errc <- err }()
		go func() { _, err := up.Write(toClient); errc <- err }()
		slowRead := func(c net.Conn, n int) []byte {
			out := make([]byte, 0, n)
			buf := make([]byte, 100<<10)
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			for len(out) < n {
				k, err := c.Read(buf[:min(len(buf), n-len(out))])
				if err != nil {
					t.Fatalf("read after %d of %d bytes: %v", len(out), n, err)
				}
				out = append(out, buf[:k]...)
				if len(out) < 1<<20 {
					time.Sleep(2 * time.Millisecond) // slow at first: the relay must park bytes
				}
			}
			return out
		}
		gotUp := slowRead(up, len(toUp))
		gotClient := slowRead(cl, len(toClient))
		for i := 0; i < 2; i++ {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(gotUp, toUp) || !bytes.Equal(gotClient, toClient) {
			t.Fatal("large messages changed crossing the relay")
		}
		cl.Close()
		waitDone(t, done)
	})
}

// TestPollRelayProtocolViolations: a type a client may not send, a frame
// length below 4, and a message over the cap each end the session with
// FATAL 08P01, and the bad frame is not forwarded.
func TestPollRelayProtocolViolations(t *testing.T) {
	hops(t, func(t *testing.T, tlsHop hop) {
		for _, tc := range []struct {
			name string
			msg  []byte
		}{
			{"backend type from client", []byte{'Z', 0, 0, 0, 5, 'I'}},
			{"length below 4", []byte{'Q', 0, 0, 0, 2}},
			{"over the cap", append([]byte{'Q', 0, 0, 0x10, 0}, make([]byte, 100)...)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cl, up, _, done := pollRelay(t, context.Background(), 1<<10, nil, tlsHop)
				good := encode(t, &pgproto3.Sync{})
				if _, err := cl.Write(append(append([]byte{}, good...), tc.msg...)); err != nil {
					t.Fatal(err)
				}
				er := readError(t, cl)
				if er.Code != "08P01" || er.Severity != "FATAL" {
					t.Fatalf("want FATAL 08P01, got %s %s: %s", er.Severity, er.Code, er.Message)
				}
				waitDone(t, done)
				got, _ := io.ReadAll(up)
				if !bytes.Equal(got, good) {
					t.Fatalf("upstream got %q, want only the good frame %q", got, good)
				}
			})
		}
	})
}

// TestPollRelayTerminateAndUpstreamLoss: the server closing after a
// Terminate is a clean end; the server vanishing otherwise ends the session
// with FATAL 57P01 and asks the router to probe the node (once).
func TestPollRelayTerminateAndUpstreamLoss(t *testing.T) {
	hops(t, func(t *testing.T, tlsHop hop) {
		t.Run("terminate", func(t *testing.T) {
			var downs atomic.Int32
			cl, up, _, done := pollRelayLost(t, context.Background(), 1<<20, nil, func(string, error) { downs.Add(1) }, tlsHop)
			if _, err := cl.Write([]byte{'X', 0, 0, 0, 4}); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 5)
			if _, err := io.ReadFull(up, b); err != nil {
				t.Fatal(err)
			}
			up.Close()
			if err := waitDone(t, done); err != nil {
				t.Fatalf("Terminate is a clean end, got %v", err)
			}
			if downs.Load() != 0 {
				t.Fatalf("a clean Terminate marked the node down %d time(s)", downs.Load())
			}
		})
		t.Run("upstream lost", func(t *testing.T) {
			var downs atomic.Int32
			cl, up, _, done := pollRelayLost(t, context.Background(), 1<<20, nil, func(string, error) { downs.Add(1) }, tlsHop)
			if _, err := cl.Write(encode(t, &pgproto3.Query{String: "select 1"})); err != nil {
				t.Fatal(err)
			}
			up.Close()
			er := readError(t, cl)
			if er.Code != "57P01" || er.Severity != "FATAL" {
				t.Fatalf("want FATAL 57P01, got %s %s", er.Severity, er.Code)
			}
			if err := waitDone(t, done); err == nil {
				t.Fatal("a lost upstream must end the session with an error")
			}
			if downs.Load() != 1 {
				t.Fatalf("the router was told of the loss %d times, want 1", downs.Load())
			}
		})
		t.Run("server fatal", func(t *testing.T) {
			// The server ends the session with its own FATAL and closes
			// (message_read_timeout on the node): the client gets that
			// error, and no second one from tandem.
			var downs atomic.Int32
			cl, up, _, done := pollRelayLost(t, context.Background(), 1<<20, nil, func(string, error) { downs.Add(1) }, tlsHop)
			if _, err := up.Write(encode(t, &pgproto3.ErrorResponse{Severity: "FATAL", Code: "08P01", Message: "incomplete message"})); err != nil {
				t.Fatal(err)
			}
			up.Close()
			_ = cl.SetReadDeadline(time.Now().Add(10 * time.Second))
			fr := pgwire.NewFramer(cl, nil, 1<<20)
			var codes []string
			for {
				typ, frame, err := fr.ReadFrame()
				if err != nil {
					break
				}
				if typ == 'E' {
					var er pgproto3.ErrorResponse
					if err := er.Decode(frame[5:]); err != nil {
						t.Fatal(err)
					}
					codes = append(codes, er.Code)
				}
			}
			if len(codes) != 1 || codes[0] != "08P01" {
				t.Fatalf("the client got errors %v, want only the server's 08P01", codes)
			}
			waitDone(t, done)
			if downs.Load() != 1 {
				t.Fatalf("the router was told of the loss %d times, want 1", downs.Load())
			}
		})
	})
}

// TestPollRelayPipelinedAndShutdown: bytes the client pipelined behind
// its startup are forwarded first; cancelling the server's context ends the
// session and closes both sockets.
func TestPollRelayPipelinedAndShutdown(t *testing.T) {
	hops(t, func(t *testing.T, tlsHop hop) {
		first := encode(t, &pgproto3.Sync{})
		second := encode(t, &pgproto3.Query{String: "select 2"})
		ctx, cancel := context.WithCancel(context.Background())
		cl, up, _, done := pollRelay(t, ctx, 1<<20, append(append([]byte{}, first...), second...), tlsHop)
		got := make([]byte, len(second))
		_ = up.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(up, got); err != nil || !bytes.Equal(got, second) {
			t.Fatalf("pipelined bytes: got %q, %v", got, err)
		}
		cancel()
		waitDone(t, done)
		_ = cl.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := cl.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("client socket after shutdown: %v, want EOF", err)
		}
		if _, err := up.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("upstream socket after shutdown: %v, want EOF", err)
		}
	})
}

// TestPollRelayTLSNothingHeldBack: over a TLS hop, what the node sends is
// on its way to the client as soon as nothing more is readable: a message
// alone in its record, and several records that arrive together (crypto/tls
// reads them into its own buffer, which epoll does not see), each delivered
// while the node sends nothing after it.
func TestPollRelayTLSNothingHeldBack(t *testing.T) {
	cl, up, r, done := pollRelay(t, context.Background(), 1<<20, nil, hop{up: true})
	expect := func(want []byte, what string) {
		t.Helper()
		got := make([]byte, len(want))
		_ = cl.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(cl, got); err != nil {
			t.Fatalf("%s: %v (the relay held it back)", what, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s changed crossing the relay", what)
		}
	}
	small := encode(t, &pgproto3.ReadyForQuery{TxStatus: 'I'})
	if _, err := up.Write(small); err != nil {
		t.Fatal(err)
	}
	expect(small, "a message alone in its record")
	if !r.polled.Load() {
		t.Fatal("the TLS session did not take the epoll path")
	}
	// One write of 100 KiB on the node's side: seven records (16 KiB of
	// plaintext at most each) on the wire together.
	row := make([]byte, 100<<10)
	_, _ = rand.Read(row)
	burst := append(encode(t, &pgproto3.DataRow{Values: [][]byte{row}}), encode(t, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}, &pgproto3.ReadyForQuery{TxStatus: 'T'})...)
	if _, err := up.Write(burst); err != nil {
		t.Fatal(err)
	}
	expect(burst, "records that arrived together")
	if r.txStatus.Load() != 'T' {
		t.Fatalf("transaction status not tracked over TLS: %c", r.txStatus.Load())
	}
	// And the other way: a client message reaches the node with nothing
	// after it.
	q := encode(t, &pgproto3.Query{String: "select 1"})
	if _, err := cl.Write(q); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(q))
	_ = up.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(up, got); err != nil || !bytes.Equal(got, q) {
		t.Fatalf("client message over TLS: %q, %v", got, err)
	}
	cl.Close()
	waitDone(t, done)
}
