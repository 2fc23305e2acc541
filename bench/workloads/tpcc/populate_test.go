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

// checkCardinalities adds the statistical rule (10 % BC customers) to
// CheckPopulation's exact ones.
func checkCardinalities(t *testing.T, conn *pgx.Conn, c tpcc.Config, w int) {
	t.Helper()
	ctx := context.Background()
	if err := tpcc.NewWithConfig(c).CheckPopulation(ctx, conn, w); err != nil {
		t.Fatal(err)
	}
	cust := w * tpcc.DistrictsPerWarehouse * c.CustomersPerDistrict
	var bc float64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM customer WHERE c_credit = 'BC'").Scan(&bc); err != nil {
		t.Fatal(err)
	}
	if sd := sqrt(float64(cust) * 0.09); abs(bc-0.1*float64(cust)) > 6*sd {
		t.Errorf("%v BC customers of %d, want 10 %% ± %.0f", bc, cust, 6*sd)
	}
}

// TestCheckPopulationFails: a database one row short, or with a broken
// consistency condition, is reported.
func TestCheckPopulationFails(t *testing.T) {
	dsn := newDB(t)
	w := tpcc.NewWithConfig(testConfig)
	load(t, dsn, w, 1)
	c := connect(t, dsn)
	ctx := context.Background()
	for _, tc := range []struct{ name, sql string }{
		{"missing stock row", "DELETE FROM stock WHERE s_i_id = 7"},
		{"condition 1", "UPDATE warehouse SET w_ytd = w_ytd + 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			if err := w.CheckPopulation(ctx, tx.Conn(), 1); err == nil {
				t.Fatal("CheckPopulation accepted a broken database")
			}
		})
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
