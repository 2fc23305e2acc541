package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/coordinator"
	"github.com/tandemdb/tandem/node"
	"github.com/tandemdb/tandem/secure"
)

func loopbackPorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// TestWitnessVotes: `tandem witness` from a cluster file is the third
// vote of a pair: with it, one node alone still has the coordinator's
// quorum; without it, not.
func TestWitnessVotes(t *testing.T) {
	dir := t.TempDir()
	p := loopbackPorts(t, 10)
	text := fmt.Sprintf(`cluster = "w"
design = "hot-standby"
run_dir = %q
[[users]]
name = "u"
password = "p"
[replication]
failover = "automatic"
lease = "10s"
[witness]
id = "wit"
raft_listen = %q
metrics = %q
[[nodes]]
id = "n1"
listen = %q
repl_listen = %q
metrics = %q
raft_listen = %q
[[nodes]]
id = "n2"
listen = %q
repl_listen = %q
metrics = %q
raft_listen = %q
`, dir, p[0], p[9], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8])
	file := filepath.Join(dir, "cluster.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Identity(c, secure.AdminID, nil); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wcmd := newWitnessCmd()
	wcmd.SetArgs([]string{"-c", file})
	wcmd.SetOut(io.Discard)
	done := make(chan error, 1)
	go func() { done <- wcmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("witness: %v", err)
		}
	}()

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(id string) *coordinator.Coordinator {
		ident, err := node.Identity(c, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := node.CoordinatorConfig(c, id, ident, quiet, nil)
		if err != nil {
			t.Fatal(err)
		}
		co, err := coordinator.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return co
	}
	n1, n2 := start("n1"), start("n2")
	defer n1.Close()
	n2closed := false
	defer func() {
		if !n2closed {
			n2.Close()
		}
	}()

	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	// The lease is long (10 s) so that a slow election on a loaded machine
	// cannot make the grant run out before it is checked.
	g, err := n1.AcquireLease(rctx, 1, 0)
	if err != nil || !g.Valid(time.Now()) {
		t.Fatalf("lease: %+v %v", g, err)
	}
	st := n1.Status()
	if len(st.Members) != 3 || st.Members[2].ID != "wit" || st.Members[2].Role != coordinator.RoleWitness || !st.Members[2].Voter || !st.Automatic {
		t.Fatalf("status %+v", st)
	}

	// tandem status asks the witness for its view (which learns the
	// third member a moment after n1 does, on a loaded machine).
	wp := probeWitness(c.Witness, 0)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); wp = probeWitness(c.Witness, 0) {
		if wp.Healthy && wp.repl != nil && wp.repl.Coordinator != nil && len(wp.repl.Coordinator.Members) == 3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !wp.Healthy || wp.repl == nil || wp.repl.Coordinator == nil || wp.repl.Coordinator.ID != "wit" || len(wp.repl.Coordinator.Members) != 3 {
		t.Fatalf("witness probe %+v", wp)
	}

	// n2 gone: n1 and the witness are a quorum.
	n2.Close()
	n2closed = true
	if _, err := n1.RenewLease(rctx, 1, 0); err != nil {
		t.Fatalf("renewal with the witness's vote: %v", err)
	}

	// The witness stops too: n1 alone has no quorum, and its renewal fails.
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("witness: %v", err)
	}
	done <- nil
	sctx, scancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer scancel()
	if _, err := n1.RenewLease(sctx, 1, 0); err == nil || !(errors.Is(err, coordinator.ErrNoLeader) || errors.Is(err, coordinator.ErrNotLeader)) {
		t.Fatalf("renewal without a quorum: %v", err)
	}
}

func TestPrintCoordinator(t *testing.T) {
	cs := &coordinator.Status{ID: "n2", State: "Leader", Leader: "n2", Term: 4, Automatic: true, Epoch: 2, Primary: "n2",
		LeaseHolder: "n2", LeaseRemaining: 812 * time.Millisecond, Lost: 3,
		Members: []coordinator.MemberStatus{{ID: "n1", Role: "standby", Voter: true, RaftAddr: "127.0.0.1:1",
			Ack: &coordinator.Ack{Epoch: 2, GSN: 7, Level: "1-safe"}}, {ID: "n2", Role: "primary", Voter: true}, {ID: "w", Role: "witness", Voter: true}},
		Transitions: []coordinator.Transition{{Epoch: 2, From: "n1", To: "n2", Reason: "failover", Lost: 3}}}
	follower := *cs
	follower.ID, follower.State = "n1", "Follower"
	var b strings.Builder
	printCoordinator(&b, []probe{{repl: &nodeStatus{Coordinator: &follower}}, {repl: &nodeStatus{Coordinator: cs}}, {}}, false)
	for _, want := range []string{"coordinator (as n2 sees it): leader n2, term 4, failover automatic, epoch 2, primary n2",
		"lease: held by n2, 812ms remaining", "possibly lost by 1-safe failovers: 3", "GSN 7 at 1-safe (epoch 2)", "epoch 2: n1 -> n2 (failover), lost 3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}
