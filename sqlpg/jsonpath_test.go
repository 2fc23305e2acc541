package sqlpg

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// Cases checked against PostgreSQL 15 (psql on a real server); the
// differential corpus (testdata/corpus/40_jsonpath.sql) has many more.

func TestJSONPathParsePrint(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"$", "$"},
		{"lax $", "$"},
		{"strict $.a", `strict $."a"`},
		{"$.a.b[*].c", `$."a"."b"[*]."c"`},
		{`$."a b".*[*]`, `$."a b".*[*]`},
		{"strict $.a[1 to 2, last]", `strict $."a"[1 to 2,last]`},
		{"1 + 2", "(1 + 2)"},
		{"1+2*3", "(1 + 2 * 3)"},
		{"(1+2)*3", "((1 + 2) * 3)"},
		{"$.a + $.b + 1", `(($."a" + $."b") + 1)`},
		{"$.a - ($.b - 1)", `($."a" - ($."b" - 1))`},
		{"($.a - 5).abs() + 10", `(($."a" - 5).abs() + 10)`},
		// PostgreSQL 15 prints ($."a" * 2.abs() + 1), which reads back
		// as $.a * (2).abs() + 1: tandem keeps the brackets.
		{"($.a * 2).abs() + 1", `(($."a" * 2).abs() + 1)`},
		{"(0%.0).A+0", `((0 % 0.0)."A" + 0)`},
		{"1 + (-$.a).abs()", `(1 + (-$."a").abs())`},
		{"-($.a * $.a).floor() % 4.3", `(-($."a" * $."a").floor() % 4.3)`},
		{"- - 1", "1"},
		{"+1", "1"},
		{"-$", "(-$)"},
		{"-(1+2)", "(-(1 + 2))"},
		{"(1).type()", "(1).type()"},
		{"1.0e2", "100"},
		{"0.0010e-1", "0.00010"},
		{"$ ? (@.a > 1 && (@.b < 2 || !(@.c == 3)))", `$?(@."a" > 1 && (@."b" < 2 || !(@."c" == 3)))`},
		{"$ == 1 || $ == 2 && $ == 3", "($ == 1 || $ == 2 && $ == 3)"},
		{"($ == 1 || $ == 2) && $ == 3", "(($ == 1 || $ == 2) && $ == 3)"},
		{"(1 == 1) is unknown", "(1 == 1) is unknown"},
		{"$ ? ((@ == 1) is unknown)", "$?((@ == 1) is unknown)"},
		{"$ ? (exists (@.a))", `$?(exists (@."a"))`},
		{`$.a ? (@ starts with "x")`, `$."a"?(@ starts with "x")`},
		{`$ ? (@ like_regex "a.b" flag "qi")`, `$?(@ like_regex "a.b" flag "iq")`},
		{"$.**{2 to last}.x", `$.**{2 to last}."x"`},
		{"$.**{last}", "$.**{last}"},
		{"$.**{1 to 1}", "$.**{1}"},
		{"$var.size()", `$"var".size()`},
		{`$"x y"`, `$"x y"`},
		{"$.last", `$."last"`},
		{"$.type", `$."type"`},
		{"$.a.TYPE()", `$."a".type()`},
		{"STRICT $", "strict $"},
		{"$ ? (@ < $x).a", `$?(@ < $"x")."a"`},
		{`"\u00e9\n"`, `"é\n"`},
		{`"\x50\u0067\u{53}\u{051}\u{00004C}"`, `"PgSQL"`},
		{"$[$[0] ? (last > 0)]", "$[$[0]?(last > 0)]"},
		{"$.ключ", `$."ключ"`},
	} {
		jp, err := parseJSONPath(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := jp.String(); got != c.out {
			t.Errorf("%q printed %q, want %q", c.in, got, c.out)
		}
	}
}

func TestJSONPathParseErrors(t *testing.T) {
	for _, c := range []struct{ in, code string }{
		{"", "22P02"},
		{"$ +", "42601"},
		{"$.foo()", "42601"},
		{"$ ? (1)", "42601"},
		{"$ && $", "42601"},
		{"$ ? (@ == 1 == 2)", "42601"},
		{"@ + 1", "42601"},
		{"last", "42601"},
		{"$ ? (last > 0)", "42601"},
		{"1e", "42601"},
		{"00", "42601"},
		{"1.type()", "42601"},
		{`$ ? (@ like_regex "(")`, "2201B"},
		{`$ ? (@ like_regex "a" flag "z")`, "42601"},
		{`$ ? (@ like_regex "a" flag "x")`, "0A000"},
		{"$.datetime()", "0A000"},
		{`"\u0000"`, "22P05"},
		{`"abc`, "42601"},
	} {
		_, err := parseJSONPath(c.in)
		var je *jpError
		if !errors.As(err, &je) {
			t.Errorf("%q: %v, want SQLSTATE %s", c.in, err, c.code)
			continue
		}
		if je.code != c.code {
			t.Errorf("%q: %s %s, want %s", c.in, je.code, je.msg, c.code)
		}
	}
}

