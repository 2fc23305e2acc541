package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// FailoverTrial is one trial of `tandem bench failover`: a pair started,
// writers through the router, the primary SIGKILLed at a random moment.
type FailoverTrial struct {
	Level string `json:"level"`
	Trial int    `json:"trial"`
	// KillAfterMs is when the primary was killed, after the writers started.
	KillAfterMs float64 `json:"kill_after_ms"`
	// RTOMs is the time from the kill to the first successful commit of a
	// statement sent after the kill; 0 with Recovered false.
	RTOMs     float64 `json:"rto_ms"`
	Recovered bool    `json:"recovered"`
	// PromotedMs is when a node was first seen as the primary of a newer
	// epoch (its /status, polled every 20 ms).
	PromotedMs float64 `json:"promoted_ms,omitempty"`
	NewPrimary string  `json:"new_primary,omitempty"`
	Epoch      uint64  `json:"epoch,omitempty"`
	// Acked commits were acknowledged to the writers; Lost of them are
	// missing on the new primary.
	Acked int64 `json:"acked"`
	Lost  int64 `json:"lost"`
	// Failed statements (the primary died, the failover was under way).
	Failed int64 `json:"failed_statements"`
	// Sessions open at the kill; Survived of them committed again on the
	// same connection.
	Sessions int `json:"sessions"`
	Survived int `json:"sessions_survived"`
	// Degraded: the primary ran degraded (its standby behind) at the kill.
	Degraded bool   `json:"degraded_at_kill,omitempty"`
	Error    string `json:"error,omitempty"`
}

// FailoverLevel sums up one safeness level's trials.
type FailoverLevel struct {
	Level     string  `json:"level"`
	Trials    int     `json:"trials"`
	Recovered int     `json:"recovered"`
	MedianMs  float64 `json:"rto_median_ms"`
	P99Ms     float64 `json:"rto_p99_ms"`
	MaxMs     float64 `json:"rto_max_ms"`
	Acked     int64   `json:"acked"`
	Lost      int64   `json:"lost"`
	Sessions  int     `json:"sessions"`
	Survived  int     `json:"sessions_survived"`
	Errors    int     `json:"trial_errors"`
}

// LeaseCostRound is one round of the steady-state lease cost: the same
// workload on a pair with failover = manual (no coordinator) and automatic.
type LeaseCostRound struct {
	Round      int     `json:"round"`
	Manual     float64 `json:"manual_mqth"`
	Automatic  float64 `json:"automatic_mqth"`
	Ratio      float64 `json:"ratio"`
	FirstGiven string  `json:"first"`
	// CPU time of all the cluster's processes (nodes, router, witness)
	// per counted transaction, in µs; CPURatio is automatic over manual.
	ManualCPUUs    float64 `json:"manual_cpu_us_per_tx,omitempty"`
	AutomaticCPUUs float64 `json:"automatic_cpu_us_per_tx,omitempty"`
	CPURatio       float64 `json:"cpu_ratio,omitempty"`
}

// LeaseCost is the steady-state cost of the coordinator and the lease.
type LeaseCost struct {
	Workload string           `json:"workload"`
	Mix      string           `json:"mix"`
	Scale    int              `json:"scale"`
	Clients  int              `json:"clients"`
	Duration float64          `json:"duration_s"`
	Rounds   []LeaseCostRound `json:"rounds"`
	// Ratio is mean automatic MQTh over mean manual MQTh; MedianRatio
	// and MedianCPURatio the medians of the rounds' ratios.
	Ratio          float64 `json:"ratio"`
	MedianRatio    float64 `json:"median_ratio"`
	MedianCPURatio float64 `json:"median_cpu_ratio,omitempty"`
}

// Summarize computes the lease cost's ratios from its rounds.
func (lc *LeaseCost) Summarize() {
	var sumM, sumA float64
	var ratios, cpu []float64
	for _, r := range lc.Rounds {
		sumM += r.Manual
		sumA += r.Automatic
		if r.Ratio > 0 {
			ratios = append(ratios, r.Ratio)
		}
		if r.CPURatio > 0 {
			cpu = append(cpu, r.CPURatio)
		}
	}
	if sumM > 0 {
		lc.Ratio = round3(sumA / sumM)
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		lc.MedianRatio = round3(median(ratios))
	}
	if len(cpu) > 0 {
		slices.Sort(cpu)
		lc.MedianCPURatio = round3(median(cpu))
	}
}

