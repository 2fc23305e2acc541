package pgwire_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tandemdb/tandem/backend/sqlite"
	"github.com/tandemdb/tandem/pgwire"
)

var (
	fuzzOnce sync.Once
	fuzzSrv  *pgwire.Server
)

func fuzzServer(t testing.TB) *pgwire.Server {
	fuzzOnce.Do(func() {
		dir, _ := filepathTemp()
		db, err := sqlite.Open(sqlite.Options{Path: filepath.Join(dir, "fuzz.db"), ReadPool: 2, BusyTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		fuzzSrv = pgwire.NewServer(pgwire.Config{Auth: pgwire.AuthTrust, MaxMessageBytes: 1 << 16}, &pgwire.Executor{Backend: db})
	})
	return fuzzSrv
}

func startup() []byte {
	b, _ := (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "fuzz", "database": "fuzz"}}).Encode(nil)
	return b
}

func frame(typ byte, body ...[]byte) []byte {
	n := 4
	for _, b := range body {
		n += len(b)
	}
	out := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(n))
	for _, b := range body {
		out = append(out, b...)
	}
	return out
}

func cstr(s string) []byte { return append([]byte(s), 0) }

// FuzzMessageLoop feeds arbitrary bytes after a valid startup to the real
// message loop (executing server over SQLite): it must never panic or hang.
func FuzzMessageLoop(f *testing.F) {
	f.Add(frame('Q', cstr("SELECT 1")))
	f.Add(frame('Q', cstr("CREATE TABLE IF NOT EXISTS f (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO f VALUES (1, 'x')")))
	f.Add(append(frame('P', cstr("s1"), cstr("SELECT $1"), []byte{0, 0}), append(frame('B', cstr(""), cstr("s1"), []byte{0, 0, 0, 1, 0, 0, 0, 1, '7', 0, 0}), append(frame('D', []byte{'P'}, cstr("")), append(frame('E', cstr(""), []byte{0, 0, 0, 0}), frame('S')...)...)...)...))
	f.Add(frame('B', cstr("p"), cstr("nope"), []byte{0, 0, 0, 0, 0, 0}))
	f.Add(frame('Z'))
	f.Add([]byte{'Q', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{'Q', 0, 0, 0, 1})
	f.Add(frame('C', []byte{'S'}, cstr("x")))
	f.Add(frame('Q', cstr("COPY f FROM STDIN")))
	f.Add(append(frame('Q', cstr("BEGIN")), frame('Q', cstr("SELEC"))...))
	f.Fuzz(func(t *testing.T, in []byte) {
		srv := fuzzServer(t)
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = server.SetDeadline(time.Now().Add(3 * time.Second))
			srv.ServeConn(context.Background(), server)
		}()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_ = client.SetWriteDeadline(time.Now().Add(3 * time.Second))
		_, _ = client.Write(startup())
		_, _ = client.Write(in)
		_, _ = client.Write(frame('X'))
		client.Close() // a partial frame then waits for EOF, as in PostgreSQL
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("message loop did not finish")
		}
		client.Close()
	})
}
