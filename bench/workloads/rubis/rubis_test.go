package rubis_test

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/rubis"
)

// TestMixes: the browsing mix only reads, the bidding mix writes 20 %
// (seed 003 table 4); both sum to 100.
func TestMixes(t *testing.T) {
	w := rubis.New()
	txs := w.Transactions()
	want := map[string]float64{"browsing": 0, "bidding": 20}
	for _, m := range w.Mixes() {
		var sum, writes float64
		for i, wt := range m.Weights {
			sum += wt
			if !txs[i].ReadOnly {
				writes += wt
			}
		}
		if sum != 100 || writes != want[m.Name] {
			t.Errorf("%s: weights sum to %v, writes %v; want 100 and %v", m.Name, sum, writes, want[m.Name])
		}
	}
}

func load(t *testing.T, dsn string, scale int) {
	t.Helper()
	if _, err := bench.Load(context.Background(), bench.LoadOptions{Workload: rubis.New(), DSN: dsn, Scale: scale,
		Workers: 2, BatchSize: 200, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatalf("load: %v", err)
	}
}

func TestPopulationPostgres(t *testing.T) {
	dsn := newDB(t)
	load(t, dsn, 2)
	c := connect(t, dsn)
	ctx := context.Background()
	if err := rubis.CheckPopulation(ctx, c, 2); err != nil {
		t.Fatal(err)
	}
	// A broken condition is reported.
	if _, err := c.Exec(ctx, "UPDATE users SET rating = rating + 1 WHERE id = 3"); err != nil {
		t.Fatal(err)
	}
	if err := rubis.CheckConsistency(ctx, c); err == nil {
		t.Fatal("CheckConsistency accepted a rating that is not its comments' sum")
	}
}

// checkRun checks a run's result: no unexpected errors, every type's share
// within 5 standard deviations of its weight.
func checkRun(t *testing.T, res *bench.Result) {
	t.Helper()
	if res.Totals.Errors+res.Totals.Unknown != 0 {
		t.Fatalf("%d unexpected errors: %v", res.Totals.Errors, res.FirstErrors)
	}
	n := float64(res.Totals.Started)
	if n < 150 { // enough for the 5-sigma share checks; a loaded machine runs fewer in the fixed window
		t.Fatalf("only %v transactions ran", n)
	}
	for name, wt := range res.Weights {
		p := wt / 100
		if tol := 5 * math.Sqrt(p*(1-p)/n); math.Abs(res.Transactions[name].Share-p) > tol {
			t.Errorf("%s: %s share %.4f, want %.4f ± %.4f (%v transactions)", res.Mix, name, res.Transactions[name].Share, p, tol, n)
		}
	}
}

// TestRunPostgres runs both mixes directly on PostgreSQL without think
// time: shares within tolerance, one bid row per committed StoreBid, and
// the consistency conditions afterwards.
func TestRunPostgres(t *testing.T) {
	dsn := newDB(t)
	load(t, dsn, 2)
	c := connect(t, dsn)
	ctx := context.Background()
	var before, after int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM bids").Scan(&before); err != nil {
		t.Fatal(err)
	}
	var bids int64
	for i, mix := range []string{"browsing", "bidding"} {
		// A loaded machine runs fewer transactions in a fixed window: the
		// window grows until the share checks have theirs (every run's
		// bids are counted).
		var res *bench.Result
		for d := 2 * time.Second; ; d *= 2 {
			r, err := bench.Run(ctx, bench.RunOptions{Workload: rubis.New(), DSN: dsn, Mix: mix, Clients: 4, Duration: d,
				Seed: uint64(i + 1), Retries: 3, Simple: i == 0, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if sb := r.Transactions["StoreBid"]; sb != nil {
				bids += sb.Counted
			}
			if res = r; r.Totals.Started >= 150 || d >= 16*time.Second {
				break
			}
		}
		checkRun(t, res)
		t.Logf("%s: %.0f tps, %d retries", mix, res.TotalTPS, res.Totals.Retries)
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM bids").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after-before != bids || bids == 0 {
		t.Errorf("%d new bids, want one per committed StoreBid (%d)", after-before, bids)
	}
	if err := rubis.CheckConsistency(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// TestForcedConflictRetried makes every transaction serializable and runs
// StoreBid only, on the 10 active items of scale 1: concurrent bids on one
// item fail with 40001, are retried and are counted per type.
func TestForcedConflictRetried(t *testing.T) {
	dsn := newDB(t)
	load(t, dsn, 1)
	c := connect(t, dsn)
	ctx := context.Background()
	var db string
	if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "ALTER DATABASE "+db+" SET default_transaction_isolation = 'serializable'"); err != nil {
		t.Fatal(err)
	}
	res, err := bench.Run(ctx, bench.RunOptions{Workload: rubis.New(), DSN: dsn, Mix: "custom", Weights: "StoreBid=1", Clients: 6,
		Duration: 2 * time.Second, Seed: 5, Retries: 5, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Errors+res.Totals.Unknown != 0 {
		t.Fatalf("unexpected errors: %v", res.FirstErrors)
	}
	b := res.Transactions["StoreBid"]
	if res.ErrorsBySQLState["40001"] == 0 || b.Retries == 0 {
		t.Fatalf("no serialization failure was forced and retried: %+v, by SQLSTATE %v", b, res.ErrorsBySQLState)
	}
	if b.Attempts != b.Started+b.Retries || b.Aborts != b.Retries+b.Aborted {
		t.Errorf("inconsistent counts %+v", b)
	}
	if err := rubis.CheckConsistency(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Logf("started %d attempts %d retries %d aborts %d final failures %d", b.Started, b.Attempts, b.Retries, b.Aborts, b.FinalFailures)
}
