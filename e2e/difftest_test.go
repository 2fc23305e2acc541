package e2e

// Differential test of PostgreSQL's SQL on the SQLite back end: every
// statement of the corpus (sqlpg/testdata/corpus/*.sql) runs on a managed
// PostgreSQL and through a real tandem node on SQLite, and the answers are
// compared: column names, column type OIDs, command tag and values (rows
// order-insensitive unless the statement has a top-level ORDER BY; float4
// and float8 with a relative tolerance), errors by SQLSTATE (and, in a
// file that says "difftest: error fields" in a comment, by message and
// the DETAIL / schema / table / column / constraint fields PostgreSQL
// sends).
//
// Each corpus file is one script, run in order on one fresh connection on
// each side; scripts create (and drop) their own tables, so they are
// independent. Statements known not to match yet are listed in
// testdata/difftest/known.txt, each marked "bug" (to be fixed) or "0A000"
// (tandem refuses it as unsupported). The test fails when a statement that is
// not listed there does not match, or when a listed "0A000" statement now
// gets another answer: a regression. It logs the match rates.
//
//	go test -count=1 -run TestDifferentialCorpus -v ./e2e
//	TANDEM_DIFFTEST_UPDATE=1 ...  rewrites known.txt from this run
//	TANDEM_DIFFTEST_REPORT=FILE ... writes every mismatch with both answers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/tandemdb/tandem/backend/postgres"
)

const (
	corpusDir = "../sqlpg/testdata/corpus"
	knownFile = "testdata/difftest/known.txt"
)

// corpusStmt is one statement of a corpus script.
type corpusStmt struct {
	File    string
	Index   int    // 1-based position in its file
	SQL     string // as written (comments before it removed)
	Key     string // file + normalised text (+ occurrence): stable across insertions
	Ordered bool   // has a top-level ORDER BY: compare rows in order
	// ErrorFields: the file asks (errorFieldsMarker) for errors to be
	// compared by message and by the DETAIL, SCHEMA, TABLE, COLUMN and
	// CONSTRAINT fields PostgreSQL sends, not by SQLSTATE alone.
	ErrorFields bool
}

// errorFieldsMarker, in a corpus file's comments, turns on the exact
// comparison of errors for its statements (opt-in: the older files'
// errors match by SQLSTATE, their messages and details often do not).
const errorFieldsMarker = "difftest: error fields"

// answer is what one server answered to one statement.
type answer struct {
	Desc describe // Parse + Describe of the statement first (what drivers that prepare see)
	Code string   // SQLSTATE, "" on success
	Msg  string
	// An error's fields (PostgreSQL's DETAIL, SCHEMA NAME, TABLE NAME,
	// COLUMN NAME, CONSTRAINT NAME).
	Detail, Schema, Table, Column, Constraint string
	Tag                                       string
	Names                                     []string
	OIDs                                      []uint32
	Rows                                      [][]*string
}

// describe is the answer to Parse and Describe (statement): the row
// description, or the error.
type describe struct {
	Code   string
	Names  []string
	OIDs   []uint32
	Params []uint32 // ParameterDescription: the types drivers encode by
}

// userType stands for any type a database created (an enum): PostgreSQL
// numbers them from 16384, tandem's SQLite back end from 900000, so
// answers compare them as one.
const userType = 16384

func typeOID(oid uint32) uint32 {
	if oid >= userType {
		return userType
	}
	return oid
}

// verdict of one statement.
const (
	vMatch = "match"
	v0A000 = "0A000" // tandem refused it as unsupported
	vBug   = "bug"   // any other difference
	// vDiffers marks, in known.txt only, a difference kept on purpose: a
	// statement whose PostgreSQL 15 answer is itself wrong in a way
	// that would change data on SQLite (each says why in the corpus).
	vDiffers = "differs"
)

type result struct {
	Stmt    corpusStmt
	Verdict string
	Why     string
	PG, TD  answer
}

