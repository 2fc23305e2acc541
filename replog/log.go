package replog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"weak"
)

// Record is one log record: a writeset's encoding at its GSN and epoch.
// Data handed to Append or returned by an Iterator must not be modified:
// a large record's data may be shared by the appender and every reader.
type Record struct {
	GSN   uint64
	Epoch uint64
	Data  []byte
}

// recentRecord is the last large record appended, with a weak reference
// to the appender's data: an Iterator that reaches it (a primary's shipper,
// right after the commit that appended it) hands out that data instead of
// reading a second copy of it from the file, for as long as the appender
// still holds it or the collector has not yet run. Once it is collected,
// the record is read from the file as any other.
type recentRecord struct {
	seg        *segment
	off        int64 // the record's offset in seg
	gsn, epoch uint64
	n          int // len(data)
	data       weak.Pointer[byte]
}

// Recovery describes what Open found at the end of the log.
type Recovery struct {
	// Segment is the path of the last segment, the one Open scanned.
	Segment string
	// Records is the number of whole records found in it.
	Records uint64
	// DroppedBytes counts the bytes Open cut off: a torn or corrupt tail
	// of the last segment, plus segments whose creation was interrupted.
	DroppedBytes int64
	// Reason says why bytes were dropped ("" for a clean log).
	Reason string
	// RemovedSegments lists segment files removed because their creation
	// was interrupted (shorter than a header); they held no records.
	RemovedSegments []string
}

// Stats are counters and gauges for metrics. Counters start at zero when
// the Log is opened.
type Stats struct {
	Mode            Mode // configured mode
	EffectiveMode   Mode // Strict or Relaxed, what WaitDurable does now
	StandbyAttached bool

	FirstGSN   uint64 // first retained record (LastGSN+1 if none)
	LastGSN    uint64
	DurableGSN uint64
	LastEpoch  uint64
	Segments   int
	Bytes      int64 // size of all retained segment files

	Appends       uint64 // records appended
	AppendedBytes uint64 // payload bytes appended
	// Fsyncs counts the data syncs (fdatasync) that made records durable:
	// group commits by the flusher and segment seals at rollover.
	Fsyncs uint64
	// SyncedRecords counts the records those syncs made durable;
	// SyncedRecords/Fsyncs is the group-commit batch size.
	SyncedRecords uint64
	MaxBatch      uint64        // most records made durable by one sync
	FsyncTime     time.Duration // total time spent in those syncs
	// MetaSyncs counts syncs of segment headers and of the directory
	// (segment creation, recovery, trimming).
	MetaSyncs       uint64
	ModeSwitches    uint64 // changes of EffectiveMode
	TrimmedSegments uint64
	// RecoveredDroppedBytes is Recovery.DroppedBytes of the last Open.
	RecoveredDroppedBytes int64
}

// RecordsPerFsync is the mean group-commit batch size (0 before any sync).
func (s Stats) RecordsPerFsync() float64 {
	if s.Fsyncs == 0 {
		return 0
	}
	return float64(s.SyncedRecords) / float64(s.Fsyncs)
}

// Log is an open replication log. See the package documentation.
type Log struct {
	dir      string
	opts     Options
	logger   *slog.Logger
	lockFile *os.File
	recovery Recovery

	mode     atomic.Int32 // configured Mode
	attached atomic.Bool  // a 2-safe standby is attached
	lastA    atomic.Uint64
	durableA atomic.Uint64

	mu        sync.Mutex
	segs      []*segment // sorted by base; the last one is active
	active    *segment
	last      uint64 // GSN of the last appended record (first-1 if none)
	lastEpoch uint64
	durable   uint64        // every record <= durable is on disk
	durableCh chan struct{} // closed (and replaced) when durable advances or the log fails or closes
	notify    chan struct{} // closed on append; nil when no reader waits
	wbuf      []byte
	recent    atomic.Pointer[recentRecord] // the last large record appended
	err       error                        // sticky failure, wraps ErrFailed
	effective Mode                         // effective mode last reported
	closing   bool                         // Close has begun: no more appends
	closed    bool                         // Close has finished
	c         counters

	// syncMu serialises data syncs with sealing and closing segment files,
	// so a file is never closed under a running fdatasync. Lock order:
	// mu before syncMu; the flusher never takes mu while holding syncMu.
	syncMu sync.Mutex
	trimMu sync.Mutex // serialises TrimBefore

	flushReq    chan struct{} // capacity 1: "someone waits for a sync"
	dirty       chan struct{} // capacity 1: "records were appended" (arms the relaxed timer)
	stop        chan struct{}
	flusherDone chan struct{}
	closedCh    chan struct{}
}

