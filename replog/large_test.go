package replog

import (
	"bytes"
	"runtime"
	"testing"
)

// A large record is written as its header and its data (no copy): the
// bytes are those appendRecord makes, and the log reads them back across
// a reopen, between small records.
func TestLargeRecord(t *testing.T) {
	for _, n := range []int{0, 1, largeRecord, largeRecord + 1, 3 << 20} {
		data := bytes.Repeat([]byte{byte(n)}, n)
		whole := appendRecord(nil, 7, 3, data)
		if got := append(recordHeader(7, 3, data), data...); !bytes.Equal(got, whole) {
			t.Fatalf("%d bytes: header and data differ from appendRecord", n)
		}
	}
	dir := t.TempDir()
	l := openLog(t, dir, Options{Mode: Strict, SegmentSize: 64 << 20})
	big := bytes.Repeat([]byte("large"), (largeRecord+1000)/5)
	for i, d := range [][]byte{[]byte("a"), big, []byte("b")} {
		if _, err := l.Append(Record{Epoch: 1, Data: d}); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, Options{Mode: Strict, SegmentSize: 64 << 20})
	if r := l2.Recovered(); r.DroppedBytes != 0 {
		t.Fatalf("reopen dropped bytes: %+v", r)
	}
	recs := readAll(t, l2, 1)
	// Records handed out stay as they were while the log reads on.
	if len(recs) == 3 {
		recs = append(recs, readAll(t, l2, 1)...)
	}
	if len(recs) != 6 || !bytes.Equal(recs[4].Data, big) {
		t.Fatalf("read twice: %d records", len(recs))
	}
	recs = recs[:3]
	if len(recs) != 3 || string(recs[0].Data) != "a" || !bytes.Equal(recs[1].Data, big) || string(recs[2].Data) != "b" {
		t.Fatalf("read back %d records", len(recs))
	}
}

// A reader that reaches a large record while its appender still holds the
// data gets that data (no second copy read from the file); once the
// appender let it go, the record is read from the file as usual.
func TestLargeRecordHandedToReaders(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{Mode: Relaxed, SegmentSize: 64 << 20})
	it, err := l.ReadFrom(1)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	big := bytes.Repeat([]byte("held"), largeRecord/2)
	small := []byte("small")
	for _, d := range [][]byte{small, big} {
		if _, err := l.Append(Record{Epoch: 1, Data: d}); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range [][]byte{small, big} {
		rec, ok, err := it.TryNext()
		if err != nil || !ok || rec.GSN != uint64(i+1) || !bytes.Equal(rec.Data, want) {
			t.Fatalf("record %d: %v %v gsn %d", i+1, ok, err, rec.GSN)
		}
		if shared := &rec.Data[0] == &want[0]; shared != (i == 1) {
			t.Fatalf("record %d shares the appender's data: %v, want %v", i+1, shared, i == 1)
		}
	}
	runtime.KeepAlive(big)

	// Not held: read from the file, byte for byte the same.
	if _, err := l.Append(Record{Epoch: 1, Data: bytes.Repeat([]byte("gone"), largeRecord/2)}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	rec, ok, err := it.TryNext()
	if err != nil || !ok || rec.GSN != 3 || !bytes.Equal(rec.Data, bytes.Repeat([]byte("gone"), largeRecord/2)) {
		t.Fatalf("record 3: %v %v gsn %d, %d bytes", ok, err, rec.GSN, len(rec.Data))
	}
	// A second reader of the held record, after the first: the same bytes.
	it2, err := l.ReadFrom(2)
	if err != nil {
		t.Fatal(err)
	}
	defer it2.Close()
	if rec, ok, err := it2.TryNext(); err != nil || !ok || rec.GSN != 2 || !bytes.Equal(rec.Data, big) {
		t.Fatalf("second reader: %v %v gsn %d", ok, err, rec.GSN)
	}
}
