package sqlpg

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// Parse parses sql with PostgreSQL's grammar. A syntax error comes back as
// SQLSTATE 42601 with PostgreSQL's own message.
func Parse(sql string) (*pg_query.ParseResult, error) {
	tree, err := pg_query.Parse(sql)
	if err != nil {
		msg := err.Error()
		return nil, &pgwire.Error{Code: pgwire.CodeSyntax, Message: strings.TrimSpace(msg), Err: err}
	}
	return tree, nil
}
