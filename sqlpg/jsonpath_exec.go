package sqlpg

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/pgwire"
)

// The evaluator of jsonpath (PostgreSQL's jsonpath_exec.c): lax mode's
// automatic unwrapping of arrays and its silence about structural errors,
// strict mode's errors, predicates' three-valued logic, and the errors a
// silent call suppresses. Values are jsonb values: nil, bool, jpNum,
// string, *jpArr, *jpObj.

// jpArr and jpObj are jsonb containers; base and off identify them as
// keyvalue() numbers objects (the base object's id, the byte offset of
// the container in its jsonb).
type jpArr struct {
	elems []any
	base  int64
	off   int
}

type jpObj struct {
	keys []string // jsonb order: shorter first, then bytewise
	vals []any
	base int64
	off  int
}

func (o *jpObj) get(k string) (any, bool) {
	i := sort.Search(len(o.keys), func(i int) bool { return !jsonbKeyLess(o.keys[i], k) })
	if i < len(o.keys) && o.keys[i] == k {
		return o.vals[i], true
	}
	return nil, false
}

func jsonbKeyLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// jpFromJSON converts a decoded document (json.Number numbers).
func jpFromJSON(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		n, ok := parseJPNum(string(x))
		if !ok {
			return nil, fmt.Errorf("%w for type json: %q", ErrInvalidInput, string(x))
		}
		return n, nil
	case []any:
		a := &jpArr{elems: make([]any, len(x))}
		for i, e := range x {
			c, err := jpFromJSON(e)
			if err != nil {
				return nil, err
			}
			a.elems[i] = c
		}
		return a, nil
	case map[string]any:
		o := &jpObj{}
		for k := range x {
			o.keys = append(o.keys, k)
		}
		sort.Slice(o.keys, func(i, j int) bool { return jsonbKeyLess(o.keys[i], o.keys[j]) })
		for _, k := range o.keys {
			c, err := jpFromJSON(x[k])
			if err != nil {
				return nil, err
			}
			o.vals = append(o.vals, c)
		}
		return o, nil
	}
	return v, nil
}

func jpDecode(v any) (any, error) {
	x, err := decodeJSON(v)
	if err != nil {
		return nil, err
	}
	j, err := jpFromJSON(x)
	if err != nil {
		return nil, err
	}
	j, _ = jpPlace(j, 0, 0)
	return j, nil
}

func pad4(n int) int { return (n + 3) &^ 3 }

// jpPlace copies a container with the ids jsonb's binary layout gives it
// (header, JEntries, keys' bytes, then values; numerics and containers
// aligned to 4 bytes) and returns its size in bytes.
func jpPlace(v any, base int64, off int) (any, int) {
	child := func(c any, pos int) (any, int) {
		switch x := c.(type) {
		case string:
			return x, pos + len(x)
		case jpNum:
			p := pad4(pos)
			return x, p + x.jsonbSize()
		case *jpArr, *jpObj:
			p := pad4(pos)
			n, size := jpPlace(x, base, p)
			return n, p + size
		}
		return c, pos
	}
	switch x := v.(type) {
	case *jpArr:
		a := &jpArr{elems: make([]any, len(x.elems)), base: base, off: off}
		pos := off + 4 + 4*len(x.elems)
		for i, e := range x.elems {
			a.elems[i], pos = child(e, pos)
		}
		return a, pos - off
	case *jpObj:
		o := &jpObj{keys: x.keys, vals: make([]any, len(x.vals)), base: base, off: off}
		pos := off + 4 + 8*len(x.keys)
		for _, k := range x.keys {
			pos += len(k)
		}
		for i, e := range x.vals {
			o.vals[i], pos = child(e, pos)
		}
		return o, pos - off
	}
	return v, 0
}

// writeJP prints a value as jsonb prints it.
func writeJP(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case jpNum:
		b.WriteString(x.String())
	case string:
		writeJSONString(b, x)
	case *jpArr:
		b.WriteByte('[')
		for i, e := range x.elems {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJP(b, e)
		}
		b.WriteByte(']')
	case *jpObj:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONString(b, k)
			b.WriteString(": ")
			writeJP(b, x.vals[i])
		}
		b.WriteByte('}')
	}
}

func jpText(v any) string {
	var b strings.Builder
	writeJP(&b, v)
	return b.String()
}

func jpTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case jpNum:
		return "number"
	case string:
		return "string"
	case *jpArr:
		return "array"
	}
	return "object"
}

// --- execution ---

type jpRes int

const (
	jperOk jpRes = iota
	jperNotFound
	jperError
)

