package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/sqlpg"
	"github.com/tandemdb/tandem/writeset"
)

// Writeset capture for the replicated designs (the approach of seed 003):
// triggers on every replicated table record the primary keys a transaction
// touched in _tandem_capture; at COMMIT the keys are read back, each row's
// after-image is read by primary key (a row that no longer exists is a
// delete), and the capture rows are removed in the same transaction. The
// applied GSN is recorded in _tandem_meta in the same transaction too, so
// after any crash the node knows exactly which writesets it holds.

// Replicator sees every read-write transaction at COMMIT. Declared here,
// where it is used; the node's replication agent implements it.
type Replicator interface {
	// Writable returns nil when this node may commit writes, else an
	// error the client sees (e.g. a standby).
	Writable() error
	// Prepare runs on the writer inside the transaction, before the back
	// end commits: it assigns the writeset its GSN and epoch and logs it.
	// after is called once the back end committed (ok) or failed, and
	// blocks until the configured safeness level is met.
	Prepare(ctx context.Context, ws *writeset.Writeset) (after func(ctx context.Context, ok bool) error, err error)
}

// Certifier is the Replicator of the multi-master design: a transaction's
// writes are not committed where they ran. At COMMIT its writeset is
// captured and the transaction rolled back; Certify has the certifier
// decide, and on a commit returns once the node applied the writeset from
// the certified log (in GSN order, as every node does). snapshot is the
// GSN the transaction's snapshot reflected; tables, for a transaction that
// ran DDL, the tables that existed before or after it (whole-table
// conflict keys).
type Certifier interface {
	Certify(ctx context.Context, ws *writeset.Writeset, snapshot uint64, tables []string) error
}

const metaDDL = `CREATE TABLE IF NOT EXISTS _tandem_meta (id INTEGER PRIMARY KEY CHECK (id = 1), applied_gsn INTEGER NOT NULL, epoch INTEGER NOT NULL);
INSERT OR IGNORE INTO _tandem_meta VALUES (1, 0, 0);
CREATE TABLE IF NOT EXISTS _tandem_capture (tbl TEXT NOT NULL, pk TEXT NOT NULL);`

// EnableReplication creates tandem's tables, installs capture triggers on
// every user table (refusing tables without a primary key) and routes
// every commit through r.
func (db *DB) EnableReplication(r Replicator) error {
	c := <-db.writer
	defer func() { db.writer <- c }()
	if err := c.exec(metaDDL); err != nil {
		return fmt.Errorf("sqlite: create tandem tables: %w", err)
	}
	if err := refreshCapture(c); err != nil {
		return err
	}
	db.repl = r
	return nil
}

// SetSequenceStride makes this node's draws from sequences that count up
// by 1 hand out only values that are offset modulo stride (multi-master:
// nodes never draw the same value, and a draw conflicts with nothing;
// writeset.SequenceTable). stride <= 1: every value, as PostgreSQL.
func (db *DB) SetSequenceStride(stride, offset int) {
	c := <-db.writer
	defer func() { db.writer <- c }()
	sqlpg.SetSequenceStride(c.c, stride, offset)
}

// AppliedGSN and epoch recorded in the database.
func (db *DB) AppliedGSN() (gsn, epoch uint64, err error) {
	c := <-db.writer
	defer func() { db.writer <- c }()
	if err := c.exec(metaDDL); err != nil {
		return 0, 0, fmt.Errorf("sqlite: create tandem tables: %w", err)
	}
	return readMeta(c)
}

func readMeta(c *conn) (uint64, uint64, error) {
	rows, err := c.c.Query("SELECT applied_gsn, epoch FROM _tandem_meta WHERE id = 1", nil)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 2)
	if err := rows.Next(v); err != nil {
		return 0, 0, fmt.Errorf("sqlite: read _tandem_meta: %w", err)
	}
	return uint64(v[0].(int64)), uint64(v[1].(int64)), nil
}

func userTables(c *conn) ([]string, error) {
	rows, err := c.c.Query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND (name NOT LIKE '_tandem_%' OR name = '_tandem_sequences') ORDER BY name", nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	v := make([]driver.Value, 1)
	for rows.Next(v) == nil {
		out = append(out, v[0].(string))
	}
	return out, nil
}

