package tm1_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/tm1"
)

// oneSubscriberDB creates the TM1 schema with a single subscriber (s_id 1,
// bit_1 = 7 as a marker no transaction writes). With P = 1 every transaction
// addresses subscriber 1, so each case below decides the outcome by which
// facility and forwarding rows exist, whatever the random types and times.
func oneSubscriberDB(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := newDB(t)
	c := connect(t, dsn)
	ctx := context.Background()
	for _, s := range tm1.New().Schema() {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	cols, vals := "s_id, sub_nbr, bit_1, msc_location, vlr_location", "1, '"+tm1.SubNbr(1)+"', 7, 5, 5"
	if _, err := c.Exec(ctx, "INSERT INTO subscriber ("+cols+") VALUES ("+vals+")"); err != nil {
		t.Fatal(err)
	}
	return dsn, c
}

type fixture struct {
	facilities  bool // special_facility rows for all four types, active
	forwardings bool // call_forwarding rows for all 12 (type, start) slots
	access      bool // access_info rows for all four types
}

func (f fixture) apply(t *testing.T, c *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	stmts := []string{"DELETE FROM call_forwarding", "DELETE FROM special_facility", "DELETE FROM access_info",
		"UPDATE subscriber SET bit_1 = 7, vlr_location = 5"}
	for ty := 1; ty <= 4; ty++ {
		n := strconv.Itoa(ty)
		if f.facilities {
			stmts = append(stmts, "INSERT INTO special_facility VALUES (1, "+n+", 1, 0, 0, 'ABCDE')")
		}
		if f.access {
			stmts = append(stmts, "INSERT INTO access_info VALUES (1, "+n+", 1, 2, 'ABC', 'ABCDE')")
		}
		for _, st := range []string{"0", "8", "16"} {
			if f.forwardings {
				// end_time 25 exceeds every end_time argument (1..24).
				stmts = append(stmts, "INSERT INTO call_forwarding VALUES (1, "+n+", "+st+", 25, '123456789012345')")
			}
		}
	}
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func count(t *testing.T, c *pgx.Conn, q string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestOutcomeRules constructs each outcome of the spec deterministically on
// PostgreSQL and checks the client's verdict and the database's state, with
// prepared statements and with the simple protocol.
func TestOutcomeRules(t *testing.T) {
	dsn, check := oneSubscriberDB(t)
	full := fixture{facilities: true, forwardings: true, access: true}
	cases := []struct {
		name    string
		tx      bench.TxType
		fix     fixture
		want    bench.Outcome
		state   string // SQLSTATE of the error, if any
		after   string // a query that must return 1 afterwards
		repeats int
	}{
		{"UPDATE_SUBSCRIBER_DATA without facility: 0-row update rolls back", tm1.UpdateSubscriberData, fixture{}, bench.RolledBack, "",
			"SELECT count(*) FROM subscriber WHERE bit_1 = 7", 5},
		{"UPDATE_SUBSCRIBER_DATA with facilities: counted", tm1.UpdateSubscriberData, full, bench.Counted, "",
			"SELECT count(*) FROM subscriber WHERE bit_1 IN (0, 1)", 1},
		{"UPDATE_LOCATION: counted", tm1.UpdateLocation, fixture{}, bench.Counted, "",
			"SELECT count(*) FROM subscriber WHERE vlr_location <> 5", 1},
		{"INSERT_CALL_FORWARDING without facility: FK violation allowed", tm1.InsertCallForwarding, fixture{}, bench.AllowedError, "23503",
			"SELECT CASE WHEN count(*) = 0 THEN 1 ELSE 0 END FROM call_forwarding", 5},
		{"INSERT_CALL_FORWARDING onto a taken slot: unique violation allowed", tm1.InsertCallForwarding, full, bench.AllowedError, "23505",
			"SELECT CASE WHEN count(*) = 12 THEN 1 ELSE 0 END FROM call_forwarding", 5},
		{"INSERT_CALL_FORWARDING into a free slot: counted", tm1.InsertCallForwarding, fixture{facilities: true}, bench.Counted, "",
			"SELECT count(*) FROM call_forwarding", 1},
		{"DELETE_CALL_FORWARDING with nothing to delete: rolls back", tm1.DeleteCallForwarding, fixture{facilities: true}, bench.RolledBack, "",
			"SELECT CASE WHEN count(*) = 0 THEN 1 ELSE 0 END FROM call_forwarding", 5},
		{"DELETE_CALL_FORWARDING: counted", tm1.DeleteCallForwarding, full, bench.Counted, "",
			"SELECT CASE WHEN count(*) = 11 THEN 1 ELSE 0 END FROM call_forwarding", 1},
		{"GET_ACCESS_DATA without row: counted, no rows", tm1.GetAccessData, fixture{}, bench.CountedNoRows, "", "", 3},
		{"GET_ACCESS_DATA: counted", tm1.GetAccessData, full, bench.Counted, "", "", 3},
		{"GET_NEW_DESTINATION without facility: counted, no rows", tm1.GetNewDestination, fixture{}, bench.CountedNoRows, "", "", 3},
		{"GET_NEW_DESTINATION: counted", tm1.GetNewDestination, full, bench.Counted, "", "", 3},
		{"GET_SUBSCRIBER_DATA: counted", tm1.GetSubscriberData, fixture{}, bench.Counted, "", "", 1},
	}
	for _, simple := range []bool{false, true} {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if simple {
			cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		}
		ctx := context.Background()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		cl, err := tm1.New().NewClient(ctx, conn, rand.New(rand.NewPCG(1, 1)), bench.ClientParams{Scale: 1, Simple: simple})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			t.Run(tc.name+"/simple="+strconv.FormatBool(simple), func(t *testing.T) {
				for range tc.repeats {
					tc.fix.apply(t, check)
					out, err := cl.Run(ctx, tc.tx)
					if out != tc.want {
						t.Fatalf("outcome %v (err %v), want %v", out, err, tc.want)
					}
					if got := bench.SQLState(err); got != tc.state {
						t.Fatalf("SQLSTATE %q (err %v), want %q", got, err, tc.state)
					}
					if tc.state == "" && err != nil {
						t.Fatalf("unexpected error %v", err)
					}
					if st := conn.PgConn().TxStatus(); st != 'I' {
						t.Fatalf("connection left in transaction state %q", st)
					}
					if tc.after != "" && count(t, check, tc.after) != 1 {
						t.Fatalf("database state after the transaction: %s is not 1", tc.after)
					}
				}
			})
		}
	}
}

// TestDriverCountsOutcomes runs the driver on a database where every
// INSERT_CALL_FORWARDING fails with an allowed FK violation and every
// UPDATE_SUBSCRIBER_DATA rolls back: nothing may be counted, nothing is an
// unexpected error.
func TestDriverCountsOutcomes(t *testing.T) {
	dsn, _ := oneSubscriberDB(t)
	res, err := bench.Run(context.Background(), bench.RunOptions{
		Workload: tm1.New(), DSN: dsn, Mix: "custom", Weights: "INSERT_CALL_FORWARDING=1,UPDATE_SUBSCRIBER_DATA=1",
		Clients: 2, Duration: time.Second, Seed: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	ins, upd := res.Transactions["INSERT_CALL_FORWARDING"], res.Transactions["UPDATE_SUBSCRIBER_DATA"]
	if ins.Started == 0 || upd.Started == 0 {
		t.Fatalf("nothing ran: %+v %+v", ins, upd)
	}
	if ins.Counted != 0 || ins.RolledBack != ins.Started || ins.AllowedErrors != ins.Started || ins.Errors != 0 || ins.SuccessRate != 0 {
		t.Errorf("INSERT_CALL_FORWARDING: %+v", ins)
	}
	if upd.Counted != 0 || upd.RolledBack != upd.Started || upd.AllowedErrors != 0 || upd.Errors != 0 {
		t.Errorf("UPDATE_SUBSCRIBER_DATA: %+v", upd)
	}
	if res.MQTh != 0 || res.TotalTPS == 0 || res.Totals.Errors != 0 {
		t.Errorf("MQTh %v, total tps %v, errors %d", res.MQTh, res.TotalTPS, res.Totals.Errors)
	}
	if res.ErrorsBySQLState["23503"] == 0 {
		t.Errorf("errors by SQLSTATE %v lack 23503", res.ErrorsBySQLState)
	}
	if res.Scale != 1 {
		t.Errorf("detected %d subscribers, want 1", res.Scale)
	}
}
