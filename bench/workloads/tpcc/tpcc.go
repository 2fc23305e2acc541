// Package tpcc is the TPC-C order-entry workload with OLTPBenchmark's (today's
// BenchBase's) semantics, as seed 001 section 3.3.4 runs it: warehouses as the
// scale factor, the nine tables with TPC-C's population rules (clause 4.3.3.1),
// the five transactions with the standard mix (NewOrder 45, Payment 43,
// OrderStatus 4, Delivery 4, StockLevel 4), NURand with the standard A values,
// 1 % of NewOrders rolling back on an invalid item, remote warehouses (1 % of
// order lines, 15 % of payments) and customers chosen by last name 60 % of the
// time. There is no keying or think time unless `bench run --think` asks.
//
// It owns the workload's SQL and random value rules only; the driver,
// retries, statistics and reports are package bench's. The SQL is standard
// PostgreSQL that tandem's SQLite back end translates; it runs unchanged on
// both back ends and directly on PostgreSQL. Table and column names are
// BenchBase's (the orders table is oorder), so its queries compare.
//
// Each client is a terminal bound as BenchBase binds them (TerminalOf): a
// home warehouse (client index mod warehouses) and a range of its districts
// from which its transactions draw, so the terminals of a warehouse do not
// queue on one district's row.
//
// Differences from BenchBase: no foreign keys (the loader fills tables on
// parallel connections in any order); warehouses go to terminals
// round-robin rather than in blocks (the same count per warehouse). Like
// BenchBase's, Delivery serves districts 1 up to the top of the terminal's
// range (all ten, as TPC-C's clause 2.7.4.2 says, only with one terminal
// per warehouse): the two drivers' throughputs are comparable only if
// their transactions do the same work.
package tpcc

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
)

// Name is the --workload value.
const Name = "tpcc"

// The five transaction types, in BenchBase's order.
const (
	NewOrder bench.TxType = iota
	Payment
	OrderStatus
	Delivery
	StockLevel
	numTx
)

var transactions = []bench.TxInfo{
	NewOrder:    {Name: "NewOrder"},
	Payment:     {Name: "Payment"},
	OrderStatus: {Name: "OrderStatus", ReadOnly: true},
	Delivery:    {Name: "Delivery"},
	StockLevel:  {Name: "StockLevel", ReadOnly: true},
}

var mixes = []bench.Mix{
	{Name: "standard", Description: "TPC-C's mix: NewOrder 45, Payment 43, OrderStatus 4, Delivery 4, StockLevel 4", Weights: []float64{45, 43, 4, 4, 4}},
	{Name: "read-only", Description: "OrderStatus and StockLevel only", Weights: []float64{0, 0, 50, 0, 50}},
}

// Config is the population's shape. The zero value and Standard are TPC-C's;
// a smaller Items and CustomersPerDistrict are for tests only (a database
// loaded with them is not TPC-C and must be run with the same Config).
type Config struct {
	// Items in the catalogue and stock rows per warehouse; TPC-C: 100,000.
	Items int
	// CustomersPerDistrict, also the initial orders per district; TPC-C: 3,000.
	// The last 30 % of the initial orders are undelivered (new_order rows).
	CustomersPerDistrict int
}

// Standard is TPC-C's population.
var Standard = Config{Items: 100_000, CustomersPerDistrict: 3_000}

// DistrictsPerWarehouse is fixed by TPC-C.
const DistrictsPerWarehouse = 10

func (c Config) withDefaults() Config {
	if c.Items <= 0 {
		c.Items = Standard.Items
	}
	if c.CustomersPerDistrict <= 0 {
		c.CustomersPerDistrict = Standard.CustomersPerDistrict
	}
	return c
}

// FirstNewOrder is the first undelivered initial order id of a district:
// 2,101 with 3,000 orders.
func (c Config) FirstNewOrder() int {
	c = c.withDefaults()
	return c.CustomersPerDistrict - c.CustomersPerDistrict*3/10 + 1
}

// Workload is TPC-C.
type Workload struct{ cfg Config }

// New returns TPC-C with the standard population.
func New() *Workload { return &Workload{cfg: Standard} }

// NewWithConfig returns TPC-C with a reduced population for tests.
func NewWithConfig(c Config) *Workload { return &Workload{cfg: c.withDefaults()} }

// Config returns the population's shape.
func (w *Workload) Config() Config { return w.cfg }

func init() { bench.Register(New()) }

// Name implements bench.Workload.
func (*Workload) Name() string { return Name }

// ScaleName implements bench.Workload: TPC-C scales by warehouses.
func (*Workload) ScaleName() string { return "warehouses" }

// Transactions implements bench.Workload.
func (*Workload) Transactions() []bench.TxInfo { return append([]bench.TxInfo(nil), transactions...) }

