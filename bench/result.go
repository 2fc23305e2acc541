package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is the outcome of one run; it is what result.json holds.
type Result struct {
	Workload string `json:"workload"`
	Mix      string `json:"mix"`
	// Weights of the mix in percent of started transactions, by type name.
	Weights   map[string]float64 `json:"weights"`
	Clients   int                `json:"clients"`
	RampupS   float64            `json:"rampup_s"`
	DurationS float64            `json:"duration_s"`
	// MeasuredS is the measured window actually run (less than DurationS
	// when the run was interrupted).
	MeasuredS float64 `json:"measured_s"`
	ThinkMs   float64 `json:"think_ms"`
	// ThinkDist is fixed or exponential (ThinkMs is then the mean).
	ThinkDist string `json:"think_dist,omitempty"`
	// Retries is the bound on re-runs of a transaction aborted with 40001
	// or 40P01 (RunOptions.Retries).
	Retries int `json:"retries"`
	// Scale is the database size in ScaleName units; the JSON also carries
	// it under the ScaleName key (e.g. "subscribers").
	Scale     int    `json:"scale"`
	ScaleName string `json:"scale_name"`
	Uniform   bool   `json:"uniform"`
	Seed      uint64 `json:"seed"`
	Protocol  string `json:"protocol"`
	// Target is the DSN without its password.
	Target string `json:"target"`
	// Label names the run in comparisons; empty means the file name.
	Label string `json:"label,omitempty"`
	// MQTh is the mean qualified throughput: counted transactions per second
	// over the measured window, all clients together.
	MQTh float64 `json:"mqth"`
	// TotalTPS counts every transaction started in the measured window,
	// whatever its outcome.
	TotalTPS float64 `json:"total_tps"`
	// CompletedTPS counts the transactions run to their end (committed, or
	// rolled back by the workload's rules; not aborted or failed) per
	// second, and CompletedMeanMs is their mean response time: the units
	// of a planner profile's demands, which tandem plan validate compares
	// (TM1 rolls back 17.5 % of its update transactions by its rules).
	CompletedTPS    float64 `json:"completed_tps,omitempty"`
	CompletedMeanMs float64 `json:"completed_mean_ms,omitempty"`
	// CompletedCostMs is the clients' time per completed transaction:
	// CompletedMeanMs plus the time of the transactions that ended
	// aborted, spread over the completed ones. With retries (--retries)
	// an aborted attempt's time is already in its transaction's response
	// time; without (TM1's default) it is spent on no completed
	// transaction, and the planner's response time, which retries every
	// aborted attempt (R = N·C/X − Z), counts it.
	CompletedCostMs float64 `json:"completed_cost_ms,omitempty"`
	// UpdateAttempts counts the update transactions' attempts in the
	// measured window, retries of aborted ones included, and
	// UpdateAbortRate is the share of them that aborted (SQLSTATE class
	// 40): the planner's abort rate A_N.
	UpdateAttempts  int64   `json:"update_attempts,omitempty"`
	UpdateAbortRate float64 `json:"update_abort_rate,omitempty"`
	// UpdateMeanMs is the mean response time of the update transactions
	// run to their end (retries included): what the planner's conflict
	// window CW(N) models.
	UpdateMeanMs float64 `json:"update_mean_ms,omitempty"`
	// ReadMeanMs is the same for the read-only transactions: with
	// UpdateMeanMs it shows where a mix's response time goes.
	ReadMeanMs float64 `json:"read_mean_ms,omitempty"`
	// PerMinute is the workload's per-minute figure (TPC-C: tpmC), if any.
	PerMinute *PerMinute `json:"per_minute,omitempty"`
	// Transactions by type name; TransactionOrder gives the workload's order.
	Transactions     map[string]*TxResult `json:"transactions"`
	TransactionOrder []string             `json:"transaction_order"`
	Totals           TxResult             `json:"totals"`
	// ErrorsBySQLState counts every error an attempt ended with (allowed,
	// aborted, retried and unexpected), whole run including ramp-up; "none" is an
	// error without SQLSTATE (e.g. a broken connection).
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate,omitempty"`
	// ClientsDisconnected counts clients whose connection broke during the
	// run (each reconnected and went on).
	ClientsDisconnected int `json:"clients_disconnected,omitempty"`
	// FirstErrors are the first unexpected errors, with their SQLSTATE.
	FirstErrors   []string        `json:"first_errors,omitempty"`
	Interrupted   bool            `json:"interrupted,omitempty"`
	StartedAt     time.Time       `json:"started_at"`
	FinishedAt    time.Time       `json:"finished_at"`
	TandemVersion string          `json:"tandem_version"`
	Environment   Environment     `json:"environment"`
	Timeline      []TimelinePoint `json:"timeline"`
	// Events mark moments on the timeline (a node killed, service back).
	Events []Event `json:"events,omitempty"`
	// Failover is set when the run forced one (tandem demo).
	Failover *Failover `json:"failover,omitempty"`
}

