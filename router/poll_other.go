//go:build !linux

package router

import "context"

// servePoll: only Linux has the epoll pass-through; elsewhere sessions use
// the two-goroutine relay.
func (r *relay) servePoll(ctx context.Context) (bool, error) { return false, nil }
