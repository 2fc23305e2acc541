package router

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/pgwire"
)

// ErrUpstreamDown means the node (or its back end) could not be reached.
var ErrUpstreamDown = errors.New("upstream unavailable")

// Upstream is a PostgreSQL-protocol endpoint a session is relayed to: a
// PostgreSQL server, or a tandem node serving SQLite.
type Upstream struct {
	Node     string // node id, for messages
	Addr     string // host:port, or the Unix socket path /dir/.s.PGSQL.port
	Admin    string // the node's admin (metrics) address: health and role
	User     string // "" means the client's user
	Password string
	// PasswordFor, when set, gives the password for the role a session
	// logs in as (router.direct in clear text: one per role).
	PasswordFor func(user string) string
	Database    string // "" means the client's database
	// TLS, when set, encrypts the hop and presents tandem's certificate
	// (the node lets the router in by it); AdminToken goes with /status.
	TLS        *tls.Config
	AdminToken string
	// AdminURL is the node's /status URL (https off loopback), AdminTLS
	// the client configuration for it (nil: plain HTTP).
	AdminURL string
	AdminTLS *tls.Config
	// Settings are run-time settings every session starts with (the
	// client's startup parameters and SET override them): the cluster
	// file's idle timeouts, which the server then enforces.
	Settings map[string]string
}

// frontend message types a client may send after startup.
var frontendTypes = [256]bool{'B': true, 'C': true, 'd': true, 'c': true, 'f': true, 'D': true, 'E': true, 'H': true, 'F': true, 'P': true, 'p': true, 'Q': true, 'S': true, 'X': true}

// startup parameters that are not forwarded as run-time settings.
var notForwarded = map[string]bool{"user": true, "database": true, "replication": true}

// relay passes a client's messages to an upstream and the answers back,
// frame by frame, without re-encoding. It tracks the transaction status
// from ReadyForQuery so the router knows when a session is idle.
type relay struct {
	log      *slog.Logger
	up       Upstream
	client   *pgwire.Conn
	conn     net.Conn
	upFr     *pgwire.Framer
	pid      uint32
	secret   []byte
	params   [][2]string
	wmu      sync.Mutex // client writes
	txStatus atomic.Uint32
	closing  atomic.Bool
	maxMsg   int
	// readTimeout: see Config.MessageReadTimeout.
	readTimeout time.Duration
	polled      atomic.Bool            // the session runs on an epoll loop
	paths       *prometheus.CounterVec // Router.paths (nil in tests)
	// onLost is told when the upstream connection ended without a
	// Terminate. That is evidence about this session (the server may have
	// ended just this connection: pg_terminate_backend, a protocol error it
	// answered), not about the node: the router probes the node afresh.
	onLost func(node string, err error)

	// Surviving a failover (survive.go): the session's memory, how to find
	// the primary now, and under upMu the upstream (conn, upFr, up, pid,
	// secret may be replaced) with what is in flight on it.
	survive       bool
	pick          func() (Upstream, NodeStatus)
	changes       func() <-chan struct{} // closed at the next change of a node role or health
	mem           *sessionMemory
	ctx           context.Context
	upMu          sync.Mutex // the upstream and lostTx, owe; held by the client side while it writes
	trackMu       sync.Mutex // what is in flight; never held during I/O
	pendingSyncs  int        // sync points (Query, Sync) sent and not yet answered
	unsynced      bool       // messages sent after the last sync point
	commitPending bool       // a COMMIT is among what is in flight
	lostTx        bool       // the open transaction was lost: 40001 until the client rolls back
	owe           string
	// heldFatal: the server's FATAL 57P01/57P02, kept from the client
	// until the connection's end says whether it was a failover's
	// (upstreamToClient's goroutine only).
	heldFatal []byte
	// lostCommit: a COMMIT of the lost transaction is among the
	// absorbed messages since the last Sync (under upMu).
	lostCommit bool
	lostFrom   string // the node whose connection a lost transaction was on
	// tag names the session to the nodes (pgwire.SessionTagParam);
	// commitGSN is the GSN of its last acknowledged commit (the nodes
	// report it, the relay keeps it from the client); ackSeen and ccSeen:
	// a commit acknowledgement, a COMMIT's or ROLLBACK's CommandComplete
	// (endsTransaction), since the only sync point in flight was sent
	// (under trackMu).
	tag       string
	commitGSN uint64
	ackSeen   bool
	ccSeen    bool
	// lsn (the physical engine): a COMMIT that begins a request goes with
	// xactQuery; xact is its answer (under trackMu), swallowing the
	// number of its answers still to keep from the client.
	lsn        bool
	xact       xactRef
	swallowing atomic.Int32
	// xactReady: xactStmt is prepared on the server connection (under
	// trackMu).
	xactReady bool
	// reqRead: every statement the request in flight runs is a plain
	// SELECT (fastRead); reqBegin: it begins with BEGIN (so, without a
	// COMMIT, it commits nothing).
	reqRead, reqBegin bool
	// cur is the node and server connection the session is on now (for
	// abandon, from the router's goroutines); untrack removes the session
	// from the router's registry when it ends.
	cur     atomic.Pointer[upstreamNow]
	untrack func()
}

