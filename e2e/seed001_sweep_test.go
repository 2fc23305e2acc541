package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/backend/postgres"
	"github.com/tandemdb/tandem/bench/sweep"
)

// TestSweepSeed001CLI runs `tandem bench sweep --suite seed001` tiny (a
// small TM1, 1 s windows, 1 round) through the real binary on SQLite:
// the printed table and sweep.json's seed 001 table have every
// configuration of the suite, each measured, with its gain or overhead
// against the best; the router's rows say where it sent the transactions
// (writes on n1; round-robin puts reads on n2 too); the HTML report has
// the section; nothing the sweep started is left. PostgreSQL's peers are
// left out only when PostgreSQL (or, for its HAProxy row, HAProxy; for
// its pgpool-II row, pgpool-II) is not installed; pgpool's row says how
// many SELECTs it sent to each server (its pass-through row is left to
// bench/sweep's TestSweepPgpool).
func TestSweepSeed001CLI(t *testing.T) {
	want, err := sweep.SelectSuite(sweep.SuiteSeed001, "sqlite", "all")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range want {
		if c.System == sweep.SystemPostgres {
			if _, err := postgres.FindBinDir(""); err != nil {
				t.Logf("PostgreSQL's peers left out (%s): PostgreSQL is not installed: %v", c.Name, err)
				continue
			}
			if strings.Contains(c.Name, "haproxy") {
				if _, err := sweep.FindHAProxy(); err != nil {
					t.Logf("%s left out: %v", c.Name, err)
					continue
				}
			}
			if strings.Contains(c.Name, "pgpool") {
				if _, err := sweep.FindPgpool(); err != nil {
					t.Logf("%s left out: %v", c.Name, err)
					continue
				}
				if c.Shape == sweep.ShapePgpoolPassive {
					// The same started pgpool with the standby's weight 0
					// (a reload): bench/sweep's TestSweepPgpool runs it; CI
					// time is saved here.
					t.Logf("%s left out: TestSweepPgpool covers it", c.Name)
					continue
				}
			}
		}
		names = append(names, c.Name)
	}
	// A short directory: PostgreSQL's Unix sockets live under it.
	tmp, err := os.MkdirTemp("", "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	// pgpool-II's children rename themselves (their command lines do not
	// name tmp): they are found by executable and working directory.
	pgpoolBefore := pgpoolProcs(tmp)
	out := filepath.Join(tmp, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tandemBin, "bench", "sweep", "--suite", "seed001", "--backend", "sqlite",
		"--configs", strings.Join(names, ","), "--mixes", "r80w20", "--subscribers", "1000", "--clients", "3",
		"--rampup", "500ms", "--duration", "1s", "--rounds", "1", "--out", out)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tandem bench sweep --suite seed001: %v\n%s", err, b)
	}
	text := string(b)
	t.Logf("tandem bench sweep --suite seed001:\n%s", text)
	if !strings.Contains(text, "seed 001 table: TM1 R80W20") {
		t.Errorf("no seed 001 table printed:\n%s", text)
	}
	for _, c := range want {
		if !slices.Contains(names, c.Name) {
			continue
		}
		if !strings.Contains(text, c.Name) || !strings.Contains(text, c.Shape) {
			t.Errorf("printed table lacks %s (%s)", c.Name, c.Shape)
		}
	}

	raw, err := os.ReadFile(filepath.Join(out, sweep.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var rep sweep.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Params.Suite != sweep.SuiteSeed001 || len(rep.Seed001) != 1 {
		t.Fatalf("sweep.json: suite %q, %d seed 001 tables; want seed001 and 1 (TM1 R80W20)", rep.Params.Suite, len(rep.Seed001))
	}
	tb := rep.Seed001[0]
	if len(tb.Rows) != len(names) {
		t.Fatalf("seed 001 table has %d rows, want %d (%s)", len(tb.Rows), len(names), strings.Join(names, ", "))
	}
	best := 0.0
	for i, r := range tb.Rows {
		if r.Config != names[i] {
			t.Errorf("row %d is %s, want %s", i, r.Config, names[i])
		}
		if r.MQTh <= 0 || r.VsBest == nil || *r.VsBest > 1e-9 || r.VsN1 == nil {
			t.Errorf("%s (%s): MQTh %v, vs best %v, vs n1 %v: want measured, <= 0 %% against the best", r.Config, r.Shape, r.MQTh, r.VsBest, r.VsN1)
		}
		best = max(best, r.MQTh)
		switch {
		case r.Shape == sweep.ShapePgpool || r.Shape == sweep.ShapePgpoolPassive:
			// pgpool-II counts the SELECTs it sent to each server; with the
			// standby's weight 0 none went to n2.
			if r.Routed != nil || r.Selects["n1"]+r.Selects["n2"] <= 0 {
				t.Errorf("%s: routed %v, SELECTs per node %v; want no router and SELECTs counted", r.Config, r.Routed, r.Selects)
			}
			if r.Shape == sweep.ShapePgpoolPassive && r.Selects["n2"] != 0 {
				t.Errorf("%s: pgpool sent n2 %d SELECTs with its weight 0", r.Config, r.Selects["n2"])
			}
		case strings.HasPrefix(r.Shape, "n1+n2+"):
			// Every write goes to n1; the router reports what it routed.
			if r.Routed["n1"] <= 0 {
				t.Errorf("%s: the router sent n1 %d transactions, want > 0 (writes): %v", r.Config, r.Routed["n1"], r.Routed)
			}
			if r.Shape == "n1+n2+round-robin" && r.Routed["n2"] <= 0 {
				t.Errorf("%s: round-robin sent n2 no transaction (reads are balanced): %v", r.Config, r.Routed)
			}
		case r.Routed != nil:
			t.Errorf("%s (%s) has routed transactions without a router: %v", r.Config, r.Shape, r.Routed)
		}
	}
	if tb.BestMQTh != best {
		t.Errorf("best case %s %v MQTh, but the highest row is %v", tb.Best, tb.BestMQTh, best)
	}
	html, err := os.ReadFile(filepath.Join(out, sweep.FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "Seed 001's table") {
		t.Error("sweep.html has no seed 001 section")
	}
	// Nothing of the sweep is left: its processes ran under tmp, and its
	// temporary directory (under TMPDIR) is gone; only --out is left.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		c, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(c), tmp) {
			t.Errorf("still running after the sweep: %s %q", f, c)
		}
	}
	for pid := range pgpoolProcs(tmp) {
		if !pgpoolBefore[pid] {
			t.Errorf("pgpool-II process %d still running after the sweep", pid)
		}
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		if e.Name() != "out" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// pgpoolProcs lists the running processes whose executable is pgpool
// and whose working directory is under dir (none without pgpool-II): the
// sweep runs each pgpool-II in its own directory, and another test binary
// (bench/sweep's tests) may run one of its own at the same time.
func pgpoolProcs(dir string) map[int]bool {
	out := map[int]bool{}
	bin, err := sweep.FindPgpool()
	if err != nil {
		return out
	}
	real, _ := filepath.EvalSymlinks(bin)
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, e := range exes {
		target, err := os.Readlink(e)
		if err != nil || (target != bin && target != real) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err != nil || !strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			continue
		}
		out[pid] = true
	}
	return out
}