type jpTri int

const (
	jpbFalse jpTri = iota
	jpbTrue
	jpbUnknown
)

// jpThrown is an error raised (ereport): it unwinds the whole evaluation.
type jpThrown struct{ err *jpError }

type jpList struct{ items []any }

func (l *jpList) add(v any) { l.items = append(l.items, v) }

type jpCtx struct {
	vars          *jpObj
	root          any
	current       any
	lax           bool
	ignoreStruct  bool
	throw         bool
	innermostSize int
	lastGenID     int64
	steps         int
}

// jpMaxSteps bounds one evaluation: nested .** and filters multiply, and
// a Go function cannot be interrupted as PostgreSQL's executor can (a
// statement_timeout). A var so that the fuzz target can lower it.
var jpMaxSteps = 20_000_000

func (c *jpCtx) raise(code, msg string) {
	panic(jpThrown{&jpError{code, msg}})
}

// fail is RETURN_ERROR: raised when errors are thrown, else jperError.
func (c *jpCtx) fail(code, msg string) jpRes {
	if c.throw {
		c.raise(code, msg)
	}
	return jperError
}

func (c *jpCtx) exec(n *jpNode, v any, found *jpList) jpRes {
	return c.execOpt(n, v, found, c.lax)
}

func (c *jpCtx) next(cur *jpNode, next *jpNode, v any, found *jpList) jpRes {
	if next == nil && cur != nil {
		next = cur.next
	}
	if next != nil {
		return c.exec(next, v, found)
	}
	if found != nil {
		found.add(v)
	}
	return jperOk
}

// anyItem walks a container's values from level to last (executeAnyItem).
func (c *jpCtx) anyItem(n *jpNode, cont any, found *jpList, level, first, last int64, ignoreStruct, unwrapNext bool) jpRes {
	res := jperNotFound
	if level > last {
		return res
	}
	var vals []any
	switch x := cont.(type) {
	case *jpArr:
		vals = x.elems
	case *jpObj:
		vals = x.vals
	}
	for _, v := range vals {
		c.step()
		_, isCont := v.(*jpArr)
		if _, o := v.(*jpObj); o {
			isCont = true
		}
		if level >= first || (first == jpAnyLast && last == jpAnyLast && !isCont) {
			if n != nil {
				if ignoreStruct {
					saved := c.ignoreStruct
					c.ignoreStruct = true
					res = c.execOpt(n, v, found, unwrapNext)
					c.ignoreStruct = saved
				} else {
					res = c.execOpt(n, v, found, unwrapNext)
				}
				if res == jperError {
					break
				}
				if res == jperOk && found == nil {
					break
				}
			} else if found != nil {
				found.add(v)
			} else {
				return jperOk
			}
		}
		if level < last && isCont {
			res = c.anyItem(n, v, found, level+1, first, last, ignoreStruct, unwrapNext)
			if res == jperError {
				break
			}
			if res == jperOk && found == nil {
				break
			}
		}
	}
	return res
}

func (c *jpCtx) unwrapTarget(n *jpNode, arr *jpArr, found *jpList, unwrapElems bool) jpRes {
	return c.anyItem(n, arr, found, 1, 1, 1, false, unwrapElems)
}

// execUnwrapResult evaluates n; in lax mode arrays among the results give
// their elements.
func (c *jpCtx) execUnwrapResult(n *jpNode, v any, unwrap bool, found *jpList) jpRes {
	if unwrap && c.lax {
		var seq jpList
		res := c.exec(n, v, &seq)
		if res == jperError {
			return res
		}
		for _, it := range seq.items {
			if a, ok := it.(*jpArr); ok {
				c.unwrapTarget(nil, a, found, false)
			} else {
				found.add(it)
			}
		}
		return jperOk
	}
	return c.exec(n, v, found)
}

func (c *jpCtx) execUnwrapResultNoThrow(n *jpNode, v any, unwrap bool, found *jpList) jpRes {
	saved := c.throw
	c.throw = false
	defer func() { c.throw = saved }()
	return c.execUnwrapResult(n, v, unwrap, found)
}

func (c *jpCtx) step() {
	c.steps++
	if c.steps > jpMaxSteps {
		c.raise("54001", "jsonpath evaluation is too long for the SQLite back end")
	}
}

