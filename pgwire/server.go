package pgwire

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"
)

// Protocol codes of untyped startup packets.
const (
	codeSSLRequest    = 80877103
	codeGSSEncRequest = 80877104
	codeCancelRequest = 80877102
	codeProtocol3     = 196608
)

// Handler opens sessions for authenticated clients. The router implements it.
type Handler interface {
	// Open prepares a session (e.g. connects its back end). The returned
	// parameters are announced to the client with ParameterStatus.
	Open(ctx context.Context, c *Conn) (Session, error)
}

// Session is one client's conversation after startup.
type Session interface {
	// ParameterStatus lists name/value pairs to announce, in order.
	ParameterStatus() [][2]string
	// Serve runs the message loop until the client leaves or ctx ends.
	Serve(ctx context.Context) error
	// Cancel cancels the statement running for this session (CancelRequest).
	Cancel()
	// Close releases the session's resources; called once after Serve.
	Close()
}

// AuthMethod names how passwords are checked.
type AuthMethod string

// Authentication methods.
const (
	AuthSCRAM AuthMethod = "scram-sha-256"
	AuthMD5   AuthMethod = "md5"
	AuthTrust AuthMethod = "trust"
)

// Config configures a Server.
type Config struct {
	Auth            AuthMethod
	Passwords       func(user string) (string, bool)
	MaxMessageBytes int
	MaxConnections  int
	// MaxStartupConnections bounds the connections still in startup (not
	// yet authenticated), which max_connections does not count: past it a
	// new connection gets FATAL 53300 and is closed at once. 0: a quarter
	// of the open-file limit, at least 64.
	MaxStartupConnections int
	// StartupTimeout is how long a connection may take from accept to
	// authenticated (PostgreSQL's authentication_timeout). 0: 10 s.
	StartupTimeout time.Duration
	// Keepalive is set on every client TCP socket (zero fields: defaults).
	Keepalive Keepalive
	// Budget, when set, bounds the memory of large messages node-wide
	// (limits.message_memory).
	Budget *MemoryBudget
	Logger *slog.Logger
	// TLS, when set, answers SSLRequest with 'S' and encrypts the session.
	TLS *tls.Config
	// TLSTransport, when set, wraps a client's socket before its TLS
	// handshake: the TLS connection is made over what it returns (the
	// router's epoll loops take such a session's TLS over later:
	// router.ClientTransport).
	TLSTransport func(net.Conn) net.Conn
	// RequireTLS refuses clients that do not ask for TLS (over TCP: a
	// Unix-socket client never leaves the host).
	RequireTLS bool
	// TrustCert, when set, is asked about a client that presented a TLS
	// certificate the server verified: true lets it in as the user it
	// named without a password (tandem's own hops: the router, the
	// command line), as PostgreSQL's cert authentication does.
	TrustCert func(tls.ConnectionState) bool
}

// Server accepts PostgreSQL protocol connections.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger

	mu       sync.Mutex
	sessions map[uint32]*entry
	conns    map[net.Conn]struct{}
	active   atomic.Int64
	starting atomic.Int64 // connections in startup
	refused  atomic.Int64 // refused for MaxStartupConnections since the last log line
	lastRef  atomic.Int64 // unix nanoseconds of that log line
	scramMu  sync.Mutex
	scramCr  map[string]scram.StoredCredentials
	closing  atomic.Bool
	wg       sync.WaitGroup
}

type entry struct {
	secret uint32
	sess   Session
}

// NewServer builds a server; call Serve with a listener.
func NewServer(cfg Config, h Handler) *Server {
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = 64 << 20
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = 500
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxStartupConnections == 0 {
		cfg.MaxStartupConnections = max(64, int(min(fdSoftLimit(), 1<<30)/4))
	}
	if cfg.StartupTimeout == 0 {
		cfg.StartupTimeout = 10 * time.Second
	}
	s := &Server{cfg: cfg, handler: h, log: cfg.Logger, sessions: map[uint32]*entry{}, conns: map[net.Conn]struct{}{}, scramCr: map[string]scram.StoredCredentials{}}
	return s
}

