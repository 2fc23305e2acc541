package scaleout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench/workloads/tm1"
	"github.com/tandemdb/tandem/config"
)

func TestParseNodes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"1..4", []int{1, 2, 3, 4}},
		{"3", []int{3}},
		{"4,1,2", []int{1, 2, 4}},
		{"1..2,2..3", []int{1, 2, 3}},
	} {
		got, err := ParseNodes(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseNodes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "0..2", "3..1", "a", "1..x"} {
		if _, err := ParseNodes(bad); !errors.Is(err, ErrBadOption) {
			t.Errorf("ParseNodes(%q): %v, want ErrBadOption", bad, err)
		}
	}
}

// Medians over rounds and the efficiency, against hand-computed values.
func TestSummarise(t *testing.T) {
	node := func(name string, util float64) Host { return Host{Name: name, Kind: "node", Util: util} }
	pts := []Point{
		{N: 1, Mix: "r80w20", Round: 1, X: 1000, MeanMs: 8, Hosts: []Host{node("n1", 0.25)}, MachineBusy: 0.9},
		{N: 1, Mix: "r80w20", Round: 2, X: 1200, MeanMs: 6, Hosts: []Host{node("n1", 0.24)}, MachineBusy: 0.5},
		{N: 1, Mix: "r80w20", Round: 3, X: 1100, MeanMs: 7, Hosts: []Host{node("n1", 0.23)}, MachineBusy: 0.7},
		{N: 2, Mix: "r80w20", Round: 1, X: 1900, Hosts: []Host{node("n1", 0.25), node("n2", 0.1), {Name: "router", Kind: "router", Util: 0.4}}},
		{N: 2, Mix: "r80w20", Round: 2, X: 2000, Hosts: []Host{node("n1", 0.25), node("n2", 0.2), {Name: "router", Kind: "router", Util: 0.5}}},
		{N: 2, Mix: "r80w20", Round: 3, X: 2300, Hosts: []Host{node("n1", 0.25), node("n2", 0.15), {Name: "router", Kind: "router", Util: 0.6}}},
		{N: 2, Mix: "read-only", Round: 1, X: 500},
	}
	rows := Summarise(pts)
	if len(rows) != 3 {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	r1, r2, ro := rows[0], rows[1], rows[2]
	// N = 1: median X 1100, mean 7 ms, node 0.24, machine 0.7; efficiency 1100/(1*1100).
	if r1.N != 1 || r1.X != 1100 || r1.MeanMs != 7 || r1.NodeUtil != 0.24 || r1.MachineBusy != 0.7 || r1.Efficiency != 1 || r1.Rounds != 3 {
		t.Errorf("N=1: %+v", r1)
	}
	// N = 2: median X 2000, efficiency 2000/(2*1100) = 0.909; node CPU:
	// per round the median of (0.25, n2) = 0.175, 0.225, 0.2 -> 0.2; busiest 0.25; router 0.5.
	if r2.N != 2 || r2.X != 2000 || r2.Efficiency != 0.909 || r2.NodeUtil != 0.2 || r2.MaxNodeUtil != 0.25 || r2.RouterUtil != 0.5 {
		t.Errorf("N=2: %+v", r2)
	}
	// read-only has no N = 1: no efficiency.
	if ro.Mix != "read-only" || ro.Efficiency != 0 {
		t.Errorf("read-only: %+v", ro)
	}
	rep := &Report{Design: "single-master", Backend: "sqlite", Workload: "tm1", Lab: config.Lab{CPUPerNode: 0.25}.String(), Rows: rows}
	var b bytes.Buffer
	if err := rep.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "single-master,sqlite,tm1,cpu=0.25,r80w20,2,0,2000,0.909,") {
		t.Errorf("CSV:\n%s", b.String())
	}
	b.Reset()
	if err := rep.WriteTable(&b); err != nil || !strings.Contains(b.String(), "EMULATED") {
		t.Errorf("table (%v):\n%s", err, b.String())
	}
}

