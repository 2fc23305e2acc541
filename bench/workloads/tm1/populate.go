package tm1

import (
	"context"
	"math/rand/v2"

	"github.com/tandemdb/tandem/bench"
)

var subscriberColumns = []string{
	"s_id", "sub_nbr",
	"bit_1", "bit_2", "bit_3", "bit_4", "bit_5", "bit_6", "bit_7", "bit_8", "bit_9", "bit_10",
	"hex_1", "hex_2", "hex_3", "hex_4", "hex_5", "hex_6", "hex_7", "hex_8", "hex_9", "hex_10",
	"byte2_1", "byte2_2", "byte2_3", "byte2_4", "byte2_5", "byte2_6", "byte2_7", "byte2_8", "byte2_9", "byte2_10",
	"msc_location", "vlr_location",
}

var (
	accessInfoColumns      = []string{"s_id", "ai_type", "data1", "data2", "data3", "data4"}
	specialFacilityColumns = []string{"s_id", "sf_type", "is_active", "error_cntrl", "data_a", "data_b"}
	callForwardingColumns  = []string{"s_id", "sf_type", "start_time", "end_time", "numberx"}
)

// Expected rows per subscriber: 1 + 2.5 access_info + 2.5 special_facility
// + 2.5*1.5 call_forwarding.
const rowsPerSubscriber = 9.75

// Populate implements bench.Workload. Subscribers 1..P are inserted in an
// order shuffled with env.Seed; each batch of env.BatchSize subscribers and
// all their rows is one transaction. A batch's values come from its own
// random source (seed, batch number), so the population depends on the seed,
// P and the batch size only, not on the number of workers or the load method.
func (*Workload) Populate(ctx context.Context, env *bench.LoadEnv) error {
	p := env.Scale
	env.ExpectRows(int64(float64(p) * rowsPerSubscriber))
	order := make([]int32, p)
	for i := range order {
		order[i] = int32(i + 1)
	}
	shuffle := rand.New(rand.NewPCG(env.Seed, 0))
	shuffle.Shuffle(p, func(i, j int) { order[i], order[j] = order[j], order[i] })

	batch := env.BatchSize
	batches := (p + batch - 1) / batch
	return env.Parallel(ctx, batches, func(b int, w *bench.RowWriter) error {
		rng := rand.New(rand.NewPCG(env.Seed, uint64(b)+1))
		sub := w.Table("subscriber", subscriberColumns...)
		ai := w.Table("access_info", accessInfoColumns...)
		sf := w.Table("special_facility", specialFacilityColumns...)
		cf := w.Table("call_forwarding", callForwardingColumns...)
		row := make([]any, len(subscriberColumns))
		for _, sid32 := range order[b*batch : min(p, (b+1)*batch)] {
			sid := int(sid32)
			row[0], row[1] = sid, SubNbr(sid)
			for i := range 10 {
				row[2+i] = rng.IntN(2)
				row[12+i] = rng.IntN(16)
				row[22+i] = rng.IntN(256)
			}
			row[32], row[33] = Location(rng), Location(rng)
			sub.Add(row...)

			for _, t := range distinctTypes(rng) {
				ai.Add(sid, t, rng.IntN(256), rng.IntN(256), Letters(rng, 3), Letters(rng, 5))
			}
			for _, t := range distinctTypes(rng) {
				active := 0
				if rng.IntN(100) < 85 {
					active = 1
				}
				sf.Add(sid, t, active, rng.IntN(256), rng.IntN(256), Letters(rng, 5))
				for _, st := range startTimes(rng) {
					cf.Add(sid, t, st, st+1+rng.IntN(8), Digits(rng, 15))
				}
			}
		}
		return nil
	})
}

// distinctTypes draws 1..4 distinct types from 1..4 (access_info.ai_type,
// special_facility.sf_type).
func distinctTypes(rng *rand.Rand) []int {
	types := []int{1, 2, 3, 4}
	rng.Shuffle(4, func(i, j int) { types[i], types[j] = types[j], types[i] })
	return types[:1+rng.IntN(4)]
}

// startTimes draws 0..3 distinct start times from {0, 8, 16}.
func startTimes(rng *rand.Rand) []int {
	st := []int{0, 8, 16}
	rng.Shuffle(3, func(i, j int) { st[i], st[j] = st[j], st[i] })
	return st[:rng.IntN(4)]
}