func (c *jpCtx) execOpt(n *jpNode, v any, found *jpList, unwrap bool) jpRes {
	c.step()
	switch n.kind {
	case jpAnd, jpOr, jpNot, jpIsUnknown, jpCmp, jpExists, jpStartsWith, jpLikeRegex:
		st := c.boolItem(n, v, true)
		if n.next == nil && found == nil {
			return jperOk
		}
		var b any
		if st != jpbUnknown {
			b = st == jpbTrue
		}
		return c.next(n, nil, b, found)

	case jpKey:
		switch x := v.(type) {
		case *jpObj:
			if e, ok := x.get(n.str); ok {
				return c.next(n, nil, e, found)
			}
			if !c.ignoreStruct {
				if !c.throw {
					return jperError
				}
				c.raise("2203A", fmt.Sprintf("JSON object does not contain key \"%s\"", n.str))
			}
		case *jpArr:
			if unwrap {
				return c.unwrapTarget(n, x, found, false)
			}
			if !c.ignoreStruct {
				return c.fail("2203A", "jsonpath member accessor can only be applied to an object")
			}
		default:
			if !c.ignoreStruct {
				return c.fail("2203A", "jsonpath member accessor can only be applied to an object")
			}
		}
		return jperNotFound

	case jpRoot:
		return c.next(n, nil, c.root, found)

	case jpCurrent:
		return c.next(n, nil, c.current, found)

	case jpAnyArray:
		if a, ok := v.(*jpArr); ok {
			return c.unwrapTarget(n.next, a, found, c.lax)
		}
		if c.lax {
			return c.next(n, nil, v, found)
		}
		if !c.ignoreStruct {
			return c.fail("22039", "jsonpath wildcard array accessor can only be applied to an array")
		}
		return jperNotFound

	case jpIndex:
		a, isArr := v.(*jpArr)
		if !isArr && !c.lax {
			if !c.ignoreStruct {
				return c.fail("22039", "jsonpath array accessor can only be applied to an array")
			}
			return jperNotFound
		}
		saved := c.innermostSize
		size := 1
		if isArr {
			size = len(a.elems)
		}
		c.innermostSize = size
		res := jperNotFound
		for _, s := range n.subs {
			var from, to int
			from, res = c.arrayIndex(s.from, v)
			if res == jperError {
				break
			}
			to = from
			if s.to != nil {
				to, res = c.arrayIndex(s.to, v)
				if res == jperError {
					break
				}
			}
			if !c.ignoreStruct && (from < 0 || from > to || to >= size) {
				return c.fail("22033", "jsonpath array subscript is out of bounds")
			}
			from = max(from, 0)
			to = min(to, size-1)
			res = jperNotFound
			for i := from; i <= to; i++ {
				e := v
				if isArr {
					e = a.elems[i]
				}
				if n.next == nil && found == nil {
					return jperOk
				}
				res = c.next(n, nil, e, found)
				if res == jperError {
					break
				}
				if res == jperOk && found == nil {
					break
				}
			}
			if res == jperError {
				break
			}
			if res == jperOk && found == nil {
				break
			}
		}
		c.innermostSize = saved
		return res

	case jpLast:
		if c.innermostSize < 0 {
			c.raise("XX000", "evaluating jsonpath LAST outside of array subscript")
		}
		if n.next == nil && found == nil {
			return jperOk
		}
		return c.next(n, nil, jpInt(int64(c.innermostSize-1)), found)

	case jpAnyKey:
		switch x := v.(type) {
		case *jpObj:
			return c.anyItem(n.next, x, found, 1, 1, 1, false, c.lax)
		case *jpArr:
			if unwrap {
				return c.unwrapTarget(n, x, found, false)
			}
		}
		if !c.ignoreStruct {
			return c.fail("2203C", "jsonpath wildcard member accessor can only be applied to an object")
		}
		return jperNotFound

	case jpArith:
		return c.binaryArith(n, v, found)

	case jpUnary:
		return c.unaryArith(n, v, found)

	case jpFilter:
		if a, ok := v.(*jpArr); ok && unwrap {
			return c.unwrapTarget(n, a, found, false)
		}
		if c.nestedBool(n.left, v) != jpbTrue {
			return jperNotFound
		}
		return c.next(n, nil, v, found)

	case jpAny:
		res := jperNotFound
		if n.first == 0 {
			saved := c.ignoreStruct
			c.ignoreStruct = true
			res = c.next(n, nil, v, found)
			c.ignoreStruct = saved
			if res == jperOk && found == nil {
				return res
			}
		}
		switch v.(type) {
		case *jpArr, *jpObj:
			res = c.anyItem(n.next, v, found, 1, n.first, n.last, true, c.lax)
		}
		return res

	case jpNull, jpBoolLit, jpNumeric, jpString, jpVariable:
		if n.next == nil && found == nil && n.kind != jpVariable {
			return jperOk // a missing variable is an error even here
		}
		var val any
		switch n.kind {
		case jpBoolLit:
			val = n.b
		case jpNumeric:
			val = n.num
		case jpString:
			val = n.str
		case jpVariable:
			val = c.variable(n.str)
		}
		return c.next(n, nil, val, found)

	case jpMethod:
		return c.method(n, v, found, unwrap)
	}
	c.raise("XX000", "unrecognized jsonpath item type")
	return jperError
}

