package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrLeaseExpired: the primary holds no valid lease right now and must not
// acknowledge a commit.
var ErrLeaseExpired = errors.New("coordinator: the primary's lease is not valid")

// Keeper holds the primary's lease for a node: it renews it every third of
// the lease while the node believes it is the primary, and answers Check
// on the commit path (a clock read and a mutex; no I/O).
type Keeper struct {
	co    *Coordinator
	epoch func() uint64 // the node's current epoch (0: not the primary)
	gsn   func() uint64 // highest GSN acknowledged to clients so far
	log   *slog.Logger

	mu    sync.Mutex
	grant Grant
	err   error // why the last renewal failed

	kick chan struct{} // renew now (a node just became the primary)
}

// NewKeeper makes a keeper; Run starts it.
func NewKeeper(co *Coordinator, epoch, gsn func() uint64) *Keeper {
	return &Keeper{co: co, epoch: epoch, gsn: gsn, log: co.log.With("part", "lease"), kick: make(chan struct{}, 1)}
}

// Run renews the lease until ctx ends. A renewal that fails keeps the
// current grant, which runs out on its own; a refusal (not the primary,
// an older epoch, a hand-over) drops it at once.
func (k *Keeper) Run(ctx context.Context) {
	period := k.co.cfg.Lease / 4
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		k.renew(ctx, period)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.kick:
		}
	}
}

// Kick asks for a renewal now instead of at the next tick: a node that has
// just been made the primary acquires its lease at once, so its first
// commits do not wait up to a third of the lease for it.
func (k *Keeper) Kick() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

func (k *Keeper) renew(ctx context.Context, period time.Duration) {
	ep := k.epoch()
	if ep == 0 {
		k.set(Grant{}, fmt.Errorf("%w: not the primary", ErrLeaseExpired))
		return
	}
	// Give up on this attempt before the next one is due.
	rctx, cancel := context.WithTimeout(ctx, 2*period)
	defer cancel()
	g, err := k.co.AcquireLease(rctx, ep, k.gsn())
	switch {
	case err == nil:
		if prev := k.Grant(); prev.Epoch != g.Epoch {
			k.log.Info("holding the primary's lease", "epoch", g.Epoch, "duration", g.Duration)
		}
		k.set(g, nil)
	case errors.Is(err, ErrNotPrimary), errors.Is(err, ErrStaleEpoch), errors.Is(err, ErrHandingOver):
		k.log.Warn("lease refused: stop acknowledging", "epoch", ep, "err", err)
		k.set(Grant{}, err)
	default:
		k.mu.Lock()
		k.err = err
		k.mu.Unlock()
		k.log.Warn("lease renewal failed; the current grant runs out on its own", "epoch", ep, "err", err)
	}
}

func (k *Keeper) set(g Grant, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// Renewals run one at a time, but keep the later deadline of the same
	// epoch anyway: a grant only ever ends at its own request time + D.
	if g.Epoch != 0 && g.Epoch == k.grant.Epoch && g.ValidUntil.Before(k.grant.ValidUntil) {
		g = k.grant
	}
	k.grant, k.err = g, err
}

// Check reports whether the node may acknowledge a commit of epoch now.
func (k *Keeper) Check(epoch uint64) error {
	now := time.Now()
	k.mu.Lock()
	g, lastErr := k.grant, k.err
	k.mu.Unlock()
	if g.Epoch != epoch || !g.Valid(now) {
		if lastErr != nil {
			return fmt.Errorf("%w (epoch %d): %w", ErrLeaseExpired, epoch, lastErr)
		}
		return fmt.Errorf("%w (epoch %d)", ErrLeaseExpired, epoch)
	}
	return nil
}

// Grant is the current grant (zero when none).
func (k *Keeper) Grant() Grant {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.grant
}
