package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/planner"
)

// errPlanFlag marks a bad command-line value of `tandem plan`.
var errPlanFlag = errors.New("invalid flag value")

// newPlanCmd builds `tandem plan`: the capacity planner (seed 003's queueing
// models) as subcommands.
func newPlanCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Predict replicated throughput and response time from a standalone profile",
		Long: `The capacity planner: queueing models (mean value analysis) of the
multi-master and single-master designs, after Elnikety et al., "Predicting
Replicated Database Scalability from Standalone Database Profiling" (EuroSys
2009). A profile measured on one standalone database (read/update mix, abort
rate, CPU and disk demands of reads, updates and writesets) predicts how
throughput, response time and aborts change with the number of replicas, and
which resource saturates first. See docs/planner.md.`,
	}
	cmd.AddCommand(newPlanPredictCmd(), newPlanProfilesCmd())
	cmd.AddCommand(newPlanProfileCmd(), newPlanValidateCmd())
	return cmd
}

type planPredictFlags struct {
	profiles          []string
	design            string
	replicas          string
	clientsPerReplica int
	think             time.Duration
	lbDelay           time.Duration
	certifierDelay    time.Duration
	cwMode            string
	applyCost         string
	abortModel        string
	json              bool
	htmlFile          string
	svgFile           string
}

