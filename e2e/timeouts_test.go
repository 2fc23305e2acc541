package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// silentWriter is issue 18 item 3's fault: a client opens a transaction,
// writes a row and falls silent with its socket open. With
// idle_in_transaction_session_timeout (idle) the other writer proceeds
// once it passes, the silent session was told FATAL 25P03, and its row is
// gone. The table is created here.
func silentWriter(t *testing.T, dsn, table string, idle time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a, b := connect(t, dsn), connect(t, dsn)
	if _, err := a.Exec(ctx, "CREATE TABLE "+table+" (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := a.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&got); err != nil || got != formatPG(idle) {
		t.Fatalf("SHOW idle_in_transaction_session_timeout = %q (%v), want %q", got, err, formatPG(idle))
	}
	if _, err := a.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, "INSERT INTO "+table+" VALUES (1, 'silent')"); err != nil {
		t.Fatal(err)
	}
	silentFrom := time.Now()
	// The other writer: the same key, so it waits on both back ends (the
	// SQLite write lock; PostgreSQL's row lock). Retries after 40001.
	var werr error
	for time.Since(silentFrom) < 45*time.Second {
		_, werr = b.Exec(ctx, "INSERT INTO "+table+" VALUES (1, 'other')")
		if werr == nil || sqlState(werr) != "40001" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	waited := time.Since(silentFrom)
	if werr != nil {
		t.Fatalf("the other writer after %v: %v", waited.Round(time.Millisecond), werr)
	}
	if waited < idle*8/10 {
		t.Fatalf("the other writer got through after %v, before the silent one's timeout %v: it was not blocked", waited, idle)
	}
	t.Logf("the other writer proceeded %v after the silent writer fell silent (timeout %v)", waited.Round(time.Millisecond), idle)
	_, err := a.Exec(ctx, "SELECT 1")
	if sqlState(err) != "25P03" || !strings.Contains(err.Error(), "idle-in-transaction timeout") {
		t.Fatalf("the silent session's next statement: %v, want FATAL 25P03 terminating connection due to idle-in-transaction timeout", err)
	}
	rows, err := b.Query(ctx, "SELECT v FROM "+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(vs, ",") != "other" {
		t.Fatalf("rows %v (%v), want only the other writer's: the silent transaction must roll back", vs, err)
	}
}

// formatPG is how SHOW prints a whole number of seconds or milliseconds.
func formatPG(d time.Duration) string {
	if d%time.Second == 0 {
		return strings.TrimSuffix(d.String(), "0m0s")
	}
	return d.String()
}

// TestIdleInTransactionTimeout: issue 18 item 3 on every back end: the
// SQLite node (cluster file), the standalone PostgreSQL relay (the setting
// goes to the managed server) and the PostgreSQL hot-standby executor
// (tandem enforces it).
func TestIdleInTransactionTimeout(t *testing.T) {
	limits := "[limits]\nidle_in_transaction_session_timeout = \"2s\"\n"
	t.Run("sqlite", func(t *testing.T) {
		c := startCluster(t, clusterSpec{backend: "sqlite", extra: limits})
		silentWriter(t, c.DSN, "silent", 2*time.Second)
	})
	t.Run("postgres-relay", func(t *testing.T) {
		c := startCluster(t, clusterSpec{backend: "postgres", extra: limits})
		silentWriter(t, c.DSN, "silent", 2*time.Second)
	})
	t.Run("postgres-hot-standby", func(t *testing.T) {
		h := writeHSOn(t, "postgres", "1-safe", "relaxed", "ack_timeout = \"5s\"\n"+limits)
		h.start("n1")
		silentWriter(t, h.dsn(h.nodes["n1"]), "silent", 2*time.Second)
	})
}

// TestSessionTimeoutSettings: on SQLite, the timeouts are set per session
// with SET and read with SHOW as in PostgreSQL; idle_in_transaction_session_
// timeout = 0 turns it off; idle_session_timeout ends an idle session with
// FATAL 57P05; a message begun and not finished is dropped after
// limits.message_read_timeout; the keepalive settings read back.
func TestSessionTimeoutSettings(t *testing.T) {
	c := startCluster(t, clusterSpec{backend: "sqlite", extra: "[limits]\nmessage_read_timeout = \"1s\"\ntcp_keepalives_idle = 30\ntcp_keepalives_count = 4\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a := connect(t, c.DSN)
	show := func(name, want string) {
		t.Helper()
		var got string
		if err := a.QueryRow(ctx, "SHOW "+name).Scan(&got); err != nil || got != want {
			t.Fatalf("SHOW %s = %q (%v), want %q", name, got, err, want)
		}
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := a.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, s := range []struct{ set, name, want string }{
		{"", "idle_in_transaction_session_timeout", "1min"}, // the SQLite default
		{"", "idle_session_timeout", "0"},
		{"", "tcp_keepalives_idle", "30s"}, // the cluster file's, in seconds
		{"", "tcp_keepalives_interval", "15s"},
		{"", "tcp_keepalives_count", "4"},
		{"SET idle_in_transaction_session_timeout = '5s'", "idle_in_transaction_session_timeout", "5s"},
		{"SET idle_in_transaction_session_timeout = 1500", "idle_in_transaction_session_timeout", "1500ms"},
		{"SET idle_in_transaction_session_timeout TO '100ms'", "idle_in_transaction_session_timeout", "100ms"},
		{"SET idle_in_transaction_session_timeout TO DEFAULT", "idle_in_transaction_session_timeout", "1min"},
		{"SET tcp_keepalives_idle = 20", "tcp_keepalives_idle", "20s"},
		{"SET tcp_keepalives_count = 3", "tcp_keepalives_count", "3"},
		{"RESET tcp_keepalives_idle", "tcp_keepalives_idle", "30s"},
	} {
		if s.set != "" {
			exec(s.set)
		}
		show(s.name, s.want)
	}
	for _, bad := range []string{"SET idle_in_transaction_session_timeout = 'soon'", "SET idle_session_timeout = '-1s'", "SET tcp_keepalives_count = 'many'"} {
		if _, err := a.Exec(ctx, bad); sqlState(err) != "22023" {
			t.Fatalf("%s: %v, want 22023", bad, err)
		}
	}

	// 0 turns it off: a transaction idle past the default of another
	// session's setting lives on.
	exec("SET idle_in_transaction_session_timeout = 0")
	exec("BEGIN")
	time.Sleep(1500 * time.Millisecond)
	exec("SELECT 1")
	exec("COMMIT")

	// A short one ends the session.
	exec("SET idle_in_transaction_session_timeout = '300ms'")
	exec("BEGIN")
	time.Sleep(time.Second)
	if _, err := a.Exec(ctx, "SELECT 1"); sqlState(err) != "25P03" {
		t.Fatalf("after 1 s idle in a transaction with the timeout at 300ms: %v, want 25P03", err)
	}

	// idle_session_timeout: off by default, set with SET.
	b := connect(t, c.DSN)
	if _, err := b.Exec(ctx, "SET idle_session_timeout = '500ms'"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	_, err := b.Exec(ctx, "SELECT 1")
	if sqlState(err) != "57P05" || !strings.Contains(err.Error(), "idle-session timeout") {
		t.Fatalf("after 1.5 s idle with idle_session_timeout at 500ms: %v, want FATAL 57P05", err)
	}
	d := connect(t, c.DSN) // the default: an idle session stays
	time.Sleep(1500 * time.Millisecond)
	if _, err := d.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("an idle session without idle_session_timeout: %v", err)
	}

	// Half a message: a Query announcing 100 bytes, 10 sent.
	e := connect(t, c.DSN)
	nc := e.PgConn().Conn()
	half := []byte{'Q', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(half[1:], 104)
	half = append(half, "SELECT 1; "...)
	start := time.Now()
	if _, err := nc.Write(half); err != nil {
		t.Fatal(err)
	}
	code, err := readFatal(nc, 15*time.Second)
	took := time.Since(start)
	if err != nil || code != "08P01" {
		t.Fatalf("half a message: %q, %v after %v, want FATAL 08P01 and the connection closed", code, err, took)
	}
	if took < 800*time.Millisecond || took > 8*time.Second {
		t.Fatalf("half a message was dropped after %v, want about message_read_timeout (1s)", took)
	}
	t.Logf("half a message dropped after %v", took.Round(time.Millisecond))
}

// readFatal reads server messages from nc until an ErrorResponse, and
// returns its SQLSTATE once the server closed the connection.
func readFatal(nc net.Conn, within time.Duration) (string, error) {
	_ = nc.SetReadDeadline(time.Now().Add(within))
	r := bufio.NewReader(nc)
	code := ""
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) && code != "" {
				return code, nil
			}
			return code, err
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[1:])-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return code, err
		}
		if hdr[0] == 'E' {
			for _, f := range strings.Split(string(body), "\x00") {
				if strings.HasPrefix(f, "C") {
					code = f[1:]
				}
			}
		}
	}
}

// TestHalfMessageThroughRouter: a half-sent message through the router of
// a hot-standby pair reaches the node, whose message_read_timeout ends the
// session; the router passes the FATAL on and closes the client.
func TestHalfMessageThroughRouter(t *testing.T) {
	h := writeHSOn(t, "sqlite", "1-safe", "relaxed", "ack_timeout = \"5s\"\n[limits]\nmessage_read_timeout = \"1s\"\n")
	h.start("n1")
	h.start("router")
	e := connect(t, h.dsn(h.router))
	nc := e.PgConn().Conn()
	half := []byte{'Q', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(half[1:], 104)
	half = append(half, "SELECT 1; "...)
	start := time.Now()
	if _, err := nc.Write(half); err != nil {
		t.Fatal(err)
	}
	code, err := readFatal(nc, 15*time.Second)
	took := time.Since(start)
	if err != nil || code != "08P01" {
		t.Fatalf("half a message through the router: %q, %v after %v, want FATAL 08P01 and the connection closed", code, err, took)
	}
	t.Logf("half a message through the router dropped after %v", took.Round(time.Millisecond))
}
