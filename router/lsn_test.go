package router

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

func TestParseFormatLSN(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0/0", 0, true},
		{"0/30289E8", 0x30289E8, true},
		{"16/B374D848", 0x16<<32 | 0xB374D848, true},
		{"", 0, false},
		{"30289E8", 0, false},
		{"1/100000000", 0, false},
		{"g/1", 0, false},
	} {
		got, err := parseLSN(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseLSN(%q) = %x, %v; want %x, ok %v", c.in, got, err, c.want, c.ok)
			continue
		}
		if c.ok && formatLSN(got) != c.in {
			t.Errorf("formatLSN(%x) = %q, want %q", got, formatLSN(got), c.in)
		}
	}
}

func TestWaitReplayQuery(t *testing.T) {
	for _, c := range []struct {
		lsn  uint64
		wait time.Duration
		want []string
	}{
		{0x16<<32 | 0xB374D848, time.Second, []string{"< '16/B374D848'::pg_lsn", "interval '1000 milliseconds'", "ERRCODE = '55000'", "up to 16/B374D848 within 1000 ms", "pg_is_in_recovery()"}},
		{1, 0, []string{"< '0/1'::pg_lsn", "interval '1 milliseconds'"}},
	} {
		q := waitReplayQuery(c.lsn, c.wait)
		if !strings.HasPrefix(q, "DO $tandem$") || !strings.HasSuffix(q, "END$tandem$") {
			t.Errorf("%q: not one DO block", q)
		}
		for _, w := range c.want {
			if !strings.Contains(q, w) {
				t.Errorf("%q lacks %q", q, w)
			}
		}
	}
}

// dataRow builds a DataRow frame with text columns (nil: NULL).
func dataRow(cols ...[]byte) []byte {
	b := []byte{'D', 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(b[5:], uint16(len(cols)))
	for _, c := range cols {
		if c == nil {
			b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
		b = append(b, c...)
	}
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	return b
}

func TestFirstColumn(t *testing.T) {
	for _, c := range []struct {
		frame []byte
		want  string
	}{
		{dataRow([]byte("0/3000060")), "0/3000060"},
		{dataRow([]byte("1/2"), []byte("x")), "1/2"},
		{dataRow(nil), ""},
		{dataRow(), ""},
		{dataRow([]byte("0/1"))[:9], ""}, // truncated
	} {
		if got := firstColumn(c.frame); got != c.want {
			t.Errorf("firstColumn(%v) = %q, want %q", c.frame, got, c.want)
		}
	}
}

// A session that names synchronous_commit, in any case and any form, is
// found; other statements are not.
func TestContainsFold(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"SET synchronous_commit = off", true},
		{"set SYNCHRONOUS_COMMIT to 'off'", true},
		{"SET LOCAL Synchronous_Commit = local", true},
		{"SELECT set_config('synchronous_commit', 'off', true)", true},
		{"synchronous_commit", true},
		{"SELECT 1", false},
		{"SET synchronous_standby_names = ''", false},
		{"synchronous_commi", false},
		{"", false},
	} {
		if got := containsFold(tc.q, "synchronous_commit"); got != tc.want {
			t.Errorf("containsFold(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestXactRefTake(t *testing.T) {
	s := func(v string) []byte { return []byte(v) }
	for _, c := range []struct {
		name  string
		frame []byte
		want  xactRef
	}{
		{"all three", dataRow(s("754"), s("0/3000148"), s("00000002")), xactRef{xid: "754", lsn: "0/3000148", tli: "00000002"}},
		{"no id: wrote nothing", dataRow(nil, s("0/3000148"), s("00000001")), xactRef{lsn: "0/3000148", tli: "00000001"}},
		{"in recovery", dataRow(nil, nil, nil), xactRef{}},
		{"two columns: not ours", dataRow(s("1"), s("0/1")), xactRef{}},
		{"truncated", dataRow(s("754"), s("0/3000148"), s("00000002"))[:12], xactRef{}},
	} {
		var x xactRef
		x.take(c.frame)
		if x != c.want {
			t.Errorf("%s: take = %+v, want %+v", c.name, x, c.want)
		}
	}
}
