package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrUnknownWorkload means no workload of that name is registered.
	ErrUnknownWorkload = errors.New("unknown workload")
	// ErrUnknownMix means the workload has no mix of that name.
	ErrUnknownMix = errors.New("unknown mix")
	// ErrBadWeights means --weights could not be parsed or sums to zero.
	ErrBadWeights = errors.New("invalid weights")
	// ErrDataExists means Load found populated tables and was not told to drop them.
	ErrDataExists = errors.New("workload tables already hold data")
	// ErrNotLoaded means Run found no data to run against.
	ErrNotLoaded = errors.New("workload is not loaded")
	// ErrBadOption means a Load or Run option is out of range.
	ErrBadOption = errors.New("invalid option")
)

// TxType identifies a transaction type of a workload: an index into
// Workload.Transactions().
type TxType int

// TxInfo describes one transaction type.
type TxInfo struct {
	// Name as printed in reports, e.g. GET_SUBSCRIBER_DATA.
	Name string
	// ReadOnly transactions only read.
	ReadOnly bool
}

// Mix is a named transaction mix: the percentage of started transactions of
// each type, indexed by TxType. Weights need not sum to 100.
type Mix struct {
	Name        string
	Description string
	Weights     []float64
}

// Outcome is how a transaction ended, as the workload's rules count it.
type Outcome uint8

const (
	// Counted: committed, and found or changed the rows it looked for.
	Counted Outcome = iota
	// CountedNoRows: a read that committed but found no row (or, where the
	// workload's rules count it, e.g. Epinions as BenchBase runs it, an
	// update that committed having changed no row). It is a normal,
	// successful transaction and counts for throughput; only the hit rate
	// tells it apart.
	CountedNoRows
	// RolledBack: a write affected 0 rows, so the transaction rolled back;
	// not counted.
	RolledBack
	// AllowedError: an error the workload's rules allow (TM1: an integrity
	// violation, class 23, on INSERT_CALL_FORWARDING); the transaction rolled
	// back and is reported with the rolled back ones; not counted.
	AllowedError
	// Aborted: a serialization failure or deadlock (SQLSTATE class 40); not counted.
	Aborted
	// Unknown: the server could not say whether the transaction
	// committed (SQLSTATE 08007, transaction_resolution_unknown: a commit
	// in flight when its node died); not counted, not retried, reported
	// apart from errors: at a failover it is an expected answer.
	Unknown
	// Failed: any other error; unexpected, reported loudly; not counted.
	Failed

	numOutcomes = int(Failed) + 1
)

// CodeResolutionUnknown is SQLSTATE 08007 (transaction_resolution_unknown).
const CodeResolutionUnknown = "08007"

var outcomeNames = [numOutcomes]string{"counted", "counted_no_rows", "rolled_back", "allowed_error", "aborted", "unknown", "failed"}

