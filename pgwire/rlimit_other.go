//go:build !unix

package pgwire

// fdSoftLimit is a guess where there is no RLIMIT_NOFILE.
func fdSoftLimit() uint64 { return 1024 }
