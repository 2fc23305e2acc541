//go:build !linux

package router

import (
	"context"
	"net"
)

// servePoll: only Linux has the epoll pass-through; elsewhere sessions use
// the two-goroutine relay.
func (r *relay) servePoll(ctx context.Context) (bool, error) { return false, nil }

// loopable: the connection as dialed (no epoll loops to take it over).
func loopable(c net.Conn) net.Conn { return c }
