package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The replicated PostgreSQL path (issue 9 item 6, issue 19 items 3 and 4,
// issue 18 item 7): sessions on a hot-standby pair run through tandem's
// executor; drivers must see what a direct connection gives them.

// needClient skips when a client is missing, except in CI, where it fails.
func needClient(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing (scripts/deps.d/pgpath.sh installs it): %v", what, err)
	}
	t.Skipf("%s is missing (run scripts/deps.d/pgpath.sh): %v", what, err)
}

// waitRows polls a query returning one integer until it equals want.
func waitRows(t *testing.T, dsn, query string, want int64) {
	t.Helper()
	ctx := context.Background()
	var got int64
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var c *pgx.Conn
		if c, err = pgx.Connect(ctx, dsn); err != nil {
			continue
		}
		err = c.QueryRow(ctx, query).Scan(&got)
		c.Close(ctx)
		if err == nil && got == want {
			return
		}
	}
	t.Fatalf("%s on %s: %d (err %v), want %d", query, dsn, got, err, want)
}

// pgTarget is one way to reach a PostgreSQL back end through tandem.
type pgTarget struct {
	name    string
	dsn     string // where clients connect
	standby string // the standby's own address ("" standalone)
	h       *hsCluster
}

// pgTargets starts both: the hot-standby pair (through its router) and a
// standalone PostgreSQL node.
func pgTargets(t *testing.T) []pgTarget {
	h := writeHSOn(t, "postgres", "2-safe-visible", "relaxed", "")
	h.start("n1")
	h.start("n2")
	h.start("router")
	sa := startCluster(t, clusterSpec{backend: "postgres"})
	return []pgTarget{
		{name: "hot-standby-router", dsn: h.dsn(h.router), standby: h.dsn(h.nodes["n2"]), h: h},
		{name: "standalone", dsn: sa.DSN},
	}
}

// sameOnStandby checks that the standby holds what the primary does.
func (tg pgTarget) sameOnStandby(t *testing.T, query string) {
	t.Helper()
	if tg.standby == "" {
		return
	}
	ctx := context.Background()
	p := connect(t, tg.dsn)
	var want string
	if err := p.QueryRow(ctx, query).Scan(&want); err != nil {
		t.Fatalf("%s on the primary: %v", query, err)
	}
	var got string
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var c *pgx.Conn
		if c, err = pgx.Connect(ctx, tg.standby); err != nil {
			continue
		}
		err = c.QueryRow(ctx, query).Scan(&got)
		c.Close(ctx)
		if err == nil && got == want {
			return
		}
	}
	t.Fatalf("%s: standby has %q (err %v), primary %q", query, got, err, want)
}

// TestPgPathDrivers runs pgx (binary), psycopg 3 and pgjdbc against the
// PostgreSQL pair through the router and against a standalone PostgreSQL
// node: typed and untyped parameters in text and binary, named portals and
// DECLARE cursors, every COPY form of psycopg's and pgjdbc's COPY APIs;
// the rows written are on the standby afterwards.
func TestPgPathDrivers(t *testing.T) {
	havePostgres(t)
	for _, tg := range pgTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			t.Run("pgx", func(t *testing.T) { pgxBinary(t, tg) })
			t.Run("psycopg", func(t *testing.T) { runPsycopg(t, tg) })
			t.Run("pgjdbc", func(t *testing.T) { runPgjdbc(t, tg) })
		})
	}
}

