package certifier

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// model is a brute-force certifier: it keeps every commit forever and
// decides each request by scanning the whole history; the window only
// decides which snapshots are too old, and it is recomputed from scratch
// after every commit.
type model struct {
	commits   []modelCommit // commits[i] has GSN i+1
	base      uint64
	decisions map[string]Decision // every decision ever made, by id
	aborts    []string            // ids of aborts, in order (the remembered ones are the tail)
	remember  map[string]bool     // ids of aborts still remembered
}

type modelCommit struct {
	r    Request
	size int64
}

func conflicts(a, b Key) bool {
	return a.Table == b.Table && (a.PK == "" || b.PK == "" || a.PK == b.PK)
}

func (m *model) certify(r Request, w Window) (Decision, error) {
	w = w.WithDefaults()
	last := uint64(len(m.commits))
	if d, ok := m.decisions[r.ID]; ok {
		if d.Committed && d.GSN > m.base {
			return d, nil
		}
		if !d.Committed && m.remember[r.ID] {
			return d, nil
		}
		// Forgotten: decided anew below (a committed one is then
		// necessarily too old: its snapshot is below its GSN <= base).
	}
	if err := r.Validate(); err != nil {
		return Decision{}, err
	}
	if r.Snapshot > last {
		return Decision{}, ErrBadRequest
	}
	if r.Snapshot < m.base {
		return Decision{}, ErrSnapshotTooOld
	}
	for _, k := range r.Keys {
		var g uint64
		for i := len(m.commits) - 1; i >= int(r.Snapshot) && g == 0; i-- {
			for _, k2 := range m.commits[i].r.Keys {
				if conflicts(k, k2) {
					g = uint64(i + 1)
					break
				}
			}
		}
		if g > 0 {
			d := Decision{ID: r.ID, Origin: r.Origin, Snapshot: r.Snapshot, Conflict: &Conflict{Key: k, GSN: g, Origin: m.commits[g-1].r.Origin}}
			m.decisions[r.ID] = d
			m.aborts = append(m.aborts, r.ID)
			m.remember = map[string]bool{}
			for _, id := range m.aborts[max(0, len(m.aborts)-w.Aborts):] {
				m.remember[id] = true
			}
			return d, nil
		}
	}
	e := Committed{Snapshot: r.Snapshot, Origin: r.Origin, ID: r.ID, Keys: r.Keys, Writeset: r.Writeset}
	m.commits = append(m.commits, modelCommit{r: r, size: e.size()})
	d := Decision{ID: r.ID, Origin: r.Origin, Committed: true, GSN: uint64(len(m.commits)), Snapshot: r.Snapshot}
	m.decisions[r.ID] = d
	// The window: the longest suffix within the bounds (at least one).
	var n int
	var bytes int64
	for i := len(m.commits) - 1; i >= int(m.base); i-- {
		if n >= 1 && (n+1 > w.Count || bytes+m.commits[i].size > w.Bytes) {
			break
		}
		n++
		bytes += m.commits[i].size
	}
	m.base = max(m.base, uint64(len(m.commits)-n))
	return d, nil
}

func sameDecision(a, b Decision) bool {
	if a.ID != b.ID || a.Origin != b.Origin || a.Committed != b.Committed || a.GSN != b.GSN || a.Snapshot != b.Snapshot || (a.Conflict == nil) != (b.Conflict == nil) {
		return false
	}
	return a.Conflict == nil || *a.Conflict == *b.Conflict
}