// pids numbers the sessions of every server of the process, so that a
// process id names one session (pg_terminate_backend, CancelRequest).
var pids = func() *atomic.Uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	p := new(atomic.Uint32)
	p.Store(binary.BigEndian.Uint32(b[:]) & 0x3fffffff)
	return p
}()

// nextPID is a new session's process id (never 0).
func nextPID() uint32 {
	for {
		if p := pids.Add(1) & 0x7fffffff; p != 0 {
			return p
		}
	}
}

// Active is the number of client connections.
func (s *Server) Active() int64 { return s.active.Load() }

// Serve accepts connections until the listener is closed.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	go func() {
		<-ctx.Done()
		s.closing.Store(true)
		l.Close()
	}()
	acc := &Acceptor{L: l, Log: s.log, Name: "front door " + l.Addr().String()}
	for {
		c, err := acc.Accept(ctx)
		if err != nil {
			if s.closing.Load() || ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
			if err := s.cfg.Keepalive.apply(tc); err != nil {
				s.log.Debug("cannot set TCP keepalive", "remote", tc.RemoteAddr().String(), "err", err)
			}
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.ServeConn(ctx, c)
		}()
	}
}

// CloseAll closes every client connection (shutdown) and waits for their
// sessions to end.
func (s *Server) CloseAll() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// ServeConn runs one connection: startup, authentication, session.
func (s *Server) ServeConn(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	if n := s.starting.Add(1); n > int64(s.cfg.MaxStartupConnections) {
		s.starting.Add(-1)
		s.refuseStartup(nc)
		return
	}
	inStartup := true
	endStartup := func() {
		if inStartup {
			inStartup = false
			s.starting.Add(-1)
		}
	}
	defer endStartup()
	s.mu.Lock()
	s.conns[nc] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
	}()
	fr := NewFramer(nc, nc, s.cfg.MaxMessageBytes)
	if s.cfg.Budget != nil {
		fr.SetBudget(s.cfg.Budget)
		defer fr.ReleaseMemory()
		ctx = WithMemoryBudget(ctx, s.cfg.Budget)
	}
	c := &Conn{Conn: nc, Framer: fr, RemoteAddr: nc.RemoteAddr().String(), Local: isLocal(nc)}
	if c.Local {
		c.RemoteAddr = "[local]" // as PostgreSQL logs a Unix-socket client
	}
	_ = nc.SetDeadline(time.Now().Add(s.cfg.StartupTimeout)) // startup must finish
	ok, err := s.startup(c)
	if err != nil || !ok {
		if err != nil && !isDisconnect(err) {
			s.log.Debug("startup failed", "remote", c.RemoteAddr, "err", err)
			s.fatal(c, err)
		}
		return
	}
	if n := s.active.Add(1); n > int64(s.cfg.MaxConnections) {
		s.active.Add(-1)
		s.fatal(c, Errorf(CodeTooManyConnections, "sorry, too many clients already (max_connections %d)", s.cfg.MaxConnections))
		return
	}
	defer s.active.Add(-1)
	if err := s.authenticate(c); err != nil {
		s.log.Info("authentication failed", "remote", c.RemoteAddr, "user", c.User, "err", err)
		s.fatal(c, err)
		return
	}
	_ = nc.SetDeadline(time.Time{})
	endStartup()
	c.Append(&pgproto3.AuthenticationOk{})
	// The process id first: the session registers under it
	// (pg_stat_activity, pg_terminate_backend).
	c.ProcessID = nextPID()
	sess, err := s.handler.Open(ctx, c)
	if err != nil {
		s.log.Warn("session open failed", "remote", c.RemoteAddr, "user", c.User, "err", err)
		s.fatal(c, err)
		return
	}
	defer sess.Close()
	var b [4]byte
	_, _ = rand.Read(b[:])
	c.SecretKey = binary.BigEndian.Uint32(b[:])
	s.mu.Lock()
	s.sessions[c.ProcessID] = &entry{secret: c.SecretKey, sess: sess}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, c.ProcessID)
		s.mu.Unlock()
	}()
	for _, kv := range sess.ParameterStatus() {
		c.Append(&pgproto3.ParameterStatus{Name: kv[0], Value: kv[1]})
	}
	var key [4]byte
	binary.BigEndian.PutUint32(key[:], c.SecretKey)
	c.Append(&pgproto3.BackendKeyData{ProcessID: c.ProcessID, SecretKey: key[:]})
	c.Append(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := c.Flush(); err != nil {
		return
	}
	if err := sess.Serve(ctx); err != nil && !isDisconnect(err) {
		s.log.Debug("session ended", "remote", c.RemoteAddr, "user", c.User, "err", err)
	}
}

