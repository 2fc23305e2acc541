package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes predictions as a PredictionSet, indented.
func WriteJSON(w io.Writer, preds []Prediction) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(PredictionSet{Predictions: preds}); err != nil {
		return fmt.Errorf("encode predictions: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write predictions: %w", err)
	}
	return nil
}

// DecodePredictions reads a PredictionSet written by WriteJSON.
func DecodePredictions(r io.Reader) ([]Prediction, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var set PredictionSet
	if err := dec.Decode(&set); err != nil {
		return nil, fmt.Errorf("decode predictions: %w", err)
	}
	for i, p := range set.Predictions {
		if p.Version != PredictionVersion {
			return nil, fmt.Errorf("decode predictions: prediction %d: version %d, want %d", i, p.Version, PredictionVersion)
		}
	}
	return set.Predictions, nil
}

// shortDesign abbreviates a design for tables and legends.
func shortDesign(d Design) string {
	switch d {
	case MultiMaster:
		return "MM"
	case SingleMaster:
		return "SM"
	}
	return string(d)
}

// utilisationSummary lists the queueing resources' utilisations.
func utilisationSummary(pt Point) string {
	var parts []string
	for _, r := range pt.Resources {
		if r.Kind == Queueing.String() {
			parts = append(parts, fmt.Sprintf("%s=%.0f%%", r.Name, 100*r.Utilization))
		}
	}
	return strings.Join(parts, " ")
}

// WriteTable prints the predictions as an aligned text table: one line per
// profile, design and replica count.
func WriteTable(w io.Writer, preds []Prediction) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tDESIGN\tN\tCLIENTS\tTPS\tSPEEDUP\tRESP_MS\tABORT_%\tBOTTLENECK\tBALANCE\tUTILISATION")
	for _, p := range preds {
		for _, pt := range p.Points {
			bal := pt.Balance
			if bal == "" {
				bal = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.2f\t%.1f\t%.3f\t%s\t%s\t%s\n",
				p.Profile, shortDesign(p.Design), pt.Replicas, pt.Clients, pt.ThroughputTPS, pt.Speedup,
				1000*pt.ResponseTimeS, 100*pt.AbortRate, pt.Bottleneck, bal, utilisationSummary(pt))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// chartSeries is one line of a chart.
type chartSeries struct {
	label  string
	color  string
	dashed bool
	x, y   []float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// seriesOf builds one series per prediction: colour per profile, solid for
// multi-master, dashed for single-master.
func seriesOf(preds []Prediction, y func(Point) float64) []chartSeries {
	colors := map[string]string{}
	var out []chartSeries
	for _, p := range preds {
		c, ok := colors[p.Profile]
		if !ok {
			c = palette[len(colors)%len(palette)]
			colors[p.Profile] = c
		}
		s := chartSeries{label: p.Profile + " " + shortDesign(p.Design), color: c, dashed: p.Design == SingleMaster}
		for _, pt := range p.Points {
			s.x = append(s.x, float64(pt.Replicas))
			s.y = append(s.y, y(pt))
		}
		out = append(out, s)
	}
	return out
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten and returns it with
// the tick step that divides it into about five parts.
func niceCeil(v float64) (top, step float64) {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1, 0.2
	}
	raw := v / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	return step * math.Ceil(v/step-1e-9), step
}

func fmtTick(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

const (
	chartW      = 760
	chartH      = 400
	plotLeft    = 70
	plotTop     = 40
	plotRight   = 230 // room for the legend
	plotBottom  = 55
	legendLineH = 18
)

// lineChart renders an SVG fragment (a <g>) of one chart.
func lineChart(title, xLabel, yLabel string, ss []chartSeries) string {
	var b strings.Builder
	pw := float64(chartW - plotLeft - plotRight)
	ph := float64(chartH - plotTop - plotBottom)
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for i := range s.x {
			xmin = math.Min(xmin, s.x[i])
			xmax = math.Max(xmax, s.x[i])
			if !math.IsNaN(s.y[i]) && !math.IsInf(s.y[i], 0) {
				ymax = math.Max(ymax, s.y[i])
			}
		}
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 1
	}
	if xmax == xmin {
		xmin, xmax = xmin-1, xmax+1
	}
	ytop, ystep := niceCeil(ymax)
	px := func(x float64) float64 { return plotLeft + (x-xmin)/(xmax-xmin)*pw }
	py := func(y float64) float64 { return plotTop + ph - y/ytop*ph }

	fmt.Fprintf(&b, `<g font-family="sans-serif" font-size="12">`+"\n")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, html.EscapeString(title))
	// Horizontal grid and y ticks.
	for y := 0.0; y <= ytop+ystep/2; y += ystep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", px(xmin), py(y), px(xmax), py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", px(xmin)-6, py(y)+4, fmtTick(y))
	}
	// x ticks: every replica count up to 20 values, else a nice step.
	xstep := 1.0
	if xmax-xmin > 20 {
		_, xstep = niceCeil(xmax - xmin)
	}
	for x := math.Ceil(xmin/xstep) * xstep; x <= xmax+1e-9; x += xstep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999999"/>`+"\n", px(x), py(0), px(x), py(0)+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), py(0)+18, fmtTick(x))
	}
	// Axes and labels.
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", px(xmin), py(0), px(xmax), py(0))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", px(xmin), py(0), px(xmin), py(ytop))
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", plotLeft+pw/2, chartH-12, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>`+"\n", plotTop+ph/2, plotTop+ph/2, html.EscapeString(yLabel))
	// Series.
	for _, s := range ss {
		var pts []string
		for i := range s.x {
			if math.IsNaN(s.y[i]) || math.IsInf(s.y[i], 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.x[i]), py(s.y[i])))
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="7 4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", s.color, dash, strings.Join(pts, " "))
		for _, p := range pts {
			xy := strings.SplitN(p, ",", 2)
			b.WriteString(marker(xy[0], xy[1], s))
		}
	}
	// Legend.
	lx := float64(chartW - plotRight + 20)
	for i, s := range ss {
		ly := float64(plotTop + 10 + i*legendLineH)
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="7 4"`
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+28, ly, s.color, dash)
		b.WriteString(marker(fmt.Sprintf("%.1f", lx+14), fmt.Sprintf("%.1f", ly), s))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+34, ly+4, html.EscapeString(s.label))
	}
	fmt.Fprintf(&b, "</g>\n")
	return b.String()
}

// marker draws a data point: a filled circle for multi-master, a hollow
// square for single-master, so coinciding curves stay distinguishable.
func marker(x, y string, s chartSeries) string {
	if s.dashed {
		return fmt.Sprintf(`<rect x="%s" y="%s" width="7" height="7" transform="translate(-3.5 -3.5)" fill="#ffffff" stroke="%s" stroke-width="1.5"/>`+"\n", x, y, s.color)
	}
	return fmt.Sprintf(`<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", x, y, s.color)
}

