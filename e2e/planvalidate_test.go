package e2e

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/lab"
)

// measuredRow is one of the sweep's rows (medians over rounds).
type measuredRow struct {
	N          int     `json:"n"`
	Mix        string  `json:"mix"`
	X          float64 `json:"x"`
	MeanMs     float64 `json:"mean_ms"`
	XDone      float64 `json:"x_completed"`
	MeanDoneMs float64 `json:"mean_completed_ms"`
	CostDoneMs float64 `json:"cost_completed_ms"`
}

// standaloneOut is the part of a standalone profile's report the test reads.
type standaloneOut struct {
	PID      int      `json:"pid"`
	CPUs     float64  `json:"cpus"`
	CPUsFrom string   `json:"cpus_from"`
	Warnings []string `json:"warnings"`
	Phases   []struct {
		Name            string  `json:"name"`
		MemLatencyNS    float64 `json:"mem_latency_ns"`
		WallS           float64 `json:"wall_s"`
		ServerCPUS      float64 `json:"server_cpu_s"`
		BackgroundCPUS  float64 `json:"background_cpu_s"`
		CgroupPeriods   int64   `json:"cgroup_periods"`
		CgroupThrottled int64   `json:"cgroup_throttled_periods"`
	} `json:"phases"`
	Profile struct {
		Mix                string  `json:"mix"`
		WritesetsPerUpdate float64 `json:"writesets_per_update"`
		Resources          []struct {
			Name     string  `json:"name"`
			RC       float64 `json:"rc_s"`
			WC       float64 `json:"wc_s"`
			Capacity float64 `json:"capacity"`
		} `json:"resources"`
	} `json:"profile"`
}

// validateOut is the part of `tandem plan validate --json` the test reads.
type validateOut struct {
	Emulated   bool            `json:"emulated"`
	Profiles   []standaloneOut `json:"profiles"`
	Replicated []struct {
		PID        int      `json:"pid"`
		ReplicaPID int      `json:"replica_pid"`
		Warnings   []string `json:"warnings"`
		Background *struct {
			ServerCores  float64 `json:"server_cores"`
			ReplicaCores float64 `json:"replica_cores"`
		} `json:"background"`
		Phases []struct {
			Name           string  `json:"name"`
			Completions    int64   `json:"completions"`
			ReplicaCPUS    float64 `json:"replica_cpu_s"`
			ReadsOnReplica bool    `json:"reads_on_replica"`
		} `json:"phases"`
		Profile struct {
			Resources []struct {
				Name      string  `json:"name"`
				RC        float64 `json:"rc_s"`
				WC        float64 `json:"wc_s"`
				WS        float64 `json:"ws_s"`
				BG        float64 `json:"bg"`
				BGReplica float64 `json:"bg_replica"`
				WCSat     float64 `json:"wc_saturated_s"`
				WSBatch   float64 `json:"ws_batch_s"`
			} `json:"resources"`
			MasterReadShare    float64 `json:"master_read_share"`
			ApplyBatch         float64 `json:"apply_batch_writesets"`
			WritesetsPerUpdate float64 `json:"writesets_per_update"`
			CertifierDelay     float64 `json:"certifier_delay_s"`
		} `json:"profile"`
		Split *struct {
			MultiMaster  bool    `json:"multi_master"`
			ReadsPrimary float64 `json:"reads_primary"`
			ReadsReplica float64 `json:"reads_replica"`
			WC           float64 `json:"wc_from_mix_s"`
			WS           float64 `json:"ws_from_mix_s"`
			ApplyBatch   float64 `json:"apply_batch_writesets"`
		} `json:"mix_split"`
		Batched *struct {
			ReplicaPID int `json:"replica_pid"`
			Profile    struct {
				ApplyBatch float64 `json:"apply_batch_writesets"`
			} `json:"profile"`
		} `json:"batched_profile"`
	} `json:"replicated_profiles"`
	ProfileRounds []struct {
		Round      int             `json:"round"`
		Standalone []standaloneOut `json:"profiles"`
		Replicated []struct {
			Split *struct {
				ReadsPrimary float64 `json:"reads_primary"`
				ReadsReplica float64 `json:"reads_replica"`
				WC           float64 `json:"wc_from_mix_s"`
				WS           float64 `json:"ws_from_mix_s"`
			} `json:"mix_split"`
			Profile struct {
				Resources []struct {
					Name string  `json:"name"`
					WC   float64 `json:"wc_s"`
					WS   float64 `json:"ws_s"`
				} `json:"resources"`
			} `json:"profile"`
		} `json:"replicated_profiles"`
	} `json:"profile_rounds"`
	Validations []struct {
		Prediction struct {
			Mix    string `json:"mix"`
			Design string `json:"design"`
			Points []struct {
				Replicas      int     `json:"replicas"`
				ThroughputTPS float64 `json:"throughput_tps"`
			} `json:"points"`
		} `json:"prediction"`
		Points []struct {
			Replicas        int      `json:"replicas"`
			PredictedTPS    float64  `json:"predicted_tps"`
			MeasuredTPS     float64  `json:"measured_tps"`
			ThroughputError float64  `json:"throughput_error"`
			MeasuredRespS   float64  `json:"measured_response_time_s"`
			RespError       *float64 `json:"response_time_error"`
			MeasuredAbort   *float64 `json:"measured_abort_rate"`
			Within          bool     `json:"within"`
			PredWindow      float64  `json:"predicted_conflict_window_s"`
			MeasUpdate      float64  `json:"measured_update_response_s"`
			MeasCertify     float64  `json:"measured_certify_s"`
		} `json:"points"`
		Inputs []struct {
			Name     string `json:"name"`
			Measured bool   `json:"measured"`
		} `json:"inputs"`
	} `json:"validations"`
	Measured struct {
		ReadConsistency string        `json:"read_consistency"`
		Rows            []measuredRow `json:"rows"`
		Points          []struct {
			N            int     `json:"n"`
			Round        int     `json:"round"`
			Mix          string  `json:"mix"`
			X            float64 `json:"x"`
			MemLatencyNS float64 `json:"mem_latency_ns"`
		} `json:"points"`
	} `json:"measured"`
	Speed *struct {
		Profiles struct {
			N      int     `json:"n"`
			Median float64 `json:"median_ns"`
		} `json:"profiles"`
		Windows struct {
			N      int     `json:"n"`
			Median float64 `json:"median_ns"`
		} `json:"windows"`
		Ratio float64 `json:"ratio"`
	} `json:"speed"`
	Errors []string `json:"errors"`
}

