//go:build linux

package router

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/pgwire"
)

// splitOverSockets starts a routed session between real sockets: the
// client, and the session's connections to n1 (the primary) and n2 (a
// replica, the only read candidate), each one end of a TCP pair (or, with
// tlsHop.up, of the cluster's mutual TLS over one; with tlsHop.cli the
// client speaks TLS to the router). It returns the client's end, the
// nodes' ends and the session.
func splitOverSockets(t *testing.T, tlsHop hop) (cl net.Conn, nodes [2]net.Conn, s *splitSession, done chan error) {
	return splitOverSocketsTimeout(t, tlsHop, 0)
}

// splitOverSocketsTimeout is splitOverSockets with message_read_timeout.
func splitOverSocketsTimeout(t *testing.T, tlsHop hop, readTimeout time.Duration) (cl net.Conn, nodes [2]net.Conn, s *splitSession, done chan error) {
	t.Helper()
	r := testRouter(Config{Split: true, ReadWeights: []int{0, -1, -1}})
	r.cfg.Nodes = r.cfg.Nodes[:2]
	r.setRole("n2", "standby", 1)
	cl, relayClient := tcpPair(t)
	small(relayClient, cl)
	if tlsHop.cli {
		cl, relayClient = tlsClientPair(t, cl, relayClient)
	}
	pc := &pgwire.Conn{Conn: relayClient, Framer: pgwire.NewFramer(relayClient, relayClient, 1<<20), RemoteAddr: "127.0.0.1:5", TLS: tlsHop.cli}
	s = r.newSplit(context.Background(), pc)
	s.rl.readTimeout = readTimeout
	s.conns = s.conns[:2]
	for i := range 2 {
		routerSide, nodeSide := tcpPair(t)
		small(routerSide, nodeSide)
		if tlsHop.up {
			routerSide, nodeSide = tlsPair(t, routerSide, nodeSide)
		}
		s.conns[i] = &nodeConn{idx: i, up: r.cfg.Nodes[i], conn: routerSide,
			fr: pgwire.NewFramer(routerSide, routerSide, 1<<20), stmts: map[string]uint64{}, done: make(chan struct{})}
		nodes[i] = nodeSide
	}
	s.cur = 0
	done = make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	return cl, nodes, s, done
}

// small gives sockets small receive buffers, so that large messages fill
// them and the loop's back-pressure is exercised. (Small send buffers
// would meet the receiver's delayed acknowledgements: 40 ms a chunk.)
func small(cs ...net.Conn) {
	for _, c := range cs {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(32 << 10)
		}
	}
}

// TestSplitLoopReadsNoAllocs: over real sockets, a routed session runs on
// an epoll loop: a prepared read goes to the replica, tandem's GSN reports
// are kept from the client, the answers are otherwise the node's byte for
// byte, nothing reaches the primary, and a warm round trip allocates
// nothing in the router.
func TestSplitLoopReadsNoAllocs(t *testing.T) {
	hops(t, func(t *testing.T, tlsHop hop) {
		cl, nodes, s, done := splitOverSockets(t, tlsHop)
		parse := encode(t, &pgproto3.Parse{Name: "s1", Query: "SELECT abalance FROM pgbench_accounts WHERE aid = $1"})
		req := encode(t, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("42")}}, &pgproto3.Execute{}, &pgproto3.Sync{})
		gsn := encode(t, &pgproto3.ParameterStatus{Name: pgwire.ReadGSNParam, Value: "7"}, &pgproto3.ParameterStatus{Name: pgwire.AppliedGSNSetting, Value: "7"})
		resp := encode(t, &pgproto3.BindComplete{}, &pgproto3.DataRow{Values: [][]byte{[]byte("hello")}}, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
		rfq := encode(t, &pgproto3.ReadyForQuery{TxStatus: 'I'})
		fromNode := append(append(append([]byte(nil), resp...), gsn...), rfq...)
		toClient := append(append([]byte(nil), resp...), rfq...)
		// The first request parses the statement too.
		first := append(append([]byte(nil), parse...), req...)
		if _, err := cl.Write(first); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(first))
		_ = nodes[1].SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(nodes[1], got); err != nil {
			t.Fatalf("the read did not reach the replica: %v", err)
		}
		if !bytes.Equal(got, first) {
			t.Fatalf("the replica got %q, want %q", got, first)
		}
		pc := encode(t, &pgproto3.ParseComplete{})
		if _, err := nodes[1].Write(append(pc, fromNode...)); err != nil {
			t.Fatal(err)
		}
		gotResp := make([]byte, len(pc)+len(toClient))
		_ = cl.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(cl, gotResp); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotResp, append(pc, toClient...)) {
			t.Fatalf("the client got %q, want %q", gotResp, append(pc, toClient...))
		}
		if !s.polled.Load() {
			t.Fatal("the routed session did not take the epoll path")
		}
		gotReq := make([]byte, len(req))
		gotResp = gotResp[:len(toClient)]
		roundTrip := func() {
			if _, err := cl.Write(req); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(nodes[1], gotReq); err != nil {
				t.Fatal(err)
			}
			if _, err := nodes[1].Write(fromNode); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(cl, gotResp); err != nil {
				t.Fatal(err)
			}
		}
		roundTrip()
		if !bytes.Equal(gotReq, req) || !bytes.Equal(gotResp, toClient) {
			t.Fatalf("frames changed crossing the router: request %q, answer %q", gotReq, gotResp)
		}
		if g := s.rt.applied(1); g != 7 {
			t.Fatalf("the replica's applied GSN as the router knows it: %d, want 7", g)
		}
		// As for the plain relay: over TLS crypto/tls allocates a small
		// reader per read of its connection (three per round trip).
		limit := tlsHop.allocs()
		if a := testing.AllocsPerRun(300, roundTrip); a > limit && !(limit > 0 && raceOn) {
			t.Fatalf("routing allocates per message: %.2f allocations per round trip (at most %v)", a, limit)
		}
		_ = nodes[0].SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, err := nodes[0].Read(make([]byte, 1)); n > 0 || err == nil {
			t.Fatalf("the primary got bytes of a read-only session (%d, %v)", n, err)
		}
		cl.Close()
		if err := waitDone(t, done); err != nil && err != io.EOF {
			t.Fatalf("a client that leaves: %v", err)
		}
		for i, n := range nodes {
			_ = n.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadAll(n); err != nil {
				t.Fatalf("node %d's connection was not closed cleanly: %v", i, err)
			}
		}
	})
}

