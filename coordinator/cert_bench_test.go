package coordinator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tandemdb/tandem/certifier"
	"github.com/tandemdb/tandem/secure"
)

// BenchmarkCertifyRaft is certification through a real 3-member Raft group
// on loopback over mutual TLS (raft-boltdb logs with fsync, in the test's
// temporary directory): tiny writesets (two row keys, 100 bytes) from
// clients on the leader's member or on a follower's (forwarded to the
// leader), each waiting for its decision. It reports requests/s and the
// median and 99th-percentile latency (docs/benchmarks.md).
func BenchmarkCertifyRaft(b *testing.B) {
	root := b.TempDir()
	certs := filepath.Join(root, "certs")
	var ms []secure.Member
	for _, id := range []string{"n1", "n2", "n3"} {
		ms = append(ms, secure.Member{ID: id, Hosts: []string{"127.0.0.1"}})
	}
	if _, err := secure.Issue(certs, ms, false); err != nil {
		b.Fatal(err)
	}
	addrs := benchAddrs(b, 3)
	var voters []Member
	for i, id := range []string{"n1", "n2", "n3"} {
		voters = append(voters, Member{ID: id, RaftAddr: addrs[i]})
	}
	cs := map[string]*Coordinator{}
	defer func() {
		for _, c := range cs {
			_ = c.Close()
		}
	}()
	for _, v := range voters {
		ident, err := secure.Load(certs, v.ID)
		if err != nil {
			b.Fatal(err)
		}
		cfg := Config{ID: v.ID, Dir: filepath.Join(root, v.ID), Voters: voters, Identity: ident,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		timing(&cfg)
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = 500*time.Millisecond, 500*time.Millisecond
		c, err := Start(cfg)
		if err != nil {
			b.Fatal(err)
		}
		cs[v.ID] = c
	}
	var leader, follower *Coordinator
	deadline := time.Now().Add(15 * time.Second)
	for leader == nil && time.Now().Before(deadline) {
		for _, c := range cs {
			if c.raft.State() == raft.Leader {
				leader = c
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if leader == nil {
		b.Fatal("no leader")
	}
	for _, c := range cs {
		if c != leader {
			follower = c
		}
	}
	// The group's own CPU with no requests (heartbeats, the leader's
	// step): subtracted from the runs' CPU for the marginal cost.
	idle0, idleStart := cpuTime(), time.Now()
	time.Sleep(2 * time.Second)
	idleRate := float64(cpuTime()-idle0) / float64(time.Since(idleStart))
	var seq int64
	var seqMu sync.Mutex
	for _, via := range []struct {
		name string
		c    *Coordinator
	}{{"leader", leader}, {"follower", follower}} {
		for _, clients := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("via=%s/clients=%d", via.name, clients), func(b *testing.B) {
				ctx := context.Background()
				lat := make([]time.Duration, b.N)
				var aborts, next int
				var mu sync.Mutex
				var wg sync.WaitGroup
				st0 := leader.CertStatus()
				cpu0 := cpuTime()
				b.ResetTimer()
				start := time.Now()
				for w := 0; w < clients; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
						for {
							mu.Lock()
							i := next
							next++
							mu.Unlock()
							if i >= b.N {
								return
							}
							seqMu.Lock()
							seq++
							id := fmt.Sprintf("%s-%d", via.name, seq)
							seqMu.Unlock()
							r := certifier.Request{ID: id, Snapshot: via.c.CertStatus().Last, Writeset: make([]byte, 100),
								Keys: certifier.SortKeys([]certifier.Key{certKey("subscriber", rng.Int64N(1_000_000)), certKey("call_forwarding", rng.Int64N(1_000_000), 1)})}
							t0 := time.Now()
							d, err := via.c.Certify(ctx, r)
							lat[i] = time.Since(t0)
							if err != nil {
								b.Error(err)
								return
							}
							if !d.Committed {
								mu.Lock()
								aborts++
								mu.Unlock()
							}
						}
					}()
				}
				wg.Wait()
				el := time.Since(start)
				cpu := cpuTime() - cpu0
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(aborts)/float64(b.N), "aborts/op")
				// CPU of the whole process (three members and the clients)
				// per request: what a loaded machine does not distort as
				// much as throughput.
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/req")
				marginal := float64(cpu) - idleRate*float64(el)
				b.ReportMetric(max(marginal, 0)/1e3/float64(b.N), "marginal-cpu-us/req")
				if st := leader.CertStatus(); st.Entries > st0.Entries {
					b.ReportMetric(float64(b.N)/float64(st.Entries-st0.Entries), "req/entry")
				}
			})
		}
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchAddrs reserves n loopback ports (bound and released).
func benchAddrs(b *testing.B, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, l.Addr().String())
		defer l.Close()
	}
	return out
}
