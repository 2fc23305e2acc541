package writeset

import (
	"fmt"
	"slices"
	"strings"
)

// SequenceTable is the SQLite back end's table of sequences (package
// sqlpg): one row per sequence, replicated like a user table's rows. Two
// of its rules live here, where every node and the certifier read them:
//
//   - A sequence's last_value never moves back by an apply within one
//     generation. The row's generation column counts the writes meant to
//     move it back (setval, RESTART, a cycle's wrap); an after-image of
//     the same generation that is behind the node's row (an earlier draw,
//     or a rename that read the row before it) leaves last_value as it is.
//   - A draw made with the multi-master stride (the after-image's stride
//     column above 1) is an interleaved draw: every node draws only its
//     own residue modulo the stride, so two nodes' draws never collide and
//     the row is left out of the conflict keys (ConflictKeys). Its apply
//     moves only last_value, forward, and only within its generation or
//     into a newer one: a draw that a setval or RESTART on another node
//     overtook in the global order is dropped, and a stale image never
//     overwrites the row's other columns.
const SequenceTable = "_tandem_sequences"

// SequenceDraw reports whether r is an interleaved sequence draw (see
// SequenceTable): a valid insert or update of a SequenceTable row, keeping
// its key, whose after-image has stride > 1.
func (r *Row) SequenceDraw() bool {
	if r.Table != SequenceTable || (r.Op != OpInsert && r.Op != OpUpdate) || len(r.After) != len(r.Cols) {
		return false
	}
	k, ok := r.intCol("stride")
	if !ok || k <= 1 {
		return false
	}
	if _, ok := r.intCol("last_value"); !ok {
		return false
	}
	if _, ok := r.intCol("generation"); !ok {
		return false
	}
	return len(r.KeyCols) == 1 && r.KeyCols[0] == "name" && len(r.Key) == 1 && !r.keyChanged()
}

func (r *Row) intCol(name string) (int64, bool) {
	j := slices.Index(r.Cols, name)
	if j < 0 || j >= len(r.After) {
		return 0, false
	}
	return r.After[j].AsInt()
}

// sequenceStatement is the apply of a SequenceTable row that keeps its
// key (ok false for any other row).
func sequenceStatement(d Dialect, r *Row) (st Stmt, ok bool, err error) {
	if r.Table != SequenceTable || (r.Op != OpInsert && r.Op != OpUpdate) || r.keyChanged() || !slices.Contains(r.Cols, "generation") {
		return Stmt{}, false, nil
	}
	t := quoteTable(d, r.Table)
	if r.SequenceDraw() {
		lv, _ := r.intCol("last_value")
		gen, _ := r.intCol("generation")
		k, _ := r.intCol("stride")
		p := d.Placeholder
		sql := fmt.Sprintf(`UPDATE %s SET "last_value" = %s, "is_called" = 1, "stride" = %s, "generation" = %s WHERE "name" = %s AND ("generation" < %s OR "generation" = %s AND ("is_called" = 0 OR "last_value" < %s))`,
			t, p(1), p(2), p(3), p(4), p(5), p(6), p(7))
		return Stmt{SQL: sql, Args: []any{lv, k, gen, r.Key[0].Any(), gen, gen, lv}}, true, nil
	}
	sql, err := UpsertSQL(d, r.Table, r.Cols, r.KeyCols)
	if err != nil {
		return Stmt{}, true, err
	}
	// Within a generation the node's row keeps a last_value that is ahead
	// of the image (and its is_called with it).
	keep := fmt.Sprintf(`%[1]s."generation" = excluded."generation" AND %[1]s."is_called" <> 0 AND (excluded."is_called" = 0 OR %[1]s."increment" > 0 AND %[1]s."last_value" > excluded."last_value" OR %[1]s."increment" < 0 AND %[1]s."last_value" < excluded."last_value")`, t)
	for _, c := range []string{"last_value", "is_called"} {
		plain := `"` + c + `" = excluded."` + c + `"`
		if !strings.Contains(sql, plain) {
			return Stmt{}, true, fmt.Errorf("%w: %s row without %s", ErrInvalid, SequenceTable, c)
		}
		sql = strings.Replace(sql, plain, fmt.Sprintf(`"%[1]s" = CASE WHEN %[2]s THEN %[3]s."%[1]s" ELSE excluded."%[1]s" END`, c, keep, t), 1)
	}
	return Stmt{SQL: sql, Args: appendArgs(nil, r.After)}, true, nil
}