// The cluster files: N = 1 standalone without router, N > 1 the design
// with a router; both parse.
func TestClusterFile(t *testing.T) {
	for _, n := range []int{1, 3} {
		text, err := clusterFile(Options{Design: "single-master", Backend: "sqlite"}, n, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		c, err := config.Parse("so.toml", []byte(text))
		if err != nil {
			t.Fatalf("N=%d: %v\n%s", n, err, text)
		}
		want := "single-master"
		if n == 1 {
			want = "standalone"
		}
		if c.Design != want || len(c.Nodes) != n || (c.Router != nil) != (n > 1) {
			t.Errorf("N=%d: design %s, %d nodes, router %v", n, c.Design, len(c.Nodes), c.Router != nil)
		}
		if c.Router != nil && c.Router.Metrics == "" {
			t.Errorf("N=%d: the router has no admin address (plan validate reads its routed transactions)", n)
		}
	}
}

// --engine physical: the cluster file names it (no writeset-only
// durability), the config accepts it for PostgreSQL single-master, and
// the options refuse it where it cannot run.
func TestEngineOption(t *testing.T) {
	text, err := clusterFile(Options{Design: "single-master", Backend: "postgres", Engine: config.EnginePhysical, Superuser: true, ReadConsistency: "eventual"}, 3, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse("so.toml", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !c.Physical() || strings.Contains(text, "durability") || c.Router.ReadConsistency != "eventual" {
		t.Errorf("physical %v, read consistency %q, file:\n%s", c.Physical(), c.Router.ReadConsistency, text)
	}
	// N = 1 on the physical engine: the primary alone behind the router
	// (--alone router, the default), or the standalone node (socket).
	for _, alone := range []string{"", AloneRouted, AloneSocket} {
		o := Options{Design: "single-master", Backend: "postgres", Engine: config.EnginePhysical, Alone: alone}
		text, err = clusterFile(o, 1, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if c, err = config.Parse("so.toml", []byte(text)); err != nil {
			t.Fatalf("--alone %q: %v\n%s", alone, err, text)
		}
		routed := alone != AloneSocket
		if (c.Design == "single-master") != routed || c.RouterDirect() != routed || len(c.Nodes) != 1 || (routed && c.Repl.Safeness != "1-safe") {
			t.Errorf("--alone %q: design %s, router.direct %v, %d nodes, safeness %q", alone, c.Design, c.RouterDirect(), len(c.Nodes), c.Repl.Safeness)
		}
		if got, want := o.alone(), map[bool]string{true: AloneRouted, false: AloneSocket}[routed]; got != want {
			t.Errorf("--alone %q: the report says %q, want %q", alone, got, want)
		}
	}
	if o := (Options{Design: "single-master", Backend: "postgres"}); o.alone() != "" || o.routedAlone() {
		t.Errorf("the writeset engine's N = 1 is the standalone node, not %q", o.alone())
	}
	text, err = clusterFile(Options{Design: "single-master", Backend: "postgres", Superuser: true}, 2, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c, err = config.Parse("so.toml", []byte(text)); err != nil || c.Physical() {
		t.Fatalf("default engine: %v, physical %v", err, c != nil && c.Physical())
	}
	base := Options{Design: "single-master", Backend: "postgres", Nodes: []int{1}, Rounds: 1, ClientsPerNode: 1, Duration: time.Second, Scale: 1, Workload: tm1.New(), Mixes: []string{"r80w20"}}
	for _, tc := range []struct {
		design, backend, engine string
		ok                      bool
	}{
		{"single-master", "postgres", "physical", true},
		{"hot-standby", "postgres", "physical", true},
		{"single-master", "postgres", "writeset", true},
		{"single-master", "sqlite", "", true},
		{"single-master", "sqlite", "physical", false},
		{"multi-master", "postgres", "physical", false},
		{"single-master", "postgres", "logical", false},
	} {
		o := base
		o.Design, o.Backend, o.Engine = tc.design, tc.backend, tc.engine
		if err := o.check(); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadOption)) {
			t.Errorf("%s %s --engine %q: %v, want ok %v", tc.design, tc.backend, tc.engine, err, tc.ok)
		}
	}
	o := base
	o.Engine, o.Alone = config.EnginePhysical, "relay"
	if err := o.check(); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "--alone") {
		t.Errorf("--alone relay: %v", err)
	}
	o = base
	o.MaxSteal = -0.1
	if err := o.check(); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "--max-steal") {
		t.Errorf("--max-steal -0.1: %v", err)
	}
	o = base
	o.ReadConsistency = "sometimes"
	if err := o.check(); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "--read-consistency") {
		t.Errorf("--read-consistency sometimes: %v", err)
	}
}

