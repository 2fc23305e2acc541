package tm1_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/tm1"
)

func TestA(t *testing.T) {
	tests := []struct{ p, a int }{
		{1, 65535}, {100_000, 65535}, {1_000_000, 65535}, {1_000_001, 1048575},
		{10_000_000, 1048575}, {10_000_001, 2097151}, {50_000_000, 2097151},
	}
	for _, tc := range tests {
		if got := tm1.A(tc.p); got != tc.a {
			t.Errorf("A(%d) = %d, want %d", tc.p, got, tc.a)
		}
	}
}

// nurandExact enumerates P(NURand(a,1,p) = v) for v in 1..p.
func nurandExact(a, p int) []float64 {
	prob := make([]float64, p+1)
	w := 1 / float64((a+1)*p)
	for r1 := 0; r1 <= a; r1++ {
		for r2 := 1; r2 <= p; r2++ {
			prob[((r1|r2)%p)+1] += w
		}
	}
	return prob
}

// chi2 of observed counts against expected probabilities over 1..p.
func chi2(counts []int, prob []float64, n int) (float64, int) {
	var x float64
	df := -1
	for v := 1; v < len(prob); v++ {
		e := prob[v] * float64(n)
		if e == 0 {
			continue
		}
		d := float64(counts[v]) - e
		x += d * d / e
		df++
	}
	return x, df
}

// TestNURand checks range, the exact distribution (chi-square against the
// enumerated probabilities) and its non-uniformity (chi-square against the
// uniform distribution must fail by far), with a fixed seed.
func TestNURand(t *testing.T) {
	const p, n = 1000, 400_000
	a := tm1.A(p)
	exact := nurandExact(a, p)
	uniform := make([]float64, p+1)
	for v := 1; v <= p; v++ {
		uniform[v] = 1 / float64(p)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, p+1)
	for range n {
		v := tm1.NURand(rng, a, 1, p)
		if v < 1 || v > p {
			t.Fatalf("NURand(%d,1,%d) = %d out of range", a, p, v)
		}
		counts[v]++
	}
	x, df := chi2(counts, exact, n)
	// Mean df, sd sqrt(2 df): 5 sd is far beyond chance.
	if limit := float64(df) + 5*math.Sqrt(2*float64(df)); x > limit {
		t.Errorf("chi2 against the exact NURand distribution = %.0f > %.0f (df %d)", x, limit, df)
	}
	xu, _ := chi2(counts, uniform, n)
	if xu < 10*float64(df) {
		t.Errorf("chi2 against uniform = %.0f: NURand is not skewed", xu)
	}
	// The hottest key is drawn far more often than average.
	maxc := 0
	for _, c := range counts {
		maxc = max(maxc, c)
	}
	if ratio := float64(maxc) / (float64(n) / p); ratio < 2 {
		t.Errorf("hottest key only %.2fx the mean frequency", ratio)
	}
}

func TestKeys(t *testing.T) {
	tests := []struct {
		name    string
		p       int
		uniform bool
	}{
		{"nurand P=5000", 5000, false},
		{"uniform P=5000", 5000, true},
		{"nurand P=1", 1, false},
		{"nurand P=2000000", 2_000_000, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := tm1.NewKeys(rand.New(rand.NewPCG(3, 4)), tc.p, tc.uniform)
			seenStart := map[int]bool{}
			seenEnd := map[int]bool{}
			counts := make([]int, tc.p+1)
			const n = 100_000
			for range n {
				sid := k.SID()
				if sid < 1 || sid > tc.p {
					t.Fatalf("SID %d out of 1..%d", sid, tc.p)
				}
				if tc.p <= 5000 {
					counts[sid]++
				}
				if ty := k.Type(); ty < 1 || ty > 4 {
					t.Fatalf("type %d", ty)
				}
				st := k.StartTime()
				seenStart[st] = true
				et := k.EndTimeArg()
				seenEnd[et] = true
				if et < 1 || et > 24 {
					t.Fatalf("end_time arg %d out of 1..24", et)
				}
				if b := k.Bit(); b < 0 || b > 1 {
					t.Fatalf("bit %d", b)
				}
				if by := k.Byte(); by < 0 || by > 255 {
					t.Fatalf("byte %d", by)
				}
				if l := k.Location(); l < 1 || l > math.MaxInt32 {
					t.Fatalf("location %d out of 1..2^31-1", l)
				}
			}
			if len(seenStart) != 3 || !seenStart[0] || !seenStart[8] || !seenStart[16] {
				t.Errorf("start times %v, want {0,8,16}", seenStart)
			}
			if len(seenEnd) != 24 {
				t.Errorf("end_time args cover %d values, want 1..24", len(seenEnd))
			}
			if tc.p == 5000 {
				uniform := make([]float64, tc.p+1)
				for v := 1; v <= tc.p; v++ {
					uniform[v] = 1 / float64(tc.p)
				}
				x, df := chi2(counts, uniform, n)
				skewed := x > 3*float64(df)
				if skewed == tc.uniform {
					t.Errorf("uniform=%v but chi2 against uniform = %.0f (df %d)", tc.uniform, x, df)
				}
			}
		})
	}
}

