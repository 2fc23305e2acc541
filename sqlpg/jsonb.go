package sqlpg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tandemdb/tandem/pgwire"
)

// jsonb values print as PostgreSQL prints them: object keys sorted
// (shorter keys first, then bytewise) without duplicates, ", " and ": "
// between items. json keeps the text as written.

// NormalizeJSONB returns PostgreSQL's jsonb text for a JSON document.
func NormalizeJSONB(s string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	if dec.More() {
		return "", false
	}
	var b strings.Builder
	writeJSONB(&b, v)
	return b.String(), true
}

func writeJSONB(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(x.String())
	case string:
		writeJSONString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONB(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if len(keys[i]) != len(keys[j]) {
				return len(keys[i]) < len(keys[j])
			}
			return keys[i] < keys[j]
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONString(b, k)
			b.WriteString(": ")
			writeJSONB(b, x[k])
		}
		b.WriteByte('}')
	}
}

func writeJSONString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.WriteString(strings.TrimSuffix(buf.String(), "\n"))
}

// jsonValue is a SQL value as a JSON value (for json_build_* and to_json).
func jsonValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case float64:
		return json.Number(pgwire.AppendFloat(nil, x, 64))
	case []byte:
		return string(x)
	case string:
		switch x {
		case jsonTrue:
			return true
		case jsonFalse:
			return false
		}
		if strings.HasPrefix(x, jsonNumber) {
			return json.Number(x[len(jsonNumber):])
		}
		if strings.HasPrefix(x, jsonRaw) {
			if d, err := decodeJSON(x[len(jsonRaw):]); err == nil {
				return d
			}
			return x[len(jsonRaw):]
		}
		return x
	}
	return fmt.Sprint(v)
}

// jsonTrue and jsonFalse are how _pg_json_bool hands a boolean to the json
// builders (SQLite's booleans are integers).
const (
	jsonTrue  = "\x00json:true"
	jsonFalse = "\x00json:false"
	// jsonNumber prefixes a number's text as _pg_json_numeric hands it
	// over (a numeric(p,s) keeps its scale in JSON: 1.500).
	jsonNumber = "\x00json:num:"
	// jsonRaw prefixes a json or jsonb value's text as _pg_json_raw hands
	// it to the builders (jsonb_build_object('x', '[1]'::jsonb) holds
	// the array, not a string).
	jsonRaw = "\x00json:raw:"
)

func init() {
	extraFuncs = append(extraFuncs, namedFunc{"_pg_json_numeric", func(v any, scale int64) any {
		switch x := v.(type) {
		case float64:
			return jsonNumber + FormatNumeric(x, int(scale))
		case int64:
			return jsonNumber + FormatNumeric(float64(x), int(scale))
		}
		return v
	}})
	extraFuncs = append(extraFuncs, namedFunc{"_pg_json_raw", func(v any) any {
		if v == nil {
			return nil
		}
		return jsonRaw + fmt.Sprint(toText(v))
	}})
	extraFuncs = append(extraFuncs, namedFunc{"_pg_json_bool", func(v any) any {
		switch x := v.(type) {
		case nil:
			return nil
		case int64:
			if x != 0 {
				return jsonTrue
			}
			return jsonFalse
		}
		if b, err := toBool(v); err == nil {
			if b == true {
				return jsonTrue
			}
			return jsonFalse
		}
		return v
	}})
}

