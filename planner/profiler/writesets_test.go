package profiler

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/writeset"
)

func cfTable() *tableMeta {
	return &tableMeta{
		name: "call_forwarding", relname: "call_forwarding",
		cols: []column{{"s_id", "int4", "N"}, {"sf_type", "int2", "N"}, {"start_time", "int2", "N"},
			{"end_time", "int2", "N"}, {"numberx", "varchar", "S"}},
		keyCols: []string{"s_id", "sf_type", "start_time"},
	}
}

func subTable() *tableMeta {
	return &tableMeta{
		name: "subscriber", relname: "subscriber",
		cols:    []column{{"s_id", "int4", "N"}, {"bit_1", "int2", "N"}, {"vlr_location", "int4", "N"}},
		keyCols: []string{"s_id"},
	}
}

func TestBuildWritesets(t *testing.T) {
	caps := []capturedRow{
		// Transaction 7: an update of subscriber 1 (last row at index 2).
		{xid: 7, tbl: "subscriber", op: "U", old: []byte(`{"s_id": 1, "bit_1": 0, "vlr_location": 5}`), new: []byte(`{"s_id": 1, "bit_1": 1, "vlr_location": 5}`)},
		// Transaction 8: insert then (later) delete of one call forwarding.
		{xid: 8, tbl: "call_forwarding", op: "I", new: []byte(`{"s_id": 2, "sf_type": 1, "start_time": 8, "end_time": 12, "numberx": "123"}`)},
		{xid: 7, tbl: "subscriber", op: "U", old: []byte(`{"s_id": 3, "bit_1": 1, "vlr_location": 9}`), new: []byte(`{"s_id": 3, "bit_1": 1, "vlr_location": 10}`)},
		{xid: 9, tbl: "call_forwarding", op: "D", old: []byte(`{"s_id": 2, "sf_type": 1, "start_time": 8, "end_time": 12, "numberx": null}`)},
	}
	fwd, undo, err := buildWritesets(caps, []*tableMeta{subTable(), cfTable()})
	if err != nil {
		t.Fatal(err)
	}
	if len(fwd) != 3 || len(undo) != 3 {
		t.Fatalf("%d forward, %d undo writesets, want 3 and 3", len(fwd), len(undo))
	}
	// Ordered by each transaction's last row: 8 (row 1), 7 (row 2), 9 (row 3).
	if fwd[0].Rows[0].Op != writeset.OpInsert || len(fwd[1].Rows) != 2 || fwd[2].Rows[0].Op != writeset.OpDelete {
		t.Fatalf("forward order wrong: %+v", fwd)
	}
	for i, ws := range fwd {
		if ws.GSN != uint64(i+1) {
			t.Errorf("forward %d has GSN %d", i, ws.GSN)
		}
	}
	if got := fwd[1].Rows[1].After[2]; got != writeset.Int(10) {
		t.Errorf("after-image vlr_location = %v, want 10", got)
	}
	if got := fwd[2].Rows[0].Key; len(got) != 3 || got[2] != writeset.Int(8) {
		t.Errorf("delete key = %v", got)
	}
	// Undo: reverse transaction order and row order, before-images.
	if undo[0].Rows[0].Op != writeset.OpInsert || undo[0].Rows[0].After[4] != writeset.Null() {
		t.Errorf("undo of the delete: %+v", undo[0].Rows[0])
	}
	if r := undo[1].Rows; r[0].Key[0] != writeset.Int(3) || r[0].After[2] != writeset.Int(9) || r[1].Key[0] != writeset.Int(1) || r[1].After[1] != writeset.Int(0) {
		t.Errorf("undo of the updates: %+v", r)
	}
	if undo[2].Rows[0].Op != writeset.OpDelete {
		t.Errorf("undo of the insert: %+v", undo[2].Rows[0])
	}
	for _, ws := range append(fwd, undo...) {
		if _, err := writeset.Statements(writeset.Postgres, ws); err != nil {
			t.Errorf("writeset %d: %v", ws.GSN, err)
		}
	}

	if _, _, err := buildWritesets([]capturedRow{{xid: 1, tbl: "nope", op: "I", new: []byte(`{}`)}}, []*tableMeta{subTable()}); err == nil || !strings.Contains(err.Error(), "unknown table") {
		t.Errorf("unknown table: %v", err)
	}
	if _, _, err := buildWritesets([]capturedRow{{xid: 1, tbl: "subscriber", op: "I", new: []byte(`{"s_id": 1}`)}}, []*tableMeta{subTable()}); err == nil || !strings.Contains(err.Error(), "bit_1 missing") {
		t.Errorf("missing column: %v", err)
	}
}

func TestJSONValue(t *testing.T) {
	for _, c := range []struct {
		typ, raw string
		want     writeset.Value
	}{
		{"int8", `9007199254740993`, writeset.Int(9007199254740993)},
		{"int2", `-3`, writeset.Int(-3)},
		{"float8", `1.5`, writeset.Float(1.5)},
		{"float8", `"NaN"`, writeset.Text("NaN")},
		{"numeric", `12.3400`, writeset.Text("12.3400")},
		{"bool", `true`, writeset.Bool(true)},
		{"bytea", `"\\x00ff"`, writeset.Bytes([]byte{0, 255})},
		{"jsonb", `{"a": [1, 2]}`, writeset.Text(`{"a": [1, 2]}`)},
		{"timestamptz", `"2026-01-02T03:04:05+00:00"`, writeset.Text("2026-01-02T03:04:05+00:00")},
		{"bpchar", `"ABC"`, writeset.Text("ABC")},
		{"int4", `null`, writeset.Null()},
	} {
		got, err := jsonValue(column{name: "c", typname: c.typ}, json.RawMessage(c.raw))
		if err != nil || got != c.want {
			t.Errorf("jsonValue(%s, %s) = %v, %v; want %v", c.typ, c.raw, got, err, c.want)
		}
	}
	for _, c := range []struct{ typ, raw string }{{"int4", `"x"`}, {"int4", `1.5`}, {"bool", `1`}, {"bytea", `"00"`}} {
		if _, err := jsonValue(column{name: "c", typname: c.typ}, json.RawMessage(c.raw)); err == nil {
			t.Errorf("jsonValue(%s, %s) accepted", c.typ, c.raw)
		}
	}
}
