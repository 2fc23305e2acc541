package e2e

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/tpcc"
)

// TestTPCCThroughTandem loads TPC-C (2 warehouses, the test population of
// 1,000 items and 300 customers per district) through tandem on both back
// ends, checks the population's cardinalities and consistency, runs the
// standard mix for a few seconds with retries, and checks the shares, the
// expected 1 % NewOrder rollbacks, tpmC and consistency conditions 1-4.
// The run is repeated with the simple protocol, where the driver's batches
// (BEGIN with the first statement, NewOrder's stock updates) are one
// multi-statement Query each.
func TestTPCCThroughTandem(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be})
			ctx := context.Background()
			w := tpcc.NewWithConfig(tpcc.Config{Items: 1000, CustomersPerDistrict: 300})
			const warehouses = 2
			if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: c.DSN, Scale: warehouses, Workers: 2, BatchSize: 500}); err != nil {
				t.Fatalf("load through tandem (%s): %v", be, err)
			}
			conn := connect(t, c.DSN)
			if err := w.CheckPopulation(ctx, conn, warehouses); err != nil {
				t.Fatalf("%s: %v", be, err)
			}
			for _, simple := range []bool{false, true} {
				opts := bench.RunOptions{Workload: w, DSN: c.DSN, Clients: 4, Rampup: 500 * time.Millisecond,
					Duration: 4 * time.Second, Seed: 5, Retries: 5, Simple: simple}
				res, err := bench.Run(ctx, opts)
				if err == nil && res.Totals.Started < minTPCCRun {
					// A loaded machine (CI runs other tests beside this
					// one): the checks below need enough transactions,
					// not a speed, so run longer rather than fail.
					t.Logf("%s (simple protocol %v): %d transactions in %v, running %v", be, simple, res.Totals.Started, opts.Duration, 4*opts.Duration)
					opts.Duration *= 4
					res, err = bench.Run(ctx, opts)
				}
				if err != nil {
					t.Fatalf("run through tandem (%s, simple protocol %v): %v", be, simple, err)
				}
				checkTPCCRun(t, be, res)
				if err := tpcc.CheckConsistency(ctx, conn); err != nil {
					t.Fatalf("%s after the run (simple protocol %v): %v", be, simple, err)
				}
				if err := res.WriteFiles(filepath.Join(t.TempDir(), "out")); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s (simple protocol %v): %.0f tps, tpmC %.0f, retries %d, final aborts %d", be, simple, res.TotalTPS, res.PerMinute.Value, res.Totals.Retries, res.Totals.Aborted)
			}
		})
	}
}

// minTPCCRun: the transactions a checked run needs (every type runs, the
// shares are within a few standard deviations).
const minTPCCRun = 200

// checkTPCCRun checks a standard-mix run: no unexpected error, every type
// ran with its share, tpmC reported.
func checkTPCCRun(t *testing.T, be string, res *bench.Result) {
	t.Helper()
	if res.Totals.Errors+res.Totals.Unknown != 0 {
		t.Fatalf("%s: %d unexpected errors: %v", be, res.Totals.Errors, res.FirstErrors)
	}
	n := float64(res.Totals.Started)
	if n < minTPCCRun/2 {
		t.Fatalf("%s: only %v transactions", be, n)
	}
	for name, wt := range map[string]float64{"NewOrder": 45, "Payment": 43, "OrderStatus": 4, "Delivery": 4, "StockLevel": 4} {
		tx := res.Transactions[name]
		if tx == nil || tx.Started == 0 {
			t.Fatalf("%s: %s never ran", be, name)
		}
		p := wt / 100
		if tol := 5 * math.Sqrt(p*(1-p)/n); math.Abs(tx.Share-p) > tol {
			t.Errorf("%s: %s share %.4f, want %.2f ± %.4f", be, name, tx.Share, p, tol)
		}
	}
	if res.PerMinute == nil || res.PerMinute.Value <= 0 {
		t.Fatalf("%s: no tpmC: %+v", be, res.PerMinute)
	}
}
