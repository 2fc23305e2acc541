package pgwire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

func TestExecuteBeforeSync(t *testing.T) {
	enc := func(msgs ...pgproto3.FrontendMessage) []byte {
		var b []byte
		for _, m := range msgs {
			var err error
			if b, err = m.Encode(b); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	bind, exec, sync, desc := &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}, &pgproto3.Describe{ObjectType: 'P'}
	for _, tc := range []struct {
		name string
		in   []byte
		want bool
	}{
		{"nothing buffered", nil, false},
		{"sync next", enc(sync), false},
		{"another statement", enc(bind, desc, exec, sync), true},
		{"sync before the next batch", enc(sync, bind, exec, sync), false},
		{"a bind begun", enc(bind)[:6], true},
		{"a header cut short", enc(bind)[:3], false},
		{"a whole bind, execute not yet here", enc(bind), true},
		{"close then sync", enc(&pgproto3.Close{ObjectType: 'P'}, sync), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFramer(bytes.NewReader(tc.in), nil, 1<<20)
			if len(tc.in) > 0 {
				_ = f.fill(len(tc.in))
			}
			if got := f.ExecuteBeforeSync(); got != tc.want {
				t.Fatalf("ExecuteBeforeSync = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseCopyOptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want copyOptions
	}{
		{"", copyOptions{delim: '\t', null: `\N`, quote: '"'}},
		{"WITH (FORMAT csv, HEADER true)", copyOptions{csv: true, header: true, delim: ',', null: "", quote: '"'}},
		{"CSV HEADER DELIMITER ';' NULL 'NULL' QUOTE '''", copyOptions{csv: true, header: true, delim: ';', null: "NULL", quote: '\''}},
		{"(FORMAT csv, HEADER false)", copyOptions{csv: true, delim: ',', quote: '"'}},
		{"(FORMAT binary)", copyOptions{binary: true, delim: '\t', null: `\N`, quote: '"'}},
		{"BINARY", copyOptions{binary: true, delim: '\t', null: `\N`, quote: '"'}},
		{"DELIMITER AS '|'", copyOptions{delim: '|', null: `\N`, quote: '"'}},
	} {
		if got := parseCopyOptions(tc.in); got != tc.want {
			t.Errorf("%q: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestCopyFieldEncoding(t *testing.T) {
	csv := copyOptions{csv: true, delim: ',', quote: '"'}
	for _, tc := range []struct{ in, text, csv string }{
		{"plain", "plain", "plain"},
		{"a,b", "a,b", `"a,b"`},
		{"tab\there", `tab\there`, "tab\there"},
		{"say \"hi\"", `say "hi"`, `"say ""hi"""`},
		{"two\nlines\r", `two\nlines\r`, "\"two\nlines\r\""},
		{`back\slash`, `back\\slash`, `back\slash`},
		{"", "", `""`},
		{`\.`, `\\.`, `"\."`},
	} {
		if got := string(appendCopyText(nil, []byte(tc.in), '\t')); got != tc.text {
			t.Errorf("text %q: got %q, want %q", tc.in, got, tc.text)
		}
		if got := string(appendCSVField(nil, []byte(tc.in), csv)); got != tc.csv {
			t.Errorf("csv %q: got %q, want %q", tc.in, got, tc.csv)
		}
	}
}

func TestBinaryCopyReader(t *testing.T) {
	stream := func(trailer bool, rows ...[][]byte) []byte {
		b := append([]byte{}, copyBinarySignature...)
		b = binary.BigEndian.AppendUint32(b, 0)
		b = binary.BigEndian.AppendUint32(b, 0)
		for _, r := range rows {
			b = binary.BigEndian.AppendUint16(b, uint16(len(r)))
			for _, f := range r {
				if f == nil {
					b = binary.BigEndian.AppendUint32(b, 0xffffffff)
					continue
				}
				b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
				b = append(b, f...)
			}
		}
		if trailer {
			b = binary.BigEndian.AppendUint16(b, 0xffff)
		}
		return b
	}
	oids := []uint32{OIDInt4, OIDText, OIDBool}
	row1 := [][]byte{binary.BigEndian.AppendUint32(nil, 7), []byte("seven"), {1}}
	row2 := [][]byte{binary.BigEndian.AppendUint32(nil, 8), nil, {0}}
	for _, tc := range []struct {
		name    string
		in      []byte
		want    [][]string // "<nil>" for NULL
		wantErr string
	}{
		{"with trailer", stream(true, row1, row2), [][]string{{"7", "seven", "t"}, {"8", "<nil>", "f"}}, ""},
		{"without trailer", stream(false, row1), [][]string{{"7", "seven", "t"}}, ""},
		{"bad signature", []byte("PGCOPY\nxxxxxxxxxxxxxxx"), nil, "22P04"},
		{"wrong field count", stream(true, [][]byte{{0, 0, 0, 1}}), nil, "22P04"},
		{"cut inside a row", stream(false, row1)[:25], nil, "22P04"},
		{"bad int4 length", stream(true, [][]byte{{1, 2}, []byte("x"), {1}}), nil, "22P03"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &binaryCopyReader{r: bytes.NewReader(tc.in), oids: oids}
			var got [][]string
			for {
				row, ok, err := r.next()
				if err != nil {
					pe, _ := err.(*Error)
					if tc.wantErr == "" || pe == nil || pe.Code != tc.wantErr {
						t.Fatalf("error %v, want %q", err, tc.wantErr)
					}
					return
				}
				if !ok {
					break
				}
				var s []string
				for _, v := range row {
					if v == nil {
						s = append(s, "<nil>")
					} else {
						s = append(s, *v)
					}
				}
				got = append(got, s)
			}
			if tc.wantErr != "" {
				t.Fatalf("no error, want %s", tc.wantErr)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("rows %v, want %v", got, tc.want)
			}
			for i := range got {
				for j := range got[i] {
					if got[i][j] != tc.want[i][j] {
						t.Fatalf("rows %v, want %v", got, tc.want)
					}
				}
			}
		})
	}
}

func TestReadOnlySQL(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"SELECT 1", true},
		{"  select * from t where id = $1", true},
		{"VALUES (1)", true},
		{"WITH a AS (SELECT 1) SELECT * FROM a", true},
		{"SHOW search_path", true},
		{"SELECT * INTO t2 FROM t", false},
		{"SELECT * FROM t FOR UPDATE", false},
		{"SELECT nextval('s')", false},
		{"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", false},
		{"INSERT INTO t VALUES (1)", false},
		{"UPDATE t SET v = 1", false},
		{"CREATE TABLE x (id int)", false},
		{"", false},
		{"SELECT * FROM t FOR SHARE", false},
		{"select * from t for key share", false},
		{"SELECT * FROM t FOR NO KEY UPDATE", false},
		{"SELECT setval('s', 3)", false},
		{"SELECT * FROM updates, inserted_rows, into_x, t_delete", true},
		{"SELECT share FROM t", true},
		{"SELECT 'a' AS key, share FROM t", true},
		{"select Insert_Date from t", true},
	} {
		if got := readOnlySQL(tc.sql); got != tc.want {
			t.Errorf("readOnlySQL(%q) = %v, want %v", tc.sql, got, tc.want)
		}
	}
}

func TestCopyRelation(t *testing.T) {
	for in, want := range map[string]string{`public.a`: "a", `a`: "a", `Orders`: "orders", `public."Users"`: "Users", `"My.Table"`: "My.Table", `"a""b"`: `a"b`} {
		if got := copyRelation(in); got != want {
			t.Errorf("copyRelation(%s) = %q, want %q", in, got, want)
		}
	}
}
