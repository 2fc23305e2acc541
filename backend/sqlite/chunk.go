package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/tandemdb/tandem/pgwire"
)

// A large INSERT of many rows (INSERT INTO t VALUES (...), (...), ...)
// has no long literal to hoist, and PostgreSQL's parser builds a tree
// node for every value: about 30x the statement's size in memory. Such a
// statement runs in chunks of rows, each translated on its own, inside
// one transaction (the session's block, or one of its own), so it stays
// all or nothing and answers one INSERT tag.
const (
	// chunkMinStatement: shorter INSERTs run whole.
	chunkMinStatement = 512 << 10
	// chunkBytes: the rows of one chunk add up to about this much text.
	chunkBytes = 32 << 10
	// chunkCollectMin: from this size on, garbage is collected between
	// chunks, so the statement costs about its size and one chunk's
	// translation (translateCost x chunkBytes) rather than twice its size.
	chunkCollectMin = 4 << 20
)

// chunkPlan is a large INSERT cut into chunks: head is the text up to and
// including VALUES; each chunk is a run of rows, [first row's start, last
// row's end) in the text, about chunkBytes long.
type chunkPlan struct {
	text string
	head string
	tail string // " ON CONFLICT ...", " RETURNING ...": repeated after each chunk's rows
	// returning: the tail has RETURNING; the chunks' rows are the
	// statement's, in order.
	returning bool
	chunks    [][2]int
	rows      int
}

// planChunks returns the plan for a large plain multi-row INSERT, with or
// without ON CONFLICT and RETURNING clauses (each chunk repeats them: the
// rows of one statement are checked one after the other on SQLite, so
// cutting them changes nothing, and the chunks' returned rows are the
// statement's, in order), or nil when sql is not one (a parameter, a
// SELECT, a single row: those run whole).
func planChunks(sql string) *chunkPlan {
	if len(sql) < chunkMinStatement {
		return nil
	}
	n := len(sql)
	depth := 0
	values := -1
	for i := 0; i < n && values < 0; {
		c := sql[i]
		switch {
		case c == '\'' || c == '"':
			i = skipQuotedIdent(sql, i)
		case c == '-' && i+1 < n && sql[i+1] == '-', c == '/' && i+1 < n && sql[i+1] == '*', c == '$':
			return nil // keep the cut simple: no comments or parameters in the head
		case c == '(':
			depth++
			i++
		case c == ')':
			depth--
			i++
		case isIdentByte(c):
			j := i
			for j < n && isIdentByte(sql[j]) {
				j++
			}
			w := strings.ToUpper(sql[i:j])
			if depth == 0 && (w == "SELECT" || w == "WITH" || w == "DEFAULT") {
				return nil
			}
			if depth == 0 && w == "VALUES" {
				values = j
			}
			i = j
		default:
			i++
		}
	}
	if values < 0 {
		return nil
	}
	p := &chunkPlan{text: sql, head: sql[:values]}
	i := values
	start := -1 // the current chunk's first row
	for {
		for i < n && isSpace(sql[i]) {
			i++
		}
		if i >= n || sql[i] != '(' {
			return nil
		}
		end := tupleEnd(sql, i)
		if end < 0 {
			return nil
		}
		if start < 0 {
			start = i
		}
		p.rows++
		if end-start >= chunkBytes {
			p.chunks = append(p.chunks, [2]int{start, end})
			start = -1
		}
		i = end
		for i < n && isSpace(sql[i]) {
			i++
		}
		if i < n && sql[i] == ',' {
			i++
			continue
		}
		if start >= 0 {
			p.chunks = append(p.chunks, [2]int{start, end})
		}
		if j, returning := tailEnd(sql, i); j > i {
			p.tail = " " + strings.TrimRight(sql[i:j], " \t\r\n")
			p.returning = returning
			i = j
		}
		if i < n && sql[i] == ';' {
			i++
			for i < n && isSpace(sql[i]) {
				i++
			}
		}
		if i < n || p.rows < 2 {
			return nil // something else after the rows
		}
		return p
	}
}