// TestAgainstModel runs thousands of random histories (concurrent
// transactions on stale snapshots over small key spaces, whole-table keys,
// retries, windows that change, snapshots and restores mid-history) through
// State and the brute-force model, and requires the same decision for every
// request. It then checks the history itself against GSI's rule, without
// the model: GSNs are gapless; no two committed transactions that overlap
// (one's snapshot before the other's commit) wrote a same key (first
// committer wins); every abort names a key of the request written by a
// commit after its snapshot (an abort happens only for a real conflict);
// and every too-old refusal had its snapshot below the window.
func TestAgainstModel(t *testing.T) {
	histories, steps := 3000, 250
	if testing.Short() {
		histories = 300
	}
	var commits, aborts, tooOld, retries, restores int
	for h := 0; h < histories; h++ {
		seed := uint64(h)
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		nkeys := 2 + rng.IntN(30)
		tables := []string{"a", "b", "c"}[:1+rng.IntN(3)]
		lag := 1 + rng.IntN(12)
		w := Window{Count: 1 + rng.IntN(40), Bytes: int64(300 + rng.IntN(4000)), Aborts: 1 + rng.IntN(20)}
		s, m := New(), &model{decisions: map[string]Decision{}, remember: map[string]bool{}}
		var sent []Request
		type outcome struct {
			r    Request
			d    Decision
			err  error
			base uint64 // the window's start when decided
		}
		var hist []outcome
		for i := 0; i < steps; i++ {
			var r Request
			switch x := rng.IntN(100); {
			case x < 8 && len(sent) > 0:
				r = sent[rng.IntN(len(sent))] // a retry, as sent
				retries++
			default:
				last := s.Last()
				snap := last - min(last, uint64(rng.IntN(lag+1)))
				if x == 99 {
					snap = last + 1 // a snapshot from the future
				}
				var keys []Key
				for n := 1 + rng.IntN(4); n > 0; n-- {
					tb := tables[rng.IntN(len(tables))]
					if rng.IntN(60) == 0 {
						keys = append(keys, tk(tb))
					} else {
						keys = append(keys, rk(tb, int64(rng.IntN(nkeys))))
					}
				}
				r = Request{ID: fmt.Sprintf("r%d", i), Origin: fmt.Sprintf("n%d", rng.IntN(3)), Snapshot: snap,
					Keys: SortKeys(keys), Writeset: bytes.Repeat([]byte{byte(i)}, rng.IntN(200))}
				sent = append(sent, r)
			}
			if rng.IntN(30) == 0 { // the leader's configuration changes
				w.Count = 1 + rng.IntN(40)
			}
			base := s.Base()
			d, err := s.Certify(r, w)
			md, merr := m.certify(r, w)
			if !errors.Is(err, merr) || (err == nil) != (merr == nil) || err == nil && !sameDecision(d, md) {
				t.Fatalf("history %d step %d request %+v:\n state %+v (conflict %+v) %v\n model %+v (conflict %+v) %v",
					h, i, r, d, d.Conflict, err, md, md.Conflict, merr)
			}
			if s.Base() != m.base || s.Last() != uint64(len(m.commits)) {
				t.Fatalf("history %d step %d: state window (%d, %d], model (%d, %d]", h, i, s.Base(), s.Last(), m.base, len(m.commits))
			}
			hist = append(hist, outcome{r: r, d: d, err: err, base: base})
			// The indexes hold only the window (memory stays bounded).
			for _, ix := range []map[string]uint64{s.rowLast, s.tableLast, s.tableWide} {
				for k, g := range ix {
					if g <= s.Base() || g > s.Last() {
						t.Fatalf("history %d step %d: index entry %q -> GSN %d outside the window (%d, %d]", h, i, k, g, s.Base(), s.Last())
					}
				}
			}
			if rng.IntN(50) == 0 {
				var buf bytes.Buffer
				if _, err := s.Snapshot().WriteTo(&buf); err != nil {
					t.Fatal(err)
				}
				if s, err = Restore(&buf); err != nil {
					t.Fatalf("history %d step %d: restore: %v", h, i, err)
				}
				restores++
			}
			if rng.IntN(10) == 0 {
				from := s.Base() + uint64(rng.IntN(int(s.Last()-s.Base())+1))
				es, err := s.CommittedSince(from, 0)
				if err != nil || len(es) != int(s.Last()-from) {
					t.Fatalf("history %d: CommittedSince(%d) = %d entries, %v (last %d)", h, from, len(es), err, s.Last())
				}
				for j, e := range es {
					want := m.commits[int(from)+j].r
					if e.GSN != from+uint64(j)+1 || e.ID != want.ID || !bytes.Equal(e.Writeset, want.Writeset) {
						t.Fatalf("history %d: CommittedSince(%d)[%d] = GSN %d id %s, want %s", h, from, j, e.GSN, e.ID, want.ID)
					}
				}
				if _, err := s.CommittedSince(s.Base()-min(s.Base(), 1), 0); s.Base() > 0 && !errors.Is(err, ErrSnapshotTooOld) {
					t.Fatalf("history %d: CommittedSince below the window: %v", h, err)
				}
			}
		}

		// GSI on the history, without the model.
		byGSN := map[uint64]Request{}
		seen := map[string]bool{}
		var next uint64 = 1
		for _, o := range hist {
			if o.err != nil {
				if errors.Is(o.err, ErrSnapshotTooOld) {
					tooOld++
					if o.r.Snapshot >= o.base {
						t.Fatalf("history %d: %s refused as too old with snapshot %d, window base %d", h, o.r.ID, o.r.Snapshot, o.base)
					}
				}
				continue
			}
			first := !seen[o.r.ID]
			seen[o.r.ID] = true
			if !first {
				continue
			}
			if o.d.Committed {
				commits++
				if o.d.GSN != next {
					t.Fatalf("history %d: GSN %d after %d", h, o.d.GSN, next-1)
				}
				next++
				byGSN[o.d.GSN] = o.r
				continue
			}
			aborts++
		}
		for g, r := range byGSN {
			for g2 := r.Snapshot + 1; g2 < g; g2++ {
				for _, k := range r.Keys {
					for _, k2 := range byGSN[g2].Keys {
						if conflicts(k, k2) {
							t.Fatalf("history %d: GSN %d (snapshot %d) and GSN %d both wrote %v / %v", h, g, r.Snapshot, g2, k, k2)
						}
					}
				}
			}
		}
		seen = map[string]bool{}
		for _, o := range hist {
			if o.err != nil || o.d.Committed || seen[o.r.ID] {
				continue
			}
			seen[o.r.ID] = true
			c := o.d.Conflict
			w, ok := byGSN[c.GSN]
			found := false
			for _, k := range o.r.Keys {
				found = found || k == c.Key
			}
			justified := false
			for _, k2 := range w.Keys {
				justified = justified || conflicts(c.Key, k2)
			}
			if !ok || c.GSN <= o.r.Snapshot || !found || !justified {
				t.Fatalf("history %d: abort of %s (snapshot %d) on %v by GSN %d is not a conflict", h, o.r.ID, o.r.Snapshot, c.Key, c.GSN)
			}
		}
	}
	t.Logf("%d histories: %d commits, %d aborts, %d too old, %d retries, %d restores", histories, commits, aborts, tooOld, retries, restores)
	if commits == 0 || aborts == 0 || tooOld == 0 || retries == 0 || restores == 0 {
		t.Fatalf("the histories did not exercise every outcome")
	}
}
