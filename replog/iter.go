package replog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"unsafe"
)

// Iterator streams records in GSN order from a starting GSN, across
// segments, and follows the log as records are appended: it sees every
// appended record, durable or not (a standby is shipped records before the
// primary's own log is durable; that is what 2-safe with relaxed durability
// means). An Iterator is not safe for concurrent use; Close it when done.
type Iterator struct {
	l      *Log
	seg    *segment
	r      segReader
	off    int64  // offset of the next record in seg
	expect uint64 // GSN of the record at off
	next   uint64 // next GSN to return
	err    error  // sticky
}

// ReadFrom returns an Iterator positioned at gsn, which may be any retained
// GSN or LastGSN()+1 (to follow new records only). It fails with
// ErrTrimmed if gsn is older than FirstGSN() (the reader must be
// re-seeded) and with ErrOutOfRange if gsn is beyond LastGSN()+1.
func (l *Log) ReadFrom(gsn uint64) (*Iterator, error) {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	if first := l.segs[0].base; gsn < first {
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: GSN %d, first retained is %d", ErrTrimmed, gsn, first)
	}
	if gsn > l.last+1 {
		last := l.last
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: read from GSN %d, last is %d", ErrOutOfRange, gsn, last)
	}
	seg := l.segmentForLocked(gsn)
	l.mu.Unlock()
	it := &Iterator{l: l, next: gsn}
	if err := it.open(seg); err != nil {
		return nil, err
	}
	return it, nil
}

func (it *Iterator) open(seg *segment) error {
	f, err := os.Open(seg.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: segment %s was removed", ErrTrimmed, seg.path)
		}
		return fmt.Errorf("replog: %w", err)
	}
	b := make([]byte, headerSize)
	if _, err := f.ReadAt(b, 0); err != nil {
		f.Close()
		return fmt.Errorf("replog: read header of %s: %w", seg.path, err)
	}
	h, err := decodeHeader(b)
	if err == nil && h.base != seg.base {
		err = fmt.Errorf("%w: header says base GSN %d", ErrCorrupt, h.base)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", seg.path, err)
	}
	if it.r.f != nil {
		it.r.f.Close()
	}
	it.r = segReader{f: f, buf: it.r.buf[:0]}
	it.seg, it.off, it.expect = seg, headerSize, seg.base
	return nil
}

// Next returns the next record, waiting for it to be appended if need be.
// It returns ctx's error if ctx ends first (the Iterator stays usable),
// ErrClosed once the Log is closed and every record has been read,
// ErrTrimmed if the segment it needs next was trimmed, and ErrCorrupt for
// a damaged sealed segment. Except for ctx errors, errors are final.
func (it *Iterator) Next(ctx context.Context) (Record, error) {
	for {
		rec, ok, err := it.TryNext()
		if err != nil || ok {
			return rec, err
		}
		ch, err := it.l.appendWait(it.seg, it.off)
		if err != nil {
			it.err = err
			return Record{}, err
		}
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Record{}, ctx.Err()
		}
	}
}

// TryNext returns the next record if it has been appended, and ok=false
// (with a nil error) if the Iterator has caught up with the log.
func (it *Iterator) TryNext() (rec Record, ok bool, err error) {
	if it.err != nil {
		return Record{}, false, it.err
	}
	for {
		sealed := it.seg.sealed.Load() // before size: once sealed, size is final
		size := it.seg.size.Load()
		if it.off < size {
			if rec, ok := it.recent(size); ok {
				return rec, true, nil
			}
			r, st, err := it.r.next(it.off, size)
			if err == nil && st != recordOK {
				err = fmt.Errorf("%w: %s: %s at offset %d", ErrCorrupt, it.seg.path, st, it.off)
			}
			if err == nil && r.gsn != it.expect {
				err = fmt.Errorf("%w: %s: record at offset %d has GSN %d, want %d", ErrCorrupt, it.seg.path, it.off, r.gsn, it.expect)
			}
			if err != nil {
				it.err = err
				return Record{}, false, err
			}
			it.off += r.size
			it.expect++
			if r.gsn < it.next {
				continue
			}
			it.next++
			if len(r.data) > largeRecord {
				// Hand the read buffer over with a large record rather
				// than copy it (the reader reads on into a new one).
				it.r.buf, it.r.bufOff = nil, 0
				return Record{GSN: r.gsn, Epoch: r.epoch, Data: r.data}, true, nil
			}
			return Record{GSN: r.gsn, Epoch: r.epoch, Data: bytes.Clone(r.data)}, true, nil
		}
		if !sealed {
			return Record{}, false, nil
		}
		seg, err := it.l.segmentStarting(it.expect)
		if err == nil {
			err = it.open(seg)
		}
		if err != nil {
			it.err = err
			return Record{}, false, err
		}
	}
}

// recent returns the record at the Iterator's position from the log's
// recentRecord when that is the one and its data is still in memory.
func (it *Iterator) recent(size int64) (Record, bool) {
	rc := it.l.recent.Load()
	if rc == nil || rc.seg != it.seg || rc.off != it.off || rc.gsn != it.expect || rc.gsn != it.next ||
		it.off+recordHeaderSize+int64(rc.n) > size {
		return Record{}, false
	}
	p := rc.data.Value()
	if p == nil {
		return Record{}, false
	}
	it.off += recordHeaderSize + int64(rc.n)
	it.expect++
	it.next++
	return Record{GSN: rc.gsn, Epoch: rc.epoch, Data: unsafe.Slice(p, rc.n)}, true
}

// Close releases the Iterator's file.
func (it *Iterator) Close() error {
	it.err = ErrClosed
	if it.r.f == nil {
		return nil
	}
	err := it.r.f.Close()
	it.r.f = nil
	return err
}
