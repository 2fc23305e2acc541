package tpcc

// Terminal is a client's binding, as BenchBase's TPCCBenchmark.createTerminals
// makes it: a home warehouse and the range of that warehouse's districts its
// transactions draw from (NewOrder, Payment, OrderStatus and StockLevel; a
// Payment's customer may still be in another district or warehouse, and
// Delivery serves the home warehouse's districts 1 .. DistrictHi, as
// BenchBase's Delivery does).
type Terminal struct {
	// Warehouse is the home warehouse, 1..W.
	Warehouse int
	// DistrictLo and DistrictHi bound the districts, 1..10, inclusive.
	DistrictLo, DistrictHi int
}

// TerminalOf binds client index i of n clients on w warehouses: home
// warehouse i mod w + 1 (terminals spread evenly over the warehouses), and,
// among the k terminals of that warehouse, the j-th (j = i div w) gets
// districts floor(j*10/k)+1 .. floor((j+1)*10/k), the last one up to 10:
// BenchBase's split, so that the terminals of a warehouse never queue on one
// district's d_next_o_id while there are no more terminals than districts.
// With more than ten terminals on a warehouse the range of some would be
// empty; BenchBase's randomNumber(lo, lo-1) then always draws lo, so such a
// terminal gets district lo alone, shared with its neighbour.
// BenchBase assigns warehouses in blocks of consecutive terminals, not
// round-robin; the number of terminals per warehouse is the same.
func TerminalOf(i, n, w int) Terminal {
	if w < 1 {
		w = 1
	}
	if n < 1 {
		n = 1
	}
	home := i%w + 1
	k := n / w // terminals on this warehouse
	if i%w < n%w {
		k++
	}
	j := i / w
	per := float64(DistrictsPerWarehouse) / float64(k)
	lo := int(float64(j)*per) + 1
	hi := int(float64(j+1) * per)
	if j+1 == k {
		hi = DistrictsPerWarehouse
	}
	if hi < lo {
		hi = lo
	}
	return Terminal{Warehouse: home, DistrictLo: lo, DistrictHi: hi}
}
