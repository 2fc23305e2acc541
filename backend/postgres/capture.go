package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/writeset"
)

// Writeset capture on PostgreSQL, as on SQLite (seed 003's approach): a
// trigger on every replicated table records the primary keys a transaction
// touches in _tandem.capture (tagged with its transaction id); at COMMIT
// tandem reads the after-images by primary key in text form and the
// standby applies them with PostgreSQL's own input casts. Applying sessions
// set tandem.applying so their changes are not captured again.

const setupSQL = `
CREATE SCHEMA IF NOT EXISTS _tandem;
DO $m$
DECLARE r record;
BEGIN
  -- Until 2026-12-07 these objects were in schema public, where psql's \dt,
  -- ORMs' reflection and schema-diff tools (an Alembic autogenerate would
  -- drop them) saw them as the application's: move them to _tandem. A
  -- restored dump of an older node brings them back to public: its
  -- tables win over what _tandem held.
  IF to_regclass('public._tandem_meta') IS NULL THEN RETURN; END IF;
  DROP TABLE IF EXISTS _tandem.meta, _tandem.gsns;
  ALTER TABLE public._tandem_meta SET SCHEMA _tandem;
  ALTER TABLE _tandem._tandem_meta RENAME TO meta;
  IF to_regclass('public._tandem_gsns') IS NOT NULL THEN
    ALTER TABLE public._tandem_gsns SET SCHEMA _tandem;
    ALTER TABLE _tandem._tandem_gsns RENAME TO gsns;
  END IF;
  -- Capture rows live only while their transaction runs; none runs now.
  DROP TABLE IF EXISTS public._tandem_capture, public._tandem_capture_big;
  -- The old functions, and with them the capture triggers that call
  -- them (installAll makes them again, calling _tandem's).
  FOR r IN SELECT format('DROP FUNCTION public.%I(%s) CASCADE', p.proname, pg_get_function_identity_arguments(p.oid)) AS q
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'public' AND p.proname LIKE '\_tandem\_%'
  LOOP
    EXECUTE r.q;
  END LOOP;
END $m$;
CREATE TABLE IF NOT EXISTS _tandem.meta (id int PRIMARY KEY CHECK (id = 1), applied_gsn bigint NOT NULL, epoch bigint NOT NULL);
INSERT INTO _tandem.meta VALUES (1, 0, 0) ON CONFLICT DO NOTHING;
CREATE UNLOGGED TABLE IF NOT EXISTS _tandem.capture (seq bigserial PRIMARY KEY, txid bigint NOT NULL DEFAULT txid_current(), tbl text NOT NULL, pk jsonb NOT NULL, ev text);
CREATE INDEX IF NOT EXISTS capture_txid ON _tandem.capture (txid);
CREATE TABLE IF NOT EXISTS _tandem.gsns (gsn bigint PRIMARY KEY, epoch bigint NOT NULL);
CREATE OR REPLACE FUNCTION _tandem.applied() RETURNS TABLE (gsn bigint, epoch bigint) LANGUAGE sql STABLE AS $f$
  SELECT gsn, epoch FROM (
    SELECT applied_gsn AS gsn, epoch FROM _tandem.meta WHERE id = 1
    UNION ALL
    (SELECT gsn, epoch FROM _tandem.gsns ORDER BY gsn DESC LIMIT 1)
  ) a ORDER BY gsn DESC LIMIT 1
$f$;
CREATE OR REPLACE FUNCTION _tandem.snapshot_gsn() RETURNS bigint LANGUAGE plpgsql STABLE AS $f$
BEGIN
  RETURN (SELECT gsn FROM _tandem.applied());
END $f$;
CREATE OR REPLACE FUNCTION _tandem.expect_gsn(g bigint) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE a bigint;
BEGIN
  PERFORM 1 FROM _tandem.meta WHERE id = 1 FOR UPDATE;
  SELECT gsn INTO a FROM _tandem.applied();
  IF a IS DISTINCT FROM g THEN
    RAISE EXCEPTION 'tandem: the database is at GSN %, the batch follows GSN %', a, g USING ERRCODE = 'TD001';
  END IF;
END $f$;
CREATE OR REPLACE FUNCTION _tandem.ws() RETURNS TABLE (tbl text, pk text, img text) LANGUAGE plpgsql AS $f$
DECLARE x bigint := txid_current_if_assigned();
BEGIN
  IF x IS NULL THEN RETURN; END IF;
  -- Deferred constraints are checked (and deferred constraint triggers
  -- fire, their writes captured) now, before the writeset is logged: a
  -- COMMIT that fails after the log would leave the standby with a
  -- transaction the primary lacks.
  SET CONSTRAINTS ALL IMMEDIATE;
  RETURN QUERY SELECT w.tbl, w.pk, w.img FROM (
      SELECT c.tbl, c.pk::text AS pk, _tandem.img(c.tbl, c.pk) AS img, min(c.seq) AS s
        FROM _tandem.capture c WHERE c.txid = x AND c.ev IS NULL GROUP BY c.tbl, c.pk
      UNION ALL
      SELECT c.tbl, c.pk::text, c.ev, c.seq FROM _tandem.capture c WHERE c.txid = x AND c.ev IS NOT NULL
    ) w ORDER BY w.s;
  DELETE FROM _tandem.capture c WHERE c.txid = x;
END $f$;
CREATE OR REPLACE FUNCTION _tandem.big(a text[], c tid) RETURNS text LANGUAGE sql IMMUTABLE AS $f$
  SELECT jsonb_agg(CASE WHEN octet_length(x) > 4096 THEN to_jsonb(octet_length(x)) ELSE to_jsonb(x) END ORDER BY i)::text || ',' || to_jsonb(c::text)::text
    FROM unnest(a) WITH ORDINALITY AS u(x, i)
$f$;
CREATE UNLOGGED TABLE IF NOT EXISTS _tandem.capture_big (id bigserial PRIMARY KEY, vals text[] NOT NULL);
CREATE OR REPLACE FUNCTION _tandem.big(a text[], c bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $f$
  SELECT jsonb_agg(CASE WHEN octet_length(x) > 4096 THEN to_jsonb(octet_length(x)) ELSE to_jsonb(x) END ORDER BY i)::text || ',' || to_jsonb(c::text)::text
    FROM unnest(a) WITH ORDINALITY AS u(x, i)
$f$;`

