package certifier

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// requestVersion is the first byte of an encoded request.
const requestVersion = 1

// AppendEncode appends r's encoding to dst:
//
//	request = version:u8(1) id:str origin:str snapshot:uvarint nkeys:uvarint key* writeset:str
//	key     = table:str pk:str
//	str     = len:uvarint bytes
func (r *Request) AppendEncode(dst []byte) []byte {
	dst = append(dst, requestVersion)
	dst = appendStr(dst, r.ID)
	dst = appendStr(dst, r.Origin)
	dst = binary.AppendUvarint(dst, r.Snapshot)
	dst = binary.AppendUvarint(dst, uint64(len(r.Keys)))
	for _, k := range r.Keys {
		dst = appendStr(dst, k.Table)
		dst = appendStr(dst, k.PK)
	}
	return appendStr(dst, string(r.Writeset))
}

// Encode returns r's encoding (AppendEncode).
func (r *Request) Encode() []byte {
	n := 1 + 3*binary.MaxVarintLen64 + len(r.ID) + len(r.Origin) + len(r.Writeset)
	for _, k := range r.Keys {
		n += 2*binary.MaxVarintLen64 + len(k.Table) + len(k.PK)
	}
	return r.AppendEncode(make([]byte, 0, n))
}

// DecodeRequest parses an encoding made by Encode. It is strict: every
// length is checked against the bytes left before anything is allocated,
// non-minimal varints and trailing bytes are refused, and the request must
// pass Validate, so a decoded request re-encodes to exactly b. Errors wrap
// ErrBadRequest; the result does not alias b.
func DecodeRequest(b []byte) (Request, error) {
	if len(b) == 0 {
		return Request{}, fmt.Errorf("%w: empty input", ErrBadRequest)
	}
	if b[0] != requestVersion {
		return Request{}, fmt.Errorf("%w: version %d (this build reads %d)", ErrBadRequest, b[0], requestVersion)
	}
	d := decoder{b: b, s: string(b), off: 1}
	var r Request
	r.ID = d.str("id")
	r.Origin = d.str("origin")
	r.Snapshot = d.uvarint("snapshot")
	n := d.count("keys", 2)
	if n > 0 {
		r.Keys = make([]Key, n)
		for i := range r.Keys {
			r.Keys[i].Table = d.str("table")
			r.Keys[i].PK = d.str("pk")
		}
	}
	if ws := d.str("writeset"); ws != "" {
		r.Writeset = []byte(ws)
	}
	if d.err != nil {
		return Request{}, d.err
	}
	if d.off != len(b) {
		return Request{}, fmt.Errorf("%w: %d trailing bytes at offset %d", ErrBadRequest, len(b)-d.off, d.off)
	}
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	return r, nil
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads fields, keeping the first error; after one every read
// returns a zero value.
type decoder struct {
	b   []byte
	s   string // one copy of b backs every string
	off int
	err error
}

func (d *decoder) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at offset %d: %s", ErrBadRequest, field, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(field, "bad varint")
		return 0
	}
	if n != uvarintLen(v) {
		d.fail(field, "non-minimal varint")
		return 0
	}
	d.off += n
	return v
}

// count reads a count of items of at least minSize bytes each.
func (d *decoder) count(field string, minSize int) int {
	n := d.uvarint(field)
	if d.err != nil {
		return 0
	}
	if n > uint64((len(d.b)-d.off)/minSize) {
		d.fail(field, "count %d exceeds what the %d bytes left can hold", n, len(d.b)-d.off)
		return 0
	}
	return int(n)
}

