package e2e

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// metric returns the text of a node's /metrics.
func metrics(t *testing.T, admin string) string {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricValue is the value of the sample named exactly series (name and
// labels as /metrics prints them) in a /metrics text; 0 when absent.
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return 0
}

// sqliteFile runs statements directly on a stopped node's SQLite file (as
// an operator would with the sqlite3 shell).
func sqliteFile(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s on %s: %v", q, path, err)
		}
	}
}

// TestApplyFailureStopsStandby: a writeset the standby cannot apply (a
// table of the same name created on the standby's own SQLite file while it
// was stopped) makes the standby stop following with an error naming the
// GSN and the statement, reported in its /status and /metrics; the
// primary shows the standby as failed and treats it as lost for safeness:
// a 2-safe commit returns after ack_timeout (on_standby_loss = degrade);
// the standby does not reconnect in a loop. Restarted without a fix it
// still reports the failure; restarted after the operator's fix it
// applies the writeset and follows again (issue 19 item 6).
func TestApplyFailureStopsStandby(t *testing.T) {
	const ackTimeout = time.Second
	h := writeHSOn(t, "sqlite", "2-safe-visible", "relaxed", "ack_timeout = \"1s\"\non_standby_loss = \"degrade\"\n")
	h.start("n1")
	h.start("n2")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := connect(t, h.dsn(h.nodes["n1"]))
	exec := func(sql string) time.Duration {
		t.Helper()
		start := time.Now()
		if _, err := p.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return time.Since(start)
	}
	exec("CREATE TABLE base (id int PRIMARY KEY)")
	exec("INSERT INTO base VALUES (1)")
	waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM base", 1)
	attached := func() {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, ok := replStatus(t, h.admin["n1"]).Standbys["n2"]; ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("n2 did not attach to the primary")
			}
		}
	}

	// The conflicting object, made on the standby's own file.
	n2db := filepath.Join(h.dir, "run", "n2", "tandem.db")
	h.kill("n2")
	sqliteFile(t, n2db, "CREATE TABLE clash (x text)")
	h.start("n2")
	attached()

	took := exec("CREATE TABLE clash (id int PRIMARY KEY, v text)")
	if took < ackTimeout-50*time.Millisecond {
		t.Fatalf("the 2-safe commit the standby cannot apply returned after %v, before ack_timeout %v", took, ackTimeout)
	}
	gsn := replStatus(t, h.admin["n1"]).Assigned
	failedOn := func(what string) {
		t.Helper()
		var st replView
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			// n2 may just have been started: its admin address comes up
			// with it (a CI run asked before it listened).
			var err error
			st, err = tryReplStatus(h.admin["n2"])
			if err == nil && st.ApplyFailed != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: n2's status has no apply_failed: %+v (last error: %v)", what, st, err)
			}
		}
		if f := st.ApplyFailed; f.GSN != gsn || !strings.Contains(f.Statement, "clash") || !strings.Contains(f.Error, "already exists") {
			t.Fatalf("%s: n2's apply_failed %+v, want GSN %d, the CREATE TABLE clash, 'already exists'", what, f, gsn)
		}
		if m := metrics(t, h.admin["n2"]); !strings.Contains(m, "\ntandem_repl_apply_failed 1\n") {
			t.Fatalf("%s: n2's metrics lack tandem_repl_apply_failed 1", what)
		}
		var ps replView
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			ps = replStatus(t, h.admin["n1"])
			if _, ok := ps.FailedStandbys["n2"]; ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the primary does not show n2 as failed: %+v", what, ps)
			}
		}
		if ps.FailedStandbys["n2"].GSN != gsn || !ps.Degraded {
			t.Fatalf("%s: primary's status %+v", what, ps)
		}
		if _, ok := ps.Standbys["n2"]; ok {
			t.Fatalf("%s: the primary still counts n2 as attached", what)
		}
		m := metrics(t, h.admin["n1"])
		if !strings.Contains(m, "\ntandem_repl_standbys_apply_failed 1\n") || !strings.Contains(m, "\ntandem_repl_degraded 1\n") {
			t.Fatalf("%s: primary's metrics lack tandem_repl_standbys_apply_failed 1 / tandem_repl_degraded 1", what)
		}
		out := h.tandem("status")
		if !strings.Contains(out, "APPLY FAILED at GSN") || !strings.Contains(out, "standby n2 failed to apply GSN") {
			t.Fatalf("%s: tandem status does not show the failure:\n%s", what, out)
		}
	}
	failedOn("after the failure")
	// Running degraded: commits return, and the standby does not come back
	// by itself (no reconnect loop).
	logLines := func(name, what string) int {
		b, _ := os.ReadFile(filepath.Join(h.dir, name+".log"))
		return strings.Count(string(b), what)
	}
	attaches := logLines("n1", "standby attached")
	exec("INSERT INTO base VALUES (2)")
	time.Sleep(1500 * time.Millisecond)
	if got := logLines("n1", "standby attached"); got != attaches {
		t.Fatalf("n2 attached %d more times after its apply failure", got-attaches)
	}

	// Restarted without a fix: it retries, fails again, reports again.
	h.kill("n2")
	h.start("n2")
	failedOn("after a restart without a fix")

	// The operator's fix: drop the standby's own table, restart.
	h.kill("n2")
	sqliteFile(t, n2db, "DROP TABLE clash")
	h.start("n2")
	attached()
	exec("INSERT INTO base VALUES (3)")
	want := replStatus(t, h.admin["n1"]).Assigned
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st := replStatus(t, h.admin["n2"])
		if st.Applied == want && st.ApplyFailed == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2 after the fix: %+v, primary at %d", st, want)
		}
	}
	waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM base", 3)
	waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM clash", 0)
	ps := replStatus(t, h.admin["n1"])
	if len(ps.FailedStandbys) != 0 {
		t.Fatalf("primary still shows failed standbys after the fix: %+v", ps.FailedStandbys)
	}
	if m := metrics(t, h.admin["n2"]); !strings.Contains(m, "\ntandem_repl_apply_failed 0\n") {
		t.Fatal("n2's metrics after the fix lack tandem_repl_apply_failed 0")
	}
}

