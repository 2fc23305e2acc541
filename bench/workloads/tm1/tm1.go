// Package tm1 is the TM1 (TATP) telecom workload of seed 000, implemented
// after the reference TATP kit as written down in shared/specs/tm1.md: the
// Home Location Register schema, its population rules, the seven
// transactions with their key distributions, the R80W20, R20W80 and
// read-only mixes, and the reference client's outcome rules.
//
// It owns the workload's SQL and random value rules only; the driver,
// statistics and reports are package bench's. All SQL is portable: it runs
// unchanged on PostgreSQL and on SQLite behind tandem ($n parameters, plain
// CREATE TABLE with PRIMARY KEY, UNIQUE and FOREIGN KEY).
//
// msc_location and vlr_location are 1..2^32-1 in the reference but stored
// here in a 32-bit signed INTEGER: tandem draws them from 1..2^31-1 (no
// wrapping), both in the population and in UPDATE_LOCATION.
package tm1

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
)

// Name is the --workload value.
const Name = "tm1"

// The seven transaction types, in the spec's order.
const (
	GetSubscriberData bench.TxType = iota
	GetNewDestination
	GetAccessData
	UpdateSubscriberData
	UpdateLocation
	InsertCallForwarding
	DeleteCallForwarding
	numTx
)

var transactions = []bench.TxInfo{
	GetSubscriberData:    {Name: "GET_SUBSCRIBER_DATA", ReadOnly: true},
	GetNewDestination:    {Name: "GET_NEW_DESTINATION", ReadOnly: true},
	GetAccessData:        {Name: "GET_ACCESS_DATA", ReadOnly: true},
	UpdateSubscriberData: {Name: "UPDATE_SUBSCRIBER_DATA"},
	UpdateLocation:       {Name: "UPDATE_LOCATION"},
	InsertCallForwarding: {Name: "INSERT_CALL_FORWARDING"},
	DeleteCallForwarding: {Name: "DELETE_CALL_FORWARDING"},
}

// Mixes in percent of started transactions (spec table "Mixes").
var mixes = []bench.Mix{
	{Name: "r80w20", Description: "standard: 80% read transactions", Weights: []float64{35, 10, 35, 2, 14, 2, 2}},
	{Name: "r20w80", Description: "seed 000's write-intensive mix: 80% write transactions", Weights: []float64{9, 2, 9, 8, 56, 8, 8}},
	{Name: "read-only", Description: "read transactions only", Weights: []float64{33, 33, 34, 0, 0, 0, 0}},
}

// Tables in creation order.
var tables = []string{"subscriber", "access_info", "special_facility", "call_forwarding"}

var schema = []string{
	`CREATE TABLE subscriber (
  s_id INTEGER NOT NULL PRIMARY KEY,
  sub_nbr VARCHAR(15) NOT NULL UNIQUE,
  bit_1 SMALLINT, bit_2 SMALLINT, bit_3 SMALLINT, bit_4 SMALLINT, bit_5 SMALLINT,
  bit_6 SMALLINT, bit_7 SMALLINT, bit_8 SMALLINT, bit_9 SMALLINT, bit_10 SMALLINT,
  hex_1 SMALLINT, hex_2 SMALLINT, hex_3 SMALLINT, hex_4 SMALLINT, hex_5 SMALLINT,
  hex_6 SMALLINT, hex_7 SMALLINT, hex_8 SMALLINT, hex_9 SMALLINT, hex_10 SMALLINT,
  byte2_1 SMALLINT, byte2_2 SMALLINT, byte2_3 SMALLINT, byte2_4 SMALLINT, byte2_5 SMALLINT,
  byte2_6 SMALLINT, byte2_7 SMALLINT, byte2_8 SMALLINT, byte2_9 SMALLINT, byte2_10 SMALLINT,
  msc_location INTEGER, vlr_location INTEGER)`,
	`CREATE TABLE access_info (
  s_id INTEGER NOT NULL, ai_type SMALLINT NOT NULL,
  data1 SMALLINT, data2 SMALLINT, data3 CHAR(3), data4 CHAR(5),
  PRIMARY KEY (s_id, ai_type), FOREIGN KEY (s_id) REFERENCES subscriber (s_id))`,
	`CREATE TABLE special_facility (
  s_id INTEGER NOT NULL, sf_type SMALLINT NOT NULL, is_active SMALLINT NOT NULL,
  error_cntrl SMALLINT, data_a SMALLINT, data_b CHAR(5),
  PRIMARY KEY (s_id, sf_type), FOREIGN KEY (s_id) REFERENCES subscriber (s_id))`,
	`CREATE TABLE call_forwarding (
  s_id INTEGER NOT NULL, sf_type SMALLINT NOT NULL, start_time SMALLINT NOT NULL,
  end_time SMALLINT, numberx VARCHAR(15),
  PRIMARY KEY (s_id, sf_type, start_time),
  FOREIGN KEY (s_id, sf_type) REFERENCES special_facility (s_id, sf_type))`,
}

