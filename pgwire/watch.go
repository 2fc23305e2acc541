package pgwire

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clientCheckInterval is how often a running statement's client socket is
// checked for a hang-up (PostgreSQL's client_connection_check_interval):
// a client that disconnects stops its statement within about this long.
const clientCheckInterval = 250 * time.Millisecond

// stmtWatch stops a session's running statement (BackendSession.Cancel,
// which interrupts SQLite with sqlite3_interrupt or sends the PostgreSQL
// server a cancel) when its client hangs up or statement_timeout passes.
// One timer per session, re-armed per statement: nothing runs for a
// statement that ends within clientCheckInterval and its timeout.
type stmtWatch struct {
	s       *execSession
	mu      sync.Mutex
	t       *time.Timer
	running bool
	start   time.Time
	timeout time.Duration
	reason  string // why it cancelled: "timeout" or "disconnect"
}

// begin starts watching a statement.
func (w *stmtWatch) begin(timeout time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running, w.start, w.timeout, w.reason = true, time.Now(), timeout, ""
	d := w.next(0)
	if w.t == nil {
		w.t = time.AfterFunc(d, w.fire)
	} else {
		w.t.Reset(d)
	}
}

// end stops watching.
func (w *stmtWatch) end() {
	w.mu.Lock()
	w.running = false
	if w.t != nil {
		w.t.Stop()
	}
	w.mu.Unlock()
}

// timedOut reports whether the statement was cancelled by statement_timeout.
func (w *stmtWatch) timedOut() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason == "timeout"
}

// next is the delay to the next check, elapsed into the statement.
func (w *stmtWatch) next(elapsed time.Duration) time.Duration {
	d := clientCheckInterval
	if w.timeout > 0 && w.reason == "" {
		d = min(d, max(w.timeout-elapsed, time.Millisecond))
	}
	return d
}

func (w *stmtWatch) fire() {
	// Cancel runs under mu, so that it cannot reach the next statement:
	// end waits for it.
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.running {
		return
	}
	elapsed := time.Since(w.start)
	cancel := false
	switch {
	case w.reason != "":
		cancel = true // keep at it until the statement is gone
	case w.timeout > 0 && elapsed >= w.timeout:
		w.reason, cancel = "timeout", true
	case clientGone(w.s.c.Conn):
		w.reason, cancel = "disconnect", true
	}
	w.t.Reset(w.next(elapsed))
	if cancel {
		w.s.bs.Cancel()
	}
}

// ParseTimeout reads a PostgreSQL time setting such as statement_timeout:
// an integer in milliseconds, or a number with a unit (us, ms, s, min, h,
// d); 0 turns it off.
func ParseTimeout(name, val string) (time.Duration, error) {
	v := strings.ToLower(strings.TrimSpace(strings.Trim(strings.TrimSpace(val), `'"`)))
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	num, err := strconv.ParseFloat(v[:i], 64)
	if err != nil || num < 0 {
		return 0, Errorf("22023", "invalid value for parameter %q: %q", name, val)
	}
	unit := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := unit[strings.TrimSpace(v[i:])]
	if !ok {
		e := Errorf("22023", "invalid value for parameter %q: %q", name, val)
		e.Hint = `Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".`
		return 0, e
	}
	return time.Duration(num * float64(u)), nil
}

// FormatTimeout writes a duration as PostgreSQL's SHOW does ("0", "250ms",
// "5s", "2min").
func FormatTimeout(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dmin", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	default:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
}
