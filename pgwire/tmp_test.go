package pgwire_test

import (
	"os"
	"testing"
)

// fuzzDir holds the fuzz server's database; TestMain removes it.
var fuzzDir string

func filepathTemp() (string, error) {
	dir, err := os.MkdirTemp("", "tandem-fuzz")
	fuzzDir = dir
	return dir, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fuzzDir != "" {
		_ = os.RemoveAll(fuzzDir)
	}
	os.Exit(code)
}
