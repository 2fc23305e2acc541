package replication

import (
	"fmt"
	"testing"

	"github.com/tandemdb/tandem/config"
)

// TestAckedSeveralStandbys: how many standbys must hold a GSN for a 2-safe
// commit, per ack setting, with standbys attached or not (a standby that
// is down counts as not acknowledging: the total is at least nodes - 1).
func TestAckedSeveralStandbys(t *testing.T) {
	cases := []struct {
		ack      string
		nodes    int
		received []uint64 // one per attached standby
		want     bool
	}{
		{"one", 3, []uint64{10, 0}, true},
		{"one", 3, []uint64{9, 9}, false},
		{"one", 3, []uint64{10}, true}, // the other replica is down
		{"one", 3, nil, false},
		{"majority", 3, []uint64{10, 0}, false}, // 2 standbys: majority is 2
		{"majority", 3, []uint64{10, 10}, true},
		{"majority", 4, []uint64{10, 10, 0}, true}, // 3 standbys: 2
		{"majority", 4, []uint64{10, 10}, true},    // one down
		{"majority", 4, []uint64{10}, false},       // two down
		{"majority", 5, []uint64{10, 10, 0, 0}, false},
		{"majority", 5, []uint64{10, 10, 10, 0}, true},
		{"all", 3, []uint64{10, 10}, true},
		{"all", 3, []uint64{10}, false}, // one down: never, until degraded
		{"all", 4, []uint64{10, 10, 9}, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d nodes/%v", c.ack, c.nodes, c.received), func(t *testing.T) {
			cfg := &config.Cluster{Repl: config.Replication{Ack: c.ack}}
			for i := 0; i < c.nodes; i++ {
				cfg.Nodes = append(cfg.Nodes, config.Node{ID: fmt.Sprintf("n%d", i+1)})
			}
			r := &Agent{cfg: cfg, peers: map[string]*peer{}}
			for i, g := range c.received {
				p := &peer{id: fmt.Sprintf("n%d", i+2)}
				p.received.Store(g)
				p.applied.Store(g)
				r.peers[p.id] = p
			}
			if got := r.acked("2-safe-received", 10); got != c.want {
				t.Fatalf("acked = %v, want %v", got, c.want)
			}
			if got := r.acked("2-safe-visible", 10); got != c.want {
				t.Fatalf("acked at visible = %v, want %v", got, c.want)
			}
		})
	}
}