// EnableReplication creates tandem's tables, installs capture triggers on
// every table of the public schema (by primary key, or by the whole row for
// a table without one) and routes every commit through r.
func (b *Backend) EnableReplication(ctx context.Context, r Replicator) error {
	c, err := pgconn.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, setupSQL).ReadAll(); err != nil {
		return fmt.Errorf("postgres: create tandem tables: %w", err)
	}
	if err := installAll(ctx, c); err != nil {
		return err
	}
	if err := b.ownAll(ctx, c); err != nil {
		return err
	}
	b.repl = r
	return nil
}

func query(ctx context.Context, c *pgconn.PgConn, sql string, args ...string) ([][]string, error) {
	params := make([][]byte, len(args))
	for i, a := range args {
		params[i] = []byte(a)
	}
	rr := c.ExecParams(ctx, sql, params, nil, nil, nil)
	var out [][]string
	for rr.NextRow() {
		vals := rr.Values()
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = string(v)
		}
		out = append(out, row)
	}
	_, err := rr.Close()
	return out, err
}

// installAll installs capture triggers on tables that lack them and
// regenerates _tandem.img for every replicated table.
func installAll(ctx context.Context, c *pgconn.PgConn) error {
	if err := installTriggers(ctx, c); err != nil {
		return err
	}
	if err := refreshFullRow(ctx, c); err != nil {
		return err
	}
	return installImages(ctx, c)
}

// fullRowMark is in the body of every full-row capture function.
const fullRowMark = "-- tandem: full-row identity"

// refreshFullRow rewrites the capture function of every replicated table
// whose identity is its whole row (its columns may have changed), and of
// every table whose kind of identity changed (a primary key added to a
// table without one, or dropped): the function keeps its name, so the
// trigger stays.
func refreshFullRow(ctx context.Context, c *pgconn.PgConn) error {
	rows, err := query(ctx, c, `SELECT c.relname, p.prosrc LIKE '%' || $1 || '%',
		EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_trigger t ON t.tgrelid = c.oid AND t.tgname = '_tandem_capture'
		JOIN pg_proc p ON p.oid = t.tgfoid
		WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 1`, fullRowMark)
	if err != nil {
		return fmt.Errorf("postgres: list replicated tables: %w", err)
	}
	for _, r := range rows {
		fullRow, hasPK := r[1] == "t", r[2] == "t"
		if !fullRow && hasPK {
			continue
		}
		if err := installCapture(ctx, c, r[0], false); err != nil {
			return err
		}
	}
	return nil
}

// installCapture (re)writes one table's capture function and, when
// trigger is set, creates its trigger.
func installCapture(ctx context.Context, c *pgconn.PgConn, table string, trigger bool) error {
	pk, err := primaryKey(ctx, c, table)
	if err != nil {
		return err
	}
	var fn, body string
	if len(pk) == 0 {
		cols, err := query(ctx, c, `SELECT attname FROM pg_attribute
			WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`, pgQuote(table))
		if err != nil {
			return fmt.Errorf("postgres: columns of %s: %w", table, err)
		}
		names := make([]string, len(cols))
		for i, col := range cols {
			names[i] = col[0]
		}
		fn, body = fullRowCaptureFunction(table, names)
	} else {
		fn, body = captureFunction(table, pk)
	}
	if _, err := c.Exec(ctx, body).ReadAll(); err != nil {
		return fmt.Errorf("postgres: create capture function for %s: %w", table, err)
	}
	if !trigger {
		return nil
	}
	if len(pk) == 0 {
		slog.Warn("a table without a primary key replicates by full-row identity: on a standby each of its updated or deleted rows is found by a scan of the table; add a PRIMARY KEY where you can (docs/operations.md)", "table", table)
	}
	q := fmt.Sprintf("CREATE TRIGGER _tandem_capture AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION _tandem.%s()", pgQuote(table), pgQuote(fn))
	if _, err := c.Exec(ctx, q).ReadAll(); err != nil {
		return fmt.Errorf("postgres: install capture trigger on %s: %w", table, err)
	}
	return nil
}

