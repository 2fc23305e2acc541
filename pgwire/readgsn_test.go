package pgwire

import "testing"

func TestIsMinApplied(t *testing.T) {
	for _, tc := range []struct {
		sql    string
		gsn    uint64
		ok     bool
		hasErr bool
	}{
		{"SET tandem.min_applied_gsn = 42", 42, true, false},
		{"set tandem.min_applied_gsn to '7'", 7, true, false},
		{"SET tandem.min_applied_gsn = soon", 0, true, true},
		{"SET tandem.route = primary", 0, false, false},
		{"SET application_name = 'x'", 0, false, false},
		{"SHOW tandem.min_applied_gsn", 0, false, false},
	} {
		g, ok, err := isMinApplied(Keywords(tc.sql, 3), tc.sql)
		if g != tc.gsn || ok != tc.ok || (err != nil) != tc.hasErr {
			t.Errorf("%q: %d %v %v; want %d %v error=%v", tc.sql, g, ok, err, tc.gsn, tc.ok, tc.hasErr)
		}
	}
}
