//go:build !linux

package pgwire

import "net"

// clientGone cannot tell without reading where there is no POLLRDHUP: a
// hang-up is then noticed at the next read or write.
func clientGone(net.Conn) bool { return false }
