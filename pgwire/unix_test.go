package pgwire

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestListenUnix: the socket is named as PostgreSQL's, open to every
// local user (0777), refused while another process answers on it,
// replaced when its owner is gone (a file left by SIGKILL), refused with
// a clear error when the path is too long, and removed on Close.
func TestListenUnix(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sock") // created by ListenUnix
	l, err := ListenUnix(dir, 5432)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, ".s.PGSQL.5432")
	if l.Addr().String() != p {
		t.Fatalf("listening on %s, want %s", l.Addr(), p)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o777 {
		t.Fatalf("socket file %s: %v %v", p, st.Mode(), err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := ListenUnix(dir, 5432); !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("second listener on a live socket: want ErrSocketInUse, got %v", err)
	}
	l.Close()
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("socket file after Close: %v", err)
	}

	// A file left behind by a process that died: bound, never closed.
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: p}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("stale socket file: %v", err)
	}
	l2, err := ListenUnix(dir, 5432)
	if err != nil {
		t.Fatalf("stale socket file not replaced: %v", err)
	}
	c, err := net.Dial("unix", p)
	if err != nil {
		t.Fatalf("dial the new listener: %v", err)
	}
	c.Close()
	l2.Close()

	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if _, err := ListenUnix(long, 5432); err == nil || !strings.Contains(err.Error(), "shorter directory") {
		t.Fatalf("too long a path: want a clear error, got %v", err)
	}
}
