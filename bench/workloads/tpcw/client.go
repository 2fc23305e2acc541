package tpcw

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
)

// Statements, after the TPC-W reference servlets' JDBC calls, in
// PostgreSQL's SQL with $n parameters.
const (
	stCustomerName = iota
	stRelated
	stNewProducts
	stBestSellers
	stProduct
	stSearchAuthor
	stSearchTitle
	stSearchSubject
	stCreateCart
	stCartAddQty
	stCartInsert
	stCartTouch
	stCartLines
	stCustomerByUname
	stInsertAddress
	stInsertCustomer
	stRefreshSession
	stCustomerAddress
	stInsertOrder
	stInsertLine
	stItemStock
	stUpdateStock
	stInsertCC
	stClearCart
	stCustomerUname
	stPassword
	stLastOrder
	stOrder
	stOrderLines
	stAdminUpdate
	stAdminRelated
	stAdminSetRelated
	numStatements
)

const itemList = `i_id, i_title, a_fname, a_lname FROM item, author WHERE i_a_id = a_id`

var statements = [numStatements]string{
	stCustomerName: `SELECT c_fname, c_lname FROM customer WHERE c_id = $1`,
	stRelated: `SELECT j.i_id, j.i_thumbnail FROM item i, item j WHERE i.i_id = $1 AND (j.i_id = i.i_related1 OR j.i_id = i.i_related2 ` +
		`OR j.i_id = i.i_related3 OR j.i_id = i.i_related4 OR j.i_id = i.i_related5)`,
	stNewProducts: `SELECT ` + itemList + ` AND i_subject = $1 ORDER BY i_pub_date DESC, i_title LIMIT 50`,
	stBestSellers: `SELECT i_id, i_title, a_fname, a_lname, sum(ol_qty) AS qty FROM item, author, order_line ` +
		`WHERE i_id = ol_i_id AND i_a_id = a_id AND ol_o_id > (SELECT max(o_id) - 3333 FROM orders) AND i_subject = $1 ` +
		`GROUP BY i_id, i_title, a_fname, a_lname ORDER BY qty DESC, i_id LIMIT 50`,
	stProduct: `SELECT i_id, i_title, a_fname, a_lname, i_pub_date, i_publisher, i_subject, i_desc, i_thumbnail, i_image, ` +
		`i_srp, i_cost, i_avail, i_stock, i_isbn, i_page, i_backing, i_dimensions FROM item, author WHERE i_id = $1 AND i_a_id = a_id`,
	stSearchAuthor:  `SELECT ` + itemList + ` AND a_lname LIKE $1 ORDER BY i_title LIMIT 50`,
	stSearchTitle:   `SELECT ` + itemList + ` AND i_title LIKE $1 ORDER BY i_title LIMIT 50`,
	stSearchSubject: `SELECT ` + itemList + ` AND i_subject = $1 ORDER BY i_title LIMIT 50`,
	stCreateCart:    `INSERT INTO shopping_cart (sc_time) VALUES (current_timestamp) RETURNING sc_id`,
	stCartAddQty:    `UPDATE shopping_cart_line SET scl_qty = scl_qty + $1 WHERE scl_sc_id = $2 AND scl_i_id = $3`,
	stCartInsert:    `INSERT INTO shopping_cart_line (scl_sc_id, scl_i_id, scl_qty) VALUES ($1, $2, $3)`,
	stCartTouch:     `UPDATE shopping_cart SET sc_time = current_timestamp WHERE sc_id = $1`,
	stCartLines: `SELECT scl_i_id, scl_qty, i_title, i_cost, i_srp, i_backing FROM shopping_cart_line, item ` +
		`WHERE scl_sc_id = $1 AND scl_i_id = i_id ORDER BY scl_i_id`,
	stCustomerByUname: `SELECT c_id, c_passwd, c_fname, c_lname, c_discount, c_balance, addr_street1, addr_city, addr_zip, co_name ` +
		`FROM customer, address, country WHERE c_uname = $1 AND c_addr_id = addr_id AND addr_co_id = co_id`,
	stInsertAddress: `INSERT INTO address (addr_street1, addr_street2, addr_city, addr_state, addr_zip, addr_co_id) ` +
		`VALUES ($1, $2, $3, $4, $5, $6) RETURNING addr_id`,
	stInsertCustomer: `INSERT INTO customer (c_uname, c_passwd, c_fname, c_lname, c_addr_id, c_phone, c_email, c_since, c_last_login, ` +
		`c_login, c_expiration, c_discount, c_balance, c_ytd_pmt, c_birthdate, c_data) VALUES ($1, $2, $3, $4, $5, $6, $7, current_date, ` +
		`current_date, current_timestamp, current_timestamp + interval '2 hours', $8, 0, 0, CAST($9 AS DATE), $10) RETURNING c_id`,
	stRefreshSession: `UPDATE customer SET c_login = current_timestamp, c_expiration = current_timestamp + interval '2 hours' WHERE c_id = $1`,
	stCustomerAddress: `SELECT c_fname, c_lname, c_discount, c_addr_id, addr_street1, addr_city, addr_zip, addr_co_id, co_name ` +
		`FROM customer, address, country WHERE c_id = $1 AND c_addr_id = addr_id AND addr_co_id = co_id`,
	stInsertOrder: `INSERT INTO orders (o_c_id, o_date, o_sub_total, o_tax, o_total, o_ship_type, o_ship_date, o_bill_addr_id, ` +
		`o_ship_addr_id, o_status) VALUES ($1, current_timestamp, $2, $3, $4, $5, current_timestamp + interval '3 days', $6, $7, 'PENDING') RETURNING o_id`,
	stInsertLine:  `INSERT INTO order_line (ol_id, ol_o_id, ol_i_id, ol_qty, ol_discount, ol_comments) VALUES ($1, $2, $3, $4, $5, $6)`,
	stItemStock:   `SELECT i_stock FROM item WHERE i_id = $1 FOR UPDATE`,
	stUpdateStock: `UPDATE item SET i_stock = $1 WHERE i_id = $2`,
	stInsertCC: `INSERT INTO cc_xacts (cx_o_id, cx_type, cx_num, cx_name, cx_expire, cx_auth_id, cx_xact_amt, cx_xact_date, cx_co_id) ` +
		`VALUES ($1, $2, $3, $4, CAST($5 AS DATE), $6, $7, current_timestamp, $8)`,
	stClearCart:     `DELETE FROM shopping_cart_line WHERE scl_sc_id = $1`,
	stCustomerUname: `SELECT c_uname FROM customer WHERE c_id = $1`,
	stPassword:      `SELECT c_passwd FROM customer WHERE c_uname = $1`,
	stLastOrder:     `SELECT o_id FROM customer, orders WHERE c_id = o_c_id AND c_uname = $1 ORDER BY o_date DESC, o_id DESC LIMIT 1`,
	stOrder: `SELECT o_id, c_fname, c_lname, c_phone, c_email, o_date, o_sub_total, o_tax, o_total, o_ship_type, o_ship_date, o_status, ` +
		`b.addr_street1, b.addr_city, b.addr_zip, bc.co_name, s.addr_street1, s.addr_city, s.addr_zip, sc.co_name, cx_type, cx_auth_id ` +
		`FROM orders, customer, address b, address s, country bc, country sc, cc_xacts WHERE o_id = $1 AND cx_o_id = o_id AND o_c_id = c_id ` +
		`AND o_bill_addr_id = b.addr_id AND b.addr_co_id = bc.co_id AND o_ship_addr_id = s.addr_id AND s.addr_co_id = sc.co_id`,
	stOrderLines:  `SELECT ol_i_id, i_title, i_publisher, i_cost, ol_qty, ol_discount, ol_comments FROM order_line, item WHERE ol_o_id = $1 AND ol_i_id = i_id`,
	stAdminUpdate: `UPDATE item SET i_cost = $1, i_image = $2, i_thumbnail = $3, i_pub_date = current_date WHERE i_id = $4`,
	stAdminRelated: `SELECT ol_i_id, sum(ol_qty) AS q FROM orders, order_line WHERE o_id = ol_o_id AND ol_i_id <> $1 AND o_c_id IN ` +
		`(SELECT o_c_id FROM orders, order_line WHERE o_id = ol_o_id AND o_id > (SELECT max(o_id) - 10000 FROM orders) AND ol_i_id = $1) ` +
		`GROUP BY ol_i_id ORDER BY q DESC, ol_i_id LIMIT 5`,
	stAdminSetRelated: `UPDATE item SET i_related1 = $1, i_related2 = $2, i_related3 = $3, i_related4 = $4, i_related5 = $5 WHERE i_id = $6`,
}

