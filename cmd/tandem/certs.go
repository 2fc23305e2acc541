package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/secure"
)

// newCertsCmd issues the cluster CA and the certificates of every node,
// the router and the command line.
func newCertsCmd() *cobra.Command {
	var file string
	var renew bool
	cmd := &cobra.Command{
		Use:   "certs -c FILE",
		Short: "Issue the cluster's CA and a certificate per node, router and command line (mutual TLS between tandem processes)",
		Long: `certs creates security.cert_dir (default RUN_DIR/certs) with a CA (ca.crt,
ca.key) and one certificate per identity: each node id, "router" and "admin"
(the command line). Each certificate names its identity and the hosts of its
listeners, so PostgreSQL clients can connect with sslmode=verify-full and
sslrootcert=CERT_DIR/ca.crt. Existing certificates are kept unless --renew.
Copy the directory to every host of the cluster (keep ca.key on one).
A cluster whose addresses are all loopback issues them itself at first start.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadCluster(file)
			if err != nil {
				return err
			}
			issued, err := secure.Issue(c.Security.CertDir, node.Members(c), renew)
			if err != nil {
				return err
			}
			tok, err := node.AdminToken(c, true)
			if err != nil {
				return err
			}
			_ = tok
			out := cmd.OutOrStdout()
			if len(issued) == 0 {
				fmt.Fprintf(out, "tandem: %s already holds every certificate (use --renew to re-issue them)\n", c.Security.CertDir)
			} else {
				fmt.Fprintf(out, "tandem: issued certificates for %s in %s\n", strings.Join(issued, ", "), c.Security.CertDir)
			}
			fmt.Fprintf(out, "  CA:          %s (clients: sslrootcert=%s sslmode=verify-full)\n", secure.CACertFile(c.Security.CertDir), secure.CACertFile(c.Security.CertDir))
			fmt.Fprintf(out, "  admin token: %s\n", c.Security.AdminToken)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	cmd.Flags().BoolVar(&renew, "renew", false, "re-issue every certificate from the existing CA (then restart the processes one by one)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// newPasswdCmd prints a SCRAM-SHA-256 verifier for a password, for
// users[].password in the cluster file.
func newPasswdCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "passwd",
		Short: "Print a SCRAM-SHA-256 verifier of a password (read from the terminal or stdin) for users[].password",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var pw string
			if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
				fmt.Fprint(os.Stderr, "password: ")
				b, err := term.ReadPassword(fd)
				fmt.Fprintln(os.Stderr)
				if err != nil {
					return err
				}
				pw = string(b)
			} else {
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && line == "" {
					return fmt.Errorf("read the password from stdin: %w", err)
				}
				pw = strings.TrimRight(line, "\r\n")
			}
			if pw == "" {
				return fmt.Errorf("empty password")
			}
			v, err := pgwire.SCRAMVerifier(pw)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), v)
			return nil
		},
	}
}
