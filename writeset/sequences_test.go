package writeset

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// seqRow is a SequenceTable row as the SQLite back end captures it (the
// columns that matter here).
func seqRow(op Op, name string, last, called, gen, stride int64) Row {
	return Row{Table: SequenceTable, Op: op, KeyCols: []string{"name"}, Key: []Value{Text(name)},
		Cols:  []string{"name", "increment", "last_value", "is_called", "owner_table", "generation", "stride"},
		After: []Value{Text(name), Int(1), Int(last), Int(called), Text("t"), Int(gen), Int(stride)}}
}

// TestSequenceDrawKeys: an interleaved draw collides with nothing; any
// other write of a sequence's row keeps its key.
func TestSequenceDrawKeys(t *testing.T) {
	other := Row{Table: "t", Op: OpInsert, KeyCols: []string{"id"}, Key: []Value{Int(4)}, Cols: []string{"id"}, After: []Value{Int(4)}}
	for _, c := range []struct {
		name string
		row  Row
		keys int
	}{
		{"a strided draw", seqRow(OpUpdate, "s", 4, 1, 0, 3), 1},
		{"an unstrided draw", seqRow(OpUpdate, "s", 4, 1, 0, 0), 2},
		{"a setval", seqRow(OpUpdate, "s", 4, 1, 1, 0), 2},
		{"a stride of 1", seqRow(OpUpdate, "s", 4, 1, 0, 1), 2},
		{"a user table with a stride column", Row{Table: "u", Op: OpUpdate, KeyCols: []string{"name"}, Key: []Value{Text("s")},
			Cols: []string{"name", "last_value", "generation", "stride"}, After: []Value{Text("s"), Int(1), Int(0), Int(3)}}, 2},
	} {
		ws := &Writeset{Rows: []Row{c.row, other}}
		if got := ConflictKeys(ws); len(got) != c.keys {
			t.Errorf("%s: %d conflict keys, want %d", c.name, len(got), c.keys)
		}
	}
}

// TestSequenceApply runs the apply of SequenceTable rows on a real SQLite
// database: within a generation last_value only moves forward, a draw
// moves nothing but last_value, a newer generation wins, and a draw of a
// dropped sequence does not bring it back.
func TestSequenceApply(t *testing.T) {
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "seq.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE _tandem_sequences (name TEXT PRIMARY KEY, increment INTEGER NOT NULL DEFAULT 1, last_value INTEGER NOT NULL,
		is_called INTEGER NOT NULL, owner_table TEXT, generation INTEGER NOT NULL DEFAULT 0, stride INTEGER NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	b := sqlBackend{db}
	apply := func(rows ...Row) {
		t.Helper()
		ws := &Writeset{GSN: 1, Rows: rows}
		got, err := Decode(Encode(ws))
		if err != nil {
			t.Fatal(err)
		}
		sts, err := Statements(SQLite, got)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // idempotent
			if err := b.execTx(sts); err != nil {
				t.Fatal(err)
			}
		}
	}
	state := func() string {
		t.Helper()
		return strings.Join(b.dump(t, `SELECT name, last_value, is_called, owner_table, generation, stride FROM _tandem_sequences ORDER BY name`), "; ")
	}
	steps := []struct {
		name string
		rows []Row
		want string
	}{
		{"created", []Row{seqRow(OpInsert, "s", 1, 0, 0, 0)}, "'s' 1 0 't' 0 0"},
		{"n1 draws 1", []Row{seqRow(OpUpdate, "s", 1, 1, 0, 3)}, "'s' 1 1 't' 0 3"},
		{"n3 draws 6", []Row{seqRow(OpUpdate, "s", 6, 1, 0, 3)}, "'s' 6 1 't' 0 3"},
		{"n2 drew 5 before it: behind, dropped", []Row{seqRow(OpUpdate, "s", 5, 1, 0, 3)}, "'s' 6 1 't' 0 3"},
		{"a rename's image read before n3's draw keeps last_value", []Row{func() Row {
			r := seqRow(OpUpdate, "s", 1, 1, 0, 0)
			r.After[4] = Text("t2")
			return r
		}()}, "'s' 6 1 't2' 0 0"},
		{"a draw moves only last_value", []Row{func() Row {
			r := seqRow(OpUpdate, "s", 7, 1, 0, 3)
			r.After[4] = Text("stale")
			return r
		}()}, "'s' 7 1 't2' 0 3"},
		{"setval(2): a new generation wins", []Row{seqRow(OpUpdate, "s", 2, 1, 1, 0)}, "'s' 2 1 't' 1 0"},
		{"a draw of the old generation is dropped", []Row{seqRow(OpUpdate, "s", 10, 1, 0, 3)}, "'s' 2 1 't' 1 0"},
		{"a draw of the new generation applies", []Row{seqRow(OpUpdate, "s", 4, 1, 1, 3)}, "'s' 4 1 't' 1 3"},
		{"setval and a draw in one transaction: the draw's image, a newer generation", []Row{seqRow(OpUpdate, "s", 3, 1, 2, 3)}, "'s' 3 1 't' 2 3"},
		{"dropped", []Row{{Table: SequenceTable, Op: OpDelete, KeyCols: []string{"name"}, Key: []Value{Text("s")}}}, ""},
		{"a draw of a dropped sequence", []Row{seqRow(OpUpdate, "s", 9, 1, 2, 3)}, ""},
	}
	for _, s := range steps {
		apply(s.rows...)
		if got := state(); got != s.want {
			t.Fatalf("%s: %q, want %q", s.name, got, s.want)
		}
	}
}