// refuseStartup answers a connection past MaxStartupConnections with FATAL
// 53300 and logs such refusals at most once per second.
func (s *Server) refuseStartup(nc net.Conn) {
	er := &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: CodeTooManyConnections,
		Message: fmt.Sprintf("sorry, too many connections in startup already (max_startup_connections %d)", s.cfg.MaxStartupConnections),
		Hint:    "connections that have not yet authenticated are limited; retry in a moment"}
	if b, err := er.Encode(nil); err == nil {
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write(b)
	}
	n := s.refused.Add(1)
	now := time.Now().UnixNano()
	if last := s.lastRef.Load(); now-last >= int64(time.Second) && s.lastRef.CompareAndSwap(last, now) {
		s.refused.Add(-n)
		s.log.Warn("refused connections: too many in startup", "refused", n, "max_startup_connections", s.cfg.MaxStartupConnections)
	}
}

func isDisconnect(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// fatal sends a FATAL ErrorResponse and flushes.
func (s *Server) fatal(c *Conn, err error) {
	er := ToErrorResponse(err)
	er.Severity, er.SeverityUnlocalized = "FATAL", "FATAL"
	if er.Code == CodeInternal {
		if errors.Is(err, ErrMalformed) || errors.Is(err, ErrMessageTooLarge) {
			er.Code = CodeProtocolViolation
		}
	}
	c.Append(er)
	_ = c.Flush()
}

// startup handles SSLRequest, GSSENCRequest and CancelRequest, and reads the
// StartupMessage. ok is false when the connection is done (a cancel).
func (s *Server) startup(c *Conn) (bool, error) {
	for {
		body, err := c.ReadUntyped()
		if err != nil {
			return false, err
		}
		code := binary.BigEndian.Uint32(body)
		switch code {
		case codeSSLRequest:
			if s.cfg.TLS == nil || c.TLS {
				if _, err := c.Conn.Write([]byte{'N'}); err != nil {
					return false, err
				}
				continue
			}
			if c.Buffered() > 0 {
				return false, Errorf(CodeProtocolViolation, "received unencrypted data after SSL request")
			}
			if _, err := c.Conn.Write([]byte{'S'}); err != nil {
				return false, err
			}
			under := c.Conn
			if s.cfg.TLSTransport != nil {
				under = s.cfg.TLSTransport(under)
			}
			tc := tls.Server(under, s.cfg.TLS)
			if err := tc.Handshake(); err != nil {
				return false, fmt.Errorf("TLS handshake: %w", err)
			}
			c.Conn, c.TLS = tc, true
			c.Framer.SetReader(tc)
			c.Framer.SetWriter(tc)
		case codeGSSEncRequest:
			if _, err := c.Conn.Write([]byte{'N'}); err != nil {
				return false, err
			}
		case codeCancelRequest:
			if len(body) != 12 {
				return false, fmt.Errorf("%w: cancel request of %d bytes", ErrMalformed, len(body))
			}
			s.cancel(binary.BigEndian.Uint32(body[4:]), binary.BigEndian.Uint32(body[8:]))
			return false, nil
		case codeProtocol3:
			if s.cfg.RequireTLS && !c.TLS && !c.Local {
				return false, Errorf(CodeInvalidAuth, "this server requires TLS: connect with sslmode=require")
			}
			var sm pgproto3.StartupMessage
			if err := sm.Decode(body); err != nil {
				return false, fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			c.Params = sm.Parameters
			c.User = sm.Parameters["user"]
			c.Database = sm.Parameters["database"]
			if c.User == "" {
				return false, Errorf(CodeInvalidAuth, "no PostgreSQL user name specified in startup packet")
			}
			if c.Database == "" {
				c.Database = c.User
			}
			return true, nil
		default:
			if code>>16 != 3 {
				return false, Errorf(CodeFeatureNotSupported, "unsupported frontend protocol %d.%d: tandem speaks 3.0", code>>16, code&0xffff)
			}
			// A later 3.x minor version: answer with NegotiateProtocolVersion
			// semantics by accepting as 3.0 (PostgreSQL does the same).
			var sm pgproto3.StartupMessage
			b := append([]byte(nil), body...)
			binary.BigEndian.PutUint32(b, codeProtocol3)
			if err := sm.Decode(b); err != nil {
				return false, fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			c.Params, c.User, c.Database = sm.Parameters, sm.Parameters["user"], sm.Parameters["database"]
			if c.Database == "" {
				c.Database = c.User
			}
			c.Append(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0})
			return true, nil
		}
	}
}

func (s *Server) cancel(pid, secret uint32) {
	s.mu.Lock()
	e := s.sessions[pid]
	s.mu.Unlock()
	if e == nil || e.secret != secret {
		s.log.Debug("cancel request for unknown session", "pid", pid)
		return
	}
	e.sess.Cancel()
}

func (s *Server) authenticate(c *Conn) error {
	if s.cfg.Auth == AuthTrust {
		return nil
	}
	if tc, ok := c.Conn.(*tls.Conn); ok && s.cfg.TrustCert != nil {
		if cs := tc.ConnectionState(); len(cs.VerifiedChains) > 0 && s.cfg.TrustCert(cs) {
			return nil
		}
	}
	password, known := "", false
	if s.cfg.Passwords != nil {
		password, known = s.cfg.Passwords(c.User)
	}
	failed := Errorf(CodeInvalidPassword, "password authentication failed for user %q", c.User)
	switch s.cfg.Auth {
	case AuthMD5:
		var salt [4]byte
		_, _ = rand.Read(salt[:])
		c.Append(&pgproto3.AuthenticationMD5Password{Salt: salt})
		if err := c.Flush(); err != nil {
			return err
		}
		typ, frame, err := c.ReadFrame()
		if err != nil {
			return err
		}
		if typ != 'p' {
			return Errorf(CodeProtocolViolation, "expected password response, got message type %q", typ)
		}
		var pm pgproto3.PasswordMessage
		if err := pm.Decode(frameBody(frame)); err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if !known || pm.Password != md5Password(c.User, password, salt) {
			return failed
		}
		return nil
	case AuthSCRAM:
		c.Append(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
		if err := c.Flush(); err != nil {
			return err
		}
		srv, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) {
			return s.storedCredentials(c.User, password, known)
		})
		if err != nil {
			return err
		}
		conv := srv.NewConversation()
		first := true
		for !conv.Done() {
			typ, frame, err := c.ReadFrame()
			if err != nil {
				return err
			}
			if typ != 'p' {
				return Errorf(CodeProtocolViolation, "expected SASL response, got message type %q", typ)
			}
			var data []byte
			if first {
				var m pgproto3.SASLInitialResponse
				if err := m.Decode(frameBody(frame)); err != nil {
					return fmt.Errorf("%w: %v", ErrMalformed, err)
				}
				if m.AuthMechanism != "SCRAM-SHA-256" {
					return Errorf(CodeProtocolViolation, "client selected an invalid SASL authentication mechanism %q", m.AuthMechanism)
				}
				data = m.Data
				first = false
			} else {
				var m pgproto3.SASLResponse
				if err := m.Decode(frameBody(frame)); err != nil {
					return fmt.Errorf("%w: %v", ErrMalformed, err)
				}
				data = m.Data
			}
			resp, err := conv.Step(string(data))
			if err != nil {
				return failed
			}
			if conv.Done() {
				if !conv.Valid() || !known {
					return failed
				}
				c.Append(&pgproto3.AuthenticationSASLFinal{Data: []byte(resp)})
			} else {
				c.Append(&pgproto3.AuthenticationSASLContinue{Data: []byte(resp)})
			}
			if err := c.Flush(); err != nil {
				return err
			}
		}
		return nil
	}
	return Errorf(CodeInvalidAuth, "authentication method %q is not supported", s.cfg.Auth)
}

// storedCredentials derives (and caches) SCRAM keys. Unknown users get keys
// from a random password so the exchange fails without revealing that the
// user does not exist.
func (s *Server) storedCredentials(user, password string, known bool) (scram.StoredCredentials, error) {
	s.scramMu.Lock()
	defer s.scramMu.Unlock()
	key := user + "\x00" + password
	if !known {
		var b [16]byte
		_, _ = rand.Read(b[:])
		password, key = hex.EncodeToString(b[:]), ""
	}
	if cr, ok := s.scramCr[key]; ok && key != "" {
		return cr, nil
	}
	if known && strings.HasPrefix(password, "SCRAM-SHA-256$") {
		cr, err := ParseSCRAMVerifier(password)
		if err != nil {
			return scram.StoredCredentials{}, fmt.Errorf("user %q: %w", user, err)
		}
		s.scramCr[key] = cr
		return cr, nil
	}
	var salt [16]byte
	_, _ = rand.Read(salt[:])
	client, err := scram.SHA256.NewClient(user, password, "")
	if err != nil {
		return scram.StoredCredentials{}, err
	}
	cr, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt[:]), Iters: 4096})
	if err != nil {
		return scram.StoredCredentials{}, err
	}
	if key != "" {
		s.scramCr[key] = cr
	}
	return cr, nil
}

