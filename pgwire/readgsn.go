package pgwire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Read consistency (router/DESIGN.md "Read consistency"). The router
// routes a read-only transaction to a replica only once that replica has
// applied the GSN the session needs (its last commit, its last read, or
// the primary's latest for strong reads). The node waits itself, so the
// router needs no polling and the check is exact:
//
//   - `SET tandem.min_applied_gsn = N` returns once the node has applied
//     GSN N, or fails with ErrBehind (SQLSTATE 55000) after read_wait;
//     the router then runs the read on the primary. The setting is not
//     kept: it is a wait, not a session setting.
//   - a tagged session (the router's) is told, before each
//     ReadyForQuery, the GSN its reads may have seen (ParameterStatus
//     ReadGSNParam, when it changed): an upper bound of the node's state
//     at the end of the request, so a later read that waits for it is
//     never older (monotonic reads); and the node's applied GSN
//     (AppliedGSNSetting, a lower bound), so the router knows when it
//     need not ask for a wait. The router keeps both from the client.
//   - `SHOW tandem.node` names the node, `SHOW tandem.applied_gsn` is
//     its applied GSN.
const (
	ReadGSNParam       = "tandem.read_gsn"
	MinAppliedSetting  = "tandem.min_applied_gsn"
	NodeSetting        = "tandem.node"
	AppliedGSNSetting  = "tandem.applied_gsn"
	CodeBehind         = "55000"
	defaultReadWaitFor = time.Second
)

// ErrBehind means the node had not applied a GSN a read needed within the
// wait.
var ErrBehind = errors.New("node is behind the GSN the read needs")

// Positions is a replicated node's view of its own state for the
// router's read consistency (the replication agent implements it).
type Positions interface {
	// ReadGSN is an upper bound of the GSN of the state a read that
	// ended now saw.
	ReadGSN() uint64
	// AppliedGSN is the last GSN whose changes reads here see.
	AppliedGSN() uint64
	// WaitApplied returns once AppliedGSN() >= gsn, or ErrBehind-wrapped
	// after wait.
	WaitApplied(ctx context.Context, gsn uint64, wait time.Duration) error
}

// isMinApplied reports whether sql is SET tandem.min_applied_gsn and
// returns the GSN.
func isMinApplied(kw []string, sql string) (uint64, bool, error) {
	if len(kw) < 2 || kw[0] != "SET" || kw[1] != "TANDEM" {
		return 0, false, nil
	}
	m := setRe.FindStringSubmatch(sql)
	if m == nil || !strings.EqualFold(m[1], MinAppliedSetting) {
		return 0, false, nil
	}
	g, err := strconv.ParseUint(strings.Trim(m[2], `'"`), 10, 64)
	if err != nil {
		return 0, true, Errorf("22023", "invalid value for parameter %q: %q (a GSN)", MinAppliedSetting, m[2])
	}
	return g, true, nil
}

// waitApplied answers SET tandem.min_applied_gsn = N.
func (s *execSession) waitApplied(ctx context.Context, gsn uint64) error {
	p := s.e.Positions
	if p == nil {
		// Unreplicated: everything committed here is applied here.
		s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
		return nil
	}
	wait := s.e.ReadWait
	if wait <= 0 {
		wait = defaultReadWaitFor
	}
	if err := p.WaitApplied(ctx, gsn, wait); err != nil {
		e := Errorf(CodeBehind, "tandem: node %s has applied GSN %d, not yet %d, after waiting %s (router.read_wait)", s.e.NodeID, p.AppliedGSN(), gsn, FormatTimeout(wait))
		e.Err = fmt.Errorf("%w: %w", ErrBehind, err)
		return e
	}
	s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
	return nil
}

// showPosition answers SHOW tandem.node and tandem.applied_gsn.
func (s *execSession) showPosition(name string) (string, bool) {
	switch name {
	case NodeSetting:
		return s.e.NodeID, true
	case "tandem.route":
		if v, ok := s.setting(name); ok {
			return v, true
		}
		return "auto", true
	case "tandem.read_consistency":
		if v, ok := s.setting(name); ok {
			return v, true
		}
		if s.e.ReadConsistency != "" {
			return s.e.ReadConsistency, true
		}
		return "session", true
	case AppliedGSNSetting:
		if s.e.Positions == nil {
			return "0", true
		}
		return strconv.FormatUint(s.e.Positions.AppliedGSN(), 10), true
	}
	return "", false
}

// reportRead appends the ParameterStatus of the GSN this request's reads
// may have seen, when it changed (tagged sessions on a replicated node).
func (s *execSession) reportRead() {
	if s.note == nil || s.e.Positions == nil {
		return
	}
	// The applied GSN first (a lower bound: the router need not ask this
	// node to wait for it), then the read's upper bound.
	if a := s.e.Positions.AppliedGSN(); a != s.reportedApplied {
		s.reportedApplied = a
		s.c.Append(&pgproto3.ParameterStatus{Name: AppliedGSNSetting, Value: strconv.FormatUint(a, 10)})
	}
	if g := s.e.Positions.ReadGSN(); g != s.reportedRead {
		s.reportedRead = g
		s.c.Append(&pgproto3.ParameterStatus{Name: ReadGSNParam, Value: strconv.FormatUint(g, 10)})
	}
}