// installImages (re)creates _tandem.img(table, key), the after-image of one
// row by primary key, for every table that has a capture trigger: one
// plpgsql function of static statements, whose plans PostgreSQL caches per
// session. An image describes itself, [[columns], [key columns], values],
// values being every column's text form (the type's own output, as a text
// result would carry it), or null when the row is gone (a delete). The
// image of a row larger than bigRowBytes has a fourth element, the row's
// ctid, and its values over 4 KiB are their sizes (_tandem.big), read
// afterwards in pieces (large.go). It is regenerated at start-up and by
// every DDL, inside the DDL's transaction.
func installImages(ctx context.Context, c *pgconn.PgConn) error {
	tables, err := query(ctx, c, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'r'
		AND EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = '_tandem_capture') ORDER BY 1`)
	if err != nil {
		return fmt.Errorf("postgres: list replicated tables: %w", err)
	}
	var b strings.Builder
	b.WriteString("CREATE OR REPLACE FUNCTION _tandem.img(tandem_t text, tandem_k jsonb) RETURNS text LANGUAGE plpgsql AS $tandem$\nDECLARE tandem_v text;\nBEGIN\n  IF false THEN NULL;\n")
	for _, tr := range tables {
		table := tr[0]
		cols, err := query(ctx, c, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
			WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, pgQuote(table))
		if err != nil {
			return fmt.Errorf("postgres: columns of %s: %w", table, err)
		}
		pk, err := primaryKey(ctx, c, table)
		if err != nil {
			return err
		}
		if len(pk) == 0 {
			continue // full-row identity: its capture rows carry the image
		}
		b.WriteString(imageBranch(table, cols, pk))
	}
	b.WriteString("  END IF;\n  RAISE EXCEPTION 'tandem: table % has no capture trigger', tandem_t USING ERRCODE = 'TD002';\nEND $tandem$")
	if _, err := c.Exec(ctx, b.String()).ReadAll(); err != nil {
		return fmt.Errorf("postgres: create _tandem.img: %w", err)
	}
	return nil
}

// imageBranch is _tandem.img's branch for one table; cols holds (name,
// type) in column order.
func imageBranch(table string, cols [][]string, pk []string) string {
	types := make(map[string]string, len(cols))
	names := make([]string, len(cols))
	vals := make([]string, len(cols))
	for i, col := range cols {
		names[i], types[col[0]] = col[0], col[1]
		vals[i] = "tandem_r." + pgQuote(col[0]) + "::text"
	}
	where := make([]string, len(pk))
	for i, k := range pk {
		where[i] = fmt.Sprintf("tandem_r.%s = (tandem_k->>%d)::%s", pgQuote(k), i, types[k])
	}
	hdr, _ := json.Marshal([2][]string{names, pk})
	head := string(hdr[:len(hdr)-1]) + "," // [[cols],[key cols],
	arr, from := "ARRAY["+strings.Join(vals, ", ")+"]::text[]", pgQuote(table)+" tandem_r WHERE "+strings.Join(where, " AND ")
	return fmt.Sprintf("  ELSIF tandem_t = %s THEN\n    SELECT to_jsonb(%s)::text INTO tandem_v FROM %s;\n"+
		"    IF octet_length(tandem_v) > %d THEN\n      SELECT _tandem.big(%s, tandem_r.ctid) INTO tandem_v FROM %s;\n    END IF;\n"+
		"    RETURN %s || coalesce(tandem_v, 'null') || ']';\n",
		pgLiteral(table), arr, from, bigRowBytes, arr, from, pgLiteral(head))
}

// installTriggers installs capture triggers on tables that lack them.
func installTriggers(ctx context.Context, c *pgconn.PgConn) error {
	rows, err := query(ctx, c, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname NOT LIKE '\_tandem\_%'
		AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = '_tandem_capture') ORDER BY 1`)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := installCapture(ctx, c, r[0], true); err != nil {
			return err
		}
	}
	return nil
}

// captureFunction returns the name and the CREATE statement of a table's
// own capture function, with its key columns written out: building the
// key with jsonb_build_array(NEW.col) costs a fraction of converting the
// whole row with to_jsonb(NEW) (as the generic function of earlier
// versions did).
func captureFunction(table string, pk []string) (string, string) {
	name := captureName(table)
	oldCols := make([]string, len(pk))
	newCols := make([]string, len(pk))
	for i, c := range pk {
		oldCols[i] = "OLD." + pgQuote(c)
		newCols[i] = "NEW." + pgQuote(c)
	}
	o, n := strings.Join(oldCols, ", "), strings.Join(newCols, ", ")
	body := fmt.Sprintf(`CREATE OR REPLACE FUNCTION _tandem.%s() RETURNS trigger LANGUAGE plpgsql AS $tandem$
BEGIN
  IF current_setting('tandem.applying', true) = 'on' THEN RETURN NULL; END IF;
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO _tandem.capture (tbl, pk) VALUES (TG_TABLE_NAME, jsonb_build_array(%s));
  END IF;
  IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND ROW(%s) IS DISTINCT FROM ROW(%s)) THEN
    INSERT INTO _tandem.capture (tbl, pk) VALUES (TG_TABLE_NAME, jsonb_build_array(%s));
  END IF;
  RETURN NULL;
END $tandem$`, pgQuote(name), o, o, n, n)
	return name, body
}

// captureName is the name of a table's capture function (the same for
// either kind of identity, so a trigger survives a change of kind).
func captureName(table string) string {
	h := fnv.New32a()
	h.Write([]byte(table))
	short := []rune(table)
	if len(short) > 30 {
		short = short[:30]
	}
	return fmt.Sprintf("cap_%08x_%s", h.Sum32(), string(short))
}

