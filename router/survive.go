package router

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/pgwire"
)

// Sessions that survive a failover (issue 11, item 4; DESIGN.md "Sessions
// survive a failover"). With Config.Survive the write port's sessions are
// routed sessions (txroute.go; pinned to the primary without Split): a
// session whose node connection ends goes on on the primary the router
// knows now, with its settings and prepared statements replayed there,
// and what was in flight is answered or resolved (splitSession.lost,
// settleHeld, resolveInFlight). The helpers
// here serve that: what a statement is (isSetting, isCommit, isRollback,
// isBegin), the session's tag, the errors a session gets for lost work,
// what a client is told of a COMMIT in flight (inFlightAnswer,
// endsTransaction), and asking the new primary whether it took effect
// (committedOn).

// ErrFailover marks the errors a session gets for work lost in a failover.
var ErrFailover = errors.New("aborted by a failover")

const (
	codeResolutionUnknown = "08007"
	codeSerialization     = "40001"
)

// isSetting reports whether a statement changes session state a routed
// session replays: SET (not SET LOCAL, which ends with the transaction, nor SET
// TRANSACTION), RESET, DISCARD.
func isSetting(q string) bool {
	w := strings.Fields(strings.ToLower(strings.TrimSpace(q)))
	if len(w) == 0 {
		return false
	}
	switch w[0] {
	case "reset", "discard":
		return true
	case "set":
		return len(w) > 1 && w[1] != "local" && w[1] != "transaction" && !(w[1] == "session" && len(w) > 2 && w[2] == "characteristics")
	}
	return false
}

// isRollback reports whether a statement ends a transaction by rolling it
// back (what a client sends after a 40001).
func isRollback(q string) bool {
	w := strings.Fields(strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q), ";"))))
	return len(w) > 0 && (w[0] == "rollback" || w[0] == "abort") && !(len(w) > 1 && (w[1] == "prepared" || w[1] == "to"))
}

// isCommit reports whether a statement commits (its outcome is unknown
// when the connection ends before the answer).
// It allocates nothing: every request of a session passes here.
func isCommit(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n")
	word := func(w string) (string, bool) {
		if len(q) < len(w) || !strings.EqualFold(q[:len(w)], w) {
			return "", false
		}
		rest := q[len(w):]
		if rest != "" && !strings.ContainsRune(" \t\r\n;", rune(rest[0])) {
			return "", false
		}
		return strings.TrimLeft(rest, " \t\r\n"), true
	}
	rest, ok := word("commit")
	if !ok {
		rest, ok = word("end")
	}
	if !ok {
		return false
	}
	return len(rest) < 8 || !strings.EqualFold(rest[:8], "prepared")
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

// parseTextT is the statement text of a Parse frame ("" if none), a view
// of the frame (transient: not to be kept).
func parseTextT(p []byte) string {
	if len(p) < 5 {
		return ""
	}
	_, rest := cstringT(p[5:])
	q, _ := cstringT(rest)
	return q
}

// isBegin reports whether a statement text is one BEGIN or START
// TRANSACTION (with its options) and nothing else: a request made of it
// and statements after it, without a COMMIT, commits nothing.
func isBegin(q string) bool {
	q = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q), ";"))
	if q == "" || strings.ContainsRune(q, ';') {
		return false
	}
	w, _, _ := strings.Cut(q, " ")
	return strings.EqualFold(w, "begin") || strings.EqualFold(w, "start") && len(q) > 6 && strings.EqualFold(strings.Fields(q)[1], "transaction")
}

// failoverError is the answer to work lost when the session's connection
// to node old ended (its node failed or was fenced, or the connection was
// cut) and the session went on on node now.
func failoverError(code, old, now string) *pgwire.Error {
	where := "on node " + now
	if now == old || now == "" {
		where = "on the same node"
	}
	if code == codeResolutionUnknown {
		return &pgwire.Error{Code: code,
			Message: fmt.Sprintf("tandem: the session's connection to node %s ended (a failover or a cut connection) before this statement's outcome was known; it may or may not have committed", old),
			Hint:    "check whether its changes are there before retrying it; the session itself goes on " + where, Err: ErrFailover}
	}
	return &pgwire.Error{Code: code,
		Message: fmt.Sprintf("tandem: the transaction was lost when the session's connection to node %s ended (a failover or a cut connection); it did not commit and can be retried", old),
		Hint:    "roll back and retry the transaction; the session goes on " + where + " with its prepared statements and settings", Err: ErrFailover}
}

