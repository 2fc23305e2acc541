package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/schollz/progressbar/v3"
)

// Load methods (LoadOptions.Method).
const (
	// MethodAuto uses COPY FROM STDIN (text format) and falls back to
	// multi-row INSERT when the endpoint answers SQLSTATE 0A000 (feature not
	// supported).
	MethodAuto = "auto"
	// MethodCopy uses COPY FROM STDIN only.
	MethodCopy = "copy"
	// MethodInsert uses multi-row INSERT ... VALUES only (portable).
	MethodInsert = "insert"
)

// LoadOptions configure Load. The field comments name the matching flag of
// `tandem bench load`.
type LoadOptions struct {
	// Workload to load (--workload). Required.
	Workload Workload
	// DSN of the target (--dsn). Required.
	DSN string
	// Scale, e.g. the number of TM1 subscribers (--subscribers). Required.
	Scale int
	// Drop existing workload tables first (--drop). Without it Load refuses
	// to touch tables that hold data (ErrDataExists).
	Drop bool
	// Workers is the number of parallel loading connections (--workers);
	// 0 means the number of CPUs.
	Workers int
	// BatchSize is the number of scale units (subscribers) per committed
	// transaction (--batch); 0 means 1000.
	BatchSize int
	// Seed of the population's random values (--seed); 0 means 1. The same
	// seed and scale give the same population whatever the worker count.
	Seed uint64
	// Method is MethodAuto (default), MethodCopy or MethodInsert (--method).
	Method string
	// Progress receives the progress bar (rows, rows/s, ETA); nil means none.
	Progress io.Writer
	// Logger for life-cycle messages; nil means slog.Default().
	Logger *slog.Logger
}

// LoadStats tells what Load did.
type LoadStats struct {
	Rows     int64
	Elapsed  time.Duration
	UsedCopy bool
}

