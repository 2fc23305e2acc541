package router

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/pgwire"
)

// Transaction routing (Config.Split; DESIGN.md "Transaction routing").
// A client session holds one server connection per node it has used,
// opened on first use and kept. At each transaction boundary the router
// reads the client's next request (a Query, or extended-protocol
// messages up to Sync) and sends it to:
//
//   - a replica, if it is read-only: BEGIN/START TRANSACTION READ ONLY, an
//     autocommit SELECT the parser shows changes nothing, or anything in a
//     session whose default_transaction_read_only is on; the replica must
//     have applied what the session's read consistency needs;
//   - the node the session last used, for what goes anywhere (SET,
//     COMMIT, a Parse without an Execute);
//   - the primary, for everything else.
//
// Inside a transaction everything goes to the transaction's node. A
// statement comment /* tandem:primary */ or /* tandem:replica */ and SET
// tandem.route force the choice; SET tandem.read_consistency changes the
// session's level. Session settings and prepared statements follow the
// session: what a connection lacks is replayed on it, ahead of the
// request and without a round trip (its answers are swallowed).

// consistency levels (router.read_consistency).
type consistency uint8

const (
	consSession consistency = iota
	consStrong
	consBounded
	consEventual
)

func parseConsistency(v string) (consistency, bool) {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(v), `'"`)) {
	case "session", "default", "":
		return consSession, true
	case "strong":
		return consStrong, true
	case "bounded":
		return consBounded, true
	case "eventual":
		return consEventual, true
	}
	return 0, false
}

func (c consistency) String() string {
	return [...]string{"session", "strong", "bounded", "eventual"}[c]
}

// maxBatchBytes: a request this large before its Sync is not held to be
// classified: it goes to the primary.
const maxBatchBytes = 256 << 10

// nodeConn is a session's connection to one node.
type nodeConn struct {
	idx    int
	up     Upstream
	conn   net.Conn
	fr     *pgwire.Framer
	pid    uint32
	secret []byte
	params [][2]string
	// what of the session's memory this connection has (client goroutine)
	setDone    int               // settings[:setDone] ran here
	stmts      map[string]uint64 // prepared statement -> version here
	unnamedVer uint64            // the unnamed statement's version here
	// under splitSession.mu: the answers to replayed setup, in order, to
	// keep from the client: 'Z' everything through the next
	// ReadyForQuery (a replayed setting, a wait), '1' a ParseComplete,
	// '3' a CloseComplete.
	expect []byte
	waiter chan error // told the outcome of the wait (the last 'Z')
	// xactReady: xactStmt is prepared on this connection (under
	// splitSession.mu).
	xactReady bool
	// capture: keep the first column of a DataRow among the swallowed
	// answers in got (the primary's WAL position, lsn.go).
	capture bool
	got     string
	werr    error // an error among the swallowed answers
	dead    bool
	// held: the server's FATAL 57P01/57P02 on the connection serving the
	// client, kept until the connection's end says whether it was a
	// failover's; fatal: a FATAL of the server's went to the client,
	// which takes its connection for ended (under splitSession.mu).
	held  []byte
	fatal bool
	done  chan struct{} // the reader ended
}

// splitSession is a client session under transaction routing.
type splitSession struct {
	rt *Router
	lp *splitLoop // the session's epoll loop; nil: goroutines
	// loopRef: lp, for other goroutines (abandon)
	loopRef  atomic.Pointer[splitLoop]
	polled   atomic.Bool // it runs on an epoll loop (tests)
	client   *pgwire.Conn
	clientIP netip.Addr
	tag      string
	ctx      context.Context

	mu       sync.Mutex
	cond     *sync.Cond
	conns    []*nodeConn // by node index; nil: not open
	cur      int         // the node of the current transaction or last request; -1 none
	pending  int         // sync points sent to cur, not yet answered
	unsynced bool        // messages sent to cur after its last sync point
	txStatus byte
	inTx     bool // counted by Begin on cur
	// lost work: lostTx (the transaction's node died: 40001 until
	// ROLLBACK), owe (answer this code at the client's Sync).
	lostTx     bool
	lostCommit bool   // a COMMIT of the lost transaction since the last Sync
	lostFrom   string // the node whose connection ended with lost work
	owe        string
	closed     bool

	// GSNs (under mu): the session's last commit and read. With
	// Config.LSN, lastCommit is a WAL position, and lsnDirty says the
	// session sent the primary something that may have written since it
	// was learned (lsn.go).
	lastCommit, lastRead uint64
	lsnDirty             bool
	// lsnInsert (Config.LSN, under mu): the next learned position must be
	// the primary's insert position, not its flush position: the primary
	// ran a read for the session (it may have seen a commit made with
	// synchronous_commit = off, visible before it is flushed), or the
	// session named synchronous_commit (its own commits may be
	// asynchronous; sticky). lsn.go.
	lsnInsert, asyncCommit bool
	// stick (Config.LSN): the node the session's last read ran on (a
	// replica or the primary), -1 before its first. At session
	// consistency its reads stay there while it is a read candidate (a
	// replica's replay only moves forward); a read that goes to another
	// replica first learns the primary's WAL position (lsnDirty) and
	// waits for it there: monotonic reads across replicas (lsn.go).
	stick int
	// A request in flight that may commit (under mu; Survive): a COMMIT
	// or a statement outside a transaction. ackSeen: the primary reported
	// a commit GSN past commitBase (the session's last before it); ccSeen:
	// the CommandComplete of its COMMIT (or ROLLBACK) reached the client
	// (endsTransaction: a statement's own precedes its commit). resolving:
	// the primary died with it in flight and the reader is finding out
	// whether it committed.
	commitPending, ackSeen, ccSeen, resolving bool
	commitBase                                uint64
	toPrimary                                 bool // the request went to the primary
	// The physical engine (Config.LSN): xactNext, a COMMIT that begins a
	// request inside a transaction is about to be sent: xactQuery goes
	// before it on the primary (sendXact); xact is its answer.
	xactNext bool
	xact     xactRef
	// reqRead: the request routeReq sent last is reads only (classRead);
	// reqBegin, reqCommit: the request begins with BEGIN, holds a COMMIT.
	reqRead, reqBegin, reqCommit bool

	// client goroutine only; rl reads the client and holds the client
	// write lock (rl.wmu)
	rl         relay
	batchSpare []byte
	needs      []string    // request.needs, reused (transient names)
	cands      []Candidate // pickReplica's, reused
	// deferred: a plain BEGIN the router answered without a node; the
	// transaction's first request decides where it runs (SET TRANSACTION
	// READ ONLY: a replica), and the BEGIN goes there ahead of it.
	deferred string
	route    route
	cons     consistency
	readOnly bool // default_transaction_read_only
	settings []string
	// sqlPrepared: the statements SQL PREPARE made, by name (their
	// PREPARE is among settings, replayed where the session goes).
	sqlPrepared map[string]struct{}
	prepKept    int // PREPARE and DEALLOCATE entries in settings (compactSettings)
	// listening: the channels the session LISTENs on (its LISTEN and
	// UNLISTEN are in settings too, counted in prepKept).
	listening map[string]struct{}
	// tentative: the settings made in a transaction block not yet
	// decided, savepoints its SAVEPOINTs, sentTx whether a BEGIN was
	// sent and no end since (txsettings.go; client side).
	tentative  []tentativeSet
	savepoints []savepointMark
	sentTx     bool
	// endTag and errSeen: the last transaction end the session's node
	// reported (COMMIT or ROLLBACK) and whether an error came, since the
	// first tentative setting (under mu; settleTentative).
	endTag      string
	errSeen     bool
	stmtVer     map[string]uint64
	parses      map[string][]byte
	stmtClass   map[string]classification
	unnamed     []byte
	unnamedVer  uint64
	unnamedCl   classification
	ver         uint64
	batch       []byte
	batchFrames int
}

// newSplit makes a routed session for client c, with no node connection
// yet.
func (r *Router) newSplit(ctx context.Context, c *pgwire.Conn) *splitSession {
	s := &splitSession{rt: r, client: c, tag: newSessionTag(), ctx: ctx, cur: -1, stick: -1, txStatus: 'I',
		conns: make([]*nodeConn, len(r.cfg.Nodes)), cons: r.cons,
		stmtVer: map[string]uint64{}, parses: map[string][]byte{}, stmtClass: map[string]classification{}, sqlPrepared: map[string]struct{}{}}
	s.cond = sync.NewCond(&s.mu)
	s.rl.client, s.rl.readTimeout = c, r.cfg.MessageReadTimeout
	if ap, err := netip.ParseAddrPort(c.RemoteAddr); err == nil {
		s.clientIP = ap.Addr()
	}
	if v, ok := c.Params["default_transaction_read_only"]; ok {
		s.readOnly = boolWord(v)
	}
	return s
}

func (r *Router) openSplit(ctx context.Context, c *pgwire.Conn) (pgwire.Session, error) {
	s := r.newSplit(ctx, c)
	// The session starts on the primary: its parameters are the
	// session's, and a failed login is the primary's to report.
	pi := r.primaryIndex()
	if _, st := r.primary(); !st.Healthy {
		return nil, &pgwire.Error{Severity: "FATAL", Code: pgwire.CodeCannotConnectNow,
			Message: fmt.Sprintf("tandem: the primary %s is down (%s)", st.ID, st.LastError), Err: ErrNoNode}
	}
	nc, err := s.dial(pi)
	if err != nil {
		if errors.Is(err, ErrUpstreamDown) {
			r.report(r.cfg.Nodes[pi].Node, err)
			r.suspect(r.cfg.Nodes[pi].Node, err)
		}
		return nil, err
	}
	s.conns[pi] = nc
	s.cur = pi
	if r.cfg.Survive {
		// Moved off a node the router sees down (moveSessionsOff).
		r.track(s, true)
	}
	// A new session starts where the cluster is known to be: a node
	// serves its first read once it applied every commit the router has
	// seen acknowledged (a table another session just created, the rows
	// `pgbench -i` just loaded, are there, wherever this session reads).
	switch {
	case r.cfg.MultiMaster:
		s.lastRead = r.maxApplied()
	case r.cfg.LSN:
		// WAL positions are learned from the primary, not told: the
		// first read on a replica asks the primary's (lsn.go).
		s.lsnDirty = true
	default:
		s.lastRead = max(r.maxApplied(), r.committed.Load())
	}
	r.sess.Inc()
	return s, nil
}

func boolWord(v string) bool {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(v), `'"`)) {
	case "on", "true", "yes", "1", "t", "y":
		return true
	}
	return false
}

