package sqlpg

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The SQL/JSON path language of PostgreSQL 15 (jsonpath): a parser, a
// printer (jsonpath's output: '$.a'::jsonpath is $."a") and, in
// jsonpath_exec.go, an evaluator over jsonb values. The grammar and the
// printing rules follow PostgreSQL's jsonpath_gram.y and jsonpath.c.

type jpKind int

const (
	jpNull jpKind = iota
	jpBoolLit
	jpNumeric
	jpString
	jpVariable
	jpRoot
	jpCurrent
	jpLast
	jpKey
	jpAnyKey   // .*
	jpAnyArray // [*]
	jpIndex    // [a, b to c]
	jpAny      // .**{first to last}
	jpFilter   // ? (predicate)
	jpMethod   // .type() ...
	jpAnd
	jpOr
	jpNot
	jpIsUnknown
	jpExists
	jpCmp // == != < <= > >=
	jpStartsWith
	jpLikeRegex
	jpArith // + - * / %
	jpUnary // + -
)

// jpAnyLast is `last` as a level of .**{...} (PostgreSQL's PG_UINT32_MAX).
const jpAnyLast = 1<<32 - 1

type jpSub struct{ from, to *jpNode }

type jpNode struct {
	kind   jpKind
	b      bool
	num    jpNum
	str    string // string, key, variable name, method name, operator
	left   *jpNode
	right  *jpNode
	subs   []jpSub
	first  int64
	last   int64
	re     *regexp.Regexp
	flags  string // like_regex flags as written (validated)
	next   *jpNode
	parens bool // written in parentheses (for "is unknown")
}

// jpPath is a parsed path.
type jpPath struct {
	lax  bool
	expr *jpNode
}

// jpError is an error with PostgreSQL's SQLSTATE.
type jpError struct {
	code string
	msg  string
}

func (e *jpError) Error() string { return fmt.Sprintf("[SQLSTATE %s] %s", e.code, e.msg) }

var jpMethods = map[string]bool{"type": true, "size": true, "double": true, "ceiling": true, "floor": true, "abs": true, "keyvalue": true, "datetime": true}

// --- lexer ---

type jpTokKind int

const (
	tkEOF jpTokKind = iota
	tkIdent
	tkString
	tkNumber
	tkVariable
	tkOp
)

type jpTok struct {
	kind jpTokKind
	s    string // identifier / string value / number text / operator
	num  jpNum
}

func jpSyntax(near string) error {
	if near == "" {
		return &jpError{"42601", "syntax error at end of jsonpath input"}
	}
	return &jpError{"42601", fmt.Sprintf("syntax error at or near \"%s\" of jsonpath input", near)}
}

func jpSpecial(r rune) bool {
	return strings.ContainsRune("?%$.[]{}()|&!=<>@#,*:-+/\\\" \t\n\r\f", r)
}

func jpLex(s string) ([]jpTok, error) {
	var toks []jpTok
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '"':
			v, n, err := jpLexString(s[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, jpTok{kind: tkString, s: v})
			i += n
		case c == '$':
			if i+1 < len(s) && s[i+1] == '"' {
				v, n, err := jpLexString(s[i+1:])
				if err != nil {
					return nil, err
				}
				toks = append(toks, jpTok{kind: tkVariable, s: v})
				i += 1 + n
				continue
			}
			j := i + 1
			for j < len(s) {
				r, w := utf8.DecodeRuneInString(s[j:])
				if jpSpecial(r) {
					break
				}
				j += w
			}
			if j == i+1 {
				toks = append(toks, jpTok{kind: tkOp, s: "$"})
			} else {
				toks = append(toks, jpTok{kind: tkVariable, s: s[i+1 : j]})
			}
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' && !jpAfterAccessor(toks):
			j := i
			if c == '0' {
				j++
			} else {
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
			}
			if j < len(s) && s[j] == '.' {
				j++
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
			}
			if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if k < len(s) && (s[k] == '+' || s[k] == '-') {
					k++
				}
				if k >= len(s) || s[k] < '0' || s[k] > '9' {
					return nil, &jpError{"42601", "invalid floating point number at or near \"" + s[i:min(k+1, len(s))] + "\" of jsonpath input"}
				}
				for k < len(s) && s[k] >= '0' && s[k] <= '9' {
					k++
				}
				j = k
			}
			n, ok := parseJPNum(s[i:j])
			if !ok {
				return nil, jpSyntax(s[i:j])
			}
			toks = append(toks, jpTok{kind: tkNumber, s: s[i:j], num: n})
			i = j
		default:
			two := ""
			if i+1 < len(s) {
				two = s[i : i+2]
			}
			switch two {
			case "==", "!=", "<>", "<=", ">=", "&&", "||", "**":
				toks = append(toks, jpTok{kind: tkOp, s: two})
				i += 2
				continue
			}
			r, w := utf8.DecodeRuneInString(s[i:])
			if jpSpecial(r) {
				if strings.ContainsRune("&|=#:\\", r) {
					return nil, jpSyntax(string(r))
				}
				toks = append(toks, jpTok{kind: tkOp, s: string(r)})
				i += w
				continue
			}
			j := i
			for j < len(s) {
				r, w := utf8.DecodeRuneInString(s[j:])
				if jpSpecial(r) {
					break
				}
				j += w
			}
			toks = append(toks, jpTok{kind: tkIdent, s: s[i:j]})
			i = j
		}
	}
	return toks, nil
}

