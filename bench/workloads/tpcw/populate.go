package tpcw

import (
	"context"
	"math/rand/v2"

	"github.com/tandemdb/tandem/bench"
)

type job struct{ kind, lo, hi int } // ids lo..hi-1

const (
	jobCountries = iota
	jobAuthors
	jobItems
	jobAddresses
	jobCustomers
	jobOrders
)

var (
	countryColumns  = []string{"co_id", "co_name", "co_exchange", "co_currency"}
	authorColumns   = []string{"a_id", "a_fname", "a_lname", "a_mname", "a_dob", "a_bio"}
	itemColumns     = []string{"i_id", "i_title", "i_a_id", "i_pub_date", "i_publisher", "i_subject", "i_desc", "i_related1", "i_related2", "i_related3", "i_related4", "i_related5", "i_thumbnail", "i_image", "i_srp", "i_cost", "i_avail", "i_stock", "i_isbn", "i_page", "i_backing", "i_dimensions"}
	addressColumns  = []string{"addr_id", "addr_street1", "addr_street2", "addr_city", "addr_state", "addr_zip", "addr_co_id"}
	customerColumns = []string{"c_id", "c_uname", "c_passwd", "c_fname", "c_lname", "c_addr_id", "c_phone", "c_email", "c_since", "c_last_login", "c_login", "c_expiration", "c_discount", "c_balance", "c_ytd_pmt", "c_birthdate", "c_data"}
	orderColumns    = []string{"o_id", "o_c_id", "o_date", "o_sub_total", "o_tax", "o_total", "o_ship_type", "o_ship_date", "o_bill_addr_id", "o_ship_addr_id", "o_status"}
	lineColumns     = []string{"ol_id", "ol_o_id", "ol_i_id", "ol_qty", "ol_discount", "ol_comments"}
	ccColumns       = []string{"cx_o_id", "cx_type", "cx_num", "cx_name", "cx_expire", "cx_auth_id", "cx_xact_amt", "cx_xact_date", "cx_co_id"}
)

