package coordinator

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/tandemdb/tandem/secure"
)

// childEnv carries a voter's configuration to a child process.
const childEnv = "TANDEM_COORD_TEST_VOTER"

type childSpec struct {
	ID     string   `json:"id"`
	Dir    string   `json:"dir"`
	Certs  string   `json:"certs"`
	Voters []Member `json:"voters"`
}

func timing(c *Config) {
	c.InitialPrimary, c.InitialEpoch, c.Safeness, c.Automatic = "n1", 1, "2-safe-received", true
	c.Lease, c.Grace = 400*time.Millisecond, 300*time.Millisecond
	c.HeartbeatTimeout, c.ElectionTimeout = 300*time.Millisecond, 300*time.Millisecond
}

// TestVoterProcess is not a test: it is the body of a voter run in a child
// process by TestKillLeaderProcess (it returns at once otherwise).
func TestVoterProcess(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("helper process only")
	}
	var s childSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	ident, err := secure.Load(s.Certs, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ID: s.ID, Dir: s.Dir, Voters: s.Voters, Identity: ident, Logger: testLogger(t).With("voter", s.ID)}
	timing(&cfg)
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	_ = c.Close()
}

// TestKillLeaderProcess: three voters, two of them child processes; the
// leader is made a child and SIGKILLed; the survivors elect a new leader,
// the map is intact and leases are granted again; the killed voter comes
// back from its directory.
func TestKillLeaderProcess(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a helper process")
	}
	if runtime.GOOS != "linux" {
		t.Skip("uses Pdeathsig")
	}
	root := t.TempDir()
	certs := filepath.Join(root, "certs")
	issue(t, certs, "n1", "n2", "w")
	addrs := freeAddrs(t, 3)
	voters := []Member{{ID: "n1", RaftAddr: addrs[0]}, {ID: "n2", RaftAddr: addrs[1]}, {ID: "w", RaftAddr: addrs[2], Role: RoleWitness}}

	children := map[string]*exec.Cmd{}
	spawn := func(id string) {
		b, _ := json.Marshal(childSpec{ID: id, Dir: filepath.Join(root, id), Certs: certs, Voters: voters})
		cmd := exec.Command(os.Args[0], "-test.run=^TestVoterProcess$", "-test.count=1")
		if testing.Verbose() {
			cmd.Args = append(cmd.Args, "-test.v")
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		}
		cmd.Env = append(os.Environ(), childEnv+"="+string(b))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[id] = cmd
	}
	kill := func(id string) {
		if cmd := children[id]; cmd != nil {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			delete(children, id)
		}
	}
	defer func() {
		for id := range children {
			kill(id)
		}
	}()
	spawn("n2")
	spawn("w")

	ident, err := secure.Load(certs, "n1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ID: "n1", Dir: filepath.Join(root, "n1"), Voters: voters, Identity: ident, Logger: testLogger(t).With("voter", "n1")}
	timing(&cfg)
	n1, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	leaderOther := func(not string) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if id, _ := n1.Leader(); id != "" && id != not {
				return id
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no leader other than %q", not)
		return ""
	}
	leader := leaderOther("")
	if leader == "n1" {
		if err := n1.raft.LeadershipTransfer().Error(); err != nil {
			t.Fatal(err)
		}
		leader = leaderOther("n1")
	}
	// Requests from n1 go to the child leader over TLS.
	until(t, n1, 10*time.Second, "initialized", func(m Map) bool { return m.Initialized })
	g, err := n1.AcquireLease(ctx, 1, 42)
	if err != nil || g.Seq == 0 {
		t.Fatalf("lease through the child leader: %+v %v", g, err)
	}
	before := until(t, n1, 5*time.Second, "lease applied here", func(m Map) bool { return m.Lease.Seq == g.Seq })

	// An election on a loaded machine may have moved the leadership since
	// it was looked up (CI saw the kill hit a former leader: no new term):
	// kill the leader n1 sees now, in the term it sees it in, a child.
	var termBefore uint64
	for deadline := time.Now().Add(20 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("no stable leader among the children")
		}
		leader = leaderOther("")
		if leader == "n1" {
			// Not an error if n1 has stepped down meanwhile.
			_ = n1.raft.LeadershipTransfer().Error()
			time.Sleep(20 * time.Millisecond)
			continue
		}
		termBefore = n1.Status().Term
		if id, _ := n1.Leader(); id == leader && n1.Status().Term == termBefore {
			break
		}
	}

	kill(leader)
	newLeader := leaderOther(leader)
	st := n1.Status()
	if st.Term <= termBefore {
		t.Fatalf("term %d after the kill, was %d", st.Term, termBefore)
	}
	// The map survived: the lease renews with the state recorded before.
	g2, err := n1.RenewLease(ctx, 1, 43)
	if err != nil || g2.Seq != g.Seq+1 {
		t.Fatalf("renewal after the kill (new leader %s): %+v %v", newLeader, g2, err)
	}
	after := until(t, n1, 5*time.Second, "renewal applied here", func(m Map) bool { return m.Lease.Seq == g2.Seq })
	if after.Primary != before.Primary || after.Epoch != before.Epoch || after.CommitGSN != 43 {
		t.Fatalf("map before %+v after %+v", before, after)
	}
	// The killed voter restarts from its directory and the group has three
	// voters again: n1 can lose the other survivor and still renew.
	spawn(leader)
	other := "w"
	if leader == "w" {
		other = "n2"
	}
	time.Sleep(2 * time.Second) // let the restarted voter catch up
	kill(other)
	leaderOther(other)
	if _, err := n1.RenewLease(ctx, 1, 44); err != nil {
		t.Fatalf("renewal with the restarted voter and n1 only: %v", err)
	}
}