// errCommitRolledBack: COMMIT answered ROLLBACK (the transaction had failed).
var errCommitRolledBack = errors.New("tpcw: COMMIT answered ROLLBACK")

// session is an emulated browser's state: its customer and its cart.
type session struct{ customer, cart int }

type client struct {
	conn             *pgx.Conn
	rng              *rand.Rand
	items, customers int
	authors          int
	s                session
	q                [numStatements]string
	noRows           bool // the interaction found nothing to show
	register         bool // this CustomerRegistration registers a new customer
}

// NewClient implements bench.Workload. The catalogue size is read from the
// database (the load's Config.Items); the customers from the scale.
func (w *Workload) NewClient(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, p bench.ClientParams) (bench.Client, error) {
	if p.Scale <= 0 {
		return nil, fmt.Errorf("tpcw: %w: ebs must be > 0 (got %d)", bench.ErrBadOption, p.Scale)
	}
	c := &client{conn: conn, rng: rng, customers: Customers(p.Scale)}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM item").Scan(&c.items); err != nil {
		return nil, fmt.Errorf("tpcw: count items: %w", err)
	}
	if c.items == 0 {
		return nil, fmt.Errorf("tpcw: %w: no items", bench.ErrNotLoaded)
	}
	c.authors = Authors(c.items)
	c.s.customer = c.customer()
	for i, sql := range statements {
		if p.Simple {
			c.q[i] = sql
			continue
		}
		name := fmt.Sprintf("tpcw_%d", i)
		if _, err := conn.Prepare(ctx, name, sql); err != nil {
			return nil, fmt.Errorf("tpcw: prepare %s (%s): %w", name, sql, err)
		}
		c.q[i] = name
	}
	return c, nil
}

