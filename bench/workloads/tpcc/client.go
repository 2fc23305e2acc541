package tpcc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/bench"
)

// Statements (standard PostgreSQL, $n parameters), BenchBase's queries.
const (
	stNOCustomer = iota
	stNOWarehouse
	stNODistrict
	stNOUpdateDistrict
	stNOInsertOrder
	stNOInsertNewOrder
	stNOItem
	stNOUpdateStock
	stPayUpdateWarehouse
	stPayWarehouse
	stPayUpdateDistrict
	stPayDistrict
	stCustomerByID
	stCustomerByName
	stPayCustomerData
	stPayUpdateCustomerBC
	stPayUpdateCustomer
	stPayInsertHistory
	stOSLastOrder
	stOSOrderLines
	stDelNewOrder
	stDelDeleteNewOrder
	stDelOrder
	stDelUpdateOrder
	stDelUpdateOrderLines
	stDelSumOrderLines
	stDelUpdateCustomer
	stSLNextOrder
	stSLCount
	stBegin
	stStock01                                         // ten statements, one per district's s_dist column
	stOrderLines  = stStock01 + DistrictsPerWarehouse // eleven: NewOrder's lines in one INSERT of minLines..maxLines rows
	numStatements = stOrderLines + maxLines - minLines + 1
)

// A NewOrder has 5 to 15 order lines (clause 2.4.1.3).
const (
	minLines = 5
	maxLines = 15
)

const orderLineCols = 9 // parameters per row of stOrderLines

const customerCols = `c_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance`

var statements = func() [numStatements]string {
	s := [numStatements]string{
		stNOCustomer:          `SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3`,
		stNOWarehouse:         `SELECT w_tax FROM warehouse WHERE w_id = $1`,
		stNODistrict:          `SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = $1 AND d_id = $2 FOR UPDATE`,
		stNOUpdateDistrict:    `UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2`,
		stNOInsertOrder:       `INSERT INTO oorder (o_w_id, o_d_id, o_id, o_c_id, o_carrier_id, o_ol_cnt, o_all_local, o_entry_d) VALUES ($1, $2, $3, $4, NULL, $5, $6, current_timestamp)`,
		stNOInsertNewOrder:    `INSERT INTO new_order (no_w_id, no_d_id, no_o_id) VALUES ($1, $2, $3)`,
		stNOItem:              `SELECT i_price, i_name, i_data FROM item WHERE i_id = $1`,
		stNOUpdateStock:       `UPDATE stock SET s_quantity = $1, s_ytd = s_ytd + $2, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $3 WHERE s_w_id = $4 AND s_i_id = $5`,
		stPayUpdateWarehouse:  `UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2`,
		stPayWarehouse:        `SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse WHERE w_id = $1`,
		stPayUpdateDistrict:   `UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3`,
		stPayDistrict:         `SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name FROM district WHERE d_w_id = $1 AND d_id = $2`,
		stCustomerByID:        `SELECT ` + customerCols + ` FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3`,
		stCustomerByName:      `SELECT ` + customerCols + ` FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first`,
		stPayCustomerData:     `SELECT c_data FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3`,
		stPayUpdateCustomerBC: `UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = c_payment_cnt + 1, c_data = $2 WHERE c_w_id = $3 AND c_d_id = $4 AND c_id = $5`,
		stPayUpdateCustomer:   `UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4`,
		stPayInsertHistory:    `INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES ($1, $2, $3, $4, $5, current_timestamp, $6, $7)`,
		stOSLastOrder:         `SELECT o_id, o_carrier_id, o_entry_d FROM oorder WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1`,
		stOSOrderLines:        `SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_o_id = $1 AND ol_d_id = $2 AND ol_w_id = $3`,
		stDelNewOrder:         `SELECT no_o_id FROM new_order WHERE no_d_id = $1 AND no_w_id = $2 ORDER BY no_o_id ASC LIMIT 1`,
		stDelDeleteNewOrder:   `DELETE FROM new_order WHERE no_o_id = $1 AND no_d_id = $2 AND no_w_id = $3`,
		stDelOrder:            `SELECT o_c_id FROM oorder WHERE o_id = $1 AND o_d_id = $2 AND o_w_id = $3`,
		stDelUpdateOrder:      `UPDATE oorder SET o_carrier_id = $1 WHERE o_id = $2 AND o_d_id = $3 AND o_w_id = $4`,
		stDelUpdateOrderLines: `UPDATE order_line SET ol_delivery_d = current_timestamp WHERE ol_o_id = $1 AND ol_d_id = $2 AND ol_w_id = $3`,
		stDelSumOrderLines:    `SELECT sum(ol_amount) FROM order_line WHERE ol_o_id = $1 AND ol_d_id = $2 AND ol_w_id = $3`,
		stDelUpdateCustomer:   `UPDATE customer SET c_balance = c_balance + $1, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4`,
		stSLNextOrder:         `SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2`,
		stSLCount: `SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4 ` +
			`AND s_w_id = $5 AND s_i_id = ol_i_id AND s_quantity < $6`,
		stBegin: `BEGIN`,
	}
	for d := 1; d <= DistrictsPerWarehouse; d++ {
		s[stStock01+d-1] = fmt.Sprintf(`SELECT s_quantity, s_data, s_dist_%02d FROM stock WHERE s_w_id = $1 AND s_i_id = $2 FOR UPDATE`, d)
	}
	for n := minLines; n <= maxLines; n++ {
		s[stOrderLines+n-minLines] = orderLinesSQL(n)
	}
	return s
}()

