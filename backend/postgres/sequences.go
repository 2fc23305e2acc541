package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/writeset"
)

// seqFence moves sequences past the values their columns hold before a
// node writes as the primary. A standby applies rows with their values
// (after-images), so the sequences behind serial, bigserial, identity and
// DEFAULT nextval(...) columns stay where they were on it; without the
// fence, the first inserts after a promote would draw values the old
// primary had already used (23505). See DESIGN.md.
type seqFence struct {
	mu     sync.Mutex
	fenced atomic.Bool // false: fence before the next write transaction
	// targets are the sequences that feed columns, by table name, for
	// multi-master's fence after each applied batch; nil: not loaded
	// (at start and after every applied DDL). Guarded by Backend.applyMu.
	targets map[string][]fenceTarget
	// stride and offset: multi-master's interleaved sequences
	// (SetSequenceStride). Stride <= 1: none.
	stride, offset int64
}

// fenceTarget is one sequence feeding one column: fenceSQL's loop body
// for one row, so that a batch fences only the tables it wrote.
type fenceTarget struct {
	table, col, seq string // the table and sequence as regclass text, the column quoted
	max             int64  // the sequence's MAXVALUE
	inc             int64  // its INCREMENT
}

// sql moves the sequence past the column's largest value, as fenceSQL's
// loop body does: never backwards, never past MAXVALUE. With a stride (a
// sequence strideSQL interleaves), the next value is the first past the
// column's largest that is the node's own (offset modulo stride).
func (t fenceTarget) sql(stride, offset int64) string {
	lit := "'" + strings.ReplaceAll(t.seq, "'", "''") + "'"
	// A sequence that counted by 1 when the list was read counts by the
	// stride by the time the node draws from it (strideSQL runs before
	// the first write after an applied DDL).
	if stride > 1 && (t.inc == stride || t.inc == 1) {
		k, r := strconv.FormatInt(stride, 10), strconv.FormatInt(offset, 10)
		return "SELECT setval(" + lit + "::regclass, s.n::bigint, false) FROM (SELECT x.m + 1 + (((" + r + " - (x.m + 1)) % " + k + ") + " + k + ") % " + k +
			" AS n FROM (SELECT max(" + t.col + ")::numeric AS m FROM " + t.table + ") x) s, " + t.seq +
			" q WHERE s.n IS NOT NULL AND s.n <= " + strconv.FormatInt(t.max, 10) + " AND s.n > CASE WHEN q.is_called THEN q.last_value + " + k + " ELSE q.last_value END"
	}
	return "SELECT setval(" + lit + "::regclass, s.m::bigint, true) FROM (SELECT max(" + t.col + ")::numeric AS m FROM " + t.table + ") s, " + t.seq +
		" q WHERE s.m IS NOT NULL AND s.m <= " + strconv.FormatInt(t.max, 10) + " AND (s.m > q.last_value OR (s.m = q.last_value AND NOT q.is_called))"
}

// stale marks the sequences as behind (after applying writesets or a
// restore): the next write transaction fences them first.
func (f *seqFence) stale() { f.fenced.Store(false) }

// fenceCatalog is the FROM clause of the sequences that feed a column of
// a table (owned by it: serial, bigserial, identity; or named in a
// column's DEFAULT) and count up: d.seq, d.tbl, a.attname, q (pg_sequence),
// c (the table's pg_class).
const fenceCatalog = `
    FROM (
      SELECT dp.objid AS seq, dp.refobjid AS tbl, dp.refobjsubid AS attnum
        FROM pg_depend dp
        WHERE dp.classid = 'pg_class'::regclass AND dp.refclassid = 'pg_class'::regclass
          AND dp.deptype IN ('a', 'i') AND dp.refobjsubid > 0
      UNION
      SELECT dp.refobjid, ad.adrelid, ad.adnum
        FROM pg_attrdef ad
        JOIN pg_depend dp ON dp.classid = 'pg_attrdef'::regclass AND dp.objid = ad.oid AND dp.refclassid = 'pg_class'::regclass
    ) d
    JOIN pg_sequence q ON q.seqrelid = d.seq
    JOIN pg_class c ON c.oid = d.tbl AND c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_temp%'
    JOIN pg_attribute a ON a.attrelid = d.tbl AND a.attnum = d.attnum AND NOT a.attisdropped
    WHERE c.relname NOT LIKE '\_tandem\_%' AND q.seqincrement > 0`

