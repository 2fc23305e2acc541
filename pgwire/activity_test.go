package pgwire

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
)

// roleBackend gives each session is_superuser by its user's name.
type roleBackend struct{}

type roleSession struct{ canceled atomic.Int32 }

func (roleBackend) NewSession(context.Context, string, string) (BackendSession, error) {
	return &roleSession{}, nil
}
func (roleBackend) ParameterStatus() [][2]string { return [][2]string{{"is_superuser", "off"}} }

func (*roleSession) Prepare(context.Context, string) (Statement, error) {
	return nil, errors.New("not used")
}
func (*roleSession) Execute(context.Context, Statement, []any) (Result, error) {
	return nil, errors.New("not used")
}
func (*roleSession) TxStatus() byte { return 'I' }
func (s *roleSession) Cancel()      { s.canceled.Add(1) }
func (*roleSession) Close() error   { return nil }

// TestSignalBackendPermissions: pg_terminate_backend / pg_cancel_backend
// follow PostgreSQL's rule: a superuser signals anyone; another role only
// its own role's sessions and never a superuser's (42501); a pid that
// names no session answers false.
func TestSignalBackendPermissions(t *testing.T) {
	e := &Executor{Backend: roleBackend{}}
	open := func(user string, super bool) *execSession {
		t.Helper()
		nc, peer := net.Pipe()
		t.Cleanup(func() { nc.Close(); peer.Close() })
		c := &Conn{Conn: nc, Framer: NewFramer(nc, nc, 1<<16), User: user, Database: "d",
			Params: map[string]string{"application_name": "app-" + user}, ProcessID: nextPID(), RemoteAddr: "127.0.0.1:5000"}
		s, err := e.Open(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		es := s.(*execSession)
		if super {
			es.params = withParam(es.params, "is_superuser", "on")
		}
		t.Cleanup(es.Close)
		return es
	}
	admin, alice, alice2, bob := open("admin", true), open("alice", false), open("alice", false), open("bob", false)
	pid := func(s *execSession) int64 { return int64(s.c.ProcessID) }
	for _, c := range []struct {
		name      string
		from, to  *execSession
		terminate bool
		ok        bool
		code      string
	}{
		{"own role's session, cancel", alice, alice2, false, true, ""},
		{"another role's session", alice, bob, false, false, CodeInsufficientPrivilege},
		{"a superuser's session", bob, admin, true, false, CodeInsufficientPrivilege},
		{"superuser cancels anyone", admin, bob, false, true, ""},
		{"own role's session, terminate", alice, alice2, true, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, err := SignalBackend(c.from, pid(c.to), c.terminate)
			var pe *Error
			switch {
			case c.code != "" && (!errors.As(err, &pe) || pe.Code != c.code):
				t.Fatalf("err = %v, want SQLSTATE %s", err, c.code)
			case c.code == "" && err != nil:
				t.Fatalf("err = %v", err)
			case ok != c.ok:
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
		})
	}
	if n := bob.bs.(*roleSession).canceled.Load(); n != 1 {
		t.Fatalf("bob's session was canceled %d times, want 1 (the superuser's)", n)
	}
	if e := alice2.killed.Load(); e == nil || e.Code != CodeAdminShutdown {
		t.Fatalf("alice's second session after pg_terminate_backend: %v, want 57P01", e)
	}
	if ok, err := SignalBackend(admin, 0x7ffffff0, true); ok || err != nil {
		t.Fatalf("no such pid: %v %v, want false", ok, err)
	}
	// pg_stat_activity's rows: each session once, with its name.
	seen := map[uint32]Activity{}
	for _, a := range Activities() {
		seen[a.PID] = a
	}
	for _, s := range []*execSession{admin, alice, alice2, bob} {
		a, ok := seen[s.c.ProcessID]
		if !ok || a.User != s.c.User || a.Application != "app-"+s.c.User || a.State != "idle" {
			t.Fatalf("activity of %s: %+v (listed %v)", s.c.User, a, ok)
		}
	}
}

// TestActivitiesWhileSessionsSet: pg_stat_activity read by one session
// while another changes its settings (SET application_name) reads only
// the activity entry, never the other session's settings map (go test
// -race; a concurrent map read and write would end the node's process).
func TestActivitiesWhileSessionsSet(t *testing.T) {
	e := &Executor{Backend: roleBackend{}}
	nc, peer := net.Pipe()
	defer nc.Close()
	defer peer.Close()
	c := &Conn{Conn: nc, Framer: NewFramer(nc, nc, 1<<16), User: "u", Params: map[string]string{}, ProcessID: nextPID()}
	s, err := e.Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	es := s.(*execSession)
	defer es.Close()
	done := make(chan struct{})
	go func() { // the session's own goroutine: SET, then ReadyForQuery
		defer close(done)
		for i := range 2000 {
			es.settings["application_name"] = "app" + string(rune('a'+i%26))
			es.idle('I')
		}
	}()
	for {
		select {
		case <-done:
			for _, a := range Activities() {
				if a.PID == c.ProcessID && a.Application != "app"+string(rune('a'+1999%26)) {
					t.Fatalf("application_name %q after the last SET", a.Application)
				}
			}
			return
		default:
			_ = Activities()
		}
	}
}
