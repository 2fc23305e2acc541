// Package certifier is the multi-master certifier of seed 003 (Tashkent):
// a deterministic state machine that decides, for each update transaction
// a node wants to commit, whether it commits (first committer wins under
// generalized snapshot isolation) and, if so, its GSN.
//
// A Request names the transaction's origin node, the GSN its snapshot
// reflects, the keys it wrote (table + primary-key bytes, KeysOf derives
// them from a writeset) and the writeset bytes. Certify aborts the request
// when a writeset committed after the snapshot wrote one of its keys
// (naming the table and key), and otherwise assigns the next GSN and
// records the writeset in a bounded window of recent commits, from which
// CommittedSince serves the replication log in GSN order. A request id
// makes certification idempotent: a retry gets the earlier decision.
//
// The package owns the decision rule, the window, the request encoding and
// the state's snapshot format. It must not do I/O beyond the io.Reader and
// io.Writer it is handed, read clocks or randomness, or know about Raft: the
// coordinator applies its Raft entries to a State (coordinator/cert.go), so
// every member holds the same state and the Raft commit is the durability
// point. Executing transactions and applying writesets belong to the node.
package certifier
