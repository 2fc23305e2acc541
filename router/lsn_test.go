package router

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
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
		if x.xid != c.want.xid || x.lsn != c.want.lsn || x.tli != c.want.tli || x.known || x.failed != nil {
			t.Errorf("%s: take = %+v, want %+v", c.name, x, c.want)
		}
	}
}

// xactFrames: xactStmt bound, executed and synced when it is prepared on
// the connection; closed (no error when missing) and parsed first when it
// is not. Each run ends with its own Sync, so its answer reaches the
// router before the COMMIT runs.
func TestXactFrames(t *testing.T) {
	decode := func(b []byte) []pgproto3.FrontendMessage {
		t.Helper()
		var out []pgproto3.FrontendMessage
		for len(b) > 0 {
			n := int(binary.BigEndian.Uint32(b[1:5])) + 1
			var m pgproto3.FrontendMessage
			switch b[0] {
			case 'C':
				m = &pgproto3.Close{}
			case 'P':
				m = &pgproto3.Parse{}
			case 'B':
				m = &pgproto3.Bind{}
			case 'E':
				m = &pgproto3.Execute{}
			case 'S':
				m = &pgproto3.Sync{}
			default:
				t.Fatalf("unexpected message %q", b[0])
			}
			if err := m.Decode(b[5:n]); err != nil {
				t.Fatalf("decode %q: %v", b[0], err)
			}
			out = append(out, m)
			b = b[n:]
		}
		return out
	}
	run := decode(xactFrames(true))
	if len(run) != 3 {
		t.Fatalf("ready: %#v", run)
	}
	if b, ok := run[0].(*pgproto3.Bind); !ok || b.PreparedStatement != xactStmt || b.DestinationPortal != "" {
		t.Fatalf("ready: first %#v", run[0])
	}
	if e, ok := run[1].(*pgproto3.Execute); !ok || e.Portal != "" || e.MaxRows != 0 {
		t.Fatalf("ready: second %#v", run[1])
	}
	if _, ok := run[2].(*pgproto3.Sync); !ok {
		t.Fatalf("ready: no Sync of its own: %#v", run[2])
	}
	prep := decode(xactFrames(false))
	if len(prep) != 5 {
		t.Fatalf("not ready: %#v", prep)
	}
	if c, ok := prep[0].(*pgproto3.Close); !ok || c.ObjectType != 'S' || c.Name != xactStmt {
		t.Fatalf("not ready: first %#v", prep[0])
	}
	if p, ok := prep[1].(*pgproto3.Parse); !ok || p.Name != xactStmt || p.Query != xactQuery {
		t.Fatalf("not ready: second %#v", prep[1])
	}
}

// xactStep keeps xactQuery's answer up to its ReadyForQuery, takes its
// DataRow, learns that the statement is prepared from ParseComplete, and
// keeps a failure, after which the statement is prepared again.
func TestXactStep(t *testing.T) {
	row := dataRow([]byte("741"), []byte("0/3000060"), []byte("00000002"))
	for _, c := range []struct {
		name         string
		types        string
		ready        bool
		wantReady    bool
		known, fails bool
	}{
		{"prepared", "312DCZ", false, true, true, false},
		{"run", "2DCZ", true, true, true, false},
		{"statement gone", "EZ", true, false, false, true},
		{"timeout after parse", "31EZ", false, false, false, true},
	} {
		var x xactRef
		ready := c.ready
		for i, typ := range []byte(c.types) {
			frame := []byte{typ, 0, 0, 0, 4}
			switch typ {
			case 'D':
				frame = row
			case 'E':
				frame, _ = (&pgproto3.ErrorResponse{Severity: "ERROR", Code: "26000", Message: "prepared statement \"_tandem_xact\" does not exist"}).Encode(nil)
			}
			if last := xactStep(&x, &ready, typ, frame); last != (i == len(c.types)-1) {
				t.Errorf("%s: message %c: last = %v", c.name, typ, last)
			}
		}
		if ready != c.wantReady || x.known != c.known || (x.failed != nil) != c.fails {
			t.Errorf("%s: ready %v known %v failed %v", c.name, ready, x.known, x.failed != nil)
		}
		if c.known && (x.xid != "741" || x.lsn != "0/3000060" || x.tli != "00000002") {
			t.Errorf("%s: took %+v", c.name, x)
		}
	}
}

// xactRollback: after xactQuery failed, the COMMIT's ROLLBACK becomes the
// failure, once; other answers pass as they are.
func TestXactRollback(t *testing.T) {
	rollback, _ := (&pgproto3.CommandComplete{CommandTag: []byte("ROLLBACK")}).Encode(nil)
	commit, _ := (&pgproto3.CommandComplete{CommandTag: []byte("COMMIT")}).Encode(nil)
	fail, _ := (&pgproto3.ErrorResponse{Severity: "ERROR", Code: "57014", Message: "canceling statement due to statement timeout"}).Encode(nil)
	var x xactRef
	if got := xactRollback(&x, 'C', rollback); !bytes.Equal(got, rollback) {
		t.Fatalf("no failure: ROLLBACK became %q", got)
	}
	x.failed = fail
	if got := xactRollback(&x, 'C', commit); !bytes.Equal(got, commit) {
		t.Fatalf("COMMIT became %q", got)
	}
	got := xactRollback(&x, 'C', rollback)
	var e pgproto3.ErrorResponse
	if got[0] != 'E' || e.Decode(got[5:]) != nil || e.Code != "57014" || !strings.Contains(e.Message, "rolled back, not committed") || !strings.Contains(e.Message, "statement timeout") {
		t.Fatalf("ROLLBACK after a failure became %q", got)
	}
	if x.failed != nil {
		t.Fatal("the failure was not used up")
	}
	if got := xactRollback(&x, 'C', rollback); !bytes.Equal(got, rollback) {
		t.Fatalf("a second ROLLBACK became %q", got)
	}
}

func TestMentionsDeallocate(t *testing.T) {
	for q, want := range map[string]bool{
		"DEALLOCATE ALL": true, "deallocate prepare s1": true, "DISCARD ALL": true, "select 1; discard plans": true,
		"COMMIT": false, "SELECT * FROM deals": false, "SELECT 'd'": false, "": false, "update t set dd = 1": false,
	} {
		if got := mentionsDeallocate(q); got != want {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
}
