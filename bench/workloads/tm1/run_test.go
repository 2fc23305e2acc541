package tm1_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/tm1"
)

// TestShortRuns runs the driver against PostgreSQL directly: the standard
// mix with prepared statements (mix shares, files), and an even custom mix
// with the simple protocol (hit rates of every type against the spec's
// table), then an interrupted run.
func TestShortRuns(t *testing.T) {
	const p = 5000
	dsn := newDB(t)
	load(t, dsn, p, bench.LoadOptions{})
	ctx := context.Background()

	t.Run("r80w20 prepared", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		var progress bytes.Buffer
		res, err := bench.Run(ctx, bench.RunOptions{Workload: tm1.New(), DSN: dsn, Mix: "r80w20", Clients: 4,
			Rampup: time.Second, Duration: 3 * time.Second, Seed: 11, Progress: &progress})
		if err != nil {
			t.Fatal(err)
		}
		if err := res.WriteFiles(out); err != nil {
			t.Fatal(err)
		}
		if res.MQTh <= 0 || res.Totals.Errors != 0 || res.Scale != p || res.Totals.Started == 0 {
			t.Fatalf("MQTh %v, errors %d (%v), scale %d", res.MQTh, res.Totals.Errors, res.FirstErrors, res.Scale)
		}
		n := float64(res.Totals.Started)
		weights := map[string]float64{"GET_SUBSCRIBER_DATA": 35, "GET_NEW_DESTINATION": 10, "GET_ACCESS_DATA": 35,
			"UPDATE_SUBSCRIBER_DATA": 2, "UPDATE_LOCATION": 14, "INSERT_CALL_FORWARDING": 2, "DELETE_CALL_FORWARDING": 2}
		for name, w := range weights {
			share, want := res.Transactions[name].Share, w/100
			if tol := 5 * math.Sqrt(want*(1-want)/n); math.Abs(share-want) > tol {
				t.Errorf("%s: share %.4f of %v started, want %.2f ± %.4f", name, share, n, want, tol)
			}
		}
		if !strings.Contains(progress.String(), "tps") {
			t.Errorf("no progress lines: %q", progress.String())
		}
		// MQTh is counted transactions over the measured window.
		if got := float64(res.Totals.Counted) / res.MeasuredS; math.Abs(got-res.MQTh) > 0.01 {
			t.Errorf("MQTh %v, counted/measured %v", res.MQTh, got)
		}
		checkFiles(t, out, res)
	})

	t.Run("even mix simple protocol: hit rates", func(t *testing.T) {
		// A loaded machine runs fewer transactions in a fixed window: the
		// window doubles until every type started minHitSample. Each run
		// again takes the next seed: the same seed would replay the keys of
		// the run before, whose inserts and deletes already filled and
		// emptied exactly those call_forwarding slots (measured: both hit
		// rates fall from 0.31 to 0.15). With fresh keys the rates hold on
		// the same data: the writes only move call_forwarding, and with
		// inserts and deletes equally likely each slot's occupancy stays
		// at one half (the spec's 0.3125 for both).
		var res *bench.Result
		for d, seed := 4*time.Second, uint64(12); ; d, seed = 2*d, seed+1 {
			var err error
			res, err = bench.Run(ctx, bench.RunOptions{Workload: tm1.New(), DSN: dsn, Mix: "custom", Weights: "1,1,1,1,1,1,1",
				Clients: 4, Rampup: time.Second, Duration: d, Seed: seed, Simple: true, Scale: p})
			if err != nil {
				t.Fatal(err)
			}
			least := int64(math.MaxInt64)
			for _, name := range res.TransactionOrder {
				if tr := res.Transactions[name]; tr == nil {
					least = 0
				} else {
					least = min(least, tr.Started)
				}
			}
			if least >= minHitSample || d >= 16*time.Second {
				break
			}
			t.Logf("a type started only %d times in %s: running again for twice as long", least, d)
		}
		if res.Totals.Errors != 0 || res.Protocol != "simple" {
			t.Fatalf("errors %d: %v (protocol %s)", res.Totals.Errors, res.FirstErrors, res.Protocol)
		}
		// Expected hit rates (spec table; GET_NEW_DESTINATION computed
		// exactly from the value rules: 0.625 * 0.85 * 0.2783 = 0.1479).
		// Tolerance: 5 sd with at most P distinct keys behind the draws,
		// plus 2 points of model slack for the insert/delete balance.
		rates := []struct {
			name  string
			hit   float64
			slack float64
		}{
			{"GET_SUBSCRIBER_DATA", 1, 0},
			{"GET_NEW_DESTINATION", 0.1479, 0},
			{"GET_ACCESS_DATA", 0.625, 0},
			{"UPDATE_SUBSCRIBER_DATA", 0.625, 0},
			{"UPDATE_LOCATION", 1, 0},
			{"INSERT_CALL_FORWARDING", 0.3125, 0.02},
			{"DELETE_CALL_FORWARDING", 0.3125, 0.02},
		}
		for _, r := range rates {
			tr := res.Transactions[r.name]
			n := math.Min(float64(tr.Started), p)
			tol := 5*math.Sqrt(r.hit*(1-r.hit)/n) + r.slack
			if tr.Started < minHitSample || math.Abs(tr.HitRate-r.hit) > tol {
				t.Errorf("%s: hit rate %.4f of %d, want %.4f ± %.4f", r.name, tr.HitRate, tr.Started, r.hit, tol)
			}
			// Reads always count; writes count exactly when they hit.
			wantSuccess := tr.HitRate
			if strings.HasPrefix(r.name, "GET_") {
				wantSuccess = 1
			}
			if math.Abs(tr.SuccessRate-wantSuccess) > 1e-9 {
				t.Errorf("%s: success rate %.4f, want %.4f", r.name, tr.SuccessRate, wantSuccess)
			}
			t.Logf("%-24s started %6d hit %.3f success %.3f", r.name, tr.Started, tr.HitRate, tr.SuccessRate)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		ictx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		res, err := bench.Run(ictx, bench.RunOptions{Workload: tm1.New(), DSN: dsn, Clients: 2,
			Rampup: 500 * time.Millisecond, Duration: 10 * time.Second, Seed: 13})
		if !errors.Is(err, bench.ErrInterrupted) {
			t.Fatalf("err = %v, want ErrInterrupted", err)
		}
		if res == nil || !res.Interrupted || res.MeasuredS <= 0 || res.MeasuredS > 1.5 || res.MQTh <= 0 {
			t.Fatalf("partial result %+v", res)
		}
	})
}

