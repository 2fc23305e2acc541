package writeset

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestConflictKeys(t *testing.T) {
	upd := updateRow()
	upd2 := updateRow()
	upd2.After[2] = Int(99) // same row, other values
	tests := []struct {
		name string
		ws   *Writeset
		want []string
	}{
		{"nil", nil, nil},
		{"empty", &Writeset{}, nil},
		{"one row", &Writeset{Rows: []Row{upd}}, []string{RowKey("subscriber", []Value{Int(7)})}},
		{"same row twice is one key", &Writeset{Rows: []Row{upd, upd2}}, []string{RowKey("subscriber", []Value{Int(7)})}},
		{"delete", &Writeset{Rows: []Row{deleteRow()}}, []string{RowKey("call_forwarding", []Value{Int(7), Int(2), Int(0)})}},
		{"key change yields old and new", &Writeset{Rows: []Row{keyChangeRow()}}, []string{
			RowKey("public.special_facility", []Value{Int(1), Int(1)}),
			RowKey("public.special_facility", []Value{Int(1), Int(4)}),
		}},
		{"ddl", ddlWriteset(), []string{TableKey("t2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ConflictKeys(tt.ws)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("ConflictKeys = %q, want %q", got, want)
			}
			if !slices.IsSorted(got) {
				t.Fatal("keys not sorted")
			}
		})
	}
}

func TestConflictKeysDistinguish(t *testing.T) {
	// Keys must be equal exactly when table and key values are equal.
	type k struct {
		table string
		key   []Value
	}
	cases := []k{
		{"t", []Value{Int(1)}},
		{"t", []Value{Int(2)}},
		{"t", []Value{Text("1")}},
		{"t", []Value{Float(1)}},
		{"t", []Value{Bytes([]byte("1"))}},
		{"t", []Value{Bool(true)}},
		{"t", []Value{Int(1), Int(2)}},
		{"t", []Value{Int(12)}},
		{"t", []Value{Text("a"), Text("bc")}},
		{"t", []Value{Text("ab"), Text("c")}},
		{"u", []Value{Int(1)}},
		{"t1", []Value{}},
		{"t", []Value{Text("\x01")}},
	}
	seen := map[string]int{}
	for i, c := range cases {
		key := RowKey(c.table, c.key)
		if j, dup := seen[key]; dup {
			t.Fatalf("cases %d and %d share key %q", j, i, key)
		}
		seen[key] = i
	}
	// Table keys are prefixes of their own rows' keys only.
	for _, c := range cases {
		key := RowKey(c.table, c.key)
		for _, table := range []string{"t", "u", "t1"} {
			if got, want := strings.HasPrefix(key, TableKey(table)), table == c.table; got != want {
				t.Errorf("HasPrefix(RowKey(%q), TableKey(%q)) = %v", c.table, table, got)
			}
		}
	}
}

func TestConflictKeysIntersect(t *testing.T) {
	// The certifier's question: do two concurrent writesets touch a common row?
	a := &Writeset{Rows: []Row{updateRow(), insertRow()}}
	b := &Writeset{Rows: []Row{deleteRow()}}                 // other call_forwarding key
	c := &Writeset{Rows: []Row{updateRow(), keyChangeRow()}} // same subscriber
	intersects := func(x, y *Writeset) bool {
		ky := ConflictKeys(y)
		for _, k := range ConflictKeys(x) {
			if _, ok := slices.BinarySearch(ky, k); ok {
				return true
			}
		}
		return false
	}
	if intersects(a, b) {
		t.Error("a and b write different rows but conflict")
	}
	if !intersects(a, c) {
		t.Error("a and c write the same subscriber row but do not conflict")
	}
}

func TestSplitKeyAndKeyValues(t *testing.T) {
	cases := []struct {
		name  string
		key   string
		table string
		vals  []Value
	}{
		{"int key", RowKey("subscriber", []Value{Int(42)}), "subscriber", []Value{Int(42)}},
		{"composite", RowKey("public.cf", []Value{Int(-1), Text("it's"), Bytes([]byte{0, 255})}), "public.cf", []Value{Int(-1), Text("it's"), Bytes([]byte{0, 255})}},
		{"table key", TableKey("t"), "t", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table, pk, err := SplitKey(c.key)
			if err != nil || table != c.table {
				t.Fatalf("SplitKey = %q, %v", table, err)
			}
			vals, err := KeyValues(pk)
			if err != nil || !slices.Equal(vals, c.vals) {
				t.Fatalf("KeyValues = %v, %v; want %v", vals, err, c.vals)
			}
		})
	}
	if _, _, err := SplitKey("\x05ab"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short table: %v", err)
	}
	if _, err := KeyValues("\x09"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown kind: %v", err)
	}
}
