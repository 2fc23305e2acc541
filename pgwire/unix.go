package pgwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ErrSocketInUse: another process answers on the Unix socket a front door
// was to listen on.
var ErrSocketInUse = errors.New("another process is listening on this Unix socket")

// MaxUnixPath is the longest path a Unix socket may have on Linux (the
// 108 bytes of sun_path, one for the terminating NUL).
const MaxUnixPath = 107

// UnixSocketPath is the socket PostgreSQL's clients open for host=dir
// port=port: dir/.s.PGSQL.<port>, as PostgreSQL names its own.
func UnixSocketPath(dir string, port int) string {
	return filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port))
}

// ListenUnix listens on UnixSocketPath(dir, port), so that psql -h dir
// -p port, libpq, pgx and JDBC's junixsocket reach the front door without
// TCP (a client beside the node saves the TCP loopback path, about a
// fifth of a small query's cost here). The directory is created (0755)
// if missing. A socket file left by a process that is gone (SIGKILL) is
// replaced; one that still answers is ErrSocketInUse. The socket file is
// 0777, as PostgreSQL's default unix_socket_permissions: clients still
// authenticate; the directory's permissions decide who may reach it.
// Closing the listener removes the file.
func ListenUnix(dir string, port int) (net.Listener, error) {
	p := UnixSocketPath(dir, port)
	if len(p) > MaxUnixPath {
		return nil, fmt.Errorf("unix socket path %s is %d bytes, over the kernel's %d: choose a shorter directory", p, len(p), MaxUnixPath)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("unix socket directory: %w", err)
	}
	if _, err := os.Lstat(p); err == nil {
		if c, err := net.DialTimeout("unix", p, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", p, ErrSocketInUse)
		}
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("remove stale unix socket: %w", err)
		}
	}
	l, err := net.Listen("unix", p)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(p, 0o777); err != nil {
		l.Close()
		return nil, fmt.Errorf("unix socket permissions: %w", err)
	}
	return l, nil
}

// ServeUnix serves s also on ListenUnix(dir, port) until ctx ends or the
// returned listener is closed (which removes the socket file: close it
// before the process exits). An empty dir serves nothing (nil, nil).
func (s *Server) ServeUnix(ctx context.Context, dir string, port int) (net.Listener, error) {
	if dir == "" {
		return nil, nil
	}
	l, err := ListenUnix(dir, port)
	if err != nil {
		return nil, err
	}
	go func() { _ = s.Serve(ctx, l) }()
	return l, nil
}

// isLocal reports a connection over a Unix socket: it never leaves the
// host, so it needs no TLS (PostgreSQL's "local" lines ask none either).
func isLocal(c net.Conn) bool {
	_, ok := c.(*net.UnixConn)
	return ok
}
