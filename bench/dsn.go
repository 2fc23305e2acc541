package bench

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// parseDSN parses a pgx DSN (URL or key=value form) with a clear error.
func parseDSN(dsn string) (*pgx.ConnConfig, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, fmt.Errorf("%w: --dsn is required (e.g. postgres://user@127.0.0.1:5432/db)", ErrBadOption)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: --dsn %s: %v", ErrBadOption, RedactDSN(dsn), err)
	}
	return cfg, nil
}

var kvPassword = regexp.MustCompile(`(?i)\s*\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S*)`)

// RedactDSN returns dsn without its password, in URL or key=value form.
// It is what results record as the target.
func RedactDSN(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(unparsable DSN)"
		}
		if u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.User(u.User.Username())
			}
		}
		q := u.Query()
		if q.Has("password") {
			q.Del("password")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return strings.TrimSpace(kvPassword.ReplaceAllString(dsn, ""))
}
