package coordinator

import (
	"sync"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// raftMetricsOnce installs hashicorp/raft's own metrics (go-metrics, the
// process-wide sink Consul and Nomad export the same way) into the first
// registry a coordinator of this process is given: the replication
// round trip to each peer (tandem_raft_replication_appendEntries_rpc,
// label peer_id), the leader's commit time (tandem_raft_commitTime), a
// follower's log append (tandem_raft_rpc_appendEntries_storeLogs), the
// FSM's apply and the rest. They are summaries over the last 10 s
// (quantiles 0.5, 0.9, 0.99, with _sum and _count). One sink per process:
// go-metrics keeps a single global, so a second coordinator in the same
// process (tests) shares the first one's.
var raftMetricsOnce sync.Once

func registerRaftMetrics(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	raftMetricsOnce.Do(func() {
		sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
			Expiration: time.Minute,
			Registerer: reg,
			Name:       "tandem_raft_metrics",
		})
		if err != nil {
			return // a second registration in one process: keep the blackhole
		}
		conf := gometrics.DefaultConfig("tandem")
		conf.EnableHostname = false
		conf.EnableHostnameLabel = false
		conf.EnableRuntimeMetrics = false // the Go collector already exports these
		conf.EnableTypePrefix = false
		_, _ = gometrics.NewGlobal(conf, sink)
	})
}
