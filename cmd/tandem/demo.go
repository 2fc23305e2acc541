package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
)

func newDemoCmd() *cobra.Command {
	var (
		subscribers, clients int
		duration, rampup     time.Duration
		mix, out, dir        string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The main job on the embedded default: start a SQLite cluster, load TM1, run R80W20, report, stop",
		Long: `demo starts a standalone cluster on the embedded SQLite back end (one node
process), loads a small TM1 (TATP) population, runs the R80W20 mix with a live
progress line, prints the summary table, writes result.json, timeline.csv and
report.html, and stops everything it started.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger(cmd)
			ctx := cmd.Context()
			if dir == "" {
				d, err := os.MkdirTemp("", "tandem-demo-")
				if err != nil {
					return err
				}
				dir = d
				defer os.RemoveAll(d)
			}
			if out == "" {
				out = "tandem-demo-report"
			}
			port, err := postgres.FreePort()
			if err != nil {
				return err
			}
			file := filepath.Join(dir, "demo.toml")
			text := fmt.Sprintf(`cluster = "demo"
design = "standalone"
run_dir = %q
[[users]]
name = "tandem"
password = "tandem"
[[nodes]]
id = "n1"
listen = "127.0.0.1:%d"
backend = "sqlite"
`, filepath.Join(dir, "run"), port)
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				return err
			}
			c, err := config.Load(file)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "tandem demo: starting a standalone SQLite cluster in %s\n", dir)
			lc, err := cluster.Start(ctx, cluster.Options{Config: c, Logger: log, LogLevel: "warn"})
			if err != nil {
				return err
			}
			defer lc.Stop()
			fmt.Fprintf(os.Stderr, "tandem demo: cluster up at %s\n", bench.RedactDSN(lc.DSN()))
			w, err := bench.Lookup("tm1")
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "tandem demo: loading TM1 with %d subscribers\n", subscribers)
			if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: lc.DSN(), Scale: subscribers, Drop: true, Progress: os.Stderr, Logger: log}); err != nil {
				return fmt.Errorf("load: %w", err)
			}
			fmt.Fprintf(os.Stderr, "tandem demo: running %s with %d clients: %s ramp-up, %s measured\n", mix, clients, rampup, duration)
			res, err := bench.Run(ctx, bench.RunOptions{Workload: w, DSN: lc.DSN(), Mix: mix, Clients: clients, Rampup: rampup, Duration: duration, Scale: subscribers, Progress: os.Stderr, Logger: log, TandemVersion: version})
			if err != nil && !errors.Is(err, bench.ErrInterrupted) {
				return fmt.Errorf("run: %w", err)
			}
			if res == nil {
				return err
			}
			if perr := res.PrintSummary(cmd.OutOrStdout()); perr != nil {
				return perr
			}
			if werr := res.WriteFiles(out); werr != nil {
				return werr
			}
			abs, _ := filepath.Abs(filepath.Join(out, "report.html"))
			fmt.Fprintf(cmd.OutOrStdout(), "\nreport: %s (also result.json and timeline.csv in %s)\n", abs, out)
			return err
		},
	}
	cmd.Flags().IntVar(&subscribers, "subscribers", 10000, "TM1 population size")
	cmd.Flags().IntVar(&clients, "clients", 8, "concurrent clients")
	cmd.Flags().DurationVar(&duration, "duration", 30*time.Second, "measured window")
	cmd.Flags().DurationVar(&rampup, "rampup", 5*time.Second, "ramp-up before the measured window")
	cmd.Flags().StringVar(&mix, "mix", "r80w20", "r80w20, r20w80 or read-only")
	cmd.Flags().StringVar(&out, "out", "", "directory for result.json, timeline.csv and report.html (default ./tandem-demo-report)")
	cmd.Flags().StringVar(&dir, "dir", "", "keep the cluster's data and logs in this directory (default: a temporary one, removed)")
	return cmd
}
