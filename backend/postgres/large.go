package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tandemdb/tandem/writeset"
)

// Large rows. A row image is one DataRow, which pgx reads whole into a
// buffer from its pool of powers of two (a 12 MiB image takes 16 MiB), and
// whose JSON is then decoded into values that the writeset's encoding
// copies once more. So the image of a row larger than bigRowBytes leaves
// out its values larger than 4 KiB (the SQL is in imageBranch, in
// fullRowCaptureFunction for tables without a primary key, whose values
// wait in _tandem.capture_big, and in setupSQL's _tandem.big), and readBig
// reads each of them in pieces of bigPieceBytes, in binary (the bytes a
// text result would carry, with no JSON), straight into the writeset's
// encoding (setRows) or into one string (rowsOf). Small rows take the
// path they always took.
const (
	bigRowBytes   = 256 << 10
	bigValueBytes = 4096          // _tandem.big's threshold: a value left out
	bigPieceBytes = 256<<10 - 256 // a DataRow within pgx's 256 KiB buffer
)

// errBigValue: the pieces of a large value did not come as asked.
var errBigValue = errors.New("postgres: large value read back out of order")

// bigQuery reads the values at idx (indexes into cols) of the row at ctid
// $1 in pieces: one row per piece, (index, the value's size, offset,
// piece), in order. Each value is the text form a text result carries
// (textsend: in the client's encoding), taken once (the OFFSET 0
// subquery is not flattened into the pieces' loop).
func bigQuery(table string, cols []string, idx []int) string {
	vals := make([]string, len(idx))
	for k, i := range idx {
		vals[k] = fmt.Sprintf("(%d, textsend(tandem_r.%s::text))", i, pgQuote(cols[i]))
	}
	return fmt.Sprintf(`SELECT tandem_s.i, octet_length(tandem_s.b), tandem_o, substr(tandem_s.b, tandem_o, %d)
  FROM (SELECT tandem_u.i, tandem_u.b FROM %s tandem_r, LATERAL (VALUES %s) tandem_u(i, b) WHERE tandem_r.ctid = $1::tid OFFSET 0) tandem_s,
  generate_series(1, octet_length(tandem_s.b), %d) tandem_o`, bigPieceBytes, pgQuote(table), strings.Join(vals, ", "), bigPieceBytes)
}

// sideQuery is bigQuery for the values a full-row capture event of a
// table without a primary key left in _tandem.capture_big (row $1): the
// same pieces, and the row is deleted as it is read (the transaction's
// capture rows must not outlive it; _tandem.ws deleted the event).
func sideQuery(idx []int) string {
	in := make([]string, len(idx))
	for k, i := range idx {
		in[k] = strconv.Itoa(i + 1)
	}
	return fmt.Sprintf(`WITH tandem_d AS (DELETE FROM _tandem.capture_big WHERE id = $1::bigint RETURNING vals)
SELECT tandem_s.i, octet_length(tandem_s.b), tandem_o, substr(tandem_s.b, tandem_o, %d)
  FROM (SELECT tandem_u.i - 1 AS i, textsend(tandem_u.x) AS b FROM tandem_d, unnest(tandem_d.vals) WITH ORDINALITY tandem_u(x, i)
    WHERE tandem_u.i IN (%s) OFFSET 0) tandem_s,
  generate_series(1, octet_length(tandem_s.b), %d) tandem_o`, bigPieceBytes, strings.Join(in, ", "), bigPieceBytes)
}

