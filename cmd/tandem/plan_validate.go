package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/scaleout"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
	"github.com/tandemdb/tandem/planner"
	"github.com/tandemdb/tandem/planner/profiler"
)

// errNoDesign is a design plan validate cannot run: the planner has a model
// for it but tandem does not implement it yet.
var errNoDesign = errors.New("design not implemented by tandem")

type planValidateFlags struct {
	design, nodes, workload, mixes, lab, dir, htmlFile, outFile string
	so                                                          scaleout.Options
	profileDuration, profileRampup, lbDelay, certifierDelay     time.Duration
	// certifierDelaySet: --certifier-delay was given.
	certifierDelaySet                bool
	profileIdle                      time.Duration
	profileBatchDelay                time.Duration
	tolerance                        float64
	json, standaloneOnly, interleave bool
	demands, replay                  string
	applyCost                        string
	abortModel                       string
	conflictRate                     string
}

// validateDoc is what `tandem plan validate --json` prints.
type validateDoc struct {
	Command  string             `json:"command"`
	Emulated bool               `json:"emulated"`
	Lab      string             `json:"lab"`
	Note     string             `json:"note"`
	Profiles []*profiler.Report `json:"profiles"`
	// Pooled is the conflict rate the model used for every mix when the
	// mixes' profiles were pooled (--conflict-rate pooled); nil: each
	// profile's own.
	Pooled *pooledRate `json:"pooled_conflict_rate,omitempty"`
	// Replicated are the profiles of the replicated path (one per mix):
	// n1 of a two-node cluster of the design profiled through its own
	// front door, ws measured on n2. The model uses them for N >= 2.
	Replicated []*profiler.Report `json:"replicated_profiles,omitempty"`
	// ProfileRounds holds every round's profiles when they interleave
	// with the sweep's rounds (Profiles and Replicated are then their
	// medians), else the one round's.
	ProfileRounds []profileRound       `json:"profile_rounds,omitempty"`
	Validations   []planner.Validation `json:"validations"`
	Measured      *scaleout.Report     `json:"measured"`
	// Speed is the machine's memory latency during the profiles and
	// during the sweep's windows (lab.MemoryProbe).
	Speed  *speedSummary `json:"speed,omitempty"`
	Errors []string      `json:"errors,omitempty"`
	// ReplayOf is the command of the validation this document re-models
	// (--replay): its profiles and measurements, this build's planner.
	ReplayOf string `json:"replay_of,omitempty"`
}

