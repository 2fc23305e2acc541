//go:build !unix

package replog

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir only opens dir/LOCK on platforms without flock; tandem targets
// Linux.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("replog: open lock file: %w", err)
	}
	return f, nil
}
