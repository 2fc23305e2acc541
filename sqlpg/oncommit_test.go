package sqlpg

import (
	"errors"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
)

// ON COMMIT: PostgreSQL's 42P16 on a permanent table; on a temporary one
// PRESERVE ROWS (the default) is accepted, DROP and DELETE ROWS are refused
// (0A000) rather than silently not carried out.
func TestOnCommit(t *testing.T) {
	for _, tc := range []struct {
		sql, code string // "" = translated
	}{
		{"CREATE TEMP TABLE t (a int)", ""},
		{"CREATE TEMP TABLE t (a int) ON COMMIT PRESERVE ROWS", ""},
		{"CREATE TEMPORARY TABLE t (a int) ON COMMIT DROP", "0A000"},
		{"CREATE TEMP TABLE t (a int) ON COMMIT DELETE ROWS", "0A000"},
		{"CREATE TEMP TABLE t ON COMMIT DROP AS SELECT 1 AS a", "0A000"},
		{"CREATE TEMP TABLE t ON COMMIT PRESERVE ROWS AS SELECT 1 AS a", ""},
		{"CREATE TABLE t (a int) ON COMMIT DROP", "42P16"},
		{"CREATE TABLE t (a int) ON COMMIT DELETE ROWS", "42P16"},
		{"CREATE TABLE t (a int) ON COMMIT PRESERVE ROWS", "42P16"},
		{"CREATE TABLE t ON COMMIT PRESERVE ROWS AS SELECT 1 AS a", "42P16"},
	} {
		_, err := TranslateFresh(tc.sql, nil)
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.sql, err)
			}
			continue
		}
		var pe *pgwire.Error
		if !errors.As(err, &pe) || pe.Code != tc.code {
			t.Errorf("%s: %v, want SQLSTATE %s", tc.sql, err, tc.code)
		}
		if tc.code == "0A000" && !errors.Is(err, ErrNotSupported) {
			t.Errorf("%s: %v does not wrap ErrNotSupported", tc.sql, err)
		}
	}
}