func (c *jpCtx) variable(name string) any {
	if c.vars != nil {
		if v, ok := c.vars.get(name); ok {
			return v
		}
	}
	c.raise("42704", fmt.Sprintf("could not find jsonpath variable \"%s\"", name))
	return nil
}

func (c *jpCtx) arrayIndex(n *jpNode, v any) (int, jpRes) {
	var found jpList
	res := c.exec(n, v, &found)
	if res == jperError {
		return 0, res
	}
	if len(found.items) != 1 {
		return 0, c.fail("22033", "jsonpath array subscript is not a single numeric value")
	}
	num, ok := found.items[0].(jpNum)
	if !ok {
		return 0, c.fail("22033", "jsonpath array subscript is not a single numeric value")
	}
	i, ok := num.trunc32()
	if !ok {
		return 0, c.fail("22033", "jsonpath array subscript is out of integer range")
	}
	return i, jperOk
}

func (c *jpCtx) binaryArith(n *jpNode, v any, found *jpList) jpRes {
	var lseq, rseq jpList
	if res := c.execUnwrapResult(n.left, v, true, &lseq); res == jperError {
		return res
	}
	if res := c.execUnwrapResult(n.right, v, true, &rseq); res == jperError {
		return res
	}
	var l, r jpNum
	ok := len(lseq.items) == 1
	if ok {
		l, ok = lseq.items[0].(jpNum)
	}
	if !ok {
		return c.fail("22038", fmt.Sprintf("left operand of jsonpath operator %s is not a single numeric value", n.str))
	}
	ok = len(rseq.items) == 1
	if ok {
		r, ok = rseq.items[0].(jpNum)
	}
	if !ok {
		return c.fail("22038", fmt.Sprintf("right operand of jsonpath operator %s is not a single numeric value", n.str))
	}
	var res jpNum
	switch n.str {
	case "+":
		res = l.add(r)
	case "-":
		res = l.sub(r)
	case "*":
		res = l.mul(r)
	case "/", "%":
		var ok bool
		if n.str == "/" {
			res, ok = l.div(r)
		} else {
			res, ok = l.mod(r)
		}
		if !ok {
			return c.fail("22012", "division by zero")
		}
	}
	if n.next == nil && found == nil {
		return jperOk
	}
	return c.next(n, nil, res, found)
}

func (c *jpCtx) unaryArith(n *jpNode, v any, found *jpList) jpRes {
	var seq jpList
	if res := c.execUnwrapResult(n.left, v, true, &seq); res == jperError {
		return res
	}
	res := jperNotFound
	for _, it := range seq.items {
		num, ok := it.(jpNum)
		if !ok {
			if found == nil && n.next == nil {
				continue
			}
			return c.fail("2203B", fmt.Sprintf("operand of unary jsonpath operator %s is not a numeric value", n.str))
		}
		if found == nil && n.next == nil {
			return jperOk
		}
		if n.str == "-" {
			num = num.neg()
		}
		r := c.next(n, nil, num, found)
		if r == jperError {
			return r
		}
		if r == jperOk {
			if found == nil {
				return jperOk
			}
			res = jperOk
		}
	}
	return res
}

