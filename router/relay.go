package router

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/pgwire"
)

// ErrUpstreamDown means the node (or its back end) could not be reached.
var ErrUpstreamDown = errors.New("upstream unavailable")

// Upstream is a PostgreSQL-protocol endpoint a session is relayed to: a
// PostgreSQL server, or a tandem node serving SQLite.
type Upstream struct {
	Node     string // node id, for messages
	Addr     string // host:port, or the Unix socket path /dir/.s.PGSQL.port
	Admin    string // the node's admin (metrics) address: health and role
	User     string // "" means the client's user
	Password string
	// PasswordFor, when set, gives the password for the role a session
	// logs in as (router.direct in clear text: one per role).
	PasswordFor func(user string) string
	Database    string // "" means the client's database
	// TLS, when set, encrypts the hop and presents tandem's certificate
	// (the node lets the router in by it); AdminToken goes with /status.
	TLS        *tls.Config
	AdminToken string
	// AdminURL is the node's /status URL (https off loopback), AdminTLS
	// the client configuration for it (nil: plain HTTP).
	AdminURL string
	AdminTLS *tls.Config
	// Settings are run-time settings every session starts with (the
	// client's startup parameters and SET override them): the cluster
	// file's idle timeouts, which the server then enforces.
	Settings map[string]string
}

// frontend message types a client may send after startup.
var frontendTypes = [256]bool{'B': true, 'C': true, 'd': true, 'c': true, 'f': true, 'D': true, 'E': true, 'H': true, 'F': true, 'P': true, 'p': true, 'Q': true, 'S': true, 'X': true}

// startup parameters that are not forwarded as run-time settings.
var notForwarded = map[string]bool{"user": true, "database": true, "replication": true}

// relay passes a client's messages to an upstream and the answers back,
// frame by frame, without re-encoding. It tracks the transaction status
// from ReadyForQuery so the router knows when a session is idle.
type relay struct {
	log      *slog.Logger
	up       Upstream
	client   *pgwire.Conn
	conn     net.Conn
	upFr     *pgwire.Framer
	pid      uint32
	secret   []byte
	params   [][2]string
	wmu      sync.Mutex // client writes
	txStatus atomic.Uint32
	closing  atomic.Bool
	maxMsg   int
	// readTimeout: see Config.MessageReadTimeout.
	readTimeout time.Duration
	polled      atomic.Bool            // the session runs on an epoll loop
	paths       *prometheus.CounterVec // Router.paths (nil in tests)
	// onLost is told when the upstream connection ended without a
	// Terminate. That is evidence about this session (the server may have
	// ended just this connection: pg_terminate_backend, a protocol error it
	// answered), not about the node: the router probes the node afresh.
	onLost func(node string, err error)
}

// ClientTransport is the front door's pgwire.Config.TLSTransport: a TLS
// client's connection is made over a transport the epoll loops can take
// over, so that its session is relayed there as a clear-text client's is
// (looptls_linux.go).
func ClientTransport(c net.Conn) net.Conn { return loopable(c) }

func dialUpstream(ctx context.Context, up Upstream, client *pgwire.Conn, maxMsg int, tag string) (*pgconn.HijackedConn, error) {
	user, db := up.User, up.Database
	if user == "" {
		user = client.User
	}
	if db == "" {
		db = client.Database
	}
	host, port, err := splitAddr(up.Addr)
	if err != nil {
		return nil, fmt.Errorf("upstream address %q: %w", up.Addr, err)
	}
	cfg, err := pgconn.ParseConfig(fmt.Sprintf("host=%s port=%s sslmode=disable", host, port))
	if err != nil {
		return nil, err
	}
	cfg.User, cfg.Password, cfg.Database = user, up.Password, db
	if up.PasswordFor != nil {
		cfg.Password = up.PasswordFor(user)
	}
	if up.TLS != nil {
		cfg.TLSConfig = up.TLS.Clone()
		// Over a connection the relay can later drive from an epoll
		// loop (looptls_linux.go); the handshake is pgconn's as before.
		dial := cfg.DialFunc
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return loopable(c), nil
		}
	}
	cfg.ConnectTimeout = 5 * time.Second
	for k, v := range up.Settings {
		cfg.RuntimeParams[k] = v
	}
	for k, v := range client.Params {
		if !notForwarded[k] {
			cfg.RuntimeParams[k] = v
		}
	}
	if tag != "" {
		cfg.RuntimeParams[pgwire.SessionTagParam] = tag
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pc, err := pgconn.ConnectConfig(cctx, cfg)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return nil, pe // authentication and similar: the client sees the server's words
		}
		return nil, &pgwire.Error{Severity: "FATAL", Code: pgwire.CodeCannotConnectNow,
			Message: fmt.Sprintf("tandem: node %s at %s is not reachable: %v", up.Node, up.Addr, errors.Unwrap(err)),
			Hint:    "the node may be down; check `tandem status` and retry", Err: ErrUpstreamDown}
	}
	if err := pc.SyncConn(cctx); err != nil {
		pc.Close(context.Background())
		return nil, err
	}
	return pc.Hijack()
}

