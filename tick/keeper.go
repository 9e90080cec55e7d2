package tick

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// keeper holds the lease for one pass, as todolist's keeper holds a
// batch's claim. The lease used to be renewed only between publishes, so
// one publish longer than the ttl (a slow handler, 500 posts at 44 ms)
// let it lapse while the holder went on posting beside its successor. A
// goroutine now renews it every third of the ttl, on the ticker's clock,
// for as long as the pass runs, whatever the publish in flight costs.
//
// Renewing never changes the fencing term (AcquireLease keeps a holder's
// term), so the pass's cursor writes, which carry that term, go on being
// accepted while renewals run beside them; a renewal that finds another
// term or holder means the lease changed hands, and the pass is ended.
//
// The keeper only trusts lease ends the store confirmed: end is never
// later than the expiry the store wrote, so while the clock is before end
// no replica sharing that clock can have taken the lease. It does not
// renew a lease whose end has passed, even when the store still shows it
// as this holder's: a holder stalled past its ttl (SIGSTOP, a long GC
// pause) cannot know whether another replica emitted meanwhile.
type keeper struct {
	t    *Ticker
	term int64
	// cancel ends the pass's context, with the loss as its cause, so that a
	// publisher honouring ctx stops posting at once.
	cancel context.CancelCauseFunc
	// watchdog fires at end: a renewal that hangs (a store that does not
	// answer) ends the pass when the lease may run out, not later.
	watchdog clockwork.Timer

	// renewMu makes renewals one at a time: the keeper's, and the pass's
	// own when it finds the lease due between two publishes.
	renewMu sync.Mutex

	mu     sync.Mutex
	taken  time.Time // when the store last confirmed the lease, by the clock
	end    time.Time // taken + ttl: from then on another replica may take it
	lost   error     // why the pass may no longer decide; wraps ErrLeaseLost
	lostAt time.Time // by the clock
	// failed is the store error of a renewal, for the pass to count and
	// report on its own goroutine (Observer's callbacks run there).
	failed error
	closed bool

	stop chan struct{}
	done chan struct{}
}

// keepLease starts keeping h, the lease a pass just took, and returns the
// pass's context, which the keeper cancels when the lease is lost. A zero
// term (no WithLease) needs no keeper: it returns ctx and nil.
func (t *Ticker) keepLease(ctx context.Context, h *leaseHold) (context.Context, *keeper) {
	if h.term == 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	k := &keeper{
		t: t, term: h.term, cancel: cancel,
		taken: h.taken, end: h.taken.Add(t.cfg.ttl),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	k.watchdog = t.cfg.clock.AfterFunc(k.end.Sub(t.cfg.clock.Now()), k.expire)
	t.mu.Lock()
	t.keeping = k
	t.mu.Unlock()
	go k.run(ctx)
	return ctx, k
}

// renewEvery is how often the lease is renewed: every third of the ttl,
// so that the lease always has two thirds of it ahead while renewals
// succeed.
func (t *Ticker) renewEvery() time.Duration { return t.cfg.ttl / 3 }

// run renews the lease until the pass ends or the lease is lost. Each
// renewal is timed from the last confirmed one, whoever made it.
func (k *keeper) run(ctx context.Context) {
	defer close(k.done)
	timer := k.t.cfg.clock.NewTimer(k.untilDue())
	defer timer.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-timer.Chan():
		}
		if err := k.renew(ctx); err != nil {
			return
		}
		timer.Reset(k.untilDue())
	}
}

// untilDue is how long until the next renewal is due.
func (k *keeper) untilDue() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return max(k.taken.Add(k.t.renewEvery()).Sub(k.t.cfg.clock.Now()), 0)
}