func (c *jpCtx) method(n *jpNode, v any, found *jpList, unwrap bool) jpRes {
	arr, isArr := v.(*jpArr)
	switch n.str {
	case "type":
		return c.next(n, nil, jpTypeName(v), found)
	case "size":
		size := 1
		if isArr {
			size = len(arr.elems)
		} else if !c.lax {
			if !c.ignoreStruct {
				return c.fail("22039", "jsonpath item method .size() can only be applied to an array")
			}
			return jperNotFound
		}
		return c.next(n, nil, jpInt(int64(size)), found)
	case "abs", "floor", "ceiling":
		if unwrap && isArr {
			return c.unwrapTarget(n, arr, found, false)
		}
		num, ok := v.(jpNum)
		if !ok {
			return c.fail("22036", fmt.Sprintf("jsonpath item method .%s() can only be applied to a numeric value", n.str))
		}
		switch n.str {
		case "abs":
			num = num.abs()
		case "floor":
			num = num.floor()
		default:
			num = num.ceil()
		}
		if n.next == nil && found == nil {
			return jperOk
		}
		return c.next(n, nil, num, found)
	case "double":
		if unwrap && isArr {
			return c.unwrapTarget(n, arr, found, false)
		}
		switch x := v.(type) {
		case jpNum:
			f, err := strconv.ParseFloat(x.String(), 64)
			if err != nil || math.IsInf(f, 0) {
				return c.fail("22036", "numeric argument of jsonpath item method .double() is out of range for type double precision")
			}
			return c.next(n, nil, x, found)
		case string:
			f, ok := pgFloat8In(x)
			if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
				return c.fail("22036", "string argument of jsonpath item method .double() is not a valid representation of a double precision number")
			}
			num, _ := parseJPNum(strconv.FormatFloat(f, 'g', 15, 64))
			return c.next(n, nil, num, found)
		}
		return c.fail("22036", "jsonpath item method .double() can only be applied to a string or numeric value")
	case "keyvalue":
		if unwrap && isArr {
			return c.unwrapTarget(n, arr, found, false)
		}
		obj, ok := v.(*jpObj)
		if !ok {
			return c.fail("2203C", "jsonpath item method .keyvalue() can only be applied to an object")
		}
		if len(obj.keys) == 0 {
			return jperNotFound
		}
		id := obj.base*10000000000 + int64(obj.off)
		res := jperNotFound
		for i, k := range obj.keys {
			kv := &jpObj{keys: []string{"id", "key", "value"}, vals: []any{jpInt(id), k, obj.vals[i]}}
			placed, _ := jpPlace(kv, c.lastGenID, 0)
			c.lastGenID++
			res = c.next(n, nil, placed, found)
			if res == jperError {
				return res
			}
			if res == jperOk && found == nil {
				break
			}
		}
		return res
	}
	c.raise("XX000", "unrecognized jsonpath item method")
	return jperError
}

// pgFloat8In reads a double as float8in does (surrounding spaces allowed;
// NaN and Infinity spelled in any case).
func pgFloat8In(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "nan":
		return math.NaN(), true
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1), true
	case "-inf", "-infinity":
		return math.Inf(-1), true
	}
	if t == "" || strings.ContainsAny(t, "xXpP_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, false
		}
		return 0, false
	}
	return f, true
}

func (c *jpCtx) nestedBool(n *jpNode, v any) jpTri {
	prev := c.current
	c.current = v
	defer func() { c.current = prev }()
	return c.boolItem(n, v, false)
}

func (c *jpCtx) boolItem(n *jpNode, v any, canHaveNext bool) jpTri {
	switch n.kind {
	case jpAnd:
		l := c.boolItem(n.left, v, false)
		if l == jpbFalse {
			return jpbFalse
		}
		r := c.boolItem(n.right, v, false)
		if r == jpbTrue {
			return l
		}
		return r
	case jpOr:
		l := c.boolItem(n.left, v, false)
		if l == jpbTrue {
			return jpbTrue
		}
		r := c.boolItem(n.right, v, false)
		if r == jpbFalse {
			return l
		}
		return r
	case jpNot:
		switch c.boolItem(n.left, v, false) {
		case jpbTrue:
			return jpbFalse
		case jpbFalse:
			return jpbTrue
		}
		return jpbUnknown
	case jpIsUnknown:
		if c.boolItem(n.left, v, false) == jpbUnknown {
			return jpbTrue
		}
		return jpbFalse
	case jpCmp:
		return c.predicate(n.left, n.right, v, true, func(l, r any) jpTri { return jpCompare(n.str, l, r) })
	case jpStartsWith:
		return c.predicate(n.left, n.right, v, false, func(l, r any) jpTri {
			s, ok := l.(string)
			p, ok2 := r.(string)
			if !ok || !ok2 {
				return jpbUnknown
			}
			if strings.HasPrefix(s, p) {
				return jpbTrue
			}
			return jpbFalse
		})
	case jpLikeRegex:
		return c.predicate(n.left, nil, v, false, func(l, _ any) jpTri {
			s, ok := l.(string)
			if !ok {
				return jpbUnknown
			}
			if n.re.MatchString(s) {
				return jpbTrue
			}
			return jpbFalse
		})
	case jpExists:
		if !c.lax {
			var vals jpList
			if c.execUnwrapResultNoThrow(n.left, v, false, &vals) == jperError {
				return jpbUnknown
			}
			if len(vals.items) == 0 {
				return jpbFalse
			}
			return jpbTrue
		}
		res := c.execUnwrapResultNoThrow(n.left, v, false, nil)
		switch res {
		case jperError:
			return jpbUnknown
		case jperOk:
			return jpbTrue
		}
		return jpbFalse
	}
	c.raise("XX000", "invalid boolean jsonpath item type")
	return jpbUnknown
}

