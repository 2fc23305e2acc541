package planner

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
)

// DefaultTolerance is seed 003's accuracy claim: predictions within 15 % of
// the measured throughput.
const DefaultTolerance = 0.15

// Input is one input of a validation: a value the model took and whether it
// was measured (and how) or assumed.
type Input struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Measured bool   `json:"measured"`
	// Source says how it was measured, or why the assumption.
	Source string `json:"source"`
}

// ValidationPoint is predicted against measured at one replica count.
type ValidationPoint struct {
	Deviation
	// PredictedSpeedup is X(N)/X(1) of the prediction, MeasuredSpeedup
	// that of the measurements (0 without a measured N = 1).
	PredictedSpeedup float64 `json:"predicted_speedup"`
	MeasuredSpeedup  float64 `json:"measured_speedup,omitempty"`
	// Within is |ThroughputError| <= the validation's tolerance.
	Within bool `json:"within"`
	// ModelCPUPerTxS and MeasuredCPUPerTxS are CPU-seconds per committed
	// transaction summed over all nodes: what the model charges
	// (SystemDemand, in raw CPU-seconds) and what the hosts
	// used; set by the caller that has both (0: unknown).
	ModelCPUPerTxS    float64 `json:"model_cpu_per_tx_s,omitempty"`
	MeasuredCPUPerTxS float64 `json:"measured_cpu_per_tx_s,omitempty"`
	// PredictedApplyBatch and MeasuredApplyBatch are the writesets a
	// multi-master node applied per batch: the model's B_N and the
	// nodes' counters (0: not modelled or not measured).
	PredictedApplyBatch float64 `json:"predicted_apply_batch_writesets,omitempty"`
	MeasuredApplyBatch  float64 `json:"measured_apply_batch_writesets,omitempty"`
	// MeasuredApplyOwnShare is the share of the measured batches'
	// writesets their own node committed (the model's B counts the other
	// nodes' only), MeasuredFastApplyShare the share of the nodes'
	// commits their committer applied in a back-end transaction of its
	// own (0: not measured; reports before 2026-12-07 18:00 have
	// neither).
	MeasuredApplyOwnShare  float64 `json:"measured_apply_own_share,omitempty"`
	MeasuredFastApplyShare float64 `json:"measured_fast_apply_share,omitempty"`
	// PredictedAbortRate and MeasuredAbortRate are the share of update
	// attempts that abort: the model's A_N and the sweep's (set by the
	// caller that has both). Compared by their difference, not a ratio:
	// a relative error of two rates near 0 says nothing.
	PredictedAbortRate float64  `json:"predicted_abort_rate"`
	MeasuredAbortRate  *float64 `json:"measured_abort_rate,omitempty"`
	// PredictedWindowS is multi-master's conflict window CW(N), the
	// model's update residence plus its certifier delay, and
	// MeasuredUpdateS the update transactions' mean response time in the
	// sweep, the window they actually had (0: not modelled or not
	// measured); PredictedCertifyS and MeasuredCertifyS the certifier
	// delay the model charged and the nodes' mean certification round
	// trip. What the abort rate grows with (planner/DESIGN.md).
	// MeasuredReadS is the read-only transactions' mean response time in
	// the sweep: with MeasuredUpdateS, where the mix's time went.
	PredictedWindowS  float64 `json:"predicted_conflict_window_s,omitempty"`
	MeasuredUpdateS   float64 `json:"measured_update_response_s,omitempty"`
	MeasuredReadS     float64 `json:"measured_read_response_s,omitempty"`
	PredictedCertifyS float64 `json:"predicted_certifier_delay_s,omitempty"`
	MeasuredCertifyS  float64 `json:"measured_certify_s,omitempty"`
}

// Validation compares one prediction with measurements of the same
// workload, mix and design.
type Validation struct {
	Prediction Prediction        `json:"prediction"`
	Tolerance  float64           `json:"tolerance"`
	Points     []ValidationPoint `json:"points"`
	// MaxAbsThroughputError is the largest |ThroughputError|, at WorstReplicas;
	// MeanAbsThroughputError the mean of |ThroughputError| over the points.
	MaxAbsThroughputError  float64 `json:"max_abs_throughput_error"`
	WorstReplicas          int     `json:"worst_replicas"`
	MeanAbsThroughputError float64 `json:"mean_abs_throughput_error"`
	// MaxAbsResponseTimeError is the largest |ResponseTimeError| over the
	// points that have a measured response time.
	MaxAbsResponseTimeError float64 `json:"max_abs_response_time_error"`
	// AllWithin is true when every point is within the tolerance.
	AllWithin bool    `json:"all_within"`
	Inputs    []Input `json:"inputs,omitempty"`
}

