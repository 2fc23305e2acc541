package scaleout

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/cluster"
	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/lab"
)

// Env is one point's set-up: a fresh cluster of N nodes (N = 1: one
// standalone node) on the lab's emulated hosts, loaded with the workload,
// replicas caught up, and this process in the lab's client cgroup. Run
// measures each N in one; `tandem plan validate` profiles the standalone
// node in one, so that the profile and the sweep see the same hosts.
type Env struct {
	N       int
	Lab     *lab.Lab
	Cluster *cluster.Local
	Config  *config.Cluster
	// DSN is the cluster's front door (the router at N > 1, and at N = 1
	// on the physical engine's single-master: Options.Alone).
	DSN string

	close []func()
}

// Close stops the cluster, removes the lab (this process leaves the client
// cgroup) and, unless the options kept it, the directory.
func (e *Env) Close() {
	for i := len(e.close) - 1; i >= 0; i-- {
		e.close[i]()
	}
	e.close = nil
}

// Start sets up N nodes for measuring under the options' design, back end,
// lab and workload, in the directory o.Dir/name. The caller must Close it.
// A port taken between its pick and its process's bind (cluster.PortTaken)
// costs a new cluster file and another start, at most twice.
func Start(ctx context.Context, o Options, n int, name string) (*Env, error) {
	for attempt := 1; ; attempt++ {
		e, err := start(ctx, o, n, name)
		if err == nil || attempt == 3 || !cluster.PortTaken(err) {
			return e, err
		}
		if o.Logger != nil {
			o.Logger.Warn("a port picked for the cluster was taken before its process bound it: starting again with new ports", "attempt", attempt, "err", err)
		}
		_ = os.RemoveAll(filepath.Join(o.Dir, name))
	}
}

func start(ctx context.Context, o Options, n int, name string) (*Env, error) {
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Exe = exe
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	e := &Env{N: n}
	ok := false
	defer func() {
		if !ok {
			e.Close()
		}
	}()
	dir := filepath.Join(o.Dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if !o.KeepDir {
		e.close = append(e.close, func() { os.RemoveAll(dir) })
	}
	text, err := clusterFile(o, n, filepath.Join(dir, "run"))
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "cluster.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		return nil, err
	}
	c, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	lb, err := lab.New(o.Lab, o.Logger)
	if err != nil {
		return nil, err
	}
	e.Lab = lb
	e.close = append(e.close, func() { lb.Close() })
	if lb.Net() != nil {
		path, err := lb.MapConfig(c)
		if err != nil {
			return nil, err
		}
		if c, err = config.Load(path); err != nil {
			return nil, err
		}
	}
	e.Config = c
	fmt.Fprintf(o.Progress, "%s: starting %d node(s), %s (%s), under lab %s\n", name, n, c.Design, o.Backend, o.Lab.String())
	lc, err := cluster.Start(ctx, cluster.Options{Config: c, Exe: o.Exe, Logger: o.Logger, LogLevel: "warn", Lab: lb})
	if err != nil {
		return nil, err
	}
	e.Cluster = lc
	e.close = append(e.close, lc.Stop)
	e.DSN = lc.DSN()
	if n == 1 && o.Backend == "postgres" && o.Engine == config.EnginePhysical && !o.routedAlone() {
		// N = 1 is the database as a client on its host reaches it: the
		// server's own socket (Options.Alone, AloneSocket; single-master's
		// default is the primary alone behind the router). Not through
		// the node's relay, whose CPU is in the host's quota: N = 2 came
		// out 3.4x N = 1 that way (read-only, 0.25-core hosts, 2026-12-06).
		if e.DSN, err = ServerSocketDSN(e.DSN, c.Nodes[0].DataDir); err != nil {
			return nil, err
		}
	}
	if n == 1 && o.Design == "multi-master" {
		// The standalone node runs its sessions at snapshot isolation,
		// as every multi-master node does (REPEATABLE READ on
		// PostgreSQL): its aborts are then seed 003's A_1, which the
		// model grows with N, and N = 1 aborts as the design would.
		if e.DSN, err = withRuntimeParam(e.DSN, "default_transaction_isolation", "repeatable read"); err != nil {
			return nil, err
		}
	}
	loadDSN := e.DSN
	if n > 1 && c.Design == "multi-master" {
		// Through one node: the router balances each of the loader's
		// transactions over every node, and one that has not applied the
		// previous batch within router.read_wait answers 55000 (a
		// 10,000-row batch took longer than that to apply on a 0.25-core
		// host). The others catch up below.
		if loadDSN, err = HostDSN(e.DSN, c.Nodes[0].Listen); err != nil {
			return nil, err
		}
	}
	if _, err := bench.Load(ctx, bench.LoadOptions{Workload: o.Workload, DSN: loadDSN, Scale: o.Scale, Drop: true}); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if n > 1 {
		if err := waitApplied(ctx, c, n-1, 5*time.Minute); err != nil {
			return nil, err
		}
	}
	client, err := lb.Host(lab.ClientHost, o.Lab.CPUClient)
	if err != nil {
		return nil, err
	}
	if err := client.Join(os.Getpid()); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
}
