package profiler

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/writeset"
)

// The writeset-apply phase needs the writesets of the workload's update
// transactions. Seed 003 §4.1.1 captures them with triggers on every table;
// so does this file, in a separate, unmeasured run (the triggers would
// inflate wc): an AFTER ROW trigger records TG_OP with the old and new row as
// JSON in an unlogged table, tagged with the transaction id. Rows of a
// transaction that rolls back vanish with it, so only committed writesets
// are captured. Writesets are ordered by their last captured row, which
// respects the order of any two transactions that wrote the same row (the
// second could only write it after the first committed).
//
// To measure applying real changes (not re-writing rows that already hold
// the after-image), the captured history is first undone, unmeasured, by
// applying inverse writesets in reverse order (before-images), and then
// applied forward, measured. Both use writeset.Statements, the SQL a tandem
// node applies: an idempotent upsert of the after-image, or a delete, by
// primary key, one transaction per writeset.

const (
	captureTable   = "tandem_profile_capture"
	captureFunc    = "tandem_profile_capture_fn"
	captureTrigger = "tandem_profile_capture"
)

// column is one table column and its type.
type column struct {
	name     string
	typname  string
	category string // pg_type.typcategory
}

// tableMeta is what capture needs to know about a workload table.
type tableMeta struct {
	name    string // as the workload names it
	relname string // pg_class.relname (what TG_TABLE_NAME reports)
	cols    []column
	keyCols []string
}

func (t *tableMeta) colNames() []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		out[i] = c.name
	}
	return out
}

// loadTableMeta reads the columns and primary keys of tables.
func loadTableMeta(ctx context.Context, conn *pgx.Conn, tables []string) ([]*tableMeta, error) {
	var out []*tableMeta
	for _, t := range tables {
		m := &tableMeta{name: t}
		var relname *string
		if err := conn.QueryRow(ctx, `SELECT relname::text FROM pg_class WHERE oid = to_regclass($1)`, t).Scan(&relname); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("look up table %s: %w", t, err)
		}
		if relname == nil {
			return nil, fmt.Errorf("table %s does not exist (is the workload loaded?)", t)
		}
		m.relname = *relname
		rows, err := conn.Query(ctx, `SELECT a.attname::text, ty.typname::text, ty.typcategory::text
FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid
WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, t)
		if err != nil {
			return nil, fmt.Errorf("read columns of %s: %w", t, err)
		}
		for rows.Next() {
			var c column
			if err := rows.Scan(&c.name, &c.typname, &c.category); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read columns of %s: %w", t, err)
			}
			if c.category == "A" || c.category == "C" {
				rows.Close()
				return nil, fmt.Errorf("table %s column %s: type %s (array or composite) is not supported by writeset capture", t, c.name, c.typname)
			}
			m.cols = append(m.cols, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read columns of %s: %w", t, err)
		}
		rows, err = conn.Query(ctx, `SELECT a.attname::text
FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY k.ord`, t)
		if err != nil {
			return nil, fmt.Errorf("read primary key of %s: %w", t, err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read primary key of %s: %w", t, err)
			}
			m.keyCols = append(m.keyCols, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read primary key of %s: %w", t, err)
		}
		if len(m.keyCols) == 0 {
			return nil, fmt.Errorf("table %s has no primary key: writesets address rows by primary key", t)
		}
		out = append(out, m)
	}
	return out, nil
}

// installCapture creates the capture table, function and triggers.
func installCapture(ctx context.Context, conn *pgx.Conn, tables []*tableMeta) error {
	var schema string
	if err := conn.QueryRow(ctx, `SELECT quote_ident(current_schema())`).Scan(&schema); err != nil {
		return fmt.Errorf("capture: current schema: %w", err)
	}
	stmts := []string{
		fmt.Sprintf(`CREATE UNLOGGED TABLE %s.%s (seq bigserial PRIMARY KEY, xid bigint NOT NULL, tbl text NOT NULL, op char(1) NOT NULL, old_row jsonb, new_row jsonb)`, schema, captureTable),
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION %s.%s() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO %s.%s (xid, tbl, op, old_row, new_row) VALUES (txid_current(), TG_TABLE_NAME, left(TG_OP, 1),
    CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END, CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END);
  RETURN NULL;
END $f$`, schema, captureFunc, schema, captureTable),
	}
	for _, t := range tables {
		stmts = append(stmts, fmt.Sprintf(`CREATE TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE PROCEDURE %s.%s()`,
			captureTrigger, t.name, schema, captureFunc))
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("capture: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("capture: install triggers (the --dsn user needs CREATE and trigger rights): %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("capture: install triggers: %w", err)
	}
	return nil
}

