package replication

import "sync"

// sessionGSNs remembers, per router session tag, the highest GSN this node
// committed or applied for it: the new primary answers from it whether a
// COMMIT that was in flight when the old primary died was applied
// (router/survive.go). Two generations of at most sessionGen tags each:
// a tag not seen for two generations is forgotten (the router then
// answers 08007, as it would without this).
type sessionGSNs struct {
	mu       sync.Mutex
	cur, old map[string]uint64
}

const sessionGen = 100_000

func (s *sessionGSNs) note(tag string, gsn uint64) {
	if tag == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		s.cur = map[string]uint64{}
	}
	if g, ok := s.cur[tag]; ok && g >= gsn {
		return
	}
	if g, ok := s.old[tag]; ok && g > gsn {
		gsn = g
	}
	s.cur[tag] = gsn
	if len(s.cur) >= sessionGen {
		s.old, s.cur = s.cur, map[string]uint64{}
	}
}

func (s *sessionGSNs) get(tag string) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.cur[tag]; ok {
		return g, true
	}
	g, ok := s.old[tag]
	return g, ok
}