func (c *client) item() int     { return 1 + c.rng.IntN(c.items) }
func (c *client) customer() int { return 1 + c.rng.IntN(c.customers) }
func (c *client) subject() string {
	return Subjects[c.rng.IntN(len(Subjects))]
}

// Run implements bench.Client: one interaction, one transaction (READ ONLY
// for the interactions that only read). The session (customer, cart) moves
// on only when the transaction commits.
func (c *client) Run(ctx context.Context, t bench.TxType) (bench.Outcome, error) {
	if t < 0 || t >= numTx {
		return bench.Failed, fmt.Errorf("tpcw: unknown transaction type %d", t)
	}
	saved := c.s
	c.noRows = false
	// A returning customer's registration form only reads; the browser
	// knows which it is before the transaction starts.
	c.register = t == CustomerRegistration && c.rng.IntN(5) == 0
	begin := "BEGIN"
	if transactions[t].ReadOnly || (t == CustomerRegistration && !c.register) {
		begin = "BEGIN READ ONLY"
	}
	var err error
	if _, err = c.conn.Exec(ctx, begin); err == nil {
		err = c.interaction(ctx, t)
	}
	if err != nil {
		c.s = saved
		if !c.conn.IsClosed() {
			_, _ = c.conn.Exec(ctx, "ROLLBACK")
		}
		return bench.Classify(err), err
	}
	tag, err := c.conn.Exec(ctx, "COMMIT")
	if err != nil {
		c.s = saved
		return bench.Classify(err), err
	}
	if tag.String() == "ROLLBACK" {
		c.s = saved
		return bench.Failed, errCommitRolledBack
	}
	if c.noRows {
		return bench.CountedNoRows, nil
	}
	return bench.Counted, nil
}