func (d *decoder) str(field string) string {
	n := d.uvarint(field)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail(field, "length %d exceeds the %d bytes left", n, len(d.b)-d.off)
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// ErrCorruptSnapshot: a state snapshot that does not decode.
var ErrCorruptSnapshot = errors.New("certifier: corrupt state snapshot")

// snapshotMagic starts an encoded state.
const snapshotMagic = "TCS1"

// Snapshot is a point-in-time copy of a State, cheap to take (the window's
// entries are immutable and shared) and written out later, off the path
// that applies new requests.
type Snapshot struct {
	last, base uint64
	entries    []*Committed
	aborts     []Decision
}

// Snapshot copies the state for WriteTo.
func (s *State) Snapshot() *Snapshot {
	sn := &Snapshot{last: s.last, base: s.base, entries: append([]*Committed(nil), s.entries[s.head:]...)}
	for _, ik := range s.aborts[s.abHead:] {
		if d, ok := s.ids[ik]; ok && !d.Committed {
			sn.aborts = append(sn.aborts, d)
		}
	}
	return sn
}

// WriteTo writes the snapshot:
//
//	state    = "TCS1" last:uvarint base:uvarint n:uvarint committed* m:uvarint abort*
//	committed = snapshot:uvarint origin:str id:str nkeys:uvarint key* writeset:str   (GSNs base+1 ... in order)
//	abort    = origin:str id:str snapshot:uvarint table:str pk:str gsn:uvarint conflict-origin:str
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var n int64
	buf := []byte(snapshotMagic)
	buf = binary.AppendUvarint(buf, sn.last)
	buf = binary.AppendUvarint(buf, sn.base)
	buf = binary.AppendUvarint(buf, uint64(len(sn.entries)))
	flush := func() error {
		m, err := bw.Write(buf)
		n += int64(m)
		buf = buf[:0]
		return err
	}
	for _, e := range sn.entries {
		buf = binary.AppendUvarint(buf, e.Snapshot)
		buf = appendStr(buf, e.Origin)
		buf = appendStr(buf, e.ID)
		buf = binary.AppendUvarint(buf, uint64(len(e.Keys)))
		for _, k := range e.Keys {
			buf = appendStr(buf, k.Table)
			buf = appendStr(buf, k.PK)
		}
		buf = binary.AppendUvarint(buf, uint64(len(e.Writeset)))
		if err := flush(); err != nil {
			return n, err
		}
		m, err := bw.Write(e.Writeset)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(sn.aborts)))
	for _, d := range sn.aborts {
		buf = appendStr(buf, d.Origin)
		buf = appendStr(buf, d.ID)
		buf = binary.AppendUvarint(buf, d.Snapshot)
		var c Conflict
		if d.Conflict != nil {
			c = *d.Conflict
		}
		buf = appendStr(buf, c.Key.Table)
		buf = appendStr(buf, c.Key.PK)
		buf = binary.AppendUvarint(buf, c.GSN)
		buf = appendStr(buf, c.Origin)
	}
	if err := flush(); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// Restore reads a state written by Snapshot.WriteTo.
func Restore(r io.Reader) (*State, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("certifier: reading the state snapshot: %w", err)
	}
	if len(b) < len(snapshotMagic) || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: no %q header", ErrCorruptSnapshot, snapshotMagic)
	}
	d := decoder{b: b, s: string(b), off: len(snapshotMagic)}
	s := New()
	s.last = d.uvarint("last")
	s.base = d.uvarint("base")
	n := d.count("entries", 5)
	if d.err == nil && s.base+uint64(n) != s.last {
		d.fail("entries", "%d writesets after GSN %d do not end at GSN %d", n, s.base, s.last)
	}
	for i := 0; i < n && d.err == nil; i++ {
		e := &Committed{GSN: s.base + 1 + uint64(i)}
		e.Snapshot = d.uvarint("snapshot")
		e.Origin = d.str("origin")
		e.ID = d.str("id")
		if k := d.count("keys", 2); k > 0 {
			e.Keys = make([]Key, k)
			for j := range e.Keys {
				e.Keys[j] = Key{Table: d.str("table"), PK: d.str("pk")}
			}
		}
		if ws := d.str("writeset"); ws != "" {
			e.Writeset = []byte(ws)
		}
		if d.err == nil {
			s.add(e)
			s.ids[idKey(e.Origin, e.ID)] = Decision{ID: e.ID, Origin: e.Origin, Committed: true, GSN: e.GSN, Snapshot: e.Snapshot}
		}
	}
	m := d.count("aborts", 6)
	for i := 0; i < m && d.err == nil; i++ {
		dec := Decision{Origin: d.str("origin"), ID: d.str("id"), Snapshot: d.uvarint("snapshot")}
		c := &Conflict{Key: Key{Table: d.str("table"), PK: d.str("pk")}}
		c.GSN = d.uvarint("gsn")
		c.Origin = d.str("origin")
		dec.Conflict = c
		if d.err == nil {
			ik := idKey(dec.Origin, dec.ID)
			s.ids[ik] = dec
			s.aborts = append(s.aborts, ik)
		}
	}
	if d.err == nil && d.off != len(b) {
		d.fail("end", "%d trailing bytes", len(b)-d.off)
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptSnapshot, d.err)
	}
	return s, nil
}
