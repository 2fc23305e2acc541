package e2e

// Real PostgreSQL clients on the SQLite back end, standalone,
// hot-standby, single-master (through the transaction router) and
// multi-master: psycopg 3, SQLAlchemy 2, asyncpg, pgjdbc, Hibernate,
// node-postgres, TypeORM, Sequelize, drizzle-kit, Knex, Kysely, MikroORM,
// GORM, bun, golang-migrate (programs in testdata/clients/, installed by
// scripts/deps.d/clients.sh) and pgbench.
// Each program checks its own results and prints "ok"; the Go test runs it
// against a real tandem cluster. A client that is not installed fails the
// test in CI (CI=true) and skips it elsewhere.
//
// Clients that do not work yet are listed in knownClientFailures with the
// reason: they still run, and their failure is logged and the subtest
// skipped; a client that passes although listed is logged for removal. A
// client not listed that fails fails the test (a regression).
//
// TANDEM_CLIENTS_REFERENCE=1 adds a third target, a managed PostgreSQL
// itself, to check the programs against the real thing.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

const clientsDir = "testdata/clients"

// needSQLiteClient skips (locally) or fails (in CI) when a client is missing.
func needSQLiteClient(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed (scripts/deps.d/clients.sh installs it): %v", what, err)
	}
	t.Skipf("%s is not installed (run scripts/deps.d/clients.sh): %v", what, err)
}

func havePython(t *testing.T, modules string) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import "+modules).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, out)
	}
	needSQLiteClient(t, "python3 with "+modules, err)
}

// knownClientFailures: subtest (target/client) -> why it fails today.
var knownClientFailures = map[string]string{}

// clientFailed reports a client's failure: fatal, unless the subtest is a
// known failure.
func clientFailed(t *testing.T, format string, args ...any) {
	t.Helper()
	if why, ok := knownClientFailures[subtestKey(t)]; ok {
		t.Skipf("known failure (%s):\n%s", why, fmt.Sprintf(format, args...))
	}
	t.Fatalf(format, args...)
}

// clientPassed logs a listed client that works now.
func clientPassed(t *testing.T) {
	if _, ok := knownClientFailures[subtestKey(t)]; ok {
		t.Logf("%s passes now: remove it from knownClientFailures", subtestKey(t))
	}
}

func subtestKey(t *testing.T) string {
	parts := strings.Split(t.Name(), "/")
	if len(parts) < 3 {
		return t.Name()
	}
	return parts[len(parts)-2] + "/" + parts[len(parts)-1]
}

