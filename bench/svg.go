package bench

import (
	"html"
	"math"
	"strconv"
	"strings"
)

// A small line-chart renderer producing self-contained SVG: no scripts, no
// fonts or styles fetched from anywhere, so reports render offline.

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

type series struct {
	name  string
	color string
	dash  bool
	width float64
	x, y  []float64
}

type tick struct {
	v     float64
	label string
}

type lineChart struct {
	title, xLabel, yLabel string
	width, height         int
	series                []series
	// xTicks replaces the automatic x ticks (e.g. percentile labels).
	xTicks []tick
	// shade marks an x range (the ramp-up) with a grey band and a label.
	shadeFrom, shadeTo float64
	shadeLabel         string
	// logY plots y on a log10 scale with ticks at powers of ten.
	logY bool
	// marks are vertical lines at moments (events) with a label.
	marks []mark
}

// mark is a vertical line at x with a label at the top.
type mark struct {
	x     float64
	label string
	color string
}

const (
	chartLeft   = 64
	chartRight  = 220 // room for the legend
	chartTop    = 34
	chartBottom = 44
)

func (c *lineChart) svg() string {
	w, h := c.width, c.height
	if w == 0 {
		w = 920
	}
	if h == 0 {
		h = 320
	}
	pw := float64(w - chartLeft - chartRight)
	ph := float64(h - chartTop - chartBottom)

	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), 0.0
	for _, s := range c.series {
		for i := range s.x {
			xmin = math.Min(xmin, s.x[i])
			xmax = math.Max(xmax, s.x[i])
			ymax = math.Max(ymax, s.y[i])
			if s.y[i] > 0 {
				ymin = math.Min(ymin, s.y[i])
			}
		}
	}
	for _, t := range c.xTicks {
		xmin = math.Min(xmin, t.v)
		xmax = math.Max(xmax, t.v)
	}
	for _, m := range c.marks {
		xmin = math.Min(xmin, m.x)
		xmax = math.Max(xmax, m.x)
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	// The y axis: linear from 0, or decades for logY.
	var yticks []tick
	var ybot, ytop float64
	yval := func(y float64) float64 { return y }
	if c.logY {
		if math.IsInf(ymin, 0) {
			ymin, ymax = 1, 10
		}
		lo, hi := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
		if hi <= lo {
			hi = lo + 1
		}
		for e := lo; e <= hi; e++ {
			yticks = append(yticks, tick{v: e, label: fmtNum(math.Pow(10, e))})
		}
		ybot, ytop = lo, hi
		yval = func(y float64) float64 { return math.Log10(math.Max(y, math.Pow(10, lo))) }
	} else {
		for _, v := range niceTicks(0, ymax, 5) {
			yticks = append(yticks, tick{v: v, label: fmtNum(v)})
		}
		ytop = yticks[len(yticks)-1].v
		if ytop <= 0 {
			ytop = 1
		}
	}
	xticks := c.xTicks
	if xticks == nil {
		for _, v := range niceTicks(xmin, xmax, 8) {
			if v >= xmin-1e-9 && v <= xmax+1e-9 {
				xticks = append(xticks, tick{v: v, label: fmtNum(v)})
			}
		}
	}
	px := func(x float64) float64 { return chartLeft + (x-xmin)/(xmax-xmin)*pw }
	py := func(y float64) float64 { return chartTop + ph - (yval(y)-ybot)/(ytop-ybot)*ph }

	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="` + strconv.Itoa(w) + `" height="` + strconv.Itoa(h) +
		`" viewBox="0 0 ` + strconv.Itoa(w) + " " + strconv.Itoa(h) + `" font-family="sans-serif" font-size="11">`)
	b.WriteString(`<rect x="0" y="0" width="` + strconv.Itoa(w) + `" height="` + strconv.Itoa(h) + `" fill="#fff"/>`)
	b.WriteString(`<text x="` + fmtNum(float64(w-chartRight)/2+chartLeft/2) + `" y="18" text-anchor="middle" font-size="14" font-weight="bold">` + html.EscapeString(c.title) + `</text>`)
	if c.shadeTo > c.shadeFrom {
		x0, x1 := px(math.Max(c.shadeFrom, xmin)), px(math.Min(c.shadeTo, xmax))
		if x1 > x0 {
			b.WriteString(`<rect x="` + fmtNum(x0) + `" y="` + fmtNum(chartTop) + `" width="` + fmtNum(x1-x0) + `" height="` + fmtNum(ph) + `" fill="#eee"/>`)
			b.WriteString(`<text x="` + fmtNum((x0+x1)/2) + `" y="` + fmtNum(chartTop+12) + `" text-anchor="middle" fill="#888">` + html.EscapeString(c.shadeLabel) + `</text>`)
		}
	}
	// Grid and y axis labels.
	for _, t := range yticks {
		y := chartTop + ph - (t.v-ybot)/(ytop-ybot)*ph
		b.WriteString(`<line x1="` + fmtNum(chartLeft) + `" y1="` + fmtNum(y) + `" x2="` + fmtNum(chartLeft+pw) + `" y2="` + fmtNum(y) + `" stroke="#ddd"/>`)
		b.WriteString(`<text x="` + fmtNum(chartLeft-6) + `" y="` + fmtNum(y+4) + `" text-anchor="end">` + html.EscapeString(t.label) + `</text>`)
	}
	for _, t := range xticks {
		x := px(t.v)
		b.WriteString(`<line x1="` + fmtNum(x) + `" y1="` + fmtNum(chartTop+ph) + `" x2="` + fmtNum(x) + `" y2="` + fmtNum(chartTop+ph+4) + `" stroke="#444"/>`)
		b.WriteString(`<text x="` + fmtNum(x) + `" y="` + fmtNum(chartTop+ph+16) + `" text-anchor="middle">` + html.EscapeString(t.label) + `</text>`)
	}
	b.WriteString(`<rect x="` + fmtNum(chartLeft) + `" y="` + fmtNum(chartTop) + `" width="` + fmtNum(pw) + `" height="` + fmtNum(ph) + `" fill="none" stroke="#444"/>`)
	b.WriteString(`<text x="` + fmtNum(chartLeft+pw/2) + `" y="` + strconv.Itoa(h-8) + `" text-anchor="middle">` + html.EscapeString(c.xLabel) + `</text>`)
	b.WriteString(`<text transform="translate(14 ` + fmtNum(chartTop+ph/2) + `) rotate(-90)" text-anchor="middle">` + html.EscapeString(c.yLabel) + `</text>`)
	// Event marks: a dashed vertical line each, labels staggered so that
	// close events stay readable.
	for i, m := range c.marks {
		x := px(m.x)
		color := m.color
		if color == "" {
			color = "#b00"
		}
		b.WriteString(`<line x1="` + fmtNum(x) + `" y1="` + fmtNum(chartTop) + `" x2="` + fmtNum(x) + `" y2="` + fmtNum(chartTop+ph) + `" stroke="` + color + `" stroke-width="1.5" stroke-dasharray="4 3"><title>` + html.EscapeString(m.label) + `</title></line>`)
		anchor, dx := "start", 3.0
		if x > chartLeft+pw*0.75 {
			anchor, dx = "end", -3
		}
		b.WriteString(`<text x="` + fmtNum(x+dx) + `" y="` + fmtNum(chartTop+24+12*float64(i%3)) + `" text-anchor="` + anchor + `" fill="` + color + `">` + html.EscapeString(m.label) + `</text>`)
	}
	// Lines.
	for i, s := range c.series {
		if len(s.x) == 0 {
			continue
		}
		color := s.color
		if color == "" {
			color = palette[i%len(palette)]
		}
		width := s.width
		if width == 0 {
			width = 1.5
		}
		b.WriteString(`<polyline fill="none" stroke="` + color + `" stroke-width="` + fmtNum(width) + `"`)
		if s.dash {
			b.WriteString(` stroke-dasharray="5 3"`)
		}
		b.WriteString(` points="`)
		for j := range s.x {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(fmtNum(px(s.x[j])))
			b.WriteByte(',')
			b.WriteString(fmtNum(py(s.y[j])))
		}
		b.WriteString(`"><title>` + html.EscapeString(s.name) + `</title></polyline>`)
		if len(s.x) == 1 {
			b.WriteString(`<circle cx="` + fmtNum(px(s.x[0])) + `" cy="` + fmtNum(py(s.y[0])) + `" r="3" fill="` + color + `"/>`)
		}
		// Legend entry.
		ly := float64(chartTop + 8 + 16*i)
		lx := float64(w - chartRight + 12)
		b.WriteString(`<line x1="` + fmtNum(lx) + `" y1="` + fmtNum(ly) + `" x2="` + fmtNum(lx+18) + `" y2="` + fmtNum(ly) + `" stroke="` + color + `" stroke-width="2"`)
		if s.dash {
			b.WriteString(` stroke-dasharray="5 3"`)
		}
		b.WriteString(`/><text x="` + fmtNum(lx+24) + `" y="` + fmtNum(ly+4) + `">` + html.EscapeString(s.name) + `</text>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	var step float64
	switch r := raw / mag; {
	case r < 1.5:
		step = mag
	case r < 3:
		step = 2 * mag
	case r < 7:
		step = 5 * mag
	default:
		step = 10 * mag
	}
	start := math.Floor(lo/step) * step
	var ticks []float64
	for i := 0; ; i++ {
		v := start + float64(i)*step
		ticks = append(ticks, v)
		if v >= hi-step*1e-9 || i > 100 {
			break
		}
	}
	return ticks
}

// fmtNum formats a label or coordinate: integers as such, other values
// rounded to six significant digits (no float noise like 0.30000000000000004).
func fmtNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 6, 64), 64)
	if err != nil {
		r = f
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
