package bench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MixNames lists the mixes of w, for help texts and errors.
func MixNames(w Workload) []string {
	var names []string
	for _, m := range w.Mixes() {
		names = append(names, m.Name)
	}
	return append(names, "custom")
}

// ResolveMix returns the mix named name (case-insensitive; "" means the
// workload's default). The name "custom" takes its weights from weights,
// which is either a comma-separated list with one number per transaction type
// in the order of Transactions ("35,10,35,2,14,2,2") or NAME=weight pairs
// ("GET_SUBSCRIBER_DATA=50,UPDATE_LOCATION=50"; types not named get 0).
func ResolveMix(w Workload, name, weights string) (Mix, error) {
	txs := w.Transactions()
	if name == "" {
		name = w.Mixes()[0].Name
	}
	if strings.EqualFold(name, "custom") {
		ws, err := ParseWeights(txs, weights)
		if err != nil {
			return Mix{}, err
		}
		return Mix{Name: "custom", Description: "custom weights " + weights, Weights: ws}, nil
	}
	if weights != "" {
		return Mix{}, fmt.Errorf("%w: --weights is only for --mix custom (got --mix %s)", ErrBadWeights, name)
	}
	for _, m := range w.Mixes() {
		if strings.EqualFold(m.Name, name) {
			if len(m.Weights) != len(txs) {
				return Mix{}, fmt.Errorf("workload %s: mix %s has %d weights for %d transaction types", w.Name(), m.Name, len(m.Weights), len(txs))
			}
			return m, nil
		}
	}
	return Mix{}, fmt.Errorf("%w %q (--mix; %s has: %s)", ErrUnknownMix, name, w.Name(), strings.Join(MixNames(w), ", "))
}

// ParseWeights parses the --weights syntax described at ResolveMix.
func ParseWeights(txs []TxInfo, s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: --mix custom needs --weights, e.g. --weights %s", ErrBadWeights, exampleWeights(txs))
	}
	out := make([]float64, len(txs))
	parts := strings.Split(s, ",")
	named := strings.Contains(s, "=")
	if !named && len(parts) != len(txs) {
		return nil, fmt.Errorf("%w: --weights has %d numbers, want %d (one per transaction type: %s) or NAME=weight pairs",
			ErrBadWeights, len(parts), len(txs), txNames(txs))
	}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		idx := i
		if named {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				return nil, fmt.Errorf("%w: --weights: %q is not NAME=weight", ErrBadWeights, p)
			}
			idx = -1
			for j, t := range txs {
				if strings.EqualFold(strings.TrimSpace(k), t.Name) {
					idx = j
				}
			}
			if idx < 0 {
				return nil, fmt.Errorf("%w: --weights: unknown transaction %q (have %s)", ErrBadWeights, k, txNames(txs))
			}
			p = strings.TrimSpace(v)
		}
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f != f {
			return nil, fmt.Errorf("%w: --weights: %q is not a non-negative number", ErrBadWeights, p)
		}
		out[idx] = f
	}
	var sum float64
	for _, f := range out {
		sum += f
	}
	if sum <= 0 {
		return nil, fmt.Errorf("%w: --weights sum to 0", ErrBadWeights)
	}
	return out, nil
}

func txNames(txs []TxInfo) string {
	var n []string
	for _, t := range txs {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

func exampleWeights(txs []TxInfo) string {
	var n []string
	for range txs {
		n = append(n, "1")
	}
	return strings.Join(n, ",")
}

// picker draws transaction types with the mix's probabilities.
type picker struct {
	cum []float64 // cumulative, normalised to end at 1
}

func newPicker(weights []float64) picker {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	cum := make([]float64, len(weights))
	var acc float64
	for i, w := range weights {
		acc += w
		cum[i] = acc / sum
	}
	// Guard against rounding: the last type with weight > 0 ends at exactly 1.
	for i := len(cum) - 1; i >= 0; i-- {
		if weights[i] > 0 {
			cum[i] = 1
			break
		}
	}
	return picker{cum: cum}
}

func (p picker) pick(rng *rand.Rand) TxType {
	u := rng.Float64()
	for i, c := range p.cum {
		if u < c {
			return TxType(i)
		}
	}
	return TxType(len(p.cum) - 1)
}