// FailoverBench is the result of `tandem bench failover`.
type FailoverBench struct {
	Backend    string          `json:"backend"`
	Engine     string          `json:"engine,omitempty"` // writeset | physical ("": writeset)
	Writers    int             `json:"writers"`
	Lease      string          `json:"lease"`
	LeaseGrace string          `json:"lease_grace"`
	AckTimeout string          `json:"ack_timeout"`
	StartedAt  time.Time       `json:"started_at"`
	Trials     []FailoverTrial `json:"trials"`
	Levels     []FailoverLevel `json:"levels"`
	LeaseCost  *LeaseCost      `json:"lease_cost,omitempty"`
	Version    string          `json:"tandem_version"`
	Env        Environment     `json:"environment"`
}

// NewFailoverBench returns an empty result stamped with the environment.
func NewFailoverBench(version string) *FailoverBench {
	return &FailoverBench{StartedAt: time.Now().UTC().Truncate(time.Second), Version: version, Env: environment("")}
}

// Summarize computes the per-level figures from the trials, in the order
// the levels first appear.
func (b *FailoverBench) Summarize() {
	b.Levels = nil
	var order []string
	by := map[string][]FailoverTrial{}
	for _, t := range b.Trials {
		if _, ok := by[t.Level]; !ok {
			order = append(order, t.Level)
		}
		by[t.Level] = append(by[t.Level], t)
	}
	for _, l := range order {
		s := FailoverLevel{Level: l}
		var rtos []float64
		for _, t := range by[l] {
			s.Trials++
			s.Acked += t.Acked
			s.Lost += t.Lost
			s.Sessions += t.Sessions
			s.Survived += t.Survived
			if t.Error != "" {
				s.Errors++
			}
			if t.Recovered {
				s.Recovered++
				rtos = append(rtos, t.RTOMs)
			}
		}
		if len(rtos) > 0 {
			slices.Sort(rtos)
			s.MedianMs = round3(median(rtos))
			s.P99Ms = round3(nearestRank(rtos, 0.99))
			s.MaxMs = round3(rtos[len(rtos)-1])
		}
		b.Levels = append(b.Levels, s)
	}
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// nearestRank is the q-quantile of sorted values by the nearest-rank
// method (with fewer than 100 trials p99 is the maximum).
func nearestRank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Print writes the per-trial lines and the summary table.
func (b *FailoverBench) Print(w io.Writer) error {
	var s strings.Builder
	engine := b.Engine
	if engine == "" {
		engine = "writeset"
	}
	fmt.Fprintf(&s, "failover benchmark: %s pair (engine %s), %d writers through the router, lease %s, grace %s, ack_timeout %s\n\n", b.Backend, engine, b.Writers, b.Lease, b.LeaseGrace, b.AckTimeout)
	tw := tabwriter.NewWriter(&s, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\ttrial\tkilled after ms\tfirst commit ms\tnew primary seen ms\tnew primary\tepoch\tacked\tlost\tfailed stmts\tsessions kept\t")
	for _, t := range b.Trials {
		rto := "-"
		if t.Recovered {
			rto = strconv.FormatFloat(t.RTOMs, 'f', 0, 64)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%.0f\t%s\t%d\t%d\t%d\t%d\t%d/%d\t\n", t.Level, t.Trial, t.KillAfterMs, rto, t.PromotedMs, dashIfEmpty(t.NewPrimary), t.Epoch, t.Acked, t.Lost, t.Failed, t.Survived, t.Sessions)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range b.Trials {
		if t.Error != "" {
			fmt.Fprintf(&s, "!!! %s trial %d: %s\n", t.Level, t.Trial, t.Error)
		}
	}
	s.WriteString("\ntime from SIGKILL of the primary to the first successful commit (RTO), per level:\n")
	tw = tabwriter.NewWriter(&s, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\ttrials\trecovered\tmedian ms\tp99 ms\tmax ms\tacked commits\tlost\tsessions kept\t")
	for _, l := range b.Levels {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%d\t%d\t%d/%d\t\n", l.Level, l.Trials, l.Recovered, l.MedianMs, l.P99Ms, l.MaxMs, l.Acked, l.Lost, l.Survived, l.Sessions)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s.WriteString("(p99 by nearest rank: with fewer than 100 trials it is the maximum; sessions kept: connections opened before the kill that committed again after it)\n")
	if lc := b.LeaseCost; lc != nil {
		fmt.Fprintf(&s, "\nsteady-state lease cost: %s %s, scale %d, %d clients, %gs per run, failover manual vs automatic, alternating:\n", lc.Workload, lc.Mix, lc.Scale, lc.Clients, lc.Duration)
		for _, r := range lc.Rounds {
			fmt.Fprintf(&s, "  round %d (%s first): manual %.1f, automatic %.1f MQTh, ratio %.3f", r.Round, r.FirstGiven, r.Manual, r.Automatic, r.Ratio)
			if r.CPURatio > 0 {
				fmt.Fprintf(&s, "; CPU per transaction (all processes) manual %.0f µs, automatic %.0f µs, ratio %.3f", r.ManualCPUUs, r.AutomaticCPUUs, r.CPURatio)
			}
			s.WriteString("\n")
		}
		fmt.Fprintf(&s, "  automatic / manual MQTh: %.3f (mean of rounds' MQTh), median of the rounds' ratios %.3f\n", lc.Ratio, lc.MedianRatio)
		if lc.MedianCPURatio > 0 {
			fmt.Fprintf(&s, "  automatic / manual CPU per transaction: median of the rounds' ratios %.3f\n", lc.MedianCPURatio)
		}
	}
	_, err := io.WriteString(w, s.String())
	return err
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteJSON writes the result as indented JSON.
func (b *FailoverBench) WriteJSON(w io.Writer) error {
	js, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return fmt.Errorf("encode failover result: %w", err)
	}
	_, err = w.Write(append(js, '\n'))
	return err
}

// Failover result file names.
const (
	FailoverJSON = "failover.json"
	FailoverHTML = "failover.html"
)

// WriteFiles writes failover.json and failover.html into dir.
func (b *FailoverBench) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	var js, h bytes.Buffer
	if err := b.WriteJSON(&js); err != nil {
		return err
	}
	if err := b.WriteHTML(&h); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, FailoverJSON), js.Bytes(), resultFileRW); err != nil {
		return fmt.Errorf("write %s: %w", FailoverJSON, err)
	}
	if err := os.WriteFile(filepath.Join(dir, FailoverHTML), h.Bytes(), resultFileRW); err != nil {
		return fmt.Errorf("write %s: %w", FailoverHTML, err)
	}
	return nil
}

// WriteHTML writes a self-contained report: the summary table and a chart
// of each trial's RTO per level.
func (b *FailoverBench) WriteHTML(w io.Writer) error {
	c := &lineChart{title: "Time from SIGKILL of the primary to the first commit, per trial", xLabel: "trial", yLabel: "ms"}
	for i, l := range b.Levels {
		s := series{name: l.Level, color: palette[i%len(palette)]}
		for _, t := range b.Trials {
			if t.Level == l.Level && t.Recovered {
				s.x = append(s.x, float64(t.Trial))
				s.y = append(s.y, t.RTOMs)
			}
		}
		c.series = append(c.series, s)
	}
	var text strings.Builder
	if err := b.Print(&text); err != nil {
		return err
	}
	data := struct {
		B     *FailoverBench
		Chart template.HTML
		Text  string
	}{b, template.HTML(c.svg()), text.String()}
	if err := failoverTmpl.Execute(w, data); err != nil {
		return fmt.Errorf("render failover report: %w", err)
	}
	return nil
}

var failoverTmpl = template.Must(template.New("failover").Funcs(template.FuncMap{
	"f0": func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tandem bench failover — {{.B.Backend}}</title>
<style>
body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px}
table{border-collapse:collapse;margin:12px 0;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}
.err{color:#b00;font-weight:bold}
pre{font-size:12px;background:#f8f8f8;padding:8px}
svg{display:block;margin:16px 0;border:1px solid #eee}
</style></head><body>
<h1>tandem bench failover — {{.B.Backend}} hot-standby pair{{with .B.Engine}} (engine {{.}}){{end}}, {{.B.Writers}} writers, lease {{.B.Lease}}, grace {{.B.LeaseGrace}}, ack_timeout {{.B.AckTimeout}}</h1>
<div>{{.B.StartedAt.Format "2006-01-02 15:04:05 MST"}}, tandem {{.B.Version}}, {{.B.Env.Hostname}} ({{.B.Env.CPUs}} CPUs)</div>
<table>
<tr><th>level</th><th>trials</th><th>recovered</th><th>median ms</th><th>p99 ms</th><th>max ms</th><th>acked commits</th><th>lost</th><th>sessions kept</th></tr>
{{range .B.Levels}}<tr><td>{{.Level}}</td><td>{{.Trials}}</td><td{{if lt .Recovered .Trials}} class="err"{{end}}>{{.Recovered}}</td><td>{{f0 .MedianMs}}</td><td>{{f0 .P99Ms}}</td><td>{{f0 .MaxMs}}</td><td>{{.Acked}}</td><td{{if gt .Lost 0}} class="err"{{end}}>{{.Lost}}</td><td>{{.Survived}}/{{.Sessions}}</td></tr>
{{end}}</table>
{{.Chart}}
<pre>{{.Text}}</pre>
</body></html>
`))
