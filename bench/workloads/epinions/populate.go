package epinions

import (
	"context"
	"math/rand/v2"

	"github.com/tandemdb/tandem/bench"
)

type job struct{ kind, lo, hi int }

const (
	jobUsers = iota
	jobItems
	jobReviews // reviews of items lo..hi-1
	jobTrust   // trust rows of users lo..hi-1
)

// Populate implements bench.Workload. Users, items, reviews (by item) and
// trust rows (by source user) are loaded in batches of env.BatchSize users or
// items; each batch draws from its own random source (seed, batch), so the
// population depends on the seed, scale and batch size only. A review's a_id
// is i_id * 500 + its number within the item.
func (*Workload) Populate(ctx context.Context, env *bench.LoadEnv) error {
	users, items := UsersPerScale*env.Scale, ItemsPerScale*env.Scale
	env.ExpectRows(int64(users) + int64(items) + 2*int64(items) + 2*int64(users))
	batch := max(1, env.BatchSize)
	var jobs []job
	for _, k := range []struct{ kind, n int }{{jobUsers, users}, {jobItems, items}, {jobReviews, items}, {jobTrust, users}} {
		for lo := 0; lo < k.n; lo += batch {
			jobs = append(jobs, job{kind: k.kind, lo: lo, hi: min(k.n, lo+batch)})
		}
	}
	return env.Parallel(ctx, len(jobs), func(b int, rw *bench.RowWriter) error {
		rng := rand.New(rand.NewPCG(env.Seed, uint64(b)+1))
		j := jobs[b]
		switch j.kind {
		case jobUsers:
			t := rw.Table("useracct", "u_id", "name")
			for u := j.lo; u < j.hi; u++ {
				t.Add(u, randomString(rng, nameLength))
			}
		case jobItems:
			t := rw.Table("item", "i_id", "title")
			for i := j.lo; i < j.hi; i++ {
				t.Add(i, randomString(rng, titleLength))
			}
		case jobReviews:
			t := rw.Table("review", "a_id", "u_id", "i_id", "rating")
			count, reviewer := NewZipf(MaxReviews, 1.8), NewZipf(users, 0.99)
			for i := j.lo; i < j.hi; i++ {
				n := min(max(1, count.Next(rng)), users)
				seen := make(map[int]bool, n)
				for k := 0; k < n; {
					u := reviewer.Next(rng)
					if seen[u] {
						continue
					}
					seen[u] = true
					t.Add(i*MaxReviews+k, u, i, rng.IntN(5))
					k++
				}
			}
		case jobTrust:
			t := rw.Table("trust", "source_u_id", "target_u_id", "trust")
			count, trusted := NewZipf(MaxTrust, 1.95), NewZipf(users, 0.99)
			for u := j.lo; u < j.hi; u++ {
				n := min(count.Next(rng), users)
				seen := make(map[int]bool, n)
				for k := 0; k < n; {
					v := scrambled(trusted.Next(rng), users)
					if seen[v] {
						continue
					}
					seen[v] = true
					t.Add(u, v, rng.IntN(2))
					k++
				}
			}
		}
		return nil
	})
}
