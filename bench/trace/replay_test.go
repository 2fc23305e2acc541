package trace_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/trace"
	"github.com/tandemdb/tandem/bench/workloads/pgtest"
	"github.com/tandemdb/tandem/bench/workloads/tpcw"
)

var pg pgtest.Server

func TestMain(m *testing.M) { os.Exit(pg.Run(m, "trace")) }

func count(t *testing.T, dsn, sql string) int64 {
	t.Helper()
	var n int64
	if err := pgtest.Connect(t, dsn).QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRecordReplayPostgres records a TPC-W ordering run on one database and
// replays the trace with more clients on a second one loaded with the same
// population: every transaction replays without error, every statement is
// sent, and the second database gains exactly the orders and customers the
// first one did.
func TestRecordReplayPostgres(t *testing.T) {
	w := tpcw.NewWithConfig(tpcw.Config{Items: 1000})
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	a, b := pg.NewDB(t), pg.NewDB(t)
	for _, dsn := range []string{a, b} {
		if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: dsn, Scale: 1, Workers: 2, Seed: 3, Logger: quiet}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	rec, err := trace.NewRecorder(&buf, trace.Header{Workload: w.Name(), Mix: "ordering", Clients: 3})
	if err != nil {
		t.Fatal(err)
	}
	res, err := bench.Run(ctx, bench.RunOptions{Workload: w, DSN: a, Mix: "ordering", Clients: 3, Duration: 1500 * time.Millisecond,
		Seed: 4, Tracer: rec, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if res.Totals.Errors+res.Totals.Unknown != 0 || res.Totals.Started < 100 {
		t.Fatalf("recorded run: %d transactions, errors %v", res.Totals.Started, res.FirstErrors)
	}
	tr, err := trace.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(tr.Statements)) != rec.Statements() {
		t.Fatalf("read %d statements, recorded %d", len(tr.Statements), rec.Statements())
	}
	if res.Totals.Aborted != 0 {
		t.Fatalf("the recorded run had %d aborts: its trace does not replay to the same database", res.Totals.Aborted)
	}
	rr, err := trace.Replay(ctx, tr, trace.ReplayOptions{DSN: b, Clients: 5, Retries: 3, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// Retried transactions send their statements again.
	if rr.Failed != 0 || rr.Statements < int64(len(tr.Statements)) || rr.Units != int64(len(tr.Units())) {
		t.Fatalf("replay: %+v; want no failure, %d statements in %d transactions", rr, len(tr.Statements), len(tr.Units()))
	}
	for _, q := range []string{"SELECT count(*) FROM orders", "SELECT count(*) FROM customer", "SELECT count(*) FROM order_line", "SELECT count(*) FROM cc_xacts"} {
		if na, nb := count(t, a, q), count(t, b, q); na != nb {
			t.Errorf("%s: %d recorded, %d replayed", q, na, nb)
		}
	}
	t.Logf("recorded %d transactions (%d statements); replayed at %.0f tps on 5 clients", res.Totals.Started, len(tr.Statements), rr.TPS)
}
