package postgres

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/pgwire"
)

// copyFromRe: COPY table [(columns)] FROM ... loads rows (every other form,
// COPY table|(query) TO ..., only reads).
var copyFromRe = regexp.MustCompile(`(?is)^\s*COPY\s+(?:"(?:[^"]|"")*"|[^\s("]+)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[^\s("]+))?\s*(?:\([^)]*\))?\s*FROM\b`)

// Copy implements pgwire.CopyStreamer: the statement runs on the server as
// the client wrote it (every COPY form and format PostgreSQL accepts) and
// the COPY sub-protocol is relayed message by message. Rows a COPY FROM
// loads fire the capture triggers like any INSERT, so they replicate with
// the transaction: an autocommit COPY FROM is its own replicated
// transaction, one inside a block commits with it.
func (s *Session) Copy(ctx context.Context, sql string, cl pgwire.CopyClient) (string, error) {
	if err := s.enterSQL(ctx, sql); err != nil {
		s.release()
		return "", err
	}
	defer s.release()
	tag, err := s.copy(ctx, sql, cl)
	return tag, s.abortedErr(err)
}

func (s *Session) copy(ctx context.Context, sql string, cl pgwire.CopyClient) (string, error) {
	loads := copyFromRe.MatchString(sql)
	if loads && s.b.repl != nil {
		if err := s.b.repl.Writable(); err != nil {
			return "", err
		}
		if err := s.b.fenceSequences(ctx); err != nil {
			return "", err
		}
	}
	if err := s.flushBegin(ctx); err != nil {
		return "", err
	}
	autocommit := loads && !s.inTx && s.b.repl != nil
	if autocommit {
		if err := s.sendBegin(ctx, "BEGIN"); err != nil {
			return "", err
		}
	}
	tag, err := s.relayCopy(ctx, sql, cl)
	if err != nil {
		if autocommit && !s.c.IsClosed() {
			_ = s.exec(ctx, "ROLLBACK")
		}
		return "", err
	}
	if autocommit {
		if err := s.replicatedCommit(ctx, "", nil); err != nil {
			return "", err
		}
	}
	return tag, nil
}

// relayCopy sends sql as a simple Query and relays the COPY sub-protocol
// between the server and the client until the server is ready again.
func (s *Session) relayCopy(ctx context.Context, sql string, cl pgwire.CopyClient) (string, error) {
	fe := s.c.Frontend()
	fe.Send(&pgproto3.Query{String: sql})
	if err := fe.Flush(); err != nil {
		s.c.Close(context.Background())
		return "", fmt.Errorf("postgres: send COPY: %w", err)
	}
	var tag string
	var perr, cerr error
	for {
		msg, err := s.c.ReceiveMessage(ctx)
		if err != nil {
			s.c.Close(context.Background())
			return "", err
		}
		switch m := msg.(type) {
		case *pgproto3.CopyInResponse:
			if cerr == nil {
				cerr = cl.Send(m)
			}
			if cerr == nil {
				cerr = cl.Flush()
			}
			if cerr == nil {
				cerr = s.pumpCopyIn(fe, cl)
			}
			if cerr != nil {
				// The client is gone: end the server's COPY.
				fe.Send(&pgproto3.CopyFail{Message: "tandem: client connection lost during COPY"})
				_ = fe.Flush()
			}
		case *pgproto3.CopyOutResponse, *pgproto3.CopyData, *pgproto3.CopyDone:
			if cerr == nil {
				cerr = cl.Send(m)
			}
		case *pgproto3.CommandComplete:
			tag = string(m.CommandTag)
		case *pgproto3.ErrorResponse:
			perr = pgconn.ErrorResponseToPgError(m)
		case *pgproto3.ReadyForQuery:
			if cerr != nil {
				return "", cerr
			}
			return tag, perr
		}
	}
}

// pumpCopyIn forwards the client's COPY data to the server until CopyDone
// or CopyFail (a server error meanwhile is read afterwards: the server
// discards the rest of the data, as the protocol says).
func (s *Session) pumpCopyIn(fe *pgproto3.Frontend, cl pgwire.CopyClient) error {
	pending := 0
	for {
		m, err := cl.Receive()
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *pgproto3.CopyData:
			fe.Send(m)
			pending += len(m.Data)
			if pending >= 64<<10 {
				if err := fe.Flush(); err != nil {
					return err
				}
				pending = 0
			}
		case *pgproto3.CopyDone, *pgproto3.CopyFail:
			fe.Send(m)
			return fe.Flush()
		}
	}
}
