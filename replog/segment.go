package replog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
)

// Segment file format (all integers little-endian):
//
//	header  = magic "TNDMRLOG" | version u32 | base GSN u64 | previous
//	          segment's base GSN u64 (0 for none) | epoch floor u64 |
//	          crc32c of the preceding 36 bytes u32            (40 bytes)
//	record  = payload length u32 | crc32c u32 | GSN u64 | epoch u64 |
//	          payload                                         (24 + n bytes)
//
// A record's crc32c covers its length, GSN, epoch and payload (everything
// but the crc field). Segment files are named %020d.log by base GSN, the GSN
// of their first record.
const (
	segmentVersion   = 1
	headerSize       = 40
	recordHeaderSize = 24
	segmentSuffix    = ".log"
	readChunk        = 64 << 10
	// largeRecord: records with more data are written without copying it
	// into the write buffer (which is kept only up to this size).
	largeRecord = 256 << 10
)

var (
	segmentMagic = [8]byte{'T', 'N', 'D', 'M', 'R', 'L', 'O', 'G'}
	castagnoli   = crc32.MakeTable(crc32.Castagnoli)
)

// segment is one segment file. base and path never change. size is the
// number of valid bytes (header included) that readers may read; sealed is
// set once no more records will be appended (size is then final; set after
// the last size update). f is the append handle of the active segment,
// nil once sealed; the Log's syncMu guards closing it.
type segment struct {
	base   uint64
	path   string
	f      *os.File
	size   atomic.Int64
	sealed atomic.Bool
}

type segmentHeader struct {
	base, prevBase, epoch uint64
}

func segmentName(base uint64) string { return fmt.Sprintf("%020d%s", base, segmentSuffix) }

// parseSegmentName returns the base GSN of a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	if len(name) != 20+len(segmentSuffix) || filepath.Ext(name) != segmentSuffix {
		return 0, false
	}
	digits := name[:20]
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || base == 0 {
		return 0, false
	}
	return base, true
}

