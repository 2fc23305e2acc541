package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// copy runs a COPY statement: relayed whole to a back end that runs COPY
// itself (CopyStreamer), else COPY TO STDOUT or COPY FROM STDIN done here
// over the back end's statements (SQLite).
func (s *execSession) copy(ctx context.Context, sql string) error {
	if cs, ok := s.bs.(CopyStreamer); ok {
		tag, err := cs.Copy(ctx, sql, copyClient{s})
		if err != nil {
			return err
		}
		s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
		s.afterStatement(sql)
		return nil
	}
	if m := copyToRe.FindStringSubmatch(sql); m != nil {
		return s.copyOut(ctx, m)
	}
	return s.copyIn(ctx, sql)
}

// copyClient is the client side of a relayed COPY.
type copyClient struct{ s *execSession }

func (cc copyClient) Send(m pgproto3.BackendMessage) error {
	cc.s.c.Append(m)
	if cc.s.c.Pending() > 256<<10 {
		return cc.s.c.Flush()
	}
	return nil
}

func (cc copyClient) Flush() error { return cc.s.c.Flush() }

func (cc copyClient) Receive() (pgproto3.FrontendMessage, error) {
	for {
		cc.s.c.ReleaseMemory() // the last CopyData is consumed
		typ, frame, err := cc.s.c.ReadFrame()
		if err != nil {
			return nil, cc.s.copyReadErr(err)
		}
		switch typ {
		case 'd':
			return &pgproto3.CopyData{Data: frameBody(frame)}, nil
		case 'c':
			return &pgproto3.CopyDone{}, nil
		case 'f':
			var f pgproto3.CopyFail
			if err := f.Decode(frameBody(frame)); err != nil {
				return nil, malformed("CopyFail", err)
			}
			return &f, nil
		case 'H', 'S':
			// allowed during COPY, ignored
		default:
			return nil, &fatalError{Errorf(CodeProtocolViolation, "unexpected message type %q during COPY from stdin", typ)}
		}
	}
}

// copyOptions are a COPY statement's format options (both the WITH (...)
// list and the older keyword forms).
type copyOptions struct {
	binary, csv, header bool
	delim               byte
	null                string
	quote               byte
}

var (
	copyDelimRe  = regexp.MustCompile(`(?i)delimiter\s+(?:as\s+)?'(.)'`)
	copyNullRe   = regexp.MustCompile(`(?i)null\s+(?:as\s+)?'([^']*)'`)
	copyQuoteRe  = regexp.MustCompile(`(?i)quote\s+(?:as\s+)?'(.)'`)
	copyBinRe    = regexp.MustCompile(`(?i)\bbinary\b`)
	copyCSVRe    = regexp.MustCompile(`(?i)\bcsv\b`)
	copyHeaderRe = regexp.MustCompile(`(?i)\bheader\b(\s+(false|off|0)\b)?`)
	copyToRe     = regexp.MustCompile(`(?is)^\s*COPY\s+(?:\((.*)\)|("?[a-z_][a-z0-9_."]*)\s*(?:\(([^)]*)\))?)\s+TO\s+STDOUT\b\s*(.*?)\s*;?\s*$`)
)

func parseCopyOptions(opts string) copyOptions {
	o := copyOptions{binary: copyBinRe.MatchString(opts), csv: copyCSVRe.MatchString(opts), delim: '\t', null: `\N`, quote: '"'}
	if m := copyHeaderRe.FindStringSubmatch(opts); m != nil && m[1] == "" {
		o.header = true
	}
	if o.csv {
		o.delim, o.null = ',', ""
	}
	if m := copyDelimRe.FindStringSubmatch(opts); m != nil {
		o.delim = m[1][0]
	}
	if m := copyNullRe.FindStringSubmatch(opts); m != nil {
		o.null = m[1]
	}
	if m := copyQuoteRe.FindStringSubmatch(opts); m != nil {
		o.quote = m[1][0]
	}
	return o
}

func splitCopyColumns(list string) []string {
	var cols []string
	for _, c := range strings.Split(list, ",") {
		if c = strings.TrimSpace(c); c != "" {
			cols = append(cols, c)
		}
	}
	return cols
}

