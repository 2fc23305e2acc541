package replog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// buildLog writes n records (epoch 1) into a fresh directory, closes it and
// returns the directory and the offset of the last record in the last
// segment.
func buildLog(t *testing.T, n int, opts Options) (dir string, lastOff int64) {
	t.Helper()
	dir = t.TempDir()
	l := openLog(t, dir, opts)
	appendN(t, l, n-1, 1)
	lastOff = l.active.size.Load()
	if l.Stats().Segments != len(segmentPaths(t, dir)) {
		t.Fatal("segment count mismatch")
	}
	appendN(t, l, 1, 1)
	if l.active.size.Load() < lastOff { // the last append rolled over
		lastOff = headerSize
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, lastOff
}

// TestTornTailEveryOffset cuts the last record at every byte offset and
// checks that recovery keeps exactly the records before it and reports
// the bytes it dropped.
func TestTornTailEveryOffset(t *testing.T) {
	const n = 40
	for _, segSize := range []int64{DefaultSegmentSize, 1 << 10} {
		pristine, lastOff := buildLog(t, n, Options{SegmentSize: segSize})
		seg := filepath.Base(lastSegment(t, pristine))
		fi, err := os.Stat(filepath.Join(pristine, seg))
		if err != nil {
			t.Fatal(err)
		}
		end := fi.Size()
		if want := lastOff + recordHeaderSize + int64(len(payload(n))); end != want {
			t.Fatalf("last record spans %d..%d, file ends at %d", lastOff, want, end)
		}
		for cut := lastOff; cut <= end; cut++ {
			dir := copyDir(t, pristine)
			if err := os.Truncate(filepath.Join(dir, seg), cut); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, Options{Logger: quiet, SegmentSize: segSize})
			if err != nil {
				t.Fatalf("cut at %d: Open: %v", cut, err)
			}
			wantLast := uint64(n - 1)
			wantDropped := cut - lastOff
			if cut == end {
				wantLast, wantDropped = n, 0
			}
			rec := l.Recovered()
			if l.LastGSN() != wantLast || l.DurableGSN() != wantLast || rec.DroppedBytes != wantDropped {
				t.Fatalf("cut at %d of %d..%d: last %d durable %d dropped %d; want last %d dropped %d",
					cut, lastOff, end, l.LastGSN(), l.DurableGSN(), rec.DroppedBytes, wantLast, wantDropped)
			}
			if wantDropped > 0 && rec.Reason != recordTorn.String() {
				t.Fatalf("cut at %d: reason %q", cut, rec.Reason)
			}
			checkRecords(t, readAll(t, l, 1), 1, wantLast)
			// The log is usable: the lost record can be appended again.
			if wantLast == n-1 {
				appendN(t, l, 1, 1)
			}
			l.Close()
			// and everything is there after another reopen, with no drop.
			l2, err := Open(dir, Options{Logger: quiet, SegmentSize: segSize})
			if err != nil {
				t.Fatal(err)
			}
			if l2.Recovered().DroppedBytes != 0 {
				t.Fatalf("cut at %d: second reopen dropped %d bytes", cut, l2.Recovered().DroppedBytes)
			}
			checkRecords(t, readAll(t, l2, 1), 1, n)
			l2.Close()
		}
	}
}