type counters struct {
	appends, appendedBytes               uint64
	fsyncs, syncedRecords, maxBatch      uint64
	fsyncTime                            time.Duration
	metaSyncs, modeSwitches, trimmedSegs uint64
}

// Open opens the log in dir, creating the directory and an empty log if
// needed, and recovers it: the last segment is scanned and cut at the first
// incomplete or checksum-failing record (a torn tail from a crash), which
// Recovered reports and the logger warns about. Everything that remains is
// synced, so DurableGSN() == LastGSN() after Open. Open fails with
// ErrCorrupt or ErrVersion for damage that is not a torn tail, and with
// ErrLocked if another Log has dir open.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// The log holds every replicated row: owner only, whatever the umask
	// (and whatever an older version left).
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("replog: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("replog: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{
		dir:         dir,
		opts:        opts,
		logger:      opts.Logger.With("component", "replog", "dir", dir),
		lockFile:    lock,
		durableCh:   make(chan struct{}),
		flushReq:    make(chan struct{}, 1),
		dirty:       make(chan struct{}, 1),
		stop:        make(chan struct{}),
		flusherDone: make(chan struct{}),
		closedCh:    make(chan struct{}),
	}
	l.mode.Store(int32(opts.Mode))
	if err := l.recover(); err != nil {
		for _, s := range l.segs {
			if s.f != nil {
				s.f.Close()
			}
		}
		lock.Close()
		return nil, err
	}
	l.lastA.Store(l.last)
	l.durableA.Store(l.durable)
	l.effective = l.effectiveMode()
	go l.flusher()
	return l, nil
}

func (l *Log) recover() error {
	segs, err := listSegments(l.dir)
	if err != nil {
		return err
	}
	// A last segment shorter than a header, or exactly a header that does
	// not verify, is one whose creation a crash interrupted: it holds no
	// records. Anything else wrong with a header is real damage.
	recreate := uint64(0)
	for len(segs) > 0 {
		s := segs[len(segs)-1]
		_, size, err := readHeader(s.path, s.base)
		if err == nil {
			break
		}
		if size > headerSize || !(errors.Is(err, errShortHeader) || errors.Is(err, ErrCorrupt)) {
			return err
		}
		if err := os.Remove(s.path); err != nil {
			return fmt.Errorf("replog: remove torn segment: %w", err)
		}
		l.logger.Warn("replog: removed segment with a torn header", "segment", s.path, "bytes", size)
		l.recovery.RemovedSegments = append(l.recovery.RemovedSegments, s.path)
		l.recovery.DroppedBytes += size
		l.recovery.Reason = "torn segment header"
		recreate = s.base
		segs = segs[:len(segs)-1]
		if err := syncDir(l.dir); err != nil {
			return err
		}
		l.c.metaSyncs++
	}
	if len(segs) == 0 {
		base, epoch := l.opts.FirstGSN, l.opts.FirstEpoch
		if recreate != 0 {
			base = recreate
		}
		s, err := createSegment(l.dir, segmentHeader{base: base, epoch: epoch})
		if err != nil {
			return err
		}
		l.c.metaSyncs += 2
		l.segs, l.active = []*segment{s}, s
		l.last, l.lastEpoch, l.durable = base-1, epoch, base-1
		l.recovery.Segment = s.path
		return nil
	}

	// Sealed segments: headers and the chain of bases only; their records
	// were synced before the next segment was created.
	var hdr segmentHeader
	for i, s := range segs {
		h, size, err := readHeader(s.path, s.base)
		if err != nil {
			return err
		}
		if i > 0 && h.prevBase != segs[i-1].base {
			return fmt.Errorf("%w: %s follows segment %d, but %d is present: a segment is missing",
				ErrCorrupt, s.path, h.prevBase, segs[i-1].base)
		}
		s.size.Store(size)
		s.sealed.Store(i < len(segs)-1)
		hdr = h
	}

	// The last segment: scan and cut a torn tail.
	s := segs[len(segs)-1]
	if err := l.scanLast(s, hdr); err != nil {
		return err
	}
	l.segs, l.active = segs, s
	return nil
}