// Load creates the workload's tables and populates them. It refuses to touch
// tables that already hold rows unless opts.Drop is set.
func Load(ctx context.Context, opts LoadOptions) (LoadStats, error) {
	var st LoadStats
	if opts.Workload == nil {
		return st, fmt.Errorf("%w: no workload (--workload)", ErrBadOption)
	}
	w := opts.Workload
	if opts.Scale <= 0 {
		return st, fmt.Errorf("%w: --%s must be > 0 (got %d)", ErrBadOption, w.ScaleName(), opts.Scale)
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.NumCPU()
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	switch opts.Method {
	case "":
		opts.Method = MethodAuto
	case MethodAuto, MethodCopy, MethodInsert:
	default:
		return st, fmt.Errorf("%w: --method %q (want auto, copy or insert)", ErrBadOption, opts.Method)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg, err := parseDSN(opts.DSN)
	if err != nil {
		return st, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return st, fmt.Errorf("connect to %s: %w", RedactDSN(opts.DSN), err)
	}
	defer conn.Close(context.Background())

	if err := prepareTables(ctx, conn, w, opts.Drop, log); err != nil {
		return st, err
	}

	start := time.Now()
	env := &LoadEnv{
		Scale:     opts.Scale,
		Workers:   opts.Workers,
		BatchSize: opts.BatchSize,
		Seed:      opts.Seed,
		Logger:    log,
		cfg:       cfg,
		method:    opts.Method,
		progress:  opts.Progress,
	}
	if opts.Method != MethodInsert {
		env.useCopy.Store(true)
	}
	err = w.Populate(ctx, env)
	env.finishBar()
	st.Rows = env.rows.Load()
	st.Elapsed = time.Since(start)
	st.UsedCopy = env.useCopy.Load()
	if err != nil {
		return st, fmt.Errorf("populate %s: %w", w.Name(), err)
	}
	if f, ok := w.(LoadFinisher); ok {
		if err := f.FinishLoad(ctx, conn, DialectOf(conn)); err != nil {
			return st, fmt.Errorf("finish loading %s: %w", w.Name(), err)
		}
	}
	// Fresh statistics help the planner; ANALYZE exists in PostgreSQL and
	// SQLite, but an endpoint may refuse it, which only costs speed.
	for _, t := range w.Tables() {
		if _, err := conn.Exec(ctx, "ANALYZE "+t); err != nil {
			log.Warn("analyze failed (ignored)", "table", t, "err", err)
		}
	}
	log.Info("loaded", "workload", w.Name(), w.ScaleName(), opts.Scale, "rows", st.Rows,
		"elapsed", st.Elapsed.Round(time.Millisecond), "copy", st.UsedCopy)
	return st, nil
}

// prepareTables checks for existing tables, drops them when asked to, and
// creates the missing ones.
func prepareTables(ctx context.Context, conn *pgx.Conn, w Workload, drop bool, log *slog.Logger) error {
	tables, schema := w.Tables(), w.Schema()
	if len(tables) != len(schema) {
		return fmt.Errorf("workload %s: %d tables but %d schema statements", w.Name(), len(tables), len(schema))
	}
	exists := make([]bool, len(tables))
	var populated []string
	for i, t := range tables {
		ok, rows, err := probeTable(ctx, conn, t)
		if err != nil {
			return err
		}
		exists[i] = ok
		if rows {
			populated = append(populated, t)
		}
	}
	if len(populated) > 0 && !drop {
		return fmt.Errorf("%w: %s not empty; rerun with --drop to drop and reload them",
			ErrDataExists, strings.Join(populated, ", "))
	}
	if drop {
		for i := len(tables) - 1; i >= 0; i-- {
			if !exists[i] {
				continue
			}
			log.Info("dropping table", "table", tables[i])
			if _, err := conn.Exec(ctx, "DROP TABLE "+tables[i]); err != nil {
				return fmt.Errorf("drop table %s: %w", tables[i], err)
			}
			exists[i] = false
		}
	}
	for i, t := range tables {
		if exists[i] {
			continue
		}
		if _, err := conn.Exec(ctx, schema[i]); err != nil {
			return fmt.Errorf("create table %s: %w", t, err)
		}
	}
	return nil
}

// probeTable tells whether table exists and whether it has rows, with a
// query that PostgreSQL and SQLite both understand.
func probeTable(ctx context.Context, conn *pgx.Conn, table string) (exists, hasRows bool, err error) {
	rows, err := conn.Query(ctx, "SELECT 1 FROM "+table+" LIMIT 1")
	if err == nil {
		hasRows = rows.Next()
		rows.Close()
		err = rows.Err()
	}
	if err != nil {
		if isUndefinedTable(err) {
			return false, false, nil
		}
		return false, false, fmt.Errorf("check table %s: %w", table, err)
	}
	return true, hasRows, nil
}

func isUndefinedTable(err error) bool {
	if SQLState(err) == "42P01" {
		return true
	}
	// An endpoint that does not map SQLite's error to 42P01.
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "no such table") || strings.Contains(msg, "does not exist")
}

// LoadEnv is what a workload's Populate gets: the scale and options, and
// Parallel, which runs batches on parallel connections.
type LoadEnv struct {
	Scale     int
	Workers   int
	BatchSize int
	Seed      uint64
	Logger    *slog.Logger

	cfg      *pgx.ConnConfig
	method   string
	useCopy  atomic.Bool
	progress io.Writer
	barMu    sync.Mutex
	bar      *progressbar.ProgressBar
	rows     atomic.Int64
}

// ExpectRows sets the expected total row count for the progress bar.
func (e *LoadEnv) ExpectRows(n int64) {
	e.barMu.Lock()
	defer e.barMu.Unlock()
	if e.progress == nil || e.bar != nil {
		return
	}
	e.bar = progressbar.NewOptions64(n,
		progressbar.OptionSetWriter(e.progress),
		progressbar.OptionSetDescription("loading"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("rows"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(e.progress) }),
	)
}

func (e *LoadEnv) addRows(n int) {
	e.rows.Add(int64(n))
	e.barMu.Lock()
	if e.bar != nil {
		_ = e.bar.Add64(int64(n))
	}
	e.barMu.Unlock()
}

func (e *LoadEnv) finishBar() {
	e.barMu.Lock()
	defer e.barMu.Unlock()
	if e.bar != nil {
		_ = e.bar.Finish()
		e.bar = nil
	}
}

// Parallel runs fill for batch numbers 0..batches-1 on e.Workers connections.
// fill adds the batch's rows to the writer; Parallel then writes them in one
// transaction (tables in the order they were first used) and commits.
func (e *LoadEnv) Parallel(ctx context.Context, batches int, fill func(batch int, w *RowWriter) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := atomic.Int64{}
	workers := min(e.Workers, batches)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.ConnectConfig(ctx, e.cfg.Copy())
			if err != nil {
				cancel(fmt.Errorf("connect: %w", err))
				return
			}
			defer conn.Close(context.Background())
			rw := &RowWriter{env: e, conn: conn}
			for ctx.Err() == nil {
				b := int(next.Add(1) - 1)
				if b >= batches {
					return
				}
				rw.reset()
				if err := fill(b, rw); err != nil {
					cancel(fmt.Errorf("batch %d: %w", b, err))
					return
				}
				if err := rw.commit(ctx); err != nil {
					cancel(fmt.Errorf("batch %d: %w", b, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// RowWriter buffers rows of several tables for one batch.
type RowWriter struct {
	env    *LoadEnv
	conn   *pgx.Conn
	tables []*TableRows
	sql    []byte
}

// TableRows collects the rows of one table in a batch.
type TableRows struct {
	name    string
	columns []string
	vals    []any // row-major, len = rows*len(columns)
}

// Table returns the buffer for table (created on first use; tables are
// written in the order of first use, so use referenced tables first).
func (w *RowWriter) Table(name string, columns ...string) *TableRows {
	for _, t := range w.tables {
		if t.name == name {
			return t
		}
	}
	t := &TableRows{name: name, columns: columns}
	w.tables = append(w.tables, t)
	return t
}

// Add appends one row. Values may be int, int16, int32, int64, float64, string or nil.
func (t *TableRows) Add(values ...any) {
	if len(values) != len(t.columns) {
		panic(fmt.Sprintf("bench: table %s: row has %d values for %d columns", t.name, len(values), len(t.columns)))
	}
	t.vals = append(t.vals, values...)
}

// Rows is the number of buffered rows.
func (t *TableRows) Rows() int { return len(t.vals) / len(t.columns) }

func (w *RowWriter) reset() {
	for _, t := range w.tables {
		clear(t.vals)
		t.vals = t.vals[:0]
	}
}

func (w *RowWriter) commit(ctx context.Context) error {
	if w.env.useCopy.Load() {
		err := w.write(ctx, true)
		if err == nil {
			return nil
		}
		if w.env.method == MethodAuto && SQLState(err) == "0A000" {
			if w.env.useCopy.CompareAndSwap(true, false) {
				w.env.Logger.Info("COPY not supported by the endpoint; loading with multi-row INSERT", "err", err)
			}
		} else {
			return err
		}
	}
	return w.write(ctx, false)
}

func (w *RowWriter) write(ctx context.Context, useCopy bool) (err error) {
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.Background())
		}
	}()
	n := 0
	for _, t := range w.tables {
		if len(t.vals) == 0 {
			continue
		}
		if useCopy {
			if err := w.copy(ctx, tx, t); err != nil {
				return err
			}
		} else if err := w.insert(ctx, tx, t); err != nil {
			return err
		}
		n += t.Rows()
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	w.env.addRows(n)
	return nil
}

// maxValuesPerInsert bounds one INSERT statement (about 10,000 values, a few
// hundred kB of SQL), well inside PostgreSQL's and SQLite's limits.
const maxValuesPerInsert = 10000

// insert writes t with multi-row INSERT ... VALUES statements. The values
// are generated by the workload (integers and [A-Z0-9] strings); strings are
// quoted with doubled single quotes anyway. Literal SQL needs no parameter
// slots, so the batch size is not bound by parameter-count limits.
func (w *RowWriter) insert(ctx context.Context, tx pgx.Tx, t *TableRows) error {
	cols := len(t.columns)
	perStmt := max(1, maxValuesPerInsert/cols)
	rows := t.Rows()
	for lo := 0; lo < rows; lo += perStmt {
		hi := min(rows, lo+perStmt)
		b := w.sql[:0]
		b = append(b, "INSERT INTO "...)
		b = append(b, t.name...)
		b = append(b, " ("...)
		b = append(b, strings.Join(t.columns, ", ")...)
		b = append(b, ") VALUES "...)
		for r := lo; r < hi; r++ {
			if r > lo {
				b = append(b, ',')
			}
			b = append(b, '(')
			for c, v := range t.vals[r*cols : (r+1)*cols] {
				if c > 0 {
					b = append(b, ',')
				}
				var err error
				if b, err = appendLiteral(b, v); err != nil {
					return fmt.Errorf("table %s column %s: %w", t.name, t.columns[c], err)
				}
			}
			b = append(b, ')')
		}
		w.sql = b
		if _, err := tx.Exec(ctx, string(b)); err != nil {
			return fmt.Errorf("insert into %s: %w", t.name, err)
		}
	}
	return nil
}

func appendLiteral(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "NULL"...), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, fmt.Errorf("non-finite value %v", x)
		}
		return strconv.AppendFloat(b, x, 'f', -1, 64), nil
	case string:
		b = append(b, '\'')
		b = append(b, strings.ReplaceAll(x, "'", "''")...)
		return append(b, '\''), nil
	default:
		return b, fmt.Errorf("unsupported value type %T", v)
	}
}

// copy writes t with COPY ... FROM STDIN in text format, the form that
// PostgreSQL and tandem's SQLite back end both accept (pgx's CopyFrom uses
// the binary format, which only PostgreSQL speaks).
func (w *RowWriter) copy(ctx context.Context, tx pgx.Tx, t *TableRows) error {
	cols := len(t.columns)
	b := w.sql[:0]
	for r := range t.Rows() {
		for c, v := range t.vals[r*cols : (r+1)*cols] {
			if c > 0 {
				b = append(b, '\t')
			}
			var err error
			if b, err = appendCopyText(b, v); err != nil {
				return fmt.Errorf("table %s column %s: %w", t.name, t.columns[c], err)
			}
		}
		b = append(b, '\n')
	}
	w.sql = b
	sql := "COPY " + t.name + " (" + strings.Join(t.columns, ", ") + ") FROM STDIN"
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(b), sql); err != nil {
		return fmt.Errorf("copy into %s: %w", t.name, err)
	}
	return nil
}

// appendCopyText appends v in COPY's text format.
func appendCopyText(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, `\N`...), nil
	case string:
		for i := 0; i < len(x); i++ {
			switch c := x[i]; c {
			case '\\':
				b = append(b, `\\`...)
			case '\t':
				b = append(b, `\t`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			default:
				b = append(b, c)
			}
		}
		return b, nil
	default:
		return appendLiteral(b, v)
	}
}