// Populate implements bench.Workload: TPC-W's population (clause 4.7) for
// env.Scale EBs, ids from 1, in batches of env.BatchSize rows of the leading
// table (an order comes with its lines and card transaction). Each batch
// draws from its own random source (seed, batch number), so the population
// depends on the seed, scale and batch size only.
func (w *Workload) Populate(ctx context.Context, env *bench.LoadEnv) error {
	items, authors := w.cfg.Items, Authors(w.cfg.Items)
	customers, addresses, orders := Customers(env.Scale), Addresses(env.Scale), Orders(env.Scale)
	env.ExpectRows(int64(Countries+authors+items+addresses+customers) + 5*int64(orders))
	batch := max(1, env.BatchSize)
	jobs := []job{{kind: jobCountries, lo: 1, hi: Countries + 1}}
	for _, k := range []struct{ kind, n int }{{jobAuthors, authors}, {jobItems, items}, {jobAddresses, addresses}, {jobCustomers, customers}, {jobOrders, orders}} {
		for lo := 1; lo <= k.n; lo += batch {
			jobs = append(jobs, job{kind: k.kind, lo: lo, hi: min(k.n+1, lo+batch)})
		}
	}
	return env.Parallel(ctx, len(jobs), func(b int, rw *bench.RowWriter) error {
		rng := rand.New(rand.NewPCG(env.Seed, uint64(b)+1))
		j := jobs[b]
		switch j.kind {
		case jobCountries:
			t := rw.Table("country", countryColumns...)
			for id := j.lo; id < j.hi; id++ {
				t.Add(id, "Country "+DigSyl(id), float64(1+rng.IntN(1000000))/1000, aString(rng, 3, 18))
			}
		case jobAuthors:
			t := rw.Table("author", authorColumns...)
			for id := j.lo; id < j.hi; id++ {
				t.Add(id, aString(rng, 3, 20), DigSyl(id), aString(rng, 1, 20), dateBefore(rng, 36500), aString(rng, 125, 500))
			}
		case jobItems:
			t := rw.Table("item", itemColumns...)
			row := make([]any, len(itemColumns))
			for id := j.lo; id < j.hi; id++ {
				author := id // the first Authors items have one author each, the rest a random one
				if id > authors {
					author = 1 + rng.IntN(authors)
				}
				srp := money(rng, 1, 9999.99)
				row[0], row[1], row[2], row[3], row[4], row[5], row[6] = id, title(rng, id), author, dateBefore(rng, 25000), aString(rng, 14, 60), Subjects[rng.IntN(len(Subjects))], aString(rng, 100, 500)
				for k, r := range related(rng, id, items) {
					row[7+k] = r
				}
				row[12], row[13] = "img"+DigSyl(id%1000)+"/thumb_"+itoa(id)+".gif", "img"+DigSyl(id%1000)+"/image_"+itoa(id)+".gif"
				row[14], row[15], row[16], row[17] = srp, float64(int(srp*100*(0.5+rng.Float64()/2)))/100, dateBefore(rng, 30), 10+rng.IntN(21)
				row[18], row[19], row[20], row[21] = aString(rng, 13, 13), 20+rng.IntN(9980), backings[rng.IntN(len(backings))], "10x20x3"
				t.Add(row...)
			}
		case jobAddresses:
			t := rw.Table("address", addressColumns...)
			for id := j.lo; id < j.hi; id++ {
				t.Add(id, aString(rng, 15, 40), aString(rng, 15, 40), aString(rng, 4, 30), aString(rng, 2, 20), aString(rng, 5, 10), 1+rng.IntN(Countries))
			}
		case jobCustomers:
			t := rw.Table("customer", customerColumns...)
			row := make([]any, len(customerColumns))
			for id := j.lo; id < j.hi; id++ {
				uname := DigSyl(id)
				since := dateBefore(rng, 730)
				row[0], row[1], row[2], row[3], row[4], row[5] = id, uname, lower(uname), aString(rng, 8, 15), aString(rng, 8, 15), 1+rng.IntN(addresses)
				row[6], row[7], row[8], row[9] = nString(rng, 9+rng.IntN(8)), uname+"@"+aString(rng, 2, 9)+".com", since, since
				row[10], row[11], row[12], row[13], row[14] = timeBefore(rng, 1), loadDay.Add(2*3600e9).Format("2006-01-02 15:04:05"), float64(rng.IntN(51))/100, 0.0, money(rng, 0, 999.99)
				row[15], row[16] = dateBefore(rng, 36500), aString(rng, 100, 500)
				t.Add(row...)
			}
		case jobOrders:
			ot := rw.Table("orders", orderColumns...)
			lt := rw.Table("order_line", lineColumns...)
			ct := rw.Table("cc_xacts", ccColumns...)
			for id := j.lo; id < j.hi; id++ {
				date := timeBefore(rng, 60)
				sub := money(rng, 10, 9999.99)
				tax := float64(int(sub*8.25)) / 100
				total := sub + tax + 3 + float64(1+rng.IntN(5))
				ot.Add(id, 1+rng.IntN(customers), date, sub, tax, total, shipTypes[rng.IntN(len(shipTypes))], timeBefore(rng, 7),
					1+rng.IntN(addresses), 1+rng.IntN(addresses), orderStatus[rng.IntN(len(orderStatus))])
				for n := range 1 + rng.IntN(5) {
					lt.Add(n+1, id, 1+rng.IntN(items), 1+rng.IntN(300), float64(rng.IntN(4))/100, aString(rng, 20, 100))
				}
				ct.Add(id, ccTypes[rng.IntN(len(ccTypes))], nString(rng, 16), aString(rng, 14, 30), dateBefore(rng, 0),
					aString(rng, 15, 15), total, date, 1+rng.IntN(Countries))
			}
		}
		return nil
	})
}

// related draws an item's five related items: distinct, not the item itself.
func related(rng *rand.Rand, id, items int) [5]int {
	var r [5]int
	for k := 0; k < 5; {
		v := 1 + rng.IntN(items)
		dup := v == id && items > 5
		for _, p := range r[:k] {
			dup = dup || (p == v && items > 5)
		}
		if !dup {
			r[k] = v
			k++
		}
	}
	return r
}
