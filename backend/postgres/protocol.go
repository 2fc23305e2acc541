package postgres

import (
	"context"

	"github.com/tandemdb/tandem/pgwire"
)

// DescribePortal implements pgwire.PortalDescriber for cursors made with
// DECLARE, which live on the server: the row type of `FETCH FORWARD 0 FROM
// name`, prepared (not run), is the cursor's. A cursor that does not exist
// describes as no rows.
func (s *Session) DescribePortal(ctx context.Context, name string) ([]pgwire.Column, bool, error) {
	s.lockUse()
	defer s.use.Unlock()
	if err := s.flushBegin(ctx); err != nil {
		return nil, false, err
	}
	d, err := s.c.Prepare(ctx, "", "FETCH FORWARD 0 FROM "+pgQuote(name), nil)
	if err != nil {
		return nil, false, err
	}
	if len(d.Fields) == 0 {
		return nil, false, nil
	}
	cols := make([]pgwire.Column, len(d.Fields))
	for i, f := range d.Fields {
		cols[i] = pgwire.Column{Name: f.Name, OID: f.DataTypeOID}
	}
	return cols, true, nil
}
