package node

import "time"

// handshakeTimeout bounds how long a peer that connected to the
// replication port may take to send its hello: a silent connection must
// not hold a descriptor for ever.
const handshakeTimeout = 10 * time.Second

// FileLimit is the process's limit on open files (RLIMIT_NOFILE), as
// reported on /status and by `tandem status --json`.
type FileLimit struct {
	Soft uint64 `json:"soft"`
	Hard uint64 `json:"hard"`
}
