package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/pgwire"
)

// ExecutePortal implements pgwire.PortalExecutor: a read inside a
// transaction block that the client fetches in chunks (Execute with a row
// limit, as pgjdbc's fetch size does) runs in a portal on the server, and
// each chunk is fetched when the client asks for it, so a large result
// never sits in the node. Anything else runs as ExecuteRaw does (outside a
// block a portal would not outlive the statement's Sync, and a write is
// captured as a whole).
func (s *Session) ExecutePortal(ctx context.Context, ps pgwire.Statement, params [][]byte, paramFormats, resultFormats []int16, fetch int) (pgwire.Result, error) {
	st := ps.(*Statement)
	if err := s.enter(ctx, st); err != nil {
		s.release()
		return nil, err
	}
	defer s.release()
	if !s.inTx || fetch <= 0 || st.name == "" || writes(st) {
		res, err := s.executeRaw(ctx, ps, params, paramFormats, resultFormats)
		return res, s.abortedErr(err)
	}
	if err := s.flushBegin(ctx); err != nil {
		return nil, err
	}
	r := &portalResult{s: s, name: "tandem_p" + strconv.FormatUint(s.b.seq.Add(1), 36), fetch: uint32(fetch)}
	fe := s.c.Frontend()
	fe.SendBind(&pgproto3.Bind{DestinationPortal: r.name, PreparedStatement: st.name, ParameterFormatCodes: paramFormats, Parameters: params, ResultFormatCodes: resultFormats})
	fe.SendDescribe(&pgproto3.Describe{ObjectType: 'P', Name: r.name})
	if err := r.more(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// portalResult reads a server portal chunk by chunk.
type portalResult struct {
	s         *Session
	name      string
	fetch     uint32
	cols      []pgwire.Column
	rows      [][]any
	i         int
	suspended bool // the server has more rows
	done      bool // CommandComplete seen (or the portal closed)
	tag       string
}

// more asks the server for the next chunk (after whatever Bind and
// Describe are queued) and reads it up to ReadyForQuery.
func (r *portalResult) more(ctx context.Context) error {
	fe := r.s.c.Frontend()
	fe.SendExecute(&pgproto3.Execute{Portal: r.name, MaxRows: r.fetch})
	fe.SendSync(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		r.s.c.Close(context.Background())
		return fmt.Errorf("postgres: fetch from portal: %w", err)
	}
	r.rows, r.i, r.suspended = r.rows[:0], 0, false
	var perr error
	for {
		msg, err := r.s.c.ReceiveMessage(ctx)
		if err != nil {
			r.s.c.Close(context.Background())
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.RowDescription:
			r.cols = make([]pgwire.Column, len(m.Fields))
			for i, f := range m.Fields {
				r.cols[i] = pgwire.Column{Name: string(f.Name), OID: f.DataTypeOID}
			}
		case *pgproto3.DataRow:
			row := make([]any, len(m.Values))
			for i, v := range m.Values {
				if v != nil {
					row[i] = pgwire.Raw(append([]byte{}, v...))
				}
			}
			r.rows = append(r.rows, row)
		case *pgproto3.PortalSuspended:
			r.suspended = true
		case *pgproto3.CommandComplete:
			r.done, r.tag = true, string(m.CommandTag)
		case *pgproto3.ErrorResponse:
			perr = pgconn.ErrorResponseToPgError(m)
		case *pgproto3.ReadyForQuery:
			if perr != nil {
				r.done = true
			}
			return perr
		}
	}
}

func (r *portalResult) Columns() []pgwire.Column { return r.cols }

func (r *portalResult) Next(dst []any) (bool, error) {
	for r.i >= len(r.rows) {
		if !r.suspended {
			return false, nil
		}
		r.s.lockUse()
		err := r.more(context.Background())
		r.s.use.Unlock()
		if err != nil {
			return false, err
		}
	}
	copy(dst, r.rows[r.i])
	r.i++
	return true, nil
}

func (r *portalResult) Tag() string { return r.tag }

// Close closes the server's portal unless it ran to its end (closing a
// portal the transaction's end already dropped is no error).
func (r *portalResult) Close() error {
	r.s.lockUse()
	defer r.s.use.Unlock()
	if r.done || r.s.c.IsClosed() {
		return nil
	}
	r.done = true
	fe := r.s.c.Frontend()
	fe.SendClose(&pgproto3.Close{ObjectType: 'P', Name: r.name})
	fe.SendSync(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		r.s.c.Close(context.Background())
		return err
	}
	var perr error
	for {
		msg, err := r.s.c.ReceiveMessage(context.Background())
		if err != nil {
			r.s.c.Close(context.Background())
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			perr = pgconn.ErrorResponseToPgError(m)
		case *pgproto3.ReadyForQuery:
			return perr
		}
	}
}
