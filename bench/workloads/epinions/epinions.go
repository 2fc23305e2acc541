// Package epinions is the Epinions.com review-site workload of OLTPBenchmark
// (today's BenchBase), as seed 001 section 3.3.4 runs it: users, items,
// reviews and a user-to-user trust graph, nine transactions with seed 001
// table 3.1's weights (five reads at 16 % each, four single-row updates at
// 5 % each: 80 % reads).
//
// Population after BenchBase's loader: 2,000 users and 1,000 items per unit
// of scale; each item gets Zipfian(500, 1.8) reviews (at least one) from
// distinct users drawn Zipfian over the users; each user trusts
// Zipfian(200, 1.95) distinct users drawn from a scrambled Zipfian (so the
// trusted are not the heavy reviewers), trust 0 or 1. Ids start at 0.
// Transactions draw users and items uniformly, as BenchBase's worker does. An
// update that finds no row (UpdateReviewRating, UpdateTrustRating on a pair
// that does not exist) commits and counts, as in BenchBase; the hit rate tells
// those apart.
//
// It owns the workload's SQL and random value rules only. The SQL is standard
// PostgreSQL; it runs unchanged on PostgreSQL and through tandem on both back
// ends.
package epinions

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
)

// Name is the --workload value.
const Name = "epinions"

// Per unit of scale, and the population's Zipfian bounds (BenchBase's
// EpinionsConstants).
const (
	UsersPerScale = 2000
	ItemsPerScale = 1000
	MaxReviews    = 500 // reviews per item: Zipfian(500, 1.8)
	MaxTrust      = 200 // trusted users per user: Zipfian(200, 1.95)
	nameLength    = 24
	titleLength   = 128
)

// The nine transaction types, in seed 001 table 3.1's order.
const (
	GetReviewItemByID bench.TxType = iota
	GetReviewsByUser
	GetAverageRatingByTrustedUser
	GetItemAverageRating
	GetItemReviewsByTrustedUser
	UpdateUserName
	UpdateItemTitle
	UpdateReviewRating
	UpdateTrustRating
)

var transactions = []bench.TxInfo{
	GetReviewItemByID:             {Name: "GetReviewItemById", ReadOnly: true},
	GetReviewsByUser:              {Name: "GetReviewsByUser", ReadOnly: true},
	GetAverageRatingByTrustedUser: {Name: "GetAverageRatingByTrustedUser", ReadOnly: true},
	GetItemAverageRating:          {Name: "GetItemAverageRating", ReadOnly: true},
	GetItemReviewsByTrustedUser:   {Name: "GetItemReviewsByTrustedUser", ReadOnly: true},
	UpdateUserName:                {Name: "UpdateUserName"},
	UpdateItemTitle:               {Name: "UpdateItemTitle"},
	UpdateReviewRating:            {Name: "UpdateReviewRating"},
	UpdateTrustRating:             {Name: "UpdateTrustRating"},
}

var mixes = []bench.Mix{
	{Name: "seed001", Description: "seed 001 table 3.1: five reads 16 % each, four updates 5 % each (80 % reads)", Weights: []float64{16, 16, 16, 16, 16, 5, 5, 5, 5}},
	{Name: "benchbase", Description: "BenchBase's sample configuration: every type 11.1 %", Weights: []float64{1, 1, 1, 1, 1, 1, 1, 1, 1}},
}

var tables = []string{"useracct", "item", "review", "review_rating", "trust"}

