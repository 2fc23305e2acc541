package tm1_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tandemdb/tandem/bench"
	"github.com/tandemdb/tandem/bench/workloads/tm1"
)

// BenchmarkTransactions measures one client's cost per transaction type
// against the package's PostgreSQL (go test -bench . -benchmem): ns/op is
// dominated by the round trips, allocs/op is the driver's own garbage.
func BenchmarkTransactions(b *testing.B) {
	const p = 2000
	dsn := pg.NewDB(b)
	if _, err := bench.Load(context.Background(), bench.LoadOptions{Workload: tm1.New(), DSN: dsn, Scale: p}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, simple := range []bool{false, true} {
		cfg, _ := pgx.ParseConfig(dsn)
		name := "prepared"
		if simple {
			cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
			name = "simple"
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		cl, err := tm1.New().NewClient(ctx, conn, rand.New(rand.NewPCG(1, 2)), bench.ClientParams{Scale: p, Simple: simple})
		if err != nil {
			b.Fatal(err)
		}
		for i, tx := range tm1.New().Transactions() {
			b.Run(name+"/"+tx.Name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if out, err := cl.Run(ctx, bench.TxType(i)); out == bench.Failed {
						b.Fatal(err)
					}
				}
			})
		}
		conn.Close(ctx)
	}
}