func TestJSONPathEval(t *testing.T) {
	// kind: items (the rows, one per line), array, first, exists, match.
	// want: the answer, or "ERROR code".
	for _, c := range []struct {
		kind, doc, path, vars string
		silent                bool
		want                  string
	}{
		{"items", `{"a": [1, 2, {"b": 3}]}`, "$.a[*]", "", false, "1\n2\n{\"b\": 3}"},
		{"items", `{"theme": "dark"}`, "$.theme", "", false, `"dark"`},
		{"first", `{"theme": "dark"}`, "$.theme", "", false, `"dark"`},
		{"items", `[1]`, "strict $[1]", "", false, "ERROR 22033"},
		{"items", `[1]`, "strict $[1]", "", true, ""},
		{"items", `[1]`, "lax $[1]", "", false, ""},
		{"items", `1`, "strict $.a", "", false, "ERROR 2203A"},
		{"items", `{}`, "strict $.a", "", false, "ERROR 2203A"},
		{"items", `1`, "strict $.*", "", false, "ERROR 2203C"},
		{"items", `1`, "strict $[*]", "", false, "ERROR 22039"},
		{"items", `1`, "lax $[*]", "", false, "1"},
		{"items", `[12, {"a": 13}, {"b": 14}]`, "lax $[*].a", "", false, "13"},
		{"items", `[12, {"a": 13}, {"b": 14}, "ccc", true]`, "$[2.5 - 1 to $.size() - 2]", "", false, "{\"a\": 13}\n{\"b\": 14}\n\"ccc\""},
		{"items", `[1,2,3]`, "$[last - 1]", "", false, "2"},
		{"items", `[]`, "strict $[last]", "", false, "ERROR 22033"},
		{"items", `{"a": {"b": 1}}`, "lax $.**", "", false, "{\"a\": {\"b\": 1}}\n{\"b\": 1}\n1"},
		{"items", `{"a": {"b": 1}}`, "lax $.**{last}", "", false, "1"},
		{"items", `{"a": {"c": {"b": 1}}}`, "lax $.**{1 to 2}.b ? (@ > 0)", "", false, "1"},
		{"items", `{"a": {"c": {"b": 1}}}`, "lax $.**{1}.b ? (@ > 0)", "", false, ""},
		{"items", `{"a": {"c": {"b": 1}}}`, "lax $.**{2 to 3}.b ? (@ > 0)", "", false, "1"},
		{"items", `[10,11,12,13,14,15]`, "$[*] ? (@ < $value)", `{"value": 13}`, false, "10\n11\n12"},
		{"items", `{"a": 10}`, "$ ? (@.a < $value)", `[1]`, false, "ERROR 22023"},
		{"items", `{"a": 10}`, "$undefined", `{}`, true, "ERROR 42704"},
		{"items", `[1, "1", 2, null]`, `$[*] ? (@ == "1")`, "", false, `"1"`},
		{"items", `[1, "2", null]`, "$[*] ? (@ != null)", "", false, "1\n\"2\""},
		{"items", `[1,2,0,3]`, "$[*] ? ((2 / @ > 0) is unknown)", "", false, "0"},
		{"items", `0`, "1 / $", "", false, "ERROR 22012"},
		{"items", `0`, "1 / $", "", true, ""},
		{"items", `[1, 2]`, "3 * $", "", false, "ERROR 22038"},
		{"items", `"a"`, "-$", "", false, "ERROR 2203B"},
		{"items", `{"a": [2]}`, "lax $.a * 3", "", false, "6"},
		{"items", `{"a": [2, 3, 4]}`, "lax -$.a", "", false, "-2\n-3\n-4"},
		{"items", `{"a": 2.5}`, "-($.a * $.a).floor() % 4.3", "", false, "-1.7"},
		{"items", `[10]`, "$[0] / 4", "", false, "2.5000000000000000"},
		{"items", `[1]`, "$[0] / 3", "", false, "0.33333333333333333333"},
		{"items", `[1.5, 2.25]`, "$[*] * 3", "", false, "ERROR 22038"},
		{"items", `[null,1,true,"a",[],{}]`, "$[*].type()", "", false, "\"null\"\n\"number\"\n\"boolean\"\n\"string\"\n\"array\"\n\"object\""},
		{"items", `[1,null,true,"11",[],[1],[1,2,3],{},{"a":1,"b":2}]`, "strict $[*].size()", "", false, "ERROR 22039"},
		{"items", `[0, 1, -2, -3.4, 5.6]`, "$[*].ceiling().abs()", "", false, "0\n1\n2\n3\n6"},
		{"items", `[0, 1, -2, -3.4, 5.6]`, "$[*].floor()", "", false, "0\n1\n-2\n-4\n5"},
		{"items", `"1.23"`, "$.double()", "", false, "1.23"},
		{"items", `"nan"`, "$.double()", "", false, "ERROR 22036"},
		{"items", `{}`, "$.abs()", "", false, "ERROR 22036"},
		{"items", `{"a": 1, "b": [1, 2], "c": {"a": "bbb"}}`, "$.keyvalue()", "", false,
			"{\"id\": 0, \"key\": \"a\", \"value\": 1}\n{\"id\": 0, \"key\": \"b\", \"value\": [1, 2]}\n{\"id\": 0, \"key\": \"c\", \"value\": {\"a\": \"bbb\"}}"},
		{"items", `[{"a": 1, "b": [1, 2]}, {"c": {"a": "bbb"}}]`, "$[*].keyvalue()", "", false,
			"{\"id\": 12, \"key\": \"a\", \"value\": 1}\n{\"id\": 12, \"key\": \"b\", \"value\": [1, 2]}\n{\"id\": 72, \"key\": \"c\", \"value\": {\"a\": \"bbb\"}}"},
		{"items", `{"x": {"b": 1}}`, "$x.keyvalue()", `{"x": {"b": 1}}`, false, "{\"id\": 10000000016, \"key\": \"b\", \"value\": 1}"},
		{"items", `["", "a", "abc", "abcabc"]`, `$[*] ? (@ starts with "abc")`, "", false, "\"abc\"\n\"abcabc\""},
		{"items", `[null, 1, "abc", "abd", "aBdC", "abdacb", "adc\nabc", "babc"]`, `lax $[*] ? (@ like_regex "^ab.*c" flag "i")`, "", false, "\"abc\"\n\"aBdC\"\n\"abdacb\""},
		{"items", `[null, 1, "abc", "abd", "aBdC", "abdacb", "adc\nabc", "babc"]`, `lax $[*] ? (@ like_regex "^ab.*c" flag "m")`, "", false, "\"abc\"\n\"abdacb\"\n\"adc\\nabc\""},
		{"items", `["a\b", "a\\b"]`, `$[*] ? (@ like_regex "a\\b")`, "", false, `"a\b"`},
		{"items", `{"g": [{"x": 2}, {"y": 3}]}`, `lax $.g ? ((exists (@.x + "3")) is unknown)`, "", false, "{\"x\": 2}\n{\"y\": 3}"},
		{"items", `{"g": [{"x": 2}, {"y": 3}]}`, "strict $.g ? ((exists (@[*].x)) is unknown)", "", false, "[{\"x\": 2}, {\"y\": 3}]"},
		{"items", `["abc", "abcabc", null, 1]`, `strict $ ? ((@[*] starts with "abc") is unknown)`, "", false, "[\"abc\", \"abcabc\", null, 1]"},
		{"items", `[1, 2, 3]`, "($[*] > 2) ? (@ == true)", "", false, "true"},
		{"items", `[1, 2, 3]`, "strict ($[*].a > 3).type()", "", false, "\"null\""},
		{"items", `{"a": 1.10}`, "$.a", "", false, "1.10"},
		{"items", `[1e2, 1.5e-1]`, "$[*]", "", false, "100\n0.15"},
		{"array", `[{"a": 1}, {"a": 2}, {"a": 3}, {"a": 5}]`, "$[*].a ? (@ > $min && @ < $max)", `{"min": 1, "max": 4}`, false, "[2, 3]"},
		{"array", `[]`, "$[*]", "", false, "[]"},
		{"first", `[]`, "$[*]", "", false, "NULL"},
		{"first", `[{"a": 1}, {"a": 2}, {}]`, "strict $[*].a", "", false, "ERROR 2203A"},
		{"first", `[{"a": 1}, {"a": 2}, {}]`, "strict $[*].a", "", true, "1"},
		{"exists", `{"a": 12}`, "$.b", "", false, "false"},
		{"exists", `{"a": 12}`, "$.b + 2", "", true, "NULL"},
		{"exists", `[1]`, "strict $[1]", "", true, "NULL"},
		{"exists", `[{"a": 1}, {"a": 2}, 3]`, "lax $[*].a", "", false, "true"},
		{"exists", `[{"a": 1}, {"a": 2}, 3]`, "strict $[*].a", "", false, "ERROR 2203A"},
		{"exists", `["1",2,0,3]`, "-$[*]", "", true, "true"},
		{"exists", `["1",2,0,3]`, "strict -$[*]", "", true, "NULL"},
		{"exists", `{"a": 1, "b": 1}`, "$.** ? (@.a == @.b)", "", true, "true"},
		{"exists", `2`, `$ == "2"`, "", true, "true"},
		{"match", `2`, "$ > 1", "", true, "true"},
		{"match", `2`, `$ == "2"`, "", true, "NULL"},
		{"match", `[1,2,3]`, "$[*]", "", true, "NULL"},
		{"match", `{"a": 1}`, "$.a", "", false, "ERROR 22038"},
		{"match", `[[1, true], [2, false]]`, "strict $[*] ? (@[0] > $x) [1]", `{"x": 1}`, false, "false"},
		{"match", `[{"a": 1}, {"a": 2}, 3]`, "strict exists($[*].a)", "", false, "NULL"},
		{"match", `[{"a": 1}, {"a": 2}, 3]`, "lax exists($[*].a)", "", false, "true"},
	} {
		vars := c.vars
		if vars == "" {
			vars = "{}"
		}
		got := evalForTest(c.kind, c.doc, c.path, vars, c.silent)
		if got != c.want {
			t.Errorf("%s(%s, %q, %s, silent %v) = %q, want %q", c.kind, c.doc, c.path, vars, c.silent, got, c.want)
		}
	}
}

