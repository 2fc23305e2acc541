package e2e

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/rubis"
	"github.com/tandemdb/tandem/bench/workloads/tpcw"
)

// runMixes runs each mix of w for a short while, without ramp-up (so every
// committed transaction is in the result) or think time, and checks every run: no unexpected errors, each type's share within 5
// standard deviations of its weight. It returns the results by mix.
func runMixes(t *testing.T, be, dsn string, w bench.Workload, mixes []string) map[string]*bench.Result {
	t.Helper()
	out := map[string]*bench.Result{}
	for i, mix := range mixes {
		res, err := bench.Run(context.Background(), bench.RunOptions{Workload: w, DSN: dsn, Mix: mix, Clients: 4,
			Duration: 1500 * time.Millisecond, Seed: uint64(7 + i), Retries: 5})
		if err != nil {
			t.Fatalf("%s: run %s through tandem: %v", be, mix, err)
		}
		if res.Totals.Errors+res.Totals.Unknown != 0 {
			t.Fatalf("%s %s: %d unexpected errors: %v", be, mix, res.Totals.Errors, res.FirstErrors)
		}
		n := float64(res.Totals.Started)
		if n < 200 {
			t.Fatalf("%s %s: only %v transactions", be, mix, n)
		}
		for name, wt := range res.Weights {
			p := wt / 100
			if tol := 5 * math.Sqrt(p*(1-p)/n); math.Abs(res.Transactions[name].Share-p) > tol {
				t.Errorf("%s %s: %s share %.4f, want %.4f ± %.4f", be, mix, name, res.Transactions[name].Share, p, tol)
			}
		}
		t.Logf("%s %s: %.0f tps, retries %d, final aborts %d", be, mix, res.TotalTPS, res.Totals.Retries, res.Totals.Aborted)
		out[mix] = res
	}
	return out
}

// TestTPCWThroughTandem loads TPC-W (1 EB, 1,000 items) through tandem on
// both back ends, checks TPC-W's cardinalities, runs the three mixes for a
// few seconds each (customers register, orders are placed: the serial
// sequences must continue after the loaded ids) and checks that exactly one
// order was added per committed BuyConfirm.
func TestTPCWThroughTandem(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be})
			ctx := context.Background()
			w := tpcw.NewWithConfig(tpcw.Config{Items: 1000})
			if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: c.DSN, Scale: 1, Workers: 2, BatchSize: 500}); err != nil {
				t.Fatalf("load through tandem (%s): %v", be, err)
			}
			conn := connect(t, c.DSN)
			if err := w.CheckPopulation(ctx, conn, 1); err != nil {
				t.Fatalf("%s: %v", be, err)
			}
			results := runMixes(t, be, c.DSN, w, []string{"shopping", "browsing", "ordering"})
			var confirmed int64
			for _, res := range results {
				confirmed += res.Transactions["BuyConfirm"].Counted
			}
			var orders int64
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&orders); err != nil {
				t.Fatal(err)
			}
			if added := orders - int64(tpcw.Orders(1)); added != confirmed || confirmed == 0 {
				t.Errorf("%s: %d orders added, want one per committed BuyConfirm (%d)", be, added, confirmed)
			}
			if err := results["shopping"].WriteFiles(filepath.Join(t.TempDir(), "out")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRUBiSThroughTandem loads RUBiS at scale 2 through tandem on both back
// ends, checks its population rules, runs both mixes for a few seconds
// each, and checks the consistency conditions (bids against items, ratings
// against comments) afterwards.
func TestRUBiSThroughTandem(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be})
			ctx := context.Background()
			w := rubis.New()
			if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: c.DSN, Scale: 2, Workers: 2, BatchSize: 200}); err != nil {
				t.Fatalf("load through tandem (%s): %v", be, err)
			}
			conn := connect(t, c.DSN)
			if err := rubis.CheckPopulation(ctx, conn, 2); err != nil {
				t.Fatalf("%s: %v", be, err)
			}
			results := runMixes(t, be, c.DSN, w, []string{"bidding", "browsing"})
			if results["bidding"].Transactions["StoreBid"].Counted == 0 {
				t.Errorf("%s: no bid committed", be)
			}
			if err := rubis.CheckConsistency(ctx, conn); err != nil {
				t.Fatalf("%s after the runs: %v", be, err)
			}
		})
	}
}
