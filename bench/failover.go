package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Event marks a moment of a run on its timeline (a node killed, service
// back); the HTML report draws it on the throughput chart.
type Event struct {
	// T is seconds since the run started.
	T     float64 `json:"t_s"`
	Label string  `json:"label"`
	// Kind is "fault" (drawn red) or "recovery" (drawn green).
	Kind string `json:"kind"`
}

// Event kinds.
const (
	EventFault    = "fault"
	EventRecovery = "recovery"
)

// Failover describes a failover forced during a run (`tandem demo` kills
// the primary): when, how long until a commit succeeded again, who took
// over, and whether every acknowledged commit survived.
type Failover struct {
	// Killed is the node SIGKILLed, KilledAt when.
	Killed   string    `json:"killed"`
	KilledAt time.Time `json:"killed_at"`
	// KillT is KilledAt in seconds since the run started.
	KillT float64 `json:"kill_t_s"`
	// Recovered tells whether a commit succeeded after the kill;
	// FirstCommitAt is the first such commit's answer, RecoveredT in
	// seconds since the run started.
	Recovered     bool      `json:"recovered"`
	FirstCommitAt time.Time `json:"first_commit_at,omitempty"`
	RecoveredT    float64   `json:"recovered_t_s,omitempty"`
	// DurationMs is the failover's duration: the kill to the first
	// successful commit of a statement sent after the kill.
	DurationMs float64 `json:"duration_ms,omitempty"`
	// NewPrimary and Epoch are the cluster map's after the failover.
	NewPrimary string `json:"new_primary"`
	Epoch      uint64 `json:"epoch"`
	// Settings of the run.
	Safeness   string `json:"safeness"`
	Lease      string `json:"lease"`
	LeaseGrace string `json:"lease_grace"`
	// AckedChecked commits were acknowledged to the audit writer; Lost of
	// them are missing on the new primary afterwards.
	AckedChecked int64 `json:"acked_checked"`
	Lost         int64 `json:"lost"`
	// CheckError says why the acknowledged commits could not be checked.
	CheckError string `json:"check_error,omitempty"`
	// SessionsSurvived counts client sessions that kept their connection
	// across the failover (they must reconnect today).
	SessionsSurvived int `json:"sessions_survived"`
	Sessions         int `json:"sessions"`
}

// Print writes the failover's lines of a summary.
func (f *Failover) Print(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "failover: SIGKILL of the primary %s at %.1fs (%s)\n", f.Killed, f.KillT, f.KilledAt.Format("15:04:05.000"))
	if f.Recovered {
		fmt.Fprintf(&b, "  first successful commit after it at %.1fs: failover took %.0f ms\n", f.RecoveredT, f.DurationMs)
	} else {
		b.WriteString("  NO commit succeeded after the kill\n")
	}
	if f.NewPrimary != "" {
		fmt.Fprintf(&b, "  new primary %s, epoch %d (safeness %s, lease %s, grace %s)\n", f.NewPrimary, f.Epoch, f.Safeness, f.Lease, f.LeaseGrace)
	} else {
		fmt.Fprintf(&b, "  no new primary found (safeness %s, lease %s, grace %s)\n", f.Safeness, f.Lease, f.LeaseGrace)
	}
	fmt.Fprintf(&b, "  sessions that kept their connection: %d of %d", f.SessionsSurvived, f.Sessions)
	if f.SessionsSurvived < f.Sessions {
		b.WriteString(" (the others reconnected through the router)")
	}
	b.WriteString("\n")
	if f.CheckError != "" {
		fmt.Fprintf(&b, "acknowledged commits NOT checked: %s\n", f.CheckError)
	} else {
		fmt.Fprintf(&b, "acknowledged commits checked: %d, lost: %d\n", f.AckedChecked, f.Lost)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