// fullRowCaptureFunction is the capture function of a table without a
// primary key: each row change is an event of its own, in order, carrying
// the whole row in text form (an UPDATE is the old row's delete and the new
// row's insert), as PostgreSQL's logical replication does with REPLICA
// IDENTITY FULL. Its capture rows have ev set (the image, in
// _tandem.img's self-describing form with no key columns) and pk "-" or
// "+"; _tandem.ws never merges them. The row may be gone by COMMIT, so the
// image is taken here; a row larger than bigRowBytes with a value over
// bigValueBytes keeps its values in _tandem.capture_big, and its image
// has that row's id as a fourth element and, for each value over
// bigValueBytes, its size in place of its text (_tandem.big), read at
// COMMIT in pieces (large.go), which deletes the side row (so one that
// leaves nothing out would outlive the transaction: none is made).
func fullRowCaptureFunction(table string, cols []string) (string, string) {
	name := captureName(table)
	hdr, _ := json.Marshal([2][]string{cols, {}})
	head := pgLiteral(string(hdr[:len(hdr)-1]) + ",")
	event := func(rec, op string) string {
		vals := make([]string, len(cols))
		for i, c := range cols {
			vals[i] = rec + "." + pgQuote(c) + "::text"
		}
		return fmt.Sprintf(`tandem_a := ARRAY[%s]::text[];
    tandem_r := NULL;
    IF pg_column_size(tandem_a) > %d THEN
      IF EXISTS (SELECT FROM unnest(tandem_a) tandem_x WHERE octet_length(tandem_x) > %d) THEN
        INSERT INTO _tandem.capture_big (vals) VALUES (tandem_a) RETURNING _tandem.capture_big.id INTO tandem_r;
      END IF;
    END IF;
    IF tandem_r IS NULL THEN
      INSERT INTO _tandem.capture (tbl, pk, ev) VALUES (TG_TABLE_NAME, '"%s"', %s || to_jsonb(tandem_a)::text || ']');
    ELSE
      INSERT INTO _tandem.capture (tbl, pk, ev) VALUES (TG_TABLE_NAME, '"%s"', %s || _tandem.big(tandem_a, tandem_r) || ']');
    END IF;`, strings.Join(vals, ", "), bigRowBytes, bigValueBytes, op, head, op, head)
	}
	body := fmt.Sprintf(`CREATE OR REPLACE FUNCTION _tandem.%s() RETURNS trigger LANGUAGE plpgsql AS $tandem$
DECLARE tandem_a text[]; tandem_r bigint;
BEGIN
  %s
  IF current_setting('tandem.applying', true) = 'on' THEN RETURN NULL; END IF;
  IF TG_OP <> 'INSERT' THEN
    %s
  END IF;
  IF TG_OP <> 'DELETE' THEN
    %s
  END IF;
  RETURN NULL;
END $tandem$`, pgQuote(name), fullRowMark, event("OLD", "-"), event("NEW", "+"))
	return name, body
}

func primaryKey(ctx context.Context, c *pgconn.PgConn, table string) ([]string, error) {
	rows, err := query(ctx, c, `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`, pgQuote(table))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r[0]
	}
	return out, nil
}

// replicatedCommit captures the transaction's writeset, assigns its GSN
// and commits, in GSN order; then waits for the safeness level. Two round
// trips: the writeset (_tandem.ws, skipped when an autocommit statement's
// batch already fetched it: pre), then the GSN record plus COMMIT.
func (s *Session) replicatedCommit(ctx context.Context, ddl string, pre *[]capRow) error {
	if s.b.mm != nil {
		// The applier leaves a committing session alone: it rolls back
		// in a moment (multimaster.go).
		s.certifying.Store(true)
		defer s.certifying.Store(false)
	}
	c := s.c
	rollback := func(err error) error {
		_, _ = c.Exec(context.Background(), "ROLLBACK").ReadAll()
		return err
	}
	ws := &writeset.Writeset{DDL: ddl}
	if ddl != "" {
		if err := installAll(ctx, c); err != nil {
			return rollback(err)
		}
		// The rows written after the transaction's last DDL (a block's
		// earlier rows are in its script, txddl.go): applied after it.
		rows, err := s.capture(ctx)
		if err != nil {
			return rollback(err)
		}
		ws.Rows = rows
	} else {
		var rows []capRow
		var err error
		if pre != nil {
			rows = *pre
			*pre = nil
		} else if rows, err = s.captureRows(ctx); err != nil {
			return rollback(err)
		}
		if len(rows) == 0 {
			_, err := c.Exec(ctx, "COMMIT").ReadAll()
			return err
		}
		if err := s.setRows(ctx, ws, rows); err != nil {
			return rollback(err)
		}
	}
	if cr, ok := s.b.repl.(Certifier); ok && s.b.mm != nil {
		return s.certifiedCommit(ctx, cr, ws)
	}
	s.b.commitMu.Lock()
	after, err := s.b.repl.Prepare(ctx, ws)
	if err != nil {
		s.b.commitMu.Unlock()
		return rollback(err)
	}
	// The GSN goes in as a row of its own, not as an update of one hot
	// row: concurrent REPEATABLE READ or SERIALIZABLE transactions must not
	// conflict on tandem's bookkeeping (an update of a row another
	// transaction changed since the snapshot fails with 40001).
	var bt pgconn.Batch
	bt.ExecParams("INSERT INTO _tandem.gsns (gsn, epoch) VALUES ($1, $2)",
		[][]byte{strconv.AppendUint(nil, ws.GSN, 10), strconv.AppendUint(nil, ws.Epoch, 10)}, nil, nil, nil)
	bt.ExecParams("COMMIT", nil, nil, nil, nil)
	// The writeset is logged (and may be on its way to the standby): the
	// commit must not be given up now. A client's cancel or hang-up, or
	// statement_timeout, would otherwise stop it after the standby got
	// the writeset, leaving the primary without a transaction its standby
	// applies. Neither the context nor a CancelRequest reaches it.
	s.cancelMu.Lock()
	s.committing.Store(true)
	s.cancelMu.Unlock()
	_, err = c.ExecBatch(context.WithoutCancel(ctx), &bt).ReadAll()
	s.committing.Store(false)
	s.b.commitMu.Unlock()
	if err != nil {
		_ = after(ctx, false)
		return rollback(err)
	}
	if ws.GSN%compactEvery == 0 {
		go s.b.compactGSNs()
	}
	return after(ctx, true)
}

// compactEvery: every so many commits the primary drops the GSN rows below
// the newest (the newest alone says what the database holds).
const compactEvery = 1024

func (b *Backend) compactGSNs() {
	b.applyMu.Lock()
	defer b.applyMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := b.applyConn(ctx)
	if err != nil {
		return
	}
	if _, err := c.Exec(ctx, "DELETE FROM _tandem.gsns WHERE gsn < (SELECT max(gsn) FROM _tandem.gsns)").ReadAll(); err != nil {
		b.dropApplyConn()
	}
}

// wsQuery reads the transaction's writeset and removes its capture rows:
// one statement, so it can ride in the batch of the statement that wrote.
const wsQuery = "SELECT tbl, pk, img FROM _tandem.ws()"

