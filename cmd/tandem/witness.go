package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/node"
)

func newWitnessCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "witness -c FILE",
		Short: "Run the cluster's witness in the foreground: a coordinator vote with no data, so a pair keeps a quorum when one node dies",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger(cmd).With("process", "witness")
			c, err := config.Load(file)
			if err != nil {
				return err
			}
			if c.Witness == nil {
				return fmt.Errorf("%w: %s: field witness: missing; add a [witness] table with id and raft_listen", config.ErrInvalid, c.File)
			}
			ident, err := node.Identity(c, c.Witness.ID, log)
			if err != nil {
				return fmt.Errorf("witness: %w", err)
			}
			if ident == nil {
				return fmt.Errorf("%w: %s: field security.inter_node: the witness votes over mutual TLS only", config.ErrInvalid, c.File)
			}
			cfg, err := node.CoordinatorConfig(c, c.Witness.ID, ident, log, nil)
			if err != nil {
				return err
			}
			co, err := coordinator.Start(cfg)
			if err != nil {
				return err
			}
			defer co.Close()
			if os.Getenv("TANDEM_READY_FD") == "3" {
				f := os.NewFile(3, "ready")
				fmt.Fprintln(f, co.Addr())
				f.Close()
			}
			// Log each change of the map the witness applies: its log is
			// the coordinator's history when the nodes' are gone.
			for m := range co.Watch(cmd.Context()) {
				log.Info("cluster map", "epoch", m.Epoch, "primary", m.Primary, "lease_holder", m.Lease.Holder,
					"lease_seq", m.Lease.Seq, "lost", m.Lost, "index", m.Index)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
