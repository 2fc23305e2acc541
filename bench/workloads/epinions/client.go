package epinions

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
)

const (
	stReviewItemByID = iota
	stReviewsByUser
	stAvgRatingByTrusted
	stItemAvgRating
	stItemReviews
	stTrustOf
	stUpdateUserName
	stUpdateItemTitle
	stUpdateReviewRating
	stUpdateTrustRating
	numStatements
)

// BenchBase's statements, in standard SQL.
var statements = [numStatements]string{
	stReviewItemByID:     `SELECT r.a_id, r.u_id, r.i_id, r.rating, r.rank, i.title FROM review r, item i WHERE i.i_id = r.i_id AND r.i_id = $1 ORDER BY r.rating DESC, r.a_id LIMIT 10`,
	stReviewsByUser:      `SELECT r.a_id, r.u_id, r.i_id, r.rating, r.rank, u.name FROM review r, useracct u WHERE u.u_id = r.u_id AND r.u_id = $1 ORDER BY r.rating DESC, r.a_id LIMIT 10`,
	stAvgRatingByTrusted: `SELECT avg(r.rating) FROM review r, trust t WHERE r.u_id = t.target_u_id AND r.i_id = $1 AND t.source_u_id = $2`,
	stItemAvgRating:      `SELECT avg(rating) FROM review r WHERE r.i_id = $1`,
	stItemReviews:        `SELECT a_id, u_id, i_id, rating, rank FROM review r WHERE r.i_id = $1`,
	stTrustOf:            `SELECT source_u_id, target_u_id, trust FROM trust t WHERE t.source_u_id = $1`,
	stUpdateUserName:     `UPDATE useracct SET name = $1 WHERE u_id = $2`,
	stUpdateItemTitle:    `UPDATE item SET title = $1 WHERE i_id = $2`,
	stUpdateReviewRating: `UPDATE review SET rating = $1 WHERE i_id = $2 AND u_id = $3`,
	stUpdateTrustRating:  `UPDATE trust SET trust = $1 WHERE source_u_id = $2 AND target_u_id = $3`,
}

type client struct {
	conn         *pgx.Conn
	rng          *rand.Rand
	users, items int
	q            [numStatements]string
}

// NewClient implements bench.Workload.
func (*Workload) NewClient(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, p bench.ClientParams) (bench.Client, error) {
	if p.Scale <= 0 {
		return nil, fmt.Errorf("epinions: %w: scale must be > 0 (got %d)", bench.ErrBadOption, p.Scale)
	}
	c := &client{conn: conn, rng: rng, users: UsersPerScale * p.Scale, items: ItemsPerScale * p.Scale}
	for i, sql := range statements {
		if p.Simple {
			c.q[i] = sql
			continue
		}
		name := fmt.Sprintf("epinions_%d", i)
		if _, err := conn.Prepare(ctx, name, sql); err != nil {
			return nil, fmt.Errorf("epinions: prepare %s (%s): %w", name, sql, err)
		}
		c.q[i] = name
	}
	return c, nil
}

func (c *client) user() int { return c.rng.IntN(c.users) }
func (c *client) item() int { return c.rng.IntN(c.items) }

// Run implements bench.Client. Reads that read more than one statement run
// in a transaction block; single statements run as implicit transactions.
func (c *client) Run(ctx context.Context, t bench.TxType) (bench.Outcome, error) {
	switch t {
	case GetReviewItemByID:
		return c.read(ctx, stReviewItemByID, c.item())
	case GetReviewsByUser:
		return c.read(ctx, stReviewsByUser, c.user())
	case GetAverageRatingByTrustedUser:
		return c.read(ctx, stAvgRatingByTrusted, c.item(), c.user())
	case GetItemAverageRating:
		return c.read(ctx, stItemAvgRating, c.item())
	case GetItemReviewsByTrustedUser:
		i, u := c.item(), c.user()
		if _, err := c.conn.Exec(ctx, "BEGIN"); err != nil {
			return bench.Classify(err), err
		}
		o1, err := c.read(ctx, stItemReviews, i)
		if err == nil {
			var o2 bench.Outcome
			if o2, err = c.read(ctx, stTrustOf, u); err == nil && o2 == bench.CountedNoRows {
				o1 = o2
			}
		}
		if err != nil {
			if !c.conn.IsClosed() {
				_, _ = c.conn.Exec(ctx, "ROLLBACK")
			}
			return bench.Classify(err), err
		}
		if _, err := c.conn.Exec(ctx, "COMMIT"); err != nil {
			return bench.Classify(err), err
		}
		return o1, nil
	case UpdateUserName:
		return c.update(ctx, stUpdateUserName, randomString(c.rng, nameLength), c.user())
	case UpdateItemTitle:
		return c.update(ctx, stUpdateItemTitle, randomString(c.rng, titleLength), c.item())
	case UpdateReviewRating:
		return c.update(ctx, stUpdateReviewRating, c.rng.IntN(1000), c.item(), c.user())
	case UpdateTrustRating:
		return c.update(ctx, stUpdateTrustRating, c.rng.IntN(2), c.user(), c.user())
	}
	return bench.Failed, fmt.Errorf("epinions: unknown transaction type %d", t)
}

// read runs one query and reads all its rows; no row (or a NULL aggregate)
// is CountedNoRows.
func (c *client) read(ctx context.Context, st int, args ...any) (bench.Outcome, error) {
	rows, err := c.conn.Query(ctx, c.q[st], args...)
	if err != nil {
		return bench.Classify(err), err
	}
	found := false
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return bench.Failed, err
		}
		found = found || len(vals) != 1 || vals[0] != nil
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return bench.Classify(err), err
	}
	if !found {
		return bench.CountedNoRows, nil
	}
	return bench.Counted, nil
}

var errNoTag = errors.New("epinions: no command tag")

// update runs one UPDATE as an implicit transaction; 0 rows changed commits
// and counts (BenchBase), as CountedNoRows.
func (c *client) update(ctx context.Context, st int, args ...any) (bench.Outcome, error) {
	tag, err := c.conn.Exec(ctx, c.q[st], args...)
	if err != nil {
		return bench.Classify(err), err
	}
	if !tag.Update() {
		return bench.Failed, errNoTag
	}
	if tag.RowsAffected() == 0 {
		return bench.CountedNoRows, nil
	}
	return bench.Counted, nil
}
