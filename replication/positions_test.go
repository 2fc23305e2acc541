package replication

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

func TestWaitApplied(t *testing.T) {
	a := &Agent{id: "n2"}
	a.setApplied(5)
	ctx := context.Background()
	if err := a.WaitApplied(ctx, 5, time.Millisecond); err != nil {
		t.Fatalf("already applied: %v", err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		a.setApplied(6)
		time.Sleep(20 * time.Millisecond)
		a.setApplied(7)
	}()
	start := time.Now()
	if err := a.WaitApplied(ctx, 7, 5*time.Second); err != nil {
		t.Fatalf("wait for 7: %v", err)
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Errorf("returned before GSN 7 was applied")
	}
	if err := a.WaitApplied(ctx, 9, 30*time.Millisecond); err == nil {
		t.Errorf("GSN 9 is not applied: want an error after the wait")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.WaitApplied(cctx, 9, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestTestApplyDelay(t *testing.T) {
	for _, tc := range []struct {
		env, id string
		want    time.Duration
	}{
		{"", "n2", 0},
		{"15ms", "n2", 15 * time.Millisecond},
		{"n2=20ms", "n2", 20 * time.Millisecond},
		{"n2=20ms", "n1", 0},
		{"n1=5ms, n2=7ms", "n2", 7 * time.Millisecond},
		{"n2=soon", "n2", 0},
	} {
		t.Setenv("TANDEM_TEST_APPLY_DELAY", tc.env)
		if got := testApplyDelay(tc.id, slog.Default()); got != tc.want {
			t.Errorf("%q for %s: %v; want %v", tc.env, tc.id, got, tc.want)
		}
	}
}
