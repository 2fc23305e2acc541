package sqlpg

import (
	"fmt"
	"strings"

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
	startSet, minSet := false, false
	for _, o := range s.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		val := func() int64 {
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
		switch d.Defname {
		case "start":
			start, startSet = val(), true
		case "increment":
			inc = val()
		case "minvalue":
			minv, minSet = val(), true
		case "maxvalue":
			maxv = val()
		case "cycle":
			if b := d.Arg.GetBoolean(); b != nil && b.Boolval {
				cycle = 1
			}
		case "cache", "as", "owned_by":
		default:
			return nil, unsupported("CREATE SEQUENCE option %s", strings.ToUpper(d.Defname))
		}
	}
	if inc < 0 && !minSet {
		minv = -9223372036854775808
	}
	if !startSet {
		start = minv
		if inc < 0 {
			start = maxv
		}
	}
	verb := "INSERT"
	if s.IfNotExists {
		verb = "INSERT OR IGNORE"
	}
	tr.SQL = fmt.Sprintf("%s INTO _tandem_sequences (name, start_value, increment, min_value, max_value, cycle, last_value, is_called) VALUES (%s, %d, %d, %d, %d, %d, %d, 0)",
		verb, quoteLit(name), start, inc, minv, maxv, cycle, start)
	return tr, nil
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
			sets = append(sets, "last_value = "+num, "is_called = 0")
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
	tr.SQL = fmt.Sprintf("UPDATE _tandem_sequences SET %s WHERE name = %s", strings.Join(sets, ", "), quoteLit(name))
	if !s.MissingOk {
		tr.SeqName = name
	}
	return tr, nil
}

// sequenceCall translates SELECT nextval('s') / currval / setval standing
// alone; ok is false for any other statement.
func (t *translator) sequenceCall(s *pg_query.SelectStmt, tr *Translation) (bool, error) {
	if len(s.TargetList) != 1 || len(s.FromClause) > 0 || s.WhereClause != nil || s.Op != pg_query.SetOperation_SETOP_NONE {
		return false, nil
	}
	rt := s.TargetList[0].GetResTarget()
	f := rt.GetVal().GetFuncCall()
	if f == nil {
		return false, nil
	}
	name := lastName(f.Funcname)
	if name != "nextval" && name != "currval" && name != "setval" {
		return false, nil
	}
	if len(f.Args) == 0 {
		return true, unsupported("%s without a sequence name", name)
	}
	arg := f.Args[0]
	if tc := arg.GetTypeCast(); tc != nil {
		arg = tc.Arg
	}
	seq := arg.GetAConst().GetSval()
	if seq == nil {
		return true, unsupported("%s with a computed sequence name", name)
	}
	seqName := strings.TrimPrefix(strings.Trim(seq.Sval, `"`), "public.")
	col := rt.Name
	if col == "" {
		col = name
	}
	tr.Kind, tr.Tag = "SELECT", "SELECT"
	tr.Cols = []ColType{ct(20)}
	switch name {
	case "nextval":
		tr.SQL = fmt.Sprintf(`UPDATE _tandem_sequences SET last_value = CASE WHEN NOT is_called THEN last_value
			WHEN last_value + increment > max_value OR last_value + increment < min_value THEN
				CASE WHEN cycle THEN CASE WHEN increment > 0 THEN min_value ELSE max_value END ELSE _tandem_seq_exhausted(name, CASE WHEN increment > 0 THEN max_value ELSE min_value END, increment > 0) END
			ELSE last_value + increment END, is_called = 1 WHERE name = %s RETURNING last_value AS %s`, quoteLit(seqName), quoteIdent(col))
	case "currval":
		tr.SQL = fmt.Sprintf(`SELECT CASE WHEN is_called THEN last_value ELSE _tandem_seq_not_called(name) END AS %s FROM _tandem_sequences WHERE name = %s`, quoteIdent(col), quoteLit(seqName))
	case "setval":
		if len(f.Args) < 2 {
			return true, unsupported("setval without a value")
		}
		v, err := deparseExpr(f.Args[1])
		if err != nil {
			return true, err
		}
		called := "1"
		if len(f.Args) == 3 {
			c, err := deparseExpr(f.Args[2])
			if err != nil {
				return true, err
			}
			called = c
		}
		tr.SQL = fmt.Sprintf(`UPDATE _tandem_sequences SET last_value = %s, is_called = %s WHERE name = %s RETURNING last_value AS %s`, v, called, quoteLit(seqName), quoteIdent(col))
	}
	tr.SeqName = seqName
	return true, nil
}
