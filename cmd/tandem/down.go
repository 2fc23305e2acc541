package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/cluster"
)

// newDownCmd stops the `tandem up` of a cluster file: SIGTERM to the up
// process it recorded in the run directory, which stops every node and
// the router in order, as Ctrl-C does.
func newDownCmd() *cobra.Command {
	var file string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "down -c FILE",
		Short: "Stop the `tandem up` of a cluster file (every node and the router), as Ctrl-C in its terminal does",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig(file)
			if err != nil {
				return err
			}
			runDir, err := filepath.Abs(c.RunDir)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			pid, err := cluster.ReadUpPID(runDir)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w: cluster %q: no `tandem up` runs from run directory %s (give the same --run-dir as to `tandem up`)", errNotUp, c.Name, runDir)
			}
			if err != nil {
				return err
			}
			if !isTandemUp(pid) {
				// Killed (SIGKILL, a reboot): its nodes died with it
				// (they are its children, with a parent-death signal).
				if err := cluster.RemoveState(runDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				fmt.Fprintf(out, "tandem: cluster %q: its `tandem up` (pid %d) no longer runs; removed its stale record in %s\n", c.Name, pid, runDir)
				return nil
			}
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
				return fmt.Errorf("stop `tandem up` (pid %d): %w", pid, err)
			}
			fmt.Fprintf(out, "tandem: stopping cluster %q (`tandem up`, pid %d) ...\n", c.Name, pid)
			deadline := time.Now().Add(wait)
			for isTandemUp(pid) {
				if time.Now().After(deadline) {
					return fmt.Errorf("%w: `tandem up` (pid %d) still runs %s after SIGTERM; its log: %s", errStillUp, pid, wait, filepath.Join(runDir, "logs"))
				}
				time.Sleep(100 * time.Millisecond)
			}
			fmt.Fprintf(out, "tandem: cluster %q stopped\n", c.Name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "cluster file (TOML)")
	cmd.Flags().DurationVar(&wait, "wait", 90*time.Second, "how long to wait for every process to stop")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

var (
	// errNotUp: no `tandem up` runs from the cluster's run directory.
	errNotUp = errors.New("cluster not up")
	// errStillUp: `tandem up` did not stop within --wait.
	errStillUp = errors.New("cluster did not stop")
)

// isTandemUp reports whether pid is a live `tandem up` (not a PID the
// kernel has since given to another program).
func isTandemUp(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) < 2 || !strings.Contains(filepath.Base(args[0]), "tandem") {
		return false
	}
	for _, a := range args[1:] {
		if a == "up" {
			return true
		}
	}
	return false
}
