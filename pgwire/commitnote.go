package pgwire

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgproto3"
)

// A session that comes through tandem's router carries a tag (startup
// parameter SessionTagParam). The replication agent stamps the tag on the
// writesets the session commits, and the session reports the GSN of each
// commit it acknowledged as ParameterStatus CommitGSNParam, ahead of the
// CommandComplete and ReadyForQuery that answer it. The router keeps the
// last one per session (and does not pass it on): when the node dies with
// the session's COMMIT in flight, the new primary's highest GSN for the tag
// says whether that COMMIT was applied (router/survive.go).
const (
	SessionTagParam = "tandem.session_tag"
	CommitGSNParam  = "tandem.commit_gsn"
)

// CommitNote is a tagged session's link to the replication agent.
type CommitNote struct {
	Tag string
	gsn atomic.Uint64 // the last GSN acknowledged to this session
}

// Committed records that the session's commit at gsn was acknowledged.
func (n *CommitNote) Committed(gsn uint64) {
	for {
		cur := n.gsn.Load()
		if gsn <= cur || n.gsn.CompareAndSwap(cur, gsn) {
			return
		}
	}
}

type commitNoteKey struct{}

// WithCommitNote returns ctx carrying n.
func WithCommitNote(ctx context.Context, n *CommitNote) context.Context {
	return context.WithValue(ctx, commitNoteKey{}, n)
}

// CommitNoteFrom returns the note ctx carries (nil: an untagged session).
func CommitNoteFrom(ctx context.Context) *CommitNote {
	n, _ := ctx.Value(commitNoteKey{}).(*CommitNote)
	return n
}

// reportCommit appends the ParameterStatus for a commit acknowledged
// since the last report (tagged sessions only).
func (s *execSession) reportCommit() {
	if s.note == nil {
		return
	}
	if g := s.note.gsn.Load(); g != s.reportedGSN {
		s.reportedGSN = g
		s.c.Append(&pgproto3.ParameterStatus{Name: CommitGSNParam, Value: strconv.FormatUint(g, 10)})
	}
}
