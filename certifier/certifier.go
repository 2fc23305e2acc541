package certifier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; test them with errors.Is.
var (
	// ErrConflict is what Decision.Err wraps for an abort: a writeset
	// committed after the request's snapshot wrote one of its keys (the
	// client sees SQLSTATE 40001).
	ErrConflict = errors.New("certifier: write-write conflict with a concurrent committed transaction")
	// ErrSnapshotTooOld: the request's snapshot GSN is older than the
	// window of committed writesets the certifier keeps, so it cannot tell
	// whether the transaction conflicts. Retry the transaction on a fresh
	// snapshot.
	ErrSnapshotTooOld = errors.New("certifier: snapshot too old for the certification window")
	// ErrBadRequest: a malformed request (encoding, empty id, keys not
	// sorted, a snapshot ahead of the last GSN).
	ErrBadRequest = errors.New("certifier: malformed certification request")
)

// Request asks to commit one update transaction.
type Request struct {
	ID       string // unique per transaction among its origin's; a retry reuses it
	Origin   string // the node that ran the transaction (the coordinator sets it from the certificate)
	Snapshot uint64 // the GSN its snapshot reflects: every writeset up to it was visible
	Keys     []Key  // what it wrote, sorted and unique (SortKeys, KeysOf)
	Writeset []byte // the encoded writeset, kept in the window and served by CommittedSince
}

// Conflict names what an aborted request collided with.
type Conflict struct {
	Key    Key    `json:"key"`    // the request's key that was written concurrently
	GSN    uint64 `json:"gsn"`    // the last committed writeset after the snapshot that wrote it
	Origin string `json:"origin"` // that writeset's node
}

// Decision is the certifier's answer to a request.
type Decision struct {
	ID        string    `json:"id"`
	Origin    string    `json:"origin"` // the requesting node (ids are unique per origin)
	Committed bool      `json:"committed"`
	GSN       uint64    `json:"gsn,omitempty"`      // the commit's GSN
	Snapshot  uint64    `json:"snapshot,omitempty"` // the request's snapshot GSN
	Conflict  *Conflict `json:"conflict,omitempty"` // set when aborted
}

// Err is nil for a commit, and for an abort an error wrapping ErrConflict
// that names the table and key (the message the client sees with 40001).
func (d Decision) Err() error {
	if d.Committed {
		return nil
	}
	if d.Conflict == nil {
		return fmt.Errorf("%w (transaction %s)", ErrConflict, d.ID)
	}
	c := d.Conflict
	return fmt.Errorf("%w: %s was written by the transaction committed at GSN %d (on node %s) after this transaction's snapshot (GSN %d); retry the transaction",
		ErrConflict, c.Key, c.GSN, c.Origin, d.Snapshot)
}

// Window bounds the committed writesets a State keeps. It is carried in
// every certification entry (the leader's configuration), so every replica
// evicts identically whatever its own configuration says.
type Window struct {
	Count  int   // at most this many writesets (default 10,000)
	Bytes  int64 // at most this many bytes of writesets, keys and ids (default 16 MiB)
	Aborts int   // decisions of aborted requests remembered for retries (default 4,096)
}

// Window defaults.
const (
	DefaultCount  = 10_000
	DefaultBytes  = 16 << 20
	DefaultAborts = 4096
)

// WithDefaults fills zero fields.
func (w Window) WithDefaults() Window {
	if w.Count <= 0 {
		w.Count = DefaultCount
	}
	if w.Bytes <= 0 {
		w.Bytes = DefaultBytes
	}
	if w.Aborts <= 0 {
		w.Aborts = DefaultAborts
	}
	return w
}

// Committed is one certified writeset as the window keeps it. It is never
// modified once recorded; callers must not modify it either.
type Committed struct {
	GSN      uint64
	Snapshot uint64 // the GSN the transaction's snapshot reflected
	Origin   string
	ID       string
	Keys     []Key
	Writeset []byte
}

// entryOverhead is what a window entry costs beyond its strings, for the
// byte bound (pointers, slice headers, index entries).
const entryOverhead = 96

func (e *Committed) size() int64 {
	n := int64(entryOverhead + len(e.Origin) + len(e.ID) + len(e.Writeset))
	for _, k := range e.Keys {
		n += int64(32 + 2*(len(k.Table)+len(k.PK))) // the key and its index entry
	}
	return n
}