func newRelay(ctx context.Context, log *slog.Logger, up Upstream, client *pgwire.Conn, maxMsg int, onLost func(string, error)) (*relay, error) {
	hc, err := dialUpstream(ctx, up, client, maxMsg, "")
	if err != nil {
		return nil, err
	}
	if tc, ok := hc.Conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	r := &relay{log: log, up: up, client: client, conn: hc.Conn, pid: hc.PID, secret: hc.SecretKey, onLost: onLost, maxMsg: maxMsg}
	r.upFr = pgwire.NewFramer(hc.Conn, hc.Conn, maxMsg)
	names := make([]string, 0, len(hc.ParameterStatuses))
	for k := range hc.ParameterStatuses {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		r.params = append(r.params, [2]string{k, hc.ParameterStatuses[k]})
	}
	r.txStatus.Store('I')
	return r, nil
}

func (r *relay) ParameterStatus() [][2]string { return r.params }

// countPath counts the session under how it is relayed.
func (r *relay) countPath(path string) {
	if r.paths != nil {
		r.paths.WithLabelValues(path).Inc()
	}
}

// Serve relays until either side leaves.
func (r *relay) Serve(ctx context.Context) error {
	if ok, err := r.servePoll(ctx); ok {
		return err
	}
	r.countPath("goroutines")
	done := make(chan error, 1)
	go func() { done <- r.upstreamToClient() }()
	err := r.clientToUpstream()
	if err != nil && !r.closing.Load() {
		// The client vanished without Terminate: stop what it may have
		// left running (the server notices a closed socket only when it
		// next writes).
		go r.Cancel()
	}
	r.closing.Store(true)
	r.conn.Close() // the back end rolls back an open transaction and frees its locks
	<-done
	return err
}

// readClient reads the client's next message, with readTimeout from its
// first byte to its last.
func (r *relay) readClient() (byte, []byte, error) {
	c := r.client
	if r.readTimeout <= 0 {
		return c.ReadFrame()
	}
	if c.Buffered() == 0 {
		if err := c.WaitInput(); err != nil {
			return 0, nil, err
		}
	}
	if c.FrameBuffered() {
		return c.ReadFrame()
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(r.readTimeout))
	typ, frame, err := c.ReadFrame()
	_ = c.Conn.SetReadDeadline(time.Time{})
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		r.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation,
			Message: fmt.Sprintf("terminating connection: a message was begun and not finished within message_read_timeout (%s)", pgwire.FormatTimeout(r.readTimeout))})
		return 0, nil, fmt.Errorf("%w: %w", pgwire.ErrMessageTimeout, err)
	}
	return typ, frame, err
}

func (r *relay) clientToUpstream() error {
	c := r.client
	for {
		typ, frame, err := r.readClient()
		if err != nil {
			if errors.Is(err, pgwire.ErrMessageTooLarge) || errors.Is(err, pgwire.ErrMalformed) {
				r.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation, Message: "tandem: " + err.Error()})
			}
			if errors.Is(err, pgwire.ErrOutOfMemory) {
				// The server is mid-conversation: the relay cannot answer
				// for it, so the session ends (limits.message_memory).
				r.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeOutOfMemory, Message: "tandem: " + err.Error()})
			}
			return err
		}
		if !frontendTypes[typ] {
			r.fatal(&pgwire.Error{Severity: "FATAL", Code: pgwire.CodeProtocolViolation, Message: fmt.Sprintf("tandem: invalid frontend message type %d", typ)})
			return fmt.Errorf("%w: message type %d", pgwire.ErrMalformed, typ)
		}
		if typ == 'X' {
			// The server closes after Terminate: that EOF is the end of
			// the session, not a failed node.
			r.closing.Store(true)
			r.upFr.AppendRaw(frame)
			_ = r.upFr.Flush()
			return nil
		}
		var werr error
		if len(frame) >= pgwire.OwnedFrameBytes {
			// A large message goes on as it is, not copied.
			werr = r.upFr.WriteDirect(frame)
		} else {
			r.upFr.AppendRaw(frame)
			if c.Buffered() == 0 || r.upFr.Pending() > 64<<10 {
				werr = r.upFr.Flush()
			}
		}
		if werr != nil {
			return nil // upstream gone: the other direction reports it
		}
	}
}

