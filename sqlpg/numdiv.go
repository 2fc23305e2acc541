package sqlpg

// avg of integers and numerics as PostgreSQL prints it. SQLite's avg is a
// double, which tandem printed with 16 decimals (2.3333333333333300 where
// PostgreSQL prints 2.3333333333333333, 1500000.0000000000000000 where it
// prints 1500000.000000000000). _pg_avg_exact sums exactly (big.Rat) and
// divides with PostgreSQL's numeric rules: the result's scale is
// select_div_scale's (at least 16 significant digits, at least the
// inputs' scale), the last digit rounded half away from zero. It returns
// the number's text, so the translation uses it only where the value is
// printed and nothing compares or sorts it (a top-level select target no
// ORDER BY names); elsewhere avg stays SQLite's double.

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// avgExact is the aggregate _pg_avg_exact(x, scale): scale is the
// input's declared scale, -1 when the type does not say.
type avgExact struct {
	sum    big.Rat
	n      int64
	dscale int
	// isum: integers summed without big.Rat while they fit (most avg
	// calls are over integer columns); folded into sum at the end.
	isum int64
}

func (a *avgExact) Step(v any, scale int64) {
	var r big.Rat
	ds := int(scale)
	switch x := v.(type) {
	case nil:
		return
	case int64:
		if s := a.isum + x; (x >= 0) == (s >= a.isum) {
			a.isum = s // no overflow
			a.n++
			a.dscale = max(a.dscale, ds, 0)
			return
		}
		r.SetInt64(x)
		ds = max(ds, 0)
	case float64:
		// At the declared scale when there is one (10.1 * 3 is 30.30,
		// not the double 30.299999999999997).
		s := strconv.FormatFloat(x, 'f', min(ds, 30), 64)
		if _, ok := r.SetString(s); !ok {
			return
		}
		if ds < 0 {
			ds = fracDigits(s)
		}
	default:
		s := strings.TrimSpace(fmt.Sprint(toText(x)))
		if _, ok := r.SetString(s); !ok {
			return
		}
		if ds < 0 {
			ds = fracDigits(s)
		}
	}
	a.sum.Add(&a.sum, &r)
	a.n++
	a.dscale = max(a.dscale, ds)
}

func (a *avgExact) Done() any {
	if a.n == 0 {
		return nil
	}
	a.sum.Add(&a.sum, new(big.Rat).SetInt64(a.isum))
	count := new(big.Rat).SetInt64(a.n)
	return numericDivText(&a.sum, count, a.dscale, 0)
}

func fracDigits(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}

// numericDivText is a / b with PostgreSQL's numeric division scale
// (select_div_scale), rounded half away from zero, as text.
func numericDivText(a, b *big.Rat, da, db int) string {
	wa, fa := nbaseDigit(a)
	wb, fb := nbaseDigit(b)
	qweight := wa - wb
	if fa <= fb {
		qweight--
	}
	rscale := 16 - qweight*4
	rscale = min(max(rscale, da, db, 0), 1000)
	q := new(big.Rat).Quo(a, b)
	return formatRat(q, rscale)
}

// nbaseDigit is x's weight and first digit in PostgreSQL's base-10000
// representation (0, 0 for zero).
func nbaseDigit(x *big.Rat) (weight int, first int64) {
	if x.Sign() == 0 {
		return 0, 0
	}
	ax := new(big.Rat).Abs(x)
	base := big.NewRat(10000, 1)
	p := big.NewRat(1, 1)
	w := 0
	for ax.Cmp(new(big.Rat).Mul(p, base)) >= 0 {
		p.Mul(p, base)
		w++
	}
	for ax.Cmp(p) < 0 {
		p.Quo(p, base)
		w--
	}
	d := new(big.Rat).Quo(ax, p)
	return w, new(big.Int).Quo(d.Num(), d.Denom()).Int64()
}

