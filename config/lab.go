package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Lab is the cluster file's [lab] section: emulated hosts on this machine
// (package lab). Every process `tandem up` starts runs in its own cgroup;
// the quotas below make each node a host of that many CPUs.
type Lab struct {
	// CPUPerNode is each node's CPU quota in cores (0.25 = a quarter of
	// one core; 0: no quota, usage still measured). A node's managed
	// PostgreSQL is its child and shares the quota.
	CPUPerNode float64 `toml:"cpu_per_node"`
	// CPUClient is the workload client's quota (`tandem bench run --lab`,
	// `tandem bench scaleout`); 0: no quota.
	CPUClient float64 `toml:"cpu_client"`
	// CPURouter is the router's quota; 0 (default): no quota.
	CPURouter float64 `toml:"cpu_router"`
	// NetDelay is the round trip each link between two emulated hosts
	// adds (netem, half on each host's egress; where the kernel has no
	// netem, the lab's user-space links do the same); NetJitter its variation;
	// NetLoss the percentage of packets each host's egress drops. They
	// need network namespaces (Netns).
	NetDelay  Duration `toml:"net_delay"`
	NetJitter Duration `toml:"net_jitter"`
	NetLoss   float64  `toml:"net_loss"`
	// Netns puts each node in its own network namespace (default: true
	// when a net_ field is set, else false).
	Netns *bool `toml:"netns"`
}

// Bounds of the lab's CPU quotas: the kernel's smallest CFS quota is 1 ms
// per 100 ms period.
const (
	MinLabCPU = 0.01
	MaxLabCPU = 1024
)

// LabNetwork is the range the lab's network namespaces take their
// addresses from (a /24 of it per lab); nothing outside the machine.
const LabNetwork = "10.213.0.0/16"

var _, labNetwork, _ = net.ParseCIDR(LabNetwork)

// ErrLabSpec is a --lab value that does not parse.
var ErrLabSpec = errors.New("bad --lab value")

// NetnsOn reports whether the lab puts nodes in network namespaces.
func (l *Lab) NetnsOn() bool {
	if l.Netns != nil {
		return *l.Netns
	}
	return l.NetDelay.Duration > 0 || l.NetJitter.Duration > 0 || l.NetLoss > 0
}

// Network reports whether any link emulation (delay, jitter, loss) is set.
func (l *Lab) Network() bool {
	return l.NetDelay.Duration > 0 || l.NetJitter.Duration > 0 || l.NetLoss > 0
}

// Validate checks the section; field names are reported as lab.FIELD.
func (l *Lab) Validate() error {
	return l.check(func(field, format string, args ...any) error {
		return fmt.Errorf("%w: field %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
	})
}

// check validates with the cluster file's error format.
func (l *Lab) check(bad func(field, format string, args ...any) error) error {
	for _, q := range []struct {
		field string
		v     float64
	}{{"cpu_per_node", l.CPUPerNode}, {"cpu_client", l.CPUClient}, {"cpu_router", l.CPURouter}} {
		if q.v != 0 && (q.v < MinLabCPU || q.v > MaxLabCPU) {
			return bad("lab."+q.field, "%g: give cores from %g to %g (0.25 = a quarter of one core), or 0 for no quota", q.v, float64(MinLabCPU), float64(MaxLabCPU))
		}
	}
	if d := l.NetDelay.Duration; d < 0 || d > 10*time.Second {
		return bad("lab.net_delay", "%v: give a round trip from 0 to 10s, e.g. \"0.2ms\"", d)
	}
	if j := l.NetJitter.Duration; j < 0 || j > l.NetDelay.Duration {
		return bad("lab.net_jitter", "%v: give a variation from 0 up to net_delay (%v)", j, l.NetDelay.Duration)
	}
	if l.NetLoss < 0 || l.NetLoss > 100 {
		return bad("lab.net_loss", "%g: give a percentage from 0 to 100", l.NetLoss)
	}
	if l.Netns != nil && !*l.Netns && l.Network() {
		return bad("lab.netns", "false, but net_delay, net_jitter or net_loss is set: links are emulated between the lab's network namespaces; set netns = true or drop the net_ fields")
	}
	return nil
}

// ParseLabFlag applies a --lab value (comma-separated key=value pairs) to
// base and validates the result. Keys: cpu (or cpu_per_node), client (or
// cpu_client), router (or cpu_router), delay (net_delay), jitter
// (net_jitter), loss (net_loss, percent), netns (true|false). "on" alone
// turns the lab on with base's values.
func ParseLabFlag(s string, base Lab) (Lab, error) {
	l := base
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" || kv == "on" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return l, fmt.Errorf("%w: %q is not key=value (e.g. --lab cpu=0.25,delay=0.2ms)", ErrLabSpec, kv)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		num := func(p *float64) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("%w: %s=%q is not a number", ErrLabSpec, k, v)
			}
			*p = f
			return nil
		}
		dur := func(p *Duration) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%w: %s=%q is not a duration (write e.g. 0.2ms)", ErrLabSpec, k, v)
			}
			p.Duration = d
			return nil
		}
		var err error
		switch k {
		case "cpu", "cpu_per_node":
			err = num(&l.CPUPerNode)
		case "client", "cpu_client":
			err = num(&l.CPUClient)
		case "router", "cpu_router":
			err = num(&l.CPURouter)
		case "delay", "net_delay":
			err = dur(&l.NetDelay)
		case "jitter", "net_jitter":
			err = dur(&l.NetJitter)
		case "loss", "net_loss":
			err = num(&l.NetLoss)
		case "netns":
			b, perr := strconv.ParseBool(v)
			if perr != nil {
				err = fmt.Errorf("%w: netns=%q: write true or false", ErrLabSpec, v)
			}
			l.Netns = &b
		default:
			err = fmt.Errorf("%w: unknown key %q; use cpu, client, router, delay, jitter, loss or netns", ErrLabSpec, k)
		}
		if err != nil {
			return l, err
		}
	}
	if err := l.Validate(); err != nil {
		return l, err
	}
	return l, nil
}

// String is the lab as a --lab value.
func (l Lab) String() string {
	var parts []string
	if l.CPUPerNode > 0 {
		parts = append(parts, "cpu="+strconv.FormatFloat(l.CPUPerNode, 'g', -1, 64))
	}
	if l.CPUClient > 0 {
		parts = append(parts, "client="+strconv.FormatFloat(l.CPUClient, 'g', -1, 64))
	}
	if l.CPURouter > 0 {
		parts = append(parts, "router="+strconv.FormatFloat(l.CPURouter, 'g', -1, 64))
	}
	if l.NetDelay.Duration > 0 {
		parts = append(parts, "delay="+l.NetDelay.String())
	}
	if l.NetJitter.Duration > 0 {
		parts = append(parts, "jitter="+l.NetJitter.String())
	}
	if l.NetLoss > 0 {
		parts = append(parts, "loss="+strconv.FormatFloat(l.NetLoss, 'g', -1, 64))
	}
	if l.NetnsOn() {
		parts = append(parts, "netns=true")
	}
	if len(parts) == 0 {
		return "on"
	}
	return strings.Join(parts, ",")
}