func pgxBinary(t *testing.T, tg pgTarget) {
	ctx := context.Background()
	conn := connect(t, tg.dsn)
	if _, err := conn.Exec(ctx, `CREATE TABLE gx (id int PRIMARY KEY, t text, n numeric, ts timestamptz, b bytea, f bool, u uuid, big bigint)`); err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 25, 3, 4, 5, 123456000, time.UTC)
	u := [16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	num := pgtype.Numeric{Int: big.NewInt(123456789), Exp: -4, Valid: true}
	// Extended protocol, parameters in binary (pgx's default), prepared
	// explicitly and by the statement cache.
	if _, err := conn.Prepare(ctx, "ins", "INSERT INTO gx VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := conn.Exec(ctx, "ins", i, "text ünï", num, ts, []byte{0, 1, 2, 255}, i%2 == 0, u, int64(1)<<40+int64(i)); err != nil {
			t.Fatalf("prepared insert %d: %v", i, err)
		}
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec} {
		var (
			id   int32
			tx   string
			n    pgtype.Numeric
			gts  time.Time
			b    []byte
			f    bool
			gu   [16]byte
			big8 int64
		)
		err := conn.QueryRow(ctx, "SELECT id, t, n, ts, b, f, u, big FROM gx WHERE id = $1 AND f = $2 AND u = $3", mode, 2, true, u).Scan(&id, &tx, &n, &gts, &b, &f, &gu, &big8)
		if err != nil {
			t.Fatalf("mode %v: %v", mode, err)
		}
		nv, _ := n.Value()
		if id != 2 || tx != "text ünï" || nv != "12345.6789" || !gts.Equal(ts) || !bytes.Equal(b, []byte{0, 1, 2, 255}) || !f || gu != u || big8 != 1<<40+2 {
			t.Fatalf("mode %v: read back %v %q %v %v %v %v %v %v", mode, id, tx, nv, gts, b, f, gu, big8)
		}
	}
	// Untyped parameters: the server infers them (text and binary); and a
	// binary parameter of another type than the server would infer
	// (int8 for an int column, as psycopg and pgjdbc send them) is read
	// with the type the client gave in Parse.
	pc := conn.PgConn()
	four := binary.BigEndian.AppendUint32(nil, 41)
	for _, tc := range []struct {
		sql    string
		oid    uint32
		val    []byte
		format int16
		want   string
	}{
		{"SELECT $1::int + 1", 0, []byte("41"), 0, "42"},
		{"SELECT $1::int + 1", 0, four, 1, "42"},
		{"SELECT t FROM gx WHERE id = $1", 0, []byte("3"), 0, "text ünï"},
		{"SELECT t FROM gx WHERE id = $1", 0, binary.BigEndian.AppendUint32(nil, 3), 1, "text ünï"},
		{"SELECT t FROM gx WHERE id = $1", 20, binary.BigEndian.AppendUint64(nil, 3), 1, "text ünï"},
		{"SELECT t FROM gx WHERE id = $1", 21, binary.BigEndian.AppendUint16(nil, 3), 1, "text ünï"},
	} {
		var oids []uint32
		if tc.oid != 0 {
			oids = []uint32{tc.oid}
		}
		res := pc.ExecParams(ctx, tc.sql, [][]byte{tc.val}, oids, []int16{tc.format}, nil).Read()
		if res.Err != nil {
			t.Fatalf("%s (format %d, type OID %d): %v", tc.sql, tc.format, tc.oid, res.Err)
		}
		if len(res.Rows) != 1 || string(res.Rows[0][0]) != tc.want {
			t.Fatalf("%s (format %d): %q, want %q", tc.sql, tc.format, res.Rows, tc.want)
		}
	}
	// DECLARE / FETCH / CLOSE in a transaction block.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "DECLARE cur CURSOR FOR SELECT g FROM generate_series(1, 10) g"); err != nil {
		t.Fatal(err)
	}
	var got []int32
	for {
		rows, _ := tx.Query(ctx, "FETCH 4 FROM cur")
		vals, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			t.Fatalf("FETCH: %v", err)
		}
		if len(vals) == 0 {
			break
		}
		got = append(got, vals...)
	}
	if _, err := tx.Exec(ctx, "CLOSE cur"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[0] != 1 || got[9] != 10 {
		t.Fatalf("DECLARE/FETCH read %v, want 1..10", got)
	}
	// COPY errors are the server's own, never a message about another
	// back end.
	if _, err := pc.CopyFrom(ctx, strings.NewReader("1\n"), "COPY no_such_table FROM STDIN"); sqlState(err) != "42P01" || strings.Contains(err.Error(), "SQLite") {
		t.Fatalf("COPY into a missing table: %v, want the server's 42P01", err)
	}
	// Session settings reach the server (a SET the executor only noted
	// would leave the server's time zone at UTC).
	sc := connect(t, tg.dsn)
	var local, shown string
	if _, err := sc.Exec(ctx, "SET TimeZone = 'Asia/Tokyo'"); err != nil {
		t.Fatal(err)
	}
	if err := sc.QueryRow(ctx, "SELECT '2026-01-01 00:00:00+00'::timestamptz::text").Scan(&local); err != nil {
		t.Fatal(err)
	}
	if err := sc.QueryRow(ctx, "SHOW TimeZone").Scan(&shown); err != nil {
		t.Fatal(err)
	}
	if local != "2026-01-01 09:00:00+09" || shown != "Asia/Tokyo" {
		t.Fatalf("after SET TimeZone: %q, SHOW %q; want 2026-01-01 09:00:00+09, Asia/Tokyo", local, shown)
	}
	tg.sameOnStandby(t, "SELECT string_agg(concat_ws('|', id, t, n, ts, encode(b, 'hex'), f, u, big), ';' ORDER BY id) FROM gx")
	if tg.standby != "" {
		// On the standby a transaction block is read-only, as on
		// PostgreSQL's hot standby: reads work, a write gets 25006.
		sb := connect(t, tg.standby)
		tx, err := sb.Begin(ctx)
		if err != nil {
			t.Fatalf("BEGIN on the standby: %v", err)
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM gx WHERE id > $1", 0).Scan(&n); err != nil || n != 3 {
			t.Fatalf("read in a block on the standby: %d, %v", n, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("COMMIT of a read block on the standby: %v", err)
		}
		tx, err = sb.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO gx (id) VALUES (99)"); sqlState(err) != "25006" {
			t.Fatalf("write in a block on the standby: %v, want 25006", err)
		}
		tx.Rollback(ctx)
	}
}

