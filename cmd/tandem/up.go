package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/secure"
)

func newUpCmd() *cobra.Command {
	var file, runDir string
	cmd := &cobra.Command{
		Use:   "up -c FILE",
		Short: "Start every node and the router of a cluster file on this machine; Ctrl-C stops them all",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger(cmd)
			c, err := config.Load(file)
			if err != nil {
				return err
			}
			if runDir != "" {
				c.RunDir = runDir
				if c, err = reload(c); err != nil {
					return err
				}
			}
			// Issue the cluster's certificates once, before the processes
			// start (each would otherwise take the certificate directory's
			// lock in turn).
			if _, err := node.Identity(c, secure.AdminID, nil); err != nil {
				return err
			}
			lvl, _ := cmd.Flags().GetString("log-level")
			lc, err := cluster.Start(cmd.Context(), cluster.Options{Config: c, Logger: log, LogLevel: lvl})
			if err != nil {
				return err
			}
			defer lc.Stop()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "tandem: cluster %q (%s) is up; run directory %s\n", c.Name, c.Design, lc.RunDir)
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  PROCESS\tKIND\tADDRESS\tPID\tLOG")
			for _, p := range lc.Procs {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", p.Name, p.Kind, p.Addr, p.PID, p.Log)
			}
			tw.Flush()
			fmt.Fprintf(out, "connect with:\n  psql %q\n", lc.DSN())
			if c.Security.InterNode == "mtls" {
				fmt.Fprintf(out, "inter-node channels: mutual TLS (certificates in %s; verify the server with sslrootcert=%s sslmode=verify-full)\n",
					c.Security.CertDir, secure.CACertFile(c.Security.CertDir))
			} else {
				fmt.Fprintln(out, "inter-node channels: NOT encrypted (security.inter_node = \"none\")")
			}
			fmt.Fprintln(out, "Ctrl-C stops everything.")
			<-cmd.Context().Done()
			fmt.Fprintln(os.Stderr, "tandem: stopping the cluster")
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	cmd.Flags().StringVar(&runDir, "run-dir", "", "override run_dir (logs and data)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// reload re-applies defaults after an override (node data dirs follow run_dir).
func reload(c *config.Cluster) (*config.Cluster, error) {
	data, err := os.ReadFile(c.File)
	if err != nil {
		return nil, err
	}
	nc, err := config.ParseWithRunDir(c.File, data, c.RunDir)
	if err != nil {
		return nil, err
	}
	return nc, nil
}