// dial opens a connection to node idx (same user, TLS and tag as the
// relay's); startNode starts relaying its answers.
func (s *splitSession) dial(idx int) (*nodeConn, error) {
	up := s.rt.cfg.Nodes[idx]
	hc, err := dialUpstream(s.ctx, up, s.client, s.rt.cfg.MaxMessageBytes, s.tag)
	if err != nil {
		return nil, err
	}
	if tc, ok := hc.Conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	nc := &nodeConn{idx: idx, up: up, conn: hc.Conn, pid: hc.PID, secret: hc.SecretKey,
		fr: pgwire.NewFramer(hc.Conn, hc.Conn, s.rt.cfg.MaxMessageBytes), stmts: map[string]uint64{}, done: make(chan struct{})}
	for k, v := range hc.ParameterStatuses {
		nc.params = append(nc.params, [2]string{k, v})
	}
	return nc, nil
}

// startNode starts relaying a new connection's answers: its reader
// goroutine, or on an epoll loop (splitloop_linux.go).
// errInlineWait: a read routed on the loop would have to wait for its
// replica.
var errInlineWait = errors.New("the replica is behind and the loop does not wait")

// inline reports whether the loop's goroutine runs the session's client
// side now (it must not wait).
func (s *splitSession) inline() bool { return s.lp != nil && s.lp.inline }

func (s *splitSession) startNode(nc *nodeConn) error {
	if s.lp != nil {
		return s.lp.addNode(s, nc)
	}
	go s.read(nc)
	return nil
}

func (s *splitSession) ParameterStatus() [][2]string {
	if nc := s.conns[s.cur]; nc != nil {
		return nc.params
	}
	return nil
}

// Cancel re-issues a CancelRequest to the node running the current
// transaction.
func (s *splitSession) Cancel() {
	s.mu.Lock()
	var nc *nodeConn
	if s.cur >= 0 {
		nc = s.conns[s.cur]
	}
	s.mu.Unlock()
	if nc == nil {
		return
	}
	(&relay{up: nc.up, pid: nc.pid, secret: nc.secret}).Cancel()
}

func (s *splitSession) Close() {
	s.rt.track(s, false)
	s.closeAll()
}

// abandon lets go of the session's connection to node, which the router
// sees down or deposed (Survive; moveSessionsOff): the connection's end
// is handled as any lost connection (lost: what was in flight there is
// answered, or resolved on the new primary), and the session goes on.
// A silent partition would otherwise hold a request in flight there
// until TCP gave up. It reports whether it did.
func (s *splitSession) abandon(node string) bool {
	idx := -1
	for i, up := range s.rt.cfg.Nodes {
		if up.Node == node {
			idx = i
		}
	}
	if idx < 0 {
		return false
	}
	s.mu.Lock()
	nc, closed := s.conns[idx], s.closed
	s.mu.Unlock()
	if nc == nil || closed {
		return false
	}
	if sl := s.loopRef.Load(); sl != nil && sl.abandonNode(idx) {
		return true
	}
	nc.conn.Close() // not on a loop (yet): its reader sees the end
	return true
}

// closeAll closes every node connection and returns them.
func (s *splitSession) closeAll() []*nodeConn {
	s.mu.Lock()
	s.closed = true
	conns := append([]*nodeConn(nil), s.conns...)
	s.mu.Unlock()
	for _, nc := range conns {
		if nc != nil {
			nc.conn.Close()
		}
	}
	return conns
}

// Serve relays until the client leaves.
func (s *splitSession) Serve(ctx context.Context) error {
	s.ctx = ctx
	var err error
	if ok, lerr := s.serveLoop(ctx); ok {
		err = lerr
	} else {
		s.rt.paths.WithLabelValues("goroutines").Inc()
		for _, nc := range s.conns {
			if nc != nil {
				go s.read(nc)
			}
		}
		err = s.clientLoop()
	}
	if err != nil {
		go s.Cancel()
	}
	s.rt.track(s, false)
	s.mu.Lock()
	if s.inTx && s.cur >= 0 {
		s.rt.End(s.cur)
		s.inTx = false
	}
	s.mu.Unlock()
	for _, nc := range s.closeAll() {
		if nc != nil {
			<-nc.done
		}
	}
	return err
}

// read relays one node connection's answers to the client.
func (s *splitSession) read(nc *nodeConn) {
	defer close(nc.done)
	c := s.client
	for {
		if nc.fr.Buffered() == 0 {
			// The next read may block: what the client was given goes
			// out first, once per batch. The last frame buffered may
			// have been one kept from it (a held FATAL, tandem's own
			// ParameterStatus, xactQuery's answer) after frames it
			// waits for: a fenced server's FATAL right behind an
			// INSERT's CommandComplete and ReadyForQuery would leave
			// them unsent while the session waits to settle the FATAL
			// (TestSurviveAnswerBeforeFatalReachesClient).
			s.rl.wmu.Lock()
			var ferr error
			if c.Pending() > 0 {
				ferr = c.Flush()
			}
			s.rl.wmu.Unlock()
			if ferr != nil {
				nc.conn.Close() // the read below fails: lost
			}
		}
		typ, frame, err := nc.fr.ReadFrame()
		if err != nil {
			if follow := s.lost(nc, err); follow != nil {
				follow()
			}
			return
		}
		frame, ok := s.nodeFrame(nc, typ, frame)
		if !ok {
			continue
		}
		s.rl.wmu.Lock()
		c.AppendRaw(frame)
		if c.Pending() > 64<<10 { // else the top of the loop flushes
			if err := c.Flush(); err != nil {
				s.rl.wmu.Unlock()
				nc.conn.Close()
				continue
			}
		}
		s.rl.wmu.Unlock()
	}
}