// runPsycopg runs e2e/testdata/pgpath/pgpath.py (psycopg 3).
func runPsycopg(t *testing.T, tg pgTarget) {
	py, err := exec.LookPath("python3")
	needClient(t, "python3", err)
	needClient(t, "psycopg 3", exec.Command(py, "-c", "import psycopg").Run())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "testdata/pgpath/pgpath.py", tg.dsn).CombinedOutput()
	if err != nil {
		t.Fatalf("pgpath.py: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "pgpath.py: ok") {
		t.Fatalf("pgpath.py did not finish:\n%s", out)
	}
	for _, tbl := range []string{"py_types", "py_copy"} {
		tg.sameOnStandby(t, "SELECT count(*)::text || ':' || coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '') FROM "+tbl+" x")
	}
}

// compileJava compiles a Java program against the pgjdbc jar (fetched by
// scripts/deps.d/pgpath.sh) and returns the java command, the jar and the
// classes' directory.
func compileJava(t *testing.T, src string) (java, jar, dir string) {
	t.Helper()
	javac, err := exec.LookPath("javac")
	needClient(t, "javac", err)
	java, err = exec.LookPath("java")
	needClient(t, "java", err)
	home, _ := os.UserHomeDir()
	jars, _ := filepath.Glob(filepath.Join(home, ".m2/repository/org/postgresql/postgresql/*/postgresql-*.jar"))
	if len(jars) == 0 {
		needClient(t, "the pgjdbc jar", os.ErrNotExist)
	}
	jar = jars[len(jars)-1]
	dir = t.TempDir()
	if out, err := exec.Command(javac, "-cp", jar, "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return java, jar, dir
}

// runPgjdbc compiles e2e/testdata/pgpath/PgPath.java against the pgjdbc jar
// (fetched by scripts/deps.d/pgpath.sh) and runs it.
func runPgjdbc(t *testing.T, tg pgTarget) {
	java, jar, dir := compileJava(t, "testdata/pgpath/PgPath.java")
	// pgjdbc's URL: host and port from the DSN.
	url := "jdbc:postgresql://" + hostPort(tg.dsn) + "/tandem?user=tandem&password=secret&sslmode=disable"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, java, "-cp", jar+string(os.PathListSeparator)+dir, "PgPath", url).CombinedOutput()
	if err != nil {
		t.Fatalf("PgPath.java: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PgPath: ok") {
		t.Fatalf("PgPath.java did not finish:\n%s", out)
	}
	for _, tbl := range []string{"j_types", "j_copy"} {
		tg.sameOnStandby(t, "SELECT count(*)::text || ':' || coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '') FROM "+tbl+" x")
	}
}

// TestPgPathSequencesAfterPromote: serial, bigserial and identity tables
// keep inserting on the PostgreSQL pair after the primary is killed and the
// standby promoted (the standby's sequences are fenced past the rows it
// applied).
func TestPgPathSequencesAfterPromote(t *testing.T) {
	h := writeHSOn(t, "postgres", "2-safe-visible", "relaxed", "")
	h.start("n1")
	h.start("n2")
	ctx := context.Background()
	p := connect(t, h.dsn(h.nodes["n1"]))
	tables := []string{"sq_serial", "sq_bigserial", "sq_identity", "sq_default"}
	for _, q := range []string{
		"CREATE TABLE sq_serial (id serial PRIMARY KEY, v text)",
		"CREATE TABLE sq_bigserial (id bigserial PRIMARY KEY, v text)",
		"CREATE TABLE sq_identity (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
		"CREATE SEQUENCE sq_free START 100",
		"CREATE TABLE sq_default (id bigint PRIMARY KEY DEFAULT nextval('sq_free'), v text)",
	} {
		if _, err := p.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	maxOf := map[string]int64{}
	for _, tbl := range tables {
		for i := 0; i < 5; i++ {
			if err := p.QueryRow(ctx, "INSERT INTO "+tbl+" (v) VALUES ($1) RETURNING id", "before").Scan(new(int64)); err != nil {
				t.Fatalf("insert into %s: %v", tbl, err)
			}
		}
		var m int64
		if err := p.QueryRow(ctx, "SELECT max(id) FROM "+tbl).Scan(&m); err != nil {
			t.Fatal(err)
		}
		maxOf[tbl] = m
		waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM "+tbl, 5)
	}
	p.Close(ctx)
	h.kill("n1")
	out := h.tandem("promote", "n2")
	t.Logf("promote: %s", strings.TrimSpace(out))
	s := connect(t, h.dsn(h.nodes["n2"]))
	for _, tbl := range tables {
		for i := 0; i < 3; i++ {
			var id int64
			if err := s.QueryRow(ctx, "INSERT INTO "+tbl+" (v) VALUES ($1) RETURNING id", "after").Scan(&id); err != nil {
				t.Fatalf("%s: insert %d after the promote: %v", tbl, i+1, err)
			}
			if id <= maxOf[tbl] {
				t.Fatalf("%s: the new primary drew id %d, at or below the replicated maximum %d", tbl, id, maxOf[tbl])
			}
		}
	}
}

// TestPgPairDeferredConstraint: on the PostgreSQL pair a deferred
// constraint is checked before the writeset is logged, so a transaction
// that violates it fails at COMMIT with the constraint's SQLSTATE and
// reaches neither node (it used to fail on the primary after its
// writeset had gone to the standby, which then held a row the primary
// lacked).
func TestPgPairDeferredConstraint(t *testing.T) {
	h := writeHSOn(t, "postgres", "2-safe-visible", "relaxed", "")
	h.start("n1")
	h.start("n2")
	ctx := context.Background()
	p := connect(t, h.dsn(h.nodes["n1"]))
	defer p.Close(ctx)
	for _, q := range []string{
		"CREATE TABLE dc_parent (id int PRIMARY KEY)",
		"CREATE TABLE dc_child (id int PRIMARY KEY, parent int REFERENCES dc_parent DEFERRABLE INITIALLY DEFERRED)",
		"INSERT INTO dc_parent VALUES (1)",
	} {
		if _, err := p.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Violating: the child's parent never exists.
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO dc_child VALUES (10, 99)"); err != nil {
		t.Fatalf("a deferred violation must not fail at the INSERT: %v", err)
	}
	err = tx.Commit(ctx)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23503" {
		t.Fatalf("COMMIT of a deferred foreign-key violation: %v, want SQLSTATE 23503", err)
	}
	// Satisfied at COMMIT: the parent arrives after the child.
	tx, err = p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"INSERT INTO dc_child VALUES (11, 2)", "INSERT INTO dc_parent VALUES (2)"} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("COMMIT of a transaction that satisfies its deferred constraint: %v", err)
	}
	waitRows(t, h.dsn(h.nodes["n2"]), "SELECT count(*) FROM dc_child", 1)
	for _, node := range []string{"n1", "n2"} {
		c := connect(t, h.dsn(h.nodes[node]))
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM dc_child WHERE id = 10").Scan(&n); err != nil {
			t.Fatal(err)
		}
		c.Close(ctx)
		if n != 0 {
			t.Fatalf("%s holds the child row whose COMMIT failed", node)
		}
	}
}