type upstreamNow struct {
	node string
	conn net.Conn
}

// abandon closes the session's server connection when it is on node: the
// reader sees it end and moves the session (survive). It reports whether
// it did.
func (r *relay) abandon(node string) bool {
	cur := r.cur.Load()
	if cur == nil || cur.node != node || r.closing.Load() {
		return false
	}
	cur.conn.Close()
	return true
}

// ClientTransport is the front door's pgwire.Config.TLSTransport: a TLS
// client's connection is made over a transport the epoll loops can take
// over, so that its session is relayed there as a clear-text client's is
// (looptls_linux.go).
func ClientTransport(c net.Conn) net.Conn { return loopable(c) }

func dialUpstream(ctx context.Context, up Upstream, client *pgwire.Conn, maxMsg int, tag string) (*pgconn.HijackedConn, error) {
	user, db := up.User, up.Database
	if user == "" {
		user = client.User
	}
	if db == "" {
		db = client.Database
	}
	host, port, err := splitAddr(up.Addr)
	if err != nil {
		return nil, fmt.Errorf("upstream address %q: %w", up.Addr, err)
	}
	cfg, err := pgconn.ParseConfig(fmt.Sprintf("host=%s port=%s sslmode=disable", host, port))
	if err != nil {
		return nil, err
	}
	cfg.User, cfg.Password, cfg.Database = user, up.Password, db
	if up.PasswordFor != nil {
		cfg.Password = up.PasswordFor(user)
	}
	if up.TLS != nil {
		cfg.TLSConfig = up.TLS.Clone()
		// Over a connection the relay can later drive from an epoll
		// loop (looptls_linux.go); the handshake is pgconn's as before.
		dial := cfg.DialFunc
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return loopable(c), nil
		}
	}
	cfg.ConnectTimeout = 5 * time.Second
	for k, v := range up.Settings {
		cfg.RuntimeParams[k] = v
	}
	for k, v := range client.Params {
		if !notForwarded[k] {
			cfg.RuntimeParams[k] = v
		}
	}
	if tag != "" {
		cfg.RuntimeParams[pgwire.SessionTagParam] = tag
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pc, err := pgconn.ConnectConfig(cctx, cfg)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return nil, pe // authentication and similar: the client sees the server's words
		}
		return nil, &pgwire.Error{Severity: "FATAL", Code: pgwire.CodeCannotConnectNow,
			Message: fmt.Sprintf("tandem: node %s at %s is not reachable: %v", up.Node, up.Addr, errors.Unwrap(err)),
			Hint:    "the node may be down; check `tandem status` and retry", Err: ErrUpstreamDown}
	}
	if err := pc.SyncConn(cctx); err != nil {
		pc.Close(context.Background())
		return nil, err
	}
	return pc.Hijack()
}

func newRelay(ctx context.Context, log *slog.Logger, up Upstream, client *pgwire.Conn, maxMsg int, onLost func(string, error), tag string) (*relay, error) {
	hc, err := dialUpstream(ctx, up, client, maxMsg, tag)
	if err != nil {
		return nil, err
	}
	if tc, ok := hc.Conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	r := &relay{log: log, up: up, client: client, conn: hc.Conn, pid: hc.PID, secret: hc.SecretKey, onLost: onLost, maxMsg: maxMsg, tag: tag}
	r.cur.Store(&upstreamNow{node: up.Node, conn: hc.Conn})
	r.upFr = pgwire.NewFramer(hc.Conn, hc.Conn, maxMsg)
	names := make([]string, 0, len(hc.ParameterStatuses))
	for k := range hc.ParameterStatuses {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		r.params = append(r.params, [2]string{k, hc.ParameterStatuses[k]})
	}
	r.txStatus.Store('I')
	return r, nil
}

