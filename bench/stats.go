package bench

import (
	"fmt"
	"math"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds, from 1 µs to one hour, with three
// significant digits.
const (
	histLowest  = 1
	histHighest = 3_600_000_000
	histSigFigs = 3
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histSigFigs)
}

func recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	if us < histLowest {
		us = histLowest
	} else if us > histHighest {
		us = histHighest
	}
	_ = h.RecordValue(us)
}

// record is one finished transaction, as a client hands it to the collector.
type record struct {
	lat      time.Duration
	typ      TxType
	out      Outcome
	measured bool // started inside the measured window (after ramp-up)
	// retries is how many aborted attempts (40001, 40P01) were run again
	// before this final one.
	retries uint16
}

// recorder is a client's outbox: the client appends under a mutex that only
// the once-per-second collector contends for.
type recorder struct {
	mu  sync.Mutex
	buf []record
}

func (r *recorder) add(rec record) {
	r.mu.Lock()
	r.buf = append(r.buf, rec)
	r.mu.Unlock()
}

// swap hands the buffered records out and gives the recorder spare to fill.
func (r *recorder) swap(spare []record) []record {
	r.mu.Lock()
	b := r.buf
	r.buf = spare[:0]
	r.mu.Unlock()
	return b
}

// outcomeCounts counts transactions by outcome.
type outcomeCounts [numOutcomes]int64

func (c *outcomeCounts) started() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

func (c *outcomeCounts) counted() int64 { return c[Counted] + c[CountedNoRows] }

// completed counts the transactions run to their end: counted, or rolled
// back by the workload's rules.
func (c *outcomeCounts) completed() int64 {
	return c.counted() + c[RolledBack] + c[AllowedError]
}

// collector owns all statistics. Only one goroutine uses it at a time (the
// ticker while clients run, then Run itself).
type collector struct {
	types   []TxInfo
	recs    []*recorder
	spares  [][]record
	rampup  time.Duration
	counts  []outcomeCounts // measured window
	retries []int64         // measured window, per type
	hist    []*hdrhistogram.Histogram
	total   *hdrhistogram.Histogram
	// done: every transaction the workload ran to its end, committed or
	// rolled back by its rules (not aborted, not failed): the unit a
	// profile's demands are per (planner.PhaseBusy.Completions).
	done *hdrhistogram.Histogram
	// updDone: the update transactions among done (their response time
	// is the window in which a concurrent commit can abort them).
	updDone *hdrhistogram.Histogram
	// readDone: the read-only transactions among done.
	readDone *hdrhistogram.Histogram
	// abortedUs sums the response times (µs) of the measured transactions
	// that ended aborted (class 40, after their retries): client time
	// spent on no completed transaction.
	abortedUs int64
	ivCounts  []outcomeCounts // current interval, whole run
	ivHist    []*hdrhistogram.Histogram
	timeline  []TimelinePoint
}

func newCollector(types []TxInfo, recs []*recorder, rampup time.Duration) *collector {
	c := &collector{
		types:    types,
		recs:     recs,
		spares:   make([][]record, len(recs)),
		rampup:   rampup,
		counts:   make([]outcomeCounts, len(types)),
		retries:  make([]int64, len(types)),
		ivCounts: make([]outcomeCounts, len(types)),
		total:    newHist(),
		done:     newHist(),
		updDone:  newHist(),
		readDone: newHist(),
	}
	for range types {
		c.hist = append(c.hist, newHist())
		c.ivHist = append(c.ivHist, newHist())
	}
	for i := range c.spares {
		c.spares[i] = make([]record, 0, 1024)
	}
	return c
}

// collect drains every client's outbox into the statistics.
func (c *collector) collect() {
	for i, r := range c.recs {
		b := r.swap(c.spares[i])
		for _, rec := range b {
			c.ivCounts[rec.typ][rec.out]++
			counted := rec.out.IsCounted()
			if counted {
				recordLatency(c.ivHist[rec.typ], rec.lat)
			}
			if rec.measured {
				c.counts[rec.typ][rec.out]++
				c.retries[rec.typ] += int64(rec.retries)
				if counted {
					recordLatency(c.hist[rec.typ], rec.lat)
					recordLatency(c.total, rec.lat)
				}
				if rec.out == Aborted {
					c.abortedUs += rec.lat.Microseconds()
				}
				if rec.out.IsCompleted() {
					recordLatency(c.done, rec.lat)
					if !c.types[rec.typ].ReadOnly {
						recordLatency(c.updDone, rec.lat)
					} else {
						recordLatency(c.readDone, rec.lat)
					}
				}
			}
		}
		c.spares[i] = b
	}
}

// TimelinePoint is one interval (normally a second) of the run, counting
// transactions by the time they finished; ramp-up intervals are included and
// marked.
type TimelinePoint struct {
	// T is the end of the interval in seconds since the run started.
	T float64 `json:"t"`
	// IntervalS is the interval's length in seconds.
	IntervalS float64 `json:"interval_s"`
	// Measured is false for intervals that lie mostly inside the ramp-up.
	Measured bool `json:"measured"`
	// TPS is counted transactions per second, all types.
	TPS        float64 `json:"tps"`
	RolledBack int64   `json:"rolled_back"`
	Aborted    int64   `json:"aborted"`
	Errors     int64   `json:"errors"`
	// Types is per transaction type, in the order of Result.TransactionOrder.
	Types []TypePoint `json:"types"`
}

