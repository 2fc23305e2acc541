package replication

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzReadFrame: the replication frame reader never panics and never
// returns (so never allocates) a body beyond its limit, whatever a peer
// sends; a hello it accepts decodes or is refused.
func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	h, _ := json.Marshal(hello{Node: "n2", Epoch: 1, LastGSN: 10, LastEpoch: 1})
	_ = writeFrame(w, 'H', h)
	_ = writeFrame(w, 'A', u64s(1, 2, 3))
	_ = w.Flush()
	f.Add(b.Bytes())
	f.Add([]byte{'H', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{'S', 0, 0, 0, 3, 1, 2})
	f.Add([]byte("\x16\x03\x01\x00\xa5"))
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := bufio.NewReader(bytes.NewReader(data))
		for {
			typ, body, err := readFrame(rd, limit)
			if err != nil {
				return
			}
			if len(body) > limit {
				t.Fatalf("frame %q of %d bytes past the %d limit", typ, len(body), limit)
			}
			if typ == 'H' {
				var h hello
				_ = json.Unmarshal(body, &h)
			}
		}
	})
}