// nodeFrame takes one frame from node connection nc into the session's
// state, and reports whether it goes on to the client (not tandem's own
// GSN reports, nor the answers to replayed setup), and as what (a
// COMMIT's ROLLBACK after xactQuery failed: its error, xactRollback).
func (s *splitSession) nodeFrame(nc *nodeConn, typ byte, frame []byte) ([]byte, bool) {
	if typ == 'S' {
		if name, rest := cstringT(frame[5:]); name == pgwire.CommitGSNParam || name == pgwire.ReadGSNParam || name == pgwire.AppliedGSNSetting {
			v, _ := cstringT(rest)
			g, _ := strconv.ParseUint(v, 10, 64)
			s.mu.Lock()
			switch name {
			case pgwire.CommitGSNParam:
				s.lastCommit = max(s.lastCommit, g)
				s.rt.noteCommitted(g)
				if s.rt.cfg.MultiMaster {
					// A multi-master node answers a commit once it
					// applied it itself.
					s.rt.noteApplied(nc.idx, g)
				}
				if s.cur == nc.idx && g > s.commitBase {
					s.ackSeen = true
				}
			case pgwire.ReadGSNParam:
				s.lastRead = max(s.lastRead, g)
			default:
				s.rt.noteApplied(nc.idx, g)
			}
			s.mu.Unlock()
			return frame, false // tandem's own: not for the client
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(nc.expect) > 0 && s.swallowed(nc, typ, frame) {
		return frame, false
	}
	if typ == 'E' && s.rt.cfg.Survive && s.cur == nc.idx && s.toPrimary && s.pending == 1 && !s.unsynced && s.commitPending && shutdownFatal(frame) {
		// The server ended the session with the COMMIT in flight: its
		// FATAL does not say whether it committed; the connection's
		// end, which follows, resolves it (lost, resolveInFlight).
		s.rt.log.Info("the server ended a session with a COMMIT in flight; it is resolved as at a failover", "node", nc.up.Node, "err", errorFrom(frame))
		return frame, false
	}
	if typ == 'E' && s.cur == nc.idx {
		s.errSeen = true
	}
	if typ == 'E' && isFatal(frame) {
		if s.cur != nc.idx {
			// A connection that serves no request of the client's (an
			// idle replica's): its end is the router's concern.
			s.rt.log.Info("a node ended a session's idle connection", "node", nc.up.Node, "err", errorFrom(frame))
			return frame, false
		}
		if s.rt.cfg.Survive && shutdownFatal(frame) {
			// Held: a failover's is dropped and the session goes on;
			// if the node stays primary, the server ended this
			// session (an operator's pg_terminate_backend) and it
			// ends with it (lost, settleHeld).
			if nc.held == nil {
				nc.held = bytes.Clone(frame)
			}
			return frame, false
		}
		nc.fatal = true
	}
	if typ == 'C' && s.cur == nc.idx {
		if endsTransaction(frame) {
			s.ccSeen = true
			s.endTag = "ROLLBACK"
			if t, _ := cstringT(frame[5:]); t == "COMMIT" {
				s.endTag = "COMMIT"
			}
		}
		frame = xactRollback(&s.xact, typ, frame)
	}
	if typ == 'Z' && len(frame) == 6 && s.cur == nc.idx {
		if s.pending > 0 {
			s.pending--
		}
		if s.pending == 0 {
			s.commitPending = false
		}
		s.txStatus = frame[5]
		if s.txStatus == 'I' && s.pending == 0 && !s.unsynced && s.inTx {
			s.rt.End(nc.idx)
			s.inTx = false
		}
		s.cond.Broadcast()
	}
	return frame, true
}

// swallowed reports whether an answer belongs to replayed setup (under
// mu). A replayed Parse that fails (the statement's table is not on this
// node yet) is the client's error: the node skips the client's messages
// up to its Sync, and the client is told why.
func (s *splitSession) swallowed(nc *nodeConn, typ byte, frame []byte) bool {
	switch nc.expect[0] {
	case 'X':
		// xactQuery's answer (sendXact).
		if typ == 'E' {
			s.rt.log.Warn("the query naming a COMMIT's transaction failed: the transaction is aborted and its COMMIT gets this error", "node", nc.up.Node, "err", errorFrom(frame))
		}
		if xactStep(&s.xact, &nc.xactReady, typ, frame) {
			nc.expect = nc.expect[1:]
		}
		return true
	case 'Z':
		if typ == 'E' && nc.werr == nil {
			nc.werr = errorFrom(frame)
		}
		if typ == 'D' && nc.capture {
			nc.got = firstColumn(frame)
		}
		if typ == 'Z' {
			nc.expect = nc.expect[1:]
			if nc.waiter != nil && len(nc.expect) == 0 {
				nc.waiter <- nc.werr
				nc.waiter = nil
			} else if nc.werr != nil {
				s.rt.log.Info("replaying a session's setting on a node failed", "node", nc.up.Node, "err", nc.werr)
			}
			nc.werr = nil
		}
		return true
	case '1', '3':
		if typ == nc.expect[0] {
			nc.expect = nc.expect[1:]
			return true
		}
		if typ == 'E' {
			nc.expect = nc.expect[:0]
		}
		return false
	}
	nc.expect = nc.expect[1:]
	return false
}

// errorFrom reads an ErrorResponse frame.
func errorFrom(frame []byte) error {
	var e pgproto3.ErrorResponse
	if err := e.Decode(frame[5:]); err != nil {
		return err
	}
	return &pgwire.Error{Code: e.Code, Message: e.Message}
}

// lost handles the end of a node connection: work in flight there is
// answered (40001: retry; 08007 for a write whose outcome is unknown),
// a transaction open there is lost, and the session goes on elsewhere.
// With automatic failover (Survive), one COMMIT or statement outside a
// transaction in flight on the primary is resolved instead
// (resolveInFlight, inFlightAnswer). What may wait
// comes back as follow, which the caller runs off the loop (nil: nothing):
// resolveInFlight, or settleHeld for a server's FATAL held while the
// router still sees the node as the primary.
func (s *splitSession) lost(nc *nodeConn, cause error) (follow func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nc.dead = true
	if s.conns[nc.idx] == nc {
		s.conns[nc.idx] = nil
	}
	if nc.waiter != nil {
		nc.waiter <- fmt.Errorf("node %s: connection ended: %w", nc.up.Node, cause)
		nc.waiter = nil
	}
	defer s.cond.Broadcast()
	if s.closed || s.cur != nc.idx {
		return nil
	}
	s.rt.log.Info("a session's connection to a node ended", "node", nc.up.Node, "err", cause)
	if nc.fatal {
		// The client has the server's FATAL: the session ends.
		s.endHeld(nc, nc.held)
		return nil
	}
	if held := nc.held; held != nil && s.stillPrimary(nc.up.Node) {
		// The server ended the session (57P01/57P02) and the router
		// still sees its node as the primary: a failover's fence or
		// crash the router has not seen yet, or the server ended this
		// session alone (pg_terminate_backend). A new connection tells
		// them apart, which may wait: settleHeld, off the loop; the
		// session's next request waits for it (resolving).
		s.resolving = true
		return func() {
			if f := s.settleHeld(nc, held, cause); f != nil {
				f()
			}
		}
	}
	return s.lostWork(nc, cause)
}

// endHeld ends the session with the server's FATAL (held, if any: a
// FATAL the client has says why too), its node still the primary (under s.mu; on a loop,
// under its mutex too).
func (s *splitSession) endHeld(nc *nodeConn, held []byte) {
	if held != nil {
		s.rl.wmu.Lock()
		s.client.AppendRaw(held)
		_ = s.client.Flush()
		s.rl.wmu.Unlock()
		s.rt.log.Info("the server ended a session while its node stays primary; the session ends with it", "node", nc.up.Node)
	}
	if s.inTx {
		s.rt.End(nc.idx)
		s.inTx = false
	}
	s.pending, s.unsynced, s.cur = 0, false, -1
	s.closed = true // a request waiting in dispatch must not run (decide)
	s.endClient()
}

// settleHeld decides what a held FATAL meant (lost): the session goes on
// as at a failover when the router comes to see another primary, and
// ends with the FATAL when a new connection to its node succeeds while
// that node is still the primary (the server ended this session alone),
// or when no other primary appears within rerouteWait.
func (s *splitSession) settleHeld(nc *nodeConn, held []byte, cause error) (follow func()) {
	alone := s.endedAlone(nc)
	if sl := s.lp; sl != nil && alone {
		// Ending the session is the loop's (endClient): its mutex
		// first, as on the loop (l.mu, then s.mu).
		sl.l.mu.Lock()
		defer sl.l.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.cond.Broadcast()
	s.resolving = false
	if s.closed {
		return nil
	}
	if alone {
		s.endHeld(nc, held)
		return nil
	}
	s.rt.log.Info("a node's server ended a session at a failover; the session goes on", "node", nc.up.Node, "err", errorFrom(held))
	return s.lostWork(nc, cause)
}

// endedAlone reports whether nc's server ended the session alone: see
// settleHeld.
func (s *splitSession) endedAlone(nc *nodeConn) bool {
	node := nc.up.Node
	deadline := time.Now().Add(rerouteWait)
	for time.Now().Before(deadline) && s.ctx.Err() == nil {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return true
		}
		changed := s.rt.changes()
		up, st := s.rt.primary()
		if up.Node != node {
			return false
		}
		if st.Healthy {
			c, err := s.dial(nc.idx)
			if err == nil {
				c.conn.Close()
				return true
			}
			s.rt.suspect(node, err)
		}
		select {
		case <-s.ctx.Done():
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// lostWork is the rest of lost (under s.mu): the connection's end was
// not the server's ending of the session.
func (s *splitSession) lostWork(nc *nodeConn, cause error) (follow func()) {
	s.rt.suspect(nc.up.Node, cause)
	s.lostFrom = nc.up.Node
	if s.pending == 0 && !s.unsynced && s.txStatus == 'I' {
		s.cur = -1
		return nil
	}
	wasTx := s.txStatus != 'I'
	// What was in flight, or the open block, did not happen: its
	// tentative settings go (unless resolveInFlight finds it committed).
	s.endTag = "ROLLBACK"
	if s.rt.cfg.Survive && s.toPrimary && s.pending == 1 && !s.unsynced && s.commitPending {
		s.resolving = true
		if s.inTx {
			s.rt.End(nc.idx)
			s.inTx = false
		}
		status := s.txStatus
		return func() { s.resolveInFlight(nc, status) }
	}
	code := codeSerialization
	if !s.isReplica(nc.idx) && !wasTx {
		code = codeResolutionUnknown // an autocommit write may have committed
	}
	status := byte('I')
	if wasTx {
		status = 'E'
	}
	s.rl.wmu.Lock()
	for i := 0; i < s.pending; i++ {
		s.client.Append(pgwire.ToErrorResponse(lostWork(code, nc.up.Node)))
		s.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, status})
	}
	_ = s.client.Flush()
	s.rl.wmu.Unlock()
	if s.unsynced {
		s.owe = code
	}
	s.lostTx = wasTx
	if s.inTx {
		s.rt.End(nc.idx)
		s.inTx = false
	}
	s.pending, s.unsynced, s.txStatus, s.cur = 0, false, 'I', -1
	return nil
}

// stillPrimary reports whether node is the primary the router knows now,
// healthy.
func (s *splitSession) stillPrimary(node string) bool {
	up, st := s.rt.primary()
	return st.Healthy && up.Node == node
}

// errServerEnded: a node's server ended the session (its FATAL was
// relayed to the client).
var errServerEnded = errors.New("the node's server ended the session")

// endClient ends the client's connection from the router's side: its
// reader (goroutine or epoll loop) sees the end and closes the session.
//
// On an epoll loop (the caller is the loop, under its mutex) the client's
// descriptor is the loop's: the loop ends the session, writing out what
// the client is still owed first (the server's FATAL).
func (s *splitSession) endClient() {
	if s.lp != nil {
		s.lp.endSession()
		return
	}
	if hc, ok := s.client.Conn.(interface {
		CloseRead() error
		CloseWrite() error
	}); ok {
		_ = hc.CloseWrite()
		_ = hc.CloseRead()
		return
	}
	_ = s.client.Conn.Close()
}

// resolveInFlight answers the COMMIT (or statement outside a transaction)
// that was in flight when the primary's connection ended: what the client
// would have been told had the node lived, wherever that is known, asking
// the primary that took over (waiting up to rerouteWait for one).
func (s *splitSession) resolveInFlight(dead *nodeConn, status byte) {
	s.mu.Lock()
	ccSeen, ackSeen, base := s.ccSeen, s.ackSeen, s.commitBase
	noEffect := s.reqRead || s.reqBegin && !s.reqCommit
	var x *xactRef
	if s.rt.cfg.LSN {
		xr := s.xact
		x = &xr
	}
	s.mu.Unlock()
	now := ""
	msgs := inFlightAnswer(dead.up.Node, status, status == 'I', noEffect, ccSeen, ackSeen, x != nil, func() (string, bool, error) {
		deadline := time.Now().Add(rerouteWait)
		var last error
		for time.Now().Before(deadline) && s.ctx.Err() == nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return "", false, errors.New("the client left")
			}
			changed := s.rt.changes()
			up, st := s.rt.primary()
			if st.Healthy {
				ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
				applied, err := committedOn(ctx, up, s.tag, base, x)
				cancel()
				if err == nil {
					now = up.Node
					return now, applied, nil
				}
				if errors.Is(err, ErrNoSessionIndex) || errors.Is(err, errCannotAsk) {
					// Asking again will not help (08007 at once).
					return up.Node, false, err
				}
				last = err
			}
			select {
			case <-s.ctx.Done():
			case <-changed:
			case <-time.After(50 * time.Millisecond):
			}
		}
		if last == nil {
			last = errors.New("no primary")
		}
		return "", false, fmt.Errorf("no primary to ask within %v: %w", rerouteWait, last)
	}, s.rt.log)
	s.rl.wmu.Lock()
	committed := false
	for _, m := range msgs {
		if cc, ok := m.(*pgproto3.CommandComplete); ok && string(cc.CommandTag) == "COMMIT" {
			committed = true
		}
		s.client.Append(m)
	}
	s.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, 'I'})
	_ = s.client.Flush()
	s.rl.wmu.Unlock()
	s.rt.log.Info("a routed session's COMMIT in flight at a failover was resolved", "from", dead.up.Node, "to", now)
	s.mu.Lock()
	if committed {
		s.endTag = "COMMIT" // its settings stand (settleTentative)
	}
	s.resolving, s.commitPending = false, false
	s.pending, s.unsynced, s.txStatus, s.cur = 0, false, 'I', -1
	s.cond.Broadcast()
	s.mu.Unlock()
}

func lostWork(code, node string) *pgwire.Error {
	if code == codeResolutionUnknown {
		return &pgwire.Error{Code: code,
			Message: fmt.Sprintf("tandem: the connection to node %s ended before this statement's outcome was known; it may or may not have committed", node),
			Hint:    "check whether its changes are there before retrying it; the session goes on"}
	}
	return &pgwire.Error{Code: code,
		Message: fmt.Sprintf("tandem: the transaction was lost when the session's connection to node %s ended (a failover or a cut connection); it did not commit and can be retried", node),
		Hint:    "roll back and retry; the session goes on"}
}

// isReplica reports whether node idx is not the primary now.
// In a multi-master cluster every node is one (read consistency holds
// for all of them).
func (s *splitSession) isReplica(idx int) bool {
	return s.rt.cfg.MultiMaster || idx != s.rt.primaryIndex()
}

// readClient reads the client's next message.
func (s *splitSession) readClient() (byte, []byte, error) { return s.rl.readClient() }

