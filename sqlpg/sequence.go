package sqlpg

import (
	"database/sql/driver"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/tandemdb/tandem/pgwire"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Sequences live in _tandem_sequences. nextval, currval and setval work as
// statements of their own (SELECT nextval('s')), which is how ORMs and
// migration tools call them: each becomes one UPDATE ... RETURNING on the
// sequence's row. Inside other expressions they answer 0A000.

func (t *translator) createSequence(s *pg_query.CreateSeqStmt, tr *Translation) (*Translation, error) {
	tr.DDL, tr.Tag = true, "CREATE SEQUENCE"
	name, err := t.tableName(s.Sequence)
	if err != nil {
		return nil, err
	}
	start, inc, minv, maxv, cycle := int64(1), int64(1), int64(1), int64(9223372036854775807), 0
	typeOID := int64(20)
	startSet, minSet, maxSet := false, false, false
	var owner []string
	for _, o := range s.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		switch d.Defname {
		case "start":
			start, startSet = seqOptionInt(d), true
		case "increment":
			inc = seqOptionInt(d)
		case "minvalue":
			// NO MINVALUE has no argument: the type's default.
			if d.Arg != nil {
				minv, minSet = seqOptionInt(d), true
			}
		case "maxvalue":
			if d.Arg != nil {
				maxv, maxSet = seqOptionInt(d), true
			}
		case "cycle":
			if b := d.Arg.GetBoolean(); b != nil && b.Boolval {
				cycle = 1
			}
		case "as":
			tn := d.Arg.GetTypeName()
			if tn == nil {
				return nil, unsupported("CREATE SEQUENCE AS without a type")
			}
			switch lastName(tn.Names) {
			case "int2", "smallint":
				typeOID = 21
			case "int4", "integer", "int":
				typeOID = 23
			case "int8", "bigint":
				typeOID = 20
			default:
				return nil, &pgwire.Error{Code: "22023", Message: "sequence type must be smallint, integer, or bigint"}
			}
		case "owned_by":
			var err error
			if owner, err = seqOwner(d); err != nil {
				return nil, err
			}
		case "cache":
		default:
			return nil, unsupported("CREATE SEQUENCE option %s", strings.ToUpper(d.Defname))
		}
	}
	typeMax := map[int64]int64{21: 32767, 23: 2147483647, 20: 9223372036854775807}[typeOID]
	if !maxSet {
		maxv = typeMax
		if inc < 0 {
			maxv = -1
		}
	}
	if inc < 0 && !minSet {
		minv = -typeMax - 1
	}
	if !startSet {
		start = minv
		if inc < 0 {
			start = maxv
		}
	}
	ownerTable, ownerColumn := "NULL", "NULL"
	if owner != nil {
		ownerTable, ownerColumn = quoteLit(owner[0]), quoteLit(owner[1])
	}
	verb := "INSERT"
	if s.IfNotExists {
		verb = "INSERT OR IGNORE"
	}
	tr.SQL = fmt.Sprintf("%s INTO _tandem_sequences (name, type_oid, start_value, increment, min_value, max_value, cycle, last_value, is_called, owner_table, owner_column) VALUES (%s, %d, %d, %d, %d, %d, %d, %d, 0, %s, %s)",
		verb, quoteLit(name), typeOID, start, inc, minv, maxv, cycle, start, ownerTable, ownerColumn)
	return tr, nil
}

// seqOptionInt is a sequence option's integer argument.
func seqOptionInt(d *pg_query.DefElem) int64 {
	if c := d.Arg.GetInteger(); c != nil {
		return int64(c.Ival)
	}
	if c := d.Arg.GetFloat(); c != nil {
		var v int64
		fmt.Sscan(c.Fval, &v)
		return v
	}
	return 0
}

