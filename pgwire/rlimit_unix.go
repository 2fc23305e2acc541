//go:build unix

package pgwire

import "syscall"

// fdSoftLimit is the process's soft limit on open files (1024 if unknown).
func fdSoftLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1024
	}
	return rl.Cur
}
