package cluster

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// Ports hands out free loopback addresses for a cluster file written on
// the fly (benchmarks, tests). Each address stays held by a listener until
// Release, so that one file never gets the same port twice: picked one at a
// time and closed at once, the kernel may hand the same port out again.
type Ports struct{ held []net.Listener }

// Addr is a free 127.0.0.1 address, held until Release.
func (p *Ports) Addr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	p.held = append(p.held, l)
	return l.Addr().String(), nil
}

// Release frees every address handed out (call it once the file is
// written, before the processes that listen there start).
func (p *Ports) Release() {
	for _, l := range p.held {
		l.Close()
	}
	p.held = nil
}

// PortTaken reports whether Start failed because a process could not bind
// an address Ports had picked: between Release and the bind, another
// process may take the port (an outgoing connection gets an ephemeral port
// of the same range). The remedy is a cluster file with new ports and
// another Start; the processes report it in their log, which the error
// quotes, hence the text.
func PortTaken(err error) bool {
	return errors.Is(err, ErrNotReady) && strings.Contains(err.Error(), "address already in use")
}
