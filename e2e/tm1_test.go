package e2e

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	_ "github.com/tandemdb/tandem/bench/workloads/tm1"
)

// TestTM1ThroughTandem loads TM1 and runs R80W20 through tandem on both
// back ends: the spec's hit rates, no unexpected errors, files written.
func TestTM1ThroughTandem(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			c := startCluster(t, clusterSpec{backend: be})
			ctx := context.Background()
			w, err := bench.Lookup("tm1")
			if err != nil {
				t.Fatal(err)
			}
			const P = 3000
			if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: c.DSN, Scale: P, Workers: 2}); err != nil {
				t.Fatalf("load through tandem (%s): %v", be, err)
			}
			// Loading again without --drop must refuse and lose nothing.
			if _, err := bench.Load(ctx, bench.LoadOptions{Workload: w, DSN: c.DSN, Scale: P}); err == nil {
				t.Fatal("a second load without Drop was accepted")
			}
			res, err := bench.Run(ctx, bench.RunOptions{Workload: w, DSN: c.DSN, Mix: "r80w20", Clients: 4, Rampup: time.Second, Duration: 6 * time.Second, Seed: 7})
			if err != nil {
				t.Fatalf("run through tandem (%s): %v", be, err)
			}
			if res.MQTh <= 0 {
				t.Fatalf("MQTh = %v", res.MQTh)
			}
			if res.Totals.Errors+res.Totals.Unknown != 0 {
				t.Fatalf("unexpected errors: %d: %v", res.Totals.Errors, res.FirstErrors)
			}
			// Hit rates from the spec's value rules, with tolerances wide
			// enough for a few thousand samples of the rarer types.
			want := map[string]struct{ rate, tol float64 }{
				"GET_SUBSCRIBER_DATA":    {1.0, 0.001},
				"GET_ACCESS_DATA":        {0.625, 0.04},
				"GET_NEW_DESTINATION":    {0.15, 0.05},
				"UPDATE_LOCATION":        {1.0, 0.001},
				"UPDATE_SUBSCRIBER_DATA": {0.625, 0.12},
				"INSERT_CALL_FORWARDING": {0.31, 0.12},
				"DELETE_CALL_FORWARDING": {0.31, 0.12},
			}
			for name, wnt := range want {
				tx := res.Transactions[name]
				if tx == nil || tx.Started == 0 {
					t.Fatalf("%s never ran", name)
				}
				if math.Abs(tx.HitRate-wnt.rate) > wnt.tol {
					t.Errorf("%s hit rate %.3f, want %.3f ± %.3f (started %d)", name, tx.HitRate, wnt.rate, wnt.tol, tx.Started)
				}
			}
			dir := t.TempDir()
			if err := res.WriteFiles(dir); err != nil {
				t.Fatal(err)
			}
			var parsed map[string]any
			b, err := os.ReadFile(filepath.Join(dir, "result.json"))
			if err != nil || json.Unmarshal(b, &parsed) != nil || parsed["mqth"] == nil {
				t.Fatalf("result.json: %v", err)
			}
			html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
			if !strings.Contains(string(html), "<svg") {
				t.Fatal("report.html has no chart")
			}
			t.Logf("%s: MQTh %.0f", be, res.MQTh)
		})
	}
}
