package pgwire

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The sessions this process executes for (the Executor's), by process id:
// what pg_stat_activity shows on back ends tandem executes SQL for
// (SQLite), and whom pg_terminate_backend and pg_cancel_backend signal.
// A back end that speaks the protocol (PostgreSQL) has its own.

// Activity is one session as pg_stat_activity shows it.
type Activity struct {
	PID          uint32
	User         string
	Database     string
	Application  string
	ClientAddr   string
	ClientPort   int
	BackendStart time.Time
	XactStart    time.Time // zero: no transaction
	QueryStart   time.Time // zero: no statement yet
	StateChange  time.Time
	State        string // active, idle, idle in transaction, idle in transaction (aborted)
	Query        string // the running or last statement, at most maxActivityQuery bytes
}

// maxActivityQuery is PostgreSQL's track_activity_query_size default.
const maxActivityQuery = 1024

// activity is an execSession's entry (its own lock: the session's
// goroutine writes it, other sessions' queries read it).
type activity struct {
	mu                                       sync.Mutex
	state, query, app                        string
	backendStart, xactStart, queryStart, chg time.Time
}

var sessions = struct {
	sync.Mutex
	m map[uint32]*execSession
}{m: map[uint32]*execSession{}}

func register(s *execSession) {
	if s.c.ProcessID == 0 {
		return
	}
	now := time.Now()
	s.act.backendStart, s.act.chg, s.act.state, s.act.app = now, now, "idle", s.appName()
	sessions.Lock()
	sessions.m[s.c.ProcessID] = s
	sessions.Unlock()
}

func unregister(s *execSession) {
	sessions.Lock()
	if sessions.m[s.c.ProcessID] == s {
		delete(sessions.m, s.c.ProcessID)
	}
	sessions.Unlock()
}

// started notes a statement that begins to run (sql: its text).
func (s *execSession) started(sql string) {
	if len(sql) > maxActivityQuery {
		sql = strings.Clone(sql[:maxActivityQuery])
	}
	now := time.Now()
	a := &s.act
	a.mu.Lock()
	if a.xactStart.IsZero() {
		a.xactStart = now // a transaction begins with its first statement
	}
	a.state, a.query, a.queryStart, a.chg = "active", sql, now, now
	a.mu.Unlock()
}

// appName is the session's application_name (its goroutine only: SET
// changes the settings map).
func (s *execSession) appName() string {
	if v, ok := s.setting("application_name"); ok {
		return v
	}
	return s.c.Params["application_name"]
}

// idle notes a ReadyForQuery with transaction status tx (and the
// application_name a SET of the request may have changed).
func (s *execSession) idle(tx byte) {
	now := time.Now()
	app := s.appName()
	a := &s.act
	a.mu.Lock()
	a.app = app
	switch tx {
	case 'T':
		a.state = "idle in transaction"
	case 'E':
		a.state = "idle in transaction (aborted)"
	default:
		a.state, a.xactStart = "idle", time.Time{}
	}
	a.chg = now
	a.mu.Unlock()
}

func (s *execSession) activity() Activity {
	a := &s.act
	// Another session's goroutine: nothing of s but its activity entry
	// and what never changes after Open.
	r := Activity{PID: s.c.ProcessID, User: s.c.User, Database: s.c.Database}
	if host, port, err := net.SplitHostPort(s.c.RemoteAddr); err == nil {
		r.ClientAddr = host
		r.ClientPort, _ = strconv.Atoi(port)
	} else if s.c.RemoteAddr != "" {
		r.ClientPort = -1 // a Unix socket, as PostgreSQL shows it
	}
	a.mu.Lock()
	r.BackendStart, r.XactStart, r.QueryStart, r.StateChange = a.backendStart, a.xactStart, a.queryStart, a.chg
	r.State, r.Query, r.Application = a.state, a.query, a.app
	a.mu.Unlock()
	return r
}

// Activities is every session of the process, by process id.
func Activities() []Activity {
	sessions.Lock()
	all := make([]*execSession, 0, len(sessions.m))
	for _, s := range sessions.m {
		all = append(all, s)
	}
	sessions.Unlock()
	out := make([]Activity, 0, len(all))
	for _, s := range all {
		out = append(out, s.activity())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// BackendPID is the process id of the session whose statement runs (the
// Settings a back end was handed): pg_backend_pid().
func (s *execSession) BackendPID() uint32 { return s.c.ProcessID }

// SignalBackend is pg_terminate_backend (terminate) or pg_cancel_backend
// for the session pid, asked by the session whose Settings caller are. As
// in PostgreSQL: false with a warning-free answer when no such session
// exists, 42501 when the caller may not (a role that is not a superuser
// signals only its own role's sessions, and never a superuser's).
func SignalBackend(caller Settings, pid int64, terminate bool) (bool, error) {
	sessions.Lock()
	target := sessions.m[uint32(pid)]
	sessions.Unlock()
	if pid <= 0 || pid > 0x7fffffff || target == nil {
		return false, nil
	}
	if from, ok := caller.(*execSession); ok {
		su := func(s *execSession) bool { // the role's, as announced at startup
			for _, kv := range s.params {
				if kv[0] == "is_superuser" {
					return kv[1] == "on"
				}
			}
			return false
		}
		what := "cancel"
		if terminate {
			what = "terminate"
		}
		switch {
		case su(from):
		case su(target):
			return false, &Error{Code: CodeInsufficientPrivilege, Message: fmt.Sprintf("permission denied to %s process", what),
				Detail: fmt.Sprintf("Only roles with the SUPERUSER attribute may %s processes of roles with the SUPERUSER attribute.", what)}
		case from.c.User != target.c.User:
			return false, &Error{Code: CodeInsufficientPrivilege, Message: fmt.Sprintf("permission denied to %s process", what),
				Detail: fmt.Sprintf("Only roles with privileges of the role whose process is being %s may %s this process.", map[bool]string{true: "terminated", false: "canceled"}[terminate], what)}
		}
	}
	if terminate {
		target.terminate(Errorf(CodeAdminShutdown, "terminating connection due to administrator command"))
	} else {
		target.bs.Cancel()
	}
	return true, nil
}
