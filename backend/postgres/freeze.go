package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/tandemdb/tandem/internal/proctree"
)

// Freezing a server: every process of it stopped (SIGSTOP) where it is, and
// later either continued (Thaw) or killed (SIGKILL, by Stop, StopImmediate
// or Kill of a frozen server), never both. The physical engine's fence: a
// primary whose lease lapsed must take no write from then on, yet most
// lapses end with the same primary renewed (a Raft election, a short
// stall), and a frozen server continues with its sessions, its buffers and
// its WAL senders where they were, where a stopped one had to run crash
// recovery and lose every session. A server that another node replaced in
// the meantime is killed while still frozen: a backend continued after its
// postmaster died could still finish a 1-safe commit and answer it.

// ErrNotRunning: the server has exited.
var ErrNotRunning = errors.New("the server is not running")

// freezeWait bounds how long Freeze waits for one process to stop.
const freezeWait = 2 * time.Second

// Freeze stops the postmaster (so that it forks no new process), then every
// process under it, and returns once all of them are stopped. Safe to call
// on a frozen server.
func (m *Managed) Freeze() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.done:
		return ErrNotRunning
	default:
	}
	pm := m.cmd.Process.Pid
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("freeze the postmaster (pid %d): %w", pm, err)
	}
	m.frozen = true
	if err := waitStopped(pm); err != nil {
		return err
	}
	// The postmaster is stopped: the set of its descendants can only
	// shrink. Stop each until a pass finds all of them stopped.
	for pass := 0; ; pass++ {
		running := 0
		for _, pid := range proctree.Descendants(pm) {
			if st := proctree.State(pid); st == 'T' || st == 't' || st == 'Z' || st == 0 {
				continue
			}
			running++
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			if err := waitStopped(pid); err != nil && processAlive(pid) {
				return err
			}
		}
		if running == 0 {
			return nil
		}
		if pass > 100 {
			return fmt.Errorf("freeze: processes of the server (postmaster %d) keep running", pm)
		}
	}
}

// Thaw continues a frozen server's processes (the postmaster last). A
// running server that is not frozen is left alone; ErrNotRunning once the
// server has exited (a frozen server that was killed).
func (m *Managed) Thaw() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.done:
		return ErrNotRunning
	default:
	}
	if !m.frozen {
		return nil
	}
	pm := m.cmd.Process.Pid
	for _, pid := range proctree.Descendants(pm) {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	if err := syscall.Kill(pm, syscall.SIGCONT); err != nil {
		return fmt.Errorf("thaw the postmaster (pid %d): %w", pm, err)
	}
	m.frozen = false
	return nil
}

// Frozen reports whether the server is frozen.
func (m *Managed) Frozen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frozen
}

// killIfFrozen kills a frozen server's processes (each of them: backends
// are in sessions of their own, out of the postmaster's process group) and
// waits for them to be gone; false when the server was not frozen.
func (m *Managed) killIfFrozen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.frozen {
		return false
	}
	pm := m.cmd.Process.Pid
	kids := proctree.Descendants(pm)
	_ = syscall.Kill(pm, syscall.SIGKILL)
	for _, pid := range kids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-m.done
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range kids {
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	m.frozen = false
	// Its lock files name a dead process now: gone, as after a shutdown.
	log := m.cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	_ = clearStaleLock(context.Background(), m.cfg.DataDir, log)
	_ = clearStaleLockFile(context.Background(), socketPath(m.socketDir(), m.port)+".lock", log)
	return true
}

// waitStopped waits until pid is stopped (or gone).
func waitStopped(pid int) error {
	deadline := time.Now().Add(freezeWait)
	for {
		switch proctree.State(pid) {
		case 'T', 't', 'Z', 'X', 0:
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freeze: process %d did not stop within %v", pid, freezeWait)
		}
		time.Sleep(200 * time.Microsecond)
	}
}
