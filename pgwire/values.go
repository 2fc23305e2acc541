package pgwire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// A pgtype.Map caches encode and scan plans in plain maps: it must not be
// shared between goroutines (sessions encoding at the same time crashed a
// node with "concurrent map writes"). Each call borrows one from a pool.
var typeMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

// appendText appends the PostgreSQL text form of v.
func appendText(dst []byte, oid uint32, v any, loc *time.Location) []byte {
	switch x := v.(type) {
	case int64:
		if oid == OIDBool {
			if x != 0 {
				return append(dst, 't')
			}
			return append(dst, 'f')
		}
		return strconv.AppendInt(dst, x, 10)
	case float64:
		switch {
		case math.IsInf(x, 1):
			return append(dst, "Infinity"...)
		case math.IsInf(x, -1):
			return append(dst, "-Infinity"...)
		case math.IsNaN(x):
			return append(dst, "NaN"...)
		}
		if oid == OIDInt8 && x == math.Trunc(x) && math.Abs(x) < 1e18 {
			return strconv.AppendInt(dst, int64(x), 10)
		}
		if oid == OIDFloat4 {
			return AppendFloat(dst, x, 32)
		}
		return AppendFloat(dst, x, 64)
	case bool:
		if x {
			return append(dst, 't')
		}
		return append(dst, 'f')
	case string:
		return append(dst, x...)
	case []byte:
		if oid == OIDBytea {
			dst = append(dst, '\\', 'x')
			return hex.AppendEncode(dst, x)
		}
		return append(dst, x...)
	case time.Time:
		if oid == OIDDate {
			return x.AppendFormat(dst, "2006-01-02")
		}
		if oid == OIDTimestamptz {
			return AppendTimestamptz(dst, x, loc)
		}
		return x.AppendFormat(dst, "2006-01-02 15:04:05.999999")
	default:
		return fmt.Append(dst, v)
	}
}

// coerce converts a back-end value to the Go type pgtype encodes in binary
// for oid.
func coerce(oid uint32, v any) (any, error) {
	switch oid {
	case OIDInt8, OIDInt4, OIDInt2:
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			return int64(x), nil
		case bool:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		case string:
			return strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		}
	case OIDFloat8, OIDFloat4:
		switch x := v.(type) {
		case int64:
			return float64(x), nil
		case float64:
			return x, nil
		case string:
			return strconv.ParseFloat(strings.TrimSpace(x), 64)
		}
	case OIDBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			return x != 0, nil
		case string:
			return strconv.ParseBool(x)
		}
	case OIDNumeric:
		switch x := v.(type) {
		case int64, float64:
			return x, nil
		case string:
			var n pgtype.Numeric
			if err := n.Scan(x); err != nil {
				return nil, err
			}
			return n, nil
		}
	case OIDText, OIDVarchar, OIDBPChar, OIDUnknown:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		default:
			return string(appendText(nil, oid, v, time.UTC)), nil
		}
	case OIDBytea:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			return []byte(x), nil
		}
	case OIDTimestamp, OIDTimestamptz, OIDDate:
		switch x := v.(type) {
		case time.Time:
			return x, nil
		case string:
			for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", "2006-01-02T15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
				if t, err := time.Parse(layout, x); err == nil {
					return t, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("cannot send %T value %v as type OID %d in binary format", v, v, oid)
}

// appendValue appends a DataRow field (without its length) for v.
func appendValue(dst []byte, oid uint32, format int16, v any, loc *time.Location) ([]byte, error) {
	if r, ok := v.(Raw); ok {
		return append(dst, r...), nil
	}
	if format == 0 || IsEnumOID(oid) {
		return appendText(dst, oid, v, loc), nil // an enum's binary form is its label
	}
	switch oid {
	case 18: // "char": one byte, the empty value's a zero
		t := appendText(nil, oid, v, loc)
		if len(t) == 0 {
			return append(dst, 0), nil
		}
		return append(dst, t[0]), nil
	case 22, 30: // int2vector, oidvector: "1 2" as a one-dimensional array from 0
		return appendVector(dst, oid, string(appendText(nil, oid, v, loc)))
	case 114: // json: binary is the text
		return appendText(dst, OIDText, v, loc), nil
	case 3802, 4072: // jsonb, jsonpath: a version byte, then the text
		return appendText(append(dst, 1), OIDText, v, loc), nil
	case 2950: // uuid held in its text form: 16 bytes
		if s, ok := v.(string); ok {
			b, err := hex.DecodeString(strings.ReplaceAll(strings.Trim(s, "{}"), "-", ""))
			if err != nil || len(b) != 16 {
				return nil, Errorf("22P03", "invalid uuid value %q", s)
			}
			return append(dst, b...), nil
		}
	}
	typeMap := typeMaps.Get().(*pgtype.Map)
	defer typeMaps.Put(typeMap)
	cv, err := coerce(oid, v)
	if err != nil {
		// Any other type pgtype knows (arrays, interval, time, inet ...):
		// the value's text form read by the type's codec, then encoded.
		if dt, ok := typeMap.TypeForOID(oid); ok {
			if val, derr := dt.Codec.DecodeValue(typeMap, oid, pgtype.TextFormatCode, appendText(nil, oid, v, loc)); derr == nil {
				if out, eerr := typeMap.Encode(oid, pgtype.BinaryFormatCode, val, dst); eerr == nil && out != nil {
					return out, nil
				}
			}
		}
		return nil, Errorf("22P03", "%v", err)
	}
	out, err := typeMap.Encode(oid, pgtype.BinaryFormatCode, cv, dst)
	if err != nil {
		return nil, Errorf("22P03", "encode %T as OID %d: %v", v, oid, err)
	}
	if out == nil {
		// pgtype's NULL: v is not (that is nil, sent as NULL before this).
		return nil, Errorf("22P03", "encode %T as OID %d: no binary form", v, oid)
	}
	return out, nil
}

// appendVector appends the binary form of an int2vector (oid 22) or
// oidvector (30) written "1 2 3": PostgreSQL sends them as arrays (its
// array_send), with a lower bound of 0.
func appendVector(dst []byte, oid uint32, text string) ([]byte, error) {
	elems := strings.Fields(text)
	elem, size := uint32(21), 2
	if oid == 30 {
		elem, size = 26, 4
	}
	if len(elems) == 0 {
		dst = binary.BigEndian.AppendUint32(dst, 0) // no dimension
		dst = binary.BigEndian.AppendUint32(dst, 0)
		return binary.BigEndian.AppendUint32(dst, elem), nil
	}
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 0) // no NULL
	dst = binary.BigEndian.AppendUint32(dst, elem)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(elems)))
	dst = binary.BigEndian.AppendUint32(dst, 0) // lower bound
	for _, e := range elems {
		n, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return nil, Errorf("22P03", "invalid vector element %q", e)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(size))
		if size == 2 {
			dst = binary.BigEndian.AppendUint16(dst, uint16(n))
		} else {
			dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		}
	}
	return dst, nil
}

