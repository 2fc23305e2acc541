package writeset

import "encoding/binary"

// encoderHead is the room an Encoder keeps in front of its rows for the
// writeset's header (version, GSN, epoch, origin, DDL, row count: 31
// bytes and the origin's name), and encoderTail the room after them for
// its session tag.
const (
	encoderHead = 96
	encoderTail = 64
)

// An Encoder writes a writeset's rows in their encoded form as they are
// read, into the buffer the whole encoding will be: set it as
// Writeset.Encoded and Encode writes the header in front of the rows
// instead of copying them. With Text a large value is written once, where
// it stays: a producer that reads it in pieces never holds it whole
// elsewhere. The result is byte for byte what the same rows in
// Writeset.Rows encode to.
type Encoder struct {
	buf  []byte
	head int // buf[:head] is room for the header
	rows int
}

// NewEncoder returns an Encoder with room for about sizeHint bytes of rows
// (more grows its buffer, which copies it).
func NewEncoder(sizeHint int) *Encoder {
	buf := make([]byte, encoderHead, encoderHead+max(sizeHint, 0)+encoderTail)
	return &Encoder{buf: buf, head: encoderHead}
}

// Row appends a whole row.
func (e *Encoder) Row(r *Row) {
	e.buf = appendRow(e.buf, r)
	e.rows++
}

// StartRow appends a row whose after-image follows value by value: r's
// Table, Op, KeyCols, Key and Cols are written (r.After is not read), then
// exactly nafter calls of Value or Text must follow.
func (e *Encoder) StartRow(r *Row, nafter int) {
	e.buf = appendRowHead(e.buf, r)
	e.buf = binary.AppendUvarint(e.buf, uint64(nafter))
	e.rows++
}

// Value appends one value of the row started last.
func (e *Encoder) Value(v Value) { e.buf = appendValue(e.buf, v) }

// Text appends a text value of n bytes and returns them, for the caller
// to fill in before the writeset is encoded.
func (e *Encoder) Text(n int) []byte {
	e.buf = append(e.buf, byte(KindText))
	e.buf = binary.AppendUvarint(e.buf, uint64(n))
	at := len(e.buf)
	if cap(e.buf)-at < n {
		grown := make([]byte, at, at+n+encoderTail)
		copy(grown, e.buf)
		e.buf = grown
	}
	e.buf = e.buf[:at+n]
	return e.buf[at : at+n : at+n]
}

// Rows is the number of rows appended.
func (e *Encoder) Rows() int { return e.rows }

// Len is the size of the rows' encoding so far.
func (e *Encoder) Len() int { return len(e.buf) - e.head }
