package router

// A stand-in for the balancing policies (router/balance.go, built in
// parallel): least-connected over the healthy replicas. The lead deletes
// this file when balance.go is merged; txroute.go uses only this API.

import (
	"fmt"
	"net/netip"
	"sync/atomic"
)

// Candidate is a node a read-only transaction may go to.
type Candidate struct {
	Index  int // in Config.Nodes
	ID     string
	Weight int
	Active int // transactions in flight there
}

// Balancer picks a node among candidates: it returns a position in cands.
type Balancer interface {
	Pick(cands []Candidate, client netip.Addr) int
}

type leastConnected struct{}

func (leastConnected) Pick(cands []Candidate, _ netip.Addr) int {
	best := 0
	for i, c := range cands {
		if c.Active*cands[best].Weight < cands[best].Active*c.Weight {
			best = i
		}
	}
	return best
}

// NewBalancer returns the named policy (the stand-in knows only
// least-connected).
func NewBalancer(policy string) (Balancer, error) {
	if policy == "" || policy == "least-connected" {
		return leastConnected{}, nil
	}
	return nil, fmt.Errorf("balancing policy %q: not built yet", policy)
}

var stubActive [64]atomic.Int64

// ReadCandidates returns the healthy replicas, weight 1.
func (r *Router) ReadCandidates() []Candidate {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Candidate
	for i, st := range r.st {
		if st.Healthy && st.Role != "primary" && i < len(stubActive) {
			out = append(out, Candidate{Index: i, ID: st.ID, Weight: 1, Active: int(stubActive[i].Load())})
		}
	}
	return out
}

// Begin counts a transaction sent to node index; End its end.
func (r *Router) Begin(index int) {
	if index >= 0 && index < len(stubActive) {
		stubActive[index].Add(1)
	}
}

// End: see Begin.
func (r *Router) End(index int) {
	if index >= 0 && index < len(stubActive) {
		stubActive[index].Add(-1)
	}
}