// fenceTargetsQuery lists what fenceSQL loops over, by table name.
const fenceTargetsQuery = `SELECT DISTINCT c.relname, d.tbl::regclass::text, quote_ident(a.attname), d.seq::regclass::text, q.seqmax, q.seqincrement` + fenceCatalog

// loadFenceTargets reads fenceTargetsQuery on c (the apply connection,
// outside a transaction).
func loadFenceTargets(ctx context.Context, c *pgconn.PgConn) (map[string][]fenceTarget, error) {
	rows, err := query(ctx, c, fenceTargetsQuery)
	if err != nil {
		return nil, fmt.Errorf("postgres: list the sequences that feed columns: %w", err)
	}
	out := make(map[string][]fenceTarget)
	for _, r := range rows {
		mx, err := strconv.ParseInt(r[4], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("postgres: sequence %s: MAXVALUE %q: %w", r[3], r[4], err)
		}
		inc, err := strconv.ParseInt(r[5], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("postgres: sequence %s: INCREMENT %q: %w", r[3], r[5], err)
		}
		out[r[0]] = append(out[r[0]], fenceTarget{table: r[1], col: r[2], seq: r[3], max: mx, inc: inc})
	}
	return out, nil
}

// fenceStatements are the statements that fence the sequences feeding
// the tables batch inserted into or updated, loading the targets on c
// when they are not known. Called with applyMu held, outside a
// transaction on c.
func (b *Backend) fenceStatements(ctx context.Context, c *pgconn.PgConn, batch []*writeset.Writeset) ([]string, error) {
	if !inserts(batch) {
		return nil, nil
	}
	if b.seqs.targets == nil {
		t, err := loadFenceTargets(ctx, c)
		if err != nil {
			return nil, err
		}
		b.seqs.targets = t
	}
	if len(b.seqs.targets) == 0 {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, ws := range batch {
		for i := range ws.Rows {
			r := &ws.Rows[i]
			if r.Op == writeset.OpDelete || r.Op == writeset.OpDeleteRow || r.Op == writeset.OpDDL || seen[r.Table] {
				continue
			}
			seen[r.Table] = true
			for _, t := range b.seqs.targets[r.Table] {
				out = append(out, t.sql(b.seqs.stride, b.seqs.offset))
			}
		}
	}
	return out, nil
}

// fenceSQL sets every sequence that feeds a column of a table
// (fenceCatalog) to at least the column's largest value, so nextval
// returns a larger one. Sequences that count down are left alone.
var fenceSQL = fenceDO("")

// fenceDO is fenceSQL for the sequences that also meet the condition
// extra on q (pg_sequence): "AND ...", or "" for all.
func fenceDO(extra string) string {
	return `DO $f$
DECLARE r record; m numeric; cur record;
BEGIN
  FOR r IN
    SELECT DISTINCT d.seq, d.tbl, a.attname AS col, q.seqincrement AS inc, q.seqmax AS mx` + fenceCatalog + " " + extra + `
  LOOP
    EXECUTE format('SELECT max(%I)::numeric FROM %s', r.col, r.tbl::regclass) INTO m;
    CONTINUE WHEN m IS NULL OR m > r.mx;
    EXECUTE format('SELECT last_value, is_called FROM %s', r.seq::regclass) INTO cur;
    IF m > cur.last_value OR (m = cur.last_value AND NOT cur.is_called) THEN
      PERFORM setval(r.seq::regclass, m::bigint, true);
    END IF;
  END LOOP;
END $f$`
}

// strideSQL interleaves the node's sequences with the other nodes' in
// multi-master (DESIGN.md, "Sequences interleave in multi-master"): every sequence
// of the database that counts up by 1 is altered to count up by stride,
// and every sequence that counts by stride is moved to its next value
// that is the node's own (offset modulo stride), past the values it
// handed out and past the largest value of each column it feeds. Two
// nodes then never draw the same value. ALTER SEQUENCE locks the
// sequence against nextval until the block ends, so what it reads is
// the last value drawn; a sequence already interleaved only moves
// forward. A sequence the node's role may not alter (an external
// server's, owned by another role) is left as it is.
func strideSQL(stride, offset int64) string {
	k, r := strconv.FormatInt(stride, 10), strconv.FormatInt(offset, 10)
	return `DO $f$
DECLARE sq record; col record; mcol numeric; nxt numeric; was numeric; cur record;
BEGIN
  FOR sq IN
    SELECT q.seqrelid AS seq, q.seqincrement AS inc, q.seqmax AS mx
      FROM pg_sequence q
      JOIN pg_class c ON c.oid = q.seqrelid AND c.relpersistence <> 't'
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_temp%'
      WHERE c.relname NOT LIKE '\_tandem\_%' AND q.seqincrement IN (1, ` + k + `)
  LOOP
    IF sq.inc <> ` + k + ` THEN
      BEGIN
        EXECUTE format('ALTER SEQUENCE %s INCREMENT BY ` + k + `', sq.seq::regclass);
      EXCEPTION WHEN insufficient_privilege THEN
        CONTINUE; -- another role's sequence on an external server: left as it is
      END;
    END IF;
    EXECUTE format('SELECT last_value, is_called FROM %s', sq.seq::regclass) INTO cur;
    was := CASE WHEN cur.is_called THEN cur.last_value + sq.inc ELSE cur.last_value END;
    nxt := was;
    FOR col IN SELECT d.tbl, a.attname AS name` + fenceCatalog + ` AND d.seq = sq.seq
    LOOP
      EXECUTE format('SELECT max(%I)::numeric FROM %s', col.name, col.tbl::regclass) INTO mcol;
      IF mcol IS NOT NULL AND mcol + 1 > nxt THEN
        nxt := mcol + 1;
      END IF;
    END LOOP;
    nxt := nxt + (((` + r + ` - nxt) % ` + k + `) + ` + k + `) % ` + k + `;
    IF nxt <= sq.mx AND (sq.inc <> ` + k + ` OR nxt <> was) THEN
      PERFORM setval(sq.seq::regclass, nxt::bigint, false);
    END IF;
  END LOOP;
END $f$`
}

// SetSequenceStride makes a multi-master node draw from its sequences
// only values that are offset modulo stride (stride > 1; the node's place
// in the cluster), so that nodes drawing at the same moment never draw
// the same value (MySQL's auto_increment_increment and _offset, which
// Galera sets the same way). Call it before serving sessions.
func (b *Backend) SetSequenceStride(stride, offset int) {
	b.seqs.mu.Lock()
	defer b.seqs.mu.Unlock()
	b.seqs.stride, b.seqs.offset = int64(stride), int64(offset)
	b.seqs.fenced.Store(false)
}

// fenceSequences runs the fence once before the first write transaction
// after start-up and after each stretch of applying; other writers wait
// for it. Cheap once done: one atomic load.
func (b *Backend) fenceSequences(ctx context.Context) error {
	if b.seqs.fenced.Load() {
		return nil
	}
	b.seqs.mu.Lock()
	defer b.seqs.mu.Unlock()
	if b.seqs.fenced.Load() {
		return nil
	}
	c, err := pgconn.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return fmt.Errorf("postgres: fence sequences: %w", err)
	}
	defer c.Close(context.Background())
	if k := b.seqs.stride; k > 1 {
		// Interleave first, then fence the sequences that count by
		// other steps as in the other designs. The ALTERs wait for
		// sessions that drew from a sequence in an open transaction: if
		// one does not end soon, this write goes on and the next one
		// tries again (until then the node may draw a value another
		// node draws: an abort, not a duplicate).
		ks := strconv.FormatInt(k, 10)
		if _, err := c.Exec(ctx, "SET lock_timeout = '200ms'; "+strideSQL(k, b.seqs.offset)+"; "+fenceDO("AND q.seqincrement NOT IN (1, "+ks+")")).ReadAll(); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "55P03" {
				return nil
			}
			return fmt.Errorf("postgres: interleave the sequences (multi_master.sequence_stride %d): %w", k, err)
		}
		b.seqs.fenced.Store(true)
		return nil
	}
	if _, err := c.Exec(ctx, fenceSQL).ReadAll(); err != nil {
		return fmt.Errorf("postgres: fence sequences past the replicated rows: %w", err)
	}
	b.seqs.fenced.Store(true)
	return nil
}