// State is the certifier's state. It is not safe for concurrent use: the
// coordinator's FSM serialises access.
type State struct {
	last    uint64       // the last GSN assigned
	base    uint64       // every GSN <= base has left the window
	entries []*Committed // GSNs base+1 .. last, from head
	head    int
	bytes   int64

	rowLast   map[string]uint64 // indexKey(row) -> last GSN in the window that wrote it
	tableLast map[string]uint64 // table -> last GSN in the window that wrote any key of it
	tableWide map[string]uint64 // table -> last GSN in the window that wrote its whole-table key

	ids    map[string]Decision // idKey(origin, id) -> decision (commits in the window, remembered aborts)
	aborts []string            // idKeys of remembered aborts, oldest first, from abHead
	abHead int
}

// New returns an empty state: no GSN assigned, the window starts at GSN 0.
func New() *State {
	return &State{rowLast: map[string]uint64{}, tableLast: map[string]uint64{}, tableWide: map[string]uint64{},
		ids: map[string]Decision{}}
}

// Last is the last GSN assigned (0 before the first commit).
func (s *State) Last() uint64 { return s.last }

// Base is where the window starts: requests need Snapshot >= Base, and
// CommittedSince serves from GSN Base+1.
func (s *State) Base() uint64 { return s.base }

// Len is the number of writesets in the window.
func (s *State) Len() int { return len(s.entries) - s.head }

// Bytes is what the window's writesets count against Window.Bytes.
func (s *State) Bytes() int64 { return s.bytes }

// Remembered is the number of request ids whose decision is kept.
func (s *State) Remembered() int { return len(s.ids) }

// Validate checks what Certify requires of a request, apart from the
// state: an id, and sorted unique keys with table names (none only with a
// writeset).
func (r *Request) Validate() error {
	if r.ID == "" {
		return fmt.Errorf("%w: the request has no id", ErrBadRequest)
	}
	if len(r.Keys) == 0 && len(r.Writeset) == 0 {
		// A writeset without keys is one that collides with nothing
		// (interleaved sequence draws only): it always commits.
		return fmt.Errorf("%w: request %s has no keys and no writeset (a read-only transaction commits without certification)", ErrBadRequest, r.ID)
	}
	for i, k := range r.Keys {
		if k.Table == "" {
			return fmt.Errorf("%w: request %s: key %d has no table", ErrBadRequest, r.ID, i)
		}
		if i > 0 && compareKeys(r.Keys[i-1], k) >= 0 {
			return fmt.Errorf("%w: request %s: keys are not sorted and unique at %d (use SortKeys)", ErrBadRequest, r.ID, i)
		}
	}
	return nil
}

// Certify decides r: the earlier decision if r.ID was decided and is
// remembered; else an abort if a writeset committed after r.Snapshot wrote
// one of r's keys (first committer wins); else a commit at GSN Last()+1,
// recorded in the window, which then drops its oldest writesets beyond w.
// Errors (the state is unchanged): ErrSnapshotTooOld when r.Snapshot <
// Base(), ErrBadRequest for a malformed request or a snapshot ahead of
// Last(). Certify is deterministic: the same requests and windows in the
// same order give the same decisions and state on every replica. A
// committed request's Keys and Writeset are kept in the window as they are:
// the caller must not modify them afterwards.
func (s *State) Certify(r Request, w Window) (Decision, error) {
	w = w.WithDefaults()
	if d, ok := s.ids[idKey(r.Origin, r.ID)]; ok && r.ID != "" {
		return d, nil
	}
	if err := r.Validate(); err != nil {
		return Decision{}, err
	}
	if r.Snapshot > s.last {
		return Decision{}, fmt.Errorf("%w: request %s: snapshot GSN %d is ahead of the last certified GSN %d", ErrBadRequest, r.ID, r.Snapshot, s.last)
	}
	if r.Snapshot < s.base {
		return Decision{}, s.tooOld(r.Snapshot)
	}
	if c := s.conflict(r); c != nil {
		d := Decision{ID: r.ID, Origin: r.Origin, Snapshot: r.Snapshot, Conflict: c}
		s.rememberAbort(d, w.Aborts)
		return d, nil
	}
	s.last++
	e := &Committed{GSN: s.last, Snapshot: r.Snapshot, Origin: r.Origin, ID: r.ID, Keys: r.Keys, Writeset: r.Writeset}
	s.add(e)
	d := Decision{ID: r.ID, Origin: r.Origin, Committed: true, GSN: e.GSN, Snapshot: r.Snapshot}
	s.ids[idKey(r.Origin, r.ID)] = d
	s.evict(w)
	return d, nil
}

func (s *State) tooOld(snap uint64) error {
	return fmt.Errorf("%w: snapshot GSN %d, but the certifier keeps only the writesets after GSN %d (the last is %d); "+
		"retry the transaction on a fresh snapshot (a node this far behind must catch up first), or keep more in the window "+
		"(coordinator certifier window: count and bytes); a retry of an earlier request with this id learns its outcome from the log",
		ErrSnapshotTooOld, snap, s.base, s.last)
}

