package e2e

import (
	"context"
	"math/rand"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestForcedPromoteLosesNothing (issue 18 item 5): while 4 writers commit
// through the router, `tandem promote n2` is refused because the primary
// answers; `tandem promote n2 --force` fences n1 (no new commits; commits
// waiting for an acknowledgement fail with 08007 instead of degrading to
// success), lets n2 receive n1's tail and promotes it. Every commit a client
// was told succeeded is on the new primary, at every safeness level and on
// both back ends, and the old primary follows the new one.
func TestForcedPromoteLosesNothing(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, level := range []string{"1-safe", "2-safe-received", "2-safe-visible", "2-safe-durable"} {
			t.Run(backend+"/"+level, func(t *testing.T) {
				h := writeHSOn(t, backend, level, "relaxed", "")
				h.start("n1")
				h.start("n2")
				h.start("router")
				createTestTable(t, h.dsn(h.router))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan struct{})
				var acked []int64
				var count atomic.Int64
				go func() { acked, _ = writersCounting(ctx, h.dsn(h.router), 4, &count); close(done) }()
				target := int64(50 + rand.Intn(200))
				for wait := time.Now().Add(20 * time.Second); count.Load() < target && time.Now().Before(wait); {
					time.Sleep(2 * time.Millisecond)
				}
				out, err := exec.Command(tandemBin, "promote", "n2", "-c", h.file).CombinedOutput()
				if err == nil || !strings.Contains(string(out), "switchover") {
					t.Fatalf("promote while the primary answers: %v\n%s", err, out)
				}
				out2 := h.tandem("promote", "n2", "--force")
				if !strings.Contains(out2, "fenced n1") || !strings.Contains(out2, "lost: 0 GSNs") {
					t.Fatalf("promote --force said:\n%s", out2)
				}
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("writers hung after the forced promote")
				}
				if len(acked) == 0 {
					t.Fatal("no commit was acknowledged before the promote")
				}
				for _, node := range []string{"n2", "n1"} { // the new primary, then the old one following it
					var have map[int64]bool
					lost := 0
					for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
						if have, err = idsErr(h.dsn(h.nodes[node])); err == nil {
							lost = 0
							for _, id := range acked {
								if !have[id] {
									lost++
								}
							}
							if lost == 0 || node == "n2" {
								break
							}
						}
						if time.Now().After(deadline) {
							break
						}
					}
					if lost > 0 {
						t.Fatalf("%s: %d of %d acknowledged commits missing after promote --force at %s\n%s", node, lost, len(acked), level, out2)
					}
				}
				if st := replStatus(t, h.admin["n1"]); st.Role != "standby" {
					t.Fatalf("the old primary did not follow the new one: %+v", st)
				}
				t.Logf("%d acknowledged commits, none lost; promote said: %s", len(acked), strings.ReplaceAll(strings.TrimSpace(out2), "\n", "; "))
			})
		}
	}
}

// TestPromotedPrimaryStartsDegraded (issue 18 item 6): after the primary
// is killed, the promoted standby has no standby of its own; at 2-safe
// with on_standby_loss = degrade its first commit returns at once instead
// of waiting ack_timeout (5 s here), and promote says the loss is unknown
// (the old primary did not answer), never "0".
func TestPromotedPrimaryStartsDegraded(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "ack_timeout = \"5s\"\non_standby_loss = \"degrade\"\n")
			h.start("n1")
			h.start("n2")
			createTestTable(t, h.dsn(h.nodes["n1"]))
			p := connect(t, h.dsn(h.nodes["n1"]))
			ctx := context.Background()
			if _, err := p.Exec(ctx, "INSERT INTO t VALUES (1, 'before')"); err != nil {
				t.Fatal(err)
			}
			p.Close(ctx)
			waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM t", 1)
			h.kill("n1")
			out := h.tandem("promote", "n2")
			if !strings.Contains(out, "lost: unknown") {
				t.Fatalf("promote after a kill said:\n%s", out)
			}
			c := connect(t, h.dsn(h.nodes["n2"]))
			start := time.Now()
			if _, err := c.Exec(ctx, "INSERT INTO t VALUES (2, 'after')"); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > time.Second {
				t.Fatalf("the first commit on the promoted primary took %v (ack_timeout 5 s): it waited for a standby that is not there", took)
			}
			if st := replStatus(t, h.admin["n2"]); !st.Degraded {
				t.Fatalf("the promoted primary does not say it runs degraded: %+v", st)
			}
		})
	}
}
