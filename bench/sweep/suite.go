package sweep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tandemdb/tandem/config"

	// The seed001 suite's workloads besides TM1 (sweep.go registers it).
	_ "github.com/tandemdb/tandem/bench/workloads/epinions"
	_ "github.com/tandemdb/tandem/bench/workloads/tpcc"
)

// Suites of configurations (--suite): a named set run together and
// reported as one comparison besides the sweep's table.
const (
	// SuiteSeed001 is seed 001's configuration table (Silvestrini, chapter
	// 4 and tables 5.1-5.4): per system, one node alone (n1), a
	// synchronised replica attached with every client on n1 (n1+(n2)), and
	// both nodes behind a balancer (n1+n2+<policy>), with each
	// configuration's gain or overhead against the best case.
	SuiteSeed001 = "seed001"
)

// Suites lists the --suite values.
var Suites = []string{SuiteSeed001}

// Seed001Workloads are the workloads the seed001 suite runs (--workload,
// one per sweep): TM1, and seed 001's own, TPC-C and Epinions (whose
// "seed001" mix is seed 001's table 3.1). The configurations do not depend
// on the workload; each table says which one it measured.
var Seed001Workloads = []string{"tm1", "tpcc", "epinions"}

// Systems of the seed001 suite: the peers compared in one table.
const (
	SystemTandemSQLite   = "tandem-sqlite"
	SystemTandemPostgres = "tandem-postgresql"
	// SystemTandemPhysical is tandem on PostgreSQL back ends with the
	// physical engine (PostgreSQL's streaming replication run by tandem,
	// sessions relayed): the default for managed PostgreSQL clusters.
	SystemTandemPhysical = "tandem-postgresql-physical"
	SystemPostgres       = "postgresql"
)

// systemTitle is how the tables name a system.
func systemTitle(s string) string {
	switch s {
	case SystemTandemSQLite:
		return "tandem, SQLite"
	case SystemTandemPostgres:
		return "tandem, PostgreSQL back ends"
	case SystemTandemPhysical:
		return "tandem, PostgreSQL back ends, physical engine"
	case SystemPostgres:
		return "PostgreSQL"
	}
	return s
}

// Shapes of seed 001 (its "mode" column): n1 alone; n1+(n2), the second
// node synchronised but taking no client (all clients on n1); and
// n1+n2+<balancer>, both nodes behind a balancer.
const (
	ShapeN1        = "n1"
	ShapeN1Passive = "n1+(n2)"
	// ShapeHAProxy is HAProxy in front of PostgreSQL's pair: it knows both
	// servers but its primary check sends every client to n1.
	ShapeHAProxy = "n1+(n2)+HAProxy"
	// ShapePgpool is pgpool-II in front of PostgreSQL's pair balancing the
	// reads over both servers (seed 001's "n1 + n2 + PgPool-II"), and
	// ShapePgpoolPassive the same pgpool with the standby's weight 0, every
	// statement to n1 (its "n1 + (n2) + PgPool-II": the balancer's cost).
	ShapePgpool        = "n1+n2+pgpool-II"
	ShapePgpoolPassive = "n1+(n2)+pgpool-II"
)

// shapeBalancer is the shape of both nodes behind the router's policy.
func shapeBalancer(policy string) string { return "n1+n2+" + policy }

// Suite backends (--backend): the back end of tandem's rows; "postgres"
// runs tandem's writeset engine on PostgreSQL back ends,
// "postgres-physical" the physical engine.
var suiteBackends = []string{"sqlite", "postgres", "postgres-physical"}

