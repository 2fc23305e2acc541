package pgwire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestSplitStatements(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1; SELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"  ;  ; ", nil},
		{"SELECT 'a;b'; SELECT \"x;y\"", []string{"SELECT 'a;b'", "SELECT \"x;y\""}},
		{"SELECT 'it''s; fine'; SELECT 2", []string{"SELECT 'it''s; fine'", "SELECT 2"}},
		{"SELECT 1 -- c; not split\n; SELECT 2", []string{"SELECT 1 -- c; not split", "SELECT 2"}},
		{"SELECT /* a ; b */ 1; SELECT 2", []string{"SELECT /* a ; b */ 1", "SELECT 2"}},
		{"SELECT $$a;b$$; SELECT $tag$x;$tag$", []string{"SELECT $$a;b$$", "SELECT $tag$x;$tag$"}},
		{"SELECT $1; SELECT $2", []string{"SELECT $1", "SELECT $2"}},
		{"SELECT $d2$ a;b $d2$; SELECT $func_9f$x;$func_9f$", []string{"SELECT $d2$ a;b $d2$", "SELECT $func_9f$x;$func_9f$"}}, // a tag's digits (Sequelize)
		{"CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (1); UPDATE x SET y = CASE WHEN 1 THEN 2 END; END; SELECT 1",
			[]string{"CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (1); UPDATE x SET y = CASE WHEN 1 THEN 2 END; END", "SELECT 1"}},
		{"BEGIN; UPDATE t SET a = 1; END;", []string{"BEGIN", "UPDATE t SET a = 1", "END"}},
	}
	for _, c := range cases {
		if got := SplitStatements(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitStatements(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestKeywords(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"  select * from t", []string{"SELECT", "FROM"}},
		{"-- c\n/* d */ (SELECT 1)", []string{"SELECT"}},
		{"begin read only", []string{"BEGIN", "READ", "ONLY"}},
		{"", nil},
	}
	for _, c := range cases {
		got := Keywords(c.in, 3)
		if c.in == "  select * from t" {
			got = Keywords(c.in, 1)
			c.want = c.want[:1]
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Keywords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFramer(t *testing.T) {
	var in bytes.Buffer
	in.Write([]byte{'Q', 0, 0, 0, 8, 'a', 'b', 'c', 0})
	in.Write([]byte{'S', 0, 0, 0, 4})
	big := make([]byte, 40000)
	in.Write([]byte{'d', 0, 0, 0x9c, 0x44}) // 40004
	in.Write(big)
	in.Write([]byte{'X', 0, 0, 0, 3}) // bad length
	f := NewFramer(&in, nil, 1<<20)
	typ, fr, err := f.ReadFrame()
	if err != nil || typ != 'Q' || string(fr[5:]) != "abc\x00" {
		t.Fatalf("first frame %q %q %v", typ, fr, err)
	}
	if typ, fr, err = f.ReadFrame(); err != nil || typ != 'S' || len(fr) != 5 {
		t.Fatalf("sync %q %v", typ, err)
	}
	if typ, fr, err = f.ReadFrame(); err != nil || typ != 'd' || len(fr) != 40005 {
		t.Fatalf("big frame %q %d %v", typ, len(fr), err)
	}
	if _, _, err = f.ReadFrame(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad length: %v", err)
	}
	small := NewFramer(bytes.NewReader([]byte{'d', 0, 0, 0x9c, 0x44}), nil, 1000)
	if _, _, err := small.ReadFrame(); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("cap: %v", err)
	}
}

func TestDecodeParam(t *testing.T) {
	cases := []struct {
		oid    uint32
		format int16
		src    []byte
		want   any
		bad    bool
	}{
		{0, 0, []byte("42"), int64(42), false},
		{0, 0, []byte("042"), "042", false},
		{OIDText, 0, []byte("42"), "42", false},
		{OIDInt4, 0, []byte("x"), nil, true},
		{OIDInt8, 1, []byte{0, 0, 0, 0, 0, 0, 1, 0}, int64(256), false},
		{OIDInt8, 1, []byte{1}, nil, true},
		{OIDBytea, 0, []byte(`\x0aff`), []byte{10, 255}, false},
		{OIDBool, 0, []byte("true"), int64(1), false},
		{OIDFloat8, 0, []byte("1.5"), 1.5, false},
		{0, 0, nil, nil, false},
		{OIDText, 7, []byte("x"), nil, true},
	}
	for _, c := range cases {
		got, err := decodeParam(c.oid, c.format, c.src, time.UTC)
		if (err != nil) != c.bad || (!c.bad && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("decodeParam(%d,%d,%q) = %#v, %v", c.oid, c.format, c.src, got, err)
		}
	}
}

func TestEmptyStatements(t *testing.T) {
	for _, s := range []string{"", "  ", "---0", "-- x\n/* y */", "/* unterminated"} {
		if !IsEmptyStatement(s) || len(SplitStatements(s)) != 0 {
			t.Errorf("%q should be empty", s)
		}
	}
	if IsEmptyStatement("-- c\nSELECT 1") {
		t.Error("statement after a comment is not empty")
	}
}

// Binary values asyncpg sends and asks for (it uses the binary format for
// every type it knows): arrays and intervals through pgtype's codecs,
// enums as their labels, "char" as one byte, the catalogs' int2vector and
// oidvector as arrays from 0.
func TestBinaryValues(t *testing.T) {
	int4Array := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 3, 0, 0, 0, 1,
		0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 3}
	params := []struct {
		oid  uint32
		src  []byte
		want any
	}{
		{1007, int4Array, "{1,2,3}"}, // was Go's "[1 2 3]"
		{FirstEnumOID + 3, []byte("42"), "42"},
		{18, []byte{0}, ""},
		{18, []byte("a"), "a"},
		{1186, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, "1 day 00:00:00"}, // read into the column as PostgreSQL prints it
	}
	for _, c := range params {
		got, err := decodeParam(c.oid, 1, c.src, time.UTC)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("decodeParam(%d, binary, %v) = %#v, %v; want %#v", c.oid, c.src, got, err, c.want)
		}
	}
	results := []struct {
		oid  uint32
		v    any
		want []byte
	}{
		{1007, "{1,2,3}", int4Array},
		{FirstEnumOID, "happy", []byte("happy")},
		{18, "", []byte{0}},
		{18, "r", []byte("r")},
		{22, "1 3", []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 21, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0, 0, 0, 2, 0, 3}},
		{30, "", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 26}},
		{1186, "1 day", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}},
	}
	for _, c := range results {
		got, err := appendValue([]byte("prefix"), c.oid, 1, c.v, time.UTC)
		if err != nil || string(got) != "prefix"+string(c.want) {
			t.Errorf("appendValue(%d, binary, %q) = %v, %v; want %v", c.oid, c.v, got, err, c.want)
		}
	}
	// A value with no binary form is an error, never a short row.
	if got, err := appendValue([]byte("prefix"), 22, 1, "1 x", time.UTC); err == nil {
		t.Errorf("appendValue(int2vector \"1 x\") = %v, want an error", got)
	}
}
