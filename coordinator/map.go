package coordinator

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tandemdb/tandem/certifier"
)

// Roles a member can have in the map.
const (
	RolePrimary = "primary"
	RoleStandby = "standby"
	RoleWitness = "witness"
)

// Sentinel errors; callers test them with errors.Is (they survive the hop
// from a follower to the leader).
var (
	ErrNotLeader     = errors.New("coordinator: not the Raft leader")
	ErrNoLeader      = errors.New("coordinator: no Raft leader")
	ErrNotPrimary    = errors.New("coordinator: not the primary of the map")
	ErrStaleEpoch    = errors.New("coordinator: epoch is not the map's current epoch")
	ErrNotMember     = errors.New("coordinator: not a member of the cluster map")
	ErrNotStandby    = errors.New("coordinator: not a standby")
	ErrHandingOver   = errors.New("coordinator: the primary is handing over; lease refused")
	ErrStale         = errors.New("coordinator: the map changed since the decision was taken")
	ErrNoCandidate   = errors.New("coordinator: no standby holds every acknowledged commit")
	ErrLeaseValid    = errors.New("coordinator: the primary's lease has not lapsed")
	ErrAwaitReports  = errors.New("coordinator: waiting for the standbys' last reports")
	ErrNoLease       = errors.New("coordinator: no lease was granted in this epoch")
	ErrManual        = errors.New("coordinator: failover is manual")
	ErrUninitialized = errors.New("coordinator: the cluster map is not initialized")
	ErrBadCommand    = errors.New("coordinator: malformed command")
	ErrClosed        = errors.New("coordinator: shut down")
)

var sentinels = []error{ErrNotLeader, ErrNoLeader, ErrNotPrimary, ErrStaleEpoch, ErrNotMember,
	ErrNotStandby, ErrHandingOver, ErrStale, ErrNoCandidate, ErrLeaseValid, ErrNoLease, ErrManual,
	ErrUninitialized, ErrBadCommand, ErrClosed}

// Member is one voter of the group and its role in the map.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	Role     string `json:"role"`
}

// Lease is the primary's lease as the map records it. It holds no clock
// reading: the holder measures Duration on its own monotonic clock from the
// moment it sent the request that Seq answers, and every coordinator
// measures the lapse on its own monotonic clock from the moment it applied
// that entry (see DESIGN.md).
type Lease struct {
	Holder   string        `json:"holder,omitempty"`
	Epoch    uint64        `json:"epoch"`
	Seq      uint64        `json:"seq"`
	Duration time.Duration `json:"duration"`
}

// Ack is what a standby last reported having acknowledged.
type Ack struct {
	Epoch    uint64 `json:"epoch"`
	GSN      uint64 `json:"gsn"`
	Level    string `json:"level"`
	Degraded bool   `json:"degraded,omitempty"` // set by the primary: it no longer waits for this standby
}

// Transition is one change of primary.
type Transition struct {
	Epoch  uint64 `json:"epoch"` // the new epoch
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"` // failover | promote | switchover
	Lost   uint64 `json:"lost"`   // acknowledged commits the new primary may not hold (1-safe)
	// CommitGSN is the old primary's commit_gsn at the change; Refined
	// says Lost was recomputed from the new primary's real last GSN
	// (ToGSN). OldAcked is what the old primary reported when it came
	// back: the highest GSN it answered success (OldExact), or the end of
	// its log after a restart (an upper bound).
	CommitGSN uint64 `json:"commit_gsn,omitempty"`
	Refined   bool   `json:"refined,omitempty"`
	ToGSN     uint64 `json:"to_gsn,omitempty"`
	OldAcked  uint64 `json:"old_acked,omitempty"`
	OldExact  bool   `json:"old_exact,omitempty"`
}

// recount sets t.Lost from what is known (Refined: the new primary's
// GSN; OldAcked: the old primary's) and returns the change.
func (t *Transition) recount() (before, after uint64) {
	before = t.Lost
	if !t.Refined {
		return before, before
	}
	top := max(t.CommitGSN, t.OldAcked)
	t.Lost = 0
	if top > t.ToGSN {
		t.Lost = top - t.ToGSN
	}
	return before, t.Lost
}