// seqOwner reads OWNED BY [schema.]table.column as (table, column); nil
// for OWNED BY NONE.
func seqOwner(d *pg_query.DefElem) ([]string, error) {
	names := strs(d.Arg.GetList().GetItems())
	if len(names) == 1 && strings.EqualFold(names[0], "none") {
		return nil, nil
	}
	if len(names) < 2 || len(names) > 3 || (len(names) == 3 && !strings.EqualFold(names[0], "public")) {
		return nil, &pgwire.Error{Code: "42P16", Message: "invalid OWNED BY option", Hint: "Specify OWNED BY table.column or OWNED BY NONE."}
	}
	return names[len(names)-2:], nil
}

// alterSequence: ALTER SEQUENCE s RESTART [WITH n] | INCREMENT BY n |
// MINVALUE n | MAXVALUE n | START WITH n | [NO] CYCLE becomes an UPDATE of
// the sequence's row (the caller checks the sequence exists).
func (t *translator) alterSequence(s *pg_query.AlterSeqStmt, tr *Translation) (*Translation, error) {
	name, err := t.tableName(s.Sequence)
	if err != nil {
		return nil, err
	}
	var sets []string
	for _, o := range s.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		num := ""
		if c := d.Arg.GetInteger(); c != nil {
			num = fmt.Sprint(c.Ival)
		} else if c := d.Arg.GetFloat(); c != nil {
			var v int64
			if _, err := fmt.Sscan(c.Fval, &v); err != nil {
				return nil, unsupported("ALTER SEQUENCE %s %s", strings.ToUpper(d.Defname), c.Fval)
			}
			num = fmt.Sprint(v)
		}
		switch {
		case d.Defname == "restart":
			if num == "" {
				num = "start_value"
			}
			sets = append(sets, "last_value = coalesce(_tandem_seq_reset(name), "+num+")", "is_called = 0", "generation = generation + 1")
		case d.Defname == "increment" && num != "":
			sets = append(sets, "increment = "+num)
		case d.Defname == "start" && num != "":
			sets = append(sets, "start_value = "+num)
		case d.Defname == "minvalue" && num != "":
			sets = append(sets, "min_value = "+num)
		case d.Defname == "maxvalue" && num != "":
			sets = append(sets, "max_value = "+num)
		case d.Defname == "cycle":
			c := d.Arg.GetBoolean()
			sets = append(sets, fmt.Sprintf("cycle = %d", map[bool]int{true: 1, false: 0}[c != nil && c.Boolval]))
		case d.Defname == "owned_by":
			owner, err := seqOwner(d)
			if err != nil {
				return nil, err
			}
			if owner == nil {
				sets = append(sets, "owner_table = NULL", "owner_column = NULL")
			} else {
				sets = append(sets, "owner_table = "+quoteLit(owner[0]), "owner_column = "+quoteLit(owner[1]))
			}
		case (d.Defname == "minvalue" || d.Defname == "maxvalue") && d.Arg == nil:
			// NO MINVALUE / NO MAXVALUE: the sequence type's bounds.
			bound := map[string]string{"minvalue": "min_value = CASE WHEN increment > 0 THEN 1 ELSE -(CASE type_oid WHEN 21 THEN 32767 WHEN 23 THEN 2147483647 ELSE 9223372036854775807 END) - 1 END",
				"maxvalue": "max_value = CASE WHEN increment > 0 THEN CASE type_oid WHEN 21 THEN 32767 WHEN 23 THEN 2147483647 ELSE 9223372036854775807 END ELSE -1 END"}
			sets = append(sets, bound[d.Defname])
		case d.Defname == "cache":
		default:
			return nil, unsupported("ALTER SEQUENCE option %s", strings.ToUpper(d.Defname))
		}
	}
	tr.Kind, tr.Tag = "ALTER", "ALTER SEQUENCE"
	if len(sets) == 0 {
		tr.Noop = true
		return tr, nil
	}
	// stride = 0: the row's image is not a draw's (writeset.SequenceTable).
	sets = append(sets, "stride = 0")
	tr.SQL = fmt.Sprintf("UPDATE _tandem_sequences SET %s WHERE name = %s", strings.Join(sets, ", "), quoteLit(name))
	if !s.MissingOk {
		t.seqNames = append(t.seqNames, name)
	}
	return tr, nil
}

