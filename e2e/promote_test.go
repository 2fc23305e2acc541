package e2e

import (
	"context"
	"encoding/json"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/node"
)

// promoteWriters insert unique ids through dsn until stop or their first
// error; they return every id whose COMMIT was acknowledged and the
// SQLSTATE (or "conn" for a lost connection) of each writer's last error.
func promoteWriters(ctx context.Context, dsn string, n int, count *atomic.Int64) ([]int64, map[string]int) {
	var mu sync.Mutex
	var acked []int64
	codes := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var c *pgx.Conn
			var err error
			for tries := 0; tries < 50; tries++ {
				if c, err = pgx.Connect(context.Background(), dsn); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				return
			}
			defer c.Close(context.Background())
			for i := 1; ctx.Err() == nil; i++ {
				id := int64(w)*10_000_000 + int64(i)
				qctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := c.Exec(qctx, "INSERT INTO t VALUES ($1, $2)", id, "w"+strconv.Itoa(w))
				cancel()
				if err != nil {
					code := sqlState(err)
					if code == "" {
						code = "conn"
					}
					mu.Lock()
					codes[code]++
					mu.Unlock()
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
				count.Add(1)
			}
		}(w)
	}
	wg.Wait()
	return acked, codes
}

// TestPromoteForced: `tandem promote` while the primary answers is refused
// (pointing to switchover); with --force it fences the old primary first,
// so at every safeness level, 1-safe included, every commit a client saw
// acknowledged is on the new primary. Writers go through the router in
// even trials and straight to the primary in odd ones. A commit that was
// waiting for its acknowledgement when the role moved answers 40001 or
// 08007, never success without its row. TANDEM_FAULT_TRIALS sets the trials
// per level (default 2; `make test-faults`: 20).
func TestPromoteForced(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			if testing.Short() {
				t.Skip("fault test")
			}
			trials := faultTrials()
			for _, level := range []string{"1-safe", "2-safe-received", "2-safe-visible", "2-safe-durable"} {
				t.Run(level, func(t *testing.T) {
					ackedTotal := 0
					allCodes := map[string]int{}
					for trial := 0; trial < trials; trial++ {
						h := writeHS(t, level, "relaxed", "")
						h.start("n1")
						h.start("n2")
						h.start("router")
						createTestTable(t, h.dsn(h.router))
						dsn, path := h.dsn(h.router), "router"
						if trial%2 == 1 {
							dsn, path = h.dsn(h.nodes["n1"]), "primary"
						}
						ctx, cancel := context.WithCancel(context.Background())
						done := make(chan struct{})
						var acked []int64
						var codes map[string]int
						var count atomic.Int64
						go func() { acked, codes = promoteWriters(ctx, dsn, 4, &count); close(done) }()
						target := int64(10 + rand.Intn(300))
						for wait := time.Now().Add(20 * time.Second); count.Load() < target && time.Now().Before(wait); {
							time.Sleep(2 * time.Millisecond)
						}
						// Without --force: refused, the primary keeps its role.
						out, err := exec.Command(tandemBin, "promote", "n2", "-c", h.file).CombinedOutput()
						if err == nil || !strings.Contains(string(out), "switchover") {
							cancel()
							t.Fatalf("promote without --force while the primary answers: err=%v, want a refusal naming switchover\n%s", err, out)
						}
						before := count.Load()
						for wait := time.Now().Add(5 * time.Second); count.Load() == before && time.Now().Before(wait); {
							time.Sleep(5 * time.Millisecond)
						}
						if count.Load() == before {
							cancel()
							t.Fatalf("writers stopped after a refused promote")
						}
						out2 := h.tandem("promote", "n2", "--force")
						if !strings.Contains(out2, "fenced the primary n1") || !strings.Contains(out2, "lost: 0 GSNs") {
							t.Errorf("promote --force said: %s", out2)
						}
						select {
						case <-done:
						case <-time.After(5 * time.Second):
							// Writers on the router keep committing on n2: stop them.
						}
						cancel()
						select {
						case <-done:
						case <-time.After(60 * time.Second):
							t.Fatal("writers hung after the forced promote")
						}
						have := ids(t, h.dsn(h.nodes["n2"]))
						lost := 0
						for _, id := range acked {
							if !have[id] {
								lost++
							}
						}
						if len(acked) == 0 {
							t.Fatalf("trial %d: no commit acknowledged", trial)
						}
						if lost > 0 {
							t.Fatalf("trial %d (%s): %d of %d acknowledged commits lost at %s after promote --force (writer errors %v)\n%s", trial, path, lost, len(acked), level, codes, out2)
						}
						for c, n := range codes {
							allCodes[c] += n
						}
						ackedTotal += len(acked)
						t.Logf("trial %d (%s): %d acknowledged, 0 lost, writer errors %v; promote said: %s", trial, path, len(acked), codes, strings.TrimSpace(strings.ReplaceAll(out2, "\n", "; ")))
						h.stopAll()
					}
					t.Logf("%s: %d trials, %d acknowledged commits, 0 lost; writer errors %v", level, trials, ackedTotal, allCodes)
				})
			}
		})
	}
}