// PerMinute is one transaction type's committed transactions per minute
// over the measured window, e.g. TPC-C's tpmC (NewOrders per minute).
type PerMinute struct {
	Name        string  `json:"name"`
	Transaction string  `json:"transaction"`
	Value       float64 `json:"value"`
}

// TxResult is one transaction type's (or all types') statistics over the
// measured window. Latencies are of counted transactions.
type TxResult struct {
	Started int64 `json:"started"`
	// Attempts is Started plus Retries: every time the transaction ran.
	Attempts int64 `json:"attempts"`
	// Aborts counts aborted attempts (class 40), retried or final.
	Aborts int64 `json:"aborts"`
	// Retries counts attempts run again after a 40001 or 40P01 abort.
	Retries int64 `json:"retries"`
	// FinalFailures are transactions still aborted after the last retry
	// (the same as Aborted).
	FinalFailures int64 `json:"final_failures"`
	// Counted transactions committed (reads that found no row included).
	Counted int64 `json:"counted"`
	// Hits found or changed the rows they looked for.
	Hits int64 `json:"hits"`
	// RolledBack: a write changed 0 rows, or an allowed error (included).
	RolledBack    int64 `json:"rolled_back"`
	AllowedErrors int64 `json:"allowed_errors"`
	// Aborted: ended aborted (class 40) after its retries.
	Aborted int64 `json:"aborted"`
	// Unknown: ended with SQLSTATE 08007, the server unable to say
	// whether it committed (a commit in flight at a failover).
	Unknown int64 `json:"unknown_outcome,omitempty"`
	// Errors are unexpected errors.
	Errors int64 `json:"errors"`
	// SuccessRate is Counted/Started; HitRate is Hits/Started.
	SuccessRate float64 `json:"success_rate"`
	HitRate     float64 `json:"hit_rate"`
	// Share of all started transactions.
	Share float64 `json:"share"`
	// TPS is counted transactions per second.
	TPS          float64      `json:"tps"`
	MeanMs       float64      `json:"mean_ms"`
	P50Ms        float64      `json:"p50_ms"`
	P90Ms        float64      `json:"p90_ms"`
	P99Ms        float64      `json:"p99_ms"`
	P999Ms       float64      `json:"p999_ms"`
	MaxMs        float64      `json:"max_ms"`
	Distribution []Percentile `json:"distribution,omitempty"`
}

type resultAlias Result

// MarshalJSON writes the result with the scale also under its own name,
// e.g. "subscribers": 100000 for TM1.
func (r *Result) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal((*resultAlias)(r))
	if err != nil {
		return nil, err
	}
	if r.ScaleName == "" || r.ScaleName == "scale" || !isJSONKey(r.ScaleName) {
		return b, nil
	}
	// Insert the named scale before "clients", near the top.
	key := []byte(`,"clients":`)
	i := bytes.Index(b, key)
	if i < 0 {
		return b, nil
	}
	extra := `,"` + r.ScaleName + `":` + strconv.Itoa(r.Scale)
	out := make([]byte, 0, len(b)+len(extra))
	out = append(out, b[:i]...)
	out = append(out, extra...)
	return append(out, b[i:]...), nil
}

func isJSONKey(s string) bool {
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// Types returns the transaction results in the workload's order.
func (r *Result) Types() []string {
	if len(r.TransactionOrder) > 0 {
		return r.TransactionOrder
	}
	var names []string
	for n := range r.Transactions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ReadResult reads a result.json (or a file of that shape).
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("parse result %s: %w", path, err)
	}
	if r.Workload == "" || r.Transactions == nil {
		return nil, fmt.Errorf("parse result %s: not a tandem bench result (no workload or transactions)", path)
	}
	return &r, nil
}

// Result file names written by WriteFiles.
const (
	ResultJSON  = "result.json"
	TimelineCSV = "timeline.csv"
	ReportHTML  = "report.html"
)

const resultFileRW = 0o644