// formatRat prints x with scale digits after the point, the last rounded
// half away from zero.
func formatRat(x *big.Rat, scale int) string {
	neg := x.Sign() < 0
	ax := new(big.Rat).Abs(x)
	ax.Mul(ax, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	ax.Add(ax, big.NewRat(1, 2))
	n := new(big.Int).Quo(ax.Num(), ax.Denom())
	s := n.String()
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg && strings.Trim(s, "0.") != "" {
		s = "-" + s
	}
	return s
}

// exactAvgTargets marks the avg calls of a top-level SELECT's targets
// that only print: not named by its ORDER BY (by alias or position), not
// DISTINCT, not a window.
func exactAvgTargets(s *pg_query.SelectStmt) (map[*pg_query.FuncCall]bool, map[*pg_query.A_Expr]bool) {
	if s == nil || s.Op != pg_query.SetOperation_SETOP_NONE || len(s.ValuesLists) > 0 || s.IntoClause != nil {
		return nil, nil
	}
	var out map[*pg_query.FuncCall]bool
	var divs map[*pg_query.A_Expr]bool
	for i, n := range s.TargetList {
		rt := n.GetResTarget()
		if rt == nil {
			continue
		}
		f := rt.Val.GetFuncCall()
		e := rt.Val.GetAExpr()
		isDiv := e != nil && e.Kind == pg_query.A_Expr_Kind_AEXPR_OP && e.Lexpr != nil && lastName(e.Name) == "/"
		if !isDiv && (f == nil || len(f.Args) != 1 || f.Over != nil || f.AggDistinct || len(f.AggOrder) > 0 || lastName(f.Funcname) != "avg" || len(f.Funcname) > 2) {
			continue
		}
		for _, sb := range s.SortClause {
			by := sb.GetSortBy()
			e := by.GetNode()
			named := false
			if c := e.GetAConst(); c != nil && c.GetIval() != nil && int(c.GetIval().Ival) == i+1 {
				named = true
			}
			name := rt.Name
			if name == "" && !isDiv {
				name = "avg" // the column's name without an alias
			}
			if cr := e.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && strings.EqualFold(cr.Fields[0].GetString_().GetSval(), name) {
				named = true
			}
			if named {
				// Sorted by the number, printed as text: the ORDER BY
				// gets the expression itself (SQLite's double).
				by.Node = proto.Clone(rt.Val).(*pg_query.Node)
			}
		}
		if isDiv {
			if divs == nil {
				divs = map[*pg_query.A_Expr]bool{}
			}
			divs[e] = true
			continue
		}
		if out == nil {
			out = map[*pg_query.FuncCall]bool{}
		}
		out[f] = true
	}
	return out, divs
}

// numericDivExact is _pg_numeric_div_exact(a, b, scale a, scale b): a
// numeric division's text as PostgreSQL prints it.
func numericDivExact(a, b any, sa, sb int64) (any, error) {
	if a == nil || b == nil {
		return nil, nil
	}
	ra, da, ok1 := exactNumber(a, int(sa))
	rb, db, ok2 := exactNumber(b, int(sb))
	if !ok1 || !ok2 {
		return nil, invalid("numeric", a)
	}
	if rb.Sign() == 0 {
		return nil, fmt.Errorf("[SQLSTATE 22012] division by zero")
	}
	return numericDivText(ra, rb, da, db), nil
}

// exactNumber is v as an exact decimal and its display scale (scale
// when the type says it, else the digits written).
func exactNumber(v any, scale int) (*big.Rat, int, bool) {
	var r big.Rat
	var s string
	switch x := v.(type) {
	case int64:
		r.SetInt64(x)
		return &r, max(scale, 0), true
	case float64:
		s = strconv.FormatFloat(x, 'f', min(scale, 30), 64)
	default:
		s = strings.TrimSpace(fmt.Sprint(toText(x)))
	}
	if _, ok := r.SetString(s); !ok {
		return nil, 0, false
	}
	if scale < 0 {
		scale = fracDigits(s)
	}
	return &r, scale, true
}

// exactDivTypes: a numeric division (integers and numerics, one numeric
// at least; integer / integer is integer division, floats stay doubles).
func exactDivTypes(l, r ColType) bool {
	num := func(c ColType) bool { return c.Type != nil && c.Type.Name == "numeric" }
	intOrNum := func(c ColType) bool {
		return c.Type != nil && (c.Type.Name == "numeric" || c.Type.Name == "int2" || c.Type.Name == "int4" || c.Type.Name == "int8")
	}
	return intOrNum(l) && intOrNum(r) && (num(l) || num(r))
}

func init() { extraFuncs = append(extraFuncs, namedFunc{"_pg_numeric_div_exact", numericDivExact}) }
