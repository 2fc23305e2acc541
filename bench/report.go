package bench

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
)

// WriteHTML writes a self-contained HTML report: the run's parameters, the
// summary table, and inline SVG charts of throughput and latency over time
// and of the latency distribution per transaction type. It loads nothing
// from the network.
func (r *Result) WriteHTML(w io.Writer) error {
	types := r.Types()
	data := reportData{R: r}
	for _, name := range types {
		if t := r.Transactions[name]; t != nil {
			data.Rows = append(data.Rows, reportRow{Name: name, T: t})
		}
	}
	data.Charts = append(data.Charts,
		template.HTML(r.throughputChart(types).svg()),
		template.HTML(r.latencyTimeChart(types, "p50 latency over time", func(p TypePoint) float64 { return p.P50Ms }).svg()),
		template.HTML(r.latencyTimeChart(types, "p99 latency over time", func(p TypePoint) float64 { return p.P99Ms }).svg()),
		template.HTML(r.distributionChart(types).svg()),
	)
	if err := reportTmpl.Execute(w, data); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

type reportRow struct {
	Name string
	T    *TxResult
}

type reportData struct {
	R      *Result
	Rows   []reportRow
	Charts []template.HTML
}

func (r *Result) rampupShade(c *lineChart) {
	if r.RampupS > 0 {
		c.shadeFrom, c.shadeTo, c.shadeLabel = 0, r.RampupS, "ramp-up"
	}
}

func (r *Result) throughputChart(types []string) *lineChart {
	c := &lineChart{title: "Throughput (counted transactions per second)", xLabel: "seconds since start", yLabel: "tps"}
	r.rampupShade(c)
	total := series{name: "all types", color: "#000", width: 2.5}
	for _, p := range r.Timeline {
		total.x = append(total.x, p.T)
		total.y = append(total.y, p.TPS)
	}
	c.series = append(c.series, total)
	for _, e := range r.Events {
		color := "#b00"
		if e.Kind == EventRecovery {
			color = "#080"
		}
		c.marks = append(c.marks, mark{x: e.T, label: e.Label, color: color})
	}
	for i, name := range types {
		if !r.typeRan(name) {
			continue
		}
		s := series{name: name, color: palette[i%len(palette)]}
		for _, p := range r.Timeline {
			if i < len(p.Types) {
				s.x = append(s.x, p.T)
				s.y = append(s.y, p.Types[i].TPS)
			}
		}
		c.series = append(c.series, s)
	}
	return c
}

func (r *Result) latencyTimeChart(types []string, title string, val func(TypePoint) float64) *lineChart {
	c := &lineChart{title: title, xLabel: "seconds since start", yLabel: "ms"}
	r.rampupShade(c)
	for i, name := range types {
		if !r.typeRan(name) {
			continue
		}
		s := series{name: name, color: palette[i%len(palette)]}
		for _, p := range r.Timeline {
			if i < len(p.Types) && p.Types[i].TPS > 0 {
				s.x = append(s.x, p.T)
				s.y = append(s.y, val(p.Types[i]))
			}
		}
		c.series = append(c.series, s)
	}
	return c
}

// distributionChart plots latency against percentile on the usual
// HdrHistogram axis: x = log10(1/(1-q)), so 90%, 99%, 99.9% ... are equally
// spaced.
func (r *Result) distributionChart(types []string) *lineChart {
	c := &lineChart{title: "Latency distribution (counted transactions, measured window)", xLabel: "percentile", yLabel: "ms (log scale)", logY: true}
	maxX := 0.0
	for i, name := range types {
		t := r.Transactions[name]
		if t == nil || len(t.Distribution) == 0 {
			continue
		}
		s := series{name: name, color: palette[i%len(palette)]}
		for _, d := range t.Distribution {
			if d.Percentile >= 100 {
				continue
			}
			x := -math.Log10(1 - d.Percentile/100)
			s.x = append(s.x, x)
			s.y = append(s.y, d.Ms)
			maxX = math.Max(maxX, x)
		}
		c.series = append(c.series, s)
	}
	for k := 0; float64(k) <= math.Max(1, math.Ceil(maxX-1e-9)); k++ {
		// 0%, 90%, 99%, 99.9%, ...
		q := 100 - math.Pow(10, 2-float64(k))
		c.xTicks = append(c.xTicks, tick{v: float64(k), label: strconv.FormatFloat(q, 'f', max(0, k-2), 64) + "%"})
	}
	return c
}

func (r *Result) typeRan(name string) bool {
	t := r.Transactions[name]
	return t != nil && t.Started > 0
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct": func(f float64, n int64) string { return pct(f, n) },
	"ms":  func(f float64, n int64) string { return ms(f, n) },
	"f1":  func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"g":   func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tandem bench: {{.R.Workload}} {{.R.Mix}} — MQTh {{f1 .R.MQTh}}</title>
<style>
body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px;margin-bottom:4px}
.mqth{font-size:28px;font-weight:bold;margin:12px 0}
table{border-collapse:collapse;margin:12px 0;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}
tr.total td{font-weight:bold;background:#f4f4f4}
.params td{text-align:left}
.err{color:#b00;font-weight:bold}
svg{display:block;margin:16px 0;border:1px solid #eee}
</style></head><body>
<h1>tandem bench — {{.R.Workload}}, mix {{.R.Mix}}</h1>
<div>{{.R.StartedAt.Format "2006-01-02 15:04:05 MST"}}, tandem {{.R.TandemVersion}}{{if .R.Interrupted}} — <span class="err">INTERRUPTED</span>{{end}}</div>
<div class="mqth">MQTh {{f1 .R.MQTh}} <span style="font-size:14px;font-weight:normal">counted transactions/s (all outcomes {{f1 .R.TotalTPS}}/s)</span></div>
<table class="params">
<tr><td>target</td><td>{{.R.Target}}</td></tr>
<tr><td>clients</td><td>{{.R.Clients}}</td></tr>
<tr><td>{{.R.ScaleName}}</td><td>{{.R.Scale}}</td></tr>
<tr><td>ramp-up / measured</td><td>{{g .R.RampupS}} s / {{g .R.MeasuredS}} s{{if gt .R.ThinkMs 0.0}}, think {{g .R.ThinkMs}} ms{{if eq .R.ThinkDist "exponential"}} (exponential mean){{end}}{{end}}</td></tr>
<tr><td>protocol</td><td>{{.R.Protocol}}</td></tr>
<tr><td>keys</td><td>{{if .R.Uniform}}uniform{{else}}non-uniform (default){{end}}, seed {{.R.Seed}}</td></tr>
<tr><td>server</td><td>{{.R.Environment.ServerVersion}}</td></tr>
<tr><td>client host</td><td>{{.R.Environment.Hostname}}, {{.R.Environment.CPUs}} CPUs, {{.R.Environment.OS}}/{{.R.Environment.Arch}}, {{.R.Environment.GoVersion}}</td></tr>
</table>
<table>
<tr><th>transaction</th><th>weight</th><th>started</th><th>counted</th><th>rolled back</th><th>aborted</th><th>retries</th><th>errors</th><th>success</th><th>hit</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>max ms</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{g (index $.R.Weights .Name)}}</td><td>{{.T.Started}}</td><td>{{.T.Counted}}</td><td>{{.T.RolledBack}}</td><td>{{.T.Aborted}}</td><td>{{.T.Retries}}</td><td{{if gt .T.Errors 0}} class="err"{{end}}>{{.T.Errors}}</td><td>{{pct .T.SuccessRate .T.Started}}</td><td>{{pct .T.HitRate .T.Started}}</td><td>{{ms .T.P50Ms .T.Counted}}</td><td>{{ms .T.P90Ms .T.Counted}}</td><td>{{ms .T.P99Ms .T.Counted}}</td><td>{{ms .T.MaxMs .T.Counted}}</td></tr>
{{end}}<tr class="total"><td>TOTAL</td><td></td><td>{{.R.Totals.Started}}</td><td>{{.R.Totals.Counted}}</td><td>{{.R.Totals.RolledBack}}</td><td>{{.R.Totals.Aborted}}</td><td>{{.R.Totals.Retries}}</td><td>{{.R.Totals.Errors}}</td><td>{{pct .R.Totals.SuccessRate .R.Totals.Started}}</td><td>{{pct .R.Totals.HitRate .R.Totals.Started}}</td><td>{{ms .R.Totals.P50Ms .R.Totals.Counted}}</td><td>{{ms .R.Totals.P90Ms .R.Totals.Counted}}</td><td>{{ms .R.Totals.P99Ms .R.Totals.Counted}}</td><td>{{ms .R.Totals.MaxMs .R.Totals.Counted}}</td></tr>
</table>
<p style="font-size:12px">Counted: committed (reads that found no row included). Rolled back: a write changed no row, or an allowed error ({{.R.Totals.AllowedErrors}}). Aborted: SQLSTATE class 40 after the last retry. Retries: re-runs after 40001 or 40P01 (at most {{.R.Retries}} per transaction). Errors: unexpected. Hit: found or changed its rows. Latencies are of counted transactions started after the ramp-up.</p>
{{with .R.Failover}}<h2 style="font-size:16px">Failover</h2>
<table class="params">
<tr><td>primary SIGKILLed</td><td>{{.Killed}} at {{f1 .KillT}} s ({{.KilledAt.Format "15:04:05.000"}})</td></tr>
<tr><td>first successful commit after it</td><td>{{if .Recovered}}at {{f1 .RecoveredT}} s: the failover took <b>{{printf "%.0f" .DurationMs}} ms</b>{{else}}<span class="err">none</span>{{end}}</td></tr>
<tr><td>new primary, epoch</td><td>{{if .NewPrimary}}{{.NewPrimary}}, epoch {{.Epoch}}{{else}}<span class="err">none found</span>{{end}}</td></tr>
<tr><td>safeness, lease, grace</td><td>{{.Safeness}}, {{.Lease}}, {{.LeaseGrace}}</td></tr>
<tr><td>acknowledged commits checked</td><td>{{if .CheckError}}<span class="err">not checked: {{.CheckError}}</span>{{else}}{{.AckedChecked}}, lost: <b{{if gt .Lost 0}} class="err"{{end}}>{{.Lost}}</b>{{end}}</td></tr>
<tr><td>sessions that kept their connection</td><td>{{.SessionsSurvived}} of {{.Sessions}}{{if lt .SessionsSurvived .Sessions}} (the others reconnected through the router){{end}}</td></tr>
</table>
{{end}}{{if .R.Totals.Unknown}}<div>{{.R.Totals.Unknown}} transactions ended with SQLSTATE 08007 (outcome unknown: a commit in flight when its node died; not counted, not retried).</div>{{end}}{{if .R.FirstErrors}}<div class="err">{{.R.Totals.Errors}} unexpected errors in the measured window; first ones:</div><ul>{{range .R.FirstErrors}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{range .Charts}}{{.}}
{{end}}
</body></html>
`))
