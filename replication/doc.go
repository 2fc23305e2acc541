// Package replication is tandem's primary-copy replication core: the
// agent that, on the primary, assigns GSNs, logs writesets, ships them and
// waits for the standbys' acknowledgements per the safeness level, and, on
// a standby, receives, logs, applies and acknowledges them; plus its role
// changes (promote, fence, demote, follow), its side of automatic failover
// (the coordinator's lease on the commit path, degraded marks, the map
// watch) and its admin endpoints.
//
// It owns the replication stream protocol, the node's role.json and the
// replication log's use. It must not open or start back ends (node does,
// and hands it a Store), speak to clients (pgwire), route sessions
// (router) or decide who the primary is (coordinator decides; the agent
// acts on the map).
package replication
