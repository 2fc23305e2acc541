package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestImplicitTransactionBetweenSyncs: as in PostgreSQL, the statements of
// one extended-protocol batch (no BEGIN, one Sync) form one transaction: an
// error rolls every statement of the batch back, and a batch without error
// is committed at Sync. On the executor paths: SQLite standalone, and the
// hot-standby pairs on both back ends (through the router; the rows reach
// the standby as one writeset).
func TestImplicitTransactionBetweenSyncs(t *testing.T) {
	for _, target := range []string{"sqlite", "sqlite-hot-standby", "postgres-hot-standby"} {
		t.Run(target, func(t *testing.T) {
			ctx := context.Background()
			var dsn, standby string
			if target == "sqlite" {
				dsn = startCluster(t, clusterSpec{backend: "sqlite"}).DSN
			} else {
				h := writeHSOn(t, strings.TrimSuffix(target, "-hot-standby"), "2-safe-visible", "relaxed", "")
				h.start("n1")
				h.start("n2")
				h.start("router")
				dsn, standby = h.dsn(h.router), h.dsn(h.nodes["n2"])
			}
			conn := connect(t, dsn)
			if _, err := conn.Exec(ctx, "CREATE TABLE itx (id INTEGER PRIMARY KEY, v TEXT)"); err != nil {
				t.Fatal(err)
			}
			// A failing batch: the third insert violates the key.
			b := &pgx.Batch{}
			b.Queue("INSERT INTO itx VALUES ($1, $2)", 1, "a")
			b.Queue("INSERT INTO itx VALUES ($1, $2)", 2, "b")
			b.Queue("INSERT INTO itx VALUES ($1, $2)", 1, "dup")
			err := conn.SendBatch(ctx, b).Close()
			if sqlState(err) != "23505" {
				t.Fatalf("failing batch: got %v, want 23505", err)
			}
			if tx := conn.PgConn().TxStatus(); tx != 'I' {
				t.Fatalf("after the failed batch the session is in state %q, want idle", tx)
			}
			other := connect(t, dsn)
			var n int
			if err := other.QueryRow(ctx, "SELECT count(*) FROM itx").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Fatalf("%d rows of a batch that failed remain, want 0 (the batch is one transaction)", n)
			}
			// A batch that begins with a read and fails at a later read
			// rolls back the write between them.
			b = &pgx.Batch{}
			b.Queue("SELECT count(*) FROM itx")
			b.Queue("INSERT INTO itx VALUES ($1, $2)", 10, "x")
			b.Queue("SELECT * FROM itx_missing")
			if err := conn.SendBatch(ctx, b).Close(); sqlState(err) == "" {
				t.Fatalf("batch with a failing read: got %v, want an error from the server", err)
			}
			if err := other.QueryRow(ctx, "SELECT count(*) FROM itx").Scan(&n); err != nil || n != 0 {
				t.Fatalf("after a batch that failed: %d rows (%v), want 0", n, err)
			}
			// A batch without error commits at Sync, visible to another session.
			b = &pgx.Batch{}
			for i := 1; i <= 3; i++ {
				b.Queue("INSERT INTO itx VALUES ($1, $2)", i, fmt.Sprint("v", i))
			}
			b.Queue("UPDATE itx SET v = v || '!' WHERE id = $1", 2)
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				t.Fatal(err)
			}
			if tx := conn.PgConn().TxStatus(); tx != 'I' {
				t.Fatalf("after the batch the session is in state %q, want idle (committed at Sync)", tx)
			}
			var vs string
			if err := other.QueryRow(ctx, "SELECT string_agg(v, ',' ORDER BY id) FROM itx").Scan(&vs); err != nil {
				// SQLite's group_concat spelling when string_agg is not there.
				if err := other.QueryRow(ctx, "SELECT group_concat(v, ',') FROM (SELECT v FROM itx ORDER BY id)").Scan(&vs); err != nil {
					t.Fatal(err)
				}
			}
			if vs != "v1,v2!,v3" {
				t.Fatalf("after the committed batch: %q, want v1,v2!,v3", vs)
			}
			if standby != "" {
				waitRows(t, standby, "SELECT count(*) FROM itx", 3)
				// A batch of reads on the standby (no transaction needed).
				sc := connect(t, standby)
				b = &pgx.Batch{}
				b.Queue("SELECT count(*) FROM itx")
				b.Queue("SELECT max(id) FROM itx")
				if err := sc.SendBatch(ctx, b).Close(); err != nil {
					t.Fatalf("a batch of reads on the standby: %v", err)
				}
			}
		})
	}
}

