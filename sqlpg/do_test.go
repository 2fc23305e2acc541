package sqlpg

import (
	"errors"
	"reflect"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
)

func TestParseDo(t *testing.T) {
	b, ok, err := ParseDo(`DO 'BEGIN CREATE TYPE "public"."enum_Users_role" AS ENUM(''admin'',''editor''); EXCEPTION WHEN duplicate_object THEN null; END'`)
	want := &DoBlock{Body: []DoItem{{SQL: `CREATE TYPE "public"."enum_Users_role" AS ENUM('admin','editor')`}}, Handlers: []DoHandler{{Codes: []string{"42710"}}}}
	if !ok || err != nil || !reflect.DeepEqual(b, want) {
		t.Fatalf("Sequelize's enum: %+v %v %v", b, ok, err)
	}
	b, _, err = ParseDo(`DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_type WHERE typname = 'x') THEN CREATE TYPE x AS ENUM ('a'); ELSIF false THEN NULL; ELSE RAISE EXCEPTION 'no'; END IF; EXCEPTION WHEN SQLSTATE '42710' OR unique_violation THEN INSERT INTO t VALUES (2); WHEN others THEN NULL; END $$`)
	if err != nil || len(b.Body) != 1 || b.Body[0].If == nil || len(b.Body[0].If.Conds) != 2 || !b.Body[0].If.Else[0].Raise.Error ||
		!reflect.DeepEqual(b.Handlers[0].Codes, []string{"42710", "23505"}) || b.Handlers[1].Codes[0] != "" || b.Handlers[0].Body[0].SQL != "INSERT INTO t VALUES (2)" {
		t.Fatalf("IF / handlers: %+v %v", b, err)
	}
	for sql, code := range map[string]string{
		`DO $$ DECLARE n int; BEGIN n := 1; END $$`:                            "0A000",
		`DO $$ BEGIN FOR i IN 1..3 LOOP NULL; END LOOP; END $$`:                "0A000",
		`DO $$ BEGIN NULL; EXCEPTION WHEN no_such_condition THEN NULL; END $$`: "42704",
		`DO LANGUAGE plperl $$ 1 $$`:                                           "0A000",
	} {
		var pe *pgwire.Error
		if _, _, err := ParseDo(sql); !errors.As(err, &pe) || pe.Code != code {
			t.Errorf("%s: %v, want %s", sql, err, code)
		}
	}
	if _, ok, _ := ParseDo("SELECT 1"); ok {
		t.Error("SELECT 1 read as DO")
	}
}
