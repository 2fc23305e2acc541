package tpcc

import (
	"context"
	"math/rand/v2"

	"github.com/tandemdb/tandem/bench"
)

var (
	warehouseColumns = []string{"w_id", "w_ytd", "w_tax", "w_name", "w_street_1", "w_street_2", "w_city", "w_state", "w_zip"}
	itemColumns      = []string{"i_id", "i_name", "i_price", "i_data", "i_im_id"}
	stockColumns     = []string{"s_w_id", "s_i_id", "s_quantity", "s_ytd", "s_order_cnt", "s_remote_cnt", "s_data",
		"s_dist_01", "s_dist_02", "s_dist_03", "s_dist_04", "s_dist_05", "s_dist_06", "s_dist_07", "s_dist_08", "s_dist_09", "s_dist_10"}
	districtColumns = []string{"d_w_id", "d_id", "d_ytd", "d_tax", "d_next_o_id", "d_name", "d_street_1", "d_street_2", "d_city", "d_state", "d_zip"}
	customerColumns = []string{"c_w_id", "c_d_id", "c_id", "c_discount", "c_credit", "c_last", "c_first", "c_credit_lim", "c_balance",
		"c_ytd_payment", "c_payment_cnt", "c_delivery_cnt", "c_street_1", "c_street_2", "c_city", "c_state", "c_zip", "c_phone",
		"c_since", "c_middle", "c_data"}
	historyColumns   = []string{"h_c_id", "h_c_d_id", "h_c_w_id", "h_d_id", "h_w_id", "h_date", "h_amount", "h_data"}
	orderColumns     = []string{"o_w_id", "o_d_id", "o_id", "o_c_id", "o_carrier_id", "o_ol_cnt", "o_all_local", "o_entry_d"}
	newOrderColumns  = []string{"no_w_id", "no_d_id", "no_o_id"}
	orderLineColumns = []string{"ol_w_id", "ol_d_id", "ol_o_id", "ol_number", "ol_i_id", "ol_delivery_d", "ol_amount",
		"ol_supply_w_id", "ol_quantity", "ol_dist_info"}
)

// loadTime is the population's timestamp (c_since, h_date, o_entry_d,
// ol_delivery_d): fixed, so a population depends on the seed only.
const loadTime = "2026-01-01 00:00:00"

// job is one loading transaction.
type job struct {
	kind     int // jobItems, jobWarehouse, jobStock, jobDistrict
	w, d, lo int // warehouse, district, first id (items, stock)
}

const (
	jobItems = iota
	jobWarehouse
	jobStock
	jobDistrict
)