// smCluster is tandem's single-master pair (seed 003's design: writes on
// the primary, reads anywhere) at 2-safe received with relaxed logs, as
// the hot-standby rows of the sweep; policy "" means no router, clients on
// n1's own port (n1+(n2)).
func smCluster(name, backend, policy string) Config {
	c := Config{
		Name: name, Family: FamilyTandem, Level: "2-safe-received", kind: kindTandem,
		Design: "single-master", Safeness: "2-safe-received", Durability: "relaxed", StandbyDurability: "relaxed",
		Policy: policy,
	}
	where := "clients on n1 directly (no router)"
	if policy != "" {
		where = "clients on the router, reads balanced " + policy + ", writes to n1"
	}
	switch backend {
	case "postgres":
		c.Family, c.Backend = FamilyTandemPG, "postgres"
		c.Setting = "tandem single-master on PostgreSQL back ends, 2 nodes, 2-safe received, logs relaxed, " + where
	case "postgres-physical":
		// PostgreSQL's own log is the record: strict at every commit,
		// remote_write for 2-safe received.
		c.Family, c.Backend, c.Engine = FamilyTandemPG, "postgres", config.EnginePhysical
		c.Durability, c.StandbyDurability = "strict", "strict"
		c.Setting = "tandem single-master on PostgreSQL back ends, physical engine (streaming replication), 2 nodes, 2-safe received (remote_write), " + where
	default:
		c.SQLiteSynchronous = "NORMAL"
		c.Setting = "tandem single-master, 2 nodes, 2-safe received, logs relaxed, SQLite NORMAL, " + where
	}
	return c
}

// pgpoolPair is pgpool-II in front of PostgreSQL's streaming pair at
// synchronous_commit = remote_write with the standby's weight w (1: reads
// balanced, 0: every statement to the primary). Both configurations share
// one started pair and pgpool (setup pg-pair-pgpool): the weight is
// switched by a reload.
func pgpoolPair(name string, w int) Config {
	c := pg(kindPGPairPgpool, name, "2-safe-received", "remote_write", "")
	c.StandbyWeight = &w
	if w > 0 {
		c.Setting = "pgpool-II (streaming_replication mode, reads balanced per statement over both servers at equal weights, connection cache) " +
			"in front of the streaming pair, synchronous_commit=remote_write (2-safe received)"
	} else {
		c.Setting = "pgpool-II (streaming_replication mode, standby weight 0: every statement to the primary, connection cache) " +
			"in front of the streaming pair, synchronous_commit=remote_write (2-safe received)"
	}
	return c
}

// Seed001Configs returns the seed001 suite's configurations in run order:
// for each tandem back end named (sqlite, postgres) n1, n1+(n2) and
// n1+n2+<policy> for every balancing policy of the router, then, with
// peers, PostgreSQL's own: one server, the streaming pair with clients on
// the primary, HAProxy in front of the pair, and pgpool-II in front of
// the pair, balancing reads and not. Every replicated row waits for the
// second node's receipt (tandem 2-safe received, PostgreSQL
// synchronous_commit = remote_write).
func Seed001Configs(backends []string, peers bool) []Config {
	var out []Config
	with := func(c Config, system, shape string) {
		c.Suite, c.System, c.Shape = SuiteSeed001, system, shape
		out = append(out, c)
	}
	for _, b := range backends {
		system, prefix := SystemTandemSQLite, "sm"
		n1, _ := configByName("standalone-relaxed")
		switch b {
		case "postgres":
			system, prefix = SystemTandemPostgres, "sm-pg"
			n1 = Config{Name: "standalone-pg", Family: FamilyTandemPG, kind: kindTandem, Design: "standalone", Backend: "postgres",
				Setting: "tandem standalone on a PostgreSQL back end"}
		case "postgres-physical":
			// The same standalone node, measured again under this
			// system's name so that its table stands on its own.
			system, prefix = SystemTandemPhysical, "sm-pgphys"
			n1 = Config{Name: "standalone-pg-phys", Family: FamilyTandemPG, kind: kindTandem, Design: "standalone", Backend: "postgres",
				Setting: "tandem standalone on a PostgreSQL back end (n1 of the physical engine's rows)"}
		}
		with(n1, system, ShapeN1)
		with(smCluster(prefix+"-n1-n2passive", b, ""), system, ShapeN1Passive)
		for _, p := range config.Policies {
			with(smCluster(prefix+"-lb-"+p, b, p), system, shapeBalancer(p))
		}
	}
	if peers {
		for _, x := range []struct{ name, shape string }{
			{"pg-standalone-on", ShapeN1},
			{"pg-pair-remote_write", ShapeN1Passive},
			{"pg-pair-haproxy-remote_write", ShapeHAProxy},
		} {
			c, _ := configByName(x.name)
			with(c, SystemPostgres, x.shape)
		}
		with(pgpoolPair("pg-pair-pgpool-remote_write", 1), SystemPostgres, ShapePgpool)
		with(pgpoolPair("pg-pair-pgpool-nolb-remote_write", 0), SystemPostgres, ShapePgpoolPassive)
	}
	return out
}