// TestApplyFailureReseeds: with on_apply_failure = reseed, a standby that
// cannot apply a writeset replaces its database with a snapshot of the
// primary's (dropping what made the writeset fail) and follows again
// without the operator: the primary's schema and rows, no apply_failed,
// the re-seed counted in /metrics (issue 19 item 6).
func TestApplyFailureReseeds(t *testing.T) {
	h := writeHSOn(t, "sqlite", "2-safe-visible", "relaxed", "ack_timeout = \"1s\"\non_standby_loss = \"degrade\"\non_apply_failure = \"reseed\"\n")
	h.start("n1")
	h.start("n2")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := connect(t, h.dsn(h.nodes["n1"]))
	exec := func(sql string) {
		t.Helper()
		if _, err := p.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("CREATE TABLE base (id int PRIMARY KEY)")
	exec("INSERT INTO base VALUES (1)")
	waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM base", 1)

	n2db := filepath.Join(h.dir, "run", "n2", "tandem.db")
	h.kill("n2")
	sqliteFile(t, n2db, "CREATE TABLE clash (x text)", "INSERT INTO clash VALUES ('standby only')")
	h.start("n2")

	exec("CREATE TABLE clash (id int PRIMARY KEY, v text)")
	exec("INSERT INTO clash VALUES (1, 'primary')")
	exec("INSERT INTO base VALUES (2)")
	want := replStatus(t, h.admin["n1"]).Assigned
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st := replStatus(t, h.admin["n2"])
		if st.Applied >= want && st.ApplyFailed == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2 did not re-seed and catch up: %+v, primary at %d", st, want)
		}
	}
	waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM base", 2)
	waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM clash WHERE v = 'primary'", 1)
	waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM clash", 1)
	m := metrics(t, h.admin["n2"])
	if !strings.Contains(m, "\ntandem_repl_apply_failure_reseeds_total 1\n") || !strings.Contains(m, "\ntandem_repl_apply_failed 0\n") {
		t.Fatal("n2's metrics lack tandem_repl_apply_failure_reseeds_total 1 / tandem_repl_apply_failed 0")
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ps := replStatus(t, h.admin["n1"])
		if _, ok := ps.Standbys["n2"]; ok && len(ps.FailedStandbys) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the primary does not show n2 attached again: %+v", ps)
		}
	}
	// And it keeps following.
	exec("INSERT INTO base VALUES (3)")
	waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM base", 3)
}
