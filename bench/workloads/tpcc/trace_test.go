package tpcc_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/trace"
	"github.com/tandemdb/tandem/bench/workloads/tpcc"
)

// TestTerminalsAndBatchesRecorded records a NewOrder-only run of 4 clients
// on 2 warehouses and reads the trace: each client (a trace session) keeps
// one home warehouse, each warehouse has 2 of them, and their districts do
// not overlap (BenchBase's binding, through bench.Run's client index); each
// committed NewOrder inserts all its lines in one multi-row INSERT followed
// by one stock UPDATE per line (the batch, recorded by the trace's
// BatchTracer). Replayed on a second database with the same population, the
// trace gives the same orders and lines and TPC-C's consistency holds: no
// batched statement was lost from the trace.
func TestTerminalsAndBatchesRecorded(t *testing.T) {
	ctx := context.Background()
	w := tpcc.NewWithConfig(testConfig)
	a, b := newDB(t), newDB(t)
	const warehouses, clients = 2, 4
	load(t, a, w, warehouses)
	load(t, b, w, warehouses)
	var buf bytes.Buffer
	rec, err := trace.NewRecorder(&buf, trace.Header{Workload: w.Name(), Clients: clients, Scale: warehouses})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, a, w, bench.RunOptions{Clients: clients, Mix: "custom", Weights: "NewOrder=1", Retries: 5,
		Duration: 1500 * time.Millisecond, Tracer: rec})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if res.Totals.Errors != 0 || res.Transactions["NewOrder"].Counted < 20 {
		t.Fatalf("recorded run: %d NewOrders committed, errors %v", res.Transactions["NewOrder"].Counted, res.FirstErrors)
	}
	tr, err := trace.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}

	home := map[int]int64{}               // session -> warehouse
	districts := map[int]map[int64]bool{} // session -> districts
	committed := 0
	for _, u := range tr.Units() {
		sts := u.Statements
		if !strings.HasPrefix(sts[0].SQL, "BEGIN") || !strings.HasPrefix(sts[len(sts)-1].SQL, "COMMIT") {
			continue // a rolled back one (the 1 % or an abort)
		}
		committed++
		var olCnt, inserts, updates int
		var lineArgs []any
		for i, st := range sts {
			switch {
			case strings.HasPrefix(st.SQL, "INSERT INTO oorder"):
				wh, d := st.Args[0].(int64), st.Args[1].(int64)
				if h, ok := home[u.Session]; ok && h != wh {
					t.Fatalf("session %d ran NewOrders on warehouses %d and %d", u.Session, h, wh)
				}
				home[u.Session] = wh
				if districts[u.Session] == nil {
					districts[u.Session] = map[int64]bool{}
				}
				districts[u.Session][d] = true
				olCnt = int(st.Args[4].(int64))
			case strings.HasPrefix(st.SQL, "INSERT INTO order_line"):
				inserts++
				lineArgs = st.Args
				for _, up := range sts[i+1 : len(sts)-1] {
					if strings.HasPrefix(up.SQL, "UPDATE stock") {
						updates++
					}
				}
			}
		}
		if inserts != 1 || len(lineArgs) != 9*olCnt || updates != olCnt {
			t.Fatalf("a NewOrder of %d lines sent %d order_line INSERTs (%d parameters) and then %d stock UPDATEs; want 1 (%d) and %d",
				olCnt, inserts, len(lineArgs), updates, 9*olCnt, olCnt)
		}
	}
	if len(home) != clients {
		t.Fatalf("%d sessions ran NewOrders, want %d", len(home), clients)
	}
	perWh := map[int64][]int{}
	for s, wh := range home {
		perWh[wh] = append(perWh[wh], s)
	}
	for wh, ss := range perWh {
		if len(ss) != clients/warehouses {
			t.Errorf("warehouse %d is the home of %d clients, want %d", wh, len(ss), clients/warehouses)
		}
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				for d := range districts[ss[i]] {
					if districts[ss[j]][d] {
						t.Errorf("warehouse %d: district %d used by two clients (%v and %v)", wh, d, districts[ss[i]], districts[ss[j]])
					}
				}
			}
		}
	}

	rr, err := trace.Replay(ctx, tr, trace.ReplayOptions{DSN: b, Clients: clients, Retries: 5, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Failed != 0 {
		t.Fatalf("replay: %+v", rr)
	}
	for _, q := range []string{"SELECT count(*) FROM oorder", "SELECT count(*) FROM order_line", "SELECT sum(s_order_cnt) FROM stock"} {
		var na, nb int64
		if err := connect(t, a).QueryRow(ctx, q).Scan(&na); err != nil {
			t.Fatal(err)
		}
		if err := connect(t, b).QueryRow(ctx, q).Scan(&nb); err != nil {
			t.Fatal(err)
		}
		if na != nb {
			t.Errorf("%s: %d recorded, %d replayed", q, na, nb)
		}
	}
	if err := tpcc.CheckConsistency(ctx, connect(t, b)); err != nil {
		t.Fatalf("replayed database: %v", err)
	}
	t.Logf("%d committed NewOrders in the trace (%d statements); replayed at %.0f tps", committed, len(tr.Statements), rr.TPS)
}
