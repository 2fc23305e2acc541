package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/bench/trace"
)

// newBenchRecordCmd builds `tandem bench record`: `bench run` that also
// writes every statement the workload sends, with its timing, to --trace.
func newBenchRecordCmd() *cobra.Command {
	f := &benchRunFlags{}
	cmd := newBenchRunCmdWith(f)
	cmd.Use = "record"
	cmd.Short = "Run a workload and record the statements it sends, with timing, to a trace file"
	cmd.Long = `Runs the workload exactly as 'tandem bench run' does (same flags, same
summary and files) and writes every statement its clients send to --trace:
JSON Lines, a header and then one line per statement with its client
(session), start offset and duration in µs, SQL, parameters and SQLSTATE.
'tandem bench replay' plays a trace back against any PostgreSQL-wire target.`
	cmd.Example = `  tandem bench record --workload tpcw --mix shopping --think 0 --clients 4 --rampup 0s --duration 10s --dsn ... --trace shopping.trace
  tandem bench replay --trace shopping.trace --clients 8 --dsn ...`
	cmd.Flags().StringVar(&f.trace, "trace", "", "trace file to write (required)")
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

// newBenchReplayCmd builds `tandem bench replay`: seed 002's testing client.
func newBenchReplayCmd() *cobra.Command {
	var (
		file   string
		opts   trace.ReplayOptions
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Replay a recorded trace against a PostgreSQL-wire target with C concurrent clients",
		Long: `Reads a trace written by 'tandem bench record', cuts each recorded client's
statements into transactions (BEGIN ... COMMIT/ROLLBACK, or one statement) and
replays them, in the order they started when recorded and as fast as they go,
on --clients connections: each client takes the next transaction when it is
free. Reports transactions and statements per second, transaction latency
percentiles and failed transactions by SQLSTATE (40001/40P01 are replayed up to
--retries times). Replay against a fresh load of the same population: ids the
server generated when recording are replayed as recorded.`,
		Example: `  tandem bench replay --trace shopping.trace --clients 8 --dsn postgres://tandem@127.0.0.1:5433/tandem`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := os.Open(file)
			if err != nil {
				return fmt.Errorf("--trace: %w", err)
			}
			defer in.Close()
			t, err := trace.Read(in)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := trace.Replay(ctx, t, opts)
			if res == nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if e := enc.Encode(res); e != nil {
					return e
				}
				return err
			}
			fmt.Fprintf(out, "replayed %s (%s, mix %s, %d recorded clients, %d statements in %.1fs) on %d clients\n",
				file, t.Header.Workload, t.Header.Mix, t.Header.Clients, len(t.Statements), res.RecordedS, res.Clients)
			fmt.Fprintf(out, "%d transactions, %d statements in %.2fs: %.1f tps, %.1f statements/s\n",
				res.Units, res.Statements, res.ElapsedS, res.TPS, res.StatementsPerS)
			fmt.Fprintf(out, "transaction latency ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", res.P50Ms, res.P90Ms, res.P99Ms, res.MaxMs)
			fmt.Fprintf(out, "failed transactions %d, retries %d\n", res.Failed, res.Retries)
			states := make([]string, 0, len(res.ErrorsBySQLState))
			for s := range res.ErrorsBySQLState {
				states = append(states, s)
			}
			sort.Strings(states)
			for _, s := range states {
				fmt.Fprintf(out, "  SQLSTATE %s: %d\n", s, res.ErrorsBySQLState[s])
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&file, "trace", "", "trace file written by tandem bench record (required)")
	fl.StringVar(&opts.DSN, "dsn", "", "target DSN (required)")
	fl.IntVar(&opts.Clients, "clients", 8, "concurrent replay clients, one connection each")
	fl.IntVar(&opts.Retries, "retries", 3, "times a transaction aborted with 40001 or 40P01 is replayed again")
	fl.BoolVar(&asJSON, "json", false, "print the result as JSON")
	_ = cmd.MarkFlagRequired("trace")
	_ = cmd.MarkFlagRequired("dsn")
	return cmd
}
