package coordinator

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandemdb/tandem/certifier"
)

// OpCertify is a member's certification request forwarded to the leader
// (Command.Cert holds the encoded certifier.Request). On the leader it
// becomes a certifier entry of the Raft log, which is not JSON (below).
const OpCertify = "certify"

// certEntryTag starts a certifier entry of the Raft log; the map's entries
// are JSON objects and start with '{'. An entry is
//
//	0xCE count:uvarint bytes:uvarint aborts:uvarint request
//
// with the window of the leader that proposed it (every member then
// evicts the same writesets, whatever its own configuration says) and the
// encoded certifier.Request, whose Origin the leader set from the
// requester's certificate.
const certEntryTag byte = 0xCE

func init() {
	// Sentinels that cross the hop from the leader back as themselves.
	sentinels = append(sentinels, certifier.ErrSnapshotTooOld, certifier.ErrBadRequest)
}

// certState is the certifier as the FSM holds it: beside the map, under
// its own lock, so a certification neither clones the map nor waits for
// its readers, and readers of the window never block the map.
type certState struct {
	mu      sync.Mutex
	s       *certifier.State
	index   uint64        // Raft index of the last certifier entry applied
	changed chan struct{} // closed and replaced at every commit

	commits, conflicts, tooOld, bad uint64 // decisions applied here
	retries                         uint64 // requests answered with an earlier decision
}

func newCertState() certState {
	return certState{s: certifier.New(), changed: make(chan struct{})}
}

// certApplied is what Raft hands back from applying a certifier entry.
type certApplied struct {
	d   certifier.Decision
	err error
}

func encodeCertEntry(w certifier.Window, req []byte) []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(req))
	b = append(b, certEntryTag)
	b = binary.AppendUvarint(b, uint64(max(w.Count, 0)))
	b = binary.AppendUvarint(b, uint64(max(w.Bytes, 0)))
	b = binary.AppendUvarint(b, uint64(max(w.Aborts, 0)))
	return append(b, req...)
}

func decodeCertEntry(b []byte) (certifier.Window, certifier.Request, error) {
	var w certifier.Window
	var v [3]uint64
	off := 1
	for i := range v {
		x, n := binary.Uvarint(b[off:])
		if n <= 0 || x > 1<<40 {
			return w, certifier.Request{}, fmt.Errorf("%w: certifier entry: bad window", certifier.ErrBadRequest)
		}
		v[i], off = x, off+n
	}
	w = certifier.Window{Count: int(v[0]), Bytes: int64(v[1]), Aborts: int(v[2])}
	r, err := certifier.DecodeRequest(b[off:])
	return w, r, err
}

func (cs *certState) apply(l *raft.Log) certApplied {
	w, r, err := decodeCertEntry(l.Data)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.index = l.Index
	if err != nil {
		cs.bad++
		return certApplied{err: err}
	}
	before := cs.s.Last()
	_, known := cs.s.Lookup(r.Origin, r.ID)
	d, err := cs.s.Certify(r, w)
	switch {
	case known:
		cs.retries++
	case errors.Is(err, certifier.ErrSnapshotTooOld):
		cs.tooOld++
	case err != nil:
		cs.bad++
	case d.Committed:
		cs.commits++
	case !d.Committed:
		cs.conflicts++
	}
	if cs.s.Last() != before {
		close(cs.changed)
		cs.changed = make(chan struct{})
	}
	return certApplied{d: d, err: err}
}

func (cs *certState) snapshot() *certifier.Snapshot {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.s.Snapshot()
}

func (cs *certState) restore(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("coordinator: restoring the certifier: %w", err)
	}
	s := certifier.New()
	if b = bytes.TrimLeft(b, " \t\r\n"); len(b) > 0 {
		if s, err = certifier.Restore(bytes.NewReader(b)); err != nil {
			return fmt.Errorf("coordinator: restoring the certifier: %w", err)
		}
	}
	cs.mu.Lock()
	cs.s = s
	close(cs.changed)
	cs.changed = make(chan struct{})
	cs.mu.Unlock()
	return nil
}