// TestSplitLoopHelperWaits: what must wait leaves the loop for a helper
// goroutine and comes back. A write goes to the primary and reports its
// commit GSN; the next read needs the replica to have applied it, so the
// router asks the replica to wait (SET tandem.min_applied_gsn, answered
// and kept from the client) ahead of the read, and the session goes on
// on the loop.
func TestSplitLoopHelperWaits(t *testing.T) {
	hops(t, func(t *testing.T, tlsHop hop) {
		cl, nodes, _, done := splitOverSockets(t, tlsHop)
		for _, n := range nodes {
			_ = n.SetReadDeadline(time.Now().Add(10 * time.Second))
		}
		_ = cl.SetReadDeadline(time.Now().Add(10 * time.Second))
		nodeFr := [2]*pgwire.Framer{pgwire.NewFramer(nodes[0], nodes[0], 1<<20), pgwire.NewFramer(nodes[1], nodes[1], 1<<20)}
		cfr := pgwire.NewFramer(cl, cl, 1<<20)
		expect := func(fr *pgwire.Framer, typ byte, text string) {
			t.Helper()
			got, frame, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("want %c %q: %v", typ, text, err)
			}
			if got != typ || text != "" && !bytes.Contains(frame, []byte(text)) {
				t.Fatalf("got %c %q, want %c with %q", got, frame, typ, text)
			}
		}
		answer := func(n int, msgs ...interface{ Encode([]byte) ([]byte, error) }) {
			t.Helper()
			if _, err := nodes[n].Write(encode(t, msgs...)); err != nil {
				t.Fatal(err)
			}
		}
		// A write: the primary.
		if _, err := cl.Write(encode(t, &pgproto3.Query{String: "INSERT INTO t VALUES (1)"})); err != nil {
			t.Fatal(err)
		}
		expect(nodeFr[0], 'Q', "INSERT")
		answer(0, &pgproto3.ParameterStatus{Name: pgwire.CommitGSNParam, Value: "20"}, &pgproto3.CommandComplete{CommandTag: []byte("INSERT 0 1")}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
		expect(cfr, 'C', "INSERT 0 1")
		expect(cfr, 'Z', "")
		// A read: the replica, which must first reach GSN 20.
		if _, err := cl.Write(encode(t, &pgproto3.Query{String: "SELECT v FROM t"})); err != nil {
			t.Fatal(err)
		}
		expect(nodeFr[1], 'Q', pgwire.MinAppliedSetting+" = 20")
		answer(1, &pgproto3.CommandComplete{CommandTag: []byte("SET")}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
		expect(nodeFr[1], 'Q', "SELECT v FROM t")
		answer(1, &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("v"), DataTypeOID: 25, DataTypeSize: -1, Format: 0}}},
			&pgproto3.DataRow{Values: [][]byte{[]byte("1")}}, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")},
			&pgproto3.ParameterStatus{Name: pgwire.ReadGSNParam, Value: "20"}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
		// The client sees the read's answer only: not the SET's.
		expect(cfr, 'T', "")
		expect(cfr, 'D', "")
		expect(cfr, 'C', "SELECT 1")
		expect(cfr, 'Z', "")
		// Back on the loop: the next read needs nothing more and goes
		// straight to the replica.
		if _, err := cl.Write(encode(t, &pgproto3.Query{String: "SELECT v FROM t"})); err != nil {
			t.Fatal(err)
		}
		expect(nodeFr[1], 'Q', "SELECT v FROM t")
		answer(1, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 0")}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
		expect(cfr, 'C', "SELECT 0")
		expect(cfr, 'Z', "")
		// Terminate reaches both nodes, and the session ends cleanly.
		if _, err := cl.Write(encode(t, &pgproto3.Terminate{})); err != nil {
			t.Fatal(err)
		}
		for i := range nodes {
			expect(nodeFr[i], 'X', "")
		}
		if err := waitDone(t, done); err != nil {
			t.Fatalf("after Terminate: %v", err)
		}
	})
}