func (r *relay) ParameterStatus() [][2]string { return r.params }

// countPath counts the session under how it is relayed.
func (r *relay) countPath(path string) {
	if r.paths != nil {
		r.paths.WithLabelValues(path).Inc()
	}
}

// Serve relays until either side leaves.
func (r *relay) Serve(ctx context.Context) error {
	r.ctx = ctx
	if r.untrack != nil {
		defer r.untrack()
	}
	if !r.survive {
		if ok, err := r.servePoll(ctx); ok {
			return err
		}
	}
	r.countPath("goroutines")
	done := make(chan error, 1)
	go func() { done <- r.upstreamToClient() }()
	err := r.clientToUpstream()
	if err != nil && !r.closing.Load() {
		// The client vanished without Terminate: stop what it may have
		// left running (the server notices a closed socket only when it
		// next writes).
		go r.Cancel()
	}
	r.closing.Store(true)
	r.upMu.Lock()
	r.conn.Close() // the back end rolls back an open transaction and frees its locks
	r.upMu.Unlock()
	<-done
	return err
}

// readClient reads the client's next message, with readTimeout from its
// first byte to its last.
func (r *relay) readClient() (byte, []byte, error) {
	c := r.client
	if r.readTimeout <= 0 {
		return c.ReadFrame()
	}
	if c.Buffered() == 0 {
		if err := c.WaitInput(); err != nil {
			return 0, nil, err
		}
	}
	if c.FrameBuffered() {
		return c.ReadFrame()
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(r.readTimeout))
	typ, frame, err := c.ReadFrame()
	_ = c.Conn.SetReadDeadline(time.Time{})
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		r.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation,
			Message: fmt.Sprintf("terminating connection: a message was begun and not finished within message_read_timeout (%s)", pgwire.FormatTimeout(r.readTimeout))})
		return 0, nil, fmt.Errorf("%w: %w", pgwire.ErrMessageTimeout, err)
	}
	return typ, frame, err
}

func (r *relay) clientToUpstream() error {
	c := r.client
	for {
		typ, frame, err := r.readClient()
		if err != nil {
			if errors.Is(err, pgwire.ErrMessageTooLarge) || errors.Is(err, pgwire.ErrMalformed) {
				r.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation, Message: "tandem: " + err.Error()})
			}
			if errors.Is(err, pgwire.ErrOutOfMemory) {
				// The server is mid-conversation: the relay cannot answer
				// for it, so the session ends (limits.message_memory).
				r.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeOutOfMemory, Message: "tandem: " + err.Error()})
			}
			return err
		}
		if !frontendTypes[typ] {
			r.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation, Message: fmt.Sprintf("tandem: invalid frontend message type %d", typ)})
			return fmt.Errorf("%w: message type %d", pgwire.ErrMalformed, typ)
		}
		if typ == 'X' {
			// The server closes after Terminate: that EOF is the end of
			// the session, not a failed node.
			r.closing.Store(true)
			r.upMu.Lock()
			r.upFr.AppendRaw(frame)
			_ = r.upFr.Flush()
			r.upMu.Unlock()
			return nil
		}
		if r.survive {
			r.upMu.Lock()
			if (r.lostTx || r.owe != "") && r.absorb(typ, frame) {
				r.upMu.Unlock()
				continue
			}
			if r.track(typ, frame) {
				r.trackMu.Lock()
				ready := r.xactReady
				r.trackMu.Unlock()
				r.upFr.AppendRaw(xactFrames(ready))
				r.swallowing.Add(1)
			}
		}
		var werr error
		if len(frame) >= pgwire.OwnedFrameBytes {
			// A large message goes on as it is, not copied.
			werr = r.upFr.WriteDirect(frame)
		} else {
			r.upFr.AppendRaw(frame)
			if c.Buffered() == 0 || r.upFr.Pending() > 64<<10 {
				werr = r.upFr.Flush()
			}
		}
		if r.survive {
			r.upMu.Unlock()
			continue // upstream gone: the other direction moves the session
		}
		if werr != nil {
			return nil // upstream gone: the other direction reports it
		}
	}
}