// capRow is a changed row as _tandem.ws() gave it. The image of a large
// row leaves its large values out (see imageBranch and
// fullRowCaptureFunction): big lists their indexes in After (Null there
// until read), and ctid says where the row is, for readBig: the row's
// ctid in its table, or (side) the id of its values in
// _tandem.capture_big.
type capRow struct {
	writeset.Row
	ctid string
	side bool
	big  []int
	size int // the left-out values' sizes, summed (the server's count)
}

// captureRows reads the transaction's writeset as _tandem.ws() gives it
// (one round trip); large values are still to be read (rowsOf, setRows).
func (s *Session) captureRows(ctx context.Context) ([]capRow, error) {
	return readWS(s.c.ExecParams(ctx, wsQuery, nil, nil, nil, nil))
}

// capture reads the transaction's writeset, large values included.
func (s *Session) capture(ctx context.Context) ([]writeset.Row, error) {
	rows, err := s.captureRows(ctx)
	if err != nil {
		return nil, err
	}
	return s.rowsOf(ctx, rows)
}

// readWS decodes the rows of wsQuery: a changed key in capture order, with
// its after-image (see installImages) or null for a deleted row.
func readWS(rr *pgconn.ResultReader) ([]capRow, error) {
	var out []capRow
	var derr error
	for rr.NextRow() {
		v := rr.Values()
		if derr != nil || len(v) != 3 {
			continue
		}
		var row capRow
		row, derr = decodeImage(string(v[0]), string(v[1]), v[2])
		out = append(out, row)
	}
	if _, err := rr.Close(); err != nil {
		return nil, err
	}
	return out, derr
}

// rawRef is json.RawMessage without the copy: it refers to the input,
// which outlives it here (a large value is decoded once, not copied first).
type rawRef []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawRef) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// decodeImage turns one captured key and its image into a writeset row.
// The key's values come from the after-image's text form where there is
// one (the key as the type prints it), else from the captured JSON. The
// image of a large row has a fourth element, the row's ctid, and each of
// its large values is a number (its size) in place of the text.
func decodeImage(table, pkJSON string, img []byte) (capRow, error) {
	if pkJSON == `"-"` || pkJSON == `"+"` {
		return decodeFullRow(table, pkJSON == `"+"`, img)
	}
	out := capRow{Row: writeset.Row{Table: table, Op: writeset.OpDelete}}
	row := &out.Row
	var parts []rawRef
	if err := json.Unmarshal(img, &parts); err != nil {
		return out, fmt.Errorf("postgres: bad after-image of %s: %v", table, err)
	}
	if len(parts) != 3 && len(parts) != 4 {
		return out, fmt.Errorf("postgres: bad after-image of %s: %d parts", table, len(parts))
	}
	var cols []string
	if err := json.Unmarshal(parts[0], &cols); err != nil {
		return out, fmt.Errorf("postgres: bad after-image columns of %s: %v", table, err)
	}
	if err := json.Unmarshal(parts[1], &row.KeyCols); err != nil {
		return out, fmt.Errorf("postgres: bad after-image key of %s: %v", table, err)
	}
	key, err := keyValues(pkJSON, len(row.KeyCols))
	if err != nil {
		return out, fmt.Errorf("postgres: bad captured key %s of %s: %v", pkJSON, table, err)
	}
	row.Key = key
	var after []writeset.Value
	if len(parts) == 4 {
		after, err = bigValues(&out, parts[2], parts[3])
	} else {
		after, err = textValues(parts[2])
	}
	if err != nil {
		return out, fmt.Errorf("postgres: bad after-image values of %s: %v", table, err)
	}
	if after == nil {
		return out, nil // the row is gone: a delete
	}
	if len(after) != len(cols) {
		return out, fmt.Errorf("postgres: after-image of %s has %d values for %d columns", table, len(after), len(cols))
	}
	row.Op, row.Cols, row.After = writeset.OpUpdate, cols, after
	for ki, kc := range row.KeyCols {
		for j, col := range cols {
			if col == kc && !slices.Contains(out.big, j) {
				row.Key[ki] = row.After[j]
			}
		}
	}
	return out, nil
}

// textValues decodes an image's values: text or null each; nil for a
// row that is gone.
func textValues(raw []byte) ([]writeset.Value, error) {
	var vals []*string
	if err := json.Unmarshal(raw, &vals); err != nil || vals == nil {
		return nil, err
	}
	after := make([]writeset.Value, len(vals))
	for j, v := range vals {
		if v == nil {
			after[j] = writeset.Null()
		} else {
			after[j] = writeset.Text(*v)
		}
	}
	return after, nil
}

// bigValues decodes a large row's values: text, null, or the size of a
// value left out (noted in row.big).
func bigValues(row *capRow, raw, ctid []byte) ([]writeset.Value, error) {
	if err := json.Unmarshal(ctid, &row.ctid); err != nil {
		return nil, fmt.Errorf("ctid: %v", err)
	}
	var vals []rawRef
	if err := json.Unmarshal(raw, &vals); err != nil {
		return nil, err
	}
	after := make([]writeset.Value, len(vals))
	for j, v := range vals {
		switch {
		case string(v) == "null":
			after[j] = writeset.Null()
		case len(v) > 0 && v[0] == '"':
			var t string
			if err := json.Unmarshal(v, &t); err != nil {
				return nil, err
			}
			after[j] = writeset.Text(t)
		default:
			n, err := strconv.Atoi(string(v))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("value %d: %q is neither text nor a size", j, v)
			}
			after[j] = writeset.Null()
			row.big = append(row.big, j)
			row.size += n
		}
	}
	return after, nil
}

