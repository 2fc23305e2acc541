package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPhysicalFencePartition: the physical engine's fence when the
// primary is cut off, not killed. n1 (the primary, with its managed
// PostgreSQL) lives in one network namespace, n2 and the witness (the
// coordinator's majority without n1) in another, both plugged into a
// switch with the router and the test (TestPartitionPrimaryFromVoters'
// layout). The cut isolates the two namespaces from each other only: n1
// loses the coordinator and its standby, its PostgreSQL keeps running and
// its clients (next to it, and the router) still reach it. PostgreSQL
// acknowledges commits itself, so the lease cannot gate them; the engine
// freezes the server once the lease ran out, and kills it once
// lease_grace more passed without the lease. Checked:
//
//   - n1 fences its server (its log says the lease was lost and the server
//     froze before cut + lease + grace, the earliest the coordinator may
//     promote n2; the server is down, postmaster.pid gone, while the cut
//     lasts), and a new session next to n1 cannot write any more;
//   - no commit is acknowledged by n1 later than cut + lease + grace, nor
//     after the new epoch's first (partitionTrial's client-side history);
//   - n2 is promoted, the router's writers go on;
//   - at 2-safe-received every commit acknowledged by n1, before or after
//     the cut, is on n2 (1-safe: the commits n1 answered between the cut
//     and its fence are lost, and counted; the fence's timing is checked
//     the same);
//   - healed, n1 follows the map: pg_rewind (it waits for n2's checkpoint
//     after the promotion) and streams from n2, holding what n2 holds.
//
// Needs root and iproute2 (ip, tc): skipped otherwise (failed in CI).
func TestPhysicalFencePartition(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	for _, level := range []string{"2-safe-received", "1-safe"} {
		t.Run(level, func(t *testing.T) {
			lab := newNetLab(t, "a", "v")
			h := writePartitionFile(t, placement{
				ip:     map[string]string{"n1": lab.ip("a"), "n2": lab.ip("v"), "witness": lab.ip("v"), "router": lab.rootIP},
				wrap:   map[string][]string{"n1": lab.exec("a"), "n2": lab.exec("v"), "witness": lab.exec("v")},
				engine: "physical",
			}, level)
			t.Cleanup(func() {
				if t.Failed() {
					for _, id := range []string{"n1", "n2"} {
						b, _ := os.ReadFile(filepath.Join(h.dir, "run", id, "postgres.log"))
						t.Logf("%s server log (tail):\n%s", id, tailText(string(b), 25))
					}
				}
			})
			partitionTrial(t, level, partitionSetup{h: h, n1Dial: lab.dial("a"),
				cut:             func() { lab.isolate(true, "a", "v") },
				heal:            func() { lab.isolate(false, "a", "v") },
				duringCut:       func(cut time.Time) { checkPhysicalFence(t, h, lab.dial("a"), cut) },
				standbyReported: true,
			})
			// The old primary rejoined by rewinding to n2's timeline.
			if logs, _ := os.ReadFile(filepath.Join(h.dir, "n1.log")); !strings.Contains(string(logs), "pg_rewind to the new primary's timeline") || strings.Contains(string(logs), "pg_rewind failed") {
				t.Errorf("n1 did not rejoin by pg_rewind:\n%s", tailLog(h, "n1"))
			}
		})
	}
}

// checkPhysicalFence: while the cut lasts, the cut-off primary's server is
// down, it went down before cut + lease + grace, and a session next to it
// cannot write.
func checkPhysicalFence(t *testing.T, h *hsCluster, dial dialFunc, cut time.Time) {
	t.Helper()
	pid := filepath.Join(h.dir, "run", "n1", "pgdata", "postmaster.pid")
	if _, err := os.Stat(pid); err == nil {
		t.Errorf("n1's PostgreSQL still runs %v after the cut (%s exists): the lease ran out %v after it at the latest", time.Since(cut).Round(time.Millisecond), pid, h.lease)
	}
	lost, ok1 := logTime(filepath.Join(h.dir, "n1.log"), "this primary lost its lease")
	down, ok2 := logTime(filepath.Join(h.dir, "n1.log"), "the fenced primary's server is down")
	switch {
	case !ok1 || !ok2:
		t.Errorf("n1's log does not say it lost its lease and stopped its server:\n%s", tailLog(h, "n1"))
	case lost.Before(cut.Add(-10 * time.Millisecond)): // the log's clock has ms
		t.Errorf("n1 fenced itself %v before the cut", cut.Sub(lost))
	case lost.After(cut.Add(h.lease + h.grace)):
		// The stop itself (SIGQUIT: every backend quits at once) ends the
		// acknowledgements; the postmaster's exit (down) may take longer
		// on a loaded machine. What clients saw is partitionTrial's check.
		t.Errorf("n1 began stopping its server only %v after the cut (down %v after it), later than lease + grace (%v): the coordinator may have promoted n2 before",
			lost.Sub(cut).Round(time.Millisecond), down.Sub(cut).Round(time.Millisecond), h.lease+h.grace)
	default:
		t.Logf("n1 lost its lease %v after the cut, its server was down %v after it (lease %v, grace %v)",
			lost.Sub(cut).Round(time.Millisecond), down.Sub(cut).Round(time.Millisecond), h.lease, h.grace)
	}
	// A new session next to n1 (its clients still reach it) cannot write.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := pgConfig(t, h.dsn(h.nodes["n1"]), dial)
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		_, err = c.Exec(ctx, "INSERT INTO t VALUES (-1000, 'after the fence')")
		c.Close(context.Background())
		if err == nil {
			t.Errorf("a new session next to the cut-off n1 committed a write %v after the cut", time.Since(cut).Round(time.Millisecond))
		}
	}
	if err != nil {
		t.Logf("a write next to the cut-off n1 is refused: %v", err)
	}
}

// logTime is the time of the first line of a node's log (slog text:
// time=RFC3339) that contains msg.
func logTime(path, msg string) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, msg) || !strings.HasPrefix(line, "time=") {
			continue
		}
		v, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		if ts, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return ts, true
		}
	}
	return time.Time{}, false
}