func evalForTest(kind, doc, path, vars string, silent bool) string {
	var s int64
	if silent {
		s = 1
	}
	v, err := jsonPathFunc(kind, doc, path, vars, s)
	if err != nil {
		var je *jpError
		if errors.As(err, &je) {
			return "ERROR " + je.code
		}
		return "ERROR " + err.Error()
	}
	switch x := v.(type) {
	case nil:
		return "NULL"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case string:
		if kind == "items" {
			return strings.Join(arrayElems(x), "\n")
		}
		return x
	}
	return "?"
}

func TestJSONPathNumbers(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"1.50", "1.50"}, {"1e2", "100"}, {"-0.0", "0.0"}, {"1.5e-1", "0.15"}, {".5", "0.5"}, {"12e-5", "0.00012"},
	} {
		n, ok := parseJPNum(c.in)
		if !ok || n.String() != c.out {
			t.Errorf("%q: %v %q, want %q", c.in, ok, n.String(), c.out)
		}
	}
	a, _ := parseJPNum("-3.75")
	if got := a.floor().String() + " " + a.ceil().String() + " " + a.abs().String(); got != "-4 -3 3.75" {
		t.Errorf("floor/ceil/abs: %s", got)
	}
	b, _ := parseJPNum("2")
	if m, _ := a.mod(b); m.String() != "-1.75" {
		t.Errorf("mod: %s", m)
	}
}