// predicate evaluates a predicate over every pair of its operands' items
// (executePredicate): lax mode answers true at the first pair that is
// true, strict mode unknown at the first that is unknown.
func (c *jpCtx) predicate(l, r *jpNode, v any, unwrapRight bool, f func(l, r any) jpTri) jpTri {
	var lseq, rseq jpList
	if c.execUnwrapResultNoThrow(l, v, true, &lseq) == jperError {
		return jpbUnknown
	}
	if r != nil {
		if c.execUnwrapResultNoThrow(r, v, unwrapRight, &rseq) == jperError {
			return jpbUnknown
		}
	}
	found, failed := false, false
	for _, lv := range lseq.items {
		rights := rseq.items
		if r == nil {
			rights = []any{nil}
		}
		for _, rv := range rights {
			switch f(lv, rv) {
			case jpbUnknown:
				if !c.lax {
					return jpbUnknown
				}
				failed = true
			case jpbTrue:
				if c.lax {
					return jpbTrue
				}
				found = true
			}
		}
	}
	if found {
		return jpbTrue
	}
	if failed {
		return jpbUnknown
	}
	return jpbFalse
}

func jpCompare(op string, a, b any) jpTri {
	ta, tb := jpTypeName(a), jpTypeName(b)
	if ta != tb {
		if a == nil || b == nil {
			if op == "!=" {
				return jpbTrue
			}
			return jpbFalse
		}
		return jpbUnknown
	}
	var cmp int
	switch x := a.(type) {
	case nil:
		cmp = 0
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			cmp = 0
		case x:
			cmp = 1
		default:
			cmp = -1
		}
	case jpNum:
		cmp = x.cmp(b.(jpNum))
	case string:
		cmp = strings.Compare(x, b.(string))
	default:
		return jpbUnknown
	}
	var res bool
	switch op {
	case "==":
		res = cmp == 0
	case "!=":
		res = cmp != 0
	case "<":
		res = cmp < 0
	case "<=":
		res = cmp <= 0
	case ">":
		res = cmp > 0
	case ">=":
		res = cmp >= 0
	}
	if res {
		return jpbTrue
	}
	return jpbFalse
}

// --- SQL functions ---

// jpRun evaluates path over target (executeJsonPath). found nil asks only
// whether there is a result. Errors thrown come back as err.
func jpRun(jp *jpPath, target, vars any, throw bool, found *jpList) (res jpRes, err error) {
	c := &jpCtx{lax: jp.lax, ignoreStruct: jp.lax, throw: throw, innermostSize: -1, lastGenID: 1}
	if vars != nil {
		o, ok := vars.(*jpObj)
		if !ok {
			return jperError, &jpError{"22023", `"vars" argument is not an object`}
		}
		// Variables are base object 1 (keyvalue ids); generated objects
		// count from 2.
		placed, _ := jpPlace(o, 1, 0)
		c.vars = placed.(*jpObj)
		c.lastGenID = 2
	}
	c.root, c.current = target, target
	defer func() {
		if r := recover(); r != nil {
			t, ok := r.(jpThrown)
			if !ok {
				panic(r)
			}
			res, err = jperError, t.err
		}
	}()
	if !c.lax && found == nil {
		var vals jpList
		res := c.exec(jp.expr, target, &vals)
		if res == jperError {
			return res, nil
		}
		if len(vals.items) == 0 {
			return jperNotFound, nil
		}
		return jperOk, nil
	}
	return c.exec(jp.expr, target, found), nil
}

