package rubis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
)

// Statements, after RUBiS's servlets, in PostgreSQL's SQL with $n parameters.
const (
	stCategories = iota
	stRegions
	stItemsInCategory
	stItemsInRegion
	stItem
	stOldItem
	stNickname
	stMaxBid
	stBidCount
	stUser
	stCommentsAbout
	stItemName
	stBidHistory
	stAuth
	stBidsOfUser
	stItemsSold
	stOldItemsSold
	stBoughtBy
	stItemForBid
	stInsertBid
	stUpdateItemBid
	stInStockFrom
	stInStock
	stTakeQuantity
	stInsertBuyNow
	stInsertComment
	stUpdateRating
	stInsertItem
	stNicknameTaken
	stInsertUser
	numStatements
)

const itemCols = `id, name, description, initial_price, quantity, reserve_price, buy_now, nb_of_bids, max_bid, start_date, end_date, seller, category`

var statements = [numStatements]string{
	stCategories:      `SELECT id, name FROM categories ORDER BY id`,
	stRegions:         `SELECT id, name FROM regions ORDER BY id`,
	stItemsInCategory: `SELECT id, name, initial_price, max_bid, nb_of_bids, end_date FROM items WHERE category = $1 ORDER BY end_date, id LIMIT 25`,
	stItemsInRegion: `SELECT items.id, items.name, initial_price, max_bid, nb_of_bids, end_date FROM items, users ` +
		`WHERE items.category = $1 AND items.seller = users.id AND users.region = $2 ORDER BY end_date, items.id LIMIT 25`,
	stItem:          `SELECT ` + itemCols + ` FROM items WHERE id = $1`,
	stOldItem:       `SELECT ` + itemCols + ` FROM old_items WHERE id = $1`,
	stNickname:      `SELECT nickname FROM users WHERE id = $1`,
	stMaxBid:        `SELECT max(bid) FROM bids WHERE item_id = $1`,
	stBidCount:      `SELECT count(*) FROM bids WHERE item_id = $1`,
	stUser:          `SELECT firstname, lastname, nickname, email, rating, balance, creation_date, region FROM users WHERE id = $1`,
	stCommentsAbout: `SELECT comments.id, from_user_id, item_id, comments.rating, date, comment, nickname FROM comments, users WHERE to_user_id = $1 AND from_user_id = users.id`,
	stItemName:      `SELECT name FROM items WHERE id = $1`,
	stBidHistory:    `SELECT bids.user_id, bids.bid, bids.date, users.nickname FROM bids, users WHERE item_id = $1 AND bids.user_id = users.id ORDER BY bids.date DESC, bids.id DESC`,
	stAuth:          `SELECT id FROM users WHERE nickname = $1 AND password = $2`,
	stBidsOfUser: `SELECT bids.item_id, bids.bid, bids.max_bid, items.name, items.end_date FROM bids, items ` +
		`WHERE bids.user_id = $1 AND bids.item_id = items.id ORDER BY bids.date DESC LIMIT 50`,
	stItemsSold:     `SELECT ` + itemCols + ` FROM items WHERE seller = $1`,
	stOldItemsSold:  `SELECT ` + itemCols + ` FROM old_items WHERE seller = $1`,
	stBoughtBy:      `SELECT buy_now.item_id, buy_now.qty, buy_now.date, old_items.name FROM buy_now, old_items WHERE buyer_id = $1 AND buy_now.item_id = old_items.id`,
	stItemForBid:    `SELECT initial_price, max_bid, nb_of_bids FROM items WHERE id = $1 FOR UPDATE`,
	stInsertBid:     `INSERT INTO bids (user_id, item_id, qty, bid, max_bid, date) VALUES ($1, $2, $3, $4, $5, current_timestamp)`,
	stUpdateItemBid: `UPDATE items SET max_bid = $1, nb_of_bids = nb_of_bids + 1 WHERE id = $2`,
	stInStockFrom:   `SELECT id FROM items WHERE id >= $1 AND quantity > 0 ORDER BY id LIMIT 1 FOR UPDATE`,
	stInStock:       `SELECT id FROM items WHERE quantity > 0 ORDER BY id LIMIT 1 FOR UPDATE`,
	stTakeQuantity:  `UPDATE items SET quantity = quantity - $1 WHERE id = $2 AND quantity >= $1`,
	stInsertBuyNow:  `INSERT INTO buy_now (buyer_id, item_id, qty, date) VALUES ($1, $2, $3, current_timestamp)`,
	stInsertComment: `INSERT INTO comments (from_user_id, to_user_id, item_id, rating, date, comment) VALUES ($1, $2, $3, $4, current_timestamp, $5)`,
	stUpdateRating:  `UPDATE users SET rating = rating + $1 WHERE id = $2`,
	stInsertItem: `INSERT INTO items (name, description, initial_price, quantity, reserve_price, buy_now, nb_of_bids, max_bid, start_date, end_date, seller, category) ` +
		`VALUES ($1, $2, $3, $4, $5, $6, 0, 0, current_timestamp, current_timestamp + interval '7 days', $7, $8)`,
	stNicknameTaken: `SELECT id FROM users WHERE nickname = $1`,
	stInsertUser: `INSERT INTO users (firstname, lastname, nickname, password, email, rating, balance, creation_date, region) ` +
		`VALUES ($1, $2, $3, $4, $5, 0, 0, current_timestamp, $6) RETURNING id`,
}

