// golang-migrate (github.com/golang-migrate/migrate/v4, its postgres
// driver on lib/pq) against tandem: it takes an advisory lock
// (pg_advisory_lock) around every migration, qualifies its table as
// "public"."schema_migrations", and runs the migrations in
// migrations/ (a table, an enum type, an index). Two migrators run up at
// once (unless -serial): the lock must let one migrate and the other find
// nothing to do; then version, down to nothing, and up again. Usage:
// migrate [-serial] DSN. Exits non-zero with a message on the first
// difference. Its own module, so the project's go.mod does not carry it.
package main

import (
	"database/sql"
	"embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	_ "github.com/lib/pq"
)

//go:embed migrations/*.sql
var files embed.FS

func fail(format string, a ...any) {
	fmt.Printf("FAIL: "+format+"\n", a...)
	os.Exit(1)
}

func newMigrate(dsn string) *migrate.Migrate {
	src, err := iofs.New(files, "migrations")
	if err != nil {
		fail("source: %v", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, dsn)
	if err != nil {
		fail("connect: %v", err)
	}
	return m
}

func main() {
	serial := flag.Bool("serial", false, "run the two migrators one after the other")
	flag.Parse()
	dsn := flag.Arg(0)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		fail("open: %v", err)
	}
	defer db.Close()
	for _, q := range []string{"DROP TABLE IF EXISTS users", "DROP TYPE IF EXISTS user_role", "DROP TABLE IF EXISTS schema_migrations"} {
		if _, err := db.Exec(q); err != nil {
			fail("%s: %v", q, err)
		}
	}

	// Two migrators at once: the advisory lock serialises them.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		run := func() {
			m := newMigrate(dsn)
			defer m.Close()
			errs[i] = m.Up()
		}
		if *serial {
			run()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	wg.Wait()
	changed := 0
	for i, err := range errs {
		switch {
		case err == nil:
			changed++
		case errors.Is(err, migrate.ErrNoChange):
		default:
			fail("migrator %d: up: %v", i+1, err)
		}
	}
	if changed == 0 {
		fail("neither migrator migrated")
	}

	m := newMigrate(dsn)
	defer m.Close()
	if v, dirty, err := m.Version(); err != nil || v != 2 || dirty {
		fail("version after up: %d dirty=%v %v, want 2", v, dirty, err)
	}
	var role string
	if err := db.QueryRow("INSERT INTO users (email) VALUES ('a@example.org') RETURNING role").Scan(&role); err != nil || role != "member" {
		fail("insert: %q %v", role, err)
	}
	if _, err := db.Exec("INSERT INTO users (email, role) VALUES ('b@example.org', 'owner')"); err == nil {
		fail("a value outside the enum was accepted")
	}
	if err := m.Down(); err != nil {
		fail("down: %v", err)
	}
	if _, _, err := m.Version(); !errors.Is(err, migrate.ErrNilVersion) {
		fail("version after down: %v, want none", err)
	}
	if err := m.Up(); err != nil {
		fail("up again: %v", err)
	}
	if v, dirty, err := m.Version(); err != nil || v != 2 || dirty {
		fail("version after up again: %d dirty=%v %v", v, dirty, err)
	}
	fmt.Println("ok")
}
