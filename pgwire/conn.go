// Package pgwire is tandem's PostgreSQL protocol 3 front door: framing,
// startup (SSLRequest, CancelRequest, StartupMessage), authentication
// (SCRAM-SHA-256, md5, trust), and an executing server for back ends that do
// not speak the protocol themselves (SQLite).
//
// It owns bytes on the client socket and nothing else: where a session's
// statements go is the router's business (it implements Handler), and how a
// database runs them is the back end's (it implements Backend, an interface
// declared here where it is used). Message decoding and encoding use pgx's
// pgproto3; frames that need no change are forwarded as raw bytes.
package pgwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"unsafe"

	"github.com/jackc/pgx/v5/pgproto3"
)

// ErrMessageTooLarge is returned when a frame exceeds the configured cap.
var ErrMessageTooLarge = errors.New("message exceeds the size limit")

// ErrMalformed is returned for frames that are not valid protocol.
var ErrMalformed = errors.New("malformed protocol message")

const minBuf = 16 << 10

// OwnedFrameBytes: a frame at least this long is handed to the caller,
// which may keep it (and strings made over it without a copy): the Framer
// never writes that memory again, and reads the next frames into a new
// small buffer, so a large message's memory goes with the message.
const OwnedFrameBytes = 256 << 10

// Framer reads length-prefixed protocol frames from a stream into one
// reusable buffer and batches writes. It never allocates per message once its
// buffers have grown to the working size.
type Framer struct {
	rd     io.Reader
	buf    []byte
	r, w   int
	out    []byte
	wr     io.Writer
	maxLen int
	// budget, when set, counts large frames node-wide; held is what the
	// frame last read holds of it (released at the next read or Release).
	budget *MemoryBudget
	held   int64
	manual bool // frames hold the budget until ReleaseMemory
}

// SetBudget makes the Framer count its large frames against b. A frame
// holds its share until the next frame is read, or with
// HoldMemoryUntilRelease, until ReleaseMemory.
func (f *Framer) SetBudget(b *MemoryBudget) { f.budget = b }

// HoldMemoryUntilRelease makes frames hold their share of the budget
// until ReleaseMemory (an executor whose pipelined messages are still in
// use when the next one is read: a Bind's values until its Execute ran).
func (f *Framer) HoldMemoryUntilRelease() { f.manual = true }

// ReleaseMemory returns what the last frame held of the budget: its
// message is done.
func (f *Framer) ReleaseMemory() {
	if f.held > 0 {
		f.budget.release(f.held)
		f.held = 0
	}
}

// discard drops the next n bytes of the stream, reading through the
// small buffer.
func (f *Framer) discard(n int) error {
	for n > 0 {
		if f.r == f.w {
			f.r, f.w = 0, 0
			m, err := f.rd.Read(f.buf)
			f.w = m
			if m == 0 && err != nil {
				if errors.Is(err, io.EOF) {
					return io.ErrUnexpectedEOF
				}
				return err
			}
		}
		k := min(n, f.w-f.r)
		f.r += k
		n -= k
	}
	if f.r == f.w {
		f.r, f.w = 0, 0
	}
	return nil
}

// NewFramer wraps a stream; maxLen caps the body length of one frame.
func NewFramer(rd io.Reader, wr io.Writer, maxLen int) *Framer {
	return &Framer{rd: rd, wr: wr, buf: make([]byte, minBuf), out: make([]byte, 0, minBuf), maxLen: maxLen}
}