// jpAfterAccessor: a '.' right after a path item is an accessor, not the
// start of a number (.5).
func jpAfterAccessor(toks []jpTok) bool {
	if len(toks) == 0 {
		return false
	}
	t := toks[len(toks)-1]
	switch t.kind {
	case tkIdent, tkVariable, tkString, tkNumber:
		return true
	case tkOp:
		return t.s == "$" || t.s == "@" || t.s == ")" || t.s == "]" || t.s == "*" || t.s == "**" || t.s == "}"
	}
	return false
}

// jpLexString reads a "..." string (s starts at the quote): the value and
// the bytes read.
func jpLexString(s string) (string, int, error) {
	var b strings.Builder
	i := 1
	for i < len(s) {
		c := s[i]
		if c == '"' {
			return b.String(), i + 1, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x':
			j := i
			for j < len(s) && j < i+2 && isHex(s[j]) {
				j++
			}
			if j == i {
				return "", 0, &jpError{"42601", "invalid hexadecimal character sequence"}
			}
			v, _ := strconv.ParseUint(s[i:j], 16, 32)
			if v == 0 {
				return "", 0, &jpError{"22P05", "unsupported Unicode escape sequence"}
			}
			b.WriteRune(rune(v))
			i = j
		case 'u':
			var cp uint64
			if i < len(s) && s[i] == '{' {
				j := i + 1
				for j < len(s) && isHex(s[j]) && j < i+7 {
					j++
				}
				if j == i+1 || j >= len(s) || s[j] != '}' {
					return "", 0, &jpError{"42601", "invalid Unicode escape sequence"}
				}
				cp, _ = strconv.ParseUint(s[i+1:j], 16, 32)
				i = j + 1
			} else {
				if i+4 > len(s) || !isHex(s[i]) || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) {
					return "", 0, &jpError{"42601", "invalid Unicode escape sequence"}
				}
				cp, _ = strconv.ParseUint(s[i:i+4], 16, 32)
				i += 4
				if cp >= 0xD800 && cp <= 0xDBFF {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
						lo, _ := strconv.ParseUint(s[i+2:i+6], 16, 32)
						if lo >= 0xDC00 && lo <= 0xDFFF {
							cp = 0x10000 + (cp-0xD800)<<10 + (lo - 0xDC00)
							i += 6
						} else {
							return "", 0, &jpError{"22P02", "invalid Unicode surrogate pair"}
						}
					} else {
						return "", 0, &jpError{"22P02", "invalid Unicode surrogate pair"}
					}
				} else if cp >= 0xDC00 && cp <= 0xDFFF {
					return "", 0, &jpError{"22P02", "invalid Unicode surrogate pair"}
				}
			}
			if cp == 0 {
				return "", 0, &jpError{"22P05", "unsupported Unicode escape sequence"}
			}
			if cp > utf8.MaxRune {
				return "", 0, &jpError{"42601", "invalid Unicode escape value"}
			}
			b.WriteRune(rune(cp))
		default:
			b.WriteByte(e)
		}
	}
	return "", 0, &jpError{"42601", "unexpected end of quoted string"}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// --- parser ---

