package writeset

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestValueKindsAndAccessors(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		v      Value
		kind   Kind
		any    any
		str    string
		isNull bool
	}{
		{"null", Null(), KindNull, nil, "NULL", true},
		{"zero value is null", Value{}, KindNull, nil, "NULL", true},
		{"int", Int(-42), KindInt, int64(-42), "-42", false},
		{"int max", Int(math.MaxInt64), KindInt, int64(math.MaxInt64), "9223372036854775807", false},
		{"float", Float(1.5), KindFloat, 1.5, "1.5", false},
		{"float nan", Float(nan), KindFloat, nil, "NaN", false},
		{"text", Text("it's"), KindText, "it's", "'it''s'", false},
		{"empty text", Text(""), KindText, "", "''", false},
		{"bytes", Bytes([]byte{0, 0xff}), KindBytes, []byte{0, 0xff}, "x'00ff'", false},
		{"bool true", Bool(true), KindBool, true, "true", false},
		{"bool false", Bool(false), KindBool, false, "false", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.Kind(); got != tt.kind {
				t.Errorf("Kind() = %v, want %v", got, tt.kind)
			}
			if got := tt.v.IsNull(); got != tt.isNull {
				t.Errorf("IsNull() = %v", got)
			}
			if got := tt.v.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			got := tt.v.Any()
			switch want := tt.any.(type) {
			case []byte:
				if b, ok := got.([]byte); !ok || string(b) != string(want) {
					t.Errorf("Any() = %#v, want %#v", got, want)
				}
			case nil:
				if tt.kind == KindFloat { // NaN
					if f, ok := got.(float64); !ok || !math.IsNaN(f) {
						t.Errorf("Any() = %#v, want NaN", got)
					}
				} else if got != nil {
					t.Errorf("Any() = %#v, want nil", got)
				}
			default:
				if got != want {
					t.Errorf("Any() = %#v, want %#v", got, want)
				}
			}
			// Round trip through FromAny.
			back, err := FromAny(got)
			if err != nil {
				t.Fatalf("FromAny(%#v): %v", got, err)
			}
			if back != tt.v {
				t.Errorf("FromAny(Any()) = %v, want %v", back, tt.v)
			}
		})
	}
}

func TestValueAccessorsWrongKind(t *testing.T) {
	v := Text("x")
	if _, ok := v.AsInt(); ok {
		t.Error("AsInt ok on text")
	}
	if _, ok := v.AsFloat(); ok {
		t.Error("AsFloat ok on text")
	}
	if _, ok := v.AsBytes(); ok {
		t.Error("AsBytes ok on text")
	}
	if _, ok := v.AsBool(); ok {
		t.Error("AsBool ok on text")
	}
	if _, ok := Int(1).AsText(); ok {
		t.Error("AsText ok on int")
	}
	if i, ok := Int(7).AsInt(); !ok || i != 7 {
		t.Errorf("AsInt = %d, %v", i, ok)
	}
	if f, ok := Float(2.5).AsFloat(); !ok || f != 2.5 {
		t.Errorf("AsFloat = %v, %v", f, ok)
	}
	if s, ok := Text("s").AsText(); !ok || s != "s" {
		t.Errorf("AsText = %q, %v", s, ok)
	}
	if b, ok := Bool(true).AsBool(); !ok || !b {
		t.Errorf("AsBool = %v, %v", b, ok)
	}
}

func TestValueDoesNotAlias(t *testing.T) {
	b := []byte("abc")
	v := Bytes(b)
	b[0] = 'X'
	got, _ := v.AsBytes()
	if string(got) != "abc" {
		t.Fatalf("Bytes aliased its argument: %q", got)
	}
	got[0] = 'Y'
	again, _ := v.AsBytes()
	if string(again) != "abc" {
		t.Fatalf("AsBytes aliased the value: %q", again)
	}
}

func TestValueEquality(t *testing.T) {
	tests := []struct {
		a, b Value
		want bool
	}{
		{Int(1), Int(1), true},
		{Int(1), Float(1), false},
		{Int(1), Text("1"), false},
		{Text("a"), Bytes([]byte("a")), false},
		{Bool(true), Int(1), false},
		{Null(), Value{}, true},
		{Float(math.NaN()), Float(math.NaN()), true},
		{Float(0), Float(math.Copysign(0, -1)), false},
		{Bytes(nil), Bytes([]byte{}), true},
	}
	for _, tt := range tests {
		if got := tt.a == tt.b; got != tt.want {
			t.Errorf("%v == %v: got %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestFromAny(t *testing.T) {
	tests := []struct {
		in      any
		want    Value
		wantErr bool
	}{
		{nil, Null(), false},
		{Int(3), Int(3), false},
		{int(-1), Int(-1), false},
		{int8(-8), Int(-8), false},
		{int16(16), Int(16), false},
		{int32(32), Int(32), false},
		{int64(64), Int(64), false},
		{uint8(8), Int(8), false},
		{uint16(16), Int(16), false},
		{uint32(32), Int(32), false},
		{uint64(math.MaxInt64), Int(math.MaxInt64), false},
		{uint64(math.MaxInt64 + 1), Value{}, true},
		{uint(5), Int(5), false},
		{uint(math.MaxUint), Value{}, true},
		{float32(0.5), Float(0.5), false},
		{"s", Text("s"), false},
		{[]byte("b"), Bytes([]byte("b")), false},
		{true, Bool(true), false},
		{time.Unix(0, 0), Value{}, true},
		{struct{}{}, Value{}, true},
	}
	for _, tt := range tests {
		got, err := FromAny(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("FromAny(%#v) error = %v, want ErrUnsupported", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("FromAny(%#v) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestKindAndOpStrings(t *testing.T) {
	kinds := map[Kind]string{KindNull: "null", KindInt: "int", KindFloat: "float", KindText: "text", KindBytes: "bytes", KindBool: "bool", Kind(9): "kind(9)"}
	for k, want := range kinds {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
	ops := map[Op]string{OpInsert: "insert", OpUpdate: "update", OpDelete: "delete", OpDDL: "ddl", Op(0): "op(0)", Op(9): "op(9)"}
	for o, want := range ops {
		if got := o.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", o, got, want)
		}
		if got, wantValid := o.Valid(), o >= 1 && o <= 4; got != wantValid {
			t.Errorf("Op(%d).Valid() = %v", o, got)
		}
	}
}
