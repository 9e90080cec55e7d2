package todolist

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// keeper holds one batch's claim while the batch's actions run. A
// goroutine renews the lease every third of it, so an action may run
// longer than the lease as long as the processor is alive and reaches the
// database. The processing goroutine asks the keeper before it starts an
// item (mayStart) and before it writes an outcome (holds).
//
// The keeper only trusts lease ends the database confirmed: end is never
// later than the lease the database holds, so while the processor's clock
// is before end no other processor (sharing that clock) can have taken
// the batch's items.
type keeper struct {
	p     *Processor
	token string
	// batch is what the claim holds, for a driver that renews it row by
	// row.
	batch []claimed

	mu   sync.Mutex
	end  time.Time
	lost error
	// failed is the latest renewal that got no answer from the database;
	// it explains a lease that ran out.
	failed error
	// reported is set once the loss was counted and told to the observer.
	reported bool

	stop chan struct{}
	done chan struct{}
}

// keep starts renewing the lease of a claimed batch, which ends at end.
// An empty batch holds nothing and starts no goroutine.
func (p *Processor) keep(ctx context.Context, token string, batch []claimed, end time.Time) *keeper {
	k := &keeper{p: p, token: token, batch: batch, end: end}
	if len(batch) == 0 {
		return k
	}
	k.stop, k.done = make(chan struct{}), make(chan struct{})
	go k.run(ctx)
	return k
}

// renewEvery is how often a lease is renewed: every third of it, so that
// one renewal may fail or be late without the lease running out.
func (p *Processor) renewEvery() time.Duration {
	return max(p.cfg.lease/3, 1)
}

// run renews the lease until the keeper is closed, ctx ends or the lease
// is lost. Each renewal is timed from the end of the previous one.
func (k *keeper) run(ctx context.Context) {
	defer close(k.done)
	timer := k.p.cfg.clock.NewTimer(k.p.renewEvery())
	defer timer.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-ctx.Done():
			return
		case <-timer.Chan():
		}
		if !k.renew(ctx) {
			return
		}
		timer.Reset(k.p.renewEvery())
	}
}

// renew extends the lease once and reports whether to go on renewing.
func (k *keeper) renew(ctx context.Context) bool {
	k.mu.Lock()
	end, lost := k.end, k.lost
	k.mu.Unlock()
	if lost != nil {
		return false
	}
	newEnd, held, err := k.p.renewClaim(ctx, k.token, k.batch, end)
	if k.p.cfg.renewed != nil {
		defer k.p.cfg.renewed(held, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err != nil:
		// No answer: the lease may still hold. Try again at the next
		// renewal; mayStart stops new items meanwhile once the lease
		// runs short, and holds reports the loss once it has run out.
		k.failed = err
		return ctx.Err() == nil
	case !held:
		if k.lost == nil {
			k.lost = fmt.Errorf("%w: batch %s of %q: renewal found the claim lapsed or taken by another processor", ErrLeaseLost, k.token, k.p.list.name)
		}
		return false
	default:
		k.end, k.failed = newEnd, nil
		return true
	}
}

// close stops the renewals and waits for the one in flight, if any.
// Closing twice is harmless.
func (k *keeper) close() {
	if k.stop == nil {
		return
	}
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
}

// holds returns nil while the lease holds at now, or why it does not. A
// lease that ran out is lost for good, even if no one took the items yet:
// from then on another processor may take them at any moment.
func (k *keeper) holds(now time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost == nil && !now.Before(k.end) {
		k.lost = fmt.Errorf("%w: batch %s of %q: the lease ran out at %s", ErrLeaseLost, k.token, k.p.list.name, k.end.UTC().Format(time.RFC3339Nano))
		if k.failed != nil {
			k.lost = fmt.Errorf("%w; last renewal: %w", k.lost, k.failed)
		}
	}
	return k.lost
}

// mayStart reports whether an item may start at now: the lease holds and
// at least a third of it is left, so that the action has that long to
// finish even if every renewal from now on fails. Renewals every third
// keep two thirds or more ahead while they succeed.
func (k *keeper) mayStart(now time.Time) bool {
	if k.holds(now) != nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.end.Sub(now) >= k.p.renewEvery()
}

// report counts a lost lease in res and tells the observer, once per
// batch.
func (k *keeper) report(res *Result) {
	k.mu.Lock()
	lost := k.lost
	if lost == nil || k.reported {
		k.mu.Unlock()
		return
	}
	k.reported = true
	k.mu.Unlock()
	res.LeasesLost++
	if k.p.cfg.observer.LeaseLost != nil {
		k.p.cfg.observer.LeaseLost(k.p.list.name, lost)
	}
}

// renewClaim extends the claim of token to a lease from now, if it still
// holds: held is false when the claim lapsed (end, the last end confirmed,
// is past) or is gone. err reports a renewal that got no answer.
func (p *Processor) renewClaim(ctx context.Context, token string, batch []claimed, end time.Time) (time.Time, bool, error) {
	l := p.list
	newEnd, held, err := p.drv.renew(ctx, l.db, renewal{
		claimRef: claimRef{l.name, token}, batch: batch, end: end, clock: p.cfg.clock, lease: p.cfg.lease,
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("todolist: renew the lease of batch %s of %q: %w", token, l.name, err)
	}
	return newEnd, held, nil
}
