package replog

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestGroupCommitShared holds the first fdatasync until n concurrent
// committers have appended, so the property is checked without timing:
// every committer returns from WaitDurable, and at most two fdatasyncs
// (the held one, and one covering everything appended meanwhile) serve all
// n.
func TestGroupCommitShared(t *testing.T) {
	const n = 64
	gate := newSyncGate()
	l := openLog(t, t.TempDir(), Options{Mode: Strict, FlushInterval: time.Hour, syncHook: gate.hook})
	ctx := ctxTimeout(t, 20*time.Second)

	var appended, done sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		appended.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			gsn, err := l.Append(Record{Epoch: 1, Data: []byte("commit")})
			appended.Done()
			if err == nil {
				err = l.WaitDurable(ctx, gsn)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	appended.Wait()
	<-gate.entered // a committer's WaitDurable started the first sync
	if d := l.DurableGSN(); d != 0 {
		t.Fatalf("durable %d while the first sync is held", d)
	}
	gate.open()
	done.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.DurableGSN != n || st.SyncedRecords != n {
		t.Fatalf("durable %d, synced records %d, want %d", st.DurableGSN, st.SyncedRecords, n)
	}
	if st.Fsyncs > 2 {
		t.Fatalf("%d fdatasyncs for %d concurrent committers, want at most 2", st.Fsyncs, n)
	}
	if st.MaxBatch < n/2 {
		t.Fatalf("largest batch %d, want at least %d", st.MaxBatch, n/2)
	}
	t.Logf("%d committers, %d fdatasyncs, %.1f records per fdatasync", n, st.Fsyncs, st.RecordsPerFsync())
}

// TestGroupCommitFreeRunning runs real committers with real fdatasyncs and
// checks correctness, reporting the batching it got.
func TestGroupCommitFreeRunning(t *testing.T) {
	const writers, each = 16, 25
	l := openLog(t, t.TempDir(), Options{Mode: Strict})
	ctx := ctxTimeout(t, 20*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				gsn, err := l.Append(Record{Epoch: 1, Data: []byte("commit")})
				if err == nil {
					err = l.WaitDurable(ctx, gsn)
				}
				if err == nil && l.DurableGSN() < gsn {
					err = errors.New("WaitDurable returned before the record was durable")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.DurableGSN != writers*each || st.SyncedRecords != writers*each {
		t.Fatalf("durable %d synced %d, want %d", st.DurableGSN, st.SyncedRecords, writers*each)
	}
	if st.Fsyncs >= st.Appends {
		t.Fatalf("%d fdatasyncs for %d appends by %d writers: no group commit", st.Fsyncs, st.Appends, writers)
	}
	t.Logf("%d appends, %d fdatasyncs, %.1f records per fdatasync, mean fdatasync %v",
		st.Appends, st.Fsyncs, st.RecordsPerFsync(), st.FsyncTime/time.Duration(st.Fsyncs))
}

// TestRelaxedFlushInterval uses a fake clock (testing/synctest): in relaxed
// mode WaitDurable returns without waiting, nothing is synced before the
// interval has passed, and everything is synced once it has.
func TestRelaxedFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 250 * time.Millisecond
		l := openLog(t, t.TempDir(), Options{Mode: Relaxed, FlushInterval: interval})
		start := time.Now()
		appendN(t, l, 10, 1)
		if err := l.WaitDurable(t.Context(), 10); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("relaxed WaitDurable waited %v", waited)
		}
		synctest.Wait()
		if d := l.DurableGSN(); d != 0 {
			t.Fatalf("synced to %d before the interval elapsed", d)
		}
		time.Sleep(interval)
		synctest.Wait()
		if d := l.DurableGSN(); d != 10 {
			t.Fatalf("durable %d one interval after appending, want 10", d)
		}
		appendN(t, l, 5, 1)
		time.Sleep(interval)
		synctest.Wait()
		st := l.Stats()
		if st.DurableGSN != 15 || st.Fsyncs != 2 {
			t.Fatalf("durable %d after %d fdatasyncs, want 15 after 2", st.DurableGSN, st.Fsyncs)
		}
	})
}

// TestRelaxedRealClock checks the same with the real clock and generous
// bounds: callers do not wait even while the disk is stuck, and the
// background flush happens soon after.
func TestRelaxedRealClock(t *testing.T) {
	gate := newSyncGate()
	l := openLog(t, t.TempDir(), Options{Mode: Relaxed, FlushInterval: 5 * time.Millisecond, syncHook: gate.hook})
	appendN(t, l, 100, 1)
	<-gate.entered // the background flush started and is stuck
	ctx := ctxTimeout(t, 10*time.Second)
	for gsn := uint64(1); gsn <= 100; gsn++ {
		if err := l.WaitDurable(ctx, gsn); err != nil {
			t.Fatal(err)
		}
	}
	if l.DurableGSN() != 0 {
		t.Fatal("durable before the stuck sync finished")
	}
	gate.open()
	waitFor(t, "the background flush", func() bool { return l.DurableGSN() == 100 })
}