func newPlanPredictCmd() *cobra.Command {
	f := &planPredictFlags{}
	cmd := &cobra.Command{
		Use:   "predict",
		Short: "Predict throughput, response time, aborts and bottleneck per replica count",
		Example: `  tandem plan predict --profile tpcw-ordering --design both --replicas 1..16
  tandem plan predict --profile tpcw-browsing,tpcw-shopping,tpcw-ordering --design mm --svg tpcw.svg
  tandem plan predict --profile my-profile.json --replicas 1,2,4,8 --think 500ms --json
  tandem plan predict --profile rubis-bidding --html rubis.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			return runPlanPredict(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.profiles, "profile", nil, "built-in profile name (see: tandem plan profiles) or profile JSON file; repeat or comma-separate for several")
	fl.StringVar(&f.design, "design", "both", "design to model: mm (multi-master), sm (single-master) or both")
	fl.StringVar(&f.replicas, "replicas", "1..16", "replica counts: a range A..B, a list 1,2,4,8, or both (1..4,8,16)")
	fl.IntVar(&f.clientsPerReplica, "clients-per-replica", 0, "clients per replica C (default: the profile's)")
	fl.DurationVar(&f.think, "think", 0, "think time Z (default: the profile's)")
	fl.DurationVar(&f.lbDelay, "lb-delay", time.Duration(planner.DefaultLBDelay*float64(time.Second)), "load balancer and LAN delay per transaction attempt")
	fl.DurationVar(&f.certifierDelay, "certifier-delay", time.Duration(planner.DefaultCertifierDelay*float64(time.Second)), "certifier delay per update attempt (multi-master)")
	fl.StringVar(&f.applyCost, "apply-cost", string(planner.ApplyPerBatch), "multi-master: how a replica's apply is charged at B writesets per batch: per-batch (ws x the profile's apply_batch_writesets / B) or split (ws_1 + ws_batch_s / B)")
	fl.StringVar(&f.abortModel, "abort-model", string(planner.AbortModelRate), "multi-master: how the abort rate grows with N: rate (from the writesets the cluster commits per second, with a profile's conflict_rate; seed 003's growth without one) or seed003 ((1 - A_N) = (1 - A1)^(N x CW / L1))")
	fl.StringVar(&f.cwMode, "cw-mode", string(planner.CWFixedPoint), "multi-master conflict window iteration: fixed-point or per-population")
	fl.BoolVar(&f.json, "json", false, "print the predictions as JSON instead of a table")
	fl.StringVar(&f.htmlFile, "html", "", "also write a self-contained HTML report with charts to this file")
	fl.StringVar(&f.svgFile, "svg", "", "also write the throughput and response-time charts as one SVG image to this file")
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

func runPlanPredict(cmd *cobra.Command, f *planPredictFlags) error {
	designs, err := planner.ParseDesigns(f.design)
	if err != nil {
		return fmt.Errorf("--design: %w", err)
	}
	replicas, err := parseReplicas(f.replicas)
	if err != nil {
		return fmt.Errorf("--replicas: %w", err)
	}
	names := splitList(f.profiles)
	if len(names) == 0 {
		return fmt.Errorf("--profile: %w: no profile given", errPlanFlag)
	}
	flags := cmd.Flags()
	if flags.Changed("clients-per-replica") && f.clientsPerReplica < 1 {
		return fmt.Errorf("--clients-per-replica: %w: must be >= 1, got %d", errPlanFlag, f.clientsPerReplica)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"think", f.think}, {"lb-delay", f.lbDelay}, {"certifier-delay", f.certifierDelay}} {
		if d.v < 0 {
			return fmt.Errorf("--%s: %w: must be >= 0, got %s", d.name, errPlanFlag, d.v)
		}
	}
	if c := planner.ApplyCost(f.applyCost); c != planner.ApplyPerBatch && c != planner.ApplySplit {
		return fmt.Errorf("--apply-cost: %w: %q (want %s or %s)", errPlanFlag, f.applyCost, planner.ApplyPerBatch, planner.ApplySplit)
	}
	if m := planner.AbortModel(f.abortModel); m != planner.AbortModelRate && m != planner.AbortModelSeed003 {
		return fmt.Errorf("--abort-model: %w: %q (want %s or %s)", errPlanFlag, f.abortModel, planner.AbortModelRate, planner.AbortModelSeed003)
	}
	mode := planner.CWMode(f.cwMode)
	if mode != planner.CWFixedPoint && mode != planner.CWPerPopulation {
		return fmt.Errorf("--cw-mode: %w: %q (want %s or %s)", errPlanFlag, f.cwMode, planner.CWFixedPoint, planner.CWPerPopulation)
	}

	var preds []planner.Prediction
	for _, name := range names {
		p, err := resolveProfile(name)
		if err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		par := planner.DefaultParams(p)
		if flags.Changed("clients-per-replica") {
			par.ClientsPerReplica = f.clientsPerReplica
		}
		if flags.Changed("think") {
			par.ThinkTime = f.think.Seconds()
		}
		par.LBDelay = f.lbDelay.Seconds()
		par.CertifierDelay = f.certifierDelay.Seconds()
		par.CWMode = mode
		par.ApplyCost = planner.ApplyCost(f.applyCost)
		par.AbortModel = planner.AbortModel(f.abortModel)
		if err := planner.ValidateReplicas(replicas, par.ClientsPerReplica); err != nil {
			return fmt.Errorf("--replicas: %w", err)
		}
		for _, d := range designs {
			pred, err := planner.Predict(p, d, replicas, par)
			if err != nil {
				return fmt.Errorf("predict: %w", err)
			}
			preds = append(preds, pred)
		}
	}

	out := cmd.OutOrStdout()
	if f.json {
		if err := planner.WriteJSON(out, preds); err != nil {
			return err
		}
	} else if err := planner.WriteTable(out, preds); err != nil {
		return err
	}
	if f.htmlFile != "" {
		title := "tandem capacity plan: " + strings.Join(names, ", ")
		if err := writeFile(f.htmlFile, func(w io.Writer) error { return planner.WriteHTML(w, title, preds) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", f.htmlFile)
	}
	if f.svgFile != "" {
		if err := writeFile(f.svgFile, func(w io.Writer) error { return planner.WriteSVG(w, preds) }); err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", f.svgFile)
	}
	return nil
}

// resolveProfile returns the built-in profile called name, or else reads
// name as a profile file.
func resolveProfile(name string) (planner.Profile, error) {
	p, err := planner.BuiltinProfile(name)
	if err == nil {
		return p, nil
	}
	if _, statErr := os.Stat(name); statErr != nil {
		if errors.Is(statErr, os.ErrNotExist) {
			return planner.Profile{}, fmt.Errorf("%w: %q is neither a built-in profile (%s) nor an existing file", planner.ErrUnknownProfile, name, strings.Join(planner.BuiltinProfileNames(), ", "))
		}
		return planner.Profile{}, fmt.Errorf("profile %q: %w", name, statErr)
	}
	return planner.LoadProfileFile(name)
}

// parseReplicas parses "1..16", "1,2,4,8" or a mix such as "1..4,8,16".
func parseReplicas(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	add := func(n int) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if lo, hi, ok := strings.Cut(item, ".."); ok {
			a, errA := strconv.Atoi(strings.TrimSpace(lo))
			b, errB := strconv.Atoi(strings.TrimSpace(hi))
			if errA != nil || errB != nil {
				return nil, fmt.Errorf("%w: range %q: want A..B with whole numbers", errPlanFlag, item)
			}
			if a < 1 || b < a {
				return nil, fmt.Errorf("%w: range %q: want 1 <= A <= B", errPlanFlag, item)
			}
			if b > planner.MaxReplicas {
				return nil, fmt.Errorf("%w: range %q: at most %d replicas", errPlanFlag, item, planner.MaxReplicas)
			}
			for n := a; n <= b; n++ {
				add(n)
			}
			continue
		}
		n, err := strconv.Atoi(item)
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a whole number", errPlanFlag, item)
		}
		if n < 1 || n > planner.MaxReplicas {
			return nil, fmt.Errorf("%w: %d is out of range 1..%d", errPlanFlag, n, planner.MaxReplicas)
		}
		add(n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no replica count in %q", errPlanFlag, s)
	}
	return out, nil
}

func splitList(items []string) []string {
	var out []string
	for _, it := range items {
		for _, s := range strings.Split(it, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

func newPlanProfilesCmd() *cobra.Command {
	var show string
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the built-in workload profiles (seed 003 tables 2-5)",
		Long: `List the built-in profiles: the TPC-W and RUBiS inputs published by seed 003
(tables 2 to 5). --show NAME prints one as a profile file, a starting point for
your own measurements.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			out := cmd.OutOrStdout()
			if show != "" {
				p, err := planner.BuiltinProfile(show)
				if err != nil {
					return fmt.Errorf("--show: %w", err)
				}
				return planner.EncodeProfile(out, p)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tWORKLOAD\tMIX\tPR\tPW\tC\tZ_MS\tSOURCE")
			for _, name := range planner.BuiltinProfileNames() {
				p, err := planner.BuiltinProfile(name)
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%d\t%.0f\t%s\n", p.Name, p.Workload, p.Mix, p.Pr, p.Pw, p.ClientsPerReplica, 1000*p.ThinkTime, p.Measured.Source)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&show, "show", "", "print the named built-in profile as JSON")
	return cmd
}
