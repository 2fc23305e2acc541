package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/writeset"
)

// recorder is the Replicator of these tests: it gives each commit the next
// GSN and keeps its writeset as a standby gets it (encoded, as the log
// writes it, and decoded).
type recorder struct {
	mu  sync.Mutex
	got []*writeset.Writeset
}

func (r *recorder) Writable() error { return nil }

func (r *recorder) Prepare(_ context.Context, ws *writeset.Writeset) (func(context.Context, bool) error, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws.GSN, ws.Epoch = uint64(len(r.got)+1), 1
	dec, err := writeset.Decode(writeset.Encode(ws))
	if err != nil {
		return nil, err
	}
	r.got = append(r.got, dec)
	return func(context.Context, bool) error { return nil }, nil
}

// An awkward table: a quote and double quotes in its name, a two-column
// key of text and int, and values whose text forms must survive the trip
// (timestamps, bytea, numeric, jsonb, arrays, NULL).
const (
	oddTable  = `"we'ird ""t"""`
	oddSchema = `CREATE TABLE ` + oddTable + ` (k text, n int, ts timestamp, b bytea, x numeric(12,4), j jsonb, arr int[], note text, PRIMARY KEY (k, n));
CREATE TABLE plain (id bigint PRIMARY KEY, v text);
CREATE TABLE bag (id int, v text, b bytea, arr text[], note text)`
)

// wideSchema is a table without a primary key whose row can exceed
// bigRowBytes with no value over bigValueBytes (70 values of 4,000 bytes):
// its image stays whole, nothing is kept aside.
var wideSchema, wideRow = func() (string, string) {
	cols, vals := make([]string, 70), make([]string, 70)
	for i := range cols {
		cols[i] = fmt.Sprintf("c%d text", i)
		vals[i] = fmt.Sprintf("repeat('%c', 4000)", 'a'+i%26)
	}
	return "CREATE TABLE wide (" + strings.Join(cols, ", ") + ")", "INSERT INTO wide SELECT " + strings.Join(vals, ", ")
}()

