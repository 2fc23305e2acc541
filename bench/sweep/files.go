package sweep

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Files the sweep writes into --out.
const (
	FileJSON = "sweep.json"
	FileCSV  = "sweep.csv"
	FileHTML = "sweep.html"
)

// WriteFiles writes sweep.json, sweep.csv and sweep.html into dir.
func (r *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{FileJSON, r.WriteJSON}, {FileCSV, r.WriteCSV}, {FileHTML, r.WriteHTML}} {
		var buf bytes.Buffer
		if err := f.write(&buf); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out %s: write %s: %w", dir, f.name, err)
		}
	}
	return nil
}

// WriteCSV writes one line per configuration and mix: the setting, the
// median MQTh, the baseline and ratio, each round's MQTh (';'-separated)
// and the median p50/p99 latency.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"config", "family", "design", "safeness", "durability", "standby_durability", "sqlite_synchronous",
		"synchronous_commit", "mix", "mqth", "baseline", "ratio", "rounds", "mqth_rounds", "failed_rounds", "p50_ms", "p99_ms", "errors", "standby_lag", "standby_lag_unit"}
	if err := cw.Write(head); err != nil {
		return err
	}
	byName := map[string]Config{}
	for _, c := range r.Configs {
		byName[c.Name] = c
	}
	for _, row := range r.Rows {
		c := byName[row.Config]
		for _, cell := range row.Cells {
			ratio := ""
			if cell.Ratio != nil {
				ratio = ff(roundF(*cell.Ratio))
			}
			var rounds []string
			for _, v := range cell.Rounds {
				rounds = append(rounds, ff(v))
			}
			rec := []string{row.Config, row.Family, c.Design, c.Safeness, c.Durability, c.StandbyDurability, c.SQLiteSynchronous,
				c.SynchronousCommit, cell.Mix, ff(roundF(cell.MQTh)), row.Baseline, ratio, strconv.Itoa(len(cell.Rounds)),
				strings.Join(rounds, ";"), strconv.Itoa(cell.Failed), ff(roundF(cell.P50Ms)), ff(roundF(cell.P99Ms)),
				strconv.FormatInt(cell.Errors, 10), strconv.FormatInt(cell.StandbyLag, 10), cell.StandbyLagUnit}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write %s: %w", FileCSV, err)
	}
	return nil
}

func ff(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

var barColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"}

// barChart renders MQTh per configuration as grouped horizontal bars (one
// bar per mix) with the ratio printed beside each bar: self-contained SVG,
// nothing fetched, so the report renders offline.
func (r *Report) barChart() string {
	const (
		left, right, top = 250, 150, 54
		barH, gap        = 14, 10
	)
	mixes := r.Params.Mixes
	groupH := barH*len(mixes) + gap
	width := 960
	height := top + groupH*len(r.Rows) + 40
	plotW := float64(width - left - right)
	maxV := 0.0
	for _, row := range r.Rows {
		for _, c := range row.Cells {
			maxV = math.Max(maxV, c.MQTh)
		}
	}
	if maxV == 0 {
		maxV = 1
	}
	step := niceStep(maxV / 5)
	maxV = math.Ceil(maxV/step) * step
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`, width, height, width, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15" font-weight="bold">%s MQTh per configuration (ratio to the family baseline beside each bar)</text>`, left-200, workloadTitle(r.Params.workload()))
	bottom := height - 40
	for v := 0.0; v <= maxV+step/2; v += step {
		x := float64(left) + v/maxV*plotW
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, x, top-4, x, bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`, x, bottom+16, strconv.FormatFloat(v, 'f', -1, 64))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">counted transactions per second</text>`, float64(left)+plotW/2, bottom+32)
	for i, row := range r.Rows {
		y0 := top + i*groupH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-8, y0+barH*len(mixes)/2+4, html.EscapeString(row.Config))
		for j, c := range row.Cells {
			y := y0 + j*barH
			w := c.MQTh / maxV * plotW
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %.1f MQTh</title></rect>`,
				left, y, w, barH-2, barColors[j%len(barColors)], html.EscapeString(row.Config), mixTitle(c.Mix), c.MQTh)
			label := c.mqthText(r.Params.Rounds)
			if c.Ratio != nil {
				label += "  " + c.ratioText()
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" fill="#333">%s</text>`, float64(left)+w+4, y+barH-4, html.EscapeString(label))
		}
		if i > 0 && row.Family != r.Rows[i-1].Family {
			fmt.Fprintf(&b, `<line x1="10" y1="%d" x2="%d" y2="%d" stroke="#888" stroke-dasharray="4 3"/>`, y0-gap/2, width-10, y0-gap/2)
		}
	}
	for j, m := range mixes {
		x := left + j*110
		y := 28
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`,
			x, y, barColors[j%len(barColors)], x+18, y+10, mixTitle(m))
	}
	b.WriteString(`</svg>`)
	return b.String()
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

type htmlData struct {
	R       *Report
	Table   string
	Chart   template.HTML
	Seed001 template.HTML
	// Workload and Scale: what ran, on what data.
	Workload, Scale string
}

// WriteHTML writes a small self-contained report: parameters, the table and
// checks as printed, and an inline SVG bar chart.
func (r *Report) WriteHTML(w io.Writer) error {
	var t strings.Builder
	if err := r.Print(&t); err != nil {
		return err
	}
	d := htmlData{R: r, Table: t.String(), Chart: template.HTML(r.barChart()), Seed001: template.HTML(r.seed001HTML()),
		Workload: workloadTitle(r.Params.workload()), Scale: r.Params.scaleText()}
	if err := htmlTmpl.Execute(w, d); err != nil {
		return fmt.Errorf("render %s: %w", FileHTML, err)
	}
	return nil
}

var htmlTmpl = template.Must(template.New("sweep").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>tandem bench sweep</title>
<style>body{font-family:sans-serif;margin:2em;max-width:1100px}pre{background:#f6f6f6;padding:1em;overflow-x:auto}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}td.n{text-align:right}
tr.best td{font-weight:bold}</style></head>
<body>
<h1>tandem bench sweep: {{.Workload}} per configuration</h1>
<p>{{.Scale}}, {{.R.Params.Clients}} clients, ramp-up {{.R.Params.RampupS}} s,
measured {{.R.Params.DurationS}} s per mix, {{.R.Params.Rounds}} round(s); {{.R.Environment.CPUs}} CPUs on {{.R.Environment.Hostname}},
load average {{printf "%.2f" .R.Environment.LoadStart}} at the start and {{printf "%.2f" .R.Environment.LoadEnd}} at the end;
started {{.R.StartedAt.Format "2006-01-02 15:04:05 MST"}}, finished {{.R.FinishedAt.Format "2006-01-02 15:04:05 MST"}}.
{{if .R.Params.Lab}}Every configuration ran on emulated hosts ({{.R.Params.Lab}}): each node or server under its own CPU quota, the router, HAProxy or pgpool-II under theirs, the client under its own;
CPU only, one disk, loopback: results are emulated.{{else}}All processes ran on this one machine (emulated pair, not separate hosts).{{end}}</p>
{{.Chart}}
{{.Seed001}}
<h2>Table and checks</h2>
<pre>{{.Table}}</pre>
<h2>Configurations</h2>
<table><tr><th>configuration</th><th>family</th><th>setting</th></tr>
{{range .R.Configs}}<tr><td>{{.Name}}</td><td>{{.Family}}</td><td>{{.Setting}}</td></tr>
{{end}}</table>
</body></html>
`))