var schema = []string{
	`CREATE TABLE useracct (
  u_id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(128) NOT NULL,
  email VARCHAR(128), creation_date TIMESTAMP)`,
	`CREATE TABLE item (
  i_id INTEGER NOT NULL PRIMARY KEY, title VARCHAR(128) NOT NULL,
  description VARCHAR(512), creation_date TIMESTAMP)`,
	`CREATE TABLE review (
  a_id INTEGER NOT NULL, u_id INTEGER NOT NULL, i_id INTEGER NOT NULL,
  rating INTEGER, rank INTEGER, comment VARCHAR(256), creation_date TIMESTAMP);
CREATE INDEX idx_review_aid ON review (a_id);
CREATE INDEX idx_review_uid ON review (u_id);
CREATE INDEX idx_review_iid ON review (i_id)`,
	`CREATE TABLE review_rating (
  u_id INTEGER NOT NULL, a_id INTEGER NOT NULL, rating INTEGER NOT NULL,
  status INTEGER NOT NULL, creation_date TIMESTAMP, last_mod_date TIMESTAMP,
  type INTEGER, vertical_id INTEGER)`,
	`CREATE TABLE trust (
  source_u_id INTEGER NOT NULL, target_u_id INTEGER NOT NULL, trust INTEGER NOT NULL,
  creation_date TIMESTAMP);
CREATE INDEX idx_trust_sid ON trust (source_u_id);
CREATE INDEX idx_trust_tid ON trust (target_u_id)`,
}

// Workload is Epinions. The zero value is ready to use.
type Workload struct{}

// New returns the Epinions workload.
func New() *Workload { return &Workload{} }

func init() { bench.Register(New()) }

// Name implements bench.Workload.
func (*Workload) Name() string { return Name }

// ScaleName implements bench.Workload: BenchBase's scale factor (2,000 users
// and 1,000 items each).
func (*Workload) ScaleName() string { return "scale" }

// Transactions implements bench.Workload.
func (*Workload) Transactions() []bench.TxInfo { return append([]bench.TxInfo(nil), transactions...) }

// Mixes implements bench.Workload; seed001 is the default.
func (*Workload) Mixes() []bench.Mix {
	out := make([]bench.Mix, len(mixes))
	for i, m := range mixes {
		m.Weights = append([]float64(nil), m.Weights...)
		out[i] = m
	}
	return out
}

// Tables implements bench.Workload.
func (*Workload) Tables() []string { return append([]string(nil), tables...) }

// Schema implements bench.Workload; review and trust come with BenchBase's
// indexes.
func (*Workload) Schema() []string { return append([]string(nil), schema...) }

// DetectScale implements bench.Workload: users / 2,000.
func (*Workload) DetectScale(ctx context.Context, conn *pgx.Conn) (int, error) {
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM useracct").Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return int(n / UsersPerScale), nil
}

// Zipf draws from 0..n-1 with YCSB's Zipfian generator (Gray et al.,
// "Quickly generating billion-record synthetic databases"), which BenchBase
// uses: 0 is the most popular value.
type Zipf struct {
	n                  int
	theta, alpha, eta  float64
	zetan, half2theta1 float64
}

// NewZipf returns a Zipfian generator over 0..n-1 with constant theta
// (YCSB's default is 0.99; BenchBase's Epinions loader also uses 1.8 and 1.95).
func NewZipf(n int, theta float64) *Zipf {
	zeta := func(k int) float64 {
		var s float64
		for i := 1; i <= k; i++ {
			s += 1 / math.Pow(float64(i), theta)
		}
		return s
	}
	z := &Zipf{n: n, theta: theta, alpha: 1 / (1 - theta), zetan: zeta(n)}
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta(2)/z.zetan)
	z.half2theta1 = 1 + math.Pow(0.5, theta)
	return z
}

// Next draws one value.
func (z *Zipf) Next(rng *rand.Rand) int {
	u := rng.Float64()
	uz := u * z.zetan
	switch {
	case uz < 1:
		return 0
	case uz < z.half2theta1:
		return 1
	}
	v := int(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return max(0, min(z.n-1, v))
}

// scrambled maps a Zipfian draw through FNV-1a so that popular values are
// spread over 0..n-1 (YCSB's scrambled Zipfian, hashed into n directly).
func scrambled(v, n int) int {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(uint64(v) >> (8 * i))
	}
	_, _ = h.Write(b[:])
	return int(h.Sum64() % uint64(n))
}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

func randomString(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}