// track notes what a client message sets up and what it leaves in flight
// (survive; under upMu). It reports whether xactQuery goes before the
// message: a COMMIT that begins a request inside a transaction, on the
// physical engine.
func (r *relay) track(typ byte, frame []byte) (xact bool) {
	r.mem.remember(typ, frame)
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	begins := r.pendingSyncs == 0 && !r.unsynced
	if begins {
		r.ackSeen, r.ccSeen = false, false // a new request begins
		r.xact = xactRef{}
		r.reqRead = true // until a message of it is not a plain SELECT
		r.reqBegin = false
	}
	switch typ {
	case 'Q':
		q, _ := cstring(frame[5:])
		if r.lsn && mentionsDeallocate(q) {
			r.xactReady = false
		}
		r.pendingSyncs++
		r.unsynced = false
		r.reqRead = r.reqRead && fastRead(q)
		r.reqBegin = r.reqBegin || begins && isBegin(q)
		if isCommit(q) {
			r.commitPending = true
			xact = begins && r.lsn && r.txStatus.Load() == 'T'
		}
	case 'S':
		r.pendingSyncs++
		r.unsynced = false
	case 'P':
		// What the statement is was noted by remember; what runs is the
		// Bind's. xactQuery goes before a Parse of COMMIT: between it
		// and its Bind it would leave the unnamed portal its own.
		name, rest := cstringT(frame[5:])
		if q, _ := cstringT(rest); r.lsn && mentionsDeallocate(q) {
			r.xactReady = false
		}
		if r.mem.kind(name).commit {
			r.commitPending = true
			xact = begins && r.lsn && r.txStatus.Load() == 'T'
		}
		r.unsynced = true
	case 'B':
		// The statement bound here runs: a COMMIT prepared once and
		// bound every time (pgjdbc) is a COMMIT too.
		_, rest := cstringT(frame[5:])
		stmt, _ := cstringT(rest)
		k := r.mem.kind(stmt)
		r.reqBegin = r.reqBegin || begins && k.begin
		if k.commit {
			r.commitPending = true
			xact = begins && r.lsn && r.txStatus.Load() == 'T'
		}
		r.reqRead = r.reqRead && k.read
		r.unsynced = true
	case 'H':
	case 'E', 'D', 'C':
		r.unsynced = true
	default:
		r.reqRead = false
		r.unsynced = true
	}
	r.xact.asked = r.xact.asked || xact
	return xact
}

// absorb answers, without the server, a client message that belongs to
// work a failover took away (survive; under upMu): the lost transaction's
// statements until the client rolls back, and messages after a lost
// unsynced batch until its Sync. It reports false for a message to send
// on (the client's ROLLBACK).
func (r *relay) absorb(typ byte, frame []byte) bool {
	answer := func() {
		code := r.owe
		if code == "" {
			code = codeSerialization
		}
		r.owe = ""
		status := byte('I')
		if r.lostTx {
			status = 'E'
		}
		r.wmu.Lock()
		r.client.Append(pgwire.ToErrorResponse(failoverError(code, r.lostFrom, r.up.Node)))
		r.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, status})
		_ = r.client.Flush()
		r.wmu.Unlock()
	}
	// A COMMIT of the lost transaction ends it, as a COMMIT that fails
	// does on PostgreSQL (40001 at commit, then no transaction): the
	// client is told it did not commit and its next statement runs.
	switch typ {
	case 'Q':
		q, _ := cstring(frame[5:])
		if r.lostTx && isRollback(q) {
			r.lostTx, r.owe, r.lostCommit = false, "", false
			return false
		}
		if r.lostTx && isCommit(q) {
			r.lostTx = false
		}
		answer()
		return true
	case 'P':
		_, rest := cstring(frame[5:])
		q, _ := cstring(rest)
		if r.lostTx && isRollback(q) {
			r.lostTx, r.owe, r.lostCommit = false, "", false
			return false
		}
		if r.lostTx && isCommit(q) {
			r.lostCommit = true
		}
		return true
	case 'B':
		// pgjdbc's COMMIT and ROLLBACK, prepared once by name.
		_, rest := cstring(frame[5:])
		name, _ := cstring(rest)
		if !r.lostTx || name == "" {
			return true
		}
		switch k := r.mem.kind(name); {
		case k.rollback:
			r.lostTx, r.owe, r.lostCommit = false, "", false
			return false
		case k.commit:
			r.lostCommit = true
		}
		return true
	case 'S':
		if r.lostCommit {
			r.lostTx, r.lostCommit = false, false
		}
		answer()
		return true
	}
	return true
}