// Workload is TM1. The zero value is ready to use.
type Workload struct{}

// New returns the TM1 workload.
func New() *Workload { return &Workload{} }

func init() { bench.Register(New()) }

// Name implements bench.Workload.
func (*Workload) Name() string { return Name }

// ScaleName implements bench.Workload: TM1 scales by subscribers (P).
func (*Workload) ScaleName() string { return "subscribers" }

// Transactions implements bench.Workload.
func (*Workload) Transactions() []bench.TxInfo { return append([]bench.TxInfo(nil), transactions...) }

// Mixes implements bench.Workload; r80w20 is the default.
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

// Schema implements bench.Workload.
func (*Workload) Schema() []string { return append([]string(nil), schema...) }

// DetectScale implements bench.Workload: P is the number of subscribers.
func (*Workload) DetectScale(ctx context.Context, conn *pgx.Conn) (int, error) {
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM subscriber").Scan(&n); err != nil {
		return 0, fmt.Errorf("count subscribers: %w", err)
	}
	return int(n), nil
}

// A returns the NURand constant for P subscribers: 65535 up to 1,000,000,
// 1048575 up to 10,000,000, 2097151 above.
func A(p int) int {
	switch {
	case p <= 1_000_000:
		return 65535
	case p <= 10_000_000:
		return 1048575
	default:
		return 2097151
	}
}

// randInt returns a uniform integer in [lo, hi].
func randInt(rng *rand.Rand, lo, hi int) int { return lo + rng.IntN(hi-lo+1) }

// NURand is the spec's non-uniform random number in [x, y]:
// ((rand(0, a) | rand(x, y)) % (y - x + 1)) + x. With x = 1, y = P it is
// ((rand(0, A) | rand(1, P)) % P) + 1.
func NURand(rng *rand.Rand, a, x, y int) int {
	return ((randInt(rng, 0, a) | randInt(rng, x, y)) % (y - x + 1)) + x
}

// Keys draws transaction arguments after the spec's rules.
type Keys struct {
	rng     *rand.Rand
	p, a    int
	uniform bool
}

// NewKeys returns a key generator for P subscribers; uniform replaces NURand
// by a uniform s_id.
func NewKeys(rng *rand.Rand, p int, uniform bool) *Keys {
	return &Keys{rng: rng, p: p, a: A(p), uniform: uniform}
}

// SID draws a subscriber id: NURand(A, 1, P), or uniform in 1..P.
func (k *Keys) SID() int {
	if k.uniform {
		return 1 + k.rng.IntN(k.p)
	}
	return NURand(k.rng, k.a, 1, k.p)
}

// Type draws an sf_type or ai_type: 1..4.
func (k *Keys) Type() int { return 1 + k.rng.IntN(4) }

// StartTime draws one of 0, 8, 16.
func (k *Keys) StartTime() int { return 8 * k.rng.IntN(3) }

// EndTimeArg is GET_NEW_DESTINATION's end_time argument: rand(0,2)*8 + rand(1,8).
func (k *Keys) EndTimeArg() int { return 8*k.rng.IntN(3) + 1 + k.rng.IntN(8) }

// Bit draws 0..1.
func (k *Keys) Bit() int { return k.rng.IntN(2) }

// Byte draws 0..255 (data_a).
func (k *Keys) Byte() int { return k.rng.IntN(256) }

// Location draws an msc/vlr location: 1..2^31-1 (see the package comment).
func (k *Keys) Location() int { return Location(k.rng) }

// Location draws 1..2^31-1: the reference's 1..2^32-1 limited to what a
// 32-bit signed INTEGER holds.
func Location(rng *rand.Rand) int { return 1 + rng.IntN(1<<31-1) }

// SubNbr formats s_id as the spec's sub_nbr: decimal, zero-padded to 15
// characters.
func SubNbr(sid int) string {
	var b [15]byte
	return string(appendSubNbr(b[:0], sid))
}

func appendSubNbr(b []byte, sid int) []byte {
	var d [20]byte
	i := len(d)
	for v := sid; v > 0 || i == len(d); v /= 10 {
		i--
		d[i] = byte('0' + v%10)
	}
	for n := len(d) - i; n < 15; n++ {
		b = append(b, '0')
	}
	return append(b, d[i:]...)
}

// Digits returns n random decimal digits (numberx).
func Digits(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + rng.IntN(10))
	}
	return string(b)
}

// Letters returns n random letters 'A'..'Z' (data3, data4, data_b).
func Letters(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('A' + rng.IntN(26))
	}
	return string(b)
}
