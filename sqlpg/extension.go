package sqlpg

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strconv"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"golang.org/x/crypto/bcrypt"

	"github.com/tandemdb/tandem/pgwire"
)

// Extensions a schema commonly asks for, and what the SQLite back end has
// of them: CREATE EXTENSION of one of these succeeds without doing
// anything (Rails' schema.rb enables plpgsql and pgcrypto, migrations of
// many applications uuid-ossp), and the functions applications use from
// them are tandem's own. Any other extension is refused (0A000) when it is
// created, not when a function of it is first called.
var extensions = map[string]bool{"plpgsql": true, "uuid-ossp": true, "pgcrypto": true}

// createExtension is CREATE EXTENSION [IF NOT EXISTS] name.
func createExtension(s *pg_query.CreateExtensionStmt, tr *Translation) (*Translation, error) {
	if !extensions[strings.ToLower(s.Extname)] {
		return nil, &pgwire.Error{Code: pgwire.CodeFeatureNotSupported,
			Message: fmt.Sprintf("extension %q is not available on the SQLite back end", s.Extname),
			Hint:    "plpgsql, uuid-ossp (uuid_generate_v4) and pgcrypto (gen_random_uuid, digest, hmac, gen_random_bytes, crypt with gen_salt('bf')) are; use a PostgreSQL back end for others"}
	}
	tr.Noop, tr.Tag = true, "CREATE EXTENSION"
	return tr, nil
}

// registerExtensionFunctions registers the functions of the extensions
// above that applications call.
func registerExtensionFunctions(c *sqlite3.SQLiteConn) error {
	for _, f := range []struct {
		name string
		fn   any
		pure bool
	}{
		{"uuid_generate_v4", newUUID, false},
		{"uuid_nil", func() string { return "00000000-0000-0000-0000-000000000000" }, true},
		{"digest", func(data any, typ string) ([]byte, error) {
			h, err := hashOf(typ)
			if err != nil {
				return nil, err
			}
			h.Write(bytesOf(data))
			return h.Sum(nil), nil
		}, true},
		{"hmac", func(data, key any, typ string) ([]byte, error) {
			if _, err := hashOf(typ); err != nil {
				return nil, err
			}
			m := hmac.New(func() hash.Hash { h, _ := hashOf(typ); return h }, bytesOf(key))
			m.Write(bytesOf(data))
			return m.Sum(nil), nil
		}, true},
		{"gen_random_bytes", func(n int64) ([]byte, error) {
			if n < 1 || n > 1024 {
				return nil, fmt.Errorf("[SQLSTATE 22023] Length not in range")
			}
			b := make([]byte, n)
			_, _ = rand.Read(b)
			return b, nil
		}, false},
		{"gen_salt", genSalt, false},
		{"crypt", crypt, false},
	} {
		if err := c.RegisterFunc(f.name, nullsAsNil(f.fn), f.pure); err != nil {
			return fmt.Errorf("sqlpg: register %s: %w", f.name, err)
		}
	}
	return nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func bytesOf(v any) []byte {
	switch x := v.(type) {
	case []byte:
		return x
	case string:
		return []byte(x)
	}
	return []byte(fmt.Sprint(toText(v)))
}

// hashOf is pgcrypto's digest algorithm by name.
func hashOf(typ string) (hash.Hash, error) {
	switch strings.ToLower(typ) {
	case "md5":
		return md5.New(), nil
	case "sha1":
		return sha1.New(), nil
	case "sha224":
		return sha256.New224(), nil
	case "sha256":
		return sha256.New(), nil
	case "sha384":
		return sha512.New384(), nil
	case "sha512":
		return sha512.New(), nil
	}
	return nil, fmt.Errorf("[SQLSTATE 22023] Cannot use \"%s\": No such hash algorithm", typ)
}

// genSalt is pgcrypto's gen_salt for Blowfish ('bf', iteration count 4-31,
// default 6), the one algorithm it recommends; the others answer 0A000.
func genSalt(typ string, iter ...int64) (string, error) {
	if strings.ToLower(typ) != "bf" {
		return "", fmt.Errorf("[SQLSTATE 0A000] gen_salt(%q) is not supported on the SQLite back end: use gen_salt('bf')", typ)
	}
	cost := int64(6)
	if len(iter) > 0 {
		cost = iter[0]
	}
	if cost < 4 || cost > 31 {
		return "", fmt.Errorf("[SQLSTATE 22023] gen_salt: Incorrect number of rounds")
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("$2a$%02d$%s", cost, bcryptBase64(b[:])), nil
}

// crypt is pgcrypto's crypt for Blowfish salts and hashes ($2a$, $2b$,
// $2y$): given a stored hash, the same hash when the password matches it
// (so crypt(pw, hash) = hash checks a password, as with pgcrypto) and
// another hash otherwise; given a salt from gen_salt, a new hash of its
// cost. Go's bcrypt chooses the salt itself, so, unlike pgcrypto, two
// calls with one salt give two different hashes (both verify).
func crypt(password, salt string) (string, error) {
	if len(salt) < 7 || salt[0] != '$' || salt[1] != '2' || salt[3] != '$' || !strings.ContainsRune("aby", rune(salt[2])) {
		return "", fmt.Errorf("[SQLSTATE 0A000] crypt with a salt other than gen_salt('bf')'s is not supported on the SQLite back end")
	}
	if len(salt) == 60 && bcrypt.CompareHashAndPassword([]byte(salt), []byte(password)) == nil {
		return salt, nil
	}
	cost, err := strconv.Atoi(salt[4:6])
	if err != nil {
		return "", fmt.Errorf("[SQLSTATE 22023] invalid salt")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", fmt.Errorf("[SQLSTATE 22023] crypt: %v", err)
	}
	return string(h), nil
}

// bcryptBase64 is bcrypt's own base-64 alphabet (22 characters of salt).
func bcryptBase64(b []byte) string {
	const alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	var out strings.Builder
	var acc, bits uint
	for _, c := range b {
		acc = acc<<8 | uint(c)
		bits += 8
		for bits >= 6 {
			bits -= 6
			out.WriteByte(alphabet[(acc>>bits)&63])
		}
	}
	if bits > 0 {
		out.WriteByte(alphabet[(acc<<(6-bits))&63])
	}
	return out.String()[:22]
}
