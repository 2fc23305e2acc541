package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Read consistency helpers (DESIGN.md "Read consistency"): what the
// router knows of each node's applied GSN, and the primary's latest GSN
// for strong and bounded reads.

// primaryIndex is the index of the node primary() picks.
func (r *Router) primaryIndex() int {
	if v := r.view.Load(); v != nil {
		return v.primary
	}
	return 0
}

// noteApplied records that node idx has applied at least g.
func (r *Router) noteApplied(idx int, g uint64) { raise(&r.known[idx], g) }

// noteCommitted records a commit GSN a session was told of.
func (r *Router) noteCommitted(g uint64) { raise(&r.committed, g) }

// raise makes a at least g.
func raise(a *atomic.Uint64, g uint64) {
	for {
		cur := a.Load()
		if g <= cur || a.CompareAndSwap(cur, g) {
			return
		}
	}
}

// maxApplied is the highest GSN any node is known to have applied.
func (r *Router) maxApplied() uint64 {
	var g uint64
	for i := range r.known {
		g = max(g, r.known[i].Load())
	}
	return g
}

// applied is a GSN node idx is known to have applied.
func (r *Router) applied(idx int) uint64 { return r.known[idx].Load() }

// gsnFetch is one request for the primary's latest GSN, shared by the
// reads that may use it.
type gsnFetch struct {
	start time.Time
	done  chan struct{}
	gsn   uint64
	err   error
}

// ErrNoPosition means the primary's latest GSN could not be learned (a
// strong or bounded read then runs on the primary).
var ErrNoPosition = errors.New("the primary's position is unknown")

// primaryGSN returns the primary's latest GSN as asked at or after
// notBefore: a strong read passes its own start (every commit
// acknowledged before it is at or below the answer), a bounded one its
// start less max_lag. Concurrent reads share one request.
func (r *Router) primaryGSN(ctx context.Context, notBefore time.Time) (uint64, error) {
	r.pmu.Lock()
	f := r.pcur
	if f == nil || f.start.Before(notBefore) {
		f = &gsnFetch{start: time.Now(), done: make(chan struct{})}
		r.pcur = f
		go r.fetchPrimary(f)
	}
	r.pmu.Unlock()
	select {
	case <-f.done:
		return f.gsn, f.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (r *Router) fetchPrimary(f *gsnFetch) {
	defer close(f.done)
	up, _ := r.primary()
	if up.AdminURL == "" || !strings.HasSuffix(up.AdminURL, "/status") {
		f.err = fmt.Errorf("%w: node %s has no admin address", ErrNoPosition, up.Node)
		return
	}
	url := strings.TrimSuffix(up.AdminURL, "/status") + "/position"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if up.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+up.AdminToken)
	}
	resp, err := r.adminClient(up).Do(req)
	if err != nil {
		f.err = fmt.Errorf("%w: %w", ErrNoPosition, err)
		return
	}
	defer resp.Body.Close()
	var v struct {
		Role    string `json:"role"`
		Applied uint64 `json:"applied_gsn"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		f.err = fmt.Errorf("%w: %w", ErrNoPosition, err)
		return
	}
	if v.Role != "primary" {
		f.err = fmt.Errorf("%w: node %s is %s", ErrNoPosition, up.Node, v.Role)
		return
	}
	f.gsn = v.Applied
}

// adminClient is the HTTP client for node up's admin address (kept, so
// its connections are reused).
func (r *Router) adminClient(up Upstream) *http.Client {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	if r.hc == nil {
		r.hc = map[string]*http.Client{}
	}
	if c, ok := r.hc[up.Node]; ok {
		return c
	}
	c := &http.Client{Timeout: 3 * time.Second}
	if up.AdminTLS != nil {
		c.Transport = &http.Transport{TLSClientConfig: up.AdminTLS, MaxIdleConnsPerHost: 8}
	}
	r.hc[up.Node] = c
	return c
}
