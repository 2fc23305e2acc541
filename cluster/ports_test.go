package cluster

import (
	"errors"
	"fmt"
	"testing"
)

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

// TestPortTaken: only a process that could not bind its address counts as
// a port taken (a new cluster file and another start help); other start
// failures do not.
func TestPortTaken(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w: node n1 exited: exit status 1; last log lines: tandem: node n1: listen on 127.0.0.1:44969 (field nodes.metrics): listen tcp 127.0.0.1:44969: bind: address already in use", ErrNotReady), true},
		{fmt.Errorf("measure: N = 2: %w", fmt.Errorf("%w: router exited: listen tcp 127.0.0.1:1: bind: address already in use", ErrNotReady)), true},
		{fmt.Errorf("%w: node n1 exited: exit status 1; last log lines: invalid configuration", ErrNotReady), false},
		{errors.New("listen tcp 127.0.0.1:5432: bind: address already in use"), false},
		{nil, false},
	}
	for i, c := range cases {
		if got := PortTaken(c.err); got != c.want {
			t.Errorf("case %d (%v): PortTaken = %v, want %v", i, c.err, got, c.want)
		}
	}
}
