package physical

import (
	"strings"
	"testing"
)

func TestParseConninfo(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
		err  string
	}{
		{"", map[string]string{}, ""},
		{"host=a port=5432", map[string]string{"host": "a", "port": "5432"}, ""},
		{"  user = 'x y'  passfile='/p/q' ", map[string]string{"user": "x y", "passfile": "/p/q"}, ""},
		{`password='it\'s' application_name=a\ b`, map[string]string{"password": "it's", "application_name": "a b"}, ""},
		{"host", nil, "keyword without a value"},
		{"host='a", nil, "unterminated"},
	} {
		got, err := parseConninfo(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q: %s = %q, want %q", tc.in, k, got[k], v)
			}
		}
	}
}

// TestRepointConninfo: a standby's primary_conninfo keeps the operator's
// credentials and TLS settings and takes the new primary's host, port and
// the node's id; built from the dsn when empty, never with its password.
func TestRepointConninfo(t *testing.T) {
	for _, tc := range []struct {
		current, dsn, want string
	}{
		{"host=10.0.0.1 port=5432 user=repl passfile='/var/lib/pg/.pgpass' sslmode=verify-full application_name=walreceiver",
			"postgres://op:secret@10.0.0.2:5433/app?sslmode=require",
			"application_name='n2' host='10.0.0.2' passfile='/var/lib/pg/.pgpass' port='5433' sslmode='verify-full' user='repl'"},
		{"", "postgres://op:secret@10.0.0.2:5433/app?sslmode=disable",
			"application_name='n2' host='10.0.0.2' port='5433' sslmode='disable' user='tandem_op'"},
		{"hostaddr=10.0.0.1 host=a user=r", "host=b port=6000 user=op password=x sslmode=disable",
			"application_name='n2' host='b' port='6000' user='r'"},
	} {
		got, err := repointConninfo(tc.current, tc.dsn, "n2", "tandem_op")
		if err != nil || got != tc.want {
			t.Errorf("%q -> %q (%v), want %q", tc.current, got, err, tc.want)
		}
		if strings.Contains(got, "secret") {
			t.Errorf("the dsn's password leaked into primary_conninfo: %s", got)
		}
	}
	if r := redactConninfo("host=a password='s3cret'"); strings.Contains(r, "s3cret") {
		t.Errorf("redactConninfo kept the password: %s", r)
	}
}
