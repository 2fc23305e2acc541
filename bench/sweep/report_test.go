package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/config"
)

func cfgs(t *testing.T, names ...string) []Config {
	t.Helper()
	var out []Config
	for _, n := range names {
		c, ok := configByName(n)
		if !ok {
			t.Fatalf("no configuration %q", n)
		}
		out = append(out, c)
	}
	return out
}

func ms(config, mix string, round int, mqth float64) Measurement {
	return Measurement{Config: config, Mix: mix, Round: round, MQTh: mqth}
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, 10, 1000}, 10},
	} {
		if got := Median(tc.in); !approx(got, tc.want) {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestBuildRatiosAndMedians(t *testing.T) {
	type want struct {
		config, mix string
		mqth        float64
		ratio       float64 // NaN: nil ratio
		rounds      int
		failed      int
	}
	nan := math.NaN()
	tests := []struct {
		name    string
		configs []string
		mixes   []string
		runs    []Measurement
		want    []want
	}{
		{
			name:    "tandem rows against standalone-strict, pg rows against pg-standalone-on, per mix",
			configs: []string{"standalone-strict", "hs-received-relaxed", "pg-standalone-on", "pg-pair-remote_write"},
			mixes:   []string{"r80w20", "r20w80"},
			runs: []Measurement{
				ms("standalone-strict", "r80w20", 1, 1000), ms("standalone-strict", "r20w80", 1, 400),
				ms("hs-received-relaxed", "r80w20", 1, 1500), ms("hs-received-relaxed", "r20w80", 1, 1000),
				ms("pg-standalone-on", "r80w20", 1, 2000), ms("pg-standalone-on", "r20w80", 1, 800),
				ms("pg-pair-remote_write", "r80w20", 1, 1000), ms("pg-pair-remote_write", "r20w80", 1, 200),
			},
			want: []want{
				{"standalone-strict", "r80w20", 1000, 1, 1, 0},
				{"standalone-strict", "r20w80", 400, 1, 1, 0},
				{"hs-received-relaxed", "r80w20", 1500, 1.5, 1, 0},
				{"hs-received-relaxed", "r20w80", 1000, 2.5, 1, 0},
				{"pg-standalone-on", "r20w80", 800, 1, 1, 0},
				{"pg-pair-remote_write", "r80w20", 1000, 0.5, 1, 0},
				{"pg-pair-remote_write", "r20w80", 200, 0.25, 1, 0},
			},
		},
		{
			name:    "medians over rounds; the ratio is of medians",
			configs: []string{"standalone-strict", "standalone-relaxed"},
			mixes:   []string{"r20w80"},
			runs: []Measurement{
				ms("standalone-strict", "r20w80", 1, 100), ms("standalone-strict", "r20w80", 2, 300), ms("standalone-strict", "r20w80", 3, 200),
				ms("standalone-relaxed", "r20w80", 2, 500), ms("standalone-relaxed", "r20w80", 1, 900), ms("standalone-relaxed", "r20w80", 3, 250),
			},
			want: []want{
				{"standalone-strict", "r20w80", 200, 1, 3, 0},
				{"standalone-relaxed", "r20w80", 500, 2.5, 3, 0},
			},
		},
		{
			name:    "failed rounds are left out of the median and counted",
			configs: []string{"standalone-strict", "hs-1safe-relaxed"},
			mixes:   []string{"r80w20"},
			runs: []Measurement{
				ms("standalone-strict", "r80w20", 1, 100), ms("standalone-strict", "r80w20", 2, 200),
				ms("hs-1safe-relaxed", "r80w20", 1, 300),
				{Config: "hs-1safe-relaxed", Mix: "r80w20", Round: 2, Err: "boom"},
			},
			want: []want{
				{"standalone-strict", "r80w20", 150, 1, 2, 0},
				{"hs-1safe-relaxed", "r80w20", 300, 2, 1, 1},
			},
		},
		{
			name:    "no baseline, or a baseline that failed: no ratio",
			configs: []string{"standalone-strict", "hs-visible-relaxed", "pg-pair-on"},
			mixes:   []string{"r80w20"},
			runs: []Measurement{
				{Config: "standalone-strict", Mix: "r80w20", Round: 1, Err: "did not start"},
				ms("hs-visible-relaxed", "r80w20", 1, 300),
				ms("pg-pair-on", "r80w20", 1, 50),
			},
			want: []want{
				{"standalone-strict", "r80w20", 0, nan, 0, 1},
				{"hs-visible-relaxed", "r80w20", 300, nan, 1, 0},
				{"pg-pair-on", "r80w20", 50, nan, 1, 0},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(Params{Mixes: tc.mixes, Rounds: 3}, Environment{}, cfgs(t, tc.configs...), tc.runs)
			if len(r.Rows) != len(tc.configs) {
				t.Fatalf("%d rows, want %d", len(r.Rows), len(tc.configs))
			}
			for _, w := range tc.want {
				c, ok := r.Cell(w.config, w.mix)
				if !ok {
					t.Fatalf("no cell %s/%s", w.config, w.mix)
				}
				if !approx(c.MQTh, w.mqth) {
					t.Errorf("%s/%s MQTh = %v, want %v", w.config, w.mix, c.MQTh, w.mqth)
				}
				switch {
				case math.IsNaN(w.ratio) && c.Ratio != nil:
					t.Errorf("%s/%s ratio = %v, want none", w.config, w.mix, *c.Ratio)
				case !math.IsNaN(w.ratio) && (c.Ratio == nil || !approx(*c.Ratio, w.ratio)):
					t.Errorf("%s/%s ratio = %v, want %v", w.config, w.mix, c.Ratio, w.ratio)
				}
				if len(c.Rounds) != w.rounds || c.Failed != w.failed {
					t.Errorf("%s/%s rounds %d failed %d, want %d and %d", w.config, w.mix, len(c.Rounds), c.Failed, w.rounds, w.failed)
				}
			}
		})
	}
}

func TestBuildChecks(t *testing.T) {
	all := ConfigNames()
	// A full sweep's numbers: tandem keeps more of its baseline than
	// PostgreSQL at 1-safe and received, less at visible and durable.
	v := map[string][2]float64{ // r80w20, r20w80
		"standalone-strict":                 {1000, 400},
		"standalone-relaxed":                {1200, 600},
		"hs-received-strict":                {900, 300},
		"hs-received-relaxed":               {1100, 500},
		"hs-1safe-relaxed":                  {1150, 550},
		"hs-visible-relaxed":                {800, 200},
		"hs-durable-relaxed":                {700, 150},
		"hs-durable-relaxed-standby-strict": {750, 160},
		"pg-standalone-on":                  {2000, 1000},
		"pg-standalone-off":                 {2400, 1600},
		"pg-pair-local":                     {2000, 1000},
		"pg-pair-remote_write":              {1800, 700},
		"pg-pair-on":                        {1800, 650},
		"pg-pair-remote_apply":              {1700, 600},
		"pg-pair-haproxy-local":             {1800, 900},
		"hs-pgphys-router-1safe":            {1900, 800},
	}
	var runs []Measurement
	for name, x := range v {
		runs = append(runs, ms(name, "r80w20", 1, x[0]), ms(name, "r20w80", 1, x[1]))
	}
	r := Build(Params{Mixes: []string{"r80w20", "r20w80"}, Rounds: 1}, Environment{}, cfgs(t, all...), runs)
	type want struct {
		id, mix, left, status string
		lv, rv                float64
	}
	tests := []want{
		{"a", "r80w20", "hs-1safe-relaxed", "PASS", 1.15, 1.0},
		{"a", "r80w20", "hs-received-relaxed", "PASS", 1.1, 0.9},
		{"a", "r80w20", "hs-visible-relaxed", "FAIL", 0.8, 0.85},
		{"a", "r80w20", "hs-durable-relaxed", "FAIL", 0.7, 0.9},
		{"a", "r20w80", "hs-received-relaxed", "PASS", 1.25, 0.7},
		{"a", "r20w80", "hs-durable-relaxed-standby-strict", "FAIL", 0.4, 0.65},
		{"b", "r20w80", "hs-received-relaxed", "PASS", 500, 400},
		// tandem's router in front of its physical pair (router.direct)
		{"c", "r80w20", "hs-pgphys-router-1safe", "PASS", 1900, 1800},
		{"c", "r20w80", "hs-pgphys-router-1safe", "FAIL", 800, 900},
	}
	for _, w := range tests {
		found := false
		for _, c := range r.Checks {
			if c.ID != w.id || c.Mix != w.mix || c.Left != w.left {
				continue
			}
			found = true
			if c.Status != w.status || !approx(c.LeftV, w.lv) || !approx(c.RightV, w.rv) {
				t.Errorf("check (%s) %s %s: %s %v vs %v, want %s %v vs %v (%s)", w.id, w.mix, w.left, c.Status, c.LeftV, c.RightV, w.status, w.lv, w.rv, c.Text)
			}
		}
		if !found {
			t.Errorf("no check (%s) %s %s", w.id, w.mix, w.left)
		}
	}
	// The router's rows (28 of physicalPairs) only where they ran: 1-safe
	// (against HAProxy in clear text; HAProxy's TLS rows did not run).
	if n, want := len(r.Checks), 2*len(levelPairs)+2*2*(len(physicalPairs)-28)+2*2+1; n != want {
		t.Errorf("%d checks, want %d", n, want)
	}

	// (b) fails when the standby costs more than strict logging saved, and
	// is skipped without the write-intensive mix.
	r = Build(Params{Mixes: []string{"r20w80"}}, Environment{}, cfgs(t, "standalone-strict", "hs-received-relaxed"),
		[]Measurement{ms("standalone-strict", "r20w80", 1, 400), ms("hs-received-relaxed", "r20w80", 1, 399)})
	if c := r.Checks[len(r.Checks)-1]; c.ID != "b" || c.Status != "FAIL" {
		t.Errorf("check (b) = %+v, want FAIL", c)
	}
	r = Build(Params{Mixes: []string{"r80w20"}}, Environment{}, cfgs(t, "standalone-strict", "hs-received-relaxed"),
		[]Measurement{ms("standalone-strict", "r80w20", 1, 400), ms("hs-received-relaxed", "r80w20", 1, 500)})
	for _, c := range r.Checks {
		if c.Status != "SKIP" {
			t.Errorf("check %+v: want SKIP (pg pair and r20w80 not measured)", c)
		}
	}
}

func TestPrintAndFiles(t *testing.T) {
	runs := []Measurement{
		ms("standalone-strict", "r80w20", 1, 1000), ms("standalone-strict", "r20w80", 1, 400),
		ms("hs-received-relaxed", "r80w20", 1, 1500), {Config: "hs-received-relaxed", Mix: "r20w80", Round: 1, MQTh: 800, Errors: 2},
		ms("pg-standalone-on", "r80w20", 1, 2000), ms("pg-standalone-on", "r20w80", 1, 800),
		{Config: "pg-pair-on", Mix: "r80w20", Round: 1, Err: "pg_basebackup failed"},
		{Config: "pg-pair-on", Mix: "r20w80", Round: 1, Err: "pg_basebackup failed"},
	}
	r := Build(Params{Subscribers: 1000, Clients: 8, Mixes: []string{"r80w20", "r20w80"}, Rounds: 1}, Environment{},
		cfgs(t, "standalone-strict", "hs-received-relaxed", "pg-standalone-on", "pg-pair-on"), runs)
	var b bytes.Buffer
	if err := r.Print(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"vs standalone-strict", "vs pg-standalone-on", "R80W20 MQTh", "R20W80 MQTh",
		"hs-received-relaxed", "1500.0", "1.50x", "800.0!", "2.00x", "failed",
		"2 run(s) failed", "pg_basebackup failed",
		"PASS R20W80 hs-received-relaxed 800.0 MQTh >= standalone-strict 400.0 MQTh (2.00x)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// A pg row's ratio sits in the last column (right-aligned: the line is
	// as long as the header); a tandem row leaves that column empty.
	var header string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "configuration"):
			header = line
		case strings.HasPrefix(line, "pg-standalone-on"):
			if len(line) != len(header) || !strings.HasSuffix(line, "1.00x") {
				t.Errorf("pg row does not end in the pg ratio column:\n%s\n%s", header, line)
			}
		case strings.HasPrefix(line, "standalone-strict"):
			if len(line) >= len(header) {
				t.Errorf("tandem row has a value in the pg ratio column:\n%s\n%s", header, line)
			}
		}
	}

	dir := t.TempDir()
	if err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	var js Report
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Rows) != 4 || len(js.Runs) != len(runs) || len(js.Checks) == 0 {
		t.Errorf("JSON round trip: %d rows %d runs %d checks", len(js.Rows), len(js.Runs), len(js.Checks))
	}
	b.Reset()
	if err := r.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+4*2 {
		t.Fatalf("%d CSV records, want 9", len(recs))
	}
	if got := strings.Join(recs[3], ","); !strings.HasPrefix(got, "hs-received-relaxed,tandem,hot-standby,2-safe-received,relaxed,relaxed,NORMAL,,r80w20,1500,standalone-strict,1.5,1,1500") {
		t.Errorf("CSV line %q", got)
	}
	b.Reset()
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	h := b.String()
	if !strings.Contains(h, "<svg") || strings.Contains(h, "http://") && !strings.Contains(h, `xmlns="http://www.w3.org/2000/svg"`) || strings.Contains(h, "<script") {
		t.Errorf("HTML report is not a self-contained page with an inline SVG")
	}
}

