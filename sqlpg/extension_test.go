package sqlpg

import (
	"strings"
	"testing"
)

// pgcrypto's crypt with Blowfish salts: a hash checks the password it was
// made from and no other; gen_salt's salts have bcrypt's shape.
func TestCryptBlowfish(t *testing.T) {
	salt, err := genSalt("bf", 4)
	if err != nil || len(salt) != 29 || !strings.HasPrefix(salt, "$2a$04$") {
		t.Fatalf("gen_salt('bf', 4) = %q, %v", salt, err)
	}
	h, err := crypt("secret", salt)
	if err != nil || len(h) != 60 || !strings.HasPrefix(h, "$2a$04$") {
		t.Fatalf("crypt = %q, %v", h, err)
	}
	if again, _ := crypt("secret", h); again != h {
		t.Errorf("crypt(password, its hash) = %q, want the hash", again)
	}
	if other, _ := crypt("Secret", h); other == h {
		t.Error("a wrong password gave back the hash")
	}
	for _, bad := range []string{"xx", "$1$abcdefgh", ""} {
		if _, err := crypt("p", bad); err == nil {
			t.Errorf("crypt with salt %q: no error", bad)
		}
	}
	if _, err := genSalt("md5"); err == nil {
		t.Error("gen_salt('md5'): no error")
	}
	if _, err := genSalt("bf", 3); err == nil {
		t.Error("gen_salt('bf', 3): no error")
	}
}