// physicalBehind: done only when enough replicas stream and each replayed
// the primary's position.
func TestPhysicalBehind(t *testing.T) {
	for _, tc := range []struct {
		lsn      string
		nodes    []string
		replayed []string
		want     int
		done     bool
	}{
		{"0/3000060", []string{"n2", "n3"}, []string{"0/3000060", "0/3000060"}, 2, true},
		{"0/3000060", []string{"n2", "n3"}, []string{"0/3000060", "0/3000000"}, 2, false},
		{"1/0", []string{"n2"}, []string{"0/FFFFFFFF"}, 1, false},
		{"1/0", []string{"n2"}, []string{"1/10"}, 1, true},
		{"0/3000060", []string{"n2"}, []string{"0/3000060"}, 2, false},
		{"garbage", []string{"n2"}, []string{"0/1"}, 1, false},
	} {
		got := physicalBehind(tc.lsn, tc.nodes, tc.replayed, tc.want)
		if (got == "") != tc.done {
			t.Errorf("%s %v %v want %d: %q, done %v", tc.lsn, tc.nodes, tc.replayed, tc.want, got, tc.done)
		}
	}
}

// The chart draws one line per mix through each N's median and the
// linear scale-out from X(1).
func TestHTML(t *testing.T) {
	rep := &Report{Design: "single-master", Rows: Summarise([]Point{
		{N: 1, Mix: "r80w20", X: 1000}, {N: 2, Mix: "r80w20", X: 1500}, {N: 3, Mix: "r80w20", X: 1800},
		{N: 1, Mix: "read-only", X: 900}, {N: 2, Mix: "read-only", X: 1800}, {N: 3, Mix: "read-only", X: 2700},
	})}
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if strings.Count(s, "<polyline") != 2 || strings.Count(s, "stroke-dasharray") != 2 || strings.Count(s, "<circle") != 6 {
		t.Errorf("chart: %d lines, %d linear lines, %d points", strings.Count(s, "<polyline"), strings.Count(s, "stroke-dasharray"), strings.Count(s, "<circle"))
	}
	// read-only is linear: efficiency 1 at N = 3 in the point's title.
	if !strings.Contains(s, "read-only N=3: 2700.0 tx/s, efficiency 1.00") || !strings.Contains(s, "r80w20 N=3: 1800.0 tx/s, efficiency 0.60") {
		t.Errorf("point titles missing:\n%s", s)
	}
}

// RoutedTransactions reads the router's /status: transactions by node.
func TestRoutedTransactions(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/status" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `[{"id":"n1","role":"primary","transactions":12},{"id":"n2","role":"replica","transactions":30}]`)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	got, err := RoutedTransactions(context.Background(), &config.Cluster{Router: &config.Router{Metrics: addr}})
	if err != nil || got["n1"] != 12 || got["n2"] != 30 {
		t.Fatalf("RoutedTransactions = %v, %v; want n1 12, n2 30", got, err)
	}
	if _, err := RoutedTransactions(context.Background(), &config.Cluster{}); !errors.Is(err, ErrNoRouterAdmin) {
		t.Errorf("no router: err = %v, want ErrNoRouterAdmin", err)
	}
	srv.Close()
	if _, err := RoutedTransactions(context.Background(), &config.Cluster{Router: &config.Router{Metrics: addr}}); err == nil {
		t.Error("router gone: no error")
	}
}