func (o Outcome) String() string {
	if int(o) < numOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// IsCounted reports whether the outcome counts for MQTh and latency.
func (o Outcome) IsCounted() bool { return o == Counted || o == CountedNoRows }

// IsCompleted reports whether the transaction ran to its end: counted, or
// rolled back by the workload's rules (not aborted, unknown or failed).
func (o Outcome) IsCompleted() bool { return o.IsCounted() || o == RolledBack || o == AllowedError }

// Workload is a benchmark: a schema, a population and a set of transaction
// types mixed in named proportions. Implementations live in
// bench/workloads/<name> and call Register from an init function.
type Workload interface {
	// Name is the --workload value, e.g. "tm1".
	Name() string
	// ScaleName names the scale factor, e.g. "subscribers" or "warehouses".
	ScaleName() string
	// Transactions lists the transaction types; TxType indexes it.
	Transactions() []TxInfo
	// Mixes lists the named mixes; the first is the default.
	Mixes() []Mix
	// Tables lists the tables in creation order (referenced before referencing).
	Tables() []string
	// Schema returns one portable CREATE TABLE statement per table, in the
	// order of Tables. It must run unchanged on PostgreSQL and on SQLite.
	Schema() []string
	// Populate fills the freshly created tables through env.
	Populate(ctx context.Context, env *LoadEnv) error
	// DetectScale returns the scale of a loaded database (0 when empty).
	DetectScale(ctx context.Context, conn *pgx.Conn) (int, error)
	// NewClient returns a client that runs transactions on conn. The driver
	// calls it once per connection (again after a reconnect); rng is the
	// client's own random source and is not safe for concurrent use.
	NewClient(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, p ClientParams) (Client, error)
}

// ClientParams are the run options a workload client sees.
type ClientParams struct {
	// Scale of the loaded database (e.g. subscribers).
	Scale int
	// Uniform asks for uniform keys instead of the workload's skewed default.
	Uniform bool
	// Simple is true when the connection uses the simple query protocol
	// (no server-side prepared statements).
	Simple bool
	// Client is this client's index, 0..Clients-1: a workload may bind a
	// client to a part of the data by it (TPC-C's terminals to a home
	// warehouse and districts, as BenchBase does). It stays the same when the
	// driver reconnects the client.
	Client int
	// Clients is the run's number of clients; 0 when the caller does not
	// say (a client made outside a run), and then Client means nothing.
	Clients int
}

// Client runs one transaction at a time on its own connection.
type Client interface {
	// Run executes one transaction of type t to its end (commit or rollback)
	// and says how it ended. err carries the cause for AllowedError, Aborted
	// and Failed outcomes and is nil otherwise.
	Run(ctx context.Context, t TxType) (Outcome, error)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Workload{}
)

// Register makes a workload available to Lookup. It panics on a duplicate
// name, like database/sql.Register.
func Register(w Workload) {
	registryMu.Lock()
	defer registryMu.Unlock()
	name := strings.ToLower(w.Name())
	if _, dup := registry[name]; dup {
		panic("bench: Register called twice for workload " + name)
	}
	registry[name] = w
}

// Lookup returns the registered workload of that name (case-insensitive).
func Lookup(name string) (Workload, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if w, ok := registry[strings.ToLower(name)]; ok {
		return w, nil
	}
	return nil, fmt.Errorf("%w %q (--workload; registered: %s)", ErrUnknownWorkload, name, strings.Join(workloadNamesLocked(), ", "))
}

// Workloads lists the registered workload names, sorted.
func Workloads() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return workloadNamesLocked()
}

func workloadNamesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SQLState returns the SQLSTATE of a server error, or "" for other errors.
func SQLState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// Retryable reports whether err is a serialization failure (40001) or a
// deadlock (40P01): the aborts a client retries (RunOptions.Retries).
func Retryable(err error) bool {
	s := SQLState(err)
	return s == "40001" || s == "40P01"
}

// PerMinuteReporter is implemented by workloads that report one transaction
// type's committed transactions per minute besides MQTh, e.g. TPC-C's tpmC
// (NewOrders per minute).
type PerMinuteReporter interface {
	// PerMinute returns the transaction type and the figure's name ("tpmC").
	PerMinute() (TxType, string)
}

// settle is the outcome the runner records: a failure whose SQLSTATE is
// 08007 becomes Unknown, whatever the workload made of it (its commit may
// have happened: neither an error nor an abort to retry).
func settle(out Outcome, err error) Outcome {
	if out == Failed && SQLState(err) == CodeResolutionUnknown {
		return Unknown
	}
	return out
}

// Classify maps an error to the generic outcome: class 40 (serialization
// failure, deadlock) is Aborted, anything else Failed. Workloads apply their
// own allowed-error rules before falling back to it.
func Classify(err error) Outcome {
	if strings.HasPrefix(SQLState(err), "40") {
		return Aborted
	}
	return Failed
}

// LoadFinisher is implemented by workloads that must run statements once
// their population is loaded (e.g. move serial sequences past the loaded
// ids). Load calls FinishLoad on its own connection after Populate.
type LoadFinisher interface {
	FinishLoad(ctx context.Context, conn *pgx.Conn, d Dialect) error
}

// ThinkTimer is implemented by workloads whose clients think between
// interactions, as a web user does (TPC-W, RUBiS): unless RunOptions.ThinkDist
// says otherwise, their think time is drawn from an exponential distribution
// with mean RunOptions.Think, and DefaultThink is the mean `tandem bench run`
// uses when --think is not given.
type ThinkTimer interface {
	DefaultThink() time.Duration
}

// ClientsAdvisor is implemented by workloads whose source gives a number of
// clients per mix (seed 003 tables 2 and 4: clients per replica); `tandem
// bench run` uses it when --clients is not given.
type ClientsAdvisor interface {
	DefaultClients(mix string) int
}
