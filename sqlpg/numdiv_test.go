package sqlpg

import (
	"math"
	"math/big"
	"testing"
)

// TestNumericDivText: PostgreSQL's select_div_scale and rounding, against
// what PostgreSQL 15 prints for the same division.
func TestNumericDivText(t *testing.T) {
	rat := func(s string) *big.Rat { r, _ := new(big.Rat).SetString(s); return r }
	for _, c := range []struct {
		a, b   string
		da, db int
		want   string
	}{
		{"1", "3", 0, 0, "0.33333333333333333333"},
		{"10", "4", 0, 0, "2.5000000000000000"},
		{"1", "1", 0, 0, "1.00000000000000000000"},
		{"3000000", "2", 0, 0, "1500000.000000000000"},
		{"2", "3", 1, 0, "0.66666666666666666667"},
		{"100.5", "7", 1, 0, "14.3571428571428571"},
		{"-7.5", "2.5", 1, 1, "-3.0000000000000000"},
		{"0", "5", 0, 0, "0.00000000000000000000"},
		{"0.003", "2", 3, 0, "0.00150000000000000000"},
		{"123456791", "2", 0, 0, "61728395.500000000000"},
	} {
		if got := numericDivText(rat(c.a), rat(c.b), c.da, c.db); got != c.want {
			t.Errorf("%s / %s = %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

// TestAvgExact: the integer fast path and its overflow into big.Rat give
// the same digits.
func TestAvgExact(t *testing.T) {
	var a avgExact
	for _, v := range []int64{1, 2, 4} {
		a.Step(v, -1)
	}
	if got := a.Done(); got != "2.3333333333333333" {
		t.Fatalf("avg(1, 2, 4) = %v", got)
	}
	var b avgExact
	b.Step(int64(math.MaxInt64), -1)
	b.Step(int64(math.MaxInt64), -1)
	if got := b.Done(); got != "9223372036854775807" {
		t.Fatalf("avg of two MaxInt64 = %v", got)
	}
	var c avgExact
	c.Step(1.25, 2)
	c.Step(2.5, 2)
	c.Step(nil, 2)
	if got := c.Done(); got != "1.8750000000000000" {
		t.Fatalf("avg(1.25, 2.50) = %v", got)
	}
	var none avgExact
	if got := none.Done(); got != nil {
		t.Fatalf("avg of no rows = %v", got)
	}
}
