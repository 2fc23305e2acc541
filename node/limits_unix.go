//go:build unix

package node

import "syscall"

// RaiseFileLimit raises the soft limit on open files to the hard limit (as
// Go itself does at start since 1.19; done explicitly so that it is visible
// and reported) and returns both after the change.
func RaiseFileLimit() (FileLimit, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return FileLimit{}, err
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
			rl = want
		}
	}
	return FileLimit{Soft: rl.Cur, Hard: rl.Max}, nil
}

// CurrentFileLimit reads the process's open-file limits now.
func CurrentFileLimit() *FileLimit {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return nil
	}
	return &FileLimit{Soft: rl.Cur, Hard: rl.Max}
}
