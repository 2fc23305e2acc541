package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
)

// labFlagHelp documents --lab for every command that takes it.
const labFlagHelp = `emulated hosts on this machine (needs root): comma-separated cpu=CORES (each node's quota), client=CORES, router=CORES; overrides the cluster file's [lab]; "on" takes [lab] as it is, "off" ignores it`

// labSpec is the lab a command runs with: the cluster file's [lab]
// overridden by --lab, or nil for none.
func labSpec(cmd *cobra.Command, c *config.Cluster, flag string) (*config.Lab, error) {
	if !cmd.Flags().Changed("lab") {
		if c == nil {
			return nil, nil
		}
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

// labClient is a bench client running in its own emulated host.
type labClient struct {
	lab   *lab.Lab
	host  *lab.Host
	start lab.Usage
	t0    time.Time
}

// joinLab moves this process into the client's emulated host when --lab
// is given (nil otherwise); the lab is closed by report.
func (f *benchRunFlags) joinLab(cmd *cobra.Command) (*labClient, error) {
	spec, err := labSpec(cmd, nil, f.lab)
	if err != nil || spec == nil {
		return nil, err
	}
	lb, err := lab.New(*spec, logger(cmd))
	if err != nil {
		return nil, err
	}
	h, err := lb.Host(lab.ClientHost, spec.CPUClient)
	if err == nil {
		err = h.Join(os.Getpid())
	}
	var u lab.Usage
	if err == nil {
		u, err = h.Usage()
	}
	if err != nil {
		lb.Close()
		return nil, err
	}
	return &labClient{lab: lb, host: h, start: u, t0: time.Now()}, nil
}

// report prints the client's CPU use over the run and closes the lab
// (this process moves back to the root cgroup).
func (c *labClient) report(w io.Writer) {
	defer c.lab.Close()
	u, err := c.host.Usage()
	if err != nil {
		fmt.Fprintln(w, "lab:", err)
		return
	}
	d := u.Sub(c.start)
	wall := time.Since(c.t0).Seconds()
	fmt.Fprintf(w, "lab: the client (%s, cgroup %s) used %.2f CPU over %.1f s, throttled in %d of %d periods\n",
		cores(c.host.CPU), c.host.Cgroup, d.CPU.Seconds()/wall, wall, d.Throttled, d.Periods)
}

// mapLab moves the nodes' addresses into the lab's network namespaces
// (when it has a network): the processes read the mapped cluster file.
func mapLab(lb *lab.Lab, c *config.Cluster, out io.Writer) (*config.Cluster, error) {
	n := lb.Net()
	if n == nil {
		return c, nil
	}
	path, err := lb.MapConfig(c)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	mc, err := config.ParseWithRunDir(path, data, c.RunDir)
	if err != nil {
		return nil, fmt.Errorf("the lab's mapped cluster file: %w", err)
	}
	s := lb.Spec
	fmt.Fprintf(out, "lab: network %s: node i at %s+i in its own namespace, router and clients in this one (%s); round trip +%v (jitter %v), loss %g%%; cluster file with these addresses: %s\n",
		n.Subnet(), n.Addr(lab.NodeNum(0)-1), n.Addr(1), s.NetDelay.Duration, s.NetJitter.Duration, s.NetLoss, path)
	return mc, nil
}

// labMapped returns the cluster as its running processes see it: while
// `tandem up` runs it with nodes in the lab's network namespaces (its
// cluster.json lists a namespace), the mapped file in the run directory,
// whose node addresses are the lab's; otherwise c.
func labMapped(c *config.Cluster) (*config.Cluster, error) {
	procs, err := cluster.ReadState(c.RunDir)
	if err != nil || !slices.ContainsFunc(procs, func(p *cluster.Proc) bool { return p.Netns != "" }) {
		return c, nil
	}
	path := filepath.Join(c.RunDir, lab.MappedFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return c, nil
	}
	mc, err := config.ParseWithRunDir(path, data, c.RunDir)
	if err != nil {
		return nil, fmt.Errorf("the lab's mapped cluster file: %w", err)
	}
	return mc, nil
}
