package tpcc_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/tpcc"
)

// testConfig is a reduced population (1,000 items, 300 customers per
// district) that keeps the tests to seconds; the TPC-C rules are the same.
var testConfig = tpcc.Config{Items: 1000, CustomersPerDistrict: 300}

func load(t *testing.T, dsn string, w *tpcc.Workload, warehouses int) bench.LoadStats {
	t.Helper()
	st, err := bench.Load(context.Background(), bench.LoadOptions{
		Workload: w, DSN: dsn, Scale: warehouses, Workers: 2, BatchSize: 500,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return st
}

func TestStandardConfigIsTPCC(t *testing.T) {
	c := tpcc.New().Config()
	if c.Items != 100000 || c.CustomersPerDistrict != 3000 || c.FirstNewOrder() != 2101 {
		t.Fatalf("default population %+v, first new order %d; want TPC-C's 100000 items, 3000 customers, 2101", c, c.FirstNewOrder())
	}
}

func TestNURandAndLastName(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{{0, "BARBARBAR"}, {371, "PRICALLYOUGHT"}, {999, "EINGEINGEING"}}
	for _, tc := range tests {
		if got := tpcc.LastName(tc.n); got != tc.want {
			t.Errorf("LastName(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
	rng := newRand(1)
	for range 10000 {
		if v := tpcc.NURand(rng, tpcc.ACustomerID, 259, 1, 3000); v < 1 || v > 3000 {
			t.Fatalf("NURand out of range: %d", v)
		}
	}
}

// Cardinalities checks clause 4.3.3.1's row counts of a freshly loaded
// database of w warehouses with population c (shared with the e2e tests).
func checkCardinalities(t *testing.T, conn *pgx.Conn, c tpcc.Config, w int) {
	t.Helper()
	ctx := context.Background()
	d := w * tpcc.DistrictsPerWarehouse
	cust := d * c.CustomersPerDistrict
	want := map[string]int{
		"warehouse": w, "district": d, "item": c.Items, "stock": w * c.Items,
		"customer": cust, "history": cust, "oorder": cust,
		"new_order": d * (c.CustomersPerDistrict - c.FirstNewOrder() + 1),
	}
	for table, n := range want {
		var got int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Errorf("%s: %d rows, want %d", table, got, n)
		}
	}
	var lines, olCnt, minCnt, maxCnt, badCarrier int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM order_line").Scan(&lines); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT sum(o_ol_cnt), min(o_ol_cnt), max(o_ol_cnt) FROM oorder").Scan(&olCnt, &minCnt, &maxCnt); err != nil {
		t.Fatal(err)
	}
	if lines != olCnt || minCnt != 5 || maxCnt != 15 {
		t.Errorf("order_line: %d rows, sum(o_ol_cnt) %d, o_ol_cnt %d..%d; want equal and 5..15", lines, olCnt, minCnt, maxCnt)
	}
	// Delivered orders (o_id < first new order) have a carrier, the others none.
	q := "SELECT count(*) FROM oorder WHERE (o_id < $1 AND o_carrier_id IS NULL) OR (o_id >= $1 AND o_carrier_id IS NOT NULL)"
	if err := conn.QueryRow(ctx, q, c.FirstNewOrder()).Scan(&badCarrier); err != nil {
		t.Fatal(err)
	}
	if badCarrier != 0 {
		t.Errorf("%d orders break the o_carrier_id rule", badCarrier)
	}
	// 10 % of customers have bad credit: binomial, 6 standard deviations.
	var bc float64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM customer WHERE c_credit = 'BC'").Scan(&bc); err != nil {
		t.Fatal(err)
	}
	if sd := sqrt(float64(cust) * 0.09); abs(bc-0.1*float64(cust)) > 6*sd {
		t.Errorf("%v BC customers of %d, want 10 %%", bc, cust)
	}
	if err := tpcc.CheckConsistency(ctx, conn); err != nil {
		t.Error(err)
	}
}

func TestPopulationPostgres(t *testing.T) {
	dsn := newDB(t)
	const w = 2
	st := load(t, dsn, tpcc.NewWithConfig(testConfig), w)
	if !st.UsedCopy {
		t.Error("PostgreSQL load did not use COPY")
	}
	checkCardinalities(t, connect(t, dsn), testConfig, w)
}