func (c *client) interaction(ctx context.Context, t bench.TxType) error {
	switch t {
	case Home:
		if err := c.scanRows(ctx, stCustomerName, c.s.customer); err != nil {
			return err
		}
		return c.scanRows(ctx, stRelated, c.item())
	case NewProducts:
		return c.scanRows(ctx, stNewProducts, c.subject())
	case BestSellers:
		return c.scanRows(ctx, stBestSellers, c.subject())
	case ProductDetail, AdminRequest:
		return c.scanRows(ctx, stProduct, c.item())
	case SearchRequest:
		return c.scanRows(ctx, stRelated, c.item())
	case SearchResults:
		switch c.rng.IntN(3) {
		case 0:
			return c.scanRows(ctx, stSearchAuthor, DigSyl(1+c.rng.IntN(c.authors))+"%")
		case 1:
			return c.scanRows(ctx, stSearchTitle, DigSyl(c.item())+" %")
		default:
			return c.scanRows(ctx, stSearchSubject, c.subject())
		}
	case ShoppingCart:
		return c.shoppingCart(ctx)
	case CustomerRegistration:
		return c.registration(ctx)
	case BuyRequest:
		return c.buyRequest(ctx)
	case BuyConfirm:
		return c.buyConfirm(ctx)
	case OrderInquiry:
		return c.scanRows(ctx, stCustomerUname, c.s.customer)
	case OrderDisplay:
		return c.orderDisplay(ctx)
	case AdminConfirm:
		return c.adminConfirm(ctx)
	}
	return fmt.Errorf("tpcw: unknown transaction type %d", t)
}

// scanRows runs a query and reads its rows; none sets noRows.
func (c *client) scanRows(ctx context.Context, st int, args ...any) error {
	n, err := c.count(ctx, st, args...)
	if err == nil && n == 0 {
		c.noRows = true
	}
	return err
}

// count runs a query, reads its rows and returns how many there were.
func (c *client) count(ctx context.Context, st int, args ...any) (int, error) {
	rows, err := c.conn.Query(ctx, c.q[st], args...)
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		if _, err := rows.Values(); err != nil {
			rows.Close()
			return n, err
		}
		n++
	}
	rows.Close()
	return n, rows.Err()
}

// addToCart creates the session's cart if it has none and adds qty of item.
func (c *client) addToCart(ctx context.Context, item, qty int) error {
	if c.s.cart == 0 {
		if err := c.conn.QueryRow(ctx, c.q[stCreateCart]).Scan(&c.s.cart); err != nil {
			return fmt.Errorf("create cart: %w", err)
		}
	}
	tag, err := c.conn.Exec(ctx, c.q[stCartAddQty], qty, c.s.cart, item)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		_, err = c.conn.Exec(ctx, c.q[stCartInsert], c.s.cart, item, qty)
	}
	return err
}

type cartLine struct {
	item, qty int
	cost      float64
}

// cartLines reads the session's cart (none without a cart).
func (c *client) cartLines(ctx context.Context) ([]cartLine, error) {
	if c.s.cart == 0 {
		return nil, nil
	}
	rows, err := c.conn.Query(ctx, c.q[stCartLines], c.s.cart)
	if err != nil {
		return nil, err
	}
	var lines []cartLine
	for rows.Next() {
		var l cartLine
		var title, backing string
		var srp float64
		if err := rows.Scan(&l.item, &l.qty, &title, &l.cost, &srp, &backing); err != nil {
			rows.Close()
			return nil, err
		}
		lines = append(lines, l)
	}
	rows.Close()
	return lines, rows.Err()
}

