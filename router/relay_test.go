package router

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/pgwire"
)

// A relay between two in-memory connections: client <-> relay <-> upstream.
func relayPair(t testing.TB) (client net.Conn, upstream net.Conn, r *relay, done chan error) {
	return relayPairLost(t, nil)
}

// relayPairLost is relayPair with the loss callback set before the relay
// starts.
func relayPairLost(t testing.TB, onLost func(string, error)) (client net.Conn, upstream net.Conn, r *relay, done chan error) {
	cl, relayClientSide := net.Pipe()
	relayUpSide, up := net.Pipe()
	pc := &pgwire.Conn{Conn: relayClientSide, Framer: pgwire.NewFramer(relayClientSide, relayClientSide, 1<<20)}
	r = &relay{log: slog.New(slog.NewTextHandler(io.Discard, nil)), up: Upstream{Node: "n1"}, client: pc, conn: relayUpSide,
		upFr: pgwire.NewFramer(relayUpSide, relayUpSide, 1<<20), onLost: onLost}
	r.txStatus.Store('I')
	done = make(chan error, 1)
	go func() { done <- r.Serve(context.Background()) }()
	return cl, up, r, done
}

// tcpPair returns both ends of a real loopback TCP connection.
func tcpPair(t testing.TB) (a, b net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		ch <- c
	}()
	a, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-ch
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func encode(t testing.TB, msgs ...interface{ Encode([]byte) ([]byte, error) }) []byte {
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestRelayPassThroughNoAllocs: frames cross the relay byte for byte, and a
// warm relay allocates nothing per message.
func TestRelayPassThroughNoAllocs(t *testing.T) {
	cl, up, r, done := relayPair(t)
	req := encode(t, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("42")}}, &pgproto3.Execute{}, &pgproto3.Sync{})
	resp := encode(t, &pgproto3.BindComplete{}, &pgproto3.DataRow{Values: [][]byte{[]byte("hello")}}, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}, &pgproto3.ReadyForQuery{TxStatus: 'T'})
	gotReq := make([]byte, len(req))
	gotResp := make([]byte, len(resp))
	roundTrip := func() {
		go func() { _, _ = cl.Write(req) }()
		if _, err := io.ReadFull(up, gotReq); err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = up.Write(resp) }()
		if _, err := io.ReadFull(cl, gotResp); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip()
	if string(gotReq) != string(req) || string(gotResp) != string(resp) {
		t.Fatal("frames changed crossing the relay")
	}
	if r.txStatus.Load() != 'T' {
		t.Fatalf("transaction status not tracked: %c", r.txStatus.Load())
	}
	// Count allocations of the relay goroutines only: the test's own
	// goroutines allocate too, so measure a run of round trips and compare
	// with the same run against a plain pipe pair.
	perTrip := testing.AllocsPerRun(200, roundTrip)
	a, b := net.Pipe()
	c, d := net.Pipe()
	defer func() { a.Close(); b.Close(); c.Close(); d.Close() }()
	base := testing.AllocsPerRun(200, func() {
		go func() { _, _ = a.Write(req) }()
		io.ReadFull(b, gotReq)
		go func() { _, _ = c.Write(resp) }()
		io.ReadFull(d, gotResp)
	})
	t.Logf("allocations per round trip: through the relay %.1f, the same harness over bare pipes %.1f", perTrip, base)
	if perTrip > base {
		t.Fatalf("the relay allocates per message: %.1f allocations per round trip (harness alone %.1f)", perTrip, base)
	}
	cl.Close()
	<-done
}

// TestRelayRejectsBackendMessagesFromClient: a message type a client may
// not send closes the session with 08P01, and nothing is forwarded.
func TestRelayRejectsBadFrontendMessage(t *testing.T) {
	cl, up, _, done := relayPair(t)
	go func() { _, _ = cl.Write([]byte{'Z', 0, 0, 0, 5, 'I'}) }()
	fr := pgwire.NewFramer(cl, nil, 1<<20)
	typ, frame, err := fr.ReadFrame()
	if err != nil || typ != 'E' {
		t.Fatalf("want an ErrorResponse, got %q %v", typ, err)
	}
	var er pgproto3.ErrorResponse
	_ = er.Decode(frame[5:])
	if er.Code != "08P01" || er.Severity != "FATAL" {
		t.Fatalf("want FATAL 08P01, got %s %s", er.Severity, er.Code)
	}
	up.Close()
	cl.Close()
	<-done
}

// TestRelayTerminateIsNotNodeFailure: the server closing after a client's
// Terminate must not mark the node down.
func TestRelayTerminateIsNotNodeFailure(t *testing.T) {
	var downs atomic.Int32
	cl, up, _, done := relayPairLost(t, func(string, error) { downs.Add(1) })
	go func() {
		// the "server": read the Terminate, then close at once
		b := make([]byte, 5)
		io.ReadFull(up, b)
		up.Close()
	}()
	_, _ = cl.Write([]byte{'X', 0, 0, 0, 4})
	<-done
	cl.Close()
	if downs.Load() != 0 {
		t.Fatalf("a clean Terminate marked the node down %d time(s)", downs.Load())
	}
}