// Map is the replicated cluster map.
type Map struct {
	Initialized bool           `json:"initialized"`
	Index       uint64         `json:"index"` // Raft index of the last change
	Epoch       uint64         `json:"epoch"`
	Primary     string         `json:"primary"`
	Members     []Member       `json:"members"`
	Safeness    string         `json:"safeness"`
	Automatic   bool           `json:"automatic"`
	Lease       Lease          `json:"lease"`
	CommitGSN   uint64         `json:"commit_gsn"` // highest GSN the primary reported acknowledged to a client
	Acks        map[string]Ack `json:"acks,omitempty"`
	HandOverTo  string         `json:"hand_over_to,omitempty"` // a promote/switchover waiting for the lease to be free
	HandOverWhy string         `json:"hand_over_why,omitempty"`
	Released    bool           `json:"released,omitempty"` // the holder gave the lease up
	Lost        uint64         `json:"lost"`               // total counted over all failovers
	History     []Transition   `json:"history,omitempty"`
}

// Member finds id.
func (m *Map) Member(id string) (Member, bool) {
	for _, x := range m.Members {
		if x.ID == id {
			return x, true
		}
	}
	return Member{}, false
}

// Clone is a deep copy (watchers and Decide get their own).
func (m Map) Clone() Map {
	m.Members = slices.Clone(m.Members)
	m.History = slices.Clone(m.History)
	if m.Acks != nil {
		a := make(map[string]Ack, len(m.Acks))
		for k, v := range m.Acks {
			a[k] = v
		}
		m.Acks = a
	}
	return m
}

// Command ops.
const (
	OpInit       = "init"
	OpLease      = "lease"      // acquire or renew
	OpRelease    = "release"    // the holder gives the lease up
	OpAck        = "ack"        // a standby reports
	OpDegrade    = "degrade"    // the primary stops (or resumes) waiting for a standby
	OpHandOver   = "handover"   // promote/switchover request: wait for the lease to be free
	OpTransition = "transition" // the leader's decision: a new primary and epoch
	OpSafeness   = "safeness"   // tandem set: the level the failover rule judges standbys by
	OpRefine     = "refine"     // the new primary's real last GSN: the change's loss count, exactly
	OpTail       = "tail"       // the old primary, back, reports how far it acknowledged
)

// Command is one entry of the Raft log. From is the identity that asked,
// taken from its certificate, never from the payload.
type Command struct {
	Op   string `json:"op"`
	From string `json:"from"`

	// init
	Members   []Member      `json:"members,omitempty"`
	Primary   string        `json:"primary,omitempty"`
	Safeness  string        `json:"safeness,omitempty"`
	Automatic bool          `json:"automatic,omitempty"`
	LeaseDur  time.Duration `json:"lease_dur,omitempty"`

	Epoch uint64 `json:"epoch,omitempty"`
	GSN   uint64 `json:"gsn,omitempty"`
	Level string `json:"level,omitempty"`

	// degrade
	Standby  string `json:"standby,omitempty"`
	Degraded bool   `json:"degraded,omitempty"`

	// handover, transition
	Target    string `json:"target,omitempty"`
	Reason    string `json:"reason,omitempty"`
	ExpectSeq uint64 `json:"expect_seq,omitempty"`
	Lost      uint64 `json:"lost,omitempty"`

	// certify (forwarded to the leader): encoded certifier.Requests, the
	// ones waiting on the member when the batch left
	Certs [][]byte `json:"certs,omitempty"`
	// CertEarly asks the leader to send, with its answer, the certified
	// writesets after GSN CertSince (what the member's copy of the log
	// has) up to the batch's last: the member applies them before its
	// copy of the log learns of them (early.go).
	CertEarly bool   `json:"cert_early,omitempty"`
	CertSince uint64 `json:"cert_since,omitempty"`
}

// CertAnswer is the leader's answer to one request of a batch.
type CertAnswer struct {
	Decision *certifier.Decision `json:"d,omitempty"`
	Err      string              `json:"err,omitempty"`
}

// Result is what applying a command answers.
type Result struct {
	Map Map    `json:"map"`
	Err string `json:"err,omitempty"`
	// Certs answer a forwarded certification batch (OpCertify), one per
	// request in order.
	Certs []CertAnswer `json:"certs,omitempty"`
	// Early are the certified writesets a CertEarly batch asked for, in
	// GSN order.
	Early []*certifier.Committed `json:"early,omitempty"`
}

