package writeset

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kind is the type of a Value. The kinds are the SQL values that travel
// unchanged between SQLite and PostgreSQL back ends.
type Kind uint8

// The value kinds. The numeric values are part of the encoding; never reorder.
const (
	KindNull  Kind = 0 // SQL NULL
	KindInt   Kind = 1 // int64 (INTEGER, BIGINT, SMALLINT)
	KindFloat Kind = 2 // float64 (REAL, DOUBLE PRECISION)
	KindText  Kind = 3 // text (TEXT, VARCHAR; temporal and numeric-as-text values)
	KindBytes Kind = 4 // bytes (BLOB, BYTEA)
	KindBool  Kind = 5 // boolean (PostgreSQL BOOLEAN; 0/1 on SQLite)
)

// String returns the lower-case kind name.
func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindText:
		return "text"
	case KindBytes:
		return "bytes"
	case KindBool:
		return "bool"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ErrUnsupported is returned by FromAny for Go values that have no portable
// SQL representation.
var ErrUnsupported = errors.New("writeset: unsupported value type")

// Value is one SQL value: NULL, int64, float64, text, bytes or bool.
//
// It is a small tagged struct rather than an interface value (any) because:
// the set of kinds is closed and checked by the compiler, not by convention;
// ints, floats and bools need no heap allocation; text and bytes stay distinct
// (both are stored as an immutable string, so a Value never aliases a caller's
// slice); and Value is comparable, so == compares kind and contents exactly
// (floats bit for bit, so NaN equals an identical NaN), which keeps conflict
// keys and tests simple.
//
// The zero Value is NULL. Build values with Null, Int, Float, Text, Bytes,
// Bool or FromAny.
type Value struct {
	kind Kind
	num  uint64 // int64 bits, float64 bits, or 0/1 for bool
	str  string // text or bytes
}

// Null returns the SQL NULL value (the zero Value).
func Null() Value { return Value{} }

// Int returns an integer value.
func Int(i int64) Value { return Value{kind: KindInt, num: uint64(i)} }

// Float returns a floating-point value.
func Float(f float64) Value { return Value{kind: KindFloat, num: math.Float64bits(f)} }

// Text returns a text value.
func Text(s string) Value { return Value{kind: KindText, str: s} }

// Bytes returns a binary value holding a copy of b.
func Bytes(b []byte) Value { return Value{kind: KindBytes, str: string(b)} }

// Bool returns a boolean value.
func Bool(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.num = 1
	}
	return v
}

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is SQL NULL.
func (v Value) IsNull() bool { return v.kind == KindNull }

// AsInt returns the integer and true if v is an int.
func (v Value) AsInt() (int64, bool) { return int64(v.num), v.kind == KindInt }

// AsFloat returns the float and true if v is a float.
func (v Value) AsFloat() (float64, bool) { return math.Float64frombits(v.num), v.kind == KindFloat }

// AsText returns the text and true if v is text.
func (v Value) AsText() (string, bool) { return v.str, v.kind == KindText }

// AsBytes returns a copy of the bytes and true if v is bytes.
func (v Value) AsBytes() ([]byte, bool) {
	if v.kind != KindBytes {
		return nil, false
	}
	return []byte(v.str), true
}

// AsBool returns the boolean and true if v is a bool.
func (v Value) AsBool() (bool, bool) { return v.num != 0, v.kind == KindBool }

// Any returns v as a database/sql driver argument: nil, int64, float64,
// string, []byte (a fresh copy) or bool.
func (v Value) Any() any {
	switch v.kind {
	case KindInt:
		return int64(v.num)
	case KindFloat:
		return math.Float64frombits(v.num)
	case KindText:
		return v.str
	case KindBytes:
		return []byte(v.str)
	case KindBool:
		return v.num != 0
	}
	return nil
}

// FromAny converts a Go value as returned by database/sql drivers into a
// Value. Accepted: nil, Value, the sized and unsized integer types (uint64
// and uint only up to math.MaxInt64), float32, float64, string, []byte and
// bool. Anything else (time.Time included: capture converts temporal values
// to ISO-8601 text, which both back ends accept) fails with ErrUnsupported.
func FromAny(x any) (Value, error) {
	switch x := x.(type) {
	case nil:
		return Null(), nil
	case Value:
		return x, nil
	case int64:
		return Int(x), nil
	case int:
		return Int(int64(x)), nil
	case int32:
		return Int(int64(x)), nil
	case int16:
		return Int(int64(x)), nil
	case int8:
		return Int(int64(x)), nil
	case uint8:
		return Int(int64(x)), nil
	case uint16:
		return Int(int64(x)), nil
	case uint32:
		return Int(int64(x)), nil
	case uint64:
		if x > math.MaxInt64 {
			return Value{}, fmt.Errorf("%w: uint64 %d overflows int64", ErrUnsupported, x)
		}
		return Int(int64(x)), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return Value{}, fmt.Errorf("%w: uint %d overflows int64", ErrUnsupported, x)
		}
		return Int(int64(x)), nil
	case float64:
		return Float(x), nil
	case float32:
		return Float(float64(x)), nil
	case string:
		return Text(x), nil
	case []byte:
		return Bytes(x), nil
	case bool:
		return Bool(x), nil
	}
	return Value{}, fmt.Errorf("%w: %T", ErrUnsupported, x)
}

// String renders v for humans and logs in an SQL-literal-like form: NULL,
// 42, 1.5, text in single quotes (embedded quotes doubled), x'00ff' for
// bytes, true. It is not meant for building SQL; the apply helpers always
// bind values as parameters.
func (v Value) String() string {
	switch v.kind {
	case KindNull:
		return "NULL"
	case KindInt:
		return strconv.FormatInt(int64(v.num), 10)
	case KindFloat:
		return strconv.FormatFloat(math.Float64frombits(v.num), 'g', -1, 64)
	case KindText:
		return "'" + strings.ReplaceAll(v.str, "'", "''") + "'"
	case KindBytes:
		return "x'" + hex.EncodeToString([]byte(v.str)) + "'"
	case KindBool:
		return strconv.FormatBool(v.num != 0)
	}
	return "<invalid " + v.kind.String() + ">"
}
