package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/scaleout"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
)

// newScaleoutCmd builds `tandem bench scaleout` (main.go adds it under bench).
func newScaleoutCmd() *cobra.Command {
	var (
		o                           scaleout.Options
		nodes, mixes, labFlag, work string
		csvFile, htmlFile, dir      string
		asJSON                      bool
	)
	cmd := &cobra.Command{
		Use:   "scaleout",
		Short: "Measure throughput at 1..N nodes on emulated hosts (the lab's CPU quotas): X(N), efficiency, response times, CPU per host",
		Long: `For each N (and each round), scaleout starts a fresh cluster of N nodes on
this machine as emulated hosts (the lab: each process in its own cgroup, each
node with --lab's CPU quota; needs root), N = 1 being one standalone node, loads
the workload (--subscribers), and runs each --mix with N x --clients-per-node
closed-loop clients from this process (in the lab's client cgroup). It prints
X(N) (MQTh), the efficiency X(N) / (N x X(1)), mean and p90 response times and
the CPU each host used over the measured window, read from its cgroup, and
the machine's memory latency over it (a probe's dependent loads: on a virtual
machine the host's other guests move it, and a transaction's CPU cost with
it, without stolen time); medians over --rounds (rounds outermost, so a slow
spell of the machine spreads over every N). Results are EMULATED hosts, not separate machines: the router and
the client have no quota unless --lab gives them one, and share the rest of
the machine. See docs/operations.md, "The emulated-host lab".`,
		Example: `  tandem bench scaleout --design single-master --nodes 1..4 --workload tm1 --mix r80w20 --lab cpu=0.25
  tandem bench scaleout --nodes 1..3 --mix read-only,r80w20 --lab cpu=0.25,client=1 --rounds 3 --json > so.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Nodes, err = scaleout.ParseNodes(nodes); err != nil {
				return err
			}
			if o.Workload, err = bench.Lookup(work); err != nil {
				return err
			}
			for _, m := range strings.Split(mixes, ",") {
				if m = strings.TrimSpace(m); m != "" {
					o.Mixes = append(o.Mixes, m)
				}
			}
			spec, err := config.ParseLabFlag(labFlag, config.Lab{})
			if err != nil {
				return fmt.Errorf("--lab: %w", err)
			}
			o.Lab = spec
			if spec.CPUPerNode == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "tandem: --lab gives the nodes no CPU quota: every node shares this machine's cores, so this is not scale-out (add --lab cpu=0.25)")
			}
			if dir == "" {
				if dir, err = os.MkdirTemp("", "tandem-scaleout-"); err != nil {
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
			o.Progress = cmd.ErrOrStderr()
			o.Logger = logger(cmd)
			if !cmd.Flags().Changed("log-level") {
				// The progress lines say what happens; children and the
				// launcher log only warnings.
				o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			}
			// The benchmark's own clusters: its role may CHECKPOINT
			// (quiescing before each measured window).
			o.Superuser = true
			// The machine's memory speed over each window (how fast the
			// host's other guests let it run: lab/speed.go).
			probe := lab.StartMemoryProbe()
			defer probe.Stop()
			o.Speed = probe
			rep, runErr := scaleout.Run(cmd.Context(), o)
			if rep == nil {
				return runErr
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = rep.WriteJSON(out)
			} else {
				err = rep.WriteTable(out)
			}
			if err != nil {
				return err
			}
			if csvFile != "" {
				f, err := os.Create(csvFile)
				if err != nil {
					return fmt.Errorf("--csv: %w", err)
				}
				defer f.Close()
				if err := rep.WriteCSV(f); err != nil {
					return fmt.Errorf("--csv: %w", err)
				}
			}
			if htmlFile != "" {
				f, err := os.Create(htmlFile)
				if err != nil {
					return fmt.Errorf("--html: %w", err)
				}
				defer f.Close()
				if err := rep.WriteHTML(f); err != nil {
					return fmt.Errorf("--html: %w", err)
				}
			}
			return runErr
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Design, "design", "single-master", "replicated design at N > 1: "+strings.Join(scaleout.Designs, " or "))
	fs.StringVar(&o.Backend, "backend", "sqlite", "back end of every node: sqlite or postgres (managed; in the node's cgroup)")
	fs.StringVar(&o.Engine, "engine", "writeset", "replication engine at N > 1: writeset (tandem's log) or physical (PostgreSQL's streaming replication; --backend postgres, single-master or hot-standby)")
	fs.StringVar(&nodes, "nodes", "1..4", "the Ns: N, N..M or a list (1,2,4)")
	fs.StringVar(&work, "workload", "tm1", benchWorkloadHelp())
	fs.StringVar(&mixes, "mix", "r80w20", "mixes, comma-separated (tm1: read-only, r80w20, r20w80)")
	fs.IntVar(&o.Scale, "subscribers", 10000, "the workload's scale (TM1 subscribers)")
	fs.IntVar(&o.ClientsPerNode, "clients-per-node", 8, "closed-loop clients per node (N x this in all)")
	fs.DurationVar(&o.Rampup, "rampup", 3*time.Second, "ramp-up before each measured window")
	fs.DurationVar(&o.Duration, "duration", 15*time.Second, "measured window of each run")
	fs.IntVar(&o.Rounds, "rounds", 1, "rounds (medians over them)")
	fs.StringVar(&o.Alone, "alone", scaleout.AloneRouted, "single-master on the physical engine: how N = 1 is reached: router (the primary alone behind the router on its own host, over the TLS hop every N >= 2 uses) or socket (the server's Unix socket, as a client on its host)")
	fs.StringVar(&o.ReadConsistency, "read-consistency", "", "the router's read_consistency at N > 1: "+strings.Join(config.ReadConsistencies, ", ")+" (default: the router's, session)")
	fs.StringVar(&labFlag, "lab", "cpu=0.25", "the emulated hosts: cpu=CORES per node, client=CORES, router=CORES, netns=true (see tandem up --lab)")
	fs.BoolVar(&asJSON, "json", false, "print the report (every round and host) as JSON")
	fs.StringVar(&csvFile, "csv", "", "also write the medians as CSV to this file")
	fs.StringVar(&htmlFile, "html", "", "also write an HTML page with the chart of X(N) per mix (dashed: N x X(1)) to this file")
	fs.StringVar(&dir, "dir", "", "keep the clusters' files and logs here (default: a temporary directory, removed)")
	fs.Float64Var(&o.MaxSteal, "max-steal", scaleout.DefaultMaxSteal, "measure a window again (twice at most) when the hypervisor took more than this many cores from the machine during it (steal); 0 keeps every window")
	fs.BoolVar(&o.NoQuiesce, "no-quiesce", false, "PostgreSQL: do not VACUUM the workload's tables and CHECKPOINT every node before each measured window (after-load work then falls into the first window)")
	return cmd
}
