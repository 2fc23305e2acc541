package sqlpg

import (
	"errors"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
)

// Clauses the SQLite back end cannot carry out are refused (0A000) rather
// than accepted and ignored: ON COMMIT DROP / DELETE ROWS on a temporary
// table (PRESERVE ROWS, the default, is accepted; ON COMMIT on a permanent
// table is PostgreSQL's 42P16), UNIQUE NULLS NOT DISTINCT.
func TestRefusedClauses(t *testing.T) {
	for _, tc := range []struct {
		sql, code string // "" = translated
	}{
		{"CREATE TEMP TABLE t (a int)", ""},
		{"CREATE TEMP TABLE t (a int) ON COMMIT PRESERVE ROWS", ""},
		{"CREATE TEMPORARY TABLE t (a int) ON COMMIT DROP", "0A000"},
		{"CREATE TEMP TABLE t (a int) ON COMMIT DELETE ROWS", "0A000"},
		{"CREATE TEMP TABLE t ON COMMIT DROP AS SELECT 1 AS a", "0A000"},
		{"CREATE TABLE zero_columns ()", "0A000"},
		{"CREATE VIEW pv AS SELECT $1", "42P02"},
		{"CREATE TABLE pc (a int CHECK (a > $1))", "42P02"},
		{"SELECT count(*)::regclass", "0A000"},
		{"SELECT rank()", "42809"},
		{"SELECT ~~ 'a'", "42883"},
		{"INSERT INTO t VALUES (1) ON CONFLICT (a) DO UPDATE SET a.b = 1", "0A000"},
		{"CREATE TEMP TABLE t ON COMMIT PRESERVE ROWS AS SELECT 1 AS a", ""},
		{"CREATE TABLE t (a int) ON COMMIT DROP", "42P16"},
		{"CREATE TABLE t (a int) ON COMMIT DELETE ROWS", "42P16"},
		{"CREATE TABLE t (a int) ON COMMIT PRESERVE ROWS", "42P16"},
		{"CREATE TABLE t ON COMMIT PRESERVE ROWS AS SELECT 1 AS a", "42P16"},
		// NULLS NOT DISTINCT: SQLite's unique index lets NULLs repeat.
		{"CREATE TABLE t (a int UNIQUE NULLS NOT DISTINCT)", "0A000"},
		{"CREATE TABLE t (a int, UNIQUE NULLS NOT DISTINCT (a))", "0A000"},
		{"CREATE UNIQUE INDEX i ON t (a) NULLS NOT DISTINCT", "0A000"},
		{"ALTER TABLE t ADD CONSTRAINT c UNIQUE NULLS NOT DISTINCT (a)", "0A000"},
		{"CREATE TABLE t (a int UNIQUE NULLS DISTINCT)", ""},
		{"SELECT DISTINCT a FROM (VALUES (1)) v(a)", ""},
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