// clientLoop reads the client's messages, gathers each request that
// starts a transaction, routes it and sends the rest where it belongs.
func (s *splitSession) clientLoop() error {
	for {
		typ, frame, err := s.readClient()
		if err != nil {
			if errors.Is(err, pgwire.ErrMessageTooLarge) || errors.Is(err, pgwire.ErrMalformed) {
				s.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation, Message: "tandem: " + err.Error()})
			}
			return err
		}
		if stop, err := s.clientMsg(typ, frame); stop || err != nil {
			return err
		}
	}
}

// clientMsg handles one message from the client; stop: the session ends
// (Terminate, or err).
func (s *splitSession) clientMsg(typ byte, frame []byte) (stop bool, err error) {
	c := s.client
	if !frontendTypes[typ] {
		s.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation, Message: fmt.Sprintf("tandem: invalid frontend message type %d", typ)})
		return true, fmt.Errorf("%w: message type %d", pgwire.ErrMalformed, typ)
	}
	if typ == 'X' {
		s.mu.Lock()
		s.closed = true
		conns := append([]*nodeConn(nil), s.conns...)
		s.mu.Unlock()
		for _, nc := range conns {
			if nc != nil {
				nc.fr.AppendRaw(frame)
				_ = nc.fr.Flush()
			}
		}
		return true, nil
	}
	if s.absorb(typ, frame) {
		return false, nil
	}
	s.mu.Lock()
	// Not while a connection's end is being settled (settleHeld): the
	// request waits in dispatch for what became of the transaction.
	direct := typ == 'd' || typ == 'c' || typ == 'f' || s.unsynced || s.txStatus != 'I' && s.pending == 0 && s.cur >= 0 && !s.resolving
	cur := s.cur
	s.mu.Unlock()
	if direct && s.batch == nil {
		// Inside a request or a transaction: where it runs.
		if typ == 'Q' {
			if name, val, ok := tandemSet(transient(frame[5:])); ok {
				if q := quotedTandemSet(string(transient(frame[5:])), name, val); q != "" {
					frame = queryFrame(q)
				}
			}
		}
		s.remember(typ, frame, cur)
		return false, s.send(cur, typ, frame)
	}
	// A new request: gather it up to its sync point.
	if s.batch == nil {
		s.batch = s.batchBuf()
	}
	s.batch = append(s.batch, frame...)
	s.batchFrames++
	end := typ == 'Q' || typ == 'S'
	if !end && typ != 'H' && c.Buffered() > 0 && len(s.batch) < maxBatchBytes {
		return false, nil
	}
	if s.lp != nil {
		return false, s.lp.dispatch(s, end)
	}
	return false, s.dispatch(end)
}

// batchBuf returns the reused request buffer.
func (s *splitSession) batchBuf() []byte {
	return s.batchSpare[:0]
}

// send forwards one message to node idx.
func (s *splitSession) send(idx int, typ byte, frame []byte) error {
	s.mu.Lock()
	nc := (*nodeConn)(nil)
	if idx >= 0 {
		nc = s.conns[idx]
	}
	if nc == nil {
		// The node went away mid-request: lost() answered what was in
		// flight; what follows up to the sync point is owed.
		if s.owe == "" {
			s.owe = codeSerialization
		}
		s.mu.Unlock()
		s.absorb(typ, frame)
		return nil
	}
	s.track(typ, frame)
	x := s.xactNext
	s.mu.Unlock()
	if x {
		s.sendXact(nc)
	}
	if typ == 'B' || typ == 'D' {
		s.replayFor(nc, typ, frame[5:])
	}
	if len(frame) >= pgwire.OwnedFrameBytes {
		_ = nc.fr.WriteDirect(frame)
		return nil
	}
	nc.fr.AppendRaw(frame)
	if s.client.Buffered() == 0 || nc.fr.Pending() > 64<<10 {
		_ = nc.fr.Flush() // a dead node: its reader answers
	}
	return nil
}

// track counts what is in flight on cur (under mu), and notes a request
// that may commit there (a COMMIT, or anything outside a transaction): if
// the primary dies with it in flight, lost() finds out what became of it.
func (s *splitSession) track(typ byte, frame []byte) {
	begins := s.pending == 0 && !s.unsynced
	if begins {
		// A new request begins.
		s.ackSeen, s.ccSeen, s.commitBase = false, false, s.lastCommit
		s.commitPending = s.txStatus == 'I'
		s.toPrimary = s.cur >= 0 && s.cur == s.rt.primaryIndex()
		s.xact = xactRef{}
		s.reqBegin, s.reqCommit = false, false
	}
	q := ""
	switch typ {
	case 'Q':
		q, _ = cstringT(frame[5:])
	case 'P':
		_, rest := cstringT(frame[5:])
		q, _ = cstringT(rest)
	case 'B':
		if begins {
			// A request that binds a statement prepared earlier: a
			// COMMIT prepared once and bound every time (pgjdbc) is a
			// COMMIT too.
			_, rest := cstringT(frame[5:])
			stmt, _ := cstringT(rest)
			p := s.unnamed
			if stmt != "" {
				p = s.parses[stmt]
			}
			q = parseTextT(p)
		}
	}
	if begins && q != "" && isBegin(q) {
		s.reqBegin = true
	}
	if (typ == 'Q' || typ == 'P') && s.rt.cfg.LSN && s.rt.cfg.Survive && mentionsDeallocate(q) {
		// It may drop xactStmt where it runs: prepare it again.
		for _, nc := range s.conns {
			if nc != nil {
				nc.xactReady = false
			}
		}
	}
	if isCommit(q) {
		s.commitPending, s.reqCommit = true, true
		s.xactNext = begins && s.txStatus == 'T' && s.rt.cfg.LSN && s.rt.cfg.Survive
	}
	switch typ {
	case 'Q', 'S':
		s.pending++
		s.unsynced = false
	case 'H', 'd', 'c', 'f':
		if typ != 'H' {
			s.unsynced = s.unsynced || s.pending == 0
		}
	default:
		s.unsynced = true
	}
}

// sendXact puts xactQuery on nc ahead of the COMMIT track marked
// (xactNext), if nc is the primary's connection: its answer is swallowed
// into s.xact (swallowed, 'X').
func (s *splitSession) sendXact(nc *nodeConn) {
	s.mu.Lock()
	s.xactNext = false
	if nc.idx != s.rt.primaryIndex() {
		s.mu.Unlock()
		return
	}
	s.xact.asked = true
	nc.expect = append(nc.expect, 'X')
	ready := nc.xactReady
	s.mu.Unlock()
	nc.fr.AppendRaw(xactFrames(ready))
}

// absorb answers, without a node, messages that belong to lost work: a
// lost transaction's statements until ROLLBACK, and a request whose node
// went away until its Sync. It reports whether it took the message.
func (s *splitSession) absorb(typ byte, frame []byte) bool {
	s.mu.Lock()
	lostTx, owe := s.lostTx, s.owe
	s.mu.Unlock()
	if !lostTx && owe == "" {
		return false
	}
	answer := func(code string, status byte) {
		if code == "" {
			code = codeSerialization
		}
		s.rl.wmu.Lock()
		s.client.Append(pgwire.ToErrorResponse(lostWork(code, s.lostFrom)))
		s.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, status})
		_ = s.client.Flush()
		s.rl.wmu.Unlock()
	}
	status := byte('I')
	if lostTx {
		status = 'E'
	}
	// The lost transaction ends with the client's ROLLBACK, or with its
	// COMMIT, which is answered 40001 and leaves no transaction, as a
	// COMMIT that fails on PostgreSQL does. A ROLLBACK in the extended
	// protocol (pgjdbc's, perhaps prepared once by name) goes on to a
	// node, which answers it outside a transaction.
	switch typ {
	case 'Q':
		q, _ := cstring(frame[5:])
		if lostTx && isRollback(q) {
			s.mu.Lock()
			s.lostTx, s.owe, s.lostCommit = false, "", false
			s.mu.Unlock()
			s.rl.wmu.Lock()
			s.client.Append(&pgproto3.CommandComplete{CommandTag: []byte("ROLLBACK")})
			s.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, 'I'})
			_ = s.client.Flush()
			s.rl.wmu.Unlock()
			return true
		}
		s.mu.Lock()
		s.owe = ""
		if lostTx && isCommit(q) {
			s.lostTx, s.lostCommit, status = false, false, 'I'
		}
		s.mu.Unlock()
		answer(owe, status)
	case 'P', 'B':
		q := s.textOf(typ, frame)
		if lostTx && isRollback(q) {
			s.mu.Lock()
			s.lostTx, s.owe, s.lostCommit = false, "", false
			s.mu.Unlock()
			return false
		}
		if lostTx && isCommit(q) {
			s.mu.Lock()
			s.lostCommit = true
			s.mu.Unlock()
		}
	case 'S':
		s.mu.Lock()
		s.owe = ""
		if s.lostCommit {
			s.lostTx, s.lostCommit, status = false, false, 'I'
		}
		s.mu.Unlock()
		answer(owe, status)
	}
	return true
}

// textOf is the statement text of a Parse, or of the named statement a
// Bind runs ("" when unknown: the unnamed one, or a name never parsed).
func (s *splitSession) textOf(typ byte, frame []byte) string {
	_, rest := cstring(frame[5:])
	if typ == 'B' {
		name, _ := cstring(rest)
		p := s.parses[name]
		if name == "" || len(p) < 5 {
			return ""
		}
		_, rest = cstring(p[5:])
	}
	q, _ := cstring(rest)
	return q
}

func (s *splitSession) fatal(e *pgwire.Error) {
	s.rl.wmu.Lock()
	defer s.rl.wmu.Unlock()
	s.client.Append(pgwire.ToErrorResponse(e))
	_ = s.client.Flush()
}

// request is what the router learned of a gathered request.
type request struct {
	class   stmtClass // the most demanding statement's
	force   route
	needs   []string // named statements it uses and does not parse (views of the request: not kept)
	setTxRO bool     // it starts with SET TRANSACTION READ ONLY
	unnamed bool     // uses the unnamed statement without parsing it
}

