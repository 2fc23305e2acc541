package replog

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkCommit measures a commit's cost to the log: Append followed by
// WaitDurable, with 1 and 16 concurrent committers, in strict and relaxed
// mode. fsyncs/op and records/fsync show group commit at work.
//
//	go test -run='^$' -bench=Commit ./replog
func BenchmarkCommit(b *testing.B) {
	for _, bc := range []struct {
		name    string
		mode    Mode
		writers int
	}{
		{"strict/writers=1", Strict, 1},
		{"strict/writers=16", Strict, 16},
		{"relaxed/writers=1", Relaxed, 1},
		{"relaxed/writers=16", Relaxed, 16},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := openLog(b, b.TempDir(), Options{Mode: bc.mode})
			data := make([]byte, 384) // a TM1 UPDATE_LOCATION writeset
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for range bc.writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						gsn, err := l.Append(Record{Epoch: 1, Data: data})
						if err == nil {
							err = l.WaitDurable(ctx, gsn)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			st := l.Stats()
			b.ReportMetric(float64(st.Fsyncs)/float64(b.N), "fsyncs/op")
			b.ReportMetric(st.RecordsPerFsync(), "records/fsync")
		})
	}
}
