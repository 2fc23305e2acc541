package replog

import (
	"errors"
	"testing"
)

// bases returns the base GSN of every retained segment.
func bases(l *Log) []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []uint64
	for _, s := range l.segs {
		out = append(out, s.base)
	}
	return out
}

// floorBase returns the largest base <= gsn.
func floorBase(bs []uint64, gsn uint64) uint64 {
	var b uint64
	for _, x := range bs {
		if x <= gsn {
			b = x
		}
	}
	return b
}

func TestTrimBefore(t *testing.T) {
	const n = 300
	tests := []struct {
		name          string
		opts          Options
		trim          uint64
		wantFirstUpTo uint64 // the first retained GSN is the base of the segment holding this GSN
	}{
		{"plain", Options{}, 150, 150},
		{"nothing old enough", Options{}, 1, 1},
		{"everything but the active segment", Options{}, n + 1, n + 1},
		{"retain records", Options{RetainRecords: 100}, n, n - 100 + 1},
		{"retain records larger than the log", Options{RetainRecords: 5000}, n, 1},
		{"retain records below the trim point", Options{RetainRecords: 10}, 120, 120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.opts.SegmentSize = 2 << 10
			l := openLog(t, dir, tt.opts)
			appendN(t, l, n, 1)
			before := bases(l)
			want := floorBase(before, tt.wantFirstUpTo)
			removed, err := l.TrimBefore(tt.trim)
			if err != nil {
				t.Fatal(err)
			}
			if l.FirstGSN() != want {
				t.Fatalf("FirstGSN = %d, want %d", l.FirstGSN(), want)
			}
			if got := len(before) - len(bases(l)); removed != got || len(segmentPaths(t, dir)) != len(bases(l)) {
				t.Fatalf("removed %d, segments went %d -> %d, files %d", removed, len(before), len(bases(l)), len(segmentPaths(t, dir)))
			}
			if st := l.Stats(); st.TrimmedSegments != uint64(removed) || st.FirstGSN != want {
				t.Fatalf("stats: %+v", st)
			}
			if want > 1 {
				if _, err := l.ReadFrom(want - 1); !errors.Is(err, ErrTrimmed) {
					t.Fatalf("ReadFrom(%d) = %v, want ErrTrimmed", want-1, err)
				}
			}
			checkRecords(t, readAll(t, l, want), want, n)
			// Trimming again at the same point removes nothing.
			if again, err := l.TrimBefore(tt.trim); err != nil || again != 0 {
				t.Fatalf("second TrimBefore = %d, %v", again, err)
			}
			// The log goes on, and a reopen sees the trimmed state.
			appendN(t, l, 5, 1)
			l.Close()
			l2 := openLog(t, dir, tt.opts)
			if l2.FirstGSN() != want || l2.LastGSN() != n+5 {
				t.Fatalf("after reopen: first %d last %d", l2.FirstGSN(), l2.LastGSN())
			}
			checkRecords(t, readAll(t, l2, want), want, n+5)
		})
	}
}

func TestTrimRetainBytes(t *testing.T) {
	const retain = 8 << 10
	l := openLog(t, t.TempDir(), Options{SegmentSize: 2 << 10, RetainBytes: retain})
	appendN(t, l, 300, 1)
	if _, err := l.TrimBefore(1 << 62); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.Bytes < retain {
		t.Fatalf("kept %d bytes, below the %d floor", st.Bytes, retain)
	}
	l.mu.Lock()
	oldest := l.segs[0].size.Load()
	l.mu.Unlock()
	if st.Bytes-oldest >= retain {
		t.Fatalf("kept %d bytes: the oldest segment (%d bytes) could have gone", st.Bytes, oldest)
	}
	checkRecords(t, readAll(t, l, st.FirstGSN), st.FirstGSN, 300)
}

// TestTrimUnderReaders: a reader inside a trimmed segment finishes it, then
// learns it was overtaken (ErrTrimmed); a reader past the trim point is not
// disturbed.
func TestTrimUnderReaders(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSize: 2 << 10})
	appendN(t, l, 300, 1)
	behind, err := l.ReadFrom(1)
	if err != nil {
		t.Fatal(err)
	}
	defer behind.Close()
	rec, ok, err := behind.TryNext()
	if !ok || err != nil || rec.GSN != 1 {
		t.Fatalf("first record: %+v %v %v", rec, ok, err)
	}
	ahead, err := l.ReadFrom(280)
	if err != nil {
		t.Fatal(err)
	}
	defer ahead.Close()

	if _, err := l.TrimBefore(250); err != nil {
		t.Fatal(err)
	}
	// The reader behind still has its (now unlinked) segment open.
	var got uint64 = 1
	for {
		rec, ok, err := behind.TryNext()
		if err != nil {
			if !errors.Is(err, ErrTrimmed) {
				t.Fatalf("reader behind: %v, want ErrTrimmed", err)
			}
			break
		}
		if !ok {
			t.Fatal("reader behind caught up through trimmed segments")
		}
		got++
		if rec.GSN != got {
			t.Fatalf("reader behind got GSN %d, want %d", rec.GSN, got)
		}
	}
	if got < 2 || got >= l.FirstGSN() {
		t.Fatalf("reader behind read up to %d (first retained %d)", got, l.FirstGSN())
	}
	var aheadRecs []Record
	for {
		rec, ok, err := ahead.TryNext()
		if err != nil {
			t.Fatalf("reader ahead: %v", err)
		}
		if !ok {
			break
		}
		aheadRecs = append(aheadRecs, rec)
	}
	checkRecords(t, aheadRecs, 280, 300)
}
