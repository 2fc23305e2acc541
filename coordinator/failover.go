package coordinator

import (
	"fmt"
	"time"
)

// Situation is what the leader knows when it considers a change of
// primary: a copy of the map and how long ago, on its own monotonic clock,
// it applied the lease's last entry (or became leader, if later).
type Situation struct {
	Map        Map
	SinceLease time.Duration
	Grace      time.Duration // waited beyond the lease's duration
}

// Decision is a change of primary the leader proposes. Epoch and ExpectSeq
// are the map's at decision time; the entry is void if either moved.
type Decision struct {
	Target    string
	Reason    string
	Epoch     uint64
	ExpectSeq uint64
	Lost      uint64
}

// levelRank orders acknowledgement levels; a standby that acknowledged at
// a level at least the configured one holds every commit acknowledged at it.
func levelRank(l string) int {
	switch l {
	case "2-safe-received":
		return 1
	case "2-safe-visible":
		return 2
	case "2-safe-durable":
		return 3
	}
	return 0
}

// ReportWait is how long past the lapse the rule waits, at a 2-safe level,
// for a standby to report the primary's last acknowledged GSN
// (commit_gsn) before it takes the best it has: standbys report every
// 250 ms (replication's reportEvery), so with a short lease the report of
// the standby that acknowledged last may not be in yet. With several
// standbys and ack = one or majority only some hold the last commits;
// the highest report then names one that does.
const ReportWait = 400 * time.Millisecond

// Lapsed reports whether a lease last seen since ago has lapsed for the
// coordinator: the holder stopped trusting it after d on its own clock,
// and the coordinator waits grace more.
func Lapsed(since, d, grace time.Duration) bool { return since > d+grace }

// Decide is the failover and hand-over rule, a pure function of the map and
// the time since the lease was last seen:
//
//   - a pending promote/switchover goes ahead once the holder released the
//     lease and the target reported every commit the holder reported, or
//     once the lease lapsed (counting what the target may lack);
//   - otherwise nothing happens while the lease is valid, or when no lease
//     was ever granted in this epoch (the primary has not started), or
//     when failover is manual;
//   - at a 2-safe level the new primary is a standby that reported in this
//     epoch at a level at least the configured one and that the primary has
//     not marked degraded (so it held every commit the primary
//     acknowledged); the highest GSN wins, then the member order;
//   - with several standbys (single-master, ack = one or majority) only
//     some acknowledged the last commits: the highest report names one of
//     them, and for up to ReportWait past the lapse the rule waits while
//     no eligible standby reported commit_gsn;
//   - at 1-safe the standby with the highest reported GSN wins, and the
//     commits the primary reported beyond it are counted as lost.
func Decide(s Situation) (Decision, error) {
	m := s.Map
	if !m.Initialized {
		return Decision{}, ErrUninitialized
	}
	lapsed := Lapsed(s.SinceLease, m.Lease.Duration, s.Grace)
	d := Decision{Epoch: m.Epoch, ExpectSeq: m.Lease.Seq}
	if m.HandOverTo != "" {
		a := m.Acks[m.HandOverTo]
		var got uint64
		if a.Epoch == m.Epoch {
			got = a.GSN
		}
		caughtUp := got >= m.CommitGSN
		if !(m.Released && caughtUp) && !lapsed {
			return Decision{}, fmt.Errorf("%w: hand-over to %s waits for the lease to be released and the target to catch up", ErrLeaseValid, m.HandOverTo)
		}
		d.Target, d.Reason = m.HandOverTo, m.HandOverWhy
		if d.Reason == "" {
			d.Reason = "promote"
		}
		if !caughtUp {
			d.Lost = m.CommitGSN - got
		}
		return d, nil
	}
	if m.Lease.Holder == "" || m.Lease.Epoch != m.Epoch {
		return Decision{}, ErrNoLease
	}
	if !lapsed && !m.Released {
		return Decision{}, ErrLeaseValid
	}
	if !m.Automatic {
		return Decision{}, ErrManual
	}
	twoSafe := levelRank(m.Safeness) > 0
	best, bestGSN := "", uint64(0)
	for _, mem := range m.Members {
		if mem.Role != RoleStandby {
			continue
		}
		a, ok := m.Acks[mem.ID]
		if !ok || a.Epoch != m.Epoch {
			continue
		}
		if twoSafe && (a.Degraded || levelRank(a.Level) < levelRank(m.Safeness)) {
			continue
		}
		if best == "" || a.GSN > bestGSN {
			best, bestGSN = mem.ID, a.GSN
		}
	}
	if best == "" {
		return Decision{}, ErrNoCandidate
	}
	if twoSafe && bestGSN < m.CommitGSN && !m.Released && !Lapsed(s.SinceLease, m.Lease.Duration+ReportWait, s.Grace) {
		return Decision{}, fmt.Errorf("%w: the best standby %s reported GSN %d, the primary acknowledged %d", ErrAwaitReports, best, bestGSN, m.CommitGSN)
	}
	d.Target, d.Reason = best, "failover"
	if !twoSafe && m.CommitGSN > bestGSN {
		d.Lost = m.CommitGSN - bestGSN
	}
	return d, nil
}
