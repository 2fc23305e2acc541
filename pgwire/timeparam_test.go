package pgwire

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Date and time parameters reach the back end in the text form it keeps
// and compares: a timestamptz in UTC with "+00", whatever its offset or
// format (text or binary).
func TestTimeParams(t *testing.T) {
	plus5 := time.Date(2024, 1, 2, 3, 0, 0, 500000000, time.FixedZone("", 5*3600))
	bin := func(oid uint32, v time.Time) []byte {
		m := pgtype.NewMap()
		b, err := m.Encode(oid, pgtype.BinaryFormatCode, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		oid    uint32
		format int16
		src    []byte
		want   any
	}{
		{OIDTimestamptz, 0, []byte("2024-01-02 03:00:00.5+05"), "2024-01-01 22:00:00.5+00"},
		{OIDTimestamptz, 0, []byte("2024-01-02T03:00:00+05:00"), "2024-01-01 22:00:00+00"},
		{OIDTimestamptz, 1, bin(OIDTimestamptz, plus5), "2024-01-01 22:00:00.5+00"},
		{OIDTimestamp, 0, []byte("2024-01-02 03:00:00"), "2024-01-02 03:00:00"},
		{OIDTimestamp, 1, bin(OIDTimestamp, time.Date(2024, 1, 2, 3, 0, 0, 0, time.UTC)), "2024-01-02 03:00:00"},
		{OIDDate, 0, []byte("2024-01-02"), "2024-01-02"},
		{OIDDate, 1, bin(OIDDate, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)), "2024-01-02"},
		{OIDTimestamptz, 0, []byte("now"), "now"}, // read when the statement runs
	}
	for _, tc := range tests {
		got, err := decodeParam(tc.oid, tc.format, tc.src, time.UTC)
		if err != nil || got != tc.want {
			t.Errorf("OID %d format %d %q: %v (%v), want %v", tc.oid, tc.format, tc.src, got, err, tc.want)
		}
	}
}