// loadCorpus reads and splits every corpus script.
func loadCorpus(t testing.TB) map[string][]corpusStmt {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in %s: %v", corpusDir, err)
	}
	out := map[string][]corpusStmt{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmts, err := splitScript(filepath.Base(f), string(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = stmts
	}
	return out
}

func splitScript(name, text string) ([]corpusStmt, error) {
	parts, err := splitSQL(text)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	var out []corpusStmt
	fields := false
	for _, line := range strings.Split(text, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "--") && strings.Contains(l, errorFieldsMarker) {
			fields = true
		}
	}
	for _, p := range parts {
		sql := stripComments(p)
		if sql == "" {
			continue
		}
		norm := strings.Join(strings.Fields(sql), " ")
		seen[norm]++
		key := name + ": " + norm
		if n := seen[norm]; n > 1 {
			key += fmt.Sprintf(" #%d", n)
		}
		out = append(out, corpusStmt{File: name, Index: len(out) + 1, SQL: sql, Key: key, Ordered: topLevelOrdered(sql), ErrorFields: fields})
	}
	return out, nil
}

// splitSQL splits a script at the semicolons outside quotes ('...',
// "...", $tag$...$tag$, E'...\'...') and "--" comments. (libpg_query's
// scanner-based split stops at the first statement it cannot scan, and the
// corpus holds syntax errors on purpose.)
func splitSQL(text string) ([]string, error) {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '-' && strings.HasPrefix(text[i:], "--"):
			if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(text)
			}
		case c == '\'' || c == '"':
			escapes := c == '\'' && i > 0 && (text[i-1] == 'E' || text[i-1] == 'e')
			j := i + 1
			for ; j < len(text); j++ {
				if escapes && text[j] == '\\' {
					j++
					continue
				}
				if text[j] == c {
					if j+1 < len(text) && text[j+1] == c {
						j++
						continue
					}
					break
				}
			}
			if j >= len(text) {
				return nil, fmt.Errorf("unterminated quote at offset %d", i)
			}
			i = j
		case c == '$':
			m := dollarTag.FindString(text[i:])
			if m == "" {
				continue
			}
			end := strings.Index(text[i+len(m):], m)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %s quote at offset %d", m, i)
			}
			i += len(m) + end + len(m) - 1
		case c == ';':
			out = append(out, text[start:i])
			start = i + 1
		}
	}
	if strings.TrimSpace(stripComments(text[start:])) != "" {
		out = append(out, text[start:])
	}
	return out, nil
}

var dollarTag = regexp(`^\$[A-Za-z_]*\$`)

// stripComments drops the whole-line "--" comments before and inside a
// statement (corpus comments explain; they are not part of the statement).
func stripComments(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// topLevelOrdered reports whether the statement's result has a defined
// order: a SELECT (or set operation, or VALUES) with a top-level ORDER BY.
func topLevelOrdered(sql string) bool {
	tree, err := pg_query.Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return false
	}
	n := tree.Stmts[0].Stmt
	if ex := n.GetExplainStmt(); ex != nil {
		return true // plan text, line by line
	}
	if sel := n.GetSelectStmt(); sel != nil {
		return len(sel.SortClause) > 0
	}
	return false
}