func TestSubNbr(t *testing.T) {
	tests := []struct {
		sid  int
		want string
	}{
		{1, "000000000000001"}, {100000, "000000000100000"}, {0, "000000000000000"},
		{123456789012345, "123456789012345"},
	}
	for _, tc := range tests {
		if got := tm1.SubNbr(tc.sid); got != tc.want {
			t.Errorf("SubNbr(%d) = %q, want %q", tc.sid, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	if d := tm1.Digits(rng, 15); len(d) != 15 || strings.Trim(d, "0123456789") != "" {
		t.Errorf("Digits = %q", d)
	}
	if l := tm1.Letters(rng, 5); len(l) != 5 || strings.Trim(l, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		t.Errorf("Letters = %q", l)
	}
}

func TestWorkloadShape(t *testing.T) {
	w, err := bench.Lookup("TM1")
	if err != nil {
		t.Fatal(err)
	}
	txs := w.Transactions()
	if len(txs) != 7 {
		t.Fatalf("%d transactions", len(txs))
	}
	want := map[string][]float64{
		"r80w20":    {35, 10, 35, 2, 14, 2, 2},
		"r20w80":    {9, 2, 9, 8, 56, 8, 8},
		"read-only": {33, 33, 34, 0, 0, 0, 0},
	}
	for name, ws := range want {
		m, err := bench.ResolveMix(w, name, "")
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for i, v := range m.Weights {
			sum += v
			if v != ws[i] {
				t.Errorf("mix %s weight of %s = %v, want %v", name, txs[i].Name, v, ws[i])
			}
			if v > 0 && name == "read-only" && !txs[i].ReadOnly {
				t.Errorf("read-only mix includes %s", txs[i].Name)
			}
		}
		if sum != 100 {
			t.Errorf("mix %s sums to %v", name, sum)
		}
	}
	if m, _ := bench.ResolveMix(w, "", ""); m.Name != "r80w20" {
		t.Errorf("default mix %s", m.Name)
	}
	// Portability: the schema and statements use no PostgreSQL-only syntax.
	stmts := w.Schema()
	for _, name := range []string{"tm1_get_subscriber_data", "tm1_get_new_destination", "tm1_get_access_data",
		"tm1_update_subscriber_bit", "tm1_update_special_facility", "tm1_update_location", "tm1_select_s_id",
		"tm1_select_sf_type", "tm1_insert_call_forwarding", "tm1_delete_call_forwarding"} {
		s, ok := tm1.Statement(name)
		if !ok {
			t.Fatalf("no statement %s", name)
		}
		stmts = append(stmts, s)
	}
	for _, s := range stmts {
		for _, bad := range []string{"::", "RETURNING", "ON CONFLICT", "SERIAL", "ILIKE", "CASCADE", "IF NOT EXISTS", "?"} {
			if strings.Contains(strings.ToUpper(s), bad) {
				t.Errorf("non-portable %q in %s", bad, s)
			}
		}
	}
}
