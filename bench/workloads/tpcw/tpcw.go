// Package tpcw is a TPC-W-like online bookstore, as seed 003 section 6.1
// runs it (on seed 002's schema, TPC-W's ten tables): the fourteen web
// interactions each run as one database transaction, in TPC-W's three mixes
// (browsing, shopping, ordering: 5, 20 and 50 % of interactions in the
// order class, seed 003 table 2), with an exponential think time of 900 ms
// mean between interactions (seed 003 section 6.1; `bench run --think`
// changes the mean, 0 runs closed-loop without thinking).
//
// Scale: emulated browsers (EBs), with TPC-W's cardinality rules (clause
// 4.3): 2,880 customers per EB, two addresses per customer, 0.9 orders per
// customer with 1..5 order lines each (3 on average) and one credit card
// transaction each, 92 countries, and a catalogue of Config.Items items
// (TPC-W allows 1,000, 10,000, 100,000 ...; seed 003 uses 10,000 with 100
// EBs) by Items/4 authors. Shopping carts start empty.
//
// Writes: ShoppingCart (creates and fills the browser's cart), Customer
// Registration (registers a new customer 20 % of the time; the returning
// customers' 80 % run as READ ONLY transactions), BuyRequest
// (refreshes the customer's session), BuyConfirm (the order, its lines, the
// card transaction, stock) and AdminConfirm (an item's price, image and
// related items). Order Inquiry, Order Display and Admin Request only read,
// so the share of transactions that may write is 4.35, 18.49 and 49.41 % in
// the three mixes, a little under the order class's 5, 20 and 50 %.
//
// Simplifications, said here so the figures are read right: no web or
// application server (the interactions' SQL runs directly, as the servlets'
// JDBC calls would); each client is one emulated browser with one session
// (a customer, a cart) for the whole run; item and customer ids are drawn
// uniformly; titles and author last names start with the syllables of their
// id (TPC-W's DigSyl), so that searches find rows.
//
// It owns the workload's SQL and random value rules only. The SQL is
// PostgreSQL's; it runs unchanged on PostgreSQL and through tandem on both
// back ends; the one place it differs (moving serial sequences past the
// loaded ids) goes through bench.Dialect.
package tpcw

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
)

// Name is the --workload value.
const Name = "tpcw"

// The fourteen interactions, in TPC-W's order.
const (
	Home bench.TxType = iota
	NewProducts
	BestSellers
	ProductDetail
	SearchRequest
	SearchResults
	ShoppingCart
	CustomerRegistration
	BuyRequest
	BuyConfirm
	OrderInquiry
	OrderDisplay
	AdminRequest
	AdminConfirm
	numTx
)

var transactions = []bench.TxInfo{
	Home:                 {Name: "Home", ReadOnly: true},
	NewProducts:          {Name: "NewProducts", ReadOnly: true},
	BestSellers:          {Name: "BestSellers", ReadOnly: true},
	ProductDetail:        {Name: "ProductDetail", ReadOnly: true},
	SearchRequest:        {Name: "SearchRequest", ReadOnly: true},
	SearchResults:        {Name: "SearchResults", ReadOnly: true},
	ShoppingCart:         {Name: "ShoppingCart"},
	CustomerRegistration: {Name: "CustomerRegistration"},
	BuyRequest:           {Name: "BuyRequest"},
	BuyConfirm:           {Name: "BuyConfirm"},
	OrderInquiry:         {Name: "OrderInquiry", ReadOnly: true},
	OrderDisplay:         {Name: "OrderDisplay", ReadOnly: true},
	AdminRequest:         {Name: "AdminRequest", ReadOnly: true},
	AdminConfirm:         {Name: "AdminConfirm"},
}

// TPC-W's mixes (clause 5.2.1.2); the last eight interactions are the order
// class: 5, 20 and 50 %.
var mixes = []bench.Mix{
	{Name: "shopping", Description: "TPC-W's shopping mix (WIPS): 20 % order interactions; seed 003's main workload",
		Weights: []float64{16, 5, 5, 17, 20, 17, 11.6, 3, 2.6, 1.2, 0.75, 0.66, 0.1, 0.09}},
	{Name: "browsing", Description: "TPC-W's browsing mix (WIPSb): 5 % order interactions",
		Weights: []float64{29, 11, 11, 21, 12, 11, 2, 0.82, 0.75, 0.69, 0.3, 0.25, 0.1, 0.09}},
	{Name: "ordering", Description: "TPC-W's ordering mix (WIPSo): 50 % order interactions",
		Weights: []float64{9.12, 0.46, 0.46, 12.35, 14.53, 13.08, 13.53, 12.86, 12.73, 10.18, 0.25, 0.22, 0.12, 0.11}},
}