// scanLast scans the last segment, truncates it after the last whole
// record, syncs it and opens it for appending.
func (l *Log) scanLast(s *segment, hdr segmentHeader) error {
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("replog: %w", err)
	}
	defer f.Close()
	size := s.size.Load()
	r := segReader{f: f}
	off, expect, epoch := int64(headerSize), s.base, hdr.epoch
	status := recordOK
	for off < size {
		rec, st, err := r.next(off, size)
		if err != nil {
			return err
		}
		if st != recordOK {
			status = st
			break
		}
		if rec.gsn != expect {
			return fmt.Errorf("%w: %s: record at offset %d has GSN %d, want %d", ErrCorrupt, s.path, off, rec.gsn, expect)
		}
		if rec.epoch < epoch {
			return fmt.Errorf("%w: %s: record GSN %d has epoch %d after epoch %d", ErrCorrupt, s.path, rec.gsn, rec.epoch, epoch)
		}
		off += rec.size
		expect++
		epoch = rec.epoch
	}
	l.recovery.Segment = s.path
	l.recovery.Records = expect - s.base
	if off < size {
		if err := f.Truncate(off); err != nil {
			return fmt.Errorf("replog: truncate torn tail of %s: %w", s.path, err)
		}
		l.recovery.DroppedBytes += size - off
		l.recovery.Reason = status.String()
		l.logger.Warn("replog: truncated torn tail", "segment", s.path, "offset", off,
			"dropped_bytes", size-off, "reason", status.String(), "last_gsn", expect-1)
	}
	// The records may have reached only the page cache before a crash of
	// the process; make them durable before claiming so.
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("replog: sync %s: %w", s.path, err)
	}
	l.c.metaSyncs++
	w, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("replog: %w", err)
	}
	s.f = w
	s.size.Store(off)
	l.last, l.lastEpoch, l.durable = expect-1, epoch, expect-1
	return nil
}

// Recovered reports what Open found and cut at the end of the log.
func (l *Log) Recovered() Recovery { return l.recovery }

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// LastGSN returns the GSN of the last appended record (FirstGSN()-1 if the
// log holds none).
func (l *Log) LastGSN() uint64 { return l.lastA.Load() }

// DurableGSN returns the highest GSN known to be on disk: every record up
// to it survives a crash of the machine.
func (l *Log) DurableGSN() uint64 { return l.durableA.Load() }

// FirstGSN returns the GSN of the first retained record, the oldest that
// ReadFrom can start at.
func (l *Log) FirstGSN() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.segs[0].base
}

// LastEpoch returns the epoch of the last record (the epoch floor for the
// next Append).
func (l *Log) LastEpoch() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastEpoch
}