func TestCorruptTail(t *testing.T) {
	const n = 20
	pristine, lastOff := buildLog(t, n, Options{})
	seg := filepath.Base(lastSegment(t, pristine))
	tests := []struct {
		name     string
		damage   func(b []byte) []byte
		wantLast uint64
		reason   recordStatus
	}{
		{"flipped payload byte", func(b []byte) []byte { b[lastOff+recordHeaderSize+3] ^= 0x40; return b }, n - 1, recordBadSum},
		{"flipped checksum", func(b []byte) []byte { b[lastOff+4] ^= 1; return b }, n - 1, recordBadSum},
		{"flipped GSN", func(b []byte) []byte { b[lastOff+8] ^= 1; return b }, n - 1, recordBadSum},
		{"flipped epoch", func(b []byte) []byte { b[lastOff+16] ^= 1; return b }, n - 1, recordBadSum},
		{"length too big", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[lastOff:], 1<<30); return b }, n - 1, recordTorn},
		{"length too small", func(b []byte) []byte { b[lastOff]--; return b }, n - 1, recordBadSum},
		{"zeroed tail (extended, never written)", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, n, recordBadSum},
		{"garbage after the last record", func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xA5}, 100)...) }, n, recordTorn},
		{"zeroed last record", func(b []byte) []byte { clear(b[lastOff:]); return b }, n - 1, recordBadSum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyDir(t, pristine)
			p := filepath.Join(dir, seg)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			size := int64(len(b))
			b = tt.damage(b)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var logBuf syncBuffer
			l := openLog(t, dir, Options{Logger: newTextLogger(&logBuf)})
			if l.LastGSN() != tt.wantLast {
				t.Fatalf("LastGSN = %d, want %d", l.LastGSN(), tt.wantLast)
			}
			wantDropped := int64(len(b)) - lastOff
			if tt.wantLast == n {
				wantDropped = int64(len(b)) - size
			}
			if r := l.Recovered(); r.DroppedBytes != wantDropped || r.Reason != tt.reason.String() {
				t.Fatalf("Recovered = %+v, want %d bytes dropped for %q", r, wantDropped, tt.reason)
			}
			if l.Stats().RecoveredDroppedBytes != wantDropped {
				t.Fatal("Stats.RecoveredDroppedBytes disagrees")
			}
			if !strings.Contains(logBuf.String(), "truncated torn tail") {
				t.Fatalf("recovery not logged: %q", logBuf.String())
			}
			checkRecords(t, readAll(t, l, 1), 1, tt.wantLast)
			if fi, _ := os.Stat(p); fi.Size() != int64(len(b))-wantDropped {
				t.Fatalf("file is %d bytes after recovery, want %d", fi.Size(), int64(len(b))-wantDropped)
			}
		})
	}
}

