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
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tandemdb/tandem/pgwire"
)

// Sessions that survive a failover (issue 11, item 4; DESIGN.md "Sessions
// survive a failover"). With Config.Survive the relay remembers what a
// session set up on its server connection: its named prepared statements
// (the Parse messages, until closed) and its session settings (SET, RESET,
// DISCARD, as sent). When the connection to the node ends without a
// Terminate, the relay connects to the primary the router knows now
// (waiting up to Config.SurviveWait for one), replays the settings and
// the prepared statements there, and goes on:
//
//   - a session idle between transactions notices nothing;
//   - a transaction that was open is lost: its next statements get 40001
//     ("aborted by a failover; retry it") until the client rolls back;
//   - a request in flight is answered 40001 inside a transaction, and
//     08007 (transaction_resolution_unknown) for a COMMIT or a statement
//     outside a transaction, whose outcome the relay cannot know.

// ErrFailover marks the errors a session gets for work lost in a failover.
var ErrFailover = errors.New("aborted by a failover")

const (
	maxRememberedSettings = 256
	codeResolutionUnknown = "08007"
	codeSerialization     = "40001"
)

// sessionMemory is what the relay replays on a new server connection.
type sessionMemory struct {
	mu       sync.Mutex
	settings []string          // simple-query texts, in order
	names    []string          // prepared statement names, in creation order
	parses   map[string][]byte // name -> the Parse frame
	// kinds: what each prepared statement ("" the unnamed one) is,
	// decided once at its Parse for the Binds that run it (relay.track).
	kinds map[string]stmtKind
}

// stmtKind is what a statement text is, for a failover's answer.
type stmtKind struct{ commit, rollback, read, begin bool }

func kindOf(q string) stmtKind {
	k := stmtKind{commit: isCommit(q), read: fastRead(q), begin: isBegin(q)}
	// isRollback allocates: only for texts that may be one (every Parse
	// of a session passes here).
	if t := strings.TrimLeft(q, " \t\r\n"); t != "" && (t[0]|0x20 == 'r' || t[0]|0x20 == 'a') {
		k.rollback = isRollback(q)
	}
	return k
}

// kind is what the prepared statement name is (all false if unknown).
func (m *sessionMemory) kind(name string) stmtKind {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.kinds[name]
}

// isSetting reports whether a statement changes session state the relay
// replays: SET (not SET LOCAL, which ends with the transaction, nor SET
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

// remember records what a client message sets up (frame: type, length,
// body).
func (m *sessionMemory) remember(typ byte, frame []byte) {
	if len(frame) < 5 {
		return
	}
	body := frame[5:]
	m.mu.Lock()
	defer m.mu.Unlock()
	switch typ {
	case 'Q':
		q, _ := cstring(body)
		if isSetting(q) {
			lq := strings.ToLower(q)
			if strings.Contains(lq, "discard all") || strings.HasPrefix(strings.TrimSpace(lq), "deallocate all") {
				m.names, m.parses, m.kinds = nil, nil, nil
			}
			m.settings = append(m.settings, q)
			if len(m.settings) > maxRememberedSettings {
				m.settings = m.settings[len(m.settings)-maxRememberedSettings:]
			}
		}
	case 'P':
		name, rest := cstring(body)
		q, _ := cstring(rest)
		if m.kinds == nil {
			m.kinds = map[string]stmtKind{}
		}
		m.kinds[name] = kindOf(q)
		if name == "" {
			if isSetting(q) {
				m.settings = append(m.settings, q)
			}
			return
		}
		if m.parses == nil {
			m.parses = map[string][]byte{}
		}
		if _, ok := m.parses[name]; !ok {
			m.names = append(m.names, name)
		}
		m.parses[name] = bytes.Clone(frame)
	case 'C':
		if len(body) > 1 && body[0] == 'S' {
			name, _ := cstring(body[1:])
			if _, ok := m.parses[name]; ok {
				delete(m.parses, name)
				delete(m.kinds, name)
				for i, n := range m.names {
					if n == name {
						m.names = append(m.names[:i], m.names[i+1:]...)
						break
					}
				}
			}
		}
	}
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

// replay sets a new server connection up as the old one was: settings
// first, then the prepared statements. An error of one (a setting the new
// server refuses) is logged and skipped.
func (m *sessionMemory) replay(fr *pgwire.Framer) error {
	m.mu.Lock()
	settings := append([]string(nil), m.settings...)
	var parses [][]byte
	for _, n := range m.names {
		parses = append(parses, m.parses[n])
	}
	m.mu.Unlock()
	roundTrip := func() error {
		fr.AppendRaw([]byte{'S', 0, 0, 0, 4})
		if err := fr.Flush(); err != nil {
			return err
		}
		for {
			typ, _, err := fr.ReadFrame()
			if err != nil {
				return err
			}
			if typ == 'Z' {
				return nil
			}
		}
	}
	for _, q := range settings {
		fr.AppendRaw(queryFrame(q))
		if err := fr.Flush(); err != nil {
			return err
		}
		for {
			typ, _, err := fr.ReadFrame()
			if err != nil {
				return err
			}
			if typ == 'Z' {
				break
			}
		}
	}
	if len(parses) > 0 {
		for _, p := range parses {
			fr.AppendRaw(p)
		}
		if err := roundTrip(); err != nil {
			return err
		}
	}
	return nil
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

// errStandbyNow: the server a session was moved to reports itself a hot
// standby (in_hot_standby, PostgreSQL 14 and later).
var errStandbyNow = errors.New("its server is a hot standby now")

// hotStandby reports whether the relay's server said it is a hot standby
// (the in_hot_standby parameter, reported at startup).
func (r *relay) hotStandby() bool {
	for _, p := range r.params {
		if p[0] == "in_hot_standby" {
			return p[1] == "on"
		}
	}
	return false
}

// rerouteWait is how long a session waits for a new primary.
const rerouteWait = 30 * time.Second

// reconnect finds the primary the router knows now and connects the
// session there, replaying its memory; it retries until wait passes.
func (r *relay) reconnect(ctx context.Context, wait time.Duration) (*relay, error) {
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		changed := r.changes()
		up, st := r.pick()
		if st.Healthy {
			nr, err := newRelay(ctx, r.log, up, r.client, r.maxMsg, r.onLost, r.tag)
			if err == nil && nr.hotStandby() {
				// The router's map still names the old primary, whose
				// server is back as a standby (a switchover's old
				// primary follows at once; with router.direct nothing
				// stands between the two): wait for the new one.
				nr.conn.Close()
				err = fmt.Errorf("node %s: %w", up.Node, errStandbyNow)
			} else if err == nil {
				if err = r.mem.replay(nr.upFr); err == nil {
					return nr, nil
				}
				nr.conn.Close()
			}
			last = err
		} else {
			last = fmt.Errorf("node %s is down", up.Node)
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	return nil, fmt.Errorf("no primary to continue the session on within %v: %w", wait, last)
}

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