// Validate lines up measurements with a prediction (Compare), in replica
// order, and summarises the errors against tolerance (a fraction: 0.15 is
// 15 %).
func Validate(pred Prediction, obs []Observation, tolerance float64) (Validation, error) {
	if !(tolerance > 0) || math.IsInf(tolerance, 0) {
		return Validation{}, fmt.Errorf("%w: tolerance must be > 0, got %g", ErrInvalidParams, tolerance)
	}
	if len(obs) == 0 {
		return Validation{}, fmt.Errorf("%w: no measurement to compare with", ErrInvalidParams)
	}
	obs = append([]Observation(nil), obs...)
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].Replicas < obs[j].Replicas })
	for i := 1; i < len(obs); i++ {
		if obs[i].Replicas == obs[i-1].Replicas {
			return Validation{}, fmt.Errorf("%w: two measurements at %d replicas", ErrInvalidParams, obs[i].Replicas)
		}
	}
	devs, err := Compare(pred, obs)
	if err != nil {
		return Validation{}, err
	}
	v := Validation{Prediction: pred, Tolerance: tolerance, AllWithin: true}
	var x1Pred, x1Meas float64
	if pt, ok := pred.At(1); ok {
		x1Pred = pt.ThroughputTPS
	}
	if obs[0].Replicas == 1 {
		x1Meas = obs[0].ThroughputTPS
	}
	var sum float64
	for _, d := range devs {
		p := ValidationPoint{Deviation: d}
		if x1Pred > 0 {
			p.PredictedSpeedup = d.PredictedTPS / x1Pred
		}
		if x1Meas > 0 {
			p.MeasuredSpeedup = d.MeasuredTPS / x1Meas
		}
		abs := math.Abs(d.ThroughputError)
		p.Within = abs <= tolerance
		v.AllWithin = v.AllWithin && p.Within
		if abs > v.MaxAbsThroughputError || v.WorstReplicas == 0 {
			v.MaxAbsThroughputError, v.WorstReplicas = abs, d.Replicas
		}
		sum += abs
		if d.ResponseTimeError != nil {
			v.MaxAbsResponseTimeError = math.Max(v.MaxAbsResponseTimeError, math.Abs(*d.ResponseTimeError))
		}
		v.Points = append(v.Points, p)
	}
	v.MeanAbsThroughputError = sum / float64(len(devs))
	return v, nil
}

// validationSeries draws each validation as two lines of one colour: the
// prediction dashed, the measurements solid.
func validationSeries(vs []Validation, y func(ValidationPoint) (pred, meas float64)) []chartSeries {
	var out []chartSeries
	for i, v := range vs {
		c := palette[i%len(palette)]
		name := v.Prediction.Mix
		if name == "" {
			name = v.Prediction.Profile
		}
		p := chartSeries{label: name + " predicted", color: c, dashed: true}
		m := chartSeries{label: name + " measured", color: c}
		for _, pt := range v.Points {
			a, b := y(pt)
			p.x, p.y = append(p.x, float64(pt.Replicas)), append(p.y, a)
			if b > 0 {
				m.x, m.y = append(m.x, float64(pt.Replicas)), append(m.y, b)
			}
		}
		out = append(out, p, m)
	}
	return out
}

// ValidationSVG returns the two charts (throughput, response time) as SVG
// documents: predicted dashed, measured solid, one colour per mix, as seed
// 003's figures 6-9.
func ValidationSVG(vs []Validation) (throughput, response string) {
	throughput = svgDoc(lineChart("Throughput: predicted vs measured", "replicas (N)", "throughput (tps)",
		validationSeries(vs, func(p ValidationPoint) (float64, float64) { return p.PredictedTPS, p.MeasuredTPS })), chartH)
	response = svgDoc(lineChart("Response time: predicted vs measured", "replicas (N)", "response time (ms)",
		validationSeries(vs, func(p ValidationPoint) (float64, float64) {
			return 1000 * p.PredictedResponseS, 1000 * p.MeasuredResponseS
		})), chartH)
	return throughput, response
}

var validationFuncs = template.FuncMap{
	"ms":   func(s float64) string { return fmt.Sprintf("%.2f", 1000*s) },
	"ms3":  func(s float64) string { return fmt.Sprintf("%.3f", 1000*s) },
	"f1":   func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2":   func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"pct":  func(v float64) string { return fmt.Sprintf("%+.1f", 100*v) },
	"apct": func(v float64) string { return fmt.Sprintf("%.1f", 100*v) },
	"rate": func(model float64, meas *float64) string {
		if meas == nil {
			return fmt.Sprintf("%.2f / -", 100*model)
		}
		return fmt.Sprintf("%.2f / %.2f", 100*model, 100**meas)
	},
	"ppct": func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%+.1f", 100**v)
	},
}