// errCommitRolledBack: COMMIT answered ROLLBACK (the transaction had failed).
var errCommitRolledBack = errors.New("rubis: COMMIT answered ROLLBACK")

// errSoldOut marks a StoreBuyNow of an item with too little left: rolled back.
var errSoldOut = errors.New("rubis: sold out")

type client struct {
	conn           *pgx.Conn
	rng            *rand.Rand
	users, old, ac int
	q              [numStatements]string
	noRows         bool
}

// NewClient implements bench.Workload.
func (*Workload) NewClient(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, p bench.ClientParams) (bench.Client, error) {
	if p.Scale <= 0 {
		return nil, fmt.Errorf("rubis: %w: scale must be > 0 (got %d)", bench.ErrBadOption, p.Scale)
	}
	c := &client{conn: conn, rng: rng, users: users(p.Scale), old: oldItems(p.Scale), ac: activeItems(p.Scale)}
	for i, sql := range statements {
		if p.Simple {
			c.q[i] = sql
			continue
		}
		name := fmt.Sprintf("rubis_%d", i)
		if _, err := conn.Prepare(ctx, name, sql); err != nil {
			return nil, fmt.Errorf("rubis: prepare %s (%s): %w", name, sql, err)
		}
		c.q[i] = name
	}
	return c, nil
}

func (c *client) user() int       { return 1 + c.rng.IntN(c.users) }
func (c *client) activeItem() int { return c.old + 1 + c.rng.IntN(c.ac) }
func (c *client) oldItem() int    { return 1 + c.rng.IntN(c.old) }
func (c *client) category() int   { return 1 + c.rng.IntN(Categories) }

// Run implements bench.Client: one interaction, one transaction (READ ONLY
// for the reads).
func (c *client) Run(ctx context.Context, t bench.TxType) (bench.Outcome, error) {
	if t < 0 || t >= numTx {
		return bench.Failed, fmt.Errorf("rubis: unknown transaction type %d", t)
	}
	c.noRows = false
	begin := "BEGIN"
	if transactions[t].ReadOnly {
		begin = "BEGIN READ ONLY"
	}
	var err error
	if _, err = c.conn.Exec(ctx, begin); err == nil {
		err = c.interaction(ctx, t)
	}
	if errors.Is(err, errSoldOut) {
		if _, err := c.conn.Exec(ctx, "ROLLBACK"); err != nil {
			return bench.Classify(err), err
		}
		return bench.RolledBack, nil
	}
	if err != nil {
		if !c.conn.IsClosed() {
			_, _ = c.conn.Exec(ctx, "ROLLBACK")
		}
		return bench.Classify(err), err
	}
	tag, err := c.conn.Exec(ctx, "COMMIT")
	if err != nil {
		return bench.Classify(err), err
	}
	if tag.String() == "ROLLBACK" {
		return bench.Failed, errCommitRolledBack
	}
	if c.noRows {
		return bench.CountedNoRows, nil
	}
	return bench.Counted, nil
}

func (c *client) interaction(ctx context.Context, t bench.TxType) error {
	switch t {
	case BrowseCategories:
		return c.scanRows(ctx, stCategories)
	case BrowseRegions:
		return c.scanRows(ctx, stRegions)
	case SearchItemsByCategory:
		return c.scanRows(ctx, stItemsInCategory, c.category())
	case SearchItemsByRegion:
		return c.scanRows(ctx, stItemsInRegion, c.category(), 1+c.rng.IntN(Regions))
	case ViewItem:
		return c.viewItem(ctx)
	case ViewUserInfo:
		u := c.user()
		if err := c.scanRows(ctx, stUser, u); err != nil {
			return err
		}
		_, err := c.count(ctx, stCommentsAbout, u)
		return err
	case ViewBidHistory:
		i := c.activeItem()
		if err := c.scanRows(ctx, stItemName, i); err != nil {
			return err
		}
		_, err := c.count(ctx, stBidHistory, i)
		return err
	case PutBid:
		if _, err := c.auth(ctx); err != nil {
			return err
		}
		i := c.activeItem()
		if err := c.scanRows(ctx, stItem, i); err != nil {
			return err
		}
		if _, err := c.count(ctx, stMaxBid, i); err != nil {
			return err
		}
		_, err := c.count(ctx, stBidCount, i)
		return err
	case BuyNow, PutComment:
		if _, err := c.auth(ctx); err != nil {
			return err
		}
		i := c.activeItem()
		if err := c.scanRows(ctx, stItem, i); err != nil {
			return err
		}
		return c.scanRows(ctx, stNickname, c.user())
	case AboutMe:
		u, err := c.auth(ctx)
		if err != nil {
			return err
		}
		for _, st := range []int{stUser, stBidsOfUser, stItemsSold, stOldItemsSold, stBoughtBy, stCommentsAbout} {
			if _, err := c.count(ctx, st, u); err != nil {
				return err
			}
		}
		return nil
	case StoreBid:
		return c.storeBid(ctx)
	case StoreBuyNow:
		return c.storeBuyNow(ctx)
	case StoreComment:
		return c.storeComment(ctx)
	case RegisterItem:
		price := float64(1+c.rng.IntN(5000)) / 10
		_, err := c.conn.Exec(ctx, c.q[stInsertItem], "RUBiS item "+aString(c.rng, 5, 40), aString(c.rng, 50, 500), price,
			1+c.rng.IntN(10), 0.0, price*2, c.user(), c.category())
		return err
	case RegisterUser:
		return c.registerUser(ctx)
	}
	return fmt.Errorf("rubis: unknown transaction type %d", t)
}