func init() {
	extraFuncs = append(extraFuncs,
		namedFunc{"_cast_jsonb", func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			out, ok := NormalizeJSONB(fmt.Sprint(toText(v)))
			if !ok {
				return nil, invalid("json", v)
			}
			return out, nil
		}},
		namedFunc{"_cast_json", func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			s := fmt.Sprint(toText(v))
			if !json.Valid([]byte(s)) {
				return nil, invalid("json", v)
			}
			return s, nil
		}},
		namedFunc{"jsonb_build_object", func(args ...any) (any, error) {
			if len(args)%2 != 0 {
				return nil, fmt.Errorf("argument list must have even number of elements")
			}
			m := map[string]any{}
			for i := 0; i < len(args); i += 2 {
				m[fmt.Sprint(toText(args[i]))] = jsonValue(args[i+1])
			}
			var b strings.Builder
			writeJSONB(&b, m)
			return b.String(), nil
		}},
		namedFunc{"json_build_object", func(args ...any) (any, error) {
			if len(args)%2 != 0 {
				return nil, fmt.Errorf("argument list must have even number of elements")
			}
			var b strings.Builder
			b.WriteByte('{')
			for i := 0; i < len(args); i += 2 {
				if i > 0 {
					b.WriteString(", ")
				}
				writeJSONString(&b, fmt.Sprint(toText(args[i])))
				b.WriteString(" : ")
				writeJSONB(&b, jsonValue(args[i+1]))
			}
			b.WriteByte('}')
			return b.String(), nil
		}},
		namedFunc{"_pg_jsonb_concat", jsonbConcat},
		namedFunc{"_pg_jsonb_delete", jsonbDelete},
		namedFunc{"jsonb_pretty", func(v any) (any, error) {
			if v == nil {
				return nil, nil
			}
			var x any
			dec := json.NewDecoder(strings.NewReader(fmt.Sprint(toText(v))))
			dec.UseNumber()
			if err := dec.Decode(&x); err != nil {
				return nil, invalid("json", v)
			}
			var b strings.Builder
			writePretty(&b, x, 0)
			return b.String(), nil
		}},
		namedFunc{"json_build_array", buildArray},
		namedFunc{"jsonb_build_array", buildArray},
		namedFunc{"to_json", toJSON},
		namedFunc{"to_jsonb", toJSON},
	)
	funcRename["jsonb_array_length"] = "json_array_length"
	funcRename["jsonb_typeof"] = "json_typeof"
}

func decodeJSON(v any) (any, error) {
	var x any
	dec := json.NewDecoder(strings.NewReader(fmt.Sprint(toText(v))))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return nil, invalid("json", v)
	}
	return x, nil
}

// jsonbConcat is jsonb || jsonb: objects merge (right wins), arrays
// concatenate, a scalar joins an array as one element.
func jsonbConcat(a, b any) (any, error) {
	if a == nil || b == nil {
		return nil, nil
	}
	x, err := decodeJSON(a)
	if err != nil {
		return nil, err
	}
	y, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	var out any
	xo, xObj := x.(map[string]any)
	yo, yObj := y.(map[string]any)
	switch {
	case xObj && yObj:
		m := map[string]any{}
		for k, v := range xo {
			m[k] = v
		}
		for k, v := range yo {
			m[k] = v
		}
		out = m
	default:
		arr := func(v any) []any {
			if a, ok := v.([]any); ok {
				return a
			}
			return []any{v}
		}
		out = append(append([]any{}, arr(x)...), arr(y)...)
	}
	var sb strings.Builder
	writeJSONB(&sb, out)
	return sb.String(), nil
}

// jsonbDelete is jsonb - text (a key, or matching string elements of an
// array) and jsonb - integer (an array element by index).
func jsonbDelete(a, k any) (any, error) {
	if a == nil || k == nil {
		return nil, nil
	}
	x, err := decodeJSON(a)
	if err != nil {
		return nil, err
	}
	switch v := x.(type) {
	case map[string]any:
		delete(v, fmt.Sprint(toText(k)))
	case []any:
		if i, ok := k.(int64); ok {
			if i < 0 {
				i += int64(len(v))
			}
			if i >= 0 && i < int64(len(v)) {
				x = append(v[:i:i], v[i+1:]...)
			}
			break
		}
		key := fmt.Sprint(toText(k))
		out := []any{}
		for _, e := range v {
			if s, ok := e.(string); ok && s == key {
				continue
			}
			out = append(out, e)
		}
		x = out
	default:
		return nil, fmt.Errorf("[SQLSTATE 22023] cannot delete from scalar")
	}
	var sb strings.Builder
	writeJSONB(&sb, x)
	return sb.String(), nil
}