// runClient runs a client program and wants its last line to be "ok".
func runClient(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = clientsDir
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || lines[len(lines)-1] != "ok" {
		clientFailed(t, "%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// clientTarget is where the clients connect.
type clientTarget struct {
	dsn   string // postgres://user:password@host:port/db?sslmode=disable
	reads string // hot-standby: a DSN whose sessions run on the standby
	// runArgs: more pgbench -T arguments (multi-master: retry the
	// serialization failures every node writing the one branch row causes).
	runArgs []string
	// multiMaster: a write transaction may end with 40001 (a conflict
	// with replication) whatever it does; clients retry it.
	multiMaster bool
}

func (c clientTarget) url(t *testing.T) *url.URL {
	u, err := url.Parse(c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func startClientTarget(t *testing.T, kind string) clientTarget {
	t.Helper()
	switch kind {
	case "standalone":
		return clientTarget{dsn: startCluster(t, clusterSpec{backend: "sqlite"}).DSN}
	case "hot-standby":
		h := writeHSOn(t, "sqlite", "2-safe-visible", "relaxed", "")
		h.start("n1")
		h.start("n2")
		h.start("router")
		return clientTarget{dsn: h.dsn(h.router), reads: h.dsn(h.reads)}
	case "single-master":
		// Transaction routing: pgjdbc's BEGIN travels with its first
		// query, which must not send a read-write block to a replica.
		// strong: pgbench's run reads the scale that its -i session
		// wrote (session consistency holds within a session only).
		s := upSingleMasterRouter(t, "sqlite", 3, "", "read_consistency = \"strong\"\n")
		return clientTarget{dsn: s.DSN}
	case "multi-master":
		// sequence_stride = 1: the programs check the ids they were
		// handed as PostgreSQL numbers them (1, 2, 3); by default each
		// node draws its own residue modulo the number of nodes (1, 4, 7
		// on n1), which e2e TestMultiMasterSequences covers. With 1
		// the draws go through certification as any other write.
		s := upMultiMaster(t, "sqlite", 3, "[multi_master]\nsequence_stride = 1\n")
		return clientTarget{dsn: s.DSN, runArgs: []string{"--max-tries=1000"}, multiMaster: true}
	case "postgres":
		return clientTarget{dsn: startReferencePostgres(t)}
	}
	t.Fatalf("unknown target %q", kind)
	return clientTarget{}
}

func TestClientsSQLite(t *testing.T) {
	kinds := []string{"standalone", "hot-standby", "single-master", "multi-master"}
	if os.Getenv("TANDEM_CLIENTS_REFERENCE") != "" {
		kinds = append(kinds, "postgres")
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			tg := startClientTarget(t, kind)
			t.Run("psycopg", func(t *testing.T) {
				havePython(t, "psycopg")
				runClient(t, "python3", "psycopg_types.py", tg.dsn)
				if tg.reads != "" {
					waitStandbyCount(t, tg.reads, "SELECT count(*) FROM py_types", 8)
				}
				clientPassed(t)
			})
			t.Run("drizzle-kit", func(t *testing.T) {
				// Before the clients that leave enum types behind:
				// drizzle-kit would ask whether its enum is one of
				// theirs renamed (a prompt, which needs a terminal).
				_, err := exec.LookPath("node")
				if err == nil {
					_, err = os.Stat(filepath.Join(clientsDir, "node_modules", "drizzle-kit", "package.json"))
				}
				needSQLiteClient(t, "node and drizzle-kit", err)
				runClient(t, "node", "drizzle.js", tg.dsn)
				clientPassed(t)
			})
			t.Run("sqlalchemy", func(t *testing.T) {
				havePython(t, "psycopg, sqlalchemy")
				u := tg.url(t)
				u.Scheme = "postgresql+psycopg"
				runClient(t, "python3", "sqlalchemy_orm.py", u.String())
				clientPassed(t)
			})
			t.Run("peewee", func(t *testing.T) {
				havePython(t, "peewee, psycopg2")
				runClient(t, "python3", "peewee_client.py", tg.dsn)
				clientPassed(t)
			})
			t.Run("tortoise", func(t *testing.T) {
				havePython(t, "tortoise, asyncpg")
				runClient(t, "python3", "tortoise_client.py", tg.dsn)
				clientPassed(t)
			})
			t.Run("activerecord", func(t *testing.T) {
				out, err := exec.Command("ruby", "-e", `require "active_record"; require "pg"`).CombinedOutput()
				if err != nil {
					err = fmt.Errorf("%v: %s", err, out)
				}
				needSQLiteClient(t, "ruby with ActiveRecord and pg", err)
				runClient(t, "ruby", "activerecord.rb", tg.dsn)
				clientPassed(t)
			})
			t.Run("asyncpg", func(t *testing.T) {
				havePython(t, "asyncpg")
				runClient(t, "python3", "asyncpg_client.py", tg.dsn)
				clientPassed(t)
			})
			t.Run("sqlalchemy-asyncpg", func(t *testing.T) {
				havePython(t, "asyncpg, greenlet, sqlalchemy")
				u := tg.url(t)
				u.Scheme = "postgresql+asyncpg"
				q := u.Query()
				q.Del("sslmode") // asyncpg's URL takes ssl=, not libpq's sslmode
				u.RawQuery = q.Encode()
				runClient(t, "python3", "sqlalchemy_orm.py", u.String())
				clientPassed(t)
			})
			t.Run("pgjdbc", func(t *testing.T) { testPgjdbc(t, tg) })
			t.Run("hibernate", func(t *testing.T) { testHibernate(t, tg) })
			t.Run("node-postgres", func(t *testing.T) {
				_, err := exec.LookPath("node")
				if err == nil {
					_, err = os.Stat(filepath.Join(clientsDir, "node_modules", "pg", "package.json"))
				}
				needSQLiteClient(t, "node and node-postgres", err)
				runClient(t, "node", "node_pg.js", tg.dsn)
				clientPassed(t)
			})
			t.Run("typeorm", func(t *testing.T) {
				_, err := exec.LookPath("node")
				if err == nil {
					_, err = os.Stat(filepath.Join(clientsDir, "node_modules", "typeorm", "package.json"))
				}
				needSQLiteClient(t, "node and TypeORM", err)
				runClient(t, "node", "typeorm.js", tg.dsn)
				clientPassed(t)
			})
			t.Run("sequelize", func(t *testing.T) {
				_, err := exec.LookPath("node")
				if err == nil {
					_, err = os.Stat(filepath.Join(clientsDir, "node_modules", "sequelize", "package.json"))
				}
				needSQLiteClient(t, "node and Sequelize", err)
				runClient(t, "node", "sequelize.js", tg.dsn)
				clientPassed(t)
			})
			t.Run("knex", func(t *testing.T) { runNodeClient(t, "knex", "knex.js", tg.dsn) })
			t.Run("kysely", func(t *testing.T) { runNodeClient(t, "kysely", "kysely.js", tg.dsn) })
			t.Run("mikroorm", func(t *testing.T) { runNodeClient(t, "@mikro-orm/postgresql", "mikroorm.mjs", tg.dsn) })
			t.Run("gorm", func(t *testing.T) {
				bin, err := buildGoClient("gorm")
				needSQLiteClient(t, "the GORM client (go build in e2e/testdata/clients/gorm: its modules)", err)
				runClient(t, bin, tg.dsn)
				clientPassed(t)
			})
			t.Run("bun", func(t *testing.T) {
				bin, err := buildGoClient("bun")
				needSQLiteClient(t, "the bun client (go build in e2e/testdata/clients/bun: its modules)", err)
				runClient(t, bin, tg.dsn)
				clientPassed(t)
			})
			t.Run("golang-migrate", func(t *testing.T) {
				bin, err := buildGoClient("migrate")
				needSQLiteClient(t, "the golang-migrate client (go build in e2e/testdata/clients/migrate: its modules)", err)
				args := []string{tg.dsn}
				if tg.multiMaster {
					// Advisory locks are each node's: two migrators
					// on two nodes do not exclude each other.
					args = []string{"-serial", tg.dsn}
				}
				runClient(t, bin, args...)
				clientPassed(t)
			})
			t.Run("pgbench", func(t *testing.T) { testPgbenchClient(t, tg) })
		})
	}
}

// runNodeClient runs a Node program of testdata/clients that needs the
// npm package pkg (installed into testdata/clients/node_modules).
func runNodeClient(t *testing.T, pkg, program, dsn string) {
	t.Helper()
	_, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(clientsDir, "node_modules", filepath.FromSlash(pkg), "package.json"))
	}
	needSQLiteClient(t, "node and "+pkg, err)
	runClient(t, "node", program, dsn)
	clientPassed(t)
}

var goClients sync.Map // dir -> *goClient

type goClient struct {
	once sync.Once
	bin  string
	err  error
}

// buildGoClient builds e2e/testdata/clients/<dir> (a module of its own,
// so the tool stays out of the project's go.mod) once per test binary.
func buildGoClient(dir string) (string, error) {
	v, _ := goClients.LoadOrStore(dir, &goClient{})
	c := v.(*goClient)
	c.once.Do(func() {
		bin := filepath.Join(filepath.Dir(tandemBin), dir+"-client") // removed with it (TestMain)
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = filepath.Join(clientsDir, dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			c.err = fmt.Errorf("%v: %s", err, out)
			return
		}
		c.bin = bin
	})
	return c.bin, c.err
}

func testPgjdbc(t *testing.T, tg clientTarget) {
	jars, _ := filepath.Glob(filepath.Join(clientsDir, "lib", "postgresql-*.jar"))
	var err error
	if len(jars) == 0 {
		err = fmt.Errorf("no %s/lib/postgresql-*.jar", clientsDir)
	} else if _, err = exec.LookPath("javac"); err == nil {
		_, err = exec.LookPath("java")
	}
	needSQLiteClient(t, "java, javac and the pgjdbc jar", err)
	jar, _ := filepath.Abs(jars[0])
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-cp", jar, "-d", classes, filepath.Join(clientsDir, "JdbcClient.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	u := tg.url(t)
	pw, _ := u.User.Password()
	jdbc := fmt.Sprintf("jdbc:postgresql://%s%s?sslmode=disable", u.Host, u.Path)
	runClient(t, "java", "-cp", jar+string(os.PathListSeparator)+classes, "JdbcClient", jdbc, u.User.Username(), pw)
	clientPassed(t)
}

// testHibernate compiles e2e/testdata/clients/hibernate/Hibernate.java
// against Hibernate ORM 7 and pgjdbc (lib/, from scripts/deps.d/clients.sh)
// and runs it: the schema tool's create, validate and update, and a unit
// of work (see the program's comment).
func testHibernate(t *testing.T, tg clientTarget) {
	dir := filepath.Join(clientsDir, "hibernate")
	jars, _ := filepath.Glob(filepath.Join(dir, "lib", "hibernate-core-*.jar"))
	var err error
	if len(jars) == 0 {
		err = fmt.Errorf("no %s/lib/hibernate-core-*.jar", dir)
	} else if _, err = exec.LookPath("javac"); err == nil {
		_, err = exec.LookPath("java")
	}
	needSQLiteClient(t, "java, javac and Hibernate's jars", err)
	lib, _ := filepath.Abs(filepath.Join(dir, "lib"))
	cp := filepath.Join(lib, "*")
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-cp", cp, "-d", classes, filepath.Join(dir, "Hibernate.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	u := tg.url(t)
	pw, _ := u.User.Password()
	jdbc := fmt.Sprintf("jdbc:postgresql://%s%s?sslmode=disable", u.Host, u.Path)
	runClient(t, "java", "-cp", cp+string(os.PathListSeparator)+classes, "Hibernate", jdbc, u.User.Username(), pw)
	clientPassed(t)
}

// testPgbenchClient: pgbench -i (its own PostgreSQL DDL, COPY, VACUUM) and
// pgbench -T 3 in simple and prepared mode; no failed transaction, and the
// balances add up (every transaction adds the same delta to an account, its
// teller and its branch).
func testPgbenchClient(t *testing.T, tg clientTarget) {
	_, err := exec.LookPath("pgbench")
	needSQLiteClient(t, "pgbench", err)
	run := func(args ...string) string {
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			out, err := exec.CommandContext(ctx, "pgbench", append(args, tg.dsn)...).CombinedOutput()
			cancel()
			// Multi-master on SQLite ends a transaction that holds a node's
			// write lock past apply_conflict_wait while certified writesets
			// wait (40001, "conflict with replication"); pgbench -i's load
			// is one such transaction, and a client retries it.
			if err != nil && tg.multiMaster && attempt < 3 && strings.Contains(string(out), "conflict with replication") {
				t.Logf("pgbench %s, attempt %d: 40001, retrying:\n%s", strings.Join(args, " "), attempt, out)
				continue
			}
			if err != nil {
				clientFailed(t, "pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
	}
	run("-i", "-s", "1", "-q")
	for _, mode := range []string{"simple", "prepared"} {
		out := run(append([]string{"-T", "3", "-c", "2", "-M", mode}, tg.runArgs...)...)
		if !strings.Contains(out, "number of failed transactions: 0") || !strings.Contains(out, "tps = ") {
			clientFailed(t, "pgbench -M %s:\n%s", mode, out)
		}
	}
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, tg.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	res, err := c.Exec(ctx, `SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers),
		(SELECT sum(bbalance) FROM pgbench_branches), (SELECT count(*) FROM pgbench_history), (SELECT count(*) FROM pgbench_accounts)`).ReadAll()
	if err != nil {
		clientFailed(t, "balances: %v", err)
	}
	row := res[0].Rows[0]
	a, tl, b, h, n := string(row[0]), string(row[1]), string(row[2]), string(row[3]), string(row[4])
	if a != tl || a != b || h == "0" || n != "100000" {
		clientFailed(t, "pgbench tables inconsistent: accounts %s, tellers %s, branches %s, history rows %s, accounts rows %s", a, tl, b, h, n)
	}
	if tg.reads != "" {
		waitStandbyCount(t, tg.reads, "SELECT count(*) FROM pgbench_history", mustAtoi(t, h))
	}
	clientPassed(t)
}

// waitStandbyCount waits until a session on the read port (the standby)
// counts want (a client's failure: knownClientFailures may list it).
func waitStandbyCount(t *testing.T, dsn, query string, want int) {
	t.Helper()
	ctx := context.Background()
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		c, err := pgconn.Connect(ctx, dsn)
		if err != nil {
			last = err.Error()
			continue
		}
		res, err := c.Exec(ctx, query).ReadAll()
		c.Close(ctx)
		if err != nil {
			last = err.Error()
			continue
		}
		last = string(res[0].Rows[0][0])
		if last == fmt.Sprint(want) {
			return
		}
	}
	clientFailed(t, "standby: %s = %s, want %d", query, last, want)
}

func mustAtoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
