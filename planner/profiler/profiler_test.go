package profiler

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/bench"
	_ "github.com/tandemdb/tandem/bench/workloads/tm1"
	"github.com/tandemdb/tandem/planner"
)

func tm1(t *testing.T) bench.Workload {
	t.Helper()
	w, err := bench.Lookup("tm1")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestOptionErrors(t *testing.T) {
	w := tm1(t)
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"no workload", Options{DSN: "postgres://127.0.0.1:1/x"}, "--workload"},
		{"no dsn", Options{Workload: w}, "--dsn"},
		{"bad dsn", Options{Workload: w, DSN: "postgres://x:notaport/db"}, "--dsn"},
		{"bad mix", Options{Workload: w, DSN: "postgres://127.0.0.1:1/x", Mix: "r50w50"}, "--mix"},
		{"custom without weights", Options{Workload: w, DSN: "postgres://127.0.0.1:1/x", Mix: "custom"}, "--weights"},
		{"negative clients", Options{Workload: w, DSN: "postgres://127.0.0.1:1/x", Clients: -1}, "--clients"},
		{"negative cpus", Options{Workload: w, DSN: "postgres://127.0.0.1:1/x", CPUs: -2}, "--cpus"},
		{"negative idle", Options{Workload: w, DSN: "postgres://127.0.0.1:1/x", Idle: -time.Second}, "--idle must be >= 0"},
		{"negative replica pid", Options{Workload: w, DSN: "postgres://127.0.0.1:1/x", ReplicaPID: -3}, "--replica-pid"},
		{"replica reads without a replica", Options{Workload: w, DSN: "postgres://127.0.0.1:1/x", ReplicaReads: true}, "--replica-reads needs --replica-pid"},
		{"routed count without balanced reads", Options{Workload: w, DSN: "postgres://127.0.0.1:1/x", ReplicaPID: 7, ReplicaRouted: func(context.Context) (uint64, error) { return 0, nil }}, "needs reads balanced over both nodes"},
		{"replica is the profiled process", Options{Workload: w, DSN: "postgres://127.0.0.1:1/x", PID: 42, ReplicaPID: 42}, "--replica-pid 42 is the profiled process"},
		{"unreachable server", Options{Workload: w, DSN: "postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}, "--dsn: connect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(context.Background(), c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one naming %q", err, c.want)
			}
		})
	}
}