// rerouteWait is how long a session waits for a new primary.
const rerouteWait = 30 * time.Second

// queryFrame is a simple Query message.
func queryFrame(q string) []byte {
	b := make([]byte, 5, 6+len(q))
	b[0] = 'Q'
	b = append(b, q...)
	b = append(b, 0)
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	return b
}

// newSessionTag names a session to the nodes (random, 128 bits).
func newSessionTag() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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

// ErrNoSessionIndex: the node keeps no index of its sessions' commits
// (the physical engine: PostgreSQL commits, nothing tags them), so the
// outcome of a statement in flight at a failover cannot be asked by the
// session's tag: 08007 (a COMMIT is asked about by its transaction:
// xactCommittedOn).
var ErrNoSessionIndex = errors.New("the node keeps no session index (physical engine): the outcome cannot be asked")

// adminGet asks node up's admin address for path (with its query), with
// the admin token, over HTTPS where the node serves it.
func adminGet(ctx context.Context, up Upstream, path string) (*http.Response, error) {
	cl := &http.Client{Timeout: 3 * time.Second}
	if up.AdminTLS != nil {
		// Asked once per failover: no connection kept open after it.
		cl.Transport = &http.Transport{TLSClientConfig: up.AdminTLS, DisableKeepAlives: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(up.AdminURL, "/status")+path, nil)
	if err != nil {
		return nil, err
	}
	if up.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+up.AdminToken)
	}
	return cl.Do(req)
}

// errCannotAsk: asking again will not tell the outcome.
var errCannotAsk = errors.New("the outcome cannot be told")

// xactCommittedOn asks the physical engine's node up whether the
// transaction x describes committed in its history (physical/xact.go).
// A transaction that was assigned no id wrote nothing: its COMMIT cannot
// have lost anything.
func xactCommittedOn(ctx context.Context, up Upstream, x xactRef) (bool, error) {
	switch {
	case !x.asked:
		return false, fmt.Errorf("node %s: %w", up.Node, ErrNoSessionIndex)
	case !x.known:
		return false, fmt.Errorf("%w: the answer naming the transaction did not arrive before the connection ended", errCannotAsk)
	case x.xid == "":
		return true, nil
	case x.lsn == "" || x.tli == "":
		return false, fmt.Errorf("%w: the transaction ran on a server in recovery", errCannotAsk)
	}
	q := url.Values{"xid": {x.xid}, "lsn": {x.lsn}, "tli": {x.tli}}
	resp, err := adminGet(ctx, up, "/xact?"+q.Encode())
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var v struct {
		Committed bool   `json:"committed"`
		Role      string `json:"role"`
		Error     string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return false, fmt.Errorf("node %s: /xact: HTTP %d: %w", up.Node, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		// The primary answered that it cannot tell (physical/xact.go).
		return false, fmt.Errorf("%w: node %s: %s", errCannotAsk, up.Node, v.Error)
	}
	return v.Committed, nil
}

// committedOn asks node up whether it holds a commit of the session
// tagged tag after GSN after: true (applied), false (not), or an error
// (unknown). On the physical engine (x non-nil) it asks instead about the
// transaction xactQuery described.
func committedOn(ctx context.Context, up Upstream, tag string, after uint64, x *xactRef) (bool, error) {
	if up.AdminURL == "" || !strings.HasSuffix(up.AdminURL, "/status") {
		return false, errors.New("no admin address to ask")
	}
	if x != nil {
		return xactCommittedOn(ctx, up, *x)
	}
	resp, err := adminGet(ctx, up, "/session?tag="+url.QueryEscape(tag))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return false, fmt.Errorf("node %s: %w", up.Node, ErrNoSessionIndex)
	}
	var v struct {
		GSN   uint64 `json:"gsn"`
		Found bool   `json:"found"`
		Role  string `json:"role"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return false, err
	}
	if v.Role != "primary" {
		return false, fmt.Errorf("node %s is %s", up.Node, v.Role)
	}
	if !v.Found {
		// Never seen. A session that had no commit acknowledged yet has
		// none there: the one in flight did not take effect (the node
		// rebuilds its session index from its log at a restart, and a
		// commit that was in flight is among the log's last records).
		// One that had commits acknowledged should be known: the node
		// forgot (index generations, a trimmed log), so nobody can tell.
		if after == 0 {
			return false, nil
		}
		return false, fmt.Errorf("node %s does not know this session", up.Node)
	}
	return v.GSN > after, nil
}
