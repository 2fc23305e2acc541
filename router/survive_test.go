package router

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/pgwire"
)

func TestStatementKinds(t *testing.T) {
	for _, c := range []struct {
		q                       string
		setting, rollback, comm bool
	}{
		{"SET statement_timeout = '7s'", true, false, false},
		{"  set search_path to app, public", true, false, false},
		{"SET LOCAL lock_timeout = 1", false, false, false},
		{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", false, false, false},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", false, false, false},
		{"SET SESSION work_mem = '8MB'", true, false, false},
		{"RESET ALL", true, false, false},
		{"DISCARD ALL", true, false, false},
		{"rollback", false, true, false},
		{"ROLLBACK;", false, true, false},
		{"abort", false, true, false},
		{"  Abort Work", false, true, false},
		{"ROLLBACK TO SAVEPOINT a", false, false, false},
		{"ROLLBACK PREPARED 'x'", false, false, false},
		{"commit", false, false, true},
		{"END", false, false, true},
		{"COMMIT PREPARED 'x'", false, false, false},
		{"  Commit;", false, false, true},
		{"commit work", false, false, true},
		{"END TRANSACTION", false, false, true},
		{"\n\tcommit\n", false, false, true},
		{"commit   prepared 'x'", false, false, false},
		{"committed", false, false, false},
		{"endless", false, false, false},
		{"COMMIT AND CHAIN", false, false, true},
		{"SELECT 1", false, false, false},
		{"", false, false, false},
	} {
		if got := isSetting(c.q); got != c.setting {
			t.Errorf("isSetting(%q) = %v", c.q, got)
		}
		if got := isRollback(c.q); got != c.rollback {
			t.Errorf("isRollback(%q) = %v", c.q, got)
		}
		if got := isCommit(c.q); got != c.comm {
			t.Errorf("isCommit(%q) = %v", c.q, got)
		}
	}
}

func TestQueryFrame(t *testing.T) {
	f := queryFrame("SET x = 1")
	if f[0] != 'Q' || int(f[4]) != len(f)-1 || f[len(f)-1] != 0 {
		t.Fatalf("queryFrame = %q", f)
	}
}

func TestIsBegin(t *testing.T) {
	for q, want := range map[string]bool{
		"BEGIN":                                true,
		"begin;":                               true,
		" BEGIN ISOLATION LEVEL SERIALIZABLE ": true,
		"START TRANSACTION READ ONLY":          true,
		"start  transaction":                   true,
		"BEGIN; INSERT INTO t VALUES (1)":      false,
		"START":                                false,
		"BEGINNING":                            false,
		"SELECT 1":                             false,
		"":                                     false,
		"begin work; commit":                   false,
	} {
		if got := isBegin(q); got != want {
			t.Errorf("isBegin(%q) = %v, want %v", q, got, want)
		}
	}
}

