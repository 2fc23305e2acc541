package e2e

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestSessionTimeZoneSQLite: the session's TimeZone on the SQLite back
// end through a real node and pgx: the startup parameter (what pgjdbc
// sends) and SET, text parameters and COPY rows without an offset read
// in the zone, rows and COPY TO printed in it, binary values kept as
// instants, one statement text translated for two zones in two sessions
// (the translation cache), and a zone that does not exist refused at
// connection (FATAL 22023) and at SET.
func TestSessionTimeZoneSQLite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startCluster(t, clusterSpec{backend: "sqlite"})

	berlin, err := connectZone(ctx, c.DSN, "europe/berlin")
	if err != nil {
		t.Fatal(err)
	}
	defer berlin.Close(ctx)
	if got := berlin.PgConn().ParameterStatus("TimeZone"); got != "Europe/Berlin" {
		t.Fatalf("ParameterStatus TimeZone after a startup parameter europe/berlin: %q", got)
	}
	utc := connect(t, c.DSN)

	mustExec(t, berlin, "CREATE TABLE tz_ev (id int PRIMARY KEY, at timestamptz)")
	// A text parameter of type timestamptz without an offset: Berlin's.
	if _, err := berlin.Exec(ctx, "INSERT INTO tz_ev VALUES ($1, $2::timestamptz)", 1, "2024-01-05 10:00"); err != nil {
		t.Fatal(err)
	}
	// A literal in the statement's text, the same text in both sessions:
	// each reads it in its own zone.
	const lit = "INSERT INTO tz_ev SELECT $1, '2024-07-01 12:00'"
	if _, err := berlin.Exec(ctx, lit, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := utc.Exec(ctx, lit, 3); err != nil {
		t.Fatal(err)
	}
	// A binary time.Time: the instant whatever the zone.
	if _, err := berlin.Exec(ctx, "INSERT INTO tz_ev VALUES ($1, $2)", 4, time.Date(2024, 1, 5, 9, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	// COPY FROM: rows without an offset in the session's zone.
	if _, err := berlin.PgConn().CopyFrom(ctx, strings.NewReader("5\t2024-01-05 10:00\n6\t2024-01-05 10:00+00\n"), "COPY tz_ev FROM STDIN"); err != nil {
		t.Fatal(err)
	}

	want := map[int]string{ // UTC instants
		1: "2024-01-05T09:00:00Z", 2: "2024-07-01T10:00:00Z", 3: "2024-07-01T12:00:00Z",
		4: "2024-01-05T09:00:00Z", 5: "2024-01-05T09:00:00Z", 6: "2024-01-05T10:00:00Z",
	}
	rows, err := utc.Query(ctx, "SELECT id, at FROM tz_ev ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var id int
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		if got := at.UTC().Format(time.RFC3339); got != want[id] {
			t.Errorf("row %d: %s, want %s", id, got, want[id])
		}
		n++
	}
	if rows.Err() != nil || n != len(want) {
		t.Fatalf("%d rows, %v", n, rows.Err())
	}

	// Text output in the session's zone, and what is computed in it.
	var text, day string
	var hour float64
	if err := berlin.QueryRow(ctx, "SELECT at::text, at::date::text, extract(hour from at)::float8 FROM tz_ev WHERE id = 2").Scan(&text, &day, &hour); err != nil {
		t.Fatal(err)
	}
	if text != "2024-07-01 12:00:00+02" || day != "2024-07-01" || hour != 12 {
		t.Fatalf("Berlin's view of 10:00Z on 1 July: %q %q %v", text, day, hour)
	}
	res := berlin.PgConn().ExecParams(ctx, "SELECT at FROM tz_ev WHERE id = 1", nil, nil, nil, []int16{0}).Read()
	if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "2024-01-05 10:00:00+01" {
		t.Fatalf("text-format timestamptz in Berlin: %q %v", res.Rows, res.Err)
	}
	var out bytes.Buffer
	if _, err := berlin.PgConn().CopyTo(ctx, &out, "COPY (SELECT id, at FROM tz_ev WHERE id IN (1, 3) ORDER BY id) TO STDOUT"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "1\t2024-01-05 10:00:00+01\n3\t2024-07-01 14:00:00+02\n" {
		t.Fatalf("COPY TO in Berlin:\n%s", got)
	}

	// SET changes it, reports it, RESET goes back to the startup value.
	mustExec(t, berlin, "SET TIME ZONE 'America/New_York'")
	if got := berlin.PgConn().ParameterStatus("TimeZone"); got != "America/New_York" {
		t.Fatalf("ParameterStatus after SET TIME ZONE: %q", got)
	}
	if err := berlin.QueryRow(ctx, "SELECT at::text FROM tz_ev WHERE id = 1").Scan(&text); err != nil || text != "2024-01-05 04:00:00-05" {
		t.Fatalf("New York's view: %q %v", text, err)
	}
	mustExec(t, berlin, "RESET TimeZone")
	if err := berlin.QueryRow(ctx, "SHOW TimeZone").Scan(&text); err != nil || text != "Europe/Berlin" {
		t.Fatalf("after RESET: %q %v", text, err)
	}
	var pe *pgconn.PgError
	if _, err := berlin.Exec(ctx, "SET TimeZone = 'Mars/Olympus'"); !errors.As(err, &pe) || pe.Code != "22023" {
		t.Fatalf("SET to a zone that does not exist: %v", err)
	}

	if bad, err := connectZone(ctx, c.DSN, "Mars/Olympus"); err == nil {
		bad.Close(ctx)
		t.Fatal("a startup TimeZone that does not exist was accepted")
	} else if !errors.As(err, &pe) || pe.Code != "22023" || pe.Severity != "FATAL" {
		t.Fatalf("a startup TimeZone that does not exist: %v", err)
	}
}

// connectZone connects with the TimeZone startup parameter, as pgjdbc
// sends its JVM's zone.
func connectZone(ctx context.Context, dsn, zone string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["TimeZone"] = zone
	return pgx.ConnectConfig(ctx, cfg)
}

func mustExec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestSessionTimeZonePostgres: the TimeZone startup parameter reaches
// PostgreSQL back ends too: a standalone node (its relay) and a writeset
// pair's primary (tandem's executor, which sets it on the server).
func TestSessionTimeZonePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("PostgreSQL back ends")
	}
	check := func(t *testing.T, dsn string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := connectZone(ctx, dsn, "Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var zone, text string
		if err := c.QueryRow(ctx, "SELECT current_setting('TimeZone'), '2024-01-05 10:00'::timestamptz::text").Scan(&zone, &text); err != nil {
			t.Fatal(err)
		}
		if zone != "Europe/Berlin" || text != "2024-01-05 10:00:00+01" {
			t.Fatalf("a Europe/Berlin session: TimeZone %q, 10:00 printed as %q", zone, text)
		}
		var pe *pgconn.PgError
		if bad, err := connectZone(ctx, dsn, "Mars/Olympus"); err == nil {
			bad.Close(ctx)
			t.Fatal("a startup TimeZone that does not exist was accepted")
		} else if !errors.As(err, &pe) || pe.Code != "22023" {
			t.Fatalf("a startup TimeZone that does not exist: %v", err)
		}
	}
	t.Run("standalone", func(t *testing.T) {
		c := startCluster(t, clusterSpec{backend: "postgres"})
		check(t, c.DSN)
	})
	t.Run("writeset-pair", func(t *testing.T) {
		h := writeHSOn(t, "postgres", "2-safe-received", "relaxed", "")
		h.start("n1")
		h.start("n2")
		check(t, h.dsn(h.nodes["n1"]))
	})
}