// primaryKey returns the table's primary-key columns in key order.
func primaryKey(c *conn, table string) ([]string, error) {
	rows, err := c.c.Query("SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", []driver.Value{table})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	v := make([]driver.Value, 2)
	for rows.Next(v) == nil {
		cols = append(cols, v[0].(string))
	}
	return cols, nil
}

// rowidKey identifies rows of a table without a primary key: SQLite's
// implicit rowid, which the after-image carries as a column of its own so
// the standby stores the row under the same rowid (docs/sql.md).
const rowidKey = "rowid"

// keyColumns are the columns that identify a table's rows in writesets:
// the primary key, or the rowid for a table that has none.
func keyColumns(c *conn, table string) ([]string, error) {
	pk, err := primaryKey(c, table)
	if err != nil || len(pk) > 0 {
		return pk, err
	}
	return []string{rowidKey}, nil
}

func installCapture(c *conn, table string) error {
	pk, err := keyColumns(c, table)
	if err != nil {
		return err
	}
	if pk[0] == rowidKey {
		var exists int
		rows, err := c.c.Query("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name = ?", []driver.Value{"_tandem_" + table + "_ins"})
		if err == nil {
			v := make([]driver.Value, 1)
			if rows.Next(v) == nil {
				exists = int(v[0].(int64))
			}
			rows.Close()
		}
		if exists == 0 {
			slog.Warn("table has no primary key: rows replicate by SQLite's rowid, which costs a full after-image per change and fails for WITHOUT ROWID tables; add a PRIMARY KEY", "table", table)
		}
	}
	q := quoteIdent(table)
	lit := "'" + strings.ReplaceAll(table, "'", "''") + "'"
	key := func(prefix string) string {
		parts := make([]string, len(pk))
		for i, col := range pk {
			if col == rowidKey {
				parts[i] = prefix + ".rowid"
				continue
			}
			parts[i] = prefix + "." + quoteIdent(col)
		}
		return "json_array(" + strings.Join(parts, ", ") + ")"
	}
	name := func(suffix string) string { return quoteIdent("_tandem_" + table + "_" + suffix) }
	stmts := []string{
		fmt.Sprintf("CREATE TRIGGER IF NOT EXISTS %s AFTER INSERT ON %s BEGIN INSERT INTO _tandem_capture VALUES (%s, %s); END", name("ins"), q, lit, key("NEW")),
		fmt.Sprintf("CREATE TRIGGER IF NOT EXISTS %s AFTER UPDATE ON %s BEGIN INSERT INTO _tandem_capture SELECT %s, %s WHERE %s IS NOT %s; INSERT INTO _tandem_capture VALUES (%s, %s); END",
			name("upd"), q, lit, key("OLD"), key("OLD"), key("NEW"), lit, key("NEW")),
		fmt.Sprintf("CREATE TRIGGER IF NOT EXISTS %s AFTER DELETE ON %s BEGIN INSERT INTO _tandem_capture VALUES (%s, %s); END", name("del"), q, lit, key("OLD")),
	}
	for _, s := range stmts {
		if err := c.exec(s); err != nil {
			return fmt.Errorf("sqlite: install capture triggers on %s: %w", table, err)
		}
	}
	return nil
}

// refreshCapture installs capture triggers on every user table that lacks
// them and drops those a rename left behind: SQLite moves a table's
// triggers with it, and they would go on recording the old name.
func refreshCapture(c *conn) error {
	rows, err := c.c.Query(`SELECT name, tbl_name FROM sqlite_schema WHERE type = 'trigger'
		AND name LIKE '\_tandem\_%' ESCAPE '\' AND sql LIKE '%INTO _tandem_capture%'`, nil)
	if err != nil {
		return fmt.Errorf("sqlite: list capture triggers: %w", err)
	}
	var stale []string
	v := make([]driver.Value, 2)
	for rows.Next(v) == nil {
		name, tbl := asString(v[0]), asString(v[1])
		if name != "_tandem_"+tbl+"_ins" && name != "_tandem_"+tbl+"_upd" && name != "_tandem_"+tbl+"_del" {
			stale = append(stale, name)
		}
	}
	rows.Close()
	for _, name := range stale {
		if err := c.exec("DROP TRIGGER " + quoteIdent(name)); err != nil {
			return fmt.Errorf("sqlite: drop stale capture trigger %s: %w", name, err)
		}
	}
	tables, err := userTables(c)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := installCapture(c, t); err != nil {
			return err
		}
	}
	return nil
}

