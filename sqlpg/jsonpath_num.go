package sqlpg

import (
	"math/big"
	"strings"
)

// jpNum is a numeric of the SQL/JSON path language: an exact decimal
// c × 10^-s with its display scale s, as PostgreSQL's numeric carries it
// (1.50 stays 1.50, 1e2 is 100, the sum of 1.5 and 2 is 3.5).
type jpNum struct {
	c *big.Int
	s int
}

var bigTen = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// parseJPNum reads a number as numeric_in does: [-+]digits[.digits][e[-+]n].
func parseJPNum(t string) (jpNum, bool) {
	t = strings.TrimSpace(t)
	neg := false
	if t != "" && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	mant, exp := t, 0
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		mant = t[:i]
		e := t[i+1:]
		eneg := false
		if e != "" && (e[0] == '-' || e[0] == '+') {
			eneg = e[0] == '-'
			e = e[1:]
		}
		if e == "" || len(e) > 4 {
			return jpNum{}, false
		}
		for _, r := range e {
			if r < '0' || r > '9' {
				return jpNum{}, false
			}
			exp = exp*10 + int(r-'0')
		}
		if exp > 1000 {
			return jpNum{}, false // numeric_in's limit (NUMERIC_MAX_PRECISION)
		}
		if eneg {
			exp = -exp
		}
	}
	ip, fp := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		ip, fp = mant[:i], mant[i+1:]
	}
	if ip == "" && fp == "" {
		return jpNum{}, false
	}
	for _, r := range ip + fp {
		if r < '0' || r > '9' {
			return jpNum{}, false
		}
	}
	c, ok := new(big.Int).SetString("0"+ip+fp, 10)
	if !ok {
		return jpNum{}, false
	}
	s := len(fp) - exp
	if s < 0 {
		c.Mul(c, pow10(-s))
		s = 0
	}
	if neg {
		c.Neg(c)
	}
	return jpNum{c, s}, true
}

func jpInt(i int64) jpNum { return jpNum{big.NewInt(i), 0} }

// String is numeric_out's text.
func (n jpNum) String() string {
	neg := n.c.Sign() < 0
	d := new(big.Int).Abs(n.c).String()
	if n.s > 0 {
		if len(d) <= n.s {
			d = strings.Repeat("0", n.s-len(d)+1) + d
		}
		d = d[:len(d)-n.s] + "." + d[len(d)-n.s:]
	}
	if neg {
		d = "-" + d
	}
	return d
}

func (n jpNum) scaled(s int) *big.Int {
	if s == n.s {
		return n.c
	}
	return new(big.Int).Mul(n.c, pow10(s-n.s))
}

func (n jpNum) add(m jpNum) jpNum {
	s := max(n.s, m.s)
	return jpNum{new(big.Int).Add(n.scaled(s), m.scaled(s)), s}
}

func (n jpNum) sub(m jpNum) jpNum {
	s := max(n.s, m.s)
	return jpNum{new(big.Int).Sub(n.scaled(s), m.scaled(s)), s}
}

func (n jpNum) mul(m jpNum) jpNum {
	return jpNum{new(big.Int).Mul(n.c, m.c), n.s + m.s}
}

func (n jpNum) rat() *big.Rat {
	return new(big.Rat).SetFrac(n.c, pow10(n.s))
}

// div is numeric division at select_div_scale's scale; ok false for zero.
func (n jpNum) div(m jpNum) (jpNum, bool) {
	if m.c.Sign() == 0 {
		return jpNum{}, false
	}
	r, _ := parseJPNum(numericDivText(n.rat(), m.rat(), n.s, m.s))
	return r, true
}

// mod is numeric's %: the remainder of the truncated quotient, with the
// dividend's sign.
func (n jpNum) mod(m jpNum) (jpNum, bool) {
	if m.c.Sign() == 0 {
		return jpNum{}, false
	}
	s := max(n.s, m.s)
	return jpNum{new(big.Int).Rem(n.scaled(s), m.scaled(s)), s}, true
}

func (n jpNum) neg() jpNum { return jpNum{new(big.Int).Neg(n.c), n.s} }

func (n jpNum) abs() jpNum { return jpNum{new(big.Int).Abs(n.c), n.s} }

func (n jpNum) cmp(m jpNum) int {
	s := max(n.s, m.s)
	return n.scaled(s).Cmp(m.scaled(s))
}

// floor and ceil have scale 0.
func (n jpNum) floor() jpNum {
	q, r := new(big.Int).QuoRem(n.c, pow10(n.s), new(big.Int))
	if r.Sign() < 0 {
		q.Sub(q, big.NewInt(1))
	}
	return jpNum{q, 0}
}

func (n jpNum) ceil() jpNum {
	q, r := new(big.Int).QuoRem(n.c, pow10(n.s), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return jpNum{q, 0}
}

// trunc is the integer part, ok false outside int32 (a subscript).
func (n jpNum) trunc32() (int, bool) {
	q := new(big.Int).Quo(n.c, pow10(n.s))
	if !q.IsInt64() || q.Int64() > 2147483647 || q.Int64() < -2147483648 {
		return 0, false
	}
	return int(q.Int64()), true
}

// jsonbSize is the number of bytes numeric_in's datum takes in a jsonb
// (varlena header, numeric header, base-10000 digits): what keyvalue()'s
// ids count.
func (n jpNum) jsonbSize() int {
	d := new(big.Int).Abs(n.c).String()
	ip, fp := "", ""
	if n.s >= len(d) {
		fp = strings.Repeat("0", n.s-len(d)) + d
	} else {
		ip, fp = d[:len(d)-n.s], d[len(d)-n.s:]
	}
	if len(ip)%4 != 0 {
		ip = strings.Repeat("0", 4-len(ip)%4) + ip
	}
	if len(fp)%4 != 0 {
		fp += strings.Repeat("0", 4-len(fp)%4)
	}
	var groups []string
	for i := 0; i < len(ip); i += 4 {
		groups = append(groups, ip[i:i+4])
	}
	intGroups := len(groups)
	for i := 0; i < len(fp); i += 4 {
		groups = append(groups, fp[i:i+4])
	}
	first, last := -1, -1
	for i, g := range groups {
		if g != "0000" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return 4 + 2 // zero: short header, no digits
	}
	weight := intGroups - 1 - first
	ndigits := last - first + 1
	if n.s <= 63 && weight >= -64 && weight <= 63 {
		return 4 + 2 + 2*ndigits
	}
	return 4 + 4 + 2*ndigits
}
