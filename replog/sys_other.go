//go:build !linux

package replog

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
