package trace

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// TestRecordBatch writes a batch through the pgx.BatchTracer interface:
// every statement is recorded in order, prepared names as their SQL, with
// its error's SQLSTATE, one after the other in time.
func TestRecordBatch(t *testing.T) {
	var _ pgx.BatchTracer = (*Recorder)(nil)
	var buf bytes.Buffer
	r, err := NewRecorder(&buf, Header{Workload: "w"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var c pgx.Conn
	r.TracePrepareStart(ctx, &c, pgx.TracePrepareStartData{Name: "upd", SQL: "UPDATE t SET v = $1 WHERE k = $2"})
	bctx := r.TraceBatchStart(ctx, &c, pgx.TraceBatchStartData{Batch: &pgx.Batch{}})
	r.TraceBatchQuery(bctx, &c, pgx.TraceBatchQueryData{SQL: "BEGIN"})
	time.Sleep(time.Millisecond)
	r.TraceBatchQuery(bctx, &c, pgx.TraceBatchQueryData{SQL: "upd", Args: []any{1, 2}})
	r.TraceBatchQuery(bctx, &c, pgx.TraceBatchQueryData{SQL: "upd", Args: []any{3, 4}, Err: &pgconn.PgError{Code: "40P01"}})
	r.TraceBatchEnd(bctx, &c, pgx.TraceBatchEndData{})
	r.TraceBatchQuery(ctx, &c, pgx.TraceBatchQueryData{SQL: "not in a batch"}) // no TraceBatchStart: ignored
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []Statement{
		{SQL: "BEGIN"},
		{SQL: "UPDATE t SET v = $1 WHERE k = $2", Args: []any{int64(1), int64(2)}},
		{SQL: "UPDATE t SET v = $1 WHERE k = $2", Args: []any{int64(3), int64(4)}, SQLState: "40P01"},
	}
	if len(tr.Statements) != len(want) {
		t.Fatalf("recorded %d statements, want %d: %+v", len(tr.Statements), len(want), tr.Statements)
	}
	for i, st := range tr.Statements {
		if st.SQL != want[i].SQL || !reflect.DeepEqual(st.Args, want[i].Args) || st.SQLState != want[i].SQLState || st.Session != 0 {
			t.Errorf("statement %d: %+v, want %+v", i, st, want[i])
		}
		if i > 0 && st.AtUs < tr.Statements[i-1].AtUs+tr.Statements[i-1].DurUs {
			t.Errorf("statement %d starts at %d µs, before the previous one ended (%+v)", i, st.AtUs, tr.Statements[i-1])
		}
	}
	if tr.Statements[1].DurUs < 1000 {
		t.Errorf("the second statement's result came 1 ms after the first's, recorded %d µs", tr.Statements[1].DurUs)
	}
	if u := tr.Units(); len(u) != 1 || len(u[0].Statements) != 3 {
		t.Errorf("units %+v, want one open block of 3 statements", u)
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
