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
				out, err := appendValue(buf[:0], tv.oid, 1, tv.v)
				if err != nil {
					errs <- err
					return
				}
				buf = out
				if _, err := decodeParam(tv.oid, 1, out); err != nil {
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