// Append writes a record to the log (into the operating system's cache:
// it survives a crash of the process, not yet of the machine) and returns
// its GSN. It does not wait for the disk; call WaitDurable for that.
//
// rec.GSN must be LastGSN()+1 (ErrGap otherwise), or 0 to have the log use
// LastGSN()+1. rec.Epoch must be at least the last record's epoch
// (ErrStaleEpoch). The log does not keep rec.Data alive, but while the
// caller does, an Iterator reading a large record hands out rec.Data
// itself instead of reading it back (see recentRecord): the caller must
// not modify it after Append.
func (l *Log) Append(rec Record) (uint64, error) {
	if len(rec.Data) > l.opts.MaxRecordSize {
		return 0, fmt.Errorf("%w: %d bytes (max %d)", ErrTooLarge, len(rec.Data), l.opts.MaxRecordSize)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return 0, ErrClosed
	}
	if l.err != nil {
		return 0, l.err
	}
	gsn := rec.GSN
	if gsn == 0 {
		gsn = l.last + 1
	} else if gsn != l.last+1 {
		return 0, fmt.Errorf("%w: got GSN %d, want %d", ErrGap, gsn, l.last+1)
	}
	if rec.Epoch < l.lastEpoch {
		return 0, fmt.Errorf("%w: GSN %d has epoch %d, log is at epoch %d", ErrStaleEpoch, gsn, rec.Epoch, l.lastEpoch)
	}
	n := int64(recordHeaderSize + len(rec.Data))
	if size := l.active.size.Load(); size > headerSize && size+n > l.opts.SegmentSize {
		if err := l.rolloverLocked(); err != nil {
			return 0, err
		}
	}
	var err error
	off := l.active.size.Load()
	if len(rec.Data) > largeRecord {
		// Header, then the data where it is: a large writeset is not
		// copied once more.
		if _, err = l.active.f.Write(recordHeader(gsn, rec.Epoch, rec.Data)); err == nil {
			_, err = l.active.f.Write(rec.Data)
		}
	} else {
		buf := appendRecord(l.wbuf[:0], gsn, rec.Epoch, rec.Data)
		l.wbuf = buf
		_, err = l.active.f.Write(buf)
	}
	if err != nil {
		// Part of the record may be in the file: nothing may follow it.
		return 0, l.failLocked(fmt.Errorf("write %s: %w", l.active.path, err))
	}
	if len(rec.Data) > largeRecord {
		l.recent.Store(&recentRecord{seg: l.active, off: off, gsn: gsn, epoch: rec.Epoch, n: len(rec.Data), data: weak.Make(&rec.Data[0])})
	}
	l.active.size.Add(n)
	l.last, l.lastEpoch = gsn, rec.Epoch
	l.lastA.Store(gsn)
	l.c.appends++
	l.c.appendedBytes += uint64(len(rec.Data))
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
	}
	select {
	case l.dirty <- struct{}{}:
	default:
	}
	return gsn, nil
}

// rolloverLocked seals the active segment (sync, so a sealed segment is
// always whole on disk) and starts a new one at LastGSN()+1.
func (l *Log) rolloverLocked() error {
	old := l.active
	start := time.Now()
	l.syncMu.Lock()
	err := l.datasync(old.f)
	if err == nil {
		old.sealed.Store(true)
		err = old.f.Close()
		old.f = nil
	}
	l.syncMu.Unlock()
	if err != nil {
		return l.failLocked(fmt.Errorf("seal segment %s: %w", old.path, err))
	}
	if l.last > l.durable {
		l.countSyncLocked(l.last-l.durable, time.Since(start))
		l.advanceDurableLocked(l.last)
	}
	seg, err := createSegment(l.dir, segmentHeader{base: l.last + 1, prevBase: old.base, epoch: l.lastEpoch})
	if err != nil {
		return l.failLocked(err)
	}
	l.c.metaSyncs += 2
	l.segs = append(l.segs, seg)
	l.active = seg
	return nil
}

func (l *Log) datasync(f *os.File) error {
	if h := l.opts.syncHook; h != nil {
		if err := h(); err != nil {
			return err
		}
	}
	return fdatasync(f)
}

func (l *Log) countSyncLocked(records uint64, d time.Duration) {
	l.c.fsyncs++
	l.c.syncedRecords += records
	l.c.maxBatch = max(l.c.maxBatch, records)
	l.c.fsyncTime += d
}