// tailEnd returns the end of the clauses after an INSERT's rows starting
// at i (ON CONFLICT ..., RETURNING ..., up to a final semicolon or the
// end) and whether they have RETURNING, or i when there are none or they
// have a parameter or a comment.
func tailEnd(sql string, i int) (int, bool) {
	n := len(sql)
	word := func(j int) (string, int) {
		k := j
		for k < n && isIdentByte(sql[k]) {
			k++
		}
		return strings.ToUpper(sql[j:k]), k
	}
	w, j := word(i)
	returning := w == "RETURNING"
	if w == "ON" {
		for j < n && isSpace(sql[j]) {
			j++
		}
		if w, _ = word(j); w != "CONFLICT" {
			return i, false
		}
	} else if !returning {
		return i, false
	}
	for j < n && sql[j] != ';' {
		c := sql[j]
		switch {
		case c == '\'':
			backslash := j > 0 && (sql[j-1] == 'E' || sql[j-1] == 'e')
			j = skipQuoted(sql, j, backslash)
		case c == '"':
			j = skipQuotedIdent(sql, j)
		case c == '$', c == '-' && j+1 < n && sql[j+1] == '-', c == '/' && j+1 < n && sql[j+1] == '*':
			return i, false
		case isIdentByte(c):
			w, k := word(j)
			returning = returning || w == "RETURNING"
			j = k
		default:
			j++
		}
	}
	return j, returning
}

// tupleEnd returns the index after the parenthesis closing the one at i,
// or -1 (parameters, comments and dollar quotes are refused).
func tupleEnd(sql string, i int) int {
	depth := 0
	for n := len(sql); i < n; {
		c := sql[i]
		switch {
		case c == '\'':
			backslash := i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e')
			i = skipQuoted(sql, i, backslash)
		case c == '"':
			i = skipQuotedIdent(sql, i)
		case c == '$', c == '-' && i+1 < n && sql[i+1] == '-', c == '/' && i+1 < n && sql[i+1] == '*':
			return -1
		case c == '(':
			depth++
			i++
		case c == ')':
			depth--
			i++
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return -1
}

// skipQuotedIdent skips a quoted identifier or plain literal at i.
func skipQuotedIdent(sql string, i int) int {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		if sql[j] == q {
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// chunk returns the statement text of chunk k.
func (p *chunkPlan) chunk(k int) string {
	c := p.chunks[k]
	return p.head + " " + p.text[c[0]:c[1]] + p.tail
}

// each calls f with each chunk's statement text.
func (p *chunkPlan) each(f func(sql string) error) error {
	for k := range p.chunks {
		if err := f(p.chunk(k)); err != nil {
			return err
		}
	}
	return nil
}

// execChunked runs a chunked INSERT in the session's transaction block, or
// in one of its own.
func (s *Session) execChunked(ctx context.Context, st *Statement) (res pgwire.Result, err error) {
	own := !s.inTx
	if own {
		if _, err := s.begin(ctx, &Statement{kind: "BEGIN", sql: "BEGIN"}); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				_, _ = s.finish(ctx, "ROLLBACK")
			}
		}()
	}
	var total int64
	var rows [][]any
	var cols []pgwire.Column
	collect := len(st.chunked.text) >= chunkCollectMin
	err = st.chunked.each(func(sql string) error {
		if collect {
			// The last chunk's translation is garbage now: collect it
			// before the next one adds as much again (left to its pace,
			// the collector lets garbage grow to about the live heap,
			// the whole message, before it runs).
			runtime.GC()
		}
		cst, err := s.Prepare(ctx, sql)
		if err != nil {
			return err
		}
		r, err := s.Execute(ctx, cst, nil)
		if err != nil {
			return err
		}
		var tag string
		if st.chunked.returning {
			var got [][]any
			if got, tag, cols, err = drain(r); err != nil {
				return err
			}
			rows = append(rows, got...)
		} else {
			if err := r.Close(); err != nil {
				return err
			}
			tag = r.Tag()
		}
		k, err := strconv.ParseInt(tag[strings.LastIndexByte(tag, ' ')+1:], 10, 64)
		if err != nil {
			return fmt.Errorf("sqlite: chunk tag %q: %w", tag, err)
		}
		total += k
		return nil
	})
	if err != nil {
		return nil, err
	}
	if own {
		if _, err := s.finish(ctx, "COMMIT"); err != nil {
			return nil, err
		}
	}
	tag := fmt.Sprintf("INSERT 0 %d", total)
	if st.chunked.returning {
		return &bufResult{cols: cols, rows: rows, tag: tag}, nil
	}
	return &cmdResult{tag: tag}, nil
}