// `tandem plan validate` on a tiny configuration, end to end: it profiles
// one emulated host, predicts 1..2, measures 1..2 with the scale-out sweep
// and lines them up. The test checks the plumbing, not the accuracy: every
// N has a prediction and a measurement, the error is computed from those
// two, the profile is of the node's process tree under the lab's quota,
// the inputs say what was assumed, the chart is written, and the lab
// leaves nothing behind. The two designs run side by side (each under
// its own lab cgroups, at most 1.5 cores of quota): the test checks
// plumbing, and that halves its time in CI.
func TestPlanValidateTiny(t *testing.T) {
	for _, d := range []struct{ flag, design string }{{"sm", "single-master"}, {"mm", "multi-master"}} {
		t.Run(d.flag, func(t *testing.T) {
			t.Parallel()
			testPlanValidateTiny(t, d.flag, d.design)
		})
	}
}

// checkApplyBatches: multi-master's replicated profile knows n2's apply
// batch size, and the same n2 was profiled again at a larger one
// (multi_master.apply_batch_delay set at run time); ws was split into a
// part per batch and one per writeset, or a warning says why not.
func checkApplyBatches(t *testing.T, doc *validateOut) {
	t.Helper()
	repl := doc.Replicated[0]
	b := repl.Batched
	if repl.Profile.ApplyBatch < 1 || b == nil || b.Profile.ApplyBatch < 1 || b.ReplicaPID != repl.ReplicaPID {
		t.Fatalf("apply batches: replicated profile %g writesets per batch (n2 pid %d), batched profile %+v: want both measured, on the same n2", repl.Profile.ApplyBatch, repl.ReplicaPID, b)
	}
	split := false
	for _, r := range repl.Profile.Resources {
		if r.Name == "cpu" && r.WSBatch > 0 {
			split = true
			if r.WSBatch/repl.Profile.ApplyBatch > r.WS*(1+1e-9) {
				t.Errorf("cpu ws_batch_s %g over %g writesets is more than ws_s %g", r.WSBatch, repl.Profile.ApplyBatch, r.WS)
			}
		}
	}
	if !split && !slices.ContainsFunc(repl.Warnings, func(w string) bool {
		return strings.Contains(w, "too close to split ws") || strings.Contains(w, "no part per batch to split off")
	}) {
		t.Errorf("ws not split (batches %g and %g writesets) and no warning says why: %v", repl.Profile.ApplyBatch, b.Profile.ApplyBatch, repl.Warnings)
	}
	t.Logf("apply batches %.2f and %.2f writesets; ws split: %v", repl.Profile.ApplyBatch, b.Profile.ApplyBatch, split)
}