// classifyBatch reads the gathered request and records what it sets up.
func (s *splitSession) classifyBatch() request {
	rq := request{class: classNeutral, needs: s.needs[:0]}
	parsedUnnamed := false
	parsed := map[string]bool(nil)
	bound := map[string]bool(nil) // portals this request binds
	merge := func(cl classification) {
		if cl.force != routeAuto && rq.force == routeAuto {
			rq.force = cl.force
		}
		if cl.class == classWrite || rq.class == classWrite {
			rq.class = classWrite
			return
		}
		if cl.class == classBeginRO || rq.class == classBeginRO {
			rq.class = classBeginRO
			return
		}
		if cl.class == classRead {
			rq.class = classRead
		}
	}
	for b := s.batch; len(b) >= 5; {
		n := int(binary.BigEndian.Uint32(b[1:5])) + 1
		frame := b[:n]
		b = b[n:]
		body := frame[5:]
		switch frame[0] {
		case 'Q':
			q := transient(body)
			if s.rt.cfg.LSN && containsFold(q, "synchronous_commit") {
				s.noteAsyncCommit()
			}
			cl := s.rt.classify(q)
			if len(b)+len(frame) == len(s.batch) && cl.setTxRO {
				rq.setTxRO = true
			}
			merge(cl)
		case 'P':
			name, rest := cstringT(body)
			q, _ := cstringT(rest)
			if s.rt.cfg.LSN && containsFold(q, "synchronous_commit") {
				s.noteAsyncCommit()
			}
			if name == "" {
				parsedUnnamed = true
			} else {
				if parsed == nil {
					parsed = map[string]bool{}
				}
				parsed[name] = true
			}
		case 'B':
			portal, rest := cstringT(body)
			if portal != "" {
				if bound == nil {
					bound = map[string]bool{}
				}
				bound[portal] = true
			}
			stmt, _ := cstringT(rest)
			if stmt == "" {
				if !parsedUnnamed {
					rq.unnamed = true
				}
				// The unnamed statement as of this Bind: a batch may
				// parse it more than once (pgjdbc sends its BEGIN and the
				// first query as unnamed statements in one batch).
				merge(s.unnamedClassIn(s.batch[:len(s.batch)-len(b)]))
			} else {
				if !parsed[stmt] {
					rq.needs = append(rq.needs, stmt)
				}
				merge(s.classOf(stmt))
			}
		case 'D':
			if len(body) > 1 && body[0] == 'P' {
				// A named portal this request did not bind: outside a
				// transaction, a WITH HOLD cursor, which its DECLARE (a
				// write) made on the primary (psycopg describes its named
				// cursors so).
				if portal, _ := cstringT(body[1:]); portal != "" && !bound[portal] {
					merge(classification{class: classWrite})
				}
			}
			if len(body) > 1 && body[0] == 'S' {
				stmt, _ := cstringT(body[1:])
				if stmt == "" {
					if !parsedUnnamed {
						rq.unnamed = true
					}
				} else if !parsed[stmt] {
					rq.needs = append(rq.needs, stmt)
				}
			}
		}
	}
	return rq
}

// classOf is a named statement's class: from its Parse in this request
// (not yet recorded) or as recorded.
func (s *splitSession) classOf(name string) classification {
	for b := s.batch; len(b) >= 5; {
		n := int(binary.BigEndian.Uint32(b[1:5])) + 1
		frame := b[:n]
		b = b[n:]
		if frame[0] == 'P' {
			nm, rest := cstringT(frame[5:])
			if nm == name {
				q, _ := cstringT(rest)
				return s.rt.classify(q)
			}
		}
	}
	if cl, ok := s.stmtClass[name]; ok {
		return cl
	}
	return classification{class: classWrite}
}

// unnamedClassIn is the class of the unnamed statement a Bind uses: the
// last Parse of it in the request, else the one recorded.
func (s *splitSession) unnamedClassIn(b []byte) classification {
	cl, found := s.unnamedCl, s.unnamed != nil
	for len(b) >= 5 {
		n := int(binary.BigEndian.Uint32(b[1:5])) + 1
		frame := b[:n]
		b = b[n:]
		if frame[0] == 'P' {
			nm, rest := cstringT(frame[5:])
			if nm == "" {
				q, _ := cstringT(rest)
				cl, found = s.rt.classify(q), true
			}
		}
	}
	if !found {
		return classification{class: classWrite}
	}
	return cl
}

// transient views a NUL-terminated body as a string without copying; it
// must not be kept.
func transient(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// cstringT is cstring without copying (see transient).
func cstringT(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return transient(b), nil
	}
	return transient(b[:i]), b[i+1:]
}

// dispatch routes the gathered request. complete: it ends with its sync
// point (else the client waits for answers before sending the rest, and
// an unfinished request goes to the primary unless it is a plain write).
func (s *splitSession) dispatch(complete bool) error {
	defer s.resetBatch()
	d, done, err := s.decide(complete)
	if done {
		return err
	}
	defer func() { s.needs = d.rq.needs[:0] }()
	return s.routeReq(d, -1)
}

// resetBatch forgets the gathered request (its buffer is reused).
func (s *splitSession) resetBatch() {
	s.batchSpare = s.batch[:0]
	if cap(s.batchSpare) > 1<<20 {
		s.batchSpare = nil
	}
	s.batch, s.batchFrames = nil, 0
}

// decision is where a gathered request goes (decide), before the node
// is chosen and the request sent (routeReq).
type decision struct {
	rq       request
	want     route
	inTx     bool // it goes where the session is (cur)
	cur      int
	begin    string // a deferred BEGIN to send ahead of it
	complete bool
}

// decide classifies the gathered request and waits, if the request must,
// for what is in flight; done: the router answered it itself.
func (s *splitSession) decide(complete bool) (d decision, done bool, err error) {
	d.complete = complete
	if s.batchFrames == 1 && s.batch[0] == 'Q' {
		if name, val, ok := tandemSet(transient(s.batch[5:])); ok {
			if err := s.applyTandemSet(name, val); err != nil {
				return d, true, s.refuseSetting(err)
			}
			if q := quotedTandemSet(string(transient(s.batch[5:])), name, val); q != "" {
				s.batch = append(s.batch[:0], queryFrame(q)...)
			}
		}
	}
	if s.batchFrames == 1 && s.batch[0] == 'Q' && s.deferred == "" && s.route == routeAuto && !s.readOnly && !s.rt.pinned {
		q := transient(s.batch[5:])
		if cl := s.rt.classify(q); cl.plainBegin && cl.force == routeAuto {
			s.flushCur()
			s.mu.Lock()
			for !s.closed && s.pending > 0 {
				s.cond.Wait()
			}
			idle := s.txStatus == 'I' && !s.lostTx && s.owe == ""
			s.mu.Unlock()
			if idle {
				// Answer BEGIN now; send it with the first request.
				s.deferred = strings.Clone(q)
				s.rl.wmu.Lock()
				s.client.Append(&pgproto3.CommandComplete{CommandTag: []byte("BEGIN")})
				s.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, 'T'})
				err := s.client.Flush()
				s.rl.wmu.Unlock()
				return d, true, err
			}
		}
	}
	rq := s.classifyBatch()
	d.rq = rq
	begin := s.deferred
	s.deferred = ""
	d.begin = begin
	// Decide: the primary, a replica, or home (the last node).
	want := routePrimary
	switch {
	case rq.force != routeAuto:
		want = rq.force
	case s.route != routeAuto:
		want = s.route
	case begin != "":
		// The first request of a deferred BEGIN's block: a replica if it
		// is SET TRANSACTION READ ONLY, else the primary.
		if rq.setTxRO {
			want = routeReplica
		}
	case rq.class == classNeutral:
		want = routeAuto // home
	case rq.class == classRead || rq.class == classBeginRO || s.readOnly:
		want = routeReplica
	}
	if s.rt.cfg.MultiMaster && want == routePrimary {
		want = routeReplica // any node takes it
	}
	if s.rt.pinned {
		want = routePrimary // the write port of a pair: every transaction
	}
	if !complete && (want == routeReplica || want == routeAuto) && !s.rt.cfg.MultiMaster {
		// Flushed before its Sync (asyncpg prepares with Parse, Describe,
		// Flush, then sends Bind, Execute, Sync): what follows up to the
		// Sync goes where this goes, and may write.
		want = routePrimary
	}
	d.want = want
	// Wait for what is in flight unless the request goes where it is.
	s.flushCur()
	s.mu.Lock()
	for !s.closed && (s.resolving || s.pending > 0 && !(s.cur >= 0 && s.fits(s.cur, want))) {
		s.cond.Wait()
	}
	if s.closed {
		// The session ended while the request waited (settleHeld: the
		// server ended it alone): nothing of it runs anywhere.
		s.mu.Unlock()
		return d, true, nil
	}
	if s.lostTx || s.owe != "" {
		// What the request waited for lost its transaction (settleHeld:
		// a failover): it belongs to the lost work, up to a ROLLBACK.
		s.mu.Unlock()
		for b := s.batch; len(b) >= 5; {
			n := int(binary.BigEndian.Uint32(b[1:5])) + 1
			if !s.absorb(b[0], b[:n]) {
				// The client's ROLLBACK ended the lost transaction: it
				// and what follows it go on.
				frames := 0
				for r := b; len(r) >= 5; r = r[int(binary.BigEndian.Uint32(r[1:5]))+1:] {
					frames++
				}
				s.batch = s.batch[:copy(s.batch, b)]
				s.batchFrames = frames
				s.mu.Lock()
				d.inTx, d.cur = false, s.cur
				s.mu.Unlock()
				return d, false, nil
			}
			b = b[n:]
		}
		return d, true, nil
	}
	// Pipelined behind requests still in flight there (fits), or in a
	// transaction: the request goes where the session is.
	d.inTx = (s.txStatus != 'I' || s.pending > 0) && s.cur >= 0 && s.conns[s.cur] != nil
	d.cur = s.cur
	s.mu.Unlock()
	return d, false, nil
}

