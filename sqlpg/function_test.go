package sqlpg_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
)

// TestTempFunction: what CREATE FUNCTION pg_temp... the session keeps
// (Sequelize's findOrCreate function: an OUT parameter of a table's row
// type filled by INSERT ... RETURNING * INTO, a unique_violation handler
// with GET STACKED DIAGNOSTICS), and what it refuses with its SQLSTATE.
func TestTempFunction(t *testing.T) {
	fn, ok, err := sqlpg.ParseTempFunction(`CREATE OR REPLACE FUNCTION pg_temp.testfunc(OUT response "Users", OUT sequelize_caught_exception text) RETURNS RECORD AS $func_1a$ BEGIN INSERT INTO "Users" ("id","username") VALUES (DEFAULT,'x') RETURNING * INTO response; EXCEPTION WHEN unique_violation THEN GET STACKED DIAGNOSTICS sequelize_caught_exception = PG_EXCEPTION_DETAIL; END $func_1a$ LANGUAGE plpgsql`)
	if err != nil || !ok {
		t.Fatalf("Sequelize's function: %v %v", ok, err)
	}
	if fn.Name != "testfunc" || !fn.Replace || fmt.Sprint(fn.Outs) != "[{response Users} {sequelize_caught_exception text}]" {
		t.Errorf("parsed as %+v", fn)
	}
	b := fn.Body
	if len(b.Body) != 1 || b.Body[0].Into != "response" || len(b.Handlers) != 1 || fmt.Sprint(b.Handlers[0].Codes) != "[23505]" ||
		len(b.Handlers[0].Body) != 1 || fmt.Sprint(b.Handlers[0].Body[0].Diag) != "[{sequelize_caught_exception PG_EXCEPTION_DETAIL}]" {
		t.Errorf("body %+v", b)
	}
	fn, _, err = sqlpg.ParseTempFunction(`CREATE FUNCTION pg_temp.f(OUT n int, OUT a text[]) AS $$ BEGIN SELECT count(*) INTO n FROM t; END $$ LANGUAGE plpgsql`)
	if err != nil || fmt.Sprint(fn.Outs) != "[{n int4} {a text[]}]" || fn.Body.Body[0].Into != "n" {
		t.Errorf("scalar OUT parameters: %+v %v", fn, err)
	}
	for _, c := range []struct{ sql, code string }{
		{`CREATE FUNCTION public.f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql`, "0A000"},
		{`CREATE FUNCTION pg_temp.f(IN a int, OUT b int) AS $$ BEGIN END $$ LANGUAGE plpgsql`, "0A000"},
		{`CREATE FUNCTION pg_temp.f(OUT b int) AS $$ SELECT 1 $$ LANGUAGE sql`, "0A000"},
		{`CREATE FUNCTION pg_temp.f(OUT b int) AS $$ DECLARE x int; BEGIN END $$ LANGUAGE plpgsql`, "0A000"},
		{`CREATE FUNCTION pg_temp.f(OUT b int) AS $$ BEGIN EXCEPTION WHEN no_such_thing THEN NULL; END $$ LANGUAGE plpgsql`, "42704"},
	} {
		_, ok, err := sqlpg.ParseTempFunction(c.sql)
		var pe *pgwire.Error
		if !ok || !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: %v %v, want SQLSTATE %s", c.sql, ok, err, c.code)
		}
	}
	if _, ok, _ := sqlpg.ParseTempFunction("SELECT 1"); ok {
		t.Error("SELECT taken for a function")
	}
}

func TestFuncCall(t *testing.T) {
	cases := []struct{ sql, want string }{
		{`SELECT (testfunc.response)."id", (testfunc.response).username, testfunc.sequelize_caught_exception FROM pg_temp.testfunc()`,
			"testfunc [{response id id} {response username username} {sequelize_caught_exception  sequelize_caught_exception}]"},
		{`SELECT (f.r).*, n AS count FROM pg_temp.g() AS f`, "g [{r * *} {n  count}]"},
		{`SELECT * FROM pg_temp.g()`, "g [{*  }]"},
	}
	for _, c := range cases {
		call, ok, err := sqlpg.ParseFuncCall(c.sql)
		if !ok || err != nil || fmt.Sprintf("%s %v", call.Name, call.Targets) != c.want {
			t.Errorf("%s: %+v %v %v, want %s", c.sql, call, ok, err, c.want)
		}
	}
	if _, ok, _ := sqlpg.ParseFuncCall(`SELECT * FROM generate_series(1, 2)`); ok {
		t.Error("a built-in function taken for the session's")
	}
	if _, ok, err := sqlpg.ParseFuncCall(`SELECT * FROM pg_temp.g() WHERE true`); !ok || err == nil {
		t.Errorf("WHERE over a session function: %v %v, want 0A000", ok, err)
	}
	if name, missing, ok := sqlpg.ParseDropTempFunction(`DROP FUNCTION IF EXISTS pg_temp.testfunc()`); !ok || !missing || name != "testfunc" {
		t.Errorf("DROP FUNCTION: %q %v %v", name, missing, ok)
	}
	if _, _, ok := sqlpg.ParseDropTempFunction(`DROP FUNCTION public.f()`); ok {
		t.Error("DROP FUNCTION public.f taken for the session's")
	}
}