func testPlanValidateTiny(t *testing.T, flag, design string) {
	needLab(t)
	havePostgres(t)
	dir := t.TempDir()
	html := filepath.Join(dir, "v.html")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	args := []string{"plan", "validate", "--design", flag, "--nodes", "1..2", "--workload", "tm1",
		"--mix", "r80w20", "--lab", "cpu=0.25,router=0.5,client=0.5", "--subscribers", "1000", "--clients-per-node", "4",
		"--rampup", "1s", "--duration", "3s", "--profile-rampup", "1s", "--profile-duration", "2s",
		"--json", "--html", html, "--dir", filepath.Join(dir, "run")}
	// Single-master also runs two interleaved rounds (profiles before
	// each round's sweep, their medians in the model) with the update
	// demands from the mix phases, split between the nodes by the reads
	// the router sent each.
	// Multi-master takes them from its replicated path's mix phase by
	// default (--demands mix): every read on n1, n2 applying n1's
	// writesets.
	rounds := 1
	if design == "single-master" {
		rounds = 2
		args = append(args, "--rounds", "2", "--demands", "mix")
	}
	cmd := exec.CommandContext(ctx, tandemBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("plan validate: %v\nstderr:\n%s", err, stderr.String())
	}
	if left := lab.Cgroups(cmd.Process.Pid); len(left) > 0 {
		t.Errorf("plan validate left cgroups %v", left)
	}
	var doc validateOut
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if !doc.Emulated || len(doc.Errors) > 0 {
		t.Errorf("emulated %v, errors %v", doc.Emulated, doc.Errors)
	}
	// The model's read consistency: seed 003's single-master reads a
	// replica's latest snapshot (eventual); multi-master needs session.
	wantCons := map[string]string{"single-master": "eventual", "multi-master": "session"}[design]
	if doc.Measured.ReadConsistency != wantCons {
		t.Errorf("the sweep ran at read consistency %q, want %q for %s", doc.Measured.ReadConsistency, wantCons, design)
	}
	if len(doc.Profiles) != 1 || doc.Profiles[0].Profile.Mix != "r80w20" {
		t.Fatalf("profiles: %+v", doc.Profiles)
	}
	prof := doc.Profiles[0]
	if prof.CPUs != 0.25 || !strings.Contains(prof.CPUsFrom, "cgroup CPU quota") {
		t.Errorf("the profile divided CPU by %g (%s), want the emulated host's quota 0.25", prof.CPUs, prof.CPUsFrom)
	}
	for _, r := range prof.Profile.Resources {
		if r.Name == "cpu" && (r.RC <= 0 || r.WC <= 0) {
			t.Errorf("profile cpu demands rc %g wc %g: nothing measured", r.RC, r.WC)
		}
	}
	// The emulated host's quota counters are read over every phase, and
	// the profile's capacity is what the host delivered in the mix phase
	// when its quota held it back there (none when it did not); with
	// interleaved rounds, the median over the rounds that measured one.
	reps := []standaloneOut{prof}
	if len(doc.ProfileRounds) > 0 {
		reps = nil
		for _, r := range doc.ProfileRounds {
			reps = append(reps, r.Standalone...)
		}
	}
	var shares []float64
	for _, rep := range reps {
		for _, ph := range rep.Phases {
			if ph.Name != "idle" && ph.CgroupPeriods == 0 {
				t.Errorf("phase %s: no scheduler periods counted for the host's cgroup", ph.Name)
			}
		}
		mix := rep.Phases[len(rep.Phases)-1]
		if mix.Name != "mix" {
			t.Fatalf("the last phase is %q, want mix", mix.Name)
		}
		share := (mix.ServerCPUS + mix.BackgroundCPUS) / (rep.CPUs * mix.WallS)
		saturated := float64(mix.CgroupThrottled) >= 0.9*float64(mix.CgroupPeriods)
		t.Logf("mix phase: throttled in %d of %d periods, %.3f of the quota", mix.CgroupThrottled, mix.CgroupPeriods, share)
		if saturated {
			shares = append(shares, math.Min(1, share))
		}
	}
	want := 0.0
	if slices.Sort(shares); len(shares)%2 == 1 {
		want = shares[len(shares)/2]
	} else if len(shares) > 0 {
		want = (shares[len(shares)/2-1] + shares[len(shares)/2]) / 2
	}
	for _, r := range prof.Profile.Resources {
		if r.Name == "cpu" && math.Abs(r.Capacity-want) > 1e-3 {
			t.Errorf("capacity %g, want %g: the median share of the saturated mix phases %v", r.Capacity, want, shares)
		}
	}
	// The replicated path: n1 of two nodes profiled, ws from n2's CPU
	// while n1's update phase ran (not a replay by the profiler).
	if len(doc.Replicated) != 1 {
		t.Fatalf("%d replicated-path profiles, want 1", len(doc.Replicated))
	}
	repl := doc.Replicated[0]
	// The profiler quiesces the server between phases (the clusters'
	// client role is a superuser for its CHECKPOINT).
	for _, w := range append(append([]string(nil), prof.Warnings...), repl.Warnings...) {
		if strings.Contains(w, "CHECKPOINT between phases failed") || strings.Contains(w, "VACUUM between phases failed") {
			t.Errorf("profile warning: %s", w)
		}
	}
	if repl.PID <= 0 || repl.ReplicaPID <= 0 || repl.PID == repl.ReplicaPID || repl.PID == prof.PID {
		t.Errorf("replicated profile: pid %d, replica pid %d (standalone pid %d): want n1 and n2 of a new cluster", repl.PID, repl.ReplicaPID, prof.PID)
	}
	for _, ph := range repl.Phases {
		if ph.Name == "update" && ph.ReplicaCPUS <= 0 {
			t.Errorf("replicated profile: n2 used no CPU while n1 committed updates: %+v", ph)
		}
		// Single-master is profiled through the router, which balances
		// reads over both nodes: rc counts both trees.
		if ph.Name == "read-only" && ph.ReadsOnReplica != (design == "single-master") {
			t.Errorf("replicated profile, read-only phase: reads_on_replica %v for %s", ph.ReadsOnReplica, design)
		}
	}
	for _, r := range repl.Profile.Resources {
		if r.Name == "cpu" && (r.RC <= 0 || r.WC <= 0 || r.WS <= 0) {
			t.Errorf("replicated profile cpu demands rc %g wc %g ws %g: nothing measured", r.RC, r.WC, r.WS)
		}
		// Single-master with --demands mix: wc from the mix (the master
		// serving reads too), and the update phase's as the demand of a
		// master that runs updates alone.
		if r.Name == "cpu" && design == "single-master" && (r.WCSat <= 0 || repl.Profile.MasterReadShare <= 0 || repl.Profile.MasterReadShare >= 1) {
			t.Errorf("replicated profile: wc_saturated_s %g, master_read_share %g: want both measured", r.WCSat, repl.Profile.MasterReadShare)
		}
	}
	// The share of updates with a writeset (TM1 rolls 17.5 % back by
	// its rules), measured on both paths.
	for what, f := range map[string]float64{"standalone": prof.Profile.WritesetsPerUpdate, "replicated": repl.Profile.WritesetsPerUpdate} {
		if f <= 0 || f > 1 {
			t.Errorf("%s profile: writesets_per_update %g, want in (0, 1]", what, f)
		}
	}
	if design == "multi-master" {
		// wc and ws from the mix phase, at the batch size n2 applied in it.
		sp := repl.Split
		if sp == nil || !sp.MultiMaster || sp.ReadsReplica != 0 || sp.ReadsPrimary <= 0 || sp.WC <= 0 || sp.WS <= 0 || sp.ApplyBatch < 1 {
			t.Errorf("replicated profile: mix split %+v, want multi-master's: every read on n1, wc, ws and n2's batch size measured", sp)
		} else {
			for _, r := range repl.Profile.Resources {
				if near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }; r.Name == "cpu" && (!near(r.WC, sp.WC) || !near(r.WS, sp.WS) || !near(repl.Profile.ApplyBatch, sp.ApplyBatch)) {
					t.Errorf("replicated profile cpu wc %g ws %g at %g writesets per batch, want the mix's %g, %g at %g", r.WC, r.WS, repl.Profile.ApplyBatch, sp.WC, sp.WS, sp.ApplyBatch)
				}
			}
		}
		checkApplyBatches(t, &doc)
		if d := repl.Profile.CertifierDelay; d <= 0 || d > 1 {
			t.Errorf("replicated profile: certifier_delay_s %g, want n1's measured round trip", d)
		}
	}
	checkProfileRounds(t, &doc, rounds)
	checkSpeed(t, &doc)
	checkBackground(t, &doc)
	if len(doc.Validations) != 1 {
		t.Fatalf("%d validations, want 1", len(doc.Validations))
	}
	v := doc.Validations[0]
	if v.Prediction.Design != design || len(v.Points) != 2 {
		t.Fatalf("validation: design %s, %d points, want %s and N = 1, 2", v.Prediction.Design, len(v.Points), design)
	}
	for i, p := range v.Points {
		if p.Replicas != i+1 {
			t.Errorf("point %d is N = %d", i, p.Replicas)
		}
		var row *measuredRow
		for j := range doc.Measured.Rows {
			if r := &doc.Measured.Rows[j]; r.N == p.Replicas && r.Mix == "r80w20" {
				row = r
			}
		}
		if row == nil || row.X <= 0 {
			t.Fatalf("N = %d: no measured row with throughput (%+v)", p.Replicas, doc.Measured.Rows)
		}
		// The model's unit: transactions run to their end (TM1 rolls
		// some updates back by its rules), at least the counted ones.
		if row.XDone < row.X || row.MeanDoneMs <= 0 {
			t.Errorf("N = %d: completed %g tps (mean %g ms), counted %g tps: want completed measured, >= counted", p.Replicas, row.XDone, row.MeanDoneMs, row.X)
		}
		// The response time compared is the clients' time per completed
		// transaction, the aborted ones' included (the model retries
		// them): at least the completed ones' mean.
		if row.CostDoneMs < row.MeanDoneMs {
			t.Errorf("N = %d: clients' time per completed transaction %g ms, below the completed ones' mean %g ms", p.Replicas, row.CostDoneMs, row.MeanDoneMs)
		}
		if p.MeasuredTPS != row.XDone || math.Abs(p.MeasuredRespS-row.CostDoneMs/1000) > 1e-9 {
			t.Errorf("N = %d: compared %g tps / %g s, the sweep measured %g completed tps / %g ms per completed transaction", p.Replicas, p.MeasuredTPS, p.MeasuredRespS, row.XDone, row.CostDoneMs)
		}
		row.X = row.XDone // the error below is against it
		var pred float64
		for _, pp := range v.Prediction.Points {
			if pp.Replicas == p.Replicas {
				pred = pp.ThroughputTPS
			}
		}
		if pred <= 0 || p.PredictedTPS != pred {
			t.Errorf("N = %d: compared prediction %g, the model predicted %g", p.Replicas, p.PredictedTPS, pred)
		}
		if want := (pred - row.X) / row.X; math.Abs(p.ThroughputError-want) > 1e-9 {
			t.Errorf("N = %d: throughput error %g, want (%g - %g) / %g = %g", p.Replicas, p.ThroughputError, pred, row.X, row.X, want)
		}
		if p.Within != (math.Abs(p.ThroughputError) <= 0.15) {
			t.Errorf("N = %d: within %v with error %g", p.Replicas, p.Within, p.ThroughputError)
		}
		if p.RespError == nil {
			t.Errorf("N = %d: no response-time error", p.Replicas)
		}
		if p.MeasuredAbort == nil || *p.MeasuredAbort < 0 || *p.MeasuredAbort >= 1 {
			t.Errorf("N = %d: measured abort rate %v, want the sweep's share of update attempts aborted", p.Replicas, p.MeasuredAbort)
		}
		if design == "multi-master" && p.Replicas > 1 && (p.PredWindow <= 0 || p.MeasUpdate <= 0 || p.MeasCertify <= 0) {
			t.Errorf("N = %d: the update window (model %g s, measured %g s) and the certification round trip (measured %g s) belong beside the abort rates", p.Replicas, p.PredWindow, p.MeasUpdate, p.MeasCertify)
		}
	}
	var assumed, measured int
	for _, in := range v.Inputs {
		if in.Measured {
			measured++
		} else {
			assumed++
		}
	}
	if assumed == 0 || measured == 0 {
		t.Errorf("inputs: %d measured, %d assumed: the report must say both (%+v)", measured, assumed, v.Inputs)
	}
	if design == "multi-master" && !slices.ContainsFunc(v.Inputs, func(in struct {
		Name     string `json:"name"`
		Measured bool   `json:"measured"`
	}) bool {
		return in.Name == "abort growth"
	}) {
		t.Errorf("inputs: none says how the abort rate grows with N (%+v)", v.Inputs)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"r80w20 predicted", "r80w20 measured", "<svg", "assumed"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("--html page lacks %q", want)
		}
	}
	var predicted []float64
	for _, p := range v.Points {
		predicted = append(predicted, p.PredictedTPS)
	}
	checkReplay(t, out, predicted)
}