func TestSyncForcesFlushInRelaxedMode(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{Mode: Relaxed, FlushInterval: time.Hour})
	appendN(t, l, 7, 1)
	if l.DurableGSN() != 0 {
		t.Fatal("synced early")
	}
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l.DurableGSN() != 7 {
		t.Fatalf("Sync left durable at %d", l.DurableGSN())
	}
}

func TestAdaptiveSwitching(t *testing.T) {
	var hold atomic.Bool
	release := make(chan struct{})
	hook := func() error {
		if hold.Load() {
			<-release
		}
		return nil
	}
	var logBuf syncBuffer
	l := openLog(t, t.TempDir(), Options{Mode: Adaptive, FlushInterval: time.Hour, syncHook: hook, Logger: newTextLogger(&logBuf)})
	ctx := t.Context()

	// Alone: strict.
	if m := l.EffectiveMode(); m != Strict {
		t.Fatalf("adaptive without a standby is %v, want strict", m)
	}
	appendN(t, l, 1, 1)
	if err := l.WaitDurable(ctx, 1); err != nil || l.DurableGSN() != 1 {
		t.Fatalf("strict WaitDurable: %v, durable %d", err, l.DurableGSN())
	}
	hold.Store(true) // the disk gets stuck
	appendN(t, l, 1, 1)
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	err := l.WaitDurable(short, 2)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("strict WaitDurable on a stuck disk = %v, want DeadlineExceeded", err)
	}

	// A standby attaches: relaxed, commits stop waiting for the disk.
	l.SetStandbyAttached(true)
	l.SetStandbyAttached(true) // no change, no switch
	if m := l.EffectiveMode(); m != Relaxed {
		t.Fatalf("adaptive with a standby is %v, want relaxed", m)
	}
	appendN(t, l, 1, 1)
	for gsn := uint64(2); gsn <= 3; gsn++ {
		if err := l.WaitDurable(ctx, gsn); err != nil {
			t.Fatalf("relaxed WaitDurable(%d): %v", gsn, err)
		}
	}
	if l.DurableGSN() != 1 {
		t.Fatal("the stuck disk synced")
	}

	// The standby goes away: strict again, and the backlog is flushed at
	// once without anyone waiting (the flush interval is an hour).
	l.SetStandbyAttached(false)
	if m := l.EffectiveMode(); m != Strict {
		t.Fatalf("after detach: %v, want strict", m)
	}
	hold.Store(false)
	close(release)
	waitFor(t, "the flush on switching to strict", func() bool { return l.DurableGSN() == 3 })

	st := l.Stats()
	if st.ModeSwitches != 2 || st.Mode != Adaptive || st.EffectiveMode != Strict || st.StandbyAttached {
		t.Fatalf("stats after attach+detach: %+v", st)
	}
	out := logBuf.String()
	if n := strings.Count(out, "durability switched"); n != 2 {
		t.Errorf("%d switches logged, want 2:\n%s", n, out)
	}
	for _, want := range []string{
		`from=strict to=relaxed reason="standby attached"`,
		`from=relaxed to=strict reason="standby detached"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}

	// Run-time mode changes count too.
	tests := []struct {
		set       Mode
		attached  bool
		effective Mode
		switches  uint64
	}{
		{Relaxed, false, Relaxed, 3},
		{Strict, false, Strict, 4},
		{Adaptive, false, Strict, 4},
		{Adaptive, true, Relaxed, 5},
		{Strict, true, Strict, 6},
	}
	for _, tt := range tests {
		l.SetStandbyAttached(tt.attached)
		if err := l.SetMode(tt.set); err != nil {
			t.Fatal(err)
		}
		if l.Mode() != tt.set || l.EffectiveMode() != tt.effective || l.Stats().ModeSwitches != tt.switches {
			t.Fatalf("SetMode(%v) attached=%v: mode %v effective %v switches %d; want effective %v switches %d",
				tt.set, tt.attached, l.Mode(), l.EffectiveMode(), l.Stats().ModeSwitches, tt.effective, tt.switches)
		}
	}
	if err := l.SetMode(Mode(7)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SetMode(7) = %v, want ErrInvalid", err)
	}
}
