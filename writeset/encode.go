package writeset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Version is the encoding version AppendEncode writes (the first byte) for
// a writeset with a session tag; one without is written as version 1,
// which has no session field.
const Version = 2

// Decoding errors. Decode wraps them with the offset and the field at fault.
var (
	// ErrCorrupt: the input is truncated, has trailing bytes, a length
	// that overruns it, a non-canonical field, or decodes to a writeset
	// that fails Validate.
	ErrCorrupt = errors.New("writeset: corrupt encoding")
	// ErrVersion: the input starts with an encoding version this build
	// does not read.
	ErrVersion = errors.New("writeset: unsupported encoding version")
)

// AppendEncode appends the binary encoding of ws to dst and returns the
// extended slice.
//
// Layout (version 1; uvarint/varint as in encoding/binary, canonical):
//
//	writeset = version:u8 gsn:uvarint epoch:uvarint origin:str ddl:str
//	           nrows:uvarint row* [session:str]   (version 2 only; not empty)
//	row      = table:str op:u8 nkeycols:uvarint str* nkey:uvarint value*
//	           ncols:uvarint str* nafter:uvarint value*
//	str      = len:uvarint bytes
//	value    = kind:u8 payload   (null: none; int: zig-zag varint;
//	           float: 8 bytes IEEE-754 little-endian; text, bytes: str;
//	           bool: u8 0 or 1)
//
// AppendEncode encodes whatever it is given; Decode accepts only writesets
// that pass Validate, so producers should Validate before encoding. The
// encoding is canonical: Decode(b) succeeds only if AppendEncode(nil, ws)
// would reproduce b exactly.
//
// A writeset whose rows are in Encoded (an Encoder) takes them from there,
// as they are; see Encode for the memory that result shares.
func AppendEncode(dst []byte, ws *Writeset) []byte {
	if e := ws.Encoded; e != nil {
		dst = appendHeader(dst, ws, e.rows)
		dst = append(dst, e.buf[e.head:]...)
	} else {
		dst = appendHeader(dst, ws, len(ws.Rows))
		for i := range ws.Rows {
			dst = appendRow(dst, &ws.Rows[i])
		}
	}
	if ws.Session != "" {
		dst = appendStr(dst, ws.Session)
	}
	return dst
}

// appendHeader appends what precedes the rows: version, GSN, epoch,
// origin, DDL and the number of rows.
func appendHeader(dst []byte, ws *Writeset, nrows int) []byte {
	if ws.Session == "" {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 2)
	}
	dst = binary.AppendUvarint(dst, ws.GSN)
	dst = binary.AppendUvarint(dst, ws.Epoch)
	dst = appendStr(dst, ws.Origin)
	dst = appendStr(dst, ws.DDL)
	return binary.AppendUvarint(dst, uint64(nrows))
}

func appendRow(dst []byte, r *Row) []byte {
	dst = appendRowHead(dst, r)
	return appendValues(dst, r.After)
}

// appendRowHead appends a row up to its after-image's values (their
// count is not written: appendValues or Encoder.StartRow writes it).
func appendRowHead(dst []byte, r *Row) []byte {
	dst = appendStr(dst, r.Table)
	dst = append(dst, byte(r.Op))
	dst = appendStrs(dst, r.KeyCols)
	dst = appendValues(dst, r.Key)
	return appendStrs(dst, r.Cols)
}

// Encode returns the encoding of ws in a new slice of exactly its size (a
// large value is copied once, never again by a growing buffer).
//
// A writeset whose rows are in Encoded is encoded in the Encoder's own
// buffer, in front of its rows, where it keeps room for the header: the
// rows are not copied, and the result shares the Encoder's memory. Encode
// such a writeset once (a second call rewrites the header in place).
func Encode(ws *Writeset) []byte {
	if e := ws.Encoded; e != nil {
		var scratch [64]byte
		hdr := appendHeader(scratch[:0], ws, e.rows)
		if len(hdr) <= e.head {
			start := e.head - len(hdr)
			copy(e.buf[start:], hdr)
			out := e.buf[start:]
			if ws.Session != "" {
				out = appendStr(out, ws.Session)
			}
			return out
		}
	}
	return AppendEncode(make([]byte, 0, Size(ws)), ws)
}

// Size is the length of ws's encoding.
func Size(ws *Writeset) int {
	n := 1 + uvarintLen(ws.GSN) + uvarintLen(ws.Epoch) + strLen(ws.Origin) + strLen(ws.DDL)
	if e := ws.Encoded; e != nil {
		n += uvarintLen(uint64(e.rows)) + len(e.buf) - e.head
	} else {
		n += uvarintLen(uint64(len(ws.Rows)))
		for i := range ws.Rows {
			r := &ws.Rows[i]
			n += strLen(r.Table) + 1 + strsLen(r.KeyCols) + valuesLen(r.Key) + strsLen(r.Cols) + valuesLen(r.After)
		}
	}
	if ws.Session != "" {
		n += strLen(ws.Session)
	}
	return n
}

func strLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

func strsLen(ss []string) int {
	n := uvarintLen(uint64(len(ss)))
	for _, s := range ss {
		n += strLen(s)
	}
	return n
}

