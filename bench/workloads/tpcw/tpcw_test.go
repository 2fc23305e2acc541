package tpcw_test

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/tpcw"
)

// testConfig is TPC-W's smallest catalogue (1,000 items); with 1 EB the
// database has 2,880 customers and 2,592 orders.
var testConfig = tpcw.Config{Items: 1000}

func TestDigSyl(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "BA"}, {371, "RIULOG"}, {1025, "OGBAALSE"}} {
		if got := tpcw.DigSyl(tc.n); got != tc.want {
			t.Errorf("DigSyl(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

// TestMixes: each mix's weights sum to 100 and its order class is seed 003
// table 2's update share.
func TestMixes(t *testing.T) {
	want := map[string]float64{"browsing": 5, "shopping": 20, "ordering": 50}
	w := tpcw.New()
	if w.Mixes()[0].Name != "shopping" {
		t.Errorf("default mix %s, want shopping", w.Mixes()[0].Name)
	}
	for _, m := range w.Mixes() {
		var sum, order float64
		for i, wt := range m.Weights {
			sum += wt
			if tpcw.OrderClass(bench.TxType(i)) {
				order += wt
			}
		}
		if math.Abs(sum-100) > 1e-9 || math.Abs(order-want[m.Name]) > 1e-9 {
			t.Errorf("%s: weights sum to %v, order class %v; want 100 and %v", m.Name, sum, order, want[m.Name])
		}
		// Seed 003 table 2: 30, 40, 50 clients per replica.
		if got, wantC := w.DefaultClients(m.Name), map[string]int{"browsing": 30, "shopping": 40, "ordering": 50}[m.Name]; got != wantC {
			t.Errorf("%s: %d clients per replica, want %d", m.Name, got, wantC)
		}
	}
}

func load(t *testing.T, dsn string, w *tpcw.Workload, ebs int) {
	t.Helper()
	if _, err := bench.Load(context.Background(), bench.LoadOptions{Workload: w, DSN: dsn, Scale: ebs,
		Workers: 2, BatchSize: 500, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatalf("load: %v", err)
	}
}

func TestPopulationPostgres(t *testing.T) {
	dsn := newDB(t)
	w := tpcw.NewWithConfig(testConfig)
	load(t, dsn, w, 1)
	c := connect(t, dsn)
	ctx := context.Background()
	if err := w.CheckPopulation(ctx, c, 1); err != nil {
		t.Fatal(err)
	}
	// A broken population is reported.
	if _, err := c.Exec(ctx, "DELETE FROM cc_xacts WHERE cx_o_id = 7"); err != nil {
		t.Fatal(err)
	}
	if err := w.CheckPopulation(ctx, c, 1); err == nil {
		t.Fatal("CheckPopulation accepted a database without one card transaction")
	}
}

// minShareSample is how many transactions the mix-share checks need.
const minShareSample = 300

// CheckRun checks a run's result: no unexpected errors, every type's share
// within 5 standard deviations of its weight.
func checkRun(t *testing.T, res *bench.Result) {
	t.Helper()
	if res.Totals.Errors != 0 {
		t.Fatalf("%d unexpected errors: %v", res.Totals.Errors, res.FirstErrors)
	}
	n := float64(res.Totals.Started)
	if n < minShareSample { // enough for the 5-sigma share checks
		t.Fatalf("only %v transactions ran", n)
	}
	for name, wt := range res.Weights {
		p := wt / 100
		if tol := 5 * math.Sqrt(p*(1-p)/n); math.Abs(res.Transactions[name].Share-p) > tol {
			t.Errorf("%s: %s share %.4f, want %.4f ± %.4f (%v transactions)", res.Mix, name, res.Transactions[name].Share, p, tol, n)
		}
	}
}

// TestRunPostgres runs each mix directly on PostgreSQL without think time:
// shares within tolerance, and exactly one new order per committed
// BuyConfirm.
func TestRunPostgres(t *testing.T) {
	dsn := newDB(t)
	w := tpcw.NewWithConfig(testConfig)
	load(t, dsn, w, 1)
	c := connect(t, dsn)
	ctx := context.Background()
	var confirmed int64
	for i, mix := range []string{"browsing", "shopping", "ordering"} {
		// A loaded machine runs fewer transactions in a fixed window: the
		// window doubles until the share checks have their minShareSample
		// (on the same data: every run's committed BuyConfirms are counted,
		// so the new-order check holds after any number of runs).
		var res *bench.Result
		for d := 2 * time.Second; ; d *= 2 {
			r, err := bench.Run(ctx, bench.RunOptions{Workload: w, DSN: dsn, Mix: mix, Clients: 4, Duration: d,
				Seed: uint64(i + 1), Retries: 3, Simple: i == 1, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if bc := r.Transactions["BuyConfirm"]; bc != nil {
				confirmed += bc.Counted
			}
			if res = r; r.Totals.Started >= minShareSample || d >= 16*time.Second {
				break
			}
			t.Logf("%s: %d transactions in %s: running again for twice as long", mix, r.Totals.Started, d)
		}
		checkRun(t, res)
		if res.ThinkDist != bench.ThinkExponential {
			t.Errorf("think distribution %q, want exponential", res.ThinkDist)
		}
		t.Logf("%s: %.0f tps, %d retries", mix, res.TotalTPS, res.Totals.Retries)
	}
	var orders int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if orders-int64(tpcw.Orders(1)) != confirmed {
		t.Errorf("%d new orders, want one per committed BuyConfirm (%d)", orders-int64(tpcw.Orders(1)), confirmed)
	}
}
