package tpcc

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrInconsistent means a TPC-C consistency condition does not hold.
var ErrInconsistent = errors.New("tpcc: consistency condition violated")

// Conditions are TPC-C's consistency conditions 1 to 4 (clause 3.3.2), each a
// query counting the warehouses or districts that violate it. Money is
// compared to half a cent: the SQLite back end stores numeric as a double.
var Conditions = []struct{ Name, SQL string }{
	{"1: W_YTD = sum(D_YTD)", `SELECT count(*) FROM warehouse WHERE abs(w_ytd - (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id)) > 0.005`},
	{"2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)", `SELECT count(*) FROM district WHERE ` +
		`d_next_o_id - 1 <> (SELECT max(o_id) FROM oorder WHERE o_w_id = d_w_id AND o_d_id = d_id) ` +
		`OR d_next_o_id - 1 <> (SELECT max(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id)`},
	{"3: max(NO_O_ID) - min(NO_O_ID) + 1 = count(new_order)", `SELECT count(*) FROM (` +
		`SELECT no_w_id, no_d_id FROM new_order GROUP BY no_w_id, no_d_id ` +
		`HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*)) AS bad`},
	{"4: sum(O_OL_CNT) = count(order_line)", `SELECT count(*) FROM district WHERE ` +
		`(SELECT sum(o_ol_cnt) FROM oorder WHERE o_w_id = d_w_id AND o_d_id = d_id) <> ` +
		`(SELECT count(*) FROM order_line WHERE ol_w_id = d_w_id AND ol_d_id = d_id)`},
}

// CheckConsistency runs Conditions on conn; the error names every condition
// that does not hold and wraps ErrInconsistent.
func CheckConsistency(ctx context.Context, conn *pgx.Conn) error {
	var errs []error
	for _, c := range Conditions {
		var bad int64
		if err := conn.QueryRow(ctx, c.SQL).Scan(&bad); err != nil {
			return fmt.Errorf("tpcc: consistency condition %s: %w", c.Name, err)
		}
		if bad > 0 {
			errs = append(errs, fmt.Errorf("%w: condition %s fails in %d warehouses or districts", ErrInconsistent, c.Name, bad))
		}
	}
	return errors.Join(errs...)
}

// ErrBadPopulation means a freshly loaded database breaks a population rule.
var ErrBadPopulation = errors.New("tpcc: population rule violated")

// CheckPopulation checks the row counts and rules of clause 4.3.3.1 on a
// freshly loaded (not yet run) database of w warehouses loaded with w's
// Config: exact cardinalities of the nine tables, 5..15 lines per order,
// carriers on delivered orders only, and consistency conditions 1-4.
func (wl *Workload) CheckPopulation(ctx context.Context, conn *pgx.Conn, w int) error {
	c := wl.cfg
	d := w * DistrictsPerWarehouse
	cust := d * c.CustomersPerDistrict
	var errs []error
	scalar := func(q string, args ...any) int64 {
		var v int64
		if err := conn.QueryRow(ctx, q, args...).Scan(&v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q, err))
		}
		return v
	}
	want := []struct {
		table string
		n     int
	}{
		{"warehouse", w}, {"district", d}, {"item", c.Items}, {"stock", w * c.Items},
		{"customer", cust}, {"history", cust}, {"oorder", cust},
		{"new_order", d * (c.CustomersPerDistrict - c.FirstNewOrder() + 1)},
	}
	for _, tc := range want {
		if got := scalar("SELECT count(*) FROM " + tc.table); got != int64(tc.n) {
			errs = append(errs, fmt.Errorf("%w: %s has %d rows, want %d", ErrBadPopulation, tc.table, got, tc.n))
		}
	}
	lines := scalar("SELECT count(*) FROM order_line")
	olCnt := scalar("SELECT sum(o_ol_cnt) FROM oorder")
	if lines != olCnt {
		errs = append(errs, fmt.Errorf("%w: order_line has %d rows, sum(o_ol_cnt) is %d", ErrBadPopulation, lines, olCnt))
	}
	if bad := scalar("SELECT count(*) FROM oorder WHERE o_ol_cnt < 5 OR o_ol_cnt > 15"); bad > 0 {
		errs = append(errs, fmt.Errorf("%w: %d orders with o_ol_cnt outside 5..15", ErrBadPopulation, bad))
	}
	if bad := scalar("SELECT count(*) FROM oorder WHERE (o_id < $1 AND o_carrier_id IS NULL) OR (o_id >= $1 AND o_carrier_id IS NOT NULL)", c.FirstNewOrder()); bad > 0 {
		errs = append(errs, fmt.Errorf("%w: %d orders break the o_carrier_id rule", ErrBadPopulation, bad))
	}
	if bad := scalar("SELECT count(*) FROM customer WHERE c_credit NOT IN ('GC', 'BC') OR c_balance <> -10 OR c_payment_cnt <> 1"); bad > 0 {
		errs = append(errs, fmt.Errorf("%w: %d customers with a wrong initial c_credit, c_balance or c_payment_cnt", ErrBadPopulation, bad))
	}
	if err := CheckConsistency(ctx, conn); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