// routeReq chooses the node of a decided request (first: a replica
// already picked for it, or -1), makes sure that node has what the
// request needs, and sends it.
func (s *splitSession) routeReq(d decision, first int) error {
	rq, want, inTx, cur, begin, complete := d.rq, d.want, d.inTx, d.cur, d.begin, d.complete
	var waitUntil time.Time // for a primary during a failover (Survive)
	for attempt := 0; ; attempt++ {
		target := -1
		switch {
		case inTx:
			target = cur
		case want == routeAuto:
			target = cur
			if target < 0 || s.conns[target] == nil {
				target = s.rt.primaryIndex()
			}
		case want == routePrimary:
			target = s.rt.primaryIndex()
		case attempt == 0 && first >= 0:
			target = first
		default:
			target = s.pickReplica()
		}
		picked := target // where the balancer (or stickiness) sent a read
		changed := s.rt.changes()
		nc, err := s.ensure(target)
		if err != nil {
			if s.awaitPrimary(err, inTx, &waitUntil, changed) {
				continue
			}
			return s.refuse(err, complete)
		}
		target = nc.idx // a replica that cannot be reached: the primary
		if want == routeReplica && !inTx && s.isReplica(target) {
			if s.rt.cfg.LSN && s.cons == consSession {
				s.mu.Lock()
				if s.stick >= 0 && s.stick != target {
					// Another replica than the last read's: it must
					// have what that read saw (lsn.go).
					s.lsnDirty = true
				}
				s.mu.Unlock()
			}
			if err := s.awaitConsistency(nc); err != nil {
				if s.rt.cfg.MultiMaster {
					// No node has everything by definition: say so.
					return s.refuse(err, complete)
				}
				s.rt.log.Debug("a replica is behind what the read needs: the primary runs it", "node", nc.up.Node, "err", err)
				target = s.rt.primaryIndex()
				if nc, err = s.ensure(target); err != nil {
					// No primary either (a failover): wait for the new
					// one as a write does, then choose again.
					if s.awaitPrimary(err, inTx, &waitUntil, changed) {
						continue
					}
					return s.refuse(err, complete)
				}
				target = nc.idx
			}
		}
		s.prepare(nc, rq)
		if begin != "" {
			nc.fr.AppendRaw(queryFrame(begin))
			s.mu.Lock()
			nc.expect = append(nc.expect, 'Z')
			s.mu.Unlock()
		}
		s.mu.Lock()
		if nc.dead {
			// The connection ended since it was chosen (its reader saw
			// it): a transaction there is lost (lost() said so), a new
			// one chooses again.
			s.mu.Unlock()
			if inTx || attempt >= 3 {
				for b := s.batch; len(b) >= 5; {
					n := int(binary.BigEndian.Uint32(b[1:5])) + 1
					s.mu.Lock()
					if !s.lostTx && s.owe == "" {
						s.owe = codeSerialization
					}
					s.mu.Unlock()
					s.absorb(b[0], b[:n])
					b = b[n:]
				}
				return nil
			}
			continue
		}
		if !inTx && s.cur != target {
			s.cur = target
		}
		if s.rt.cfg.MultiMaster && !inTx && target == picked {
			// The node of the session's last transaction, which
			// least-connected keeps the session on while it has what the
			// session needs (pickReplica): its backends and what the
			// session left there (a WITH HOLD cursor) stay with it.
			s.stick = target // s.mu is held here
		}
		if begin != "" {
			// In a transaction from here (its BEGIN's answer is the
			// router's): a failure of this request loses a transaction.
			s.txStatus = 'T'
		}
		if !s.inTx && !inTx {
			s.rt.Begin(target)
			s.inTx = true
		}
		if s.rt.cfg.LSN {
			if want != routeAuto && target == s.rt.primaryIndex() {
				// A write, or a read the primary ran: what it wrote or
				// saw is learned before the next read on a replica.
				s.lsnDirty = true
				if want == routeReplica && !inTx {
					// A read on its own (no commit of the session's
					// orders what it saw): lsnInsert.
					s.lsnInsert = true
				}
			}
			if want == routeReplica && !inTx && target == picked {
				// The primary too: a session that drew it for reads
				// keeps reading there (else every session would drift
				// to the replicas and the primary read nothing). Not a
				// read the primary ran because the picked replica could
				// not (it would pull sessions to the primary for good).
				s.stick = target
			}
		}
		// Count the request in flight before sending it: if the
		// connection ends now, lost() answers it.
		s.reqRead = d.rq.class == classRead
		for b := s.batch; len(b) >= 5; {
			n := int(binary.BigEndian.Uint32(b[1:5])) + 1
			s.track(b[0], b[:n])
			b = b[n:]
		}
		x := s.xactNext
		s.mu.Unlock()
		if x {
			s.sendXact(nc)
		}
		for b := s.batch; len(b) >= 5; {
			n := int(binary.BigEndian.Uint32(b[1:5])) + 1
			frame := b[:n]
			b = b[n:]
			s.remember(frame[0], frame, target)
			if frame[0] == 'B' || frame[0] == 'D' {
				s.replayFor(nc, frame[0], frame[5:])
			}
			nc.fr.AppendRaw(frame)
		}
		_ = nc.fr.Flush()
		return nil
	}
}

// awaitPrimary reports whether a request that found no primary waits for
// one and tries again: with automatic failover (Survive) a request outside
// a transaction waits up to rerouteWait for the primary that takes over,
// as the write port's sessions do, instead of failing during a failover.
func (s *splitSession) awaitPrimary(err error, inTx bool, until *time.Time, changed <-chan struct{}) bool {
	if !s.rt.cfg.Survive || inTx || !errors.Is(err, ErrUpstreamDown) && !errors.Is(err, ErrNoNode) {
		return false
	}
	if until.IsZero() {
		*until = time.Now().Add(rerouteWait)
		s.rt.log.Info("a routed session waits for a primary", "err", err)
	}
	if time.Now().After(*until) || s.ctx.Err() != nil {
		return false
	}
	select {
	case <-s.ctx.Done():
	case <-changed:
	case <-time.After(50 * time.Millisecond):
	}
	return true
}

// flushCur sends what the client goroutine has buffered for the current
// node (it is about to wait for that node's answers).
func (s *splitSession) flushCur() {
	s.mu.Lock()
	var nc *nodeConn
	if s.cur >= 0 {
		nc = s.conns[s.cur]
	}
	s.mu.Unlock()
	if nc != nil && nc.fr.Pending() > 0 {
		_ = nc.fr.Flush()
	}
}

// fits reports whether a request that wants w may go to node idx while
// earlier requests are still in flight there.
func (s *splitSession) fits(idx int, w route) bool {
	if s.cons == consStrong && w == routeReplica {
		return false
	}
	switch w {
	case routeAuto:
		return true
	case routePrimary:
		return idx == s.rt.primaryIndex()
	}
	return s.isReplica(idx)
}

// pickReplica chooses a replica for a read (the balancer over the
// healthy, caught-up candidates), the primary when there is none.
func (s *splitSession) pickReplica() int {
	cands := s.rt.readCandidates(s.cands)
	s.cands = cands
	if len(cands) == 0 {
		return s.rt.primaryIndex()
	}
	if s.rt.cfg.LSN && s.cons == consEventual && s.rt.stickyReads() {
		// least-connected at eventual: the session's reads stay on
		// the node of its last read while it is a candidate, as at
		// session, without waiting for anything there. Balanced anew
		// per transaction, every session opened a backend on every
		// replica: N times the server processes, each used 1/N as
		// often (read-only at N = 4 on 0.15-core hosts: 1.12-1.55x
		// the throughput sticky; docs/benchmarks.md).
		s.mu.Lock()
		stick := s.stick
		s.mu.Unlock()
		for _, c := range cands {
			if c.Index == stick {
				return stick
			}
		}
	}
	if (s.rt.cfg.MultiMaster || s.rt.cfg.LSN) && s.cons == consSession {
		s.mu.Lock()
		need, stick := max(s.lastCommit, s.lastRead), s.stick
		s.mu.Unlock()
		if s.rt.cfg.LSN {
			// The node of the session's last read while it is a
			// candidate: monotonic reads (lsn.go).
			for _, c := range cands {
				if c.Index == stick {
					return stick
				}
			}
		}
		// Every node takes every transaction: balance over the nodes
		// known to have applied what the session needs, so the node
		// rarely has to be asked to wait (a round trip); all of them
		// when none is known to have.
		ready := cands[:0:0]
		for _, c := range cands {
			if s.rt.applied(c.Index) >= need {
				ready = append(ready, c)
			}
		}
		if len(ready) > 0 {
			cands = ready
			if s.rt.stickyReads() {
				// least-connected balances sessions here too: the
				// session stays on the node of its last transaction
				// while that node is ready for it (it is, after a
				// commit there), so a node holds backends for its own
				// sessions only, not for every session (pickReplica's
				// eventual case above says what that cost).
				for _, c := range ready {
					if c.Index == stick {
						return stick
					}
				}
			}
		}
	}
	i := s.rt.balancer.Pick(cands, s.clientIP)
	if i < 0 || i >= len(cands) {
		return s.rt.primaryIndex()
	}
	return cands[i].Index
}

// ensure returns the session's connection to node idx, opening it.
func (s *splitSession) ensure(idx int) (*nodeConn, error) {
	s.mu.Lock()
	nc := s.conns[idx]
	s.mu.Unlock()
	if nc != nil {
		return nc, nil
	}
	if s.inline() {
		// The loop routes a request only to an open connection
		// (splitLoop.inlineOK); the primary changed meanwhile. A dial
		// must not hold up the loop: the client retries.
		return nil, &pgwire.Error{Code: pgwire.CodeCannotConnectNow,
			Message: fmt.Sprintf("tandem: node %s changed role while this request was routed", s.rt.cfg.Nodes[idx].Node),
			Hint:    "retry the request"}
	}
	nc, err := s.dial(idx)
	if err == nil {
		if err = s.startNode(nc); err != nil {
			nc.conn.Close()
		}
	}
	if err != nil {
		if errors.Is(err, ErrUpstreamDown) {
			s.rt.report(s.rt.cfg.Nodes[idx].Node, err)
			s.rt.suspect(s.rt.cfg.Nodes[idx].Node, err)
			if idx != s.rt.primaryIndex() {
				// A read goes to the primary instead.
				return s.ensure(s.rt.primaryIndex())
			}
		}
		return nil, err
	}
	s.mu.Lock()
	s.conns[idx] = nc
	s.mu.Unlock()
	return nc, nil
}

// refuse answers a request no node could take.
func (s *splitSession) refuse(err error, complete bool) error {
	var pe *pgwire.Error
	if !errors.As(err, &pe) {
		pe = &pgwire.Error{Code: pgwire.CodeCannotConnectNow, Message: "tandem: " + err.Error()}
	}
	e := *pe
	e.Severity = "ERROR"
	s.rl.wmu.Lock()
	s.client.Append(pgwire.ToErrorResponse(&e))
	if complete {
		s.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, 'I'})
	}
	_ = s.client.Flush()
	s.rl.wmu.Unlock()
	if !complete {
		s.mu.Lock()
		s.owe = pe.Code
		s.mu.Unlock()
	}
	return nil
}