// Certify asks the certifier to commit req (multi-master): on the leader it
// proposes the request to the Raft group, elsewhere it forwards it to the
// leader over the cluster's mutual TLS, and it returns the decision once
// the entry is committed and applied on the leader (the Raft commit is the
// durability point of a certified writeset). req.Origin is set to this
// member (the leader takes it from the requester's certificate). A commit
// or an abort (a write-write conflict: Decision.Err wraps
// certifier.ErrConflict and names the table and key) is a Decision; errors
// are certifier.ErrSnapshotTooOld, certifier.ErrBadRequest, ErrClosed, or
// the context's end while no leader answered.
//
// Certify retries while there is no leader or the leader changes, with the
// same request id, so a request whose entry committed before the leader
// died is not certified twice: the retry returns the earlier decision.
// When ctx ends first the outcome is unknown; ask again with the same id.
//
// A decision does not wait for this member's own copy of the certifier to
// apply it (a follower learns of a commit at the leader's next append);
// WaitCertified does.
func (c *Coordinator) Certify(ctx context.Context, req certifier.Request) (certifier.Decision, error) {
	req.Origin = c.cfg.ID
	if err := req.Validate(); err != nil {
		return certifier.Decision{}, err
	}
	enc := req.Encode()
	backoff := 10 * time.Millisecond
	for {
		var d certifier.Decision
		var err error
		if c.raft.State() == raft.Leader {
			d, err = c.certifyLocal(ctx, enc)
		} else {
			d, err = c.forwardCertify(ctx, enc)
		}
		retry := errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoLeader)
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, net.ErrClosed) {
			retry = true
		}
		if !retry {
			return d, err
		}
		select {
		case <-ctx.Done():
			return certifier.Decision{}, fmt.Errorf("%w (%v); the outcome of request %s is unknown: ask again with the same id", err, ctx.Err(), req.ID)
		case <-c.ctx.Done():
			return certifier.Decision{}, ErrClosed
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// certifyLocal proposes an encoded request on this member, which must
// lead, with this member's window.
func (c *Coordinator) certifyLocal(ctx context.Context, req []byte) (certifier.Decision, error) {
	f := c.raft.Apply(encodeCertEntry(c.cfg.CertWindow, req), 5*time.Second)
	errc := make(chan error, 1)
	go func() { errc <- f.Error() }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		return certifier.Decision{}, fmt.Errorf("%w: %v", ErrNoLeader, ctx.Err())
	}
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrEnqueueTimeout) {
			return certifier.Decision{}, fmt.Errorf("%w: %v", ErrNotLeader, err)
		}
		if errors.Is(err, raft.ErrRaftShutdown) {
			return certifier.Decision{}, ErrClosed
		}
		return certifier.Decision{}, err
	}
	a, _ := f.Response().(certApplied)
	return a.d, a.err
}

// forwardCertify sends an encoded request to the leader on a forwarding
// connection (the leader answers with the decision and no map).
func (c *Coordinator) forwardCertify(ctx context.Context, req []byte) (certifier.Decision, error) {
	addr, id := c.raft.LeaderWithID()
	if id == "" {
		return certifier.Decision{}, ErrNoLeader
	}
	f, err := c.takeForward(ctx, string(id), string(addr))
	if err != nil {
		return certifier.Decision{}, fmt.Errorf("%w: reaching %s: %v", ErrNoLeader, id, err)
	}
	dl := time.Now().Add(10 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	_ = f.conn.SetDeadline(dl)
	if err := f.enc.Encode(Command{Op: OpCertify, Cert: req}); err != nil {
		f.conn.Close()
		return certifier.Decision{}, fmt.Errorf("%w: %v", ErrNoLeader, err)
	}
	var res Result
	if err := f.dec.Decode(&res); err != nil {
		f.conn.Close()
		return certifier.Decision{}, fmt.Errorf("%w: answer from %s: %v", ErrNoLeader, id, err)
	}
	_ = f.conn.SetDeadline(time.Time{})
	c.putForward(f)
	if err := errorFrom(res.Err); err != nil {
		return certifier.Decision{}, err
	}
	if res.Cert == nil {
		return certifier.Decision{}, fmt.Errorf("%w: the leader %s answered a certification without a decision", ErrBadCommand, id)
	}
	return *res.Cert, nil
}

// serveCertify is the leader's side of a forwarded certification: the
// origin is the requester's certificate identity, whatever the payload
// says.
func (c *Coordinator) serveCertify(from string, raw []byte) Result {
	req, err := certifier.DecodeRequest(raw)
	if err != nil {
		return Result{Err: err.Error()}
	}
	req.Origin = from
	if c.raft.State() != raft.Leader {
		return Result{Err: ErrNotLeader.Error()}
	}
	d, err := c.certifyLocal(c.ctx, req.Encode())
	if err != nil {
		return Result{Err: err.Error()}
	}
	return Result{Cert: &d}
}

// CommittedSince returns the certified writesets with a GSN above gsn, in
// GSN order (at most limit; all when limit <= 0), from this member's copy
// of the certifier's window: the replication log of a multi-master
// cluster, read by every node from its applied GSN on. It returns
// certifier.ErrSnapshotTooOld when gsn is below the window (the node must
// be re-seeded). A member that trails the leader returns what it applied;
// WaitCertified waits for a GSN.
func (c *Coordinator) CommittedSince(gsn uint64, limit int) ([]*certifier.Committed, error) {
	cs := &c.fsm.cert
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.s.CommittedSince(gsn, limit)
}

// WaitCertified returns once this member's certifier has certified GSN gsn
// (or a later one), or with the context's error.
func (c *Coordinator) WaitCertified(ctx context.Context, gsn uint64) error {
	cs := &c.fsm.cert
	for {
		cs.mu.Lock()
		ok, ch := cs.s.Last() >= gsn, cs.changed
		cs.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.ctx.Done():
			return ErrClosed
		}
	}
}

