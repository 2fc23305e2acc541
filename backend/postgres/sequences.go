package postgres

import (
	"context"
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
}

// fenceTarget is one sequence feeding one column: fenceSQL's loop body
// for one row, so that a batch fences only the tables it wrote.
type fenceTarget struct {
	table, col, seq string // the table and sequence as regclass text, the column quoted
	max             int64  // the sequence's MAXVALUE
}

// sql moves the sequence past the column's largest value, as fenceSQL's
// loop body does: never backwards, never past MAXVALUE.
func (t fenceTarget) sql() string {
	lit := "'" + strings.ReplaceAll(t.seq, "'", "''") + "'"
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
const fenceTargetsQuery = `SELECT DISTINCT c.relname, d.tbl::regclass::text, quote_ident(a.attname), d.seq::regclass::text, q.seqmax` + fenceCatalog

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
		out[r[0]] = append(out[r[0]], fenceTarget{table: r[1], col: r[2], seq: r[3], max: mx})
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
				out = append(out, t.sql())
			}
		}
	}
	return out, nil
}

// fenceSQL sets every sequence that feeds a column of a table
// (fenceCatalog) to at least the column's largest value, so nextval
// returns a larger one. Sequences that count down are left alone.
const fenceSQL = `DO $f$
DECLARE r record; m numeric; cur record;
BEGIN
  FOR r IN
    SELECT DISTINCT d.seq, d.tbl, a.attname AS col, q.seqincrement AS inc, q.seqmax AS mx` + fenceCatalog + `
  LOOP
    EXECUTE format('SELECT max(%I)::numeric FROM %s', r.col, r.tbl::regclass) INTO m;
    CONTINUE WHEN m IS NULL OR m > r.mx;
    EXECUTE format('SELECT last_value, is_called FROM %s', r.seq::regclass) INTO cur;
    IF m > cur.last_value OR (m = cur.last_value AND NOT cur.is_called) THEN
      PERFORM setval(r.seq::regclass, m::bigint, true);
    END IF;
  END LOOP;
END $f$`

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
	if _, err := c.Exec(ctx, fenceSQL).ReadAll(); err != nil {
		return fmt.Errorf("postgres: fence sequences past the replicated rows: %w", err)
	}
	b.seqs.fenced.Store(true)
	return nil
}
