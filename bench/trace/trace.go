// Package trace records the statements a workload sends, with their timing,
// to a trace file, and replays a trace against any PostgreSQL-wire target
// with C concurrent clients: seed 002's testing client, which played
// "recorded" SQL statements so that every configuration saw the same
// statements in the same order.
//
// It owns the trace format (JSON Lines: a header, then one line per
// statement) and the replayer. It must not know any workload: recording is a
// pgx tracer on the driver's connections (bench.RunOptions.Tracer).
//
// A trace is a sequence of sessions (the recorded clients); the replayer
// cuts each session into transactions (BEGIN ... COMMIT or ROLLBACK, or one
// statement outside a block) and hands them, in the order they started when
// recorded, to its clients as they become free. Statements run with the
// recorded parameters; values the server generated during recording (serial
// ids returned by RETURNING) are recorded as the later statements used them,
// so a replay is faithful against a fresh load of the same population and
// seed, and its errors (e.g. duplicate keys) are counted, not fatal.
package trace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Version of the trace format.
const Version = 1

// ErrFormat means a trace file could not be parsed.
var ErrFormat = errors.New("trace: bad trace file")

// Header is a trace's first line.
type Header struct {
	Version   int       `json:"tandem_trace"`
	Workload  string    `json:"workload,omitempty"`
	Mix       string    `json:"mix,omitempty"`
	Clients   int       `json:"clients,omitempty"`
	Scale     int       `json:"scale,omitempty"`
	Target    string    `json:"target,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// Statement is one recorded statement.
type Statement struct {
	// Session is the recorded client (connection), from 0.
	Session int `json:"s"`
	// AtUs is when it started, in µs since the recording started.
	AtUs int64 `json:"at"`
	// DurUs is how long it took, in µs.
	DurUs int64 `json:"us"`
	// SQL with $n parameters.
	SQL string `json:"sql"`
	// Args are the parameters: integers, floats, strings or null.
	Args []any `json:"args,omitempty"`
	// SQLState of the error it ended with, if any.
	SQLState string `json:"err,omitempty"`
}

// Recorder writes a trace. It implements pgx.QueryTracer, pgx.BatchTracer
// and pgx.PrepareTracer: set it as the Tracer of every connection to record.
// It is safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	w        *bufio.Writer
	start    time.Time
	sessions map[*pgx.Conn]*session
	n        int64
	err      error
}

type session struct {
	id       int
	prepared map[string]string // statement name -> SQL
}

// NewRecorder writes h and then the statements to w; call Close at the end.
func NewRecorder(w io.Writer, h Header) (*Recorder, error) {
	h.Version = Version
	if h.StartedAt.IsZero() {
		h.StartedAt = time.Now().UTC().Truncate(time.Second)
	}
	r := &Recorder{w: bufio.NewWriterSize(w, 1<<16), start: time.Now(), sessions: map[*pgx.Conn]*session{}}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if _, err := r.w.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("write trace header: %w", err)
	}
	return r, nil
}

func (r *Recorder) sessionOf(c *pgx.Conn) *session {
	s := r.sessions[c]
	if s == nil {
		s = &session{id: len(r.sessions), prepared: map[string]string{}}
		r.sessions[c] = s
	}
	return s
}

type ctxKey struct{}

type pending struct {
	sql   string
	args  []any
	start time.Time
}

// TraceQueryStart implements pgx.QueryTracer.
func (r *Recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, ctxKey{}, &pending{sql: d.SQL, args: d.Args, start: time.Now()})
}

// TraceQueryEnd implements pgx.QueryTracer: it writes the statement.
func (r *Recorder) TraceQueryEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	p, ok := ctx.Value(ctxKey{}).(*pending)
	if !ok {
		return
	}
	r.record(c, p.sql, p.args, p.start, time.Now(), d.Err)
}

// record writes one statement of session c that ran from start to end.
func (r *Recorder) record(c *pgx.Conn, sql string, args []any, start, end time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessionOf(c)
	if text, ok := s.prepared[sql]; ok {
		sql = text
	}
	st := Statement{Session: s.id, AtUs: start.Sub(r.start).Microseconds(), DurUs: end.Sub(start).Microseconds(), SQL: sql, Args: args}
	if err != nil {
		st.SQLState = sqlState(err)
	}
	r.write(st)
}

type batchCtxKey struct{}

// batchPending is a batch being read: when its previous result was read.
type batchPending struct{ last time.Time }

// TraceBatchStart implements pgx.BatchTracer.
func (r *Recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, batchCtxKey{}, &batchPending{last: time.Now()})
}

// TraceBatchQuery implements pgx.BatchTracer: it writes each statement of a
// batch as its result is read, as if it had started when the previous one's
// result was read (the first: when the batch was sent). A batch's
// statements all went to the server at once; the trace keeps them in order
// and a replay sends them one by one.
func (r *Recorder) TraceBatchQuery(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchQueryData) {
	p, ok := ctx.Value(batchCtxKey{}).(*batchPending)
	if !ok {
		return
	}
	end := time.Now()
	start := p.last
	p.last = end
	r.record(c, d.SQL, d.Args, start, end, d.Err)
}

// TraceBatchEnd implements pgx.BatchTracer.
func (r *Recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TracePrepareStart implements pgx.PrepareTracer: it learns the SQL of a
// statement prepared by name, so that executions of the name record the SQL.
func (r *Recorder) TracePrepareStart(ctx context.Context, c *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.Name != "" {
		r.sessionOf(c).prepared[d.Name] = d.SQL
	}
	return ctx
}

// TracePrepareEnd implements pgx.PrepareTracer.
func (r *Recorder) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (r *Recorder) write(st Statement) {
	if r.err != nil {
		return
	}
	args := make([]any, len(st.Args))
	for i, a := range st.Args {
		args[i] = jsonArg(a)
	}
	st.Args = args
	b, err := json.Marshal(st)
	if err == nil {
		_, err = r.w.Write(append(b, '\n'))
	}
	if err != nil {
		r.err = fmt.Errorf("write trace: %w", err)
		return
	}
	r.n++
}

// jsonArg keeps the values JSON carries faithfully; anything else is
// recorded as its text.
func jsonArg(a any) any {
	switch v := a.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64:
		return v
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case []byte:
		return string(v)
	}
	return fmt.Sprint(a)
}

// Statements returns how many statements were written.
func (r *Recorder) Statements() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Close flushes the trace; it reports the first write error.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	return r.w.Flush()
}

func sqlState(err error) string {
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) {
		return pe.SQLState()
	}
	return ""
}

// Trace is a read trace.
type Trace struct {
	Header     Header
	Statements []Statement
}

// Read parses a trace.
func Read(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	t := &Trace{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if line == 1 {
			if err := dec.Decode(&t.Header); err != nil || t.Header.Version == 0 {
				return nil, fmt.Errorf("%w: line 1 is not a tandem trace header (%v)", ErrFormat, err)
			}
			if t.Header.Version != Version {
				return nil, fmt.Errorf("%w: version %d, want %d", ErrFormat, t.Header.Version, Version)
			}
			continue
		}
		var st Statement
		if err := dec.Decode(&st); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
		}
		if strings.TrimSpace(st.SQL) == "" || st.Session < 0 {
			return nil, fmt.Errorf("%w: line %d: no SQL or a negative session", ErrFormat, line)
		}
		for i, a := range st.Args {
			if n, ok := a.(json.Number); ok {
				if v, err := n.Int64(); err == nil {
					st.Args[i] = v
				} else if f, err := n.Float64(); err == nil {
					st.Args[i] = f
				} else {
					return nil, fmt.Errorf("%w: line %d: argument %d: %v", ErrFormat, line, i+1, err)
				}
			}
		}
		t.Statements = append(t.Statements, st)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%w: empty", ErrFormat)
	}
	return t, nil
}

// Unit is what a replay client runs at once: one recorded transaction.
type Unit struct {
	Session    int
	AtUs       int64
	Statements []Statement
}

// Units cuts the trace's sessions into transactions, ordered by when they
// started: from BEGIN (or START TRANSACTION) through COMMIT, END or
// ROLLBACK; a statement outside a block is a unit of its own. A block left
// open at the end of the trace is a unit too.
func (t *Trace) Units() []Unit {
	open := map[int]*Unit{}
	var units []Unit
	for _, st := range t.Statements {
		kw := firstWord(st.SQL)
		u := open[st.Session]
		if u == nil {
			u = &Unit{Session: st.Session, AtUs: st.AtUs}
			if kw != "BEGIN" && kw != "START" {
				u.Statements = []Statement{st}
				units = append(units, *u)
				continue
			}
			open[st.Session] = u
		}
		u.Statements = append(u.Statements, st)
		if kw == "COMMIT" || kw == "END" || kw == "ROLLBACK" || kw == "ABORT" {
			units = append(units, *u)
			delete(open, st.Session)
		}
	}
	for _, u := range open {
		units = append(units, *u)
	}
	sortUnits(units)
	return units
}

func firstWord(sql string) string {
	s := strings.TrimSpace(sql)
	if i := strings.IndexFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == ';' }); i >= 0 {
		s = s[:i]
	}
	return strings.ToUpper(s)
}