// SelectSuite resolves --suite, --backend and --configs: the suite's
// configurations for the back ends listed (comma list of sqlite,
// postgres), with PostgreSQL's peers; --configs ("" or all: every one)
// keeps only the configurations it names, in run order.
func SelectSuite(suite, backends, list string) ([]Config, error) {
	if suite != SuiteSeed001 {
		return nil, fmt.Errorf("%w: --suite: %q is not a suite; use %s", ErrBadOption, suite, strings.Join(Suites, ", "))
	}
	var bs []string
	for _, b := range strings.Split(backends, ",") {
		b = strings.ToLower(strings.TrimSpace(b))
		if b == "" {
			continue
		}
		if !slices.Contains(suiteBackends, b) {
			return nil, fmt.Errorf("%w: --backend: %q is not a back end; use a comma list of sqlite, postgres (tandem's writeset engine) and postgres-physical (the physical engine)", ErrBadOption, b)
		}
		if !slices.Contains(bs, b) {
			bs = append(bs, b)
		}
	}
	if len(bs) == 0 {
		return nil, fmt.Errorf("%w: --backend: empty; use a comma list of sqlite, postgres (tandem's writeset engine) and postgres-physical (the physical engine)", ErrBadOption)
	}
	// Run order: sqlite rows before postgres rows, whatever the list's order.
	slices.SortFunc(bs, func(a, b string) int { return slices.Index(suiteBackends, a) - slices.Index(suiteBackends, b) })
	all := Seed001Configs(bs, true)
	list = strings.TrimSpace(list)
	if list == "" || list == "all" {
		return all, nil
	}
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(names, n) {
			return nil, fmt.Errorf("%w: --configs: %q is not in suite %s with --backend %s; use all or a comma list of %s",
				ErrBadOption, n, suite, strings.Join(bs, ","), strings.Join(names, ", "))
		}
		want[n] = true
	}
	var out []Config
	for _, c := range all {
		if want[c.Name] {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: --configs: empty list; use all or a comma list of %s", ErrBadOption, strings.Join(names, ", "))
	}
	return out, nil
}

// Seed001Table is seed 001's comparison for one workload and mix: every
// configuration of the suite that ran, its throughput, and its gain (> 0)
// or overhead (< 0) in percent against the best configuration of the
// table and against its own system's n1 (seed 001's base case).
type Seed001Table struct {
	Workload string       `json:"workload"`
	Mix      string       `json:"mix"`
	Best     string       `json:"best,omitempty"` // the configuration with the highest MQTh
	BestMQTh float64      `json:"best_mqth,omitempty"`
	Rows     []Seed001Row `json:"rows"`
	// Matrices are seed 001's tables 5.1-5.4, one per system: the gain or
	// overhead of each configuration (column) over each one taken as the
	// base value (row).
	Matrices []Seed001Matrix `json:"matrices"`
}

// Seed001Row is one configuration of a Seed001Table.
type Seed001Row struct {
	Config string  `json:"config"`
	System string  `json:"system"`
	Shape  string  `json:"shape"`
	MQTh   float64 `json:"mqth"` // median over rounds; 0 when no round ran
	// VsBest is 100 * (MQTh / best - 1): 0 for the best, negative for the
	// others; nil when this configuration was not measured.
	VsBest *float64 `json:"vs_best_pct"`
	// VsN1 is 100 * (MQTh / MQTh of the system's n1 - 1); nil when either
	// was not measured.
	VsN1 *float64 `json:"vs_n1_pct"`
	// Routed sums, over the rounds that ran, the transactions the router
	// sent to each node (n1+n2+<policy> rows only).
	Routed map[string]int64 `json:"routed,omitempty"`
	// Selects sums, over the rounds that ran, the SELECTs pgpool-II sent
	// to each node (pg-pair-pgpool-* rows only).
	Selects map[string]int64 `json:"selects,omitempty"`
	// HostCPU is, on emulated hosts (--lab), the mean over the rounds
	// that ran of the cores each host used (Measurement.HostCPU).
	HostCPU map[string]float64 `json:"host_cpu,omitempty"`
}