func valuesLen(vs []Value) int {
	n := uvarintLen(uint64(len(vs)))
	for _, v := range vs {
		n++
		switch v.kind {
		case KindInt:
			n += uvarintLen(uint64(v.num<<1) ^ uint64(int64(v.num)>>63))
		case KindFloat:
			n += 8
		case KindText, KindBytes:
			n += strLen(v.str)
		case KindBool:
			n++
		}
	}
	return n
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendStrs(dst []byte, ss []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ss)))
	for _, s := range ss {
		dst = appendStr(dst, s)
	}
	return dst
}

func appendValues(dst []byte, vs []Value) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vs)))
	for _, v := range vs {
		dst = appendValue(dst, v)
	}
	return dst
}

func appendValue(dst []byte, v Value) []byte {
	dst = append(dst, byte(v.kind))
	switch v.kind {
	case KindInt:
		dst = binary.AppendVarint(dst, int64(v.num))
	case KindFloat:
		dst = binary.LittleEndian.AppendUint64(dst, v.num)
	case KindText, KindBytes:
		dst = appendStr(dst, v.str)
	case KindBool:
		dst = append(dst, byte(v.num))
	}
	return dst
}

// Decode parses an encoding produced by AppendEncode. The result does not
// alias b (its strings share one copy of it). Malformed input yields an error wrapping ErrCorrupt or ErrVersion;
// Decode never panics and never allocates more than a small multiple of
// len(b).
func Decode(b []byte) (*Writeset, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty input", ErrCorrupt)
	}
	if b[0] != 1 && b[0] != 2 {
		return nil, fmt.Errorf("%w: version %d (this build reads 1 and %d)", ErrVersion, b[0], Version)
	}
	// One copy of the input backs every decoded string, so the result never
	// aliases b and strings cost no allocation each.
	d := decoder{b: b, s: string(b), off: 1}
	ws := &Writeset{}
	ws.GSN = d.uvarint("gsn")
	ws.Epoch = d.uvarint("epoch")
	ws.Origin = d.str("origin")
	ws.DDL = d.str("ddl")
	n := d.count("rows", 1)
	if d.err == nil && n > 0 {
		ws.Rows = make([]Row, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		r := &ws.Rows[i]
		r.Table = d.str("table")
		r.Op = Op(d.byte("op"))
		r.KeyCols = d.strs("key columns")
		r.Key = d.values("key")
		r.Cols = d.strs("columns")
		r.After = d.values("after-image")
	}
	if b[0] == 2 {
		ws.Session = d.str("session")
		if d.err == nil && ws.Session == "" {
			return nil, fmt.Errorf("%w: version 2 with an empty session", ErrCorrupt)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.off != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes at offset %d", ErrCorrupt, len(b)-d.off, d.off)
	}
	if err := ws.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return ws, nil
}

// decoder reads fields from b, recording the first error; after an error
// every read returns a zero value, so callers check d.err once at the end.
type decoder struct {
	b   []byte
	s   string // copy of b
	off int
	err error
}

func (d *decoder) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at offset %d: %s", ErrCorrupt, field, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) byte(field string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail(field, "truncated")
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b[d.off:])
	switch {
	case n == 0:
		d.fail(field, "truncated varint")
		return 0
	case n < 0:
		d.fail(field, "varint overflows 64 bits")
		return 0
	case n != uvarintLen(x):
		d.fail(field, "non-canonical varint")
		return 0
	}
	d.off += n
	return x
}

func (d *decoder) varint(field string) int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b[d.off:])
	switch {
	case n == 0:
		d.fail(field, "truncated varint")
		return 0
	case n < 0:
		d.fail(field, "varint overflows 64 bits")
		return 0
	case n != uvarintLen(uint64(x<<1)^uint64(x>>63)):
		d.fail(field, "non-canonical varint")
		return 0
	}
	d.off += n
	return x
}

// count reads an element count and checks it against the bytes left, given
// that every element takes at least minSize bytes, so hostile counts cannot
// force large allocations.
func (d *decoder) count(field string, minSize int) int {
	x := d.uvarint(field)
	if d.err != nil {
		return 0
	}
	if x > uint64((len(d.b)-d.off)/minSize) {
		d.fail(field, "count %d exceeds the %d bytes left", x, len(d.b)-d.off)
		return 0
	}
	return int(x)
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

func (d *decoder) strs(field string) []string {
	n := d.count(field, 1)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.str(field)
	}
	return ss
}

func (d *decoder) values(field string) []Value {
	n := d.count(field, 1)
	if n == 0 {
		return nil
	}
	vs := make([]Value, n)
	for i := range vs {
		vs[i] = d.value(field)
	}
	return vs
}

func (d *decoder) value(field string) Value {
	k := Kind(d.byte(field))
	if d.err != nil {
		return Value{}
	}
	switch k {
	case KindNull:
		return Value{}
	case KindInt:
		return Int(d.varint(field))
	case KindFloat:
		if len(d.b)-d.off < 8 {
			d.fail(field, "truncated float")
			return Value{}
		}
		bits := binary.LittleEndian.Uint64(d.b[d.off:])
		d.off += 8
		return Float(math.Float64frombits(bits))
	case KindText:
		return Text(d.str(field))
	case KindBytes:
		return Value{kind: KindBytes, str: d.str(field)}
	case KindBool:
		switch c := d.byte(field); c {
		case 0:
			return Bool(false)
		case 1:
			return Bool(true)
		default:
			d.fail(field, "bool byte %d", c)
			return Value{}
		}
	}
	d.off--
	d.fail(field, "unknown value kind %d", k)
	return Value{}
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
