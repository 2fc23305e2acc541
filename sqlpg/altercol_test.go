package sqlpg

import (
	"errors"
	"testing"
)

func TestAlterColumnSQL(t *testing.T) {
	const base = `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "b" TEXT NOT NULL DEFAULT ('x'), "c" INT CHECK ("c" IS NOT NULL OR 1), d REAL DEFAULT -1, "e,f" TEXT CONSTRAINT nn NOT NULL, UNIQUE ("b", "c"))`
	tests := []struct {
		col, action, arg, want string
	}{
		{"b", AlterDropNotNull, "", `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "b" TEXT DEFAULT ('x'), "c" INT CHECK ("c" IS NOT NULL OR 1), d REAL DEFAULT -1, "e,f" TEXT CONSTRAINT nn NOT NULL, UNIQUE ("b", "c"))`},
		{"b", AlterDropDefault, "", `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "b" TEXT NOT NULL, "c" INT CHECK ("c" IS NOT NULL OR 1), d REAL DEFAULT -1, "e,f" TEXT CONSTRAINT nn NOT NULL, UNIQUE ("b", "c"))`},
		{"B", AlterSetDefault, "'y' || 'z'", `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "b" TEXT NOT NULL DEFAULT ('y' || 'z'), "c" INT CHECK ("c" IS NOT NULL OR 1), d REAL DEFAULT -1, "e,f" TEXT CONSTRAINT nn NOT NULL, UNIQUE ("b", "c"))`},
		{"b", AlterSetNotNull, "", base},
		// NOT NULL inside a CHECK is not the column's.
		{"c", AlterSetNotNull, "", `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "b" TEXT NOT NULL DEFAULT ('x'), "c" INT CHECK ("c" IS NOT NULL OR 1) NOT NULL, d REAL DEFAULT -1, "e,f" TEXT CONSTRAINT nn NOT NULL, UNIQUE ("b", "c"))`},
		{"c", AlterDropNotNull, "", base},
		{"d", AlterDropDefault, "", `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "b" TEXT NOT NULL DEFAULT ('x'), "c" INT CHECK ("c" IS NOT NULL OR 1), d REAL, "e,f" TEXT CONSTRAINT nn NOT NULL, UNIQUE ("b", "c"))`},
		{"e,f", AlterDropNotNull, "", `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "b" TEXT NOT NULL DEFAULT ('x'), "c" INT CHECK ("c" IS NOT NULL OR 1), d REAL DEFAULT -1, "e,f" TEXT, UNIQUE ("b", "c"))`},
	}
	for _, tc := range tests {
		got, err := AlterColumnSQL(base, tc.col, tc.action, tc.arg)
		if err != nil || got != tc.want {
			t.Errorf("%s %s:\n got %s (%v)\nwant %s", tc.col, tc.action, got, err, tc.want)
		}
	}
	if _, err := AlterColumnSQL(base, "nosuch", AlterDropNotNull, ""); !errors.Is(err, ErrAlterColumn) {
		t.Errorf("unknown column: %v", err)
	}
	if _, err := AlterColumnSQL(`CREATE TABLE t (a`, "a", AlterDropNotNull, ""); !errors.Is(err, ErrAlterColumn) {
		t.Errorf("unterminated: %v", err)
	}
}