// decodeFullRow turns a full-row capture event of a table without a
// primary key into an OpInsertRow or OpDeleteRow. The event of a large
// row has a fourth element, the id of its values in _tandem.capture_big,
// and each of its large values is a number (its size) in place of the
// text.
func decodeFullRow(table string, insert bool, img []byte) (capRow, error) {
	out := capRow{Row: writeset.Row{Table: table, Op: writeset.OpDeleteRow}}
	row := &out.Row
	if insert {
		row.Op = writeset.OpInsertRow
	}
	var parts []rawRef
	if err := json.Unmarshal(img, &parts); err != nil {
		return out, fmt.Errorf("postgres: bad row image of %s: %v", table, err)
	}
	if len(parts) != 3 && len(parts) != 4 {
		return out, fmt.Errorf("postgres: bad row image of %s: %d parts", table, len(parts))
	}
	if err := json.Unmarshal(parts[0], &row.Cols); err != nil {
		return out, fmt.Errorf("postgres: bad row image columns of %s: %v", table, err)
	}
	var err error
	if len(parts) == 4 {
		out.side = true
		row.After, err = bigValues(&out, parts[2], parts[3])
		if err == nil && len(out.big) == 0 {
			err = errors.New("values kept aside, none left out")
		}
	} else {
		row.After, err = textValues(parts[2])
	}
	if err != nil {
		return out, fmt.Errorf("postgres: bad row image values of %s: %v", table, err)
	}
	if len(row.After) != len(row.Cols) {
		return out, fmt.Errorf("postgres: row image of %s has %d values for %d columns", table, len(row.After), len(row.Cols))
	}
	return out, nil
}

// keyValues decodes a captured key (a JSON array, as the capture trigger
// built it) into text values.
func keyValues(pkJSON string, n int) ([]writeset.Value, error) {
	var raw []any
	dec := json.NewDecoder(strings.NewReader(pkJSON))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if len(raw) != n {
		return nil, fmt.Errorf("%d key values for %d key columns", len(raw), n)
	}
	out := make([]writeset.Value, n)
	for i, x := range raw {
		switch v := x.(type) {
		case json.Number:
			out[i] = writeset.Text(v.String())
		case string:
			out[i] = writeset.Text(v)
		case bool:
			out[i] = writeset.Text(strconv.FormatBool(v))
		default:
			b, _ := json.Marshal(v)
			out[i] = writeset.Text(string(b))
		}
	}
	return out, nil
}

// AppliedGSN returns the GSN and epoch recorded in the database.
func (b *Backend) AppliedGSN() (uint64, uint64, error) {
	ctx := context.Background()
	c, err := pgconn.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, setupSQL).ReadAll(); err != nil {
		return 0, 0, fmt.Errorf("postgres: create tandem tables: %w", err)
	}
	rows, err := query(ctx, c, "SELECT gsn, epoch FROM _tandem.applied()")
	if err != nil || len(rows) != 1 {
		return 0, 0, fmt.Errorf("postgres: read the applied GSN: %v", err)
	}
	g, _ := strconv.ParseUint(rows[0][0], 10, 64)
	e, _ := strconv.ParseUint(rows[0][1], 10, 64)
	return g, e, nil
}

