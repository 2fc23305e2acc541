package writeset

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestEncodeRoundTrip(t *testing.T) {
	allKinds := Row{
		Table:   "kinds",
		Op:      OpInsert,
		KeyCols: []string{"id"},
		Key:     []Value{Text("k\x00ey ✓")},
		Cols:    []string{"id", "n", "i_min", "i_max", "f", "f_nan", "f_neg0", "t", "b", "b_empty", "yes", "no"},
		After: []Value{Text("k\x00ey ✓"), Null(), Int(math.MinInt64), Int(math.MaxInt64), Float(-1e300),
			Float(math.NaN()), Float(math.Copysign(0, -1)), Text(strings.Repeat("é", 300)),
			Bytes(bytes.Repeat([]byte{0xff, 0}, 200)), Bytes(nil), Bool(true), Bool(false)},
	}
	tests := []struct {
		name string
		ws   *Writeset
	}{
		{"dml", dmlWriteset()},
		{"ddl", ddlWriteset()},
		{"ddl without rows", &Writeset{GSN: 2, DDL: "DROP TABLE x"}},
		{"empty", &Writeset{}},
		{"max header", &Writeset{GSN: math.MaxUint64, Epoch: math.MaxUint64, Origin: strings.Repeat("n", 1000)}},
		{"all kinds", &Writeset{GSN: 5, Epoch: 1, Origin: "x", Rows: []Row{allKinds}}},
		{"many rows same table", &Writeset{GSN: 6, Rows: []Row{updateRow(), updateRow(), updateRow()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.ws.Validate(); err != nil {
				t.Fatalf("fixture invalid: %v", err)
			}
			b := AppendEncode(nil, tt.ws)
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.ws) {
				t.Fatalf("round trip mismatch:\n got %+v\nwant %+v", got, tt.ws)
			}
			if again := Encode(got); !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
			}
			// Appending keeps the prefix.
			prefix := []byte("prefix")
			withPrefix := AppendEncode(prefix, tt.ws)
			if !bytes.HasPrefix(withPrefix, []byte("prefix")) || !bytes.Equal(withPrefix[6:], b) {
				t.Fatal("AppendEncode did not append")
			}
		})
	}
}

// TestSessionRoundTrip: a writeset with a session tag is version 2 and
// keeps its tag; one without stays version 1.
func TestSessionRoundTrip(t *testing.T) {
	ws := &Writeset{GSN: 7, Epoch: 1, Origin: "n1", Session: "a1b2c3", Rows: []Row{{Table: "t", Op: OpDelete, KeyCols: []string{"id"}, Key: []Value{Int(2)}}}}
	b := Encode(ws)
	if b[0] != 2 {
		t.Fatalf("version %d, want 2", b[0])
	}
	got, err := Decode(b)
	if err != nil || got.Session != "a1b2c3" || got.GSN != 7 {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	ws.Session = ""
	if b := Encode(ws); b[0] != 1 {
		t.Fatalf("without a session: version %d, want 1", b[0])
	}
}

// TestEncodeGolden pins the version-1 layout: changing it needs a new
// Version, because logs written by older builds must stay readable.
func TestEncodeGolden(t *testing.T) {
	ws := &Writeset{
		GSN: 300, Epoch: 2, Origin: "n1",
		Rows: []Row{{
			Table: "t", Op: OpUpdate, KeyCols: []string{"id"}, Key: []Value{Int(-1)},
			Cols: []string{"id", "v"}, After: []Value{Int(-1), Bool(true)},
		}, {
			Table: "t", Op: OpDelete, KeyCols: []string{"id"}, Key: []Value{Int(2)},
		}},
	}
	const want = "01" + // version
		"ac02" + "02" + "026e31" + "00" + // gsn 300, epoch 2, origin "n1", ddl ""
		"02" + // two rows
		"0174" + "02" + "01026964" + "010101" + "0202696401 76" + "02010105 01" +
		"0174" + "03" + "01026964" + "010104" + "00" + "00"
	got := hex.EncodeToString(Encode(ws))
	if w := strings.ReplaceAll(want, " ", ""); got != w {
		t.Fatalf("encoding changed:\n got %s\nwant %s", got, w)
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	b := Encode(dmlWriteset())
	ws, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0xAA
	}
	if !reflect.DeepEqual(ws, dmlWriteset()) {
		t.Fatal("decoded writeset changed when the input buffer was overwritten")
	}
}

func TestDecodeTruncated(t *testing.T) {
	for _, ws := range []*Writeset{dmlWriteset(), ddlWriteset()} {
		b := Encode(ws)
		for n := range len(b) {
			_, err := Decode(b[:n])
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode(first %d of %d bytes) = %v, want ErrCorrupt", n, len(b), err)
			}
		}
		_, err := Decode(append(b, 0))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "trailing") {
			t.Fatalf("Decode with a trailing byte = %v, want ErrCorrupt (trailing)", err)
		}
	}
}

