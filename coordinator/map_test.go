package coordinator

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func pairMembers() []Member {
	return []Member{{ID: "n1", RaftAddr: "127.0.0.1:1"}, {ID: "n2", RaftAddr: "127.0.0.1:2"}, {ID: "w", RaftAddr: "127.0.0.1:3", Role: RoleWitness}}
}

func initCmd(safeness string, automatic bool) Command {
	return Command{Op: OpInit, From: "n1", Members: pairMembers(), Primary: "n1", Epoch: 3, Safeness: safeness, Automatic: automatic, LeaseDur: time.Second}
}

func mustApply(t *testing.T, f *fsm, idx uint64, c Command) applied {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	a := f.Apply(&raft.Log{Index: idx, Data: b}).(applied)
	return a
}

func TestApply(t *testing.T) {
	f := newFSM()
	steps := []struct {
		c    Command
		want error
	}{
		{Command{Op: OpLease, From: "n1", Epoch: 3}, ErrUninitialized},
		{initCmd("2-safe-received", true), nil},
		{Command{Op: OpInit, From: "n2", Members: pairMembers(), Primary: "n2", LeaseDur: time.Second}, nil}, // second init: no-op
		{Command{Op: OpLease, From: "n2", Epoch: 3}, ErrNotPrimary},
		{Command{Op: OpLease, From: "n1", Epoch: 2}, ErrStaleEpoch},
		{Command{Op: OpLease, From: "n1", Epoch: 3, GSN: 10}, nil},
		{Command{Op: OpAck, From: "n2", Epoch: 3, GSN: 9, Level: "2-safe-received"}, nil},
		{Command{Op: OpAck, From: "n1", Epoch: 3, GSN: 9}, ErrNotStandby},
		{Command{Op: OpAck, From: "w", Epoch: 3, GSN: 9}, ErrNotStandby},
		{Command{Op: OpAck, From: "x", Epoch: 3, GSN: 9}, ErrNotMember},
		{Command{Op: OpAck, From: "n2", Epoch: 2, GSN: 9}, ErrStaleEpoch},
		{Command{Op: OpDegrade, From: "n2", Epoch: 3, Standby: "n2", Degraded: true}, ErrNotPrimary},
		{Command{Op: OpDegrade, From: "n1", Epoch: 3, Standby: "n2", Degraded: true}, nil},
		{Command{Op: OpTransition, From: "n1", Target: "n2", Epoch: 3, ExpectSeq: 0, Reason: "failover"}, ErrStale},
		{Command{Op: OpTransition, From: "n1", Target: "w", Epoch: 3, ExpectSeq: 1, Reason: "failover"}, ErrNotStandby},
		{Command{Op: OpTransition, From: "n1", Target: "n2", Epoch: 3, ExpectSeq: 1, Reason: "failover", Lost: 2}, ErrStale}, // n2 is degraded
		{Command{Op: OpDegrade, From: "n1", Epoch: 3, Standby: "n2", Degraded: false}, nil},
		{Command{Op: OpTransition, From: "n1", Target: "n2", Epoch: 3, ExpectSeq: 1, Reason: "failover", Lost: 2}, nil},
		{Command{Op: OpLease, From: "n1", Epoch: 3}, ErrNotPrimary},
		{Command{Op: OpRefine, From: "n1", Epoch: 4, GSN: 9}, ErrNotPrimary},
		{Command{Op: OpRefine, From: "n2", Epoch: 4, GSN: 9}, nil},                // the old primary reported 10: lost 1, not the estimate 2
		{Command{Op: OpRefine, From: "n2", Epoch: 4, GSN: 3}, nil},                // refined once only
		{Command{Op: OpTail, From: "n1", Epoch: 4, GSN: 14, Degraded: true}, nil}, // the old primary, back: it acknowledged up to 14
		{Command{Op: OpTail, From: "n1", Epoch: 4, GSN: 99, Degraded: true}, nil}, // reported once
		{Command{Op: OpLease, From: "n2", Epoch: 4}, nil},
		{Command{Op: OpHandOver, From: "n2", Target: "n1", Reason: "switchover"}, nil},
		{Command{Op: OpLease, From: "n2", Epoch: 4}, ErrHandingOver},
		{Command{Op: OpRelease, From: "n1", Epoch: 4}, ErrNotPrimary},
		{Command{Op: OpRelease, From: "n2", Epoch: 4, GSN: 20}, nil},
		{Command{Op: "bogus"}, ErrBadCommand},
	}
	for i, s := range steps {
		a := mustApply(t, f, uint64(i+1), s.c)
		if !errors.Is(a.err, s.want) || (s.want == nil) != (a.err == nil) {
			t.Fatalf("step %d %s from %s: err %v, want %v", i, s.c.Op, s.c.From, a.err, s.want)
		}
	}
	m := f.Map()
	if m.Primary != "n2" || m.Epoch != 4 || m.Lost != 5 || m.CommitGSN != 20 || !m.Released || m.HandOverTo != "n1" {
		t.Fatalf("map %+v", m)
	}
	if r, _ := m.Member("n1"); r.Role != RoleStandby {
		t.Fatalf("old primary's role %q", r.Role)
	}
	if r, _ := m.Member("w"); r.Role != RoleWitness {
		t.Fatalf("witness role %q", r.Role)
	}
	if len(m.Acks) != 0 {
		t.Fatalf("acks of the old epoch survived the transition: %v", m.Acks)
	}
	if len(m.History) != 1 || m.History[0] != (Transition{Epoch: 4, From: "n1", To: "n2", Reason: "failover", Lost: 5, CommitGSN: 10, Refined: true, ToGSN: 9, OldAcked: 14, OldExact: true}) {
		t.Fatalf("history %+v", m.History)
	}
	if m.Index != 29 {
		t.Fatalf("index %d, want the last applied change (29)", m.Index)
	}
}

// Map is a helper for tests.
func (f *fsm) Map() Map { m, _ := f.state(); return m }

type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func TestSnapshotRestore(t *testing.T) {
	f := newFSM()
	mustApply(t, f, 1, initCmd("1-safe", true))
	mustApply(t, f, 2, Command{Op: OpLease, From: "n1", Epoch: 3, GSN: 7})
	mustApply(t, f, 3, Command{Op: OpAck, From: "n2", Epoch: 3, GSN: 5, Level: "1-safe"})
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()

	g := newFSM()
	w := g.watch()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Map(), g.Map()) {
		t.Fatalf("restored %+v\nwant %+v", g.Map(), f.Map())
	}
	select {
	case m := <-w:
		if m.Lease.Seq != 1 || m.Acks["n2"].GSN != 5 {
			t.Fatalf("watcher got %+v", m)
		}
	default:
		t.Fatal("restore did not notify the watcher")
	}
	// The restored map goes on applying.
	if a := mustApply(t, g, 4, Command{Op: OpLease, From: "n1", Epoch: 3, GSN: 8}); a.err != nil || a.m.Lease.Seq != 2 {
		t.Fatalf("after restore: %+v", a)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader([]byte("{")))); err == nil {
		t.Fatal("a truncated snapshot restored")
	}
}

func TestErrorFromKeepsSentinel(t *testing.T) {
	for _, e := range sentinels {
		wrapped := errors.Join(e).Error() + ": detail"
		if got := errorFrom(wrapped); !errors.Is(got, e) || got.Error() != wrapped {
			t.Fatalf("%q -> %v", wrapped, got)
		}
	}
	if errorFrom("") != nil || errorFrom("other").Error() != "other" {
		t.Fatal("plain texts")
	}
}
