package epinions_test

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/epinions"
)

func TestZipf(t *testing.T) {
	tests := []struct {
		n     int
		theta float64
	}{{500, 1.8}, {200, 1.95}, {2000, 0.99}}
	for _, tc := range tests {
		z := epinions.NewZipf(tc.n, tc.theta)
		rng := rand.New(rand.NewPCG(1, 2))
		counts := make([]int, tc.n)
		const draws = 200000
		for range draws {
			v := z.Next(rng)
			if v < 0 || v >= tc.n {
				t.Fatalf("Zipf(%d, %v) drew %d", tc.n, tc.theta, v)
			}
			counts[v]++
		}
		// P(0) = 1/zeta(n, theta); 0 is the most popular value, then 1.
		var zeta float64
		for i := 1; i <= tc.n; i++ {
			zeta += math.Pow(float64(i), -tc.theta)
		}
		p0 := 1 / zeta
		if got := float64(counts[0]) / draws; math.Abs(got-p0) > 6*math.Sqrt(p0*(1-p0)/draws) {
			t.Errorf("Zipf(%d, %v): P(0) = %.4f, want %.4f", tc.n, tc.theta, got, p0)
		}
		if counts[0] <= counts[1] || counts[1] <= counts[tc.n/2] {
			t.Errorf("Zipf(%d, %v) is not decreasing: %d, %d, ..., %d", tc.n, tc.theta, counts[0], counts[1], counts[tc.n/2])
		}
	}
}

func load(t *testing.T, dsn string, scale int) {
	t.Helper()
	if _, err := bench.Load(context.Background(), bench.LoadOptions{Workload: epinions.New(), DSN: dsn, Scale: scale,
		Workers: 2, BatchSize: 500, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatalf("load: %v", err)
	}
}

// CheckPopulation checks BenchBase's population rules at scale 1.
func checkPopulation(t *testing.T, conn *pgx.Conn, scale int) {
	t.Helper()
	ctx := context.Background()
	users, items := epinions.UsersPerScale*scale, epinions.ItemsPerScale*scale
	checks := []struct {
		name, sql string
		lo, hi    int64
	}{
		{"users", "SELECT count(*) FROM useracct", int64(users), int64(users)},
		{"items", "SELECT count(*) FROM item", int64(items), int64(items)},
		{"items without a review", "SELECT count(*) FROM item WHERE i_id NOT IN (SELECT i_id FROM review)", 0, 0},
		{"reviews", "SELECT count(*) FROM review", int64(items), int64(items) * epinions.MaxReviews},
		{"duplicate reviewers of an item", "SELECT count(*) FROM (SELECT i_id, u_id FROM review GROUP BY i_id, u_id HAVING count(*) > 1) AS d", 0, 0},
		{"reviews of unknown users or items", "SELECT count(*) FROM review WHERE u_id NOT IN (SELECT u_id FROM useracct) OR i_id NOT IN (SELECT i_id FROM item)", 0, 0},
		{"ratings outside 0..4", "SELECT count(*) FROM review WHERE rating < 0 OR rating > 4", 0, 0},
		{"duplicate a_id", "SELECT count(*) - count(DISTINCT a_id) FROM review", 0, 0},
		{"trust rows", "SELECT count(*) FROM trust", 1, int64(users) * epinions.MaxTrust},
		{"duplicate trust pairs", "SELECT count(*) FROM (SELECT source_u_id, target_u_id FROM trust GROUP BY source_u_id, target_u_id HAVING count(*) > 1) AS d", 0, 0},
		{"trust values outside 0..1", "SELECT count(*) FROM trust WHERE trust NOT IN (0, 1)", 0, 0},
		{"trust of unknown users", "SELECT count(*) FROM trust WHERE target_u_id NOT IN (SELECT u_id FROM useracct) OR source_u_id NOT IN (SELECT u_id FROM useracct)", 0, 0},
	}
	for _, c := range checks {
		var n int64
		if err := conn.QueryRow(ctx, c.sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n < c.lo || n > c.hi {
			t.Errorf("%s: %d, want %d..%d", c.name, n, c.lo, c.hi)
		}
		if c.lo != c.hi {
			t.Logf("%s: %d", c.name, n)
		}
	}
}

func TestPopulationPostgres(t *testing.T) {
	dsn := newDB(t)
	load(t, dsn, 1)
	checkPopulation(t, connect(t, dsn), 1)
}

// TestRunPostgres runs seed 001's mix directly on PostgreSQL: no errors,
// every type's share within 5 standard deviations of its weight.
func TestRunPostgres(t *testing.T) {
	dsn := newDB(t)
	load(t, dsn, 1)
	// A loaded machine runs fewer transactions in a fixed window: the
	// window doubles (on the same data: the runs only update rows, so the
	// hit-rate checks hold after any number of runs) until the share checks
	// have their minShareSample transactions.
	for d := 3 * time.Second; ; d *= 2 {
		res, err := bench.Run(context.Background(), bench.RunOptions{Workload: epinions.New(), DSN: dsn, Clients: 4,
			Duration: d, Seed: 3, Retries: 3, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Totals.Started >= minShareSample || d >= 16*time.Second {
			checkShares(t, res)
			return
		}
		t.Logf("%d transactions in %s: running again for twice as long", res.Totals.Started, d)
	}
}

// minShareSample is how many transactions the mix-share checks need.
const minShareSample = 500

func checkShares(t *testing.T, res *bench.Result) {
	t.Helper()
	if res.Totals.Errors != 0 {
		t.Fatalf("%d unexpected errors: %v", res.Totals.Errors, res.FirstErrors)
	}
	n := float64(res.Totals.Started)
	if n < minShareSample { // enough for the 5-sigma share checks
		t.Fatalf("only %v transactions", n)
	}
	for name, w := range res.Weights {
		p := w / 100
		tx := res.Transactions[name]
		if tol := 5 * math.Sqrt(p*(1-p)/n); math.Abs(tx.Share-p) > tol {
			t.Errorf("%s share %.4f, want %.2f ± %.4f", name, tx.Share, p, tol)
		}
	}
	// Every item has a review, every user a name: these always hit.
	for _, name := range []string{"GetReviewItemById", "GetItemAverageRating", "UpdateUserName", "UpdateItemTitle"} {
		if tx := res.Transactions[name]; tx.HitRate != 1 {
			t.Errorf("%s hit rate %.3f, want 1", name, tx.HitRate)
		}
	}
}
