package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/writeset"
)

func upsert(gsn uint64, id int64) *writeset.Writeset {
	return &writeset.Writeset{GSN: gsn, Epoch: 1, Rows: []writeset.Row{{
		Table: "t", Op: writeset.OpUpdate, KeyCols: []string{"id"}, Key: []writeset.Value{writeset.Int(id)},
		Cols: []string{"id", "v"}, After: []writeset.Value{writeset.Int(id), writeset.Text("x")},
	}}}
}

func batchOf(from, to uint64) []*writeset.Writeset {
	var out []*writeset.Writeset
	for g := from; g <= to; g++ {
		out = append(out, upsert(g, int64(g)))
	}
	return out
}

// TestApplyBatchExactlyOnce: a pipelined batch applies in one transaction
// with its GSN; a batch overlapping what is applied skips that part; a gap
// is refused and changes nothing; a failing statement leaves nothing.
func TestApplyBatchExactlyOnce(t *testing.T) {
	ctx := context.Background()
	m, c := startTestServer(t)
	if _, err := c.Exec(ctx, "CREATE TABLE t (id bigint PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	b, err := NewBackend(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.dropApplyConn()
	if _, _, err := b.AppliedGSN(); err != nil { // creates tandem's tables
		t.Fatal(err)
	}
	state := func() (gsn uint64, rows int, max int64) {
		t.Helper()
		g, _, err := b.AppliedGSN()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRow(ctx, "SELECT count(*), coalesce(max(id), 0) FROM t").Scan(&rows, &max); err != nil {
			t.Fatal(err)
		}
		return g, rows, max
	}
	steps := []struct {
		name     string
		batch    []*writeset.Writeset
		wantErr  string
		wantGSN  uint64
		wantRows int
	}{
		{"first batch", batchOf(1, 3), "", 3, 3},
		{"overlap skips the applied part", batchOf(2, 6), "", 6, 6},
		{"all applied already", batchOf(4, 6), "", 6, 6},
		{"gap refused", batchOf(9, 10), "gap", 6, 6},
		{"a failing statement: what precedes it applies, it is named", append(batchOf(7, 8), &writeset.Writeset{GSN: 9, Epoch: 1, Rows: []writeset.Row{{
			Table: "missing", Op: writeset.OpDelete, KeyCols: []string{"id"}, Key: []writeset.Value{writeset.Int(1)}}}}), `cannot apply GSN 9: statement "DELETE FROM \"missing\"`, 8, 8},
		{"then the same GSNs apply", batchOf(7, 9), "", 9, 9},
	}
	for _, st := range steps {
		err := b.ApplyBatch(ctx, st.batch)
		if st.wantErr == "" && err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)) {
			t.Fatalf("%s: want an error about %q, got %v", st.name, st.wantErr, err)
		}
		var ae *writeset.ApplyError
		if isAE := errors.As(err, &ae); isAE != strings.HasPrefix(st.wantErr, "cannot apply") {
			t.Fatalf("%s: ApplyError %v, got %v", st.name, !isAE, err)
		}
		if g, rows, _ := state(); g != st.wantGSN || rows != st.wantRows {
			t.Fatalf("%s: applied GSN %d with %d rows, want %d with %d", st.name, g, rows, st.wantGSN, st.wantRows)
		}
	}
	// As a primary the node records each commit's GSN as a row of its own
	// (10..12 here, as if it had been promoted); the applied GSN is the
	// newest, compaction keeps only that row, and applying as a standby
	// again continues after it.
	for g := 10; g <= 12; g++ {
		if _, err := c.Exec(ctx, fmt.Sprintf("INSERT INTO t VALUES (%d, 'p'); INSERT INTO _tandem.gsns VALUES (%d, 2)", g, g)); err != nil {
			t.Fatal(err)
		}
	}
	if g, e, err := b.AppliedGSN(); err != nil || g != 12 || e != 2 {
		t.Fatalf("applied GSN %d epoch %d (%v), want 12 and 2", g, e, err)
	}
	b.compactGSNs()
	var left int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM _tandem.gsns").Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d GSN rows after compaction (%v), want 1", left, err)
	}
	if err := b.ApplyBatch(ctx, batchOf(12, 14)); err != nil {
		t.Fatal(err)
	}
	if g, rows, _ := state(); g != 14 || rows != 14 {
		t.Fatalf("after promotion and demotion: applied GSN %d with %d rows, want 14 with 14", g, rows)
	}
}
