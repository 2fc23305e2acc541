package e2e

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"
)

// TestPhysicalSingleMasterCost (not a test: a measurement, run by hand with
// PHYSSM_COST=1; physical/DESIGN.md "Read consistency by WAL position"):
// the latency of a read that follows its session's write, on one session
// through the router, at 2-safe-received with two replicas in read
// rotation: at session (the commit-position query on the primary and the
// replica's wait), at session 5 ms after the write (the replica has
// replayed it: what is left is the two round trips), at eventual (nothing),
// and forced to the primary. Modes alternate in 5 rounds of 100 pairs.
func TestPhysicalSingleMasterCost(t *testing.T) {
	if os.Getenv("PHYSSM_COST") == "" {
		t.Skip("a measurement: PHYSSM_COST=1")
	}
	s := upPhysSM(t, 3, map[string]string{"n1": "read_weight = 0\n"}, nil)
	s.waitReplicasStreaming("n1", "n2", "n3")
	ctx := context.Background()
	c := connect(t, s.DSN)
	if _, err := c.Exec(ctx, "CREATE TABLE ryw (id bigint PRIMARY KEY, session int)"); err != nil {
		t.Fatal(err)
	}
	lat := map[string][]time.Duration{}
	stale := map[string]int{}
	id := int64(0)
	for round := 0; round < 5; round++ {
		for _, mode := range []string{"session", "session+5ms", "eventual", "primary"} {
			cons := mode
			if mode == "session+5ms" {
				cons = "session"
			}
			q := "SELECT count(*), pg_is_in_recovery() FROM ryw WHERE id = $1"
			if mode == "primary" {
				cons = "eventual"
				q = "/* tandem:primary */ " + q
			}
			if _, err := c.Exec(ctx, "SET tandem.read_consistency = "+cons); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 100; i++ {
				id++
				if _, err := c.Exec(ctx, "INSERT INTO ryw VALUES ($1, 0)", id); err != nil {
					t.Fatal(err)
				}
				if mode == "session+5ms" {
					time.Sleep(5 * time.Millisecond)
				}
				start := time.Now()
				var n int
				var rep bool
				if err := c.QueryRow(ctx, q, id).Scan(&n, &rep); err != nil {
					t.Fatal(err)
				}
				lat[mode] = append(lat[mode], time.Since(start))
				if n != 1 {
					stale[mode]++
				}
			}
		}
	}
	for _, mode := range []string{"session", "session+5ms", "eventual", "primary"} {
		l := lat[mode]
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		t.Logf("%-11s reads %d, stale %d, median %v, p90 %v", mode, len(l), stale[mode], l[len(l)/2].Round(time.Microsecond), l[len(l)*9/10].Round(time.Microsecond))
	}
}
