package proctree

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

func TestDescendantsAndState(t *testing.T) {
	// sh forks sleep and waits: the tree is self -> sh -> sleep.
	cmd := exec.Command("sh", "-c", "sleep 30; true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sh := cmd.Process.Pid
	var kids []int
	for range 200 {
		if kids = Descendants(sh); len(kids) > 0 {
			break
		}
		exec.Command("sleep", "0.01").Run()
	}
	if len(kids) != 1 {
		t.Fatalf("Descendants(sh) = %v, want its one sleep", kids)
	}
	if all := Descendants(os.Getpid()); !slices.Contains(all, sh) || !slices.Contains(all, kids[0]) {
		t.Fatalf("Descendants(self) = %v, want sh %d and its child %d", all, sh, kids[0])
	}
	if _, ppid, ok := Stat(kids[0]); !ok || ppid != sh {
		t.Fatalf("Stat(sleep) ppid = %d ok %v, want %d", ppid, ok, sh)
	}
	if st := State(sh); st != 'S' && st != 'R' {
		t.Fatalf("State(sh) = %q, want S or R", st)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if st := State(sh); st != 0 {
		t.Fatalf("State of a reaped process = %q, want 0", st)
	}
}
