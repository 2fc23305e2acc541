package writeset

import "slices"

// ConflictKeys returns the sorted, de-duplicated conflict keys of ws: one per
// changed row (RowKey of its table and primary key) and one per table a DDL
// record touches (TableKey). Two writesets conflict under first-committer-wins
// when their row keys intersect; a certifier that also wants DDL to conflict
// with concurrent writes to the same table checks the TableKey of each row
// key's table (RowKey(t, k) starts with TableKey(t)).
//
// Keys are opaque binary strings, meant for maps and sets: a length-prefixed
// table name followed by the canonical encoding of each key value, so two
// keys are equal exactly when table name and key values are (an int key 1
// and a text key '1' differ; capture must be consistent about key types).
// For an update that changes the primary key, both the old and the new key
// are returned. Rows that break the Row rules contribute what they can.
// An interleaved sequence draw (Row.SequenceDraw) has no key: it collides
// with nothing.
func ConflictKeys(ws *Writeset) []string {
	if ws == nil || len(ws.Rows) == 0 {
		return nil
	}
	keys := make([]string, 0, len(ws.Rows))
	var buf []byte
	for i := range ws.Rows {
		r := &ws.Rows[i]
		if r.Op == OpDDL || r.Op == OpInsertRow || r.Op == OpDeleteRow {
			// No key: a row of a table without one conflicts with every
			// change to its table.
			keys = append(keys, TableKey(r.Table))
			continue
		}
		if r.SequenceDraw() {
			continue
		}
		buf = appendRowKey(buf[:0], r.Table, r.Key)
		keys = append(keys, string(buf))
		if r.Op == OpUpdate && len(r.KeyCols) == len(r.Key) && len(r.After) == len(r.Cols) && r.keyChanged() {
			buf = appendStr(buf[:0], r.Table)
			for _, kc := range r.KeyCols {
				if j := slices.Index(r.Cols, kc); j >= 0 {
					buf = appendValue(buf, r.After[j])
				}
			}
			keys = append(keys, string(buf))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// RowKey returns the conflict key of the row of table with primary key key.
func RowKey(table string, key []Value) string {
	return string(appendRowKey(nil, table, key))
}

// TableKey returns the table-level conflict key of table; it is a prefix of
// every RowKey of that table and of no other table's keys.
func TableKey(table string) string {
	return string(appendStr(nil, table))
}

func appendRowKey(dst []byte, table string, key []Value) []byte {
	dst = appendStr(dst, table)
	for _, v := range key {
		dst = appendValue(dst, v)
	}
	return dst
}

// SplitKey splits a conflict key (from ConflictKeys, RowKey or TableKey)
// into its table and the canonical encoding of its key values (empty for a
// TableKey). It is the inverse of the concatenation RowKey performs; the
// key bytes stay opaque (use KeyValues to render them).
func SplitKey(key string) (table, pk string, err error) {
	d := decoder{b: []byte(key), s: key}
	table = d.str("table")
	if d.err != nil {
		return "", "", d.err
	}
	return table, key[d.off:], nil
}

// KeyValues decodes the key-value part of a conflict key (the pk that
// SplitKey returns) into its values, so a conflict can name the row it is
// about ("(42, 'x')"). Malformed bytes yield an error wrapping ErrCorrupt.
func KeyValues(pk string) ([]Value, error) {
	d := decoder{b: []byte(pk), s: pk}
	var vs []Value
	for d.err == nil && d.off < len(d.b) {
		vs = append(vs, d.value("key"))
	}
	if d.err != nil {
		return nil, d.err
	}
	return vs, nil
}