// renew renews the lease if it is due and returns nil while the pass may
// go on deciding. Any failure to renew ends the pass (see lose): a lease
// that may have passed to another replica decides nothing. A renewal cut
// short by the pass's caller (Stop, a cancelled EmitDue) returns that
// error and loses nothing: the pass ends anyway.
func (k *keeper) renew(ctx context.Context) error {
	if k == nil {
		return nil
	}
	k.renewMu.Lock()
	defer k.renewMu.Unlock()
	k.mu.Lock()
	taken, end, lost := k.taken, k.end, k.lost
	k.mu.Unlock()
	if lost != nil {
		return lost
	}
	t := k.t
	now := t.cfg.clock.Now()
	if now.Sub(taken) < t.renewEvery() {
		return nil // renewed meanwhile, by the keeper or the pass
	}
	if !now.Before(end) {
		return k.lose(k.ranOut(end))
	}
	l, err := t.store.AcquireLease(ctx, t.cfg.holder, now, t.cfg.ttl)
	switch {
	case err != nil && context.Cause(ctx) != nil && !errors.Is(context.Cause(ctx), ErrLeaseLost):
		return fmt.Errorf("tick: renew lease: %w", context.Cause(ctx))
	case err != nil:
		if !errors.Is(err, ErrLeaseLost) {
			k.mu.Lock()
			k.failed = err
			k.mu.Unlock()
		}
		return k.lose(fmt.Errorf("%w: could not renew the lease of term %d, confirmed until %s: %w", ErrLeaseLost, k.term, timefmt.Format(end), err))
	case l.Holder != t.cfg.holder:
		return k.lose(fmt.Errorf("%w: %q took over (term %d) while this pass ran at term %d", ErrLeaseLost, l.Holder, l.Term, k.term))
	case l.Term != k.term:
		return k.lose(fmt.Errorf("%w: term %d became %d during the pass", ErrLeaseLost, k.term, l.Term))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost != nil {
		return k.lost // the watchdog fired while the store answered
	}
	k.taken, k.end = now, now.Add(t.cfg.ttl)
	k.watchdog.Reset(k.end.Sub(t.cfg.clock.Now()))
	return nil
}

func (k *keeper) ranOut(end time.Time) error {
	return fmt.Errorf("%w: the lease of term %d ran out at %s before it was renewed (the process stalled, or the store did not answer)",
		ErrLeaseLost, k.term, timefmt.Format(end))
}

// expire is the watchdog: the lease's confirmed end has come.
func (k *keeper) expire() {
	k.mu.Lock()
	end := k.end
	k.mu.Unlock()
	if k.t.cfg.clock.Now().Before(end) {
		return // renewed while the watchdog fired
	}
	_ = k.lose(k.ranOut(end))
}

// lose records why the pass may no longer decide, once, cancels the
// pass's context with it and returns it.
func (k *keeper) lose(err error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost == nil && !k.closed {
		k.lost, k.lostAt = err, k.t.cfg.clock.Now()
		k.cancel(err)
	}
	if k.lost == nil {
		return err
	}
	return k.lost
}

// holds returns nil while the pass may publish: the lease was not lost and
// its confirmed end has not come. It reads the clock itself rather than
// wait for the keeper's goroutine, so a pass resuming after a stall
// publishes nothing even before the keeper runs.
func (k *keeper) holds() error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	lost, end := k.lost, k.end
	k.mu.Unlock()
	if lost != nil {
		return lost
	}
	if !k.t.cfg.clock.Now().Before(end) {
		return k.lose(k.ranOut(end))
	}
	return nil
}

// fencing is the term the pass's cursor writes carry; zero without a lease.
func (k *keeper) fencing() int64 {
	if k == nil {
		return 0
	}
	return k.term
}

// close stops the renewals, waits for the one in flight, and returns the
// lease as it stands for the next wake-up (nil when lost), the loss if
// any, and a renewal's store error to report. It is called once, by the
// pass that started the keeper.
func (k *keeper) close() (held *leaseHold, lost error, lostAt time.Time, failed error) {
	close(k.stop)
	<-k.done
	k.watchdog.Stop()
	k.cancel(context.Canceled) // frees the context; the pass is over
	k.t.mu.Lock()
	if k.t.keeping == k {
		k.t.keeping = nil
	}
	k.t.mu.Unlock()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.lost != nil {
		return nil, k.lost, k.lostAt, k.failed
	}
	return &leaseHold{term: k.term, taken: k.taken}, nil, time.Time{}, k.failed
}

// unrenewed returns, for a pass in flight under the lease, when the store
// last confirmed it; zero when no such pass runs.
func (k *keeper) unrenewed() time.Time {
	if k == nil {
		return time.Time{}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.taken
}