func (l *Log) advanceDurableLocked(gsn uint64) {
	l.durable = gsn
	l.durableA.Store(gsn)
	close(l.durableCh)
	l.durableCh = make(chan struct{})
}

// failLocked puts the log into the failed state and wakes every waiter.
func (l *Log) failLocked(err error) error {
	if l.err == nil {
		l.err = fmt.Errorf("%w: %w", ErrFailed, err)
		l.logger.Error("replog: log failed; appends refused until it is reopened", "err", err)
		close(l.durableCh)
		l.durableCh = make(chan struct{})
		l.wakeReadersLocked()
	}
	return l.err
}

func (l *Log) wakeReadersLocked() {
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
	}
}

// WaitDurable blocks until the record at gsn is as durable as the current
// mode demands: in strict mode (and adaptive without a standby) until an
// fdatasync covers it, sharing the fdatasync with every concurrent waiter
// (group commit); in relaxed mode (and adaptive with a standby) it returns
// at once, the background flusher syncing within FlushInterval. It returns
// ctx's error if ctx ends first, ErrOutOfRange for a GSN not yet appended,
// and the failure (ErrFailed) if the log can no longer make it durable.
func (l *Log) WaitDurable(ctx context.Context, gsn uint64) error {
	return l.waitDurable(ctx, gsn, false)
}

// DurableChanged returns a channel that is closed when the durable GSN next
// moves (or the log fails or closes): take it before reading DurableGSN.
func (l *Log) DurableChanged() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durableCh
}

// Sync makes every record appended so far durable, whatever the mode, and
// waits for it (sharing syncs with concurrent waiters). A standby that
// acknowledges at 2-safe-durable uses it after appending, since its own
// WaitDurable may be relaxed.
func (l *Log) Sync(ctx context.Context) error {
	return l.waitDurable(ctx, l.LastGSN(), true)
}

func (l *Log) waitDurable(ctx context.Context, gsn uint64, force bool) error {
	if gsn <= l.durableA.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if gsn > l.last {
		return fmt.Errorf("%w: wait for GSN %d, last is %d", ErrOutOfRange, gsn, l.last)
	}
	if !force && l.effectiveMode() == Relaxed {
		return l.err
	}
	for l.durable < gsn {
		if l.err != nil {
			return l.err
		}
		if l.closed {
			return ErrClosed
		}
		ch := l.durableCh
		l.mu.Unlock()
		l.requestFlush()
		select {
		case <-ch:
			l.mu.Lock()
		case <-ctx.Done():
			l.mu.Lock()
			return fmt.Errorf("replog: wait for GSN %d to be durable: %w", gsn, ctx.Err())
		}
	}
	return nil
}

func (l *Log) requestFlush() {
	select {
	case l.flushReq <- struct{}{}:
	default:
	}
}

// flusher is the one goroutine that syncs the active segment: when a
// waiter asks (group commit: every record appended by the time the sync
// starts is covered, and waiters that arrive during a sync are served by
// the next one) and at most FlushInterval after a record was appended
// (relaxed mode's bound). An idle log sleeps: the timer is armed by the
// first append after a flush instead of ticking.
func (l *Log) flusher() {
	defer close(l.flusherDone)
	t := time.NewTimer(l.opts.FlushInterval)
	t.Stop()
	defer t.Stop()
	var due <-chan time.Time
	for {
		select {
		case <-l.stop:
			l.flush()
			return
		case <-l.dirty:
			if due == nil {
				t.Reset(l.opts.FlushInterval)
				due = t.C
			}
			continue
		case <-l.flushReq:
		case <-due:
			due = nil
		}
		l.flush()
	}
}

