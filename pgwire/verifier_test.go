package pgwire

import (
	"errors"
	"testing"

	"github.com/xdg-go/scram"
)

// A verifier SCRAMVerifier writes authenticates the password it was made
// from and no other; malformed verifiers are refused.
func TestSCRAMVerifier(t *testing.T) {
	v, err := SCRAMVerifier("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	cr, err := ParseSCRAMVerifier(v)
	if err != nil {
		t.Fatal(err)
	}
	login := func(password string) bool {
		srv, _ := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return cr, nil })
		cl, _ := scram.SHA256.NewClient("u", password, "")
		cc, sc := cl.NewConversation(), srv.NewConversation()
		msg, _ := cc.Step("")
		for i := 0; i < 3; i++ {
			reply, err := sc.Step(msg)
			if err != nil {
				return false
			}
			if msg, err = cc.Step(reply); err != nil {
				return false
			}
			if sc.Done() && cc.Done() {
				return sc.Valid() && cc.Valid()
			}
		}
		return sc.Valid()
	}
	if !login("correct horse") {
		t.Fatal("the password did not authenticate against its verifier")
	}
	if login("wrong horse") {
		t.Fatal("a wrong password authenticated")
	}
	for _, bad := range []string{"", "md5abc", "SCRAM-SHA-256$", "SCRAM-SHA-256$x:c2FsdA==$a:b", "SCRAM-SHA-256$4096:c2FsdA==$a:b", "SCRAM-SHA-256$4096:!!$" + "a:b"} {
		if _, err := ParseSCRAMVerifier(bad); !errors.Is(err, ErrBadVerifier) {
			t.Errorf("ParseSCRAMVerifier(%q): %v, want ErrBadVerifier", bad, err)
		}
	}
}