type jpParser struct {
	toks    []jpTok
	pos     int
	filters int // nesting of ? (...): where @ may stand
}

func (p *jpParser) peek() jpTok {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return jpTok{kind: tkEOF}
}

func (p *jpParser) peekAt(k int) jpTok {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return jpTok{kind: tkEOF}
}

func (p *jpParser) isOp(s string) bool {
	t := p.peek()
	return t.kind == tkOp && t.s == s
}

// isKw: an identifier spelling the keyword (keywords ignore case).
func (p *jpParser) isKw(kw string) bool {
	t := p.peek()
	return t.kind == tkIdent && strings.EqualFold(t.s, kw)
}

func (p *jpParser) fail() error {
	t := p.peek()
	switch t.kind {
	case tkEOF:
		return jpSyntax("")
	case tkString:
		return jpSyntax(t.s)
	case tkVariable:
		return jpSyntax("$" + t.s)
	}
	return jpSyntax(t.s)
}

func (p *jpParser) expectOp(s string) error {
	if !p.isOp(s) {
		return p.fail()
	}
	p.pos++
	return nil
}

func isPred(n *jpNode) bool {
	if n.next != nil {
		return false
	}
	switch n.kind {
	case jpAnd, jpOr, jpNot, jpIsUnknown, jpExists, jpCmp, jpStartsWith, jpLikeRegex:
		return true
	}
	return false
}

// parseJSONPath parses a jsonpath's text.
func parseJSONPath(s string) (*jpPath, error) {
	if !utf8.ValidString(s) {
		return nil, &jpError{"22021", "invalid byte sequence for encoding \"UTF8\""}
	}
	toks, err := jpLex(s)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, &jpError{"22P02", fmt.Sprintf("invalid input syntax for type jsonpath: \"%s\"", s)}
	}
	p := &jpParser{toks: toks}
	jp := &jpPath{lax: true}
	if p.isKw("strict") {
		jp.lax = false
		p.pos++
	} else if p.isKw("lax") {
		p.pos++
	}
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tkEOF {
		return nil, p.fail()
	}
	jp.expr = e
	if err := jpCheck(e, false, false); err != nil {
		return nil, err
	}
	return jp, nil
}

// jpCheck: @ only inside filters, last only inside subscripts.
func jpCheck(n *jpNode, inFilter, inSub bool) error {
	for ; n != nil; n = n.next {
		switch n.kind {
		case jpCurrent:
			if !inFilter {
				return &jpError{"42601", "@ is not allowed in root expressions"}
			}
		case jpLast:
			if !inSub {
				return &jpError{"42601", "LAST is allowed only in array subscripts"}
			}
		case jpFilter:
			if err := jpCheck(n.left, true, inSub); err != nil {
				return err
			}
			continue
		case jpIndex:
			for _, s := range n.subs {
				if err := jpCheck(s.from, inFilter, true); err != nil {
					return err
				}
				if err := jpCheck(s.to, inFilter, true); err != nil {
					return err
				}
			}
			continue
		}
		if err := jpCheck(n.left, inFilter, inSub); err != nil {
			return err
		}
		if err := jpCheck(n.right, inFilter, inSub); err != nil {
			return err
		}
	}
	return nil
}

func (p *jpParser) parseOr() (*jpNode, error) { return p.parseChain("||", jpOr, p.parseAnd) }

func (p *jpParser) parseAnd() (*jpNode, error) { return p.parseChain("&&", jpAnd, p.parseNot) }

// parseChain reads next (op next)*, each side a predicate, left to right.
func (p *jpParser) parseChain(op string, kind jpKind, next func() (*jpNode, error)) (*jpNode, error) {
	l, err := next()
	if err != nil {
		return nil, err
	}
	for p.isOp(op) {
		if !isPred(l) {
			return nil, p.fail()
		}
		p.pos++
		r, err := next()
		if err != nil {
			return nil, err
		}
		if !isPred(r) {
			return nil, p.fail()
		}
		l = &jpNode{kind: kind, left: l, right: r}
	}
	return l, nil
}

