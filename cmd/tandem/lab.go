package main

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
)

// labFlagHelp documents --lab for every command that takes it.
const labFlagHelp = `emulated hosts on this machine (needs root): comma-separated cpu=CORES (each node's quota), client=CORES, router=CORES; overrides the cluster file's [lab]; "on" takes [lab] as it is, "off" ignores it`

// labSpec is the lab a command runs with: the cluster file's [lab]
// overridden by --lab, or nil for none.
func labSpec(cmd *cobra.Command, c *config.Cluster, flag string) (*config.Lab, error) {
	if !cmd.Flags().Changed("lab") {
		return c.Lab, nil
	}
	if strings.TrimSpace(flag) == "off" {
		return nil, nil
	}
	var base config.Lab
	if c != nil && c.Lab != nil {
		base = *c.Lab
	}
	l, err := config.ParseLabFlag(flag, base)
	if err != nil {
		return nil, fmt.Errorf("--lab: %w", err)
	}
	return &l, nil
}

// startLab opens the lab of spec (nil: none) and says what it emulates.
func startLab(spec *config.Lab, log *slog.Logger, out io.Writer) (*lab.Lab, error) {
	if spec == nil {
		return nil, nil
	}
	lb, err := lab.New(*spec, log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "lab: emulated hosts in %s: nodes %s, router %s, client %s (results are emulated)\n",
		lb.Controller(), cores(spec.CPUPerNode), cores(spec.CPURouter), cores(spec.CPUClient))
	return lb, nil
}

// cores prints a quota.
func cores(q float64) string {
	if q <= 0 {
		return "no quota"
	}
	return strconv.FormatFloat(q, 'g', -1, 64) + " CPU"
}