// conflict is the first of r's keys (in key order) written by a writeset
// committed after r.Snapshot, with the last such writeset.
func (s *State) conflict(r Request) *Conflict {
	for _, k := range r.Keys {
		var g uint64
		if k.PK == "" {
			g = s.tableLast[k.Table]
		} else {
			g = max(s.rowLast[indexKey(k)], s.tableWide[k.Table])
		}
		if g > r.Snapshot {
			return &Conflict{Key: k, GSN: g, Origin: s.entry(g).Origin}
		}
	}
	return nil
}

// entry is the window's writeset of GSN g (base < g <= last).
func (s *State) entry(g uint64) *Committed { return s.entries[s.head+int(g-s.base-1)] }

func (s *State) add(e *Committed) {
	s.entries = append(s.entries, e)
	s.bytes += e.size()
	for _, k := range e.Keys {
		if k.PK == "" {
			s.tableWide[k.Table] = e.GSN
		} else {
			s.rowLast[indexKey(k)] = e.GSN
		}
		s.tableLast[k.Table] = e.GSN
	}
}

// evict drops the oldest writesets while the window is over its bounds
// (always keeping the newest one).
func (s *State) evict(w Window) {
	for s.Len() > 1 && (s.Len() > w.Count || s.bytes > w.Bytes) {
		e := s.entries[s.head]
		s.entries[s.head] = nil
		s.head++
		s.base = e.GSN
		s.bytes -= e.size()
		for _, k := range e.Keys {
			if k.PK == "" {
				if s.tableWide[k.Table] == e.GSN {
					delete(s.tableWide, k.Table)
				}
			} else if ik := indexKey(k); s.rowLast[ik] == e.GSN {
				delete(s.rowLast, ik)
			}
			if s.tableLast[k.Table] == e.GSN {
				delete(s.tableLast, k.Table)
			}
		}
		if ik := idKey(e.Origin, e.ID); s.ids[ik].GSN == e.GSN {
			delete(s.ids, ik)
		}
	}
	if s.head > 1024 && s.head > len(s.entries)/2 {
		s.entries = append([]*Committed(nil), s.entries[s.head:]...)
		s.head = 0
	}
}

func (s *State) rememberAbort(d Decision, max int) {
	ik := idKey(d.Origin, d.ID)
	s.ids[ik] = d
	s.aborts = append(s.aborts, ik)
	for len(s.aborts)-s.abHead > max {
		ik := s.aborts[s.abHead]
		s.aborts[s.abHead] = ""
		s.abHead++
		if old, ok := s.ids[ik]; ok && !old.Committed {
			delete(s.ids, ik)
		}
	}
	if s.abHead > 1024 && s.abHead > len(s.aborts)/2 {
		s.aborts = append([]string(nil), s.aborts[s.abHead:]...)
		s.abHead = 0
	}
}

// CommittedSince returns the window's writesets with a GSN above gsn, in
// GSN order, at most limit of them (all when limit <= 0). A node reads the
// replication log with it from its applied GSN on; ErrSnapshotTooOld when
// gsn < Base() (the node must be re-seeded or catch up elsewhere). The
// entries are shared: do not modify them.
func (s *State) CommittedSince(gsn uint64, limit int) ([]*Committed, error) {
	if gsn < s.base {
		return nil, fmt.Errorf("%w: asked for the writesets after GSN %d, the window starts after GSN %d (the last is %d); the node must catch up from another node's log or be re-seeded",
			ErrSnapshotTooOld, gsn, s.base, s.last)
	}
	if gsn >= s.last {
		return nil, nil
	}
	from := s.head + int(gsn-s.base)
	to := len(s.entries)
	if limit > 0 && to-from > limit {
		to = from + limit
	}
	return append([]*Committed(nil), s.entries[from:to]...), nil
}

// Lookup returns the remembered decision of origin's request id, if any.
func (s *State) Lookup(origin, id string) (Decision, bool) {
	d, ok := s.ids[idKey(origin, id)]
	return d, ok
}

// idKey scopes a request id to its origin: a node cannot reach another
// node's decisions by reusing its ids.
func idKey(origin, id string) string {
	var n [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(n[:], uint64(len(origin)))
	var sb strings.Builder
	sb.Grow(l + len(origin) + len(id))
	sb.Write(n[:l])
	sb.WriteString(origin)
	sb.WriteString(id)
	return sb.String()
}