// fullCart returns the cart's lines, first adding a random item to an empty
// cart (TPC-W's Shopping Cart interaction does so).
func (c *client) fullCart(ctx context.Context) ([]cartLine, error) {
	lines, err := c.cartLines(ctx)
	if err != nil || len(lines) > 0 {
		return lines, err
	}
	if err := c.addToCart(ctx, c.item(), 1); err != nil {
		return nil, err
	}
	return c.cartLines(ctx)
}

// shoppingCart adds an item (the one just viewed) to the cart, refreshes
// its time and shows it.
func (c *client) shoppingCart(ctx context.Context) error {
	if err := c.addToCart(ctx, c.item(), 1+c.rng.IntN(3)); err != nil {
		return err
	}
	if _, err := c.conn.Exec(ctx, c.q[stCartTouch], c.s.cart); err != nil {
		return err
	}
	_, err := c.cartLines(ctx)
	return err
}

// registration is the Customer Registration form: a returning customer
// (80 %, a read-only transaction) is looked up by user name; a new one
// (20 %) is registered with a new address and becomes the session's
// customer.
func (c *client) registration(ctx context.Context) error {
	if !c.register {
		id := c.customer()
		if err := c.scanRows(ctx, stCustomerByUname, DigSyl(id)); err != nil {
			return err
		}
		c.s.customer = id
		return nil
	}
	var addr int
	if err := c.conn.QueryRow(ctx, c.q[stInsertAddress], aString(c.rng, 15, 40), aString(c.rng, 15, 40), aString(c.rng, 4, 30),
		aString(c.rng, 2, 20), aString(c.rng, 5, 10), 1+c.rng.IntN(Countries)).Scan(&addr); err != nil {
		return fmt.Errorf("insert address: %w", err)
	}
	uname := "N" + aString(c.rng, 15, 15)
	var id int
	if err := c.conn.QueryRow(ctx, c.q[stInsertCustomer], uname, lower(uname), aString(c.rng, 8, 15), aString(c.rng, 8, 15), addr,
		nString(c.rng, 12), uname+"@example.com", float64(c.rng.IntN(51))/100, "1970-01-01", aString(c.rng, 100, 500)).Scan(&id); err != nil {
		return fmt.Errorf("insert customer: %w", err)
	}
	c.s.customer = id
	return nil
}

// buyRequest refreshes the customer's session, shows the customer and the
// cart (filled if empty).
func (c *client) buyRequest(ctx context.Context) error {
	if _, err := c.conn.Exec(ctx, c.q[stRefreshSession], c.s.customer); err != nil {
		return err
	}
	if err := c.scanRows(ctx, stCustomerAddress, c.s.customer); err != nil {
		return err
	}
	if _, err := c.fullCart(ctx); err != nil {
		return err
	}
	_, err := c.conn.Exec(ctx, c.q[stCartTouch], c.s.cart)
	return err
}

