package node

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/secure"
)

// CoordinatorConfig is the coordinator configuration of voter id (a node or
// the witness) from the cluster file. The first node is the primary of
// epoch 1, as the replication agent assumes without a role.json.
func CoordinatorConfig(c *config.Cluster, id string, ident *secure.Identity, log *slog.Logger, reg prometheus.Registerer) (coordinator.Config, error) {
	var voters []coordinator.Member
	self := false
	for _, v := range c.Voters() {
		m := coordinator.Member{ID: v.ID, RaftAddr: v.RaftListen}
		if v.Witness {
			m.Role = coordinator.RoleWitness
		}
		voters = append(voters, m)
		self = self || v.ID == id
	}
	var nonVoters []coordinator.Member
	for _, v := range c.NonVoters() {
		nonVoters = append(nonVoters, coordinator.Member{ID: v.ID, RaftAddr: v.RaftListen})
		self = self || v.ID == id
	}
	if !self {
		return coordinator.Config{}, fmt.Errorf("%w: %s: %q is not a member of the coordinator (raft_listen, witness)", config.ErrInvalid, c.File, id)
	}
	dir := filepath.Join(c.RunDir, "raft", id)
	if w := c.Witness; w != nil && w.ID == id {
		dir = w.DataDir
	}
	// Multi-master: the certifier leads from the witness, a host without
	// clients, when there is one (coordinator/DESIGN.md, "Where the
	// certifier leads").
	prefer := ""
	if c.MultiMaster() && c.Witness != nil {
		prefer = c.Witness.ID
	}
	return coordinator.Config{
		PreferLeader: prefer,
		ID:           id, Dir: dir, Voters: voters, NonVoters: nonVoters, Identity: ident,
		InitialPrimary: c.Nodes[0].ID, InitialEpoch: 1,
		Safeness: c.Repl.Safeness, Automatic: c.Repl.Failover == "automatic",
		Lease: c.Repl.Lease.Duration, Grace: c.Repl.LeaseGrace.Duration,
		Logger: log, Registerer: reg,
	}, nil
}

// startCoordinator starts this node's member of the coordinator when the
// cluster runs it: a voter (the first 3 or 5 nodes, or 2 or 4 with a
// witness) or a non-voter (the other nodes of a single-master cluster,
// which hold the map and follow it without voting). With
// failover = "manual" (the default) the group keeps the map and the
// status; nothing acts on a lapsed lease. With "automatic" the replication
// agent holds the lease and follows the map (coordinate.go).
func startCoordinator(c *config.Cluster, id string, ident *secure.Identity, log *slog.Logger, reg prometheus.Registerer) (*coordinator.Coordinator, error) {
	if !c.Coordinated() {
		return nil, nil
	}
	cfg, err := CoordinatorConfig(c, id, ident, log, reg)
	if err != nil {
		return nil, err
	}
	co, err := coordinator.Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("node %s: coordinator (field nodes.raft_listen): %w", id, err)
	}
	return co, nil
}
