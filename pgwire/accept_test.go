package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestTemporaryAcceptError(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.EMFILE)}, true},
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ENFILE)}, true},
		{&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.ECONNABORTED)}, true},
		{fmt.Errorf("wrapped: %w", syscall.ENOBUFS), true},
		{net.ErrClosed, false},
		{&net.OpError{Op: "accept", Err: net.ErrClosed}, false},
		{errors.New("something else"), false},
	}
	for _, tc := range cases {
		if got := TemporaryAcceptError(tc.err); got != tc.want {
			t.Errorf("TemporaryAcceptError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// failingListener fails its first n accepts with EMFILE, then accepts from
// a real listener.
type failingListener struct {
	net.Listener
	n int
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.n > 0 {
		l.n--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptorRidesOutEMFILE: accept errors for lack of descriptors are
// retried with a backoff (5 ms doubling) and a connection made meanwhile is
// then returned; closing the listener ends Accept with an error.
func TestAcceptorRidesOutEMFILE(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acc := &Acceptor{L: &failingListener{Listener: l, n: 4}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Name: "test"}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	got, err := acc.Accept(context.Background())
	if err != nil {
		t.Fatalf("Accept after 4 EMFILE: %v", err)
	}
	got.Close()
	// 5 + 10 + 20 + 40 ms of backoff at least.
	if d := time.Since(start); d < 75*time.Millisecond {
		t.Fatalf("Accept retried after %v, want a backoff of at least 75 ms", d)
	}
	if acc.suppressed != 3 {
		t.Fatalf("%d retries not logged, want 3 (one log line per second)", acc.suppressed)
	}
	l.Close()
	if _, err := acc.Accept(context.Background()); err == nil {
		t.Fatal("Accept on a closed listener returned no error")
	}
}
