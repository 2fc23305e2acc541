package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tandemdb/tandem/config"
)

// ErrNotMappable is a cluster file whose addresses the lab cannot move
// into its network namespaces.
var ErrNotMappable = errors.New("the cluster file cannot run in the lab's network namespaces")

// MappedFile is the name, in the run directory, of the cluster file the
// processes of a lab with network namespaces read.
const MappedFile = "lab-cluster.toml"

// MapConfig writes the cluster file the processes read when nodes live in
// their own network namespaces, and returns its path. The rule: node i
// (0-based, in file order) is host NodeNum(i) on the lab network, the
// witness WitnessNum; each of their addresses keeps its port and gets the
// host's lab address (so every address of a node must be on loopback in
// the file); the router stays in the root namespace with its addresses.
// The text is the original with those addresses replaced and the [lab]
// section set to the lab's spec, so comments and secret references stay.
func (l *Lab) MapConfig(c *config.Cluster) (string, error) {
	if l.net == nil {
		return c.File, nil
	}
	data, err := os.ReadFile(c.File)
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	text, err := mapText(string(data), c, l.net.Addr, l.Spec)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.RunDir, MappedFile)
	if err := os.MkdirAll(c.RunDir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", fmt.Errorf("lab: write %s: %w", path, err)
	}
	return path, nil
}

// mapText is MapConfig on the file's text.
func mapText(text string, c *config.Cluster, addr func(int) string, spec config.Lab) (string, error) {
	type field struct{ name, value string }
	move := func(num int, fields []field) error {
		for _, f := range fields {
			if f.value == "" {
				continue
			}
			host, port, err := net.SplitHostPort(f.value)
			if err != nil || !config.IsLoopback(f.value) {
				return fmt.Errorf("%w: field %s = %q: with lab.netns every node address must be on loopback (127.0.0.1:PORT); the lab gives it the node's address %s", ErrNotMappable, f.name, f.value, addr(num))
			}
			_ = host
			to := net.JoinHostPort(addr(num), port)
			n := 0
			for _, q := range []string{`"`, `'`} {
				from := q + f.value + q
				n += strings.Count(text, from)
				text = strings.ReplaceAll(text, from, q+to+q)
			}
			if n != 1 {
				return fmt.Errorf("%w: field %s = %q appears %d times in %s; write each address once, as a plain quoted string", ErrNotMappable, f.name, f.value, n, c.File)
			}
		}
		return nil
	}
	for i, n := range c.Nodes {
		p := fmt.Sprintf("nodes[%d].", i)
		if err := move(NodeNum(i), []field{{p + "listen", n.Listen}, {p + "metrics", n.Metrics}, {p + "repl_listen", n.Repl}, {p + "raft_listen", n.Raft}}); err != nil {
			return "", err
		}
	}
	if w := c.Witness; w != nil {
		if err := move(WitnessNum, []field{{"witness.raft_listen", w.RaftListen}, {"witness.metrics", w.Metrics}}); err != nil {
			return "", err
		}
	}
	return stripSection(text, "lab") + "\n# written by the lab: its effective settings\n" + labSection(spec), nil
}

// stripSection removes the table [name] (up to the next table header).
func stripSection(text, name string) string {
	var out []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			head, _, _ := strings.Cut(t, "#")
			in = strings.TrimSpace(head) == "["+name+"]"
		}
		if !in {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// labSection is spec as a [lab] table.
func labSection(spec config.Lab) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var b strings.Builder
	b.WriteString("[lab]\n")
	fmt.Fprintf(&b, "cpu_per_node = %s\ncpu_client = %s\ncpu_router = %s\n", f(spec.CPUPerNode), f(spec.CPUClient), f(spec.CPURouter))
	fmt.Fprintf(&b, "net_delay = %q\nnet_jitter = %q\nnet_loss = %s\n", spec.NetDelay.String(), spec.NetJitter.String(), f(spec.NetLoss))
	fmt.Fprintf(&b, "netns = %t\n", spec.NetnsOn())
	return b.String()
}