// Mixes implements bench.Workload; standard is the default.
func (*Workload) Mixes() []bench.Mix {
	out := make([]bench.Mix, len(mixes))
	for i, m := range mixes {
		m.Weights = append([]float64(nil), m.Weights...)
		out[i] = m
	}
	return out
}

// PerMinute implements bench.PerMinuteReporter: tpmC, committed NewOrders
// per minute (the 1 % that roll back by rule are not counted).
func (*Workload) PerMinute() (bench.TxType, string) { return NewOrder, "tpmC" }

// Tables in creation order.
var tables = []string{"warehouse", "item", "stock", "district", "customer", "history", "oorder", "new_order", "order_line"}

var schema = []string{
	`CREATE TABLE warehouse (
  w_id INTEGER NOT NULL PRIMARY KEY,
  w_ytd NUMERIC(12,2) NOT NULL, w_tax NUMERIC(4,4) NOT NULL,
  w_name VARCHAR(10) NOT NULL, w_street_1 VARCHAR(20) NOT NULL, w_street_2 VARCHAR(20) NOT NULL,
  w_city VARCHAR(20) NOT NULL, w_state CHAR(2) NOT NULL, w_zip CHAR(9) NOT NULL)`,
	`CREATE TABLE item (
  i_id INTEGER NOT NULL PRIMARY KEY,
  i_name VARCHAR(24) NOT NULL, i_price NUMERIC(5,2) NOT NULL, i_data VARCHAR(50) NOT NULL,
  i_im_id INTEGER NOT NULL)`,
	`CREATE TABLE stock (
  s_w_id INTEGER NOT NULL, s_i_id INTEGER NOT NULL,
  s_quantity INTEGER NOT NULL, s_ytd NUMERIC(8,2) NOT NULL,
  s_order_cnt INTEGER NOT NULL, s_remote_cnt INTEGER NOT NULL, s_data VARCHAR(50) NOT NULL,
  s_dist_01 CHAR(24) NOT NULL, s_dist_02 CHAR(24) NOT NULL, s_dist_03 CHAR(24) NOT NULL,
  s_dist_04 CHAR(24) NOT NULL, s_dist_05 CHAR(24) NOT NULL, s_dist_06 CHAR(24) NOT NULL,
  s_dist_07 CHAR(24) NOT NULL, s_dist_08 CHAR(24) NOT NULL, s_dist_09 CHAR(24) NOT NULL,
  s_dist_10 CHAR(24) NOT NULL,
  PRIMARY KEY (s_w_id, s_i_id))`,
	`CREATE TABLE district (
  d_w_id INTEGER NOT NULL, d_id INTEGER NOT NULL,
  d_ytd NUMERIC(12,2) NOT NULL, d_tax NUMERIC(4,4) NOT NULL, d_next_o_id INTEGER NOT NULL,
  d_name VARCHAR(10) NOT NULL, d_street_1 VARCHAR(20) NOT NULL, d_street_2 VARCHAR(20) NOT NULL,
  d_city VARCHAR(20) NOT NULL, d_state CHAR(2) NOT NULL, d_zip CHAR(9) NOT NULL,
  PRIMARY KEY (d_w_id, d_id))`,
	`CREATE TABLE customer (
  c_w_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL, c_id INTEGER NOT NULL,
  c_discount NUMERIC(4,4) NOT NULL, c_credit CHAR(2) NOT NULL,
  c_last VARCHAR(16) NOT NULL, c_first VARCHAR(16) NOT NULL,
  c_credit_lim NUMERIC(12,2) NOT NULL, c_balance NUMERIC(12,2) NOT NULL,
  c_ytd_payment NUMERIC(12,2) NOT NULL, c_payment_cnt INTEGER NOT NULL, c_delivery_cnt INTEGER NOT NULL,
  c_street_1 VARCHAR(20) NOT NULL, c_street_2 VARCHAR(20) NOT NULL, c_city VARCHAR(20) NOT NULL,
  c_state CHAR(2) NOT NULL, c_zip CHAR(9) NOT NULL, c_phone CHAR(16) NOT NULL,
  c_since TIMESTAMP NOT NULL, c_middle CHAR(2) NOT NULL, c_data VARCHAR(500) NOT NULL,
  PRIMARY KEY (c_w_id, c_d_id, c_id));
CREATE INDEX idx_customer_name ON customer (c_w_id, c_d_id, c_last, c_first)`,
	`CREATE TABLE history (
  h_c_id INTEGER NOT NULL, h_c_d_id INTEGER NOT NULL, h_c_w_id INTEGER NOT NULL,
  h_d_id INTEGER NOT NULL, h_w_id INTEGER NOT NULL,
  h_date TIMESTAMP NOT NULL, h_amount NUMERIC(6,2) NOT NULL, h_data VARCHAR(24) NOT NULL)`,
	`CREATE TABLE oorder (
  o_w_id INTEGER NOT NULL, o_d_id INTEGER NOT NULL, o_id INTEGER NOT NULL,
  o_c_id INTEGER NOT NULL, o_carrier_id INTEGER, o_ol_cnt INTEGER NOT NULL,
  o_all_local INTEGER NOT NULL, o_entry_d TIMESTAMP NOT NULL,
  PRIMARY KEY (o_w_id, o_d_id, o_id));
CREATE INDEX idx_order ON oorder (o_w_id, o_d_id, o_c_id, o_id)`,
	`CREATE TABLE new_order (
  no_w_id INTEGER NOT NULL, no_d_id INTEGER NOT NULL, no_o_id INTEGER NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id))`,
	`CREATE TABLE order_line (
  ol_w_id INTEGER NOT NULL, ol_d_id INTEGER NOT NULL, ol_o_id INTEGER NOT NULL,
  ol_number INTEGER NOT NULL, ol_i_id INTEGER NOT NULL, ol_delivery_d TIMESTAMP,
  ol_amount NUMERIC(6,2) NOT NULL, ol_supply_w_id INTEGER NOT NULL,
  ol_quantity NUMERIC(6,2) NOT NULL, ol_dist_info CHAR(24) NOT NULL,
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))`,
}