// copyBinarySignature opens a binary COPY stream (then flags and the
// header extension length, both 0 here).
var copyBinarySignature = []byte("PGCOPY\n\377\r\n\x00")

// copyOut runs COPY table|(query) TO STDOUT over the back end's SELECT, in
// text, CSV or binary format. m is copyToRe's match.
// CopyColumner is a BackendSession that knows which columns COPY t TO
// copies when it names none: a quoted column list, nil for every column.
type CopyColumner interface {
	CopyColumns(ctx context.Context, table string) []string
}

func (s *execSession) copyOut(ctx context.Context, m []string) error {
	query := m[1]
	if query == "" {
		cols := "*"
		if m[3] != "" {
			cols = strings.Join(splitCopyColumns(m[3]), ", ")
		} else if cc, ok := s.bs.(CopyColumner); ok {
			// Without a column list: the table's columns but its
			// generated ones, as PostgreSQL copies.
			if names := cc.CopyColumns(ctx, m[2]); len(names) > 0 {
				cols = strings.Join(names, ", ")
			}
		}
		query = "SELECT " + cols + " FROM " + m[2]
	}
	o := parseCopyOptions(m[4])
	st, err := s.bs.Prepare(ctx, query)
	if err != nil {
		return err
	}
	defer st.Close()
	if st.NumParams() > 0 {
		return Errorf("42P02", "there is no parameter $1")
	}
	res, err := s.bs.Execute(ctx, st, nil)
	if err != nil {
		return err
	}
	defer res.Close()
	cols := res.Columns()
	if cols == nil {
		return Errorf(CodeFeatureNotSupported, "COPY query must have a RETURNING clause or return rows")
	}
	format := int16(0)
	if o.binary {
		format = 1
	}
	colFormats := make([]uint16, len(cols))
	for i := range colFormats {
		colFormats[i] = uint16(format)
	}
	s.c.Append(&pgproto3.CopyOutResponse{OverallFormat: byte(format), ColumnFormatCodes: colFormats})
	var line []byte
	if o.binary {
		line = append(line, copyBinarySignature...)
		line = binary.BigEndian.AppendUint32(line, 0)
		line = binary.BigEndian.AppendUint32(line, 0)
	} else if o.header && o.csv {
		for i, c := range cols {
			if i > 0 {
				line = append(line, o.delim)
			}
			line = appendCSVField(line, []byte(c.Name), o)
		}
		line = append(line, '\n')
	}
	row := make([]any, len(cols))
	var n int64
	var field []byte
	loc := s.zone()
	for {
		ok, err := res.Next(row)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if o.binary {
			line = binary.BigEndian.AppendUint16(line, uint16(len(cols)))
		}
		for i, v := range row {
			if o.binary {
				if v == nil {
					line = binary.BigEndian.AppendUint32(line, 0xffffffff)
					continue
				}
				at := len(line)
				line = append(line, 0, 0, 0, 0)
				if line, err = appendValue(line, cols[i].OID, 1, v, loc); err != nil {
					return err
				}
				binary.BigEndian.PutUint32(line[at:], uint32(len(line)-at-4))
				continue
			}
			if i > 0 {
				line = append(line, o.delim)
			}
			if v == nil {
				line = append(line, o.null...)
				continue
			}
			if field, err = appendValue(field[:0], cols[i].OID, 0, v, loc); err != nil {
				return err
			}
			if o.csv {
				line = appendCSVField(line, field, o)
			} else {
				line = appendCopyText(line, field, o.delim)
			}
		}
		if !o.binary {
			line = append(line, '\n')
		}
		s.c.Append(&pgproto3.CopyData{Data: line})
		line = line[:0]
		n++
		if s.c.Pending() > 256<<10 {
			if err := s.c.Flush(); err != nil {
				return err
			}
		}
	}
	if o.binary {
		line = binary.BigEndian.AppendUint16(line, 0xffff)
	}
	if len(line) > 0 {
		s.c.Append(&pgproto3.CopyData{Data: line})
	}
	s.c.Append(&pgproto3.CopyDone{})
	s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte(fmt.Sprintf("COPY %d", n))})
	return nil
}