// seed001HTML is the report's section of seed 001's tables ("" without
// them): per workload and mix the summary (throughput, gain or overhead
// against the best and against the system's n1, the best in bold), then
// per system seed 001's matrix (tables 5.1-5.4: each configuration as the
// base value in turn).
func (r *Report) seed001HTML() string {
	if len(r.Seed001) == 0 {
		return ""
	}
	esc := html.EscapeString
	var b strings.Builder
	b.WriteString("<h2>Seed 001's table: n1, n1+(n2), n1+n2+balancer</h2>\n")
	b.WriteString("<p>As Silvestrini's chapter 4: <b>n1</b> one node alone; <b>n1+(n2)</b> a second node synchronised but taking no client " +
		"(every client on n1); <b>n1+n2+policy</b> both nodes behind tandem's router, reads balanced by the policy, writes to n1; " +
		"<b>n1+(n2)+HAProxy</b> HAProxy in front of PostgreSQL's pair, its primary check sending every client to n1; " +
		"<b>n1+n2+pgpool-II</b> pgpool-II in front of that pair, writes to n1, reads balanced per statement over both (routed: its SELECTs per node); " +
		"<b>n1+(n2)+pgpool-II</b> the same pgpool with the standby's weight 0, every statement to n1. " +
		"Percentages are gain (+) or overhead (-): 100 &times; (MQTh / base &minus; 1).</p>\n")
	hostHead := ""
	if r.Params.Lab != "" {
		hostHead = "<th>CPU per host (cores)</th>"
	}
	for _, t := range r.Seed001 {
		fmt.Fprintf(&b, "<h3>%s %s</h3>\n<table><tr><th>system</th><th>configuration</th><th>name</th><th>MQTh</th><th>vs best</th><th>vs n1</th><th>routed per node (router: transactions; pgpool-II: SELECTs)</th>%s</tr>\n",
			esc(workloadTitle(t.Workload)), esc(mixTitle(t.Mix)), hostHead)
		for _, row := range t.Rows {
			mq := "-"
			if c, ok := r.Cell(row.Config, t.Mix); ok {
				mq = c.mqthText(r.Params.Rounds)
			}
			class := ""
			if row.Config == t.Best {
				class = ` class="best"`
			}
			hosts := ""
			if hostHead != "" {
				hosts = "<td>" + esc(row.hostCPUText()) + "</td>"
			}
			fmt.Fprintf(&b, "<tr%s><td>%s</td><td>%s</td><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td>%s</td>%s</tr>\n",
				class, esc(systemTitle(row.System)), esc(row.Shape), esc(row.Config), esc(mq), esc(pctText(row.VsBest)), esc(pctText(row.VsN1)), esc(row.balancedText()), hosts)
		}
		b.WriteString("</table>\n")
		for _, m := range t.Matrices {
			fmt.Fprintf(&b, "<p>%s, %s %s: gain/overhead of each column over the row as base value</p>\n<table><tr><th>base value</th>",
				esc(systemTitle(m.System)), esc(workloadTitle(t.Workload)), esc(mixTitle(t.Mix)))
			for _, s := range m.Shapes {
				fmt.Fprintf(&b, "<th>%s</th>", esc(s))
			}
			b.WriteString("</tr>\n")
			for i, line := range m.Pct {
				fmt.Fprintf(&b, "<tr><th>%s</th>", esc(m.Shapes[i]))
				for _, v := range line {
					fmt.Fprintf(&b, "<td class=\"n\">%s</td>", esc(pctText(v)))
				}
				b.WriteString("</tr>\n")
			}
			b.WriteString("</table>\n")
		}
	}
	return b.String()
}