// jsonPathFunc is _pg_jsonpath(kind, target, path, vars, silent): the
// jsonb_path_* functions and the @? / @@ operators (kind items is the
// set-returning jsonb_path_query's rows, an array of jsonb texts that
// unnest turns into rows).
func jsonPathFunc(kind, target, path, vars, silent any) (any, error) {
	if target == nil || path == nil || vars == nil || silent == nil {
		return nil, nil
	}
	jp, err := parseJSONPath(fmt.Sprint(toText(path)))
	if err != nil {
		return nil, err
	}
	t, err := jpDecode(target)
	if err != nil {
		return nil, err
	}
	vs, err := jpDecode(vars)
	if err != nil {
		return nil, err
	}
	quiet, err := toBool(silent)
	if err != nil {
		return nil, err
	}
	throw := quiet != true
	switch fmt.Sprint(kind) {
	case "exists":
		res, err := jpRun(jp, t, vs, throw, nil)
		if err != nil {
			return nil, err
		}
		if res == jperError {
			return nil, nil
		}
		return res == jperOk, nil
	case "match":
		var found jpList
		if _, err := jpRun(jp, t, vs, throw, &found); err != nil {
			return nil, err
		}
		if len(found.items) == 1 {
			switch x := found.items[0].(type) {
			case bool:
				return x, nil
			case nil:
				return nil, nil
			}
		}
		if throw {
			return nil, &jpError{"22038", "single boolean result is expected"}
		}
		return nil, nil
	}
	var found jpList
	if _, err := jpRun(jp, t, vs, throw, &found); err != nil {
		return nil, err
	}
	switch fmt.Sprint(kind) {
	case "first":
		if len(found.items) == 0 {
			return nil, nil
		}
		return jpText(found.items[0]), nil
	case "array":
		return jpText(&jpArr{elems: found.items}), nil
	}
	// items: the rows as a text array of jsonb texts, which unnest reads.
	texts := make([]any, len(found.items))
	for i, it := range found.items {
		texts[i] = jpText(it)
	}
	return arrayLiteral(texts), nil
}

func init() {
	extraFuncs = append(extraFuncs, namedFunc{"_pg_jsonpath", jsonPathFunc})
}

// jsonPathKinds: the jsonb_path_* functions and what _pg_jsonpath
// computes for each (the _tz forms differ only for .datetime(), which is
// not supported).
var jsonPathKinds = map[string]string{
	"jsonb_path_query": "items", "jsonb_path_query_tz": "items",
	"jsonb_path_query_array": "array", "jsonb_path_query_array_tz": "array",
	"jsonb_path_query_first": "first", "jsonb_path_query_first_tz": "first",
	"jsonb_path_exists": "exists", "jsonb_path_exists_tz": "exists",
	"jsonb_path_match": "match", "jsonb_path_match_tz": "match",
}

// jsonPathCall rewrites jsonb_path_*(target, path [, vars [, silent]])
// (named arguments too) to _pg_jsonpath. jsonb_path_query keeps its name
// with the one argument, the rows' array, and goes on as a set-returning
// function (true), placed as unnest of that array (jsonPathUnnest); the
// others are replaced (false).
func (t *translator) jsonPathCall(n *pg_query.Node, f *pg_query.FuncCall, name string) bool {
	params := []string{"target", "path", "vars", "silent"}
	args := make([]*pg_query.Node, 4)
	for i, a := range f.Args {
		if na := a.GetNamedArgExpr(); na != nil {
			j := slices.Index(params, strings.ToLower(na.Name))
			if j < 0 || args[j] != nil {
				t.fail(&pgwire.Error{Code: "42883", Message: fmt.Sprintf("function %s does not exist", name)})
				return false
			}
			args[j] = na.Arg
			continue
		}
		if i >= len(args) {
			t.fail(&pgwire.Error{Code: "42883", Message: fmt.Sprintf("function %s does not exist", name)})
			return false
		}
		args[i] = a
	}
	if args[0] == nil || args[1] == nil {
		t.fail(&pgwire.Error{Code: "42883", Message: fmt.Sprintf("function %s does not exist", name)})
		return false
	}
	if known, ok := t.jsonPathArgs[f]; ok && len(f.Args) >= 2 && f.Args[0].GetNamedArgExpr() == nil && f.Args[1].GetNamedArgExpr() == nil {
		// A typed expression must be jsonb and jsonpath (a literal or a
		// parameter takes the type): text does not cast implicitly.
		for i, want := range []string{"jsonb", "jsonpath"} {
			c := known[i]
			if c.Type == nil || c.Type.Name == want || c.Type.Name == "unknown" || isLiteralOrParam(f.Args[i]) {
				continue
			}
			sql := func(c ColType) string {
				if c.Type == nil || isLiteralOrParam(f.Args[i]) {
					return "unknown"
				}
				return c.Type.SQL
			}
			t.fail(&pgwire.Error{Code: "42883", Message: fmt.Sprintf("function %s(%s, %s) does not exist", name, sql(known[0]), sql(known[1])),
				Hint: "No function matches the given name and argument types. You might need to add explicit type casts."})
			return false
		}
	}
	args[1] = uncastPath(args[1])
	if !t.checkPathLiteral(args[1]) {
		return false
	}
	if args[2] == nil {
		args[2] = strConst("{}")
	}
	if args[3] == nil {
		args[3] = pg_query.MakeAConstIntNode(0, -1)
	}
	c := call("_pg_jsonpath", append([]*pg_query.Node{strConst(jsonPathKinds[name])}, args...)...)
	if jsonPathKinds[name] == "items" {
		f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("jsonb_path_query")}
		f.Args = []*pg_query.Node{c}
		return true
	}
	f.Funcformat = pg_query.CoercionForm_COERCE_EXPLICIT_CALL
	n.Node = c.Node
	return false
}

