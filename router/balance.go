package router

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

// Balancing policies after GLB (seed 001, section 3.3): which node of
// several that may run a transaction gets it. router/DESIGN.md, "Balancing
// policies", says why each works as it does.

// ErrBadPolicy is a policy name NewBalancer does not know.
var ErrBadPolicy = errors.New("unknown balancing policy")

// Policies NewBalancer knows ("" is least-connected).
var Policies = []string{"least-connected", "round-robin", "single", "random", "source"}

// stickyReads reports whether the policy balances sessions' reads rather
// than each read: least-connected (the default) keeps a session's reads
// on one node at eventual consistency too (pickReplica); round-robin,
// random, single and source choose per transaction there.
func (r *Router) stickyReads() bool {
	return r.cfg.Policy == "" || r.cfg.Policy == "least-connected"
}

// Candidate is a node a transaction may be sent to.
type Candidate struct {
	Index  int // the node's index in Config.Nodes
	ID     string
	Weight int // > 0
	Active int // transactions routed there and not finished now
}

// Balancer picks one of cands (non-empty) for a transaction of a client at addr; returns a position in cands.
type Balancer interface {
	Pick(cands []Candidate, client netip.Addr) int
}

// NewBalancer returns the policy's balancer: least-connected (default,
// ""), round-robin, single, random or source. An unknown name is an error
// wrapping ErrBadPolicy.
func NewBalancer(policy string) (Balancer, error) {
	return NewBalancerSeed(policy, uint64(time.Now().UnixNano()))
}

// NewBalancerSeed is NewBalancer with the random policy's seed fixed (tests,
// reproducible benchmarks); the other policies take no randomness.
func NewBalancerSeed(policy string, seed uint64) (Balancer, error) {
	switch policy {
	case "", "least-connected":
		return &leastConnected{rr: newSmoothRR()}, nil
	case "round-robin":
		return &roundRobin{rr: newSmoothRR()}, nil
	case "single":
		return &single{}, nil
	case "random":
		return &random{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, nil
	case "source":
		return source{}, nil
	}
	return nil, fmt.Errorf("%w %q: use least-connected, round-robin, single, random or source", ErrBadPolicy, policy)
}

func weight(c Candidate) int {
	if c.Weight < 1 {
		return 1
	}
	return c.Weight
}

// smoothRR is nginx's smooth weighted round-robin: every pick adds each
// candidate's weight to its current score, takes the highest score and
// takes the total weight off it. Over a round of sum(weights) picks each
// candidate gets exactly its weight, spread out rather than in bursts; a
// candidate that (re)joins starts at 0, so it is not flooded to catch up.
type smoothRR struct {
	mu  sync.Mutex
	cur []int    // by Candidate.Index
	ids []string // the node each slot of cur belongs to
}

func newSmoothRR() *smoothRR { return &smoothRR{} }

// slot is the index in cur of candidate c's score, reset when the slot
// held another node.
func (s *smoothRR) slot(c Candidate) int {
	i := max(c.Index, 0)
	for len(s.cur) <= i {
		s.cur, s.ids = append(s.cur, 0), append(s.ids, "")
	}
	if s.ids[i] != c.ID {
		s.ids[i], s.cur[i] = c.ID, 0
	}
	return i
}

// pick chooses among the positions in idx (into cands; nil: all).
func (s *smoothRR) pick(cands []Candidate, idx []int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	total, best, bestSlot := 0, -1, 0
	step := func(i int) {
		w := weight(cands[i])
		total += w
		k := s.slot(cands[i])
		s.cur[k] += w
		if best < 0 || s.cur[k] > s.cur[bestSlot] {
			best, bestSlot = i, k
		}
	}
	if idx == nil {
		for i := range cands {
			step(i)
		}
	} else {
		for _, i := range idx {
			step(i)
		}
	}
	s.cur[bestSlot] -= total
	return best
}

// leastConnected: the candidate with the fewest active transactions per
// unit of weight; ties (an idle cluster) go weighted round-robin.
type leastConnected struct{ rr *smoothRR }

func (b *leastConnected) Pick(cands []Candidate, _ netip.Addr) int {
	var buf [16]int
	tied := buf[:0]
	for i, c := range cands {
		if len(tied) == 0 {
			tied = append(tied, i)
			continue
		}
		// c.Active/w(c) against the best's, without division.
		best := cands[tied[0]]
		l, r := c.Active*weight(best), best.Active*weight(c)
		switch {
		case l < r:
			tied = append(tied[:0], i)
		case l == r:
			tied = append(tied, i)
		}
	}
	if len(tied) == 1 {
		return tied[0]
	}
	return b.rr.pick(cands, tied)
}

// roundRobin: weighted, each candidate Weight turns per round.
type roundRobin struct{ rr *smoothRR }

func (b *roundRobin) Pick(cands []Candidate, _ netip.Addr) int {
	return b.rr.pick(cands, nil)
}

// single: everything to the highest-weight candidate, which stays chosen
// until it is no longer a candidate or one of strictly higher weight
// appears (GLB's "single" policy: one active node, the rest standing by).
type single struct {
	mu  sync.Mutex
	cur string
}

func (b *single) Pick(cands []Candidate, _ netip.Addr) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	best := 0
	for i, c := range cands {
		if weight(c) > weight(cands[best]) {
			best = i
		}
	}
	for i, c := range cands {
		if c.ID == b.cur && weight(c) >= weight(cands[best]) {
			return i
		}
	}
	b.cur = cands[best].ID
	return best
}

// random: weighted random.
type random struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func (b *random) Pick(cands []Candidate, _ netip.Addr) int {
	total := 0
	for _, c := range cands {
		total += weight(c)
	}
	b.mu.Lock()
	n := b.rng.IntN(total)
	b.mu.Unlock()
	for i, c := range cands {
		if n -= weight(c); n < 0 {
			return i
		}
	}
	return len(cands) - 1
}

// source: weighted rendezvous (highest random weight) hashing of the
// client's address: the same address reaches the same node while the
// candidates do not change, and a node that leaves moves only its own
// clients (every other address keeps its highest score).
type source struct{}

func (source) Pick(cands []Candidate, client netip.Addr) int {
	a := client.Unmap().AsSlice()
	best, bestScore := 0, math.Inf(-1)
	for i, c := range cands {
		h := fnv.New64a()
		_, _ = h.Write(a)
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(c.ID))
		// A uniform u in (0,1) from the hash; -w/ln(u) is the weighted
		// rendezvous score (each node wins with probability w/sum(w)).
		u := (float64(mix64(h.Sum64())>>11) + 0.5) / (1 << 53)
		score := -float64(weight(c)) / math.Log(u)
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// mix64 is splitmix64's finalizer: FNV's low bits alone are poorly mixed
// for inputs that differ in one byte (127.0.0.x).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