// Seed001Matrix is one system's gain/overhead table: Pct[i][j] is
// configuration j's gain or overhead in percent over configuration i as
// the base value (nil when either was not measured).
type Seed001Matrix struct {
	System  string       `json:"system"`
	Shapes  []string     `json:"shapes"`
	Configs []string     `json:"configs"`
	Pct     [][]*float64 `json:"pct"`
}

// GainOverhead is seed 001's percentage: the gain (> 0) or overhead (< 0)
// of throughput x over the base value base, 100 * (x / base - 1). ok is
// false when either is not a measured (positive) throughput.
func GainOverhead(x, base float64) (pct float64, ok bool) {
	if x <= 0 || base <= 0 {
		return 0, false
	}
	return 100 * (x/base - 1), true
}

func pctPtr(x, base float64) *float64 {
	v, ok := GainOverhead(x, base)
	if !ok {
		return nil
	}
	return &v
}

// seed001Tables builds the suite's tables from the sweep's rows (medians
// over rounds): one per workload and mix, rows in the configurations'
// order.
func seed001Tables(workload string, mixes []string, configs []Config, rows []Row, runs []Measurement) []Seed001Table {
	mqth := map[string]float64{}
	for _, row := range rows {
		for _, c := range row.Cells {
			if len(c.Rounds) > 0 {
				mqth[row.Config+"\x00"+c.Mix] = c.MQTh
			}
		}
	}
	var out []Seed001Table
	for _, mix := range mixes {
		t := Seed001Table{Workload: workload, Mix: mix}
		n1 := map[string]float64{}
		var systems []string
		for _, c := range configs {
			if c.Suite != SuiteSeed001 {
				continue
			}
			v := mqth[c.Name+"\x00"+mix]
			t.Rows = append(t.Rows, Seed001Row{Config: c.Name, System: c.System, Shape: c.Shape, MQTh: v})
			if v > t.BestMQTh {
				t.Best, t.BestMQTh = c.Name, v
			}
			if c.Shape == ShapeN1 {
				n1[c.System] = v
			}
			if !slices.Contains(systems, c.System) {
				systems = append(systems, c.System)
			}
		}
		for i := range t.Rows {
			r := &t.Rows[i]
			r.VsBest = pctPtr(r.MQTh, t.BestMQTh)
			r.VsN1 = pctPtr(r.MQTh, n1[r.System])
			hostRuns := 0
			for _, m := range runs {
				if m.Config != r.Config || m.Mix != mix || m.Err != "" || m.HostCPU == nil {
					continue
				}
				if r.HostCPU == nil {
					r.HostCPU = map[string]float64{}
				}
				for h, v := range m.HostCPU {
					r.HostCPU[h] += v
				}
				hostRuns++
			}
			for h := range r.HostCPU {
				r.HostCPU[h] /= float64(hostRuns)
			}
			for _, m := range runs {
				if m.Config != r.Config || m.Mix != mix || m.Err != "" || m.Routed == nil {
					continue
				}
				if r.Routed == nil {
					r.Routed = map[string]int64{}
				}
				for id, n := range m.Routed {
					r.Routed[id] += n
				}
			}
			for _, m := range runs {
				if m.Config != r.Config || m.Mix != mix || m.Err != "" || m.Selects == nil {
					continue
				}
				if r.Selects == nil {
					r.Selects = map[string]int64{}
				}
				for id, n := range m.Selects {
					r.Selects[id] += n
				}
			}
		}
		for _, s := range systems {
			m := Seed001Matrix{System: s}
			var vs []float64
			for _, r := range t.Rows {
				if r.System == s {
					m.Shapes, m.Configs, vs = append(m.Shapes, r.Shape), append(m.Configs, r.Config), append(vs, r.MQTh)
				}
			}
			for _, base := range vs {
				line := make([]*float64, len(vs))
				for j, x := range vs {
					line[j] = pctPtr(x, base)
				}
				m.Pct = append(m.Pct, line)
			}
			t.Matrices = append(t.Matrices, m)
		}
		out = append(out, t)
	}
	return out
}

