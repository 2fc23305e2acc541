package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// oldLayoutSQL is what a node made before tandem's objects moved to
// schema _tandem (2026-12-07): its tables and functions in public, and a
// capture trigger calling a public function.
const oldLayoutSQL = `
CREATE TABLE t (id bigint PRIMARY KEY, v text);
CREATE TABLE _tandem_meta (id int PRIMARY KEY CHECK (id = 1), applied_gsn bigint NOT NULL, epoch bigint NOT NULL);
INSERT INTO _tandem_meta VALUES (1, 7, 2);
CREATE UNLOGGED TABLE _tandem_capture (seq bigserial PRIMARY KEY, txid bigint NOT NULL DEFAULT txid_current(), tbl text NOT NULL, pk jsonb NOT NULL, ev text);
CREATE UNLOGGED TABLE _tandem_capture_big (id bigserial PRIMARY KEY, vals text[] NOT NULL);
CREATE TABLE _tandem_gsns (gsn bigint PRIMARY KEY, epoch bigint NOT NULL);
INSERT INTO _tandem_gsns VALUES (9, 2);
CREATE FUNCTION _tandem_applied() RETURNS TABLE (gsn bigint, epoch bigint) LANGUAGE sql STABLE AS $f$ SELECT applied_gsn, epoch FROM _tandem_meta $f$;
CREATE FUNCTION _tandem_cap_0000_t() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN INSERT INTO _tandem_capture (tbl, pk) VALUES (TG_TABLE_NAME, jsonb_build_array(NEW.id)); RETURN NULL; END $f$;
CREATE TRIGGER _tandem_capture AFTER INSERT OR UPDATE OR DELETE ON t FOR EACH ROW EXECUTE FUNCTION _tandem_cap_0000_t();`

// TestTandemSchema: tandem's tables and functions live in schema _tandem,
// out of the application's sight (psql's \dt and \df, ORMs' reflection of
// public); a database an older version set up in public is moved there
// with its applied GSN, and its capture triggers made again; a re-seed
// restores a donor's dump over a database that has a table the donor
// lacks.
func TestTandemSchema(t *testing.T) {
	ctx := context.Background()
	m, admin := startTestServer(t)
	if _, err := admin.Exec(ctx, oldLayoutSQL); err != nil {
		t.Fatal(err)
	}
	b, err := NewBackend(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.dropApplyConn()
	rec := &recorder{}
	if err := b.EnableReplication(ctx, rec); err != nil {
		t.Fatal(err)
	}
	names := func(c *pgx.Conn, q string) string {
		t.Helper()
		rows, err := c.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, " ")
	}
	inPublic := `SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'
		UNION ALL SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' ORDER BY 1`
	if got := names(admin, inPublic); got != "t t_pkey" {
		t.Errorf("schema public holds %q after the move, want only the application's table t", got)
	}
	if got := names(admin, `SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '_tandem' AND c.relkind = 'r' ORDER BY 1`); got != "capture capture_big gsns meta" {
		t.Errorf("schema _tandem's tables: %q", got)
	}
	if g, e, err := b.AppliedGSN(); err != nil || g != 9 || e != 2 {
		t.Errorf("applied GSN after the move: %d epoch %d (%v), want 9 and 2 as before it", g, e, err)
	}
	if got := names(admin, `SELECT tgfoid::regproc::text FROM pg_trigger WHERE tgrelid = 't'::regclass AND tgname = '_tandem_capture'`); !strings.HasPrefix(got, "_tandem.cap_") {
		t.Errorf("t's capture trigger calls %q, want a function of schema _tandem", got)
	}

	// A write through a session is captured by the new trigger.
	bs, err := b.NewSession(ctx, "postgres", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	s := bs.(*Session)
	defer s.Close()
	st, err := s.Prepare(ctx, "INSERT INTO t VALUES (1, 'a')")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExecuteRaw(ctx, st, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(rec.got) != 1 || len(rec.got[0].Rows) != 1 || rec.got[0].Rows[0].Table != "t" {
		t.Fatalf("writesets after one insert: %+v", rec.got)
	}

	// Re-seed: a second database with a table the donor lacks takes the
	// donor's dump.
	if _, err := admin.Exec(ctx, "CREATE DATABASE recv"); err != nil {
		t.Fatal(err)
	}
	rc, err := pgx.Connect(ctx, m.DSN("recv"))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close(ctx)
	if _, err := rc.Exec(ctx, "CREATE TABLE gone (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	rb, err := NewBackend(ctx, m.DSN("recv"))
	if err != nil {
		t.Fatal(err)
	}
	defer rb.dropApplyConn()
	if err := rb.EnableReplication(ctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	data, gsn, err := b.SnapshotBytes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rb.Restore(ctx, data); err != nil {
		t.Fatalf("restore over a database with a table the donor lacks: %v", err)
	}
	if g, _, err := rb.AppliedGSN(); err != nil || g != gsn {
		t.Errorf("receiver's applied GSN %d (%v), want the donor's %d", g, err, gsn)
	}
	var v string
	if err := rc.QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil || v != "a" {
		t.Errorf("receiver's row: %q, %v", v, err)
	}
	for _, table := range []string{"t", "gone"} {
		if got := names(rc, `SELECT tgfoid::regproc::text FROM pg_trigger WHERE tgrelid = '`+table+`'::regclass AND tgname = '_tandem_capture'`); !strings.HasPrefix(got, "_tandem.cap_") {
			t.Errorf("receiver's %s: capture trigger calls %q", table, got)
		}
	}
}
