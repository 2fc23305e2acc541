package rubis

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/tandemdb/tandem/bench"
)

type job struct{ kind, lo, hi int } // ids lo..hi-1

const (
	jobFixed = iota // categories and regions
	jobUsers        // users with the comments about them
	jobItems        // items (active or old by id) with their bids and buy_now rows
)

var (
	userColumns    = []string{"id", "firstname", "lastname", "nickname", "password", "email", "rating", "balance", "creation_date", "region"}
	itemColumns    = []string{"id", "name", "description", "initial_price", "quantity", "reserve_price", "buy_now", "nb_of_bids", "max_bid", "start_date", "end_date", "seller", "category"}
	bidColumns     = []string{"id", "user_id", "item_id", "qty", "bid", "max_bid", "date"}
	commentColumns = []string{"id", "from_user_id", "to_user_id", "item_id", "rating", "date", "comment"}
	buyNowColumns  = []string{"id", "buyer_id", "item_id", "qty", "date"}
)

// Populate implements bench.Workload, in batches of env.BatchSize users or
// items; each batch draws from its own random source (seed, batch number),
// so the population depends on the seed, scale and batch size only. A bid's
// id is (item-1)*20 + its number, a comment's (user-1)*4 + its number, a
// buy_now row's its item's id.
func (*Workload) Populate(ctx context.Context, env *bench.LoadEnv) error {
	u, a, o := users(env.Scale), activeItems(env.Scale), oldItems(env.Scale)
	env.ExpectRows(int64(Categories+Regions) + int64(u)*3 + int64(a+o)*12)
	batch := max(1, env.BatchSize)
	jobs := []job{{kind: jobFixed}}
	for _, k := range []struct{ kind, n int }{{jobUsers, u}, {jobItems, a + o}} {
		for lo := 1; lo <= k.n; lo += batch {
			jobs = append(jobs, job{kind: k.kind, lo: lo, hi: min(k.n+1, lo+batch)})
		}
	}
	return env.Parallel(ctx, len(jobs), func(b int, rw *bench.RowWriter) error {
		rng := rand.New(rand.NewPCG(env.Seed, uint64(b)+1))
		j := jobs[b]
		switch j.kind {
		case jobFixed:
			t := rw.Table("categories", "id", "name")
			for id := 1; id <= Categories; id++ {
				t.Add(id, categoryNames[id-1])
			}
			t = rw.Table("regions", "id", "name")
			for id := 1; id <= Regions; id++ {
				t.Add(id, "Region-"+aString(rng, 4, 16))
			}
		case jobUsers:
			ut := rw.Table("users", userColumns...)
			ct := rw.Table("comments", commentColumns...)
			for id := j.lo; id < j.hi; id++ {
				rating := 0
				for k := range rng.IntN(MaxCommentsPerUser + 1) {
					r := ratings[rng.IntN(len(ratings))]
					rating += r
					ct.Add((id-1)*MaxCommentsPerUser+k+1, 1+rng.IntN(u), id, 1+rng.IntN(o), r,
						stamp(loadDay.Add(-time.Duration(rng.IntN(30*24))*time.Hour)), aString(rng, 20, 200))
				}
				ut.Add(id, aString(rng, 3, 20), aString(rng, 3, 20), Nickname(id), Password(id), Nickname(id)+"@rubis.com",
					rating, 0.0, stamp(loadDay.Add(-time.Duration(rng.IntN(365*24))*time.Hour)), 1+rng.IntN(Regions))
			}
		case jobItems:
			at := rw.Table("items", itemColumns...)
			ot := rw.Table("old_items", itemColumns...)
			bt := rw.Table("bids", bidColumns...)
			nt := rw.Table("buy_now", buyNowColumns...)
			for id := j.lo; id < j.hi; id++ {
				old := id <= o
				price := float64(1+rng.IntN(5000)) / 10
				qty := 1
				if rng.IntN(100) >= 80 {
					qty = 1 + rng.IntN(10)
				}
				reserve, buyNow := 0.0, 0.0
				if rng.IntN(100) < 40 {
					reserve = price + float64(rng.IntN(1000))/10
				}
				if rng.IntN(100) < 10 {
					buyNow = price + reserve + float64(rng.IntN(1000))/10
				}
				start := loadDay.Add(-time.Duration(rng.IntN(7*24)) * time.Hour)
				if old {
					start = start.AddDate(0, 0, -30)
				}
				end := start.AddDate(0, 0, 7)
				nbids := rng.IntN(MaxBidsPerItem + 1)
				maxBid, bid := 0.0, price
				for k := range nbids {
					bid += float64(1+rng.IntN(100)) / 10
					maxBid = bid
					bt.Add((id-1)*MaxBidsPerItem+k+1, 1+rng.IntN(u), id, 1, bid, bid+float64(rng.IntN(50))/10,
						stamp(start.Add(time.Duration(k+1)*time.Minute)))
				}
				row := []any{id, "RUBiS item " + aString(rng, 5, 40), aString(rng, 50, 500), price, qty, reserve, buyNow, nbids, maxBid,
					stamp(start), stamp(end), 1 + rng.IntN(u), 1 + rng.IntN(Categories)}
				if old {
					ot.Add(row...)
					if buyNow > 0 {
						nt.Add(id, 1+rng.IntN(u), id, 1, stamp(end))
					}
				} else {
					at.Add(row...)
				}
			}
		}
		return nil
	})
}

// categoryNames are RUBiS's twenty eBay categories.
var categoryNames = [Categories]string{"Antiques & Art", "Books", "Business, Office & Industrial", "Clothing & Accessories",
	"Coins", "Collectibles", "Computers", "Consumer Electronics", "Dolls & Bears", "Home & Garden", "Jewelry, Gems & Watches",
	"Movies & Television", "Music", "Photo", "Pottery & Glass", "Sports", "Stamps", "Tickets & Travel", "Toys & Hobbies",
	"Everything Else"}
