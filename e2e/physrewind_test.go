package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPhysicalRewindWaitsForCheckpoint: an old primary that returns while
// the new primary has not yet checkpointed since its promotion (so its
// pg_control still names the old timeline) waits before pg_rewind, and
// rejoins once the checkpoint happened. Without the wait pg_rewind reads
// the old timeline, says "no rewind required", and the old primary, whose
// WAL went past the fork, cannot stream.
//
// The race is made certain: n2's WAL receiver is stopped (SIGSTOP) while
// n1 commits at 1-safe, so n1's WAL goes past what n2 holds; n1's node
// and server are SIGKILLed; n2's checkpointer is stopped before `tandem
// promote n2`, so neither the promotion's checkpoint nor the engine's
// forced one can happen; n1 restarts (it finds the newer epoch and must
// rewind); n2's checkpointer resumes only 5 s later.
func TestPhysicalRewindWaitsForCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	h := physicalHS(t, "1-safe", "", false)
	h.start("n1")
	h.start("n2")
	p := &physPair{t: t, file: h.file, nodes: h.nodes, admin: h.admin, logDir: h.dir}
	p.waitStreaming("n1", "n2")
	c := connect(t, h.dsn(h.nodes["n1"]))
	if _, err := c.Exec(context.Background(), "CREATE TABLE t (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	c.Close(context.Background())
	insertRows(t, h.dsn(h.nodes["n1"]), 0, 50)

	receiver := pgChild(t, h, "n2", "walreceiver")
	stopProc(t, receiver, syscall.SIGSTOP)
	insertRows(t, h.dsn(h.nodes["n1"]), 50, 100) // n2 does not receive these
	h.kill("n1")
	stopProc(t, receiver, syscall.SIGCONT) // pg_promote waits for it to exit

	checkpointer := pgChild(t, h, "n2", "checkpointer")
	stopProc(t, checkpointer, syscall.SIGSTOP)
	defer syscall.Kill(checkpointer, syscall.SIGCONT) // a failure before the goroutine below
	out := h.tandem("promote", "n2")
	if !strings.Contains(out, "node n2 is the primary of epoch 2") {
		t.Fatalf("promote: %s", out)
	}
	if s := p.status("n2"); s.Physical.Timeline != 2 || s.Physical.CheckpointTimeline != 1 {
		t.Fatalf("n2 after the promotion with its checkpointer stopped: timeline %d, checkpoint_timeline %d; want 2 and 1", s.Physical.Timeline, s.Physical.CheckpointTimeline)
	}

	go func() {
		time.Sleep(5 * time.Second)
		// From this goroutine only the signal (t.Fatal is for the test's).
		_ = syscall.Kill(checkpointer, syscall.SIGCONT)
	}()
	h.start("n1") // rewinds before it serves: waits for the checkpoint
	p.waitStreaming("n2", "n1")
	if s := p.status("n1"); s.Role != "standby" || s.Physical.Epoch != 2 {
		t.Fatalf("n1 after its restart: %+v", s.Physical)
	}
	logs, _ := os.ReadFile(filepath.Join(h.dir, "n1.log"))
	for _, want := range []string{"waiting for the new primary's checkpoint before pg_rewind", "the new primary's checkpoint is done", "pg_rewind to the new primary's timeline"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("n1's log lacks %q:\n%s", want, tailText(string(logs), 30))
		}
	}
	if strings.Contains(string(logs), "pg_rewind failed") {
		t.Errorf("n1 rejoined by a base backup, not by pg_rewind:\n%s", tailText(string(logs), 30))
	}
	if s := p.status("n2"); s.Physical.CheckpointTimeline != 2 {
		t.Errorf("n2's pg_control names timeline %d after its checkpoint, want 2", s.Physical.CheckpointTimeline)
	}
	// n1 holds n2's rows (the 50 n2 never received are gone from n1: the
	// rewind discarded them) and streams what n2 commits next.
	insertRows(t, h.dsn(h.nodes["n2"]), 1000, 1010)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		a, err1 := idsErr(h.dsn(h.nodes["n1"]))
		b, err2 := idsErr(h.dsn(h.nodes["n2"]))
		if err1 == nil && err2 == nil && len(a) == len(b) && a[1009] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 has %d rows (%v), n2 %d (%v)", len(a), err1, len(b), err2)
		}
	}
}

// pgChild is the pid of the process of node id's managed PostgreSQL whose
// title names what ("checkpointer", "walreceiver").
func pgChild(t *testing.T, h *hsCluster, id, what string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.dir, "run", id, "pgdata", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	postmaster, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("postmaster.pid of %s: %v", id, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...: comm may hold spaces.
			rest := string(stat)
			if i := strings.LastIndexByte(rest, ')'); i >= 0 {
				rest = rest[i+1:]
			}
			f := strings.Fields(rest)
			if len(f) < 2 || f[1] != strconv.Itoa(postmaster) {
				continue
			}
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.Contains(string(cmd), what) {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s process under %s's postmaster %d", what, id, postmaster)
		}
	}
}

func stopProc(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("signal %v to %d: %v", sig, pid, err)
	}
}
