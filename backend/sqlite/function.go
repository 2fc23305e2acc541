package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
)

// A session's own functions (sqlpg.TempFunction): CREATE FUNCTION
// pg_temp.name(OUT ...) keeps the parsed body in the session, a query
// over pg_temp.name() runs it as a DO block is run, with the OUT
// parameters as its variables, and answers one row of them; DROP
// FUNCTION forgets it. Like PostgreSQL's pg_temp functions, they live and
// die with the session and no other session sees them; the statements a
// body runs are the session's own (translated, captured and replicated as
// any other).

type dropFunc struct {
	name      string
	missingOk bool
}

// funcFrame holds the OUT parameters of the function a query is running
// and the error a handler caught.
type funcFrame struct {
	outs   map[string]*funcValue // by lower-case name
	caught *pgwire.Error
}

// funcValue is an OUT parameter's value: a row (of a table's row type:
// its columns) or a scalar (one column); row nil is NULL.
type funcValue struct {
	rowType bool
	cols    []pgwire.Column
	row     []any
}

// prepareFunction recognises CREATE FUNCTION pg_temp..., DROP FUNCTION
// pg_temp... and a query over pg_temp.name(); done reports that st is one.
func prepareFunction(st *Statement, sql string) (done bool, err error) {
	switch st.kind {
	case "CREATE":
		fn, ok, err := sqlpg.ParseTempFunction(sql)
		if !ok {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		st.fn = fn
	case "DROP":
		name, missingOk, ok := sqlpg.ParseDropTempFunction(sql)
		if !ok {
			return false, nil
		}
		st.dropFn = &dropFunc{name: name, missingOk: missingOk}
	case "SELECT":
		if !containsFold(sql, "PG_TEMP") {
			return false, nil // every SELECT passes here: no copy of its text
		}
		call, ok, err := sqlpg.ParseFuncCall(sql)
		if !ok {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		// Resolved when parsed, as PostgreSQL resolves it (a Query
		// message's earlier CREATE has run by now).
		if _, err := st.s.function(call.Name); err != nil {
			return true, err
		}
		st.call, st.rows = call, true
	default:
		return false, nil
	}
	return true, nil
}

func (s *Session) executeFunction(ctx context.Context, st *Statement) (pgwire.Result, error) {
	switch {
	case st.fn != nil:
		if old, exists := s.funcs[st.fn.Name]; exists {
			if !st.fn.Replace {
				return nil, &pgwire.Error{Code: "42723", Message: fmt.Sprintf("function %q already exists with same argument types", st.fn.Name)}
			}
			if err := sameOuts(old, st.fn); err != nil {
				return nil, err
			}
		}
		if s.funcs == nil {
			s.funcs = map[string]*sqlpg.TempFunction{}
		}
		s.funcs[st.fn.Name] = st.fn
		return &cmdResult{tag: "CREATE FUNCTION"}, nil
	case st.dropFn != nil:
		if _, exists := s.funcs[st.dropFn.name]; !exists {
			if st.dropFn.missingOk {
				return &cmdResult{tag: "DROP FUNCTION"}, nil
			}
			return nil, &pgwire.Error{Code: "42883", Message: fmt.Sprintf("function pg_temp.%s() does not exist", st.dropFn.name)}
		}
		delete(s.funcs, st.dropFn.name)
		return &cmdResult{tag: "DROP FUNCTION"}, nil
	}
	return s.callFunction(ctx, st.call)
}

// sameOuts: CREATE OR REPLACE keeps a function's result type and its
// OUT parameters' names, as PostgreSQL requires.
func sameOuts(old, fn *sqlpg.TempFunction) error {
	hint := fmt.Sprintf("Use DROP FUNCTION %s() first.", fn.Name)
	if len(old.Outs) != len(fn.Outs) {
		return &pgwire.Error{Code: "42P13", Message: "cannot change return type of existing function", Hint: hint}
	}
	for i, o := range old.Outs {
		if !strings.EqualFold(o.Type, fn.Outs[i].Type) {
			return &pgwire.Error{Code: "42P13", Message: "cannot change return type of existing function", Hint: hint}
		}
	}
	for i, o := range old.Outs {
		if !strings.EqualFold(o.Name, fn.Outs[i].Name) {
			return &pgwire.Error{Code: "42P13", Message: fmt.Sprintf("cannot change name of output parameter %q", o.Name), Hint: hint}
		}
	}
	return nil
}

func (s *Session) function(name string) (*sqlpg.TempFunction, error) {
	fn, ok := s.funcs[name]
	if !ok {
		return nil, &pgwire.Error{Code: "42883", Message: fmt.Sprintf("function pg_temp.%s() does not exist", name),
			Hint: "No function matches the given name and argument types. You might need to add explicit type casts."}
	}
	return fn, nil
}

// outColumns describes an OUT parameter: a table's columns for its row
// type (read as a query over the table describes them), else one column
// of its type.
func (s *Session) outColumns(ctx context.Context, o sqlpg.FuncOut) (cols []pgwire.Column, rowType bool, err error) {
	if elem, ok := strings.CutSuffix(strings.ToLower(o.Type), "[]"); ok {
		if t := sqlpg.TypeByName[elem]; t != nil && t.Array != 0 {
			return []pgwire.Column{{Name: o.Name, OID: t.Array}}, false, nil
		}
	}
	if t := sqlpg.TypeByName[strings.ToLower(o.Type)]; t != nil {
		return []pgwire.Column{{Name: o.Name, OID: t.OID}}, false, nil
	}
	st, err := s.Prepare(ctx, "SELECT * FROM "+quoteIdent(o.Type)+" LIMIT 0")
	if err != nil {
		return nil, false, &pgwire.Error{Code: "42704", Message: fmt.Sprintf("type %q does not exist", o.Type), Err: err}
	}
	cols, err = st.(*Statement).Describe(ctx)
	return cols, true, err
}

// callColumns: the columns a query over the function answers (none while
// the function does not exist: it may be created by the same Query
// message's earlier statement).
func (s *Session) callColumns(ctx context.Context, call *sqlpg.FuncCall) ([]pgwire.Column, error) {
	fn, ok := s.funcs[call.Name]
	if !ok {
		return nil, nil
	}
	cols, _, err := s.callShape(ctx, fn, call, nil)
	return cols, err
}

// callShape maps the query's select list onto the frame's OUT
// parameters: the columns, and with a frame the row.
func (s *Session) callShape(ctx context.Context, fn *sqlpg.TempFunction, call *sqlpg.FuncCall, frame *funcFrame) ([]pgwire.Column, []any, error) {
	var cols []pgwire.Column
	var row []any
	value := func(o sqlpg.FuncOut) (*funcValue, error) {
		if frame != nil {
			return frame.outs[strings.ToLower(o.Name)], nil
		}
		oc, rt, err := s.outColumns(ctx, o)
		return &funcValue{rowType: rt, cols: oc}, err
	}
	add := func(v *funcValue, i int, name string) {
		c := v.cols[i]
		if name != "" {
			c.Name = name
		}
		cols = append(cols, c)
		if v.row != nil {
			row = append(row, v.row[i])
		} else {
			row = append(row, nil)
		}
	}
	for _, t := range call.Targets {
		if t.Out == "*" {
			for _, o := range fn.Outs {
				v, err := value(o)
				if err != nil {
					return nil, nil, err
				}
				if v.rowType {
					return nil, nil, sqlpg.Unsupported("an OUT parameter of a row type as one column (name its fields: (f.%s).*)", o.Name)
				}
				add(v, 0, o.Name)
			}
			continue
		}
		o, ok := fn.Out(t.Out)
		if !ok {
			return nil, nil, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q does not exist", t.Out)}
		}
		v, err := value(o)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case t.Field == "" && v.rowType:
			return nil, nil, sqlpg.Unsupported("an OUT parameter of a row type as one column (name its fields: (f.%s).*)", o.Name)
		case t.Field == "":
			add(v, 0, t.Name)
		case !v.rowType:
			return nil, nil, &pgwire.Error{Code: "42809", Message: fmt.Sprintf("column notation .%s applied to type %s, which is not a composite type", t.Field, o.Type)}
		case t.Field == "*":
			for i := range v.cols {
				add(v, i, "")
			}
		default:
			i := fieldIndex(v.cols, t.Field)
			if i < 0 {
				return nil, nil, &pgwire.Error{Code: "42703", Message: fmt.Sprintf("column %q not found in data type %s", t.Field, o.Type)}
			}
			add(v, i, t.Name)
		}
	}
	return cols, row, nil
}

func fieldIndex(cols []pgwire.Column, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	for i, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// callFunction runs the function's body (in the session's transaction,
// or in one of its own) and answers one row of its OUT parameters.
func (s *Session) callFunction(ctx context.Context, call *sqlpg.FuncCall) (pgwire.Result, error) {
	fn, err := s.function(call.Name)
	if err != nil {
		return nil, err
	}
	if s.frame != nil {
		return nil, sqlpg.Unsupported("calling a function of the session's own from inside one")
	}
	frame := &funcFrame{outs: map[string]*funcValue{}}
	for _, o := range fn.Outs {
		cols, rt, err := s.outColumns(ctx, o)
		if err != nil {
			return nil, err
		}
		frame.outs[strings.ToLower(o.Name)] = &funcValue{rowType: rt, cols: cols}
	}
	err = s.inTransaction(ctx, func() error {
		s.frame = frame
		defer func() { s.frame = nil }()
		return s.runDoBlock(ctx, fn.Body, 0)
	})
	if err != nil {
		return nil, err
	}
	cols, row, err := s.callShape(ctx, fn, call, frame)
	if err != nil {
		return nil, err
	}
	return &bufResult{cols: cols, rows: [][]any{row}, tag: "SELECT 1"}, nil
}

// runInto runs sql and puts its first row into the OUT parameter into
// (PL/pgSQL's INTO: no row leaves it NULL).
func (s *Session) runInto(ctx context.Context, sql, into string) error {
	if s.frame == nil {
		return sqlpg.Unsupported("INTO outside a function")
	}
	v, ok := s.frame.outs[strings.ToLower(into)]
	if !ok {
		return sqlpg.Unsupported("INTO %s (not an OUT parameter)", into)
	}
	st, err := s.Prepare(ctx, sql)
	if err != nil {
		return err
	}
	res, err := s.Execute(ctx, st, nil)
	if err != nil {
		return err
	}
	rows, _, cols, err := drain(res)
	if err != nil {
		return err
	}
	v.row = nil
	if len(rows) == 0 {
		return nil
	}
	if v.rowType {
		if len(cols) != len(v.cols) {
			return &pgwire.Error{Code: "42804", Message: fmt.Sprintf("returned row structure does not match the structure of %s", into)}
		}
		v.row = rows[0]
		return nil
	}
	if len(rows[0]) > 0 {
		v.row = rows[0][:1]
	}
	return nil
}

// getDiagnostics sets OUT parameters from the error the enclosing
// handler caught (GET STACKED DIAGNOSTICS).
func (s *Session) getDiagnostics(items []sqlpg.DoDiag) error {
	if s.frame == nil || s.frame.caught == nil {
		return &pgwire.Error{Code: "0Z002", Message: "GET STACKED DIAGNOSTICS cannot be used outside an exception handler"}
	}
	e := s.frame.caught
	for _, d := range items {
		v, ok := s.frame.outs[strings.ToLower(d.Var)]
		if !ok || v.rowType {
			continue
		}
		var text string
		switch d.Item {
		case "PG_EXCEPTION_DETAIL":
			text = e.Detail
		case "PG_EXCEPTION_HINT":
			text = e.Hint
		case "MESSAGE_TEXT":
			text = e.Message
		case "RETURNED_SQLSTATE":
			text = e.Code
		case "CONSTRAINT_NAME":
			text = e.Constraint
		case "TABLE_NAME":
			text = e.Table
		case "COLUMN_NAME":
			text = e.Column
		case "SCHEMA_NAME":
			text = e.Schema
		}
		v.row = []any{text}
	}
	return nil
}
