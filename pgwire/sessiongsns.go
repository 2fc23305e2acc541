package pgwire

import "sync"

// SessionGSNs remembers, per router session tag, the highest GSN a node
// committed or applied for it: another node answers from it whether a
// COMMIT that was in flight when a node died was applied
// (router/survive.go). Two generations of at most sessionGen tags each: a
// tag not seen for two generations is forgotten (the router then answers
// 08007, as it would without this). The zero value is ready to use.
type SessionGSNs struct {
	mu       sync.Mutex
	cur, old map[string]uint64
}

const sessionGen = 100_000

// Note records gsn for tag (kept if higher than what is known).
func (s *SessionGSNs) Note(tag string, gsn uint64) {
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

// Get returns the highest GSN known for tag.
func (s *SessionGSNs) Get(tag string) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.cur[tag]; ok {
		return g, true
	}
	g, ok := s.old[tag]
	return g, ok
}
