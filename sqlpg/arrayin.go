package sqlpg

import (
	"fmt"
	"strconv"
	"strings"
)

// Array input. An array is stored as its text form, so two arrays are
// equal, contain each other or hold an element only when their texts are
// written alike: '{"3","1","2"}' (node-postgres writes every array so)
// and '{ 3 , 1,2}' must be stored as PostgreSQL's array_out writes them,
// {3,1,2}, and an element that its type does not read must fail (22P02),
// as PostgreSQL's array_in does.

// arrayIn reads s, an array literal of elements of type elem, and
// writes it in PostgreSQL's output form.
func arrayIn(s string, elem *Type) (string, error) {
	p := arrayParser{s: s, elem: elem}
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return "", p.malformed(`Array value must start with "{" or dimension information.`)
	}
	var b strings.Builder
	if err := p.array(&b); err != nil {
		return "", err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return "", p.malformed("Junk after closing right brace.")
	}
	return b.String(), nil
}

type arrayParser struct {
	s     string
	i     int
	elem  *Type
	depth int
}

// maxArrayDims is PostgreSQL's MAXDIM.
const maxArrayDims = 6

func (p *arrayParser) malformed(string) error {
	return fmt.Errorf("[SQLSTATE 22P02] malformed array literal: %q", p.s)
}

func (p *arrayParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

// array reads one {...} level at p.i and writes it to b.
func (p *arrayParser) array(b *strings.Builder) error {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxArrayDims {
		return fmt.Errorf("[SQLSTATE 54000] number of array dimensions (%d) exceeds the maximum allowed (%d)", p.depth, maxArrayDims)
	}
	p.i++ // {
	b.WriteByte('{')
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		b.WriteByte('}')
		return nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			b.WriteByte(',')
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return p.malformed("Unexpected end of input.")
		}
		if p.s[p.i] == '{' {
			if err := p.array(b); err != nil {
				return err
			}
		} else if err := p.element(b); err != nil {
			return err
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return p.malformed("Unexpected end of input.")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			b.WriteByte('}')
			return nil
		default:
			return p.malformed(fmt.Sprintf("Unexpected %q character.", p.s[p.i]))
		}
	}
}

// element reads one element (quoted or not) and writes its output form.
func (p *arrayParser) element(b *strings.Builder) error {
	var v strings.Builder
	quoted := false
	if p.s[p.i] == '"' {
		quoted = true
		p.i++
		for {
			if p.i >= len(p.s) {
				return p.malformed("Unexpected end of input.")
			}
			c := p.s[p.i]
			if c == '"' {
				p.i++
				break
			}
			if c == '\\' && p.i+1 < len(p.s) {
				p.i++
				c = p.s[p.i]
			}
			v.WriteByte(c)
			p.i++
		}
	} else {
		for p.i < len(p.s) && p.s[p.i] != ',' && p.s[p.i] != '}' {
			c := p.s[p.i]
			if c == '{' || c == '"' {
				return p.malformed(fmt.Sprintf("Unexpected %q character.", c))
			}
			if c == '\\' && p.i+1 < len(p.s) {
				p.i++
				c = p.s[p.i]
			}
			v.WriteByte(c)
			p.i++
		}
	}
	text := v.String()
	if !quoted {
		text = strings.TrimRight(text, " \t\r\n")
		if strings.EqualFold(text, "null") {
			b.WriteString("NULL")
			return nil
		}
		if text == "" {
			return p.malformed("Unexpected \"}\" character.")
		}
	}
	out, err := elemOut(text, p.elem)
	if err != nil {
		return err
	}
	if out == "" || strings.ContainsAny(out, `,{}" \`) || strings.EqualFold(out, "null") {
		out = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(out) + `"`
	}
	b.WriteString(out)
	return nil
}

// elemOut is one element's output form: read by its type's cast where
// the output form is the cast's (integers, booleans, uuids), else checked
// and kept as written (numerics keep their scale, strings their text).
func elemOut(text string, elem *Type) (string, error) {
	if elem == nil {
		return text, nil
	}
	switch elem.Name {
	case "int2", "int4", "int8", "oid", "bool", "uuid":
		fn, ok := castFunc(elem).(func(any) (any, error))
		if !ok {
			return text, nil
		}
		v, err := fn(text)
		if err != nil {
			return "", err
		}
		switch x := v.(type) {
		case bool:
			if x {
				return "t", nil
			}
			return "f", nil
		case int64:
			return strconv.FormatInt(x, 10), nil
		}
		return fmt.Sprint(toText(v)), nil
	case "numeric", "float4", "float8":
		t := strings.TrimSpace(text)
		if _, err := strconv.ParseFloat(t, 64); err != nil && !strings.EqualFold(t, "nan") && !strings.EqualFold(t, "infinity") && !strings.EqualFold(t, "-infinity") {
			return "", fmt.Errorf("[SQLSTATE 22P02] invalid input syntax for type %s: %q", elem.SQL, text)
		}
		return t, nil
	}
	return text, nil
}

// ParamIn is a parameter sent as text to a uuid or array parameter in
// the form the column keeps (a uuid in lower case with hyphens, an array
// as array_out writes it), or PostgreSQL's 22P02; any other value as it
// came.
func ParamIn(oid uint32, s string) (any, error) {
	t := Types[oid]
	if t == nil {
		return s, nil
	}
	switch {
	case t.Name == "uuid", t.Cat == 'A' && t.Elem != 0 && t.Name != "int2vector" && t.Name != "oidvector":
		fn, ok := castFunc(t).(func(any) (any, error))
		if !ok {
			return s, nil
		}
		return fn(s)
	}
	return s, nil
}
