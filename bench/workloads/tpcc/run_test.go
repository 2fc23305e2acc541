package tpcc_test

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/tpcc"
)

func run(t *testing.T, dsn string, w *tpcc.Workload, opts bench.RunOptions) *bench.Result {
	t.Helper()
	opts.Workload, opts.DSN = w, dsn
	if opts.Duration == 0 {
		opts.Duration = 3 * time.Second
	}
	if opts.Seed == 0 {
		opts.Seed = 11
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	for {
		res, err := bench.Run(context.Background(), opts)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		// The share checks need minShareSample transactions; a loaded
		// machine runs fewer in a fixed window, so the window grows
		// (on the same data: TPC-C's consistency holds after any number
		// of runs) instead of the test failing on the machine's load.
		// Not with a tracer: it would record both runs in one trace.
		if res.Totals.Started >= minShareSample || opts.Duration >= 16*time.Second || opts.Tracer != nil {
			return res
		}
		t.Logf("%d transactions in %s: running again for twice as long", res.Totals.Started, opts.Duration)
		opts.Duration *= 2
	}
}

// CheckRun checks a standard-mix run's result: no unexpected errors, every
// type ran, shares within 5 standard deviations of the weights, about 1 % of
// NewOrders rolled back, tpmC reported (shared with the e2e tests).
// minShareSample is how many transactions the mix-share checks need.
const minShareSample = 150

func checkRun(t *testing.T, res *bench.Result) {
	t.Helper()
	if res.Totals.Errors != 0 {
		t.Fatalf("%d unexpected errors: %v", res.Totals.Errors, res.FirstErrors)
	}
	n := float64(res.Totals.Started)
	if n < minShareSample { // enough for the 5-sigma share checks
		t.Fatalf("only %v transactions ran", n)
	}
	weights := map[string]float64{"NewOrder": 45, "Payment": 43, "OrderStatus": 4, "Delivery": 4, "StockLevel": 4}
	for name, wt := range weights {
		tx := res.Transactions[name]
		if tx == nil || tx.Started == 0 {
			t.Fatalf("%s never ran", name)
		}
		p := wt / 100
		if tol := 5 * math.Sqrt(p*(1-p)/n); math.Abs(tx.Share-p) > tol {
			t.Errorf("%s share %.4f, want %.2f ± %.4f (%v transactions)", name, tx.Share, p, tol, n)
		}
	}
	no := res.Transactions["NewOrder"]
	if float64(no.RolledBack) > 0.01*float64(no.Started)+5*math.Sqrt(0.01*float64(no.Started))+1 {
		t.Errorf("NewOrder rolled back %d of %d, want about 1 %%", no.RolledBack, no.Started)
	}
	if res.PerMinute == nil || res.PerMinute.Name != "tpmC" || res.PerMinute.Transaction != "NewOrder" {
		t.Fatalf("no tpmC in the result: %+v", res.PerMinute)
	}
	if want := float64(no.Counted) * 60 / res.MeasuredS; math.Abs(res.PerMinute.Value-want) > 0.01*want+1 {
		t.Errorf("tpmC %v, want %v", res.PerMinute.Value, want)
	}
}

// TestRunPostgres runs the standard mix directly on PostgreSQL with prepared
// statements and with the simple protocol: the shares, and TPC-C's
// consistency conditions 1-4 afterwards.
func TestRunPostgres(t *testing.T) {
	for _, tc := range []struct {
		name   string
		simple bool
	}{{"prepared", false}, {"simple", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := newDB(t)
			w := tpcc.NewWithConfig(testConfig)
			load(t, dsn, w, 2)
			res := run(t, dsn, w, bench.RunOptions{Clients: 4, Retries: 5, Simple: tc.simple, Duration: 2 * time.Second})
			checkRun(t, res)
			if err := tpcc.CheckConsistency(context.Background(), connect(t, dsn)); err != nil {
				t.Fatal(err)
			}
			t.Logf("PostgreSQL (%s): %.0f tps, tpmC %.0f, retries %d, final aborts %d", tc.name, res.TotalTPS, res.PerMinute.Value, res.Totals.Retries, res.Totals.Aborted)
		})
	}
}

// TestForcedConflictRetried makes every transaction serializable and runs
// Payments only, all on one warehouse row: concurrent Payments must fail
// with 40001, be retried and be counted per type.
func TestForcedConflictRetried(t *testing.T) {
	dsn := newDB(t)
	w := tpcc.NewWithConfig(testConfig)
	load(t, dsn, w, 1)
	c := connect(t, dsn)
	ctx := context.Background()
	var db string
	if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "ALTER DATABASE "+db+" SET default_transaction_isolation = 'serializable'"); err != nil {
		t.Fatal(err)
	}
	var abortRate [2]float64
	for i, retries := range []int{0, 3} {
		res := run(t, dsn, w, bench.RunOptions{Clients: 4, Mix: "custom", Weights: "Payment=1", Retries: retries, Duration: 2 * time.Second})
		p := res.Transactions["Payment"]
		if res.Totals.Errors != 0 {
			t.Fatalf("unexpected errors: %v", res.FirstErrors)
		}
		if p.Attempts != p.Started+p.Retries || p.Aborts != p.Retries+p.Aborted || p.FinalFailures != p.Aborted {
			t.Errorf("retries %d: inconsistent counts %+v", retries, p)
		}
		if res.ErrorsBySQLState["40001"] == 0 {
			t.Fatalf("retries %d: no serialization failure was forced (%+v)", retries, res.ErrorsBySQLState)
		}
		if retries == 0 && (p.Retries != 0 || p.Aborted == 0) {
			t.Errorf("without retries: retries %d aborted %d; want 0 and > 0", p.Retries, p.Aborted)
		}
		if retries > 0 && p.Retries == 0 {
			t.Errorf("with retries: no retry counted (aborted %d)", p.Aborted)
		}
		abortRate[i] = float64(p.Aborted) / float64(p.Started)
		t.Logf("retries %d: started %d attempts %d retries %d aborts %d final failures %d", retries, p.Started, p.Attempts, p.Retries, p.Aborts, p.FinalFailures)
	}
	// A retry is another chance to commit: fewer Payments end aborted.
	if abortRate[1] >= abortRate[0] {
		t.Errorf("share of Payments ending aborted: %.3f with 3 retries, %.3f without", abortRate[1], abortRate[0])
	}
}
