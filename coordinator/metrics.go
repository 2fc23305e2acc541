package coordinator

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	epoch       prometheus.Gauge
	transitions *prometheus.CounterVec
	lost        prometheus.Counter
	lastWait    prometheus.Gauge
	rejected    prometheus.Counter
}

func newMetrics(c *Coordinator, reg prometheus.Registerer) *metrics {
	m := &metrics{
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tandem_coord_epoch", Help: "The cluster map's epoch as applied on this voter."}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tandem_coord_primary_changes_total",
			Help: "Changes of primary applied on this voter, by reason (failover, promote, switchover)."}, []string{"reason"}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem_coord_lost_commits_total",
			Help: "Acknowledged commits a 1-safe failover may have lost (primary's reported GSN beyond the new primary's)."}),
		lastWait: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tandem_coord_last_change_wait_seconds",
			Help: "On the leader that decided it: time from the last lease entry seen to the decision of the last change of primary."}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem_coord_rejected_connections_total",
			Help: "Raft connections refused at the TLS handshake (no certificate of this cluster naming a voter)."}),
	}
	for _, r := range []string{"failover", "promote", "switchover"} {
		m.transitions.WithLabelValues(r) // exported at 0 before the first change
	}
	if reg == nil {
		return m
	}
	leader := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tandem_coord_is_leader", Help: "1 while this voter leads the coordinator group."},
		func() float64 {
			if c.raft != nil && c.raft.State() == raft.Leader {
				return 1
			}
			return 0
		})
	term := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tandem_coord_term", Help: "Raft term seen by this voter."},
		func() float64 {
			if c.raft == nil {
				return 0
			}
			return float64(c.raft.CurrentTerm())
		})
	remaining := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tandem_coord_lease_remaining_seconds",
		Help: "The primary's lease remaining as measured on this voter from the last lease entry it applied."},
		func() float64 {
			m, seen := c.fsm.state()
			if m.Lease.Holder == "" || m.Released {
				return 0
			}
			r := m.Lease.Duration - time.Since(seen)
			if r < 0 {
				return 0
			}
			return r.Seconds()
		})
	// Entries of every kind (map changes, certification batches, barriers)
	// appended to this member's log: with
	// tandem_coord_cert_decisions_total it gives Raft entries per
	// certified transaction.
	lastIndex := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tandem_coord_raft_last_index",
		Help: "The index of the last entry of this member's Raft log."},
		func() float64 {
			if c.raft == nil {
				return 0
			}
			return float64(c.raft.LastIndex())
		})
	reg.MustRegister(m.epoch, m.transitions, m.lost, m.lastWait, m.rejected, leader, term, remaining, lastIndex)
	return m
}