// routedText is each node's share of the routed transactions, "n1 62% n2
// 38%"; "" without a router.
func routedText(routed map[string]int64) string {
	var total int64
	var ids []string
	for id, n := range routed {
		total += n
		ids = append(ids, id)
	}
	if total <= 0 {
		return ""
	}
	slices.Sort(ids)
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", id, 100*float64(routed[id])/float64(total)))
	}
	return strings.Join(parts, " ")
}

// balancedText is the row's "routed" column: the router's transactions
// per node, or pgpool-II's SELECTs per node ("SELECTs n1 50% n2 50%").
func (r Seed001Row) balancedText() string {
	if t := routedText(r.Selects); t != "" {
		return "SELECTs " + t
	}
	return routedText(r.Routed)
}

// hostCPUText is the row's "CPU per host" column on emulated hosts, in
// cores: "n1 0.25 n2 0.08 router 0.31 client 0.40"; "" without a lab.
func (r Seed001Row) hostCPUText() string {
	if len(r.HostCPU) == 0 {
		return ""
	}
	var names []string
	for h := range r.HostCPU {
		names = append(names, h)
	}
	slices.SortFunc(names, func(a, b string) int { return hostOrder(a) - hostOrder(b) })
	var parts []string
	for _, h := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", h, r.HostCPU[h]))
	}
	return strings.Join(parts, " ")
}

// hostOrder puts the servers first, then the router, then the client.
func hostOrder(h string) int {
	switch h {
	case "router":
		return 1000
	case "client":
		return 1001
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(h, "n"))
	return n
}

// pctText is a percentage as seed 001 prints it, signed: +09.04%, -46.72%.
func pctText(v *float64) string {
	if v == nil {
		return "-"
	}
	x := *v
	if x > -0.005 && x < 0.005 {
		x = 0 // no "-0.00%"
	}
	return fmt.Sprintf("%+06.2f%%", x)
}

// printSeed001 writes each table: system, configuration (seed 001's mode),
// the sweep's configuration name, MQTh, % against the best and % against
// the system's n1.
func (r *Report) printSeed001(b *strings.Builder) {
	p := r.Params
	roundsNote := "1 round"
	if p.Rounds > 1 {
		roundsNote = fmt.Sprintf("median of %d rounds", p.Rounds)
	}
	for _, t := range r.Seed001 {
		fmt.Fprintf(b, "seed 001 table: %s %s, MQTh (counted transactions/s), %s, %d clients, ramp-up %gs, measured %gs, %s\n",
			workloadTitle(t.Workload), mixTitle(t.Mix), p.scaleText(), p.Clients, p.RampupS, p.DurationS, roundsNote)
		fmt.Fprintf(b, "gain (+) or overhead (-) against the best case and against the system's n1 (100 * (MQTh / base - 1))\n")
		if p.Lab != "" {
			fmt.Fprintf(b, "emulated hosts (%s): each server (n1, n2) its own CPU quota, the router / HAProxy / pgpool-II theirs, the client its own; CPU only, one disk, loopback; results are emulated\n", p.Lab)
		}
		b.WriteString("\n")
		head := []string{"system", "configuration", "name", "MQTh", "vs best", "vs n1", "routed per node"}
		if p.Lab != "" {
			head = append(head, "CPU per host (cores)")
		}
		lines := [][]string{head}
		for _, row := range t.Rows {
			mq := "-"
			if c, ok := r.Cell(row.Config, t.Mix); ok {
				mq = c.mqthText(p.Rounds)
			}
			line := []string{systemTitle(row.System), row.Shape, row.Config, mq, pctText(row.VsBest), pctText(row.VsN1), row.balancedText()}
			if p.Lab != "" {
				line = append(line, row.hostCPUText())
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
				if i < 3 || i >= 6 {
					fmt.Fprintf(&lb, "%-*s  ", widths[i], cell)
				} else {
					fmt.Fprintf(&lb, "%*s  ", widths[i], cell)
				}
			}
			b.WriteString(strings.TrimRight(lb.String(), " ") + "\n")
			if n == 0 || n < len(t.Rows) && t.Rows[n].System != t.Rows[n-1].System {
				b.WriteString(strings.Repeat("-", rule) + "\n")
			}
		}
		if t.Best != "" {
			fmt.Fprintf(b, "best case: %s (%.1f MQTh)\n\n", t.Best, t.BestMQTh)
		} else {
			b.WriteString("best case: none measured\n\n")
		}
	}
}