// sequenceFuncs rewrites nextval, currval and setval calls anywhere in
// the tree into the connection's functions (registerSequenceFunctions),
// before the bottom-up rewrite would turn a 's'::regclass argument into
// an OID. Literal names are kept for the check at Parse.
func (t *translator) sequenceFuncs(n *pg_query.Node) {
	if t.noSeqCalls {
		return
	}
	visit(n.ProtoReflect(), func(m *pg_query.Node) {
		f := m.GetFuncCall()
		if f == nil {
			return
		}
		names := strs(f.Funcname)
		if len(names) == 2 && !strings.EqualFold(names[0], "pg_catalog") {
			return
		}
		name := lastName(f.Funcname)
		want := map[string][2]int{"nextval": {1, 1}, "currval": {1, 1}, "setval": {2, 3}}
		n, ok := want[name]
		if !ok {
			return
		}
		if len(f.Args) < n[0] || len(f.Args) > n[1] || f.AggStar || f.Over != nil {
			t.fail(&pgwire.Error{Code: "42883", Message: fmt.Sprintf("function %s with %d arguments does not exist", name, len(f.Args))})
			return
		}
		if tc := f.Args[0].GetTypeCast(); tc != nil {
			if tn := lastName(tc.TypeName.Names); tn == "regclass" || tn == "text" || tn == "varchar" {
				f.Args[0] = tc.Arg
			}
		}
		if sv := f.Args[0].GetAConst().GetSval(); sv != nil {
			t.seqNames = append(t.seqNames, SeqRelName(sv.Sval))
		}
		if name == "setval" && len(f.Args) == 2 {
			f.Args = append(f.Args, boolConst(true))
		}
		t.writes = t.writes || name != "currval"
		f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("_tandem_" + name)}
	})
}

// seqRow is what a draw reads of a sequence's row.
type seqRow struct {
	last, inc, min, max, gen int64
	called, cycle            bool
}

const seqRowSQL = `SELECT last_value, increment, min_value, max_value, generation, is_called, cycle FROM _tandem_sequences WHERE name = ?`

// nextSeqValue is the value a draw hands out after base (called: base was
// handed out; otherwise base is the first value), and whether it wrapped
// around (a cycle). With stride k > 1 and an increment of 1 the value is
// the next one that is offset modulo k (multi-master interleaving).
func nextSeqValue(name string, r seqRow, base int64, called bool, k, offset int64) (v int64, wrapped bool, err error) {
	exhausted := func() (int64, bool, error) {
		if r.inc > 0 {
			return 0, false, fmt.Errorf("[SQLSTATE 2200H] nextval: reached maximum value of sequence %q (%d)", name, r.max)
		}
		return 0, false, fmt.Errorf("[SQLSTATE 2200H] nextval: reached minimum value of sequence %q (%d)", name, r.min)
	}
	if k > 1 && r.inc == 1 {
		// roundUp: the smallest value >= x that is offset modulo k.
		roundUp := func(x int64) (int64, bool) {
			d := ((offset-x%k)%k + k) % k
			if x > math.MaxInt64-d {
				return 0, false
			}
			return x + d, true
		}
		x, ok := base, true
		if called {
			x, ok = base+1, base < math.MaxInt64
		}
		if ok {
			x, ok = roundUp(x)
		}
		if ok && x <= r.max {
			return x, false, nil
		}
		if !r.cycle {
			return exhausted()
		}
		if x, ok = roundUp(r.min); !ok || x > r.max {
			return exhausted()
		}
		return x, true, nil
	}
	if !called {
		return base, false, nil
	}
	if r.inc > 0 && base <= r.max-r.inc || r.inc < 0 && base >= r.min-r.inc {
		return base + r.inc, false, nil
	}
	if !r.cycle {
		return exhausted()
	}
	if r.inc > 0 {
		return r.min, true, nil
	}
	return r.max, true, nil
}