// checkReplay re-models the saved document (--replay): the same build
// gives the same predictions; an assumption given on the command line
// (a load-balancer delay) lowers them.
func checkReplay(t *testing.T, saved []byte, predicted []float64) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "v.json")
	if err := os.WriteFile(file, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	replay := func(extra ...string) []float64 {
		out, err := exec.Command(tandemBin, append([]string{"plan", "validate", "--replay", file, "--json"}, extra...)...).Output()
		if err != nil {
			t.Fatalf("plan validate --replay: %v", err)
		}
		var doc struct {
			ReplayOf    string `json:"replay_of"`
			Validations []struct {
				Points []struct {
					PredictedTPS float64 `json:"predicted_tps"`
				} `json:"points"`
			} `json:"validations"`
		}
		if err := json.Unmarshal(out, &doc); err != nil || len(doc.Validations) != 1 || !strings.Contains(doc.ReplayOf, "plan validate") {
			t.Fatalf("replay document: %v, replay_of %q, %d validations", err, doc.ReplayOf, len(doc.Validations))
		}
		var tps []float64
		for _, p := range doc.Validations[0].Points {
			tps = append(tps, p.PredictedTPS)
		}
		return tps
	}
	same := replay()
	if len(same) != len(predicted) {
		t.Fatalf("replay: %d points, the run %d", len(same), len(predicted))
	}
	for i, p := range predicted {
		if math.Abs(same[i]-p) > 1e-6*p {
			t.Errorf("replay, N = %d: predicted %g, the run %g", i+1, same[i], p)
		}
	}
	slow := replay("--lb-delay", "20ms")
	if slow[0] > same[0] || slow[1] >= same[1] {
		t.Errorf("replay with --lb-delay 20ms: predicted %v, without %v: want N = 2 lower", slow, same)
	}
	if out, err := exec.Command(tandemBin, "plan", "validate", "--replay", filepath.Join(t.TempDir(), "none.json")).CombinedOutput(); err == nil || !strings.Contains(string(out), "--replay") {
		t.Errorf("replay of a missing file: %v, %s", err, out)
	}
}

