package router

import (
	"errors"
	"io"
	"log/slog"
	"testing"
)

// TestNodeHealthHysteresis: a node is marked down only after DownAfter
// consecutive failures of fresh connections, up again after one success;
// a session's lost connection (suspect) never changes its health.
func TestNodeHealthHysteresis(t *testing.T) {
	fail := errors.New("connection refused")
	cases := []struct {
		name    string
		events  []error // nil: a probe succeeded
		suspect int     // lost sessions reported after the events
		want    bool    // healthy at the end
	}{
		{"no evidence", nil, 0, true},
		{"one failure is a blip", []error{fail}, 0, true},
		{"two failures in a row", []error{fail, fail}, 0, false},
		{"failures not in a row", []error{fail, nil, fail}, 0, true},
		{"up again after one success", []error{fail, fail, nil}, 0, true},
		{"down stays down on more failures", []error{fail, fail, fail}, 0, false},
		{"lost sessions are no evidence", nil, 50, true},
		{"lost sessions after a blip", []error{fail}, 50, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Config{Nodes: []Upstream{{Node: "n1", Addr: "127.0.0.1:1"}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			for _, e := range tc.events {
				r.report("n1", e)
			}
			for i := 0; i < tc.suspect; i++ {
				r.suspect("n1", fail)
			}
			if got := r.Status()[0].Healthy; got != tc.want {
				t.Fatalf("healthy = %v, want %v", got, tc.want)
			}
			if len(r.probe) != min(tc.suspect, 1) {
				t.Fatalf("%d probe requests pending, want %d", len(r.probe), min(tc.suspect, 1))
			}
		})
	}
}
