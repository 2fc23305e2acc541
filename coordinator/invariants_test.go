package coordinator

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestInvariants drives the map with random requests from every member and
// the leader's decisions, and checks after each entry what must always
// hold: one primary, the roles agree with it, the epoch never goes back,
// only the primary holds the lease of the current epoch, acks are of the
// current epoch from standbys, and at a 2-safe level no failover ever
// promotes a standby that was degraded or reported below the level.
func TestInvariants(t *testing.T) {
	ids := []string{"n1", "n2", "n3", "w"}
	levels := []string{"1-safe", "2-safe-received", "2-safe-visible", "2-safe-durable"}
	changes := map[string]int{}
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		safeness := levels[rng.IntN(len(levels))]
		m := Map{}
		members := []Member{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}, {ID: "w", Role: RoleWitness}}
		if err := apply(&m, Command{Op: OpInit, Members: members, Primary: "n1", Safeness: safeness, Automatic: rng.IntN(2) == 0, LeaseDur: time.Second}, 1); err != nil {
			t.Fatal(err)
		}
		var gsn uint64
		for i := uint64(2); i < 400; i++ {
			from := ids[rng.IntN(len(ids))]
			epoch := m.Epoch
			if rng.IntN(5) == 0 {
				epoch = uint64(rng.IntN(int(m.Epoch) + 2))
			}
			gsn += uint64(rng.IntN(3))
			var c Command
			switch rng.IntN(7) {
			case 0, 1:
				c = Command{Op: OpLease, From: from, Epoch: epoch, GSN: gsn}
			case 2:
				c = Command{Op: OpAck, From: from, Epoch: epoch, GSN: gsn - uint64(rng.IntN(int(gsn)+1)), Level: levels[rng.IntN(len(levels))]}
			case 3:
				c = Command{Op: OpDegrade, From: from, Epoch: epoch, Standby: ids[rng.IntN(len(ids))], Degraded: rng.IntN(2) == 0}
			case 4:
				c = Command{Op: OpRelease, From: from, Epoch: epoch, GSN: gsn}
			case 5:
				if rng.IntN(4) == 0 {
					c = Command{Op: OpHandOver, From: from, Target: ids[rng.IntN(len(ids))], Reason: "switchover"}
				} else {
					c = Command{Op: OpAck, From: from, Epoch: m.Epoch, GSN: gsn, Level: safeness}
				}
			case 6:
				// The leader decides on the map as it is, some time after
				// the lease was seen.
				d, err := Decide(Situation{Map: m.Clone(), SinceLease: time.Duration(rng.IntN(3000)) * time.Millisecond, Grace: 500 * time.Millisecond})
				if err != nil {
					continue
				}
				if levelRank(safeness) > 0 && d.Reason == "failover" {
					a := m.Acks[d.Target]
					if a.Degraded || levelRank(a.Level) < levelRank(safeness) || a.Epoch != m.Epoch {
						t.Fatalf("seed %d: failover to %s with ack %+v at %s", seed, d.Target, a, safeness)
					}
				}
				c = Command{Op: OpTransition, From: "n1", Target: d.Target, Reason: d.Reason, Epoch: d.Epoch, ExpectSeq: d.ExpectSeq, Lost: d.Lost}
			}
			before := m.Clone()
			if err := apply(&m, c, i); err != nil {
				if m.Index != before.Index || m.Epoch != before.Epoch || m.Lease != before.Lease {
					t.Fatalf("seed %d: a refused %s changed the map", seed, c.Op)
				}
			}
			checkMap(t, seed, before, m)
			if m.Epoch > before.Epoch {
				changes[m.History[len(m.History)-1].Reason]++
			}
		}
	}
	// The walk must have reached what it checks.
	if changes["failover"] < 10 || changes["switchover"] < 10 {
		t.Fatalf("too few changes of primary exercised: %v", changes)
	}
	t.Logf("changes of primary: %v", changes)
}

func checkMap(t *testing.T, seed uint64, before, m Map) {
	t.Helper()
	primaries := 0
	for _, mem := range m.Members {
		switch mem.Role {
		case RolePrimary:
			primaries++
			if mem.ID != m.Primary {
				t.Fatalf("seed %d: %s has the primary role, the map's primary is %s", seed, mem.ID, m.Primary)
			}
		case RoleWitness:
			if mem.ID != "w" {
				t.Fatalf("seed %d: %s became a witness", seed, mem.ID)
			}
		}
	}
	if primaries != 1 {
		t.Fatalf("seed %d: %d primaries: %+v", seed, primaries, m.Members)
	}
	if m.Epoch < before.Epoch || (m.Epoch > before.Epoch && m.Epoch != before.Epoch+1) {
		t.Fatalf("seed %d: epoch %d -> %d", seed, before.Epoch, m.Epoch)
	}
	if m.Lease.Seq < before.Lease.Seq {
		t.Fatalf("seed %d: lease sequence went back", seed)
	}
	if m.Lease.Holder != "" && (m.Lease.Holder != m.Primary || m.Lease.Epoch != m.Epoch) {
		t.Fatalf("seed %d: lease %+v, primary %s of epoch %d", seed, m.Lease, m.Primary, m.Epoch)
	}
	for id, a := range m.Acks {
		mem, _ := m.Member(id)
		// Only reports of the current epoch; a bare degrade mark (no report
		// yet) carries nothing Decide could use.
		if a.Epoch != m.Epoch && (a.Epoch != 0 || a.GSN != 0 || a.Level != "") {
			t.Fatalf("seed %d: ack of %s from epoch %d in epoch %d", seed, id, a.Epoch, m.Epoch)
		}
		if mem.Role == RoleWitness {
			t.Fatalf("seed %d: the witness has an ack", seed)
		}
	}
}
