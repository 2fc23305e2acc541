package main

import (
	"encoding/json"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/bench/overhead"
)

func newOverheadCmd() *cobra.Command {
	var o overhead.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "overhead",
		Short: "pgbench directly vs through tandem vs through HAProxy, alternating, with ratios to direct",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger(cmd)
			if o.Dir == "" {
				d, err := os.MkdirTemp("", "tandem-overhead-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				o.Dir = d
			}
			o.Progress, o.Logger = os.Stderr, log
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			rep, err := overhead.Run(cmd.Context(), exe, o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			rep.Print(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().IntVar(&o.Scale, "scale", 10, "pgbench scale")
	cmd.Flags().IntVar(&o.Clients, "clients", 8, "pgbench clients")
	cmd.Flags().DurationVar(&o.Duration, "duration", 10*time.Second, "length of each measurement")
	cmd.Flags().IntVar(&o.Rounds, "rounds", 3, "alternation rounds")
	cmd.Flags().StringSliceVar(&o.Tests, "tests", []string{"select-only", "read-write"}, "select-only, read-write")
	cmd.Flags().StringVar(&o.Dir, "dir", "", "work directory (default: temporary)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
