// Package rubis is a RUBiS-like auction site (eBay-like), as seed 003
// section 6.1 runs it: RUBiS's schema (users, items and old_items, bids,
// comments, buy_now, categories, regions), its population, and the
// database transactions of its servlets in two mixes: browsing (read-only)
// and bidding (20 % updates, seed 003 table 4), with an exponential think
// time of 900 ms mean between interactions (`bench run --think` changes
// the mean; 0 runs closed-loop).
//
// Scale: units of 1,000 users, 10 active and 500 old items (seed 003's
// database, 1M users, 10,000 active and 500,000 old items, is scale 1,000).
// 20 categories and 62 regions. Every item, active or old, has 0..20 bids
// (items.nb_of_bids and items.max_bid agree with them), every user 0..4
// comments about them (users.rating is their sum), 10 % of the old items
// were bought outright (a buy_now row each). As in RUBiS, 80 % of the items
// are unique (quantity 1), 40 % have a reserve price and 10 % a buy-now price.
//
// The mixes: RUBiS defines them as Markov chains over its web pages; here
// each interaction that reaches the database is one transaction type, drawn
// with a fixed weight (the write share is seed 003's), and a client is one
// browser that authenticates as a random user where a page asks for it.
// StoreBuyNow buys the first item in stock from a random active one on
// (RegisterItem keeps adding supply); only when every item is sold out does
// it roll back (counted as rolled back, as TPC-C's invalid items are).
//
// It owns the workload's SQL and random value rules only. The SQL is
// PostgreSQL's and runs unchanged on PostgreSQL and through tandem on both
// back ends; where it differs (moving serial sequences past the loaded ids)
// it goes through bench.Dialect.
package rubis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
)

// Name is the --workload value.
const Name = "rubis"

// Population per unit of scale, and fixed sizes.
const (
	UsersPerScale       = 1000
	ActiveItemsPerScale = 10
	OldItemsPerScale    = 500
	Categories          = 20
	Regions             = 62
	MaxBidsPerItem      = 20
	MaxCommentsPerUser  = 4
)

// The transaction types: eleven reads, then five writes.
const (
	BrowseCategories bench.TxType = iota
	BrowseRegions
	SearchItemsByCategory
	SearchItemsByRegion
	ViewItem
	ViewUserInfo
	ViewBidHistory
	PutBid
	BuyNow
	PutComment
	AboutMe
	StoreBid
	StoreBuyNow
	StoreComment
	RegisterItem
	RegisterUser
	numTx
)

var transactions = []bench.TxInfo{
	BrowseCategories:      {Name: "BrowseCategories", ReadOnly: true},
	BrowseRegions:         {Name: "BrowseRegions", ReadOnly: true},
	SearchItemsByCategory: {Name: "SearchItemsByCategory", ReadOnly: true},
	SearchItemsByRegion:   {Name: "SearchItemsByRegion", ReadOnly: true},
	ViewItem:              {Name: "ViewItem", ReadOnly: true},
	ViewUserInfo:          {Name: "ViewUserInfo", ReadOnly: true},
	ViewBidHistory:        {Name: "ViewBidHistory", ReadOnly: true},
	PutBid:                {Name: "PutBid", ReadOnly: true},
	BuyNow:                {Name: "BuyNow", ReadOnly: true},
	PutComment:            {Name: "PutComment", ReadOnly: true},
	AboutMe:               {Name: "AboutMe", ReadOnly: true},
	StoreBid:              {Name: "StoreBid"},
	StoreBuyNow:           {Name: "StoreBuyNow"},
	StoreComment:          {Name: "StoreComment"},
	RegisterItem:          {Name: "RegisterItem"},
	RegisterUser:          {Name: "RegisterUser"},
}

