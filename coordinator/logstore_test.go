package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/hashicorp/raft-wal/migrate"

	"github.com/tandemdb/tandem/certifier"
)

func testLog(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1 + i/10, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d %s", i, bytes.Repeat([]byte{byte(i)}, int(i%7)*100)))}
}

// boltDir writes a member directory as builds before the WAL left it:
// the log (entries first..last) and the stable store in raft.db.
func boltDir(t *testing.T, dir string, first, last uint64) {
	t.Helper()
	b, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, boltFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var logs []*raft.Log
	for i := first; i <= last && last > 0; i++ {
		logs = append(logs, testLog(i))
	}
	if len(logs) > 0 {
		if err := b.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := b.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatal(err)
	}
}

// checkStores: the log holds exactly first..last as written, the stable
// store its values, and raft.db no log entry any more.
func checkStores(t *testing.T, s *logStores, first, last uint64, term uint64) {
	t.Helper()
	fi, _ := s.logs.FirstIndex()
	li, _ := s.logs.LastIndex()
	if fi != first || li != last {
		t.Fatalf("log holds %d..%d, want %d..%d", fi, li, first, last)
	}
	for i := first; i <= last && last > 0; i++ {
		var l raft.Log
		if err := s.logs.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		want := testLog(i)
		if l.Index != want.Index || l.Term != want.Term || l.Type != want.Type || !bytes.Equal(l.Data, want.Data) {
			t.Fatalf("entry %d is %+v, want %+v", i, l, want)
		}
	}
	if v, err := s.stable.GetUint64([]byte("CurrentTerm")); v != term {
		t.Fatalf("CurrentTerm %d (%v), want %d", v, err, term)
	}
	if bl, _ := s.stable.LastIndex(); bl != 0 {
		t.Fatalf("raft.db still holds log entries up to %d", bl)
	}
	if _, err := os.Stat(filepath.Join(s.dir, walDir+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the migration's temporary directory is left: %v", err)
	}
}

// TestLogStoreMigration: a member directory of any age opens with its log
// in the WAL and its stable store in raft.db, whatever the crash it
// recovers from; entries survive a restart.
func TestLogStoreMigration(t *testing.T) {
	log := hclog.NewNullLogger()
	cases := []struct {
		name        string
		prepare     func(t *testing.T, dir string)
		first, last uint64
		term        uint64
	}{
		{"new member", func(t *testing.T, dir string) {}, 0, 0, 0},
		{"bolt log from an older build", func(t *testing.T, dir string) { boltDir(t, dir, 1, 300) }, 1, 300, 7},
		{"bolt log after compaction", func(t *testing.T, dir string) { boltDir(t, dir, 5000, 5400) }, 5000, 5400, 7},
		{"bolt with a stable store and no log", func(t *testing.T, dir string) { boltDir(t, dir, 0, 0) }, 0, 0, 7},
		{"crash during the copy (a partial WAL beside)", func(t *testing.T, dir string) {
			boltDir(t, dir, 1, 120)
			w, err := openWAL(filepath.Join(dir, walDir+".tmp"), log)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.StoreLogs([]*raft.Log{testLog(1), testLog(2)}); err != nil {
				t.Fatal(err)
			}
			w.close()
		}, 1, 120, 7},
		{"crash after the rename, before raft.db's log was dropped", func(t *testing.T, dir string) {
			boltDir(t, dir, 1, 50)
			b, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, boltFile)})
			if err != nil {
				t.Fatal(err)
			}
			if err := migrateBoltLog(dir, b, log); err != nil {
				t.Fatal(err)
			}
			b.Close()
		}, 1, 50, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.prepare(t, dir)
			s, err := openLogStores(dir, log)
			if err != nil {
				t.Fatal(err)
			}
			checkStores(t, s, tc.first, tc.last, tc.term)
			// Appends go to the WAL and survive a restart.
			next := tc.last + 1
			if err := s.logs.StoreLogs([]*raft.Log{testLog(next), testLog(next + 1)}); err != nil {
				t.Fatal(err)
			}
			s.close()
			s, err = openLogStores(dir, log)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			first := tc.first
			if first == 0 {
				first = next
			}
			checkStores(t, s, first, next+1, tc.term)
		})
	}
}

// TestCertifyAfterLogMove: a group whose members' logs sit in raft.db (as
// an older build left them) restarts on the WAL with every certified
// writeset, in order, on every member, and certifies on from there.
func TestCertifyAfterLogMove(t *testing.T) {
	g := certGroup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 30
	for i := range n {
		c := g.cs[g.voters[i%3].ID]
		id := fmt.Sprintf("r%d", i)
		d, err := c.Certify(ctx, certifier.Request{ID: id, Snapshot: c.CertStatus().Last, Keys: []certifier.Key{certKey("moved", int64(i))}, Writeset: []byte("ws:" + id)})
		if err != nil || !d.Committed {
			t.Fatalf("%s: %+v %v", id, d, err)
		}
	}
	// Every member holds the whole log before any stops: a member stopped
	// first may be the leader, whose next append would have told a
	// follower of the last commit.
	want := logOf(t, g.cs["n1"], n)
	for _, v := range g.voters {
		logOf(t, g.cs[v.ID], n)
	}
	for _, v := range g.voters {
		g.stop(v.ID)
	}
	// Back to the old layout: the log in raft.db, no raft-wal directory.
	log := hclog.NewNullLogger()
	for _, v := range g.voters {
		dir := g.dirs[v.ID]
		w, err := openWAL(filepath.Join(dir, walDir), log)
		if err != nil {
			t.Fatal(err)
		}
		b, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, boltFile)})
		if err != nil {
			t.Fatal(err)
		}
		if err := migrate.CopyLogs(ctx, b, w, 1<<20, nil); err != nil {
			t.Fatal(err)
		}
		if last, _ := b.LastIndex(); last < n {
			t.Fatalf("%s: raft.db holds the log up to %d", v.ID, last)
		}
		w.close()
		b.Close()
		if err := os.RemoveAll(filepath.Join(dir, walDir)); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range g.voters {
		g.start(v.ID)
	}
	g.leader(10*time.Second, "")
	for _, v := range g.voters {
		c := g.cs[v.ID]
		if got := logOf(t, c, n); !slices.Equal(got, want) {
			t.Fatalf("%s after the move: %v, want %v", v.ID, got, want)
		}
		if last, _ := c.stores.stable.LastIndex(); last != 0 {
			t.Fatalf("%s: raft.db still holds log entries up to %d", v.ID, last)
		}
	}
	c := g.cs["n2"]
	d, err := c.Certify(ctx, certifier.Request{ID: "after", Snapshot: n, Keys: []certifier.Key{certKey("moved", 0)}, Writeset: []byte("ws:after")})
	if err != nil || !d.Committed || d.GSN != n+1 {
		t.Fatalf("after the move: %+v %v", d, err)
	}
}
