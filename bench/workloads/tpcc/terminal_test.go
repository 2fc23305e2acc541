package tpcc_test

import (
	"fmt"
	"testing"

	"github.com/tandemdb/tandem/bench/workloads/tpcc"
)

// TestTerminalOf checks BenchBase's binding for a range of terminal and
// warehouse counts: every terminal's home is index mod W + 1, the warehouses
// get terminal counts that differ by at most one, each terminal's range lies
// in 1..10, the ranges of a warehouse's terminals cover 1..10 without gaps,
// and they are disjoint (each one a district of its own or more) while the
// warehouse has at most ten terminals.
func TestTerminalOf(t *testing.T) {
	for _, tc := range []struct{ terminals, warehouses int }{
		{1, 1}, {4, 2}, {4, 1}, {3, 2}, {10, 7}, {7, 10}, {10, 1}, {11, 1}, {20, 2}, {23, 2}, {64, 4}, {2, 5},
	} {
		t.Run(fmt.Sprintf("%dT-%dW", tc.terminals, tc.warehouses), func(t *testing.T) {
			perWh := map[int][]tpcc.Terminal{}
			for i := range tc.terminals {
				term := tpcc.TerminalOf(i, tc.terminals, tc.warehouses)
				if want := i%tc.warehouses + 1; term.Warehouse != want {
					t.Errorf("terminal %d: warehouse %d, want %d", i, term.Warehouse, want)
				}
				if term.DistrictLo < 1 || term.DistrictHi > tpcc.DistrictsPerWarehouse || term.DistrictLo > term.DistrictHi {
					t.Errorf("terminal %d: districts %d..%d", i, term.DistrictLo, term.DistrictHi)
				}
				perWh[term.Warehouse] = append(perWh[term.Warehouse], term)
			}
			lo, hi := tc.terminals, 0
			for w := 1; w <= tc.warehouses; w++ {
				lo, hi = min(lo, len(perWh[w])), max(hi, len(perWh[w]))
			}
			if hi-lo > 1 {
				t.Errorf("terminals per warehouse from %d to %d: not spread evenly", lo, hi)
			}
			for w, terms := range perWh {
				covered := map[int]int{}
				for _, term := range terms {
					for d := term.DistrictLo; d <= term.DistrictHi; d++ {
						covered[d]++
					}
				}
				for d := 1; d <= tpcc.DistrictsPerWarehouse; d++ {
					if covered[d] == 0 {
						t.Errorf("warehouse %d: district %d belongs to none of its %d terminals %v", w, d, len(terms), terms)
					}
					if len(terms) <= tpcc.DistrictsPerWarehouse && covered[d] > 1 {
						t.Errorf("warehouse %d: district %d in %d of its %d terminals' ranges %v", w, d, covered[d], len(terms), terms)
					}
				}
			}
		})
	}
	// BenchBase's split of 2 terminals on a warehouse: 1-5 and 6-10; of 3: 1-3, 4-6, 7-10.
	for _, tc := range []struct {
		i, n, w int
		want    tpcc.Terminal
	}{
		{0, 4, 2, tpcc.Terminal{Warehouse: 1, DistrictLo: 1, DistrictHi: 5}},
		{1, 4, 2, tpcc.Terminal{Warehouse: 2, DistrictLo: 1, DistrictHi: 5}},
		{2, 4, 2, tpcc.Terminal{Warehouse: 1, DistrictLo: 6, DistrictHi: 10}},
		{3, 4, 2, tpcc.Terminal{Warehouse: 2, DistrictLo: 6, DistrictHi: 10}},
		{2, 3, 1, tpcc.Terminal{Warehouse: 1, DistrictLo: 7, DistrictHi: 10}},
		{1, 3, 1, tpcc.Terminal{Warehouse: 1, DistrictLo: 4, DistrictHi: 6}},
		{0, 20, 1, tpcc.Terminal{Warehouse: 1, DistrictLo: 1, DistrictHi: 1}},
		{1, 20, 1, tpcc.Terminal{Warehouse: 1, DistrictLo: 1, DistrictHi: 1}},
		{19, 20, 1, tpcc.Terminal{Warehouse: 1, DistrictLo: 10, DistrictHi: 10}},
	} {
		if got := tpcc.TerminalOf(tc.i, tc.n, tc.w); got != tc.want {
			t.Errorf("TerminalOf(%d, %d, %d) = %+v, want %+v", tc.i, tc.n, tc.w, got, tc.want)
		}
	}
}
