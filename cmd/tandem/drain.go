package main

import (
	"fmt"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/router"
)

// newDrainCmd is `tandem drain NODE` (on) and `tandem undrain NODE` (off):
// the router's admin address (router.metrics) marks the node draining, so
// no new sessions or transactions go there while those running finish.
func newDrainCmd(on bool) *cobra.Command {
	var file string
	use, short, path := "drain NODE -c FILE", "Send no new sessions or transactions to NODE (running ones finish)", "/admin/drain"
	if !on {
		use, short, path = "undrain NODE -c FILE", "Put a drained NODE back into rotation", "/admin/undrain"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadCluster(file)
			if err != nil {
				return err
			}
			if _, ok := c.Node(args[0]); !ok {
				return fmt.Errorf("no node %q in %s", args[0], c.File)
			}
			if c.Router == nil || c.Router.Metrics == "" {
				return fmt.Errorf("%s: field router.metrics: missing; drain goes through the router's admin address, add metrics = \"127.0.0.1:PORT\" to [router]", c.File)
			}
			var st []router.NodeStatus
			if err := adminPost(routerAdmin(c), path, url.Values{"node": {args[0]}}, &st); err != nil {
				return err
			}
			for _, n := range st {
				if n.ID == args[0] {
					state := "draining: no new sessions or transactions go there; running ones finish"
					if !n.Draining {
						state = "in rotation"
					}
					fmt.Fprintf(cmd.OutOrStdout(), "node %s: %s (%d transactions open there)\n", n.ID, state, n.Active)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
