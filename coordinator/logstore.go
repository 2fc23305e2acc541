package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/migrate"
)

// Where a member keeps its Raft state (DESIGN.md, "The Raft log: raft-wal"):
//
//   - raft.db: bbolt (raft-boltdb v2), the stable store (current term,
//     vote), written only at elections; it also held the log before the
//     log moved to the WAL.
//   - raft-wal/: the log, hashicorp/raft-wal segment files (one write and
//     one fsync per append, where bbolt's copy-on-write B-tree wrote pages
//     and synced twice per append).
//   - snapshots/: raft's file snapshot store.
const (
	boltFile = "raft.db"
	walDir   = "raft-wal"
	// walSegmentBytes is the size of a log segment file (preallocated).
	// raft-wal's default is 64 MiB; the coordinator keeps about 1,024
	// entries after a snapshot (TrailingLogs), small ones but for
	// certification batches, so 16 MiB segments hold thousands.
	walSegmentBytes = 16 << 20
	// logCacheEntries is how many recent entries raft reads from memory
	// instead of the store: the leader's replication to each follower and
	// every member's apply read back what was just appended.
	logCacheEntries = 256
)

// MaxLogEntryBytes bounds one entry of the Raft log: raft-wal reads no
// record larger than 64 MiB (it takes a larger one for corruption), so a
// larger entry would be written and then stop the member from starting.
// Certify refuses requests past MaxCertifyBytes, which with a batch's
// other requests (at most maxCertBatchBytes) stays below this.
const MaxLogEntryBytes = 64 << 20

// MaxCertifyBytes is the largest encoded certification request (writeset,
// keys and ids) Certify takes; a larger one is refused with
// certifier.ErrBadRequest before it reaches the log. A multi-master node
// refuses a transaction whose writeset is larger (SQLSTATE 54000).
const MaxCertifyBytes = MaxLogEntryBytes - maxCertBatchBytes - 1<<20

// ErrLogStore is a Raft log store that cannot be opened or migrated.
var ErrLogStore = errors.New("coordinator: raft log store")

// logStores is what a member's Raft runs on.
type logStores struct {
	dir    string
	stable *raftboltdb.BoltStore
	wal    *walStore
	logs   raft.LogStore // the WAL behind a cache of recent entries
}

func (s *logStores) close() {
	if s.wal != nil {
		_ = s.wal.close()
	}
	if s.stable != nil {
		_ = s.stable.Close()
	}
}

// openLogStores opens dir's stable store and log. A directory written by
// an older build holds its log in raft.db: the first start copies it into
// a new WAL (written beside, then renamed into place, so a crash during
// the copy leaves the bolt log in charge and the next start copies again),
// then drops the copied entries from raft.db. The stable store stays
// where it was.
func openLogStores(dir string, log hclog.Logger) (*logStores, error) {
	s := &logStores{dir: dir}
	stable, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, boltFile)})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrLogStore, filepath.Join(dir, boltFile), err)
	}
	s.stable = stable
	final := filepath.Join(dir, walDir)
	if _, err := os.Stat(final); errors.Is(err, os.ErrNotExist) {
		if err := migrateBoltLog(dir, stable, log); err != nil {
			s.close()
			return nil, err
		}
	} else if err != nil {
		s.close()
		return nil, fmt.Errorf("%w: %w", ErrLogStore, err)
	}
	w, err := openWAL(final, log)
	if err != nil {
		s.close()
		return nil, err
	}
	s.wal = w
	// Entries the bolt file still holds were copied (a crash after the
	// rename, before they were dropped): drop them now.
	if err := dropBoltLog(stable); err != nil {
		s.close()
		return nil, err
	}
	cache, err := raft.NewLogCache(logCacheEntries, w)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("%w: %w", ErrLogStore, err)
	}
	s.logs = cache
	return s, nil
}

// walStore is a WAL with its meta store: raft-wal v0.4.0's Close leaves
// the meta store (a bbolt file, locked) open, so a member reopened in the
// same process would wait for its own lock.
type walStore struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
}

func (w *walStore) close() error {
	err := w.WAL.Close()
	if merr := w.meta.Close(); err == nil {
		err = merr
	}
	return err
}

func openWAL(path string, log hclog.Logger) (*walStore, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLogStore, err)
	}
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(path, wal.WithMetaStore(meta), wal.WithSegmentSize(walSegmentBytes), wal.WithLogger(log.Named("wal")))
	if err != nil {
		_ = meta.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrLogStore, path, err)
	}
	return &walStore{WAL: w, meta: meta}, nil
}

// migrateBoltLog makes dir's raft-wal directory, holding the log raft.db
// held (none for a new member).
func migrateBoltLog(dir string, bolt *raftboltdb.BoltStore, log hclog.Logger) error {
	tmp := filepath.Join(dir, walDir+".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("%w: %w", ErrLogStore, err)
	}
	w, err := openWAL(tmp, log)
	if err != nil {
		return err
	}
	last, err := bolt.LastIndex()
	if err == nil && last > 0 {
		first, _ := bolt.FirstIndex()
		log.Info("moving the Raft log from raft.db to the WAL (once)", "first", first, "last", last)
		err = migrate.CopyLogs(context.Background(), w, bolt, 4<<20, nil)
	}
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: copying the log of %s into %s: %w", ErrLogStore, boltFile, tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, walDir)); err != nil {
		return fmt.Errorf("%w: %w", ErrLogStore, err)
	}
	return syncDir(dir)
}

// dropBoltLog deletes the log entries raft.db still holds (they are in
// the WAL).
func dropBoltLog(bolt *raftboltdb.BoltStore) error {
	last, err := bolt.LastIndex()
	if err != nil || last == 0 {
		return err
	}
	first, err := bolt.FirstIndex()
	if err != nil {
		return err
	}
	if err := bolt.DeleteRange(first, last); err != nil {
		return fmt.Errorf("%w: dropping the copied log from %s: %w", ErrLogStore, boltFile, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLogStore, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("%w: syncing %s: %w", ErrLogStore, dir, err)
	}
	return nil
}
