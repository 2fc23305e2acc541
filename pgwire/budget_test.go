package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// The budget admits what fits, makes the rest wait for a release, refuses
// after the wait (53200, ErrOutOfMemory), and refuses at once what can
// never fit or when there is no wait.
func TestMemoryBudget(t *testing.T) {
	cases := []struct {
		name             string
		limit, held, n   int64
		wait             time.Duration
		releaseAfter     time.Duration // 0: never
		wantErr          bool
		minTook, maxTook time.Duration
	}{
		{"fits", 100, 40, 60, time.Second, 0, false, 0, 50 * time.Millisecond},
		{"waits for a release", 100, 60, 60, 2 * time.Second, 100 * time.Millisecond, false, 80 * time.Millisecond, time.Second},
		{"refused after the wait", 100, 60, 60, 150 * time.Millisecond, 0, true, 140 * time.Millisecond, time.Second},
		{"no wait", 100, 60, 60, 0, 0, true, 0, 50 * time.Millisecond},
		{"never fits", 100, 0, 101, time.Second, 0, true, 0, 50 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewMemoryBudget(c.limit, c.wait, nil)
			if c.held > 0 {
				if err := b.acquire(c.held); err != nil {
					t.Fatal(err)
				}
			}
			if c.releaseAfter > 0 {
				time.AfterFunc(c.releaseAfter, func() { b.release(c.held) })
			}
			start := time.Now()
			err := b.acquire(c.n)
			took := time.Since(start)
			if (err != nil) != c.wantErr {
				t.Fatalf("acquire(%d): %v", c.n, err)
			}
			if err != nil && (!errors.Is(err, ErrOutOfMemory) || ToErrorResponse(err).Code != CodeOutOfMemory) {
				t.Fatalf("refusal %v: want ErrOutOfMemory, 53200", err)
			}
			if took < c.minTook || took > c.maxTook {
				t.Fatalf("took %v, want %v..%v", took, c.minTook, c.maxTook)
			}
			if err == nil {
				b.release(c.n)
			}
		})
	}
}

// A frame past the budget is read past, not kept: the next frame reads
// as usual, and a framer releases what its frames hold.
func TestFramerBudget(t *testing.T) {
	frame := func(typ byte, n int) []byte {
		b := make([]byte, 5+n)
		b[0] = typ
		binary.BigEndian.PutUint32(b[1:], uint32(4+n))
		return b
	}
	var in bytes.Buffer
	in.Write(frame('Q', 200<<10))
	in.Write(frame('Q', 200<<10))
	in.Write(frame('S', 0))
	b := NewMemoryBudget(300<<10, 0, nil)
	f := NewFramer(&in, io.Discard, 1<<20)
	f.SetBudget(b)
	f.HoldMemoryUntilRelease()
	if typ, fr, err := f.ReadFrame(); err != nil || typ != 'Q' || len(fr) != 5+200<<10 {
		t.Fatalf("first frame: %q %d %v", typ, len(fr), err)
	}
	if typ, fr, err := f.ReadFrame(); !errors.Is(err, ErrOutOfMemory) || typ != 'Q' || fr != nil {
		t.Fatalf("second frame past the budget: %q %d %v, want ErrOutOfMemory", typ, len(fr), err)
	}
	if typ, _, err := f.ReadFrame(); err != nil || typ != 'S' {
		t.Fatalf("the frame after: %q %v", typ, err)
	}
	if b.InUse() == 0 {
		t.Fatal("the first frame holds nothing before ReleaseMemory")
	}
	f.ReleaseMemory()
	if b.InUse() != 0 {
		t.Fatalf("%d bytes held after ReleaseMemory", b.InUse())
	}
}

// decodeParse reads what pgproto3 encodes, small or large (in place).
func TestDecodeParse(t *testing.T) {
	for _, m := range []pgproto3.Parse{
		{Name: "s1", Query: "SELECT $1", ParameterOIDs: []uint32{25}},
		{Query: "SELECT '" + strings.Repeat("x", OwnedFrameBytes) + "'"},
		{Name: "big", Query: "INSERT INTO t VALUES ($1, '" + strings.Repeat("y", OwnedFrameBytes) + "')", ParameterOIDs: []uint32{23, 0}},
	} {
		frame, err := m.Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeParse(frame[5:])
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("%q (%d bytes): decoded %q %v %v", m.Name, len(m.Query), got.Name, got.ParameterOIDs, err)
		}
		if _, err := decodeParse(frame[5 : len(frame)-1]); err == nil {
			t.Errorf("%q: a truncated Parse decoded", m.Name)
		}
	}
}

// Reserve counts work beyond a message against the budget: a nil budget
// reserves nothing, a release returns the bytes once, and a reservation
// that cannot fit is refused with 53200 naming the work; the budget rides
// on a session's context.
func TestMemoryBudgetReserve(t *testing.T) {
	var none *MemoryBudget
	if rel, err := none.Reserve(1<<30, "x"); err != nil || rel == nil {
		t.Fatalf("nil budget: %v", err)
	}
	b := NewMemoryBudget(100, 0, nil)
	rel, err := b.Reserve(70, "translating a statement")
	if err != nil || b.InUse() != 70 {
		t.Fatalf("reserve 70: %v, in use %d", err, b.InUse())
	}
	_, err = b.Reserve(40, "translating a statement")
	if e := ToErrorResponse(err); !errors.Is(err, ErrOutOfMemory) || e.Code != CodeOutOfMemory || !strings.Contains(e.Message, "translating a statement needs about 40 bytes") {
		t.Fatalf("reserve past the limit: %v", err)
	}
	rel()
	rel()
	if b.InUse() != 0 {
		t.Fatalf("in use %d after release (twice), want 0", b.InUse())
	}
	if got := MemoryBudgetFrom(WithMemoryBudget(context.Background(), b)); got != b {
		t.Fatalf("budget from context: %p, want %p", got, b)
	}
	if got := MemoryBudgetFrom(context.Background()); got != nil {
		t.Fatalf("budget from a bare context: %p, want nil", got)
	}
}
