package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRestore: whatever bytes arrive as a snapshot, Restore never panics;
// bytes that are not a sound tandem database are refused with
// ErrBadSnapshot and the database keeps its rows.
func FuzzRestore(f *testing.F) {
	dir := f.TempDir()
	db, err := Open(Options{Path: filepath.Join(dir, "seed.db")})
	if err != nil {
		f.Fatal(err)
	}
	if _, _, err := db.AppliedGSN(); err != nil { // creates tandem's metadata
		f.Fatal(err)
	}
	good, _, err := db.SnapshotBytes(context.Background())
	db.Close()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("SQLite format 3\x00"))
	f.Add([]byte{})
	flipped := append([]byte(nil), good...)
	flipped[100] ^= 0xff
	f.Add(flipped)
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		db, err := Open(Options{Path: filepath.Join(d, "t.db")})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s, _ := db.NewSession(context.Background(), "u", "d")
		if _, err := run(t, s, "CREATE TABLE keep (id int PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		err = db.Restore(context.Background(), data)
		if err != nil && !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("Restore: %v (want ErrBadSnapshot)", err)
		}
		if err != nil {
			if _, err := os.Stat(filepath.Join(d, "t.db.seed")); err == nil {
				t.Fatal("the refused snapshot was left behind")
			}
			s2, _ := db.NewSession(context.Background(), "u", "d")
			defer s2.Close()
			if _, err := run(t, s2, "SELECT count(*) FROM keep"); err != nil {
				t.Fatalf("the database lost its table after a refused snapshot: %v", err)
			}
		}
	})
}