// listSegments returns the segments in dir, sorted by base GSN.
func listSegments(dir string) ([]*segment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("replog: list %s: %w", dir, err)
	}
	var segs []*segment
	for _, e := range entries {
		if base, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			segs = append(segs, &segment{base: base, path: filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(segs, func(a, b *segment) int {
		switch {
		case a.base < b.base:
			return -1
		case a.base > b.base:
			return 1
		}
		return 0
	})
	return segs, nil
}

func encodeHeader(h segmentHeader) []byte {
	b := make([]byte, headerSize)
	copy(b, segmentMagic[:])
	binary.LittleEndian.PutUint32(b[8:], segmentVersion)
	binary.LittleEndian.PutUint64(b[12:], h.base)
	binary.LittleEndian.PutUint64(b[20:], h.prevBase)
	binary.LittleEndian.PutUint64(b[28:], h.epoch)
	binary.LittleEndian.PutUint32(b[36:], crc32.Checksum(b[:36], castagnoli))
	return b
}

// errShortHeader: the file is shorter than a header (a segment whose
// creation was interrupted).
var errShortHeader = errors.New("replog: segment shorter than its header")

func decodeHeader(b []byte) (segmentHeader, error) {
	if len(b) < headerSize {
		return segmentHeader{}, errShortHeader
	}
	if [8]byte(b[:8]) != segmentMagic {
		return segmentHeader{}, fmt.Errorf("%w: bad segment magic %q", ErrCorrupt, b[:8])
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != segmentVersion {
		return segmentHeader{}, fmt.Errorf("%w: segment version %d (this build reads %d)", ErrVersion, v, segmentVersion)
	}
	if got, want := binary.LittleEndian.Uint32(b[36:]), crc32.Checksum(b[:36], castagnoli); got != want {
		return segmentHeader{}, fmt.Errorf("%w: segment header checksum mismatch", ErrCorrupt)
	}
	return segmentHeader{
		base:     binary.LittleEndian.Uint64(b[12:]),
		prevBase: binary.LittleEndian.Uint64(b[20:]),
		epoch:    binary.LittleEndian.Uint64(b[28:]),
	}, nil
}

// readHeader reads and checks the header of the segment file at path and
// returns it with the file size.
func readHeader(path string, wantBase uint64) (segmentHeader, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return segmentHeader{}, 0, fmt.Errorf("replog: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return segmentHeader{}, 0, fmt.Errorf("replog: %w", err)
	}
	b := make([]byte, headerSize)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return segmentHeader{}, fi.Size(), fmt.Errorf("replog: read %s: %w", path, err)
	}
	h, err := decodeHeader(b[:n])
	if err != nil {
		return h, fi.Size(), fmt.Errorf("%s: %w", path, err)
	}
	if h.base != wantBase {
		return h, fi.Size(), fmt.Errorf("%w: %s: header says base GSN %d", ErrCorrupt, path, h.base)
	}
	return h, fi.Size(), nil
}

// recordHeader is the header appendRecord would write before data (a
// large record is written as header and data, without copying the data).
func recordHeader(gsn, epoch uint64, data []byte) []byte {
	h := make([]byte, recordHeaderSize)
	binary.LittleEndian.PutUint32(h[0:], uint32(len(data)))
	binary.LittleEndian.PutUint64(h[8:], gsn)
	binary.LittleEndian.PutUint64(h[16:], epoch)
	crc := crc32.Update(0, castagnoli, h[0:4])
	crc = crc32.Update(crc, castagnoli, h[8:])
	crc = crc32.Update(crc, castagnoli, data)
	binary.LittleEndian.PutUint32(h[4:], crc)
	return h
}

// appendRecord appends the encoding of one record to dst.
func appendRecord(dst []byte, gsn, epoch uint64, data []byte) []byte {
	off := len(dst)
	dst = append(dst, make([]byte, recordHeaderSize)...)
	h := dst[off:]
	binary.LittleEndian.PutUint32(h[0:], uint32(len(data)))
	binary.LittleEndian.PutUint64(h[8:], gsn)
	binary.LittleEndian.PutUint64(h[16:], epoch)
	dst = append(dst, data...)
	crc := crc32.Update(0, castagnoli, dst[off:off+4])
	crc = crc32.Update(crc, castagnoli, dst[off+8:])
	binary.LittleEndian.PutUint32(dst[off+4:], crc)
	return dst
}

// recordStatus classifies what sits at an offset of a segment.
type recordStatus int

const (
	recordOK     recordStatus = iota
	recordTorn                // fewer bytes than the header or length ask for
	recordBadSum              // checksum mismatch
)

func (s recordStatus) String() string {
	switch s {
	case recordTorn:
		return "incomplete record"
	case recordBadSum:
		return "record checksum mismatch"
	}
	return "ok"
}

// segReader reads records from a segment file with positioned reads
// through a read-ahead buffer, so it never disturbs other handles and can
// follow a file that is still growing (reads stay below a caller-given
// limit).
type segReader struct {
	f      *os.File
	buf    []byte
	bufOff int64
}

// read returns n bytes at off; off+n must not exceed limit. The slice is
// valid until the next call.
func (r *segReader) read(off int64, n int, limit int64) ([]byte, error) {
	if off >= r.bufOff && off+int64(n) <= r.bufOff+int64(len(r.buf)) {
		s := off - r.bufOff
		return r.buf[s : s+int64(n)], nil
	}
	want := max(n, readChunk)
	if left := limit - off; int64(want) > left {
		want = int(left)
	}
	if cap(r.buf) < want || cap(r.buf) > 4*readChunk && want <= readChunk {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	m, err := r.f.ReadAt(r.buf, off)
	if m < n {
		r.buf = r.buf[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("replog: read %s at %d: %w", r.f.Name(), off, err)
	}
	r.buf, r.bufOff = r.buf[:m], off
	return r.buf[:n], nil
}

// record is one parsed record; data aliases the reader's buffer.
type record struct {
	gsn, epoch uint64
	data       []byte
	size       int64 // header + payload
}

// next parses the record at off, reading no further than limit.
func (r *segReader) next(off, limit int64) (record, recordStatus, error) {
	if limit-off < recordHeaderSize {
		return record{}, recordTorn, nil
	}
	h, err := r.read(off, recordHeaderSize, limit)
	if err != nil {
		return record{}, 0, err
	}
	n := int64(binary.LittleEndian.Uint32(h[0:]))
	if n > limit-off-recordHeaderSize {
		return record{}, recordTorn, nil
	}
	b, err := r.read(off, recordHeaderSize+int(n), limit)
	if err != nil {
		return record{}, 0, err
	}
	crc := crc32.Update(0, castagnoli, b[0:4])
	crc = crc32.Update(crc, castagnoli, b[8:])
	if crc != binary.LittleEndian.Uint32(b[4:]) {
		return record{}, recordBadSum, nil
	}
	return record{
		gsn:   binary.LittleEndian.Uint64(b[8:]),
		epoch: binary.LittleEndian.Uint64(b[16:]),
		data:  b[recordHeaderSize:],
		size:  recordHeaderSize + n,
	}, recordOK, nil
}

// createSegment creates the segment file for base, writes and syncs its
// header, and syncs the directory, so the empty segment survives a crash.
func createSegment(dir string, h segmentHeader) (*segment, error) {
	path := filepath.Join(dir, segmentName(h.base))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("replog: create segment: %w", err)
	}
	if _, err := f.Write(encodeHeader(h)); err != nil {
		f.Close()
		return nil, fmt.Errorf("replog: write segment header %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("replog: sync %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	s := &segment{base: h.base, path: path, f: f}
	s.size.Store(headerSize)
	return s, nil
}

// syncDir makes creations and removals of files in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("replog: open dir for sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("replog: sync dir %s: %w", dir, err)
	}
	return nil
}