func throughputChart(preds []Prediction) string {
	return lineChart("Predicted throughput", "replicas (N)", "throughput (tps)",
		seriesOf(preds, func(pt Point) float64 { return pt.ThroughputTPS }))
}

func responseChart(preds []Prediction) string {
	return lineChart("Predicted response time", "replicas (N)", "response time (ms)",
		seriesOf(preds, func(pt Point) float64 { return 1000 * pt.ResponseTimeS }))
}

func svgDoc(body string, height int) string {
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n%s</svg>\n",
		chartW, height, chartW, height, body)
}

// WriteSVG writes one standalone SVG image with the throughput chart above
// the response-time chart. Solid lines are multi-master, dashed lines
// single-master; one colour per profile.
func WriteSVG(w io.Writer, preds []Prediction) error {
	body := throughputChart(preds) +
		fmt.Sprintf(`<g transform="translate(0 %d)">`+"\n", chartH) + responseChart(preds) + "</g>\n"
	if _, err := io.WriteString(w, svgDoc(body, 2*chartH)); err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	return nil
}

var reportFuncs = template.FuncMap{
	"ms":   func(s float64) string { return fmt.Sprintf("%.1f", 1000*s) },
	"f1":   func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2":   func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"pct":  func(v float64) string { return fmt.Sprintf("%.3f", 100*v) },
	"util": utilisationSummary,
}

var htmlReport = template.Must(template.New("report").Funcs(reportFuncs).Parse(`<!DOCTYPE html>
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
<p class="note">Queueing-model predictions of the multi-master and single-master designs (seed 003, Elnikety et al., EuroSys 2009) from a standalone profile. Solid lines: multi-master; dashed lines: single-master. Throughput counts committed transactions; response time includes retries of aborted updates.</p>
<div class="charts">
{{.Throughput}}
{{.Response}}
</div>
{{range .Predictions}}
<h2>{{.Profile}} &mdash; {{.Design}}</h2>
<p class="note">workload {{.Workload}} / {{.Mix}}; C = {{.Params.ClientsPerReplica}} clients per replica, Z = {{ms .Params.ThinkTime}} ms, load balancer {{ms .Params.LBDelay}} ms{{if eq (print .Design) "multi-master"}}, certifier {{ms .Params.CertifierDelay}} ms, conflict window {{.Params.CWMode}}{{end}}; L(1) = {{ms .L1}} ms{{if .L1Derived}} (derived){{end}}.</p>
<table>
<tr><th>N</th><th>clients</th><th>tps</th><th>speedup</th><th>response ms</th><th>abort %</th><th>conflict window ms</th><th class="l">bottleneck</th><th class="l">balance</th><th class="l">utilisation</th></tr>
{{range .Points}}<tr><td>{{.Replicas}}</td><td>{{.Clients}}</td><td>{{f1 .ThroughputTPS}}</td><td>{{f2 .Speedup}}</td><td>{{ms .ResponseTimeS}}</td><td>{{pct .AbortRate}}</td><td>{{ms .ConflictWindowS}}</td><td class="l">{{.Bottleneck}}</td><td class="l">{{.Balance}}</td><td class="l">{{util .}}</td></tr>
{{end}}</table>
{{end}}
</body>
</html>
`))

// WriteHTML writes a self-contained HTML report (inline CSS and SVG, no
// external assets) with the throughput and response-time charts and one
// table per prediction.
func WriteHTML(w io.Writer, title string, preds []Prediction) error {
	data := struct {
		Title                string
		Throughput, Response template.HTML
		Predictions          []Prediction
	}{
		Title: title,
		// The charts are generated here from numbers and escaped labels.
		Throughput:  template.HTML(svgDoc(throughputChart(preds), chartH)),
		Response:    template.HTML(svgDoc(responseChart(preds), chartH)),
		Predictions: preds,
	}
	var buf bytes.Buffer
	if err := htmlReport.Execute(&buf, data); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}