// SeqRelName is the sequence a regclass text names, as PostgreSQL reads
// it: an unquoted name folds to lower case, a quoted one is kept, the
// schema public is dropped.
func SeqRelName(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(strings.ToLower(s), "public.") {
		s = s[len("public."):]
	} else if strings.HasPrefix(s, `"public".`) {
		s = s[len(`"public".`):]
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

// registerSequenceFunctions registers nextval, currval and setval as SQL
// functions of the connection c (_tandem_nextval ...). Each runs one
// statement on _tandem_sequences on c itself, inside the statement that
// calls it and so in its transaction: a sequence can be drawn from
// wherever PostgreSQL allows it (a column's DEFAULT, which is how serial
// and identity columns number rows, INSERT ... SELECT, several calls in
// one select list), and the row change is captured and replicated like
// any other. A rolled-back draw undoes the row's change, but the node
// does not hand the value out again (seqHighWater).
// currval and lastval answer from the session's own state (Sequences,
// which the back end binds to the connection before each statement), as
// PostgreSQL's do: another session's nextval does not change them.
func registerSequenceFunctions(c *sqlite3.SQLiteConn) error {
	hwm := highWater{db: databaseFile(c)}
	// first reads the first row of q, n columns (ok false: no row).
	first := func(n int, q string, args ...driver.Value) ([]driver.Value, bool, error) {
		rows, err := c.Query(q, args)
		if err != nil {
			return nil, false, err
		}
		defer rows.Close()
		v := make([]driver.Value, n)
		if err := rows.Next(v); err != nil {
			if err == io.EOF {
				return nil, false, nil
			}
			return nil, false, err
		}
		return v, true, nil
	}
	one := func(q string, args ...driver.Value) (any, bool, error) {
		v, ok, err := first(1, q, args...)
		if !ok {
			return nil, ok, err
		}
		return v[0], true, nil
	}
	readSeq := func(name string) (seqRow, bool, error) {
		v, ok, err := first(7, seqRowSQL, name)
		if !ok {
			return seqRow{}, ok, err
		}
		ints := make([]int64, len(v))
		for i := range v {
			ints[i], _ = v[i].(int64)
		}
		return seqRow{last: ints[0], inc: ints[1], min: ints[2], max: ints[3], gen: ints[4], called: ints[5] != 0, cycle: ints[6] != 0}, true, nil
	}
	missing := func(name string) error {
		return fmt.Errorf("[SQLSTATE 42P01] relation %q does not exist", name)
	}
	fns := []struct {
		name string
		fn   any
	}{
		{"_tandem_nextval", func(rel any) (any, error) {
			if rel == nil {
				return nil, nil
			}
			name := SeqRelName(fmt.Sprint(toText(rel)))
			r, ok, err := readSeq(name)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, missing(name)
			}
			base, called := r.last, r.called
			if h, ok := hwm.last(name); ok && h.gen == r.gen && (!called || r.inc > 0 && h.v > base || r.inc < 0 && h.v < base) {
				// Handed out by a transaction that rolled back.
				base, called = h.v, true
			}
			k, offset := hwm.stride()
			v, wrapped, err := nextSeqValue(name, r, base, called, k, offset)
			if err != nil {
				return nil, err
			}
			if wrapped {
				r.gen++
			}
			stride := int64(0)
			if k > 1 && r.inc == 1 {
				stride = k
			}
			if _, _, err := one(`UPDATE _tandem_sequences SET last_value = ?, is_called = 1, generation = ?, stride = ? WHERE name = ? RETURNING 1`, v, r.gen, stride, name); err != nil {
				return nil, err
			}
			hwm.set(name, r.gen, v)
			if q := sessionSequences(c); q != nil {
				q.set(name, v, true)
			}
			return v, nil
		}},
		{"_tandem_seq_reset", func(rel any) any {
			// ALTER SEQUENCE ... RESTART, TRUNCATE ... RESTART IDENTITY:
			// the next value is the restart's, whatever was handed out.
			if rel != nil {
				hwm.forget(fmt.Sprint(toText(rel)))
			}
			return nil
		}},
		{"lastval", func() (any, error) {
			q := sessionSequences(c)
			if q == nil {
				return nil, fmt.Errorf("[SQLSTATE 55000] lastval is not yet defined in this session")
			}
			q.mu.Lock()
			name := q.lastName
			q.mu.Unlock()
			if name == "" {
				return nil, fmt.Errorf("[SQLSTATE 55000] lastval is not yet defined in this session")
			}
			if _, ok, err := one(`SELECT 1 FROM _tandem_sequences WHERE name = ?`, name); err != nil || !ok {
				// Dropped since: PostgreSQL's message.
				return nil, fmt.Errorf("[SQLSTATE 55000] lastval is not yet defined in this session")
			}
			v, _ := q.get(name)
			return v, nil
		}},
		{"_tandem_currval", func(rel any) (any, error) {
			if rel == nil {
				return nil, nil
			}
			name := SeqRelName(fmt.Sprint(toText(rel)))
			if q := sessionSequences(c); q != nil {
				// The session's own: what nextval last returned in it.
				if _, ok, err := one(`SELECT 1 FROM _tandem_sequences WHERE name = ?`, name); err != nil || !ok {
					if err == nil {
						err = missing(name)
					}
					return nil, err
				}
				if v, ok := q.get(name); ok {
					return v, nil
				}
				return nil, fmt.Errorf("[SQLSTATE 55000] currval of sequence %q is not yet defined in this session", name)
			}
			// No session (a test, the apply of a writeset): the sequence's
			// last value.
			v, ok, err := one(`SELECT CASE WHEN is_called THEN last_value ELSE _tandem_seq_not_called(name) END FROM _tandem_sequences WHERE name = ?`, name)
			if err == nil && !ok {
				err = missing(name)
			}
			return v, err
		}},
		{"_tandem_setval", func(rel, val, called any) (any, error) {
			if rel == nil || val == nil || called == nil {
				return nil, nil
			}
			name := SeqRelName(fmt.Sprint(toText(rel)))
			n, ok := val.(int64)
			if !ok {
				f, isF := val.(float64)
				if !isF || f != float64(int64(f)) {
					return nil, fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type bigint: %q", fmt.Sprint(val))
				}
				n = int64(f)
			}
			isCalled := 0
			if b, err := toBool(called); err == nil && b == true {
				isCalled = 1
			}
			lim, ok, err := one(`SELECT min_value || ' ' || max_value FROM _tandem_sequences WHERE name = ?`, name)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, missing(name)
			}
			var lo, hi int64
			fmt.Sscan(fmt.Sprint(toText(lim)), &lo, &hi)
			if n < lo || n > hi {
				return nil, fmt.Errorf("[SQLSTATE 22003] setval: value %d is out of bounds for sequence %q (%d..%d)", n, name, lo, hi)
			}
			// A new generation: the apply of a draw made before it does
			// not move the sequence off where setval put it.
			v, _, err := one(`UPDATE _tandem_sequences SET last_value = ?, is_called = ?, generation = generation + 1, stride = 0 WHERE name = ? RETURNING last_value`, n, int64(isCalled), name)
			if err == nil {
				hwm.forget(name) // the sequence starts where setval puts it
			}
			if q := sessionSequences(c); err == nil && isCalled == 1 && q != nil {
				q.set(name, n, false) // as PostgreSQL: currval, not lastval
			}
			return v, err
		}},
	}
	for _, f := range fns {
		if err := c.RegisterFunc(f.name, nullsAsNil(f.fn), false); err != nil {
			return fmt.Errorf("sqlpg: register %s: %w", f.name, err)
		}
	}
	return nil
}