// plan validate compares one design at a time, and says so before touching
// the machine.
func TestPlanValidateOneDesign(t *testing.T) {
	out, err := exec.Command(tandemBin, "plan", "validate", "--design", "both").CombinedOutput()
	if err == nil {
		t.Fatalf("plan validate --design both succeeded: %s", out)
	}
	if !strings.Contains(string(out), "--design both") || !strings.Contains(string(out), "one design at a time") {
		t.Errorf("plan validate --design both: %s", out)
	}
}

// checkProfileRounds: with interleaved rounds every round has its own
// replicated profile, split by the router's counts, the model's wc is the
// median (for two, the mean) of the rounds', and the sweep measured every
// N in every round; with one round there are no per-round profiles.
func checkProfileRounds(t *testing.T, doc *validateOut, rounds int) {
	t.Helper()
	if rounds == 1 {
		if len(doc.ProfileRounds) != 0 {
			t.Errorf("one round: %d per-round profiles, want none (Profiles hold them)", len(doc.ProfileRounds))
		}
		return
	}
	if len(doc.ProfileRounds) != rounds {
		t.Fatalf("%d profile rounds, want %d", len(doc.ProfileRounds), rounds)
	}
	var sum float64
	for i, r := range doc.ProfileRounds {
		if r.Round != i+1 || len(r.Replicated) != 1 {
			t.Fatalf("profile round %d: %+v", i+1, r)
		}
		sp := r.Replicated[0].Split
		if sp == nil || sp.ReadsPrimary+sp.ReadsReplica <= 0 || sp.ReadsReplica <= 0 || sp.WC <= 0 {
			t.Fatalf("round %d: the replicated mix phase was not split between the nodes by the router's counts: %+v", r.Round, sp)
		}
		for _, res := range r.Replicated[0].Profile.Resources {
			if res.Name == "cpu" {
				if res.WC != sp.WC || res.WS != sp.WS {
					t.Errorf("round %d: --demands mix: cpu wc %g ws %g, want the split's %g %g", r.Round, res.WC, res.WS, sp.WC, sp.WS)
				}
				sum += res.WC
			}
		}
	}
	for _, res := range doc.Replicated[0].Profile.Resources {
		if res.Name == "cpu" && math.Abs(res.WC-sum/float64(rounds)) > 1e-12 {
			t.Errorf("the model's replicated cpu wc %g, want the rounds' median %g", res.WC, sum/float64(rounds))
		}
	}
	seen := map[[2]int]bool{}
	for _, p := range doc.Measured.Points {
		seen[[2]int{p.N, p.Round}] = true
	}
	for n := 1; n <= 2; n++ {
		for r := 1; r <= rounds; r++ {
			if !seen[[2]int{n, r}] {
				t.Errorf("the sweep has no point for N = %d in round %d (points %+v)", n, r, doc.Measured.Points)
			}
		}
	}
}

