package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// threadPair dials a loopback listener with dialThreadWait and returns the
// client's threadConn and the server's end.
func threadPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(acc)
			return
		}
		acc <- c
	}()
	c, err := dialThreadWait(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := <-acc
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

func TestThreadConnEcho(t *testing.T) {
	c, s := threadPair(t)
	go io.Copy(s, s)           // echo
	msg := make([]byte, 1<<20) // larger than the socket buffers: Write waits
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		errc <- err
	}()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for i := range msg {
		if got[i] != msg[i] {
			t.Fatalf("byte %d: got %d, want %d", i, got[i], msg[i])
		}
	}
	if c.LocalAddr().String() != s.RemoteAddr().String() {
		t.Errorf("LocalAddr %s, the server sees %s", c.LocalAddr(), s.RemoteAddr())
	}
}

func TestThreadConnDeadline(t *testing.T) {
	c, _ := threadPair(t)
	c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	start := time.Now()
	_, err := c.Read(make([]byte, 10))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v, want a timeout", err)
	}
	if el := time.Since(start); el < 30*time.Millisecond || el > 2*time.Second {
		t.Errorf("read returned after %s, deadline 30ms", el)
	}
	// A deadline set while a read waits (pgx cancelling a context) ends it.
	c.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.SetDeadline(time.Now())
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after SetDeadline(now): %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting read ignored a deadline set meanwhile")
	}
}

func TestThreadConnCloseAndEOF(t *testing.T) {
	c, s := threadPair(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read waiting during Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a waiting read")
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The server sees the connection end.
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("server read after the client closed: %v, want EOF", err)
	}

	c2, s2 := threadPair(t)
	s2.Close()
	if _, err := c2.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read after the server closed: %v, want EOF", err)
	}
}

// TestThreadConnGC: a goroutine waiting in a raw system call keeps its P,
// so a stop-the-world must interrupt the wait (the runtime's preemption
// signal makes recvfrom return EINTR); a collection must not wait for the
// server to answer.
func TestThreadConnGC(t *testing.T) {
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	var conns []net.Conn
	for range 3 { // three waiting readers, as many Ps as the runtime has less one
		c, _ := threadPair(t)
		conns = append(conns, c)
		go c.Read(make([]byte, 1))
	}
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	for range 20 {
		runtime.GC()
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("20 collections took %s beside 3 waiting reads", el)
	}
	for _, c := range conns {
		c.Close()
	}
}

func TestRunnerWaitOption(t *testing.T) {
	var w fakeWorkload
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	opts := RunOptions{Workload: w, DSN: "postgres://u@127.0.0.1:1/db", Clients: 8, Duration: time.Second, Wait: WaitThread}
	if _, err := newRunner(opts); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "GOMAXPROCS 4, 8 clients") {
		t.Errorf("8 clients waiting on threads with 4 Ps: %v, want a refusal naming both", err)
	}
	runtime.GOMAXPROCS(9)
	r, err := newRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	threadDial := reflect.ValueOf(dialThreadWait).Pointer()
	if reflect.ValueOf(r.cfg.DialFunc).Pointer() != threadDial {
		t.Error("--wait thread: pgx dials with its default")
	}
	opts.Wait = WaitPoller
	if r, err = newRunner(opts); err != nil || reflect.ValueOf(r.cfg.DialFunc).Pointer() == threadDial {
		t.Errorf("--wait poller: %v (pgx's default dialer expected)", err)
	}
	opts.Wait = "spin"
	if _, err := newRunner(opts); !errors.Is(err, ErrBadOption) {
		t.Errorf("--wait spin: %v", err)
	}
}