// Tables implements bench.Workload.
func (*Workload) Tables() []string { return append([]string(nil), tables...) }

// Schema implements bench.Workload. The customer and oorder statements also
// create BenchBase's secondary indexes (by last name, by customer).
func (*Workload) Schema() []string { return append([]string(nil), schema...) }

// DetectScale implements bench.Workload: the number of warehouses.
func (*Workload) DetectScale(ctx context.Context, conn *pgx.Conn) (int, error) {
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM warehouse").Scan(&n); err != nil {
		return 0, fmt.Errorf("count warehouses: %w", err)
	}
	return int(n), nil
}

// NURand A values (clause 2.1.6) and the C constants of this run (the load
// uses C_LOAD for c_last; the run's C for c_last differs by a delta in
// 65..119 without 96 and 112, clause 2.1.6.1).
const (
	ACustomerID = 1023
	AItemID     = 8191
	ALastName   = 255
	cLoad       = 157
	cRunLast    = 223 // cRunLast - cLoad = 66
	cCustomerID = 259
	cItemID     = 7911
)

func randInt(rng *rand.Rand, lo, hi int) int { return lo + rng.IntN(hi-lo+1) }

// NURand is TPC-C's non-uniform random number in [x, y] (clause 2.1.6).
func NURand(rng *rand.Rand, a, c, x, y int) int {
	return (((randInt(rng, 0, a) | randInt(rng, x, y)) + c) % (y - x + 1)) + x
}

var syllables = [...]string{"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}

// LastName is TPC-C's customer last name for n in 0..999 (clause 4.3.2.3).
func LastName(n int) string {
	return syllables[n/100] + syllables[n/10%10] + syllables[n%10]
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// aString is a random alphanumeric string of length lo..hi.
func aString(rng *rand.Rand, lo, hi int) string {
	b := make([]byte, randInt(rng, lo, hi))
	for i := range b {
		b[i] = alnum[rng.IntN(len(alnum))]
	}
	return string(b)
}

// nString is a random numeric string of length lo..hi.
func nString(rng *rand.Rand, lo, hi int) string {
	b := make([]byte, randInt(rng, lo, hi))
	for i := range b {
		b[i] = byte('0' + rng.IntN(10))
	}
	return string(b)
}

// zip is 4 random digits then 11111 (clause 4.3.2.7).
func zip(rng *rand.Rand) string { return nString(rng, 4, 4) + "11111" }

// data is an a-string of lo..hi with "ORIGINAL" at a random place in 10 % of
// the rows (i_data, s_data).
func data(rng *rand.Rand, lo, hi int) string {
	s := aString(rng, lo, hi)
	if rng.IntN(10) == 0 {
		p := rng.IntN(len(s) - 8 + 1)
		s = s[:p] + "ORIGINAL" + s[p+8:]
	}
	return s
}

// money draws a value in lo..hi with 2 decimals, as a float64.
func money(rng *rand.Rand, lo, hi float64) float64 {
	return float64(randInt(rng, int(lo*100), int(hi*100))) / 100
}

// fraction draws 0..hi with 4 decimals (taxes, discounts).
func fraction(rng *rand.Rand, hi float64) float64 {
	return float64(rng.IntN(int(hi*10000)+1)) / 10000
}
