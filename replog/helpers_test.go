package replog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// quiet discards log output in tests that do not look at it.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// payload is the deterministic content of the record at gsn; sizes vary
// from 0 to a few hundred bytes.
func payload(gsn uint64) []byte {
	if gsn%11 == 0 {
		return nil
	}
	return bytes.Repeat([]byte(fmt.Sprintf("ws-%d;", gsn)), int(gsn%37))
}

func appendN(t testing.TB, l *Log, n int, epoch uint64) {
	t.Helper()
	for range n {
		gsn := l.LastGSN() + 1
		if _, err := l.Append(Record{GSN: gsn, Epoch: epoch, Data: payload(gsn)}); err != nil {
			t.Fatalf("Append(%d): %v", gsn, err)
		}
	}
}

// readAll reads every record from gsn on, without waiting.
func readAll(t testing.TB, l *Log, gsn uint64) []Record {
	t.Helper()
	it, err := l.ReadFrom(gsn)
	if err != nil {
		t.Fatalf("ReadFrom(%d): %v", gsn, err)
	}
	defer it.Close()
	var out []Record
	for {
		rec, ok, err := it.TryNext()
		if err != nil {
			t.Fatalf("TryNext after %d records: %v", len(out), err)
		}
		if !ok {
			return out
		}
		out = append(out, rec)
	}
}

// checkRecords checks that recs are exactly GSNs from..to with the
// deterministic payloads.
func checkRecords(t testing.TB, recs []Record, from, to uint64) {
	t.Helper()
	want := 0
	if to >= from {
		want = int(to - from + 1)
	}
	if len(recs) != want {
		t.Fatalf("got %d records (from GSN %d), want %d (GSN %d..%d)", len(recs), firstGSN(recs), want, from, to)
	}
	for i, r := range recs {
		want := from + uint64(i)
		if r.GSN != want {
			t.Fatalf("record %d has GSN %d, want %d", i, r.GSN, want)
		}
		if !bytes.Equal(r.Data, payload(want)) {
			t.Fatalf("record GSN %d: payload %q, want %q", want, r.Data, payload(want))
		}
	}
}

func firstGSN(recs []Record) uint64 {
	if len(recs) == 0 {
		return 0
	}
	return recs[0].GSN
}

// lastSegment returns the path of the newest segment file in dir.
func lastSegment(t testing.TB, dir string) string {
	t.Helper()
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segments in %s: %v", dir, err)
	}
	return segs[len(segs)-1].path
}

func segmentPaths(t testing.TB, dir string) []string {
	t.Helper()
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range segs {
		out = append(out, s.path)
	}
	return out
}

// copyDir copies the segment files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	for _, p := range segmentPaths(t, src) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// syncGate lets a test hold every data sync until it opens the gate.
type syncGate struct {
	mu      sync.Mutex
	closed  bool
	gate    chan struct{}
	entered chan struct{} // receives once per sync that reaches the hook
	fail    error
}

func newSyncGate() *syncGate {
	return &syncGate{gate: make(chan struct{}), entered: make(chan struct{}, 1024)}
}

func (g *syncGate) hook() error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fail
}

func (g *syncGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		close(g.gate)
		g.closed = true
	}
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