// moveSession continues the session on the primary the router knows now
// after its connection ended (survive). It answers what was in flight and
// reports false when no primary took the session.
//
// ended: the server ended the session with FATAL 57P01/57P02 (held). If
// the node it was on is still the primary and takes a new session, the
// server ended this one alone (pg_terminate_backend), not a failover:
// it is not moved, and it ends with the server's FATAL.
func (r *relay) moveSession(cause error, ended bool) bool {
	r.conn.Close() // a client-side write blocked on the old connection fails now
	// What the old server answered goes to the client now, not after the
	// new primary is found (up to rerouteWait).
	r.wmu.Lock()
	_ = r.client.Flush()
	r.wmu.Unlock()
	r.upMu.Lock()
	defer r.upMu.Unlock()
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	old := r.up.Node
	nr, err := r.reconnect(r.ctx, rerouteWait)
	if err != nil {
		r.log.Warn("a session's node is gone and no primary took the session over", "node", old, "err", err, "cause", cause)
		return false
	}
	if ended && nr.up.Node == old {
		nr.conn.Close()
		r.log.Info("the server ended a session while its node stays primary; the session ends with it", "node", old)
		return false
	}
	// What the client side appended to the old connection and did not
	// send (a batch it was between the messages of), for the log.
	dropped := r.upFr.Pending()
	r.conn, r.upFr, r.up, r.pid, r.secret = nr.conn, nr.upFr, nr.up, nr.pid, nr.secret
	r.cur.Store(&upstreamNow{node: nr.up.Node, conn: nr.conn})
	r.swallowing.Store(0) // an answer to xactQuery the old connection never gave
	r.xactReady = false   // a new server connection (trackMu is held)
	status := byte(r.txStatus.Load())
	wasTx := status != 'I'
	r.txStatus.Store('I')
	if r.pendingSyncs == 1 && !r.unsynced && (r.commitPending && wasTx || !wasTx) {
		// One COMMIT, or one statement outside a transaction, in flight:
		// resolve it instead of answering 08007.
		r.resolveCommit(old, status, !wasTx)
		r.log.Info("session moved to the new primary; its COMMIT in flight was resolved", "from", old, "to", r.up.Node)
		r.pendingSyncs, r.commitPending, r.lostTx, r.owe = 0, false, false, ""
		return true
	}
	for i := 0; i < r.pendingSyncs; i++ {
		code := codeResolutionUnknown // a statement outside a transaction, or a COMMIT: outcome unknown
		status := byte('I')
		if wasTx && !r.commitPending {
			code, status = codeSerialization, 'E'
		}
		r.wmu.Lock()
		r.client.Append(pgwire.ToErrorResponse(failoverError(code, old, r.up.Node)))
		r.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, status})
		_ = r.client.Flush()
		r.wmu.Unlock()
	}
	r.lostTx, r.lostCommit, r.lostFrom = wasTx && !r.commitPending, false, old
	if r.unsynced {
		r.owe = codeResolutionUnknown
		if r.lostTx {
			r.owe = codeSerialization
		}
	}
	r.log.Info("session moved to the new primary", "from", old, "to", r.up.Node, "answered_in_flight", r.pendingSyncs, "transaction_lost", r.lostTx,
		"unsynced", r.unsynced, "unsent_bytes", dropped)
	r.pendingSyncs, r.unsynced, r.commitPending = 0, false, false
	return true
}

// resolveCommit answers the one COMMIT that was in flight when the
// session's node died (under upMu and trackMu): see inFlightAnswer.
func (r *relay) resolveCommit(old string, status byte, autocommit bool) {
	msgs := inFlightAnswer(old, status, autocommit, r.reqRead || r.reqBegin && !r.commitPending, r.ccSeen, r.ackSeen, r.lsn, func() (string, bool, error) {
		ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
		defer cancel()
		var x *xactRef
		if r.lsn {
			x = &r.xact
		}
		applied, err := committedOn(ctx, r.up, r.tag, r.commitGSN, x)
		return r.up.Node, applied, err
	}, r.log)
	r.wmu.Lock()
	for _, m := range msgs {
		r.client.Append(m)
	}
	r.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, 'I'})
	_ = r.client.Flush()
	r.wmu.Unlock()
}

