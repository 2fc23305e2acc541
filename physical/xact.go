package physical

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/secure"
)

// What became of a COMMIT in flight when its primary died (design.md,
// guarantee 7: "resolved by asking the new primary, or answered 08007").
// PostgreSQL tags nothing with a session, so the router learns, in the
// same round trip as the COMMIT (a query sent just before it, its answer
// kept from the client), the transaction's id, where the primary's WAL
// stood and its timeline (router/lsn.go, xactQuery). After a failover it asks the new primary
// (GET /xact, XactOutcome).
//
// A transaction id alone is not enough: a promoted standby hands out ids
// from where its replay left off, so an id the old primary used but whose
// records never reached the standby can be used again for another
// transaction on the new timeline, and its status there says nothing of
// the lost one. The WAL position settles it. The timeline history of the
// new primary names the position where the old timeline ended in it (the
// switch point S). The transaction's records all lie before L, the insert
// position read just before its COMMIT, and its commit record at or after
// L. So:
//
//   - L >= S: the commit record is not in the new primary's history: it
//     did not take effect there (whatever its id means there now);
//   - L < S: every record of the transaction before its commit was
//     replayed, so the id was known to the standby before it was promoted
//     and cannot have been handed out again: pg_xact_status answers for the
//     lost transaction (committed, or aborted: not committed). (A
//     transaction whose id is in no record before its commit wrote only
//     temporary or unlogged tables, or nothing: nothing of it is on the new
//     primary whatever the answer.);
//   - the same timeline (no promotion: the connection, not the server,
//     was lost): pg_xact_status answers, "in progress" staying unknown.

// ErrXactUnknown: the outcome of the transaction cannot be told here.
var ErrXactUnknown = errors.New("the transaction's outcome cannot be told")

// XactOutcome is GET /xact's answer.
type XactOutcome struct {
	Node      string `json:"node"`
	Role      string `json:"role"`
	Committed bool   `json:"committed"`
	// How it was decided: "status" (pg_xact_status), "after-switch" (the
	// commit record lies past where the old timeline ended here).
	By string `json:"by"`
}

var hexTLI = regexp.MustCompile(`^[0-9A-Fa-f]{8}$`)

// XactOutcome tells whether the transaction xid, whose COMMIT was sent
// when the WAL insert position of timeline tli was lsn, committed in this
// primary's history (above).
func (e *Engine) XactOutcome(ctx context.Context, xid, lsn, tli string) (XactOutcome, error) {
	out := XactOutcome{Node: e.cfg.ID}
	if _, err := strconv.ParseUint(xid, 10, 64); err != nil {
		return out, fmt.Errorf("xid %q: want a transaction id (xid8)", xid)
	}
	l, err := parseLSN(lsn)
	if err != nil {
		return out, fmt.Errorf("lsn %q: %w", lsn, err)
	}
	if !hexTLI.MatchString(tli) {
		return out, fmt.Errorf("tli %q: want 8 hexadecimal digits", tli)
	}
	want, _ := strconv.ParseUint(tli, 16, 32)
	st, _ := e.state()
	out.Role = st.Role
	if st.Role != RolePrimary {
		return out, fmt.Errorf("%w: node %s is not the primary", ErrXactUnknown, e.cfg.ID)
	}
	err = e.withConn(ctx, func(c *pgconn.PgConn) error {
		rows, err := query(ctx, c, "SELECT substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8) WHERE NOT pg_is_in_recovery()")
		if err != nil {
			return err
		}
		if len(rows) != 1 {
			return fmt.Errorf("%w: node %s's server is in recovery", ErrXactUnknown, e.cfg.ID)
		}
		cur, err := strconv.ParseUint(rows[0][0], 16, 32)
		if err != nil {
			return err
		}
		if cur != want {
			hist, err := query(ctx, c, "SELECT pg_read_file('pg_wal/' || $1 || '.history')", fmt.Sprintf("%08X", cur))
			if err != nil {
				return fmt.Errorf("the timeline history of %08X: %w", cur, err)
			}
			s, ok := switchPoint(hist[0][0], want)
			if !ok {
				return fmt.Errorf("%w: timeline %08X is not in node %s's history (timeline %08X)", ErrXactUnknown, want, e.cfg.ID, cur)
			}
			if l >= s {
				out.By = "after-switch"
				return nil
			}
		}
		rows, err = query(ctx, c, "SELECT coalesce(pg_xact_status($1::xid8), 'unknown')", xid)
		if err != nil {
			return err
		}
		switch rows[0][0] {
		case "committed":
			out.Committed, out.By = true, "status"
		case "aborted":
			out.By = "status"
		default:
			return fmt.Errorf("%w: transaction %s is %s on node %s", ErrXactUnknown, xid, rows[0][0], e.cfg.ID)
		}
		return nil
	})
	return out, err
}

// switchPoint finds, in a timeline history file, the position where
// timeline tli ended (its line "tli<TAB>switchpoint<TAB>reason").
func switchPoint(history string, tli uint64) (uint64, bool) {
	for _, line := range strings.Split(history, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		t, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil || t != tli {
			continue
		}
		if p, err := parseLSN(f[1]); err == nil {
			return p, true
		}
	}
	return 0, false
}

// registerXact serves GET /xact?xid=&lsn=&tli= (the admin token): the
// router's question after a failover.
func (e *Engine) registerXact(mux *http.ServeMux, token string, log *slog.Logger) {
	mux.Handle("/xact", secure.RequireToken(token, log, false, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		out, err := e.XactOutcome(req.Context(), q.Get("xid"), q.Get("lsn"), q.Get("tli"))
		secure.ReplyJSON(w, out, err)
	})))
}
