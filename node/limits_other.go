//go:build !unix

package node

// RaiseFileLimit does nothing where there is no RLIMIT_NOFILE.
func RaiseFileLimit() (FileLimit, error) { return FileLimit{}, nil }

// CurrentFileLimit is nil where there is no RLIMIT_NOFILE.
func CurrentFileLimit() *FileLimit { return nil }