// viewItem shows an active item (90 %) or an old one, its seller and its
// highest bid.
func (c *client) viewItem(ctx context.Context) error {
	st, i := stItem, c.activeItem()
	if c.rng.IntN(10) == 0 {
		st, i = stOldItem, c.oldItem()
	}
	var seller int
	vals := make([]any, 13)
	ptrs := make([]any, 13)
	for k := range vals {
		ptrs[k] = &vals[k]
	}
	ptrs[11] = &seller
	if err := c.conn.QueryRow(ctx, c.q[st], i).Scan(ptrs...); err != nil {
		return fmt.Errorf("item %d: %w", i, err)
	}
	if err := c.scanRows(ctx, stNickname, seller); err != nil {
		return err
	}
	_, err := c.count(ctx, stMaxBid, i)
	return err
}

// auth logs a random user in by nickname and password.
func (c *client) auth(ctx context.Context) (int, error) {
	u := c.user()
	var id int
	if err := c.conn.QueryRow(ctx, c.q[stAuth], Nickname(u), Password(u)).Scan(&id); err != nil {
		return 0, fmt.Errorf("authenticate %s: %w", Nickname(u), err)
	}
	return id, nil
}

// storeBid bids on an active item above its current highest bid and keeps
// items.max_bid and nb_of_bids in step.
func (c *client) storeBid(ctx context.Context) error {
	i := c.activeItem()
	var initial, maxBid float64
	var n int
	if err := c.conn.QueryRow(ctx, c.q[stItemForBid], i).Scan(&initial, &maxBid, &n); err != nil {
		return fmt.Errorf("item %d: %w", i, err)
	}
	bid := max(initial, maxBid) + float64(1+c.rng.IntN(100))/10
	if _, err := c.conn.Exec(ctx, c.q[stInsertBid], c.user(), i, 1, bid, bid+float64(c.rng.IntN(50))/10); err != nil {
		return err
	}
	_, err := c.conn.Exec(ctx, c.q[stUpdateItemBid], bid, i)
	return err
}

// storeBuyNow buys one of the first active item from a random one on that
// is not sold out (items registered during the run included); when every
// item is sold out it rolls back.
func (c *client) storeBuyNow(ctx context.Context) error {
	var i int
	err := c.conn.QueryRow(ctx, c.q[stInStockFrom], c.activeItem()).Scan(&i)
	if errors.Is(err, pgx.ErrNoRows) {
		err = c.conn.QueryRow(ctx, c.q[stInStock]).Scan(&i)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return errSoldOut
	} else if err != nil {
		return err
	}
	tag, err := c.conn.Exec(ctx, c.q[stTakeQuantity], 1, i)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errSoldOut
	}
	_, err = c.conn.Exec(ctx, c.q[stInsertBuyNow], c.user(), i, 1)
	return err
}

// storeComment comments on a user about an old item and updates their rating.
func (c *client) storeComment(ctx context.Context) error {
	to, r := c.user(), ratings[c.rng.IntN(len(ratings))]
	if _, err := c.conn.Exec(ctx, c.q[stInsertComment], c.user(), to, c.oldItem(), r, aString(c.rng, 20, 200)); err != nil {
		return err
	}
	_, err := c.conn.Exec(ctx, c.q[stUpdateRating], r, to)
	return err
}

// registerUser registers a new user under a fresh nickname (RUBiS checks
// that it is free first).
func (c *client) registerUser(ctx context.Context) error {
	nick := "new" + aString(c.rng, 16, 16)
	n, err := c.count(ctx, stNicknameTaken, nick)
	if err != nil || n > 0 {
		return err
	}
	var id int
	return c.conn.QueryRow(ctx, c.q[stInsertUser], aString(c.rng, 3, 20), aString(c.rng, 3, 20), nick, aString(c.rng, 8, 16),
		nick+"@rubis.com", 1+c.rng.IntN(Regions)).Scan(&id)
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
