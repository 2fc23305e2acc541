package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tandemdb/tandem/multimaster"
)

// TestPrintMultiMaster: tandem status shows, per multi-master node, how it
// applied (batches, writesets per batch, its own writesets in batches and
// applied at once) and what its commits waited for after their own work
// (certification, then the log, then the apply), as means since it
// started; a node without a count shows "-".
func TestPrintMultiMaster(t *testing.T) {
	out := []probe{
		{Name: "n1", Kind: "node", repl: &nodeStatus{MultiMaster: &multimaster.Status{AppliedGSN: 90, Commits: 40,
			ApplyBatches: 20, ApplyWritesets: 50, ApplyOwn: 30, FastApplies: 10,
			Certifications: 40, CertifySeconds: 0.6, CommitWaits: 30, LogWaitSeconds: 0.09, ApplyWaitSeconds: 0.36}}},
		{Name: "n2", Kind: "node", repl: &nodeStatus{MultiMaster: &multimaster.Status{AppliedGSN: 90}}},
		{Name: "router", Kind: "router"},
	}
	var b bytes.Buffer
	if err := printMultiMaster(&b, out); err != nil {
		t.Fatal(err)
	}
	var n1, n2 string
	for _, l := range strings.Split(b.String(), "\n") {
		f := strings.Fields(l)
		if len(f) == 8 && f[0] == "n1" {
			n1 = strings.Join(f[1:], " ")
		}
		if len(f) == 8 && f[0] == "n2" {
			n2 = strings.Join(f[1:], " ")
		}
	}
	// 50/20 writesets per batch; 0.6 s over 40 certifications; 0.09 and
	// 0.36 s over 30 waits.
	if want := "20 2.5 30 10 15.0 3.0 12.0"; n1 != want {
		t.Errorf("n1's apply row %q, want %q\n%s", n1, want, b.String())
	}
	if want := "0 - 0 0 - - -"; n2 != want {
		t.Errorf("n2's apply row %q, want %q\n%s", n2, want, b.String())
	}
}