// TestSQLiteCopy: COPY TO STDOUT (table, column list, query; text, CSV and
// binary) and binary COPY FROM STDIN on the SQLite back end, compared with
// the rows inserted.
func TestSQLiteCopy(t *testing.T) {
	c := startCluster(t, clusterSpec{backend: "sqlite"})
	ctx := context.Background()
	conn := connect(t, c.DSN)
	if _, err := conn.Exec(ctx, "CREATE TABLE cp (id INTEGER PRIMARY KEY, name TEXT, n BIGINT)"); err != nil {
		t.Fatal(err)
	}
	rows := [][]any{{int64(1), "plain", int64(10)}, {int64(2), "tab\there, \"quoted\"", nil}, {int64(3), "line\nbreak\\", int64(-7)}}
	// pgx's CopyFrom sends binary COPY data.
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"cp"}, []string{"id", "name", "n"}, pgx.CopyFromRows(rows))
	if err != nil {
		t.Fatalf("binary COPY FROM STDIN: %v", err)
	}
	if n != int64(len(rows)) {
		t.Fatalf("binary COPY FROM loaded %d rows, want %d", n, len(rows))
	}
	var text, csvOut strings.Builder
	for _, r := range rows {
		var tf, cf []string
		for _, v := range r {
			switch x := v.(type) {
			case nil:
				tf, cf = append(tf, `\N`), append(cf, "")
			case string:
				tf = append(tf, strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`).Replace(x))
				if strings.ContainsAny(x, ",\"\n\r") {
					x = `"` + strings.ReplaceAll(x, `"`, `""`) + `"`
				}
				cf = append(cf, x)
			default:
				tf, cf = append(tf, fmt.Sprint(x)), append(cf, fmt.Sprint(x))
			}
		}
		text.WriteString(strings.Join(tf, "\t") + "\n")
		csvOut.WriteString(strings.Join(cf, ",") + "\n")
	}
	for _, tc := range []struct {
		sql, want string
		rows      int
	}{
		{"COPY cp TO STDOUT", text.String(), len(rows)},
		{"COPY cp (id, name, n) TO STDOUT WITH (FORMAT csv)", csvOut.String(), len(rows)},
		{"COPY (SELECT id, name, n FROM cp ORDER BY id) TO STDOUT CSV HEADER", "id,name,n\n" + csvOut.String(), len(rows)},
		{"COPY (SELECT id FROM cp WHERE id > 1 ORDER BY id) TO STDOUT", "2\n3\n", 2},
	} {
		var buf bytes.Buffer
		tag, err := conn.PgConn().CopyTo(ctx, &buf, tc.sql)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if buf.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.sql, buf.String(), tc.want)
		}
		if want := fmt.Sprintf("COPY %d", tc.rows); tag.String() != want {
			t.Errorf("%s: tag %q, want %q", tc.sql, tag, want)
		}
	}
	// Binary COPY TO: parse the stream and compare with the rows.
	var buf bytes.Buffer
	if _, err := conn.PgConn().CopyTo(ctx, &buf, "COPY cp (id, name) TO STDOUT (FORMAT binary)"); err != nil {
		t.Fatalf("binary COPY TO: %v", err)
	}
	got := parseBinaryCopy(t, buf.Bytes())
	if len(got) != len(rows) {
		t.Fatalf("binary COPY TO: %d rows, want %d", len(got), len(rows))
	}
	for i, r := range got {
		var id int64
		switch len(r[0]) { // the column's PostgreSQL type: integer (4 bytes) or bigint (8)
		case 4:
			id = int64(int32(binary.BigEndian.Uint32(r[0])))
		case 8:
			id = int64(binary.BigEndian.Uint64(r[0]))
		default:
			t.Fatalf("binary COPY TO row %d: id field of %d bytes", i, len(r[0]))
		}
		if id != rows[i][0].(int64) || string(r[1]) != rows[i][1].(string) {
			t.Errorf("binary COPY TO row %d: id %d name %q, want %v", i, id, r[1], rows[i])
		}
	}
	// COPY into a serial table without its id: the ids come from the
	// column's sequence (after a row with an explicit id), as in PostgreSQL.
	if _, err := conn.Exec(ctx, "CREATE TABLE cps (id serial PRIMARY KEY, v text); INSERT INTO cps VALUES (10, 'explicit')"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"cps"}, []string{"v"}, pgx.CopyFromRows([][]any{{"a"}, {"b"}})); err != nil {
		t.Fatalf("COPY FROM into a serial table: %v", err)
	}
	var ids string
	if err := conn.QueryRow(ctx, "SELECT string_agg(id::text, ',' ORDER BY id) || ' ' || nextval('cps_id_seq') FROM cps").Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if ids != "1,2,10 3" {
		t.Errorf("ids after COPY into a serial table, and the next value: %q, want %q", ids, "1,2,10 3")
	}
	// A COPY form SQLite cannot do names the SQLite back end and says 0A000.
	_, err = conn.PgConn().CopyTo(ctx, &buf, "COPY cp TO '/tmp/x'")
	if sqlState(err) != "0A000" || !strings.Contains(err.Error(), "SQLite") {
		t.Errorf("COPY TO a file on SQLite: %v, want 0A000 naming the SQLite back end", err)
	}
}

// parseBinaryCopy splits a binary COPY stream into rows of fields.
func parseBinaryCopy(t *testing.T, b []byte) [][][]byte {
	t.Helper()
	sig := []byte("PGCOPY\n\377\r\n\x00")
	if !bytes.HasPrefix(b, sig) {
		t.Fatalf("binary COPY: no signature in %q", b)
	}
	b = b[len(sig)+4:]
	ext := binary.BigEndian.Uint32(b)
	b = b[4+ext:]
	var rows [][][]byte
	for {
		n := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		if n == -1 {
			return rows
		}
		var row [][]byte
		for i := 0; i < int(n); i++ {
			l := int32(binary.BigEndian.Uint32(b))
			b = b[4:]
			if l < 0 {
				row = append(row, nil)
				continue
			}
			row = append(row, b[:l])
			b = b[l:]
		}
		rows = append(rows, row)
	}
}
