package writeset

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// encodeWithEncoder encodes ws's rows through an Encoder: every after
// value of the rows in big (by index) with Text, piece by piece, the rest
// with Row.
func encodeWithEncoder(ws *Writeset, big map[int]bool, hint int) []byte {
	e := NewEncoder(hint)
	for i := range ws.Rows {
		r := &ws.Rows[i]
		if !big[i] {
			e.Row(r)
			continue
		}
		e.StartRow(r, len(r.After))
		for _, v := range r.After {
			s, ok := v.AsText()
			if !ok {
				e.Value(v)
				continue
			}
			dst := e.Text(len(s))
			for len(s) > 0 { // in pieces, as a producer reading chunks would
				n := copy(dst, s[:min(len(s), 7)])
				dst, s = dst[n:], s[n:]
			}
		}
	}
	out := *ws
	out.Rows, out.Encoded = nil, e
	return Encode(&out)
}

func TestEncoderMatchesEncode(t *testing.T) {
	large := Row{Table: "big", Op: OpInsert, KeyCols: []string{"id"}, Key: []Value{Int(1)},
		Cols:  []string{"id", "v", "w", "n"},
		After: []Value{Int(1), Text(strings.Repeat("x", 100000)), Text("é✓"), Null()}}
	tests := []struct {
		name string
		ws   *Writeset
		big  map[int]bool
		hint int
	}{
		{"rows whole", dmlWriteset(), nil, 0},
		{"rows in parts", dmlWriteset(), map[int]bool{0: true, 1: true, 3: true}, 1000},
		{"large value, exact hint", &Writeset{GSN: 3, Epoch: 1, Origin: "n1", Rows: []Row{insertRow(), large}}, map[int]bool{1: true}, 100200},
		{"large value, no hint", &Writeset{GSN: 3, Epoch: 1, Origin: "n1", Rows: []Row{large, updateRow()}}, map[int]bool{0: true}, 0},
		{"session tag", &Writeset{GSN: 4, Origin: "n2", Session: "tag-1234", Rows: []Row{large}}, map[int]bool{0: true}, 100100},
		{"header past the room", &Writeset{GSN: math.MaxUint64, Epoch: math.MaxUint64, Origin: strings.Repeat("n", 200), Rows: []Row{large}}, map[int]bool{0: true}, 0},
		{"no rows", &Writeset{GSN: 5, Origin: "n1"}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := AppendEncode(nil, tt.ws)
			got := encodeWithEncoder(tt.ws, tt.big, tt.hint)
			if !bytes.Equal(got, want) {
				t.Fatalf("Encoder's encoding differs from AppendEncode's:\n got %d bytes\nwant %d bytes", len(got), len(want))
			}
			dec, err := Decode(got)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(dec.Rows, tt.ws.Rows) && len(tt.ws.Rows) > 0 {
				t.Fatal("decoded rows differ")
			}
		})
	}
}

// TestEncodeSize: Encode allocates exactly the encoding's size, so a
// large value is not copied again by a growing buffer.
func TestEncodeSize(t *testing.T) {
	for _, ws := range []*Writeset{dmlWriteset(), ddlWriteset(), {}, {GSN: 7, Session: "s", Rows: []Row{{
		Table: "t", Op: OpInsert, KeyCols: []string{"k"}, Key: []Value{Int(-1 << 40)}, Cols: []string{"k", "v", "f", "b"},
		After: []Value{Int(-1 << 40), Text(strings.Repeat("v", 300)), Float(1.5), Bool(true)}}}}} {
		b := Encode(ws)
		if len(b) != Size(ws) || cap(b) != len(b) {
			t.Errorf("Encode: len %d cap %d, Size %d", len(b), cap(b), Size(ws))
		}
		if want := AppendEncode(nil, ws); !bytes.Equal(b, want) {
			t.Errorf("Encode differs from AppendEncode")
		}
	}
}

// BenchmarkEncodeFresh is the primary's path: one Encode per commit, of a
// TM1 writeset and of a 34-column subscriber row.
func BenchmarkEncodeFresh(b *testing.B) {
	sub := Row{Table: "subscriber", Op: OpUpdate, KeyCols: []string{"s_id"}, Key: []Value{Text("7")}}
	for i := 0; i < 34; i++ {
		sub.Cols = append(sub.Cols, fmt.Sprintf("col_%d", i))
		sub.After = append(sub.After, Text(fmt.Sprint(i*12345)))
	}
	for _, c := range []struct {
		name string
		ws   *Writeset
	}{{"tm1-dml", dmlWriteset()}, {"subscriber", &Writeset{GSN: 1 << 30, Epoch: 2, Origin: "n1", Rows: []Row{sub}}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n += len(Encode(c.ws))
			}
		})
	}
}
