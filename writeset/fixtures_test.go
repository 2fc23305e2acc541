package writeset

import "math"

// Fixtures shared by the tests: TM1-flavoured writesets.

func insertRow() Row {
	return Row{
		Table:   "call_forwarding",
		Op:      OpInsert,
		KeyCols: []string{"s_id", "sf_type", "start_time"},
		Key:     []Value{Int(7), Int(2), Int(8)},
		Cols:    []string{"s_id", "sf_type", "start_time", "end_time", "numberx"},
		After:   []Value{Int(7), Int(2), Int(8), Int(16), Text("555-0100")},
	}
}

func updateRow() Row {
	return Row{
		Table:   "subscriber",
		Op:      OpUpdate,
		KeyCols: []string{"s_id"},
		Key:     []Value{Int(7)},
		Cols:    []string{"s_id", "bit_1", "vlr_location", "msc_location", "blob"},
		After:   []Value{Int(7), Bool(true), Int(-3), Null(), Bytes([]byte{0, 1, 0xfe})},
	}
}

func deleteRow() Row {
	return Row{
		Table:   "call_forwarding",
		Op:      OpDelete,
		KeyCols: []string{"s_id", "sf_type", "start_time"},
		Key:     []Value{Int(7), Int(2), Int(0)},
	}
}

func keyChangeRow() Row {
	return Row{
		Table:   "public.special_facility",
		Op:      OpUpdate,
		KeyCols: []string{"s_id", "sf_type"},
		Key:     []Value{Int(1), Int(1)},
		Cols:    []string{"s_id", "sf_type", "data_a", "score"},
		After:   []Value{Int(1), Int(4), Text("x"), Float(math.Inf(-1))},
	}
}

func dmlWriteset() *Writeset {
	return &Writeset{
		GSN:    1 << 40,
		Epoch:  3,
		Origin: "node-a",
		Rows:   []Row{updateRow(), insertRow(), deleteRow(), keyChangeRow()},
	}
}

func ddlWriteset() *Writeset {
	return &Writeset{
		GSN:    9,
		Epoch:  1,
		Origin: "node-b",
		DDL:    `CREATE TABLE "t2" (id INTEGER PRIMARY KEY, v TEXT)`,
		Rows:   []Row{{Table: "t2", Op: OpDDL}},
	}
}
