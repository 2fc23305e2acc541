package sqlite

import "testing"

// TestNumericText: a numeric without a declared scale prints to 15
// significant digits (what a double keeps of a decimal), so arithmetic
// prints as PostgreSQL's exact numeric where the result fits.
func TestNumericText(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0.1 + 0.2, "0.3"},
		{0.2 * 3, "0.6"},
		{1.1 * 3, "3.3"},
		{123.456, "123.456"},
		{-0.000001234, "-0.000001234"},
		{1e20, "100000000000000000000"},
		{1.0 / 3, "0.333333333333333"},
		{99999999999.99, "99999999999.99"},
		{0, "0"},
	} {
		if got := numericText(c.f); got != c.want {
			t.Errorf("numericText(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}
