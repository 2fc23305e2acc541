package certifier

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkCertify is the pure state machine: tiny writesets (two row keys,
// 100 bytes) on snapshots a few GSNs old over a million-row key space, in a
// full window of 10,000. It is the certifier's bound on cluster write
// throughput before Raft (docs/benchmarks.md).
func BenchmarkCertify(b *testing.B) {
	for _, keyspace := range []int{1_000_000, 1_000} {
		b.Run(fmt.Sprintf("keys=%d", keyspace), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			const pool = 4096
			reqs := make([]Request, pool)
			for i := range reqs {
				reqs[i] = Request{Origin: "n1", Keys: SortKeys([]Key{rk("subscriber", int64(rng.IntN(keyspace))), rk("call_forwarding", int64(rng.IntN(keyspace)), 1)}),
					Writeset: make([]byte, 100)}
			}
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = fmt.Sprint(i)
			}
			s := New()
			w := Window{}
			var aborts int
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := reqs[i%pool]
				r.ID = ids[i]
				r.Snapshot = s.Last() - min(s.Last(), uint64(i%8))
				d, err := s.Certify(r, w)
				if err != nil {
					b.Fatal(err)
				}
				if !d.Committed {
					aborts++
				}
			}
			b.ReportMetric(float64(aborts)/float64(b.N), "aborts/op")
		})
	}
}
