package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/multimaster"
	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/physical"
	"github.com/tandemdb/tandem/replication"
	"github.com/tandemdb/tandem/secure"
)

// adminPost calls a node's admin endpoint and decodes its JSON answer.
func adminPost(n *config.Node, path string, q url.Values, out any) error {
	if n.Metrics == "" {
		return fmt.Errorf("node %s has no metrics (admin) address in the cluster file", n.ID)
	}
	cl := adminClient(n, 60*time.Second)
	req, _ := http.NewRequest(http.MethodPost, adminURL(n, path)+"?"+q.Encode(), nil)
	req.Header.Set("Content-Type", "application/json")
	if cliToken != "" {
		req.Header.Set("Authorization", "Bearer "+cliToken)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.ID, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("node %s: %s", n.ID, e.Error)
		}
		return fmt.Errorf("node %s: %s: %s", n.ID, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

type nodeStatus struct {
	ID          string              `json:"id"`
	Role        string              `json:"role"`
	Repl        *replication.Status `json:"replication"`
	Physical    *physical.Status    `json:"physical,omitempty"`
	Coordinator *coordinator.Status `json:"coordinator,omitempty"`
	MultiMaster *multimaster.Status `json:"multi_master,omitempty"`
}

// cliToken is the admin token the command line sends (TANDEM_ADMIN_TOKEN,
// else the cluster file's security.admin_token); cliCluster the cluster
// file, for admin URLs (https off loopback) and the CA that verifies them.
var (
	cliToken   string
	cliCluster *config.Cluster
)

// adminClient is an HTTP client for node's admin address.
func adminClient(n *config.Node, timeout time.Duration) *http.Client {
	cl := &http.Client{Timeout: timeout}
	if cliCluster != nil && cliCluster.AdminTLS(n.Metrics) {
		if ident, err := node.Identity(cliCluster, secure.AdminID, nil); err == nil && ident != nil {
			cl.Transport = &http.Transport{TLSClientConfig: ident.ClientTLS(n.ID)}
		}
	}
	return cl
}

// adminURL is path on node's admin address.
func adminURL(n *config.Node, path string) string {
	if cliCluster == nil {
		return "http://" + n.Metrics + path
	}
	return cliCluster.AdminURL(n.Metrics, path)
}

// loadCluster reads the cluster file and the admin token.
func loadCluster(file string) (*config.Cluster, error) {
	c, err := loadConfig(file)
	if err != nil {
		return nil, err
	}
	if c, err = labMapped(c); err != nil {
		return nil, err
	}
	cliCluster = c
	if t := os.Getenv("TANDEM_ADMIN_TOKEN"); t != "" {
		cliToken = t
		return c, nil
	}
	if cliToken, err = node.AdminToken(c, false); err != nil && !errors.Is(err, secure.ErrSecretRef) {
		return nil, err
	}
	return c, nil
}

// errPrimaryAnswers: promote without --force while the primary is up.
var errPrimaryAnswers = errors.New("the current primary answers")

func newPromoteCmd() *cobra.Command {
	var file string
	var force bool
	cmd := &cobra.Command{
		Use:   "promote NODE -c FILE [--force]",
		Short: "Make a standby the primary when the primary is gone (--force: fence a primary that still answers first); reports GSNs lost",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadCluster(file)
			if err != nil {
				return err
			}
			n, ok := c.Node(args[0])
			if !ok {
				return fmt.Errorf("no node %q in %s", args[0], c.File)
			}
			q := url.Values{}
			if old, _, err := roles(c); err == nil && old.ID != n.ID {
				if !force {
					return fmt.Errorf("%w: node %s is the primary; use `tandem switchover -c %s --to %s` (no transaction lost), or `tandem promote --force` to fence it and take over",
						errPrimaryAnswers, old.ID, c.File, n.ID)
				}
				var f struct {
					LastGSN uint64 `json:"last_gsn"`
					LastLSN string `json:"last_lsn"`
				}
				if err := adminPost(old, "/admin/fence", nil, &f); err != nil {
					// Gone between the two calls: as if it had not answered.
					fmt.Fprintf(cmd.ErrOrStderr(), "note: could not fence the primary %s (%v); promoting anyway\n", old.ID, err)
				} else if f.LastLSN != "" {
					// The physical engine: the old primary's server is
					// stopped; the standby replays up to its last WAL.
					fmt.Fprintf(cmd.OutOrStdout(), "fenced the primary %s (its server stopped) at LSN %s\n", old.ID, f.LastLSN)
					q.Set("fenced_lsn", f.LastLSN)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "fenced the primary %s at GSN %d\n", old.ID, f.LastGSN)
					q.Set("fenced_gsn", strconv.FormatUint(f.LastGSN, 10))
				}
			}
			var res struct {
				replication.PromoteResult
				LastLSN string `json:"last_lsn"`
			}
			if err := adminPost(n, "/admin/promote", q, &res); err != nil {
				return err
			}
			if res.LastLSN != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "node %s is the primary of epoch %d at LSN %s\n", res.Node, res.Epoch, res.LastLSN)
				if q.Get("fenced_lsn") != "" {
					fmt.Fprintln(cmd.OutOrStdout(), "lost: nothing (the new primary replayed the fenced primary's WAL to its end)")
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), "lost: unknown (the old primary did not answer; at 2-safe no acknowledged commit is missing, at 1-safe some may be)")
				}
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "node %s is the primary of epoch %d at GSN %d\n", res.Node, res.Epoch, res.LastGSN)
			}
			if c.Repl.Failover == "automatic" {
				// The coordinator handed the role over (once the old
				// primary's lease was released or had lapsed) and every
				// node follows its map; its history counts what was lost.
				fmt.Fprintf(cmd.OutOrStdout(), "the coordinator made the change; `tandem status -c %s` shows the map and its history\n", c.File)
				return nil
			}
			if res.LastLSN == "" {
				fmt.Fprintln(cmd.OutOrStdout(), lossReport(res.PromoteResult))
			}
			// Other nodes (the fenced primary too) follow the new primary;
			// upto lets the old primary answer the commits still waiting.
			for i := range c.Nodes {
				o := &c.Nodes[i]
				if o.ID == n.ID {
					continue
				}
				fq := url.Values{"primary": {n.ID}, "upto": {strconv.FormatUint(res.LastGSN, 10)}}
				if err := adminPost(o, "/admin/follow", fq, nil); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: %v (it will follow %s when it comes back)\n", err, n.ID)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	cmd.Flags().BoolVar(&force, "force", false, "promote even though the primary answers: fence it first (use switchover for a planned role swap)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// lossReport says how many GSNs the promotion lost: exact when the old
// primary was fenced and gave its last GSN, a lower bound when only its
// last shipped GSN was heard, and "unknown" when nothing was heard.
func lossReport(res replication.PromoteResult) string {
	switch {
	case res.PrimaryKnown:
		return fmt.Sprintf("lost: %d GSNs (the old primary was fenced at GSN %d)", res.LostGSNs, res.PrimaryGSN)
	case res.PrimaryGSN == 0:
		return "lost: unknown (this node never heard the old primary's last GSN; at 2-safe no acknowledged commit is among what it lacks, at 1-safe some may be)"
	default:
		return fmt.Sprintf("lost: unknown, at least %d GSNs (the old primary was last heard at GSN %d; it may have committed more before it stopped)", res.LostGSNs, res.PrimaryGSN)
	}
}

func newSwitchoverCmd() *cobra.Command {
	var file, to string
	cmd := &cobra.Command{
		Use:   "switchover -c FILE [--to NODE]",
		Short: "Planned role swap: the primary hands over to a caught-up standby; no transaction is lost",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadCluster(file)
			if err != nil {
				return err
			}
			primary, standbys, err := roles(c)
			if err != nil {
				return err
			}
			if to == "" {
				if len(standbys) == 0 {
					return fmt.Errorf("no standby is up to take over")
				}
				to = standbys[0].ID
			}
			next, ok := c.Node(to)
			if !ok {
				return fmt.Errorf("no node %q in %s", to, c.File)
			}
			var d struct {
				LastGSN uint64 `json:"last_gsn"`
				LastLSN string `json:"last_lsn"`
			}
			if err := adminPost(primary, "/admin/demote", url.Values{"to": {to}}, &d); err != nil {
				return err
			}
			var res struct {
				Epoch   uint64 `json:"epoch"`
				LastGSN uint64 `json:"last_gsn"`
				LastLSN string `json:"last_lsn"`
			}
			pq := url.Values{"reason": {"switchover"}}
			if d.LastLSN != "" {
				// The physical engine: promote once the standby has
				// replayed the old primary's shutdown checkpoint.
				pq.Set("fenced_lsn", d.LastLSN)
			}
			if err := adminPost(next, "/admin/promote", pq, &res); err != nil {
				return fmt.Errorf("promote %s: %w (the old primary %s is fenced; promote a node by hand)", to, err, primary.ID)
			}
			for i := range c.Nodes {
				if c.Repl.Failover == "automatic" {
					break // every node follows the coordinator's map
				}
				o := &c.Nodes[i]
				if o.ID != to {
					if err := adminPost(o, "/admin/follow", url.Values{"primary": {to}, "upto": {strconv.FormatUint(res.LastGSN, 10)}}, nil); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "note: %v\n", err)
					}
				}
			}
			if d.LastLSN != "" && primary.DSN != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "switchover done: %s is the primary of epoch %d at LSN %s (the old primary %s was fenced at LSN %s: its server is external, so make it a standby of %s (pg_rewind, standby.signal, start; docs/operations.md \"External servers\") and its node takes it up)\n", to, res.Epoch, res.LastLSN, primary.ID, d.LastLSN, to)
				return nil
			}
			if d.LastLSN != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "switchover done: %s is the primary of epoch %d at LSN %s (the old primary %s stopped at LSN %s and follows it)\n", to, res.Epoch, res.LastLSN, primary.ID, d.LastLSN)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "switchover done: %s is the primary of epoch %d at GSN %d (the old primary %s stopped at GSN %d and follows it)\n", to, res.Epoch, res.LastGSN, primary.ID, d.LastGSN)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	cmd.Flags().StringVar(&to, "to", "", "standby to hand over to (default: the first one up)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// roles asks every node for its role.
func roles(c *config.Cluster) (*config.Node, []*config.Node, error) {
	var primary *config.Node
	var standbys []*config.Node
	for i := range c.Nodes {
		n := &c.Nodes[i]
		var st nodeStatus
		if n.Metrics == "" || getJSON(n, "/status", &st) != nil {
			continue
		}
		if st.Role == "primary" {
			primary = n
		} else {
			standbys = append(standbys, n)
		}
	}
	if primary == nil {
		return nil, standbys, fmt.Errorf("no primary is up: use `tandem promote NODE` after a failure")
	}
	return primary, standbys, nil
}

// setMultiMaster sets apply_batch_delay on every node of a multi-master
// cluster (each applies on its own; a node that is down keeps its file's
// value when it starts).
func setMultiMaster(cmd *cobra.Command, c *config.Cluster, args []string) error {
	q := url.Values{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k != "apply_batch_delay" {
			return fmt.Errorf("%q: a multi-master cluster takes apply_batch_delay=DURATION (e.g. apply_batch_delay=25ms) at run time", a)
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > multimaster.MaxApplyBatchDelay {
			return fmt.Errorf("%q: apply_batch_delay must be a duration between 0 and %s", a, multimaster.MaxApplyBatchDelay)
		}
		q.Set(k, d.String())
	}
	var failed []string
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if err := adminPost(n, "/admin/set", q, nil); err != nil {
			failed = append(failed, err.Error())
			continue
		}
		fmt.Fprintf(cmd.OutOrStdout(), "node %s: %s\n", n.ID, strings.Join(args, " "))
	}
	if len(failed) > 0 {
		return fmt.Errorf("not set on every node (a node that is down takes the cluster file's value when it starts): %s", strings.Join(failed, "; "))
	}
	return nil
}

func newSetCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "set -c FILE safeness=LEVEL durability=LEVEL | apply_batch_delay=DURATION",
		Short: "Change safeness and durability (or a multi-master cluster's apply_batch_delay) on a running cluster (no restart)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadCluster(file)
			if err != nil {
				return err
			}
			if c.MultiMaster() {
				return setMultiMaster(cmd, c, args)
			}
			q := url.Values{}
			for _, a := range args {
				k, v, ok := strings.Cut(a, "=")
				switch {
				case !ok:
					return fmt.Errorf("%q: write name=value (safeness=2-safe-visible, durability=strict)", a)
				case k == "safeness":
					if err := config.ValidateSafeness(v); err != nil {
						return err
					}
				case k == "durability":
					if _, err := config.ParseDurability(v); err != nil {
						return err
					}
				case k == "apply_batch_delay":
					return fmt.Errorf("%q: apply_batch_delay is a multi-master setting; %s is %s", a, file, c.Design)
				default:
					return fmt.Errorf("%q: only safeness and durability can be set at run time", k)
				}
				q.Set(k, v)
			}
			primary, standbys, err := roles(c)
			if err != nil {
				return err
			}
			if err := adminPost(primary, "/admin/set", q, nil); err != nil {
				return err
			}
			if c.Physical() {
				// The physical engine: each standby keeps the level for
				// when it is promoted.
				for _, s := range standbys {
					if err := adminPost(s, "/admin/set", q, nil); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "note: %v (it takes the level at its next promote only if set again)\n", err)
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node %s (primary): %s\n", primary.ID, strings.Join(args, " "))
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