func (l *Log) flush() {
	l.mu.Lock()
	if l.err != nil || l.last <= l.durable {
		l.mu.Unlock()
		return
	}
	target, seg := l.last, l.active
	l.mu.Unlock()

	start := time.Now()
	var err error
	synced := false
	l.syncMu.Lock()
	if seg.f != nil { // else sealed: rollover synced it, durable >= target
		err = l.datasync(seg.f)
		synced = true
	}
	l.syncMu.Unlock()
	d := time.Since(start)

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failLocked(fmt.Errorf("fdatasync %s: %w", seg.path, err))
		return
	}
	if synced && target > l.durable {
		l.countSyncLocked(target-l.durable, d)
		l.advanceDurableLocked(target)
	}
}

func effective(m Mode, attached bool) Mode {
	if m == Adaptive {
		if attached {
			return Relaxed
		}
		return Strict
	}
	return m
}

func (l *Log) effectiveMode() Mode { return effective(Mode(l.mode.Load()), l.attached.Load()) }

// Mode returns the configured durability mode.
func (l *Log) Mode() Mode { return Mode(l.mode.Load()) }

// EffectiveMode returns Strict or Relaxed: what WaitDurable does now.
func (l *Log) EffectiveMode() Mode { return l.effectiveMode() }

// SetMode changes the durability mode at run time. Waiters already blocked
// in WaitDurable keep waiting for their sync. A change to strict (directly,
// or adaptive without a standby) flushes at once.
func (l *Log) SetMode(m Mode) error {
	if !m.valid() {
		return fmt.Errorf("%w: mode %d", ErrInvalid, m)
	}
	l.mu.Lock()
	old := Mode(l.mode.Swap(int32(m)))
	l.noteModeLocked("mode set to " + m.String())
	l.mu.Unlock()
	if old != m {
		l.logger.Info("replog: durability mode set", "from", old, "to", m, "effective", l.effectiveMode())
	}
	return nil
}

// SetStandbyAttached tells the log whether a standby is attached at a
// 2-safe level. In adaptive mode this switches between relaxed (attached)
// and strict (alone); each switch is logged and counted in
// Stats.ModeSwitches. Switching to strict flushes at once, closing the
// window in which records were protected only by the standby.
func (l *Log) SetStandbyAttached(attached bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attached.Store(attached)
	reason := "standby detached"
	if attached {
		reason = "standby attached"
	}
	l.noteModeLocked(reason)
}

func (l *Log) noteModeLocked(reason string) {
	eff := l.effectiveMode()
	if eff == l.effective {
		return
	}
	from := l.effective
	l.effective = eff
	l.c.modeSwitches++
	l.logger.Info("replog: durability switched", "from", from, "to", eff, "reason", reason,
		"mode", Mode(l.mode.Load()), "standby_attached", l.attached.Load(),
		"last_gsn", l.last, "durable_gsn", l.durable)
	if eff == Strict {
		l.requestFlush()
	}
}

// TrimBefore removes whole segments all of whose records have GSNs below
// gsn, oldest first, never the active segment and never below the
// retention floor (Options.RetainRecords, Options.RetainBytes). It returns
// how many segments it removed. Readers past the removed segments are not
// disturbed; ReadFrom below the new FirstGSN fails with ErrTrimmed.
func (l *Log) TrimBefore(gsn uint64) (int, error) {
	l.trimMu.Lock()
	defer l.trimMu.Unlock()
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	limit := gsn
	if r := l.opts.RetainRecords; r > 0 {
		keepFrom := uint64(0)
		if l.last+1 > r {
			keepFrom = l.last + 1 - r
		}
		limit = min(limit, keepFrom)
	}
	var total int64
	for _, s := range l.segs {
		total += s.size.Load()
	}
	n := 0
	for n < len(l.segs)-1 && l.segs[n+1].base <= limit {
		size := l.segs[n].size.Load()
		if l.opts.RetainBytes > 0 && total-size < l.opts.RetainBytes {
			break
		}
		total -= size
		n++
	}
	victims := append([]*segment(nil), l.segs[:n]...)
	l.segs = append([]*segment(nil), l.segs[n:]...)
	l.c.trimmedSegs += uint64(n)
	l.mu.Unlock()

	// Oldest first, stopping at the first failure, so the files left on
	// disk are always a gap-free run of segments.
	for i, s := range victims {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return i, fmt.Errorf("replog: trim %s: %w", s.path, err)
		}
	}
	if n > 0 {
		if err := syncDir(l.dir); err != nil {
			return n, err
		}
		l.mu.Lock()
		l.c.metaSyncs++
		l.mu.Unlock()
		l.logger.Debug("replog: trimmed", "segments", n, "first_gsn", l.FirstGSN())
	}
	return n, nil
}

