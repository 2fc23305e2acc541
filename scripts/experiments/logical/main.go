// Command logical is a measurement, not part of tandem: a synchronous
// logical-replication consumer that acknowledges every commit the moment it
// is decoded (write = flush = apply = the commit's end LSN) and does nothing
// else. With its application_name in synchronous_standby_names it shows what
// PostgreSQL's logical decoding plus a synchronous wait cost a primary, the
// floor of any capture design built on logical decoding, before a proxy
// hop, a replication log and a standby's apply. docs/benchmarks.md has the
// figures; README.md here has the commands.
package main

import (
	"context"
	"flag"
	"log"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

func main() {
	dsn := flag.String("dsn", "postgres://postgres@127.0.0.1:5439/postgres?replication=database&application_name=tandem", "replication connection (replication=database)")
	flag.Parse()
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, *dsn)
	if err != nil {
		log.Fatal(err)
	}
	// A publication of every table; an existing one is fine.
	_, _ = c.Exec(ctx, "CREATE PUBLICATION tandem_experiment FOR ALL TABLES").ReadAll()
	const slot = "tandem_experiment"
	if _, err := pglogrepl.CreateReplicationSlot(ctx, c, slot, "pgoutput", pglogrepl.CreateReplicationSlotOptions{Temporary: true}); err != nil {
		log.Fatal("create slot: ", err)
	}
	if err := pglogrepl.StartReplication(ctx, c, slot, 0, pglogrepl.StartReplicationOptions{PluginArgs: []string{"proto_version '1'", "publication_names 'tandem_experiment'"}}); err != nil {
		log.Fatal("start replication: ", err)
	}
	log.Print("streaming; acknowledging every commit at once")
	var commits, rows int
	start := time.Now()
	for {
		msg, err := c.ReceiveMessage(ctx)
		if err != nil {
			log.Fatal(err)
		}
		cd, ok := msg.(*pgproto3.CopyData)
		if !ok || len(cd.Data) == 0 {
			continue
		}
		switch cd.Data[0] {
		case pglogrepl.PrimaryKeepaliveMessageByteID:
			k, err := pglogrepl.ParsePrimaryKeepaliveMessage(cd.Data[1:])
			if err == nil && k.ReplyRequested {
				_ = pglogrepl.SendStandbyStatusUpdate(ctx, c, pglogrepl.StandbyStatusUpdate{WALWritePosition: k.ServerWALEnd})
			}
		case pglogrepl.XLogDataByteID:
			x, err := pglogrepl.ParseXLogData(cd.Data[1:])
			if err != nil {
				log.Fatal(err)
			}
			m, err := pglogrepl.Parse(x.WALData)
			if err != nil {
				log.Fatal(err)
			}
			switch m := m.(type) {
			case *pglogrepl.InsertMessage, *pglogrepl.UpdateMessage, *pglogrepl.DeleteMessage:
				rows++
			case *pglogrepl.CommitMessage:
				commits++
				end := m.TransactionEndLSN
				if err := pglogrepl.SendStandbyStatusUpdate(ctx, c, pglogrepl.StandbyStatusUpdate{WALWritePosition: end, WALFlushPosition: end, WALApplyPosition: end}); err != nil {
					log.Fatal(err)
				}
				if commits%20000 == 0 {
					log.Printf("%d commits, %d rows, %.0f commits/s", commits, rows, float64(commits)/time.Since(start).Seconds())
				}
			}
		}
	}
}