// checkSpeed: every sweep window and standalone profile phase has the
// machine's memory latency, and the summary counts them all.
func checkSpeed(t *testing.T, doc *validateOut) {
	t.Helper()
	for _, p := range doc.Measured.Points {
		if p.MemLatencyNS <= 0 {
			t.Errorf("sweep point N = %d round %d: no memory latency", p.N, p.Round)
		}
	}
	for _, ph := range doc.Profiles[0].Phases {
		if ph.MemLatencyNS <= 0 {
			t.Errorf("profile phase %s: no memory latency", ph.Name)
		}
	}
	sp := doc.Speed
	if sp == nil || sp.Windows.N != len(doc.Measured.Points) || sp.Profiles.N < len(doc.Profiles[0].Phases) || sp.Profiles.Median <= 0 {
		t.Fatalf("speed summary %+v: want every window (%d) and at least the standalone profile's phases (%d)", sp, len(doc.Measured.Points), len(doc.Profiles[0].Phases))
	}
	if want := sp.Windows.Median / sp.Profiles.Median; math.Abs(sp.Ratio-want) > 0.001 {
		t.Errorf("speed ratio %g, want %g", sp.Ratio, want)
	}
}

// checkBackground: each profile measured an idle phase first
// (--profile-idle, 5 s by default), the replicated path's report has both
// nodes' idle CPU (which may round to nothing on a quiet writeset-engine
// node: a clock tick is 10 ms), and the model's profile carries it as a
// share of the 0.25-core host.
func checkBackground(t *testing.T, doc *validateOut) {
	t.Helper()
	if ph := doc.Profiles[0].Phases; len(ph) == 0 || ph[0].Name != "idle" {
		t.Errorf("the standalone profile's phases %+v do not start with the idle phase", ph)
	}
	repl := doc.Replicated[0]
	if repl.Background == nil || repl.Background.ServerCores < 0 || repl.Background.ReplicaCores < 0 {
		t.Fatalf("replicated profile: background %+v, want both nodes' idle CPU", repl.Background)
	}
	for _, r := range repl.Profile.Resources {
		if r.Name != "cpu" {
			continue
		}
		if r.BG < 0 || r.BGReplica < 0 || r.BG >= 0.95 || r.BGReplica >= 0.95 {
			t.Errorf("replicated profile cpu bg %g, bg_replica %g: want each node's idle share of its 0.25-core host", r.BG, r.BGReplica)
		}
		// With one round the model's profile is the round's, whose bg is
		// the idle cores over the host's quota.
		if len(doc.ProfileRounds) == 0 && (math.Abs(r.BG-repl.Background.ServerCores/0.25) > 1e-4 || math.Abs(r.BGReplica-repl.Background.ReplicaCores/0.25) > 1e-4) {
			t.Errorf("replicated profile cpu bg %g, bg_replica %g, want %g and %g cores of 0.25", r.BG, r.BGReplica, repl.Background.ServerCores, repl.Background.ReplicaCores)
		}
	}
}
