package router

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/pgwire"
)

// fakeReplica is a server on a real socket that answers the replay
// watcher's prepared statement with its current state: in recovery (or
// promoted) and the replay position. It counts the polls it answered and
// the sessions that logged in; cut ends every connection.
type fakeReplica struct {
	addr       string
	lsn        atomic.Uint64
	promoted   atomic.Bool
	polls      atomic.Int64
	logins     atomic.Int64
	mu         sync.Mutex
	open       []net.Conn
	ln         net.Listener
	user, base string // the last login's
}

func newFakeReplica(t *testing.T) *fakeReplica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeReplica{addr: ln.Addr().String(), ln: ln}
	t.Cleanup(func() { ln.Close(); f.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.open = append(f.open, c)
			f.mu.Unlock()
			go f.serve(c)
		}
	}()
	return f
}

// cut ends every open connection (a restart of the server).
func (f *fakeReplica) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.open {
		c.Close()
	}
	f.open = nil
}

func (f *fakeReplica) serve(c net.Conn) {
	defer c.Close()
	be := pgproto3.NewBackend(c, c)
	m, err := be.ReceiveStartupMessage()
	if err != nil {
		return
	}
	sm, ok := m.(*pgproto3.StartupMessage)
	if !ok {
		return // a CancelRequest (pgconn's, for a query cut short)
	}
	f.logins.Add(1)
	f.mu.Lock()
	f.user, f.base = sm.Parameters["user"], sm.Parameters["database"]
	f.mu.Unlock()
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 3, SecretKey: []byte{0, 0, 0, 3}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if be.Flush() != nil {
		return
	}
	cols := &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{
		{Name: []byte("pg_is_in_recovery"), DataTypeOID: 16, DataTypeSize: 1, TypeModifier: -1},
		{Name: []byte("pg_last_wal_replay_lsn"), DataTypeOID: 25, DataTypeSize: -1, TypeModifier: -1}}}
	for {
		m, err := be.Receive()
		if err != nil {
			return
		}
		switch m := m.(type) {
		case *pgproto3.Parse:
			be.Send(&pgproto3.ParseComplete{})
		case *pgproto3.Describe:
			if m.ObjectType == 'S' {
				be.Send(&pgproto3.ParameterDescription{})
			}
			be.Send(cols)
		case *pgproto3.Bind:
			be.Send(&pgproto3.BindComplete{})
		case *pgproto3.Execute:
			row := &pgproto3.DataRow{Values: [][]byte{[]byte("t"), []byte(formatLSN(f.lsn.Load()))}}
			if f.promoted.Load() {
				row.Values = [][]byte{[]byte("f"), nil}
			}
			f.polls.Add(1)
			be.Send(row)
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
		case *pgproto3.Sync:
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			if be.Flush() != nil {
				return
			}
		case *pgproto3.Terminate:
			return
		}
	}
}

func watchRouter(f *fakeReplica) *Router {
	return New(Config{Split: true, LSN: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Nodes: []Upstream{
		{Node: "n1", Addr: "127.0.0.1:1"},
		{Node: "n2", Addr: f.addr}}})
}

var watchLogin = &pgwire.Conn{User: "alice", Database: "shop"}

// TestReplayWatchShared: sessions waiting on one replica share one
// connection and one poll stream; each is released once the replica's
// replay passes what it needs, and the router learns the position.
func TestReplayWatchShared(t *testing.T) {
	f := newFakeReplica(t)
	r := watchRouter(f)
	w := r.replayWatch(1)
	f.lsn.Store(100)
	const waiters = 8
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		go func(need uint64) { errs <- w.wait(context.Background(), need, 10*time.Second, watchLogin) }(uint64(200 + 10*i))
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-errs:
		t.Fatalf("a wait ended before the replica replayed what it needs: %v", err)
	default:
	}
	f.lsn.Store(250) // the first six
	for i := 0; i < 6; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-errs:
		t.Fatalf("a wait for 260 or 270 ended at 250: %v", err)
	case <-time.After(30 * time.Millisecond):
	}
	f.lsn.Store(1000)
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := r.applied(1); got < 270 {
		t.Errorf("the router knows n2 applied %d, want at least 270", got)
	}
	if n := f.logins.Load(); n != 1 {
		t.Errorf("%d connections to the replica, want 1 shared by the waiters", n)
	}
	f.mu.Lock()
	user, base := f.user, f.base
	f.mu.Unlock()
	if user != "alice" || base != "shop" {
		t.Errorf("logged in as %s to %s, want the waiting session's alice to shop", user, base)
	}
	// Once nobody waits, nobody polls.
	time.Sleep(20 * time.Millisecond)
	before := f.polls.Load()
	time.Sleep(50 * time.Millisecond)
	if after := f.polls.Load(); after != before {
		t.Errorf("%d polls with nobody waiting", after-before)
	}
	// A need the router already knows met takes no poll at all.
	if err := w.wait(context.Background(), 900, time.Second, watchLogin); err != nil {
		t.Fatal(err)
	}
	if after := f.polls.Load(); after != before {
		t.Errorf("a wait the router knew met polled %d times", after-before)
	}
}

// TestReplayWatchEnds: a replica that does not replay far enough within
// the limit, one that is promoted, and one whose connection ends.
func TestReplayWatchEnds(t *testing.T) {
	f := newFakeReplica(t)
	r := watchRouter(f)
	w := r.replayWatch(1)
	f.lsn.Store(10)

	began := time.Now()
	err := w.wait(context.Background(), 20, 60*time.Millisecond, watchLogin)
	if !errors.Is(err, errReplayBehind) {
		t.Fatalf("wait past the limit: %v, want errReplayBehind", err)
	}
	if d := time.Since(began); d < 60*time.Millisecond || d > 2*time.Second {
		t.Errorf("the wait ended after %v, want about the limit of 60ms", d)
	}

	// Promoted: it has everything it will ever have.
	done := make(chan error, 1)
	go func() { done <- w.wait(context.Background(), 1<<40, 10*time.Second, watchLogin) }()
	time.Sleep(20 * time.Millisecond)
	f.promoted.Store(true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait on a promoted node: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a wait on a promoted node did not end")
	}
	f.promoted.Store(false)

	// The connection ends (a restart): the waiter gets an error (its read
	// runs on the primary), and the next wait dials again.
	go func() { done <- w.wait(context.Background(), 1<<40, 10*time.Second, watchLogin) }()
	time.Sleep(20 * time.Millisecond)
	f.cut()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, errReplayBehind) {
			t.Fatalf("wait across a lost connection: %v, want the connection's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a wait across a lost connection did not end")
	}
	f.lsn.Store(1 << 41)
	if err := w.wait(context.Background(), 1<<40, 5*time.Second, watchLogin); err != nil {
		t.Fatalf("wait after the connection ended: %v", err)
	}
	if n := f.logins.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (one dialled again after the first ended)", n)
	}

	// A position read before the router forgot the node (a rewind) does
	// not count after it.
	r.forget(1)
	if got := r.applied(1); got != 0 {
		t.Errorf("after forget the router knows %d applied, want 0", got)
	}
}
