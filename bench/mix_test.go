package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// fakeWorkload has the shape of a workload and no database behind it.
type fakeWorkload struct{}

func (fakeWorkload) Name() string      { return "fake" }
func (fakeWorkload) ScaleName() string { return "rows" }
func (fakeWorkload) Transactions() []TxInfo {
	return []TxInfo{{Name: "READ", ReadOnly: true}, {Name: "WRITE"}, {Name: "OTHER"}}
}
func (fakeWorkload) Mixes() []Mix {
	return []Mix{{Name: "mostly-read", Weights: []float64{80, 15, 5}}, {Name: "writes", Weights: []float64{0, 100, 0}}}
}
func (fakeWorkload) Tables() []string                                    { return []string{"t"} }
func (fakeWorkload) Schema() []string                                    { return []string{"CREATE TABLE t (id INTEGER PRIMARY KEY)"} }
func (fakeWorkload) Populate(context.Context, *LoadEnv) error            { return nil }
func (fakeWorkload) DetectScale(context.Context, *pgx.Conn) (int, error) { return 1, nil }
func (fakeWorkload) NewClient(context.Context, *pgx.Conn, *rand.Rand, ClientParams) (Client, error) {
	return nil, errors.New("fake")
}

func TestResolveMix(t *testing.T) {
	w := fakeWorkload{}
	tests := []struct {
		name, mix, weights string
		want               []float64
		wantErr            error
	}{
		{"default is first", "", "", []float64{80, 15, 5}, nil},
		{"named, case-insensitive", "WRITES", "", []float64{0, 100, 0}, nil},
		{"custom positional", "custom", "1, 2,3", []float64{1, 2, 3}, nil},
		{"custom named", "custom", "write=7,READ=3", []float64{3, 7, 0}, nil},
		{"custom without weights", "custom", "", nil, ErrBadWeights},
		{"custom wrong count", "custom", "1,2", nil, ErrBadWeights},
		{"custom unknown name", "custom", "nope=1", nil, ErrBadWeights},
		{"custom negative", "custom", "1,-2,3", nil, ErrBadWeights},
		{"custom zero sum", "custom", "0,0,0", nil, ErrBadWeights},
		{"custom not a number", "custom", "1,x,3", nil, ErrBadWeights},
		{"weights without custom", "writes", "1,2,3", nil, ErrBadWeights},
		{"unknown mix", "r99w1", "", nil, ErrUnknownMix},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ResolveMix(w, tc.mix, tc.weights)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Weights) != len(tc.want) {
				t.Fatalf("weights %v, want %v", m.Weights, tc.want)
			}
			for i := range tc.want {
				if m.Weights[i] != tc.want[i] {
					t.Fatalf("weights %v, want %v", m.Weights, tc.want)
				}
			}
		})
	}
}

// TestPickerFrequencies checks the mix selection with a chi-square test
// against the weights (fixed seed, so the result is reproducible).
func TestPickerFrequencies(t *testing.T) {
	tests := []struct {
		name    string
		weights []float64
	}{
		{"tm1 r80w20", []float64{35, 10, 35, 2, 14, 2, 2}},
		{"tm1 r20w80", []float64{9, 2, 9, 8, 56, 8, 8}},
		{"read-only with zeros", []float64{33, 33, 34, 0, 0, 0, 0}},
		{"uneven custom", []float64{0.5, 99.5}},
	}
	const n = 200_000
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPicker(tc.weights)
			rng := rand.New(rand.NewPCG(42, 7))
			counts := make([]int, len(tc.weights))
			for range n {
				counts[p.pick(rng)]++
			}
			var sum float64
			for _, w := range tc.weights {
				sum += w
			}
			chi2, df := 0.0, -1
			for i, w := range tc.weights {
				exp := n * w / sum
				if exp == 0 {
					if counts[i] != 0 {
						t.Fatalf("type %d has weight 0 but was picked %d times", i, counts[i])
					}
					continue
				}
				d := float64(counts[i]) - exp
				chi2 += d * d / exp
				df++
			}
			// 99.9% quantiles of chi-square for df = 1..6.
			crit := []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46}[df]
			if chi2 > crit {
				t.Fatalf("chi2 = %.2f > %.2f (df %d): counts %v for weights %v", chi2, crit, df, counts, tc.weights)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want Outcome
	}{
		{&pgconn.PgError{Code: "40001"}, Aborted},
		{&pgconn.PgError{Code: "40P01"}, Aborted},
		{&pgconn.PgError{Code: "23505"}, Failed},
		{&pgconn.PgError{Code: "42P01"}, Failed},
		{errors.New("connection reset"), Failed},
	}
	for _, tc := range tests {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// An 08007 (the commit's outcome unknown) is recorded as Unknown, however
// the workload classified it (TPC-C wraps its errors and says Failed);
// other outcomes are kept.
func TestSettle(t *testing.T) {
	unknown := fmt.Errorf("NewOrder stock updates: %w", &pgconn.PgError{Code: "08007"})
	tests := []struct {
		out  Outcome
		err  error
		want Outcome
	}{
		{Failed, unknown, Unknown},
		{Failed, &pgconn.PgError{Code: "08006"}, Failed},
		{Failed, errors.New("boom"), Failed},
		{Aborted, &pgconn.PgError{Code: "40001"}, Aborted},
		{AllowedError, &pgconn.PgError{Code: "08007"}, AllowedError},
		{Counted, nil, Counted},
	}
	for _, tc := range tests {
		if got := settle(tc.out, tc.err); got != tc.want {
			t.Errorf("settle(%v, %v) = %v, want %v", tc.out, tc.err, got, tc.want)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://bob:secret@h:5432/db?sslmode=disable", "postgres://bob@h:5432/db?sslmode=disable"},
		{"postgres://bob@h/db", "postgres://bob@h/db"},
		{"postgres://h/db?password=secret&sslmode=disable", "postgres://h/db?sslmode=disable"},
		{"host=h user=bob password=secret dbname=db", "host=h user=bob dbname=db"},
		{"host=h password='se cret' dbname=db", "host=h dbname=db"},
	}
	for _, tc := range tests {
		if got := RedactDSN(tc.in); got != tc.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRegistry(t *testing.T) {
	if _, err := Lookup("no-such-workload"); !errors.Is(err, ErrUnknownWorkload) {
		t.Fatalf("err = %v, want ErrUnknownWorkload", err)
	}
}
