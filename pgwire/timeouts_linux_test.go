package pgwire

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SET values of tandem's time settings read as PostgreSQL reads them, and
// come back as its SHOW prints them.
func TestNormalizeSetting(t *testing.T) {
	cases := []struct {
		name, val, want string
		bad             bool
	}{
		{"idle_in_transaction_session_timeout", "5000", "5s", false},
		{"idle_in_transaction_session_timeout", "'100ms'", "100ms", false},
		{"idle_in_transaction_session_timeout", "1min", "1min", false},
		{"idle_in_transaction_session_timeout", "0", "0", false},
		{"idle_session_timeout", "1500", "1500ms", false},
		{"idle_session_timeout", "2 h", "2h", false},
		{"idle_session_timeout", "soon", "", true},
		{"idle_session_timeout", "-1", "", true},
		{"tcp_keepalives_idle", "30", "30s", false}, // seconds, as in PostgreSQL
		{"tcp_keepalives_interval", "500ms", "500ms", false},
		{"tcp_keepalives_count", "5", "5", false},
		{"tcp_keepalives_count", "x", "", true},
		{"tcp_keepalives_count", "1000", "", true},
		{"statement_timeout", "250", "250ms", false},
		{"application_name", "app", "app", false},
	}
	for _, c := range cases {
		got, err := normalizeSetting(c.name, c.val)
		if c.bad {
			if err == nil {
				t.Errorf("%s = %q accepted as %q", c.name, c.val, got)
			} else if ToErrorResponse(err).Code != "22023" {
				t.Errorf("%s = %q: %v, want 22023", c.name, c.val, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s = %q: %q (%v), want %q", c.name, c.val, got, err, c.want)
		}
	}
}

// Keepalive reaches the socket: the kernel reports the idle time,
// interval and count that were set, and the defaults for zero fields.
func TestKeepaliveApplied(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
			time.Sleep(time.Second)
			c.Close()
		}
	}()
	nc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, c := range []struct {
		k                  Keepalive
		idle, intvl, count int
	}{
		{Keepalive{Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}, 30, 5, 3},
		{Keepalive{}, 15, 15, 9},
	} {
		if err := c.k.apply(nc); err != nil {
			t.Fatal(err)
		}
		raw, _ := nc.(*net.TCPConn).SyscallConn()
		var on, idle, intvl, count int
		_ = raw.Control(func(fd uintptr) {
			on, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
			idle, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
			intvl, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
			count, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
		})
		if on == 0 || idle != c.idle || intvl != c.intvl || count != c.count {
			t.Errorf("%+v: socket has keepalive %d idle %d interval %d count %d, want on %d %d %d", c.k, on, idle, intvl, count, c.idle, c.intvl, c.count)
		}
	}
}
