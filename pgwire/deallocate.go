package pgwire

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
)

// SQLDeallocator is a back end session that keeps the statements of SQL's
// PREPARE itself (the SQLite back end): DEALLOCATE name drops one there
// when tandem's session has no protocol statement of that name, and
// DEALLOCATE ALL drops them all. DeallocateSQL("") drops all; it reports
// whether name was there.
type SQLDeallocator interface {
	DeallocateSQL(name string) bool
}

// deallocate answers DEALLOCATE [PREPARE] { name | ALL }: prepared
// statements made with Parse live in tandem's session, so tandem drops
// them (psycopg sends DEALLOCATE ALL after a DROP or a ROLLBACK once it
// has prepared statements). On a PostgreSQL back end a name tandem does
// not hold (an SQL-level PREPARE), and ALL, also go to the server.
func (s *execSession) deallocate(ctx context.Context, sql string) error {
	f := strings.Fields(strings.TrimRight(strings.TrimSpace(sql), "; \t\n"))
	if len(f) > 1 && strings.EqualFold(f[1], "PREPARE") {
		f = append(f[:1], f[2:]...)
	}
	if len(f) != 2 {
		return Errorf(CodeSyntax, "syntax error in DEALLOCATE: write DEALLOCATE name or DEALLOCATE ALL")
	}
	_, raw := s.bs.(RawSession)
	if strings.EqualFold(f[1], "ALL") {
		for _, p := range s.stmts {
			if p.st != nil {
				p.st.Close()
			}
		}
		s.stmts = map[string]*prepared{}
		if d, ok := s.bs.(SQLDeallocator); ok {
			d.DeallocateSQL("")
		}
		if raw {
			if err := s.runInternal(ctx, sql); err != nil {
				return err
			}
		}
		s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("DEALLOCATE ALL")})
		return nil
	}
	name := f[1]
	if strings.HasPrefix(name, `"`) && strings.HasSuffix(name, `"`) && len(name) > 1 {
		name = strings.ReplaceAll(name[1:len(name)-1], `""`, `"`)
	} else {
		name = strings.ToLower(name)
	}
	p, ok := s.stmts[name]
	switch {
	case ok:
		if p.st != nil {
			p.st.Close()
		}
		delete(s.stmts, name)
	case raw:
		if err := s.runInternal(ctx, sql); err != nil {
			return err
		}
	case s.deallocateSQL(name):
	default:
		return Errorf(CodeUndefinedPStmt, "prepared statement %q does not exist", name)
	}
	s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("DEALLOCATE")})
	return nil
}

// deallocateSQL drops an SQL-level prepared statement the back end keeps.
func (s *execSession) deallocateSQL(name string) bool {
	d, ok := s.bs.(SQLDeallocator)
	return ok && d.DeallocateSQL(name)
}