// Stats returns the current counters and gauges.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bytes int64
	for _, s := range l.segs {
		bytes += s.size.Load()
	}
	return Stats{
		Mode:                  Mode(l.mode.Load()),
		EffectiveMode:         l.effectiveMode(),
		StandbyAttached:       l.attached.Load(),
		FirstGSN:              l.segs[0].base,
		LastGSN:               l.last,
		DurableGSN:            l.durable,
		LastEpoch:             l.lastEpoch,
		Segments:              len(l.segs),
		Bytes:                 bytes,
		Appends:               l.c.appends,
		AppendedBytes:         l.c.appendedBytes,
		Fsyncs:                l.c.fsyncs,
		SyncedRecords:         l.c.syncedRecords,
		MaxBatch:              l.c.maxBatch,
		FsyncTime:             l.c.fsyncTime,
		MetaSyncs:             l.c.metaSyncs,
		ModeSwitches:          l.c.modeSwitches,
		TrimmedSegments:       l.c.trimmedSegs,
		RecoveredDroppedBytes: l.recovery.DroppedBytes,
	}
}

// Close syncs every appended record, stops the flusher, closes the files
// and releases the directory lock. Waiters for records that were appended
// return nil once the final sync covers them; blocked readers get
// ErrClosed. Close is idempotent. It returns an error if the final sync or
// closing fails (not for a failure the log had already reported).
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		<-l.closedCh
		return nil
	}
	l.closing = true
	prior := l.err
	l.wakeReadersLocked()
	l.mu.Unlock()

	close(l.stop)
	<-l.flusherDone

	l.mu.Lock()
	var err error
	if l.err != prior {
		err = l.err
	}
	l.syncMu.Lock()
	if f := l.active.f; f != nil {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("replog: close %s: %w", l.active.path, cerr)
		}
		l.active.f = nil
	}
	l.syncMu.Unlock()
	l.closed = true
	close(l.durableCh)
	l.durableCh = make(chan struct{})
	l.mu.Unlock()

	if cerr := l.lockFile.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("replog: release lock: %w", cerr)
	}
	close(l.closedCh)
	return err
}

// segmentForLocked returns the segment holding gsn (which must be retained).
func (l *Log) segmentForLocked(gsn uint64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > gsn })
	return l.segs[i-1]
}

// segmentStarting returns the retained segment whose first GSN is gsn, for
// a reader that finished the previous one.
func (l *Log) segmentStarting(gsn uint64) (*segment, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= gsn })
	if i < len(l.segs) && l.segs[i].base == gsn {
		return l.segs[i], nil
	}
	if gsn < l.segs[0].base {
		return nil, fmt.Errorf("%w: GSN %d, first retained is %d", ErrTrimmed, gsn, l.segs[0].base)
	}
	if l.err != nil {
		return nil, l.err
	}
	return nil, fmt.Errorf("%w: no segment starts at GSN %d", ErrCorrupt, gsn)
}

// appendWait returns a channel closed at the next append (or failure or
// Close), or nil if seg already has data beyond off or is sealed.
func (l *Log) appendWait(seg *segment, off int64) (<-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seg.size.Load() > off || seg.sealed.Load() {
		return nil, nil
	}
	if l.closing {
		return nil, ErrClosed
	}
	if l.err != nil {
		return nil, l.err
	}
	if l.notify == nil {
		l.notify = make(chan struct{})
	}
	return l.notify, nil
}
