// Package multimaster is the node side of the multi-master design (issue
// 15; seed 003's Tashkent-style system): every node executes transactions
// on its own snapshot; at COMMIT an update transaction's writeset and
// snapshot GSN go to the certifier on the coordinator's Raft group, which
// aborts it (first committer wins) or gives it the next GSN; every node,
// the origin included, applies the certified writesets in GSN order.
//
// It owns a node's certification requests, its apply loop over the
// certifier's log, its applied GSN (read consistency for the router), the
// early abort of local transactions that block a certified writeset, and
// re-seeding a node that fell behind the certifier's window. It must not
// decide commits (the certifier does, in package certifier, replicated by
// package coordinator), speak to clients (pgwire) or open back ends (node
// does, and hands it a Store).
package multimaster
