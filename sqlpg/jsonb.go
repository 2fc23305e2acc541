package sqlpg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	case []byte:
		return string(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
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
		namedFunc{"json_build_array", buildArray},
		namedFunc{"jsonb_build_array", buildArray},
		namedFunc{"to_json", toJSON},
		namedFunc{"to_jsonb", toJSON},
	)
	funcRename["jsonb_array_length"] = "json_array_length"
	funcRename["jsonb_typeof"] = "json_typeof"
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