// removeTriggers drops the capture triggers (keeping the captured rows).
func removeTriggers(ctx context.Context, conn *pgx.Conn, tables []string) error {
	var errs []error
	for _, t := range tables {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, captureTrigger, t)); err != nil && !strings.Contains(err.Error(), "does not exist") {
			errs = append(errs, fmt.Errorf("drop capture trigger on %s: %w", t, err))
		}
	}
	return errors.Join(errs...)
}

// removeCapture drops everything installCapture created; safe to call when
// some or all of it is absent (also cleans up after an interrupted run).
func removeCapture(ctx context.Context, conn *pgx.Conn, tables []string) error {
	errs := []error{removeTriggers(ctx, conn, tables)}
	for _, s := range []string{
		`DROP FUNCTION IF EXISTS ` + captureFunc + `() CASCADE`,
		`DROP TABLE IF EXISTS ` + captureTable,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("capture cleanup %q: %w", s, err))
		}
	}
	return errors.Join(errs...)
}

// capturedRow is one row of the capture table.
type capturedRow struct {
	xid      int64
	tbl, op  string
	old, new []byte
}

// readCapture loads the captured rows and builds the forward writesets (in
// commit order) and the undo writesets (inverse, in reverse order).
func readCapture(ctx context.Context, conn *pgx.Conn, tables []*tableMeta) (forward, undo []*writeset.Writeset, err error) {
	rows, err := conn.Query(ctx, `SELECT xid, tbl, op, old_row::text, new_row::text FROM `+captureTable+` ORDER BY seq`)
	if err != nil {
		return nil, nil, fmt.Errorf("read captured writesets: %w", err)
	}
	var caps []capturedRow
	for rows.Next() {
		var c capturedRow
		var old, nw *string
		if err := rows.Scan(&c.xid, &c.tbl, &c.op, &old, &nw); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read captured writesets: %w", err)
		}
		if old != nil {
			c.old = []byte(*old)
		}
		if nw != nil {
			c.new = []byte(*nw)
		}
		caps = append(caps, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read captured writesets: %w", err)
	}
	return buildWritesets(caps, tables)
}

// buildWritesets groups captured rows by transaction, orders transactions by
// their last row, and returns forward and undo writesets.
func buildWritesets(caps []capturedRow, tables []*tableMeta) (forward, undo []*writeset.Writeset, err error) {
	byRel := map[string]*tableMeta{}
	for _, t := range tables {
		byRel[t.relname] = t
	}
	type txRows struct {
		last int
		fwd  []writeset.Row
		inv  []writeset.Row
	}
	byXid := map[int64]*txRows{}
	var order []*txRows
	for i, c := range caps {
		t := byRel[c.tbl]
		if t == nil {
			return nil, nil, fmt.Errorf("captured row %d: unknown table %q", i, c.tbl)
		}
		fwd, inv, err := rowChange(t, c)
		if err != nil {
			return nil, nil, fmt.Errorf("captured row %d (%s on %s): %w", i, c.op, c.tbl, err)
		}
		tx := byXid[c.xid]
		if tx == nil {
			tx = &txRows{}
			byXid[c.xid] = tx
			order = append(order, tx)
		}
		tx.last = i
		tx.fwd = append(tx.fwd, fwd)
		tx.inv = append(tx.inv, inv)
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].last < order[b].last })
	for i, tx := range order {
		ws := &writeset.Writeset{GSN: uint64(i + 1), Origin: "tandem-plan-profile", Rows: tx.fwd}
		if err := ws.Validate(); err != nil {
			return nil, nil, fmt.Errorf("captured writeset %d: %w", i+1, err)
		}
		forward = append(forward, ws)
	}
	for i := len(order) - 1; i >= 0; i-- {
		inv := slices.Clone(order[i].inv)
		slices.Reverse(inv)
		ws := &writeset.Writeset{GSN: uint64(len(order) - i), Origin: "tandem-plan-profile-undo", Rows: inv}
		if err := ws.Validate(); err != nil {
			return nil, nil, fmt.Errorf("undo of captured writeset %d: %w", i+1, err)
		}
		undo = append(undo, ws)
	}
	return forward, undo, nil
}

