package cluster

import "testing"

// TestPortsDistinct: addresses handed out before Release are all
// different, and each is free again after it.
func TestPortsDistinct(t *testing.T) {
	var p Ports
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		a, err := p.Addr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[a] {
			t.Fatalf("address %s handed out twice", a)
		}
		seen[a] = true
	}
	p.Release()
	var q Ports
	defer q.Release()
	if _, err := q.Addr(); err != nil {
		t.Fatal(err)
	}
}
