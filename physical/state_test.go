package physical

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tandemdb/tandem/config"
)

// TestLoadStateRefusesWritesetData: a node whose PostgreSQL data directory
// exists without the physical engine's state (the writeset engine made
// it: both keep it in NODE_DATA/pgdata) refuses to start with
// ErrOtherEngine; a fresh node starts as the first node's standby, and the
// state it saves is found by StatePath.
func TestLoadStateRefusesWritesetData(t *testing.T) {
	c := &config.Cluster{Nodes: []config.Node{{ID: "n1"}, {ID: "n2"}}}
	c.Repl.Safeness = "2-safe-received"
	for _, tc := range []struct {
		name    string
		pgdata  bool
		wantErr bool
	}{
		{"fresh node", false, false},
		{"writeset engine's data directory", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e := &Engine{c: c, cfg: Config{ID: "n2"}, dir: filepath.Join(dir, "physical"), pgdata: filepath.Join(dir, "pgdata"), changed: make(chan struct{})}
			if err := os.MkdirAll(e.dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.pgdata {
				if err := os.MkdirAll(e.pgdata, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(e.pgdata, "PG_VERSION"), []byte("15\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := e.loadState()
			if tc.wantErr {
				if !errors.Is(err, ErrOtherEngine) {
					t.Fatalf("loadState: %v, want ErrOtherEngine", err)
				}
				if _, serr := os.Stat(StatePath(dir)); serr == nil {
					t.Fatal("a refused node wrote the engine's state")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := e.state(); st.Role != RoleStandby || st.Primary != "n1" || st.Epoch != 1 {
				t.Fatalf("fresh state %+v", st)
			}
			if _, err := os.Stat(StatePath(dir)); err != nil {
				t.Fatalf("the saved state is not at StatePath: %v", err)
			}
		})
	}
}

func TestSwitchPoint(t *testing.T) {
	hist := "1\t0/3000148\tno recovery target specified\n\n2\t0/5A0000A0\tno recovery target specified\n"
	for _, c := range []struct {
		tli  uint64
		want uint64
		ok   bool
	}{
		{1, 0x3000148, true},
		{2, 0x5A0000A0, true},
		{3, 0, false},
	} {
		got, ok := switchPoint(hist, c.tli)
		if got != c.want || ok != c.ok {
			t.Errorf("switchPoint(tli %d) = %X, %v; want %X, %v", c.tli, got, ok, c.want, c.ok)
		}
	}
}
