package postgres

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/writeset"
)

// TestLockWait: a lock wait given up (or a cancel, a deadlock, a
// serialization failure) is retried by the applier, never skipped as a
// deterministic failure; other errors are not lock waits.
func TestLockWait(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "55P03"}, true},
		{fmt.Errorf("apply GSN 3-4: %w", &pgconn.PgError{Code: "55P03"}), true},
		{&pgconn.PgError{Code: "40P01"}, true},
		{&pgconn.PgError{Code: "40001"}, true},
		{&pgconn.PgError{Code: "57014"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{errors.New("connection reset"), false},
		{nil, false},
	} {
		if got := lockWait(tc.err); got != tc.want {
			t.Errorf("lockWait(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestInserts: the apply fences sequences only after a batch that wrote
// rows (PostgreSQL's writesets carry inserts and updates as OpUpdate).
func TestInserts(t *testing.T) {
	row := func(op writeset.Op) *writeset.Writeset {
		return &writeset.Writeset{Rows: []writeset.Row{{Table: "t", Op: op}}}
	}
	for _, tc := range []struct {
		name  string
		batch []*writeset.Writeset
		want  bool
	}{
		{"empty", nil, false},
		{"deletes", []*writeset.Writeset{row(writeset.OpDelete), row(writeset.OpDeleteRow)}, false},
		{"an upsert", []*writeset.Writeset{row(writeset.OpDelete), row(writeset.OpUpdate)}, true},
		{"a keyless insert", []*writeset.Writeset{row(writeset.OpInsertRow)}, true},
	} {
		if got := inserts(tc.batch); got != tc.want {
			t.Errorf("%s: inserts = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSameText compares keys as the capture and the writeset carry them.
func TestSameText(t *testing.T) {
	k := func(vs ...string) []writeset.Value {
		out := make([]writeset.Value, len(vs))
		for i, v := range vs {
			out[i] = writeset.Text(v)
		}
		return out
	}
	for _, tc := range []struct {
		a, b []writeset.Value
		want bool
	}{
		{k("7"), k("7"), true},
		{k("7", "x"), k("7", "x"), true},
		{k("7"), k("8"), false},
		{k("7"), k("7", "x"), false},
		{k("7"), []writeset.Value{writeset.Null()}, false},
	} {
		if got := sameText(tc.a, tc.b); got != tc.want {
			t.Errorf("sameText(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestAbortError: an aborted session's error keeps the agent's SQLSTATE
// and cause and says what happened on this back end (no connection is
// terminated here).
func TestAbortError(t *testing.T) {
	agent := &pgwire.Error{Code: "40001", Message: "terminating connection due to conflict with replication", Err: errAgent}
	batch := []*writeset.Writeset{{GSN: 42}}
	for _, tc := range []struct {
		writer bool
		want   string
	}{
		{true, "could not serialize access due to concurrent update: a transaction committed on another node (GSN 42)"},
		{false, "canceling transaction due to conflict with replication"},
	} {
		e := abortError(agent, batch, tc.writer)
		if e.Code != "40001" || !errors.Is(e, errAgent) || !strings.HasPrefix(e.Message, tc.want) || strings.Contains(e.Message, "terminating connection") {
			t.Errorf("writer %v: %+v", tc.writer, e)
		}
	}
	if agent.Message != "terminating connection due to conflict with replication" {
		t.Fatalf("the agent's error was changed: %q", agent.Message)
	}
}

var errAgent = errors.New("aborted")