// writePretty is jsonb_pretty's layout (four spaces per level).
func writePretty(b *strings.Builder, v any, depth int) {
	ind := strings.Repeat("    ", depth+1)
	end := strings.Repeat("    ", depth)
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{\n" + end + "}")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if len(keys[i]) != len(keys[j]) {
				return len(keys[i]) < len(keys[j])
			}
			return keys[i] < keys[j]
		})
		b.WriteString("{\n")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(ind)
			writeJSONString(b, k)
			b.WriteString(": ")
			writePretty(b, x[k], depth+1)
		}
		b.WriteString("\n" + end + "}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[\n" + end + "]")
			return
		}
		b.WriteString("[\n")
		for i, e := range x {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(ind)
			writePretty(b, e, depth+1)
		}
		b.WriteString("\n" + end + "]")
	default:
		writeJSONB(b, x)
	}
}

func buildArray(args ...any) string {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = jsonValue(a)
	}
	var b strings.Builder
	writeJSONB(&b, vals)
	return b.String()
}

func toJSON(v any) any {
	if v == nil {
		return nil
	}
	var b strings.Builder
	writeJSONB(&b, jsonValue(v))
	return b.String()
}

// jsonbSet is jsonb_set(target, path, new [, create_missing]): new
// replaces the value at path (a text array of keys and indexes); a last
// step that is missing is added when create_missing (the default); a
// missing step before it leaves target unchanged.
func jsonbSet(args ...any) (any, error) {
	if len(args) < 3 || len(args) > 4 {
		return nil, fmt.Errorf("[SQLSTATE 42883] function jsonb_set with %d arguments does not exist", len(args))
	}
	if args[0] == nil || args[1] == nil || args[2] == nil {
		return nil, nil
	}
	create := true
	if len(args) == 4 {
		if args[3] == nil {
			return nil, nil
		}
		b, err := toBool(args[3])
		if err != nil {
			return nil, err
		}
		create, _ = b.(bool)
	}
	root, err := decodeJSON(args[0])
	if err != nil {
		return nil, err
	}
	val, err := decodeJSON(args[2])
	if err != nil {
		return nil, err
	}
	path := arrayElems(args[1])
	var set func(cur any, i int) any
	set = func(cur any, i int) any {
		if i == len(path) {
			return val
		}
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			child, ok := c[path[i]]
			if !ok && !(last && create) {
				return cur
			}
			c[path[i]] = set(child, i+1)
			return c
		case []any:
			n, err := strconv.Atoi(strings.TrimSpace(path[i]))
			if err != nil {
				return cur
			}
			if n < 0 {
				n += len(c)
			}
			switch {
			case n >= 0 && n < len(c):
				c[n] = set(c[n], i+1)
			case !last || !create:
			case n < 0:
				c = append([]any{val}, c...)
			default:
				c = append(c, val)
			}
			return c
		}
		return cur
	}
	if len(path) == 0 {
		return args[0], nil
	}
	switch root.(type) {
	case map[string]any, []any:
	default:
		return nil, fmt.Errorf("[SQLSTATE 22023] cannot set path in scalar")
	}
	var b strings.Builder
	writeJSONB(&b, set(root, 0))
	return b.String(), nil
}

func init() { extraFuncs = append(extraFuncs, namedFunc{"jsonb_set", jsonbSet}) }

// jsonbContains is PostgreSQL's jsonb @>: every key of an object on the
// right is in the left object with a containing value; every element of
// an array on the right is contained in some element of the left array
// (a scalar on the right is contained by an array holding it).
func jsonbContains(a, b any) (any, error) {
	if a == nil || b == nil {
		return nil, nil
	}
	x, err := decodeJSON(a)
	if err != nil {
		return nil, err
	}
	y, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	return jsonContains(x, y, true), nil
}