// enc builds hand-made encodings for malformed-input cases.
type enc []byte

func (e enc) u(x uint64) enc { return append(e, uvarint(x)...) }
func (e enc) s(x string) enc { return append(e.u(uint64(len(x))), x...) }
func (e enc) raw(b ...byte) enc {
	return append(e, b...)
}

func uvarint(x uint64) []byte {
	var b []byte
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}

// head is a valid writeset header (version, gsn 1, epoch 1, origin "o",
// no DDL) up to the row count.
func head() enc { return enc{1}.u(1).u(1).s("o").s("") }

// goodRow is a valid delete row of table "t" keyed by id = 1.
func goodRow(e enc) enc {
	return e.s("t").raw(byte(OpDelete)).u(1).s("id").u(1).raw(byte(KindInt), 2).u(0).u(0)
}

func TestDecodeMalformed(t *testing.T) {
	if _, err := Decode(goodRow(head().u(1))); err != nil {
		t.Fatalf("the base case must decode: %v", err)
	}
	tests := []struct {
		name    string
		in      []byte
		wantErr error
		mention string
	}{
		{"empty", nil, ErrCorrupt, "empty"},
		{"version 0", []byte{0}, ErrVersion, "version 0"},
		{"version 3", append([]byte{3}, goodRow(head().u(1))[1:]...), ErrVersion, "version 3"},
		{"version 2 without its session", append([]byte{2}, goodRow(head().u(1))[1:]...), ErrCorrupt, "session"},
		{"version 2 with an empty session", append(append([]byte{2}, goodRow(head().u(1))[1:]...), 0), ErrCorrupt, "empty session"},
		{"gsn non-canonical", enc{1}.raw(0x81, 0x00), ErrCorrupt, "non-canonical"},
		{"gsn overflow", enc{1}.raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), ErrCorrupt, "overflows"},
		{"origin too long", enc{1}.u(1).u(1).u(1000).raw('x'), ErrCorrupt, "length 1000 exceeds"},
		{"huge row count", head().u(1 << 60), ErrCorrupt, "exceeds"},
		{"huge key count", head().u(1).s("t").raw(byte(OpDelete)).u(1 << 40), ErrCorrupt, "exceeds"},
		{"unknown kind", head().u(1).s("t").raw(byte(OpDelete)).u(1).s("id").u(1).raw(9), ErrCorrupt, "unknown value kind 9"},
		{"bad bool", head().u(1).s("t").raw(byte(OpDelete)).u(1).s("id").u(1).raw(byte(KindBool), 2), ErrCorrupt, "bool byte 2"},
		{"truncated float", head().u(1).s("t").raw(byte(OpDelete)).u(1).s("id").u(1).raw(byte(KindFloat), 1, 2), ErrCorrupt, "truncated float"},
		{"int non-canonical", head().u(1).s("t").raw(byte(OpDelete)).u(1).s("id").u(1).raw(byte(KindInt), 0x82, 0x00).u(0).u(0), ErrCorrupt, "non-canonical"},
		{"bad op", head().u(1).s("t").raw(0).u(1).s("id").u(1).raw(byte(KindInt), 2).u(0).u(0), ErrInvalid, "bad operation"},
		{"null key", head().u(1).s("t").raw(byte(OpDelete)).u(1).s("id").u(1).raw(byte(KindNull)).u(0).u(0), ErrInvalid, "NULL"},
		{"trailing garbage", append(goodRow(head().u(1)), 1, 2, 3), ErrCorrupt, "3 trailing bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := Decode(tt.in)
			if ws != nil || !errors.Is(err, tt.wantErr) {
				t.Fatalf("Decode = %v, %v; want nil, %v", ws, err, tt.wantErr)
			}
			if errors.Is(tt.wantErr, ErrInvalid) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("semantic failures must also be ErrCorrupt: %v", err)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("error %q does not mention %q", err, tt.mention)
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	ws := dmlWriteset()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendEncode(buf[:0], ws)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecode(b *testing.B) {
	buf := Encode(dmlWriteset())
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, err := Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}
