package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPhysicalFreezeThaw: a lease lapse that ends costs the physical
// primary a pause, not its server (physical/DESIGN.md "Fencing: freeze,
// then kill"). n2's node and the witness are stopped (SIGSTOP: the
// coordinator loses its majority; n2's PostgreSQL keeps streaming), so n1
// cannot renew its lease and freezes its server; they are continued well
// within lease_grace of the freeze. Checked:
//
//   - n1 logs the freeze, and every process of its server is stopped;
//   - a COMMIT sent while frozen gets no answer until the lease is back,
//     then commits on the same connection (the transaction was open across
//     the freeze);
//   - the postmaster is the same process (no restart, no crash recovery),
//     nothing was killed, n1 is still the primary of epoch 1 and says its
//     server went on.
func TestPhysicalFreezeThaw(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	h := physicalHS(t, "2-safe-received", "failover = \"automatic\"\nlease = \"1s\"\nlease_grace = \"5s\"\nack_timeout = \"2s\"\n", true)
	p := h.startCoordinatedPair()
	createTestTable(t, h.dsn(h.router))
	adm := newAdmins(t, h.file, nil)
	adm.waitState(t, "n1", 30*time.Second, "n1 the primary of epoch 1 holding the lease", func(s nodeState) bool {
		return s.Role == "primary" && s.Repl.Epoch == 1 && s.Coord != nil && s.Coord.LeaseHolder == "n1"
	})
	pgdata := filepath.Join(h.dir, "run", "n1", "pgdata")
	pmBefore := postmasterPID(t, pgdata)

	ctx := context.Background()
	c := connect(t, h.dsn(h.nodes["n1"]))
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO t VALUES (1, 'across the freeze')"); err != nil {
		t.Fatal(err)
	}

	resume := h.pause("witness", "n2")
	stopped := time.Now()
	n1log := filepath.Join(h.dir, "n1.log")
	waitLog(t, n1log, "its server is frozen")
	t.Logf("n1 froze its server %v after the coordinator's majority stopped", time.Since(stopped).Round(time.Millisecond))
	for _, pid := range append([]int{pmBefore}, childPIDs(pmBefore)...) {
		if st := procStateOf(pid); st != 'T' && st != 'Z' && st != 0 { // an exited backend not yet reaped is done
			t.Errorf("process %d of n1's frozen server is in state %q", pid, st)
		}
	}

	res := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, "COMMIT")
		res <- err
	}()
	select {
	case err := <-res:
		resume()
		t.Fatalf("a COMMIT on the frozen server was answered (err %v)", err)
	case <-time.After(700 * time.Millisecond):
	}
	resume()
	resumedAt := time.Now()
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("the COMMIT of the transaction open across the freeze: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the COMMIT was not answered 20 s after the coordinator's majority came back:\n%s", tailLog(h, "n1"))
	}
	t.Logf("the COMMIT was answered %v after the majority came back", time.Since(resumedAt).Round(time.Millisecond))
	waitLog(t, n1log, "its server goes on")
	if b, _ := os.ReadFile(n1log); strings.Contains(string(b), "the frozen server was killed") || strings.Contains(string(b), "the fenced primary's server is down") {
		t.Fatalf("n1 killed or stopped its server although the lease came back within lease_grace:\n%s", tailLog(h, "n1"))
	}
	if pm := postmasterPID(t, pgdata); pm != pmBefore {
		t.Fatalf("n1's postmaster is pid %d, was %d: the server restarted", pm, pmBefore)
	}
	adm.waitState(t, "n1", 20*time.Second, "n1 still the primary of epoch 1 with the lease", func(s nodeState) bool {
		return s.Role == "primary" && s.Repl.Epoch == 1 && s.Coord != nil && s.Coord.LeaseHolder == "n1"
	})
	var w string
	if err := c.QueryRow(ctx, "SELECT w FROM t WHERE id = 1").Scan(&w); err != nil || w != "across the freeze" {
		t.Fatalf("the row committed across the freeze: %q, %v", w, err)
	}
	// And the pair goes on replicating: a write through the router reaches n2.
	rc := connect(t, h.dsn(h.router))
	defer rc.Close(ctx)
	if _, err := rc.Exec(ctx, "INSERT INTO t VALUES (2, 'after the thaw')"); err != nil {
		t.Fatalf("a write through the router after the thaw: %v", err)
	}
	p.waitStreaming("n1", "n2")
}

// postmasterPID reads the postmaster's pid from a data directory's
// postmaster.pid.
func postmasterPID(t *testing.T, pgdata string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	return pid
}

// procStateOf is the state letter of /proc/PID/stat (0: no such process).
func procStateOf(pid int) byte {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
