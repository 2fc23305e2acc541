package rubis

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrInconsistent means the database breaks a population rule or a
// consistency condition.
var ErrInconsistent = errors.New("rubis: inconsistent database")

type check struct {
	name, sql string
	lo, hi    int64
}

func runChecks(ctx context.Context, conn *pgx.Conn, checks []check) error {
	var errs []error
	for _, c := range checks {
		var n int64
		if err := conn.QueryRow(ctx, c.sql).Scan(&n); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if n < c.lo || n > c.hi {
			errs = append(errs, fmt.Errorf("%w: %s: %d, want %d..%d", ErrInconsistent, c.name, n, c.lo, c.hi))
		}
	}
	return errors.Join(errs...)
}

// consistency are the conditions every run keeps: an item's nb_of_bids and
// max_bid agree with its bids, a user's rating is the sum of the comments
// about them.
var consistency = []check{
	{"items whose nb_of_bids differs from their bids", `SELECT count(*) FROM items WHERE nb_of_bids <> (SELECT count(*) FROM bids WHERE item_id = items.id)`, 0, 0},
	{"items whose max_bid differs from their highest bid", `SELECT count(*) FROM items WHERE max_bid <> coalesce((SELECT max(bid) FROM bids WHERE item_id = items.id), 0)`, 0, 0},
	{"users whose rating differs from their comments", `SELECT count(*) FROM users WHERE rating <> coalesce((SELECT sum(rating) FROM comments WHERE to_user_id = users.id), 0)`, 0, 0},
	{"items with a negative quantity", `SELECT count(*) FROM items WHERE quantity < 0`, 0, 0},
}

// CheckConsistency checks the conditions every run keeps (they hold after
// the load too).
func CheckConsistency(ctx context.Context, conn *pgx.Conn) error {
	return runChecks(ctx, conn, consistency)
}

// CheckPopulation checks a freshly loaded database at scale against the
// population rules (cardinalities and references), and the consistency
// conditions. Runs add rows, so the cardinalities hold before the first run
// only.
func CheckPopulation(ctx context.Context, conn *pgx.Conn, scale int) error {
	u, a, o := int64(users(scale)), int64(activeItems(scale)), int64(oldItems(scale))
	checks := []check{
		{"categories", "SELECT count(*) FROM categories", Categories, Categories},
		{"regions", "SELECT count(*) FROM regions", Regions, Regions},
		{"users", "SELECT count(*) FROM users", u, u},
		{"distinct nicknames", "SELECT count(DISTINCT nickname) FROM users", u, u},
		{"active items", "SELECT count(*) FROM items", a, a},
		{"old items", "SELECT count(*) FROM old_items", o, o},
		{"bids", "SELECT count(*) FROM bids", 0, (a + o) * MaxBidsPerItem},
		{"items with more than 20 bids", "SELECT count(*) FROM (SELECT item_id FROM bids GROUP BY item_id HAVING count(*) > 20) AS x", 0, 0},
		{"comments", "SELECT count(*) FROM comments", 0, u * MaxCommentsPerUser},
		{"buy_now rows", "SELECT count(*) FROM buy_now", 0, o},
		{"buy_now of items without a buy-now price", "SELECT count(*) FROM buy_now, old_items WHERE item_id = old_items.id AND old_items.buy_now = 0", 0, 0},
		{"unique items (quantity 1), per mille", "SELECT count(*) * 1000 / (SELECT count(*) FROM old_items) FROM old_items WHERE quantity = 1", 700, 900},
		{"items of unknown sellers or categories", "SELECT count(*) FROM items WHERE seller NOT IN (SELECT id FROM users) OR category NOT IN (SELECT id FROM categories)", 0, 0},
		{"bids of unknown users or items", "SELECT count(*) FROM bids WHERE user_id NOT IN (SELECT id FROM users) OR (item_id NOT IN (SELECT id FROM items) AND item_id NOT IN (SELECT id FROM old_items))", 0, 0},
		{"comments on unknown users or items", "SELECT count(*) FROM comments WHERE to_user_id NOT IN (SELECT id FROM users) OR from_user_id NOT IN (SELECT id FROM users) OR item_id NOT IN (SELECT id FROM old_items)", 0, 0},
		{"users of unknown regions", "SELECT count(*) FROM users WHERE region NOT IN (SELECT id FROM regions)", 0, 0},
		{"active items with ids below old ones", "SELECT count(*) FROM items WHERE id <= (SELECT max(id) FROM old_items)", 0, 0},
	}
	return runChecks(ctx, conn, append(checks, consistency...))
}