// decodeParam turns a Bind parameter into a back-end value.
func decodeParam(oid uint32, format int16, src []byte, loc *time.Location) (any, error) {
	if src == nil {
		return nil, nil
	}
	if format == 0 {
		return decodeText(oid, string(src), loc)
	}
	return decodeBinary(oid, format, src, loc)
}

// timeParamLayouts are the text forms of date and time parameters read.
var timeParamLayouts = []string{"2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999-07", "2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04", "2006-01-02"}

// timeParam is a date or time parameter in the text form back ends keep
// and compare: a date as 2006-01-02, a timestamp as its wall clock, a
// timestamptz in UTC with PostgreSQL's "+00" (the SQLite driver would
// write a time.Time with "+00:00", which compares unequal as text).
func timeParam(oid uint32, t time.Time) string {
	switch oid {
	case OIDDate:
		return t.Format("2006-01-02")
	case OIDTimestamp:
		return t.Format("2006-01-02 15:04:05.999999")
	}
	return t.UTC().Format("2006-01-02 15:04:05.999999-07")
}

// decodeText turns a text-format parameter into a back-end value.
func decodeText(oid uint32, s string, loc *time.Location) (any, error) {
	{
		if IsEnumOID(oid) {
			return s, nil // a label, even one that reads as a number
		}
		switch oid {
		case OIDText, OIDVarchar, OIDBPChar:
			return s, nil
		case OIDBytea:
			if strings.HasPrefix(s, `\x`) {
				b, err := hex.DecodeString(s[2:])
				if err != nil {
					return nil, Errorf("22P02", "invalid input syntax for type bytea")
				}
				return b, nil
			}
			return []byte(s), nil
		case OIDBool:
			switch strings.ToLower(s) {
			case "t", "true", "yes", "on", "1":
				return int64(1), nil
			case "f", "false", "no", "off", "0":
				return int64(0), nil
			}
			return nil, Errorf("22P02", "invalid input syntax for type boolean: %q", s)
		case OIDFloat4, OIDFloat8, OIDNumeric:
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				if oid == OIDNumeric {
					if i, err := strconv.ParseInt(s, 10, 64); err == nil {
						return i, nil
					}
				}
				return f, nil
			}
			return s, nil
		case OIDInt2, OIDInt4, OIDInt8:
			i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return nil, Errorf("22P02", "invalid input syntax for type integer: %q", s)
			}
			return i, nil
		case OIDTimestamp, OIDTimestamptz, OIDDate:
			if loc == nil || oid != OIDTimestamptz {
				loc = time.UTC // a timestamp's or date's wall clock as written
			}
			for _, layout := range timeParamLayouts {
				// Without an offset, a timestamptz is a time in the
				// session's zone.
				if t, err := time.ParseInLocation(layout, strings.TrimSpace(s), loc); err == nil {
					return timeParam(oid, t), nil
				}
			}
			return s, nil // now, infinity...: as the text says
		}
		// Unspecified type: a canonical integer becomes an integer so that
		// LIMIT and arithmetic work; everything else stays text and SQLite's
		// column affinity converts it.
		if i, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(i, 10) == s {
			return i, nil
		}
		return s, nil
	}
}

