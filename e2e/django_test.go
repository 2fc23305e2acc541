package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDjangoMigrations: Django's own migrate (contenttypes and auth, then an
// app whose second migration adds a field with a default, which Django
// sends as ADD COLUMN ... DEFAULT then ALTER COLUMN ... DROP DEFAULT, and
// widens a varchar, and whose third makes a model of django.contrib.postgres
// fields, an ArrayField and a JSONField with gin indexes) and its ORM
// (create, filter across a foreign key, update, a rolled-back atomic
// block, array and JSON lookups) and its schema introspection
// (columns, constraints, indexes, sequences, relations) through the router
// of the PostgreSQL hot-standby pair; the standby ends with the same schema
// and rows.
func TestDjangoMigrations(t *testing.T) { testDjangoMigrations(t, "postgres") }

// TestDjangoMigrationsSQLite: the same through the router of the SQLite
// hot-standby pair (Django's introspection reads pg_constraint and
// pg_index with unnest(...) WITH ORDINALITY, a lateral unnest and
// array(SELECT ...)).
func TestDjangoMigrationsSQLite(t *testing.T) { testDjangoMigrations(t, "sqlite") }

func testDjangoMigrations(t *testing.T, backend string) {
	havePython(t, "django, psycopg")
	h := writeHSOn(t, backend, "2-safe-visible", "relaxed", "")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(h.dir, "n1.log"))
			if i := bytes.Index(b, []byte("\ngoroutine ")); i > 0 && len(b) > i+6000 {
				b = b[:i+6000] // a crash: up to its first stack
			}
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("n1's log (end):\n%s", b)
		}
	})
	h.start("n1")
	h.start("n2")
	h.start("router")
	host, port, _ := net.SplitHostPort(h.router)
	django := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "python3", args...)
		cmd.Dir = "testdata/django"
		cmd.Env = append(os.Environ(), "DJANGO_SETTINGS_MODULE=settings", "PYTHONPATH=.", "PYTHONDONTWRITEBYTECODE=1",
			"TANDEM_DJANGO_HOST="+host, "TANDEM_DJANGO_PORT="+port)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python3 %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	django("-m", "django", "migrate", "--noinput")
	if out := django("orm.py"); !strings.Contains(out, "orm ok 3") {
		t.Fatalf("orm.py: %s", out)
	}
	if out := django("-m", "django", "migrate", "--check"); strings.Contains(out, "unapplied") {
		t.Fatalf("migrate --check: %s", out)
	}
	// What Django's introspection reads of the schema it made (constraint
	// names left out: PostgreSQL and SQLite name them differently).
	const introspection = `shop_author columns [('id', 20, False, False), ('name', 1043, False, False)]
shop_author constraints ["(('id',), True, True, None, False, False, ())"]
shop_author sequences [{'name': 'shop_author_id_seq', 'table': 'shop_author', 'column': 'id'}]
shop_author primary key id
shop_author relations {}
shop_book columns [('id', 20, False, False), ('title', 1043, False, False), ('published', 1184, True, False), ('author_id', 20, False, False), ('pages', 23, False, False)]
shop_book constraints ["(('author_id',), False, False, ('shop_author', 'id'), False, False, ())", "(('author_id',), False, False, None, False, True, ('ASC',))", "(('id',), True, True, None, False, False, ())", "(('title',), False, False, None, False, True, ('ASC',))", "(('title',), False, False, None, False, True, ('ASC',))"]
shop_book sequences [{'name': 'shop_book_id_seq', 'table': 'shop_book', 'column': 'id'}]
shop_book primary key id
shop_book relations {'author_id': ('id', 'shop_author')}
shop_doc columns [('id', 20, False, False), ('title', 1043, False, False), ('tags', 1015, False, False), ('data', 3802, False, False)]
shop_doc constraints ["(('data',), False, False, None, False, True, ())", "(('id',), True, True, None, False, False, ())", "(('tags',), False, False, None, False, True, ())"]
shop_doc sequences [{'name': 'shop_doc_id_seq', 'table': 'shop_doc', 'column': 'id'}]
shop_doc primary key id
shop_doc relations {}
tables ['shop_author', 'shop_book', 'shop_doc']
`
	if got := django("introspect.py"); got != introspection {
		t.Fatalf("Django's introspection:\n%s\nwant\n%s", got, introspection)
	}
	const columns = `SELECT string_agg(table_name || '.' || column_name || ' ' || data_type || coalesce('(' || character_maximum_length || ')', '') || ' ' || is_nullable || ' ' || coalesce(column_default, '-'), ', ' ORDER BY table_name, column_name)
		FROM information_schema.columns WHERE table_name LIKE 'shop\_%'`
	const rows = `SELECT string_agg(a.name || ' ' || b.title || ' ' || b.pages, ', ' ORDER BY b.title) FROM shop_book b JOIN shop_author a ON a.id = b.author_id`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, s := connect(t, h.dsn(h.nodes["n1"])), connect(t, h.dsn(h.nodes["n2"]))
	var want [2]string
	for i, q := range []string{columns, rows} {
		if err := p.QueryRow(ctx, q).Scan(&want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(want[0], "shop_book.pages integer NO -") || !strings.Contains(want[0], "shop_book.title character varying(250) NO") {
		t.Fatalf("primary's columns after the migrations: %s", want[0])
	}
	if want[1] != "Stanisław Solaris 205, Ursula The Dispossessed 387, Ursula The Lathe of Heaven 184" {
		t.Fatalf("primary's rows: %s", want[1])
	}
	for i, q := range []string{columns, rows} {
		var got string
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if err := s.QueryRow(ctx, q).Scan(&got); err == nil && got == want[i] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("standby has\n%s\nprimary\n%s", got, want[i])
			}
		}
	}
}
