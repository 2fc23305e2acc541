// Package coordinator owns the cluster map of a tandem cluster and the
// decisions that change it: which member is the primary, the epoch, the
// primary's lease, what each standby has acknowledged, and when the primary
// is replaced. The map lives in a Raft group (hashicorp/raft, logs in
// raft-boltdb) whose voters are the nodes and an optional witness; Raft
// traffic runs over mutual TLS with the cluster's certificates (package
// secure), so only members can join or vote.
//
// The package must not touch a node's back end, its replication stream, the
// router or the wire protocol, and must not read the cluster file: callers
// hand it a Config. It decides and records; the node acts on the map
// (acknowledges only under a valid lease, promotes itself when the map names
// it), and the router follows Watch.
package coordinator