// decodeBinary turns a binary-format parameter into a back-end value.
func decodeBinary(oid uint32, format int16, src []byte, loc *time.Location) (any, error) {
	if format != 1 {
		return nil, Errorf(CodeProtocolViolation, "unsupported parameter format code %d", format)
	}
	if IsEnumOID(oid) {
		return string(src), nil // an enum's binary form is its label
	}
	typeMap := typeMaps.Get().(*pgtype.Map)
	defer typeMaps.Put(typeMap)
	switch oid {
	case OIDInt2, OIDInt4, OIDInt8:
		var v int64
		if err := typeMap.Scan(oid, pgtype.BinaryFormatCode, src, &v); err != nil {
			return nil, Errorf("22P03", "invalid binary integer parameter: %v", err)
		}
		return v, nil
	case OIDFloat4, OIDFloat8:
		var v float64
		if err := typeMap.Scan(oid, pgtype.BinaryFormatCode, src, &v); err != nil {
			return nil, Errorf("22P03", "invalid binary float parameter: %v", err)
		}
		return v, nil
	case OIDBool:
		var v bool
		if err := typeMap.Scan(oid, pgtype.BinaryFormatCode, src, &v); err != nil {
			return nil, Errorf("22P03", "invalid binary boolean parameter: %v", err)
		}
		if v {
			return int64(1), nil
		}
		return int64(0), nil
	case OIDBytea:
		return append([]byte{}, src...), nil // empty, not NULL
	case OIDText, OIDVarchar, OIDBPChar, OIDUnknown, 0:
		return string(src), nil
	case OIDNumeric:
		var v pgtype.Numeric
		if err := typeMap.Scan(oid, pgtype.BinaryFormatCode, src, &v); err != nil {
			return nil, Errorf("22P03", "invalid binary numeric parameter: %v", err)
		}
		f, err := v.Float64Value()
		if err != nil {
			return nil, err
		}
		return f.Float64, nil
	case OIDTimestamp, OIDTimestamptz, OIDDate:
		var v time.Time
		if err := typeMap.Scan(oid, pgtype.BinaryFormatCode, src, &v); err != nil {
			return nil, Errorf("22P03", "invalid binary timestamp parameter: %v", err)
		}
		return timeParam(oid, v), nil
	case 2950: // uuid: 16 bytes, kept in its text form
		if len(src) != 16 {
			return nil, Errorf("22P03", "invalid binary uuid parameter: %d bytes", len(src))
		}
		h := hex.EncodeToString(src)
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
	case 114: // json: the text itself
		return string(src), nil
	case 18: // "char": one byte, a zero the empty value
		if len(src) == 0 || src[0] == 0 {
			return "", nil
		}
		return string(src[:1]), nil
	case 3802: // jsonb: a version byte, then the text
		if len(src) == 0 || src[0] != 1 {
			return nil, Errorf("22P03", "unsupported jsonb binary version")
		}
		return string(src[1:]), nil
	case 4072: // jsonpath: the same layout as jsonb
		if len(src) == 0 || src[0] != 1 {
			return nil, Errorf("22P03", "unsupported jsonpath version number: %d", func() int {
				if len(src) == 0 {
					return 0
				}
				return int(src[0])
			}())
		}
		return string(src[1:]), nil
	}
	if dt, ok := typeMap.TypeForOID(oid); ok {
		// Any other type pgtype knows (arrays, interval, time, inet ...):
		// decoded, then written in its text form (an int4[] as {1,2},
		// not Go's [1 2]) and read as a text parameter of the type.
		val, err := dt.Codec.DecodeValue(typeMap, oid, pgtype.BinaryFormatCode, src)
		if err != nil {
			return nil, Errorf("22P03", "invalid binary parameter of type OID %d: %v", oid, err)
		}
		txt, err := typeMap.Encode(oid, pgtype.TextFormatCode, val, nil)
		if err != nil {
			return nil, Errorf("22P03", "binary parameter of type OID %d: %v", oid, err)
		}
		if txt == nil {
			return nil, nil
		}
		return decodeText(oid, string(txt), loc)
	}
	return nil, Errorf(CodeFeatureNotSupported, "binary parameters of type OID %d are not supported on this back end; send them in text format", oid)
}

// AppendFloat appends x as PostgreSQL's float8out (bits 64) or float4out
// (bits 32) prints it: the shortest digits that read back as the same
// value, in exponent form only when the decimal exponent is below -4 or
// at least 15 (float4: 6), so 123456789.123 and 1234567 print as written
// where Go's shortest %g switches to 1.23456789123e+08 from 1e6 up.
func AppendFloat(dst []byte, x float64, bits int) []byte {
	if math.IsInf(x, 0) || math.IsNaN(x) || x == 0 {
		return strconv.AppendFloat(dst, x, 'g', -1, bits)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], x, 'e', -1, bits)
	exp := 0
	if i := bytes.IndexByte(e, 'e'); i >= 0 {
		exp, _ = strconv.Atoi(string(e[i+1:]))
	}
	limit := 15
	if bits == 32 {
		limit = 6
	}
	if exp < -4 || exp >= limit {
		return append(dst, e...)
	}
	return strconv.AppendFloat(dst, x, 'f', -1, bits)
}