// capture reads and clears the transaction's captured keys and builds the
// writeset rows from the after-images.
func (db *DB) capture(c *conn) ([]writeset.Row, error) {
	sel, err := c.prepare("SELECT tbl, pk FROM _tandem_capture ORDER BY rowid")
	if err != nil {
		return nil, mapError(err)
	}
	rows, err := sel.QueryContext(context.Background(), nil)
	if err != nil {
		return nil, mapError(err)
	}
	type key struct{ tbl, pk string }
	var order []key
	seen := map[key]bool{}
	v := make([]driver.Value, 2)
	for rows.Next(v) == nil {
		k := key{v[0].(string), asString(v[1])}
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	rows.Close()
	if len(order) == 0 {
		return nil, nil
	}
	out := make([]writeset.Row, 0, len(order))
	for _, k := range order {
		pkCols, err := db.pkOf(c, k.tbl)
		if err != nil {
			return nil, err
		}
		var raw []any
		if err := json.Unmarshal([]byte(k.pk), &raw); err != nil || len(raw) != len(pkCols) {
			return nil, fmt.Errorf("sqlite: bad captured key %q of %s: %v", k.pk, k.tbl, err)
		}
		keyVals := make([]writeset.Value, len(raw))
		args := make([]driver.NamedValue, len(raw))
		where := make([]string, len(raw))
		for i, x := range raw {
			if f, isNum := x.(float64); isNum && f == float64(int64(f)) {
				x = int64(f)
			}
			val, err := writeset.FromAny(x)
			if err != nil {
				return nil, err
			}
			keyVals[i] = val
			args[i] = driver.NamedValue{Ordinal: i + 1, Value: x}
			where[i] = quoteIdent(pkCols[i]) + " = ?"
		}
		sel, err := db.imageOf(c, k.tbl)
		if err != nil {
			return nil, err
		}
		image := "SELECT " + sel + " FROM "
		if len(pkCols) == 1 && pkCols[0] == rowidKey {
			image = "SELECT rowid AS rowid, " + sel + " FROM "
			where[0] = "rowid = ?"
		}
		st, err := c.prepare(image + quoteIdent(k.tbl) + " WHERE " + strings.Join(where, " AND "))
		if err != nil {
			return nil, mapError(err)
		}
		r, err := st.QueryContext(context.Background(), args)
		if err != nil {
			return nil, mapError(err)
		}
		cols := r.Columns()
		vals := make([]driver.Value, len(cols))
		row := writeset.Row{Table: k.tbl, Key: keyVals, KeyCols: pkCols}
		if r.Next(vals) == nil {
			row.Op = writeset.OpUpdate
			row.Cols = append([]string(nil), cols...)
			row.After = make([]writeset.Value, len(vals))
			for i, x := range vals {
				if row.After[i], err = writeset.FromAny(x); err != nil {
					r.Close()
					return nil, fmt.Errorf("sqlite: %s.%s: %w", k.tbl, cols[i], err)
				}
			}
		} else {
			row.Op = writeset.OpDelete
		}
		r.Close()
		out = append(out, row)
	}
	if err := c.execCached("DELETE FROM _tandem_capture"); err != nil {
		return nil, mapError(err)
	}
	return out, nil
}

// execCached runs a statement through the connection's prepared-statement
// cache (the commit path runs these on every write transaction).
func (c *conn) execCached(sql string, args ...driver.Value) error {
	st, err := c.prepare(sql)
	if err != nil {
		return err
	}
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	_, err = st.ExecContext(context.Background(), nv)
	return err
}

// pkOf returns a table's primary key from the cache (cleared by DDL).
func (db *DB) pkOf(c *conn, table string) ([]string, error) {
	if v, ok := db.pks.Load(table); ok {
		return v.([]string), nil
	}
	pk, err := keyColumns(c, table)
	if err != nil {
		return nil, err
	}
	db.pks.Store(table, pk)
	return pk, nil
}

// imageOf is the select list of a row's after-image: "*", or, for a
// table with generated columns, every other column. A standby computes
// its generated columns itself; the apply's INSERT naming one fails
// ("cannot INSERT into generated column"), and the standby stopped.
func (db *DB) imageOf(c *conn, table string) (string, error) {
	if v, ok := db.images.Load(table); ok {
		return v.(string), nil
	}
	rows, err := c.c.Query(`SELECT name, hidden FROM pragma_table_xinfo(?)`, []driver.Value{table})
	if err != nil {
		return "", mapError(err)
	}
	var cols []string
	generated := false
	v := make([]driver.Value, 2)
	for rows.Next(v) == nil {
		if h, _ := v[1].(int64); h == 2 || h == 3 {
			generated = true
			continue
		}
		cols = append(cols, quoteIdent(asString(v[0])))
	}
	rows.Close()
	sel := "*"
	if generated {
		sel = strings.Join(cols, ", ")
	}
	db.images.Store(table, sel)
	return sel, nil
}

func asString(v driver.Value) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

// Apply applies a writeset (rows by primary key, or a DDL statement) and
// records its GSN in the same transaction: exactly once, in order.
func (db *DB) Apply(ctx context.Context, ws *writeset.Writeset) error {
	return db.ApplyBatch(ctx, []*writeset.Writeset{ws})
}

// ApplyBatch applies consecutive writesets in one transaction (group apply
// on a standby), recording the last GSN with them: all or none, exactly
// once, in order. Writesets already applied are skipped.
func (db *DB) ApplyBatch(ctx context.Context, batch []*writeset.Writeset) error {
	return db.ApplyBatchWithin(ctx, batch, db.opts.BusyTimeout)
}

// ApplyBatchWithin is ApplyBatch waiting at most wait for the write lock
// (then an error wrapping ErrWriteLockBusy); once it has the lock, the
// apply runs to its end.
func (db *DB) ApplyBatchWithin(ctx context.Context, batch []*writeset.Writeset, wait time.Duration) error {
	if len(batch) == 0 {
		return nil
	}
	c, err := db.acquireWithin(ctx, true, wait)
	if err != nil {
		return err
	}
	defer db.release(c)
	if err := c.exec("BEGIN IMMEDIATE"); err != nil {
		return mapError(err)
	}
	var cur *writeset.Writeset
	fail := func(err error) error {
		_ = c.exec("ROLLBACK")
		if cur != nil {
			return fmt.Errorf("apply GSN %d: %w", cur.GSN, err)
		}
		return fmt.Errorf("apply: %w", err)
	}
	// refused: the writeset's own statement failed; unless SQLite was
	// only busy, applying it again fails the same way (an ApplyError).
	refused := func(stmt string, err error) error {
		err = mapError(err)
		var pe *pgwire.Error
		if errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == pgwire.CodeQueryCanceled) {
			return fail(err)
		}
		_ = c.exec("ROLLBACK")
		return &writeset.ApplyError{GSN: cur.GSN, Statement: stmt, Err: err}
	}
	applied, err := db.appliedCached(c)
	if err != nil {
		return fail(err)
	}
	var last *writeset.Writeset
	ddl := false
	for _, ws := range batch {
		cur = ws
		if ws.GSN <= applied {
			continue // already applied (replay after a crash)
		}
		if ws.GSN != applied+1 {
			return fail(fmt.Errorf("gap: database is at GSN %d", applied))
		}
		if ws.IsDDL() {
			ddl = true
			db.pks.Clear()
			db.images.Clear()
			if stmt, err := c.execScript(ws.DDL); err != nil {
				return refused(stmt, err)
			}
			if err := refreshCapture(c); err != nil {
				return fail(err)
			}
		}
		if hasDataRows(ws) {
			stmts, err := writeset.Statements(writeset.SQLite, ws)
			if err != nil {
				return refused("", err)
			}
			if ws.IsDDL() {
				stmts = stmts[1:] // the DDL ran above
			}
			for _, s := range stmts {
				st, err := c.prepare(s.SQL)
				if err != nil {
					return refused(s.SQL, err)
				}
				args := make([]driver.NamedValue, len(s.Args))
				for i, a := range s.Args {
					args[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
				}
				if _, err := st.ExecContext(ctx, args); err != nil {
					return refused(s.SQL, err)
				}
			}
		}
		applied, last = ws.GSN, ws
	}
	if last == nil {
		_ = c.exec("ROLLBACK")
		return nil
	}
	if err := c.execCached("DELETE FROM _tandem_capture"); err != nil {
		return fail(err)
	}
	if err := c.execCached("UPDATE _tandem_meta SET applied_gsn = ?, epoch = ? WHERE id = 1", int64(last.GSN), int64(last.Epoch)); err != nil {
		return fail(err)
	}
	if err := c.exec("COMMIT"); err != nil {
		return fail(mapError(err))
	}
	if ddl {
		// Translations and column lists cached before the DDL would
		// describe the old schema (a standby's reads, a peer's
		// certified DDL).
		sqlpg.SchemaChanged()
	}
	return nil
}

// Snapshot writes a consistent copy of the database to path (VACUUM INTO
// runs in one read transaction of its own) and returns the GSN the copy
// holds, read from the copy itself.
func (db *DB) Snapshot(ctx context.Context, path string) (uint64, error) {
	c, err := db.acquire(ctx, false)
	if err != nil {
		return 0, err
	}
	_ = os.Remove(path)
	// An empty file is a valid VACUUM INTO target: created first, the copy
	// is owner-only like the database.
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	}
	// query_only also forbids writing the copy; lift it on this connection
	// for the snapshot only.
	_ = c.exec("PRAGMA query_only = OFF")
	_, err = c.c.Exec("VACUUM INTO ?", []driver.Value{path})
	_ = c.exec("PRAGMA query_only = ON")
	db.release(c)
	if err != nil {
		return 0, fmt.Errorf("sqlite: snapshot: %w", err)
	}
	drv := &sqlite3.SQLiteDriver{}
	dc, err := drv.Open(fileURI(path) + "?mode=ro")
	if err != nil {
		return 0, fmt.Errorf("sqlite: open snapshot: %w", err)
	}
	defer dc.Close()
	gsn, _, err := readMeta(&conn{c: dc.(*sqlite3.SQLiteConn)})
	return gsn, err
}

