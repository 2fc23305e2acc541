//go:build !linux

package router

import "context"

// splitLoop: routed sessions run on goroutines off Linux.
type splitLoop struct{ inline bool }

func (s *splitSession) serveLoop(context.Context) (bool, error) { return false, nil }

func (*splitLoop) dispatch(s *splitSession, end bool) error { return s.dispatch(end) }

func (*splitLoop) endSession() {}

func (*splitLoop) addNode(*splitSession, *nodeConn) error { return nil }

func (*splitLoop) abandonNode(int) bool { return false }