func (p *jpParser) parseNot() (*jpNode, error) {
	if !p.isOp("!") {
		return p.parseComparison()
	}
	p.pos++
	var inner *jpNode
	switch {
	case p.isOp("("):
		p.pos++
		e, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if !isPred(e) {
			return nil, p.fail()
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		inner = e
	case p.isKw("exists"):
		e, err := p.parseExists()
		if err != nil {
			return nil, err
		}
		inner = e
	default:
		return nil, p.fail()
	}
	return &jpNode{kind: jpNot, left: inner}, nil
}

var jpCmpOps = map[string]string{"==": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

func (p *jpParser) parseComparison() (*jpNode, error) {
	l, err := p.parseAdditive()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if op, ok := jpCmpOps[t.s]; ok && t.kind == tkOp {
		p.pos++
		r, err := p.parseAdditive()
		if err != nil {
			return nil, err
		}
		if isPred(l) || isPred(r) {
			return nil, p.fail()
		}
		return &jpNode{kind: jpCmp, str: op, left: l, right: r}, nil
	}
	if p.isKw("starts") {
		if isPred(l) {
			return nil, p.fail()
		}
		p.pos++
		if !p.isKw("with") {
			return nil, p.fail()
		}
		p.pos++
		t := p.peek()
		var r *jpNode
		switch t.kind {
		case tkString:
			r = &jpNode{kind: jpString, str: t.s}
		case tkVariable:
			r = &jpNode{kind: jpVariable, str: t.s}
		default:
			return nil, p.fail()
		}
		p.pos++
		return &jpNode{kind: jpStartsWith, left: l, right: r}, nil
	}
	if p.isKw("like_regex") {
		if isPred(l) {
			return nil, p.fail()
		}
		p.pos++
		t := p.peek()
		if t.kind != tkString {
			return nil, p.fail()
		}
		p.pos++
		n := &jpNode{kind: jpLikeRegex, left: l, str: t.s}
		if p.isKw("flag") {
			p.pos++
			f := p.peek()
			if f.kind != tkString {
				return nil, p.fail()
			}
			p.pos++
			n.flags = f.s
		}
		re, err := jpCompileRegex(n.str, n.flags)
		if err != nil {
			return nil, err
		}
		n.re = re
		return n, nil
	}
	return l, nil
}

// jpCompileRegex validates like_regex's flags and compiles the pattern
// (Go's RE2 stands in for PostgreSQL's ARE engine).
func jpCompileRegex(pat, flags string) (*regexp.Regexp, error) {
	var i, s, m, q bool
	for _, r := range flags {
		switch r {
		case 'i':
			i = true
		case 's':
			s = true
		case 'm':
			m = true
		case 'q':
			q = true
		case 'x':
		default:
			return nil, &jpError{"42601", "invalid input syntax for type jsonpath"}
		}
	}
	if strings.ContainsRune(flags, 'x') && !q {
		return nil, &jpError{"0A000", `XQuery "x" flag (expanded regular expressions) is not implemented`}
	}
	pre := ""
	if i {
		pre += "i"
	}
	if q {
		pat = regexp.QuoteMeta(pat)
	} else {
		pat = areEscapes(pat)
		if s {
			pre += "s"
		}
		if m {
			pre += "m"
		}
	}
	if pre != "" {
		pat = "(?" + pre + ")" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, &jpError{"2201B", "invalid regular expression: " + err.Error()}
	}
	return re, nil
}

func (p *jpParser) parseAdditive() (*jpNode, error) {
	l, err := p.parseMul()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.peek().s
		if isPred(l) {
			return nil, p.fail()
		}
		p.pos++
		r, err := p.parseMul()
		if err != nil {
			return nil, err
		}
		if isPred(r) {
			return nil, p.fail()
		}
		l = &jpNode{kind: jpArith, str: op, left: l, right: r}
	}
	return l, nil
}

func (p *jpParser) parseMul() (*jpNode, error) {
	l, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("%") {
		op := p.peek().s
		if isPred(l) {
			return nil, p.fail()
		}
		p.pos++
		r, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		if isPred(r) {
			return nil, p.fail()
		}
		l = &jpNode{kind: jpArith, str: op, left: l, right: r}
	}
	return l, nil
}

func (p *jpParser) parseUnary() (*jpNode, error) {
	if p.isOp("+") || p.isOp("-") {
		op := p.peek().s
		p.pos++
		a, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		if isPred(a) {
			return nil, p.fail()
		}
		if a.kind == jpNumeric && a.next == nil {
			// PostgreSQL folds a sign into a number literal.
			if op == "-" {
				return &jpNode{kind: jpNumeric, num: a.num.neg()}, nil
			}
			return a, nil
		}
		return &jpNode{kind: jpUnary, str: op, left: a}, nil
	}
	return p.parseAccessorExpr()
}

func jpTail(n *jpNode) *jpNode {
	for n.next != nil {
		n = n.next
	}
	return n
}

func (p *jpParser) parseAccessorExpr() (*jpNode, error) {
	head, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	if head.kind == jpIsUnknown || (head.parens && isPred(head) && !p.startsAccessor()) {
		return head, nil
	}
	tail := jpTail(head)
	for p.startsAccessor() {
		a, err := p.parseAccessor()
		if err != nil {
			return nil, err
		}
		tail.next = a
		tail = a
	}
	return head, nil
}

func (p *jpParser) startsAccessor() bool {
	return p.isOp(".") || p.isOp("[") || p.isOp("?")
}

func (p *jpParser) parseExists() (*jpNode, error) {
	p.pos++ // exists
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if isPred(e) {
		return nil, p.fail()
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &jpNode{kind: jpExists, left: e}, nil
}

func (p *jpParser) parsePrimary() (*jpNode, error) {
	t := p.peek()
	switch t.kind {
	case tkNumber:
		p.pos++
		return &jpNode{kind: jpNumeric, num: t.num}, nil
	case tkString:
		p.pos++
		return &jpNode{kind: jpString, str: t.s}, nil
	case tkVariable:
		p.pos++
		return &jpNode{kind: jpVariable, str: t.s}, nil
	case tkOp:
		switch t.s {
		case "$":
			p.pos++
			return &jpNode{kind: jpRoot}, nil
		case "@":
			p.pos++
			return &jpNode{kind: jpCurrent}, nil
		case "(":
			p.pos++
			e, err := p.parseOr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			if p.isKw("is") {
				if !isPred(e) {
					return nil, p.fail()
				}
				p.pos++
				if !p.isKw("unknown") {
					return nil, p.fail()
				}
				p.pos++
				return &jpNode{kind: jpIsUnknown, left: e}, nil
			}
			if isPred(e) {
				// A parenthesized predicate keeps its own node; accessors
				// after it chain onto it.
				e.parens = true
			}
			return e, nil
		}
	case tkIdent:
		switch strings.ToLower(t.s) {
		case "null":
			p.pos++
			return &jpNode{kind: jpNull}, nil
		case "true", "false":
			p.pos++
			return &jpNode{kind: jpBoolLit, b: strings.EqualFold(t.s, "true")}, nil
		case "last":
			p.pos++
			return &jpNode{kind: jpLast}, nil
		case "exists":
			return p.parseExists()
		}
	}
	return nil, p.fail()
}

func (p *jpParser) parseAccessor() (*jpNode, error) {
	t := p.peek()
	p.pos++
	switch t.s {
	case "?":
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		p.filters++
		e, err := p.parseOr()
		p.filters--
		if err != nil {
			return nil, err
		}
		if !isPred(e) {
			return nil, p.fail()
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &jpNode{kind: jpFilter, left: e}, nil
	case "[":
		if p.isOp("*") && p.peekAt(1).kind == tkOp && p.peekAt(1).s == "]" {
			p.pos += 2
			return &jpNode{kind: jpAnyArray}, nil
		}
		n := &jpNode{kind: jpIndex}
		for {
			from, err := p.parseOr()
			if err != nil {
				return nil, err
			}
			if isPred(from) {
				return nil, p.fail()
			}
			sub := jpSub{from: from}
			if p.isKw("to") {
				p.pos++
				to, err := p.parseOr()
				if err != nil {
					return nil, err
				}
				if isPred(to) {
					return nil, p.fail()
				}
				sub.to = to
			}
			n.subs = append(n.subs, sub)
			if p.isOp(",") {
				p.pos++
				continue
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			return n, nil
		}
	}
	// "."
	k := p.peek()
	switch {
	case k.kind == tkOp && k.s == "*":
		p.pos++
		return &jpNode{kind: jpAnyKey}, nil
	case k.kind == tkOp && k.s == "**":
		p.pos++
		n := &jpNode{kind: jpAny, first: 0, last: jpAnyLast}
		if p.isOp("{") {
			p.pos++
			f, err := p.parseLevel()
			if err != nil {
				return nil, err
			}
			n.first, n.last = f, f
			if p.isKw("to") {
				p.pos++
				l, err := p.parseLevel()
				if err != nil {
					return nil, err
				}
				n.last = l
			}
			if err := p.expectOp("}"); err != nil {
				return nil, err
			}
		}
		return n, nil
	case k.kind == tkString:
		p.pos++
		return &jpNode{kind: jpKey, str: k.s}, nil
	case k.kind == tkIdent:
		p.pos++
		if p.isOp("(") {
			m := strings.ToLower(k.s)
			if !jpMethods[m] {
				return nil, p.fail()
			}
			p.pos++
			if m == "datetime" {
				return nil, &jpError{"0A000", "jsonpath item method .datetime() is not supported on the SQLite back end"}
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return &jpNode{kind: jpMethod, str: m}, nil
		}
		return &jpNode{kind: jpKey, str: k.s}, nil
	}
	return nil, p.fail()
}

func (p *jpParser) parseLevel() (int64, error) {
	t := p.peek()
	if t.kind == tkIdent && strings.EqualFold(t.s, "last") {
		p.pos++
		return jpAnyLast, nil
	}
	if t.kind == tkNumber && t.num.s == 0 && t.num.c.Sign() >= 0 && !strings.ContainsAny(t.s, ".eE") {
		p.pos++
		if !t.num.c.IsInt64() || t.num.c.Int64() >= jpAnyLast {
			return 0, p.fail()
		}
		return t.num.c.Int64(), nil
	}
	return 0, p.fail()
}

// --- printer (jsonpath_out) ---

func jpPriority(n *jpNode) int {
	switch n.kind {
	case jpOr:
		return 0
	case jpAnd:
		return 1
	case jpCmp, jpStartsWith, jpLikeRegex:
		return 2
	case jpArith:
		if n.str == "+" || n.str == "-" {
			return 3
		}
		return 4
	case jpUnary:
		return 5
	}
	return 6
}

func (jp *jpPath) String() string {
	var b strings.Builder
	if !jp.lax {
		b.WriteString("strict ")
	}
	jpPrint(&b, jp.expr, false, true)
	return b.String()
}

func jpOpName(n *jpNode) string {
	switch n.kind {
	case jpAnd:
		return "&&"
	case jpOr:
		return "||"
	case jpStartsWith:
		return "starts with"
	}
	return n.str
}

func jpPrint(b *strings.Builder, n *jpNode, inKey, brackets bool) {
	// An operator followed by an accessor, (1 + 2).a, keeps its brackets
	// wherever it stands: PostgreSQL 15 prints 0 % 1."a" for 0 % (1)."a",
	// which reads back as 0 % (1."a").
	brackets = brackets || n.next != nil
	switch n.kind {
	case jpNull:
		b.WriteString("null")
	case jpBoolLit:
		b.WriteString(strconv.FormatBool(n.b))
	case jpNumeric:
		if n.next != nil {
			b.WriteByte('(')
		}
		b.WriteString(n.num.String())
		if n.next != nil {
			b.WriteByte(')')
		}
	case jpString:
		writeJSONString(b, n.str)
	case jpVariable:
		b.WriteByte('$')
		writeJSONString(b, n.str)
	case jpKey:
		if inKey {
			b.WriteByte('.')
		}
		writeJSONString(b, n.str)
	case jpAnd, jpOr, jpCmp, jpArith, jpStartsWith:
		if brackets {
			b.WriteByte('(')
		}
		jpPrint(b, n.left, false, jpPriority(n.left) <= jpPriority(n))
		b.WriteString(" " + jpOpName(n) + " ")
		jpPrint(b, n.right, false, jpPriority(n.right) <= jpPriority(n))
		if brackets {
			b.WriteByte(')')
		}
	case jpLikeRegex:
		if brackets {
			b.WriteByte('(')
		}
		jpPrint(b, n.left, false, jpPriority(n.left) <= jpPriority(n))
		b.WriteString(" like_regex ")
		writeJSONString(b, n.str)
		if n.flags != "" {
			b.WriteString(` flag "`)
			for _, f := range "ismxq" {
				if strings.ContainsRune(n.flags, f) {
					b.WriteRune(f)
				}
			}
			b.WriteByte('"')
		}
		if brackets {
			b.WriteByte(')')
		}
	case jpUnary:
		if brackets {
			b.WriteByte('(')
		}
		b.WriteString(n.str)
		jpPrint(b, n.left, false, jpPriority(n.left) <= jpPriority(n))
		if brackets {
			b.WriteByte(')')
		}
	case jpFilter:
		b.WriteString("?(")
		jpPrint(b, n.left, false, false)
		b.WriteByte(')')
	case jpNot:
		b.WriteString("!(")
		jpPrint(b, n.left, false, false)
		b.WriteByte(')')
	case jpIsUnknown:
		b.WriteByte('(')
		jpPrint(b, n.left, false, false)
		b.WriteString(") is unknown")
	case jpExists:
		b.WriteString("exists (")
		jpPrint(b, n.left, false, false)
		b.WriteByte(')')
	case jpCurrent:
		b.WriteByte('@')
	case jpRoot:
		b.WriteByte('$')
	case jpLast:
		b.WriteString("last")
	case jpAnyArray:
		b.WriteString("[*]")
	case jpAnyKey:
		if inKey {
			b.WriteByte('.')
		}
		b.WriteByte('*')
	case jpIndex:
		b.WriteByte('[')
		for i, s := range n.subs {
			if i > 0 {
				b.WriteByte(',')
			}
			jpPrint(b, s.from, false, false)
			if s.to != nil {
				b.WriteString(" to ")
				jpPrint(b, s.to, false, false)
			}
		}
		b.WriteByte(']')
	case jpAny:
		if inKey {
			b.WriteByte('.')
		}
		lvl := func(v int64) string {
			if v == jpAnyLast {
				return "last"
			}
			return strconv.FormatInt(v, 10)
		}
		switch {
		case n.first == 0 && n.last == jpAnyLast:
			b.WriteString("**")
		case n.first == n.last:
			b.WriteString("**{" + lvl(n.first) + "}")
		default:
			b.WriteString("**{" + lvl(n.first) + " to " + lvl(n.last) + "}")
		}
	case jpMethod:
		b.WriteString("." + n.str + "()")
	}
	if n.next != nil {
		jpPrint(b, n.next, true, true)
	}
}

// castJSONPath is text::jsonpath: the path as jsonpath_out prints it.
func castJSONPath(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	jp, err := parseJSONPath(fmt.Sprint(toText(v)))
	if err != nil {
		return nil, err
	}
	return jp.String(), nil
}

// areEscapes rewrites the escapes where PostgreSQL's regular expressions
// (ARE) and Go's differ: \b is a backspace, \y / \Y word boundaries;
// \m and \M (a word's start and end) become word boundaries.
func areEscapes(p string) string {
	if !strings.Contains(p, "\\") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '\\' || i+1 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		i++
		switch p[i] {
		case 'b':
			b.WriteString(`\x08`)
		case 'y', 'm', 'M':
			b.WriteString(`\b`)
		case 'Y':
			b.WriteString(`\B`)
		case 'B':
			b.WriteString(`\\`)
		case 'e':
			b.WriteString(`\x1b`)
		case 'a':
			b.WriteString(`\x07`)
		default:
			b.WriteByte('\\')
			b.WriteByte(p[i])
		}
	}
	return b.String()
}
