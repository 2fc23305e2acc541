package scaleout

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strings"
)

var lineColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"}

// chart is X(N) per mix as lines over N, with each mix's linear scale-out
// N * X(1) dashed (seed 003's figure 6 shape): self-contained SVG.
func (r *Report) chart() string {
	const (
		width, height            = 720, 420
		left, right, top, bottom = 70, 150, 40, 50
	)
	var mixes []string
	maxN, maxX := 1, 0.0
	x1 := map[string]float64{}
	for _, row := range r.Rows {
		if !contains(mixes, row.Mix) {
			mixes = append(mixes, row.Mix)
		}
		maxN = max(maxN, row.N)
		maxX = math.Max(maxX, row.X)
		if row.N == 1 {
			x1[row.Mix] = row.X
		}
	}
	for _, x := range x1 {
		maxX = math.Max(maxX, x*float64(maxN))
	}
	if maxX == 0 {
		maxX = 1
	}
	step := niceStep(maxX / 5)
	maxX = math.Ceil(maxX/step) * step
	pw, ph := float64(width-left-right), float64(height-top-bottom)
	px := func(n int) float64 {
		if maxN == 1 {
			return float64(left) + pw/2
		}
		return float64(left) + float64(n-1)/float64(maxN-1)*pw
	}
	py := func(x float64) float64 { return float64(top) + ph - x/maxX*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, width, height, width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s: X(N), EMULATED hosts (dashed: N &#215; X(1))</text>`, left, html.EscapeString(r.Design))
	for v := 0.0; v <= maxX+step/2; v += step {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`,
			left, py(v), width-right, py(v), left-6, py(v)+4, fmtNum(v))
	}
	for n := 1; n <= maxN; n++ {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%d</text>`, px(n), height-bottom+18, n)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">nodes N</text>`, float64(left)+pw/2, height-12)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle" fill="#555">transactions/s</text>`, float64(top)+ph/2, float64(top)+ph/2)
	for i, m := range mixes {
		col := lineColors[i%len(lineColors)]
		var pts []string
		for _, row := range r.Rows {
			if row.Mix != m {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(row.N), py(row.X)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s N=%d: %.1f tx/s, efficiency %.2f</title></circle>`,
				px(row.N), py(row.X), col, html.EscapeString(m), row.N, row.X, row.Efficiency)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, col, strings.Join(pts, " "))
		if x := x1[m]; x > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="5 4"/>`, px(1), py(x), px(maxN), py(x*float64(maxN)), col)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`,
			width-right+14, top+i*20, col, width-right+32, top+i*20+10, html.EscapeString(m))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func fmtNum(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%g", f)
}

// WriteHTML writes a self-contained page: the chart and the table.
func (r *Report) WriteHTML(w io.Writer) error {
	var t strings.Builder
	if err := r.WriteTable(&t); err != nil {
		return err
	}
	return htmlTmpl.Execute(w, struct {
		R     *Report
		Chart template.HTML
		Table string
	}{r, template.HTML(r.chart()), t.String()})
}

var htmlTmpl = template.Must(template.New("scaleout").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>tandem bench scaleout</title>
<style>body{font-family:sans-serif;margin:2em;max-width:1100px}pre{background:#f6f6f6;padding:1em;overflow-x:auto}</style></head>
<body>
<h1>tandem bench scaleout: {{.R.Design}} on {{.R.Backend}}, {{.R.Workload}}</h1>
<p><strong>Emulated hosts</strong> on one machine (lab {{.R.Lab}}), started {{.R.Started.Format "2006-01-02 15:04:05 MST"}}; ramp-up {{.R.Rampup}}, measured {{.R.Duration}} per run; medians over rounds.</p>
{{.Chart}}
<pre>{{.Table}}</pre>
</body></html>
`))
