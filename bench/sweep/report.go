package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Measurement is one run of one mix on one configuration in one round.
type Measurement struct {
	Config string  `json:"config"`
	Mix    string  `json:"mix"`
	Round  int     `json:"round"`
	MQTh   float64 `json:"mqth"`
	// TotalTPS counts every transaction started in the measured window.
	TotalTPS float64 `json:"total_tps"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	// Aborted (class 40) and unexpected errors in the measured window.
	Aborted int64 `json:"aborted"`
	Errors  int64 `json:"errors"`
	// FirstError is the first unexpected error, if any.
	FirstError string `json:"first_error,omitempty"`
	// MeasuredS is the measured window actually run.
	MeasuredS float64 `json:"measured_s"`
	// StandbyLag is how far the standby's apply was behind the primary
	// when the measured window ended (hot-standby: GSNs; PostgreSQL pair:
	// WAL bytes not yet replayed).
	StandbyLag     int64  `json:"standby_lag,omitempty"`
	StandbyLagUnit string `json:"standby_lag_unit,omitempty"`
	// Proxied is, with HAProxy in front (pg-pair-haproxy-*), how many
	// client connections HAProxy sent to each server during the run
	// (ramp-up included), by HAProxy's server name (pg1 the primary, pg2
	// the standby).
	Proxied map[string]int64 `json:"proxied,omitempty"`
	// Routed is, with tandem's router in front (seed001's
	// n1+n2+<policy>), how many transactions the router sent to each node
	// during the run (ramp-up included), by node id.
	Routed map[string]int64 `json:"routed,omitempty"`
	// Selects is, with pgpool-II in front (pg-pair-pgpool-*), how many
	// SELECTs pgpool sent to each server during the run (ramp-up
	// included; select_cnt of SHOW pool_nodes), n1 the primary, n2 the
	// standby. Writes are not counted: they all go to n1.
	Selects map[string]int64 `json:"selects,omitempty"`
	// HostCPU is, on emulated hosts (--lab), the CPU each host used
	// during the run (ramp-up included), in cores, by host: n1, n2,
	// router, client.
	HostCPU map[string]float64 `json:"host_cpu,omitempty"`
	// LoadAvg is the 1-minute load average when the run started.
	LoadAvg   float64   `json:"load_avg"`
	StartedAt time.Time `json:"started_at"`
	// Err is set when the run (or its configuration's setup) failed; the
	// numbers are then zero and the measurement is left out of medians.
	Err string `json:"error,omitempty"`
}

// Params are the sweep's parameters as recorded in the report.
type Params struct {
	Subscribers int      `json:"subscribers"`
	Clients     int      `json:"clients"`
	RampupS     float64  `json:"rampup_s"`
	DurationS   float64  `json:"duration_s"`
	Mixes       []string `json:"mixes"`
	Rounds      int      `json:"rounds"`
	// Reload tells whether TM1 is reloaded before each mix (false: loaded
	// once per setup, the mixes run one after the other on the same data).
	Reload        bool   `json:"reload"`
	FlushInterval string `json:"flush_interval"`
	// PostgreSQL is the server version the pg-* configurations ran on.
	PostgreSQL string `json:"postgresql,omitempty"`
	// Suite is the --suite that chose the configurations ("": --configs).
	Suite string `json:"suite,omitempty"`
	// Workload is the workload run when it is not TM1 ("": tm1), and
	// ScaleName what Subscribers then counts (warehouses, scale).
	Workload  string `json:"workload,omitempty"`
	ScaleName string `json:"scale_name,omitempty"`
	// Lab is the emulated hosts' quotas (--lab), "" when the sweep ran
	// without them.
	Lab string `json:"lab,omitempty"`
	// Unix: the clients connected over Unix sockets (--unix).
	Unix bool `json:"unix,omitempty"`
	// ReadConsistency is tandem's routed configurations' (--read-consistency).
	ReadConsistency string `json:"read_consistency,omitempty"`
}

// workload is the workload's name ("" is tm1).
func (p Params) workload() string {
	if p.Workload == "" {
		return "tm1"
	}
	return p.Workload
}

// scaleText says how big the loaded database was: "P=20000 subscribers",
// "warehouses=2", "scale=1".
func (p Params) scaleText() string {
	if p.workload() == "tm1" {
		return fmt.Sprintf("P=%d subscribers", p.Subscribers)
	}
	name := p.ScaleName
	if name == "" {
		name = "scale"
	}
	return fmt.Sprintf("%s=%d", name, p.Subscribers)
}

// workloadTitle is a workload's name as the papers write it.
func workloadTitle(w string) string {
	switch w {
	case "", "tm1":
		return "TM1"
	case "tpcc":
		return "TPC-C"
	case "epinions":
		return "Epinions"
	}
	return w
}

// Environment of the sweep.
type Environment struct {
	Hostname   string  `json:"hostname"`
	CPUs       int     `json:"cpus"`
	GoMaxProcs int     `json:"gomaxprocs"`
	GoVersion  string  `json:"go_version"`
	LoadStart  float64 `json:"load_avg_start"`
	LoadEnd    float64 `json:"load_avg_end"`
	Tandem     string  `json:"tandem_version"`
}

// Report is the sweep's outcome: what sweep.json holds.
type Report struct {
	Params      Params      `json:"params"`
	Environment Environment `json:"environment"`
	StartedAt   time.Time   `json:"started_at"`
	FinishedAt  time.Time   `json:"finished_at"`
	Interrupted bool        `json:"interrupted,omitempty"`
	Configs     []Config    `json:"configs"`
	Rows        []Row       `json:"rows"`
	Checks      []Check     `json:"checks"`
	// Physical compares tandem's physical pair with HAProxy + PostgreSQL's
	// pair and PostgreSQL's pair direct, per level and mix (issue 13).
	Physical []PhysicalRow `json:"physical"`
	// Seed001 holds seed 001's tables (--suite seed001): per workload and
	// mix, throughput and gain or overhead against the best case.
	Seed001 []Seed001Table `json:"seed001,omitempty"`
	Runs    []Measurement  `json:"runs"`
}

// Row is one configuration's line of the table.
type Row struct {
	Config   string `json:"config"`
	Family   string `json:"family"`
	Baseline string `json:"baseline"`
	Cells    []Cell `json:"cells"` // one per mix, in Params.Mixes order
}

// Cell is one configuration x mix: the median over rounds.
type Cell struct {
	Mix string `json:"mix"`
	// MQTh is the median of the rounds that ran (0 when none did).
	MQTh float64 `json:"mqth"`
	// Rounds holds each successful round's MQTh in round order.
	Rounds []float64 `json:"rounds"`
	// Ratio is MQTh / the baseline's MQTh on the same mix; nil when either
	// is missing.
	Ratio  *float64 `json:"ratio"`
	P50Ms  float64  `json:"p50_ms"`
	P99Ms  float64  `json:"p99_ms"`
	Errors int64    `json:"errors"`
	// StandbyLag is the largest standby lag at the end of a round's window
	// (see Measurement.StandbyLag).
	StandbyLag     int64  `json:"standby_lag,omitempty"`
	StandbyLagUnit string `json:"standby_lag_unit,omitempty"`
	// Failed counts rounds that did not produce a number.
	Failed int `json:"failed,omitempty"`
}

// Check is one of the measured comparisons the issue names. They are
// informational: nothing fails on them.
type Check struct {
	ID     string  `json:"id"` // "a" or "b"
	Mix    string  `json:"mix"`
	Level  string  `json:"level,omitempty"`
	Left   string  `json:"left"`
	Right  string  `json:"right"`
	LeftV  float64 `json:"left_value"`
	RightV float64 `json:"right_value"`
	// Status is PASS, FAIL or SKIP (a side was not measured).
	Status string `json:"status"`
	Text   string `json:"text"`
}

// PhysicalRow is one level x mix of the physical-pair comparison: the
// medians (0 when not measured) and the ratios of tandem's physical pair
// to HAProxy + PostgreSQL's pair and to PostgreSQL's pair direct (nil when
// either side is missing).
type PhysicalRow struct {
	Level           string   `json:"level"`
	Mix             string   `json:"mix"`
	Physical        string   `json:"physical"`
	HAProxy         string   `json:"haproxy"`
	Direct          string   `json:"direct"`
	PhysicalV       float64  `json:"physical_mqth"`
	HAProxyV        float64  `json:"haproxy_mqth"`
	DirectV         float64  `json:"direct_mqth"`
	VsHAProxy       *float64 `json:"physical_vs_haproxy"`
	VsDirect        *float64 `json:"physical_vs_direct"`
	HAProxyVsDirect *float64 `json:"haproxy_vs_direct"`
}

// Build computes the table, the ratios and the checks from the measurements.
func Build(p Params, env Environment, configs []Config, runs []Measurement) *Report {
	r := &Report{Params: p, Environment: env, Configs: configs, Runs: runs}
	cells := map[string]*Cell{}
	key := func(c, m string) string { return c + "\x00" + m }
	for _, c := range configs {
		row := Row{Config: c.Name, Family: c.Family, Baseline: baselineOf(c.Family)}
		for _, mix := range p.Mixes {
			var ok []Measurement
			failed := 0
			for _, m := range runs {
				if m.Config != c.Name || m.Mix != mix {
					continue
				}
				if m.Err != "" {
					failed++
					continue
				}
				ok = append(ok, m)
			}
			slices.SortFunc(ok, func(a, b Measurement) int { return a.Round - b.Round })
			cell := Cell{Mix: mix, Failed: failed}
			var p50, p99 []float64
			for _, m := range ok {
				cell.Rounds = append(cell.Rounds, m.MQTh)
				p50 = append(p50, m.P50Ms)
				p99 = append(p99, m.P99Ms)
				cell.Errors += m.Errors
				if m.StandbyLagUnit != "" {
					cell.StandbyLag, cell.StandbyLagUnit = max(cell.StandbyLag, m.StandbyLag), m.StandbyLagUnit
				}
			}
			cell.MQTh, cell.P50Ms, cell.P99Ms = Median(cell.Rounds), Median(p50), Median(p99)
			row.Cells = append(row.Cells, cell)
		}
		r.Rows = append(r.Rows, row)
	}
	for i := range r.Rows {
		for j := range r.Rows[i].Cells {
			cells[key(r.Rows[i].Config, r.Rows[i].Cells[j].Mix)] = &r.Rows[i].Cells[j]
		}
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		for j := range row.Cells {
			c := &row.Cells[j]
			if base := cells[key(row.Baseline, c.Mix)]; base != nil && base.MQTh > 0 && len(c.Rounds) > 0 {
				v := c.MQTh / base.MQTh
				c.Ratio = &v
			}
		}
	}
	ratio := func(cfg, mix string) (float64, bool) {
		c := cells[key(cfg, mix)]
		if c == nil || c.Ratio == nil {
			return 0, false
		}
		return *c.Ratio, true
	}
	mqth := func(cfg, mix string) (float64, bool) {
		c := cells[key(cfg, mix)]
		if c == nil || len(c.Rounds) == 0 {
			return 0, false
		}
		return c.MQTh, true
	}
	// (a) at each safeness level, tandem's pair ratio vs PostgreSQL's.
	for _, mix := range p.Mixes {
		for _, lp := range levelPairs {
			ch := Check{ID: "a", Mix: mix, Level: lp.Level, Left: lp.Tandem, Right: lp.Postgres}
			lv, lok := ratio(lp.Tandem, mix)
			rv, rok := ratio(lp.Postgres, mix)
			ch.LeftV, ch.RightV = lv, rv
			switch {
			case !lok || !rok:
				ch.Status = "SKIP"
				ch.Text = fmt.Sprintf("%s %-15s tandem %s %s vs PostgreSQL %s %s: not measured",
					strings.ToUpper(mix), lp.Level, lp.Tandem, ratioOrDash(lv, lok), lp.Postgres, ratioOrDash(rv, rok))
			default:
				ch.Status = passFail(lv >= rv)
				lc, _ := configByName(lp.Tandem)
				ch.Text = fmt.Sprintf("%s %-15s tandem %s = %.2fx of %s %s PostgreSQL %s = %.2fx of %s",
					strings.ToUpper(mix), lp.Level, lp.Tandem, lv, baselineOf(lc.Family), cmpSign(lv, rv), lp.Postgres, rv, PostgresBaseline)
			}
			r.Checks = append(r.Checks, ch)
		}
	}
	// (c), (d): tandem's physical pair against HAProxy + PostgreSQL's pair
	// (at least as fast) and PostgreSQL's pair direct (at least 0.85).
	div := func(a, b float64, aok, bok bool) *float64 {
		if !aok || !bok || b == 0 {
			return nil
		}
		v := a / b
		return &v
	}
	for _, mix := range p.Mixes {
		// A configuration of tandem's with a HAProxy peer that ran (in
		// clear text or TLS) is not listed again against one that did
		// not; (d) does not depend on the peer: once per configuration.
		peered, directDone := map[string]bool{}, map[string]bool{}
		for _, pp := range physicalPairs {
			if _, ok := mqth(pp.HAProxy, mix); ok {
				peered[pp.Physical] = true
			}
		}
		for _, pp := range physicalPairs {
			row := PhysicalRow{Level: pp.Level, Mix: mix, Physical: pp.Physical, HAProxy: pp.HAProxy, Direct: pp.Direct}
			pv, pok := mqth(pp.Physical, mix)
			if c, _ := configByName(pp.Physical); !pok && c.Direct {
				continue // the router's rows only where they ran
			}
			hv, hok := mqth(pp.HAProxy, mix)
			if c, _ := configByName(pp.HAProxy); !hok && (c.ClientTLS || peered[pp.Physical]) {
				continue // HAProxy's TLS rows only where they ran; one peer that ran is enough
			}
			dv, dok := mqth(pp.Direct, mix)
			row.PhysicalV, row.HAProxyV, row.DirectV = pv, hv, dv
			row.VsHAProxy, row.VsDirect, row.HAProxyVsDirect = div(pv, hv, pok, hok), div(pv, dv, pok, dok), div(hv, dv, hok, dok)
			if pok || hok {
				r.Physical = append(r.Physical, row)
			}
			c := Check{ID: "c", Mix: mix, Level: pp.Level, Left: pp.Physical, Right: pp.HAProxy, LeftV: pv, RightV: hv}
			if row.VsHAProxy == nil {
				c.Status = "SKIP"
				c.Text = fmt.Sprintf("%s %-15s tandem %s vs HAProxy + PostgreSQL %s: not measured", strings.ToUpper(mix), pp.Level, pp.Physical, pp.HAProxy)
			} else {
				c.Status = passFail(pv >= hv)
				c.Text = fmt.Sprintf("%s %-15s tandem %s %.1f MQTh %s HAProxy + PostgreSQL %s %.1f MQTh (%.2fx)",
					strings.ToUpper(mix), pp.Level, pp.Physical, pv, cmpSign(pv, hv), pp.HAProxy, hv, *row.VsHAProxy)
			}
			r.Checks = append(r.Checks, c)
			if directDone[pp.Physical] {
				continue
			}
			directDone[pp.Physical] = true
			d := Check{ID: "d", Mix: mix, Level: pp.Level, Left: pp.Physical, Right: pp.Direct, LeftV: pv, RightV: dv}
			if row.VsDirect == nil {
				d.Status = "SKIP"
				d.Text = fmt.Sprintf("%s %-15s tandem %s vs PostgreSQL direct %s: not measured", strings.ToUpper(mix), pp.Level, pp.Physical, pp.Direct)
			} else {
				d.Status = passFail(*row.VsDirect >= MinPhysicalVsDirect)
				d.Text = fmt.Sprintf("%s %-15s tandem %s %.1f MQTh = %.2fx of PostgreSQL direct %s %.1f MQTh (goal >= %.2fx)",
					strings.ToUpper(mix), pp.Level, pp.Physical, pv, *row.VsDirect, pp.Direct, dv, MinPhysicalVsDirect)
			}
			r.Checks = append(r.Checks, d)
		}
	}
	// (b) high availability for free: hs-received-relaxed >= standalone-strict on R20W80.
	ch := Check{ID: "b", Mix: "r20w80", Left: "hs-received-relaxed", Right: TandemBaseline}
	lv, lok := mqth(ch.Left, ch.Mix)
	rv, rok := mqth(ch.Right, ch.Mix)
	ch.LeftV, ch.RightV = lv, rv
	if !lok || !rok {
		ch.Status = "SKIP"
		ch.Text = fmt.Sprintf("R20W80 %s vs %s: not measured (needs both configurations and the r20w80 mix)", ch.Left, ch.Right)
	} else {
		ch.Status = passFail(lv >= rv)
		ch.Text = fmt.Sprintf("R20W80 %s %.1f MQTh %s %s %.1f MQTh (%.2fx)", ch.Left, lv, cmpSign(lv, rv), ch.Right, rv, lv/rv)
	}
	r.Checks = append(r.Checks, ch)
	if p.Suite == SuiteSeed001 {
		r.Seed001 = seed001Tables(p.workload(), p.Mixes, configs, r.Rows, runs)
	}
	return r
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func cmpSign(a, b float64) string {
	if a >= b {
		return ">="
	}
	return "<"
}

func ratioOrDash(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

// Median of xs (the mean of the middle two for an even count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Row returns the table row of a configuration.
func (r *Report) Row(config string) (*Row, bool) {
	for i := range r.Rows {
		if r.Rows[i].Config == config {
			return &r.Rows[i], true
		}
	}
	return nil, false
}

// Cell returns a configuration's cell for a mix.
func (r *Report) Cell(config, mix string) (*Cell, bool) {
	row, ok := r.Row(config)
	if !ok {
		return nil, false
	}
	for i := range row.Cells {
		if row.Cells[i].Mix == mix {
			return &row.Cells[i], true
		}
	}
	return nil, false
}

// Failed counts runs that failed.
func (r *Report) Failed() int {
	n := 0
	for _, m := range r.Runs {
		if m.Err != "" {
			n++
		}
	}
	return n
}

// mixTitle is the mix's name as the paper writes it.
func mixTitle(m string) string {
	switch m {
	case "r80w20", "r20w80":
		return strings.ToUpper(m)
	}
	return m
}

func (c *Cell) mqthText(rounds int) string {
	if len(c.Rounds) == 0 {
		if c.Failed > 0 {
			return "failed"
		}
		return "-"
	}
	s := strconv.FormatFloat(c.MQTh, 'f', 1, 64)
	if c.Errors > 0 {
		s += "!"
	}
	if rounds > 1 && len(c.Rounds) < rounds {
		s += fmt.Sprintf(" (%d/%d)", len(c.Rounds), rounds)
	}
	return s
}

func (c *Cell) ratioText() string {
	if c.Ratio == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx", *c.Ratio)
}

// Print writes the table (one row per configuration, per mix the MQTh and
// its ratio, tandem rows against standalone-strict in one ratio column and
// PostgreSQL rows against pg-standalone-on in the other) and the checks.
func (r *Report) Print(w io.Writer) error {
	var b strings.Builder
	p := r.Params
	if p.Suite != "" {
		// A suite's report is its own tables (the family ratios and the
		// checks are the full sweep's).
		r.printSeed001(&b)
		r.printTrouble(&b, r.hasErrors())
		_, err := io.WriteString(w, b.String())
		return err
	}
	roundsNote := "1 round"
	if p.Rounds > 1 {
		roundsNote = fmt.Sprintf("median of %d rounds", p.Rounds)
	}
	fmt.Fprintf(&b, "%s MQTh (counted transactions/s), %s, %d clients, ramp-up %gs, measured %gs, %s\n",
		workloadTitle(p.workload()), p.scaleText(), p.Clients, p.RampupS, p.DurationS, roundsNote)
	fmt.Fprintf(&b, "ratios: tandem rows / %s, PostgreSQL rows / %s, same mix\n", TandemBaseline, PostgresBaseline)
	if p.Unix {
		b.WriteString("clients over Unix sockets (--unix): PostgreSQL's, HAProxy's, pgpool-II's and tandem's entry's\n")
	}
	if p.ReadConsistency != "" {
		fmt.Fprintf(&b, "tandem's router at read_consistency = %s (--read-consistency)\n", p.ReadConsistency)
	}
	if p.Lab != "" {
		fmt.Fprintf(&b, "emulated hosts (%s): each node or server its own CPU quota; CPU only, one disk, loopback; results are emulated\n", p.Lab)
	}
	b.WriteString("\n")
	// Columns: the configuration left-aligned, numbers right-aligned; per
	// mix its MQTh, then the ratio column of each family (a row fills the
	// one of its own family).
	head := []string{"configuration"}
	for _, m := range p.Mixes {
		head = append(head, mixTitle(m)+" MQTh", "vs "+TandemBaseline, "vs "+PostgresBaseline)
	}
	lines := [][]string{head}
	errs := false
	for _, row := range r.Rows {
		line := []string{row.Config}
		for i := range row.Cells {
			c := &row.Cells[i]
			errs = errs || c.Errors > 0
			tandemR, pgR := c.ratioText(), ""
			if row.Family == FamilyPostgres || row.Family == FamilyTandemPG {
				tandemR, pgR = "", c.ratioText()
			}
			line = append(line, c.mqthText(p.Rounds), tandemR, pgR)
		}
		lines = append(lines, line)
	}
	widths := make([]int, len(head))
	for _, l := range lines {
		for i, cell := range l {
			widths[i] = max(widths[i], len(cell))
		}
	}
	rule := -2
	for _, w := range widths {
		rule += w + 2
	}
	for n, l := range lines {
		var lb strings.Builder
		for i, cell := range l {
			if i == 0 {
				fmt.Fprintf(&lb, "%-*s", widths[i], cell)
			} else {
				fmt.Fprintf(&lb, "  %*s", widths[i], cell)
			}
		}
		b.WriteString(strings.TrimRight(lb.String(), " ") + "\n")
		// A rule under the header and between the two families.
		if n == 0 || n < len(r.Rows) && n > 0 && r.Rows[n].Family != r.Rows[n-1].Family {
			b.WriteString(strings.Repeat("-", rule) + "\n")
		}
	}
	r.printTrouble(&b, errs)
	if len(r.Physical) > 0 {
		r.printPhysical(&b)
	}
	b.WriteString("\nchecks (measured, informational):\n")
	b.WriteString("(a) at each safeness level, tandem's pair ratio vs PostgreSQL's pair ratio (PASS: tandem's >= PostgreSQL's)\n")
	for _, c := range r.Checks {
		if c.ID == "a" {
			fmt.Fprintf(&b, "  %s %s\n", c.Status, c.Text)
		}
	}
	b.WriteString("(b) high availability for free: hs-received-relaxed on R20W80 >= standalone-strict\n")
	for _, c := range r.Checks {
		if c.ID == "b" {
			fmt.Fprintf(&b, "  %s %s\n", c.Status, c.Text)
		}
	}
	if len(r.Physical) > 0 {
		b.WriteString("(c) tandem's physical pair >= HAProxy + PostgreSQL's streaming pair at the same level\n")
		for _, c := range r.Checks {
			if c.ID == "c" {
				fmt.Fprintf(&b, "  %s %s\n", c.Status, c.Text)
			}
		}
		fmt.Fprintf(&b, "(d) tandem's physical pair >= %.2fx PostgreSQL's streaming pair with clients connected directly\n", MinPhysicalVsDirect)
		for _, c := range r.Checks {
			if c.ID == "d" {
				fmt.Fprintf(&b, "  %s %s\n", c.Status, c.Text)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// hasErrors tells whether a cell saw unexpected errors.
func (r *Report) hasErrors() bool {
	for _, row := range r.Rows {
		for _, c := range row.Cells {
			if c.Errors > 0 {
				return true
			}
		}
	}
	return false
}

// printTrouble writes what went wrong: unexpected errors, an interrupted
// sweep, failed runs.
func (r *Report) printTrouble(b *strings.Builder, errs bool) {
	if errs {
		b.WriteString("! unexpected errors in the measured window (see sweep.json runs[].first_error)\n")
	}
	if r.Interrupted {
		b.WriteString("INTERRUPTED: the table holds what was measured before the sweep was stopped\n")
	}
	if n := r.Failed(); n > 0 {
		fmt.Fprintf(b, "%d run(s) failed:\n", n)
		for _, m := range r.Runs {
			if m.Err != "" {
				fmt.Fprintf(b, "  %s %s round %d: %s\n", m.Config, m.Mix, m.Round, m.Err)
			}
		}
	}
}

// printPhysical writes the physical-pair comparison: per level and mix,
// tandem's physical pair, HAProxy + PostgreSQL's pair, PostgreSQL's pair
// direct (medians) and the ratios.
func (r *Report) printPhysical(b *strings.Builder) {
	b.WriteString("\ntandem's physical pair vs HAProxy + PostgreSQL's streaming pair vs that pair direct (MQTh)\n")
	head := []string{"level", "mix", "tandem physical", "HAProxy + PG pair", "PG pair direct", "physical/HAProxy", "physical/direct", "HAProxy/direct"}
	lines := [][]string{head}
	num := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	rat := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.2fx", *v)
	}
	for _, x := range r.Physical {
		lines = append(lines, []string{x.Level, mixTitle(x.Mix), num(x.PhysicalV), num(x.HAProxyV), num(x.DirectV), rat(x.VsHAProxy), rat(x.VsDirect), rat(x.HAProxyVsDirect)})
	}
	widths := make([]int, len(head))
	for _, l := range lines {
		for i, cell := range l {
			widths[i] = max(widths[i], len(cell))
		}
	}
	for n, l := range lines {
		var lb strings.Builder
		for i, cell := range l {
			if i < 2 {
				fmt.Fprintf(&lb, "%-*s  ", widths[i], cell)
			} else {
				fmt.Fprintf(&lb, "  %*s", widths[i], cell)
			}
		}
		b.WriteString(strings.TrimRight(lb.String(), " ") + "\n")
		if n == 0 {
			rule := 0
			for _, w := range widths {
				rule += w + 2
			}
			b.WriteString(strings.Repeat("-", rule) + "\n")
		}
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode sweep report: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// roundF rounds to 3 decimals for the files.
func roundF(f float64) float64 { return math.Round(f*1000) / 1000 }