// TypePoint is one transaction type in one timeline interval.
type TypePoint struct {
	TPS   float64 `json:"tps"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// point closes the current interval as a timeline point.
func (c *collector) point(elapsed, interval time.Duration) TimelinePoint {
	p := TimelinePoint{
		T:         round3(elapsed.Seconds()),
		IntervalS: round3(interval.Seconds()),
		Measured:  elapsed-interval/2 > c.rampup, // most of the interval follows the ramp-up
		Types:     make([]TypePoint, len(c.types)),
	}
	secs := interval.Seconds()
	if secs <= 0 {
		secs = 1
	}
	var counted int64
	for i := range c.types {
		ic := &c.ivCounts[i]
		n := ic.counted()
		counted += n
		p.RolledBack += ic[RolledBack] + ic[AllowedError]
		p.Aborted += ic[Aborted]
		p.Errors += ic[Failed]
		p.Types[i] = TypePoint{
			TPS:   round3(float64(n) / secs),
			P50Ms: usToMs(c.ivHist[i].ValueAtPercentile(50)),
			P99Ms: usToMs(c.ivHist[i].ValueAtPercentile(99)),
		}
		*ic = outcomeCounts{}
		c.ivHist[i].Reset()
	}
	p.TPS = round3(float64(counted) / secs)
	c.timeline = append(c.timeline, p)
	return p
}

func usToMs(us int64) float64 { return round3(float64(us) / 1000) }

func round3(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1000) / 1000
}

// txResult summarises one type (or, with hist nil for all types merged by the
// caller, the totals).
func txResult(c outcomeCounts, retries int64, h *hdrhistogram.Histogram, allStarted int64, measuredS float64) TxResult {
	r := TxResult{
		Attempts:      c.started() + retries,
		Aborts:        c[Aborted] + retries,
		Retries:       retries,
		FinalFailures: c[Aborted],
		Started:       c.started(),
		Counted:       c.counted(),
		Hits:          c[Counted],
		RolledBack:    c[RolledBack] + c[AllowedError],
		AllowedErrors: c[AllowedError],
		Aborted:       c[Aborted],
		Unknown:       c[Unknown],
		Errors:        c[Failed],
	}
	if r.Started > 0 {
		r.SuccessRate = round6(float64(r.Counted) / float64(r.Started))
		r.HitRate = round6(float64(r.Hits) / float64(r.Started))
	}
	if allStarted > 0 {
		r.Share = round6(float64(r.Started) / float64(allStarted))
	}
	if measuredS > 0 {
		r.TPS = round3(float64(r.Counted) / measuredS)
	}
	if h.TotalCount() > 0 {
		r.MeanMs = round3(h.Mean() / 1000)
		r.P50Ms = usToMs(h.ValueAtPercentile(50))
		r.P90Ms = usToMs(h.ValueAtPercentile(90))
		r.P99Ms = usToMs(h.ValueAtPercentile(99))
		r.P999Ms = usToMs(h.ValueAtPercentile(99.9))
		r.MaxMs = usToMs(h.Max())
		r.Distribution = distribution(h)
	}
	return r
}

func round6(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1e6) / 1e6
}

// Percentile is one point of a latency distribution.
type Percentile struct {
	Percentile float64 `json:"percentile"`
	Ms         float64 `json:"ms"`
}

// distribution samples the percentile spectrum on a log scale of 1/(1-q),
// as HdrHistogram plots do: 0, 20.6, 36.9, ..., 99.999 and 100 (the maximum).
func distribution(h *hdrhistogram.Histogram) []Percentile {
	var out []Percentile
	for k := 0; k <= 50; k++ {
		q := 100 * (1 - math.Pow(10, -float64(k)/10))
		out = append(out, Percentile{Percentile: round6(q), Ms: usToMs(h.ValueAtPercentile(q))})
	}
	return append(out, Percentile{Percentile: 100, Ms: usToMs(h.Max())})
}

// errLog keeps unexpected and other errors: counts by SQLSTATE and the first
// few messages.
type errLog struct {
	mu      sync.Mutex
	byState map[string]int64
	first   []string
	total   int64
}

const keepFirstErrors = 10

// note records err; it returns the message when it is one of the first few
// unexpected errors (to be printed loudly), else "".
func (l *errLog) note(t TxInfo, out Outcome, err error) string {
	state := SQLState(err)
	key := state
	if key == "" {
		key = "none"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byState == nil {
		l.byState = map[string]int64{}
	}
	l.byState[key]++
	if out != Failed {
		return ""
	}
	l.total++
	if len(l.first) >= keepFirstErrors {
		return ""
	}
	msg := fmt.Sprintf("%s: SQLSTATE %s: %v", t.Name, orNone(state), err)
	l.first = append(l.first, msg)
	return msg
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