// ApplyBatch applies writesets in order, in one transaction and one
// pipelined round trip: the applied-GSN check, every row statement, the new
// applied GSN, COMMIT. A batch that does not follow the recorded GSN (after
// a crash, some of it may already be there) or holds DDL goes one writeset
// at a time through Apply, which skips what is applied and refuses gaps.
func (b *Backend) ApplyBatch(ctx context.Context, batch []*writeset.Writeset) error {
	if len(batch) == 0 {
		return nil
	}
	if b.mm != nil {
		// Multi-master: lock waits end at the applier's lock_timeout; a
		// deadline would cut a large batch short on a busy machine.
		ctx = context.WithoutCancel(ctx)
	}
	slow := false
	for _, ws := range batch {
		slow = slow || ws.IsDDL()
	}
	if !slow {
		// A batch the server refused (a gap after a crash, or a
		// statement that fails) goes again one writeset at a time: what
		// can be applied is, and a failure names its writeset and
		// statement.
		err := b.applyPipelined(ctx, batch)
		var pe *pgconn.PgError
		if err == nil || !errors.As(err, &pe) || lockWait(err) {
			return err // a lock wait given up is retried as it is
		}
	}
	for _, ws := range batch {
		if err := b.Apply(ctx, ws); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) applyPipelined(ctx context.Context, batch []*writeset.Writeset) error {
	if b.mm == nil {
		b.seqs.stale()
	}
	b.applyMu.Lock()
	defer b.applyMu.Unlock()
	c, err := b.applyConn(ctx)
	if err != nil {
		return err
	}
	var fence []string
	if b.mm != nil {
		// Every node writes: its sequences move past the rows others
		// inserted as they arrive, not before each local write; only
		// the sequences of the tables this batch wrote, from a list
		// read once (fenceSQL's catalog join took 2.2 ms a batch).
		if fence, err = b.fenceStatements(ctx, c, batch); err != nil {
			return err
		}
	}
	defer b.watch(c, batch)()
	first, last := batch[0], batch[len(batch)-1]
	var bt pgconn.Batch
	exec := func(sql string, params [][]byte) {
		if name := b.applyPrepared(ctx, c, sql); name != "" {
			bt.ExecPrepared(name, params, nil, nil)
		} else {
			bt.ExecParams(sql, params, nil, nil, nil)
		}
	}
	bt.ExecParams("BEGIN", nil, nil, nil, nil)
	exec("SELECT set_config('tandem.applying', 'on', true)", nil)
	exec("SELECT _tandem.expect_gsn($1)", [][]byte{strconv.AppendUint(nil, first.GSN-1, 10)})
	for _, ws := range batch {
		stmts, err := writeset.Statements(writeset.Postgres, ws)
		if err != nil {
			return fmt.Errorf("apply GSN %d: %w", ws.GSN, err)
		}
		for _, st := range stmts {
			params := make([][]byte, len(st.Args))
			for i, a := range st.Args {
				if a != nil {
					params[i] = []byte(fmt.Sprint(a))
				}
			}
			exec(st.SQL, params)
		}
	}
	exec("UPDATE _tandem.meta SET applied_gsn = $1, epoch = $2 WHERE id = 1",
		[][]byte{strconv.AppendUint(nil, last.GSN, 10), strconv.AppendUint(nil, last.Epoch, 10)})
	for _, q := range fence {
		bt.ExecParams(q, nil, nil, nil, nil)
	}
	bt.ExecParams("COMMIT", nil, nil, nil, nil)
	if _, err := c.ExecBatch(ctx, &bt).ReadAll(); err != nil {
		if _, rerr := c.Exec(context.Background(), "ROLLBACK").ReadAll(); rerr != nil {
			b.dropApplyConn()
		}
		return fmt.Errorf("apply GSN %d-%d: %w", first.GSN, last.GSN, err)
	}
	return nil
}

// Apply applies one writeset with the GSN recorded in the same transaction.
func (b *Backend) Apply(ctx context.Context, ws *writeset.Writeset) error {
	b.seqs.stale()
	b.applyMu.Lock()
	defer b.applyMu.Unlock()
	c, err := b.applyConn(ctx)
	if err != nil {
		return err
	}
	defer b.watch(c, []*writeset.Writeset{ws})()
	fail := func(err error) error {
		_, _ = c.Exec(context.Background(), "ROLLBACK").ReadAll()
		return fmt.Errorf("apply GSN %d: %w", ws.GSN, err)
	}
	// refused: the server answered one of the writeset's statements with
	// an error; applying it again gets the same answer (an ApplyError).
	// A lost connection is not that.
	refused := func(stmt string, err error) error {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code == "40001" || pe.Code == "55P03" || pe.Code == "40P01" || pe.Code == "57014" || strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") {
			return fail(err)
		}
		_, _ = c.Exec(context.Background(), "ROLLBACK").ReadAll()
		return &writeset.ApplyError{GSN: ws.GSN, Statement: stmt, Err: err}
	}
	if _, err := c.Exec(ctx, "BEGIN; SET LOCAL tandem.applying = 'on'").ReadAll(); err != nil {
		b.dropApplyConn()
		return fmt.Errorf("apply GSN %d: %w", ws.GSN, err)
	}
	if _, err := query(ctx, c, "SELECT 1 FROM _tandem.meta WHERE id = 1 FOR UPDATE"); err != nil {
		return fail(fmt.Errorf("lock _tandem.meta: %v", err))
	}
	rows, err := query(ctx, c, "SELECT gsn FROM _tandem.applied()")
	if err != nil || len(rows) != 1 {
		return fail(fmt.Errorf("read the applied GSN: %v", err))
	}
	applied, _ := strconv.ParseUint(rows[0][0], 10, 64)
	if ws.GSN <= applied {
		_, _ = c.Exec(ctx, "ROLLBACK").ReadAll()
		return nil
	}
	if ws.GSN != applied+1 {
		return fail(fmt.Errorf("gap: database is at GSN %d", applied))
	}
	if ws.IsDDL() {
		// The schema changes: the fence's list of sequences is read
		// again before the next batch.
		b.seqs.targets = nil
		super := b.sessionRoles && extensionDDL(ws.DDL)
		if super {
			// CREATE / ALTER / DROP EXTENSION needs the rights the
			// primary's session had (a superuser, or CREATE on the
			// database); the owner role has neither. The statement was
			// authorized on the primary; the applier runs it as the
			// bootstrap superuser it logged in as, then acts as the owner
			// role again (a rollback restores that too).
			if _, err := c.Exec(ctx, "RESET ROLE").ReadAll(); err != nil {
				return fail(err)
			}
		}
		if _, err := c.Exec(ctx, ws.DDL).ReadAll(); err != nil {
			return refused(ws.DDL, err)
		}
		if super {
			if _, err := c.Exec(ctx, "SET ROLE "+OwnerRole).ReadAll(); err != nil {
				return fail(err)
			}
		}
		if err := installAll(ctx, c); err != nil {
			return fail(err)
		}
	}
	{
		stmts, err := writeset.Statements(writeset.Postgres, ws)
		if err != nil {
			return fail(err)
		}
		if ws.IsDDL() {
			stmts = stmts[1:] // the DDL ran above; its rows follow it
		}
		for _, st := range stmts {
			params := make([][]byte, len(st.Args))
			for i, a := range st.Args {
				if a != nil {
					params[i] = []byte(fmt.Sprint(a))
				}
			}
			if _, err := c.ExecParams(ctx, st.SQL, params, nil, nil, nil).Close(); err != nil {
				return refused(st.SQL, err)
			}
		}
	}
	if _, err := query(ctx, c, "UPDATE _tandem.meta SET applied_gsn = $1, epoch = $2 WHERE id = 1", strconv.FormatUint(ws.GSN, 10), strconv.FormatUint(ws.Epoch, 10)); err != nil {
		return fail(err)
	}
	if _, err := c.Exec(ctx, "COMMIT").ReadAll(); err != nil {
		return fail(err)
	}
	if ws.IsDDL() {
		// A prepared statement keeps the parameter types it was
		// prepared with; after a change of column types they could be
		// wrong.
		b.forgetApplyPrepared(ctx, c)
	}
	return nil
}

// applyStmtMax bounds the statements the applier keeps prepared.
const applyStmtMax = 1024