// buyConfirm places the cart as an order: the order with its lines (stock
// taken, replenished by 21 below 10 as TPC-W does), the card transaction,
// a new shipping address 10 % of the time; the cart is emptied.
func (c *client) buyConfirm(ctx context.Context) error {
	lines, err := c.fullCart(ctx)
	if err != nil {
		return err
	}
	var fname, lname, street, city, zip, country string
	var discount float64
	var billAddr, co int
	if err := c.conn.QueryRow(ctx, c.q[stCustomerAddress], c.s.customer).Scan(&fname, &lname, &discount, &billAddr, &street, &city, &zip, &co, &country); err != nil {
		return fmt.Errorf("customer %d: %w", c.s.customer, err)
	}
	shipAddr := billAddr
	if c.rng.IntN(10) == 0 {
		if err := c.conn.QueryRow(ctx, c.q[stInsertAddress], aString(c.rng, 15, 40), aString(c.rng, 15, 40), aString(c.rng, 4, 30),
			aString(c.rng, 2, 20), aString(c.rng, 5, 10), 1+c.rng.IntN(Countries)).Scan(&shipAddr); err != nil {
			return fmt.Errorf("insert address: %w", err)
		}
	}
	var sub float64
	for _, l := range lines {
		sub += l.cost * float64(l.qty)
	}
	sub = float64(int(sub*(1-discount)*100)) / 100
	tax := float64(int(sub*8.25)) / 100
	total := sub + tax + 3 + float64(len(lines))
	var oid int
	if err := c.conn.QueryRow(ctx, c.q[stInsertOrder], c.s.customer, sub, tax, total, shipTypes[c.rng.IntN(len(shipTypes))],
		billAddr, shipAddr).Scan(&oid); err != nil {
		return fmt.Errorf("insert order: %w", err)
	}
	for n, l := range lines {
		if _, err := c.conn.Exec(ctx, c.q[stInsertLine], n+1, oid, l.item, l.qty, discount, aString(c.rng, 20, 100)); err != nil {
			return err
		}
		var stock int
		if err := c.conn.QueryRow(ctx, c.q[stItemStock], l.item).Scan(&stock); err != nil {
			return fmt.Errorf("stock of item %d: %w", l.item, err)
		}
		if stock-l.qty < 10 {
			stock += 21
		}
		if _, err := c.conn.Exec(ctx, c.q[stUpdateStock], stock-l.qty, l.item); err != nil {
			return err
		}
	}
	name := fname + " " + lname
	if _, err := c.conn.Exec(ctx, c.q[stInsertCC], oid, ccTypes[c.rng.IntN(len(ccTypes))], nString(c.rng, 16), name[:min(len(name), 30)],
		"2030-12-31", aString(c.rng, 15, 15), total, co); err != nil {
		return err
	}
	_, err = c.conn.Exec(ctx, c.q[stClearCart], c.s.cart)
	return err
}

// orderDisplay logs a customer in by user name and shows their most recent
// order with its lines; a customer without orders sees none (CountedNoRows).
func (c *client) orderDisplay(ctx context.Context) error {
	uname := DigSyl(c.customer())
	var passwd string
	if err := c.conn.QueryRow(ctx, c.q[stPassword], uname).Scan(&passwd); err != nil {
		return fmt.Errorf("password of %s: %w", uname, err)
	}
	var oid int
	err := c.conn.QueryRow(ctx, c.q[stLastOrder], uname).Scan(&oid)
	if errors.Is(err, pgx.ErrNoRows) {
		c.noRows = true
		return nil
	} else if err != nil {
		return err
	}
	if err := c.scanRows(ctx, stOrder, oid); err != nil {
		return err
	}
	return c.scanRows(ctx, stOrderLines, oid)
}

// adminConfirm changes an item's cost and images and sets its related
// items to the best sellers among the recent buyers of it (when there are
// five).
func (c *client) adminConfirm(ctx context.Context) error {
	id := c.item()
	rows, err := c.conn.Query(ctx, c.q[stAdminRelated], id)
	if err != nil {
		return err
	}
	var rel []any
	for rows.Next() {
		var i int
		var q int64
		if err := rows.Scan(&i, &q); err != nil {
			rows.Close()
			return err
		}
		rel = append(rel, i)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	tag, err := c.conn.Exec(ctx, c.q[stAdminUpdate], money(c.rng, 1, 9999.99), "img/image_"+itoa(id)+".gif", "img/thumb_"+itoa(id)+".gif", id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("tpcw: item %d not found", id)
	}
	if len(rel) == 5 {
		_, err = c.conn.Exec(ctx, c.q[stAdminSetRelated], append(rel, id)...)
	}
	return err
}