func TestAlterTableConstraints(t *testing.T) {
	const base = `CREATE TABLE "b" ("id" INTEGER PRIMARY KEY, "a" INTEGER CONSTRAINT "fk_a" REFERENCES "au" ("id") ON DELETE CASCADE NOT DEFERRABLE NOT NULL, "p" INT, CONSTRAINT "ck" CHECK ("p" > 0))`
	tests := []struct{ action, arg, want string }{
		{AlterAddConstraint, `CONSTRAINT "u" UNIQUE ("p")`, `CREATE TABLE "b" ("id" INTEGER PRIMARY KEY, "a" INTEGER CONSTRAINT "fk_a" REFERENCES "au" ("id") ON DELETE CASCADE NOT DEFERRABLE NOT NULL, "p" INT, CONSTRAINT "ck" CHECK ("p" > 0), CONSTRAINT "u" UNIQUE ("p"))`},
		{AlterDropConstraint, "ck", `CREATE TABLE "b" ("id" INTEGER PRIMARY KEY, "a" INTEGER CONSTRAINT "fk_a" REFERENCES "au" ("id") ON DELETE CASCADE NOT DEFERRABLE NOT NULL, "p" INT)`},
		{AlterDropConstraint, "fk_a", `CREATE TABLE "b" ("id" INTEGER PRIMARY KEY, "a" INTEGER NOT NULL, "p" INT, CONSTRAINT "ck" CHECK ("p" > 0))`},
		{AlterDropConstraint, "absent", base},
		{AlterDropReferences, "au", `CREATE TABLE "b" ("id" INTEGER PRIMARY KEY, "a" INTEGER NOT NULL, "p" INT, CONSTRAINT "ck" CHECK ("p" > 0))`},
		{AlterDropReferences, "other", base},
	}
	// A named CHECK inside a column definition goes with its name.
	const colCheck = `CREATE TABLE "c" ("id" INTEGER PRIMARY KEY, "m" INTEGER CONSTRAINT "m_pos" CHECK (m >= 0) NOT NULL, "n" INT CONSTRAINT "n_pos" CHECK (n > 0))`
	for name, want := range map[string]string{
		"m_pos": `CREATE TABLE "c" ("id" INTEGER PRIMARY KEY, "m" INTEGER NOT NULL, "n" INT CONSTRAINT "n_pos" CHECK (n > 0))`,
		"n_pos": `CREATE TABLE "c" ("id" INTEGER PRIMARY KEY, "m" INTEGER CONSTRAINT "m_pos" CHECK (m >= 0) NOT NULL, "n" INT)`,
	} {
		if got, err := AlterColumnSQL(colCheck, "", AlterDropConstraint, name); err != nil || got != want {
			t.Errorf("drop %s:\n got %s (%v)\nwant %s", name, got, err, want)
		}
	}
	for _, tc := range tests {
		got, err := AlterColumnSQL(base, "", tc.action, tc.arg)
		if err != nil || got != tc.want {
			t.Errorf("%s %s:\n got %s (%v)\nwant %s", tc.action, tc.arg, got, err, tc.want)
		}
	}
}

// TestDropReferences: every foreign key to a table goes, in every form
// SQLite keeps it (DROP TABLE ... CASCADE), and nothing else.
func TestDropReferences(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`CREATE TABLE ch (id INTEGER PRIMARY KEY, pa_id INTEGER REFERENCES pa(id))`, `CREATE TABLE ch (id INTEGER PRIMARY KEY, pa_id INTEGER)`},
		{`CREATE TABLE ch (id INTEGER PRIMARY KEY, pa_id INTEGER REFERENCES "pa" ("id") ON DELETE SET NULL, n TEXT, x INT REFERENCES pa)`,
			`CREATE TABLE ch (id INTEGER PRIMARY KEY, pa_id INTEGER, n TEXT, x INT)`},
		{`CREATE TABLE ch (id INTEGER PRIMARY KEY, a INT, b INT, CONSTRAINT fk FOREIGN KEY (a, b) REFERENCES pa (x, y), FOREIGN KEY (b) REFERENCES other (id), FOREIGN KEY (a) REFERENCES PA(id))`,
			`CREATE TABLE ch (id INTEGER PRIMARY KEY, a INT, b INT, FOREIGN KEY (b) REFERENCES other (id))`},
		{`CREATE TABLE ch (id INTEGER PRIMARY KEY, a INT CONSTRAINT c1 REFERENCES pa (id) DEFERRABLE INITIALLY DEFERRED UNIQUE NOT NULL)`,
			`CREATE TABLE ch (id INTEGER PRIMARY KEY, a INT UNIQUE NOT NULL)`},
		{`CREATE TABLE ch (id INTEGER PRIMARY KEY, a INT REFERENCES pax (id))`, `CREATE TABLE ch (id INTEGER PRIMARY KEY, a INT REFERENCES pax (id))`},
	} {
		got, err := AlterColumnSQL(tc.in, "", AlterDropReferences, "pa")
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", tc.in, got, err, tc.want)
		}
	}
}

