package tpcw

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrPopulation means a freshly loaded database breaks TPC-W's population
// rules.
var ErrPopulation = errors.New("tpcw: population rule broken")

// CheckPopulation checks a freshly loaded database of ebs EBs against
// TPC-W's cardinalities (clause 4.3) and the population's references. Runs
// add rows, so it holds before the first run only.
func (w *Workload) CheckPopulation(ctx context.Context, conn *pgx.Conn, ebs int) error {
	items := int64(w.cfg.Items)
	cust, orders := int64(Customers(ebs)), int64(Orders(ebs))
	checks := []struct {
		name, sql string
		lo, hi    int64
	}{
		{"countries", "SELECT count(*) FROM country", Countries, Countries},
		{"authors", "SELECT count(*) FROM author", int64(Authors(w.cfg.Items)), int64(Authors(w.cfg.Items))},
		{"items", "SELECT count(*) FROM item", items, items},
		{"customers", "SELECT count(*) FROM customer", cust, cust},
		{"distinct user names", "SELECT count(DISTINCT c_uname) FROM customer", cust, cust},
		{"addresses", "SELECT count(*) FROM address", 2 * cust, 2 * cust},
		{"orders", "SELECT count(*) FROM orders", orders, orders},
		{"card transactions", "SELECT count(*) FROM cc_xacts", orders, orders},
		{"order lines", "SELECT count(*) FROM order_line", orders, 5 * orders},
		{"orders without 1..5 lines", "SELECT count(*) FROM orders WHERE (SELECT count(*) FROM order_line WHERE ol_o_id = o_id) NOT BETWEEN 1 AND 5", 0, 0},
		{"carts", "SELECT count(*) FROM shopping_cart", 0, 0},
		{"items of unknown authors", "SELECT count(*) FROM item WHERE i_a_id NOT IN (SELECT a_id FROM author)", 0, 0},
		{"items related to themselves", "SELECT count(*) FROM item WHERE i_id IN (i_related1, i_related2, i_related3, i_related4, i_related5)", 0, 0},
		{"customers with unknown addresses", "SELECT count(*) FROM customer WHERE c_addr_id NOT IN (SELECT addr_id FROM address)", 0, 0},
		{"orders of unknown customers", "SELECT count(*) FROM orders WHERE o_c_id NOT IN (SELECT c_id FROM customer)", 0, 0},
		{"lines of unknown items", "SELECT count(*) FROM order_line WHERE ol_i_id NOT IN (SELECT i_id FROM item)", 0, 0},
		{"subjects", "SELECT count(DISTINCT i_subject) FROM item", 1, int64(len(Subjects))},
	}
	var errs []error
	for _, c := range checks {
		var n int64
		if err := conn.QueryRow(ctx, c.sql).Scan(&n); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if n < c.lo || n > c.hi {
			errs = append(errs, fmt.Errorf("%w: %s: %d, want %d..%d", ErrPopulation, c.name, n, c.lo, c.hi))
		}
	}
	return errors.Join(errs...)
}