// SCRAMVerifier is PostgreSQL's form of a SCRAM-SHA-256 verifier for
// password (what pg_authid.rolpassword holds): the cluster file may carry
// it instead of the password.
func SCRAMVerifier(password string) (string, error) {
	var salt [16]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return "", err
	}
	client, err := scram.SHA256.NewClient("", password, "")
	if err != nil {
		return "", err
	}
	const iters = 4096
	cr, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt[:]), Iters: iters})
	if err != nil {
		return "", err
	}
	enc := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iters, enc(salt[:]), enc(cr.StoredKey), enc(cr.ServerKey)), nil
}

// ErrBadVerifier: a SCRAM verifier that is not PostgreSQL's form.
var ErrBadVerifier = errors.New("malformed SCRAM-SHA-256 verifier (expected SCRAM-SHA-256$ITER:SALT$STOREDKEY:SERVERKEY, as `tandem passwd` prints)")

// ParseSCRAMVerifier reads a verifier SCRAMVerifier (or PostgreSQL) wrote.
func ParseSCRAMVerifier(v string) (scram.StoredCredentials, error) {
	rest, ok := strings.CutPrefix(v, "SCRAM-SHA-256$")
	if !ok {
		return scram.StoredCredentials{}, ErrBadVerifier
	}
	iterSalt, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return scram.StoredCredentials{}, ErrBadVerifier
	}
	iterS, saltS, ok1 := strings.Cut(iterSalt, ":")
	storedS, serverS, ok2 := strings.Cut(keys, ":")
	iters, err := strconv.Atoi(iterS)
	if !ok1 || !ok2 || err != nil || iters < 1 {
		return scram.StoredCredentials{}, ErrBadVerifier
	}
	dec := base64.StdEncoding.DecodeString
	salt, err1 := dec(saltS)
	stored, err2 := dec(storedS)
	server, err3 := dec(serverS)
	if err1 != nil || err2 != nil || err3 != nil || len(stored) != 32 || len(server) != 32 {
		return scram.StoredCredentials{}, ErrBadVerifier
	}
	return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: iters}, StoredKey: stored, ServerKey: server}, nil
}

func md5Password(user, password string, salt [4]byte) string {
	inner := md5.Sum([]byte(password + user))
	h := hex.EncodeToString(inner[:])
	outer := md5.Sum(append([]byte(h), salt[:]...))
	return "md5" + hex.EncodeToString(outer[:])
}
