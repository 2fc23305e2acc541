package sweep

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tandemdb/tandem/lab"
)

// Hosts of a configuration on emulated hosts (Options.Lab). tandem's
// nodes take their ids (n1, n2) and its router "router" (cluster.Start);
// PostgreSQL's servers and proxies are placed in the hosts of the same
// names, so each table row compares systems on the same hardware.
const (
	hostPrimary = "n1"
	hostStandby = "n2"
)

// openLab opens the emulated hosts of one configuration (nil without
// Options.Lab).
func (o *Options) openLab(log *slog.Logger) (*lab.Lab, error) {
	if o.Lab == nil {
		return nil, nil
	}
	lb, err := lab.New(*o.Lab, log)
	if err != nil {
		return nil, fmt.Errorf("--lab: %w", err)
	}
	return lb, nil
}

// placePG moves a PostgreSQL configuration's processes into their hosts:
// the (primary) server and its children into n1, the standby into n2,
// HAProxy or pgpool-II (and pgpool's children) into the router's host.
// It runs once the system is up; what the processes fork later is born
// in their host.
func placePG(lb *lab.Lab, s *pgSystem) error {
	type placement struct {
		host, kind string
		pid        int
	}
	ps := []placement{{hostPrimary, "node", s.server.PID()}}
	if s.pair != nil && s.pair.Standby != nil {
		ps = append(ps, placement{hostStandby, "node", s.pair.Standby.PID()})
	}
	if s.proxy != nil {
		ps = append(ps, placement{lab.RouterHost, "router", s.proxy.PID()})
	}
	if s.pool != nil {
		ps = append(ps, placement{lab.RouterHost, "router", s.pool.PID()})
	}
	for _, p := range ps {
		h, err := lb.Host(p.host, lb.QuotaFor(p.kind))
		if err != nil {
			return err
		}
		if err := h.JoinTree(p.pid); err != nil {
			return err
		}
	}
	return nil
}

// joinClient moves this process, the sweep's workload client, into the
// client's host; Lab.Close moves it back.
func (o *Options) joinClient(lb *lab.Lab) error {
	h, err := lb.Host(lab.ClientHost, o.Lab.CPUClient)
	if err != nil {
		return err
	}
	return h.Join(os.Getpid())
}

// hostUsage reads every host's cgroup statistics (nil without a lab).
func hostUsage(lb *lab.Lab) map[string]lab.Usage {
	if lb == nil {
		return nil
	}
	return lb.Usage()
}

// hostCores is the CPU each host used between two readings, in cores.
func hostCores(before, after map[string]lab.Usage, elapsed time.Duration) map[string]float64 {
	if before == nil || after == nil || elapsed <= 0 {
		return nil
	}
	out := map[string]float64{}
	for name, a := range after {
		b, ok := before[name]
		if !ok {
			continue
		}
		out[name] = float64(a.Sub(b).CPU) / float64(elapsed)
	}
	return out
}