// jsonPathOp: jsonb @? jsonpath and jsonb @@ jsonpath, which are
// jsonb_path_exists and jsonb_path_match with silent => true. @@ of
// anything but jsonb (full-text search) is left to be refused.
func (t *translator) jsonPathOp(n *pg_query.Node, e *pg_query.A_Expr, op string) bool {
	if e.Lexpr == nil {
		return false
	}
	l, _ := t.operandTypes(e)
	if op == "@@" && (l.Type == nil || l.Type.Name != "jsonb") {
		return false
	}
	e.Rexpr = uncastPath(e.Rexpr)
	if !t.checkPathLiteral(e.Rexpr) {
		return true // failed
	}
	kind := "exists"
	if op == "@@" {
		kind = "match"
	}
	n.Node = call("_pg_jsonpath", strConst(kind), e.Lexpr, e.Rexpr, strConst("{}"), pg_query.MakeAConstIntNode(1, -1)).Node
	return true
}

// jsonPathUnnest turns jsonb_path_query(rows), its argument rewritten by
// jsonPathCall, into unnest(rows): in FROM (a table-valued function may
// read the columns of the FROM items before it, PostgreSQL's implicit
// LATERAL) and in a select list (in lockstep with other set-returning
// functions there). Its column keeps PostgreSQL's name: the function's,
// or the FROM item's alias.
func jsonPathUnnest(f *pg_query.FuncCall, rf *pg_query.RangeFunction, rt *pg_query.ResTarget) bool {
	if lastName(f.Funcname) != "jsonb_path_query" || len(f.Args) != 1 {
		return false
	}
	if c := f.Args[0].GetFuncCall(); c == nil || lastName(c.Funcname) != "_pg_jsonpath" {
		return false
	}
	f.Funcname = []*pg_query.Node{pg_query.MakeStrNode("unnest")}
	if rf != nil {
		if rf.Alias == nil {
			rf.Alias = &pg_query.Alias{Aliasname: "jsonb_path_query"}
		}
		if len(rf.Alias.Colnames) == 0 {
			rf.Alias.Colnames = []*pg_query.Node{pg_query.MakeStrNode(rf.Alias.Aliasname)}
		}
	}
	if rt != nil && rt.Name == "" {
		rt.Name = "jsonb_path_query"
	}
	return true
}

// isLiteralOrParam: a string literal or a parameter, which takes the type
// its place asks for.
func isLiteralOrParam(n *pg_query.Node) bool {
	if c := n.GetAConst(); c != nil {
		return c.GetSval() != nil || c.Isnull
	}
	return n.GetParamRef() != nil
}

// checkPathLiteral parses a jsonpath written as a literal when the
// statement is translated: PostgreSQL reads it at parse analysis, so its
// errors come at Parse / Describe, before any row.
func (t *translator) checkPathLiteral(n *pg_query.Node) bool {
	c := n.GetAConst()
	if c == nil || c.GetSval() == nil {
		return true
	}
	if _, err := parseJSONPath(c.GetSval().Sval); err != nil {
		t.fail(jpPgError(err))
		return false
	}
	return true
}

func jpPgError(err error) error {
	var je *jpError
	if errors.As(err, &je) {
		return &pgwire.Error{Code: je.code, Message: je.msg}
	}
	return err
}

// uncastPath: x::jsonpath, as an argument, is x. The cast's value is the
// path as jsonpath_out prints it, which PostgreSQL does not always read
// back the same ($."a" * 2.abs() for ($.a * 2).abs()); PostgreSQL hands
// the parsed path over, so the function must read what was written.
func uncastPath(n *pg_query.Node) *pg_query.Node {
	if f := n.GetFuncCall(); f != nil && lastName(f.Funcname) == "_cast_jsonpath" && len(f.Args) == 1 {
		return f.Args[0]
	}
	return n
}
