package sqlpg_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/sqlpg"
)

// paramSchema is one table, pt(id int4, s varchar(20), n numeric, m mood),
// and the enum type mood (OID 900001).
type paramSchema struct{}

var mood = sqlpg.Enum{OID: 900001, Name: "mood", Labels: []string{"sad", "happy"}}

func (paramSchema) Columns(table string) []sqlpg.Column {
	if !strings.EqualFold(table, "pt") {
		return nil
	}
	return []sqlpg.Column{
		{Name: "id", Type: sqlpg.TypeByName["int4"], Typmod: -1},
		{Name: "s", Type: sqlpg.TypeByName["varchar"], Typmod: 24},
		{Name: "n", Type: sqlpg.TypeByName["numeric"], Typmod: -1},
		{Name: "m", Type: sqlpg.TypeByName["text"], Typmod: -1, Enum: &mood},
	}
}

func (paramSchema) Enum(name string) (sqlpg.Enum, bool) {
	return mood, strings.EqualFold(name, "mood")
}

// The parameter types a statement gives (ParameterDescription), as
// PostgreSQL 15 reports them (checked against it in the e2e corpus,
// 29_parameter_types.sql).
func TestParamTypes(t *testing.T) {
	cases := []struct {
		sql  string
		want []uint32
	}{
		{"SELECT $1::int, $2::text[], $3::oid[], CAST($4 AS bigint)", []uint32{23, 1009, 1028, 20}},
		{"SELECT $1::mood, $2::regclass", []uint32{900001, 2205}},
		{"SELECT id FROM pt WHERE id = $1 AND $2 < n", []uint32{23, 1700}},
		{"SELECT id FROM pt WHERE s = $1 AND s LIKE $2", []uint32{25, 25}},                                               // varchar compares as text
		{`SELECT id FROM pt WHERE CAST(s AS varchar) LIKE $1 ESCAPE '\' AND s ILIKE $2 ESCAPE $3`, []uint32{25, 25, 25}}, // Tortoise ORM's startswith
		{"SELECT id FROM pt p WHERE p.m = $1", []uint32{900001}},
		{"SELECT id FROM pt WHERE id = ANY($1) AND s <> ALL($2)", []uint32{1007, 1009}},
		{"SELECT id FROM pt WHERE id IN ($1, $2)", []uint32{23, 23}},
		{"SELECT id FROM pt WHERE id = $1::int8", []uint32{20}}, // the cast, not the column
		{"DELETE FROM pt WHERE id = $1", []uint32{23}},
		{"SELECT $1", []uint32{25}}, // an unknown output column is text
		{"SELECT pg_terminate_backend($1), pg_advisory_lock($2), pg_advisory_lock($3, $4)", []uint32{23, 20, 23, 23}},
		{"SELECT set_config($1, $2, $3), pg_sleep($4)", []uint32{25, 25, 16, 701}},
		// From where a parameter stands, bottom-up as PostgreSQL's parse
		// analysis: the operator's other operand, a function's argument,
		// the column written.
		{"SELECT $1 + 1, $2 || 'x'", []uint32{23, 25}},
		{"SELECT id FROM pt WHERE id + $1 > 3 AND n = $2 / 2", []uint32{23, 23}},
		{"SELECT lower($1), coalesce($2, n), CASE WHEN $3 THEN s END FROM pt", []uint32{25, 1700, 16}},
		{"SELECT id FROM pt WHERE s IN ($1, $2) AND id BETWEEN $3 AND $4", []uint32{1043, 1043, 23, 23}},
		{"SELECT id FROM pt p JOIN pt q ON q.id = p.id + $1", []uint32{23}},
		{"INSERT INTO pt (id, s) VALUES ($1, $2), ($3, $4)", []uint32{23, 1043, 23, 1043}},
		{"INSERT INTO pt (id, n) SELECT $1, $2", []uint32{23, 1700}},
		{"UPDATE pt SET (s, n) = ($1, $2) WHERE id = $3", []uint32{1043, 1700, 23}},
		{"SELECT generate_series(1, $1)", []uint32{23}},
		{"SELECT id FROM pt LIMIT $1", []uint32{20}},
	}
	for _, c := range cases {
		tr, err := sqlpg.TranslateFresh(c.sql, paramSchema{})
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if fmt.Sprint(tr.Params) != fmt.Sprint(c.want) {
			t.Errorf("%s: parameter types %v, want %v", c.sql, tr.Params, c.want)
		}
	}
}

// Text parameters of uuid and array type are read as the column keeps
// them (node-postgres sends every array as '{"3","1","2"}').
func TestParamIn(t *testing.T) {
	cases := []struct {
		oid  uint32
		in   string
		want string
		err  string
	}{
		{2950, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", ""},
		{2950, "{a0eebc999c0b4ef8bb6d6bb9bd380a11}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", ""},
		{2950, "nope", "", "invalid input syntax for type uuid"},
		{1007, `{"3","1","2"}`, "{3,1,2}", ""},
		{1007, "{ 3 , 1,2}", "{3,1,2}", ""},
		{1007, "{1,x}", "", "invalid input syntax for type integer"},
		{1009, `{"a b",c,NULL,"NULL"}`, `{"a b",c,NULL,"NULL"}`, ""},
		{1009, "{1,2", "", "malformed array literal"},
		{25, "{1,2", "{1,2", ""},
	}
	for _, c := range cases {
		got, err := sqlpg.ParamIn(c.oid, c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParamIn(%d, %q) = %v, %v; want error %q", c.oid, c.in, got, err, c.err)
		case c.err == "" && (err != nil || fmt.Sprint(got) != c.want):
			t.Errorf("ParamIn(%d, %q) = %v, %v; want %q", c.oid, c.in, got, err, c.want)
		}
	}
}