// SnapshotBytes is Snapshot into memory (re-seeding a standby).
func (db *DB) SnapshotBytes(ctx context.Context) ([]byte, uint64, error) {
	path := db.opts.Path + ".snapshot"
	defer os.Remove(path)
	gsn, err := db.Snapshot(ctx, path)
	if err != nil {
		return nil, 0, err
	}
	data, err := os.ReadFile(path)
	return data, gsn, err
}

// ErrBadSnapshot: snapshot bytes that are not a tandem SQLite database.
var ErrBadSnapshot = errors.New("sqlite: snapshot is not a valid tandem database")

// Restore replaces the database with a snapshot's bytes, after checking
// that they are a sound SQLite database carrying tandem's metadata: a
// damaged or forged snapshot is refused and the current database kept.
func (db *DB) Restore(ctx context.Context, data []byte) error {
	tmp := db.opts.Path + ".seed"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := CheckSnapshot(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	return db.Replace(tmp)
}

// CheckSnapshot opens a snapshot file read-only and checks its integrity
// and tandem's metadata table.
func CheckSnapshot(path string) error {
	drv := &sqlite3.SQLiteDriver{}
	dc, err := drv.Open(fileURI(path) + "?mode=ro&immutable=1")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	defer dc.Close()
	c := &conn{c: dc.(*sqlite3.SQLiteConn), stmts: map[string]*sqlite3.SQLiteStmt{}}
	defer func() {
		for _, st := range c.stmts {
			st.Close()
		}
	}()
	st, err := c.prepare("PRAGMA quick_check")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	rows, err := st.QueryContext(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	v := make([]driver.Value, 1)
	err = rows.Next(v)
	rows.Close()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if s, _ := v[0].(string); s != "ok" {
		return fmt.Errorf("%w: quick_check: %v", ErrBadSnapshot, v[0])
	}
	if _, _, err := readMeta(c); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	return nil
}

func (db *DB) appliedCached(c *conn) (uint64, error) {
	st, err := c.prepare("SELECT applied_gsn FROM _tandem_meta WHERE id = 1")
	if err != nil {
		return 0, err
	}
	rows, err := st.QueryContext(context.Background(), nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return 0, fmt.Errorf("sqlite: read _tandem_meta: %w", err)
	}
	return uint64(v[0].(int64)), nil
}

func hasDataRows(ws *writeset.Writeset) bool {
	for i := range ws.Rows {
		if ws.Rows[i].Op != writeset.OpDDL {
			return true
		}
	}
	return false
}
