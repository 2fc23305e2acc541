package bench

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestDialectSyncSerial(t *testing.T) {
	tests := []struct {
		d    Dialect
		want string
	}{
		{DialectPostgres, "SELECT setval(pg_get_serial_sequence('orders', 'o_id'), coalesce(max(o_id), 0) + 1, false) FROM orders"},
		{DialectSQLite, "SELECT setval(pg_get_serial_sequence('orders', 'o_id'), coalesce(max(o_id), 0) + 1, false) FROM orders"},
	}
	for _, tc := range tests {
		if got := tc.d.SyncSerial("orders", "o_id"); got != tc.want {
			t.Errorf("%s: SyncSerial = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestThinkTime: fixed think times are the mean; exponential ones have the
// mean and the spread of an exponential distribution (standard deviation =
// mean; P(X > mean) = 1/e).
func TestThinkTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	if d := thinkTime(900*time.Millisecond, ThinkFixed, rng); d != 900*time.Millisecond {
		t.Fatalf("fixed think time %s", d)
	}
	const n = 100000
	mean := 900 * time.Millisecond
	var sum, sq float64
	above := 0
	for range n {
		d := thinkTime(mean, ThinkExponential, rng)
		if d < 0 {
			t.Fatalf("negative think time %s", d)
		}
		x := d.Seconds()
		sum += x
		sq += x * x
		if d > mean {
			above++
		}
	}
	m := sum / n
	sd := math.Sqrt(sq/n - m*m)
	if math.Abs(m-0.9) > 5*0.9/math.Sqrt(n) {
		t.Errorf("mean %.4f s, want 0.9", m)
	}
	if math.Abs(sd-0.9) > 0.02 {
		t.Errorf("standard deviation %.4f s, want 0.9", sd)
	}
	if p := float64(above) / n; math.Abs(p-1/math.E) > 0.01 {
		t.Errorf("P(think > mean) = %.4f, want %.4f", p, 1/math.E)
	}
}
