package coordinator

import (
	"errors"
	"testing"
	"time"
)

// three nodes and a witness; n1 primary of epoch 5 holding lease seq 9,
// having reported GSN 100 acknowledged.
func baseMap(safeness string) Map {
	return Map{Initialized: true, Epoch: 5, Primary: "n1", Safeness: safeness, Automatic: true,
		Members: []Member{{ID: "n1", Role: RolePrimary}, {ID: "n2", Role: RoleStandby}, {ID: "n3", Role: RoleStandby}, {ID: "w", Role: RoleWitness}},
		Lease:   Lease{Holder: "n1", Epoch: 5, Seq: 9, Duration: time.Second}, CommitGSN: 100, Acks: map[string]Ack{}}
}

func TestDecide(t *testing.T) {
	const lapsed, valid = 2 * time.Second, 1200 * time.Millisecond // grace 500 ms: lapse after 1.5 s
	ack := func(epoch, gsn uint64, level string, degraded bool) Ack {
		return Ack{Epoch: epoch, GSN: gsn, Level: level, Degraded: degraded}
	}
	cases := []struct {
		name   string
		safe   string
		edit   func(*Map)
		since  time.Duration
		target string
		lost   uint64
		reason string
		err    error
	}{
		{name: "uninitialized", edit: func(m *Map) { m.Initialized = false }, since: lapsed, err: ErrUninitialized},
		{name: "lease valid", safe: "2-safe-received", edit: func(m *Map) { m.Acks["n2"] = ack(5, 100, "2-safe-received", false) }, since: valid, err: ErrLeaseValid},
		{name: "lease valid past its duration but within grace", safe: "2-safe-received", edit: func(m *Map) { m.Acks["n2"] = ack(5, 100, "2-safe-received", false) }, since: 1400 * time.Millisecond, err: ErrLeaseValid},
		{name: "no lease in this epoch", safe: "2-safe-received", edit: func(m *Map) { m.Lease.Epoch = 4; m.Acks["n2"] = ack(5, 1, "2-safe-received", false) }, since: lapsed, err: ErrNoLease},
		{name: "never leased", safe: "2-safe-received", edit: func(m *Map) { m.Lease.Holder = "" }, since: lapsed, err: ErrNoLease},
		{name: "manual", safe: "2-safe-received", edit: func(m *Map) { m.Automatic = false; m.Acks["n2"] = ack(5, 100, "2-safe-received", false) }, since: lapsed, err: ErrManual},
		{name: "2-safe: the standby at level", safe: "2-safe-received", edit: func(m *Map) { m.Acks["n2"] = ack(5, 90, "2-safe-received", false) }, since: lapsed, target: "n2", reason: "failover"},
		{name: "2-safe: released lease fails over at once", safe: "2-safe-received", edit: func(m *Map) { m.Released = true; m.Acks["n2"] = ack(5, 90, "2-safe-received", false) }, since: 0, target: "n2", reason: "failover"},
		{name: "2-safe: degraded standby never", safe: "2-safe-received", edit: func(m *Map) { m.Acks["n2"] = ack(5, 100, "2-safe-received", true) }, since: lapsed, err: ErrNoCandidate},
		{name: "2-safe: below the level never", safe: "2-safe-durable", edit: func(m *Map) { m.Acks["n2"] = ack(5, 100, "2-safe-visible", false) }, since: lapsed, err: ErrNoCandidate},
		{name: "2-safe: higher level counts", safe: "2-safe-visible", edit: func(m *Map) { m.Acks["n2"] = ack(5, 100, "2-safe-durable", false) }, since: lapsed, target: "n2", reason: "failover"},
		{name: "2-safe: ack of an older epoch never", safe: "2-safe-received", edit: func(m *Map) { m.Acks["n2"] = ack(4, 100, "2-safe-received", false) }, since: lapsed, err: ErrNoCandidate},
		{name: "2-safe: silent standby never", safe: "2-safe-received", edit: func(m *Map) {}, since: lapsed, err: ErrNoCandidate},
		{name: "2-safe: skip degraded, take the healthy one though behind in reports", safe: "2-safe-received", edit: func(m *Map) {
			m.Acks["n2"] = ack(5, 100, "2-safe-received", true)
			m.Acks["n3"] = ack(5, 80, "2-safe-received", false)
		}, since: lapsed, target: "n3", reason: "failover"},
		{name: "2-safe: highest GSN of the eligible", safe: "2-safe-received", edit: func(m *Map) {
			m.Acks["n2"] = ack(5, 95, "2-safe-received", false)
			m.Acks["n3"] = ack(5, 99, "2-safe-received", false)
		}, since: lapsed, target: "n3", reason: "failover"},
		{name: "2-safe, ack one: wait past the lapse for the standby that acknowledged", safe: "2-safe-received", edit: func(m *Map) {
			m.Acks["n2"] = ack(5, 95, "2-safe-received", false)
			m.Acks["n3"] = ack(5, 90, "2-safe-received", false)
		}, since: 1600 * time.Millisecond, err: ErrAwaitReports},
		{name: "2-safe, ack one: the one that acknowledged wins once it reported", safe: "2-safe-received", edit: func(m *Map) {
			m.Acks["n2"] = ack(5, 90, "2-safe-received", false)
			m.Acks["n3"] = ack(5, 100, "2-safe-received", false)
		}, since: 1600 * time.Millisecond, target: "n3", reason: "failover"},
		{name: "2-safe, ack one: after ReportWait the highest report", safe: "2-safe-received", edit: func(m *Map) {
			m.Acks["n2"] = ack(5, 95, "2-safe-received", false)
			m.Acks["n3"] = ack(5, 90, "2-safe-received", false)
		}, since: 1950 * time.Millisecond, target: "n2", reason: "failover"},
		{name: "2-safe: tie goes to member order", safe: "2-safe-received", edit: func(m *Map) {
			m.Acks["n3"] = ack(5, 99, "2-safe-received", false)
			m.Acks["n2"] = ack(5, 99, "2-safe-received", false)
		}, since: lapsed, target: "n2", reason: "failover"},
		{name: "1-safe: highest GSN, loss counted", safe: "1-safe", edit: func(m *Map) {
			m.Acks["n2"] = ack(5, 60, "1-safe", false)
			m.Acks["n3"] = ack(5, 70, "1-safe", true)
		}, since: lapsed, target: "n3", reason: "failover", lost: 30},
		{name: "1-safe: nothing lost", safe: "1-safe", edit: func(m *Map) { m.Acks["n2"] = ack(5, 100, "1-safe", false) }, since: lapsed, target: "n2", reason: "failover"},
		{name: "1-safe: nobody reported", safe: "1-safe", edit: func(m *Map) {}, since: lapsed, err: ErrNoCandidate},
		{name: "switchover waits for release", safe: "2-safe-received", edit: func(m *Map) {
			m.HandOverTo, m.HandOverWhy = "n3", "switchover"
			m.Acks["n3"] = ack(5, 100, "2-safe-received", false)
		}, since: valid, err: ErrLeaseValid},
		{name: "switchover waits for the target to catch up", safe: "2-safe-received", edit: func(m *Map) {
			m.HandOverTo, m.HandOverWhy, m.Released = "n3", "switchover", true
			m.Acks["n3"] = ack(5, 99, "2-safe-received", false)
		}, since: valid, err: ErrLeaseValid},
		{name: "switchover after release and catch-up", safe: "2-safe-received", edit: func(m *Map) {
			m.HandOverTo, m.HandOverWhy, m.Released = "n3", "switchover", true
			m.Acks["n3"] = ack(5, 100, "2-safe-received", false)
		}, since: valid, target: "n3", reason: "switchover"},
		{name: "promote after lapse counts what the target lacks, even when manual", safe: "2-safe-received", edit: func(m *Map) {
			m.Automatic = false
			m.HandOverTo = "n2"
			m.Acks["n2"] = ack(5, 97, "2-safe-received", true)
		}, since: lapsed, target: "n2", reason: "promote", lost: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := baseMap(tc.safe)
			tc.edit(&m)
			d, err := Decide(Situation{Map: m, SinceLease: tc.since, Grace: 500 * time.Millisecond})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v (decision %+v)", err, tc.err, d)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v", err)
			}
			want := Decision{Target: tc.target, Reason: tc.reason, Epoch: 5, ExpectSeq: 9, Lost: tc.lost}
			if d != want {
				t.Fatalf("decision %+v, want %+v", d, want)
			}
		})
	}
}