// Sequences are not transactional in PostgreSQL: a value nextval handed
// out is never handed out again, even when its transaction rolls back.
// Here the sequence's row is written by the transaction that draws from
// it, so a rollback undoes the draw; the node remembers, per database
// file and sequence, the last value it handed out, and the next draw
// starts past it (an id seen inside a rolled-back transaction does not
// come back for another row). The memory is the node's: after a restart
// or a failover the next value follows the committed row, which may give
// again a value only a rolled-back transaction saw. setval, and a
// restart (ALTER SEQUENCE ... RESTART leaves the row not called), start
// over from the row: each bumps the row's generation, and a value handed
// out in an earlier generation no longer counts. In multi-master the
// node's stride (SetSequenceStride) interleaves the nodes' draws, and a
// draw records it in the row's stride column (writeset.SequenceTable says
// what that changes for conflicts and the apply).
var seqHighWater = struct {
	mu     sync.Mutex
	m      map[string]drawn    // database file + "\x00" + sequence: last value handed out
	stride map[string][2]int64 // database file: multi-master stride and offset
}{m: map[string]drawn{}, stride: map[string][2]int64{}}

// drawn is a value handed out, with the sequence's generation then (a
// setval or RESTART since, here or on another node, makes it moot).
type drawn struct{ gen, v int64 }