// OrderClass tells whether t is one of TPC-W's order interactions (the
// "updates" of seed 003 table 2).
func OrderClass(t bench.TxType) bool { return t >= ShoppingCart }

// Cardinality rules (TPC-W clause 4.3).
const (
	CustomersPerEB = 2880
	Countries      = 92
	// DefaultItems is seed 003's catalogue.
	DefaultItems = 10_000
)

// Customers at scale ebs.
func Customers(ebs int) int { return CustomersPerEB * ebs }

// Addresses at scale ebs: two per customer.
func Addresses(ebs int) int { return 2 * Customers(ebs) }

// Orders at scale ebs: 0.9 per customer.
func Orders(ebs int) int { return Customers(ebs) * 9 / 10 }

// Authors of a catalogue of items: a quarter of them.
func Authors(items int) int { return max(1, items/4) }

// Config is the population's shape.
type Config struct {
	// Items in the catalogue; 0 means DefaultItems.
	Items int
}

// Workload is TPC-W.
type Workload struct{ cfg Config }

// New returns TPC-W with seed 003's 10,000 items.
func New() *Workload { return &Workload{cfg: Config{Items: DefaultItems}} }

// NewWithConfig returns TPC-W with another catalogue size.
func NewWithConfig(c Config) *Workload {
	if c.Items <= 0 {
		c.Items = DefaultItems
	}
	return &Workload{cfg: c}
}

// Config returns the population's shape.
func (w *Workload) Config() Config { return w.cfg }

func init() { bench.Register(New()) }

// Name implements bench.Workload.
func (*Workload) Name() string { return Name }

// ScaleName implements bench.Workload: emulated browsers.
func (*Workload) ScaleName() string { return "ebs" }

// Transactions implements bench.Workload.
func (*Workload) Transactions() []bench.TxInfo { return append([]bench.TxInfo(nil), transactions...) }

// Mixes implements bench.Workload; shopping is the default.
func (*Workload) Mixes() []bench.Mix {
	out := make([]bench.Mix, len(mixes))
	for i, m := range mixes {
		m.Weights = append([]float64(nil), m.Weights...)
		out[i] = m
	}
	return out
}

// DefaultClients implements bench.ClientsAdvisor: seed 003 table 2's
// clients per replica (browsing 30, shopping 40, ordering 50).
func (*Workload) DefaultClients(mix string) int {
	switch mix {
	case "browsing":
		return 30
	case "ordering":
		return 50
	}
	return 40
}

// DefaultThink implements bench.ThinkTimer: seed 003's 900 ms mean.
func (*Workload) DefaultThink() time.Duration { return 900 * time.Millisecond }

var tables = []string{"country", "author", "item", "address", "customer", "orders", "order_line", "cc_xacts", "shopping_cart", "shopping_cart_line"}

