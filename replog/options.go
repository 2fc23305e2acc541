package replog

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Mode is the durability policy of a node's own log.
type Mode int32

// The durability modes.
const (
	// Strict: WaitDurable returns only after an fdatasync covers the
	// record. Concurrent waiters share fdatasyncs (group commit).
	Strict Mode = 1
	// Relaxed: the log is flushed in the background, at most
	// Options.FlushInterval after a record is appended; WaitDurable does
	// not wait.
	Relaxed Mode = 2
	// Adaptive: Relaxed while SetStandbyAttached(true) says a standby is
	// attached at a 2-safe level, Strict while the node runs alone.
	Adaptive Mode = 3
)

func (m Mode) valid() bool { return m >= Strict && m <= Adaptive }

// String returns "strict", "relaxed" or "adaptive".
func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case Relaxed:
		return "relaxed"
	case Adaptive:
		return "adaptive"
	}
	return fmt.Sprintf("mode(%d)", int32(m))
}

// ParseMode parses "strict", "relaxed" or "adaptive" (any case), the
// spelling used in configuration and admin commands.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "strict":
		return Strict, nil
	case "relaxed":
		return Relaxed, nil
	case "adaptive":
		return Adaptive, nil
	}
	return 0, fmt.Errorf("%w: durability mode %q (want strict, relaxed or adaptive)", ErrInvalid, s)
}

// Defaults for zero Options fields.
const (
	DefaultFlushInterval = 10 * time.Millisecond
	DefaultSegmentSize   = 64 << 20
	DefaultMaxRecordSize = 16 << 20
	// MaxRecordLimit is the largest record payload the format allows.
	MaxRecordLimit = 1 << 30
)

// Options configure a Log. The zero value is usable: strict durability,
// 10 ms relaxed flush interval, 64 MiB segments, 16 MiB records, no
// retention floor, a new log starting at GSN 1.
type Options struct {
	// Mode is the initial durability mode (default Strict). Change it at
	// run time with SetMode.
	Mode Mode
	// FlushInterval bounds how long an appended record may stay unflushed
	// in relaxed mode. The background flusher also runs at this interval
	// in strict mode, to sync records nobody waits for.
	FlushInterval time.Duration
	// SegmentSize is the size at which the log starts a new segment file.
	// A record larger than a segment gets a segment of its own.
	SegmentSize int64
	// MaxRecordSize bounds a record's payload (at most MaxRecordLimit).
	MaxRecordSize int
	// RetainRecords and RetainBytes are the minimum window TrimBefore
	// keeps: it never removes a segment if fewer than RetainRecords
	// records, or fewer than RetainBytes bytes of segments, would remain.
	RetainRecords uint64
	RetainBytes   int64
	// FirstGSN and FirstEpoch apply only when the directory holds no log:
	// the first record must then have GSN FirstGSN (default 1) and an
	// epoch of at least FirstEpoch. A node re-seeded from a snapshot at
	// GSN n removes its old log directory and opens a new one with
	// FirstGSN n+1.
	FirstGSN   uint64
	FirstEpoch uint64
	// Logger receives recovery warnings, durability-mode switches and I/O
	// failures (default slog.Default()).
	Logger *slog.Logger

	// syncHook, if set, runs before every data fdatasync; a non-nil error
	// is treated as the fdatasync failing. Tests only.
	syncHook func() error
}

func (o Options) withDefaults() (Options, error) {
	if o.Mode == 0 {
		o.Mode = Strict
	}
	if !o.Mode.valid() {
		return o, fmt.Errorf("%w: mode %d", ErrInvalid, o.Mode)
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.FlushInterval < 0 {
		return o, fmt.Errorf("%w: negative flush interval %v", ErrInvalid, o.FlushInterval)
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.SegmentSize < headerSize+recordHeaderSize {
		return o, fmt.Errorf("%w: segment size %d is too small", ErrInvalid, o.SegmentSize)
	}
	if o.MaxRecordSize == 0 {
		o.MaxRecordSize = DefaultMaxRecordSize
	}
	if o.MaxRecordSize < 0 || o.MaxRecordSize > MaxRecordLimit {
		return o, fmt.Errorf("%w: max record size %d (limit %d)", ErrInvalid, o.MaxRecordSize, MaxRecordLimit)
	}
	if o.RetainBytes < 0 {
		return o, fmt.Errorf("%w: negative RetainBytes", ErrInvalid)
	}
	if o.FirstGSN == 0 {
		o.FirstGSN = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Errors. Functions wrap them with context; test with errors.Is.
var (
	// ErrClosed: the Log (or Iterator) is closed.
	ErrClosed = errors.New("replog: closed")
	// ErrGap: Append was given a GSN other than LastGSN()+1.
	ErrGap = errors.New("replog: GSN not contiguous")
	// ErrStaleEpoch: Append was given an epoch lower than the last
	// record's.
	ErrStaleEpoch = errors.New("replog: stale epoch")
	// ErrTrimmed: the GSN asked for is older than the first retained
	// record; the reader must be re-seeded from a snapshot.
	ErrTrimmed = errors.New("replog: GSN no longer retained")
	// ErrOutOfRange: the GSN asked for has not been appended (is beyond
	// LastGSN()+1 for ReadFrom, beyond LastGSN() for WaitDurable).
	ErrOutOfRange = errors.New("replog: GSN beyond the end of the log")
	// ErrTooLarge: a record payload exceeds Options.MaxRecordSize.
	ErrTooLarge = errors.New("replog: record too large")
	// ErrCorrupt: a segment holds data that is not a torn tail: a bad
	// header, a bad record in a sealed segment, or a checksummed record
	// out of GSN or epoch order. Open refuses such a log.
	ErrCorrupt = errors.New("replog: corrupt log")
	// ErrVersion: a segment was written in a format version this build
	// does not read.
	ErrVersion = errors.New("replog: unsupported segment version")
	// ErrLocked: another Log (in this or another process) has the
	// directory open.
	ErrLocked = errors.New("replog: directory locked by another log")
	// ErrFailed: a write or fdatasync failed. The Log refuses all further
	// appends (the state of the file after a failed fdatasync is unknown);
	// Close it and Open again to recover.
	ErrFailed = errors.New("replog: log failed")
	// ErrInvalid: bad Options or arguments.
	ErrInvalid = errors.New("replog: invalid argument")
)
