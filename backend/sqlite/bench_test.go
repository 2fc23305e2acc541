package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tandemdb/tandem/pgwire"
)

// BenchmarkPointSelect is one SQLite round trip as the node makes it:
// execute a prepared primary-key lookup and read its row, in process,
// without the wire protocol.
func BenchmarkPointSelect(b *testing.B) {
	db, err := Open(Options{Path: filepath.Join(b.TempDir(), "b.db"), ReadPool: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	s, _ := db.NewSession(ctx, "u", "d")
	for _, q := range []string{"CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)", "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 10000) INSERT INTO kv SELECT i, 'value' FROM s"} {
		st, err := s.Prepare(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.Execute(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	st, err := s.Prepare(ctx, "SELECT v FROM kv WHERE k = $1")
	if err != nil {
		b.Fatal(err)
	}
	row := make([]any, 1)
	args := []any{int64(0)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args[0] = int64(i%10000 + 1)
		r, err := s.Execute(ctx, st, args)
		if err != nil {
			b.Fatal(err)
		}
		if ok, err := r.Next(row); !ok || err != nil {
			b.Fatal("no row", err)
		}
		r.Close()
	}
}

// BenchmarkUpdateCommit is an autocommit single-row UPDATE (WAL,
// synchronous=NORMAL).
func BenchmarkUpdateCommit(b *testing.B) {
	db, err := Open(Options{Path: filepath.Join(b.TempDir(), "b.db"), ReadPool: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	s, _ := db.NewSession(ctx, "u", "d")
	run := func(q string, args ...any) pgwire.Result {
		st, err := s.Prepare(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.Execute(ctx, st, args)
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	run("CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER)").Close()
	run("INSERT INTO kv VALUES (1, 0)").Close()
	st, _ := s.Prepare(ctx, "UPDATE kv SET v = v + 1 WHERE k = $1")
	args := []any{int64(1)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := s.Execute(ctx, st, args)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