// run sends one statement with the extended protocol (Parse, Bind,
// Describe, Execute: the path drivers take), text results.
func run(ctx context.Context, c *pgconn.PgConn, sql string) answer {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var a answer
	// Parse + Describe of the unnamed statement, as a driver that prepares
	// does before it binds (pgjdbc, psycopg's prepared statements).
	if sd, err := c.Prepare(ctx, "", sql, nil); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			a.Desc.Code = pe.Code
		} else {
			a.Code, a.Msg = "client", err.Error()
			return a
		}
	} else {
		for _, fd := range sd.Fields {
			a.Desc.Names = append(a.Desc.Names, fd.Name)
			a.Desc.OIDs = append(a.Desc.OIDs, typeOID(fd.DataTypeOID))
		}
		for _, p := range sd.ParamOIDs {
			a.Desc.Params = append(a.Desc.Params, typeOID(p))
		}
	}
	res := c.ExecParams(ctx, sql, nil, nil, nil, nil).Read()
	if res.Err != nil {
		var pe *pgconn.PgError
		if errors.As(res.Err, &pe) {
			a.Code, a.Msg = pe.Code, pe.Message
			a.Detail, a.Schema, a.Table, a.Column, a.Constraint = pe.Detail, pe.SchemaName, pe.TableName, pe.ColumnName, pe.ConstraintName
		} else {
			a.Code, a.Msg = "client", res.Err.Error()
		}
		return a
	}
	a.Tag = res.CommandTag.String()
	for _, fd := range res.FieldDescriptions {
		a.Names = append(a.Names, fd.Name)
		a.OIDs = append(a.OIDs, typeOID(fd.DataTypeOID))
	}
	for _, row := range res.Rows {
		r := make([]*string, len(row))
		for i, v := range row {
			if v != nil {
				s := string(v)
				r[i] = &s
			}
		}
		a.Rows = append(a.Rows, r)
	}
	return a
}

// compare decides the verdict of one statement: the answers to Execute,
// then those to Describe (statement).
func compare(st corpusStmt, pg, td answer) (string, string) {
	v, why := compareExec(st, pg, td)
	if v != vMatch {
		return v, why
	}
	p, t := pg.Desc, td.Desc
	switch {
	case p.Code != "" || t.Code != "":
		if p.Code != t.Code {
			return vBug, fmt.Sprintf("Describe (statement) SQLSTATE: postgres %q, tandem %q", p.Code, t.Code)
		}
	case strings.Join(p.Names, ",") != strings.Join(t.Names, ","):
		return vBug, fmt.Sprintf("Describe (statement) column names: postgres %q, tandem %q", p.Names, t.Names)
	case fmt.Sprint(p.OIDs) != fmt.Sprint(t.OIDs):
		return vBug, fmt.Sprintf("Describe (statement) column types: postgres %s, tandem %s", typeNames(p.OIDs), typeNames(t.OIDs))
	case fmt.Sprint(p.Params) != fmt.Sprint(t.Params):
		return vBug, fmt.Sprintf("Describe (statement) parameter types: postgres %s, tandem %s", typeNames(p.Params), typeNames(t.Params))
	}
	return vMatch, ""
}

func compareExec(st corpusStmt, pg, td answer) (string, string) {
	if pg.Code == "client" || td.Code == "client" {
		return vBug, fmt.Sprintf("connection: postgres %q, tandem %q", pg.Msg, td.Msg)
	}
	if pg.Code != "" || td.Code != "" {
		if pg.Code == td.Code {
			if st.ErrorFields {
				return compareErrorFields(pg, td)
			}
			return vMatch, ""
		}
		why := fmt.Sprintf("SQLSTATE: postgres %q, tandem %q", pg.Code, td.Code)
		if td.Code == "0A000" {
			return v0A000, why
		}
		return vBug, why
	}
	if strings.Join(pg.Names, ",") != strings.Join(td.Names, ",") {
		return vBug, fmt.Sprintf("column names: postgres %q, tandem %q", pg.Names, td.Names)
	}
	if fmt.Sprint(pg.OIDs) != fmt.Sprint(td.OIDs) {
		return vBug, fmt.Sprintf("column types: postgres %s, tandem %s", typeNames(pg.OIDs), typeNames(td.OIDs))
	}
	if pg.Tag != td.Tag {
		return vBug, fmt.Sprintf("command tag: postgres %q, tandem %q", pg.Tag, td.Tag)
	}
	if len(pg.Rows) != len(td.Rows) {
		return vBug, fmt.Sprintf("rows: postgres %d, tandem %d", len(pg.Rows), len(td.Rows))
	}
	pr, tr := pg.Rows, td.Rows
	if !st.Ordered {
		pr, tr = sortedRows(pr), sortedRows(tr)
	}
	for i := range pr {
		for j := range pr[i] {
			if j >= len(tr[i]) || !sameValue(pg.OIDs[j], pr[i][j], tr[i][j]) {
				return vBug, fmt.Sprintf("row %d column %q: postgres %s, tandem %s", i+1, pg.Names[j], show(pr[i][j]), show(at(tr[i], j)))
			}
		}
	}
	return vMatch, ""
}