// TestWaitingCommitHandedOver: a commit waiting for its standby's
// acknowledgement (the standby was SIGKILLed) on a primary that is then
// told to follow another node never answers success: 40001 when the new
// primary's last GSN is known and below the commit's, 08007 when it is not
// known. Before the fix it answered success once ack_timeout (5 s) made
// the primary degrade. The waiting is in the replication agent, the same
// on both back ends; this runs on SQLite.
func TestWaitingCommitHandedOver(t *testing.T) {
	for _, c := range []struct {
		name     string
		uptoKnow bool
		want     string
	}{
		{"new primary behind", true, "40001"},
		{"unknown", false, "08007"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := writeHSOn(t, "sqlite", "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			ctx := context.Background()
			p := connect(t, h.dsn(h.nodes["n1"]))
			defer p.Close(ctx)
			if _, err := p.Exec(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT)"); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Exec(ctx, "INSERT INTO t VALUES (1, 'acked')"); err != nil {
				t.Fatal(err)
			}
			var st struct {
				Replication struct {
					Assigned uint64 `json:"assigned_gsn"`
				} `json:"replication"`
			}
			getStatus(t, h.admin["n1"], &st)
			upto := st.Replication.Assigned // the standby has everything up to here
			h.kill("n2")
			res := make(chan error, 1)
			go func() {
				_, err := p.Exec(ctx, "INSERT INTO t VALUES (2, 'waits')")
				res <- err
			}()
			select {
			case err := <-res:
				t.Fatalf("the commit returned (%v) with its standby dead, before ack_timeout", err)
			case <-time.After(500 * time.Millisecond):
			}
			q := url.Values{"primary": {"n2"}}
			if c.uptoKnow {
				q.Set("upto", strconv.FormatUint(upto, 10))
			}
			adminPostE2E(t, h, "n1", "/admin/follow", q)
			select {
			case err := <-res:
				if got := sqlState(err); got != c.want {
					t.Fatalf("the waiting commit answered %v (SQLSTATE %q), want %s", err, got, c.want)
				}
				t.Logf("the waiting commit answered: %v", err)
			case <-time.After(3 * time.Second):
				t.Fatal("the waiting commit did not answer within 3 s of the handover")
			}
		})
	}
}

// getStatus reads a node's /status. A process is started once its front
// door answers; its admin address binds a moment later, so a refused
// connection is retried for a few seconds.
func getStatus(t *testing.T, admin string, out any) {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/status")
	for wait := time.Now().Add(5 * time.Second); err != nil && time.Now().Before(wait); {
		time.Sleep(20 * time.Millisecond)
		resp, err = http.Get("http://" + admin + "/status")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// adminPostE2E posts an admin action to a node with the cluster's admin
// token, as the command line does.
func adminPostE2E(t *testing.T, h *hsCluster, id, path string, q url.Values) {
	t.Helper()
	c, err := config.Load(h.file)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := node.AdminToken(c, false)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.admin[id]+path+"?"+q.Encode(), nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s to %s: %s %s", path, id, resp.Status, b)
	}
}
