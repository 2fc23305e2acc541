package bench

import "testing"

func TestDialectSyncSerial(t *testing.T) {
	tests := []struct {
		d    Dialect
		want string
	}{
		{DialectPostgres, "SELECT setval(pg_get_serial_sequence('orders', 'o_id'), coalesce(max(o_id), 0) + 1, false) FROM orders"},
		{DialectSQLite, ""},
	}
	for _, tc := range tests {
		if got := tc.d.SyncSerial("orders", "o_id"); got != tc.want {
			t.Errorf("%s: SyncSerial = %q, want %q", tc.d, got, tc.want)
		}
	}
}