// readBig reads the left-out values of r in pieces, in order: start is
// called once per value with its index in r.After and its size, and
// returns where its bytes go; every piece is copied there.
func (s *Session) readBig(ctx context.Context, r *capRow, start func(i, size int) []byte) error {
	q := bigQuery(r.Table, r.Cols, r.big)
	if r.side {
		q = sideQuery(r.big)
	}
	rr := s.c.ExecParams(ctx, q, [][]byte{[]byte(r.ctid)}, nil, nil, []int16{0, 0, 0, 1})
	var dst []byte
	var err error
	k, at := -1, 0
	for rr.NextRow() {
		v := rr.Values()
		if err != nil {
			continue
		}
		if len(v) != 4 {
			err = errBigValue
			continue
		}
		i, _ := strconv.Atoi(string(v[0]))
		size, _ := strconv.Atoi(string(v[1]))
		off, _ := strconv.Atoi(string(v[2]))
		if off == 1 {
			if k >= 0 && at != len(dst) {
				err = fmt.Errorf("%w: %s.%s ends at byte %d of %d", errBigValue, r.Table, r.Cols[r.big[k]], at, len(dst))
				continue
			}
			k++
			if k >= len(r.big) || r.big[k] != i {
				err = fmt.Errorf("%w: value %d of %s came unasked", errBigValue, i, r.Table)
				continue
			}
			dst, at = start(i, size), 0
		}
		if k < 0 || r.big[k] != i || off != at+1 || at+len(v[3]) > len(dst) {
			err = fmt.Errorf("%w: a piece at byte %d of %s.%s", errBigValue, off, r.Table, r.Cols[i])
			continue
		}
		at += copy(dst[at:], v[3])
	}
	if _, cerr := rr.Close(); cerr != nil {
		return fmt.Errorf("postgres: read the large values of a row of %s: %w", r.Table, cerr)
	}
	if err == nil && (k != len(r.big)-1 || at != len(dst)) {
		err = fmt.Errorf("%w: %s has %d of %d values", errBigValue, r.Table, k+1, len(r.big))
	}
	return err
}

// rowsOf completes rows with their left-out values, each read into a
// string of its own (the paths that need values: a block's DDL script,
// a DDL commit).
func (s *Session) rowsOf(ctx context.Context, rows []capRow) ([]writeset.Row, error) {
	out := make([]writeset.Row, len(rows))
	for j := range rows {
		r := &rows[j]
		out[j] = r.Row
		if len(r.big) == 0 {
			continue
		}
		var bufs [][]byte
		err := s.readBig(ctx, r, func(i, size int) []byte {
			bufs = append(bufs, make([]byte, size))
			return bufs[len(bufs)-1]
		})
		if err != nil {
			return nil, err
		}
		for k, i := range r.big {
			// Never written again: the string may be the buffer.
			r.After[i] = writeset.Text(unsafe.String(unsafe.SliceData(bufs[k]), len(bufs[k])))
		}
	}
	return out, nil
}

// setRows gives ws its rows. Without large values they are ws.Rows;
// otherwise they go into an Encoder, the large values read straight into
// it (readBig), so each is in memory once: the writeset's encoding is that
// buffer (writeset.Encode writes its header in front).
func (s *Session) setRows(ctx context.Context, ws *writeset.Writeset, rows []capRow) error {
	big := 0
	for j := range rows {
		if len(rows[j].big) > 0 {
			big += rows[j].size + 16*len(rows[j].big)
		}
	}
	if big == 0 {
		ws.Rows = make([]writeset.Row, len(rows))
		for j := range rows {
			ws.Rows[j] = rows[j].Row
		}
		return nil
	}
	hint := big
	for j := range rows {
		hint += writeset.Size(&writeset.Writeset{Rows: []writeset.Row{rows[j].Row}})
	}
	e := writeset.NewEncoder(hint)
	for j := range rows {
		r := &rows[j]
		if len(r.big) == 0 {
			e.Row(&r.Row)
			continue
		}
		e.StartRow(&r.Row, len(r.After))
		next := 0
		err := s.readBig(ctx, r, func(i, size int) []byte {
			for ; next < i; next++ {
				e.Value(r.After[next])
			}
			next = i + 1
			return e.Text(size)
		})
		if err != nil {
			return err
		}
		for ; next < len(r.After); next++ {
			e.Value(r.After[next])
		}
	}
	ws.Encoded = e
	return nil
}
