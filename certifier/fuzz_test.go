package certifier

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeRequest: the decoder never panics, fails only with
// ErrBadRequest, and what it accepts is valid, canonical (re-encodes to the
// same bytes) and certifiable without a panic.
func FuzzDecodeRequest(f *testing.F) {
	f.Add((&Request{ID: "n1-1", Origin: "n1", Snapshot: 7, Keys: []Key{rk("t", 1), rk("t", 2)}, Writeset: []byte("w")}).Encode())
	f.Add((&Request{ID: "x", Keys: []Key{tk("a"), rk("a", -5)}}).Encode())
	f.Add([]byte{1, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error not ErrBadRequest: %v", err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted an invalid request: %v", err)
		}
		if !bytes.Equal(r.Encode(), b) {
			t.Fatalf("not canonical: %x re-encodes to %x", b, r.Encode())
		}
		s := New()
		_, _ = s.Certify(Request{ID: "seed", Keys: r.Keys}, Window{})
		if d, err := s.Certify(r, Window{}); err == nil {
			_ = d.Err()
		}
		for _, k := range r.Keys {
			_ = k.String()
		}
	})
}