// rowChange turns one captured row into its forward row and its inverse.
func rowChange(t *tableMeta, c capturedRow) (fwd, inv writeset.Row, err error) {
	image := func(js []byte, what string) ([]writeset.Value, []writeset.Value, error) {
		if js == nil {
			return nil, nil, fmt.Errorf("no %s image", what)
		}
		vals, err := decodeImage(t, js)
		if err != nil {
			return nil, nil, fmt.Errorf("%s image: %w", what, err)
		}
		key := make([]writeset.Value, len(t.keyCols))
		for i, k := range t.keyCols {
			key[i] = vals[slices.IndexFunc(t.cols, func(c column) bool { return c.name == k })]
		}
		return vals, key, nil
	}
	cols := t.colNames()
	base := writeset.Row{Table: t.name, KeyCols: t.keyCols}
	fwd, inv = base, base
	switch c.op {
	case "I":
		after, key, err := image(c.new, "new")
		if err != nil {
			return fwd, inv, err
		}
		fwd.Op, fwd.Key, fwd.Cols, fwd.After = writeset.OpInsert, key, cols, after
		inv.Op, inv.Key = writeset.OpDelete, key
	case "U":
		before, oldKey, err := image(c.old, "old")
		if err != nil {
			return fwd, inv, err
		}
		after, newKey, err := image(c.new, "new")
		if err != nil {
			return fwd, inv, err
		}
		fwd.Op, fwd.Key, fwd.Cols, fwd.After = writeset.OpUpdate, oldKey, cols, after
		inv.Op, inv.Key, inv.Cols, inv.After = writeset.OpUpdate, newKey, cols, before
	case "D":
		before, key, err := image(c.old, "old")
		if err != nil {
			return fwd, inv, err
		}
		fwd.Op, fwd.Key = writeset.OpDelete, key
		inv.Op, inv.Key, inv.Cols, inv.After = writeset.OpInsert, key, cols, before
	default:
		return fwd, inv, fmt.Errorf("unknown operation %q", c.op)
	}
	return fwd, inv, nil
}

// decodeImage converts a row captured as JSON (to_jsonb) into values in
// column order, typed by the column's catalog type.
func decodeImage(t *tableMeta, js []byte) ([]writeset.Value, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, fmt.Errorf("decode JSON row: %w", err)
	}
	out := make([]writeset.Value, len(t.cols))
	for i, c := range t.cols {
		raw, ok := m[c.name]
		if !ok {
			return nil, fmt.Errorf("column %s missing from the captured row", c.name)
		}
		v, err := jsonValue(c, raw)
		if err != nil {
			return nil, fmt.Errorf("column %s (%s): %w", c.name, c.typname, err)
		}
		out[i] = v
	}
	return out, nil
}

// jsonValue converts one to_jsonb field to a writeset value.
func jsonValue(c column, raw json.RawMessage) (writeset.Value, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return writeset.Null(), nil
	}
	// Decode the scalar by hand: a json.Decoder per value costs more than
	// the rest of the capture.
	var x any
	switch {
	case len(raw) == 0:
		return writeset.Value{}, fmt.Errorf("empty JSON value")
	case raw[0] == '"':
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return writeset.Value{}, err
		}
		x = str
	case bytes.Equal(raw, []byte("true")), bytes.Equal(raw, []byte("false")):
		x = raw[0] == 't'
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		x = json.Number(raw)
	case raw[0] == '{' || raw[0] == '[':
		if c.typname != "json" && c.typname != "jsonb" {
			return writeset.Value{}, fmt.Errorf("unsupported JSON value %s", raw)
		}
	default:
		return writeset.Value{}, fmt.Errorf("invalid JSON value %s", raw)
	}
	switch c.typname {
	case "json", "jsonb":
		return writeset.Text(string(raw)), nil
	case "int2", "int4", "int8", "oid":
		n, ok := x.(json.Number)
		if !ok {
			return writeset.Value{}, fmt.Errorf("want a JSON number, got %s", raw)
		}
		i, err := n.Int64()
		if err != nil {
			return writeset.Value{}, err
		}
		return writeset.Int(i), nil
	case "float4", "float8":
		switch v := x.(type) {
		case json.Number:
			f, err := v.Float64()
			if err != nil {
				return writeset.Value{}, err
			}
			return writeset.Float(f), nil
		case string: // "NaN", "Infinity"
			return writeset.Text(v), nil
		}
		return writeset.Value{}, fmt.Errorf("want a JSON number, got %s", raw)
	case "bool":
		b, ok := x.(bool)
		if !ok {
			return writeset.Value{}, fmt.Errorf("want a JSON boolean, got %s", raw)
		}
		return writeset.Bool(b), nil
	case "bytea":
		s, ok := x.(string)
		if !ok || !strings.HasPrefix(s, `\x`) {
			return writeset.Value{}, fmt.Errorf("want a \\x hex string, got %s", raw)
		}
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return writeset.Value{}, err
		}
		return writeset.Bytes(b), nil
	}
	switch v := x.(type) {
	case string:
		return writeset.Text(v), nil
	case json.Number:
		return writeset.Text(v.String()), nil // numeric: exact text
	case bool:
		return writeset.Bool(v), nil
	}
	return writeset.Value{}, fmt.Errorf("unsupported JSON value %s", raw)
}

