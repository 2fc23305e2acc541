package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/config"
)

func TestGainOverhead(t *testing.T) {
	for _, tc := range []struct {
		x, base float64
		want    float64
		ok      bool
	}{
		{1100, 1000, 10, true},
		{900, 1000, -10, true},
		{1000, 1000, 0, true},
		{760.3116, 1094.9105, -30.5595, true}, // seed 001: PostgreSQL TPC-C n1 against MariaDB's ("worse than the 30%")
		{1000, 500, 100, true},
		{0, 1000, 0, false}, // not measured
		{1000, 0, 0, false},
	} {
		got, ok := GainOverhead(tc.x, tc.base)
		if ok != tc.ok || math.Abs(got-tc.want) > 0.001 {
			t.Errorf("GainOverhead(%v, %v) = %v, %v; want %v, %v", tc.x, tc.base, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPctText(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		in   *float64
		want string
	}{
		{nil, "-"},
		{f(9.04), "+09.04%"},
		{f(-46.72), "-46.72%"},
		{f(0), "+00.00%"},
		{f(-0.001), "+00.00%"},
		{f(243.99), "+243.99%"},
	} {
		if got := pctText(tc.in); got != tc.want {
			t.Errorf("pctText(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// suiteConfigs is the seed001 suite's configurations of the given names.
func suiteConfigs(t *testing.T, backends []string, names ...string) []Config {
	t.Helper()
	var out []Config
	for _, n := range names {
		found := false
		for _, c := range Seed001Configs(backends, true) {
			if c.Name == n {
				out, found = append(out, c), true
			}
		}
		if !found {
			t.Fatalf("no suite configuration %q", n)
		}
	}
	return out
}

// TestSeed001Table checks the table's arithmetic against hand-computed
// values: the medians over rounds, the best case across systems, each
// row's gain/overhead against it and against its own system's n1, and
// seed 001's matrix (column over row as base value).
func TestSeed001Table(t *testing.T) {
	type row struct {
		config string
		mqth   float64
		vsBest float64 // NaN: nil
		vsN1   float64 // NaN: nil
	}
	nan := math.NaN()
	for _, tc := range []struct {
		name     string
		backends []string
		runs     []Measurement
		best     string
		rows     []row
		// matrix of the first system, row-major; NaN: nil
		matrix [][]float64
	}{
		{
			name:     "one system, medians over rounds",
			backends: []string{"sqlite"},
			runs: []Measurement{
				ms("standalone-relaxed", "r80w20", 1, 1000), ms("standalone-relaxed", "r80w20", 2, 990), ms("standalone-relaxed", "r80w20", 3, 1010),
				ms("sm-n1-n2passive", "r80w20", 1, 800), ms("sm-n1-n2passive", "r80w20", 2, 800),
				ms("sm-lb-round-robin", "r80w20", 1, 1250),
			},
			best: "sm-lb-round-robin",
			rows: []row{
				{"standalone-relaxed", 1000, -20, 0}, // 1000/1250 - 1
				{"sm-n1-n2passive", 800, -36, -20},   // 800/1250 - 1, 800/1000 - 1
				{"sm-lb-round-robin", 1250, 0, 25},   // 1250/1000 - 1
				{"sm-lb-single", 0, nan, nan},        // not measured
			},
			matrix: [][]float64{
				// base n1: n1, n1+(n2), rr, single
				{0, -20, 25, nan},
				// base n1+(n2): 1000/800-1, 0, 1250/800-1
				{25, 0, 56.25, nan},
				// base rr: 1000/1250-1, 800/1250-1, 0
				{-20, -36, 0, nan},
				{nan, nan, nan, nan},
			},
		},
		{
			name:     "three systems: the best across all, n1 per system",
			backends: []string{"sqlite", "postgres"},
			runs: []Measurement{
				ms("standalone-relaxed", "r80w20", 1, 2000),
				ms("sm-lb-least-connected", "r80w20", 1, 1600),
				ms("standalone-pg", "r80w20", 1, 500),
				ms("sm-pg-n1-n2passive", "r80w20", 1, 400),
				ms("pg-standalone-on", "r80w20", 1, 800),
				ms("pg-pair-remote_write", "r80w20", 1, 600),
				ms("pg-pair-haproxy-remote_write", "r80w20", 1, 500),
				ms("pg-pair-pgpool-remote_write", "r80w20", 1, 300),
				ms("pg-pair-pgpool-nolb-remote_write", "r80w20", 1, 400),
			},
			best: "standalone-relaxed",
			rows: []row{
				{"standalone-relaxed", 2000, 0, 0},
				{"sm-lb-least-connected", 1600, -20, -20},
				{"standalone-pg", 500, -75, 0},
				{"sm-pg-n1-n2passive", 400, -80, -20},
				{"pg-standalone-on", 800, -60, 0},
				{"pg-pair-remote_write", 600, -70, -25},
				{"pg-pair-haproxy-remote_write", 500, -75, -37.5},
				{"pg-pair-pgpool-remote_write", 300, -85, -62.5},    // 300/2000 - 1, 300/800 - 1
				{"pg-pair-pgpool-nolb-remote_write", 400, -80, -50}, // 400/2000 - 1, 400/800 - 1
			},
			matrix: [][]float64{{0, -20}, {25, 0}},
		},
		{
			name:     "n1 failed: no gain against n1, the rest still against the best",
			backends: []string{"sqlite"},
			runs: []Measurement{
				{Config: "standalone-relaxed", Mix: "r80w20", Round: 1, Err: "start failed"},
				ms("sm-n1-n2passive", "r80w20", 1, 300),
				ms("sm-lb-random", "r80w20", 1, 400),
			},
			best: "sm-lb-random",
			rows: []row{
				{"standalone-relaxed", 0, nan, nan},
				{"sm-n1-n2passive", 300, -25, nan},
				{"sm-lb-random", 400, 0, nan},
			},
			matrix: [][]float64{{nan, nan, nan}, {nan, 0, 100.0 / 3}, {nan, -25, 0}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var names []string
			for _, r := range tc.rows {
				names = append(names, r.config)
			}
			cs := suiteConfigs(t, tc.backends, names...)
			p := Params{Mixes: []string{"r80w20"}, Rounds: 3, Suite: SuiteSeed001}
			rep := Build(p, Environment{}, cs, tc.runs)
			if len(rep.Seed001) != 1 {
				t.Fatalf("%d seed 001 tables, want 1 (TM1 x one mix)", len(rep.Seed001))
			}
			tb := rep.Seed001[0]
			if tb.Workload != "tm1" || tb.Mix != "r80w20" || tb.Best != tc.best {
				t.Errorf("table %s %s best %q, want tm1 r80w20 best %q", tb.Workload, tb.Mix, tb.Best, tc.best)
			}
			if len(tb.Rows) != len(tc.rows) {
				t.Fatalf("%d rows, want %d", len(tb.Rows), len(tc.rows))
			}
			same := func(got *float64, want float64) bool {
				if math.IsNaN(want) {
					return got == nil
				}
				return got != nil && math.Abs(*got-want) < 1e-9
			}
			for i, w := range tc.rows {
				g := tb.Rows[i]
				if g.Config != w.config || !approx(g.MQTh, w.mqth) || !same(g.VsBest, w.vsBest) || !same(g.VsN1, w.vsN1) {
					t.Errorf("row %d: %s %v vs best %s vs n1 %s; want %s %v %v %v",
						i, g.Config, g.MQTh, pctText(g.VsBest), pctText(g.VsN1), w.config, w.mqth, w.vsBest, w.vsN1)
				}
			}
			m := tb.Matrices[0]
			if len(m.Pct) != len(tc.matrix) {
				t.Fatalf("matrix of %s has %d rows, want %d", m.System, len(m.Pct), len(tc.matrix))
			}
			for i := range tc.matrix {
				for j := range tc.matrix[i] {
					if !same(m.Pct[i][j], tc.matrix[i][j]) {
						t.Errorf("matrix %s[%s][%s] = %s, want %v", m.System, m.Shapes[i], m.Shapes[j], pctText(m.Pct[i][j]), tc.matrix[i][j])
					}
				}
			}
			// The printed table, the JSON and the HTML carry it.
			var out bytes.Buffer
			if err := rep.Print(&out); err != nil {
				t.Fatal(err)
			}
			for _, r := range tb.Rows {
				if !strings.Contains(out.String(), r.Config) || !strings.Contains(out.String(), r.Shape) {
					t.Errorf("printed table lacks %s (%s):\n%s", r.Config, r.Shape, out.String())
				}
			}
			if !strings.Contains(out.String(), "best case: "+tc.best) {
				t.Errorf("printed table does not name the best case %s:\n%s", tc.best, out.String())
			}
			out.Reset()
			if err := rep.WriteJSON(&out); err != nil {
				t.Fatal(err)
			}
			var back Report
			if err := json.Unmarshal(out.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if len(back.Seed001) != 1 || back.Seed001[0].Best != tc.best || len(back.Seed001[0].Rows) != len(tc.rows) {
				t.Errorf("JSON seed001 = %+v", back.Seed001)
			}
			out.Reset()
			if err := rep.WriteHTML(&out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "Seed 001's table") || !strings.Contains(out.String(), `<tr class="best">`) {
				t.Error("HTML report has no seed 001 section with the best row marked")
			}
		})
	}
}

// A sweep without --suite has no seed 001 table, and its printed report
// is the full sweep's.
func TestNoSuiteNoSeed001(t *testing.T) {
	rep := Build(Params{Mixes: []string{"r80w20"}, Rounds: 1}, Environment{}, cfgs(t, "standalone-relaxed"),
		[]Measurement{ms("standalone-relaxed", "r80w20", 1, 100)})
	if rep.Seed001 != nil {
		t.Errorf("seed001 tables without --suite: %+v", rep.Seed001)
	}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "seed 001 table") || !strings.Contains(out.String(), "checks (measured") {
		t.Errorf("printed:\n%s", out.String())
	}
}

func TestSelectSuite(t *testing.T) {
	policies := len(config.Policies)
	for _, tc := range []struct {
		suite, backend, configs string
		want                    int    // configurations
		first, last             string // names
		err                     string // substring of the error
	}{
		{suite: "seed001", backend: "sqlite", configs: "all", want: 2 + policies + 5, first: "standalone-relaxed", last: "pg-pair-pgpool-nolb-remote_write"},
		{suite: "seed001", backend: "postgres", configs: "", want: 2 + policies + 5, first: "standalone-pg", last: "pg-pair-pgpool-nolb-remote_write"},
		{suite: "seed001", backend: "postgres,sqlite", configs: "all", want: 2*(2+policies) + 5, first: "standalone-relaxed", last: "pg-pair-pgpool-nolb-remote_write"},
		{suite: "seed001", backend: "postgres-physical", configs: "", want: 2 + policies + 5, first: "standalone-pg-phys", last: "pg-pair-pgpool-nolb-remote_write"},
		{suite: "seed001", backend: "postgres-physical,sqlite,postgres", configs: "all", want: 3*(2+policies) + 5, first: "standalone-relaxed", last: "pg-pair-pgpool-nolb-remote_write"},
		{suite: "seed001", backend: "postgres-physical", configs: "sm-pgphys-lb-round-robin,sm-pgphys-n1-n2passive", want: 2, first: "sm-pgphys-n1-n2passive", last: "sm-pgphys-lb-round-robin"},
		{suite: "seed001", backend: "sqlite", configs: "pg-pair-pgpool-nolb-remote_write,pg-pair-pgpool-remote_write", want: 2, first: "pg-pair-pgpool-remote_write", last: "pg-pair-pgpool-nolb-remote_write"},
		{suite: "seed001", backend: "sqlite", configs: "sm-lb-source,standalone-relaxed", want: 2, first: "standalone-relaxed", last: "sm-lb-source"},
		{suite: "seed001", backend: "sqlite", configs: "sm-pg-lb-source", err: `"sm-pg-lb-source" is not in suite seed001 with --backend sqlite`},
		{suite: "seed001", backend: "mysql", err: `--backend: "mysql" is not a back end`},
		{suite: "seed001", backend: " , ", err: "--backend: empty"},
		{suite: "seed002", backend: "sqlite", err: `--suite: "seed002" is not a suite`},
	} {
		got, err := SelectSuite(tc.suite, tc.backend, tc.configs)
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SelectSuite(%q, %q, %q) error %v, want ErrBadOption with %q", tc.suite, tc.backend, tc.configs, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("SelectSuite(%q, %q, %q): %v", tc.suite, tc.backend, tc.configs, err)
			continue
		}
		if len(got) != tc.want || got[0].Name != tc.first || got[len(got)-1].Name != tc.last {
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			t.Errorf("SelectSuite(%q, %q, %q) = %v; want %d from %s to %s", tc.suite, tc.backend, tc.configs, names, tc.want, tc.first, tc.last)
		}
		for _, c := range got {
			if c.Suite != SuiteSeed001 || c.System == "" || c.Shape == "" {
				t.Errorf("%s: suite %q system %q shape %q", c.Name, c.Suite, c.System, c.Shape)
			}
		}
	}
}

// Every seed001 configuration's cluster file is valid and says what its
// shape promises: one standalone node, a single-master pair with no
// router (n1+(n2)), or the pair behind the router with the row's policy.
func TestSeed001ClusterFiles(t *testing.T) {
	port := 30000
	addr := func() (string, error) { port++; return fmt.Sprintf("127.0.0.1:%d", port), nil }
	seen := map[string]bool{}
	for _, c := range Seed001Configs([]string{"sqlite", "postgres", "postgres-physical"}, false) {
		if seen[c.Name] {
			t.Errorf("configuration %s twice", c.Name)
		}
		seen[c.Name] = true
		_, cc := parsedClusterFile(t, c, addr)
		wantBackend, wantEngine := "sqlite", config.EngineWriteset
		switch c.System {
		case SystemTandemPostgres:
			wantBackend = "postgres"
		case SystemTandemPhysical:
			wantBackend, wantEngine = "postgres", config.EnginePhysical
		}
		if cc.Design == "single-master" && cc.Repl.Engine != wantEngine {
			t.Errorf("%s: engine %q, want %q", c.Name, cc.Repl.Engine, wantEngine)
		}
		for _, n := range cc.Nodes {
			if n.Backend != wantBackend {
				t.Errorf("%s: node %s back end %s, want %s", c.Name, n.ID, n.Backend, wantBackend)
			}
		}
		switch {
		case c.Shape == ShapeN1:
			if cc.Design != "standalone" || len(cc.Nodes) != 1 || cc.Router != nil {
				t.Errorf("%s (n1): design %s, %d nodes, router %v", c.Name, cc.Design, len(cc.Nodes), cc.Router != nil)
			}
		case c.Shape == ShapeN1Passive:
			if cc.Design != "single-master" || len(cc.Nodes) != 2 || cc.Router != nil {
				t.Errorf("%s (n1+(n2)): design %s, %d nodes, router %v", c.Name, cc.Design, len(cc.Nodes), cc.Router != nil)
			}
		default:
			if cc.Design != "single-master" || len(cc.Nodes) != 2 || cc.Router == nil || cc.Router.Policy != c.Policy || c.Shape != shapeBalancer(c.Policy) {
				t.Errorf("%s (%s): design %s, %d nodes, router %+v", c.Name, c.Shape, cc.Design, len(cc.Nodes), cc.Router)
			}
		}
		if cc.Design == "single-master" && (cc.Repl.Safeness != "2-safe-received" || cc.Repl.OnStandbyLoss != "block") {
			t.Errorf("%s: replication %+v", c.Name, cc.Repl)
		}
	}
	if len(seen) != 3*(2+len(config.Policies)) {
		t.Errorf("%d tandem configurations, want %d", len(seen), 3*(2+len(config.Policies)))
	}
}

// The router's transactions per node are summed over the rounds that ran
// and printed as shares.
func TestSeed001Routed(t *testing.T) {
	cs := suiteConfigs(t, []string{"sqlite"}, "standalone-relaxed", "sm-lb-round-robin")
	runs := []Measurement{
		ms("standalone-relaxed", "r80w20", 1, 100),
		{Config: "sm-lb-round-robin", Mix: "r80w20", Round: 1, MQTh: 90, Routed: map[string]int64{"n1": 60, "n2": 40}},
		{Config: "sm-lb-round-robin", Mix: "r80w20", Round: 2, MQTh: 80, Routed: map[string]int64{"n1": 90, "n2": 10}},
		{Config: "sm-lb-round-robin", Mix: "r80w20", Round: 3, Err: "failed", Routed: map[string]int64{"n1": 1000}},
	}
	rep := Build(Params{Mixes: []string{"r80w20"}, Rounds: 3, Suite: SuiteSeed001}, Environment{}, cs, runs)
	rows := rep.Seed001[0].Rows
	if rows[0].Routed != nil || rows[1].Routed["n1"] != 150 || rows[1].Routed["n2"] != 50 {
		t.Errorf("routed %v, %v; want none and n1 150, n2 50", rows[0].Routed, rows[1].Routed)
	}
	for _, tc := range []struct {
		in   map[string]int64
		want string
	}{
		{nil, ""},
		{map[string]int64{"n1": 0, "n2": 0}, ""},
		{map[string]int64{"n2": 50, "n1": 150}, "n1 75% n2 25%"},
		{map[string]int64{"n1": 2, "n2": 1}, "n1 67% n2 33%"},
	} {
		if got := routedText(tc.in); got != tc.want {
			t.Errorf("routedText(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "n1 75% n2 25%") {
		t.Errorf("printed table lacks the routed shares:\n%s", out.String())
	}
}

// pgpool-II's SELECTs per node are summed over the rounds that ran (a
// failed round left out) and printed as shares, marked as SELECTs.
func TestSeed001Selects(t *testing.T) {
	cs := suiteConfigs(t, []string{"sqlite"}, "pg-standalone-on", "pg-pair-pgpool-remote_write", "pg-pair-pgpool-nolb-remote_write")
	runs := []Measurement{
		ms("pg-standalone-on", "r80w20", 1, 100),
		{Config: "pg-pair-pgpool-remote_write", Mix: "r80w20", Round: 1, MQTh: 90, Selects: map[string]int64{"n1": 300, "n2": 500}},
		{Config: "pg-pair-pgpool-remote_write", Mix: "r80w20", Round: 2, MQTh: 80, Selects: map[string]int64{"n1": 500, "n2": 300}},
		{Config: "pg-pair-pgpool-remote_write", Mix: "r80w20", Round: 3, Err: "failed", Selects: map[string]int64{"n2": 10000}},
		{Config: "pg-pair-pgpool-nolb-remote_write", Mix: "r80w20", Round: 1, MQTh: 95, Selects: map[string]int64{"n1": 700, "n2": 0}},
	}
	rep := Build(Params{Mixes: []string{"r80w20"}, Rounds: 3, Suite: SuiteSeed001}, Environment{}, cs, runs)
	rows := rep.Seed001[0].Rows
	if rows[0].Selects != nil || rows[1].Selects["n1"] != 800 || rows[1].Selects["n2"] != 800 || rows[2].Selects["n1"] != 700 || rows[2].Selects["n2"] != 0 {
		t.Errorf("selects %v, %v, %v; want none, n1 800 n2 800, n1 700 n2 0", rows[0].Selects, rows[1].Selects, rows[2].Selects)
	}
	for i, want := range []string{"", "SELECTs n1 50% n2 50%", "SELECTs n1 100% n2 0%"} {
		if got := rows[i].balancedText(); got != want {
			t.Errorf("%s: routed column %q, want %q", rows[i].Config, got, want)
		}
	}
	if rows[1].Shape != ShapePgpool || rows[2].Shape != ShapePgpoolPassive {
		t.Errorf("shapes %s, %s; want %s, %s", rows[1].Shape, rows[2].Shape, ShapePgpool, ShapePgpoolPassive)
	}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "SELECTs n1 50% n2 50%") || !strings.Contains(out.String(), "SELECTs n1 100% n2 0%") {
		t.Errorf("printed table lacks pgpool's SELECT shares:\n%s", out.String())
	}
}

// --workload: TM1's mixes as before; TPC-C's and Epinions' from their
// registrations; the tables and the text say which workload ran.
func TestSuiteWorkloads(t *testing.T) {
	for _, tc := range []struct {
		workload, mixes string
		want            string // joined; "" means an error
		err             string
	}{
		{"tm1", "r80w20,R20W80", "r80w20,r20w80", ""},
		{"", "read-only", "read-only", ""},
		{"tpcc", "standard,read-only,standard", "standard,read-only", ""},
		{"epinions", "seed001", "seed001", ""},
		{"epinions", "r80w20", "", `"r80w20" is not a mix of epinions; use a comma list of seed001, benchbase`},
		{"tm1", "standard", "", `"standard" is not a TM1 mix`},
		{"tpcc", " ", "", "empty list"},
		{"ycsb", "a", "", "--workload"},
	} {
		got, err := SelectWorkloadMixes(tc.workload, tc.mixes)
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SelectWorkloadMixes(%q, %q) error %v, want ErrBadOption with %q", tc.workload, tc.mixes, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("SelectWorkloadMixes(%q, %q) = %v, %v; want %s", tc.workload, tc.mixes, got, err, tc.want)
		}
	}
	for _, w := range Seed001Workloads {
		if _, err := SelectWorkloadMixes(w, "r80w20"); err != nil && strings.Contains(err.Error(), "--workload") {
			t.Errorf("suite workload %s is not registered: %v", w, err)
		}
	}
	cs := suiteConfigs(t, []string{"sqlite"}, "standalone-relaxed", "sm-lb-random")
	p := Params{Mixes: []string{"seed001"}, Rounds: 1, Suite: SuiteSeed001, Workload: "epinions", ScaleName: "scale", Subscribers: 2}
	rep := Build(p, Environment{}, cs, []Measurement{ms("standalone-relaxed", "seed001", 1, 400), ms("sm-lb-random", "seed001", 1, 500)})
	if len(rep.Seed001) != 1 || rep.Seed001[0].Workload != "epinions" || rep.Seed001[0].Best != "sm-lb-random" {
		t.Fatalf("seed001 tables %+v", rep.Seed001)
	}
	if v := rep.Seed001[0].Rows[1].VsN1; v == nil || math.Abs(*v-25) > 1e-9 {
		t.Errorf("sm-lb-random vs n1 = %s, want +25.00%%", pctText(v))
	}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "seed 001 table: Epinions seed001") || !strings.Contains(out.String(), "scale=2,") {
		t.Errorf("printed:\n%s", out.String())
	}
	if got := (Params{Subscribers: 1000}).scaleText(); got != "P=1000 subscribers" {
		t.Errorf("TM1 scale text %q", got)
	}
	if got := (Params{Workload: "tpcc", ScaleName: "warehouses", Subscribers: 2}).scaleText(); got != "warehouses=2" {
		t.Errorf("TPC-C scale text %q", got)
	}
}

// --read-consistency reaches the router of every routed configuration's
// cluster file and no other; a level the router does not know is refused.
func TestSweepReadConsistency(t *testing.T) {
	port := 31000
	addr := func() (string, error) { port++; return fmt.Sprintf("127.0.0.1:%d", port), nil }
	routed := 0
	for _, c := range Seed001Configs([]string{"postgres-physical"}, false) {
		if c.Policy != "" {
			c.ReadConsistency = "eventual"
		}
		text, cc := parsedClusterFile(t, c, addr)
		if cc.Router == nil {
			if strings.Contains(text, "read_consistency") {
				t.Errorf("%s has no router but names a read consistency:\n%s", c.Name, text)
			}
			continue
		}
		routed++
		if cc.Router.ReadConsistency != "eventual" {
			t.Errorf("%s: router read_consistency %q, want eventual", c.Name, cc.Router.ReadConsistency)
		}
	}
	if routed == 0 {
		t.Fatal("no routed configuration in the suite")
	}
	configs, _ := SelectConfigs("standalone-relaxed")
	o := Options{Subscribers: 10, Clients: 1, Duration: time.Second, Rounds: 1, Mixes: []string{"r80w20"}, Configs: configs, ReadConsistency: "sometimes"}
	if err := o.validate(); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "--read-consistency") {
		t.Errorf("validate with --read-consistency sometimes: %v", err)
	}
}
