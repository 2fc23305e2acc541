package sqlpg

import (
	"math"
	"strconv"
	"strings"
)

// PostgreSQL's numeric is decimal; the SQLite back end keeps a numeric as
// an integer or a double. Rounding to a scale (a numeric(p,s) column, a
// cast to one, round(x, s), a value printed with its scale) must still
// give PostgreSQL's answer for the decimal the client wrote: 1.005 is
// 1.01 and 2.675 is 2.68, halves away from zero, where rounding the double
// (1.00499999999999989...) gives 1.00. So the value is read as a decimal of
// 15 significant digits, the most a double keeps of any decimal (so also
// 1.1 * 1.15, 1.2649999999999999 as a double, is 1.265 and rounds to
// 1.27), and that decimal is rounded. Magnitudes of 1e15 and more have no
// digits below the point a double could keep; they are read as the
// shortest decimal that gives back the same double.

// FormatNumeric prints f with exactly scale digits after the point (none
// for scale <= 0), rounded half away from zero as PostgreSQL rounds a
// numeric. NaN and the infinities print as PostgreSQL prints them.
func FormatNumeric(f float64, scale int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if scale < 0 {
		scale = 0
	}
	a := math.Abs(f)
	var digits string
	var point int // the decimal point comes after this many digits
	if a >= 1e15 {
		ip, fp, _ := strings.Cut(strconv.FormatFloat(a, 'f', -1, 64), ".")
		digits, point = ip+fp, len(ip)
	} else {
		m, e, _ := strings.Cut(strconv.FormatFloat(a, 'e', 14, 64), "e")
		x, _ := strconv.Atoi(e)
		digits, point = m[:1]+m[2:], x+1
	}
	keep := point + scale // digits that stay
	var b []byte
	if keep >= 0 {
		if keep <= len(digits) {
			b = append(b, digits[:keep]...)
		} else {
			b = append(b, digits...)
			for len(b) < keep {
				b = append(b, '0')
			}
		}
		if keep < len(digits) && digits[keep] >= '5' {
			i := len(b) - 1
			for i >= 0 && b[i] == '9' {
				b[i] = '0'
				i--
			}
			if i >= 0 {
				b[i]++
			} else {
				b = append([]byte{'1'}, b...)
				point++
			}
		}
	}
	// b holds point+scale digits, or none when the value rounds to zero
	// above its first digit.
	ip, frac := "0", strings.Repeat("0", scale)
	switch {
	case len(b) == 0:
	case point <= 0:
		frac = strings.Repeat("0", -point) + string(b)
	default:
		ip, frac = string(b[:point]), string(b[point:])
	}
	sign := ""
	if f < 0 && strings.Trim(ip+frac, "0") != "" {
		sign = "-"
	}
	if scale == 0 {
		return sign + ip
	}
	return sign + ip + "." + frac
}

// RoundNumeric rounds f to scale digits after the point as FormatNumeric
// prints it; a negative scale rounds to tens, hundreds... (round(x, -2)).
func RoundNumeric(f float64, scale int) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	if scale < 0 {
		p := math.Pow(10, float64(-scale))
		r, _ := strconv.ParseFloat(FormatNumeric(f/p, 0), 64)
		return r * p
	}
	r, err := strconv.ParseFloat(FormatNumeric(f, scale), 64)
	if err != nil {
		return f
	}
	return r
}
