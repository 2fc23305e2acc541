package router

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Read consistency on the physical engine (Config.LSN; physical/DESIGN.md
// "Read consistency"). The nodes relay sessions to PostgreSQL itself, so
// nothing reports a commit's position in the session's stream as the
// writeset engine's nodes do (tandem.commit_gsn). Instead:
//
//   - a request the router sends to the primary as a write marks the
//     session (lsnDirty); the position of its commits is learned only when
//     a read is about to go to a replica, by one query on the session's own
//     primary connection, its answer swallowed: the primary's WAL flush
//     position, or its insert position where the flush position may not
//     cover the session (flushPositionQuery below; its commits returned
//     before the read began);
//   - a replica not already known to have replayed that far (the health
//     probe's replay position, or an earlier wait) is asked to wait with a
//     DO block that polls pg_last_wal_replay_lsn() every millisecond, on
//     the session's connection there, up to read_wait; past it the block
//     fails with 55000 and the primary runs the read, as on the writeset
//     engine;
//   - writes only cost the flag: a session that writes and never reads on
//     a replica never pays the query;
//   - monotonic reads: at session consistency a session's reads stay on
//     the node of its last read, a replica or the primary
//     (splitSession.stick), while that one is a read candidate (a
//     replica's replay position only moves forward, so each read sees at
//     least what the one before it saw). A read that goes to another
//     replica (the last one drained, down or too far behind) sets the
//     flag first, as a read or write on the primary already did: the
//     primary's insert position is past everything any replica has
//     replayed, so waiting for it on the new replica covers whatever the
//     earlier reads saw. The price is one round trip to the primary per switch, not per
//     read; balancing happens per session (the first read's pick), as
//     pgpool-II balances, instead of per transaction.

// The queries that learn a session's commit position on the primary.
// flushPositionQuery: the WAL flush position, which is past the end of
// every commit record that was flushed before its COMMIT returned
// (synchronous_commit local, on, remote_write, remote_apply: every
// safeness level tandem sets), so past the session's last commit and
// everything that commit could have seen, and which the primary's WAL
// senders already stream (a replica reaches it within its replication
// delay). Unless the session's synchronous_commit is off at the time of
// the query: then, and for the cases lsnInsert and asyncCommit name, the
// WAL insert position, which is past everything committed, flushed or
// not, but also past WAL of transactions still running, that reaches a
// replica only when a later commit or the WAL writer flushes it (measured
// in the lab, a loaded 0.25-core replica: 23.6 ms per wait on average for
// the insert position, 10-14 ms for the flush position).
const (
	flushPositionQuery  = "SELECT (CASE WHEN current_setting('synchronous_commit') = 'off' THEN pg_current_wal_insert_lsn() ELSE pg_current_wal_flush_lsn() END)::text"
	insertPositionQuery = "SELECT pg_current_wal_insert_lsn()::text"
)

// noteAsyncCommit marks the session as one whose commits may be
// asynchronous: it named synchronous_commit (SET, SET LOCAL, set_config,
// a statement it prepared). Its commit positions are the primary's insert
// position from then on.
func (s *splitSession) noteAsyncCommit() {
	s.mu.Lock()
	s.asyncCommit = true
	s.mu.Unlock()
}

// containsFold reports whether s contains sub (ASCII, sub lower case),
// ignoring case, without allocating.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for ; j < len(sub); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// errNoPrimaryConn: the session's commit position could not be asked of
// the primary (its connection ended): the read runs on the primary.
var errNoPrimaryConn = errors.New("no connection to the primary to learn the session's commit position")

// learnCommitLSN makes s.lastCommit the primary's WAL insert position if
// the session may have committed or seen something since it was last
// learned (lsnDirty: a write, a read on the primary, a switch of replica).
// Called before a read goes to a replica, with nothing in flight.
func (s *splitSession) learnCommitLSN() error {
	s.mu.Lock()
	if !s.lsnDirty {
		s.mu.Unlock()
		return nil
	}
	if s.inline() {
		// splitLoop.inlineOK leaves a dirty session to the helper.
		s.mu.Unlock()
		return errInlineWait
	}
	pi := s.rt.primaryIndex()
	nc := s.conns[pi]
	s.mu.Unlock()
	if nc == nil {
		// The primary changed since the session wrote (a failover): the
		// new one's position is past everything of the session's that
		// survived it.
		var err error
		if nc, err = s.ensure(pi); err != nil || nc.idx != pi {
			return fmt.Errorf("%w: %v", errNoPrimaryConn, err)
		}
	}
	s.mu.Lock()
	if nc.dead {
		s.mu.Unlock()
		return errNoPrimaryConn
	}
	ch := make(chan error, 1)
	nc.expect = append(nc.expect, 'Z')
	nc.waiter = ch
	nc.capture, nc.got = true, ""
	q := flushPositionQuery
	if s.lsnInsert || s.asyncCommit {
		q = insertPositionQuery
	}
	s.mu.Unlock()
	nc.fr.AppendRaw(queryFrame(q))
	if err := nc.fr.Flush(); err != nil {
		return err
	}
	s.rt.positions.Inc()
	var err error
	select {
	case err = <-ch:
	case <-s.ctx.Done():
		err = s.ctx.Err()
	}
	s.mu.Lock()
	got := nc.got
	nc.capture, nc.got = false, ""
	if err == nil {
		var lsn uint64
		if lsn, err = parseLSN(got); err == nil {
			s.lastCommit = max(s.lastCommit, lsn)
			s.lsnDirty, s.lsnInsert = false, false
		}
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("the session's commit position on %s: %w", nc.up.Node, err)
	}
	return nil
}

// waitReplayQuery is the statement a replica runs to wait until it has
// replayed the WAL up to lsn, for at most wait: a DO block polling
// pg_last_wal_replay_lsn() every millisecond, failing with 55000
// (object_not_in_prerequisite_state, as the writeset engine's wait does)
// when the time is up. A node that is no longer in recovery (promoted)
// has everything it will ever have: it returns at once.
func waitReplayQuery(lsn uint64, wait time.Duration) string {
	pos := formatLSN(lsn)
	ms := strconv.FormatInt(max(wait.Milliseconds(), 1), 10)
	var b strings.Builder
	b.Grow(400)
	b.WriteString("DO $tandem$DECLARE d timestamptz := clock_timestamp() + interval '")
	b.WriteString(ms)
	b.WriteString(" milliseconds'; BEGIN WHILE pg_is_in_recovery() AND coalesce(pg_last_wal_replay_lsn(), '0/0') < '")
	b.WriteString(pos)
	b.WriteString("'::pg_lsn LOOP IF clock_timestamp() > d THEN RAISE EXCEPTION 'tandem: this replica has not replayed the WAL up to ")
	b.WriteString(pos)
	b.WriteString(" within ")
	b.WriteString(ms)
	b.WriteString(" ms' USING ERRCODE = '55000'; END IF; PERFORM pg_sleep(0.001); END LOOP; END$tandem$")
	return b.String()
}

// parseLSN reads PostgreSQL's text form of a WAL position ("16/B374D848").
func parseLSN(v string) (uint64, error) {
	hi, lo, ok := strings.Cut(strings.TrimSpace(v), "/")
	if ok {
		h, err1 := strconv.ParseUint(hi, 16, 32)
		l, err2 := strconv.ParseUint(lo, 16, 32)
		if err1 == nil && err2 == nil {
			return h<<32 | l, nil
		}
	}
	return 0, fmt.Errorf("not a WAL position: %q", v)
}

// formatLSN writes a WAL position as PostgreSQL does.
func formatLSN(n uint64) string { return fmt.Sprintf("%X/%X", n>>32, uint32(n)) }

// firstColumn is the text of a DataRow's first column ("" for NULL or a
// malformed row).
func firstColumn(frame []byte) string {
	if len(frame) < 11 || binary.BigEndian.Uint16(frame[5:7]) == 0 {
		return ""
	}
	n := int32(binary.BigEndian.Uint32(frame[7:11]))
	if n < 0 || 11+int(n) > len(frame) {
		return ""
	}
	return string(frame[11 : 11+int(n)])
}

// xactQuery runs on the primary, inside a client's transaction, just
// before its COMMIT when sessions survive a failover on the physical
// engine: the transaction's id (NULL: none assigned, it wrote nothing),
// the WAL insert position and the timeline. If the primary dies with the
// COMMIT in flight, the new primary tells from them whether it committed
// (physical/xact.go has the rule). Its answer is kept from the client,
// and must reach the router before the COMMIT runs: it ends with a Sync
// of its own, whose ReadyForQuery makes the server send it.
//
// It should not fail: every function is the catalog's, schema-qualified,
// and on a server in recovery the position and timeline are NULL. If it
// does (a statement_timeout, a cancel, its prepared statement dropped by
// a client's DEALLOCATE ALL run where the router cannot see it), the
// transaction is aborted and its COMMIT answers ROLLBACK: the router
// turns that answer into the error (xactRollback), so the client is not
// told its COMMIT went through.
//
// It runs as a statement prepared once per server connection (xactStmt,
// xactFrames): parsed and planned at every COMMIT it cost a PostgreSQL
// primary about half of the 85 µs of CPU it adds to a pgbench TPC-B
// transaction (measured 2026-12-07; the rest is the flush, which the
// resolution needs).
const xactQuery = "SELECT pg_catalog.pg_current_xact_id_if_assigned()::text, " +
	"CASE WHEN pg_catalog.pg_is_in_recovery() THEN NULL ELSE pg_catalog.pg_current_wal_insert_lsn()::text END, " +
	"CASE WHEN pg_catalog.pg_is_in_recovery() THEN NULL ELSE pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_insert_lsn()), 1, 8) END"

// xactRef is what xactQuery told of the transaction whose COMMIT is in
// flight.
type xactRef struct {
	asked  bool   // xactQuery went with the COMMIT
	known  bool   // and its answer arrived
	failed []byte // or its ErrorResponse did (xactRollback)
	xid    string
	lsn    string
	tli    string
}

// columns reads a DataRow frame's text columns ("" for NULL).
func columns(frame []byte) []string {
	if len(frame) < 7 {
		return nil
	}
	n := int(binary.BigEndian.Uint16(frame[5:7]))
	out := make([]string, 0, n)
	b := frame[7:]
	for i := 0; i < n && len(b) >= 4; i++ {
		l := int32(binary.BigEndian.Uint32(b[:4]))
		b = b[4:]
		if l < 0 {
			out = append(out, "")
			continue
		}
		if int(l) > len(b) {
			return out
		}
		out = append(out, string(b[:l]))
		b = b[l:]
	}
	return out
}

// take records a DataRow of xactQuery's answer.
func (x *xactRef) take(frame []byte) {
	if c := columns(frame); len(c) == 3 {
		x.xid, x.lsn, x.tli = c[0], c[1], c[2]
	}
}

// xactStmt is the name xactQuery is prepared under on a server
// connection.
const xactStmt = "_tandem_xact"

// xactFrames are the messages that run xactQuery ahead of a COMMIT:
// Bind, Execute and Sync of xactStmt when ready (prepared on that
// connection), else first Close (no error when there is none) and Parse.
// The answers, all kept from the client: [CloseComplete, ParseComplete,]
// BindComplete, DataRow, CommandComplete, ReadyForQuery; or an
// ErrorResponse and ReadyForQuery.
func xactFrames(ready bool) []byte {
	if ready {
		return xactRun
	}
	return xactPrepareRun
}

var (
	xactRun        = xactEncode(false)
	xactPrepareRun = xactEncode(true)
)

func xactEncode(prepare bool) []byte {
	var b []byte
	if prepare {
		b, _ = (&pgproto3.Close{ObjectType: 'S', Name: xactStmt}).Encode(b)
		b, _ = (&pgproto3.Parse{Name: xactStmt, Query: xactQuery}).Encode(b)
	}
	b, _ = (&pgproto3.Bind{PreparedStatement: xactStmt}).Encode(b)
	b, _ = (&pgproto3.Execute{}).Encode(b)
	b, _ = (&pgproto3.Sync{}).Encode(b)
	return b
}

// xactStep takes typ, a message of xactQuery's answer, into x and ready
// (whether xactStmt is prepared on the connection), and reports whether it
// was the last (ReadyForQuery). A failure is kept in x.failed (see
// xactRollback) and makes the next run prepare the statement again.
func xactStep(x *xactRef, ready *bool, typ byte, frame []byte) (last bool) {
	switch typ {
	case '1':
		*ready = true
	case 'D':
		x.take(frame)
		x.known = true
	case 'E':
		x.failed = bytes.Clone(frame)
		*ready = false
	case 'Z':
		return true
	}
	return false
}

// xactRollback is what the client gets in place of frame, a message of
// its COMMIT's answer, when xactQuery failed before it (x.failed): the
// transaction was aborted, so the COMMIT answered ROLLBACK; the client
// gets xactQuery's error instead, as for a COMMIT that fails (a deferred
// constraint), and the transaction is over either way.
func xactRollback(x *xactRef, typ byte, frame []byte) []byte {
	if x.failed == nil || typ != 'C' || !bytes.HasPrefix(frame[5:], []byte("ROLLBACK\x00")) {
		return frame
	}
	var e pgproto3.ErrorResponse
	if err := e.Decode(x.failed[5:]); err != nil {
		e = pgproto3.ErrorResponse{Severity: "ERROR", Code: "XX000"}
	}
	x.failed = nil
	e.Message = "tandem: the transaction was rolled back, not committed: the query that names it for a failover failed: " + e.Message
	out, _ := e.Encode(nil)
	return out
}

// mentionsDeallocate reports whether a statement text may drop prepared
// statements (DEALLOCATE, DISCARD ALL): xactStmt is then prepared again.
func mentionsDeallocate(q string) bool {
	for i := 0; i+7 <= len(q); i++ {
		if c := q[i]; c != 'd' && c != 'D' {
			continue
		}
		if strings.EqualFold(q[i:i+7], "dealloc") || strings.EqualFold(q[i:i+7], "discard") {
			return true
		}
	}
	return false
}