// TestDamageThatIsNotATornTail: a damaged sealed segment or header, or a
// checksummed record out of order, is refused rather than cut away.
func TestDamageThatIsNotATornTail(t *testing.T) {
	opts := Options{SegmentSize: 1 << 10}
	pristine, _ := buildLog(t, 200, opts)
	segs := segmentPaths(t, pristine)
	if len(segs) < 4 {
		t.Fatalf("need several segments, have %d", len(segs))
	}
	name := func(i int) string { return filepath.Base(segs[i]) }
	rewrite := func(dir, file string, f func([]byte) []byte) {
		p := filepath.Join(dir, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		damage  func(dir string)
		openErr error // nil: Open succeeds and reading hits readErr
		readErr error
	}{
		{"sealed segment record flipped", func(dir string) {
			rewrite(dir, name(1), func(b []byte) []byte { b[headerSize+recordHeaderSize] ^= 1; return b })
		}, nil, ErrCorrupt},
		{"sealed segment truncated", func(dir string) {
			rewrite(dir, name(1), func(b []byte) []byte { return b[:len(b)-1] })
		}, nil, ErrCorrupt},
		{"sealed segment header", func(dir string) {
			rewrite(dir, name(1), func(b []byte) []byte { b[20] ^= 1; return b })
		}, ErrCorrupt, nil},
		{"bad magic", func(dir string) {
			rewrite(dir, name(0), func(b []byte) []byte { b[0] = 'X'; return b })
		}, ErrCorrupt, nil},
		{"future version", func(dir string) {
			rewrite(dir, name(2), func(b []byte) []byte { b[8] = 2; return b })
		}, ErrVersion, nil},
		{"header base disagrees with name", func(dir string) {
			os.Rename(filepath.Join(dir, name(2)), filepath.Join(dir, segmentName(999999)))
		}, ErrCorrupt, nil},
		{"missing middle segment", func(dir string) { os.Remove(filepath.Join(dir, name(1))) }, ErrCorrupt, nil},
		{"checksummed record with the wrong GSN in the tail", func(dir string) {
			rewrite(dir, name(len(segs)-1), func(b []byte) []byte { return appendRecord(b, 5, 1, []byte("x")) })
		}, ErrCorrupt, nil},
		{"checksummed record with an older epoch in the tail", func(dir string) {
			rewrite(dir, name(len(segs)-1), func(b []byte) []byte { return appendRecord(b, 201, 0, []byte("x")) })
		}, ErrCorrupt, nil},
		{"last segment with a bad header and records", func(dir string) {
			rewrite(dir, name(len(segs)-1), func(b []byte) []byte { b[3] ^= 1; return b })
		}, ErrCorrupt, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyDir(t, pristine)
			tt.damage(dir)
			l, err := Open(dir, Options{Logger: quiet, SegmentSize: opts.SegmentSize})
			if tt.openErr != nil {
				if !errors.Is(err, tt.openErr) {
					t.Fatalf("Open = %v, want %v", err, tt.openErr)
				}
				// The lock was released: a repaired directory opens.
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer l.Close()
			it, err := l.ReadFrom(1)
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			for {
				_, ok, err := it.TryNext()
				if err != nil {
					if !errors.Is(err, tt.readErr) {
						t.Fatalf("read error %v, want %v", err, tt.readErr)
					}
					if _, _, again := it.TryNext(); again == nil {
						t.Fatal("iterator errors must be sticky")
					}
					return
				}
				if !ok {
					t.Fatal("read the whole damaged log without an error")
				}
			}
		})
	}
}

func TestTornSegmentHeader(t *testing.T) {
	t.Run("after rollover", func(t *testing.T) {
		opts := Options{SegmentSize: 1 << 10}
		pristine, _ := buildLog(t, 100, opts)
		segs := segmentPaths(t, pristine)
		for _, size := range []int64{0, 7, headerSize - 1, headerSize} {
			dir := copyDir(t, pristine)
			last := filepath.Join(dir, filepath.Base(segs[len(segs)-1]))
			b, _ := os.ReadFile(last)
			var lastRecs []Record
			{ // how many records the last segment held
				l := openLog(t, copyDir(t, pristine), opts)
				lastRecs = readAll(t, l, l.segs[len(l.segs)-1].base)
				l.Close()
			}
			hdr := b[:headerSize:headerSize]
			damaged := append([]byte(nil), hdr[:size]...)
			if size == headerSize {
				damaged[30] ^= 1 // header-sized, checksum fails
			}
			if err := os.WriteFile(last, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, Options{Logger: quiet, SegmentSize: opts.SegmentSize})
			if err != nil {
				t.Fatalf("header cut to %d: %v", size, err)
			}
			want := uint64(100 - len(lastRecs))
			r := l.Recovered()
			if l.LastGSN() != want || len(r.RemovedSegments) != 1 || r.DroppedBytes != size {
				t.Fatalf("header cut to %d: last %d (want %d), recovery %+v", size, l.LastGSN(), want, r)
			}
			appendN(t, l, int(100-want), 1) // rolls over into a re-created segment
			checkRecords(t, readAll(t, l, 1), 1, 100)
			l.Close()
		}
	})
	t.Run("only segment", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, Options{FirstGSN: 50})
		l.Close()
		p := lastSegment(t, dir)
		if err := os.Truncate(p, 3); err != nil {
			t.Fatal(err)
		}
		l2 := openLog(t, dir, Options{})
		if l2.FirstGSN() != 50 || l2.LastGSN() != 49 {
			t.Fatalf("re-created log: first %d last %d, want 50, 49", l2.FirstGSN(), l2.LastGSN())
		}
		appendN(t, l2, 3, 0)
		checkRecords(t, readAll(t, l2, 50), 50, 52)
	})
}