// awaitConsistency makes sure replica nc has applied what the session's
// read consistency needs, asking it to wait (SET tandem.min_applied_gsn)
// unless the router already knows it has.
func (s *splitSession) awaitConsistency(nc *nodeConn) error {
	var need uint64
	switch s.cons {
	case consEventual:
		return nil
	case consSession:
		if s.rt.cfg.LSN {
			if err := s.learnCommitLSN(); err != nil {
				return err
			}
		}
		s.mu.Lock()
		need = max(s.lastCommit, s.lastRead)
		s.mu.Unlock()
	case consStrong, consBounded:
		// bounded: the primary's position of max_lag ago (a time), or
		// max_lag GSNs behind its position now.
		notBefore := time.Now()
		if s.cons == consBounded && s.rt.cfg.MaxLagTime > 0 {
			notBefore = notBefore.Add(-s.rt.cfg.MaxLagTime)
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.rt.readWait()+2*time.Second)
		g, err := s.rt.primaryGSN(ctx, notBefore)
		cancel()
		if err != nil {
			return err
		}
		need = g
		if s.cons == consBounded && s.rt.cfg.MaxLagTime == 0 {
			need = 0
			if g > s.rt.cfg.MaxLagGSNs {
				need = g - s.rt.cfg.MaxLagGSNs
			}
		}
	}
	if need == 0 || s.rt.applied(nc.idx) >= need {
		return nil
	}
	if s.inline() {
		// The loop's goroutine must not wait (splitLoop.inlineOK saw
		// the replica far enough; it changed since): the primary runs it.
		return errInlineWait
	}
	ch := make(chan error, 1)
	s.mu.Lock()
	if nc.dead {
		s.mu.Unlock()
		return errors.New("connection ended")
	}
	nc.expect = append(nc.expect, 'Z')
	nc.waiter = ch
	s.mu.Unlock()
	if s.rt.cfg.LSN {
		nc.fr.AppendRaw(queryFrame(waitReplayQuery(need, s.rt.readWait())))
	} else {
		nc.fr.AppendRaw(queryFrame("SET " + pgwire.MinAppliedSetting + " = " + strconv.FormatUint(need, 10)))
	}
	if err := nc.fr.Flush(); err != nil {
		return err
	}
	began := time.Now()
	select {
	case err := <-ch:
		outcome := "applied"
		if err == nil {
			s.rt.noteApplied(nc.idx, need)
		} else {
			outcome = "behind"
		}
		s.rt.waits.WithLabelValues(outcome).Observe(time.Since(began).Seconds())
		return err
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// prepare replays onto nc what the request needs and nc lacks: session
// settings, prepared statements, the unnamed statement. Their answers are
// swallowed (nodeConn.expect); nothing waits for them.
func (s *splitSession) prepare(nc *nodeConn, rq request) {
	s.settleTentative()
	var exp []byte
	for ; nc.setDone < len(s.settings); nc.setDone++ {
		nc.fr.AppendRaw(queryFrame(s.settings[nc.setDone]))
		exp = append(exp, 'Z')
	}
	exp = s.replayStatements(nc, rq.needs, rq.unnamed, exp)
	if len(exp) > 0 {
		s.mu.Lock()
		nc.expect = append(nc.expect, exp...)
		s.mu.Unlock()
	}
}

// replayStatements appends to nc the Parse of each named statement in
// names it lacks (closing a stale one first), and of the unnamed one if
// unnamed; it returns exp with the answers to swallow.
func (s *splitSession) replayStatements(nc *nodeConn, names []string, unnamed bool, exp []byte) []byte {
	for _, name := range names {
		v, ok := s.stmtVer[name]
		if !ok || nc.stmts[name] == v {
			continue
		}
		if _, had := nc.stmts[name]; had {
			nc.fr.AppendRaw(closeFrame(name))
			exp = append(exp, '3')
		}
		nc.fr.AppendRaw(s.parses[name])
		exp = append(exp, '1')
		nc.stmts[strings.Clone(name)] = v
	}
	if unnamed && s.unnamed != nil && nc.unnamedVer != s.unnamedVer {
		nc.fr.AppendRaw(s.unnamed)
		exp = append(exp, '1')
		nc.unnamedVer = s.unnamedVer
	}
	return exp
}

// replayFor makes sure the statement a message inside a request or a
// transaction uses (Bind, Describe) is on nc.
func (s *splitSession) replayFor(nc *nodeConn, typ byte, body []byte) {
	var name string
	switch typ {
	case 'B':
		_, rest := cstringT(body)
		name, _ = cstringT(rest)
	case 'D':
		if len(body) < 2 || body[0] != 'S' {
			return
		}
		name, _ = cstringT(body[1:])
	default:
		return
	}
	if name == "" {
		if s.unnamed == nil || nc.unnamedVer == s.unnamedVer {
			return
		}
	} else if v, ok := s.stmtVer[name]; !ok || nc.stmts[name] == v {
		return
	}
	exp := s.replayStatements(nc, []string{name}, name == "", nil)
	if len(exp) > 0 {
		s.mu.Lock()
		nc.expect = append(nc.expect, exp...)
		s.mu.Unlock()
	}
}

func closeFrame(name string) []byte {
	b := make([]byte, 5, 7+len(name))
	b[0] = 'C'
	b = append(b, 'S')
	b = append(b, name...)
	b = append(b, 0)
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	return b
}

// remember records what a message sent to node idx sets up.
func (s *splitSession) remember(typ byte, frame []byte, idx int) {
	var nc *nodeConn
	if idx >= 0 {
		nc = s.conns[idx]
	}
	body := frame[5:]
	switch typ {
	case 'Q':
		if nc != nil {
			nc.unnamedVer = 0 // a simple Query destroys the unnamed statement
		}
		q := transient(body)
		w := firstWord(q)
		if w != "" && w != "SHOW" || innerSemicolon(q) || w == "" && setsConfig(q) {
			s.rememberSession(q, nc)
		}
		if w == "DISCARD" {
			_ = s.applyTandemSet("all", "")
		} else if n, v, ok := tandemSet(q); ok {
			_ = s.applyTandemSet(n, v)
		}
	case 'P':
		name, rest := cstringT(body)
		q, _ := cstringT(rest)
		if n, v, ok := tandemSet(q); ok {
			_ = s.applyTandemSet(n, v) // the node refuses nothing here: best effort
		}
		if w := firstWord(q); w != "" && w != "SHOW" || w == "" && setsConfig(q) {
			// A setting or SQL PREPARE in the extended protocol (pgjdbc
			// sends every statement so), kept when it is parsed: its
			// Execute follows in the same request.
			s.rememberSession(q, nc)
		}
		cl := s.rt.classify(q)
		s.ver++
		if name == "" {
			s.unnamed = append(s.unnamed[:0], frame...)
			s.unnamedVer, s.unnamedCl = s.ver, cl
			if nc != nil {
				nc.unnamedVer = s.ver
			}
			return
		}
		name = strings.Clone(name)
		s.stmtVer[name] = s.ver
		s.parses[name] = bytes.Clone(frame)
		s.stmtClass[name] = cl
		if nc != nil {
			nc.stmts[name] = s.ver
		}
	case 'C':
		if len(body) > 1 && body[0] == 'S' {
			name, _ := cstringT(body[1:])
			if _, ok := s.stmtVer[name]; ok {
				delete(s.stmtVer, name)
				delete(s.parses, name)
				delete(s.stmtClass, name)
			}
			if nc != nil {
				delete(nc.stmts, name)
			}
		}
	}
}

// rememberSession records the session state a query (or a parsed
// statement) sets up, statement by statement, for replay wherever the
// session goes (prepare; at a failover the new primary): settings (SET,
// RESET, DISCARD) and the statements SQL PREPARE makes, with their
// DEALLOCATE. Only those statements of a query with several: replaying
// the query whole would run its other statements again. nc is the
// connection the query goes to, which has them already.
func (s *splitSession) rememberSession(q string, nc *nodeConn) {
	s.settleTentative()
	stmts := []string{q}
	several := innerSemicolon(q)
	if several {
		stmts = pgwire.SplitStatements(q)
	}
	keep := func(st string) {
		s.settings = append(s.settings, strings.Clone(st))
		if nc != nil && nc.setDone == len(s.settings)-1 {
			nc.setDone = len(s.settings)
		}
	}
	// keepTx keeps a transactional one: tentative inside a block.
	keepTx := func(st string) {
		readOnly := s.readOnly
		keep(st)
		if s.inBlock(several) {
			s.keepTentative(len(s.settings)-1, readOnly)
		}
	}
	defer s.compactSettings()
	for _, st := range stmts {
		switch firstWord(st) {
		case "TX":
			s.trackTx(txWord(st))
		case "":
			if setsConfig(st) {
				keepTx(st)
			}
		case "SET", "RESET", "DISCARD":
			if !isSetting(st) {
				continue
			}
			keepTx(st)
			if cl := s.rt.classify(st); cl.readOnlyDefault != 0 {
				s.readOnly = cl.readOnlyDefault > 0
			}
			if isDiscardAll(st) {
				clear(s.sqlPrepared) // replayed, it drops them there too
				clear(s.listening)
			}
		case "LISTEN", "UNLISTEN":
			// The session's channels, replayed where it goes: a
			// listener whose session a failover moved keeps getting
			// the NOTIFYs of the new primary (its connection never
			// ended, so it has no reason to LISTEN again).
			ch, all, ok := listenTarget(st)
			if !ok {
				continue
			}
			keepTx(st) // LISTEN takes effect at COMMIT: not if it rolls back
			s.prepKept++
			switch {
			case firstWord(st) == "LISTEN":
				if s.listening == nil {
					s.listening = map[string]struct{}{}
				}
				s.listening[ch] = struct{}{}
			case all:
				clear(s.listening)
			default:
				delete(s.listening, ch)
			}
		case "PREPARE":
			if name, ok := sqlPrepareName(st); ok {
				keep(st)
				s.prepKept++
				s.sqlPrepared[name] = struct{}{}
			}
		case "DEALLOCATE":
			s.forgetAll(st)
			name, all, ok := deallocateTarget(st)
			switch {
			case !ok:
			case all:
				// Only the SQL-prepared ones: a replayed DEALLOCATE ALL
				// would also drop, on a connection that lagged, the
				// protocol statements the router prepared there since.
				for n := range s.sqlPrepared {
					keep("DEALLOCATE " + quoteIdent(n))
					s.prepKept++
				}
				clear(s.sqlPrepared)
			default:
				if _, had := s.sqlPrepared[name]; had {
					keep("DEALLOCATE " + quoteIdent(name))
					s.prepKept++
					delete(s.sqlPrepared, name)
				}
			}
		}
	}
}

// compactSettings drops from settings the PREPAREs whose statement was
// deallocated since, with their DEALLOCATEs, once they outnumber the live
// ones (an application that prepares and deallocates per request would
// grow the list without end), when every open connection has run the
// whole list (its setDone then moves to the new end; a connection opened
// later replays the shorter list, with the same effect).
func (s *splitSession) compactSettings() {
	if s.prepKept < 2*(len(s.sqlPrepared)+len(s.listening))+32 || len(s.tentative) > 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, nc := range s.conns {
		if nc != nil && nc.setDone != len(s.settings) {
			return
		}
	}
	// The PREPARE that made each live statement: the first since its
	// name was last freed (a second PREPARE of a taken name failed).
	made := map[string]int{}
	for i, st := range s.settings {
		switch firstWord(st) {
		case "PREPARE":
			if name, ok := sqlPrepareName(st); ok {
				if _, taken := made[name]; !taken {
					made[name] = i
				}
			}
		case "DEALLOCATE":
			if name, _, ok := deallocateTarget(st); ok {
				delete(made, name)
			}
		case "DISCARD":
			if isDiscardAll(st) {
				clear(made)
			}
		case "LISTEN":
			// The first LISTEN since the channel was last freed (a
			// second one is a no-op); "\x00" keeps channels apart from
			// statement names.
			if ch, _, ok := listenTarget(st); ok {
				if _, on := made["\x00"+ch]; !on {
					made["\x00"+ch] = i
				}
			}
		case "UNLISTEN":
			if ch, all, ok := listenTarget(st); ok && all {
				for k := range made {
					if strings.HasPrefix(k, "\x00") {
						delete(made, k)
					}
				}
			} else if ok {
				delete(made, "\x00"+ch)
			}
		}
	}
	out := s.settings[:0]
	s.prepKept = 0
	for i, st := range s.settings {
		switch firstWord(st) {
		case "DEALLOCATE", "UNLISTEN":
			continue
		case "PREPARE":
			name, _ := sqlPrepareName(st)
			if j, live := made[name]; !live || j != i {
				continue
			}
			s.prepKept++
		case "LISTEN":
			ch, _, _ := listenTarget(st)
			if j, live := made["\x00"+ch]; !live || j != i {
				continue
			}
			s.prepKept++
		}
		out = append(out, st)
	}
	clear(s.settings[len(out):])
	s.settings = out
	for _, nc := range s.conns {
		if nc != nil {
			nc.setDone = len(s.settings)
		}
	}
}

// isDiscardAll reports whether st is DISCARD ALL (which deallocates every
// prepared statement).
func isDiscardAll(st string) bool {
	f := strings.Fields(strings.ToLower(strings.TrimRight(st, "; \t\r\n")))
	return len(f) == 2 && f[0] == "discard" && f[1] == "all"
}

// innerSemicolon reports whether q has a semicolon before its end: it may
// hold several statements.
func innerSemicolon(q string) bool {
	i := strings.IndexByte(q, ';')
	return i >= 0 && strings.TrimRight(q[i:], "; \t\r\n") != ""
}

// sqlPrepareName is the name SQL PREPARE name [(types)] AS ... gives its
// statement, as PostgreSQL keeps it (unquoted: lower case); false for
// PREPARE TRANSACTION 'gid' (two-phase commit, not session state).
func sqlPrepareName(st string) (string, bool) {
	rest := strings.TrimLeft(st, " \t\r\n")[len("prepare"):]
	name, after, ok := identifier(rest)
	if !ok {
		return "", false
	}
	if name == "transaction" && strings.HasPrefix(strings.TrimLeft(after, " \t\r\n"), "'") {
		return "", false
	}
	return name, true
}

// deallocateTarget reads DEALLOCATE [PREPARE] name | ALL.
func deallocateTarget(st string) (name string, all, ok bool) {
	rest := strings.TrimLeft(st, " \t\r\n")[len("deallocate"):]
	name, after, ok := identifier(rest)
	if ok && name == "prepare" {
		if n, _, ok2 := identifier(after); ok2 {
			name = n
		}
	}
	if !ok {
		return "", false, false
	}
	return name, name == "all" && !strings.HasPrefix(strings.TrimLeft(rest, " \t\r\n"), `"`), true
}

// identifier reads one SQL identifier at the start of s (after blanks):
// a quoted one as written, an unquoted one in lower case, as PostgreSQL
// folds it; and what follows it.
func identifier(s string) (string, string, bool) {
	s = strings.TrimLeft(s, " \t\r\n")
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				return b.String(), s[i+1:], b.Len() > 0
			}
			b.WriteByte(s[i])
		}
		return "", "", false
	}
	i := 0
	for i < len(s) && (s[i] == '_' || s[i] == '$' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9' || s[i] >= 0x80) {
		i++
	}
	if i == 0 {
		return "", "", false
	}
	// Owned: s may be a frame's bytes (transient), and the name is kept
	// (sqlPrepared, savepoints).
	return strings.Clone(strings.ToLower(s[:i])), s[i:], true
}

