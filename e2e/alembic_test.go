package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestAlembicMigrations: an Alembic chain (tables with a foreign key, a
// column with a default, an index, a data migration, renames of a column and
// a table, alter_column to NOT NULL with a wider type and without a default)
// runs `upgrade head`, `downgrade base`, `upgrade head` through the
// router of a hot-standby pair, each run one transaction (Alembic's default
// on PostgreSQL); after a switchover the new primary's schema and rows,
// read from the catalog, match the old primary's and what the chain made
// (issue 19).
func TestAlembicMigrations(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			havePython(t, "psycopg, sqlalchemy, alembic")
			h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "")
			h.start("n1")
			h.start("n2")
			h.start("router")
			url := "postgresql+psycopg://tandem:secret@" + h.router + "/tandem"
			alembic := func(args ...string) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, "python3", append([]string{"-m", "alembic", "-c", "alembic.ini"}, args...)...)
				cmd.Dir = "testdata/alembic"
				cmd.Env = append(os.Environ(), "TANDEM_ALEMBIC_URL="+url, "PYTHONDONTWRITEBYTECODE=1")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("alembic %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			checkDeallocate(t, h.dsn(h.router))
			alembic("upgrade", "head")
			alembic("downgrade", "base")
			alembic("upgrade", "head")

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			queries := []string{
				`SELECT string_agg(table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY table_name, column_name)
				   FROM information_schema.columns WHERE table_name IN ('writers', 'books', 'authors', 'alembic_version')`,
				`SELECT string_agg(indexname, ', ' ORDER BY indexname) FROM pg_indexes WHERE tablename IN ('writers', 'books')`,
				`SELECT string_agg(b.id || ' ' || w.name || ' ' || b.name || ' ' || b.pages, ', ' ORDER BY b.id) FROM books b JOIN writers w ON w.id = b.author_id`,
				`SELECT version_num FROM alembic_version`,
			}
			snapshot := func(dsn string) []string {
				t.Helper()
				c := connect(t, dsn)
				defer c.Close(ctx)
				out := make([]string, len(queries))
				for i, q := range queries {
					if err := c.QueryRow(ctx, q).Scan(&out[i]); err != nil {
						t.Fatalf("%s on %s: %v", q, dsn, err)
					}
				}
				return out
			}
			old := snapshot(h.dsn(h.nodes["n1"]))
			for _, want := range []string{"books.name character varying NO", "books.pages integer NO", "writers.name character varying NO", "books.isbn character varying NO"} {
				if !strings.Contains(old[0], want) {
					t.Fatalf("primary's columns lack %q: %s", want, old[0])
				}
			}
			if strings.Contains(old[0], "authors.") || strings.Contains(old[0], "books.title") {
				t.Fatalf("primary's columns still have the old names: %s", old[0])
			}
			if !strings.Contains(old[1], "ix_books_title") {
				t.Fatalf("primary's indexes: %s", old[1])
			}
			if want := "1 Ursula The Dispossessed 116, 2 Ursula The Lathe of Heaven 219, 3 Stanisław Solaris 307"; old[2] != want {
				t.Fatalf("primary's rows: %q, want %q", old[2], want)
			}
			if old[3] != "0006" {
				t.Fatalf("primary's alembic version %q", old[3])
			}

			out := h.tandem("switchover")
			if !strings.Contains(out, "n2 is the primary") {
				t.Fatalf("switchover: %s", out)
			}
			now := snapshot(h.dsn(h.nodes["n2"]))
			for i := range queries {
				if now[i] != old[i] {
					t.Fatalf("after the switchover the new primary has\n%s\nwhere the old one had\n%s", now[i], old[i])
				}
			}
			// The new primary takes writes through the router, and the
			// foreign key holds there.
			c := connect(t, h.dsn(h.router))
			defer c.Close(ctx)
			var err error
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if _, err = c.Exec(ctx, "INSERT INTO books (id, author_id, name, pages, isbn) VALUES (4, 2, 'Fiasco', 320, '978-4')"); err == nil {
					break
				}
				c.Close(ctx)
				c = connect(t, h.dsn(h.router))
			}
			if err != nil {
				t.Fatalf("write on the new primary: %v", err)
			}
			if _, err := c.Exec(ctx, "INSERT INTO books (id, author_id, name, pages, isbn) VALUES (5, 99, 'orphan', 1, '978-5')"); err == nil {
				t.Fatal("a book of a missing writer was accepted: the foreign key is gone")
			}
		})
	}
}

// checkDeallocate: DEALLOCATE drops statements prepared with Parse (psycopg
// sends DEALLOCATE ALL after a DROP or a ROLLBACK once it has prepared
// some, which Alembic's downgrade does).
func checkDeallocate(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	c := connect(t, dsn)
	defer c.Close(ctx)
	pc := c.PgConn()
	code := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return fmt.Sprint(err)
	}
	for _, step := range []struct{ sql, code string }{
		{"DEALLOCATE s1", ""},
		{"DEALLOCATE s1", "26000"},
		{"DEALLOCATE PREPARE s2", ""},
		{"DEALLOCATE ALL", ""},
	} {
		if step.sql == "DEALLOCATE s1" && step.code == "" || step.sql == "DEALLOCATE PREPARE s2" {
			name := strings.Fields(step.sql)[len(strings.Fields(step.sql))-1]
			if _, err := pc.Prepare(ctx, name, "SELECT 1", nil); err != nil {
				t.Fatalf("prepare %s: %v", name, err)
			}
		}
		_, err := pc.Exec(ctx, step.sql).ReadAll()
		if got := code(err); (step.code == "" && err != nil) || (step.code != "" && got != step.code) {
			t.Fatalf("%s: %v, want %q", step.sql, err, step.code)
		}
	}
	if _, err := pc.Prepare(ctx, "s1", "SELECT 1", nil); err != nil {
		t.Fatalf("prepare s1 again after DEALLOCATE ALL: %v", err)
	}
	if err := pc.ExecPrepared(ctx, "s2", nil, nil, nil).Read().Err; err == nil {
		t.Fatal("s2 still runs after DEALLOCATE")
	}
}
