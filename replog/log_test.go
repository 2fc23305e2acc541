package replog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAppendReadReopen(t *testing.T) {
	for _, mode := range []Mode{Strict, Relaxed, Adaptive} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, Options{Mode: mode, SegmentSize: 4 << 10})
			if got := l.LastGSN(); got != 0 {
				t.Fatalf("empty log LastGSN = %d", got)
			}
			appendN(t, l, 300, 1)
			appendN(t, l, 200, 2)
			if err := l.WaitDurable(t.Context(), 500); err != nil {
				t.Fatal(err)
			}
			checkRecords(t, readAll(t, l, 1), 1, 500)
			checkRecords(t, readAll(t, l, 377), 377, 500)
			st := l.Stats()
			if st.Segments < 5 {
				t.Fatalf("expected rollovers at 4 KiB, got %d segments", st.Segments)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}

			l2 := openLog(t, dir, Options{Mode: mode, SegmentSize: 4 << 10})
			if l2.LastGSN() != 500 || l2.DurableGSN() != 500 || l2.LastEpoch() != 2 || l2.FirstGSN() != 1 {
				t.Fatalf("after reopen: last %d durable %d epoch %d first %d", l2.LastGSN(), l2.DurableGSN(), l2.LastEpoch(), l2.FirstGSN())
			}
			if r := l2.Recovered(); r.DroppedBytes != 0 || r.Reason != "" {
				t.Fatalf("clean reopen dropped bytes: %+v", r)
			}
			if st2 := l2.Stats(); st2.Segments != st.Segments || st2.Bytes != st.Bytes {
				t.Fatalf("segments/bytes changed across reopen: %d/%d -> %d/%d", st.Segments, st.Bytes, st2.Segments, st2.Bytes)
			}
			checkRecords(t, readAll(t, l2, 1), 1, 500)
			if _, err := l2.Append(Record{GSN: 501, Epoch: 1}); !errors.Is(err, ErrStaleEpoch) {
				t.Fatalf("stale epoch after reopen: %v", err)
			}
			appendN(t, l2, 10, 2)
			checkRecords(t, readAll(t, l2, 495), 495, 510)
		})
	}
}

func TestAppendRefusals(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{MaxRecordSize: 100})
	appendN(t, l, 5, 3)
	tests := []struct {
		name    string
		rec     Record
		wantErr error
	}{
		{"gap", Record{GSN: 7, Epoch: 3}, ErrGap},
		{"repeat", Record{GSN: 5, Epoch: 3}, ErrGap},
		{"older", Record{GSN: 1, Epoch: 3}, ErrGap},
		{"stale epoch", Record{GSN: 6, Epoch: 2}, ErrStaleEpoch},
		{"too large", Record{GSN: 6, Epoch: 3, Data: make([]byte, 101)}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := l.Append(tt.rec); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Append(%d, epoch %d) = %v, want %v", tt.rec.GSN, tt.rec.Epoch, err, tt.wantErr)
			}
			if l.LastGSN() != 5 || l.LastEpoch() != 3 {
				t.Fatalf("a refused append changed the log: last %d epoch %d", l.LastGSN(), l.LastEpoch())
			}
		})
	}
	// Accepted: the next GSN at the same or a newer epoch, GSN 0 = next.
	for _, rec := range []Record{{GSN: 6, Epoch: 3}, {GSN: 7, Epoch: 4}, {GSN: 0, Epoch: 4, Data: make([]byte, 100)}} {
		gsn, err := l.Append(rec)
		if err != nil {
			t.Fatalf("Append(%d): %v", rec.GSN, err)
		}
		if gsn != l.LastGSN() {
			t.Fatalf("Append returned %d, LastGSN %d", gsn, l.LastGSN())
		}
	}
	if l.LastGSN() != 8 {
		t.Fatalf("LastGSN = %d, want 8", l.LastGSN())
	}
	if err := l.WaitDurable(t.Context(), 9); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("WaitDurable beyond the end = %v, want ErrOutOfRange", err)
	}
	l.Close()
	if _, err := l.Append(Record{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
	if _, err := l.ReadFrom(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("ReadFrom after Close = %v, want ErrClosed", err)
	}
	if _, err := l.TrimBefore(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("TrimBefore after Close = %v, want ErrClosed", err)
	}
}

func TestFirstGSNAndEpochOfNewLog(t *testing.T) {
	dir := t.TempDir()
	opts := Options{FirstGSN: 1001, FirstEpoch: 5, SegmentSize: 1 << 10}
	l := openLog(t, dir, opts)
	if l.FirstGSN() != 1001 || l.LastGSN() != 1000 || l.LastEpoch() != 5 {
		t.Fatalf("new log: first %d last %d epoch %d", l.FirstGSN(), l.LastGSN(), l.LastEpoch())
	}
	if _, err := l.Append(Record{GSN: 1, Epoch: 5}); !errors.Is(err, ErrGap) {
		t.Fatalf("GSN 1 in a log starting at 1001: %v", err)
	}
	if _, err := l.Append(Record{GSN: 1001, Epoch: 4}); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("epoch below FirstEpoch: %v", err)
	}
	if _, err := l.ReadFrom(1000); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("ReadFrom before the first GSN = %v, want ErrTrimmed", err)
	}
	// Fill exactly to a rollover so the active segment is empty, with a
	// newer epoch: the epoch floor must survive a reopen via the header.
	for l.Stats().Segments < 2 {
		if _, err := l.Append(Record{Epoch: 7, Data: make([]byte, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	last := l.LastGSN()
	l.Close()
	// The segment is not empty (the append went into it); cut it back to
	// its header to get an empty active segment created at epoch 7.
	p := lastSegment(t, dir)
	if err := os.Truncate(p, headerSize); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, Options{FirstGSN: 1, FirstEpoch: 0}) // ignored for an existing log
	if l2.FirstGSN() != 1001 || l2.LastGSN() != last-1 || l2.LastEpoch() != 7 {
		t.Fatalf("reopen: first %d last %d (want %d) epoch %d", l2.FirstGSN(), l2.LastGSN(), last-1, l2.LastEpoch())
	}
	if _, err := l2.Append(Record{Epoch: 6}); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("epoch floor lost across an empty segment: %v", err)
	}
}

func TestReadFromBounds(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	appendN(t, l, 3, 1)
	if _, err := l.ReadFrom(0); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("ReadFrom(0) = %v, want ErrTrimmed", err)
	}
	if _, err := l.ReadFrom(5); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("ReadFrom(last+2) = %v, want ErrOutOfRange", err)
	}
	it, err := l.ReadFrom(4)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if _, ok, err := it.TryNext(); ok || err != nil {
		t.Fatalf("TryNext at the end = %v, %v", ok, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := it.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with nothing to read = %v, want DeadlineExceeded", err)
	}
	appendN(t, l, 1, 1) // the iterator is still usable after a ctx error
	rec, err := it.Next(t.Context())
	if err != nil || rec.GSN != 4 || !bytes.Equal(rec.Data, payload(4)) {
		t.Fatalf("Next = %+v, %v", rec, err)
	}
	it.Close()
	if _, err := it.Next(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close = %v, want ErrClosed", err)
	}
}

