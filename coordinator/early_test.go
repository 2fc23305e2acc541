package coordinator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tandemdb/tandem/certifier"
)

func committed(gsns ...uint64) []*certifier.Committed {
	out := make([]*certifier.Committed, len(gsns))
	for i, g := range gsns {
		out[i] = &certifier.Committed{GSN: g, ID: fmt.Sprint("r", g)}
	}
	return out
}

// TestEarlyLog: entries ahead of the member's copy are delivered without
// a gap, what the copy has is dropped, a waiter learns of an add, and a
// member far behind keeps nothing.
func TestEarlyLog(t *testing.T) {
	var l earlyLog
	has, ch := l.has(6)
	if has || ch == nil {
		t.Fatalf("empty log has 6: %v", has)
	}
	l.add(committed(4, 5, 6, 8), 4) // the copy has 4
	select {
	case <-ch:
	default:
		t.Fatal("an add did not wake the waiter")
	}
	if got := l.from(4, 10); len(got) != 2 || got[0].GSN != 5 || got[1].GSN != 6 {
		t.Fatalf("from 4: %+v, want 5 and 6 (7 is missing)", got)
	}
	if got := l.from(4, 1); len(got) != 1 {
		t.Fatalf("from 4, limit 1: %d entries", len(got))
	}
	if top := l.top(4); top != 6 {
		t.Fatalf("top from 4: %d, want 6", top)
	}
	if has, _ := l.has(4); has {
		t.Fatal("4 kept though the copy has it")
	}
	l.add(committed(7), 5) // fills the gap; the copy has reached 5
	if top := l.top(5); top != 8 {
		t.Fatalf("top from 5: %d, want 8", top)
	}
	if has, _ := l.has(5); has {
		t.Fatal("5 kept after the copy reached it")
	}
	if l.received.Load() != 5 {
		t.Fatalf("received %d, want 5", l.received.Load())
	}
	var many []uint64
	for g := uint64(100); g < 100+maxEarlyKept+1; g++ {
		many = append(many, g)
	}
	l.add(committed(many...), 99)
	if top := l.top(99); top != 99 {
		t.Fatalf("past maxEarlyKept the log keeps %d entries", top-99)
	}
}

// TestEarlyAnswers: a follower's certification answers carry the
// certified writesets its copy of the log lacked, up to the batch's GSN,
// and the follower delivers its log in order and exactly once.
func TestEarlyAnswers(t *testing.T) {
	g := certGroup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var follower *Coordinator
	for _, c := range g.cs {
		if c.raft.State() != raft.Leader {
			follower = c
			break
		}
	}
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	feed, ferr := follower.FollowCertified(fctx, 0)
	const n = 40
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("early-%d", i)
		d, err := follower.Certify(ctx, certifier.Request{ID: id, Snapshot: uint64(i - 1), Keys: []certifier.Key{certKey("e", int64(i))}, Writeset: []byte("ws:" + id)})
		if err != nil || !d.Committed || d.GSN != uint64(i) {
			t.Fatalf("certify %d: %+v %v", i, d, err)
		}
		// The answer brought its own GSN: the follower knows it at once.
		if known := follower.knownLast(); known < d.GSN {
			t.Fatalf("after certifying GSN %d the follower knows up to %d", d.GSN, known)
		}
	}
	// Each answer carried at least its batch's own writeset: the
	// follower's copy learns of a commit only at the leader's next append.
	if got := follower.CertStatus().EarlyReceived; got < n {
		t.Fatalf("answers brought %d writesets ahead of the follower's copy, want at least %d", got, n)
	}
	for want := uint64(1); want <= n; want++ {
		select {
		case e := <-feed:
			if e == nil || e.GSN != want || string(e.Writeset) != fmt.Sprintf("ws:early-%d", want) {
				t.Fatalf("followed %+v, want GSN %d", e, want)
			}
		case err := <-ferr:
			t.Fatalf("follow stopped: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("GSN %d not followed", want)
		}
	}
	select {
	case e := <-feed:
		t.Fatalf("followed %+v after the last GSN", e)
	case <-time.After(100 * time.Millisecond):
	}
	// The leader's side: what follows since, up to the batch's last
	// committed GSN, nothing for a batch that committed nothing.
	var leader *Coordinator
	for _, c := range g.cs {
		if c.raft.State() == raft.Leader {
			leader = c
		}
	}
	got := leader.earlyFor(30, []CertAnswer{{Decision: &certifier.Decision{Committed: true, GSN: 35}}, {Err: "x"}})
	if len(got) != 5 || got[0].GSN != 31 || got[4].GSN != 35 {
		t.Fatalf("earlyFor(30, ..35): %d entries %+v", len(got), got)
	}
	if got := leader.earlyFor(30, []CertAnswer{{Decision: &certifier.Decision{Committed: false, GSN: 0}}}); len(got) != 0 {
		t.Fatalf("earlyFor of a batch that committed nothing: %d entries", len(got))
	}
}