// TestProfileTM1Postgres profiles TM1 on a managed PostgreSQL, a few seconds
// per phase, and checks the profile is plausible and loads in the planner.
// loadedPostgres starts a managed PostgreSQL (stopped when the test
// ends) loaded with TM1 at scale subscribers; it skips the test where
// PostgreSQL is missing or -short asks for quick tests only.
func loadedPostgres(t *testing.T, scale int, takes string) (*postgres.Managed, bench.Workload, *slog.Logger) {
	t.Helper()
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("starts PostgreSQL and runs for about " + takes)
	}
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := postgres.StartManaged(context.Background(), postgres.ManagedConfig{DataDir: filepath.Join(t.TempDir(), "pg"), Logger: quiet, TCP: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop() })
	w := tm1(t)
	if _, err := bench.Load(context.Background(), bench.LoadOptions{Workload: w, DSN: m.DSN("postgres"), Scale: scale, Workers: 2, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	return m, w, quiet
}

func TestProfileTM1Postgres(t *testing.T) {
	start := time.Now()
	ctx := context.Background()
	m, w, quiet := loadedPostgres(t, 2000, "20 s")
	dsn := m.DSN("postgres")

	rep, err := Run(ctx, Options{
		Workload: w, DSN: dsn, Mix: "r80w20",
		Clients: 4, Duration: 2 * time.Second, Rampup: 300 * time.Millisecond,
		Seed: 42, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("profiled in %s", time.Since(start).Round(time.Millisecond))
	var table bytes.Buffer
	if err := rep.PrintTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())

	if rep.PID != m.PID() {
		t.Errorf("found server pid %d (%s), the managed postmaster is %d", rep.PID, rep.PIDFrom, m.PID())
	}
	if len(rep.Phases) != 4 {
		t.Fatalf("%d phases, want read-only, update, writeset-apply, mix", len(rep.Phases))
	}
	p := rep.Profile
	if math.Abs(p.Pr+p.Pw-1) > 1e-12 || math.Abs(p.Pr-0.8) > 1e-12 {
		t.Errorf("pr %g + pw %g", p.Pr, p.Pw)
	}
	var cpu planner.Resource
	for _, r := range p.Resources {
		if r.Name == ResCPU {
			cpu = r
		}
	}
	if cpu.RC <= 0 || cpu.WC <= 0 || cpu.WS <= 0 {
		t.Errorf("cpu demands must be > 0: %+v", cpu)
	}
	if cpu.WC <= cpu.RC {
		t.Errorf("an update should cost more CPU than a read: wc %g <= rc %g", cpu.WC, cpu.RC)
	}
	if !strings.Contains(rep.CPUsFrom, "quota") && cpu.Capacity != 0 {
		t.Errorf("capacity %g measured on a host without a CPU quota (%s)", cpu.Capacity, rep.CPUsFrom)
	}
	if p.L1 <= 0 || p.A1 < 0 || p.A1 >= 1 {
		t.Errorf("a1 %g, l1 %g", p.A1, p.L1)
	}
	for _, key := range []string{"pr", "a1", "l1_s", "resources.cpu.rc_s", "resources.cpu.ws_s", "resources.disk.wc_s"} {
		if p.Trust[key] == "" {
			t.Errorf("no trust note for %s", key)
		}
	}
	if !strings.Contains(p.Trust["resources.cpu.rc_s"], "committed read-only transactions") {
		t.Errorf("cpu.rc_s note: %s", p.Trust["resources.cpu.rc_s"])
	}
	apply := rep.Phases[2]
	if apply.Name != PhaseApply || apply.Writesets <= 0 || apply.WritesetRows < apply.Writesets {
		t.Errorf("apply phase: %+v", apply)
	}

	// The file round-trips through the planner's loader and predicts.
	path := filepath.Join(t.TempDir(), "tm1.json")
	var buf bytes.Buffer
	if err := planner.EncodeProfile(&buf, p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := planner.LoadProfileFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Resources[0] != p.Resources[0] || back.L1 != p.L1 || back.Trust["a1"] != p.Trust["a1"] {
		t.Errorf("round trip changed the profile: %+v", back)
	}
	pred, err := planner.Predict(back, planner.MultiMaster, []int{1, 2}, planner.DefaultParams(back))
	if err != nil || len(pred.Points) != 2 || pred.Points[0].ThroughputTPS <= 0 {
		t.Errorf("predict: %v %+v", err, pred)
	}

	// The capture triggers and table are gone.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_trigger WHERE tgname = $1) + (SELECT count(*) FROM pg_class WHERE relname = $2)`, captureTrigger, captureTable).Scan(&n); err != nil || n != 0 {
		t.Errorf("capture objects left behind: %d (%v)", n, err)
	}
	// Undo and re-apply left TM1's data consistent: every call forwarding
	// row still has its special facility.
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM call_forwarding cf LEFT JOIN special_facility sf USING (s_id, sf_type) WHERE sf.s_id IS NULL`).Scan(&n); err != nil || n != 0 {
		t.Errorf("orphan call_forwarding rows: %d (%v)", n, err)
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Errorf("took %s, want < 40 s", d)
	}
}

func TestRunStoppedServer(t *testing.T) {
	if _, err := postgres.FindBinDir(""); err != nil {
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := postgres.StartManaged(ctx, postgres.ManagedConfig{DataDir: filepath.Join(t.TempDir(), "pg"), Settings: map[string]string{"fsync": "off"}, Logger: quiet, TCP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	// Not loaded: a clear error naming the flag and the fix.
	_, err = Run(ctx, Options{Workload: tm1(t), DSN: m.DSN("postgres"), Duration: time.Second, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "--dsn") || !strings.Contains(err.Error(), "bench load") {
		t.Fatalf("unloaded database: %v", err)
	}
	if _, err := bench.Load(ctx, bench.LoadOptions{Workload: tm1(t), DSN: m.DSN("postgres"), Scale: 100, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	// A --pid that is not running.
	_, err = Run(ctx, Options{Workload: tm1(t), DSN: m.DSN("postgres"), Duration: time.Second, PID: 1 << 30, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "--pid") || !errors.Is(err, ErrProc) {
		t.Fatalf("bad --pid: %v", err)
	}
	// A --disk that does not exist.
	_, err = Run(ctx, Options{Workload: tm1(t), DSN: m.DSN("postgres"), Duration: time.Second, Disks: []string{"nosuchdisk"}, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "--disk") || !strings.Contains(err.Error(), "nosuchdisk") {
		t.Fatalf("bad --disk: %v", err)
	}
}

// With a replica, the writeset-apply phase is the update phase seen from
// the replica: its CPU over the committed updates, and the shared disk's
// busy time split by the two trees' I/O bytes.
func TestReplicaApply(t *testing.T) {
	for _, c := range []struct {
		name                        string
		primaryIO, replicaIO        uint64
		disk                        float64
		wantApplyDisk, wantPrimDisk float64
	}{
		{"split by bytes", 3000, 1000, 2.0, 0.5, 1.5},
		{"no replica I/O", 4000, 0, 2.0, 0, 2.0},
		{"no I/O at all", 0, 0, 2.0, 0, 2.0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &profiler{opts: Options{ReplicaPID: 1 << 30}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), rep: &Report{}}
			up := &Phase{Name: PhaseUpdate, UpdateStarted: 110, UpdateCommitted: 100, WallS: 10, ReplicaCPUS: 0.8,
				ServerWriteBytes: c.primaryIO, ReplicaIOBytes: c.replicaIO, DiskBusyS: c.disk}
			ap := p.replicaApply(up)
			if ap.Name != PhaseApply || ap.Completions != 100 || ap.ServerCPUS != 0.8 || ap.WallS != 10 {
				t.Errorf("apply phase %+v: want 100 completions (the committed updates), 0.8 CPU-s (the replica's), 10 s", ap)
			}
			if math.Abs(ap.DiskBusyS-c.wantApplyDisk) > 1e-12 || math.Abs(up.DiskBusyS-c.wantPrimDisk) > 1e-12 {
				t.Errorf("disk busy: apply %g, update %g; want %g and %g", ap.DiskBusyS, up.DiskBusyS, c.wantApplyDisk, c.wantPrimDisk)
			}
			if got := ap.CPUPerCompletion(); math.Abs(got-0.008) > 1e-12 {
				t.Errorf("ws CPU per completion %g, want 0.8 / 100", got)
			}
		})
	}
}

// MixDemands takes wc from the mix phase where the check has it, leaves
// the other resources and the report's own profile as they were.
func TestMixDemands(t *testing.T) {
	base := planner.Profile{Name: "p", Pr: 0.8, Pw: 0.2, Resources: []planner.Resource{
		{Name: "cpu", RC: 0.0005, WC: 0.0015, WS: 0.001},
		{Name: "disk", RC: 0, WC: 0.0002, WS: 0.0001},
	}}
	for _, tc := range []struct {
		name        string
		check       []MixCheck
		wantCPU     float64
		wantDisk    float64
		wantChanged bool
	}{
		{"no mix phase", nil, 0.0015, 0.0002, false},
		// Mix phase: 8,000 reads and 2,000 update attempts in 8 s busy:
		// (8 - 8000*0.0005) / 2000 = 0.002 s per update.
		{"cpu from the mix", []MixCheck{{Resource: "cpu", MeasuredS: 8, WCFromMix: (8 - 8000*0.0005) / 2000}, {Resource: "disk", WCFromMix: 0}}, 0.002, 0.0002, true},
		{"both", []MixCheck{{Resource: "cpu", WCFromMix: 0.003}, {Resource: "disk", WCFromMix: 0.0004}}, 0.003, 0.0004, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Profile: base, Check: tc.check}
			r.Profile.Resources = append([]planner.Resource(nil), base.Resources...)
			got, changed := r.MixDemands()
			if changed != tc.wantChanged || math.Abs(got.Resources[0].WC-tc.wantCPU) > 1e-12 || math.Abs(got.Resources[1].WC-tc.wantDisk) > 1e-12 {
				t.Errorf("MixDemands() = cpu wc %g, disk wc %g, changed %v; want %g, %g, %v", got.Resources[0].WC, got.Resources[1].WC, changed, tc.wantCPU, tc.wantDisk, tc.wantChanged)
			}
			if got.Resources[0].RC != 0.0005 || got.Resources[0].WS != 0.001 {
				t.Errorf("rc or ws changed: %+v", got.Resources[0])
			}
			if r.Profile.Resources[0].WC != 0.0015 {
				t.Errorf("the report's own profile changed: %+v", r.Profile.Resources[0])
			}
		})
	}
}

// splitMix divides a replicated mix phase between the primary and the
// replica by the reads the router sent each; ReplicatedMixDemands takes
// the CPU's wc and ws from it and nothing else.
func TestSplitMix(t *testing.T) {
	prof := planner.Profile{Name: "p", Pr: 0.8, Pw: 0.2, Resources: []planner.Resource{
		{Name: "cpu", RC: 0.0005, WC: 0.004, WS: 0.002, WSend: 0.0003},
		{Name: "disk", RC: 0, WC: 0.0002, WS: 0.0001},
	}}
	u := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		name   string
		ph     Phase
		cpus   float64
		want   *MixSplit
		wantWC float64 // after ReplicatedMixDemands (cpu)
	}{
		{name: "not counted per node", ph: Phase{ReadsOnReplica: true, ReadStarted: 8000, ReadCommitted: 8000, UpdateStarted: 2000, UpdateCommitted: 2000, ServerCPUS: 3, ReplicaCPUS: 1}, cpus: 0.25},
		{name: "reads not balanced", ph: Phase{RoutedToReplica: u(10), ReadStarted: 8000, ReadCommitted: 8000, UpdateStarted: 2000, UpdateCommitted: 2000, ServerCPUS: 3, ReplicaCPUS: 1}, cpus: 0.25},
		// 8,000 reads started (7,900 committed), 6,000 of them on the
		// replica: 0.75 x 7,900 = 5,925 there, 1,975 on the primary. Both
		// trees used 3 CPU-s, the replica 1: busy 8 s and 4 s on 0.25 CPU.
		// wc = (8 - 1975 x 0.0005) / 2000 = 0.00350625
		// ws = (4 - 5925 x 0.0005) / 1900 = 0.000546052...
		{name: "split", ph: Phase{RoutedToReplica: u(6000), ReadsOnReplica: true, ReadStarted: 8000, ReadCommitted: 7900, UpdateStarted: 2000, UpdateCommitted: 1900, ServerCPUS: 3, ReplicaCPUS: 1}, cpus: 0.25,
			want:   &MixSplit{ReadsPrimary: 1975, ReadsReplica: 5925, PrimaryBusyS: 8, ReplicaBusyS: 4, RC: 0.0005, WC: (8 - 1975*0.0005) / 2000, WS: (4 - 5925*0.0005) / 1900},
			wantWC: (8 - 1975*0.0005) / 2000},
		// More routed than started (a retry counted twice): every read on
		// the replica; reads' share exceeding a tree's busy time is 0.
		{name: "all reads on the replica", ph: Phase{RoutedToReplica: u(9000), ReadsOnReplica: true, ReadStarted: 8000, ReadCommitted: 8000, UpdateStarted: 1000, UpdateCommitted: 1000, ServerCPUS: 1, ReplicaCPUS: 0.75}, cpus: 0.25,
			want:   &MixSplit{ReadsPrimary: 0, ReadsReplica: 8000, PrimaryBusyS: 1, ReplicaBusyS: 3, RC: 0.0005, WC: 0.001, WS: 0},
			wantWC: 0.001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := splitMix(prof, tc.cpus, &tc.ph)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("splitMix = %+v, want %+v", got, tc.want)
			}
			r := &Report{Profile: prof, Split: got}
			p, ok := r.ReplicatedMixDemands()
			if got == nil {
				if ok || p.Resources[0].WC != 0.004 {
					t.Errorf("ReplicatedMixDemands without a split = %+v, %v; want the profile unchanged, false", p.Resources[0], ok)
				}
				return
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"reads_primary", got.ReadsPrimary, tc.want.ReadsPrimary}, {"reads_replica", got.ReadsReplica, tc.want.ReadsReplica},
				{"primary_busy", got.PrimaryBusyS, tc.want.PrimaryBusyS}, {"replica_busy", got.ReplicaBusyS, tc.want.ReplicaBusyS},
				{"rc", got.RC, tc.want.RC}, {"wc", got.WC, tc.want.WC}, {"ws", got.WS, tc.want.WS}} {
				if math.Abs(f.got-f.want) > 1e-9 {
					t.Errorf("%s = %g, want %g", f.name, f.got, f.want)
				}
			}
			if !ok || math.Abs(p.Resources[0].WC-tc.wantWC) > 1e-12 || math.Abs(p.Resources[0].WS-tc.want.WS) > 1e-12 {
				t.Errorf("ReplicatedMixDemands cpu = %+v, %v; want wc %g ws %g", p.Resources[0], ok, tc.wantWC, tc.want.WS)
			}
			if p.Resources[0].RC != 0.0005 || p.Resources[1] != prof.Resources[1] {
				t.Errorf("rc or the disk changed: %+v", p.Resources)
			}
			if p.Resources[0].WSend > p.Resources[0].WC {
				t.Errorf("wsend %g above wc %g", p.Resources[0].WSend, p.Resources[0].WC)
			}
			if r.Profile.Resources[0].WC != 0.004 {
				t.Errorf("the report's own profile changed: %+v", r.Profile.Resources[0])
			}
			if p.Resources[0].WCSat != 0 || p.MasterReadShare != 0 {
				t.Errorf("no update phase, yet wc_saturated %g, master read share %g", p.Resources[0].WCSat, p.MasterReadShare)
			}
			// With the update phase (updates alone: 1.5 CPU-s over 1,500
			// attempts on 0.25 CPU = 0.004 s each) and the mix phase, the
			// saturated demand and the primary's read share in the mix.
			r.Phases = []*Phase{{Name: PhaseUpdate, Completions: 1500, ServerCPUS: 1.5}, {Name: PhaseMix, UpdateStarted: tc.ph.UpdateStarted}}
			r.CPUs = tc.cpus
			p, _ = r.ReplicatedMixDemands()
			share := tc.want.ReadsPrimary / (tc.want.ReadsPrimary + float64(tc.ph.UpdateStarted))
			if math.Abs(p.Resources[0].WCSat-0.004) > 1e-12 || math.Abs(p.MasterReadShare-share) > 1e-12 || p.Resources[1].WCSat != 0 {
				t.Errorf("wc_saturated %g (disk %g), master read share %g; want 0.004, %g", p.Resources[0].WCSat, p.Resources[1].WCSat, p.MasterReadShare, share)
			}
		})
	}
}

// TestSplitMixMultiMaster: multi-master's replicated path runs every read
// on the profiled node and the replica applies its writesets, so the mix
// phase splits with no routing: wc from n1's tree less its reads, ws from
// n2's tree per committed update at the batch size n2 applied in the mix,
// which becomes the profile's ApplyBatch (the per-batch apply cost scales
// from there). Without n2's apply counters there is no split.
func TestSplitMixMultiMaster(t *testing.T) {
	prof := planner.Profile{Name: "p", Pr: 0.8, Pw: 0.2, ApplyBatch: 1.8, Resources: []planner.Resource{
		{Name: "cpu", RC: 0.0004, WC: 0.006, WS: 0.0029, WSBatch: 0.001},
		{Name: "disk", RC: 0, WC: 0.0002, WS: 0.0001},
	}}
	// R80W20 as measured on 2026-12-06: n1 2.3461 CPU-s, n2 0.7161, on
	// 0.25 CPU; 4,459 reads, 1,076 update attempts, 891 committed, n2
	// applied 891 writesets in 396 batches.
	ph := Phase{Name: PhaseMix, ReadStarted: 4459, ReadCommitted: 4459, UpdateStarted: 1076, UpdateCommitted: 891,
		ServerCPUS: 2.3461, ReplicaCPUS: 0.7161, ReplicaApplyWritesets: 891, ReplicaApplyBatches: 396}
	got := splitMix(prof, 0.25, &ph)
	if got == nil || !got.MultiMaster {
		t.Fatalf("splitMix = %+v, want a multi-master split", got)
	}
	wantWC := (2.3461/0.25 - 4459*0.0004) / 1076
	wantWS := 0.7161 / 0.25 / 891
	if math.Abs(got.WC-wantWC) > 1e-12 || math.Abs(got.WS-wantWS) > 1e-12 || got.ReadsPrimary != 4459 || got.ReadsReplica != 0 || got.ApplyBatch != 2.25 {
		t.Errorf("split = %+v; want wc %g ws %g, 4459 reads on n1, 2.25 writesets per batch", got, wantWC, wantWS)
	}
	r := &Report{Profile: prof, Split: got}
	p, ok := r.ReplicatedMixDemands()
	if !ok || math.Abs(p.Resources[0].WC-wantWC) > 1e-12 || math.Abs(p.Resources[0].WS-wantWS) > 1e-12 || p.ApplyBatch != 2.25 {
		t.Errorf("ReplicatedMixDemands = %+v (apply batch %g), %v; want wc %g ws %g at 2.25", p.Resources[0], p.ApplyBatch, ok, wantWC, wantWS)
	}
	if p.Resources[0].RC != 0.0004 || p.Resources[0].WSBatch != 0.001 || p.Resources[1] != prof.Resources[1] || p.MasterReadShare != 0 || p.Resources[0].WCSat != 0 {
		t.Errorf("more than wc, ws and the batch size changed: %+v", p)
	}
	if r.Profile.ApplyBatch != 1.8 || r.Profile.Resources[0].WS != 0.0029 {
		t.Errorf("the report's own profile changed: %+v", r.Profile)
	}
	// With the update phase (n1 running updates alone: 0.6 CPU-s for 400
	// attempts on 0.25 CPU) its demand per attempt is kept beside the
	// mix's wc as WCSat, the update's own demand the conflict window
	// charges; nothing else moves.
	r.Phases, r.CPUs = []*Phase{{Name: PhaseUpdate, Completions: 400, ServerCPUS: 0.6}}, 0.25
	p, _ = r.ReplicatedMixDemands()
	if math.Abs(p.Resources[0].WCSat-0.006) > 1e-12 || math.Abs(p.Resources[0].WC-wantWC) > 1e-12 || p.MasterReadShare != 0 || p.Resources[1].WCSat != 0 {
		t.Errorf("with an update phase: cpu %+v, disk %+v, master read share %g; want wc_saturated 0.006 beside wc %g on the cpu only", p.Resources[0], p.Resources[1], p.MasterReadShare, wantWC)
	}
	// n2's apply counters not read: no split (single-master's needs the
	// router's counts, which multi-master has not).
	ph.ReplicaApplyWritesets, ph.ReplicaApplyBatches = 0, 0
	if s := splitMix(prof, 0.25, &ph); s != nil {
		t.Errorf("split without n2's counters = %+v, want nil", s)
	}
	// Committed but no batches read: ws still splits, the batch size
	// stays the update phase's.
	ph.ReplicaApplyWritesets = 891
	s := splitMix(prof, 0.25, &ph)
	if s == nil || s.ApplyBatch != 0 {
		t.Fatalf("split = %+v, want one without a batch size", s)
	}
	if p, _ := (&Report{Profile: prof, Split: s}).ReplicatedMixDemands(); p.ApplyBatch != 1.8 {
		t.Errorf("apply batch = %g, want the update phase's 1.8", p.ApplyBatch)
	}
}

// TestIdlePhase: with Options.Idle the profiler measures the server doing
// nothing first, subtracts that CPU per second from every later phase and
// gives it to the profile as the CPU's bg, with a trust note.
func TestIdlePhase(t *testing.T) {
	ctx := context.Background()
	m, w, quiet := loadedPostgres(t, 1000, "10 s")
	dsn := m.DSN("postgres")
	rep, err := Run(ctx, Options{Workload: w, DSN: dsn, Mix: "read-only", Clients: 2, Duration: time.Second,
		Idle: 1500 * time.Millisecond, CPUs: 1, Seed: 7, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 3 || rep.Phases[0].Name != PhaseIdle || rep.Phases[0].Completions != 0 || rep.Phases[0].WallS < 1.5 {
		t.Fatalf("phases %+v: want idle (1.5 s, nothing completed), read-only, mix", rep.Phases)
	}
	idle := rep.Phases[0]
	bg := rep.Background
	if bg == nil || bg.ServerCores < 0 || math.Abs(bg.ServerCores-idle.ServerCPUS/idle.WallS) > 1e-5 || idle.BackgroundCPUS != 0 {
		t.Fatalf("background %+v from idle phase %+v", bg, idle)
	}
	for _, ph := range rep.Phases[1:] {
		if want := math.Min(ph.ServerCPUS+ph.BackgroundCPUS, bg.ServerCores*ph.WallS); math.Abs(ph.BackgroundCPUS-want) > 1e-9 || ph.ServerCPUS < 0 {
			t.Errorf("%s phase: background %g s subtracted (server CPU left %g s), want %g", ph.Name, ph.BackgroundCPUS, ph.ServerCPUS, want)
		}
	}
	for _, r := range rep.Profile.Resources {
		if r.Name == ResCPU && math.Abs(r.BG-bg.ServerCores) > 1e-5 {
			t.Errorf("profile cpu bg %g, want the idle phase's %g cores of 1 CPU", r.BG, bg.ServerCores)
		}
	}
	if rep.Profile.Trust["resources.cpu.bg"] == "" {
		t.Error("no trust note for resources.cpu.bg")
	}
	var table bytes.Buffer
	if err := rep.PrintTable(&table); err != nil || !strings.Contains(table.String(), "background (idle phase") {
		t.Errorf("table (%v) lacks the background line:\n%s", err, table.String())
	}
}

// writesetsPerUpdate: the capture run's writesets of its updates run to
// their end; with a real replica (no capture run) the update phase's
// committed share of its updates not aborted; capped at 1, 0 without a
// writeset phase or a count. FillWritesetsPerUpdate derives it for a
// report of an older build (the update phase's share standing in for the
// capture run's) and keeps a measured one.
func TestWritesetsPerUpdate(t *testing.T) {
	update := &Phase{Name: PhaseUpdate, UpdateStarted: 1000, UpdateAborted: 50, UpdateCommitted: 760}
	for _, tc := range []struct {
		name          string
		update, apply *Phase
		want          float64
	}{
		{"capture run", update, &Phase{Name: PhaseApply, CapturedTotal: 4284, CaptureUpdates: 5193}, 0.825},
		{"real replica", update, &Phase{Name: PhaseApply}, 0.8},
		{"no apply phase", update, nil, 0},
		{"more writesets than updates", update, &Phase{Name: PhaseApply, CapturedTotal: 12, CaptureUpdates: 10}, 1},
		{"nothing counted", &Phase{Name: PhaseUpdate}, &Phase{Name: PhaseApply}, 0},
	} {
		if got := writesetsPerUpdate(tc.update, tc.apply); math.Abs(got-tc.want) > 1e-4 {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
	old := &Report{Phases: []*Phase{update, {Name: PhaseApply, CapturedTotal: 700}}}
	if !old.FillWritesetsPerUpdate() || old.Profile.WritesetsPerUpdate != 0.8 {
		t.Errorf("older report: %g, want the update phase's 0.8", old.Profile.WritesetsPerUpdate)
	}
	if old.FillWritesetsPerUpdate() {
		t.Error("a measured share was derived again")
	}
}

// The conflict rate pools the phases that ran updates: Σ n·(−ln(1−a)) over
// Σ n·λ·W, λ the phase's committed updates per second and W their mean
// response time; phases without an abort still count their exposure.
func TestConflictRate(t *testing.T) {
	mix := &Phase{Name: PhaseMix, WallS: 10, UpdateStarted: 1000, UpdateAborted: 20, UpdateCommitted: 800, UpdateMeanMs: 50}
	update := &Phase{Name: PhaseUpdate, WallS: 10, UpdateStarted: 1500, UpdateAborted: 45, UpdateCommitted: 1200, UpdateMeanMs: 60}
	clean := &Phase{Name: PhaseUpdate, WallS: 10, UpdateStarted: 1500, UpdateCommitted: 1200, UpdateMeanMs: 60}
	exposure := func(p *Phase) float64 {
		return float64(p.UpdateStarted) * float64(p.UpdateCommitted) / p.WallS * p.UpdateMeanMs / 1000
	}
	logs := func(p *Phase) float64 {
		return float64(p.UpdateStarted) * -math.Log1p(-float64(p.UpdateAborted)/float64(p.UpdateStarted))
	}
	tests := []struct {
		name   string
		phases []*Phase
		want   float64
	}{
		{"mix alone", []*Phase{mix}, logs(mix) / exposure(mix)},
		{"pooled", []*Phase{mix, update}, (logs(mix) + logs(update)) / (exposure(mix) + exposure(update))},
		{"a phase without aborts still exposes", []*Phase{mix, clean}, logs(mix) / (exposure(mix) + exposure(clean))},
		{"no abort anywhere", []*Phase{clean}, 0},
		{"no phase", []*Phase{nil, nil}, 0},
		{"no response time", []*Phase{{Name: PhaseMix, WallS: 10, UpdateStarted: 10, UpdateAborted: 1, UpdateCommitted: 9}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conflictRate(tt.phases...)
			if math.Abs(got-tt.want) > 1e-12*math.Max(1, tt.want) {
				t.Errorf("c = %g, want %g", got, tt.want)
			}
		})
	}
	// A report saved before the field existed gets it from its phases.
	r := &Report{Phases: []*Phase{update, mix}}
	if !r.FillConflictRate() || math.Abs(r.Profile.ConflictRate-(logs(mix)+logs(update))/(exposure(mix)+exposure(update))) > 1e-12 {
		t.Errorf("FillConflictRate: %g", r.Profile.ConflictRate)
	}
	// Two mixes' reports pool their phases: one c from the counts of both,
	// between the two reports' own.
	mix2 := &Phase{Name: PhaseMix, WallS: 10, UpdateStarted: 4000, UpdateAborted: 200, UpdateCommitted: 3200, UpdateMeanMs: 70}
	other := &Report{Phases: []*Phase{update, mix2}}
	other.FillConflictRate()
	pooled := PooledConflictRate(r, other, nil)
	if want := (logs(mix) + logs(mix2) + 2*logs(update)) / (exposure(mix) + exposure(mix2) + 2*exposure(update)); math.Abs(pooled-want) > 1e-12 {
		t.Errorf("PooledConflictRate = %g, want %g", pooled, want)
	}
	if lo, hi := math.Min(r.Profile.ConflictRate, other.Profile.ConflictRate), math.Max(r.Profile.ConflictRate, other.Profile.ConflictRate); pooled < lo || pooled > hi {
		t.Errorf("pooled c %g outside the reports' own %g..%g", pooled, lo, hi)
	}
	if got := PooledConflictRate(&Report{Phases: []*Phase{clean}}); got != 0 {
		t.Errorf("no abort in any report: c = %g, want 0", got)
	}
}

// TestHostCapacity: a host's capacity is the share of its quota its tree
// ran in the mix phase (background included) when the quota held it back
// in at least 90 % of the periods; a report without the counters (saved
// before them) counts a phase at 0.8 of its quota or more; none without a
// quota or below those. FillCapacity sets it on the CPU, clears a stale
// one, and the profile validates.
func TestHostCapacity(t *testing.T) {
	const quota = "the server's cgroup CPU quota of 0.25 CPUs (affinity mask: 2)"
	mix := func(cpu, bgCPU float64, periods, throttled uint64) *Phase {
		return &Phase{Name: PhaseMix, WallS: 30, ServerCPUS: cpu, BackgroundCPUS: bgCPU, CgroupPeriods: periods, CgroupThrottled: throttled}
	}
	tests := []struct {
		name string
		from string
		ph   *Phase
		want float64 // 0: none
	}{
		{"throttled nearly always", quota, mix(6.6, 0, 3001, 2961), 0.88},
		{"background counts", quota, mix(6.3, 0.3, 3001, 2961), 0.88},
		{"throttled in 80 % of periods", quota, mix(6.6, 0, 3000, 2400), 0},
		{"counters absent, 0.88 of the quota", quota, mix(6.6, 0, 0, 0), 0.88},
		{"counters absent, 0.6 of the quota", quota, mix(4.5, 0, 0, 0), 0},
		{"more than the quota is the quota", quota, mix(7.6, 0, 3000, 3000), 1},
		{"no quota: the affinity mask", "the server's 2 CPUs in its affinity mask", mix(6.6, 0, 3001, 2961), 0},
		{"no mix phase", quota, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{CPUs: 0.25, CPUsFrom: tt.from, Profile: planner.Profile{Version: 1, Name: "p", Pr: 0.8, Pw: 0.2, ClientsPerReplica: 8,
				Resources: []planner.Resource{{Name: ResCPU, RC: 0.0002, WC: 0.001, WS: 0.0007, Capacity: 0.5}, {Name: ResDisk, WC: 0.0001}}}}
			if tt.ph != nil {
				r.Phases = []*Phase{{Name: PhaseUpdate, WallS: 30, ServerCPUS: 7.5}, tt.ph}
			}
			got := r.FillCapacity()
			c := r.Profile.Resources[0].Capacity
			if got != (tt.want > 0) || math.Abs(c-tt.want) > 1e-4 || r.Profile.Resources[1].Capacity != 0 {
				t.Errorf("FillCapacity = %v, cpu capacity %g (disk %g); want %g", got, c, r.Profile.Resources[1].Capacity, tt.want)
			}
			if (r.Profile.Trust["resources.cpu.capacity"] != "") != got {
				t.Errorf("trust note %q with capacity %g", r.Profile.Trust["resources.cpu.capacity"], c)
			}
			if err := r.Profile.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
	// A background that would leave under 0.05 of the host: no capacity.
	r := &Report{CPUs: 0.25, CPUsFrom: quota, Phases: []*Phase{mix(6.6, 0, 3001, 2961)}, Profile: planner.Profile{Version: 1, Name: "p", Pr: 1, ClientsPerReplica: 8,
		Resources: []planner.Resource{{Name: ResCPU, RC: 0.0002, BG: 0.85}}}}
	if r.FillCapacity() || r.Profile.Resources[0].Capacity != 0 {
		t.Errorf("capacity %g beside a background of 0.85", r.Profile.Resources[0].Capacity)
	}
}