// Populate implements bench.Workload: clause 4.3.3.1's population for
// env.Scale warehouses. Items and stock are loaded env.BatchSize rows per
// transaction; a warehouse with its districts is one transaction, and each
// district's customers, history, orders, order lines and new orders another.
// Each job draws from its own random source (seed, job number), so the
// population depends on the seed, scale and batch size only.
func (w *Workload) Populate(ctx context.Context, env *bench.LoadEnv) error {
	cfg := w.cfg
	wh := env.Scale
	cpd := cfg.CustomersPerDistrict
	env.ExpectRows(int64(cfg.Items) + int64(wh)*(1+int64(cfg.Items)+DistrictsPerWarehouse*(int64(cpd)*13+int64(cpd)*3/10)))
	batch := max(1, env.BatchSize)
	var jobs []job
	for lo := 1; lo <= cfg.Items; lo += batch {
		jobs = append(jobs, job{kind: jobItems, lo: lo})
	}
	for wid := 1; wid <= wh; wid++ {
		jobs = append(jobs, job{kind: jobWarehouse, w: wid})
		for d := 1; d <= DistrictsPerWarehouse; d++ {
			jobs = append(jobs, job{kind: jobDistrict, w: wid, d: d})
		}
		for lo := 1; lo <= cfg.Items; lo += batch {
			jobs = append(jobs, job{kind: jobStock, w: wid, lo: lo})
		}
	}
	return env.Parallel(ctx, len(jobs), func(b int, rw *bench.RowWriter) error {
		rng := rand.New(rand.NewPCG(env.Seed, uint64(b)+1))
		j := jobs[b]
		switch j.kind {
		case jobItems:
			t := rw.Table("item", itemColumns...)
			for id := j.lo; id < j.lo+batch && id <= cfg.Items; id++ {
				t.Add(id, aString(rng, 14, 24), money(rng, 1, 100), data(rng, 26, 50), randInt(rng, 1, 10000))
			}
		case jobWarehouse:
			rw.Table("warehouse", warehouseColumns...).Add(j.w, 300000.0, fraction(rng, 0.2), aString(rng, 6, 10),
				aString(rng, 10, 20), aString(rng, 10, 20), aString(rng, 10, 20), aString(rng, 2, 2), zip(rng))
			t := rw.Table("district", districtColumns...)
			for d := 1; d <= DistrictsPerWarehouse; d++ {
				t.Add(j.w, d, 30000.0, fraction(rng, 0.2), cpd+1, aString(rng, 6, 10),
					aString(rng, 10, 20), aString(rng, 10, 20), aString(rng, 10, 20), aString(rng, 2, 2), zip(rng))
			}
		case jobStock:
			t := rw.Table("stock", stockColumns...)
			row := make([]any, len(stockColumns))
			for id := j.lo; id < j.lo+batch && id <= cfg.Items; id++ {
				row[0], row[1], row[2], row[3], row[4], row[5], row[6] = j.w, id, randInt(rng, 10, 100), 0.0, 0, 0, data(rng, 26, 50)
				for k := range 10 {
					row[7+k] = aString(rng, 24, 24)
				}
				t.Add(row...)
			}
		case jobDistrict:
			populateDistrict(rng, rw, cfg, j.w, j.d)
		}
		return nil
	})
}

// populateDistrict loads one district's customers with their history rows,
// and its initial orders with their order lines and new orders.
func populateDistrict(rng *rand.Rand, rw *bench.RowWriter, cfg Config, w, d int) {
	cpd := cfg.CustomersPerDistrict
	cust := rw.Table("customer", customerColumns...)
	hist := rw.Table("history", historyColumns...)
	row := make([]any, len(customerColumns))
	for c := 1; c <= cpd; c++ {
		var last string
		if c <= 1000 {
			last = LastName(c - 1)
		} else {
			last = LastName(NURand(rng, ALastName, cLoad, 0, 999))
		}
		credit := "GC"
		if rng.IntN(10) == 0 {
			credit = "BC"
		}
		row[0], row[1], row[2], row[3], row[4], row[5], row[6] = w, d, c, fraction(rng, 0.5), credit, last, aString(rng, 8, 16)
		row[7], row[8], row[9], row[10], row[11] = 50000.0, -10.0, 10.0, 1, 0
		row[12], row[13], row[14], row[15], row[16] = aString(rng, 10, 20), aString(rng, 10, 20), aString(rng, 10, 20), aString(rng, 2, 2), zip(rng)
		row[17], row[18], row[19], row[20] = nString(rng, 16, 16), loadTime, "OE", aString(rng, 300, 500)
		cust.Add(row...)
		hist.Add(c, d, w, d, w, loadTime, 10.0, aString(rng, 12, 24))
	}
	// o_c_id is a random permutation of the customer ids.
	perm := rng.Perm(cpd)
	first := cfg.FirstNewOrder()
	ord := rw.Table("oorder", orderColumns...)
	nord := rw.Table("new_order", newOrderColumns...)
	ol := rw.Table("order_line", orderLineColumns...)
	for o := 1; o <= cpd; o++ {
		cnt := randInt(rng, 5, 15)
		delivered := o < first
		var carrier any
		if delivered {
			carrier = randInt(rng, 1, 10)
		}
		ord.Add(w, d, o, perm[o-1]+1, carrier, cnt, 1, loadTime)
		if !delivered {
			nord.Add(w, d, o)
		}
		for n := 1; n <= cnt; n++ {
			var deliveryD any
			amount := 0.0
			if delivered {
				deliveryD = loadTime
			} else {
				amount = money(rng, 0.01, 9999.99)
			}
			ol.Add(w, d, o, n, randInt(rng, 1, cfg.Items), deliveryD, amount, w, 5, aString(rng, 24, 24))
		}
	}
}
