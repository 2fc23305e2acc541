package config

import (
	"os"
	"path/filepath"
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

// TestSingleMasterPhysicalExample: the physical single-master example is
// a valid cluster file of a primary and two managed PostgreSQL replicas
// on the physical engine.
func TestSingleMasterPhysicalExample(t *testing.T) {
	path := filepath.Join("..", "examples", "single-master-postgres-physical.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Design != "single-master" || !c.Physical() || len(c.Nodes) != 3 || c.Router == nil {
		t.Fatalf("design %q, physical %v, %d nodes, router %v", c.Design, c.Physical(), len(c.Nodes), c.Router != nil)
	}
}