// WriteFiles writes result.json, timeline.csv and report.html into dir
// (created if needed).
func (r *Result) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ResultJSON), js.Bytes(), resultFileRW); err != nil {
		return fmt.Errorf("write %s: %w", ResultJSON, err)
	}
	var csvb bytes.Buffer
	if err := r.WriteTimelineCSV(&csvb); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, TimelineCSV), csvb.Bytes(), resultFileRW); err != nil {
		return fmt.Errorf("write %s: %w", TimelineCSV, err)
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ReportHTML), html.Bytes(), resultFileRW); err != nil {
		return fmt.Errorf("write %s: %w", ReportHTML, err)
	}
	return nil
}

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// WriteTimelineCSV writes one row per timeline interval: the time, phase,
// counted tps, rolled back/aborted/error counts, and per transaction type
// its tps, p50 and p99 latency in milliseconds.
func (r *Result) WriteTimelineCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	types := r.Types()
	head := []string{"t_s", "interval_s", "phase", "tps", "rolled_back", "aborted", "errors"}
	for _, t := range types {
		head = append(head, t+"_tps", t+"_p50_ms", t+"_p99_ms")
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, p := range r.Timeline {
		phase := "measure"
		if !p.Measured {
			phase = "rampup"
		}
		row := []string{ff(p.T), ff(p.IntervalS), phase, ff(p.TPS),
			strconv.FormatInt(p.RolledBack, 10), strconv.FormatInt(p.Aborted, 10), strconv.FormatInt(p.Errors, 10)}
		for i := range types {
			var tp TypePoint
			if i < len(p.Types) {
				tp = p.Types[i]
			}
			row = append(row, ff(tp.TPS), ff(tp.P50Ms), ff(tp.P99Ms))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write timeline: %w", err)
	}
	return nil
}

func ff(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// PrintSummary writes the human-readable summary table.
func (r *Result) PrintSummary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "workload %s, mix %s, %d clients, %d %s, protocol %s, keys %s\n",
		r.Workload, r.Mix, r.Clients, r.Scale, r.ScaleName, r.Protocol, keysName(r.Uniform))
	fmt.Fprintf(&b, "target %s, ramp-up %gs, measured %gs", r.Target, r.RampupS, r.MeasuredS)
	if r.ThinkMs > 0 {
		fmt.Fprintf(&b, ", think %gms", r.ThinkMs)
		if r.ThinkDist == ThinkExponential {
			b.WriteString(" (exponential mean)")
		}
	}
	if r.Retries > 0 {
		fmt.Fprintf(&b, ", up to %d retries on 40001/40P01", r.Retries)
	}
	fmt.Fprintf(&b, ", seed %d\n", r.Seed)
	if r.Interrupted {
		fmt.Fprintf(&b, "INTERRUPTED: measured %.1fs of %gs\n", r.MeasuredS, r.DurationS)
	}
	fmt.Fprintf(&b, "\nMQTh %.1f counted transactions/s (all outcomes %.1f/s)\n", r.MQTh, r.TotalTPS)
	if r.PerMinute != nil {
		fmt.Fprintf(&b, "%s %.1f (%s committed per minute)\n", r.PerMinute.Name, r.PerMinute.Value, r.PerMinute.Transaction)
	}
	b.WriteString("\n")

	nameW := len("transaction")
	for _, name := range r.Types() {
		nameW = max(nameW, len(name))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tshare\tstarted\tcounted\trolled back\taborted\tretries\terrors\tsuccess\thit\tp50 ms\tp90 ms\tp99 ms\tmax ms\t\n", nameW, "transaction")
	row := func(name string, t *TxResult) {
		fmt.Fprintf(tw, "%-*s\t%.1f%%\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", nameW, name, 100*t.Share,
			t.Started, t.Counted, t.RolledBack, t.Aborted, t.Retries, t.Errors,
			pct(t.SuccessRate, t.Started), pct(t.HitRate, t.Started),
			ms(t.P50Ms, t.Counted), ms(t.P90Ms, t.Counted), ms(t.P99Ms, t.Counted), ms(t.MaxMs, t.Counted))
	}
	for _, name := range r.Types() {
		if t := r.Transactions[name]; t != nil {
			row(name, t)
		}
	}
	tot := r.Totals
	row("TOTAL", &tot)
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Totals.AllowedErrors > 0 {
		fmt.Fprintf(&b, "\nrolled back includes %d allowed errors (integrity violations the workload permits)\n", r.Totals.AllowedErrors)
	}
	if r.Totals.Unknown > 0 {
		fmt.Fprintf(&b, "\n%d transactions ended with SQLSTATE 08007 (outcome unknown: a commit in flight when its node died; not counted, not retried; docs/operations.md \"Failures clients see\")\n", r.Totals.Unknown)
	}
	if r.Totals.Errors > 0 || len(r.FirstErrors) > 0 {
		fmt.Fprintf(&b, "\n!!! %d UNEXPECTED ERRORS in the measured window; first ones:\n", r.Totals.Errors)
		for _, m := range r.FirstErrors {
			fmt.Fprintf(&b, "  %s\n", m)
		}
	}
	if len(r.ErrorsBySQLState) > 0 {
		var keys []string
		for k := range r.ErrorsBySQLState {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%d", k, r.ErrorsBySQLState[k]))
		}
		fmt.Fprintf(&b, "errors by SQLSTATE (whole run): %s\n", strings.Join(parts, " "))
	}
	if r.ClientsDisconnected > 0 {
		fmt.Fprintf(&b, "clients whose connection broke (they reconnected): %d of %d\n", r.ClientsDisconnected, r.Clients)
	}
	if r.Failover != nil {
		if r.Totals.Errors > 0 {
			b.WriteString("(errors include the statements in flight when the primary died)\n")
		}
		b.WriteString("\n")
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		return r.Failover.Print(w)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func keysName(uniform bool) string {
	if uniform {
		return "uniform"
	}
	return "non-uniform (default)"
}

func pct(f float64, n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64) + "%"
}

func ms(f float64, n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatFloat(f, 'f', 3, 64)
}
