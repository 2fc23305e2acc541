package writeset

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode checks that Decode never panics, fails only with ErrCorrupt or
// ErrVersion, and that whatever it accepts is a valid writeset whose
// encoding is exactly the input (the encoding is canonical). The seed corpus
// below runs on every plain `go test`; explore with
//
//	go test -run='^$' -fuzz=FuzzDecode ./writeset
func FuzzDecode(f *testing.F) {
	for _, ws := range []*Writeset{dmlWriteset(), ddlWriteset(), {}, {GSN: 1, Rows: []Row{deleteRow()}}} {
		b := Encode(ws)
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(append(bytes.Clone(b), 0))
	}
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add([]byte{2, 1, 1, 0, 0, 0})
	f.Add([]byte(goodRow(head().u(1))))
	f.Add([]byte(head().u(1 << 60)))
	f.Add([]byte{1, 0x81, 0x00})
	f.Add([]byte{2, 0x81, 0x00})
	f.Add([]byte{Version, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})

	f.Fuzz(func(t *testing.T, b []byte) {
		ws, err := Decode(b)
		if err != nil {
			if ws != nil {
				t.Fatalf("Decode returned a writeset with error %v", err)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if err := ws.Validate(); err != nil {
			t.Fatalf("Decode accepted an invalid writeset: %v", err)
		}
		if again := Encode(ws); !bytes.Equal(again, b) {
			t.Fatalf("accepted a non-canonical encoding:\n in %x\nout %x", b, again)
		}
		if n := Size(ws); n != len(b) {
			t.Fatalf("Size %d, encoding %d bytes", n, len(b))
		}
		// Everything downstream must cope with any decodable writeset.
		_ = ConflictKeys(ws)
		for _, d := range []Dialect{Postgres, SQLite} {
			if _, err := Statements(d, ws); err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("Statements(%s): %v", d.Name(), err)
			}
		}
	})
}