// minHitSample is how many times each type must start for the hit-rate
// checks.
const minHitSample = 200

func checkFiles(t *testing.T, dir string, res *bench.Result) {
	t.Helper()
	back, err := bench.ReadResult(filepath.Join(dir, bench.ResultJSON))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, bench.ResultJSON))
	if !bytes.Contains(raw, []byte(`"subscribers": 5000`)) || back.MQTh != res.MQTh || back.Workload != "tm1" || back.Mix != "r80w20" ||
		strings.Contains(back.Target, "password") || back.StartedAt.IsZero() || back.TandemVersion == "" {
		t.Errorf("result.json does not match the run: %s", raw[:min(len(raw), 600)])
	}
	for _, name := range res.TransactionOrder {
		if back.Transactions[name] == nil {
			t.Errorf("result.json lacks %s", name)
		}
	}
	f, err := os.Open(filepath.Join(dir, bench.TimelineCSV))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := 7 + 3*7; len(rows) < 4 || len(rows[0]) != want {
		t.Fatalf("timeline.csv: %d rows, %d columns (want >= 4 rows, %d columns)", len(rows), len(rows[0]), want)
	}
	if rows[0][7] != "GET_SUBSCRIBER_DATA_tps" || rows[0][8] != "GET_SUBSCRIBER_DATA_p50_ms" || rows[0][9] != "GET_SUBSCRIBER_DATA_p99_ms" {
		t.Errorf("timeline.csv header %v", rows[0])
	}
	html, err := os.ReadFile(filepath.Join(dir, bench.ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte("<svg")) || !bytes.Contains(html, []byte("GET_NEW_DESTINATION")) || bytes.Contains(html, []byte("<script")) {
		t.Errorf("report.html lacks charts or loads scripts")
	}
}

// TestSimpleProtocolSQLASCII runs --simple against a SQL_ASCII database,
// where pgx's simple protocol works only because the driver asks for
// client_encoding UTF8.
func TestSimpleProtocolSQLASCII(t *testing.T) {
	ctx := context.Background()
	dsn := pg.NewDB(t, "ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
	load(t, dsn, 200, bench.LoadOptions{})
	res, err := bench.Run(ctx, bench.RunOptions{Workload: tm1.New(), DSN: dsn, Clients: 2, Duration: 500 * time.Millisecond, Simple: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Errors != 0 || res.MQTh <= 0 {
		t.Fatalf("errors %d (%v), MQTh %v", res.Totals.Errors, res.FirstErrors, res.MQTh)
	}
}