var schema = []string{
	`CREATE TABLE country (
  co_id INTEGER NOT NULL PRIMARY KEY, co_name VARCHAR(50) NOT NULL,
  co_exchange NUMERIC(12,6) NOT NULL, co_currency VARCHAR(18) NOT NULL)`,
	`CREATE TABLE author (
  a_id INTEGER NOT NULL PRIMARY KEY, a_fname VARCHAR(20) NOT NULL, a_lname VARCHAR(20) NOT NULL,
  a_mname VARCHAR(20), a_dob DATE, a_bio VARCHAR(500));
CREATE INDEX idx_author_lname ON author (a_lname)`,
	`CREATE TABLE item (
  i_id INTEGER NOT NULL PRIMARY KEY, i_title VARCHAR(60) NOT NULL, i_a_id INTEGER NOT NULL,
  i_pub_date DATE NOT NULL, i_publisher VARCHAR(60), i_subject VARCHAR(60) NOT NULL, i_desc VARCHAR(500),
  i_related1 INTEGER NOT NULL, i_related2 INTEGER NOT NULL, i_related3 INTEGER NOT NULL,
  i_related4 INTEGER NOT NULL, i_related5 INTEGER NOT NULL,
  i_thumbnail VARCHAR(40), i_image VARCHAR(40), i_srp NUMERIC(15,2) NOT NULL, i_cost NUMERIC(15,2) NOT NULL,
  i_avail DATE, i_stock INTEGER NOT NULL, i_isbn CHAR(13), i_page INTEGER, i_backing VARCHAR(15), i_dimensions VARCHAR(25));
CREATE INDEX idx_item_subject ON item (i_subject);
CREATE INDEX idx_item_aid ON item (i_a_id);
CREATE INDEX idx_item_title ON item (i_title)`,
	`CREATE TABLE address (
  addr_id SERIAL PRIMARY KEY, addr_street1 VARCHAR(40) NOT NULL, addr_street2 VARCHAR(40),
  addr_city VARCHAR(30) NOT NULL, addr_state VARCHAR(20), addr_zip VARCHAR(10) NOT NULL, addr_co_id INTEGER NOT NULL)`,
	`CREATE TABLE customer (
  c_id SERIAL PRIMARY KEY, c_uname VARCHAR(20) NOT NULL, c_passwd VARCHAR(20) NOT NULL,
  c_fname VARCHAR(17) NOT NULL, c_lname VARCHAR(17) NOT NULL, c_addr_id INTEGER NOT NULL,
  c_phone VARCHAR(18), c_email VARCHAR(50), c_since DATE NOT NULL, c_last_login DATE NOT NULL,
  c_login TIMESTAMP NOT NULL, c_expiration TIMESTAMP NOT NULL, c_discount NUMERIC(5,2) NOT NULL,
  c_balance NUMERIC(15,2) NOT NULL, c_ytd_pmt NUMERIC(15,2) NOT NULL, c_birthdate DATE, c_data VARCHAR(510));
CREATE INDEX idx_customer_uname ON customer (c_uname)`,
	`CREATE TABLE orders (
  o_id SERIAL PRIMARY KEY, o_c_id INTEGER NOT NULL, o_date TIMESTAMP NOT NULL,
  o_sub_total NUMERIC(15,2) NOT NULL, o_tax NUMERIC(15,2) NOT NULL, o_total NUMERIC(15,2) NOT NULL,
  o_ship_type VARCHAR(10) NOT NULL, o_ship_date TIMESTAMP, o_bill_addr_id INTEGER NOT NULL,
  o_ship_addr_id INTEGER NOT NULL, o_status VARCHAR(15) NOT NULL);
CREATE INDEX idx_orders_cid ON orders (o_c_id)`,
	`CREATE TABLE order_line (
  ol_id INTEGER NOT NULL, ol_o_id INTEGER NOT NULL, ol_i_id INTEGER NOT NULL, ol_qty INTEGER NOT NULL,
  ol_discount NUMERIC(5,2) NOT NULL, ol_comments VARCHAR(110),
  PRIMARY KEY (ol_o_id, ol_id));
CREATE INDEX idx_order_line_iid ON order_line (ol_i_id)`,
	`CREATE TABLE cc_xacts (
  cx_o_id INTEGER NOT NULL PRIMARY KEY, cx_type VARCHAR(10) NOT NULL, cx_num VARCHAR(20) NOT NULL,
  cx_name VARCHAR(30) NOT NULL, cx_expire DATE NOT NULL, cx_auth_id CHAR(15) NOT NULL,
  cx_xact_amt NUMERIC(15,2) NOT NULL, cx_xact_date TIMESTAMP NOT NULL, cx_co_id INTEGER NOT NULL)`,
	`CREATE TABLE shopping_cart (
  sc_id SERIAL PRIMARY KEY, sc_time TIMESTAMP NOT NULL)`,
	`CREATE TABLE shopping_cart_line (
  scl_sc_id INTEGER NOT NULL, scl_i_id INTEGER NOT NULL, scl_qty INTEGER NOT NULL,
  PRIMARY KEY (scl_sc_id, scl_i_id))`,
}

// Tables implements bench.Workload.
func (*Workload) Tables() []string { return append([]string(nil), tables...) }