// newPlanValidateCmd builds `tandem plan validate`: profile a standalone
// node in the lab, predict with the planner, measure with the scale-out
// sweep, compare (seed 003 §6, figures 6-9).
func newPlanValidateCmd() *cobra.Command {
	f := &planValidateFlags{}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the planner against measurements: profile one emulated host, predict 1..N, measure 1..N, compare",
		Long: `Validates the capacity planner on this machine's emulated hosts (the lab,
needs root and a cgroup cpu controller), as seed 003 §6 does on real ones:

  1. profile: one standalone node (managed PostgreSQL) in the lab, under the
     same CPU quota as every emulated host, profiled with tandem plan profile's
     profiler through the node's front door; the node's process tree (the node
     and its PostgreSQL) is what is measured, so the demands are those of one
     emulated host;
  2. predict: X(N) and response time for each N with the planner's model of
     --design from that profile (C = --clients-per-node, Z = 0 as the sweep);
  3. measure: tandem bench scaleout's sweep over the same --nodes;
  4. compare: predicted and measured side by side per N, relative error
     (predicted - measured) / measured, and which model inputs were measured
     and which assumed.

With --rounds > 1, steps 1 and 3 interleave (--interleave): each round
profiles fresh clusters and then measures every N once, and the model takes
each demand's median over the rounds' profiles.

Results are emulated hosts on one machine, not separate machines. The
profiler measures a managed PostgreSQL (it captures writesets with
PostgreSQL triggers), so both designs are validated on PostgreSQL back ends.
See docs/planner.md, "Validating the model".`,
		Example: `  tandem plan validate --design sm --nodes 1..3 --workload tm1 --mix read-only,r80w20 --lab cpu=0.25,router=0.5,client=1
  tandem plan validate --nodes 1..2 --mix r80w20 --duration 5s --json > validate.json --html validate.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			return runPlanValidate(cmd, f)
		},
	}
	addPlanValidateFlags(cmd.Flags(), f)
	return cmd
}

// addPlanValidateFlags defines the command's flags on fs (also used to read
// back a saved validation's command line: --replay).
func addPlanValidateFlags(fs *pflag.FlagSet, f *planValidateFlags) {
	fs.StringVar(&f.design, "design", "sm", "design: sm (single-master) or mm (multi-master)")
	fs.StringVar(&f.so.Engine, "engine", "writeset", "sm: the replication engine of the replicated profile and the sweep: writeset (tandem's log) or physical (PostgreSQL's streaming replication); mm runs writeset")
	fs.DurationVar(&f.certifierDelay, "certifier-delay", 0, "mm: the certifier's delay per update attempt in the model at every N; unset: none at N = 1 (the sweep's standalone node has no certifier) and at N >= 2 the replicated profile's measured mean certification round trip (tandem_mm_certifier_round_trip_seconds), seed 003's 12ms where not measured")
	fs.StringVar(&f.nodes, "nodes", "1..3", "the Ns: N, N..M or a list (1,2,4)")
	fs.StringVar(&f.workload, "workload", "tm1", benchWorkloadHelp())
	fs.StringVar(&f.mixes, "mix", "r80w20", "mixes, comma-separated (tm1: read-only, r80w20, r20w80); each has its own profile")
	fs.StringVar(&f.lab, "lab", "cpu=0.25", "the emulated hosts: cpu=CORES per node, router=CORES, client=CORES (see tandem bench scaleout)")
	fs.IntVar(&f.so.Rounds, "rounds", 1, "rounds of the sweep (medians over them)")
	fs.BoolVar(&f.interleave, "interleave", true, "with --rounds > 1, profile again before each round of the sweep (fresh clusters) and take each demand's median over the rounds' profiles; false profiles once, before every round")
	fs.StringVar(&f.so.Alone, "alone", scaleout.AloneRouted, "sm on the physical engine: how N = 1 (profile and sweep) is reached: router (the primary alone behind the router on its own host, over the TLS hop every N >= 2 uses) or socket (the server's Unix socket, as a client on its host)")
	fs.StringVar(&f.so.ReadConsistency, "read-consistency", "", "the router's read_consistency in the replicated profile and the sweep (default: eventual for sm, session for mm): eventual runs a read on its replica's latest snapshot without waiting for the session's last write, as seed 003's single-master does (GSI), which the model describes; session (tandem's default for applications) makes a read after a write wait until its node has the write, round trips the model does not have; mm needs session: every node takes writes, and a session's next transaction must find its last one where it runs, as seed 003's clients bound to one replica did")
	fs.DurationVar(&f.so.Duration, "duration", 15*time.Second, "measured window of each sweep run")
	fs.DurationVar(&f.so.Rampup, "rampup", 3*time.Second, "ramp-up before each sweep run")
	fs.DurationVar(&f.profileDuration, "profile-duration", 10*time.Second, "measured time of each profiling phase")
	fs.StringVar(&f.applyCost, "apply-cost", string(planner.ApplyPerBatch), "mm: how the model charges a replica's apply at B writesets per batch: per-batch (ws x the profile's batch size / B) or split (ws_1 + ws_batch / B, from --profile-batch-delay's two profiles); docs/planner.md \"Multi-master apply batches\"")
	fs.StringVar(&f.conflictRate, "conflict-rate", conflictPooled, "mm, --abort-model rate: pooled (every mix's profiles count toward one c when the mixes run the same update transactions at the same relative weights, as TM1's do) or per-mix (each mix's profile its own)")
	fs.StringVar(&f.abortModel, "abort-model", string(planner.AbortModelRate), "mm: how the abort rate grows with N: rate (A = 1 - exp(-c x the writesets the cluster commits per second x the conflict window), c measured by the profiles) or seed003 ((1 - A_N) = (1 - a1)^(N x CW / L1)); docs/planner.md \"Abort growth\"")
	fs.DurationVar(&f.profileBatchDelay, "profile-batch-delay", 40*time.Millisecond, "multi-master: after the replicated profile, profile n2's apply again on the same two nodes with multi_master.apply_batch_delay set to this at run time (larger batches), so that ws splits into a part per batch and one per writeset and the model charges it at the batch size each N leads to; 0: one profile, ws as measured at every N")
	fs.DurationVar(&f.profileIdle, "profile-idle", 5*time.Second, "each profile's idle phase first (no transaction): the nodes' own CPU per second, left out of the demands and given to the model as a background share of each host (bg); 0: none, the background counts in the demands")
	fs.DurationVar(&f.profileRampup, "profile-rampup", 2*time.Second, "ramp-up before each profiling phase")
	fs.IntVar(&f.so.ClientsPerNode, "clients-per-node", 8, "closed-loop clients per node: the sweep runs N x this, the profile and the model use it as C")
	fs.IntVar(&f.so.Scale, "subscribers", 10000, "the workload's scale (TM1 subscribers)")
	fs.DurationVar(&f.lbDelay, "lb-delay", 0, "assumed router + network delay per transaction at N > 1 (the model's load-balancer delay centre; not measured)")
	fs.StringVar(&f.demands, "demands", "mix", "where the update demands come from: phases (seed 003: a phase of updates only) or mix (the default: the mix phase: the standalone node's busy time less its reads at rc, per update attempt; single-master's replicated path split between its nodes by the reads the router sent each: wc from the primary's share, ws from the replica's; multi-master's: wc from n1 less its reads, ws from n2's apply of n1's writesets)")
	fs.Float64Var(&f.tolerance, "tolerance", planner.DefaultTolerance, "relative error counted as within (0.15 = seed 003's 15 %)")
	fs.BoolVar(&f.standaloneOnly, "standalone-profile-only", false, "predict every N from the standalone node's profile alone (seed 003's method as published; tandem's replicated path costs more per transaction, see docs/planner.md)")
	fs.BoolVar(&f.json, "json", false, "print everything (profiles, predictions, measurements, comparison, inputs) as JSON")
	fs.StringVar(&f.outFile, "out", "", "also write the --json document to this file")
	fs.StringVar(&f.htmlFile, "html", "", "also write an HTML page overlaying predicted and measured curves (seed 003 figures 6-9)")
	fs.StringVar(&f.dir, "dir", "", "keep the clusters' files and logs here (default: a temporary directory, removed)")
	fs.Float64Var(&f.so.MaxSteal, "max-steal", scaleout.DefaultMaxSteal, "measure a sweep window or a profile again (twice at most) when the hypervisor took more than this many cores from the machine during it (steal); 0 keeps everything")
	fs.BoolVar(&f.so.NoQuiesce, "no-quiesce", false, "do not VACUUM the workload's tables and CHECKPOINT every node before each of the sweep's measured windows (the profiler still does before its phases)")
	fs.StringVar(&f.replay, "replay", "", "re-model a validation saved with --out: its profiles and measurements, this build's planner (nothing is run, no lab or root needed); the saved command's flags apply, --lb-delay, --certifier-delay, --tolerance and --apply-cost given here override theirs")
}

func runPlanValidate(cmd *cobra.Command, f *planValidateFlags) error {
	f.certifierDelaySet = cmd.Flags().Changed("certifier-delay")
	if f.replay != "" {
		return replayPlanValidate(cmd, f)
	}
	design, o, err := planValidateSetup(f)
	if err != nil {
		return err
	}
	if err := lab.Check(o.Lab); err != nil {
		return fmt.Errorf("--lab: %w", err)
	}
	dir := f.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tandem-validate-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else {
		o.KeepDir = true
	}
	if o.Dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	prev := runtime.GOMAXPROCS(benchProcs(0, o.ClientsPerNode*o.Nodes[len(o.Nodes)-1], runtime.NumCPU()))
	defer runtime.GOMAXPROCS(prev)
	progress := cmd.ErrOrStderr()
	o.Progress = progress
	o.Logger = logger(cmd)
	if !cmd.Flags().Changed("log-level") {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	doc := validateDoc{Command: "tandem " + strings.Join(os.Args[1:], " "), Emulated: true, Lab: o.Lab.String(),
		Note: "EMULATED hosts: each node (and its PostgreSQL) in its own cgroup CPU quota on one machine; disk and memory are shared"}
	// The machine's memory latency, all along: every profile phase and
	// sweep window records it (lab/speed.go).
	probe := lab.StartMemoryProbe()
	defer probe.Stop()
	o.Speed = probe
	replicated := !f.standaloneOnly && o.Nodes[len(o.Nodes)-1] > 1
	// Profiles and the sweep's rounds interleave (--interleave): round r
	// profiles fresh clusters and then measures every N once, and the
	// model takes each demand's median over the rounds' profiles, so that
	// the machine's drift and the spread between fresh clusters fall on
	// the profiles and the measurements alike.
	profRounds := 1
	if f.interleave && o.Rounds > 1 {
		profRounds = o.Rounds
	}
	var sweep []*scaleout.Report
	var runErr error
	for r := 1; r <= profRounds; r++ {
		ro := o
		if profRounds > 1 {
			ro.Dir = filepath.Join(o.Dir, fmt.Sprintf("round-%d", r))
			fmt.Fprintf(progress, "round %d of %d: profiles, then N = %s\n", r, profRounds, f.nodes)
		}
		// 1. Profile one emulated host: the standalone node under the quota.
		st, err := profileStandalone(ctx, ro, f)
		if err != nil {
			return err
		}
		// 1b. Profile the replicated path: two emulated hosts of the design.
		var rp []*profiler.Report
		if replicated {
			fmt.Fprintf(progress, "profiling the replicated path: n1 of two emulated hosts (%s, %s engine), n2 applying its changes\n", o.Design, engineName(o.Engine))
			if rp, err = profileReplicated(ctx, ro, f); err != nil {
				return err
			}
		}
		// --demands mix: wc from the standalone profile's mix phase (N =
		// 1), and the replicated path's wc and ws from its mix phase
		// split between the two nodes by the reads the router sent each
		// (single-master; the mix phase's busy time as a whole holds the
		// replica's apply, which the model charges as ws: taken whole it
		// predicted N >= 2 at half what was measured); multi-master's from
		// n1's mix phase less its reads (wc) and n2's apply of n1's
		// writesets in it (ws). Without a split the replicated path keeps
		// its update phase's demands.
		if f.demands == "mix" {
			for _, rep := range st {
				rep.Profile, _ = rep.MixDemands()
			}
			for i, rep := range rp {
				var ok bool
				if rep.Profile, ok = rep.ReplicatedMixDemands(); !ok && (o.Design == "single-master" || o.Design == "multi-master") && rep.Profile.Pw > 0 && r == 1 {
					doc.Errors = append(doc.Errors, fmt.Sprintf("mix %s: the replicated path's mix phase was not split between its nodes; its wc and ws come from the update phase", o.Mixes[i]))
				}
				if ok && rep.Split.MultiMaster {
					// ws and its batch size are now the mix's: split the
					// part per batch from them, as --replay does.
					splitApplyBatches(rep)
				}
			}
		}
		doc.ProfileRounds = append(doc.ProfileRounds, profileRound{Round: r, Standalone: st, Replicated: rp})
		if profRounds > 1 {
			// 3. Measure (this round's).
			ro.Rounds = 1
			fmt.Fprintf(progress, "measuring N = %s (round %d)\n", f.nodes, r)
			rep, err := scaleout.Run(ctx, ro)
			if rep != nil {
				for i := range rep.Points {
					rep.Points[i].Round = r
				}
				sweep = append(sweep, rep)
			}
			if err != nil {
				runErr = fmt.Errorf("round %d: %w", r, err)
				break
			}
		}
	}
	if doc.Profiles, doc.Replicated, err = combineProfiles(doc.ProfileRounds); err != nil {
		return err
	}
	if len(doc.ProfileRounds) == 1 {
		doc.ProfileRounds = nil // the same reports as Profiles and Replicated
	}

	poolConflictRates(&doc, design, o, f.conflictRate)

	// 2. Predict: N = 1 from the standalone node's profile, N >= 2 from the
	// replicated path's when there is one.
	preds, err := predictAll(doc, design, o, f)
	if err != nil {
		return err
	}

	// 3. Measure (all rounds at once unless interleaved).
	if profRounds == 1 {
		fmt.Fprintf(progress, "measuring N = %s\n", f.nodes)
		so, err := scaleout.Run(ctx, o)
		if so != nil {
			sweep = append(sweep, so)
		}
		runErr = err
	}
	so := mergeSweeps(sweep)
	doc.Measured = so
	if runErr != nil {
		doc.Errors = append(doc.Errors, runErr.Error())
	}
	if so == nil {
		return fmt.Errorf("measure: %w", runErr)
	}

	doc.Speed = summariseSpeed(doc.ProfileRounds, doc.Profiles, doc.Replicated, so)
	if err := compareAndWrite(cmd, &doc, preds, o, f); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("measure: %w", runErr)
	}
	return nil
}

// replayPlanValidate re-models a validation saved with --out: the
// profiles and the sweep it measured, predicted again by this build's
// planner with the saved command's flags (the model's assumptions given on
// this command line override theirs). Nothing is started.
func replayPlanValidate(cmd *cobra.Command, f *planValidateFlags) error {
	b, err := os.ReadFile(f.replay)
	if err != nil {
		return fmt.Errorf("--replay: %w", err)
	}
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b { // gzip, as docs/data keeps them
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("--replay %s: %w", f.replay, err)
		}
		if b, err = io.ReadAll(io.LimitReader(zr, 1<<30)); err != nil {
			return fmt.Errorf("--replay %s: %w: a gzip file that does not decompress: %v", f.replay, errPlanFlag, err)
		}
	}
	var doc validateDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("--replay %s: %w: not a document of tandem plan validate --out: %v", f.replay, errPlanFlag, err)
	}
	args := strings.Fields(doc.Command)
	if doc.Measured == nil || len(doc.Profiles) == 0 || len(args) < 3 || args[1] != "plan" || args[2] != "validate" {
		return fmt.Errorf("--replay %s: %w: not a document of tandem plan validate --out (no command, profiles or measurements)", f.replay, errPlanFlag)
	}
	if doc.ReplayOf != "" {
		args = strings.Fields(doc.ReplayOf) // a replay of a replay: the run's own flags
	}
	saved := &planValidateFlags{}
	sfs := pflag.NewFlagSet("saved", pflag.ContinueOnError)
	sfs.ParseErrorsWhitelist.UnknownFlags = true // flags of other builds
	sfs.SetOutput(io.Discard)
	addPlanValidateFlags(sfs, saved)
	if err := sfs.Parse(args[3:]); err != nil {
		return fmt.Errorf("--replay %s: the saved command %q: %w", f.replay, strings.Join(args, " "), err)
	}
	if !sfs.Changed("demands") {
		// The run's default, which was phases before 2026-12-06: its
		// "wc from" input says which it used.
		saved.demands = savedDemands(doc.Validations, saved.demands)
	}
	for _, name := range []string{"lb-delay", "certifier-delay", "tolerance", "apply-cost", "abort-model", "conflict-rate"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			if err := sfs.Set(name, fl.Value.String()); err != nil {
				return err
			}
		}
	}
	saved.json, saved.outFile, saved.htmlFile, saved.replay = f.json, f.outFile, f.htmlFile, ""
	saved.certifierDelaySet = sfs.Changed("certifier-delay")
	design, o, err := planValidateSetup(saved)
	if err != nil {
		return fmt.Errorf("--replay %s: the saved command: %w", f.replay, err)
	}
	doc.ReplayOf = strings.Join(args, " ")
	doc.Command = "tandem " + strings.Join(os.Args[1:], " ")
	doc.Validations = nil
	if saved.demands == "mix" {
		// Derived from each report's own phases, as the run did: a newer
		// build may derive more.
		rounds := doc.ProfileRounds
		if len(rounds) == 0 {
			rounds = []profileRound{{Standalone: doc.Profiles, Replicated: doc.Replicated}}
		}
		for _, round := range rounds {
			for _, rep := range round.Standalone {
				rep.Profile, _ = rep.MixDemands()
			}
			for _, rep := range round.Replicated {
				rep.Profile, _ = rep.ReplicatedMixDemands()
			}
		}
	}
	for _, round := range doc.ProfileRounds {
		for _, rep := range round.Replicated {
			splitApplyBatches(rep) // a newer build may split differently
		}
	}
	// A build before writesets_per_update measured none: derive it.
	for _, reps := range [][]*profiler.Report{doc.Profiles, doc.Replicated} {
		for _, rep := range reps {
			rep.FillWritesetsPerUpdate()
			rep.FillConflictRate()
			rep.FillCapacity()
		}
	}
	for _, round := range doc.ProfileRounds {
		for _, reps := range [][]*profiler.Report{round.Standalone, round.Replicated} {
			for _, rep := range reps {
				rep.FillWritesetsPerUpdate()
				rep.FillConflictRate()
				rep.FillCapacity()
			}
		}
	}
	for _, rep := range doc.Replicated {
		if len(doc.ProfileRounds) == 0 {
			splitApplyBatches(rep)
		}
	}
	if len(doc.ProfileRounds) > 0 {
		if doc.Profiles, doc.Replicated, err = combineProfiles(doc.ProfileRounds); err != nil {
			return err
		}
	}
	if len(doc.Profiles) != len(o.Mixes) || (doc.Replicated != nil && len(doc.Replicated) != len(o.Mixes)) {
		return fmt.Errorf("--replay %s: %d profiles for %d mixes (%s)", f.replay, len(doc.Profiles), len(o.Mixes), saved.mixes)
	}
	poolConflictRates(&doc, design, o, saved.conflictRate)
	preds, err := predictAll(doc, design, o, saved)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "re-modelled (nothing run): %s\n", doc.ReplayOf)
	return compareAndWrite(cmd, &doc, preds, o, saved)
}

// capacityInput says what share of its CPU quota the model gives a node:
// the standalone profile's (N = 1) and the replicated path's (N >= 2).
func capacityInput(p planner.Profile, repl *profiler.Report) planner.Input {
	measured := false
	capOf := func(rs []planner.Resource) string {
		for _, r := range rs {
			if r.Name == profiler.ResCPU && r.Capacity > 0 {
				measured = true
				return fmt.Sprintf("%.3f", r.Capacity)
			}
		}
		return "1 (not saturated)"
	}
	v := []string{"standalone " + capOf(p.Resources)}
	if repl != nil {
		v = append(v, "replicated "+capOf(repl.Profile.Resources))
	}
	if !measured {
		return planner.Input{Name: "host capacity", Value: "the whole of its CPU", Measured: false,
			Source: "no profile's mix phase saturated a host with a CPU quota: the model gives each node all of its CPU (less its background)"}
	}
	return planner.Input{Name: "host capacity", Value: strings.Join(v, "; ") + " of a host's quota", Measured: true,
		Source: "each profile's mix phase: the share of its CPU quota the profiled node's host delivered while the quota held it back in at least 90 % of the scheduler periods (a standalone tandem node and its PostgreSQL ran 0.87-0.92 of a 0.25-core quota on this machine, throttled in 92-99 % of the periods); the model gives each node capacity - bg of its CPU (planner/DESIGN.md \"What an emulated host delivers\")"}
}

// abortInput says how the multi-master model grows the abort rate with N
// and from what.
func abortInput(p planner.Profile, repl *profiler.Report, pooled *pooledRate, model string) planner.Input {
	if model == string(planner.AbortModelSeed003) {
		return planner.Input{Name: "abort growth", Value: "seed 003", Measured: false,
			Source: "--abort-model seed003: (1 - A_N) = (1 - a1)^(N x CW(N) / l1): each of N nodes commits the profiled node's updates (docs/planner.md \"Abort growth\")"}
	}
	rate := func(label string, own, pooled float64) string {
		if pooled > 0 {
			return fmt.Sprintf("%s %.5f (this mix's profile alone %.5f)", label, pooled, own)
		}
		return fmt.Sprintf("%s %.5f", label, own)
	}
	var ps, pr float64 // pooled rates, 0: none
	if pooled != nil {
		ps, pr = pooled.Standalone, pooled.Replicated
	}
	c := []string{rate("N = 1", p.ConflictRate, ps)}
	if repl != nil {
		c = append(c, rate("N >= 2", repl.Profile.ConflictRate, pr))
	}
	src := "--abort-model rate: A_N = 1 - exp(-c x lambda(N) x CW(N)), lambda the writesets the model's cluster commits per second; c per writeset-second of exposure from the profile's mix and update phases pooled (their aborts over their commits per second x mean update response time); 0: not measured, seed 003's growth (docs/planner.md \"Abort growth\")"
	if pooled != nil {
		src += fmt.Sprintf("; --conflict-rate pooled: the %d profiles of mixes %s count together (the same update transactions at the same relative weights: c is the workload's; docs/planner.md \"One conflict rate for the workload\")", pooled.Profiles, strings.Join(pooled.Mixes, ", "))
	}
	return planner.Input{Name: "abort growth", Value: "rate, c = " + strings.Join(c, ", "), Measured: true, Source: src}
}

// Conflict-rate modes (--conflict-rate).
const (
	conflictPooled = "pooled"
	conflictPerMix = "per-mix"
)

// poolConflictRates sets doc.Pooled, the conflict rate c the model gives
// every mix (predictAll, conflictRateOf): that of all the mixes' profiles
// together, the standalone ones (N = 1) and the
// replicated path's (N >= 2) apart, every round's, when the mixes run the
// same update transactions at the same relative weights (so they expose
// the same keys: c is the workload's, not the mix's). One mix's profile
// counts few aborts where it runs few updates (TM1's R80W20: about 150
// in its phases), and its c came out 10-20 % either side of the value
// the sweep measured, the same at every N and in both mixes
// (docs/planner.md "One conflict rate for the workload"). Other mixes,
// and --conflict-rate per-mix, keep each profile's own.
func poolConflictRates(doc *validateDoc, design planner.Design, o scaleout.Options, mode string) {
	doc.Pooled = nil
	if design != planner.MultiMaster || mode != conflictPooled || len(o.Mixes) < 2 || !sameUpdates(o.Workload, o.Mixes) {
		return
	}
	rounds := doc.ProfileRounds
	if len(rounds) == 0 {
		rounds = []profileRound{{Standalone: doc.Profiles, Replicated: doc.Replicated}}
	}
	var standalone, replicated []*profiler.Report
	for _, r := range rounds {
		standalone = append(standalone, r.Standalone...)
		replicated = append(replicated, r.Replicated...)
	}
	p := &pooledRate{Mixes: o.Mixes, Profiles: len(standalone) + len(replicated),
		Standalone: profiler.PooledConflictRate(standalone...), Replicated: profiler.PooledConflictRate(replicated...)}
	if p.Standalone > 0 || p.Replicated > 0 {
		doc.Pooled = p
	}
}

// pooledRate is the conflict rate c of every mix's profiles together
// (poolConflictRates): the standalone ones' (N = 1) and the replicated
// path's (N >= 2); 0: none measured an abort.
type pooledRate struct {
	Mixes      []string `json:"mixes"`
	Profiles   int      `json:"profiles"`
	Standalone float64  `json:"standalone,omitempty"`
	Replicated float64  `json:"replicated,omitempty"`
}

// conflictRateOf is the c the model uses for profile p: the pooled one
// when there is one (replicated: the replicated path's), else p's own.
func (d *validateDoc) conflictRateOf(p planner.Profile, replicated bool) float64 {
	if d.Pooled != nil {
		if c := d.Pooled.Standalone; !replicated && c > 0 {
			return c
		}
		if c := d.Pooled.Replicated; replicated && c > 0 {
			return c
		}
	}
	return p.ConflictRate
}

// sameUpdates reports whether the mixes weigh the workload's update
// transactions alike, up to a factor (TM1's R80W20 2:14:2:2 and R20W80
// 8:56:8:8), and run some.
func sameUpdates(w bench.Workload, mixes []string) bool {
	if w == nil {
		return false
	}
	txs := w.Transactions()
	byName := map[string][]float64{}
	for _, m := range w.Mixes() {
		byName[m.Name] = m.Weights
	}
	var ref []float64
	for _, name := range mixes {
		ws, ok := byName[name]
		if !ok || len(ws) != len(txs) {
			return false
		}
		var upd []float64
		sum := 0.0
		for i, t := range txs {
			if !t.ReadOnly {
				upd = append(upd, ws[i])
				sum += ws[i]
			}
		}
		if sum <= 0 {
			return false
		}
		for i := range upd {
			upd[i] /= sum
		}
		if ref == nil {
			ref = upd
			continue
		}
		for i := range upd {
			if math.Abs(upd[i]-ref[i]) > 1e-9 {
				return false
			}
		}
	}
	return true
}

// predictAll predicts every mix: N = 1 from the standalone node's
// profile, N >= 2 from the replicated path's when there is one.
func predictAll(doc validateDoc, design planner.Design, o scaleout.Options, f *planValidateFlags) ([]planner.Prediction, error) {
	var err error
	preds := make([]planner.Prediction, len(o.Mixes))
	for i, rep := range doc.Profiles {
		par := planner.Params{ClientsPerReplica: o.ClientsPerNode, ThinkTime: 0, LBDelay: f.lbDelay.Seconds(),
			CertifierDelay: 0, CWMode: planner.CWFixedPoint, ApplyCost: planner.ApplyCost(f.applyCost), AbortModel: planner.AbortModel(f.abortModel)}
		if design == planner.MultiMaster && f.certifierDelaySet {
			par.CertifierDelay = f.certifierDelay.Seconds()
		}
		// Without --certifier-delay the sweep's N = 1, a standalone node,
		// has no certifier (0), and N >= 2 the replicated profile's
		// measured round trip (certifierDelayFor).
		prof := rep.Profile
		prof.ConflictRate = doc.conflictRateOf(prof, false)
		if preds[i], err = planner.Predict(prof, design, o.Nodes, par); err != nil {
			return nil, fmt.Errorf("predict %s: %w", o.Mixes[i], err)
		}
		if doc.Replicated != nil {
			rpar := par
			if design == planner.MultiMaster && !f.certifierDelaySet {
				rpar.CertifierDelay = certifierDelayFor(doc.Replicated[i].Profile)
			}
			rprof := doc.Replicated[i].Profile
			rprof.ConflictRate = doc.conflictRateOf(rprof, true)
			rp, err := planner.Predict(rprof, design, o.Nodes, rpar)
			if err != nil {
				return nil, fmt.Errorf("predict %s (replicated path): %w", o.Mixes[i], err)
			}
			preds[i] = mergePredictions(preds[i], rp)
		}
	}
	return preds, nil
}

// compareAndWrite lines the predictions up with the sweep's medians
// (step 4) and prints or writes the document.
func compareAndWrite(cmd *cobra.Command, doc *validateDoc, preds []planner.Prediction, o scaleout.Options, f *planValidateFlags) error {
	so := doc.Measured
	// 4. Compare.
	for i, m := range o.Mixes {
		var obs []planner.Observation
		for _, r := range so.Rows {
			if r.Mix == m && r.X > 0 {
				obs = append(obs, planner.Observation{Replicas: r.N, ThroughputTPS: completedX(r.X, r.XDone), ResponseTimeS: measuredResponse(r) / 1000})
			}
		}
		if len(obs) == 0 {
			doc.Errors = append(doc.Errors, fmt.Sprintf("mix %s: nothing measured", m))
			continue
		}
		v, err := planner.Validate(preds[i], obs, f.tolerance)
		if err != nil {
			return fmt.Errorf("compare %s: %w", m, err)
		}
		var repl *profiler.Report
		if doc.Replicated != nil {
			repl = doc.Replicated[i]
		}
		v.Inputs = append([]planner.Input{unitInput(so, m)}, validationInputs(doc.Profiles[i], repl, max(1, len(doc.ProfileRounds)), doc.Pooled, o, f)...)
		for j := range v.Points {
			p := &v.Points[j]
			prof := doc.Profiles[i]
			if repl != nil && p.Replicas > 1 {
				prof = repl
			}
			if pt, ok := preds[i].At(p.Replicas); ok {
				p.PredictedAbortRate = pt.AbortRate
				p.PredictedApplyBatch = pt.ApplyBatch
				if p.Replicas > 1 && prof.Profile.Pw > 0 {
					p.PredictedWindowS = pt.ConflictWindowS
					// The delay predictAll gave the model at this N.
					p.PredictedCertifyS = preds[i].Params.CertifierDelay
					if f.certifierDelaySet {
						p.PredictedCertifyS = f.certifierDelay.Seconds()
					} else if repl != nil {
						p.PredictedCertifyS = certifierDelayFor(repl.Profile)
					}
				}
				if d, ok := prof.Profile.SystemDemand("cpu", p.Replicas, pt.AbortRate, pt.ApplyBatch, planner.ApplyCost(f.applyCost)); ok {
					p.ModelCPUPerTxS = d * prof.CPUs
					// The nodes' background, which the model keeps out of
					// the demands, per transaction at the predicted rate.
					for _, r := range prof.Profile.Resources {
						if r.Name == profiler.ResCPU && pt.ThroughputTPS > 0 {
							p.ModelCPUPerTxS += (r.BG + float64(p.Replicas-1)*r.BGReplica) * prof.CPUs / pt.ThroughputTPS
						}
					}
				}
			}
			p.MeasuredCPUPerTxS = nodeCPUPerTx(so, m, p.Replicas)
			for _, r := range so.Rows {
				if r.Mix == m && r.N == p.Replicas && r.UpdateAttempts > 0 {
					a := r.AbortRate
					p.MeasuredAbortRate = &a
				}
			}
			p.MeasuredApplyBatch = medianPoint(so, m, p.Replicas, func(sp scaleout.Point) float64 { return sp.ApplyBatch })
			p.MeasuredApplyOwnShare = medianPoint(so, m, p.Replicas, func(sp scaleout.Point) float64 { return sp.ApplyOwnShare })
			p.MeasuredFastApplyShare = medianPoint(so, m, p.Replicas, func(sp scaleout.Point) float64 { return sp.FastApplyShare })
			p.MeasuredUpdateS = medianPoint(so, m, p.Replicas, func(sp scaleout.Point) float64 { return sp.UpdateMeanMs }) / 1000
			p.MeasuredReadS = medianPoint(so, m, p.Replicas, func(sp scaleout.Point) float64 { return sp.ReadMeanMs }) / 1000
			p.MeasuredCertifyS = medianPoint(so, m, p.Replicas, func(sp scaleout.Point) float64 { return sp.CertifyMs }) / 1000
		}
		doc.Validations = append(doc.Validations, v)
	}
	out := cmd.OutOrStdout()
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else if err := writeValidation(out, *doc); err != nil {
		return err
	}
	if f.outFile != "" {
		if err := writeFile(f.outFile, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(doc)
		}); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if f.htmlFile != "" {
		title := fmt.Sprintf("tandem plan validate: %s, %s, N = %s, lab %s", o.Design, o.Workload.Name(), f.nodes, o.Lab.String())
		if err := writeFile(f.htmlFile, func(w io.Writer) error {
			return planner.WriteValidationHTML(w, title, doc.Note+".", doc.Validations)
		}); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	return nil
}

// planValidateSetup checks the flags and turns them into the design and
// the sweep's options (nothing is started).
func planValidateSetup(f *planValidateFlags) (planner.Design, scaleout.Options, error) {
	var design planner.Design
	o := f.so
	designs, err := planner.ParseDesigns(f.design)
	if err != nil {
		return design, o, fmt.Errorf("--design: %w", err)
	}
	if len(designs) != 1 {
		return design, o, fmt.Errorf("--design %s: %w: validate one design at a time (sm or mm)", f.design, errPlanFlag)
	}
	design = designs[0]
	o.Design, o.Backend = "single-master", "postgres" // the profiler measures PostgreSQL
	o.Superuser = true                                // the profiler's CHECKPOINT between phases
	if design == planner.MultiMaster {
		if o.Engine == config.EnginePhysical {
			return design, o, fmt.Errorf("--engine physical: %w: multi-master certifies and applies writesets on every node (use --engine writeset)", errPlanFlag)
		}
		o.Design = "multi-master"
		c := config.Cluster{Name: "v", Design: "multi-master", Nodes: []config.Node{{ID: "n1", Backend: "postgres"}, {ID: "n2", Backend: "postgres"}}}
		if _, err := c.CheckMultiMasterBackends(); err != nil {
			return design, o, fmt.Errorf("--design mm: %w: %v", errNoDesign, err)
		}
	}
	if o.MaxSteal < 0 {
		return design, o, fmt.Errorf("--max-steal %g: %w: give cores >= 0 (0 keeps everything)", o.MaxSteal, errPlanFlag)
	}
	if f.certifierDelay < 0 {
		return design, o, fmt.Errorf("--certifier-delay: %w: must be >= 0", errPlanFlag)
	}
	if o.ReadConsistency == "" {
		o.ReadConsistency = "eventual"
		if design == planner.MultiMaster {
			o.ReadConsistency = "session"
		}
		f.so.ReadConsistency = o.ReadConsistency
	}
	if !slices.Contains(config.ReadConsistencies, o.ReadConsistency) {
		return design, o, fmt.Errorf("--read-consistency %q: %w: use %s", o.ReadConsistency, errPlanFlag, strings.Join(config.ReadConsistencies, ", "))
	}
	if f.demands != "phases" && f.demands != "mix" {
		return design, o, fmt.Errorf("--demands %q: %w: use phases or mix", f.demands, errPlanFlag)
	}
	if o.Nodes, err = scaleout.ParseNodes(f.nodes); err != nil {
		return design, o, err
	}
	if o.Workload, err = bench.Lookup(f.workload); err != nil {
		return design, o, fmt.Errorf("--workload: %w", err)
	}
	for _, m := range strings.Split(f.mixes, ",") {
		if m = strings.TrimSpace(m); m != "" {
			o.Mixes = append(o.Mixes, m)
		}
	}
	if len(o.Mixes) == 0 {
		return design, o, fmt.Errorf("--mix: %w: give at least one mix", errPlanFlag)
	}
	for _, m := range o.Mixes {
		if _, err := bench.ResolveMix(o.Workload, m, ""); err != nil {
			return design, o, fmt.Errorf("--mix %s: %w", m, err)
		}
	}
	switch {
	case f.profileDuration <= 0:
		return design, o, fmt.Errorf("--profile-duration: %w: must be > 0, got %s", errPlanFlag, f.profileDuration)
	case f.applyCost != string(planner.ApplyPerBatch) && f.applyCost != string(planner.ApplySplit):
		return design, o, fmt.Errorf("--apply-cost: %w: %q (want %s or %s)", errPlanFlag, f.applyCost, planner.ApplyPerBatch, planner.ApplySplit)
	case f.conflictRate != conflictPooled && f.conflictRate != conflictPerMix:
		return design, o, fmt.Errorf("--conflict-rate: %w: %q (want %s or %s)", errPlanFlag, f.conflictRate, conflictPooled, conflictPerMix)
	case f.abortModel != string(planner.AbortModelRate) && f.abortModel != string(planner.AbortModelSeed003):
		return design, o, fmt.Errorf("--abort-model: %w: %q (want %s or %s)", errPlanFlag, f.abortModel, planner.AbortModelRate, planner.AbortModelSeed003)
	case f.profileBatchDelay < 0 || f.profileBatchDelay > time.Second:
		return design, o, fmt.Errorf("--profile-batch-delay: %w: must be between 0 (no second profile) and 1s, got %s", errPlanFlag, f.profileBatchDelay)
	case f.profileIdle < 0:
		return design, o, fmt.Errorf("--profile-idle: %w: must be >= 0 (0: no idle phase), got %s", errPlanFlag, f.profileIdle)
	case f.profileRampup < 0:
		return design, o, fmt.Errorf("--profile-rampup: %w: must be >= 0, got %s", errPlanFlag, f.profileRampup)
	case f.lbDelay < 0:
		return design, o, fmt.Errorf("--lb-delay: %w: must be >= 0, got %s", errPlanFlag, f.lbDelay)
	case !(f.tolerance > 0 && f.tolerance < 10):
		return design, o, fmt.Errorf("--tolerance: %w: want a fraction > 0 (0.15 = 15 %%), got %g", errPlanFlag, f.tolerance)
	}
	if o.Lab, err = config.ParseLabFlag(f.lab, config.Lab{}); err != nil {
		return design, o, fmt.Errorf("--lab: %w", err)
	}
	if o.Lab.CPUPerNode == 0 {
		return design, o, fmt.Errorf("--lab: %w: give the nodes a CPU quota (cpu=0.25): without one every node shares this machine's cores and the profile is not one host's", errPlanFlag)
	}
	// Checked here rather than after the profiling minutes.
	if err := planner.ValidateReplicas(o.Nodes, o.ClientsPerNode); err != nil {
		return design, o, fmt.Errorf("--nodes/--clients-per-node: %w", err)
	}
	return design, o, nil
}

// profileRound is one round's profiles (per mix): the standalone node's
// and the replicated path's.
type profileRound struct {
	Round      int                `json:"round"`
	Standalone []*profiler.Report `json:"profiles"`
	Replicated []*profiler.Report `json:"replicated_profiles,omitempty"`
}

// profileStandalone profiles, for each mix, a standalone node in a fresh
// emulated host under the lab's node quota.
func profileStandalone(ctx context.Context, o scaleout.Options, f *planValidateFlags) ([]*profiler.Report, error) {
	fmt.Fprintf(o.Progress, "profiling one emulated host (%s) for %s\n", o.Lab.String(), strings.Join(o.Mixes, ", "))
	env, err := scaleout.Start(ctx, o, 1, "profile")
	if err != nil {
		return nil, fmt.Errorf("profile: start the standalone node: %w", err)
	}
	defer env.Close()
	n1 := env.Cluster.Proc("n1")
	if n1 == nil {
		return nil, errors.New("profile: the standalone node n1 is not running")
	}
	var reps []*profiler.Report
	for _, m := range o.Mixes {
		fmt.Fprintf(o.Progress, "  profiling %s (%sup to 4 phases of %s + %s ramp-up)\n", m, idleNote(f.profileIdle), f.profileDuration, f.profileRampup)
		rep, err := profileSteady(ctx, profiler.Options{Workload: o.Workload, DSN: env.DSN, Mix: m, Clients: o.ClientsPerNode,
			Duration: f.profileDuration, Rampup: f.profileRampup, PID: n1.PID, Logger: o.Logger, Speed: o.Speed, Idle: f.profileIdle}, o.MaxSteal, o.Progress)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", m, err)
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// combineProfiles gives, per mix, the profile the model uses: the one
// round's, or a copy of the first round's report whose profile has the
// median of the rounds' demands (planner.MedianProfile).
func combineProfiles(rounds []profileRound) (standalone, replicated []*profiler.Report, err error) {
	if len(rounds) == 0 {
		return nil, nil, errors.New("no profile was measured")
	}
	if len(rounds) == 1 {
		return rounds[0].Standalone, rounds[0].Replicated, nil
	}
	combine := func(pick func(profileRound) []*profiler.Report) ([]*profiler.Report, error) {
		first := pick(rounds[0])
		var out []*profiler.Report
		for i := range first {
			var ps []planner.Profile
			for _, r := range rounds {
				if reps := pick(r); i < len(reps) {
					ps = append(ps, reps[i].Profile)
				}
			}
			med, err := planner.MedianProfile(ps)
			if err != nil {
				return nil, err
			}
			c := *first[i]
			c.Profile = med
			out = append(out, &c)
		}
		return out, nil
	}
	if standalone, err = combine(func(r profileRound) []*profiler.Report { return r.Standalone }); err != nil {
		return nil, nil, err
	}
	if rounds[0].Replicated != nil {
		if replicated, err = combine(func(r profileRound) []*profiler.Report { return r.Replicated }); err != nil {
			return nil, nil, err
		}
	}
	return standalone, replicated, nil
}

// mergeSweeps joins the sweeps of interleaved rounds into one report,
// rows summarised over every round's points; nil when there is none.
func mergeSweeps(reps []*scaleout.Report) *scaleout.Report {
	if len(reps) == 0 {
		return nil
	}
	out := *reps[0]
	out.Points = nil
	for _, r := range reps {
		out.Points = append(out.Points, r.Points...)
	}
	out.Rows = scaleout.Summarise(out.Points)
	return &out
}

// readConsistencySource says what a read consistency means for the
// comparison.
func readConsistencySource(c string) string {
	if c == "eventual" {
		return "set: --read-consistency, the replicated profile's and the sweep's router: a read runs on its node's latest snapshot without waiting for the session's last write, as under seed 003's generalized snapshot isolation, which the model describes"
	}
	return "set: --read-consistency, the replicated profile's and the sweep's router: a transaction after a write waits until its node has the session's last commit (on the physical engine a round trip to the primary for its position and one to the replica; the model has no centre for them, their cost is in the replicated profile's mix phase only; docs/benchmarks.md \"What session consistency costs\")"
}

// profileReplicated profiles, for each mix, n1 of a fresh two-node cluster
// of the design under the lab's quotas through n1's own front door, with
// n2's process tree as the replica whose CPU per committed update is ws.
func profileReplicated(ctx context.Context, o scaleout.Options, f *planValidateFlags) ([]*profiler.Report, error) {
	env, err := scaleout.Start(ctx, o, 2, "profile-replicated")
	if err != nil {
		return nil, fmt.Errorf("profile the replicated path: start two nodes: %w", err)
	}
	defer env.Close()
	n1, n2 := env.Cluster.Proc("n1"), env.Cluster.Proc("n2")
	if n1 == nil || n2 == nil {
		return nil, errors.New("profile the replicated path: nodes n1 and n2 are not both running")
	}
	// Single-master: through the router, as the sweep's clients, so that a
	// read costs what routing makes it cost on the nodes, wherever it
	// lands (both trees count for rc); updates go to n1, n2 applies them.
	// Multi-master: n1's own front door (the router would balance updates
	// over both nodes too).
	dsn, replicaReads := env.DSN, o.Design == "single-master"
	if !replicaReads {
		if dsn, err = scaleout.HostDSN(env.DSN, env.Config.Nodes[0].Listen); err != nil {
			return nil, fmt.Errorf("profile the replicated path: %w", err)
		}
	}
	// The load the sweep puts on these nodes: single-master's router
	// carries 2·C clients at N = 2, multi-master's n1 C. Demands fall with
	// concurrency (more commits share a WAL flush and a WAL sender's
	// wake-up): profiled with C clients over two single-master nodes the
	// primary's wc came out 1.3x what the sweep's N = 2 could spend.
	clients := o.ClientsPerNode
	if replicaReads {
		clients = 2 * o.ClientsPerNode
	}
	var reps []*profiler.Report
	for _, m := range o.Mixes {
		fmt.Fprintf(o.Progress, "  profiling %s on n1 with %d clients (%sup to 3 phases of %s + %s ramp-up)\n", m, clients, idleNote(f.profileIdle), f.profileDuration, f.profileRampup)
		po := profiler.Options{Workload: o.Workload, DSN: dsn, Mix: m, Clients: clients,
			Duration: f.profileDuration, Rampup: f.profileRampup, PID: n1.PID, ReplicaPID: n2.PID, ReplicaReads: replicaReads, Logger: o.Logger,
			Name: o.Workload.Name() + "-" + m + "-replicated", Speed: o.Speed, Idle: f.profileIdle}
		if replicaReads {
			// The reads the router sends n2 split the mix phase between
			// the nodes (--demands mix).
			po.ReplicaRouted = func(ctx context.Context) (uint64, error) {
				routed, err := scaleout.RoutedTransactions(ctx, env.Config)
				return routed["n2"], err
			}
		}
		if o.Design == "multi-master" {
			po.ReplicaBatches = replicaBatches(env.Config)
			po.Certify = nodeCertify(env.Config)
		}
		rep, err := profileSteady(ctx, po, o.MaxSteal, o.Progress)
		if err != nil {
			return nil, fmt.Errorf("profile %s on the replicated path: %w", m, err)
		}
		if b := rep.Profile.ApplyBatch; b > 0 {
			// How n2 batched n1's writesets (a batch is one back-end
			// transaction): the sweep's lines print the same per N.
			fmt.Fprintf(o.Progress, "  n2 applied %.1f writesets per batch during the update phase\n", b)
		}
		reps = append(reps, rep)
	}
	if o.Design == "multi-master" && f.profileBatchDelay > 0 {
		if err := profileBatched(ctx, o, f, env, dsn, reps); err != nil {
			return nil, err
		}
	}
	return reps, nil
}

// nodeCounts is the multi-master /status counters of c's node i (0: n1).
func nodeCounts(ctx context.Context, c *config.Cluster, i int) (scaleout.ApplyCount, error) {
	counts, err := scaleout.ApplyBatches(ctx, c)
	if err != nil {
		return scaleout.ApplyCount{}, err
	}
	if len(counts) <= i {
		return scaleout.ApplyCount{}, fmt.Errorf("n%d's multi-master counters were not read", i+1)
	}
	return counts[i], nil
}

// replicaBatches reads n2's apply counters (profiler.Options.ReplicaBatches).
func replicaBatches(c *config.Cluster) func(context.Context) (uint64, uint64, error) {
	return func(ctx context.Context) (uint64, uint64, error) {
		n, err := nodeCounts(ctx, c, 1)
		return n.Batches, n.Writesets, err
	}
}

// certifierInput says where the model's certifier delay came from.
func certifierInput(repl *profiler.Report, f *planValidateFlags) planner.Input {
	const own = "; tandem's certifier is the Raft group of the nodes and a witness, led from the witness (its own host, no quota: as seed 003's certifier on machines of its own); its followers' work is in the nodes' demands, and the delay is what a commit waits for it, the loaded nodes' share of the quorum included"
	switch {
	case f.certifierDelaySet:
		return planner.Input{Name: "certifier delay", Value: f.certifierDelay.String(), Measured: false,
			Source: "--certifier-delay, per update attempt with a writeset, at every N (the sweep's N = 1 is a standalone node without one)" + own}
	case repl != nil && repl.Profile.CertifierDelay > 0:
		return planner.Input{Name: "certifier delay", Value: fmt.Sprintf("N = 1: 0; N >= 2: %.2f ms", 1000*repl.Profile.CertifierDelay), Measured: true,
			Source: "N = 1 is a standalone node (no certifier); N >= 2: the mean certification round trip of n1 in the replicated profile's update phase (its /status), per update with a writeset; the sweep's lines print it per N" + own}
	}
	return planner.Input{Name: "certifier delay", Value: fmt.Sprintf("N = 1: 0; N >= 2: %s", time.Duration(planner.DefaultCertifierDelay*float64(time.Second))), Measured: false,
		Source: "N = 1 is a standalone node (no certifier); N >= 2: seed 003's 12 ms (the replicated profile did not measure the round trip: a validation saved by an older build)" + own}
}

// certifierDelayFor is the model's certifier delay at N >= 2 without
// --certifier-delay: the replicated profile's measured round trip, else
// seed 003's.
func certifierDelayFor(p planner.Profile) float64 {
	if p.CertifierDelay > 0 {
		return p.CertifierDelay
	}
	return planner.DefaultCertifierDelay
}

// nodeCertify reads n1's certification round trips
// (profiler.Options.Certify).
func nodeCertify(c *config.Cluster) func(context.Context) (uint64, float64, error) {
	return func(ctx context.Context) (uint64, float64, error) {
		n, err := nodeCounts(ctx, c, 0)
		return n.Certifications, n.CertifySeconds, err
	}
}

// profileBatched profiles, for each mix, the update phase of the same
// two nodes again with multi_master.apply_batch_delay set to
// --profile-batch-delay at run time, so that n2 applies n1's writesets in
// larger batches: n2's CPU per writeset at a second batch size, on the
// same cluster (fresh clusters of one configuration differ in what a
// transaction costs by up to 1.3x on this kind of machine, more than the
// difference measured here). With the first profile's it splits each
// resource's ws into a part per batch and one per writeset
// (Resource.WSBatch), set on reps' profiles: ws at b writesets per batch
// is ws_1 + ws_batch/b, the two profiles' batch sizes being two points of
// that line.
func profileBatched(ctx context.Context, o scaleout.Options, f *planValidateFlags, env *scaleout.Env, dsn string, reps []*profiler.Report) error {
	if err := scaleout.SetApplyBatchDelay(ctx, env.Config, f.profileBatchDelay); err != nil {
		return fmt.Errorf("profile the apply at a larger batch size: %w", err)
	}
	n1, n2 := env.Cluster.Proc("n1"), env.Cluster.Proc("n2")
	for i, m := range o.Mixes {
		rep := reps[i]
		if rep.Profile.Pw == 0 {
			continue
		}
		fmt.Fprintf(o.Progress, "  profiling %s's apply again, writesets gathering for %s before each batch (up to 2 phases of %s + %s ramp-up)\n", m, f.profileBatchDelay, f.profileDuration, f.profileRampup)
		// No idle phase of its own: the first profile's background is
		// subtracted from both (below). Measured again here, n2's idle
		// CPU once came out at 5x the first's (0.05 core: work left by
		// the phases before), which took half the apply's CPU away.
		po := profiler.Options{Workload: o.Workload, DSN: dsn, Mix: m, Clients: o.ClientsPerNode,
			Duration: f.profileDuration, Rampup: f.profileRampup, PID: n1.PID, ReplicaPID: n2.PID, Logger: o.Logger,
			Name: o.Workload.Name() + "-" + m + "-batched", Speed: o.Speed, SkipMix: true,
			ReplicaBatches: replicaBatches(env.Config)}
		br, err := profileSteady(ctx, po, o.MaxSteal, o.Progress)
		if err != nil {
			return fmt.Errorf("profile %s's apply at a larger batch size: %w", m, err)
		}
		rep.Batched = br
		for _, line := range splitApplyBatches(rep) {
			fmt.Fprintf(o.Progress, "  %s\n", line)
		}
		if err := rep.Profile.Validate(); err != nil {
			return fmt.Errorf("mix %s: split ws: %w", m, err)
		}
	}
	return nil
}

// splitApplyBatches splits each resource's ws of rep's profile into a
// part per apply batch and one per writeset (Resource.WSBatch) from rep's
// batched profile, the line through ws at the two batch sizes; it says
// what it did, one line per resource, or (also as a warning in rep) why
// it did not. Both points are net of the first profile's n2 background
// (the batched profile has no idle phase; one saved by an older build
// that had one has its own added back).
func splitApplyBatches(rep *profiler.Report) []string {
	br := rep.Batched
	if br == nil || br.Profile.Pw == 0 {
		return nil
	}
	b1, b2 := rep.Profile.ApplyBatch, br.Profile.ApplyBatch
	if b1 <= 0 || b2 < 1.5*b1 {
		msg := fmt.Sprintf("mix %s: the apply batches were %.1f and %.1f writesets in the two profiles, too close to split ws into a part per batch and one per writeset: ws is charged as measured at every N", rep.Profile.Mix, b1, b2)
		rep.Warnings = append(rep.Warnings, msg)
		return []string{msg}
	}
	var apply *profiler.Phase
	for _, ph := range br.Phases {
		if ph.Name == profiler.PhaseApply {
			apply = ph
		}
	}
	var lines []string
	for k := range rep.Profile.Resources {
		r := &rep.Profile.Resources[k]
		if k >= len(br.Profile.Resources) || br.Profile.Resources[k].Name != r.Name {
			continue
		}
		ws1, ws2 := r.WS, br.Profile.Resources[k].WS
		if bg := r.BGReplica - br.Profile.Resources[k].BGReplica; bg != 0 && apply != nil && apply.Completions > 0 {
			ws2 = math.Max(0, ws2-bg*apply.WallS/float64(apply.Completions))
		}
		r.WSBatch = math.Min(math.Max(0, (ws1-ws2)/(1/b1-1/b2)), ws1*b1)
		lines = append(lines, fmt.Sprintf("%s ws: %.3f ms at %.1f writesets per batch, %.3f ms at %.1f: %.3f ms per batch + %.3f ms per writeset",
			r.Name, 1000*ws1, b1, 1000*ws2, b2, 1000*r.WSBatch, 1000*(ws1-r.WSBatch/b1)))
		if r.WSBatch == 0 && ws1 > 0 {
			// The machine's noise: the larger batches cost no less per
			// writeset (seen in one of six profiles on 0.25-core hosts).
			msg := fmt.Sprintf("mix %s: %s ws cost no less per writeset at %.1f writesets per batch (%.3f ms) than at %.1f (%.3f ms): no part per batch to split off; with --apply-cost split ws is charged as measured at every N", rep.Profile.Mix, r.Name, b2, 1000*ws2, b1, 1000*ws1)
			rep.Warnings = append(rep.Warnings, msg)
			lines = append(lines, msg)
		}
	}
	return lines
}

// savedDemands is the --demands a saved validation ran with, from its
// "wc from" input (def when none says).
func savedDemands(vs []planner.Validation, def string) string {
	for _, v := range vs {
		for _, in := range v.Inputs {
			if in.Name == "wc from" && (in.Value == "phases" || in.Value == "mix") {
				return in.Value
			}
		}
	}
	return def
}

// idleNote is the progress lines' mention of the idle phase.
func idleNote(idle time.Duration) string {
	if idle <= 0 {
		return ""
	}
	return fmt.Sprintf("an idle phase of %s, then ", idle)
}

// profileSteady runs the profiler, and runs it again (up to
// scaleout.StealRetries times) when one of its phases lost more than
// maxSteal cores to the hypervisor: on this development machine such a
// phase measured up to 1.6x the CPU per transaction of a quiet one
// (docs/benchmarks.md). maxSteal 0 keeps the first profile.
func profileSteady(ctx context.Context, opts profiler.Options, maxSteal float64, progress io.Writer) (*profiler.Report, error) {
	for try := 0; ; try++ {
		rep, err := profiler.Run(ctx, opts)
		if err != nil {
			return nil, err
		}
		worst, phase := phaseSteal(rep)
		if maxSteal <= 0 || worst <= maxSteal || try >= scaleout.StealRetries {
			return rep, nil
		}
		fmt.Fprintf(progress, "  the hypervisor took %.2f cores during the %s phase (more than --max-steal %.2f): profiling again\n", worst, phase, maxSteal)
	}
}

// phaseSteal is the most cores any phase of a profile lost to the
// hypervisor, and that phase's name.
func phaseSteal(rep *profiler.Report) (float64, string) {
	worst, name := 0.0, ""
	for _, ph := range rep.Phases {
		if ph.WallS > 0 && ph.HostStealS/ph.WallS > worst {
			worst, name = ph.HostStealS/ph.WallS, ph.Name
		}
	}
	return worst, name
}

// mergePredictions takes N = 1 from standalone and every N >= 2 from
// replicated, speedups against the standalone N = 1.
func mergePredictions(standalone, replicated planner.Prediction) planner.Prediction {
	out := standalone
	out.Points = nil
	x1 := 0.0
	if pt, ok := standalone.At(1); ok {
		x1 = pt.ThroughputTPS
		out.Points = append(out.Points, pt)
	}
	for _, pt := range replicated.Points {
		if pt.Replicas < 2 {
			continue
		}
		if x1 > 0 {
			pt.Speedup = pt.ThroughputTPS / x1
		}
		out.Points = append(out.Points, pt)
	}
	out.Profile = standalone.Profile + " (N = 1), " + replicated.Profile + " (N >= 2)"
	return out
}

// medianPoint is the median over rounds of f of the sweep's points of mix
// at n nodes where f is positive; 0 when there is none.
func medianPoint(so *scaleout.Report, mix string, n int, f func(scaleout.Point) float64) float64 {
	var vs []float64
	for _, p := range so.Points {
		if p.Mix == mix && p.N == n {
			if v := f(p); v > 0 {
				vs = append(vs, v)
			}
		}
	}
	if len(vs) == 0 {
		return 0
	}
	sort.Float64s(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// nodeCPUPerTx is the CPU-seconds all nodes used per committed
// transaction of mix at n nodes (their cgroups over the measured window),
// the median over rounds; 0 when not measured.
func nodeCPUPerTx(so *scaleout.Report, mix string, n int) float64 {
	return medianPoint(so, mix, n, func(p scaleout.Point) float64 {
		x := completedX(p.X, p.XDone)
		if x <= 0 {
			return 0
		}
		var cores float64
		for _, h := range p.Hosts {
			if h.Kind == "node" {
				cores += h.Util
			}
		}
		return cores / x
	})
}

// unitInput says what the compared throughput and response time count.
func unitInput(so *scaleout.Report, mix string) planner.Input {
	for _, r := range so.Rows {
		if r.Mix == mix && r.X > 0 && r.XDone == 0 {
			return planner.Input{Name: "throughput counts", Value: "committed transactions (MQTh)", Measured: true,
				Source: "a sweep saved by an older build, which measured only the committed (counted) transactions: the model's unit is every transaction run to its end (its demands are per update attempt, rolled back ones included), so the comparison is off by the committed share (TM1: 0.965 of R80W20, 0.86 of R20W80)"}
		}
	}
	resp := "the clients' time per completed transaction, the time of the transactions that ended aborted included (the sweep does not retry them, as TM1's specification; the model retries every aborted attempt, R = N x C / X), so that both count where the clients' time went"
	for _, r := range so.Rows {
		if r.Mix == mix && r.X > 0 && r.CostDoneMs == 0 {
			resp = "the completed transactions' mean, which leaves out the aborted ones' time that the model (retrying every aborted attempt) counts: a sweep saved by an older build"
		}
	}
	return planner.Input{Name: "throughput counts", Value: "completed transactions", Measured: true,
		Source: "every transaction run to its end, committed or rolled back by the workload's rules (TM1 rolls 17.5 % of its updates back): the unit of the profile's demands; the sweep's MQTh (committed only) is in its rows. Response time: " + resp}
}

// completedX picks the completed transactions' figure when the sweep
// measured it, else the counted (qualified) one, for sweeps recorded before
// it was measured. A profile's demands are per completed transaction (the
// workload's rule-based rollbacks included: TM1 rolls back 17.5 % of its
// updates), so the model's throughput and response time are too; compared
// with MQTh they were off by the counted share (0.86 on TM1 R20W80).
func completedX(counted, completed float64) float64 {
	if completed > 0 {
		return completed
	}
	return counted
}

// measuredResponse is the sweep's response time in the model's unit (ms):
// the clients' time per completed transaction, that of the transactions
// which ended aborted included (the model retries every aborted attempt,
// R = N·C/X), else (a run saved by an older build) the completed ones'
// mean, else the counted ones'.
func measuredResponse(r scaleout.Row) float64 {
	if r.CostDoneMs > 0 {
		return r.CostDoneMs
	}
	return completedX(r.MeanMs, r.MeanDoneMs)
}

// aloneNote says how the sweep's and the profile's N = 1 is reached.
func aloneNote(o scaleout.Options) string {
	switch {
	case o.Design == "single-master" && o.Backend == "postgres" && o.Engine == config.EnginePhysical && o.Alone == scaleout.AloneSocket:
		return "N = 1 is the server's own Unix socket (--alone socket): no router, no TCP, no TLS, which every N >= 2 has"
	case o.Design == "single-master" && o.Backend == "postgres" && o.Engine == config.EnginePhysical:
		return "N = 1 is the primary alone behind the router (--alone router): the router's TLS hop to the server as at every N >= 2"
	}
	return "the model adds it at N = 1 too, where the sweep has no router"
}

// validationInputs lists the model's inputs: what the profile measured on
// the emulated host, what the sweep set, and what is assumed.
func validationInputs(rep, repl *profiler.Report, rounds int, pooled *pooledRate, o scaleout.Options, f *planValidateFlags) []planner.Input {
	p := rep.Profile
	cpus := fmt.Sprintf("the node's process tree (pid %d: node + PostgreSQL) over %s phases, CPU time divided by %g (%s)",
		rep.PID, f.profileDuration, rep.CPUs, rep.CPUsFrom)
	in := []planner.Input{
		{Name: "pr / pw", Value: fmt.Sprintf("%.3f / %.3f", p.Pr, p.Pw), Measured: false, Source: "exact: the mix's weights"},
		{Name: "read consistency", Value: f.so.ReadConsistency, Measured: false, Source: readConsistencySource(f.so.ReadConsistency)},
	}
	nOne := ""
	if repl != nil {
		nOne = " (N = 1)"
	}
	for _, r := range p.Resources {
		src := "measured on one emulated host, the standalone node: " + cpus
		if r.Name != "cpu" {
			src = "on one emulated host: busy time of " + strings.Join(rep.Disks, ",") + "; the lab emulates CPU only: every emulated host shares this disk, the model gives each its own"
		}
		in = append(in, planner.Input{Name: "rc / wc / ws " + r.Name + nOne,
			Value:    fmt.Sprintf("%.4f / %.4f / %.4f ms", 1000*r.RC, 1000*r.WC, 1000*r.WS),
			Measured: true, Source: src})
	}
	if repl != nil {
		for _, r := range repl.Profile.Resources {
			src := fmt.Sprintf("measured on the replicated path: n1 of two emulated hosts of %s profiled through its own front door, its process tree (pid %d) for rc and wc, n2's (pid %d) during the update phase per committed update for ws, CPU divided by %g",
				o.Design, repl.PID, repl.ReplicaPID, repl.CPUs)
			if sp := repl.Split; sp != nil && sp.MultiMaster && f.demands == "mix" && r.Name == profiler.ResCPU {
				src = fmt.Sprintf("measured on the replicated path: n1 of two emulated hosts of %s profiled through its own front door, its process tree (pid %d): rc per read in the read phase, wc from the mix phase (its CPU less its %.0f reads at rc, per update attempt); ws: n2's tree (pid %d) in the mix phase per committed update of n1, at the %.1f writesets per batch n2 applied then; CPU divided by %g",
					o.Design, repl.PID, sp.ReadsPrimary, repl.ReplicaPID, sp.ApplyBatch, repl.CPUs)
			}
			if o.Design == "single-master" {
				src = fmt.Sprintf("measured on the replicated path: two emulated hosts of single-master profiled through the router as the sweep's clients reach them, with the sweep's N = 2 load (2 x C clients); rc: both nodes' process trees (pids %d, %d) per read (the router balanced the reads over both), wc: the primary's per update attempt, ws: the replica's during the update phase per committed update; CPU divided by %g",
					repl.PID, repl.ReplicaPID, repl.CPUs)
				if sp := repl.Split; sp != nil && f.demands == "mix" && r.Name == profiler.ResCPU {
					src = fmt.Sprintf("measured on the replicated path: two emulated hosts of single-master profiled through the router as the sweep's clients reach them, with the sweep's N = 2 load (2 x C clients); rc: both nodes' process trees (pids %d, %d) per read in the read phase; wc and ws from the mix phase, each tree's CPU less its reads at rc (the router sent the primary %.0f and the replica %.0f of them), per update attempt on the primary and per committed update on the replica; CPU divided by %g",
						repl.PID, repl.ReplicaPID, sp.ReadsPrimary, sp.ReadsReplica, repl.CPUs)
				}
			}
			if r.Name != "cpu" {
				src = "on the replicated path: the shared disk's busy time split between n1 and n2 by their I/O bytes"
			}
			in = append(in, planner.Input{Name: "rc / wc / ws " + r.Name + " (N >= 2)",
				Value:    fmt.Sprintf("%.4f / %.4f / %.4f ms", 1000*r.RC, 1000*r.WC, 1000*r.WS),
				Measured: true, Source: src})
			if r.WSBatch > 0 {
				in = append(in, planner.Input{Name: "ws " + r.Name + " per batch + per writeset (N >= 2)",
					Value:    fmt.Sprintf("%.4f + %.4f ms at %.1f writesets per batch", 1000*r.WSBatch, 1000*(r.WS-r.WSBatch/repl.Profile.ApplyBatch), repl.Profile.ApplyBatch),
					Measured: true, Source: fmt.Sprintf("n2's ws measured at two batch sizes: the replicated profile's (%.1f writesets per batch) and again on the same two nodes with multi_master.apply_batch_delay %s set at run time (--profile-batch-delay); the model charges ws_1 + ws_batch/B at its B for each N with --apply-cost split", repl.Profile.ApplyBatch, f.profileBatchDelay)})
			}
			if repl.Profile.ApplyBatch > 0 && f.applyCost == string(planner.ApplyPerBatch) {
				in = append(in, planner.Input{Name: "ws " + r.Name + " at B writesets per batch (N >= 2)",
					Value:    fmt.Sprintf("%.4f x %.1f / B ms", 1000*r.WS, repl.Profile.ApplyBatch),
					Measured: false, Source: "--apply-cost per-batch: a replica's apply costs per batch, so ws falls as 1/B from the profile's batch size (measured: on PostgreSQL back ends the nodes' CPU per transaction stays flat from N = 2 to 4; docs/benchmarks.md \"Where the CPU goes, by process\")"})
			}
		}
	}
	profiles := planner.Input{Name: "profiles", Value: "one", Measured: true, Source: "each profile measured once, on fresh clusters, before the sweep"}
	if rounds > 1 {
		profiles = planner.Input{Name: "profiles", Value: fmt.Sprintf("median of %d", rounds), Measured: true,
			Source: "--interleave: each round profiled fresh clusters just before its sweep; every demand, a1 and l1 is the median over the rounds (the figures above); each round's profile is in profile_rounds"}
	}
	bgIn := planner.Input{Name: "background (bg)", Value: "in the demands", Measured: false, Source: "--profile-idle 0: no idle phase; what the nodes do with no transaction is charged per transaction at the profile's rate"}
	if f.profileIdle > 0 {
		var v []string
		for _, r := range p.Resources {
			if r.Name == profiler.ResCPU {
				v = append(v, fmt.Sprintf("standalone %.3f", r.BG))
			}
		}
		if repl != nil {
			for _, r := range repl.Profile.Resources {
				if r.Name == profiler.ResCPU {
					v = append(v, fmt.Sprintf("replicated primary %.3f, replica %.3f", r.BG, r.BGReplica))
				}
			}
		}
		bgIn = planner.Input{Name: "background (bg)", Value: strings.Join(v, "; ") + " of a host", Measured: true,
			Source: fmt.Sprintf("--profile-idle %s: each profile's idle phase (no transaction) measured each tree's own CPU (a replicated node's coordinator, lease, probes; PostgreSQL's background processes); every phase's CPU is net of it, and the model gives each host only 1 - bg of its CPU", f.profileIdle)}
	}
	capIn := capacityInput(p, repl)
	in = append(in, profiles, bgIn, capIn,
		planner.Input{Name: "wc from", Value: f.demands, Measured: true, Source: map[string]string{
			"phases": "the update phase (updates only, seed 003 §4.1.1); --demands mix takes it from the mix phase",
			"mix":    "--demands mix: the mix phases: the standalone profile's (N = 1), its busy time less its reads at rc, per update attempt; single-master's replicated path's split between its nodes by the reads the router sent each (wc and ws above); multi-master's replicated path's n1 less its reads at rc per update attempt (wc) and n2 per committed update of n1 (ws)"}[f.demands]},
		planner.Input{Name: "a1", Value: fmt.Sprintf("%.6f", p.A1), Measured: true, Source: "the profile's mix phase (SQLSTATE class 40 / update attempts)"},
		planner.Input{Name: "l1", Value: fmt.Sprintf("%.3f ms", 1000*p.L1), Measured: true, Source: "the profile's mix phase: mean response time of committed updates"},
		planner.Input{Name: "C (clients per node)", Value: fmt.Sprint(o.ClientsPerNode), Measured: false, Source: "set: --clients-per-node, the same in the standalone profile, the model and the sweep; single-master's replicated profile runs 2 x C over its two nodes, the sweep's load at N = 2"},
		planner.Input{Name: "Z (think time)", Value: "0", Measured: false, Source: "set: closed loop without think time, as the sweep runs"},
		planner.Input{Name: "load-balancer delay (router + network)", Value: f.lbDelay.String(), Measured: false,
			Source: fmt.Sprintf("--lb-delay, a delay centre at every N; the router's CPU (quota %g, 0 = none) is not in the model; %s", o.Lab.CPURouter, aloneNote(o))},
		planner.Input{Name: "network delay", Value: o.Lab.NetDelay.String(), Measured: false, Source: "the lab's links (none unless --lab delay=...); not a model input"},
		planner.Input{Name: "A'_N (master abort rate)", Value: "estimated", Measured: false, Source: "seed 003 §3.3.1 growth from a1 and l1 (not measured per N)"},
		wsInput(repl, o.Engine),
	)
	if o.Design == "multi-master" {
		in = append(in, abortInput(p, repl, pooled, f.abortModel))
	}
	if repl != nil && o.Design == "multi-master" {
		for _, r := range repl.Profile.Resources {
			if r.Name == profiler.ResCPU && r.WCSat > 0 {
				in = append(in, planner.Input{Name: "update's own demand (conflict window)", Value: fmt.Sprintf("%.4f ms (updates alone), against wc %.4f ms in the mix", 1000*r.WCSat, 1000*r.WC), Measured: true,
					Source: "the replicated profile's update phase (n1 running updates alone): the conflict window charges an update attempt this, wc_sat x (1 + Q) x D / D_own (stretched by the other nodes' writesets the node applies), and the demands the mix's wc, which also carries what the mix costs beyond its phases (planner/DESIGN.md \"The conflict window of a measured profile\")"})
			}
		}
	}
	if repl != nil && o.Design == "single-master" {
		for _, r := range repl.Profile.Resources {
			if r.Name == profiler.ResCPU && r.WCSat > 0 {
				in = append(in, planner.Input{Name: "master's update demand", Value: fmt.Sprintf("%.4f ms (mix, %.0f %% reads) to %.4f ms (updates alone)", 1000*r.WC, 100*repl.Profile.MasterReadShare, 1000*r.WCSat), Measured: true,
					Source: "the replicated profile's mix phase (the primary serving its share of reads) and its update phase (the primary running updates alone): the model moves the master's demand per update from the first to the second in proportion as the reads it serves fall (none where it is the bottleneck)"})
			}
		}
	}
	if repl != nil && o.Engine == config.EnginePhysical {
		send := 0.0
		for _, r := range repl.Profile.Resources {
			if r.Name == profiler.ResCPU {
				send = r.WSend
			}
		}
		cost := planner.Input{Name: "replication cost on the master", Value: "one replica's", Measured: true,
			Source: "in wc of the replicated profile: n1's PostgreSQL streamed its WAL to one replica (walsender) and waited for its write (remote_write); the WAL sender's CPU was not measured, so at N > 2 the model charges the same"}
		if send > 0 {
			cost.Value = fmt.Sprintf("wc + (N - 2) x %.4f ms cpu", 1000*send)
			cost.Source = "in wc of the replicated profile: n1's PostgreSQL streamed its WAL to one replica and waited for its write (remote_write); its WAL sender's CPU per update attempt (wsend, from the process titled \"postgres: walsender\" in the update phase) is charged again for each replica beyond the first: one WAL sender per replica; FIRST 1 waits for one"
		}
		in = append(in, cost,
			planner.Input{Name: "durability", Value: "synchronous_commit on (standalone), remote_write (replicated)", Measured: false,
				Source: "the physical engine: the primary's WAL is flushed at every commit (strict), 2-safe received waits for one replica's write"})
	} else if repl != nil {
		in = append(in,
			planner.Input{Name: "replication cost on the master", Value: "one replica's", Measured: true,
				Source: "in wc of the replicated profile: n1 captured, logged and shipped its writesets to one replica; at N > 2 the model charges the same (assumed: shipping to N-1 replicas costs what shipping to one does)"},
			planner.Input{Name: "durability", Value: "standalone: synchronous_commit on; replicated: the sweep's", Measured: false,
				Source: "the replicated profile runs the sweep's cluster file (2-safe received, relaxed durability), the standalone profile (N = 1) the standalone node's"})
	} else {
		in = append(in,
			planner.Input{Name: "replication cost on the master", Value: "0", Measured: false,
				Source: "the model charges the master no per-replica work for shipping writesets (tandem's primary does ship them, 2-safe-received)"},
			planner.Input{Name: "durability", Value: "standalone: synchronous_commit on; replicated: off", Measured: false,
				Source: "the profile is of the standalone node; replicated nodes run with relaxed durability (the sweep's cluster file), so their update disk demand is lower than profiled"})
	}
	if o.Design == "multi-master" {
		in = append(in, certifierInput(repl, f))
	}
	return in
}

func wsInput(repl *profiler.Report, engine string) planner.Input {
	if repl != nil && engine == config.EnginePhysical {
		return planner.Input{Name: "ws (replica's apply)", Value: "as profiled", Measured: true,
			Source: "N = 1 has none; N >= 2: what n2 of the replicated profile (its node and its hot standby: WAL receiver and replay) spent per committed update of n1"}
	}
	if repl != nil {
		return planner.Input{Name: "ws (writeset apply)", Value: "as profiled", Measured: true,
			Source: "N = 1 has none; N >= 2: what n2 of the replicated profile spent applying n1's writesets (its own apply path), per committed update"}
	}
	return planner.Input{Name: "ws (writeset apply)", Value: "as profiled", Measured: true,
		Source: "the profiler applies captured writesets as SQL upserts through the node; tandem's replicas apply them through their own apply path"}
}

func writeValidation(w io.Writer, doc validateDoc) error {
	fmt.Fprintf(w, "%s (lab %s)\n\n", doc.Note, doc.Lab)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "MIX\tN\tPRED_TPS\tMEAS_TPS\tERR_%\tPRED_SPEEDUP\tMEAS_SPEEDUP\tPRED_MS\tMEAS_MS\tERR_%\tABORT_%_MODEL/MEAS\tCPU_MS/TX_MODEL\tCPU_MS/TX_MEAS\tBOTTLENECK (model)\tWITHIN")
	for _, v := range doc.Validations {
		for _, p := range v.Points {
			rt := "-"
			if p.ResponseTimeError != nil {
				rt = fmt.Sprintf("%+.1f", 100**p.ResponseTimeError)
			}
			within := "no"
			if p.Within {
				within = "yes"
			}
			ab := fmt.Sprintf("%.2f/-", 100*p.PredictedAbortRate)
			if p.MeasuredAbortRate != nil {
				ab = fmt.Sprintf("%.2f/%.2f", 100*p.PredictedAbortRate, 100**p.MeasuredAbortRate)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%+.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%.3f\t%.3f\t%s\t%s\n", v.Prediction.Mix, p.Replicas,
				p.PredictedTPS, p.MeasuredTPS, 100*p.ThroughputError, p.PredictedSpeedup, p.MeasuredSpeedup,
				1000*p.PredictedResponseS, 1000*p.MeasuredResponseS, rt, ab, 1000*p.ModelCPUPerTxS, 1000*p.MeasuredCPUPerTxS, p.PredictedBottleneck, within)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, v := range doc.Validations {
		var parts []string
		for _, p := range v.Points {
			if p.PredictedApplyBatch > 0 || p.MeasuredApplyBatch > 0 {
				part := fmt.Sprintf("N = %d %.1f / %.1f", p.Replicas, p.PredictedApplyBatch, p.MeasuredApplyBatch)
				if p.MeasuredApplyOwnShare > 0 || p.MeasuredFastApplyShare > 0 {
					part += fmt.Sprintf(" (others' %.1f; own commits applied at once %.0f %%)", p.MeasuredApplyBatch*(1-p.MeasuredApplyOwnShare), 100*p.MeasuredFastApplyShare)
				}
				parts = append(parts, part)
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "%s writesets per apply batch, model (other nodes') / measured (all): %s\n", v.Prediction.Mix, strings.Join(parts, ", "))
		}
	}
	ms := func(s float64) string {
		if s <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", 1000*s)
	}
	for _, v := range doc.Validations {
		var win, cert []string
		reads := false
		for _, p := range v.Points {
			if p.PredictedWindowS > 0 {
				cell := fmt.Sprintf("N = %d %s / %s", p.Replicas, ms(p.PredictedWindowS), ms(p.MeasuredUpdateS))
				if p.MeasuredReadS > 0 {
					cell += " (reads " + ms(p.MeasuredReadS) + ")"
					reads = true
				}
				win = append(win, cell)
				cert = append(cert, fmt.Sprintf("N = %d %s / %s", p.Replicas, ms(p.PredictedCertifyS), ms(p.MeasuredCertifyS)))
			}
		}
		if len(win) > 0 {
			what := "measured update response"
			if reads {
				what += " (and the reads' response)"
			}
			fmt.Fprintf(w, "%s update window (ms), model CW / %s: %s\n", v.Prediction.Mix, what, strings.Join(win, ", "))
			fmt.Fprintf(w, "%s certification (ms), model / measured round trip: %s\n", v.Prediction.Mix, strings.Join(cert, ", "))
		}
	}
	for _, v := range doc.Validations {
		verdict := "every N within"
		if !v.AllWithin {
			verdict = "NOT every N within"
		}
		fmt.Fprintf(w, "%s: throughput error max %.1f %% (N = %d), mean %.1f %%: %s %.0f %%\n", v.Prediction.Mix,
			100*v.MaxAbsThroughputError, v.WorstReplicas, 100*v.MeanAbsThroughputError, verdict, 100*v.Tolerance)
	}
	if sp := doc.Speed; sp != nil && sp.Profiles.N > 0 && sp.Windows.N > 0 {
		fmt.Fprintf(w, "machine memory latency: profiles %.0f-%.0f ns (median %.0f), sweep windows %.0f-%.0f ns (median %.0f): the windows ran at %.2fx the profiles' latency%s\n",
			sp.Profiles.Min, sp.Profiles.Max, sp.Profiles.Median, sp.Windows.Min, sp.Windows.Max, sp.Windows.Median, sp.Ratio, sp.warning())
	}
	fmt.Fprintln(w, "CPU_MS/TX: CPU milliseconds per committed transaction summed over all nodes (not the router): what the model charges (Pr·rc + Pw·wc + Pw·(N-1)·ws) and what the nodes' cgroups used")
	for _, v := range doc.Validations {
		fmt.Fprintf(w, "\ninputs (%s):\n", v.Prediction.Mix)
		tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
		for _, in := range v.Inputs {
			how := "assumed"
			if in.Measured {
				how = "measured"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s: %s\n", in.Name, in.Value, how, in.Source)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, e := range doc.Errors {
		fmt.Fprintf(w, "\nerror: %s\n", e)
	}
	return nil
}

// engineName is the replication engine an Engine option names ("" is the
// writeset engine).
func engineName(e string) string {
	if e == "" {
		return config.EngineWriteset
	}
	return e
}