var mixes = []bench.Mix{
	{Name: "bidding", Description: "RUBiS's bidding mix: 80 % reads, 20 % writes (seed 003 table 4)",
		Weights: []float64{10, 4, 16, 6, 16, 6, 5, 8, 3, 2, 4, 10, 3, 3, 2, 2}},
	{Name: "browsing", Description: "RUBiS's browsing mix: read-only (browse, search, view)",
		Weights: []float64{15, 5, 25, 10, 25, 10, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
}

// Workload is RUBiS. The zero value is ready to use.
type Workload struct{}

// New returns the RUBiS workload.
func New() *Workload { return &Workload{} }

func init() { bench.Register(New()) }

// Name implements bench.Workload.
func (*Workload) Name() string { return Name }

// ScaleName implements bench.Workload: units of 1,000 users, 10 active and
// 500 old items.
func (*Workload) ScaleName() string { return "scale" }

// Transactions implements bench.Workload.
func (*Workload) Transactions() []bench.TxInfo { return append([]bench.TxInfo(nil), transactions...) }

// Mixes implements bench.Workload; bidding is the default.
func (*Workload) Mixes() []bench.Mix {
	out := make([]bench.Mix, len(mixes))
	for i, m := range mixes {
		m.Weights = append([]float64(nil), m.Weights...)
		out[i] = m
	}
	return out
}

// DefaultClients implements bench.ClientsAdvisor: seed 003 table 4's 50
// clients per replica for both mixes.
func (*Workload) DefaultClients(string) int { return 50 }

// DefaultThink implements bench.ThinkTimer: seed 003's 900 ms mean.
func (*Workload) DefaultThink() time.Duration { return 900 * time.Millisecond }

var tables = []string{"categories", "regions", "users", "items", "old_items", "bids", "comments", "buy_now"}

const itemColumnsDDL = `(
  id SERIAL PRIMARY KEY, name VARCHAR(100) NOT NULL, description VARCHAR(1000),
  initial_price NUMERIC(10,2) NOT NULL, quantity INTEGER NOT NULL, reserve_price NUMERIC(10,2) NOT NULL,
  buy_now NUMERIC(10,2) NOT NULL, nb_of_bids INTEGER NOT NULL, max_bid NUMERIC(10,2) NOT NULL,
  start_date TIMESTAMP NOT NULL, end_date TIMESTAMP NOT NULL, seller INTEGER NOT NULL, category INTEGER NOT NULL)`

var schema = []string{
	`CREATE TABLE categories (id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(50) NOT NULL)`,
	`CREATE TABLE regions (id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(25) NOT NULL)`,
	`CREATE TABLE users (
  id SERIAL PRIMARY KEY, firstname VARCHAR(20) NOT NULL, lastname VARCHAR(20) NOT NULL,
  nickname VARCHAR(20) NOT NULL UNIQUE, password VARCHAR(20) NOT NULL, email VARCHAR(50) NOT NULL,
  rating INTEGER NOT NULL, balance NUMERIC(10,2) NOT NULL, creation_date TIMESTAMP NOT NULL, region INTEGER NOT NULL);
CREATE INDEX idx_users_auth ON users (nickname, password);
CREATE INDEX idx_users_region ON users (region)`,
	`CREATE TABLE items ` + itemColumnsDDL + `;
CREATE INDEX idx_items_seller ON items (seller);
CREATE INDEX idx_items_category ON items (category, end_date)`,
	`CREATE TABLE old_items ` + itemColumnsDDL + `;
CREATE INDEX idx_old_items_seller ON old_items (seller);
CREATE INDEX idx_old_items_category ON old_items (category)`,
	`CREATE TABLE bids (
  id SERIAL PRIMARY KEY, user_id INTEGER NOT NULL, item_id INTEGER NOT NULL, qty INTEGER NOT NULL,
  bid NUMERIC(10,2) NOT NULL, max_bid NUMERIC(10,2) NOT NULL, date TIMESTAMP NOT NULL);
CREATE INDEX idx_bids_item ON bids (item_id);
CREATE INDEX idx_bids_user ON bids (user_id)`,
	`CREATE TABLE comments (
  id SERIAL PRIMARY KEY, from_user_id INTEGER NOT NULL, to_user_id INTEGER NOT NULL, item_id INTEGER NOT NULL,
  rating INTEGER NOT NULL, date TIMESTAMP NOT NULL, comment VARCHAR(2048) NOT NULL);
CREATE INDEX idx_comments_from ON comments (from_user_id);
CREATE INDEX idx_comments_to ON comments (to_user_id);
CREATE INDEX idx_comments_item ON comments (item_id)`,
	`CREATE TABLE buy_now (
  id SERIAL PRIMARY KEY, buyer_id INTEGER NOT NULL, item_id INTEGER NOT NULL, qty INTEGER NOT NULL, date TIMESTAMP NOT NULL);
CREATE INDEX idx_buy_now_buyer ON buy_now (buyer_id);
CREATE INDEX idx_buy_now_item ON buy_now (item_id)`,
}

// Tables implements bench.Workload.
func (*Workload) Tables() []string { return append([]string(nil), tables...) }

// Schema implements bench.Workload: RUBiS's tables and indexes; ids of rows
// the transactions create are serial.
func (*Workload) Schema() []string { return append([]string(nil), schema...) }

var serials = [][2]string{{"users", "id"}, {"items", "id"}, {"bids", "id"}, {"comments", "id"}, {"buy_now", "id"}}

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

// DetectScale implements bench.Workload: old items / 500 (runs add users
// and items but never old items).
func (*Workload) DetectScale(ctx context.Context, conn *pgx.Conn) (int, error) {
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM old_items").Scan(&n); err != nil {
		return 0, fmt.Errorf("count old items: %w", err)
	}
	return int(n / OldItemsPerScale), nil
}

// Ids: old items are 1..O, active items O+1..O+A (so items registered
// during runs, O+A+1 on, collide with neither), users 1..U.
func activeItems(scale int) int { return ActiveItemsPerScale * scale }
func oldItems(scale int) int    { return OldItemsPerScale * scale }
func users(scale int) int       { return UsersPerScale * scale }

// Nickname and Password are RUBiS's: user1 / password1.
func Nickname(id int) string { return fmt.Sprintf("user%d", id) }

// Password of user id.
func Password(id int) string { return fmt.Sprintf("password%d", id) }

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

func aString(rng *rand.Rand, lo, hi int) string {
	b := make([]byte, lo+rng.IntN(hi-lo+1))
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

// loadDay is the population's "now"; loaded dates lie around it.
var loadDay = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func stamp(t time.Time) string { return t.Format("2006-01-02 15:04:05") }

// Ratings a comment may give (RUBiS's -5, -3, 0, 3, 5).
var ratings = []int{-5, -3, 0, 3, 5}