// fakePrimary is a server on a real socket that takes sessions without a
// password and answers every Sync or Query with ReadyForQuery: the node a
// surviving session moves to.
func fakePrimary(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				be := pgproto3.NewBackend(c, c)
				if _, err := be.ReceiveStartupMessage(); err != nil {
					return
				}
				be.Send(&pgproto3.AuthenticationOk{})
				be.Send(&pgproto3.ParameterStatus{Name: "in_hot_standby", Value: "off"})
				be.Send(&pgproto3.BackendKeyData{ProcessID: 2, SecretKey: []byte{0, 0, 0, 2}})
				be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
				if be.Flush() != nil {
					return
				}
				for {
					m, err := be.Receive()
					if err != nil {
						return
					}
					switch m.(type) {
					case *pgproto3.Sync, *pgproto3.Query:
						be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
						if be.Flush() != nil {
							return
						}
					case *pgproto3.Terminate:
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// pinnedSession starts a routed session of a pinned write port
// (Config.Survive without Split: every transaction on the primary) in
// transaction status txStatus, on the old primary n1's connection (up:
// the server's end; over TCP sockets the session runs on an epoll loop on
// Linux, over pipes on goroutines). n2 is a fakePrimary, where the session goes on
// once the router sees it the primary. Both nodes' admin addresses answer
// 404 (no session index: the outcome of a statement in flight cannot be
// asked, 08007).
func pinnedSession(t *testing.T, sockets bool, txStatus byte) (r *Router, cl, up net.Conn, done chan error) {
	t.Helper()
	admin := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(admin.Close)
	r = New(Config{Survive: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Nodes: []Upstream{
		{Node: "n1", Addr: "127.0.0.1:1", AdminURL: admin.URL + "/status"},
		{Node: "n2", Addr: fakePrimary(t), AdminURL: admin.URL + "/status"}}})
	pair := func() (net.Conn, net.Conn) {
		if sockets {
			return tcpPair(t)
		}
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}
	cl, routerClientSide := pair()
	routerUpSide, up := pair()
	pc := &pgwire.Conn{Conn: routerClientSide, Framer: pgwire.NewFramer(routerClientSide, routerClientSide, 1<<20), User: "u", Database: "d", RemoteAddr: "127.0.0.1:5"}
	s := r.newSplit(context.Background(), pc)
	s.conns[0] = &nodeConn{idx: 0, up: r.cfg.Nodes[0], conn: routerUpSide,
		fr: pgwire.NewFramer(routerUpSide, routerUpSide, 1<<20), stmts: map[string]uint64{}, done: make(chan struct{})}
	s.cur, s.txStatus = 0, txStatus
	done = make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	return r, cl, up, done
}

// bothPaths runs f for a routed session over pipes (goroutines) and over
// TCP sockets (an epoll loop on Linux).
func bothPaths(t *testing.T, f func(t *testing.T, sockets bool)) {
	t.Run("goroutines", func(t *testing.T) { f(t, false) })
	t.Run("sockets", func(t *testing.T) { f(t, true) })
}

// sendStatement sends one statement over the extended protocol, as pgx
// does (Parse of stmt unless "": a statement prepared before; Bind,
// Execute, Sync in one write), and returns the client's end.
func sendStatement(t *testing.T, cl net.Conn, stmt string) *pgproto3.Frontend {
	t.Helper()
	front := pgproto3.NewFrontend(cl, cl)
	if stmt != "" {
		front.Send(&pgproto3.Parse{Query: stmt})
	}
	front.Send(&pgproto3.Bind{Parameters: [][]byte{[]byte("1")}})
	front.Send(&pgproto3.Execute{})
	front.Send(&pgproto3.Sync{})
	if err := front.Flush(); err != nil {
		t.Fatal(err)
	}
	return front
}

// oldServerEnds is a server that reads a request up to its Sync, sends
// answer and a FATAL 57P01 in one write, and closes (a fence's
// pg_terminate_backend).
func oldServerEnds(up net.Conn, answer ...pgproto3.BackendMessage) {
	be := pgproto3.NewBackend(up, up)
	for {
		m, err := be.Receive()
		if err != nil {
			return
		}
		if _, ok := m.(*pgproto3.Sync); ok {
			break
		}
	}
	for _, m := range answer {
		be.Send(m)
	}
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: pgwire.CodeAdminShutdown, Message: "terminating connection due to administrator command"})
	_ = be.Flush() // one write
	up.Close()
}

// The old server answers a request in full and ends the session in the
// same write (a fence's pg_terminate_backend right after an INSERT
// committed): CommandComplete, ReadyForQuery, FATAL 57P01, end. The
// session keeps the FATAL from the client and, the router still seeing
// the node as the primary, waits to tell a failover from a session ended
// alone (settleHeld); the answer must reach the client meanwhile, without
// it asking again: it waits for it. Before the flush at the top of the
// readers' loops the two frames stayed in the router's buffer for good,
// and so did the client (e2e TestPhysicalExternalServers stalled 1 run in
// 10-30 after its switchover, on the survive relay that routed sessions
// replaced).
func TestSurviveAnswerBeforeFatalReachesClient(t *testing.T) {
	bothPaths(t, func(t *testing.T, sockets bool) {
		r, cl, up, done := pinnedSession(t, sockets, 'I')
		go oldServerEnds(up, &pgproto3.BindComplete{}, &pgproto3.CommandComplete{CommandTag: []byte("INSERT 0 1")}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
		front := sendStatement(t, cl, "")
		_ = cl.SetReadDeadline(time.Now().Add(5 * time.Second))
		var got []string
		for {
			m, err := front.Receive()
			if err != nil {
				t.Fatalf("after %v: %v (the answer the old server sent never reached the client)", got, err)
			}
			got = append(got, fmt.Sprintf("%T", m))
			if e, ok := m.(*pgproto3.ErrorResponse); ok {
				t.Fatalf("the client got %v: error %s %s, want the server's answer", got, e.Code, e.Message)
			}
			if _, ok := m.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
		// A failover: the session goes on, on the new primary. A Sync
		// that reaches the session before it settled the old
		// connection's end may be answered 40001 or 08007; the next one
		// is the new primary's.
		r.setRole("n2", "primary", 2)
		_ = cl.SetReadDeadline(time.Now().Add(10 * time.Second))
		clean := false
		for try := 0; try < 3 && !clean; try++ {
			front.Send(&pgproto3.Sync{})
			if err := front.Flush(); err != nil {
				t.Fatal(err)
			}
			clean = true
			for {
				m, err := front.Receive()
				if err != nil {
					t.Fatalf("the moved session: %v", err)
				}
				if e, ok := m.(*pgproto3.ErrorResponse); ok {
					if e.Code != codeResolutionUnknown && e.Code != codeSerialization {
						t.Fatalf("the moved session: %s %s", e.Code, e.Message)
					}
					clean = false
				}
				if _, ok := m.(*pgproto3.ReadyForQuery); ok {
					break
				}
			}
		}
		if !clean {
			t.Fatal("the moved session never answered a Sync from the new primary")
		}
		terminate(t, front, done)
	})
}

// A session's server ends it (a fence's pg_terminate_backend: FATAL 57P01)
// after the CommandComplete of its request and before the ReadyForQuery.
// A COMMIT's CommandComplete comes after the commit: the client is told
// only the missing ReadyForQuery. An INSERT's, outside a transaction,
// comes before its implicit transaction commits at the Sync, which the
// server's end may have cut short: the client must not take it for
// committed (here 08007: nothing can tell). Before endsTransaction every
// CommandComplete counted as a commit, and a switchover under writers
// lost an acknowledged INSERT (TestPhysicalExternalServers, 2026-12-07).
func TestSurviveCommandCompleteBeforeCommit(t *testing.T) {
	tests := []struct {
		name     string
		stmt     string
		txStatus byte
		tag      string
		wantCode string // "" : no error, the ReadyForQuery alone
	}{
		{"INSERT outside a transaction", "INSERT INTO t VALUES ($1)", 'I', "INSERT 0 1", codeResolutionUnknown},
		{"UPDATE outside a transaction", "UPDATE t SET v = $1", 'I', "UPDATE 3", codeResolutionUnknown},
		{"COMMIT of a transaction", "COMMIT", 'T', "COMMIT", ""},
		{"COMMIT of a failed transaction", "COMMIT", 'E', "ROLLBACK", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bothPaths(t, func(t *testing.T, sockets bool) {
				_, cl, up, done := pinnedSession(t, sockets, tt.txStatus)

				// The old server answers up to the CommandComplete, then
				// ends the session.
				go oldServerEnds(up, &pgproto3.ParseComplete{}, &pgproto3.BindComplete{}, &pgproto3.CommandComplete{CommandTag: []byte(tt.tag)})

				front := sendStatement(t, cl, tt.stmt)
				_ = cl.SetReadDeadline(time.Now().Add(10 * time.Second))
				var got []string
				code := ""
				for {
					m, err := front.Receive()
					if err != nil {
						t.Fatalf("after %v: %v", got, err)
					}
					switch m := m.(type) {
					case *pgproto3.ErrorResponse:
						code = m.Code
						got = append(got, "E "+m.Code)
					case *pgproto3.CommandComplete:
						got = append(got, "C "+string(m.CommandTag))
					case *pgproto3.ReadyForQuery:
						got = append(got, "Z "+string(m.TxStatus))
					default:
						got = append(got, fmt.Sprintf("%T", m))
					}
					if _, ok := m.(*pgproto3.ReadyForQuery); ok {
						break
					}
				}
				if code != tt.wantCode {
					t.Fatalf("the client got %v: error code %q, want %q", got, code, tt.wantCode)
				}
				if code == "" && got[len(got)-2] != "C "+tt.tag {
					t.Fatalf("the client got %v, want the server's CommandComplete then the ReadyForQuery", got)
				}
				terminate(t, front, done)
			})
		})
	}
}

// terminate ends the client's session with Terminate and waits for the
// session to end.
func terminate(t *testing.T, front *pgproto3.Frontend, done <-chan error) {
	t.Helper()
	front.Send(&pgproto3.Terminate{})
	_ = front.Flush()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end after Terminate")
	}
}
