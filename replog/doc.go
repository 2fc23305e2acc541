// Package replog is tandem's replication log: the node's own durable,
// gap-free, ordered record of writesets, one record per GSN.
//
// The package owns the files in its directory: append-only segment files
// named by their first GSN, a LOCK file, their recovery after a crash
// (truncating a torn tail), the fsync policy (strict with group commit,
// relaxed, adaptive), streaming reads for catch-up (ReadFrom), retention
// (TrimBefore) and counters for metrics (Stats).
//
// Records are opaque bytes to this package: the node stores
// writeset.AppendEncode output and ships the same bytes to standbys without
// re-encoding. The log must not touch back ends, the network, the
// coordinator or the writeset encoding; it decides nothing about safeness
// (that is the node's job), it only reports how durable its own records are.
//
// A Log is safe for concurrent use. See DESIGN.md for the file format, the
// recovery rules and the durability modes.
package replog
