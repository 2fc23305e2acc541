package e2e

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/epinions"
)

// TestEpinionsThroughTandem loads Epinions at scale 1 through tandem on both
// back ends, checks its row counts, and runs seed 001's mix for a few
// seconds: no unexpected errors, shares within tolerance of the weights.
func TestEpinionsThroughTandem(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be})
			ctx := context.Background()
			w := epinions.New()
			if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: c.DSN, Scale: 1, Workers: 2}); err != nil {
				t.Fatalf("load through tandem (%s): %v", be, err)
			}
			conn := connect(t, c.DSN)
			for table, want := range map[string]int64{"useracct": epinions.UsersPerScale, "item": epinions.ItemsPerScale} {
				var n int64
				if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != want {
					t.Fatalf("%s: %s has %d rows (%v), want %d", be, table, n, err, want)
				}
			}
			var orphans int64
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM item WHERE i_id NOT IN (SELECT i_id FROM review)").Scan(&orphans); err != nil || orphans != 0 {
				t.Fatalf("%s: %d items without a review (%v)", be, orphans, err)
			}
			res, err := bench.Run(ctx, bench.RunOptions{Workload: w, DSN: c.DSN, Clients: 4, Rampup: 500 * time.Millisecond,
				Duration: 3 * time.Second, Seed: 9, Retries: 3})
			if err != nil {
				t.Fatalf("run through tandem (%s): %v", be, err)
			}
			if res.Totals.Errors+res.Totals.Unknown != 0 {
				t.Fatalf("%s: unexpected errors: %v", be, res.FirstErrors)
			}
			n := float64(res.Totals.Started)
			for name, wt := range res.Weights {
				p := wt / 100
				if tol := 5 * math.Sqrt(p*(1-p)/n); math.Abs(res.Transactions[name].Share-p) > tol {
					t.Errorf("%s: %s share %.4f, want %.2f ± %.4f", be, name, res.Transactions[name].Share, p, tol)
				}
			}
			t.Logf("%s: MQTh %.0f", be, res.MQTh)
		})
	}
}