// apply changes m by c at Raft index idx. It is deterministic: every
// replica applies the same entries in the same order to the same map. An
// error leaves m as it was.
func apply(m *Map, c Command, idx uint64) error {
	if c.Op != OpInit && !m.Initialized {
		return ErrUninitialized
	}
	switch c.Op {
	case OpInit:
		if m.Initialized {
			return nil // every voter may propose it; the first wins
		}
		if len(c.Members) == 0 || c.Primary == "" || c.LeaseDur <= 0 {
			return fmt.Errorf("%w: init needs members, a primary and a lease duration", ErrBadCommand)
		}
		*m = Map{Initialized: true, Epoch: c.Epoch, Primary: c.Primary, Members: slices.Clone(c.Members),
			Safeness: c.Safeness, Automatic: c.Automatic, Lease: Lease{Duration: c.LeaseDur}, Acks: map[string]Ack{}}
		if m.Epoch == 0 {
			m.Epoch = 1
		}
		for i := range m.Members {
			if m.Members[i].Role != RoleWitness {
				m.Members[i].Role = RoleStandby
			}
		}
		if !m.setRole(c.Primary, RolePrimary) {
			*m = Map{}
			return fmt.Errorf("%w: primary %q", ErrNotMember, c.Primary)
		}
	case OpLease:
		if c.From != m.Primary {
			return fmt.Errorf("%w: %q asked for the lease, the primary is %q", ErrNotPrimary, c.From, m.Primary)
		}
		if c.Epoch != m.Epoch {
			return fmt.Errorf("%w: asked in epoch %d, the map is in %d", ErrStaleEpoch, c.Epoch, m.Epoch)
		}
		if m.HandOverTo != "" {
			return fmt.Errorf("%w to %s", ErrHandingOver, m.HandOverTo)
		}
		m.Lease.Holder, m.Lease.Epoch = c.From, c.Epoch
		m.Lease.Seq++
		m.Released = false
		if c.GSN > m.CommitGSN {
			m.CommitGSN = c.GSN
		}
	case OpRelease:
		if c.From != m.Lease.Holder || c.Epoch != m.Lease.Epoch {
			return fmt.Errorf("%w: %q does not hold the lease of epoch %d", ErrNotPrimary, c.From, c.Epoch)
		}
		if c.GSN > m.CommitGSN {
			m.CommitGSN = c.GSN
		}
		m.Released = true
		m.Lease.Seq++
	case OpAck:
		mem, ok := m.Member(c.From)
		if !ok {
			return fmt.Errorf("%w: %q", ErrNotMember, c.From)
		}
		if mem.Role != RoleStandby {
			return fmt.Errorf("%w: %q is %s", ErrNotStandby, c.From, mem.Role)
		}
		if c.Epoch != m.Epoch {
			return fmt.Errorf("%w: ack of epoch %d, the map is in %d", ErrStaleEpoch, c.Epoch, m.Epoch)
		}
		a := m.Acks[c.From]
		if a.Epoch != c.Epoch || c.GSN >= a.GSN {
			a.GSN = c.GSN
		}
		a.Epoch, a.Level = c.Epoch, c.Level
		m.Acks[c.From] = a
	case OpDegrade:
		if c.From != m.Primary || c.Epoch != m.Epoch {
			return fmt.Errorf("%w: only the primary of epoch %d marks standbys", ErrNotPrimary, m.Epoch)
		}
		mem, ok := m.Member(c.Standby)
		if !ok || mem.Role != RoleStandby {
			return fmt.Errorf("%w: %q", ErrNotStandby, c.Standby)
		}
		a, had := m.Acks[c.Standby]
		if !had && !c.Degraded {
			break // nothing to clear
		}
		a.Degraded = c.Degraded
		m.Acks[c.Standby] = a
	case OpHandOver:
		mem, ok := m.Member(c.Target)
		if !ok || mem.Role != RoleStandby {
			return fmt.Errorf("%w: %q", ErrNotStandby, c.Target)
		}
		if c.Epoch != 0 && c.Epoch != m.Epoch {
			return fmt.Errorf("%w: requested in epoch %d, the map is in %d", ErrStaleEpoch, c.Epoch, m.Epoch)
		}
		m.HandOverTo, m.HandOverWhy = c.Target, c.Reason
	case OpTransition:
		// The leader decided on a copy of the map; it holds only if nothing
		// it decided on moved meanwhile (compare-and-set on epoch and lease).
		if c.Epoch != m.Epoch || c.ExpectSeq != m.Lease.Seq {
			return fmt.Errorf("%w: decided at epoch %d lease %d, the map is at %d/%d", ErrStale, c.Epoch, c.ExpectSeq, m.Epoch, m.Lease.Seq)
		}
		mem, ok := m.Member(c.Target)
		if !ok || mem.Role != RoleStandby {
			return fmt.Errorf("%w: %q", ErrNotStandby, c.Target)
		}
		if c.Reason == "failover" && levelRank(m.Safeness) > 0 && m.Acks[c.Target].Degraded {
			// The primary marked the target degraded after the decision.
			return fmt.Errorf("%w: %s was marked degraded", ErrStale, c.Target)
		}
		from := m.Primary
		m.setRole(from, RoleStandby)
		m.setRole(c.Target, RolePrimary)
		m.Epoch++
		m.Primary = c.Target
		// The new primary must acquire its own lease; until it does, the
		// coordinators time it from this entry, so a new primary that never
		// comes up is replaced in turn.
		m.Lease = Lease{Holder: c.Target, Epoch: m.Epoch, Seq: m.Lease.Seq + 1, Duration: m.Lease.Duration}
		m.Released = false
		m.HandOverTo, m.HandOverWhy = "", ""
		// Acks of the old epoch say nothing about the new one.
		m.Acks = map[string]Ack{}
		m.Lost += c.Lost
		m.History = append(m.History, Transition{Epoch: m.Epoch, From: from, To: c.Target, Reason: c.Reason, Lost: c.Lost, CommitGSN: m.CommitGSN})
		if len(m.History) > 32 {
			m.History = m.History[len(m.History)-32:]
		}
	case OpRefine:
		// The promoted node reports the last GSN it holds: the change
		// lost commit_gsn - that (the old primary's last reported
		// acknowledged GSN; acknowledgements after its last report are not
		// known, so this is a lower bound), not the estimate from reports.
		if c.From != m.Primary || c.Epoch != m.Epoch || len(m.History) == 0 {
			return fmt.Errorf("%w: only the primary of epoch %d refines its change", ErrNotPrimary, m.Epoch)
		}
		t := &m.History[len(m.History)-1]
		if t.Epoch != c.Epoch || t.To != c.From || t.Refined {
			break
		}
		t.Refined, t.ToGSN = true, c.GSN
		before, after := t.recount()
		m.Lost = m.Lost - before + after
	case OpTail:
		// The old primary of a change, back (a healed partition, a
		// restart), reports how far it acknowledged: the change's loss
		// is counted from that (DESIGN.md).
		for i := len(m.History) - 1; i >= 0; i-- {
			t := &m.History[i]
			if t.Epoch != c.Epoch || t.From != c.From {
				continue
			}
			if t.OldAcked != 0 {
				break // reported once
			}
			t.OldAcked, t.OldExact = c.GSN, c.Degraded
			before, after := t.recount()
			m.Lost = m.Lost - before + after
			break
		}
	case OpSafeness:
		if _, ok := m.Member(c.From); !ok {
			return fmt.Errorf("%w: %q", ErrNotMember, c.From)
		}
		switch c.Safeness {
		case "1-safe", "2-safe-received", "2-safe-visible", "2-safe-durable":
		default:
			return fmt.Errorf("%w: safeness %q", ErrBadCommand, c.Safeness)
		}
		m.Safeness = c.Safeness
	default:
		return fmt.Errorf("%w: op %q", ErrBadCommand, c.Op)
	}
	m.Index = idx
	return nil
}

func (m *Map) setRole(id, role string) bool {
	for i := range m.Members {
		if m.Members[i].ID == id && m.Members[i].Role != RoleWitness {
			m.Members[i].Role = role
			return true
		}
	}
	return false
}

// errorFrom maps an error text back to its sentinel, so errors.Is works on
// the far side of a forwarded request.
func errorFrom(s string) error {
	if s == "" {
		return nil
	}
	for _, e := range sentinels {
		if len(s) >= len(e.Error()) && s[:len(e.Error())] == e.Error() {
			if s == e.Error() {
				return e
			}
			return fmt.Errorf("%w%s", e, s[len(e.Error()):])
		}
	}
	return errors.New(s)
}
