package sqlpg

import (
	"reflect"
	"testing"
)

func TestDDLTargets(t *testing.T) {
	tests := []struct {
		sql  string
		temp bool
		rels []RelName
	}{
		{"CREATE TEMP TABLE t (id int)", true, nil},
		{"CREATE TEMPORARY TABLE t (id int)", true, nil},
		{"CREATE LOCAL TEMP TABLE t (id int)", true, nil},
		{"CREATE TABLE pg_temp.t (id int)", true, nil},
		{"CREATE TABLE t (id int)", false, nil},
		{"CREATE UNLOGGED TABLE t (id int)", false, nil},
		{"CREATE TEMP TABLE t AS SELECT 1 AS x", true, nil},
		{"CREATE TABLE t AS SELECT 1 AS x", false, nil},
		{"SELECT 1 AS x INTO TEMP t", true, nil},
		{"CREATE TEMP VIEW v AS SELECT 1", true, nil},
		{"CREATE VIEW v AS SELECT 1", false, nil},
		{"CREATE TEMP SEQUENCE s", true, nil},
		{"DROP TABLE a, s.b", false, []RelName{{Name: "a"}, {Schema: "s", Name: "b"}}},
		{"DROP TABLE IF EXISTS \"Mixed\"", false, []RelName{{Name: "Mixed"}}},
		{"DROP INDEX i", false, []RelName{{Name: "i"}}},
		{"DROP FUNCTION f()", false, nil},
		{"ALTER TABLE t ADD COLUMN c int", false, []RelName{{Name: "t"}}},
		{"ALTER TABLE t RENAME TO u", false, []RelName{{Name: "t"}}},
		{"CREATE INDEX i ON t (c)", false, []RelName{{Name: "t"}}},
		{"TRUNCATE a, b", false, []RelName{{Name: "a"}, {Name: "b"}}},
		{"INSERT INTO t VALUES (1)", false, nil},
		{"not sql at all", false, nil},
		{"CREATE TEMP TABLE a (id int); CREATE TABLE b (id int)", false, nil},
	}
	for _, tt := range tests {
		temp, rels := DDLTargets(tt.sql)
		if temp != tt.temp || !reflect.DeepEqual(rels, tt.rels) {
			t.Errorf("DDLTargets(%q) = %v, %v; want %v, %v", tt.sql, temp, rels, tt.temp, tt.rels)
		}
	}
}
