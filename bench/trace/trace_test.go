package trace

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func stmts(spec ...string) []Statement {
	// spec: "session:SQL"
	var out []Statement
	for i, s := range spec {
		out = append(out, Statement{Session: int(s[0] - '0'), AtUs: int64(i), SQL: s[2:]})
	}
	return out
}

func TestUnits(t *testing.T) {
	tests := []struct {
		name string
		in   []Statement
		want [][]string // SQL of each unit, in order
	}{
		{"single statements", stmts("0:SELECT 1", "1:SELECT 2"), [][]string{{"SELECT 1"}, {"SELECT 2"}}},
		{"interleaved blocks", stmts("0:BEGIN", "1:BEGIN READ ONLY", "0:UPDATE a", "1:SELECT b", "1:COMMIT", "0:commit"),
			[][]string{{"BEGIN", "UPDATE a", "commit"}, {"BEGIN READ ONLY", "SELECT b", "COMMIT"}}},
		{"rollback and open block", stmts("0:START TRANSACTION", "0:ROLLBACK", "0:BEGIN", "0:INSERT x"),
			[][]string{{"START TRANSACTION", "ROLLBACK"}, {"BEGIN", "INSERT x"}}},
		{"statement outside and inside", stmts("0:SELECT 1", "0:BEGIN;", "0:END"), [][]string{{"SELECT 1"}, {"BEGIN;", "END"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			for _, u := range (&Trace{Statements: tc.in}).Units() {
				var sqls []string
				for _, st := range u.Statements {
					sqls = append(sqls, st.SQL)
				}
				got = append(got, sqls)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("units %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRecordRead writes statements through the tracer interface (prepared
// by name and not) and reads them back with their parameter types.
func TestRecordRead(t *testing.T) {
	var buf bytes.Buffer
	r, err := NewRecorder(&buf, Header{Workload: "w", Mix: "m", Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var c1, c2 pgx.Conn
	r.TracePrepareStart(ctx, &c1, pgx.TracePrepareStartData{Name: "q1", SQL: "SELECT $1, $2, $3, $4"})
	args := []any{int32(7), 2.5, "it's", nil}
	qctx := r.TraceQueryStart(ctx, &c1, pgx.TraceQueryStartData{SQL: "q1", Args: args})
	r.TraceQueryEnd(qctx, &c1, pgx.TraceQueryEndData{})
	qctx = r.TraceQueryStart(ctx, &c2, pgx.TraceQueryStartData{SQL: "q1"}) // not prepared on c2
	r.TraceQueryEnd(qctx, &c2, pgx.TraceQueryEndData{})
	if err := r.Close(); err != nil || r.Statements() != 2 {
		t.Fatalf("close: %v, %d statements", err, r.Statements())
	}
	if args[0] != int32(7) {
		t.Errorf("the recorder changed the caller's arguments: %v", args)
	}
	tr, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.Workload != "w" || tr.Header.Mix != "m" || tr.Header.Version != Version || len(tr.Statements) != 2 {
		t.Fatalf("read %+v", tr)
	}
	s0, s1 := tr.Statements[0], tr.Statements[1]
	if s0.Session != 0 || s0.SQL != "SELECT $1, $2, $3, $4" || !reflect.DeepEqual(s0.Args, []any{int64(7), 2.5, "it's", nil}) {
		t.Errorf("first statement %+v", s0)
	}
	if s1.Session != 1 || s1.SQL != "q1" || s1.AtUs < s0.AtUs {
		t.Errorf("second statement %+v", s1)
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"not a trace", `{"hello": 1}`},
		{"other version", `{"tandem_trace": 2}`},
		{"bad line", "{\"tandem_trace\": 1}\n{\"s\": 0, \"sql\": \n"},
		{"no SQL", "{\"tandem_trace\": 1}\n{\"s\": 0, \"at\": 1}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Read(strings.NewReader(tc.in)); !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want ErrFormat", err)
			}
		})
	}
}
