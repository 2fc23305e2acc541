package pgwire

import (
	"slices"
	"testing"
)

// TestSpecialSet: SET's forms without = or TO read as the setting they
// set (Flyway resets its connection with SET ROLE 'name').
func TestSpecialSet(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want []string // name, value; nil: not one of them
	}{
		{"SET ROLE 'tandem'", []string{"role", "'tandem'"}},
		{"set session role none;", []string{"role", "none"}},
		{"SET TIME ZONE 'Europe/Paris'", []string{"TimeZone", "'Europe/Paris'"}},
		{"SET LOCAL TIME ZONE LOCAL", []string{"TimeZone", "DEFAULT"}},
		{"SET NAMES 'UTF8'", []string{"client_encoding", "'UTF8'"}},
		{"SET SCHEMA 'public'", []string{"search_path", "'public'"}},
		{"SET SESSION AUTHORIZATION DEFAULT", []string{"session_authorization", "DEFAULT"}},
		{"SET statement_timeout = 5", nil},
		{"SET nonsense", nil},
	} {
		m := specialSet(c.sql)
		var got []string
		if m != nil {
			got = m[1:]
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.sql, got, c.want)
		}
	}
}
