package pgwire

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// clientGone reports whether the peer of c hung up (or the socket failed),
// without reading from it: poll for POLLRDHUP, as PostgreSQL's
// client_connection_check_interval does.
func clientGone(c net.Conn) bool {
	// Under TLS, and under a transport wrapped around the socket
	// (Config.TLSTransport), is the socket.
	for i := 0; i < 3; i++ {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			gone = fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
		}
	})
	return gone
}
