package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
)

// ErrBadOption means a replay option is out of range.
var ErrBadOption = errors.New("trace: invalid option")

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// DSN of the target (any PostgreSQL-wire server). Required.
	DSN string
	// Clients is the number of concurrent connections; 0 means 8.
	Clients int
	// Retries bounds how many times a transaction that aborted with 40001
	// or 40P01 is replayed again.
	Retries int
	// Logger for life-cycle messages; nil means slog.Default().
	Logger *slog.Logger
}

// ReplayResult is what a replay measured.
type ReplayResult struct {
	Target     string  `json:"target"`
	Clients    int     `json:"clients"`
	Units      int64   `json:"transactions"`
	Statements int64   `json:"statements"`
	Failed     int64   `json:"failed_transactions"`
	Retries    int64   `json:"retries"`
	ElapsedS   float64 `json:"elapsed_s"`
	TPS        float64 `json:"tps"`
	// StatementsPerS counts the statements sent, including failed ones.
	StatementsPerS float64 `json:"statements_per_s"`
	// Transaction latency percentiles (ms), of the transactions that committed.
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// ErrorsBySQLState counts failed transactions by their first error.
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate,omitempty"`
	// RecordedS is how long the recording took (first start to last end).
	RecordedS float64 `json:"recorded_s"`
}

func sortUnits(u []Unit) {
	sort.SliceStable(u, func(i, j int) bool { return u[i].AtUs < u[j].AtUs })
}

// Replay runs the trace's transactions against opts.DSN on opts.Clients
// connections, as fast as they go, in the order they started when recorded
// (each client takes the next one when it is free); the transactions of one
// recorded session run one after the other, in their recorded order.
func Replay(ctx context.Context, t *Trace, opts ReplayOptions) (*ReplayResult, error) {
	if opts.Clients == 0 {
		opts.Clients = 8
	}
	if opts.Clients < 0 || opts.Clients > 10000 {
		return nil, fmt.Errorf("%w: --clients must be 1..10000 (got %d)", ErrBadOption, opts.Clients)
	}
	if opts.Retries < 0 || opts.Retries > 1000 {
		return nil, fmt.Errorf("%w: --retries must be 0..1000 (got %d)", ErrBadOption, opts.Retries)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg, err := pgx.ParseConfig(opts.DSN)
	if err != nil {
		return nil, fmt.Errorf("%w: --dsn: %v", ErrBadOption, err)
	}
	units := t.Units()
	conns := make([]*pgx.Conn, opts.Clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close(context.Background())
			}
		}
	}()
	for i := range conns {
		if conns[i], err = pgx.ConnectConfig(ctx, cfg.Copy()); err != nil {
			return nil, fmt.Errorf("replay client %d: connect: %w", i, err)
		}
	}
	res := &ReplayResult{Target: bench.RedactDSN(opts.DSN), Clients: opts.Clients, ErrorsBySQLState: map[string]int64{}}
	if n := len(t.Statements); n > 0 {
		first, last := t.Statements[0].AtUs, int64(0)
		for _, st := range t.Statements {
			first = min(first, st.AtUs)
			last = max(last, st.AtUs+st.DurUs)
		}
		res.RecordedS = float64(last-first) / 1e6
	}
	// A session's transactions replay in their recorded order: each waits
	// for the one before it in its session (handed out earlier, so already
	// running or done) to finish.
	done := make([]chan struct{}, len(units))
	prev := make([]chan struct{}, len(units))
	last := map[int]chan struct{}{}
	for i, u := range units {
		done[i] = make(chan struct{})
		prev[i] = last[u.Session]
		last[u.Session] = done[i]
	}
	var next, statements, failed, retries atomic.Int64
	var mu sync.Mutex
	hist := hdrhistogram.New(1, 3_600_000_000, 3)
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(units)) {
					return
				}
				u := units[i]
				if prev[i] != nil {
					select {
					case <-prev[i]:
					case <-ctx.Done():
						return
					}
				}
				began := time.Now()
				var state string
				for attempt := 0; ; attempt++ {
					var n int
					n, state = runUnit(ctx, c, u)
					statements.Add(int64(n))
					if (state != "40001" && state != "40P01") || attempt >= opts.Retries {
						break
					}
					retries.Add(1)
				}
				close(done[i])
				mu.Lock()
				if state != "" {
					failed.Add(1)
					res.ErrorsBySQLState[state]++
				} else {
					_ = hist.RecordValue(max(1, time.Since(began).Microseconds()))
				}
				mu.Unlock()
				if c.IsClosed() {
					log.Warn("replay client lost its connection", "sqlstate", state)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	res.Units = min(next.Load(), int64(len(units)))
	res.Statements, res.Failed, res.Retries = statements.Load(), failed.Load(), retries.Load()
	res.ElapsedS = elapsed
	if elapsed > 0 {
		res.TPS = float64(res.Units) / elapsed
		res.StatementsPerS = float64(res.Statements) / elapsed
	}
	ms := func(q float64) float64 { return float64(hist.ValueAtQuantile(q)) / 1000 }
	res.P50Ms, res.P90Ms, res.P99Ms, res.MaxMs = ms(50), ms(90), ms(99), float64(hist.Max())/1000
	if len(res.ErrorsBySQLState) == 0 {
		res.ErrorsBySQLState = nil
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("replay interrupted: %w", err)
	}
	return res, nil
}

// runUnit runs one recorded transaction; it returns how many statements it
// sent and the SQLSTATE of the first error ("" when all succeeded). After an
// error inside a block it rolls back.
func runUnit(ctx context.Context, c *pgx.Conn, u Unit) (int, string) {
	for i, st := range u.Statements {
		if _, err := c.Exec(ctx, st.SQL, st.Args...); err != nil {
			state := sqlState(err)
			if state == "" {
				state = "client"
			}
			if len(u.Statements) > 1 && !c.IsClosed() {
				_, _ = c.Exec(ctx, "ROLLBACK")
			}
			return i + 1, state
		}
	}
	return len(u.Statements), ""
}
