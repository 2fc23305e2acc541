package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMultiMasterExamples: the multi-master example files are valid
// cluster files of three nodes on their back end.
func TestMultiMasterExamples(t *testing.T) {
	for _, tc := range []struct{ file, backend string }{
		{"multi-master-sqlite.toml", "sqlite"},
		{"multi-master-postgres.toml", "postgres"},
	} {
		path := filepath.Join("..", "examples", tc.file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(path, data)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if !c.MultiMaster() || len(c.Nodes) != 3 {
			t.Fatalf("%s: design %q, %d nodes", tc.file, c.Design, len(c.Nodes))
		}
		for _, n := range c.Nodes {
			if n.Backend != tc.backend {
				t.Fatalf("%s: node %s has backend %q", tc.file, n.ID, n.Backend)
			}
		}
	}
}

// TestPostgresReplicatedExamples: the managed PostgreSQL hot-standby and
// single-master examples are valid cluster files on the engine their name
// says (the plain names on the physical engine, -writeset on tandem's
// log), with automatic failover, a router and their number of nodes.
func TestPostgresReplicatedExamples(t *testing.T) {
	for _, tc := range []struct {
		file, design, engine string
		nodes                int
	}{
		{"hot-standby-postgres.toml", "hot-standby", EnginePhysical, 2},
		{"hot-standby-postgres-writeset.toml", "hot-standby", EngineWriteset, 2},
		{"single-master-postgres.toml", "single-master", EnginePhysical, 3},
		{"single-master-postgres-writeset.toml", "single-master", EngineWriteset, 3},
		{"hot-standby-postgres-external.toml", "hot-standby", EnginePhysical, 2},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Setenv("TANDEM_SERVER_PASSWORD", "from-the-environment")
			path := filepath.Join("..", "examples", tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(path, data)
			if err != nil {
				t.Fatal(err)
			}
			if c.Design != tc.design || c.Repl.Engine != tc.engine || len(c.Nodes) != tc.nodes || c.Router == nil {
				t.Fatalf("design %q, engine %q, %d nodes, router %v; want %s, %s, %d nodes, a router",
					c.Design, c.Repl.Engine, len(c.Nodes), c.Router != nil, tc.design, tc.engine, tc.nodes)
			}
			if c.Repl.Failover != "automatic" {
				t.Fatalf("failover %q, want automatic", c.Repl.Failover)
			}
			external := strings.Contains(tc.file, "external")
			for _, n := range c.Nodes {
				if n.Backend != "postgres" || (n.DSN != "") != external {
					t.Fatalf("node %s: backend %q dsn %q, want a PostgreSQL server (external: %v)", n.ID, n.Backend, n.DSN, external)
				}
			}
		})
	}
}