// TestSplitLoopHalfMessage: message_read_timeout holds on the loop as on
// the goroutine relay: a client that begins a message and does not finish
// it gets FATAL 08P01 and the session ends; nothing reaches a node.
func TestSplitLoopHalfMessage(t *testing.T) {
	cl, nodes, s, done := splitOverSocketsTimeout(t, hop{}, 300*time.Millisecond)
	q := encode(t, &pgproto3.Query{String: "SELECT 1"})
	start := time.Now()
	if _, err := cl.Write(q[:len(q)-3]); err != nil {
		t.Fatal(err)
	}
	e := readError(t, cl)
	took := time.Since(start)
	if e.Code != pgwire.CodeProtocolViolation || e.Severity != "FATAL" {
		t.Fatalf("half a message: %s %s %q, want FATAL 08P01", e.Severity, e.Code, e.Message)
	}
	if took < 250*time.Millisecond {
		t.Fatalf("the session ended after %v, before message_read_timeout (300ms)", took)
	}
	if !s.polled.Load() {
		t.Fatal("the routed session did not take the epoll path")
	}
	if err := waitDone(t, done); !errors.Is(err, pgwire.ErrMessageTimeout) {
		t.Fatalf("the session ended with %v, want a message timeout", err)
	}
	for i, n := range nodes {
		_ = n.SetReadDeadline(time.Now().Add(10 * time.Second))
		if b, err := io.ReadAll(n); err != nil || len(b) > 0 {
			t.Fatalf("node %d got %q (%v); want nothing, then its connection closed", i, b, err)
		}
	}
}

// TestSplitLoopLargeMessages: megabytes both ways through a routed
// session on the loop, with a node and a client that read slowly:
// pipelined writes (the second waits on a helper goroutine for the
// first's answer to leave the loop) reach the primary whole and in order,
// and the answers reach the client whole and in order.
func TestSplitLoopLargeMessages(t *testing.T) {
	hops(t, func(t *testing.T, tlsHop hop) {
		cl, nodes, s, done := splitOverSockets(t, tlsHop)
		big := func(n int, c byte) string { return string(bytes.Repeat([]byte{c}, n)) }
		var reqs [][]byte
		for i, c := range []byte("abc") {
			reqs = append(reqs, encode(t, &pgproto3.Query{String: "INSERT INTO t VALUES (" + string('1'+byte(i)) + ", '" + big(900<<10, c) + "')"}))
		}
		var all []byte
		for _, r := range reqs {
			all = append(all, r...)
		}
		werr := make(chan error, 1)
		go func() { _, err := cl.Write(all); werr <- err }()
		time.Sleep(200 * time.Millisecond) // the node reads late: the router's sockets fill
		_ = nodes[0].SetReadDeadline(time.Now().Add(30 * time.Second))
		_ = cl.SetReadDeadline(time.Now().Add(30 * time.Second))
		row := encode(t, &pgproto3.DataRow{Values: [][]byte{bytes.Repeat([]byte{'r'}, 800<<10)}})
		answer := encode(t, &pgproto3.CommandComplete{CommandTag: []byte("INSERT 0 1")}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
		var want []byte
		nerr := make(chan error, 1)
		for range reqs {
			want = append(append(append(want, row...), row...), answer...)
		}
		go func() {
			for i, r := range reqs {
				got := make([]byte, len(r))
				if _, err := io.ReadFull(nodes[0], got); err != nil {
					nerr <- err
					return
				}
				if !bytes.Equal(got, r) {
					nerr <- errors.New("the primary got a request changed or out of order: request " + string('1'+byte(i)))
					return
				}
				if _, err := nodes[0].Write(append(append(append([]byte(nil), row...), row...), answer...)); err != nil {
					nerr <- err
					return
				}
			}
			nerr <- nil
		}()
		time.Sleep(200 * time.Millisecond) // the client reads late too
		got := make([]byte, len(want))
		if _, err := io.ReadFull(cl, got); err != nil {
			t.Fatalf("the client's answers: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatal("the client's answers changed or out of order")
		}
		if err := <-nerr; err != nil {
			t.Fatal(err)
		}
		if err := <-werr; err != nil {
			t.Fatal(err)
		}
		if !s.polled.Load() {
			t.Fatal("the routed session did not take the epoll path")
		}
		cl.Close()
		if err := waitDone(t, done); err != nil && err != io.EOF {
			t.Fatalf("a client that leaves: %v", err)
		}
	})
}