func TestReadFromAcrossRolloverWhileAppending(t *testing.T) {
	const n = 3000
	l := openLog(t, t.TempDir(), Options{SegmentSize: 4 << 10, Mode: Relaxed})
	ctx := ctxTimeout(t, 30*time.Second)

	// Every 97th record is larger than a segment.
	content := func(gsn uint64) []byte {
		if gsn%97 == 0 {
			return bytes.Repeat(payload(gsn+1), 100)
		}
		return payload(gsn)
	}

	// A reader following from the very start, before anything exists.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	follow := func(from uint64) {
		defer wg.Done()
		it, err := l.ReadFrom(from)
		if err != nil {
			errs <- err
			return
		}
		defer it.Close()
		for want := from; want <= n; want++ {
			rec, err := it.Next(ctx)
			if err != nil {
				errs <- err
				return
			}
			if rec.GSN != want || rec.Epoch != 1+want/1000 || !bytes.Equal(rec.Data, content(want)) {
				errs <- errors.New("wrong record")
				t.Errorf("reader from %d: got GSN %d epoch %d, want GSN %d epoch %d", from, rec.GSN, rec.Epoch, want, 1+want/1000)
				return
			}
		}
	}
	wg.Add(1)
	go follow(1)

	started := make(chan struct{})
	go func() {
		for gsn := uint64(1); gsn <= n; gsn++ {
			if _, err := l.Append(Record{GSN: gsn, Epoch: 1 + gsn/1000, Data: content(gsn)}); err != nil {
				errs <- err
				return
			}
			if gsn == n/2 {
				close(started)
			}
		}
	}()
	// A reader joining mid-stream, from a record in a sealed segment.
	<-started
	wg.Add(2)
	go follow(700)
	go follow(l.LastGSN() + 1)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d segments", l.Stats().Segments)
	if segs := l.Stats().Segments; segs < 50 {
		t.Fatalf("only %d segments: the test did not exercise rollover", segs)
	}
}