func jsonContains(x, y any, top bool) bool {
	switch yv := y.(type) {
	case map[string]any:
		xv, ok := x.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range yv {
			xe, ok := xv[k]
			if !ok || !jsonContains(xe, v, false) {
				return false
			}
		}
		return true
	case []any:
		xv, ok := x.([]any)
		if !ok {
			return false
		}
		for _, v := range yv {
			found := false
			for _, xe := range xv {
				if _, isArr := v.([]any); !isArr {
					if _, xArr := xe.([]any); xArr {
						continue
					}
				}
				if jsonContains(xe, v, false) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	if xv, ok := x.([]any); ok && top {
		for _, xe := range xv {
			if scalarEqual(xe, y) {
				return true
			}
		}
		return false
	}
	return scalarEqual(x, y)
}

func scalarEqual(x, y any) bool {
	switch xv := x.(type) {
	case json.Number:
		yv, ok := y.(json.Number)
		if !ok {
			return false
		}
		a, err1 := strconv.ParseFloat(string(xv), 64)
		b, err2 := strconv.ParseFloat(string(yv), 64)
		return err1 == nil && err2 == nil && a == b
	case map[string]any, []any:
		return false
	}
	return x == y
}

// jsonbExists is jsonb ? key: a key of an object, a string element of an
// array, or the string itself.
func jsonbExists(a, k any) (any, error) {
	if a == nil || k == nil {
		return nil, nil
	}
	x, err := decodeJSON(a)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprint(toText(k))
	switch xv := x.(type) {
	case map[string]any:
		_, ok := xv[key]
		return ok, nil
	case []any:
		for _, e := range xv {
			if s, ok := e.(string); ok && s == key {
				return true, nil
			}
		}
		return false, nil
	case string:
		return xv == key, nil
	}
	return false, nil
}

// jsonPath is json #> path (asText: #>>): the value at a path of keys and
// array indexes (negative from the end), NULL when it is not there.
func jsonPath(asText bool) func(a, p any) (any, error) {
	return func(a, p any) (any, error) {
		if a == nil || p == nil {
			return nil, nil
		}
		x, err := decodeJSON(a)
		if err != nil {
			return nil, err
		}
		for _, step := range arrayElems(p) {
			switch xv := x.(type) {
			case map[string]any:
				v, ok := xv[step]
				if !ok {
					return nil, nil
				}
				x = v
			case []any:
				i, err := strconv.Atoi(strings.TrimSpace(step))
				if err != nil {
					return nil, nil
				}
				if i < 0 {
					i += len(xv)
				}
				if i < 0 || i >= len(xv) {
					return nil, nil
				}
				x = xv[i]
			default:
				return nil, nil
			}
		}
		if asText {
			switch xv := x.(type) {
			case nil:
				return nil, nil
			case string:
				return xv, nil
			}
		}
		var b strings.Builder
		writeJSONB(&b, x)
		return b.String(), nil
	}
}

// jsonFieldText is json ->> key: an object's member (a text key) or an
// array's element (an integer, negative from the end) as text, PostgreSQL's
// way: a string unquoted, true and false and numbers as their JSON text,
// JSON null as NULL. (SQLite's own ->> answers numbers and booleans as
// SQL numbers: 1 for true, and 1 unequal to the text '1'.)
func jsonFieldText(a, k any) (any, error) {
	if a == nil || k == nil {
		return nil, nil
	}
	x, err := decodeJSON(a)
	if err != nil {
		return nil, err
	}
	switch xv := x.(type) {
	case map[string]any:
		key, ok := k.(string)
		if !ok {
			if b, isBytes := k.([]byte); isBytes {
				key, ok = string(b), true
			}
		}
		if !ok {
			return nil, nil
		}
		v, found := xv[key]
		if !found {
			return nil, nil
		}
		x = v
	case []any:
		i, ok := k.(int64)
		if !ok {
			return nil, nil
		}
		if i < 0 {
			i += int64(len(xv))
		}
		if i < 0 || i >= int64(len(xv)) {
			return nil, nil
		}
		x = xv[i]
	default:
		return nil, nil
	}
	switch xv := x.(type) {
	case nil:
		return nil, nil
	case string:
		return xv, nil
	}
	var b strings.Builder
	writeJSONB(&b, x)
	return b.String(), nil
}

func init() {
	extraFuncs = append(extraFuncs,
		namedFunc{"_pg_json_field_text", jsonFieldText},
		namedFunc{"_pg_jsonb_contains", jsonbContains},
		namedFunc{"_pg_jsonb_exists", jsonbExists},
		namedFunc{"_pg_json_path", jsonPath(false)},
		namedFunc{"_pg_json_path_text", jsonPath(true)},
	)
}
