package replication

import (
	"errors"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
)

// TestHandoverOutcome: a commit that waited on a primary handed over to
// another node answers success only when the new primary holds its GSN,
// 40001 when it is known not to, 08007 when nobody knows.
func TestHandoverOutcome(t *testing.T) {
	cases := []struct {
		name string
		h    handover
		gsn  uint64
		code string // "" = success
	}{
		{"known, held", handover{to: "n2", known: true, upto: 10}, 10, ""},
		{"known, below", handover{to: "n2", known: true, upto: 10}, 3, ""},
		{"known, past the new primary", handover{to: "n2", known: true, upto: 10}, 11, codeSerialization},
		{"known, new primary empty", handover{to: "n2", known: true, upto: 0}, 1, codeSerialization},
		{"unknown", handover{to: "n2"}, 1, codeResolutionUnknown},
		{"unknown, large gsn", handover{to: "n2"}, 1 << 40, codeResolutionUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.h.outcome("n1", c.gsn)
			if c.code == "" {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				return
			}
			var pe *pgwire.Error
			if !errors.As(err, &pe) || pe.Code != c.code {
				t.Fatalf("want SQLSTATE %s, got %v", c.code, err)
			}
			if !errors.Is(err, ErrHandedOver) {
				t.Fatalf("%v does not wrap ErrHandedOver", err)
			}
		})
	}
}