func TestLargeRecordGetsOwnSegment(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSize: 1 << 10})
	big := bytes.Repeat([]byte("B"), 5000)
	for i, data := range [][]byte{[]byte("a"), big, []byte("c"), big, big} {
		if _, err := l.Append(Record{Data: data}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	recs := readAll(t, l, 1)
	if len(recs) != 5 || !bytes.Equal(recs[3].Data, big) || string(recs[2].Data) != "c" {
		t.Fatalf("read back %d records", len(recs))
	}
	if n := len(segmentPaths(t, dir)); n != 5 {
		t.Fatalf("%d segments, want 5 (a | B | c | B | B)", n)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	if _, err := Open(dir, Options{Logger: quiet}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	l.Close()
	l2, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	l2.Close()
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"bad mode", Options{Mode: 9}},
		{"negative interval", Options{FlushInterval: -time.Second}},
		{"tiny segment", Options{SegmentSize: 10}},
		{"negative record size", Options{MaxRecordSize: -1}},
		{"huge record size", Options{MaxRecordSize: MaxRecordLimit + 1}},
		{"negative retain bytes", Options{RetainBytes: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Logger = quiet
			if _, err := Open(t.TempDir(), tt.opts); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Open = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"strict", Strict, true},
		{"Relaxed", Relaxed, true},
		{" ADAPTIVE ", Adaptive, true},
		{"fast", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseMode(%q) = %v, %v", tt.in, got, err)
		}
		if !tt.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseMode(%q) error %v is not ErrInvalid", tt.in, err)
		}
		if tt.ok && got.String() != strings.ToLower(strings.TrimSpace(tt.in)) {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
	if s := Mode(0).String(); s != "mode(0)" {
		t.Errorf("Mode(0).String() = %q", s)
	}
}

func TestSyncFailureIsSticky(t *testing.T) {
	dir := t.TempDir()
	gate := newSyncGate()
	gate.fail = errors.New("injected EIO")
	gate.open()
	var logBuf syncBuffer
	l, err := Open(dir, Options{syncHook: gate.hook, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3, 1)
	err = l.WaitDurable(t.Context(), 3)
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "injected EIO") {
		t.Fatalf("WaitDurable after a failed sync = %v, want ErrFailed(injected EIO)", err)
	}
	if _, err := l.Append(Record{Epoch: 1}); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after a failed sync = %v, want ErrFailed", err)
	}
	if err := l.Sync(t.Context()); !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync after a failed sync = %v, want ErrFailed", err)
	}
	if !strings.Contains(logBuf.String(), "log failed") {
		t.Fatalf("failure not logged: %s", logBuf.String())
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close after a reported failure = %v, want nil", err)
	}
	// The records reached the file; a reopen recovers and syncs them.
	l2 := openLog(t, dir, Options{})
	checkRecords(t, readAll(t, l2, 1), 1, 3)
	if l2.DurableGSN() != 3 {
		t.Fatalf("DurableGSN after reopen = %d", l2.DurableGSN())
	}
}

func TestCloseWakesReadersAndFlushes(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{Mode: Relaxed, FlushInterval: time.Hour})
	appendN(t, l, 5, 1)
	it, err := l.ReadFrom(1)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := it.Next(context.Background()); err != nil {
				done <- err
				return
			}
		}
	}()
	if l.DurableGSN() != 0 {
		t.Fatalf("relaxed log with a 1 h interval synced early: durable %d", l.DurableGSN())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked reader got %v, want ErrClosed", err)
	}
	if l.DurableGSN() != 5 {
		t.Fatalf("Close did not sync: durable %d", l.DurableGSN())
	}
	if err := l.WaitDurable(t.Context(), 5); err != nil {
		t.Fatalf("WaitDurable for a synced record after Close: %v", err)
	}
}

func TestSegmentNames(t *testing.T) {
	if got := segmentName(1); got != "00000000000000000001.log" {
		t.Fatalf("segmentName(1) = %q", got)
	}
	tests := []struct {
		name string
		base uint64
		ok   bool
	}{
		{"00000000000000000001.log", 1, true},
		{"18446744073709551615.log", 1<<64 - 1, true},
		{"00000000000000000000.log", 0, false},
		{"99999999999999999999.log", 0, false},
		{"0000000000000000001.log", 0, false},
		{"0000000000000000000a.log", 0, false},
		{"00000000000000000001.tmp", 0, false},
		{"LOCK", 0, false},
	}
	for _, tt := range tests {
		base, ok := parseSegmentName(tt.name)
		if base != tt.base || ok != tt.ok {
			t.Errorf("parseSegmentName(%q) = %d, %v", tt.name, base, ok)
		}
	}
	// Unrelated files in the directory are ignored.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
	l := openLog(t, dir, Options{})
	appendN(t, l, 2, 0)
	checkRecords(t, readAll(t, l, 1), 1, 2)
}

// syncBuffer is a goroutine-safe bytes.Buffer for capturing log output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
