package router

import (
	"context"
	"errors"
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
//
// Each probe asks for the probe's answer (?probe=1: on the physical
// engine one small query instead of the replication views).
func TestWatchKeepsItsTLSConnection(t *testing.T) {
	var conns, probes, asked atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probes.Add(1)
		if r.URL.Path == "/status" && r.URL.Query().Get("probe") == "1" {
			asked.Add(1)
		}
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
	if asked.Load() != probes.Load() {
		t.Errorf("%d of %d probes asked for /status?probe=1", asked.Load(), probes.Load())
	}
	if st := r.Status()[0]; st.Role != "primary" || st.Epoch != 1 {
		t.Errorf("role %q epoch %d from the probes, want primary 1", st.Role, st.Epoch)
	}
	if c := conns.Load(); c != 1 {
		t.Errorf("%d probes opened %d connections, want 1 kept open", probes.Load(), c)
	}
}

// TestWatchQuietDial: a node without an admin address (a node's own
// PostgreSQL server) is dialed at every probe without QuietDialEvery; with
// it, once on the first round and then only when a session suspects it
// (each dial forks a server process); a node that fails is dialed at every
// probe again until it is seen up.
func TestWatchQuietDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dials atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			c.Close()
		}
	}()
	run := func(quiet time.Duration, during func(r *Router)) int64 {
		t.Helper()
		before := dials.Load()
		r := New(Config{Nodes: []Upstream{{Node: "n1", Addr: ln.Addr().String()}}, QuietDialEvery: quiet,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Watch(ctx, 10*time.Millisecond) }()
		time.Sleep(300 * time.Millisecond)
		if during != nil {
			during(r)
		}
		cancel()
		<-done
		time.Sleep(20 * time.Millisecond) // the last accepts counted
		return dials.Load() - before
	}
	if n := run(0, nil); n < 10 {
		t.Errorf("without QuietDialEvery: %d dials in 300 ms of 10 ms probes, want about 30", n)
	}
	if n := run(time.Hour, nil); n != 1 {
		t.Errorf("with QuietDialEvery: %d dials, want 1 (the first round)", n)
	}
	if n := run(time.Hour, func(r *Router) {
		r.suspect("n1", errors.New("a session's connection ended"))
		time.Sleep(100 * time.Millisecond)
	}); n != 2 {
		t.Errorf("with QuietDialEvery and a suspicion: %d dials, want 2", n)
	}
	// A node seen failing is dialed at every probe: Addr refuses.
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a := l.Addr().String()
		l.Close()
		return a
	}()
	r := New(Config{Nodes: []Upstream{{Node: "n1", Addr: refused}}, QuietDialEvery: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	go r.Watch(ctx, 10*time.Millisecond)
	for r.Status()[0].Healthy {
		if ctx.Err() != nil {
			t.Fatal("a node that refuses every dial was not marked down within 2 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
