package replog

import (
	"bytes"
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
