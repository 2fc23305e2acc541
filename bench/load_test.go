package bench

import (
	"math"
	"testing"
)

func TestLiteralEncodings(t *testing.T) {
	tests := []struct {
		v             any
		literal, copy string
	}{
		{nil, "NULL", `\N`},
		{7, "7", "7"},
		{int16(-3), "-3", "-3"},
		{int32(2147483647), "2147483647", "2147483647"},
		{int64(-9), "-9", "-9"},
		{300000.0, "300000", "300000"},
		{-12.34, "-12.34", "-12.34"},
		{"ABC", "'ABC'", "ABC"},
		{"it's", "'it''s'", "it's"},
		{"a\tb\nc\\d\re", "'a\tb\nc\\d\re'", `a\tb\nc\\d\re`},
	}
	for _, tc := range tests {
		lit, err := appendLiteral(nil, tc.v)
		if err != nil || string(lit) != tc.literal {
			t.Errorf("appendLiteral(%#v) = %q, %v; want %q", tc.v, lit, err, tc.literal)
		}
		cp, err := appendCopyText(nil, tc.v)
		if err != nil || string(cp) != tc.copy {
			t.Errorf("appendCopyText(%#v) = %q, %v; want %q", tc.v, cp, err, tc.copy)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), float32(1.5)} {
		if _, err := appendLiteral(nil, v); err == nil {
			t.Errorf("appendLiteral accepted %v (%T)", v, v)
		}
	}
}
