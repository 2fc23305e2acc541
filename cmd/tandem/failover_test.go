package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandemdb/tandem/config"
	"github.com/tandemdb/tandem/physical"
)

// TestPairFile: the cluster file `tandem bench failover` and `tandem demo`
// start is valid for each engine and back end, and says what the spec asks
// (the engine, a witness and raft addresses with automatic failover, strict
// durability on the physical engine, which refuses any other).
func TestPairFile(t *testing.T) {
	tests := []struct {
		name                string
		spec                pairSpec
		wantEngine          string
		wantDurability      string
		wantWitness, wantCo bool
	}{
		{"writeset sqlite automatic", pairSpec{Backend: "sqlite", Safeness: "2-safe-visible", Failover: "automatic"}, config.EngineWriteset, "relaxed", true, true},
		{"writeset postgres manual", pairSpec{Backend: "postgres", Engine: config.EngineWriteset, Failover: "manual"}, config.EngineWriteset, "relaxed", false, false},
		{"physical automatic", pairSpec{Backend: "postgres", Engine: config.EnginePhysical, Safeness: "2-safe-received", Failover: "automatic", Lease: time.Second, Grace: 500 * time.Millisecond}, config.EnginePhysical, "strict", true, true},
		{"physical 1-safe", pairSpec{Backend: "postgres", Engine: config.EnginePhysical, Safeness: "1-safe", Failover: "automatic"}, config.EnginePhysical, "strict", true, true},
		{"physical manual (lease cost)", pairSpec{Backend: "postgres", Engine: config.EnginePhysical, Failover: "manual"}, config.EnginePhysical, "strict", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Dir, tt.spec.Name = t.TempDir(), "bench"
			text, err := pairFile(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(tt.spec.Dir, "bench.toml")
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(file)
			if err != nil {
				t.Fatalf("the generated file does not load: %v\n%s", err, text)
			}
			if c.Repl.Engine != tt.wantEngine {
				t.Errorf("engine %q, want %q\n%s", c.Repl.Engine, tt.wantEngine, text)
			}
			if c.Repl.Durability != tt.wantDurability {
				t.Errorf("durability %q, want %q\n%s", c.Repl.Durability, tt.wantDurability, text)
			}
			if c.Repl.Engine == config.EnginePhysical {
				if err := physical.CheckDurability(c.Repl.Durability); err != nil {
					t.Errorf("the physical engine would refuse the file's durability: %v", err)
				}
			}
			if tt.spec.Safeness != "" && c.Repl.Safeness != tt.spec.Safeness {
				t.Errorf("safeness %q, want %q", c.Repl.Safeness, tt.spec.Safeness)
			}
			if got := c.Witness != nil; got != tt.wantWitness {
				t.Errorf("witness %v, want %v\n%s", got, tt.wantWitness, text)
			}
			if got := c.Coordinated(); got != tt.wantCo {
				t.Errorf("coordinated %v, want %v", got, tt.wantCo)
			}
			if c.Repl.Failover != tt.spec.Failover {
				t.Errorf("failover %q, want %q", c.Repl.Failover, tt.spec.Failover)
			}
			if len(c.Nodes) != 2 {
				t.Fatalf("%d nodes, want 2", len(c.Nodes))
			}
			for _, n := range c.Nodes {
				if n.Backend != tt.spec.Backend {
					t.Errorf("node %s backend %q, want %q", n.ID, n.Backend, tt.spec.Backend)
				}
				if tt.wantCo && n.Raft == "" {
					t.Errorf("node %s has no raft_listen with automatic failover", n.ID)
				}
			}
		})
	}
}

func TestPairFileRefusesEngine(t *testing.T) {
	tests := []struct {
		name string
		spec pairSpec
		want string
	}{
		{"physical on sqlite", pairSpec{Backend: "sqlite", Engine: config.EnginePhysical, Failover: "automatic"}, "needs backend postgres"},
		{"unknown engine", pairSpec{Backend: "postgres", Engine: "logical", Failover: "automatic"}, "use writeset or physical"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Dir, tt.spec.Name = t.TempDir(), "bench"
			_, err := pairFile(tt.spec)
			if !errors.Is(err, errPairEngine) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("pairFile: %v, want %v saying %q", err, errPairEngine, tt.want)
			}
		})
	}
}

// TestBenchFailoverEngineFlag: --engine is checked before any cluster starts.
func TestBenchFailoverEngineFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"physical needs postgres", []string{"failover", "--engine", "physical", "--trials", "1"}, "--backend postgres"},
		{"physical on sqlite named", []string{"failover", "--engine", "physical", "--backend", "sqlite", "--trials", "1"}, "--backend postgres"},
		{"unknown engine", []string{"failover", "--engine", "logical", "--backend", "postgres"}, "--engine \"logical\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newBenchFailoverCmd()
			cmd.SetArgs(tt.args[1:])
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SilenceUsage = true
			err := cmd.ExecuteContext(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("tandem bench %v: %v, want an error saying %q", tt.args, err, tt.want)
			}
		})
	}
}
