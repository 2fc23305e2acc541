package tm1_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/tm1"
)

func load(t *testing.T, dsn string, p int, opts bench.LoadOptions) bench.LoadStats {
	t.Helper()
	opts.Workload, opts.DSN, opts.Scale = tm1.New(), dsn, p
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	st, err := bench.Load(context.Background(), opts)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return st
}

// TestPopulationRules loads P subscribers and checks every population rule
// of the spec on the database.
func TestPopulationRules(t *testing.T) {
	const p = 20000
	dsn := newDB(t)
	var progress bytes.Buffer
	st := load(t, dsn, p, bench.LoadOptions{Progress: &progress, BatchSize: 500})
	if !st.UsedCopy {
		t.Errorf("PostgreSQL load did not use COPY")
	}
	if !strings.Contains(progress.String(), "rows") {
		t.Errorf("no progress bar output: %q", progress.String())
	}
	c := connect(t, dsn)
	ctx := context.Background()
	scalar := func(q string) float64 {
		t.Helper()
		var v float64
		if err := c.QueryRow(ctx, q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v
	}
	// Row counts: sums of independent per-subscriber counts, so a tolerance
	// of 5 standard deviations (sd per subscriber: 1.118 for 1..4 rows,
	// sqrt(2.5*1.25 + 1.25*1.5^2) = 2.37 for call_forwarding).
	counts := []struct {
		table string
		mean  float64
		sd    float64
	}{
		{"subscriber", 1, 0},
		{"access_info", 2.5, 1.118},
		{"special_facility", 2.5, 1.118},
		{"call_forwarding", 3.75, 2.37},
	}
	for _, tc := range counts {
		got := scalar("SELECT count(*) FROM " + tc.table)
		want := tc.mean * p
		tol := 5*tc.sd*math.Sqrt(p) + 0.5
		if math.Abs(got-want) > tol {
			t.Errorf("%s: %v rows, want %v ± %.0f", tc.table, got, want, tol)
		} else {
			t.Logf("%s: %v rows (expected %v)", tc.table, got, want)
		}
	}
	// Rules that must hold for every row: each query counts violations.
	rules := []struct {
		name string
		q    string
	}{
		{"s_id is 1..P, each once", "SELECT CASE WHEN min(s_id) = 1 AND max(s_id) = " + strconv.Itoa(p) +
			" AND count(DISTINCT s_id) = count(*) THEN 0 ELSE 1 END FROM subscriber"},
		{"sub_nbr = s_id zero-padded to 15", "SELECT count(*) FROM subscriber WHERE length(sub_nbr) <> 15 OR sub_nbr <> lpad(s_id::text, 15, '0')"},
		{"bit_* in 0..1", "SELECT count(*) FROM subscriber WHERE " + rangeCond("bit_", 10, 0, 1)},
		{"hex_* in 0..15", "SELECT count(*) FROM subscriber WHERE " + rangeCond("hex_", 10, 0, 15)},
		{"byte2_* in 0..255", "SELECT count(*) FROM subscriber WHERE " + rangeCond("byte2_", 10, 0, 255)},
		{"locations in 1..2^31-1", "SELECT count(*) FROM subscriber WHERE msc_location IS NULL OR msc_location < 1 OR vlr_location IS NULL OR vlr_location < 1"},
		{"access_info: 1..4 distinct types per subscriber", "SELECT count(*) FROM (SELECT s_id, count(*) n, count(DISTINCT ai_type) d FROM access_info GROUP BY s_id) x WHERE n <> d OR n > 4"},
		{"every subscriber has access_info", "SELECT count(*) FROM subscriber s WHERE NOT EXISTS (SELECT 1 FROM access_info a WHERE a.s_id = s.s_id)"},
		{"ai_type in 1..4, data in range, letters", "SELECT count(*) FROM access_info WHERE ai_type NOT BETWEEN 1 AND 4 OR data1 NOT BETWEEN 0 AND 255 OR data2 NOT BETWEEN 0 AND 255 OR data3 !~ '^[A-Z]{3}$' OR data4 !~ '^[A-Z]{5}$'"},
		{"special_facility: 1..4 distinct types per subscriber", "SELECT count(*) FROM (SELECT s_id, count(*) n, count(DISTINCT sf_type) d FROM special_facility GROUP BY s_id) x WHERE n <> d OR n > 4"},
		{"every subscriber has special_facility", "SELECT count(*) FROM subscriber s WHERE NOT EXISTS (SELECT 1 FROM special_facility f WHERE f.s_id = s.s_id)"},
		{"sf values in range", "SELECT count(*) FROM special_facility WHERE sf_type NOT BETWEEN 1 AND 4 OR is_active NOT IN (0, 1) OR error_cntrl NOT BETWEEN 0 AND 255 OR data_a NOT BETWEEN 0 AND 255 OR data_b !~ '^[A-Z]{5}$'"},
		{"call_forwarding: start_time in {0,8,16}", "SELECT count(*) FROM call_forwarding WHERE start_time NOT IN (0, 8, 16)"},
		{"call_forwarding: end_time = start_time + 1..8", "SELECT count(*) FROM call_forwarding WHERE end_time - start_time NOT BETWEEN 1 AND 8"},
		{"call_forwarding: 0..3 rows per facility", "SELECT count(*) FROM (SELECT s_id, sf_type, count(*) n FROM call_forwarding GROUP BY s_id, sf_type) x WHERE n > 3"},
		{"numberx: 15 digits", "SELECT count(*) FROM call_forwarding WHERE numberx !~ '^[0-9]{15}$'"},
	}
	for _, r := range rules {
		if v := scalar(r.q); v != 0 {
			t.Errorf("%s: %v violations", r.name, v)
		}
	}
	// Distributions: shares within 5 sd of their binomial expectation.
	shares := []struct {
		name string
		q    string
		want float64
		n    float64
	}{
		{"is_active share 85%", "SELECT avg(is_active) FROM special_facility", 0.85, 2.5 * p},
		{"bit_1 share 50%", "SELECT avg(bit_1) FROM subscriber", 0.5, p},
		{"start_time 0 share 1/3", "SELECT avg(CASE WHEN start_time = 0 THEN 1.0 ELSE 0 END) FROM call_forwarding", 1.0 / 3, 3.75 * p},
		{"access_info 1 row share 1/4", "SELECT avg(CASE WHEN n = 1 THEN 1.0 ELSE 0 END) FROM (SELECT count(*) n FROM access_info GROUP BY s_id) x", 0.25, p},
		{"facilities with no call_forwarding 1/4", "SELECT avg(CASE WHEN NOT EXISTS (SELECT 1 FROM call_forwarding c WHERE c.s_id = f.s_id AND c.sf_type = f.sf_type) THEN 1.0 ELSE 0 END) FROM special_facility f", 0.25, 2.5 * p},
		{"locations above 2^30 share 1/2", "SELECT avg(CASE WHEN vlr_location > 1073741824 THEN 1.0 ELSE 0 END) FROM subscriber", 0.5, p},
	}
	for _, s := range shares {
		got := scalar(s.q)
		tol := 5 * math.Sqrt(s.want*(1-s.want)/s.n)
		if math.Abs(got-s.want) > tol {
			t.Errorf("%s: %.4f, want %.4f ± %.4f", s.name, got, s.want, tol)
		}
	}
	// Shuffled insertion order: the physical order of s_id is not sorted.
	if v := scalar("SELECT count(*) FROM (SELECT s_id, lag(s_id) OVER (ORDER BY ctid) prev FROM subscriber) x WHERE s_id > prev"); v > 0.6*p || v < 0.4*p {
		t.Errorf("subscribers look inserted in order: %v of %d ascending neighbours", v, p)
	}
}

func rangeCond(prefix string, n, lo, hi int) string {
	var parts []string
	for i := 1; i <= n; i++ {
		col := prefix + strconv.Itoa(i)
		parts = append(parts, col+" IS NULL OR "+col+" NOT BETWEEN "+strconv.Itoa(lo)+" AND "+strconv.Itoa(hi))
	}
	return strings.Join(parts, " OR ")
}

// TestLoadRefusesAndDrops checks --drop semantics and that the population
// depends on the seed, not on the worker count or the load method.
func TestLoadRefusesAndDrops(t *testing.T) {
	const p = 1000
	dsn := newDB(t)
	load(t, dsn, p, bench.LoadOptions{Workers: 1, Seed: 9})
	c := connect(t, dsn)
	ctx := context.Background()
	checksum := func() (n int64, sum int64) {
		t.Helper()
		q := `SELECT (SELECT count(*) FROM call_forwarding),
		  (SELECT sum(hashtext(numberx || s_id || sf_type || start_time || end_time)::bigint) FROM call_forwarding)
		  + (SELECT sum(hashtext(sub_nbr || vlr_location || bit_1 || hex_5 || byte2_10)::bigint) FROM subscriber)`
		if err := c.QueryRow(ctx, q).Scan(&n, &sum); err != nil {
			t.Fatal(err)
		}
		return
	}
	n1, sum1 := checksum()

	_, err := bench.Load(ctx, bench.LoadOptions{Workload: tm1.New(), DSN: dsn, Scale: p})
	if !errors.Is(err, bench.ErrDataExists) || !strings.Contains(err.Error(), "--drop") {
		t.Fatalf("second load without --drop: %v, want ErrDataExists naming --drop", err)
	}
	if n, _ := checksum(); n != n1 {
		t.Fatalf("refused load changed data")
	}

	st := load(t, dsn, p, bench.LoadOptions{Drop: true, Workers: 3, Seed: 9, Method: bench.MethodInsert})
	if st.UsedCopy {
		t.Errorf("--method insert used COPY")
	}
	n2, sum2 := checksum()
	if n1 != n2 || sum1 != sum2 {
		t.Errorf("same seed, different workers/method: %d/%d rows, checksum %d/%d", n1, n2, sum1, sum2)
	}
	load(t, dsn, p, bench.LoadOptions{Drop: true, Seed: 10})
	if _, sum3 := checksum(); sum3 == sum1 {
		t.Errorf("different seed gave the same population")
	}
}
