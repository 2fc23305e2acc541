package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
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
}

// stale marks the sequences as behind (after applying writesets or a
// restore): the next write transaction fences them first.
func (f *seqFence) stale() { f.fenced.Store(false) }

// fenceSQL sets every sequence that feeds a column of a table (owned by
// it: serial, bigserial, identity; or named in a column's DEFAULT) to at
// least the column's largest value, so nextval returns a larger one.
// Sequences that count down are left alone.
const fenceSQL = `DO $f$
DECLARE r record; m numeric; cur record;
BEGIN
  FOR r IN
    SELECT DISTINCT d.seq, d.tbl, a.attname AS col, q.seqincrement AS inc, q.seqmax AS mx
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
    WHERE c.relname NOT LIKE '\_tandem\_%' AND q.seqincrement > 0
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