func TestRoutedLine(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]uint64
		want string
	}{
		{nil, ""},
		{map[string]uint64{"n1": 0, "n2": 0}, ""},
		{map[string]uint64{"n2": 300, "n1": 100}, "; routed n1 25%, n2 75%"},
		{map[string]uint64{"n1": 1, "n2": 1, "n3": 1}, "; routed n1 33%, n2 33%, n3 33%"},
	} {
		if got := routedLine(tc.in); got != tc.want {
			t.Errorf("routedLine(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestServerSocketDSN: N = 1 on the physical engine reaches the standalone
// node's server on its socket (the port from the socket's name, not its
// lock file), with the cluster DSN's user, password and database.
func TestServerSocketDSN(t *testing.T) {
	data := t.TempDir()
	pg := filepath.Join(data, "pgdata")
	if err := os.MkdirAll(pg, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ServerSocketDSN("postgres://tandem:pw@127.0.0.1:6432/tandem?sslmode=disable", data); err == nil {
		t.Fatal("no socket: want an error")
	}
	for _, f := range []string{".s.PGSQL.54321.lock", ".s.PGSQL.54321"} {
		if err := os.WriteFile(filepath.Join(pg, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ServerSocketDSN("postgres://tandem:pw@127.0.0.1:6432/tandem?sslmode=disable", data)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(got)
	if err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if cfg.Host != pg || cfg.Port != 54321 || cfg.User != "tandem" || cfg.Password != "pw" || cfg.Database != "tandem" || cfg.TLSConfig != nil {
		t.Fatalf("%s: host %q port %d user %q password %q database %q tls %v", got, cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database, cfg.TLSConfig != nil)
	}
}

// ApplyCount: writesets per apply batch, the mean certification round
// trip, and how the nodes' own writesets were applied, over a window.
func TestApplyCount(t *testing.T) {
	for _, tc := range []struct {
		from, to        ApplyCount
		want            float64
		certify         float64
		ownShare, fastS float64
		logW, applyW    float64
	}{
		{ApplyCount{10, 20, 100, 0.5, 5, 50, 5, 0.1, 0.2}, ApplyCount{30, 120, 300, 1.5, 30, 125, 25, 0.3, 0.6}, 5, 0.005, 0.25, 0.75, 0.01, 0.02},
		{ApplyCount{10, 20, 7, 1, 3, 3, 2, 1, 1}, ApplyCount{10, 20, 7, 1, 3, 3, 2, 1, 1}, 0, 0, 0, 0, 0, 0}, // no batch, no certification, no wait in the window
		{ApplyCount{}, ApplyCount{4, 6, 4, 0.01, 6, 0, 6, 0.03, 0.06}, 1.5, 0.0025, 1, 0, 0.005, 0.01},       // every own writeset rode in the loop's batches
	} {
		d := tc.to.Sub(tc.from)
		if got := d.CertifyMean(); math.Abs(got-tc.certify) > 1e-12 {
			t.Errorf("%+v -> %+v: certification mean %g s, want %g", tc.from, tc.to, got, tc.certify)
		}
		if got := d.PerBatch(); got != tc.want {
			t.Errorf("%+v -> %+v: %g writesets per batch, want %g", tc.from, tc.to, got, tc.want)
		}
		if got := d.OwnShare(); math.Abs(got-tc.ownShare) > 1e-12 {
			t.Errorf("%+v -> %+v: own share %g, want %g", tc.from, tc.to, got, tc.ownShare)
		}
		if got := d.FastShare(); math.Abs(got-tc.fastS) > 1e-12 {
			t.Errorf("%+v -> %+v: fast share %g, want %g", tc.from, tc.to, got, tc.fastS)
		}
		if lw, aw := d.WaitMeans(); math.Abs(lw-tc.logW) > 1e-12 || math.Abs(aw-tc.applyW) > 1e-12 {
			t.Errorf("%+v -> %+v: waits for the log %g s and the apply %g s, want %g and %g", tc.from, tc.to, lw, aw, tc.logW, tc.applyW)
		}
	}
	sum := ApplyCount{1, 2, 3, 0.5, 1, 1, 1, 0.5, 0.25}.Add(ApplyCount{1, 2, 3, 0.25, 2, 0, 3, 0.25, 0.5})
	if sum != (ApplyCount{2, 4, 6, 0.75, 3, 1, 4, 0.75, 0.75}) {
		t.Errorf("Add: %+v", sum)
	}
}

// withRuntimeParam adds a startup parameter that pgx sends to the server
// (multi-master's standalone N = 1 at REPEATABLE READ), keeping the rest.
func TestWithRuntimeParam(t *testing.T) {
	got, err := withRuntimeParam("postgres://tandem:pw@127.0.0.1:5433/tandem?sslmode=require", "default_transaction_isolation", "repeatable read")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(got)
	if err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if v := cfg.RuntimeParams["default_transaction_isolation"]; v != "repeatable read" || cfg.Host != "127.0.0.1" || cfg.Port != 5433 || cfg.Password != "pw" || cfg.TLSConfig == nil {
		t.Errorf("%s: isolation %q host %s port %d password %q tls %v", got, v, cfg.Host, cfg.Port, cfg.Password, cfg.TLSConfig != nil)
	}
	if _, err := withRuntimeParam("postgres://%zz", "a", "b"); err == nil {
		t.Error("a malformed DSN: no error")
	}
}
