package coordinator

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKeeper: the primary's keeper holds the lease while the group
// answers, a standby's keeper gets none, and when the primary loses the
// quorum its lease runs out no later than D after the last request.
func TestKeeper(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() { noLeaks(t, base) })
	g := pairGroup(t)
	g.slow = true
	for _, v := range g.voters {
		g.start(v.ID)
	}
	n1, n2 := g.cs["n1"], g.cs["n2"]
	until(t, n1, 10*time.Second, "initialized", func(m Map) bool { return m.Initialized })

	ctx, cancel := context.WithCancel(context.Background())
	var gsn atomic.Uint64
	k1 := NewKeeper(n1, func() uint64 { return 1 }, gsn.Load)
	k2 := NewKeeper(n2, func() uint64 { return 1 }, gsn.Load)
	done := make(chan struct{}, 2)
	go func() { k1.Run(ctx); done <- struct{}{} }()
	go func() { k2.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()

	waitFor(t, 10*time.Second, "primary's lease", func() bool { return k1.Check(1) == nil })
	if err := k1.Check(2); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("lease valid for another epoch: %v", err)
	}
	waitFor(t, 5*time.Second, "standby refused", func() bool { return errors.Is(k2.Check(1), ErrNotPrimary) })

	// Renewals keep it valid without a gap, well past D.
	for end := time.Now().Add(n1.cfg.Lease + n1.cfg.Lease/2); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		gsn.Add(1)
		if err := k1.Check(1); err != nil {
			t.Fatalf("lease lapsed while the group answered: %v", err)
		}
	}
	until(t, n1, 5*time.Second, "GSN reported", func(m Map) bool { return m.CommitGSN > 0 })

	// The primary loses its quorum: its lease ends by itself, at most D
	// after the loss (the last request left before it).
	g.stop("n2")
	g.stop("w")
	lost := time.Now()
	if last := k1.Grant(); last.ValidUntil.After(lost.Add(n1.cfg.Lease)) {
		t.Fatalf("grant valid until %v after the loss, lease is %v", last.ValidUntil.Sub(lost), n1.cfg.Lease)
	}
	waitFor(t, n1.cfg.Lease+200*time.Millisecond, "lease ends without a quorum", func() bool { return k1.Check(1) != nil })
	if err := k1.Check(1); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("after the loss: %v", err)
	}
}

// TestSwitchover: a planned hand-over does not wait for the lease to
// lapse: the primary's keeper is refused at its next renewal, the primary
// releases the lease, and the target (caught up) becomes the primary.
func TestSwitchover(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() { noLeaks(t, base) })
	g := pairGroup(t)
	for _, v := range g.voters {
		g.start(v.ID)
	}
	n1, n2 := g.cs["n1"], g.cs["n2"]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kctx, kcancel := context.WithCancel(ctx)
	k1 := NewKeeper(n1, func() uint64 { return 1 }, func() uint64 { return 10 })
	done := make(chan struct{})
	go func() { k1.Run(kctx); close(done) }()
	defer func() { kcancel(); <-done }()
	waitFor(t, 10*time.Second, "primary's lease", func() bool { return k1.Check(1) == nil })
	if err := n2.ReportAck(ctx, 1, 10, "2-safe-received"); err != nil {
		t.Fatal(err)
	}

	if err := n2.Switchover(ctx, "n2", 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "renewal refused", func() bool { return errors.Is(k1.Check(1), ErrHandingOver) })
	released := time.Now()
	if err := n1.ReleaseLease(ctx, 1, 10); err != nil {
		t.Fatal(err)
	}
	m := until(t, n1, 5*time.Second, "switchover", func(m Map) bool { return m.Primary == "n2" })
	if took := time.Since(released); took > n1.cfg.Lease {
		t.Fatalf("switchover took %v after the release; the lease is %v", took, n1.cfg.Lease)
	}
	if m.Epoch != 2 || m.History[0].Reason != "switchover" || m.History[0].Lost != 0 || m.HandOverTo != "" {
		t.Fatalf("map %+v", m)
	}
}
