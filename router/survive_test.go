package router

import (
	"testing"
)

func TestStatementKinds(t *testing.T) {
	for _, c := range []struct {
		q                       string
		setting, rollback, comm bool
	}{
		{"SET statement_timeout = '7s'", true, false, false},
		{"  set search_path to app, public", true, false, false},
		{"SET LOCAL lock_timeout = 1", false, false, false},
		{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", false, false, false},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", false, false, false},
		{"SET SESSION work_mem = '8MB'", true, false, false},
		{"RESET ALL", true, false, false},
		{"DISCARD ALL", true, false, false},
		{"rollback", false, true, false},
		{"ROLLBACK;", false, true, false},
		{"abort", false, true, false},
		{"  Abort Work", false, true, false},
		{"ROLLBACK TO SAVEPOINT a", false, false, false},
		{"ROLLBACK PREPARED 'x'", false, false, false},
		{"commit", false, false, true},
		{"END", false, false, true},
		{"COMMIT PREPARED 'x'", false, false, false},
		{"  Commit;", false, false, true},
		{"commit work", false, false, true},
		{"END TRANSACTION", false, false, true},
		{"\n\tcommit\n", false, false, true},
		{"commit   prepared 'x'", false, false, false},
		{"committed", false, false, false},
		{"endless", false, false, false},
		{"COMMIT AND CHAIN", false, false, true},
		{"SELECT 1", false, false, false},
		{"", false, false, false},
	} {
		if got := isSetting(c.q); got != c.setting {
			t.Errorf("isSetting(%q) = %v", c.q, got)
		}
		if got := isRollback(c.q); got != c.rollback {
			t.Errorf("isRollback(%q) = %v", c.q, got)
		}
		if got := isCommit(c.q); got != c.comm {
			t.Errorf("isCommit(%q) = %v", c.q, got)
		}
		// What a named statement is, for a lost transaction's Bind.
		if k := kindOf(c.q); k.rollback != c.rollback || k.commit != c.comm {
			t.Errorf("kindOf(%q) = %+v, want rollback %v, commit %v", c.q, k, c.rollback, c.comm)
		}
	}
}

func frameOf(typ byte, body ...string) []byte {
	var b []byte
	for _, s := range body {
		b = append(b, s...)
		b = append(b, 0)
	}
	f := []byte{typ, 0, 0, 0, 0}
	f = append(f, b...)
	n := len(f) - 1
	f[1], f[2], f[3], f[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return f
}

func TestSessionMemory(t *testing.T) {
	var m sessionMemory
	m.remember('Q', frameOf('Q', "SET a = 1"))
	m.remember('Q', frameOf('Q', "SELECT 1"))
	m.remember('P', frameOf('P', "s1", "SELECT $1"))
	m.remember('P', frameOf('P', "s2", "SELECT 2"))
	m.remember('P', frameOf('P', "", "SET b = 2"))
	m.remember('P', frameOf('P', "s1", "SELECT $1::int")) // re-parsed: replaced, order kept
	m.remember('C', append([]byte{'C', 0, 0, 0, 8, 'S'}, []byte("s2\x00")...))
	if len(m.settings) != 2 || m.settings[0] != "SET a = 1" || m.settings[1] != "SET b = 2" {
		t.Fatalf("settings = %q", m.settings)
	}
	if len(m.names) != 1 || m.names[0] != "s1" || string(m.parses["s1"][8:]) != "SELECT $1::int\x00" {
		t.Fatalf("prepared = %q / %q", m.names, m.parses)
	}
	m.remember('Q', frameOf('Q', "DISCARD ALL"))
	if len(m.names) != 0 {
		t.Fatalf("DISCARD ALL kept %q", m.names)
	}
}

func TestQueryFrame(t *testing.T) {
	f := queryFrame("SET x = 1")
	if f[0] != 'Q' || int(f[4]) != len(f)-1 || f[len(f)-1] != 0 {
		t.Fatalf("queryFrame = %q", f)
	}
}

func TestIsBegin(t *testing.T) {
	for q, want := range map[string]bool{
		"BEGIN":                                true,
		"begin;":                               true,
		" BEGIN ISOLATION LEVEL SERIALIZABLE ": true,
		"START TRANSACTION READ ONLY":          true,
		"start  transaction":                   true,
		"BEGIN; INSERT INTO t VALUES (1)":      false,
		"START":                                false,
		"BEGINNING":                            false,
		"SELECT 1":                             false,
		"":                                     false,
		"begin work; commit":                   false,
	} {
		if got := isBegin(q); got != want {
			t.Errorf("isBegin(%q) = %v, want %v", q, got, want)
		}
	}
}