// endsTransaction reports whether a CommandComplete frame is a COMMIT's or
// a ROLLBACK's, which the server sends once the transaction has ended (a
// COMMIT's after its commit, a synchronous standby's confirmation
// included). Another statement's does not tell: outside a transaction
// block the extended protocol commits the statement's implicit
// transaction at the Sync after its CommandComplete (PostgreSQL's
// exec_execute_message; pgwire's implicit.go alike), and a simple Query
// of several statements commits after the last one's. A server that
// ends the session between the two (a fence's pg_terminate_backend)
// rolls the statement back after the client saw its CommandComplete.
func endsTransaction(frame []byte) bool {
	if len(frame) < 6 {
		return false
	}
	tag, _ := cstringT(frame[5:])
	return tag == "COMMIT" || tag == "ROLLBACK"
}

// inFlightAnswer is what a client is told of the one COMMIT (or statement
// outside a transaction) that was in flight when node old died, wherever
// that is known; the ReadyForQuery follows it.
//
//   - The CommandComplete of the COMMIT (or of the ROLLBACK a failed
//     transaction's COMMIT gets) was already relayed (ccSeen,
//     endsTransaction): the transaction ended as it says; only the
//     ReadyForQuery is missing. A statement's own CommandComplete does not
//     count: its implicit transaction commits after it.
//   - A request outside a transaction that changed nothing (noEffect:
//     plain SELECTs, no function call, no locking clause,
//     router/classify.go; or a BEGIN and statements after it, no COMMIT):
//     40001, retry it (on the physical engine nothing else could tell).
//   - The node reported the commit's GSN (ackSeen): COMMIT.
//   - The transaction had failed (status E): PostgreSQL answers ROLLBACK.
//   - Otherwise ask (the primary now, for the session's highest GSN;
//     ask names the node it asked):
//     past the last one the session was told of, it was applied (COMMIT);
//     not past it, it was not (40001: retry), unless the primary is the
//     node whose connection ended (it lives: the commit may still be
//     finishing there, 08007) and the answer is not definite (the
//     physical engine's is: pg_xact_status said aborted); unknown, 08007.
func inFlightAnswer(old string, status byte, autocommit, noEffect, ccSeen, ackSeen, definite bool, ask func() (string, bool, error), log *slog.Logger) []pgproto3.BackendMessage {
	cc := func(tag string) pgproto3.BackendMessage { return &pgproto3.CommandComplete{CommandTag: []byte(tag)} }
	committedUnknownTag := func() pgproto3.BackendMessage {
		return pgwire.ToErrorResponse(&pgwire.Error{Code: codeResolutionUnknown,
			Message: fmt.Sprintf("tandem: the session's connection to node %s ended after this statement committed but before its result was sent; the result is lost", old),
			Hint:    "do not retry it: its changes are there", Err: ErrFailover})
	}
	switch {
	case ccSeen:
		return nil
	case noEffect && autocommit:
		return []pgproto3.BackendMessage{pgwire.ToErrorResponse(&pgwire.Error{Code: codeSerialization,
			Message: fmt.Sprintf("tandem: the session's connection to node %s ended while this request ran; it changed nothing (plain SELECTs, or a transaction it began and did not commit)", old),
			Hint:    "retry it", Err: ErrFailover})}
	case ackSeen && autocommit:
		return []pgproto3.BackendMessage{committedUnknownTag()}
	case ackSeen:
		return []pgproto3.BackendMessage{cc("COMMIT")}
	case status == 'E':
		return []pgproto3.BackendMessage{cc("ROLLBACK")}
	}
	now, applied, err := ask()
	what := "COMMIT"
	if autocommit {
		what = "statement"
	}
	switch {
	case err != nil:
		log.Info("a statement in flight at a failover stays unresolved", "err", err)
		return []pgproto3.BackendMessage{pgwire.ToErrorResponse(failoverError(codeResolutionUnknown, old, now))}
	case applied && autocommit:
		return []pgproto3.BackendMessage{committedUnknownTag()}
	case applied:
		return []pgproto3.BackendMessage{cc("COMMIT")}
	case now == old && !definite:
		return []pgproto3.BackendMessage{pgwire.ToErrorResponse(failoverError(codeResolutionUnknown, old, now))}
	}
	return []pgproto3.BackendMessage{pgwire.ToErrorResponse(&pgwire.Error{Code: codeSerialization,
		Message: didNotTakeEffect(old, now, what),
		Hint:    "retry it", Err: ErrFailover})}
}

