package certifier

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/tandemdb/tandem/writeset"
)

// Key is one thing a transaction wrote: a row (Table and the canonical
// encoding of its primary-key values, as writeset.RowKey builds it) or, with
// PK empty, a whole table (a DDL statement, or a row of a table without a
// primary key). A row key conflicts with the same row key and with its
// table's whole-table key; a whole-table key conflicts with every key of its
// table.
type Key struct {
	Table string `json:"table"`
	PK    string `json:"pk,omitempty"`
}

// WholeTable reports whether k stands for every row of its table.
func (k Key) WholeTable() bool { return k.PK == "" }

// String renders k for humans: `table "subscriber" key (42)`, or
// `table "t" (every row)`.
func (k Key) String() string {
	if k.PK == "" {
		return "table " + quote(k.Table) + " (every row)"
	}
	return "table " + quote(k.Table) + " key " + k.Values()
}

// Values renders the primary-key values as an SQL-like tuple, "(42, 'x')";
// bytes that do not decode are shown in hex.
func (k Key) Values() string {
	vs, err := writeset.KeyValues(k.PK)
	if err != nil {
		return "x'" + hexString(k.PK) + "'"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func hexString(s string) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		b = append(b, digits[s[i]>>4], digits[s[i]&15])
	}
	return string(b)
}

// compareKeys orders keys by table, then primary-key bytes; a request's
// keys are sorted and unique in this order.
func compareKeys(a, b Key) int {
	if c := cmp.Compare(a.Table, b.Table); c != 0 {
		return c
	}
	return cmp.Compare(a.PK, b.PK)
}

// SortKeys sorts keys and drops duplicates, as a Request requires.
func SortKeys(keys []Key) []Key {
	slices.SortFunc(keys, compareKeys)
	return slices.Compact(keys)
}

// KeysOf derives the write keys of ws (writeset.ConflictKeys, split into
// table and key bytes), sorted and unique: one per changed row (both keys
// for an update that changes the primary key) and a whole-table key for a
// DDL record or a row of a table without a primary key.
func KeysOf(ws *writeset.Writeset) []Key {
	cks := writeset.ConflictKeys(ws)
	keys := make([]Key, 0, len(cks))
	for _, ck := range cks {
		table, pk, err := writeset.SplitKey(ck)
		if err != nil {
			continue // ConflictKeys builds them; cannot happen
		}
		keys = append(keys, Key{Table: table, PK: pk})
	}
	return SortKeys(keys)
}

// indexKey is the map key of a row: the table length-prefixed, then the key
// bytes (unambiguous: no two (table, pk) pairs give the same string).
func indexKey(k Key) string {
	b := make([]byte, 0, binary.MaxVarintLen64+len(k.Table)+len(k.PK))
	b = binary.AppendUvarint(b, uint64(len(k.Table)))
	b = append(b, k.Table...)
	b = append(b, k.PK...)
	return string(b)
}
