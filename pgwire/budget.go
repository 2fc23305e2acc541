package pgwire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// ErrOutOfMemory: a message did not fit in the node's message memory
// budget within its wait; the client gets ERROR 53200 and the session goes
// on (the message was read and dropped).
var ErrOutOfMemory = errors.New("out of memory for messages")

// BudgetMinMessage: smaller messages are not counted (they cost little,
// and counting them would make every message touch shared state).
const BudgetMinMessage = 64 << 10

// freeAfterBytes: once a message at least this large is done and no other
// counted message is in flight, the node collects garbage and returns the
// memory to the operating system (an idle node would otherwise hold a
// large message's memory until its next collection, minutes later).
const freeAfterBytes = 8 << 20

// MemoryBudget bounds the bytes of large messages the node holds at once
// (being read, or read and being executed), across every session: past it
// a message waits for others to finish, up to Wait, then is refused with
// 53200. A message costs at most about twice its size while it runs, so
// the budget bounds that memory to about twice Limit.
type MemoryBudget struct {
	Limit int64
	Wait  time.Duration
	Log   *slog.Logger

	mu      sync.Mutex
	used    int64
	freed   chan struct{} // closed when memory is released (then replaced)
	pending atomic.Bool   // a free of OS memory is scheduled
	refused atomic.Int64
}

// NewMemoryBudget makes a budget of limit bytes; a message waits up to
// wait for room.
func NewMemoryBudget(limit int64, wait time.Duration, log *slog.Logger) *MemoryBudget {
	if log == nil {
		log = slog.Default()
	}
	return &MemoryBudget{Limit: limit, Wait: wait, Log: log, freed: make(chan struct{})}
}

// InUse is the bytes of messages counted now.
func (b *MemoryBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Refused is the number of messages refused so far.
func (b *MemoryBudget) Refused() int64 { return b.refused.Load() }

// acquire reserves n bytes, waiting up to Wait for room.
func (b *MemoryBudget) acquire(n int64) error {
	var deadline <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.Limit {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		used, freed := b.used, b.freed
		b.mu.Unlock()
		if n > b.Limit {
			return b.refuse(n, used)
		}
		if deadline == nil {
			if b.Wait <= 0 {
				return b.refuse(n, used)
			}
			t := time.NewTimer(b.Wait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-freed:
		case <-deadline:
			return b.refuse(n, used)
		}
	}
}

func (b *MemoryBudget) refuse(n, used int64) error {
	b.refused.Add(1)
	b.Log.Warn("message refused: message memory budget exhausted", "bytes", n, "in_use", used, "limit", b.Limit)
	e := Errorf(CodeOutOfMemory, "out of memory: a message of %d bytes does not fit in limits.message_memory (%d bytes, %d in use by other messages)", n, b.Limit, used)
	e.Hint = "retry when other large statements have finished, or raise limits.message_memory"
	e.Err = ErrOutOfMemory
	return e
}

// Reserve takes n bytes of the budget for work that costs memory beyond
// the message it came in (translating a large statement), waiting up to
// Wait for room as a message does; what names the work in the 53200
// error. release returns them (once; later calls do nothing). A nil budget
// reserves nothing.
func (b *MemoryBudget) Reserve(n int64, what string) (release func(), err error) {
	if b == nil || n <= 0 {
		return func() {}, nil
	}
	if err := b.acquire(n); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Message = fmt.Sprintf("out of memory: %s needs about %d bytes, which do not fit in limits.message_memory (%d bytes) now", what, n, b.Limit)
		}
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { b.release(n) }) }, nil
}

type budgetKey struct{}

// WithMemoryBudget returns ctx carrying b: a session's statements run with
// it, so a back end can Reserve what a statement costs beyond its message.
func WithMemoryBudget(ctx context.Context, b *MemoryBudget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// MemoryBudgetFrom returns the budget ctx carries, or nil.
func MemoryBudgetFrom(ctx context.Context) *MemoryBudget {
	b, _ := ctx.Value(budgetKey{}).(*MemoryBudget)
	return b
}

// release returns n bytes.
func (b *MemoryBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
	if n >= freeAfterBytes && b.pending.CompareAndSwap(false, true) {
		time.AfterFunc(100*time.Millisecond, func() {
			b.pending.Store(false)
			if b.InUse() == 0 {
				// Twice: buffers a large message left in sync.Pools
				// (pgx's read buffers) are freed at the second collection.
				runtime.GC()
				debug.FreeOSMemory()
			}
		})
	}
}

// String describes the budget for logs.
func (b *MemoryBudget) String() string {
	return fmt.Sprintf("%d bytes, wait %v", b.Limit, b.Wait)
}