// TestDecideThenApply: a decision applies to the map it was taken on and
// is void once the lease moved (a renewal raced the decision).
func TestDecideThenApply(t *testing.T) {
	m := baseMap("2-safe-received")
	m.Acks["n2"] = Ack{Epoch: 5, GSN: 100, Level: "2-safe-received"}
	d, err := Decide(Situation{Map: m, SinceLease: 3 * time.Second, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := Command{Op: OpTransition, Target: d.Target, Reason: d.Reason, Epoch: d.Epoch, ExpectSeq: d.ExpectSeq}
	raced := m.Clone()
	if err := apply(&raced, Command{Op: OpLease, From: "n1", Epoch: 5}, 10); err != nil {
		t.Fatal(err)
	}
	if err := apply(&raced, c, 11); !errors.Is(err, ErrStale) {
		t.Fatalf("decision applied after a renewal: %v", err)
	}
	late := m.Clone()
	if err := apply(&late, Command{Op: OpDegrade, From: "n1", Epoch: 5, Standby: "n2", Degraded: true}, 10); err != nil {
		t.Fatal(err)
	}
	if err := apply(&late, c, 11); !errors.Is(err, ErrStale) {
		t.Fatalf("decision applied after its target was marked degraded: %v", err)
	}
	if err := apply(&m, c, 11); err != nil || m.Primary != "n2" || m.Epoch != 6 {
		t.Fatalf("err %v map %+v", err, m)
	}
}