// quoteIdent quotes a name as an SQL identifier.
func quoteIdent(n string) string { return `"` + strings.ReplaceAll(n, `"`, `""`) + `"` }

// forgetAll handles DEALLOCATE [PREPARE] name | ALL sent as a query.
func (s *splitSession) forgetAll(q string) {
	w := strings.Fields(strings.TrimRight(strings.TrimSpace(q), ";"))
	if len(w) < 2 {
		return
	}
	name := w[len(w)-1]
	if strings.EqualFold(name, "all") {
		clear(s.stmtVer)
		clear(s.parses)
		clear(s.stmtClass)
		return
	}
	delete(s.stmtVer, name)
	delete(s.parses, name)
	delete(s.stmtClass, name)
}

// firstWord is a statement's first keyword, upper case, for the few the
// router looks for (no allocation for the rest).
func firstWord(q string) string {
	q = strings.TrimLeft(q, " \t\r\n")
	i := 0
	for i < len(q) && (q[i] >= 'a' && q[i] <= 'z' || q[i] >= 'A' && q[i] <= 'Z') {
		i++
	}
	switch w := q[:i]; {
	case strings.EqualFold(w, "set"):
		return "SET"
	case strings.EqualFold(w, "reset"):
		return "RESET"
	case strings.EqualFold(w, "discard"):
		return "DISCARD"
	case strings.EqualFold(w, "deallocate"):
		return "DEALLOCATE"
	case strings.EqualFold(w, "prepare"):
		return "PREPARE"
	case strings.EqualFold(w, "show"):
		return "SHOW"
	case strings.EqualFold(w, "listen"):
		return "LISTEN"
	case strings.EqualFold(w, "unlisten"):
		return "UNLISTEN"
	case strings.EqualFold(w, "begin"), strings.EqualFold(w, "start"), strings.EqualFold(w, "commit"), strings.EqualFold(w, "end"),
		strings.EqualFold(w, "rollback"), strings.EqualFold(w, "abort"), strings.EqualFold(w, "savepoint"), strings.EqualFold(w, "release"):
		return "TX" // rememberSession follows transaction blocks (txWord)
	}
	return ""
}

// tandemSet reads SET / RESET of the router's own settings,
// tandem.route and tandem.read_consistency: the name, the value ("" for
// RESET: the default), and false for any other statement. Only the
// query's first statement counts: in "SET tandem.read_consistency =
// eventual; INSERT ...; SELECT ..." the setting is the first one's (the
// node runs all of them, the SET too).
func tandemSet(q string) (name, val string, ok bool) {
	w := firstWord(q)
	if w != "SET" && w != "RESET" {
		return "", "", false
	}
	if i := strings.IndexByte(q, ';'); i >= 0 {
		q = q[:i]
	}
	f := strings.Fields(strings.ToLower(strings.TrimRight(strings.TrimSpace(q), "; \t\r\n")))
	if len(f) < 2 {
		return "", "", false
	}
	if f[1] == "session" && len(f) > 2 {
		f = f[1:]
	}
	name = f[1]
	if w == "RESET" && name == "all" {
		return "all", "", true
	}
	if name != "tandem.route" && name != "tandem.read_consistency" {
		if n, v, found := strings.Cut(name, "="); found && (n == "tandem.route" || n == "tandem.read_consistency") {
			return n, strings.Trim(v+strings.Join(f[2:], " "), `'"`), true
		}
		return "", "", false
	}
	if w == "RESET" {
		return name, "", true
	}
	rest := f[2:]
	if len(rest) > 0 && (rest[0] == "=" || rest[0] == "to") {
		rest = rest[1:]
	} else if len(rest) > 0 && strings.HasPrefix(rest[0], "=") {
		rest[0] = strings.TrimPrefix(rest[0], "=")
	}
	return name, strings.Trim(strings.Join(rest, " "), `'"`), true
}

// quotedTandemSet is the text a SET of a tandem.* setting goes on to the
// node with, its value quoted: a node on the physical engine hands it to
// PostgreSQL, whose grammar refuses a reserved word such as primary as a
// bare value (42601); quoted, PostgreSQL keeps it as a placeholder
// setting for SHOW. The rest of a multi-statement text follows unchanged.
// "" leaves the text as it is (RESET, or nothing to quote).
func quotedTandemSet(q, name, val string) string {
	if name == "all" || val == "" || firstWord(q) != "SET" {
		return ""
	}
	rest := ""
	if i := strings.IndexByte(q, ';'); i >= 0 {
		rest = q[i:]
	}
	return "SET " + name + " = '" + strings.ReplaceAll(val, "'", "''") + "'" + rest
}

// applyTandemSet takes a SET / RESET of tandem.route or
// tandem.read_consistency into the session's routing (the node keeps the
// setting too, for SHOW); an invalid value is an error.
func (s *splitSession) applyTandemSet(name, val string) error {
	switch name {
	case "all":
		s.route, s.cons = routeAuto, s.rt.cons
	case "tandem.route":
		if val == "" || val == "default" {
			s.route = routeAuto
			return nil
		}
		rt, ok := parseRoute(val)
		if !ok {
			return pgwire.Errorf("22023", "invalid value for parameter \"tandem.route\": %q (auto, primary or replica)", val)
		}
		s.route = rt
	case "tandem.read_consistency":
		if val == "" || val == "default" {
			s.cons = s.rt.cons
			return nil
		}
		c, ok := parseConsistency(val)
		if !ok {
			return pgwire.Errorf("22023", "invalid value for parameter \"tandem.read_consistency\": %q (session, strong, bounded or eventual)", val)
		}
		s.cons = c
	}
	return nil
}

// refuseSetting answers a simple-protocol SET of a router setting with an
// invalid value, without a node.
func (s *splitSession) refuseSetting(err error) error {
	s.flushCur()
	s.mu.Lock()
	for !s.closed && s.pending > 0 {
		s.cond.Wait() // answers stay in order
	}
	status := s.txStatus
	s.mu.Unlock()
	s.rl.wmu.Lock()
	defer s.rl.wmu.Unlock()
	s.client.Append(pgwire.ToErrorResponse(err))
	s.client.AppendRaw([]byte{'Z', 0, 0, 0, 5, status})
	return s.client.Flush()
}

// readWait is the configured bound on a replica's wait.
func (r *Router) readWait() time.Duration {
	if r.cfg.ReadWait > 0 {
		return r.cfg.ReadWait
	}
	return time.Second
}