func TestSelect(t *testing.T) {
	cs, err := SelectConfigs("pg-pair-on, standalone-strict,hs-1safe-relaxed")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "standalone-strict,hs-1safe-relaxed,pg-pair-on" {
		t.Errorf("order %s: want run order", got)
	}
	if all, _ := SelectConfigs("all"); len(all) != 47 {
		t.Errorf("all: %d configurations, want 47", len(all))
	}
	for _, tc := range []struct{ configs, mixes, flag string }{
		{"standalone-strikt", "r80w20", "--configs"},
		{",", "r80w20", "--configs"},
		{"all", "r80w20,r50w50", "--mixes"},
		{"all", "", "--mixes"},
	} {
		_, err1 := SelectConfigs(tc.configs)
		_, err2 := SelectMixes(tc.mixes)
		err := errors.Join(err1, err2)
		if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("configs %q mixes %q: err %v, want ErrBadOption naming %s", tc.configs, tc.mixes, err, tc.flag)
		}
	}
	if m, err := SelectMixes("R20W80, r80w20,r20w80"); err != nil || strings.Join(m, ",") != "r20w80,r80w20" {
		t.Errorf("SelectMixes: %v %v", m, err)
	}
}

func TestPlanAlternates(t *testing.T) {
	cs := cfgs(t, "standalone-strict", "hs-received-relaxed", "pg-pair-local", "pg-pair-on")
	var got []string
	for _, s := range plan(cs, 3) {
		got = append(got, fmt.Sprintf("%d:%s", s.round, s.cfg.Name))
	}
	want := "1:standalone-strict 1:hs-received-relaxed 1:pg-pair-local 1:pg-pair-on " +
		"2:pg-pair-on 2:pg-pair-local 2:hs-received-relaxed 2:standalone-strict " +
		"3:standalone-strict 3:hs-received-relaxed 3:pg-pair-local 3:pg-pair-on"
	if strings.Join(got, " ") != want {
		t.Errorf("plan:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// Every tandem configuration's cluster file is valid and says what the
// configuration's name promises.
// parsedClusterFile writes configuration c's cluster file and parses it.
func parsedClusterFile(t *testing.T, c Config, addr func() (string, error)) (string, *config.Cluster) {
	t.Helper()
	text, err := clusterFile(c, t.TempDir(), addr)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := config.Parse(c.Name+".toml", []byte(text))
	if err != nil {
		t.Fatalf("%s: %v\n%s", c.Name, err, text)
	}
	return text, cc
}

func TestClusterFiles(t *testing.T) {
	port := 20000
	addr := func() (string, error) { port++; return fmt.Sprintf("127.0.0.1:%d", port), nil }
	for _, c := range Configs() {
		if c.Family != FamilyTandem && c.Family != FamilyTandemPG {
			continue
		}
		_, cc := parsedClusterFile(t, c, addr)
		wantBackend := "sqlite"
		if c.Family == FamilyTandemPG {
			wantBackend = "postgres"
		}
		for _, n := range cc.Nodes {
			if n.Backend != wantBackend {
				t.Errorf("%s: node %s back end %s, want %s", c.Name, n.ID, n.Backend, wantBackend)
			}
		}
		if cc.Design != c.Design || wantBackend == "sqlite" && cc.Nodes[0].SQLite.Synchronous != c.SQLiteSynchronous {
			t.Errorf("%s: design %s synchronous %s", c.Name, cc.Design, cc.Nodes[0].SQLite.Synchronous)
		}
		if c.Design == "hot-standby" {
			rp := cc.Repl
			if len(cc.Nodes) != 2 || rp.Safeness != c.Safeness || rp.Durability != c.Durability ||
				rp.StandbyDurability != c.StandbyDurability || rp.OnStandbyLoss != "block" ||
				wantBackend == "sqlite" && cc.Nodes[1].SQLite.Synchronous != "NORMAL" {
				t.Errorf("%s: %+v", c.Name, rp)
			}
		}
	}
	strict, _ := configByName("standalone-strict")
	relaxed, _ := configByName("standalone-relaxed")
	if strict.SQLiteSynchronous != "FULL" || relaxed.SQLiteSynchronous != "NORMAL" {
		t.Error("standalone-strict must be SQLite FULL and standalone-relaxed NORMAL")
	}
}

// TestBuildPhysical: the physical-pair comparison (issue 13) pairs each
// tandem physical configuration with HAProxy + PostgreSQL's pair and the
// pair direct at its level, computes the ratios and checks (c) and (d).
func TestBuildPhysical(t *testing.T) {
	v := map[string][2]float64{ // r80w20, r20w80
		"pg-standalone-on":             {2000, 1000},
		"pg-pair-local":                {2000, 1000},
		"pg-pair-haproxy-local":        {1600, 900},
		"hs-pgphys-1safe":              {1700, 850},
		"pg-pair-remote_write":         {1800, 700},
		"pg-pair-haproxy-remote_write": {1500, 650},
		"hs-pgphys-received":           {1400, 660},
		// visible: HAProxy not measured; durable: not measured at all
		"pg-pair-remote_apply": {1700, 600},
		"hs-pgphys-visible":    {1500, 500},
	}
	var runs []Measurement
	var names []string
	for name, x := range v {
		runs = append(runs, ms(name, "r80w20", 1, x[0]), ms(name, "r20w80", 1, x[1]))
		names = append(names, name)
	}
	r := Build(Params{Mixes: []string{"r80w20", "r20w80"}, Rounds: 1}, Environment{}, cfgs(t, names...), runs)
	ptr := func(f float64) *float64 { return &f }
	wantRows := []PhysicalRow{
		{Level: "1-safe", Mix: "r80w20", PhysicalV: 1700, HAProxyV: 1600, DirectV: 2000, VsHAProxy: ptr(1700.0 / 1600), VsDirect: ptr(0.85)},
		{Level: "2-safe-received", Mix: "r80w20", PhysicalV: 1400, HAProxyV: 1500, DirectV: 1800, VsHAProxy: ptr(1400.0 / 1500), VsDirect: ptr(1400.0 / 1800)},
		{Level: "2-safe-visible", Mix: "r80w20", PhysicalV: 1500, DirectV: 1700, VsDirect: ptr(1500.0 / 1700)},
		{Level: "1-safe", Mix: "r20w80", PhysicalV: 850, HAProxyV: 900, DirectV: 1000, VsHAProxy: ptr(850.0 / 900), VsDirect: ptr(0.85)},
		{Level: "2-safe-received", Mix: "r20w80", PhysicalV: 660, HAProxyV: 650, DirectV: 700, VsHAProxy: ptr(660.0 / 650), VsDirect: ptr(660.0 / 700)},
		{Level: "2-safe-visible", Mix: "r20w80", PhysicalV: 500, DirectV: 600, VsDirect: ptr(500.0 / 600)},
	}
	if len(r.Physical) != len(wantRows) {
		t.Fatalf("%d physical rows, want %d (the durable level is not measured): %+v", len(r.Physical), len(wantRows), r.Physical)
	}
	same := func(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && approx(*a, *b) }
	for i, w := range wantRows {
		g := r.Physical[i]
		if g.Level != w.Level || g.Mix != w.Mix || g.PhysicalV != w.PhysicalV || g.HAProxyV != w.HAProxyV || g.DirectV != w.DirectV ||
			!same(g.VsHAProxy, w.VsHAProxy) || !same(g.VsDirect, w.VsDirect) {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	status := map[string]string{}
	for _, c := range r.Checks {
		if c.ID == "c" || c.ID == "d" {
			status[c.ID+" "+c.Mix+" "+c.Level] = c.Status
		}
	}
	for k, want := range map[string]string{
		"c r80w20 1-safe": "PASS", "d r80w20 1-safe": "PASS", // 0.85 exactly meets the goal
		"c r80w20 2-safe-received": "FAIL", "d r80w20 2-safe-received": "FAIL",
		"c r80w20 2-safe-visible": "SKIP", "d r80w20 2-safe-visible": "PASS",
		"c r80w20 2-safe-durable": "SKIP", "d r80w20 2-safe-durable": "SKIP",
		"c r20w80 1-safe": "FAIL", "c r20w80 2-safe-received": "PASS", "d r20w80 2-safe-received": "PASS",
	} {
		if status[k] != want {
			t.Errorf("check %s = %q, want %s", k, status[k], want)
		}
	}
	var out bytes.Buffer
	if err := r.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"tandem's physical pair vs HAProxy + PostgreSQL's streaming pair",
		"(c) tandem's physical pair >= HAProxy",
		"(d) tandem's physical pair >= 0.85x",
		"1.06x", // 1700/1600
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	// Without any physical or HAProxy configuration the section is absent.
	r = Build(Params{Mixes: []string{"r80w20"}, Rounds: 1}, Environment{}, cfgs(t, "pg-standalone-on", "pg-pair-local"),
		[]Measurement{ms("pg-standalone-on", "r80w20", 1, 10), ms("pg-pair-local", "r80w20", 1, 9)})
	out.Reset()
	_ = r.Print(&out)
	if len(r.Physical) != 0 || strings.Contains(out.String(), "(c)") {
		t.Errorf("physical section without physical configurations: %+v\n%s", r.Physical, out.String())
	}
}

// TestRouterDirectConfigs: the router.direct configurations put the
// router in front with direct = true, share one cluster per TLS setting
// over their four levels, and never the node-relay pair's cluster.
func TestRouterDirectConfigs(t *testing.T) {
	port := 7000
	addr := func() (string, error) { port++; return fmt.Sprintf("127.0.0.1:%d", port), nil }
	for _, tc := range []struct{ name, setup, internode string }{
		{"hs-pgphys-router-received", "hs-pgphys-router", ""},
		{"hs-pgphys-router-cleartext-durable", "hs-pgphys-router-cleartext", "inter_node = \"none\""},
		{"hs-pgphys-visible", "hs-pgphys", ""},
		{"hs-pgphys-router-auto-1safe", "hs-pgphys-router-auto", "failover = \"automatic\""},
		{"sm-pgphys-router-auto-visible", "sm-pgphys-router-auto", "design = \"single-master\""},
	} {
		c, ok := configByName(tc.name)
		if !ok {
			t.Fatalf("no configuration %s", tc.name)
		}
		if got := c.setup(); got != tc.setup || !c.sharedPhysical() {
			t.Errorf("%s: setup %q shared %v, want %q shared", tc.name, got, c.sharedPhysical(), tc.setup)
		}
		text, err := clusterFile(c, "/tmp/x", addr)
		if err != nil {
			t.Fatal(err)
		}
		direct := strings.Contains(tc.name, "-pgphys-router")
		if strings.Contains(text, "direct = true\n") != direct || strings.Contains(text, "[router]\n") != direct {
			t.Errorf("%s: router section and direct = true should be there: %v\n%s", tc.name, direct, text)
		}
		if tc.internode != "" && !strings.Contains(text, tc.internode) {
			t.Errorf("%s: no %s\n%s", tc.name, tc.internode, text)
		}
		if _, err := config.Parse("x.toml", []byte(text)); err != nil {
			t.Errorf("%s: the cluster file does not parse: %v", tc.name, err)
		}
	}
}

// The router with TLS against HAProxy's stack with its clients in TLS:
// one (c) against the peer that ran, one (d), no row against the
// clear-text HAProxy that did not run.
func TestPhysicalChecksTLSPeer(t *testing.T) {
	r := Build(Params{Mixes: []string{"r80w20"}}, Environment{}, cfgs(t, "pg-pair-local", "pg-pair-haproxy-tls-local", "hs-pgphys-router-1safe"),
		[]Measurement{ms("pg-pair-local", "r80w20", 1, 4000), ms("pg-pair-haproxy-tls-local", "r80w20", 1, 3000), ms("hs-pgphys-router-1safe", "r80w20", 1, 3300)})
	var c, d []Check
	for _, ch := range r.Checks {
		if ch.Left != "hs-pgphys-router-1safe" {
			continue
		}
		switch ch.ID {
		case "c":
			c = append(c, ch)
		case "d":
			d = append(d, ch)
		}
	}
	if len(c) != 1 || c[0].Right != "pg-pair-haproxy-tls-local" || c[0].Status != "PASS" || !approx(c[0].RightV, 3000) {
		t.Errorf("(c) checks %+v, want one PASS against pg-pair-haproxy-tls-local", c)
	}
	if len(d) != 1 || d[0].Status != "FAIL" || !approx(d[0].RightV, 4000) {
		t.Errorf("(d) checks %+v, want one FAIL (0.82x of the pair direct)", d)
	}
	var rows []string
	for _, row := range r.Physical {
		if row.Physical == "hs-pgphys-router-1safe" {
			rows = append(rows, row.HAProxy)
		}
	}
	if len(rows) != 1 || rows[0] != "pg-pair-haproxy-tls-local" {
		t.Errorf("the router's rows against %v, want only pg-pair-haproxy-tls-local", rows)
	}
}