// didNotTakeEffect says that the request in flight when the session's
// connection to node old ended did not take effect, as the primary now
// answered.
func didNotTakeEffect(old, now, what string) string {
	if now == old {
		return fmt.Sprintf("tandem: the session's connection to node %s ended before this %s was acknowledged, and the node has no change of it: it did not take effect", old, what)
	}
	return fmt.Sprintf("tandem: the session's connection to node %s ended (a failover) before this %s was acknowledged, and the new primary %s has no change of it: it did not take effect", old, what, now)
}

func (r *relay) upstreamToClient() error {
	c := r.client
	// fatalSent: a FATAL of the server's reached the client, which takes
	// the connection for ended (pgx and pgjdbc close it); the session
	// cannot go on on another server connection.
	fatalSent := false
	for {
		if r.upFr.Buffered() == 0 {
			// The next read may block: what the client was given goes out
			// first, once per batch of the server's answers. The last
			// frame buffered may have been one kept from it (a held
			// FATAL, tandem's own ParameterStatus, xactQuery's answer)
			// after frames it waits for: a fenced server's FATAL right
			// behind an INSERT's CommandComplete and ReadyForQuery left
			// them unsent while the session moved, and the client waited
			// for them for good.
			r.wmu.Lock()
			var ferr error
			if c.Pending() > 0 {
				ferr = c.Flush()
			}
			r.wmu.Unlock()
			if ferr != nil {
				return nil
			}
		}
		typ, frame, err := r.upFr.ReadFrame()
		if err != nil {
			if r.closing.Load() {
				return nil
			}
			r.log.Info("a session's connection to its node ended", "node", r.up.Node, "addr", r.up.Addr, "err", err)
			if r.onLost != nil {
				r.onLost(r.up.Node, err)
			}
			held := r.heldFatal
			r.heldFatal = nil
			if r.survive && !fatalSent && !errors.Is(err, pgwire.ErrMessageTooLarge) && r.moveSession(err, held != nil) {
				continue
			}
			switch {
			case held != nil:
				// The server's own reason, which the session ends with.
				r.wmu.Lock()
				c.AppendRaw(held)
				_ = c.Flush()
				r.wmu.Unlock()
			case !fatalSent:
				// A FATAL the client already has says why; a second one
				// from tandem would only blur it.
				r.fatal(lostError(r.up.Node))
			}
			c.Conn.Close()
			return err
		}
		if r.swallowing.Load() > 0 {
			// xactQuery's answer: kept from the client.
			r.trackMu.Lock()
			if typ == 'E' {
				r.log.Warn("the query naming a COMMIT's transaction failed: the transaction is aborted and its COMMIT gets this error", "node", r.up.Node, "err", errorFrom(frame))
			}
			if xactStep(&r.xact, &r.xactReady, typ, frame) {
				r.swallowing.Add(-1)
			}
			r.trackMu.Unlock()
			continue
		}
		if typ == 'C' && r.lsn {
			r.trackMu.Lock()
			frame = xactRollback(&r.xact, typ, frame)
			r.trackMu.Unlock()
		}
		if r.survive && typ == 'S' && r.tag != "" {
			name, rest := cstringT(frame[5:])
			if name == pgwire.CommitGSNParam {
				v, _ := cstringT(rest)
				if g, err := strconv.ParseUint(v, 10, 64); err == nil {
					r.trackMu.Lock()
					r.commitGSN, r.ackSeen = g, true
					r.trackMu.Unlock()
				}
				continue // tandem's own: not for the client
			}
			if name == pgwire.ReadGSNParam || name == pgwire.AppliedGSNSetting {
				continue // read consistency's (txroute.go): not for the client
			}
		}
		if r.survive && typ == 'C' && endsTransaction(frame) {
			r.trackMu.Lock()
			r.ccSeen = true
			r.trackMu.Unlock()
		}
		if r.survive && typ == 'E' && shutdownFatal(frame) {
			// The server ended the session (a shutdown, the fence's
			// pg_terminate_backend, a crash; or the node's relay lost
			// its server) while a COMMIT was in flight: the FATAL does
			// not say whether it committed (one waiting for a standby
			// had committed locally). The connection's end, which
			// follows, resolves it as at a failover (moveSession). Any
			// other request keeps PostgreSQL's answer: an operator who
			// ends a session running a long statement means it.
			r.trackMu.Lock()
			resolvable := r.pendingSyncs == 1 && !r.unsynced && r.commitPending && byte(r.txStatus.Load()) != 'I'
			r.trackMu.Unlock()
			if resolvable {
				r.log.Info("the server ended a session with a COMMIT in flight; it is resolved as at a failover", "node", r.up.Node, "err", errorFrom(frame))
				continue
			}
			// Held until the connection ends: a failover's (the old
			// primary fenced or shut down) is dropped and the session
			// moves on; if the node stays primary and takes sessions,
			// the server ended this one (pg_terminate_backend: an
			// operator who ends a session means it) and it ends with it.
			if r.heldFatal == nil {
				r.heldFatal = append([]byte(nil), frame...)
			}
			continue
		}
		if typ == 'E' && isFatal(frame) {
			fatalSent = true
		}
		if typ == 'Z' && len(frame) == 6 {
			r.txStatus.Store(uint32(frame[5]))
			if r.survive {
				r.trackMu.Lock()
				if r.pendingSyncs > 0 {
					r.pendingSyncs--
				}
				if r.pendingSyncs == 0 {
					r.commitPending = false
				}
				r.trackMu.Unlock()
			}
		}
		c.AppendRaw(frame)
		// Nothing more buffered: the top of the loop flushes.
		if c.Pending() > 64<<10 {
			r.wmu.Lock()
			err := c.Flush()
			r.wmu.Unlock()
			if err != nil {
				return nil
			}
		}
	}
}