var validationHTML = template.Must(template.New("validation").Funcs(validationFuncs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; }
h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f2f2f2; }
td.l, th.l { text-align: left; }
p.note { font-size: 0.9em; color: #555; max-width: 60em; }
.charts svg { display: block; margin: 1em 0; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="note">{{.Note}} Dashed: predicted by the queueing model from the standalone profile; solid: measured. Relative error = (predicted - measured) / measured; tolerance {{apct .Tolerance}} % (seed 003's claim).</p>
<div class="charts">
{{.Throughput}}
{{.Response}}
</div>
{{range .Validations}}
<h2>{{.Prediction.Workload}} / {{.Prediction.Mix}} &mdash; {{.Prediction.Design}}</h2>
<table>
<tr><th>N</th><th>predicted tps</th><th>measured tps</th><th>error %</th><th>predicted speedup</th><th>measured speedup</th><th>predicted ms</th><th>measured ms</th><th>error %</th><th>aborted update attempts %, model / measured</th><th>CPU ms/tx model</th><th>CPU ms/tx measured</th><th>writesets per apply batch, model / measured</th><th class="l">bottleneck (model)</th><th class="l">within</th></tr>
{{range .Points}}<tr><td>{{.Replicas}}</td><td>{{f1 .PredictedTPS}}</td><td>{{f1 .MeasuredTPS}}</td><td>{{pct .ThroughputError}}</td><td>{{f2 .PredictedSpeedup}}</td><td>{{f2 .MeasuredSpeedup}}</td><td>{{ms .PredictedResponseS}}</td><td>{{ms .MeasuredResponseS}}</td><td>{{ppct .ResponseTimeError}}</td><td>{{rate .PredictedAbortRate .MeasuredAbortRate}}</td><td>{{ms3 .ModelCPUPerTxS}}</td><td>{{ms3 .MeasuredCPUPerTxS}}</td><td>{{if or .PredictedApplyBatch .MeasuredApplyBatch}}{{f1 .PredictedApplyBatch}} / {{f1 .MeasuredApplyBatch}}{{else}}-{{end}}</td><td class="l">{{.PredictedBottleneck}}</td><td class="l">{{if .Within}}yes{{else}}no{{end}}</td></tr>
{{end}}</table>
<p class="note">Throughput error: max {{apct .MaxAbsThroughputError}} % (N = {{.WorstReplicas}}), mean {{apct .MeanAbsThroughputError}} %.</p>
<table>
<tr><th class="l">input</th><th class="l">value</th><th class="l">measured or assumed</th></tr>
{{range .Inputs}}<tr><td class="l">{{.Name}}</td><td class="l">{{.Value}}</td><td class="l">{{if .Measured}}measured{{else}}assumed{{end}}: {{.Source}}</td></tr>
{{end}}</table>
{{end}}
</body>
</html>
`))

// WriteValidationHTML writes a self-contained HTML page: the overlaid
// charts and, per validation, the table and its inputs.
func WriteValidationHTML(w io.Writer, title, note string, vs []Validation) error {
	tol := DefaultTolerance
	if len(vs) > 0 {
		tol = vs[0].Tolerance
	}
	tp, rp := ValidationSVG(vs)
	data := struct {
		Title, Note          string
		Tolerance            float64
		Throughput, Response template.HTML
		Validations          []Validation
	}{Title: title, Note: note, Tolerance: tol,
		// The charts are generated here from numbers and escaped labels.
		Throughput: template.HTML(tp), Response: template.HTML(rp), Validations: vs}
	var buf bytes.Buffer
	if err := validationHTML.Execute(&buf, data); err != nil {
		return fmt.Errorf("validation html: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write validation html: %w", err)
	}
	return nil
}

// SystemDemand is the demand per committed transaction at the named
// resource summed over all N hosts, as both models charge it: every read
// rc wherever it runs, every update attempt wc on the node that runs it
// (single-master's master, or any multi-master replica), and its writeset
// ws on each of the N − 1 others, f = WSShare() of the updates having one,
//
//	Pr·rc + Pw/(1 − a)·wc + Pw·f·(N − 1)·ws(b)
//
// with a the abort rate (the master's, or A_N) and b the writesets per
// apply batch (Point.ApplyBatch; 0: the profile's, ws as measured).
// Compared with a measured system-wide busy time per transaction it tells
// whether replication costs what the standalone profile says. It reports
// false for an unknown resource.
func (p Profile) SystemDemand(resource string, n int, a, b float64, c ApplyCost) (float64, bool) {
	if n < 1 || a < 0 || a >= 1 {
		return 0, false
	}
	for _, r := range p.Resources {
		if r.Name == resource {
			return p.Pr*r.RC + p.Pw/(1-a)*r.WC + p.Pw*p.WSShare()*float64(n-1)*p.WSFor(r, b, c), true
		}
	}
	return 0, false
}
