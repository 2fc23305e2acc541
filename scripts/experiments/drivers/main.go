// Command drivers times one prepared single-row SELECT through pgx from C
// connections at once and reports calls per second and the PostgreSQL
// backends' CPU per call and its own (read from /proc, so run it on the
// server's host). Its pgjdbc twin is Multi.java; run.sh runs both, alternating.
//
//	drivers [-raw] [-thread] [-calls N] [-conns C] [-dsn DSN]
//
// -raw executes through pgconn (pgx's protocol layer) with text results,
// skipping pgx's row scanning and type map. -thread waits for answers in
// the kernel on each goroutine's own thread, as `tandem bench run --wait
// thread` does: run.sh builds it with bench/threadwait_linux.go copied in
// (dialThreadWait), so build it through run.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

const query = "SELECT i_price, i_name, i_data FROM item WHERE i_id = $1"

// cpu is a process's user + system CPU in seconds.
func cpu(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		log.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100
}

func main() {
	raw := flag.Bool("raw", false, "execute through pgconn with text results")
	thread := flag.Bool("thread", false, "wait for answers in the kernel on the goroutine's own thread (tandem bench run --wait thread); needs GOMAXPROCS > conns")
	calls := flag.Int("calls", 30000, "calls per connection")
	conns := flag.Int("conns", 4, "connections, one goroutine each")
	dsn := flag.String("dsn", "postgres://postgres@127.0.0.1:5499/postgres", "server")
	flag.Parse()
	ctx := context.Background()
	type client struct {
		c   *pgx.Conn
		pid int
	}
	var cls []client
	for range *conns {
		cfg, err := pgx.ParseConfig(*dsn)
		if err != nil {
			log.Fatal(err)
		}
		if *thread {
			cfg.DialFunc = dialThreadWait
		}
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			log.Fatal(err)
		}
		var pid int
		if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			log.Fatal(err)
		}
		cls = append(cls, client{c, pid})
	}
	run := func(c *pgx.Conn, seed int64, n int) {
		rng := rand.New(rand.NewSource(seed))
		var p float64
		var a, b string
		if !*raw {
			for range n {
				if err := c.QueryRow(ctx, query, 1+rng.Intn(100000)).Scan(&p, &a, &b); err != nil {
					log.Fatal(err)
				}
			}
			return
		}
		if _, err := c.Prepare(ctx, "raw", query); err != nil {
			log.Fatal(err)
		}
		param := [][]byte{make([]byte, 4)}
		for range n {
			id := uint32(1 + rng.Intn(100000))
			param[0][0], param[0][1], param[0][2], param[0][3] = byte(id>>24), byte(id>>16), byte(id>>8), byte(id)
			rr := c.PgConn().ExecPrepared(ctx, "raw", param, []int16{1}, []int16{0, 0, 0})
			for rr.NextRow() {
				v := rr.Values()
				p, _ = strconv.ParseFloat(string(v[0]), 64)
				a, b = string(v[1]), string(v[2])
			}
			if _, err := rr.Close(); err != nil {
				log.Fatal(err)
			}
		}
	}
	all := func(n int, seed int64) time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for i, cl := range cls {
			wg.Add(1)
			go func() { defer wg.Done(); run(cl.c, seed+int64(i), n) }()
		}
		wg.Wait()
		return time.Since(start)
	}
	all(500, 0) // warm-up: plans, caches
	var before float64
	for _, cl := range cls {
		before += cpu(cl.pid)
	}
	self := cpu(os.Getpid())
	el := all(*calls, 100)
	self = cpu(os.Getpid()) - self
	var after float64
	for _, cl := range cls {
		after += cpu(cl.pid)
	}
	total := float64(*calls * *conns)
	mode := "pgx"
	if *raw {
		mode = "pgconn"
	}
	if *thread {
		mode += " (thread wait)"
	}
	fmt.Printf("%s %d conns: %.0f calls/s, server %.2f us/call, driver %.2f us/call\n", mode, *conns, total/el.Seconds(), (after-before)*1e6/total, self*1e6/total)
}