// applyPrepared is the name of sql prepared on the apply connection c,
// preparing it on first use (the statements that apply a writeset's rows
// repeat: one text per table and column list). "" means run it unnamed:
// the cache is full, or the server refused to prepare it (the batch then
// fails on the unnamed statement, which names the error, and the writesets
// go again one at a time). Called with applyMu held, outside a
// transaction on c.
func (b *Backend) applyPrepared(ctx context.Context, c *pgconn.PgConn, sql string) string {
	if b.applyStmtsOn != c {
		b.applyStmts, b.applyStmtsOn = make(map[string]string), c
	}
	if name, ok := b.applyStmts[sql]; ok {
		return name
	}
	if len(b.applyStmts) >= applyStmtMax {
		return ""
	}
	name := "_tandem_apply_" + strconv.Itoa(len(b.applyStmts)+1)
	if _, err := c.Prepare(ctx, name, sql, nil); err != nil {
		return ""
	}
	b.applyStmts[sql] = name
	return name
}

// forgetApplyPrepared deallocates the applier's prepared statements (after
// a schema change).
func (b *Backend) forgetApplyPrepared(ctx context.Context, c *pgconn.PgConn) {
	if b.applyStmtsOn != c || len(b.applyStmts) == 0 {
		return
	}
	b.applyStmts = make(map[string]string)
	if _, err := c.Exec(ctx, "DEALLOCATE ALL").ReadAll(); err != nil {
		b.dropApplyConn()
	}
}

func (b *Backend) applyConn(ctx context.Context) (*pgconn.PgConn, error) {
	if b.apply != nil && !b.apply.IsClosed() {
		return b.apply, nil
	}
	c, err := pgconn.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return nil, err
	}
	if b.sessionRoles {
		// The applier runs what members of the owner role wrote
		// (triggers, functions, DDL): never as a superuser.
		if _, err := c.Exec(ctx, "SET ROLE "+OwnerRole).ReadAll(); err != nil {
			c.Close(context.Background())
			return nil, fmt.Errorf("postgres: applier: %w", err)
		}
	}
	if b.mm != nil {
		// Multi-master: local transactions hold row locks next to the
		// applier; it gives up a wait soon and the agent aborts them
		// (multimaster.go).
		if _, err := c.Exec(ctx, "SET lock_timeout = '"+applyLockTimeout+"'").ReadAll(); err != nil {
			c.Close(context.Background())
			return nil, fmt.Errorf("postgres: applier: %w", err)
		}
	}
	b.apply = c
	return c, nil
}

func (b *Backend) dropApplyConn() {
	if b.apply != nil {
		b.apply.Close(context.Background())
		b.apply = nil
	}
}

// SnapshotBytes dumps the database (pg_dump, custom format) in one exported
// snapshot and returns the GSN that snapshot holds.
func (b *Backend) SnapshotBytes(ctx context.Context) ([]byte, uint64, error) {
	pgDump, err := FindTool(b.BinDir, "pg_dump")
	if err != nil {
		return nil, 0, err
	}
	c, err := pgconn.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ").ReadAll(); err != nil {
		return nil, 0, err
	}
	rows, err := query(ctx, c, "SELECT pg_export_snapshot(), (SELECT gsn FROM _tandem.applied())")
	if err != nil || len(rows) != 1 {
		return nil, 0, fmt.Errorf("export snapshot: %v", err)
	}
	gsn, _ := strconv.ParseUint(rows[0][1], 10, 64)
	cmd := exec.CommandContext(ctx, pgDump, "-Fc", "--no-owner", "--snapshot="+rows[0][0], "-d", b.dsn)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, 0, fmt.Errorf("pg_dump: %w: %s", err, stderr.String())
	}
	return out.Bytes(), gsn, nil
}

// Restore replaces the database's contents with a pg_dump archive.
func (b *Backend) Restore(ctx context.Context, data []byte) error {
	pgRestore, err := FindTool(b.BinDir, "pg_restore")
	if err != nil {
		return err
	}
	b.seqs.stale()
	b.applyMu.Lock()
	defer b.applyMu.Unlock()
	b.seqs.targets = nil // another schema, perhaps
	b.dropApplyConn()
	// The archive's schema _tandem replaces this one: pg_restore --clean
	// drops only what the archive holds, and then the schema, which fails
	// while it holds anything else (the capture function of a table the
	// donor no longer has). Dropped here, the capture triggers go with
	// it; the archive's tables come with theirs, and installAll below
	// gives any other table its own again.
	pre, err := pgconn.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return err
	}
	_, err = pre.Exec(ctx, "DROP SCHEMA IF EXISTS _tandem CASCADE").ReadAll()
	pre.Close(context.Background())
	if err != nil {
		return fmt.Errorf("postgres: before the restore: %w", err)
	}
	cmd := exec.CommandContext(ctx, pgRestore, "--clean", "--if-exists", "--no-owner", "--single-transaction", "-d", b.dsn)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pg_restore: %w: %s", err, stderr.String())
	}
	c, err := pgconn.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	// The donor may run an older tandem: this version's functions
	// (_tandem.snapshot_gsn, ...) are made again, as at start-up.
	if _, err := c.Exec(ctx, setupSQL).ReadAll(); err != nil {
		return fmt.Errorf("postgres: after the restore: create tandem tables: %w", err)
	}
	if err := installAll(ctx, c); err != nil {
		return fmt.Errorf("postgres: after the restore: %w", err)
	}
	if b.sessionRoles {
		// pg_restore --no-owner made postgres the owner of everything.
		return b.ownAll(ctx, c)
	}
	return nil
}

// extensionDDL reports whether a DDL script has a CREATE, ALTER or DROP
// EXTENSION statement.
func extensionDDL(script string) bool {
	for _, st := range pgwire.SplitStatements(script) {
		w := strings.Fields(strings.ToUpper(st))
		if len(w) > 1 && (w[0] == "CREATE" || w[0] == "ALTER" || w[0] == "DROP") && w[1] == "EXTENSION" {
			return true
		}
	}
	return false
}