// TestConstraintName: the names a CREATE TABLE text gives its keys, as
// the catalog reads them back; "" where it gives none.
func TestConstraintName(t *testing.T) {
	const create = `CREATE TABLE "b" ("id" INTEGER CONSTRAINT "PK_b" PRIMARY KEY, "a" INTEGER CONSTRAINT fk_a REFERENCES "au" ("id"), "c" TEXT UNIQUE, "d" INT, "e" INT,` +
		` CONSTRAINT "UQ_de" UNIQUE ("d", "e"), CONSTRAINT "FK_e" FOREIGN KEY ("e") REFERENCES x (id), FOREIGN KEY (d) REFERENCES y (id))`
	for _, tc := range []struct{ kind, cols, want string }{
		{"p", "id", "PK_b"},
		{"f", "a", "fk_a"},
		{"u", "c", ""},
		{"u", "d,e", "UQ_de"},
		{"u", "e,d", ""},
		{"f", "e", "FK_e"},
		{"f", "d", ""},
		{"p", "a", ""},
	} {
		if got := ConstraintName(create, tc.kind, tc.cols); got != tc.want {
			t.Errorf("%s (%s): %q, want %q", tc.kind, tc.cols, got, tc.want)
		}
	}
}

// TestDropDefaultNamedFK: ALTER TABLE ... DROP CONSTRAINT by the name the
// catalog gives a foreign key declared without one (<table>_<col>_fkey,
// as Alembic reads it back), inline or table-level; a named one keeps.
func TestDropDefaultNamedFK(t *testing.T) {
	const create = `CREATE TABLE "ch" ("id" INTEGER PRIMARY KEY, "pa" INTEGER REFERENCES "pa" ("id") ON DELETE CASCADE NOT NULL, "pb" INT CONSTRAINT fk_pb REFERENCES pb, "pc" INT, FOREIGN KEY ("pc") REFERENCES pc (id))`
	for _, tc := range []struct{ name, want string }{
		{"ch_pa_fkey", `CREATE TABLE "ch" ("id" INTEGER PRIMARY KEY, "pa" INTEGER NOT NULL, "pb" INT CONSTRAINT fk_pb REFERENCES pb, "pc" INT, FOREIGN KEY ("pc") REFERENCES pc (id))`},
		{"ch_pc_fkey", `CREATE TABLE "ch" ("id" INTEGER PRIMARY KEY, "pa" INTEGER REFERENCES "pa" ("id") ON DELETE CASCADE NOT NULL, "pb" INT CONSTRAINT fk_pb REFERENCES pb, "pc" INT)`},
		{"ch_pb_fkey", create},
		{"fk_pb", `CREATE TABLE "ch" ("id" INTEGER PRIMARY KEY, "pa" INTEGER REFERENCES "pa" ("id") ON DELETE CASCADE NOT NULL, "pb" INT, "pc" INT, FOREIGN KEY ("pc") REFERENCES pc (id))`},
	} {
		got, err := AlterColumnSQL(create, "", AlterDropConstraint, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", tc.name, got, err, tc.want)
		}
	}
	// ON DELETE SET DEFAULT is part of the clause, not the column's next
	// constraint (the cut stopped there and left "DEFAULT DEFAULT 0").
	const setDefault = `CREATE TABLE "c" ("id" INTEGER PRIMARY KEY, "a" INT CONSTRAINT fk REFERENCES p (id) ON DELETE SET DEFAULT DEFAULT 0)`
	if got, err := AlterColumnSQL(setDefault, "", AlterDropConstraint, "fk"); err != nil || got != `CREATE TABLE "c" ("id" INTEGER PRIMARY KEY, "a" INT DEFAULT 0)` {
		t.Errorf("SET DEFAULT: %s (%v)", got, err)
	}
}