// orderLinesSQL inserts n order lines in one statement, as pgjdbc's
// reWriteBatchedInserts rewrites BenchBase's batch of single-row INSERTs.
func orderLinesSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_delivery_d, ol_amount, ol_supply_w_id, ol_quantity, ol_dist_info) VALUES `)
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		p := r*orderLineCols + 1
		fmt.Fprintf(&b, "($%d, $%d, $%d, $%d, $%d, NULL, $%d, $%d, $%d, $%d)", p, p+1, p+2, p+3, p+4, p+5, p+6, p+7, p+8)
	}
	return b.String()
}

// invalidItem is the item id of a NewOrder that must roll back (BenchBase's
// INVALID_ITEM_ID).
const invalidItem = -12345

// errCommitRolledBack: COMMIT answered ROLLBACK (the transaction had failed).
var errCommitRolledBack = errors.New("tpcc: COMMIT answered ROLLBACK")

type client struct {
	conn       *pgx.Conn
	rng        *rand.Rand
	cfg        Config
	warehouses int
	home       int // the terminal's home warehouse
	dLo, dHi   int // the terminal's districts (BenchBase's binding)
	q          [numStatements]string
	// begin: the transaction's BEGIN is not sent yet; it goes with the
	// first statement, in one round trip, as pgjdbc sends it.
	begin bool
}

// NewClient implements bench.Workload. Unless the connection uses the simple
// protocol, it prepares the statements once, by name.
func (w *Workload) NewClient(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, p bench.ClientParams) (bench.Client, error) {
	if p.Scale <= 0 {
		return nil, fmt.Errorf("tpcc: %w: warehouses must be > 0 (got %d)", bench.ErrBadOption, p.Scale)
	}
	c := &client{conn: conn, rng: rng, cfg: w.cfg, warehouses: p.Scale}
	if p.Clients > 0 {
		t := TerminalOf(p.Client, p.Clients, p.Scale)
		c.home, c.dLo, c.dHi = t.Warehouse, t.DistrictLo, t.DistrictHi
	} else { // a client outside a run: no binding
		c.home, c.dLo, c.dHi = 1+rng.IntN(p.Scale), 1, DistrictsPerWarehouse
	}
	for i, sql := range statements {
		if p.Simple {
			c.q[i] = sql
			continue
		}
		name := fmt.Sprintf("tpcc_%d", i)
		if _, err := conn.Prepare(ctx, name, sql); err != nil {
			return nil, fmt.Errorf("tpcc: prepare %s (%s): %w", name, sql, err)
		}
		c.q[i] = name
	}
	return c, nil
}

// Run implements bench.Client.
func (c *client) Run(ctx context.Context, t bench.TxType) (bench.Outcome, error) {
	var err error
	out := bench.Counted
	c.begin = true
	switch t {
	case NewOrder:
		out, err = c.newOrder(ctx)
	case Payment:
		err = c.payment(ctx)
	case OrderStatus:
		err = c.orderStatus(ctx)
	case Delivery:
		err = c.delivery(ctx)
	case StockLevel:
		err = c.stockLevel(ctx)
	default:
		err = fmt.Errorf("tpcc: unknown transaction type %d", t)
	}
	if c.begin { // no statement ran: the transaction never began
		c.begin = false
		if err != nil {
			return bench.Classify(err), err
		}
		return out, nil
	}
	if err != nil {
		if !c.conn.IsClosed() {
			_, _ = c.conn.Exec(ctx, "ROLLBACK")
		}
		return bench.Classify(err), err
	}
	if out == bench.RolledBack {
		if _, err := c.conn.Exec(ctx, "ROLLBACK"); err != nil {
			return bench.Classify(err), err
		}
		return out, nil
	}
	tag, err := c.conn.Exec(ctx, "COMMIT")
	if err != nil {
		return bench.Classify(err), err
	}
	if tag.String() == "ROLLBACK" {
		return bench.Failed, errCommitRolledBack
	}
	return out, nil
}

// sendBegin sends BEGIN and the transaction's first statement in one
// batch (one round trip) and reads BEGIN's result.
func (c *client) sendBegin(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	c.begin = false
	b := &pgx.Batch{}
	b.Queue(c.q[stBegin])
	b.Queue(sql, args...)
	br := c.conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, fmt.Errorf("BEGIN: %w", err)
	}
	return br, nil
}

// rowFunc is a pgx.Row.
type rowFunc func(dest ...any) error

func (f rowFunc) Scan(dest ...any) error { return f(dest...) }

// queryRow is conn.QueryRow, with BEGIN first if the transaction has not
// begun.
func (c *client) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if !c.begin {
		return c.conn.QueryRow(ctx, sql, args...)
	}
	br, err := c.sendBegin(ctx, sql, args)
	return rowFunc(func(dest ...any) error {
		if err != nil {
			return err
		}
		err := br.QueryRow().Scan(dest...)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// exec is conn.Exec, with BEGIN first if the transaction has not begun.
func (c *client) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if !c.begin {
		return c.conn.Exec(ctx, sql, args...)
	}
	br, err := c.sendBegin(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// batchRows are a batch's last query's rows: closing them closes the batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err, r.br = r.br.Close(), nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// query is conn.Query, with BEGIN first if the transaction has not begun.
func (c *client) query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !c.begin {
		return c.conn.Query(ctx, sql, args...)
	}
	br, err := c.sendBegin(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// district draws a district of the terminal's range.
func (c *client) district() int { return randInt(c.rng, c.dLo, c.dHi) }

// anyDistrict draws one of the ten (a remote Payment's customer).
func (c *client) anyDistrict() int { return 1 + c.rng.IntN(DistrictsPerWarehouse) }

func (c *client) customerID() int {
	return NURand(c.rng, ACustomerID, cCustomerID, 1, c.cfg.CustomersPerDistrict)
}

// lastName draws a run-time last name; with fewer than 1,000 customers per
// district (test populations) it stays among the names that exist.
func (c *client) lastName() string {
	return LastName(NURand(c.rng, ALastName, cRunLast, 0, 999) % min(1000, c.cfg.CustomersPerDistrict))
}

// otherWarehouse draws a warehouse other than home (home when there is one).
func (c *client) otherWarehouse() int {
	if c.warehouses == 1 {
		return c.home
	}
	w := 1 + c.rng.IntN(c.warehouses-1)
	if w >= c.home {
		w++
	}
	return w
}

type orderItem struct{ id, supplyW, qty int }

// newOrder is clause 2.4; it reports RolledBack for the 1 % with an unused
// item number (the caller rolls back).
func (c *client) newOrder(ctx context.Context) (bench.Outcome, error) {
	w, d, cid := c.home, c.district(), c.customerID()
	olCnt := randInt(c.rng, minLines, maxLines)
	rollback := c.rng.IntN(100) == 0
	items := make([]orderItem, olCnt)
	allLocal := 1
	for i := range items {
		it := orderItem{id: NURand(c.rng, AItemID, cItemID, 1, c.cfg.Items), supplyW: w, qty: randInt(c.rng, 1, 10)}
		if c.warehouses > 1 && c.rng.IntN(100) == 0 {
			it.supplyW = c.otherWarehouse()
			allLocal = 0
		}
		items[i] = it
	}
	if rollback {
		items[olCnt-1].id = invalidItem
	}
	var discount, wTax, dTax float64
	var last, credit string
	if err := c.queryRow(ctx, c.q[stNOCustomer], w, d, cid).Scan(&discount, &last, &credit); err != nil {
		return bench.Failed, fmt.Errorf("NewOrder customer: %w", err)
	}
	if err := c.queryRow(ctx, c.q[stNOWarehouse], w).Scan(&wTax); err != nil {
		return bench.Failed, fmt.Errorf("NewOrder warehouse: %w", err)
	}
	var oid int
	if err := c.queryRow(ctx, c.q[stNODistrict], w, d).Scan(&oid, &dTax); err != nil {
		return bench.Failed, fmt.Errorf("NewOrder district: %w", err)
	}
	if _, err := c.exec(ctx, c.q[stNOUpdateDistrict], w, d); err != nil {
		return bench.Failed, err
	}
	if _, err := c.exec(ctx, c.q[stNOInsertOrder], w, d, oid, cid, olCnt, allLocal); err != nil {
		return bench.Failed, err
	}
	if _, err := c.exec(ctx, c.q[stNOInsertNewOrder], w, d, oid); err != nil {
		return bench.Failed, err
	}
	// As BenchBase: each line's item and stock are read (the stock row
	// locked) one by one, then the lines go in as one multi-row INSERT
	// (pgjdbc's reWriteBatchedInserts) and the stock updates as one batch:
	// one round trip each.
	var total float64
	lineArgs := make([]any, 0, orderLineCols*olCnt)
	stock := &pgx.Batch{}
	for n, it := range items {
		var price float64
		var iname, idata string
		err := c.queryRow(ctx, c.q[stNOItem], it.id).Scan(&price, &iname, &idata)
		if errors.Is(err, pgx.ErrNoRows) && it.id == invalidItem {
			return bench.RolledBack, nil // clause 2.4.2.3: the expected 1 % rollback
		}
		if err != nil {
			return bench.Failed, fmt.Errorf("NewOrder item %d: %w", it.id, err)
		}
		var sQty int
		var sData, distInfo string
		if err := c.queryRow(ctx, c.q[stStock01+d-1], it.supplyW, it.id).Scan(&sQty, &sData, &distInfo); err != nil {
			return bench.Failed, fmt.Errorf("NewOrder stock: %w", err)
		}
		if sQty-it.qty >= 10 {
			sQty -= it.qty
		} else {
			sQty += 91 - it.qty
		}
		remote := 0
		if it.supplyW != w {
			remote = 1
		}
		stock.Queue(c.q[stNOUpdateStock], sQty, it.qty, remote, it.supplyW, it.id)
		amount := float64(it.qty) * price
		total += amount
		lineArgs = append(lineArgs, w, d, oid, n+1, it.id, amount, it.supplyW, it.qty, distInfo)
	}
	if _, err := c.exec(ctx, c.q[stOrderLines+olCnt-minLines], lineArgs...); err != nil {
		return bench.Failed, fmt.Errorf("NewOrder order lines: %w", err)
	}
	if err := c.conn.SendBatch(ctx, stock).Close(); err != nil {
		return bench.Failed, fmt.Errorf("NewOrder stock updates: %w", err)
	}
	_ = total * (1 - discount) * (1 + wTax + dTax) // the terminal's display
	return bench.Counted, nil
}

// customer is the part of a customer row the transactions use.
type customer struct {
	id                   int
	credit               string
	balance, creditLimit float64
}

func (c *client) scanCustomer(row pgx.Row) (customer, error) {
	var cu customer
	var first, middle, last, s1, s2, city, state, zip, phone string
	var since any
	var discount float64
	err := row.Scan(&cu.id, &first, &middle, &last, &s1, &s2, &city, &state, &zip, &phone, &since, &cu.credit, &cu.creditLimit, &discount, &cu.balance)
	return cu, err
}

// customerOf selects a customer by last name (60 %: the one in the middle of
// those with that name, ordered by c_first) or by id.
func (c *client) customerOf(ctx context.Context, w, d int) (customer, error) {
	if c.rng.IntN(100) >= 60 {
		return c.scanCustomer(c.queryRow(ctx, c.q[stCustomerByID], w, d, c.customerID()))
	}
	name := c.lastName()
	rows, err := c.query(ctx, c.q[stCustomerByName], w, d, name)
	if err != nil {
		return customer{}, err
	}
	var found []customer
	for rows.Next() {
		cu, err := c.scanCustomer(rows)
		if err != nil {
			rows.Close()
			return customer{}, err
		}
		found = append(found, cu)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return customer{}, err
	}
	if len(found) == 0 {
		return customer{}, fmt.Errorf("tpcc: no customer named %s in warehouse %d district %d", name, w, d)
	}
	return found[(len(found)+1)/2-1], nil // position n/2 rounded up (clause 2.5.2.2)
}

// payment is clause 2.5.
func (c *client) payment(ctx context.Context) error {
	w, d := c.home, c.district()
	cw, cd := w, d
	if c.warehouses > 1 && c.rng.IntN(100) < 15 {
		cw, cd = c.otherWarehouse(), c.anyDistrict()
	}
	amount := money(c.rng, 1, 5000)
	if _, err := c.exec(ctx, c.q[stPayUpdateWarehouse], amount, w); err != nil {
		return err
	}
	var s1, s2, city, state, zip, wName, dName string
	if err := c.queryRow(ctx, c.q[stPayWarehouse], w).Scan(&s1, &s2, &city, &state, &zip, &wName); err != nil {
		return fmt.Errorf("Payment warehouse: %w", err)
	}
	if _, err := c.exec(ctx, c.q[stPayUpdateDistrict], amount, w, d); err != nil {
		return err
	}
	if err := c.queryRow(ctx, c.q[stPayDistrict], w, d).Scan(&s1, &s2, &city, &state, &zip, &dName); err != nil {
		return fmt.Errorf("Payment district: %w", err)
	}
	cu, err := c.customerOf(ctx, cw, cd)
	if err != nil {
		return fmt.Errorf("Payment customer: %w", err)
	}
	if cu.credit == "BC" {
		var cData string
		if err := c.queryRow(ctx, c.q[stPayCustomerData], cw, cd, cu.id).Scan(&cData); err != nil {
			return fmt.Errorf("Payment c_data: %w", err)
		}
		cData = fmt.Sprintf("%d %d %d %d %d %.2f | %s", cu.id, cd, cw, d, w, amount, cData)
		if len(cData) > 500 {
			cData = cData[:500]
		}
		if _, err := c.exec(ctx, c.q[stPayUpdateCustomerBC], amount, cData, cw, cd, cu.id); err != nil {
			return err
		}
	} else if _, err := c.exec(ctx, c.q[stPayUpdateCustomer], amount, cw, cd, cu.id); err != nil {
		return err
	}
	hData := wName + "    " + dName
	_, err = c.exec(ctx, c.q[stPayInsertHistory], cd, cw, cu.id, d, w, amount, hData)
	return err
}

// orderStatus is clause 2.6.
func (c *client) orderStatus(ctx context.Context) error {
	w, d := c.home, c.district()
	cu, err := c.customerOf(ctx, w, d)
	if err != nil {
		return fmt.Errorf("OrderStatus customer: %w", err)
	}
	var oid int
	var carrier *int
	var entry any
	if err := c.queryRow(ctx, c.q[stOSLastOrder], w, d, cu.id).Scan(&oid, &carrier, &entry); err != nil {
		return fmt.Errorf("OrderStatus last order of customer %d: %w", cu.id, err)
	}
	rows, err := c.query(ctx, c.q[stOSOrderLines], oid, d, w)
	if err != nil {
		return err
	}
	for rows.Next() {
		var iid, supplyW int
		var qty, amount float64
		var delivery any
		if err := rows.Scan(&iid, &supplyW, &qty, &amount, &delivery); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	return rows.Err()
}

// delivery is clause 2.7, in one database transaction, as BenchBase runs
// it: districts 1 up to the terminal's last district (Delivery.run loops
// d_id <= terminalDistrictUpperID). With one terminal per warehouse, or a
// client outside a run, that is all ten districts, as clause 2.7.4.2 says;
// with k terminals on a warehouse BenchBase's Delivery serves 10/k .. 10
// districts, about 7.5 on average for two, and so does this driver: its
// throughput is comparable with BenchBase's only if both do the same work.
// A district without undelivered orders is skipped.
func (c *client) delivery(ctx context.Context) error {
	w := c.home
	carrier := randInt(c.rng, 1, 10)
	for d := 1; d <= c.dHi; d++ {
		var oid int
		err := c.queryRow(ctx, c.q[stDelNewOrder], d, w).Scan(&oid)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		} else if err != nil {
			return fmt.Errorf("Delivery new order: %w", err)
		}
		tag, err := c.exec(ctx, c.q[stDelDeleteNewOrder], oid, d, w)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			continue // a concurrent Delivery took it
		}
		var cid int
		if err := c.queryRow(ctx, c.q[stDelOrder], oid, d, w).Scan(&cid); err != nil {
			return fmt.Errorf("Delivery order %d: %w", oid, err)
		}
		if _, err := c.exec(ctx, c.q[stDelUpdateOrder], carrier, oid, d, w); err != nil {
			return err
		}
		if _, err := c.exec(ctx, c.q[stDelUpdateOrderLines], oid, d, w); err != nil {
			return err
		}
		var total float64
		if err := c.queryRow(ctx, c.q[stDelSumOrderLines], oid, d, w).Scan(&total); err != nil {
			return fmt.Errorf("Delivery order line total: %w", err)
		}
		if _, err := c.exec(ctx, c.q[stDelUpdateCustomer], total, w, d, cid); err != nil {
			return err
		}
	}
	return nil
}

// stockLevel is clause 2.8: items of the district's last 20 orders below a
// threshold of 10..20.
func (c *client) stockLevel(ctx context.Context) error {
	w, d := c.home, c.district()
	threshold := randInt(c.rng, 10, 20)
	var next int
	if err := c.queryRow(ctx, c.q[stSLNextOrder], w, d).Scan(&next); err != nil {
		return fmt.Errorf("StockLevel district: %w", err)
	}
	var n int64
	if err := c.queryRow(ctx, c.q[stSLCount], w, d, next, next-20, w, threshold).Scan(&n); err != nil {
		return fmt.Errorf("StockLevel count: %w", err)
	}
	return nil
}