// appendCopyText escapes a value for COPY's text format.
func appendCopyText(dst, v []byte, delim byte) []byte {
	for _, c := range v {
		switch c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if c == delim {
				dst = append(dst, '\\', c)
			} else {
				dst = append(dst, c)
			}
		}
	}
	return dst
}

// appendCSVField quotes a value for COPY's CSV format when it must be (as
// PostgreSQL does: it holds the delimiter, the quote, a line break, or
// equals the NULL string).
func appendCSVField(dst, v []byte, o copyOptions) []byte {
	if !bytes.ContainsAny(v, string([]byte{o.delim, o.quote, '\n', '\r'})) && string(v) != o.null && !(len(v) > 0 && v[0] == '\\' && string(v) == `\.`) {
		return append(dst, v...)
	}
	dst = append(dst, o.quote)
	for _, c := range v {
		if c == o.quote {
			dst = append(dst, o.quote)
		}
		dst = append(dst, c)
	}
	return append(dst, o.quote)
}

// binaryCopyReader reads rows of a binary COPY stream, decoding each field
// with its column's type and handing it on in PostgreSQL's text form.
type binaryCopyReader struct {
	r      io.Reader
	oids   []uint32
	header bool
	buf    []byte
}

func (b *binaryCopyReader) read(n int) ([]byte, error) {
	if cap(b.buf) < n {
		b.buf = make([]byte, n)
	}
	b.buf = b.buf[:n]
	if _, err := io.ReadFull(b.r, b.buf); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, Errorf("22P04", "unexpected EOF in COPY data")
		}
		return nil, err
	}
	return b.buf, nil
}

func (b *binaryCopyReader) next() ([]*string, bool, error) {
	if !b.header {
		h, err := b.read(len(copyBinarySignature) + 8)
		if err != nil {
			return nil, false, err
		}
		if !bytes.Equal(h[:len(copyBinarySignature)], copyBinarySignature) {
			return nil, false, Errorf("22P04", "COPY file signature not recognized")
		}
		ext := binary.BigEndian.Uint32(h[len(copyBinarySignature)+4:])
		if _, err := b.read(int(ext)); err != nil {
			return nil, false, err
		}
		b.header = true
	}
	// The end of the data at a row boundary ends it too (PostgreSQL
	// accepts a stream without its trailer; pgx sends none).
	var cnt [2]byte
	if k, err := io.ReadFull(b.r, cnt[:]); err == io.EOF && k == 0 {
		return nil, false, nil
	} else if err != nil {
		return nil, false, Errorf("22P04", "unexpected EOF in COPY data")
	}
	n := int(int16(binary.BigEndian.Uint16(cnt[:])))
	if n == -1 {
		return nil, false, nil
	}
	if n != len(b.oids) {
		return nil, false, Errorf("22P04", "row field count is %d, expected %d", n, len(b.oids))
	}
	row := make([]*string, n)
	for i := range row {
		h, err := b.read(4)
		if err != nil {
			return nil, false, err
		}
		l := int32(binary.BigEndian.Uint32(h))
		if l == -1 {
			continue
		}
		if l < 0 || l > 1<<30 {
			return nil, false, Errorf("22P04", "invalid field size %d", l)
		}
		raw, err := b.read(int(l))
		if err != nil {
			return nil, false, err
		}
		v, err := decodeParam(b.oids[i], 1, raw, time.UTC)
		if err != nil {
			return nil, false, Errorf("22P03", "incorrect binary data format in COPY field %d: %v", i+1, err)
		}
		var txt string
		switch x := v.(type) {
		case string:
			txt = x
		case []byte:
			if b.oids[i] == OIDBytea {
				txt = `\x` + fmt.Sprintf("%x", x)
			} else {
				txt = string(x)
			}
		default:
			txt = string(appendText(nil, b.oids[i], v, time.UTC))
		}
		row[i] = &txt
	}
	return row, true, nil
}
