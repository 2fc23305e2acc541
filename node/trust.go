package node

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/secure"
)

// Members lists every identity of the cluster with the hosts its
// listeners answer on: the nodes, the witness, the router and the command
// line.
func Members(c *config.Cluster) []secure.Member {
	hosts := func(addrs ...string) []string {
		var hs []string
		for _, a := range addrs {
			if h, _, err := net.SplitHostPort(a); err == nil && h != "" {
				hs = append(hs, h)
			}
		}
		return hs
	}
	var ms []secure.Member
	for _, n := range c.Nodes {
		ms = append(ms, secure.Member{ID: n.ID, Hosts: hosts(n.Listen, n.Repl, n.Metrics, n.Raft)})
	}
	if w := c.Witness; w != nil {
		ms = append(ms, secure.Member{ID: w.ID, Hosts: hosts(w.RaftListen, w.Metrics)})
	}
	r := secure.Member{ID: secure.RouterID}
	if c.Router != nil {
		r.Hosts = hosts(c.Router.Listen, c.Router.ReadListen, c.Router.Metrics)
	}
	return append(ms, r, secure.Member{ID: secure.AdminID})
}

// Identity loads the credentials of id (a node id, "router" or "admin") for
// the cluster's inter-node channels; nil when inter_node = "none". A
// cluster on one machine (every address loopback) gets its CA and
// certificates issued on first use; a cluster across hosts must have them
// issued once with `tandem certs` and copied to every host.
func Identity(c *config.Cluster, id string, log *slog.Logger) (*secure.Identity, error) {
	if c.Security.InterNode != "mtls" {
		return nil, nil
	}
	if c.AllLoopback() {
		issued, err := secure.Issue(c.Security.CertDir, Members(c), false)
		if err != nil {
			return nil, fmt.Errorf("issuing the cluster's certificates in %s: %w", c.Security.CertDir, err)
		}
		if len(issued) > 0 && log != nil {
			log.Info("issued cluster certificates", "dir", c.Security.CertDir, "for", issued)
		}
	}
	ident, err := secure.Load(c.Security.CertDir, id)
	if err != nil {
		return nil, fmt.Errorf("%w (field security.cert_dir)", err)
	}
	return ident, nil
}

// AdminToken resolves the admin API's token (created on first use when it
// is the default file reference).
func AdminToken(c *config.Cluster, create bool) (string, error) {
	ref := c.Security.AdminToken
	if def := "file:" + secure.TokenFile(c.Security.CertDir); ref == def && create {
		return secure.EnsureToken(secure.TokenFile(c.Security.CertDir))
	}
	t, _, err := secure.Resolve(ref)
	if err != nil {
		return "", fmt.Errorf("field security.admin_token: %w", err)
	}
	return t, nil
}