type highWater struct{ db string }

// SetSequenceStride makes the draws on the database of c, from sequences
// that count up by 1, hand out only values that are offset modulo stride
// (multi-master: node i of a cluster of stride nodes draws i+1, i+1+stride,
// ...; writeset.SequenceTable). stride <= 1: every value.
func SetSequenceStride(c *sqlite3.SQLiteConn, stride, offset int) {
	db := databaseFile(c)
	seqHighWater.mu.Lock()
	defer seqHighWater.mu.Unlock()
	if stride <= 1 {
		delete(seqHighWater.stride, db)
		return
	}
	seqHighWater.stride[db] = [2]int64{int64(stride), int64(((offset % stride) + stride) % stride)}
}

func (h highWater) stride() (k, offset int64) {
	seqHighWater.mu.Lock()
	defer seqHighWater.mu.Unlock()
	s := seqHighWater.stride[h.db]
	return s[0], s[1]
}

// SequenceTriggersDDL makes a writing connection forget what it handed
// out from a sequence that is created or dropped (a table dropped and
// created again gets a new serial sequence of the same name, which
// starts at its start value). Temporary triggers: the connection's own,
// nothing in the database file needs tandem's functions.
const SequenceTriggersDDL = `CREATE TEMP TRIGGER IF NOT EXISTS _tandem_seq_created AFTER INSERT ON main._tandem_sequences
BEGIN SELECT _tandem_seq_reset(NEW.name); END;
CREATE TEMP TRIGGER IF NOT EXISTS _tandem_seq_dropped AFTER DELETE ON main._tandem_sequences
BEGIN SELECT _tandem_seq_reset(OLD.name); END`

// last is the last value the node handed out from the sequence.
func (h highWater) last(name string) (drawn, bool) {
	seqHighWater.mu.Lock()
	defer seqHighWater.mu.Unlock()
	d, ok := seqHighWater.m[h.db+"\x00"+name]
	return d, ok
}

func (h highWater) set(name string, gen, v int64) {
	seqHighWater.mu.Lock()
	seqHighWater.m[h.db+"\x00"+name] = drawn{gen, v}
	seqHighWater.mu.Unlock()
}

func (h highWater) forget(name string) {
	seqHighWater.mu.Lock()
	delete(seqHighWater.m, h.db+"\x00"+name)
	seqHighWater.mu.Unlock()
}

// databaseFile is the connection's main database file ("" in memory).
func databaseFile(c *sqlite3.SQLiteConn) string {
	rows, err := c.Query(`SELECT file FROM pragma_database_list WHERE name = 'main'`, nil)
	if err != nil {
		return ""
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if rows.Next(v) != nil {
		return ""
	}
	return fmt.Sprint(toText(v[0]))
}