// applyResult is what an apply run did.
type applyResult struct {
	Applied int           // writesets committed
	Rows    int           // rows they changed
	Elapsed time.Duration // first BEGIN to last COMMIT
}

// applyWritesets applies wss in order on conns parallel connections, one
// transaction per writeset (writeset.Statements), as a replica's applier
// would. A writeset starts only after every earlier writeset sharing a
// conflict key (writeset.ConflictKeys) has committed, so the result equals
// serial application. With a non-zero stopAfter no writeset starts after that
// much time: the applied writesets are then a prefix of wss.
func applyWritesets(ctx context.Context, cfg *pgx.ConnConfig, wss []*writeset.Writeset, conns int, stopAfter time.Duration) (applyResult, error) {
	var res applyResult
	if len(wss) == 0 {
		return res, nil
	}
	stmts := make([][]writeset.Stmt, len(wss))
	deps := make([][]int, len(wss))
	last := map[string]int{}
	for i, ws := range wss {
		s, err := writeset.Statements(writeset.Postgres, ws)
		if err != nil {
			return res, fmt.Errorf("writeset %d: %w", ws.GSN, err)
		}
		stmts[i] = s
		for _, k := range writeset.ConflictKeys(ws) {
			if j, ok := last[k]; ok && !slices.Contains(deps[i], j) {
				deps[i] = append(deps[i], j)
			}
			last[k] = i
		}
	}
	done := make([]chan struct{}, len(wss))
	for i := range done {
		done[i] = make(chan struct{})
	}
	conns = max(1, min(conns, len(wss)))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// Connect first, so connection set-up is outside the timed window.
	cs := make([]*pgx.Conn, conns)
	for i := range cs {
		c, err := pgx.ConnectConfig(ctx, cfg.Copy())
		if err != nil {
			for _, c := range cs[:i] {
				c.Close(context.Background())
			}
			return res, fmt.Errorf("apply: connect: %w", err)
		}
		cs[i] = c
	}
	defer func() {
		for _, c := range cs {
			c.Close(context.Background())
		}
	}()

	var next, applied, rowsDone atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, conn := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if stopAfter > 0 && time.Since(start) >= stopAfter {
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(wss) {
					return
				}
				for _, j := range deps[i] {
					select {
					case <-done[j]:
					case <-ctx.Done():
						return
					}
				}
				if err := applyOne(ctx, conn, stmts[i]); err != nil {
					cancel(fmt.Errorf("apply writeset %d (%d rows): %w", wss[i].GSN, len(wss[i].Rows), err))
					return
				}
				applied.Add(1)
				rowsDone.Add(int64(len(wss[i].Rows)))
				close(done[i])
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Applied = int(applied.Load())
	res.Rows = int(rowsDone.Load())
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// applyOne applies one writeset's statements in one transaction, in one
// round trip: BEGIN, the statements and COMMIT pipelined as a batch.
func applyOne(ctx context.Context, conn *pgx.Conn, stmts []writeset.Stmt) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	for _, s := range stmts {
		b.Queue(s.SQL, s.Args...)
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	var err error
	for i := 0; i < b.Len() && err == nil; i++ {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		if err == nil && i == b.Len()-1 && tag.String() != "COMMIT" {
			err = fmt.Errorf("COMMIT answered %s", tag)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if !conn.IsClosed() {
			_, _ = conn.Exec(context.Background(), "ROLLBACK")
		}
		return err
	}
	return nil
}