// fill makes at least n bytes available from f.r.
func (f *Framer) fill(n int) error {
	if f.w-f.r >= n {
		return nil
	}
	if n > len(f.buf) {
		nb := make([]byte, max(n, 2*len(f.buf)))
		copy(nb, f.buf[f.r:f.w])
		f.w -= f.r
		f.r = 0
		f.buf = nb
	} else if f.r+n > len(f.buf) {
		copy(f.buf, f.buf[f.r:f.w])
		f.w -= f.r
		f.r = 0
	}
	for f.w-f.r < n {
		m, err := f.rd.Read(f.buf[f.w:])
		f.w += m
		if err != nil {
			if f.w-f.r >= n {
				return nil
			}
			if errors.Is(err, io.EOF) && f.w-f.r > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// ReadFrame returns the next typed message: its type byte, and the whole
// frame (type, length, body). The slice is valid until the next read.
func (f *Framer) ReadFrame() (byte, []byte, error) {
	if err := f.fill(5); err != nil {
		return 0, nil, err
	}
	typ := f.buf[f.r]
	l := int(binary.BigEndian.Uint32(f.buf[f.r+1:]))
	if l < 4 {
		return 0, nil, fmt.Errorf("%w: length %d of message %q", ErrMalformed, l, typ)
	}
	if l-4 > f.maxLen {
		return 0, nil, fmt.Errorf("%w: message %q of %d bytes (limit %d)", ErrMessageTooLarge, typ, l-4, f.maxLen)
	}
	if !f.manual {
		f.ReleaseMemory()
	}
	if f.budget != nil && l >= BudgetMinMessage {
		if err := f.budget.acquire(int64(1 + l)); err != nil {
			// Read the message past without holding it.
			if derr := f.discard(1 + l); derr != nil {
				return 0, nil, derr
			}
			return typ, nil, err
		}
		f.held += int64(1 + l)
	}
	if err := f.fill(1 + l); err != nil {
		return 0, nil, err
	}
	frame := f.buf[f.r : f.r+1+l]
	f.r += 1 + l
	if len(f.buf) >= OwnedFrameBytes {
		// Hand the large buffer over with the frame; keep what follows.
		rest := f.buf[f.r:f.w]
		f.buf = make([]byte, max(minBuf, len(rest)))
		f.w = copy(f.buf, rest)
		f.r = 0
	} else if f.r == f.w {
		f.r, f.w = 0, 0
	}
	return typ, frame, nil
}

// ReadUntyped reads an untyped frame (the startup packet): length, body.
func (f *Framer) ReadUntyped() ([]byte, error) {
	if err := f.fill(4); err != nil {
		return nil, err
	}
	l := int(binary.BigEndian.Uint32(f.buf[f.r:]))
	if l < 8 || l > 10000 {
		return nil, fmt.Errorf("%w: startup packet length %d", ErrMalformed, l)
	}
	if err := f.fill(l); err != nil {
		return nil, err
	}
	body := f.buf[f.r+4 : f.r+l]
	f.r += l
	return body, nil
}

// WaitInput blocks until at least one unread byte is in memory (the start
// of the next message).
func (f *Framer) WaitInput() error { return f.fill(1) }

// FrameBuffered reports whether the next frame is whole in memory, so
// reading it needs no read from the stream.
func (f *Framer) FrameBuffered() bool {
	if f.w-f.r < 5 {
		return false
	}
	return f.w-f.r >= 1+int(binary.BigEndian.Uint32(f.buf[f.r+1:]))
}

// Buffered reports how many unread bytes are already in memory; a relay
// flushes its output when this reaches zero.
func (f *Framer) Buffered() int { return f.w - f.r }

// ExecuteBeforeSync reports whether the frames already buffered hold an
// Execute before the next Sync (or, cut short, a Bind): the running
// extended-protocol batch has more statements to come.
func (f *Framer) ExecuteBeforeSync() bool {
	bind := false
	for i := f.r; i+5 <= f.w; {
		switch f.buf[i] {
		case 'S':
			return false
		case 'E':
			return true
		case 'B':
			bind = true
		}
		l := int(binary.BigEndian.Uint32(f.buf[i+1:]))
		if l < 4 {
			return false
		}
		i += 1 + l
	}
	return bind
}

// TakeBuffered returns the bytes read but not yet framed, and forgets them
// (a relay that takes the socket over forwards them first).
func (f *Framer) TakeBuffered() []byte {
	b := f.buf[f.r:f.w]
	f.r, f.w = 0, 0
	return b
}

// Append queues an encoded message for the next Flush.
func (f *Framer) Append(m pgproto3.BackendMessage) {
	var err error
	f.out, err = m.Encode(f.out)
	if err != nil {
		// Encoding only fails for values out of protocol range; send an
		// error the client can see instead of a broken frame.
		f.out, _ = (&pgproto3.ErrorResponse{Severity: "ERROR", Code: "XX000", Message: "tandem: cannot encode message: " + err.Error()}).Encode(f.out)
	}
}

// AppendRaw queues raw bytes (an already encoded frame).
func (f *Framer) AppendRaw(b []byte) { f.out = append(f.out, b...) }

// WriteDirect flushes queued output and writes b as it is (a large frame
// a relay forwards, not copied into the output buffer).
func (f *Framer) WriteDirect(b []byte) error {
	if err := f.Flush(); err != nil {
		return err
	}
	_, err := f.wr.Write(b)
	return err
}

// Pending is the number of queued output bytes.
func (f *Framer) Pending() int { return len(f.out) }

// Flush writes queued output.
func (f *Framer) Flush() error {
	if len(f.out) == 0 {
		return nil
	}
	_, err := f.wr.Write(f.out)
	if cap(f.out) > 1<<20 {
		f.out = make([]byte, 0, minBuf)
	} else {
		f.out = f.out[:0]
	}
	return err
}

// SetReader replaces the input stream (after a TLS handshake).
func (f *Framer) SetReader(r io.Reader) { f.rd = r }

// SetWriter replaces the output stream (used by relays).
func (f *Framer) SetWriter(w io.Writer) { f.wr = w }

// frameBody strips type and length.
func frameBody(frame []byte) []byte { return frame[5:] }

// cString reads a NUL-terminated string at the start of b. From a frame of
// OwnedFrameBytes or more it is not copied (the frame's memory is the
// string's: see OwnedFrameBytes), so a large Query costs its size once.
func cString(b []byte) (string, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", false
	}
	if len(b)+5 >= OwnedFrameBytes && i > 0 {
		return unsafe.String(&b[0], i), true
	}
	return string(b[:i]), true
}

// Conn is an accepted client connection after startup.
type Conn struct {
	net.Conn
	*Framer
	User       string
	Database   string
	Params     map[string]string
	ProcessID  uint32
	SecretKey  uint32
	RemoteAddr string
	TLS        bool
	// Local: the client came over a Unix socket (ListenUnix).
	Local bool
}
