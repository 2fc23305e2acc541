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