// lostError is what a client is told when its session's connection to the
// node ended: this session only; a new one may well succeed.
func lostError(node string) *pgwire.Error {
	return &pgwire.Error{Severity: "FATAL", Code: pgwire.CodeAdminShutdown,
		Message: fmt.Sprintf("tandem: this session's connection to node %s ended; the transaction in progress, if any, did not commit", node),
		Hint:    "reconnect; `tandem status` shows whether the node is up"}
}

func (r *relay) fatal(e *pgwire.Error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.client.Append(pgwire.ToErrorResponse(e))
	_ = r.client.Flush()
}

// splitAddr returns pgconn's host and port for host:port or a Unix socket
// path (/dir/.s.PGSQL.5432 -> host /dir, port 5432).
func splitAddr(addr string) (string, string, error) {
	if strings.HasPrefix(addr, "/") {
		dir, file := filepath.Split(addr)
		port, ok := strings.CutPrefix(file, ".s.PGSQL.")
		if !ok {
			return "", "", fmt.Errorf("a Unix socket must be named .s.PGSQL.<port>")
		}
		return strings.TrimSuffix(dir, "/"), port, nil
	}
	return net.SplitHostPort(addr)
}

func network(addr string) string {
	if strings.HasPrefix(addr, "/") {
		return "unix"
	}
	return "tcp"
}

// Cancel forwards a CancelRequest to the upstream session.
func (r *relay) Cancel() {
	d := net.Dialer{Timeout: 3 * time.Second}
	conn, err := d.Dial(network(r.up.Addr), r.up.Addr)
	if err != nil {
		return
	}
	defer conn.Close()
	buf := make([]byte, 12, 12+len(r.secret))
	binary.BigEndian.PutUint32(buf[0:], uint32(12+len(r.secret)))
	binary.BigEndian.PutUint32(buf[4:], 80877102)
	binary.BigEndian.PutUint32(buf[8:], r.pid)
	buf = append(buf, r.secret...)
	_, _ = conn.Write(buf)
	// Wait for the server to close, as libpq does, so the cancel has landed.
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	var b [1]byte
	_, _ = conn.Read(b[:])
}

func (r *relay) Close() { r.conn.Close() }

// shutdownFatal reports an ErrorResponse frame that ends a session for a
// server shutdown or a terminated backend (FATAL 57P01 admin_shutdown,
// 57P02 crash_shutdown).
func shutdownFatal(frame []byte) bool {
	code, fatal := fatalCode(frame)
	return fatal && (code == pgwire.CodeAdminShutdown || code == "57P02")
}

// isFatal reports an ErrorResponse frame of severity FATAL or PANIC: the
// server ends the session after it.
func isFatal(frame []byte) bool {
	_, fatal := fatalCode(frame)
	return fatal
}

// fatalCode decodes an ErrorResponse frame: its SQLSTATE and whether it
// ends the session.
func fatalCode(frame []byte) (string, bool) {
	var e pgproto3.ErrorResponse
	if len(frame) < 5 || e.Decode(frame[5:]) != nil {
		return "", false
	}
	sev := e.SeverityUnlocalized
	if sev == "" {
		sev = e.Severity
	}
	return e.Code, sev == "FATAL" || sev == "PANIC"
}
