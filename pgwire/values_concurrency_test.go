package pgwire

import (
	"sync"
	"testing"
	"time"
)

// TestValuesConcurrentSessions: many sessions encode binary results and
// decode binary parameters at once. pgtype.Map caches plans in plain maps;
// sharing one between sessions crashed a node ("fatal error: concurrent map
// writes") under TM1. The runtime detects such writes without -race.
func TestValuesConcurrentSessions(t *testing.T) {
	values := []struct {
		oid uint32
		v   any
	}{
		{OIDInt8, int64(42)}, {OIDInt4, int64(7)}, {OIDInt2, int64(3)}, {OIDFloat8, 1.5},
		{OIDText, "x"}, {OIDBool, int64(1)}, {OIDBytea, []byte{1, 2}}, {OIDNumeric, 2.25},
		{OIDTimestamp, time.Unix(0, 0).UTC()}, {OIDDate, time.Unix(0, 0).UTC()},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var buf []byte
			for i := 0; i < 2000; i++ {
				tv := values[(g+i)%len(values)]
				out, err := appendValue(buf[:0], tv.oid, 1, tv.v, time.UTC)
				if err != nil {
					errs <- err
					return
				}
				buf = out
				if _, err := decodeParam(tv.oid, 1, out, time.UTC); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Floats print as PostgreSQL's float8out and float4out print them.
func TestAppendFloat(t *testing.T) {
	for _, c := range []struct {
		x    float64
		bits int
		want string
	}{
		{123456789.123, 64, "123456789.123"},
		{1234567, 64, "1234567"},
		{123456789012345, 64, "123456789012345"},
		{1234567890123456, 64, "1.234567890123456e+15"},
		{1e20, 64, "1e+20"},
		{0.0001, 64, "0.0001"},
		{0.00001, 64, "1e-05"},
		{1e-7, 64, "1e-07"},
		{0.30000000000000004, 64, "0.30000000000000004"},
		{-2.5, 64, "-2.5"},
		{0, 64, "0"},
		{float64(float32(1.1)), 32, "1.1"},
		{123456, 32, "123456"},
		{1234567, 32, "1.234567e+06"},
	} {
		if got := string(AppendFloat(nil, c.x, c.bits)); got != c.want {
			t.Errorf("AppendFloat(%v, %d) = %s, want %s", c.x, c.bits, got, c.want)
		}
	}
}
