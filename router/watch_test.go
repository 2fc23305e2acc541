package router

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchKeepsItsTLSConnection: the health probes of a node whose admin
// address serves HTTPS (off loopback) reuse one connection. A client made
// per probe opened a connection (and paid a TLS handshake on both ends)
// every health_interval and left each one open: the node's admin server
// keeps idle connections, so they piled up for as long as the router ran.
func TestWatchKeepsItsTLSConnection(t *testing.T) {
	var conns, probes atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"role":"primary","replication":{"epoch":1,"assigned_gsn":5,"applied_gsn":5}}`+"\n")
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.StartTLS()
	defer ts.Close()
	tlsCfg := ts.Client().Transport.(*http.Transport).TLSClientConfig
	r := New(Config{Nodes: []Upstream{{Node: "n1", Addr: "127.0.0.1:1", Admin: ts.Listener.Addr().String(), AdminURL: ts.URL + "/status", AdminTLS: tlsCfg}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Watch(ctx, 10*time.Millisecond) }()
	deadline := time.Now().Add(10 * time.Second)
	for probes.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if p := probes.Load(); p < 20 {
		t.Fatalf("only %d probes in 10 s", p)
	}
	if c := conns.Load(); c != 1 {
		t.Errorf("%d probes opened %d connections, want 1 kept open", probes.Load(), c)
	}
}
