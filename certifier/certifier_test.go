package certifier

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/writeset"
)

// rk is the key of row pk of table.
func rk(table string, pk ...int64) Key {
	vs := make([]writeset.Value, len(pk))
	for i, v := range pk {
		vs[i] = writeset.Int(v)
	}
	_, b, _ := writeset.SplitKey(writeset.RowKey(table, vs))
	return Key{Table: table, PK: b}
}

// tk is the whole-table key of table.
func tk(table string) Key { return Key{Table: table} }

func req(id string, snap uint64, keys ...Key) Request {
	return Request{ID: id, Origin: "n" + id[:1], Snapshot: snap, Keys: SortKeys(keys), Writeset: []byte("ws " + id)}
}

// TestCertify is the decision rule, step by step on one state.
func TestCertify(t *testing.T) {
	type step struct {
		name string
		r    Request
		w    Window
		// want: a commit at gsn, or an abort on key by the writeset at
		// conflictGSN, or an error.
		gsn         uint64
		abortKey    *Key
		conflictGSN uint64
		err         error
		errHas      string
	}
	k1, k2, k3 := rk("acct", 1), rk("acct", 2), rk("acct", 3)
	o1 := rk("other", 1)
	steps := []step{
		{name: "first commit", r: req("1a", 0, k1), gsn: 1},
		{name: "disjoint keys, old snapshot", r: req("1b", 0, k2), gsn: 2},
		{name: "same key after the snapshot aborts", r: req("2a", 0, k1, k3), abortKey: &k1, conflictGSN: 1},
		{name: "same key before the snapshot commits", r: req("2b", 1, k1), gsn: 3},
		{name: "reports the last writer of the key", r: req("3a", 0, k1), abortKey: &k1, conflictGSN: 3},
		{name: "first conflicting key in key order", r: req("3b", 1, k3, k2, k1), abortKey: &k1, conflictGSN: 3},
		{name: "same pk in another table does not conflict", r: req("3c", 0, o1), gsn: 4},
		{name: "retry of a commit returns it", r: req("1a", 0, k1), gsn: 1},
		{name: "retry of an abort returns it", r: req("2a", 3, k3), abortKey: &k1, conflictGSN: 1},
		{name: "an id is scoped to its origin", r: Request{ID: "1a", Origin: "n9", Keys: []Key{k1}}, abortKey: &k1, conflictGSN: 3},
		{name: "whole-table key conflicts with any row written after", r: req("4a", 3, tk("other")), abortKey: ptr(tk("other")), conflictGSN: 4},
		{name: "whole-table key commits when no row was written after", r: req("4b", 4, tk("other")), gsn: 5},
		{name: "row conflicts with a whole-table write after", r: req("4c", 4, o1), abortKey: &o1, conflictGSN: 5},
		{name: "row of the whole-table write's table before it commits", r: req("4d", 5, o1), gsn: 6},
		{name: "snapshot ahead of the last GSN", r: req("5a", 7, k1), err: ErrBadRequest, errHas: "ahead"},
		{name: "no id", r: Request{Snapshot: 1, Keys: []Key{k1}}, err: ErrBadRequest, errHas: "no id"},
		{name: "no keys", r: Request{ID: "5b", Snapshot: 1}, err: ErrBadRequest, errHas: "no keys"},
		{name: "unsorted keys", r: Request{ID: "5c", Keys: []Key{k2, k1}}, err: ErrBadRequest, errHas: "sorted"},
		{name: "duplicate keys", r: Request{ID: "5d", Keys: []Key{k1, k1}}, err: ErrBadRequest, errHas: "sorted"},
		{name: "no table", r: Request{ID: "5e", Keys: []Key{{PK: "x"}}}, err: ErrBadRequest, errHas: "no table"},
		// A window of 2 writesets: the commit at 7 leaves 6 and 7 (base 5).
		{name: "commit shrinks the window", r: req("6a", 6, k2), w: Window{Count: 2}, gsn: 7},
		{name: "snapshot before the window", r: req("6b", 4, k3), err: ErrSnapshotTooOld, errHas: "keeps only the writesets after GSN 5"},
		{name: "snapshot at the window's start", r: req("6c", 5, k3), gsn: 8},
		{name: "retry of a commit that left the window is too old", r: req("1b", 0, k2), err: ErrSnapshotTooOld},
		// Bytes: one writeset of 1 KiB against a 1 KiB bound keeps only it.
		{name: "byte bound", r: Request{ID: "7a", Snapshot: 8, Keys: []Key{k1}, Writeset: bytes.Repeat([]byte{1}, 1024)}, w: Window{Bytes: 1024}, gsn: 9},
		{name: "byte bound left only the newest", r: req("7b", 7, k3), err: ErrSnapshotTooOld, errHas: "after GSN 8"},
	}
	s := New()
	for _, st := range steps {
		d, err := s.Certify(st.r, st.w)
		if st.err != nil {
			if !errors.Is(err, st.err) || !strings.Contains(err.Error(), st.errHas) {
				t.Fatalf("%s: err %v, want %v containing %q", st.name, err, st.err, st.errHas)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if d.ID != st.r.ID {
			t.Fatalf("%s: decision for %q", st.name, d.ID)
		}
		if st.abortKey == nil {
			if !d.Committed || d.GSN != st.gsn || d.Conflict != nil || d.Err() != nil {
				t.Fatalf("%s: %+v, want a commit at GSN %d", st.name, d, st.gsn)
			}
			continue
		}
		if d.Committed || d.Conflict == nil || d.Conflict.Key != *st.abortKey || d.Conflict.GSN != st.conflictGSN {
			t.Fatalf("%s: %+v (conflict %+v), want an abort on %v by GSN %d", st.name, d, d.Conflict, *st.abortKey, st.conflictGSN)
		}
		if !errors.Is(d.Err(), ErrConflict) || !strings.Contains(d.Err().Error(), st.abortKey.String()) {
			t.Fatalf("%s: abort error %v does not name %s", st.name, d.Err(), st.abortKey)
		}
	}
	if s.Last() != 9 || s.Base() != 8 || s.Len() != 1 {
		t.Fatalf("last %d base %d len %d", s.Last(), s.Base(), s.Len())
	}
}

func ptr[T any](v T) *T { return &v }

// TestAbortMessage: what the client will read after 40001.
func TestAbortMessage(t *testing.T) {
	s := New()
	k := Key{Table: "subscriber"}
	_, k.PK, _ = writeset.SplitKey(writeset.RowKey("subscriber", []writeset.Value{writeset.Int(42), writeset.Text("it's")}))
	if _, err := s.Certify(Request{ID: "a", Origin: "n2", Keys: []Key{k}}, Window{}); err != nil {
		t.Fatal(err)
	}
	d, err := s.Certify(Request{ID: "b", Origin: "n1", Keys: []Key{k}}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	want := `certifier: write-write conflict with a concurrent committed transaction: table "subscriber" key (42, 'it''s') was written by the transaction committed at GSN 1 (on node n2) after this transaction's snapshot (GSN 0); retry the transaction`
	if got := d.Err().Error(); got != want {
		t.Fatalf("message\n got %s\nwant %s", got, want)
	}
	if got := tk(`we"ird`).String(); got != `table "we""ird" (every row)` {
		t.Fatalf("whole-table key: %s", got)
	}
}

// TestKeysOf derives keys from a writeset: rows, a key change, a DDL table.
func TestKeysOf(t *testing.T) {
	i := writeset.Int
	ws := &writeset.Writeset{Rows: []writeset.Row{
		{Table: "b", Op: writeset.OpUpdate, KeyCols: []string{"id"}, Key: []writeset.Value{i(2)}, Cols: []string{"id", "v"}, After: []writeset.Value{i(3), i(0)}},
		{Table: "a", Op: writeset.OpDelete, KeyCols: []string{"id"}, Key: []writeset.Value{i(1)}},
		{Table: "a", Op: writeset.OpInsert, KeyCols: []string{"id"}, Key: []writeset.Value{i(1)}, Cols: []string{"id"}, After: []writeset.Value{i(1)}},
	}}
	got := KeysOf(ws)
	want := []Key{rk("a", 1), rk("b", 2), rk("b", 3)}
	if len(got) != len(want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	for j := range want {
		if got[j] != want[j] {
			t.Fatalf("key %d: %v, want %v", j, got[j], want[j])
		}
	}
	ddl := &writeset.Writeset{DDL: "DROP TABLE a", Rows: []writeset.Row{{Table: "a", Op: writeset.OpDDL}}}
	if got := KeysOf(ddl); len(got) != 1 || got[0] != tk("a") {
		t.Fatalf("ddl keys %v", got)
	}
	if KeysOf(&writeset.Writeset{}) == nil {
		// An empty writeset has no keys; Validate refuses such a request.
	}
	r := Request{ID: "x", Keys: KeysOf(ws)}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestCommittedSince serves the window in GSN order from a GSN on.
func TestCommittedSince(t *testing.T) {
	s := New()
	for g := 1; g <= 10; g++ {
		if d, err := s.Certify(req(string(rune('a'+g))+"x", uint64(g-1), rk("t", int64(g))), Window{Count: 6}); err != nil || d.GSN != uint64(g) {
			t.Fatalf("%d: %+v %v", g, d, err)
		}
	}
	cases := []struct {
		from  uint64
		limit int
		want  []uint64
		err   error
	}{
		{from: 4, want: []uint64{5, 6, 7, 8, 9, 10}},
		{from: 7, limit: 2, want: []uint64{8, 9}},
		{from: 10},
		{from: 12},
		{from: 3, err: ErrSnapshotTooOld},
	}
	for _, c := range cases {
		got, err := s.CommittedSince(c.from, c.limit)
		if !errors.Is(err, c.err) {
			t.Fatalf("from %d: %v", c.from, err)
		}
		var gsns []uint64
		for _, e := range got {
			gsns = append(gsns, e.GSN)
			if string(e.Writeset) != "ws "+e.ID {
				t.Fatalf("GSN %d holds %q", e.GSN, e.Writeset)
			}
		}
		if len(gsns) != len(c.want) {
			t.Fatalf("from %d: %v, want %v", c.from, gsns, c.want)
		}
		for i := range gsns {
			if gsns[i] != c.want[i] {
				t.Fatalf("from %d: %v, want %v", c.from, gsns, c.want)
			}
		}
	}
}

// TestSnapshotRestore: a restored state decides exactly as the original.
func TestSnapshotRestore(t *testing.T) {
	s := New()
	w := Window{Count: 4, Aborts: 2}
	for i, r := range []Request{req("1a", 0, rk("t", 1)), req("1b", 0, rk("t", 1)), req("1c", 1, tk("u")), req("1d", 1, rk("t", 2)),
		req("1e", 0, rk("t", 2)), req("1f", 3, rk("t", 1), rk("t", 5)), req("1g", 4, rk("t", 2)), req("1h", 4, rk("u", 9))} {
		if _, err := s.Certify(r, w); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
	}
	var buf bytes.Buffer
	if _, err := s.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r, err := Restore(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Last() != s.Last() || r.Base() != s.Base() || r.Len() != s.Len() || r.Bytes() != s.Bytes() || r.Remembered() != s.Remembered() {
		t.Fatalf("restored last %d base %d len %d bytes %d ids %d, had %d %d %d %d %d", r.Last(), r.Base(), r.Len(), r.Bytes(), r.Remembered(),
			s.Last(), s.Base(), s.Len(), s.Bytes(), s.Remembered())
	}
	for _, q := range []Request{req("1b", 0, rk("t", 1)), req("1e", 0, rk("t", 2)), req("2a", 2, rk("t", 1)), req("2b", 5, tk("t")), req("2c", 5, rk("u", 9)), req("2d", 0, rk("x", 1))} {
		d1, e1 := s.Certify(q, w)
		d2, e2 := r.Certify(q, w)
		if (e1 == nil) != (e2 == nil) || e1 != nil && e1.Error() != e2.Error() || d1.Err() != nil && d1.Err().Error() != d2.Err().Error() || d1.GSN != d2.GSN || d1.Committed != d2.Committed {
			t.Fatalf("request %s: original %+v %v, restored %+v %v", q.ID, d1, e1, d2, e2)
		}
	}
	for _, bad := range [][]byte{nil, []byte("TCS0"), buf.Bytes()[:buf.Len()-1], append(buf.Bytes(), 0)} {
		if _, err := Restore(bytes.NewReader(bad)); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("restore of %d bytes: %v", len(bad), err)
		}
	}
}

// TestRequestEncoding round-trips requests and refuses malformed ones.
func TestRequestEncoding(t *testing.T) {
	good := Request{ID: "n1-42", Origin: "n1", Snapshot: 300, Keys: SortKeys([]Key{rk("t", 1), tk("u"), rk("t", 2, 3)}), Writeset: []byte{1, 2, 3}}
	b := good.Encode()
	got, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Encode(), b) || got.ID != good.ID || got.Origin != good.Origin || got.Snapshot != good.Snapshot || len(got.Keys) != 3 || string(got.Writeset) != string(good.Writeset) {
		t.Fatalf("round trip: %+v", got)
	}
	cases := []struct {
		name string
		b    []byte
		has  string
	}{
		{"empty", nil, "empty"},
		{"version", append([]byte{2}, b[1:]...), "version 2"},
		{"truncated", b[:len(b)-1], "exceeds"},
		{"trailing", append(append([]byte(nil), b...), 0), "trailing"},
		{"non-minimal varint", []byte{1, 0x81, 0x00}, "non-minimal"},
		{"huge count", []byte{1, 1, 'x', 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, "count"},
		{"no keys", (&Request{ID: "x"}).AppendEncode(nil), "no keys"},
	}
	for _, c := range cases {
		if _, err := DecodeRequest(c.b); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.has) {
			t.Fatalf("%s: %v, want ErrBadRequest containing %q", c.name, err, c.has)
		}
	}
}

// TestCertifyNoKeys: a writeset without keys (interleaved sequence draws
// only) commits whatever was written after its snapshot.
func TestCertifyNoKeys(t *testing.T) {
	s := New()
	k := Key{Table: "t", PK: "1"}
	for i, id := range []string{"a", "b"} {
		if d, err := s.Certify(Request{ID: id, Snapshot: uint64(i), Keys: []Key{k}, Writeset: []byte{1}}, Window{}); err != nil || !d.Committed {
			t.Fatalf("%s: %+v %v", id, d, err)
		}
	}
	d, err := s.Certify(Request{ID: "draw", Snapshot: 0, Writeset: []byte{1}}, Window{})
	if err != nil || !d.Committed || d.GSN != 3 {
		t.Fatalf("keyless writeset: %+v %v, want a commit at GSN 3", d, err)
	}
	if _, err := s.Certify(Request{ID: "empty", Snapshot: 3}, Window{}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("neither keys nor writeset: %v", err)
	}
}