// TestCaptureRoundTrip: writes through the back end's sessions (autocommit
// statements, whose writeset rides in the statement's own batch, and an
// explicit transaction) are captured with every column's text form; applied
// to another database they reproduce the tables exactly; capture rows never
// outlive their transaction; a write that changed nothing has no writeset.
func TestCaptureRoundTrip(t *testing.T) {
	ctx := context.Background()
	m, admin := startTestServer(t)
	if _, err := admin.Exec(ctx, "CREATE DATABASE replica"); err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{"postgres", "replica"} {
		c, err := pgx.Connect(ctx, m.DSN(db))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, oddSchema+";"+wideSchema); err != nil {
			t.Fatal(err)
		}
		c.Close(ctx)
	}

	b, err := NewBackend(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if err := b.EnableReplication(ctx, rec); err != nil {
		t.Fatal(err)
	}
	bs, err := b.NewSession(ctx, "postgres", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	s := bs.(*Session)
	defer s.Close()
	run := func(sql string, args ...string) {
		t.Helper()
		st, err := s.Prepare(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		params := make([][]byte, len(args))
		for i, a := range args {
			if a != "\x00" {
				params[i] = []byte(a)
			}
		}
		if _, err := s.ExecuteRaw(ctx, st, params, nil, nil); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	ins := "INSERT INTO " + oddTable + " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
	steps := []struct {
		name   string
		sql    []string
		args   [][]string
		wantWS int // writesets this step adds
	}{
		{"autocommit insert", []string{ins}, [][]string{{"a'b\"c", "1", "2026-11-23 10:11:12.345678", `\x00ff10`, "12.5", `{"z": [1, "x"], "a": null}`, "{1,NULL,3}", "\x00"}}, 1},
		{"autocommit insert, second table", []string{"INSERT INTO plain VALUES (1, 'one'), (2, 'two')"}, [][]string{nil}, 1},
		{"explicit transaction", []string{
			"BEGIN",
			"UPDATE " + oddTable + " SET note = 'tab\there', x = x * 2 WHERE k = $1 AND n = 1",
			ins,
			"UPDATE plain SET v = NULL WHERE id = 2",
			"DELETE FROM plain WHERE id = 1",
			"INSERT INTO plain VALUES (1, 'again')",
			"COMMIT",
		}, [][]string{nil, {"a'b\"c"}, {"second", "2", "\x00", "\x00", "\x00", "\x00", "\x00", "x"}, nil, nil, nil, nil}, 1},
		{"autocommit update of the key", []string{"UPDATE " + oddTable + " SET n = 3 WHERE k = 'second'"}, [][]string{nil}, 1},
		{"autocommit delete", []string{"DELETE FROM plain WHERE id = 2"}, [][]string{nil}, 1},
		{"update that changes nothing", []string{"UPDATE plain SET v = 'x' WHERE id = 42"}, [][]string{nil}, 0},
		// Large rows: their large values are read in pieces (large.go),
		// in autocommit and in a block, mixed with small rows and small
		// values, and harvested into a block's DDL script.
		{"autocommit large row", []string{"INSERT INTO plain VALUES (10, $1)"}, [][]string{{bigText(600 << 10)}}, 1},
		{"large rows in a block", []string{
			"BEGIN",
			"UPDATE plain SET v = 'small' WHERE id = 1",
			ins,
			"INSERT INTO plain VALUES (11, $1)",
			"UPDATE plain SET v = v || 'tail' WHERE id = 10",
			"COMMIT",
		}, [][]string{nil, nil, {"big", "9", "2026-11-27 10:00:00", `\x` + strings.Repeat("00ff5c27", 40000), "1", `{"k": "` + strings.Repeat("j", 5000) + `"}`, "{1}", bigText(300 << 10)},
			{strings.Repeat("m", 250<<10)}, nil, nil}, 1},
		{"large row harvested by DDL in a block", []string{
			"BEGIN",
			"UPDATE plain SET v = $1 WHERE id = 11",
			"ALTER TABLE plain ADD COLUMN extra int",
			"UPDATE plain SET extra = 1 WHERE id = 10",
			"COMMIT",
		}, [][]string{nil, {bigText(400 << 10)}, nil, nil, nil}, 1},
		// A table without a primary key: full-row events, whose large
		// values wait in _tandem.capture_big (fullRowCaptureFunction):
		// duplicates, NULLs, bytea, arrays; rows updated and deleted
		// before COMMIT (their images were taken by the trigger), and
		// events harvested by DDL in a block.
		{"no key: autocommit large row", []string{"INSERT INTO bag VALUES ($1, $2, $3, $4, $5)"},
			[][]string{{"1", bigText(600 << 10), `\x00ff`, `{a,"b c",NULL}`, "\x00"}}, 1},
		{"no key: a duplicate", []string{"INSERT INTO bag VALUES ($1, $2, $3, $4, $5)"},
			[][]string{{"1", bigText(600 << 10), `\x00ff`, `{a,"b c",NULL}`, "\x00"}}, 1},
		{"no key: large rows in a block", []string{
			"BEGIN",
			"UPDATE bag SET note = 'both' WHERE id = 1",
			"INSERT INTO bag VALUES (2, 'small', NULL, NULL, NULL)",
			"DELETE FROM bag WHERE ctid = (SELECT ctid FROM bag WHERE id = 1 LIMIT 1)",
			"INSERT INTO bag VALUES (3, $1, $2, $3, NULL)",
			"UPDATE bag SET arr = NULL, v = v || 'tail' WHERE id = 3",
			"COMMIT",
		}, [][]string{nil, nil, nil, nil, {bigText(300 << 10), `\x` + strings.Repeat("00ff5c27", 40000), "{" + strings.Repeat(`"q\\\"",`, 2000) + "x}"}, nil, nil}, 1},
		{"no key: large rows harvested by DDL in a block", []string{
			"BEGIN",
			"UPDATE bag SET v = $1 WHERE id = 3",
			"ALTER TABLE bag ADD COLUMN extra int",
			"UPDATE bag SET extra = 5 WHERE id = 3",
			"DELETE FROM bag WHERE id = 2",
			"COMMIT",
		}, [][]string{nil, {bigText(400 << 10)}, nil, nil, nil, nil}, 1},
		{"no key: a large row of small values", []string{wideRow, "UPDATE wide SET c3 = 'short'"}, [][]string{nil, nil}, 2},
		{"no key: large rows rolled back to a savepoint", []string{
			"BEGIN",
			"INSERT INTO bag VALUES (5, $1, NULL, NULL, 'kept')",
			"SAVEPOINT s",
			"INSERT INTO bag VALUES (6, $1, NULL, NULL, 'undone')",
			"UPDATE bag SET note = 'undone' WHERE id = 5",
			"ROLLBACK TO SAVEPOINT s",
			"COMMIT",
		}, [][]string{nil, {bigText(300 << 10)}, nil, {bigText(500 << 10)}, nil, nil, nil}, 1},
	}
	for _, step := range steps {
		before := len(rec.got)
		for i, sql := range step.sql {
			run(sql, step.args[i]...)
		}
		if got := len(rec.got) - before; got != step.wantWS {
			t.Fatalf("%s: %d writesets, want %d", step.name, got, step.wantWS)
		}
		var left int
		if err := admin.QueryRow(ctx, "SELECT (SELECT count(*) FROM _tandem.capture) + (SELECT count(*) FROM _tandem.capture_big)").Scan(&left); err != nil || left != 0 {
			t.Fatalf("%s: %d capture rows left (%v)", step.name, left, err)
		}
	}
	// A large row's image leaves its large values out.
	var img string
	if err := admin.QueryRow(ctx, `SELECT _tandem.img('plain', '[10]')`).Scan(&img); err != nil || len(img) > 1000 || !strings.Contains(img, `"(`) {
		t.Fatalf("the image of a large row is %d bytes (%v), want its large value left out", len(img), err)
	}
	// The explicit transaction: four changed keys (each once), with the
	// deleted-and-reinserted row as an update of its final image.
	tx := rec.got[2]
	var ops []string
	for _, r := range tx.Rows {
		ops = append(ops, fmt.Sprintf("%s:%d", r.Table, r.Op))
	}
	if len(tx.Rows) != 4 {
		t.Fatalf("explicit transaction captured %v", ops)
	}
	// The key update deletes the old key and writes the new one.
	if kr := rec.got[3].Rows; len(kr) != 2 || kr[0].Op != writeset.OpDelete || kr[1].Op != writeset.OpUpdate {
		t.Fatalf("key update captured %+v", kr)
	}

	// The block on the table without a key: every event in order, none
	// merged (the update of two duplicates is four).
	var evs []writeset.Op
	for _, r := range rec.got[10].Rows {
		evs = append(evs, r.Op)
	}
	dr, ir := writeset.OpDeleteRow, writeset.OpInsertRow
	if want := []writeset.Op{dr, ir, dr, ir, ir, dr, ir, dr, ir}; !slices.Equal(evs, want) {
		t.Fatalf("the block on a table without a key captured %v, want %v", evs, want)
	}

	r, err := NewBackend(ctx, m.DSN("replica"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.dropApplyConn()
	if _, _, err := r.AppliedGSN(); err != nil {
		t.Fatal(err)
	}
	if err := r.ApplyBatch(ctx, rec.got); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT k, n, ts::text, b::text, x::text, j::text, arr::text, note FROM " + oddTable + " ORDER BY k, n",
		"SELECT id, v, extra FROM plain ORDER BY id",
		"SELECT id, v, b::text, arr::text, note, extra FROM bag ORDER BY id, md5(v), note",
		"SELECT md5(wide::text), c3 FROM wide",
	} {
		want, have := dump(t, m.DSN("postgres"), q), dump(t, m.DSN("replica"), q)
		if want != have {
			t.Fatalf("replica differs for %s\nprimary:\n%s\nreplica:\n%s", q, want, have)
		}
		if want == "" {
			t.Fatalf("%s: no rows on the primary", q)
		}
	}
}

// bigText is about n bytes of text that JSON and SQL must both get right:
// multibyte characters, quotes, backslashes, tabs and newlines.
func bigText(n int) string {
	const unit = "é✓ 'quote' \"dq\" back\\slash\ttab\nline "
	return strings.Repeat(unit, n/len(unit)+1)
}

func dump(t *testing.T, dsn, q string) string {
	t.Helper()
	c, err := pgconn.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	res, err := c.Exec(context.Background(), q).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, row := range res[0].Rows {
		for _, v := range row {
			if v == nil {
				b.WriteString("NULL|")
			} else {
				b.WriteString(string(v) + "|")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestDecodeImage covers the image format's edge cases without a server.
func TestDecodeImage(t *testing.T) {
	cases := []struct {
		name, pk, img string
		wantOp        writeset.Op
		wantKey       []string
		wantErr       string
		wantBig       []int // a large row's values left out
	}{
		{"large row", `[1]`, `[["id","v","w"],["id"],["1", 12582912, "small"],"(0,5)"]`, writeset.OpUpdate, []string{"1"}, "", []int{1}},
		{"large row, key left out", `["k"]`, `[["id","v"],["id"],[5000, null],"(3,1)"]`, writeset.OpUpdate, []string{"k"}, "", []int{0}},
		{"large row, not a size", `[1]`, `[["id","v"],["id"],["1", true],"(0,5)"]`, 0, nil, "neither text nor a size", nil},
		{"too many parts", `[1]`, `[["id"],["id"],["1"],"(0,1)",5]`, 0, nil, "5 parts", nil},
		{"update", `[1, "a"]`, `[["id","k","v"],["id","k"],["1","a",null]]`, writeset.OpUpdate, []string{"1", "a"}, "", nil},
		{"delete keeps the captured key", `[7, "x'y"]`, `[["id","k","v"],["id","k"],null]`, writeset.OpDelete, []string{"7", "x'y"}, "", nil},
		{"key from the after-image's text", `["2026-01-02T03:04:05"]`, `[["ts"],["ts"],["2026-01-02 03:04:05"]]`, writeset.OpUpdate, []string{"2026-01-02 03:04:05"}, "", nil},
		{"value count mismatch", `[1]`, `[["id","v"],["id"],["1"]]`, 0, nil, "2 columns", nil},
		{"key arity mismatch", `[1, 2]`, `[["id"],["id"],["1"]]`, 0, nil, "key", nil},
		{"not JSON", `[1]`, `nope`, 0, nil, "bad after-image", nil},
		{"no key: insert", `"+"`, `[["id","v"],[],["1",null]]`, writeset.OpInsertRow, nil, "", nil},
		{"no key: delete", `"-"`, `[["id","v"],[],["1","x"]]`, writeset.OpDeleteRow, nil, "", nil},
		{"no key: large row", `"+"`, `[["id","v","w"],[],["1",12582912,null],"42"]`, writeset.OpInsertRow, nil, "", []int{1}},
		{"no key: large row deleted", `"-"`, `[["id","v","w"],[],[5000,"a",6000],"7"]`, writeset.OpDeleteRow, nil, "", []int{0, 2}},
		{"no key: value count mismatch", `"+"`, `[["id","v"],[],["1"]]`, 0, nil, "1 values for 2 columns", nil},
		{"no key: no values", `"+"`, `[["id"],[],null]`, 0, nil, "0 values for 1 columns", nil},
		{"no key: not a size", `"-"`, `[["id","v"],[],["1",[2]],"3"]`, 0, nil, "neither text nor a size", nil},
		{"no key: too many parts", `"+"`, `[["id"],[],["1"],"3",4]`, 0, nil, "5 parts", nil},
		{"no key: aside, none left out", `"+"`, `[["id"],[],["1"],"3"]`, 0, nil, "none left out", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			row, err := decodeImage("t", c.pk, []byte(c.img))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if row.Op != c.wantOp {
				t.Fatalf("op %v, want %v", row.Op, c.wantOp)
			}
			for i, k := range c.wantKey {
				if got, _ := row.Key[i].AsText(); got != k {
					t.Fatalf("key[%d] = %q, want %q", i, got, k)
				}
			}
			if !slices.Equal(row.big, c.wantBig) || (len(c.wantBig) > 0) != (row.ctid != "") {
				t.Fatalf("left out %v at ctid %q, want %v", row.big, row.ctid, c.wantBig)
			}
			// A row without a key keeps its large values aside, by id.
			if noKey := row.Op == writeset.OpInsertRow || row.Op == writeset.OpDeleteRow; row.side != (noKey && len(c.wantBig) > 0) {
				t.Fatalf("side = %v for op %v with %v left out", row.side, row.Op, row.big)
			}
			for _, i := range row.big {
				if !row.After[i].IsNull() {
					t.Fatalf("value %d left out but set", i)
				}
			}
		})
	}
}

var _ pgwire.BackendSession = (*Session)(nil)
