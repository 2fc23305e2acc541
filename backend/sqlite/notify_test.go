package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// NOTIFY's transactions: a payload repeated in one transaction is sent
// once, repeated in two it is sent twice; a rolled back or failed one
// sends nothing; pg_notify in a statement that notifies many times.
func TestNotifyTransactions(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	lb, _ := db.NewSession(ctx, "u", "d")
	nb, _ := db.NewSession(ctx, "u", "d")
	defer lb.Close()
	defer nb.Close()
	l, n := lb.(*Session), nb.(*Session)
	var got []string
	l.UseNotify(1, func(channel, payload string, sender uint32) {
		got = append(got, fmt.Sprintf("%s:%s:%d", channel, payload, sender))
	})
	n.UseNotify(2, func(string, string, uint32) {})
	step := func(s *Session, sql string) {
		t.Helper()
		if _, err := run(t, s, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		s.RequestDone()
	}
	step(l, "LISTEN c")
	step(n, "BEGIN")
	step(n, "NOTIFY c, 'x'")
	step(n, "NOTIFY c, 'x'")
	step(n, "NOTIFY other, 'x'")
	if len(got) != 0 {
		t.Fatalf("sent before COMMIT: %v", got)
	}
	step(n, "COMMIT")
	step(n, "BEGIN")
	step(n, "NOTIFY c, 'x'")
	step(n, "COMMIT")
	step(n, "BEGIN")
	step(n, "NOTIFY c, 'rolled back'")
	step(n, "ROLLBACK")
	if _, err := run(t, n, "SELECT pg_notify('c', 'failed'), 1/0"); err == nil {
		t.Fatal("1/0: no error")
	}
	n.RequestDone()
	// A failure after some rows notified: nothing either.
	if _, err := run(t, n, "SELECT pg_notify('c', 'failed ' || g), 10 / (3 - g) FROM generate_series(1, 5) g"); err == nil {
		t.Fatal("division by zero at the third row: no error")
	}
	n.RequestDone()
	step(n, "SELECT count(pg_notify('c', g::text)) FROM generate_series(1, 20000) g")
	if len(got) != 2+20000 || got[0] != "c:x:2" || got[1] != "c:x:2" || got[2] != "c:1:2" {
		t.Fatalf("got %d notifications, first %v", len(got), got[:min(len(got), 3)])
	}
	for _, g := range got {
		if strings.Contains(g, "rolled back") || strings.Contains(g, "failed") {
			t.Fatalf("sent: %s", g)
		}
	}
	step(l, "UNLISTEN *")
	step(n, "NOTIFY c, 'after'")
	if len(got) != 20002 {
		t.Fatalf("after UNLISTEN: %v", got[len(got)-1])
	}
}