var jpCode = regexp.MustCompile(`^[0-9A-Z]{5}$`)

// FuzzJSONPath: any text either parses, prints as a path that (when it
// parses again) prints the same, and evaluates over a few documents in
// both modes without panicking; or fails with a jsonpath SQLSTATE.
// Errors from evaluation carry a SQLSTATE too.
func FuzzJSONPath(f *testing.F) {
	for _, s := range []string{
		"$", "strict $.a", "$.a[*] ? (@ > 1)", "$.**{1 to last}.b ? (@ == \"x\")", "$[last - 1, 0 to 2]",
		"$.a.keyvalue().value.type()", "-($.a * 2).abs() % 4.3", "$ ? (@ like_regex \"^a.c\" flag \"is\")",
		"$ ? (exists (@.a) && !(@.b starts with \"x\") || (@.c < $v) is unknown)", "$.double().ceiling()",
		"(1 + 2).type()", "$.\"key\".*", "lax $.a.size()", "$v[*]",
	} {
		f.Add(s)
	}
	jpMaxSteps = 100_000 // nested .** multiply: keep each run short
	docs := []any{`{"a": [1, 2, {"b": "x"}], "c": 1.5, "v": {"a": 1}}`, `[1, "a", null, true, [2, [3]], {}]`, `"abc"`, `0`}
	f.Fuzz(func(t *testing.T, s string) {
		jp, err := parseJSONPath(s)
		if err != nil {
			var je *jpError
			if !errors.As(err, &je) || !jpCode.MatchString(je.code) {
				t.Fatalf("%q: error without a SQLSTATE: %v", s, err)
			}
			return
		}
		p1 := jp.String()
		if jp2, err := parseJSONPath(p1); err == nil {
			if p2 := jp2.String(); p2 != p1 {
				t.Fatalf("%q printed %q, which prints %q", s, p1, p2)
			}
		}
		for _, d := range docs {
			for _, kind := range []string{"items", "exists", "match"} {
				for _, silent := range []int64{0, 1} {
					_, err := jsonPathFunc(kind, d, s, `{"v": [1, 2], "x": "s"}`, silent)
					var je *jpError
					if err != nil && !errors.As(err, &je) {
						t.Fatalf("%q over %v: error without a SQLSTATE: %v", s, d, err)
					}
				}
			}
		}
	})
}