// compareErrorFields compares two errors of the same SQLSTATE: the
// message, and each field PostgreSQL sent.
func compareErrorFields(pg, td answer) (string, string) {
	if pg.Msg != td.Msg {
		return vBug, fmt.Sprintf("error message: postgres %q, tandem %q", pg.Msg, td.Msg)
	}
	for _, f := range []struct{ name, p, t string }{
		{"DETAIL", pg.Detail, td.Detail}, {"SCHEMA NAME", pg.Schema, td.Schema}, {"TABLE NAME", pg.Table, td.Table},
		{"COLUMN NAME", pg.Column, td.Column}, {"CONSTRAINT NAME", pg.Constraint, td.Constraint},
	} {
		if f.p != "" && f.p != f.t {
			return vBug, fmt.Sprintf("error %s: postgres %q, tandem %q", f.name, f.p, f.t)
		}
	}
	return vMatch, ""
}

func at(r []*string, j int) *string {
	if j < len(r) {
		return r[j]
	}
	return nil
}

func show(v *string) string {
	if v == nil {
		return "NULL"
	}
	return strconv.Quote(*v)
}

func sortedRows(rows [][]*string) [][]*string {
	key := func(r []*string) string {
		var b strings.Builder
		for _, v := range r {
			if v == nil {
				b.WriteString("\x00N")
			} else {
				b.WriteString("\x00V" + *v)
			}
		}
		return b.String()
	}
	out := append([][]*string(nil), rows...)
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

// sameValue compares two text values of a column of type oid: exactly,
// except float4/float8 (relative tolerance) and numeric results with more
// than 6 fractional digits (PostgreSQL's scale for avg and division is its
// own; compared by value to 1e-12).
func sameValue(oid uint32, p, t *string) bool {
	if p == nil || t == nil {
		return p == nil && t == nil
	}
	if *p == *t {
		return true
	}
	tol := 0.0
	switch oid {
	case 700:
		tol = 1e-6
	case 701:
		tol = 1e-12
	case 1700:
		if i := strings.IndexByte(*p, '.'); i < 0 || len(*p)-i-1 <= 6 {
			return false
		}
		tol = 1e-12
	default:
		return false
	}
	a, err1 := strconv.ParseFloat(*p, 64)
	b, err2 := strconv.ParseFloat(*t, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

var oidNames = map[uint32]string{16: "bool", 17: "bytea", 18: "char", 19: "name", 20: "int8", 21: "int2", 23: "int4",
	25: "text", 26: "oid", 114: "json", 700: "float4", 701: "float8", 705: "unknown", 1042: "bpchar", 1043: "varchar",
	1082: "date", 1083: "time", 1114: "timestamp", 1184: "timestamptz", 1186: "interval", 1266: "timetz",
	1700: "numeric", 2205: "regclass", 2950: "uuid", 3802: "jsonb", 1007: "int4[]", 1009: "text[]", 1016: "int8[]",
	0: "unspecified", 22: "int2vector", 30: "oidvector", 1028: "oid[]", userType: "(a user type)"}

func typeNames(oids []uint32) string {
	var s []string
	for _, o := range oids {
		if n, ok := oidNames[o]; ok {
			s = append(s, n)
		} else {
			s = append(s, strconv.Itoa(int(o)))
		}
	}
	return "(" + strings.Join(s, ",") + ")"
}

// readKnown reads the expected-results file: "verdict<TAB>key" lines.
func readKnown(t testing.TB) map[string]string {
	known := map[string]string{}
	f, err := os.Open(knownFile)
	if os.IsNotExist(err) {
		return known
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, key, ok := strings.Cut(line, "\t")
		if !ok || (v != vBug && v != v0A000 && v != vDiffers) {
			t.Fatalf("%s: bad line %q (want bug|0A000|differs TAB key)", knownFile, line)
		}
		known[key] = v
	}
	return known
}

func writeKnown(t testing.TB, results []result, known map[string]string) {
	var b strings.Builder
	b.WriteString("# Corpus statements that do not match PostgreSQL yet (e2e/difftest_test.go).\n")
	b.WriteString("# bug: a difference to fix. 0A000: tandem refuses it as unsupported on SQLite.\n")
	b.WriteString("# differs: a difference kept on purpose (the corpus says why; regeneration keeps the mark).\n")
	b.WriteString("# Regenerate: TANDEM_DIFFTEST_UPDATE=1 go test -count=1 -run TestDifferentialCorpus ./e2e\n")
	for _, r := range results {
		if r.Verdict != vMatch {
			v := r.Verdict
			if v == vBug && known[r.Stmt.Key] == vDiffers {
				v = vDiffers
			}
			fmt.Fprintf(&b, "%s\t%s\n", v, r.Stmt.Key)
		}
	}
	if err := os.MkdirAll(filepath.Dir(knownFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knownFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startReferencePostgres starts a managed PostgreSQL with a superuser and
// database both named "tandem" (as the tandem cluster's), UTC.
func startReferencePostgres(t testing.TB) string {
	t.Helper()
	havePostgres(t)
	ctx := context.Background()
	m, err := postgres.StartManaged(ctx, postgres.ManagedConfig{
		DataDir:  filepath.Join(t.TempDir(), "pg"),
		TCP:      true, // a reference server the test reaches as another role
		Settings: map[string]string{"fsync": "off", "timezone": "'UTC'", "max_connections": "20"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	admin, err := pgconn.Connect(ctx, m.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, s := range []string{"CREATE ROLE tandem SUPERUSER LOGIN", "CREATE DATABASE tandem OWNER tandem"} {
		if _, err := admin.Exec(ctx, s).ReadAll(); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return strings.Replace(m.DSN("tandem"), "postgres@", "tandem@", 1)
}

func TestDifferentialCorpus(t *testing.T) {
	corpus := loadCorpus(t)
	pgDSN := startReferencePostgres(t)
	c := startCluster(t, clusterSpec{backend: "sqlite"})
	ctx := context.Background()

	files := make([]string, 0, len(corpus))
	for f := range corpus {
		files = append(files, f)
	}
	sort.Strings(files)
	var results []result
	for _, f := range files {
		pc, err := pgconn.Connect(ctx, pgDSN)
		if err != nil {
			t.Fatal(err)
		}
		tc, err := pgconn.Connect(ctx, c.DSN)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range corpus[f] {
			pa := run(ctx, pc, st.SQL)
			ta := run(ctx, tc, st.SQL)
			if ta.Code == "client" {
				// The connection is gone; if the node died, record why and go
				// on with a fresh cluster (scripts are independent).
				tc.Close(ctx)
				if tc, err = connectWithin(ctx, c.DSN, 5*time.Second); err != nil {
					logs, _ := os.ReadFile(filepath.Join(c.RunDir, "logs", "n1.log"))
					ta.Msg += "; node died: " + panicLine(logs)
					t.Logf("%s:%d: tandem died at %q: %s", f, st.Index, oneLine(st.SQL), panicLine(logs))
					c.Stop()
					c = startCluster(t, clusterSpec{backend: "sqlite"})
					if tc, err = connectWithin(ctx, c.DSN, 10*time.Second); err != nil {
						t.Fatal(err)
					}
				}
			}
			v, why := compare(st, pa, ta)
			results = append(results, result{Stmt: st, Verdict: v, Why: why, PG: pa, TD: ta})
		}
		pc.Close(ctx)
		tc.Close(ctx)
	}

	known := readKnown(t)
	counts := map[string]int{}
	var regressions, fixed []string
	for _, r := range results {
		counts[r.Verdict]++
		k, listed := known[r.Stmt.Key]
		switch {
		case r.Verdict == vMatch && listed:
			fixed = append(fixed, r.Stmt.Key)
		case r.Verdict != vMatch && !listed,
			r.Verdict == vBug && k == v0A000:
			regressions = append(regressions, fmt.Sprintf("%s:%d: %s\n    %s", r.Stmt.File, r.Stmt.Index, oneLine(r.Stmt.SQL), r.Why))
		}
	}
	n := len(results)
	pct := func(k int) float64 { return 100 * float64(k) / float64(n) }
	t.Logf("corpus: %d statements in %d scripts: identical %d (%.1f %%), identical or 0A000 %d (%.1f %%), 0A000 %d, other mismatches %d",
		n, len(files), counts[vMatch], pct(counts[vMatch]), counts[vMatch]+counts[v0A000], pct(counts[vMatch]+counts[v0A000]), counts[v0A000], counts[vBug])
	if n < 500 {
		t.Errorf("the corpus has %d statements; the issue asks for at least 500", n)
	}
	if p := os.Getenv("TANDEM_DIFFTEST_REPORT"); p != "" {
		writeReport(t, p, results)
	}
	if os.Getenv("TANDEM_DIFFTEST_UPDATE") != "" {
		writeKnown(t, results, known)
		t.Logf("rewrote %s", knownFile)
		return
	}
	if len(fixed) > 0 {
		t.Logf("%d statements listed in %s match now (remove them: TANDEM_DIFFTEST_UPDATE=1):\n  %s", len(fixed), knownFile, strings.Join(fixed, "\n  "))
	}
	if len(regressions) > 0 {
		t.Errorf("%d statements regressed (not listed in %s as known mismatches):\n%s", len(regressions), knownFile, strings.Join(regressions, "\n"))
	}
}

func connectWithin(ctx context.Context, dsn string, d time.Duration) (*pgconn.PgConn, error) {
	deadline := time.Now().Add(d)
	for {
		c, err := pgconn.Connect(ctx, dsn)
		if err == nil || time.Now().After(deadline) {
			return c, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// panicLine finds the panic message and its first frame in a node log.
func panicLine(log []byte) string {
	s := string(log)
	i := strings.Index(s, "panic: ")
	if i < 0 {
		return "(no panic in the node log)"
	}
	lines := strings.SplitN(s[i:], "\n", 6)
	var keep []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "goroutine ") {
			keep = append(keep, l)
		}
		if len(keep) == 3 {
			break
		}
	}
	return strings.Join(keep, " | ")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func fmtAnswer(a answer) string {
	if a.Code != "" {
		return fmt.Sprintf("ERROR %s: %s", a.Code, a.Msg)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", a.Tag)
	if len(a.Names) > 0 {
		fmt.Fprintf(&b, " cols %q types %s", a.Names, typeNames(a.OIDs))
		for i, r := range a.Rows {
			if i == 3 {
				fmt.Fprintf(&b, " ... (%d rows)", len(a.Rows))
				break
			}
			var vs []string
			for _, v := range r {
				vs = append(vs, show(v))
			}
			fmt.Fprintf(&b, " [%s]", strings.Join(vs, ", "))
		}
	}
	return b.String()
}

// writeReport writes every mismatch with both answers (for MISMATCHES.md).
func writeReport(t testing.TB, path string, results []result) {
	var b strings.Builder
	for _, r := range results {
		if r.Verdict == vMatch {
			continue
		}
		fmt.Fprintf(&b, "%s\t%s:%d\t%s\n\tpostgres: %s\n\ttandem:   %s\n\t%s\n", r.Verdict, r.Stmt.File, r.Stmt.Index, oneLine(r.Stmt.SQL), fmtAnswer(r.PG), fmtAnswer(r.TD), r.Why)
	}
	b.WriteString("\n# Every statement PostgreSQL refuses (corpus review: each should be meant to fail)\n")
	for _, r := range results {
		if r.PG.Code != "" {
			fmt.Fprintf(&b, "%s:%d\t%s\t%s %s\n", r.Stmt.File, r.Stmt.Index, oneLine(r.Stmt.SQL), r.PG.Code, r.PG.Msg)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
}