func (r *relay) upstreamToClient() error {
	c := r.client
	// fatalSent: a FATAL of the server's reached the client, which takes
	// the connection for ended (pgx and pgjdbc close it).
	fatalSent := false
	for {
		if r.upFr.Buffered() == 0 {
			// The next read may block: what the client was given goes out
			// first, once per batch of the server's answers.
			r.wmu.Lock()
			var ferr error
			if c.Pending() > 0 {
				ferr = c.Flush()
			}
			r.wmu.Unlock()
			if ferr != nil {
				return nil
			}
		}
		typ, frame, err := r.upFr.ReadFrame()
		if err != nil {
			if r.closing.Load() {
				return nil
			}
			r.log.Info("a session's connection to its node ended", "node", r.up.Node, "addr", r.up.Addr, "err", err)
			if r.onLost != nil {
				r.onLost(r.up.Node, err)
			}
			if !fatalSent {
				// A FATAL the client already has says why; a second one
				// from tandem would only blur it.
				r.fatal(lostError(r.up.Node))
			}
			c.Conn.Close()
			return err
		}
		if typ == 'E' && isFatal(frame) {
			fatalSent = true
		}
		if typ == 'Z' && len(frame) == 6 {
			r.txStatus.Store(uint32(frame[5]))
		}
		c.AppendRaw(frame)
		// Nothing more buffered: the top of the loop flushes.
		if c.Pending() > 64<<10 {
			r.wmu.Lock()
			err := c.Flush()
			r.wmu.Unlock()
			if err != nil {
				return nil
			}
		}
	}
}

// lostError is what a client is told when its session's connection to the
// node ended: this session only; a new one may well succeed.
func lostError(node string) *pgwire.Error {
	return &pgwire.Error{Severity: "FATAL", Code: pgwire.CodeAdminShutdown,
		Message: fmt.Sprintf("tandem: this session's connection to node %s ended; the transaction in progress, if any, did not commit", node),
		Hint:    "reconnect; `tandem status` shows whether the node is up"}
}

func (r *relay) fatal(e *pgwire.Error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.client.Append(pgwire.ToErrorResponse(e))
	_ = r.client.Flush()
}

// splitAddr returns pgconn's host and port for host:port or a Unix socket
// path (/dir/.s.PGSQL.5432 -> host /dir, port 5432).
func splitAddr(addr string) (string, string, error) {
	if strings.HasPrefix(addr, "/") {
		dir, file := filepath.Split(addr)
		port, ok := strings.CutPrefix(file, ".s.PGSQL.")
		if !ok {
			return "", "", fmt.Errorf("a Unix socket must be named .s.PGSQL.<port>")
		}
		return strings.TrimSuffix(dir, "/"), port, nil
	}
	return net.SplitHostPort(addr)
}

func network(addr string) string {
	if strings.HasPrefix(addr, "/") {
		return "unix"
	}
	return "tcp"
}

// Cancel forwards a CancelRequest to the upstream session.
func (r *relay) Cancel() {
	d := net.Dialer{Timeout: 3 * time.Second}
	conn, err := d.Dial(network(r.up.Addr), r.up.Addr)
	if err != nil {
		return
	}
	defer conn.Close()
	buf := make([]byte, 12, 12+len(r.secret))
	binary.BigEndian.PutUint32(buf[0:], uint32(12+len(r.secret)))
	binary.BigEndian.PutUint32(buf[4:], 80877102)
	binary.BigEndian.PutUint32(buf[8:], r.pid)
	buf = append(buf, r.secret...)
	_, _ = conn.Write(buf)
	// Wait for the server to close, as libpq does, so the cancel has landed.
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	var b [1]byte
	_, _ = conn.Read(b[:])
}

func (r *relay) Close() { r.conn.Close() }

// shutdownFatal reports an ErrorResponse frame that ends a session for a
// server shutdown or a terminated backend (FATAL 57P01 admin_shutdown,
// 57P02 crash_shutdown).
func shutdownFatal(frame []byte) bool {
	code, fatal := fatalCode(frame)
	return fatal && (code == pgwire.CodeAdminShutdown || code == "57P02")
}

// isFatal reports an ErrorResponse frame of severity FATAL or PANIC: the
// server ends the session after it.
func isFatal(frame []byte) bool {
	_, fatal := fatalCode(frame)
	return fatal
}

// fatalCode decodes an ErrorResponse frame: its SQLSTATE and whether it
// ends the session.
func fatalCode(frame []byte) (string, bool) {
	var e pgproto3.ErrorResponse
	if len(frame) < 5 || e.Decode(frame[5:]) != nil {
		return "", false
	}
	sev := e.SeverityUnlocalized
	if sev == "" {
		sev = e.Severity
	}
	return e.Code, sev == "FATAL" || sev == "PANIC"
}
