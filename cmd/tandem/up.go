package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/secure"
)

func newUpCmd() *cobra.Command {
	var file, labFlag string
	var serveWait time.Duration
	cmd := &cobra.Command{
		Use:   "up -c FILE",
		Short: "Start every node and the router of a cluster file on this machine; Ctrl-C stops them all",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig(file)
			if err != nil {
				return err
			}
			log := fileLogger(cmd, c)
			// Issue the cluster's certificates once, before the processes
			// start (each would otherwise take the certificate directory's
			// lock in turn).
			ident, err := node.Identity(c, secure.AdminID, nil)
			if err != nil {
				return err
			}
			spec, err := labSpec(cmd, c, labFlag)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			lb, err := startLab(spec, log, out)
			if err != nil {
				return err
			}
			if lb != nil {
				defer lb.Close() // after lc.Stop: kills what a node left behind
				if c, err = mapLab(lb, c, out); err != nil {
					return err
				}
			}
			lvl := "" // the cluster file's log_level, unless the flag says
			if cmd.Flags().Changed("log-level") {
				lvl, _ = cmd.Flags().GetString("log-level")
			}
			lc, err := cluster.Start(cmd.Context(), cluster.Options{Config: c, Logger: log, LogLevel: lvl, Lab: lb})
			if err != nil {
				return err
			}
			defer lc.Stop()
			// A process that started is not yet one that serves: log in
			// through each (as `tandem status` does) before saying "up".
			failed := checkServing(cmd.Context(), c, ident, lc, serveWait)
			if len(failed) > 0 {
				fmt.Fprintf(out, "tandem: cluster %q (%s) FAILED to start: %d of %d processes do not serve; run directory %s\n", c.Name, c.Design, len(failed), len(lc.Procs), lc.RunDir)
			} else {
				fmt.Fprintf(out, "tandem: cluster %q (%s) is up; run directory %s\n", c.Name, c.Design, lc.RunDir)
			}
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			labCol := func(p *cluster.Proc) string { return "" }
			head := "  PROCESS\tKIND\tADDRESS\tPID\tLOG\tSTATE"
			if lb != nil {
				head = "  PROCESS\tKIND\tADDRESS\tPID\tCPU\tCGROUP\tLOG\tSTATE"
				labCol = func(p *cluster.Proc) string { return cores(p.Host.CPU) + "\t" + p.Cgroup + "\t" }
			}
			fmt.Fprintln(tw, head)
			for _, p := range lc.Procs {
				state := "serving"
				if e, bad := failed[p.Name]; bad {
					state = "FAILED: " + e
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s%s\t%s\n", p.Name, p.Kind, p.Addr, p.PID, labCol(p), p.Log, state)
			}
			tw.Flush()
			if len(failed) > 0 {
				fmt.Fprintln(out, "stopping every process; see the logs above")
				return fmt.Errorf("%w: %s", errNotServing, strings.Join(slices.Sorted(maps.Keys(failed)), ", "))
			}
			fmt.Fprintf(out, "connect with:\n  psql %q\n", lc.DSN())
			if u := lc.UnixDSN(); u != "" {
				fmt.Fprintf(out, "  psql %q   (Unix socket, from this host)\n", u)
			}
			if c.Security.InterNode == "mtls" && c.TLS.Cert != "" {
				fmt.Fprintf(out, "inter-node channels: mutual TLS (certificates in %s); clients get the certificate of [tls] cert\n", c.Security.CertDir)
			} else if c.Security.InterNode == "mtls" {
				fmt.Fprintf(out, "inter-node channels: mutual TLS (certificates in %s; verify the server with sslrootcert=%s sslmode=verify-full)\n",
					c.Security.CertDir, secure.CACertFile(c.Security.CertDir))
			} else {
				fmt.Fprintln(out, "inter-node channels: NOT encrypted (security.inter_node = \"none\")")
			}
			fmt.Fprintf(out, "Ctrl-C (or `tandem down -c %s` elsewhere) stops everything.\n", file)
			<-cmd.Context().Done()
			fmt.Fprintln(os.Stderr, "tandem: stopping the cluster")
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	cmd.Flags().StringVar(&labFlag, "lab", "", labFlagHelp)
	cmd.Flags().DurationVar(&serveWait, "serve-wait", 20*time.Second, "how long each process may take to serve a login after it started")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// errNotServing means a process of `tandem up` started but did not serve.
var errNotServing = errors.New("processes not serving")

// checkServing logs in through every process and runs SELECT 1, retrying
// until timeout; it returns the processes that never served, with the
// last error of each.
func checkServing(ctx context.Context, c *config.Cluster, ident *secure.Identity, lc *cluster.Local, timeout time.Duration) map[string]string {
	user, pass := c.InternalUser()
	failed := map[string]string{}
	deadline := time.Now().Add(timeout)
	for _, p := range lc.Procs {
		server := p.Name
		if p.Kind == "router" {
			server = secure.RouterID
		}
		for {
			pr := probe{Addr: p.Addr}
			if p.Kind == "witness" {
				// The witness speaks Raft (mutual TLS with voters only),
				// not PostgreSQL: its listener accepting is what serving is.
				pr.Healthy, pr.Error = tcpAnswers(ctx, p.Addr)
			} else {
				pingPG(ctx, &pr, user, pass, clientTLS(c, ident, server))
			}
			if pr.Healthy {
				delete(failed, p.Name)
				break
			}
			failed[p.Name] = pr.Error
			if time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-p.Done():
				failed[p.Name] = "process exited: " + pr.Error
				deadline = time.Now() // nothing will serve; report at once
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return failed
}

// runDirFlag is the global --run-dir: it overrides the cluster file's
// run_dir in every command (tandem up passes it on to the processes it
// starts, so that they find the certificates and data it made there).
var runDirFlag string

// loadConfig is config.Load with --run-dir applied.
func loadConfig(file string) (*config.Cluster, error) {
	c, err := config.Load(file)
	if err != nil || runDirFlag == "" {
		return c, err
	}
	c.RunDir = runDirFlag
	return reload(c)
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

// tcpAnswers reports whether addr accepts a TCP connection.
func tcpAnswers(ctx context.Context, addr string) (bool, string) {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, err.Error()
	}
	conn.Close()
	return true, ""
}
