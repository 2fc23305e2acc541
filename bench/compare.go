package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Comparison puts several runs side by side, with ratios to the first run
// and the gain/overhead matrix of seed 001's tables 5.1-5.4.
type Comparison struct {
	Runs  []CompareRun `json:"runs"`
	Types []string     `json:"types"`
	// Gain[i][j] = MQTh(run j) / MQTh(run i) - 1: the gain (positive) or
	// overhead (negative) of run j over base run i.
	Gain [][]float64 `json:"gain"`
}

// CompareRun is one run of a comparison.
type CompareRun struct {
	Label    string  `json:"label"`
	Workload string  `json:"workload"`
	Mix      string  `json:"mix"`
	Clients  int     `json:"clients"`
	Scale    int     `json:"scale"`
	Target   string  `json:"target"`
	MQTh     float64 `json:"mqth"`
	// MQThRatio is MQTh / MQTh of the first run.
	MQThRatio float64                `json:"mqth_ratio"`
	Types     map[string]CompareType `json:"types"`
}

// CompareType is one transaction type of a run; ratios are to the first run
// (0 when the first run has no value).
type CompareType struct {
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	SuccessRate  float64 `json:"success_rate"`
	Started      int64   `json:"started"`
	P50Ratio     float64 `json:"p50_ratio"`
	P99Ratio     float64 `json:"p99_ratio"`
	SuccessRatio float64 `json:"success_ratio"`
}

// RunLabel names a result file in comparisons: the result's Label, else the
// directory name for ".../NAME/result.json", else the file name without .json.
func RunLabel(r *Result, path string) string {
	if r != nil && r.Label != "" {
		return r.Label
	}
	base := filepath.Base(path)
	if base == ResultJSON {
		if d := filepath.Base(filepath.Dir(path)); d != "." && d != "/" {
			return d
		}
	}
	return strings.TrimSuffix(base, ".json")
}

// Compare builds the comparison of results; labels name them (same length).
func Compare(results []*Result, labels []string) (*Comparison, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: compare needs at least one result file", ErrBadOption)
	}
	if len(labels) != len(results) {
		return nil, fmt.Errorf("compare: %d labels for %d results", len(labels), len(results))
	}
	c := &Comparison{}
	seen := map[string]bool{}
	for _, r := range results {
		for _, t := range r.Types() {
			if !seen[t] {
				seen[t] = true
				c.Types = append(c.Types, t)
			}
		}
	}
	first := results[0]
	for i, r := range results {
		cr := CompareRun{Label: labels[i], Workload: r.Workload, Mix: r.Mix, Clients: r.Clients,
			Scale: r.Scale, Target: r.Target, MQTh: r.MQTh, MQThRatio: ratio(r.MQTh, first.MQTh),
			Types: map[string]CompareType{}}
		for _, name := range c.Types {
			t := r.Transactions[name]
			if t == nil {
				continue
			}
			ct := CompareType{P50Ms: t.P50Ms, P99Ms: t.P99Ms, SuccessRate: t.SuccessRate, Started: t.Started}
			if f := first.Transactions[name]; f != nil {
				ct.P50Ratio = ratio(t.P50Ms, f.P50Ms)
				ct.P99Ratio = ratio(t.P99Ms, f.P99Ms)
				ct.SuccessRatio = ratio(t.SuccessRate, f.SuccessRate)
			}
			cr.Types[name] = ct
		}
		c.Runs = append(c.Runs, cr)
	}
	c.Gain = make([][]float64, len(results))
	for i, base := range results {
		c.Gain[i] = make([]float64, len(results))
		for j, r := range results {
			if base.MQTh > 0 {
				c.Gain[i][j] = round6(r.MQTh/base.MQTh - 1)
			}
		}
	}
	return c, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round6(a / b)
}

// WriteJSON writes the comparison as indented JSON.
func (c *Comparison) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode comparison: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Print writes the comparison as text tables.
func (c *Comparison) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tworkload\tmix\tclients\tscale\tMQTh\tvs first\ttarget")
	for _, r := range c.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.1f\t%s\t%s\n", r.Label, r.Workload, r.Mix, r.Clients, r.Scale,
			r.MQTh, ratioStr(r.MQThRatio, r.MQTh), r.Target)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nMQTh gain/overhead over base value (row = base, column = run)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	labelW := len("base value")
	for _, r := range c.Runs {
		labelW = max(labelW, len(r.Label))
	}
	fmt.Fprintf(tw, "%-*s\t", labelW, "base value")
	for _, r := range c.Runs {
		fmt.Fprintf(tw, "%s\t", r.Label)
	}
	fmt.Fprintln(tw)
	for i, r := range c.Runs {
		fmt.Fprintf(tw, "%-*s\t", labelW, r.Label)
		for j := range c.Runs {
			if c.Runs[i].MQTh == 0 {
				fmt.Fprint(tw, "-\t")
				continue
			}
			fmt.Fprintf(tw, "%s\t", gainStr(c.Gain[i][j]))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nper transaction type (ratio to the first run in parentheses)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	nameW := len("transaction")
	for _, name := range c.Types {
		nameW = max(nameW, len(name))
	}
	fmt.Fprintf(tw, "%-*s\tmetric\t", nameW, "transaction")
	for _, r := range c.Runs {
		fmt.Fprintf(tw, "%s\t", r.Label)
	}
	fmt.Fprintln(tw)
	metrics := []struct {
		name string
		val  func(CompareType) (float64, float64)
		fmt  func(float64) string
	}{
		{"p50 ms", func(t CompareType) (float64, float64) { return t.P50Ms, t.P50Ratio }, func(f float64) string { return fmt.Sprintf("%.3f", f) }},
		{"p99 ms", func(t CompareType) (float64, float64) { return t.P99Ms, t.P99Ratio }, func(f float64) string { return fmt.Sprintf("%.3f", f) }},
		{"success", func(t CompareType) (float64, float64) { return t.SuccessRate, t.SuccessRatio }, func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }},
	}
	for _, name := range c.Types {
		for mi, m := range metrics {
			label := ""
			if mi == 0 {
				label = name
			}
			fmt.Fprintf(tw, "%-*s\t%s\t", nameW, label, m.name)
			for ri, r := range c.Runs {
				t, ok := r.Types[name]
				if !ok || t.Started == 0 {
					fmt.Fprint(tw, "-\t")
					continue
				}
				v, rt := m.val(t)
				if ri == 0 || rt == 0 {
					fmt.Fprintf(tw, "%s\t", m.fmt(v))
				} else {
					fmt.Fprintf(tw, "%s (x%.2f)\t", m.fmt(v), rt)
				}
			}
			fmt.Fprintln(tw)
		}
	}
	return tw.Flush()
}

func ratioStr(r, v float64) string {
	if r == 0 && v != 0 {
		return "-"
	}
	return fmt.Sprintf("x%.3f (%+.1f%%)", r, 100*(r-1))
}

// gainStr formats a gain like seed 001's tables: 09.04%, -01.60%.
func gainStr(g float64) string {
	s := fmt.Sprintf("%05.2f%%", math.Abs(100*g))
	if g < 0 {
		return "-" + s
	}
	return s
}