// Schema implements bench.Workload. Ids of rows the interactions create
// (addresses, customers, orders, carts) are serial.
func (*Workload) Schema() []string { return append([]string(nil), schema...) }

// serials are the serial columns FinishLoad moves past the loaded ids.
var serials = [][2]string{{"address", "addr_id"}, {"customer", "c_id"}, {"orders", "o_id"}, {"shopping_cart", "sc_id"}}

// FinishLoad implements bench.LoadFinisher: the serial sequences continue
// after the loaded ids (both back ends keep real sequences).
func (*Workload) FinishLoad(ctx context.Context, conn *pgx.Conn, d bench.Dialect) error {
	for _, s := range serials {
		if sql := d.SyncSerial(s[0], s[1]); sql != "" {
			if _, err := conn.Exec(ctx, sql); err != nil {
				return fmt.Errorf("sync serial %s.%s: %w", s[0], s[1], err)
			}
		}
	}
	return nil
}

// DetectScale implements bench.Workload: loaded customers / 2,880 (customers
// registered during runs have ids past the loaded ones and are not counted).
func (*Workload) DetectScale(ctx context.Context, conn *pgx.Conn) (int, error) {
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM customer WHERE c_since < '2000-01-02'").Scan(&n); err != nil {
		return 0, fmt.Errorf("count customers: %w", err)
	}
	return int(n / CustomersPerEB), nil
}

// Subjects are TPC-W's 24 item subjects (clause 4.7.1).
var Subjects = []string{"ARTS", "BIOGRAPHIES", "BUSINESS", "CHILDREN", "COMPUTERS", "COOKING", "HEALTH", "HISTORY",
	"HOME", "HUMOR", "LITERATURE", "MYSTERY", "NON-FICTION", "PARENTING", "POLITICS", "REFERENCE", "RELIGION",
	"ROMANCE", "SELF-HELP", "SCIENCE-NATURE", "SCIENCE-FICTION", "SPORTS", "YOUTH", "TRAVEL"}

var syllables = [10]string{"BA", "OG", "AL", "RI", "RE", "SE", "AT", "UL", "IN", "NG"}

// DigSyl is TPC-W's digit-syllable string of n (clause 4.6.2.18): each
// decimal digit becomes a syllable, e.g. 371 is RIULOG.
func DigSyl(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for _, c := range s {
		b.WriteString(syllables[c-'0'])
	}
	return b.String()
}

var shipTypes = []string{"AIR", "UPS", "FEDEX", "SHIP", "COURIER", "MAIL"}
var orderStatus = []string{"PROCESSING", "SHIPPED", "PENDING", "DENIED"}
var ccTypes = []string{"VISA", "MASTERCARD", "DISCOVER", "AMEX", "DINERS"}
var backings = []string{"HARDBACK", "PAPERBACK", "USED", "AUDIO", "LIMITED-EDITION"}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// aString is a random letter string of length lo..hi.
func aString(rng *rand.Rand, lo, hi int) string {
	b := make([]byte, lo+rng.IntN(hi-lo+1))
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

// nString is a random digit string of length n.
func nString(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + rng.IntN(10))
	}
	return string(b)
}

// title is an item's title: its DigSyl, then random letters (14..60 in all).
func title(rng *rand.Rand, id int) string {
	s := DigSyl(id) + " " + aString(rng, 8, 40)
	return s[:min(len(s), 60)]
}

// loadDay is the population's "today"; dates lie before it. DetectScale
// tells loaded customers (c_since before it) from registered ones.
var loadDay = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func dateBefore(rng *rand.Rand, maxDays int) string {
	return loadDay.AddDate(0, 0, -rng.IntN(maxDays+1)).Format("2006-01-02")
}

func timeBefore(rng *rand.Rand, maxDays int) string {
	return loadDay.Add(-time.Duration(rng.Int64N(int64(maxDays) * int64(24*time.Hour)))).Format("2006-01-02 15:04:05")
}

func money(rng *rand.Rand, lo, hi float64) float64 {
	return float64(int(lo*100)+rng.IntN(int((hi-lo)*100)+1)) / 100
}

func itoa(n int) string     { return strconv.Itoa(n) }
func lower(s string) string { return strings.ToLower(s) }