// CertStatus is the certifier as this member applied it.
type CertStatus struct {
	Last       uint64 `json:"last_gsn"`    // the last GSN certified
	Base       uint64 `json:"window_base"` // requests need a snapshot GSN >= this
	Len        int    `json:"window_len"`  // writesets in the window
	Bytes      int64  `json:"window_bytes"`
	Remembered int    `json:"remembered_ids"`
	Commits    uint64 `json:"commits"` // decisions applied here since start
	Conflicts  uint64 `json:"conflicts"`
	TooOld     uint64 `json:"too_old"`
	Bad        uint64 `json:"bad"`
	Retries    uint64 `json:"retries"` // requests answered with their earlier decision
}

// CertStatus reports this member's certifier.
func (c *Coordinator) CertStatus() CertStatus {
	cs := &c.fsm.cert
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return CertStatus{Last: cs.s.Last(), Base: cs.s.Base(), Len: cs.s.Len(), Bytes: cs.s.Bytes(), Remembered: cs.s.Remembered(),
		Commits: cs.commits, Conflicts: cs.conflicts, TooOld: cs.tooOld, Bad: cs.bad, Retries: cs.retries}
}

// certDecision finds the remembered decision of origin's request id on
// this member (tests and diagnostics).
func (c *Coordinator) certDecision(origin, id string) (certifier.Decision, bool) {
	cs := &c.fsm.cert
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.s.Lookup(origin, id)
}

// registerCertMetrics exports the certifier as this member applied it.
func registerCertMetrics(c *Coordinator, reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	gauge := func(name, help string, f func(CertStatus) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(c.CertStatus()) })
	}
	decisions := prometheus.NewDesc("tandem_coord_cert_decisions_total",
		"Certification decisions applied on this member since it started, by outcome (commit, conflict, too_old, bad, retry).", []string{"outcome"}, nil)
	reg.MustRegister(
		gauge("tandem_coord_cert_last_gsn", "The last GSN the multi-master certifier assigned, as applied on this member.", func(s CertStatus) float64 { return float64(s.Last) }),
		gauge("tandem_coord_cert_window_base_gsn", "Certification needs a snapshot GSN at least this (the window starts after it).", func(s CertStatus) float64 { return float64(s.Base) }),
		gauge("tandem_coord_cert_window_writesets", "Committed writesets in the certifier's window.", func(s CertStatus) float64 { return float64(s.Len) }),
		gauge("tandem_coord_cert_window_bytes", "Bytes the certifier's window counts against its bound.", func(s CertStatus) float64 { return float64(s.Bytes) }),
		certCounters{c: c, desc: decisions},
	)
}

type certCounters struct {
	c    *Coordinator
	desc *prometheus.Desc
}

func (m certCounters) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

func (m certCounters) Collect(ch chan<- prometheus.Metric) {
	s := m.c.CertStatus()
	for _, o := range []struct {
		name string
		v    uint64
	}{{"commit", s.Commits}, {"conflict", s.Conflicts}, {"too_old", s.TooOld}, {"bad", s.Bad}, {"retry", s.Retries}} {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(o.v), o.name)
	}
}
